//! `stms-c`: the Slide Together Multipath Scheduler with a computed gap (Shi et al., USENIX ATC
//! 2018, §3.1 Algorithm 1, Eq. 2, §4 "STMS-C").
//!
//! Algorithm 1: when the fast subflow (lowest smoothed RTT) has congestion-window space it sends
//! the first unsent segment; otherwise a slow subflow with space sends `unsentPackets[Gap]`, the
//! segment `Gap` unsent segments further on, leaving the ones in between for the fast subflow so
//! that both arrive in order. When that segment does not exist yet (the application has not
//! written it) or lies past the peer's receive window, the round is skipped (§4).
//!
//! STMS-C computes the gap from Eq. 2, `Gap = B_f × (OWD_s − OWD_f)`, every time a slow subflow
//! sends, from what the subflows' TCP knows, assuming symmetric up- and downlink delays (§4):
//! `B_f = cwnd_f / srtt_f` and `OWD = srtt / 2`, so `Gap = cwnd_f × (srtt_s − srtt_f) / (2 srtt_f)`.
//!
//! More than two subflows (ours, not the paper's): every subflow other than the fastest is a slow
//! one with its own gap relative to the fastest; subflows without an RTT sample get no gap.

use crate::meta::send::SegNo;
use crate::packet::PathId;
use crate::sched::common::fastest_and_where;
use crate::sched::{Assignment, SchedCtx, Scheduler};

/// The `k`-th (0-based) unsent segment at or after `from`, if written. The send buffer keeps
/// a bit per segment, so this costs popcounts over `k / 64` words, not a walk over the gap's
/// records (issue "Speed at scale": the gap grows with the paths' RTT spread).
pub(crate) fn nth_unsent(ctx: &SchedCtx<'_>, from: SegNo, k: u64) -> Option<SegNo> {
    ctx.meta().nth_unsent(from, k)
}

/// Algorithm 1 with `gap(ctx, fast, slow)` segments for each slow subflow. Returns the
/// assignment and the fast subflow ([`crate::sched::common::fastest`]).
pub(crate) fn slide_together(
    ctx: &mut SchedCtx<'_>,
    gap: &mut dyn FnMut(&SchedCtx<'_>, PathId, PathId) -> u64,
) -> Option<(Assignment, PathId)> {
    // The first and the first subflow with space in `SchedCtx::by_srtt` order, both found in
    // one pass without sorting (issue "Speed at scale": this runs on every decision, and two
    // passes, one for each, were about a hundred instructions more at 8 paths). The first with
    // space is the fast subflow exactly when that one has space; else it is the first slow one.
    let (fast, first_with_space) = fastest_and_where(ctx, |p| ctx.has_space(p))?;
    let head = ctx.meta_mut().next_unsent()?;
    if first_with_space == Some(fast) {
        let a = Assignment {
            path: fast,
            seg: head,
        };
        return ctx.may_send(head).then_some((a, fast));
    }
    let slow = first_with_space?;
    let g = gap(ctx, fast, slow);
    // Not written yet, or past the receive window: skip this round (§4).
    let seg = nth_unsent(ctx, head, g)?;
    ctx.may_send(seg)
        .then_some((Assignment { path: slow, seg }, fast))
}

/// Eq. 2 from the subflows' own estimates, in segments (0 without RTT samples on both).
pub(crate) fn computed_gap(ctx: &SchedCtx<'_>, fast: PathId, slow: PathId) -> u64 {
    let (srtt_f, cwnd_f, mss_f) = ctx.read_subflow(fast, |f| (f.srtt(), f.cwnd(), f.mss()));
    let (Some(rtt_f), Some(rtt_s)) = (srtt_f, ctx.srtt_of(slow)) else {
        return 0;
    };
    let (rtt_f, rtt_s) = (rtt_f.as_secs_f64(), rtt_s.as_secs_f64());
    if rtt_f <= 0.0 {
        return 0;
    }
    let b_f = cwnd_f as f64 / rtt_f;
    let gap = crate::model::stms::true_gap(b_f, rtt_f / 2.0, rtt_s / 2.0);
    (gap / mss_f as f64).round() as u64
}

#[derive(Debug, Default)]
pub struct StmsC {
    /// The gap of the latest slow-subflow decision, segments (for traces and tests).
    last_gap: u64,
}

impl StmsC {
    pub fn last_gap(&self) -> u64 {
        self.last_gap
    }
}

impl Scheduler for StmsC {
    fn name(&self) -> &'static str {
        "stms-c"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        let last = &mut self.last_gap;
        slide_together(ctx, &mut |ctx, fast, slow| {
            *last = computed_gap(ctx, fast, slow);
            *last
        })
        .map(|(a, _)| a)
    }

    fn gap_segments(&self) -> Option<f64> {
        Some(self.last_gap as f64)
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::minrtt::exchange::Exchange;
    use crate::sender::TxKind::New;

    /// p0 slow (RTT 90 ms), p1 fast (RTT 30 ms), both idle with RTT samples and window space
    /// after a first round of `init` segments each.
    fn warmed_up(sched: &str, init: u32) -> Exchange {
        let mut ex = Exchange::new(sched, 2, init, 1000);
        let init = init as u64;
        ex.at(0).write(2 * init);
        assert_eq!(ex.send().len() as u64, 2 * init);
        ex.at(30).ack(1, 0, 1000);
        ex.at(90).ack(0, 2 * init, 1000);
        assert_eq!(ex.send(), []);
        ex
    }

    #[test]
    fn fast_subflow_with_space_sends_the_first_unsent_segment() {
        let mut ex = warmed_up("stms-c", 4);
        ex.write(3);
        let sent = ex.send();
        assert_eq!(sent, [(1, 8, New), (1, 9, New), (1, 10, New)]);
    }

    #[test]
    fn full_fast_subflow_slow_one_skips_the_computed_gap() {
        let mut ex = warmed_up("stms-c", 4);
        let (w_f, w_s) = (ex.cwnd_segs(1), ex.cwnd_segs(0));
        // Eq. 2 with B_f = cwnd_f/srtt_f and symmetric delays: gap = cwnd_f (90 - 30) / (2 * 30).
        let gap = w_f;
        ex.write(w_f + gap + w_s + 5);
        let sent = ex.send();
        let fast: Vec<u64> = sent.iter().filter(|s| s.0 == 1).map(|s| s.1).collect();
        let slow: Vec<u64> = sent.iter().filter(|s| s.0 == 0).map(|s| s.1).collect();
        assert_eq!(fast, (8..8 + w_f).collect::<Vec<_>>(), "{sent:?}");
        // The fast subflow's window holds w_f segments; the next `gap` unsent ones are kept
        // for it; the slow subflow starts after them.
        let first_slow = 8 + w_f + gap;
        assert_eq!(
            slow,
            (first_slow..first_slow + w_s).collect::<Vec<_>>(),
            "{sent:?}"
        );
    }

    #[test]
    fn slow_subflow_waits_when_the_gap_segment_is_not_written() {
        let mut ex = warmed_up("stms-c", 4);
        let w_f = ex.cwnd_segs(1);
        // Only the fast window plus half the gap is written: nothing for the slow subflow.
        ex.write(w_f + w_f / 2);
        let sent = ex.send();
        assert!(sent.iter().all(|s| s.0 == 1), "{sent:?}");
        assert_eq!(sent.len() as u64, w_f);
    }

    #[test]
    fn fast_subflow_skips_segments_the_slow_one_sent() {
        let mut ex = warmed_up("stms-c", 4);
        let w_f = ex.cwnd_segs(1);
        ex.write(3 * w_f + 10);
        let first = ex.send();
        let slow: Vec<u64> = first.iter().filter(|s| s.0 == 0).map(|s| s.1).collect();
        assert!(!slow.is_empty());
        // Fast subflow ACKs everything it carried; it then sends the gap segments in order and
        // steps over the ones the slow subflow carried.
        ex.at(120).ack(1, 8 + w_f, 1000);
        let next: Vec<u64> = ex.send().iter().filter(|s| s.0 == 1).map(|s| s.1).collect();
        assert!(
            next.iter().all(|n| !slow.contains(n)),
            "{next:?} vs {slow:?}"
        );
        assert_eq!(next.first(), Some(&(8 + w_f)));
    }
}
