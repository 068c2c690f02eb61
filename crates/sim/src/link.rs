//! One direction of a path: a drop-tail bottleneck queue, served at a constant line rate or by
//! a mahimahi trace, followed by a propagation delay.
//!
//! The link never schedules anything itself. [`Link::enqueue`] says when the link went from idle
//! to busy and when its head packet will finish; the simulator calls [`Link::service`] at that
//! time, gets the packet with its arrival time at the far end, and asks
//! [`Link::next_service`] for the next event. Departure times are computed once, when a packet
//! reaches the head of the queue, which is possible because outages are known in advance. The
//! queue, including the packet being transmitted, is a `VecDeque`: O(1) per packet and no
//! allocation once it has grown to its working size.
//!
//! Trace links follow mahimahi's `LinkQueue` byte accounting: each opportunity carries
//! [`OPPORTUNITY_BYTES`] of credit, the head packet consumes credit byte-wise across
//! opportunities, what a finishing packet leaves of an opportunity goes to the next queued
//! packet, and credit nobody is queued for is lost. A packet never uses an opportunity of the
//! very instant it arrived (mahimahi burns those before enqueueing). As there, the drop-tail
//! limit of a trace link counts the packets waiting only: the packet in transit (one that has
//! taken bytes of an opportunity and waits for the next to finish) has left mahimahi's
//! `packet_queue_` for `packet_in_transit_` (`LinkQueue::dequeue_packet`,
//! src/frontend/link_queue.cc), where `DroptailPacketQueue` no longer sees it. On a
//! constant-rate link the packet in transmission still counts.

use std::collections::VecDeque;
use std::sync::Arc;

use mpsched_core::time::{Duration, Time};

use crate::scenario::{LinkSpec, QueueSpec};
use crate::trace::{Trace, TraceCursor, OPPORTUNITY_BYTES};

/// Why [`Link::enqueue`] refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// Drop-tail: the buffer (counting the packet in transmission) had no room.
    QueueFull,
    /// The caller's Bernoulli draw said so.
    RandomLoss,
    /// The link was in a scheduled outage.
    Outage,
}

/// Outcome of [`Link::enqueue`].
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnqueueResult {
    /// The packet is queued. `service_at` is `Some(t)` when the link was idle: the caller must
    /// call [`Link::service`] at `t`. When it is `None` an event is already pending.
    Queued {
        service_at: Option<Time>,
    },
    Dropped(DropReason),
}

impl EnqueueResult {
    pub fn accepted(&self) -> bool {
        matches!(self, EnqueueResult::Queued { .. })
    }

    /// When the caller must call [`Link::service`], if this enqueue woke the link.
    pub fn service_at(&self) -> Option<Time> {
        match *self {
            EnqueueResult::Queued { service_at } => service_at,
            EnqueueResult::Dropped(_) => None,
        }
    }
}

/// The buffer size actually enforced, after resolving [`QueueSpec`] against the line rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Bytes(u64),
    Packets(u64),
    /// Packets queued, in transmission or propagating ([`QueueSpec::Pipe`]).
    Pipe(u64),
    Unlimited,
}

/// Counters over the link's lifetime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub delivered_packets: u64,
    pub delivered_wire_bytes: u64,
    pub dropped_queue_full: u64,
    pub dropped_random_loss: u64,
    pub dropped_outage: u64,
    /// Largest backlog seen, in wire bytes, counting the packet in transmission.
    pub max_queue_bytes: u64,
}

impl LinkStats {
    pub fn dropped_packets(&self) -> u64 {
        self.dropped_queue_full + self.dropped_random_loss + self.dropped_outage
    }
}

/// How the head of the queue is drained.
#[derive(Debug)]
enum Server {
    /// No rate limit: a packet departs as soon as it reaches the head (delay-only link).
    Unlimited,
    Rate {
        rate_bps: f64,
        /// The rate in integer millibits per second, so that serialization times are exact
        /// integer quotients (floating point put a 1 ns error on every few hundred packets).
        rate_mbps: u64,
        /// Remainder of the last quotient (< `rate_mbps`), in bit-ns per 1000: the fraction of
        /// a nanosecond owed by rounding serialization times down, carried forward so that the
        /// long-run rate is exact rather than biased.
        remainder: u64,
    },
    Trace {
        trace: Arc<Trace>,
        /// First opportunity not yet used or skipped.
        next: TraceCursor,
        /// Bytes left of the opportunity at `credit_at`, which the last departing packet used.
        credit: u32,
        credit_at: Time,
    },
}

#[derive(Debug)]
struct Queued<P> {
    pkt: P,
    wire_len: u32,
    arrival: Time,
}

/// One direction of a path. `P` is whatever the simulator moves (a packet or an id to one).
#[derive(Debug)]
pub struct Link<P> {
    delay: Duration,
    server: Server,
    limit: QueueLimit,
    /// Sorted, disjoint `[start, end)` intervals.
    outages: Vec<(Time, Time)>,
    /// Front = the packet in transmission (while `head_departs` is `Some`).
    queue: VecDeque<Queued<P>>,
    queued_bytes: u64,
    head_departs: Option<Time>,
    /// Trace links: when the head packet first takes bytes of an opportunity (from then on it
    /// is in transit and no longer counts against the drop-tail limit).
    head_in_transit: Option<Time>,
    stats: LinkStats,
    /// Periodic handovers: rate and delay factors while one lasts.
    handover: Option<crate::scenario::Handover>,
    /// Scheduled changes of the propagation delay: from each time on, that delay.
    delay_steps: Vec<(Time, Duration)>,
    /// Latest arrival handed out: a delay decrease never lets a packet overtake another.
    last_arrival: Time,
    /// [`QueueLimit::Pipe`] only: arrival times of the packets propagating (ascending).
    propagating: VecDeque<Time>,
}

impl<P> Link<P> {
    /// Builds a link from its spec. `trace` is `spec.trace` already loaded (so that runs can
    /// share it); when given it wins over `spec.rate_bps`, as in the scenario file.
    /// `mtu_wire_bytes` is the largest packet the transport sends: the buffer always holds at
    /// least one, so that a tiny `queue` setting cannot make the path unusable.
    ///
    /// # Panics
    /// If `spec.trace` is set but `trace` is `None` (the caller forgot to load it), or if
    /// `spec.rate_bps` is zero, negative or NaN (the scenario validator rejects those).
    pub fn new(spec: &LinkSpec, trace: Option<Arc<Trace>>, mtu_wire_bytes: u32) -> Link<P> {
        assert!(
            spec.trace.is_none() || trace.is_some(),
            "link spec names trace {:?} but no loaded trace was given",
            spec.trace
        );
        let server = match (trace, spec.rate_bps) {
            (Some(trace), _) => Server::Trace {
                next: trace.cursor(0),
                trace,
                credit: 0,
                credit_at: Time::ZERO,
            },
            (None, Some(rate)) if rate.is_infinite() && rate > 0.0 => Server::Unlimited,
            (None, Some(rate)) => {
                assert!(rate > 0.0, "link rate must be positive, got {rate} bit/s");
                Server::Rate {
                    rate_bps: rate,
                    // Sub-millibit precision is far below anything a scenario can express.
                    rate_mbps: ((rate * 1e3).round() as u64).max(1),
                    remainder: 0,
                }
            }
            (None, None) => Server::Unlimited,
        };
        let mtu = u64::from(mtu_wire_bytes);
        let limit = match spec.queue {
            QueueSpec::Unlimited => QueueLimit::Unlimited,
            QueueSpec::Packets(n) => QueueLimit::Packets(n.max(1)),
            QueueSpec::Pipe(n) => QueueLimit::Pipe(n.max(1)),
            QueueSpec::Bytes(b) => QueueLimit::Bytes(b.max(mtu)),
            QueueSpec::Time(s) => match server_rate_bps(&server) {
                // `as` saturates: a negative or NaN product gives 0, then one MTU.
                Some(rate) => QueueLimit::Bytes(((s * rate / 8.0).round() as u64).max(mtu)),
                // Any number of seconds of an infinite rate.
                None => QueueLimit::Unlimited,
            },
        };
        Link {
            delay: Duration::from_secs_f64(spec.delay_s),
            server,
            limit,
            outages: normalize_outages(&spec.outages),
            queue: VecDeque::new(),
            queued_bytes: 0,
            head_departs: None,
            head_in_transit: None,
            stats: LinkStats::default(),
            handover: spec.handover,
            delay_steps: Vec::new(),
            last_arrival: Time::ZERO,
            propagating: VecDeque::new(),
        }
    }

    /// Change the propagation delay to `d` at each `t` (e.g. Shi et al., USENIX ATC 2018,
    /// Fig. 12 and 15b). Packets keep their order: after a decrease a packet arrives no earlier
    /// than the one before it.
    pub fn set_delay_steps(&mut self, mut steps: Vec<(Time, Duration)>) {
        steps.sort_by_key(|s| s.0);
        self.delay_steps = steps;
    }

    fn delay_at(&self, t: Time) -> Duration {
        let i = self.delay_steps.partition_point(|s| s.0 <= t);
        if i == 0 {
            self.delay
        } else {
            self.delay_steps[i - 1].1
        }
    }

    /// Offers a packet to the link at `now`. `lose` is the caller's Bernoulli draw for this
    /// packet (drawn by the caller so that its RNG stream does not depend on link state).
    ///
    /// Checked in this order: outage, random loss (on the way in, so a lost packet takes no
    /// buffer or capacity), then drop-tail. An empty queue takes any packet.
    pub fn enqueue(&mut self, now: Time, pkt: P, wire_len: u32, lose: bool) -> EnqueueResult {
        // Arrivals are non-decreasing (`last_arrival`): the propagated ones are at the front.
        while self.propagating.front().is_some_and(|&t| t <= now) {
            self.propagating.pop_front();
        }
        let reason = if outage_end(&self.outages, now).is_some() {
            Some(DropReason::Outage)
        } else if lose {
            Some(DropReason::RandomLoss)
        } else if (!self.queue.is_empty() || !self.propagating.is_empty())
            && !self.has_room_for(now, wire_len)
        {
            Some(DropReason::QueueFull)
        } else {
            None
        };
        if let Some(reason) = reason {
            let counter = match reason {
                DropReason::Outage => &mut self.stats.dropped_outage,
                DropReason::RandomLoss => &mut self.stats.dropped_random_loss,
                DropReason::QueueFull => &mut self.stats.dropped_queue_full,
            };
            *counter += 1;
            return EnqueueResult::Dropped(reason);
        }
        self.queue.push_back(Queued {
            pkt,
            wire_len,
            arrival: now,
        });
        self.queued_bytes += u64::from(wire_len);
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(self.queued_bytes);
        if self.head_departs.is_some() {
            return EnqueueResult::Queued { service_at: None };
        }
        let departs = self.departure_of_head(now, wire_len, now);
        self.head_departs = Some(departs);
        EnqueueResult::Queued {
            service_at: Some(departs),
        }
    }

    /// Completes the transmission due at `now` (the time the link last announced) and returns
    /// the packet with its arrival time at the far end. The next head, if any, starts at once;
    /// see [`Link::next_service`]. Returns `None` if nothing is due by `now`.
    pub fn service(&mut self, now: Time) -> Option<(P, Time)> {
        let departs = self.head_departs.filter(|&t| t <= now)?;
        let done = self
            .queue
            .pop_front()
            .expect("a busy link has a packet in transmission");
        self.queued_bytes -= u64::from(done.wire_len);
        self.stats.delivered_packets += 1;
        self.stats.delivered_wire_bytes += u64::from(done.wire_len);
        // The departure time, not `now`: the link's schedule does not depend on how late the
        // caller is (in a correct simulator they are equal).
        self.head_departs = match self.queue.front() {
            Some(next) => {
                let (wire_len, arrival) = (next.wire_len, next.arrival);
                Some(self.departure_of_head(departs, wire_len, arrival))
            }
            None => {
                // Nobody is queued for the rest of this opportunity: mahimahi discards it.
                if let Server::Trace { credit, .. } = &mut self.server {
                    *credit = 0;
                }
                None
            }
        };
        let mut delay = self.delay_at(departs);
        if let Some(h) = self.handover.filter(|h| h.active(departs.as_secs_f64())) {
            delay = Duration::from_secs_f64(delay.as_secs_f64() * h.delay_factor);
        }
        let arrive = (departs + delay).max(self.last_arrival);
        self.last_arrival = arrive;
        if matches!(self.limit, QueueLimit::Pipe(_)) {
            self.propagating.push_back(arrive);
        }
        Some((done.pkt, arrive))
    }

    /// When the packet in transmission finishes, if the link is busy.
    pub fn next_service(&self) -> Option<Time> {
        self.head_departs
    }

    pub fn is_busy(&self) -> bool {
        self.head_departs.is_some()
    }

    /// One-way propagation delay added after transmission.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Constant line rate, or the trace's mean rate; `None` for an unlimited link.
    pub fn rate_bps(&self) -> Option<f64> {
        server_rate_bps(&self.server)
    }

    pub fn queue_limit(&self) -> QueueLimit {
        self.limit
    }

    /// Backlog in wire bytes, counting the packet in transmission.
    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes
    }

    /// Backlog in packets, counting the packet in transmission.
    pub fn queued_packets(&self) -> usize {
        self.queue.len()
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Wire bytes the link could have carried in `[from, to)`, outages excluded: the
    /// denominator of `utilization_by_path`. Infinite for an unlimited link.
    pub fn capacity_bytes(&self, from: Time, to: Time) -> f64 {
        if to <= from {
            return 0.0;
        }
        match &self.server {
            Server::Unlimited => f64::INFINITY,
            Server::Rate { rate_bps, .. } => {
                let down: u64 = self
                    .outages_within(from, to)
                    .map(|(start, end)| (end - start).as_nanos())
                    .sum();
                let up = (to - from).as_nanos() - down;
                rate_bps * up as f64 / 8e9
            }
            Server::Trace { trace, .. } => {
                let lost: u64 = self
                    .outages_within(from, to)
                    .map(|(start, end)| trace.opportunities_between(start, end))
                    .sum();
                let usable = trace.opportunities_between(from, to) - lost;
                usable as f64 * f64::from(OPPORTUNITY_BYTES)
            }
        }
    }

    /// The outages clipped to `[from, to)`.
    fn outages_within(&self, from: Time, to: Time) -> impl Iterator<Item = (Time, Time)> + '_ {
        let first = self.outages.partition_point(|&(_, end)| end <= from);
        self.outages[first..]
            .iter()
            .take_while(move |&&(start, _)| start < to)
            .map(move |&(start, end)| (start.max(from), end.min(to)))
    }

    fn has_room_for(&self, now: Time, wire_len: u32) -> bool {
        // The packet in transit on a trace link is out of the queue (see the module doc).
        let (packets, bytes) = match (self.head_in_transit, self.queue.front()) {
            (Some(t), Some(head)) if t <= now => (
                self.queue.len() as u64 - 1,
                self.queued_bytes - u64::from(head.wire_len),
            ),
            _ => (self.queue.len() as u64, self.queued_bytes),
        };
        match self.limit {
            QueueLimit::Unlimited => true,
            QueueLimit::Packets(n) => packets < n,
            QueueLimit::Pipe(n) => packets + (self.propagating.len() as u64) < n,
            QueueLimit::Bytes(b) => bytes + u64::from(wire_len) <= b,
        }
    }

    /// Departure time of the packet that reaches the head at `start` (its arrival, or the
    /// previous departure). Mutates the server: rounding carry, trace position and credit.
    fn departure_of_head(&mut self, start: Time, wire_len: u32, arrival: Time) -> Time {
        match &mut self.server {
            Server::Unlimited => resume_after_pauses(&self.outages, start, 0),
            Server::Rate {
                rate_mbps,
                remainder,
                ..
            } => {
                let mut ns = serialization_ns(wire_len, *rate_mbps, remainder);
                // A handover under way when the transmission starts slows all of it.
                if let Some(h) = self.handover.filter(|h| h.active(start.as_secs_f64())) {
                    ns = (ns as f64 / h.rate_factor.max(1e-9)).round() as u64;
                }
                resume_after_pauses(&self.outages, start, ns)
            }
            Server::Trace {
                trace,
                next,
                credit,
                credit_at,
            } => {
                let mut need = wire_len;
                // The rest of the opportunity that finished the previous packet. A packet that
                // arrived at that very instant may not use it (mahimahi's strictness).
                if *credit > 0 && *credit_at > arrival {
                    self.head_in_transit = Some(*credit_at);
                    if need <= *credit {
                        *credit -= need;
                        return *credit_at;
                    }
                    need -= *credit;
                } else {
                    self.head_in_transit = None;
                }
                *credit = 0;
                loop {
                    let mut t = next.time(trace);
                    if t <= arrival {
                        // Opportunities that passed while the link was idle (or at the instant
                        // of arrival) are gone: jump instead of stepping through them.
                        *next = trace.cursor(trace.first_after(arrival));
                        t = next.time(trace);
                    }
                    if let Some(end) = outage_end(&self.outages, t) {
                        let resumed = trace.cursor(trace.first_at_or_after(end));
                        if resumed.time(trace) <= t {
                            // The outage outlasts representable time: never.
                            return Time::MAX;
                        }
                        *next = resumed;
                        continue;
                    }
                    next.advance(trace);
                    self.head_in_transit.get_or_insert(t);
                    if need <= OPPORTUNITY_BYTES {
                        *credit = OPPORTUNITY_BYTES - need;
                        *credit_at = t;
                        return t;
                    }
                    need -= OPPORTUNITY_BYTES;
                }
            }
        }
    }
}

/// `wire_len` bytes at `rate_mbps` millibits/s, in whole ns, rounded down; `remainder` carries
/// the fraction (times `rate_mbps`) from one packet to the next.
fn serialization_ns(wire_len: u32, rate_mbps: u64, remainder: &mut u64) -> u64 {
    // ns = bits * 1e9 / bps = bits * 1e12 / mbps.
    const SCALE: u64 = 8 * 1_000_000_000_000;
    match u64::from(wire_len)
        .checked_mul(SCALE)
        .and_then(|n| n.checked_add(*remainder))
    {
        // Every realistic packet: one 64-bit division.
        Some(n) => {
            *remainder = n % rate_mbps;
            n / rate_mbps
        }
        None => {
            let n = u128::from(wire_len) * u128::from(SCALE) + u128::from(*remainder);
            let d = u128::from(rate_mbps);
            *remainder = (n % d) as u64;
            u64::try_from(n / d).unwrap_or(u64::MAX)
        }
    }
}

fn server_rate_bps(server: &Server) -> Option<f64> {
    match server {
        Server::Unlimited => None,
        Server::Rate { rate_bps, .. } => Some(*rate_bps),
        Server::Trace { trace, .. } => Some(trace.mean_rate_bps()),
    }
}

/// Seconds to sorted, merged, non-empty `[start, end)` intervals, so lookups can bisect.
fn normalize_outages(outages: &[(f64, f64)]) -> Vec<(Time, Time)> {
    let mut spans: Vec<(Time, Time)> = outages
        .iter()
        .map(|&(start, end)| (Time::from_secs_f64(start), Time::from_secs_f64(end)))
        .filter(|&(start, end)| start < end)
        .collect();
    spans.sort_unstable();
    let mut merged: Vec<(Time, Time)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// End of the outage containing `t`, if any.
fn outage_end(outages: &[(Time, Time)], t: Time) -> Option<Time> {
    let i = outages.partition_point(|&(_, end)| end <= t);
    outages
        .get(i)
        .filter(|&&(start, _)| start <= t)
        .map(|&(_, end)| end)
}

/// When `work_ns` of transmission starting at `start` completes, pausing during outages. A
/// transmission that completes exactly when an outage starts is not interrupted.
fn resume_after_pauses(outages: &[(Time, Time)], start: Time, work_ns: u64) -> Time {
    let mut t = start;
    let mut left = Duration(work_ns);
    let first = outages.partition_point(|&(_, end)| end <= t);
    for &(o_start, o_end) in &outages[first..] {
        if o_start <= t {
            t = o_end;
        } else if o_start < t + left {
            left = left - (o_start - t);
            t = o_end;
        } else {
            break;
        }
    }
    t + left
}

#[cfg(test)]
mod tests {
    use super::*;

    const MTU: u32 = 1500;

    fn ms(v: u64) -> Time {
        Time(v * 1_000_000)
    }

    fn us(v: u64) -> Time {
        Time(v * 1_000)
    }

    fn spec(rate_bps: Option<f64>, queue: QueueSpec) -> LinkSpec {
        LinkSpec {
            rate_bps,
            trace: None,
            delay_s: 0.0,
            queue,
            loss: 0.0,
            outages: Vec::new(),
            handover: None,
        }
    }

    /// 8 Mbit/s: one byte per microsecond, so 1000 bytes take exactly 1 ms.
    fn byte_per_us_link(queue: QueueSpec) -> Link<u32> {
        Link::new(&spec(Some(8e6), queue), None, MTU)
    }

    fn trace_link(text: &str, outages: Vec<(f64, f64)>) -> Link<u32> {
        let trace = Arc::new(Trace::parse("t.down", text).unwrap());
        let mut spec = spec(None, QueueSpec::Unlimited);
        spec.trace = Some("t.down".into());
        spec.outages = outages;
        Link::new(&spec, Some(trace), MTU)
    }

    fn send(link: &mut Link<u32>, at: Time, id: u32, len: u32) -> EnqueueResult {
        link.enqueue(at, id, len, false)
    }

    /// Runs service events due up to `until` as the simulator would; (id, far-end arrival).
    fn serve_until(link: &mut Link<u32>, until: Time) -> Vec<(u32, Time)> {
        let mut out = Vec::new();
        while let Some(t) = link.next_service().filter(|&t| t <= until) {
            out.push(link.service(t).unwrap());
        }
        out
    }

    #[test]
    fn constant_rate_serializes_back_to_back() {
        let mut spec = spec(Some(8e6), QueueSpec::Unlimited);
        spec.delay_s = 0.010;
        let mut link: Link<u32> = Link::new(&spec, None, MTU);
        assert_eq!(link.delay(), Duration::from_millis(10));
        assert_eq!(
            send(&mut link, ms(0), 1, 1000),
            EnqueueResult::Queued {
                service_at: Some(ms(1))
            }
        );
        assert_eq!(send(&mut link, ms(0), 2, 1000).service_at(), None);
        assert_eq!(send(&mut link, us(500), 3, 500).service_at(), None);
        assert_eq!(
            serve_until(&mut link, ms(100)),
            [(1, ms(11)), (2, ms(12)), (3, us(12_500))]
        );
        assert!(!link.is_busy());
        assert_eq!(link.stats().delivered_wire_bytes, 2500);
        assert_eq!(link.stats().delivered_packets, 3);
    }

    #[test]
    fn pipe_limit_counts_packets_still_propagating() {
        // 1 ms per packet, 10 ms of delay, room for 3 packets in the whole link.
        let mut spec = spec(Some(8e6), QueueSpec::Pipe(3));
        spec.delay_s = 0.010;
        let mut link: Link<u32> = Link::new(&spec, None, MTU);
        assert_eq!(link.queue_limit(), QueueLimit::Pipe(3));
        for id in 1..=3 {
            assert!(send(&mut link, ms(0), id, 1000).accepted());
        }
        assert_eq!(serve_until(&mut link, ms(5)).len(), 3);
        // The queue is empty, but three packets are on their way (arriving at 11-13 ms).
        assert_eq!(
            send(&mut link, ms(5), 4, 1000),
            EnqueueResult::Dropped(DropReason::QueueFull)
        );
        // The first has arrived at 11 ms: one place again.
        assert!(send(&mut link, ms(11), 5, 1000).accepted());
        assert_eq!(
            send(&mut link, ms(11), 6, 1000),
            EnqueueResult::Dropped(DropReason::QueueFull)
        );
    }

    #[test]
    fn constant_rate_idle_link_starts_at_arrival() {
        let mut link = byte_per_us_link(QueueSpec::Unlimited);
        let _ = send(&mut link, ms(0), 1, 1000);
        serve_until(&mut link, ms(5));
        assert_eq!(send(&mut link, ms(5), 2, 1000).service_at(), Some(ms(6)));
    }

    #[test]
    fn service_before_its_time_returns_nothing() {
        let mut link = byte_per_us_link(QueueSpec::Unlimited);
        let _ = send(&mut link, ms(0), 1, 1000);
        assert!(link.service(us(999)).is_none());
        assert_eq!(link.service(ms(1)), Some((1, ms(1))));
        assert!(link.service(ms(2)).is_none());
    }

    #[test]
    fn queue_full_drops_tail() {
        let mut link = byte_per_us_link(QueueSpec::Packets(2));
        assert!(send(&mut link, ms(0), 1, 1000).accepted());
        assert!(send(&mut link, ms(0), 2, 1000).accepted());
        assert_eq!(
            send(&mut link, ms(0), 3, 1000),
            EnqueueResult::Dropped(DropReason::QueueFull)
        );
        // The packet in transmission still counts until it departs.
        assert_eq!(
            send(&mut link, us(999), 4, 40),
            EnqueueResult::Dropped(DropReason::QueueFull)
        );
        serve_until(&mut link, ms(1));
        assert!(send(&mut link, ms(1), 5, 1000).accepted());
        assert_eq!(link.stats().dropped_queue_full, 2);
        assert_eq!(link.stats().dropped_packets(), 2);
        assert_eq!(link.stats().max_queue_bytes, 2000);
    }

    #[test]
    fn queue_in_bytes_counts_the_packet_in_transmission() {
        let mut link = byte_per_us_link(QueueSpec::Bytes(3000));
        assert!(send(&mut link, ms(0), 1, 1500).accepted());
        assert!(send(&mut link, ms(0), 2, 1500).accepted());
        assert!(!send(&mut link, ms(0), 3, 1).accepted());
        assert_eq!(link.queued_bytes(), 3000);
        assert_eq!(link.queued_packets(), 2);
    }

    #[test]
    fn queue_in_ms_of_line_rate() {
        // 50 ms of 8 Mbit/s = 50 000 bytes.
        let mut link = byte_per_us_link(QueueSpec::Time(0.050));
        assert_eq!(link.queue_limit(), QueueLimit::Bytes(50_000));
        for id in 0..50 {
            assert!(send(&mut link, ms(0), id, 1000).accepted());
        }
        assert!(!send(&mut link, ms(0), 50, 1000).accepted());
    }

    #[test]
    fn queue_in_ms_of_trace_uses_mean_rate() {
        // One 1504-byte opportunity per ms; 10 ms of it = 15 040 bytes.
        let text: String = (1..=10).map(|v| format!("{v}\n")).collect();
        let trace = Arc::new(Trace::parse("t.down", &text).unwrap());
        let mut spec = spec(None, QueueSpec::Time(0.010));
        spec.trace = Some("t.down".into());
        let link: Link<u32> = Link::new(&spec, Some(trace), MTU);
        assert_eq!(link.queue_limit(), QueueLimit::Bytes(15_040));
        assert_eq!(link.rate_bps(), Some(1504.0 * 8.0 * 1000.0));
    }

    #[test]
    fn queue_always_fits_one_mtu() {
        let link: Link<u32> = byte_per_us_link(QueueSpec::Bytes(100));
        assert_eq!(link.queue_limit(), QueueLimit::Bytes(u64::from(MTU)));
        let link: Link<u32> = byte_per_us_link(QueueSpec::Time(0.0));
        assert_eq!(link.queue_limit(), QueueLimit::Bytes(u64::from(MTU)));
        let link: Link<u32> = byte_per_us_link(QueueSpec::Packets(0));
        assert_eq!(link.queue_limit(), QueueLimit::Packets(1));
    }

    #[test]
    fn random_loss_drops_before_the_queue() {
        let mut link = byte_per_us_link(QueueSpec::Unlimited);
        assert_eq!(
            link.enqueue(ms(0), 1, 1000, true),
            EnqueueResult::Dropped(DropReason::RandomLoss)
        );
        assert!(!link.is_busy());
        assert_eq!(link.stats().dropped_random_loss, 1);
    }

    #[test]
    fn unlimited_link_is_delay_only() {
        let mut spec = spec(None, QueueSpec::Unlimited);
        spec.delay_s = 0.025;
        let mut link: Link<u32> = Link::new(&spec, None, MTU);
        assert_eq!(send(&mut link, ms(5), 1, 1500).service_at(), Some(ms(5)));
        assert_eq!(send(&mut link, ms(5), 2, 1500).service_at(), None);
        assert_eq!(serve_until(&mut link, ms(5)), [(1, ms(30)), (2, ms(30))]);
        assert_eq!(link.rate_bps(), None);
        assert_eq!(link.capacity_bytes(ms(0), ms(1)), f64::INFINITY);
    }

    #[test]
    fn long_run_rate_is_exact() {
        const N: u64 = 100_000;
        for rate in [100e6, 7.04e6, 9.185e6] {
            let mut link: Link<u32> = Link::new(&spec(Some(rate), QueueSpec::Unlimited), None, MTU);
            for id in 0..N {
                let _ = send(&mut link, Time::ZERO, id as u32, 1520);
            }
            let mut k = 0u128;
            while let Some(t) = link.next_service() {
                let (_, arrival) = link.service(t).unwrap();
                k += 1;
                // The k-th departure is the exact k * 1520 * 8 / rate, rounded down to the ns.
                let exact_ns = k * 1520 * 8 * 1_000_000_000_000 / (rate * 1e3) as u128;
                assert_eq!(u128::from(arrival.0), exact_ns, "rate {rate}, packet {k}");
            }
            assert_eq!(k, u128::from(N));
        }
        // 1520 bytes at 100 Mbit/s is exactly 121.6 µs: no rounding at all.
        let mut link: Link<u32> = Link::new(&spec(Some(100e6), QueueSpec::Unlimited), None, MTU);
        for id in 0..N as u32 {
            let _ = send(&mut link, Time::ZERO, id, 1520);
        }
        let last = std::iter::from_fn(|| link.next_service().and_then(|t| link.service(t))).last();
        assert_eq!(last, Some(((N - 1) as u32, Time(N * 121_600))));
    }

    #[test]
    fn trace_packet_waits_for_opportunity() {
        let mut link = trace_link("5\n10\n", vec![]);
        assert_eq!(send(&mut link, ms(1), 1, 1000).service_at(), Some(ms(5)));
        assert_eq!(serve_until(&mut link, ms(5)), [(1, ms(5))]);
        // Arriving exactly at an opportunity is too late for it, as in mahimahi.
        assert_eq!(send(&mut link, ms(10), 2, 1000).service_at(), Some(ms(15)));
    }

    #[test]
    fn trace_small_packets_share_an_opportunity() {
        let mut link = trace_link("5\n10\n", vec![]);
        for id in 1..=3 {
            let _ = send(&mut link, ms(0), id, 700);
        }
        // 1504 bytes at 5 ms cover two 700-byte packets and 104 bytes of the third.
        assert_eq!(
            serve_until(&mut link, ms(20)),
            [(1, ms(5)), (2, ms(5)), (3, ms(10))]
        );
    }

    #[test]
    fn trace_large_packet_spans_opportunities() {
        let mut link = trace_link("1\n2\n3\n4\n", vec![]);
        let _ = send(&mut link, ms(0), 1, 1520);
        let _ = send(&mut link, ms(0), 2, 1488);
        // 1520 = 1504 + 16 bytes; the rest of that second opportunity (1488) is exactly packet 2.
        assert_eq!(serve_until(&mut link, ms(20)), [(1, ms(2)), (2, ms(2))]);
    }

    /// mahimahi's `DroptailPacketQueue` counts what waits in `packet_queue_`; the packet that
    /// took the rest of an opportunity and waits in `packet_in_transit_` for the next one is not
    /// there (`LinkQueue::dequeue_packet`, src/frontend/link_queue.cc).
    #[test]
    fn trace_drop_tail_counts_waiting_packets_only() {
        let trace = Arc::new(Trace::parse("t.down", "5\n10\n15\n").unwrap());
        let mut spec = spec(None, QueueSpec::Packets(2));
        spec.trace = Some("t.down".into());
        let mut link: Link<u32> = Link::new(&spec, Some(trace), MTU);
        // Both wait for the 5 ms opportunity: the limit of two is reached.
        assert!(send(&mut link, ms(0), 1, 1200).accepted());
        assert!(send(&mut link, ms(0), 2, 1000).accepted());
        assert!(!send(&mut link, ms(1), 3, 1000).accepted());
        // At 5 ms packet 1 leaves and packet 2 takes the other 304 bytes: in transit until
        // 10 ms, so two more may wait.
        assert_eq!(serve_until(&mut link, ms(5)), [(1, ms(5))]);
        assert!(send(&mut link, ms(7), 4, 1000).accepted());
        assert!(send(&mut link, ms(7), 5, 1000).accepted());
        assert_eq!(
            send(&mut link, ms(7), 6, 1000),
            EnqueueResult::Dropped(DropReason::QueueFull)
        );
    }

    #[test]
    fn trace_unused_credit_is_wasted() {
        let mut link = trace_link("5\n10\n", vec![]);
        let _ = send(&mut link, ms(0), 1, 100);
        serve_until(&mut link, ms(6));
        // 1404 bytes were left at 5 ms with nobody queued: gone.
        assert_eq!(send(&mut link, ms(6), 2, 100).service_at(), Some(ms(10)));
    }

    #[test]
    fn trace_idle_opportunities_do_not_accumulate() {
        let mut link = trace_link("1\n2\n3\n4\n", vec![]);
        for id in 0..3 {
            let _ = send(&mut link, ms(50) + Duration(1), id, 1504);
        }
        assert_eq!(
            serve_until(&mut link, ms(100)),
            [(0, ms(51)), (1, ms(52)), (2, ms(53))]
        );
    }

    #[test]
    fn trace_arrival_at_the_credit_instant_cannot_use_it() {
        // Packet 2 arrives at 5 ms, the instant packet 1 finishes with 504 bytes to spare.
        // Whether the arrival or the service event runs first, it waits for 10 ms.
        let mut arrival_first = trace_link("5\n5\n10\n", vec![]);
        let _ = send(&mut arrival_first, ms(0), 1, 1000);
        let _ = send(&mut arrival_first, ms(5), 2, 100);
        assert_eq!(
            serve_until(&mut arrival_first, ms(20)),
            [(1, ms(5)), (2, ms(10))]
        );

        let mut service_first = trace_link("5\n5\n10\n", vec![]);
        let _ = send(&mut service_first, ms(0), 1, 1000);
        serve_until(&mut service_first, ms(5));
        assert_eq!(
            send(&mut service_first, ms(5), 2, 100).service_at(),
            Some(ms(10))
        );
    }

    #[test]
    fn trace_link_repeats_shifted_by_period() {
        let mut link = trace_link("2\n4\n", vec![]);
        for id in 0..5 {
            let _ = send(&mut link, ms(0), id, 1504);
        }
        assert_eq!(
            serve_until(&mut link, ms(100)),
            [(0, ms(2)), (1, ms(4)), (2, ms(6)), (3, ms(8)), (4, ms(10))]
        );
    }

    #[test]
    fn outage_pauses_service_and_drops_arrivals() {
        let mut spec = spec(Some(8e6), QueueSpec::Unlimited);
        spec.outages = vec![(0.0015, 0.0035)];
        let mut link: Link<u32> = Link::new(&spec, None, MTU);
        let _ = send(&mut link, ms(0), 1, 1000);
        let _ = send(&mut link, ms(0), 2, 1000);
        assert_eq!(
            send(&mut link, ms(2), 3, 1000),
            EnqueueResult::Dropped(DropReason::Outage)
        );
        // Packet 2: 0.5 ms of transmission, 2 ms paused, then the other 0.5 ms.
        assert_eq!(serve_until(&mut link, ms(3)), [(1, ms(1))]);
        assert_eq!(link.next_service(), Some(ms(4)));
        // The outage ends at 3.5 ms, exclusive.
        assert!(send(&mut link, us(3500), 4, 1000).accepted());
        assert_eq!(serve_until(&mut link, ms(10)), [(2, ms(4)), (4, ms(5))]);
        assert_eq!(link.stats().dropped_outage, 1);
    }

    /// 8 Mbit/s, 10 ms delay, a handover from 10 to 20 ms every second: /10 rate, ×3 delay.
    fn handover_link() -> Link<u32> {
        let mut spec = spec(Some(8e6), QueueSpec::Unlimited);
        spec.delay_s = 0.010;
        spec.handover = Some(crate::scenario::Handover {
            start_s: 0.010,
            every_s: 1.0,
            duration_s: 0.010,
            rate_factor: 0.1,
            delay_factor: 3.0,
        });
        Link::new(&spec, None, MTU)
    }

    #[test]
    fn handover_transmission_slowed_and_delay_tripled() {
        let mut link = handover_link();
        // Before: 1 ms of transmission, 10 ms of delay.
        let _ = send(&mut link, ms(0), 1, 1000);
        assert_eq!(serve_until(&mut link, ms(5)), [(1, ms(11))]);
        // During (10 to 20 ms): 500 bytes take 5 ms instead of 0.5, then 30 ms of delay.
        let _ = send(&mut link, ms(11), 2, 500);
        assert_eq!(serve_until(&mut link, ms(30)), [(2, ms(46))]);
    }

    #[test]
    fn handover_ends_later_packets_never_overtake() {
        let mut link = handover_link();
        // Leaves at 10 ms as the handover starts (arrives at 40 ms); the next one leaves after
        // the handover, with the short delay, and must still arrive after the first.
        let _ = send(&mut link, ms(9), 1, 1000);
        let _ = send(&mut link, us(20_500), 2, 500);
        let out = serve_until(&mut link, ms(100));
        assert_eq!(out[0].0, 1);
        assert!(out[1].0 == 2 && out[1].1 >= out[0].1, "{out:?}");
    }

    #[test]
    fn outage_starting_at_departure_does_not_delay_it() {
        let mut spec = spec(Some(8e6), QueueSpec::Unlimited);
        spec.outages = vec![(0.001, 0.002)];
        let mut link: Link<u32> = Link::new(&spec, None, MTU);
        assert_eq!(send(&mut link, ms(0), 1, 1000).service_at(), Some(ms(1)));
    }

    #[test]
    fn trace_outage_loses_opportunities() {
        let text: String = (1..=10).map(|v| format!("{v}\n")).collect();
        let mut link = trace_link(&text, vec![(0.0015, 0.004)]);
        for id in 0..3 {
            let _ = send(&mut link, ms(0), id, 1504);
        }
        assert_eq!(
            serve_until(&mut link, ms(20)),
            [(0, ms(1)), (1, ms(4)), (2, ms(5))]
        );
    }

    #[test]
    fn capacity_excludes_outages() {
        let mut rate_spec = spec(Some(8e6), QueueSpec::Unlimited);
        rate_spec.outages = vec![(0.001, 0.002), (0.009, 0.020)];
        let link: Link<u32> = Link::new(&rate_spec, None, MTU);
        assert_eq!(link.capacity_bytes(ms(0), ms(10)), 8000.0);
        assert_eq!(link.capacity_bytes(ms(5), ms(5)), 0.0);

        let text: String = (1..=10).map(|v| format!("{v}\n")).collect();
        let link = trace_link(&text, vec![(0.0015, 0.004)]);
        // Opportunities at 1..=9 ms in [0, 9.5 ms), minus those at 2 and 3 ms.
        assert_eq!(link.capacity_bytes(ms(0), us(9500)), 7.0 * 1504.0);
    }

    #[test]
    fn overlapping_outages_merge() {
        let outages = normalize_outages(&[(0.003, 0.004), (0.001, 0.002), (0.0015, 0.0025)]);
        assert_eq!(outages, [(ms(1), us(2500)), (ms(3), ms(4))]);
    }
}
