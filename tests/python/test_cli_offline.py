"""The CLI against a fake engine (fakecore.py): output shapes and the one-line error rule,
testable before the Rust extension is built. The real engine is exercised by
test_cli_errors.py."""

from __future__ import annotations

import json
import sys

import pytest

import fakecore
from conftest import EXAMPLES, assert_user_error, run_cli
from mpsched import cli


@pytest.fixture
def core(monkeypatch):
    fake = fakecore.make()
    monkeypatch.setitem(sys.modules, "mpsched._core", fake)
    return fake


def invoke(capsys, *args):
    status = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def test_run_json_is_one_line_with_the_resolved_scenario(core, capsys):
    status, out, err = invoke(capsys, "run", EXAMPLES / "wifi-lte.toml", "--json", "--seed", 3)
    assert (status, err) == (0, "")
    assert out.count("\n") == 1
    result = json.loads(out)
    assert result["scheduler"] == "minrtt"
    assert result["seed"] == 3
    assert result["scenario"]["paths"][0]["forward"]["rate_bps"] == 7040000.0
    assert core.calls == [("validate", "minrtt"), ("run", "minrtt", 3)]


def test_run_human_summary(core, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    status, out, err = invoke(capsys, "run", EXAMPLES / "wifi-lte.toml", "-s", "dems-f")
    assert (status, err) == (0, "")
    for text in ("dems-f", "download time", "1.100 s", "wifi", "lte", "7.04 Mbit/s", "14%"):
        assert text in out, out


def test_run_applies_set(core, capsys):
    status, out, _ = invoke(
        capsys, "run", EXAMPLES / "wifi-lte.toml", "--set", "path.lte.rtt=270ms", "--json"
    )
    assert status == 0
    assert json.loads(out)["scenario"]["paths"][1]["forward"]["delay_s"] == 0.135


def test_unknown_scheduler_lists_known_ones(core, capsys):
    status, out, err = invoke(capsys, "run", EXAMPLES / "wifi-lte.toml", "-s", "fastest")
    assert status == 2 and out == ""
    assert err == (
        'mpsched: error: unknown scheduler "fastest" (known: minrtt, dems-f, blest, oracle)\n'
    )


def test_core_value_error_is_one_line(monkeypatch, capsys):
    monkeypatch.setitem(
        sys.modules, "mpsched._core", fakecore.make(invalid="/t/x.down:3: timestamps decrease")
    )
    status, out, err = invoke(capsys, "run", EXAMPLES / "wifi-lte.toml")
    assert (status, out) == (2, "")
    assert err == "mpsched: error: /t/x.down:3: timestamps decrease\n"


def test_compare_json(core, capsys):
    status, out, err = invoke(capsys, "compare", "--reps", 4, "--seed", 5, "--json")
    assert (status, err) == (0, "")
    report = json.loads(out)
    # Default schedulers: the chunk schedulers the engine has (blest is not one), in order.
    assert list(report["summary"]) == ["minrtt", "dems-f", "oracle"]
    assert [(r["scheduler"], r["seed"]) for r in report["runs"]][:4] == [
        ("minrtt", 5),
        ("minrtt", 6),
        ("minrtt", 7),
        ("minrtt", 8),
    ]
    assert len(report["runs"]) == 12
    download = report["summary"]["dems-f"]["download_time_s"]
    assert download["median"] == pytest.approx(1.0 + 6.5 / 10)
    assert download["p90"] == pytest.approx(1.0 + 7.7 / 10)
    assert report["summary"]["oracle"]["bytes_by_path"]["median"] == {
        "wifi": 6500.0,
        "lte": 13000.0,
    }


def test_compare_table(core, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    status, out, err = invoke(capsys, "compare", "-s", "minrtt", "-s", "oracle", "--reps", 2)
    assert (status, err) == (0, "")
    for text in ("default scenario", "minrtt", "oracle", "vs best", "2.15s", "2.26x", "2/2"):
        assert text in out, out


def test_compare_failed_job_is_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "mpsched._core", fakecore.make(job_error="cut at max_time"))
    status, out, err = invoke(capsys, "compare", "-s", "minrtt", "--reps", 2)
    assert (status, out) == (2, "")
    assert err == "mpsched: error: minrtt, seed 1: cut at max_time\n"


def test_schedulers_json(core, capsys):
    status, out, _ = invoke(capsys, "schedulers", "--json")
    assert status == 0
    assert json.loads(out)[0] == {"name": "minrtt", "reference": "Linux MPTCP default (v0.9x)"}


def test_bench(core, capsys):
    status, out, _ = invoke(capsys, "bench")
    assert status == 0
    assert "(a) 100 Mbit/s" in out and "100,000 data packets/s" in out
    assert [c for c in core.calls if c[0] == "run"] == [("run", "minrtt", 1)] * 2


def test_python_api(core):
    import mpsched

    result = mpsched.run(None, scheduler="oracle", seed=2, set=["workload.size=4MiB"])
    assert result["scenario"]["workload"]["size_bytes"] == 4 * 2**20
    report = mpsched.compare(EXAMPLES / "wifi-lte.toml", schedulers=["minrtt"], reps=3)
    assert report["summary"]["minrtt"]["download_time_s"]["median"] == pytest.approx(2.2)
    with pytest.raises(mpsched.ScenarioError):
        mpsched.run({"path": []})


# ---- without any engine: help and usage errors still behave --------------------------------


def test_help_without_engine():
    proc = run_cli("--help")
    assert proc.returncode == 0, proc.stderr
    assert "compare" in proc.stdout and proc.stderr == ""


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["run"], "Missing argument 'SCENARIO'"),
        (["run", "x.toml", "--frobnicate"], "--frobnicate"),
        (["compare", "--reps", "0"], "--reps"),
        (["nosuchcommand"], "nosuchcommand"),
        (["compare", "--set", "oops"], "--set oops: expected KEY=VALUE"),
    ],
)
def test_usage_errors_are_one_line(args, fragment):
    assert_user_error(run_cli(*args), fragment)


def test_missing_engine_is_one_clear_line(monkeypatch, capsys):
    # None in sys.modules makes the import fail, as it does when the extension is not built.
    monkeypatch.setitem(sys.modules, "mpsched._core", None)
    status, out, err = invoke(capsys, "run", EXAMPLES / "wifi-lte.toml")
    assert (status, out) == (1, "")
    assert err.count("\n") == 1 and "maturin develop" in err


def test_api_without_engine_raises_a_clear_import_error(monkeypatch):
    import mpsched

    monkeypatch.setitem(sys.modules, "mpsched._core", None)
    with pytest.raises(ImportError, match="mpsched._core is not available"):
        mpsched.run()
    # Validation needs no engine.
    assert mpsched.load_scenario()["paths"][0]["name"] == "wifi"
