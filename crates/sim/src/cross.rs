//! Competing traffic on a path's bottleneck (`[path.cross]`): single-path TCP bulk flows and a
//! constant-bit-rate load, so that schedulers are judged on shared bottlenecks too.
//!
//! A TCP cross flow is a whole connection of the core (`single` scheduler, one subflow, the
//! scenario's transport with its own congestion control), its data on the path's forward link
//! and its ACKs on the reverse link, queued with the connection's own packets. It starts at
//! time 0 beside the connection (no handshake) and always has data to send. The CBR load is
//! full-size packets (a 1,500-byte IP packet, framed as the link frames it: 1,514 bytes on a
//! constant-rate link) at exact intervals on the forward link; the far end discards them.
//!
//! The world drives these endpoints exactly as it drives the connection's (see `world.rs`);
//! their timers are ordinary events that carry the deadline they were set for, so a timer the
//! endpoint moved since is recognized as stale and skipped.

use mpsched_core::receiver::ReceiverConnection;
use mpsched_core::sched;
use mpsched_core::sender::SenderConnection;
use mpsched_core::time::{Duration, Time};

use crate::scenario::Scenario;

/// Most TCP cross flows on one path.
pub const MAX_FLOWS: u32 = 64;

/// One competing single-path TCP connection.
pub struct CrossFlow {
    /// The scenario path it shares.
    pub path: u8,
    pub tx: SenderConnection,
    pub rx: ReceiverConnection,
    /// Bytes delivered in order to its application.
    pub delivered: u64,
    /// The deadline of each endpoint's pending timer event (`None`: none pending).
    pub tx_armed: Option<Time>,
    pub rx_armed: Option<Time>,
}

impl CrossFlow {
    /// Keep the send buffer full: a bulk sender always has more than it takes, so its writer
    /// sleeps between the times the buffer wakes it ([`SenderConnection::writer_waits`]).
    pub fn refill(&mut self) {
        let free = self.tx.send_buffer_free();
        if free > 0 {
            self.tx.write(free, false);
        }
        self.tx.writer_waits();
    }
}

/// The TCP cross flows of every path of `sc`, in path order, with `mss` (the connection's).
pub fn flows(sc: &Scenario, mss: u32) -> Vec<CrossFlow> {
    let t = &sc.transport;
    let mut out = Vec::new();
    for (p, spec) in sc.paths.iter().enumerate() {
        let cc = spec.cross.cc.as_deref().unwrap_or(&t.cc);
        for _ in 0..spec.cross.tcp_flows {
            let single = sched::build("single", std::slice::from_ref(&spec.name), &[f64::NAN])
                .expect("the single-path scheduler builds for one path");
            let (tx, rx) = crate::endpoints(t, 1, mss, cc, single);
            out.push(CrossFlow {
                path: p as u8,
                tx,
                rx,
                delivered: 0,
                tx_armed: None,
                rx_armed: None,
            });
        }
    }
    out
}

/// Interval between CBR packets of `packet_bytes[p]` (on the wire) on each path `p` (`None`:
/// no CBR load there).
pub fn cbr_intervals(sc: &Scenario, packet_bytes: &[u32]) -> Vec<Option<Duration>> {
    sc.paths
        .iter()
        .zip(packet_bytes)
        .map(|(p, &bytes)| {
            (p.cross.cbr_bps > 0.0).then(|| {
                let ns = f64::from(bytes) * 8.0 / p.cross.cbr_bps * 1e9;
                Duration((ns.round() as u64).max(1))
            })
        })
        .collect()
}

/// Per-path totals for the results.
#[derive(Clone, Debug, Default)]
pub struct CrossStats {
    /// Cross-traffic packets (TCP and CBR) the forward link dropped.
    pub drops: Vec<u64>,
    /// CBR bytes the forward link delivered.
    pub cbr_delivered: Vec<u64>,
}
