//! The sending half of one subflow: sequence space, SACK scoreboard, loss recovery and RTO.
//!
//! Loss recovery is RFC 6675 (conservative SACK-based recovery): a segment is lost once more
//! than (DupThresh − 1) · SMSS bytes above it have been SACKed (IsLost, §4), recovery starts on
//! the first such loss with RecoveryPoint = HighData, the congestion controller is told once per
//! recovery episode, and retransmissions of lost segments go before new data while
//! pipe < cwnd (§5). The RTO follows RFC 6298 (§5: restart on new cumulative ACK, back off on
//! expiry, after expiry every unSACKed segment is retransmitted from the left edge).
//!
//! Windows count packets, as Linux's do (`snd_cwnd` and `packets_out` are in segments): every
//! segment weighs one SMSS in the pipe and in the acknowledged amount the congestion controller
//! is credited, whatever its length. A short segment (the end of a chunk) thus takes a full
//! slot and its ACK grows a slow-start window by a full SMSS. Counting its real bytes instead
//! (RFC 5681/3465 byte counting) leaves every later round of a slow start a fraction of a
//! segment short, and compounds: DEMS's tail subflow starts each chunk with its short last
//! segment, and on a fresh 1 MiB WiFi/LTE transfer it carried 143 instead of 150 segments in
//! four rounds. Delivery accounting and statistics use real bytes.
//!
//! Cost per ACK does not grow with the window: SACK blocks are diffed against the set of
//! already-SACKed ranges so only newly SACKed segments are visited, and IsLost is evaluated by
//! a pointer that only moves forward while "SACKed bytes above it" is kept as a running sum.

use std::collections::VecDeque;

use crate::cc::{AckSample, CcKind, CongestionControl, CoupledView};
use crate::packet::{Ack, DataSegment, PathId};
use crate::rangeset::RangeSet;
use crate::subflow::rtt::RttEstimator;
use crate::time::{Duration, Time};

/// RFC 6675 DupThresh.
const DUP_THRESH: u64 = 3;

/// One transmitted segment on the subflow scoreboard.
#[derive(Clone, Copy, Debug)]
struct Sent {
    seq: u64,
    len: u32,
    /// Meta-level segment this transmission carries (absolute index in the send buffer).
    meta_seg: u64,
    dsn: u64,
    sent_time: Time,
    /// Delivery-rate sampling state at (re)transmission (as Linux `tcp_rate.c`).
    delivered_at_send: u64,
    delivered_time_at_send: Time,
    /// Sent while the subflow was application-limited (its rate sample is a lower bound).
    app_limited: bool,
    /// Bytes in flight on this subflow just before the segment was sent (seed 000 §5 bins OWD
    /// samples by it).
    bif_at_send: u64,
    sacked: bool,
    lost: bool,
    /// A retransmission of this segment is in flight.
    retx_in_flight: bool,
    retransmitted: bool,
}

impl Sent {
    fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
    /// RFC 6675 pipe: a segment counts unless SACKed, or lost and not yet retransmitted.
    fn in_pipe(&self) -> bool {
        !self.sacked && (!self.lost || self.retx_in_flight)
    }
}

/// Loss-recovery state of a subflow, readable by schedulers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubflowState {
    SlowStart,
    CongestionAvoidance,
    Recovery,
    /// After an RTO, until the data outstanding at the timeout is acknowledged.
    Loss,
}

/// A segment that a subflow ACK reported as received for the first time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    pub meta_seg: u64,
    pub dsn: u64,
    pub len: u32,
    /// When this transmission left the sender.
    pub sent_time: Time,
    pub bif_at_send: u64,
}

/// A delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation, Linux `tcp_rate.c`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSample {
    pub bps: f64,
    /// The segment that produced it left while the subflow had window space and nothing to
    /// send: the rate reflects the sender, not the path, and is only a lower bound.
    pub app_limited: bool,
}

/// What one ACK did to the subflow, for the connection to pass on.
#[derive(Debug, Default)]
pub struct AckOutcome {
    pub newly_acked_bytes: u64,
    /// Newly acknowledged segments, each weighing one MSS: what the congestion controller is
    /// credited (see the module doc on packet-counted windows).
    pub newly_acked_window: u64,
    pub rtt_sample: Option<Duration>,
    pub entered_recovery: bool,
    /// The delivery-rate sample this ACK produced, if any.
    pub rate_sample: Option<RateSample>,
    /// Send time and bytes in flight at send of the segment whose reception the ACK's OWD echo
    /// reports, if it is still on the scoreboard or was just acknowledged.
    pub echoed: Option<(Time, u64)>,
}

#[derive(Debug)]
pub struct SubflowSender {
    path: PathId,
    mss: u32,
    /// IW, bytes: the floor of the restart window.
    initial_window: u64,
    /// RFC 5681 §4.1 restart after idle (Linux `tcp_slow_start_after_idle`).
    restart_after_idle: bool,
    /// When data (new or retransmitted) last left (Linux `lsndtime`).
    last_send: Option<Time>,
    /// Meta-level segment of the latest retransmission or probe.
    last_resent: Option<u64>,
    idle_restarts: u64,
    cc: Box<dyn CongestionControl>,
    rtt: RttEstimator,
    snd_una: u64,
    snd_nxt: u64,
    /// Scoreboard in sequence order; `front_no` is the absolute number of `board[0]`.
    board: VecDeque<Sent>,
    front_no: u64,
    sacked: RangeSet,
    in_flight: u64,
    /// Absolute numbers of segments marked lost and awaiting retransmission, in order.
    retx_queue: VecDeque<u64>,
    /// Retransmissions in the order sent: (send time, absolute number). RACK (RFC 8985 §6.2)
    /// for retransmissions: one is lost once a segment sent reo_wnd after it was delivered.
    retx_sent: VecDeque<(Time, u64)>,
    /// RACK.xmit_ts: latest send time of any segment delivered so far.
    rack_xmit: Time,
    /// IsLost pointer: every segment numbered below it has been judged.
    loss_ptr: u64,
    sacked_below_ptr: u64,
    recovery_point: Option<u64>,
    /// Highest sequence outstanding when the RTO fired; the Loss state lasts until it is acked.
    rto_recovery_point: Option<u64>,
    rto_deadline: Option<Time>,
    /// Tail loss probe (RFC 8985 §7): when it fires, the highest segment is sent again so that
    /// a loss at the tail of a flight is repaired by RACK instead of waiting for the RTO.
    tlp_deadline: Option<Time>,
    tlp_pending: bool,
    /// A probe is out and no new data has been delivered since (one probe per episode).
    tlp_out: bool,
    // Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation).
    delivered: u64,
    delivered_time: Time,
    /// Linux `tp->app_limited`: nonzero while the data delivered so far has not yet passed
    /// the point where the subflow last had window space and nothing to send.
    app_limited_until: u64,
    /// The latest delivery-rate sample, bits/s (what `tcpi_delivery_rate` reports in Linux).
    delivery_rate_bps: Option<f64>,
    // Statistics.
    bytes_sent: u64,
    bytes_acked: u64,
    retransmitted_segments: u64,
    retransmitted_bytes: u64,
    rto_count: u64,
    tlp_probes: u64,
    penalized_at: Option<Time>,
    /// The server side of the subflow's handshake is complete: until then no data may go on
    /// it (see [`SubflowSender::set_pending`]).
    established: bool,
    /// Reused buffer for newly SACKed ranges (no allocation per ACK).
    scratch: Vec<(u64, u64)>,
}

impl SubflowSender {
    /// Turn RFC 5681 §4.1 restart after idle off (`net.ipv4.tcp_slow_start_after_idle = 0`).
    pub fn set_restart_after_idle(&mut self, on: bool) {
        self.restart_after_idle = on;
    }

    /// RFC 5681 §4.1: before sending after an idle period — nothing outstanding and nothing
    /// sent for longer than one RTO — the window restarts ([`crate::cc::restart_window`]). The
    /// connection calls this before it asks the scheduler, so the decision sees the window the
    /// data will leave with (Linux checks in `tcp_write_xmit`, before the first segment).
    pub fn restart_if_idle(&mut self, now: Time) {
        if !self.restart_after_idle || !self.board.is_empty() {
            return;
        }
        let Some(last) = self.last_send else { return };
        let idle = now.saturating_since(last);
        let rto = self.rtt.rto();
        if idle > rto {
            self.cc
                .restart_after_idle(now, idle, rto, self.initial_window);
            self.idle_restarts += 1;
            // One restart per idle period: the next one is measured from here.
            self.last_send = Some(now);
        }
    }

    /// The subflow has window space and the connection gives it nothing to send: rate samples
    /// of the data in flight now, and of what is sent until it is delivered, are
    /// application-limited (Linux `tcp_rate_check_app_limited`).
    pub fn mark_app_limited(&mut self) {
        if self.has_cwnd_space() {
            self.app_limited_until = (self.delivered + self.in_flight).max(1);
        }
    }

    /// The subflow exists but its handshake has not completed at the sender (the server): it
    /// has no window to offer until [`SubflowSender::establish`].
    pub fn set_pending(&mut self) {
        self.established = false;
    }

    /// The handshake completed at `now`. `handshake_rtt`, the time from the SYN/ACK to the
    /// peer's ACK, is the subflow's first RTT sample, as Linux takes it on the passive side
    /// (`tcp_synack_rtt_meas`, net/ipv4/tcp_input.c).
    pub fn establish(&mut self, handshake_rtt: Option<Duration>) {
        self.established = true;
        if let Some(r) = handshake_rtt {
            self.rtt.on_sample(r);
        }
    }

    pub fn idle_restarts(&self) -> u64 {
        self.idle_restarts
    }

    pub fn new(path: PathId, cc: CcKind, mss: u32, init_cwnd: u32, min_rto: Duration) -> Self {
        SubflowSender {
            path,
            mss,
            initial_window: init_cwnd.max(1) as u64 * mss as u64,
            restart_after_idle: true,
            last_send: None,
            last_resent: None,
            idle_restarts: 0,
            cc: cc.build(mss as u64, init_cwnd as u64),
            rtt: RttEstimator::new(min_rto),
            snd_una: 0,
            snd_nxt: 0,
            board: VecDeque::new(),
            front_no: 0,
            sacked: RangeSet::new(),
            in_flight: 0,
            retx_queue: VecDeque::new(),
            retx_sent: VecDeque::new(),
            rack_xmit: Time::ZERO,
            loss_ptr: 0,
            sacked_below_ptr: 0,
            recovery_point: None,
            rto_recovery_point: None,
            rto_deadline: None,
            tlp_deadline: None,
            tlp_pending: false,
            tlp_out: false,
            delivered: 0,
            delivered_time: Time::ZERO,
            app_limited_until: 0,
            delivery_rate_bps: None,
            bytes_sent: 0,
            bytes_acked: 0,
            retransmitted_segments: 0,
            retransmitted_bytes: 0,
            rto_count: 0,
            tlp_probes: 0,
            penalized_at: None,
            established: true,
            scratch: Vec::new(),
        }
    }

    // ---- what schedulers read ------------------------------------------------------------

    pub fn path(&self) -> PathId {
        self.path
    }
    pub fn mss(&self) -> u32 {
        self.mss
    }
    pub fn cwnd(&self) -> u64 {
        self.cc.window()
    }
    pub fn ssthresh(&self) -> u64 {
        self.cc.ssthresh()
    }
    /// RFC 6675 pipe, bytes: segments in the pipe times SMSS (see the module doc).
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }
    pub fn segments_in_flight(&self) -> u64 {
        self.in_flight.div_ceil(self.mss as u64)
    }
    /// Room for one more full segment in the congestion window (never before the subflow is
    /// established, so that no scheduler can use it).
    pub fn has_cwnd_space(&self) -> bool {
        self.established && self.in_flight + self.mss as u64 <= self.cc.window()
    }
    /// Free congestion window, bytes (none before the subflow is established).
    pub fn cwnd_free(&self) -> u64 {
        if !self.established {
            return 0;
        }
        self.cc.window().saturating_sub(self.in_flight)
    }
    /// The subflow's handshake is complete at the sender: it may carry data.
    pub fn is_established(&self) -> bool {
        self.established
    }
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }
    pub fn rttvar(&self) -> Duration {
        self.rtt.rttvar()
    }
    pub fn min_rtt(&self) -> Option<Duration> {
        self.rtt.min_rtt()
    }
    pub fn latest_rtt(&self) -> Option<Duration> {
        self.rtt.latest()
    }
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }
    /// The pacing rate Linux computes for this subflow, bits per second
    /// (`tcp_update_pacing_rate`, net/ipv4/tcp_input.c): `mss · max(cwnd, packets_out) / srtt`
    /// times `tcp_pacing_ss_ratio` = 200% in slow start (cwnd < ssthresh / 2) and
    /// `tcp_pacing_ca_ratio` = 120% otherwise, windows in packets. Computed whether or not the
    /// subflow paces: upstream MPTCP's scheduler (`mptcp_subflow_get_send`) reads
    /// `sk_pacing_rate` either way. `None` before the first RTT sample (Linux has the
    /// handshake's sample by then; with `srtt_us == 0` it leaves the rate unbounded).
    pub fn pacing_rate_bps(&self) -> Option<f64> {
        let srtt = self.rtt.srtt()?.as_secs_f64();
        if srtt <= 0.0 {
            return None;
        }
        let mss = self.mss as u64;
        let cwnd = self.cc.window() / mss;
        let ratio = if cwnd < self.cc.ssthresh() / mss / 2 {
            2.0
        } else {
            1.2
        };
        let packets = cwnd.max(self.board.len() as u64) as f64;
        Some(ratio * packets * mss as f64 * 8.0 / srtt)
    }
    pub fn state(&self) -> SubflowState {
        if self.rto_recovery_point.is_some() {
            SubflowState::Loss
        } else if self.recovery_point.is_some() {
            SubflowState::Recovery
        } else if self.cc.in_slow_start() {
            SubflowState::SlowStart
        } else {
            SubflowState::CongestionAvoidance
        }
    }
    pub fn bytes_sent(&self) -> u64 {
        self.bytes_sent
    }
    pub fn bytes_acked(&self) -> u64 {
        self.bytes_acked
    }
    /// The latest delivery-rate sample, bits/s.
    pub fn delivery_rate_bps(&self) -> Option<f64> {
        self.delivery_rate_bps
    }
    pub fn retransmitted_segments(&self) -> u64 {
        self.retransmitted_segments
    }
    pub fn retransmitted_bytes(&self) -> u64 {
        self.retransmitted_bytes
    }
    pub fn rto_count(&self) -> u64 {
        self.rto_count
    }
    /// Tail loss probes sent.
    pub fn tlp_probes(&self) -> u64 {
        self.tlp_probes
    }
    /// Segments waiting for a retransmission on this subflow.
    pub fn has_retransmission(&self) -> bool {
        !self.retx_queue.is_empty() || self.tlp_pending
    }
    /// A tail loss probe is due; it may be sent whatever the congestion window (RFC 8985 §7.3).
    pub fn probe_pending(&self) -> bool {
        self.tlp_pending
    }
    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }
    /// Meta segments whose transmission on this subflow is outstanding (not yet acknowledged),
    /// oldest first. Used by opportunistic retransmission to find who holds a DSN.
    pub fn outstanding_meta_segs(&self) -> impl Iterator<Item = u64> + '_ {
        self.board.iter().filter(|s| !s.sacked).map(|s| s.meta_seg)
    }
    /// The earlier of the retransmission timer and the tail-loss-probe timer.
    pub fn retransmission_timer(&self) -> Option<Time> {
        match (self.rto_deadline, self.tlp_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    // ---- transmissions -------------------------------------------------------------------

    /// Send a new segment carrying meta segment `meta_seg` (`dsn`, `len`).
    pub fn send_new(&mut self, now: Time, meta_seg: u64, dsn: u64, len: u32) -> DataSegment {
        self.last_send = Some(now);
        let seg = Sent {
            seq: self.snd_nxt,
            len,
            meta_seg,
            dsn,
            sent_time: now,
            delivered_at_send: self.delivered,
            delivered_time_at_send: self.delivery_clock(now),
            app_limited: self.app_limited_until > 0,
            bif_at_send: self.in_flight,
            sacked: false,
            lost: false,
            retx_in_flight: false,
            retransmitted: false,
        };
        self.snd_nxt += len as u64;
        self.in_flight += self.mss as u64;
        self.bytes_sent += len as u64;
        self.board.push_back(seg);
        self.arm_rto_if_idle(now);
        self.arm_tlp(now);
        DataSegment {
            path: self.path,
            seq: seg.seq,
            len,
            dsn,
            ts_val: now.0,
            retransmit: false,
        }
    }

    /// Retransmit the oldest segment marked lost, if any (RFC 6675 §5 NextSeg rule 1).
    /// The caller checks the congestion window first.
    pub fn send_retransmission(&mut self, now: Time) -> Option<DataSegment> {
        if self.tlp_pending {
            self.tlp_pending = false;
            // RFC 8985 §7.3: the probe is the highest-sequence segment outstanding (we never
            // probe with new data: which data is new is the scheduler's business). It stays in
            // the pipe as it was; its new send time lets RACK judge everything sent before it.
            if let Some(i) = self.board.iter().rposition(|s| !s.sacked) {
                self.tlp_probes += 1;
                return Some(self.resend(now, i));
            }
        }
        while let Some(no) = self.retx_queue.pop_front() {
            let Some(i) = no.checked_sub(self.front_no) else {
                continue; // cumulatively acknowledged meanwhile
            };
            let Some(s) = self.board.get(i as usize) else {
                continue;
            };
            if s.sacked || !s.lost || s.retx_in_flight {
                continue;
            }
            let seg = self.resend(now, i as usize);
            // A lost segment left the pipe when it was marked; its retransmission enters it.
            self.in_flight += self.mss as u64;
            self.board[i as usize].retx_in_flight = true;
            self.retx_sent.push_back((now, no));
            self.arm_rto_if_idle(now);
            return Some(seg);
        }
        None
    }

    /// The meta-level segment the latest retransmission or tail-loss probe carried.
    pub fn last_resent_meta_seg(&self) -> Option<u64> {
        self.last_resent
    }

    /// Put board entry `i` on the wire again, restamped for RTT, RACK and rate sampling.
    fn resend(&mut self, now: Time, i: usize) -> DataSegment {
        self.last_send = Some(now);
        let (delivered, dtime, bif) = (self.delivered, self.delivery_clock(now), self.in_flight);
        let app_limited = self.app_limited_until > 0;
        let s = &mut self.board[i];
        self.last_resent = Some(s.meta_seg);
        s.retransmitted = true;
        s.sent_time = now;
        s.delivered_at_send = delivered;
        s.delivered_time_at_send = dtime;
        s.app_limited = app_limited;
        s.bif_at_send = bif;
        let len = s.len as u64;
        let seg = DataSegment {
            path: self.path,
            seq: s.seq,
            len: s.len,
            dsn: s.dsn,
            ts_val: now.0,
            retransmit: true,
        };
        self.bytes_sent += len;
        self.retransmitted_bytes += len;
        self.retransmitted_segments += 1;
        seg
    }

    /// RFC 8985 §7.2: PTO = 2·SRTT (1 s before any sample), plus the worst-case delayed-ACK
    /// time when a single segment is in flight, never later than the RTO. Only in the Open
    /// state (no recovery, no RTO episode) and once per episode.
    fn arm_tlp(&mut self, now: Time) {
        self.tlp_deadline = None;
        if self.tlp_out
            || self.board.is_empty()
            || self.recovery_point.is_some()
            || self.rto_recovery_point.is_some()
        {
            return;
        }
        let mut pto = self
            .rtt
            .srtt()
            .map_or(Duration::from_secs(1), |s| Duration(2 * s.0));
        if self.in_flight <= self.mss as u64 {
            pto = pto + Duration::from_millis(200);
        }
        let at = now + pto.max(Duration::from_millis(10));
        if self.rto_deadline.is_none_or(|r| at < r) {
            self.tlp_deadline = Some(at);
        }
    }

    fn delivery_clock(&self, now: Time) -> Time {
        // When nothing is in flight the rate sample interval restarts now (tcp_rate.c).
        if self.in_flight == 0 {
            now
        } else {
            self.delivered_time
        }
    }

    fn arm_rto_if_idle(&mut self, now: Time) {
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    // ---- acknowledgements ----------------------------------------------------------------

    /// Process one ACK. Segments it reports received for the first time are appended to
    /// `received` (so the meta level can mark them without a second pass).
    pub fn on_ack(
        &mut self,
        now: Time,
        ack: &Ack,
        coupled: CoupledView<'_>,
        received: &mut Vec<Received>,
    ) -> AckOutcome {
        let mut out = AckOutcome::default();
        let prior_in_flight = self.in_flight;
        let cum = ack.ack.min(self.snd_nxt);
        let mut newest_rate_seg: Option<(u64, Time, bool)> = None;
        let mut sack_rtt_from: Option<Time> = None;

        if let Some(echo) = ack.owd_echo {
            out.echoed = self.find_transmission(echo.seq, echo.ts_val);
        }

        // SACK blocks: only the parts not SACKed before are visited.
        let mut new_parts = std::mem::take(&mut self.scratch);
        new_parts.clear();
        for b in ack.sack_blocks() {
            let start = b.start.max(cum);
            let end = b.end.min(self.snd_nxt);
            if start < end {
                self.sacked.insert_collect(start, end, &mut new_parts);
            }
        }
        for &(s, e) in &new_parts {
            let mut i = self.index_of(s);
            while let Some(seg) = self.board.get_mut(i) {
                if seg.seq >= e {
                    break;
                }
                if !seg.sacked {
                    let pipe = seg.in_pipe();
                    seg.sacked = true;
                    let seg = *seg;
                    if pipe {
                        self.in_flight -= self.mss as u64;
                    }
                    if self.front_no + (i as u64) < self.loss_ptr {
                        self.sacked_below_ptr += seg.len as u64;
                    }
                    if !seg.retransmitted {
                        sack_rtt_from = sack_rtt_from.max(Some(seg.sent_time));
                    }
                    self.account_delivery(&seg, now, &mut newest_rate_seg, received);
                    out.newly_acked_bytes += seg.len as u64;
                    out.newly_acked_window += self.mss as u64;
                }
                i += 1;
            }
        }
        self.scratch = new_parts;

        // Cumulative ACK.
        let mut cum_advanced = false;
        if cum > self.snd_una {
            cum_advanced = true;
            self.snd_una = cum;
            while let Some(seg) = self.board.front().copied() {
                if seg.end() > cum {
                    break;
                }
                self.board.pop_front();
                let no = self.front_no;
                self.front_no += 1;
                if seg.sacked {
                    if no < self.loss_ptr {
                        self.sacked_below_ptr -= seg.len as u64;
                    }
                } else {
                    if seg.in_pipe() {
                        self.in_flight -= self.mss as u64;
                    }
                    self.account_delivery(&seg, now, &mut newest_rate_seg, received);
                    out.newly_acked_bytes += seg.len as u64;
                    out.newly_acked_window += self.mss as u64;
                }
            }
            self.sacked.remove_below(cum);
            if self.loss_ptr < self.front_no {
                self.loss_ptr = self.front_no;
                self.sacked_below_ptr = 0;
            }
        }
        self.bytes_acked += out.newly_acked_bytes;

        // RTT sample. From TSecr only when the cumulative ACK advances: a SACK-only ACK echoes
        // the TSval of the last in-order segment (RFC 7323 §4.3), which would inflate the
        // sample by the time spent waiting for the hole. For SACK-only ACKs use the send time
        // of the newest newly SACKed segment that was never retransmitted (Karn), as Linux does.
        let sample = if cum_advanced && ack.ts_ecr != 0 && ack.ts_ecr <= now.0 {
            Some(Duration(now.0 - ack.ts_ecr))
        } else {
            sack_rtt_from.map(|t| now.saturating_since(t))
        };
        if let Some(r) = sample {
            self.rtt.on_sample(r);
            out.rtt_sample = Some(r);
        }

        // Delivery rate sample from the most recently sent segment this ACK delivered.
        if let Some((delivered_at_send, t_send_clock, app_limited)) = newest_rate_seg {
            self.delivered_time = now;
            let interval = now.saturating_since(t_send_clock);
            let min_rtt = self.rtt.min_rtt().unwrap_or(Duration::ZERO);
            // Samples over less than min RTT overestimate (ACK compression); skip them.
            if interval.0 > 0 && interval >= min_rtt {
                let rate =
                    (self.delivered - delivered_at_send) as f64 * 8.0 / interval.as_secs_f64();
                out.rate_sample = Some(RateSample {
                    bps: rate,
                    app_limited,
                });
                self.delivery_rate_bps = Some(rate);
            }
        }
        // The application-limited stretch ends once everything sent during it is delivered.
        if self.app_limited_until > 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }

        // End of recovery episodes.
        if let Some(rp) = self.recovery_point {
            if self.snd_una >= rp {
                self.recovery_point = None;
                self.cc.on_recovery_end(now);
            }
        }
        if let Some(rp) = self.rto_recovery_point {
            if self.snd_una >= rp {
                self.rto_recovery_point = None;
            }
        }

        // IsLost (RFC 6675 §4) and entering recovery (§5, step 4).
        let newly_lost = self.detect_losses() | self.detect_lost_retransmissions();
        if newly_lost && self.recovery_point.is_none() && self.rto_recovery_point.is_none() {
            self.recovery_point = Some(self.snd_nxt);
            self.cc.on_congestion_event(now, prior_in_flight);
            out.entered_recovery = true;
        }

        // Not during fast recovery (cwnd is ssthresh there, RFC 6675 §5), but after an RTO yes:
        // RFC 5681 §3.1 restarts slow start from the loss window while the Loss state resends
        // the outstanding data (as Linux grows cwnd in CA_Loss). Holding cwnd at 1 SMSS until
        // everything outstanding at the timeout is acknowledged takes one RTT per segment.
        if out.newly_acked_bytes > 0 && self.recovery_point.is_none() {
            let sample = AckSample {
                acked_bytes: out.newly_acked_window,
                prior_in_flight,
                srtt: self.rtt.srtt(),
                min_rtt: self.rtt.min_rtt(),
                rtt: out.rtt_sample,
                delivered: self.delivered,
                snd_nxt: self.snd_nxt,
            };
            self.cc.on_ack(now, &sample, coupled);
        }

        // RFC 6298 §5.2/5.3: stop when all is acked, restart on new cumulative ACK.
        if self.board.is_empty() {
            self.rto_deadline = None;
        } else if cum_advanced {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        if out.newly_acked_bytes > 0 {
            self.tlp_out = false;
            self.arm_tlp(now);
        } else if self.recovery_point.is_some() {
            self.tlp_deadline = None;
        }
        out
    }

    fn account_delivery(
        &mut self,
        seg: &Sent,
        _now: Time,
        newest: &mut Option<(u64, Time, bool)>,
        received: &mut Vec<Received>,
    ) {
        self.delivered += seg.len as u64;
        self.rack_xmit = self.rack_xmit.max(seg.sent_time);
        match newest {
            Some((d, _, _)) if *d >= seg.delivered_at_send => {}
            _ => {
                *newest = Some((
                    seg.delivered_at_send,
                    seg.delivered_time_at_send,
                    seg.app_limited,
                ))
            }
        }
        received.push(Received {
            meta_seg: seg.meta_seg,
            dsn: seg.dsn,
            len: seg.len,
            sent_time: seg.sent_time,
            bif_at_send: seg.bif_at_send,
        });
    }

    /// Index in `board` of the segment containing sequence number `seq` (the first whose end
    /// is above it). The board is contiguous in sequence space and nearly all segments are
    /// full-sized, so the position `seq` would have with full segments is tried first; a
    /// binary search finds it otherwise.
    fn index_of(&self, seq: u64) -> usize {
        if let Some(front) = self.board.front() {
            let guess = (seq.saturating_sub(front.seq) / u64::from(self.mss)) as usize;
            if self
                .board
                .get(guess)
                .is_some_and(|s| s.seq <= seq && seq < s.end())
            {
                return guess;
            }
        }
        self.board.partition_point(|s| s.end() <= seq)
    }

    /// Send time and bytes-in-flight-at-send of the transmission of `seq` stamped `ts_val`
    /// (a stale echo of an earlier transmission of a retransmitted segment finds nothing).
    fn find_transmission(&self, seq: u64, ts_val: u64) -> Option<(Time, u64)> {
        let s = self.board.get(self.index_of(seq))?;
        (s.seq == seq && s.sent_time.0 == ts_val).then_some((s.sent_time, s.bif_at_send))
    }

    /// Move the IsLost pointer forward; returns whether any segment was newly marked lost.
    fn detect_losses(&mut self) -> bool {
        let threshold = (DUP_THRESH - 1) * self.mss as u64;
        let total_sacked = self.sacked.covered();
        let reo = Duration(self.rtt.min_rtt().map_or(0, |m| m.0 / 4));
        let mut any = false;
        while let Some(i) = self.loss_ptr.checked_sub(self.front_no) {
            let Some(seg) = self.board.get(i as usize).copied() else {
                break;
            };
            let own = if seg.sacked { seg.len as u64 } else { 0 };
            let above = total_sacked - self.sacked_below_ptr - own;
            // RACK (RFC 8985 §6.2): a segment sent more than reo_wnd before one that has been
            // delivered is lost too. On one subflow packets are not reordered, so this finds
            // what DupThresh cannot: losses at the tail of a flight (after a probe) and in
            // flights of fewer than DupThresh + 1 segments.
            let rack_lost = seg.sent_time + reo < self.rack_xmit;
            if above <= threshold && !rack_lost {
                break;
            }
            if !seg.sacked && !seg.lost {
                let s = &mut self.board[i as usize];
                s.lost = true;
                if !s.retx_in_flight {
                    self.in_flight -= self.mss as u64;
                }
                self.retx_queue.push_back(self.loss_ptr);
                any = true;
            }
            self.sacked_below_ptr += own;
            self.loss_ptr += 1;
        }
        any
    }

    /// RFC 8985 §6.2 applied to retransmissions, which RFC 6675's IsLost never re-judges: a
    /// retransmission is lost when a segment sent more than reo_wnd = min_RTT/4 after it has
    /// been delivered. Retransmissions are queued in send order, so this is a front scan.
    fn detect_lost_retransmissions(&mut self) -> bool {
        let reo = Duration(self.rtt.min_rtt().map_or(0, |m| m.0 / 4));
        let mut any = false;
        while let Some(&(t, no)) = self.retx_sent.front() {
            let Some(i) = no.checked_sub(self.front_no) else {
                self.retx_sent.pop_front();
                continue;
            };
            let Some(s) = self.board.get_mut(i as usize) else {
                self.retx_sent.pop_front();
                continue;
            };
            if s.sacked || !s.retx_in_flight || s.sent_time != t {
                self.retx_sent.pop_front();
                continue;
            }
            if t + reo >= self.rack_xmit {
                break;
            }
            s.retx_in_flight = false;
            self.in_flight -= self.mss as u64;
            self.retx_queue.push_back(no);
            self.retx_sent.pop_front();
            any = true;
        }
        any
    }

    // ---- timers --------------------------------------------------------------------------

    /// RFC 6298 §5.4-5.7: on expiry, back off and mark everything not SACKed as lost so it is
    /// retransmitted from the left edge; the controller collapses to the loss window.
    /// Returns true when the retransmission timer fired (a tail loss probe returns false).
    pub fn on_timeout(&mut self, now: Time) -> bool {
        if self.rto_deadline.is_none_or(|d| now < d) {
            if self.tlp_deadline.is_some_and(|d| d <= now) {
                self.tlp_deadline = None;
                self.tlp_pending = true;
                self.tlp_out = true;
            }
            return false;
        }
        self.tlp_deadline = None;
        self.tlp_pending = false;
        self.rto_count += 1;
        let first_expiry = self.rto_recovery_point.is_none();
        if first_expiry {
            self.cc.on_rto(now, self.in_flight);
        }
        self.rtt.on_rto_expired();
        self.recovery_point = None;
        self.rto_recovery_point = Some(self.snd_nxt);
        self.retx_queue.clear();
        self.retx_sent.clear();
        for (i, s) in self.board.iter_mut().enumerate() {
            if s.sacked {
                continue;
            }
            if s.in_pipe() {
                self.in_flight -= self.mss as u64;
            }
            s.lost = true;
            s.retx_in_flight = false;
            self.retx_queue.push_back(self.front_no + i as u64);
        }
        // Everything has been judged: losses found later come from a new SACK pattern.
        self.loss_ptr = self.front_no + self.board.len() as u64;
        self.sacked_below_ptr = self.sacked.covered();
        self.rto_deadline = Some(now + self.rtt.rto());
        true
    }

    /// Scheduler penalization (Linux MPTCP v0.9x `mptcp_rcv_buf_optimization`): at most once
    /// per RTT, halve the window of the subflow that holds back the connection.
    pub fn penalize(&mut self, now: Time) -> bool {
        let rtt = self.rtt.srtt().unwrap_or(Duration::from_millis(100));
        if self
            .penalized_at
            .is_some_and(|t| now.saturating_since(t) < rtt)
        {
            return false;
        }
        self.penalized_at = Some(now);
        self.cc.penalize(now);
        true
    }

    /// True when nothing is outstanding on this subflow.
    pub fn is_idle(&self) -> bool {
        self.board.is_empty()
    }
}

#[cfg(test)]
mod tests {
    //! One subflow driven through its public transitions: segments out, ACKs in, time passed in.

    use super::*;
    use crate::packet::SackBlock;

    const MSS: u32 = 1000;
    const EPOCH: Time = Time(1_000_000_000_000);

    fn ms(t: u64) -> Time {
        EPOCH + Duration::from_millis(t)
    }

    /// A Reno subflow with IW 10 and a 200 ms minimum RTO.
    fn subflow() -> SubflowSender {
        SubflowSender::new(0, CcKind::Reno, MSS, 10, Duration::from_millis(200))
    }

    /// Send segments of `lens` back to back at `t` ms.
    fn send(sf: &mut SubflowSender, t: u64, lens: &[u32]) {
        for &len in lens {
            let n = sf.snd_nxt;
            sf.send_new(ms(t), n, n, len);
        }
    }

    /// A cumulative ACK up to sequence `end` at `t` ms.
    fn ack_to(sf: &mut SubflowSender, end: u64, t: u64) -> AckOutcome {
        let ack = Ack {
            path: 0,
            ack: end,
            sack: [SackBlock::default(); 3],
            nsack: 0,
            data_ack: end,
            rwnd: 1 << 30,
            ts_ecr: ms(t.saturating_sub(50)).0,
            owd_echo: None,
        };
        sf.on_ack(ms(t), &ack, CoupledView::default(), &mut Vec::new())
    }

    /// One ACK per outstanding segment (a quick-ACK receiver) at `t` ms; with `refill`, the
    /// window is filled with full segments after each ACK, as an ACK-clocked bulk sender does.
    fn ack_all(sf: &mut SubflowSender, t: u64, refill: bool) {
        let ends: Vec<u64> = sf.board.iter().map(Sent::end).collect();
        for end in ends {
            ack_to(sf, end, t);
            while refill && sf.has_cwnd_space() {
                send(sf, t, &[MSS]);
            }
        }
    }

    /// Slow start over `rounds` ACK-clocked rounds from IW, then everything acknowledged.
    fn warm(sf: &mut SubflowSender, rounds: u64) -> u64 {
        send(sf, 0, &[MSS; 10]);
        for r in 1..=rounds {
            ack_all(sf, 100 * r, true);
        }
        ack_all(sf, 100 * (rounds + 1), false);
        100 * (rounds + 1)
    }

    #[test]
    fn short_segment_takes_a_full_slot_and_grows_slow_start_by_a_full_segment() {
        let mut sf = subflow();
        send(&mut sf, 0, &[200; 10]);
        assert_eq!(sf.in_flight(), 10 * MSS as u64, "ten segments fill IW 10");
        assert!(!sf.has_cwnd_space());
        let first = sf.board[0].end();
        ack_to(&mut sf, first, 100);
        assert_eq!(
            sf.cwnd(),
            11 * MSS as u64,
            "slow start counts segments, not 200 bytes"
        );
        assert_eq!(sf.bytes_acked(), 200, "statistics count bytes");
    }

    #[test]
    fn window_restarts_after_idle_longer_than_rto() {
        let mut sf = subflow();
        let last = warm(&mut sf, 3);
        let (cwnd, rto) = (sf.cwnd(), sf.rtt.rto());
        assert!(cwnd >= 60 * MSS as u64, "{cwnd}");
        let last_send = ms(last - 100);
        // Idle just under one RTO: nothing changes.
        sf.restart_if_idle(Time(last_send.0 + rto.0 - 1));
        assert_eq!(sf.cwnd(), cwnd);
        // Idle for 2.5 RTOs: Linux halves once per RTO beyond the first (twice); ssthresh
        // keeps at least 3/4 of the old window (here still the initial infinity).
        sf.restart_if_idle(Time(last_send.0 + rto.0 * 5 / 2));
        assert_eq!(sf.cwnd(), cwnd / 4);
        assert!(sf.ssthresh() >= cwnd / 2 + cwnd / 4);
        assert_eq!(sf.idle_restarts(), 1);
    }

    #[test]
    fn restart_never_goes_below_the_initial_window_nor_when_turned_off() {
        let mut sf = subflow();
        let last = warm(&mut sf, 3);
        sf.restart_if_idle(ms(last + 100_000));
        assert_eq!(sf.cwnd(), 10 * MSS as u64, "floor: min(IW, cwnd)");

        let mut off = subflow();
        off.set_restart_after_idle(false);
        let last = warm(&mut off, 3);
        let cwnd = off.cwnd();
        off.restart_if_idle(ms(last + 100_000));
        assert_eq!(off.cwnd(), cwnd);
    }

    #[test]
    fn rate_samples_are_app_limited_until_the_idle_stretch_is_delivered() {
        let mut sf = subflow();
        send(&mut sf, 0, &[MSS; 4]);
        // Window space left and nothing to send: data sent from here is app-limited.
        sf.mark_app_limited();
        send(&mut sf, 0, &[MSS; 2]);
        let mut flags = Vec::new();
        let ends: Vec<u64> = sf.board.iter().map(Sent::end).collect();
        for (k, end) in ends.into_iter().enumerate() {
            let out = ack_to(&mut sf, end, 100 + k as u64);
            flags.push(out.rate_sample.map(|r| r.app_limited));
        }
        assert_eq!(
            flags,
            [
                Some(false),
                Some(false),
                Some(false),
                Some(false),
                Some(true),
                Some(true)
            ]
        );
        // Delivered has passed the mark: the next flight measures the path again.
        send(&mut sf, 200, &[MSS]);
        assert!(!sf.board.back().unwrap().app_limited);
    }

    #[test]
    fn pacing_rate_is_twice_cwnd_over_srtt_in_slow_start_and_1_2_times_after() {
        // Linux tcp_update_pacing_rate: ratio 200% while cwnd < ssthresh/2, else 120%.
        let mut sf = subflow();
        assert_eq!(sf.pacing_rate_bps(), None, "no RTT sample yet");
        send(&mut sf, 0, &[MSS; 10]);
        // One RTT sample of 50 ms (ack_to echoes a TSval 50 ms old); cwnd 11 after the ACK.
        ack_to(&mut sf, MSS as u64, 50);
        let srtt = sf.srtt().unwrap().as_secs_f64();
        let expect = 2.0 * 11.0 * MSS as f64 * 8.0 / srtt;
        assert!((sf.pacing_rate_bps().unwrap() - expect).abs() < 1e-6 * expect);
        // A congestion event: Reno halves to ssthresh, so cwnd >= ssthresh/2 and 120% applies.
        sf.cc.on_congestion_event(ms(60), 20 * MSS as u64);
        let cwnd = (sf.cwnd() / MSS as u64) as f64;
        let packets = cwnd.max(sf.board.len() as f64);
        let expect = 1.2 * packets * MSS as f64 * 8.0 / srtt;
        assert!((sf.pacing_rate_bps().unwrap() - expect).abs() < 1e-6 * expect);
    }

    #[test]
    fn no_restart_with_data_outstanding() {
        let mut sf = subflow();
        let last = warm(&mut sf, 3);
        let cwnd = sf.cwnd();
        send(&mut sf, last, &[MSS; 5]);
        sf.restart_if_idle(ms(last + 100_000));
        assert_eq!(sf.cwnd(), cwnd);
    }
}
