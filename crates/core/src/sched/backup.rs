//! `backup`: MPTCP's backup flag (RFC 8684 §3.3.8, the `B` bit of MP_JOIN / MP_PRIO; Linux
//! MPTCP v0.9x `mptcp_sched.c`, where backup subflows are chosen only when no non-backup
//! subflow is available).
//!
//! MinRTT over the non-backup ("primary") subflows. A backup subflow carries data only while
//! every primary is unavailable; a primary is unavailable from its retransmission timeout until
//! the data outstanding at the timeout is acknowledged (the RTO loss state, Linux
//! `TCP_CA_Loss`, which `mptcp_is_available` refuses as well). While no primary is available,
//! the data the primaries hold unacknowledged is resent on the backup first (Linux reinjects a
//! subflow's queue on its RTO, `mptcp_reinject_data`), then new data follows. Failover thus
//! takes one RTO of the primary, the time TCP itself needs to declare the path failed.
//!
//! Which paths are backups: `backup:NAME[,NAME...]`, or `backup` with paths marked
//! `backup = true` in the scenario (the simulator turns those into the list).

use crate::packet::PathId;
use crate::sched::common::{minrtt_with_space, Stuck};
use crate::sched::{Assignment, SchedCtx, Scheduler};
use crate::subflow::sender::SubflowState;

/// `backup` alone means "backup on the marked paths" (a scenario's `backup = true`, the
/// proxy's `--path NAME=...,backup`): `backup:NAME[,NAME]` when any path is marked. Any other
/// name, or `backup` with no mark, is returned as it is, for [`crate::sched::build`] to judge.
pub fn with_marked_paths<'a>(sched: &str, marked: impl IntoIterator<Item = &'a str>) -> String {
    let marked: Vec<&str> = marked.into_iter().collect();
    if sched == "backup" && !marked.is_empty() {
        format!("backup:{}", marked.join(","))
    } else {
        sched.to_string()
    }
}

#[derive(Debug)]
pub struct Backup {
    backup: Vec<bool>,
    /// While every primary is down: what each primary held when the failover began, resent
    /// once on the backup path.
    stuck: Option<Vec<Stuck>>,
}

impl Backup {
    /// `backup[p]` marks path `p` as a backup path.
    pub fn new(backup: Vec<bool>) -> Self {
        Backup {
            backup,
            stuck: None,
        }
    }

    /// v0.9x `mptcp_is_available`: the subflow's handshake has completed
    /// (`mptcp_sk_can_send`, and not `pre_established`) and it is not in RTO loss. Until a
    /// primary has joined, the backup carries the data (as Linux 6.18 does: 101 KB of 1 MiB
    /// on a backup initial subflow before the other path's MP_JOIN completed, on the
    /// emulated DEMS WiFi/LTE profile).
    fn available(ctx: &SchedCtx<'_>, p: PathId) -> bool {
        let s = ctx.subflow(p);
        s.is_established() && s.state() != SubflowState::Loss
    }
}

impl Scheduler for Backup {
    fn name(&self) -> &'static str {
        "backup"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        let n = ctx.npaths() as PathId;
        let primary_up = (0..n).any(|p| !self.backup[p as usize] && Self::available(ctx, p));
        if primary_up {
            self.stuck = None;
        }
        let path = if primary_up {
            minrtt_with_space(ctx, |p| !self.backup[p as usize] && Self::available(ctx, p))?
        } else {
            let stuck = self.stuck.get_or_insert_with(|| {
                (0..n)
                    .map(|p| match self.backup[p as usize] {
                        true => Stuck::default(),
                        false => Stuck::capture(ctx, p),
                    })
                    .collect()
            });
            let b = minrtt_with_space(ctx, |p| self.backup[p as usize] && Self::available(ctx, p))?;
            for s in stuck.iter_mut() {
                if let Some(seg) = s.take(ctx, b) {
                    return Some(Assignment { path: b, seg });
                }
            }
            b
        };
        let seg = ctx.meta_mut().next_unsent()?;
        ctx.may_send(seg).then_some(Assignment { path, seg })
    }
}

#[cfg(test)]
mod tests {
    use crate::packet::PathId;
    use crate::sched::minrtt::exchange::{Exchange, MSS};
    use crate::sender::TxKind::{self, New, Reinject};

    #[test]
    fn primary_up_backup_idle() {
        // p1 is the backup; p0's window is full after 4 segments and p1 stays idle.
        let mut ex = Exchange::new("backup:p1", 2, 4, 1000);
        ex.at(0).write(20);
        assert_eq!(
            ex.send(),
            [(0, 0, New), (0, 1, New), (0, 2, New), (0, 3, New)]
        );
    }

    /// What p0 carried before it failed, resent on the backup p1.
    const P0_RESENT: [(PathId, u64, TxKind); 4] = [
        (1, 0, Reinject),
        (1, 1, Reinject),
        (1, 2, Reinject),
        (1, 3, Reinject),
    ];

    /// The application writes `segs` segments; p0 takes its window of 4 and is never
    /// acknowledged: its tail-loss probe resends its last segment first, its RTO follows.
    /// Returns what is sent then, on both paths.
    fn primary_fails(ex: &mut Exchange, segs: u64) -> Vec<(PathId, u64, TxKind)> {
        ex.at(0).write(segs);
        ex.send();
        ex.fire_loss_probe().fire_rto();
        ex.send()
    }

    #[test]
    fn primary_rto_backup_resends_its_data_then_new_data() {
        let mut ex = Exchange::new("backup:p1", 2, 4, 1000);
        let sent = primary_fails(&mut ex, 20);
        let on_backup: Vec<_> = sent.iter().filter(|s| s.0 == 1).copied().collect();
        assert_eq!(
            on_backup, P0_RESENT,
            "p0's outstanding data first: {sent:?}"
        );
    }

    /// The receiver acknowledges everything `path` carried (the data up to `data_ack_segs`)
    /// at `ms`: a loss state there ends.
    fn acked(ex: &mut Exchange, path: u8, ms: u64, data_ack_segs: u64) {
        let (end, ts) = ex
            .wire
            .iter()
            .filter(|(d, _)| d.path == path)
            .fold((0, 0), |(e, t), (d, _)| (e.max(d.end()), t.max(d.ts_val)));
        let ack = crate::packet::Ack {
            path,
            ack: end,
            sack: Default::default(),
            nsack: 0,
            data_ack: data_ack_segs * MSS,
            rwnd: 1000 * MSS,
            ts_ecr: ts,
            ts_val: 0,
            owd_echo: None,
        };
        ex.at(ms);
        let now = ex.now;
        ex.conn.handle_input(now, &ack);
    }

    #[test]
    fn second_outage_resends_what_the_primary_carried_since_the_first() {
        let mut ex = Exchange::new("backup:p1", 2, 4, 1000);
        let first: Vec<_> = primary_fails(&mut ex, 40)
            .into_iter()
            .filter(|s| s.0 == 1)
            .collect();
        assert_eq!(first[..4], P0_RESENT);
        let resent_upto = first.iter().map(|s| s.1).max().unwrap() + 1;
        // Both paths deliver (everything so far acknowledged): p0 carries new data again.
        acked(&mut ex, 1, 2_000, resent_upto);
        acked(&mut ex, 0, 2_000, resent_upto);
        let again: Vec<_> = ex
            .send()
            .into_iter()
            .filter(|s| s.0 == 0)
            .map(|s| s.1)
            .collect();
        assert!(!again.is_empty());
        // p0 fails again: its probe, then its RTO; the backup resends what p0 carried since.
        let t = ex.conn.poll_timeout().expect("a probe is armed");
        ex.now = t;
        ex.conn.handle_timeout(t);
        ex.send();
        ex.fire_rto();
        let second: Vec<_> = ex
            .send()
            .into_iter()
            .filter(|s| s.0 == 1)
            .map(|s| s.1)
            .collect();
        // As much as the backup's window takes, oldest first.
        let k = second.len().min(again.len());
        assert!(k > 0, "nothing resent: {second:?}");
        assert_eq!(second[..k], again[..k], "p0's outstanding data first");
    }

    #[test]
    fn primary_recovered_backup_idle_again() {
        let mut ex = Exchange::new("backup:p1", 2, 4, 1000);
        ex.at(0).write(20);
        ex.send();
        ex.fire_loss_probe();
        // p0's retransmission arrives and the receiver acknowledges everything p0 carried: the
        // loss state ends.
        acked(&mut ex, 0, 1_050, 4);
        let sent = ex.send();
        assert!(!sent.is_empty());
        assert!(sent.iter().all(|s| s.0 == 0), "{sent:?}");
    }
}
