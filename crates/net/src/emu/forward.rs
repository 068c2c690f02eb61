//! The delay line: one thread in the router namespace moves Ethernet frames between each path's
//! two veths through the simulator's own link model (`mpsched_sim::link::Link`: drop-tail queue
//! served at line rate or by a mahimahi trace, outages, then the propagation delay), so that a
//! sim-vs-kernel comparison compares transports, not two link models.
//!
//! Why AF_PACKET on veths rather than TUN: the frames stay Ethernet frames end to end (no
//! routing hop, no TTL change, no second qdisc in the router), one `recv` and one `send` per
//! frame, and the router namespace holds nothing else. Why not tbf/htb for the rate: tbf keeps
//! `rate × latency + burst` and serves bursts at the peer's speed, which is not the simulator's
//! byte-exact serialization; the link model here is.
//!
//! Timing: the thread sleeps in `ppoll` with a nanosecond deadline (hrtimer; timer slack set to
//! 1 ns, SCHED_FIFO when allowed). The link's schedule is computed from the deadlines, never from
//! when the thread woke, so lateness does not accumulate; it is measured and reported. Frames
//! enter the link model at the kernel's receive timestamp, not when the thread got to read them.
//! On a virtual machine a halted vCPU wakes hundreds of microseconds late (measured on the 2-vCPU
//! Firecracker VM this was built on: a 2 ms `ppoll` woke 170-340 us late at the median), so the
//! thread sleeps until shortly before a deadline and spins the rest ([`Waker`]): the spin window
//! follows the wake-up lateness it measures, between 20 us and 1 ms.
//!
//! Wire length: a constant-rate link serializes the whole Ethernet frame (what tbf on a veth
//! counts too: 1,514 B for a full-size segment); a trace link charges the IP packet plus 4 bytes,
//! as mahimahi does with its TUN header (crates/sim/src/trace.rs `OPPORTUNITY_BYTES`), so one
//! full-size packet uses one delivery opportunity.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mpsched_core::time::Time;
use mpsched_sim::link::{EnqueueResult, Link};
use mpsched_sim::scenario::{LinkSpec, Scenario};
use mpsched_sim::trace::Trace;
use rand::Rng;
use rand::SeedableRng;
use rand_pcg::Pcg64;
use serde::Serialize;

use super::sys::{self, PacketSocket};

const ETH_HEADER: usize = 14;
/// Longest sleep without looking at control requests (stop, reset).
const MAX_SLEEP_NS: u64 = 10_000_000;
/// Bounds of the spin window before a deadline.
const SPIN_MIN_NS: u64 = 20_000;
const SPIN_MAX_NS: u64 = 1_000_000;
/// Wake-ups remembered to size the spin window.
const WAKE_SAMPLES: usize = 64;

/// Sleeps until a deadline as precisely as the host allows: `ppoll` until `spin` before it, then
/// polls without sleeping. `spin` is the 90th percentile of how late the last [`WAKE_SAMPLES`]
/// timer wake-ups were (clamped), so a quiet host spins little and a noisy one pays CPU for
/// timing.
struct Waker {
    late: [u64; WAKE_SAMPLES],
    next: usize,
    filled: usize,
    spin: u64,
}

impl Waker {
    fn new() -> Waker {
        Waker {
            late: [0; WAKE_SAMPLES],
            next: 0,
            filled: 0,
            spin: SPIN_MAX_NS,
        }
    }

    fn record(&mut self, late: u64) {
        self.late[self.next] = late;
        self.next = (self.next + 1) % WAKE_SAMPLES;
        self.filled = (self.filled + 1).min(WAKE_SAMPLES);
        if self.next % 8 == 0 {
            let mut v = self.late[..self.filled].to_vec();
            v.sort_unstable();
            let p90 = v[(v.len() - 1) * 9 / 10];
            self.spin = (p90 + p90 / 4).clamp(SPIN_MIN_NS, SPIN_MAX_NS);
        }
    }

    /// Returns when `deadline` (CLOCK_MONOTONIC ns) has passed or a descriptor is readable.
    /// `precise`: the deadline is a frame's due time (else only a periodic look at controls).
    fn wait(&mut self, fds: &mut [libc::pollfd], deadline: u64, precise: bool) -> io::Result<()> {
        if !precise {
            return sys::poll_until(fds, Some(deadline)).map(|_| ());
        }
        let wake_at = deadline.saturating_sub(self.spin);
        if wake_at > sys::mono_ns() {
            if sys::poll_until(fds, Some(wake_at))? > 0 {
                return Ok(());
            }
            self.record(sys::mono_ns().saturating_sub(wake_at));
        }
        while sys::mono_ns() < deadline {
            if sys::poll_until(fds, Some(0))? > 0 {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        Ok(())
    }
}

/// Counters of one direction of one path since the last reset. Times are ns since the reset.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DirStats {
    pub frames_in: u64,
    /// TCP payload offered to the link (what the sender put on this path, retransmissions
    /// included, before any drop): the simulator's `bytes_by_path`.
    pub payload_bytes_in: u64,
    /// The largest TCP payload of one frame offered (the sender's segment size).
    pub max_payload_in: u32,
    pub frames_out: u64,
    pub wire_bytes_out: u64,
    /// TCP payload delivered, retransmissions included.
    pub payload_bytes: u64,
    /// TCP payload delivered that extends its flow's highest sequence number (new data).
    pub new_payload_bytes: u64,
    /// When the last frame carrying TCP payload was delivered.
    pub last_payload_ns: Option<u64>,
    pub dropped_queue: u64,
    pub dropped_loss: u64,
    pub dropped_outage: u64,
    /// Frames the kernel dropped before the emulator read them, or could not send.
    pub dropped_host: u64,
    /// Frames larger than an MTU (offloads not disabled): dropped and counted.
    pub oversize: u64,
    pub max_queue_bytes: u64,
    /// How late frames left compared with the link model's delivery time.
    pub late_ns_sum: u64,
    pub late_ns_max: u64,
}

/// Between the forwarding thread and whoever runs it.
#[derive(Default)]
pub struct Control {
    pub stop: AtomicBool,
    /// Bumped by [`Control::reset`]; the thread restarts every link at its next wake-up.
    reset_gen: AtomicU64,
    state: Mutex<Snapshot>,
}

#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub generation: u64,
    /// CLOCK_MONOTONIC ns of the last reset: time zero of the links (outages, traces).
    pub epoch_ns: u64,
    /// Per path: (forward = server to client, reverse).
    pub paths: Vec<(DirStats, DirStats)>,
}

impl Control {
    /// Restarts every link (empty queues, time zero = now, counters cleared) and waits until
    /// the forwarding thread has done it. Returns the new epoch.
    pub fn reset(&self) -> u64 {
        let gen = self.reset_gen.fetch_add(1, Ordering::SeqCst) + 1;
        loop {
            {
                let s = self.state.lock().unwrap();
                if s.generation >= gen {
                    return s.epoch_ns;
                }
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        self.state.lock().unwrap().clone()
    }
}

struct Dir {
    spec: LinkSpec,
    trace: Option<Arc<Trace>>,
    link: Link<Vec<u8>>,
    /// Frames that left the queue, with their delivery time (absolute ns), in order.
    line: VecDeque<(u64, Vec<u8>)>,
    rng: Pcg64,
    stats: DirStats,
    /// CLOCK_MONOTONIC ns up to which the link has been advanced: no frame enters before it.
    served_to: u64,
    /// Highest sequence number seen per TCP flow (by addresses and ports).
    flows: HashMap<[u8; 12], u32>,
}

impl Dir {
    fn new(spec: &LinkSpec, trace: Option<Arc<Trace>>, seed: u64) -> Dir {
        let mtu = if trace.is_some() { 1504 } else { 1514 };
        Dir {
            link: Link::new(spec, trace.clone(), mtu),
            spec: spec.clone(),
            trace,
            line: VecDeque::new(),
            rng: Pcg64::seed_from_u64(seed),
            stats: DirStats::default(),
            served_to: 0,
            flows: HashMap::new(),
        }
    }

    fn reset(&mut self) {
        let mtu = if self.trace.is_some() { 1504 } else { 1514 };
        self.link = Link::new(&self.spec, self.trace.clone(), mtu);
        self.line.clear();
        self.stats = DirStats::default();
        self.flows.clear();
    }

    fn wire_len(&self, frame: &[u8]) -> u32 {
        if self.trace.is_some() {
            (frame.len().saturating_sub(ETH_HEADER) + 4) as u32
        } else {
            frame.len() as u32
        }
    }

    fn offer(&mut self, now_rel: u64, frame: Vec<u8>) {
        self.stats.frames_in += 1;
        if let Some((_, _, len, _)) = tcp_segment(&frame) {
            self.stats.payload_bytes_in += u64::from(len);
            self.stats.max_payload_in = self.stats.max_payload_in.max(len);
        }
        if frame.len() > 1514 {
            self.stats.oversize += 1;
            return;
        }
        let lose = self.spec.loss > 0.0 && self.rng.gen::<f64>() < self.spec.loss;
        let wire = self.wire_len(&frame);
        match self.link.enqueue(Time(now_rel), frame, wire, lose) {
            EnqueueResult::Queued { .. } => {
                self.stats.max_queue_bytes =
                    self.stats.max_queue_bytes.max(self.link.queued_bytes())
            }
            EnqueueResult::Dropped(r) => match r {
                mpsched_sim::link::DropReason::QueueFull => self.stats.dropped_queue += 1,
                mpsched_sim::link::DropReason::RandomLoss => self.stats.dropped_loss += 1,
                mpsched_sim::link::DropReason::Outage => self.stats.dropped_outage += 1,
            },
        }
    }

    /// Completes every transmission the link finishes by `until` (absolute ns), moving the
    /// frames into the delay line. Called before each arrival is offered, at the arrival's own
    /// time: the simulator's event loop serves a departure due before an arrival first, and the
    /// emulator must too. The thread reads a batch of frames after it wakes, often later than
    /// a departure was due; offering them before that departure would count a frame already
    /// sent as queued, and the drop-tail queue would overflow a packet early. In slow start
    /// that moved the first WiFi loss of a 1 MiB MPTCP download a whole drop cycle earlier than
    /// the simulator's (docs/fidelity.md).
    fn serve_until(&mut self, epoch: u64, until: u64) {
        self.served_to = self.served_to.max(until);
        while let Some(t) = self.link.next_service() {
            if epoch + t.0 > until {
                break;
            }
            let (frame, arrive) = self.link.service(t).expect("due service");
            self.line.push_back((epoch + arrive.0, frame));
        }
    }

    /// Moves what is due by `now` (absolute ns) through the queue and out of the delay line.
    fn advance(&mut self, epoch: u64, now: u64, out: &PacketSocket) -> io::Result<()> {
        self.serve_until(epoch, now);
        while let Some(&(due, _)) = self.line.front() {
            if due > now {
                break;
            }
            let (_, frame) = self.line.pop_front().unwrap();
            if !out.send(&frame)? {
                self.stats.dropped_host += 1;
                continue;
            }
            let late = sys::mono_ns().saturating_sub(due);
            self.stats.late_ns_sum += late;
            self.stats.late_ns_max = self.stats.late_ns_max.max(late);
            self.stats.frames_out += 1;
            self.stats.wire_bytes_out += frame.len() as u64;
            self.account_tcp(&frame, due - epoch);
        }
        Ok(())
    }

    fn next_event(&self, epoch: u64) -> Option<u64> {
        let a = self.link.next_service().map(|t| epoch + t.0);
        let b = self.line.front().map(|&(t, _)| t);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn account_tcp(&mut self, f: &[u8], at_rel: u64) {
        let Some((key, seq, len, syn)) = tcp_segment(f) else {
            return;
        };
        if syn {
            self.flows.insert(key, seq.wrapping_add(1));
        }
        if len == 0 {
            return;
        }
        self.stats.payload_bytes += u64::from(len);
        let end = seq.wrapping_add(len);
        // Any payload, retransmissions too: a hole filled late is the path's last byte.
        self.stats.last_payload_ns = Some(at_rel);
        let high = *self.flows.entry(key).or_insert(seq);
        let ahead = end.wrapping_sub(high) as i32;
        if ahead > 0 {
            // Bytes of a hole count when the segment beyond it arrives, so that the total is
            // the flow's highest sequence number minus its first: each byte once.
            self.stats.new_payload_bytes += ahead as u64;
            self.flows.insert(key, end);
        }
    }
}

/// (flow key, sequence number, payload length, SYN) of an IPv4 TCP frame.
fn tcp_segment(f: &[u8]) -> Option<([u8; 12], u32, u32, bool)> {
    if f.len() < ETH_HEADER + 20 || f[12..14] != [0x08, 0x00] {
        return None;
    }
    let ip = &f[ETH_HEADER..];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if ip[9] != 6 || ip.len() < ihl + 20 || total > ip.len() {
        return None;
    }
    let tcp = &ip[ihl..];
    let doff = usize::from(tcp[12] >> 4) * 4;
    let mut key = [0u8; 12];
    key[..8].copy_from_slice(&ip[12..20]);
    key[8..].copy_from_slice(&tcp[..4]);
    let seq = u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]);
    let len = total.saturating_sub(ihl + doff) as u32;
    Some((key, seq, len, tcp[13] & 0x02 != 0))
}

struct PathIo {
    client_side: PacketSocket,
    server_side: PacketSocket,
    forward: Dir,
    reverse: Dir,
}

/// Opens the router's packet sockets (the caller's thread must be in the router namespace)
/// and loads every trace once.
pub struct Forwarder {
    paths: Vec<PathIo>,
    control: Arc<Control>,
}

impl Forwarder {
    pub fn new(sc: &Scenario, seed: u64, control: Arc<Control>) -> io::Result<Forwarder> {
        let load = |spec: &LinkSpec| -> io::Result<Option<Arc<Trace>>> {
            match &spec.trace {
                Some(p) => Trace::load(p)
                    .map(|t| Some(Arc::new(t)))
                    .map_err(|e| io::Error::other(format!("trace {p}: {e}"))),
                None => Ok(None),
            }
        };
        let mut paths = Vec::new();
        for (i, p) in sc.paths.iter().enumerate() {
            let s = seed.wrapping_mul(0x9e37_79b9).wrapping_add(2 * i as u64);
            paths.push(PathIo {
                client_side: PacketSocket::open(&format!("rc{i}"))?,
                server_side: PacketSocket::open(&format!("rs{i}"))?,
                forward: Dir::new(&p.forward, load(&p.forward)?, s),
                reverse: Dir::new(&p.reverse, load(&p.reverse)?, s + 1),
            });
        }
        Ok(Forwarder { paths, control })
    }

    /// Forwards until `control.stop` or `extra_stop` is set.
    pub fn run(mut self, extra_stop: &AtomicBool) -> io::Result<()> {
        sys::precise_timing();
        let mut fds: Vec<libc::pollfd> = self
            .paths
            .iter()
            .flat_map(|p| [p.server_side.raw(), p.client_side.raw()])
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let mut buf = vec![0u8; 65536];
        let mut waker = Waker::new();
        let mut generation = 0;
        let mut epoch = sys::mono_ns();
        self.publish(generation, epoch);
        loop {
            if self.control.stop.load(Ordering::Relaxed) || extra_stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let wanted = self.control.reset_gen.load(Ordering::SeqCst);
            if wanted != generation {
                for p in &mut self.paths {
                    p.forward.reset();
                    p.reverse.reset();
                }
                generation = wanted;
                epoch = sys::mono_ns();
                self.publish(generation, epoch);
            }
            let now = sys::mono_ns();
            // Kernel stamps are CLOCK_REALTIME; this maps them onto the link's monotonic time.
            let real_minus_mono = sys::real_ns() as i128 - now as i128;
            for p in &mut self.paths {
                for (sock, dir) in [
                    (&p.server_side, &mut p.forward),
                    (&p.client_side, &mut p.reverse),
                ] {
                    while let Some((n, stamp)) = sock.recv(&mut buf)? {
                        // The arrival, never before what the link has already served nor in the
                        // future (a clock step would otherwise reorder the model's input).
                        let at = stamp.map_or(now, |r| {
                            (r as i128 - real_minus_mono).clamp(dir.served_to as i128, now as i128)
                                as u64
                        });
                        dir.serve_until(epoch, at);
                        dir.offer(at.saturating_sub(epoch), buf[..n.min(buf.len())].to_vec());
                    }
                    dir.stats.dropped_host += sock.drops();
                }
            }
            let now = sys::mono_ns();
            let mut deadline = now + MAX_SLEEP_NS;
            let mut precise = false;
            let mut changed = false;
            for p in &mut self.paths {
                let before = p.forward.stats.frames_out + p.reverse.stats.frames_out;
                p.forward.advance(epoch, now, &p.client_side)?;
                p.reverse.advance(epoch, now, &p.server_side)?;
                changed |= before != p.forward.stats.frames_out + p.reverse.stats.frames_out;
                for d in [&p.forward, &p.reverse] {
                    if let Some(t) = d.next_event(epoch) {
                        if t <= deadline {
                            deadline = t;
                            precise = true;
                        }
                    }
                }
            }
            if changed {
                self.publish(generation, epoch);
            }
            waker.wait(&mut fds, deadline, precise)?;
        }
    }

    fn publish(&self, generation: u64, epoch_ns: u64) {
        let mut s = self.control.state.lock().unwrap();
        s.generation = generation;
        s.epoch_ns = epoch_ns;
        s.paths = self
            .paths
            .iter()
            .map(|p| (p.forward.stats.clone(), p.reverse.stats.clone()))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(seq: u32, payload: usize, flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; ETH_HEADER + 20 + 32 + payload];
        f[12] = 0x08;
        let ip = &mut f[ETH_HEADER..];
        ip[0] = 0x45;
        let total = (20 + 32 + payload) as u16;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip[9] = 6;
        let tcp = &mut ip[20..];
        tcp[4..8].copy_from_slice(&seq.to_be_bytes());
        tcp[12] = 8 << 4;
        tcp[13] = flags;
        f
    }

    fn dir() -> Dir {
        let spec = LinkSpec {
            rate_bps: None,
            trace: None,
            delay_s: 0.0,
            queue: Default::default(),
            loss: 0.0,
            outages: vec![],
            handover: None,
        };
        Dir::new(&spec, None, 1)
    }

    #[test]
    fn tcp_segment_reads_payload_length_after_options() {
        let (_, seq, len, syn) = tcp_segment(&frame(7, 1448, 0x10)).unwrap();
        assert_eq!((seq, len, syn), (7, 1448, false));
    }

    #[test]
    fn retransmission_counts_as_payload_not_new() {
        let mut d = dir();
        d.account_tcp(&frame(99, 0, 0x02), 1);
        d.account_tcp(&frame(100, 1000, 0x10), 2);
        d.account_tcp(&frame(100, 1000, 0x10), 3);
        d.account_tcp(&frame(1100, 500, 0x10), 4);
        assert_eq!(d.stats.payload_bytes, 2500);
        assert_eq!(d.stats.new_payload_bytes, 1500);
        assert_eq!(d.stats.last_payload_ns, Some(4));
    }

    #[test]
    fn hole_counts_once_when_filled_or_passed() {
        let mut d = dir();
        d.account_tcp(&frame(99, 0, 0x02), 1);
        d.account_tcp(&frame(100, 1000, 0x10), 2);
        d.account_tcp(&frame(2100, 1000, 0x10), 3);
        d.account_tcp(&frame(1100, 1000, 0x10), 4);
        assert_eq!(d.stats.new_payload_bytes, 3000);
        assert_eq!(d.stats.last_payload_ns, Some(4));
    }

    #[test]
    fn new_bytes_survive_sequence_wraparound() {
        let mut d = dir();
        d.account_tcp(&frame(u32::MAX - 9, 0, 0x02), 1);
        d.account_tcp(&frame(u32::MAX - 8, 100, 0x10), 2);
        assert_eq!(d.stats.new_payload_bytes, 100);
    }

    /// 10 Mbit/s, 3-frame drop-tail queue: a 1,514-byte frame takes 1,211.2 us.
    fn bottleneck() -> Dir {
        let spec = LinkSpec {
            rate_bps: Some(10e6),
            queue: mpsched_sim::scenario::QueueSpec::Packets(3),
            ..dir().spec
        };
        Dir::new(&spec, None, 1)
    }

    #[test]
    fn a_departure_due_before_an_arrival_is_served_first() {
        // Frames at 0 until the queue refuses one; the first leaves at 1,211.2 us. Another
        // frame stamped at 1,300 us but read late (the thread woke at 2,000 us, say) finds
        // room, as it does in the simulator's time-ordered event loop.
        let epoch = 1_000_000;
        let full = || frame(0, 1448, 0x10);
        let fill = |d: &mut Dir| {
            while d.stats.dropped_queue == 0 {
                d.serve_until(epoch, epoch);
                d.offer(0, full());
            }
        };
        let at = epoch + 1_300_000;
        let mut d = bottleneck();
        fill(&mut d);
        d.serve_until(epoch, at);
        d.offer(at - epoch, full());
        assert_eq!(
            d.stats.dropped_queue, 1,
            "room left by the departure at 1,211.2 us"
        );
        assert_eq!(d.line.len(), 1);
        // Offered before the departure is served (the old order), the same frame is dropped.
        let mut d = bottleneck();
        fill(&mut d);
        d.offer(at - epoch, full());
        assert_eq!(d.stats.dropped_queue, 2);
    }

    #[test]
    fn spin_window_follows_wake_lateness_within_bounds() {
        let mut w = Waker::new();
        assert_eq!(
            w.spin, SPIN_MAX_NS,
            "spins fully until it has measured the host"
        );
        for _ in 0..WAKE_SAMPLES {
            w.record(100_000);
        }
        assert_eq!(w.spin, 125_000);
        for _ in 0..WAKE_SAMPLES {
            w.record(0);
        }
        assert_eq!(w.spin, SPIN_MIN_NS);
        for _ in 0..WAKE_SAMPLES {
            w.record(50_000_000);
        }
        assert_eq!(w.spin, SPIN_MAX_NS);
    }

    #[test]
    fn spin_window_ignores_the_slowest_tenth() {
        let mut w = Waker::new();
        for i in 0..WAKE_SAMPLES {
            w.record(if i % 16 == 0 { 900_000 } else { 40_000 });
        }
        assert_eq!(w.spin, 50_000);
    }
}
