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
        # NAME+RECEIVER runs NAME with a receiver policy (e.g. rr+rtsc); NAME:ARG passes its
        # arguments to the scheduler. The engine checks both. `fixed-split:B0[,B1...]` is not in
        # the table (it needs its split) but runs one split by hand.
        base = name.split("+", 1)[0]
        stem, has_arg = base.split(":", 1)[0], ":" in base
        if base not in known and stem not in known and not (stem == "fixed-split" and has_arg):
            raise ScenarioError(f'unknown scheduler "{name}" (known: {", ".join(known)})')


def interruptible(function: Callable[..., T], *args: Any) -> T:
    """Call an engine function in a worker thread so that Ctrl-C reaches Python at once: on
    KeyboardInterrupt the engine is told to stop (`_core.interrupt`), which every running
    simulation notices within a few thousand events, and the interrupt is re-raised."""
    import concurrent.futures

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="mpsched-run")
    future = pool.submit(call, function, *args)
    try:
        return future.result()
    except KeyboardInterrupt:
        stop_engine(pool)
        raise
    finally:
        pool.shutdown(wait=False)


def stop_engine(pool: Any = None) -> None:
    """Stop every running simulation, wait for `pool`'s threads, then allow runs again."""
    module = core()
    stop = getattr(module, "interrupt", None)
    if stop is not None:
        stop(True)
    try:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    finally:
        if stop is not None:
            stop(False)
