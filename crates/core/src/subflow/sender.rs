//! The sending half of one subflow: sequence space, SACK scoreboard, loss detection, loss
//! recovery and the retransmission timer, as Linux 6.x TCP does them (`tcp_recovery = 1`,
//! `tcp_frto = 2`, `tcp_early_retrans = 3`).
//!
//! * Loss detection is RACK (RFC 8985; Linux `tcp_rack_detect_loss`, net/ipv4/tcp_recovery.c)
//!   for first transmissions and retransmissions alike: a segment is lost once a segment sent
//!   after it has been delivered and more than `rack.rtt + reo_wnd` has passed since it was
//!   sent. Segments not yet past that point wait for the reordering timer
//!   (`tcp_rack_reo_timeout`). `reo_wnd` is min_RTT/4 (at most SRTT), and 0 in recovery or once
//!   DupThresh = 3 segments are SACKed (`tcp_rack_reo_wnd`; subflows never reorder, so
//!   `reord_seen` stays 0). There is no separate duplicate-ACK count (Linux's
//!   `tcp_time_to_recover` uses it only without RACK).
//! * Fast recovery starts on the first loss RACK finds, with RecoveryPoint = SND.NXT; the
//!   controller is told once per episode and sets ssthresh; retransmissions of lost segments
//!   go before new data while pipe < cwnd (RFC 6675 §5). Through the episode the window is
//!   Proportional Rate Reduction's, as Linux sets it on every ACK (`tcp_cwnd_reduction`, RFC
//!   6937 with the slow-start reduction bound): the subflow keeps sending ssthresh/cwnd of
//!   what is delivered instead of falling silent until the pipe drops below ssthresh; at the
//!   recovery point the window is ssthresh (`tcp_end_cwnd_reduction`). See [`Prr`].
//! * One timer, as Linux's `icsk_pending`: the RTO, the reordering timer, or the tail-loss
//!   probe (`tcp_schedule_loss_probe`: PTO = 2·SRTT + 2 ms, + rto_min instead of 2 ms when one
//!   segment is out, never later than the RTO would fire; only in the Open state). The RTO is
//!   re-armed when the head is retransmitted and after a probe or reordering timeout
//!   (`tcp_rearm_rto`), and measured from the head's send time while a probe or reordering
//!   timer stands in for it (`tcp_rto_delta_us`).
//! * On an RTO (`tcp_enter_loss`): the head is marked lost, other segments only if RACK with
//!   reo_wnd = 0 deems them lost (`tcp_timeout_mark_lost`), cwnd = pipe + 1, and F-RTO
//!   (RFC 5682, Linux `tcp_process_loss`) decides whether the timeout was spurious: if the ACK
//!   advancing SND.UNA echoes a timestamp older than the first retransmission, or, after new data
//!   was sent in place of retransmissions, never-retransmitted data is (S)ACKed, the window and
//!   ssthresh are restored (`tcp_try_undo_loss`, `tcp_undo_cwnd_reduction`).
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
//! already-SACKed ranges so only newly SACKed segments are visited, and RACK walks two
//! send-time-ordered streams (first transmissions in sequence order behind a pointer that only
//! moves forward, retransmissions in a queue in send order), each stopping at its first segment
//! not yet lost, as Linux's time-sorted `tsorted_sent_queue` walk does.

use std::collections::VecDeque;

use crate::cc::{AckSample, Cached, CcKind, CongestionControl, CoupledView, HyStartMode};
use crate::packet::{Ack, DataSegment, PathId};
use crate::rangeset::RangeSet;
use crate::subflow::rtt::RttEstimator;
use crate::time::{Duration, Time};

/// Linux `tp->reordering` default (`sysctl_tcp_reordering`): RACK's reordering window closes
/// once this many segments are SACKed.
const DUP_THRESH: u64 = 3;
/// Linux `TCP_TIMEOUT_MIN` (2 jiffies at HZ = 1000): added to the probe and reordering timers.
const TIMEOUT_MIN: Duration = Duration::from_millis(2);

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
    /// Bytes in flight on this subflow just before the segment was sent (Guo et al., MobiCom 2017, §5 bins OWD
    /// samples by it).
    bif_at_send: u64,
    sacked: bool,
    lost: bool,
    /// A retransmission of this segment is in flight.
    retx_in_flight: bool,
    retransmitted: bool,
    /// The segment starts an skb of the retransmission queue (see
    /// [`SubflowSender::skb_heads_out`]).
    head: bool,
}

impl Sent {
    fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
    /// RFC 6675 pipe (Linux `tcp_packets_in_flight`): a segment counts unless SACKed, or lost
    /// and not yet retransmitted.
    fn in_pipe(&self) -> bool {
        !self.sacked && (!self.lost || self.retx_in_flight)
    }
}

/// Proportional Rate Reduction through a fast recovery, as Linux runs it (RFC 6937 with the
/// slow-start reduction bound: `tcp_init_cwnd_reduction`, `tcp_cwnd_reduction`,
/// `tcp_end_cwnd_reduction`, net/ipv4/tcp_input.c). Linux does not drop cwnd to ssthresh when
/// recovery starts (RFC 6675 §5 would): on every ACK it sets cwnd = pipe + sndcnt, sending
/// ssthresh/prior_cwnd of what is delivered while the pipe is above ssthresh and one segment
/// more per ACK below it, so the reduction spreads over one round trip and the subflow keeps
/// sending through it. Counts in segments, as the kernel's.
#[derive(Clone, Copy, Debug)]
struct Prr {
    /// `tp->prior_cwnd`: the window when recovery began, segments.
    prior_cwnd: u64,
    /// `tp->prr_delivered`: segments delivered (cumulatively or by SACK) since.
    delivered: u64,
    /// `tp->prr_out`: segments sent since (new data and retransmissions).
    out: u64,
    /// The window PRR set at the last ACK, bytes.
    cwnd: u64,
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

/// Which of Linux's mutually exclusive transmit timers is armed (`icsk_pending`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimerKind {
    /// `ICSK_TIME_RETRANS`.
    Rto,
    /// `ICSK_TIME_REO_TIMEOUT`: RACK's reordering timer.
    Reo,
    /// `ICSK_TIME_LOSS_PROBE`.
    Probe,
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

/// What to restore if an RTO turns out spurious (Linux `prior_cwnd`, `prior_ssthresh`,
/// `retrans_stamp`).
#[derive(Clone, Copy, Debug)]
struct Undo {
    prior_cwnd: u64,
    prior_ssthresh: u64,
    /// Send time of the first retransmission of the episode; `None` until it leaves.
    retrans_stamp: Option<Time>,
}

/// RACK state (RFC 8985 §6.1; Linux `tp->rack`).
#[derive(Clone, Copy, Debug, Default)]
struct Rack {
    /// RACK.xmit_ts: send time of the most recently sent segment delivered so far.
    xmit: Time,
    /// Its end sequence, to order segments sent at the same instant.
    end_seq: u64,
    /// RACK.rtt: the RTT of the latest delivery (`tcp_rack_advance`).
    rtt: Duration,
    /// A delivery moved RACK since the last loss scan.
    advanced: bool,
}

impl Rack {
    /// `tcp_skb_sent_after(rack.mstamp, t, rack.end_seq, end)`: was (t, end) sent before the
    /// most recently sent delivered segment?
    fn sent_before(&self, t: Time, end: u64) -> bool {
        t < self.xmit || (t == self.xmit && end < self.end_seq)
    }
}

#[derive(Debug)]
pub struct SubflowSender {
    path: PathId,
    mss: u32,
    /// IW, bytes: the floor of the restart window.
    initial_window: u64,
    /// Linux `tcp_rto_min`: the floor of the RTO's variance term and the probe's delayed-ACK
    /// allowance.
    min_rto: Duration,
    /// RFC 5681 §4.1 restart after idle (Linux `tcp_slow_start_after_idle`).
    restart_after_idle: bool,
    /// When data (new or retransmitted) last left (Linux `lsndtime`).
    last_send: Option<Time>,
    /// Segments in the skb the last new segment went into, and the skbs of the board that
    /// are charged a head (`sk_wmem_queued`): see [`SubflowSender::skb_heads_out`].
    skb_segs: u32,
    heads_out: u64,
    /// Meta-level segment of the latest retransmission or probe.
    last_resent: Option<u64>,
    idle_restarts: u64,
    cc: Cached,
    cc_kind: CcKind,
    init_cwnd: u32,
    /// Internal pacing (Linux `tcp_internal_pacing`, EDT model).
    pacing: bool,
    /// `TCP_NODELAY`: Nagle off.
    nodelay: bool,
    /// Earliest departure time of the next segment (Linux `tcp_wstamp_ns`).
    wstamp: Time,
    /// Pacing holds the next segment back at the time last checked.
    paced_out: bool,
    /// Segments sent, first transmissions and retransmissions (Linux `data_segs_out`).
    data_segs_out: u64,
    rtt: RttEstimator,
    snd_una: u64,
    snd_nxt: u64,
    /// End of the last sub-MSS segment sent (Linux `snd_sml`, `tcp_minshall_update`).
    snd_sml: u64,
    /// Scoreboard in sequence order; `front_no` is the absolute number of `board[0]`.
    board: VecDeque<Sent>,
    front_no: u64,
    sacked: RangeSet,
    /// Segments on the board SACKed (Linux `sacked_out`).
    sacked_out: u64,
    /// Segments marked lost and not yet retransmitted (Linux `lost_out`, minus retransmitted).
    lost_out: u64,
    in_flight: u64,
    /// Absolute numbers of segments marked lost and awaiting retransmission, in order.
    retx_queue: VecDeque<u64>,
    /// Retransmissions in the order sent: (send time, absolute number), RACK's second stream.
    retx_sent: VecDeque<(Time, u64)>,
    rack: Rack,
    /// RACK's pointer over first transmissions: every segment numbered below it is SACKed,
    /// lost or retransmitted (judged, or in the retransmission stream).
    loss_ptr: u64,
    recovery_point: Option<u64>,
    /// PRR's state and window while in fast recovery ([`Prr`]); the controller's window
    /// otherwise.
    prr: Option<Prr>,
    /// [`SubflowSender::cwnd`] while the subflow is established and pacing holds nothing back,
    /// else 0: room for one more segment is `in_flight + mss <= space_limit`. Kept up to date
    /// wherever the controller, PRR, the handshake or pacing change (`sync_space`), because
    /// [`SubflowSender::has_cwnd_space`] is asked of every subflow several times per packet
    /// (issue "Speed at scale": three tests and PRR's window choice per call, at 8 paths over
    /// a hundred instructions per data packet).
    space_limit: u64,
    /// Segments ever marked lost (Linux `tp->lost`), for PRR's `newly_lost`.
    lost_marks: u64,
    /// Loss state (after an RTO): Linux `high_seq`; the state lasts until it is acknowledged.
    rto_recovery_point: Option<u64>,
    /// F-RTO is still deciding whether the timeout was spurious (Linux `tp->frto`).
    frto: bool,
    /// F-RTO step 2.b: new data goes before retransmissions until the next ACK.
    frto_new_data: bool,
    /// Consecutive RTO expiries without SND.UNA advancing (Linux `icsk_retransmits`).
    timeouts: u32,
    undo: Option<Undo>,
    /// The armed transmit timer (Linux has one per socket).
    timer: Option<(TimerKind, Time)>,
    /// The earlier of the transmit timer and the pacing release, ns (`u64::MAX`: neither),
    /// kept wherever either changes ([`SubflowSender::next_deadline`]).
    deadline: u64,
    /// A tail loss probe is due and may be sent whatever the window.
    tlp_pending: bool,
    /// SND.NXT when the last probe was sent; no second probe until it is acknowledged (Linux
    /// `tlp_high_seq`).
    tlp_high_seq: Option<u64>,
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
    /// RFC 7323 TS.Recent of this end: the newest ACK's TSval, echoed in data as TSecr.
    peer_ts: u64,
    retransmitted_bytes: u64,
    rto_count: u64,
    spurious_rtos: u64,
    tlp_probes: u64,
    /// The last ACK's arrival (Linux `tp->rcv_tstamp`), and the send that ended the last idle
    /// stretch (nothing outstanding before it): where a silence is counted from
    /// ([`Self::silence_deadline`]).
    last_ack_at: Option<Time>,
    busy_since: Time,
    /// No ACK for one probe timeout while data is outstanding ([`Self::mark_silent`]); the
    /// next ACK clears it.
    silent: bool,
    /// The server side of the subflow's handshake is complete: until then no data may go on
    /// it (see [`SubflowSender::set_pending`]).
    established: bool,
    /// Reused buffer for newly SACKed ranges (no allocation per ACK).
    scratch: Vec<(u64, u64)>,
    // Congestion-window validation, as Linux tracks it (`tcp_cwnd_validate`).
    /// Linux `tp->is_cwnd_limited`: a transmit attempt within the current window of data
    /// ended with the congestion window full.
    is_cwnd_limited: bool,
    /// Linux `tp->max_packets_out`: the most segments outstanding (`packets_out`: sent and
    /// not cumulatively acknowledged) at a transmit attempt within the current window of data.
    max_packets_out: u64,
    /// Linux `tp->cwnd_usage_seq`: SND.NXT when the current window of data began; once SND.UNA
    /// reaches it the next transmit attempt starts a new one.
    cwnd_usage_seq: u64,
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
    /// True when the window restarted.
    pub fn restart_if_idle(&mut self, now: Time) -> bool {
        if !self.restart_after_idle || !self.board.is_empty() {
            return false;
        }
        let Some(last) = self.last_send else {
            return false;
        };
        let idle = now.saturating_since(last);
        let rto = self.rtt.rto();
        if idle > rto {
            let initial = self.initial_window;
            self.update_cc(|cc| cc.restart_after_idle(now, idle, rto, initial));
            self.idle_restarts += 1;
            // One restart per idle period: the next one is measured from here.
            self.last_send = Some(now);
            return true;
        }
        false
    }

    /// The subflow has window space and the connection gives it nothing to send: rate samples
    /// of the data in flight now, and of what is sent until it is delivered, are
    /// application-limited (Linux `tcp_rate_check_app_limited`). F-RTO waiting for new data
    /// falls back to retransmitting (`tcp_process_loss`: no new data to send).
    pub fn mark_app_limited(&mut self) {
        if self.frto_new_data {
            self.end_frto_wait();
        }
        if self.has_cwnd_space() {
            self.app_limited_until = (self.delivered + self.in_flight).max(1);
        }
    }

    /// F-RTO step 2.b could not send new data (Linux `tcp_xmit_recovery`: the push left
    /// `snd_nxt` where it was, so `frto = 0`): the retransmissions it held back may go.
    pub fn end_frto_wait(&mut self) {
        self.frto_new_data = false;
        self.frto = false;
    }

    /// F-RTO (RFC 5682 §3.1 step 2.b) holds retransmissions back until new data is sent; a
    /// connection with none to give calls [`SubflowSender::mark_app_limited`], which releases them.
    pub fn frto_waits_for_new_data(&self) -> bool {
        self.frto_new_data
    }

    /// CUBIC's slow-start exit (`transport.hystart`). Rebuilds the controller: call it before
    /// any traffic.
    pub fn set_hystart(&mut self, mode: HyStartMode) {
        self.cc = Cached::new(self.cc_kind.build_with(
            self.mss as u64,
            self.init_cwnd as u64,
            mode,
        ));
        let pacing = self.pacing;
        self.update_cc(|cc| cc.set_pacing(pacing));
    }

    /// Internal pacing (`transport.pacing`): segments leave no faster than
    /// [`SubflowSender::pacing_rate_bps`], as Linux's EDT pacing spaces them
    /// (`tcp_update_skb_after_send`).
    pub fn set_pacing(&mut self, on: bool) {
        self.pacing = on;
        self.update_cc(|cc| cc.set_pacing(on));
    }

    /// `TCP_NODELAY` (`transport.nodelay`): [`SubflowSender::nagle_holds`] never holds.
    pub fn set_nodelay(&mut self, on: bool) {
        self.nodelay = on;
    }

    /// Re-check pacing at `now` (the connection calls this before it sends): while the next
    /// departure time is in the future the subflow offers no window
    /// ([`SubflowSender::has_cwnd_space`] is false) and sends no retransmission.
    pub fn update_pacing(&mut self, now: Time) {
        if self.pacing {
            self.paced_out = self.wstamp > now;
            self.sync_space();
            self.sync_deadline();
        }
    }

    /// Pacing lets a segment leave now (as of the last [`SubflowSender::update_pacing`]).
    pub fn pacing_allows(&self) -> bool {
        !self.paced_out
    }

    /// When pacing next lets a segment leave, if it is holding one back now.
    pub fn pacing_release_time(&self) -> Option<Time> {
        self.paced_out.then_some(self.wstamp)
    }

    /// Linux `__tcp_transmit_skb` + `tcp_update_skb_after_send`: the departure time never lags
    /// the clock; each segment from the tenth on pushes the next one len/rate later, less up to
    /// half of that for time the sender spent idle (`credit`, OS-jitter allowance).
    fn after_send(&mut self, now: Time, len: u32) {
        if !self.pacing {
            return;
        }
        self.data_segs_out += 1;
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        if let Some(rate) = self.pacing_rate_bps() {
            if self.data_segs_out >= 10 && rate > 0.0 {
                // skb->len: payload and a TCP header with the timestamp option (32 bytes).
                let len_ns = ((len as f64 + 32.0) * 8e9 / rate) as u64;
                let credit = self.wstamp.0 - prior.0;
                self.wstamp = Time(self.wstamp.0 + len_ns - (len_ns / 2).min(credit));
            }
        }
        self.paced_out = self.wstamp > now;
        self.sync_space();
        self.sync_deadline();
    }

    /// The subflow exists but its handshake has not completed at the sender (the server): it
    /// has no window to offer until [`SubflowSender::establish`].
    pub fn set_pending(&mut self) {
        self.established = false;
        self.sync_space();
    }

    /// The handshake completed at `now`. `handshake_rtt`, the time from the SYN/ACK to the
    /// peer's ACK, is the subflow's first RTT sample, as Linux takes it on the passive side
    /// (`tcp_synack_rtt_meas`, net/ipv4/tcp_input.c).
    pub fn establish(&mut self, handshake_rtt: Option<Duration>) {
        self.established = true;
        self.sync_space();
        if let Some(r) = handshake_rtt {
            self.rtt.on_sample(r, self.snd_una, self.snd_nxt);
        }
    }

    pub fn idle_restarts(&self) -> u64 {
        self.idle_restarts
    }

    pub fn new(path: PathId, cc: CcKind, mss: u32, init_cwnd: u32, min_rto: Duration) -> Self {
        let mut sf = SubflowSender {
            path,
            mss,
            initial_window: init_cwnd.max(1) as u64 * mss as u64,
            min_rto,
            restart_after_idle: true,
            last_send: None,
            skb_segs: 0,
            heads_out: 0,
            last_resent: None,
            idle_restarts: 0,
            cc: Cached::new(cc.build(mss as u64, init_cwnd as u64)),
            cc_kind: cc,
            init_cwnd,
            pacing: false,
            nodelay: false,
            wstamp: Time::ZERO,
            paced_out: false,
            data_segs_out: 0,
            rtt: RttEstimator::new(min_rto),
            snd_una: 0,
            snd_nxt: 0,
            snd_sml: 0,
            board: VecDeque::new(),
            front_no: 0,
            sacked: RangeSet::new(),
            sacked_out: 0,
            lost_out: 0,
            in_flight: 0,
            retx_queue: VecDeque::new(),
            retx_sent: VecDeque::new(),
            rack: Rack::default(),
            loss_ptr: 0,
            recovery_point: None,
            prr: None,
            lost_marks: 0,
            rto_recovery_point: None,
            frto: false,
            frto_new_data: false,
            timeouts: 0,
            undo: None,
            timer: None,
            deadline: u64::MAX,
            tlp_pending: false,
            tlp_high_seq: None,
            delivered: 0,
            delivered_time: Time::ZERO,
            app_limited_until: 0,
            delivery_rate_bps: None,
            bytes_sent: 0,
            bytes_acked: 0,
            retransmitted_segments: 0,
            peer_ts: 0,
            retransmitted_bytes: 0,
            rto_count: 0,
            spurious_rtos: 0,
            tlp_probes: 0,
            last_ack_at: None,
            busy_since: Time::ZERO,
            silent: false,
            established: true,
            scratch: Vec::new(),
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            space_limit: 0,
        };
        sf.sync_space();
        sf
    }

    /// Bring [`SubflowSender::space_limit`] up to date after a change of the window, the
    /// handshake or pacing.
    #[inline]
    fn sync_space(&mut self) {
        self.space_limit = if self.established && !self.paced_out {
            self.cwnd()
        } else {
            0
        };
    }

    /// Tell the controller something (a [`Cached::update`]), and keep the space limit.
    #[inline]
    fn update_cc<R>(&mut self, f: impl FnOnce(&mut dyn CongestionControl) -> R) -> R {
        let r = self.cc.update(f);
        self.sync_space();
        r
    }

    // ---- what schedulers read ------------------------------------------------------------

    pub fn path(&self) -> PathId {
        self.path
    }
    pub fn mss(&self) -> u32 {
        self.mss
    }
    /// The controller's loss interval (OLIA's `l`; 0 for controllers without one).
    pub fn loss_interval(&self) -> u64 {
        self.cc.loss_interval()
    }

    /// The congestion window, bytes: PRR's during fast recovery, the controller's otherwise
    /// (Linux `tcp_snd_cwnd`).
    pub fn cwnd(&self) -> u64 {
        match self.prr {
            Some(p) => p.cwnd,
            None => self.cc.window(),
        }
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
    /// Payload bytes sent and not cumulatively acknowledged (`snd_nxt − snd_una`): the
    /// retransmission queue, SACKed and lost segments included.
    pub fn outstanding_bytes(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }
    /// Segments sent and not cumulatively acknowledged (Linux `tp->packets_out`).
    pub fn packets_out(&self) -> u64 {
        self.board.len() as u64
    }
    /// Skbs of the retransmission queue that hold an un-SACKed segment, each charged its own
    /// head in `sk_wmem_queued`. `tcp_write_xmit` (net/ipv4/tcp_output.c) cuts what leaves at
    /// one instant into skbs of [`SubflowSender::tso_segs`] segments (`tso_fragment`; TCP
    /// always builds GSO skbs since Linux 4.19, whatever the device offloads), so one skb per
    /// segment when each ACK lets one out, and two per skb when ACKs free two or a burst
    /// leaves at once. Partly acknowledged skbs stay (`tcp_trim_head`); SACKed ones are merged
    /// into their predecessors (`tcp_shift_skb_data`).
    pub fn skb_heads_out(&self) -> u64 {
        debug_assert_eq!(
            self.heads_out,
            self.board.iter().filter(|s| s.head && !s.sacked).count() as u64
        );
        self.heads_out
    }
    /// `tcp_tso_segs` → `tcp_tso_autosize`: about a millisecond at the pacing rate
    /// (`sk_pacing_rate >> sk_pacing_shift`), at least `tcp_min_tso_segs` = 2 segments. (The
    /// minimum-RTT bonus, `sk_gso_max_size >> (min_rtt_us >> tcp_tso_rtt_log)`, adds nothing
    /// above 16 ms.)
    pub fn tso_segs(&self) -> u32 {
        let per_ms = self.pacing_rate_bps().map_or(0.0, |b| b / 8.0 / 1024.0) as u64;
        (per_ms / u64::from(self.mss)).max(2) as u32
    }
    /// `tcp_tso_should_defer` (net/ipv4/tcp_output.c): whether an unsent skb of more than one
    /// segment waits for the next ACK instead of leaving now with less than a full skb.
    /// `snd_wnd` is the peer's window and `send_win` what it leaves from this subflow's next
    /// byte (`tcp_wnd_end − seq`). Linux defers
    /// only outside recovery, when the last transmission was within a millisecond, the window
    /// has room for less than [`SubflowSender::tso_segs`] segments and less than a third of
    /// itself (`tcp_tso_win_divisor` = 3), and the oldest unacknowledged segment left at least
    /// half an sRTT ago (so the next ACK is not far off). On a constant-rate link ACKs come
    /// more than a millisecond apart and nothing defers; behind a link that delivers in
    /// bursts (a trace link) ACKs bunch, and an ACK that frees a single segment leaves it
    /// unsent until the next.
    pub fn tso_defers(&self, now: Time, snd_wnd: u64, send_win: u64) -> bool {
        if self.recovery_point.is_some() || self.in_loss() {
            return false;
        }
        let Some(last) = self.last_send else {
            return false;
        };
        if now.saturating_since(last) > Duration::from_millis(1) {
            return false;
        }
        let cwnd = self.cwnd();
        let limit = send_win.min(cwnd.saturating_sub(self.in_flight));
        if limit == 0 || limit >= snd_wnd.min(cwnd) / 3 {
            return false;
        }
        let tso_segs = self.tso_segs();
        // The segment goes into the skb leaving at this instant, which the window already
        // let out whole (the kernel decides per skb); or a full skb fits.
        if (last == now && self.skb_segs < tso_segs)
            || limit >= u64::from(tso_segs) * u64::from(self.mss)
        {
            return false;
        }
        match (self.board.front(), self.rtt.srtt()) {
            (Some(head), Some(srtt)) => now.saturating_since(head.sent_time).0 >= srtt.0 / 2,
            _ => false,
        }
    }
    /// Segments on the board SACKed (Linux `tp->sacked_out`).
    pub fn sacked_segments(&self) -> u64 {
        self.sacked_out
    }
    /// Nagle's algorithm with Minshall's rule holds back a new segment of `len` bytes as the
    /// last one queued (`tcp_nagle_test` → `tcp_nagle_check`, net/ipv4/tcp_output.c, with
    /// `TCP_NODELAY` off, Linux's default): a sub-MSS segment waits while data is in flight and
    /// the previous sub-MSS segment is not yet acknowledged (`tcp_minshall_check`).
    pub fn nagle_holds(&self, len: u32) -> bool {
        !self.nodelay
            && len < self.mss
            && !self.board.is_empty()
            && self.snd_sml > self.snd_una
            && self.snd_sml <= self.snd_nxt
    }
    /// Room for one more full segment in the congestion window (never before the subflow is
    /// established, so that no scheduler can use it, nor while pacing holds it back).
    #[inline]
    pub fn has_cwnd_space(&self) -> bool {
        // `mss` is never 0, so a limit of 0 leaves no room.
        let space = self.in_flight + self.mss as u64 <= self.space_limit;
        debug_assert_eq!(
            space,
            self.established && !self.cwnd_full() && !self.paced_out,
            "space_limit out of date"
        );
        space
    }
    /// Free congestion window, bytes (none before the subflow is established).
    pub fn cwnd_free(&self) -> u64 {
        if !self.established {
            return 0;
        }
        self.cwnd().saturating_sub(self.in_flight)
    }
    /// The congestion window has no room for one more full segment (Linux
    /// `tcp_packets_in_flight(tp) >= tcp_snd_cwnd(tp)`, windows in packets), pacing aside.
    fn cwnd_full(&self) -> bool {
        self.in_flight + self.mss as u64 > self.cwnd()
    }

    /// Linux `tcp_cwnd_validate` (net/ipv4/tcp_output.c), which `tcp_write_xmit` calls after
    /// its send loop when it sent something or the window is full, with `is_cwnd_limited` =
    /// the window is full now (the loop stopped on `tcp_cwnd_test`, or filled it). The state
    /// covers one window of data: a new window starts at the first attempt after SND.UNA
    /// passed `cwnd_usage_seq`; within one, a cwnd-limited attempt is remembered, and until
    /// there is one the largest `packets_out` is.
    fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        let packets_out = self.board.len() as u64;
        if self.snd_una >= self.cwnd_usage_seq
            || is_cwnd_limited
            || (!self.is_cwnd_limited && packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = is_cwnd_limited;
            self.max_packets_out = packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// The connection has data for this subflow (its write queue, or the scheduler's pick)
    /// that the congestion window holds back: Linux's `tcp_write_xmit` on a subflow with a
    /// send head and a full window sends nothing and calls `tcp_cwnd_validate(sk, true)`.
    /// Does nothing when the window is not full (pacing, Nagle or the peer's window held the
    /// data back: not cwnd-limited). A subflow the scheduler does not pick is never asked to
    /// transmit in Linux either, and must not be marked.
    pub fn note_blocked_by_cwnd(&mut self) {
        if self.established && self.cwnd_full() {
            self.cwnd_validate(true);
        }
    }

    /// Linux `tcp_is_cwnd_limited` (include/net/tcp.h): the window was full at a transmit
    /// attempt within the current window of data, or, in slow start, cwnd < 2 ·
    /// `max_packets_out` (the window may grow to twice what was in use). What the Linux
    /// controllers read before growing (`AckSample::cwnd_limited`).
    pub fn is_cwnd_limited(&self) -> bool {
        self.is_cwnd_limited
            || (self.cc.in_slow_start() && self.cwnd() < 2 * self.max_packets_out * self.mss as u64)
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
        let cwnd = self.cwnd() / mss;
        let ratio = if cwnd < self.cc.ssthresh() / mss / 2 {
            2.0
        } else {
            1.2
        };
        let packets = cwnd.max(self.board.len() as u64) as f64;
        Some(ratio * packets * mss as f64 * 8.0 / srtt)
    }
    /// In RTO recovery (`TCP_CA_Loss`): [`SubflowSender::state`]'s first case alone (the
    /// others ask the controller, a virtual call, and availability checks need only this).
    pub fn in_loss(&self) -> bool {
        self.rto_recovery_point.is_some()
    }
    pub fn state(&self) -> SubflowState {
        if self.in_loss() {
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
    /// RTOs that F-RTO or the timestamps showed to be spurious, and undid.
    pub fn spurious_rtos(&self) -> u64 {
        self.spurious_rtos
    }
    /// Tail loss probes sent.
    pub fn tlp_probes(&self) -> u64 {
        self.tlp_probes
    }
    /// Segments waiting for a retransmission on this subflow (none while F-RTO lets new data
    /// go first).
    /// Whether the connection's per-poll pass has anything to do here: pacing to bring up to
    /// the clock, a restart after idle that may be due (nothing outstanding, something sent
    /// before), or a retransmission to send. A function of the subflow's state alone, so the
    /// connection reads it again after each call that may change that state.
    pub fn wants_poll(&self) -> bool {
        self.pacing
            || (self.restart_after_idle && self.board.is_empty() && self.last_send.is_some())
            || self.has_retransmission()
    }
    pub fn has_retransmission(&self) -> bool {
        (!self.frto_new_data && self.lost_out > 0) || self.tlp_pending
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
    /// When the subflow's transmit timer (RTO, reordering timer or tail-loss probe) fires.
    pub fn retransmission_timer(&self) -> Option<Time> {
        self.timer.map(|(_, t)| t)
    }

    /// The earlier of [`SubflowSender::retransmission_timer`] and
    /// [`SubflowSender::pacing_release_time`], ns, `u64::MAX` for neither: one load for the
    /// connection's `poll_timeout`, which asks every subflow after every event (issue "Speed
    /// at scale": two optional instants and their minimum per subflow were about 80
    /// instructions per data packet at 8 paths). No instant reaches `u64::MAX` ns.
    #[inline]
    pub fn next_deadline(&self) -> u64 {
        debug_assert_eq!(
            self.deadline,
            [self.retransmission_timer(), self.pacing_release_time()]
                .into_iter()
                .flatten()
                .map(|t| t.0)
                .min()
                .unwrap_or(u64::MAX),
            "deadline out of date"
        );
        self.deadline
    }

    /// Arm (or with `None` stop) the transmit timer.
    #[inline]
    fn set_timer(&mut self, timer: Option<(TimerKind, Time)>) {
        self.timer = timer;
        self.sync_deadline();
    }

    /// Bring [`SubflowSender::next_deadline`] up to date after the timer or pacing changed.
    #[inline]
    fn sync_deadline(&mut self) {
        let timer = self.timer.map_or(u64::MAX, |(_, t)| t.0);
        let release = if self.paced_out {
            self.wstamp.0
        } else {
            u64::MAX
        };
        debug_assert!(timer.min(release) < u64::MAX || self.timer.is_none() && !self.paced_out);
        self.deadline = timer.min(release);
    }

    // ---- transmissions -------------------------------------------------------------------

    /// Send a new segment carrying meta segment `meta_seg` (`dsn`, `len`).
    pub fn send_new(&mut self, now: Time, meta_seg: u64, dsn: u64, len: u32) -> DataSegment {
        // CA_EVENT_TX_START (`tcp_transmit_skb` with nothing in flight): Linux CUBIC keeps its
        // epoch on the curve across the pause.
        if let (true, Some(last)) = (self.board.is_empty(), self.last_send) {
            self.update_cc(|cc| cc.on_tx_start(now, now.saturating_since(last)));
        }
        // `tcp_write_xmit` cuts what it sends at once into skbs of up to `tcp_tso_segs`
        // segments (`tso_fragment`); a send at another instant starts a new one.
        // (`tso_segs` is at least two: a pacing-rate computation only from the third segment.)
        let head =
            self.last_send != Some(now) || (self.skb_segs >= 2 && self.skb_segs >= self.tso_segs());
        self.skb_segs = if head { 1 } else { self.skb_segs + 1 };
        self.last_send = Some(now);
        let prior_packets = self.board.len();
        if prior_packets == 0 {
            self.busy_since = now;
        }
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
            head,
        };
        self.heads_out += u64::from(head);
        self.snd_nxt += len as u64;
        if len < self.mss {
            self.snd_sml = self.snd_nxt;
        }
        self.in_flight += self.mss as u64;
        self.bytes_sent += len as u64;
        self.board.push_back(seg);
        if let Some(p) = self.prr.as_mut() {
            p.out += 1;
        }
        self.after_send(now, len);
        // F-RTO step 2.b: the new data is out; retransmissions are decided by the next ACK.
        self.frto_new_data = false;
        // tcp_event_new_data_sent: the RTO starts with the first segment out, and takes over
        // from a pending probe; tcp_write_xmit then schedules the probe again. In the Open
        // state the probe replaces that RTO at once (it reads neither the timer nor anything
        // arming the RTO changes), so the RTO is only armed outside it: two RTO computations
        // per segment saved.
        if self.is_open() {
            let probe = self.schedule_loss_probe(now, false);
            debug_assert!(probe, "the board holds the segment just sent");
        } else if prior_packets == 0 || self.timer_is(TimerKind::Probe) {
            self.rearm_rto(now);
        }
        // tcp_write_xmit after its loop: `is_cwnd_limited |= packets in flight >= cwnd`, then
        // tcp_cwnd_validate. One call per segment leaves the state one call per loop would
        // (within a window the largest `packets_out` and any full window are kept).
        self.cwnd_validate(self.cwnd_full());
        DataSegment {
            path: self.path,
            seq: seg.seq,
            len,
            dsn,
            ts_val: now.0,
            ts_ecr: self.peer_ts,
            retransmit: false,
        }
    }

    /// Retransmit the oldest segment marked lost, if any (RFC 6675 §5 NextSeg rule 1), or the
    /// tail loss probe. The caller checks the congestion window first (not for a probe).
    pub fn send_retransmission(&mut self, now: Time) -> Option<DataSegment> {
        if self.tlp_pending {
            self.tlp_pending = false;
            // RFC 8985 §7.3, `tcp_send_loss_probe`: the probe is the highest-sequence segment
            // (we never probe with new data: which data is new is the scheduler's business).
            // It is a retransmission like any other for RACK; the RTO restarts from it.
            if let Some(i) = self.board.iter().rposition(|s| !s.sacked) {
                self.tlp_probes += 1;
                let seg = self.resend(now, i);
                let s = &mut self.board[i];
                if !s.retx_in_flight {
                    if !s.in_pipe() {
                        self.in_flight += self.mss as u64;
                    }
                    if s.lost {
                        s.lost = false;
                        self.lost_out -= 1;
                    }
                    s.retx_in_flight = true;
                }
                self.retx_sent.push_back((now, self.front_no + i as u64));
                self.tlp_high_seq = Some(self.snd_nxt);
                self.set_timer(None);
                self.rearm_rto(now);
                return Some(seg);
            }
        }
        if self.frto_new_data {
            return None;
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
            self.lost_out -= 1;
            self.board[i as usize].retx_in_flight = true;
            self.retx_sent.push_back((now, no));
            if let Some(u) = self.undo.as_mut() {
                u.retrans_stamp.get_or_insert(now);
            }
            // tcp_xmit_retransmit_queue: retransmitting the head re-arms the RTO (unless the
            // reordering timer stands in for it); a timer is always armed while data is out.
            if (i == 0 && !self.timer_is(TimerKind::Reo)) || self.timer.is_none() {
                self.rearm_rto(now);
            }
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
        // The retransmitted skb goes out on its own; new data after it starts another.
        self.skb_segs = u32::MAX;
        if let Some(p) = self.prr.as_mut() {
            p.out += 1;
        }
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
            ts_ecr: self.peer_ts,
            retransmit: true,
        };
        self.bytes_sent += len;
        self.retransmitted_bytes += len;
        self.retransmitted_segments += 1;
        self.after_send(now, len as u32);
        seg
    }

    fn delivery_clock(&self, now: Time) -> Time {
        // When nothing is in flight the rate sample interval restarts now (tcp_rate.c).
        if self.in_flight == 0 {
            now
        } else {
            self.delivered_time
        }
    }

    // ---- timers --------------------------------------------------------------------------

    fn timer_is(&self, kind: TimerKind) -> bool {
        self.timer.is_some_and(|(k, _)| k == kind)
    }

    /// Linux `tcp_rto_delta_us`: how long until the RTO fires when measured from the head's
    /// (latest) transmission, nanoseconds; negative when overdue.
    fn rto_delta(&self, now: Time) -> i128 {
        let head = self.board.front().map_or(now, |s| s.sent_time);
        self.rtt.rto().0 as i128 - now.saturating_since(head).0 as i128
    }

    /// Linux `tcp_rearm_rto`: stop the timer when nothing is outstanding, else arm the RTO;
    /// when a probe or reordering timer was standing in for it, the RTO keeps counting from
    /// the head's transmission.
    fn rearm_rto(&mut self, now: Time) {
        if self.board.is_empty() {
            self.set_timer(None);
            return;
        }
        let mut rto = self.rtt.rto();
        if self.timer_is(TimerKind::Reo) || self.timer_is(TimerKind::Probe) {
            rto = Duration(self.rto_delta(now).max(1_000) as u64);
        }
        self.set_timer(Some((TimerKind::Rto, now + rto)));
    }

    /// The Open state (Linux `TCP_CA_Open`): no recovery, no RTO episode, nothing SACKed,
    /// lost or being retransmitted (any of those is at least `TCP_CA_Disorder`).
    fn is_open(&self) -> bool {
        self.recovery_point.is_none()
            && self.rto_recovery_point.is_none()
            && self.sacked_out == 0
            && self.lost_out == 0
            && self.retx_sent.is_empty()
    }

    /// The probe timeout of `tcp_schedule_loss_probe` before its cap by the RTO: 2·SRTT, plus
    /// rto_min when a single segment is out (its ACK may be delayed), else `TCP_TIMEOUT_MIN`;
    /// 1 s before any RTT sample.
    fn pto(&self) -> Duration {
        match self.rtt.srtt() {
            Some(s) => {
                let extra = if self.board.len() == 1 {
                    self.min_rto
                } else {
                    TIMEOUT_MIN
                };
                Duration(2 * s.0) + extra
            }
            None => Duration::from_secs(1),
        }
    }

    /// When this subflow turns silent: one probe timeout ([`Self::pto`]) after the later of
    /// its last ACK and the send that ended its last idle stretch, while data is outstanding;
    /// `None` with nothing outstanding or once silent. Unlike the probe timer itself this runs
    /// in every congestion state (Linux arms no probe outside `TCP_CA_Open`, so a path that
    /// fails during fast recovery would otherwise show nothing until its RTO) and is not
    /// pushed back by further sends: new data going out is no sign of life.
    pub fn silence_deadline(&self) -> Option<Time> {
        if self.board.is_empty() || self.silent {
            return None;
        }
        let since = self
            .last_ack_at
            .map_or(self.busy_since, |a| a.max(self.busy_since));
        Some(since + self.pto())
    }

    /// When the last ACK arrived (Linux `tp->rcv_tstamp`).
    pub fn last_ack_at(&self) -> Option<Time> {
        self.last_ack_at
    }

    /// The silence deadline passed: the subflow stays silent until its next ACK.
    pub fn mark_silent(&mut self) {
        self.silent = true;
    }

    /// No ACK for a probe timeout while data is outstanding (set by [`Self::mark_silent`] for
    /// schedulers that watch for it, [`crate::sched::Scheduler::watches_silence`]).
    pub fn silent(&self) -> bool {
        self.silent
    }

    /// Linux `tcp_schedule_loss_probe` (RFC 8985 §7.2): PTO = 2·SRTT, plus rto_min when a
    /// single segment is out (its ACK may be delayed) and `TCP_TIMEOUT_MIN` otherwise, 1 s
    /// before any sample; never later than the RTO (the full RTO when an ACK just advanced it,
    /// else what is left of it from the head's transmission). Only in the Open state.
    fn schedule_loss_probe(&mut self, now: Time, advancing_rto: bool) -> bool {
        if self.board.is_empty() || !self.is_open() {
            return false;
        }
        let mut pto = self.pto();
        let rto_delta = if advancing_rto {
            self.rtt.rto().0 as i128
        } else {
            self.rto_delta(now)
        };
        if rto_delta > 0 {
            pto = pto.min(Duration(rto_delta as u64));
        }
        self.set_timer(Some((TimerKind::Probe, now + pto)));
        true
    }

    /// The transmit timer fired at `now` (the caller checks it is due). Returns true when it
    /// was the retransmission timeout (a probe or the reordering timer returns false).
    pub fn on_timeout(&mut self, now: Time) -> bool {
        let Some((kind, at)) = self.timer else {
            return false;
        };
        if now < at {
            return false;
        }
        // tcp_write_timer_handler clears icsk_pending before running the handler.
        self.set_timer(None);
        match kind {
            TimerKind::Reo => {
                self.rack_reo_timeout(now);
                false
            }
            TimerKind::Probe => {
                // tcp_send_loss_probe: at most one probe outstanding; otherwise the RTO.
                if self.tlp_high_seq.is_some() || self.board.is_empty() {
                    self.rearm_rto(now);
                } else {
                    self.tlp_pending = true;
                    // Armed again when the probe leaves; until then the RTO guards.
                    self.rearm_rto(now);
                }
                false
            }
            TimerKind::Rto => {
                if self.board.is_empty() {
                    return false;
                }
                self.enter_loss(now);
                true
            }
        }
    }

    /// Linux `tcp_rack_reo_timeout`: judge the waiting segments; if any is lost, enter
    /// recovery; re-arm the RTO from now.
    fn rack_reo_timeout(&mut self, now: Time) {
        let (prior_lost, prior_in_flight) = (self.lost_out, self.in_flight);
        let prior_marks = self.lost_marks;
        self.rack_detect_loss(now);
        if self.lost_out > prior_lost
            && self.recovery_point.is_none()
            && self.rto_recovery_point.is_none()
        {
            self.enter_recovery(now, prior_in_flight);
            // `tcp_rack_reo_timeout`: one PRR step as if one segment was delivered.
            self.prr_on_ack(1, self.lost_marks - prior_marks, false);
        }
        if !self.timer_is(TimerKind::Rto) {
            self.rearm_rto(now);
        }
    }

    /// Fast recovery begins; the controller reduces from `flight`, the pipe before the losses
    /// were marked (RFC 9438 §4.6 / RFC 5681 FlightSize). Linux's ssthresh hooks read
    /// `snd_cwnd` instead, which after a slow-start overshoot is about twice the pipe; that
    /// difference is kept (see the module doc of `cc::cubic`).
    ///
    /// `tcp_init_cwnd_reduction` starts PRR from the window before the reduction; the
    /// controller's window (now ssthresh) is what `tcp_end_cwnd_reduction` leaves at the end.
    fn enter_recovery(&mut self, now: Time, flight: u64) {
        let cwnd = self.cwnd();
        self.recovery_point = Some(self.snd_nxt);
        self.update_cc(|cc| cc.on_congestion_event(now, flight));
        self.prr = Some(Prr {
            prior_cwnd: (cwnd / self.mss as u64).max(1),
            delivered: 0,
            out: 0,
            cwnd,
        });
        self.sync_space();
    }

    /// `tcp_cwnd_reduction` on an ACK in fast recovery that delivered `newly_acked_sacked`
    /// segments and marked `newly_lost` lost, `una_advanced` if it moved SND.UNA.
    fn prr_on_ack(&mut self, newly_acked_sacked: u64, newly_lost: u64, una_advanced: bool) {
        self.prr_step(newly_acked_sacked, newly_lost, una_advanced);
        self.sync_space();
    }

    /// [`SubflowSender::prr_on_ack`]'s window step.
    fn prr_step(&mut self, newly_acked_sacked: u64, newly_lost: u64, una_advanced: bool) {
        let mss = self.mss as u64;
        let ssthresh = (self.cc.ssthresh() / mss) as i64;
        let pipe = (self.in_flight / mss) as i64;
        let Some(p) = self.prr.as_mut() else {
            return;
        };
        if newly_acked_sacked == 0 {
            return;
        }
        let delta = ssthresh - pipe;
        p.delivered += newly_acked_sacked;
        let mut sndcnt = if delta < 0 {
            // Proportional: ssthresh/prior_cwnd of what was delivered, rounded up.
            let allowed = (ssthresh as u64 * p.delivered).div_ceil(p.prior_cwnd);
            allowed as i64 - p.out as i64
        } else {
            // Slow-start reduction bound: catch up on what was delivered and not sent, one
            // more when SND.UNA moved without a new loss, never above ssthresh.
            let mut n = (p.delivered as i64 - p.out as i64).max(newly_acked_sacked as i64);
            if una_advanced && newly_lost == 0 {
                n += 1;
            }
            n.min(delta)
        };
        // Never below the pipe; the first ACK of recovery always lets the fast retransmission
        // out.
        sndcnt = sndcnt.max(if p.out == 0 { 1 } else { 0 });
        p.cwnd = (pipe + sndcnt).max(1) as u64 * mss;
    }

    /// Linux `tcp_retransmit_timer` → `tcp_enter_loss` (net/ipv4/tcp_input.c).
    fn enter_loss(&mut self, now: Time) {
        self.rto_count += 1;
        self.tlp_pending = false;
        let new_recovery = self.recovery_point.is_none() && self.rto_recovery_point.is_none();
        let stale_loss = self.rto_recovery_point.is_some_and(|h| h <= self.snd_una);
        let first_in_loss = self.rto_recovery_point.is_some() && self.timeouts == 0;
        // Reduce ssthresh unless already done for this window of data; keep what to undo.
        if new_recovery || stale_loss || first_in_loss {
            let (cwnd, ssthresh) = (self.cwnd(), self.cc.ssthresh());
            // tcp_current_ssthresh: outside a reduction, at least 3/4 of cwnd.
            let prior_ssthresh = if self.recovery_point.is_some() {
                ssthresh
            } else {
                ssthresh.max(cwnd / 2 + cwnd / 4)
            };
            self.undo = Some(Undo {
                prior_cwnd: cwnd,
                prior_ssthresh,
                retrans_stamp: None,
            });
            let flight = self.in_flight;
            self.update_cc(|cc| cc.on_rto(now, flight));
        }
        self.timeout_mark_lost(now);
        // cwnd = packets in flight + 1.
        let loss_window = self.in_flight + self.mss as u64;
        self.update_cc(|cc| cc.set_loss_window(loss_window));
        self.recovery_point = None;
        self.prr = None;
        self.sync_space();
        self.rto_recovery_point = Some(self.snd_nxt);
        self.tlp_high_seq = None;
        // F-RTO (RFC 5682 §3.1 step 1): unless the timeout interrupted a fast recovery, except
        // for repeated timeouts of the same data (§3.2).
        self.frto = new_recovery || self.timeouts > 0;
        self.frto_new_data = false;
        self.timeouts += 1;
        // tcp_retransmit_timer: back off and re-arm.
        self.rtt.on_rto_expired();
        self.set_timer(Some((TimerKind::Rto, now + self.rtt.rto())));
    }

    /// Linux `tcp_timeout_mark_lost`: the head is lost; every other segment not SACKed is lost
    /// only if RACK with a zero reordering window says so (sent at least RACK.rtt ago).
    /// Recently sent segments stay in flight.
    fn timeout_mark_lost(&mut self, now: Time) {
        self.retx_queue.clear();
        self.lost_out = 0;
        let rack_rtt = self.rack.rtt;
        for i in 0..self.board.len() {
            let s = self.board[i];
            if s.sacked {
                continue;
            }
            if i != 0 && now.saturating_since(s.sent_time) < rack_rtt {
                if s.lost {
                    // Still lost from before, still waiting for its retransmission.
                    self.lost_out += 1;
                    self.retx_queue.push_back(self.front_no + i as u64);
                }
                continue;
            }
            self.mark_lost(i);
        }
        // Segments not marked stay RACK candidates: rescan from the head.
        self.loss_ptr = self.front_no;
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
        self.last_ack_at = Some(now);
        self.silent = false;
        self.peer_ts = self.peer_ts.max(ack.ts_val);
        let prior_in_flight = self.in_flight;
        let prior_marks = self.lost_marks;
        let cum = ack.ack.min(self.snd_nxt);
        let mut newest_rate_seg: Option<(u64, Time, bool)> = None;
        let mut sack_rtt_from: Option<Time> = None;
        // Linux FLAG_ORIG_SACK_ACKED: never-retransmitted data below high_seq (S)ACKed.
        let mut orig_acked = false;
        let mut newly_sacked = false;
        let high_seq = self.rto_recovery_point.unwrap_or(0);

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
                    let was_lost_waiting = seg.lost && !seg.retx_in_flight;
                    seg.sacked = true;
                    let seg = *seg;
                    // A SACKed skb is merged into its SACKed predecessor
                    // (`tcp_shift_skb_data`): its head is freed. What is left of it
                    // un-SACKed was cut off with a head of its own (`tcp_fragment`).
                    if seg.head {
                        self.heads_out -= 1;
                        if let Some(next) = self.board.get_mut(i + 1) {
                            if !next.head && !next.sacked {
                                next.head = true;
                                self.heads_out += 1;
                            }
                        }
                    }
                    if pipe {
                        self.in_flight -= self.mss as u64;
                    }
                    if was_lost_waiting {
                        self.lost_out -= 1;
                    }
                    self.sacked_out += 1;
                    newly_sacked = true;
                    if !seg.retransmitted {
                        sack_rtt_from = sack_rtt_from.max(Some(seg.sent_time));
                        orig_acked |= seg.end() <= high_seq;
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
            self.timeouts = 0;
            while let Some(seg) = self.board.front().copied() {
                if seg.end() > cum {
                    break;
                }
                self.board.pop_front();
                self.front_no += 1;
                self.heads_out -= u64::from(seg.head && !seg.sacked);
                if seg.sacked {
                    self.sacked_out -= 1;
                } else {
                    if seg.in_pipe() {
                        self.in_flight -= self.mss as u64;
                    }
                    if seg.lost && !seg.retx_in_flight {
                        self.lost_out -= 1;
                    }
                    if !seg.retransmitted {
                        orig_acked |= seg.end() <= high_seq;
                    }
                    self.account_delivery(&seg, now, &mut newest_rate_seg, received);
                    out.newly_acked_bytes += seg.len as u64;
                    out.newly_acked_window += self.mss as u64;
                }
            }
            // Nothing SACKed (the usual case): no B-tree walk.
            if !self.sacked.is_empty() {
                self.sacked.remove_below(cum);
            }
            // An skb acknowledged in part is trimmed, not freed (`tcp_trim_head`): the
            // oldest outstanding segment always starts one.
            if let Some(front) = self.board.front_mut() {
                if !front.head {
                    front.head = true;
                    self.heads_out += u64::from(!front.sacked);
                }
            }
            self.loss_ptr = self.loss_ptr.max(self.front_no);
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
            self.rtt.on_sample(r, self.snd_una, self.snd_nxt);
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
        if self.tlp_high_seq.is_some_and(|h| self.snd_una >= h) {
            self.tlp_high_seq = None;
        }

        // End of a fast recovery episode.
        if let Some(rp) = self.recovery_point {
            if self.snd_una >= rp {
                // `tcp_end_cwnd_reduction`: cwnd = ssthresh, the controller's window.
                self.recovery_point = None;
                self.prr = None;
                self.update_cc(|cc| cc.on_recovery_end(now));
            }
        }
        // The Loss state: F-RTO and undo (tcp_process_loss).
        let dupack = !cum_advanced && out.newly_acked_bytes == 0 && cum == self.snd_una;
        if self.rto_recovery_point.is_some() {
            self.process_loss(ack, cum_advanced, orig_acked, newly_sacked || dupack);
        }

        // RACK (tcp_identify_packet_loss → tcp_rack_mark_lost) and entering recovery.
        let mut set_xmit_timer = cum_advanced;
        if self.rack.advanced {
            self.rack.advanced = false;
            let prior_lost = self.lost_out;
            if self.rack_detect_loss(now) {
                set_xmit_timer = false;
            }
            if self.lost_out > prior_lost
                && self.recovery_point.is_none()
                && self.rto_recovery_point.is_none()
            {
                self.enter_recovery(now, prior_in_flight);
                out.entered_recovery = true;
            }
        }

        // `tcp_cong_control`: in fast recovery PRR sets the window; otherwise the controller
        // grows it, after an RTO too (Linux grows cwnd in CA_Loss: no cwnd reduction there).
        if self.recovery_point.is_some() {
            let delivered = out.newly_acked_window / self.mss as u64;
            self.prr_on_ack(delivered, self.lost_marks - prior_marks, cum_advanced);
        } else if out.newly_acked_bytes > 0 {
            let sample = AckSample {
                acked_bytes: out.newly_acked_window,
                prior_in_flight,
                cwnd_limited: self.is_cwnd_limited(),
                srtt: self.rtt.srtt(),
                min_rtt: self.rtt.min_rtt(),
                rtt: out.rtt_sample,
                delivered: self.delivered,
                snd_nxt: self.snd_nxt,
            };
            self.update_cc(|cc| cc.on_ack(now, &sample, coupled));
        }

        // tcp_set_xmit_timer on FLAG_SET_XMIT_TIMER (new data cumulatively acknowledged, no
        // reordering timer just armed): the probe if allowed, else the RTO.
        if self.board.is_empty() {
            self.set_timer(None);
        } else if set_xmit_timer && !self.schedule_loss_probe(now, true) {
            self.rearm_rto(now);
        }
        out
    }

    /// Linux `tcp_process_loss` with F-RTO (RFC 5682 §3.1, SACK-enhanced) and
    /// `tcp_try_undo_loss`.
    fn process_loss(&mut self, ack: &Ack, una_advanced: bool, orig_acked: bool, sacked: bool) {
        let Some(high_seq) = self.rto_recovery_point else {
            return;
        };
        let recovered = self.snd_una >= high_seq;
        // tcp_may_undo via tcp_packet_delayed: the ACK echoes a timestamp older than the first
        // retransmission, so the original transmission arrived (Eifel, RFC 3522).
        let delayed = self.undo.is_some_and(|u| {
            u.retrans_stamp
                .is_some_and(|t| ack.ts_ecr != 0 && ack.ts_ecr < t.0)
        });
        if una_advanced && delayed {
            self.undo_loss();
            return;
        }
        if self.frto {
            // Step 3.b: never-retransmitted data was (S)ACKed, so not everything was lost.
            if orig_acked && self.undo.is_some() {
                self.undo_loss();
                return;
            }
            if self.snd_nxt > high_seq {
                if sacked {
                    // Step 3.a: the loss was real.
                    self.frto = false;
                }
            } else if una_advanced && !recovered {
                // Step 2.b: send new data before retransmitting anything more (the
                // connection falls back to retransmissions when it has none:
                // `mark_app_limited`).
                self.rto_recovery_point = Some(self.snd_nxt);
                self.frto_new_data = true;
                return;
            }
        }
        if recovered {
            // Step 2.a / tcp_try_undo_recovery: the episode is over.
            self.rto_recovery_point = None;
            self.frto = false;
            self.frto_new_data = false;
            self.undo = None;
        }
    }

    /// `tcp_try_undo_loss` → `tcp_undo_cwnd_reduction(sk, true)`: the timeout was spurious;
    /// forget the loss marks, restore cwnd and ssthresh, back to Open.
    fn undo_loss(&mut self) {
        let Some(u) = self.undo.take() else { return };
        for s in self.board.iter_mut() {
            if s.lost && !s.sacked {
                if !s.retx_in_flight {
                    self.in_flight += self.mss as u64;
                }
                s.lost = false;
            }
        }
        self.lost_out = 0;
        self.retx_queue.clear();
        self.loss_ptr = self.front_no;
        self.update_cc(|cc| cc.undo(u.prior_cwnd, u.prior_ssthresh));
        self.rto_recovery_point = None;
        self.frto = false;
        self.frto_new_data = false;
        self.timeouts = 0;
        self.spurious_rtos += 1;
    }

    fn account_delivery(
        &mut self,
        seg: &Sent,
        now: Time,
        newest: &mut Option<(u64, Time, bool)>,
        received: &mut Vec<Received>,
    ) {
        self.delivered += seg.len as u64;
        // tcp_rack_advance: a retransmitted segment delivered sooner than min_RTT after its
        // retransmission was the original's delivery; its RTT is ambiguous.
        let rtt = now.saturating_since(seg.sent_time);
        if !(seg.retransmitted && self.rtt.min_rtt().is_some_and(|m| rtt < m)) {
            self.rack.rtt = rtt;
            self.rack.advanced = true;
            if !self.rack.sent_before(seg.sent_time, seg.end()) {
                self.rack.xmit = seg.sent_time;
                self.rack.end_seq = seg.end();
            }
        }
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

    /// Linux `tcp_rack_reo_wnd`: with no reordering ever seen, 0 in recovery (or after an RTO)
    /// and once DupThresh segments are SACKed; else min_RTT/4, at most SRTT.
    fn reo_wnd(&self) -> Duration {
        if self.recovery_point.is_some()
            || self.rto_recovery_point.is_some()
            || self.sacked_out >= DUP_THRESH
        {
            return Duration::ZERO;
        }
        let quarter = self.rtt.min_rtt().map_or(0, |m| m.0 / 4);
        Duration(quarter.min(self.rtt.srtt().map_or(u64::MAX, |s| s.0)))
    }

    /// Mark segment `i` of the board lost (RACK or the reordering timer).
    fn mark_lost(&mut self, i: usize) {
        let s = &mut self.board[i];
        if s.in_pipe() {
            self.in_flight -= self.mss as u64;
        }
        s.lost = true;
        s.retx_in_flight = false;
        self.lost_out += 1;
        self.lost_marks += 1;
        self.retx_queue.push_back(self.front_no + i as u64);
    }

    /// Linux `tcp_rack_detect_loss` (RFC 8985 §6.2): every segment sent before the most
    /// recently sent delivered one, and sent more than RACK.rtt + reo_wnd ago, is lost. Walks
    /// the first transmissions from `loss_ptr` and the retransmissions in send order, each
    /// until its first segment that is not yet lost. If some segment sent before RACK.xmit_ts
    /// must still wait, arms the reordering timer for when the last of them is due (Linux
    /// takes the maximum wait) and returns true.
    fn rack_detect_loss(&mut self, now: Time) -> bool {
        let reo = self.reo_wnd();
        let wait = self.rack.rtt + reo;
        let mut waiting = false;
        // First transmissions, in sequence (= send) order.
        while let Some(i) = self.loss_ptr.checked_sub(self.front_no) {
            let Some(seg) = self.board.get(i as usize) else {
                break;
            };
            if seg.sacked || seg.lost || seg.retransmitted {
                self.loss_ptr += 1;
                continue;
            }
            if !self.rack.sent_before(seg.sent_time, seg.end()) {
                break;
            }
            if now.saturating_since(seg.sent_time) < wait {
                waiting = true;
                break;
            }
            self.mark_lost(i as usize);
            self.loss_ptr += 1;
        }
        // Retransmissions, in send order.
        while let Some(&(t, no)) = self.retx_sent.front() {
            let Some(i) = no.checked_sub(self.front_no) else {
                self.retx_sent.pop_front();
                continue;
            };
            let Some(s) = self.board.get(i as usize) else {
                self.retx_sent.pop_front();
                continue;
            };
            if s.sacked || !s.retx_in_flight || s.sent_time != t {
                self.retx_sent.pop_front();
                continue;
            }
            if !self.rack.sent_before(t, s.end()) {
                break;
            }
            if now.saturating_since(t) < wait {
                waiting = true;
                break;
            }
            self.mark_lost(i as usize);
            self.retx_sent.pop_front();
        }
        if waiting {
            // The last segment sent before RACK.xmit_ts is due at RACK.xmit_ts + wait at the
            // latest; + TCP_TIMEOUT_MIN as tcp_rack_mark_lost adds; never beyond one RTO.
            let due = (self.rack.xmit + wait).max(now) + TIMEOUT_MIN;
            let due = due.min(now + self.rtt.rto());
            self.set_timer(Some((TimerKind::Reo, due)));
        }
        waiting
    }

    /// The controller takes a congestion event now (window halved and kept as the threshold)
    /// without any loss: fixtures that need congestion avoidance from the start.
    #[cfg(test)]
    pub(crate) fn congestion_event_for_test(&mut self, now: Time) {
        let w = self.cc.window();
        self.update_cc(|cc| cc.on_congestion_event(now, w));
    }

    /// Scheduler penalization (Linux MPTCP v0.9x `mptcp_rcv_buf_optimization`): halve the
    /// window of the subflow that holds back the connection. How often is the scheduler's
    /// business: the kernel times it by the subflow that penalizes, not this one (`minrtt`).
    pub fn penalize(&mut self, now: Time) {
        self.update_cc(|cc| cc.penalize(now));
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
            ts_val: 0,
            owd_echo: None,
        };
        sf.on_ack(ms(t), &ack, CoupledView::default(), &mut Vec::new())
    }

    /// An ACK at `t` ms with cumulative ACK `cum`, SACK `blocks` and TSecr `ecr` ms.
    fn ack_sack(
        sf: &mut SubflowSender,
        cum: u64,
        blocks: &[(u64, u64)],
        t: u64,
        ecr: u64,
    ) -> AckOutcome {
        let mut sack = [SackBlock::default(); 3];
        for (b, &(start, end)) in sack.iter_mut().zip(blocks) {
            *b = SackBlock { start, end };
        }
        let ack = Ack {
            path: 0,
            ack: cum,
            sack,
            nsack: blocks.len() as u8,
            data_ack: cum,
            rwnd: 1 << 30,
            ts_ecr: ms(ecr).0,
            ts_val: 0,
            owd_echo: None,
        };
        sf.on_ack(ms(t), &ack, CoupledView::default(), &mut Vec::new())
    }

    fn timer(sf: &SubflowSender) -> (TimerKind, Time) {
        sf.timer.expect("a timer is armed")
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

    /// A Reno subflow in congestion avoidance at cwnd = ssthresh = 10 segments, nothing out.
    fn in_avoidance() -> SubflowSender {
        let mut sf = subflow();
        sf.update_cc(|cc| cc.on_congestion_event(ms(0), 20 * MSS as u64));
        assert_eq!(
            (sf.cwnd(), sf.ssthresh()),
            (10 * MSS as u64, 10 * MSS as u64)
        );
        sf
    }

    /// `rounds` rounds at `t0` ms, 100 ms apart, each acknowledging what is out one segment per
    /// ACK and sending one new segment per ACK while fewer than `keep` are out (a sender held
    /// at `keep` segments by the receive window or the application, or by cwnd if smaller).
    fn hold_at(sf: &mut SubflowSender, t0: u64, rounds: u64, keep: u64) {
        for r in 0..rounds {
            let ends: Vec<u64> = sf.board.iter().map(Sent::end).collect();
            for end in ends {
                ack_to(sf, end, t0 + 100 * (r + 1));
                while sf.has_cwnd_space() && (sf.board.len() as u64) < keep {
                    send(sf, t0 + 100 * (r + 1), &[MSS]);
                }
            }
        }
    }

    #[test]
    fn avoidance_grows_a_window_that_was_full() {
        // `tcp_write_xmit` stops on a full window: `tcp_cwnd_validate(sk, true)`, and
        // `tcp_reno_cong_avoid` adds one segment per window acknowledged.
        let mut sf = in_avoidance();
        send(&mut sf, 0, &[MSS; 10]);
        assert!(sf.is_cwnd_limited);
        hold_at(&mut sf, 0, 1, u64::MAX);
        assert_eq!(sf.cwnd(), 11 * MSS as u64);
    }

    #[test]
    fn avoidance_does_not_grow_a_window_never_full() {
        // Nine of ten segments out, round after round: Linux never finds the window full, so
        // `tcp_is_cwnd_limited` is false in congestion avoidance. (The RFC 7661-style test,
        // nine in flight >= ten / 2, grew it by one segment per round.)
        let mut sf = in_avoidance();
        send(&mut sf, 0, &[MSS; 9]);
        hold_at(&mut sf, 0, 5, 9);
        assert!(!sf.is_cwnd_limited());
        assert_eq!(sf.cwnd(), 10 * MSS as u64);
        // Filling it once is enough for the window of data that follows.
        send(&mut sf, 500, &[MSS]);
        assert!(sf.is_cwnd_limited());
        hold_at(&mut sf, 500, 1, 10);
        assert_eq!(sf.cwnd(), 11 * MSS as u64);
    }

    #[test]
    fn slow_start_grows_while_cwnd_below_twice_max_packets_out() {
        // IW 10, the application sends 8: `tcp_is_cwnd_limited` in slow start is
        // cwnd < 2 · max_packets_out, so the window reaches 16 and stops there (the
        // stateless half-the-window test stopped at 13).
        let mut sf = subflow();
        send(&mut sf, 0, &[MSS; 8]);
        assert!(!sf.is_cwnd_limited);
        assert_eq!(sf.max_packets_out, 8);
        ack_all(&mut sf, 100, false);
        assert_eq!(sf.cwnd(), 16 * MSS as u64);
        assert!(sf.cc.in_slow_start());
    }

    #[test]
    fn receive_window_limited_subflow_does_not_inflate_its_window() {
        // A subflow held at 20 segments (the peer's window) while its cwnd allows 40. In
        // congestion avoidance the window never fills, so it never grows (it grew to twice the
        // flight before: 20 >= 40 / 2).
        let mut sf = in_avoidance();
        sf.update_cc(|cc| cc.set_loss_window(40 * MSS as u64));
        send(&mut sf, 0, &[MSS; 20]);
        hold_at(&mut sf, 0, 10, 20);
        assert_eq!(sf.cwnd(), 40 * MSS as u64);
        // In slow start Linux lets it reach 2 · max_packets_out and no further.
        let mut sf = subflow();
        send(&mut sf, 0, &[MSS; 10]);
        hold_at(&mut sf, 0, 10, 20);
        assert_eq!(sf.max_packets_out, 20);
        assert_eq!(sf.cwnd(), 40 * MSS as u64);
    }

    #[test]
    fn a_subflow_the_connection_holds_back_is_cwnd_limited_only_if_its_window_is_full() {
        // `note_blocked_by_cwnd`: data waits for this subflow. Pacing or the peer's window
        // holding it back with room in the window is not cwnd-limited; a full window is.
        let mut sf = in_avoidance();
        send(&mut sf, 0, &[MSS; 5]);
        sf.note_blocked_by_cwnd();
        assert!(!sf.is_cwnd_limited());
        sf.update_cc(|cc| cc.set_loss_window(5 * MSS as u64));
        sf.note_blocked_by_cwnd();
        assert!(sf.is_cwnd_limited());
        // A new window of data with room left clears it (`tcp_cwnd_validate` once SND.UNA
        // passed `cwnd_usage_seq`).
        sf.update_cc(|cc| cc.set_loss_window(10 * MSS as u64));
        ack_all(&mut sf, 100, false);
        send(&mut sf, 100, &[MSS]);
        assert!(!sf.is_cwnd_limited());
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
        sf.update_cc(|cc| cc.on_congestion_event(ms(60), 20 * MSS as u64));
        let cwnd = (sf.cwnd() / MSS as u64) as f64;
        let packets = cwnd.max(sf.board.len() as f64);
        let expect = 1.2 * packets * MSS as f64 * 8.0 / srtt;
        assert!((sf.pacing_rate_bps().unwrap() - expect).abs() < 1e-6 * expect);
    }

    // ---- loss detection and timers as Linux (issue 9) -----------------------------------

    const M: u64 = MSS as u64;

    #[test]
    fn open_hole_with_one_segment_sacked_after_it_waits_for_the_reordering_timer() {
        // Linux tcp_rack_detect_loss (RFC 8985 §6.2): segment 8 of a flight is lost and 9 is
        // SACKed. One SACKed segment leaves reo_wnd = min_RTT/4 = 12.5 ms (tcp_rack_reo_wnd),
        // so 8 is not lost yet; the reordering timer fires at RACK.xmit_ts + RACK.rtt + reo_wnd
        // + TCP_TIMEOUT_MIN and resends it, instead of leaving it to the RTO.
        let mut sf = subflow();
        send(&mut sf, 0, &[MSS; 10]);
        let out = ack_sack(&mut sf, 8 * M, &[(9 * M, 10 * M)], 100, 50);
        assert!(!out.entered_recovery);
        assert!(!sf.has_retransmission());
        let (kind, at) = timer(&sf);
        assert_eq!(kind, TimerKind::Reo);
        assert_eq!(at, ms(0) + Duration(114_500_000), "0 + 100 + 12.5 + 2 ms");
        assert!(!sf.on_timeout(at), "the reordering timer is no RTO");
        assert_eq!(sf.state(), SubflowState::Recovery);
        assert_eq!(sf.send_retransmission(at).map(|d| d.seq), Some(8 * M));
        assert_eq!(
            timer(&sf).0,
            TimerKind::Rto,
            "tcp_rearm_rto after the reordering timeout"
        );
    }

    #[test]
    fn open_three_sacked_after_a_hole_mark_it_lost_at_once() {
        // tcp_rack_reo_wnd is 0 once DupThresh = 3 segments are SACKed: the hole is lost on
        // this ACK and recovery starts (the classic fast retransmit, now through RACK).
        let mut sf = subflow();
        send(&mut sf, 0, &[MSS; 10]);
        let out = ack_sack(&mut sf, 2 * M, &[(3 * M, 6 * M)], 100, 50);
        assert!(out.entered_recovery);
        assert!(sf.has_retransmission());
        // tcp_xmit_retransmit_queue: resending the head re-arms the RTO from now.
        assert_eq!(sf.send_retransmission(ms(101)).map(|d| d.seq), Some(2 * M));
        assert_eq!(timer(&sf), (TimerKind::Rto, ms(101) + sf.rto()));
    }

    #[test]
    fn open_ack_schedules_the_tail_loss_probe_at_two_srtt() {
        // tcp_schedule_loss_probe: PTO = 2·SRTT + TCP_TIMEOUT_MIN with several segments out.
        let mut sf = subflow();
        send(&mut sf, 0, &[MSS; 10]);
        ack_to(&mut sf, 5 * M, 100);
        assert_eq!(sf.srtt(), Some(Duration::from_millis(50)));
        assert_eq!(timer(&sf), (TimerKind::Probe, ms(100 + 102)));
        // The probe is the last segment; the RTO then runs from the probe.
        assert!(!sf.on_timeout(ms(202)));
        assert!(sf.probe_pending());
        assert_eq!(sf.send_retransmission(ms(202)).map(|d| d.seq), Some(9 * M));
        assert_eq!(sf.tlp_probes(), 1);
        assert_eq!(timer(&sf), (TimerKind::Rto, ms(202) + sf.rto()));
    }

    #[test]
    fn silence_runs_from_the_last_ack_whatever_the_timers_until_the_next_ack() {
        // Ten segments at 0 ms, 0-4 acknowledged at 100 ms (SRTT 50 ms): silent one PTO
        // (2·SRTT + 2 ms) later, at 202 ms, with the probe timer.
        let mut sf = subflow();
        send(&mut sf, 0, &[MSS; 10]);
        ack_to(&mut sf, 5 * M, 100);
        assert_eq!(sf.silence_deadline(), Some(ms(202)));
        // New data re-arms the probe, but is no sign of life from the path.
        send(&mut sf, 150, &[MSS; 2]);
        let (kind, probe_at) = timer(&sf);
        assert!(
            kind == TimerKind::Probe && probe_at > ms(202),
            "{kind:?} at {probe_at:?}"
        );
        assert_eq!(sf.silence_deadline(), Some(ms(202)));
        // A SACK at 160 ms is a sign of life, though it moves no timer (SND.UNA stays).
        ack_sack(&mut sf, 5 * M, &[(9 * M, 12 * M)], 160, 150);
        assert_eq!(timer(&sf), (kind, probe_at));
        let pto = Duration(2 * sf.srtt().unwrap().0) + TIMEOUT_MIN;
        assert_eq!(sf.silence_deadline(), Some(ms(160) + pto));
        sf.mark_silent();
        assert!(sf.silent() && sf.silence_deadline().is_none());
        // The next ACK ends it.
        ack_sack(&mut sf, 6 * M, &[(9 * M, 12 * M)], 400, 150);
        assert!(!sf.silent());
        assert_eq!(
            sf.silence_deadline(),
            Some(ms(400) + Duration(2 * sf.srtt().unwrap().0) + TIMEOUT_MIN)
        );
    }

    #[test]
    fn silence_after_idle_counts_from_the_first_send() {
        let mut sf = subflow();
        send(&mut sf, 0, &[MSS; 2]);
        ack_to(&mut sf, 2 * M, 100);
        assert_eq!(sf.silence_deadline(), None, "nothing outstanding");
        // Idle until 5 s: the old ACK is not a silence.
        send(&mut sf, 5_000, &[MSS; 2]);
        let pto = Duration(2 * sf.srtt().unwrap().0) + TIMEOUT_MIN;
        assert_eq!(sf.silence_deadline(), Some(ms(5_000) + pto));
    }

    #[test]
    fn open_single_segment_probe_is_capped_by_the_rto_not_skipped() {
        // One segment out: PTO = 2·SRTT + rto_min = 300 ms, later than the RTO (50 + 200 ms):
        // Linux fires the probe when the RTO would have fired and re-arms the RTO after it.
        let mut sf = subflow();
        send(&mut sf, 0, &[MSS; 2]);
        ack_to(&mut sf, M, 100);
        assert_eq!(sf.rto(), Duration::from_millis(250));
        assert_eq!(timer(&sf), (TimerKind::Probe, ms(350)));
        assert!(!sf.on_timeout(ms(350)));
        assert_eq!(sf.send_retransmission(ms(350)).map(|d| d.seq), Some(M));
        assert_eq!(sf.rto_count(), 0);
    }

    /// Ten segments at 0 ms, 0-4 acknowledged at 100 ms (SRTT 50 ms, RACK.rtt 100 ms), the
    /// probe (segment 9) at 202 ms, five new segments at 400 ms, the RTO at 452 ms.
    fn timed_out() -> SubflowSender {
        let mut sf = subflow();
        send(&mut sf, 0, &[MSS; 10]);
        ack_to(&mut sf, 5 * M, 100);
        sf.on_timeout(ms(202));
        sf.send_retransmission(ms(202));
        send(&mut sf, 400, &[MSS; 5]);
        assert_eq!(timer(&sf), (TimerKind::Rto, ms(452)));
        assert!(sf.on_timeout(ms(452)));
        sf
    }

    #[test]
    fn rto_marks_the_head_and_old_segments_lost_but_not_recent_ones() {
        // tcp_timeout_mark_lost: the head always; others only if sent RACK.rtt or longer ago.
        // Segments 5-9 (sent at 0 ms and 202 ms) are lost, 10-14 (sent 52 ms ago) stay in
        // flight, and cwnd = packets in flight + 1 (tcp_enter_loss).
        let sf = timed_out();
        assert_eq!(sf.state(), SubflowState::Loss);
        assert_eq!(sf.lost_out, 5);
        assert_eq!(sf.in_flight(), 5 * M);
        assert_eq!(sf.cwnd(), 6 * M);
        let lost: Vec<u64> = sf
            .board
            .iter()
            .filter(|s| s.lost)
            .map(|s| s.seq / M)
            .collect();
        assert_eq!(lost, [5, 6, 7, 8, 9]);
        // Backed off: the next RTO is twice as far.
        assert_eq!(timer(&sf), (TimerKind::Rto, ms(452) + sf.rto()));
        assert_eq!(sf.rto(), Duration::from_millis(500));
    }

    #[test]
    fn loss_ack_of_the_original_undoes_a_spurious_rto() {
        // tcp_try_undo_loss via tcp_packet_delayed (Eifel, RFC 3522): the ACK that advances
        // SND.UNA echoes the original transmission's timestamp, older than the first
        // retransmission, so the timeout was spurious: cwnd and ssthresh come back.
        let mut sf = timed_out();
        let prior = sf.undo.expect("undo state").prior_cwnd;
        assert_eq!(sf.send_retransmission(ms(452)).map(|d| d.seq), Some(5 * M));
        ack_sack(&mut sf, 6 * M, &[], 470, 0);
        assert_eq!(sf.spurious_rtos(), 1);
        assert_ne!(sf.state(), SubflowState::Loss);
        assert!(
            sf.cwnd() >= prior,
            "cwnd {} restored to at least {prior}",
            sf.cwnd()
        );
        assert!(!sf.has_retransmission(), "the loss marks are forgotten");
    }

    #[test]
    fn loss_ack_of_the_retransmission_keeps_the_reduction() {
        // The same ACK echoing the retransmission's timestamp: a real loss, no undo (F-RTO
        // step 2.b then lets new data go before more retransmissions).
        let mut sf = timed_out();
        sf.send_retransmission(ms(452));
        ack_sack(&mut sf, 6 * M, &[], 520, 452);
        assert_eq!(sf.spurious_rtos(), 0);
        assert_eq!(sf.state(), SubflowState::Loss);
        assert!(sf.frto_waits_for_new_data());
        assert!(sf.cwnd() < 10 * M);
    }

    #[test]
    fn paced_segments_leave_len_over_rate_apart_from_the_tenth() {
        // Linux tcp_update_skb_after_send: EDT pacing starts once data_segs_out >= 10; each
        // segment then moves the next departure (len + TCP header) / pacing rate later.
        let mut sf = subflow();
        sf.set_pacing(true);
        send(&mut sf, 0, &[MSS; 5]);
        ack_to(&mut sf, 5 * M, 100);
        send(&mut sf, 100, &[MSS; 4]);
        assert!(sf.pacing_allows(), "nine segments out: not paced yet");
        let rate = sf.pacing_rate_bps().unwrap();
        send(&mut sf, 100, &[MSS]);
        let gap = Duration(((MSS as f64 + 32.0) * 8e9 / rate) as u64);
        assert_eq!(sf.pacing_release_time(), Some(ms(100) + gap));
        assert!(
            !sf.has_cwnd_space(),
            "held back by pacing, not by the window"
        );
        sf.update_pacing(ms(100) + gap);
        assert!(sf.pacing_allows() && sf.has_cwnd_space());
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

    /// Loss recovery as Linux runs it: Proportional Rate Reduction (`tcp_cwnd_reduction`,
    /// net/ipv4/tcp_input.c; RFC 6937 with the slow-start reduction bound). Reno at cwnd 10
    /// (ssthresh becomes 5) loses the first of ten segments; SACKs then deliver segments 1-9
    /// one per ACK. With pipe above ssthresh PRR lets out ceil(5 · delivered / 10) − sent: the
    /// fast retransmission, then one segment per two deliveries; once the pipe is down to
    /// ssthresh (7th SACK: delta 0, nothing) it sends what keeps it there. RFC 6675's
    /// cwnd = ssthresh at once would send nothing but the retransmission until the pipe fell
    /// below 5.
    #[test]
    fn fast_recovery_sends_in_proportion_to_deliveries_as_linux_prr() {
        let mut sf = in_avoidance();
        send(&mut sf, 0, &[MSS]);
        send(&mut sf, 40, &[MSS; 9]);
        let mut sends = Vec::new();
        let mut cwnds = Vec::new();
        for k in 1..=9u64 {
            let t = 140 + k;
            let out = ack_sack(&mut sf, 0, &[(1000, 1000 + 1000 * k)], t, 40);
            assert_eq!(out.entered_recovery, k == 1, "ACK {k}");
            cwnds.push(sf.cwnd() / MSS as u64);
            let mut n = 0;
            while sf.has_cwnd_space() {
                if sf.send_retransmission(ms(t)).is_none() {
                    send(&mut sf, t, &[MSS]);
                }
                n += 1;
            }
            sends.push(n);
        }
        assert_eq!(sf.ssthresh(), 5 * MSS as u64);
        // pipe after each ACK: 8 (seg 0 marked lost), 8, 7, 7, 6, 6, 5, 4, 4.
        assert_eq!(cwnds, [9, 8, 8, 7, 7, 6, 5, 5, 5]);
        assert_eq!(sends, [1, 0, 1, 0, 1, 0, 0, 1, 1]);
        assert_eq!(sf.state(), SubflowState::Recovery);
        // The retransmission arrives: SND.UNA passes the recovery point and
        // `tcp_end_cwnd_reduction` leaves cwnd at ssthresh.
        ack_sack(&mut sf, 10_000, &[], 250, 141);
        assert_ne!(sf.state(), SubflowState::Recovery);
        assert_eq!(sf.cwnd(), sf.ssthresh());
    }

    /// What a subflow holds while it repairs a loss is its retransmission queue, not its pipe:
    /// Linux frees an skb only when SND.UNA passes it (`tcp_clean_rtx_queue`), so SACKed and
    /// lost segments stay in `sk_wmem_queued` and `packets_out` until the hole is filled. Ten
    /// segments, the first lost and the other nine SACKed: the pipe is empty but for the
    /// fast retransmission, the outstanding bytes and segments are all ten until the
    /// cumulative ACK.
    #[test]
    fn sacked_and_lost_segments_stay_outstanding_until_the_cumulative_ack() {
        let mut sf = in_avoidance();
        send(&mut sf, 0, &[MSS; 10]);
        assert!(ack_sack(&mut sf, 0, &[(1000, 10_000)], 141, 40).entered_recovery);
        assert_eq!(sf.in_flight(), 0);
        assert_eq!(sf.outstanding_bytes(), 10_000);
        assert_eq!(sf.packets_out(), 10);
        assert_eq!(sf.sacked_segments(), 9);
        sf.send_retransmission(ms(141)).expect("segment 0 again");
        assert_eq!(sf.in_flight() / MSS as u64, 1);
        ack_sack(&mut sf, 10_000, &[], 250, 141);
        assert_eq!((sf.outstanding_bytes(), sf.packets_out()), (0, 0));
    }

    /// PRR's slow-start reduction bound (`tcp_cwnd_reduction` with `delta >= 0`): once losses
    /// have taken the pipe below ssthresh, an ACK lets out what was delivered and not yet sent
    /// (at least what it delivered itself), one more when it advances SND.UNA without a new
    /// loss, never past ssthresh. Reno at cwnd 10 (ssthresh 5) loses segments 0-5 of ten.
    #[test]
    fn prr_rebuilds_a_pipe_below_ssthresh_by_one_extra_segment_per_ack() {
        let mut sf = in_avoidance();
        send(&mut sf, 0, &[MSS; 6]);
        send(&mut sf, 40, &[MSS; 4]);
        let mut cwnds = Vec::new();
        let mut fill = |sf: &mut SubflowSender, t: u64| {
            cwnds.push(sf.cwnd() / MSS as u64);
            while sf.has_cwnd_space() {
                sf.send_retransmission(ms(t))
                    .expect("a lost segment to resend");
            }
        };
        // Segment 6 SACKed: 0-5 lost, pipe 3 (7-9); delivered 1, sent 0, delta 2: sndcnt 1.
        assert!(ack_sack(&mut sf, 0, &[(6000, 7000)], 141, 40).entered_recovery);
        assert_eq!(sf.in_flight() / MSS as u64, 3);
        fill(&mut sf, 141);
        // Segment 7: delivered 2, sent 1, pipe 3 (8, 9, segment 0 again): sndcnt 1.
        ack_sack(&mut sf, 0, &[(6000, 8000)], 142, 40);
        fill(&mut sf, 142);
        // Segments 8, 9: delivered 4, sent 2, pipe 2: sndcnt max(2, 2) = 2.
        ack_sack(&mut sf, 0, &[(6000, 10_000)], 143, 40);
        fill(&mut sf, 143);
        // Segment 0's retransmission is acknowledged: SND.UNA moves, nothing new is lost;
        // delivered 5, sent 4, pipe 3: sndcnt max(1, 1) + 1 = 2, delta 2.
        ack_sack(&mut sf, 1000, &[(6000, 10_000)], 241, 141);
        fill(&mut sf, 241);
        assert_eq!(cwnds, [4, 4, 4, 5]);
    }

    #[test]
    fn segments_leaving_at_one_instant_share_skbs_of_two() {
        // `tcp_write_xmit` cuts what leaves at once into skbs of `tcp_tso_segs` segments (two
        // at these rates, `tcp_min_tso_segs`); a segment sent at another instant is an skb of
        // its own. Each skb is charged one head in `sk_wmem_queued`.
        let mut sf = subflow();
        assert_eq!(sf.tso_segs(), 2);
        send(&mut sf, 0, &[MSS; 5]);
        assert_eq!(sf.skb_heads_out(), 3, "2 + 2 + 1");
        send(&mut sf, 1, &[MSS]);
        assert_eq!(sf.skb_heads_out(), 4);
    }

    #[test]
    fn an_ack_inside_an_skb_trims_it_and_a_sack_frees_the_head_of_what_it_covers() {
        // Skbs (0,1) (2,3) (4) at 0 ms, (5) at 1 ms.
        let mut sf = subflow();
        send(&mut sf, 0, &[MSS; 5]);
        send(&mut sf, 1, &[MSS]);
        // `tcp_trim_head`: the skb of segments 0-1 stays, charged its head, until both go.
        ack_to(&mut sf, u64::from(MSS), 100);
        assert_eq!(sf.skb_heads_out(), 4);
        ack_to(&mut sf, 2 * u64::from(MSS), 101);
        assert_eq!(sf.skb_heads_out(), 3);
        // A SACKed skb is merged into its predecessor (`tcp_shift_skb_data`): segment 4's
        // head goes; segment 3, inside the skb of 2-3, frees none.
        let m = u64::from(MSS);
        ack_sack(&mut sf, 2 * m, &[(3 * m, 5 * m)], 102, 50);
        assert_eq!(sf.skb_heads_out(), 2, "skb 2-3 and skb 5");
        ack_to(&mut sf, 4 * m, 103);
        assert_eq!(sf.skb_heads_out(), 1, "only skb 5 un-SACKed");
    }

    /// A Reno subflow in congestion avoidance (cwnd 10) with an sRTT of 50 ms that sent ten
    /// segments at 0 ms, then at 100 ms got three acknowledged and sent one full skb of two:
    /// one segment of window left, its last transmission at 100 ms.
    fn one_segment_of_window_after_a_full_skb() -> SubflowSender {
        let mut sf = in_avoidance();
        send(&mut sf, 0, &[MSS; 10]);
        ack_to(&mut sf, 3 * u64::from(MSS), 100);
        assert_eq!(sf.cwnd(), 10 * u64::from(MSS));
        send(&mut sf, 100, &[MSS; 2]);
        assert_eq!(sf.cwnd() - sf.in_flight(), u64::from(MSS));
        sf
    }

    #[test]
    fn one_segment_of_window_within_a_millisecond_of_the_last_skb_waits_for_the_next_ack() {
        // `tcp_tso_should_defer`: less than a full skb (2 segments) of window, less than a
        // third of the window, the last skb left just now and the oldest unacknowledged
        // segment 100 ms ago (at least sRTT / 2): the rest of a larger skb waits.
        let sf = one_segment_of_window_after_a_full_skb();
        let wnd = 1 << 20;
        assert!(sf.tso_defers(ms(100), wnd, wnd));
        // More than a millisecond since the last transmission: it leaves.
        assert!(!sf.tso_defers(ms(102), wnd, wnd));
        // A peer window that leaves a single segment is all there is: no waiting for more.
        assert!(!sf.tso_defers(ms(100), 3 * u64::from(MSS), u64::from(MSS)));
    }

    #[test]
    fn a_window_of_a_full_skb_or_an_skb_still_filling_never_waits() {
        let wnd = 1 << 20;
        // Two segments of window: a full skb leaves.
        let mut sf = in_avoidance();
        send(&mut sf, 0, &[MSS; 10]);
        ack_to(&mut sf, 2 * u64::from(MSS), 100);
        assert!(!sf.tso_defers(ms(100), wnd, wnd));
        // The second segment of the skb leaving at this instant goes with the first.
        send(&mut sf, 100, &[MSS]);
        assert!(!sf.tso_defers(ms(100), wnd, wnd));
    }
}
