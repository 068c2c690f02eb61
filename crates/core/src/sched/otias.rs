//! `otias`: Out-of-order Transmission for In-order Arrival Scheduling (Yang, Wang and Amer,
//! AINA Workshops 2014; Cech, TUM 2020, Table 1).
//!
//! Each segment, in DSN order, goes to the subflow on which it is estimated to arrive soonest,
//! counting the segments already queued there; a subflow whose window is full still gets
//! segments (they wait in its queue and leave as soon as the window opens). For subflow `j`:
//!
//! ```text
//! can_send_j = CWND_j − inflight_j                 (segments)
//! wait_j     = max(0, ⌈(queued_j + 1 − can_send_j) / CWND_j⌉)   rounds to wait
//! T_j        = wait_j · RTT_j + RTT_j / 2          estimated arrival
//! ```
//!
//! The `+ 1` counts the segment being placed; the rounds are rounded up, so the first segment
//! beyond the free window waits one round (the MPDCCP implementation's floor lets it leave
//! "now" although the window is full, the ns-3 one does not round at all). A segment stays on the subflow it was given (no re-planning; that is
//! STTF's difference). The paper queues every byte the application wrote; we plan only as far
//! as needed so a queue never holds data that a later, better estimate would place elsewhere
//! for long: planning goes on only while a subflow with
//! free window has nothing planned, and never beyond `HORIZON` segments — ours.
//!
//! Subflows without an RTT sample yet are estimated with RFC 6298's initial 1 s.

use crate::packet::{PathId, MAX_PATHS};
use crate::sched::common::PlanQueues;
use crate::sched::{Assignment, SchedCtx, Scheduler};
use crate::time::Duration;

/// RFC 6298 §2.1 initial RTO, the RTT assumed before a sample.
const UNSAMPLED_RTT: Duration = Duration::from_secs(1);
/// Segments planned ahead at most.
const HORIZON: usize = 4096;

#[derive(Debug)]
pub struct Otias {
    plan: PlanQueues,
    /// Each subflow's last estimate and what it was computed from ([`Otias::arrival`]).
    estimates: [Option<(Inputs, f64)>; MAX_PATHS],
}

/// What the arrival estimate of a subflow is computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Inputs {
    mss: u32,
    cwnd: u64,
    cwnd_free: u64,
    queued: usize,
    srtt: Option<Duration>,
}

impl Otias {
    pub fn new(npaths: usize) -> Self {
        Otias {
            plan: PlanQueues::new(npaths),
            estimates: [None; MAX_PATHS],
        }
    }

    /// The estimated arrival time of one more segment queued on `p`, seconds; the last one
    /// again if nothing it is computed from changed (issue "Speed at scale": every subflow
    /// is estimated on each planning round, and most have not changed since the previous).
    fn arrival(&mut self, ctx: &SchedCtx<'_>, p: PathId) -> f64 {
        let queued = self.plan.len(p);
        let inputs = ctx.read_subflow(p, |sf| Inputs {
            mss: sf.mss(),
            cwnd: sf.cwnd(),
            cwnd_free: sf.cwnd_free(),
            queued,
            srtt: sf.srtt(),
        });
        match self.estimates[p as usize] {
            Some((seen, t)) if seen == inputs => {
                debug_assert_eq!(t.to_bits(), Self::estimate(inputs).to_bits());
                t
            }
            _ => {
                let t = Self::estimate(inputs);
                self.estimates[p as usize] = Some((inputs, t));
                t
            }
        }
    }

    /// [`Otias::estimate`] of `p` as it stands, for debug checks.
    fn estimate_now(plan: &PlanQueues, ctx: &SchedCtx<'_>, p: PathId) -> f64 {
        let sf = ctx.subflow(p);
        Self::estimate(Inputs {
            mss: sf.mss(),
            cwnd: sf.cwnd(),
            cwnd_free: sf.cwnd_free(),
            queued: plan.len(p),
            srtt: sf.srtt(),
        })
    }

    fn estimate(i: Inputs) -> f64 {
        let mss = i.mss.max(1) as f64;
        let cwnd = (i.cwnd as f64 / mss).max(1.0);
        let can_send = (i.cwnd_free as f64 / mss).floor();
        let queued = i.queued as f64 + 1.0;
        let wait = ((queued - can_send) / cwnd).ceil().max(0.0);
        let rtt = i.srtt.unwrap_or(UNSAMPLED_RTT).as_secs_f64();
        wait * rtt + rtt / 2.0
    }
}

impl Scheduler for Otias {
    fn name(&self) -> &'static str {
        "otias"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        if let Some((path, seg)) = self.plan.pop_sendable(ctx) {
            return Some(Assignment { path, seg });
        }
        // Plan further only while a subflow with window space has nothing planned.
        let npaths = ctx.npaths();
        if !self.plan.idle_with_space(ctx) {
            return None;
        }
        // Nothing below changes a subflow's state, so each subflow's estimate changes only
        // when a segment is planned on it: computed once, then for that subflow only. Until
        // it is computed, a subflow holds a lower bound, RTT/2 (no wait), and is estimated only
        // once that bound could win (issue "Speed at scale": most subflows never could).
        // Estimates are never negative: their bits order them as `f64::total_cmp` does.
        let bits = |t: f64| {
            debug_assert!(t.is_sign_positive());
            t.to_bits()
        };
        let mut arrival = [0u64; MAX_PATHS];
        let mut exact = [false; MAX_PATHS];
        for (p, a) in arrival.iter_mut().enumerate().take(npaths) {
            *a = bits(
                ctx.srtt_of(p as PathId)
                    .unwrap_or(UNSAMPLED_RTT)
                    .as_secs_f64()
                    / 2.0,
            );
        }
        let mut total = self.plan.total();
        // Every queue head was checked just now and none could leave; a newly planned
        // segment leaves at once exactly when it heads the queue of a subflow with window
        // space (the subflows that may send, and what they hold, are otherwise unchanged:
        // `waiting` stays true, and `pop_sendable` would find only this one).
        loop {
            if total >= HORIZON {
                return None;
            }
            let n = self.plan.next_unplanned(ctx)?;
            // The first least estimate. A bound that leads is replaced by its estimate (never
            // lower) until an estimate leads: every bound behind it, or level with it at a
            // higher path number, stays behind it as an estimate too.
            let best = loop {
                let p = (0..npaths).min_by_key(|&p| arrival[p])?;
                if exact[p] {
                    break p as PathId;
                }
                let a = bits(self.arrival(ctx, p as PathId));
                debug_assert!(a >= arrival[p]);
                (arrival[p], exact[p]) = (a, true);
            };
            debug_assert_eq!(
                Some(best as usize),
                (0..npaths)
                    .map(|p| Self::estimate_now(&self.plan, ctx, p as PathId))
                    .enumerate()
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(p, _)| p)
            );
            self.plan.push(best, n);
            total += 1;
            if self.plan.len(best) == 1 && ctx.has_space(best) {
                // What `pop_sendable` finds, without asking every queue again (issue "Speed
                // at scale").
                #[cfg(debug_assertions)]
                let expected = {
                    let mut plan = self.plan.clone();
                    let got = plan.pop_sendable(ctx);
                    (got, plan)
                };
                let sendable = ctx.may_send(n).then(|| {
                    self.plan.pop_front(best);
                    (best, n)
                });
                #[cfg(debug_assertions)]
                debug_assert_eq!((sendable, &self.plan), (expected.0, &expected.1));
                return sendable.map(|(path, seg)| Assignment { path, seg });
            }
            arrival[best as usize] = bits(self.arrival(ctx, best));
            exact[best as usize] = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::minrtt::exchange::Exchange;

    /// p0 (100 ms) and p1 (10 ms) sampled and idle at t = 100 ms.
    fn warmed() -> Exchange {
        let mut ex = Exchange::new("otias", 2, 4, 100_000);
        ex.at(0).write(6);
        ex.send();
        ex.at(10).ack(1, 0, 100_000);
        ex.at(100).ack(0, 6, 100_000);
        ex
    }

    #[test]
    fn idle_subflows_fast_window_then_slow_takes_later_segments() {
        let mut ex = warmed();
        let (w0, w1) = (ex.cwnd_segs(0), ex.cwnd_segs(1));
        ex.write(200);
        let sent = ex.send();
        // The fast subflow's window goes first, in order.
        let fast: Vec<u64> = sent.iter().filter(|s| s.0 == 1).map(|s| s.1).collect();
        assert_eq!(fast, (6..6 + w1).collect::<Vec<_>>());
        // The slow one (arrival 50 ms) gets segments the fast one would deliver only after
        // several of its 10 ms rounds: it sends ahead of the fast subflow's queue, out of order.
        let slow: Vec<u64> = sent.iter().filter(|s| s.0 == 0).map(|s| s.1).collect();
        assert_eq!(slow.len() as u64, w0, "{sent:?}");
        assert!(slow[0] > 6 + 2 * w1, "slow subflow sends ahead: {slow:?}");
    }

    #[test]
    fn queued_segments_leave_when_the_fast_window_opens() {
        let mut ex = warmed();
        let w1 = ex.cwnd_segs(1);
        ex.write(200);
        ex.send();
        // The fast subflow's ACK opens its window: it continues right after its first round.
        ex.at(110).ack(1, 6 + w1, 100_000);
        let sent = ex.send();
        assert!(!sent.is_empty());
        assert!(sent.iter().all(|s| s.0 == 1));
        assert_eq!(sent[0].1, 6 + w1, "{sent:?}");
    }
}
