"""Every scheduler name the documentation shows is accepted by `run`/`compare` (issue 11: the
Python name check refused `single:wifi`, `minrtt:noor`, `dems-f:k=2` although the engine
builds them). The engine decides which arguments a scheduler takes; Python only checks the base
name. Needs the built extension (as test_cli_errors.py's engine tests do)."""

from __future__ import annotations

import re

import pytest

from conftest import EXAMPLES, ROOT, assert_user_error, run_cli

# The forms docs/schedulers.md shows, with its placeholders filled in for examples/wifi-lte.toml.
DOCUMENTED = [
    "minrtt",
    "linux",
    "minrtt:nopenalty",
    "minrtt:noor",
    "rr",
    "redundant",
    "single",
    "single:wifi",
    "dems-b",
    "dems-s",
    "dems-f",
    "dems-f:k=2",
    "dems-f:delta=30ms",
    "stms-c",
    "stms-a",
    "blest",
    "ecf",
    "sttf",
    "musher",
    "daps",
    "otias",
    "lte-handover",
    "backup:lte",
    "backup:lte,wifi",
    "backup:lte,detect=rto",
    "backup:lte,detect=probe",
    "oracle",
]


def test_docs_table_names_are_all_listed_here():
    text = (ROOT / "docs" / "schedulers.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    shown = {n for row in rows for n in re.findall(r"`([a-z][a-z0-9:=,.-]*)`", row.split("|")[1])}
    fill = {"single:NAME": "single:wifi", "dems-f:k=K": "dems-f:k=2"}
    shown = {fill.get(n, n) for n in shown if "NAME" not in n and n != "backup"}
    assert shown <= set(DOCUMENTED), shown - set(DOCUMENTED)


def test_every_engine_scheduler_has_a_row():
    """Issue 11: docs/schedulers.md is one table of every scheduler the engine builds."""
    from mpsched import _engine

    text = (ROOT / "docs" / "schedulers.md").read_text()
    rows = [line.split("|")[1] for line in text.splitlines() if line.startswith("| `")]
    shown = {n.split(":")[0] for row in rows for n in re.findall(r"`([a-z][a-z0-9:=,.-]*)`", row)}
    missing = {name for name, _ in _engine.schedulers()} - shown
    assert not missing, f"schedulers without a row in docs/schedulers.md: {sorted(missing)}"


@pytest.mark.parametrize("name", DOCUMENTED)
def test_documented_name_is_accepted(name):
    from mpsched import _engine, runner
    from mpsched.scenario import to_json

    _engine.check_schedulers([name])
    resolved = runner.resolve_scenario(str(EXAMPLES / "wifi-lte.toml"))
    _engine.call(_engine.core().validate, to_json(resolved), name)


def test_compare_parameterized_names_run():
    proc = run_cli(
        "compare",
        EXAMPLES / "wifi-lte.toml",
        "-s",
        "single:wifi",
        "-s",
        "minrtt:noor",
        "-s",
        "dems-f:k=2",
        "--reps",
        "1",
    )
    assert proc.returncode == 0, proc.stderr
    for name in ("single:wifi", "minrtt:noor", "dems-f:k=2"):
        assert name in proc.stdout


def test_bad_argument_of_known_scheduler_is_the_engines_one_line_error():
    proc = run_cli("run", EXAMPLES / "wifi-lte.toml", "-s", "single:nowhere")
    assert_user_error(proc, 'no path named "nowhere"')


def test_backup_without_paths_is_one_line_error():
    proc = run_cli("run", EXAMPLES / "wifi-lte.toml", "-s", "backup")
    assert_user_error(proc, "backup = true")


def test_fixed_split_runs_one_split_by_hand():
    """docs/experiments.md: `fixed-split:B0` or `fixed-split:B0,B1` runs one split of the best
    fixed split's search by hand; it is not in the engine's table (it needs its split), and the
    name check refused it. The run is the search's run of that split."""
    import json

    size = 1 << 20
    share = 500 * 1420
    runs = {}
    names = [f"fixed-split:{share}", f"fixed-split:{share},{size - share}"]
    names.append(f"{names[1]},tail")  # the last path's share from the chunk's end
    for name in names:
        proc = run_cli("run", EXAMPLES / "wifi-lte.toml", "-s", name, "--json")
        assert proc.returncode == 0, proc.stderr
        runs[name] = json.loads(proc.stdout)
    assert all(r["download_time_s"] > 0 for r in runs.values())
    # The second path's share given or not: the same first-path share, retransmissions aside,
    # to within the chunk's short last segment (which path takes it may differ).
    sent = [
        r["bytes_by_path"]["wifi"] - 1420 * r["retransmissions_by_path"]["wifi"]
        for r in runs.values()
    ]
    assert all(abs(b - share) < 1420 for b in sent), sent
    bare = run_cli("run", EXAMPLES / "wifi-lte.toml", "-s", "fixed-split")
    assert_user_error(bare, 'unknown scheduler "fixed-split"')
