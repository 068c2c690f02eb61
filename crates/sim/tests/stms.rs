//! Validation of STMS (Shi et al., USENIX ATC 2018) against its own equations, through the
//! simulator: host-buffer requirements (§2.3 Eq. 1, §3.2 Eq. 3) and the gap adjustment of
//! Algorithm 2 converging to Eq. 2 after a delay change (§5.1.3, Fig. 12).

use mpsched_core::model::stms;
use mpsched_sim::scenario::{PathSpec, QueueSpec, Scenario, SimOptions, Transport, Workload};
use serde_json::Value;

/// The multipath schedulers' payload per segment (MPTCP, 1,420 bytes).
const MSS: f64 = mpsched_sim::scenario::MSS_MPTCP as f64;
/// Payload share of a full-sized MPTCP segment on a constant-rate link: 1,420 of a 1,514-byte
/// frame (`mpsched_sim::framing`).
const PAYLOAD: f64 = MSS / mpsched_sim::framing::data_wire_bytes(1420, true, false) as f64;

/// Shi et al., USENIX ATC 2018, §2.1: the in-network buffer is 50 ms on the fast (WiFi) path
/// and 500 ms on the slow (LTE) path, and each run is a 90 s iPerf transfer.
const FAST_QUEUE_S: f64 = 0.050;
const SLOW_QUEUE_S: f64 = 0.500;
const RUN_S: f64 = 90.0;

/// §2.1's two paths at `rate_bps` each with a receive buffer of `rbuf` bytes; the slow path's
/// in-network buffer is `slow_queue` (the paper's: `QueueSpec::Time(SLOW_QUEUE_S)`; other
/// values only in the experiments that isolate its effect).
fn two_paths(rate_bps: f64, rtt_f: f64, rtt_s: f64, rbuf: u64, slow_queue: QueueSpec) -> Scenario {
    let mut slow = PathSpec::bottleneck("slow", rate_bps, rtt_s, SLOW_QUEUE_S, 0.0);
    slow.forward.queue = slow_queue;
    Scenario {
        paths: vec![
            PathSpec::bottleneck("fast", rate_bps, rtt_f, FAST_QUEUE_S, 0.0),
            slow,
        ],
        workload: Workload::Bulk { duration_s: RUN_S },
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
/// and Fig. 8a. Returns it with the run at that buffer, or `None` when twice Eq. 1 (evaluated
/// with what the unlimited run measured) is not enough.
///
/// Fig. 8a reads throughput as a function of the buffer, and that function is not monotone: a
/// larger window lets the fast path burst past its bottleneck buffer (§2.2) and lose. So the
/// buffer is found as the first crossing of the target going up from half of Eq. 4 (below it
/// STMS is single-path) in 10% steps, then bisected inside that step. A plain bisection over
/// the whole bracket assumed monotony and landed past dips: STMS-C at 30 Mbit/s, 20/120 ms
/// (1-BDP bottleneck buffers then) gave 55.8 Mbit/s at 1.7 × Eq. 3 but 49.7 at 3 ×.
fn buffer_needed(
    sched: &str,
    rate_bps: f64,
    rtt_f: f64,
    rtt_s: f64,
    slow_queue: QueueSpec,
) -> Option<(f64, Value)> {
    let b = rate_bps * PAYLOAD / 8.0;
    let run = |buf: f64| {
        let sc = two_paths(rate_bps, rtt_f, rtt_s, buf as u64, slow_queue);
        mpsched_sim::run(&sc, sched, 1).expect("run")
    };
    let goodput = |v: &Value| v["goodput_bps"].as_f64().expect("goodput");
    let unlimited = run(64e6);
    let target = (0.9 * 2.0 * rate_bps * PAYLOAD).min(0.9 * goodput(&unlimited));
    // The slow path's RTT grows with its queue, up to 500 ms more: bound the search with Eq. 1
    // at the RTT the unlimited run measured.
    let (b_f, b_s, _, r_s) = measured(&unlimited);
    let top = 2.0 * stms::buffer_default(b_f, b_s, r_s);
    let mut lo = 0.5 * stms::buffer_fallback(b, rtt_f / 2.0, rtt_s / 2.0);
    let mut step = lo;
    let (mut hi, mut at_hi) = loop {
        if step > top {
            return None;
        }
        let v = run(step);
        if goodput(&v) >= target {
            break (step, v);
        }
        lo = step;
        step *= 1.1;
    };
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
/// buffer found (queueing included), one-way delays as half the RTT (§4's assumption). The
/// setup is the paper's (§2.1: 50/500 ms in-network buffers, 90 s runs) and the buffer needed is
/// the first one reaching the goodput target (see [`buffer_needed`]).
///
/// History: with 1-BDP bottleneck buffers, 8 s runs and a bisection, 8 of 12 cells missed on
/// 34df2c9 (MinRTT +61.9% at 30 Mbit/s 120 ms, not reached at 10 Mbit/s 120/200 ms and
/// 30 Mbit/s 200 ms; STMS-C +19.0, +16.5, +184.3% at 10 Mbit/s, +164.4% at 30 Mbit/s
/// 200 ms). The bisection had stepped over dips in goodput (larger windows, more fast-path
/// bursts and losses, §2.2), and 8 s was mostly slow start on a 200 ms path.
///
/// Still missing: MinRTT at 120 and 200 ms (+38.2, +23.1% at 10 Mbit/s, +35.9, +21.1% at
/// 30 Mbit/s; sRTT_s 454-477 ms and 218-582 slow-path drops at the buffer found; STMS-C loses
/// nothing there). Isolated on 2026-11-24 on b05d10e by two experiments below:
///
/// * [`minrtt_eq1_along_the_receive_buffer`] (this setting, fixed buffers): wherever the slow
///   path runs full without a loss (buffers of 0.3-0.6 s of one path's rate), the buffer is
///   Eq. 1 of the run's own rates and sRTTs within −8.2..+10.6% in all four cells. But there
///   the slow path's queue soaks up whatever window the fast path leaves (sRTT_s grows with
///   the buffer, 220-420 ms), the fast path carries 3.7-4.9 of 9.5 Mbit/s (11.5-14.0 of 28.4)
///   and goodput is 66-75% of capacity. 90% is reached only at 1.0-1.2 s, where the slow path
///   overflows its 500 ms buffer (124-510 drops) and the buffer is +21.6..+38.1% over Eq. 1;
///   from the first buffer with slow-path losses on, the excess grows with the buffer while
///   sRTT_s stays at ~450-500 ms (the queue is full). So the losses go with the miss.
/// * [`minrtt_eq1_slow_path_buffer_variants`] (same search, other slow-path buffers): losses on
///   a flat RTT (20 ms buffer, sRTT_s 62-65 ms) cost far more than 15%: +77.6% / +103.4% at
///   60 ms (603 / 483 slow drops), not reached within 2 × Eq. 1 at 120 and 200 ms. Without
///   losses (30 s buffer, 0 slow drops, asserted) MinRTT does not come within 15% either:
///   nothing then stops CUBIC, sRTT_s climbs through the whole run (mean 4.5 s, p99 12.2 s at
///   10 Mbit/s 120 ms) and Eq. 1 at the run-mean sRTT is +76.6 / +80.6% (10 Mbit/s) and
///   +33.8 / +46.0% (30 Mbit/s) off. In the paper's setting sRTT_s swings over CUBIC's
///   saw-tooth in the 500 ms buffer; Eq. 1 at the p90 of the sRTT samples after 10 s would be
///   +16.5, +3.0, +15.1, −2.5% (at p99 +6.0, −13.5, +5.1, −17.6%), not used here: Eq. 1 has
///   one fixed RTT_s, and picking a percentile to fit would be ours.
///
/// So the loss explanation holds where it can be tested (Eq. 1 fits every run at 120 and
/// 200 ms whose slow path runs full without losses, at 60 ms such runs are −6.5..+17.6%, and
/// losses alone inflate the need), but a loss-free MinRTT is no way to meet Eq. 1: in this
/// setting MinRTT's slow subflow either overflows its buffer or grows its queue into the
/// receive window. No simulator departure found: in the loss-free runs the window equals
/// (B_f + B_s) × sRTT_s, i.e. the data-ACK frees the window one slow-path RTT after the send,
/// which is what Eq. 1 assumes (§2.3, after Raiciu et al., NSDI 2012). Why the fast path runs
/// at half its rate while the window binds (sampled at 10 Mbit/s 120 ms, 0.5 s of buffer):
/// its window (~53 KB, ~37 segments) is not full, the slow path's (595 KB) is frozen by
/// `tcp_is_cwnd_limited`; when a slow-path arrival makes the data-ACK jump, MinRTT fills the
/// fast subflow's free window first and the slow subflow takes the rest, so the slow path's
/// queue holds most of the receive window. That is MinRTT's rule as Linux has it; not
/// compared with a Linux trace.
#[test]
#[ignore = "measured 2026-11-29 after the application's writer sleeps until the send buffer drains to two thirds (sk_stream_wait_memory): 5 of 12 cells off by >15%, all minrtt:noor: +36.4%, +22.0% at 10 Mbit/s 120/200 ms, -15.7%, +35.4%, +21.9% at 30 Mbit/s 60/120/200 ms (10 Mbit/s 60 ms now -13.2%); stms-c +6.3..+9.4% in all 6 cells; needs within 15%. Before: measured 2026-11-25 on 952051c (after packets were charged their Linux frame, 910b0a1): 6 of 12 cells off by >15%, all minrtt:noor: +41.1%, +37.2%, +23.8% at 10 Mbit/s 60/120/200 ms, +40.0%, +36.6%, +21.2% at 30 Mbit/s (at 60 ms sRTT_s is now 405-410 ms, 102-130 slow-path drops); stms-c +5.2..+9.1% in all 6 cells; needs within 15%. Before: measured 2026-11-24 on b05d10e as on 892ecc5 (34df2c9 + this method: +37.5, +23.3, +36.8, +19.7%): 4 of 12 cells off by >15%, all minrtt:noor (+38.2%, +23.1% at 10 Mbit/s 120/200 ms; +35.9%, +21.1% at 30 Mbit/s 120/200 ms); minrtt:noor -14.5/-14.8% at 60 ms, stms-c +5.5..+8.8% in all 6 cells; needs within 15%. isolation 2026-11-24 (doc comment): Eq. 1 fits MinRTT within -8..+11% wherever its slow path runs full and loss-free, but those buffers give 66-75% goodput; 90% comes only with slow-path losses, at +21.6..+38.1%; a loss-free 30 s slow-path buffer misses by +34..+81%"]
fn receive_buffer_needed_matches_eq1_for_minrtt_and_eq3_for_stms_c() {
    let mut misses = Vec::new();
    let mut table = String::new();
    for rate in [10e6, 30e6] {
        for rtt_s in [0.060, 0.120, 0.200] {
            let rtt_f = 0.020;
            for (sched, name) in [("minrtt:noor", "Eq. 1"), ("stms-c", "Eq. 3")] {
                let Some((got, v)) =
                    buffer_needed(sched, rate, rtt_f, rtt_s, QueueSpec::Time(SLOW_QUEUE_S))
                else {
                    table += &format!(
                        "{sched} {rate} {rtt_s}: not reached within 2 x Eq. 1 (unlimited run)\n"
                    );
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
                // Losses are what the equations leave out: a lost segment holds the data-ACK
                // for the extra round trip of its repair.
                let drops = |p: &str| v["drops_by_path"][p].as_u64().expect("drops");
                table += &format!(
                    "{:>4} Mbit/s RTT {:>3}/{:>3} ms {sched:12} needs {:>8.0} B, {name} {:>8.0} B ({:+.1}%), srtt {:.0}/{:.0} ms, drops {}/{}\n",
                    rate / 1e6, rtt_f * 1e3, rtt_s * 1e3, got, model, 100.0 * err,
                    r_f * 1e3, r_s * 1e3, drops("fast"), drops("slow")
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

/// Issue 12, the experiment behind the ignore of
/// [`receive_buffer_needed_matches_eq1_for_minrtt_and_eq3_for_stms_c`]: MinRTT's receive
/// buffer needed (same search, same grid, same fast path) against Eq. 1 with three slow-path
/// in-network buffers, to separate slow-path losses from the slow path's RTT moving:
///
/// * 500 ms (the paper's, §2.1): CUBIC saw-tooths in the buffer, so the slow path both loses
///   and its RTT swings between ~0.7x and 1x of (RTT_s + 500 ms);
/// * 20 ms: losses but an almost constant RTT (no room to queue);
/// * 30 s: no slow-path loss in 90 s (checked), but its RTT grows through the whole run as CUBIC
///   fills the buffer, up to what the receive window lets it hold.
///
/// For each it prints Eq. 1 with the mean sRTT of the run at the buffer found (the Must-show
/// test's reading) and with the mean, p90 and p99 of the slow path's sRTT sampled every 10 ms
/// after the first 10 s. Not a check (deviates from the paper's setting), so ignored; run it
/// with `cargo test --release -p mpsched-sim --test stms -- --ignored --nocapture
/// minrtt_eq1_slow_path_buffer_variants` (about 40 s). Results on 2026-11-24: see the Must-show
/// test's doc comment.
#[test]
#[ignore = "experiment (prints, checks only that the 30 s buffer is loss-free): deviates from the paper's setting"]
fn minrtt_eq1_slow_path_buffer_variants() {
    let mut table = String::new();
    for slow_queue_s in [SLOW_QUEUE_S, 0.020, 30.0] {
        for rate in [10e6, 30e6] {
            for rtt_s in [0.060, 0.120, 0.200] {
                let (sched, rtt_f) = ("minrtt:noor", 0.020);
                let cell = format!(
                    "queue {:>5.0} ms {:>2} Mbit/s RTT {:>2}/{:>3} ms",
                    slow_queue_s * 1e3,
                    rate / 1e6,
                    rtt_f * 1e3,
                    rtt_s * 1e3
                );
                let q = QueueSpec::Time(slow_queue_s);
                let Some((got, v)) = buffer_needed(sched, rate, rtt_f, rtt_s, q) else {
                    table += &format!("{cell}: not reached within 2 x Eq. 1 (unlimited run)\n");
                    continue;
                };
                let (b_f, b_s, _, r_s) = measured(&v);
                let drops = |p: &str| v["drops_by_path"][p].as_u64().expect("drops");
                if slow_queue_s > 1.0 {
                    assert_eq!(
                        drops("slow"),
                        0,
                        "{cell}: the deep buffer must be loss-free"
                    );
                }
                // The same run again, sampled: the slow path's sRTT over the run.
                let mut sc = two_paths(rate, rtt_f, rtt_s, got as u64, q);
                sc.sim.sample_interval_s = 0.01;
                let (v2, tr) = mpsched_sim::run_sampled(&sc, sched, 1).expect("run");
                assert_eq!(
                    v2["goodput_bps"], v["goodput_bps"],
                    "sampling changed the run"
                );
                // The slow path's sRTT samples after `from` seconds.
                let slow_srtt_after = |from: f64| -> Vec<f64> {
                    (0..tr.sample_time_s.len())
                        .filter(|&i| tr.sample_path[i] == 1 && tr.sample_time_s[i] > from)
                        .map(|i| tr.sample_srtt_s[i])
                        .collect()
                };
                let mean_of = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                let mut srtt = slow_srtt_after(10.0);
                srtt.sort_by(f64::total_cmp);
                let pct = |f: f64| srtt[((srtt.len() - 1) as f64 * f).round() as usize];
                let mean = mean_of(&srtt);
                let last = mean_of(&slow_srtt_after(RUN_S - 10.0));
                let err = |r: f64| {
                    let model = stms::buffer_default(b_f, b_s, r);
                    100.0 * (got - model) / model
                };
                table += &format!(
                    "{cell}: needs {got:>8.0} B, drops {}/{}; Eq. 1 at sRTT_s run mean {:.0} ms {:+.1}%, after 10 s mean {:.0} ms {:+.1}%, p90 {:.0} ms {:+.1}%, p99 {:.0} ms {:+.1}%, last 10 s mean {:.0} ms {:+.1}%\n",
                    drops("fast"), drops("slow"),
                    r_s * 1e3, err(r_s), mean * 1e3, err(mean),
                    pct(0.9) * 1e3, err(pct(0.9)), pct(0.99) * 1e3, err(pct(0.99)),
                    last * 1e3, err(last)
                );
            }
        }
    }
    println!("{table}");
}

/// Issue 12, the second experiment behind the ignore of
/// [`receive_buffer_needed_matches_eq1_for_minrtt_and_eq3_for_stms_c`], in the paper's setting
/// itself: MinRTT's goodput, per-path rates, sRTTs and drops at fixed receive buffers from 0.15
/// to 1.4 s of one path's payload rate, and the buffer against Eq. 1 evaluated with what each
/// run measured. Where the slow path runs full without losses, its queue absorbs whatever
/// window the fast path leaves (its sRTT grows with the buffer) and the buffer is Eq. 1; at
/// 120 and 200 ms the goodput target is reached only at buffers where the slow path overflows
/// its 500 ms buffer.
/// Prints only (run with `-- --ignored --nocapture minrtt_eq1_along_the_receive_buffer`, 4 s);
/// results on 2026-11-24 in the Must-show test's doc comment.
#[test]
#[ignore = "experiment (prints, no check)"]
fn minrtt_eq1_along_the_receive_buffer() {
    let mut table = String::new();
    for rate in [10e6, 30e6] {
        for rtt_s in [0.060, 0.120, 0.200] {
            let b = rate * PAYLOAD / 8.0;
            for k in [0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 1.2, 1.4] {
                let buf = k * b;
                let sc = two_paths(
                    rate,
                    0.020,
                    rtt_s,
                    buf as u64,
                    QueueSpec::Time(SLOW_QUEUE_S),
                );
                let v = mpsched_sim::run(&sc, "minrtt:noor", 1).expect("run");
                let (b_f, b_s, r_f, r_s) = measured(&v);
                let drops = |p: &str| v["drops_by_path"][p].as_u64().expect("drops");
                let model = stms::buffer_default(b_f, b_s, r_s);
                let goodput = v["goodput_bps"].as_f64().expect("goodput");
                table += &format!(
                    "{:>2} Mbit/s RTT 20/{:>3} ms buffer {buf:>8.0} B ({k:.2} s): goodput {:>3.0}% of capacity, fast/slow {:>5.2}/{:>5.2} Mbit/s, sRTT {:>3.0}/{:>3.0} ms, drops {:>3}/{:>3}; Eq. 1 {model:>8.0} B, buffer {:+.1}%\n",
                    rate / 1e6, rtt_s * 1e3,
                    100.0 * goodput / (2.0 * rate * PAYLOAD),
                    b_f * 8e-6, b_s * 8e-6, r_f * 1e3, r_s * 1e3, drops("fast"), drops("slow"),
                    100.0 * (buf - model) / model
                );
            }
        }
    }
    println!("{table}");
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
