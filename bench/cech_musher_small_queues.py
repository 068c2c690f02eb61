"""Why MuSher's goodput collapses with small queues (Cech, TUM 2020, §4.5 and §7), on
cech-fig5's most heterogeneous cell: p1 20 ms, p2 70 ms, both 1 Gbit/s, 500- vs 2000-packet
queues, 20 s bulk, seed 1.

    .venv/bin/python bench/cech_musher_small_queues.py [OUT.png] [DURATION]

Writes the figure the cech-fig5 preset also writes (`cech-fig5-musher-small-queues`; default
docs/img/cech-fig5-musher-small-queues.png) and prints, per traced run, the goodput, the
retransmissions, and per phase the mean goodput, the ratio's bound (p2's cwnd / sRTT / p2's
share), both windows and the share of new segments on p1.
"""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")

from mpsched import presets_cech as pc  # noqa: E402

PHASES = ((0.0, 2.0), (3.0, 12.0), (12.0, 16.0), (16.0, 20.0))


def main(out: str, duration: str = "20s") -> None:
    traces = pc.musher_queue_traces(duration)
    for (s, q), tr in traces.items():
        r = tr.result
        print(
            f"{s} {q} ({pc.QUEUES_FIG45[q]}): goodput {r['goodput_bps'] / 1e6:.0f} Mbit/s, "
            f"retransmissions {r['retransmissions_by_path']}, rto {r['rto_by_path']}"
        )
        d = pc.musher_queue_series(tr)
        for a, b in PHASES:
            part = d[(d.index >= a) & (d.index < b)]
            if part.empty:
                continue
            print(
                f"  {a:4.1f}-{b:4.1f} s: goodput {part['goodput_bps'].mean() / 1e6:5.0f}, "
                f"bound {part['ratio_bound'].mean() / 1e6:5.0f} Mbit/s; cwnd p1 "
                f"{part['cwnd_p1'].mean():6.0f} p2 {part['cwnd_p2'].mean():6.0f}; p1 share "
                f"{part['p1_share'].min():.2f}-{part['p1_share'].max():.2f}; rtx "
                f"{int(part['rtx_p1'].sum())}/{int(part['rtx_p2'].sum())}"
            )
    fig = pc._musher_queue_figure(traces, pc.MUSHER_WHY)
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(
        sys.argv[1] if len(sys.argv) > 1 else "docs/img/cech-fig5-musher-small-queues.png",
        sys.argv[2] if len(sys.argv) > 2 else "20s",
    )
