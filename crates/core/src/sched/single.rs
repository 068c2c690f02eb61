//! `single`: use one path only (Guo et al., MobiCom 2017, §3.2, §7.5 "best single path"). Without an argument the
//! path with the highest configured capacity; `single:NAME` names it.

use crate::meta::send::SegNo;
use crate::packet::PathId;
use crate::sched::{Assignment, ReinjectChoice, SchedCtx, Scheduler};

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

    /// Single-path TCP has no connection level to reinject at: its subflow repairs its own
    /// losses.
    fn reinject_path(&mut self, _ctx: &mut SchedCtx<'_>, _seg: SegNo) -> ReinjectChoice {
        ReinjectChoice::Drop
    }

    fn single_path(&self) -> bool {
        true
    }

    fn only_path(&self) -> Option<PathId> {
        Some(self.path)
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::minrtt::exchange::Exchange;
    use crate::sender::TxKind::New;

    #[test]
    fn single_named_path_carries_everything() {
        let mut ex = Exchange::new("single:p1", 2, 4, 64);
        ex.at(0).write(4);
        assert_eq!(
            ex.send(),
            [(1, 0, New), (1, 1, New), (1, 2, New), (1, 3, New)]
        );
    }

    #[test]
    fn single_full_window_leaves_other_paths_idle() {
        let mut ex = Exchange::new("single:p1", 2, 2, 64);
        ex.at(0).write(4);
        assert_eq!(ex.send(), [(1, 0, New), (1, 1, New)]);
        assert_eq!(ex.send(), []);
    }

    #[test]
    fn single_without_name_takes_the_highest_capacity() {
        let mut ex = Exchange::with_caps("single", &[5e6, 20e6, 10e6], 2, 64);
        ex.at(0).write(2);
        assert_eq!(ex.send(), [(1, 0, New), (1, 1, New)]);
    }
}
