"""Finding the project's compiled helper programs (`mpsched-emu`, `mpsched-proxy`, ...).

`make build` installs every `target/release/mpsched-*` binary into the virtualenv's `bin/`; a
binary there wins over one on PATH, so a checkout's own build is what runs.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from .errors import ScenarioError

__all__ = ["find_binary"]


def find_binary(name: str) -> str:
    """Absolute path of the helper program `name`: the venv's bin directory, then PATH.

    Raises a one-line `ScenarioError` when it is not installed."""
    venv_bin = Path(sys.executable).parent
    candidate = venv_bin / name
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    raise ScenarioError(
        f"{name} is not installed (looked in {venv_bin} and PATH); run `make build`, which "
        f"builds it with `cargo build --release -p mpsched-net --bins`"
    )
