//! The receiver's meta buffer: one connection-level receive buffer shared by all subflows
//! (seed 002 §2.2), reassembly by DSN, and the out-of-order queue.
//!
//! The application reads in-order data as soon as it is there, so buffer occupancy is the
//! out-of-order queue; the advertised window is what is left of the buffer, except that the
//! window's right edge (data-ACK + window) never moves left: RFC 1122 §4.2.2.16, and Linux
//! (`tcp_select_window`, MPTCP's `mptcp_select_window`) keeps the offered edge when out-of-order
//! data fills the space it offered. Per-packet
//! out-of-order delay (arrival to in-order delivery, seed 002 §5.1.1) goes into a fixed-size
//! histogram so that memory stays flat however long the run.

use std::collections::BTreeMap;

use crate::hist::LogHistogram;
use crate::time::Time;

#[derive(Debug)]
pub struct RecvBuffer {
    capacity: u64,
    /// Highest right window edge offered so far (DSN).
    right_edge: u64,
    /// Next DSN expected in order (the data-ACK).
    rcv_nxt: u64,
    /// Out-of-order segments by DSN: (end, arrival time).
    ofo: BTreeMap<u64, (u64, Time)>,
    ofo_bytes: u64,
    ofo_max: u64,
    /// Integral of ofo_bytes over time (byte·ns) and the time it was last updated.
    ofo_integral: f64,
    ofo_since: Option<Time>,
    duplicate_bytes: u64,
    ooo_delay: LogHistogram,
}

/// What a data arrival delivered to the application.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    /// In-order bytes delivered by this arrival (0 if it went to the out-of-order queue).
    pub bytes: u64,
    /// The data-ACK after it.
    pub upto: u64,
    /// The arrival duplicated data already received (a reinjection that lost the race).
    pub duplicate: bool,
}

impl RecvBuffer {
    pub fn new(capacity: u64) -> Self {
        RecvBuffer {
            capacity,
            right_edge: capacity,
            rcv_nxt: 0,
            ofo: BTreeMap::new(),
            ofo_bytes: 0,
            ofo_max: 0,
            ofo_integral: 0.0,
            ofo_since: None,
            duplicate_bytes: 0,
            ooo_delay: LogHistogram::new(),
        }
    }

    pub fn data_ack(&self) -> u64 {
        self.rcv_nxt
    }
    /// Receive window to advertise, bytes beyond the data-ACK.
    pub fn rwnd(&self) -> u64 {
        self.right_edge.saturating_sub(self.rcv_nxt)
    }

    fn offer_window(&mut self) {
        let free = self.capacity.saturating_sub(self.ofo_bytes);
        self.right_edge = self.right_edge.max(self.rcv_nxt + free);
    }
    pub fn ofo_bytes(&self) -> u64 {
        self.ofo_bytes
    }
    pub fn ofo_max_bytes(&self) -> u64 {
        self.ofo_max
    }
    pub fn duplicate_bytes(&self) -> u64 {
        self.duplicate_bytes
    }
    pub fn ooo_delay(&self) -> &LogHistogram {
        &self.ooo_delay
    }
    /// Time-weighted average out-of-order queue occupancy over `[start, now]`.
    pub fn ofo_avg_bytes(&self, start: Time, now: Time) -> f64 {
        let span = now.saturating_since(start).0 as f64;
        if span <= 0.0 {
            return 0.0;
        }
        let tail = self.ofo_since.map_or(0.0, |t| {
            now.saturating_since(t).0 as f64 * self.ofo_bytes as f64
        });
        (self.ofo_integral + tail) / span
    }

    fn integrate(&mut self, now: Time) {
        if let Some(t) = self.ofo_since {
            self.ofo_integral += now.saturating_since(t).0 as f64 * self.ofo_bytes as f64;
        }
        self.ofo_since = Some(now);
    }

    /// Data `[dsn, dsn+len)` arrived at `now` on some subflow.
    pub fn on_data(&mut self, now: Time, dsn: u64, len: u32) -> Delivery {
        let end = dsn + len as u64;
        if end <= self.rcv_nxt || self.ofo.get(&dsn).is_some_and(|&(e, _)| e >= end) {
            self.duplicate_bytes += len as u64;
            return Delivery {
                bytes: 0,
                upto: self.rcv_nxt,
                duplicate: true,
            };
        }
        self.integrate(now);
        if dsn > self.rcv_nxt {
            // Segments never straddle: a meta segment has fixed boundaries on every path.
            self.ofo.insert(dsn, (end, now));
            self.ofo_bytes += len as u64;
            self.ofo_max = self.ofo_max.max(self.ofo_bytes);
            self.offer_window();
            return Delivery {
                bytes: 0,
                upto: self.rcv_nxt,
                duplicate: false,
            };
        }
        let before = self.rcv_nxt;
        self.rcv_nxt = end;
        self.ooo_delay.record(0);
        while let Some((&s, &(e, arrived))) = self.ofo.first_key_value() {
            if s > self.rcv_nxt {
                break;
            }
            self.ofo.pop_first();
            self.ofo_bytes -= e - s;
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.ooo_delay.record(now.saturating_since(arrived).0);
        }
        self.offer_window();
        Delivery {
            bytes: self.rcv_nxt - before,
            upto: self.rcv_nxt,
            duplicate: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_data_is_delivered_at_once() {
        let mut r = RecvBuffer::new(10_000);
        let d = r.on_data(Time(5), 0, 1000);
        assert_eq!((d.bytes, d.upto), (1000, 1000));
        assert_eq!(r.rwnd(), 10_000);
    }

    #[test]
    fn out_of_order_data_waits_inside_the_window() {
        let mut r = RecvBuffer::new(10_000);
        let d = r.on_data(Time(0), 1000, 1000);
        assert_eq!(d.bytes, 0);
        // The queued segment uses space the window already offered: the edge stays at 10 000.
        assert_eq!(r.rwnd(), 10_000);
        let d = r.on_data(Time(100), 0, 1000);
        assert_eq!((d.bytes, d.upto), (2000, 2000));
        assert_eq!(r.ofo_max_bytes(), 1000);
        // one packet waited 100 ns, one none
        assert_eq!(r.ooo_delay().count(), 2);
        assert_eq!(r.ooo_delay().max(), 100);
    }

    #[test]
    fn reinjected_copy_is_a_duplicate() {
        let mut r = RecvBuffer::new(10_000);
        r.on_data(Time(0), 1000, 1000);
        assert!(r.on_data(Time(1), 1000, 1000).duplicate);
        r.on_data(Time(2), 0, 1000);
        assert!(r.on_data(Time(3), 0, 1000).duplicate);
        assert_eq!(r.duplicate_bytes(), 2000);
    }

    #[test]
    fn ofo_average_is_time_weighted() {
        let mut r = RecvBuffer::new(10_000);
        r.on_data(Time(0), 1000, 1000); // 1000 bytes queued for 50 ns
        r.on_data(Time(50), 0, 1000);
        let avg = r.ofo_avg_bytes(Time(0), Time(100));
        assert!((avg - 500.0).abs() < 1e-9, "{avg}");
    }

    #[test]
    fn full_out_of_order_queue_right_edge_never_moves_left() {
        let mut r = RecvBuffer::new(4_000);
        // DSN 0 is missing; the rest of the offered window fills up out of order.
        for k in 1..4 {
            r.on_data(Time(k), k * 1000, 1000);
        }
        assert_eq!((r.data_ack(), r.rwnd()), (0, 4_000));
        // The hole fills: everything is delivered and a whole buffer is offered past it.
        let d = r.on_data(Time(9), 0, 1000);
        assert_eq!((d.bytes, d.upto), (4_000, 4_000));
        assert_eq!(r.rwnd(), 4_000);
    }

    #[test]
    fn hole_filled_with_data_queued_beyond_keeps_the_offered_edge() {
        let mut r = RecvBuffer::new(4_000);
        r.on_data(Time(0), 2000, 1000);
        r.on_data(Time(1), 3000, 1000);
        // 0..1000 arrives; 1000..2000 is still missing and 2000 bytes wait beyond it: the edge
        // stays at 4000 (1000 + 4000 - 2000 would move it left).
        r.on_data(Time(2), 0, 1000);
        assert_eq!((r.data_ack(), r.rwnd()), (1000, 3_000));
        r.on_data(Time(3), 1000, 1000);
        assert_eq!((r.data_ack(), r.rwnd()), (4000, 4_000));
    }
}
