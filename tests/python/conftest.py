"""Shared fixtures: the examples, scratch scenario files, and running the CLI as a user does."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# An installed mpsched (maturin develop, pip install) wins; a bare checkout tests its sources.
if importlib.util.find_spec("mpsched") is None:
    sys.path.insert(0, str(ROOT / "python"))

import mpsched  # noqa: E402 - needs the path set up above

EXAMPLES = ROOT / "examples"
# Subprocesses must import the same mpsched as this process does.
PACKAGE_PARENT = str(Path(mpsched.__file__).resolve().parent.parent)


@pytest.fixture
def write(tmp_path):
    """write("x.toml", text) -> path of a new file under tmp_path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    return write


def run_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """`python -m mpsched ARGS...` in a fresh interpreter, as a user would run it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    env.pop("MPSCHED_DEBUG", None)
    # Wide and colourless, so assertions see whole words rather than wrapped, styled ones.
    env.update({"NO_COLOR": "1", "COLUMNS": "200", "TERM": "dumb"})
    return subprocess.run(
        [sys.executable, "-m", "mpsched", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def assert_user_error(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit status 2, nothing on stdout, and exactly one `mpsched: error:` line naming
    each of `fragments`; returns the message."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("mpsched: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    return lines[0]
