//! The discrete-event loop: one sender, one receiver, N paths, one workload.
//!
//! Time is integer nanoseconds; events are totally ordered by (time, insertion sequence), so
//! simultaneous events fire in insertion order and a run is a pure function of scenario, scheduler
//! and seed. Packets in propagation wait in a FIFO per link (a link's delay is constant, so they
//! leave it in order); the event heap holds only small, copyable events.
//!
//! Almost nothing goes through the heap. Every event that recurs per packet has a fixed slot
//! holding its key (time, sequence number) or nothing: each link has at most one transmission in
//! progress, so one service slot per link; a propagation FIFO needs only its head's key (the key
//! its packet got when it left the link; the next head's key moves in when the head leaves);
//! each endpoint timer needs the key of its latest setting. The next event is the smallest key
//! among the slots and the top of the heap, which keeps the rare events (requests, samples).
//! Keys are allotted exactly as if every packet and every timer setting had its own heap entry,
//! so events fire in the same order as with one heap entry each; only the stale timer entries
//! that such a heap would pop and ignore are gone.
//!
//! The connection opens as Linux MPTCP opens one (see [`Ctl`]): the client's SYN on the initial
//! subflow at time 0 (the first path of the scenario, as Linux connects over the default route;
//! a single-path scheduler's own path), the server's SYN/ACK, the third ACK carrying the
//! request; the client joins every further path once the connection is fully established at
//! the client, and the server sends on a joined subflow once its MP_JOIN ACK arrives. Handshake
//! packets and requests cross the same links as data and ACKs (uplink rates included); they are
//! exempt from random loss (their draws would shift the ACKs' random stream), and one dropped by
//! an outage or a full queue is sent again after Linux's initial RTO (`TCP_TIMEOUT_INIT`, 1 s,
//! doubling per attempt).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use mpsched_core::packet::{
    data_header_bytes, Ack, DataSegment, PathId, ACK_HEADER_BYTES, MAX_PATHS,
};
use mpsched_core::receiver::{Arrival, ReceiverConnection};
use mpsched_core::sender::{SenderConnection, TxKind};
use mpsched_core::time::Time;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::cross::{CrossFlow, CrossStats};
use crate::link::Link;
use crate::metrics::Recorder;
use crate::scenario::Scenario;
use crate::trace::Trace;
use crate::tracing::{EventKind, PacketTrace, Side};
use crate::workload::Workload;

/// Loaded traces of a path's forward and reverse links.
pub type LinkTraces = (Option<Arc<Trace>>, Option<Arc<Trace>>);

/// Both clocks start far from zero so that a negative receiver clock offset stays representable.
pub const CLOCK_EPOCH: u64 = 1_000_000_000_000;

/// Connection-setup packets and requests (what the core's data/ACK model does not carry).
///
/// Initial subflow: `Syn` (client, uplink) → `SynAck` (server, downlink) → `HandshakeAck`
/// carrying request 0 (client; the MPTCP v1 third ACK or the first data packet with
/// MP_CAPABLE, RFC 8684 §3.1). The server's subflow is established when it arrives, and the
/// server answers at once: its data, or `RequestAck` when it sends nothing on that path (a
/// fixed split that gives it no share), carries the DSS data-ACK that makes the connection
/// fully established at the client (`check_fully_established`, net/mptcp/options.c: "subflows
/// are fully established as soon as we get any additional ack"). That calls
/// `mptcp_pm_fully_established`; the in-kernel path manager then connects a subflow from every
/// further endpoint at once (`mptcp_pm_create_subflow_or_signal_addr`, net/mptcp/pm_kernel.c):
/// `Syn` with MP_JOIN on each other path, `SynAck`, and the MP_JOIN `HandshakeAck`, after which
/// the server may send on it (RFC 8684 §3.2: the client waits for the fourth ACK, the server
/// does not). Later chunks' requests are `Request` on the initial subflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ctl {
    Syn,
    SynAck,
    /// The third ACK; `true` on the initial subflow, where it carries request 0.
    HandshakeAck(bool),
    Request(u32),
    RequestAck,
}

/// Bytes of an HTTP-style request (a GET with a short path and a Host header).
pub const REQUEST_BYTES: u32 = 100;

impl Ctl {
    /// IP-layer bytes: IPv4 + TCP headers (40), then the options Linux sends: a SYN or SYN/ACK
    /// carries MSS, SACK-permitted, timestamps and window scale (20) plus MP_CAPABLE (4 on the
    /// SYN, 12 on the SYN/ACK) or MP_JOIN (12 / 16); the third ACK has timestamps (12) and
    /// MP_CAPABLE's keys (20) or MP_JOIN's HMAC (24). Small differences between the
    /// initial and joined handshakes are below a microsecond on any link, so one size each. The
    /// request is a data segment (`data_header`, [`data_header_bytes`]); the link adds its own
    /// framing ([`crate::framing`]).
    fn wire_len(self, data_header: u32) -> u32 {
        match self {
            Ctl::Syn => 72,
            Ctl::SynAck => 76,
            Ctl::HandshakeAck(false) => 76,
            Ctl::HandshakeAck(true) | Ctl::Request(_) => data_header + REQUEST_BYTES,
            Ctl::RequestAck => ACK_HEADER_BYTES,
        }
    }
}

/// What a forward (server → client) link carries.
#[derive(Clone, Copy, Debug)]
pub enum Down {
    Data(DataSegment),
    Ctl(Ctl),
    /// A segment of TCP cross flow k (`cross.rs`).
    Cross(u16, DataSegment),
    /// A constant-bit-rate cross-traffic packet.
    Cbr,
}

/// What a reverse (client → server, uplink) link carries.
#[derive(Clone, Copy, Debug)]
pub enum Up {
    Ack(Ack),
    Ctl(Ctl),
    /// An ACK of TCP cross flow k.
    CrossAck(u16, Ack),
}

/// Linux's initial retransmission timeout for handshakes (`TCP_TIMEOUT_INIT`, include/net/tcp.h).
const CTL_RTO: mpsched_core::time::Duration = mpsched_core::time::Duration::from_secs(1);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Forward link of path p finishes serializing its head packet.
    FwdService(u8),
    /// Reverse link of path p finishes serializing its head packet.
    RevService(u8),
    /// The head of path p's forward propagation FIFO reaches the receiver.
    FwdArrive(u8),
    /// The head of path p's reverse propagation FIFO reaches the sender.
    RevArrive(u8),
    SenderTimer,
    ReceiverTimer,
    /// The client issues request number k.
    Request(u32),
    /// Record per-path samples into the packet trace (`sim.sample_interval_s`).
    Sample,
    /// A `stream` workload's application generates data.
    AppTick,
    /// Send a control packet again after it was dropped: (path, uplink?, packet).
    CtlRetry(u8, bool, Ctl),
    /// A timer of TCP cross flow k: (k, sender's?). Stale unless the endpoint still wants it now.
    CrossTimer(u16, bool),
    /// Path p's CBR load sends its next packet.
    Cbr(u8),
}

struct SimPath {
    fwd: Link<Down>,
    rev: Link<Up>,
    /// Packets in propagation: (arrival time, event sequence number, packet).
    fwd_prop: VecDeque<(Time, u64, Down)>,
    rev_prop: VecDeque<(Time, u64, Up)>,
    /// When the server sent this subflow's SYN/ACK (its handshake RTT sample starts there).
    synack_sent: Option<Time>,
    /// Attempts of the control packet last dropped on this path (the retry backoff).
    ctl_attempts: u32,
    /// When the subflow became usable by the server.
    established: Option<Time>,
    fwd_loss: f64,
    rev_loss: f64,
    fwd_rng: Pcg64,
    rev_rng: Pcg64,
    /// Bytes each link adds to an IP packet (Ethernet or mahimahi's TUN header,
    /// [`crate::framing::link_layer_bytes`]).
    fwd_l2: u32,
    rev_l2: u32,
}

impl SimPath {
    /// A CBR packet on the forward link: a full IP packet and the link's framing.
    fn cbr_wire_bytes(&self) -> u32 {
        crate::framing::MTU_BYTES + self.fwd_l2
    }
}

/// An event key, (time << 64) | sequence number, so that one comparison orders two events.
type Key = u128;
const NO_EVENT: Key = Key::MAX;

/// An event's order: time in the high 64 bits, then the sequence number (shifted by 8 bits).
fn key(t: Time, seq: u64) -> Key {
    debug_assert!(
        seq < 1 << 56,
        "sequence number {seq} overflows the event key"
    );
    (Key::from(t.0) << 64) | (Key::from(seq) << 8)
}

/// A slot's key: `key(t, seq)` with the slot's index in the low 8 bits. Sequence numbers are
/// unique, so the index never decides an order between two keys (results stay bit-identical);
/// it lets `pop_event` find the next event with a plain minimum over the slots instead of
/// carrying the index of the smallest key along the scan.
fn slot_key(t: Time, seq: u64, slot: usize) -> Key {
    debug_assert!(slot < 0xff, "slot {slot} does not fit the event key");
    key(t, seq) | slot as Key
}

/// The smallest of `keys` (`NO_EVENT` when empty). Four at a time, as a balanced tree of
/// minima: the slots come in groups of four, and a plain `iter().min()` spent about as many
/// instructions on the loop as on the comparisons (each u128 minimum is a compare and two
/// conditional moves).
#[inline(always)]
fn min_key(keys: &[Key]) -> Key {
    let mut chunks = keys.chunks_exact(4);
    let quad = |q: &[Key]| q[0].min(q[1]).min(q[2].min(q[3]));
    let mut best = chunks.next().map_or(NO_EVENT, quad);
    for q in &mut chunks {
        best = best.min(quad(q));
    }
    for &k in chunks.remainder() {
        best = best.min(k);
    }
    debug_assert_eq!(best, keys.iter().copied().min().unwrap_or(NO_EVENT));
    best
}

fn key_time(k: Key) -> Time {
    Time((k >> 64) as u64)
}

/// Slots in groups of four: the two endpoint timers (and two unused slots), then four per path
/// (see `path_slot`).
const SENDER_TIMER: usize = 0;
const RECEIVER_TIMER: usize = 1;
const FWD_SERVICE: usize = 0;
const REV_SERVICE: usize = 1;
const FWD_ARRIVE: usize = 2;
const REV_ARRIVE: usize = 3;

fn path_slot(p: u8, which: usize) -> usize {
    4 + 4 * p as usize + which
}

/// Slots and groups for the most paths a run may have: fixed arrays, so that no index into
/// them needs a bounds check past the slot's own (issue "Speed at scale": every event writes
/// two or three slots). Slots of paths a run does not have stay `NO_EVENT`.
const SLOTS: usize = 4 + 4 * MAX_PATHS;
const GROUPS: usize = SLOTS / 4;

/// A run with a chunk outstanding and no byte delivered in order for this long has failed.
/// Twice Linux's TCP_RTO_MAX (120 s, include/net/tcp.h): a backed-off retransmission on a path
/// that came back would have delivered something by then.
pub const STALL_AFTER: mpsched_core::time::Duration = mpsched_core::time::Duration(240_000_000_000);

/// How many events pass between looks at the interrupt flag (Ctrl-C); a look costs an atomic
/// load, and 4096 events are well under a millisecond.
const INTERRUPT_CHECK_EVERY: u64 = 4096;

pub struct World<'a> {
    now: Time,
    /// Keys of the recurring events, `NO_EVENT` when not pending. Written only through
    /// `set_slot`, which keeps `group_min` up to date.
    slots: [Key; SLOTS],
    /// The smallest key of each group of slots: the two endpoint timers, then each path's
    /// four. The next event is the minimum over N + 1 groups instead of 4N + 2 slots (at 8
    /// paths the slot scan was the largest per-event cost that grows with the paths).
    group_min: [Key; GROUPS],
    /// One or two paths: a plain minimum over the (at most 12) slots is cheaper than keeping
    /// the groups' minima.
    few_slots: bool,
    /// Everything else (requests, samples).
    heap: BinaryHeap<Reverse<(Time, u64, Ev)>>,
    seq: u64,
    pub(crate) events: u64,
    paths: Vec<SimPath>,
    pub(crate) sender: SenderConnection,
    pub(crate) receiver: ReceiverConnection,
    recv_offset: i64,
    pub(crate) workload: Workload,
    pub(crate) rec: Recorder,
    trace: Option<&'a mut PacketTrace>,
    /// Period of `Ev::Sample`; only with a trace.
    sample_every: Option<mpsched_core::time::Duration>,
    max_time: Time,
    pub(crate) truncated: bool,
    /// Why the run did not deliver its workload (None: it did); see [`World::run`].
    pub(crate) failure: Option<String>,
    /// The subflow the connection opens on.
    initial: u8,
    /// Further paths are joined (MPTCP); false for a single-path connection.
    join: bool,
    joins_sent: bool,
    /// Data segments sent on the initial subflow so far.
    sent_on_initial: u64,
    /// Competing TCP flows, CBR intervals by path, their loss draws and totals (`cross.rs`).
    pub(crate) cross: Vec<CrossFlow>,
    cbr: Vec<Option<mpsched_core::time::Duration>>,
    /// IP-layer headers of the connection's data segments ([`data_header_bytes`]).
    data_header: u32,
    /// The connection's payload per segment ([`crate::effective_mss`]).
    pub(crate) mss: u32,
    cross_rng: Pcg64,
    pub(crate) cross_stats: CrossStats,
}

impl<'a> World<'a> {
    pub fn new(
        sc: &Scenario,
        traces: &[LinkTraces],
        mut sender: SenderConnection,
        receiver: ReceiverConnection,
        seed: u64,
        trace: Option<&'a mut PacketTrace>,
        mptcp: bool,
    ) -> Self {
        // Every random source derives from the run's seed in a fixed order: path by path,
        // forward then reverse.
        let mut master = Pcg64::seed_from_u64(seed);
        let mss = crate::effective_mss(sc, mptcp);
        let data_header = data_header_bytes(mptcp);
        let l2 = |t: &Option<_>| crate::framing::link_layer_bytes(t.is_some());
        let paths = sc
            .paths
            .iter()
            .zip(traces)
            .map(|(p, (tf, tr))| SimPath {
                fwd: Link::new(&p.forward, tf.clone(), mss + data_header + l2(tf)),
                rev: Link::new(&p.reverse, tr.clone(), mss + data_header + l2(tr)),
                fwd_prop: VecDeque::new(),
                rev_prop: VecDeque::new(),
                fwd_loss: p.forward.loss,
                rev_loss: p.reverse.loss,
                fwd_rng: Pcg64::seed_from_u64(master.gen()),
                rev_rng: Pcg64::seed_from_u64(master.gen()),
                fwd_l2: l2(tf),
                rev_l2: l2(tr),
                synack_sent: None,
                ctl_attempts: 0,
                established: None,
            })
            .collect();
        let mut paths: Vec<SimPath> = paths;
        for (i, p) in paths.iter_mut().enumerate() {
            let steps = |_| {
                sc.sim
                    .delay_changes
                    .iter()
                    .filter(|d| d.path == i)
                    .map(|d| {
                        (
                            Time::from_secs_f64(d.at_s),
                            mpsched_core::time::Duration::from_secs_f64(d.rtt_s / 2.0),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            p.fwd.set_delay_steps(steps(()));
            p.rev.set_delay_steps(steps(()));
        }
        let npaths = sc.paths.len();
        // Drawn after the paths' streams, so that adding it changed none of theirs.
        let workload_rng = Pcg64::seed_from_u64(master.gen());
        // Likewise after the workload's.
        let cross_rng = Pcg64::seed_from_u64(master.gen());
        let cross = crate::cross::flows(sc, mss);
        let cbr_bytes: Vec<u32> = paths.iter().map(SimPath::cbr_wire_bytes).collect();
        // No subflow carries data before its handshake completes at the server.
        for p in 0..npaths {
            sender.set_subflow_pending(p as PathId);
        }
        // A single-path scheduler's connection is plain TCP over its path; otherwise the
        // connection opens on the first path (Linux connects over the default route).
        let only = sender.scheduler_only_path();
        let initial = only.unwrap_or(0);
        let join = npaths > 1 && only.is_none();
        let interval = sc.sim.sample_interval_s;
        let sample_every = (trace.is_some() && interval.is_finite() && interval > 0.0)
            .then(|| mpsched_core::time::Duration(((interval * 1e9).round() as u64).max(1)));
        World {
            now: Time::ZERO,
            slots: [NO_EVENT; SLOTS],
            group_min: [NO_EVENT; GROUPS],
            few_slots: npaths <= 2,
            heap: BinaryHeap::new(),
            seq: 0,
            events: 0,
            paths,
            sender,
            receiver,
            recv_offset: (sc.sim.clock_offset_s * 1e9).round() as i64,
            workload: Workload::with_rng(&sc.workload, workload_rng),
            rec: Recorder::new(npaths),
            trace,
            sample_every,
            max_time: Time::from_secs_f64(sc.sim.max_time_s),
            truncated: false,
            failure: None,
            initial,
            join,
            joins_sent: false,
            sent_on_initial: 0,
            cross,
            cbr: crate::cross::cbr_intervals(sc, &cbr_bytes),
            data_header,
            mss,
            cross_rng,
            cross_stats: CrossStats {
                drops: vec![0; npaths],
                cbr_delivered: vec![0; npaths],
            },
        }
    }

    fn schedule(&mut self, at: Time, ev: Ev) {
        let seq = self.next_seq();
        self.heap.push(Reverse((at, seq, ev)));
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Puts a recurring event in its (empty) slot under a fresh key.
    #[inline(always)]
    fn schedule_slot(&mut self, slot: usize, at: Time) {
        debug_assert_eq!(self.slots[slot], NO_EVENT, "slot {slot} already pending");
        let seq = self.next_seq();
        self.set_slot(slot, slot_key(at, seq, slot));
    }

    /// Writes a slot's key and keeps its group's minimum: a smaller key becomes it; only when
    /// the minimum itself grows (its event fired or moved) are the group's four keys compared.
    #[inline(always)]
    fn set_slot(&mut self, slot: usize, k: Key) {
        let old = std::mem::replace(&mut self.slots[slot], k);
        if self.few_slots {
            return;
        }
        let g = slot / 4;
        if k <= self.group_min[g] {
            self.group_min[g] = k;
        } else if old == self.group_min[g] {
            let q = &self.slots[4 * g..4 * g + 4];
            self.group_min[g] = q[0].min(q[1]).min(q[2].min(q[3]));
        }
    }

    /// Removes and returns the next event: the smallest key among the slots and the heap's top.
    fn pop_event(&mut self) -> Option<(Time, Ev)> {
        // Slots 2 and 3 are never used (see `path_slot`): the two timers, then the paths'. One
        // or two paths as fixed-size arrays, so that the minimum is straight-line code.
        let timers = |s: &[Key]| s[0].min(s[1]);
        let quad = |q: &[Key]| q[0].min(q[1]).min(q[2].min(q[3]));
        let best = if self.paths.len() == 1 {
            timers(&self.slots).min(quad(&self.slots[4..8]))
        } else if self.paths.len() == 2 {
            timers(&self.slots).min(quad(&self.slots[4..8]).min(quad(&self.slots[8..12])))
        } else {
            debug_assert!(!self.few_slots);
            min_key(&self.group_min)
        };
        debug_assert_eq!(
            best,
            self.slots.iter().copied().min().unwrap_or(NO_EVENT),
            "the next event is the smallest key"
        );
        if let Some(&Reverse((t, seq, ev))) = self.heap.peek() {
            if key(t, seq) < best {
                self.heap.pop();
                return Some((t, ev));
            }
        }
        if best == NO_EVENT {
            return None;
        }
        let slot = (best & 0xff) as usize;
        self.set_slot(slot, NO_EVENT);
        let ev = match slot {
            SENDER_TIMER => Ev::SenderTimer,
            RECEIVER_TIMER => Ev::ReceiverTimer,
            _ => {
                let p = (slot / 4 - 1) as u8;
                match slot % 4 {
                    FWD_SERVICE => Ev::FwdService(p),
                    REV_SERVICE => Ev::RevService(p),
                    FWD_ARRIVE => Ev::FwdArrive(p),
                    _ => Ev::RevArrive(p),
                }
            }
        };
        Some((key_time(best), ev))
    }

    /// Nothing is left to happen.
    fn idle(&self) -> bool {
        self.heap.is_empty() && self.slots.iter().all(|&k| k == NO_EVENT)
    }

    /// Re-arms a timer slot when the endpoint's deadline changed. `t` is the new deadline
    /// (`None`: disarmed); a deadline in the past fires now.
    #[inline(always)]
    fn set_timer(&mut self, slot: usize, t: Option<Time>) {
        let current = self.slots[slot];
        if t != (current != NO_EVENT).then(|| key_time(current)) {
            self.set_slot(slot, NO_EVENT);
            if let Some(t) = t {
                self.schedule_slot(slot, t.max(self.now));
            }
        }
    }

    fn sender_clock(&self) -> Time {
        Time(CLOCK_EPOCH + self.now.0)
    }
    fn receiver_clock(&self) -> Time {
        Time((CLOCK_EPOCH as i64 + self.now.0 as i64 + self.recv_offset) as u64)
    }
    fn sim_time_of_sender(t: Time) -> Time {
        Time(t.0.saturating_sub(CLOCK_EPOCH))
    }
    fn sim_time_of_receiver(&self, t: Time) -> Time {
        Time((t.0 as i64 - CLOCK_EPOCH as i64 - self.recv_offset).max(0) as u64)
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// Run to the end of the workload (or `max_time`).
    pub fn run(&mut self) {
        for (k, at) in self.workload.initial_requests() {
            self.schedule(at, Ev::Request(k));
        }
        if self.sample_every.is_some() {
            self.schedule(Time::ZERO, Ev::Sample);
        }
        if let Some(t) = self.workload.first_tick() {
            self.schedule(t, Ev::AppTick);
        }
        for k in 0..self.cross.len() {
            self.cross[k].refill();
            self.pump_cross_sender(k);
        }
        for p in 0..self.cbr.len() {
            if self.cbr[p].is_some() {
                self.schedule(Time::ZERO, Ev::Cbr(p as u8));
            }
        }
        let stop_at = self
            .workload
            .stop_time()
            .unwrap_or(self.max_time)
            .min(self.max_time);
        // Stall detector: a chunk outstanding and nothing delivered for STALL_AFTER.
        let mut progress = (Time::ZERO, 0u64);
        // A bulk run ends only by time: no need to ask after every event.
        let may_finish = self.workload.may_finish();
        let may_stall = !self.workload.is_bulk();
        while let Some((t, ev)) = self.pop_event() {
            if t > stop_at {
                self.truncated = self.workload.stop_time().is_none_or(|s| s > self.max_time);
                if self.truncated {
                    self.failure = Some(format!(
                        "time limit: sim.max_time {} s reached before the workload completed",
                        (self.max_time.as_secs_f64() * 1e3).round() / 1e3
                    ));
                }
                self.now = stop_at;
                break;
            }
            if self.events.is_multiple_of(INTERRUPT_CHECK_EVERY) && crate::interrupted() {
                self.truncated = true;
                self.failure = Some("interrupted".into());
                break;
            }
            // Bulk never has a chunk outstanding, so never a stall to detect.
            debug_assert!(may_stall || !self.workload.outstanding());
            if may_stall {
                if matches!(ev, Ev::Request(_)) || self.rec.delivered_bytes != progress.1 {
                    progress = (t, self.rec.delivered_bytes);
                } else if self.workload.outstanding() && t.0 - progress.0 .0 > STALL_AFTER.0 {
                    self.truncated = true;
                    self.now = t;
                    self.failure = Some(format!(
                        "stalled: no data delivered for {} s",
                        STALL_AFTER.as_secs_f64().round()
                    ));
                    break;
                }
            }
            if matches!(ev, Ev::Sample) {
                // Samples observe and never count as events; once nothing else is pending they
                // stop, so that they cannot keep a finished (or stuck) run going.
                if self.idle() {
                    break;
                }
                self.now = t;
                self.sample();
                continue;
            }
            self.now = t;
            self.events += 1;
            self.dispatch(ev);
            if may_finish && self.workload.finished() {
                break;
            }
        }
        if self.idle() && !self.workload.finished() && self.workload.stop_time().is_none() {
            // Nothing left to happen but the work is not done (e.g. a path that never recovers).
            self.truncated = true;
            self.failure = Some("stalled: nothing left to happen (no path can deliver)".into());
        }
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::FwdService(p) => {
                let now = self.now;
                let path = &mut self.paths[p as usize];
                if let Some((seg, arrive)) = path.fwd.service(now) {
                    let seq = self.next_seq();
                    let path = &mut self.paths[p as usize];
                    path.fwd_prop.push_back((arrive, seq, seg));
                    if path.fwd_prop.len() == 1 {
                        let s = path_slot(p, FWD_ARRIVE);
                        self.set_slot(s, slot_key(arrive, seq, s));
                    }
                }
                if let Some(t) = self.paths[p as usize].fwd.next_service() {
                    self.schedule_slot(path_slot(p, FWD_SERVICE), t);
                }
            }
            Ev::RevService(p) => {
                let now = self.now;
                let path = &mut self.paths[p as usize];
                if let Some((ack, arrive)) = path.rev.service(now) {
                    let seq = self.next_seq();
                    let path = &mut self.paths[p as usize];
                    path.rev_prop.push_back((arrive, seq, ack));
                    if path.rev_prop.len() == 1 {
                        let s = path_slot(p, REV_ARRIVE);
                        self.set_slot(s, slot_key(arrive, seq, s));
                    }
                }
                if let Some(t) = self.paths[p as usize].rev.next_service() {
                    self.schedule_slot(path_slot(p, REV_SERVICE), t);
                }
            }
            Ev::FwdArrive(p) => {
                let prop = &mut self.paths[p as usize].fwd_prop;
                let (_, _, seg) = prop.pop_front().expect("arrival event without packet");
                if let Some(&(t, seq, _)) = prop.front() {
                    let s = path_slot(p, FWD_ARRIVE);
                    self.set_slot(s, slot_key(t, seq, s));
                }
                // Any data-ACK from the server on the initial subflow (its data, or its ACK of the
                // request) makes the connection fully established at the client: join the rest.
                let dss = matches!(seg, Down::Data(_) | Down::Ctl(Ctl::RequestAck));
                if dss && p == self.initial && self.join && !self.joins_sent {
                    self.joins_sent = true;
                    for q in 0..self.paths.len() as u8 {
                        if q != self.initial {
                            self.send_up(q, Ctl::Syn);
                        }
                    }
                }
                let seg = match seg {
                    Down::Data(seg) => seg,
                    Down::Cross(k, seg) => {
                        let k = k as usize;
                        let now = self.sender_clock();
                        let f = &mut self.cross[k];
                        f.rx.handle_input(now, &seg);
                        while let Some(a) = f.rx.poll_event() {
                            f.delivered += a.delivered;
                        }
                        self.pump_cross_receiver(k);
                        return;
                    }
                    Down::Cbr => {
                        let bytes = self.paths[p as usize].cbr_wire_bytes();
                        self.cross_stats.cbr_delivered[p as usize] += u64::from(bytes);
                        return;
                    }
                    Down::Ctl(Ctl::SynAck) => {
                        // The client completes the handshake; on the initial subflow its ACK
                        // carries the request.
                        self.send_up(p, Ctl::HandshakeAck(p == self.initial));
                        return;
                    }
                    Down::Ctl(_) => return,
                };
                let rnow = self.receiver_clock();
                self.receiver.handle_input(rnow, &seg);
                while let Some(a) = self.receiver.poll_event() {
                    self.on_arrival(a);
                }
                self.pump_receiver();
            }
            Ev::RevArrive(p) => {
                let prop = &mut self.paths[p as usize].rev_prop;
                let (_, _, ack) = prop.pop_front().expect("arrival event without packet");
                if let Some(&(t, seq, _)) = prop.front() {
                    let s = path_slot(p, REV_ARRIVE);
                    self.set_slot(s, slot_key(t, seq, s));
                }
                let ack = match ack {
                    Up::Ack(ack) => ack,
                    Up::Ctl(c) => {
                        self.on_ctl_at_server(p, c);
                        return;
                    }
                    Up::CrossAck(k, ack) => {
                        let now = self.sender_clock();
                        let f = &mut self.cross[k as usize];
                        f.tx.handle_input(now, &ack);
                        f.refill();
                        self.pump_cross_sender(k as usize);
                        return;
                    }
                };
                let snow = self.sender_clock();
                self.sender.handle_input(snow, &ack);
                if let Some(tr) = self.trace.as_deref_mut() {
                    tr.push(self.now, Side::Sender, p, EventKind::Ack, ack.data_ack, 0);
                }
                self.refill();
                self.pump_sender();
            }
            // `pop_event` has disarmed the timer.
            Ev::SenderTimer => {
                let snow = self.sender_clock();
                self.sender.handle_timeout(snow);
                self.pump_sender();
            }
            Ev::ReceiverTimer => {
                let rnow = self.receiver_clock();
                self.receiver.handle_timeout(rnow);
                self.pump_receiver();
            }
            Ev::Request(k) => {
                // The first request is the connection's: its time runs from the SYN, as a user
                // waits from connect(). Later ones go on the established initial subflow.
                self.workload.on_request(k, self.now);
                let c = if k == 0 { Ctl::Syn } else { Ctl::Request(k) };
                self.send_up(self.initial, c);
            }
            Ev::CtlRetry(p, up, c) => {
                if up {
                    self.send_up(p, c);
                } else {
                    self.send_down(p, c);
                }
            }
            Ev::AppTick => {
                if let Some(next) = self.workload.tick(self.now) {
                    self.schedule(next, Ev::AppTick);
                }
                self.refill();
                self.pump_sender();
            }
            Ev::CrossTimer(k, sender) => {
                let now = self.now;
                let clock = self.sender_clock();
                let f = &mut self.cross[k as usize];
                let armed = if sender {
                    &mut f.tx_armed
                } else {
                    &mut f.rx_armed
                };
                if *armed != Some(now) {
                    return; // stale: the endpoint moved this timer since
                }
                *armed = None;
                if sender {
                    f.tx.handle_timeout(clock);
                    self.pump_cross_sender(k as usize);
                } else {
                    f.rx.handle_timeout(clock);
                    self.pump_cross_receiver(k as usize);
                }
            }
            Ev::Cbr(p) => {
                let every = self.cbr[p as usize].expect("a CBR path");
                self.schedule(self.now + every, Ev::Cbr(p));
                self.send_cross(p, Down::Cbr, crate::framing::MTU_BYTES);
            }
            Ev::Sample => unreachable!("handled by the event loop"),
        }
    }

    /// The server receives a control packet on path `p`.
    fn on_ctl_at_server(&mut self, p: u8, c: Ctl) {
        match c {
            Ctl::Syn => {
                self.paths[p as usize].synack_sent = Some(self.now);
                self.send_down(p, Ctl::SynAck);
            }
            Ctl::HandshakeAck(with_request) => {
                let path = &mut self.paths[p as usize];
                if path.established.is_some() {
                    return;
                }
                path.established = Some(self.now);
                let rtt = path.synack_sent.map(|t| self.now - t);
                self.sender.set_subflow_established(p, rtt);
                if with_request {
                    let before = self.sent_on_initial;
                    self.request_arrives(0);
                    if self.join && self.sent_on_initial == before {
                        self.send_down(p, Ctl::RequestAck);
                    }
                } else {
                    self.pump_sender();
                }
            }
            Ctl::Request(k) => self.request_arrives(k),
            Ctl::SynAck | Ctl::RequestAck => {}
        }
    }

    fn request_arrives(&mut self, k: u32) {
        self.workload.on_request_arrives(k, self.now);
        self.refill();
        self.pump_sender();
    }

    /// The client sends a control packet on path `p`'s uplink.
    fn send_up(&mut self, p: u8, c: Ctl) {
        let now = self.now;
        let path = &mut self.paths[p as usize];
        let len = c.wire_len(self.data_header) + path.rev_l2;
        let r = path.rev.enqueue(now, Up::Ctl(c), len, false);
        match r.service_at() {
            Some(t) => self.schedule_slot(path_slot(p, REV_SERVICE), t),
            None if !r.accepted() => self.retry_ctl(p, true, c),
            None => {}
        }
    }

    /// The server sends a control packet on path `p`'s downlink.
    fn send_down(&mut self, p: u8, c: Ctl) {
        let now = self.now;
        let path = &mut self.paths[p as usize];
        let len = c.wire_len(self.data_header) + path.fwd_l2;
        let r = path.fwd.enqueue(now, Down::Ctl(c), len, false);
        match r.service_at() {
            Some(t) => self.schedule_slot(path_slot(p, FWD_SERVICE), t),
            None if !r.accepted() => self.retry_ctl(p, false, c),
            None => {}
        }
    }

    fn retry_ctl(&mut self, p: u8, up: bool, c: Ctl) {
        let path = &mut self.paths[p as usize];
        let wait = CTL_RTO.0 << path.ctl_attempts.min(6);
        path.ctl_attempts += 1;
        let at = self.now + mpsched_core::time::Duration(wait);
        self.schedule(at, Ev::CtlRetry(p, up, c));
    }

    /// When each subflow became usable by the server (`None`: never).
    pub(crate) fn established_at(&self) -> Vec<Option<Time>> {
        self.paths.iter().map(|p| p.established).collect()
    }

    /// One row per path into the trace's `sample_*` columns, then the next sample.
    fn sample(&mut self) {
        let (Some(tr), Some(every)) = (self.trace.as_deref_mut(), self.sample_every) else {
            return;
        };
        let secs =
            |d: Option<mpsched_core::time::Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64());
        for (p, sf) in self.sender.subflows().iter().enumerate() {
            tr.sample_time_s.push(self.now.as_secs_f64());
            tr.sample_path.push(p as u8);
            tr.sample_cwnd.push(sf.cwnd());
            tr.sample_ssthresh.push(sf.ssthresh());
            tr.sample_srtt_s.push(secs(sf.srtt()));
            // The sender's estimate, receiver clock offset included (what schedulers see).
            let owd = self.sender.estimator().owd_overall(p);
            tr.sample_owd_s.push(owd.map_or(f64::NAN, |ns| ns * 1e-9));
            tr.sample_gap_segs
                .push(self.sender.scheduler_gap().unwrap_or(f64::NAN));
        }
        self.schedule(self.now + every, Ev::Sample);
    }

    /// Let the application write what the workload has ready and the send buffer takes.
    fn refill(&mut self) {
        let now = self.now;
        self.workload.refill(&mut self.sender, now);
    }

    fn on_arrival(&mut self, a: Arrival) {
        let now = self.now;
        if !a.duplicate {
            self.workload.on_arrival(a.dsn, a.len, now);
        }
        self.rec.on_arrival(now, &a, &self.workload);
        if let Some(tr) = self.trace.as_deref_mut() {
            tr.push(now, Side::Receiver, a.path, EventKind::Arrive, a.dsn, a.len);
            if a.delivered > 0 {
                let from = a.delivered_upto - a.delivered;
                tr.push(
                    now,
                    Side::Receiver,
                    a.path,
                    EventKind::Deliver,
                    from,
                    a.delivered as u32,
                );
            }
        }
        if a.delivered > 0 {
            if let Some(next) = self
                .workload
                .on_delivered(a.delivered_upto, now, &mut self.rec)
            {
                self.schedule(next.1, Ev::Request(next.0));
            }
        }
    }

    fn pump_sender(&mut self) {
        let snow = self.sender_clock();
        while let Some((seg, kind)) = self.sender.poll_transmit(snow) {
            let p = seg.path as usize;
            self.rec.on_data_sent(&seg);
            if kind == TxKind::New {
                self.workload.on_first_tx(seg.dsn, seg.len, self.now);
            }
            if let Some(tr) = self.trace.as_deref_mut() {
                let k = match kind {
                    TxKind::New => EventKind::Send,
                    TxKind::Reinject => EventKind::Reinject,
                    TxKind::Retransmit => EventKind::Retransmit,
                };
                tr.push(self.now, Side::Sender, seg.path, k, seg.dsn, seg.len);
            }
            if seg.path == self.initial {
                self.sent_on_initial += 1;
            }
            let path = &mut self.paths[p];
            let lose = path.fwd_loss > 0.0 && path.fwd_rng.gen::<f64>() < path.fwd_loss;
            let len = seg.len + self.data_header + path.fwd_l2;
            let r = path.fwd.enqueue(self.now, Down::Data(seg), len, lose);
            if let Some(t) = r.service_at() {
                self.schedule_slot(path_slot(p as u8, FWD_SERVICE), t);
            }
        }
        let t = self.sender.poll_timeout().map(Self::sim_time_of_sender);
        self.set_timer(SENDER_TIMER, t);
    }

    fn pump_receiver(&mut self) {
        let rnow = self.receiver_clock();
        while let Some(ack) = self.receiver.poll_transmit(rnow) {
            let p = ack.path as usize;
            let path = &mut self.paths[p];
            let lose = path.rev_loss > 0.0 && path.rev_rng.gen::<f64>() < path.rev_loss;
            let len = ACK_HEADER_BYTES + path.rev_l2;
            let r = path.rev.enqueue(self.now, Up::Ack(ack), len, lose);
            if let Some(t) = r.service_at() {
                self.schedule_slot(path_slot(p as u8, REV_SERVICE), t);
            }
        }
        let t = self
            .receiver
            .poll_timeout()
            .map(|t| self.sim_time_of_receiver(t));
        self.set_timer(RECEIVER_TIMER, t);
    }

    /// Offers a cross-traffic packet of `ip_len` bytes to path `p`'s forward link (with the
    /// path's random loss), with the link's framing.
    fn send_cross(&mut self, p: u8, pkt: Down, ip_len: u32) {
        let now = self.now;
        let path = &mut self.paths[p as usize];
        let wire_len = ip_len + path.fwd_l2;
        let lose = path.fwd_loss > 0.0 && self.cross_rng.gen::<f64>() < path.fwd_loss;
        let r = path.fwd.enqueue(now, pkt, wire_len, lose);
        if !r.accepted() {
            self.cross_stats.drops[p as usize] += 1;
        }
        if let Some(t) = r.service_at() {
            self.schedule_slot(path_slot(p, FWD_SERVICE), t);
        }
    }

    fn pump_cross_sender(&mut self, k: usize) {
        let clock = self.sender_clock();
        let p = self.cross[k].path;
        while let Some((seg, _)) = self.cross[k].tx.poll_transmit(clock) {
            // A cross flow is plain TCP: no DSS option.
            let ip_len = seg.len + data_header_bytes(false);
            self.send_cross(p, Down::Cross(k as u16, seg), ip_len);
        }
        let t = self.cross[k]
            .tx
            .poll_timeout()
            .map(Self::sim_time_of_sender);
        self.arm_cross(k, true, t);
    }

    fn pump_cross_receiver(&mut self, k: usize) {
        let clock = self.sender_clock();
        let p = self.cross[k].path as usize;
        while let Some(ack) = self.cross[k].rx.poll_transmit(clock) {
            let now = self.now;
            let path = &mut self.paths[p];
            let lose = path.rev_loss > 0.0 && self.cross_rng.gen::<f64>() < path.rev_loss;
            let len = ACK_HEADER_BYTES + path.rev_l2;
            let r = path
                .rev
                .enqueue(now, Up::CrossAck(k as u16, ack), len, lose);
            if let Some(t) = r.service_at() {
                self.schedule_slot(path_slot(p as u8, REV_SERVICE), t);
            }
        }
        let t = self.cross[k]
            .rx
            .poll_timeout()
            .map(Self::sim_time_of_sender);
        self.arm_cross(k, false, t);
    }

    /// Schedules cross flow k's timer for deadline `t` unless one is pending for it already.
    fn arm_cross(&mut self, k: usize, sender: bool, t: Option<Time>) {
        let t = t.map(|t| t.max(self.now));
        let f = &mut self.cross[k];
        let armed = if sender {
            &mut f.tx_armed
        } else {
            &mut f.rx_armed
        };
        if *armed != t {
            *armed = t;
            if let Some(t) = t {
                self.schedule(t, Ev::CrossTimer(k as u16, sender));
            }
        }
    }

    pub(crate) fn fwd_link(&self, p: usize) -> &Link<Down> {
        &self.paths[p].fwd
    }
}
