//! DEMS for N ≥ 3 subflows: our design (Guo et al., MobiCom 2017, §8 leaves it to future work, sketching
//! "each subflow can transmit packets in an interleaved (but still decoupled) manner … a subflow
//! can decide to stop transmission if the remaining data in the meta buffer can be delivered
//! earlier by some other subflows with smaller OWD"). [`super::dems::build`] selects it for three
//! or more subflows; the variants, parameters and estimates are those of [`super::dems`].
//!
//! # Design
//!
//! **Decoupled regions (runs).** Each subflow sends one contiguous *run* of the chunk at a time,
//! forward or backward, so subflows never interleave inside a region (§4.1's decoupling). The
//! untransmitted bytes form *gaps*; a gap end is *fronted* when a subflow's run is about to take
//! it. A subflow without a run (chunk start, its run ran into bytes another subflow sent, or it
//! was withheld) starts one in the gap whose untransmitted bytes would take longest to drain at
//! the estimated bandwidth of its fronts (a gap without fronts first):
//! * a gap with no forward front: forward from its first byte (so the first subflow, the
//!   smallest-OWD one, takes the chunk head, as with two subflows);
//! * else a gap with no backward front: backward from its last byte (the second subflow takes
//!   the chunk tail: for two subflows this is exactly the two-way split of §4.1);
//! * else it splits the gap between the two fronts, pairing with the slower one in a two-way
//!   sub-gap, at the point where both new gaps drain at the same time by the bandwidth estimates
//!   (equal shares before any estimate). The other sub-gap has one front; its fixed end is taken
//!   by the next subflow looking for work. Runs end where they meet, so the regions stay
//!   decoupled while the split points follow the measured rates (work stealing).
//!
//! **Simultaneous completion (generalized Eq. 9).** A byte sent now on subflow j arrives at
//! now + OWD_j. The subflows with a smaller OWD deliver, before that instant, Σ_k BW_k ·
//! (OWD_j − OWD_k) bytes of what remains. So j sends new data only while
//!
//! > D ≥ thres_j = Σ_{k: OWD_k < OWD_j} BW_k · (ΔOWD_kj − δ_kj)⁺,
//!
//! D the chunk's untransmitted bytes, δ_kj = 0 for `dems-b`/`dems-s` and k · StdDev(ΔOWD_kj) for
//! `dems-f`. Thresholds grow with OWD, so subflows stop in decreasing OWD order — the largest
//! OWD first, the smallest last, as §8 anticipates — and each stops when the others can still
//! deliver the rest before its own next byte would arrive: all complete together at the
//! receiver. For two subflows thres is (ΔOWD − δ)⁺ · BW_small, which Algorithm 1 line 17
//! compares with D ≥ 0 exactly like (ΔOWD − δ) · BW_small: the same rule as Eq. 9 / line 16.
//! Withheld subflows drop their run, so faster subflows steal the bytes they left.
//!
//! **Reinjection.** Once the chunk has no untransmitted byte, a subflow j with window space may
//! send a copy of a byte that is neither acknowledged nor already sent by it. Which bytes
//! qualify is Algorithm 1's rule generalized:
//! * `dems-s`: every such byte (§4.3, until all are acknowledged or reinjected);
//! * `dems-f`: a byte whose fresh copy on j may still beat every copy already sent, by Eq. 11
//!   and 12 against each carrier q (now − t_q ≤ OWD_q − OWD_j + δ_jq, with the OWD of the bin q
//!   sent it in); if some faster subflow carries it, only while D = 0 ≥ thres_j as well (line
//!   16-17: all faster subflows are within δ of j). For two subflows these are lines 10-13 and
//!   15-18 with Eq. 12's per-byte bound.
//!
//! Among the qualifying bytes j takes the one whose earliest copy is expected last at the
//! receiver (its send time plus that copy's OWD): the laggard decides the chunk's completion.
//! Two subflows need no such choice, since the X of Fig. 7 orders the bytes by expected arrival
//! along the walk past the meeting point; with N subflows the regions interleave and a walk
//! would stop at the first old byte of a middle subflow, short of the slowest one's.
//!
//! **Cost (issue "Speed at scale").** The gaps come from the runs of unsent segments the send
//! buffer keeps ([`SendBuffer::unsent_runs`]), not from a scan of the chunk; dems-f's
//! reinjection candidates in a closed chunk come from an index of its copies ([`Copies`]),
//! updated from the buffer's journal of transmissions and receptions ([`TxEvent`]) and searched
//! by a bound on the expected arrival; dems-s's from groups of single copies by subflow and
//! OWD bin, where the latest send of a group is its latest arrival ([`laggards`]). All give
//! exactly what the scans gave; an open chunk (which may still grow) is still walked. Tests
//! check the indexes against the walk on every search.

use std::collections::{BTreeMap, BTreeSet};

mod laggards;
mod thresholds;
use laggards::Laggards;
use thresholds::Thresholds;

use crate::estimate::{Estimator, OwdAbove, OWD_BINS};
use crate::meta::send::{Chunk, SegNo, SegRecord, SendBuffer, TxEvent};
use crate::packet::{PathId, MAX_PATHS};
use crate::sched::dems::{chunk_at, NetView, Params, Reinjection, SendLog, ViewCache};
#[cfg(doc)]
use crate::sched::dems::{copy_owd, reinjection_pays_off};
use crate::sched::{Assignment, SchedCtx, Scheduler};
use crate::time::Time;

/// A subflow's position in the chunk: the next segment of its run and the direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    next: SegNo,
    forward: bool,
}

#[derive(Clone, Debug)]
struct Plan {
    chunk: u64,
    first: SegNo,
    /// The run each subflow is sending, if any.
    run: [Option<Run>; MAX_PATHS],
}

#[derive(Debug)]
pub struct DemsN {
    params: Params,
    plans: Vec<Plan>,
    log: SendLog,
    /// Taken out during a decision, which reads it while `self` changes.
    views: Option<Box<ViewCache>>,
    thresholds: Thresholds,
    memo: OwdMemo,
    /// The copies of closed, fully transmitted chunks, indexed for reinjection: dems-f's.
    copies: Vec<Copies>,
    /// The same for dems-s, grouped by subflow and OWD bin.
    laggards: Vec<Laggards>,
    /// The buffer keeps a journal of transmission-record changes for `copies` (while any).
    journal_on: bool,
    events: Vec<TxEvent>,
    /// Per path: the largest bytes in flight any of its copies was logged with (a bound).
    max_bif: [u64; MAX_PATHS],
    /// The oldest chunk when plans and indexes were last pruned.
    front: Option<u64>,
    /// Per path: ([`Estimator::owd_samples`] when computed, [`Estimator::owd_bins_max`]).
    bins_max: [(u64, Option<f64>); MAX_PATHS],
}

/// The estimator's OWD per (path, bin) within one decision, for the bins where it does not
/// depend on the exact bytes in flight ([`Estimator::owd_bin_if_constant`]): the reinjection
/// walk asks for the OWD of every copy in the chunk, and copies share a few dozen bins.
#[derive(Debug)]
struct OwdMemo {
    decision: u64,
    /// (decision it was filled in, value), by `path * OWD_BINS + bin`.
    slots: Vec<(u64, f64)>,
    /// Per path, (decision, [`Estimator::owd_above`]): copies above the highest populated bin
    /// (many, while a subflow's window grows past its samples) share its slope.
    above: [(u64, Option<OwdAbove>); MAX_PATHS],
}

impl OwdMemo {
    fn new() -> Self {
        OwdMemo {
            decision: 1,
            slots: vec![(0, 0.0); MAX_PATHS * OWD_BINS],
            above: [(0, None); MAX_PATHS],
        }
    }

    /// Forget every value: the estimator may have changed since the last decision.
    fn next_decision(&mut self) {
        self.decision += 1;
    }

    /// [`copy_owd`], with the estimator's answer kept per bin.
    #[inline(always)]
    fn copy_owd(
        &mut self,
        est: &Estimator,
        view: &NetView,
        log: &SendLog,
        q: PathId,
        seg: SegNo,
    ) -> Option<f64> {
        self.owd_at(est, view, q, log.bif(seg, q))
    }

    /// [`copy_owd`] of a copy on `q` logged with `bif` bytes in flight.
    #[inline(always)]
    fn owd_at(
        &mut self,
        est: &Estimator,
        view: &NetView,
        q: PathId,
        bif: Option<u64>,
    ) -> Option<f64> {
        let at_send = match (view.measured(), bif) {
            (true, Some(b)) => match est.owd_bin_if_constant(q as usize, b) {
                Some(bin) => {
                    let slot = &mut self.slots[q as usize * OWD_BINS + bin];
                    if slot.0 == self.decision {
                        Some(slot.1)
                    } else {
                        let v = est.owd(q as usize, b);
                        if let Some(v) = v {
                            *slot = (self.decision, v);
                        }
                        v
                    }
                }
                // Above the highest populated bin, or no sample yet (`None` then).
                None => {
                    let a = &mut self.above[q as usize];
                    if a.0 != self.decision {
                        *a = (self.decision, est.owd_above(q as usize));
                    }
                    a.1.map(|a| a.at(b))
                }
            },
            _ => None,
        };
        at_send.or(view.owd(q))
    }
}

/// A gap of untransmitted segments `[lo, hi)` and the subflows fronting its ends.
#[derive(Clone, Copy, Debug)]
struct Gap {
    lo: SegNo,
    hi: SegNo,
    fwd: Option<PathId>,
    bwd: Option<PathId>,
}

fn unsent(meta: &SendBuffer, n: SegNo) -> bool {
    meta.seg(n).is_some_and(|s| !s.sent())
}

impl DemsN {
    pub fn new(params: Params) -> Self {
        DemsN {
            params,
            plans: Vec::new(),
            log: SendLog::default(),
            views: Some(Box::default()),
            thresholds: Thresholds::default(),
            memo: OwdMemo::new(),
            copies: Vec::new(),
            laggards: Vec::new(),
            journal_on: false,
            events: Vec::new(),
            max_bif: [0; MAX_PATHS],
            front: None,
            bins_max: [(u64::MAX, None); MAX_PATHS],
        }
    }

    fn plan_index(&mut self, c: &Chunk) -> usize {
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
            run: [None; MAX_PATHS],
        });
        self.plans.len() - 1
    }

    /// Generalized Eq. 9: may subflow `j` send new data with `unsent` bytes untransmitted?
    fn may_send_new(&mut self, view: &NetView, j: PathId, unsent: u64) -> bool {
        let adaptive = self.params.reinjection == Reinjection::Adaptive;
        self.thresholds.may_send_new(view, adaptive, j, unsent)
    }

    /// Mean of the known bandwidth estimates (1 when none is known: equal shares).
    fn rate(view: &NetView, p: PathId) -> f64 {
        if let Some(b) = view.bw(p) {
            return b;
        }
        // The same sum over the same sequence as a collected vector's, without the allocation.
        let known = || view.order().iter().filter_map(|&q| view.bw(q));
        match known().count() {
            0 => 1.0,
            k => known().sum::<f64>() / k as f64,
        }
    }

    /// The untransmitted gap `lo..hi` of a chunk and its fronts: a subflow whose run takes its
    /// first segment next (forward) or its last (backward).
    fn gap(plan: &Plan, n: usize, lo: SegNo, hi: SegNo) -> Gap {
        let mut g = Gap {
            lo,
            hi,
            fwd: None,
            bwd: None,
        };
        for p in 0..n as PathId {
            match plan.run[p as usize] {
                Some(r) if r.forward && r.next == g.lo => g.fwd = Some(p),
                Some(r) if !r.forward && r.next + 1 == g.hi => g.bwd = Some(p),
                _ => {}
            }
        }
        g
    }

    /// The untransmitted gaps of chunk `c` and their fronts. The runs of unsent segments come
    /// from the buffer, which keeps them on every transition (a scan over the unsent segments
    /// here was most of an 8-path decision: issue "Speed at scale").
    #[cfg(debug_assertions)]
    fn gaps(meta: &mut SendBuffer, c: &Chunk, plan: &Plan, n: usize) -> Vec<Gap> {
        let (Some(lo), Some(hi)) = (meta.first_unsent(c.id), meta.last_unsent(c.id)) else {
            return Vec::new();
        };
        meta.unsent_runs(lo, hi + 1)
            .map(|(lo, hi)| Self::gap(plan, n, lo, hi))
            .collect()
    }

    /// A new run for subflow `j` (see the module doc): from the gap that drains last (ties to
    /// the lower position) among those that can give one.
    ///
    /// One pass for the largest drain time, not a stable sort of every gap followed by a walk
    /// to the first that gives a run (issue "Speed at scale": with a vector allocated and the
    /// drain times computed again at every comparison, that was about a tenth of an 8-path
    /// decision). The first gap of the sorted order that gives a run is the one with the
    /// largest drain time under `total_cmp` among those that do, the earliest of equals.
    fn start_run(
        meta: &mut SendBuffer,
        view: &NetView,
        c: &Chunk,
        plan: &Plan,
        j: PathId,
    ) -> Option<Run> {
        let n = view.order().len();
        let mut best: Option<(f64, Gap)> = None;
        if let (Some(lo), Some(hi)) = (meta.first_unsent(c.id), meta.last_unsent(c.id)) {
            for (lo, hi) in meta.unsent_runs(lo, hi + 1) {
                let g = Self::gap(plan, n, lo, hi);
                if !Self::gives_run(&g) {
                    continue;
                }
                let d = Self::drain(view, &g);
                if best.is_none_or(|(b, _)| d.total_cmp(&b).is_gt()) {
                    best = Some((d, g));
                }
            }
        }
        let run = best.map(|(_, g)| Self::run_in(view, &g, j));
        #[cfg(debug_assertions)]
        debug_assert_eq!(
            run,
            Self::start_run_sorted(meta, view, c, plan, j),
            "start_run without the sort"
        );
        run
    }

    /// Seconds the subflows fronting gap `g` need to send it (infinite when none sends).
    fn drain(view: &NetView, g: &Gap) -> f64 {
        let r: f64 = [g.fwd, g.bwd]
            .iter()
            .flatten()
            .map(|&p| Self::rate(view, p))
            .sum();
        if r > 0.0 {
            (g.hi - g.lo) as f64 / r
        } else {
            f64::INFINITY
        }
    }

    /// A gap fronted at both ends and too short to split gives no run.
    fn gives_run(g: &Gap) -> bool {
        !(g.fwd.is_some() && g.bwd.is_some() && g.hi - g.lo < 2)
    }

    /// The run subflow `j` starts in gap `g` (one that [`DemsN::gives_run`]): from its low end
    /// with no front there, from its high end with no back front, else from the point that
    /// splits the gap in proportion to the three subflows' rates, paired with the slower front.
    fn run_in(view: &NetView, g: &Gap, j: PathId) -> Run {
        match (g.fwd, g.bwd) {
            (None, _) => Run {
                next: g.lo,
                forward: true,
            },
            (Some(_), None) => Run {
                next: g.hi - 1,
                forward: false,
            },
            (Some(f), Some(b)) => {
                let (rf, rb, rj) = (
                    Self::rate(view, f),
                    Self::rate(view, b),
                    Self::rate(view, j),
                );
                let len = (g.hi - g.lo) as f64;
                let total = rf + rb + rj;
                let clamp = |x: f64| (x.round() as SegNo).clamp(g.lo + 1, g.hi - 1);
                if rf <= rb {
                    // Pair with the forward front: j backward from the split point.
                    let s = clamp(g.lo as f64 + len * (rf + rj) / total);
                    Run {
                        next: s - 1,
                        forward: false,
                    }
                } else {
                    // Pair with the backward front: j forward from the split point.
                    let s = clamp(g.lo as f64 + len * rf / total);
                    Run {
                        next: s,
                        forward: true,
                    }
                }
            }
        }
    }

    /// [`DemsN::start_run`] as a stable sort of all gaps by drain time: what the single pass
    /// must agree with (debug builds).
    #[cfg(debug_assertions)]
    fn start_run_sorted(
        meta: &mut SendBuffer,
        view: &NetView,
        c: &Chunk,
        plan: &Plan,
        j: PathId,
    ) -> Option<Run> {
        let n = view.order().len();
        let mut gaps = Self::gaps(meta, c, plan, n);
        // Longest drain first; ties to the lower position (stable sort).
        gaps.sort_by(|a, b| Self::drain(view, b).total_cmp(&Self::drain(view, a)));
        gaps.into_iter()
            .find(Self::gives_run)
            .map(|g| Self::run_in(view, &g, j))
    }

    /// New data for subflow `j` from chunk `c` (which has untransmitted bytes).
    fn new_data(
        &mut self,
        ctx: &mut SchedCtx<'_>,
        view: &NetView,
        c: &Chunk,
        pi: usize,
        j: PathId,
    ) -> Option<SegNo> {
        if !self.may_send_new(view, j, c.unsent_bytes) {
            self.plans[pi].run[j as usize] = None;
            return None;
        }
        let current = self.plans[pi].run[j as usize].filter(|r| unsent(ctx.meta(), r.next));
        let run = match current {
            Some(r) => r,
            None => {
                let r = Self::start_run(ctx.meta_mut(), view, c, &self.plans[pi], j);
                self.plans[pi].run[j as usize] = r;
                r?
            }
        };
        let mut run = run;
        if !ctx.may_send(run.next) {
            // The run lies past the peer's receive window: take the chunk's lowest unsent
            // segment instead, so the hole at the window's left edge is never left to subflows
            // that Eq. 9 withholds (otherwise nothing is in flight and the transfer stalls).
            let first = ctx.meta_mut().first_unsent(c.id)?;
            if !ctx.may_send(first) {
                return None;
            }
            run = Run {
                next: first,
                forward: true,
            };
        }
        let seg = run.next;
        let lo = c.first.max(ctx.meta().base_seg());
        let after = if run.forward {
            Some(seg + 1)
        } else {
            seg.checked_sub(1).filter(|&s| s >= lo)
        };
        let plan = &mut self.plans[pi];
        plan.run[j as usize] = after.map(|next| Run {
            next,
            forward: run.forward,
        });
        Some(seg)
    }

    /// The chunk is fully transmitted: subflow `j`'s reinjection, if its policy wants one.
    ///
    /// Among the qualifying copies, the one whose earliest copy is expected last (ties to the
    /// lowest segment). For dems-f a closed chunk is searched through its [`Copies`] index; an
    /// open one (it may still grow), and every chunk of dems-s, by a walk over its segments;
    /// both evaluate a segment exactly as [`reinjection_pays_off`] and [`copy_owd`] say.
    fn reinjection(
        &mut self,
        ctx: &SchedCtx<'_>,
        view: &NetView,
        c: &Chunk,
        j: PathId,
    ) -> Option<SegNo> {
        if self.params.reinjection == Reinjection::None {
            return None;
        }
        let adaptive = self.params.reinjection == Reinjection::Adaptive;
        // The subflows in the view, those j is faster than (after j in `NetView::order`),
        // and line 16-17's D = 0 ≥ thres_j.
        let in_view: u32 = view.order().iter().fold(0, |m, &q| m | 1 << q);
        let slower_than_j: u32 = view
            .order()
            .iter()
            .skip_while(|&&q| q != j)
            .skip(1)
            .fold(0, |m, &q| m | 1 << q);
        let j_may_send_new = adaptive && self.may_send_new(view, j, 0);
        // Line 16-17 for dems-f: with D = 0 < thres_j, j may only copy bytes that no faster
        // subflow carries; when no subflow is slower than j, no byte qualifies.
        let allowed: u32 = if adaptive && !j_may_send_new {
            slower_than_j
        } else {
            u32::MAX
        };
        if allowed == 0 {
            return None;
        }
        let mut slack = [0.0; MAX_PATHS];
        if adaptive {
            for &q in view.order() {
                slack[q as usize] = view.delta(j, q);
            }
        }
        let mut judge = Judge {
            now: ctx.now,
            est: ctx.estimator(),
            view,
            log: &self.log,
            memo: &mut self.memo,
            j,
            adaptive,
            in_view,
            allowed,
            oj: view.owd(j),
            slack,
        };
        judge.memo.next_decision();
        let meta = ctx.meta();
        // Closed chunks are indexed (an open one may still grow): dems-f's copies by carrier
        // and send time, searched under a bound on the expected arrival; dems-s's, which
        // copies nearly every byte and has no Eq. 11/12 gate, by subflow and OWD bin, where one
        // entry per group decides (under dems-f's bound, loose by the spread of the bins, the
        // walk was faster for dems-s: BENCHMARKS.md, "DEMS decisions at 8 paths").
        let best = if !c.closed {
            walk(meta, c, &mut judge)
        } else if adaptive {
            let k = match self.copies.iter().position(|k| k.chunk == c.id) {
                Some(k) => k,
                None => {
                    self.copies.push(Copies::build(meta, c, judge.est));
                    self.copies.len() - 1
                }
            };
            let bound = |q: PathId| {
                copy_owd_bound(
                    judge.est,
                    view,
                    &mut self.bins_max,
                    self.max_bif[q as usize],
                    q,
                )
            };
            self.copies[k].best(meta, &mut judge, bound)
        } else {
            let k = match self.laggards.iter().position(|k| k.chunk == c.id) {
                Some(k) => k,
                None => {
                    self.laggards.push(Laggards::build(meta, c, judge.log));
                    self.laggards.len() - 1
                }
            };
            self.laggards[k]
                .best(&mut judge)
                .unwrap_or_else(|| walk(meta, c, &mut judge))
        };
        // Tests compare every indexed search with the walk it replaces.
        #[cfg(test)]
        {
            let bits = |b: Option<(f64, SegNo)>| b.map(|(a, s)| (a.to_bits(), s));
            let walked = walk(meta, c, &mut judge);
            assert_eq!(bits(walked), bits(best), "chunk {} subflow {j}", c.id);
        }
        let seg = best?.1;
        ctx.may_send(seg).then_some(seg)
    }

    /// Bring the [`Copies`] indexes up to date with what the buffer changed since the last
    /// decision.
    fn apply_tx_events(&mut self, meta: &mut SendBuffer, est: &Estimator) {
        meta.take_tx_events(&mut self.events);
        if !self.copies.is_empty() || !self.laggards.is_empty() {
            for e in &self.events {
                let (seg, chunk, gone) = match *e {
                    TxEvent::Renumbered => {
                        self.copies.clear();
                        self.laggards.clear();
                        break;
                    }
                    TxEvent::Sent { seg, chunk, .. } | TxEvent::Returned { seg, chunk, .. } => {
                        (seg, chunk, false)
                    }
                    TxEvent::Done { seg, chunk } => (seg, chunk, true),
                };
                let rec = if gone { None } else { meta.seg(seg) };
                if let Some(k) = self.copies.iter_mut().find(|k| k.chunk == chunk) {
                    k.relist(seg, rec, est);
                }
                if let Some(k) = self.laggards.iter_mut().find(|k| k.chunk == chunk) {
                    k.relist(seg, rec, &self.log);
                }
            }
        }
        self.events.clear();
    }

    fn pick(&mut self, ctx: &mut SchedCtx<'_>, view: &NetView, j: PathId) -> Option<SegNo> {
        let mut k = 0;
        while let Some(c) = chunk_at(ctx.meta(), k) {
            k += 1;
            let pi = self.plan_index(&c);
            if c.unsent_bytes > 0 {
                return self.new_data(ctx, view, &c, pi, j);
            }
            if let Some(seg) = self.reinjection(ctx, view, &c, j) {
                return Some(seg);
            }
        }
        None
    }
}

/// What a reinjection decision for subflow `j` holds constant over the candidates, and the
/// per-segment verdict.
/// Segment `seg`'s entry in a per-chunk table whose first entry is segment `first`, the table
/// grown with `fill` to reach it (`None` below `first`).
fn slot_of<T: Clone>(table: &mut Vec<T>, first: SegNo, seg: SegNo, fill: T) -> Option<&mut T> {
    let i = seg.checked_sub(first)? as usize;
    if i >= table.len() {
        table.resize(i + 1, fill);
    }
    table.get_mut(i)
}

/// The copy whose earliest arrival is latest, by a walk over every segment of chunk `c`.
fn walk(meta: &SendBuffer, c: &Chunk, judge: &mut Judge<'_, '_>) -> Option<(f64, SegNo)> {
    let mut best: Option<(f64, SegNo)> = None;
    for seg in c.first.max(meta.base_seg())..c.end {
        let Some(rec) = meta.seg(seg) else { break };
        if let Some(arrival) = judge.arrival(rec, seg) {
            if best.is_none_or(|(a, _)| arrival > a) {
                best = Some((arrival, seg));
            }
        }
    }
    best
}

struct Judge<'a, 'e> {
    now: Time,
    est: &'e Estimator,
    view: &'a NetView<'e>,
    log: &'a SendLog,
    memo: &'a mut OwdMemo,
    j: PathId,
    adaptive: bool,
    in_view: u32,
    /// Carriers a candidate may have (line 16-17's gate for dems-f).
    allowed: u32,
    oj: Option<f64>,
    /// δ between j and each subflow (dems-f).
    slack: [f64; MAX_PATHS],
}

impl Judge<'_, '_> {
    /// The expected arrival of segment `seg`'s earliest copy if `j` may copy it (Eq. 11/12
    /// against every carrier for dems-f), else `None`.
    #[inline(always)]
    fn arrival(&mut self, rec: &SegRecord, seg: SegNo) -> Option<f64> {
        if rec.received || rec.sent_on(self.j) || !rec.sent() {
            return None;
        }
        let carriers = u32::from(rec.tx_mask) & self.in_view & !(1u32 << self.j);
        if carriers & !self.allowed != 0 {
            return None;
        }
        // Send time + that copy's OWD; the send time alone without estimates.
        let mut arrival = f64::INFINITY;
        let mut m = carriers;
        while m != 0 {
            let q = m.trailing_zeros() as PathId;
            m &= m - 1;
            let Some(t) = rec.tx_time(q as usize) else {
                if self.adaptive {
                    return None;
                }
                continue;
            };
            let co = self.memo.copy_owd(self.est, self.view, self.log, q, seg);
            if self.adaptive {
                let pays = match (co, self.oj) {
                    (Some(oq), Some(oi)) => {
                        self.now.saturating_since(t).as_nanos() as f64
                            <= (oq - oi) + self.slack[q as usize]
                    }
                    _ => true,
                };
                if !pays {
                    return None;
                }
            }
            arrival = arrival.min(t.0 as f64 + co.unwrap_or(0.0));
        }
        Some(arrival)
    }
}

/// A bound on the OWD [`copy_owd`] gives any copy on subflow `q` (what a copy adds to its send
/// time in the expected arrival), from the largest populated bin, the estimate at the largest
/// logged bytes in flight, and the current estimate; with a margin for rounding.
fn copy_owd_bound(
    est: &Estimator,
    view: &NetView,
    cache: &mut [(u64, Option<f64>); MAX_PATHS],
    max_bif: u64,
    q: PathId,
) -> f64 {
    let qi = q as usize;
    // Without an estimate `copy_owd` is `None` and the arrival is the send time.
    let mut c = view.owd(q).unwrap_or(0.0);
    if view.measured() {
        let samples = est.owd_samples(qi);
        if cache[qi].0 != samples {
            cache[qi] = (samples, est.owd_bins_max(qi));
        }
        for v in [cache[qi].1, est.owd(qi, max_bif)].into_iter().flatten() {
            c = c.max(v);
        }
    }
    c + c.abs() * 1e-9 + 1.0
}

/// The segments of a closed chunk whose bytes are all transmitted that the receiver has not
/// reported, each listed under one of its copies: by (that copy's subflow, the set of subflows
/// carrying the segment), ordered by the copy's send time. Kept up to date from the buffer's
/// [`TxEvent`]s.
///
/// A reinjection for subflow `j` wants the candidate whose earliest copy is expected last. A
/// segment listed under a copy that left subflow `q` at `t` is expected no later than that
/// copy, `t` + its OWD ≤ `t` + B_q ([`copy_owd_bound`]), so the search visits the lists whose
/// carriers `j` may add to (not `j` itself; for dems-f only carriers line 16-17 allows) by
/// decreasing `t` + B_q, merged, and stops once that bound falls below the best arrival found:
/// every segment not visited is expected earlier. For dems-f a list also ends where Eq. 11/12
/// can no longer hold for its copy (copies only get older). Exact: each visited segment is
/// judged as the walk judges it, ties to the lowest segment.
#[derive(Debug)]
struct Copies {
    chunk: u64,
    lists: BTreeMap<(PathId, u8), BTreeSet<(Time, SegNo)>>,
    /// Where each segment is listed (send time, subflow, carriers), by `seg - first`.
    first: SegNo,
    at: Vec<Option<(Time, PathId, u8)>>,
}

/// A list's next segment in a search: its bound first (a max-heap on `t` + B_q).
struct Head {
    bound: f64,
    seg: SegNo,
    list: usize,
}

impl PartialEq for Head {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Head {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.bound
            .total_cmp(&o.bound)
            .then(self.list.cmp(&o.list).reverse())
    }
}

impl Copies {
    fn build(meta: &SendBuffer, c: &Chunk, est: &Estimator) -> Self {
        let mut k = Copies {
            chunk: c.id,
            lists: BTreeMap::new(),
            first: c.first,
            at: Vec::new(),
        };
        for seg in c.first.max(meta.base_seg())..c.end {
            let Some(rec) = meta.seg(seg) else { break };
            k.relist(seg, Some(rec), est);
        }
        k
    }

    fn slot(&mut self, seg: SegNo) -> Option<&mut Option<(Time, PathId, u8)>> {
        slot_of(&mut self.at, self.first, seg, None)
    }

    /// List segment `seg` under the copy in `rec` expected first by the estimator's overall
    /// OWDs now (any copy bounds the arrival; the earliest bounds it best), not at all when the
    /// receiver has it, it is unsent or gone.
    fn relist(&mut self, seg: SegNo, rec: Option<&SegRecord>, est: &Estimator) {
        let listing = rec.filter(|r| !r.received).and_then(|r| {
            let mut first: Option<(f64, Time, PathId)> = None;
            for q in 0..MAX_PATHS {
                if let (true, Some(t)) = (r.sent_on(q as PathId), r.tx_time(q)) {
                    let o = if q < est.npaths() {
                        est.owd_overall(q).unwrap_or(0.0)
                    } else {
                        0.0
                    };
                    let e = t.0 as f64 + o;
                    if first.is_none_or(|(f, _, _)| e < f) {
                        first = Some((e, t, q as PathId));
                    }
                }
            }
            first.map(|(_, t, q)| (t, q, r.tx_mask))
        });
        let Some(slot) = self.slot(seg) else { return };
        let old = std::mem::replace(slot, listing);
        if old == listing {
            return;
        }
        if let Some((t, q, mask)) = old {
            if let Some(list) = self.lists.get_mut(&(q, mask)) {
                list.remove(&(t, seg));
                if list.is_empty() {
                    self.lists.remove(&(q, mask));
                }
            }
        }
        if let Some((t, q, mask)) = listing {
            self.lists.entry((q, mask)).or_default().insert((t, seg));
        }
    }

    fn best(
        &self,
        meta: &SendBuffer,
        judge: &mut Judge<'_, '_>,
        mut bound: impl FnMut(PathId) -> f64,
    ) -> Option<(f64, SegNo)> {
        let n = judge.view.order().len();
        let now = judge.now;
        let j = judge.j;
        let mut owd_bound: [Option<f64>; MAX_PATHS] = [None; MAX_PATHS];
        // For dems-f: copies on q older than this fail Eq. 11/12 whatever their bin.
        let mut max_age = [f64::INFINITY; MAX_PATHS];
        let mut iters = Vec::new();
        let mut heap = std::collections::BinaryHeap::new();
        for (&(q, mask), list) in &self.lists {
            let carriers = u32::from(mask) & !(1u32 << j);
            if mask & (1 << j) != 0 || carriers & !judge.allowed != 0 || q as usize >= n {
                continue; // no candidate for j: it carries them, or line 16-17 forbids
            }
            let qi = q as usize;
            let b = *owd_bound[qi].get_or_insert_with(|| {
                if judge.adaptive && judge.view.owd(q).is_some() {
                    if let Some(oi) = judge.oj {
                        // `bound` ≥ the copy's OWD, so past this age (c − oi) + δ fails too.
                        let c = bound(q);
                        max_age[qi] = (c - oi) + judge.slack[qi];
                        return c;
                    }
                }
                bound(q)
            });
            let mut it = list.iter().rev();
            if let Some(&(t, seg)) = it.next() {
                if now.saturating_since(t).as_nanos() as f64 <= max_age[qi] {
                    heap.push(Head {
                        bound: t.0 as f64 + b,
                        seg,
                        list: iters.len(),
                    });
                }
            }
            iters.push((it, qi, b));
        }
        let mut best: Option<(f64, SegNo)> = None;
        while let Some(h) = heap.pop() {
            if best.is_some_and(|(a, _)| h.bound < a) {
                break;
            }
            let (it, qi, b) = &mut iters[h.list];
            let qi = *qi;
            if let Some(&(t, seg)) = it.next() {
                if now.saturating_since(t).as_nanos() as f64 <= max_age[qi] {
                    heap.push(Head {
                        bound: t.0 as f64 + *b,
                        seg,
                        list: h.list,
                    });
                }
            }
            let seg = h.seg;
            let Some(rec) = meta.seg(seg) else { continue };
            if let Some(arrival) = judge.arrival(rec, seg) {
                if best.is_none_or(|(a, s)| arrival > a || (arrival == a && seg < s)) {
                    best = Some((arrival, seg));
                }
            }
        }
        best
    }
}

impl Scheduler for DemsN {
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
        let a = self.decide(ctx);
        // The buffer journals transmissions only while a chunk is indexed (the index was
        // built from the records as they are now, nothing before matters).
        let want = !self.copies.is_empty() || !self.laggards.is_empty();
        if want != self.journal_on {
            ctx.meta_mut().record_tx_events(want);
            self.journal_on = want;
        }
        a
    }
}

impl DemsN {
    fn decide(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        let est = ctx.estimator();
        self.apply_tx_events(ctx.meta_mut(), est);
        // Forget chunks the data-ACK freed (only when the oldest chunk changed: whatever
        // was added since belongs to chunks in the buffer).
        let front = ctx.meta().current_chunk().map(|c| c.id);
        if let Some(front) = front.filter(|&f| Some(f) != self.front) {
            self.plans.retain(|p| p.chunk >= front);
            self.copies.retain(|k| k.chunk >= front);
            self.laggards.retain(|k| k.chunk >= front);
            self.front = Some(front);
        }
        debug_assert!(front.is_none_or(|f| self.plans.iter().all(|p| p.chunk >= f)));
        self.log.prune(ctx.meta().base_seg());
        let mut views = self.views.take().expect("put back after every decision");
        let a = self.decide_with(ctx, views.view(ctx, &self.params));
        self.views = Some(views);
        a
    }

    fn decide_with(&mut self, ctx: &mut SchedCtx<'_>, view: NetView<'_>) -> Option<Assignment> {
        for &p in view.order() {
            if !ctx.has_space(p) {
                continue;
            }
            if let Some(seg) = self.pick(ctx, &view, p) {
                let b = self.log.record(seg, p, ctx.subflow(p).in_flight());
                self.max_bif[p as usize] = self.max_bif[p as usize].max(b);
                return Some(Assignment { path: p, seg });
            }
        }
        None
    }
}
