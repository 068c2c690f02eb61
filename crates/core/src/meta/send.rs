//! The sender's meta buffer: data sequence space, chunk boundaries, and per-segment
//! transmission records (which subflows carried a segment, when, and whether it arrived).
//!
//! Data is packetized into meta segments when the application writes it: a segment never
//! spans a chunk boundary, so a chunk is a contiguous run of segment numbers. Segment numbers
//! are absolute (they keep counting as acknowledged segments leave the buffer), which is how
//! schedulers and subflows name a segment.
//!
//! Chunks (Guo et al., MobiCom 2017, §4.1, §5): with the hint API the application closes a chunk; without it the
//! open chunk is "all data in the meta buffer", and data appended to it while it is being sent
//! joins it at the tail.

use std::collections::VecDeque;

use super::pagefrag::PageFrags;

use super::runs::UnsentRuns;
use crate::packet::{PathId, MAX_PATHS};
use crate::time::Time;

/// Absolute meta segment number.
pub type SegNo = u64;

/// Transmission record of one meta segment.
#[derive(Clone, Copy, Debug)]
pub struct SegRecord {
    pub dsn: u64,
    pub len: u32,
    pub chunk: u64,
    /// Bit p set: sent (at least once) on path p.
    pub tx_mask: u8,
    /// Last transmission time on each path (ns; [`NEVER`]: never), the subflow's own
    /// retransmissions and tail-loss probes included ([`SegRecord::tx_time`]). Plain `u64`s, not
    /// `Option<Time>`, halve the record: the buffer moves records when a cut or a collapse
    /// renumbers them.
    tx_at: [u64; MAX_PATHS],
    /// A subflow ACK has reported it received (on any path).
    pub received: bool,
    /// Bit p set: queued for reinjection when path p's retransmission timer fired (v0.9x marks
    /// the subflow's copy `MPTCP_REINJECT` so a later timeout does not queue it again).
    pub reinject_from: u8,
    /// Bit p set: path p put it on the wire ([`SendBuffer::on_wire`]); `tx_mask` also counts a
    /// commit to a write queue.
    wire_mask: u8,
}

/// [`SegRecord`]'s mark of a path it was never sent on.
const NEVER: u64 = u64::MAX;

impl SegRecord {
    pub fn end(&self) -> u64 {
        self.dsn + self.len as u64
    }
    pub fn sent(&self) -> bool {
        self.tx_mask != 0
    }
    pub fn sent_on(&self, p: PathId) -> bool {
        self.tx_mask & (1 << p) != 0
    }
    /// Last transmission on path `p`, the subflow's own retransmissions and tail-loss probes
    /// included (`None`: never sent there).
    pub fn tx_time(&self, p: usize) -> Option<Time> {
        let t = self.tx_at[p];
        (t != NEVER).then_some(Time(t))
    }
    fn set_tx_time(&mut self, p: usize, t: Option<Time>) {
        debug_assert!(t != Some(Time(NEVER)), "a transmission at the end of time");
        self.tx_at[p] = t.map_or(NEVER, |t| t.0);
    }
    /// Latest transmission on any path other than `p`.
    pub fn last_tx_elsewhere(&self, p: PathId) -> Option<Time> {
        self.tx_at
            .iter()
            .enumerate()
            .filter(|&(q, &t)| q != p as usize && t != NEVER)
            .map(|(_, &t)| Time(t))
            .max()
    }
}

/// A change of the transmission records, for a scheduler that keeps its own index of them
/// ([`SendBuffer::record_tx_events`]).
#[derive(Clone, Copy, Debug)]
pub enum TxEvent {
    /// Segment `seg` was sent on `path` at `at`; `before` was its previous transmission there
    /// (a retransmission or tail-loss probe), if any.
    Sent {
        seg: SegNo,
        chunk: u64,
        path: PathId,
        before: Option<Time>,
        at: Time,
    },
    /// Segment `seg`, committed to `path` at `before`, returned to the unsent data.
    Returned {
        seg: SegNo,
        chunk: u64,
        path: PathId,
        before: Time,
    },
    /// Segment `seg` of chunk `chunk` was reported received, or left the buffer without such
    /// a report (the data-ACK covered it).
    Done { seg: SegNo, chunk: u64 },
    /// A record was inserted or removed in the middle of the buffer (a cut or a collapse):
    /// segment numbers from some point on moved.
    Renumbered,
}

/// One chunk: segments `[first, end)`; `end` grows while the chunk is open.
#[derive(Clone, Copy, Debug)]
pub struct Chunk {
    pub id: u64,
    pub first: SegNo,
    pub end: SegNo,
    pub start_dsn: u64,
    pub end_dsn: u64,
    pub closed: bool,
    /// Payload bytes of the chunk not yet sent on any path.
    pub unsent_bytes: u64,
    /// Lowest segment number that may be unsent (everything below is sent).
    head_unsent: SegNo,
    /// One past the highest segment number that may be unsent.
    tail_unsent: SegNo,
}

#[derive(Debug)]
pub struct SendBuffer {
    mss: u32,
    capacity: u64,
    segs: VecDeque<SegRecord>,
    /// Absolute number of `segs[0]`.
    base: SegNo,
    chunks: VecDeque<Chunk>,
    next_chunk_id: u64,
    written: u64,
    data_ack: u64,
    peer_rwnd: u64,
    reinjected_bytes: u64,
    reinjected_segments: u64,
    /// Connection-level reinjection queue (v0.9x `mpcb->reinject_queue`): segments a timed-out
    /// subflow holds, in DSN order, waiting to be sent on another subflow before any new data.
    reinject: std::collections::BTreeSet<SegNo>,
    /// Segments may be cut where a push ends ([`SendBuffer::cut`]); off unless the driver
    /// turns it on (the simulator's connection does; the proxy's records keep their size).
    cuts: bool,
    /// Highest segment number ever committed or sent: everything above it is untouched, so
    /// its records may be re-cut without renumbering anything a subflow holds.
    high_touched: Option<SegNo>,
    /// The runs of unsent segments, kept on every transition once a scheduler asked for them
    /// ([`SendBuffer::unsent_runs`]); `None` until then, so other schedulers pay nothing.
    runs: Option<UnsentRuns>,
    /// Transmission-record changes since the scheduler last took them, once it asked for them
    /// ([`SendBuffer::record_tx_events`]).
    journal: Option<Vec<TxEvent>>,
    /// One bit per segment, set when it was sent (`tx_mask != 0`), so that the k-th unsent
    /// segment is found by popcounts over words ([`SendBuffer::nth_unsent`]) instead of a walk
    /// over the records (STMS and STTF ask for it on every decision).
    sent_bits: SentBits,
    /// Nagle's algorithm at the data level ([`SendBuffer::nagle_holds`]); off unless the
    /// connection turns it on.
    nagle: bool,
    /// `tcp_minshall_update` on the meta socket: the end (DSN) of the last sub-MSS segment put
    /// on a subflow (`snd_sml`), and the highest data sent (`snd_nxt`).
    snd_sml: u64,
    snd_nxt: u64,
    /// The application's writer is asleep in `sk_stream_wait_memory` (net/core/stream.c): a
    /// write found the buffer full, and it is woken only once the buffer is writeable again
    /// ([`SendBuffer::app_space`]).
    writer_asleep: bool,
    /// Upstream Linux's MPTCP socket charges its write memory by page fragments
    /// ([`PageFrags`]); `None`: by bytes written and not yet data-acknowledged.
    frags: Option<PageFrags>,
}

/// A bit per absolute segment number: word `i` of `words` holds segments `64 (w0 + i) ..`.
/// Bits past the last word are zero.
#[derive(Debug, Default)]
struct SentBits {
    w0: u64,
    words: VecDeque<u64>,
}

impl SentBits {
    /// Word `w`, zero outside the stored ones (the tests read bits through it).
    #[cfg(test)]
    fn word(&self, w: u64) -> u64 {
        w.checked_sub(self.w0)
            .and_then(|i| self.words.get(i as usize))
            .copied()
            .unwrap_or(0)
    }

    /// Inlined (it runs on every transmission), with the growth of the words out of line:
    /// left to the compiler, whether it was inlined changed with unrelated code elsewhere
    /// (about 50 instructions per data packet).
    #[inline]
    fn set(&mut self, no: SegNo, on: bool) {
        let Some(i) = (no / 64).checked_sub(self.w0).map(|i| i as usize) else {
            return;
        };
        if i >= self.words.len() {
            if !on {
                return;
            }
            self.grow(i + 1);
        }
        let bit = 1u64 << (no % 64);
        if on {
            self.words[i] |= bit;
        } else {
            self.words[i] &= !bit;
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, words: usize) {
        self.words.resize(words, 0);
    }

    /// Forget the words wholly below segment `base`.
    fn drop_below(&mut self, base: SegNo) {
        while self.w0 < base / 64 {
            self.words.pop_front();
            self.w0 += 1;
        }
    }

    /// A record was inserted at `no` (unsent): the bits from `no` on move up by one.
    fn insert_unsent(&mut self, no: SegNo) {
        self.shift(no, true);
    }

    /// The record at `no` was removed: the bits above it move down by one.
    fn remove(&mut self, no: SegNo) {
        self.shift(no, false);
    }

    fn shift(&mut self, no: SegNo, up: bool) {
        let Some(first) = (no / 64).checked_sub(self.w0).map(|i| i as usize) else {
            return;
        };
        if first >= self.words.len() {
            return;
        }
        if up && self.words.back().is_some_and(|&w| w >> 63 != 0) {
            self.words.push_back(0);
        }
        let b = no % 64;
        let low = (1u64 << b) - 1; // bits below `no` in its word stay
        if up {
            let mut carry = 0;
            for (k, w) in self.words.iter_mut().enumerate().skip(first) {
                let out = *w >> 63;
                *w = if k == first {
                    (*w & low) | ((*w & !low) << 1)
                } else {
                    (*w << 1) | carry
                };
                carry = out;
            }
        } else {
            let n = self.words.len();
            for k in first..n {
                let next_low = if k + 1 < n { self.words[k + 1] & 1 } else { 0 };
                let w = self.words[k];
                self.words[k] = if k == first {
                    let high = if b == 63 { 0 } else { (w >> (b + 1)) << b };
                    (w & low) | high | (next_low << 63)
                } else {
                    (w >> 1) | (next_low << 63)
                };
            }
        }
    }

    /// The `k`-th (0-based) segment in `from..end` whose bit is clear.
    ///
    /// One pass over the stored words, with the segments below and above them (all clear)
    /// counted by arithmetic; a word with no bit set or every bit set is counted without a
    /// popcount, which the baseline x86-64 target computes in software (issue "Speed at scale":
    /// STMS's gap at 8 paths spans a few dozen words, and a lookup per word through `word`
    /// was most of a decision).
    fn nth_clear(&self, from: SegNo, mut k: u64, end: SegNo) -> Option<SegNo> {
        if from >= end {
            return None;
        }
        let mut n = from;
        let stored_from = 64 * self.w0;
        if n < stored_from {
            let below = stored_from.min(end);
            if k < below - n {
                return Some(n + k);
            }
            k -= below - n;
            n = below;
            if n >= end {
                return None;
            }
        }
        let i = (n / 64 - self.w0) as usize;
        if i < self.words.len() {
            // Bits of the current word below `n`, already counted.
            let mut lo = n % 64;
            for &bits in self.words.range(i..) {
                let start = n - lo;
                let mut clear = !bits & (u64::MAX << lo);
                let left = end - start;
                if left < 64 {
                    clear &= (1u64 << left) - 1;
                }
                let z = match clear {
                    0 => 0,
                    u64::MAX => 64,
                    c => u64::from(c.count_ones()),
                };
                if k < z {
                    for _ in 0..k {
                        clear &= clear - 1;
                    }
                    return Some(start + u64::from(clear.trailing_zeros()));
                }
                k -= z;
                n = start + 64;
                if n >= end {
                    return None;
                }
                lo = 0;
            }
        }
        // Past the stored words every segment is unsent.
        n.checked_add(k).filter(|&hit| hit < end)
    }
}

impl SendBuffer {
    pub fn new(mss: u32, capacity: u64, initial_peer_rwnd: u64) -> Self {
        SendBuffer {
            mss,
            capacity,
            segs: VecDeque::new(),
            base: 0,
            chunks: VecDeque::new(),
            next_chunk_id: 0,
            written: 0,
            data_ack: 0,
            peer_rwnd: initial_peer_rwnd,
            reinjected_bytes: 0,
            reinjected_segments: 0,
            reinject: Default::default(),
            cuts: false,
            high_touched: None,
            runs: None,
            journal: None,
            sent_bits: SentBits::default(),
            nagle: false,
            snd_sml: 0,
            snd_nxt: 0,
            writer_asleep: false,
            frags: None,
        }
    }

    /// Turn Nagle's algorithm at the data level on or off ([`SendBuffer::nagle_holds`]).
    pub fn set_nagle(&mut self, on: bool) {
        self.nagle = on;
    }

    /// `[dsn, dsn + len)` was put on a subflow by the connection (new data or a reinjection;
    /// `mptcp_write_xmit` → `tcp_minshall_update(meta_tp, ...)`).
    pub fn on_meta_send(&mut self, dsn: u64, len: u32) {
        let end = dsn + u64::from(len);
        if len < self.mss {
            self.snd_sml = end;
        }
        self.snd_nxt = self.snd_nxt.max(end);
    }

    /// Nagle's algorithm with Minshall's rule at the data level: segment `no` waits when it
    /// is the send head and the last segment written, shorter than an MSS, while data is in
    /// flight whose last short segment is not yet data-acknowledged (`tcp_nagle_check`,
    /// `tcp_minshall_check`).
    ///
    /// This is the multipath-tcp.org kernel (v0.9x, where `mptcp_rr.c`, BLEST, ECF and the
    /// default MinRTT scheduler live): `mptcp_write_xmit` (net/mptcp/mptcp_output.c) asks
    /// `tcp_nagle_test` on the meta socket for the skb the scheduler picked (with the socket's
    /// `nonagle` if it is the last of the write queue, else `TCP_NAGLE_PUSH`) and calls
    /// `tcp_minshall_update(meta_tp, ...)` after each skb it puts on a subflow: "Nagle is
    /// handled at the MPTCP-layer", the subflows are always pushed. So a write of 1,448 bytes
    /// over MPTCP's 1,420-byte MSS leaves as one full segment while its 28-byte rest waits
    /// for the next write to fill it ([`SendBuffer::write`] appends to the unsent tail, as
    /// `tcp_sendmsg` does), not as two segments. Upstream MPTCP, where the `linux` scheduler
    /// queues ahead, runs Nagle on its subflows instead
    /// ([`crate::subflow::sender::SubflowSender::nagle_holds`]): the connection leaves this off
    /// there.
    ///
    /// Only the send head is held: the kernel's schedulers hand out the meta socket's send
    /// head (or a reinjection). A scheduler that takes the last segment while earlier data is
    /// unsent (DEMS's tail fetch, Guo et al., MobiCom 2017, §5) has no kernel counterpart and
    /// is not held.
    pub fn nagle_holds(&self, no: SegNo) -> bool {
        if !self.nagle || no + 1 != self.end_seg() {
            return false;
        }
        let Some(r) = self.seg(no) else {
            return false;
        };
        let una = self.data_ack;
        !r.sent()
            && r.len < self.mss
            && una < self.snd_nxt
            && self.snd_sml > una
            && self.snd_sml <= self.snd_nxt
            && self.unsent_bytes() == u64::from(r.len)
    }

    /// Segment `no` may be sent now: within the peer's window ([`SendBuffer::in_window`]) and
    /// not held by Nagle's algorithm ([`SendBuffer::nagle_holds`]).
    pub fn may_send(&self, no: SegNo) -> bool {
        self.in_window(no) && !self.nagle_holds(no)
    }

    /// Let schedulers cut segments where a push ends ([`SendBuffer::cut`]).
    pub fn enable_cuts(&mut self) {
        self.cuts = true;
    }

    /// Grow or shrink the buffer the application writes into (Linux recomputes the MPTCP
    /// socket's `sk_sndbuf` from its subflows', `__mptcp_sync_sndbuf`). Data already written
    /// stays; only what the application may add changes.
    pub fn set_capacity(&mut self, bytes: u64) {
        self.capacity = bytes;
    }
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    // ---- application side ----------------------------------------------------------------

    /// Charge write memory as upstream Linux's MPTCP socket does: by page fragments, with
    /// their headers ([`PageFrags`]). Only before anything was written.
    pub fn charge_page_frags(&mut self) {
        debug_assert_eq!(self.written, 0, "page fragments from the first write on");
        self.frags = Some(PageFrags::default());
    }

    /// The end (DSN) of the data fragment holding `dsn` where the buffer is charged by page
    /// fragments ([`SendBuffer::charge_page_frags`]); `None` otherwise.
    pub fn frag_end(&self, dsn: u64) -> Option<u64> {
        self.frags.as_ref()?.end_of(dsn)
    }

    /// The socket's charged write memory (`sk_wmem_queued`): the bytes written and not yet
    /// data-acknowledged, and the headers of their page fragments where those are charged.
    pub fn charged(&self) -> u64 {
        self.written - self.data_ack + self.frags.as_ref().map_or(0, PageFrags::overhead)
    }

    /// Bytes the buffer has room for.
    pub fn free_space(&self) -> u64 {
        self.capacity.saturating_sub(self.charged())
    }

    /// Bytes the application's write may copy now. A writer that found the buffer full sleeps
    /// in `sk_stream_wait_memory` (net/core/stream.c) and is woken by `sk_stream_write_space`
    /// only when `__sk_stream_is_writeable` holds: the room left is at least half of what
    /// the buffer holds (`sk_stream_wspace >= sk_stream_min_wspace`), i.e. the buffer has
    /// drained to two thirds. Both the MPTCP socket (`mptcp_write_space`, called as the
    /// data-level ACK frees data fragments) and a plain TCP socket (`tcp_new_space`) wake
    /// their writer this way, and `poll` reports `EPOLLOUT` by the same test, so a
    /// non-blocking writer waits alike. Until then nothing is written, however much room a
    /// data-level ACK frees. A writer that is not asleep copies whatever fits
    /// (`mptcp_send_limit`: the buffer is not full).
    pub fn app_space(&self) -> u64 {
        if self.writer_asleep && !self.writeable() {
            0
        } else if let Some(f) = &self.frags {
            // A writer copies in page steps while the charge is under the buffer: up to a
            // page over it.
            f.copyable(self.charged(), self.capacity, self.unsent_bytes() > 0)
        } else {
            self.free_space()
        }
    }

    /// `__sk_stream_is_writeable`: room ≥ half of what is held.
    fn writeable(&self) -> bool {
        self.free_space() >= self.charged() / 2
    }

    /// The application has more to write than [`SendBuffer::app_space`] takes: its writer
    /// goes to sleep until the buffer is writeable again.
    pub fn writer_waits(&mut self) {
        self.writer_asleep = true;
    }

    /// Append up to `bytes` of application data; `end_of_chunk` closes the current chunk after
    /// it (the hint API). Returns the bytes accepted (bounded by [`SendBuffer::app_space`]);
    /// a write cut short puts the writer to sleep ([`SendBuffer::writer_waits`]).
    pub fn write(&mut self, bytes: u64, end_of_chunk: bool) -> u64 {
        let n = bytes.min(self.app_space());
        self.writer_asleep = n < bytes;
        if n == 0 && !(end_of_chunk && bytes == 0) {
            return 0;
        }
        if self.frags.is_some() {
            // Whether the tail fragment still holds data no subflow took (the chunks' sum:
            // asked only where fragments are charged).
            let pending = self.unsent_bytes() > 0;
            if let Some(f) = &mut self.frags {
                f.write(self.written, n, pending);
            }
        }
        if self.chunks.back().is_none_or(|c| c.closed) {
            let first = self.end_seg();
            self.chunks.push_back(Chunk {
                id: self.next_chunk_id,
                first,
                end: first,
                start_dsn: self.written,
                end_dsn: self.written,
                closed: false,
                unsent_bytes: 0,
                head_unsent: first,
                tail_unsent: first,
            });
            self.next_chunk_id += 1;
        }
        let mss = self.mss as u64;
        let mut left = n;
        let chunk_id = self.chunks.back().unwrap().id;
        // Linux appends to the unsent tail of the write queue before it starts a new segment
        // (`tcp_sendmsg_locked`, net/ipv4/tcp.c: `copy = size_goal - skb->len`; MPTCP collapses
        // into the pending tail fragment, `mptcp_sendmsg`): an application that writes in
        // pieces does not make sub-MSS packets while data waits for the window. A segment a
        // scheduler committed to a subflow's queue counts as sent (`tx_mask`) and keeps its size.
        if let Some(tail) = self.segs.back_mut() {
            if tail.chunk == chunk_id && tail.tx_mask == 0 && u64::from(tail.len) < mss {
                let add = left.min(mss - u64::from(tail.len));
                tail.len += add as u32;
                self.written += add;
                left -= add;
            }
        }
        let old_end = self.end_seg();
        while left > 0 {
            let len = left.min(mss);
            self.segs
                .push_back(Self::fresh(self.written, len as u32, chunk_id));
            self.written += len;
            left -= len;
        }
        let end = self.end_seg();
        if let Some(r) = &mut self.runs {
            r.insert_range(old_end, end);
        }
        let written = self.written;
        let c = self.chunks.back_mut().unwrap();
        c.end = end;
        c.end_dsn = written;
        c.unsent_bytes += n;
        c.tail_unsent = end;
        if end_of_chunk {
            c.closed = true;
        }
        n
    }

    // ---- what schedulers read ------------------------------------------------------------

    pub fn mss(&self) -> u32 {
        self.mss
    }
    /// One past the highest segment number written.
    pub fn end_seg(&self) -> SegNo {
        self.base + self.segs.len() as u64
    }
    /// Lowest segment number still in the buffer.
    pub fn base_seg(&self) -> SegNo {
        self.base
    }
    pub fn seg(&self, no: SegNo) -> Option<&SegRecord> {
        self.segs.get(no.checked_sub(self.base)? as usize)
    }

    /// The first segment in `from..=hi` that is sent or not in the buffer, else `hi + 1`: the
    /// end of a run of unsent segments starting at `from`. Scans the buffer's two slices
    /// directly (DEMS looks for the unsent gaps of a whole chunk on every decision, and
    /// indexing the deque segment by segment was most of its cost).
    pub fn unsent_run_end(&self, from: SegNo, hi: SegNo) -> SegNo {
        let Some(i0) = from.checked_sub(self.base) else {
            return from;
        };
        let i0 = i0 as usize;
        let i1 = (hi.saturating_add(1).saturating_sub(self.base) as usize).min(self.segs.len());
        if i0 >= i1 {
            return from;
        }
        let (a, b) = self.segs.as_slices();
        let in_a = a.get(i0..i1.min(a.len())).unwrap_or(&[]);
        if let Some(k) = in_a.iter().position(SegRecord::sent) {
            return from + k as u64;
        }
        let (j0, j1) = (i0.max(a.len()) - a.len(), i1.saturating_sub(a.len()));
        if j0 < j1 {
            if let Some(k) = b[j0..j1].iter().position(SegRecord::sent) {
                return self.base + (a.len() + j0 + k) as u64;
            }
        }
        self.base + i1 as u64
    }
    /// The runs `[lo, hi)` of unsent segments that meet `[from, to)`, clipped to it, in
    /// increasing order. The first call scans the buffer once; from then on the runs are kept
    /// up to date on every transition (write, send, unassign, cut, collapse, data-ACK), so a
    /// query costs O(log runs + runs returned) instead of a scan of the unsent segments.
    pub fn unsent_runs(
        &mut self,
        from: SegNo,
        to: SegNo,
    ) -> impl Iterator<Item = (SegNo, SegNo)> + '_ {
        if self.runs.is_none() {
            let mut r = UnsentRuns::default();
            for (i, s) in self.segs.iter().enumerate() {
                if !s.sent() {
                    r.insert_range(self.base + i as u64, self.base + i as u64 + 1);
                }
            }
            self.runs = Some(r);
        }
        self.runs
            .as_ref()
            .into_iter()
            .flat_map(move |r| r.within(from, to))
    }

    /// Keep a journal of [`TxEvent`]s from now on (`true`), or stop and drop it (`false`), for
    /// a scheduler that indexes the transmission records instead of scanning them: only while
    /// it has an index to keep up to date.
    pub fn record_tx_events(&mut self, on: bool) {
        if on {
            self.journal.get_or_insert_with(Vec::new);
        } else {
            self.journal = None;
        }
    }

    /// Journal: segment `no` (in the buffer) needs no more copies.
    #[inline(never)]
    fn log_done(&mut self, no: SegNo) {
        let chunk = self.seg(no).map(|s| s.chunk);
        if let (Some(j), Some(chunk)) = (&mut self.journal, chunk) {
            j.push(TxEvent::Done { seg: no, chunk });
        }
    }

    /// Move the journal's events, oldest first, to the end of `out`.
    pub fn take_tx_events(&mut self, out: &mut Vec<TxEvent>) {
        if let Some(j) = &mut self.journal {
            out.append(j);
        }
    }

    /// The `k`-th (0-based) unsent segment at or after `from`, if written; `None` when `from`
    /// has left the buffer. Popcounts over a bit per segment: O(1 + (k + sent segments
    /// skipped) / 64).
    pub fn nth_unsent(&self, from: SegNo, k: u64) -> Option<SegNo> {
        if from < self.base {
            return None;
        }
        self.sent_bits.nth_clear(from, k, self.end_seg())
    }
    pub fn data_ack(&self) -> u64 {
        self.data_ack
    }
    pub fn peer_rwnd(&self) -> u64 {
        self.peer_rwnd
    }
    /// Highest DSN (exclusive) the peer's receive window allows now.
    pub fn rwnd_limit(&self) -> u64 {
        self.data_ack.saturating_add(self.peer_rwnd)
    }
    /// Free space in the peer's receive window for new data beyond what was sent.
    pub fn written(&self) -> u64 {
        self.written
    }
    /// Unacknowledged plus unsent bytes in the buffer.
    pub fn occupancy(&self) -> u64 {
        self.written - self.data_ack
    }
    pub fn reinjected_bytes(&self) -> u64 {
        self.reinjected_bytes
    }
    pub fn reinjected_segments(&self) -> u64 {
        self.reinjected_segments
    }
    /// Whether segment `no` fits in the peer's receive window.
    #[inline]
    pub fn in_window(&self, no: SegNo) -> bool {
        self.seg(no).is_some_and(|s| s.end() <= self.rwnd_limit())
    }

    /// The chunk being transferred: the oldest one with unacknowledged data.
    pub fn current_chunk(&self) -> Option<&Chunk> {
        self.chunks.front()
    }
    pub fn chunks(&self) -> impl Iterator<Item = &Chunk> {
        self.chunks.iter()
    }
    /// The oldest chunk that still has unsent data.
    pub fn first_chunk_with_unsent(&self) -> Option<&Chunk> {
        self.chunks.iter().find(|c| c.unsent_bytes > 0)
    }
    /// Total unsent bytes in all chunks.
    pub fn unsent_bytes(&self) -> u64 {
        self.chunks.iter().map(|c| c.unsent_bytes).sum()
    }

    /// Lowest unsent segment of `chunk` (the head end). Amortized O(1).
    pub fn first_unsent(&mut self, chunk: u64) -> Option<SegNo> {
        let ci = self.chunk_index(chunk)?;
        self.first_unsent_at(ci)
    }

    /// [`SendBuffer::first_unsent`] of the chunk at index `ci` of `chunks`.
    fn first_unsent_at(&mut self, ci: usize) -> Option<SegNo> {
        let base = self.base;
        // In place, not a copy of the chunk: this runs once per segment sent.
        let c = &mut self.chunks[ci];
        if c.unsent_bytes == 0 {
            return None;
        }
        let end = c.end;
        let mut n = c.head_unsent.max(base);
        while n < end && self.segs[(n - base) as usize].sent() {
            n += 1;
        }
        c.head_unsent = n;
        if n >= end {
            return None;
        }
        if self.segs[(n - base) as usize].len > self.mss {
            self.carry_excess(n);
        }
        Some(n)
    }

    /// Highest unsent segment of `chunk` (the tail end). Amortized O(1) between appends.
    pub fn last_unsent(&mut self, chunk: u64) -> Option<SegNo> {
        let base = self.base;
        let ci = self.chunk_index(chunk)?;
        let c = self.chunks[ci];
        if c.unsent_bytes == 0 {
            return None;
        }
        let lo = c.first.max(base);
        let mut n = c.tail_unsent;
        while n > lo && self.segs[(n - 1 - base) as usize].sent() {
            n -= 1;
        }
        self.chunks[ci].tail_unsent = n;
        (n > lo).then(|| n - 1)
    }

    /// The first unsent segment over all chunks, in DSN order (what MinRTT-style schedulers
    /// send next).
    pub fn next_unsent(&mut self) -> Option<SegNo> {
        // The index of the chunk, not its id looked up again.
        let ci = self.chunks.iter().position(|c| c.unsent_bytes > 0)?;
        self.first_unsent_at(ci)
    }

    fn chunk_index(&self, id: u64) -> Option<usize> {
        let first = self.chunks.front()?.id;
        let i = id.checked_sub(first)? as usize;
        (i < self.chunks.len()).then_some(i)
    }

    // ---- cutting segments where a push ends ----------------------------------------------
    //
    // Linux's MPTCP socket hands a subflow bytes, not segments: a push ends where the data-level
    // window ends or after a data fragment once the burst is spent (`__subflow_push_pending`,
    // `mptcp_check_allowed_size`, net/mptcp/protocol.c), and the subflow's skb ends there. If
    // the skb leaves before the next push extends it, the wire carries a short segment and the
    // next data starts at the cut, not on our MSS grid. Segments are pre-cut at write time, so a
    // cut moves bytes between neighbouring records instead: only records above `high_touched`
    // (never committed nor sent) change, so no number a subflow or scheduler holds moves.

    /// Cut segment `no` at DSN `at`: it keeps `[dsn, at)`, the rest joins the next segment of
    /// its chunk (which may then exceed the MSS until it is the next to send; see
    /// [`SendBuffer::first_unsent`]) or becomes a new last segment. `no` may be committed to a
    /// subflow's queue (the bytes cut off return to the unsent data) but must not be on the
    /// wire: the caller knows which.
    /// Returns false, changing nothing, when cuts are off or the cut would move a record
    /// something already holds.
    pub fn cut(&mut self, no: SegNo, at: u64) -> bool {
        if !self.cuts || self.high_touched.is_some_and(|h| no < h) {
            return false;
        }
        let Some(i) = no.checked_sub(self.base).map(|i| i as usize) else {
            return false;
        };
        let Some(&s) = self.segs.get(i) else {
            return false;
        };
        if at <= s.dsn || at >= s.end() {
            return false;
        }
        let rest = s.end() - at;
        let joins_next = self
            .segs
            .get(i + 1)
            .is_some_and(|n| n.chunk == s.chunk && n.tx_mask == 0);
        if !joins_next && i + 1 != self.segs.len() {
            // The last segment of a chunk with more chunks behind it: a new record would
            // renumber them. Rare (a push ending inside a chunk's last segment while the next
            // chunk is already written); the segment stays whole.
            return false;
        }
        self.segs[i].len -= rest as u32;
        self.pass_on(i, at, rest as u32);
        if s.sent() {
            if let Some(ci) = self.chunk_index(s.chunk) {
                let c = &mut self.chunks[ci];
                c.unsent_bytes += rest;
                c.head_unsent = c.head_unsent.min(no + 1);
                c.tail_unsent = c.tail_unsent.max(no + 2).min(c.end);
            }
        }
        true
    }

    /// Segment `tail`, committed to a subflow and still short of an MSS, takes bytes from the
    /// untouched segment after it: the push continues on the same subflow, so the kernel
    /// appends to the same skb (`mptcp_skb_can_collapse_to`). `tail` must not be on the wire
    /// (the caller knows). Returns the bytes moved, and whether the next segment gave all of
    /// its bytes: then it either disappears or, where the segment after it carries a cut's
    /// excess of an MSS or more, takes an MSS of that instead and stays, so that the records
    /// behind it keep their numbers (a removal from the middle of the buffer moved every
    /// unsent record behind it: 27% of a one-path `linux` run once the writer wrote a third
    /// of the buffer at a time, issue "Speed at scale"). Either way the same segments leave:
    /// an excess of more than an MSS passes on when its record is next
    /// ([`SendBuffer::first_unsent`]) and one of exactly an MSS is a whole segment, so no
    /// short record stays behind the refilled one (a refill from under two MSS would leave
    /// one).
    pub fn collapse(&mut self, tail: SegNo) -> (u64, bool) {
        if !self.cuts {
            return (0, false);
        }
        let Some(i) = tail.checked_sub(self.base).map(|i| i as usize) else {
            return (0, false);
        };
        let (Some(&t), Some(&n)) = (self.segs.get(i), self.segs.get(i + 1)) else {
            return (0, false);
        };
        if t.len >= self.mss || n.chunk != t.chunk || n.tx_mask != 0 || n.dsn != t.end() {
            return (0, false);
        }
        let k = (self.mss - t.len).min(n.len);
        self.segs[i].len += k;
        // A tail committed to other subflows' queues as well (an MPTCP-level retransmission
        // put it there) grows in each of them: every copy still to leave carries the `k` bytes,
        // and all but one are second copies. (Each commit counted the shorter tail.)
        let pending = (t.tx_mask & !t.wire_mask).count_ones();
        if pending > 1 {
            self.reinjected_bytes += u64::from(k) * u64::from(pending - 1);
        }
        let ci = self.chunk_index(t.chunk);
        let all = k == n.len;
        let refill = self
            .segs
            .get(i + 2)
            .filter(|m| m.chunk == t.chunk && m.tx_mask == 0 && m.len >= 2 * self.mss)
            .map(|m| m.dsn);
        if let (true, Some(from)) = (all, refill) {
            let mss = self.mss;
            let n = &mut self.segs[i + 1];
            n.dsn = from;
            n.len = mss;
            let m = &mut self.segs[i + 2];
            m.dsn += u64::from(mss);
            m.len -= mss;
        } else if all {
            self.segs.remove(i + 1);
            if let Some(r) = &mut self.runs {
                let gone = self.base + i as u64 + 1;
                r.remove(gone);
                r.shift_from(gone + 1, -1);
            }
            if let Some(j) = &mut self.journal {
                j.push(TxEvent::Renumbered);
            }
            self.sent_bits.remove(self.base + i as u64 + 1);
            self.renumber_after(t.chunk, -1);
        } else {
            let n = &mut self.segs[i + 1];
            n.dsn += u64::from(k);
            n.len -= k;
        }
        if t.sent() {
            if let Some(ci) = ci {
                self.chunks[ci].unsent_bytes -= u64::from(k);
            }
        }
        (u64::from(k), all)
    }

    /// The next segment to send is longer than an MSS after a cut: it keeps one MSS and passes
    /// the rest on, in the same way.
    fn carry_excess(&mut self, no: SegNo) {
        let i = (no - self.base) as usize;
        let s = self.segs[i];
        self.segs[i].len = self.mss;
        self.pass_on(i, s.dsn + u64::from(self.mss), s.len - self.mss);
    }

    /// Bytes `[at, at + len)`, just taken off the end of segment `i`, go to the next segment of
    /// its chunk, or to a new segment after `i`. Only untouched records follow `i` (callers
    /// check), so the new record in the middle of the buffer (the chunk's last segment with
    /// more chunks behind it) may renumber the later chunks.
    fn pass_on(&mut self, i: usize, at: u64, len: u32) {
        let chunk = self.segs[i].chunk;
        match self.segs.get_mut(i + 1) {
            Some(n) if n.chunk == chunk => {
                n.dsn = at;
                n.len += len;
            }
            None => self.push_seg_back(at, len, chunk),
            Some(_) => {
                self.segs.insert(i + 1, Self::fresh(at, len, chunk));
                if let Some(r) = &mut self.runs {
                    let new = self.base + i as u64 + 1;
                    r.shift_from(new, 1);
                    r.insert(new);
                }
                if let Some(j) = &mut self.journal {
                    j.push(TxEvent::Renumbered);
                }
                self.sent_bits.insert_unsent(self.base + i as u64 + 1);
                self.renumber_after(chunk, 1);
            }
        }
    }

    fn fresh(dsn: u64, len: u32, chunk: u64) -> SegRecord {
        SegRecord {
            dsn,
            len,
            chunk,
            tx_mask: 0,
            tx_at: [NEVER; MAX_PATHS],
            received: false,
            reinject_from: 0,
            wire_mask: 0,
        }
    }

    /// A new untouched last segment of chunk `chunk` (the buffer's last chunk).
    fn push_seg_back(&mut self, dsn: u64, len: u32, chunk: u64) {
        self.segs.push_back(Self::fresh(dsn, len, chunk));
        let end = self.end_seg();
        if let Some(r) = &mut self.runs {
            r.insert(end - 1);
        }
        if let Some(ci) = self.chunk_index(chunk) {
            let c = &mut self.chunks[ci];
            c.end = end;
            c.tail_unsent = end;
        }
    }

    /// Chunk `chunk` gained (`d` = 1) or lost (`d` = -1) a segment in the middle of the buffer:
    /// its end and every later chunk's segment numbers move.
    fn renumber_after(&mut self, chunk: u64, d: i64) {
        let Some(ci) = self.chunk_index(chunk) else {
            return;
        };
        let mv = |n: SegNo| n.saturating_add_signed(d);
        for (k, c) in self.chunks.iter_mut().enumerate().skip(ci) {
            if k > ci {
                c.first = mv(c.first);
                c.head_unsent = mv(c.head_unsent);
            }
            c.end = mv(c.end);
            c.tail_unsent = mv(c.tail_unsent).min(c.end);
            c.head_unsent = c.head_unsent.min(c.end);
        }
    }

    // ---- connection-level reinjection ------------------------------------------------------

    /// Path `from` timed out holding segment `no`: queue it for another subflow, as v0.9x
    /// `mptcp_reinject_data` (net/mptcp/mptcp_output.c) does with every segment of the subflow's
    /// write queue. A segment already data-acknowledged, already received (SACKed), or queued
    /// before from the same subflow is skipped (`__mptcp_reinject_data` drops what the
    /// data-ACK covers; `MPTCP_REINJECT` keeps a second timeout from queueing it again).
    pub fn queue_reinject(&mut self, no: SegNo, from: PathId) -> bool {
        let base = self.base;
        let Some(s) = no
            .checked_sub(base)
            .and_then(|i| self.segs.get_mut(i as usize))
        else {
            return false;
        };
        if s.received || s.reinject_from & (1 << from) != 0 {
            return false;
        }
        s.reinject_from |= 1 << from;
        self.reinject.insert(no)
    }

    /// The oldest segment waiting for reinjection. Entries the data-ACK or a subflow ACK has
    /// covered meanwhile leave the queue here (v0.9x frees them in `mptcp_write_xmit`).
    pub fn reinject_head(&mut self) -> Option<SegNo> {
        while let Some(&no) = self.reinject.first() {
            if self.seg(no).is_some_and(|s| !s.received) {
                return Some(no);
            }
            self.reinject.pop_first();
        }
        None
    }

    /// Segment `no` left the reinjection queue (sent, or no subflow may carry it).
    pub fn take_reinject(&mut self, no: SegNo) {
        self.reinject.remove(&no);
    }

    pub fn reinject_pending(&self) -> bool {
        !self.reinject.is_empty()
    }

    /// Segment `no` is sent again on a path that carried it before, at the connection level
    /// (upstream's MPTCP-level retransmission knows only the data-ACK): count it with the
    /// reinjections, since [`SendBuffer::on_transmit`] counts only a first copy on a path.
    pub fn count_resend(&mut self, no: SegNo) {
        if let Some(len) = self.seg(no).map(|s| s.len) {
            self.reinjected_bytes += len as u64;
            self.reinjected_segments += 1;
        }
    }

    /// Segment `no` left on path `p` (not only committed to its write queue).
    pub fn on_wire(&mut self, no: SegNo, p: PathId) {
        if let Some(s) = no
            .checked_sub(self.base)
            .and_then(|i| self.segs.get_mut(i as usize))
        {
            s.wire_mask |= 1 << p;
        }
    }

    // ---- transitions driven by the connection ----------------------------------------------

    /// Record a transmission of `no` on path `p` at `now`; counts a reinjection when another
    /// path carried it before.
    #[inline(always)]
    pub fn on_transmit(&mut self, no: SegNo, p: PathId, now: Time) {
        self.record_transmit(no, p, now, false);
    }

    /// [`SendBuffer::on_transmit`] then [`SendBuffer::on_wire`], with one lookup of the record
    /// (the connection does both for every segment it sends).
    /// Returns the segment's DSN, length, `tx_mask` and `wire_mask` before this transmission
    /// (`None` when it is no longer in the buffer), which the caller would otherwise look up
    /// first.
    #[inline(always)]
    pub fn on_transmit_wire(
        &mut self,
        no: SegNo,
        p: PathId,
        now: Time,
    ) -> Option<(u64, u32, u8, u8)> {
        self.record_transmit(no, p, now, true)
    }

    #[inline(always)]
    fn record_transmit(
        &mut self,
        no: SegNo,
        p: PathId,
        now: Time,
        wire: bool,
    ) -> Option<(u64, u32, u8, u8)> {
        // A subflow may resend a segment the data-ACK has freed already (upstream Linux's
        // timed-out subflow keeps retransmitting what another subflow delivered): nothing to
        // record then.
        let s = no
            .checked_sub(self.base)
            .and_then(|i| self.segs.get_mut(i as usize))?;
        let before = (s.dsn, s.len, s.tx_mask, s.wire_mask);
        let first_send = !s.sent();
        self.high_touched = self.high_touched.max(Some(no));
        if !first_send && s.tx_mask & !(1u8 << p) != 0 && !s.sent_on(p) {
            self.reinjected_bytes += s.len as u64;
            self.reinjected_segments += 1;
        }
        if let Some(j) = &mut self.journal {
            log_event(
                j,
                TxEvent::Sent {
                    seg: no,
                    chunk: s.chunk,
                    path: p,
                    before: s.tx_time(p as usize),
                    at: now,
                },
            );
        }
        s.tx_mask |= 1 << p;
        s.set_tx_time(p as usize, Some(now));
        if wire {
            s.wire_mask |= 1 << p;
        }
        if first_send {
            self.sent_bits.set(no, true);
            let (len, chunk) = (s.len as u64, s.chunk);
            if let Some(ci) = self.chunk_index(chunk) {
                self.chunks[ci].unsent_bytes -= len;
            }
            if let Some(r) = &mut self.runs {
                runs_remove(r, no);
            }
        }
        Some(before)
    }

    /// Segment `no` was committed to path `p`'s write queue but never left: it goes back to the
    /// unsent data (a stale subflow's queue is pushed again, upstream
    /// `__mptcp_retransmit_pending_data`, net/mptcp/protocol.c).
    pub fn unassign(&mut self, no: SegNo, p: PathId) {
        let base = self.base;
        let Some(s) = no
            .checked_sub(base)
            .and_then(|i| self.segs.get_mut(i as usize))
        else {
            return;
        };
        if !s.sent_on(p) {
            return;
        }
        if let (Some(j), Some(before)) = (&mut self.journal, s.tx_time(p as usize)) {
            j.push(TxEvent::Returned {
                seg: no,
                chunk: s.chunk,
                path: p,
                before,
            });
        }
        s.tx_mask &= !(1u8 << p);
        s.set_tx_time(p as usize, None);
        if s.sent() {
            return;
        }
        self.sent_bits.set(no, false);
        let (len, chunk) = (s.len as u64, s.chunk);
        if let Some(r) = &mut self.runs {
            r.insert(no);
        }
        if let Some(ci) = self.chunk_index(chunk) {
            let c = &mut self.chunks[ci];
            c.unsent_bytes += len;
            c.head_unsent = c.head_unsent.min(no);
            c.tail_unsent = c.tail_unsent.max(no + 1);
        }
    }

    /// A subflow reported segment `no` received.
    #[inline]
    pub fn on_received(&mut self, no: SegNo) {
        if let Some(i) = no.checked_sub(self.base) {
            if let Some(s) = self.segs.get_mut(i as usize) {
                let first = !s.received;
                s.received = true;
                if first && self.journal.is_some() {
                    self.log_done(no);
                }
            }
        }
    }

    /// New data-ACK and receive window from the peer. Frees acknowledged segments and closed
    /// chunks. Returns the bytes freed.
    pub fn on_data_ack(&mut self, data_ack: u64, rwnd: u64) -> u64 {
        // Window updates ride on every ACK. ACKs are in order per subflow but not across
        // subflows: a window with an older data-ACK is ignored, and the window's right edge
        // only moves right (`ack_update_msk`, net/mptcp/options.c: `msk->wnd_end` takes
        // data-ACK + the subflow's window only when that is further). Subflows offer their
        // own windows, so a later data-ACK on one offering less must not take back what
        // another offered; a plain TCP peer never moves its edge left anyway.
        if data_ack < self.data_ack {
            return 0;
        }
        let edge = self.rwnd_limit().max(data_ack.saturating_add(rwnd));
        self.peer_rwnd = edge - data_ack;
        if data_ack == self.data_ack {
            return 0;
        }
        let freed = data_ack.min(self.written) - self.data_ack;
        self.data_ack = data_ack.min(self.written);
        if let Some(f) = &mut self.frags {
            f.on_data_ack(self.data_ack);
        }
        while let Some(s) = self.segs.front() {
            if s.end() > self.data_ack {
                break;
            }
            if let (Some(j), false) = (&mut self.journal, s.received) {
                log_event(
                    j,
                    TxEvent::Done {
                        seg: self.base,
                        chunk: s.chunk,
                    },
                );
            }
            self.segs.pop_front();
            self.base += 1;
        }
        if let Some(r) = &mut self.runs {
            r.trim_below(self.base);
        }
        self.sent_bits.drop_below(self.base);
        while let Some(c) = self.chunks.front() {
            if c.end_dsn <= self.data_ack && (c.closed || c.end_dsn == self.written) {
                if !c.closed && self.chunks.len() == 1 {
                    // An open chunk fully acknowledged stays as the (empty) current chunk so
                    // that appended data joins it.
                    let c = self.chunks.front_mut().unwrap();
                    c.first = self.base;
                    c.start_dsn = self.data_ack;
                    c.head_unsent = self.base;
                    break;
                }
                self.chunks.pop_front();
            } else {
                break;
            }
        }
        freed
    }
}

/// Out of line: only schedulers that asked for the journal pay for it, and the transitions
/// every scheduler runs stay small enough to inline.
#[inline(never)]
fn log_event(j: &mut Vec<TxEvent>, e: TxEvent) {
    j.push(e);
}

#[inline(never)]
fn runs_remove(r: &mut UnsentRuns, n: SegNo) {
    r.remove(n);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf() -> SendBuffer {
        SendBuffer::new(1000, 1 << 20, 1 << 20)
    }

    #[test]
    fn unsent_run_end_matches_a_segment_by_segment_scan_across_the_deque_wrap() {
        // Segments 0-39 written and sent, 0-29 acknowledged (the deque's head moves on), then
        // 40 more written: the live segments straddle the deque's wrap point. Every third of
        // the new ones is sent, plus a run at the end.
        let mut b = buf();
        b.write(40_000, false);
        for n in 0..40 {
            b.on_transmit(n, 0, Time::ZERO);
        }
        b.on_data_ack(30_000, 1 << 20);
        b.write(40_000, false);
        for n in (40..80).filter(|n| n % 3 == 0).chain(75..78) {
            b.on_transmit(n, 1, Time::ZERO);
        }
        let scan = |from: SegNo, hi: SegNo| {
            let mut s = from;
            while s <= hi && b.seg(s).is_some_and(|r| !r.sent()) {
                s += 1;
            }
            s
        };
        assert!(
            !b.segs.as_slices().1.is_empty(),
            "the test needs a wrapped deque"
        );
        for from in 25..85u64 {
            for hi in from.saturating_sub(2)..90 {
                assert_eq!(b.unsent_run_end(from, hi), scan(from, hi), "{from}..={hi}");
            }
        }
    }

    /// The k-th unsent segment from `from`, walking the records (what `nth_unsent` replaced).
    fn nth_unsent_by_walk(b: &SendBuffer, from: SegNo, k: u64) -> Option<SegNo> {
        let mut left = k;
        for n in from..b.end_seg() {
            if !b.seg(n)?.sent() {
                if left == 0 {
                    return Some(n);
                }
                left -= 1;
            }
        }
        None
    }

    fn assert_nth_unsent_matches_the_walk(b: &SendBuffer) {
        for n in b.base_seg()..b.end_seg() + 70 {
            let bit = b.sent_bits.word(n / 64) >> (n % 64) & 1 == 1;
            assert_eq!(bit, b.seg(n).is_some_and(|r| r.sent()), "segment {n}");
        }
        let span = b.end_seg() - b.base_seg();
        for from in (b.base_seg().saturating_sub(2)..b.end_seg() + 2).step_by(1 + span as usize / 8)
        {
            for k in 0..span + 3 {
                assert_eq!(
                    b.nth_unsent(from, k),
                    nth_unsent_by_walk(b, from, k),
                    "from {from}, k {k}"
                );
            }
        }
    }

    proptest::proptest! {
        /// Inserting and removing records in the middle moves the bits above, across words,
        /// as a `Vec<bool>` moves its elements.
        #[test]
        fn sent_bits_shift_like_a_vector(
            base in 0u64..300,
            bits in proptest::collection::vec(proptest::bool::ANY, 0..300),
            ops in proptest::collection::vec((proptest::bool::ANY, 0usize..400), 1..20)
        ) {
            let mut sb = SentBits::default();
            sb.drop_below(base);
            let mut model: Vec<bool> = bits.clone();
            for (i, &on) in bits.iter().enumerate() {
                sb.set(base + i as u64, on);
            }
            for (insert, at) in ops {
                if model.is_empty() {
                    break;
                }
                let at = at % model.len();
                if insert {
                    model.insert(at, false);
                    sb.insert_unsent(base + at as u64);
                } else {
                    model.remove(at);
                    sb.remove(base + at as u64);
                }
                for (i, &on) in model.iter().enumerate() {
                    let n = base + i as u64;
                    proptest::prop_assert_eq!(sb.word(n / 64) >> (n % 64) & 1 == 1, on, "bit {}", i);
                }
                let n = base + model.len() as u64;
                proptest::prop_assert_eq!(sb.word(n / 64) >> (n % 64), 0, "above the last record");
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Sends in any order, write-queue commits taken back, data-ACKs, cuts and collapses:
        /// the bit per segment always agrees with the records.
        #[test]
        fn nth_unsent_matches_a_walk_over_the_records(
            ops in proptest::collection::vec((0u8..6, 0u64..200, 0u8..3), 1..60)
        ) {
            let mut b = SendBuffer::new(1000, 1 << 20, 1 << 20);
            b.enable_cuts();
            for (op, x, p) in ops {
                let span = b.end_seg() - b.base_seg();
                let pick = b.base_seg() + if span == 0 { 0 } else { x % span };
                match op {
                    0 => {
                        b.write(1 + x * 97, x % 3 == 0);
                    }
                    1 | 2 => b.on_transmit(pick, p, Time::ZERO),
                    3 => b.unassign(pick, p),
                    4 => {
                        let upto = b.seg(pick).map_or(0, |r| r.dsn);
                        let acked = (b.base_seg()..pick)
                            .all(|n| b.seg(n).is_some_and(|r| r.sent()));
                        if acked {
                            b.on_data_ack(upto, 1 << 20);
                        }
                    }
                    _ => {
                        if let Some(r) = b.seg(pick).copied() {
                            if x % 2 == 0 {
                                b.cut(pick, r.dsn + 1 + x % u64::from(r.len.max(1)));
                            } else {
                                b.collapse(pick);
                            }
                        }
                    }
                }
                assert_nth_unsent_matches_the_walk(&b);
            }
        }
    }

    fn lens(b: &SendBuffer) -> Vec<(u64, u32)> {
        (b.base_seg()..b.end_seg())
            .map(|n| b.seg(n).map(|s| (s.dsn, s.len)).unwrap())
            .collect()
    }

    #[test]
    fn cut_passes_the_rest_on_and_the_next_to_send_is_trimmed_to_an_mss() {
        let mut b = buf();
        b.enable_cuts();
        b.write(3500, true);
        assert!(b.cut(0, 600));
        assert_eq!(lens(&b), [(0, 600), (600, 1400), (2000, 1000), (3000, 500)]);
        b.on_transmit(0, 0, Time::ZERO);
        assert_eq!(b.first_unsent(0), Some(1));
        assert_eq!(lens(&b), [(0, 600), (600, 1000), (1600, 1400), (3000, 500)]);
        b.on_transmit(1, 0, Time::ZERO);
        b.first_unsent(0);
        b.on_transmit(2, 0, Time::ZERO);
        // The last one absorbs what is left; nothing is lost.
        assert_eq!(b.first_unsent(0), Some(3));
        assert_eq!(lens(&b)[2..], [(1600, 1000), (2600, 900)]);
        assert_eq!(b.unsent_bytes(), 900);
    }

    #[test]
    fn cut_of_the_last_segment_makes_a_new_one_and_nothing_held_is_cut() {
        let mut b = SendBuffer::new(1000, 1 << 20, 1 << 20);
        assert!(!b.cut(0, 1), "cuts are off by default");
        b.enable_cuts();
        b.write(2000, false);
        b.on_transmit(1, 0, Time::ZERO);
        assert!(!b.cut(0, 500), "below a segment already sent");
        assert!(b.cut(1, 1300));
        assert_eq!(lens(&b), [(0, 1000), (1000, 300), (1300, 700)]);
        assert_eq!(b.current_chunk().unwrap().unsent_bytes, 1700);
        assert_eq!(b.last_unsent(0), Some(2));
    }

    /// 2,300 bytes in one chunk, segment 1 cut short at 1,500 (a push ended there), segments
    /// 0 and 1 committed to path 0: `[(0, 1000), (1000, 500), (1500, 800)]`.
    fn short_tail_queued_on_path_0() -> SendBuffer {
        let mut b = buf();
        b.enable_cuts();
        b.write(2300, true);
        assert!(b.cut(1, 1500));
        b.on_transmit(0, 0, Time::ZERO);
        b.on_transmit(1, 0, Time::ZERO);
        b
    }

    #[test]
    fn a_tail_queued_on_two_subflows_counts_its_growth_once_per_extra_copy() {
        // Segment 1 was cut short (500 B) and committed to path 0's queue, then an MPTCP-level
        // retransmission put it in path 1's queue too (counted: 500 B). Path 1's push goes on
        // and the tail takes 500 B more: both queues now send 1,000 B, so the second copy is
        // 1,000 B, not 500 (the proptest exactly_once found 451 B uncounted).
        let mut b = short_tail_queued_on_path_0();
        b.on_transmit(1, 1, Time::ZERO);
        assert_eq!(b.reinjected_bytes(), 500);
        assert_eq!(b.collapse(1), (500, false));
        assert_eq!(b.reinjected_bytes(), 1000);
        // Once path 0 has put it on the wire, a later growth is path 1's only.
        let mut b = short_tail_queued_on_path_0();
        b.on_wire(1, 0);
        b.on_transmit(1, 1, Time::ZERO);
        assert_eq!(b.collapse(1), (500, false));
        assert_eq!(b.reinjected_bytes(), 500);
    }

    #[test]
    fn collapse_refills_a_short_tail_and_drops_an_emptied_next_segment() {
        let mut b = short_tail_queued_on_path_0();
        assert_eq!(lens(&b), [(0, 1000), (1000, 500), (1500, 800)]);
        assert_eq!(b.collapse(1), (500, false));
        assert_eq!(lens(&b), [(0, 1000), (1000, 1000), (2000, 300)]);
        // A cut that leaves a short last segment, then the next chunk: the tail takes all of
        // it back and the later chunk's numbers move down.
        let mut b = buf();
        b.enable_cuts();
        b.write(800, true);
        assert!(b.cut(0, 300));
        b.write(500, true);
        b.on_transmit(0, 0, Time::ZERO);
        assert_eq!(lens(&b), [(0, 300), (300, 500), (800, 500)]);
        assert_eq!(b.collapse(0), (500, true));
        assert_eq!(lens(&b), [(0, 800), (800, 500)]);
        let c = *b.chunks().nth(1).unwrap();
        assert_eq!((c.first, c.end), (1, 2), "the later chunk renumbered");
        assert_eq!(b.first_unsent(1), Some(1));
        assert_eq!(b.first_unsent(0), None);
        assert_eq!(b.unsent_bytes(), 500);
    }

    #[test]
    fn an_emptied_segment_takes_an_mss_of_the_excess_behind_it_and_keeps_its_number() {
        // A push ended inside segment 0 (cut at 700, committed to path 0's queue); another cut
        // left 200 B in segment 1 and pushed the rest into segment 2 (2,100 B: an excess of
        // more than an MSS). The next push on path 0 appends all of segment 1 to the tail;
        // segment 1 then carries the next MSS of segment 2 instead of leaving the buffer, so
        // no record behind it is renumbered.
        let mut b = buf();
        b.enable_cuts();
        b.write(5000, true);
        assert!(b.cut(0, 700));
        b.on_transmit(0, 0, Time::ZERO);
        assert!(b.cut(1, 900));
        assert_eq!(
            lens(&b),
            [
                (0, 700),
                (700, 200),
                (900, 2100),
                (3000, 1000),
                (4000, 1000)
            ]
        );
        assert_eq!(b.collapse(0), (200, true));
        assert_eq!(
            lens(&b),
            [
                (0, 900),
                (900, 1000),
                (1900, 1100),
                (3000, 1000),
                (4000, 1000)
            ]
        );
        assert_eq!(b.end_seg(), 5, "no record left the buffer");
        assert_eq!(b.first_unsent(0), Some(1));
        assert_eq!(b.unsent_bytes(), 4100);
        assert_nth_unsent_matches_the_walk(&b);
    }

    #[test]
    fn write_packetizes_into_mss_segments_within_a_chunk() {
        let mut b = buf();
        assert_eq!(b.write(2500, true), 2500);
        assert_eq!(b.end_seg(), 3);
        assert_eq!(b.seg(2).unwrap().len, 500);
        let c = b.current_chunk().unwrap();
        assert_eq!((c.first, c.end, c.unsent_bytes), (0, 3, 2500));
    }

    /// `sk_stream_wait_memory` / `sk_stream_write_space` (net/core/stream.c): a writer that
    /// found the buffer full sleeps until the room left is at least half of what the buffer
    /// holds (`__sk_stream_is_writeable`), not as soon as a data-level ACK frees a byte.
    #[test]
    fn a_writer_that_filled_the_buffer_sleeps_until_it_drains_to_two_thirds() {
        let mut b = SendBuffer::new(1000, 30_000, 1 << 20);
        assert_eq!(b.write(40_000, false), 30_000, "cut at the buffer");
        assert_eq!(b.app_space(), 0);
        b.on_data_ack(5_000, 1 << 20);
        // 25,000 held, 5,000 free: room, but less than half of what is held.
        assert_eq!((b.free_space(), b.app_space()), (5_000, 0));
        assert_eq!(b.write(10_000, false), 0, "the writer still sleeps");
        b.on_data_ack(9_000, 1 << 20);
        assert_eq!((b.free_space(), b.app_space()), (9_000, 0));
        b.on_data_ack(10_000, 1 << 20);
        // 20,000 held, 10,000 free: writeable, and the writer takes whatever fits.
        assert_eq!(b.app_space(), 10_000);
        assert_eq!(b.write(12_000, false), 10_000);
        assert_eq!(b.app_space(), 0, "cut again: asleep again");
    }

    /// A writer that is not asleep (its last write went in whole) copies whatever fits, like
    /// `mptcp_sendmsg`, which waits only when `sk_wmem_queued >= sk_sndbuf`.
    #[test]
    fn a_writer_that_was_not_cut_short_takes_any_room() {
        let mut b = SendBuffer::new(1000, 30_000, 1 << 20);
        assert_eq!(b.write(29_000, false), 29_000);
        assert_eq!(b.app_space(), 1_000);
        assert_eq!(
            b.write(1_000, false),
            1_000,
            "fills the buffer exactly, not cut"
        );
        b.on_data_ack(500, 1 << 20);
        assert_eq!(b.app_space(), 500);
        b.writer_waits();
        assert_eq!(
            b.app_space(),
            0,
            "a writer told to wait sleeps like one cut short"
        );
    }

    #[test]
    fn a_later_write_fills_the_unsent_tail_segment_first() {
        let mut b = buf();
        b.write(1500, false);
        b.write(1200, false);
        let lens: Vec<u32> = (0..b.end_seg()).map(|n| b.seg(n).unwrap().len).collect();
        assert_eq!(lens, [1000, 1000, 700]);
        assert_eq!(b.current_chunk().unwrap().unsent_bytes, 2700);
    }

    #[test]
    fn a_sent_tail_segment_keeps_its_length() {
        let mut b = buf();
        b.write(1500, false);
        b.on_transmit(1, 0, Time::ZERO);
        b.write(300, false);
        assert_eq!((b.seg(1).unwrap().len, b.seg(2).unwrap().len), (500, 300));
    }

    #[test]
    fn segments_do_not_span_chunk_boundaries() {
        let mut b = buf();
        b.write(1500, true);
        b.write(1500, true);
        assert_eq!(b.seg(2).unwrap().dsn, 1500);
        assert_eq!(b.seg(2).unwrap().chunk, 1);
    }

    #[test]
    fn head_and_tail_meet() {
        let mut b = buf();
        b.write(5000, true);
        assert_eq!(b.first_unsent(0), Some(0));
        assert_eq!(b.last_unsent(0), Some(4));
        b.on_transmit(0, 0, Time(1));
        b.on_transmit(4, 1, Time(1));
        b.on_transmit(3, 1, Time(2));
        assert_eq!(b.first_unsent(0), Some(1));
        assert_eq!(b.last_unsent(0), Some(2));
        b.on_transmit(1, 0, Time(3));
        b.on_transmit(2, 0, Time(3));
        assert_eq!(b.first_unsent(0), None);
        assert_eq!(b.last_unsent(0), None);
        assert_eq!(b.unsent_bytes(), 0);
    }

    #[test]
    fn sending_on_a_second_path_counts_as_reinjection() {
        let mut b = buf();
        b.write(1000, true);
        b.on_transmit(0, 0, Time(1));
        b.on_transmit(0, 0, Time(2));
        assert_eq!(b.reinjected_bytes(), 0);
        b.on_transmit(0, 1, Time(3));
        assert_eq!(b.reinjected_bytes(), 1000);
        assert_eq!(b.seg(0).unwrap().last_tx_elsewhere(1), Some(Time(2)));
    }

    #[test]
    fn data_ack_frees_segments_and_closed_chunks() {
        let mut b = buf();
        b.write(2000, true);
        b.write(1000, true);
        assert_eq!(b.on_data_ack(2000, 1 << 20), 2000);
        assert_eq!(b.base_seg(), 2);
        assert_eq!(b.current_chunk().unwrap().id, 1);
        assert_eq!(b.free_space(), (1 << 20) - 1000);
    }

    #[test]
    fn send_buffer_bounds_the_application() {
        let mut b = SendBuffer::new(1000, 3000, 1 << 20);
        assert_eq!(b.write(5000, false), 3000);
        assert_eq!(b.write(10, false), 0);
    }

    #[test]
    fn open_chunk_grows_at_the_tail() {
        let mut b = buf();
        b.write(2000, false);
        b.on_transmit(1, 1, Time(0));
        b.write(1000, false);
        assert_eq!(b.current_chunk().unwrap().end, 3);
        assert_eq!(b.last_unsent(0), Some(2));
    }

    #[test]
    fn window_edge_only_moves_right() {
        let mut b = SendBuffer::new(1000, 1 << 20, 2000);
        b.write(5000, true);
        b.on_data_ack(1000, 3000);
        // An older ACK with the same data-ACK, overtaken on a faster subflow.
        b.on_data_ack(1000, 2000);
        assert_eq!(b.rwnd_limit(), 4000);
        b.on_data_ack(1000, 3500);
        assert_eq!(b.rwnd_limit(), 4500);
        // A newer data-ACK with a smaller window (another subflow's, `ack_update_msk`) does
        // not take the edge back; one with a larger window moves it on.
        b.on_data_ack(2000, 1000);
        assert_eq!((b.rwnd_limit(), b.peer_rwnd()), (4500, 2500));
        b.on_data_ack(2500, 2500);
        assert_eq!(b.rwnd_limit(), 5000);
        // And an older data-ACK changes nothing.
        b.on_data_ack(1000, 9000);
        assert_eq!(b.rwnd_limit(), 5000);
    }

    #[test]
    fn segment_past_the_peer_window_is_not_in_window() {
        let mut b = SendBuffer::new(1000, 1 << 20, 2500);
        b.write(4000, true);
        assert!(b.in_window(0) && b.in_window(1));
        assert!(!b.in_window(2), "ends at 3000, past the 2500-byte window");
        b.on_data_ack(1000, 2000);
        assert!(b.in_window(2));
        assert!(!b.in_window(3));
    }

    #[test]
    fn open_chunk_fully_acked_stays_current_and_takes_new_data() {
        let mut b = buf();
        b.write(2000, false);
        b.on_transmit(0, 0, Time(0));
        b.on_transmit(1, 0, Time(0));
        b.on_data_ack(2000, 1 << 20);
        assert_eq!(b.current_chunk().map(|c| c.id), Some(0));
        b.write(1000, false);
        let c = *b.current_chunk().unwrap();
        assert_eq!(
            (c.id, c.start_dsn, c.end_dsn, c.unsent_bytes),
            (0, 2000, 3000, 1000)
        );
        assert_eq!(b.first_unsent(0), Some(2));
    }

    #[test]
    fn unsent_runs_follow_writes_sends_cuts_collapses_and_data_acks() {
        // Every transition that changes which records are unsent, in a random order; the kept
        // runs must equal a scan of the records after each one.
        let mut b = SendBuffer::new(1000, 1 << 20, 1 << 30);
        b.enable_cuts();
        b.write(3500, false);
        assert_eq!(b.unsent_runs(0, 10).count(), 1, "the first call scans");
        let mut x: u64 = 12345;
        let mut rnd = |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m.max(1)
        };
        let now = Time(1);
        let (mut cuts, mut collapses, mut returns) = (0, 0, 0);
        for step in 0..5_000 {
            let (base, end) = (b.base_seg(), b.end_seg());
            let n = base + rnd(end - base);
            match rnd(8) {
                0 => {
                    b.write(rnd(4000) + 1, rnd(3) == 0);
                }
                1..=3 => b.on_transmit(n, rnd(3) as PathId, now),
                4 => {
                    let p = rnd(3) as PathId;
                    returns += u32::from(b.seg(n).is_some_and(|s| s.tx_mask == 1 << p));
                    b.unassign(n, p);
                }
                5 => {
                    // Cuts only apply above everything sent: aim near the end.
                    let n = end.saturating_sub(1 + rnd(3)).max(base);
                    let dsn = b.seg(n).map_or(0, |s| s.dsn + 1 + rnd(998));
                    // Counted when the cut adds a record (the case that renumbers).
                    cuts += u32::from(b.cut(n, dsn) && b.end_seg() > end);
                }
                6 => {
                    // Counted when a whole record joins the one before (renumbers).
                    b.collapse(n);
                    collapses += u32::from(b.end_seg() < end);
                }
                _ => {
                    let upto = b.seg(n).map_or(0, |s| s.dsn);
                    let sent = (base..n).all(|k| b.seg(k).is_some_and(SegRecord::sent));
                    if sent {
                        b.on_data_ack(upto, 1 << 30);
                    }
                }
            }
            let (base, end) = (b.base_seg(), b.end_seg());
            let mut want: Vec<(SegNo, SegNo)> = Vec::new();
            for k in base..end {
                if !b.seg(k).unwrap().sent() {
                    match want.last_mut() {
                        Some(last) if last.1 == k => last.1 = k + 1,
                        _ => want.push((k, k + 1)),
                    }
                }
            }
            let got: Vec<_> = b.unsent_runs(base, end).collect();
            assert_eq!(got, want, "step {step}");
        }
        assert!(
            cuts > 0 && collapses > 0 && returns > 0,
            "{cuts} {collapses} {returns}"
        );
    }
}
