//! `minrtt`: the default scheduler of Linux MPTCP v0.9x (`mptcp_sched.c`), as described in
//! Cech, TUM 2020, §3.1 and Shi et al., USENIX ATC 2018, §2.3.
//!
//! * Among the subflows with congestion-window space, send the next unsent segment (DSN order)
//!   on the one with the lowest smoothed RTT. Subflows without an RTT sample yet rank last.
//! * When the peer's receive window blocks new data, or nothing is left to send and the
//!   application is blocked on a nearly full send buffer, Linux's `mptcp_rcv_buf_optimization`
//!   (penalizing in the second case only once the buffer is full):
//!   - penalization: the first other subflow (in path order) that carried the segment at the
//!     data-ACK left edge has its congestion window halved if it has a higher smoothed RTT than
//!     the subflow MinRTT picked and is not recovering from a loss; its ssthresh halves too
//!     unless it is in slow start, which a penalty never ends (v0.9x). The picked subflow
//!     penalizes at most once per its own smoothed RTT: the kernel keeps `last_rbuf_opti` in
//!     the picked subflow's scheduler state and compares against that subflow's `srtt_us`, so
//!     a fast subflow may halve a slow one's window every few milliseconds, not once per the
//!     slow one's (possibly queue-inflated) RTT;
//!   - opportunistic retransmission: the picked subflow resends that segment if it has not
//!     carried it and if doing so can help: it is more than 4 times faster (srtt) than every
//!     subflow that carried it, or such a carrier's window is down to 4 segments. Resending the
//!     left edge on a subflow of comparable or higher RTT cannot make it arrive sooner and only
//!     grows that subflow's window, so Linux does not, and neither do we.
//!
//! Variants: `minrtt:nopenalty` keeps opportunistic retransmission without penalization;
//! `minrtt:noor` has neither (plain MinRTT), to show the host-buffer effect of Shi et al., USENIX ATC 2018, Eq. 1.

use crate::packet::{PathId, MAX_PATHS};
use crate::sched::common::fastest_where;
use crate::sched::{Assignment, SchedCtx, Scheduler};
use crate::subflow::sender::SubflowState;
use crate::time::{Duration, Time};

#[derive(Debug)]
pub struct MinRtt {
    opportunistic: bool,
    penalize: bool,
    /// Per subflow, when it last penalized another (`defsched_priv.last_rbuf_opti`).
    last_penalty: [Option<Time>; MAX_PATHS],
}

impl MinRtt {
    pub fn new(penalize: bool) -> Self {
        MinRtt {
            opportunistic: true,
            penalize,
            last_penalty: [None; MAX_PATHS],
        }
    }
    pub fn plain() -> Self {
        MinRtt {
            opportunistic: false,
            penalize: false,
            last_penalty: [None; MAX_PATHS],
        }
    }

    /// `mptcp_rcv_buf_optimization` for subflow `p`, the one MinRTT picked. `penal`: the
    /// caller allows penalization (always when the receive window blocks; when the send buffer
    /// is what blocks, only once it is full, `!sk_stream_memory_free(meta_sk)`).
    fn opportunistic_retransmission(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        p: PathId,
        penal: bool,
    ) -> Option<Assignment> {
        let left = ctx.meta().base_seg();
        let rec = *ctx.meta().seg(left)?;
        if rec.received || !rec.sent() {
            return None;
        }
        // Without an RTT sample there is nothing to compare; p ranks after every sampled one.
        let my_rtt = ctx.subflow(p).srtt()?;
        let carriers = (0..ctx.npaths() as PathId).filter(|&q| q != p && rec.sent_on(q));
        if self.penalize && penal {
            if let Some(q) = carriers.clone().next() {
                self.penalize_slower_carrier(ctx, p, q, my_rtt);
            }
        }
        if rec.sent_on(p) {
            return None;
        }
        let mss = ctx.subflow(p).mss() as u64;
        let helps = carriers.clone().all(|q| {
            let sf = ctx.subflow(q);
            sf.cwnd() <= 4 * mss || sf.srtt().is_some_and(|r| my_rtt.0.saturating_mul(4) < r.0)
        });
        helps.then_some(Assignment { path: p, seg: left })
    }

    /// The penalty half of `mptcp_rcv_buf_optimization`: `q` is the first carrier of the left
    /// edge in subflow order, the only one considered (the kernel's loop breaks there whether
    /// or not it penalized), and `p` penalizes again only once its own sRTT has passed since
    /// its last penalty.
    fn penalize_slower_carrier(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        p: PathId,
        q: PathId,
        my_rtt: Duration,
    ) {
        let now = ctx.now;
        if self.last_penalty[p as usize].is_some_and(|t| now.saturating_since(t) < my_rtt) {
            return;
        }
        let sf = ctx.subflow(q);
        // `icsk_ca_state == TCP_CA_Open`: not in recovery or loss.
        let open = matches!(
            sf.state(),
            SubflowState::SlowStart | SubflowState::CongestionAvoidance
        );
        if open && sf.srtt().is_some_and(|r| my_rtt < r) {
            ctx.penalize(q);
            self.last_penalty[p as usize] = Some(now);
        }
    }
}

impl Scheduler for MinRtt {
    fn name(&self) -> &'static str {
        "minrtt"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        let best = fastest_where(ctx, |p| ctx.has_space(p))?;
        self.next_on(ctx, best)
    }
}

impl MinRtt {
    /// [`Scheduler::next`] once the lowest-sRTT subflow with window space, `best`, is known
    /// (BLEST and ECF find it in the same pass as the fastest subflow).
    #[inline(always)]
    pub(crate) fn next_on(&mut self, ctx: &mut SchedCtx<'_>, best: PathId) -> Option<Assignment> {
        match ctx.meta_mut().next_unsent() {
            Some(n) if ctx.may_send(n) => Some(Assignment { path: best, seg: n }),
            Some(_) if self.opportunistic => self.opportunistic_retransmission(ctx, best, true),
            // Nothing unsent and the application blocked on a send buffer less than a third
            // free (`__mptcp_next_segment`: SOCK_NOSPACE and sk_stream_wspace <
            // sk_stream_min_wspace): the left edge is what holds the buffer.
            None if self.opportunistic && 3 * ctx.meta().free_space() < ctx.meta().capacity() => {
                let full = ctx.meta().free_space() == 0;
                self.opportunistic_retransmission(ctx, best, full)
            }
            _ => None,
        }
    }
}

/// A sender driven by hand for scheduler tests: the test plays the network and the receiver,
/// saying when each subflow's ACK arrives and which data-ACK and window it carries. Segments
/// are `MSS` bytes, so a segment number is its DSN in segments.
#[cfg(test)]
pub(crate) mod exchange {
    use crate::cc::CcKind;
    use crate::packet::{Ack, DataSegment, PathId, SackBlock};
    use crate::sched;
    use crate::sender::{SenderConfig, SenderConnection, TxKind};
    use crate::time::{Duration, Time};

    pub const MSS: u64 = 1000;
    /// The clock starts at 1 s: a timestamp of 0 means "none" on the wire.
    const EPOCH: u64 = 1_000_000_000;

    pub struct Exchange {
        pub conn: SenderConnection,
        pub now: Time,
        /// Every transmission so far, in order.
        pub wire: Vec<(DataSegment, TxKind)>,
    }

    impl Exchange {
        /// `npaths` subflows (named p0, p1, ...) with configured capacities `caps_bps`, Reno,
        /// `init_cwnd` segments each, a peer window of `rwnd_segs` segments.
        pub fn with_caps(sched: &str, caps_bps: &[f64], init_cwnd: u32, rwnd_segs: u64) -> Self {
            Self::with_window(sched, caps_bps, init_cwnd, rwnd_segs * MSS)
        }

        /// As [`Exchange::with_caps`] with the peer's initial window in bytes.
        pub fn with_window(sched: &str, caps_bps: &[f64], init_cwnd: u32, rwnd: u64) -> Self {
            Self::with_backups(sched, caps_bps, init_cwnd, rwnd, &[])
        }

        /// As [`Exchange::with_window`], with `backups` flagged as backup paths (a scenario's
        /// `backup = true`, [`crate::sched::Scheduler::set_backup`]).
        pub fn with_backups(
            sched: &str,
            caps_bps: &[f64],
            init_cwnd: u32,
            rwnd: u64,
            backups: &[PathId],
        ) -> Self {
            let mut ex = Self::autotuned(sched, caps_bps, init_cwnd, rwnd, backups);
            // The fixtures write whole chunks of up to a thousand segments at once.
            ex.conn.lock_send_buffer(1 << 20);
            ex
        }

        /// As [`Exchange::with_backups`], with the send buffers autotuned as Linux's
        /// (`tcp_sndbuf_expand`, a 1 MiB `tcp_wmem[2]`): the application can write only what
        /// the connection's buffer holds.
        pub fn autotuned(
            sched: &str,
            caps_bps: &[f64],
            init_cwnd: u32,
            rwnd: u64,
            backups: &[PathId],
        ) -> Self {
            let names: Vec<String> = (0..caps_bps.len()).map(|p| format!("p{p}")).collect();
            let mut sched = sched::build(sched, &names, caps_bps).expect("known scheduler");
            for &p in backups {
                sched.set_backup(p);
            }
            let conn = SenderConnection::new(
                &SenderConfig {
                    npaths: caps_bps.len(),
                    cc: CcKind::Reno,
                    mss: MSS as u32,
                    init_cwnd,
                    send_buffer: 1 << 20,
                    initial_rwnd: rwnd,
                    min_rto: Duration::from_millis(200),
                    slow_start_after_idle: true,
                },
                sched,
            );
            Exchange {
                conn,
                now: Time(EPOCH),
                wire: Vec::new(),
            }
        }

        pub fn new(sched: &str, npaths: usize, init_cwnd: u32, rwnd_segs: u64) -> Self {
            Self::with_caps(sched, &vec![1e6; npaths], init_cwnd, rwnd_segs)
        }

        /// Move the clock to `ms` milliseconds after the start.
        pub fn at(&mut self, ms: u64) -> &mut Self {
            self.now = Time(EPOCH) + Duration::from_millis(ms);
            self
        }

        /// Milliseconds from the start to `t` (the inverse of [`Exchange::at`]).
        pub fn ms_at(t: Time) -> u64 {
            t.saturating_since(Time(EPOCH)).as_nanos() / 1_000_000
        }

        /// The application writes `segs` segments as one chunk.
        pub fn write(&mut self, segs: u64) -> &mut Self {
            assert_eq!(self.conn.write(segs * MSS, true), segs * MSS);
            self
        }

        /// Let the sender transmit all it may now: (path, segment, kind) in order.
        pub fn send(&mut self) -> Vec<(PathId, u64, TxKind)> {
            let mut out = Vec::new();
            while let Some((d, kind)) = self.conn.poll_transmit(self.now) {
                out.push((d.path, d.dsn / MSS, kind));
                self.wire.push((d, kind));
            }
            out
        }

        /// An ACK on `path` covering everything sent on it so far, carrying a data-ACK of
        /// `data_ack_segs` and a window of `rwnd_segs` segments.
        pub fn ack(&mut self, path: PathId, data_ack_segs: u64, rwnd_segs: u64) -> &mut Self {
            self.ack_bytes(path, None, data_ack_segs * MSS, rwnd_segs * MSS)
        }

        /// An ACK on `path` up to subflow sequence `upto` (everything sent on it if `None`),
        /// data-ACK and window in bytes.
        pub fn ack_bytes(
            &mut self,
            path: PathId,
            upto: Option<u64>,
            data_ack: u64,
            rwnd: u64,
        ) -> &mut Self {
            let last = self
                .wire
                .iter()
                .rev()
                .find(|(d, _)| d.path == path)
                .map(|(d, _)| *d)
                .expect("something was sent on the path");
            let ack = Ack {
                path,
                ack: upto.unwrap_or(last.end()),
                sack: [SackBlock::default(); 3],
                nsack: 0,
                data_ack,
                rwnd,
                ts_ecr: last.ts_val,
                ts_val: 0,
                owd_echo: None,
            };
            self.conn.handle_input(self.now, &ack);
            self
        }

        /// An ACK on `path` up to subflow sequence `upto` that SACKs `sack` (subflow bytes),
        /// data-ACK and window in bytes.
        pub fn ack_sack(
            &mut self,
            path: PathId,
            upto: u64,
            sack: (u64, u64),
            data_ack: u64,
            rwnd: u64,
        ) -> &mut Self {
            let last = self
                .wire
                .iter()
                .rev()
                .find(|(d, _)| d.path == path)
                .map(|(d, _)| *d)
                .expect("something was sent on the path");
            let mut blocks = [SackBlock::default(); 3];
            blocks[0] = SackBlock {
                start: sack.0,
                end: sack.1,
            };
            let ack = Ack {
                path,
                ack: upto,
                sack: blocks,
                nsack: 1,
                data_ack,
                rwnd,
                ts_ecr: last.ts_val,
                ts_val: 0,
                owd_echo: None,
            };
            self.conn.handle_input(self.now, &ack);
            self
        }

        /// Nothing acknowledged so far: at 1 s (no RTT sample yet) Linux's tail-loss probe
        /// fires (`tcp_schedule_loss_probe`) and its retransmission is sent.
        pub fn fire_loss_probe(&mut self) -> &mut Self {
            self.at(1_000);
            let now = self.now;
            self.conn.handle_timeout(now);
            self.send();
            self
        }

        /// The armed retransmission timeout fires (the clock moves to it); returns its time.
        pub fn fire_rto(&mut self) -> Time {
            let rto = self.conn.poll_timeout().expect("an RTO is armed");
            self.now = rto;
            self.conn.handle_timeout(rto);
            rto
        }

        pub fn cwnd_segs(&self, p: PathId) -> u64 {
            self.conn.subflows()[p as usize].cwnd() / MSS
        }
    }
}

#[cfg(test)]
mod tests {
    use super::exchange::{Exchange, MSS};
    use crate::sender::TxKind::{New, Reinject};

    /// Two subflows whose first ACKs gave p0 an RTT of 100 ms and p1 one of `p1_rtt_ms`;
    /// everything written so far (6 segments) is acknowledged and both are idle at t = 100 ms.
    /// The peer's window ends at segment `edge` throughout (a receiver never moves it left).
    fn slow_p0_fast_p1(sched: &str, p1_rtt_ms: u64, edge: u64) -> Exchange {
        let mut ex = Exchange::new(sched, 2, 4, edge);
        ex.at(0).write(6);
        // Before any RTT sample, subflows rank in path order: p0 fills first.
        assert_eq!(
            ex.send(),
            [
                (0, 0, New),
                (0, 1, New),
                (0, 2, New),
                (0, 3, New),
                (1, 4, New),
                (1, 5, New)
            ]
        );
        ex.at(p1_rtt_ms).ack(1, 0, edge);
        assert_eq!(ex.send(), []);
        ex.at(100).ack(0, 6, edge - 6);
        ex
    }

    /// The congestion windows (segments) `slow_p0_fast_p1` leaves p0 and p1 with.
    fn windows_after_warm_up(p1_rtt_ms: u64) -> (u64, u64) {
        let ex = slow_p0_fast_p1("minrtt", p1_rtt_ms, 64);
        (ex.cwnd_segs(0), ex.cwnd_segs(1))
    }

    #[test]
    fn unsampled_subflows_fill_in_path_order() {
        let mut ex = Exchange::new("minrtt", 2, 2, 64);
        ex.at(0).write(6);
        assert_eq!(
            ex.send(),
            [(0, 0, New), (0, 1, New), (1, 2, New), (1, 3, New)]
        );
    }

    #[test]
    fn idle_subflows_lowest_srtt_fills_first() {
        let mut ex = slow_p0_fast_p1("minrtt", 10, 64);
        let (w0, w1) = (ex.cwnd_segs(0), ex.cwnd_segs(1));
        ex.write(w0 + w1 + 3);
        let sent = ex.send();
        let paths: Vec<u8> = sent.iter().map(|s| s.0).collect();
        let mut expect = vec![1; w1 as usize];
        expect.extend(vec![0; w0 as usize]);
        assert_eq!(paths, expect, "p1 (10 ms) before p0 (100 ms): {sent:?}");
        let segs: Vec<u64> = sent.iter().map(|s| s.1).collect();
        assert_eq!(segs, (6..6 + w0 + w1).collect::<Vec<_>>(), "in DSN order");
    }

    /// Both subflows full, the window ends right after what they carry: p0 (100 ms) holds the
    /// data-level left edge once p1 has acknowledged all of its segments, `p1_rtt_ms` after
    /// sending them.
    fn left_edge_on_slow_subflow_rtt(sched: &str, p1_rtt_ms: u64) -> (Exchange, u64, u64) {
        let (w0, w1) = windows_after_warm_up(p1_rtt_ms);
        // The window admits exactly what both congestion windows hold.
        let mut ex = slow_p0_fast_p1(sched, p1_rtt_ms, 6 + w0 + w1);
        ex.write(w0 + w1 + 10);
        let sent = ex.send();
        assert_eq!(sent.len() as u64, w0 + w1);
        assert!(sent[..w1 as usize].iter().all(|s| s.0 == 1 && s.2 == New));
        assert!(sent[w1 as usize..].iter().all(|s| s.0 == 0 && s.2 == New));
        let left_edge = 6 + w1;
        // p1's segments arrive and are acknowledged; p0's first one is still on its way, so
        // the data-ACK stops at it and the window stays where it was.
        ex.at(100 + p1_rtt_ms).ack(1, left_edge, w0);
        (ex, left_edge, w0)
    }

    fn left_edge_on_slow_subflow(sched: &str) -> (Exchange, u64, u64) {
        left_edge_on_slow_subflow_rtt(sched, 10)
    }

    #[test]
    fn rwnd_blocked_left_edge_is_reinjected_on_the_fast_subflow_and_slow_one_penalized() {
        let (mut ex, left_edge, w0) = left_edge_on_slow_subflow("minrtt");
        assert_eq!(ex.send(), [(1, left_edge, Reinject)]);
        assert_eq!(ex.conn.meta().reinjected_bytes(), MSS);
        // Shi et al., USENIX ATC 2018, §2.3: the slow subflow holding the left edge has its window halved.
        assert_eq!(ex.cwnd_segs(0), w0 / 2);
        // Still blocked, but the fast subflow already carries the left edge: nothing more.
        assert_eq!(ex.send(), []);
    }

    #[test]
    fn penalties_are_timed_by_the_fast_subflows_rtt_not_the_slow_ones() {
        // v0.94 keeps `last_rbuf_opti` on the picked subflow and compares against its own sRTT
        // (p1, about 10 ms here), not the penalized p0's 100 ms.
        let (mut ex, left_edge, w0) = left_edge_on_slow_subflow("minrtt");
        assert_eq!(ex.send(), [(1, left_edge, Reinject)]);
        assert_eq!(ex.cwnd_segs(0), w0 / 2);
        // Still blocked 5 ms later (the copy on its way): within p1's sRTT, no second penalty.
        ex.at(115);
        assert_eq!(ex.send(), []);
        assert_eq!(ex.cwnd_segs(0), w0 / 2);
        // 15 ms after the first, past p1's sRTT but far from p0's: halved again.
        ex.at(125);
        assert_eq!(ex.send(), []);
        assert_eq!(ex.cwnd_segs(0), w0 / 4);
    }

    #[test]
    fn nopenalty_rwnd_blocked_reinjects_without_halving() {
        let (mut ex, left_edge, w0) = left_edge_on_slow_subflow("minrtt:nopenalty");
        assert_eq!(ex.send(), [(1, left_edge, Reinject)]);
        assert_eq!(ex.cwnd_segs(0), w0);
    }

    #[test]
    fn noor_rwnd_blocked_waits() {
        let (mut ex, _, w0) = left_edge_on_slow_subflow("minrtt:noor");
        assert_eq!(ex.send(), []);
        assert_eq!(ex.cwnd_segs(0), w0);
        assert_eq!(ex.conn.meta().reinjected_bytes(), 0);
    }

    #[test]
    fn rwnd_blocked_left_edge_on_comparable_subflow_is_penalized_not_reinjected() {
        // p1 (60 ms) is faster than p0 (100 ms) but not 4 times: a copy would not arrive sooner.
        let (mut ex, _, w0) = left_edge_on_slow_subflow_rtt("minrtt", 60);
        assert_eq!(ex.send(), []);
        assert_eq!(ex.cwnd_segs(0), w0 / 2);
        assert_eq!(ex.conn.meta().reinjected_bytes(), 0);
    }

    #[test]
    fn rwnd_blocked_left_edge_on_fast_subflow_is_not_reinjected_on_slow_one() {
        // p1 (10 ms) first fills its window once: its warm-up used 2 of its 4 segments, which
        // Linux does not grow past 4 (`tcp_is_cwnd_limited`: cwnd < 2 · max_packets_out), and
        // the left edge a carrier of 4 segments holds is resent whatever the RTTs.
        // `edge`: the data-level window's right edge in segments, given with p1's ACK.
        // The exchange starts with the edge no further than that: an edge offered once is not
        // taken back (`ack_update_msk`).
        let fill_p1 = |edge: u64| {
            let mut ex = slow_p0_fast_p1("minrtt", 10, edge.min(64));
            let w1 = ex.cwnd_segs(1);
            ex.write(w1);
            assert!(ex.send().iter().all(|s| s.0 == 1));
            ex.at(110).ack(1, 6 + w1, edge - 6 - w1);
            (ex, 6 + w1)
        };
        let (probe, left_edge) = fill_p1(1_000);
        let w1 = probe.cwnd_segs(1);
        assert!(w1 > 4, "{w1}");
        // The window holds exactly p1's window: p1 takes it all, p0 stays idle.
        let (mut ex, _) = fill_p1(left_edge + w1);
        ex.write(w1 + 10);
        let sent = ex.send();
        assert!(
            sent.len() as u64 == w1 && sent.iter().all(|s| s.0 == 1),
            "{sent:?}"
        );
        // Still blocked and only p0 (100 ms) has room: a copy there would arrive later.
        assert_eq!(ex.send(), []);
        assert_eq!(ex.conn.meta().reinjected_bytes(), 0);
    }

    #[test]
    fn data_ack_past_the_left_edge_resumes_new_data() {
        let (mut ex, left_edge, w0) = left_edge_on_slow_subflow("minrtt");
        ex.send();
        // p0's segments arrive: the data-ACK passes everything sent and the window opens wide.
        ex.at(200).ack(0, left_edge + w0, 64);
        let next = left_edge + w0;
        let sent = ex.send();
        assert!(!sent.is_empty());
        let segs: Vec<(u64, bool)> = sent.iter().map(|s| (s.1, s.2 == New)).collect();
        let expect: Vec<(u64, bool)> = (next..next + segs.len() as u64)
            .map(|n| (n, true))
            .collect();
        assert_eq!(segs, expect, "new data in DSN order, no reinjection");
    }
}
