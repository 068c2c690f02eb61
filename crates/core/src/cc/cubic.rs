//! CUBIC, RFC 9438 (Xu, Ha, Rhee, Goel, Eggert, 2023).
//!
//! The RFC states its window function in segments (C = 0.4 segments/s^3): windows are stored in
//! bytes, but K and W_cubic are evaluated in segments, which changes K by a factor cbrt(MSS) if
//! done wrong. Every quantity the RFC treats as real is kept as `f64`, and only
//! [`CongestionControl::window`] rounds down to whole bytes.
//! Slow start is RFC 5681's (RFC 9438 §4.10 allows it; no HyStart). As with Reno, loss recovery
//! is the subflow's: this controller only sees its entry (§4.6), RTOs (§4.8) and ACKs outside
//! recovery.

use super::reno::{slow_start, window_validated};
use super::{AckSample, CongestionControl, CoupledView};
use crate::time::{Duration, Time};

/// RFC 9438 §4.1: C, in segments / s^3.
const C: f64 = 0.4;
/// RFC 9438 §4.1: multiplicative decrease factor β_cubic.
const BETA_CUBIC: f64 = 0.7;
/// RFC 9438 §4.3: α_cubic = 3 * (1 - β_cubic) / (1 + β_cubic), which gives AIMD(α, β) the same
/// average window as Reno's AIMD(1, 0.5).
const ALPHA_CUBIC: f64 = 3.0 * (1.0 - BETA_CUBIC) / (1.0 + BETA_CUBIC);
/// RTT assumed for the target window (§4.2) before the subflow has any RTT sample.
const DEFAULT_RTT: Duration = Duration::from_millis(100);

#[derive(Clone, Debug)]
pub struct Cubic {
    mss: u64,
    /// Bytes; real-valued because §4.4/§4.5 grow it by fractions of a segment per ACK.
    cwnd: f64,
    ssthresh: u64,
    /// Bytes: the window just before the last window reduction (§4.6, §4.7).
    w_max: f64,
    /// W_max is undefined: before the first congestion event, and after an RTO (§4.8). The next
    /// congestion avoidance stage then takes W_max = cwnd_epoch and K = 0 (§4.8, §4.10).
    w_max_unset: bool,
    /// Seconds (§4.2 Figure 2).
    k: f64,
    /// Start of the current congestion avoidance stage, `None` until its first ACK. Moved
    /// forward across application-limited ACKs, so that t excludes those periods (§5.8).
    epoch_start: Option<Time>,
    /// Bytes: cwnd at `epoch_start` (§4.2).
    cwnd_epoch: f64,
    /// Bytes: the Reno-friendly window estimate (§4.3).
    w_est: f64,
    /// Bytes: cwnd when ssthresh was last set (§4.3, §4.6).
    cwnd_prior: f64,
    /// Time of the last ACK, to measure application-limited periods (§5.8).
    last_ack: Option<Time>,
}

impl Cubic {
    pub fn new(mss: u64, init_cwnd_segments: u64) -> Cubic {
        assert!(mss > 0, "mss must be positive");
        let cwnd = (init_cwnd_segments.max(1) * mss) as f64;
        Cubic {
            mss,
            cwnd,
            ssthresh: u64::MAX,
            w_max: 0.0,
            w_max_unset: true,
            k: 0.0,
            epoch_start: None,
            cwnd_epoch: cwnd,
            w_est: cwnd,
            cwnd_prior: cwnd,
            last_ack: None,
        }
    }

    /// K in seconds (RFC 9438 §4.2 Figure 2) for the current or, right after a window
    /// reduction, the coming congestion avoidance stage.
    pub fn k(&self) -> f64 {
        self.k
    }

    /// W_max in bytes. Meaningless (the last value, or 0) while W_max is unset: before the first
    /// congestion event, and after an RTO until congestion avoidance starts.
    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// W_cubic(t) in bytes (RFC 9438 §4.2 Figure 1), t in seconds since the epoch start.
    pub fn w_cubic(&self, t_secs: f64) -> f64 {
        let mss = self.mss as f64;
        (C * (t_secs - self.k).powi(3) + self.w_max / mss) * mss
    }

    /// §4.2 Figure 2: K = cbrt((W_max - cwnd_epoch) / C) in segments, and K = 0 when
    /// cwnd_epoch already exceeds W_max.
    fn k_for(&self, cwnd_epoch: f64) -> f64 {
        let deficit_segments = (self.w_max - cwnd_epoch) / self.mss as f64;
        if deficit_segments > 0.0 {
            (deficit_segments / C).cbrt()
        } else {
            0.0
        }
    }

    /// §4.6 Figure 5: ssthresh = flight_size * β_cubic, at least 2 SMSS. RFC 9438 prefers
    /// flight_size to cwnd; the subflow's `in_flight` is that.
    fn reduced_ssthresh(&self, in_flight: u64) -> u64 {
        ((in_flight as f64 * BETA_CUBIC) as u64).max(2 * self.mss)
    }

    fn start_epoch(&mut self, now: Time) {
        self.epoch_start = Some(now);
        self.cwnd_epoch = self.cwnd;
        if self.w_max_unset {
            // §4.8 after an RTO, §4.10 after a slow start that ended without loss.
            self.w_max = self.cwnd;
            self.w_max_unset = false;
        }
        self.k = self.k_for(self.cwnd_epoch);
        // §4.3: W_est starts at cwnd_epoch (§4.8 says the same after an RTO).
        self.w_est = self.cwnd;
    }

    fn congestion_avoidance(&mut self, now: Time, acked: f64, rtt: Duration) {
        let epoch_start = match self.epoch_start {
            Some(start) => start,
            None => {
                self.start_epoch(now);
                now
            }
        };
        let t = now.saturating_since(epoch_start).as_secs_f64();
        let mss = self.mss as f64;

        // §4.3 Figure 4: W_est += α_cubic * segments_acked / cwnd, with α_cubic = 1 once W_est
        // has reached cwnd_prior, so that from there CUBIC grows at least as fast as Reno.
        let alpha = if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            ALPHA_CUBIC
        };
        self.w_est += alpha * acked * mss / self.cwnd;

        if self.w_cubic(t) < self.w_est {
            // §4.3: Reno-friendly region, cwnd = W_est. The max keeps an ACK from shrinking a
            // window that the cubic rule had already grown past W_est within this RTT.
            self.cwnd = self.cwnd.max(self.w_est);
        } else {
            // §4.4 (concave) and §4.5 (convex): target = W_cubic(t + RTT) clamped to
            // [cwnd, 1.5 cwnd] (§4.2), and cwnd += (target - cwnd) / cwnd per segment acked,
            // i.e. (target - cwnd) / cwnd * acked in bytes.
            let target = self
                .w_cubic(t + rtt.as_secs_f64())
                .clamp(self.cwnd, 1.5 * self.cwnd);
            self.cwnd += (target - self.cwnd) / self.cwnd * acked;
        }
    }
}

impl CongestionControl for Cubic {
    fn window(&self) -> u64 {
        self.cwnd as u64
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample, _coupled: CoupledView<'_>) {
        let last_ack = self.last_ack.replace(now);
        // §5.8: no growth while application-limited (the RFC 7661-style test Reno uses too), and
        // t "MUST NOT include these periods": slide the epoch start by the time that passed.
        if !window_validated(ack.prior_in_flight, self.window()) {
            if let (Some(start), Some(last)) = (self.epoch_start.as_mut(), last_ack) {
                *start += now.saturating_since(last);
            }
            return;
        }
        let mut acked = ack.acked_bytes;
        if self.in_slow_start() {
            // The window is integral throughout slow start: every event that makes
            // cwnd < ssthresh sets cwnd to a whole number of bytes, and only congestion
            // avoidance adds fractions.
            let (cwnd, rest) = slow_start(self.window(), self.ssthresh, acked, self.mss);
            self.cwnd = cwnd as f64;
            acked = rest;
            if acked == 0 {
                return;
            }
        }
        // §4.2: RTT is the smoothed RTT.
        let rtt = ack.srtt.unwrap_or(DEFAULT_RTT);
        self.congestion_avoidance(now, acked as f64, rtt);
    }

    fn on_congestion_event(&mut self, _now: Time, in_flight: u64) {
        // §4.7 fast convergence: a loss below the previous W_max means the flow's share is
        // shrinking, so release more by lowering W_max to cwnd * (1 + β_cubic) / 2. RFC 9438
        // says to disable it for a lone flow; we keep it always on because subflows of one
        // connection share bottlenecks with each other.
        self.w_max = if !self.w_max_unset && self.cwnd < self.w_max {
            self.cwnd * (1.0 + BETA_CUBIC) / 2.0
        } else {
            self.cwnd
        };
        self.w_max_unset = false;
        // §4.6 Figure 5.
        self.cwnd_prior = self.cwnd;
        self.ssthresh = self.reduced_ssthresh(in_flight);
        self.cwnd = self.ssthresh as f64;
        // The next congestion avoidance stage starts at the first ACK after recovery (§4.2).
        self.epoch_start = None;
        self.k = self.k_for(self.cwnd);
    }

    fn on_rto(&mut self, _now: Time, in_flight: u64) {
        // §4.8: cwnd as Reno (1 SMSS, RFC 5681 §3.1) but ssthresh from β_cubic as in §4.6;
        // W_max and K are decided when the next congestion avoidance stage begins.
        self.cwnd_prior = self.cwnd;
        self.ssthresh = self.reduced_ssthresh(in_flight);
        self.cwnd = self.mss as f64;
        self.w_max_unset = true;
        self.epoch_start = None;
        self.k = 0.0;
    }

    fn penalize(&mut self, _now: Time) {
        // As Reno: cwnd = ssthresh = max(cwnd / 2, 2*SMSS). A penalty is not a congestion
        // signal, so W_max (the path's saturation point) is kept and the epoch restarts: the
        // next stage climbs back towards W_max along a fresh concave curve. Keeping the old
        // epoch would put W_cubic(t) far above the halved window and undo the penalty in an RTT.
        self.cwnd_prior = self.cwnd;
        self.ssthresh = ((self.cwnd / 2.0) as u64).max(2 * self.mss);
        self.cwnd = self.ssthresh as f64;
        self.epoch_start = None;
        self.k = self.k_for(self.cwnd);
    }

    fn name(&self) -> &'static str {
        "cubic"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;
    const MSS_F: f64 = MSS as f64;

    /// A window-limited sender on a path with a fixed RTT.
    struct Path {
        cc: Cubic,
        now: Time,
        rtt: Duration,
    }

    impl Path {
        fn new(rtt: Duration) -> Path {
            Path {
                cc: Cubic::new(MSS, 10),
                now: Time::ZERO,
                rtt,
            }
        }

        fn ack_with_flight(&mut self, acked: u64, prior_in_flight: u64) {
            let sample = AckSample {
                acked_bytes: acked,
                prior_in_flight,
                srtt: Some(self.rtt),
                min_rtt: Some(self.rtt),
            };
            self.cc.on_ack(self.now, &sample, CoupledView::default());
        }

        /// An ACK of `acked` bytes with the whole window in flight.
        fn ack(&mut self, acked: u64) {
            self.ack_with_flight(acked, self.cc.window());
        }

        /// One round trip: the window at the start of the round is acked one segment per ACK
        /// (the last ACK carries the remainder), spread evenly over the RTT.
        fn round(&mut self) {
            let start = self.now;
            let window = self.cc.window();
            let acks = window.div_ceil(MSS);
            for i in 0..acks {
                self.now = start + Duration(self.rtt.as_nanos() * (i + 1) / acks);
                self.ack(MSS.min(window - i * MSS));
            }
        }

        /// Slow start to exactly `segments`, then a loss with the whole window in flight.
        fn lose_at(&mut self, segments: u64) {
            while self.cc.window() < segments * MSS {
                self.ack(MSS);
            }
            assert_eq!(self.cc.window(), segments * MSS);
            self.cc.on_congestion_event(self.now, segments * MSS);
        }

        /// Seconds since `since`.
        fn elapsed(&self, since: Time) -> f64 {
            self.now.saturating_since(since).as_secs_f64()
        }
    }

    /// RFC 9438 §4.2 Figure 1 in segments, computed independently of the controller.
    fn w_cubic_segments(t: f64, k: f64, w_max_segments: f64) -> f64 {
        0.4 * (t - k).powi(3) + w_max_segments
    }

    fn segments(bytes: f64) -> f64 {
        bytes / MSS_F
    }

    fn assert_close(actual: f64, expected: f64, rel: f64, what: &str) {
        let err = (actual - expected).abs() / expected.abs();
        assert!(
            err <= rel,
            "{what}: {actual} vs expected {expected} (relative error {err:.4} > {rel})"
        );
    }

    #[test]
    fn slow_start_ack_doubles_window_per_rtt() {
        // RFC 9438 §4.10 uses RFC 5681 slow start: +1 SMSS per segment acked.
        let mut p = Path::new(Duration::from_millis(100));
        p.round();
        assert_eq!(p.cc.window(), 20 * MSS);
        p.round();
        assert_eq!(p.cc.window(), 40 * MSS);
        assert!(p.cc.in_slow_start());
        assert_eq!(p.cc.name(), "cubic");
    }

    #[test]
    fn congestion_event_reduces_window_by_beta() {
        // §4.6 Figure 5: ssthresh = flight_size * 0.7, cwnd = ssthresh; W_max = cwnd (§4.7,
        // first loss).
        let mut p = Path::new(Duration::from_millis(100));
        p.lose_at(100);
        assert_eq!(p.cc.ssthresh(), 70 * MSS);
        assert_eq!(p.cc.window(), 70 * MSS);
        assert_eq!(p.cc.w_max(), 100.0 * MSS_F);
        assert!(!p.cc.in_slow_start());
    }

    #[test]
    fn congestion_event_uses_flight_size_and_floors_at_two_segments() {
        // §4.6: ssthresh from flight_size, not cwnd; at least 2 SMSS.
        let mut cc = Cubic::new(MSS, 10);
        cc.on_congestion_event(Time::ZERO, 8 * MSS);
        assert_eq!(cc.window(), 5600);
        cc.on_congestion_event(Time::ZERO, 2 * MSS);
        assert_eq!(cc.ssthresh(), 2 * MSS);
        assert_eq!(cc.window(), 2 * MSS);
    }

    #[test]
    fn cubic_k_matches_rfc_formula() {
        // §4.2 Figure 2: K = cbrt((W_max - cwnd_epoch) / C) with segments and C = 0.4.
        let mut p = Path::new(Duration::from_millis(100));
        p.lose_at(100);
        // W_max = 100, cwnd_epoch = 70: K = cbrt(75).
        assert_close(p.cc.k(), 75f64.cbrt(), 1e-12, "K before the epoch");
        p.ack(MSS);
        assert_close(p.cc.k(), 4.217_163_326_508_746, 1e-12, "K at the epoch");
        // W_cubic(0) = cwnd_epoch and W_cubic(K) = W_max.
        assert_close(p.cc.w_cubic(0.0), 70.0 * MSS_F, 1e-12, "W_cubic(0)");
        assert_close(p.cc.w_cubic(p.cc.k()), 100.0 * MSS_F, 1e-12, "W_cubic(K)");

        // With only 80 segments in flight: cwnd_epoch = 56, K = cbrt(44 / 0.4) = cbrt(110).
        let mut p = Path::new(Duration::from_millis(100));
        while p.cc.window() < 100 * MSS {
            p.ack(MSS);
        }
        p.cc.on_congestion_event(p.now, 80 * MSS);
        assert_eq!(p.cc.window(), 56 * MSS);
        assert_close(p.cc.k(), 110f64.cbrt(), 1e-12, "K with a small flight");
    }

    #[test]
    fn cubic_growth_matches_w_cubic_after_loss() {
        // §4.4/§4.5: per-ACK steps of (target - cwnd) / cwnd towards W_cubic(t + RTT) make the
        // window trace follow Figure 1, through the concave region (t < K), the plateau at
        // W_max and the convex region (t > K). A large window keeps the Reno-friendly estimate
        // (§4.3) far below W_cubic, so only the cubic rule is exercised.
        let mut p = Path::new(Duration::from_millis(100));
        p.lose_at(1000);
        let k = (300.0f64 / 0.4).cbrt();
        p.ack(MSS); // First ACK after recovery: the epoch starts now.
        let epoch = p.now;
        let mut checked = 0;
        while p.elapsed(epoch) < 2.0 * k {
            p.round();
            let t = p.elapsed(epoch);
            let expected = w_cubic_segments(t, k, 1000.0);
            assert_close(
                segments(p.cc.cwnd),
                expected,
                0.01,
                &format!("cwnd at t = {t:.2}s"),
            );
            checked += 1;
        }
        assert!(checked > 150, "only {checked} rounds checked");
        // At t = 2K the convex region has added back what the loss took: W_max + 300.
        assert!(segments(p.cc.cwnd) > 1280.0, "cwnd {}", p.cc.cwnd);
    }

    #[test]
    fn target_clamped_to_one_and_a_half_window() {
        // §4.2: target <= 1.5 cwnd. With a 10 s RTT, W_cubic(t + RTT) is far above 1.5 cwnd, so
        // a stretch ACK of a whole window, (target - cwnd) / cwnd per segment, lands on 1.5 cwnd.
        let mut p = Path::new(Duration::from_secs(10));
        p.lose_at(100);
        p.ack(MSS);
        p.now += Duration::from_secs(1);
        let cwnd = p.cc.cwnd;
        let k = 75f64.cbrt();
        assert!(
            w_cubic_segments(1.0, k, 100.0) > segments(cwnd),
            "not in the cubic region"
        );
        assert!(w_cubic_segments(11.0, k, 100.0) > 1.5 * segments(cwnd));
        p.ack(cwnd as u64);
        assert_close(p.cc.cwnd, 1.5 * cwnd, 1e-4, "cwnd after a window-sized ACK");
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        // §4.7: a loss at cwnd < W_max sets W_max = cwnd * (1 + 0.7) / 2.
        let mut p = Path::new(Duration::from_millis(100));
        p.lose_at(100);
        assert_eq!(p.cc.w_max(), 100.0 * MSS_F);
        p.cc.on_congestion_event(p.now, 70 * MSS);
        assert_close(p.cc.w_max(), 70.0 * 0.85 * MSS_F, 1e-12, "W_max");
        assert_eq!(p.cc.window(), 49 * MSS);
        // K follows the lowered W_max: cbrt((59.5 - 49) / 0.4).
        assert_close(p.cc.k(), (10.5f64 / 0.4).cbrt(), 1e-12, "K");
    }

    #[test]
    fn congestion_event_above_w_max_remembers_cwnd() {
        // §4.7 "otherwise" branch: past the old W_max, W_max = cwnd before the reduction.
        let mut p = Path::new(Duration::from_millis(10));
        p.lose_at(20);
        while p.cc.window() < 25 * MSS {
            p.round();
        }
        let cwnd = p.cc.cwnd;
        p.cc.on_congestion_event(p.now, p.cc.window());
        assert_eq!(p.cc.w_max(), cwnd);
    }

    #[test]
    fn reno_friendly_region_dominates_at_small_rtt() {
        // §4.3: at 1 ms RTT and a 20-segment window, W_cubic barely moves in 10 RTTs (K =
        // cbrt(6 / 0.4) = 2.47 s) while W_est gains α_cubic = 0.529 segments per RTT
        // (Figure 4), so cwnd = W_est = 14 + 10 * 0.529 segments.
        let mut p = Path::new(Duration::from_millis(1));
        p.lose_at(20);
        p.ack(MSS);
        let epoch = p.now;
        let start = segments(p.cc.cwnd);
        for _ in 0..10 {
            p.round();
        }
        let w_cubic = w_cubic_segments(p.elapsed(epoch), (6.0f64 / 0.4).cbrt(), 20.0);
        assert!(w_cubic < 14.1, "W_cubic {w_cubic}");
        assert_close(
            segments(p.cc.cwnd),
            start + 10.0 * ALPHA_CUBIC,
            0.01,
            "cwnd after 10 RTTs",
        );
        assert!((ALPHA_CUBIC - 0.9 / 1.7).abs() < 1e-15);
    }

    #[test]
    fn reno_friendly_alpha_becomes_one_at_cwnd_prior() {
        // §4.3: once W_est >= cwnd_prior (20 segments), α_cubic = 1, i.e. Reno's +1 segment
        // per RTT. From 14 segments that takes 6 / 0.529 = 11.3 RTTs, so after 40 RTTs
        // cwnd = 20 + (40 - 11.3) segments.
        let mut p = Path::new(Duration::from_millis(1));
        p.lose_at(20);
        p.ack(MSS);
        for _ in 0..40 {
            p.round();
        }
        let expected = 20.0 + (40.0 - 6.0 / ALPHA_CUBIC);
        assert_close(segments(p.cc.cwnd), expected, 0.03, "cwnd after 40 RTTs");
    }

    #[test]
    fn rto_collapses_to_one_segment() {
        // §4.8: cwnd = 1 SMSS as in RFC 5681, ssthresh = flight_size * 0.7 as in §4.6.
        let mut p = Path::new(Duration::from_millis(100));
        p.round();
        p.round();
        p.cc.on_rto(p.now, 40 * MSS);
        assert_eq!(p.cc.window(), MSS);
        assert_eq!(p.cc.ssthresh(), 28 * MSS);
        assert!(p.cc.in_slow_start());
    }

    #[test]
    fn rto_then_avoidance_starts_with_k_zero() {
        // §4.8: the first congestion avoidance stage after an RTO uses K = 0 and W_max =
        // cwnd_epoch, so W_cubic(t) = cwnd_epoch + 0.4 t^3.
        let mut p = Path::new(Duration::from_millis(100));
        p.lose_at(100);
        p.cc.on_rto(p.now, 100 * MSS);
        while p.cc.in_slow_start() {
            p.ack(MSS);
        }
        assert_eq!(p.cc.window(), 70 * MSS);
        p.ack(MSS);
        assert_eq!(p.cc.k(), 0.0);
        assert_eq!(p.cc.w_max(), 70.0 * MSS_F);
        assert_close(
            p.cc.w_cubic(2.0),
            (70.0 + 0.4 * 8.0) * MSS_F,
            1e-12,
            "W_cubic(2)",
        );
    }

    #[test]
    fn app_limited_ack_pauses_epoch_clock() {
        // §5.8: no growth while application-limited, and t excludes that period. After 5 s of
        // app-limited ACKs, one window-limited round must end on W_cubic(0.1 s) (K = cbrt(750)
        // = 9.09 s: 709 segments), not W_cubic(5.1 s) (975 segments).
        let mut p = Path::new(Duration::from_millis(100));
        p.lose_at(1000);
        p.ack(MSS);
        for _ in 0..50 {
            p.now += Duration::from_millis(100);
            p.ack_with_flight(MSS, 10 * MSS);
        }
        assert_eq!(p.cc.window(), 700 * MSS);
        p.round();
        let k = (300.0f64 / 0.4).cbrt();
        assert_close(
            segments(p.cc.cwnd),
            w_cubic_segments(0.1, k, 1000.0),
            0.01,
            "cwnd after the app-limited period",
        );
    }

    #[test]
    fn penalize_halves_window_and_keeps_w_max() {
        let mut p = Path::new(Duration::from_millis(100));
        p.lose_at(1000);
        p.ack(MSS);
        p.cc.penalize(p.now);
        assert_eq!(p.cc.window(), 350 * MSS);
        assert_eq!(p.cc.ssthresh(), 350 * MSS);
        assert_eq!(p.cc.w_max(), 1000.0 * MSS_F);
        // §4.2 Figure 2 for the restarted epoch: K = cbrt((1000 - 350) / 0.4).
        p.ack(MSS);
        assert_close(p.cc.k(), (650.0f64 / 0.4).cbrt(), 1e-12, "K after penalty");
    }

    #[test]
    fn penalize_restarts_epoch_from_halved_window() {
        // Two seconds into the epoch after a loss at 1000 segments, a penalty halves the window.
        // Growth must restart on a fresh curve from 350 segments, K = cbrt(650 / 0.4), so one
        // round later cwnd = W_cubic(0.1 s) = 366 segments; continuing the old epoch (t = 2.1 s)
        // would jump towards 1.5 cwnd instead.
        let mut p = Path::new(Duration::from_millis(100));
        p.lose_at(1000);
        p.ack(MSS);
        for _ in 0..20 {
            p.round();
        }
        p.cc.penalize(p.now);
        assert_eq!(p.cc.window(), p.cc.ssthresh());
        let halved = segments(p.cc.cwnd);
        p.round();
        let k = ((1000.0 - halved) / 0.4).cbrt();
        assert_close(
            segments(p.cc.cwnd),
            w_cubic_segments(0.1, k, 1000.0),
            0.01,
            "cwnd one round after the penalty",
        );
    }

    #[test]
    fn penalize_small_window_floors_at_two_segments() {
        let mut cc = Cubic::new(MSS, 3);
        cc.penalize(Time::ZERO);
        assert_eq!(cc.window(), 2 * MSS);
        assert_eq!(cc.ssthresh(), 2 * MSS);
    }
}
