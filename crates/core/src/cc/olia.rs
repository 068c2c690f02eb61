//! OLIA, the Opportunistic Linked-Increases Algorithm (Khalili, Gast, Popovic and Le Boudec,
//! "MPTCP is not Pareto-optimal: performance issues and a possible solution", ACM CoNEXT 2012,
//! §5; draft-khalili-mptcp-congestion-control; Linux MPTCP v0.9x `mptcp_olia.c`).
//!
//! Slow start, the decrease on loss and the RTO are Reno's. In congestion avoidance, for every
//! ACK on subflow `r` (windows `w` in packets, `rtt` smoothed; byte counting as our LIA does:
//! the increase is per acknowledged packet):
//!
//! ```text
//! w_r += (w_r / rtt_r²) / (Σ_p w_p / rtt_p)²  +  α_r / w_r
//! ```
//!
//! The first term is Kelly and Voice's optimal coupling (no more than one TCP on the best path
//! in total); α moves window from the subflows with the largest window (set `M`) to the
//! "presumably best" ones (set `B`: largest `l_p / rtt_p²`, where `l_p` is the bytes acknowledged
//! between the subflow's last two losses or since its last loss, whichever is larger):
//!
//! ```text
//! α_r =  1 / (n · |B \ M|)   if r ∈ B \ M
//! α_r = −1 / (n · |M|)       if r ∈ M and B \ M ≠ ∅
//! α_r =  0                   otherwise
//! ```
//!
//! `n` the number of subflows with an RTT sample (the others are left out, as the kernel leaves
//! out subflows without `srtt`). With one subflow α = 0 and the increase is Reno's 1/w. As in
//! `mptcp_olia.c`, the markers of `l` move when recovery or an RTO begins
//! (`mptcp_olia_set_state`, not on a repeated RTO), and `B` is compared in exact integer
//! arithmetic (`l · rtt_best² = l_best · rtt²`); `l` counts the bytes the subflow delivered
//! (cumulatively or selectively acknowledged), where the kernel reads `snd_una`.

use super::reno::Reno;
use super::{AckSample, CongestionControl, CoupledView};
use crate::packet::MAX_PATHS;
use crate::time::{Duration, Time};

#[derive(Clone, Debug)]
pub struct Olia {
    reno: Reno,
    mss: u64,
    /// Fractional window change (either sign) not yet turned into bytes.
    carry: f64,
    /// Bytes acknowledged at the loss before last, at the last loss, and now (the kernel's
    /// `mptcp_loss1..3`).
    loss: [u64; 3],
    /// An RTO episode is under way: a repeated expiry moves no marker.
    in_rto: bool,
}

/// One subflow as OLIA's sets see it: window (bytes), smoothed RTT, loss interval `l` (bytes).
#[derive(Clone, Copy, Debug)]
pub struct PathState {
    pub w: u64,
    pub rtt: Duration,
    pub l: u64,
}

/// α of subflow `r` among `paths` (all of them, with an RTT sample), by the rules in the
/// module doc.
pub fn alpha(paths: &[PathState], r: usize) -> f64 {
    let n = paths.len();
    let max_w = paths.iter().map(|p| p.w).max().unwrap_or(0);
    // Best: the largest l / rtt²; compared by cross-multiplication, exactly.
    let rtt2 = |p: &PathState| u128::from(p.rtt.0).pow(2);
    let better =
        |a: &PathState, b: &PathState| u128::from(a.l) * rtt2(b) > u128::from(b.l) * rtt2(a);
    let Some(best) = paths.iter().reduce(|b, p| if better(p, b) { p } else { b }) else {
        return 0.0;
    };
    let in_b = |p: &PathState| u128::from(p.l) * rtt2(best) == u128::from(best.l) * rtt2(p);
    let m = paths.iter().filter(|p| p.w == max_w).count();
    let b_not_m = paths.iter().filter(|p| p.w < max_w && in_b(p)).count();
    let p = &paths[r];
    if b_not_m == 0 {
        0.0
    } else if p.w < max_w && in_b(p) {
        1.0 / (n * b_not_m) as f64
    } else if p.w == max_w {
        -1.0 / (n * m) as f64
    } else {
        0.0
    }
}

/// The window change of subflow `r` per acknowledged packet, in packets.
pub fn increase(paths: &[PathState], r: usize, mss: u64, alpha: f64) -> f64 {
    let pkts = |w: u64| w as f64 / mss as f64;
    let secs = |d: Duration| d.as_secs_f64().max(1e-9);
    let sum: f64 = paths.iter().map(|p| pkts(p.w) / secs(p.rtt)).sum();
    let (w, rtt) = (pkts(paths[r].w).max(1.0), secs(paths[r].rtt));
    (w / (rtt * rtt)) / (sum * sum) + alpha / w
}

impl Olia {
    pub fn new(mss: u64, init_cwnd_segments: u64) -> Self {
        Olia {
            reno: Reno::new(mss, init_cwnd_segments),
            mss,
            carry: 0.0,
            loss: [0; 3],
            in_rto: false,
        }
    }

    /// `mptcp_olia_set_state` on entering recovery or loss: the interval just ended becomes the
    /// previous one, unless nothing was acknowledged since the last marker.
    fn mark_loss(&mut self) {
        if self.loss[2] != self.loss[1] {
            self.loss[0] = self.loss[1];
            self.loss[1] = self.loss[2];
        }
    }

    fn grow(&mut self, bytes: f64) {
        self.carry += bytes;
        let whole = self.carry.trunc();
        self.carry -= whole;
        let w = (self.window() as f64 + whole).max(self.mss as f64);
        self.reno.set_window(w as u64);
    }
}

impl CongestionControl for Olia {
    fn window(&self) -> u64 {
        self.reno.window()
    }
    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    fn loss_interval(&self) -> u64 {
        (self.loss[2] - self.loss[1]).max(self.loss[1] - self.loss[0])
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample, coupled: CoupledView<'_>) {
        self.loss[2] = self.loss[2].max(ack.delivered);
        self.in_rto = false;
        let known = coupled.loss_intervals.len() == coupled.subflows.len()
            && coupled.this < coupled.subflows.len();
        if coupled.subflows.len() < 2
            || !known
            || self.reno.in_slow_start()
            // `mptcp_olia_cong_avoid`: `tcp_is_cwnd_limited` (Reno checks it again).
            || !ack.cwnd_limited
        {
            return self.reno.on_ack(now, ack, coupled);
        }
        // The subflows with an RTT sample (the view's, as they were when this ACK arrived);
        // `r` is this one among them.
        let mut paths = [PathState {
            w: 0,
            rtt: Duration::ZERO,
            l: 0,
        }; MAX_PATHS];
        let (mut n, mut r) = (0, None);
        for (k, (&(w, rtt), &l)) in coupled
            .subflows
            .iter()
            .zip(coupled.loss_intervals)
            .enumerate()
        {
            let Some(rtt) = rtt else { continue };
            if k == coupled.this {
                r = Some(n);
            }
            paths[n] = PathState { w, rtt, l };
            n += 1;
        }
        let paths = &paths[..n];
        let Some(r) = r else {
            return self.reno.on_ack(now, ack, coupled);
        };
        let packets = ack.acked_bytes as f64 / self.mss as f64;
        let inc = increase(paths, r, self.mss, alpha(paths, r)) * packets * self.mss as f64;
        self.grow(inc);
    }

    fn on_congestion_event(&mut self, now: Time, in_flight: u64) {
        self.mark_loss();
        self.carry = 0.0;
        self.reno.on_congestion_event(now, in_flight);
    }
    fn on_rto(&mut self, now: Time, in_flight: u64) {
        if !self.in_rto {
            self.mark_loss();
        }
        self.in_rto = true;
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
        "olia"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn alphas(paths: &[PathState]) -> Vec<f64> {
        (0..paths.len()).map(|r| alpha(paths, r)).collect()
    }

    fn p(w: u64, rtt_ms: u64, l: u64) -> PathState {
        PathState {
            w: w * MSS,
            rtt: Duration::from_millis(rtt_ms),
            l,
        }
    }

    #[test]
    fn one_subflow_is_reno() {
        // α = 0 (the only path is in M, B \ M is empty) and (w/r²)/(w/r)² = 1/w.
        let paths = [p(20, 40, 5_000)];
        assert_eq!(alphas(&paths), [0.0]);
        assert!((increase(&paths, 0, MSS, 0.0) - 1.0 / 20.0).abs() < 1e-12);
    }

    #[test]
    fn best_path_without_the_largest_window_takes_window_from_it() {
        // Path 0: the largest window; path 1: the best l/rtt². n = 2, |M| = |B \ M| = 1.
        let paths = [p(40, 50, 10_000), p(10, 50, 90_000)];
        assert_eq!(alphas(&paths), [-0.5, 0.5]);
        let sum = 40.0 / 0.05 + 10.0 / 0.05;
        let kelly = |w: f64| (w / (0.05 * 0.05)) / (sum * sum);
        assert!((increase(&paths, 1, MSS, 0.5) - (kelly(10.0) + 0.5 / 10.0)).abs() < 1e-12);
        assert!((increase(&paths, 0, MSS, -0.5) - (kelly(40.0) - 0.5 / 40.0)).abs() < 1e-12);
    }

    #[test]
    fn best_path_with_the_largest_window_leaves_alpha_zero() {
        let paths = [p(40, 50, 90_000), p(10, 50, 10_000)];
        assert_eq!(alphas(&paths), [0.0, 0.0]);
    }

    #[test]
    fn best_compares_l_over_rtt_squared() {
        // Twice the interval at twice the RTT is worse (l/rtt² halves): path 0 stays best.
        let paths = [p(10, 20, 10_000), p(30, 40, 20_000), p(40, 10, 1_000)];
        let a = alphas(&paths);
        // M = {2}; B = {0} (10,000/400 > 20,000/1,600 > 1,000/100); n = 3.
        assert_eq!(a, [1.0 / 3.0, 0.0, -1.0 / 3.0]);
    }

    #[test]
    fn loss_markers_move_on_recovery_not_on_a_repeated_rto() {
        let mut o = Olia::new(MSS, 10);
        let ack = |delivered| AckSample {
            acked_bytes: MSS,
            prior_in_flight: 10 * MSS,
            cwnd_limited: true,
            srtt: Some(Duration::from_millis(50)),
            min_rtt: Some(Duration::from_millis(50)),
            rtt: None,
            delivered,
            snd_nxt: delivered,
        };
        o.on_ack(Time::ZERO, &ack(30_000), CoupledView::default());
        o.on_congestion_event(Time::ZERO, 10 * MSS);
        assert_eq!(o.loss, [0, 30_000, 30_000]);
        o.on_ack(Time::ZERO, &ack(40_000), CoupledView::default());
        assert_eq!(
            o.loss_interval(),
            30_000,
            "max(10,000 since, 30,000 before)"
        );
        o.on_rto(Time::ZERO, 10 * MSS);
        o.on_rto(Time::ZERO, 10 * MSS);
        assert_eq!(o.loss, [30_000, 40_000, 40_000]);
    }
}
