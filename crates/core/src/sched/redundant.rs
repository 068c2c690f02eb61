//! `redundant`: every segment on every subflow (ReMP, Frömmgen et al.; Linux MPTCP
//! `mptcp_redundant.c`; seed 000 §3.1 and §7.5). Each subflow keeps its own cursor through the
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
        for p in ctx.by_srtt() {
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
