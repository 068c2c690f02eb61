//! `single`: use one path only (seed 000 §3.2, §7.5 "best single path"). Without an argument the
//! path with the highest configured capacity; `single:NAME` names it.

use crate::packet::PathId;
use crate::sched::{Assignment, SchedCtx, Scheduler};

#[derive(Debug)]
pub struct Single {
    path: PathId,
}

impl Single {
    pub fn new(path: PathId) -> Self {
        Single { path }
    }
}

impl Scheduler for Single {
    fn name(&self) -> &'static str {
        "single"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        if !ctx.has_space(self.path) {
            return None;
        }
        let seg = ctx.meta_mut().next_unsent()?;
        ctx.may_send(seg).then_some(Assignment {
            path: self.path,
            seg,
        })
    }
}
