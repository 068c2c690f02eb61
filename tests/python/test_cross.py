"""Competing traffic on a path (`cross = {tcp, cc, cbr}`, docs/scenarios.md): parsing, `--set`
of one key, one-line errors, and the result keys of a run."""

from __future__ import annotations

import json

import pytest

from conftest import assert_user_error, run_cli
from mpsched.scenario import load_scenario

BASE = """
[[path]]
name = "wifi"
rate = "20Mbit"
rtt = "40ms"
{cross}
[workload]
kind = "bulk"
duration = "5s"
"""


def scenario(write, cross: str = "", overrides=None):
    return load_scenario(write("x.toml", BASE.format(cross=cross)), overrides)


def test_cross_table_resolves_to_si_units(write):
    s = scenario(write, 'cross = { tcp = 2, cc = "reno", cbr = "2Mbit" }')
    assert s["paths"][0]["cross"] == {"tcp_flows": 2, "cc": "reno", "cbr_bps": 2e6}


def test_no_cross_key_leaves_the_path_as_it_was(write):
    assert "cross" not in scenario(write)["paths"][0]
    # An all-zero table is no competing traffic either.
    assert "cross" not in scenario(write, "cross = { tcp = 0 }")["paths"][0]


def test_set_one_cross_key_keeps_the_others(write):
    s = scenario(write, "cross = { tcp = 1 }", ["path.wifi.cross.cbr=3Mbit"])
    assert s["paths"][0]["cross"] == {"tcp_flows": 1, "cc": None, "cbr_bps": 3e6}


@pytest.mark.parametrize(
    ("setting", "fragment"),
    [
        ("path.wifi.cross.tcp=-1", "tcp"),
        ("path.wifi.cross.tcp=65", "0 to 64"),
        ("path.wifi.cross.cc=bbr", "bbr"),
        ("path.wifi.cross.flows=2", "flows"),
        ("path.wifi.cross.cbr=fast", "cbr"),
        ("path.wifi.cross=3", "table"),
    ],
)
def test_bad_cross_settings_are_one_line_errors(write, setting, fragment):
    path = write("x.toml", BASE.format(cross=""))
    proc = run_cli("run", path, "-s", "single", "--set", setting)
    assert_user_error(proc, "path.wifi.cross", fragment)


def test_cc_without_flows_is_refused(write):
    path = write("x.toml", BASE.format(cross='cross = { cc = "reno" }'))
    assert_user_error(run_cli("run", path, "-s", "single"), "cross", "tcp")


def test_run_reports_the_cross_traffic_share(write):
    path = write("x.toml", BASE.format(cross='cross = { tcp = 1, cbr = "4Mbit" }'))
    proc = run_cli("run", path, "-s", "single", "--json")
    assert proc.returncode == 0, proc.stderr
    v = json.loads(proc.stdout)
    tcp = v["cross_tcp_goodput_bps_by_path"]["wifi"]
    cbr = v["cross_cbr_bps_by_path"]["wifi"]
    # Three senders on 20 Mbit/s: the CBR load gets (nearly) its rate, the TCP flows split the
    # rest, and nobody gets more than the line rate.
    assert 3.2e6 < cbr <= 4e6
    assert tcp > 2e6 and v["goodput_bps"] > 2e6
    assert tcp + cbr + v["goodput_bps"] <= 20e6
    assert v["scenario"]["paths"][0]["cross"]["tcp_flows"] == 1
