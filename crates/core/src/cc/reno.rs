//! NewReno congestion window rules: RFC 5681 §3.1 (slow start, congestion avoidance), RFC 3465
//! (appropriate byte counting) and RFC 6582 (NewReno).
//!
//! Only the window lives here. Fast retransmit, the RFC 6675 pipe and the NewReno recovery point
//! belong to the subflow, which calls [`CongestionControl::on_congestion_event`] once per window
//! of data and [`CongestionControl::on_ack`] only outside loss recovery; so the RFC 6582
//! inflation by 3*SMSS and per-dupack inflation have no counterpart here: with RFC 6675 the
//! subflow sends by pipe. The controller's window is ssthresh from the congestion event on
//! (RFC 6675 §5 step 4.2); through the recovery the subflow sends by Proportional Rate
//! Reduction's window instead, as Linux does, and ends it at this one.
//!
//! There is no HyStart++ (RFC 9406) here, unlike [`super::cubic::Cubic`]: Linux Reno has none,
//! and Reno is validated against the textbook window trace.

use super::{restart_window, slow_start, AckSample, CongestionControl, CoupledView};
use crate::time::{Duration, Time};

#[derive(Clone, Debug)]
pub struct Reno {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    /// RFC 3465 §2.1 `bytes_acked`: bytes acknowledged in congestion avoidance not yet turned
    /// into window growth.
    bytes_acked: u64,
}

impl Reno {
    /// `init_cwnd_segments` is IW in segments (RFC 5681 §3.1 gives 2..4, RFC 6928 allows 10).
    pub fn new(mss: u64, init_cwnd_segments: u64) -> Reno {
        assert!(mss > 0, "mss must be positive");
        Reno {
            mss,
            cwnd: init_cwnd_segments.max(1) * mss,
            // RFC 5681 §3.1: "The initial value of ssthresh SHOULD be set arbitrarily high".
            ssthresh: u64::MAX,
            bytes_acked: 0,
        }
    }

    /// Coupled controllers (LIA, BALIA, wVegas) keep Reno's slow start, recovery and RTO and
    /// set the congestion-avoidance window themselves.
    pub(crate) fn set_window(&mut self, cwnd: u64) {
        self.cwnd = cwnd.max(self.mss);
    }

    /// Grow the window by `bytes`, a fraction of a byte at a time: coupled increases are
    /// fractions of a segment per ACK, so the remainder is kept in `carry` until it makes a
    /// whole byte (the epsilon keeps float rounding from losing a byte on exact multiples).
    pub(crate) fn grow_fractional(&mut self, carry: &mut f64, bytes: f64) {
        *carry += bytes;
        let whole = (*carry + 1e-9).floor();
        *carry -= whole;
        self.set_window(self.window() + whole as u64);
    }

    /// A coupled controller's own decrease: the window and the threshold become `cwnd`.
    pub(crate) fn set_window_and_ssthresh(&mut self, cwnd: u64) {
        self.cwnd = cwnd.max(2 * self.mss);
        self.ssthresh = self.cwnd;
        self.bytes_acked = 0;
    }

    /// RFC 5681 §3.1 equation (4): ssthresh = max(FlightSize / 2, 2*SMSS).
    fn halved_flight(&self, in_flight: u64) -> u64 {
        (in_flight / 2).max(2 * self.mss)
    }
}

impl CongestionControl for Reno {
    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, _now: Time, ack: &AckSample, _coupled: CoupledView<'_>) {
        // Linux `tcp_reno_cong_avoid` (net/ipv4/tcp_cong.c): no growth unless
        // `tcp_is_cwnd_limited`. RFC 5681 has no rule for an unused window (RFC 7661's is
        // experimental and optional), so Linux's is taken, as the kernel's `reno` and the MPTCP
        // v0.9x coupled controllers built on this one (LIA, OLIA, BALIA, wVegas) run it.
        if !ack.cwnd_limited {
            return;
        }
        let mut acked = ack.acked_bytes;
        if self.in_slow_start() {
            (self.cwnd, acked) = slow_start(self.cwnd, self.ssthresh, acked, self.mss);
            if acked == 0 {
                return;
            }
        }
        // RFC 5681 §3.1 (byte counting variant of equation 3) and RFC 3465 §2.1: add one SMSS
        // once a full cwnd of bytes has been acknowledged, i.e. one SMSS per RTT.
        self.bytes_acked += acked;
        if self.bytes_acked >= self.cwnd {
            self.bytes_acked -= self.cwnd;
            self.cwnd += self.mss;
        }
    }

    fn on_congestion_event(&mut self, _now: Time, in_flight: u64) {
        // RFC 5681 §3.2 step 2 (equation 4) and RFC 6675 §5 step 4.2: cwnd = ssthresh.
        self.ssthresh = self.halved_flight(in_flight);
        self.cwnd = self.ssthresh;
        self.bytes_acked = 0;
    }

    fn on_rto(&mut self, _now: Time, in_flight: u64) {
        // RFC 5681 §3.1: ssthresh by equation (4), cwnd = LW = 1 SMSS. The subflow calls this
        // once per RTO episode, so the "retransmitted more than once" rule (keep ssthresh) needs
        // no state here.
        self.ssthresh = self.halved_flight(in_flight);
        self.cwnd = self.mss;
        self.bytes_acked = 0;
    }

    fn set_loss_window(&mut self, cwnd: u64) {
        self.cwnd = cwnd.max(self.mss);
    }

    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        // tcp_undo_cwnd_reduction with tcp_reno_undo_cwnd.
        self.cwnd = self.cwnd.max(prior_cwnd);
        self.ssthresh = self.ssthresh.max(prior_ssthresh);
    }

    fn restart_after_idle(&mut self, _now: Time, idle: Duration, rto: Duration, iw: u64) {
        (self.cwnd, self.ssthresh) = restart_window(self.cwnd, self.ssthresh, idle, rto, iw);
        self.bytes_acked = 0;
    }

    fn penalize(&mut self, _now: Time) {
        // Linux MPTCP v0.9x `mptcp_rcv_buf_optimization` (net/mptcp/mptcp_sched.c): snd_cwnd
        // halves (at least one segment); ssthresh halves (at least two segments) only when the
        // window was not in slow start, so a penalty never ends slow start.
        // In packets, as the kernel's snd_cwnd and snd_ssthresh are.
        let prior = self.cwnd;
        self.cwnd = (self.cwnd / self.mss / 2).max(1) * self.mss;
        if prior >= self.ssthresh {
            self.ssthresh = (self.ssthresh / self.mss / 2).max(2) * self.mss;
        }
        self.bytes_acked = 0;
    }

    fn name(&self) -> &'static str {
        "reno"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    const MSS: u64 = 1000;

    fn reno() -> Reno {
        Reno::new(MSS, 10)
    }

    /// An ACK of `acked` bytes from a window-limited sender (everything in cwnd was in flight).
    fn ack(cc: &mut Reno, acked: u64) {
        let sample = AckSample {
            acked_bytes: acked,
            prior_in_flight: cc.window(),
            cwnd_limited: true,
            srtt: Some(Duration::from_millis(100)),
            min_rtt: Some(Duration::from_millis(100)),
            rtt: Some(Duration::from_millis(100)),
            // Reno keeps no round state, so the sequence-space fields are left at zero.
            delivered: 0,
            snd_nxt: 0,
        };
        cc.on_ack(Time::ZERO, &sample, CoupledView::default());
    }

    /// One round trip: every byte of the window at the start of the round is acked, one
    /// segment per ACK.
    fn ack_round(cc: &mut Reno) {
        for _ in 0..cc.window() / MSS {
            ack(cc, MSS);
        }
    }

    /// Slow start until ssthresh is met, then a loss with the whole window in flight.
    fn in_congestion_avoidance(cwnd_segments: u64) -> Reno {
        let mut cc = reno();
        while cc.window() < cwnd_segments * MSS {
            ack(&mut cc, MSS);
        }
        cc.on_congestion_event(Time::ZERO, 2 * cwnd_segments * MSS);
        assert_eq!(cc.window(), cwnd_segments * MSS);
        assert!(!cc.in_slow_start());
        cc
    }

    #[test]
    fn new_window_is_initial_segments() {
        let cc = reno();
        assert_eq!(cc.window(), 10 * MSS);
        assert_eq!(cc.ssthresh(), u64::MAX);
        assert!(cc.in_slow_start());
        assert_eq!(cc.name(), "reno");
    }

    #[test]
    fn slow_start_ack_doubles_window_per_rtt() {
        // RFC 5681 §3.1: cwnd += SMSS per ACK of a full segment, so a round doubles it.
        let mut cc = reno();
        ack_round(&mut cc);
        assert_eq!(cc.window(), 20 * MSS);
        ack_round(&mut cc);
        assert_eq!(cc.window(), 40 * MSS);
    }

    #[test]
    fn slow_start_stretch_ack_grows_at_most_two_segments() {
        // RFC 3465 §2.2 with L = 2: one ACK of 8 segments opens the window by 2 SMSS only.
        let mut cc = reno();
        ack(&mut cc, 8 * MSS);
        assert_eq!(cc.window(), 12 * MSS);
    }

    #[test]
    fn slow_start_ack_crossing_ssthresh_carries_rest_to_avoidance() {
        // An RTO with 30 segments in flight leaves ssthresh = 15 segments (equation 4).
        let mut cc = reno();
        cc.on_rto(Time::ZERO, 30 * MSS);
        assert_eq!(cc.ssthresh(), 15 * MSS);
        while cc.window() < 14 * MSS {
            ack(&mut cc, MSS);
        }
        // This ACK of 2 segments straddles ssthresh: one segment reaches it, the other is the
        // first byte count of congestion avoidance (RFC 3465 §2.1 bytes_acked).
        ack(&mut cc, 2 * MSS);
        assert_eq!(cc.window(), 15 * MSS);
        assert!(!cc.in_slow_start());
        for _ in 0..13 {
            ack(&mut cc, MSS);
        }
        assert_eq!(cc.window(), 15 * MSS);
        ack(&mut cc, MSS);
        assert_eq!(cc.window(), 16 * MSS);
    }

    #[test]
    fn congestion_avoidance_round_adds_one_segment() {
        // RFC 5681 §3.1 byte counting: +1 SMSS per cwnd of acknowledged bytes.
        let mut cc = in_congestion_avoidance(20);
        for _ in 0..19 {
            ack(&mut cc, MSS);
        }
        assert_eq!(cc.window(), 20 * MSS, "grew before a full window was acked");
        ack(&mut cc, MSS);
        assert_eq!(cc.window(), 21 * MSS);
        for _ in 0..10 {
            ack_round(&mut cc);
        }
        assert_eq!(cc.window(), 31 * MSS);
    }

    #[test]
    fn congestion_avoidance_stretch_acks_carry_excess_bytes() {
        // RFC 3465 §2.1: bytes_acked -= cwnd on growth, so bytes beyond a full window count
        // toward the next increase.
        let mut cc = in_congestion_avoidance(20);
        ack(&mut cc, 15 * MSS);
        ack(&mut cc, 10 * MSS);
        assert_eq!(cc.window(), 21 * MSS);
        ack(&mut cc, 15 * MSS);
        assert_eq!(cc.window(), 21 * MSS);
        ack(&mut cc, MSS);
        assert_eq!(cc.window(), 22 * MSS);
    }

    #[test]
    fn congestion_event_halves_window() {
        // RFC 5681 equation (4): ssthresh = FlightSize / 2; RFC 6675 §5: cwnd = ssthresh.
        let mut cc = reno();
        ack_round(&mut cc);
        ack_round(&mut cc);
        assert_eq!(cc.window(), 40 * MSS);
        cc.on_congestion_event(Time::ZERO, 40 * MSS);
        assert_eq!(cc.ssthresh(), 20 * MSS);
        assert_eq!(cc.window(), 20 * MSS);
        assert!(!cc.in_slow_start());
    }

    #[test]
    fn congestion_event_halves_flight_not_window() {
        // Equation (4) uses FlightSize, so an under-used window is cut below half.
        let mut cc = reno();
        ack_round(&mut cc);
        cc.on_congestion_event(Time::ZERO, 12 * MSS);
        assert_eq!(cc.ssthresh(), 6 * MSS);
        assert_eq!(cc.window(), 6 * MSS);
    }

    #[test]
    fn congestion_event_small_flight_floors_at_two_segments() {
        // Equation (4): max(FlightSize / 2, 2*SMSS).
        let mut cc = reno();
        cc.on_congestion_event(Time::ZERO, 3 * MSS);
        assert_eq!(cc.ssthresh(), 2 * MSS);
        assert_eq!(cc.window(), 2 * MSS);
    }

    #[test]
    fn rto_collapses_to_one_segment() {
        // RFC 5681 §3.1: cwnd = LW = 1 SMSS, ssthresh by equation (4).
        let mut cc = reno();
        ack_round(&mut cc);
        cc.on_rto(Time::ZERO, 20 * MSS);
        assert_eq!(cc.window(), MSS);
        assert_eq!(cc.ssthresh(), 10 * MSS);
        assert!(cc.in_slow_start());
        // And slow start resumes from one segment.
        ack(&mut cc, MSS);
        assert_eq!(cc.window(), 2 * MSS);
    }

    #[test]
    fn ack_from_a_sender_not_cwnd_limited_does_not_grow_window() {
        // `tcp_reno_cong_avoid` returns unless `tcp_is_cwnd_limited`, whatever was in flight.
        let mut cc = reno();
        let sample = AckSample {
            acked_bytes: MSS,
            prior_in_flight: 9 * MSS,
            cwnd_limited: false,
            srtt: None,
            min_rtt: None,
            rtt: None,
            delivered: 0,
            snd_nxt: 0,
        };
        cc.on_ack(Time::ZERO, &sample, CoupledView::default());
        assert_eq!(cc.window(), 10 * MSS);
        // The same ACK from a cwnd-limited sender grows it, even with little in flight.
        let sample = AckSample {
            prior_in_flight: MSS,
            cwnd_limited: true,
            ..sample
        };
        cc.on_ack(Time::ZERO, &sample, CoupledView::default());
        assert_eq!(cc.window(), 11 * MSS);
    }

    #[test]
    fn penalize_in_slow_start_halves_window_and_stays_in_slow_start() {
        // v0.9x mptcp_rcv_buf_optimization: "If in slow start, do not reduce the ssthresh".
        let mut cc = reno();
        ack_round(&mut cc);
        let ssthresh = cc.ssthresh();
        cc.penalize(Time::ZERO);
        assert_eq!(cc.window(), 10 * MSS);
        assert_eq!(cc.ssthresh(), ssthresh);
        assert!(cc.in_slow_start());
    }

    #[test]
    fn penalize_in_avoidance_halves_window_and_threshold() {
        let mut cc = reno();
        ack_round(&mut cc);
        cc.on_congestion_event(Time::ZERO, cc.window());
        cc.on_recovery_end(Time::ZERO);
        let (w, t) = (cc.window(), cc.ssthresh());
        cc.penalize(Time::ZERO);
        assert_eq!(cc.window(), w / 2);
        assert_eq!(cc.ssthresh(), t / 2);
    }

    #[test]
    fn penalize_small_window_floors_at_one_segment() {
        let mut cc = Reno::new(MSS, 3);
        cc.penalize(Time::ZERO);
        assert_eq!(cc.window(), MSS);
        cc.penalize(Time::ZERO);
        assert_eq!(cc.window(), MSS);
    }
}
