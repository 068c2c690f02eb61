"""The results store: one SQLite file, one row per run, committed the moment the run finishes.

A run is keyed by a content hash of what determines its result: the resolved scenario (with each
trace file replaced by a digest of its contents, so moving a directory changes nothing and
editing a trace changes everything), the scheduler, the seed and the engine version
(`_core.version()`). The simulator is deterministic, so a key seen before is a run done before:
a sweep re-run, or resumed after being killed, skips it.

Tables:

- `runs`: `key` (primary key), `scheduler`, `seed`, `engine_version`, `sweep` (the first sweep
  that produced it), `axes` (JSON: axis key -> value as written in the sweep file), `result`
  (the engine's result object as JSON text, untouched), `finished` (Unix time), and one column
  per sweep axis, named by its key (`"path.wifi.rate"`), holding the value in SI units (bit/s,
  bytes, seconds) when it has a unit, else as written.
- `sweep_runs`: which runs belong to which sweep (a run can serve several sweeps).
- `sweeps`: each sweep's name, source file and plan (base scenario, schedulers, seeds, axes).

The file is in WAL mode with `synchronous=NORMAL`: a commit survives the process being killed
(not a power cut, which a re-run repairs anyway by recomputing the lost runs).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Union

from .errors import ScenarioError
from .stats import FAIL_AS_INFINITE, FAIL_AS_ZERO, failure

__all__ = ["SCHEMA_VERSION", "Store", "flatten", "load"]

SCHEMA_VERSION = "1"

_FIXED_COLUMNS = ("key", "scheduler", "seed", "engine_version", "sweep", "axes", "result")
# Result keys that describe the run rather than measure it: DataFrames carry them as their own
# columns (or not at all: the scenario is in the sweep's plan).
_NOT_METRICS = ("scheduler", "seed", "scenario", "engine_version")

PathOrStore = Union[str, "os.PathLike[str]", "Store"]


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class Store:
    """An open results store. `path` ":memory:" keeps everything in memory (API use)."""

    def __init__(
        self, path: str | os.PathLike[str] = ":memory:", *, readonly: bool = False
    ) -> None:
        self.path = os.fspath(path)
        self.readonly = readonly
        try:
            if readonly:
                # Readers never write: a URI with mode=ro, so that a file given by mistake (any
                # SQLite file) is left byte for byte as it was.
                uri = "file:" + urllib.parse.quote(os.path.abspath(self.path)) + "?mode=ro"
                self.db = sqlite3.connect(uri, uri=True, isolation_level=None)
                self._check()
            else:
                self.db = sqlite3.connect(self.path, isolation_level=None)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self._create()
        except sqlite3.DatabaseError as exc:
            raise ScenarioError(f"{self.path}: not a results database ({exc})") from None
        self._columns = {row[1] for row in self.db.execute("PRAGMA table_info(runs)")}

    def _check(self) -> None:
        """A store opened read-only must already be an mpsched results store."""
        tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master")}
        if not {"meta", "runs", "sweeps", "sweep_runs"} <= tables:
            raise ScenarioError(
                f"{self.path}: not an mpsched results database (made by `mpsched sweep` or "
                "`mpsched reproduce`)"
            )
        row = self.db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        if row is None or row[0] != SCHEMA_VERSION:
            found = row[0] if row else "none"
            raise ScenarioError(
                f"{self.path}: results database schema {found}, expected {SCHEMA_VERSION}"
            )

    def _create(self) -> None:
        db = self.db
        db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
        row = db.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
        if row is None:
            db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        elif row[0] != SCHEMA_VERSION:
            raise ScenarioError(
                f"{self.path}: results database schema {row[0]}, expected {SCHEMA_VERSION}"
            )
        db.execute(
            """CREATE TABLE IF NOT EXISTS runs (
                key TEXT PRIMARY KEY,
                scheduler TEXT NOT NULL,
                seed INTEGER NOT NULL,
                engine_version TEXT NOT NULL,
                sweep TEXT,
                axes TEXT NOT NULL,
                result TEXT NOT NULL,
                finished REAL NOT NULL)"""
        )
        db.execute(
            """CREATE TABLE IF NOT EXISTS sweep_runs (
                sweep TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (sweep, key))"""
        )
        db.execute(
            """CREATE TABLE IF NOT EXISTS sweeps (
                name TEXT PRIMARY KEY, source TEXT, plan TEXT NOT NULL, updated REAL NOT NULL)"""
        )

    # ---- writing --------------------------------------------------------------------------

    def add_sweep(self, name: str, source: str | None, plan: Mapping[str, Any]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO sweeps VALUES (?, ?, ?, ?)",
            (name, source, json.dumps(plan), time.time()),  # key order: axis order
        )

    def ensure_axis_columns(self, keys: Iterable[str]) -> None:
        for key in keys:
            if key not in self._columns:
                self.db.execute(f"ALTER TABLE runs ADD COLUMN {_quote(key)}")
                self._columns.add(key)

    def done(self, keys: Iterable[str]) -> set[str]:
        """Which of `keys` are stored."""
        keys = list(keys)
        found: set[str] = set()
        for i in range(0, len(keys), 500):
            batch = keys[i : i + 500]
            marks = ",".join("?" * len(batch))
            found.update(
                k for (k,) in self.db.execute(f"SELECT key FROM runs WHERE key IN ({marks})", batch)
            )
        return found

    def adopt(self, sweep: str, runs: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        """Record that already stored runs (key, axis values) belong to `sweep` too, filling
        axis columns they lack (an earlier sweep may not have had that axis)."""
        runs = list(runs)
        if not runs:
            return
        with self._transaction():
            for key, axis_values in runs:
                self.db.execute("INSERT OR IGNORE INTO sweep_runs VALUES (?, ?)", (sweep, key))
                for column, value in axis_values.items():
                    self.db.execute(
                        f"UPDATE runs SET {_quote(column)} = ? "
                        f"WHERE key = ? AND {_quote(column)} IS NULL",
                        (value, key),
                    )

    def add_run(
        self,
        key: str,
        *,
        sweep: str | None,
        scheduler: str,
        seed: int,
        engine_version: str,
        axes: Mapping[str, Any],
        axis_values: Mapping[str, Any],
        result_json: str,
    ) -> None:
        """Store one finished run and commit at once."""
        columns = ["key", "scheduler", "seed", "engine_version", "sweep", "axes", "result"]
        columns += ["finished", *axis_values]
        values = [key, scheduler, seed, engine_version, sweep, json.dumps(axes), result_json]
        values += [time.time(), *axis_values.values()]
        marks = ",".join("?" * len(values))
        names = ",".join(_quote(c) for c in columns)
        with self._transaction():
            self.db.execute(f"INSERT OR IGNORE INTO runs ({names}) VALUES ({marks})", values)
            if sweep is not None:
                self.db.execute("INSERT OR IGNORE INTO sweep_runs VALUES (?, ?)", (sweep, key))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One explicit transaction, rolled back if the block raises (Ctrl-C included). A
        KeyboardInterrupt can land after COMMIT has run: then there is nothing to roll back,
        and ROLLBACK would replace the interrupt with "no transaction is active"."""
        self.db.execute("BEGIN")
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    # ---- reading --------------------------------------------------------------------------

    def sweeps(self) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT name, source, plan FROM sweeps ORDER BY updated")
        return [{"name": n, "source": s, "plan": json.loads(p)} for n, s, p in rows]

    def axis_columns(self) -> list[str]:
        return [c for c in self._column_order() if c not in _FIXED_COLUMNS and c != "finished"]

    def _column_order(self) -> list[str]:
        return [row[1] for row in self.db.execute("PRAGMA table_info(runs)")]

    def count(self, sweep: str | None = None) -> int:
        if sweep is None:
            return self.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        return self.db.execute(
            "SELECT COUNT(*) FROM sweep_runs WHERE sweep = ?", (sweep,)
        ).fetchone()[0]

    def rows(self, sweep: str | None = None) -> list[dict[str, Any]]:
        """Every run (of `sweep`) as {"key", "scheduler", "seed", "engine_version", "sweep",
        "axes", "axis_values", "result"}, in the order they finished."""
        axis_cols = self.axis_columns()
        select = ",".join(
            ["r.key", "r.scheduler", "r.seed", "r.engine_version", "r.sweep", "r.axes", "r.result"]
            + [f"r.{_quote(c)}" for c in axis_cols]
        )
        if sweep is None:
            query = f"SELECT {select} FROM runs r ORDER BY r.finished, r.rowid"
            cursor = self.db.execute(query)
        else:
            query = (
                f"SELECT {select} FROM runs r JOIN sweep_runs m ON m.key = r.key "
                "WHERE m.sweep = ? ORDER BY r.finished, r.rowid"
            )
            cursor = self.db.execute(query, (sweep,))
        out = []
        for row in cursor:
            key, scheduler, seed, version, sweep_name, axes, result = row[:7]
            try:
                axes, result = json.loads(axes), json.loads(result)
                if not isinstance(result, dict):
                    raise ValueError("not a JSON object")
            except (TypeError, ValueError) as exc:
                raise ScenarioError(
                    f"{self.path}: run {key}: corrupt stored result ({exc}); delete that row "
                    "or re-run the sweep into a new database"
                ) from None
            out.append(
                {
                    "key": key,
                    "scheduler": scheduler,
                    "seed": seed,
                    "engine_version": version,
                    "sweep": sweep_name,
                    "axes": axes,
                    "axis_values": dict(zip(axis_cols, row[7:])),
                    "result": result,
                }
            )
        return out

    def frame(self, sweep: str | None = None):
        """The runs as a pandas DataFrame (see `load`)."""
        import pandas as pd

        axis_cols = self.axis_columns()
        if sweep is not None:
            plans = {s["name"]: s["plan"] for s in self.sweeps()}
            if sweep not in plans:
                known = ", ".join(plans) or "none"
                raise ScenarioError(f'{self.path}: no sweep named "{sweep}" (sweeps: {known})')
            axis_cols = list(plans[sweep].get("axes", {}))
        rows = self.rows(sweep)
        records = []
        for row in rows:
            record: dict[str, Any] = {
                "sweep": row["sweep"],
                "scheduler": row["scheduler"],
                "seed": row["seed"],
            }
            for col in axis_cols:
                record[col] = row["axis_values"].get(col)
            record.update(flatten(row["result"]))
            why = failure(row["result"])
            record["failed"] = why is not None
            record["failure"] = why
            if why is not None:
                # Failed runs count, never vanish: +inf where a time was never reached, 0 goodput
                # (mpsched.stats), so df.groupby("scheduler").median() is honest as it stands.
                for metric in FAIL_AS_INFINITE:
                    if metric in record:
                        record[metric] = math.inf
                for metric in FAIL_AS_ZERO:
                    if metric in record:
                        record[metric] = 0.0
            record["engine_version"] = row["engine_version"]
            record["key"] = row["key"]
            records.append(record)
        first = ["sweep", "scheduler", "seed", *axis_cols, "failed", "failure"]
        last = ["engine_version", "key"]
        frame = pd.DataFrame.from_records(records)
        if frame.empty:
            return pd.DataFrame(columns=first + last)
        metrics = sorted(c for c in frame.columns if c not in first and c not in last)
        return frame[first + metrics + last]

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def flatten(result: Mapping[str, Any]) -> dict[str, Any]:
    """A result object's metrics as flat columns: scalars as they are, per-path dicts as
    `metric.pathname`, lists (per-chunk values) as lists."""
    flat: dict[str, Any] = {}
    for key, value in result.items():
        if key in _NOT_METRICS:
            continue
        if isinstance(value, Mapping):
            for sub, v in value.items():
                flat[f"{key}.{sub}"] = v
        else:
            flat[key] = value
    return flat


def open_store(db: PathOrStore, *, must_exist: bool = False, readonly: bool = False) -> Store:
    if isinstance(db, Store):
        return db
    path = os.fspath(db)
    if (must_exist or readonly) and path != ":memory:" and not os.path.exists(path):
        raise ScenarioError(f"{path}: no such results database")
    if os.path.isdir(path):
        raise ScenarioError(f"{path}: is a directory, not a results database")
    return Store(path, readonly=readonly and path != ":memory:")


def load(db: PathOrStore, sweep: str | None = None):
    """A results database as a pandas DataFrame: one row per run with `sweep`, `scheduler`,
    `seed`, one column per sweep axis (named by its key, SI values), every metric (per-path
    metrics flattened as `metric.pathname`), `engine_version` and the run's `key`.

    Every run is there, failed ones too: `failed` (bool) and `failure` (the reason) say which;
    a failed run's time metrics (`download_time_s`, `completion_gap_s`, ...) are +inf and its
    `goodput_bps` is 0, so that medians over the frame count failures instead of dropping them.

    `sweep` selects the runs of one sweep (by name; an unknown name is an error); default: every
    run stored. The file is opened read-only and must be an mpsched results database."""
    store = open_store(db, must_exist=True, readonly=True)
    try:
        return store.frame(sweep)
    finally:
        if store is not db:
            store.close()
