//! wVegas, weighted Vegas (Cao, Xu and Fu, "Delay-based Congestion Control for Multipath TCP",
//! ICNP 2012; draft-xu-mptcp-congestion-control; Linux MPTCP `mptcp_wvegas.c`).
//!
//! Once per round (a window of data acknowledged), with `rtt` the mean RTT sample of the round
//! and `base_rtt` the least seen:
//!
//! ```text
//! diff   = cwnd · (rtt − base_rtt) / rtt             packets this subflow keeps queued
//! weight = x_r / Σ_k x_k,  x = cwnd / rtt            its share of the connection's rate
//! alpha  = max(2, weight · total_alpha)              its share of the connection's backlog
//! slow start: leave it when diff > gamma (cwnd = min(cwnd, target + 1))
//! avoidance:  diff > alpha → cwnd −= 1;  diff < alpha → cwnd += 1
//!             queueing delay at least twice its least value → cwnd ·= base_rtt / (2 · rtt)
//! ```
//!
//! Constants of `mptcp_wvegas.c`: initial alpha 2, total_alpha 10, gamma 1 (packets); a round
//! with 2 or fewer RTT samples grows as Reno. Losses and RTOs are Reno's. The rates of the
//! other subflows come from their window and smoothed RTT (Linux uses its per-subflow
//! `instant_rate`, the same quotient taken when the subflow last adjusted).

use super::reno::Reno;
use super::{AckSample, CongestionControl, CoupledView};
use crate::time::{Duration, Time};

const INITIAL_ALPHA: f64 = 2.0;
const TOTAL_ALPHA: f64 = 10.0;
const GAMMA: f64 = 1.0;

#[derive(Clone, Debug)]
pub struct Wvegas {
    reno: Reno,
    mss: u64,
    alpha: f64,
    base_rtt: Option<Duration>,
    /// Sum and count of RTT samples this round.
    sampled: (f64, u32),
    /// The round ends when `delivered` passes this.
    round_end: u64,
    /// Least queueing delay seen (0: none yet), seconds.
    queue_delay: f64,
}

impl Wvegas {
    pub fn new(mss: u64, init_cwnd_segments: u64) -> Self {
        Wvegas {
            reno: Reno::new(mss, init_cwnd_segments),
            mss,
            alpha: INITIAL_ALPHA,
            base_rtt: None,
            sampled: (0.0, 0),
            round_end: 0,
            queue_delay: 0.0,
        }
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// One round's adjustment (the body of `mptcp_wvegas_cong_avoid`), windows in packets.
    fn adjust(&mut self, rtt: f64, base: f64, coupled: CoupledView<'_>) {
        let mss = self.mss as f64;
        let cwnd = (self.window() as f64 / mss).floor();
        let target = (cwnd * base / rtt).floor();
        let diff = cwnd * (rtt - base) / rtt;
        // Linux tests `snd_cwnd <= snd_ssthresh` for slow start; our controllers leave slow
        // start at cwnd = ssthresh (`in_slow_start`), and so does this one.
        let slow_start = self.in_slow_start();
        let mut new = cwnd;
        if diff > GAMMA && slow_start {
            new = cwnd.min(target + 1.0);
            self.reno
                .set_window_and_ssthresh((new.max(2.0) * mss) as u64);
            return;
        }
        if slow_start {
            return; // slow start continues (Reno's)
        }
        if diff >= self.alpha {
            let me = cwnd / rtt;
            let total: f64 = coupled
                .subflows
                .iter()
                .filter_map(|&(w, r)| r.map(|r| w as f64 / mss / r.as_secs_f64().max(1e-9)))
                .sum();
            let weight = if total > 0.0 {
                (me / total).min(1.0)
            } else {
                1.0
            };
            self.alpha = (weight * TOTAL_ALPHA).floor().max(2.0);
        }
        if diff > self.alpha {
            new -= 1.0;
        } else if diff < self.alpha {
            new += 1.0;
        }
        let q = rtt - base;
        if self.queue_delay == 0.0 || self.queue_delay > q {
            self.queue_delay = q;
        }
        if q >= 2.0 * self.queue_delay && q > 0.0 {
            new = (new * base / (2.0 * rtt)).floor();
            self.queue_delay = 0.0;
        }
        self.reno.set_window((new.max(2.0) * mss) as u64);
    }
}

impl CongestionControl for Wvegas {
    fn window(&self) -> u64 {
        self.reno.window()
    }
    fn ssthresh(&self) -> u64 {
        self.reno.ssthresh()
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample, coupled: CoupledView<'_>) {
        if let Some(r) = ack.rtt {
            self.base_rtt = Some(self.base_rtt.map_or(r, |b| b.min(r)));
            self.sampled.0 += r.as_secs_f64();
            self.sampled.1 += 1;
        }
        if ack.delivered < self.round_end {
            if self.reno.in_slow_start() {
                self.reno.on_ack(now, ack, coupled);
            }
            return;
        }
        self.round_end = ack.snd_nxt.max(ack.delivered + 1);
        let (sum, n) = std::mem::take(&mut self.sampled);
        match self.base_rtt {
            Some(base) if n > 2 => {
                self.adjust(sum / n as f64, base.as_secs_f64(), coupled);
            }
            _ => self.reno.on_ack(now, ack, coupled),
        }
    }

    fn on_congestion_event(&mut self, now: Time, in_flight: u64) {
        self.reno.on_congestion_event(now, in_flight);
    }
    fn on_rto(&mut self, now: Time, in_flight: u64) {
        self.reno.on_rto(now, in_flight);
    }
    fn restart_after_idle(&mut self, now: Time, idle: Duration, rto: Duration, iw: u64) {
        // `CA_EVENT_CWND_RESTART` re-initializes wVegas.
        self.alpha = INITIAL_ALPHA;
        self.sampled = (0.0, 0);
        self.queue_delay = 0.0;
        self.reno.restart_after_idle(now, idle, rto, iw);
    }
    fn penalize(&mut self, now: Time) {
        self.reno.penalize(now);
    }
    fn name(&self) -> &'static str {
        "wvegas"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    /// Congestion avoidance at 20 packets with a base RTT of 100 ms.
    fn avoiding() -> Wvegas {
        let mut v = Wvegas::new(MSS, 40);
        v.on_congestion_event(Time::ZERO, 40 * MSS);
        assert_eq!(v.window(), 20 * MSS);
        v
    }

    fn ms(v: u64) -> Option<Duration> {
        Some(Duration::from_millis(v))
    }

    #[test]
    fn avoidance_little_queueing_grows_one_packet_per_round() {
        // diff = 20 · (101 − 100)/101 ≈ 0.2 < alpha 2: cwnd + 1.
        let mut v = avoiding();
        let view = [(20 * MSS, ms(101)), (20 * MSS, ms(101))];
        v.adjust(0.101, 0.100, CoupledView::of(&view));
        assert_eq!(v.window(), 21 * MSS);
    }

    #[test]
    fn avoidance_more_queued_than_its_share_shrinks_one_packet() {
        // diff = 20 · 30/130 ≈ 4.6 packets queued; this subflow carries a quarter of the rate,
        // so its share of total_alpha = 10 is 2.5 → alpha 2 (floor, at least 2): shrink.
        let mut v = avoiding();
        let view = [(20 * MSS, ms(130)), (60 * MSS, ms(130))];
        v.adjust(0.130, 0.100, CoupledView::of(&view));
        assert_eq!(v.alpha(), 2.0);
        assert_eq!(v.window(), 19 * MSS);
    }

    #[test]
    fn slow_start_queue_building_exits_to_target() {
        // diff = 10 · 50/150 ≈ 3.3 > gamma: cwnd = min(cwnd, target + 1) = 10·100/150 + 1 = 7.
        let mut v = Wvegas::new(MSS, 10);
        let view = [(10 * MSS, ms(150))];
        v.adjust(0.150, 0.100, CoupledView::of(&view));
        assert_eq!(v.window(), 7 * MSS);
        assert!(!v.in_slow_start());
    }
}
