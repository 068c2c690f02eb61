"""The one place that imports the Rust extension `mpsched._core`.

Imported lazily, on first use, so that `import mpsched`, `mpsched --help` and scenario
validation work without a built extension, and a missing build is reported as one clear
message instead of an ImportError deep in a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import threading
from collections.abc import Iterable, Iterator
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
    Ctrl-C the engine is told to stop (`_core.interrupt`), which every running simulation
    notices within a few thousand events, and KeyboardInterrupt is raised here."""
    import concurrent.futures

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="mpsched-run")
    with deferred_sigint() as stopped:
        future = pool.submit(call, function, *args)
        try:
            while not (stopped.is_set() or future.done()):
                concurrent.futures.wait([future], timeout=POLL_S)
            # A run that Ctrl-C stopped ends early, as a result: not one to hand on.
            if stopped.is_set():
                stop_engine(pool)
                raise KeyboardInterrupt
            return future.result()
        finally:
            pool.shutdown(wait=False)


# How often a thread waiting for runs looks whether Ctrl-C came.
POLL_S = 0.1


@contextlib.contextmanager
def deferred_sigint() -> Iterator[threading.Event]:
    """While runs are in flight on worker threads, Ctrl-C sets the event this yields and
    stops the engine instead of raising KeyboardInterrupt wherever the main thread happens to
    be. An exception raised at an arbitrary bytecode can leave a lock of `concurrent.futures`
    held (e.g. half-way through `wait`'s acquiring of every future's condition), and the pool
    then never shuts down: the caller polls the event and raises at a point of its choosing.
    Outside the main thread, or when SIGINT is not Python's default handler (a shell's
    background job ignores it), nothing changes and the event is never set."""
    stopped = threading.Event()
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield stopped
        return

    def on_sigint(signum: int, frame: Any) -> None:
        # The event first: a run that the engine stops must find it set when it is collected.
        stopped.set()
        stop = getattr(core(), "interrupt", None)
        if stop is not None:
            stop(True)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield stopped
    finally:
        signal.signal(signal.SIGINT, previous)
        if stopped.is_set():
            # The caller has stopped and collected its runs: allow runs again.
            stop = getattr(core(), "interrupt", None)
            if stop is not None:
                stop(False)
    if stopped.is_set():
        # Ctrl-C after the caller last looked (e.g. as the last run ended): delivered now.
        raise KeyboardInterrupt


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
