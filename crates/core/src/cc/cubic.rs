//! CUBIC, RFC 9438 (Xu, Ha, Rhee, Goel, Eggert, 2023).
//!
//! The RFC states its window function in segments (C = 0.4 segments/s^3): windows are stored in
//! bytes, but K and W_cubic are evaluated in segments, which changes K by a factor cbrt(MSS) if
//! done wrong. Every quantity the RFC treats as real is kept as `f64`, and only
//! [`CongestionControl::window`] rounds down to whole bytes.
//!
//! Slow start (§4.10) is RFC 5681's with RFC 3465 byte counting, and by default it ends by
//! Linux's classic HyStart (`cc/hystart_linux.rs`: ACK train and delay increase, from 16
//! segments), as `tcp_cubic.c` runs it: plain slow start over a shallow drop-tail buffer
//! overshoots by up to a window. [`HyStartMode::PlusPlus`] runs HyStart++ instead (RFC 9406;
//! `cc/hystart.rs` says which sections it implements and how it reads the RFC), in the initial
//! slow start only; HyStart++ only sees the queue one round after the window passes the path's
//! BDP, so with a buffer of about one BDP it narrows the overshoot rather than removing it.
//! [`HyStartMode::Off`] ([`Cubic::without_hystart`]) gives plain RFC 5681 slow start. When
//! HyStart ends slow start without a loss, W_max is undefined and §4.10 applies: cwnd_prior =
//! cwnd, and the congestion avoidance stage starts with W_max = cwnd_epoch and K = 0 (Linux:
//! `last_max_cwnd <= cwnd`, origin point = cwnd).
//!
//! As with Reno, loss recovery is the subflow's: this controller only sees its entry (§4.6),
//! RTOs (§4.8) and ACKs outside recovery.

use super::hystart::HyStart;
use super::hystart_linux::{HyStartInput, LinuxHyStart};
use super::{
    restart_window, slow_start, window_validated, AckSample, CongestionControl, CoupledView,
    HyStartMode,
};
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
    /// RFC 9406 state for the initial slow start; `None` unless HyStart++ was chosen.
    hystart: Option<HyStart>,
    /// Linux's classic HyStart; `None` unless chosen (the default).
    hystart_linux: Option<LinuxHyStart>,
    /// The subflow paces (Linux's ACK-train threshold is then the whole minimum delay).
    paced: bool,
}

impl Cubic {
    /// CUBIC with Linux's classic HyStart (the default, as in Linux).
    pub fn new(mss: u64, init_cwnd_segments: u64) -> Cubic {
        Cubic::build(mss, init_cwnd_segments, HyStartMode::Linux)
    }

    /// CUBIC with HyStart++ (RFC 9406) in the initial slow start.
    pub fn with_hystart_plus_plus(mss: u64, init_cwnd_segments: u64) -> Cubic {
        Cubic::build(mss, init_cwnd_segments, HyStartMode::PlusPlus)
    }

    /// CUBIC with plain RFC 5681 slow start.
    pub fn without_hystart(mss: u64, init_cwnd_segments: u64) -> Cubic {
        Cubic::build(mss, init_cwnd_segments, HyStartMode::Off)
    }

    fn build(mss: u64, init_cwnd_segments: u64, mode: HyStartMode) -> Cubic {
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
            hystart: (mode == HyStartMode::PlusPlus).then(HyStart::default),
            hystart_linux: (mode == HyStartMode::Linux).then(LinuxHyStart::default),
            paced: false,
        }
    }

    /// True once Linux's HyStart has ended a slow start (`ca->found`).
    pub fn hystart_found(&self) -> bool {
        self.hystart_linux.as_ref().is_some_and(LinuxHyStart::found)
    }

    /// True while HyStart++ holds the initial slow start in Conservative Slow Start (RFC 9406
    /// §4.2): the window grows a quarter as fast as in slow start.
    pub fn in_css(&self) -> bool {
        // RFC 9406 §4.3: HyStart++ runs in the initial slow start only, i.e. while ssthresh
        // still has its initial, arbitrarily high value. Every loss, RTO or penalty sets a
        // finite one, and so does the end of CSS.
        self.ssthresh == u64::MAX && self.hystart.as_ref().is_some_and(HyStart::in_css)
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

impl Cubic {
    /// Linux's HyStart for one slow-start ACK, before the window grows (`cubictcp_acked` runs
    /// before `cubictcp_cong_avoid`). True when it ended slow start: ssthresh = cwnd, and, as
    /// when HyStart++ ends, W_max is left undefined so congestion avoidance starts at K = 0.
    fn linux_hystart_exit(&mut self, now: Time, ack: &AckSample) -> bool {
        if self.hystart_linux.is_none() {
            return false;
        }
        let input = HyStartInput::in_slow_start(
            now,
            self.cwnd,
            self.mss,
            ack.srtt,
            self.paced,
            self.epoch_start,
        );
        let hs = self.hystart_linux.as_mut().expect("checked");
        if !hs.on_ack(ack, &input) {
            return false;
        }
        self.ssthresh = self.window();
        self.cwnd_prior = self.cwnd;
        true
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
        // This controller models RFC 9438, whose §5.8 ("does not increase cwnd when a flow is
        // application limited") does not say how to tell: it keeps the stateless RFC 7661-style
        // test on the flight before the ACK. `transport.cc = "cubic"` (cubic_linux.rs) runs
        // Linux's stateful `tcp_is_cwnd_limited` (`AckSample::cwnd_limited`) instead.
        let validated = window_validated(ack.prior_in_flight, self.window());
        // RFC 9406 §4.3: HyStart++ in the initial slow start only (see `in_css`).
        if let Some(hystart) = self.hystart.as_mut().filter(|_| self.ssthresh == u64::MAX) {
            // RFC 9406 §4.2: grow by min(N, L*SMSS), a quarter of it in CSS, then track the
            // round's RTTs. No growth on an application-limited ACK, as below.
            if validated {
                self.cwnd += hystart.window_increase(ack.acked_bytes, self.mss);
            }
            if hystart.on_ack(ack) {
                // RFC 9406 §4.2: CSS is over, ssthresh = cwnd. RFC 9438 §4.10: W_max is
                // undefined (no loss), so cwnd_prior = cwnd and the coming congestion avoidance
                // stage takes W_max = cwnd_epoch and K = 0 (`start_epoch`, w_max_unset).
                self.ssthresh = self.window();
                self.cwnd_prior = self.cwnd;
            }
            return;
        }
        if !validated && self.in_slow_start() {
            // cubictcp_acked runs for every ACK, window-limited or not.
            self.linux_hystart_exit(now, ack);
        }
        // §5.8: no growth while application-limited (the RFC 7661-style test above), and
        // t "MUST NOT include these periods": slide the epoch start by the time that passed.
        if !validated {
            if let (Some(start), Some(last)) = (self.epoch_start.as_mut(), last_ack) {
                *start += now.saturating_since(last);
            }
            return;
        }
        let mut acked = ack.acked_bytes;
        if self.in_slow_start() {
            if self.linux_hystart_exit(now, ack) {
                // ssthresh = cwnd: the rest of this ACK is congestion avoidance's.
                self.congestion_avoidance(now, acked as f64, ack.srtt.unwrap_or(DEFAULT_RTT));
                return;
            }
            // The window is integral throughout this slow start: every event that makes
            // cwnd < ssthresh sets cwnd to a whole number of bytes. Only congestion avoidance
            // and HyStart++'s CSS add fractions, and CSS ends with ssthresh = floor(cwnd).
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
        // cubictcp_state(TCP_CA_Loss): bictcp_reset, HyStart runs again.
        if let Some(hs) = self.hystart_linux.as_mut() {
            hs.reset();
        }
    }

    fn set_pacing(&mut self, on: bool) {
        self.paced = on;
    }

    fn set_loss_window(&mut self, cwnd: u64) {
        self.cwnd = cwnd.max(self.mss) as f64;
    }

    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        // Linux CUBIC undoes as Reno (`tcp_reno_undo_cwnd`); its epoch was reset on entering
        // the Loss state (`cubictcp_state`), as `on_rto` left it here.
        self.cwnd = self.cwnd.max(prior_cwnd as f64);
        self.ssthresh = self.ssthresh.max(prior_ssthresh);
    }

    fn restart_after_idle(&mut self, _now: Time, idle: Duration, rto: Duration, iw: u64) {
        // The epoch is kept: §5.8 already takes the idle time out of t (`last_ack`), and
        // W_max, the path's saturation point, did not change while the subflow was silent.
        let (cwnd, ssthresh) = restart_window(self.window(), self.ssthresh, idle, rto, iw);
        self.cwnd = cwnd as f64;
        self.ssthresh = ssthresh;
    }

    fn penalize(&mut self, _now: Time) {
        // Linux MPTCP v0.9x `mptcp_rcv_buf_optimization` (net/mptcp/mptcp_sched.c): snd_cwnd
        // halves (at least one segment); ssthresh halves (at least two segments) only outside
        // slow start, so a penalty never ends slow start. In avoidance a penalty is not a
        // congestion signal: W_max (the path's saturation point) is kept and the epoch restarts
        // from the halved window (the kernel leaves CUBIC's epoch alone and climbs back to the
        // old curve within an RTT, undoing the penalty; we keep the project's stricter form).
        // In packets, as the kernel's snd_cwnd and snd_ssthresh are.
        let prior = self.cwnd;
        let segs = (self.cwnd / self.mss as f64) as u64;
        self.cwnd = ((segs / 2).max(1) * self.mss) as f64;
        if prior >= self.ssthresh as f64 {
            self.cwnd_prior = prior;
            self.ssthresh = (self.ssthresh / self.mss / 2).max(2) * self.mss;
            self.epoch_start = None;
            self.k = self.k_for(self.cwnd);
        }
    }

    fn name(&self) -> &'static str {
        "cubic-rfc9438"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;
    const MSS_F: f64 = MSS as f64;

    /// A window-limited sender on a path with a fixed RTT.
    /// HyStart++ is on (`Cubic::new`), but with a fixed RTT it never leaves slow start early.
    struct Path {
        cc: Cubic,
        now: Time,
        rtt: Duration,
        delivered: u64,
    }

    impl Path {
        fn new(rtt: Duration) -> Path {
            Path {
                cc: Cubic::new(MSS, 10),
                now: Time::ZERO,
                rtt,
                delivered: 0,
            }
        }

        fn ack_with_flight(&mut self, acked: u64, prior_in_flight: u64) {
            let sample = AckSample {
                acked_bytes: acked,
                prior_in_flight,
                // Not read by the RFC 9438 controller.
                cwnd_limited: prior_in_flight >= self.cc.window(),
                srtt: Some(self.rtt),
                min_rtt: Some(self.rtt),
                rtt: Some(self.rtt),
                delivered: self.delivered + acked,
                // Everything in flight has been sent.
                snd_nxt: self.delivered + prior_in_flight,
            };
            self.delivered += acked;
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
        assert!(!p.cc.in_css());
        assert_eq!(p.cc.name(), "cubic-rfc9438");
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
    fn penalize_in_slow_start_keeps_ssthresh() {
        // v0.9x mptcp_rcv_buf_optimization: "If in slow start, do not reduce the ssthresh".
        let mut cc = Cubic::new(MSS, 10);
        let ssthresh = cc.ssthresh();
        cc.penalize(Time::ZERO);
        assert_eq!(cc.window(), 5 * MSS);
        assert_eq!(cc.ssthresh(), ssthresh);
        assert!(cc.in_slow_start());
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
        assert_eq!(p.cc.ssthresh(), 350 * MSS, "ssthresh 700 halved (v0.9x)");
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
    fn penalize_small_window_floors_at_one_segment() {
        // v0.9x: snd_cwnd = max(snd_cwnd >> 1, 1), in packets.
        let mut cc = Cubic::new(MSS, 3);
        cc.penalize(Time::ZERO);
        assert_eq!(cc.window(), MSS);
        cc.penalize(Time::ZERO);
        assert_eq!(cc.window(), MSS);
        assert!(cc.in_slow_start());
    }
    // HyStart++ (RFC 9406).

    /// A window-limited sender for HyStart++: every ACK acknowledges one segment (unless told
    /// otherwise) and the sender then fills the window again. It counts rounds itself, as RFC 9406
    /// §4.2 does: a round ends on the ACK that delivers the SND.NXT the round began with.
    struct Flow {
        cc: Cubic,
        now: Time,
        delivered: u64,
        snd_nxt: u64,
        round_end: Option<u64>,
        /// The application has run dry: nothing new is sent, and the ACKs report a single
        /// segment in flight, below half the window (application-limited).
        app_limited: bool,
    }

    impl Flow {
        fn new(cc: Cubic) -> Flow {
            let snd_nxt = cc.window();
            Flow {
                cc,
                now: Time::ZERO,
                delivered: 0,
                snd_nxt,
                round_end: None,
                app_limited: false,
            }
        }

        fn hystart() -> Flow {
            Flow::new(Cubic::with_hystart_plus_plus(MSS, 10))
        }

        /// An ACK of `acked` bytes carrying the RTT sample `rtt`. True if it ended a round.
        fn ack_bytes(&mut self, acked: u64, rtt: Option<Duration>) -> bool {
            let sample = AckSample {
                acked_bytes: acked,
                prior_in_flight: if self.app_limited {
                    MSS
                } else {
                    self.snd_nxt - self.delivered
                },
                cwnd_limited: !self.app_limited,
                srtt: Some(Duration::from_millis(50)),
                min_rtt: Some(Duration::from_millis(50)),
                rtt,
                delivered: self.delivered + acked,
                snd_nxt: self.snd_nxt,
            };
            self.delivered += acked;
            self.now += Duration::from_millis(1);
            self.cc.on_ack(self.now, &sample, CoupledView::default());
            let round_end = *self.round_end.get_or_insert(self.snd_nxt);
            let ended = self.delivered >= round_end;
            if ended {
                self.round_end = Some(self.snd_nxt);
            }
            if !self.app_limited {
                self.snd_nxt = self.snd_nxt.max(self.delivered + self.cc.window());
            }
            ended
        }

        /// A one-segment ACK with an RTT sample of `rtt_ms`. True if it ended a round.
        fn ack(&mut self, rtt_ms: u64) -> bool {
            self.ack_bytes(MSS, Some(Duration::from_millis(rtt_ms)))
        }

        /// One-segment ACKs with RTT samples of `rtt_ms` until a round ends.
        fn round(&mut self, rtt_ms: u64) {
            while !self.ack(rtt_ms) {}
        }

        /// Two rounds at 50 ms set lastRoundMinRTT = 50 ms (RttThresh 6.25 ms); the third round
        /// at 60 ms enters CSS on its eighth sample, with cssBaselineMinRtt = 60 ms.
        fn in_css() -> Flow {
            let mut f = Flow::hystart();
            f.round(50);
            f.round(50);
            for _ in 0..N_RTT_SAMPLE {
                assert!(!f.ack(60), "round too short for the test");
            }
            assert!(f.cc.in_css());
            f
        }

        /// CSS entered mid-round, then the five round ends that finish it (the first ends the
        /// partial round CSS began in, which counts).
        fn after_css() -> Flow {
            let mut f = Flow::in_css();
            for _ in 0..5 {
                f.round(60);
            }
            assert!(!f.cc.in_slow_start());
            f
        }
    }

    const N_RTT_SAMPLE: u32 = 8;

    #[test]
    fn slow_start_rtt_increase_enters_css() {
        // §4.2: with lastRoundMinRTT = 50 ms, RttThresh = 6.25 ms; a round whose minimum over
        // N_RTT_SAMPLE = 8 samples is (at least) 56.25 ms enters CSS, on the eighth sample.
        let mut f = Flow::hystart();
        f.round(50);
        f.round(50);
        let rtt = Some(Duration::from_micros(56_250));
        for _ in 0..7 {
            f.ack_bytes(MSS, rtt);
        }
        assert!(!f.cc.in_css(), "entered CSS before eight samples");
        f.ack_bytes(MSS, rtt);
        assert!(f.cc.in_css());
        assert!(f.cc.in_slow_start(), "CSS is still slow start");
        assert_eq!(f.cc.ssthresh(), u64::MAX);
    }

    #[test]
    fn slow_start_rtt_increase_below_threshold_stays() {
        // 56 ms < 50 ms + 6.25 ms: a whole round of it leaves slow start alone, and slow start
        // keeps adding one segment per segment acknowledged.
        let mut f = Flow::hystart();
        f.round(50);
        f.round(50);
        f.round(56);
        assert!(!f.cc.in_css());
        assert_eq!(f.cc.window(), 10 * MSS + f.delivered);
    }

    #[test]
    fn fewer_than_eight_samples_never_exits() {
        // §4.2: the delay test needs rttSampleCount >= N_RTT_SAMPLE in the round. Seven samples
        // a round (the other ACKs carry none), each round 20 ms slower than the last.
        let mut f = Flow::hystart();
        for round in 0..6 {
            let rtt = Duration::from_millis(50 + 20 * round);
            let mut samples = 0;
            loop {
                let sample = (samples < 7).then_some(rtt);
                samples += 1;
                if f.ack_bytes(MSS, sample) {
                    break;
                }
            }
            assert!(samples > 8, "round {round} too short for the test");
            assert!(!f.cc.in_css(), "CSS in round {round}");
        }
        assert_eq!(f.cc.window(), 10 * MSS + f.delivered);
    }

    #[test]
    fn slow_start_app_limited_ack_counts_sample_without_growth() {
        // An application-limited ACK does not grow the window (as outside HyStart++), but its
        // RTT sample is a sample: eight of them at 60 ms enter CSS.
        let mut f = Flow::hystart();
        f.round(50);
        f.round(50);
        f.app_limited = true;
        let cwnd = f.cc.window();
        for _ in 0..N_RTT_SAMPLE {
            f.ack(60);
        }
        assert_eq!(f.cc.window(), cwnd);
        assert!(f.cc.in_css());
    }

    #[test]
    fn css_grows_a_quarter_as_fast() {
        // §4.2: cwnd += min(N, L*SMSS) / CSS_GROWTH_DIVISOR, CSS_GROWTH_DIVISOR = 4, L = 8.
        let mut f = Flow::in_css();
        let cwnd = f.cc.cwnd;
        f.ack(60);
        assert_eq!(f.cc.cwnd, cwnd + MSS_F / 4.0);
        f.ack_bytes(20 * MSS, Some(Duration::from_millis(60)));
        assert_eq!(f.cc.cwnd, cwnd + MSS_F / 4.0 + 2.0 * MSS_F);
    }

    #[test]
    fn slow_start_stretch_ack_grows_at_most_eight_segments() {
        // §4.3: L = 8 for a sender that does not pace, replacing RFC 3465's L = 2 (which plain
        // slow start keeps).
        let mut f = Flow::hystart();
        f.ack_bytes(20 * MSS, Some(Duration::from_millis(50)));
        assert_eq!(f.cc.window(), 18 * MSS);
        let mut f = Flow::new(Cubic::without_hystart(MSS, 10));
        f.ack_bytes(20 * MSS, Some(Duration::from_millis(50)));
        assert_eq!(f.cc.window(), 12 * MSS);
    }

    #[test]
    fn css_rtt_drop_returns_to_slow_start() {
        // §4.2: in CSS, once a round has eight samples, currentRoundMinRTT < cssBaselineMinRtt
        // (60 ms) means the exit was spurious; a round at the baseline itself does not.
        let mut f = Flow::in_css();
        f.round(60);
        f.round(60);
        assert!(f.cc.in_css(), "left CSS at the baseline RTT");
        for _ in 0..7 {
            f.ack(59);
        }
        assert!(f.cc.in_css(), "left CSS before eight samples");
        f.ack(59);
        assert!(!f.cc.in_css());
        assert!(f.cc.in_slow_start());
        // Back to full slow start growth.
        let cwnd = f.cc.cwnd;
        f.ack(59);
        assert_eq!(f.cc.cwnd, cwnd + MSS_F);
    }

    #[test]
    fn css_after_five_rounds_sets_ssthresh() {
        // §4.2: CSS lasts CSS_ROUNDS = 5 rounds, the partial round it began in included; the ACK
        // that ends the fifth sets ssthresh = cwnd.
        let mut f = Flow::in_css();
        for _ in 0..4 {
            f.round(60);
        }
        assert!(f.cc.in_css());
        assert_eq!(f.cc.ssthresh(), u64::MAX);
        while !f.ack(60) {
            assert_eq!(f.cc.ssthresh(), u64::MAX, "left CSS before the round ended");
        }
        assert_eq!(f.cc.ssthresh(), f.cc.window());
        assert!(!f.cc.in_slow_start());
        assert!(!f.cc.in_css());
    }

    #[test]
    fn css_exit_starts_avoidance_with_k_zero() {
        // RFC 9438 §4.10: after a loss-free exit, cwnd_prior = cwnd, and the congestion
        // avoidance stage starts with K = 0 and W_max = cwnd at its start.
        let mut f = Flow::after_css();
        let cwnd = f.cc.cwnd;
        assert_eq!(f.cc.cwnd_prior, cwnd);
        f.ack(60);
        assert_eq!(f.cc.k(), 0.0);
        assert_eq!(f.cc.w_max(), cwnd);
        assert!(
            f.cc.cwnd < cwnd + MSS_F / 4.0,
            "cwnd {} after one ACK",
            f.cc.cwnd
        );
    }

    #[test]
    fn rto_slow_start_ignores_rtt_increase() {
        // §4.3: HyStart++ in the initial slow start only. After an RTO slow start is RFC 5681's:
        // an RTT jump from 50 to 90 ms does not slow it, one segment per segment acked.
        let mut f = Flow::hystart();
        f.round(50);
        f.cc.on_rto(f.now, 100 * MSS);
        assert_eq!(f.cc.ssthresh(), 70 * MSS);
        for _ in 0..10 {
            f.ack(50);
        }
        for _ in 0..20 {
            f.ack(90);
        }
        assert!(!f.cc.in_css());
        assert_eq!(f.cc.window(), 31 * MSS);
    }

    #[test]
    fn without_hystart_ignores_rtt_increase() {
        let mut f = Flow::new(Cubic::without_hystart(MSS, 10));
        f.round(50);
        f.round(50);
        f.round(100);
        f.round(150);
        assert!(!f.cc.in_css());
        assert_eq!(f.cc.window(), 10 * MSS + f.delivered);
    }
}
