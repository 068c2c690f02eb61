"""Presets for in-order delivery and low delay: STMS (Shi et al., USENIX ATC 2018) and R-TSC
(Park et al., "Minimizing Application-Level Delay of Multi-Path TCP in Wireless Networks: A
Receiver-Centric Approach"). Registered in `presets.PRESETS`.

Scenarios are TOML-shaped dicts (what a scenario file would hold); schedulers by CLI name,
`NAME+rtsc` for a run with the R-TSC receiver policy.
"""

from __future__ import annotations

from typing import Any

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
            "schedulers": ["minrtt", "stms-c", "stms-a"],
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
                "the sender runs Reno per subflow: MPTCP-LIA is not in the simulator yet",
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
            ("ECF is not in the engine yet; Default is minrtt with PR",),
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
    }
