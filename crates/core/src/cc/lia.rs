//! LIA, the Linked Increases Algorithm (Raiciu, Handley and Wischik, RFC 6356, 2011; Linux MPTCP
//! `mptcp_coupled.c`).
//!
//! Slow start, fast recovery and the RTO are Reno's (RFC 6356 §3: "the algorithm only applies
//! to the increase phase of the congestion avoidance state"); this controller delegates them to
//! [`Reno`]. In congestion avoidance, for every ACK on subflow `i` (RFC 6356 §3):
//!
//! ```text
//! cwnd_i += min( alpha · MSS_i · MSS_i / cwnd_total ,  MSS_i · MSS_i / cwnd_i )
//! alpha   = cwnd_total · max_i( cwnd_i / rtt_i² ) / ( Σ_i cwnd_i / rtt_i )²        (§4)
//! ```
//!
//! The RFC's byte-counting form multiplies the increase by the bytes an ACK acknowledges;
//! Linux does not: `mptcp_ccc_cong_avoid` (MPTCP v0.9x `mptcp_coupled.c`) adds one to
//! `snd_cwnd_cnt` per ACK, whatever it acknowledges, and one segment to the window after
//! max(cwnd_total / alpha, cwnd_i) of them. We follow Linux: with delayed ACKs (one per two
//! segments) LIA grows half as fast as the byte-counting form, while Reno beside it counts
//! acknowledged segments (`tcp_cong_avoid_ai`).
//!
//! so that the connection takes no more than one TCP would on the best of its paths (goal 2,
//! "do no harm") and moves traffic off congested paths (goal 3). With one subflow alpha = 1 and
//! the increase is Reno's. Subflows without an RTT sample yet are left out of alpha (the RFC
//! computes it over subflows that have one).

use super::reno::Reno;
use super::{AckSample, CongestionControl, CoupledView};
use crate::time::{Duration, Time};

#[derive(Clone, Debug)]
pub struct Lia {
    reno: Reno,
    mss: u64,
    /// ACKs since the last increase (Linux's `snd_cwnd_cnt`).
    acks: u64,
}

/// RFC 6356 §4: alpha from every subflow's window (bytes) and smoothed RTT, and the total
/// window. `None` when no subflow has an RTT sample.
pub fn alpha(subflows: &[(u64, Option<Duration>)]) -> Option<(f64, f64)> {
    let total: f64 = subflows.iter().map(|s| s.0 as f64).sum();
    let (mut best, mut sum) = (0.0f64, 0.0f64);
    for &(w, rtt) in subflows {
        let Some(rtt) = rtt else { continue };
        let r = rtt.as_secs_f64().max(1e-9);
        best = best.max(w as f64 / (r * r));
        sum += w as f64 / r;
    }
    (sum > 0.0).then(|| (total * best / (sum * sum), total))
}

impl Lia {
    pub fn new(mss: u64, init_cwnd_segments: u64) -> Self {
        Lia {
            reno: Reno::new(mss, init_cwnd_segments),
            mss,
            acks: 0,
        }
    }
}

impl CongestionControl for Lia {
    fn window(&self) -> u64 {
        self.reno.window()
    }
    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample, coupled: CoupledView<'_>) {
        // No RTT sample yet, slow start, or a window not in use: Reno's rules apply unchanged.
        // One subflow is no exception in Linux (alpha = 1, one segment per cwnd_i ACKs).
        let Some((a, total)) = alpha(coupled.subflows) else {
            return self.reno.on_ack(now, ack, coupled);
        };
        // `mptcp_ccc_cong_avoid` (v0.9x `mptcp_coupled.c`, read in the multipath-tcp/mptcp
        // source) returns unless `tcp_is_cwnd_limited`, before slow start and before the
        // coupled increase alike; Reno checks it again.
        if self.reno.in_slow_start() || !ack.cwnd_limited {
            return self.reno.on_ack(now, ack, coupled);
        }
        if ack.acked_bytes == 0 {
            return;
        }
        // One ACK, whatever it acknowledges (Linux's `snd_cwnd_cnt`, see the module doc): one
        // segment more once max(cwnd_total / alpha, cwnd_i) ACKs (in segments, the quotient
        // rounded down as Linux's integer division does) have been counted.
        let mss = self.mss as f64;
        let per_segment = ((total / mss) / a.max(1e-12))
            .floor()
            .max((self.window() / self.mss) as f64);
        if self.acks as f64 >= per_segment {
            self.reno.set_window(self.window() + self.mss);
            self.acks = 0;
        } else {
            self.acks += 1;
        }
    }

    fn on_congestion_event(&mut self, now: Time, in_flight: u64) {
        // `tcp_init_cwnd_reduction` and `tcp_enter_loss` clear `snd_cwnd_cnt`.
        self.acks = 0;
        self.reno.on_congestion_event(now, in_flight);
    }
    fn on_rto(&mut self, now: Time, in_flight: u64) {
        self.acks = 0;
        self.reno.on_rto(now, in_flight);
    }
    fn restart_after_idle(&mut self, now: Time, idle: Duration, rto: Duration, iw: u64) {
        self.reno.restart_after_idle(now, idle, rto, iw);
    }
    fn penalize(&mut self, now: Time) {
        self.reno.penalize(now);
    }
    fn name(&self) -> &'static str {
        "lia"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ms(v: u64) -> Option<Duration> {
        Some(Duration::from_millis(v))
    }

    #[test]
    fn alpha_equal_paths_is_one_over_n() {
        // RFC 6356 §4 with n identical subflows: alpha = n·w · (w/r²) / (n·w/r)² = 1/n.
        let (a, _) = alpha(&[(10 * MSS, ms(50)), (10 * MSS, ms(50))]).unwrap();
        assert!((a - 0.5).abs() < 1e-12);
        let (a, _) = alpha(&[(7 * MSS, ms(20)); 4]).unwrap();
        assert!((a - 0.25).abs() < 1e-12);
    }

    #[test]
    fn alpha_matches_rfc_formula_for_unlike_paths() {
        let s = [(20 * MSS, ms(10)), (50 * MSS, ms(100))];
        let (a, total) = alpha(&s).unwrap();
        let (w1, w2, r1, r2) = (20e3, 50e3, 0.01, 0.1);
        let expect =
            (w1 + w2) * f64::max(w1 / (r1 * r1), w2 / (r2 * r2)) / (w1 / r1 + w2 / r2).powi(2);
        assert!((a - expect).abs() < 1e-12 * expect);
        assert_eq!(total, 70e3);
    }

    /// Congestion avoidance at `cwnd` segments (ssthresh reached through one loss).
    fn in_avoidance(cwnd: u64) -> Lia {
        let mut l = Lia::new(MSS, cwnd * 2);
        l.on_congestion_event(Time::ZERO, cwnd * 2 * MSS);
        assert_eq!(l.window(), cwnd * MSS);
        l
    }

    fn ack(bytes: u64, in_flight: u64) -> AckSample {
        AckSample {
            acked_bytes: bytes,
            prior_in_flight: in_flight,
            cwnd_limited: true,
            srtt: ms(50),
            min_rtt: ms(50),
            rtt: ms(50),
            delivered: 0,
            snd_nxt: 0,
        }
    }

    #[test]
    fn two_equal_subflows_one_window_of_acks_grows_half_a_segment() {
        // Per RTT a subflow gains alpha·cwnd_i·MSS/cwnd_total = 0.5·10/20 = 1/4 segment: the
        // pair gains half a segment per RTT where one Reno flow would gain one.
        let mut l = in_avoidance(10);
        let view = [(10 * MSS, ms(50)), (10 * MSS, ms(50))];
        // cwnd_total / alpha = 20 / 0.5 = 40 ACKs counted, and the 41st grows the window.
        for _ in 0..40 {
            l.on_ack(Time::ZERO, &ack(MSS, 10 * MSS), CoupledView::of(&view));
        }
        assert_eq!(l.window(), 10 * MSS);
        l.on_ack(Time::ZERO, &ack(MSS, 10 * MSS), CoupledView::of(&view));
        assert_eq!(l.window(), 11 * MSS);
    }

    #[test]
    fn an_ack_of_two_segments_counts_as_one_ack() {
        // Linux counts ACKs, not acknowledged segments: 41 ACKs of two segments each grow the
        // subflow by one segment, as 41 ACKs of one; byte counting would give two.
        let mut l = in_avoidance(10);
        let view = [(10 * MSS, ms(50)), (10 * MSS, ms(50))];
        for _ in 0..41 {
            l.on_ack(Time::ZERO, &ack(2 * MSS, 10 * MSS), CoupledView::of(&view));
        }
        assert_eq!(l.window(), 11 * MSS);
    }

    /// One segment per window of ACKs, as Reno with one segment per ACK.
    #[test]
    fn single_subflow_grows_like_reno() {
        let mut l = in_avoidance(10);
        let view = [(10 * MSS, ms(50))];
        for _ in 0..11 {
            l.on_ack(Time::ZERO, &ack(MSS, 10 * MSS), CoupledView::of(&view));
        }
        assert_eq!(l.window(), 11 * MSS);
    }

    #[test]
    fn increase_capped_by_the_uncoupled_reno_increase() {
        // A big window on a slow path beside a small, much faster one: cwnd_total / alpha is
        // below cwnd_i, so the big subflow may grow no faster than a single TCP would (RFC 6356
        // §3, the min(); Linux's max of the two ACK counts): one segment per cwnd_i + 1 ACKs.
        let mut l = in_avoidance(100);
        let view = [(2 * MSS, ms(10)), (100 * MSS, ms(1000))];
        let (a, total) = alpha(&view).unwrap();
        assert!(total / MSS as f64 / a < 100.0);
        for _ in 0..100 {
            l.on_ack(Time::ZERO, &ack(MSS, 100 * MSS), CoupledView::of(&view));
        }
        assert_eq!(l.window(), 100 * MSS);
        l.on_ack(Time::ZERO, &ack(MSS, 100 * MSS), CoupledView::of(&view));
        assert_eq!(l.window(), 101 * MSS);
    }
}
