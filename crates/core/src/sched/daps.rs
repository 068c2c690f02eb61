//! `daps`: Delay-Aware Packet Scheduling (Kuhn et al., IEEE ICC 2014; Cech, TUM 2020, Table 1).
//!
//! DAPS plans a sending schedule over a cycle so that segments arrive in order although the
//! paths' RTTs differ. Over a cycle as long as the largest RTT, subflow `i` sends
//! `⌊RTT_max / RTT_i⌋` rounds (at least one) of `CWND_i` segments; round `k` of subflow `i`
//! arrives at about `k·RTT_i + RTT_i/2`. All these slots, sorted by arrival time (ties to the
//! lower path number), take consecutive DSNs; each subflow then sends its planned segments in
//! order as its window allows. When a subflow with window space has nothing planned, the next
//! cycle is planned behind the current one.
//!
//! The paper defines the cycle as the least common multiple of the RTTs (with their ratio
//! rounded to integers) and studies two paths; the largest RTT is the same cycle whenever the
//! RTTs are integer multiples of each other, and generalizes to N paths — ours. Subflows without
//! an RTT sample yet are planned with RFC 6298's initial 1 s. A subflow holds at most four
//! cycles' worth of planned segments (ours: a bound so that stale plans do not pile up on a
//! stalled subflow; one bound on the whole plan left every subflow idle behind one that had
//! timed out).

use crate::packet::{PathId, MAX_PATHS};
use crate::sched::common::PlanQueues;
use crate::sched::{Assignment, SchedCtx, Scheduler};
use crate::time::Duration;

/// RFC 6298 §2.1 initial RTO, the RTT assumed before a sample.
const UNSAMPLED_RTT: Duration = Duration::from_secs(1);
/// Cycles planned ahead at most.
const MAX_CYCLES_AHEAD: u64 = 4;

#[derive(Debug)]
pub struct Daps {
    plan: PlanQueues,
    /// The last cycle planned, restarted for the next one.
    cycle: Cycle,
}

/// A run's arrival time as an integer: arrival times are never negative, so their bits order
/// them as `f64::total_cmp` does. (`u64::MAX`, a NaN's bits, stands for no run.)
fn arrival_key(arrival: f64) -> u64 {
    debug_assert!(arrival.is_sign_positive());
    arrival.to_bits()
}

/// A run's sort key: its arrival time, then its path (ties to the lower path number), for the
/// debug builds' check of the merge against a sort.
#[cfg(debug_assertions)]
fn run_key(arrival: f64, p: PathId) -> u128 {
    u128::from(arrival_key(arrival)) << 8 | u128::from(p)
}

/// The runs of slots of one cycle, handed out in order of arrival time, ties to the lower path
/// number. Round `k` of subflow `i` is one run of `CWND_i` equal slots, so taking the runs in
/// that order and expanding them gives the order of sorting every slot (slots of one run are
/// interchangeable), at the cost of the rounds, not of the segments.
///
/// Each subflow's rounds arrive in order, so the next run is the earliest of the subflows'
/// next rounds: a merge, taken only as far as the planning goes (issue "Speed at scale":
/// planning usually stops after a run or two, when no more data is written, and sorting all
/// of a cycle's runs was a tenth of an 8-path run).
///
/// One cycle is kept and restarted for the next: between two plannings an ACK or two changes
/// one or two subflows' sRTT, and only those subflows' RTT and first run are worked out again,
/// their rounds too unless the largest RTT moved (issue "Speed at scale": a new cycle about
/// every other packet, each working out every subflow's rounds and first run, was the largest
/// part of a decision at 8 paths).
#[derive(Debug)]
struct Cycle {
    /// Subflows; 0 before the first planning.
    n: usize,
    /// Each subflow's sRTT as last read, ns (`u64::MAX`: no sample), and what was worked out
    /// from it: the RTT planned with, the arrival key of its first run (round 0).
    srtt: [u64; MAX_PATHS],
    rtt: [f64; MAX_PATHS],
    first: [u64; MAX_PATHS],
    longest: f64,
    rounds: [u64; MAX_PATHS],
    /// Each subflow's next round, and its arrival key (`u64::MAX` when it has none left):
    /// 64-bit keys, ties broken by the path order of the scan (issue "Speed at scale": the
    /// 128-bit minimum over the heads was a tenth of a planning at 8 paths).
    round: [u64; MAX_PATHS],
    head: [u64; MAX_PATHS],
    /// Every run, sorted: what the merge must hand out.
    #[cfg(debug_assertions)]
    sorted: std::collections::VecDeque<u128>,
}

impl Cycle {
    fn new() -> Cycle {
        Cycle {
            n: 0,
            srtt: [0; MAX_PATHS],
            rtt: [0.0; MAX_PATHS],
            first: [u64::MAX; MAX_PATHS],
            longest: 0.0,
            rounds: [0; MAX_PATHS],
            round: [0; MAX_PATHS],
            head: [u64::MAX; MAX_PATHS],
            #[cfg(debug_assertions)]
            sorted: Default::default(),
        }
    }

    /// A new cycle planned from the subflows now, with what the last one worked out reused
    /// where its subflow's sRTT did not change.
    fn restart(&mut self, ctx: &SchedCtx<'_>) {
        let n = ctx.npaths();
        let fresh = self.n != n;
        let mut moved = 0u32;
        for p in 0..n {
            let srtt = ctx.srtt_of(p as PathId).map_or(u64::MAX, |d| d.0);
            if fresh || srtt != self.srtt[p] {
                let d = if srtt == u64::MAX {
                    UNSAMPLED_RTT
                } else {
                    Duration(srtt)
                };
                let r = d.as_secs_f64();
                self.srtt[p] = srtt;
                self.rtt[p] = r;
                // Round 0 as `advance` works out round k.
                self.first[p] = arrival_key(0.0 * r + r / 2.0);
                moved |= 1 << p;
            }
        }
        if moved != 0 {
            let longest = self.rtt[..n].iter().copied().fold(0.0, f64::max);
            if fresh || longest.to_bits() != self.longest.to_bits() {
                self.longest = longest;
                moved = u32::MAX;
            }
            for p in 0..n {
                if moved >> p & 1 == 1 {
                    // The ratio is positive (or NaN, which both turn into 0), so truncation is
                    // its floor: `f64::floor` is a library call on the baseline x86-64 target
                    // (no SSE4.1 `roundsd`), about a hundred instructions per data packet at 8
                    // paths.
                    self.rounds[p] = ((longest / self.rtt[p]) as u64).max(1);
                }
            }
        }
        self.n = n;
        // Every subflow has at least one round: its head is its first run.
        self.head[..n].copy_from_slice(&self.first[..n]);
        self.round[..n].fill(1);
        #[cfg(debug_assertions)]
        {
            let mut all: Vec<u128> = (0..n)
                .flat_map(|p| (0..self.rounds[p]).map(move |k| (p, k)))
                .map(|(p, k)| run_key(k as f64 * self.rtt[p] + self.rtt[p] / 2.0, p as PathId))
                .collect();
            all.sort_unstable();
            self.sorted = all.into();
            let new = Cycle::worked_out_afresh(ctx);
            debug_assert!(
                self.rtt.map(f64::to_bits) == new.rtt.map(f64::to_bits)
                    && (self.rounds, self.round, self.head) == (new.rounds, new.round, new.head),
                "a cycle planned from stale values"
            );
        }
    }

    /// [`Cycle::restart`] with nothing reused (what debug builds check it against).
    #[cfg(debug_assertions)]
    fn worked_out_afresh(ctx: &SchedCtx<'_>) -> Cycle {
        let n = ctx.npaths();
        let mut c = Cycle::new();
        c.n = n;
        for p in 0..n {
            c.rtt[p] = ctx
                .srtt_of(p as PathId)
                .unwrap_or(UNSAMPLED_RTT)
                .as_secs_f64();
        }
        let longest = c.rtt[..n].iter().copied().fold(0.0, f64::max);
        for p in 0..n {
            c.rounds[p] = ((longest / c.rtt[p]) as u64).max(1);
            c.advance(p);
        }
        c
    }

    /// Subflow `p`'s head becomes its next round, if any.
    fn advance(&mut self, p: usize) {
        let (k, r) = (self.round[p], self.rtt[p]);
        self.head[p] = if k < self.rounds[p] {
            arrival_key(k as f64 * r + r / 2.0)
        } else {
            u64::MAX
        };
        self.round[p] = k + 1;
    }

    /// Each subflow's slots over the whole cycle, with a window of `cwnd` segments.
    fn share(&self, p: PathId, cwnd: u64) -> u64 {
        self.rounds[p as usize] * cwnd
    }

    /// The next run's subflow.
    fn next_run(&mut self) -> Option<PathId> {
        // The earliest head; a tie keeps the lower path, the first one met.
        let (mut best, mut p) = (u64::MAX, 0);
        for (q, &h) in self.head[..self.n].iter().enumerate() {
            if h < best {
                (best, p) = (h, q);
            }
        }
        if best == u64::MAX {
            return None;
        }
        #[cfg(debug_assertions)]
        debug_assert_eq!(
            self.sorted.pop_front(),
            Some(u128::from(best) << 8 | p as u128),
            "runs out of order"
        );
        self.advance(p);
        Some(p as PathId)
    }
}

impl Daps {
    pub fn new(npaths: usize) -> Self {
        Daps {
            plan: PlanQueues::new(npaths),
            cycle: Cycle::new(),
        }
    }
}

impl Scheduler for Daps {
    fn name(&self) -> &'static str {
        "daps"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        if let Some((path, seg)) = self.plan.pop_sendable(ctx) {
            return Some(Assignment { path, seg });
        }
        if !self.plan.idle_with_space(ctx) {
            return None;
        }
        // Each subflow's share of one cycle: a subflow already holding MAX_CYCLES_AHEAD of
        // them (stalled: a timeout, a window cut after a loss) gets no slots in the new cycle,
        // so its plan cannot pile up, nor hold back the subflows that keep sending.
        //
        // The next segment to plan is found before the slot it goes to (neither changes the
        // other), so that a planning with nothing to plan (the peer's window is full, or every
        // written segment is planned) ends before the cycle is set up: the plan stays as the
        // look above left it, with no stale head at the front of any queue, and a second look
        // would find nothing either. At 8 paths, where the window stops DAPS after most ACKs,
        // a third of the decisions ended so after a new cycle and that second look (issue
        // "Speed at scale"). One call of `next_unplanned`, so that it stays inlined.
        let cycle = &mut self.cycle;
        let mut started = false;
        let (mut run, mut slots) = (0, 0u64);
        'plan: loop {
            let Some(n) = self.plan.next_unplanned(ctx) else {
                if !started {
                    return None;
                }
                break;
            };
            if !started {
                cycle.restart(ctx);
                started = true;
            }
            while slots == 0 {
                let Some(p) = cycle.next_run() else {
                    break 'plan;
                };
                // The slots of each run: the subflow's window in segments, read as its runs
                // come up (nothing here changes a subflow, so it reads as at the cycle's start;
                // at 8 paths planning usually stops after a few runs, and reading every
                // subflow's window at each planning was about 30 instructions per data
                // packet).
                let cwnd = ctx.read_subflow(p, |sf| (sf.cwnd() / sf.mss().max(1) as u64).max(1));
                if (self.plan.len(p) as u64) < MAX_CYCLES_AHEAD * cycle.share(p, cwnd) {
                    (run, slots) = (p, cwnd);
                }
            }
            self.plan.push(run, n);
            slots -= 1;
        }
        self.plan
            .pop_sendable(ctx)
            .map(|(path, seg)| Assignment { path, seg })
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::minrtt::exchange::Exchange;

    #[test]
    fn rtt_ratio_four_slow_subflow_gets_segments_after_fast_rounds() {
        // p0 100 ms, p1 25 ms: one cycle is four fast rounds, the slow window arrives at 50 ms,
        // between the fast rounds arriving at 37.5 and 62.5 ms.
        let mut ex = Exchange::new("daps", 2, 4, 100_000);
        ex.at(0).write(6);
        ex.send();
        ex.at(25).ack(1, 0, 100_000);
        ex.at(100).ack(0, 6, 100_000);
        let (w0, w1) = (ex.cwnd_segs(0), ex.cwnd_segs(1));
        ex.write(200);
        let sent = ex.send();
        let fast: Vec<u64> = sent.iter().filter(|s| s.0 == 1).map(|s| s.1).collect();
        let slow: Vec<u64> = sent.iter().filter(|s| s.0 == 0).map(|s| s.1).collect();
        assert_eq!(fast, (6..6 + w1).collect::<Vec<_>>(), "{sent:?}");
        // Fast rounds arriving at 12.5 and 37.5 ms come first, then the slow window.
        let first_slow = 6 + 2 * w1;
        assert_eq!(slow, (first_slow..first_slow + w0).collect::<Vec<_>>());
    }
}
