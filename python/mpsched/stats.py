"""Statistics over runs, with failed runs accounted for (docs/scenarios.md, "Failed runs").

A run *fails* when it does not deliver its workload: the time limit came first, it stalled (no
byte delivered in order for 240 s with a chunk outstanding, or nothing left to happen), or it
was interrupted. Failed runs are never dropped from a summary; in every percentile and mean:

- time metrics where lower is better (`download_time_s`, `completion_gap_s`, ...) count a
  failed run as +infinity: a median is +inf once half the runs failed;
- `goodput_bps` counts a failed run as 0;
- every other metric (bytes sent, events, ...) takes the failed run's value as measured up to
  where it stopped.

So a scheduler that fails in hard cases cannot look better than one that finishes slowly.

Confidence intervals are percentile bootstraps (numpy, fixed seed: the same runs give the same
interval) of the median and of the mean; a paired comparison of two schedulers that ran the same
seeds resamples the per-seed ratios.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "FAIL_AS_INFINITE",
    "FAIL_AS_ZERO",
    "Accumulator",
    "bootstrap_ci",
    "failure",
    "paired_ratio",
    "quantile",
]

# Lower-is-better times that a failed run never reached.
FAIL_AS_INFINITE = (
    "download_time_s",
    "completion_gap_s",
    "page_load_time_s",
    "app_delay_p50_s",
    "app_delay_p95_s",
)
FAIL_AS_ZERO = ("goodput_bps",)

# Keys of a result that describe the run rather than measure it.
NOT_METRICS = ("scheduler", "seed", "scenario", "engine_version", "failed", "failure", "truncated")

# Distinct outcomes are counted up to this many per scheduler (a set of hashes, kept small).
DISTINCT_CAP = 1000
# What a run cost rather than what it found: left out when telling outcomes apart (the oracle's
# search is cached across seeds of a seed-independent scenario, so only its first run pays).
COST_KEYS = ("events", "oracle_runs")

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20170101


def failure(result: Mapping[str, Any]) -> str | None:
    """Why a run failed, or None when it delivered its workload.

    Results from engines before the `failed` key: a truncated run, or a chunk workload without
    a download time, failed."""
    if "failed" in result:
        if not result["failed"]:
            return None
        return str(result.get("failure") or "failed")
    if result.get("truncated"):
        return "truncated (time limit or stall)"
    if "download_time_s" in result and result["download_time_s"] is None:
        return "workload not delivered"
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def accounted(key: str, value: Any, failed: bool) -> Any:
    """A metric's value as statistics count it (see the module docstring)."""
    if failed and key in FAIL_AS_INFINITE:
        return math.inf
    if failed and key in FAIL_AS_ZERO:
        return 0.0
    return value


def quantile(values: Sequence[float], q: float, *, presorted: bool = False) -> float:
    """The q-quantile (linear interpolation, as numpy's default) where +inf is a value like any
    other: an interpolation towards +inf is +inf, never NaN."""
    import numpy as np

    a = np.asarray(values, dtype=float)
    if not presorted:
        a = np.sort(a)
    if a.size == 0:
        return math.nan
    pos = q * (a.size - 1)
    lo, hi = int(math.floor(pos)), int(math.ceil(pos))
    if math.isinf(a[hi]) or math.isinf(a[lo]):
        return float(a[hi]) if pos > lo or math.isinf(a[lo]) else float(a[lo])
    return float(a[lo] + (a[hi] - a[lo]) * (pos - lo))


def _resample_stat(a: Any, stat: str, resamples: int, seed: int) -> Any:
    import numpy as np

    rng = np.random.default_rng(seed)
    out = np.empty(resamples)
    # In batches so that 1000 resamples of 100,000 runs stay within tens of megabytes.
    batch = max(1, min(resamples, 2_000_000 // max(a.size, 1)))
    done = 0
    while done < resamples:
        n = min(batch, resamples - done)
        sample = a[rng.integers(0, a.size, size=(n, a.size))]
        if stat == "median":
            sample.sort(axis=1)
            mid = (a.size - 1) / 2
            lo, hi = sample[:, int(math.floor(mid))], sample[:, int(math.ceil(mid))]
            with np.errstate(invalid="ignore"):
                m = np.where(np.isinf(hi), hi, lo + (hi - lo) / 2)
            out[done : done + n] = m
        else:
            out[done : done + n] = sample.mean(axis=1)
        done += n
    return out


def bootstrap_ci(
    values: Sequence[float],
    stat: str = "median",
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the median or the mean of `values`."""
    import numpy as np

    if stat not in ("median", "mean"):
        raise ValueError(f"stat must be median or mean, not {stat!r}")
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return (math.nan, math.nan)
    boot = np.sort(_resample_stat(a, stat, resamples, seed))
    alpha = (1 - level) / 2
    return quantile(boot, alpha), quantile(boot, 1 - alpha)


def paired_ratio(
    ours: Mapping[int, float],
    base: Mapping[int, float],
    level: float = 0.95,
) -> dict[str, Any] | None:
    """Median of the per-seed ratios ours/base over the seeds both ran, with a bootstrap CI.

    None when they share fewer than two seeds. A failed run (+inf) on one side gives a +inf or
    0 ratio, so failures weigh in the comparison; both failed gives no ratio for that seed."""
    seeds = sorted(set(ours) & set(base))
    ratios = []
    for s in seeds:
        a, b = ours[s], base[s]
        if math.isinf(a) and math.isinf(b):
            continue
        if b == 0:
            continue
        ratios.append(math.inf if math.isinf(a) else a / b)
    if len(ratios) < 2:
        return None
    lo, hi = bootstrap_ci(ratios, "median", level)
    return {"pairs": len(ratios), "median": quantile(ratios, 0.5), "ci": [lo, hi]}


class Accumulator:
    """Per-scheduler online aggregate of a comparison: counts, failure reasons, distinct
    outcomes, and one float per run for each numeric metric (8 bytes per metric per run: what
    exact percentiles need; the result objects themselves are not kept)."""

    def __init__(self) -> None:
        self.total = 0
        self.failures: Counter[str] = Counter()
        self.seeds = array("Q")
        self.scalars: dict[str, array] = {}
        self.per_path: dict[str, dict[str, array]] = {}
        self._distinct: set[int] = set()

    def add(self, result: Mapping[str, Any]) -> None:
        why = failure(result)
        failed = why is not None
        if failed:
            self.failures[why] += 1
        index = self.total
        self.total += 1
        seed = result.get("seed")
        self.seeds.append(int(seed) if _is_number(seed) else 0)
        outcome = []
        for key, value in result.items():
            if key in NOT_METRICS or key in ("wall_time_s",):
                continue
            value = accounted(key, value, failed)
            if _is_number(value):
                self._put(self.scalars, key, index, float(value))
                if key not in COST_KEYS:
                    outcome.append((key, value))
            elif isinstance(value, Mapping):
                paths = self.per_path.setdefault(key, {})
                for path, v in value.items():
                    if _is_number(v):
                        self._put(paths, str(path), index, float(v))
                        outcome.append((f"{key}.{path}", v))
        if len(self._distinct) <= DISTINCT_CAP:
            self._distinct.add(hash(tuple(outcome)))

    @staticmethod
    def _put(table: dict[str, array], key: str, index: int, value: float) -> None:
        column = table.get(key)
        if column is None:
            # A metric first seen late: earlier runs lacked it (NaN, left out of its stats).
            column = table[key] = array("d", [math.nan] * index)
        while len(column) < index:
            column.append(math.nan)
        column.append(value)

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    @property
    def distinct(self) -> int | None:
        """Distinct outcomes among the runs (None: more than DISTINCT_CAP)."""
        return len(self._distinct) if len(self._distinct) <= DISTINCT_CAP else None

    def values(self, key: str, path: str | None = None) -> Any:
        """The metric's values over the runs that have it, as a numpy array."""
        import numpy as np

        column = self.scalars.get(key) if path is None else self.per_path.get(key, {}).get(path)
        if column is None:
            return np.empty(0)
        a = np.frombuffer(column, dtype=float)
        return a[~np.isnan(a)]

    def by_seed(self, key: str) -> dict[int, float]:
        column = self.scalars.get(key)
        if column is None:
            return {}
        return {s: v for s, v in zip(self.seeds, column) if v == v}

    def counts(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "completed": self.total - self.failed,
            "failed": self.failed,
            "failures": dict(self.failures),
            "distinct": self.distinct,
        }

    def summary(self, ci: bool = False) -> dict[str, Any]:
        """{metric: {"median", "p90"[, "median_ci", "mean", "mean_ci"]}, per-path metrics as
        {"median": {path: x}, "p90": {...}}, and "runs": counts()}."""
        out: dict[str, Any] = {}
        for key in self.scalars:
            vals = self.values(key)
            if vals.size:
                out[key] = _stats(vals, ci)
        for key, paths in self.per_path.items():
            columns = {p: self.values(key, p) for p in paths}
            per = {p: _stats(v, ci) for p, v in columns.items() if v.size}
            if per:
                out[key] = {
                    stat: {p: s[stat] for p, s in per.items()} for stat in next(iter(per.values()))
                }
        out["runs"] = self.counts()
        return out


def _stats(values: Any, ci: bool) -> dict[str, Any]:
    import numpy as np

    ordered = np.sort(np.asarray(values, dtype=float))
    s: dict[str, Any] = {
        "median": quantile(ordered, 0.5, presorted=True),
        "p90": quantile(ordered, 0.9, presorted=True),
    }
    if ci:
        s["median_ci"] = list(bootstrap_ci(ordered, "median"))
        s["mean"] = float(ordered.mean())
        s["mean_ci"] = list(bootstrap_ci(values, "mean"))
    return s


def summarize(runs_by_scheduler: Mapping[str, Iterable[Mapping[str, Any]]], ci: bool = False):
    """Summary of already collected runs (see `Accumulator.summary`), per scheduler."""
    out = {}
    for name, runs in runs_by_scheduler.items():
        acc = Accumulator()
        for r in runs:
            acc.add(r)
        out[name] = acc.summary(ci)
    return out
