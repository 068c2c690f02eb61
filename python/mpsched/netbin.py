"""Where the real-network binaries of `mpsched-net` are (`mpsched-proxy`, `mpsched-emu`).

`make build` installs every `target/release/mpsched-*` binary next to the venv's Python; a
source checkout without that step finds them in `target/release`.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from .errors import ExtensionMissingError

__all__ = ["find_binary"]


def find_binary(name: str) -> Path:
    """The path of binary `name`, or an installation error naming the fix."""
    candidates = [Path(sys.executable).parent / name]
    repo = Path(__file__).resolve().parents[2]
    candidates.append(repo / "target" / "release" / name)
    for c in candidates:
        if c.is_file():
            return c
    found = shutil.which(name)
    if found:
        return Path(found)
    raise ExtensionMissingError(
        f"{name} is not built; run `make build` (it installs {name} into the venv)"
    )
