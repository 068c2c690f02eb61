//! The sending endpoint of a multipath connection: subflows, meta buffer, scheduler, estimator.
//!
//! Driven only through `handle_input` / `handle_timeout` / `poll_transmit` / `poll_timeout`
//! (and `write` for the application), with time passed in. It never reads a clock.

use crate::cc::{CcKind, CoupledView};
use crate::estimate::Estimator;
use crate::meta::send::SendBuffer;
use crate::packet::{Ack, DataSegment, PathId, MAX_PATHS};
use crate::sched::{Assignment, SchedCtx, SchedEvent, Scheduler};
use crate::subflow::sender::{Received, SubflowSender};
use crate::time::{Duration, Time};

#[derive(Clone, Debug)]
pub struct SenderConfig {
    pub npaths: usize,
    pub cc: CcKind,
    pub mss: u32,
    pub init_cwnd: u32,
    pub send_buffer: u64,
    /// The peer's receive buffer: the window assumed before its first ACK.
    pub initial_rwnd: u64,
    pub min_rto: Duration,
    /// RFC 5681 §4.1 restart after idle (Linux's default `tcp_slow_start_after_idle = 1`).
    pub slow_start_after_idle: bool,
}

/// Per-path counters a driver reports as metrics.
#[derive(Clone, Copy, Debug, Default)]
pub struct PathStats {
    /// Sum and count of free cwnd (bytes) sampled at every ACK arrival (seed 002 §5.1.2).
    pub free_cwnd_sum: f64,
    pub acks: u64,
    /// Sum of srtt over ACKs, for the average.
    pub srtt_sum_s: f64,
    pub srtt_samples: u64,
}

#[derive(Debug)]
pub struct SenderConnection {
    subflows: Vec<SubflowSender>,
    meta: SendBuffer,
    sched: Box<dyn Scheduler>,
    est: Estimator,
    stats: Vec<PathStats>,
    received: Vec<Received>,
    penalties: Vec<PathId>,
    /// Assignments the scheduler made that the connection refused (a scheduler bug).
    refused: u64,
    /// Round-robin start for subflow retransmissions, so no subflow starves another.
    retx_turn: usize,
}

/// What `poll_transmit` produced beyond the segment itself, for traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxKind {
    New,
    /// Sent on this subflow for data another subflow carried before.
    Reinject,
    /// Subflow-level retransmission.
    Retransmit,
}

impl SenderConnection {
    pub fn new(cfg: &SenderConfig, sched: Box<dyn Scheduler>) -> Self {
        assert!(cfg.npaths >= 1 && cfg.npaths <= MAX_PATHS);
        SenderConnection {
            subflows: (0..cfg.npaths)
                .map(|p| {
                    let mut sf = SubflowSender::new(
                        p as PathId,
                        cfg.cc,
                        cfg.mss,
                        cfg.init_cwnd,
                        cfg.min_rto,
                    );
                    sf.set_restart_after_idle(cfg.slow_start_after_idle);
                    sf
                })
                .collect(),
            meta: SendBuffer::new(cfg.mss, cfg.send_buffer, cfg.initial_rwnd),
            sched,
            est: Estimator::new(cfg.npaths),
            stats: vec![PathStats::default(); cfg.npaths],
            received: Vec::new(),
            penalties: Vec::new(),
            refused: 0,
            retx_turn: 0,
        }
    }

    // ---- application ---------------------------------------------------------------------

    /// Queue application data; `end_of_chunk` is the hint API of seed 000 §5.
    pub fn write(&mut self, bytes: u64, end_of_chunk: bool) -> u64 {
        self.meta.write(bytes, end_of_chunk)
    }
    pub fn send_buffer_free(&self) -> u64 {
        self.meta.free_space()
    }

    // ---- reading -------------------------------------------------------------------------

    pub fn subflows(&self) -> &[SubflowSender] {
        &self.subflows
    }
    pub fn meta(&self) -> &SendBuffer {
        &self.meta
    }
    pub fn estimator(&self) -> &Estimator {
        &self.est
    }
    pub fn scheduler_name(&self) -> &'static str {
        self.sched.name()
    }
    /// The one path a single-path scheduler uses ([`Scheduler::only_path`]).
    pub fn scheduler_only_path(&self) -> Option<PathId> {
        self.sched.only_path()
    }
    pub fn path_stats(&self) -> &[PathStats] {
        &self.stats
    }
    pub fn refused_assignments(&self) -> u64 {
        self.refused
    }
    /// Every byte written has been acknowledged at the data level.
    pub fn all_acked(&self) -> bool {
        self.meta.data_ack() == self.meta.written()
    }

    // ---- connection timeline ---------------------------------------------------------------

    /// Subflow `p` exists but its handshake has not completed: no scheduler may use it and the
    /// connection refuses assignments to it (a driver that models the MPTCP handshakes calls
    /// this before the first `poll_transmit`; without it every subflow is usable at once).
    pub fn set_subflow_pending(&mut self, p: PathId) {
        self.subflows[p as usize].set_pending();
    }

    /// Subflow `p`'s handshake completed at the server (the third ACK arrived; for a joined
    /// subflow, the MP_JOIN ACK: RFC 8684 §3.2). `handshake_rtt` seeds its RTT estimate.
    pub fn set_subflow_established(&mut self, p: PathId, handshake_rtt: Option<Duration>) {
        self.subflows[p as usize].establish(handshake_rtt);
    }

    // ---- input ---------------------------------------------------------------------------

    pub fn handle_input(&mut self, now: Time, ack: &Ack) {
        let p = ack.path as usize;
        if p >= self.subflows.len() {
            return;
        }
        let mut windows = [(0u64, None); MAX_PATHS];
        for (w, s) in windows.iter_mut().zip(&self.subflows) {
            *w = (s.cwnd(), s.srtt());
        }
        let coupled = CoupledView {
            subflows: &windows[..self.subflows.len()],
        };
        self.received.clear();
        let out = self.subflows[p].on_ack(now, ack, coupled, &mut self.received);
        for r in &self.received {
            self.meta.on_received(r.meta_seg);
        }
        if let (Some(echo), Some((sent, bif))) = (ack.owd_echo, out.echoed) {
            self.est.on_owd_sample(p, sent, bif, echo.recv_time);
        }
        if let Some(r) = out.rate_sample {
            self.est.on_bandwidth_sample(p, r.bps, r.app_limited);
        }
        let sf = &self.subflows[p];
        let st = &mut self.stats[p];
        st.acks += 1;
        st.free_cwnd_sum += sf.cwnd_free() as f64;
        if let Some(s) = sf.srtt() {
            st.srtt_sum_s += s.as_secs_f64();
            st.srtt_samples += 1;
        }
        let old_data_ack = self.meta.data_ack();
        self.meta.on_data_ack(ack.data_ack, ack.rwnd);

        let path = ack.path;
        self.notify(
            now,
            SchedEvent::Ack {
                path,
                newly_acked: out.newly_acked_bytes,
                rtt: out.rtt_sample,
            },
        );
        if out.entered_recovery {
            self.notify(now, SchedEvent::Loss { path });
        }
        if self.meta.data_ack() > old_data_ack {
            let data_ack = self.meta.data_ack();
            self.notify(now, SchedEvent::DataAck { data_ack });
        }
    }

    fn notify(&mut self, now: Time, ev: SchedEvent) {
        let mut ctx = SchedCtx::new(
            now,
            &self.subflows,
            &mut self.meta,
            &self.est,
            &mut self.penalties,
        );
        self.sched.on_event(&mut ctx, &ev);
        self.apply_penalties(now);
    }

    fn apply_penalties(&mut self, now: Time) {
        for p in self.penalties.drain(..) {
            self.subflows[p as usize].penalize(now);
        }
    }

    // ---- output --------------------------------------------------------------------------

    /// The next segment to put on the wire, if any may be sent now.
    pub fn poll_transmit(&mut self, now: Time) -> Option<(DataSegment, TxKind)> {
        // Subflow-level retransmissions first (RFC 6675 NextSeg rule 1), round robin.
        let n = self.subflows.len();
        for k in 0..n {
            let p = (self.retx_turn + k) % n;
            let sf = &mut self.subflows[p];
            if sf.has_retransmission() && (sf.has_cwnd_space() || sf.probe_pending()) {
                if let Some(seg) = sf.send_retransmission(now) {
                    // The segment's latest copy on this path leaves now: schedulers that judge
                    // a copy by its send time (DEMS, Eq. 11-12) see the retransmission.
                    if let Some(m) = sf.last_resent_meta_seg() {
                        self.meta.on_transmit(m, p as PathId, now);
                    }
                    self.retx_turn = (p + 1) % n;
                    return Some((seg, TxKind::Retransmit));
                }
            }
        }
        for sf in &mut self.subflows {
            sf.restart_if_idle(now);
        }
        if !self.subflows.iter().any(|s| s.has_cwnd_space()) {
            return None;
        }
        let a = {
            let mut ctx = SchedCtx::new(
                now,
                &self.subflows,
                &mut self.meta,
                &self.est,
                &mut self.penalties,
            );
            self.sched.next(&mut ctx)
        };
        self.apply_penalties(now);
        let Some(Assignment { path, seg }) = a else {
            // Every subflow with window space is left idle by the scheduler.
            for sf in &mut self.subflows {
                sf.mark_app_limited();
            }
            return None;
        };
        let sf = self.subflows.get(path as usize);
        let rec = self.meta.seg(seg).copied();
        let (Some(sf), Some(rec)) = (sf, rec) else {
            self.refused += 1;
            return None;
        };
        if !sf.has_cwnd_space() || !self.meta.in_window(seg) {
            self.refused += 1;
            return None;
        }
        let reinject = rec.tx_mask & !(1u8 << path) != 0;
        self.meta.on_transmit(seg, path, now);
        let d = self.subflows[path as usize].send_new(now, seg, rec.dsn, rec.len);
        Some((
            d,
            if reinject {
                TxKind::Reinject
            } else {
                TxKind::New
            },
        ))
    }

    /// Earliest retransmission timer.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.subflows
            .iter()
            .filter_map(|s| s.retransmission_timer())
            .min()
    }

    pub fn handle_timeout(&mut self, now: Time) {
        for p in 0..self.subflows.len() {
            let sf = &mut self.subflows[p];
            if sf.retransmission_timer().is_some_and(|t| t <= now) && sf.on_timeout(now) {
                self.notify(now, SchedEvent::Rto { path: p as PathId });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::minrtt::exchange::Exchange;
    use crate::sender::TxKind::{New, Retransmit};
    use crate::time::Duration;

    #[test]
    fn subflow_retransmission_restamps_the_segments_transmission_time() {
        let mut ex = Exchange::new("minrtt", 1, 2, 100);
        ex.at(0).write(2);
        assert_eq!(ex.send(), [(0, 0, New), (0, 1, New)]);
        // No ACK: the RTO (1 s before an RTT sample, RFC 6298 §2.1) resends segment 0.
        ex.at(1_000);
        let now = ex.now;
        ex.conn.handle_timeout(now);
        assert_eq!(ex.send().first(), Some(&(0, 0, Retransmit)));
        let rec = ex.conn.meta().seg(0).expect("segment 0");
        assert_eq!(rec.tx_time[0], Some(now));
        assert!(rec.tx_time[0].unwrap().0 - ex.wire[0].0.ts_val >= Duration::from_millis(1_000).0);
        assert_eq!(
            ex.conn.meta().reinjected_bytes(),
            0,
            "a retransmission is no reinjection"
        );
    }
}
