"""Never touch inputs; every user error is one line with exit 2 (issue 13)."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

import mpsched
from conftest import EXAMPLES, assert_user_error, run_cli
from mpsched.errors import ScenarioError

pytest.importorskip("mpsched._core")

SWEEP = f"""
base = "{EXAMPLES / "wifi-lte.toml"}"
schedulers = ["minrtt"]
seeds = [1, 2]
"""


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def store(tmp_path, write):
    sweep = write("small.toml", SWEEP)
    db = tmp_path / "small.db"
    proc = run_cli("sweep", sweep, "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    return db


def test_report_on_a_foreign_sqlite_file_refuses_and_leaves_it_byte_identical(tmp_path):
    foreign = tmp_path / "contacts.sqlite"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE people (name TEXT)")
    db.execute("INSERT INTO people VALUES ('ada')")
    db.commit()
    db.close()
    before = digest(foreign)
    proc = run_cli("report", foreign, "-o", tmp_path / "r.html")
    assert_user_error(proc, "not an mpsched results database")
    assert digest(foreign) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["contacts.sqlite"]


def test_report_on_a_text_file_is_one_line(tmp_path):
    text = tmp_path / "notes.db"
    text.write_text("hello\n")
    before = digest(text)
    assert_user_error(run_cli("report", text, "-o", tmp_path / "r.html"), "notes.db")
    assert digest(text) == before


def test_report_leaves_its_own_store_byte_identical(store, tmp_path):
    before = digest(store)
    proc = run_cli("report", store, "-o", tmp_path / "r.html", "--no-traces")
    assert proc.returncode == 0, proc.stderr
    assert digest(store) == before


def test_report_corrupt_result_row_is_one_line(store, tmp_path):
    db = sqlite3.connect(store)
    db.execute("UPDATE runs SET result = '{not json' WHERE rowid = 1")
    db.commit()
    db.close()
    proc = run_cli("report", store, "-o", tmp_path / "r.html", "--no-traces")
    assert_user_error(proc, "corrupt stored result")


def test_report_unwritable_output_is_refused_before_the_work(store, tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    proc = run_cli("report", store, "-o", blocker / "r.html", "--no-traces")
    assert_user_error(proc, "-o", "afile")
    proc = run_cli("report", store, "-o", tmp_path, "--no-traces")
    assert_user_error(proc, "is a directory")


def test_load_unknown_sweep_raises_like_the_cli(store, tmp_path):
    with pytest.raises(ScenarioError, match='no sweep named "nosuch"'):
        mpsched.load(store, sweep="nosuch")
    proc = run_cli("report", store, "--sweep", "nosuch", "-o", tmp_path / "r.html")
    assert_user_error(proc, 'no sweep named "nosuch"')


def test_sweep_cluster_http_address_is_one_line(write, tmp_path):
    sweep = write("c.toml", SWEEP)
    proc = run_cli("sweep", sweep, "--db", tmp_path / "c.db", "--cluster", "http://localhost:1")
    assert_user_error(proc, "--cluster", "not a Dask scheduler address")


def test_sweep_cluster_without_workers_times_out_with_one_line(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    from mpsched import sweep as sweeps

    monkeypatch.setattr(sweeps, "WORKER_WAIT_S", 1.0)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        plan = sweeps.plan_sweep(
            {"base": str(EXAMPLES / "wifi-lte.toml"), "schedulers": ["minrtt"]}
        )
        with pytest.raises(ScenarioError, match="no workers after 1 s"):
            sweeps.run_sweep(plan, sweeps.Store(":memory:"), cluster=cluster.scheduler_address)


def test_csv_outputs(write, tmp_path):
    out = tmp_path / "c.csv"
    proc = run_cli("compare", "-s", "minrtt", "--reps", "2", "--csv", out)
    assert proc.returncode == 0, proc.stderr
    header, row = out.read_text().splitlines()[:2]
    assert header.startswith("scheduler,runs,completed,failed,distinct")
    assert row.startswith("minrtt,2,2,0,1")
    sweep = write("s.toml", SWEEP)
    out = tmp_path / "s.csv"
    proc = run_cli("sweep", sweep, "--db", tmp_path / "s.db", "--csv", out)
    assert proc.returncode == 0, proc.stderr
    lines = out.read_text().splitlines()
    assert len(lines) == 3 and "download_time_s" in lines[0] and "failed" in lines[0]


def test_trace_csv_is_refused_not_written_as_parquet(tmp_path):
    proc = run_cli("run", EXAMPLES / "wifi-lte.toml", "--trace", tmp_path / "out.csv")
    assert_user_error(proc, "--trace", "Parquet")
    assert not (tmp_path / "out.csv").exists()


def test_compare_reps_above_the_bound_is_one_line():
    proc = run_cli("compare", "--reps", "1000000000000")
    assert_user_error(proc, "reps", "100,000")
