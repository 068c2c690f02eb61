"""Type stub for the Rust extension `mpsched._core` (crates/py).

Every function takes and returns plain Python values; scenarios and results cross the boundary
as JSON text so that the schema lives in one place (crates/sim/src/scenario.rs for the resolved
scenario, DESIGN.md "Metrics" for results). Errors in a scenario or trace file raise
`ValueError` with a one-line message naming the file, key or line.
"""

def interrupt(on: bool) -> None:
    """Ctrl-C: True stops every running simulation at its next look (failure "interrupted");
    False allows runs again."""

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
    and periodic per-path samples (cwnd, srtt, owd; the STMS gap in segments, NaN for other
    schedulers) under keys prefixed "sample_"."""

def trace_gen(
    kind: str,
    duration_s: float,
    *,
    rate_bps: float | None = None,
    rates_bps: list[float] | None = None,
    step_s: float | None = None,
    mean_bps: float | None = None,
    stddev_bps: float | None = None,
    interval_s: float = 1.0,
    seed: int | None = None,
    dip_every_s: float | None = None,
    dip_length_s: float | None = None,
    dip_offset_s: float | None = None,
    dip_factor: float | None = None,
) -> str:
    """A synthetic bandwidth trace (crates/sim/src/tracegen.rs) as mahimahi text.

    kind: "constant" (rate_bps); "steps" (rates_bps held step_s each, in order, or drawn
    uniformly when seed is given); "random" (a lognormal rate per interval_s with mean
    mean_bps and standard deviation stddev_bps, seeded, its mean exact); "handover" (rate_bps
    divided by dip_factor, default 10, for dip_length_s, default 2 s, every dip_every_s,
    default 15 s, first at dip_offset_s, default dip_every_s: Cech, TUM 2020 §5); "outage" (the
    same with no capacity at all during the dips). Any kind takes dips when dip_every_s is
    given. Bad arguments raise ValueError with a one-line message."""
