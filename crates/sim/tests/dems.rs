//! Validation of DEMS (Guo et al., MobiCom 2017) in the simulator: one test per "Must show" of issue 4, each
//! naming the equation or figure it checks. `cargo test --release -p mpsched-sim --test dems --
//! --nocapture` prints the measured numbers.
//!
//! Runs of one test are independent, so they go through rayon; a seed's randomness is the
//! per-packet Bernoulli loss of the links (with no random loss every seed gives the same run).

use mpsched_sim::tracing::{EventKind, PacketTrace, Side};
use rayon::prelude::*;

use net::*;

/// Scenarios built from `mpsched_sim::scenario` structs, and what the tests read from a run.
mod net {
    use mpsched_sim::scenario::{PathSpec, Scenario, SimOptions, Transport, Workload};
    use serde_json::Value;

    pub const KIB: u64 = 1 << 10;
    pub const MIB: u64 = 1 << 20;

    /// A path as `mpsched` builds one: the forward link is the bottleneck (`rate_bps`, drop-tail
    /// buffer of `queue_s` of line rate, Bernoulli `loss`); the ACK direction has delay only.
    pub fn path(name: &str, rate_bps: f64, rtt_s: f64, queue_s: f64, loss: f64) -> PathSpec {
        PathSpec::bottleneck(name, rate_bps, rtt_s, queue_s, loss)
    }

    /// A path whose forward bottleneck replays the mahimahi trace file `trace`.
    pub fn trace_path(name: &str, trace: &str, rtt_s: f64, queue_s: f64) -> PathSpec {
        let mut p = path(name, 1.0, rtt_s, queue_s, 0.0);
        p.forward.rate_bps = None;
        p.forward.trace = Some(trace.into());
        p
    }

    /// Guo et al., MobiCom 2017, §3.2 footnote 2 and §7.1: WiFi 7040 kbit/s, RTT 50 ms, 50 ms buffer; LTE
    /// 9185 kbit/s, 500 ms buffer, RTT `lte_rtt_s` (70 ms in the profile, inflated in §7.2).
    pub fn wifi_lte(lte_rtt_s: f64, loss: f64) -> Vec<PathSpec> {
        vec![
            path("wifi", 7_040e3, 0.050, 0.050, loss),
            path("lte", 9_185e3, lte_rtt_s, 0.500, loss),
        ]
    }

    pub fn scenario(paths: Vec<PathSpec>, workload: Workload, cc: &str) -> Scenario {
        Scenario {
            paths,
            workload,
            transport: Transport {
                cc: cc.into(),
                ..Transport::default()
            },
            sim: SimOptions::default(),
        }
    }

    /// One chunk on a fresh connection (every subflow starts in slow start).
    pub fn chunk(size_bytes: u64) -> Workload {
        Workload::Chunk { size_bytes }
    }

    /// Two chunks back to back, `think_s` apart, with the hint API.
    pub fn two_chunks(size_bytes: u64, think_s: f64) -> Workload {
        Workload::Chunks {
            size_bytes,
            count: 2,
            think_s,
            hint: true,
        }
    }

    /// What a test reads from one run, for chunk `k`.
    #[derive(Clone, Copy, Debug)]
    pub struct Outcome {
        pub download_s: f64,
        pub gap_s: f64,
        pub reinjected: f64,
    }

    pub fn run(sc: &Scenario, sched: &str, seed: u64) -> Value {
        let v = mpsched_sim::run(sc, sched, seed)
            .unwrap_or_else(|e| panic!("{sched}, seed {seed}: {e}"));
        assert_eq!(v["truncated"], false, "{sched}, seed {seed}: run cut short");
        v
    }

    pub fn outcome(sc: &Scenario, sched: &str, seed: u64, k: usize) -> Outcome {
        let v = run(sc, sched, seed);
        let num = |key: &str| {
            v[key][k]
                .as_f64()
                .unwrap_or_else(|| panic!("{sched}, seed {seed}: no {key}[{k}] in {v}"))
        };
        Outcome {
            download_s: num("chunk_times_s"),
            gap_s: num("completion_gaps_s"),
            reinjected: v["reinjected_bytes"].as_f64().unwrap_or(0.0),
        }
    }

    pub fn median(v: impl IntoIterator<Item = f64>) -> f64 {
        let mut v: Vec<f64> = v.into_iter().collect();
        assert!(!v.is_empty());
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }
}

/// Payload bytes per second of a saturated constant-rate link of `rate_bps`: every full MPTCP
/// segment (1,420 bytes of payload) is a 1,514-byte frame on the wire (`mpsched_sim::framing`).
fn payload_rate(rate_bps: f64) -> f64 {
    let mss = mpsched_sim::scenario::MSS_MPTCP;
    let wire = mpsched_sim::framing::data_wire_bytes(mss, true, false);
    rate_bps / 8.0 * f64::from(mss) / f64::from(wire)
}

/// The X shape of Guo et al., MobiCom 2017, Fig. 7/8 measured on a packet trace, for the first chunk (the
/// `[0, size)` DSN range).
#[derive(Debug)]
struct Meeting {
    /// Last transmission of new data of the chunk: the subflows meet.
    at_s: f64,
    /// Per path: one-way delay of its last new segment of the chunk (send to arrival).
    owd_s: Vec<f64>,
    /// Per path: payload arrival rate over the round trip before the meeting, bytes/s.
    rate: Vec<f64>,
    /// Bytes reinjected for the chunk.
    reinjected: f64,
}

fn meeting(tr: &PacketTrace, npaths: usize, size: u64) -> Meeting {
    let in_chunk = |i: usize| tr.dsn[i] < size;
    let mut at_s = 0.0f64;
    let mut last_send = vec![(0.0f64, u64::MAX); npaths];
    for i in (0..tr.len()).filter(|&i| in_chunk(i)) {
        if tr.side[i] == Side::Sender && tr.kind[i] == EventKind::Send {
            at_s = at_s.max(tr.time_s[i]);
            last_send[tr.path[i] as usize] = (tr.time_s[i], tr.dsn[i]);
        }
    }
    let mut owd_s = vec![f64::NAN; npaths];
    let mut reinjected = 0.0;
    for i in (0..tr.len()).filter(|&i| in_chunk(i)) {
        let p = tr.path[i] as usize;
        match (tr.side[i], tr.kind[i]) {
            (Side::Receiver, EventKind::Arrive)
                if tr.dsn[i] == last_send[p].1
                    && owd_s[p].is_nan()
                    && tr.time_s[i] >= last_send[p].0 =>
            {
                owd_s[p] = tr.time_s[i] - last_send[p].0;
            }
            (Side::Sender, EventKind::Reinject) => reinjected += tr.len[i] as f64,
            _ => {}
        }
    }
    let window = owd_s.iter().fold(0.0f64, |a, &b| a.max(2.0 * b));
    let mut bytes = vec![0.0; npaths];
    for i in 0..tr.len() {
        let t = tr.time_s[i];
        if tr.side[i] == Side::Receiver
            && tr.kind[i] == EventKind::Arrive
            && t > at_s - window
            && t <= at_s
        {
            bytes[tr.path[i] as usize] += tr.len[i] as f64;
        }
    }
    Meeting {
        at_s,
        owd_s,
        rate: bytes.iter().map(|b| b / window).collect(),
        reinjected,
    }
}

/// The "stable scenario" premise of Eq. 10 and 13: every link delivers at its payload rate `b`
/// over the last round trip before the subflows meet.
fn assert_saturated(m: &Meeting, b: &[f64]) {
    for (p, (rate, link)) in m.rate.iter().zip(b).enumerate() {
        assert!(
            (rate / link - 1.0).abs() < 0.05,
            "not a stable scenario: path {p} delivers {rate:.0} B/s at the meeting point, \
             link {link:.0}"
        );
    }
}

/// B1·B2/(B1 + B2), the factor of Eq. 10 and Eq. 13 (bytes/s).
fn harmonic(b1: f64, b2: f64) -> f64 {
    b1 * b2 / (b1 + b2)
}

/// [`eight_mib_meeting`]'s buffers: the paper's evaluation's, or Linux's autotuned defaults.
const PAPERS: bool = true;
const LINUX: bool = false;

/// WiFi 7040 and LTE 9185 kbit/s with base RTTs `rtt_s` and drop-tail buffers `queue_s`, two
/// 8 MiB chunks 2 s apart (CUBIC, no random loss), scheduled by `sched`: the first chunk's
/// meeting point and the links' payload rates (bytes/s).
///
/// With `papers_buffers` ([`PAPERS`]), the buffers of the paper's evaluation instead of Linux's autotuned
/// ones: a fixed 16 MiB receive window ("16 MB by default ... larger than a typical chunk
/// size", §4.1) and a send buffer locked at 16 MiB (§7: "the meta buffers at both the proxy and
/// the receiver side are configured to be sufficiently large"), so the whole chunk is in the
/// scheduler's buffer from the start, as Fig. 7 draws it.
fn eight_mib_meeting(
    sched: &str,
    rtt_s: [f64; 2],
    queue_s: [f64; 2],
    papers_buffers: bool,
) -> (Meeting, [f64; 2]) {
    let rates = [7_040e3, 9_185e3];
    let mut sc = scenario(
        vec![
            path("wifi", rates[0], rtt_s[0], queue_s[0], 0.0),
            path("lte", rates[1], rtt_s[1], queue_s[1], 0.0),
        ],
        two_chunks(8 * MIB, 2.0),
        "cubic",
    );
    if papers_buffers {
        sc.transport.recv_buffer_bytes = Some(16 * MIB);
        sc.transport.send_buffer_bytes = 16 * MIB;
        sc.transport.send_buffer_lock = true;
    }
    let (_, tr) = mpsched_sim::run_traced(&sc, sched, 1).expect("runs");
    let m = meeting(&tr, 2, 8 * MIB);
    (m, [payload_rate(rates[0]), payload_rate(rates[1])])
}

/// Guo et al., MobiCom 2017, Eq. 10: DEMS-S reinjects BW1·BW2/(BW1+BW2)·(RTT1+RTT2) bytes (the "X" of Fig. 7).
///
/// Scenario: two saturated paths with the same base RTT (100 ms, one BDP of drop-tail buffer
/// each), WiFi 7040 and LTE 9185 kbit/s, an 8 MiB chunk, CUBIC in congestion avoidance at the
/// end, the paper's buffers (a fixed 16 MiB receive window, a send buffer locked at 16 MiB:
/// [`eight_mib_meeting`]). The bandwidths are the links' payload rates (checked against the trace: both links must
/// be saturated at the meeting point); the RTTs are base RTT plus the queueing delay the last
/// data segments met, measured on the packet trace (OWD of the last new segment plus the 50 ms
/// ACK path). A second chunk follows so that the sender keeps running after the receiver has
/// the first: the count includes what the sender reinjects until it learns that. Equal base
/// RTTs keep ΔOWD ≪ RTT, Fig. 7's single crossing point; see
/// `eq10_breaks_down_with_large_delta_owd` for why that matters here.
///
/// Measured 2026-11-24 with the paper's buffers: 161,880 B against Eq. 10's 156,293 B (RTT
/// 191.6 + 137.7 ms), ratio 1.036.
///
/// With Linux's autotuned buffers instead it misses (a helper's trace of 704509e, segment by
/// segment; the test was ignored with these numbers until the scenario could lock the send
/// buffer, `transport.send_buffer_lock`): Fig. 7 assumes
/// the whole chunk is in the meta buffer from the start (§4.1, with a 16 MB receive window
/// larger than the chunk), so the head subflow's DSN order is its send order and the tail
/// subflow's is the reverse of its send order. With Linux's buffers that no longer holds: the
/// send buffer autotunes to about 2·cwnd per subflow (`tcp_sndbuf_expand`), about 1 MB here,
/// so the application writes the 8 MiB chunk as ACKs free room (the highest DSN sent reaches
/// 1, 2, 3, 4.5, 5.2, 6.3, 7.4 MiB at 0.96, 1.48, 2.03, 2.48, 2.62, 3.69, 3.74 s; the subflows
/// meet at 4.820 s), and the tail subflow fetches each new tail (§5) or, while the tail lies
/// past the autotuned receive window, helps from the head. The chunk ends up interleaved (LTE's
/// new data in 2,911 separate DSN runs) and 269,800 reinjected bytes (Eq. 10: 133,275 B with
/// RTT 142.4 + 138.4 ms; ratio 2.024) split as:
///
/// * 86,620 B at 1.19-1.12 s *before* the meeting point: the buffer's data was all sent while
///   the chunk was still open, which DEMS treats as a meeting (see "Deviations and limits" in
///   `dems.rs`); Fig. 7 has no such event;
/// * 183,180 B after it (1.374 × Eq. 10): WiFi's forward walk meets LTE's copies in DSN
///   order, which is no longer LTE's reverse send order, so it copies LTE's oldest
///   unacknowledged segments first (aged 136-336 ms at the meeting, some of them LTE's own
///   loss retransmissions), whose ACKs were already on their way, instead of the youngest
///   ones next to the meeting point that the X of Fig. 7 races. Only 29,820 of the 269,800
///   bytes reached the receiver before their originals.
///
/// Nothing else in the count differs from the equation's meaning: it holds only `Reinject`
/// transmissions of the chunk (subflow retransmissions, 25,560 B here, are a separate kind),
/// every copy is a full 1,420-byte segment, and the inputs are as above. With the send buffer
/// locked at 16 MiB alone the chunk is in the buffer at once, nothing is reinjected before the
/// meeting, and the run gives 160,460 B against Eq. 10's ≈ 158,700 B (ratio 1.011). So the
/// miss was the model's premise, which Linux-sized buffers remove, not a departure of DEMS-S
/// from §4.3; the test now runs in the paper's setting.
#[test]
fn eq10_simple_reinjection_bytes() {
    let (m, b) = eight_mib_meeting("dems-s", [0.100, 0.100], [0.100, 0.100], PAPERS);
    assert_saturated(&m, &b);
    let rtt = [m.owd_s[0] + 0.050, m.owd_s[1] + 0.050];
    let eq10 = harmonic(b[0], b[1]) * (rtt[0] + rtt[1]);
    println!(
        "Eq. 10: subflows meet at {:.3} s; dems-s reinjected {:.0} B, Eq. 10 {:.0} B \
         (RTT {:.1} + {:.1} ms): ratio {:.3}",
        m.at_s,
        m.reinjected,
        eq10,
        rtt[0] * 1e3,
        rtt[1] * 1e3,
        m.reinjected / eq10
    );
    assert!(
        (m.reinjected / eq10 - 1.0).abs() <= 0.15,
        "Eq. 10: {:.0} reinjected bytes vs {eq10:.0} predicted ({m:?})",
        m.reinjected
    );
}

/// Guo et al., MobiCom 2017, Eq. 13: DEMS-F reinjects 2δ·BW1·BW2/(BW1+BW2) bytes.
///
/// Scenario: WiFi 7040 kbit/s RTT 50 ms and LTE 9185 kbit/s RTT 270 ms, one BDP of drop-tail
/// buffer each, an 8 MiB chunk, CUBIC, the paper's buffers ([`eight_mib_meeting`]), and a
/// fixed δ = 30 ms (`dems-f:delta=30ms`, "δ can be
/// configured", §4.4) so that the equation's input is known; ΔOWD (≈ 200 ms) exceeds δ by far,
/// as the derivation assumes. Bandwidths: the links' payload rates (checked against the
/// trace). A second chunk follows, as for Eq. 10. The count is independent of ΔOWD and of the
/// RTTs only while the ΔOWD estimate is the same when the large subflow stops (line 16) and
/// while the small one reinjects (line 12): an estimate drifting by x between the two moves
/// the count by x · BW1·BW2/(BW1+BW2).
///
/// Measured 2026-11-24 with the paper's buffers: 26,980 B against Eq. 13's 28,474 B, ratio
/// 0.948.
///
/// With Linux's autotuned buffers instead it misses (a helper's trace of 704509e, segment by
/// segment; ignored with these numbers until `transport.send_buffer_lock`): 41,180 B vs
/// 28,474 B, ratio 1.446. The count itself is what Eq. 13 means: 29 full 1,420-byte segments,
/// all on WiFi after the meeting point (5.250 s), none before it, none on LTE (ΔOWD > δ), no
/// subflow retransmission among them, each arriving before its LTE original. The surplus,
/// 12,706 B = 26.8 ms × BW1·BW2/(BW1+BW2), is the drift this doc comment warns of, and it is
/// real, not DEMS departing from Algorithm 1:
///
/// * at the stop (line 16, 0.25 s before the meeting) ΔOWD was 262.8 ms (WiFi 73.3, LTE
///   336.1 ms). LTE's window was still growing, so its bytes in flight lay above every
///   10 KB bin with samples (samples come one OWD plus the ACK path, ≈ 0.47 s, after the send)
///   and its OWD was extrapolated: the trace shows 358-361 ms for those segments;
/// * when WiFi reinjects (line 12), the samples of those bins have arrived: Eq. 11 sees
///   ΔOWD ≈ 360 − 47.9 = 312 ms for the copies, and the WiFi OWD itself fell from 72 to
///   44.5 ms (trace) after a drop-tail loss 40 ms before the meeting. WiFi copied the LTE
///   segments sent 208.6-328.9 ms before each copy; with one ΔOWD at both lines the copied
///   ages would span ΔOWD − δ to ΔOWD + δ.
///
/// The same holds across chunk sizes (7.0-9.0 MiB in 0.25 MiB steps: ratio 1.35-1.65; at
/// 7.5 MiB the stop sees LTE at 307.8 ms extrapolated, the copies read 328-335 ms later, the
/// truth is 339.3 ms). The drift comes with the Linux receive-window autotuning: with a fixed
/// receive buffer (`recv_buffer_bytes` 16 MiB or 6 MiB) the same run gives 31,240 B or
/// 34,080 B (1.097, 1.197), with LTE's queue full and its OWD steady at ≈ 400 ms at the end;
/// with the send buffer locked at 16 MiB, 0.948.
#[test]
fn eq13_adaptive_reinjection_bytes() {
    let delta_s = 0.030;
    let (m, b) = eight_mib_meeting("dems-f:delta=30ms", [0.050, 0.270], [0.050, 0.270], PAPERS);
    assert_saturated(&m, &b);
    let eq13 = 2.0 * delta_s * harmonic(b[0], b[1]);
    println!(
        "Eq. 13: dems-f (δ = 30 ms) reinjected {:.0} B, Eq. 13 {:.0} B: ratio {:.3}",
        m.reinjected,
        eq13,
        m.reinjected / eq13
    );
    assert!(
        (m.reinjected / eq13 - 1.0).abs() <= 0.15,
        "Eq. 13: {:.0} reinjected bytes vs {eq13:.0} predicted ({m:?})",
        m.reinjected
    );
}

/// Why Eq. 10 needs ΔOWD ≪ RTT here (documentation of a model limit, not a requirement): in
/// the Eq. 13 scenario (WiFi RTT 50 ms, LTE 270 ms) DEMS-S reinjects clearly less than Eq. 10,
/// because (1) the
/// connection's data-ACK tells the sender that the chunk is complete one small-path round trip
/// after the meeting point (the paper's proxy only had per-subflow ACKs), and (2) the large
/// subflow, withheld ΔOWD before the meeting point by Eq. 9, can reinject at most the small
/// subflow's unacknowledged bytes (RTT1·BW1), less than Eq. 10's (RTT1 + ΔOWD)·BW1BW2/(BW1+BW2).
#[test]
fn eq10_breaks_down_with_large_delta_owd() {
    let (m, b) = eight_mib_meeting("dems-s", [0.050, 0.270], [0.050, 0.270], LINUX);
    let rtt = [m.owd_s[0] + 0.025, m.owd_s[1] + 0.135];
    let eq10 = harmonic(b[0], b[1]) * (rtt[0] + rtt[1]);
    println!(
        "Eq. 10 with ΔOWD ≈ {:.0} ms: dems-s reinjected {:.0} B, Eq. 10 {:.0} B: ratio {:.3}",
        (m.owd_s[1] - m.owd_s[0]) * 1e3,
        m.reinjected,
        eq10,
        m.reinjected / eq10
    );
    assert!(m.reinjected < 0.85 * eq10, "{m:?}");
}

/// Guo et al., MobiCom 2017, Fig. 12 (and Fig. 2): WiFi 7040 kbit/s RTT 50 ms (50 ms buffer), LTE 9185 kbit/s
/// RTT 270 ms (500 ms buffer), 1 MiB, CUBIC: DEMS-F's subflows complete together at the
/// receiver (median gap over 10 seeds ≤ 20 ms) and MinRTT's do not (≥ 100 ms).
///
/// The paper measures ten repeated downloads over its proxy's long-lived subflows (§6, §7.2),
/// so the demand is checked on a chunk downloaded over an established connection: the second
/// of two 1 MiB chunks, 0.5 s apart, with the windows the first one built
/// (`slow_start_after_idle` off, as `net.ipv4.tcp_slow_start_after_idle = 0` on a proxy). That
/// is the regime §4.2 is about: the large-OWD path, not its window, limits what it delivers,
/// so MinRTT overloads it at the chunk end and Eq. 9 has something to stop. With Linux's
/// default restart after idle the 0.5 s pause halves LTE's window twice (108 → 27 segments)
/// and DEMS-F's gap is 44 ms (MinRTT's 119 ms), printed: LTE's slow-start flights leave as
/// line-rate bursts (no pacing), each segment queueing behind the burst before it, so its
/// 10 KB bytes-in-flight bins learn that 116 KB in flight means a 197 ms OWD; the ACK-clocked
/// flight that follows at the same bytes in flight sees 151 ms, and Eq. 9 stops LTE 46 ms of
/// WiFi time early. The §5 estimator cannot tell a burst from a standing queue.
///
/// Seeds differ by a 0.05% random loss on both forward links (without it every seed is the
/// same run). More loss moves DEMS-F's median: with 0.1% it is 27 ms, because a loss late in
/// LTE's region costs an LTE round trip to repair and lies outside the Eq. 11 reinjection range
/// (the bytes LTE sent within ΔOWD + δ) by design.
///
/// Ignored from 5a2d53e (median gap 71.0 ms with the receiver autotuning its buffer as Linux
/// 6.18 does) until 892ecc5, where windows grow only when Linux's `tcp_is_cwnd_limited` allows:
/// 1.0 ms (MinRTT 170.9 ms); with restart after idle 12.7 ms (MinRTT 46.0 ms).
#[test]
fn simultaneous_completion_wifi_lte_270ms() {
    let (dems, minrtt, _) = completion(1, false);
    println!(
        "Fig. 12, established connection: median completion gap dems-f {:.1} ms, minrtt {:.1} ms",
        dems.gap_s * 1e3,
        minrtt.gap_s * 1e3
    );
    let (d, m, _) = completion(1, true);
    println!(
        "Fig. 12, established connection, restart after idle: median completion gap dems-f \
         {:.1} ms, minrtt {:.1} ms",
        d.gap_s * 1e3,
        m.gap_s * 1e3
    );
    assert!(
        dems.gap_s <= 0.020,
        "dems-f median completion gap {:.3} s > 20 ms",
        dems.gap_s
    );
    assert!(
        minrtt.gap_s >= 0.100,
        "minrtt median completion gap {:.3} s < 100 ms",
        minrtt.gap_s
    );
}

/// The same scenario on a fresh connection (the first chunk): DEMS-F's subflows still complete
/// within 20 ms of each other (median over 10 seeds), and its download is as fast as the
/// offline-optimal split's (Guo et al., MobiCom 2017, §3.2) within 1%.
///
/// MinRTT's gap is small here too (12 ms), and not for a reason of scheduling: for the whole
/// 1 MiB the LTE subflow is in slow start (10, 20, 40, 80 segments per 270 ms round), so it is
/// window-limited and no scheduler can queue more on it than its window. The gap the paper
/// measures for MinRTT (Fig. 2: 100-450 ms) needs an LTE window that outgrows what LTE can
/// deliver before WiFi finishes, i.e. an established subflow (the test above).
///
/// Runs again since 2026-11-29, when the application's writer began to sleep until the send
/// buffer drains to two thirds, as Linux's does (`sk_stream_wait_memory`): dems-f 1,304.6 ms
/// against the best fixed split's 1,302.0 ms (1.002x; 1.3167 against 1.3020 s before, 1.011x).
#[test]
fn simultaneous_completion_fresh_connection() {
    let (dems, minrtt, oracle) = completion(0, true);
    println!(
        "Fig. 12, fresh connection: median completion gap dems-f {:.1} ms, minrtt {:.1} ms, \
         oracle split {:.1} ms; median download dems-f {:.1} ms, oracle {:.1} ms",
        dems.gap_s * 1e3,
        minrtt.gap_s * 1e3,
        oracle.gap_s * 1e3,
        dems.download_s * 1e3,
        oracle.download_s * 1e3
    );
    assert!(
        dems.download_s <= 1.01 * oracle.download_s,
        "dems-f median download {:.4} s > 1.01 x oracle's {:.4} s",
        dems.download_s,
        oracle.download_s
    );
}

/// The completion-gap half of the test above: DEMS-F's subflows complete within 20 ms of each
/// other on the fresh connection.
#[test]
#[ignore = "measured 2026-11-29 after the application's writer sleeps until the send buffer drains to two thirds (sk_stream_wait_memory): 69.3 ms (minrtt 64.7, the best fixed split 64.7 ms); needs <= 20 ms. Before: measured 2026-11-25 after fast recovery took Linux's PRR (b12bef8): unchanged, 81.6 ms. Before: measured 2026-11-25 after packets were charged their Linux frame (910b0a1): 81.6 ms (the best fixed split's gap is 64.7 ms; 5a2d53e: 66.3 and 49.5 ms): LTE joins at 0.51 s (MP_JOIN timeline) and then moves 10, 20, 40 segments per 270 ms round, too coarse to finish with WiFi; needs <= 20 ms"]
fn simultaneous_completion_fresh_connection_gap() {
    let (dems, _, _) = completion(0, true);
    assert!(
        dems.gap_s <= 0.020,
        "dems-f median completion gap {:.3} s > 20 ms",
        dems.gap_s
    );
}

/// Medians over 10 seeds of chunk `k`'s completion gap and download time, for dems-f, minrtt
/// and the oracle (the oracle's gap is the spread of its paths' finish times), with or without
/// restart after idle between the two chunks.
fn completion(k: usize, restart: bool) -> (Outcome, Outcome, Outcome) {
    let mut sc = scenario(wifi_lte(0.270, 0.0005), two_chunks(MIB, 0.5), "cubic");
    sc.transport.slow_start_after_idle = restart;
    let medians = |sched: &str| {
        let v: Vec<Outcome> = (1..=10u64)
            .into_par_iter()
            .map(|seed| outcome(&sc, sched, seed, k))
            .collect();
        println!(
            "  {sched} chunk {k} gaps (ms): {:?}",
            v.iter()
                .map(|o| (o.gap_s * 1e3).round())
                .collect::<Vec<_>>()
        );
        Outcome {
            download_s: median(v.iter().map(|o| o.download_s)),
            gap_s: median(v.iter().map(|o| o.gap_s)),
            reinjected: median(v.iter().map(|o| o.reinjected)),
        }
    };
    (medians("dems-f"), medians("minrtt"), medians("oracle"))
}

/// Guo et al., MobiCom 2017, Fig. 10: median DEMS-F download time ≤ MinRTT's (2% tolerance) for RTT pairs
/// 50/70, 50/170, 50/270 ms and chunks of 128 KiB to 4 MiB (WiFi 7040, LTE 9185 kbit/s; 10
/// seeds differing by a 0.1% random loss), on a fresh connection and on an established one
/// (the second of two chunks 0.5 s apart, Linux's restart after idle on). The paper reports
/// 15-38% reductions for 128 KiB-1 MiB with large RTT differences; the printed tables show
/// ours: up to 27% on fresh connections, up to 17% on established ones, and ±1% in the cells
/// where the LTE subflow is window-limited for the whole transfer (a fresh 270 ms LTE path is
/// in slow start through 1 MiB), since Eq. 9 then never binds and MinRTT cannot overload LTE.
#[test]
#[ignore = "measured 2026-11-29 after the application's writer sleeps until the send buffer drains to two thirds (sk_stream_wait_memory): dems-f/minrtt 1.021 at LTE RTT 70 ms 4 MiB, 1.051 at 170 ms 512 KiB, 1.030 at 170 ms 2 MiB, 1.039 at 170 ms 4 MiB (270 ms 512 KiB now 1.001); needs <= 1.02. Before: measured 2026-11-25 after Nagle's algorithm at the connection level (v0.9x mptcp_write_xmit, efde540): dems-f/minrtt 1.041 at LTE RTT 70 ms 4 MiB, 1.134 at 170 ms 2 MiB, 1.072 at 170 ms 4 MiB, 1.022 at 270 ms 512 KiB (dems-f 787.2 ms, 771.6 before). Before: measured 2026-11-25 after fast recovery took Linux's PRR (b12bef8): dems-f/minrtt 1.031 at LTE RTT 70 ms 4 MiB, 1.134 at 170 ms 2 MiB, 1.072 at 170 ms 4 MiB. Before: measured 2026-11-25 after packets were charged their Linux frame (910b0a1): dems-f/minrtt 1.033 at LTE RTT 70 ms 4 MiB (every other fresh-connection cell within 1.02; 5a2d53e: 1.035); needs <= 1.02"]
fn fig10_dems_f_not_slower_than_minrtt() {
    fig10_table(0);
}

/// The established-connection half of Fig. 10 (the second of two chunks 0.5 s apart).
#[test]
#[ignore = "measured 2026-11-29 after the application's writer sleeps until the send buffer drains to two thirds (sk_stream_wait_memory): dems-f/minrtt 1.039 at LTE RTT 70 ms 4 MiB and 1.025 at 270 ms 2 MiB (70 ms 1 and 2 MiB now 1.003 and 1.008, 270 ms 4 MiB 1.001); needs <= 1.02. Before: measured 2026-11-25 after fast recovery took Linux's PRR (b12bef8): dems-f/minrtt 1.071, 1.029, 1.047 at LTE RTT 70 ms 1, 2, 4 MiB and 1.046 at 270 ms 4 MiB. Before: measured 2026-11-25 after packets were charged their Linux frame (910b0a1): dems-f/minrtt 1.079, 1.032, 1.043 at LTE RTT 70 ms 1, 2, 4 MiB, 1.050 at 170 ms 2 MiB and 1.040 at 270 ms 4 MiB (892ecc5: 1.085, 1.035, 1.041, 1.024, 1.038) (5a2d53e: 1.086, 1.048, 1.074, 1.036); needs <= 1.02"]
fn fig10_dems_f_not_slower_than_minrtt_established() {
    fig10_table(1);
}

/// The Fig. 10 grid for chunk `k` (0: fresh connection, 1: established).
fn fig10_table(k: usize) {
    let cells: Vec<(f64, u64)> = [0.070, 0.170, 0.270]
        .into_iter()
        .flat_map(|r| [128, 256, 512, 1024, 2048, 4096].map(|s| (r, s * KIB)))
        .collect();
    let results: Vec<(f64, u64, f64, f64)> = cells
        .par_iter()
        .map(|&(rtt, size)| {
            let work = if k == 0 {
                chunk(size)
            } else {
                two_chunks(size, 0.5)
            };
            let sc = scenario(wifi_lte(rtt, 0.001), work, "cubic");
            let med =
                |sched: &str| median((1..=10).map(|seed| outcome(&sc, sched, seed, k).download_s));
            (rtt, size, med("dems-f"), med("minrtt"))
        })
        .collect();
    let conn = ["fresh", "established"][k];
    let mut worse = Vec::new();
    for &(rtt, size, d, m) in &results {
        println!(
            "Fig. 10, {conn}: LTE RTT {:3.0} ms {:5} KiB: dems-f {:6.1} ms, minrtt {:6.1} ms, \
             change {:+5.1}%",
            rtt * 1e3,
            size / KIB,
            d * 1e3,
            m * 1e3,
            (d / m - 1.0) * 100.0
        );
        if d > 1.02 * m {
            worse.push((rtt, size / KIB, d / m));
        }
    }
    assert!(
        worse.is_empty(),
        "{conn} connection: dems-f slower than minrtt by more than 2% at (LTE RTT, KiB, \
         ratio): {worse:?}"
    );
}

/// Guo et al., MobiCom 2017, Fig. 13 grid, against the offline-optimal split of §3.2: WiFi and LTE rates each in
/// {2.5, 7.5, 12.5, 17.5, 22.5, 27.5} Mbit/s, RTT 50/70 ms (50/500 ms buffers), 1 MiB on a fresh
/// connection, CUBIC: the median over the 36 cells of DEMS-F's download time over the oracle's
/// is ≤ 1.05. MinRTT's ratio is printed for comparison.
#[test]
fn fig13_grid_dems_f_near_oracle() {
    let rates = [2.5e6, 7.5e6, 12.5e6, 17.5e6, 22.5e6, 27.5e6];
    let cells: Vec<(f64, f64)> = rates
        .iter()
        .flat_map(|&w| rates.iter().map(move |&l| (w, l)))
        .collect();
    let ratios: Vec<(f64, f64)> = cells
        .par_iter()
        .map(|&(w, l)| {
            let sc = scenario(
                vec![
                    path("wifi", w, 0.050, 0.050, 0.0),
                    path("lte", l, 0.070, 0.500, 0.0),
                ],
                chunk(MIB),
                "cubic",
            );
            let t = |sched: &str| run(&sc, sched, 1)["download_time_s"].as_f64().unwrap();
            let oracle = t("oracle");
            (t("dems-f") / oracle, t("minrtt") / oracle)
        })
        .collect();
    for ((w, l), (d, m)) in cells.iter().zip(&ratios) {
        println!(
            "Fig. 13: WiFi {:4.1} LTE {:4.1} Mbit/s: dems-f/oracle {d:.3}, minrtt/oracle {m:.3}",
            w / 1e6,
            l / 1e6
        );
    }
    let dems = median(ratios.iter().map(|r| r.0));
    let minrtt = median(ratios.iter().map(|r| r.1));
    println!("Fig. 13: median over the grid: dems-f/oracle {dems:.3}, minrtt/oracle {minrtt:.3}");
    assert!(
        dems <= 1.05,
        "dems-f median ratio to oracle {dems:.3} > 1.05"
    );
}

/// Guo et al., MobiCom 2017, §7.3, Fig. 14: on varying-bandwidth links DEMS-F reinjects at most half of DEMS-S's
/// bytes (the paper: 1.9x-7.1x fewer) with a median download time within 10% of DEMS-S's.
///
/// Traces from `tracegen::random`: a lognormal rate every 0.5 s with stddev 54% of the mean for
/// WiFi and 92% for LTE (§7.3), 40 trace pairs per profile; base RTT 50/70 ms, buffers 50/500 ms
/// of mean rate; 1 MiB chunks on fresh connections. Two profiles, as the paper's two locations
/// (the first has lower bandwidth): means (3.52, 4.59) Mbit/s, half the §3.2 profile, and
/// (7.04, 9.185) Mbit/s, the §3.2 profile.
#[test]
fn fig14_adaptive_reinjection_economy_reference_profile() {
    reinjection_economy("fig14-ref", 7.04e6, 9.185e6, 2.0);
}

/// The lower-bandwidth profile: base ΔOWD is only 10 ms and the deep LTE queue under a rate
/// varying by 92% makes the measured ΔOWD mostly queueing, so δ = StdDev(ΔOWD) is often as
/// large as ΔOWD itself and Algorithm 1 lets the large-OWD subflow reinject too (line 17 with
/// ΔOWD ≤ δ). Eq. 12 bounds what it may copy to the bytes the small subflow sent within the
/// last δ − ΔOWD; without that bound (Algorithm 1's gate alone) DEMS-F saved only 1.6x here.
/// Measured: 1.96x. The 2x is checked on the reference profile above; this one is held
/// to the lowest economy the paper itself reports over its two locations, 1.9x (§7.3).
#[test]
fn fig14_adaptive_reinjection_economy_lower_profile() {
    reinjection_economy("fig14-low", 3.52e6, 4.5925e6, 1.9);
}

/// DEMS-F must reinject `economy` times fewer bytes than DEMS-S (summed over 40 trace pairs).
fn reinjection_economy(tag: &str, wifi: f64, lte: f64, economy: f64) {
    let dir = std::env::temp_dir().join(format!("mpsched-dems-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let runs: Vec<(Outcome, Outcome)> = (1..=40u64)
        .into_par_iter()
        .map(|seed| {
            let write = |name: &str, mean: f64, sd: f64, s: u64| {
                let t = mpsched_sim::tracegen::random(mean, sd * mean, 300.0, 0.5, s);
                let f = dir.join(format!("{name}-{s}.down"));
                std::fs::write(&f, mpsched_sim::tracegen::to_mahimahi(&t)).expect("write");
                f.to_string_lossy().into_owned()
            };
            let sc = scenario(
                vec![
                    trace_path("wifi", &write("wifi", wifi, 0.54, seed), 0.050, 0.050),
                    trace_path("lte", &write("lte", lte, 0.92, 1000 + seed), 0.070, 0.500),
                ],
                chunk(MIB),
                "cubic",
            );
            (
                outcome(&sc, "dems-f", seed, 0),
                outcome(&sc, "dems-s", seed, 0),
            )
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    let re_f: f64 = runs.iter().map(|r| r.0.reinjected).sum();
    let re_s: f64 = runs.iter().map(|r| r.1.reinjected).sum();
    let dt_f = median(runs.iter().map(|r| r.0.download_s));
    let dt_s = median(runs.iter().map(|r| r.1.download_s));
    println!(
        "Fig. 14, means {:.2}/{:.2} Mbit/s: reinjected dems-f {:.0} KB, dems-s {:.0} KB \
         ({:.2}x fewer); median download dems-f {:.1} ms, dems-s {:.1} ms ({:+.1}%)",
        wifi / 1e6,
        lte / 1e6,
        re_f / 1e3,
        re_s / 1e3,
        re_s / re_f,
        dt_f * 1e3,
        dt_s * 1e3,
        (dt_f / dt_s - 1.0) * 100.0
    );
    assert!(
        re_f * economy <= re_s,
        "dems-f reinjected {re_f:.0} B, more than 1/{economy} of dems-s's {re_s:.0} B"
    );
    assert!(
        dt_f <= 1.10 * dt_s,
        "dems-f median download {dt_f:.3} s more than 10% above dems-s's {dt_s:.3} s"
    );
}

/// DEMS for N paths (ours, Guo et al., MobiCom 2017, §8): on stable paths DEMS-F downloads no slower than
/// MinRTT and its subflows complete within 20 ms of each other.
///
/// Paths: WiFi-like 7040 kbit/s RTT 50 ms, LTE-like 9185 kbit/s RTT 70 ms, 5 Mbit/s RTT 120 ms,
/// and for four paths 10 Mbit/s RTT 90 ms; 1 MiB on a fresh connection, CUBIC, no random loss.
/// "Stable" also means no drop-tail loss: every buffer (300 ms) holds the path's share of the
/// chunk, because a loss at the end of a subflow's region is repaired by that subflow alone
/// (and, without a tail-loss probe, only after an RTO), which no split can predict.
#[test]
fn n_paths_stable_complete_together() {
    let all = [
        path("wifi", 7_040e3, 0.050, 0.300, 0.0),
        path("lte", 9_185e3, 0.070, 0.300, 0.0),
        path("p3", 5_000e3, 0.120, 0.300, 0.0),
        path("p4", 10_000e3, 0.090, 0.300, 0.0),
    ];
    for n in [3, 4] {
        let sc = scenario(all[..n].to_vec(), chunk(MIB), "cubic");
        let d = outcome(&sc, "dems-f", 1, 0);
        let m = outcome(&sc, "minrtt", 1, 0);
        println!(
            "{n} paths: dems-f {:.1} ms (gap {:.1} ms, {:.0} B reinjected), minrtt {:.1} ms \
             (gap {:.1} ms)",
            d.download_s * 1e3,
            d.gap_s * 1e3,
            d.reinjected,
            m.download_s * 1e3,
            m.gap_s * 1e3
        );
        assert!(
            d.download_s <= m.download_s,
            "{n} paths: dems-f {:.3} s slower than minrtt {:.3} s",
            d.download_s,
            m.download_s
        );
        assert!(
            d.gap_s <= 0.020,
            "{n} paths: completion gap {:.3} s",
            d.gap_s
        );
    }
}

/// Issue "Speed at scale", item 3 ("N-path DEMS at line rate"): bulk goodput of DEMS-F at least
/// MinRTT's on 2 to 8 paths, on the benchmark matrix's scenario (10 s of bulk over N paths
/// sharing 800 Mbit/s, RTT 20 + 10·i ms, 20 ms drop-tail queues, CUBIC, Linux's default
/// buffers: the receive buffer autotuned up to `tcp_rmem[2]` = 6 MiB).
///
/// Why it misses (bench/nbulk_dems_f_vs_minrtt.py, docs/img/nbulk-dems-f-vs-minrtt.png,
/// BENCHMARKS.md): with the default receive buffer the connection can keep about 3.7 MB
/// unacknowledged at the data level, less than the 8 paths' bandwidth-delay products (5.5 MB),
/// so every scheduler is window-bound (168-225 Mbit/s at 8 paths). In that regime the v0.9x
/// MinRTT's penalization (`mptcp_rcv_buf_optimization`: halve the window of the subflow that
/// holds the data-level window's left edge) keeps its two-path queues from overflowing (23
/// drops in 10 s), which Guo et al. give DEMS-F no mechanism for; without it the subflows
/// overshoot in slow start, and where the losses leave their windows (CUBIC takes seconds to
/// regrow them at these bandwidth-delay products) decides the 10 s goodput, differently for
/// schedulers that decide alike (`minrtt:noor`, `linux`, `dems-f`: 639, 554, 558 Mbit/s on two
/// paths). With a receive buffer that holds the paths (32 MiB) every scheduler is near line
/// rate and DEMS-F trails MinRTT by 0.5-1.0%, the data its tail subflow has sent ahead that waits
/// in the receiver's out-of-order queue when the run stops.
#[test]
#[ignore = "measured 2026-11-29 after the application's writer sleeps until the send buffer drains to two thirds (sk_stream_wait_memory): dems-f / minrtt 558.1 / 688.7 Mbit/s at 2 paths, 423.1 / 423.5 at 4, 256.7 / 225.1 at 8; needs dems-f >= minrtt at 2, 4 and 8 paths. Before: measured 2026-11-25 after fast recovery took Linux's PRR (b12bef8): dems-f / minrtt 558.1 / 688.7 Mbit/s at 2 paths, 422.4 / 423.5 at 4, 220.5 / 225.1 at 8. Before: measured 2026-11-25 on 06b05fd: dems-f / minrtt goodput 557.8 / 688.7 Mbit/s at 2 paths, 427.9 / 466.5 at 4, 239.7 / 225.3 at 8 (with a 32 MiB receive buffer 729.9 / 734.7, 723.4 / 728.4, 672.4 / 679.5); needs dems-f >= minrtt at 2, 4 and 8 paths"]
fn bulk_goodput_dems_f_at_least_minrtt_on_2_to_8_paths() {
    use mpsched_sim::scenario::Workload;
    let cells: Vec<(usize, f64, f64)> = [2usize, 4, 8]
        .par_iter()
        .map(|&n| {
            let paths = (0..n)
                .map(|i| {
                    let rtt = 0.020 + 0.010 * i as f64;
                    path(&format!("p{i}"), 800e6 / n as f64, rtt, 0.020, 0.0)
                })
                .collect();
            let sc = scenario(paths, Workload::Bulk { duration_s: 10.0 }, "cubic");
            let goodput = |sched: &str| run(&sc, sched, 1)["goodput_bps"].as_f64().unwrap();
            (n, goodput("dems-f"), goodput("minrtt"))
        })
        .collect();
    for (n, d, m) in &cells {
        println!(
            "{n} paths: dems-f {:.1} Mbit/s, minrtt {:.1} Mbit/s",
            d / 1e6,
            m / 1e6
        );
    }
    let short: Vec<_> = cells.iter().filter(|(_, d, m)| d < m).collect();
    assert!(short.is_empty(), "dems-f below minrtt at {short:?}");
}
