"""The scheduler-study presets (Cech, TUM 2020: `cech-fig2` ... `cech-fig10`) and the study's
findings the issue asks us to show, each on a small scenario of the preset's setting.

Thresholds: where the report gives a number it is used; where it says "only one flow" or
"close to its maximum" the test reads it as 90% (stated at each test). A finding our engine
does not reproduce is skipped with the measured numbers, never relaxed.
"""

from __future__ import annotations

import dataclasses

import pytest

from mpsched import presets, presets_cech, runner

pytest.importorskip("mpsched._core")

CECH = [name for name in presets.PRESETS if name.startswith("cech-")]


def _tiny(spec: dict) -> dict:
    """A preset sweep cut to seconds: 1 s runs, one rep, two values per axis, two schedulers."""
    spec = {**spec, "reps": 1}
    sc = {**spec["scenario"], "workload": {**spec["scenario"]["workload"], "duration": "1s"}}
    spec["scenario"] = sc
    spec["axes"] = {k: v[:2] for k, v in spec.get("axes", {}).items()}
    keep = ["minrtt", "musher", "lte-handover"]
    spec["schedulers"] = [s for s in spec["schedulers"] if s in keep] or spec["schedulers"][:2]
    return spec


def test_every_figure_of_the_study_has_a_preset():
    assert sorted(CECH) == sorted(f"cech-fig{n}" for n in (2, 3, 4, 5, 6, 7, 9, 10)), (
        "issue 11 names figures 2-7, 9 and 10"
    )
    for name in CECH:
        assert presets.PRESETS[name].paper == "Cech, TUM 2020"


@pytest.mark.parametrize("name", [n for n in CECH if n != "cech-fig9"])
def test_tiny_preset_writes_figures_and_claims(name, tmp_path, monkeypatch):
    preset = presets.PRESETS[name]
    tiny = dataclasses.replace(preset, sweeps=lambda ctx: [_tiny(s) for s in preset.sweeps(ctx)])
    monkeypatch.setitem(presets.PRESETS, name, tiny)
    rep = presets.reproduce(name, quick=True, out=tmp_path, progress=False, formats=("png",))
    assert rep.runs > 0 and rep.ran == rep.runs
    assert rep.figures and all(f.stat().st_size > 1000 for f in rep.figures)
    assert rep.claims and all(c.paper and c.ours for c in rep.claims)
    if name == "cech-fig10":
        # Resumable: a second reproduction runs nothing new.
        again = presets.reproduce(name, quick=True, out=tmp_path, progress=False, formats=("png",))
        assert again.ran == 0 and again.runs == rep.runs


def _bw_hetero(queue: str, duration: str = "30s") -> dict:
    # cech-fig3's most heterogeneous cell: p1 100, p2 10 Mbit/s.
    return {
        "path": [
            {"name": "p1", "rate": "100Mbit", "rtt": presets_cech.BASE_RTT, "queue": queue},
            {"name": "p2", "rate": "10Mbit", "rtt": presets_cech.BASE_RTT, "queue": queue},
        ],
        "workload": {"kind": "bulk", "duration": duration},
    }


@pytest.mark.skip(
    reason="measured 2026-11-25 after fast recovery took Linux's PRR (b12bef8): MinRTT 103.1 "
    "Mbit/s with 1000-packet queues and 103.1 with 300; the others' median 87.0 (RR 32.1, "
    "MuSher 18.8, BLEST 103.1, ECF 102.9, STTF 87.0). Before: "
    "measured 2026-11-24 on 34df2c9 + v0.94's penalty timing (30 s, p1 100 / p2 10 "
    "Mbit/s): MinRTT 104.6 Mbit/s with 1000-packet queues and 104.6 with 300 (104.6/104.3 "
    "before); the other studied schedulers' median 82.0 (RR 40.0): MinRTT sends on p2 only when "
    "p1's window is full, so p2's window stays near 100 packets (sRTT ~130 ms) and never fills "
    "its 1.2 s queue the way RR's does; both paths stay full (figure cech-fig3-p2-window); "
    "needs MinRTT below both"
)
def test_minrtt_struggles_with_large_queues_under_bandwidth_heterogeneity():
    """Cech, TUM 2020, §4.4: with large queues MinRTT falls back to the unimpaired path and its
    goodput drops below the small-queue setting and below the field."""
    large = runner.run(_bw_hetero("1000pkt"), "minrtt", seed=1)["goodput_bps"]
    small = runner.run(_bw_hetero("300pkt"), "minrtt", seed=1)["goodput_bps"]
    others = sorted(
        runner.run(_bw_hetero("1000pkt"), s, seed=1)["goodput_bps"]
        for s in presets_cech.STUDIED
        if s != "minrtt"
    )
    assert large < small
    assert large < others[len(others) // 2]


def _hetero_delay(queue: str, duration: str = "3s") -> dict:
    # cech-fig5's most heterogeneous cell: two Gigabit paths, 20 and 70 ms.
    return {
        "path": [
            {"name": "p1", "rate": "1Gbit", "rtt": "20ms", "queue": queue},
            {"name": "p2", "rate": "1Gbit", "rtt": "70ms", "queue": queue},
        ],
        "workload": {"kind": "bulk", "duration": duration},
    }


def test_musher_collapses_with_small_queues():
    """Cech, TUM 2020, §4.5 and §7: with small (500-packet) queues MuSher's goodput "drops to a
    very low point": the lowest of the studied schedulers, and below its goodput with large
    (2000-packet) queues. On Fig. 5's setting, 3 s runs (cech-fig5's 20 s runs show it too at
    p2 60 and 70 ms, 301 and 238 vs 457 and 396 Mbit/s; Fig. 4's equal delays do not: there
    MuSher is the best with small queues). Why: `test_musher_small_queues_cap_is_p2s_window`."""
    small = {
        s: runner.run(_hetero_delay("500pkt"), s, seed=1)["goodput_bps"]
        for s in presets_cech.STUDIED
    }
    large = runner.run(_hetero_delay("2000pkt"), "musher", seed=1)["goodput_bps"]
    assert min(small, key=small.get) == "musher", small
    assert small["musher"] < large


def test_musher_small_queues_cap_is_p2s_window():
    """The mechanism (figure cech-fig5-musher-small-queues): with 500-packet queues slow start
    ends in losses that leave p2's window near the queue size, far below its 70 ms path's
    bandwidth-delay product; MuSher's ratio stays at 50 % (no search triggers) and so the
    goodput is what p2's window carries per RTT divided by p2's half, while p1's window alone
    would carry more (p1 is not what limits it). Checked over 3-10 s of a 10 s run."""
    tr = presets_cech.musher_queue_traces("10s")[("musher", "small")]
    d = presets_cech.musher_queue_series(tr)
    d = d[(d.index >= 3.0) & (d.index < 10.0)]
    assert d["p1_share"].between(0.49, 0.51).all(), d["p1_share"]
    goodput, bound = d["goodput_bps"].mean(), d["ratio_bound"].mean()
    assert abs(goodput - bound) <= 0.05 * bound, (goodput, bound)
    assert d["cwnd_p2"].max() < 1000, d["cwnd_p2"]  # 1 Gbit/s x 70 ms = 6160 segments
    p1_alone = (d["cwnd_p1"] * presets_cech.MSS_MPTCP * 8 / d["srtt_p1_s"]).mean()
    assert goodput / 2 < 0.5 * p1_alone, (goodput, p1_alone)


@pytest.mark.skip(
    reason="measured 2026-11-25 after fast recovery took Linux's PRR (b12bef8): small queues "
    "273.4 Mbit/s vs large 383.6 Mbit/s (0.713x). Before: "
    "measured 2026-11-24 after the MPTCP receive window stopped shrinking with a "
    "subflow's own window (mptcp_set_rwin, ack_update_msk): small queues 274.8 Mbit/s vs "
    "large 383.7 Mbit/s over 10 s (0.716x); needs < 0.7x"
)
def test_musher_small_queues_lose_against_large():
    """The collapse itself (Cech, TUM 2020, Fig. 5): MuSher with small queues carries less than
    0.7x of what it carries with large ones in the same 10 s run."""
    traces = presets_cech.musher_queue_traces("10s")
    small = traces[("musher", "small")].result["goodput_bps"]
    large = traces[("musher", "large")].result["goodput_bps"]
    assert small < 0.7 * large, (small, large)


def test_blest_and_ecf_fall_back_to_the_fast_flow_under_heterogeneous_delay():
    """Cech, TUM 2020, §4.5, Fig. 5: BLEST and ECF "only utilized one flow" (read: at least 90%
    of the bytes on the 20 ms path) when p2 has 70 ms, large queues."""
    sc = _hetero_delay("2000pkt")
    for s in ("blest", "ecf"):
        b = runner.run(sc, s, seed=1)["bytes_by_path"]
        assert b["p1"] / (b["p1"] + b["p2"]) >= 0.9, (s, b)


# Fig. 6's setting at p2 1% loss, 10 s.
LOSSY = presets_cech.lossy_scenario()
MUSHER_LOSSY_MISS = pytest.mark.skip(
    reason="measured 2026-11-25 after fast recovery took Linux's PRR (b12bef8): p1 at 0.687 "
    "utilization. Before: "
    "measured 2026-11-24 on 34df2c9 (10 s, p2 1% loss, base RTT 1 ms): MuSher keeps p1 "
    "at 0.68 utilization, what p2 alone carries at that loss (single-path 0.69): its strict "
    "50% ratio ties p1 to p2 and no search triggers (the rate trigger needs a 200 Mbit/s "
    "change, the queue trigger a 75 kB fall). p1 is at 0.92 with a 0.5 ms base RTT, 0.98 "
    "with 0.3 ms (figure cech-fig6-musher-base-rtt); the testbed's RTT is not reported; "
    "needs >= 0.9"
)


def test_musher_lossy_p1_tracks_what_p2_alone_carries():
    """The explanation of MUSHER_LOSSY_MISS, able to fail: MuSher's p1 utilization follows
    what single-path TCP carries on the lossy p2 (within 0.05) at every base RTT, and reaches
    Cech's "close to its maximum" (0.9) once the base RTT is small enough that p2 alone does."""
    m = presets_cech.lossy_by_base_rtt(("0.3ms", "1ms"))
    for rtt, row in m.items():
        assert abs(row["musher"] - row["p2 alone"]) <= 0.05, (rtt, row)
    assert m["0.3ms"]["musher"] >= 0.9, m


@pytest.mark.parametrize(
    "scheduler",
    [
        pytest.param(s, marks=MUSHER_LOSSY_MISS) if s == "musher" else s
        for s in presets_cech.FIELD
        # redundant sends every byte on both paths: p1 carries the lossy path's copies too.
        if s != "redundant"
    ],
)
def test_a_lossy_path_is_handled_by_every_scheduler(scheduler):
    """Cech, TUM 2020, §4.6: with p2 at 1% loss every scheduler keeps the nearly loss-free p1
    "close to its maximum" (read: at least 90% utilization)."""
    u = runner.run(LOSSY, scheduler, seed=1)["utilization_by_path"]["p1"]
    assert u >= 0.9, u


def test_lte_handover_keeps_goodput_within_20_percent_during_handovers():
    """Issue 11 (Cech, TUM 2020, §5, Fig. 9/10): during the handovers of lte2, lte-handover's
    in-order goodput is at least 80% of single-path TCP's on the undisturbed lte1."""
    m = presets_cech.handover_measure("30s")
    assert m["reference_bps"] > 10e6
    assert m["lte-handover"]["ratio"] >= 0.8, m["lte-handover"]
    # Where MinRTT drops both flows (Cech's Fig. 9): the contrast that makes this able to fail.
    assert m["minrtt"]["ratio"] < 0.8, m["minrtt"]


# 3 s: CUBIC still growing; 4.125 s: the primary in loss recovery (v0.9x's rule fails over
# there 312 ms after the outage, its RTO then 313 ms); 5 s: the preset's.
@pytest.mark.parametrize("outage_at", [3.0, 4.125, 5.0])
def test_backup_fails_over_within_one_rto(outage_at):
    """Issue 11: `backup` sends on the backup path within one RTO of the primary's outage.
    Linux's RTO is sRTT + rttvar with rttvar floored at `tcp_rto_min` (`tcp_rtt_estimator`,
    `__tcp_set_rto`, net/ipv4/tcp_input.c), so sRTT + 200 ms is the smallest it can be."""
    m = presets_cech.backup_failover(outage_at=outage_at)
    assert m["spare_bytes_before"] == 0, "the backup path is idle while the primary works"
    assert m["failover_s"] <= m["rto_s"], m


def test_backup_detect_rto_fails_over_at_the_first_rto_after_the_probe():
    """Linux v0.9x's rule (`backup:...,detect=rto`), in Linux's order of timers: the backup
    path takes over at the primary's first RTO after its tail loss probe, not after further
    backoffs; the RTO is recomputed from the trace's RTT samples (`linux_rto`) within 1 ms."""
    m = presets_cech.backup_failover(scheduler="backup:detect=rto")
    assert m["spare_bytes_before"] == 0
    waited = m["since_last_ack_s"] - m["probe_after_last_ack_s"]
    assert abs(waited - m["rto_s"]) <= 0.001, m


def test_linux_backup_takes_over_at_the_second_mptcp_timer_firing():
    """Upstream Linux with a backup path (issue 9): the MPTCP-level timer restarts with the
    interval the last push set (`msk->timer_ival`, the primary's loss-probe timeout right after
    an ACK), and `mptcp_subflow_get_retrans` resends on the idle backup only at the second
    firing without progress (`min_stale_count > 1`): two probe timeouts after the primary's
    last ACK, within 1 ms. Linux 6.18 on the emulator: 326 ms in 5 of 6 downloads
    (docs/fidelity.md); computed at each restart instead, the interval fell to its 200 ms floor
    and the backup waited for the primary's RTO (435 ms)."""
    m = presets_cech.backup_failover(scheduler="linux")
    assert m["spare_bytes_before"] == 0
    assert abs(m["since_last_ack_s"] - 2 * m["probe_after_last_ack_s"]) <= 0.001, m
