"""Figures from sweep results (DataFrames from `mpsched.load`) and from per-packet traces.

Every function returns a matplotlib Figure (Agg backend: no display needed); `save` writes it
as PNG and SVG. From results:

- `download_cdf`: CDF of download time per scheduler;
- `download_box`: box plot of download time per scheduler (grouped by an axis if asked);
- `completion_gap`: box plot of the completion gap per scheduler (Guo et al., MobiCom 2017,
  Figs. 2, 12);
- `reduction_heatmap`: reduction of a metric's median against a baseline scheduler over two
  axes, one panel per value of an optional third (Guo et al., MobiCom 2017 Fig. 13);
- `metric_bars`: a metric's median per scheduler and axis value (Guo et al., MobiCom 2017,
  Figs. 10, 11, 18);
- `reduction_bars`: median reduction of each scheduler against a baseline per axis value.

From a trace (`mpsched.traces`):

- `sequence_diagram`: DSN vs time of one transfer, sender view (transmissions) and receiver view
  (arrivals, and the in-order delivery line) side by side, one colour per subflow,
  reinjections and retransmissions marked (Guo et al., MobiCom 2017 Figs. 4, 7, 8; the DEMS demo's
  "visualization of multipath scheduling");
- `cwnd_owd`: congestion window (engine samples; without them, bytes in flight from the
  events) and one-way delay per packet over time, per path;
- `ooo_delay_cdf`: CDF of arrival-to-in-order-delivery delay, one curve per trace.
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402 - after choosing the backend
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from . import units  # noqa: E402
from .traces import Trace, in_flight, one_way_delays, ooo_delays  # noqa: E402

__all__ = [
    "completion_gap",
    "cwnd_owd",
    "download_box",
    "download_cdf",
    "format_axis_value",
    "metric_bars",
    "ooo_delay_cdf",
    "reduction_bars",
    "reduction_heatmap",
    "save",
    "sequence_diagram",
    "to_png_base64",
    "to_svg",
]

# Fixed colours for the schedulers the papers compare, so a scheduler looks the same in every
# figure of a report; others take the next free colour.
_SCHEDULER_COLOURS = {
    "minrtt": "#1f77b4",
    "dems-f": "#d62728",
    "dems-s": "#ff7f0e",
    "dems-b": "#9467bd",
    "oracle": "#2ca02c",
    "rr": "#8c564b",
    "redundant": "#e377c2",
    "single": "#7f7f7f",
}
_SPARE = ["#17becf", "#bcbd22", "#393b79", "#637939", "#8c6d31", "#843c39"]
_PATH_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"]

_METRIC_LABELS = {
    "download_time_s": "download time (s)",
    "completion_gap_s": "completion gap (s)",
    "reinjected_bytes": "reinjected data (KiB)",
    "goodput_bps": "goodput (Mbit/s)",
}


def scheduler_colour(name: str, order: Sequence[str] = ()) -> str:
    if name in _SCHEDULER_COLOURS:
        return _SCHEDULER_COLOURS[name]
    spare = [n for n in order if n not in _SCHEDULER_COLOURS]
    i = spare.index(name) if name in spare else abs(hash(name))
    return _SPARE[i % len(_SPARE)]


def path_colour(index: int) -> str:
    return _PATH_COLOURS[index % len(_PATH_COLOURS)]


def format_axis_value(key: str, value: Any) -> str:
    """An axis value (SI, as stored) for a label: 7500000.0 -> "7.5Mbit"."""
    last = key.rsplit(".", 1)[-1]
    try:
        if last in ("rate", "reverse_rate"):
            return units.format_rate(float(value))
        if last in ("size", "send_buffer", "recv_buffer", "mss"):
            return units.format_size(int(value))
        if last in ("rtt", "owd", "think", "duration", "min_rto", "max_time", "clock_offset"):
            return units.format_time(float(value))
        if last == "trace" and isinstance(value, str):
            return os.path.basename(value)
    except (ValueError, TypeError):
        pass
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _metric_label(metric: str) -> str:
    return _METRIC_LABELS.get(metric, metric)


def _metric_scale(metric: str) -> float:
    if metric.endswith("_bytes"):
        return 1 / 1024
    if metric.endswith("_bps"):
        return 1e-6
    return 1.0


def _schedulers(df: Any) -> list[str]:
    return list(dict.fromkeys(df["scheduler"]))


def _values(df: Any, metric: str) -> Any:
    return df[metric].dropna().astype(float).to_numpy() * _metric_scale(metric)


def _empty(ax: Any, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="0.4")


# ---- from results ------------------------------------------------------------------------------


def download_cdf(df: Any, metric: str = "download_time_s", title: str | None = None) -> Figure:
    """Empirical CDF of `metric` per scheduler (all runs of each scheduler pooled)."""
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    order = _schedulers(df)
    for name in order:
        v = np.sort(_values(df[df["scheduler"] == name], metric))
        if len(v) == 0:
            continue
        y = np.arange(1, len(v) + 1) / len(v)
        ax.step(v, y, where="post", label=f"{name} (n={len(v)})", color=scheduler_colour(name))
    ax.set_xlabel(_metric_label(metric))
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    if ax.lines:
        ax.legend(fontsize="small")
    else:
        _empty(ax, f"no {metric} values")
    ax.set_title(title or f"{_metric_label(metric)}: CDF per scheduler")
    return fig


def _box(df: Any, metric: str, group: str | None, title: str, ylabel: str | None = None) -> Figure:
    order = _schedulers(df)
    groups = sorted(df[group].dropna().unique()) if group else [None]
    fig, ax = plt.subplots(figsize=(max(5.5, 1.1 * len(order) * len(groups) + 1.5), 4))
    fig.set_layout_engine("constrained")
    width = 0.8 / len(order)
    any_data = False
    for gi, gval in enumerate(groups):
        part = df if group is None else df[df[group] == gval]
        for si, name in enumerate(order):
            v = _values(part[part["scheduler"] == name], metric)
            if len(v) == 0:
                continue
            any_data = True
            pos = gi + (si - (len(order) - 1) / 2) * width
            box = ax.boxplot(
                v, positions=[pos], widths=width * 0.85, patch_artist=True, showfliers=True
            )
            colour = scheduler_colour(name, order)
            for patch in box["boxes"]:
                patch.set_facecolor(colour)
                patch.set_alpha(0.55)
            for line in box["medians"]:
                line.set_color("black")
    if group is None:
        ax.set_xticks([(si - (len(order) - 1) / 2) * width for si in range(len(order))])
        ax.set_xticklabels(order)
    else:
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([format_axis_value(group, g) for g in groups])
        ax.set_xlabel(group)
        handles = [
            matplotlib.patches.Patch(color=scheduler_colour(n, order), alpha=0.55, label=n)
            for n in order
        ]
        ax.legend(handles=handles, fontsize="small")
    ax.set_ylabel(ylabel or _metric_label(metric))
    ax.grid(axis="y", alpha=0.3)
    if not any_data:
        _empty(ax, f"no {metric} values")
    ax.set_title(title)
    return fig


def download_box(
    df: Any, metric: str = "download_time_s", group: str | None = None, title: str | None = None
) -> Figure:
    """Box plot of `metric` per scheduler; with `group` (an axis column), one cluster of boxes
    per value of that axis."""
    return _box(df, metric, group, title or f"{_metric_label(metric)} per scheduler")


def completion_gap(df: Any, group: str | None = None, title: str | None = None) -> Figure:
    """Completion gap (spread of the subflows' last arrivals at the receiver) per scheduler."""
    return _box(
        df,
        "completion_gap_s",
        group,
        title or "subflow completion gap at the receiver",
        ylabel="completion gap (s)",
    )


def reduction_table(
    df: Any,
    x: str,
    y: str,
    scheduler: str,
    baseline: str,
    metric: str = "download_time_s",
) -> Any:
    """Percent reduction of the median `metric` of `scheduler` against `baseline` per (y, x)
    cell: 100 * (baseline - scheduler) / baseline. A DataFrame indexed by y, columns x."""
    import pandas as pd

    med = df.groupby(["scheduler", y, x], dropna=False)[metric].median()
    if scheduler not in med.index.get_level_values(0) or baseline not in (
        med.index.get_level_values(0)
    ):
        return pd.DataFrame()
    ours = med.loc[scheduler]
    base = med.loc[baseline]
    table = (100.0 * (base - ours) / base).unstack(x)
    return table.sort_index().sort_index(axis=1)


def reduction_heatmap(
    df: Any,
    x: str,
    y: str,
    scheduler: str,
    baseline: str = "minrtt",
    metric: str = "download_time_s",
    facet: str | None = None,
    title: str | None = None,
    fmt: str = "{:.0f}",
) -> Figure:
    """Heat map of the median `metric` reduction (%) of `scheduler` against `baseline` over
    axes `x` and `y`; one panel per value of `facet` (Guo et al., MobiCom 2017, Fig. 13: WiFi x
    LTE bandwidth, one panel per file size). `fmt` formats the number written in each cell."""
    facets = sorted(df[facet].dropna().unique()) if facet else [None]
    fig, axes = plt.subplots(1, len(facets), figsize=(4.6 * len(facets) + 0.8, 4.2), squeeze=False)
    fig.set_layout_engine("constrained")
    image = None
    tables = []
    for fval in facets:
        part = df if facet is None else df[df[facet] == fval]
        tables.append(reduction_table(part, x, y, scheduler, baseline, metric))
    finite = [t.to_numpy(dtype=float) for t in tables if not t.empty]
    finite = [v[np.isfinite(v)] for v in finite]
    span = max([float(np.max(np.abs(v))) for v in finite if v.size] + [1.0])
    for ax, fval, table in zip(axes[0], facets, tables):
        if table.empty:
            _empty(ax, f"needs runs of {scheduler} and {baseline}")
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        values = table.to_numpy(dtype=float)
        image = ax.imshow(
            values, origin="lower", cmap="RdYlGn", vmin=-span, vmax=span, aspect="auto"
        )
        ax.set_xticks(range(len(table.columns)))
        ax.set_xticklabels([format_axis_value(x, v) for v in table.columns], rotation=45)
        ax.set_yticks(range(len(table.index)))
        ax.set_yticklabels([format_axis_value(y, v) for v in table.index])
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        for (i, j), v in np.ndenumerate(values):
            if np.isfinite(v):
                ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=8)
        if facet is not None:
            ax.set_title(f"{facet} = {format_axis_value(facet, fval)}")
    if image is not None:
        fig.colorbar(image, ax=axes[0].tolist(), label=f"reduction vs {baseline} (%)")
    fig.suptitle(title or f"{scheduler} vs {baseline}: median {metric} reduction (%)")
    return fig


def metric_bars(
    df: Any,
    metric: str,
    group: str | None = None,
    facet: str | None = None,
    title: str | None = None,
    stat: str = "median",
) -> Figure:
    """Bars of a metric's median (or mean) per scheduler, clustered by `group`, one panel per
    `facet` value."""
    order = _schedulers(df)
    facets = sorted(df[facet].dropna().unique()) if facet else [None]
    fig, axes = plt.subplots(1, len(facets), figsize=(5 * len(facets) + 0.5, 3.8), squeeze=False)
    fig.set_layout_engine("constrained")
    for ax, fval in zip(axes[0], facets):
        part = df if facet is None else df[df[facet] == fval]
        groups = sorted(part[group].dropna().unique()) if group else [None]
        width = 0.8 / len(order)
        for si, name in enumerate(order):
            heights = []
            for gval in groups:
                cell = part[part["scheduler"] == name]
                if group is not None:
                    cell = cell[cell[group] == gval]
                v = _values(cell, metric)
                heights.append(getattr(np, stat)(v) if len(v) else np.nan)
            pos = np.arange(len(groups)) + (si - (len(order) - 1) / 2) * width
            ax.bar(pos, heights, width * 0.9, label=name, color=scheduler_colour(name, order))
        _grouped_bar_axes(ax, groups, group, facet, fval, f"{stat} {_metric_label(metric)}")
    axes[0][0].legend(fontsize="small")
    fig.suptitle(title or f"{stat} {_metric_label(metric)}")
    return fig


def reduction_bars(
    df: Any,
    baseline: str = "minrtt",
    metric: str = "download_time_s",
    group: str | None = None,
    facet: str | None = None,
    title: str | None = None,
) -> Figure:
    """Bars of the median `metric` reduction (%) of every other scheduler against `baseline`,
    per value of `group`, one panel per value of `facet` (Guo et al., MobiCom 2017, Fig. 10's
    comparison)."""
    order = [n for n in _schedulers(df) if n != baseline]
    facets = sorted(df[facet].dropna().unique()) if facet else [None]
    fig, axes = plt.subplots(1, len(facets), figsize=(5 * len(facets) + 0.5, 3.8), squeeze=False)
    fig.set_layout_engine("constrained")
    for ax, fval in zip(axes[0], facets):
        part = df if facet is None else df[df[facet] == fval]
        groups = sorted(part[group].dropna().unique()) if group else [None]
        width = 0.8 / max(len(order), 1)
        for si, name in enumerate(order):
            heights = []
            for gval in groups:
                cell = part if group is None else part[part[group] == gval]
                base = cell[cell["scheduler"] == baseline][metric].dropna().median()
                ours = cell[cell["scheduler"] == name][metric].dropna().median()
                heights.append(100.0 * (base - ours) / base if base else np.nan)
            pos = np.arange(len(groups)) + (si - (len(order) - 1) / 2) * width
            ax.bar(pos, heights, width * 0.9, label=name, color=scheduler_colour(name, order))
        ax.axhline(0, color="0.3", linewidth=0.8)
        _grouped_bar_axes(ax, groups, group, facet, fval, f"median reduction vs {baseline} (%)")
    if order:
        axes[0][0].legend(fontsize="small")
    fig.suptitle(title or f"{metric}: reduction against {baseline}")
    return fig


# ---- from traces -------------------------------------------------------------------------------


def _dsn_unit(events: Any) -> tuple[float, str]:
    top = float(events["dsn"].max()) if len(events) else 0.0
    return (2**20, "MiB") if top >= 4 * 2**20 else (2**10, "KiB")


def sequence_diagram(trace: Trace, title: str | None = None) -> Figure:
    """DSN vs time, sender view (transmissions, by subflow) and receiver view (arrivals by
    subflow, and the data delivered in order to the app) side by side."""
    ev = trace.events
    names = trace.path_names
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True, sharex=True)
    fig.set_layout_engine("constrained")
    scale, unit = _dsn_unit(ev)
    sender = ev[ev["side"] == "sender"]
    receiver = ev[ev["side"] == "receiver"]
    for i, name in enumerate(names):
        colour = path_colour(i)
        sent = sender[(sender["path"] == i) & (sender["kind"] == "send")]
        left.scatter(
            sent["time_s"],
            sent["dsn"].astype(float) / scale,
            s=5,
            color=colour,
            label=f"{name}",
            rasterized=True,
            linewidths=0,
        )
        arrived = receiver[(receiver["path"] == i) & (receiver["kind"] == "arrive")]
        right.scatter(
            arrived["time_s"],
            arrived["dsn"].astype(float) / scale,
            s=5,
            color=colour,
            label=f"{name} arrival",
            rasterized=True,
            linewidths=0,
        )
    for kind, marker, label in (("reinject", "x", "reinjection"), ("retransmit", "o", "retrans.")):
        marked = sender[sender["kind"] == kind]
        if len(marked):
            colours = [path_colour(int(p)) for p in marked["path"]]
            style = (
                {"c": colours} if marker == "x" else {"facecolors": "none", "edgecolors": colours}
            )
            left.scatter(
                marked["time_s"],
                marked["dsn"].astype(float) / scale,
                s=22,
                marker=marker,
                linewidths=1.0,
                label=label,
                rasterized=True,
                **style,
            )
    delivered = receiver[receiver["kind"] == "deliver"].sort_values("time_s")
    if len(delivered):
        end = (delivered["dsn"].astype(float) + delivered["len"].astype(float)) / scale
        right.step(
            np.concatenate([[0.0], delivered["time_s"].to_numpy()]),
            np.concatenate([[0.0], np.maximum.accumulate(end.to_numpy())]),
            where="post",
            color="black",
            linewidth=1.2,
            label="delivered in order",
        )
    left.set_title("sender: transmissions")
    right.set_title("receiver: arrivals and in-order delivery")
    for ax in (left, right):
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3)
        if ax.collections or ax.lines:
            ax.legend(fontsize="small", markerscale=2, loc="upper left")
    left.set_ylabel(f"data sequence number ({unit})")
    if ev.empty:
        _empty(left, "no events recorded (the oracle runs no packets)")
    r = trace.result
    fig.suptitle(
        title or f"{r.get('scheduler')} (seed {r.get('seed')}): sequence numbers over time"
    )
    return fig


def _step_kib_per_path(ax, frame, column: str, names: Sequence[str]) -> None:
    """One step line per path of `frame[column]` (bytes, shown in KiB) over `time_s`."""
    for i, name in enumerate(names):
        f = frame[frame["path"] == i]
        ax.step(
            f["time_s"],
            f[column].astype(float) / 1024,
            where="post",
            color=path_colour(i),
            label=name,
        )


def cwnd_owd(trace: Trace, title: str | None = None) -> Figure:
    """Per path over time: the congestion window (engine samples) or, without samples, the
    bytes in flight on the forward path (from the events); and the one-way delay of every
    packet (send to arrival), with the engine's OWD estimate when sampled."""
    names = trace.path_names
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    fig.set_layout_engine("constrained")
    samples = trace.samples
    has_samples = samples is not None and len(samples) > 0
    if has_samples:
        _step_kib_per_path(top, samples, "cwnd_bytes", names)
        top.set_ylabel("cwnd (KiB)")
    else:
        _step_kib_per_path(top, in_flight(trace.events), "bytes", names)
        top.set_ylabel("in flight (KiB)")
        top.set_title("bytes in flight per path (from events; no cwnd samples)", fontsize="small")
    owd = one_way_delays(trace.events)
    for i, name in enumerate(names):
        o = owd[owd["path"] == i]
        bottom.scatter(
            o["send_s"],
            o["owd_s"] * 1e3,
            s=4,
            color=path_colour(i),
            label=f"{name} (per packet)",
            rasterized=True,
            linewidths=0,
        )
        if has_samples and "owd_s" in samples:
            s = samples[samples["path"] == i]
            bottom.plot(
                s["time_s"],
                s["owd_s"] * 1e3,
                color=path_colour(i),
                linewidth=1,
                label=f"{name} (estimate)",
            )
    bottom.set_ylabel("one-way delay (ms)")
    bottom.set_xlabel("time (s)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        if ax.lines or ax.collections:
            ax.legend(fontsize="small")
        else:
            _empty(ax, "no packets recorded")
    fig.suptitle(title or f"{trace.label}: congestion window and one-way delay")
    return fig


def ooo_delay_cdf(traces: Trace | Iterable[Trace], title: str | None = None) -> Figure:
    """CDF of the out-of-order delay (arrival to in-order delivery, per DSN), one curve per
    trace (Shi et al., USENIX ATC 2018 §5.1.1)."""
    if isinstance(traces, Trace):
        traces = [traces]
    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    for trace in traces:
        d = np.sort(ooo_delays(trace.events)["delay_s"].to_numpy(float)) * 1e3
        if len(d) == 0:
            continue
        y = np.arange(1, len(d) + 1) / len(d)
        name = str(trace.result.get("scheduler"))
        ax.step(d, y, where="post", label=trace.label, color=scheduler_colour(name))
    ax.set_xlabel("out-of-order delay: arrival to in-order delivery (ms)")
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    if ax.lines:
        ax.legend(fontsize="small")
    else:
        _empty(ax, "no packets recorded")
    ax.set_title(title or "out-of-order delay")
    return fig


# ---- output ------------------------------------------------------------------------------------


def save(fig: Figure, stem: str | os.PathLike[str], formats: Sequence[str] = ("png", "svg")):
    """Write `fig` as STEM.png and STEM.svg (or the given formats); returns the paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        fig.savefig(path, format=fmt, dpi=120)
        out.append(path)
    plt.close(fig)
    return out


def to_svg(fig: Figure, close: bool = True) -> str:
    """The figure as an inline <svg> element (no XML prolog)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    if close:
        plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def to_png_base64(fig: Figure, close: bool = True, dpi: int = 110) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    if close:
        plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def close_all() -> None:
    plt.close("all")


def _grouped_bar_axes(
    ax: Any, groups: Sequence[Any], group: Any, facet: Any, fval: Any, ylabel: str
) -> None:
    """Ticks, labels, grid and facet title shared by the grouped bar charts."""
    ax.set_xticks(range(len(groups)))
    if group is not None:
        ax.set_xticklabels([format_axis_value(group, g) for g in groups], rotation=30)
        ax.set_xlabel(group)
    else:
        ax.set_xticklabels([""])
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    if facet is not None:
        ax.set_title(f"{facet} = {format_axis_value(facet, fval)}", fontsize="medium")
