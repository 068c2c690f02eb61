//! The discrete-event loop: one sender, one receiver, N paths, one workload.
//!
//! Time is integer nanoseconds; events are totally ordered by (time, insertion sequence), so
//! simultaneous events fire in insertion order and a run is a pure function of scenario, scheduler
//! and seed. Packets in propagation wait in a FIFO per link (a link's delay is constant, so they
//! leave it in order); the event heap holds only small, copyable events.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use mpsched_core::packet::{Ack, DataSegment};
use mpsched_core::receiver::{Arrival, ReceiverConnection};
use mpsched_core::sender::{SenderConnection, TxKind};
use mpsched_core::time::Time;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

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
    /// The request for chunk k reaches the sender.
    RequestArrives(u32),
}

struct SimPath {
    fwd: Link<DataSegment>,
    rev: Link<Ack>,
    fwd_prop: VecDeque<(Time, DataSegment)>,
    rev_prop: VecDeque<(Time, Ack)>,
    fwd_loss: f64,
    rev_loss: f64,
    fwd_rng: Pcg64,
    rev_rng: Pcg64,
}

pub struct World<'a> {
    now: Time,
    heap: BinaryHeap<Reverse<(Time, u64, Ev)>>,
    seq: u64,
    pub(crate) events: u64,
    paths: Vec<SimPath>,
    pub(crate) sender: SenderConnection,
    pub(crate) receiver: ReceiverConnection,
    sender_timer: Option<Time>,
    receiver_timer: Option<Time>,
    recv_offset: i64,
    pub(crate) workload: Workload,
    pub(crate) rec: Recorder,
    trace: Option<&'a mut PacketTrace>,
    max_time: Time,
    pub(crate) truncated: bool,
}

impl<'a> World<'a> {
    pub fn new(
        sc: &Scenario,
        traces: &[LinkTraces],
        sender: SenderConnection,
        receiver: ReceiverConnection,
        seed: u64,
        trace: Option<&'a mut PacketTrace>,
    ) -> Self {
        // Every random source derives from the run's seed in a fixed order: path by path,
        // forward then reverse.
        let mut master = Pcg64::seed_from_u64(seed);
        let mtu = sc.transport.mss + mpsched_core::packet::HEADER_BYTES;
        let paths = sc
            .paths
            .iter()
            .zip(traces)
            .map(|(p, (tf, tr))| SimPath {
                fwd: Link::new(&p.forward, tf.clone(), mtu),
                rev: Link::new(&p.reverse, tr.clone(), mtu),
                fwd_prop: VecDeque::new(),
                rev_prop: VecDeque::new(),
                fwd_loss: p.forward.loss,
                rev_loss: p.reverse.loss,
                fwd_rng: Pcg64::seed_from_u64(master.gen()),
                rev_rng: Pcg64::seed_from_u64(master.gen()),
            })
            .collect();
        let npaths = sc.paths.len();
        World {
            now: Time::ZERO,
            heap: BinaryHeap::new(),
            seq: 0,
            events: 0,
            paths,
            sender,
            receiver,
            sender_timer: None,
            receiver_timer: None,
            recv_offset: (sc.sim.clock_offset_s * 1e9).round() as i64,
            workload: Workload::new(&sc.workload),
            rec: Recorder::new(npaths),
            trace,
            max_time: Time::from_secs_f64(sc.sim.max_time_s),
            truncated: false,
        }
    }

    fn schedule(&mut self, at: Time, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
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
        let stop_at = self
            .workload
            .stop_time()
            .unwrap_or(self.max_time)
            .min(self.max_time);
        while let Some(Reverse((t, _, ev))) = self.heap.pop() {
            if t > stop_at {
                self.truncated = self.workload.stop_time().is_none_or(|s| s > self.max_time);
                self.now = stop_at;
                break;
            }
            self.now = t;
            self.events += 1;
            self.dispatch(ev);
            if self.workload.finished() {
                break;
            }
        }
        if self.heap.is_empty() && !self.workload.finished() && self.workload.stop_time().is_none()
        {
            // Nothing left to happen but the work is not done (e.g. a path that never recovers).
            self.truncated = true;
        }
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::FwdService(p) => {
                let now = self.now;
                let path = &mut self.paths[p as usize];
                if let Some((seg, arrive)) = path.fwd.service(now) {
                    path.fwd_prop.push_back((arrive, seg));
                    self.schedule(arrive, Ev::FwdArrive(p));
                }
                if let Some(t) = self.paths[p as usize].fwd.next_service() {
                    self.schedule(t, Ev::FwdService(p));
                }
            }
            Ev::RevService(p) => {
                let now = self.now;
                let path = &mut self.paths[p as usize];
                if let Some((ack, arrive)) = path.rev.service(now) {
                    path.rev_prop.push_back((arrive, ack));
                    self.schedule(arrive, Ev::RevArrive(p));
                }
                if let Some(t) = self.paths[p as usize].rev.next_service() {
                    self.schedule(t, Ev::RevService(p));
                }
            }
            Ev::FwdArrive(p) => {
                let (_, seg) = self.paths[p as usize]
                    .fwd_prop
                    .pop_front()
                    .expect("arrival event without packet");
                let rnow = self.receiver_clock();
                self.receiver.handle_input(rnow, &seg);
                while let Some(a) = self.receiver.poll_event() {
                    self.on_arrival(a);
                }
                self.pump_receiver();
            }
            Ev::RevArrive(p) => {
                let (_, ack) = self.paths[p as usize]
                    .rev_prop
                    .pop_front()
                    .expect("arrival event without packet");
                let snow = self.sender_clock();
                self.sender.handle_input(snow, &ack);
                if let Some(tr) = self.trace.as_deref_mut() {
                    tr.push(self.now, Side::Sender, p, EventKind::Ack, ack.data_ack, 0);
                }
                self.refill();
                self.pump_sender();
            }
            Ev::SenderTimer => {
                if self.sender_timer == Some(self.now) {
                    self.sender_timer = None;
                    let snow = self.sender_clock();
                    self.sender.handle_timeout(snow);
                    self.pump_sender();
                }
            }
            Ev::ReceiverTimer => {
                if self.receiver_timer == Some(self.now) {
                    self.receiver_timer = None;
                    let rnow = self.receiver_clock();
                    self.receiver.handle_timeout(rnow);
                    self.pump_receiver();
                }
            }
            Ev::Request(k) => {
                self.workload.on_request(k, self.now);
                // The request travels on the first path's reverse direction (the initial
                // subflow carries the request, as with MPTCP).
                let at = self.now + self.paths[0].rev.delay();
                self.schedule(at, Ev::RequestArrives(k));
            }
            Ev::RequestArrives(k) => {
                self.workload.on_request_arrives(k);
                self.refill();
                self.pump_sender();
            }
        }
    }

    /// Let the application write what the workload has ready and the send buffer takes.
    fn refill(&mut self) {
        let now = self.now;
        self.workload.refill(&mut self.sender, now);
    }

    fn on_arrival(&mut self, a: Arrival) {
        let now = self.now;
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
            if let Some(tr) = self.trace.as_deref_mut() {
                let k = match kind {
                    TxKind::New => EventKind::Send,
                    TxKind::Reinject => EventKind::Reinject,
                    TxKind::Retransmit => EventKind::Retransmit,
                };
                tr.push(self.now, Side::Sender, seg.path, k, seg.dsn, seg.len);
            }
            let path = &mut self.paths[p];
            let lose = path.fwd_loss > 0.0 && path.fwd_rng.gen::<f64>() < path.fwd_loss;
            let r = path.fwd.enqueue(self.now, seg, seg.wire_len(), lose);
            if let Some(t) = r.service_at() {
                self.schedule(t, Ev::FwdService(p as u8));
            }
        }
        let t = self.sender.poll_timeout().map(Self::sim_time_of_sender);
        if t != self.sender_timer {
            self.sender_timer = t;
            if let Some(t) = t {
                self.schedule(t.max(self.now), Ev::SenderTimer);
                self.sender_timer = Some(t.max(self.now));
            }
        }
    }

    fn pump_receiver(&mut self) {
        let rnow = self.receiver_clock();
        while let Some(ack) = self.receiver.poll_transmit(rnow) {
            let p = ack.path as usize;
            let path = &mut self.paths[p];
            let lose = path.rev_loss > 0.0 && path.rev_rng.gen::<f64>() < path.rev_loss;
            let r = path.rev.enqueue(self.now, ack, ack.wire_len(), lose);
            if let Some(t) = r.service_at() {
                self.schedule(t, Ev::RevService(p as u8));
            }
        }
        let t = self
            .receiver
            .poll_timeout()
            .map(|t| self.sim_time_of_receiver(t));
        if t != self.receiver_timer {
            self.receiver_timer = t;
            if let Some(t) = t {
                self.schedule(t.max(self.now), Ev::ReceiverTimer);
                self.receiver_timer = Some(t.max(self.now));
            }
        }
    }

    pub(crate) fn fwd_link(&self, p: usize) -> &Link<DataSegment> {
        &self.paths[p].fwd
    }
}
