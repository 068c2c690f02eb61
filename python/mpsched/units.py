"""Quantities with units, as written in scenario files and `--set`, to SI numbers.

Rates are bits per second with decimal prefixes (`kbit`, `Mbit`, `Gbit`, or `kbps`...): a
link's line rate is quoted that way in every paper and by every operator. Sizes distinguish
decimal (`KB`, `MB`, `GB` = 10^3, 10^6, 10^9 bytes) from binary (`KiB`, `MiB`, `GiB`) because
workloads in the papers are quoted both ways and 1 MB != 1 MiB matters at the precision the
validation tests check. Times take `ns`, `us`, `ms`, `s`.

A unit is mandatory: `rate = 7040` could be bits, kilobits or bytes per second, and a silent
guess is worse than an error. Numbers are parsed as decimals so that `"9.185Mbit"` is exactly
9185000 bit/s and `"70ms"` halves to exactly 35 ms before anything becomes a float.

Every error is a `ScenarioError` whose message says what was wrong and what is expected; the
caller (scenario.py) prefixes it with the file and key.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from .errors import ScenarioError

__all__ = [
    "format_rate",
    "format_size",
    "format_time",
    "parse_loss",
    "parse_queue",
    "parse_rate",
    "parse_size",
    "parse_time",
    "rate_decimal",
    "time_decimal",
]

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_QUANTITY = re.compile(rf"^\s*({_NUMBER})\s*(\S*)\s*$")

_RATE_UNITS: dict[str, Decimal] = {}
for _prefix, _factor in (("", 1), ("k", 10**3), ("m", 10**6), ("g", 10**9)):
    for _suffix in ("bit", "bps", "bit/s"):
        # The prefix's case is not significant for rates (nobody means millibits), but the
        # "b" is: "MB/s" is bytes and is rejected rather than guessed.
        _RATE_UNITS[_prefix + _suffix] = Decimal(_factor)
        _RATE_UNITS[_prefix.upper() + _suffix] = Decimal(_factor)

_SIZE_UNITS: dict[str, Decimal] = {
    "B": Decimal(1),
    "kB": Decimal(10**3),
    "KB": Decimal(10**3),
    "MB": Decimal(10**6),
    "GB": Decimal(10**9),
    "KiB": Decimal(2**10),
    "MiB": Decimal(2**20),
    "GiB": Decimal(2**30),
}
_PACKET_UNITS = ("pkt", "pkts")

_TIME_UNITS: dict[str, Decimal] = {
    "s": Decimal(1),
    "ms": Decimal("1e-3"),
    "us": Decimal("1e-6"),
    "\u00b5s": Decimal("1e-6"),  # micro sign
    "\u03bcs": Decimal("1e-6"),  # Greek mu, what most keyboards produce
    "ns": Decimal("1e-9"),
}

_RATE_EXAMPLES = "7040kbit, 9.185Mbit"
_SIZE_EXAMPLES = "1MiB, 64KB, 1448B"
_TIME_EXAMPLES = "50ms, 10us, 1.5s"
_QUEUE_EXAMPLES = "50ms, 300pkt, 64KB"

# Sizes end up in u64 fields of the Rust scenario.
_U64_MAX = 2**64 - 1


def _show(value: Any) -> str:
    """A value as the user wrote it: strings quoted, TOML numbers and booleans bare."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def _split(value: Any, what: str, examples: str) -> tuple[Decimal, str]:
    """Split `"9.185Mbit"` into (Decimal("9.185"), "Mbit"); reject anything without a unit."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ScenarioError(f"bad {what} {_show(value)}: expected a string such as {examples}")
    if not isinstance(value, str):
        # A TOML number: the likeliest mistake is a forgotten unit, so say how to write one.
        raise ScenarioError(
            f"bad {what} {_show(value)}: a unit is required, written as a string "
            f"(expected e.g. {examples})"
        )
    match = _QUANTITY.match(value)
    if match is None:
        raise ScenarioError(f"bad {what} {_show(value)} (expected e.g. {examples})")
    number, unit = match.groups()
    if not unit:
        raise ScenarioError(f"bad {what} {_show(value)}: missing unit (expected e.g. {examples})")
    try:
        return Decimal(number), unit
    except InvalidOperation:  # pragma: no cover - the regex only admits valid decimals
        raise ScenarioError(f"bad {what} {_show(value)} (expected e.g. {examples})") from None


def rate_decimal(value: Any) -> Decimal:
    """A rate in bits per second, exactly; must be positive."""
    number, unit = _split(value, "rate", _RATE_EXAMPLES)
    factor = _RATE_UNITS.get(unit)
    if factor is None:
        raise ScenarioError(f"bad rate {_show(value)} (expected e.g. {_RATE_EXAMPLES})")
    bps = number * factor
    if bps <= 0:
        raise ScenarioError("rate must be positive")
    if not math.isfinite(float(bps)):
        raise ScenarioError(f"rate {_show(value)} is too large")
    return bps


def parse_rate(value: Any) -> float:
    """`"7040kbit"` -> 7040000.0 bits per second."""
    bps = float(rate_decimal(value))
    if bps <= 0:
        # Positive as a decimal but below the smallest float (e.g. "1e-400bit").
        raise ScenarioError("rate must be positive")
    return bps


def _whole(amount: Decimal, value: Any, what: str) -> int:
    if amount != amount.to_integral_value():
        raise ScenarioError(f"{what} {_show(value)} is not a whole number")
    if amount > _U64_MAX:
        raise ScenarioError(f"size {_show(value)} is too large")
    return int(amount)


def _size_or_packets(value: Any, *, packets: bool, what: str, examples: str) -> tuple[str, int]:
    number, unit = _split(value, what, examples)
    if number < 0:
        raise ScenarioError(f"{what} must not be negative")
    if unit in _PACKET_UNITS:
        if not packets:
            raise ScenarioError(
                f"bad {what} {_show(value)}: packets are only allowed for a queue "
                f"(expected e.g. {_SIZE_EXAMPLES})"
            )
        return "packets", _whole(number, value, "packet count")
    factor = _SIZE_UNITS.get(unit)
    if factor is None:
        raise ScenarioError(f"bad {what} {_show(value)} (expected e.g. {examples})")
    return "bytes", _whole(number * factor, value, "byte count")


def parse_size(value: Any) -> int:
    """`"1MiB"` -> 1048576 bytes; a whole, non-negative number of bytes."""
    return _size_or_packets(value, packets=False, what="size", examples=_SIZE_EXAMPLES)[1]


def time_decimal(value: Any, *, allow_negative: bool = False) -> Decimal:
    """A time in seconds, exactly."""
    number, unit = _split(value, "time", _TIME_EXAMPLES)
    factor = _TIME_UNITS.get(unit)
    if factor is None:
        raise ScenarioError(f"bad time {_show(value)} (expected e.g. {_TIME_EXAMPLES})")
    seconds = number * factor
    if seconds < 0 and not allow_negative:
        raise ScenarioError("time must not be negative")
    if not math.isfinite(float(seconds)):
        raise ScenarioError(f"time {_show(value)} is too large")
    return seconds


def parse_time(value: Any, *, allow_negative: bool = False) -> float:
    """`"50ms"` -> 0.05 seconds. Only a clock offset may be negative."""
    return float(time_decimal(value, allow_negative=allow_negative))


def parse_queue(value: Any) -> dict[str, Any]:
    """A drop-tail buffer as the Rust `QueueSpec` JSON.

    `"50ms"` (seconds of line rate) -> {"unit": "time", "value": 0.05}; `"300pkt"` ->
    {"unit": "packets", "value": 300}; `"64KB"` -> {"unit": "bytes", "value": 64000};
    `"unlimited"` -> {"unit": "unlimited"}; `"pipe:90pkt"` -> {"unit": "pipe", "value": 90}:
    at most 90 packets in the link, queued or still propagating.
    """
    if isinstance(value, str) and value.strip() == "unlimited":
        return {"unit": "unlimited"}
    if isinstance(value, str) and value.strip().startswith("pipe:"):
        rest = value.strip()[len("pipe:") :]
        try:
            kind, amount = _size_or_packets(rest, packets=True, what="queue", examples="90pkt")
        except ScenarioError:
            kind, amount = "", 0
        if kind != "packets" or amount < 1:
            raise ScenarioError(
                f'queue {_show(value)}: a pipe limit is a packet count, e.g. "pipe:90pkt"'
            )
        return {"unit": "pipe", "value": amount}
    number, unit = _split(value, "queue", _QUEUE_EXAMPLES)
    if number == 0:
        # The engine always keeps the packet in service, so a zero queue would silently be a
        # one-packet queue: refuse it rather than simulate something else than was asked.
        raise ScenarioError(
            f"queue {_show(value)} holds no packet; give at least 1pkt (or a time or size)"
        )
    if unit in _TIME_UNITS:
        if number < 0:
            raise ScenarioError("queue must not be negative")
        return {"unit": "time", "value": float(number * _TIME_UNITS[unit])}
    kind, amount = _size_or_packets(value, packets=True, what="queue", examples=_QUEUE_EXAMPLES)
    return {"unit": kind, "value": amount}


def parse_loss(value: Any) -> float:
    """A per-packet loss probability, 0 <= p < 1 (p = 1 would be a dead link: use outages)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(f"bad loss {_show(value)}: expected a probability such as 0.01")
    p = float(value)
    if not (0.0 <= p < 1.0):  # also rejects nan
        raise ScenarioError(f"loss must be at least 0 and below 1 (got {_show(value)})")
    return p


# Canonical spellings: the shortest exact string that parses back to the same number. They are
# what `--set` sweeps and reports print, so a printed value can be pasted back unchanged.


def _exact(x: float, what: str) -> Decimal:
    if isinstance(x, bool) or not math.isfinite(x):
        raise ValueError(f"cannot format {what} {x!r}")
    # repr() is the shortest string that reads back as the same float; Decimal keeps it exact.
    return Decimal(repr(float(x)))


def _plain(d: Decimal) -> str:
    text = format(d.normalize(), "f")
    return text


def format_rate(bps: float) -> str:
    """7040000.0 -> "7040kbit"; exact: `parse_rate(format_rate(x)) == x`."""
    d = _exact(bps, "rate")
    for unit, power in (("Gbit", 9), ("Mbit", 6), ("kbit", 3)):
        if abs(d) >= Decimal(10) ** power:
            return _plain(d.scaleb(-power)) + unit
    return _plain(d) + "bit"


def format_size(n: int) -> str:
    """1048576 -> "1MiB", 64000 -> "64KB", 1448 -> "1448B"; exact."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"cannot format size {n!r}")
    for unit, factor in (
        ("GiB", 2**30),
        ("MiB", 2**20),
        ("KiB", 2**10),
        ("GB", 10**9),
        ("MB", 10**6),
        ("KB", 10**3),
    ):
        if n and n % factor == 0:
            return f"{n // factor}{unit}"
    return f"{n}B"


def format_time(seconds: float) -> str:
    """0.05 -> "50ms"; exact: `parse_time(format_time(x), allow_negative=True) == x`."""
    d = _exact(seconds, "time")
    for unit, power in (("s", 0), ("ms", -3), ("us", -6)):
        if abs(d) >= Decimal(10) ** power:
            return _plain(d.scaleb(-power)) + unit
    if d == 0:
        return "0s"
    return _plain(d.scaleb(9)) + "ns"
