"""Every run is accounted for (issue 13): a run that does not deliver its workload is a failed
run with a reason; summaries count it (+inf in time percentiles, 0 in goodput) instead of
taking medians over the survivors."""

from __future__ import annotations

import math

import pytest

import mpsched
from conftest import EXAMPLES, assert_user_error, run_cli
from mpsched import runner
from mpsched.errors import ScenarioError
from mpsched.stats import Accumulator, bootstrap_ci, failure, paired_ratio, quantile

needs_engine = pytest.mark.skipif(
    __import__("importlib").util.find_spec("mpsched._core") is None,
    reason="the Rust extension is not built (make build)",
)

# The default scenario's 1 MiB chunk takes 0.74 s with minrtt: 300 ms is too short for it.
SWEEP = """
base = "{base}"
schedulers = ["minrtt"]
seeds = [1]
[axes]
"sim.max_time" = ["300ms", "60s", "120s"]
"""


# ---- stats, no engine ------------------------------------------------------------------------


def test_quantile_interpolates_towards_infinity_as_infinity():
    assert quantile([1.0, 2.0, math.inf], 0.5) == 2.0
    assert quantile([1.0, 2.0, math.inf], 0.9) == math.inf
    assert quantile([1.0, math.inf], 0.5) == math.inf
    assert quantile([1.0, 3.0], 0.5) == 2.0


def test_accumulator_failed_run_counts_as_infinite_time_and_zero_goodput():
    acc = Accumulator()
    acc.add({"seed": 1, "download_time_s": 1.0, "goodput_bps": 8.0, "failed": False})
    acc.add({"seed": 2, "download_time_s": 2.0, "goodput_bps": 4.0, "failed": False})
    acc.add({"seed": 3, "download_time_s": None, "goodput_bps": 3.0, "failed": True,
             "failure": "stalled: no data delivered for 240 s"})  # fmt: skip
    s = acc.summary()
    assert s["runs"]["completed"] == 2 and s["runs"]["failed"] == 1
    assert s["runs"]["failures"] == {"stalled: no data delivered for 240 s": 1}
    assert s["download_time_s"]["median"] == 2.0  # survivors only would say 1.5
    assert s["download_time_s"]["p90"] == math.inf
    assert s["goodput_bps"]["median"] == 4.0  # the failed run's 3.0 counts as 0


def test_failure_of_results_without_the_failed_key():
    assert failure({"truncated": True}) is not None
    assert failure({"download_time_s": None}) is not None
    assert failure({"download_time_s": 1.0, "truncated": False}) is None


def test_bootstrap_ci_brackets_the_median_and_is_reproducible():
    values = [float(v) for v in range(1, 101)]
    lo, hi = bootstrap_ci(values, "median")
    assert lo < 50.5 < hi
    assert (lo, hi) == bootstrap_ci(values, "median")
    lo, hi = bootstrap_ci(values, "mean")
    assert lo < 50.5 < hi


def test_paired_ratio_of_identical_schedulers_is_one():
    base = {s: float(s) for s in range(1, 21)}
    ours = {s: 2.0 * v for s, v in base.items()}
    p = paired_ratio(ours, base)
    assert p is not None and p["pairs"] == 20
    assert p["median"] == 2.0 and p["ci"] == [2.0, 2.0]


# ---- the engine ------------------------------------------------------------------------------


@needs_engine
def test_run_past_max_time_is_failed_with_the_reason():
    result = runner.run(None, set=["sim.max_time=300ms"])
    assert result["failed"] is True
    assert result["failure"].startswith("time limit")


@needs_engine
def test_run_cli_exits_3_and_prints_the_reason():
    proc = run_cli("run", EXAMPLES / "wifi-lte.toml", "--set", "sim.max_time=300ms")
    assert proc.returncode == 3, proc.stderr
    assert "run failed: time limit" in proc.stderr


@needs_engine
def test_run_cli_that_finishes_exits_0():
    proc = run_cli("run", EXAMPLES / "wifi-lte.toml")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "override, fragment",
    [
        ("path.wifi.queue=0pkt", "holds no packet"),
        ("path.wifi.queue=0ms", "holds no packet"),
        ("transport.recv_buffer=1B", "smaller than one segment"),
        ("transport.send_buffer=1KB", "smaller than one segment"),
    ],
)
def test_impossible_settings_are_refused_up_front(override, fragment):
    proc = run_cli("run", EXAMPLES / "wifi-lte.toml", "--set", override)
    assert_user_error(proc, fragment, override.split("=")[0])


def test_mss_as_a_plain_number_is_bytes():
    from mpsched.scenario import load_scenario

    assert load_scenario(None, ["transport.mss=1448"])["transport"]["mss"] == 1448


@needs_engine
def test_sweep_with_failed_runs_counts_them_everywhere(write, tmp_path):
    """Must show: the summary, the report and mpsched.load show the failed count, and no
    median is taken over the survivors only."""
    sweep = write("mixed.toml", SWEEP.format(base=EXAMPLES / "wifi-lte.toml"))
    db = tmp_path / "mixed.db"
    proc = run_cli("sweep", sweep, "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    import json

    summary = json.loads(proc.stdout)["summary"]["minrtt"]
    assert summary["runs"]["failed"] == 1 and summary["runs"]["completed"] == 2
    # p90 of (0.74, 0.74, failed): the failed run, not a survivor (JSON: null = +inf).
    assert summary["download_time_s"]["p90"] is None

    table = run_cli("sweep", sweep, "--db", db)
    assert " 2/3 " in table.stdout, table.stdout
    assert "failed: 1 run: time limit" in table.stdout

    df = mpsched.load(db, sweep="mixed")
    assert int(df["failed"].sum()) == 1
    assert (
        df.groupby("scheduler")["download_time_s"].quantile(0.9, interpolation="higher")["minrtt"]
        == math.inf
    )
    with pytest.raises(ScenarioError, match="no sweep named"):
        mpsched.load(db, sweep="nosuch")

    out = tmp_path / "r.html"
    rep = run_cli("report", db, "-o", out, "--no-traces")
    assert rep.returncode == 0, rep.stderr
    page = out.read_text()
    assert "<th>failed</th>" in page and "time limit" in page
