"""Why the R-TSC receiver (Park et al. (R-TSC), §V) does not beat the default receiver in the
Fig. 9 setting with CUBIC senders at c1 = 23 Mbit/s (issue 12; the ignored test
`rtsc_lowers_p95_application_delay_in_fig9_setting_cubic` in crates/sim/tests/rtsc.rs).

The cell: LTE 40 Mbit/s, T^p 30 ms, 7 MB buffer; WiFi 23 Mbit/s, T^p 15 ms, 700 KB; a CBR
stream of 35.85 Mbit/s in 1448-byte packets for 20 s; round-robin (`rr`) MPTCP sender with
CUBIC; the default receiver against `rtsc`.

    .venv/bin/python bench/rtsc_fig9_cubic_23.py [OUT.png]

Prints, per receiver, the p95 application delay, the bytes and segments each path carried and
how many of the segments were short; writes the figure (default
docs/img/rtsc-fig9-cubic-23.png): per path, the rate carried and the congestion window over
time with the sender's retransmissions marked (where R-TSC withholds a segment, the sender
retransmits it after the three duplicate ACKs), and the application delay of every packet.
"""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from mpsched import runner  # noqa: E402
from mpsched.presets_cech import goodput_series  # noqa: E402

F_BPS = 35.85e6
PACKET = 1448  # the stream's application packet (crates/sim/tests/rtsc.rs fig9)
RECEIVERS = ("rr", "rr+rtsc")
TITLES = {"rr": "default receiver", "rr+rtsc": "R-TSC receiver"}
BIN_S = 0.1


def scenario() -> dict:
    return {
        "path": [
            {"name": "lte", "rate": "40Mbit", "rtt": "30ms", "queue": "7MB"},
            {"name": "wifi", "rate": "23Mbit", "rtt": "15ms", "queue": "700KB"},
        ],
        "workload": {
            "kind": "stream",
            "rate": "35.85Mbit",
            "duration": "20s",
            "packet": f"{PACKET}B",
        },
        "transport": {"cc": "cubic"},
    }


def app_delays(tr) -> tuple[np.ndarray, np.ndarray]:
    """(delivery time, application delay) of every stream packet: packet k is written at
    k · 1448 · 8 / f after the stream starts (CBR) and delivered with the in-order data that
    completes it."""
    ev = tr.events
    d = ev[ev["kind"] == "deliver"]
    end = (d["dsn"] + d["len"]).to_numpy()
    t = d["time_s"].to_numpy()
    last = end // PACKET - 1  # last packet completed by this delivery
    done = last >= 0
    gen = last[done] * PACKET * 8 / F_BPS
    return t[done], t[done] - gen


def main(out: str) -> None:
    fig, axes = plt.subplots(3, 2, figsize=(11, 7.5), sharex=True, sharey="row")
    fig.set_layout_engine("constrained")
    for col, sched in enumerate(RECEIVERS):
        tr = runner.run_traced(scenario(), sched, seed=1, sample_interval_s=0.02)
        res = tr.result
        ev, sm = tr.events, tr.samples
        t, delay = app_delays(tr)
        print(
            f"{sched}: p95 application delay {res['app_delay_p95_s'] * 1e3:.1f} ms "
            f"(p50 {res['app_delay_p50_s'] * 1e3:.1f} ms), withheld {res.get('withheld_by_path')}"
        )
        arr = ev[ev["kind"] == "arrive"]
        rates = goodput_series(tr, BIN_S)
        for i, p in enumerate(tr.path_names):
            a = arr[arr["path_name"] == p]
            short = int((a["len"] < 100).sum())
            print(
                f"  {p}: {a['len'].sum() / 1e6:.1f} MB in {len(a)} segments "
                f"({short} shorter than 100 B)"
            )
            colour = ("tab:blue", "tab:orange")[i]
            axes[0][col].plot(rates["time_s"], rates[p] / 1e6, color=colour, label=p)
            x = sm[sm["path_name"] == p]
            axes[1][col].plot(x["time_s"], x["cwnd_bytes"] / 1e3, color=colour, label=p)
            rtx = ev[(ev["path_name"] == p) & (ev["kind"] == "retransmit")]
            for rt in rtx["time_s"]:
                axes[1][col].axvline(rt, color=colour, lw=0.6, ls=":")
        print(f"  from the trace: p95 application delay {np.quantile(delay, 0.95) * 1e3:.1f} ms")
        axes[2][col].plot(t, delay * 1e3, ".", ms=1, color="tab:green")
        axes[2][col].axhline(res["app_delay_p95_s"] * 1e3, color="k", lw=0.8, ls="--")
        axes[0][col].set_title(
            f"{TITLES[sched]}: p95 application delay {res['app_delay_p95_s'] * 1e3:.1f} ms",
            fontsize="small",
        )
    axes[0][0].set_ylabel("rate carried (Mbit/s)")
    axes[1][0].set_ylabel("cwnd (KB)\n(dotted: retransmission)")
    axes[2][0].set_ylabel("application delay (ms)\n(dashed: p95)")
    axes[2][0].set_ylim(0, 60)
    for ax in axes.flat:
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize="small")
    for ax in axes[2]:
        ax.set_xlabel("time (s)")
    fig.suptitle(
        "R-TSC Fig. 9 setting, CUBIC senders, (c0, c1) = (40, 23) Mbit/s, f = 35.85 Mbit/s"
    )
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/img/rtsc-fig9-cubic-23.png")
