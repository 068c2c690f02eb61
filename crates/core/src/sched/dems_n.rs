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

use crate::meta::send::{Chunk, SegNo, SendBuffer};
use crate::packet::{PathId, MAX_PATHS};
use crate::sched::dems::{
    chunk_at, copy_owd, reinjection_pays_off, NetView, Params, Reinjection, SendLog,
};
use crate::sched::{Assignment, SchedCtx, Scheduler};

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

    /// thres_j of the generalized Eq. 9, bytes (0 for the smallest OWD).
    fn threshold(&self, view: &NetView, j: PathId) -> f64 {
        let mut thres = 0.0;
        for &k in view.order() {
            if k == j {
                break;
            }
            let (Some(d), Some(bw)) = (view.delta_owd(k, j), view.bw(k)) else {
                continue; // no estimate: k cannot be counted on to take bytes from j
            };
            let slack = match self.params.reinjection {
                Reinjection::Adaptive => view.delta(k, j),
                Reinjection::None | Reinjection::Simple => 0.0,
            };
            thres += bw * (d - slack).max(0.0);
        }
        thres
    }

    fn may_send_new(&self, view: &NetView, j: PathId, unsent: u64) -> bool {
        unsent as f64 >= self.threshold(view, j)
    }

    /// Mean of the known bandwidth estimates (1 when none is known: equal shares).
    fn rate(view: &NetView, p: PathId) -> f64 {
        if let Some(b) = view.bw(p) {
            return b;
        }
        let known: Vec<f64> = view.order().iter().filter_map(|&q| view.bw(q)).collect();
        if known.is_empty() {
            1.0
        } else {
            known.iter().sum::<f64>() / known.len() as f64
        }
    }

    /// The untransmitted gaps of chunk `c` and their fronts. The runs of unsent segments come
    /// from the buffer, which keeps them on every transition (a scan over the unsent segments
    /// here was most of an 8-path decision: issue "Speed at scale").
    fn gaps(meta: &mut SendBuffer, c: &Chunk, plan: &Plan, n: usize) -> Vec<Gap> {
        let (Some(lo), Some(hi)) = (meta.first_unsent(c.id), meta.last_unsent(c.id)) else {
            return Vec::new();
        };
        meta.unsent_runs(lo, hi + 1)
            .map(|(lo, hi)| {
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
            })
            .collect()
    }

    /// A new run for subflow `j` (see the module doc).
    fn start_run(
        &self,
        meta: &mut SendBuffer,
        view: &NetView,
        c: &Chunk,
        plan: &Plan,
        j: PathId,
    ) -> Option<Run> {
        let n = view.order().len();
        let mut gaps = Self::gaps(meta, c, plan, n);
        let drain = |g: &Gap| {
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
        };
        // Longest drain first; ties to the lower position (stable sort).
        gaps.sort_by(|a, b| drain(b).total_cmp(&drain(a)));
        for g in gaps {
            match (g.fwd, g.bwd) {
                (None, _) => {
                    return Some(Run {
                        next: g.lo,
                        forward: true,
                    })
                }
                (Some(_), None) => {
                    return Some(Run {
                        next: g.hi - 1,
                        forward: false,
                    })
                }
                (Some(f), Some(b)) if g.hi - g.lo >= 2 => {
                    let (rf, rb, rj) = (
                        Self::rate(view, f),
                        Self::rate(view, b),
                        Self::rate(view, j),
                    );
                    let len = (g.hi - g.lo) as f64;
                    let total = rf + rb + rj;
                    let clamp = |x: f64| (x.round() as SegNo).clamp(g.lo + 1, g.hi - 1);
                    return Some(if rf <= rb {
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
                    });
                }
                _ => {}
            }
        }
        None
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
                let r = self.start_run(ctx.meta_mut(), view, c, &self.plans[pi], j);
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
    fn reinjection(
        &self,
        ctx: &SchedCtx<'_>,
        view: &NetView,
        c: &Chunk,
        j: PathId,
    ) -> Option<SegNo> {
        if self.params.reinjection == Reinjection::None {
            return None;
        }
        let meta = ctx.meta();
        let mut best: Option<(f64, SegNo)> = None;
        // Per-decision constants, hoisted out of the walk over the chunk (issue "Speed at
        // scale": the walk is O(segments), each step was O(N) more): the subflows in the view,
        // those j is faster than (after j in `NetView::order`), and line 16-17's D = 0 ≥ thres_j.
        let in_view: u32 = view.order().iter().fold(0, |m, &q| m | 1 << q);
        let slower_than_j: u32 = view
            .order()
            .iter()
            .skip_while(|&&q| q != j)
            .skip(1)
            .fold(0, |m, &q| m | 1 << q);
        let j_may_send_new =
            self.params.reinjection == Reinjection::Adaptive && self.may_send_new(view, j, 0);
        for seg in c.first.max(meta.base_seg())..c.end {
            let Some(rec) = meta.seg(seg) else { break };
            if rec.received || rec.sent_on(j) || !rec.sent() {
                continue;
            }
            let carriers = || {
                view.order()
                    .iter()
                    .copied()
                    .filter(|&q| q != j && rec.sent_on(q))
            };
            let carrier_mask = u32::from(rec.tx_mask) & in_view & !(1u32 << j);
            let ok = match self.params.reinjection {
                Reinjection::None => false,
                Reinjection::Simple => true,
                Reinjection::Adaptive => {
                    (carrier_mask & !slower_than_j == 0 || j_may_send_new)
                        && carriers().all(|q| {
                            rec.tx_time[q as usize].is_some_and(|t| {
                                reinjection_pays_off(ctx, view, &self.log, j, q, seg, t)
                            })
                        })
                }
            };
            if !ok {
                continue;
            }
            // When its earliest copy is expected at the receiver (send time + that copy's
            // OWD; the send time alone without estimates): the latest one is the laggard.
            let arrival = carriers()
                .filter_map(|q| {
                    let t = rec.tx_time[q as usize]?.0 as f64;
                    Some(t + copy_owd(ctx, view, &self.log, q, seg).unwrap_or(0.0))
                })
                .fold(f64::INFINITY, f64::min);
            if best.is_none_or(|(a, _)| arrival > a) {
                best = Some((arrival, seg));
            }
        }
        let seg = best?.1;
        ctx.may_send(seg).then_some(seg)
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

impl Scheduler for DemsN {
    fn name(&self) -> &'static str {
        self.params.name()
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        if let Some(front) = ctx.meta().current_chunk().map(|c| c.id) {
            self.plans.retain(|p| p.chunk >= front);
        }
        self.log.prune(ctx.meta().base_seg());
        let view = NetView::new(ctx, &self.params);
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
