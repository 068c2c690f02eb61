//! `linux`: the scheduler of upstream Linux MPTCP (net/mptcp/protocol.c,
//! `mptcp_subflow_get_send` and `__mptcp_push_pending` / `__subflow_push_pending`), the one
//! today's users run. Not a paper's: it is the baseline the kernel comparison of issue 9 holds
//! the simulator to.
//!
//! * Per active subflow the *linger time* `sk_wmem_queued / avg_pacing_rate`: the time the
//!   subflow needs to drain what it already holds (sent and unacknowledged, plus committed and
//!   unsent). The lowest wins; backup subflows (a scenario's `backup = true`, as the kernel
//!   runner flags their endpoints) only when no other subflow is active.
//! * If the winner's send buffer is full (`!sk_stream_memory_free(ssk)`: queued ≥ `sk_sndbuf`)
//!   nothing is sent — no fallback to another subflow.
//! * Otherwise a burst of `min(MPTCP_SEND_BURST_SIZE = 65,428 B, peer window left)` is committed
//!   into the winner's write queue, regardless of its congestion window (the subflow sends it
//!   as its window opens), and the winner's average pacing rate moves towards its current one,
//!   weighted by what it holds: `avg = (avg·wmem + rate·burst) / (burst + wmem)`. The push stops
//!   early when the subflow's send buffer fills; both checks are made between 32 KiB data
//!   fragments, so a push may overshoot either by the rest of a fragment (measured: a fresh
//!   subflow with a 46,080-byte buffer took the whole 64,512-byte first burst).
//! * The pacing rate is Linux's `tcp_update_pacing_rate` ([`SubflowSender::pacing_rate_bps`]).
//!   Before a subflow's first RTT sample Linux's rate is unbounded (`sk_pacing_rate = ~0`): its
//!   linger time is zero.
//! * A push hands the subflow bytes, not segments: it stops at the edge of the peer's
//!   data-level window (`mptcp_check_allowed_size`) and, once the burst is spent or the buffer
//!   full, at the end of a data fragment, so the segment there is cut
//!   ([`SendBuffer::cut`]). If the next push continues on the same subflow before any of
//!   the DSS mapping that ends there has left, the connection refills the short tail
//!   ([`SendBuffer::collapse`]), as the kernel appends to the same skb; once a mapping has
//!   been transmitted it is frozen (`mptcp_skb_can_collapse_to`), the next push starts a
//!   mapping of its own, and the tail leaves short, under Nagle's algorithm
//!   ([`SubflowSender::nagle_holds`]).
//! * What a subflow holds leaves as its window opens, in skbs of two segments or more
//!   (`tso_fragment`), and an skb of more than one segment may wait for the next ACK
//!   instead of leaving with one segment of window (`tcp_tso_should_defer`: within a
//!   millisecond of the last transmission; [`SubflowSender::tso_defers`]). ACKs that bunch
//!   behind a link delivering in bursts thus leave one segment of the window unused, and the
//!   subflow's send buffer grows on those ACKs (`tcp_should_expand_sndbuf`).
//! * No opportunistic retransmission, no penalization.
//!
//! * A subflow's timeout moves none of its data: the MPTCP-level retransmission timer resends
//!   one data fragment per firing on an idle subflow and re-pushes the whole queue once the
//!   subflow is stale (`__mptcp_retrans`, `mptcp_pm_subflow_chk_stale`; [`crate::msk_rtx`]).
//!
//! Deviations: `sk_wmem_queued` is modelled from payload and skb counts
//! ([`wmem_queued`]: skb heads of sent data, unsent data at its length; sent data counts
//! from SND.UNA to SND.NXT, SACKed and lost segments included, as Linux keeps them queued
//! until the cumulative ACK); a subflow in RTO
//! loss recovery is not offered new data (the kernel offers it, but its queue makes its linger
//! time the longest); the re-push of a stale subflow's connection goes to the available
//! subflow with window space and the lowest sRTT, segment by segment (the kernel pushes it as
//! new data through `mptcp_subflow_get_send`).
//!
//! [`SubflowSender::pacing_rate_bps`]: crate::subflow::sender::SubflowSender::pacing_rate_bps
//! [`SubflowSender::nagle_holds`]: crate::subflow::sender::SubflowSender::nagle_holds
//! [`SubflowSender::tso_defers`]: crate::subflow::sender::SubflowSender::tso_defers
//! [`SendBuffer::cut`]: crate::meta::send::SendBuffer::cut
//! [`SendBuffer::collapse`]: crate::meta::send::SendBuffer::collapse

use crate::msk_rtx::DFRAG;
use crate::packet::{PathId, MAX_PATHS};
use crate::sched::{Assignment, SchedCtx, Scheduler};
use crate::sender::wmem_queued;

/// `MPTCP_SEND_BURST_SIZE` (net/mptcp/protocol.c): 64 KiB less the largest TCP header.
pub const SEND_BURST: u64 = 65_428;

#[derive(Debug, Default)]
pub struct Linux {
    /// `subflow->avg_pacing_rate`, bytes per second; 0 until initialized.
    avg_pacing: [f64; MAX_PATHS],
    /// The subflow the current burst goes to, and the bytes left in it (`msk->snd_burst`).
    current: Option<PathId>,
    burst_left: u64,
    /// End (DSN) of the data fragment being pushed.
    dfrag_end: u64,
    /// Backup subflows (`subflow->backup`, [`Scheduler::set_backup`]).
    backup: [bool; MAX_PATHS],
}

/// `sk_wmem_queued` of `p`: what it holds in flight and committed, at Linux's true sizes
/// ([`wmem_queued`]).
fn wmem(ctx: &SchedCtx<'_>, p: PathId) -> u64 {
    let sf = ctx.subflow(p);
    // The retransmission queue, not the pipe: SACKed and lost skbs stay charged until SND.UNA
    // passes them (`tcp_clean_rtx_queue` frees only cumulatively acknowledged ones), so a
    // subflow repairing losses looks full to `mptcp_subflow_get_send`. SACKed skbs are merged
    // into their SACKed predecessor (`tcp_shift_skb_data`, within one DSS mapping), which
    // frees their heads: they are charged their payload alone. Checked on Linux 6.18: `ss
    // -tmi` through three 1 MiB downloads at LTE 270 ms, 173 WiFi samples with more than
    // three segments SACKed: this charge is within -1.2% of `w` (median; p10/p90 -3.4/+3.2%),
    // the pipe's -18.2%, a head for every outstanding segment +8.6%. Each skb is charged one
    // head, and how many segments an skb holds depends on how they left
    // ([`SubflowSender::skb_heads_out`]): LTE's bursts at 270 ms leave in pairs (tcpdump on
    // the server: frames 0.5-1 µs apart in pairs, 1.3 ms between pairs) and the kernel's `w`
    // is 1.31 × what is outstanding there, where one head per segment would charge 1.59 ×
    // and make LTE look busier than WiFi to the linger-time rule.
    wmem_queued(
        sf.outstanding_bytes(),
        sf.skb_heads_out(),
        ctx.path_info(p).queued,
        sf.mss(),
    )
}

/// `mptcp_subflow_active` (net/mptcp/protocol.c): `__mptcp_subflow_active` refuses a joined
/// subflow until it is fully established and any subflow not in ESTABLISHED/CLOSE_WAIT
/// (`__tcp_can_send`); a subflow whose MP_JOIN has not even been sent is not in the list.
/// Without the handshake check a pending subflow (nothing queued: linger time zero) would win
/// and take a burst it cannot send until its join completes.
fn active(ctx: &SchedCtx<'_>, p: PathId) -> bool {
    ctx.available(p) && ctx.subflow(p).is_established()
}

/// `sk_stream_memory_free(ssk)`.
fn memory_free(ctx: &SchedCtx<'_>, p: PathId) -> bool {
    wmem(ctx, p) < ctx.path_info(p).sndbuf
}

/// Current pacing rate of `p`, bytes per second; infinite before its first RTT sample.
fn pacing(ctx: &SchedCtx<'_>, p: PathId) -> f64 {
    ctx.subflow(p)
        .pacing_rate_bps()
        .map_or(f64::INFINITY, |b| b / 8.0)
}

impl Linux {
    /// `mptcp_subflow_get_send`: the active subflow with the lowest linger time, if its send
    /// buffer has room; starts a burst on it.
    fn get_send(&mut self, ctx: &mut SchedCtx<'_>, window_left: u64) -> Option<PathId> {
        // The best active subflow and the best active backup (`send_info[SSK_MODE_ACTIVE]`,
        // `[SSK_MODE_BACKUP]`); the backup only when no other subflow is active.
        let mut best: Option<(f64, PathId)> = None;
        let mut best_backup: Option<(f64, PathId)> = None;
        for p in 0..ctx.npaths() as PathId {
            if !active(ctx, p) {
                continue;
            }
            let i = p as usize;
            // "init pacing rate from socket" while unset — or unbounded, which here stands
            // for the rate Linux has from the handshake's RTT sample and we lack until the
            // first ACK.
            if self.avg_pacing[i] == 0.0 || self.avg_pacing[i].is_infinite() {
                self.avg_pacing[i] = pacing(ctx, p);
            }
            let linger = wmem(ctx, p) as f64 / self.avg_pacing[i];
            let slot = if self.backup[i] {
                &mut best_backup
            } else {
                &mut best
            };
            // Strictly lower: ties go to the first subflow in the list, as in the kernel.
            if slot.is_none_or(|(l, _)| linger < l) {
                *slot = Some((linger, p));
            }
        }
        let (_, p) = best.or(best_backup)?;
        if !memory_free(ctx, p) {
            return None;
        }
        let burst = SEND_BURST.min(window_left);
        let wmem = wmem(ctx, p) as f64;
        if burst > 0 {
            let i = p as usize;
            let rate = pacing(ctx, p);
            let b = burst as f64;
            self.avg_pacing[i] = if wmem == 0.0 || !self.avg_pacing[i].is_finite() {
                rate
            } else {
                (self.avg_pacing[i] * wmem + rate * b) / (b + wmem)
            };
        }
        self.current = Some(p);
        self.burst_left = burst;
        Some(p)
    }
}

impl Scheduler for Linux {
    fn name(&self) -> &'static str {
        "linux"
    }

    fn queues_ahead(&self) -> bool {
        true
    }

    fn msk_retransmit(&self) -> bool {
        true
    }

    fn set_backup(&mut self, p: PathId) {
        if let Some(b) = self.backup.get_mut(p as usize) {
            *b = true;
        }
    }

    fn is_backup(&self, p: PathId) -> bool {
        self.backup.get(p as usize).copied().unwrap_or(false)
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        let Some(seg) = ctx.meta_mut().next_unsent() else {
            // The push is over (`__mptcp_push_pending` ran out of data): the next one, after
            // a write or an ACK, chooses its subflow afresh.
            self.current = None;
            return None;
        };
        let mut rec = *ctx.meta().seg(seg)?;
        let wnd_end = ctx.meta().rwnd_limit();
        if !ctx.may_send(seg) {
            // `mptcp_check_allowed_size`: the push takes the data up to the window's edge, so
            // the segment is cut there (where cuts are possible).
            if rec.dsn >= wnd_end || !ctx.meta_mut().cut(seg, wnd_end) {
                return None;
            }
            rec = *ctx.meta().seg(seg)?;
        }
        let window_left = wnd_end.saturating_sub(rec.dsn);
        // `__subflow_push_pending` checks the burst and the send buffer only between data
        // fragments: the fragment being pushed goes out whole.
        let in_dfrag = rec.dsn < self.dfrag_end;
        let keep = self.current.filter(|&p| {
            active(ctx, p) && (in_dfrag || (self.burst_left > 0 && memory_free(ctx, p)))
        });
        let p = match keep {
            Some(p) => p,
            None => self.get_send(ctx, window_left)?,
        };
        if !in_dfrag {
            // The data fragment the segment is in, as the application's writes made it
            // (page fragments, `mptcp_sendmsg`), where the buffer tracks them; else a
            // 32 KiB grid.
            self.dfrag_end = ctx
                .meta()
                .frag_end(rec.dsn)
                .unwrap_or((rec.dsn / DFRAG + 1) * DFRAG);
        }
        // The fragment ends inside this segment: if the push stops there (burst spent or the
        // subflow's buffer full, `__subflow_push_pending`), the subflow's data ends there too.
        // Whether the next push continues on this subflow (and the kernel appends to the same
        // skb) is decided next: the connection joins the pieces again if it does.
        let to_end = self.dfrag_end.saturating_sub(rec.dsn);
        if to_end < u64::from(rec.len)
            && (self.burst_left <= to_end || wmem(ctx, p) + to_end >= ctx.path_info(p).sndbuf)
            && ctx.meta_mut().cut(seg, self.dfrag_end)
        {
            rec = *ctx.meta().seg(seg)?;
        }
        self.burst_left = self.burst_left.saturating_sub(u64::from(rec.len));
        Some(Assignment { path: p, seg })
    }

    /// An ACK starts a new push (`mptcp_data_acked` → `__mptcp_push_pending`), which asks
    /// `mptcp_subflow_get_send` first.
    fn on_event(&mut self, _ctx: &mut SchedCtx<'_>, _ev: &crate::sched::SchedEvent) {
        self.current = None;
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::minrtt::exchange::{Exchange, MSS};
    use crate::sender::TxKind::New;

    #[test]
    fn fresh_subflows_first_takes_the_burst_beyond_its_window() {
        // mptcp_subflow_get_send: before any RTT sample both linger times are zero, the first
        // subflow wins and a whole burst (65,428 B = 65 segments here) is committed to it;
        // the initial window (4 segments) leaves now, the rest waits in its write queue.
        let mut ex = Exchange::new("linux", 2, 4, 1000);
        ex.at(0).write(80);
        let sent = ex.send();
        assert_eq!(sent, [(0, 0, New), (0, 1, New), (0, 2, New), (0, 3, New)]);
        let q = ex.conn.path_info()[0].queued;
        assert!(q >= 60 * MSS, "burst committed to p0: {q}");
    }

    #[test]
    fn lower_linger_time_wins_the_next_burst() {
        // The first push commits all 65 segments to p0 (the 65,428-byte burst runs out inside
        // the last one, which belongs to the same data fragment). p0 then has an RTT sample (a
        // finite pacing rate); p1 holds nothing and has none: linger(p1) = 0 < linger(p0), so
        // new data goes to p1.
        let mut ex = Exchange::new("linux", 2, 4, 1000);
        ex.at(0).write(65);
        ex.send();
        ex.at(100).ack(0, 4, 1000);
        let sent = ex.send();
        assert!(
            sent.iter().all(|s| s.0 == 0),
            "p0 drains its queue: {sent:?}"
        );
        ex.write(10);
        let sent = ex.send();
        assert_eq!(
            sent.iter()
                .filter(|s| s.0 == 1)
                .map(|s| s.1)
                .collect::<Vec<_>>(),
            [65, 66, 67, 68],
            "p1 sends its initial window of the new data, the rest waits in its queue: {sent:?}"
        );
        assert_eq!(ex.conn.path_info()[1].queued, 6 * MSS);
    }

    #[test]
    fn a_subflow_repairing_a_loss_is_charged_its_whole_retransmission_queue() {
        // `sk_wmem_queued` keeps SACKed and lost skbs until SND.UNA passes them
        // (`tcp_clean_rtx_queue`). p0 (RTT 100 ms) and p1 (RTT 50 ms) each hold four
        // segments; p0's first is lost and the other three SACKed, so its pipe is the fast
        // retransmission alone. Charged by the pipe, p0 (one segment at half p1's pacing
        // rate) would look emptier than p1 (four) and win the next burst; charged by what it
        // holds (four segments' payload and the lost one's skb head; SACKed skbs merge and
        // free theirs), it holds about as much as p1 at half the rate, and the burst goes to
        // p1.
        let mut ex = Exchange::new("linux", 2, 4, 1000);
        ex.at(0).write(8);
        ex.send();
        ex.at(100).ack(0, 4, 1000);
        assert!(ex.send().iter().all(|s| s.0 == 0), "p0 sends segments 4-7");
        ex.write(8);
        assert!(
            ex.send().iter().all(|s| s.0 == 1),
            "the empty p1 takes 8-15"
        );
        ex.at(150).ack_bytes(1, Some(4 * MSS), 4 * MSS, 1000 * MSS);
        ex.send();
        ex.at(200)
            .ack_sack(0, 4 * MSS, (5 * MSS, 8 * MSS), 4 * MSS, 1000 * MSS);
        let resent = ex.send();
        assert_eq!(
            resent.first().map(|s| (s.0, s.1)),
            Some((0, 4)),
            "{resent:?}"
        );
        assert_eq!(ex.conn.subflows()[0].in_flight(), MSS);
        ex.write(4);
        let sent = ex.send();
        assert!(
            sent.iter().any(|s| s.0 == 1 && s.1 >= 16) && sent.iter().all(|s| s.0 != 0 || s.1 < 16),
            "the new data goes to p1: {sent:?}"
        );
    }

    #[test]
    fn connection_timer_resends_the_head_fragment_on_the_idle_subflow() {
        // net/mptcp/protocol.c `__mptcp_retrans`: p0 holds segments 0-3 in flight and 4-7 in
        // its write queue (both count as sent at the MPTCP level: `already_sent`) and never
        // hears back. The MPTCP-level timer, armed at the first push with p0's pending timer
        // (the 1 s loss probe before any RTT sample, `mptcp_set_timeout`), fires at 1 s and
        // sends the head data fragment again on the idle p1, all eight segments, as
        // reinjections. v0.9x would wait for p0's RTO and send 4-7 on p1 as new data.
        use crate::sender::TxKind::Reinject;
        let mut ex = Exchange::new("linux", 2, 4, 1000);
        ex.at(0).write(8);
        assert_eq!(
            ex.send(),
            [(0, 0, New), (0, 1, New), (0, 2, New), (0, 3, New)]
        );
        let mut on_p1 = Vec::new();
        for _ in 0..6 {
            let t = Exchange::ms_at(ex.fire_rto());
            let mut sent = ex.send();
            while sent.iter().any(|s| s.0 == 1) {
                // p1 delivers at once: the data-ACK covers what it carried.
                for s in sent.iter().filter(|s| s.0 == 1) {
                    on_p1.push((t, s.1, s.2));
                }
                let acked = on_p1.iter().map(|s| s.1 + 1).max().unwrap_or(0);
                ex.ack(1, acked, 1000);
                sent = ex.send();
            }
        }
        let expect: Vec<_> = (0..8).map(|s| (1000, s, Reinject)).collect();
        assert_eq!(on_p1, expect);
    }

    /// p1 is a backup path; both subflows have a window of 4 and p0 never hears back.
    fn backup_exchange() -> Exchange {
        let mut ex = Exchange::with_backups("linux", &[1e6, 1e6], 4, 1000 * MSS, &[1]);
        ex.at(0).write(8);
        ex
    }

    #[test]
    fn backup_subflow_takes_no_burst_while_another_is_active() {
        // `mptcp_subflow_get_send`: p1's linger time (zero, nothing queued) would win, but a
        // backup only when no other subflow is active: the whole burst goes to p0.
        let mut ex = backup_exchange();
        assert_eq!(
            ex.send(),
            [(0, 0, New), (0, 1, New), (0, 2, New), (0, 3, New)]
        );
        assert_eq!(ex.conn.path_info()[1].queued, 0);
        assert_eq!(ex.conn.path_info()[0].queued, 4 * MSS);
    }

    #[test]
    fn connection_timer_resends_on_the_backup_only_after_two_firings_without_progress() {
        // `mptcp_subflow_get_retrans`: no non-backup subflow is idle; the backup is used only
        // once every subflow holding data has counted more than one firing without an ACK
        // (`min_stale_count > 1`). The first firing counts one: nothing moves. The second
        // sends the head fragment on p1.
        let mut ex = backup_exchange();
        ex.send();
        let first = ex.fire_rto();
        assert!(ex.send().iter().all(|s| s.0 == 0), "first firing");
        let mut second = Vec::new();
        while second.is_empty() {
            let t = ex.fire_rto();
            assert!(t > first);
            second = ex.send().into_iter().filter(|s| s.0 == 1).collect();
        }
        assert_eq!(
            second[0],
            (1, 0, crate::sender::TxKind::Reinject),
            "{second:?}"
        );
    }

    /// Wire transmissions so far as (path, DSN, length).
    fn wire(ex: &Exchange) -> Vec<(u8, u64, u32)> {
        ex.wire
            .iter()
            .map(|(d, _)| (d.path, d.dsn, d.len))
            .collect()
    }

    #[test]
    fn push_that_stops_inside_a_segment_cuts_it_and_the_rest_goes_to_the_next_winner() {
        // 66,000 bytes, written as `mptcp_sendmsg` does into page fragments of 32,728 data
        // bytes (a 32 KiB page less its 40-byte header) and a last one of 544: the first push
        // (to p0, both linger times zero) spends its burst in the second fragment, which ends
        // at 65,456 inside segment 65; the push stops there (`__subflow_push_pending` checks
        // the burst after each fragment), so p0's data ends at 65,456. When p0's ACK gives it
        // a pacing rate, p1 (linger time zero) wins the remaining 544 bytes, a segment of its
        // own.
        let mut ex = Exchange::new("linux", 2, 4, 1000);
        ex.at(0).write(66);
        ex.send();
        assert_eq!(ex.conn.path_info()[0].queued, 65_456 - 4 * MSS);
        ex.at(100).ack(0, 4, 1000);
        ex.send();
        assert!(
            wire(&ex).contains(&(1, 65_456, 544)),
            "the rest on p1: {:?}",
            wire(&ex)
        );
    }

    #[test]
    fn push_ends_at_the_window_edge_and_nagle_holds_the_second_short_segment() {
        // `mptcp_check_allowed_size`: a peer window ending at 2,500 lets the push take bytes
        // up to 2,500, the last segment 500 bytes long; nothing short is unacknowledged yet,
        // so it leaves. The window then moves to 5,000 while the first short segment is still
        // unacknowledged: the next push ends with another 500-byte segment, which Nagle's
        // algorithm with Minshall's rule holds (`tcp_nagle_check`) until the first one is
        // acknowledged.
        let mut ex = Exchange::with_window("linux", &[1e6], 10, 2_500);
        ex.at(0).write(10);
        ex.send();
        assert_eq!(wire(&ex), [(0, 0, 1000), (0, 1000, 1000), (0, 2000, 500)]);
        ex.at(100).ack_bytes(0, Some(2_000), 2_000, 3_000);
        ex.send();
        assert_eq!(
            wire(&ex)[3..],
            [(0, 2500, 1000), (0, 3500, 1000)],
            "the 500 bytes at 4,500 wait"
        );
        ex.at(110).ack_bytes(0, Some(2_500), 2_500, 2_500);
        ex.send();
        assert_eq!(wire(&ex)[5..], [(0, 4500, 500)]);
    }

    #[test]
    fn with_nodelay_the_second_short_segment_leaves_at_once() {
        // The exchange above with `TCP_NODELAY` (`transport.nodelay`): `tcp_nagle_test` is true
        // under TCP_NAGLE_OFF, so the push's 500-byte tail leaves with it.
        let mut ex = Exchange::with_window("linux", &[1e6], 10, 2_500);
        ex.conn.set_nodelay(true);
        ex.at(0).write(10);
        ex.send();
        ex.at(100).ack_bytes(0, Some(2_000), 2_000, 3_000);
        ex.send();
        assert_eq!(
            wire(&ex)[3..],
            [(0, 2500, 1000), (0, 3500, 1000), (0, 4500, 500)]
        );
    }

    #[test]
    fn a_push_after_its_mapping_left_starts_its_own_and_the_short_tail_leaves_short() {
        // The window edge at 2,500 cuts the third segment; the congestion window (2 segments)
        // keeps that 500-byte piece in p0's queue while the first two leave. The window opens
        // to 4,000 before the piece leaves, but its DSS mapping has been transmitted, so it is
        // frozen (`mptcp_skb_can_collapse_to`): the next push starts a mapping of its own and
        // the wire sees the 500 bytes as a segment of their own.
        let mut ex = Exchange::with_window("linux", &[1e6], 2, 2_500);
        ex.at(0).write(10);
        ex.send();
        assert_eq!(wire(&ex), [(0, 0, 1000), (0, 1000, 1000)]);
        assert_eq!(ex.conn.path_info()[0].queued, 500);
        // A window update only: nothing acknowledged on the subflow.
        ex.at(50).ack_bytes(0, Some(0), 0, 4_000);
        ex.send();
        assert_eq!(ex.conn.path_info()[0].queued, 2_000);
        ex.at(100).ack_bytes(0, None, 2_000, 2_000);
        ex.send();
        assert_eq!(wire(&ex)[2..], [(0, 2000, 500), (0, 2500, 1000)]);
    }

    #[test]
    fn a_push_extends_a_mapping_none_of_which_has_left_and_refills_its_short_tail() {
        // Two segments fill the congestion window; the second write's push queues everything
        // up to the window edge at 4,500 (a mapping from 2,000 with a 500-byte tail), none of
        // it sent. The window opens to 6,000 before any of it leaves: the next push continues
        // that mapping and the kernel appends to the same skb, so the tail grows back to a
        // full segment.
        let mut ex = Exchange::with_window("linux", &[1e6], 2, 4_500);
        ex.at(0).write(2);
        ex.send();
        assert_eq!(wire(&ex), [(0, 0, 1000), (0, 1000, 1000)]);
        ex.at(10).write(8);
        assert_eq!(ex.send(), []);
        assert_eq!(ex.conn.path_info()[0].queued, 2_500);
        ex.at(50).ack_bytes(0, Some(0), 0, 6_000);
        ex.send();
        assert_eq!(ex.conn.path_info()[0].queued, 4_000);
        ex.at(100).ack_bytes(0, None, 2_000, 4_000);
        ex.send();
        assert_eq!(
            wire(&ex)[2..],
            [
                (0, 2000, 1000),
                (0, 3000, 1000),
                (0, 4000, 1000),
                (0, 5000, 1000)
            ]
        );
    }

    #[test]
    fn pending_join_takes_no_burst_until_established() {
        // `mptcp_subflow_active`: p1's MP_JOIN has not completed. With nothing queued its
        // linger time would be zero, the lowest; it must still get nothing, all data going to
        // p0 (its initial window on the wire, the burst in its queue, the rest unsent).
        let mut ex = Exchange::new("linux", 2, 4, 1000);
        ex.conn.set_subflow_pending(1);
        ex.at(0).write(80);
        ex.send();
        ex.at(100).ack(0, 4, 1000);
        ex.write(10);
        let sent = ex.send();
        assert!(sent.iter().all(|s| s.0 == 0), "only p0 sends: {sent:?}");
        assert_eq!(ex.conn.path_info()[1].queued, 0, "nothing committed to p1");
        // The join completes: p1 (empty, linger time zero) wins the next burst.
        ex.conn
            .set_subflow_established(1, Some(crate::time::Duration::from_millis(100)));
        ex.write(10);
        let sent = ex.send();
        assert!(sent.iter().any(|s| s.0 == 1), "p1 now sends: {sent:?}");
    }

    /// The subflow's sequence after `segs` segments (the exchange's subflow starts at 0).
    fn upto(segs: u64) -> Option<u64> {
        Some(segs * MSS)
    }

    #[test]
    fn one_segment_acks_keep_the_send_buffer_of_a_subflow_holding_a_burst() {
        // `tcp_data_snd_check` (net/ipv4/tcp_input.c) pushes first (`tcp_push_pending_frames`)
        // and then asks `tcp_check_space` → `tcp_should_expand_sndbuf`, which refuses while the
        // congestion window is full. The first push commits all 45 segments to p0 (a fresh
        // buffer of 2 · 10 · 2,304 = 46,080 bytes). In slow start an ACK of one segment opens
        // two, both leave at once, and the window is full again: no expansion, as measured
        // through the quick ACKs of a connection's first round trips.
        let fresh = crate::sender::sndbuf_for(10, MSS as u32, 1 << 20);
        assert_eq!(fresh, 46_080);
        let mut ex = Exchange::autotuned("linux", &[1e6], 10, 1000 * MSS, &[]);
        ex.at(0).write(45);
        assert_eq!(ex.send().len(), 10);
        assert_eq!(ex.conn.path_info()[0].queued, 35 * MSS);
        for k in 1..=8 {
            ex.at(100 + k).ack_bytes(0, upto(k), k * MSS, 1000 * MSS);
            assert_eq!(ex.cwnd_segs(0), 10 + k);
            assert_eq!(ex.conn.path_info()[0].sndbuf, fresh, "after ACK {k}");
            assert_eq!(ex.send().len(), 2);
        }
    }

    #[test]
    fn an_ack_that_opens_three_segments_expands_the_send_buffer_behind_a_queue() {
        // TCP Small Queues (`tcp_small_queue_check`) lets two segments leave at these rates
        // and holds the rest until the host frees the first; `tcp_check_space` runs before
        // that and finds the window not full. Measured on Linux 6.18 (sock_diag every 0.5 ms
        // through a 1 MiB download, docs/fidelity.md): the subflow's buffer followed its
        // window on every ACK of two segments in slow start (four opened), with 10-27 kB
        // still queued, and on none of one segment.
        let mut ex = Exchange::autotuned("linux", &[1e6], 10, 1000 * MSS, &[]);
        ex.at(0).write(45);
        ex.send();
        ex.at(100).ack_bytes(0, upto(2), 2 * MSS, 1000 * MSS);
        assert_eq!(ex.cwnd_segs(0), 12);
        assert!(ex.conn.path_info()[0].queued > 0);
        assert_eq!(
            ex.conn.path_info()[0].sndbuf,
            crate::sender::sndbuf_for(12, MSS as u32, 1 << 20)
        );
    }

    #[test]
    fn a_drained_queue_lets_the_send_buffer_follow_the_window() {
        // With nothing queued an ACK leaves the window short whatever it opens.
        let mut ex = Exchange::autotuned("linux", &[1e6], 10, 1000 * MSS, &[]);
        ex.at(0).write(10);
        assert_eq!(ex.send().len(), 10);
        assert_eq!(ex.conn.path_info()[0].queued, 0);
        ex.at(100).ack_bytes(0, upto(1), MSS, 1000 * MSS);
        assert_eq!(
            ex.conn.path_info()[0].sndbuf,
            crate::sender::sndbuf_for(11, MSS as u32, 1 << 20)
        );
    }

    #[test]
    fn full_send_buffer_of_the_winner_sends_nothing() {
        // The winner's buffer full: no fallback (`!sk_stream_memory_free(ssk)` → NULL).
        let mut ex = Exchange::new("linux", 1, 4, 100_000);
        ex.at(0).write(90);
        ex.send();
        let info = ex.conn.path_info()[0];
        assert!(info.queued + 4 * MSS >= info.sndbuf, "{info:?}");
        let before = ex.conn.meta().unsent_bytes();
        assert!(before > 0, "data left unsent");
        assert_eq!(ex.send(), []);
    }
}
