"""Presets for in-order delivery and low delay: STMS (Shi et al., USENIX ATC 2018) and R-TSC
(Park et al., "Minimizing Application-Level Delay of Multi-Path TCP in Wireless Networks: A
Receiver-Centric Approach"). Registered in `presets.PRESETS`.

Scenarios are TOML-shaped dicts (what a scenario file would hold); schedulers by CLI name,
`NAME+rtsc` for a run with the R-TSC receiver policy.
"""

from __future__ import annotations

from typing import Any

from .wire import MSS_MPTCP, SEGMENT_WIRE_BYTES

STMS = "Shi et al., USENIX ATC 2018"
RTSC = "Park et al. (R-TSC)"
F_RATE = "35.85Mbit"
WIFI_RATE = "path.wifi.rate"
RECV_BUFFER = "transport.recv_buffer"
SLOW_RTTS = ["50ms", "100ms", "200ms", "300ms"]


def _plots():
    from . import plots

    return plots


def _stms_paths(slow_rtt: str = "200ms") -> list[dict[str, Any]]:
    # §2.1: both paths 30 Mbit/s, WiFi (fast) 20 ms with a 50 ms buffer, LTE (slow) with 500 ms.
    return [
        {"name": "wifi", "rate": "30Mbit", "rtt": "20ms", "queue": "50ms", "loss": 0.0001},
        {"name": "lte", "rate": "30Mbit", "rtt": slow_rtt, "queue": "500ms", "loss": 0.0001},
    ]


def _rtsc_scenario() -> dict[str, Any]:
    # §VI-C: LTE c0 = 40 Mbit/s, T^p 30 ms; WiFi c1, T^p 15 ms; buffers as Table II's W^Loss.
    return {
        "path": [
            {"name": "lte", "rate": "40Mbit", "rtt": "30ms", "queue": "7MB"},
            {"name": "wifi", "rate": "12Mbit", "rtt": "15ms", "queue": "700KB"},
        ],
        "workload": {"kind": "stream", "rate": F_RATE, "duration": "20s"},
        "transport": {"cc": "reno"},
    }


def _cdf_figure(df: Any, column: str, facet: str, title: str, xlabel: str):
    """One panel per `facet` value: each scheduler's CDF from the run's quantile list."""
    import matplotlib.pyplot as plt
    import numpy as np

    plots = _plots()
    facets = sorted(df[facet].dropna().unique()) if facet in df else [None]
    fig, axes = plt.subplots(1, len(facets), figsize=(4 * len(facets) + 0.5, 3.6), squeeze=False)
    fig.set_layout_engine("constrained")
    order = list(dict.fromkeys(df["scheduler"]))
    for ax, fval in zip(axes[0], facets):
        part = df if fval is None else df[df[facet] == fval]
        for name in order:
            rows = part[part["scheduler"] == name][column].dropna()
            if rows.empty:
                continue
            q = np.asarray(rows.iloc[0], dtype=float)
            y = np.linspace(0.0, 1.0, len(q))
            ax.step(q, y, where="post", label=name, color=plots.scheduler_colour(name, order))
        ax.set_xlabel(xlabel)
        ax.set_ylabel("CDF")
        ax.set_xscale("symlog", linthresh=1e-3)
        ax.grid(alpha=0.3)
        if fval is not None:
            ax.set_title(f"{facet} = {plots.format_axis_value(facet, fval)}", fontsize="small")
    axes[0][0].legend(fontsize="small")
    fig.suptitle(title)
    return fig


def _cell(df: Any, sched: str, metric: str, **where: Any) -> float:
    part = df[df["scheduler"] == sched]
    for k, v in where.items():
        part = part[part[k] == v]
    return float(part[metric].median()) if len(part) else float("nan")


# ---- rtsc-fig9 ---------------------------------------------------------------------------------


def rtsc_fig9_sweeps(ctx: Any) -> list[dict]:
    rates = ["6Mbit", "12Mbit", "23Mbit", "35Mbit"]
    return [
        {
            "name": "rtsc-fig9",
            "scenario": _rtsc_scenario(),
            "schedulers": ["rr", "rr+rtsc", "minrtt", "minrtt+rtsc"],
            "reps": 1,
            "axes": {WIFI_RATE: rates[:2] if ctx.quick else rates},
        }
    ]


def rtsc_fig9_figures(df: Any, ctx: Any):
    return [
        (
            "rtsc-fig9-delay-cdf",
            _cdf_figure(
                df,
                "app_delay_cdf_s",
                WIFI_RATE,
                f"{RTSC}, Fig. 9: application-level delay CDF\n"
                "default receiver vs R-TSC (c0 = 40 Mbit/s, f = 35.85 Mbit/s)",
                "application-level delay (s)",
            ),
        ),
        (
            "rtsc-fig9-p95",
            _plots().metric_bars(
                df, "app_delay_p95_s", group=WIFI_RATE, title=f"{RTSC}, Fig. 9: p95 delay"
            ),
        ),
    ]


def rtsc_fig9_claims(df: Any) -> list:
    from .presets import Claim

    cells = []
    for c1 in sorted(df[WIFI_RATE].dropna().unique()):
        cr = _cell(df, "rr", "app_delay_p95_s", **{WIFI_RATE: c1})
        rt = _cell(df, "rr+rtsc", "app_delay_p95_s", **{WIFI_RATE: c1})
        cells.append(f"c1 {c1 / 1e6:g} Mbit/s: {cr:.3f} -> {rt:.3f} s")
    return [
        Claim(
            "p95 application delay, RR sender, default receiver -> R-TSC",
            "R-TSC significantly better than the conventional receiver; the smaller c1, the "
            "larger the default receiver's delay",
            "; ".join(cells),
        )
    ]


# ---- stms-fig13 (receive buffer) ---------------------------------------------------------------


def stms_fig13_sweeps(ctx: Any) -> list[dict]:
    buffers = ["0.5MB", "1MB", "2MB", "4MB", "8MB"]
    return [
        {
            "name": "stms-fig13",
            "scenario": {
                "path": _stms_paths(),
                "workload": {"kind": "bulk", "duration": "10s" if ctx.quick else "30s"},
                "transport": {"send_buffer": "64MB"},
            },
            "schedulers": ["minrtt", "stms-c", "stms-a"],
            "reps": 1 if ctx.quick else 3,
            "axes": {RECV_BUFFER: buffers[1:4] if ctx.quick else buffers},
        }
    ]


def stms_fig13_figures(df: Any, ctx: Any):
    return [
        (
            "stms-fig13-recv-buffer",
            _plots().metric_bars(
                df,
                "goodput_bps",
                group=RECV_BUFFER,
                title=f"{STMS}, Fig. 13b: throughput vs receive buffer\n"
                "(30+30 Mbit/s, RTT 20/200 ms)",
            ),
        )
    ]


def stms_fig13_claims(df: Any) -> list:
    from .presets import Claim

    ratios, below = [], []
    for b in sorted(df[RECV_BUFFER].dropna().unique()):
        m = _cell(df, "minrtt", "goodput_bps", **{RECV_BUFFER: b})
        a = _cell(df, "stms-a", "goodput_bps", **{RECV_BUFFER: b})
        ratios.append(f"{b / 1e6:g} MB: {a / m:.2f}")
        if a < m:
            below.append(f"{b / 1e6:g} MB")
    return [
        Claim(
            "STMS-A throughput / MinRTT under a limited receive buffer",
            "about 1.15 when the host buffer is small, up to 4x when extremely limited; equal "
            "above 4 MB",
            "; ".join(ratios),
        ),
        Claim(
            "cells where STMS-A is below MinRTT",
            "none",
            ", ".join(below) or "none",
        ),
    ]


# ---- stms-fig10 ---------------------------------------------------------------------------------


def stms_fig10_sweeps(ctx: Any) -> list[dict]:
    return [
        {
            "name": "stms-fig10",
            "scenario": {
                "path": _stms_paths(),
                "workload": {"kind": "bulk", "duration": "10s" if ctx.quick else "30s"},
            },
            "schedulers": ["minrtt", "ecf", "stms-c", "stms-a"],
            "reps": 1,
            "axes": {
                "path.lte.rtt": ["50ms", "200ms"]
                if ctx.quick
                else ["50ms", "100ms", "200ms", "300ms"]
            },
        }
    ]


def stms_fig10_figures(df: Any, ctx: Any):
    return [
        (
            "stms-fig10-ooo-cdf",
            _cdf_figure(
                df,
                "ooo_delay_cdf_s",
                "path.lte.rtt",
                f"{STMS}, Fig. 10: out-of-order delay CDF\n(30+30 Mbit/s, WiFi RTT 20 ms)",
                "out-of-order delay (s)",
            ),
        )
    ]


def stms_fig10_claims(df: Any) -> list:
    from .presets import Claim

    cells = []
    for rtt in sorted(df["path.lte.rtt"].dropna().unique()):
        m = _cell(df, "minrtt", "ooo_delay_p99_s", **{"path.lte.rtt": rtt})
        a = _cell(df, "stms-a", "ooo_delay_p99_s", **{"path.lte.rtt": rtt})
        cells.append(f"LTE RTT {rtt * 1e3:g} ms: p99 {m:.3f} -> {a:.3f} s")
    return [
        Claim(
            "out-of-order delay, MinRTT -> STMS-A",
            "STMS-A keeps OOO delay close to zero; MinRTT pushes fast-path packets to OWD_s",
            "; ".join(cells),
        )
    ]


# ---- stms-fig3 (in-network buffer) -------------------------------------------------------------

FAST_QUEUE = "path.wifi.queue"
LTE_RTT = "path.lte.rtt"
BIG_HOST = {"send_buffer": "64MB", "recv_buffer": "64MB"}
# Table 1's fast-path buffers (30 KB = 8 ms at 30 Mbit/s is enough for one TCP), and more.
FAST_QUEUES = ["30KB", "60KB", "90KB", "150KB", "300KB"]
FAST_QUEUE_KB = "fast-path buffer (KB)"


def _with_fast_queue_kb(df: Any) -> Any:
    # The axis holds the sizes as written ("30KB"): a numeric column sorts and labels them.
    from .units import parse_size

    return df.assign(**{FAST_QUEUE_KB: [parse_size(v) / 1e3 for v in df[FAST_QUEUE]]})


def _bulk(ctx: Any, full: str = "30s", quick: str = "10s") -> dict[str, Any]:
    return {"kind": "bulk", "duration": quick if ctx.quick else full}


def stms_fig3_sweeps(ctx: Any) -> list[dict]:
    return [
        {
            "name": "stms-fig3",
            # Host buffers large: only the fast path's in-network buffer may limit (§2.2).
            "scenario": {"path": _stms_paths(), "workload": _bulk(ctx), "transport": BIG_HOST},
            "schedulers": ["minrtt", "single:wifi"],
            "reps": 1,
            "axes": {
                FAST_QUEUE: FAST_QUEUES[::2] if ctx.quick else FAST_QUEUES,
                LTE_RTT: ["20ms", "200ms"] if ctx.quick else ["20ms", "100ms", "200ms"],
            },
        }
    ]


def _needed(df: Any, sched: str, axis: str, metric: str, target: float, **where: Any) -> float:
    """The smallest `axis` value at which `sched`'s median `metric` reaches `target`."""
    for v in sorted(df[axis].dropna().unique()):
        if _cell(df, sched, metric, **{axis: v}, **where) >= target:
            return float(v)
    return float("nan")


def stms_fig3_figures(df: Any, ctx: Any):
    return [
        (
            "stms-fig3-in-network-buffer",
            _plots().metric_bars(
                _with_fast_queue_kb(df),
                "goodput_bps",
                group=FAST_QUEUE_KB,
                facet=LTE_RTT,
                title=f"{STMS}, Fig. 3: throughput vs the fast path's in-network buffer\n"
                "(30+30 Mbit/s, WiFi RTT 20 ms)",
            ),
        )
    ]


def stms_fig3_claims(df: Any) -> list:
    from .presets import Claim

    df = _with_fast_queue_kb(df)
    tcp = _needed(df, "single:wifi", FAST_QUEUE_KB, "goodput_bps", 0.9 * 30e6)
    cells = []
    for rtt in sorted(df[LTE_RTT].dropna().unique()):
        need = _needed(df, "minrtt", FAST_QUEUE_KB, "goodput_bps", 0.9 * 60e6, **{LTE_RTT: rtt})
        cells.append(f"LTE RTT {rtt * 1e3:g} ms: {need:g} KB")
    return [
        Claim(
            "fast-path buffer for 90% of the aggregate (single TCP: 90% of 30 Mbit/s)",
            "one TCP needs 30 KB (8 ms); MPTCP up to 4x (150 KB), more the larger the RTT "
            "difference",
            f"single TCP {tcp:g} KB; MinRTT " + "; ".join(cells),
        )
    ]


# ---- stms-fig8 (host buffers, default scheduler) ------------------------------------------------

SEND_BUFFER = "transport.send_buffer"
HOST_BUFFERS = ["0.5MB", "1MB", "2MB", "4MB", "8MB"]


def stms_fig8_sweeps(ctx: Any) -> list[dict]:
    rtts = ["50ms", "300ms"] if ctx.quick else SLOW_RTTS
    buffers = HOST_BUFFERS[::2] if ctx.quick else HOST_BUFFERS
    out = []
    # (a) receive buffer with the send buffer at Linux's 6 MB; (b) the other way round (§2.3).
    for name, axis, fixed in (
        ("stms-fig8-recv", RECV_BUFFER, {"send_buffer": "6MB"}),
        ("stms-fig8-send", SEND_BUFFER, {"recv_buffer": "6MB"}),
    ):
        out.append(
            {
                "name": name,
                "scenario": {"path": _stms_paths(), "workload": _bulk(ctx), "transport": fixed},
                "schedulers": ["minrtt"],
                "reps": 1,
                "axes": {axis: buffers, LTE_RTT: rtts},
            }
        )
    return out


def stms_fig8_figures(df: Any, ctx: Any):
    plots = _plots()
    out = []
    for sweep, axis, label in (
        ("stms-fig8-recv", RECV_BUFFER, "a: receive buffer"),
        ("stms-fig8-send", SEND_BUFFER, "b: send buffer"),
    ):
        part = df[df["sweep"] == sweep]
        if len(part):
            out.append(
                (
                    f"{sweep}-buffer",
                    plots.metric_bars(
                        part,
                        "goodput_bps",
                        group=axis,
                        facet=LTE_RTT,
                        title=f"{STMS}, Fig. 8{label}: MinRTT throughput vs host buffer",
                    ),
                )
            )
    return out


def stms_fig8_claims(df: Any) -> list:
    from .presets import Claim

    out = []
    for sweep, axis, what in (
        ("stms-fig8-recv", RECV_BUFFER, "receive"),
        ("stms-fig8-send", SEND_BUFFER, "send"),
    ):
        part = df[df["sweep"] == sweep]
        cells = []
        for rtt in sorted(part[LTE_RTT].dropna().unique()):
            need = _needed(part, "minrtt", axis, "goodput_bps", 0.9 * 60e6, **{LTE_RTT: rtt})
            # Eq. 1: (B_f + B_s) x RTT_s.
            eq1 = 2 * 30e6 / 8 * rtt
            cells.append(f"RTT_s {rtt * 1e3:g} ms: {need / 1e6:g} MB (Eq. 1 {eq1 / 1e6:.2f} MB)")
        out.append(
            Claim(
                f"MinRTT {what} buffer for 90% of 60 Mbit/s",
                "the bigger the RTT difference, the more buffer is needed for full aggregation",
                "; ".join(cells),
            )
        )
    return out


# ---- stms-fig11 (fast-path burstiness) ----------------------------------------------------------


def stms_fig11_sweeps(ctx: Any) -> list[dict]:
    return [
        {
            "name": "stms-fig11",
            "scenario": {"path": _stms_paths(), "workload": _bulk(ctx)},
            "schedulers": ["minrtt", "ecf", "stms-c", "stms-a", "single:wifi"],
            "reps": 1,
            "axes": {LTE_RTT: ["50ms", "200ms"] if ctx.quick else SLOW_RTTS},
        }
    ]


def stms_fig11_figures(df: Any, ctx: Any):
    return [
        (
            "stms-fig11-burstiness",
            _plots().metric_bars(
                df,
                "burstiness_by_path.wifi",
                group=LTE_RTT,
                title=f"{STMS}, Fig. 11: fast-path burstiness (mean free cwnd at an ACK, segments)",
                stat="mean",
            ),
        )
    ]


def stms_fig11_claims(df: Any) -> list:
    from .presets import Claim

    col = "burstiness_by_path.wifi"
    cells = []
    for rtt in sorted(df[LTE_RTT].dropna().unique()):
        w = {LTE_RTT: rtt}
        cells.append(
            f"LTE {rtt * 1e3:g} ms: MinRTT {_cell(df, 'minrtt', col, **w):.1f}, ECF "
            f"{_cell(df, 'ecf', col, **w):.1f}, STMS-A {_cell(df, 'stms-a', col, **w):.1f}, "
            f"TCP {_cell(df, 'single:wifi', col, **w):.1f}"
        )
    return [
        Claim(
            "fast-path burstiness (segments)",
            "grows with the slow path's latency for Default and ECF; STMS close to single-path TCP",
            "; ".join(cells),
        )
    ]


# ---- stms-fig12 (gap after a delay change) ------------------------------------------------------

CHANGE_AT_S = 10.0


def _with_delay_change(scenario: dict[str, Any], path: int, rtt_s: float) -> dict[str, Any]:
    """The resolved scenario with one RTT step at CHANGE_AT_S (`sim.delay_changes`, a key of
    the resolved JSON only)."""
    from . import runner

    resolved = runner.resolve_scenario(scenario)
    resolved["sim"]["delay_changes"] = [{"path": path, "at_s": CHANGE_AT_S, "rtt_s": rtt_s}]
    return resolved


def gap_runs(duration: str = "16s") -> list[dict[str, Any]]:
    """STMS-A's gap over time around two changes (Fig. 12): (a) the fast path 20 -> 5 ms,
    (b) the slow path 200 -> 100 ms; with Eq. 2 evaluated at each sample on the smoothed RTTs
    the sender measures (one-way delays as half of them, §4; queueing included, which with the
    500 ms LTE buffer is most of OWD_s) and the fast path's payload rate, in segments. The
    paper's "calculated" curve is this value; its base-delay value is kept for reference."""
    import pandas as pd

    from . import _engine
    from .traces import to_json

    cases = [("a: WiFi 20 -> 5 ms", 0, 0.005), ("b: LTE 200 -> 100 ms", 1, 0.100)]
    b_f = 30e6 / 8 * MSS_MPTCP / SEGMENT_WIRE_BYTES  # payload bytes/s of the fast path
    out = []
    for label, path, new in cases:
        sc = {"path": _stms_paths("200ms"), "workload": {"kind": "bulk", "duration": duration}}
        resolved = _with_delay_change(sc, path, new)
        resolved["sim"]["sample_interval_s"] = 0.01
        # The engine's own columns: `traces.record` keeps cwnd/sRTT/OWD samples, not the gap.
        _, cols = _engine.core().run_traced(to_json(resolved), "stms-a", 1)
        samples = pd.DataFrame(
            {
                "time_s": cols["sample_time_s"],
                "path": cols["sample_path"],
                "gap_segs": cols["sample_gap_segs"],
                "srtt_s": cols["sample_srtt_s"],
            }
        )
        wide = samples.pivot_table(index="time_s", columns="path", values="srtt_s")
        gap = samples[samples["path"] == 0].set_index("time_s")["gap_segs"]
        # Fast is the lower sRTT at each instant; Eq. 2 with OWD = sRTT / 2.
        eq2 = _eq2_segments(b_f, wide.min(axis=1) / 2, wide.max(axis=1) / 2)
        frame = pd.DataFrame({"gap_segs": gap, "eq2_segs": eq2}).dropna().reset_index()
        rtts = [0.020, 0.200]
        base_before = _eq2_segments(b_f, rtts[0] / 2, rtts[1] / 2)
        rtts[path] = new
        adjust = (rtts[0] + rtts[1]) / 2  # Alg. 2's interval (RTT_s + RTT_f) / 2
        # As the engine's test (crates/sim/tests/stms.rs): means over 2 s from 5 intervals on.
        t0 = CHANGE_AT_S + 5 * adjust
        win = frame[(frame["time_s"] >= t0) & (frame["time_s"] <= t0 + 2.0)]
        out.append(
            {
                "label": label,
                "gap": frame,
                "eq2_base_before": base_before,
                "eq2_base_after": _eq2_segments(b_f, rtts[0] / 2, rtts[1] / 2),
                "adjust_s": adjust,
                "gap_after": float(win["gap_segs"].mean()) if len(win) else float("nan"),
                "eq2_after": float(win["eq2_segs"].mean()) if len(win) else float("nan"),
            }
        )
    return out


def _eq2_segments(b_f: float, owd_f: Any, owd_s: Any) -> Any:
    # Eq. 2: Gap = B_f x (OWD_s - OWD_f), bytes -> segments; scalars or series of OWDs.
    import numpy as np

    return np.maximum(0.0, b_f * (owd_s - owd_f)) / MSS_MPTCP


def stms_fig12_sweeps(ctx: Any) -> list[dict]:
    # The stored runs: STMS-A and MinRTT at each side of the change (the gap over time comes
    # from traced runs in the figure, the RTT step being a resolved-scenario key only).
    return [
        {
            "name": "stms-fig12",
            "scenario": {"path": _stms_paths(), "workload": _bulk(ctx, "16s", "16s")},
            "schedulers": ["stms-a", "stms-c"],
            "reps": 1,
            "axes": {"path.wifi.rtt": ["5ms", "20ms"], LTE_RTT: ["100ms", "200ms"]},
        }
    ]


_GAP: dict[str, Any] = {}


def stms_fig12_figures(df: Any, ctx: Any):
    import matplotlib.pyplot as plt

    runs = gap_runs()
    _GAP["runs"] = runs
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    fig.set_layout_engine("constrained")
    for ax, r in zip(axes, runs):
        g = r["gap"]
        ax.plot(g["time_s"], g["eq2_segs"], label="Eq. 2 on measured sRTTs", color="0.6", lw=0.8)
        ax.plot(g["time_s"], g["gap_segs"], label="STMS-A gap", color="tab:blue")
        ax.hlines(r["eq2_base_before"], 0, CHANGE_AT_S, colors="black", linestyles="--")
        ax.hlines(r["eq2_base_after"], CHANGE_AT_S, g["time_s"].max(), colors="black", ls="--")
        ax.axvline(CHANGE_AT_S, color="grey", alpha=0.5)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("gap (segments)")
        ax.set_title(f"{r['label']} (dashed: Eq. 2 on base delays)", fontsize="small")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.suptitle(f"{STMS}, Fig. 12: gap adjustment after a delay change (30+30 Mbit/s)")
    return [("stms-fig12-gap", fig)]


def stms_fig12_claims(df: Any) -> list:
    from .presets import Claim

    runs = _GAP.get("runs") or gap_runs()
    cells = [
        f"{r['label']}: {r['gap_after']:.0f} vs Eq. 2 {r['eq2_after']:.0f} segments "
        f"({100 * (r['gap_after'] / r['eq2_after'] - 1):+.0f}%)"
        for r in runs
    ]
    return [
        Claim(
            "STMS-A gap over 2 s from 5 adjust intervals after the change (Eq. 2 on the "
            "measured sRTTs)",
            "converges to the new value smoothly and fast (a peak after the fast path speeds up)",
            "; ".join(cells),
        )
    ]


# ---- stms-fig15 (dynamic networks) --------------------------------------------------------------

STMS_FIELD = ["minrtt", "ecf", "stms-c", "stms-a"]
LEVELS_BPS = [5e6, 10e6, 20e6, 30e6]


def _bandwidth_traces(ctx: Any, n: int) -> list[tuple[str, str]]:
    """n configurations: each path's rate drawn from {5, 10, 20, 30} Mbit/s every 10 s."""
    from . import _engine

    core = _engine.core()
    folder = (ctx.out / "traces").resolve()
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for cfg in range(1, n + 1):
        pair = []
        for i, path in enumerate(("wifi", "lte")):
            file = folder / f"stms-fig15-{path}-{cfg}.down"
            text = core.trace_gen(
                "steps", 60.0, rates_bps=LEVELS_BPS, step_s=10.0, seed=100 * cfg + i
            )
            if not file.exists() or file.read_text() != text:
                file.write_text(text)
            pair.append(str(file))
        out.append((pair[0], pair[1]))
    return out


def stms_fig15_sweeps(ctx: Any) -> list[dict]:
    n = 2 if ctx.quick else 5
    dur = "20s" if ctx.quick else "60s"
    sweeps = []
    for cfg, (wifi, lte) in enumerate(_bandwidth_traces(ctx, n), start=1):
        paths = _stms_paths("100ms")
        for p, trace in zip(paths, (wifi, lte)):
            p.pop("rate")
            p["trace"] = trace
        sweeps.append(
            {
                "name": f"stms-fig15-bw{cfg}",
                "scenario": {"path": paths, "workload": {"kind": "bulk", "duration": dur}},
                "schedulers": STMS_FIELD,
                "reps": 2 if ctx.quick else 5,
            }
        )
    return sweeps


def latency_runs(n: int = 5, reps: int = 2, duration_s: float = 60.0) -> Any:
    """Fig. 15b: both paths' RTT redrawn every 10 s, normal with a standard deviation of 40%
    of the mean (WiFi 20 ms, LTE 100 ms), floored at 2 ms; n configurations x reps seeds."""
    import json

    import numpy as np
    import pandas as pd

    from . import _engine, runner

    rows = []
    jobs, meta = [], []
    for cfg in range(1, n + 1):
        rng = np.random.default_rng(cfg)
        sc = {
            "path": _stms_paths("100ms"),
            "workload": {"kind": "bulk", "duration": f"{duration_s:g}s"},
        }
        resolved = runner.resolve_scenario(sc)
        changes = []
        for k in range(1, int(duration_s // 10)):
            for path, mean in ((0, 0.020), (1, 0.100)):
                rtt = max(0.002, float(rng.normal(mean, 0.4 * mean)))
                changes.append({"path": path, "at_s": 10.0 * k, "rtt_s": rtt})
        resolved["sim"]["delay_changes"] = changes
        for sched in STMS_FIELD:
            for seed in range(1, reps + 1):
                jobs.append((json.dumps(resolved), sched, seed))
                meta.append((cfg, sched, seed))
    for (cfg, sched, seed), text in zip(meta, _engine.core().run_many(jobs)):
        res = json.loads(text)
        rows.append(
            {"config": cfg, "scheduler": sched, "seed": seed, "goodput_bps": res.get("goodput_bps")}
        )
    return pd.DataFrame(rows)


_LAT: dict[str, Any] = {}


def _fig15_bw(df: Any) -> Any:
    d = df.copy()
    d["config"] = d["sweep"].str.extract(r"bw(\d+)$")[0].astype(int)
    return d


def stms_fig15_figures(df: Any, ctx: Any):
    plots = _plots()
    lat = latency_runs(2 if ctx.quick else 5, 1 if ctx.quick else 2, 20.0 if ctx.quick else 60.0)
    _LAT["df"] = lat
    return [
        (
            "stms-fig15a-bandwidth",
            plots.metric_bars(
                _fig15_bw(df),
                "goodput_bps",
                group="config",
                title=f"{STMS}, Fig. 15a: bandwidth of both paths from {{5, 10, 20, 30}} "
                "Mbit/s every 10 s",
                stat="mean",
            ),
        ),
        (
            "stms-fig15b-latency",
            plots.metric_bars(
                lat,
                "goodput_bps",
                group="config",
                title=f"{STMS}, Fig. 15b: both paths' latency redrawn every 10 s (sd 40%)",
                stat="mean",
            ),
        ),
    ]


def _best_per_config(df: Any) -> str:
    means = df.groupby(["config", "scheduler"])["goodput_bps"].mean().unstack()
    best = means.idxmax(axis=1)
    wins = best.value_counts()
    return ", ".join(f"{s} best in {k} of {len(best)}" for s, k in wins.items())


def stms_fig15_claims(df: Any) -> list:
    from .presets import Claim

    lat = _LAT.get("df")
    out = [
        Claim(
            "varying bandwidth: best scheduler per configuration (mean goodput)",
            "STMS-A best in every configuration, then STMS-C",
            _best_per_config(_fig15_bw(df)),
        )
    ]
    if lat is not None:
        out.append(
            Claim(
                "varying latency: best scheduler per configuration",
                "STMS-A always best",
                _best_per_config(lat),
            )
        )
    return out


# ---- rtsc-fig7 (LIA rate model vs simulation) ---------------------------------------------------

MSS_BYTES = 1420
# A packet on the wire: the payload plus the headers the engine's links carry (the saturated
# simulated payload rate is 1420/1500 of the line rate). The model counts packets, so its
# capacities and windows are in wire packets and its rates turn into payload at MSS_BYTES
# (the "overhead not taken into account in the analysis" of §VI-B).
WIRE_BYTES = 1500
T_P = 0.050  # §VI-B: T^p_0 = T^p_1 = 50 ms


def _lia_cycle(c: float, t_p: float, w_loss: float, alpha) -> tuple[float, float]:
    """Average rate and RTT over one loss cycle of a window growing by alpha(w) per RTT from
    W^Loss/2 to W^Loss, the RTT from Eq. 5 (Park et al. (R-TSC), Eq. 7, 17, 18); windows in
    packets, rates in packets per second."""
    steps = 100
    w0, w1 = 0.5 * w_loss, w_loss
    dw = (w1 - w0) / steps
    num = den = t_int = 0.0
    for k in range(steps):
        w = w0 + (k + 0.5) * dw
        t = max(t_p, w / c)
        a = min(max(alpha(w, w <= c * t_p), 1e-9), 1.0)
        dt = t / a * dw
        num += w / t * dt
        t_int += t * dt
        den += dt
    return num / den, t_int / den


def lia_model_rates(c: list[float], t_p: list[float], w_loss: list[float]) -> list[float]:
    """Park et al. (R-TSC), Eq. 11-18: average MPTCP-LIA subflow rates (packets/s), each
    subflow's cycle integrated with the others at their averages, iterated (damped) to a fixed
    point; the same procedure as crates/core/src/model/rtsc.rs `lia_rates`."""
    n = len(c)
    avg = [_lia_cycle(c[r], t_p[r], w_loss[r], lambda w, ph: 1.0) for r in range(n)]
    for _ in range(60):
        b = max(range(n), key=lambda i: avg[i][0] / avg[i][1])
        x_b, t_b = avg[b]
        nxt = []
        for r in range(n):
            others = sum(avg[i][0] for i in range(n) if i != r)

            def alpha(w, constant_rtt, r=r, others=others, b=b, x_b=x_b, t_b=t_b):
                # Eq. 15 (r != b) and Eq. 16 (r = b).
                own = w / t_p[r] if constant_rtt else c[r]
                denom = (own + others) ** 2
                return own * own / denom if r == b else w * (x_b / t_b) / denom

            nxt.append(_lia_cycle(c[r], t_p[r], w_loss[r], alpha))
        settled = all(abs(a[0] - p[0]) <= 1e-6 * max(p[0], 1e-9) for a, p in zip(nxt, avg))
        avg = [(0.5 * a[0] + 0.5 * p[0], 0.5 * a[1] + 0.5 * p[1]) for a, p in zip(avg, nxt)]
        if settled:
            break
    return [a[0] for a in avg]


def _w_loss_path(name: str, c_bps: float, w_loss_kb: float) -> dict[str, Any]:
    """A path whose window is lost at W^Loss whatever its BDP (§VI-B: "the maximum number of
    in-flight packets W^Loss"): the whole 50 ms round trip on the data direction and room for
    W^Loss packets in that link, queued or propagating. A drop-tail buffer behind a fixed delay
    gives only W^Loss = W^BDP + buffer, never the values below W^BDP the paper also takes."""
    packets = max(1, round(w_loss_kb * 1e3 / WIRE_BYTES))
    return {
        "name": name,
        "rate": f"{c_bps:g}bit",
        "rtt": "50ms",
        "owd": "50ms",
        "queue": f"pipe:{packets}pkt",
    }


def rtsc_fig7_cases(quick: bool) -> list[dict[str, Any]]:
    """(a) (c0, c1) = (20, 5) Mbit/s, W1^Loss 41 KB, W0^Loss varied; (b) W0^Loss 142 KB, W1^Loss
    varied from 10 KB (W1^BDP is 31 KB); (c) c0 = 40 Mbit/s, (W0, W1) = (273, 68) KB, c1
    varied from 10 to 40 Mbit/s."""
    w0s = [60, 100, 140, 200, 260, 320, 400] if not quick else [60, 140, 320]
    w1s = [10, 20, 30, 40, 55, 70, 85, 100] if not quick else [10, 40, 100]
    c1s = [10e6, 20e6, 30e6, 40e6] if not quick else [10e6, 40e6]
    cases = [{"panel": "a", "c": (20e6, 5e6), "w": (w, 41)} for w in w0s]
    cases += [{"panel": "b", "c": (20e6, 5e6), "w": (142, w)} for w in w1s]
    cases += [{"panel": "c", "c": (40e6, c1), "w": (273, 68)} for c1 in c1s]
    return cases


def rtsc_fig7_sweeps(ctx: Any) -> list[dict]:
    sweeps = []
    for case in rtsc_fig7_cases(ctx.quick):
        (c0, c1), (w0, w1) = case["c"], case["w"]
        paths = [_w_loss_path("lte", c0, w0), _w_loss_path("wifi", c1, w1)]
        sweeps.append(
            {
                "name": f"rtsc-fig7-{case['panel']}-{w0}-{w1}-{c0 / 1e6:g}-{c1 / 1e6:g}",
                "scenario": {
                    "path": paths,
                    "workload": {"kind": "bulk", "duration": "20s" if ctx.quick else "60s"},
                    "transport": {"cc": "lia", **BIG_HOST},
                },
                "schedulers": ["minrtt"],
                "reps": 1,
            }
        )
    return sweeps


def rtsc_fig7_table(df: Any) -> Any:
    """Simulated and Eq. 11-18 subflow rates (Mbit/s) per case."""
    import pandas as pd

    rows = []
    for sweep in dict.fromkeys(df["sweep"]):
        _, _, panel, w0, w1, c0, c1 = sweep.split("-")
        part = df[df["sweep"] == sweep]
        c = (float(c0) * 1e6, float(c1) * 1e6)
        pk = [x / 8 / WIRE_BYTES for x in c]
        w = [float(w0) * 1e3 / WIRE_BYTES, float(w1) * 1e3 / WIRE_BYTES]
        model = lia_model_rates(pk, [T_P, T_P], w)
        rows.append(
            {
                "panel": panel,
                "w0_kb": float(w0),
                "w1_kb": float(w1),
                "c1_mbps": float(c1),
                "sim_x0": float(part["throughput_by_path_bps.lte"].median()) / 1e6,
                "sim_x1": float(part["throughput_by_path_bps.wifi"].median()) / 1e6,
                "model_x0": model[0] * MSS_BYTES * 8 / 1e6,
                "model_x1": model[1] * MSS_BYTES * 8 / 1e6,
            }
        )
    return pd.DataFrame(rows)


def rtsc_fig7_figures(df: Any, ctx: Any):
    import matplotlib.pyplot as plt

    t = rtsc_fig7_table(df)
    panels = (
        ("a", "w0_kb", "W0^Loss (KB)", "(a) (c0, c1) = (20, 5) Mbit/s, W1^Loss 41 KB"),
        ("b", "w1_kb", "W1^Loss (KB)", "(b) (c0, c1) = (20, 5) Mbit/s, W0^Loss 142 KB"),
        ("c", "c1_mbps", "c1 (Mbit/s)", "(c) c0 = 40 Mbit/s, W^Loss (273, 68) KB"),
    )
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    fig.set_layout_engine("constrained")
    for ax, (panel, xcol, xlabel, title) in zip(axes, panels):
        part = t[t["panel"] == panel].sort_values(xcol)
        for k, colour in ((0, "tab:blue"), (1, "tab:orange")):
            ax.plot(part[xcol], part[f"model_x{k}"], "-", color=colour, label=f"x{k} Eq. 11-18")
            ax.plot(part[xcol], part[f"sim_x{k}"], "o", color=colour, label=f"x{k} simulated")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("rate (Mbit/s)")
        ax.set_title(f"{title}, T^p 50 ms", fontsize="small")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.suptitle(f"{RTSC}, Fig. 7: MPTCP-LIA subflow rates, model vs simulation")
    return [("rtsc-fig7-rates", fig)]


def rtsc_fig7_claims(df: Any) -> list:
    from .presets import Claim

    t = rtsc_fig7_table(df)
    err = []
    for k in (0, 1):
        e = (t[f"sim_x{k}"] / t[f"model_x{k}"] - 1).abs()
        err.append(f"x{k} {100 * e.median():.0f}% median, {100 * e.max():.0f}% worst")
    return [
        Claim(
            "simulated LIA rates vs Eq. 11-18",
            "well matched; x0 grows linearly to W0^BDP and saturates c0 from 2 W0^BDP",
            "; ".join(err),
        )
    ]


# ---- rtsc-fig8 (windows and delay over time) ----------------------------------------------------

RTSC_FIG8 = ["rr", "rr+rtsc", "minrtt"]


def _rtsc_lia_scenario(duration: str = "20s") -> dict[str, Any]:
    sc = _rtsc_scenario()
    sc["transport"] = {"cc": "lia"}
    sc["workload"] = {"kind": "stream", "rate": F_RATE, "duration": duration}
    return sc


def rtsc_fig8_sweeps(ctx: Any) -> list[dict]:
    return [
        {
            "name": "rtsc-fig8",
            "scenario": _rtsc_lia_scenario("10s" if ctx.quick else "20s"),
            "schedulers": RTSC_FIG8,
            "reps": 1,
        }
    ]


def rtsc_fig8_figures(df: Any, ctx: Any):
    import matplotlib.pyplot as plt

    from . import runner

    sc = _rtsc_lia_scenario("10s" if ctx.quick else "20s")
    fig, axes = plt.subplots(len(RTSC_FIG8), 1, figsize=(8, 2.4 * len(RTSC_FIG8)), sharex=True)
    fig.set_layout_engine("constrained")
    names = {
        "rr": "(a) RR, default receiver",
        "rr+rtsc": "(b) RR, R-TSC",
        "minrtt": "(c) LRF (MinRTT), default receiver",
    }
    for ax, sched in zip(axes, RTSC_FIG8):
        tr = runner.run_traced(sc, sched, seed=1, sample_interval_s=0.05)
        for i, name in enumerate(tr.path_names):
            part = tr.samples[tr.samples["path_name"] == name]
            ax.plot(
                part["time_s"],
                part["cwnd_bytes"] / 1e3,
                color=_plots().path_colour(i),
                label=f"cwnd {name}",
            )
        ax.set_ylabel("cwnd (KB)")
        ax.set_title(names[sched], fontsize="small")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(f"{RTSC}, Fig. 8: MPTCP-LIA windows, (c0, c1) = (40, 12) Mbit/s, f = 35.85")
    return [("rtsc-fig8-windows", fig)]


def rtsc_fig8_claims(df: Any) -> list:
    from .presets import Claim

    cells = [
        f"{s}: p95 {_cell(df, s, 'app_delay_p95_s'):.3f} s, goodput "
        f"{_cell(df, s, 'goodput_bps') / 1e6:.1f} Mbit/s"
        for s in RTSC_FIG8
    ]
    return [
        Claim(
            "application delay, MPTCP-LIA, (c0, c1) = (40, 12) Mbit/s",
            "default receiver: the small-rate subflow queues, poor delay; R-TSC keeps both "
            "windows in check and the delay low; LRF: large send-buffer delay (up to 4 s) "
            "in the first ~10 s",
            "; ".join(cells),
        )
    ]


def presets() -> dict:
    from .presets import Preset

    return {
        "rtsc-fig9": Preset(
            "rtsc-fig9",
            "Figure 9",
            "cumulative distribution of application-level delays with and without R-TSC "
            "(c0 = 40 Mbit/s, c1 6-35 Mbit/s, f = 35.85 Mbit/s, T^p 30/15 ms)",
            rtsc_fig9_sweeps,
            rtsc_fig9_figures,
            rtsc_fig9_claims,
            (
                "the sender runs Reno per subflow, where the paper runs MPTCP-LIA (the simulator "
                "has it as `lia`; rtsc-fig8 uses it): the R-TSC checks were validated with Reno",
                "CBR stream of 1448-byte packets; buffers from Table II (7 MB LTE, 700 KB WiFi)",
            ),
            paper=RTSC,
        ),
        "stms-fig10": Preset(
            "stms-fig10",
            "Figure 10",
            "out-of-order latency of the schedulers, varying slow-path latency",
            stms_fig10_sweeps,
            stms_fig10_figures,
            stms_fig10_claims,
            ("Default is minrtt with PR (opportunistic retransmission and penalization)",),
            paper=STMS,
        ),
        "stms-fig13": Preset(
            "stms-fig13",
            "Figure 13b",
            "throughput of the schedulers varying the receive buffer",
            stms_fig13_sweeps,
            stms_fig13_figures,
            stms_fig13_claims,
            ("slow path RTT 200 ms (§2.1 varies it; Fig. 13 does not say)", "CUBIC"),
            paper=STMS,
        ),
        **_more_presets(),
    }


def _more_presets() -> dict:
    from .presets import Preset

    entries = [
        (
            "stms-fig3",
            "Figure 3",
            "MPTCP throughput degradation when in-network buffer is limited",
            stms_fig3_sweeps,
            stms_fig3_figures,
            stms_fig3_claims,
            STMS,
            (
                "fast-path buffers from Table 1 (30-150 KB) and 300 KB; host buffers 64 MB so that "
                "only the in-network buffer limits",
                "CUBIC; slow path 20, 100, 200 ms",
            ),
        ),
        (
            "stms-fig8",
            "Figure 8",
            "MPTCP throughput degradation when host buffer is limited "
            "((a) receive, (b) send buffer)",
            stms_fig8_sweeps,
            stms_fig8_figures,
            stms_fig8_claims,
            STMS,
            ("the other buffer at Linux's 6 MB (§2.3)",),
        ),
        (
            "stms-fig11",
            "Figure 11",
            "burstiness of all four schedulers under different path latencies",
            stms_fig11_sweeps,
            stms_fig11_figures,
            stms_fig11_claims,
            STMS,
            ("single-path TCP over the fast path as the reference",),
        ),
        (
            "stms-fig12",
            "Figure 12",
            "gap adjustment is reactive to network change",
            stms_fig12_sweeps,
            stms_fig12_figures,
            stms_fig12_claims,
            STMS,
            (
                "the RTT steps at 10 s; slow path 200 ms before (a)",
                "Eq. 2 on the measured sRTTs (queueing in the 500 ms LTE buffer included); with "
                "both paths at 30 Mbit/s slow and fast segments interleave densely, so each "
                "data-ACK jumps by about 4 segments and Algorithm 2 moves the gap by about 4 per "
                "interval however far off it is",
            ),
        ),
        (
            "stms-fig15",
            "Figure 15",
            "throughput under dynamic network conditions ((a) bandwidth, (b) latency)",
            stms_fig15_sweeps,
            stms_fig15_figures,
            stms_fig15_claims,
            STMS,
            (
                "60 s runs; LTE mean RTT 100 ms, WiFi 20 ms; (b) is run outside the results "
                "database (the RTT steps are a resolved-scenario key only)",
            ),
        ),
        (
            "rtsc-fig7",
            "Figure 7",
            "comparison of simulation and numerical results: subflow transmission rates",
            rtsc_fig7_sweeps,
            rtsc_fig7_figures,
            rtsc_fig7_claims,
            RTSC,
            (
                "panels (a) and (b); (c) needs W^Loss below W^BDP, which no buffer can set",
                "rates of new data per path; MSS 1420 B as the model's packet",
            ),
        ),
        (
            "rtsc-fig8",
            "Figure 8",
            "MPTCP-LIA with a conventional receiver and with R-TSC: "
            "windows and delay, (c0, c1) = (40, 12) Mbit/s, f = 35.85 Mbit/s",
            rtsc_fig8_sweeps,
            rtsc_fig8_figures,
            rtsc_fig8_claims,
            RTSC,
            ("LIA; buffers from Table II (7 MB LTE, 700 KB WiFi)",),
        ),
    ]
    return {
        name: Preset(name, fig, caption, sw, figs, claims, assumptions, paper=paper)
        for name, fig, caption, sw, figs, claims, paper, assumptions in entries
    }
