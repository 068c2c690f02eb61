//! `stms-a`: the Slide Together Multipath Scheduler with the gap adjusted from data-ACK
//! feedback (Shi et al., USENIX ATC 2018, §3.1 Algorithm 1 and Algorithm 2, §4 "STMS-A",
//! §5 adjust interval).
//!
//! Sending is Algorithm 1, shared with `stms-c` ([`super::stms_c`]). The gap is not computed
//! from path estimates but learned (Algorithm 2): on every data-ACK that acknowledges more than
//! two segments, look at the segment that held the left edge of the connection-level send
//! window until then. If a slow subflow sent it, slow data arrived late and the fast data
//! behind it waited at the receiver: the gap is too small, `delta_gap = +data_acked`. If the
//! fast subflow sent it, fast data arrived late behind early slow data: `delta_gap =
//! −data_acked`. The gap moves by the EWMA of `delta_gap` once per adjust interval, which §5
//! sets to `(RTT_s + RTT_f) / 2`.
//!
//! Our reading of "gap += EWMA(delta_gap, adjust_interval)" (the paper gives no weight): within
//! one adjust interval the samples are averaged by an EWMA of weight [`EWMA_WEIGHT`] started
//! afresh at the interval's first sample; at the end of the interval the gap moves by that
//! average. Summing the samples instead would count one late slow segment once per fast
//! segment stuck behind it and overshoot; an EWMA carried across intervals would keep pushing
//! after the gap has been corrected. The gap starts at 0 (MinRTT's behaviour) and is learned.
//!
//! Losses are not gaps (ours): a left edge held because its subflow was repairing a loss (the
//! subflow detected a loss while the segment was unacknowledged there) says nothing about the
//! gap, and counting it drove the gap to 5x Eq. 2 in slow start and kept it there for seconds
//! (`stms_a_gap_converges_to_eq2_after_a_delay_change`, crates/sim/tests/stms.rs). Such
//! samples are skipped, as Karn and Partridge skip RTT samples of retransmitted segments.
//!
//! More than two subflows (ours): one gap per slow subflow; a `+` sample goes to the subflow
//! that sent the late left edge, a `−` sample to the subflow that sent the earliest slow segment
//! still unacknowledged (the one that arrived early).

use std::collections::VecDeque;

use crate::meta::send::SegNo;
use crate::packet::{PathId, MAX_PATHS};
use crate::sched::stms_c::slide_together;
use crate::sched::{Assignment, SchedCtx, SchedEvent, Scheduler};
use crate::time::{Duration, Time};

/// Weight of a new `delta_gap` sample in the per-interval EWMA.
pub const EWMA_WEIGHT: f64 = 0.25;

/// One assignment: which subflow got which segment.
#[derive(Clone, Copy, Debug)]
struct Sent {
    seg: SegNo,
    dsn: u64,
    path: PathId,
    /// Its subflow detected a loss while this segment was still unacknowledged there.
    held_by_loss: bool,
}

#[derive(Debug, Default)]
pub struct StmsA {
    /// Gap of each (slow) subflow, segments.
    gap: [f64; MAX_PATHS],
    /// EWMA of this interval's `delta_gap` samples per subflow (`None`: no sample yet).
    ewma: [Option<f64>; MAX_PATHS],
    interval_start: Option<Time>,
    /// Data-ACK before the latest one.
    data_ack: u64,
    /// Segments handed to slow subflows, ascending DSN.
    slow_sent: VecDeque<Sent>,
    /// Segments handed to the fast subflow, ascending DSN.
    fast_sent: VecDeque<Sent>,
    /// The subflow that is fast now (the lowest smoothed RTT).
    fast: PathId,
}

impl StmsA {
    pub fn gap(&self, p: PathId) -> f64 {
        self.gap[p as usize]
    }

    /// `(RTT_s + RTT_f) / 2` over the fastest and slowest subflows with samples (§5).
    fn adjust_interval(ctx: &SchedCtx<'_>) -> Option<Duration> {
        // The fastest subflow ranks first only when it has a sample, so RTT_f is the smallest
        // sample; no sort needed (this runs on every decision and data-ACK).
        let samples = (0..ctx.npaths() as PathId).filter_map(|p| ctx.srtt_of(p));
        let (rtt_f, rtt_s) = samples.fold(None, |acc: Option<(Duration, Duration)>, r| {
            Some(acc.map_or((r, r), |(lo, hi)| (lo.min(r), hi.max(r))))
        })?;
        Some(Duration((rtt_f.0 + rtt_s.0) / 2))
    }

    /// At the end of an adjust interval, move every gap by its EWMA.
    fn maybe_adjust(&mut self, ctx: &SchedCtx<'_>) {
        let Some(interval) = Self::adjust_interval(ctx) else {
            return;
        };
        let start = *self.interval_start.get_or_insert(ctx.now);
        if ctx.now.saturating_since(start) < interval {
            return;
        }
        for (g, e) in self.gap.iter_mut().zip(self.ewma.iter_mut()) {
            if let Some(d) = e.take() {
                *g = (*g + d).max(0.0);
            }
        }
        self.interval_start = Some(ctx.now);
    }

    fn sample(&mut self, p: PathId, delta: f64) {
        let e = &mut self.ewma[p as usize];
        *e = Some(match *e {
            None => delta,
            Some(old) => (1.0 - EWMA_WEIGHT) * old + EWMA_WEIGHT * delta,
        });
    }

    /// Algorithm 2 for a data-ACK that moved the left edge from `self.data_ack` to `data_ack`.
    fn on_data_ack(&mut self, ctx: &SchedCtx<'_>, data_ack: u64) {
        let mss = ctx.meta().mss() as u64;
        let old = self.data_ack;
        let acked = (data_ack.saturating_sub(old) + mss / 2) / mss;
        // A left edge held by a loss repair (see `on_loss`) is a loss, not out-of-order
        // arrival: no sample (ours — Karn and Partridge's rule for RTT samples, SIGCOMM 1987,
        // applied to gap samples; a fast-path loss otherwise reads as "gap too big" and a
        // slow-path loss as "gap too small" by everything delivered meanwhile).
        if acked > 2 {
            let first_slow = self.slow_sent.iter().find(|s| s.dsn >= old).copied();
            match first_slow {
                Some(s) if s.dsn == old => {
                    if !s.held_by_loss {
                        self.sample(s.path, acked as f64);
                    }
                }
                _ => {
                    let fast = self.fast_sent.iter().find(|s| s.dsn >= old).copied();
                    let held_by_loss = fast.is_some_and(|f| f.dsn == old && f.held_by_loss);
                    let p = first_slow
                        .map(|s| s.path)
                        .or_else(|| ctx.by_srtt().get(1).copied());
                    if let Some(p) = p.filter(|&p| p != self.fast && !held_by_loss) {
                        self.sample(p, -(acked as f64));
                    }
                }
            }
        }
        for q in [&mut self.slow_sent, &mut self.fast_sent] {
            while q.front().is_some_and(|s| s.dsn < data_ack) {
                q.pop_front();
            }
        }
        self.data_ack = data_ack;
    }

    /// Subflow `p` detected a loss (recovery or a timeout). Its segments not yet acknowledged
    /// there are held by it: the lost segment is at or after the subflow's left edge, and a
    /// segment before it would have been acknowledged by the ACKs that revealed the loss, so
    /// every unacknowledged one is either lost or waits behind the hole (in-order delivery per
    /// subflow).
    fn on_loss(&mut self, ctx: &SchedCtx<'_>, p: PathId) {
        let meta = ctx.meta();
        for q in [&mut self.slow_sent, &mut self.fast_sent] {
            for s in q.iter_mut().filter(|s| s.path == p && !s.held_by_loss) {
                s.held_by_loss = meta.seg(s.seg).is_some_and(|r| !r.received);
            }
        }
    }
}

impl Scheduler for StmsA {
    fn name(&self) -> &'static str {
        "stms-a"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        self.maybe_adjust(ctx);
        let gaps = self.gap;
        let (a, fast) = slide_together(ctx, &mut |_, _, slow| gaps[slow as usize].round() as u64)?;
        self.fast = fast;
        if let Some(rec) = ctx.meta().seg(a.seg) {
            let s = Sent {
                seg: a.seg,
                dsn: rec.dsn,
                path: a.path,
                held_by_loss: false,
            };
            // Reinjections (lower DSNs, sent again) are not tracked: the queues stay ascending.
            let q = if a.path == self.fast {
                &mut self.fast_sent
            } else {
                &mut self.slow_sent
            };
            if q.back().is_none_or(|b| b.dsn < s.dsn) {
                q.push_back(s);
            }
        }
        Some(a)
    }

    fn on_event(&mut self, ctx: &mut SchedCtx<'_>, ev: &SchedEvent) {
        match *ev {
            SchedEvent::DataAck { data_ack } => {
                self.on_data_ack(ctx, data_ack);
                self.maybe_adjust(ctx);
            }
            SchedEvent::Loss { path } | SchedEvent::Rto { path } => self.on_loss(ctx, path),
            SchedEvent::Ack { .. } => {}
        }
    }

    fn gap_segments(&self) -> Option<f64> {
        let p = (0..MAX_PATHS).find(|&p| p != self.fast as usize)?;
        Some(self.gap[p])
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::minrtt::exchange::Exchange;
    use crate::subflow::sender::SubflowState;

    /// p0 slow (RTT 90 ms), p1 fast (RTT 30 ms), idle with RTT samples after a first round of
    /// two segments each; the fast subflow's window is then 4 segments (slow start).
    fn warmed_up() -> Exchange {
        let mut ex = Exchange::new("stms-a", 2, 2, 1000);
        ex.at(0).write(4);
        assert_eq!(ex.send().len(), 4);
        ex.at(30).ack(1, 0, 1000);
        ex.at(90).ack(0, 4, 1000);
        assert_eq!(ex.cwnd_segs(1), 4);
        ex
    }

    fn gap_now(ex: &Exchange) -> f64 {
        ex.conn.scheduler_gap().unwrap_or(f64::NAN)
    }

    #[test]
    fn fresh_stms_a_sends_like_minrtt() {
        let mut ex = warmed_up();
        ex.write(4 + 20);
        let sent = ex.send();
        let slow: Vec<u64> = sent.iter().filter(|s| s.0 == 0).map(|s| s.1).collect();
        // Gap 0: the slow subflow takes the segments right after the fast window.
        assert_eq!(slow.first(), Some(&8), "{sent:?}");
    }

    /// [`warmed_up`], 20 more segments sent (slow segments from 8 on, gap 0), and the fast
    /// segments 4..8 arrived and data-ACKed two at a time (no sample): the data-ACK waits at
    /// slow segment 8.
    fn fast_acked_up_to_slow_8() -> Exchange {
        let mut ex = warmed_up();
        ex.write(4 + 20);
        ex.send();
        ex.at(125).ack(1, 6, 1000);
        ex.at(126).ack(1, 8, 1000);
        ex
    }

    #[test]
    fn late_slow_left_edge_grows_the_gap_at_the_interval_end() {
        let mut ex = fast_acked_up_to_slow_8();
        assert_eq!(gap_now(&ex), 0.0);
        // Slow segment 8 held the left edge; when it arrives the data-ACK jumps 7 segments:
        // gap too small by 7. The adjust interval ((90 + 30) / 2 ms) since 90 ms is over.
        ex.at(185).ack(0, 15, 1000);
        assert_eq!(gap_now(&ex), 7.0);
    }

    #[test]
    fn slow_left_edge_held_by_a_timeout_is_no_sample() {
        let mut ex = fast_acked_up_to_slow_8();
        // Slow segment 8 was lost: the slow subflow's tail-loss probe goes unanswered, it times
        // out and the segment is sent again. The jump its repair brings is the loss's, not the
        // gap's.
        let mut rto = ex.fire_rto();
        ex.send();
        while ex.conn.subflows()[0].state() != SubflowState::Loss {
            assert!(Exchange::ms_at(rto) < 2_000, "p0 times out");
            rto = ex.fire_rto();
        }
        ex.send();
        ex.at(Exchange::ms_at(rto) + 90).ack(0, 15, 1000);
        assert_eq!(gap_now(&ex), 0.0);
    }

    #[test]
    fn late_fast_left_edge_shrinks_the_gap() {
        let mut ex = warmed_up();
        ex.write(4 + 20);
        ex.send();
        ex.at(185).ack(0, 4, 1000);
        // The fast subflow's segment 4 held the left edge behind slow data already there: a
        // jump of 4 + the slow segments behind it is a negative sample, and the gap stays >= 0.
        ex.at(186).ack(1, 12, 1000);
        assert_eq!(gap_now(&ex), 0.0);
    }
}
