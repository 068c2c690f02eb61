//! Small pieces several schedulers of Cech, TUM 2020 share: the MinRTT choice they start from,
//! the planners' per-subflow queues (OTIAS, DAPS), and finding data a
//! failed subflow still holds (the LTE-handover scheduler and `backup` resend it elsewhere).
//!
//! Everything here reads the scheduler context through `ctx.subflow(p)` getters and
//! `ctx.meta()`, so it works over any subflow view.

use crate::meta::send::SegNo;
use crate::packet::PathId;
use crate::sched::SchedCtx;
use crate::time::Duration;

/// How far [`Stuck::capture`] looks past the data-ACK, segments.
const SCAN_LIMIT: u64 = 1 << 14;

/// The subflow with the lowest smoothed RTT among all subflows (with or without window space),
/// Linux's `minsk` in `mptcp_blest.c` / `mptcp_ecf.c`. Subflows without a sample rank last.
pub fn fastest(ctx: &SchedCtx<'_>) -> Option<PathId> {
    fastest_where(ctx, |_| true)
}

/// The first subflow in [`SchedCtx::by_srtt`] order for which `pred` holds, found as the
/// smallest (srtt, path) among them: one pass, no sort (MinRTT-style choices run on every
/// decision).
///
/// `pred` is asked only of a subflow that would lead (issue "Speed at scale": window space and
/// the like cost more than an sRTT), so it must have no side effects.
#[inline]
pub fn fastest_where(ctx: &SchedCtx<'_>, pred: impl Fn(PathId) -> bool) -> Option<PathId> {
    let mut best: Option<(Duration, PathId)> = None;
    for p in 0..ctx.npaths() as PathId {
        let srtt = ctx.srtt_of(p).unwrap_or(Duration::MAX);
        // Paths come in increasing number, so a tie keeps the earlier one.
        if best.is_none_or(|(b, _)| srtt < b) && pred(p) {
            best = Some((srtt, p));
        }
    }
    best.map(|(_, p)| p)
}

/// [`fastest`] and [`fastest_where`] `pred` from one pass over the subflows: `None` without
/// subflows, else the fastest subflow and the first for which `pred` holds (asked of the same
/// subflows as `fastest_where` asks).
#[inline]
pub fn fastest_and_where(
    ctx: &SchedCtx<'_>,
    pred: impl Fn(PathId) -> bool,
) -> Option<(PathId, Option<PathId>)> {
    let mut fast: Option<(Duration, PathId)> = None;
    let mut best: Option<(Duration, PathId)> = None;
    for p in 0..ctx.npaths() as PathId {
        let srtt = ctx.srtt_of(p).unwrap_or(Duration::MAX);
        // Paths come in increasing number, so a tie keeps the earlier one.
        if fast.is_none_or(|(b, _)| srtt < b) {
            fast = Some((srtt, p));
        }
        if best.is_none_or(|(b, _)| srtt < b) && pred(p) {
            best = Some((srtt, p));
        }
    }
    debug_assert_eq!(fast.map(|f| f.1), fastest(ctx));
    debug_assert_eq!(best.map(|b| b.1), fastest_where(ctx, &pred));
    fast.map(|(_, f)| (f, best.map(|(_, b)| b)))
}

/// The MinRTT choice: the lowest-sRTT subflow with window space, among those `allowed`.
#[inline]
pub fn minrtt_with_space(ctx: &SchedCtx<'_>, allowed: impl Fn(PathId) -> bool) -> Option<PathId> {
    // Window space first: most subflows have none when a decision is asked for, and the
    // scheduler's own test (for `backup`, three reads of the subflow) is then skipped. Both
    // are pure, so the order changes nothing else.
    fastest_where(ctx, |p| ctx.has_space(p) && allowed(p))
}

/// Smoothed RTT in seconds, `None` before the first sample.
pub fn srtt_s(ctx: &SchedCtx<'_>, p: PathId) -> Option<f64> {
    ctx.subflow(p).srtt().map(Duration::as_secs_f64)
}

/// The data a failed subflow still holds, for another subflow to resend: the segments it
/// carried that nobody had reported received when it failed, oldest first. Captured once, at
/// the failure, with one scan of the buffer; each later decision then costs amortized O(1)
/// (issue "Speed at scale": a scan from a cursor on every decision was half of an 8-path run
/// of `lte-handover`, since a cursor shared by every resending subflow cannot pass a segment
/// one of them already resent).
#[derive(Clone, Debug, Default)]
pub struct Stuck {
    segs: std::collections::VecDeque<SegNo>,
}

impl Stuck {
    /// What subflow `from` holds now.
    pub fn capture(ctx: &SchedCtx<'_>, from: PathId) -> Self {
        let meta = ctx.meta();
        let end = meta.end_seg().min(meta.base_seg() + SCAN_LIMIT);
        Stuck {
            segs: (meta.base_seg()..end)
                .filter(|&n| meta.seg(n).is_some_and(|r| r.sent_on(from) && !r.received))
                .collect(),
        }
    }

    /// The oldest held segment that still needs a resend on `to`, taken off the list: each is
    /// resent once. Segments the receiver has since reported, or that `to` carries already,
    /// are dropped on the way; `None` when the oldest one lies past the peer's window.
    pub fn take(&mut self, ctx: &SchedCtx<'_>, to: PathId) -> Option<SegNo> {
        let meta = ctx.meta();
        while let Some(&n) = self.segs.front() {
            match meta.seg(n) {
                Some(r) if !r.received && !r.sent_on(to) => {
                    if !ctx.may_send(n) {
                        return None;
                    }
                    self.segs.pop_front();
                    return Some(n);
                }
                _ => {
                    self.segs.pop_front();
                }
            }
        }
        None
    }
}

/// Per-subflow queues of planned, not yet sent segments (OTIAS and DAPS plan ahead of the
/// congestion window; Cech, TUM 2020, Table 1). Segments below `planned_upto` that are unsent
/// sit in exactly one queue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanQueues {
    queues: Vec<std::collections::VecDeque<SegNo>>,
    planned_upto: SegNo,
    /// Bit `p` set when `p`'s queue holds a segment: the passes below visit only those
    /// (issue "Speed at scale": at 8 paths most queues are empty at most decisions, and each
    /// visit read a subflow's sRTT first).
    nonempty: u64,
}

impl PlanQueues {
    pub fn new(npaths: usize) -> Self {
        assert!(npaths <= 64, "at most 64 subflows");
        PlanQueues {
            queues: vec![Default::default(); npaths],
            planned_upto: 0,
            nonempty: 0,
        }
    }

    /// Brings bit `p` of `nonempty` up to date after `p`'s queue shrank.
    #[inline]
    fn note_shrunk(&mut self, p: usize) {
        if self.queues[p].is_empty() {
            self.nonempty &= !(1 << p);
        }
    }

    /// Debug builds: `nonempty` marks exactly the queues that hold a segment.
    #[inline]
    fn check_nonempty(&self) {
        debug_assert!(
            self.queues
                .iter()
                .enumerate()
                .all(|(p, q)| q.is_empty() != (self.nonempty >> p & 1 == 1)),
            "nonempty out of date"
        );
    }

    /// Some subflow with window space has nothing planned (the planners then plan further).
    pub fn idle_with_space(&self, ctx: &SchedCtx<'_>) -> bool {
        self.check_nonempty();
        let all = (!0u64).checked_shl(ctx.npaths() as u32).map_or(!0, |m| !m);
        crate::pathmask::bits(!self.nonempty & all).any(|p| ctx.has_space(p as PathId))
    }

    /// Segments planned on `p` and not yet sent.
    pub fn len(&self, p: PathId) -> usize {
        self.queues[p as usize].len()
    }

    pub fn total(&self) -> usize {
        self.queues.iter().map(|q| q.len()).sum()
    }

    /// Takes the head of `p`'s queue off.
    pub fn pop_front(&mut self, p: PathId) -> Option<SegNo> {
        let n = self.queues[p as usize].pop_front();
        self.note_shrunk(p as usize);
        n
    }

    pub fn push(&mut self, p: PathId, n: SegNo) {
        self.queues[p as usize].push_back(n);
        self.nonempty |= 1 << p;
        self.planned_upto = self.planned_upto.max(n + 1);
    }

    /// The head of the queue of the first subflow (in sRTT order) with window space whose head
    /// the window admits. Heads that were sent or received meanwhile are dropped.
    ///
    /// Only the queues visited before the one chosen are cleaned of such heads, in sRTT order
    /// ([`PlanQueues::pop_sendable_in_order`]); the lengths the planners read depend on it. When
    /// no queue ordered before the choice has such a head, cleaning changes nothing, and the
    /// choice is the least (sRTT, path) among the subflows that could send: found in one pass,
    /// without sorting (issue "Speed at scale": the sort was a third of this call at 8 paths).
    pub fn pop_sendable(&mut self, ctx: &SchedCtx<'_>) -> Option<(PathId, SegNo)> {
        #[cfg(debug_assertions)]
        let expected = {
            let mut copy = self.clone();
            let got = copy.pop_sendable_in_order(ctx);
            (copy, got)
        };
        self.check_nonempty();
        let mut best: Option<(Duration, PathId, SegNo)> = None;
        // Empty queues are skipped as before, only without reading their subflows' sRTT.
        for p in crate::pathmask::bits(self.nonempty) {
            let p = p as PathId;
            // A queue ordered after the best choice so far is never visited in sRTT order
            // (the choice can only move earlier), so its head does not matter: neither
            // looked up nor cleaned (issue "Speed at scale": the lookup of every head was
            // most of this call at 8 paths).
            let srtt = ctx.srtt_of(p).unwrap_or(Duration::MAX);
            if best.is_some_and(|(b, _, _)| srtt >= b) {
                continue;
            }
            let Some(&n) = self.queues[p as usize].front() else {
                continue;
            };
            let meta = ctx.meta();
            let Some(r) = meta.seg(n).filter(|r| !r.sent() && !r.received) else {
                // A head to drop before the choice: the order of the visits matters.
                return self.pop_sendable_in_order(ctx);
            };
            // `ctx.may_send(n)` from the record in hand (one lookup of it, not two): the
            // window, and Nagle's hold of a short last segment (`SendBuffer::nagle_holds`,
            // which answers at once for any segment but the last).
            if ctx.has_space(p) && r.end() <= meta.rwnd_limit() && !meta.nagle_holds(n) {
                debug_assert!(ctx.may_send(n));
                best = Some((srtt, p, n));
            }
        }
        let got = best.map(|(_, p, n)| {
            self.pop_front(p);
            (p, n)
        });
        #[cfg(debug_assertions)]
        debug_assert_eq!(
            (self.clone(), got),
            expected,
            "pop_sendable without the sort"
        );
        got
    }

    /// [`PlanQueues::pop_sendable`] visiting the queues in sRTT order.
    fn pop_sendable_in_order(&mut self, ctx: &SchedCtx<'_>) -> Option<(PathId, SegNo)> {
        for &p in ctx.by_srtt().iter() {
            let q = &mut self.queues[p as usize];
            while let Some(&n) = q.front() {
                match ctx.meta().seg(n) {
                    Some(r) if !r.sent() && !r.received => break,
                    _ => {
                        q.pop_front();
                    }
                }
            }
            self.note_shrunk(p as usize);
            if !ctx.has_space(p) {
                continue;
            }
            if let Some(&n) = self.queues[p as usize].front() {
                if ctx.may_send(n) {
                    self.pop_front(p);
                    return Some((p, n));
                }
            }
        }
        None
    }

    /// The next unsent segment no queue holds yet, if the window admits it. Inlined: the
    /// planners call it once per segment planned, and left to the compiler it moved in and
    /// out of line with unrelated changes (about 15 instructions per data packet).
    #[inline]
    pub fn next_unplanned(&mut self, ctx: &mut SchedCtx<'_>) -> Option<SegNo> {
        let first = ctx.meta_mut().next_unsent()?;
        let mut n = first.max(self.planned_upto);
        let end = ctx.meta().end_seg();
        while n < end {
            let rec = ctx.meta().seg(n)?;
            if !rec.sent() {
                return ctx.may_send(n).then_some(n);
            }
            n += 1;
        }
        None
    }
}
