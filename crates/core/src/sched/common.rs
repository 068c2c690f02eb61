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

/// How far `stuck_on` looks past its cursor, segments.
const SCAN_LIMIT: u64 = 1 << 14;

/// The subflow with the lowest smoothed RTT among all subflows (with or without window space),
/// Linux's `minsk` in `mptcp_blest.c` / `mptcp_ecf.c`. Subflows without a sample rank last.
pub fn fastest(ctx: &SchedCtx<'_>) -> Option<PathId> {
    fastest_where(ctx, |_| true)
}

/// The first subflow in [`SchedCtx::by_srtt`] order for which `pred` holds, found as the
/// smallest (srtt, path) among them: one pass, no sort (MinRTT-style choices run on every
/// decision).
pub fn fastest_where(ctx: &SchedCtx<'_>, pred: impl Fn(PathId) -> bool) -> Option<PathId> {
    (0..ctx.npaths() as PathId)
        .filter(|&p| pred(p))
        .min_by_key(|&p| (ctx.subflow(p).srtt().unwrap_or(Duration::MAX), p))
}

/// The MinRTT choice: the lowest-sRTT subflow with window space, among those `allowed`.
pub fn minrtt_with_space(ctx: &SchedCtx<'_>, allowed: impl Fn(PathId) -> bool) -> Option<PathId> {
    fastest_where(ctx, |p| allowed(p) && ctx.has_space(p))
}

/// Smoothed RTT in seconds, `None` before the first sample.
pub fn srtt_s(ctx: &SchedCtx<'_>, p: PathId) -> Option<f64> {
    ctx.subflow(p).srtt().map(Duration::as_secs_f64)
}

/// The oldest segment at or after `*cursor` that subflow `from` carried, nobody has reported
/// received, `to` has not carried and the window admits: data stuck on a failed subflow that
/// `to` may resend. Advances `*cursor` past segments that need no resend, so repeated calls
/// cost amortized O(1).
pub fn stuck_on(ctx: &SchedCtx<'_>, from: PathId, to: PathId, cursor: &mut SegNo) -> Option<SegNo> {
    let meta = ctx.meta();
    *cursor = (*cursor).max(meta.base_seg());
    // Bounded: out-of-order schedulers may have sent far past the first unsent segment, but a
    // failed subflow's window never holds more than this.
    let end = meta.end_seg().min(*cursor + SCAN_LIMIT);
    let mut advance = true;
    for n in *cursor..end {
        let rec = meta.seg(n)?;
        if rec.sent_on(from) && !rec.received {
            if !rec.sent_on(to) && ctx.may_send(n) {
                return Some(n);
            }
            // Resent on `to` already: another `to` may still need it, so the shared cursor
            // stays here.
            advance = false;
        }
        if advance {
            *cursor = n + 1;
        }
    }
    None
}

/// Per-subflow queues of planned, not yet sent segments (OTIAS and DAPS plan ahead of the
/// congestion window; Cech, TUM 2020, Table 1). Segments below `planned_upto` that are unsent
/// sit in exactly one queue.
#[derive(Debug, Default)]
pub struct PlanQueues {
    queues: Vec<std::collections::VecDeque<SegNo>>,
    planned_upto: SegNo,
}

impl PlanQueues {
    pub fn new(npaths: usize) -> Self {
        PlanQueues {
            queues: vec![Default::default(); npaths],
            planned_upto: 0,
        }
    }

    /// Segments planned on `p` and not yet sent.
    pub fn len(&self, p: PathId) -> usize {
        self.queues[p as usize].len()
    }

    pub fn total(&self) -> usize {
        self.queues.iter().map(|q| q.len()).sum()
    }

    pub fn push(&mut self, p: PathId, n: SegNo) {
        self.queues[p as usize].push_back(n);
        self.planned_upto = self.planned_upto.max(n + 1);
    }

    /// The head of the queue of the first subflow (in sRTT order) with window space whose head
    /// the window admits. Heads that were sent or received meanwhile are dropped.
    pub fn pop_sendable(&mut self, ctx: &SchedCtx<'_>) -> Option<(PathId, SegNo)> {
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
            if !ctx.has_space(p) {
                continue;
            }
            if let Some(&n) = q.front() {
                if ctx.may_send(n) {
                    q.pop_front();
                    return Some((p, n));
                }
            }
        }
        None
    }

    /// The next unsent segment no queue holds yet, if the window admits it.
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
