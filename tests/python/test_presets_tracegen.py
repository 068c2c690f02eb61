"""Paper presets (`reproduce`, `presets`) and synthetic bandwidth traces (`trace gen`)."""

from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES, assert_user_error, run_cli
from mpsched import cli, presets

core = pytest.importorskip("mpsched._core")

KNOWN = {name for name, _ in core.schedulers()}
HAS_DEMS = {"dems-b", "dems-s", "dems-f"} <= KNOWN


class Proc:
    """What run_cli returns, from an in-process run of the CLI (faster than a subprocess)."""

    def __init__(self, capsys, *args):
        self.returncode = cli.main([str(a) for a in args])
        self.stdout, self.stderr = capsys.readouterr()


def test_presets_lists_every_dems_figure(capsys):
    proc = Proc(capsys, "presets", "--json")
    assert proc.returncode == 0, proc.stderr
    names = [p["name"] for p in json.loads(proc.stdout)]
    for fig in (1, 10, 11, 12, 13, 14, 18):
        assert f"dems-fig{fig}" in names
    presets = json.loads(proc.stdout)
    assert all(
        "Guo et al., MobiCom 2017" in p["rebuilds"]
        for p in presets
        if p["name"].startswith("dems-")
    )
    # STMS and R-TSC presets cite their own papers.
    cited = {p["name"]: p["rebuilds"] for p in presets}
    assert "Shi et al., USENIX ATC 2018" in cited["stms-fig13"]
    assert "Park et al. (R-TSC)" in cited["rtsc-fig9"]


def test_unknown_preset_is_one_line(capsys):
    assert_user_error(Proc(capsys, "reproduce", "dems-fig99"), 'unknown preset "dems-fig99"')


def test_every_preset_plans_its_sweeps(tmp_path):
    """Every preset's sweeps are valid sweep specs (short of schedulers this engine lacks)."""
    from mpsched.errors import ScenarioError
    from mpsched.sweep import plan_sweep

    for preset in presets.PRESETS.values():
        for quick in (True, False):
            ctx = presets.Context(out=tmp_path / preset.name, quick=quick)
            for spec in preset.sweeps(ctx):
                # "single:wifi", "minrtt+rtsc": the engine knows the name before ":" or "+".
                names = {s.split("+", 1)[0].split(":", 1)[0] for s in spec["schedulers"]}
                missing = names - KNOWN
                if missing:
                    with pytest.raises(ScenarioError, match="unknown scheduler"):
                        plan_sweep(spec, source=preset.name)
                else:
                    assert plan_sweep(spec, source=preset.name).jobs


def test_reproduce_fig1_quick_writes_figures_and_paper_numbers(capsys, tmp_path):
    proc = run_cli("reproduce", "dems-fig1", "--quick", "-o", tmp_path, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert "Figure 1" in proc.stderr  # what it rebuilds, on stderr under --json
    assert out["runs"] == out["ran"] == 2 * 2 * 3 * 3
    assert {c["paper"] for c in out["claims"]} >= {"up to 33%", "100 to 450 ms"}
    names = sorted(p.rsplit("/", 1)[-1] for p in out["figures"])
    assert names == [
        "fig1-download.png",
        "fig1-download.svg",
        "fig2-completion-gap.png",
        "fig2-completion-gap.svg",
    ]
    # Run again: everything is stored already.
    again = json.loads(
        Proc(capsys, "reproduce", "dems-fig1", "--quick", "-o", tmp_path, "--json").stdout
    )
    assert again["ran"] == 0


# ---- trace gen ---------------------------------------------------------------------------------


def _timestamps(path) -> list[int]:
    return [int(x) for x in path.read_text().split()]


def _mean_rate(ts: list[int]) -> float:
    return len(ts) * 1504 * 8 / (ts[-1] / 1e3)


def test_trace_gen_steps_like_seed_002(capsys, tmp_path):
    out = tmp_path / "s.down"
    proc = Proc(
        capsys, "trace", "gen", "steps", "--rates", "5Mbit,10Mbit,20Mbit,30Mbit", "--step", "10s",
        "--duration", "80s", "-o", out,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    ts = _timestamps(out)
    assert ts[-1] == 80_000
    # Without a seed the rates cycle in order: 5 Mbit/s for the first 10 s.
    first = sum(1 for t in ts if t <= 10_000)
    assert abs(first * 1504 * 8 / 10 - 5e6) < 1504 * 8
    assert abs(_mean_rate(ts) - 16.25e6) / 16.25e6 < 1e-3


def test_trace_gen_random_is_seeded_with_the_requested_mean(capsys, tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for path, seed in ((a, 1), (b, 1), (c, 2)):
        proc = Proc(
            capsys, "trace", "gen", "random", "--mean", "10Mbit", "--stddev", "50%", "--interval",
            "500ms", "--duration", "30s", "--seed", seed, "-o", path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    assert a.read_text() == b.read_text() != c.read_text()
    assert abs(_mean_rate(_timestamps(a)) - 10e6) / 10e6 < 1e-3


def test_trace_gen_handover_like_seed_001(capsys, tmp_path):
    out = tmp_path / "h.down"
    proc = Proc(
        capsys, "trace", "gen", "handover", "--rate", "10Mbit", "--duration", "30s", "-o", out
    )
    assert proc.returncode == 0, proc.stderr
    ts = _timestamps(out)
    during = sum(1 for t in ts if 15_000 < t <= 17_000)  # the dip: every 15 s, 2 s, rate / 10
    before = sum(1 for t in ts if 13_000 < t <= 15_000)
    assert abs(during * 10 - before) <= 10


def test_generated_trace_drives_a_run(capsys, tmp_path):
    out = tmp_path / "o.down"
    gen = Proc(
        capsys, "trace", "gen", "outage", "--rate", "8Mbit", "--duration", "20s", "--every", "5s",
        "--length", "1s", "-o", out,
    )  # fmt: skip
    assert gen.returncode == 0, gen.stderr
    proc = Proc(
        capsys, "run", EXAMPLES / "wifi-lte.toml", "--set", f"path.lte.trace={out}", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["download_time_s"] > 0


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["wobble"], 'unknown trace kind "wobble"'),
        (["constant", "--rate", "10Mbt"], '--rate 10Mbt: bad rate "10Mbt"'),
        (["random", "--mean", "10Mbit"], "needs a standard deviation"),
        (["steps", "--rates", "1Mbit", "--step", "0s"], "step must be a positive"),
        (["handover", "--rate", "1Mbit", "--every", "1s", "--length", "2s"], "must not exceed"),
    ],
)
def test_trace_gen_errors_are_one_line(capsys, args, fragment):
    assert_user_error(Proc(capsys, "trace", "gen", *args), fragment)
