"""A stand-in for `mpsched._core` with its documented interface (python/mpsched/_core.pyi),
so the CLI's tables, JSON and error paths can be tested without building the engine.

Its numbers are arbitrary but deterministic: download time grows with the seed and depends on
the scheduler, so medians and p90s are known in advance.
"""

from __future__ import annotations

import json
import types

SCHEDULERS = [
    ("minrtt", "Linux MPTCP default (v0.9x)"),
    ("dems-f", "DEMS, seed 000 §4"),
    ("blest", "BLEST, seed 001 §3"),
    ("oracle", "offline-optimal split, seed 000 §3.2"),
]
BASE_TIME = {"minrtt": 2.0, "dems-f": 1.0, "blest": 1.5, "oracle": 0.8}


def result(scenario: dict, scheduler: str, seed: int) -> dict:
    names = [p["name"] for p in scenario["paths"]]
    return {
        "scheduler": scheduler,
        "seed": seed,
        "scenario": scenario,
        "download_time_s": BASE_TIME[scheduler] + seed / 10,
        "chunk_times_s": [BASE_TIME[scheduler] + seed / 10],
        "completion_gap_s": 0.01 * seed,
        "bytes_by_path": {name: 1000 * (i + 1) * seed for i, name in enumerate(names)},
        "reinjected_bytes": 0,
        "goodput_bps": 4e6,
        "throughput_by_path_bps": {name: 1e6 for name in names},
        "retransmissions_by_path": {name: i for i, name in enumerate(names)},
        "srtt_avg_s_by_path": {name: 0.06 for name in names},
        "events": 12345,
        "sim_time_s": 2.5,
        "wall_time_s": 0.01,
        "data_packets": 1000,
    }


def make(*, invalid: str | None = None, job_error: str | None = None) -> types.ModuleType:
    """The fake module; `invalid` makes validate() raise it, `job_error` fails every job."""
    core = types.ModuleType("mpsched._core")
    core.calls = []

    def version() -> str:
        return "0.0.0-fake"

    def schedulers():
        return list(SCHEDULERS)

    def validate(scenario_json: str, scheduler: str) -> None:
        json.loads(scenario_json)
        core.calls.append(("validate", scheduler))
        if invalid:
            raise ValueError(invalid)

    def run(scenario_json: str, scheduler: str, seed: int, trace_path=None) -> str:
        core.calls.append(("run", scheduler, seed))
        if job_error:
            raise ValueError(job_error)
        return json.dumps(result(json.loads(scenario_json), scheduler, seed))

    def run_many(jobs, threads: int = 0):
        core.calls.append(("run_many", len(jobs), threads))
        if job_error:
            return [json.dumps({"error": job_error}) for _ in jobs]
        return [json.dumps(result(json.loads(s), name, seed)) for s, name, seed in jobs]

    core.version = version
    core.schedulers = schedulers
    core.validate = validate
    core.run = run
    core.run_many = run_many
    return core
