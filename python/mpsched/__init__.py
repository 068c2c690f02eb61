"""mpsched: design, compare and deploy multipath transport schedulers.

    >>> import mpsched
    >>> result = mpsched.run("examples/wifi-lte.toml", scheduler="dems-f", seed=1)
    >>> result["download_time_s"]
    >>> table = mpsched.compare(schedulers=["minrtt", "dems-f", "oracle"], reps=10)
    >>> table["summary"]["dems-f"]["download_time_s"]["median"]
    >>> df = mpsched.sweep("fig13.toml", db="fig13.db")   # pandas DataFrame, one row per run
    >>> df = mpsched.load("fig13.db")                     # the same, from the store
    >>> trace = mpsched.run_traced("examples/wifi-lte.toml", scheduler="minrtt")

Scenarios are TOML files (DESIGN.md), TOML-shaped dicts, or resolved dicts from
`load_scenario`; `set=["path.lte.rtt=270ms"]` overrides keys as `--set` does. User errors
raise `ScenarioError` (a ValueError) with a one-line message. The Rust engine
(`mpsched._core`) is imported on first use, so scenario validation works without it.
"""

from __future__ import annotations

from . import sweep  # a callable module: mpsched.sweep(...) runs a sweep
from .errors import ExtensionMissingError, ScenarioError
from .runner import compare, run, run_traced
from .scenario import load_scenario
from .store import load


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return "0+unknown"
    try:
        return version("mpsched")
    except PackageNotFoundError:
        # Running from a source tree that was never installed (PYTHONPATH=python).
        return "0+unknown"


__version__ = _version()

__all__ = [
    "ExtensionMissingError",
    "ScenarioError",
    "__version__",
    "compare",
    "load",
    "load_scenario",
    "run",
    "run_traced",
    "sweep",
]
