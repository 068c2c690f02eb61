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
    pub completion_gaps: Vec<f64>,
    /// Last arrival per path of data of the chunk in progress (receiver side, seed 000 Fig. 2).
    last_arrival: [Option<Time>; MAX_PATHS],
    pub delivered_bytes: u64,
    /// Payload bytes of new (not duplicate) data that arrived per path.
    pub arrived_new_by_path: Vec<u64>,
    pub last_delivery: Time,
}

impl Recorder {
    pub fn new(npaths: usize) -> Self {
        Recorder {
            data_packets: 0,
            chunk_times: Vec::new(),
            completion_gaps: Vec::new(),
            last_arrival: [None; MAX_PATHS],
            delivered_bytes: 0,
            arrived_new_by_path: vec![0; npaths],
            last_delivery: Time::ZERO,
        }
    }

    pub fn on_data_sent(&mut self, _seg: &DataSegment) {
        self.data_packets += 1;
    }

    pub fn on_arrival(&mut self, now: Time, a: &Arrival, w: &Workload) {
        if !a.duplicate {
            self.arrived_new_by_path[a.path as usize] += a.len as u64;
        }
        if a.delivered > 0 {
            self.delivered_bytes += a.delivered;
            self.last_delivery = now;
        }
        // Only arrivals that belong to the chunk still in progress count towards its
        // completion gap; a late copy of a finished chunk does not.
        if w.chunk_of(a.dsn) == Some(w.completed()) {
            self.last_arrival[a.path as usize] = Some(now);
        }
    }

    pub fn on_chunk_complete(&mut self, requested: Time, now: Time) {
        self.chunk_times
            .push(now.saturating_since(requested).as_secs_f64());
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
