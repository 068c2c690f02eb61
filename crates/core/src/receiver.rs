//! The receiving endpoint of a multipath connection: one subflow receiver per path and the
//! shared meta receive buffer. Driven like the sender; `poll_event` reports every data arrival
//! (for the application and for measurement).

use std::collections::VecDeque;

use crate::meta::recv::RecvBuffer;
use crate::packet::{Ack, DataSegment, PathId};
use crate::recv::{ArrivalInfo, DefaultAcking, ReceiverPolicy, Verdict};
use crate::subflow::receiver::{SegmentVerdict, SubflowReceiver};
use crate::time::Time;

#[derive(Clone, Debug)]
pub struct ReceiverConfig {
    pub npaths: usize,
    pub mss: u32,
    /// The MSS option this receiver announced (`tp->advmss`): the TCP MSS, 1,448 bytes on a
    /// 1,500-byte MTU, even where MPTCP's DSS option leaves `mss` = 1,420 bytes of payload.
    pub advmss: u32,
    /// The receive buffer: fixed at this size, or with `autotune` Linux's `tcp_rmem[2]`, the
    /// most the buffer grows to from `tcp_rmem[1]`.
    pub recv_buffer: u64,
    /// Linux's receive-buffer autotuning (`tcp_moderate_rcvbuf`), as when the application
    /// does not set SO_RCVBUF.
    pub autotune: bool,
    pub delayed_ack: bool,
    /// An MPTCP connection (not plain TCP): its window comes from the MPTCP socket's space
    /// ([`RecvBuffer::set_mptcp`]).
    pub mptcp: bool,
}

/// One data arrival, as the receiving application and the metrics see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    pub path: PathId,
    pub dsn: u64,
    pub len: u32,
    /// Bytes this arrival delivered in order (0 when it was queued out of order).
    pub delivered: u64,
    /// Data-ACK after the arrival: everything below has been delivered to the application.
    pub delivered_upto: u64,
    /// The data had already arrived (on this or another subflow).
    pub duplicate: bool,
}

#[derive(Debug)]
pub struct ReceiverConnection {
    subflows: Vec<SubflowReceiver>,
    meta: RecvBuffer,
    events: VecDeque<Arrival>,
    ack_turn: usize,
    /// Bit p set: subflow p wants to send an ACK ([`SubflowReceiver::wants_ack`]), kept up to
    /// date after every call that may change it, so that a poll finds the next one without
    /// asking every subflow (two full passes per arrival were a tenth of the receiver's cost
    /// at 8 paths).
    ack_due: u64,
    policy: Box<dyn ReceiverPolicy>,
    /// An MPTCP connection: every subflow's ACK offers at least the highest connection-level
    /// window edge any subflow has offered ([`ReceiverConnection::poll_transmit`]).
    mptcp: bool,
    /// `msk->rcv_wnd_sent`: that highest edge (DSN).
    rcv_wnd_sent: u64,
}

impl ReceiverConnection {
    pub fn new(cfg: &ReceiverConfig) -> Self {
        assert!(cfg.npaths <= 64, "at most 64 subflows");
        let initial = RecvBuffer::first_offer(cfg.recv_buffer, cfg.mss);
        ReceiverConnection {
            subflows: (0..cfg.npaths)
                .map(|p| {
                    let mut r = SubflowReceiver::new(p as PathId, cfg.mss, cfg.delayed_ack);
                    r.init_window(initial);
                    r.set_advmss(cfg.advmss);
                    r
                })
                .collect(),
            meta: if cfg.autotune {
                let mut b = RecvBuffer::autotuned(cfg.advmss, cfg.recv_buffer);
                if cfg.mptcp {
                    b.set_mptcp();
                }
                b
            } else {
                RecvBuffer::new(cfg.recv_buffer)
            },
            events: VecDeque::new(),
            ack_turn: 0,
            ack_due: 0,
            policy: Box::new(DefaultAcking),
            mptcp: cfg.mptcp,
            rcv_wnd_sent: 0,
        }
    }

    /// Replace the receiver policy (default: plain TCP acknowledgement).
    pub fn set_policy(&mut self, policy: Box<dyn ReceiverPolicy>) {
        self.policy = policy;
    }
    pub fn policy(&self) -> &dyn ReceiverPolicy {
        self.policy.as_ref()
    }

    pub fn meta(&self) -> &RecvBuffer {
        &self.meta
    }
    pub fn subflows(&self) -> &[SubflowReceiver] {
        &self.subflows
    }

    pub fn handle_input(&mut self, now: Time, seg: &DataSegment) {
        let Some(rcv_nxt) = self.subflows.get(seg.path as usize).map(|s| s.rcv_nxt()) else {
            return;
        };
        let info = ArrivalInfo {
            in_order: seg.seq == rcv_nxt,
            delivered: self.meta.data_ack(),
        };
        if self.policy.on_segment(now, seg, info) == Verdict::Withhold && info.in_order {
            // The connection takes the data; the subflow acts as if it never arrived, so its
            // next segments are out of order and draw duplicate ACKs (R-TSC §V).
            let d = self.meta.on_data(now, seg.dsn, seg.len);
            self.events.push_back(Arrival {
                path: seg.path,
                dsn: seg.dsn,
                len: seg.len,
                delivered: d.bytes,
                delivered_upto: d.upto,
                duplicate: d.duplicate,
            });
            return;
        }
        let sf = &mut self.subflows[seg.path as usize];
        let rtt_before = sf.rcv_rtt();
        // A subflow-level duplicate still reaches the meta level only if new there; the meta
        // buffer discards it either way, but the subflow must re-ACK it.
        let verdict = sf.on_segment(now, seg);
        let d = if verdict == SegmentVerdict::New {
            // The connection's receiver RTT is the largest subflow's; it can only change when
            // this segment gave its subflow a new sample, so the scan runs once per sample, not
            // once per segment.
            if sf.rcv_rtt() != rtt_before {
                let rtt = self.subflows.iter().filter_map(|s| s.rcv_rtt()).max();
                self.meta.set_rcv_rtt(rtt.map_or(0, |r| r.0));
            }
            if self.subflows[seg.path as usize].segments_received() == 1 {
                // This subflow measured its scaling ratio (`tcp_measure_rcv_mss`).
                let all = self.subflows.iter().all(|s| s.segments_received() > 0);
                self.meta.set_subflows_measured(all);
            }
            // `tcp_event_data_recv` opens the subflow's window (`tcp_grow_window`) when the
            // segment is queued, with the room its buffer had before; the MPTCP socket takes
            // the data and the application reads it (`mptcp_rcv_space_adjust`, which may grow
            // the buffer) after that.
            self.subflows[seg.path as usize].grow_window(seg.len, self.meta.window_room());
            self.meta
                .on_data_from(now, Some(seg.path), seg.dsn, seg.len)
        } else {
            crate::meta::recv::Delivery {
                bytes: 0,
                upto: self.meta.data_ack(),
                duplicate: true,
            }
        };
        self.events.push_back(Arrival {
            path: seg.path,
            dsn: seg.dsn,
            len: seg.len,
            delivered: d.bytes,
            delivered_upto: d.upto,
            duplicate: d.duplicate,
        });
        self.note_ack_due(seg.path as usize);
    }

    /// Bring bit `p` of [`ReceiverConnection::ack_due`] up to date.
    fn note_ack_due(&mut self, p: usize) {
        if self.subflows[p].wants_ack() {
            self.ack_due |= 1 << p;
        } else {
            self.ack_due &= !(1 << p);
        }
    }

    pub fn poll_event(&mut self) -> Option<Arrival> {
        self.events.pop_front()
    }

    /// The next ACK due on any subflow.
    #[inline]
    pub fn poll_transmit(&mut self, now: Time) -> Option<Ack> {
        // Most calls find nothing due (the driver asks after every segment): answered inline.
        if self.ack_due == 0 {
            debug_assert!(
                self.subflows.iter().all(|s| !s.wants_ack()),
                "ack_due out of date"
            );
            return None;
        }
        self.poll_ack(now)
    }

    fn poll_ack(&mut self, now: Time) -> Option<Ack> {
        let n = self.subflows.len();
        debug_assert_eq!(
            self.ack_due,
            (0..n)
                .filter(|&p| self.subflows[p].wants_ack())
                .fold(0, |m, p| m | 1 << p),
            "ack_due out of date"
        );
        // The first subflow wanting an ACK from `ack_turn` on, round robin.
        let p = crate::pathmask::rotation(self.ack_due, self.ack_turn.min(n)).next()?;
        self.ack_turn = if p + 1 < n { p + 1 } else { 0 };
        let data_ack = self.meta.data_ack();
        let mut rwnd = self.subflows[p].offered_window(self.meta.rwnd());
        if self.mptcp {
            // `mptcp_set_rwin` (net/mptcp/options.c): a subflow whose own window
            // (`tcp_select_window`, capped by its `rcv_ssthresh`) ends short of the
            // highest connection-level edge offered so far is raised to that edge, so
            // the offered window never shrinks whichever subflow carries the ACK (a
            // young subflow's small `rcv_ssthresh` used to pull it back).
            let edge = data_ack + rwnd;
            if edge < self.rcv_wnd_sent {
                rwnd = self.rcv_wnd_sent - data_ack;
            } else {
                self.rcv_wnd_sent = edge;
            }
        }
        let ack = self.subflows[p].build_ack(now, data_ack, rwnd);
        self.note_ack_due(p);
        Some(ack)
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        self.subflows.iter().filter_map(|s| s.poll_timeout()).min()
    }

    pub fn handle_timeout(&mut self, now: Time) {
        for s in &mut self.subflows {
            s.handle_timeout(now);
        }
        for p in 0..self.subflows.len() {
            self.note_ack_due(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn receiver(npaths: usize, recv_buffer: u64) -> ReceiverConnection {
        ReceiverConnection::new(&ReceiverConfig {
            npaths,
            mss: MSS,
            advmss: MSS,
            recv_buffer,
            autotune: false,
            delayed_ack: false,
            mptcp: true,
        })
    }

    /// Segment `seq` (in segments, subflow sequence space) of `path` carrying DSN segment `dsn`.
    fn seg(path: PathId, seq: u64, dsn: u64) -> DataSegment {
        DataSegment {
            path,
            seq: seq * MSS as u64,
            len: MSS,
            dsn: dsn * MSS as u64,
            ts_val: 1 + seq,
            ts_ecr: 0,
            retransmit: false,
        }
    }

    fn arrive(r: &mut ReceiverConnection, s: DataSegment) -> (Arrival, Ack) {
        r.handle_input(Time(10), &s);
        let a = r.poll_event().expect("every arrival is reported");
        let ack = r.poll_transmit(Time(10)).expect("no delayed ACK");
        assert_eq!(r.poll_transmit(Time(10)), None);
        (a, ack)
    }

    #[test]
    fn in_order_segment_is_delivered_and_data_acked() {
        let mut r = receiver(2, 10_000);
        let (a, ack) = arrive(&mut r, seg(0, 0, 0));
        assert_eq!(
            (a.delivered, a.delivered_upto, a.duplicate),
            (1000, 1000, false)
        );
        // The window offered opens as Linux's rcv_ssthresh does (`tcp_grow_window`): it starts
        // at half the 10,000-byte buffer less a segment and grows by two segments per segment.
        assert_eq!(
            (ack.path, ack.ack, ack.data_ack, ack.rwnd),
            (0, 1000, 1000, 4000 + 2000)
        );
    }

    /// A Linux 6.18 receiver with autotuning: 1,420-byte MPTCP payloads (1,448 for TCP) under
    /// a 1,448-byte advertised MSS.
    fn autotuned(npaths: usize, mptcp: bool) -> ReceiverConnection {
        ReceiverConnection::new(&ReceiverConfig {
            npaths,
            mss: if mptcp { 1420 } else { 1448 },
            advmss: 1448,
            recv_buffer: 6 << 20,
            autotune: true,
            delayed_ack: false,
            mptcp,
        })
    }

    fn first_ack_window(mut r: ReceiverConnection, len: u32) -> u64 {
        let s = DataSegment {
            len,
            ..seg(0, 0, 0)
        };
        r.handle_input(Time(10), &s);
        r.poll_transmit(Time(10)).expect("ACKed at once").rwnd
    }

    #[test]
    fn mptcp_offers_the_msk_window_while_a_subflow_has_no_data() {
        // The first segment opens the subflow's rcv_ssthresh by 2 · advmss (tcp_grow_window)
        // to 64,116 + 2,896 = 67,012, but an MPTCP socket whose ratio is still the default
        // offers (131,072 − 2,304) · 128/256 = 64,384 (mptcp_space; captured on Linux 6.18).
        assert_eq!(first_ack_window(autotuned(2, true), 1420), 64_384);
        // Plain TCP: the subflow's own cap.
        assert_eq!(
            first_ack_window(autotuned(1, false), 1448),
            64_088 + 2 * 1448
        );
    }

    #[test]
    fn a_subflow_offers_at_least_the_highest_edge_any_subflow_offered() {
        // Subflow 0's window grew with three segments (tcp_grow_window); subflow 1 has seen one
        // and its own rcv_ssthresh is smaller. Its ACK still offers subflow 0's edge
        // (`mptcp_set_rwin`), so the sender's window does not shrink with it.
        let mut r = receiver(2, 10_000);
        arrive(&mut r, seg(0, 0, 0));
        arrive(&mut r, seg(0, 1, 1));
        let (_, ack0) = arrive(&mut r, seg(0, 2, 2));
        let (_, ack1) = arrive(&mut r, seg(1, 0, 3));
        let own = r.subflows()[1].offered_window(r.meta().rwnd());
        assert!(
            ack1.data_ack + own < ack0.data_ack + ack0.rwnd,
            "{own} {ack0:?}"
        );
        assert_eq!(ack1.data_ack + ack1.rwnd, ack0.data_ack + ack0.rwnd);
    }

    #[test]
    fn segment_ahead_on_other_subflow_waits_for_the_hole() {
        let mut r = receiver(2, 10_000);
        // In order on subflow 1, but DSN 1000 is ahead of the data-ACK.
        let (a, ack) = arrive(&mut r, seg(1, 0, 1));
        assert_eq!((a.delivered, a.delivered_upto), (0, 0));
        assert_eq!((ack.path, ack.ack, ack.data_ack), (1, 1000, 0));
        assert_eq!(r.meta().ofo_bytes(), 1000);
        let (a, ack) = arrive(&mut r, seg(0, 0, 0));
        assert_eq!((a.delivered, a.delivered_upto), (2000, 2000));
        assert_eq!((ack.path, ack.data_ack, ack.rwnd), (0, 2000, 4000 + 2000));
    }

    #[test]
    fn reinjected_copy_is_a_duplicate_but_acked_on_its_subflow() {
        let mut r = receiver(2, 10_000);
        arrive(&mut r, seg(0, 0, 0));
        // The same DSN, reinjected: new on subflow 1, old news for the connection.
        let (a, ack) = arrive(&mut r, seg(1, 0, 0));
        assert!(a.duplicate);
        assert_eq!(a.delivered, 0);
        assert_eq!((ack.path, ack.ack, ack.data_ack), (1, 1000, 1000));
        assert_eq!(r.meta().duplicate_bytes(), 1000);
    }

    #[test]
    fn subflow_retransmission_of_received_segment_is_a_duplicate() {
        let mut r = receiver(1, 10_000);
        arrive(&mut r, seg(0, 0, 0));
        let (a, ack) = arrive(&mut r, seg(0, 0, 0));
        assert!(a.duplicate);
        assert_eq!((ack.ack, ack.data_ack), (1000, 1000));
    }

    #[test]
    fn ack_echoes_the_segment_timestamp() {
        let mut r = receiver(1, 10_000);
        let s = seg(0, 0, 0);
        let (_, ack) = arrive(&mut r, s);
        assert_eq!(ack.ts_ecr, s.ts_val);
        let echo = ack.owd_echo.expect("OWD echo");
        assert_eq!((echo.seq, echo.ts_val, echo.recv_time), (0, s.ts_val, 10));
    }
}
