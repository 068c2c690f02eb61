"""Run scenarios on the engine: one run, or a comparison of schedulers over many seeds.

Results are the engine's JSON objects (DESIGN.md "Metrics"), parsed to dicts and otherwise
untouched; the only numbers computed here are the medians and p90s of a comparison.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Union

from . import _engine
from .errors import ScenarioError
from .scenario import load_scenario, resolve, to_json

__all__ = [
    "CHUNK_SCHEDULERS",
    "compare",
    "default_schedulers",
    "run",
    "run_traced",
    "summarize",
]

# What `compare` runs by default: the schedulers whose subject is one chunk's download time,
# in the order the table shows them; oracle last, as the yardstick.
CHUNK_SCHEDULERS = ("minrtt", "rr", "redundant", "single", "dems-b", "dems-s", "dems-f", "oracle")

# Keys of a result that describe the run rather than measure it.
_NOT_METRICS = ("scheduler", "seed", "scenario")

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
    return json.loads(_engine.call(core.run, text, scheduler, seed))


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


def default_schedulers() -> list[str]:
    """The chunk schedulers of CHUNK_SCHEDULERS that this engine build provides."""
    known = {name for name, _ in _engine.schedulers()}
    names = [name for name in CHUNK_SCHEDULERS if name in known]
    if not names:
        raise ScenarioError(
            f"the engine provides none of the chunk schedulers ({', '.join(CHUNK_SCHEDULERS)})"
        )
    return names


def compare(
    scenario: ScenarioArg = None,
    schedulers: Sequence[str] | None = None,
    set: Overrides = None,  # named after the CLI's --set
    reps: int = 10,
    seed: int = 1,
    threads: int = 0,
) -> dict:
    """Run every scheduler on seeds seed..seed+reps-1 (in parallel, in the engine).

    Returns {"runs": [result, ...], "summary": {scheduler: {metric: {"median", "p90"}}}}."""
    resolved = resolve_scenario(scenario, set)
    seed = _check_seed(seed)
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise ScenarioError(f"reps must be at least 1, got {reps!r}")
    _check_seed(seed + reps - 1)
    core = _engine.core()
    names = list(dict.fromkeys(schedulers)) if schedulers else default_schedulers()
    _engine.check_schedulers(names)
    text = to_json(resolved)
    # Validate up front: run_many reports failures per job, which would bury a bad trace file
    # under one error per run.
    for name in names:
        _engine.call(core.validate, text, name)
    jobs = [(text, name, s) for name in names for s in range(seed, seed + reps)]
    outputs = _engine.call(core.run_many, jobs, threads)
    runs = [json.loads(out) for out in outputs]
    for (_, name, s), result in zip(jobs, runs):
        if "error" in result:
            raise ScenarioError(f"{name}, seed {s}: {result['error']}")
    by_scheduler: dict[str, list[dict]] = {name: [] for name in names}
    for (_, name, _), result in zip(jobs, runs):
        by_scheduler[name].append(result)
    return {"runs": runs, "summary": summarize(by_scheduler)}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def summarize(runs_by_scheduler: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict:
    """Median and p90 of every numeric metric, per scheduler.

    Scalar metrics give {"median": x, "p90": y}; per-path metrics (dicts keyed by path name)
    give {"median": {path: x}, "p90": {path: y}}. Lists (chunk_times_s) are left out: their
    summary is the scalar they add up to. A run lacking a metric is left out of that metric.
    """
    import numpy as np  # deferred: numpy costs more import time than the CLI's --help

    def stats(values: list[float]) -> tuple[float, float]:
        array = np.asarray(values, dtype=float)
        return float(np.median(array)), float(np.percentile(array, 90))

    summary: dict[str, dict[str, Any]] = {}
    for name, runs in runs_by_scheduler.items():
        keys = dict.fromkeys(k for r in runs for k in r if k not in _NOT_METRICS)
        metrics: dict[str, Any] = {}
        for key in keys:
            values = [r[key] for r in runs if key in r]
            if values and all(_is_number(v) for v in values):
                median, p90 = stats(values)
                metrics[key] = {"median": median, "p90": p90}
            elif values and all(isinstance(v, Mapping) for v in values):
                paths = dict.fromkeys(p for v in values for p in v)
                per_path = {
                    p: stats([v[p] for v in values if _is_number(v.get(p))])
                    for p in paths
                    if any(_is_number(v.get(p)) for v in values)
                }
                if per_path:
                    metrics[key] = {
                        "median": {p: s[0] for p, s in per_path.items()},
                        "p90": {p: s[1] for p, s in per_path.items()},
                    }
        summary[name] = metrics
    return summary
