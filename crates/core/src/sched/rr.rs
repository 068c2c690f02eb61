//! `rr`: round robin over the subflows with congestion-window space (Linux MPTCP
//! `mptcp_rr.c`), starting with the lowest-RTT subflow as seed 000 §7.5 specifies ("the
//! round-robin selection starts with the low-RTT path"). Each segment goes to the next subflow
//! in turn that has room; a subflow without room loses its turn for that segment.

use crate::packet::PathId;
use crate::sched::{Assignment, SchedCtx, Scheduler};

#[derive(Debug, Default)]
pub struct RoundRobin {
    /// Position in the rotation; `None` until the first decision (then start at lowest RTT).
    turn: Option<usize>,
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "rr"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        let n = ctx.npaths();
        let seg = ctx.meta_mut().next_unsent()?;
        if !ctx.may_send(seg) {
            return None;
        }
        let start = match self.turn {
            Some(t) => t,
            None => ctx.by_srtt()[0] as usize,
        };
        for k in 0..n {
            let p = (start + k) % n;
            if ctx.has_space(p as PathId) {
                self.turn = Some((p + 1) % n);
                return Some(Assignment {
                    path: p as PathId,
                    seg,
                });
            }
        }
        None
    }
}
