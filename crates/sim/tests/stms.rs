//! Validation of STMS (Shi et al., USENIX ATC 2018) against its own equations, through the
//! simulator: host-buffer requirements (§2.3 Eq. 1, §3.2 Eq. 3) and the gap adjustment of
//! Algorithm 2 converging to Eq. 2 after a delay change (§5.1.3, Fig. 12).

use mpsched_core::model::stms;
use mpsched_sim::scenario::{PathSpec, Scenario, SimOptions, Transport, Workload};
use serde_json::Value;

const MSS: f64 = 1448.0;
/// Payload share of a full-sized packet on the wire (72 header bytes, `packet::HEADER_BYTES`).
const PAYLOAD: f64 = MSS / (MSS + 72.0);

fn two_paths(rate_bps: f64, rtt_f: f64, rtt_s: f64, queue_s: f64, rbuf: u64) -> Scenario {
    Scenario {
        paths: vec![
            PathSpec::bottleneck("fast", rate_bps, rtt_f, queue_s, 0.0),
            PathSpec::bottleneck("slow", rate_bps, rtt_s, queue_s, 0.0),
        ],
        workload: Workload::Bulk { duration_s: 8.0 },
        transport: Transport {
            recv_buffer_bytes: Some(rbuf),
            send_buffer_bytes: 64 << 20,
            ..Transport::default()
        },
        sim: SimOptions::default(),
    }
}

/// The smallest receive buffer (bytes, to 2%) with which `sched` reaches 90% of both paths'
/// payload capacity, or of its own goodput with an unlimited buffer if that is lower (losses
/// at the bottleneck buffers cost every scheduler alike): the "receive buffer needed" of §2.3
/// and Fig. 8a, found by bisection. Returns it with the run at that buffer, or `None` when
/// twice Eq. 1 is not enough. One bandwidth-delay product of bottleneck buffer per path.
fn buffer_needed(sched: &str, rate_bps: f64, rtt_f: f64, rtt_s: f64) -> Option<(f64, Value)> {
    let b = rate_bps * PAYLOAD / 8.0;
    let sc = |buf: f64| {
        let mut sc = two_paths(rate_bps, rtt_f, rtt_s, rtt_f, buf as u64);
        sc.paths[1] = PathSpec::bottleneck("slow", rate_bps, rtt_s, rtt_s, 0.0);
        sc
    };
    let run = |buf: f64| mpsched_sim::run(&sc(buf), sched, 1).expect("run");
    let goodput = |v: &Value| v["goodput_bps"].as_f64().expect("goodput");
    let target = (0.9 * 2.0 * rate_bps * PAYLOAD).min(0.9 * goodput(&run(64e6)));
    // Bracket: half of Eq. 4 (below it STMS is single-path) to twice Eq. 1.
    let mut lo = 0.5 * stms::buffer_fallback(b, rtt_f / 2.0, rtt_s / 2.0);
    let mut hi = 2.0 * stms::buffer_default(b, b, rtt_s);
    let mut at_hi = run(hi);
    if goodput(&at_hi) < target {
        return None;
    }
    while hi / lo > 1.02 {
        let mid = (lo * hi).sqrt();
        let v = run(mid);
        if goodput(&v) >= target {
            (hi, at_hi) = (mid, v);
        } else {
            lo = mid;
        }
    }
    Some((hi, at_hi))
}

/// (B_f, B_s, RTT_f, RTT_s) a run measured: delivered payload rate per path (bytes/s) and the
/// mean smoothed RTT per path (s).
fn measured(v: &Value) -> (f64, f64, f64, f64) {
    let g = |k: &str, p: &str| v[k][p].as_f64().expect("per-path metric");
    (
        g("throughput_by_path_bps", "fast") / 8.0,
        g("throughput_by_path_bps", "slow") / 8.0,
        g("srtt_avg_s_by_path", "fast"),
        g("srtt_avg_s_by_path", "slow"),
    )
}

/// Issue 12: the receive buffer MinRTT needs (without opportunistic retransmission and
/// penalization: the scheduler Eq. 1 describes) and the one STMS-C needs agree with Eq. 1
/// `(B_f + B_s) RTT_s` and Eq. 3 `(B_f + B_s)(OWD_s + OWD_f)` within 15% over a grid of RTT
/// ratios and rates. The equations take the bandwidths and RTTs measured in the run at the
/// buffer found (queueing included), one-way delays as half the RTT (§4's assumption).
#[test]
#[ignore = "measured on 5a2d53e (Linux CUBIC, MPTCP push cuts): 9 of 12 cells off by >15% (10 Mbit/s: minrtt:noor +20.2% at 60 ms, stms-c +23.1, +125.7, +184.5% at 60/120/200 ms; 30 Mbit/s: minrtt:noor +60.0% at 120 ms, stms-c +164.5% at 200 ms; minrtt:noor not reached at 10 Mbit/s 120/200 ms and 30 Mbit/s 200 ms); needs within 15%"]
fn receive_buffer_needed_matches_eq1_for_minrtt_and_eq3_for_stms_c() {
    let mut misses = Vec::new();
    let mut table = String::new();
    for rate in [10e6, 30e6] {
        for rtt_s in [0.060, 0.120, 0.200] {
            let rtt_f = 0.020;
            for (sched, name) in [("minrtt:noor", "Eq. 1"), ("stms-c", "Eq. 3")] {
                let Some((got, v)) = buffer_needed(sched, rate, rtt_f, rtt_s) else {
                    table += &format!("{sched} {rate} {rtt_s}: not reached within 2x Eq. 1\n");
                    misses.push(format!("{sched} {rate} {rtt_s}"));
                    continue;
                };
                let (b_f, b_s, r_f, r_s) = measured(&v);
                let model = if name == "Eq. 1" {
                    stms::buffer_default(b_f, b_s, r_s)
                } else {
                    stms::buffer_stms(b_f, b_s, r_f / 2.0, r_s / 2.0)
                };
                let err = (got - model) / model;
                table += &format!(
                    "{:>4} Mbit/s RTT {:>3}/{:>3} ms {sched:12} needs {:>8.0} B, {name} {:>8.0} B ({:+.1}%)\n",
                    rate / 1e6, rtt_f * 1e3, rtt_s * 1e3, got, model, 100.0 * err
                );
                if err.abs() > 0.15 {
                    misses.push(format!("{sched} {rate} {rtt_s}"));
                }
            }
        }
    }
    println!("{table}");
    assert!(misses.is_empty(), "more than 15% off: {misses:?}\n{table}");
}

/// Issue 12 / Shi et al., USENIX ATC 2018, §5.1.3 Fig. 12a: after the fast path's RTT drops
/// from 20 to 5 ms (slow path 100 ms, both 30 Mbit/s, shallow bottleneck buffers so that the
/// RTTs are the configured ones), STMS-A's gap (Algorithm 2) converges to Eq. 2's value
/// `B_f (OWD_s − OWD_f)`: averaged from 5 adjust intervals `(RTT_s + RTT_f)/2` after the change
/// over the next 2 s, it is within 10% of Eq. 2 evaluated with the fast path's payload capacity
/// and the smoothed RTTs sampled at the same instants (one-way delays as half of them, §4).
///
/// Measured +415.9% (594.5 vs 115.2 segments) until gap samples taken while a loss was being
/// repaired were left out (`stms_a.rs`); +1.9% since (118.6 vs 116.4 segments).
#[test]
fn stms_a_gap_converges_to_eq2_after_a_delay_change() {
    let (rate, change_at) = (30e6, 10.0);
    let sc = Scenario {
        paths: vec![
            PathSpec::bottleneck("fast", rate, 0.020, 0.005, 0.0),
            PathSpec::bottleneck("slow", rate, 0.100, 0.010, 0.0),
        ],
        workload: Workload::Bulk { duration_s: 14.0 },
        transport: Transport::default(),
        sim: SimOptions {
            sample_interval_s: 0.05,
            delay_changes: vec![mpsched_sim::scenario::DelayChange {
                path: 0,
                at_s: change_at,
                rtt_s: 0.005,
            }],
            ..SimOptions::default()
        },
    };
    let (_, tr) = mpsched_sim::run_sampled(&sc, "stms-a", 1).expect("run");
    let b_f = rate * PAYLOAD / 8.0 / MSS; // segments per second
    let interval = (0.100 + 0.005) / 2.0;
    let from = change_at + 5.0 * interval;
    let (mut gap, mut eq2, mut n) = (0.0, 0.0, 0.0);
    // Rows come per path: fast (0) then slow (1) at each instant.
    for i in (0..tr.sample_time_s.len()).step_by(2) {
        let t = tr.sample_time_s[i];
        if t < from || t > from + 2.0 {
            continue;
        }
        let (rtt_f, rtt_s) = (tr.sample_srtt_s[i], tr.sample_srtt_s[i + 1]);
        gap += tr.sample_gap_segs[i];
        eq2 += stms::true_gap(b_f, rtt_f / 2.0, rtt_s / 2.0);
        n += 1.0;
    }
    let (gap, eq2) = (gap / n, eq2 / n);
    let err = (gap - eq2) / eq2;
    println!(
        "gap {gap:.1} segments, Eq. 2 {eq2:.1} ({:+.1}%)",
        100.0 * err
    );
    assert!(
        err.abs() <= 0.10,
        "gap {gap:.1} vs Eq. 2 {eq2:.1} ({:+.1}%)",
        100.0 * err
    );
}
