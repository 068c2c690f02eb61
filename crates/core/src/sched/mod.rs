//! The scheduler contract (DESIGN.md, "The scheduler contract").
//!
//! A scheduler is asked, whenever the connection may send, for the next [`Assignment`]: *this
//! subflow sends this meta segment*. It may name any segment of the send buffer — the next one
//! in order, one at the tail of the chunk, one past a gap, or one already sent on another
//! subflow (a reinjection, counted by the meta buffer) — or answer `None` to withhold. The
//! connection keeps asking until it answers `None` or names a subflow without congestion-window
//! space. Subflow-level retransmissions (RFC 6675) never reach the scheduler: a subflow repairs
//! its own losses first.
//!
//! What every published scheduler needs, and how it gets it here:
//!
//! * **MinRTT** (Linux MPTCP default; Cech, TUM 2020, §3.1): `subflow(p).srtt()`,
//!   `has_space(p)`, `meta().next_unsent()`; opportunistic retransmission reads
//!   `meta().seg(n).tx_mask` at the data-ACK left edge and `rwnd_blocked()`;
//!   penalization calls [`SchedCtx::penalize`].
//! * **Round robin / redundant / single path**: private per-subflow cursors persist in the
//!   scheduler; redundant assigns one segment to every subflow by returning it once per subflow.
//! * **BLEST / ECF** (Cech, TUM 2020, Alg. 1-2): cwnd, in-flight segments, srtt, rttvar of each subflow
//!   and the connection's send window (`meta().peer_rwnd()`, `meta().occupancy()`); ECF may
//!   withhold the fast subflow's turn by returning `None` for the slow one.
//! * **STTF, DAPS, OTIAS** (Cech, TUM 2020, Alg. 3, Table 1) plan ahead of the window: they keep their
//!   own per-subflow queues of assigned-but-unsent segments as private state and drain them
//!   here; `queued_ahead(p)` is theirs to track.
//! * **STMS** (Shi et al., USENIX ATC 2018, Alg. 1-2): skips a gap by naming a segment beyond `next_unsent()` for the
//!   slow subflow; adjusts the gap from data-ACKs via [`SchedEvent::DataAck`].
//! * **DEMS** (Guo et al., MobiCom 2017, Alg. 1): sends from both ends of the chunk
//!   (`meta().first_unsent(c)`, `meta().last_unsent(c)`), reinjects by naming a segment sent on
//!   the other subflow and compares `seg.tx_time(q)` with `now`, withholds the large-OWD subflow
//!   by Eq. 9, and reads OWD, ΔOWD, δ and bandwidth from [`SchedCtx::estimator`].
//!
//! Schedulers are deterministic: they draw no randomness and read no clock but `ctx.now`.

pub mod backup;
pub mod blest;
pub mod common;
pub mod daps;
pub mod dems;
pub mod dems_n;
pub mod ecf;
pub mod fixed_split;
pub mod linux;
pub mod lte_handover;
pub mod minrtt;
pub mod musher;
pub mod otias;
pub mod redundant;
pub mod rr;
pub mod single;
pub mod stms_a;
pub mod stms_c;
pub mod sttf;
pub mod view;

use crate::estimate::Estimator;
use crate::meta::send::{SegNo, SendBuffer};
use crate::packet::{PathId, MAX_PATHS};
use crate::subflow::sender::SubflowSender;
use crate::time::{Duration, Time};
pub use view::{SubflowSet, SubflowView};

/// "Subflow `path` sends meta segment `seg`."
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub path: PathId,
    pub seg: SegNo,
}

/// Things a scheduler is told about after they happen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SchedEvent {
    /// An ACK arrived on `path` acknowledging `newly_acked` bytes (cumulatively or by SACK).
    Ack {
        path: PathId,
        newly_acked: u64,
        rtt: Option<Duration>,
    },
    /// The data-ACK advanced to `data_ack`.
    DataAck { data_ack: u64 },
    /// `path` detected a loss and entered recovery.
    Loss { path: PathId },
    /// `path`'s retransmission timer fired.
    Rto { path: PathId },
}

/// Connection-held state of one subflow that the subflow itself does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathInfo {
    /// The subflow may take data: it is not "potentially failed" after a retransmission
    /// timeout (v0.9x `tp->pf`, `mptcp_is_def_unavailable`) nor in the RTO Loss state
    /// (`mptcp_is_temp_unavailable`, net/mptcp/mptcp_sched.c).
    pub available: bool,
    /// Bytes committed to the subflow's write queue and not yet sent (schedulers that queue
    /// ahead of the window: upstream Linux pushes a burst into `ssk`'s write queue).
    pub queued: u64,
    /// The subflow's send buffer, bytes (`sk_sndbuf`, autotuned as `tcp_sndbuf_expand`).
    pub sndbuf: u64,
}

impl Default for PathInfo {
    fn default() -> Self {
        PathInfo {
            available: true,
            queued: 0,
            sndbuf: u64::MAX,
        }
    }
}

/// The subflows behind a [`SchedCtx`]. The simulator's own slice is kept apart from other
/// drivers' so that its accessor calls stay direct (no vtable in the hot path; BENCHMARKS.md,
/// "subflow view").
#[derive(Clone, Copy)]
enum Subflows<'a> {
    Sim(&'a [SubflowSender]),
    Any(&'a dyn SubflowSet),
}

/// What a scheduler sees when asked.
pub struct SchedCtx<'a> {
    pub now: Time,
    subflows: Subflows<'a>,
    meta: &'a mut SendBuffer,
    est: &'a Estimator,
    penalties: &'a mut Vec<PathId>,
    /// Per-path connection state; empty means every path available with nothing queued.
    paths: &'a [PathInfo],
}

impl<'a> SchedCtx<'a> {
    /// The simulator's context: its own subflows.
    pub fn new(
        now: Time,
        subflows: &'a [SubflowSender],
        meta: &'a mut SendBuffer,
        est: &'a Estimator,
        penalties: &'a mut Vec<PathId>,
    ) -> Self {
        SchedCtx {
            now,
            subflows: Subflows::Sim(subflows),
            meta,
            est,
            penalties,
            paths: &[],
        }
    }
    /// The connection's per-path state (availability, write queue, send buffer).
    pub fn with_paths(mut self, paths: &'a [PathInfo]) -> Self {
        self.paths = paths;
        self
    }
    /// Connection-held state of path `p`.
    pub fn path_info(&self, p: PathId) -> PathInfo {
        self.paths.get(p as usize).copied().unwrap_or_default()
    }
    /// Whether `p` may take data at all (not potentially failed after an RTO, not in the RTO
    /// Loss state). New data never goes to an unavailable subflow.
    #[inline]
    pub fn available(&self, p: PathId) -> bool {
        // The flag alone, not a copy of the whole `PathInfo` (asked of every subflow on most
        // decisions).
        self.paths.get(p as usize).is_none_or(|i| i.available)
    }
    /// Any driver's context: subflows seen through [`SubflowView`] (kernel TCP subflows in
    /// the real proxy).
    pub fn with_subflows(
        now: Time,
        subflows: &'a dyn SubflowSet,
        meta: &'a mut SendBuffer,
        est: &'a Estimator,
        penalties: &'a mut Vec<PathId>,
    ) -> Self {
        SchedCtx {
            now,
            subflows: Subflows::Any(subflows),
            meta,
            est,
            penalties,
            paths: &[],
        }
    }
    #[inline]
    pub fn npaths(&self) -> usize {
        match self.subflows {
            Subflows::Sim(s) => s.len(),
            Subflows::Any(s) => s.count(),
        }
    }
    #[inline]
    pub fn subflow(&self, p: PathId) -> &dyn SubflowView {
        match self.subflows {
            Subflows::Sim(s) => &s[p as usize],
            Subflows::Any(s) => s.view(p),
        }
    }
    /// `read(subflow(p))`, with the simulator's subflows read directly rather than through
    /// the view's dynamic calls (for schedulers that read several values of every subflow on
    /// every decision).
    #[inline]
    pub fn read_subflow<R>(&self, p: PathId, read: impl Fn(&dyn SubflowView) -> R) -> R {
        match self.subflows {
            Subflows::Sim(s) => read(&s[p as usize]),
            Subflows::Any(s) => read(s.view(p)),
        }
    }
    /// Every subflow, in path order.
    pub fn subflows(&self) -> impl Iterator<Item = &dyn SubflowView> + '_ {
        (0..self.npaths()).map(|p| self.subflow(p as PathId))
    }
    /// Room for one more segment in `p`'s congestion window, and `p` available.
    #[inline]
    pub fn has_space(&self, p: PathId) -> bool {
        self.available(p)
            && match self.subflows {
                Subflows::Sim(s) => s[p as usize].has_cwnd_space(),
                Subflows::Any(s) => s.view(p).has_cwnd_space(),
            }
    }
    /// `subflow(p).srtt()` without the dynamic call when the subflows are the simulator's
    /// (MinRTT-style choices ask every subflow on every decision).
    #[inline]
    pub fn srtt_of(&self, p: PathId) -> Option<Duration> {
        match self.subflows {
            Subflows::Sim(s) => s[p as usize].srtt(),
            Subflows::Any(s) => s.view(p).srtt(),
        }
    }
    pub fn meta(&self) -> &SendBuffer {
        self.meta
    }
    /// Unsent-segment lookups move cached pointers, hence `&mut`.
    pub fn meta_mut(&mut self) -> &mut SendBuffer {
        self.meta
    }
    /// The estimator, borrowed for the whole context (a scheduler may keep a view of it while
    /// it changes the meta buffer).
    pub fn estimator(&self) -> &'a Estimator {
        self.est
    }
    /// Whether segment `n` exists, fits the peer's receive window and is not held by Nagle's
    /// algorithm at the data level ([`crate::meta::send::SendBuffer::nagle_holds`]).
    pub fn may_send(&self, n: SegNo) -> bool {
        self.meta.may_send(n)
    }
    /// True when unsent data exists but the peer's receive window forbids sending it.
    pub fn rwnd_blocked(&mut self) -> bool {
        match self.meta.next_unsent() {
            Some(n) => !self.meta.in_window(n),
            None => false,
        }
    }
    /// Ask the connection to halve `p`'s congestion window (MPTCP penalization; applied after
    /// this call, at most once per RTT per subflow).
    pub fn penalize(&mut self, p: PathId) {
        self.penalties.push(p);
    }
    /// Subflows with an RTT estimate ordered by smoothed RTT (ties by path number); subflows
    /// without a sample come last, in path order.
    pub fn by_srtt(&self) -> PathList {
        // One key per subflow, (srtt, path) packed so that one integer comparison orders two
        // subflows; keys are distinct, so any sort gives the order of the stable sort by
        // (srtt, path). Insertion sort: at most MAX_PATHS keys, nearly sorted between calls.
        // The keys fit a u64 (8 bits of path) while every sRTT is below 2^56 ns (2.3 years),
        // as always in practice; no sample ranks last, as 2^56 - 1 (issue "Speed at scale":
        // 128-bit keys made this a tenth of an 8-path run of the planners).
        const NONE: u64 = (1 << 56) - 1;
        let n = self.npaths();
        let mut keys = [0u64; MAX_PATHS];
        for (p, k) in keys[..n].iter_mut().enumerate() {
            let srtt = match self.srtt_of(p as PathId) {
                Some(d) if d.0 < NONE => d.0,
                Some(_) => return self.by_srtt_wide(),
                None => NONE,
            };
            *k = (srtt << 8) | p as u64;
        }
        let v = PathList::sorted_from_keys(&mut keys[..n]);
        debug_assert_eq!(*v, *self.by_srtt_wide());
        v
    }

    /// [`SchedCtx::by_srtt`] for any sRTT, with 128-bit keys.
    fn by_srtt_wide(&self) -> PathList {
        let n = self.npaths();
        let mut keys = [0u128; MAX_PATHS];
        for (p, k) in keys[..n].iter_mut().enumerate() {
            let srtt = self.srtt_of(p as PathId).unwrap_or(Duration::MAX);
            *k = (u128::from(srtt.0) << 8) | p as u128;
        }
        PathList::sorted_from_keys(&mut keys[..n])
    }
}

/// Sorts a short slice in place, fastest when it is nearly sorted.
pub(crate) fn insertion_sort<K: Ord + Copy>(keys: &mut [K]) {
    for i in 1..keys.len() {
        let k = keys[i];
        let mut j = i;
        while j > 0 && keys[j - 1] > k {
            keys[j] = keys[j - 1];
            j -= 1;
        }
        keys[j] = k;
    }
}

/// A short list of path ids without allocation (schedulers ask for one per decision).
#[derive(Clone, Copy, Debug)]
pub struct PathList {
    ids: [PathId; MAX_PATHS],
    n: usize,
}

impl PathList {
    /// The paths of `keys` in key order: each key carries its path in its low 8 bits.
    fn sorted_from_keys<K: Ord + Copy + Into<u128>>(keys: &mut [K]) -> Self {
        insertion_sort(keys);
        let mut v = PathList {
            ids: [0; MAX_PATHS],
            n: keys.len(),
        };
        for (id, &k) in v.ids.iter_mut().zip(keys.iter()) {
            *id = (k.into() & 0xff) as PathId;
        }
        v
    }
}

impl std::ops::Deref for PathList {
    type Target = [PathId];
    fn deref(&self) -> &[PathId] {
        &self.ids[..self.n]
    }
}

impl<'a> IntoIterator for &'a PathList {
    type Item = &'a PathId;
    type IntoIter = std::slice::Iter<'a, PathId>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

pub trait Scheduler: std::fmt::Debug + Send {
    /// CLI name.
    fn name(&self) -> &'static str;
    /// The next assignment, or `None` to send nothing now.
    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment>;
    /// Notification of an event; the default ignores it.
    fn on_event(&mut self, _ctx: &mut SchedCtx<'_>, _ev: &SchedEvent) {}
    /// The sequence gap (segments) a gap-keeping scheduler holds for the fast subflow now
    /// (STMS, Shi et al., USENIX ATC 2018, Eq. 2); `None` for the others. For traces and tests.
    fn gap_segments(&self) -> Option<f64> {
        None
    }
    /// Which subflow sends segment `seg` from the connection's reinjection queue (data a
    /// timed-out subflow held, see [`SchedEvent::Rto`]); `None` waits. The default is v0.9x
    /// `get_available_subflow` (net/mptcp/mptcp_sched.c) for a reinjected segment: the
    /// lowest-sRTT available subflow that has not carried it yet, or nothing while one that
    /// has not carried it lacks window space. Unlike v0.9x we never hand it back to a subflow
    /// that already carried it (that subflow retransmits its own copy), so a segment every
    /// subflow has carried leaves the queue: [`ReinjectChoice::Drop`].
    fn reinject_path(&mut self, ctx: &mut SchedCtx<'_>, seg: SegNo) -> ReinjectChoice {
        default_reinject_path(ctx, seg)
    }
    /// The scheduler commits segments into subflow write queues ahead of the congestion window
    /// (upstream Linux); the connection then accepts assignments to subflows without window
    /// space and sends them as the window opens.
    fn queues_ahead(&self) -> bool {
        false
    }
    /// The scheduler reads the spread of ΔOWD between subflows
    /// ([`crate::estimate::Estimator::delta_owd_stddev`], DEMS's δ); the estimator keeps it
    /// only then.
    fn reads_delta_owd(&self) -> bool {
        false
    }
    /// Path `p` is a backup path (RFC 8684 §3.3.8: the `B` bit of its MP_JOIN, a scenario's
    /// `backup = true`, Linux's `ip mptcp endpoint ... backup`). Schedulers that honour the
    /// flag (`linux`, as the kernel's `mptcp_subflow_get_send` does) keep it; the default
    /// ignores it, as v0.9x's default scheduler does.
    fn set_backup(&mut self, _p: PathId) {}
    /// Whether [`Scheduler::set_backup`] marked `p` (for the connection's own choices, e.g.
    /// upstream's retransmission subflow).
    fn is_backup(&self, _p: PathId) -> bool {
        false
    }
    /// The scheduler reads [`SubflowView::silent`]: the connection then watches each
    /// subflow's ACKs against its probe timeout (one more timer per subflow).
    fn watches_silence(&self) -> bool {
        false
    }
    /// Upstream Linux's MPTCP-level retransmission ([`crate::msk_rtx`]) instead of v0.9x's: a
    /// subflow's timeout moves nothing by itself; the connection's own timer resends one data
    /// fragment at a time on an idle subflow and re-pushes everything once a subflow is stale.
    fn msk_retransmit(&self) -> bool {
        false
    }
    /// The scheduler is plain single-path TCP: no connection level, so a subflow's timeout
    /// makes it neither unavailable nor reinjected (Linux TCP keeps sending new data in
    /// CA_Loss as the window allows).
    fn single_path(&self) -> bool {
        false
    }
    /// The one path a single-path scheduler uses: the connection is then plain TCP over that
    /// path (its handshake on it, no MP_JOIN to the others).
    fn only_path(&self) -> Option<PathId> {
        None
    }
}

/// Where a reinjected segment goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReinjectChoice {
    Send(PathId),
    /// Keep it queued; nothing else is sent before it.
    Wait,
    /// No subflow can usefully carry it: forget it.
    Drop,
}

/// v0.9x `get_subflow_from_selectors` for a reinjected segment (see [`Scheduler::reinject_path`]).
pub fn default_reinject_path(ctx: &SchedCtx<'_>, seg: SegNo) -> ReinjectChoice {
    let Some(rec) = ctx.meta().seg(seg) else {
        return ReinjectChoice::Drop;
    };
    let mut best: Option<PathId> = None;
    let mut waiting = false;
    for &p in ctx.by_srtt().iter() {
        if rec.sent_on(p) {
            continue;
        }
        if ctx.has_space(p) {
            best = Some(p);
            break;
        }
        // Unavailable or without window space for now: it may take the segment later.
        waiting = true;
    }
    match (best, waiting) {
        (Some(p), _) => ReinjectChoice::Send(p),
        (None, true) => ReinjectChoice::Wait,
        (None, false) => ReinjectChoice::Drop,
    }
}

/// Every scheduler the engine builds by name, with its paper reference.
pub const SCHEDULERS: &[(&str, &str)] = &[
    (
        "minrtt",
        "lowest-sRTT subflow with window space; opportunistic retransmission and penalization (Linux MPTCP v0.9x default; Cech, TUM 2020 §3.1, Shi et al., USENIX ATC 2018 §2.3)",
    ),
    (
        "linux",
        "upstream Linux MPTCP: lowest linger time (queued bytes / pacing rate), 64 KB bursts into the subflow's queue (net/mptcp/protocol.c, mptcp_subflow_get_send)",
    ),
    ("rr", "round robin over subflows with window space, starting at the lowest RTT (Guo et al., MobiCom 2017 §7.5)"),
    ("redundant", "every segment on every subflow (ReMP; Guo et al., MobiCom 2017 §3.1, §7.5)"),
    ("single", "best single path by capacity estimate, or single:NAME (Guo et al., MobiCom 2017 §3.2, §7.5)"),
    ("dems-b", "DEMS basic: two-way chunk split, large-OWD subflow stopped by Eq. 9 for simultaneous completion, no reinjection (Guo et al., MobiCom 2017 §4.1-4.2, §7.1); N paths: our generalization"),
    ("dems-s", "DEMS with simple reinjection past the meeting point (Guo et al., MobiCom 2017 §4.3, Eq. 10)"),
    ("dems-f", "DEMS full: Algorithm 1, adaptive reinjection by Eq. 11-12 (Guo et al., MobiCom 2017 §4.4-4.5); dems-f:k=K sets delta = K*stddev(dOWD), dems-f:delta=30ms fixes it"),
    ("stms-c", "STMS with computed gap: fast subflow sends in order, slow one skips Gap = B_f (OWD_s - OWD_f) segments (Shi et al., USENIX ATC 2018, Alg. 1, Eq. 2)"),
    ("stms-a", "STMS with adjusted gap: Alg. 1 with the gap learned from data-ACKs every (RTT_s + RTT_f)/2 (Shi et al., USENIX ATC 2018, Alg. 2)"),
    // The field compared by Cech, TUM 2020 (Table 1), one file each.
    ("blest", "BLEST: withhold the slow subflow when the fast one would be send-window blocked; lambda adapted as Linux mptcp_blest.c (Ferlin et al., IFIP Networking 2016; Cech, TUM 2020, Alg. 1)"),
    ("ecf", "ECF: wait for the fast subflow when that completes sooner, beta = 1/4 hysteresis (Lim et al., CoNEXT 2017; Cech, TUM 2020, Alg. 2)"),
    ("sttf", "STTF: every unsent segment to the subflow with the shortest predicted transfer time, re-planned on each ACK (Hurtig et al., IEEE/ACM ToN 2018; Cech, TUM 2020, Alg. 3)"),
    ("musher", "MuSher: fixed packet-assignment ratio with a throughput-driven ratio search (Saha et al., MobiCom 2019; Cech, TUM 2020, §3.3)"),
    ("daps", "DAPS: RTT-ratio sending schedule for in-order arrival (Kuhn et al., ICC 2014; Cech, TUM 2020, Table 1)"),
    ("otias", "OTIAS: each segment to the subflow of earliest estimated arrival, queued ahead of the window (Yang et al., AINA Workshops 2014; Cech, TUM 2020, Table 1)"),
    ("lte-handover", "handover-aware: inter-send vs inter-ACK detection, disabled/stale subflows, resend of in-flight data, RTT refresh (Cech, TUM 2020, §5, Fig. 8)"),
    ("backup", "MPTCP backup flag: backup paths carry data only while every other path has gone a probe timeout without an ACK or is in RTO loss (detect=rto: RTO loss only, as Linux v0.9x); backup:NAME[,NAME][,detect=probe|rto] or path key backup = true (RFC 8684 §3.3.8; RFC 7829 §4)"),
];

/// Errors building a scheduler from its CLI name.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SchedError {
    #[error("unknown scheduler \"{0}\" (known: {1})")]
    Unknown(String, String),
    #[error("scheduler \"single:{0}\": no path named \"{0}\" (paths: {1})")]
    UnknownPath(String, String),
    #[error("scheduler \"{0}\": name the backup paths (backup:NAME[,NAME...]) or mark them backup = true in the scenario")]
    BackupPaths(String),
    #[error("scheduler \"backup:{0}\": no path named \"{0}\" (paths: {1})")]
    UnknownBackupPath(String, String),
    #[error("scheduler backup: unknown option \"{0}\" (the one option is detect=probe|rto)")]
    BackupOption(String),
}

/// Build a scheduler from its CLI name. `path_names` resolves `single:NAME`; `capacity_bps`
/// is the configured capacity of each path (the best-single-path choice).
pub fn build(
    name: &str,
    path_names: &[String],
    capacity_bps: &[f64],
) -> Result<Box<dyn Scheduler>, SchedError> {
    let (base, arg) = match name.split_once(':') {
        Some((b, a)) => (b, Some(a)),
        None => (name, None),
    };
    Ok(match (base, arg) {
        ("minrtt", None) => Box::new(minrtt::MinRtt::new(true)),
        ("minrtt", Some("nopenalty")) => Box::new(minrtt::MinRtt::new(false)),
        ("minrtt", Some("noor")) => Box::new(minrtt::MinRtt::plain()),
        ("rr", None) => Box::new(rr::RoundRobin::default()),
        ("linux", None) => Box::new(linux::Linux::default()),
        ("dems-b" | "dems-s" | "dems-f", _) => match dems::build(base, arg, path_names.len()) {
            Some(s) => s,
            None => {
                let known: Vec<&str> = SCHEDULERS.iter().map(|s| s.0).collect();
                return Err(SchedError::Unknown(name.to_string(), known.join(", ")));
            }
        },
        ("stms-c", None) => Box::new(stms_c::StmsC::default()),
        ("stms-a", None) => Box::new(stms_a::StmsA::default()),
        ("redundant", None) => Box::new(redundant::Redundant::new(path_names.len())),
        ("blest", None) => Box::new(blest::Blest::new(path_names.len())),
        ("ecf", None) => Box::new(ecf::Ecf::new()),
        ("sttf", None) => Box::new(sttf::Sttf::new()),
        ("musher", None) => Box::new(musher::Musher::new(path_names.len())),
        ("daps", None) => Box::new(daps::Daps::new(path_names.len())),
        ("otias", None) => Box::new(otias::Otias::new(path_names.len())),
        ("lte-handover", None) => Box::new(lte_handover::LteHandover::new(path_names.len())),
        ("backup", arg) => {
            let items: Vec<&str> = arg.map(|a| a.split(',').collect()).unwrap_or_default();
            let mut detect = backup::Detect::Probe;
            let mut names = Vec::new();
            for item in items {
                match item.split_once('=') {
                    Some(("detect", v)) => {
                        detect = backup::Detect::parse(v)
                            .ok_or_else(|| SchedError::BackupOption(item.to_string()))?;
                    }
                    Some(_) => return Err(SchedError::BackupOption(item.to_string())),
                    None => names.push(item),
                }
            }
            if names.is_empty() || names.iter().any(|n| n.is_empty()) {
                return Err(SchedError::BackupPaths(name.to_string()));
            }
            let mut flags = vec![false; path_names.len()];
            for n in names {
                match path_names.iter().position(|p| p == n) {
                    Some(i) => flags[i] = true,
                    None => {
                        return Err(SchedError::UnknownBackupPath(
                            n.to_string(),
                            path_names.join(", "),
                        ));
                    }
                }
            }
            Box::new(backup::Backup::new(flags, detect))
        }
        ("fixed-split", Some(a)) => match fixed_split::FixedSplit::parse(a, path_names.len()) {
            Some(s) => Box::new(s),
            None => {
                let known: Vec<&str> = SCHEDULERS.iter().map(|s| s.0).collect();
                return Err(SchedError::Unknown(name.to_string(), known.join(", ")));
            }
        },
        ("single", None) => {
            let best = capacity_bps
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
                .map_or(0, |(i, _)| i);
            Box::new(single::Single::new(best as PathId))
        }
        ("single", Some(p)) => match path_names.iter().position(|n| n == p) {
            Some(i) => Box::new(single::Single::new(i as PathId)),
            None => {
                return Err(SchedError::UnknownPath(
                    p.to_string(),
                    path_names.join(", "),
                ));
            }
        },
        _ => {
            let known: Vec<&str> = SCHEDULERS.iter().map(|s| s.0).collect();
            return Err(SchedError::Unknown(name.to_string(), known.join(", ")));
        }
    })
}
