//! Validation of the single-path transport against textbook TCP models (issue 2, "Must show").
//!
//! Every test names the model or equation it checks, derives the expected value from the model
//! and the scenario (never from the simulator), prints measured against expected (`cargo test
//! --release -- --nocapture` shows it), and fails when they disagree by more than a stated band.
//! A one-path scenario with the `single` scheduler is plain single-path TCP.
//!
//! Durations are chosen per test from the statistics each needs (number of loss events or
//! sawtooth cycles; see each test); the whole file runs in well under a minute in release mode.

use mpsched_sim::scenario::{LinkSpec, PathSpec, QueueSpec, Scenario, Transport, Workload};
use mpsched_sim::tracing::PacketTrace;
use serde_json::Value;

/// Payload per full segment (single-path TCP's MSS) and its size on a constant-rate link: 52
/// bytes of IP/TCP headers and timestamps and 14 of Ethernet, a 1,514-byte frame
/// (`mpsched_sim::framing`).
const MSS: f64 = 1448.0;
const WIRE: f64 = mpsched_sim::framing::data_wire_bytes(1448, false, false) as f64;

fn link(rate_bps: Option<f64>, delay_s: f64, queue: QueueSpec, loss: f64) -> LinkSpec {
    LinkSpec {
        rate_bps,
        trace: None,
        delay_s,
        queue,
        loss,
        outages: Vec::new(),
        handover: None,
    }
}

/// One path named "p": a forward bottleneck of `rate_bps` (None: delay only) with `queue` and
/// Bernoulli `loss`, an uncongested reverse link, base RTT `rtt_s` split evenly. Bulk transfer.
fn one_path(cc: &str, rate_bps: Option<f64>, rtt_s: f64, queue: QueueSpec, loss: f64) -> Scenario {
    Scenario {
        paths: vec![PathSpec {
            name: "p".into(),
            forward: link(rate_bps, rtt_s / 2.0, queue, loss),
            reverse: link(None, rtt_s / 2.0, QueueSpec::Unlimited, 0.0),
            backup: false,
            cross: Default::default(),
        }],
        workload: Workload::Bulk { duration_s: 60.0 },
        transport: Transport {
            cc: cc.into(),
            ..Transport::default()
        },
        sim: Default::default(),
    }
}

fn with_duration(mut sc: Scenario, duration_s: f64) -> Scenario {
    sc.workload = Workload::Bulk { duration_s };
    sc
}

fn run(sc: &Scenario, seed: u64) -> Value {
    mpsched_sim::run(sc, "single", seed).expect("scenario runs")
}

/// Runs with per-path samples every `interval_s` (cwnd, srtt) and no per-packet rows.
fn run_sampled(sc: &Scenario, interval_s: f64) -> (Value, PacketTrace) {
    let mut sc = sc.clone();
    sc.sim.sample_interval_s = interval_s;
    mpsched_sim::run_sampled(&sc, "single", 1).expect("scenario runs")
}

/// A per-path metric of the only path.
fn path_metric(v: &Value, key: &str) -> f64 {
    v[key]["p"]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

fn metric(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// Payload bytes delivered in order between `from_s` and `to_s` of a bulk run, by running the
/// (deterministic) scenario to both instants: excludes the slow-start transient exactly.
fn delivered_between(sc: &Scenario, from_s: f64, to_s: f64, seed: u64) -> f64 {
    let early = run(&with_duration(sc.clone(), from_s), seed);
    let late = run(&with_duration(sc.clone(), to_s), seed);
    metric(&late, "delivered_bytes") - metric(&early, "delivered_bytes")
}

fn assert_within(measured: f64, expected: f64, rel: f64, what: &str) {
    let err = measured / expected - 1.0;
    println!(
        "{what}: measured {measured:.4}, model {expected:.4}, error {err:+.2}%",
        err = err * 100.0
    );
    assert!(
        err.abs() <= rel,
        "{what}: measured {measured:.4} vs model {expected:.4} ({:+.2}%, band ±{:.0}%)",
        err * 100.0,
        rel * 100.0
    );
}

// ---- saturation ---------------------------------------------------------------------------

/// Park et al. (R-TSC), Eq. 9 with a buffer of one BDP: r = W_BDP / W_Loss = 1/2, where Reno's sawtooth
/// (β = 1/2) just drains the queue at its low point, so x = 0.75c / (1 - 1/2 + 1/4) = c. CUBIC
/// (β = 0.7) backs off less and stays above the BDP too. Over 60 s, slow start included, a
/// bulk flow must keep a 100 Mbit/s, 40 ms link at least 95 % busy.
#[test]
fn saturation_one_bdp_buffer_reno_and_cubic() {
    for cc in ["reno", "cubic"] {
        let sc = one_path(cc, Some(100e6), 0.040, QueueSpec::Time(0.040), 0.0);
        let v = run(&sc, 1);
        let u = path_metric(&v, "utilization_by_path");
        println!(
            "saturation {cc}: utilization {u:.4}, goodput {:.2} Mbit/s, RTOs {}",
            metric(&v, "goodput_bps") / 1e6,
            v["rto_by_path"]["p"]
        );
        assert!(u >= 0.95, "{cc}: utilization {u:.4} < 0.95");
        assert!(u <= 1.0 + 1e-9, "{cc}: utilization {u:.4} above capacity");
    }
}

// ---- random loss: Mathis and Padhye ---------------------------------------------------------

/// Mathis et al. (CCR 1997): rate = MSS/RTT · C/√p. C depends on how the window grows per RTT
/// and on the loss process. Our Reno counts bytes (RFC 3465), so delayed ACKs do not slow its
/// growth: one MSS per RTT, the b = 1 case, whatever the ACK ratio (C = √(3/4) = 0.87, the
/// delayed-ACK constant, would assume one MSS per two RTTs). For b = 1 Mathis give √(3/2) = 1.22
/// for periodic loss and 1.31 for random (Bernoulli) loss; the latter is the upper end: it
/// assumes every loss halves the window and never times out.
fn mathis_pkts(p: f64, rtt: f64, c: f64) -> f64 {
    c / (rtt * p.sqrt())
}

/// Padhye et al. (SIGCOMM 1998) full model, Eq. 30 without the receive-window cap (the link is
/// unconstrained): B = 1 / (RTT·√(2bp/3) + T0·min(1, 3√(3bp/8))·p·(1 + 32p²)) packets/s, with
/// b = 1 (as above) and T0 = 200 ms. T0 is the simulator's RTO: max(min_rto = 200 ms,
/// srtt + 4·rttvar), and srtt + 4·rttvar stays below 200 ms at a 40 ms RTT; a larger T0 would
/// only lower this bound. Padhye count timeouts and treat p as a loss-event rate; per-packet
/// Bernoulli loss (several losses in a window are one event for SACK) makes p an upper bound on
/// that rate, so Padhye here is the lower end of the range.
fn padhye_pkts(p: f64, rtt: f64, t0: f64) -> f64 {
    let b = 1.0;
    1.0 / (rtt * (2.0 * b * p / 3.0).sqrt()
        + t0 * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p))
}

/// Reno with Bernoulli loss p on an unconstrained link (1 Gbit/s, no buffer limit: the window,
/// not the link, limits it) must send at a rate in [Padhye, Mathis(C = 1.31)], each model
/// evaluated at the run's mean smoothed RTT. The band is widened by 3 % on each side for
/// sampling error: the mean of 3 seeds × 600 s has about 1.5 % standard error at p = 0.1 %
/// (about 600 loss events per run; measured spread of single runs ±2.5 %), the scarcest case.
/// A Reno that halved per ACK pair (b = 2) would fall about 30 % below the band, one with
/// β = 0.7 would rise about 40 % above it.
#[test]
fn random_loss_reno_between_padhye_and_mathis() {
    let rtt = 0.040;
    let t0 = 0.2;
    for p in [0.001, 0.005, 0.01] {
        let sc = with_duration(
            one_path("reno", Some(1e9), rtt, QueueSpec::Unlimited, p),
            600.0,
        );
        let seeds = [1, 2, 3];
        let (mut pkts, mut srtt) = (0.0, 0.0);
        for seed in seeds {
            let v = run(&sc, seed);
            pkts += path_metric(&v, "throughput_by_path_bps") / 8.0 / MSS;
            srtt += path_metric(&v, "srtt_avg_s_by_path");
        }
        pkts /= seeds.len() as f64;
        srtt /= seeds.len() as f64;
        let lo = padhye_pkts(p, srtt, t0);
        let hi = mathis_pkts(p, srtt, 1.31);
        println!(
            "random loss p={p}: {pkts:.1} pkt/s (C_eff = {:.3}) at srtt {:.1} ms; Padhye(b=1) \
             {lo:.1}, Mathis C=1.31 {hi:.1} (C=√(3/2) {:.1}, C=√(3/4) {:.1})",
            pkts * srtt * p.sqrt(),
            srtt * 1e3,
            mathis_pkts(p, srtt, 1.5f64.sqrt()),
            mathis_pkts(p, srtt, 0.75f64.sqrt()),
        );
        assert!(
            pkts >= 0.97 * lo && pkts <= 1.03 * hi,
            "p={p}: {pkts:.1} pkt/s outside [0.97 × Padhye {lo:.1}, 1.03 × Mathis {hi:.1}]"
        );
    }
}

// ---- buffer sizing: Park et al. (R-TSC), Eq. 9 ---------------------------------------------------------

/// Park et al. (R-TSC), §III, Eq. 9: x = 0.75c / (1 - r + r²), r = W_BDP / W_Loss, for Reno (β = 1/2)
/// without random loss. W_BDP = c·T_p is the window at which the queue starts to build (T_p
/// the minimum RTT: propagation plus one serialization); W_Loss is the most packets in flight
/// the path holds, W_BDP plus the buffer space, the window at which a packet is lost. So the
/// buffer is B = W_BDP (1/r - 1) packets; the drop-tail limit counts the packet in
/// transmission, which W_BDP already includes, hence a limit of B + 1 packets.
///
/// r = 1 (no buffer at all) cannot be built for a window-based sender that does not pace: one
/// delayed ACK releases two back-to-back segments and a window increase a third, so a buffer
/// smaller than such a burst drops packets whatever the window (measured: limits of 1-3 packets
/// give under 4 % of c, with W_BDP = 101). The r = 1 point therefore uses the smallest buffer
/// that absorbs the bursts, 4 packets, which with W_BDP ≈ 401 is r = 0.990; it is compared with
/// Eq. 9 at that r (0.757c, 1 % above the 0.75c of r = 1).
///
/// c = 8000 packets/s (97.28 Mbit/s on the wire), T_p = 50.125 ms, W_BDP = 401. The rate is
/// measured from 20 s (after slow start and its losses) over about eight sawtooth cycles (at
/// least 100 s): a cycle lasts T_p (W_BDP - W_Loss/2) + Σ w/c over [W_BDP, W_Loss], 10 s at r ≈ 1
/// and 30 s at r = 0.5. Band: 10 % (issue 2).
#[test]
fn buffer_sizing_reno_follows_seed004_eq9() {
    let c = 8000.0; // packets per second
    let rate = c * WIRE * 8.0;
    let t_p = 0.050 + 1.0 / c;
    let w_bdp = c * t_p;
    for r in [0.5, 0.7, 0.9, 1.0] {
        let buffer = w_bdp * (1.0 / r - 1.0);
        // Smallest buffer an unpaced sender can use (see above).
        let buffer = buffer.round().max(4.0);
        let r_built = w_bdp / (w_bdp + buffer);
        let w_loss = w_bdp + buffer;
        let tau1 = (t_p * (w_bdp - 0.5 * w_loss)).max(0.0);
        let tau2 = (w_loss * w_loss - w_bdp * w_bdp) / (2.0 * c);
        let measure = (8.0 * (tau1 + tau2)).max(100.0);
        let sc = one_path(
            "reno",
            Some(rate),
            0.050,
            QueueSpec::Packets(buffer as u64 + 1),
            0.0,
        );
        let bytes = delivered_between(&sc, 20.0, 20.0 + measure, 1);
        let x = bytes / MSS / measure;
        let model = 0.75 * c / (1.0 - r_built + r_built * r_built);
        assert_within(
            x / c,
            model / c,
            0.10,
            &format!(
                "Eq. 9, r = {r} (built {r_built:.3}, buffer {buffer} pkt, {measure:.0} s): x/c"
            ),
        );
    }
}

// ---- CUBIC -----------------------------------------------------------------------------------

/// RFC 9438 constants.
const CUBIC_C: f64 = 0.4;
const CUBIC_BETA: f64 = 0.7;

/// One congestion avoidance epoch read off cwnd samples: from a window reduction to the next.
#[derive(Debug)]
struct Epoch {
    /// cwnd (segments) in the last sample before the reduction.
    w_loss: f64,
    /// cwnd_epoch = ssthresh: the flat window while recovery lasts.
    w0: f64,
    /// When growth resumes: the start of the epoch (RFC 9438 §4.2, t = 0).
    t0: f64,
    /// Samples (time, cwnd in segments) from `t0` to the next reduction.
    samples: Vec<(f64, f64)>,
}

/// Cuts a cwnd series (time s, segments) into epochs at every congestion event, read off the
/// slow-start threshold `ss` (segments): the window itself falls over a round trip, as Linux's
/// Proportional Rate Reduction brings it down to ssthresh (`tcp_cwnd_reduction`), and the new
/// threshold is the window the epoch grows from.
fn epochs(t: &[f64], w: &[f64], ss: &[f64]) -> Vec<Epoch> {
    let drops: Vec<usize> = (1..w.len()).filter(|&i| ss[i] != ss[i - 1]).collect();
    let mut out = Vec::new();
    for (k, &i) in drops.iter().enumerate() {
        let end = drops.get(k + 1).copied().unwrap_or(w.len());
        let w0 = ss[i];
        // Recovery ends at ssthresh; the epoch starts when the window grows past it.
        let Some(down) = (i..end).find(|&j| w[j] <= w0) else {
            continue;
        };
        let Some(g) = (down..end).find(|&j| w[j] > w0) else {
            continue;
        };
        out.push(Epoch {
            w_loss: w[i - 1],
            w0,
            t0: t[g - 1],
            samples: (g..end).map(|j| (t[j], w[j])).collect(),
        });
    }
    out
}

/// The sampled slow-start thresholds in segments (infinite before the first event).
fn ssthresh_segs(tr: &PacketTrace) -> Vec<f64> {
    tr.sample_ssthresh
        .iter()
        .map(|&s| {
            if s == u64::MAX {
                f64::INFINITY
            } else {
                s as f64 / MSS
            }
        })
        .collect()
}

/// RFC 9438 §4.2 Figure 1 with Figure 2's W_max = w0 + C·K³ (segments, seconds since t0).
fn w_cubic(t: f64, k: f64, w0: f64) -> f64 {
    CUBIC_C * ((t - k).powi(3) + k.powi(3)) + w0
}

/// Least-squares K of an epoch (a 10 ms grid over 0-60 s, then golden-section search around
/// the best point), and the RMS residual relative to the fitted W_max.
fn fit_k(e: &Epoch) -> (f64, f64) {
    let sse = |k: f64| -> f64 {
        e.samples
            .iter()
            .map(|&(t, w)| (w - w_cubic(t - e.t0, k, e.w0)).powi(2))
            .sum()
    };
    let best = (0..6000)
        .map(|i| f64::from(i) * 0.01)
        .min_by(|&x, &y| sse(x).total_cmp(&sse(y)))
        .unwrap();
    let (mut a, mut b) = ((best - 0.01).max(0.0), best + 0.01);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..60 {
        let (x1, x2) = (b - g * (b - a), a + g * (b - a));
        if sse(x1) < sse(x2) {
            b = x2;
        } else {
            a = x1;
        }
    }
    let k = (a + b) / 2.0;
    let w_max = e.w0 + CUBIC_C * k.powi(3);
    let rms = (sse(k) / e.samples.len() as f64).sqrt();
    (k, rms / w_max)
}

/// RFC 9438: after each loss cwnd = β·cwnd (§4.6) and then follows
/// W(t) = C(t - K)³ + W_max with K = ∛((W_max - cwnd_epoch)/C) (§4.2, C = 0.4, β = 0.7), where
/// W_max is the window at the loss, or (1 + β)/2 of it when the loss came below the previous
/// W_max (fast convergence, §4.7).
///
/// CUBIC on 100 Mbit/s, 40 ms, 1-BDP buffer for 60 s, cwnd sampled every 10 ms. For every
/// epoch after a loss in congestion avoidance (the slow-start losses aside): the reduction is
/// β within 1.5 %; the least-squares K (C fixed at 0.4, W_max tied to K by Figure 2) gives a
/// curve within 0.5 % RMS of the samples, concave up to the plateau and convex after it; the
/// fitted W_max is the loss window or its fast-convergence value within 1 %, and fast
/// convergence is applied exactly when the loss came below the previous W_max; and K matches
/// ∛((W_max - cwnd_epoch)/C) computed from the RFC's W_max within 3 %. cwnd chases
/// W_cubic(t + RTT) (§4.4-4.5), which lags it by about an RTT against K of several seconds.
#[test]
fn cubic_window_follows_rfc9438_cubic_function() {
    let sc = one_path("cubic", Some(100e6), 0.040, QueueSpec::Time(0.040), 0.0);
    let (_, tr) = run_sampled(&sc, 0.010);
    let w: Vec<f64> = tr.sample_cwnd.iter().map(|&c| c as f64 / MSS).collect();
    let all = epochs(&tr.sample_time_s, &w, &ssthresh_segs(&tr));
    // Epochs that end in a congestion-avoidance loss: skip those that begin in slow start
    // (the first reduction), keep those long enough to see the plateau.
    let ca: Vec<&Epoch> = all.iter().skip(1).collect();
    assert!(ca.len() >= 4, "too few CUBIC epochs: {all:?}");
    let mut prev_w_max: Option<f64> = None;
    let mut checked = 0;
    for (n, e) in ca.iter().enumerate() {
        let beta = e.w0 / e.w_loss;
        let (k, rms) = fit_k(e);
        let w_max = e.w0 + CUBIC_C * k.powi(3);
        let fc_value = e.w_loss * (1.0 + CUBIC_BETA) / 2.0;
        let fast_convergence = (w_max / fc_value - 1.0).abs() < (w_max / e.w_loss - 1.0).abs();
        let rfc_w_max = if fast_convergence { fc_value } else { e.w_loss };
        let rfc_k = ((rfc_w_max - e.w0) / CUBIC_C).cbrt();
        let t_end = e.samples.last().unwrap().0 - e.t0;
        println!(
            "epoch {n} at {:.2} s: W_loss {:.1}, cwnd_epoch {:.1} (β {beta:.3}), fit K {k:.3} s, \
             W_max {w_max:.1}, RMS {:.2}%, fast convergence {fast_convergence}; RFC W_max \
             {rfc_w_max:.1}, K {rfc_k:.3} s; epoch lasts {t_end:.2} s",
            e.t0,
            e.w_loss,
            e.w0,
            rms * 100.0
        );
        assert!(
            (beta / CUBIC_BETA - 1.0).abs() < 0.015,
            "epoch {n}: β = {beta:.3}"
        );
        assert!(rms < 0.005, "epoch {n}: RMS residual {:.2}%", rms * 100.0);
        assert!(
            (w_max / rfc_w_max - 1.0).abs() < 0.01,
            "epoch {n}: W_max {w_max:.1} is neither W_loss {:.1} nor (1+β)/2 of it",
            e.w_loss
        );
        if let Some(prev) = prev_w_max {
            // §4.7: fast convergence iff this loss came below the previous W_max (a sampled
            // W_loss within 0.2 % of it is too close to call).
            if (e.w_loss / prev - 1.0).abs() > 0.002 {
                assert_eq!(
                    fast_convergence,
                    e.w_loss < prev,
                    "epoch {n}: fast convergence with W_loss {:.1}, previous W_max {prev:.1}",
                    e.w_loss
                );
            }
        }
        prev_w_max = Some(w_max);
        assert!(
            (k / rfc_k - 1.0).abs() < 0.03,
            "epoch {n}: K {k:.3} vs RFC {rfc_k:.3}"
        );
        // Shape: growth slows down to the plateau at K and speeds up after it.
        let slope = |a: f64, b: f64| -> f64 {
            let at = |x: f64| {
                e.samples
                    .iter()
                    .min_by(|p, q| (p.0 - e.t0 - x).abs().total_cmp(&(q.0 - e.t0 - x).abs()))
                    .unwrap()
                    .1
            };
            (at(b) - at(a)) / (b - a)
        };
        let early = slope(0.1 * k, 0.3 * k);
        let plateau = slope(0.9 * k, 1.1 * k);
        assert!(early > 3.0 * plateau, "epoch {n}: not concave before K");
        if t_end > 1.5 * k {
            let late = slope(1.3 * k, 1.5 * k);
            assert!(late > 3.0 * plateau, "epoch {n}: not convex after K");
        }
        checked += 1;
    }
    assert!(checked >= 4);
}

/// RFC 9438 §1, §5: on a long fat path CUBIC regains its window within K seconds while Reno
/// adds one segment per RTT. 1 Gbit/s, RTT 100 ms, 1-BDP buffer (W_BDP ≈ 8224 packets). After
/// the last reduction, with W = cwnd_epoch/β the window before it: CUBIC reaches 95 % of W_max
/// at K − ∛(0.05·W_max/C), K = ∛((W_max − cwnd_epoch)/C) (RFC 9438 Eq. 2), within 10 %, where
/// W_max = W, or W·(1 + β)/2 under fast convergence (§4.7: the reduction came below an earlier
/// peak); Reno grows 1 MSS per RTT (within 10 %), so it would
/// need 0.45·W RTTs to do the same. CUBIC must be at least 20 times faster (the models say
/// about 90 times). Runs: 20 s for CUBIC (the reductions come within the first seconds, from
/// slow start without HyStart, and 95 % is regained about 6 s later), 12 s for Reno (a growth
/// rate needs a few).
#[test]
fn cubic_regains_window_faster_than_reno_on_long_fat_path() {
    let interval = 0.010;
    let mut regain = Vec::new();
    let mut w_cubic_before = 0.0;
    for (cc, beta, duration) in [("cubic", CUBIC_BETA, 20.0), ("reno", 0.5, 12.0)] {
        let mut sc = with_duration(
            one_path(cc, Some(1e9), 0.100, QueueSpec::Time(0.100), 0.0),
            duration,
        );
        sc.transport.send_buffer_bytes = 64 << 20;
        sc.transport.recv_buffer_bytes = Some(64 << 20);
        // The growth after a loss-driven reduction is the subject: slow start without HyStart
        // overflows the buffer (with Linux's classic HyStart it leaves slow start before any
        // loss here and the window never comes down in 20 s).
        sc.transport.hystart = "off".into();
        let (v, tr) = run_sampled(&sc, interval);
        let t = &tr.sample_time_s;
        let w: Vec<f64> = tr.sample_cwnd.iter().map(|&c| c as f64 / MSS).collect();
        // The reduction after which the window grows for the rest of the run.
        let e = epochs(t, &w, &ssthresh_segs(&tr))
            .into_iter()
            .last()
            .unwrap_or_else(|| panic!("{cc}: no reduction in {v}"));
        let w_before = e.w0 / beta;
        // RFC 9438 §4.7 fast convergence: a reduction below the previous W_max (the window
        // peaked higher before an earlier reduction) plateaus at W·(1 + β)/2, not at W.
        let earlier_peak = t
            .iter()
            .zip(&w)
            .filter(|(tt, _)| **tt < e.t0)
            .map(|(_, ww)| *ww)
            .fold(0.0, f64::max);
        let fast_convergence = cc == "cubic" && earlier_peak > 1.05 * w_before;
        let w_max = if fast_convergence {
            w_before * (1.0 + beta) / 2.0
        } else {
            w_before
        };
        let target = 0.95 * w_max;
        let time = match cc {
            "cubic" => {
                let reached = e
                    .samples
                    .iter()
                    .find(|&&(_, w)| w >= target)
                    .unwrap_or_else(|| panic!("cubic: 95 % of {w_max:.0} never regained"));
                let measured = reached.0 - e.t0;
                w_cubic_before = w_max;
                // K = ∛((W_max − cwnd_epoch)/C) (RFC 9438 Eq. 2), cwnd_epoch = e.w0.
                let k = ((w_max - e.w0) / CUBIC_C).cbrt();
                let model = k - (0.05 * w_max / CUBIC_C).cbrt();
                assert_within(
                    measured,
                    model,
                    0.10,
                    &format!(
                        "cubic: seconds to regain 95 % of W_max = {w_max:.0} (K = {k:.2} s, \
                         fast convergence {fast_convergence})"
                    ),
                );
                measured
            }
            _ => {
                // Growth per RTT over the epoch, RTT from the sampled srtt.
                let (ta, wa) = e.samples[e.samples.len() / 4];
                let (tb, wb) = *e.samples.last().unwrap();
                let srtt: Vec<f64> = (0..t.len())
                    .filter(|&j| t[j] >= ta)
                    .map(|j| tr.sample_srtt_s[j])
                    .collect();
                let rtt = srtt.iter().sum::<f64>() / srtt.len() as f64;
                let per_rtt = (wb - wa) / ((tb - ta) / rtt);
                assert_within(per_rtt, 1.0, 0.10, "reno: segments added per RTT");
                // The same W as CUBIC's (the reduction Reno itself saw may be an RTO after
                // the slow-start overshoot, which says nothing about its growth): from 0.5·W
                // to 0.95·W at the measured rate.
                let w = w_cubic_before;
                let needed = 0.45 * w / per_rtt * rtt;
                println!("reno: W = {w:.0}, 95 % regained after about {needed:.0} s");
                needed
            }
        };
        regain.push(time);
    }
    assert!(
        regain[0] * 20.0 < regain[1],
        "CUBIC regains in {:.1} s, Reno in {:.1} s",
        regain[0],
        regain[1]
    );
}

// ---- receive window --------------------------------------------------------------------------

/// A flow limited by the receiver's buffer sends a window per round trip: rate = rwnd/RTT. The
/// sender sends whole segments only, so the usable window is ⌊rwnd/MSS⌋ segments. 100 Mbit/s,
/// RTT 40 ms (T_p = 40.12 ms with one serialization), rwnd = 64 KiB = 45 segments: 13 Mbit/s,
/// far below the link. Without delayed ACKs the rate is within 1 % of the model. With them
/// (the default) the last, odd segment of each window waits for the next segment or the
/// 40 ms timer before it is acknowledged, which stretches the round a little: within 5 %.
#[test]
fn receive_window_limits_rate_to_rwnd_per_rtt() {
    let rwnd = 65536.0;
    let t_p = 0.040 + WIRE * 8.0 / 100e6;
    let model = (rwnd / MSS).floor() * MSS * 8.0 / t_p;
    for (delayed_ack, band) in [(false, 0.01), (true, 0.05)] {
        let mut sc = with_duration(
            one_path("cubic", Some(100e6), 0.040, QueueSpec::Time(0.040), 0.0),
            20.0,
        );
        sc.transport.recv_buffer_bytes = Some(rwnd as u64);
        sc.transport.delayed_ack = delayed_ack;
        // From 2 s on: the first round trips are slow start.
        let x = delivered_between(&sc, 2.0, 20.0, 1) * 8.0 / 18.0;
        assert_within(
            x / 1e6,
            model / 1e6,
            band,
            &format!("rwnd/RTT, delayed ACK {delayed_ack}: Mbit/s"),
        );
        assert!(model < 0.2 * 100e6);
    }
}

// ---- trace links -----------------------------------------------------------------------------

/// Mahimahi semantics (shared/traces/README.md): each line is a 1504-byte delivery opportunity;
/// a link that always has a packet queued uses every opportunity, so it delivers the trace's
/// mean rate, lines × 1504 × 8 / period. A bulk flow over a large buffer (1 s of the mean
/// rate, so the queue never runs dry when the rate steps up) must deliver within 3 % of it.
fn assert_trace_link_saturated(trace_file: &str, duration_s: f64, rtt_s: f64) {
    let trace = mpsched_sim::trace::Trace::load(trace_file).expect("trace loads");
    let mean = trace.opportunities_per_period() as f64 * 1504.0 * 8.0
        / (trace.period_ms() as f64 / 1000.0);
    let mut sc = with_duration(
        one_path("cubic", None, rtt_s, QueueSpec::Time(1.0), 0.0),
        duration_s,
    );
    sc.paths[0].forward.trace = Some(trace_file.to_string());
    let v = run(&sc, 1);
    let util = path_metric(&v, "utilization_by_path");
    // Wire bytes delivered (utilization × capacity) over the run, as a rate.
    let delivered = util * mean;
    println!(
        "trace {trace_file}: utilization {util:.4}, goodput {:.3} Mbit/s",
        metric(&v, "goodput_bps") / 1e6
    );
    assert_within(
        delivered / 1e6,
        mean / 1e6,
        0.03,
        "trace link: delivered Mbit/s vs trace mean",
    );
}

/// A synthetic trace made here: a 1 s period alternating 250 ms at 1 opportunity/ms (12 Mbit/s),
/// 250 ms at 3/ms, 250 ms at 2/ms and 250 ms of 1 every 2 ms: mean 1.625/ms = 19.55 Mbit/s.
#[test]
fn trace_link_saturated_delivers_trace_mean() {
    let dir = std::env::temp_dir().join(format!("mpsched-validation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("square.down");
    let mut lines = String::new();
    for ms in 1..=1000u32 {
        let n = match (ms - 1) / 250 {
            0 => 1,
            1 => 3,
            2 => 2,
            _ => u32::from(ms % 2 == 0),
        };
        for _ in 0..n {
            lines.push_str(&format!("{ms}\n"));
        }
    }
    std::fs::write(&file, lines).unwrap();
    let name = file.to_str().unwrap().to_string();
    let t = mpsched_sim::trace::Trace::load(&name).unwrap();
    assert_eq!(t.opportunities_per_period(), 1625);
    assert_trace_link_saturated(&name, 30.0, 0.040);
    std::fs::remove_dir_all(&dir).ok();
}

/// The same on a recorded cellular trace, if the shared traces are present (CI and developer
/// machines have them at ../shared/traces; the project does not depend on them).
#[test]
fn trace_link_saturated_on_recorded_cellular_trace_if_present() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/traces/TMobile-LTE-short.down"
    );
    if !std::path::Path::new(file).exists() {
        println!("note: {file} not present, skipping the recorded-trace check");
        return;
    }
    // One period (140 s) of the trace.
    assert_trace_link_saturated(file, 140.0, 0.040);
}

// ---- determinism -------------------------------------------------------------------------------

/// DESIGN.md "Time, randomness, determinism": the same scenario and seed give byte-identical
/// results (wall time aside); a different seed draws different losses. Also: recording a trace
/// with samples does not change the results.
#[test]
fn determinism_same_seed_same_bytes_other_seed_differs() {
    let mut sc = with_duration(
        one_path("cubic", Some(20e6), 0.030, QueueSpec::Time(0.030), 0.01),
        20.0,
    );
    sc.paths[0].reverse.loss = 0.01;
    // The result minus what may legitimately differ: wall time, and (across seeds) the seed.
    let canonical = |mut v: Value, keep_seed: bool| -> String {
        let o = v.as_object_mut().unwrap();
        o.remove("wall_time_s");
        if !keep_seed {
            o.remove("seed");
        }
        serde_json::to_string(&v).unwrap()
    };
    let a = canonical(run(&sc, 42), true);
    let b = canonical(run(&sc, 42), true);
    assert_eq!(a, b, "same seed, different results");
    let mut traced = sc.clone();
    traced.sim.sample_interval_s = 0.05;
    let (mut v, tr) = mpsched_sim::run_traced(&traced, "single", 42).unwrap();
    assert!(!tr.is_empty() && !tr.sample_time_s.is_empty());
    // The echoed scenario names the sample interval; nothing else may differ.
    v.as_object_mut()
        .unwrap()
        .insert("scenario".into(), run(&sc, 42)["scenario"].clone());
    assert_eq!(canonical(v, true), a, "tracing changed the results");
    let (va, vc) = (run(&sc, 42), run(&sc, 43));
    assert_ne!(
        canonical(va.clone(), false),
        canonical(vc.clone(), false),
        "different seeds, same results"
    );
    assert_ne!(
        va["retransmissions_by_path"], vc["retransmissions_by_path"],
        "different seeds should lose different packets"
    );
}
