//! BALIA, Balanced Linked Adaptation (Peng, Walid, Hwang and Low, "Multipath TCP: Analysis,
//! Design, and Implementation", IEEE/ACM ToN 2016; draft-walid-mptcp-congestion-control;
//! Linux MPTCP `mptcp_balia.c`).
//!
//! Slow start and the RTO are Reno's. With `x_k = w_k / rtt_k` the rate of subflow `k` (windows
//! in packets) and `α_r = max_k x_k / x_r`, subflow `r` changes its window
//!
//! ```text
//! per ACK:  w_r += (x_r / rtt_r) / (Σ_k x_k)² · (1 + α_r)/2 · (4 + α_r)/5      (packets)
//! per loss: w_r −= (w_r / 2) · min(α_r, 1.5)
//! ```
//!
//! With one subflow α = 1 and both reduce to Reno (+1/w per ACK, halve on loss). Subflows
//! without an RTT sample are left out of the sums.

use super::reno::Reno;
use super::{AckSample, CongestionControl, CoupledView};
use crate::time::{Duration, Time};

#[derive(Clone, Debug)]
pub struct Balia {
    reno: Reno,
    mss: u64,
    carry: f64,
    /// α of this subflow at its last ACK (the loss rule uses it).
    alpha: f64,
}

/// `(increase per acknowledged packet in packets, α_r)` for the subflow with window `w` bytes
/// and RTT `rtt`, beside `subflows` (all of them, this one included).
pub fn increase(
    w: u64,
    rtt: Duration,
    subflows: &[(u64, Option<Duration>)],
    mss: u64,
) -> (f64, f64) {
    let x = |w: u64, r: Duration| w as f64 / mss as f64 / r.as_secs_f64().max(1e-9);
    let xr = x(w, rtt);
    let (mut sum, mut best) = (0.0f64, 0.0f64);
    for &(wk, rk) in subflows {
        if let Some(rk) = rk {
            sum += x(wk, rk);
            best = best.max(x(wk, rk));
        }
    }
    if sum <= 0.0 || xr <= 0.0 {
        return (mss as f64 / w.max(1) as f64, 1.0);
    }
    let a = best / xr;
    let inc = (xr / rtt.as_secs_f64().max(1e-9)) / (sum * sum) * (1.0 + a) / 2.0 * (4.0 + a) / 5.0;
    (inc, a)
}

impl Balia {
    pub fn new(mss: u64, init_cwnd_segments: u64) -> Self {
        Balia {
            reno: Reno::new(mss, init_cwnd_segments),
            mss,
            carry: 0.0,
            alpha: 1.0,
        }
    }
}

impl CongestionControl for Balia {
    fn window(&self) -> u64 {
        self.reno.window()
    }
    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample, coupled: CoupledView<'_>) {
        let Some(rtt) = ack.srtt else {
            return self.reno.on_ack(now, ack, coupled);
        };
        let (inc, a) = increase(self.window(), rtt, coupled.subflows, self.mss);
        self.alpha = a;
        if coupled.subflows.len() < 2
            || self.reno.in_slow_start()
            // `mptcp_balia_cong_avoid`: `tcp_is_cwnd_limited` (Reno checks it again).
            || !ack.cwnd_limited
        {
            return self.reno.on_ack(now, ack, coupled);
        }
        let packets = ack.acked_bytes as f64 / self.mss as f64;
        self.reno
            .grow_fractional(&mut self.carry, inc * packets * self.mss as f64);
    }

    fn on_congestion_event(&mut self, _now: Time, _in_flight: u64) {
        self.carry = 0.0;
        let w = self.window() as f64;
        let cut = w / 2.0 * self.alpha.min(1.5);
        self.reno.set_window_and_ssthresh((w - cut).max(0.0) as u64);
    }
    fn on_rto(&mut self, now: Time, in_flight: u64) {
        self.carry = 0.0;
        self.reno.on_rto(now, in_flight);
    }
    fn restart_after_idle(&mut self, now: Time, idle: Duration, rto: Duration, iw: u64) {
        self.reno.restart_after_idle(now, idle, rto, iw);
    }
    fn penalize(&mut self, now: Time) {
        self.reno.penalize(now);
    }
    fn name(&self) -> &'static str {
        "balia"
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
    fn single_subflow_increase_is_reno() {
        // α = 1: (x/rtt)/x² · 1 · 1 = 1/w.
        let (inc, a) = increase(
            20 * MSS,
            Duration::from_millis(40),
            &[(20 * MSS, ms(40))],
            MSS,
        );
        assert_eq!(a, 1.0);
        assert!((inc - 1.0 / 20.0).abs() < 1e-12);
    }

    #[test]
    fn slower_subflow_alpha_and_increase_match_the_paper() {
        let view = [(30 * MSS, ms(10)), (10 * MSS, ms(100))];
        let (inc, a) = increase(10 * MSS, Duration::from_millis(100), &view, MSS);
        let (x1, x2) = (30.0 / 0.01, 10.0 / 0.1);
        assert!((a - x1 / x2).abs() < 1e-9);
        let expect = (x2 / 0.1) / (x1 + x2).powi(2) * (1.0 + a) / 2.0 * (4.0 + a) / 5.0;
        assert!((inc - expect).abs() < 1e-12);
    }

    #[test]
    fn loss_on_a_slow_subflow_cuts_by_up_to_three_quarters() {
        // α ≥ 1.5: w −= w/2 · 1.5.
        let mut b = Balia::new(MSS, 40);
        let view = [(40 * MSS, ms(100)), (400 * MSS, ms(10))];
        let sample = AckSample {
            acked_bytes: MSS,
            prior_in_flight: 40 * MSS,
            cwnd_limited: true,
            srtt: ms(100),
            min_rtt: ms(100),
            rtt: ms(100),
            delivered: 0,
            snd_nxt: 0,
        };
        b.on_ack(Time::ZERO, &sample, CoupledView::of(&view));
        let w = b.window();
        b.on_congestion_event(Time::ZERO, w);
        assert_eq!(b.window(), w - (w as f64 * 0.75) as u64);
    }
}
