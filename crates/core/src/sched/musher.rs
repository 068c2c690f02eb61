//! `musher`: MuSher, the agile MPTCP scheduler for dual-band 802.11ad/ac WLANs (Saha et al.,
//! MobiCom 2019; Cech, TUM 2020, §3.3, Table 1).
//!
//! Segments are assigned in a fixed packet-assignment ratio: of every burst of
//! `NUM_SEGMENTS` = 100 segments, `ratio` percent go to the first subflow and the rest to the
//! others (shared equally). The assignment is strict: when the subflow whose turn it is has no
//! window space, nothing is sent (the published implementation's default `cwnd_limited = 0`).
//! A subflow that is not available (handshake incomplete, or in RTO loss) has no turn: the
//! others share the bursts until it recovers (`mptcp_ratio_is_available`).
//! The ratio is searched: when the connection's throughput drifts from its reference, or the
//! subflows' queued bytes shrink, persistently, the ratio is moved in 5-point steps in the
//! direction where throughput grows, and the search stops when it falls again.
//!
//! Every constant is the published implementation's (`mptcp_musher.c` and `mptcp_ratio.c` for
//! Linux MPTCP v0.94, the code Cech compared): burst 100 segments, initial ratio 50 %, ratio
//! within [5, 95] %, step 5; a measurement every 100 ms (200 ms while searching); the reference
//! rate is the mean of the first 5 measurements; a search starts after 5 consecutive
//! measurements whose accumulated rate difference exceeds 200 Mbit/s or whose queued bytes
//! shrank by more than 75 kB, at most once per 3 s; a step is kept when the rate grew by more
//! than 5 Mbit/s. The implementation measured the rate at the network interface; we measure
//! the connection's data-ACKed bytes (goodput), the same quantity for one connection per path.
//!
//! The search follows `find_optimal_ratio` in `net/mptcp/mptcp_musher.c` of
//! github.com/swetanksaha/mptcp-musher (the code Cech ran) step by step, including where it
//! ends when neither direction gains: a failed right probe leaves the ratio at the left probe's
//! value, and a failed left probe subtracts the step once more (LEFT_RATIO_SET's
//! `sysctl_num_segments_flow_one -= step`), ending 10 points left of the start. Until
//! 2026-11-24 ours went back to the start there. One difference stays: the published code does
//! not clamp while stepping in SEARCH_RATE (a ratio could pass 95 or 5); we keep [5, 95].

use crate::packet::PathId;
use crate::sched::{Assignment, SchedCtx, SchedEvent, Scheduler};
use crate::time::{Duration, Time};

const NUM_SEGMENTS: u64 = 100;
const INITIAL_RATIO: u64 = 50;
const RATIO_MIN: u64 = 5;
const RATIO_MAX: u64 = 95;
const STEP: i64 = 5;
const REGULAR_INTERVAL: Duration = Duration::from_millis(100);
const SEARCH_INTERVAL: Duration = Duration::from_millis(200);
const REFERENCE_SAMPLES: u32 = 5;
const TRIGGER_COUNT: u32 = 5;
/// bits/s.
const RATE_TRIGGER: f64 = 200e6;
/// bytes.
const QUEUE_TRIGGER: f64 = -75e3;
/// bits/s.
const SEARCH_GAIN: f64 = 5e6;
const MIN_SEARCH_GAP: Duration = Duration::from_secs(3);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Search {
    InitRight,
    RightSet,
    InitLeft,
    LeftSet,
    Rate,
}

#[derive(Debug)]
pub struct Musher {
    /// Percent of each burst on path 0.
    ratio: u64,
    /// Segments assigned per path in the current burst.
    burst: Vec<u64>,
    last_sample: Option<Time>,
    last_data_ack: u64,
    reference: Option<(f64, f64)>,
    ref_acc: (f64, f64, u32),
    last: (f64, f64),
    diff: (f64, f64),
    counts: (u32, u32),
    search: Option<(Search, i64, u64, f64)>,
    last_trigger: Option<Time>,
}

impl Musher {
    pub fn new(npaths: usize) -> Self {
        Musher {
            ratio: INITIAL_RATIO,
            burst: vec![0; npaths],
            last_sample: None,
            last_data_ack: 0,
            reference: None,
            ref_acc: (0.0, 0.0, 0),
            last: (0.0, 0.0),
            diff: (0.0, 0.0),
            counts: (0, 0),
            search: None,
            last_trigger: None,
        }
    }

    /// The assignment ratio in percent for path 0.
    pub fn ratio(&self) -> u64 {
        self.ratio
    }

    /// Segments per burst due on `p`.
    fn quota(&self, p: PathId, npaths: usize) -> u64 {
        if npaths == 1 {
            return NUM_SEGMENTS;
        }
        let first = NUM_SEGMENTS * self.ratio / 100;
        if p == 0 {
            first
        } else {
            let rest = NUM_SEGMENTS - first;
            let others = npaths as u64 - 1;
            // The remainder goes to the lowest-numbered others.
            rest / others + u64::from(((p - 1) as u64) < rest % others)
        }
    }

    /// One measurement: goodput since the last one and bytes queued on the subflows.
    fn measure(&mut self, now: Time, rate: f64, queued: f64) {
        if self.search.is_some() {
            self.search_step(rate);
            return;
        }
        let Some(_) = self.reference else {
            self.ref_acc.0 += rate;
            self.ref_acc.1 += queued;
            self.ref_acc.2 += 1;
            if self.ref_acc.2 == REFERENCE_SAMPLES {
                let n = REFERENCE_SAMPLES as f64;
                self.reference = Some((self.ref_acc.0 / n, self.ref_acc.1 / n));
                self.last = (self.ref_acc.0 / n, self.ref_acc.1 / n);
                self.diff = (0.0, 0.0);
            }
            return;
        };
        self.diff.0 += rate - self.last.0;
        self.diff.1 += queued - self.last.1;
        if self.diff.0.abs() > RATE_TRIGGER {
            self.counts = (self.counts.0 + 1, 0);
        } else if self.diff.1 < QUEUE_TRIGGER {
            self.counts = (0, self.counts.1 + 1);
        } else {
            self.counts = (0, 0);
        }
        if self.counts.0 == TRIGGER_COUNT || self.counts.1 == TRIGGER_COUNT {
            self.trigger(now);
            return;
        }
        self.last = (rate, queued);
    }

    fn trigger(&mut self, now: Time) {
        self.counts = (0, 0);
        self.diff = (0.0, 0.0);
        self.reference = None;
        self.ref_acc = (0.0, 0.0, 0);
        if self
            .last_trigger
            .is_none_or(|t| now.0.saturating_sub(t.0) >= MIN_SEARCH_GAP.0)
        {
            self.last_trigger = Some(now);
            self.search = Some((Search::InitRight, STEP, self.ratio, 0.0));
        }
    }

    fn set_ratio(&mut self, r: i64) {
        self.ratio = r.clamp(RATIO_MIN as i64, RATIO_MAX as i64) as u64;
    }

    /// `find_optimal_ratio`: one step of the search, after one search interval at the
    /// current ratio measured `rate`.
    fn search_step(&mut self, rate: f64) {
        let Some((state, step, init, prev)) = self.search else {
            return;
        };
        let r = self.ratio as i64;
        let init = init as i64;
        self.search = match state {
            Search::InitRight if init + step <= RATIO_MAX as i64 => {
                self.set_ratio(init + step);
                Some((Search::RightSet, step, init as u64, rate))
            }
            Search::InitRight => Some((Search::InitLeft, step, init as u64, prev)),
            Search::RightSet if rate > prev + SEARCH_GAIN => {
                self.set_ratio(r + step);
                Some((Search::Rate, step, init as u64, rate))
            }
            Search::RightSet => Some((Search::InitLeft, step, init as u64, prev)),
            Search::InitLeft if init - step >= RATIO_MIN as i64 => {
                self.set_ratio(init - step);
                Some((Search::LeftSet, step, init as u64, rate))
            }
            Search::InitLeft => None,
            Search::LeftSet if rate > prev + SEARCH_GAIN => {
                self.set_ratio(r - STEP);
                Some((Search::Rate, -STEP, init as u64, rate))
            }
            // No gain to the left either: the published code subtracts the step once more
            // (`sysctl_num_segments_flow_one -= m_meta_cb->step` with step still +5), so the
            // search ends two steps left of where it started, not back at it.
            Search::LeftSet => {
                self.set_ratio(r - step);
                None
            }
            Search::Rate if rate < prev => {
                self.set_ratio(r - step);
                None
            }
            Search::Rate => {
                self.set_ratio(r + step);
                Some((Search::Rate, step, init as u64, rate))
            }
        };
    }
}

impl Scheduler for Musher {
    fn name(&self) -> &'static str {
        "musher"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        let n = ctx.npaths();
        // Only available subflows take part in a burst (`mptcp_ratio_is_available` without
        // the window test: established, not potentially failed, not in RTO loss); one in
        // RTO loss is passed over, so the others go on without waiting for it.
        let available = |p: PathId| {
            let s = ctx.subflow(p);
            s.is_established() && !s.in_loss()
        };
        // The path due: the first available one (in path order) whose share of the burst is
        // not used up. When every available subflow has used its share, their shares start
        // again (`mptcp_ratio_next_segment` resets the quota of the available subflows only).
        let mut due = (0..n as PathId)
            .filter(|&p| available(p))
            .find(|&p| self.burst[p as usize] < self.quota(p, n));
        if due.is_none() {
            for p in (0..n as PathId).filter(|&p| available(p)) {
                self.burst[p as usize] = 0;
            }
            due = (0..n as PathId)
                .filter(|&p| available(p))
                .find(|&p| self.burst[p as usize] < self.quota(p, n));
        }
        let due = due?;
        if !ctx.has_space(due) {
            return None;
        }
        let seg = ctx.meta_mut().next_unsent()?;
        if !ctx.may_send(seg) {
            return None;
        }
        self.burst[due as usize] += 1;
        Some(Assignment { path: due, seg })
    }

    fn on_event(&mut self, ctx: &mut SchedCtx<'_>, ev: &SchedEvent) {
        if !matches!(ev, SchedEvent::Ack { .. }) {
            return;
        }
        let now = ctx.now;
        let Some(t) = self.last_sample else {
            self.last_sample = Some(now);
            self.last_data_ack = ctx.meta().data_ack();
            return;
        };
        let interval = if self.search.is_some() {
            SEARCH_INTERVAL
        } else {
            REGULAR_INTERVAL
        };
        let dt = now.0.saturating_sub(t.0);
        if dt <= interval.0 {
            return;
        }
        let acked = ctx.meta().data_ack() - self.last_data_ack;
        let rate = acked as f64 * 8.0 / (dt as f64 * 1e-9);
        let queued: f64 = (0..ctx.npaths() as PathId)
            .map(|p| ctx.subflow(p).in_flight() as f64)
            .sum();
        self.last_sample = Some(now);
        self.last_data_ack = ctx.meta().data_ack();
        self.measure(now, rate, queued);
    }
}

#[cfg(test)]
mod tests {
    use super::Musher;
    use crate::sched::minrtt::exchange::Exchange;
    use crate::sender::TxKind::{New, Reinject};
    use crate::time::Time;

    #[test]
    fn fresh_connection_assigns_half_of_each_burst_to_each_subflow() {
        let mut ex = Exchange::new("musher", 2, 100, 100_000);
        ex.at(0).write(300);
        let sent = ex.send();
        // Path 0's 50 first, then path 1's 50, then the next burst.
        assert_eq!(sent.len(), 200);
        assert!(sent[..50].iter().all(|s| s.0 == 0));
        assert!(sent[50..100].iter().all(|s| s.0 == 1));
        assert!(sent[100..150].iter().all(|s| s.0 == 0));
    }

    #[test]
    fn due_subflow_full_nothing_sent() {
        // Windows of 10: path 0 takes 10 of its 50 and is full; path 1 is not due yet.
        let mut ex = Exchange::new("musher", 2, 10, 100_000);
        ex.at(0).write(300);
        let sent = ex.send();
        assert_eq!(sent.len(), 10);
        assert!(sent.iter().all(|s| s.0 == 0));
    }

    #[test]
    fn subflow_in_rto_loss_loses_its_turn() {
        // Path 0 is due, takes its window of 4 and is never acknowledged: after its tail-loss
        // probe and its RTO it is in loss, and path 1 carries the burst meanwhile.
        let mut ex = Exchange::new("musher", 2, 4, 100_000);
        ex.at(0).write(300);
        let sent = ex.send();
        assert!(sent.iter().all(|s| s.0 == 0), "{sent:?}");
        let rto = ex.fire_loss_probe().fire_rto();
        // Path 1 resends what path 0 held (the meta level's reinjection, any scheduler)...
        let sent = ex.send();
        assert!(sent.iter().all(|s| s.0 != 1 || s.2 == Reinject), "{sent:?}");
        // ... and once those are acknowledged, path 1 takes new data: path 0, still in
        // loss, has no turn.
        ex.now = rto + crate::time::Duration::from_millis(10);
        ex.ack(1, 4, 100_000);
        let sent = ex.send();
        assert!(
            sent.iter().any(|s| s.0 == 1 && s.2 == New),
            "path 1 took no new data while path 0 was in loss: {sent:?}"
        );
    }

    /// A MuSher fed one rate sample per 100 ms.
    struct Samples {
        m: Musher,
        t: u64,
    }

    impl Samples {
        fn step(&mut self, rate: f64) -> u64 {
            self.t += 100_000_000;
            self.m.measure(Time(self.t), rate, 0.0);
            self.m.ratio()
        }

        /// Five samples at 100 Mbit/s (the reference), then five 350 Mbit/s above it: the
        /// accumulated difference passes 200 Mbit/s and a search triggers, not yet stepped.
        fn triggered() -> Self {
            let mut s = Samples {
                m: Musher::new(2),
                t: 0,
            };
            for _ in 0..5 {
                s.step(100e6);
            }
            for _ in 0..5 {
                s.step(450e6);
            }
            assert_eq!(s.m.ratio(), 50, "triggered, not yet stepped");
            s
        }
    }

    #[test]
    fn rate_rise_persisting_five_samples_starts_search_to_the_right() {
        let mut s = Samples::triggered();
        assert_eq!(s.step(450e6), 55, "first step to the right");
        // Better by more than 5 Mbit/s: keep going right.
        assert_eq!(s.step(470e6), 60);
        // Worse: step back and stop; later samples only rebuild the reference.
        assert_eq!(s.step(400e6), 55);
        assert_eq!(s.step(300e6), 55);
    }

    #[test]
    fn search_without_gain_either_way_ends_two_steps_left_as_published() {
        // `find_optimal_ratio` (mptcp_musher.c): INIT_RIGHT sets 55, RIGHT_RATIO_SET sees no
        // gain, INIT_LEFT sets 45, LEFT_RATIO_SET sees no gain and subtracts the step again.
        let mut s = Samples::triggered();
        assert_eq!(s.step(450e6), 55, "right probe");
        assert_eq!(s.step(450e6), 55, "no gain to the right: INIT_LEFT next");
        assert_eq!(s.step(450e6), 45, "left probe");
        assert_eq!(
            s.step(450e6),
            40,
            "no gain to the left: one more step left, search over"
        );
        assert_eq!(s.step(450e6), 40);
    }
}
