"""Real Linux beside the simulator: the link emulator and the kernel TCP/MPTCP baseline.

Both live in the Rust program `mpsched-emu` (crates/net); this module resolves and validates
the scenario (Python stays the one validator of scenario files) and hands the resolved JSON,
SI units, to it. See docs/emulator.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import RealRunError, ScenarioError
from .netbin import find_binary
from .scenario import to_json

__all__ = ["EMU_BINARY", "emu", "kernel_runs", "kernel_summary", "only_path"]

EMU_BINARY = "mpsched-emu"


def emu(args: Sequence[str], scenario: Mapping[str, Any] | None = None) -> int:
    """Runs `mpsched-emu ARGS` with the resolved scenario on stdin (as "-"), output passed
    through; returns its exit status. Ctrl-C reaches the emulator (same process group), which
    removes its namespaces; we wait for it to finish doing so."""
    cmd = [find_binary(EMU_BINARY), *args]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if scenario is not None else None)
    if scenario is not None:
        assert proc.stdin is not None
        proc.stdin.write(to_json(scenario).encode())
        proc.stdin.close()
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            continue


def kernel_runs(
    scenario: Mapping[str, Any],
    mode: str = "mptcp",
    reps: int = 1,
    seed: int = 1,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """`reps` downloads of the scenario's workload over real Linux (fresh connection each):
    `mode` is "mptcp" or "tcp:PATH". Returns one result per download with `run`'s keys."""
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise ScenarioError(f"reps must be at least 1, got {reps!r}")
    cmd = [find_binary(EMU_BINARY), "kernel", "-", "--mode", mode, "--reps", str(reps)]
    cmd += ["--seed", str(seed)]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(to_json(scenario).encode())
    proc.stdin.close()
    # Progress lines go through as they come; an error line is kept to be raised as ours, so
    # that the user sees it once.
    error = ""
    for raw in proc.stderr:
        line = raw.decode(errors="replace").rstrip()
        if line.startswith("mpsched: error: "):
            error = line.removeprefix("mpsched: error: ")
        elif progress and line:
            print_err(line)
    stdout = proc.stdout.read()
    status = proc.wait()
    if status != 0:
        message = f"kernel {mode}: {error or f'exit status {status}'}"
        if status == 2:
            raise ScenarioError(error or message)
        raise RealRunError(message)
    out = json.loads(stdout)
    return [dict(r, seed=seed + i) for i, r in enumerate(out["runs"])]


def kernel_summary(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Median/p90 per metric, as `compare` summarizes simulated runs."""
    from .runner import summarize

    return next(iter(summarize({"k": list(runs)}).values()))


def only_path(scenario: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The scenario with one path: what single-path TCP over that path sees."""
    paths = [p for p in scenario["paths"] if p["name"] == name]
    if not paths:
        raise ScenarioError(f'no path named "{name}"')
    return dict(scenario, paths=paths)


def print_err(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
