//! `sttf`: Shortest Transfer Time First (Hurtig et al., IEEE/ACM ToN 2018, Algorithms 2-3;
//! Cech, TUM 2020, §3.6, Algorithm 3).
//!
//! On every decision (so after every ACK: the plan is rebuilt from the subflows' current state,
//! Algorithm 3 line 1) all unsent segments are assigned, in DSN order, to the subflow with the
//! smallest predicted transfer time, counting the segments planned on it before:
//!
//! ```text
//! TransferTime(s, data_to_send):
//!   if data_to_send ≤ cwnd_free:           return RTT/2          (leaves now)
//!   t = RTT                                (wait for the current window to be acknowledged)
//!   cwnd = increase_cwnd(CC state)
//!   slow start (cwnd < ssthresh): the window doubles per round up to ssthresh;
//!   congestion avoidance: one segment more per round;
//!   return t + RTT·(rounds − 1) + RTT/2    (rounds until data_to_send has left)
//! ```
//!
//! The prediction knows the congestion-control state: in slow start the window doubles (capped
//! at ssthresh), in congestion avoidance it grows by one segment per round (Reno; the paper's
//! prediction, applied to CUBIC too), in fast recovery it does not grow, after an RTO it slow
//! starts again. The segment a subflow with free window space sends is the first one the plan
//! gives it — possibly ahead of segments the plan keeps for a faster subflow.
//!
//! The plan is computed by counting, not by walking: subflow `r`'s k-th slot has a transfer
//! time that grows with k, so a subflow `s` with free window (transfer time RTT_s/2) gets the
//! segment whose index is the number of other subflows' slots that finish sooner. Planning
//! looks at most `HORIZON` segments ahead (ours; the paper plans the whole send buffer).

use crate::packet::{PathId, MAX_PATHS};
use crate::sched::{Assignment, SchedCtx, Scheduler};
use crate::subflow::sender::SubflowState;
use crate::time::Duration;

/// How far ahead the plan reaches, segments.
const HORIZON: usize = 4096;
/// RFC 6298 §2.1 initial RTO, the RTT assumed before a sample.
const UNSAMPLED_RTT: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
pub struct Sttf;

impl Sttf {
    pub fn new() -> Self {
        Sttf
    }
}

/// The slot model of one subflow: how many segments leave at once, then per later round.
#[derive(Clone, Copy, Debug)]
struct Slots {
    rtt: f64,
    /// Segments that fit the free window now (transfer time RTT/2).
    free: u64,
    cwnd: u64,
    ssthresh: u64,
    grows: bool,
}

impl Slots {
    fn of(ctx: &SchedCtx<'_>, p: PathId) -> Slots {
        let sf = ctx.subflow(p);
        let mss = sf.mss().max(1) as u64;
        let cwnd = (sf.cwnd() / mss).max(1);
        let ssthresh = (sf.ssthresh() / mss).max(2);
        let state = sf.state();
        Slots {
            rtt: sf.srtt().unwrap_or(UNSAMPLED_RTT).as_secs_f64(),
            free: sf.cwnd_free() / mss,
            cwnd,
            ssthresh,
            grows: state != SubflowState::Recovery,
        }
    }

    /// `increase_cwnd`: the window of the next round.
    fn grow(&self, cwnd: u64) -> u64 {
        if !self.grows {
            cwnd
        } else if cwnd < self.ssthresh {
            (cwnd * 2).min(self.ssthresh)
        } else {
            cwnd + 1
        }
    }

    /// Transfer time of the `k`-th segment planned on this subflow (k ≥ 1): Algorithm 3.
    fn transfer_time(&self, k: u64) -> f64 {
        if k <= self.free {
            return self.rtt / 2.0;
        }
        let mut left = k - self.free;
        let mut cwnd = self.grow(self.cwnd);
        let mut rounds = 1u64;
        while left > cwnd {
            left -= cwnd;
            cwnd = self.grow(cwnd);
            rounds += 1;
        }
        self.rtt + self.rtt * (rounds - 1) as f64 + self.rtt / 2.0
    }

    /// How many of this subflow's slots finish before `t` (or at `t`, if `ties`), at most `cap`.
    fn count_before(&self, t: f64, ties: bool, cap: u64) -> u64 {
        let before = |x: f64| x < t || (ties && x == t);
        if !before(self.rtt / 2.0) {
            return 0;
        }
        let mut n = self.free;
        let mut cwnd = self.grow(self.cwnd);
        let mut round = 1u64;
        while n < cap && before(self.rtt * round as f64 + self.rtt / 2.0) {
            n += cwnd;
            cwnd = self.grow(cwnd);
            round += 1;
        }
        n.min(cap)
    }
}

impl Scheduler for Sttf {
    fn name(&self) -> &'static str {
        "sttf"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        let planned = plan(ctx);
        debug_assert_eq!(
            planned,
            plan_every_candidate(ctx),
            "STTF's shortcut disagrees with the full plan"
        );
        let (index, path) = planned?;
        // The `index`-th unsent segment in DSN order, if the peer's window admits it (and so
        // every segment before it: the window's edge is a DSN).
        let first = ctx.meta_mut().next_unsent()?;
        let seg = ctx.meta().nth_unsent(first, index)?;
        ctx.may_send(seg).then_some(Assignment { path, seg })
    }
}

/// The RTT the slot model uses for `p` (as [`Slots::of`] takes it).
fn rtt_of(ctx: &SchedCtx<'_>, p: PathId) -> Duration {
    ctx.srtt_of(p).unwrap_or(UNSAMPLED_RTT)
}

/// RTTs below this (about 13 days) keep their order and ties as seconds in an `f64`
/// (`ns as f64 * 1e-9` moves a value by at most 2^-52 of itself, less than 1 ns apart), so
/// the transfer times `RTT/2` may be compared as integer nanoseconds.
const EXACT_ORDER: u64 = 1 << 50;

/// The decision: the subflow with window space whose first segment comes earliest in the plan,
/// and that segment's plan index (the number of other subflows' slots that finish sooner).
///
/// The winner is the subflow with space of the lowest first transfer time RTT/2 (ties: the
/// lower path number), so only its index is counted (issue "Speed at scale": counting every
/// candidate's index cost O(N²) slot walks per decision). Why: let `s` be that subflow and
/// `c` another with space, `t_s ≤ t_c`. Each subflow other than both counts at least as many
/// slots before `t_c` as before `t_s`; `c` has no slot before `t_s` (its first one is at
/// `t_c`, and on a tie `c`'s path number is higher, so ties do not count for it); `s` has at
/// least its free window's slots before `t_c` (at `t_c` on a tie, which counts, as `s`'s
/// number is lower). So `c`'s index exceeds `s`'s by at least `s`'s free window. That needs
/// a free window of one segment or more, which window space means for the simulator's
/// subflows; a view where it does not hold gets every candidate's index counted.
fn plan(ctx: &SchedCtx<'_>) -> Option<(u64, PathId)> {
    let n = ctx.npaths();
    let mut rtt = [Duration::ZERO; MAX_PATHS];
    let mut first: Option<(Duration, PathId)> = None;
    for (p, r) in rtt.iter_mut().enumerate().take(n) {
        *r = rtt_of(ctx, p as PathId);
        if r.0 >= EXACT_ORDER {
            return plan_every_candidate(ctx);
        }
        // The cheap comparison first: window space is asked only of a subflow that would lead.
        if first.is_none_or(|(b, _)| *r < b) && ctx.has_space(p as PathId) {
            first = Some((*r, p as PathId));
        }
    }
    let (rtt_s, s) = first?;
    let t = rtt_s.as_secs_f64() / 2.0;
    let sf = ctx.subflow(s);
    if sf.cwnd_free() / sf.mss().max(1) as u64 == 0 {
        return plan_every_candidate(ctx);
    }
    debug_assert_eq!(Slots::of(ctx, s).transfer_time(1), t);
    let mut index = 0u64;
    for (r, &rtt_r) in rtt.iter().enumerate().take(n) {
        // A subflow whose first slot is not before `t` (`s` itself among them) has none
        // before it. Ties count for lower path numbers.
        let ties = r < s as usize;
        if rtt_r < rtt_s || (ties && rtt_r == rtt_s) {
            index += count_before(ctx, r as PathId, t, ties);
        }
    }
    Some((index, s))
}

/// [`Slots::count_before`] of `p` (capped at `HORIZON`), with the window's growth read only
/// when a slot of a later round is before `t`: most subflows counted have only their free
/// window's slots before it.
fn count_before(ctx: &SchedCtx<'_>, p: PathId, t: f64, ties: bool) -> u64 {
    let sf = ctx.subflow(p);
    let rtt = rtt_of(ctx, p).as_secs_f64();
    let before = |x: f64| x < t || (ties && x == t);
    debug_assert!(before(rtt / 2.0));
    let free = sf.cwnd_free() / sf.mss().max(1) as u64;
    // The first round's slots, as `Slots::count_before` computes their time (round 1).
    if free < HORIZON as u64 && before(rtt * 1.0 + rtt / 2.0) {
        Slots::of(ctx, p).count_before(t, ties, HORIZON as u64)
    } else {
        free.min(HORIZON as u64)
    }
}

/// Algorithm 3 as written: every candidate's plan index, the least wins (ties: the lower path
/// number). The reference [`plan`] is checked against, and its fallback.
fn plan_every_candidate(ctx: &SchedCtx<'_>) -> Option<(u64, PathId)> {
    let n = ctx.npaths();
    let mut slots = [None; MAX_PATHS];
    for (p, s) in slots.iter_mut().enumerate().take(n) {
        *s = Some(Slots::of(ctx, p as PathId));
    }
    // For each subflow with window space: the plan index of its first segment.
    let mut best: Option<(u64, PathId)> = None;
    for s in 0..n {
        if !ctx.has_space(s as PathId) {
            continue;
        }
        let me = slots[s].expect("set above");
        let t = me.transfer_time(1);
        // The sum only grows: once it reaches the best index so far, this subflow cannot
        // take the lead (a tie keeps the earlier one), so the other counts are not needed.
        let bound = best.map_or(u64::MAX, |(i, _)| i);
        let mut index = 0u64;
        for r in (0..n).filter(|&r| r != s) {
            let other = slots[r].expect("set above");
            // Argmin ties go to the lower path number.
            index += other.count_before(t, r < s, HORIZON as u64);
            if index >= bound {
                break;
            }
        }
        if index < bound {
            best = Some((index, s as PathId));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::Slots;
    use crate::sched::minrtt::exchange::Exchange;

    fn slots(free: u64, cwnd: u64, ssthresh: u64) -> Slots {
        Slots {
            rtt: 0.1,
            free,
            cwnd,
            ssthresh,
            grows: true,
        }
    }

    #[test]
    fn transfer_time_free_window_is_half_rtt() {
        assert_eq!(slots(3, 10, 100).transfer_time(3), 0.05);
    }

    #[test]
    fn transfer_time_slow_start_doubles_per_round() {
        // 0 free, cwnd 10 → next rounds carry 20, 40: segment 20 in round 1, 21 in round 2.
        let s = slots(0, 10, 1000);
        assert!((s.transfer_time(20) - 0.15).abs() < 1e-12);
        assert!((s.transfer_time(21) - 0.25).abs() < 1e-12);
        assert!((s.transfer_time(60) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn transfer_time_congestion_avoidance_adds_one_segment_per_round() {
        // cwnd 10 = ssthresh → rounds carry 11, 12, ...
        let s = slots(0, 10, 10);
        assert!((s.transfer_time(11) - 0.15).abs() < 1e-12);
        assert!((s.transfer_time(12) - 0.25).abs() < 1e-12);
        assert!((s.transfer_time(23) - 0.25).abs() < 1e-12);
        assert!((s.transfer_time(24) - 0.35).abs() < 1e-12);
    }

    #[test]
    fn count_before_matches_transfer_times() {
        let s = slots(2, 5, 12);
        for t in [0.04, 0.05, 0.1, 0.15, 0.2, 0.31, 0.5] {
            let by_walk = (1..500).filter(|&k| s.transfer_time(k) < t).count() as u64;
            assert_eq!(s.count_before(t, false, 10_000), by_walk, "t = {t}");
        }
    }

    #[test]
    fn idle_subflows_slow_one_sends_ahead_of_fast_ones_plan() {
        let mut ex = Exchange::new("sttf", 2, 4, 100_000);
        ex.at(0).write(6);
        ex.send();
        ex.at(10).ack(1, 0, 100_000);
        ex.at(100).ack(0, 6, 100_000);
        let w1 = ex.cwnd_segs(1);
        ex.write(400);
        let sent = ex.send();
        let fast: Vec<u64> = sent.iter().filter(|s| s.0 == 1).map(|s| s.1).collect();
        assert_eq!(fast, (6..6 + w1).collect::<Vec<_>>(), "{sent:?}");
        let slow: Vec<u64> = sent.iter().filter(|s| s.0 == 0).map(|s| s.1).collect();
        assert!(!slow.is_empty());
        // Within the slow subflow's 50 ms, the fast one (10 ms RTT) completes rounds 1-4.
        assert!(slow[0] > 6 + 4 * w1, "{slow:?}");
    }
}
