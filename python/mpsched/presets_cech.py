"""Presets rebuilding the scheduler study of Cech, "Comparing MPTCP schedulers", TUM 2020
(guided research report): one engine, one transport, the same scenarios for every scheduler.
Registered in `presets.PRESETS` as `cech-fig2` ... `cech-fig10`.

The report's figures are not in its text, only their captions and §4-5's prose, so where a
value is left open (the base RTT of the testbed, which second-path rates Fig. 3 steps through)
each preset names its choice in `assumptions`. Metrics as the report (§4): goodput, per-subflow
utilization, out-of-order queue size, sRTT, retransmissions. Queues are in packets as the
report's NetEm `limit`; one difference stays: NetEm's limit also counts packets held in its
delay line, our drop-tail queue only those waiting for the link.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from .wire import MSS_MPTCP

CECH = "Cech, TUM 2020"
# The six schedulers the report compares (§3), then the ones it lists (Table 1) or sketches (§5).
STUDIED = ["minrtt", "rr", "musher", "blest", "ecf", "sttf"]
FIELD = STUDIED + ["redundant", "daps", "otias", "lte-handover"]
GBIT = "1Gbit"
# The testbed's base RTT is not reported (two routers on Gigabit Ethernet); 1 ms (ours).
BASE_RTT = "1ms"
QUEUES_FIG3 = {"small": "300pkt", "large": "1000pkt"}
QUEUES_FIG45 = {"small": "500pkt", "large": "2000pkt"}
RATE2 = "path.p2.rate"
RTT2 = "path.p2.rtt"
LOSS2 = "path.p2.loss"
GOODPUT = "goodput_bps"


def _plots():
    from . import plots

    return plots


def _claim(what: str, paper: str, ours: str):
    from .presets import Claim

    return Claim(what, paper, ours)


def _path(name: str, rate: str = GBIT, rtt: str = BASE_RTT, **extra: Any) -> dict[str, Any]:
    return {"name": name, "rate": rate, "rtt": rtt, **extra}


def _scenario(paths: list[dict[str, Any]], duration: str, **transport: Any) -> dict[str, Any]:
    # iperf3 in the report: a backlogged sender for a fixed time (bulk).
    data: dict[str, Any] = {"path": paths, "workload": {"kind": "bulk", "duration": duration}}
    if transport:
        data["transport"] = transport
    return data


def _duration(ctx: Any, full: str = "30s", quick: str = "8s") -> str:
    # Linux CUBIC leaves slow start early (HyStart) and needs tens of seconds to fill a
    # 1000-packet queue at 100 Mbit/s: 30 s runs, as long as the report's iperf3 tests likely.
    return quick if ctx.quick else full


def _queue_sweeps(
    ctx: Any,
    name: str,
    queues: dict[str, str],
    paths,
    axes,
    schedulers,
    reps: int = 1,
    duration: tuple[str, str] = ("30s", "8s"),
) -> list[dict]:
    """One sweep per queue size (the report's "small" and "large" NetEm limits)."""
    sweeps = []
    for label, queue in queues.items():
        ps = [{**p, "queue": queue} for p in paths]
        sweeps.append(
            {
                "name": f"{name}-{label}",
                "scenario": _scenario(ps, _duration(ctx, *duration)),
                "schedulers": schedulers,
                "reps": reps,
                "axes": axes,
            }
        )
    return sweeps


def _with_columns(df: Any) -> Any:
    """Columns the figures and claims share: `queues` (from the sweep name), the share of
    bytes on the first path, mean sRTT and total retransmissions over paths."""
    df = df.copy()
    df["queues"] = df["sweep"].str.rsplit("-", n=1).str[-1]
    by_path = [c for c in df.columns if c.startswith("bytes_by_path.")]
    if by_path:
        total = df[by_path].sum(axis=1)
        df["first_path_share"] = df[by_path[0]] / total.where(total > 0)
    rtx = [c for c in df.columns if c.startswith("retransmissions_by_path.")]
    if rtx:
        df["retransmissions"] = df[rtx].sum(axis=1)
    srtt = [c for c in df.columns if c.startswith("srtt_avg_s_by_path.")]
    if srtt:
        df["srtt_mean_s"] = df[srtt].mean(axis=1)
    return df


def _median(df: Any, metric: str, **where: Any) -> float:
    part = df
    for key, value in where.items():
        col = key.replace("__", ".")
        if isinstance(value, float):
            part = part[(part[col] - value).abs() <= 1e-9 * max(1.0, abs(value))]
        else:
            part = part[part[col] == value]
    vals = part[metric].dropna() if metric in part else []
    return float(vals.median()) if len(vals) else math.nan


def _mbit(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x / 1e6:.0f}"


def _metric_figures(df: Any, stem: str, title: str, group: str | None, metrics) -> list:
    plots = _plots()
    out = []
    for metric, label in metrics:
        if metric not in df:
            continue
        out.append(
            (
                f"{stem}-{label}",
                plots.metric_bars(df, metric, group=group, facet="queues", title=title),
            )
        )
    return out


STUDY_METRICS = [
    (GOODPUT, "goodput"),
    ("first_path_share", "first-path-share"),
    # The report's per-subflow utilization: of the second (impaired) path's capacity.
    ("utilization_by_path.p2", "p2-utilization"),
    ("ofo_queue_avg_bytes", "ofo-queue"),
    ("srtt_mean_s", "srtt"),
    ("retransmissions", "retransmissions"),
]


# ---- cech-fig2: 2-4 Gigabit paths -------------------------------------------------------------


def fig2_sweeps(ctx: Any) -> list[dict]:
    sweeps = []
    for n in (2, 3, 4):
        # Point-to-point Gigabit cables, no router (§4.3): a NIC-sized queue of 1000 packets.
        paths = [_path(f"p{i + 1}", queue="1000pkt") for i in range(n)]
        sweeps.append(
            {
                "name": f"cech-fig2-{n}paths",
                "scenario": _scenario(paths, _duration(ctx, "10s", "3s")),
                "schedulers": FIELD,
                "reps": 1,
            }
        )
    return sweeps


def _fig2_frame(df: Any) -> Any:
    df = _with_columns(df)
    df["paths"] = df["sweep"].str.extract(r"(\d)paths")[0].astype(int)
    df["utilization"] = df[GOODPUT] / (df["paths"] * 1e9)
    df["queues"] = "1000pkt"
    return df


def fig2_figures(df: Any, ctx: Any) -> list:
    df = _fig2_frame(df)
    title = f"{CECH}, Fig. 2: goodput over 2, 3 and 4 Gigabit paths"
    return _metric_figures(df, "cech-fig2", title, "paths", [(GOODPUT, "goodput")])


def fig2_claims(df: Any) -> list:
    df = _fig2_frame(df)
    cells = []
    for n in (2, 3, 4):
        part = df[df["paths"] == n]
        util = {s: _median(part, "utilization", scheduler=s) for s in STUDIED}
        lo = min(util, key=lambda s: util[s])
        cells.append(
            f"{n} paths: field median {100 * float(part['utilization'].median()):.0f}%, "
            f"lowest {lo} {100 * util[lo]:.0f}%"
        )
    return [
        _claim(
            "path utilization by number of Gigabit paths",
            "two paths almost fully used (BLEST one path only); three: RR, MuSher, STTF 82%, "
            "BLEST and ECF 62%; four: about 60% on average",
            "; ".join(cells),
        )
    ]


# ---- cech-fig3: heterogeneous bandwidth ------------------------------------------------------


FIG3_RATES = ["100Mbit", "50Mbit", "25Mbit", "10Mbit"]


def fig3_sweeps(ctx: Any) -> list[dict]:
    paths = [_path("p1", rate="100Mbit"), _path("p2", rate="100Mbit")]
    rates = FIG3_RATES[::3] if ctx.quick else FIG3_RATES
    return _queue_sweeps(ctx, "cech-fig3", QUEUES_FIG3, paths, {RATE2: rates}, FIELD)


def fig3_figures(df: Any, ctx: Any) -> list:
    title = f"{CECH}, Fig. 3: heterogeneous bandwidth (p1 100 Mbit/s, p2 reduced)"
    out = _metric_figures(_with_columns(df), "cech-fig3", title, RATE2, STUDY_METRICS)
    traces = p2_window_traces("3s" if ctx.quick else "30s")
    why = (
        f"{CECH}, Fig. 3 (large queues, p2 10 Mbit/s): MinRTT keeps p2's queue short,\n"
        "round-robin fills it and blocks p1 (why MinRTT does not fall back to one path here)"
    )
    out.append(("cech-fig3-p2-window", _p2_window_figure(traces, why)))
    return out


# Why MinRTT does not fall back to one path here (issue 11 asks for the finding or a figure):
# with 1000-packet queues at p1 100 / p2 10 Mbit/s it is the one scheduler that keeps p2's
# queue short. It sends on p2 only when p1's window is full, and the peer's window blocks it
# rarely, so p2's window stays near 100 packets (sRTT about 130 ms) instead of filling the
# 1000-packet queue (1.2 s at 10 Mbit/s) the way round-robin does. That is still more than the
# 1 ms x 10 Mbit/s p2 needs to stay busy, so both paths run full with either queue size; the
# head-of-line blocking that round-robin's 1.2 s queue causes (p1 at a third) never happens.
FIG3_TRACE_SCHEDULERS = ("minrtt", "rr")


@functools.lru_cache(maxsize=2)
def p2_window_traces(duration: str = "10s") -> dict[str, Any]:
    """Traced runs of Fig. 3's most heterogeneous cell with large queues, per scheduler in
    `FIG3_TRACE_SCHEDULERS`: p2's congestion window and sRTT over time."""
    from . import runner

    paths = [
        _path("p1", rate="100Mbit", queue=QUEUES_FIG3["large"]),
        _path("p2", rate=FIG3_RATES[-1], queue=QUEUES_FIG3["large"]),
    ]
    sc = _scenario(paths, duration)
    return {
        s: runner.run_traced(sc, s, seed=1, sample_interval_s=0.05) for s in FIG3_TRACE_SCHEDULERS
    }


def _p2_window_figure(traces: dict[str, Any], title: str):
    import matplotlib.pyplot as plt

    plots = _plots()
    fig, axes = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    fig.set_layout_engine("constrained")
    for name, tr in traces.items():
        s = tr.samples
        s = s[s["path_name"] == "p2"]
        util = tr.result["utilization_by_path"]
        label = f"{name} (goodput {tr.result[GOODPUT] / 1e6:.0f} Mbit/s, p1 {util['p1']:.2f})"
        colour = plots.scheduler_colour(name, list(traces))
        axes[0].plot(s["time_s"], s["cwnd_bytes"] / MSS_MPTCP, color=colour, label=label)
        axes[1].plot(s["time_s"], s["srtt_s"] * 1e3, color=colour, label=name)
    axes[0].set_ylabel("p2 cwnd (segments)")
    axes[1].set_ylabel("p2 sRTT (ms)")
    axes[1].set_xlabel("time (s)")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.suptitle(title)
    return fig


def minrtt_large_queue_gap(df: Any) -> dict[str, float]:
    """At the most heterogeneous rate: MinRTT's goodput with large and small queues, and the
    median of the other studied schedulers with large queues."""
    df = _with_columns(df)
    worst = float(df[RATE2].min())
    others = df[(df["queues"] == "large") & (df[RATE2] == worst)]
    others = others[others["scheduler"].isin([s for s in STUDIED if s != "minrtt"])]
    return {
        "rate2_bps": worst,
        "minrtt_large": _median(df, GOODPUT, scheduler="minrtt", queues="large", **{RATE2: worst}),
        "minrtt_small": _median(df, GOODPUT, scheduler="minrtt", queues="small", **{RATE2: worst}),
        "others_large": float(others[GOODPUT].median()) if len(others) else math.nan,
        "minrtt_share_large": _median(
            df, "first_path_share", scheduler="minrtt", queues="large", **{RATE2: worst}
        ),
    }


def fig3_claims(df: Any) -> list:
    g = minrtt_large_queue_gap(df)
    d = _with_columns(df)
    worst = g["rate2_bps"]
    ofo = {
        q: _median(d, "ofo_queue_avg_bytes", scheduler="minrtt", queues=q, **{RATE2: worst})
        for q in ("small", "large")
    }
    return [
        _claim(
            f"MinRTT goodput, p2 at {worst / 1e6:g} Mbit/s (Mbit/s)",
            "MinRTT and STTF fall back to the unimpaired path with large queues; goodput below "
            "average, OFO queue and sRTT up; RR, BLEST, ECF do better with large queues",
            f"small queues {_mbit(g['minrtt_small'])}, large {_mbit(g['minrtt_large'])} "
            f"(other studied schedulers, large: {_mbit(g['others_large'])}); first-path share "
            f"{g['minrtt_share_large']:.2f}; OFO avg {ofo['small'] / 1024:.0f} -> "
            f"{ofo['large'] / 1024:.0f} KiB",
        )
    ]


# ---- cech-fig4 / cech-fig5: delays -------------------------------------------------------------


def fig4_sweeps(ctx: Any) -> list[dict]:
    # Both paths' RTT raised together by 20, 40, 60 ms, split evenly up/down (owd = rtt/2).
    paths = [_path("p1", rtt="20ms"), _path("p2", rtt="20ms")]
    rtts = ["20ms", "60ms"] if ctx.quick else ["20ms", "40ms", "60ms"]
    # Equal delays: the same axis moves both paths (one axis per path would cross them).
    sweeps = []
    for rtt in rtts:
        ps = [{**p, "rtt": rtt} for p in paths]
        gig = ("20s", "5s")
        for s in _queue_sweeps(ctx, f"cech-fig4-{rtt}", QUEUES_FIG45, ps, {}, FIELD, 1, gig):
            sweeps.append(s)
    return sweeps


def _fig4_frame(df: Any) -> Any:
    df = _with_columns(df)
    df["rtt_ms"] = df["sweep"].str.extract(r"fig4-(\d+)ms")[0].astype(float)
    return df


def fig4_figures(df: Any, ctx: Any) -> list:
    title = f"{CECH}, Fig. 4: equal delays on two Gigabit paths"
    return _metric_figures(_fig4_frame(df), "cech-fig4", title, "rtt_ms", STUDY_METRICS)


def musher_small_queue(df: Any) -> dict[str, float]:
    """MuSher's median goodput with small and large queues over the delays, and the lowest
    goodput of the other studied schedulers with small queues."""
    d = _fig4_frame(df)
    small = d[d["queues"] == "small"]
    others = {
        s: float(small[small["scheduler"] == s][GOODPUT].median()) for s in STUDIED if s != "musher"
    }
    return {
        "musher_small": _median(d, GOODPUT, scheduler="musher", queues="small"),
        "musher_large": _median(d, GOODPUT, scheduler="musher", queues="large"),
        "others_small_min": min(others.values()) if others else math.nan,
    }


def fig4_claims(df: Any) -> list:
    m = musher_small_queue(df)
    d = _fig4_frame(df)
    best = {}
    for q in ("small", "large"):
        part = d[(d["queues"] == q) & d["scheduler"].isin(STUDIED)]
        med = part.groupby("scheduler")[GOODPUT].median()
        best[q] = f"{med.idxmax()} {_mbit(med.max())}" if len(med) else "n/a"
    return [
        _claim(
            "goodput under equal delays (Mbit/s, median over RTTs)",
            "large queues: comparable, MuSher an edge at low delay; small queues: MinRTT, RR, "
            "BLEST, ECF shrink, MuSher very low, STTF best",
            f"MuSher small {_mbit(m['musher_small'])} vs large {_mbit(m['musher_large'])} "
            f"(lowest other, small: {_mbit(m['others_small_min'])}); best small: "
            f"{best['small']}, best large: {best['large']}",
        )
    ]


def fig5_sweeps(ctx: Any) -> list[dict]:
    # p1 fixed at 20 ms; p2 20 ms plus 30, 40, 50 ms more.
    paths = [_path("p1", rtt="20ms"), _path("p2", rtt="50ms")]
    rtts = ["50ms", "70ms"] if ctx.quick else ["50ms", "60ms", "70ms"]
    gig = ("20s", "5s")
    return _queue_sweeps(ctx, "cech-fig5", QUEUES_FIG45, paths, {RTT2: rtts}, FIELD, 1, gig)


def fig5_figures(df: Any, ctx: Any) -> list:
    title = f"{CECH}, Fig. 5: heterogeneous delays (p1 20 ms, p2 50-70 ms)"
    out = _metric_figures(_with_columns(df), "cech-fig5", title, RTT2, STUDY_METRICS)
    traces = musher_queue_traces("3s" if ctx.quick else "20s")
    out.append(("cech-fig5-musher-small-queues", _musher_queue_figure(traces, MUSHER_WHY)))
    return out


# Why MuSher collapses with small queues (the report's §4.5 and §7 finding; it gives no cause).
# On Fig. 5's 70 ms cell, 500-packet queues: both subflows leave slow start with losses far
# below p2's bandwidth-delay product (1 Gbit/s x 70 ms = 6160 segments): MuSher takes turns
# (50 segments per subflow per burst, nothing sent while the due subflow's window is full), so
# a subflow sends its window in bursts after waiting for its turn, and a burst larger than the
# 500-packet queue overflows it. Repeated loss rounds cut both windows (CUBIC, x0.7 each) to
# about the queue size (p1 ~530, p2 ~550 segments). From then on the strict 50 % ratio caps the
# connection at twice what p2's window carries per 70 ms, 2 x 550 x 1420 B / 70 ms = 180
# Mbit/s, while p1's window would carry 300 Mbit/s by itself. No ratio search starts: goodput
# stays flat, never 200 Mbit/s from the slow-start reference, and the in-flight bytes never fall
# 75 kB below it. CUBIC keeps p2's window near its pre-loss maximum for K = cbrt(W_max x 0.3 /
# 0.4) ~ 8-12 s, then grows it convexly: the goodput climbs only in the last seconds of a 20 s
# run. With 2000-packet queues slow start ends without loss at the receive buffer's limit.
MUSHER_RTT2 = "70ms"
MUSHER_TRACES = (("musher", "small"), ("musher", "large"), ("minrtt", "small"))
MUSHER_WHY = (
    f"{CECH}, Fig. 5 at p2 70 ms: with 500-packet queues slow-start losses leave MuSher's\n"
    "windows near the queue size, and its strict 50:50 ratio ties goodput to 2 x p2's window / RTT"
)


def musher_queue_scenario(queue: str, duration: str = "20s") -> dict[str, Any]:
    """cech-fig5's most heterogeneous cell: p1 20 ms, p2 70 ms, both 1 Gbit/s."""
    paths = [
        _path("p1", rtt="20ms", queue=QUEUES_FIG45[queue]),
        _path("p2", rtt=MUSHER_RTT2, queue=QUEUES_FIG45[queue]),
    ]
    return _scenario(paths, duration)


@functools.lru_cache(maxsize=2)
def musher_queue_traces(duration: str = "20s") -> dict[tuple[str, str], Any]:
    """Traced runs of `musher_queue_scenario` per (scheduler, queues) in `MUSHER_TRACES`."""
    from . import runner

    return {
        (s, q): runner.run_traced(
            musher_queue_scenario(q, duration), s, seed=1, sample_interval_s=0.05
        )
        for s, q in MUSHER_TRACES
    }


def musher_queue_series(trace: Any, bin_s: float = 0.5) -> Any:
    """Per `bin_s` bin of a two-path trace: goodput (bytes delivered to the application,
    bit/s), `p1_share` of the new segments sent (MuSher's assignment ratio), retransmissions
    per path, mean cwnd (segments) and sRTT (s) per path, and `ratio_bound`: what the ratio
    lets through when p2 is window-bound, p2's cwnd / sRTT divided by p2's share (bit/s)."""
    import pandas as pd

    ev = trace.events
    b = (ev["time_s"] // bin_s).astype(int)
    sender = ev["side"] == "sender"
    new = ev[sender & (ev["kind"] == "send")].groupby([b, "path"]).size().unstack(fill_value=0)
    rtx = ev[sender & (ev["kind"] == "retransmit")].groupby([b, "path"]).size()
    rtx = rtx.unstack(fill_value=0).reindex(columns=[0, 1], fill_value=0)
    g = goodput_series(trace, bin_s)
    goodput = pd.Series(g["total"].to_numpy(), index=(g["time_s"] / bin_s).round().astype(int))
    sm = trace.samples
    sb = (sm["time_s"] // bin_s).astype(int)
    cwnd = sm.groupby([sb, "path"])["cwnd_bytes"].mean().unstack() / MSS_MPTCP
    srtt = sm.groupby([sb, "path"])["srtt_s"].mean().unstack()
    out = pd.DataFrame(
        {
            "goodput_bps": goodput,
            "p1_share": new[0] / new.sum(axis=1),
            "rtx_p1": rtx[0],
            "rtx_p2": rtx[1],
            "cwnd_p1": cwnd[0],
            "cwnd_p2": cwnd[1],
            "srtt_p1_s": srtt[0],
            "srtt_p2_s": srtt[1],
        }
    )
    # Whole bins only (the run ends inside the last one).
    out = out[(out.index + 1) * bin_s <= ev["time_s"].max() + 1e-9]
    out[["goodput_bps", "rtx_p1", "rtx_p2"]] = out[["goodput_bps", "rtx_p1", "rtx_p2"]].fillna(0)
    out["ratio_bound"] = out["cwnd_p2"] * MSS_MPTCP * 8 / out["srtt_p2_s"] / (1 - out["p1_share"])
    out.index = out.index * bin_s
    out.index.name = "time_s"
    return out


def _musher_queue_figure(traces: dict[tuple[str, str], Any], title: str):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(8, 7.5), sharex=True)
    fig.set_layout_engine("constrained")
    colours = {("musher", "small"): "tab:red", ("musher", "large"): "tab:blue"}
    small_queue = int(QUEUES_FIG45["small"].removesuffix("pkt"))
    search_note = "no ratio search in the run"
    for (s, q), tr in traces.items():
        d = musher_queue_series(tr)
        colour = colours.get((s, q), "grey")
        label = f"{s}, {q} queues ({QUEUES_FIG45[q]}): {tr.result[GOODPUT] / 1e6:.0f} Mbit/s"
        t = d.index + 0.25
        axes[0].plot(
            t, d["goodput_bps"] / 1e6, "-" if s == "musher" else ":", color=colour, label=label
        )
        if s == "musher":
            axes[2].plot(t, d["p1_share"], color=colour, label=f"{q} queues")
        if (s, q) == ("musher", "large"):
            axes[1].plot(
                [],
                [],
                color=colour,
                label=(
                    f"large queues: p1 {d['cwnd_p1'].iloc[-1]:.0f}, p2 {d['cwnd_p2'].iloc[-1]:.0f} "
                    "(receive buffer's limit, no loss)"
                ),
            )
        if (s, q) != ("musher", "small"):
            continue
        # After slow start the ratio holds at 50 % until a search moves it.
        moved = d[(d.index >= 1.0) & ((d["p1_share"] - 0.5).abs() > 0.02)]
        if not moved.empty:
            search_note = f"no ratio search until {moved.index[0]:.1f} s"
        axes[0].plot(
            t,
            d["ratio_bound"] / 1e6,
            "--",
            color="black",
            lw=1,
            label="p2 cwnd / sRTT / p2's share (musher small)",
        )
        p1_alone = d["cwnd_p1"] * MSS_MPTCP * 8 / d["srtt_p1_s"] / 1e6
        axes[0].plot(
            t,
            p1_alone,
            "-.",
            color=colour,
            lw=1,
            label="p1 cwnd / sRTT: what p1's window alone carries (musher small)",
        )
        axes[1].plot(t, d["cwnd_p1"], "-", color=colour, label="p1 cwnd (20 ms), small queues")
        axes[1].plot(t, d["cwnd_p2"], "--", color=colour, label="p2 cwnd (70 ms), small queues")
        lost = d[(d["rtx_p1"] + d["rtx_p2"]) > 0]
        for i, x in enumerate(lost.index):
            axes[1].axvspan(
                x,
                x + 0.5,
                color="orange",
                alpha=0.3,
                label="bins with retransmissions (small)" if i == 0 else None,
            )
    axes[1].axhline(
        small_queue, color="grey", lw=0.8, ls=":", label=f"queue size ({small_queue} packets)"
    )
    axes[0].set_ylabel("goodput (Mbit/s)")
    axes[1].set_ylabel("cwnd (segments)")
    axes[1].set_ylim(0, 1800)
    axes[2].set_ylabel("MuSher's ratio: share\nof new segments on p1")
    axes[2].set_ylim(0, 1)
    axes[2].text(
        0.5,
        0.15,
        f"{search_note} (small queues): a search starts only after five samples with goodput\n"
        "200 Mbit/s off its slow-start reference, or the queued bytes 75 kB below it",
        fontsize="x-small",
    )
    axes[2].set_xlabel("time (s)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small", loc="upper left")
    fig.suptitle(title, fontsize="small")
    return fig


def fast_flow_share(df: Any) -> dict[str, float]:
    """The smallest share of bytes each scheduler put on the fast path over p2's RTTs and both
    queue sizes."""
    d = _with_columns(df)
    return {
        s: float(d[d["scheduler"] == s]["first_path_share"].min())
        for s in dict.fromkeys(d["scheduler"])
    }


def fig5_claims(df: Any) -> list:
    share = fast_flow_share(df)
    cells = ", ".join(f"{s} {share[s]:.2f}" for s in STUDIED if s in share)
    d = _with_columns(df)
    ofo = d[d["scheduler"].isin(STUDIED)].groupby("scheduler")["ofo_queue_avg_bytes"].median()
    return [
        _claim(
            "smallest share of bytes on the fast path",
            "all but RR, MuSher and STTF used only one flow; BLEST best by using one flow",
            cells,
        ),
        _claim(
            "lowest median OFO queue",
            "BLEST (one flow)",
            f"{ofo.idxmin()} {ofo.min() / 1024:.0f} KiB" if len(ofo) else "n/a",
        ),
    ]


# ---- cech-fig6: heterogeneous loss -----------------------------------------------------------


FIG6_LOSS = [0.001, 0.005, 0.01, 0.05]


def fig6_sweeps(ctx: Any) -> list[dict]:
    # Both 100 Mbit/s; p1 0.005% loss, p2 more; one value on data and ACKs alike (§4.6), so one
    # sweep per value rather than two crossed axes.
    loss = FIG6_LOSS[1::2] if ctx.quick else FIG6_LOSS
    sweeps = []
    for p in loss:
        sweeps.append(
            {
                "name": f"cech-fig6-loss{p:g}",
                "scenario": lossy_scenario(loss=p, duration=_duration(ctx, "20s", "5s")),
                "schedulers": FIELD,
                "reps": 2 if ctx.quick else 3,
            }
        )
    return sweeps


def _fig6_frame(df: Any) -> Any:
    d = _with_columns(df)
    d[LOSS2] = d["sweep"].str.extract(r"loss([0-9.e-]+)$")[0].astype(float)
    d["queues"] = "1000pkt"
    return d


def fig6_figures(df: Any, ctx: Any) -> list:
    title = f"{CECH}, Fig. 6: heterogeneous loss (p1 0.005%, p2 raised)"
    metrics = STUDY_METRICS + [("utilization_by_path.p1", "p1-utilization")]
    out = _metric_figures(_fig6_frame(df), "cech-fig6", title, LOSS2, metrics)
    rtts = LOSSY_BASE_RTTS[1::3] if ctx.quick else LOSSY_BASE_RTTS
    m = lossy_by_base_rtt(rtts, "3s" if ctx.quick else "10s")
    why = (
        f"{CECH}, Fig. 6 at p2 1% loss: MuSher's 50% ratio ties p1 to p2, so p1 stays close\n"
        "to its maximum only where p2 alone nearly fills its path (small base RTT)"
    )
    out.append(("cech-fig6-musher-base-rtt", _base_rtt_figure(m, why)))
    return out


# MuSher's strict assignment ratio (the report's own §4.4 finding: "schedules an equal number
# of packets to each flow") ties p1 to what the lossy p2 carries. Its search cannot move the
# ratio here: the rate trigger needs a 200 Mbit/s change (more than both paths carry) and the
# queued-bytes trigger a 75 kB fall below the reference. So MuSher keeps p1 "close to its
# maximum" only if p2 alone nearly fills its 100 Mbit/s at that loss rate, which a Linux TCP
# flow at 1% loss does only below about 0.5 ms of RTT (window = RTT x rate). The testbed's
# base RTT is not reported (Gigabit hops through two routers; §4.6 sees p2's sRTT "close to
# zero"); ours is 1 ms. The figure shows p1's utilization against the base RTT.
LOSSY_BASE_RTTS = ("0.1ms", "0.2ms", "0.3ms", "0.5ms", "1ms")
LOSSY_P2_LOSS = 0.01


def lossy_scenario(rtt: str = BASE_RTT, loss: float = LOSSY_P2_LOSS, duration: str = "10s"):
    """Fig. 6's setting at one p2 loss rate: both 100 Mbit/s, p1 0.005% loss, 1000 packets."""
    paths = [
        _path("p1", rate="100Mbit", rtt=rtt, queue="1000pkt", loss=0.00005, reverse_loss=0.00005),
        _path("p2", rate="100Mbit", rtt=rtt, queue="1000pkt", loss=loss, reverse_loss=loss),
    ]
    return _scenario(paths, duration)


@functools.lru_cache(maxsize=2)
def lossy_by_base_rtt(
    rtts: tuple[str, ...] = LOSSY_BASE_RTTS, duration: str = "10s"
) -> dict[str, dict[str, float]]:
    """Per base RTT: p1's utilization under MuSher and MinRTT, and p2's alone (single-path
    TCP on p2, what its loss rate lets a flow carry), p2 at 1% loss."""
    from . import runner

    out: dict[str, dict[str, float]] = {}
    for rtt in rtts:
        sc = lossy_scenario(rtt, duration=duration)
        row = {
            s: runner.run(sc, s, seed=1)["utilization_by_path"]["p1"] for s in ("musher", "minrtt")
        }
        row["p2 alone"] = runner.run(sc, "single:p2", seed=1)["utilization_by_path"]["p2"]
        out[rtt] = row
    return out


def _base_rtt_figure(m: dict[str, dict[str, float]], title: str):
    import matplotlib.pyplot as plt

    plots = _plots()
    fig, ax = plt.subplots(figsize=(7, 3.6))
    fig.set_layout_engine("constrained")
    x = [float(r.rstrip("ms")) for r in m]
    names = list(next(iter(m.values())))
    for name in names:
        style = "--" if name == "p2 alone" else "-"
        colour = "grey" if name == "p2 alone" else plots.scheduler_colour(name, names)
        label = "p2 alone (single-path TCP, its utilization)" if name == "p2 alone" else name
        ax.plot(x, [m[r][name] for r in m], style, marker="o", color=colour, label=label)
    ax.axhline(0.9, color="black", lw=0.8, ls=":", label="0.9 (close to its maximum)")
    ax.set_xlabel("base RTT of both paths (ms)")
    ax.set_ylabel("p1 utilization")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title(title, fontsize="small")
    return fig


def lossy_path_p1_utilization(df: Any) -> dict[tuple[str, float], float]:
    """Median utilization of the nearly loss-free path per scheduler and p2 loss."""
    d = _fig6_frame(df)
    return {
        (s, float(p)): _median(d, "utilization_by_path.p1", scheduler=s, **{LOSS2: float(p)})
        for s in dict.fromkeys(d["scheduler"])
        for p in sorted(d[LOSS2].unique())
    }


def fig6_claims(df: Any) -> list:
    u = lossy_path_p1_utilization(df)
    by_loss: dict[float, list[float]] = {}
    for (_, p), v in u.items():
        by_loss.setdefault(p, []).append(v)
    cells = "; ".join(
        f"p2 {100 * p:g}%: {min(v):.2f}-{max(v):.2f}" for p, v in sorted(by_loss.items())
    )
    return [
        _claim(
            "utilization of the nearly loss-free path (min-max over schedulers)",
            "all schedulers handle the lossy flow: the first flow stays close to its maximum; "
            "only at 5% it takes a small hit",
            cells,
        )
    ]


# ---- cech-fig7: coupled congestion control ---------------------------------------------------


def fig7_sweeps(ctx: Any) -> list[dict]:
    paths = [_path("p1", rate="100Mbit"), _path("p2", rate="25Mbit")]
    ccs = ["lia", "wvegas"] if ctx.quick else ["cubic", "lia", "olia", "balia", "wvegas"]
    return _queue_sweeps(ctx, "cech-fig7", QUEUES_FIG3, paths, {"transport.cc": ccs}, STUDIED)


def fig7_figures(df: Any, ctx: Any) -> list:
    title = f"{CECH}, Fig. 7: coupled congestion control (p1 100, p2 25 Mbit/s)"
    return _metric_figures(_with_columns(df), "cech-fig7", title, "transport.cc", STUDY_METRICS[:4])


def fig7_claims(df: Any) -> list:
    d = _with_columns(df)
    med = d.groupby("transport.cc")[GOODPUT].median()
    cells = ", ".join(f"{cc} {_mbit(v)}" for cc, v in med.items())
    mr = {
        cc: _median(d, GOODPUT, scheduler="minrtt", queues="large", **{"transport.cc": cc})
        for cc in med.index
    }
    return [
        _claim(
            "median goodput per congestion control (Mbit/s)",
            "wVegas not effective; LIA, OLIA, BALIA comparable",
            cells,
        ),
        _claim(
            "MinRTT with large queues per congestion control (Mbit/s)",
            "MinRTT's large-queue problem does not occur with BALIA",
            ", ".join(f"{cc} {_mbit(v)}" for cc, v in mr.items()),
        ),
    ]


# ---- cech-fig9 / cech-fig10: LTE handovers ---------------------------------------------------

# Dual LTE (§5): every 15 s a 2 s handover on the second subflow, rate /10 and RTT x3 (Li et
# al., SIGCOMM 2018, as the report). Rates, RTT and queue of the LTE paths are not given: 20
# Mbit/s, 40 ms, 300 packets each (ours). The first handover at 10 s to keep runs short.
HANDOVER = {"every": "15s", "duration": "2s", "start": "10s", "rate_factor": 0.1, "rtt_factor": 3}
LTE_DURATION = "40s"
BIN_S = 0.5
# The figures run before the claims (presets.reproduce): the claims reuse the traced runs.
_LAST: dict[str, str] = {}


def handover_scenario(duration: str = LTE_DURATION, queue: str = "300pkt") -> dict[str, Any]:
    paths = [
        _path("lte1", rate="20Mbit", rtt="40ms", queue=queue),
        _path("lte2", rate="20Mbit", rtt="40ms", queue=queue, handover=HANDOVER),
    ]
    return _scenario(paths, duration)


def handover_windows(duration_s: float) -> list[tuple[float, float]]:
    out, t = [], 10.0
    while t + 2.0 <= duration_s:
        out.append((t, t + 2.0))
        t += 15.0
    return out


def fig9_sweeps(ctx: Any) -> list[dict]:
    return [
        {
            "name": "cech-fig9-handover",
            "scenario": handover_scenario("30s" if ctx.quick else LTE_DURATION),
            "schedulers": ["minrtt", "lte-handover", "single:lte1"],
            "reps": 1,
        }
    ]


def goodput_series(trace: Any, bin_s: float = BIN_S) -> Any:
    """Per-path and total goodput (bit/s) per time bin: new data arriving on each path, and
    the bytes delivered in order to the application."""
    import numpy as np
    import pandas as pd

    ev = trace.events
    end = float(ev["time_s"].max()) if len(ev) else 0.0
    edges = np.arange(0.0, end + bin_s, bin_s)
    out = pd.DataFrame({"time_s": edges[:-1]})
    arrive = ev[(ev["side"] == "receiver") & (ev["kind"] == "arrive")]
    for name in trace.path_names:
        part = arrive[arrive["path_name"] == name]
        hist, _ = np.histogram(part["time_s"], bins=edges, weights=part["len"])
        out[name] = hist * 8 / bin_s
    deliver = ev[ev["kind"] == "deliver"]
    hist, _ = np.histogram(deliver["time_s"], bins=edges, weights=deliver["len"])
    out["total"] = hist * 8 / bin_s
    return out


def delivered_rate(trace: Any, windows) -> float:
    """In-order delivery rate (bit/s) over the given time windows."""
    ev = trace.events
    d = ev[ev["kind"] == "deliver"]
    total = sum(float(d[(d["time_s"] >= a) & (d["time_s"] < b)]["len"].sum()) for a, b in windows)
    span = sum(b - a for a, b in windows)
    return total * 8 / span if span else math.nan


@functools.lru_cache(maxsize=2)
def handover_measure(duration: str = LTE_DURATION, schedulers=("minrtt", "lte-handover")):
    """During handovers, each scheduler's in-order goodput over that of single-path TCP on the
    undisturbed path (`single:lte1`), and per-path rates inside vs outside the handovers."""
    from . import runner

    scenario = handover_scenario(duration)
    traces = {s: runner.run_traced(scenario, s, seed=1) for s in (*schedulers, "single:lte1")}
    dur = float(duration.rstrip("s"))
    windows = handover_windows(dur)
    ref = delivered_rate(traces["single:lte1"], windows)
    out: dict[str, Any] = {"reference_bps": ref, "windows": windows, "traces": traces}
    for s in schedulers:
        rate = delivered_rate(traces[s], windows)
        out[s] = {"during_bps": rate, "ratio": rate / ref if ref else math.nan}
    return out


OUTAGE_AT_S = 5.0


def linux_rto(trace: Any, path: str, until_s: float) -> tuple[float, float]:
    """The subflow's RTO after its last ACK before `until_s`, from the RTT samples in the
    trace: RFC 6298 §2 smoothing (alpha 1/8, beta 1/4) with Linux's floor on the variance term
    (`tcp_rtt_estimator` keeps rttvar at least `tcp_rto_min`, `__tcp_set_rto`: RTO = sRTT +
    rttvar, net/ipv4/tcp_input.c): RTO = sRTT + max(4 RTTVAR, 200 ms). Returns (RTO, time of
    that last ACK). A sample is an ACK that advances the cumulative data-ACK on `path`, timed
    from the first segment it newly covers: the ACK echoes that segment's TSval (RFC 7323
    §4.3), which is also the earliest send time Linux takes (`first_ackt` in
    `tcp_clean_rtx_queue`) when a delayed ACK covers two segments."""
    ev = trace.events
    ev = ev[(ev["side"] == "sender") & (ev["path_name"] == path) & (ev["time_s"] < until_s)]
    sends = ev[ev["kind"] == "send"]
    sent_at = dict(zip(sends["dsn"].tolist(), sends["time_s"].tolist()))
    acks = ev[ev["kind"] == "ack"]
    srtt = rttvar = math.nan
    acked = int(sends["dsn"].min()) if len(sends) else 0
    for t, dsn in zip(acks["time_s"].tolist(), acks["dsn"].tolist()):
        if dsn <= acked:
            continue
        sent = sent_at.get(acked)
        acked = dsn
        if sent is None:
            continue
        r = t - sent
        if math.isnan(srtt):
            srtt, rttvar = r, r / 2
        else:
            rttvar = 0.75 * rttvar + 0.25 * abs(srtt - r)
            srtt = 0.875 * srtt + 0.125 * r
    last_ack = float(acks["time_s"].max()) if len(acks) else math.nan
    return srtt + max(4 * rttvar, 0.200), last_ack


def backup_failover(
    duration: str = "10s", scheduler: str = "backup", outage_at: float = OUTAGE_AT_S
) -> dict[str, float]:
    """The `backup` scheduler's failover (issue 11): the primary (20 Mbit/s, 40 ms) goes dark
    at `outage_at` (5 s) for 3 s; the backup path (20 Mbit/s, 60 ms, MPTCP backup flag) must
    take over.
    Returns the time from the outage, and from the primary's last ACK (its last sign of life:
    ACKs already past the link still arrive), to the first data on the backup path, and the
    primary's RTO then (`linux_rto`). `scheduler="backup:detect=rto"` runs Linux v0.9x's
    rule (failover at the RTO)."""
    from . import runner

    outage = [f"{outage_at:g}s", f"{outage_at + 3:g}s"]
    sc = _scenario(
        [
            _path("primary", rate="20Mbit", rtt="40ms", queue="100pkt", outages=[outage]),
            _path("spare", rate="20Mbit", rtt="60ms", queue="100pkt", backup=True),
        ],
        duration,
    )
    tr = runner.run_traced(sc, scheduler, seed=1)
    ev = tr.events
    sends = ev[(ev["side"] == "sender") & ev["kind"].isin(["send", "reinject", "retransmit"])]
    spare = sends[sends["path_name"] == "spare"]
    after = spare[spare["time_s"] >= outage_at]
    first = float(after["time_s"].min()) if len(after) else math.inf
    rto, last_ack = linux_rto(tr, "primary", outage_at + 3)
    # Linux sends a tail loss probe first (`tcp_schedule_loss_probe`, PTO = 2 sRTT), then
    # arms the RTO: the primary's first retransmission after its last ACK.
    rtx = sends[(sends["path_name"] == "primary") & (sends["kind"] == "retransmit")]
    rtx = rtx[rtx["time_s"] > last_ack]
    return {
        "probe_after_last_ack_s": (float(rtx["time_s"].min()) - last_ack) if len(rtx) else math.nan,
        "failover_s": first - outage_at,
        "since_last_ack_s": first - last_ack,
        "rto_s": rto,
        "spare_bytes_before": float(spare[spare["time_s"] < outage_at]["len"].sum()),
    }


def _series_figure(traces: dict[str, Any], windows, title: str):
    import matplotlib.pyplot as plt

    plots = _plots()
    names = list(traces)
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 2.4 * len(names)), sharex=True)
    fig.set_layout_engine("constrained")
    axes = axes if len(names) > 1 else [axes]
    for ax, name in zip(axes, names):
        s = goodput_series(traces[name])
        for i, p in enumerate(traces[name].path_names):
            ax.plot(s["time_s"], s[p] / 1e6, color=plots.path_colour(i), label=p)
        ax.plot(s["time_s"], s["total"] / 1e6, color="black", lw=1.2, label="total (in order)")
        for a, b in windows:
            ax.axvspan(a, b, color="grey", alpha=0.2)
        ax.set_ylabel("goodput (Mbit/s)")
        ax.set_title(name, fontsize="small")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small", ncol=3)
    axes[-1].set_xlabel("time (s); grey: handover on lte2")
    fig.suptitle(title)
    return fig


def fig9_figures(df: Any, ctx: Any) -> list:
    m = handover_measure("30s" if ctx.quick else LTE_DURATION)
    title = (
        f"{CECH}, Fig. 9: goodput per flow over time, dual LTE, a 2 s handover every 15 s\n"
        "(rate /10, RTT x3 on lte2)"
    )
    _LAST["duration"] = "30s" if ctx.quick else LTE_DURATION
    return [("cech-fig9-goodput-over-time", _series_figure(m["traces"], m["windows"], title))]


def fig9_claims(df: Any) -> list:
    m = handover_measure(_LAST.get("duration", LTE_DURATION))
    ref = m["reference_bps"]
    return [
        _claim(
            "in-order goodput during handovers / single-path TCP on the undisturbed path",
            "MinRTT: the throughput of both flows drops during the handover, recovery delayed; "
            "the handover scheduler should keep it (issue: within 20%)",
            f"minrtt {m['minrtt']['ratio']:.2f}, lte-handover {m['lte-handover']['ratio']:.2f} "
            f"(reference {_mbit(ref)} Mbit/s)",
        ),
        _backup_claim(),
        _claim(
            "median goodput over the run (Mbit/s)",
            "—",
            ", ".join(
                f"{s} {_mbit(_median(df, GOODPUT, scheduler=s))}"
                for s in dict.fromkeys(df["scheduler"])
            ),
        ),
    ]


def _backup_claim():
    b = backup_failover()
    v09 = backup_failover(scheduler="backup:detect=rto")
    return _claim(
        "backup: primary outage to first data on the backup path",
        "(issue 11) fail over within one RTO of the primary's outage, not in 30 s",
        f"{b['failover_s'] * 1e3:.0f} ms after the outage, "
        f"{b['since_last_ack_s'] * 1e3:.0f} ms after the primary's last ACK (one probe "
        f"timeout without an ACK); its RTO {b['rto_s'] * 1e3:.0f} ms. Linux v0.9x's rule "
        f"(detect=rto): {v09['failover_s'] * 1e3:.0f} ms (tail loss probe at "
        f"{v09['probe_after_last_ack_s'] * 1e3:.0f} ms, then the RTO)",
    )


def fig10_sweeps(ctx: Any) -> list[dict]:
    # (a)-(c): heterogeneous delay with large queues (p1 20 ms, p2 50/60/70 ms, Fig. 5's
    # setting); (d): heterogeneous bandwidth with small queues (Fig. 3's, p2 25 Mbit/s).
    hdelay = [_path("p1", rtt="20ms", queue="2000pkt"), _path("p2", rtt="50ms", queue="2000pkt")]
    hrate = [
        _path("p1", rate="100Mbit", queue="300pkt"),
        _path("p2", rate="25Mbit", queue="300pkt"),
    ]
    scheds = ["minrtt", "lte-handover"]
    return [
        {
            "name": "cech-fig10-large",
            "scenario": _scenario(hdelay, _duration(ctx)),
            "schedulers": scheds,
            "reps": 1,
            "axes": {RTT2: ["50ms", "70ms"] if ctx.quick else ["50ms", "60ms", "70ms"]},
        },
        {
            "name": "cech-fig10-small",
            "scenario": _scenario(hrate, _duration(ctx)),
            "schedulers": scheds,
            "reps": 1,
        },
    ]


def _fig10_frame(df: Any) -> Any:
    d = _with_columns(df)
    d["setting"] = [
        f"p2 {r * 1e3:.0f} ms, large" if q == "large" else "p2 25 Mbit/s, small"
        for r, q in zip(d.get(RTT2, [math.nan] * len(d)), d["queues"])
    ]
    d["queues"] = "as setting"
    return d


def fig10_figures(df: Any, ctx: Any) -> list:
    title = f"{CECH}, Fig. 10: LTE scheduler vs MinRTT"
    return _metric_figures(_fig10_frame(df), "cech-fig10", title, "setting", STUDY_METRICS[:4])


def fig10_claims(df: Any) -> list:
    d = _fig10_frame(df)
    cells = []
    for setting in dict.fromkeys(d["setting"]):
        part = d[d["setting"] == setting]
        m = _median(part, "first_path_share", scheduler="minrtt")
        lte = _median(part, "first_path_share", scheduler="lte-handover")
        gm = _median(part, GOODPUT, scheduler="minrtt")
        gl = _median(part, GOODPUT, scheduler="lte-handover")
        cells.append(f"{setting}: share {m:.2f}/{lte:.2f}, {_mbit(gm)}/{_mbit(gl)} Mbit/s")
    return [
        _claim(
            "first-path share and goodput, minrtt/lte-handover",
            "LTE scheduler uses both flows with large queues where MinRTT uses one (b, c), only "
            "the first in (a); MinRTT more goodput there; on par in (d); lower OFO queue",
            "; ".join(cells),
        )
    ]


def presets() -> dict:
    from .presets import Preset

    common = (
        "Gigabit paths simulated at 1 Gbit/s; base RTT 1 ms where the report adds none",
        "bulk transfer (iperf3) with CUBIC unless the figure varies the congestion control",
    )
    entries = [
        (
            "cech-fig2",
            "Figure 2",
            "goodput by different schedulers given two, three, or four Gigabit paths",
            fig2_sweeps,
            fig2_figures,
            fig2_claims,
            common,
        ),
        (
            "cech-fig3",
            "Figure 3",
            "scheduling performance on paths with heterogeneous "
            "bandwidths, 300- and 1000-packet queues",
            fig3_sweeps,
            fig3_figures,
            fig3_claims,
            common + ("p2 rates 100, 50, 25, 10 Mbit/s (the report does not list them)",),
        ),
        (
            "cech-fig4",
            "Figure 4",
            "schedulers on paths with increasing equal delays, 500- and 2000-packet queues",
            fig4_sweeps,
            fig4_figures,
            fig4_claims,
            common,
        ),
        (
            "cech-fig5",
            "Figure 5",
            "schedulers on paths with heterogeneous delays, 500- and 2000-packet queues",
            fig5_sweeps,
            fig5_figures,
            fig5_claims,
            common + ("p2's RTT is p1's 20 ms plus 30, 40, 50 ms",),
        ),
        (
            "cech-fig6",
            "Figure 6",
            "schedulers on paths with heterogeneous packet loss",
            fig6_sweeps,
            fig6_figures,
            fig6_claims,
            common
            + (
                "p2 loss 0.1, 0.5, 1, 5% (the report names 0.5% and 5%); 1000-packet queue",
                "both 100 Mbit/s; loss on data and ACKs",
            ),
        ),
        (
            "cech-fig7",
            "Figure 7",
            "impact of the congestion control on bandwidth-heterogeneous "
            "links, small and large queues",
            fig7_sweeps,
            fig7_figures,
            fig7_claims,
            common + ("p1 100, p2 25 Mbit/s",),
        ),
        (
            "cech-fig9",
            "Figure 9",
            "response of the minRTT scheduler to handover events on one "
            "of two flows in an emulated dual LTE environment",
            fig9_sweeps,
            fig9_figures,
            fig9_claims,
            (
                "two LTE paths of 20 Mbit/s, RTT 40 ms, 300-packet queues (ours)",
                "our finished lte-handover scheduler runs beside MinRTT",
            ),
        ),
        (
            "cech-fig10",
            "Figure 10",
            "performance tests of the LTE scheduler in comparison with "
            "the reference minRTT scheduler",
            fig10_sweeps,
            fig10_figures,
            fig10_claims,
            common
            + (
                "(a)-(c) are Fig. 5's large-queue settings, (d) Fig. 3's small-queue "
                "setting with p2 at 25 Mbit/s",
            ),
        ),
    ]
    return {
        name: Preset(name, fig, caption, sw, figs, claims, assumptions, paper=CECH)
        for name, fig, caption, sw, figs, claims, assumptions in entries
    }
