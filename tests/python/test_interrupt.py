"""Ctrl-C (a real SIGINT to a real `mpsched` process) stops long commands within a second,
keeps what is done and says how to resume (issue 13, "Must show")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import EXAMPLES, PACKAGE_PARENT

pytest.importorskip("mpsched._core")

# The bound: Ctrl-C stops run, compare, sweep within one second.
STOP_WITHIN_S = 1.0


def start(*args: str) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    env.update({"NO_COLOR": "1", "COLUMNS": "200", "TERM": "dumb"})
    return subprocess.Popen(
        [sys.executable, "-m", "mpsched", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # A shell's background jobs ignore SIGINT, and children inherit that: undo it, as a
        # terminal's Ctrl-C would find it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def interrupt_after(proc: subprocess.Popen, seconds: float) -> tuple[float, str, str]:
    """SIGINT after `seconds`; returns (seconds from signal to exit, stdout, stderr)."""
    time.sleep(seconds)
    assert proc.poll() is None, "finished before the signal: " + proc.stderr.read()
    proc.send_signal(signal.SIGINT)
    sent = time.perf_counter()
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return time.perf_counter() - sent, out, err


def test_compare_sigint_stops_within_a_second_with_a_resume_hint():
    proc = start("compare", "--reps", "100000")
    took, out, err = interrupt_after(proc, 4.0)
    assert proc.returncode == 130, err
    assert took < STOP_WITHIN_S, f"took {took:.2f} s"
    # The comparison of the runs done so far, then one line saying how to go on.
    assert "minrtt" in out
    assert "interrupted" in err and "--seed" in err and "--reps" in err, err
    assert "Traceback" not in err


def test_run_sigint_stops_the_engine_within_a_second():
    # 1,024 GiB over two paths with no time limit to speak of: hours of simulation.
    proc = start(
        "run",
        EXAMPLES / "wifi-lte.toml",
        "--set",
        "workload.size=1024GiB",
        "--set",
        "sim.max_time=10000000s",
    )
    took, _, err = interrupt_after(proc, 3.0)
    assert proc.returncode == 130, err
    assert took < STOP_WITHIN_S, f"took {took:.2f} s"
    assert err.strip().startswith("mpsched: error: interrupted"), err


def test_sweep_sigint_keeps_stored_runs_and_says_resume(tmp_path):
    sweep = tmp_path / "long.toml"
    sweep.write_text(
        f'base = "{EXAMPLES / "wifi-lte.toml"}"\nschedulers = ["minrtt", "dems-f"]\n'
        'reps = 10000\n[axes]\n"path.wifi.loss" = [0.001, 0.01]\n'
    )
    db = tmp_path / "long.db"
    proc = start("sweep", sweep, "--db", db)
    took, _, err = interrupt_after(proc, 8.0)
    assert proc.returncode == 130, err
    assert took < STOP_WITHIN_S, f"took {took:.2f} s"
    assert "run the same command again to resume" in err, err
    import mpsched

    assert len(mpsched.load(db)) > 0
