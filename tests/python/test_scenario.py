"""Scenario files -> the resolved scenario of crates/sim/src/scenario.rs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import EXAMPLES
from mpsched.errors import ScenarioError
from mpsched.scenario import default_scenario, load_scenario, resolve, to_json

WIFI_LTE_RESOLVED = {
    "paths": [
        {
            "name": "wifi",
            "forward": {
                "rate_bps": 7040000.0,
                "trace": None,
                "delay_s": 0.025,
                "queue": {"unit": "time", "value": 0.05},
                "loss": 0.0,
                "outages": [],
            },
            # Guo et al., MobiCom 2017, §3.2 footnote 2: the profile's uplink rates.
            "reverse": {
                "rate_bps": 2020000.0,
                "trace": None,
                "delay_s": 0.025,
                "queue": {"unit": "time", "value": 0.05},
                "loss": 0.0,
                "outages": [],
            },
        },
        {
            "name": "lte",
            "forward": {
                "rate_bps": 9185000.0,
                "trace": None,
                "delay_s": 0.035,
                "queue": {"unit": "time", "value": 0.5},
                "loss": 0.0,
                "outages": [],
            },
            "reverse": {
                "rate_bps": 2286000.0,
                "trace": None,
                "delay_s": 0.035,
                "queue": {"unit": "time", "value": 0.07},
                "loss": 0.0,
                "outages": [],
            },
        },
    ],
    "workload": {"kind": "chunk", "size_bytes": 1048576},
    "transport": {
        "cc": "cubic",
        "mss": 0,
        "init_cwnd": 10,
        "send_buffer_bytes": 4194304,
        "recv_buffer_bytes": None,  # autotuned as Linux, up to tcp_rmem[2] = 6 MiB
        "delayed_ack": True,
        "min_rto_s": 0.2,
        "slow_start_after_idle": True,
        "hystart": "linux",
        "pacing": False,
    },
    "sim": {"clock_offset_s": 0.0, "max_time_s": 3600.0},
}

MINIMAL = """
[[path]]
name = "a"
rate = "10Mbit"
rtt = "40ms"
"""


def error_of(fn, *args, **kwargs) -> str:
    with pytest.raises(ScenarioError) as err:
        fn(*args, **kwargs)
    message = str(err.value)
    assert "\n" not in message
    return message


def scenario(write, text: str, name: str = "x.toml", overrides=None) -> dict:
    return load_scenario(write(name, text), overrides)


def scenario_error(write, text: str, overrides=None) -> str:
    path = write("x.toml", text)
    message = error_of(load_scenario, path, overrides)
    assert message.startswith(f"{path}"), message
    return message[len(str(path)) :]


# ---- the default scenario and the examples --------------------------------------------------


def test_default_is_dems_wifi_lte_profile():
    assert default_scenario() == WIFI_LTE_RESOLVED
    assert load_scenario() == WIFI_LTE_RESOLVED


def test_example_wifi_lte_is_the_default():
    assert load_scenario(EXAMPLES / "wifi-lte.toml") == WIFI_LTE_RESOLVED


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.toml")))
def test_examples_resolve(name):
    resolved = load_scenario(EXAMPLES / name)
    # What the core reads: strict JSON, u64 fields as integers.
    decoded = json.loads(to_json(resolved))
    assert decoded == resolved
    assert isinstance(resolved["transport"]["mss"], int)


def test_single_path_example():
    s = load_scenario(EXAMPLES / "single-path.toml")
    (link,) = s["paths"]
    assert link["forward"]["rate_bps"] == 100e6
    assert link["forward"]["queue"] == {"unit": "time", "value": 0.04}
    assert s["workload"] == {"kind": "bulk", "duration_s": 10.0}
    assert s["transport"]["cc"] == "reno"


def test_three_paths_example():
    s = load_scenario(EXAMPLES / "three-paths.toml")
    assert [p["name"] for p in s["paths"]] == ["wifi", "lte", "dsl"]


# ---- defaults and the rtt/owd split ------------------------------------------------------------


def test_minimal_path_defaults(write):
    s = scenario(write, MINIMAL)
    (a,) = s["paths"]
    assert a["forward"] == {
        "rate_bps": 10e6,
        "trace": None,
        "delay_s": 0.02,
        "queue": {"unit": "time", "value": 0.04},  # 1 BDP: the rtt, in time units
        "loss": 0.0,
        "outages": [],
    }
    assert a["reverse"] == {
        "rate_bps": None,
        "trace": None,
        "delay_s": 0.02,
        "queue": {"unit": "unlimited"},
        "loss": 0.0,
        "outages": [],
    }
    assert s["workload"] == {"kind": "chunk", "size_bytes": 2**20}
    assert s["transport"] == WIFI_LTE_RESOLVED["transport"]
    assert s["sim"] == WIFI_LTE_RESOLVED["sim"]


def test_owd_splits_rtt_exactly(write):
    s = scenario(write, MINIMAL.replace('rtt = "40ms"', 'rtt = "70ms"\nowd = "45ms"'))
    (a,) = s["paths"]
    assert a["forward"]["delay_s"] == 0.045
    assert a["reverse"]["delay_s"] == 0.025  # 70 - 45, exactly, not 0.024999999999999994


def test_owd_equal_to_rtt_leaves_zero_reverse_delay(write):
    s = scenario(write, MINIMAL + 'owd = "40ms"\n')
    assert s["paths"][0]["reverse"]["delay_s"] == 0.0


def test_owd_above_rtt(write):
    assert scenario_error(write, MINIMAL + 'owd = "41ms"\n') == (
        ": path.a.owd: owd must not exceed rtt (40ms)"
    )


@pytest.mark.parametrize(
    "queue, spec",
    [
        ('"50ms"', {"unit": "time", "value": 0.05}),
        ('"300pkt"', {"unit": "packets", "value": 300}),
        ('"64KB"', {"unit": "bytes", "value": 64000}),
        ('"unlimited"', {"unit": "unlimited"}),
    ],
)
def test_queue_kinds(write, queue, spec):
    s = scenario(write, MINIMAL + f"queue = {queue}\n")
    assert s["paths"][0]["forward"]["queue"] == spec


def test_reverse_link(write):
    s = scenario(
        write,
        MINIMAL + 'reverse_rate = "512kbit"\nreverse_loss = 0.01\nloss = 0.001\n',
    )
    a = s["paths"][0]
    assert a["forward"]["loss"] == 0.001
    assert a["reverse"]["rate_bps"] == 512000.0
    assert a["reverse"]["loss"] == 0.01
    # A rate-limited reverse link gets the same 1-BDP default buffer as the forward one.
    assert a["reverse"]["queue"] == {"unit": "time", "value": 0.04}


def test_reverse_queue_needs_reverse_rate(write):
    assert "path.a.reverse_queue: needs reverse_rate" in scenario_error(
        write, MINIMAL + 'reverse_queue = "10pkt"\n'
    )


def test_outages_apply_to_both_directions(write):
    s = scenario(write, MINIMAL + 'outages = [["10s", "12s"], ["20s", "20.5s"]]\n')
    a = s["paths"][0]
    assert a["forward"]["outages"] == [[10.0, 12.0], [20.0, 20.5]]
    assert a["reverse"]["outages"] == [[10.0, 12.0], [20.0, 20.5]]


@pytest.mark.parametrize(
    "outages, fragment",
    [
        ('[["12s", "10s"]]', "outage 0: ends before it starts"),
        ('[["10s", "12s"], ["11s", "13s"]]', "outage 1: starts before the previous one ends"),
        ('["10s", "12s"]', "outage 0: expected a list of [start, end] pairs"),
        ('[["10s", "12x"]]', 'outage 0: bad time "12x"'),
        ('"10s"', "expected a list of [start, end] pairs"),
    ],
)
def test_outage_errors(write, outages, fragment):
    message = scenario_error(write, MINIMAL + f"outages = {outages}\n")
    assert message.startswith(": path.a.outages: "), message
    assert fragment in message


def test_workload_kinds(write):
    chunks = scenario(
        write, MINIMAL + '[workload]\nkind = "chunks"\nsize = "256KiB"\ncount = 4\nthink = "1s"\n'
    )
    assert chunks["workload"] == {
        "kind": "chunks",
        "size_bytes": 262144,
        "count": 4,
        "think_s": 1.0,
        "hint": True,
    }
    bulk = scenario(write, MINIMAL + '[workload]\nkind = "bulk"\nduration = "10s"\n')
    assert bulk["workload"] == {"kind": "bulk", "duration_s": 10.0}
    stream = scenario(
        write,
        MINIMAL + '[workload]\nkind = "stream"\nrate = "35.85Mbit"\nduration = "20s"\ncv = 0.3\n',
    )
    assert stream["workload"] == {
        "kind": "stream",
        "rate_bps": 35.85e6,
        "duration_s": 20.0,
        "packet_bytes": 1448,
        "cv": 0.3,
        "frame_interval_s": 1.0 / 30.0,
        "playout_delay_s": 1.0,
    }


def test_transport_and_sim(write):
    s = scenario(
        write,
        MINIMAL
        + '[transport]\ncc = "reno"\nmss = "1400B"\ninit_cwnd = 4\nsend_buffer = "1MiB"\n'
        + 'recv_buffer = "2MiB"\ndelayed_ack = false\nmin_rto = "1s"\n'
        + 'slow_start_after_idle = false\nhystart = "hystart++"\npacing = true\n'
        + '[sim]\nclock_offset = "-3s"\nmax_time = "60s"\n',
    )
    assert s["transport"] == {
        "cc": "reno",
        "mss": 1400,
        "init_cwnd": 4,
        "send_buffer_bytes": 2**20,
        "recv_buffer_bytes": 2**21,
        "delayed_ack": False,
        "min_rto_s": 1.0,
        "slow_start_after_idle": False,
        "hystart": "hystart++",
        "pacing": True,
    }
    assert s["sim"] == {"clock_offset_s": -3.0, "max_time_s": 60.0}


def test_transport_hystart_rejects_unknown_mode(write):
    with pytest.raises(ScenarioError, match=r'transport.*hystart.*"slow".*linux, hystart\+\+, off'):
        scenario(write, MINIMAL + '[transport]\nhystart = "slow"\n')


# ---- traces ------------------------------------------------------------------------------------


TRACE_PATH = """
[[path]]
name = "lte"
trace = "traces/lte.down"
rtt = "60ms"
"""


def test_trace_is_relative_to_the_scenario_file(write, tmp_path, monkeypatch):
    write("traces/lte.down", "1\n2\n")
    monkeypatch.chdir(Path("/"))
    s = scenario(write, TRACE_PATH)
    forward = s["paths"][0]["forward"]
    assert forward["trace"] == str(tmp_path / "traces" / "lte.down")
    assert os.path.isabs(forward["trace"])
    assert forward["rate_bps"] is None


def test_trace_missing(write, tmp_path):
    message = scenario_error(write, TRACE_PATH)
    assert message == (
        ': path.lte.trace: cannot read trace file "traces/lte.down" '
        f"({tmp_path / 'traces' / 'lte.down'}): No such file or directory"
    )


def test_trace_is_a_directory(write, tmp_path):
    (tmp_path / "traces" / "lte.down").mkdir(parents=True)
    assert "Is a directory" in scenario_error(write, TRACE_PATH)


def test_set_trace_is_relative_to_cwd_and_replaces_rate(write, tmp_path, monkeypatch):
    write("here/my.down", "1\n")
    monkeypatch.chdir(tmp_path / "here")
    s = load_scenario(EXAMPLES / "wifi-lte.toml", ["path.lte.trace=my.down"])
    lte = s["paths"][1]["forward"]
    assert lte["trace"] == str(tmp_path / "here" / "my.down")
    assert lte["rate_bps"] is None


def test_rate_and_trace_together(write):
    write("traces/lte.down", "1\n")
    assert scenario_error(write, TRACE_PATH + 'rate = "1Mbit"\n') == (
        ": path.lte: needs exactly one of rate or trace, not both"
    )


# ---- --set -----------------------------------------------------------------------------------


def test_set_addresses_a_path_by_name():
    s = load_scenario(EXAMPLES / "wifi-lte.toml", ["path.lte.rtt=270ms"])
    lte = s["paths"][1]
    assert lte["forward"]["delay_s"] == 0.135
    assert lte["reverse"]["delay_s"] == 0.135
    assert s["paths"][0] == WIFI_LTE_RESOLVED["paths"][0]


def test_set_sections():
    s = load_scenario(
        None,
        [
            "workload.size=4MiB",
            "transport.cc=reno",
            "transport.delayed_ack=false",
            "path.wifi.loss=0.01",
            'path.wifi.outages=[["1s","2s"]]',
            "sim.clock_offset=-3s",
        ],
    )
    assert s["workload"] == {"kind": "chunk", "size_bytes": 4 * 2**20}
    assert s["transport"]["cc"] == "reno"
    assert s["transport"]["delayed_ack"] is False
    assert s["paths"][0]["forward"]["loss"] == 0.01
    assert s["paths"][0]["forward"]["outages"] == [[1.0, 2.0]]
    assert s["sim"]["clock_offset_s"] == -3.0


def test_set_as_mapping():
    s = load_scenario(None, {"path.wifi.rate": "2.5Mbit", "workload.size": "256KiB"})
    assert s["paths"][0]["forward"]["rate_bps"] == 2.5e6
    assert s["workload"]["size_bytes"] == 262144


def test_set_last_one_wins():
    s = load_scenario(None, ["transport.cc=reno", "transport.cc=cubic"])
    assert s["transport"]["cc"] == "cubic"


def test_set_workload_kind_drops_keys_of_the_old_kind():
    s = load_scenario(None, ["workload.kind=bulk", "workload.duration=5s"])
    assert s["workload"] == {"kind": "bulk", "duration_s": 5.0}


def test_set_key_of_another_workload_kind():
    message = error_of(load_scenario, None, ["workload.count=3"])
    assert message == (
        'default scenario: --set workload.count: unknown key "count" for kind "chunk" (known: size)'
    )


@pytest.mark.parametrize(
    "override, message",
    [
        (
            "path.lte.rat=3",
            'default scenario: --set path.lte.rat: unknown key "rat" (did you mean "rate"?)',
        ),
        (
            "path.5g.rtt=10ms",
            'default scenario: --set path.5g.rtt: no path named "5g" (paths: wifi, lte)',
        ),
        ("workload.sise=1MiB", 'default scenario: --set workload.sise: unknown key "sise"'),
        ("transport.ccc=reno", 'default scenario: --set transport.ccc: unknown key "ccc"'),
        ("sim.seed=3", 'default scenario: --set sim.seed: unknown key "seed"'),
        ("foo.bar=1", "default scenario: --set foo.bar: unknown key (expected path.NAME.KEY"),
        ("path.lte=1", "default scenario: --set path.lte: unknown key"),
        ("rtt", "--set rtt: expected KEY=VALUE"),
        ("=3", "--set =3: expected KEY=VALUE"),
    ],
)
def test_set_errors(override, message):
    assert message in error_of(load_scenario, None, [override])


def test_set_bad_value_names_the_set():
    assert error_of(load_scenario, EXAMPLES / "wifi-lte.toml", ["path.wifi.rate=70x"]) == (
        f"{EXAMPLES / 'wifi-lte.toml'}: --set path.wifi.rate: "
        'bad rate "70x" (expected e.g. 7040kbit, 9.185Mbit)'
    )


def test_set_after_rename():
    s = load_scenario(None, ["path.wifi.name=wlan", "path.wlan.rtt=10ms"])
    assert s["paths"][0]["name"] == "wlan"
    assert s["paths"][0]["forward"]["delay_s"] == 0.005


def test_set_leaves_the_input_dict_alone():
    data = {"path": [{"name": "a", "rate": "1Mbit", "rtt": "10ms"}]}
    resolve(data, ["path.a.rtt=20ms"])
    assert data["path"][0]["rtt"] == "10ms"


# ---- strictness: one line naming file, key or line ----------------------------------------------


@pytest.mark.parametrize(
    "extra, message",
    [
        ('rat = "1Mbit"\n', ': path.a: unknown key "rat" (did you mean "rate"?)'),
        ('rate = "70x"\n', None),
        ("loss = 1.0\n", ": path.a.loss: loss must be at least 0 and below 1 (got 1.0)"),
    ],
)
def test_path_key_errors(write, extra, message):
    text = MINIMAL + extra
    if message is None:
        # A duplicate key is a TOML error, reported with its line.
        assert scenario_error(write, text).startswith(":6: TOML syntax error: ")
    else:
        assert scenario_error(write, text) == message


@pytest.mark.parametrize(
    "rate, message",
    [
        ('"70x"', ': path.a.rate: bad rate "70x" (expected e.g. 7040kbit, 9.185Mbit)'),
        ('"0Mbit"', ": path.a.rate: rate must be positive"),
        ('"-1Mbit"', ": path.a.rate: rate must be positive"),
        ("7040", ": path.a.rate: bad rate 7040: a unit is required"),
    ],
)
def test_rate_errors(write, rate, message):
    text = MINIMAL.replace('rate = "10Mbit"', f"rate = {rate}")
    assert scenario_error(write, text).startswith(message)


@pytest.mark.parametrize(
    "text, message",
    [
        (MINIMAL + "[extra]\n", ': unknown key "extra"'),
        (MINIMAL + '[transport]\ncc = "newvegas"\n', None),
        (MINIMAL + '[transport]\ncc = "vegas"\n', ": transport.cc: unknown congestion control"),
        (MINIMAL + "[transport]\nmss = 1448.5\n", ": transport.mss: bad size 1448.5"),
        (MINIMAL + '[transport]\nmss = "20B"\n', ": transport.mss: mss must be between"),
        (MINIMAL + "[transport]\ninit_cwnd = 0\n", ": transport.init_cwnd: must be positive"),
        (MINIMAL + '[transport]\ndelayed_ack = "yes"\n', ": transport.delayed_ack: expected"),
        (MINIMAL + '[sim]\nmax_time = "0s"\n', ": sim.max_time: max_time must be positive"),
        (MINIMAL + "[sim]\nseed = 1\n", ': sim: unknown key "seed"'),
        (MINIMAL + '[workload]\nkind = "web"\n', ': workload.kind: "web" is not impl'),
        (
            MINIMAL + '[workload]\nkind = "stream"\nduration = "1s"\n',
            ': workload: missing key "rate"',
        ),
        (
            MINIMAL + '[workload]\nkind = "stream"\nrate = "1Mbit"\nduration = "1s"\ncv = -1\n',
            ": workload.cv: cv must be a number",
        ),
        (
            MINIMAL + '[workload]\nkind = "stream"\nrate = "1Mbit"\nduration = "1s"\nsize = "1B"\n',
            ': workload: unknown key "size"',
        ),
        (MINIMAL + '[workload]\nkind = "video"\n', ": workload.kind: unknown workload kind"),
        (MINIMAL + '[workload]\nsize = "0B"\n', ": workload.size: size must be positive"),
        (MINIMAL + '[workload]\nkind = "chunks"\nsize = "1MiB"\n', ": workload: missing key"),
        (MINIMAL + '[workload]\nkind = "bulk"\nsize = "1MiB"\n', ": workload: unknown key"),
        (MINIMAL.replace('rtt = "40ms"', ""), ': path.a: missing key "rtt"'),
        (MINIMAL.replace('rtt = "40ms"', 'rtt = "0ms"'), ": path.a.rtt: rtt must be positive"),
        (MINIMAL.replace('rate = "10Mbit"', ""), ": path.a: needs exactly one of rate or trace"),
        (MINIMAL.replace('name = "a"', ""), ': path[0]: missing key "name"'),
        (MINIMAL.replace('name = "a"', 'name = "wi.fi"'), ": path[0].name: bad path name"),
        (MINIMAL + MINIMAL, ': path[1].name: duplicate path name "a"'),
        ("[workload]\nkind = 'chunk'\nsize = '1MiB'\n", ": no paths"),
        ("path = []\n", ": path: no paths"),
        ('path = "wifi"\n', ": path: expected an array of tables"),
        (
            "".join(MINIMAL.replace('"a"', f'"p{i}"') for i in range(9)),
            ": path: at most 8 paths are supported, got 9",
        ),
    ],
)
def test_strict_errors(write, text, message):
    got = scenario_error(write, text)
    if message is None:
        assert got == (
            ': transport.cc: unknown congestion control "newvegas" '
            "(expected reno, cubic, cubic-rfc9438, lia, olia, balia, wvegas)"
        )
    else:
        assert got.startswith(message), got


def test_toml_syntax_error_names_the_line(write):
    message = scenario_error(write, MINIMAL + "queue = 50ms\n")
    assert message.startswith(":6: TOML syntax error: "), message


def test_missing_file(tmp_path):
    path = tmp_path / "nope.toml"
    assert error_of(load_scenario, path) == f"{path}: cannot read file: No such file or directory"


def test_not_utf8(tmp_path):
    path = tmp_path / "x.toml"
    path.write_bytes(b'[[path]]\nname = "\xff"\n')
    assert error_of(load_scenario, path) == f"{path}:2: not valid UTF-8"


def test_eight_paths_is_fine(write):
    text = "".join(MINIMAL.replace('"a"', f'"p{i}"') for i in range(8))
    assert len(scenario(write, text)["paths"]) == 8


def test_nodelay_is_written_only_when_on():
    # Off is Linux's default and leaves resolved scenarios (and sweep keys) as they were.
    assert "nodelay" not in default_scenario([])["transport"]
    assert default_scenario(["transport.nodelay=true"])["transport"]["nodelay"] is True


def test_send_buffer_lock_is_written_only_when_on():
    # Off by default and then absent, so resolved scenarios (and sweep resume keys) stay as
    # they were; on, the engine fixes the connection's send buffer at send_buffer.
    assert "send_buffer_lock" not in default_scenario([])["transport"]
    t = default_scenario(["transport.send_buffer_lock=true", "transport.send_buffer=16MiB"])[
        "transport"
    ]
    assert t["send_buffer_lock"] is True
    assert t["send_buffer_bytes"] == 16 << 20


def test_send_buffer_lock_must_be_a_bool():
    with pytest.raises(ScenarioError, match="transport.send_buffer_lock"):
        default_scenario(["transport.send_buffer_lock=3"])
