"""The one place that imports the Rust extension `mpsched._core`.

Imported lazily, on first use, so that `import mpsched`, `mpsched --help` and scenario
validation work without a built extension, and a missing build is reported as one clear
message instead of an ImportError deep in a traceback.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from types import ModuleType
from typing import Any, Callable, TypeVar

from .errors import ExtensionMissingError, ScenarioError

T = TypeVar("T")


def core() -> ModuleType:
    """The extension module; raises ExtensionMissingError with a how-to-fix message."""
    try:
        # import_module looks in sys.modules first, so this is cheap after the first call.
        return importlib.import_module("mpsched._core")
    except ImportError as exc:
        raise ExtensionMissingError(
            f"the Rust extension mpsched._core is not available ({exc}); build it with "
            "`maturin develop --release` from the repository root, or `pip install .`"
        ) from exc


def call(function: Callable[..., T], *args: Any) -> T:
    """Call a `_core` function; its ValueError is a user error (bad scenario, trace, name)."""
    try:
        return function(*args)
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None


def schedulers() -> list[tuple[str, str]]:
    """(name, paper reference) for every scheduler the engine knows, in the engine's order."""
    return [(str(name), str(ref)) for name, ref in core().schedulers()]


def check_schedulers(names: Iterable[str]) -> None:
    """Reject scheduler names whose base name the engine does not know, listing the known ones.

    Parameterized forms (`single:wifi`, `minrtt:noor`, `dems-f:k=2`, `backup:lte`) pass here
    when their base name is known: the engine alone knows which arguments each scheduler takes,
    and `_core.validate` (called before any run) answers with its own one-line error."""
    known = [name for name, _ in schedulers()]
    for name in names:
        if name not in known and name.split(":", 1)[0] not in known:
            raise ScenarioError(f'unknown scheduler "{name}" (known: {", ".join(known)})')
