//! Per-packet event traces, on request only (`run --trace`): columns kept as plain vectors so
//! that Python can write them to Parquet without a copy per row.

use mpsched_core::time::Time;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Sender,
    Receiver,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Send,
    Reinject,
    Retransmit,
    Arrive,
    Ack,
    Deliver,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Send => "send",
            EventKind::Reinject => "reinject",
            EventKind::Retransmit => "retransmit",
            EventKind::Arrive => "arrive",
            EventKind::Ack => "ack",
            EventKind::Deliver => "deliver",
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct PacketTrace {
    pub time_s: Vec<f64>,
    pub side: Vec<Side>,
    pub path: Vec<u8>,
    pub kind: Vec<EventKind>,
    pub dsn: Vec<u64>,
    pub len: Vec<u32>,
    /// Periodic per-path samples: time, path, cwnd bytes, srtt s, OWD estimate s.
    pub sample_time_s: Vec<f64>,
    pub sample_path: Vec<u8>,
    pub sample_cwnd: Vec<u64>,
    /// Slow-start threshold, bytes (`u64::MAX` before the first congestion event): with PRR the
    /// window falls over a round trip, and a new threshold marks the congestion event itself.
    pub sample_ssthresh: Vec<u64>,
    pub sample_srtt_s: Vec<f64>,
    pub sample_owd_s: Vec<f64>,
    /// The scheduler's sequence gap in segments (STMS, Shi et al., USENIX ATC 2018, Eq. 2);
    /// NaN for schedulers without one. Same value on every path's row.
    pub sample_gap_segs: Vec<f64>,
    /// Record the periodic samples only, no per-packet rows (for long runs, where the rows
    /// would take gigabytes). See [`crate::run_sampled`].
    pub samples_only: bool,
}

impl PacketTrace {
    pub fn push(&mut self, t: Time, side: Side, path: u8, kind: EventKind, dsn: u64, len: u32) {
        if self.samples_only {
            return;
        }
        self.time_s.push(t.as_secs_f64());
        self.side.push(side);
        self.path.push(path);
        self.kind.push(kind);
        self.dsn.push(dsn);
        self.len.push(len);
    }
    pub fn len(&self) -> usize {
        self.time_s.len()
    }
    pub fn is_empty(&self) -> bool {
        self.time_s.is_empty()
    }
}
