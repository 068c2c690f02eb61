"""Errors the user can fix.

A `ScenarioError` is a mistake in what the user typed or wrote (a scenario file, a `--set`, a
scheduler name, a trace file): the CLI prints its message as one line and exits with status 2,
never with a traceback. It subclasses `ValueError` so that library callers who already catch
the `ValueError` raised by `mpsched._core` catch ours with the same clause.
"""

from __future__ import annotations

import re

__all__ = ["ExtensionMissingError", "Interrupted", "RealRunError", "ScenarioError"]


class ScenarioError(ValueError):
    """A user error, with a one-line message naming the file, key or line at fault."""

    def __init__(self, message: str) -> None:
        # One line is a contract (DESIGN.md, "Scenario files"): fold anything multi-line a
        # lower layer handed us (a TOML parser, the Rust core) rather than trusting it.
        super().__init__(re.sub(r"\s*[\r\n]+\s*", " ", str(message)).strip())

    @property
    def message(self) -> str:
        return str(self.args[0])

    def at(self, location: str) -> ScenarioError:
        """The same error, prefixed with where it happened (`file: key: ...`)."""
        return ScenarioError(f"{location}: {self.message}")


class RealRunError(RuntimeError):
    """A real component (the emulator, the kernel runner) failed while running, after the input
    was accepted: the CLI prints its one-line message and exits with status 1 (not an internal
    error: the machine, not mpsched, said no)."""


class ExtensionMissingError(ImportError):
    """The Rust extension `mpsched._core` is not built or not importable."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a long command: `hint` says what was kept and how to go on, `partial`
    holds what finished (e.g. a comparison of the runs done so far)."""

    def __init__(self, hint: str, partial: object = None) -> None:
        super().__init__(hint)
        self.hint = hint
        self.partial = partial
