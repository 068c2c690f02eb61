"""Run scenarios on the engine: one run, or a comparison of schedulers over many seeds.

Results are the engine's JSON objects (docs/scenarios.md, "Metrics"), parsed to dicts and
otherwise untouched; the numbers computed here are the comparison's percentiles and confidence
intervals (mpsched.stats), with failed runs counted, never dropped.

Both calls are interruptible: Ctrl-C stops the engine within a second; `compare` then raises
`mpsched.errors.Interrupted` carrying the comparison of the runs done so far and how to resume.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Callable, Union

from . import _engine, stats
from .errors import Interrupted, ScenarioError
from .scenario import load_scenario, resolve, to_json

__all__ = [
    "CHUNK_SCHEDULERS",
    "MAX_REPS",
    "compare",
    "deterministic",
    "default_schedulers",
    "run",
    "run_traced",
    "summarize",
]

# What `compare` runs by default: the schedulers whose subject is one chunk's download time,
# in the order the table shows them; oracle last, as the yardstick.
CHUNK_SCHEDULERS = ("minrtt", "rr", "redundant", "single", "dems-b", "dems-s", "dems-f", "oracle")

# A bound on --reps: each run keeps 8 bytes per metric for exact percentiles (stats.Accumulator),
# so 100,000 seeds x 8 schedulers stay within about 200 MB even if left running for hours.
MAX_REPS = 100_000
# Up to this many runs, `compare` also returns every result object (`runs`); beyond, only the
# summary (each object holds the whole scenario: a few KiB).
MAX_KEPT_RUNS = 10_000

ScenarioArg = Union[None, str, "os.PathLike[str]", Mapping[str, Any]]
Overrides = Union[Mapping[str, Any], Iterable[str], None]


def resolve_scenario(scenario: ScenarioArg = None, overrides: Overrides = None) -> dict:
    """None (the built-in default), a TOML file, a TOML-shaped dict or a resolved dict."""
    if scenario is None or isinstance(scenario, (str, os.PathLike)):
        return load_scenario(scenario, overrides)
    if isinstance(scenario, Mapping):
        if "paths" in scenario:
            # Already resolved (e.g. from load_scenario): the core validates it.
            if overrides:
                raise ScenarioError(
                    "set= applies to scenario files and TOML-shaped dicts, not to a resolved "
                    "scenario (pass the overrides to load_scenario)"
                )
            return dict(scenario)
        return resolve(scenario, overrides, source="scenario dict")
    raise TypeError(f"scenario must be None, a path or a dict, not {type(scenario).__name__}")


def _check_seed(seed: Any) -> int:
    # Seeds are u64 in the engine.
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ScenarioError(f"seed must be a whole number from 0 to 2^64-1, got {seed!r}")
    return seed


def run(
    scenario: ScenarioArg = None,
    scheduler: str = "minrtt",
    seed: int = 1,
    set: Overrides = None,  # named after the CLI's --set
) -> dict:
    """Simulate one run; returns the result object of DESIGN.md ("Metrics") as a dict."""
    resolved = resolve_scenario(scenario, set)
    seed = _check_seed(seed)
    core = _engine.core()
    _engine.check_schedulers([scheduler])
    text = to_json(resolved)
    _engine.call(core.validate, text, scheduler)
    return json.loads(_engine.interruptible(core.run, text, scheduler, seed))


def run_traced(
    scenario: ScenarioArg = None,
    scheduler: str = "minrtt",
    seed: int = 1,
    set: Overrides = None,  # named after the CLI's --set
    sample_interval_s: float | None = 0.01,
):
    """Simulate one run recording per-packet events and, every `sample_interval_s`, each
    path's cwnd, sRTT and OWD estimate; returns a `mpsched.traces.Trace` (`.result`,
    `.events`, `.samples`; `mpsched.traces.write` saves it as Parquet)."""
    from . import traces

    resolved = resolve_scenario(scenario, set)
    return traces.record(resolved, scheduler, _check_seed(seed), sample_interval_s)


def default_schedulers(scenario: Mapping[str, Any] | None = None) -> list[str]:
    """The chunk schedulers of CHUNK_SCHEDULERS that this engine build provides; for a bulk
    workload without `oracle`, which needs a chunk to compute its bound."""
    known = {name for name, _ in _engine.schedulers()}
    names = [name for name in CHUNK_SCHEDULERS if name in known]
    if scenario is not None and scenario.get("workload", {}).get("kind") == "bulk":
        names = [name for name in names if name != "oracle"]
    if not names:
        raise ScenarioError(
            f"the engine provides none of the chunk schedulers ({', '.join(CHUNK_SCHEDULERS)})"
        )
    return names


def deterministic(scenario: Mapping[str, Any]) -> bool:
    """No random loss and no trace: every seed gives the same run."""
    links = [link for p in scenario["paths"] for link in (p["forward"], p["reverse"])]
    return not any(link.get("loss") or link.get("trace") for link in links)


def _check_reps(reps: Any) -> int:
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise ScenarioError(f"reps must be at least 1, got {reps!r}")
    if reps > MAX_REPS:
        raise ScenarioError(
            f"reps {reps:,} is more than {MAX_REPS:,} seeds per scheduler; for more, split the "
            "seeds over several runs (--seed) or use a sweep with a results database"
        )
    return reps


def compare(
    scenario: ScenarioArg = None,
    schedulers: Sequence[str] | None = None,
    set: Overrides = None,  # named after the CLI's --set
    reps: int = 10,
    seed: int = 1,
    threads: int = 0,
    ci: bool = False,
    keep_runs: bool | None = None,
    progress: bool = False,
    on_result: Callable[[dict], None] | None = None,
) -> dict:
    """Run every scheduler on seeds seed..seed+reps-1, `threads` runs at a time (default: one
    per core), aggregating results as they arrive (memory does not hold the result objects).

    Returns {"runs": [result, ...], "summary": {scheduler: {metric: {"median", "p90"}, ...,
    "runs": {"total", "completed", "failed", "failures", "distinct"}}}, "paired": {...}}.
    Failed runs count as +inf in time percentiles and 0 in goodput (mpsched.stats). `ci`: add
    95% bootstrap intervals of the median and mean, and paired ratios to the first scheduler.
    `runs` is left out (None) above MAX_KEPT_RUNS runs unless keep_runs=True.
    Ctrl-C raises mpsched.errors.Interrupted with the partial comparison in `.partial`."""
    resolved = resolve_scenario(scenario, set)
    seed = _check_seed(seed)
    reps = _check_reps(reps)
    _check_seed(seed + reps - 1)
    core = _engine.core()
    names = list(dict.fromkeys(schedulers)) if schedulers else default_schedulers(resolved)
    _engine.check_schedulers(names)
    text = to_json(resolved)
    # Validate up front: a bad trace file is one error, not one per run.
    for name in names:
        _engine.call(core.validate, text, name)
    total = reps * len(names)
    keep = keep_runs if keep_runs is not None else total <= MAX_KEPT_RUNS
    accs = {name: stats.Accumulator() for name in names}
    kept: list[dict] | None = [] if keep else None
    done_per_seed: dict[int, int] = {}
    # Seeds outer, schedulers inner: an interrupted comparison has every scheduler on about
    # the same seeds.
    jobs = ((name, s) for s in range(seed, seed + reps) for name in names)

    def report() -> dict:
        summary = {name: acc.summary(ci) for name, acc in accs.items()}
        if kept is not None:
            # Arrival order is the pool's; the caller gets scheduler by scheduler, seed order.
            order = {name: i for i, name in enumerate(names)}
            kept.sort(key=lambda r: (order.get(r.get("scheduler"), 0), r.get("seed", 0)))
        out: dict[str, Any] = {"runs": kept, "summary": summary}
        if ci:
            out["paired"] = _paired(accs)
        return out

    from .sweep import _Progress, bounded_map

    def one(job: tuple[str, int]) -> str:
        try:
            return core.run(text, job[0], job[1])
        except ValueError as exc:
            raise ScenarioError(f"{job[0]}, seed {job[1]}: {exc}") from None

    bar = _Progress("compare", total, 0, enabled=progress, delay=1.0)
    try:
        with bar:
            for (name, s), out in bounded_map(one, jobs, threads):
                result = json.loads(out)
                accs[name].add(result)
                done_per_seed[s] = done_per_seed.get(s, 0) + 1
                if kept is not None:
                    kept.append(result)
                if on_result is not None:
                    on_result(result)
                bar.advance()
    except KeyboardInterrupt:
        finished = next(
            (s for s in range(seed, seed + reps) if done_per_seed.get(s, 0) < len(names)),
            seed + reps,
        )
        if finished > seed:
            hint = (
                f"seeds {seed}..{finished - 1} done for every scheduler; to go on, run again "
                f"with --seed {finished} --reps {seed + reps - finished}"
            )
        else:
            hint = f"no seed finished for every scheduler; run again with --seed {seed}"
        raise Interrupted(hint, report()) from None
    return report()


def _paired(accs: Mapping[str, stats.Accumulator]) -> dict[str, Any]:
    """Per-seed download-time ratios of every scheduler to the first one, where they share
    seeds and the seeds give different runs."""
    names = list(accs)
    if not names:
        return {}
    base = accs[names[0]].by_seed("download_time_s")
    out: dict[str, Any] = {}
    for name in names[1:]:
        ratio = stats.paired_ratio(accs[name].by_seed("download_time_s"), base)
        if ratio is not None:
            out[name] = {"baseline": names[0], "metric": "download_time_s", **ratio}
    return out


def summarize(runs_by_scheduler: Mapping[str, Sequence[Mapping[str, Any]]], ci: bool = False):
    """Median and p90 of every numeric metric, per scheduler, and each scheduler's run counts
    ("runs": total, completed, failed, failures by reason, distinct outcomes).

    Scalar metrics give {"median": x, "p90": y}; per-path metrics (dicts keyed by path name)
    give {"median": {path: x}, "p90": {path: y}}. Lists (chunk_times_s) are left out: their
    summary is the scalar they add up to. Failed runs count as +inf in time metrics and 0 in
    goodput (mpsched.stats); a run lacking any other metric is left out of that metric.
    """
    return stats.summarize(runs_by_scheduler, ci)
