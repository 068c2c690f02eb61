"""`mpsched report RESULTS -o report.html`: one self-contained HTML page.

RESULTS is a results database (from `mpsched sweep` or `mpsched reproduce`) or a per-packet
trace (`run --trace FILE.parquet`). The page has the scenario, a summary table and the figures,
every figure inline as SVG (dense scatter layers rasterized inside it), no scripts, no external
files: it can be mailed or attached as is.

For a database, the sequence diagrams, window/delay plots and out-of-order delay CDF come from
re-running one transfer per scheduler with tracing (the first axis combination and seed of the
sweep): the engine is deterministic, so the traced run is the stored run, provided the engine
version matches (otherwise those figures are left out, and the page says so).
"""

from __future__ import annotations

import datetime
import html
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import _engine, plots, traces
from .errors import ScenarioError
from .stats import quantile

__all__ = ["build_report"]

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; font-size: .9em; }
th, td { border-bottom: 1px solid #e4e4e4; padding: .25em .7em; text-align: right; }
th { background: #f6f6f6; } td:first-child, th:first-child { text-align: left; }
pre { background: #f6f6f6; padding: .8em; overflow-x: auto; font-size: .85em; }
figure { margin: 1em 0 2em; } figure svg { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: .9em; } .note { color: #666; font-size: .9em; }
"""


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _num(value: Any, kind: str = "") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if kind == "time":
        return f"{value * 1e3:.1f} ms" if abs(value) < 1 else f"{value:.3f} s"
    if kind == "bytes":
        return f"{value / 1024:.1f} KiB"
    if kind == "rate":
        return f"{value / 1e6:.2f} Mbit/s"
    if kind == "ratio":
        return f"{value:.2f}x"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure(fig: Any, caption: str) -> str:
    return f"<figure>{plots.to_svg(fig)}<figcaption>{_esc(caption)}</figcaption></figure>"


def _page(title: str, sections: Sequence[str], subtitle: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_esc(title)}</h1><p class='note'>{subtitle}</p>"
        + "".join(sections)
        + "</body></html>\n"
    )


# ---- summary -----------------------------------------------------------------------------------

_SUMMARY = (
    ("download p50", "download_time_s", 0.5, "time"),
    ("download p90", "download_time_s", 0.9, "time"),
    ("gap p50", "completion_gap_s", 0.5, "time"),
    ("reinjected p50", "reinjected_bytes", 0.5, "bytes"),
    ("goodput p50", "goodput_bps", 0.5, "rate"),
    ("OOO delay p50", "ooo_delay_p50_s", 0.5, "time"),
)


def _median(values: Any) -> float | None:
    values = [float(v) for v in values if v == v]
    return quantile(values, 0.5) if values else None


def _ratio(ours: float | None, base: float | None) -> str:
    if ours is None or base is None or not math.isfinite(base) or base <= 0:
        return "-"
    return "failed" if math.isinf(ours) else _num(ours / base, "ratio")


def _summary_rows(df: Any, baseline: str | None) -> list[list[str]]:
    base = None
    if baseline and "download_time_s" in df:
        base = _median(df[df["scheduler"] == baseline]["download_time_s"])
    rows = []
    for name in dict.fromkeys(df["scheduler"]):
        part = df[df["scheduler"] == name]
        failed = int(part["failed"].sum()) if "failed" in part else 0
        row = [_esc(name), str(len(part) - failed), str(failed)]
        for _, metric, q, kind in _SUMMARY:
            # Failed runs are in the frame as +inf (times) or 0 (goodput): never dropped.
            values = [float(v) for v in part[metric] if v == v] if metric in part else []
            row.append(_num_or_failed(quantile(values, q), kind) if values else "-")
        if base:
            row.append(_ratio(_median(part["download_time_s"]), base))
        rows.append(row)
    return rows


def _num_or_failed(value: float, kind: str) -> str:
    return "failed" if value == math.inf else _num(value, kind)


def _summary(df: Any, baseline: str | None) -> str:
    header = ["scheduler", "completed", "failed", *(h for h, *_ in _SUMMARY)]
    has_base = baseline and baseline in set(df["scheduler"])
    if has_base:
        header.append(f"vs {baseline}")
    note = (
        "<p class='note'>Every run counts: a failed run (workload not delivered: time limit, "
        'stall) is +inf in the time percentiles and 0 in goodput; "failed" in a cell means '
        "that percentile is a failed run.</p>"
    )
    reasons = _failure_reasons(df)
    return _table(header, _summary_rows(df, baseline if has_base else None)) + note + reasons


def _failure_reasons(df: Any) -> str:
    if "failure" not in df or not df["failed"].any():
        return ""
    counts = df[df["failed"]].groupby(["scheduler", "failure"], sort=False).size()
    rows = [[_esc(s), _esc(why), str(n)] for (s, why), n in counts.items()]
    return "<h4>Failed runs</h4>" + _table(["scheduler", "reason", "runs"], rows)


def _by_axes(df: Any, axes: Sequence[str], baseline: str | None) -> str:
    if not axes or "download_time_s" not in df:
        return ""
    groups = df.groupby(list(axes), dropna=False, sort=True)
    if groups.ngroups > 200:
        return "<p class='note'>(per-axis table left out: more than 200 combinations)</p>"
    names = list(dict.fromkeys(df["scheduler"]))
    header = [*axes, *(f"{n} p50" for n in names)]
    rows = []
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        row = [_esc(plots.format_axis_value(a, v)) for a, v in zip(axes, key)]
        for n in names:
            m = _median(part[part["scheduler"] == n]["download_time_s"])
            row.append(_num_or_failed(m, "time") if m is not None else "-")
        rows.append(row)
    return (
        "<details><summary>median download time per axis combination</summary>"
        + _table(header, rows)
        + "</details>"
    )


def _scenario_block(plan: Mapping[str, Any]) -> str:
    parts = []
    if plan.get("text"):
        parts.append(f"<p>Sweep file <code>{_esc(plan.get('source'))}</code>:</p>")
        parts.append(f"<pre>{_esc(plan['text'])}</pre>")
    else:
        axes = plan.get("axes", {})
        parts.append(
            _table(
                ["", ""],
                [
                    ["schedulers", _esc(", ".join(plan.get("schedulers", [])))],
                    ["seeds", _esc(_seeds(plan.get("seeds", [])))],
                    *[
                        [f"axis <code>{_esc(k)}</code>", _esc(", ".join(map(_label, v)))]
                        for k, v in axes.items()
                    ],
                ],
            )
        )
    parts.append(
        "<details><summary>resolved base scenario (SI units)</summary>"
        f"<pre>{_esc(json.dumps(plan.get('base'), indent=2))}</pre></details>"
    )
    return "".join(parts)


def _label(value: Any) -> str:
    return os.path.basename(value) if isinstance(value, str) and os.sep in value else str(value)


def _seeds(seeds: Sequence[int]) -> str:
    if len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}..{seeds[-1]} ({len(seeds)} seeds)"
    return ", ".join(map(str, seeds))


# ---- figures -------------------------------------------------------------------------------------


def _numeric_axes(df: Any, axes: Sequence[str]) -> list[str]:
    import pandas as pd

    return [
        a
        for a in axes
        if a in df and pd.api.types.is_numeric_dtype(df[a]) and df[a].nunique(dropna=True) > 1
    ]


def _result_figures(df: Any, axes: Sequence[str], baseline: str | None) -> list[str]:
    out = []
    varied = [a for a in axes if a in df and df[a].nunique(dropna=True) > 1]
    numeric = _numeric_axes(df, axes)
    group = numeric[0] if numeric else (varied[0] if varied else None)
    if "download_time_s" in df and df["download_time_s"].notna().any():
        out.append(_figure(plots.download_cdf(df), "Download time CDF per scheduler."))
        out.append(
            _figure(
                plots.download_box(df, group=group),
                "Download time per scheduler"
                + (
                    f", grouped by {group}." if group else " (boxes: quartiles; whiskers: 1.5 IQR)."
                ),
            )
        )
    if "completion_gap_s" in df and df["completion_gap_s"].notna().any():
        out.append(
            _figure(
                plots.completion_gap(df, group=group),
                "Spread of the subflows' last arrivals at the receiver.",
            )
        )
    if "reinjected_bytes" in df and (df["reinjected_bytes"].fillna(0) > 0).any():
        out.append(
            _figure(
                plots.metric_bars(df, "reinjected_bytes", group=group, stat="mean"),
                "Mean reinjected data per scheduler.",
            )
        )
    names = list(dict.fromkeys(df["scheduler"]))
    if baseline in names and len(numeric) >= 2:
        x, y = numeric[0], numeric[1]
        facet = numeric[2] if len(numeric) > 2 and df[numeric[2]].nunique() <= 4 else None
        for name in [n for n in names if n != baseline][:3]:
            out.append(
                _figure(
                    plots.reduction_heatmap(df, x, y, name, baseline, facet=facet),
                    f"Median download time reduction of {name} against {baseline} (%), "
                    f"over {x} and {y}"
                    + (f", one panel per {facet}" if facet else "")
                    + (" (other axes pooled)." if len(numeric) > (3 if facet else 2) else "."),
                )
            )
    return out


def _trace_figures(trs: Sequence[traces.Trace]) -> list[str]:
    out = []
    with_events = [t for t in trs if len(t.events)]
    for t in with_events:
        out.append(
            _figure(
                plots.sequence_diagram(t),
                f"{t.label}: data sequence numbers over time; left, what the sender transmits "
                "on each subflow (reinjections x, retransmissions o); right, what arrives, and "
                "the data delivered in order to the application (black).",
            )
        )
    for t in with_events[:2]:
        out.append(
            _figure(
                plots.cwnd_owd(t),
                f"{t.label}: congestion window (or bytes in flight) and one-way delay per path.",
            )
        )
    if with_events:
        out.append(
            _figure(
                plots.ooo_delay_cdf(with_events),
                "Out-of-order delay: arrival at the receiver to in-order delivery, per packet.",
            )
        )
    return out


def _traced_runs(store: Any, plan: Mapping[str, Any]) -> tuple[list, str]:
    """Re-run one transfer per scheduler with tracing: the sweep's first axis combination and
    first seed, schedulers in the sweep's order (at most four; the oracle runs no packets)."""
    version = _engine.core().version()
    known = {n for n, _ in _engine.schedulers()}
    first_axes = {k: v[0] for k, v in plan.get("axes", {}).items()}
    seeds = plan.get("seeds") or [None]
    wanted = [n for n in plan.get("schedulers", []) if n != "oracle"][:4]
    rows = {
        row["scheduler"]: row
        for row in store.rows(plan.get("name"))
        if row["axes"] == first_axes
        and row["seed"] == seeds[0]
        and row["engine_version"] == version
        and row["scheduler"] in wanted
        and row["scheduler"].split(":", 1)[0] in known
    }
    out = []
    for name in wanted:
        if name not in rows:
            continue
        try:
            out.append(traces.record(rows[name]["result"]["scenario"], name, seeds[0]))
        except ScenarioError:
            continue  # e.g. a trace file that has moved since
    if not out:
        return [], (
            "<p class='note'>No traced re-run: no stored run of this engine version "
            f"({_esc(version)}) at the first axis values and seed.</p>"
            if wanted
            else ""
        )
    where = ", ".join(f"{k} = {_label(v)}" for k, v in first_axes.items())
    note = f"<p class='note'>Seed {seeds[0]}" + (f", {_esc(where)}" if where else "") + ".</p>"
    return out, note


# ---- entry point ---------------------------------------------------------------------------------


def build_report(
    results: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    sweep: str | None = None,
    baseline: str = "minrtt",
    trace_runs: bool = True,
) -> Path:
    """Write the report for a results database or a trace file; returns the output path."""
    source = os.fspath(results)
    if not os.path.exists(source):
        raise ScenarioError(f"{source}: no such file")
    target = Path(out)
    _check_output(target)
    if os.path.exists(target) and os.path.samefile(source, target):
        raise ScenarioError(f"-o {target}: is the input file")
    if source.endswith(".parquet"):
        page = _trace_page(source)
    else:
        page = _db_page(source, sweep, baseline, trace_runs)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"-o {target}: cannot write: {exc.strerror or exc}") from None
    plots.close_all()
    return target


def _check_output(target: Path) -> None:
    """Refuse an output that cannot be written before the work, not after it."""
    if target.is_dir():
        raise ScenarioError(f"-o {target}: is a directory")
    parent = target.parent.absolute()
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise ScenarioError(f"-o {target}: cannot write in {parent}")
    if target.exists() and not os.access(target, os.W_OK):
        raise ScenarioError(f"-o {target}: not writable")


def _subtitle(source: str) -> str:
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    version = _engine.core().version()
    return f"from <code>{_esc(source)}</code>, {stamp}, engine {_esc(version)}"


def _trace_page(source: str) -> str:
    t = traces.read(source)
    r = t.result
    metrics = [
        [_esc(k), _esc(_num(v) if not isinstance(v, (dict, list)) else json.dumps(v))]
        for k, v in r.items()
        if k not in ("scenario", "chunk_times_s", "completion_gaps_s")
    ]
    sections = [
        f"<h2>Scenario</h2><pre>{_esc(json.dumps(r.get('scenario'), indent=2))}</pre>",
        "<h2>Summary</h2>" + _table(["metric", "value"], metrics),
        "<h2>Figures</h2>" + "".join(_trace_figures([t])),
    ]
    return _page(f"mpsched trace: {t.label}", sections, _subtitle(source))


def _db_page(source: str, sweep: str | None, baseline: str, trace_runs: bool) -> str:
    from .store import open_store

    store = open_store(source, must_exist=True, readonly=True)
    try:
        sweeps = store.sweeps()
        if sweep is not None and sweep not in {s["name"] for s in sweeps}:
            known = ", ".join(s["name"] for s in sweeps) or "none"
            raise ScenarioError(f'{source}: no sweep named "{sweep}" (sweeps: {known})')
        chosen = [s for s in sweeps if sweep is None or s["name"] == sweep]
        if not chosen:
            raise ScenarioError(f"{source}: no sweeps stored")
        sections = []
        for s in chosen:
            plan = dict(s["plan"], name=s["name"])
            df = store.frame(s["name"])
            axes = list(plan.get("axes", {}))
            body = [f"<h2>Sweep {_esc(s['name'])}</h2>"]
            body.append(
                f"<p>{len(df)} runs stored of {plan.get('runs', '?')} planned; engine "
                f"{_esc(plan.get('engine_version', '?'))}.</p>"
            )
            body.append("<h3>Scenario</h3>" + _scenario_block(plan))
            if df.empty:
                sections.append("".join(body))
                continue
            body.append("<h3>Summary</h3>" + _summary(df, baseline) + _by_axes(df, axes, baseline))
            body.append("<h3>Figures</h3>" + "".join(_result_figures(df, axes, baseline)))
            if trace_runs:
                trs, note = _traced_runs(store, plan)
                if trs or note:
                    body.append("<h3>One transfer per scheduler</h3>" + note)
                    body.append("".join(_trace_figures(trs)))
            sections.append("".join(body))
            plots.close_all()
    finally:
        store.close()
    title = "mpsched report: " + ", ".join(s["name"] for s in chosen)
    return _page(title, sections, _subtitle(source))
