//! `redundant`: every segment on every subflow (ReMP, Frömmgen et al.; Linux MPTCP
//! `mptcp_redundant.c`; Guo et al., MobiCom 2017, §3.1 and §7.5). Each subflow keeps its own cursor through the
//! send buffer and sends every segment it has not carried yet, as fast as its window allows;
//! whichever copy arrives first is delivered and the others are discarded by the receiver. A
//! subflow that falls behind skips segments already received through another (the Linux
//! implementation likewise skips data the data-ACK has passed).

use crate::meta::send::SegNo;
use crate::sched::{Assignment, SchedCtx, Scheduler};

#[derive(Debug)]
pub struct Redundant {
    cursor: Vec<SegNo>,
}

impl Redundant {
    pub fn new(npaths: usize) -> Self {
        Redundant {
            cursor: vec![0; npaths],
        }
    }
}

impl Scheduler for Redundant {
    fn name(&self) -> &'static str {
        "redundant"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        let end = ctx.meta().end_seg();
        for &p in ctx.by_srtt().iter() {
            if !ctx.has_space(p) {
                continue;
            }
            let c = &mut self.cursor[p as usize];
            *c = (*c).max(ctx.meta().base_seg());
            while *c < end {
                let rec = ctx.meta().seg(*c).expect("cursor within buffer");
                if rec.received || rec.sent_on(p) {
                    *c += 1;
                    continue;
                }
                break;
            }
            if *c < end && ctx.may_send(*c) {
                let seg = *c;
                *c += 1;
                return Some(Assignment { path: p, seg });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::minrtt::exchange::{Exchange, MSS};
    use crate::sender::TxKind::{New, Reinject};

    #[test]
    fn redundant_sends_every_segment_on_every_subflow() {
        let mut ex = Exchange::new("redundant", 2, 3, 64);
        ex.at(0).write(3);
        assert_eq!(
            ex.send(),
            [
                (0, 0, New),
                (0, 1, New),
                (0, 2, New),
                (1, 0, Reinject),
                (1, 1, Reinject),
                (1, 2, Reinject)
            ]
        );
        assert_eq!(ex.conn.meta().reinjected_bytes(), 3 * MSS);
    }

    #[test]
    fn redundant_lagging_subflow_skips_what_arrived_elsewhere() {
        let mut ex = Exchange::new("redundant", 2, 2, 64);
        ex.at(0).write(4);
        assert_eq!(
            ex.send(),
            [(0, 0, New), (0, 1, New), (1, 0, Reinject), (1, 1, Reinject)]
        );
        ex.at(10).ack(0, 2, 64);
        assert_eq!(ex.send(), [(0, 2, New), (0, 3, New)]);
        ex.at(20).ack(0, 4, 64);
        assert_eq!(ex.send(), []);
        // p1's window opens only now: everything already arrived through p0.
        ex.at(100).ack(1, 4, 64);
        assert_eq!(ex.send(), []);
    }

    #[test]
    fn redundant_copies_respect_the_peer_window() {
        let mut ex = Exchange::new("redundant", 2, 4, 2);
        ex.at(0).write(4);
        assert_eq!(
            ex.send(),
            [(0, 0, New), (0, 1, New), (1, 0, Reinject), (1, 1, Reinject)]
        );
    }
}
