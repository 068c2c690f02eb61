//! `dems-b`, `dems-s`, `dems-f`: DEMS, the DEcoupled Multipath Scheduler (Guo et al., MobiCom 2017, Guo et al.,
//! MobiCom 2017: §4.1-4.5, Algorithm 1, §5; Guo et al., MobiCom 2017 demo for the same design in short). One
//! algorithm; the variants differ only in their reinjection policy (§7.1):
//!
//! * `dems-b` ([`Reinjection::None`]): two-way split (§4.1) and simultaneous subflow completion
//!   (§4.2, Eq. 9), no reinjection;
//! * `dems-s` ([`Reinjection::Simple`]): plus the simple reinjection of §4.3 (Eq. 10 bytes);
//! * `dems-f` ([`Reinjection::Adaptive`]): Algorithm 1 exactly, i.e. the adaptive reinjection of
//!   §4.4 (Eq. 11 and 12, Eq. 13 bytes). `dems-f:k=2` sets δ = k · StdDev(ΔOWD) (§4.4, §5;
//!   k = 1 by default); `dems-f:delta=30ms` fixes δ instead ("δ can be configured", §4.4).
//!
//! # Two subflows (this file)
//!
//! **Chunks (§4.1, §5).** The chunk is the one the application closed with the hint API or,
//! without hints, all data in the meta buffer (the open chunk of [`SendBuffer`], which grows at
//! its tail). Chunks are served back to back, oldest first: a subflow works on the oldest chunk
//! in which it still has something to do (§5 "work on the chunks sequentially"), so reinjection
//! for chunk k goes before new data of chunk k+1, and a subflow with nothing left to do for
//! chunk k (DEMS-B after the meeting point, or a reinjection that Eq. 11 refuses) starts k+1.
//!
//! **Two-way split and who goes which way.** One subflow fetches the chunk from its head
//! forward (`first_unsent`), the other from its tail backward (`last_unsent`), so data the
//! application appends during the transfer is fetched by the tail subflow (§5 head/tail
//! fetch). The *small-OWD* subflow takes the head. The paper implies it: in §4.2 (Fig. 5, Eq. 6
//! and 7) Subflow 1, the small-OWD one, "is currently working on a byte with a smaller sequence
//! number SEQ_1" while the large-OWD Subflow 2 holds SEQ_2 > SEQ_1; in Fig. 8 Subflow 1
//! reinjects forward into Subflow 2's bytes. It is also what the application wants: the chunk
//! head arrives first, on the fast path. The direction is fixed per chunk when its first segment
//! is scheduled (turning around mid-chunk would leave islands behind the walks of §4.3); the
//! OWD roles of Algorithm 1 are re-read at every decision and need not follow the direction.
//!
//! **Algorithm 1**, evaluated whenever a subflow has congestion-window space (the small-OWD
//! subflow is asked first):
//!
//! * Line 1, `GetNextUnAckedPacketOnThisSubflow(i)`: while the chunk has untransmitted bytes, the
//!   next one in the subflow's direction; once all are transmitted (the subflows have met), the
//!   next segment in its direction that is neither acknowledged (`received`) nor already sent on
//!   this subflow — a reinjection candidate. Subflow-level retransmissions never reach here.
//! * Lines 7-9: the small-OWD subflow always sends new data.
//! * Lines 15-18 (Eq. 9): the large-OWD subflow sends (new data, or a reinjection) only while
//!   D ≥ (ΔOWD − δ) · BW_small, D = untransmitted bytes of the chunk; `dems-b`/`dems-s` use
//!   δ = 0 (plain Eq. 9), so they stop the large subflow exactly when D < ΔOWD · BW_small.
//!   Once D = 0 this lets the large subflow reinject only when ΔOWD ≤ δ, and then, by Eq. 12,
//!   only a byte the small subflow sent at most δ − ΔOWD ago ([`reinjection_pays_off`]).
//! * Lines 10-13 (Eq. 11): the small-OWD subflow reinjects a byte the large one carried iff it
//!   was sent there at most ΔOWD + δ ago; otherwise it sends nothing for this chunk.
//! * `dems-s` (§4.3): after the meeting point both subflows reinject in their own direction,
//!   every byte that is neither acknowledged nor already sent by them, "until all bytes of the
//!   chunk are either acknowledged or reinjected".
//!
//! **Estimates (§5)**, from [`crate::estimate::Estimator`]: OWD_p is the EWMA (α = 0.25) of the
//! 10 KB bytes-in-flight bin for subflow p's bytes in flight now (the bin the next packet would
//! be sent in); ΔOWD = OWD_large − OWD_small (the clock offset cancels); δ = k · StdDev(ΔOWD);
//! BW_small = the bandwidth EWMA of the small-OWD subflow (but see the deviations). In Eq. 11
//! the byte's copy on the large subflow travels with the OWD of the bin it was *sent* in: DEMS
//! records each subflow's bytes in flight when it assigns it a segment ([`SendLog`]), because
//! once the large subflow is withheld its bytes in flight drain and its current bin would
//! understate the delay of the copies already on their way (in a 4 MiB WiFi/LTE-270 ms
//! transfer: 0.28 s instead of 0.46 s, so Eq. 11 refused exactly the reinjections it exists for).
//!
//! **Before any sample.** A subflow's first OWD sample and first RTT sample come with its first
//! ACK. Until every subflow has an OWD estimate the roles come from srtt (OWD ≈ srtt/2, which
//! assumes symmetric paths), and before that from path order (path 0, the initial subflow that
//! carried the request, ranks first — as [`SchedCtx::by_srtt`] does). With no ΔOWD at all, or no
//! spread of it yet (fewer than two ΔOWD samples), the uncertainty is unbounded: δ = ∞. Then
//! Algorithm 1 never withholds the large subflow (line 16: (ΔOWD − ∞) · BW < D) and reinjects like
//! `dems-s`; `dems-b`/`dems-s` never withhold a subflow without a ΔOWD to justify it. This only
//! concerns the first round trip of a connection: a subflow without an ACK has no window left.
//!
//! **Several connections (§5).** Our sender has one connection. With several, each keeps its
//! own [`SendBuffer`] and its own `Dems` state (plans are per chunk, hence per buffer); a
//! multiplexer above them would hold a round-robin pointer over the connections and, whenever a
//! subflow has window space, ask the connections' DEMS in turn starting at the pointer, take the
//! first assignment offered and advance the pointer past that connection, so every backlogged
//! connection gets an equal share of segments. Nothing in this file would change: `next` already
//! answers `None` when a connection has nothing to send on the free subflows.
//!
//! # More than two subflows
//!
//! Guo et al., MobiCom 2017, §8 leaves N ≥ 3 paths to future work; our design is in [`super::dems_n`], which
//! [`build`] selects for N ≥ 3. Its stopping rule is Eq. 9 for two subflows.
//!
//! # Deviations and limits
//!
//! * The chunk of §4.1 is what [`SendBuffer`] calls a chunk; the "meta buffer" of Algorithm 1
//!   line 17 is the chunk being decided (with back-to-back hinted chunks, untransmitted bytes of
//!   later chunks do not count, since they will be scheduled after this one).
//! * BW is the bandwidth EWMA of §5 over delivery-rate samples that are not
//!   application-limited (DEMS idles subflows at every chunk end; samples of data sent then
//!   would sink the EWMA below the path's rate exactly when the next chunk is planned). Before
//!   the first sample, cwnd / srtt.
//! * Comparisons use ≥ and ≤ exactly as Algorithm 1 (Eq. 9 says "stop when D < ΔOWD · BW").
//! * A chunk larger than the send buffer is seen one buffer-full at a time: the subflows "meet"
//!   whenever the buffer's data is all sent, and reinject there, before the application can
//!   write more.
//! * Reinjection stops when the connection's data-ACK frees the chunk, i.e. one small-path
//!   round trip after the receiver has it all; Guo et al., MobiCom 2017's proxy only had per-subflow ACKs, so
//!   Eq. 10 (which counts until those arrive) holds here only while ΔOWD ≪ RTT.

use std::collections::VecDeque;

mod view;
pub(crate) use view::{DeltaCache, NetView, ViewCache};

use crate::meta::send::{Chunk, SegNo, SegRecord, SendBuffer};
use crate::packet::{PathId, MAX_PATHS};
use crate::sched::{Assignment, SchedCtx, Scheduler};
use crate::time::Time;

/// The reinjection policy that distinguishes the three variants (Guo et al., MobiCom 2017, §7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reinjection {
    /// DEMS-B: none.
    None,
    /// DEMS-S: past the meeting point until every byte is acknowledged or reinjected (§4.3).
    Simple,
    /// DEMS-F: Algorithm 1 (§4.4, Eq. 11-12).
    Adaptive,
}

/// Configuration of one DEMS variant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    pub reinjection: Reinjection,
    /// δ = k · StdDev(ΔOWD) (§4.4 "δ can be set to k · StdDev(ΔOWD)"; §5 uses k = 1).
    pub k: f64,
    /// A fixed δ in nanoseconds instead of k · StdDev(ΔOWD).
    pub fixed_delta_ns: Option<f64>,
}

impl Params {
    pub fn new(reinjection: Reinjection) -> Self {
        Params {
            reinjection,
            k: 1.0,
            fixed_delta_ns: None,
        }
    }

    /// Parse a CLI name: `dems-b`, `dems-s`, `dems-f`, `dems-f:k=2`, `dems-f:delta=30ms`
    /// (`k=..,delta=..` may be combined with a comma). δ only exists for `dems-f`, so the
    /// parameters are refused on the other two.
    pub fn parse(base: &str, arg: Option<&str>) -> Option<Params> {
        let mut p = Params::new(match base {
            "dems-b" => Reinjection::None,
            "dems-s" => Reinjection::Simple,
            "dems-f" => Reinjection::Adaptive,
            _ => return None,
        });
        let Some(arg) = arg else {
            return Some(p);
        };
        if p.reinjection != Reinjection::Adaptive {
            return None;
        }
        for kv in arg.split(',') {
            match kv.split_once('=')? {
                ("k", v) => {
                    let k: f64 = v.parse().ok()?;
                    if !(k.is_finite() && k >= 0.0) {
                        return None;
                    }
                    p.k = k;
                }
                ("delta", v) => p.fixed_delta_ns = Some(parse_duration_ns(v)?),
                _ => return None,
            }
        }
        Some(p)
    }

    /// Whether the variant reads δ = k · StdDev(ΔOWD) from the estimator: `dems-f`, unless
    /// δ is fixed (`delta=`).
    pub(crate) fn reads_delta(&self) -> bool {
        self.reinjection == Reinjection::Adaptive && self.fixed_delta_ns.is_none()
    }

    pub(crate) fn name(&self) -> &'static str {
        match self.reinjection {
            Reinjection::None => "dems-b",
            Reinjection::Simple => "dems-s",
            Reinjection::Adaptive => "dems-f",
        }
    }
}

/// `30ms`, `0.03s`, `500us`: non-negative, in nanoseconds.
fn parse_duration_ns(v: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = v.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1e9)
    } else {
        return None;
    };
    let x: f64 = num.parse().ok()?;
    (x.is_finite() && x >= 0.0).then_some(x * scale)
}

/// Build a DEMS variant from its CLI name for a connection of `npaths` subflows: Algorithm 1
/// for one or two subflows, [`super::dems_n::DemsN`] for more. `None`: not a DEMS name or a bad
/// parameter.
pub fn build(base: &str, arg: Option<&str>, npaths: usize) -> Option<Box<dyn Scheduler>> {
    let params = Params::parse(base, arg)?;
    Some(if npaths <= 2 {
        Box::new(Dems::new(params))
    } else {
        Box::new(super::dems_n::DemsN::new(params))
    })
}

// ---- what Algorithm 1 reads from the estimator (lines 2-5 and 15): [`view`] ---------------

/// The `k`-th chunk of the buffer, oldest first (a copy, so the buffer can be borrowed again).
pub(crate) fn chunk_at(meta: &SendBuffer, k: usize) -> Option<Chunk> {
    if k == 0 {
        // Most decisions stop at the oldest chunk: no iterator over the chunks.
        meta.current_chunk().copied()
    } else {
        meta.chunks().nth(k).copied()
    }
}
// ---- the reinjection walks of Algorithm 1 line 1; the bins copies travel in (Eq. 11) ------

/// Whether subflow `i` has nothing to add to segment `s`: the receiver has it, or `i` sent it.
fn done_for(s: &SegRecord, i: PathId) -> bool {
    s.received || s.sent_on(i)
}

/// Forward walk of subflow `i` over chunk `c` from `*cur`: the first segment `i` may reinject.
/// `*cur` only moves over segments that stay done for `i` (both conditions are permanent).
fn walk_forward(meta: &SendBuffer, c: &Chunk, i: PathId, cur: &mut SegNo) -> Option<SegNo> {
    let mut n = (*cur).max(c.first).max(meta.base_seg());
    while n < c.end && meta.seg(n).is_some_and(|s| done_for(s, i)) {
        n += 1;
    }
    *cur = n;
    (n < c.end && meta.seg(n).is_some()).then_some(n)
}

/// Backward walk of subflow `i` over chunk `c` down from `*top` (exclusive).
fn walk_backward(meta: &SendBuffer, c: &Chunk, i: PathId, top: &mut SegNo) -> Option<SegNo> {
    let lo = c.first.max(meta.base_seg());
    let mut n = (*top).min(c.end);
    while n > lo && meta.seg(n - 1).is_some_and(|s| done_for(s, i)) {
        n -= 1;
    }
    *top = n;
    (n > lo && meta.seg(n - 1).is_some()).then(|| n - 1)
}

/// Bytes in flight on each subflow when DEMS gave it each segment, by absolute segment number:
/// the OWD bin (§5) that copy travels in.
#[derive(Debug, Default)]
pub(crate) struct SendLog {
    base: SegNo,
    bif: VecDeque<[u32; MAX_PATHS]>,
}

impl SendLog {
    const UNKNOWN: u32 = u32::MAX;

    /// Log that `p` was given `seg` with `bif` bytes in flight; the bytes in flight as
    /// [`SendLog::bif`] will answer them.
    pub(crate) fn record(&mut self, seg: SegNo, p: PathId, bif: u64) -> u64 {
        if self.bif.is_empty() {
            self.base = seg;
        }
        while seg < self.base {
            self.bif.push_front([Self::UNKNOWN; MAX_PATHS]);
            self.base -= 1;
        }
        let i = (seg - self.base) as usize;
        if i >= self.bif.len() {
            self.bif.resize(i + 1, [Self::UNKNOWN; MAX_PATHS]);
        }
        let b = bif.min(Self::UNKNOWN as u64 - 1) as u32;
        self.bif[i][p as usize] = b;
        u64::from(b)
    }

    pub(crate) fn bif(&self, seg: SegNo, p: PathId) -> Option<u64> {
        let b = *self
            .bif
            .get(seg.checked_sub(self.base)? as usize)?
            .get(p as usize)?;
        (b != Self::UNKNOWN).then_some(b as u64)
    }

    /// Forget segments the data-ACK freed.
    pub(crate) fn prune(&mut self, base: SegNo) {
        while self.base < base && self.bif.pop_front().is_some() {
            self.base += 1;
        }
        if self.bif.is_empty() {
            self.base = base;
        }
    }
}

/// Eq. 11 and Eq. 12 (Algorithm 1 lines 11-12 and 16): a copy of segment `seg` on subflow `i`
/// pays off while it may still arrive before the copy subflow `q` sent at `t_q`, given that the
/// real ΔOWD lies within δ of the estimate: now − t_q ≤ OWD_q − OWD_i + δ.
///
/// * `i` the small-OWD subflow, `q` the large one: now − t_q ≤ ΔOWD + δ, Eq. 11 (printed as the
///   condition to *stop*, t_s1 − t_s2 > ΔOWD + δ with t_s1 = now).
/// * `i` the large-OWD subflow, `q` the small one: now − t_q ≤ δ − ΔOWD, Eq. 12 (stop once
///   t_s1 − t_s2 < ΔOWD − δ, with t_s2 = now). It never holds when ΔOWD > δ, which is line 17
///   with nothing untransmitted, and when ΔOWD ≤ δ it admits only the bytes the small subflow
///   sent within the last δ − ΔOWD: the large subflow's half of Eq. 13's 2δ · BW1BW2/(BW1+BW2).
///   Algorithm 1 prints only the gate (line 17); §4.4 says line 16 reinjects "according to
///   Equation (12)", and without the per-byte bound the large subflow would copy every
///   unacknowledged byte of the small one's region whenever ΔOWD ≤ δ, as DEMS-S does.
///
/// `t_q` is q's latest transmission of the segment, its own retransmissions and tail-loss
/// probes included: a copy q just resent is as fresh as a new one.
///
/// The fresh copy would travel with `i`'s OWD for its bytes in flight now; the copy on `q`
/// travels with `q`'s OWD for the bytes in flight it was sent with (its §5 bin), which is the
/// ΔOWD that matters for this byte. Once the large subflow is withheld its bytes in flight
/// drain, so its *current* bin would understate the delay of the copies it already sent.
pub(crate) fn reinjection_pays_off(
    ctx: &SchedCtx<'_>,
    view: &NetView,
    log: &SendLog,
    i: PathId,
    q: PathId,
    seg: SegNo,
    t_q: Time,
) -> bool {
    let age = ctx.now.saturating_since(t_q);
    let d = match (copy_owd(ctx, view, log, q, seg), view.owd(i)) {
        (Some(oq), Some(oi)) => oq - oi,
        _ => return true, // δ = ∞: nothing is known, reinject as DEMS-S does
    };
    age.as_nanos() as f64 <= d + view.delta(i, q)
}

/// The OWD (on the view's basis, ns) of the copy of `seg` that subflow `q` sent: the estimate
/// for the bytes in flight it was sent with, else `q`'s current estimate.
pub(crate) fn copy_owd(
    ctx: &SchedCtx<'_>,
    view: &NetView,
    log: &SendLog,
    q: PathId,
    seg: SegNo,
) -> Option<f64> {
    let at_send = match (view.measured(), log.bif(seg, q)) {
        (true, Some(b)) => ctx.estimator().owd(q as usize, b),
        _ => None,
    };
    at_send.or(view.owd(q))
}

// ---- two subflows: Algorithm 1 -----------------------------------------------------------

/// Per-chunk state: the direction split and the reinjection walks.
#[derive(Clone, Copy, Debug)]
struct Plan {
    chunk: u64,
    /// `Chunk::first` when planned. An open chunk (no hints) that was fully acknowledged starts
    /// again at a new first segment when data arrives: that is a new transfer, planned anew.
    first: SegNo,
    /// The subflow that fetches from the head; the other one fetches from the tail.
    head: PathId,
    /// Forward walk of the head subflow: every segment below is done for it.
    fwd: SegNo,
    /// Backward walk of the tail subflow: every segment from here to `tail_end` is done for it.
    bwd: SegNo,
    /// `Chunk::end` when the backward walk started; appended data restarts it at the new tail.
    tail_end: SegNo,
}

#[derive(Debug)]
pub struct Dems {
    params: Params,
    plans: Vec<Plan>,
    log: SendLog,
    /// Taken out during a decision, which reads it while `self` changes.
    views: Option<Box<ViewCache>>,
}

impl Dems {
    pub fn new(params: Params) -> Self {
        Dems {
            params,
            plans: Vec::new(),
            log: SendLog::default(),
            views: Some(Box::default()),
        }
    }

    fn plan_index(&mut self, c: &Chunk, view: &NetView) -> usize {
        if let Some(i) = self
            .plans
            .iter()
            .position(|p| p.chunk == c.id && p.first == c.first)
        {
            return i;
        }
        self.plans.retain(|p| p.chunk != c.id);
        self.plans.push(Plan {
            chunk: c.id,
            first: c.first,
            head: view.smallest(),
            fwd: c.first,
            bwd: c.end,
            tail_end: c.end,
        });
        self.plans.len() - 1
    }

    /// Lines 7-9 and 15-18 for new data (Eq. 9): may subflow `i` transmit with `unsent` bytes
    /// of the chunk left untransmitted?
    fn may_send_new(&self, view: &NetView, i: PathId, unsent: u64) -> bool {
        let small = view.smallest();
        if i == small {
            return true;
        }
        let (Some(d), Some(bw)) = (view.delta_owd(small, i), view.bw(small)) else {
            return true;
        };
        let slack = match self.params.reinjection {
            Reinjection::Adaptive => view.delta(small, i),
            Reinjection::None | Reinjection::Simple => 0.0,
        };
        unsent as f64 >= (d - slack) * bw
    }

    /// The chunk is fully transmitted: the reinjection of subflow `i`, if its policy wants one.
    fn reinjection(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        view: &NetView,
        i: PathId,
        c: &Chunk,
        pi: usize,
    ) -> Option<SegNo> {
        if self.params.reinjection == Reinjection::None {
            return None;
        }
        let plan = &mut self.plans[pi];
        let seg = if plan.head == i {
            walk_forward(ctx.meta(), c, i, &mut plan.fwd)?
        } else {
            if plan.tail_end != c.end {
                plan.tail_end = c.end;
                plan.bwd = c.end;
            }
            walk_backward(ctx.meta(), c, i, &mut plan.bwd)?
        };
        let rec = *ctx.meta().seg(seg)?;
        let ok = match self.params.reinjection {
            Reinjection::None => false,
            Reinjection::Simple => true,
            // Lines 10-13 (Eq. 11) for the small-OWD subflow; lines 15-18 with nothing left
            // untransmitted and Eq. 12 for the large one (`may_send_new` never withholds the
            // small one). The copy to beat is on the other subflow (the only one).
            Reinjection::Adaptive => {
                self.may_send_new(view, i, 0)
                    && match (0..view.order().len() as PathId).find(|&q| q != i && rec.sent_on(q)) {
                        Some(q) => {
                            let t_q = rec.tx_time(q as usize)?;
                            reinjection_pays_off(ctx, view, &self.log, i, q, seg, t_q)
                        }
                        None => false,
                    }
            }
        };
        (ok && ctx.may_send(seg)).then_some(seg)
    }

    /// Algorithm 1 for subflow `i`, over the chunks oldest first.
    fn pick(&mut self, ctx: &mut SchedCtx<'_>, view: &NetView, i: PathId) -> Option<SegNo> {
        let mut k = 0;
        while let Some(c) = chunk_at(ctx.meta(), k) {
            k += 1;
            let pi = self.plan_index(&c, view);
            if c.unsent_bytes > 0 {
                // Eq. 9: withheld; the small subflow will finish this chunk — unless it is
                // unavailable after a retransmission timeout (issue 9: it finishes nothing).
                if ctx.available(view.smallest()) && !self.may_send_new(view, i, c.unsent_bytes) {
                    return None;
                }
                let mut seg = if self.plans[pi].head == i {
                    ctx.meta_mut().first_unsent(c.id)?
                } else {
                    ctx.meta_mut().last_unsent(c.id)?
                };
                if !ctx.may_send(seg) {
                    // The tail lies past the peer's receive window (a chunk larger than the
                    // window): the tail subflow helps from the head instead of idling.
                    seg = ctx.meta_mut().first_unsent(c.id)?;
                }
                return ctx.may_send(seg).then_some(seg);
            }
            if let Some(seg) = self.reinjection(ctx, view, i, &c, pi) {
                return Some(seg);
            }
        }
        None
    }

    /// Plans of chunks that left the buffer are dropped.
    fn forget_freed_chunks(&mut self, meta: &SendBuffer) {
        if let Some(front) = meta.current_chunk().map(|c| c.id) {
            self.plans.retain(|p| p.chunk >= front);
        }
    }
}

impl Scheduler for Dems {
    /// `dems-f`'s δ = k · StdDev(ΔOWD) (§4.4) comes from the estimator's ΔOWD windows, which
    /// cost O(N) per OWD sample; `dems-b` and `dems-s` never read δ (Eq. 9 with δ = 0, no
    /// Eq. 11/12), so the estimator keeps them for `dems-f` only ([`NetView::delta`] checks).
    fn reads_delta_owd(&self) -> bool {
        self.params.reads_delta()
    }
    fn name(&self) -> &'static str {
        self.params.name()
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        self.forget_freed_chunks(ctx.meta());
        self.log.prune(ctx.meta().base_seg());
        let mut views = self.views.take().expect("put back after every decision");
        let a = self.decide(ctx, views.view(ctx, &self.params));
        self.views = Some(views);
        a
    }
}

impl Dems {
    fn decide(&mut self, ctx: &mut SchedCtx<'_>, view: NetView<'_>) -> Option<Assignment> {
        // The small-OWD subflow first: it is never withheld from new data (line 7-9).
        for k in 0..view.order().len() {
            let p = view.order()[k];
            if !ctx.has_space(p) {
                continue;
            }
            if let Some(seg) = self.pick(ctx, &view, p) {
                self.log.record(seg, p, ctx.subflow(p).in_flight());
                return Some(Assignment { path: p, seg });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    //! A sender's scheduler-facing state (subflows, meta buffer, estimator) driven through public
    //! transitions only, one decision at a time, as `SenderConnection::poll_transmit` does.

    use super::*;
    use crate::cc::{CcKind, CoupledView};
    use crate::estimate::Estimator;
    use crate::packet::{Ack, SackBlock};
    use crate::subflow::sender::SubflowSender;
    use crate::time::Duration;

    const MSS: u32 = 1000;
    const MS: u64 = 1_000_000;
    /// Both clocks start far from zero, as in the simulator.
    const EPOCH: u64 = 1_000_000_000_000;

    struct Net {
        sched: Box<dyn Scheduler>,
        subflows: Vec<SubflowSender>,
        meta: SendBuffer,
        est: Estimator,
        now: Time,
        penalties: Vec<PathId>,
        /// Per path: (subflow sequence end, meta segment) of every transmission, in order.
        sent: Vec<Vec<(u64, SegNo)>>,
        acked: Vec<usize>,
    }

    /// A sender with one subflow per entry of `windows` (initial window, segments), scheduling
    /// with `name` (e.g. `dems-f:delta=20ms`).
    fn net(name: &str, windows: &[u32]) -> Net {
        let (base, arg) = match name.split_once(':') {
            Some((b, a)) => (b, Some(a)),
            None => (name, None),
        };
        Net {
            sched: build(base, arg, windows.len()).expect("a DEMS name"),
            subflows: windows
                .iter()
                .enumerate()
                .map(|(p, &w)| {
                    SubflowSender::new(
                        p as PathId,
                        CcKind::Reno,
                        MSS,
                        w,
                        Duration::from_millis(200),
                    )
                })
                .collect(),
            meta: SendBuffer::new(MSS, 1 << 30, 1 << 30),
            est: Estimator::new(windows.len()),
            now: Time(EPOCH),
            penalties: Vec::new(),
            sent: vec![Vec::new(); windows.len()],
            acked: vec![0; windows.len()],
        }
    }

    impl Net {
        /// The application writes `segs` full segments; `close` is the hint API's chunk end.
        fn write(&mut self, segs: u64, close: bool) -> &mut Self {
            self.meta.write(segs * MSS as u64, close);
            self
        }
        /// Steady one-way delays (ms) measured on every path: ΔOWD has no spread, δ = 0.
        fn owd(&mut self, owd_ms: &[u64]) -> &mut Self {
            for _ in 0..3 {
                for (p, &o) in owd_ms.iter().enumerate() {
                    self.est.on_owd_sample(p, self.now, 0, self.now.0 + o * MS);
                }
            }
            self
        }
        /// A delivery-rate measurement of `bps` on path `p`.
        fn bw(&mut self, p: usize, bps: f64) -> &mut Self {
            self.est.on_bandwidth_sample(p, bps, false);
            self
        }
        fn at_ms(&mut self, ms: u64) -> &mut Self {
            self.now = Time(EPOCH + ms * MS);
            self
        }
        /// One scheduling decision, carried out as the connection would.
        fn next(&mut self) -> Option<Assignment> {
            let a = {
                let mut ctx = SchedCtx::new(
                    self.now,
                    &self.subflows,
                    &mut self.meta,
                    &self.est,
                    &mut self.penalties,
                );
                self.sched.next(&mut ctx)
            }?;
            assert!(self.subflows[a.path as usize].has_cwnd_space(), "{a:?}");
            let rec = *self.meta.seg(a.seg).expect("in the buffer");
            self.meta.on_transmit(a.seg, a.path, self.now);
            let d = self.subflows[a.path as usize].send_new(self.now, a.seg, rec.dsn, rec.len);
            self.sent[a.path as usize].push((d.end(), a.seg));
            Some(a)
        }
        /// Decisions until the scheduler withholds: (path, segment) of each.
        fn drain(&mut self) -> Vec<(PathId, SegNo)> {
            std::iter::from_fn(|| self.next().map(|a| (a.path, a.seg))).collect()
        }
        /// Path `p`'s ACK for its first `n` transmissions not yet acknowledged.
        fn ack(&mut self, p: usize, n: usize) -> &mut Self {
            let upto = self.acked[p] + n;
            let ack = Ack {
                path: p as PathId,
                ack: self.sent[p][upto - 1].0,
                sack: [SackBlock::default(); 3],
                nsack: 0,
                data_ack: 0,
                rwnd: 1 << 30,
                ts_ecr: 0,
                ts_val: 0,
                owd_echo: None,
            };
            let mut received = Vec::new();
            let windows: Vec<(u64, Option<Duration>)> =
                self.subflows.iter().map(|s| (s.cwnd(), s.srtt())).collect();
            self.subflows[p].on_ack(self.now, &ack, CoupledView::of(&windows), &mut received);
            for r in received {
                self.meta.on_received(r.meta_seg);
            }
            self.acked[p] = upto;
            self
        }
        fn unsent(&self) -> u64 {
            self.meta.unsent_bytes()
        }
    }

    fn on(p: PathId, segs: impl IntoIterator<Item = SegNo>) -> Vec<(PathId, SegNo)> {
        segs.into_iter().map(|s| (p, s)).collect()
    }

    // ---- the two-way split (§4.1, §5) ----------------------------------------------------

    #[test]
    fn fresh_chunk_small_owd_subflow_takes_the_head() {
        let mut n = net("dems-b", &[2, 2]);
        n.owd(&[100, 20]).write(10, true);
        assert_eq!(n.drain(), [on(1, [0, 1]), on(0, [9, 8])].concat());
    }

    #[test]
    fn no_sample_yet_path_zero_takes_the_head() {
        let mut n = net("dems-f", &[2, 2]);
        n.write(10, true);
        assert_eq!(n.drain(), [on(0, [0, 1]), on(1, [9, 8])].concat());
    }

    #[test]
    fn open_chunk_appended_data_is_fetched_from_the_tail() {
        let mut n = net("dems-b", &[1, 4]);
        n.owd(&[10, 20]).write(6, false);
        assert_eq!(n.drain(), [on(0, [0]), on(1, [5, 4, 3, 2])].concat());
        n.write(3, false).ack(1, 2);
        // The tail subflow takes the new tail first (§5 tail fetch), then returns to the gap.
        assert_eq!(n.drain(), on(1, [8, 7, 6, 1]));
    }

    #[test]
    fn direction_is_kept_when_owd_roles_swap_mid_chunk() {
        let mut n = net("dems-b", &[1, 1]);
        n.owd(&[10, 20]).write(10, true);
        assert_eq!(n.drain(), [on(0, [0]), on(1, [9])].concat());
        n.owd(&[90, 20]).ack(0, 1).ack(1, 1);
        // Path 1 now has the smaller OWD (asked first) but keeps fetching from the tail.
        assert_eq!(n.drain(), [on(1, [8, 7]), on(0, [1, 2])].concat());
    }

    // ---- Eq. 9: the large-OWD subflow stops --------------------------------------------------

    #[test]
    fn large_subflow_sends_while_remaining_at_least_eq9_threshold() {
        // ΔOWD = 100 ms, BW_small = 1 MB/s: Eq. 9 holds the large subflow below 100 000 bytes.
        let mut n = net("dems-b", &[1, 1000]);
        n.owd(&[10, 110]).bw(0, 8e6).write(150, true);
        let sent = n.drain();
        assert_eq!(sent[0], (0, 0));
        assert_eq!(sent[1..], on(1, (100..150).rev())[..]);
        assert_eq!(n.unsent(), 99 * MSS as u64);
    }

    #[test]
    fn small_subflow_finishes_what_eq9_withheld() {
        let mut n = net("dems-b", &[1, 1000]);
        n.owd(&[10, 110]).bw(0, 8e6).write(150, true);
        n.drain();
        n.ack(0, 1);
        let sent = n.drain();
        assert!(
            !sent.is_empty() && sent.iter().all(|&(p, _)| p == 0),
            "{sent:?}"
        );
        assert_eq!(sent[0].1, 1);
    }

    #[test]
    fn without_delta_owd_the_large_subflow_is_never_withheld() {
        let mut n = net("dems-b", &[1, 1000]);
        n.bw(0, 8e6).write(20, true);
        assert_eq!(n.drain(), [on(0, [0]), on(1, (1..20).rev())].concat());
    }

    // ---- after the meeting point: DEMS-B and DEMS-S (§4.3) ---------------------------------

    /// Path 0 (OWD 10 ms) sent segments 0-1, path 1 (OWD 110 ms) 9-2: all sent, none acked.
    fn met(name: &str) -> Net {
        let mut n = net(name, &[2, 8]);
        n.owd(&[10, 110]).bw(0, 8e3).write(10, true);
        assert_eq!(n.drain(), [on(0, [0, 1]), on(1, (2..10).rev())].concat());
        assert_eq!(n.unsent(), 0);
        n
    }

    #[test]
    fn dems_b_met_sends_nothing_more() {
        let mut n = met("dems-b");
        n.ack(0, 2).ack(1, 3);
        assert_eq!(n.drain(), []);
    }

    #[test]
    fn dems_s_met_small_subflow_reinjects_forward_past_the_meeting_point() {
        let mut n = met("dems-s");
        n.ack(0, 2);
        assert_eq!(n.drain(), on(0, [2, 3, 4, 5]));
        assert_eq!(n.meta.reinjected_bytes(), 4 * MSS as u64);
    }

    #[test]
    fn dems_s_met_large_subflow_reinjects_backward_and_skips_acknowledged_bytes() {
        let mut n = met("dems-s");
        n.ack(1, 1);
        // Segment 9 was path 1's own; it walks down into path 0's region.
        assert_eq!(n.drain(), on(1, [1, 0]));
        n.ack(0, 2).ack(1, 8);
        assert_eq!(n.drain(), []);
    }

    // ---- DEMS-F: Algorithm 1 lines 10-18 (§4.4) ---------------------------------------------

    #[test]
    fn dems_f_met_small_subflow_reinjects_bytes_sent_at_most_delta_owd_plus_delta_ago() {
        // ΔOWD = 100 ms, δ = 20 ms: copies on the large subflow younger than 120 ms qualify.
        let mut n = met("dems-f:delta=20ms");
        n.at_ms(120).ack(0, 2);
        assert_eq!(n.next().map(|a| (a.path, a.seg)), Some((0, 2)));
        n.at_ms(121).ack(0, 1);
        assert_eq!(n.drain(), []);
    }

    #[test]
    fn dems_f_met_large_subflow_does_not_reinject_when_delta_owd_exceeds_delta() {
        let mut n = met("dems-f:delta=20ms");
        n.ack(1, 8);
        assert_eq!(n.drain(), []);
    }

    #[test]
    fn dems_f_met_large_subflow_reinjects_when_delta_covers_delta_owd() {
        // δ = 150 ms ≥ ΔOWD: line 17 holds with nothing untransmitted (Eq. 12).
        let mut n = met("dems-f:delta=150ms");
        n.ack(1, 1);
        assert_eq!(n.drain(), on(1, [1, 0]));
    }

    #[test]
    fn dems_f_met_large_subflow_reinjects_only_bytes_younger_than_delta_minus_delta_owd() {
        // Eq. 12: δ − ΔOWD = 150 − 100 = 50 ms. Path 0 sent segments 0 and 1 at 0 ms; 60 ms
        // later a copy on path 1 would arrive after them even if ΔOWD were δ smaller.
        let mut n = met("dems-f:delta=150ms");
        n.at_ms(60).ack(1, 1);
        assert_eq!(n.drain(), []);
        let mut n = met("dems-f:delta=150ms");
        n.at_ms(40).ack(1, 1);
        assert_eq!(n.drain(), on(1, [1, 0]));
    }

    #[test]
    fn dems_f_large_subflow_sends_past_eq9_until_delta_owd_minus_delta() {
        // Line 16: thres = (ΔOWD − δ) · BW = (100 − 20) ms · 1 MB/s = 80 000 bytes.
        let mut n = net("dems-f:delta=20ms", &[1, 1000]);
        n.owd(&[10, 110]).bw(0, 8e6).write(150, true);
        n.drain();
        assert_eq!(n.unsent(), 79 * MSS as u64);
    }

    #[test]
    fn dems_f_wider_delta_owd_spread_times_k_sends_the_large_subflow_further() {
        // The large subflow's OWD alternates 80/120 ms: ΔOWD has a spread, δ = k · StdDev.
        let stop = |name: &str| {
            let mut n = net(name, &[1, 1000]);
            n.bw(0, 8e6);
            for i in 0..32 {
                n.owd(if i % 2 == 0 { &[10, 90] } else { &[10, 130] });
            }
            n.write(150, true).drain();
            n.unsent()
        };
        let (eq9, k1, k4) = (stop("dems-b"), stop("dems-f"), stop("dems-f:k=4"));
        assert!(
            eq9 > k1 && k1 > k4,
            "untransmitted at the stop: {eq9}, {k1}, {k4}"
        );
    }

    // ---- chunks back to back -----------------------------------------------------------------

    #[test]
    fn dems_b_met_next_chunk_starts_two_way() {
        let mut n = met("dems-b");
        // Each ACK of two segments opens two more in slow start: 4 free on either subflow.
        n.write(10, true).ack(0, 2).ack(1, 2);
        assert_eq!(n.drain(), [on(0, 10..14), on(1, (16..20).rev())].concat());
    }

    #[test]
    fn dems_s_met_reinjection_goes_before_the_next_chunk() {
        let mut n = met("dems-s");
        n.write(4, true).ack(0, 1);
        assert_eq!(n.next().map(|a| (a.path, a.seg)), Some((0, 2)));
    }

    // ---- parameters ----------------------------------------------------------------------------

    #[test]
    fn params_parse_k_and_delta() {
        let p = Params::parse("dems-f", Some("k=2,delta=30ms")).unwrap();
        assert_eq!((p.k, p.fixed_delta_ns), (2.0, Some(30e6)));
        assert_eq!(
            Params::parse("dems-f", Some("delta=0.5s"))
                .unwrap()
                .fixed_delta_ns,
            Some(5e8)
        );
        assert_eq!(
            Params::parse("dems-s", None).unwrap().reinjection,
            Reinjection::Simple
        );
    }

    #[test]
    fn params_refuse_unknown_or_meaningless() {
        assert_eq!(Params::parse("dems-b", Some("k=2")), None);
        assert_eq!(Params::parse("dems-f", Some("k=-1")), None);
        assert_eq!(Params::parse("dems-f", Some("delta=30")), None);
        assert_eq!(Params::parse("dems-f", Some("x=1")), None);
        assert_eq!(Params::parse("dems-x", None), None);
    }

    // ---- more than two subflows (dems_n) -------------------------------------------------------

    #[test]
    fn three_subflows_fresh_chunk_third_splits_the_gap() {
        let mut n = net("dems-b", &[2, 2, 2]);
        n.owd(&[10, 20, 30]).write(30, true);
        let sent = n.drain();
        assert_eq!(sent[..4], [on(0, [0, 1]), on(1, [29, 28])].concat()[..]);
        // Equal shares before any bandwidth estimate: path 2 pairs with the head front, both
        // take [2, 19) (17 segments, 8.5 each), path 1 alone takes [19, 28) (9).
        assert_eq!(sent[4..], on(2, [18, 17])[..]);
    }

    #[test]
    fn three_subflows_met_dems_s_reinjects_the_latest_expected_copies_first() {
        // Path 0 (OWD 10 ms) takes the head, path 1 (30 ms) the tail, path 2 (60 ms) the
        // middle; everything sent at once, so a copy is expected at its path's OWD: path 2's
        // first, then path 1's, each from its lowest segment (ties).
        let mut n = net("dems-s", &[4, 4, 2]);
        n.owd(&[10, 30, 60]).write(10, true);
        let sent = n.drain();
        assert_eq!(n.unsent(), 0, "{sent:?}");
        let on2: Vec<SegNo> = sent.iter().filter(|s| s.0 == 2).map(|s| s.1).collect();
        let mut on1: Vec<SegNo> = sent.iter().filter(|s| s.0 == 1).map(|s| s.1).collect();
        on1.sort();
        n.at_ms(5).ack(0, 2);
        let again = n.drain();
        let want: Vec<(PathId, SegNo)> = on(0, on2.iter().chain(&on1).copied().take(again.len()));
        assert_eq!(again, want);
        assert!(again.len() >= 3, "{again:?}");
    }

    #[test]
    fn four_subflows_dems_s_group_search_answers_as_the_walk() {
        // dems-s's reinjection search in a closed chunk looks at one copy per (subflow, OWD
        // bin) and at the segments with several copies; every search is checked against the
        // walk over the chunk (cfg(test), in `DemsN::reinjection`). Rounds of partial ACKs
        // move copies between groups (several copies, received, resent); OWD samples at
        // growing bytes in flight make bins constant and leave copies above the highest
        // populated bin (the extrapolated OWD).
        let mut n = net("dems-s", &[6, 5, 4, 3]);
        n.owd(&[10, 25, 45, 80]).write(60, true);
        let mut copies = n.drain().len();
        for round in 1..=12u64 {
            n.at_ms(7 * round);
            for p in 0..4 {
                let bif = 10_000 * (round + p as u64) % 90_000;
                let owd = [10, 25, 45, 80][p] + round % 5;
                n.est.on_owd_sample(p, n.now, bif, n.now.0 + owd * MS);
                let outstanding = n.sent[p].len() - n.acked[p];
                if outstanding > 0 && !(round + p as u64).is_multiple_of(3) {
                    n.ack(p, outstanding.min(2));
                }
            }
            copies += n.drain().len();
        }
        assert!(copies > 60 + 20, "few reinjections to compare: {copies}");
    }

    #[test]
    fn three_subflows_met_dems_f_copies_only_while_eq11_holds() {
        // δ = 5 ms: path 0 may copy a byte of path q while now − t_q ≤ OWD_q − 10 ms + 5 ms,
        // i.e. path 2's bytes for 55 ms, path 1's for 25 ms. Every search of the closed
        // chunk's copy index is checked against the walk it replaces (cfg(test)).
        for (at, want) in [(20, 3), (40, 2), (70, 0)] {
            let mut n = net("dems-f:delta=5ms", &[4, 4, 2]);
            n.owd(&[10, 30, 60]).write(10, true).drain();
            n.at_ms(at).ack(0, 4);
            let again = n.drain();
            assert!(again.iter().all(|s| s.0 == 0), "{again:?}");
            assert_eq!(again.len().min(3), want, "at {at} ms: {again:?}");
        }
    }

    #[test]
    fn three_subflows_largest_owd_stops_first() {
        // thres_2 = Σ_k BW_k (OWD_2 − OWD_k) = 1 MB/s · 100 ms + 1 MB/s · 50 ms = 150 000 B;
        // thres_1 = 1 MB/s · 50 ms = 50 000 B.
        let mut n = net("dems-b", &[1, 60, 1000]);
        n.owd(&[10, 60, 110]).bw(0, 8e6).bw(1, 8e6).write(400, true);
        let sent = n.drain();
        assert_eq!(sent.iter().filter(|s| s.0 == 2).count(), 190);
        assert_eq!(n.unsent(), 149_000);
        // Path 1 goes on, a window per round trip, until its own threshold.
        for _ in 0..3 {
            let outstanding = n.sent[1].len() - n.acked[1];
            n.ack(1, outstanding);
            let sent = n.drain();
            assert!(sent.iter().all(|s| s.0 == 1), "{sent:?}");
        }
        assert_eq!(n.unsent(), 49_000);
    }
}
