//! What a run measures while it runs (the rest is read from the endpoints at the end).
//! Memory is flat in the number of packets: per-chunk lists only, no per-packet history.

use mpsched_core::packet::{DataSegment, MAX_PATHS};
use mpsched_core::receiver::Arrival;
use mpsched_core::time::Time;

use crate::workload::Workload;

#[derive(Debug)]
pub struct Recorder {
    pub data_packets: u64,
    pub chunk_times: Vec<f64>,
    /// Per chunk: the request's arrival at the server to the last byte delivered.
    pub server_chunk_times: Vec<f64>,
    pub completion_gaps: Vec<f64>,
    /// Last arrival per path of data of the chunk in progress (receiver side, Guo et al., MobiCom 2017, Fig. 2).
    last_arrival: [Option<Time>; MAX_PATHS],
    pub delivered_bytes: u64,
    /// Payload bytes of new (not duplicate) data that arrived per path.
    pub arrived_new_by_path: Vec<u64>,
    pub last_delivery: Time,
    /// Highest DSN (exclusive) handed to any path: the receiver may never deliver beyond it.
    sent_upto: u64,
}

impl Recorder {
    pub fn new(npaths: usize) -> Self {
        Recorder {
            data_packets: 0,
            chunk_times: Vec::new(),
            server_chunk_times: Vec::new(),
            completion_gaps: Vec::new(),
            last_arrival: [None; MAX_PATHS],
            delivered_bytes: 0,
            arrived_new_by_path: vec![0; npaths],
            last_delivery: Time::ZERO,
            sent_upto: 0,
        }
    }

    pub fn on_data_sent(&mut self, seg: &DataSegment) {
        self.data_packets += 1;
        self.sent_upto = self.sent_upto.max(seg.dsn + seg.len as u64);
    }

    pub fn on_arrival(&mut self, now: Time, a: &Arrival, w: &Workload) {
        if !a.duplicate {
            self.arrived_new_by_path[a.path as usize] += a.len as u64;
        }
        if a.delivered > 0 {
            // The exactly-once, in-order contract of the receive buffer, checked on every run
            // (two comparisons): each delivery starts where the previous one ended and nothing
            // is delivered that the sender has not sent.
            assert!(
                a.delivered_upto - a.delivered == self.delivered_bytes
                    && a.delivered_upto <= self.sent_upto,
                "receiver delivered [{}, {}) after [0, {}) with [0, {}) sent",
                a.delivered_upto - a.delivered,
                a.delivered_upto,
                self.delivered_bytes,
                self.sent_upto
            );
            self.delivered_bytes += a.delivered;
            self.last_delivery = now;
        }
        // Only arrivals that belong to the chunk still in progress count towards its
        // completion gap; a late copy of a finished chunk does not.
        if w.chunk_of(a.dsn) == Some(w.completed()) {
            self.last_arrival[a.path as usize] = Some(now);
        }
    }

    pub fn on_chunk_complete(&mut self, requested: Time, arrived: Time, now: Time) {
        self.chunk_times
            .push(now.saturating_since(requested).as_secs_f64());
        self.server_chunk_times
            .push(now.saturating_since(arrived).as_secs_f64());
        let arrivals = self.last_arrival.iter().flatten();
        let (lo, hi) = arrivals.fold((Time::MAX, Time::ZERO), |(lo, hi), &t| {
            (lo.min(t), hi.max(t))
        });
        self.completion_gaps.push(if hi >= lo {
            (hi - lo).as_secs_f64()
        } else {
            0.0
        });
        self.last_arrival = [None; MAX_PATHS];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Workload as Spec;

    fn sent(rec: &mut Recorder, dsn: u64, len: u32) {
        rec.on_data_sent(&DataSegment {
            path: 0,
            seq: dsn,
            len,
            dsn,
            ts_val: 1,
            ts_ecr: 0,
            retransmit: false,
        });
    }

    fn arrival(path: u8, dsn: u64, len: u32, delivered: u64, upto: u64) -> Arrival {
        Arrival {
            path,
            dsn,
            len,
            delivered,
            delivered_upto: upto,
            duplicate: false,
        }
    }

    fn chunk() -> Workload {
        Workload::new(&Spec::Chunk { size_bytes: 3000 })
    }

    #[test]
    fn in_order_deliveries_add_up() {
        let (mut rec, w) = (Recorder::new(2), chunk());
        sent(&mut rec, 0, 1000);
        sent(&mut rec, 1000, 1000);
        rec.on_arrival(Time(1), &arrival(1, 1000, 1000, 0, 0), &w);
        rec.on_arrival(Time(2), &arrival(0, 0, 1000, 2000, 2000), &w);
        assert_eq!(rec.delivered_bytes, 2000);
        assert_eq!(rec.arrived_new_by_path, [1000, 1000]);
        assert_eq!(rec.last_delivery, Time(2));
    }

    #[test]
    #[should_panic(expected = "receiver delivered [0, 2000) after [0, 0) with [0, 1000) sent")]
    fn delivery_beyond_what_was_sent_is_caught() {
        let (mut rec, w) = (Recorder::new(1), chunk());
        sent(&mut rec, 0, 1000);
        rec.on_arrival(Time(1), &arrival(0, 0, 1000, 2000, 2000), &w);
    }

    #[test]
    #[should_panic(expected = "receiver delivered [1000, 2000) after [0, 0)")]
    fn delivery_that_skips_bytes_is_caught() {
        let (mut rec, w) = (Recorder::new(1), chunk());
        sent(&mut rec, 0, 2000);
        rec.on_arrival(Time(1), &arrival(0, 1000, 1000, 1000, 2000), &w);
    }

    #[test]
    fn chunk_complete_gap_is_spread_of_last_arrivals() {
        let (mut rec, w) = (Recorder::new(2), chunk());
        sent(&mut rec, 0, 3000);
        rec.on_arrival(Time(1_000_000), &arrival(1, 2000, 1000, 0, 0), &w);
        rec.on_arrival(Time(4_000_000), &arrival(0, 0, 2000, 3000, 3000), &w);
        rec.on_chunk_complete(Time(0), Time(1_500_000), Time(4_000_000));
        assert_eq!(rec.completion_gaps, [0.003]);
        assert_eq!(rec.chunk_times, [0.004]);
        assert_eq!(rec.server_chunk_times, [0.0025]);
    }
}
