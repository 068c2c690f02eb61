"""Medians and p90s of a comparison (runner.summarize)."""

from __future__ import annotations

import pytest

from mpsched.runner import summarize


def test_scalar_and_per_path_metrics():
    runs = [
        {
            "scheduler": "x",
            "seed": s,
            "scenario": {},
            "download_time_s": float(s),
            "reinjected_bytes": 10 * s,
            "bytes_by_path": {"wifi": s, "lte": 2 * s},
            "chunk_times_s": [float(s)],
            "truncated": False,
        }
        for s in range(1, 11)
    ]
    summary = summarize({"x": runs})["x"]
    assert summary["download_time_s"] == {"median": 5.5, "p90": pytest.approx(9.1)}
    assert summary["reinjected_bytes"]["median"] == 55.0
    assert summary["bytes_by_path"]["median"] == {"wifi": 5.5, "lte": 11.0}
    assert summary["bytes_by_path"]["p90"]["lte"] == pytest.approx(18.2)
    # Descriptions of the run, lists and flags are not summarized.
    for key in ("scheduler", "seed", "scenario", "chunk_times_s", "truncated"):
        assert key not in summary


def test_metric_missing_from_some_runs():
    summary = summarize({"x": [{"goodput_bps": 1.0}, {}]})["x"]
    assert summary["goodput_bps"] == {"median": 1.0, "p90": 1.0}


def test_per_path_metrics_as_lists_are_left_out():
    # The engine keys per-path metrics by path name; a list is not guessed at.
    summary = summarize({"x": [{"bytes_by_path": [1, 2]}]})["x"]
    assert list(summary) == ["runs"]


def test_distinct_outcomes_ignore_what_a_run_cost():
    # The oracle's first run searches (many events, oracle_runs > 1); later seeds of a
    # seed-independent scenario reuse the search. The outcome is the same run.
    def run(seed, events, oracle_runs):
        return {
            "scheduler": "oracle",
            "seed": seed,
            "download_time_s": 0.8,
            "events": events,
            "oracle_runs": oracle_runs,
        }

    runs = [run(1, 194361, 78), run(2, 2534, 1), run(3, 2534, 1)]
    assert summarize({"oracle": runs})["oracle"]["runs"]["distinct"] == 1
    runs.append({**run(4, 2534, 1), "download_time_s": 0.9})
    assert summarize({"oracle": runs})["oracle"]["runs"]["distinct"] == 2
