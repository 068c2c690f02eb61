"""Units of DESIGN.md: rates in powers of 1000 bit/s, sizes decimal (KB) or binary (KiB),
times in ns/us/ms/s, and a unit always required."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpsched.errors import ScenarioError
from mpsched.units import (
    format_rate,
    format_size,
    format_time,
    parse_loss,
    parse_queue,
    parse_rate,
    parse_size,
    parse_time,
)


@pytest.mark.parametrize(
    "text, bps",
    [
        ("7040kbit", 7_040_000.0),
        ("9.185Mbit", 9_185_000.0),
        ("1Gbit", 1e9),
        ("100Mbps", 100e6),
        ("100mbit", 100e6),
        ("64kbps", 64_000.0),
        ("64Kbps", 64_000.0),
        ("2.5Mbit/s", 2.5e6),
        ("1200bit", 1200.0),
        ("1200bps", 1200.0),
        (" 10 Mbit ", 10e6),
        ("1e3kbit", 1e6),
        (".5Gbit", 5e8),
    ],
)
def test_rate_valid(text, bps):
    assert parse_rate(text) == bps


def test_rate_is_exact_decimal():
    # 9.185 * 10^6 in binary floating point is 9184999.999999998; we parse as decimals.
    assert parse_rate("9.185Mbit") == 9185000.0
    assert parse_rate("0.1Mbit") == 100000.0


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("70x", 'bad rate "70x" (expected e.g. 7040kbit, 9.185Mbit)'),
        ("7040", 'bad rate "7040": missing unit'),
        (7040, "bad rate 7040: a unit is required"),
        (7.04, "bad rate 7.04: a unit is required"),
        ("", 'bad rate ""'),
        ("Mbit", 'bad rate "Mbit"'),
        ("10MB/s", 'bad rate "10MB/s"'),  # bytes per second: refused, not guessed
        ("10 M bit", 'bad rate "10 M bit"'),
        ("1,5Mbit", 'bad rate "1,5Mbit"'),
        ("nanMbit", 'bad rate "nanMbit"'),
        (True, "bad rate true: expected a string"),
        (["1Mbit"], "bad rate ['1Mbit']: expected a string"),
        ("0kbit", "rate must be positive"),
        ("-5Mbit", "rate must be positive"),
        ("1e400Gbit", "is too large"),
    ],
)
def test_rate_errors(value, fragment):
    with pytest.raises(ScenarioError) as err:
        parse_rate(value)
    assert fragment in str(err.value)


@pytest.mark.parametrize(
    "text, n",
    [
        ("1MiB", 2**20),
        ("64KB", 64_000),
        ("64kB", 64_000),
        ("64KiB", 65_536),
        ("1448B", 1448),
        ("1.5KB", 1500),
        ("2GB", 2 * 10**9),
        ("1GiB", 2**30),
        ("3MB", 3_000_000),
        ("0B", 0),
    ],
)
def test_size_valid(text, n):
    assert parse_size(text) == n
    assert isinstance(parse_size(text), int)


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("64kb", 'bad size "64kb" (expected e.g. 1MiB, 64KB, 1448B)'),  # kilobits? refused
        ("1M", 'bad size "1M"'),
        ("1mib", 'bad size "1mib"'),
        ("1048576", 'bad size "1048576": missing unit'),
        (1048576, "a unit is required"),
        ("300pkt", "packets are only allowed for a queue"),
        ("1.5B", 'byte count "1.5B" is not a whole number'),
        ("-1KB", "size must not be negative"),
        ("1e30GiB", "too large"),
    ],
)
def test_size_errors(value, fragment):
    with pytest.raises(ScenarioError) as err:
        parse_size(value)
    assert fragment in str(err.value)


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("50ms", 0.05),
        ("10us", 1e-5),
        ("10\u00b5s", 1e-5),
        ("10\u03bcs", 1e-5),
        ("1.5s", 1.5),
        ("250ns", 2.5e-7),
        ("0s", 0.0),
        ("70ms", 0.07),
    ],
)
def test_time_valid(text, seconds):
    assert parse_time(text) == seconds


def test_time_negative_only_when_allowed():
    assert parse_time("-3s", allow_negative=True) == -3.0
    with pytest.raises(ScenarioError, match="time must not be negative"):
        parse_time("-3s")


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("50", 'bad time "50": missing unit (expected e.g. 50ms, 10us, 1.5s)'),
        (50, "bad time 50: a unit is required"),
        ("50 msec", 'bad time "50 msec"'),
        ("1min", 'bad time "1min"'),
        ("5MS", 'bad time "5MS"'),
    ],
)
def test_time_errors(value, fragment):
    with pytest.raises(ScenarioError) as err:
        parse_time(value)
    assert fragment in str(err.value)


@pytest.mark.parametrize(
    "text, spec",
    [
        ("50ms", {"unit": "time", "value": 0.05}),
        ("300pkt", {"unit": "packets", "value": 300}),
        ("300pkts", {"unit": "packets", "value": 300}),
        ("64KB", {"unit": "bytes", "value": 64_000}),
        ("64KiB", {"unit": "bytes", "value": 65_536}),
        ("unlimited", {"unit": "unlimited"}),
    ],
)
def test_queue_kinds(text, spec):
    assert parse_queue(text) == spec


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("50x", 'bad queue "50x" (expected e.g. 50ms, 300pkt, 64KB)'),
        (300, "bad queue 300: a unit is required"),
        ("1.5pkt", 'packet count "1.5pkt" is not a whole number'),
        ("-1ms", "queue must not be negative"),
        ("-1pkt", "queue must not be negative"),
    ],
)
def test_queue_errors(value, fragment):
    with pytest.raises(ScenarioError) as err:
        parse_queue(value)
    assert fragment in str(err.value)


def test_loss():
    assert parse_loss(0) == 0.0
    assert parse_loss(0.01) == 0.01
    for bad in (1, 1.0, -0.1, float("nan"), "1%", True):
        with pytest.raises(ScenarioError):
            parse_loss(bad)


def test_errors_are_one_line():
    with pytest.raises(ScenarioError) as err:
        parse_rate("7\n0x")
    assert "\n" not in str(err.value)


def test_canonical_spellings():
    assert format_rate(7_040_000.0) == "7.04Mbit"
    assert format_rate(9_185_000.0) == "9.185Mbit"
    assert format_rate(1e9) == "1Gbit"
    assert format_rate(2.5e6) == "2.5Mbit"
    assert format_size(2**20) == "1MiB"
    assert format_size(64_000) == "64KB"
    assert format_size(1448) == "1448B"
    assert format_time(0.05) == "50ms"
    assert format_time(1.5) == "1.5s"
    assert format_time(1e-5) == "10us"
    assert format_time(0.0) == "0s"


# Round trips: a value printed by mpsched can be pasted back into a scenario unchanged.

_positive_floats = st.floats(min_value=1e-300, max_value=1e300, allow_nan=False)


@given(_positive_floats)
def test_rate_round_trip(bps):
    assert parse_rate(format_rate(bps)) == bps


@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False))
def test_time_round_trip(seconds):
    assert parse_time(format_time(seconds), allow_negative=True) == seconds


@given(st.integers(min_value=0, max_value=2**63))
def test_size_round_trip(n):
    assert parse_size(format_size(n)) == n


@given(
    st.integers(min_value=1, max_value=10**9),
    st.sampled_from(
        [("kbit", 10**3), ("Mbps", 10**6), ("Gbit", 10**9), ("bit", 1), ("kbps", 10**3)]
    ),
)
def test_rate_integer_multiples_are_exact(n, unit):
    suffix, factor = unit
    assert parse_rate(f"{n}{suffix}") == float(n * factor)


@given(
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from([("B", 1), ("KB", 10**3), ("KiB", 2**10), ("MiB", 2**20), ("GB", 10**9)]),
)
def test_size_integer_multiples_are_exact(n, unit):
    suffix, factor = unit
    assert parse_size(f"{n}{suffix}") == n * factor
