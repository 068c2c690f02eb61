"""`mpsched bench --matrix` (issue "Speed at scale"): the matrix points are the issue's scenario
(800 Mbit/s shared by N paths, RTT 20 + 10·i ms, 20 ms queues, CUBIC), and each row's counts
come from a real run of the engine."""

from __future__ import annotations

import sys

import pytest

from conftest import assert_user_error, run_cli
from mpsched import bench
from mpsched.scenario import resolve

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@pytest.mark.parametrize("paths", [1, 2, 4, 8])
def test_matrix_scenario_shares_800_mbit_with_rtt_steps_of_10_ms(paths):
    sc = resolve(tomllib.loads(bench.matrix_scenario(paths, "bulk", 10.0, 8)), source="t")
    rates = [p["forward"]["rate_bps"] for p in sc["paths"]]
    assert sum(rates) == pytest.approx(800e6)
    assert len(set(rates)) == 1
    rtts = [p["forward"]["delay_s"] + p["reverse"]["delay_s"] for p in sc["paths"]]
    assert rtts == pytest.approx([0.020 + 0.010 * i for i in range(paths)])
    assert {p["forward"]["queue"]["value"] for p in sc["paths"]} == {0.020}
    assert sc["transport"]["cc"] == "cubic"


def test_chunk_train_is_count_times_1_mib():
    sc = resolve(tomllib.loads(bench.matrix_scenario(2, "chunks", 10.0, 3)), source="t")
    assert (sc["workload"]["size_bytes"], sc["workload"]["count"]) == (2**20, 3)


def test_matrix_rows_count_real_runs():
    pytest.importorskip("mpsched._core", reason="needs the compiled engine (make build)")
    seen = []
    rows = bench.run_matrix(
        ["minrtt"],
        paths=(1, 2),
        duration_s=0.05,
        chunks=1,
        progress=lambda done, total, label: seen.append((done, total)),
    )
    assert [(r["paths"], r["workload"]) for r in rows] == [
        (1, "bulk"),
        (1, "chunks"),
        (2, "bulk"),
        (2, "chunks"),
    ]
    assert seen[-1] == (4, 4)
    for r in rows:
        assert r["data_packets"] > 0
        # Every data packet is at least one link service and one arrival event.
        assert r["events_per_packet"] >= 2.0


def test_matrix_records_a_scheduler_that_cannot_run_and_goes_on():
    pytest.importorskip("mpsched._core", reason="needs the compiled engine (make build)")
    # `backup` needs its backup paths named: each of its points fails with the engine's message.
    rows = bench.run_matrix(["backup", "minrtt"], paths=(1,), duration_s=0.05, chunks=1)
    assert [r["scheduler"] for r in rows] == ["backup", "backup", "minrtt", "minrtt"]
    assert all("backup" in r["failure"] and r["data_packets"] == 0 for r in rows[:2])
    assert all(r["failure"] is None and r["data_packets"] > 0 for r in rows[2:])


def test_matrix_unknown_scheduler_is_one_line_error():
    assert_user_error(run_cli("bench", "--matrix", "-s", "nosuch"), 'unknown scheduler "nosuch"')
