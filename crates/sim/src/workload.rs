//! Workloads: what the application asks for and when (DESIGN.md "Scenario files").
//!
//! * `bulk`: the application always has data; the run lasts `duration_s`.
//! * `chunk` / `chunks`: the client requests a chunk of `size` bytes; the request crosses the
//!   initial subflow's uplink (the first one in the connection's third ACK); the server writes the
//!   chunk (closing it with the hint API when `hint`). A chunk's download time runs from its
//!   request to the last byte delivered in order, the first one's from connect (the SYN), as a
//!   user sees it; the server's time runs from the request's arrival. The next request follows
//!   `think_s` after the previous chunk completed, on the established connection.
//! * `stream`: a live source at a given rate (see [`crate::stream`]); the run ends when the last
//!   packet generated is delivered.

use mpsched_core::sender::SenderConnection;
use mpsched_core::time::Time;

use crate::metrics::Recorder;
use crate::scenario::Workload as Spec;
use crate::stream::{Stream, StreamSpec};

#[derive(Debug)]
pub struct Workload {
    bulk_duration: Option<Time>,
    size: u64,
    count: u32,
    think: Time,
    hint: bool,
    requested_at: Vec<Time>,
    /// When each request reached the server.
    arrived_at: Vec<Time>,
    /// Chunks whose request reached the sender and that are not fully written: (index, bytes
    /// left to write).
    writing: std::collections::VecDeque<(u32, u64)>,
    completed: u32,
    stream: Option<Stream>,
}

impl Workload {
    pub fn new(spec: &Spec) -> Self {
        Self::with_rng(spec, rand::SeedableRng::seed_from_u64(0))
    }

    /// A workload whose random choices (VBR frame sizes) come from `rng`.
    pub fn with_rng(spec: &Spec, rng: rand_pcg::Pcg64) -> Self {
        let mut stream = None;
        let (bulk, size, count, think, hint) = match *spec {
            Spec::Stream {
                rate_bps,
                duration_s,
                packet_bytes,
                cv,
                frame_interval_s,
                playout_delay_s,
            } => {
                let s = StreamSpec {
                    rate_bps,
                    duration_s,
                    packet_bytes,
                    cv,
                    frame_interval_s,
                    playout_delay_s,
                };
                stream = Some(Stream::new(&s, rng));
                (None, 0, 0, 0.0, false)
            }
            Spec::Bulk { duration_s } => (Some(Time::from_secs_f64(duration_s)), 0, 1, 0.0, false),
            Spec::Chunk { size_bytes } => (None, size_bytes, 1, 0.0, true),
            Spec::Chunks {
                size_bytes,
                count,
                think_s,
                hint,
            } => (None, size_bytes, count as u32, think_s, hint),
        };
        Workload {
            bulk_duration: bulk,
            size,
            count,
            think: Time::from_secs_f64(think),
            hint,
            requested_at: Vec::new(),
            arrived_at: Vec::new(),
            writing: Default::default(),
            completed: 0,
            stream,
        }
    }

    pub fn stream(&self) -> Option<&Stream> {
        self.stream.as_ref()
    }
    pub fn is_stream(&self) -> bool {
        self.stream.is_some()
    }
    /// A stream's first generation time.
    pub fn first_tick(&self) -> Option<Time> {
        self.stream.as_ref().map(|_| Time::ZERO)
    }
    /// Generate what a stream has due at `now`; returns the next generation time.
    pub fn tick(&mut self, now: Time) -> Option<Time> {
        self.stream.as_mut()?.generate(now)
    }
    pub fn on_first_tx(&mut self, dsn: u64, len: u32, now: Time) {
        if let Some(s) = &mut self.stream {
            s.on_first_tx(dsn, len, now);
        }
    }
    pub fn on_arrival(&mut self, dsn: u64, len: u32, now: Time) {
        if let Some(s) = &mut self.stream {
            s.on_arrival(dsn, len, now);
        }
    }

    pub fn is_bulk(&self) -> bool {
        self.bulk_duration.is_some()
    }
    pub fn chunk_size(&self) -> u64 {
        self.size
    }
    pub fn chunk_count(&self) -> u32 {
        self.count
    }
    /// When the run ends regardless of progress (bulk).
    pub fn stop_time(&self) -> Option<Time> {
        self.bulk_duration
    }
    pub fn initial_requests(&self) -> Vec<(u32, Time)> {
        // A stream's request only opens the connection; its data comes from `tick`.
        vec![(0, Time::ZERO)]
    }
    /// Whether [`Workload::finished`] can ever be true: not for bulk, which only stops at its
    /// time (the event loop then skips asking after every event).
    #[inline]
    pub fn may_finish(&self) -> bool {
        !self.is_bulk()
    }
    pub fn finished(&self) -> bool {
        debug_assert!(self.may_finish() || !self.finished_slow());
        self.finished_slow()
    }
    fn finished_slow(&self) -> bool {
        if let Some(s) = &self.stream {
            return s.done();
        }
        !self.is_bulk() && self.completed >= self.count
    }
    /// Chunk index holding `dsn` (chunks are back to back in DSN space).
    pub fn chunk_of(&self, dsn: u64) -> Option<u32> {
        if self.is_bulk() || self.size == 0 {
            return None;
        }
        Some((dsn / self.size) as u32)
    }
    pub fn completed(&self) -> u32 {
        self.completed
    }
    /// A chunk has been requested and is not yet delivered (the stall detector's condition).
    pub fn outstanding(&self) -> bool {
        !self.is_bulk() && self.requested_at.len() as u32 > self.completed
    }

    pub fn on_request(&mut self, k: u32, now: Time) {
        if self.requested_at.len() == k as usize {
            self.requested_at.push(now);
        }
    }

    pub fn on_request_arrives(&mut self, k: u32, now: Time) {
        if self.arrived_at.len() == k as usize {
            self.arrived_at.push(now);
        }
        let bytes = if self.is_bulk() { u64::MAX } else { self.size };
        self.writing.push_back((k, bytes));
    }

    /// Write whatever the send buffer takes. An application with more to write than that
    /// blocks in its write and sleeps until the buffer has drained to two thirds
    /// ([`SenderConnection::writer_waits`], Linux's `sk_stream_wait_memory`).
    pub fn refill(&mut self, sender: &mut SenderConnection, _now: Time) {
        if let Some(s) = &mut self.stream {
            let free = sender.send_buffer_free();
            s.flush(free, &mut |n| sender.write(n, false));
            if s.has_unwritten() {
                sender.writer_waits();
            }
            return;
        }
        while let Some(&mut (_, ref mut left)) = self.writing.front_mut() {
            let free = sender.send_buffer_free();
            if free == 0 {
                sender.writer_waits();
                return;
            }
            let n = (*left).min(free);
            let closes = self.hint && n == *left;
            let wrote = sender.write(n, closes);
            *left -= wrote;
            if *left == 0 {
                self.writing.pop_front();
            } else {
                sender.writer_waits();
                return;
            }
        }
    }

    /// In-order delivery reached `upto`. Returns the next request to issue (index, time) when
    /// a chunk completed and another one follows.
    #[inline]
    pub fn on_delivered(
        &mut self,
        upto: u64,
        now: Time,
        rec: &mut Recorder,
    ) -> Option<(u32, Time)> {
        // Bulk: nothing to do, decided where the call is (once per delivering segment).
        if !self.may_finish() {
            return None;
        }
        self.on_delivered_finite(upto, now, rec)
    }

    fn on_delivered_finite(
        &mut self,
        upto: u64,
        now: Time,
        rec: &mut Recorder,
    ) -> Option<(u32, Time)> {
        if let Some(s) = &mut self.stream {
            s.on_delivered(upto, now);
            return None;
        }
        if self.is_bulk() {
            return None;
        }
        let mut next = None;
        while self.completed < self.count && upto >= (self.completed as u64 + 1) * self.size {
            let k = self.completed;
            let k = k as usize;
            rec.on_chunk_complete(self.requested_at[k], self.arrived_at[k], now);
            self.completed += 1;
            if self.completed < self.count {
                next = Some((
                    self.completed,
                    now + mpsched_core::time::Duration(self.think.0),
                ));
            }
        }
        next
    }
}
