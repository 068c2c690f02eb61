"""Why dems-f delivers less than minrtt in the 2-path cell of the benchmark matrix (issue "Speed
at scale", item 3): both subflows' congestion windows over time, and the goodput of runs of 10,
30 and 60 s.

The cell: two paths of 400 Mbit/s, RTT 20 and 30 ms, 20 ms drop-tail queues, CUBIC with Linux's
HyStart, bulk transfer (`crates/sim/examples/bench_matrix.rs`, N = 2).

    .venv/bin/python bench/dems_f_two_paths.py [OUT.png]

Prints the goodput table and, per scheduler and path, the window at which HyStart ended slow
start, the loss-recovery episodes of the first second and the window at 1, 5 and 10 s; writes the
figure (default docs/img/bench-dems-f-two-paths-cwnd.png).
"""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from mpsched import runner  # noqa: E402

MSS = 1448
SCHEDULERS = ("minrtt", "dems-f")


def scenario(duration: str) -> dict:
    return {
        "path": [
            {"name": "p0", "rate": "400Mbit", "rtt": "20ms", "queue": "20ms"},
            {"name": "p1", "rate": "400Mbit", "rtt": "30ms", "queue": "20ms"},
        ],
        "workload": {"kind": "bulk", "duration": duration},
    }


def main(out: str) -> None:
    print("goodput (Mbit/s)")
    for d in ("10s", "30s", "60s"):
        row = {s: runner.run(scenario(d), s, seed=1)["goodput_bps"] / 1e6 for s in SCHEDULERS}
        print(f"  {d:>4}: " + ", ".join(f"{s} {v:.1f}" for s, v in row.items()))
    fig, axes = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    fig.set_layout_engine("constrained")
    for ax, s in zip(axes, SCHEDULERS):
        tr = runner.run_traced(scenario("20s"), s, seed=1)
        sm = tr.samples
        ev = tr.events
        for p, colour in zip(tr.path_names, ("tab:blue", "tab:orange")):
            x = sm[sm["path_name"] == p]
            ax.plot(x["time_s"], x["cwnd_bytes"] / MSS, color=colour, label=f"{p} cwnd")
            rtx = ev[(ev["path_name"] == p) & (ev["kind"] == "retransmit")]
            at = {t: float(x[x["time_s"] <= t]["cwnd_bytes"].iloc[-1]) / MSS for t in (1, 5, 10)}
            early = int((rtx["time_s"] < 1).sum())
            print(
                f"{s} {p}: {len(rtx)} retransmissions (first second {early}),"
                " cwnd at 1/5/10 s " + " / ".join(f"{v:.0f}" for v in at.values()) + " packets"
            )
        # Bandwidth-delay products of the two paths, packets (without the queue).
        for rtt, colour in ((0.020, "tab:blue"), (0.030, "tab:orange")):
            ax.axhline(400e6 * rtt / 8 / MSS, color=colour, ls=":", lw=1)
        ax.set_ylabel("cwnd (packets)")
        ax.set_title(
            f"{s}: goodput {tr.result['goodput_bps'] / 1e6:.0f} Mbit/s over 20 s", fontsize="small"
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    axes[-1].set_xlabel("time (s); dotted: each path's bandwidth-delay product")
    fig.suptitle("Benchmark matrix, 2 paths: congestion windows of minrtt and dems-f")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/img/bench-dems-f-two-paths-cwnd.png")
