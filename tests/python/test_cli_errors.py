"""Bad input on the command line: exactly one line on stderr naming the file, key or line,
exit status 2, never a traceback (DESIGN.md "Scenario files (TOML) and units").

These run the real `python -m mpsched`, engine included: trace *contents* are checked by the
Rust core, so the last tests fail (rather than skip) until `mpsched._core` is built.
"""

from __future__ import annotations

import pytest

from conftest import EXAMPLES, assert_user_error, run_cli

PATH = """
[[path]]
name = "wifi"
rate = {rate}
rtt = "50ms"
"""

TRACE_PATH = """
[[path]]
name = "lte"
trace = "{trace}"
rtt = "70ms"
"""


def test_unknown_key(write):
    path = write("x.toml", PATH.format(rate='"7040kbit"') + 'rat = "1Mbit"\n')
    assert_user_error(run_cli("run", path), str(path), 'path.wifi: unknown key "rat"')


def test_unknown_top_level_key(write):
    path = write("x.toml", PATH.format(rate='"7040kbit"') + "[netwrok]\n")
    assert_user_error(run_cli("run", path), f'{path}: unknown key "netwrok"')


def test_bad_unit(write):
    path = write("wifi-lte.toml", PATH.format(rate='"70x"'))
    message = assert_user_error(run_cli("run", path), str(path), "path.wifi.rate")
    assert message.endswith('bad rate "70x" (expected e.g. 7040kbit, 9.185Mbit)')


def test_missing_unit(write):
    path = write("x.toml", PATH.format(rate="7040"))
    assert_user_error(run_cli("run", path), str(path), "path.wifi.rate", "a unit is required")


@pytest.mark.parametrize("rate", ['"0kbit"', '"-7040kbit"'])
def test_zero_or_negative_rate(write, rate):
    path = write("x.toml", PATH.format(rate=rate))
    message = assert_user_error(run_cli("run", path))
    assert message == f"mpsched: error: {path}: path.wifi.rate: rate must be positive"


def test_toml_syntax_error_names_the_line(write):
    path = write("x.toml", PATH.format(rate='"7040kbit"') + "loss = 0.0.1\n")
    assert_user_error(run_cli("run", path), f"{path}:6: TOML syntax error")


def test_set_unknown_key():
    proc = run_cli("run", EXAMPLES / "wifi-lte.toml", "--set", "path.lte.rat=9Mbit")
    assert_user_error(proc, "--set path.lte.rat", 'unknown key "rat"')


def test_set_unknown_path():
    proc = run_cli("compare", "--set", "path.5g.rtt=10ms")
    assert_user_error(proc, "--set path.5g.rtt", 'no path named "5g"')


def test_set_bad_value():
    proc = run_cli("run", EXAMPLES / "wifi-lte.toml", "--set", "workload.size=4MB/s")
    assert_user_error(proc, "--set workload.size", 'bad size "4MB/s"')


def test_missing_scenario_file(tmp_path):
    path = tmp_path / "nope.toml"
    assert_user_error(run_cli("run", path), str(path), "cannot read file")


def test_missing_trace_file(write):
    path = write("x.toml", TRACE_PATH.format(trace="lte.down"))
    assert_user_error(
        run_cli("run", path), str(path), "path.lte.trace", 'cannot read trace file "lte.down"'
    )


def test_unknown_cc_lists_the_implemented_ones(write):
    path = write("x.toml", PATH.format(rate='"1Mbit"') + '[transport]\ncc = "vegas"\n')
    assert_user_error(run_cli("run", path), "transport.cc", "lia, olia, balia, wvegas")


# ---- reported by the engine (mpsched._core.validate) ---------------------------------------------


def test_unknown_scheduler():
    proc = run_cli("run", EXAMPLES / "wifi-lte.toml", "-s", "fastest")
    assert_user_error(proc, 'unknown scheduler "fastest"', "minrtt")


def test_empty_trace_file(write):
    write("empty.down", "")
    path = write("x.toml", TRACE_PATH.format(trace="empty.down"))
    assert_user_error(run_cli("run", path), "empty.down")


def test_decreasing_trace_file(write):
    write("dec.down", "1\n5\n3\n7\n")
    path = write("x.toml", TRACE_PATH.format(trace="dec.down"))
    assert_user_error(run_cli("run", path), "dec.down:3")


def test_decreasing_trace_file_in_compare(write):
    write("dec.down", "1\n5\n3\n7\n")
    path = write("x.toml", TRACE_PATH.format(trace="dec.down"))
    assert_user_error(run_cli("compare", path, "--reps", "2"), "dec.down:3")
