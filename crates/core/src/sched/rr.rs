//! `rr`: round robin over the subflows with congestion-window space (Linux MPTCP
//! `mptcp_rr.c`), starting with the lowest-RTT subflow as Guo et al., MobiCom 2017, §7.5 specifies ("the
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
            None => crate::sched::common::fastest(ctx)? as usize,
        };
        for k in 0..n {
            // (start + k) mod n without a division.
            let p = if start + k < n {
                start + k
            } else {
                start + k - n
            };
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

#[cfg(test)]
mod tests {
    use crate::sched::minrtt::exchange::Exchange;
    use crate::sender::TxKind::New;

    #[test]
    fn rr_rotates_over_subflows_with_space() {
        let mut ex = Exchange::new("rr", 3, 2, 64);
        ex.at(0).write(8);
        assert_eq!(
            ex.send(),
            [
                (0, 0, New),
                (1, 1, New),
                (2, 2, New),
                (0, 3, New),
                (1, 4, New),
                (2, 5, New)
            ]
        );
    }

    #[test]
    fn rr_full_subflow_loses_its_turn() {
        let mut ex = Exchange::new("rr", 3, 1, 64);
        ex.at(0).write(8);
        assert_eq!(ex.send(), [(0, 0, New), (1, 1, New), (2, 2, New)]);
        // The turn is p0's, but only p2 has room.
        ex.at(10).ack(2, 0, 64);
        let sent = ex.send();
        assert!(
            !sent.is_empty() && sent.iter().all(|s| s.0 == 2),
            "{sent:?}"
        );
        assert_eq!(sent[0].1, 3);
    }

    #[test]
    fn rr_rwnd_blocked_sends_nothing() {
        let mut ex = Exchange::new("rr", 2, 4, 3);
        ex.at(0).write(8);
        assert_eq!(ex.send(), [(0, 0, New), (1, 1, New), (0, 2, New)]);
        assert_eq!(ex.send(), []);
    }
}
