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
    fn nagle_holds_the_short_rest_of_a_write_until_the_next_write_fills_it() {
        // Writes of 1,200 bytes over a 1,000-byte MSS (a 1,448-byte stream packet over
        // MPTCP's 1,420). The multipath-tcp.org kernel, where `mptcp_rr.c` lives, runs Nagle
        // with Minshall's rule on the meta socket (`mptcp_write_xmit`: `tcp_nagle_test` on the
        // skb the scheduler picked, `tcp_minshall_update` after it is sent): the first write's
        // 200-byte rest leaves (no short segment is unacknowledged), the second's waits, and
        // the third write fills it to a full segment (`tcp_sendmsg` appends to the unsent tail)
        // whose own 400-byte rest waits until the first short segment is data-acknowledged.
        let wire = |ex: &Exchange| -> Vec<(u64, u32)> {
            ex.wire.iter().map(|(d, _)| (d.dsn, d.len)).collect()
        };
        let mut ex = Exchange::new("rr", 2, 10, 64);
        ex.at(0).conn.write(1200, false);
        ex.send();
        assert_eq!(wire(&ex), [(0, 1000), (1000, 200)]);
        ex.at(1).conn.write(1200, false);
        ex.send();
        assert_eq!(
            wire(&ex)[2..],
            [(1200, 1000)],
            "the 200 bytes at 2,200 wait"
        );
        ex.at(2).conn.write(1200, false);
        ex.send();
        assert_eq!(
            wire(&ex)[3..],
            [(2200, 1000)],
            "the 400 bytes at 3,200 wait"
        );
        // The ACK of the first short segment (on p1, data-ACK 1,200) releases the rest.
        ex.at(20).ack_bytes(1, None, 1200, 64_000);
        ex.send();
        assert_eq!(wire(&ex)[4..], [(3200, 400)]);

        // `TCP_NODELAY`: every write leaves whole at once, a full segment and its rest.
        let mut ex = Exchange::new("rr", 2, 10, 64);
        ex.conn.set_nodelay(true);
        for t in 0..3 {
            ex.at(t).conn.write(1200, false);
            ex.send();
        }
        let lens: Vec<u32> = wire(&ex).iter().map(|w| w.1).collect();
        assert_eq!(lens, [1000, 200, 1000, 200, 1000, 200]);
    }

    #[test]
    fn rr_rwnd_blocked_sends_nothing() {
        let mut ex = Exchange::new("rr", 2, 4, 3);
        ex.at(0).write(8);
        assert_eq!(ex.send(), [(0, 0, New), (1, 1, New), (0, 2, New)]);
        assert_eq!(ex.send(), []);
    }
}
