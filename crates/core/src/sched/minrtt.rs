//! `minrtt`: the default scheduler of Linux MPTCP v0.9x (`mptcp_sched.c`), as described in
//! seed 001 §3.1 and seed 002 §2.3.
//!
//! * Among the subflows with congestion-window space, send the next unsent segment (DSN order)
//!   on the one with the lowest smoothed RTT. Subflows without an RTT sample yet rank last.
//! * Opportunistic retransmission: when the peer's receive window blocks new data, resend the
//!   segment at the data-ACK left edge on the fastest available subflow that has not carried it.
//! * Penalization (`mptcp_rcv_buf_optimization`): every subflow with a higher RTT that carried
//!   that left-edge segment has its congestion window halved (at most once per its RTT).
//!
//! Variants: `minrtt:nopenalty` keeps opportunistic retransmission without penalization;
//! `minrtt:noor` has neither (plain MinRTT), to show the host-buffer effect of seed 002 Eq. 1.

use crate::packet::PathId;
use crate::sched::{Assignment, SchedCtx, Scheduler};

#[derive(Debug)]
pub struct MinRtt {
    opportunistic: bool,
    penalize: bool,
}

impl MinRtt {
    pub fn new(penalize: bool) -> Self {
        MinRtt {
            opportunistic: true,
            penalize,
        }
    }
    pub fn plain() -> Self {
        MinRtt {
            opportunistic: false,
            penalize: false,
        }
    }

    fn opportunistic_retransmission(
        &self,
        ctx: &mut SchedCtx<'_>,
        order: &[PathId],
    ) -> Option<Assignment> {
        let left = ctx.meta().base_seg();
        let rec = *ctx.meta().seg(left)?;
        if rec.received || !rec.sent() {
            return None;
        }
        let p = order
            .iter()
            .copied()
            .find(|&p| ctx.has_space(p) && !rec.sent_on(p))?;
        if self.penalize {
            let my_rtt = ctx.subflow(p).srtt();
            for q in 0..ctx.npaths() as PathId {
                if q != p && rec.sent_on(q) && ctx.subflow(q).srtt() > my_rtt {
                    ctx.penalize(q);
                }
            }
        }
        Some(Assignment { path: p, seg: left })
    }
}

impl Scheduler for MinRtt {
    fn name(&self) -> &'static str {
        "minrtt"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        let order = ctx.by_srtt();
        let best = order.iter().copied().find(|&p| ctx.has_space(p))?;
        match ctx.meta_mut().next_unsent() {
            Some(n) if ctx.may_send(n) => Some(Assignment { path: best, seg: n }),
            Some(_) if self.opportunistic => self.opportunistic_retransmission(ctx, &order),
            _ => None,
        }
    }
}
