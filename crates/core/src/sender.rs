//! The sending endpoint of a multipath connection: subflows, meta buffer, scheduler, estimator.
//!
//! Driven only through `handle_input` / `handle_timeout` / `poll_transmit` / `poll_timeout`
//! (and `write` for the application), with time passed in. It never reads a clock.
//!
//! Beside the subflows it keeps what Linux keeps per subflow at the MPTCP level:
//!
//! * availability: a subflow whose retransmission timer fired is "potentially failed" (v0.9x
//!   `tp->pf`, set by `mptcp_reinject_data`, cleared by the next ACK on it in
//!   `mptcp_data_ack`) and takes no data while it is so or in the RTO Loss state
//!   (`mptcp_is_temp_unavailable`, net/mptcp/mptcp_sched.c); the data it held is queued for
//!   reinjection on the others, which goes before any new data (`__mptcp_next_segment`);
//! * a write queue for schedulers that commit data ahead of the congestion window (upstream
//!   `mptcp_sendmsg_frag` copies a burst into the subflow, `tcp_push` sends what cwnd allows);
//! * a send buffer autotuned as `tcp_sndbuf_expand` (net/ipv4/tcp_input.c), the MPTCP socket's
//!   buffer being their sum (`__mptcp_sync_sndbuf`, net/mptcp/protocol.h): the application is
//!   blocked while what it wrote and the peer has not data-acknowledged fills it.

use std::collections::VecDeque;

use crate::cc::{CcKind, CoupledView};
use crate::estimate::Estimator;
use crate::meta::send::{SegNo, SendBuffer};
use crate::msk_rtx::MskRetrans;
use crate::packet::{Ack, DataSegment, PathId, MAX_PATHS};
use crate::pathmask;
use crate::sched::{Assignment, PathInfo, ReinjectChoice, SchedCtx, SchedEvent, Scheduler};
use crate::subflow::sender::{Received, SubflowSender};
use crate::time::{Duration, Time};

#[derive(Clone, Debug)]
pub struct SenderConfig {
    pub npaths: usize,
    pub cc: CcKind,
    pub mss: u32,
    pub init_cwnd: u32,
    /// Largest send buffer of one subflow, bytes (Linux `tcp_wmem[2]`); the buffers start
    /// smaller and grow with the congestion window ([`sndbuf_for`]).
    pub send_buffer: u64,
    /// The peer's receive buffer: the window assumed before its first ACK.
    pub initial_rwnd: u64,
    pub min_rto: Duration,
    /// RFC 5681 §4.1 restart after idle (Linux's default `tcp_slow_start_after_idle = 1`).
    pub slow_start_after_idle: bool,
}

/// Linux `tcp_wmem[0]`: the MPTCP socket's buffer is this plus its subflows' (`__mptcp_sync_sndbuf`).
const TCP_WMEM_MIN: u64 = 4096;

/// `MAX_TCP_HEADER` of the kernel the simulator is validated against (Linux 6.18 as built for
/// this project's emulator VM: `LL_MAX_HEADER` 32, so L1_CACHE_ALIGN(128 + 80) = 256). A
/// distribution kernel with wireless or Hyper-V drivers has `LL_MAX_HEADER` 128 and 320 here,
/// which doubles `per_mss` below (4,352 instead of 2,304 bytes). Measured, not assumed: a
/// fresh subflow's `sk_sndbuf` is 46,080 = 2 · 10 · 2,304 bytes there (`ss -tm`, `tb`).
const MAX_TCP_HEADER: u64 = 256;
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))` and `SKB_DATA_ALIGN(sizeof(struct
/// sk_buff))` on x86-64.
const SHINFO: u64 = 320;
const SKB: u64 = 256;

/// `per_mss` of `tcp_sndbuf_expand`: the true size Linux charges per full segment,
/// roundup_pow_of_two(MSS clamp + MAX_TCP_HEADER + aligned skb_shared_info) + aligned sk_buff
/// (2,304 bytes with a 1,460-byte clamp).
pub fn per_mss(mss: u32) -> u64 {
    let clamp = u64::from(mss).max(1460);
    (clamp + MAX_TCP_HEADER + SHINFO).next_power_of_two() + SKB
}

/// True size of an skb head beyond its payload (`tso_fragment` / `tcp_stream_alloc_skb`
/// allocate one per transmitted skb): `per_mss` less the segment it was sized for.
pub fn skb_head_truesize(mss: u32) -> u64 {
    per_mss(mss) - u64::from(mss).max(1460)
}

/// What one ACK lets leave a subflow at once before TCP Small Queues holds the rest, bytes
/// (`tcp_small_queue_check`, net/ipv4/tcp_output.c): `tcp_write_xmit` stops while the host
/// still holds more of the socket's transmitted data than twice an skb's true size or about a
/// millisecond at the pacing rate (`sk_pacing_rate >> sk_pacing_shift`, shift 10), and sends
/// the rest as the device frees the first skbs — a moment later, but after `tcp_check_space`
/// has looked at the window. Two segments at the rates of a phone's paths. Of `queued` bytes
/// waiting, returns what leaves at once (the pacing rate is asked only when more than two
/// segments wait: never for the schedulers that do not queue ahead).
fn tsq_leaves(sf: &SubflowSender, queued: u64) -> u64 {
    let two = 2 * u64::from(sf.mss());
    if queued <= two {
        return queued;
    }
    let paced = sf.pacing_rate_bps().map_or(0.0, |b| b / 8.0 / 1024.0) as u64;
    queued.min(two.max(paced))
}

/// `sk_sndbuf` of a subflow whose congestion window is `cwnd_segs` segments, as Linux's
/// `tcp_sndbuf_expand` (net/ipv4/tcp_input.c) sets it: two windows (CUBIC's 1.7 rounded up,
/// for fast recovery) of at least `TCP_INIT_CWND` = 10 segments, each segment charged
/// [`per_mss`], capped by `tcp_wmem[2]` (`cap`): a fresh subflow gets 46,080 bytes.
///
/// Linux compares it with `sk_wmem_queued`, the true size of what the subflow holds; the
/// `linux` scheduler charges that ([`wmem_queued`]), the application's send buffer counts
/// payload (the MPTCP socket charges its data fragments by their length).
pub fn sndbuf_for(cwnd_segs: u64, mss: u32, cap: u64) -> u64 {
    let segs = cwnd_segs.max(10).max(3 + 1);
    (2 * segs * per_mss(mss)).min(cap)
}

/// `sk_wmem_queued` of a subflow holding `in_flight` payload bytes sent and not cumulatively
/// acknowledged in `heads` skbs ([`crate::subflow::sender::SubflowSender::skb_heads_out`]), and
/// `queued` bytes not yet sent. Unsent data sits in large page-fragment skbs charged by their
/// length (`mptcp_sendmsg_frag`); sent data was cut into skbs as it left (`tso_fragment`),
/// each with its own head.
pub fn wmem_queued(in_flight: u64, heads: u64, queued: u64, mss: u32) -> u64 {
    in_flight + heads * skb_head_truesize(mss) + queued
}

/// The DSS mapping a subflow was last given by pushes: a push may extend it, and so refill
/// a short tail segment where the previous push stopped, only while none of it has been
/// transmitted (`mptcp_skb_can_collapse_to`, net/mptcp/protocol.c: "this mapping has not been
/// xmitted yet"; `mptcp_established_options_dss` freezes a mapping as its first segment
/// leaves). A frozen mapping keeps its short tail, which leaves short under Nagle's algorithm,
/// and the next push starts a mapping of its own. The kernel transmits only after a push's
/// loop (`tcp_push`), so what the simulator sends during the push that made the mapping does
/// not freeze it: only a transmission at an earlier instant does.
#[derive(Clone, Copy, Debug, Default)]
struct Mapping {
    /// DSN of its first byte.
    start: u64,
    /// DSN one past its last byte.
    end: u64,
    /// When its first byte-range left (`None`: not yet).
    first_tx: Option<Time>,
}

impl Mapping {
    /// Data starting at `dsn`, pushed at `now`, may join this mapping.
    fn extends_to(&self, dsn: u64, now: Time) -> bool {
        self.end > self.start && dsn == self.end && self.first_tx.is_none_or(|t| t >= now)
    }

    fn on_transmit(&mut self, dsn: u64, now: Time) {
        if self.first_tx.is_none() && (self.start..self.end).contains(&dsn) {
            self.first_tx = Some(now);
        }
    }
}

/// The earlier of two optional deadlines.
fn earlier(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Per-path counters a driver reports as metrics.
#[derive(Clone, Copy, Debug, Default)]
pub struct PathStats {
    /// Sum and count of free cwnd (bytes) sampled at every ACK arrival (Shi et al., USENIX ATC 2018, §5.1.2).
    pub free_cwnd_sum: f64,
    pub acks: u64,
    /// Sum of srtt over ACKs, for the average.
    pub srtt_sum_s: f64,
    pub srtt_samples: u64,
}

/// The scheduler's view of the connection at `now`, from its fields (a macro, not a method, so
/// that `self.sched` stays borrowable beside it).
macro_rules! sched_ctx {
    ($conn:ident, $now:expr) => {
        SchedCtx::new(
            $now,
            &$conn.subflows,
            &mut $conn.meta,
            &$conn.est,
            &mut $conn.penalties,
        )
        .with_paths(&$conn.info)
    };
}

#[derive(Debug)]
pub struct SenderConnection {
    subflows: Vec<SubflowSender>,
    meta: SendBuffer,
    sched: Box<dyn Scheduler>,
    est: Estimator,
    stats: Vec<PathStats>,
    received: Vec<Received>,
    penalties: Vec<PathId>,
    /// Assignments the scheduler made that the connection refused (a scheduler bug).
    refused: u64,
    /// Calls of `Scheduler::next` (issue "Speed at scale": decisions per data packet).
    decisions: u64,
    /// Wall-clock nanoseconds spent inside `Scheduler::next`; measured only with the
    /// `decision-timing` feature (two clock reads per decision cost ~10% of a run).
    #[cfg(feature = "decision-timing")]
    decision_ns: u64,
    /// Round-robin start for subflow retransmissions, so no subflow starves another.
    retx_turn: usize,
    /// Host buffer in use (Shi et al., USENIX ATC 2018, §2.3, §3.2): at every new transmission,
    /// the bytes from the data-ACK to the end of the segment sent. Both buffers must hold it:
    /// the send buffer keeps those bytes, the receiver's window must admit them.
    window_used: crate::hist::LogHistogram,
    /// Connection-held per-path state the scheduler reads (availability, queue, send buffer).
    info: Vec<PathInfo>,
    /// v0.9x `tp->pf`: the retransmission timer fired and no ACK has arrived since.
    pf: Vec<bool>,
    /// Upstream MPTCP-level retransmission ([`Scheduler::msk_retransmit`]), else `None`.
    msk: Option<MskRetrans>,
    /// The scheduler reads [`crate::sched::SubflowView::silent`]
    /// ([`Scheduler::watches_silence`]): each subflow's silence deadline is then a timer. Off,
    /// no subflow is ever marked silent.
    watch_silence: bool,
    /// `__mptcp_retransmit_pending_data`: the connection's unacknowledged segments, all sent
    /// again from the data-ACK on, before any new data (a subflow went stale).
    repush: VecDeque<SegNo>,
    /// Segments committed to each subflow and not yet sent (schedulers that queue ahead).
    wq: Vec<VecDeque<SegNo>>,
    /// Per subflow, the last DSS mapping pushes gave it ([`Mapping`]).
    mapping: Vec<Mapping>,
    /// What a stale subflow's write queue held when it went stale: (segment, DSN, length),
    /// in queue order. The kernel leaves that queue in place (`__mptcp_retransmit_pending_data`
    /// only marks the MPTCP-level data unsent again), so once the subflow recovers it sends
    /// those bytes, duplicates of what other subflows delivered meanwhile included; a segment
    /// data-acknowledged (and freed) before then is sent from this record.
    held: Vec<VecDeque<(SegNo, u64, u32)>>,
    /// Bit p set: `wq[p]` is not empty. The walks over the write queues visit these only (none
    /// for every scheduler that does not queue ahead).
    wq_busy: u64,
    /// Bit p set: [`SubflowSender::wants_poll`], read again after every call that may change
    /// a subflow ([`SenderConnection::touch`]): each poll's pass over the subflows visits these
    /// only (it visited all of them, a tenth of an 8-path run's instructions).
    poll_due: u64,
    /// With [`SenderConnection::watch_silence`]: each subflow's silence deadline as of the
    /// last [`SenderConnection::poll_timeout`], stale for the subflows in `silence_dirty`,
    /// which [`SenderConnection::touch`] marks. Every pump asks `poll_timeout`, usually after
    /// one or two subflows changed, and a silence deadline costs a probe-timeout computation
    /// (issue "Speed at scale": `backup`'s `poll_timeout` grew by about 300 instructions per
    /// data packet from 1 to 8 paths).
    silence: Vec<Option<Time>>,
    silence_dirty: u64,
    /// The subflows' congestion control: only a coupled one needs every subflow's state on an
    /// ACK ([`CoupledView`], [`CcKind::is_coupled`]).
    cc: CcKind,
    /// `tcp_wmem[2]`.
    wmem_max: u64,
    /// A connection send buffer fixed by the application (`SO_SNDBUF` sets `SOCK_SNDBUF_LOCK`,
    /// which turns autotuning off: `tcp_should_expand_sndbuf`); `None` autotunes.
    sndbuf_lock: Option<u64>,
}

/// What `poll_transmit` produced beyond the segment itself, for traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxKind {
    New,
    /// Sent on this subflow for data another subflow carried before.
    Reinject,
    /// A retransmission on this subflow: its own (subflow level), or the connection resending
    /// on the subflow that carried the data before.
    Retransmit,
}

impl SenderConnection {
    pub fn new(cfg: &SenderConfig, sched: Box<dyn Scheduler>) -> Self {
        assert!(cfg.npaths >= 1 && cfg.npaths <= MAX_PATHS);
        let sndbuf = sndbuf_for(u64::from(cfg.init_cwnd), cfg.mss, cfg.send_buffer);
        let mut conn = SenderConnection {
            subflows: (0..cfg.npaths)
                .map(|p| {
                    let mut sf = SubflowSender::new(
                        p as PathId,
                        cfg.cc,
                        cfg.mss,
                        cfg.init_cwnd,
                        cfg.min_rto,
                    );
                    sf.set_restart_after_idle(cfg.slow_start_after_idle);
                    sf
                })
                .collect(),
            meta: SendBuffer::new(cfg.mss, cfg.send_buffer, cfg.initial_rwnd),
            sched,
            est: Estimator::new(cfg.npaths),
            stats: vec![PathStats::default(); cfg.npaths],
            received: Vec::new(),
            penalties: Vec::new(),
            refused: 0,
            decisions: 0,
            #[cfg(feature = "decision-timing")]
            decision_ns: 0,
            retx_turn: 0,
            window_used: crate::hist::LogHistogram::new(),
            info: vec![
                PathInfo {
                    available: true,
                    queued: 0,
                    sndbuf,
                };
                cfg.npaths
            ],
            pf: vec![false; cfg.npaths],
            msk: None,
            watch_silence: false,
            repush: VecDeque::new(),
            wq: vec![VecDeque::new(); cfg.npaths],
            mapping: vec![Mapping::default(); cfg.npaths],
            held: vec![VecDeque::new(); cfg.npaths],
            wq_busy: 0,
            poll_due: 0,
            silence: vec![None; cfg.npaths],
            silence_dirty: !0,
            cc: cfg.cc,
            wmem_max: cfg.send_buffer,
            sndbuf_lock: None,
        };
        if conn.sched.msk_retransmit() && cfg.npaths > 1 {
            conn.msk = Some(MskRetrans::default());
        }
        conn.est.track_delta(conn.sched.reads_delta_owd());
        conn.watch_silence = conn.sched.watches_silence();
        conn.meta.enable_cuts();
        // Nagle at the data level for schedulers that decide segment by segment (v0.9x);
        // one that queues ahead (upstream) runs it on its subflows.
        conn.meta.set_nagle(!conn.sched.queues_ahead());
        // Upstream's MPTCP socket (the scheduler that queues ahead) charges its write memory
        // by page fragments (`mptcp_sendmsg`); v0.9x's meta socket is a TCP socket.
        if conn.sched.queues_ahead() && !conn.sched.single_path() {
            conn.meta.charge_page_frags();
        }
        conn.sync_sndbuf();
        conn.touch_all();
        conn
    }

    /// Bring bit `p` of [`SenderConnection::poll_due`] up to date after subflow `p` changed.
    /// Also marks `p`'s silence deadline stale.
    fn touch(&mut self, p: usize) {
        if self.watch_silence {
            self.silence_dirty |= 1 << p;
        }
        self.refresh_poll_due(p);
    }

    /// Bring bit `p` of [`SenderConnection::poll_due`] up to date, for a call that changed
    /// nothing a silence deadline reads.
    fn refresh_poll_due(&mut self, p: usize) {
        if self.subflows[p].wants_poll() {
            self.poll_due |= 1 << p;
        } else {
            self.poll_due &= !(1 << p);
        }
    }

    fn touch_all(&mut self) {
        for p in 0..self.subflows.len() {
            self.touch(p);
        }
    }

    /// CUBIC's slow-start exit on every subflow (`transport.hystart`); before any traffic.
    pub fn set_hystart(&mut self, mode: crate::cc::HyStartMode) {
        for sf in &mut self.subflows {
            sf.set_hystart(mode);
        }
        self.touch_all();
    }

    /// Internal TCP pacing on every subflow (`transport.pacing`).
    pub fn set_pacing(&mut self, on: bool) {
        for sf in &mut self.subflows {
            sf.set_pacing(on);
        }
        self.touch_all();
    }

    /// Every subflow leaves slow start (a congestion event without loss: the window halved and
    /// kept as the threshold), for fixtures that need congestion avoidance from the start.
    #[cfg(test)]
    pub(crate) fn leave_slow_start(&mut self, now: Time) {
        for sf in &mut self.subflows {
            sf.congestion_event_for_test(now);
        }
        self.touch_all();
    }

    /// `TCP_NODELAY` (`transport.nodelay`): Nagle never holds a short segment, on the subflows
    /// nor at the data level ([`SendBuffer::nagle_holds`]).
    pub fn set_nodelay(&mut self, on: bool) {
        self.meta.set_nagle(!on && !self.sched.queues_ahead());
        for sf in &mut self.subflows {
            sf.set_nodelay(on);
        }
        self.touch_all();
    }

    // ---- application ---------------------------------------------------------------------

    /// Queue application data; `end_of_chunk` is the hint API of Guo et al., MobiCom 2017, §5.
    pub fn write(&mut self, bytes: u64, end_of_chunk: bool) -> u64 {
        self.meta.write(bytes, end_of_chunk)
    }
    /// What the application's next write may copy ([`SendBuffer::app_space`]: nothing while
    /// its writer sleeps for the buffer to drain).
    pub fn send_buffer_free(&self) -> u64 {
        self.meta.app_space()
    }
    /// The application has more to write than [`SenderConnection::send_buffer_free`] takes
    /// (and writes nothing now): its writer sleeps ([`SendBuffer::writer_waits`]).
    pub fn writer_waits(&mut self) {
        self.meta.writer_waits();
    }

    // ---- reading -------------------------------------------------------------------------

    pub fn subflows(&self) -> &[SubflowSender] {
        &self.subflows
    }
    pub fn meta(&self) -> &SendBuffer {
        &self.meta
    }
    pub fn estimator(&self) -> &Estimator {
        &self.est
    }
    pub fn scheduler_name(&self) -> &'static str {
        self.sched.name()
    }
    /// The scheduler's sequence gap, segments (STMS; `None` for other schedulers).
    pub fn scheduler_gap(&self) -> Option<f64> {
        self.sched.gap_segments()
    }
    /// The one path a single-path scheduler uses ([`Scheduler::only_path`]).
    pub fn scheduler_only_path(&self) -> Option<PathId> {
        self.sched.only_path()
    }
    pub fn path_stats(&self) -> &[PathStats] {
        &self.stats
    }
    /// Distribution of the host buffer in use at each new transmission, bytes.
    pub fn window_used(&self) -> &crate::hist::LogHistogram {
        &self.window_used
    }
    pub fn refused_assignments(&self) -> u64 {
        self.refused
    }

    /// Scheduler decisions (calls of `Scheduler::next`) so far.
    pub fn sched_decisions(&self) -> u64 {
        self.decisions
    }

    /// Nanoseconds spent in `Scheduler::next`, when built with `decision-timing`.
    pub fn sched_decision_ns(&self) -> Option<u64> {
        #[cfg(feature = "decision-timing")]
        return Some(self.decision_ns);
        #[cfg(not(feature = "decision-timing"))]
        None
    }
    /// Connection-held state of every path (availability, write queue, send buffer).
    pub fn path_info(&self) -> &[PathInfo] {
        &self.info
    }
    /// Every byte written has been acknowledged at the data level.
    pub fn all_acked(&self) -> bool {
        self.meta.data_ack() == self.meta.written()
    }

    // ---- connection-level state ------------------------------------------------------------

    /// The MPTCP socket's send buffer: `tcp_wmem[0]` plus the buffers of the subflows in use
    /// (`__mptcp_sync_sndbuf`). A subflow counts once it has carried data; before any has,
    /// the first one does (the initial subflow of a fresh connection).
    fn sync_sndbuf(&mut self) {
        if let Some(bytes) = self.sndbuf_lock {
            self.meta.set_capacity(bytes);
            return;
        }
        let mut sum = 0;
        let mut any = false;
        let single = self.sched.single_path();
        for (sf, i) in self.subflows.iter().zip(&self.info) {
            if sf.bytes_sent() > 0 || (!single && sf.is_established()) {
                sum += i.sndbuf;
                any = true;
            }
        }
        if !any {
            sum = self.info[0].sndbuf;
        }
        self.meta.set_capacity(TCP_WMEM_MIN + sum);
    }

    /// Fix the connection's send buffer at `bytes`, as `setsockopt(SO_SNDBUF)` does on Linux
    /// (the size is locked and no longer autotuned).
    pub fn lock_send_buffer(&mut self, bytes: u64) {
        self.sndbuf_lock = Some(bytes);
        self.sync_sndbuf();
    }

    /// `tcp_new_space` → `tcp_sndbuf_expand` after an ACK freed data: the buffer follows the
    /// window unless the subflow is congestion-window limited (`tcp_should_expand_sndbuf`).
    ///
    /// Linux asks after the push the ACK allows, not before: `tcp_data_snd_check`
    /// (net/ipv4/tcp_input.c) runs `tcp_push_pending_frames`, then `tcp_check_space`. Data
    /// waiting in the subflow's own write queue fills the window again first, but only as
    /// much of it as TCP Small Queues lets leave at once ([`tsq_leaves`]): an ACK that opens
    /// more than that expands the buffer even with data queued. Measured on Linux 6.18
    /// (sock_diag every 0.5 ms in the emulator's server namespace, 1 MiB at LTE 270 ms,
    /// docs/fidelity.md): while WiFi's quick ACKs each opened two segments its `tb` stayed at
    /// 46,080 with 2-50 kB queued; from the first ACK after the queue drained it followed the
    /// window, and then on every ACK that opened three or four segments (10-68 kB queued) and
    /// on one of about forty that opened two. (For a plain TCP socket the application's unsent data is that queue;
    /// the connection-level data of `single` is not counted here.)
    fn expand_sndbuf(&mut self, p: usize, now: Time) {
        let sf = &self.subflows[p];
        // A deferred skb leaves nothing now ([`SenderConnection::tso_defers`]).
        let leaves = if self.tso_defers(p, now) {
            0
        } else {
            tsq_leaves(sf, self.info[p].queued)
        };
        if sf.in_flight() + leaves >= sf.cwnd() {
            return;
        }
        let want = sndbuf_for(sf.cwnd() / u64::from(sf.mss()), sf.mss(), self.wmem_max);
        let i = &mut self.info[p];
        if want > i.sndbuf {
            i.sndbuf = want;
            self.sync_sndbuf();
        }
    }

    fn refresh_availability(&mut self) {
        if self.sched.single_path() {
            return;
        }
        for p in 0..self.info.len() {
            self.info[p].available = self.is_available(p);
        }
    }

    /// Subflow `p` may take data: not potentially failed and not in the RTO Loss state.
    fn is_available(&self, p: usize) -> bool {
        !self.pf[p] && !self.subflows[p].in_loss()
    }

    /// [`SenderConnection::refresh_availability`] after an ACK on `p`: only `p` can have
    /// changed. A subflow enters the RTO Loss state only on its own ACKs and timeouts, and is
    /// marked potentially failed or cleared only by its own timeout or ACK; the timeouts
    /// refresh every subflow (issue "Speed at scale": the pass over all of them ran on every
    /// ACK).
    fn refresh_availability_of(&mut self, p: usize) {
        if self.sched.single_path() {
            return;
        }
        self.info[p].available = self.is_available(p);
        debug_assert!(
            (0..self.info.len()).all(|q| self.info[q].available == self.is_available(q)),
            "availability out of date"
        );
    }

    // ---- connection timeline ---------------------------------------------------------------

    /// Subflow `p` exists but its handshake has not completed: no scheduler may use it and the
    /// connection refuses assignments to it (a driver that models the MPTCP handshakes calls
    /// this before the first `poll_transmit`; without it every subflow is usable at once).
    pub fn set_subflow_pending(&mut self, p: PathId) {
        self.subflows[p as usize].set_pending();
        self.touch(p as usize);
        self.sync_sndbuf();
    }

    /// Subflow `p`'s handshake completed at the server (the third ACK arrived; for a joined
    /// subflow, the MP_JOIN ACK: RFC 8684 §3.2). `handshake_rtt` seeds its RTT estimate.
    pub fn set_subflow_established(&mut self, p: PathId, handshake_rtt: Option<Duration>) {
        self.subflows[p as usize].establish(handshake_rtt);
        self.touch(p as usize);
        self.sync_sndbuf();
    }

    // ---- input ---------------------------------------------------------------------------

    pub fn handle_input(&mut self, now: Time, ack: &Ack) {
        let p = ack.path as usize;
        if p >= self.subflows.len() {
            return;
        }
        // Filled only for a coupled controller: zeroing them on every ACK cost a few dozen
        // stores per ACK for the others.
        let mut windows;
        let mut intervals;
        let n = self.subflows.len();
        let coupled = if self.cc.is_coupled() {
            windows = [(0u64, None); MAX_PATHS];
            intervals = [0u64; MAX_PATHS];
            for (w, s) in windows.iter_mut().zip(&self.subflows) {
                *w = (s.cwnd(), s.srtt());
            }
            let shared = if self.cc.reads_loss_intervals() {
                for (l, s) in intervals.iter_mut().zip(&self.subflows) {
                    *l = s.loss_interval();
                }
                n
            } else {
                0
            };
            CoupledView {
                subflows: &windows[..n],
                loss_intervals: &intervals[..shared],
                this: p,
            }
        } else {
            CoupledView {
                this: p,
                ..CoupledView::default()
            }
        };
        self.received.clear();
        let out = self.subflows[p].on_ack(now, ack, coupled, &mut self.received);
        self.touch(p);
        // v0.9x `mptcp_data_ack`: "Something got acked - subflow is operational again".
        self.pf[p] = false;
        if let Some(m) = &mut self.msk {
            m.on_ack(p);
        }
        for r in &self.received {
            self.meta.on_received(r.meta_seg);
        }
        if out.newly_acked_bytes > 0 {
            self.expand_sndbuf(p, now);
        }
        if let (Some(echo), Some((sent, bif))) = (ack.owd_echo, out.echoed) {
            self.est.on_owd_sample(p, sent, bif, echo.recv_time);
        }
        if let Some(r) = out.rate_sample {
            self.est.on_bandwidth_sample(p, r.bps, r.app_limited);
        }
        let sf = &self.subflows[p];
        let st = &mut self.stats[p];
        st.acks += 1;
        st.free_cwnd_sum += sf.cwnd_free() as f64;
        if let Some(s) = sf.srtt() {
            st.srtt_sum_s += s.as_secs_f64();
            st.srtt_samples += 1;
        }
        let old_data_ack = self.meta.data_ack();
        self.meta.on_data_ack(ack.data_ack, ack.rwnd);
        if self.meta.data_ack() > old_data_ack {
            // `__mptcp_clean_una`: stop once everything is acknowledged, else restart.
            if self.meta.data_ack() >= self.meta.written() {
                if let Some(m) = &mut self.msk {
                    m.stop();
                }
            } else {
                self.msk_arm(now, true);
            }
        }
        self.refresh_availability_of(p);

        let path = ack.path;
        self.notify(
            now,
            SchedEvent::Ack {
                path,
                newly_acked: out.newly_acked_bytes,
                rtt: out.rtt_sample,
            },
        );
        if out.entered_recovery {
            self.notify(now, SchedEvent::Loss { path });
        }
        if self.meta.data_ack() > old_data_ack {
            let data_ack = self.meta.data_ack();
            self.notify(now, SchedEvent::DataAck { data_ack });
        }
    }

    #[inline]
    fn notify(&mut self, now: Time, ev: SchedEvent) {
        let mut ctx = sched_ctx!(self, now);
        self.sched.on_event(&mut ctx, &ev);
        self.apply_penalties(now);
    }

    #[inline]
    fn apply_penalties(&mut self, now: Time) {
        // Called after every decision and event; a drain of the empty list was not free.
        if self.penalties.is_empty() {
            return;
        }
        for p in self.penalties.drain(..) {
            // Only the window changes: nothing `poll_due` reads.
            self.subflows[p as usize].penalize(now);
        }
    }

    // ---- output --------------------------------------------------------------------------

    /// The next segment to put on the wire, if any may be sent now.
    #[inline]
    pub fn poll_transmit(&mut self, now: Time) -> Option<(DataSegment, TxKind)> {
        // The last call of every push finds nothing to do (a third of all calls in a bulk
        // run): answered here, inlined into the driver, without the full step.
        if self.nothing_to_send() {
            #[cfg(debug_assertions)]
            {
                let out = self.poll_steps(now);
                debug_assert!(out.is_none(), "the fast exit missed a transmission");
            }
            return None;
        }
        self.poll_steps(now)
    }

    /// `poll_step` has nothing to do: no subflow to bring up to date or with a
    /// retransmission (`poll_due`), no write queue, re-push or reinjection, no subflow that
    /// may carry new data, and a scheduler that does not queue ahead. Each check is one of
    /// `poll_step`'s, which then returns `None` without changing anything.
    #[inline]
    fn nothing_to_send(&self) -> bool {
        !self.any_may_carry()
            && self.poll_due == 0
            && self.wq_busy == 0
            && self.repush.is_empty()
            && !self.meta.reinject_pending()
            && !self.sched.queues_ahead()
    }

    fn poll_steps(&mut self, now: Time) -> Option<(DataSegment, TxKind)> {
        // A step that only cleared something (an acknowledged queue entry, a dropped
        // reinjection, a push or an F-RTO wait that ended) asks for another one. A loop, not
        // a recursive call: thousands of such steps at one instant overflowed the stack.
        loop {
            let mut again = false;
            let out = self.poll_step(now, &mut again);
            if !again {
                return out;
            }
        }
    }

    fn poll_step(&mut self, now: Time, again: &mut bool) -> Option<(DataSegment, TxKind)> {
        // One pass over the subflows (issue "Speed at scale": three passes were a tenth of an
        // 8-path run): pacing and restart-after-idle brought up to `now`, then subflow-level
        // retransmissions first (RFC 6675 NextSeg rule 1), round robin. A subflow the pass has
        // not reached when a retransmission leaves is brought up to date by the next poll at the
        // same instant, before any scheduler decision: each update reads only its own subflow
        // and the clock, so the order is invisible. Restart-after-idle needs an empty board, and
        // a subflow with a retransmission to send has a full one.
        let n = self.subflows.len();
        debug_assert!(
            (0..n).all(|p| self.subflows[p].wants_poll() == (self.poll_due >> p & 1 == 1)),
            "poll_due out of date"
        );
        // Only the subflows where the pass has something to do: for the others each step
        // below is a no-op. (None at all is the usual case, and the empty rotation was not
        // free.)
        let turn = self.retx_turn.min(n);
        let due = if self.poll_due == 0 {
            None
        } else {
            Some(pathmask::rotation(self.poll_due, turn))
        };
        for p in due.into_iter().flatten() {
            let sf = &mut self.subflows[p];
            sf.update_pacing(now);
            let restarted = sf.restart_if_idle(now);
            let resend = sf.has_retransmission()
                && sf.pacing_allows()
                && (sf.has_cwnd_space() || sf.probe_pending());
            let retransmission = if resend {
                sf.send_retransmission(now)
            } else {
                None
            };
            // Pacing's update alone moves nothing `touch` refreshes (`wants_poll` asks whether
            // pacing is on, not whether it holds a segment back; no silence deadline reads
            // it): an idle subflow, due at every poll for its restart check, is not touched
            // each time (issue "Speed at scale").
            if restarted || resend {
                self.touch(p);
            }
            if let Some(seg) = retransmission {
                // The segment's latest copy on this path leaves now: schedulers that judge a
                // copy by its send time (DEMS, Eq. 11-12) see the retransmission.
                if let Some(m) = self.subflows[p].last_resent_meta_seg() {
                    self.meta.on_transmit_wire(m, p as PathId, now);
                }
                self.retx_turn = if p + 1 < n { p + 1 } else { 0 };
                return Some((seg, TxKind::Retransmit));
            }
        }
        // Data committed to a subflow's write queue leaves as its window opens (`tcp_push`).
        if self.wq_busy != 0 {
            // `tcp_write_xmit` on a subflow with a send head: a full window stops it and marks
            // the subflow cwnd-limited (`tcp_cwnd_validate`), which lets its window grow.
            debug_assert!(
                (0..n).all(|p| self.wq[p].is_empty() != (self.wq_busy >> p & 1 == 1)),
                "wq_busy out of date"
            );
            for p in pathmask::bits(self.wq_busy) {
                self.subflows[p].note_blocked_by_cwnd();
            }
            for p in pathmask::bits(self.wq_busy) {
                if self.wq_sendable(p, now) {
                    let seg = self.wq[p].pop_front().expect("sendable queue");
                    if self.wq[p].is_empty() {
                        self.wq_busy &= !(1 << p);
                    }
                    if let Some((dsn, len)) = self.take_held(p, seg) {
                        return Some(self.transmit_held(now, p, seg, dsn, len));
                    }
                    if self.meta.seg(seg).is_none() {
                        // Acknowledged at the data level while it waited here (upstream: a
                        // timed-out subflow keeps its queue, and another subflow's
                        // retransmission delivered the data): nothing left to send.
                        let meta = &self.meta;
                        self.info[p].queued = self.wq[p]
                            .iter()
                            .filter_map(|&s| meta.seg(s))
                            .map(|r| u64::from(r.len))
                            .sum();
                        *again = true;
                        return None;
                    }
                    return Some(self.transmit(now, p as PathId, seg, true));
                }
            }
        }
        // A stale subflow's re-push: the whole queue again, duplicates of what already
        // arrived included (the kernel knows only the data-ACK), ahead of new data.
        while let Some(&seg) = self.repush.front() {
            if self.meta.seg(seg).is_none() {
                self.repush.pop_front();
                continue;
            }
            let best = (0..n)
                .filter(|&q| self.may_carry(q as PathId))
                .min_by_key(|&q| self.subflows[q].srtt().unwrap_or(Duration::MAX));
            let p = best? as PathId;
            self.repush.pop_front();
            if self.meta.seg(seg).is_some_and(|r| r.sent_on(p)) {
                self.meta.count_resend(seg);
            }
            return Some(self.transmit(now, p, seg, false));
        }
        // Reinjections before new data (v0.9x `__mptcp_next_segment`).
        if let Some(seg) = self.meta.reinject_head() {
            let choice = {
                let mut ctx = sched_ctx!(self, now);
                self.sched.reinject_path(&mut ctx, seg)
            };
            match choice {
                ReinjectChoice::Send(p) if self.may_carry(p) => {
                    self.meta.take_reinject(seg);
                    return Some(self.transmit(now, p, seg, false));
                }
                ReinjectChoice::Drop => {
                    self.meta.take_reinject(seg);
                    *again = true;
                    return None;
                }
                ReinjectChoice::Send(p) => {
                    // As for new data below: the window stopped what the scheduler wanted sent.
                    if self.info.get(p as usize).is_some_and(|i| i.available) {
                        self.subflows[p as usize].note_blocked_by_cwnd();
                    }
                    self.refused += 1;
                    return None;
                }
                ReinjectChoice::Wait => return None,
            }
        }
        let queues = self.sched.queues_ahead();
        if !queues && !self.any_may_carry() {
            return None;
        }
        loop {
            self.decisions += 1;
            #[cfg(feature = "decision-timing")]
            let t0 = std::time::Instant::now();
            let a = {
                let mut ctx = sched_ctx!(self, now);
                self.sched.next(&mut ctx)
            };
            #[cfg(feature = "decision-timing")]
            {
                self.decision_ns += t0.elapsed().as_nanos() as u64;
            }
            self.apply_penalties(now);
            let Some(Assignment { path, seg }) = a else {
                // Every subflow with window space is left idle by the scheduler. A subflow whose
                // F-RTO waited for new data retransmits instead (Linux `tcp_process_loss`), and
                // so does one whose queued data cannot leave now (`tcp_xmit_recovery`: the push
                // sent nothing new, so `frto = 0` and the retransmission queue goes). Before,
                // the second kind was asked again and again at the same instant.
                //
                // Each subflow's calls read and change only that subflow (and read its write
                // queue), so the subflows with a queue are handled after the others: one pass
                // over the subflows without indexing, which runs after every empty decision
                // (issue "Speed at scale"). Neither call moves a silence deadline (the send
                // buffer, the last ACK, the sRTT): only `poll_due` is brought up to date.
                debug_assert!(
                    (0..n).all(|p| self.wq[p].is_empty() != (self.wq_busy >> p & 1 == 1)),
                    "wq_busy out of date"
                );
                let mut released = false;
                let mut queued_waits = 0u64;
                for (p, sf) in self.subflows.iter_mut().enumerate() {
                    let waits = sf.frto_waits_for_new_data();
                    if self.wq_busy >> p & 1 == 0 {
                        sf.mark_app_limited();
                        // Only an F-RTO wait that ends changes what `poll_due` reads (the
                        // app-limited mark does not): every other bit is as up to date as the
                        // step's start found it.
                        if waits {
                            if sf.wants_poll() {
                                self.poll_due |= 1 << p;
                            } else {
                                self.poll_due &= !(1 << p);
                            }
                        }
                        released |= waits;
                    } else if waits {
                        queued_waits |= 1 << p;
                    }
                }
                for p in pathmask::bits(queued_waits) {
                    if !self.wq_sendable(p, now) {
                        self.subflows[p].end_frto_wait();
                        self.refresh_poll_due(p);
                        released = true;
                    }
                }
                debug_assert!(
                    (0..n).all(|p| self.subflows[p].wants_poll() == (self.poll_due >> p & 1 == 1)),
                    "poll_due out of date after an empty decision"
                );
                // The push is over: what it left in a subflow's queue with window space goes
                // out now (`mptcp_push_release` → `tcp_push`).
                let pushed = pathmask::bits(self.wq_busy).any(|p| self.wq_sendable(p, now));
                *again = released || pushed;
                return None;
            };
            let p = path as usize;
            // (`may_send` is false for a segment not in the buffer, and for one Nagle holds.)
            if p >= n || !self.meta.may_send(seg) {
                self.refused += 1;
                return None;
            }
            if queues && self.info[p].available {
                // The push goes on where this subflow's tail ends: while none of that mapping
                // has left, the kernel appends to its skb (`mptcp_skb_can_collapse_to`), so a
                // short tail grows back to an MSS; else the data starts a mapping of its own.
                let Some(rec) = self.meta.seg(seg).copied() else {
                    self.refused += 1;
                    return None;
                };
                let extends = self.mapping[p].extends_to(rec.dsn, now);
                if !extends {
                    self.mapping[p] = Mapping {
                        start: rec.dsn,
                        end: rec.dsn,
                        first_tx: None,
                    };
                }
                // Whether the tail takes some of it or not, the mapping now ends with it.
                self.mapping[p].end = rec.dsn + u64::from(rec.len);
                if extends && self.wq[p].back().is_some_and(|&t| t + 1 == seg) {
                    let (moved, all) = self.meta.collapse(seg - 1);
                    self.info[p].queued += moved;
                    if all {
                        // All of it joined the tail: the scheduler chooses for the data
                        // after it.
                        continue;
                    }
                }
                let len = self.meta.seg(seg).map_or(0, |r| r.len);
                // A short segment is where this push ends: it waits in the queue until the
                // push is over, and leaves then unless Nagle holds it (the kernel transmits
                // only at `tcp_push`, after the push loop).
                if self.wq[p].is_empty()
                    && self.subflows[p].has_cwnd_space()
                    && len >= self.subflows[p].mss()
                {
                    return Some(self.transmit(now, path, seg, false));
                }
                self.commit_to_queue(p, seg, len, now);
                continue;
            }
            if !self.may_carry(path) {
                // The scheduler wanted this subflow: if its window is what stopped the data,
                // the subflow is cwnd-limited, as `tcp_write_xmit` would find it with the data
                // in its queue. (A subflow the scheduler passed over is not.)
                if self.info[p].available {
                    self.subflows[p].note_blocked_by_cwnd();
                }
                self.refused += 1;
                return None;
            }
            return Some(self.transmit(now, path, seg, false));
        }
    }

    /// The head of `p`'s write queue may leave now: window space, and not a short last segment
    /// that Nagle holds back ([`SubflowSender::nagle_holds`]).
    fn wq_sendable(&self, p: usize, now: Time) -> bool {
        let (sf, q) = (&self.subflows[p], &self.wq[p]);
        let Some(&head) = q.front() else {
            return false;
        };
        let len = match self.held[p].front() {
            Some(&(s, _, len)) if s == head => len,
            _ => self.meta.seg(head).map_or(0, |r| r.len),
        };
        sf.has_cwnd_space()
            && if q.len() > 1 {
                !self.tso_defers(p, now)
            } else {
                !sf.nagle_holds(len)
            }
    }

    /// The skb at the head of `p`'s write queue holds more than one segment (the queue holds
    /// two or more) and waits for the next ACK ([`SubflowSender::tso_defers`]); the peer's
    /// window counts from the subflow's next byte as the kernel's `tcp_wnd_end` does (MPTCP
    /// advertises the connection's window on every subflow).
    fn tso_defers(&self, p: usize, now: Time) -> bool {
        if self.wq[p].len() < 2 {
            return false;
        }
        let (sf, wnd) = (&self.subflows[p], self.meta.peer_rwnd());
        sf.tso_defers(now, wnd, wnd.saturating_sub(sf.outstanding_bytes()))
    }

    /// The record of `seg` if it is the head of what stale subflow `p` held (earlier entries,
    /// passed over, are dropped): its DSN and length when sent.
    fn take_held(&mut self, p: usize, seg: SegNo) -> Option<(u64, u32)> {
        let h = &mut self.held[p];
        while let Some(&(s, dsn, len)) = h.front() {
            if s > seg {
                return None;
            }
            h.pop_front();
            if s == seg {
                return Some((dsn, len));
            }
        }
        None
    }

    /// Send what stale subflow `p` held at the head of its write queue: as a resend of meta
    /// segment `seg` while that is still in the buffer as recorded, else (data-acknowledged
    /// meanwhile) as the duplicate the kernel sends from the subflow's own queue.
    fn transmit_held(
        &mut self,
        now: Time,
        p: usize,
        seg: SegNo,
        dsn: u64,
        len: u32,
    ) -> (DataSegment, TxKind) {
        if self
            .meta
            .seg(seg)
            .is_some_and(|r| r.dsn == dsn && r.len == len)
        {
            return self.transmit(now, p as PathId, seg, true);
        }
        self.info[p].queued = self.info[p].queued.saturating_sub(u64::from(len));
        let d = self.subflows[p].send_new(now, seg, dsn, len);
        self.touch(p);
        (d, TxKind::Reinject)
    }

    /// Some subflow may take one more segment now ([`SenderConnection::may_carry`]). Asked
    /// at least once per poll: a pass over the subflows and their connection state side by
    /// side, without indexing either (issue "Speed at scale").
    #[inline]
    fn any_may_carry(&self) -> bool {
        let any = self
            .subflows
            .iter()
            .zip(&self.info)
            .any(|(s, i)| i.available && s.has_cwnd_space());
        debug_assert_eq!(
            any,
            (0..self.subflows.len()).any(|p| self.may_carry(p as PathId))
        );
        any
    }

    /// `p` may take one more segment now: available, with congestion-window space.
    fn may_carry(&self, p: PathId) -> bool {
        let i = p as usize;
        i < self.subflows.len() && self.info[i].available && self.subflows[i].has_cwnd_space()
    }

    /// Put meta segment `seg` on subflow `p` (new data, a reinjection, or a queued segment).
    fn transmit(
        &mut self,
        now: Time,
        path: PathId,
        seg: SegNo,
        from_queue: bool,
    ) -> (DataSegment, TxKind) {
        // One lookup of the record: it is updated and returns what it was.
        let (dsn, len, tx_mask, wire_mask) = self
            .meta
            .on_transmit_wire(seg, path, now)
            .expect("segment in the buffer");
        let end = dsn + u64::from(len);
        let p = path as usize;
        if from_queue {
            self.info[p].queued = self.info[p].queued.saturating_sub(u64::from(len));
        }
        // Another subflow carried it: a reinjection. This subflow put it on the wire before (the
        // connection resending on the same subflow, upstream's `__mptcp_retrans` or a repush
        // of a stale subflow's data): a retransmission, not new data.
        let kind = if tx_mask & !(1u8 << path) != 0 {
            TxKind::Reinject
        } else if wire_mask & (1u8 << path) != 0 {
            TxKind::Retransmit
        } else {
            TxKind::New
        };
        // `tcp_minshall_update(meta_tp, ...)` after `mptcp_skb_entail`.
        self.meta.on_meta_send(dsn, len);
        self.mapping[p].on_transmit(dsn, now);
        let first_on_path = self.subflows[p].bytes_sent() == 0;
        self.window_used
            .record(end.saturating_sub(self.meta.data_ack()));
        let d = self.subflows[p].send_new(now, seg, dsn, len);
        self.touch(p);
        if first_on_path {
            self.sync_sndbuf();
        }
        // `mptcp_subflow_get_send` sets the interval from the active subflows' pending timers
        // (`__mptcp_set_timeout`); `__mptcp_push_pending`: "ensure the rtx timer is running".
        if let Some(m) = &mut self.msk {
            let timers = self.subflows.iter().zip(&self.info).map(|(s, i)| {
                (i.available && s.is_established())
                    .then(|| s.retransmission_timer())
                    .flatten()
            });
            m.set_timeout(now, timers);
        }
        self.msk_arm(now, false);
        (d, kind)
    }

    /// Earliest retransmission timer (a subflow's or the connection's), the time pacing lets a
    /// held-back segment leave, or (for a scheduler that watches for it) a subflow's silence
    /// deadline.
    #[inline]
    pub fn poll_timeout(&mut self) -> Option<Time> {
        // A plain loop over `Option`s: the iterator chain it replaces (flat_map, chain,
        // flatten) cost about 120 instructions per call for one subflow, and every pump asks.
        let mut first = self.msk.as_ref().and_then(MskRetrans::deadline);
        if self.watch_silence && self.subflows.len() > 1 {
            return self.poll_timeout_watching_silence(first);
        }
        // Each subflow's transmit timer and pacing release as one kept instant (`u64::MAX`:
        // none), so the pass is a plain minimum.
        let mut next = u64::MAX;
        for s in &self.subflows {
            next = next.min(s.next_deadline());
            if self.watch_silence {
                // One subflow: its deadline is as cheap to compute as to look up.
                first = earlier(first, s.silence_deadline());
            }
        }
        earlier(first, (next != u64::MAX).then_some(Time(next)))
    }

    /// [`SenderConnection::poll_timeout`] with several subflows and a scheduler that watches
    /// for silence: the kept deadlines brought up to date. Apart, so that the common case stays
    /// small enough to inline into the driver's pump (benchmark (a): 9 instructions per packet).
    #[inline(never)]
    fn poll_timeout_watching_silence(&mut self, mut first: Option<Time>) -> Option<Time> {
        let all = !0u64 >> (64 - self.subflows.len());
        for p in pathmask::bits(self.silence_dirty & all) {
            self.silence[p] = self.subflows[p].silence_deadline();
        }
        self.silence_dirty = 0;
        let mut next = u64::MAX;
        for (s, &silence) in self.subflows.iter().zip(&self.silence) {
            debug_assert_eq!(
                silence,
                s.silence_deadline(),
                "silence deadline out of date"
            );
            next = next.min(s.next_deadline());
            first = earlier(first, silence);
        }
        earlier(first, (next != u64::MAX).then_some(Time(next)))
    }

    pub fn handle_timeout(&mut self, now: Time) {
        for p in 0..self.subflows.len() {
            let sf = &mut self.subflows[p];
            if self.watch_silence && sf.silence_deadline().is_some_and(|t| t <= now) {
                sf.mark_silent();
            }
            let rto = sf.retransmission_timer().is_some_and(|t| t <= now) && sf.on_timeout(now);
            self.touch(p);
            if rto {
                self.on_subflow_rto(p);
                self.notify(now, SchedEvent::Rto { path: p as PathId });
            }
        }
        if self
            .msk
            .as_ref()
            .and_then(MskRetrans::deadline)
            .is_some_and(|t| t <= now)
        {
            self.msk_retrans(now);
        }
    }

    /// (Re)start the MPTCP-level retransmission timer with the interval the last push set
    /// (`mptcp_reset_rtx_timer`, `msk->timer_ival`); unless `restart`, only if it is not
    /// running. Nothing without upstream retransmission.
    fn msk_arm(&mut self, now: Time, restart: bool) {
        if let Some(m) = &mut self.msk {
            if restart || m.deadline().is_none() {
                m.reset(now);
            }
        }
    }

    /// Commit meta segment `seg` (`len` bytes) to subflow `p`'s write queue: the meta level
    /// counts it as taken by `p` from now on, and it leaves as `p`'s window allows.
    fn commit_to_queue(&mut self, p: usize, seg: SegNo, len: u32, now: Time) {
        self.meta.on_transmit(seg, p as PathId, now);
        self.wq[p].push_back(seg);
        self.wq_busy |= 1 << p;
        self.info[p].queued += u64::from(len);
    }

    /// The MPTCP-level retransmission timer fired: `__mptcp_retrans` ([`crate::msk_rtx`]).
    fn msk_retrans(&mut self, now: Time) {
        let Some(mut m) = self.msk.take() else {
            return;
        };
        // Fired: not pending until restarted.
        m.stop();
        let dack = self.meta.data_ack();
        let outstanding = self
            .meta
            .seg(self.meta.base_seg())
            .is_some_and(|r| r.sent());
        if !outstanding {
            // No retransmission queue: the timer stays off until the next push.
            self.msk = Some(m);
            return;
        }
        // `mptcp_subflow_get_retrans`: the first active subflow with nothing outstanding at
        // the TCP level; each one holding data gets `mptcp_pm_subflow_chk_stale`. A backup
        // subflow only when no other is idle and every subflow holding data has counted more
        // than one firing ("use backup only if there are no progresses anywhere").
        let n = self.subflows.len();
        let (mut pick, mut backup) = (None, None);
        let mut min_stale_count = u8::MAX;
        for p in 0..n {
            if !self.subflows[p].is_established() {
                continue;
            }
            if self.subflows[p].in_flight() > 0 || !self.wq[p].is_empty() {
                let active = (0..n).filter(|&q| self.subflows[q].is_established());
                if m.count(p, self.subflows[p].last_ack_at()) && m.alternative(p, active) {
                    m.mark_stale(p);
                    self.repush_pending(p);
                }
                min_stale_count = min_stale_count.min(m.stale_count(p));
                continue;
            }
            if self.sched.is_backup(p as PathId) {
                backup.get_or_insert(p);
            } else {
                pick.get_or_insert(p);
            }
        }
        let pick = pick.or(backup.filter(|_| min_stale_count > 1));
        if let Some(p) = pick {
            // The head data fragment, from the data-ACK to its end, as far as it was sent,
            // goes into the picked subflow's write queue (`mptcp_sendmsg_frag` then
            // `tcp_push`): it leaves as that subflow's window allows, duplicates of what
            // already arrived included (the kernel knows only the data-ACK).
            let end = MskRetrans::dfrag_end(dack);
            let mut seg = self.meta.base_seg();
            while let Some(r) = self.meta.seg(seg) {
                if r.dsn >= end || !r.sent() {
                    break;
                }
                let len = r.len;
                if r.sent_on(p as PathId) {
                    self.meta.count_resend(seg);
                }
                self.commit_to_queue(p, seg, len, now);
                seg += 1;
            }
        }
        self.msk = Some(m);
        self.msk_arm(now, true);
    }

    /// `__mptcp_retransmit_pending_data` once subflow `p` is stale: every segment sent so far
    /// (committed to a subflow) and not data-acknowledged goes out again (`repush`), whether or
    /// not it already arrived, what `p`'s write queue holds included; that queue stays on `p`
    /// (the kernel leaves the subflow's TCP queue alone) and leaves when `p` recovers.
    fn repush_pending(&mut self, p: usize) {
        // The subflow keeps its write queue (what `held` records); it takes nothing new until
        // an ACK arrives on it (`pf`).
        let meta = &self.meta;
        self.held[p] = self.wq[p]
            .iter()
            .filter_map(|&s| meta.seg(s).map(|r| (s, r.dsn, r.len)))
            .collect();
        self.pf[p] = true;
        self.refresh_availability();
        self.repush.clear();
        for seg in self.meta.base_seg()..self.meta.end_seg() {
            if self.meta.seg(seg).is_some_and(|r| r.sent()) {
                self.repush.push_back(seg);
            }
        }
    }

    /// Subflow `p` timed out (v0.9x; upstream keeps a stale subflow's queue, see
    /// [`SenderConnection::repush_pending`]): what its write queue held returns to the unsent
    /// data, and it takes nothing new until an ACK arrives on it (`pf`).
    fn set_aside(&mut self, p: usize) {
        let path = p as PathId;
        self.wq_busy &= !(1 << p);
        for seg in self.wq[p].drain(..) {
            self.meta.unassign(seg, path);
        }
        self.info[p].queued = 0;
        self.pf[p] = true;
        self.refresh_availability();
    }

    /// v0.9x `mptcp_sub_retransmit_timer` → `mptcp_reinject_data` (net/mptcp/mptcp_output.c):
    /// every segment the timed-out subflow holds unacknowledged goes to the connection's
    /// reinjection queue, the subflow is marked potentially failed (`tp->pf = 1`), and what was
    /// committed to its write queue but never sent returns to the unsent data.
    fn on_subflow_rto(&mut self, p: usize) {
        let path = p as PathId;
        if self.sched.single_path() {
            return;
        }
        if self.msk.is_some() {
            // Upstream: the subflow keeps its data; the connection's timer acts.
            self.refresh_availability();
            return;
        }
        if self.subflows.len() > 1 {
            for m in self.subflows[p].outstanding_meta_segs() {
                self.meta.queue_reinject(m, path);
            }
        }
        self.set_aside(p);
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::minrtt::exchange::Exchange;
    use crate::sender::TxKind::{New, Retransmit};
    use crate::time::Duration;

    #[test]
    fn subflow_retransmission_restamps_the_segments_transmission_time() {
        let mut ex = Exchange::new("minrtt", 1, 2, 100);
        ex.at(0).write(2);
        assert_eq!(ex.send(), [(0, 0, New), (0, 1, New)]);
        // No ACK: the tail-loss probe (1 s before an RTT sample, no later than the RTO; Linux
        // `tcp_schedule_loss_probe`) resends the last segment, segment 1.
        ex.at(1_000);
        let now = ex.now;
        ex.conn.handle_timeout(now);
        assert_eq!(ex.send().first(), Some(&(0, 1, Retransmit)));
        let rec = ex.conn.meta().seg(1).expect("segment 1");
        assert_eq!(rec.tx_time(0), Some(now));
        assert!(rec.tx_time(0).unwrap().0 - ex.wire[1].0.ts_val >= Duration::from_millis(1_000).0);
        assert_eq!(
            ex.conn.meta().reinjected_bytes(),
            0,
            "a retransmission is no reinjection"
        );
    }

    /// `__mptcp_sync_sndbuf` (net/mptcp/protocol.h) sums the buffers of the subflows on the
    /// connection's list, and a joined subflow is put there when its MP_JOIN completes
    /// (`__mptcp_finish_join` → `__mptcp_propagate_sndbuf`): the application's buffer grows by
    /// the new subflow's 46,080 bytes at the join, before the subflow carries anything.
    #[test]
    fn a_joined_subflow_adds_its_send_buffer_when_established() {
        let mut ex = Exchange::autotuned("linux", &[1e6, 1e6], 10, 100 * 1_420, &[]);
        ex.conn.set_subflow_pending(1);
        let one = ex.conn.meta().capacity();
        assert_eq!(one, super::TCP_WMEM_MIN + 46_080);
        ex.at(0).write(2);
        let _ = ex.send();
        assert_eq!(
            ex.conn.meta().capacity(),
            one,
            "a pending subflow counts nothing"
        );
        ex.conn.set_subflow_established(1, None);
        assert_eq!(ex.conn.subflows()[1].bytes_sent(), 0);
        assert_eq!(ex.conn.meta().capacity(), one + 46_080);
    }

    #[test]
    fn connection_resending_on_the_same_subflow_is_a_retransmission_not_new_data() {
        // Segment 0 leaves on p0; the connection puts it on p0 again (as upstream's
        // `__mptcp_retrans` may, choosing the subflow that sent it): the trace must not show
        // it as a first transmission, and it is no reinjection (no other subflow carried it).
        let mut ex = Exchange::new("minrtt", 2, 2, 100);
        ex.at(0).write(1);
        assert_eq!(ex.send(), [(0, 0, New)]);
        let now = ex.now;
        let (d, kind) = ex.conn.transmit(now, 0, 0, false);
        assert_eq!((d.path, d.dsn, kind), (0, 0, Retransmit));
        assert_eq!(ex.conn.meta().reinjected_bytes(), 0);
        // On the other subflow, the same segment is a reinjection.
        let (_, kind) = ex.conn.transmit(now, 1, 0, false);
        assert_eq!(kind, crate::sender::TxKind::Reinject);
    }
}
