//! `backup`: MPTCP's backup flag (RFC 8684 §3.3.8, the `B` bit of MP_JOIN / MP_PRIO; Linux
//! MPTCP v0.9x `mptcp_sched.c`, where backup subflows are chosen only when no non-backup
//! subflow is available).
//!
//! MinRTT over the non-backup ("primary") subflows. A backup subflow carries data only while
//! every primary is unavailable. While no primary is available, the data the primaries hold
//! unacknowledged is resent on the backup first (Linux v0.9x reinjects a subflow's queue when
//! it fails, `mptcp_reinject_data`), then new data follows.
//!
//! When a primary counts as unavailable (`detect=`):
//! - `detect=probe` (the default): from the moment it has gone one probe timeout without an
//!   ACK while data is outstanding ([`SubflowView::silent`]; PTO = 2·sRTT + 2 ms, Linux
//!   `tcp_schedule_loss_probe`, RFC 8985 §7.2) until its next ACK, and in the RTO loss state.
//!   This is the "potentially failed" state of SCTP's quick failover (RFC 7829 §4) entered at
//!   the first sign TCP itself acts on, the tail loss probe's timer, rather than after a
//!   retransmission timeout. It fails over within one RTO of an outage: the first data on the
//!   backup comes one PTO after the primary's last ACK, where Linux waits for the probe *and*
//!   the RTO restarted from it (`tcp_send_loss_probe` re-arms it from now). The price is a
//!   spurious failover when a primary's ACKs pause for 2·sRTT without an outage: the backup
//!   carries (and resends) data until the primary's next ACK.
//! - `detect=rto`: v0.9x's rule, from the retransmission timeout until the data outstanding
//!   at the timeout is acknowledged (the RTO loss state, `TCP_CA_Loss`, which
//!   `mptcp_is_temp_unavailable` refuses; `tp->pf`, set by `mptcp_reinject_data` on the
//!   subflow's RTO). Failover then takes the tail loss probe's timeout plus one RTO, as the
//!   kernels do.
//!
//! Which paths are backups: `backup:NAME[,NAME...]`, or `backup` with paths marked
//! `backup = true` in the scenario (the simulator turns those into the list); options go in
//! the same list (`backup:lte,detect=rto`, or `backup:detect=rto` with marked paths).

use crate::packet::PathId;
use crate::sched::common::{minrtt_with_space, Stuck};
use crate::sched::{Assignment, SchedCtx, Scheduler, SubflowView};

/// `backup` alone means "backup on the marked paths" (a scenario's `backup = true`, the
/// proxy's `--path NAME=...,backup`): `backup:NAME[,NAME]` when any path is marked. Any other
/// name, or `backup` with no mark, is returned as it is, for [`crate::sched::build`] to judge.
pub fn with_marked_paths<'a>(sched: &str, marked: impl IntoIterator<Item = &'a str>) -> String {
    let marked: Vec<&str> = marked.into_iter().collect();
    let options_only = match sched.split_once(':') {
        None => sched == "backup",
        Some((base, arg)) => base == "backup" && arg.split(',').all(|a| a.contains('=')),
    };
    if options_only && !marked.is_empty() {
        let options = sched.split_once(':').map(|(_, a)| a);
        let list: Vec<&str> = marked.into_iter().chain(options).collect();
        format!("backup:{}", list.join(","))
    } else {
        sched.to_string()
    }
}

/// When a primary counts as failed (the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detect {
    /// One probe timeout without an ACK ([`SubflowView::silent`]), or RTO loss.
    Probe,
    /// RTO loss only (Linux v0.9x).
    Rto,
}

impl Detect {
    /// `detect=VALUE`'s value.
    pub fn parse(v: &str) -> Option<Detect> {
        match v {
            "probe" => Some(Detect::Probe),
            "rto" => Some(Detect::Rto),
            _ => None,
        }
    }
}

#[derive(Debug)]
pub struct Backup {
    backup: Vec<bool>,
    detect: Detect,
    /// While every primary is down: what each primary held when the failover began, resent
    /// once on the backup path.
    stuck: Option<Vec<Stuck>>,
}

impl Backup {
    /// `backup[p]` marks path `p` as a backup path.
    pub fn new(backup: Vec<bool>, detect: Detect) -> Self {
        Backup {
            backup,
            detect,
            stuck: None,
        }
    }

    /// v0.9x `mptcp_is_available`: the subflow's handshake has completed
    /// (`mptcp_sk_can_send`, and not `pre_established`) and it is not in RTO loss; with
    /// `detect=probe` also not silent. Until a primary has joined, the backup carries the data
    /// (as Linux 6.18 does: 101 KB of 1 MiB on a backup initial subflow before the other
    /// path's MP_JOIN completed, on the emulated DEMS WiFi/LTE profile).
    fn available(detect: Detect, ctx: &SchedCtx<'_>, p: PathId) -> bool {
        // Read directly, not through the view's dynamic calls: asked of every subflow that
        // would lead, on every decision.
        ctx.read_subflow(p, |s: &dyn SubflowView| {
            s.is_established() && !s.in_loss() && !(detect == Detect::Probe && s.silent())
        })
    }
}

impl Scheduler for Backup {
    fn name(&self) -> &'static str {
        "backup"
    }

    fn watches_silence(&self) -> bool {
        self.detect == Detect::Probe
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        let n = ctx.npaths() as PathId;
        let detect = self.detect;
        let primary_up =
            (0..n).any(|p| !self.backup[p as usize] && Self::available(detect, ctx, p));
        if primary_up {
            self.stuck = None;
        }
        let path = if primary_up {
            minrtt_with_space(ctx, |p| {
                !self.backup[p as usize] && Self::available(detect, ctx, p)
            })?
        } else {
            let stuck = self.stuck.get_or_insert_with(|| {
                (0..n)
                    .map(|p| match self.backup[p as usize] {
                        true => Stuck::default(),
                        false => Stuck::capture(ctx, p),
                    })
                    .collect()
            });
            let b = minrtt_with_space(ctx, |p| {
                self.backup[p as usize] && Self::available(detect, ctx, p)
            })?;
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
        let mut ex = Exchange::new("backup:p1,detect=rto", 2, 4, 1000);
        let sent = primary_fails(&mut ex, 20);
        let on_backup: Vec<_> = sent.iter().filter(|s| s.0 == 1).copied().collect();
        assert_eq!(
            on_backup, P0_RESENT,
            "p0's outstanding data first: {sent:?}"
        );
    }

    /// What is sent at p0's first probe timeout (1 s: no RTT sample yet) when it is never
    /// acknowledged.
    fn at_probe_timeout(sched: &str) -> Vec<(PathId, u64, TxKind)> {
        let mut ex = Exchange::new(sched, 2, 4, 1000);
        ex.at(0).write(20);
        ex.send();
        let t = ex.conn.poll_timeout().expect("a probe is armed");
        assert_eq!(t, ex.at(1_000).now);
        ex.conn.handle_timeout(t);
        ex.send()
    }

    #[test]
    fn silent_primary_fails_over_at_its_probe_timeout_not_its_rto() {
        let on_backup = |sched| -> Vec<_> {
            at_probe_timeout(sched)
                .into_iter()
                .filter(|s| s.0 == 1)
                .collect()
        };
        assert_eq!(on_backup("backup:p1"), P0_RESENT, "detect=probe (default)");
        assert_eq!(on_backup("backup:p1,detect=probe"), P0_RESENT);
        assert_eq!(
            on_backup("backup:p1,detect=rto"),
            [],
            "v0.9x waits for the RTO"
        );
    }

    #[test]
    fn options_are_checked() {
        let names = ["p0".to_string(), "p1".to_string()];
        let err = |n| {
            crate::sched::build(n, &names, &[1.0, 1.0])
                .unwrap_err()
                .to_string()
        };
        assert!(err("backup:p1,detect=fast").contains("detect=fast"));
        assert!(err("backup:p1,wait=1").contains("wait=1"));
        assert!(err("backup:detect=rto").contains("name the backup paths"));
        assert_eq!(
            super::with_marked_paths("backup:detect=rto", ["p1"]),
            "backup:p1,detect=rto"
        );
        assert_eq!(super::with_marked_paths("backup", ["p1"]), "backup:p1");
        assert_eq!(super::with_marked_paths("backup:p0", ["p1"]), "backup:p0");
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
        let mut ex = Exchange::new("backup:p1,detect=rto", 2, 4, 1000);
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
        // Silent (detect=probe) or not (detect=rto) after its probe, p0 is heard from again:
        // its retransmission arrives and the receiver acknowledges everything p0 carried
        // before its RTO, and new data goes on p0 again.
        for sched in ["backup:p1", "backup:p1,detect=rto"] {
            let mut ex = Exchange::new(sched, 2, 4, 1000);
            ex.at(0).write(20);
            ex.send();
            ex.fire_loss_probe();
            acked(&mut ex, 0, 1_050, 4);
            let sent = ex.send();
            assert!(
                sent.iter().any(|s| s.0 == 0 && s.2 == New),
                "{sched}: {sent:?}"
            );
            assert!(sent.iter().all(|s| s.0 == 0), "{sched}: {sent:?}");
        }
    }
}
