//! `lte-handover`: the handover-aware scheduler sketched in Cech, TUM 2020, §5 and Fig. 8,
//! finished here.
//!
//! Handovers (Li et al., SIGCOMM 2018: throughput /10, RTT ×3, for up to seconds) stall one
//! subflow while the other is fine. Cech's two goals:
//!
//! 1. Detect the handover early and stop pushing new data to the subflow; resend what it holds
//!    in flight on another subflow so the connection-level window is not blocked by it.
//! 2. After the handover, refresh the subflow's RTT estimate with packets that are sent on
//!    another subflow as well, so a stale estimate neither blocks data nor misleads scheduling.
//!
//! Each subflow is marked *disabled* and/or *stale* (Fig. 8):
//!
//! * **enabled** — MinRTT among enabled subflows (the Linux default's choice of subflow).
//! * **enabled → disabled**: detection by inter-send vs inter-ACK time (§5): once the subflow
//!   is in a steady state (out of slow start: Cech's "once TCP reaches a steady state", where
//!   the sender is ACK-clocked; in slow start ACKs come in trains a round trip apart), while
//!   data is in flight, the time since the subflow's last ACK has grown beyond `GAP_FACTOR` = 8
//!   smoothed inter-send gaps *and* beyond the subflow's minimum RTT (a whole base round trip
//!   without an ACK). On an ACK-clocked subflow ACKs come about as often as sends (twice as far
//!   apart with delayed ACKs); a handover stretches the ACK gap by the rate drop and the RTT
//!   step. The floor is the minimum RTT, not the RTO's `srtt + 4·rttvar`: behind a full
//!   buffer (300 packets in Cech's setup) sRTT carries the queue, and a silence that long never
//!   comes while the path still delivers at a tenth of its rate. Disabled: no new data; every
//!   segment it carried that is not yet received is resent once on the fastest enabled subflow
//!   with window space.
//! * **disabled → disabled + stale**: the first ACK after detection shows the subflow delivers
//!   again, but its RTT estimate dates from the handover; or nothing of it is in flight any
//!   more (all acknowledged or resent), so no ACK will come.
//! * **stale**: one probe at a time — a copy of a segment in flight on another subflow (never
//!   data only this subflow would carry) — so its RTT samples are fresh. Only a sample of the
//!   probe (or of data sent after it) counts: the data queued before it still carries the
//!   handover's backlog.
//! * **stale → enabled**: a probe's RTT sample within `RECOVERED_RTT` = 1.5 × the minimum RTT
//!   seen before the handover, or `ACCEPT_AFTER` = 8 probe samples (the path changed for good:
//!   its new RTT is accepted as the baseline).
//!
//! The constants are ours (Cech's implementation was not finished or published); each is
//! chosen as described above and tested in `tests`. If every subflow is disabled, MinRTT over
//! all of them decides (never a stall of the whole connection).

use crate::meta::send::SegNo;
use crate::packet::PathId;
use crate::pathmask;
use crate::sched::common::{fastest_where, Stuck};
use crate::sched::{Assignment, SchedCtx, SchedEvent, Scheduler};
use crate::time::{Duration, Time};

const GAP_FACTOR: f64 = 8.0;
const RECOVERED_RTT: f64 = 1.5;
const ACCEPT_AFTER: u32 = 8;
/// EWMA gain of the inter-send gap (RFC 6298's α).
const GAIN: f64 = 0.125;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mark {
    #[default]
    Enabled,
    Disabled,
    /// Disabled and stale: probing for a fresh RTT.
    Stale,
}

#[derive(Clone, Debug)]
struct PathState {
    mark: Mark,
    last_ack: Option<Time>,
    last_send: Option<Time>,
    /// When data was last sent with nothing in flight before (silence is counted from here).
    busy_since: Option<Time>,
    /// Smoothed inter-send gap, seconds.
    send_gap: Option<f64>,
    /// The subflow's minimum RTT as of its last ACK (it changes only with an RTT sample, so
    /// only on an ACK; a driver that reports no ACK events, as the proxy, leaves it unknown,
    /// and then only the gap bounds `quiet_until`).
    min_rtt: Option<Duration>,
    /// Until this instant (ns) the silence cannot exceed `GAP_FACTOR` inter-send gaps nor the
    /// minimum RTT, from `last_ack`, `busy_since`, `send_gap` and `min_rtt`
    /// ([`PathState::rearm`]); `u64::MAX` while the silence or the gap is unknown.
    quiet_until: u64,
    /// Minimum RTT before the handover (the recovery baseline).
    baseline: Option<Duration>,
    /// What it held when it was disabled, not yet resent (Goal 1).
    stuck: Stuck,
    probe_out: bool,
    /// When the outstanding probe left: only a sample of it (or of later data) counts, not
    /// one of data queued before it.
    probe_sent: Option<Time>,
    probes: u32,
}

impl Default for PathState {
    fn default() -> Self {
        PathState {
            mark: Mark::Enabled,
            last_ack: None,
            last_send: None,
            busy_since: None,
            send_gap: None,
            min_rtt: None,
            quiet_until: u64::MAX,
            baseline: None,
            stuck: Stuck::default(),
            probe_out: false,
            probe_sent: None,
            probes: 0,
        }
    }
}

impl PathState {
    /// Where silence is counted from: the later of the last ACK and the start of the busy
    /// period.
    fn since(&self) -> Option<Time> {
        match (self.last_ack, self.busy_since) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Silence (s) since [`PathState::since`], as the detection measures it.
    fn silence(&self, now: Time) -> Option<f64> {
        self.since()
            .map(|since| now.0.saturating_sub(since.0) as f64 * 1e-9)
    }

    /// Sets `quiet_until` after `last_ack`, `busy_since`, `send_gap` or `min_rtt` changed:
    /// the detection then skips the subflow with one integer comparison per decision (issue
    /// "Speed at scale"; before, the silence was worked out in floating point for every
    /// subflow on every decision). The gap's bound is below the exact one by a margin of 1e-9
    /// of it, far more than the rounding of `ns as f64 * 1e-9` (a few 2^-53); the minimum
    /// RTT's is exact, both sides being rounded by the same monotone conversion. While
    /// `now ≤ quiet_until` the silence is at most `GAP_FACTOR · gap` or at most the minimum
    /// RTT; past it the exact tests decide.
    fn rearm(&mut self) {
        self.quiet_until = match (self.since(), self.send_gap) {
            (Some(since), Some(gap)) => {
                let quiet_ns = (GAP_FACTOR * gap * 1e9 * (1.0 - 1e-9)).max(0.0) as u64;
                let base_ns = self.min_rtt.map_or(0, |b| b.0);
                since.0.saturating_add(quiet_ns.max(base_ns))
            }
            _ => u64::MAX,
        };
    }
}

#[derive(Debug)]
pub struct LteHandover {
    paths: Vec<PathState>,
    /// The subflows marked `Disabled` and those marked `Stale` (bit p: subflow p), kept with
    /// the marks ([`LteHandover::set_mark`]): the passes over them visit only those (issue
    /// "Speed at scale").
    disabled: u64,
    stale: u64,
    /// Times a subflow was disabled (for tests and traces).
    detections: u64,
}

impl LteHandover {
    pub fn new(npaths: usize) -> Self {
        LteHandover {
            paths: vec![PathState::default(); npaths],
            disabled: 0,
            stale: 0,
            detections: 0,
        }
    }

    fn set_mark(&mut self, p: usize, mark: Mark) {
        self.paths[p].mark = mark;
        let bit = 1u64 << p;
        self.disabled &= !bit;
        self.stale &= !bit;
        match mark {
            Mark::Enabled => {}
            Mark::Disabled => self.disabled |= bit,
            Mark::Stale => self.stale |= bit,
        }
    }

    /// The subflows marked `Enabled`.
    fn enabled(&self) -> u64 {
        let all = (!0u64)
            .checked_shl(self.paths.len() as u32)
            .map_or(!0, |m| !m);
        let enabled = all & !(self.disabled | self.stale);
        debug_assert!(
            self.paths.iter().enumerate().all(|(p, st)| {
                let bit = 1u64 << p;
                (st.mark == Mark::Enabled) == (enabled & bit != 0)
                    && (st.mark == Mark::Disabled) == (self.disabled & bit != 0)
                    && (st.mark == Mark::Stale) == (self.stale & bit != 0)
            }),
            "marks and masks disagree"
        );
        enabled
    }

    pub fn mark(&self, p: PathId) -> Mark {
        self.paths[p as usize].mark
    }

    pub fn detections(&self) -> u64 {
        self.detections
    }

    fn detect(&mut self, ctx: &SchedCtx<'_>) {
        // Each subflow is judged by its own state alone, so the disabled ones and the enabled
        // ones (both as they were on entry) may be visited apart.
        let enabled = self.enabled();
        for p in pathmask::bits(self.disabled) {
            if ctx.subflow(p as PathId).in_flight() == 0 {
                // Everything it held is acknowledged or resent and no ACK will come: probe.
                self.set_mark(p, Mark::Stale);
            }
        }
        for p in pathmask::bits(enabled) {
            let sf = ctx.subflow(p as PathId);
            let st = &mut self.paths[p];
            // The silence is judged from this scheduler's own records first: on most
            // decisions it is short, and the subflow's state need not be read (issue "Speed
            // at scale": this pass runs over every subflow on every decision).
            if ctx.now.0 <= st.quiet_until {
                debug_assert!(
                    st.silence(ctx.now)
                        .zip(st.send_gap)
                        .is_none_or(|(silence, gap)| {
                            silence <= GAP_FACTOR * gap
                                || sf.min_rtt().is_none_or(|b| silence <= b.as_secs_f64())
                        }),
                    "quiet_until past the silence threshold"
                );
                continue;
            }
            let (Some(gap), Some(silence)) = (st.send_gap, st.silence(ctx.now)) else {
                continue;
            };
            if silence <= GAP_FACTOR * gap {
                continue;
            }
            // A whole base round trip without an ACK (tested before the congestion state,
            // which costs more to read and rarely decides).
            let Some(base) = sf.min_rtt() else {
                continue;
            };
            if silence <= base.as_secs_f64() {
                continue;
            }
            // In slow start ACKs come in trains a round trip apart: nothing to judge by yet.
            if sf.in_flight() != 0 && sf.cwnd() >= sf.ssthresh() {
                st.baseline = Some(base);
                st.stuck = Stuck::capture(ctx, p as PathId);
                st.probes = 0;
                st.probe_out = false;
                self.set_mark(p, Mark::Disabled);
                self.detections += 1;
            }
        }
    }

    fn on_send(&mut self, now: Time, p: PathId, was_idle: bool) {
        let st = &mut self.paths[p as usize];
        if was_idle {
            st.busy_since = Some(now);
        } else if let Some(t) = st.last_send {
            let g = now.0.saturating_sub(t.0) as f64 * 1e-9;
            st.send_gap = Some(st.send_gap.map_or(g, |s| (1.0 - GAIN) * s + GAIN * g));
        }
        st.last_send = Some(now);
        st.rearm();
    }

    fn assign(&mut self, ctx: &SchedCtx<'_>, path: PathId, seg: SegNo) -> Assignment {
        let idle = ctx.subflow(path).in_flight() == 0;
        self.on_send(ctx.now, path, idle);
        Assignment { path, seg }
    }

    /// A copy of a segment in flight on another subflow, for a stale subflow's RTT probe.
    fn probe_segment(ctx: &SchedCtx<'_>, p: PathId) -> Option<SegNo> {
        let meta = ctx.meta();
        let end = meta.end_seg().min(meta.base_seg() + 4096);
        (meta.base_seg()..end).find(|&n| {
            meta.seg(n)
                .is_some_and(|r| r.sent() && !r.received && !r.sent_on(p))
                && ctx.may_send(n)
        })
    }
}

impl Scheduler for LteHandover {
    fn name(&self) -> &'static str {
        "lte-handover"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        self.detect(ctx);
        let enabled = self.enabled();
        let any_enabled = enabled != 0;
        let usable = |p: PathId| !any_enabled || enabled >> p & 1 == 1;
        let best = fastest_where(ctx, |p| usable(p) && ctx.has_space(p));
        // Goal 1: data stuck on a disabled subflow goes out again on the best enabled one.
        if let (Some(q), true) = (best, any_enabled) {
            for p in pathmask::bits(!enabled & (self.disabled | self.stale)) {
                if let Some(seg) = self.paths[p].stuck.take(ctx, q) {
                    return Some(self.assign(ctx, q, seg));
                }
            }
        }
        // Goal 2: a stale subflow probes with a copy of data carried elsewhere.
        for p in pathmask::bits(self.stale) {
            let p = p as PathId;
            let st = &self.paths[p as usize];
            if !st.probe_out && ctx.has_space(p) {
                if let Some(seg) = Self::probe_segment(ctx, p) {
                    self.paths[p as usize].probe_out = true;
                    self.paths[p as usize].probe_sent = Some(ctx.now);
                    return Some(self.assign(ctx, p, seg));
                }
            }
        }
        let path = best?;
        let seg = ctx.meta_mut().next_unsent()?;
        if !ctx.may_send(seg) {
            return None;
        }
        Some(self.assign(ctx, path, seg))
    }

    fn on_event(&mut self, ctx: &mut SchedCtx<'_>, ev: &SchedEvent) {
        let SchedEvent::Ack { path, rtt, .. } = *ev else {
            return;
        };
        let st = &mut self.paths[path as usize];
        st.last_ack = Some(ctx.now);
        st.min_rtt = ctx.subflow(path).min_rtt();
        st.rearm();
        match st.mark {
            Mark::Enabled => {}
            Mark::Disabled => self.set_mark(path as usize, Mark::Stale),
            Mark::Stale => {
                let Some(sample) = rtt else {
                    return;
                };
                // The sample is of a segment sent at now − rtt: the probe's, or one queued
                // before it (whose RTT still reflects the handover's backlog).
                let sent_at = ctx.now.0.saturating_sub(sample.0);
                if !st.probe_out || st.probe_sent.is_some_and(|t| sent_at < t.0) {
                    return;
                }
                st.probe_out = false;
                st.probes += 1;
                let recovered = st
                    .baseline
                    .is_none_or(|b| sample.as_secs_f64() <= RECOVERED_RTT * b.as_secs_f64());
                if recovered || st.probes >= ACCEPT_AFTER {
                    st.stuck = Stuck::default();
                    st.send_gap = None;
                    st.busy_since = None;
                    st.rearm();
                    self.set_mark(path as usize, Mark::Enabled);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::minrtt::exchange::Exchange;
    use crate::sender::TxKind::{New, Reinject};

    /// Two subflows with 20 ms (p0) and 40 ms (p1) RTT, in congestion avoidance (detection
    /// waits for the ACK clock of a steady state), both warmed up by two rounds, busy with a
    /// window each at t = 80 ms.
    fn busy() -> Exchange {
        let mut ex = Exchange::new("lte-handover", 2, 8, 100_000);
        ex.conn.leave_slow_start(ex.now);
        ex.at(0).write(1000);
        ex.send();
        ex.at(20).ack(0, 0, 100_000);
        ex.send();
        ex.at(40).ack(0, 4, 100_000).ack(1, 4, 100_000);
        ex.send();
        ex.at(60).ack(0, 8, 100_000);
        ex.send();
        ex.at(80).ack(1, 8, 100_000);
        ex.send();
        ex
    }

    #[test]
    fn silent_subflow_in_flight_is_disabled_and_its_data_resent() {
        let mut ex = busy();
        let on_p1: Vec<u64> = ex
            .wire
            .iter()
            .filter(|(d, _)| d.path == 1 && d.ts_val >= ex.now.0)
            .map(|(d, _)| d.dsn / 1000)
            .collect();
        assert!(!on_p1.is_empty());
        // p0 keeps being acknowledged every 20 ms; p1 (40 ms) goes silent for 300 ms.
        let mut resent = Vec::new();
        for t in (100..=380).step_by(20) {
            let acked = ex.conn.meta().data_ack() / 1000;
            ex.at(t).ack(0, acked, 100_000);
            for (p, seg, kind) in ex.send() {
                if p == 0 && kind == Reinject {
                    resent.push(seg);
                }
                assert!(p == 0 || kind != New, "no new data on the silent subflow");
            }
        }
        for seg in &on_p1 {
            assert!(
                resent.contains(seg),
                "segment {seg} of p1 resent on p0: {resent:?}"
            );
        }
    }

    #[test]
    fn silence_in_slow_start_is_not_a_handover() {
        // The same silence of p1 before either subflow left slow start: ACKs come in trains a
        // round trip apart there, so there is no steady inter-send time to compare with.
        let mut ex = Exchange::new("lte-handover", 2, 4, 100_000);
        ex.at(0).write(1000);
        ex.send();
        for t in (20..=380).step_by(20) {
            let acked = ex.conn.meta().data_ack() / 1000;
            ex.at(t).ack(0, acked, 100_000);
            let sent = ex.send();
            assert!(
                sent.iter().all(|s| s.2 == New),
                "nothing resent at {t} ms: {sent:?}"
            );
        }
    }

    /// `busy()`, then p1 silent from 80 to 380 ms while p0 is acknowledged every 20 ms.
    fn p1_disabled() -> Exchange {
        let mut ex = busy();
        for t in (100..=380).step_by(20) {
            let acked = ex.conn.meta().data_ack() / 1000;
            ex.at(t).ack(0, acked, 100_000);
            ex.send();
        }
        ex
    }

    /// p0 is acknowledged at `t` (it stays healthy throughout).
    fn p0_acked(ex: &mut Exchange, t: u64) {
        let acked = ex.conn.meta().data_ack() / 1000;
        ex.at(t).ack(0, acked, 100_000);
    }

    /// `p1_disabled()`, then p1's late ACK at 400 ms: it delivers again, its RTT estimate is
    /// stale. Returns what was sent then.
    fn p1_stale() -> (Exchange, Vec<(u8, u64, crate::sender::TxKind)>) {
        let mut ex = p1_disabled();
        p0_acked(&mut ex, 400);
        let acked = ex.conn.meta().data_ack() / 1000;
        ex.ack(1, acked, 100_000);
        let sent = ex.send();
        (ex, sent)
    }

    #[test]
    fn disabled_subflow_acks_again_probes_with_one_copy() {
        let (_, sent) = p1_stale();
        let on_p1: Vec<_> = sent.into_iter().filter(|s| s.0 == 1).collect();
        assert_eq!(on_p1.len(), 1, "one probe: {on_p1:?}");
        assert_eq!(
            on_p1[0].2, Reinject,
            "the probe copies data carried elsewhere"
        );
    }

    #[test]
    fn stale_subflow_fast_probe_sample_enabled_again() {
        let (mut ex, _) = p1_stale();
        p0_acked(&mut ex, 420);
        ex.send();
        // The probe comes back after 30 ms, within 1.5 x p1's 40 ms baseline.
        let acked = ex.conn.meta().data_ack() / 1000;
        ex.at(430).ack(1, acked, 100_000);
        let sent = ex.send();
        assert!(
            sent.iter().any(|s| s.0 == 1 && s.2 == New),
            "p1 carries new data again: {sent:?}"
        );
    }

    #[test]
    fn stale_subflow_slow_probe_sample_stays_stale() {
        let (mut ex, _) = p1_stale();
        for t in (420..=520).step_by(20) {
            p0_acked(&mut ex, t);
            ex.send();
        }
        // 120 ms: still three times the baseline (the handover goes on).
        let acked = ex.conn.meta().data_ack() / 1000;
        ex.at(520).ack(1, acked, 100_000);
        let sent: Vec<_> = ex.send().into_iter().filter(|s| s.0 == 1).collect();
        assert_eq!(sent.len(), 1, "p1 only probes, once: {sent:?}");
        assert_eq!(sent[0].2, Reinject);
    }
}
