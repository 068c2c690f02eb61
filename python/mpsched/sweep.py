"""Sweeps: every combination of axes x schedulers x seeds is one run, stored as it finishes.

The sweep file (DESIGN.md "Scenario files"):

    name = "fig13"                       # optional; default: the file's stem
    base = "wifi-lte.toml"               # relative to this file; or an inline [scenario] table
    schedulers = ["minrtt", "dems-f", "oracle"]
    seeds = [1, 2, 3, 4, 5]              # or: reps = 10 (seeds 1..10); default: seeds = [1]
    [axes]
    "path.wifi.rate" = ["2.5Mbit", "7.5Mbit", "12.5Mbit"]
    "workload.size"  = ["256KiB", "1MiB", "4MiB"]

Axis keys are `--set` keys; values are applied as `--set` values (a trace file in an axis is
relative to the sweep file). Everything is validated before the first run: a bad key, value,
scheduler or trace gives one line naming the sweep file and the key (exit status 2 from the CLI).

Call it: `mpsched.sweep(spec, db=None, *, jobs=None, cluster=None, progress=False, name=None)`
runs a sweep and returns its runs as a DataFrame (the module is callable; see `sweep`).

Execution: locally, a pool of N Python threads each calling `_core.run`, which releases the GIL,
so N runs go on N cores in Rust; or, with `cluster=`, as Dask futures on a distributed cluster
(docs/cluster.md). Either way the main thread stores each result the moment it arrives (one
SQLite commit per run, see store.py), so a killed sweep loses nothing and a re-run skips the
runs already stored.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import os
import sys
import time
import types
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Union

from . import _engine, units
from .errors import Interrupted, ScenarioError
from .scenario import read_toml, resolve, to_json
from .store import Store, open_store

__all__ = [
    "Job",
    "SweepPlan",
    "SweepStats",
    "load_sweep",
    "plan_sweep",
    "remote_run",
    "run_sweep",
    "sweep",
]

_TOP_KEYS = ("name", "description", "base", "scenario", "schedulers", "seeds", "reps", "axes")

# Axis values are stored in SI units when the key's field has a unit, so that a DataFrame
# sorts and plots them as numbers.
_RATE_FIELDS = ("rate", "reverse_rate")
_SIZE_FIELDS = ("size", "send_buffer", "recv_buffer", "mss")
_TIME_FIELDS = ("rtt", "owd", "think", "duration", "min_rto", "max_time", "clock_offset")
_NUMBER_FIELDS = ("loss", "reverse_loss", "count", "init_cwnd")

SpecArg = Union[str, "os.PathLike[str]", Mapping[str, Any]]


@dataclass
class Job:
    """One run of a sweep."""

    key: str
    scheduler: str
    seed: int
    scenario_json: str
    axes: dict[str, Any]  # as written in the sweep file
    axis_values: dict[str, Any]  # SI units where the field has a unit

    def describe(self) -> str:
        where = ", ".join(f"{k}={_show(v)}" for k, v in self.axes.items())
        return f"{self.scheduler}, seed {self.seed}" + (f", {where}" if where else "")


@dataclass
class SweepPlan:
    name: str
    source: str
    base: dict[str, Any]  # the resolved base scenario
    schedulers: list[str]
    seeds: list[int]
    axes: dict[str, list[Any]]
    jobs: list[Job] = field(default_factory=list)
    text: str | None = None  # the sweep file, for the report

    def describe(self) -> dict[str, Any]:
        """What the store keeps about the sweep (report: scenario and axes)."""
        return {
            "source": self.source,
            "base": self.base,
            "schedulers": self.schedulers,
            "seeds": self.seeds,
            "axes": self.axes,
            "runs": len(self.jobs),
            "engine_version": _engine.core().version(),
            "text": self.text,
        }


@dataclass
class SweepStats:
    name: str
    db: str
    total: int
    skipped: int
    ran: int
    wall_s: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "sweep": self.name,
            "db": self.db,
            "total": self.total,
            "skipped": self.skipped,
            "ran": self.ran,
            "wall_time_s": self.wall_s,
        }


def _show(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def axis_value(key: str, value: Any) -> Any:
    """An axis value as stored in its column: SI number when the field has a unit."""
    last = key.rsplit(".", 1)[-1]
    try:
        if last in _RATE_FIELDS:
            return units.parse_rate(value)
        if last in _SIZE_FIELDS:
            return units.parse_size(value)
        if last in _TIME_FIELDS:
            return units.parse_time(value, allow_negative=True)
        if last in _NUMBER_FIELDS and isinstance(value, (int, float)):
            return value
    except ScenarioError:
        pass
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return value


# ---- reading and validating a sweep file -------------------------------------------------------


def _error(source: str, key: str, message: str) -> ScenarioError:
    return ScenarioError(f"{source}: {key}: {message}" if key else f"{source}: {message}")


def _suggest(key: str, known: Sequence[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, known, n=1)
    return f' (did you mean "{close[0]}"?)' if close else f" (known: {', '.join(known)})"


def _is_seed(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64


def load_sweep(path: str | os.PathLike[str]) -> SweepPlan:
    """Read, validate and expand a sweep file into its jobs (nothing runs)."""
    source = os.fspath(path)
    data = read_toml(path)
    text = Path(path).read_text(encoding="utf-8")
    return plan_sweep(
        data, source=source, base_dir=Path(source).parent, name=Path(source).stem, text=text
    )


def plan_sweep(
    data: Mapping[str, Any],
    *,
    source: str = "sweep",
    base_dir: str | os.PathLike[str] | None = None,
    name: str | None = None,
    text: str | None = None,
) -> SweepPlan:
    """Validate a sweep given as a dict (the TOML file's shape) and expand it into jobs."""
    base_dir = Path(base_dir) if base_dir is not None else Path.cwd()
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{source}: a sweep is a table, got {units._show(data)}")
    for key in data:
        if key not in _TOP_KEYS:
            raise _error(source, "", f"unknown key {json.dumps(key)}" + _suggest(key, _TOP_KEYS))

    sweep_name = data.get("name", name or "sweep")
    if not isinstance(sweep_name, str) or not sweep_name:
        raise _error(source, "name", f"expected a non-empty string, got {units._show(sweep_name)}")

    base_data, base_source, base_base_dir = _base(data, source, base_dir)
    schedulers = _schedulers(data, source)
    seeds = _seeds(data, source)
    axes = _axes(data, source, base_dir)
    # The base alone first, so that its own errors name its own file; a base may leave out
    # what every axis combination supplies (a rate swept over), so an error that the first
    # combination cures is not one.
    try:
        base = resolve(base_data, None, source=base_source, base_dir=base_base_dir)
    except ScenarioError:
        try:
            firsts = {k: v[0] for k, v in axes.items()}
            base = resolve(base_data, firsts, source=base_source, base_dir=base_base_dir)
        except ScenarioError:
            base = None
        if base is None or not axes:
            raise

    # Each axis value (with the other axes at their first value), so that an error names the
    # axis and the value at fault.
    first = {k: v[0] for k, v in axes.items()}
    for key, values in axes.items():
        for i, value in enumerate(values):
            overrides = {**first, key: value}
            _resolve_with(base_data, base_base_dir, overrides, source, f"axes.{key}[{i}]", axes)

    combos = [dict(zip(axes, combo)) for combo in itertools.product(*axes.values())]
    core = _engine.core()
    known = [n for n, _ in _engine.schedulers()]
    for sched in schedulers:
        # Parameterized forms (single:NAME, NAME+RECEIVER) are checked by the engine's
        # validate below.
        plain = sched.split("+", 1)[0]
        if plain not in known and plain.split(":", 1)[0] not in known:
            raise _error(
                source,
                "schedulers",
                f'unknown scheduler "{sched}" (known: {", ".join(known)})',
            )
    version = core.version()
    jobs: list[Job] = []
    digests: dict[str, str] = {}
    for index, combo in enumerate(combos):
        where = "axes " + ", ".join(f"{k}={_show(v)}" for k, v in combo.items())
        resolved = _resolve_with(base_data, base_base_dir, combo, source, where, axes)
        scenario_json = to_json(resolved)
        # The engine checks trace contents (per scenario) and builds each scheduler (per
        # scheduler, on one scenario: axes cannot change what a scheduler accepts, only values).
        for sched in schedulers if index == 0 else schedulers[:1]:
            try:
                core.validate(scenario_json, sched)
            except ValueError as exc:
                loc = f"{where}, scheduler {sched}" if combo else f"schedulers: {sched}"
                raise _error(source, loc, str(exc)) from None
        canonical = _canonical(resolved, digests)
        axis_values = {k: axis_value(k, v) for k, v in combo.items()}
        for sched in schedulers:
            for seed in seeds:
                jobs.append(
                    Job(
                        key=run_key(canonical, sched, seed, version),
                        scheduler=sched,
                        seed=seed,
                        scenario_json=scenario_json,
                        axes=dict(combo),
                        axis_values=axis_values,
                    )
                )
    return SweepPlan(
        name=sweep_name,
        source=source,
        base=base,
        schedulers=schedulers,
        seeds=seeds,
        axes=axes,
        jobs=jobs,
        text=text,
    )


def _base(data: Mapping[str, Any], source: str, base_dir: Path) -> tuple[dict[str, Any], str, Path]:
    """(TOML-shaped base scenario, the name its errors use, where its relative paths start)."""
    has_base, has_inline = "base" in data, "scenario" in data
    if has_base == has_inline:
        raise _error(
            source,
            "",
            'needs exactly one of base = "SCENARIO.toml" or a [scenario] table'
            + (", not both" if has_base else ""),
        )
    if has_inline:
        inline = data["scenario"]
        if not isinstance(inline, Mapping):
            raise _error(source, "scenario", "expected a table ([scenario])")
        return dict(inline), f"{source}: [scenario]", base_dir
    written = data["base"]
    if not isinstance(written, str) or not written:
        raise _error(source, "base", f"expected a file name, got {units._show(written)}")
    path = Path(os.path.expanduser(written))
    if not path.is_absolute():
        path = base_dir / path
    try:
        return read_toml(path), os.path.normpath(path), path.parent
    except ScenarioError as exc:
        if not path.exists():
            raise _error(source, "base", f'no such scenario file "{written}" ({path})') from None
        raise exc from None


def _schedulers(data: Mapping[str, Any], source: str) -> list[str]:
    if "schedulers" not in data:
        raise _error(source, "", 'missing key "schedulers" (e.g. schedulers = ["minrtt"])')
    value = data["schedulers"]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(s, str) and s for s in value):
        raise _error(source, "schedulers", "expected a non-empty list of scheduler names")
    if len(set(value)) != len(value):
        dup = next(s for s in value if value.count(s) > 1)
        raise _error(source, "schedulers", f'"{dup}" is listed twice')
    return list(value)


def _seeds(data: Mapping[str, Any], source: str) -> list[int]:
    if "seeds" in data and "reps" in data:
        raise _error(source, "", "give seeds or reps, not both")
    if "reps" in data:
        reps = data["reps"]
        if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
            raise _error(source, "reps", f"expected a whole number >= 1, got {units._show(reps)}")
        return list(range(1, reps + 1))
    seeds = data.get("seeds", [1])
    if not isinstance(seeds, list) or not seeds:
        raise _error(source, "seeds", "expected a non-empty list of seeds, e.g. [1, 2, 3]")
    for s in seeds:
        if not _is_seed(s):
            raise _error(source, "seeds", f"seed must be a whole number >= 0, got {units._show(s)}")
    if len(set(seeds)) != len(seeds):
        dup = next(s for s in seeds if seeds.count(s) > 1)
        raise _error(source, "seeds", f"seed {dup} is listed twice")
    return list(seeds)


def _axes(data: Mapping[str, Any], source: str, base_dir: Path) -> dict[str, list[Any]]:
    raw = data.get("axes", {})
    if not isinstance(raw, Mapping):
        raise _error(source, "axes", 'expected a table ([axes] with "KEY" = [values])')
    axes: dict[str, list[Any]] = {}
    for key, values in raw.items():
        if isinstance(values, Mapping):
            # `[axes] path.wifi.rate = [...]` unquoted parses as nested tables: accept it.
            for sub_key, sub_values in _flatten_axes(key, values):
                axes[sub_key] = _axis_values(source, sub_key, sub_values, base_dir)
            continue
        axes[key] = _axis_values(source, key, values, base_dir)
    for key in axes:
        if "." not in key:
            raise _error(
                source,
                f"axes.{key}",
                "expected a --set key (path.NAME.KEY, workload.KEY, transport.KEY or sim.KEY)",
            )
    return axes


def _flatten_axes(prefix: str, table: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for key, value in table.items():
        if isinstance(value, Mapping):
            yield from _flatten_axes(f"{prefix}.{key}", value)
        else:
            yield f"{prefix}.{key}", value


def _axis_values(source: str, key: str, values: Any, base_dir: Path) -> list[Any]:
    if not isinstance(values, list) or not values:
        raise _error(
            source, f"axes.{key}", f"expected a non-empty list of values, got {units._show(values)}"
        )
    seen = []
    for v in values:
        if v in seen:
            raise _error(source, f"axes.{key}", f"value {_show(v)} is listed twice")
        seen.append(v)
    if key.endswith(".trace"):
        # Trace files in a sweep file are relative to the sweep file, like its base.
        values = [
            str(base_dir / os.path.expanduser(v))
            if isinstance(v, str) and not os.path.isabs(os.path.expanduser(v))
            else v
            for v in values
        ]
    return list(values)


def _resolve_with(
    base_data: Mapping[str, Any],
    base_dir: Path,
    overrides: Mapping[str, Any],
    source: str,
    where: str,
    axes: Mapping[str, list[Any]],
) -> dict[str, Any]:
    marker = "\x00sweep"
    try:
        return resolve(base_data, overrides, source=marker, base_dir=base_dir)
    except ScenarioError as exc:
        message = exc.message
        if message.startswith(marker + ": "):
            message = message[len(marker) + 2 :]
        message = message.replace(marker, source)
        # "--set KEY: msg" is how the resolver names an override; here it is an axis value.
        for key, value in overrides.items():
            if message.startswith(f"--set {key}: "):
                message = message[len(f"--set {key}: ") :]
                where = f"axes.{key}[{axes[key].index(value)}]"
                break
        raise _error(source, where, message) from None


def _canonical(resolved: Mapping[str, Any], digests: dict[str, str]) -> dict[str, Any]:
    """The resolved scenario with every trace file replaced by a digest of its contents."""
    out = json.loads(json.dumps(resolved))
    for path in out.get("paths", []):
        for direction in ("forward", "reverse"):
            link = path.get(direction, {})
            trace = link.get("trace")
            if trace:
                if trace not in digests:
                    digests[trace] = hashlib.sha256(Path(trace).read_bytes()).hexdigest()
                link["trace"] = "sha256:" + digests[trace]
    return out


def run_key(canonical: Mapping[str, Any], scheduler: str, seed: int, version: str) -> str:
    """The content hash that identifies a run in the results store."""
    payload = json.dumps(
        {"scenario": canonical, "scheduler": scheduler, "seed": seed, "engine": version},
        sort_keys=True,
        separators=(",", ":"),
        allow_nan=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


# ---- running -----------------------------------------------------------------------------------


def remote_run(scenario_json: str, scheduler: str, seed: int) -> str:
    """Run one job wherever this is called (a Dask worker): imports the engine there."""
    from mpsched import _core

    return _core.run(scenario_json, scheduler, seed)


def bounded_map(
    function: Callable[[Any], Any], items: Iterator[Any] | Sequence[Any], threads: int = 0
) -> Iterator[tuple[Any, Any]]:
    """(item, function(item)) as they finish, on `threads` Python threads (0: one per core)
    with a bounded window in flight, so that memory does not grow with the number of items.
    `function` should release the GIL (the engine's `run` does). On Ctrl-C or an error the
    engine is told to stop (`_engine.stop_engine`), so running simulations end within a
    second; an exception raised by `function` is re-raised here."""
    threads = threads if threads and threads > 0 else (os.cpu_count() or 1)
    with _engine.deferred_sigint() as stopped:
        pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="mpsched-run")
        pending: dict[Future, Any] = {}
        queue = iter(items)
        finished = False
        try:
            for item in itertools.islice(queue, threads * 4):
                pending[pool.submit(function, item)] = item
            while pending:
                done, _ = wait(pending, timeout=_engine.POLL_S, return_when=FIRST_COMPLETED)
                # Checked before anything is handed on: runs the engine was told to stop end
                # early, as results that are not the runs asked for.
                if stopped.is_set():
                    raise KeyboardInterrupt
                for fut in done:
                    item = pending.pop(fut)
                    yield item, fut.result()
                    if stopped.is_set():
                        raise KeyboardInterrupt
                    nxt = next(queue, _END)
                    if nxt is not _END:
                        pending[pool.submit(function, nxt)] = nxt
            finished = True
        finally:
            if finished:
                pool.shutdown(wait=True)
            else:
                _engine.stop_engine(pool)


_END = object()


def _local_results(
    jobs: Sequence[Job], threads: int
) -> Iterator[tuple[Job, str | None, str | None]]:
    """(job, result JSON, error) as runs finish, on a pool of `threads` Python threads."""
    core = _engine.core()

    def one(job: Job) -> tuple[str | None, str | None]:
        try:
            return core.run(job.scenario_json, job.scheduler, job.seed), None
        except ValueError as exc:
            return None, str(exc)

    for job, (text, error) in bounded_map(one, jobs, threads):
        yield job, text, error


_DASK_SCHEMES = ("tcp", "tls", "inproc", "ucx", "ws", "wss")
# How long a sweep waits for a Dask scheduler to have at least one worker.
WORKER_WAIT_S = 30.0


def check_cluster_address(cluster: Any) -> str:
    """A Dask scheduler address as a string, refusing what Dask cannot reach (http://...)."""
    address = str(cluster)
    scheme = address.split("://", 1)[0] if "://" in address else None
    if scheme is not None and scheme not in _DASK_SCHEMES:
        raise ScenarioError(
            f"--cluster {address}: not a Dask scheduler address (expected e.g. "
            "tcp://HOST:8786; schemes: " + ", ".join(_DASK_SCHEMES) + ")"
        )
    return address


def _cluster_results(
    jobs: Sequence[Job], cluster: Any
) -> Iterator[tuple[Job, str | None, str | None]]:
    """The same, as Dask futures on a distributed cluster (an address or a Client)."""
    if not jobs:
        return  # everything is stored: no need to reach the cluster
    try:
        from distributed import Client, as_completed
    except ImportError as exc:  # pragma: no cover - a dependency
        raise ScenarioError(f"--cluster needs dask[distributed] ({exc})") from None
    own = not isinstance(cluster, Client)
    if own:
        address = check_cluster_address(cluster)
        try:
            client = Client(address, timeout="20s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise ScenarioError(f"--cluster {address}: cannot connect ({exc})") from None
    else:
        client = cluster
    try:
        # A scheduler without workers would take the jobs and never run them.
        client.wait_for_workers(1, timeout=WORKER_WAIT_S)
    except (TimeoutError, OSError) as exc:
        if own:
            client.close()
        raise ScenarioError(
            f"--cluster {cluster}: the scheduler has no workers after {WORKER_WAIT_S:g} s "
            f"(start some with `dask worker ADDRESS`; docs/cluster.md) ({type(exc).__name__})"
        ) from None
    futures = {}
    try:
        for job in jobs:
            fut = client.submit(
                remote_run,
                job.scenario_json,
                job.scheduler,
                job.seed,
                key=f"mpsched-run-{job.key}",
                pure=False,
            )
            futures[fut] = job
        for fut in as_completed(list(futures)):
            job = futures[fut]
            if fut.status == "error":
                exc = fut.exception()
                if not isinstance(exc, ValueError):
                    raise exc
                yield job, None, str(exc)
            else:
                yield job, fut.result(), None
            fut.release()
    finally:
        for fut in futures:
            if not fut.done():
                fut.cancel()
        if own:
            client.close()


def run_sweep(
    plan: SweepPlan,
    store: Store,
    *,
    jobs: int | None = None,
    cluster: Any = None,
    progress: bool = True,
    on_result: Callable[[Job, dict], None] | None = None,
) -> SweepStats:
    """Run the plan's jobs that `store` lacks, committing each result as it arrives."""
    started = time.perf_counter()
    if isinstance(cluster, (str, os.PathLike)):
        check_cluster_address(cluster)
    version = _engine.core().version()
    store.add_sweep(plan.name, plan.source, plan.describe())
    store.ensure_axis_columns(plan.axes)
    done = store.done(j.key for j in plan.jobs)
    # Duplicate jobs (two axis values that resolve alike) run once.
    todo: list[Job] = []
    queued: set[str] = set()
    for job in plan.jobs:
        if job.key not in done and job.key not in queued:
            todo.append(job)
            queued.add(job.key)
    store.adopt(plan.name, [(j.key, j.axis_values) for j in plan.jobs if j.key in done])
    threads = jobs if jobs and jobs > 0 else (os.cpu_count() or 1)
    results = _cluster_results(todo, cluster) if cluster else _local_results(todo, threads)

    bar = _Progress(plan.name, len(plan.jobs), len(plan.jobs) - len(todo), enabled=progress)
    ran = 0
    interrupted = False
    try:
        with bar:
            for job, text, error in results:
                if error is not None:
                    raise ScenarioError(f"{plan.source}: {job.describe()}: {error}")
                assert text is not None
                result = json.loads(text)
                got = result.get("engine_version", version)
                if got != version:
                    raise ScenarioError(
                        f"{plan.source}: a worker runs engine {got}, this machine {version}: "
                        "install the same mpsched on every worker"
                    )
                store.add_run(
                    job.key,
                    sweep=plan.name,
                    scheduler=job.scheduler,
                    seed=job.seed,
                    engine_version=version,
                    axes=job.axes,
                    axis_values=job.axis_values,
                    result_json=text,
                )
                ran += 1
                bar.advance()
                if on_result is not None:
                    on_result(job, result)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()
    if interrupted:
        stored = len(plan.jobs) - len(todo) + ran
        raise Interrupted(
            f"{plan.name}: {stored} of {len(plan.jobs)} runs stored in {store.path} ({ran} new); "
            "run the same command again to resume"
        )
    return SweepStats(
        name=plan.name,
        db=store.path,
        total=len(plan.jobs),
        skipped=len(plan.jobs) - len(todo),
        ran=ran,
        wall_s=time.perf_counter() - started,
    )


class _Progress:
    """A rich progress bar on stderr: done/total, runs per second, elapsed, ETA."""

    def __init__(
        self, name: str, total: int, already: int, *, enabled: bool, delay: float = 0.0
    ) -> None:
        self.enabled = enabled and total > already
        self.progress = None
        # Shown only once the work has taken `delay` seconds: quick commands stay quiet.
        self.delay = delay
        self.started = False
        if not self.enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.already = already
        self.task = self.progress.add_task(name, total=total, completed=already, rate="")
        self.start = time.perf_counter()
        self.count = 0
        self.last = 0.0

    def __enter__(self) -> _Progress:
        if self.progress is not None and self.delay <= 0:
            self.progress.start()
            self.started = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None and self.started:
            self._refresh(force=True)
            self.progress.stop()

    def advance(self) -> None:
        if self.progress is None:
            return
        self.count += 1
        if not self.started:
            if time.perf_counter() - self.start < self.delay:
                return
            self.progress.start()
            self.started = True
        self._refresh()

    def _refresh(self, force: bool = False) -> None:
        assert self.progress is not None
        now = time.perf_counter()
        if not force and now - self.last < 0.1:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        rate = f"{self.count / elapsed:,.0f} runs/s" if self.count else ""
        self.progress.update(self.task, completed=self.already + self.count, rate=rate)


# ---- the Python API ------------------------------------------------------------------------------


def sweep(
    spec: SpecArg,
    db: Any = None,
    *,
    jobs: int | None = None,
    cluster: Any = None,
    progress: bool = False,
    name: str | None = None,
):
    """Run a sweep (a sweep file, or a dict of the same shape) and return its runs as a pandas
    DataFrame (see `mpsched.load`). `db`: a results database file to store into and resume
    from (default: in memory); `jobs`: threads (default: all cores); `cluster`: a Dask
    scheduler address or `distributed.Client`."""
    if isinstance(spec, Mapping):
        plan = plan_sweep(spec, name=name or spec.get("name") or "sweep")
    else:
        plan = load_sweep(spec)
        if name:
            plan.name = name
    store = open_store(db if db is not None else ":memory:")
    try:
        run_sweep(plan, store, jobs=jobs, cluster=cluster, progress=progress)
        return store.frame(plan.name)
    finally:
        if store is not db:
            store.close()


class _CallableModule(types.ModuleType):
    """`mpsched.sweep` is both this module and the notebook API `mpsched.sweep(...)`: the
    package cannot bind the name to the function without hiding the module from
    `import mpsched.sweep`, so the module itself is callable."""

    def __call__(self, *args: Any, **kwargs: Any):
        return sweep(*args, **kwargs)

    # help(mpsched.sweep) and inspect.signature show the function, not (*args, **kwargs).
    __call__.__signature__ = inspect.signature(sweep)  # type: ignore[attr-defined]
    __call__.__doc__ = sweep.__doc__


sys.modules[__name__].__class__ = _CallableModule
