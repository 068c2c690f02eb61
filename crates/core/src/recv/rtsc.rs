//! `rtsc`: receiver-centric traffic splitting control (Park et al. (R-TSC), §V, Algorithm 1).
//!
//! Per subflow the receiver estimates, from what it sees:
//!
//! * `T^p`, the minimum RTT: what the subflow's handshake measured (a client times its
//!   SYN/SYN-ACK); the paper takes "the lowest RTT ever observed" with timestamps;
//! * `T^R(t) = T^p + T^q(t)`, with the queueing delay `T^q` the rise of the one-way delay
//!   (arrival time minus the sender's timestamp) over its minimum: the clock offset cancels;
//! * every `δt` ([`UPDATE_INTERVAL`]), from the packets counted since the last update
//!   (EstimateSubflowPath): `w ← α w + (1−α) pkts · T^R / Δt`, `x ← β x + (1−β) pkts / Δt`,
//!   and the capacity `c ← x` while the path queues (`T^R > T^p`, taken as `T^q > T^p / 10`);
//!   `W^BDP = c · T^p`. A "packet" is an MSS-sized one, the unit of the model (§III: windows
//!   and `W^BDP = c · T^p` in full packets) and of `f`: arrivals count `len / MSS`. Counting
//!   segments instead mixed units whenever the sender sent short ones (a 1448-byte stream
//!   packet over a 1420-byte MPTCP MSS leaves a 28-byte rest, a segment of its own whenever
//!   Nagle lets it go, and always with `TCP_NODELAY`), so `x`, `c` and `w` were up to twice the
//!   byte rate while Eq. 10 compared them with `f` in full packets;
//! * the application rate `f` (Eq. 20) as the rate at which in-order data reaches the
//!   application: our receiving application reads at once, so its play-back buffer never
//!   grows and Eq. 20's buffer term is the delivery rate itself.
//!
//! Every `δt` it solves Eq. 10 for the delay-optimal rates `x*` and searches Eq. 19 for the
//! thresholds `W̄^Dup` ([`crate::model::rtsc`]). When an in-order segment arrives on a subflow
//! whose estimated window exceeds its threshold, it is withheld from the acknowledgement: the
//! next segments draw three duplicate ACKs, the sender retransmits it and halves the window
//! (Algorithm 1 lines 8-11). After a withheld segment the subflow is left alone for one `T^R`
//! plus `δt`, the time the sender takes to react and the estimate to see it.
//!
//! α = β = 7/8 and δt = 100 ms are ours: the paper names the EWMAs and `δt` but gives no values.

use crate::model::rtsc as model;
use crate::packet::{DataSegment, MAX_PATHS};
use crate::recv::{path_index, ArrivalInfo, ReceiverPolicy, Verdict};
use crate::time::{Duration, Time};

/// `δt` of EstimateSubflowPath.
pub const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// Weight of the old value in the window and rate EWMAs (α, β).
pub const EWMA_KEEP: f64 = 0.875;
/// Grid points per subflow in the Eq. 19 search.
pub const SEARCH_STEPS: usize = 11;

#[derive(Clone, Copy, Debug, Default)]
struct PathEst {
    t_p: f64,
    /// Minimum and latest one-way delay sample (receiver clock − sender timestamp), ns.
    owd_min: Option<i64>,
    owd: i64,
    /// Data received since the last update, in MSS-sized packets (bytes / MSS).
    pkts: f64,
    /// Window (packets) and rate (packets/s) estimates.
    w: f64,
    x: f64,
    /// Capacity estimate, packets/s (0: unknown).
    c: f64,
    /// Window threshold `W̄^Dup`, packets (infinite: no control).
    threshold: f64,
    /// Window at the last loss the receiver saw (a hole), packets: `W^Loss`.
    w_loss: f64,
    holdoff_until: Option<Time>,
    withheld: u64,
    /// Highest subflow sequence end seen, to tell holes.
    seq_high: u64,
}

impl PathEst {
    fn t_r(&self) -> f64 {
        let q = self.owd_min.map_or(0, |m| (self.owd - m).max(0)) as f64 * 1e-9;
        self.t_p + q
    }
}

#[derive(Debug)]
pub struct Rtsc {
    mss: f64,
    paths: Vec<PathEst>,
    t_last: Option<Time>,
    delivered_last: u64,
    f_hat: f64,
    withheld_out: [u64; MAX_PATHS],
    /// Capacities and application rate of the last solve: Eq. 10 and 19 are solved again only
    /// when one of them moved by more than [`RESOLVE_CHANGE`].
    solved_for: Option<(Vec<f64>, f64)>,
}

/// Relative change of a capacity or of `f` that triggers a new solve.
pub const RESOLVE_CHANGE: f64 = 0.02;

impl Rtsc {
    pub fn new(handshake_rtt: &[Duration], mss: u32) -> Self {
        Rtsc {
            mss: mss as f64,
            paths: handshake_rtt
                .iter()
                .map(|d| PathEst {
                    t_p: d.as_secs_f64(),
                    threshold: f64::INFINITY,
                    ..PathEst::default()
                })
                .collect(),
            t_last: None,
            delivered_last: 0,
            f_hat: 0.0,
            withheld_out: [0; MAX_PATHS],
            solved_for: None,
        }
    }

    /// Current thresholds `W̄^Dup`, packets (infinite where no control applies).
    pub fn thresholds(&self) -> Vec<f64> {
        self.paths.iter().map(|p| p.threshold).collect()
    }
    /// Estimated windows, packets.
    pub fn windows(&self) -> Vec<f64> {
        self.paths.iter().map(|p| p.w).collect()
    }
    pub fn app_rate(&self) -> f64 {
        self.f_hat
    }

    /// EstimateSubflowPath for every subflow, then Eq. 10 and Eq. 19.
    fn update(&mut self, now: Time, delivered: u64) {
        let Some(last) = self.t_last else {
            self.t_last = Some(now);
            self.delivered_last = delivered;
            return;
        };
        let dt = now.saturating_since(last).as_secs_f64();
        if dt < UPDATE_INTERVAL.as_secs_f64() {
            return;
        }
        for p in &mut self.paths {
            let rate = p.pkts / dt;
            let (w_new, x_new) = (rate * p.t_r(), rate);
            if p.x == 0.0 {
                (p.w, p.x) = (w_new, x_new);
            } else {
                p.w = EWMA_KEEP * p.w + (1.0 - EWMA_KEEP) * w_new;
                p.x = EWMA_KEEP * p.x + (1.0 - EWMA_KEEP) * x_new;
            }
            // A queue at the bottleneck: the subflow runs at capacity. Without one, the rate
            // seen is a lower bound on it.
            if p.t_r() - p.t_p > p.t_p / 10.0 || p.x > p.c {
                p.c = p.x;
            }
            p.pkts = 0.0;
        }
        let f_new = delivered.saturating_sub(self.delivered_last) as f64 / self.mss / dt;
        self.f_hat = if self.f_hat == 0.0 {
            f_new
        } else {
            EWMA_KEEP * self.f_hat + (1.0 - EWMA_KEEP) * f_new
        };
        self.delivered_last = delivered;
        self.t_last = Some(now);
        self.solve();
    }

    fn solve(&mut self) {
        let c: Vec<f64> = self.paths.iter().map(|p| p.c).collect();
        let moved = |a: f64, b: f64| (a - b).abs() > RESOLVE_CHANGE * b.abs();
        if let Some((c0, f0)) = &self.solved_for {
            if !moved(self.f_hat, *f0) && !c.iter().zip(c0).any(|(&a, &b)| moved(a, b)) {
                return;
            }
        }
        self.solved_for = Some((c.clone(), self.f_hat));
        let t_p: Vec<f64> = self.paths.iter().map(|p| p.t_p).collect();
        let known = c.iter().all(|&c| c > 0.0) && self.f_hat > 0.0;
        let x_star = known
            .then(|| model::optimal_rates(self.f_hat, &c, &t_p, 1.0))
            .flatten();
        let Some(x_star) = x_star else {
            for p in &mut self.paths {
                p.threshold = f64::INFINITY;
            }
            return;
        };
        let eps = 0.01 * self.f_hat;
        let (w, _) = model::window_thresholds(&c, &t_p, &x_star, SEARCH_STEPS, eps);
        for (p, w) in self.paths.iter_mut().zip(w) {
            p.threshold = w;
        }
    }
}

impl ReceiverPolicy for Rtsc {
    fn name(&self) -> &'static str {
        "rtsc"
    }

    fn on_segment(&mut self, now: Time, seg: &DataSegment, info: ArrivalInfo) -> Verdict {
        let i = path_index(seg.path);
        let Some(p) = self.paths.get_mut(i) else {
            return Verdict::Accept;
        };
        p.pkts += seg.len as f64 / self.mss;
        let owd = now.0 as i64 - seg.ts_val as i64;
        p.owd = owd;
        p.owd_min = Some(p.owd_min.map_or(owd, |m| m.min(owd)));
        if seg.seq > p.seq_high && p.seq_high > 0 {
            // A hole: the sender lost a segment at about this window.
            p.w_loss = p.w;
        }
        p.seq_high = p.seq_high.max(seg.seq + seg.len as u64);
        self.update(now, info.delivered);
        let p = &mut self.paths[i];
        if !info.in_order || p.holdoff_until.is_some_and(|t| now < t) {
            return Verdict::Accept;
        }
        if p.w > p.threshold {
            p.withheld += 1;
            self.withheld_out[i] = p.withheld;
            let wait = Duration::from_secs_f64(p.t_r()) + UPDATE_INTERVAL;
            p.holdoff_until = Some(now + wait);
            // The estimate fell by half with the window.
            p.w *= model::BETA;
            return Verdict::Withhold;
        }
        Verdict::Accept
    }

    fn withheld(&self) -> &[u64] {
        &self.withheld_out[..self.paths.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(path: u8, n: u64, ts_val: u64) -> DataSegment {
        DataSegment {
            path,
            seq: n * 1000,
            len: 1000,
            dsn: n * 1000,
            ts_val,
            ts_ecr: 0,
            retransmit: false,
        }
    }

    fn info(delivered: u64) -> ArrivalInfo {
        ArrivalInfo {
            in_order: true,
            delivered,
        }
    }

    #[test]
    fn fresh_policy_accepts_everything() {
        let mut r = Rtsc::new(
            &[Duration::from_millis(30), Duration::from_millis(15)],
            1000,
        );
        for n in 0..100 {
            let now = Time(1_000_000 * n);
            assert_eq!(
                r.on_segment(now, &seg(0, n, now.0), info(n * 1000)),
                Verdict::Accept
            );
        }
        assert_eq!(r.withheld(), [0, 0]);
    }

    #[test]
    fn short_segments_count_by_their_bytes() {
        // The same 1000 bytes per ms on one path, once as full segments and once split into
        // 972 + 28 bytes (a write 28 bytes over the MSS): the same window estimate (within 1%: an
        // update may fall between the two halves). Counted per segment, the split run read
        // twice the window.
        let estimate = |split: bool| {
            let mut r = Rtsc::new(&[Duration::from_millis(20)], 1000);
            let mut dsn = 0;
            // Every segment 10 ms in the network: T^R = T^p.
            for n in 10..1010u64 {
                let now = Time(1_000_000 * n);
                let lens: &[u32] = if split { &[972, 28] } else { &[1000] };
                for &len in lens {
                    let s = DataSegment {
                        seq: dsn,
                        len,
                        dsn,
                        ..seg(0, 0, now.0 - 10_000_000)
                    };
                    dsn += len as u64;
                    r.on_segment(now, &s, info(dsn));
                }
            }
            r.windows()[0]
        };
        let (full, split) = (estimate(false), estimate(true));
        assert!((split - full).abs() < 0.01 * full, "{full} {split}");
        // 1000 packets/s of 1000 bytes, T^R = T^p = 20 ms: 20 packets in flight.
        assert!((full - 20.0).abs() < 0.5, "{full}");
    }

    #[test]
    fn queueing_subflow_above_threshold_is_withheld_once_per_holdoff() {
        // One path, 1000 packets/s, T^p 20 ms; the sender keeps 60 ms of queue (OWD +60 ms):
        // T^R = 80 ms, window ~80 packets, capacity 1000/s, while the application needs 500/s.
        let mut r = Rtsc::new(&[Duration::from_millis(20)], 1000);
        let mut verdicts = vec![];
        let mut delivered = 0;
        for n in 0..2000u64 {
            let now = Time(1_000_000 * n);
            // Sent 10 ms before arrival for the first packets, 70 ms later on (queue built).
            let owd = if n < 10 { 10_000_000 } else { 70_000_000 };
            delivered += if n % 2 == 0 { 1000 } else { 0 };
            verdicts.push(r.on_segment(
                now,
                &seg(0, n, now.0.saturating_sub(owd)),
                info(delivered),
            ));
        }
        let withheld = verdicts.iter().filter(|v| **v == Verdict::Withhold).count();
        assert!(
            withheld > 0,
            "threshold {:?} window {:?}",
            r.thresholds(),
            r.windows()
        );
        // At most one per holdoff (T^R 80 ms + 100 ms) over 2 s.
        assert!(withheld <= 2000 / 180 + 1, "{withheld}");
        assert!(r.thresholds()[0] <= 2.0 * 1000.0 * 0.020 + 1e-9);
    }
}
