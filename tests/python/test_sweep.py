"""Sweeps and the results store, on the real engine: resuming after a kill, Dask, the API, and
the one-line errors of a bad sweep file."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mpsched
from conftest import PACKAGE_PARENT, assert_user_error, run_cli
from mpsched import store as results_store
from mpsched import sweep as sweeps

pytest.importorskip("mpsched._core")

SMALL = """
schedulers = ["minrtt", "rr"]
reps = 2
[scenario]
[[scenario.path]]
name = "wifi"
rate = "5Mbit"
rtt = "20ms"
[[scenario.path]]
name = "lte"
rate = "3Mbit"
rtt = "60ms"
[scenario.workload]
kind = "chunk"
size = "100KB"
[axes]
"path.wifi.rate" = ["5Mbit", "10Mbit"]
"workload.size" = ["50KB", "100KB"]
"""


def small_spec() -> dict:
    import tomllib

    return tomllib.loads(SMALL)


def test_sweep_api_returns_one_row_per_run_with_axes_and_flat_metrics():
    df = mpsched.sweep(small_spec(), name="small")
    assert len(df) == 2 * 2 * 2 * 2
    for column in ("scheduler", "seed", "path.wifi.rate", "workload.size", "download_time_s"):
        assert column in df.columns
    # Axes in SI units; per-path metrics flattened by path name.
    assert sorted(df["path.wifi.rate"].unique()) == [5e6, 10e6]
    assert sorted(df["workload.size"].unique()) == [50_000, 100_000]
    assert {"bytes_by_path.wifi", "bytes_by_path.lte"} <= set(df.columns)
    assert set(df["scheduler"]) == {"minrtt", "rr"}
    assert df["key"].is_unique


def test_load_reads_back_what_sweep_stored(tmp_path):
    db = tmp_path / "r.db"
    df = mpsched.sweep(small_spec(), db=db, name="small")
    back = mpsched.load(db)
    assert sorted(back["key"]) == sorted(df["key"])
    assert list(back.columns[:5]) == [
        "sweep",
        "scheduler",
        "seed",
        "path.wifi.rate",
        "workload.size",
    ]
    # One row per run, the full result JSON kept.
    with sqlite3.connect(db) as con:
        (n,) = con.execute("SELECT COUNT(*) FROM runs").fetchone()
        result = json.loads(con.execute("SELECT result FROM runs LIMIT 1").fetchone()[0])
    assert n == len(df)
    assert "scenario" in result and "download_time_s" in result


def test_rerun_skips_every_stored_run(tmp_path, write):
    path = write("s.toml", SMALL)
    db = tmp_path / "s.db"
    plan = sweeps.load_sweep(path)
    with results_store.Store(db) as st:
        first = sweeps.run_sweep(plan, st, progress=False)
        again = sweeps.run_sweep(plan, st, progress=False)
    assert (first.ran, first.skipped) == (16, 0)
    assert (again.ran, again.skipped) == (0, 16)


class _InterruptAfterCommit:
    """A connection that takes Ctrl-C the instant a COMMIT has gone through."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __getattr__(self, name):
        return getattr(self.db, name)

    def execute(self, sql, *args):
        cur = self.db.execute(sql, *args)
        if sql == "COMMIT":
            raise KeyboardInterrupt
        return cur


def test_ctrl_c_after_commit_stays_an_interrupt_and_keeps_the_run(tmp_path):
    # The race a sweep's Ctrl-C can hit: the run is committed, then the interrupt arrives.
    # It must reach the sweep as KeyboardInterrupt (exit 130, "resume"), not as the
    # "no transaction is active" of a ROLLBACK after the COMMIT.
    with results_store.Store(tmp_path / "s.db") as st:
        st.db = _InterruptAfterCommit(st.db)
        with pytest.raises(KeyboardInterrupt):
            st.add_run(
                "k1",
                sweep=None,
                scheduler="minrtt",
                seed=1,
                engine_version="0",
                axes={},
                axis_values={},
                result_json="{}",
            )
        st.db = st.db.db
        assert st.count() == 1


def test_key_depends_on_scenario_scheduler_seed_and_engine_version(write):
    plan = sweeps.load_sweep(write("s.toml", SMALL))
    keys = {j.key for j in plan.jobs}
    assert len(keys) == len(plan.jobs)
    job = plan.jobs[0]
    canonical = json.loads(job.scenario_json)
    assert sweeps.run_key(canonical, job.scheduler, job.seed, "0.1.0") != sweeps.run_key(
        canonical, job.scheduler, job.seed, "9.9.9"
    )


def test_a_trace_file_is_keyed_by_its_contents(tmp_path, write):
    trace = write("a.down", "1\n2\n3\n")
    text = SMALL.replace('rate = "3Mbit"', 'trace = "a.down"')
    before = {j.key for j in sweeps.load_sweep(write("s.toml", text)).jobs}
    trace.write_text("1\n2\n3\n4\n")
    after = {j.key for j in sweeps.load_sweep(tmp_path / "s.toml").jobs}
    assert before.isdisjoint(after)


# ---- killed midway, restarted ------------------------------------------------------------------

SLOW = """
schedulers = ["minrtt"]
reps = 40
[scenario]
[[scenario.path]]
name = "a"
rate = "100Mbit"
rtt = "40ms"
[[scenario.path]]
name = "b"
rate = "50Mbit"
rtt = "80ms"
[scenario.workload]
kind = "bulk"
duration = "4s"
"""


def _rows(db) -> dict[str, float]:
    if not os.path.exists(db):
        return {}
    try:
        with sqlite3.connect(db, timeout=5) as con:
            return dict(con.execute("SELECT key, finished FROM runs"))
    except sqlite3.OperationalError:
        return {}  # the table is not created yet


def test_a_killed_sweep_resumes_without_repeating_or_losing_a_run(tmp_path, write):
    sweep_file = write("slow.toml", SLOW)
    db = tmp_path / "slow.db"
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT, NO_COLOR="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpsched", "sweep", str(sweep_file), "--db", str(db), "-j", "1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while len(_rows(db)) < 4:
            assert proc.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.kill()  # SIGKILL: no chance to clean up
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = _rows(db)
    assert 4 <= len(before) < 40, len(before)

    done = run_cli("sweep", sweep_file, "--db", db, "--json")
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    after = _rows(db)
    # Nothing lost: every run stored once; nothing repeated: the runs stored before the kill
    # were not run again (same commit time) and exactly the others ran.
    assert len(after) == stats["total"] == 40
    assert {k: after[k] for k in before} == before
    assert (stats["skipped"], stats["ran"]) == (len(before), 40 - len(before))


# ---- Dask --------------------------------------------------------------------------------------


def test_dask_local_cluster_gives_the_same_rows_as_local(tmp_path):
    distributed = pytest.importorskip("distributed")
    spec = small_spec()
    local = mpsched.sweep(spec, name="small")
    with (
        distributed.LocalCluster(
            processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        remote = mpsched.sweep(spec, db=tmp_path / "dask.db", cluster=client, name="small")
    # wall_time_s measures the machine, not the run.
    columns = [c for c in local.columns if c != "wall_time_s"]
    a = local[columns].sort_values("key").reset_index(drop=True)
    b = remote[columns].sort_values("key").reset_index(drop=True)
    import pandas as pd

    pd.testing.assert_frame_equal(a, b)


# ---- bad sweep files ---------------------------------------------------------------------------

BASE = 'schedulers = ["minrtt"]\n[scenario]\n[[scenario.path]]\nname = "a"\nrate = "1Mbit"\n'


@pytest.mark.parametrize(
    "text, fragments",
    [
        (BASE + 'rtt = "10ms"\n[axis]\n', ['bad.toml: unknown key "axis"', 'did you mean "axes"']),
        (
            BASE + 'rtt = "10ms"\n[axes]\n"path.a.rate" = ["1Mbit", "2Mbt"]\n',
            ["bad.toml: axes.path.a.rate[1]: ", '"2Mbt"'],
        ),
        (
            BASE + 'rtt = "10ms"\n[axes]\n"path.a.rat" = ["1Mbit"]\n',
            ["bad.toml: axes.path.a.rat[0]: ", 'unknown key "rat"'],
        ),
        (
            BASE + 'rtt = "10ms"\n[axes]\n"path.a.rate" = "1Mbit"\n',
            ["bad.toml: axes.path.a.rate: expected a non-empty list"],
        ),
        (
            BASE.replace('"minrtt"', '"minrtt", "fastest"') + 'rtt = "10ms"\n',
            ['bad.toml: schedulers: unknown scheduler "fastest"', "minrtt"],
        ),
        ('base = "nowhere.toml"\nschedulers = ["minrtt"]\n', ["bad.toml: base: ", "nowhere.toml"]),
        (BASE + 'rtt = "10ms"\n', []),  # the control: this one is fine
        ('schedulers = ["minrtt"]\n', ["bad.toml: needs exactly one of base"]),
        (
            BASE.replace("schedulers", "seeds = [1]\nreps = 2\nschedulers") + 'rtt = "10ms"\n',
            ["bad.toml: give seeds or reps, not both"],
        ),
        (BASE + 'rtt = "10ms"\n[axes]\n"path.a.trace" = ["gone.down"]\n', ["gone.down"]),
        ("schedulers = [\n", ["bad.toml:", "TOML syntax error"]),
        (
            BASE + '[axes]\n"path.a.rtt" = ["10ms"]\n"path.a.owd" = ["5ms", "20ms"]\n',
            ["bad.toml: axes.path.a.owd[1]: owd must not exceed rtt"],
        ),
    ],
)
def test_bad_sweep_file_is_one_line_exit_2(tmp_path, write, text, fragments):
    path = write("bad.toml", text)
    proc = run_cli("sweep", path, "--db", tmp_path / "x.db", "--json")
    if not fragments:
        assert proc.returncode == 0, proc.stderr
        return
    assert_user_error(proc, *fragments)
    # Validation comes before any run: nothing stored.
    assert _rows(tmp_path / "x.db") == {}


def test_sweep_prints_a_summary_and_stores_beside_the_sweep_file(write):
    path = write("s.toml", SMALL)
    proc = run_cli("sweep", path)
    assert proc.returncode == 0, proc.stderr
    assert "16 runs, 0 already stored" in proc.stdout
    for column in ("minrtt", "rr", "wifi", "lte", "ok"):
        assert column in proc.stdout
    assert path.with_suffix(".db").exists()


EXAMPLE_SWEEPS = Path(__file__).resolve().parents[2] / "examples" / "sweeps"


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLE_SWEEPS.glob("*.toml")))
def test_example_sweeps_plan(name):
    # The README tells users to run these: every one must validate and expand to runs.
    plan = sweeps.load_sweep(EXAMPLE_SWEEPS / name)
    assert plan.jobs
