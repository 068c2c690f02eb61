//! One application connection carried between the proxies: its own meta send buffer and
//! scheduler (Guo et al., MobiCom 2017, §5: "a separate meta buffer for each connection"), the
//! bytes behind it, and the receiving side's reassembly. No IO here: the session moves bytes.

use std::collections::VecDeque;

use mpsched_core::meta::send::{SegNo, SendBuffer};
use mpsched_core::sched::Scheduler;

use super::reasm::Reassembly;
use super::wire::OwdSample;

/// What the session sends to an application socket's writer task.
#[derive(Debug)]
pub enum AppMsg {
    Data(Vec<u8>),
    /// The peer finished sending: shut down the write side.
    Eof,
    /// Abort the connection.
    Reset,
}

#[derive(Debug)]
pub struct Conn {
    pub id: u32,
    pub sched: Box<dyn Scheduler>,
    pub meta: SendBuffer,
    /// Payload of the meta buffer, from `meta.data_ack()` to `meta.written()`.
    bytes: VecDeque<u8>,
    pub reasm: Reassembly,
    /// The peer opened its side: data may flow.
    pub opened: bool,
    /// Client with `--early-data`, before the OPENED: the subflow the OPEN went on. Data may
    /// flow on it alone (behind the OPEN, in the same byte stream, so the server knows the
    /// connection before its first record); the application was already told "succeeded".
    pub early_path: Option<usize>,
    /// The application finished writing; `CLOSE` carries `meta.written()`.
    pub local_eof: bool,
    pub close_sent: bool,
    /// The peer's data ends at this DSN.
    pub peer_final: Option<u64>,
    pub peer_eof_delivered: bool,
    /// Bytes handed to the application writer and not yet written by it.
    pub app_pending: u64,
    /// Receive buffer this side advertises.
    pub recv_window: u64,
    /// OWD samples of received records, for the next ACK (§5).
    pub owd: VecDeque<OwdSample>,
    pub ack_due: bool,
    /// Segments a failed subflow carried, to resend on a live one (failover reinjection).
    pub failover: VecDeque<SegNo>,
    pub records_by_path: Vec<u64>,
    /// Payload bytes sent per path, resent records included (DESIGN.md's `bytes_by_path`).
    pub bytes_by_path: Vec<u64>,
    /// Chunks the application closed with the hint API.
    pub chunks_hinted: u64,
    pub label: String,
}

impl Conn {
    pub fn new(
        id: u32,
        sched: Box<dyn Scheduler>,
        record_size: u32,
        send_buffer: u64,
        recv_window: u64,
        npaths: usize,
        label: String,
    ) -> Self {
        Conn {
            id,
            sched,
            meta: SendBuffer::new(record_size, send_buffer, recv_window),
            bytes: VecDeque::new(),
            reasm: Reassembly::default(),
            opened: false,
            early_path: None,
            local_eof: false,
            close_sent: false,
            peer_final: None,
            peer_eof_delivered: false,
            app_pending: 0,
            recv_window,
            owd: VecDeque::new(),
            ack_due: false,
            failover: VecDeque::new(),
            records_by_path: vec![0; npaths],
            bytes_by_path: vec![0; npaths],
            chunks_hinted: 0,
            label,
        }
    }

    /// Append application bytes to the meta buffer. Without hints (the non-API mode of §5)
    /// the meta buffer is the chunk; `end_of_chunk` closes the chunk after them (the hint
    /// API, [`super::api`]).
    pub fn push_app(&mut self, data: &[u8], end_of_chunk: bool) {
        let n = self.meta.write(data.len() as u64, end_of_chunk);
        self.chunks_hinted += u64::from(end_of_chunk);
        debug_assert_eq!(
            n,
            data.len() as u64,
            "credit keeps writes within the buffer"
        );
        self.bytes.extend(&data[..n as usize]);
    }

    /// Copy segment `seg`'s payload into `out`; its DSN, or `None` if it left the buffer.
    pub fn payload(&self, seg: SegNo, out: &mut Vec<u8>) -> Option<u64> {
        let rec = self.meta.seg(seg)?;
        let from = (rec.dsn - self.meta.data_ack()) as usize;
        out.clear();
        out.extend(self.bytes.range(from..from + rec.len as usize));
        Some(rec.dsn)
    }

    /// A data-ACK from the peer: SACKed segments are marked received, acknowledged bytes
    /// leave the buffer. Returns the bytes freed.
    pub fn on_ack(&mut self, data_ack: u64, rwnd: u64, sacks: &[(u64, u64)]) -> u64 {
        for &(s, e) in sacks {
            let mut n = first_seg_at_or_after(&self.meta, s);
            while let Some(rec) = self.meta.seg(n) {
                if rec.end() > e {
                    break;
                }
                self.meta.on_received(n);
                n += 1;
            }
        }
        let freed = self.meta.on_data_ack(data_ack, rwnd);
        self.bytes.drain(..freed as usize);
        freed
    }

    /// The window this side advertises: what its buffers can still take.
    pub fn rwnd(&self) -> u64 {
        self.recv_window
            .saturating_sub(self.app_pending + self.reasm.held())
    }

    /// Both directions finished: the connection can go.
    pub fn done(&self) -> bool {
        self.local_eof
            && self.close_sent
            && self.meta.data_ack() == self.meta.written()
            && self.peer_eof_delivered
    }
}

/// The first segment whose data starts at or after `dsn` (segments are contiguous in DSN).
fn first_seg_at_or_after(meta: &SendBuffer, dsn: u64) -> SegNo {
    let (mut lo, mut hi) = (meta.base_seg(), meta.end_seg());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match meta.seg(mid) {
            Some(r) if r.dsn < dsn => lo = mid + 1,
            _ => hi = mid,
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::time::Time;

    fn conn() -> Conn {
        let s = mpsched_core::sched::build("minrtt", &["a".into()], &[1.0]).unwrap();
        Conn::new(1, s, 100, 10_000, 10_000, 1, "t".into())
    }

    #[test]
    fn written_bytes_payload_is_the_segments_slice() {
        let mut c = conn();
        let data: Vec<u8> = (0..250u32).map(|i| i as u8).collect();
        c.push_app(&data, false);
        let mut out = Vec::new();
        assert_eq!(c.payload(1, &mut out), Some(100));
        assert_eq!(out, &data[100..200]);
    }

    #[test]
    fn sacked_range_marks_only_whole_segments_received() {
        let mut c = conn();
        c.push_app(&[0; 400], false);
        for n in 0..4 {
            c.meta.on_transmit(n, 0, Time::ZERO);
        }
        c.on_ack(0, 10_000, &[(100, 350)]);
        let got: Vec<bool> = (0..4).map(|n| c.meta.seg(n).unwrap().received).collect();
        assert_eq!(got, [false, true, true, false]);
    }

    #[test]
    fn data_ack_frees_bytes_and_shifts_payloads() {
        let mut c = conn();
        let data: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        c.push_app(&data, false);
        assert_eq!(c.on_ack(200, 10_000, &[]), 200);
        let mut out = Vec::new();
        assert_eq!(c.payload(2, &mut out), Some(200));
        assert_eq!(out, &data[200..]);
    }
}
