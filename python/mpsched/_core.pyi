"""Type stub for the Rust extension `mpsched._core` (crates/py).

Every function takes and returns plain Python values; scenarios and results cross the boundary
as JSON text so that the schema lives in one place (crates/sim/src/scenario.rs for the resolved
scenario, DESIGN.md "Metrics" for results). Errors in a scenario or trace file raise
`ValueError` with a one-line message naming the file, key or line.
"""

def version() -> str:
    """Engine version; part of the results-store content hash."""

def schedulers() -> list[tuple[str, str]]:
    """(CLI name, paper reference) for every scheduler the engine knows."""

def validate(scenario_json: str, scheduler: str) -> None:
    """Check a resolved scenario (and trace files it names) and a scheduler name without running.

    Raises ValueError with a one-line message."""

def run(scenario_json: str, scheduler: str, seed: int, trace_path: str | None = None) -> str:
    """Run one simulation; returns the result object of DESIGN.md as JSON text.

    The GIL is released while the simulation runs. `trace_path`, when given, receives the
    per-packet event trace (Parquet is written by Python from the returned columns; see
    run_traced)."""

def run_many(jobs: list[tuple[str, str, int]], threads: int = 0) -> list[str]:
    """Run (scenario_json, scheduler, seed) jobs in parallel on `threads` Rust threads
    (0 = all cores), GIL released; results in job order. A job that fails returns a JSON
    object {"error": "..."} in its slot instead of raising."""

def run_traced(scenario_json: str, scheduler: str, seed: int) -> tuple[str, dict[str, list]]:
    """Like run(), plus per-packet events as columns: time_s, side ("sender"/"receiver"),
    path, kind ("send"/"reinject"/"retransmit"/"arrive"/"ack"/"deliver"), dsn, len,
    and periodic per-path samples (cwnd, srtt, owd) under keys prefixed "sample_"."""
