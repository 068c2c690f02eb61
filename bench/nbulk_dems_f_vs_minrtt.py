"""Bulk goodput of DEMS-F against MinRTT on 2, 4 and 8 paths (issue "Speed at scale", item 3:
"N-path DEMS at line rate"; the ignored test `bulk_goodput_dems_f_at_least_minrtt_on_2_to_8_paths`
in crates/sim/tests/dems.rs).

The scenario is the benchmark matrix's (`mpsched.bench.matrix_scenario`): 10 s of bulk over N
paths sharing 800 Mbit/s (800/N Mbit/s each), RTT 20 + 10·i ms, 20 ms drop-tail queues, CUBIC.

    .venv/bin/python bench/nbulk_dems_f_vs_minrtt.py [OUT.png]

Prints goodput, drops and the largest out-of-order queue for minrtt, minrtt:noor (v0.9x MinRTT
without opportunistic retransmission and penalization), dems-f and linux, with Linux's default
receive buffer (autotuned up to `tcp_rmem[2]` = 6 MiB) and with a fixed 32 MiB one. Writes the
figure (default docs/img/nbulk-dems-f-vs-minrtt.png): for the two-path cell with the default
buffer, per scheduler, each path's congestion window over the first 3 s (retransmissions
dotted) and the in-order data delivered.
"""

from __future__ import annotations

import sys

import matplotlib

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from mpsched import bench, runner  # noqa: E402

SCHEDULERS = ("minrtt", "minrtt:noor", "dems-f", "linux")
BUFFERS = (("default (6 MiB max)", None), ("32 MiB fixed", "32MiB"))
PLOTTED = ("minrtt", "minrtt:noor", "dems-f")


def scenario(paths: int, duration_s: float = 10.0, recv_buffer: str | None = None) -> dict:
    sc = tomllib.loads(bench.matrix_scenario(paths, "bulk", duration_s, 8))
    if recv_buffer is not None:
        sc.setdefault("transport", {})["recv_buffer"] = recv_buffer
    return sc


def table() -> None:
    print(f"{'buffer':<20} {'N':>2} {'scheduler':<12} {'goodput':>9} {'drops':>6} {'ofo max':>9}")
    for label, buf in BUFFERS:
        for n in (2, 4, 8):
            for sched in SCHEDULERS:
                r = runner.run(scenario(n, recv_buffer=buf), sched)
                print(
                    f"{label:<20} {n:>2} {sched:<12} {r['goodput_bps'] / 1e6:>6.1f} Mb "
                    f"{sum(r['drops_by_path'].values()):>6} "
                    f"{r['ofo_queue_max_bytes'] / 1e6:>6.2f} MB"
                )


def main(out: str) -> None:
    table()
    fig, axes = plt.subplots(2, len(PLOTTED), figsize=(13, 6.5), sharex=True, sharey="row")
    fig.set_layout_engine("constrained")
    for col, sched in enumerate(PLOTTED):
        tr = runner.run_traced(scenario(2, duration_s=3.0), sched, sample_interval_s=0.01)
        ev, sm = tr.events, tr.samples
        for i, p in enumerate(tr.path_names):
            colour = ("tab:blue", "tab:orange")[i]
            x = sm[sm["path_name"] == p]
            axes[0][col].plot(x["time_s"], x["cwnd_bytes"] / 1e6, color=colour, label=p)
            rtx = ev[(ev["path_name"] == p) & (ev["kind"] == "retransmit")]
            for t in rtx["time_s"].round(2).unique():
                axes[0][col].axvline(t, color=colour, lw=0.5, ls=":")
        d = ev[ev["kind"] == "deliver"]
        axes[1][col].plot(d["time_s"], (d["dsn"] + d["len"]) / 1e6, color="tab:green", lw=1)
        axes[0][col].set_title(
            f"{sched}: {tr.result['goodput_bps'] / 1e6:.0f} Mbit/s in 3 s, "
            f"{sum(tr.result['drops_by_path'].values())} drops"
        )
        axes[1][col].set_xlabel("time (s)")
    axes[0][0].set_ylabel("congestion window (MB)")
    axes[1][0].set_ylabel("in-order data delivered (MB)")
    axes[0][0].legend(loc="upper right")
    fig.suptitle(
        "2 paths x 400 Mbit/s, RTT 20/30 ms, 20 ms queues, CUBIC, default receive buffer: "
        "MinRTT's penalization halves p0's window before its queue overflows"
    )
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/img/nbulk-dems-f-vs-minrtt.png")
