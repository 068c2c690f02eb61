"""The STMS (Shi et al., USENIX ATC 2018) and R-TSC (Park et al.) presets added for issue 12:
each runs in a tiny version and writes its figures and the paper-vs-ours lines; the R-TSC rate
model used by `rtsc-fig7` is checked against Eq. 9 (one subflow is Reno)."""

from __future__ import annotations

import dataclasses

import pytest

from mpsched import presets, presets_delay

pytest.importorskip("mpsched._core")

ADDED = [
    "stms-fig3",
    "stms-fig8",
    "stms-fig11",
    "stms-fig12",
    "stms-fig15",
    "rtsc-fig7",
    "rtsc-fig8",
]


def _tiny(spec: dict) -> dict:
    """A preset sweep cut to seconds: 2 s runs, one rep, two values per axis."""
    sc = dict(spec["scenario"])
    sc["workload"] = {**sc["workload"], "duration": "2s"}
    return {
        **spec,
        "scenario": sc,
        "reps": 1,
        "axes": {k: v[:2] for k, v in spec.get("axes", {}).items()},
    }


def test_issue_12_presets_are_registered_with_their_paper():
    for name in ADDED:
        paper = presets.PRESETS[name].paper
        assert paper == ("Park et al. (R-TSC)" if name.startswith("rtsc") else presets_delay.STMS)


@pytest.mark.parametrize("name", ADDED)
def test_tiny_preset_writes_figures_and_claims(name, tmp_path, monkeypatch):
    preset = presets.PRESETS[name]
    tiny = dataclasses.replace(preset, sweeps=lambda ctx: [_tiny(s) for s in preset.sweeps(ctx)])
    monkeypatch.setitem(presets.PRESETS, name, tiny)
    rep = presets.reproduce(name, quick=True, out=tmp_path, progress=False, formats=("png",))
    assert rep.runs > 0 and rep.ran == rep.runs
    assert rep.figures and all(f.stat().st_size > 1000 for f in rep.figures)
    assert rep.claims and all(c.paper and c.ours for c in rep.claims)


def test_lia_model_of_one_subflow_is_reno_eq9():
    """Park et al. (R-TSC), Eq. 9: one AIMD subflow with beta W^Loss <= W^BDP <= W^Loss has
    average rate 3/4 c / (1 - r + r^2), r = W^BDP / W^Loss; the integral of Eq. 7 gives it."""
    c, t_p, w_loss = 1000.0, 0.05, 80.0  # W^BDP = 50 packets
    r = c * t_p / w_loss
    eq9 = 0.75 * c / (1 - r + r * r)
    (x,) = presets_delay.lia_model_rates([c], [t_p], [w_loss])
    assert abs(x - eq9) / eq9 < 0.01


def test_lia_model_gives_the_larger_path_the_larger_rate():
    """Eq. 11-18 on (20, 5) Mbit/s paths with equal thresholds over their BDPs: the LIA rates
    stay within capacity and in the capacities' order."""
    mss = presets_delay.MSS_BYTES
    c = [20e6 / 8 / mss, 5e6 / 8 / mss]
    w = [1.5 * ci * presets_delay.T_P for ci in c]
    x = presets_delay.lia_model_rates(c, [presets_delay.T_P] * 2, w)
    assert 0 < x[1] < x[0] <= c[0] and x[1] <= c[1]
