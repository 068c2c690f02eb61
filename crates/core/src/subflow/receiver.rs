//! The receiving half of one subflow: cumulative ACK, SACK blocks, delayed ACK, timestamps.
//!
//! Delayed ACK as Linux does it with RFC 5681 §4.2 / RFC 1122: an ACK for at least every second
//! full-sized segment, at the latest 40 ms after an unacknowledged segment arrived, and at once
//! for out-of-order data, for data that fills a hole, and for duplicates. Like Linux, a new
//! receiver starts in quick-ACK mode: its first [`QUICKACKS`] data segments are each ACKed at
//! once (`tcp_event_data_recv` → `tcp_incr_quickack`), so that the sender's first slow-start
//! rounds are not paced by the delayed-ACK timer (an odd segment count in the initial window
//! would otherwise wait 40 ms for its ACK). And like Linux, every segment that lets the
//! advertised window grow is ACKed at once: `tcp_grow_window` (net/ipv4/tcp_input.c) raises
//! `rcv_ssthresh` — the cap on the window offered, starting at one segment less than the first
//! window — by max(2·advmss, 2·len) per data segment of 128 bytes or more while it is below
//! the window the buffer allows, and sets `icsk_ack.quick |= 1`, so `__tcp_ack_snd_check`
//! sends the ACK now. A receiver that reads promptly therefore ACKs every segment until its
//! window has opened fully (measured on Linux 6.18 with a 6 MB `tcp_rmem[2]`: one ACK per
//! segment through a whole 1 MiB download), which is what lets HyStart's ACK-train detection
//! see trains on slow links. SACK blocks per
//! RFC 2018 §4: the first block holds the most recently received segment, the others repeat the
//! most recently reported blocks. TSecr per RFC 7323 §4.3: the echo of the segment that first
//! advanced the left edge since the last ACK.

use crate::packet::{Ack, DataSegment, OwdEcho, PathId, SackBlock};
use crate::rangeset::RangeSet;
use crate::time::{Duration, Time};

/// Linux's delayed-ACK timer (TCP_DELACK_MIN is 40 ms).
pub const DELACK_TIMEOUT: Duration = Duration::from_millis(40);
/// Linux's TCP_MAX_QUICKACKS: segments ACKed one by one at the start of a connection.
pub const QUICKACKS: u32 = 16;

#[derive(Debug)]
pub struct SubflowReceiver {
    path: PathId,
    mss: u32,
    /// `tp->advmss`: the MSS this receiver announced, the unit `tcp_grow_window` opens the
    /// window by (1,448 bytes on a 1,500-byte MTU, also where MPTCP's DSS option leaves 1,420
    /// bytes of payload per segment).
    advmss: u32,
    delayed_ack: bool,
    rcv_nxt: u64,
    ooo: RangeSet,
    /// Most recently reported SACK blocks (by their start), newest first.
    recent: [Option<u64>; 3],
    ts_recent: u64,
    last_ack_sent: u64,
    /// Full-sized segments received since the last ACK.
    unacked_segments: u32,
    /// Quick-ACK budget left (Linux quick-ACK mode at connection start), and what it was
    /// before the latest segment.
    quickacks: u32,
    quick_before: u32,
    /// `tp->rcv_ssthresh`: the largest window this subflow offers now, bytes; `None` until the
    /// connection sets it ([`SubflowReceiver::init_window`]), which leaves the window uncapped.
    rcv_ssthresh: Option<u64>,
    delack_deadline: Option<Time>,
    ack_now: bool,
    last_echo: Option<OwdEcho>,
    /// `tp->rcv_rtt_est`: the receiver's RTT estimate, ns (0: no sample yet), and the TSecr
    /// its last sample came from.
    rcv_rtt: u64,
    rcv_rtt_last_tsecr: u64,
    // Statistics.
    bytes_received: u64,
    segments_received: u64,
    duplicate_segments: u64,
}

/// What the receiver half did with a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentVerdict {
    /// New data (in order or not); hand its DSN range to the connection.
    New,
    /// Everything in it was received before on this subflow.
    Duplicate,
}

impl SubflowReceiver {
    pub fn new(path: PathId, mss: u32, delayed_ack: bool) -> Self {
        SubflowReceiver {
            path,
            mss,
            advmss: mss,
            delayed_ack,
            rcv_nxt: 0,
            ooo: RangeSet::new(),
            recent: [None; 3],
            ts_recent: 0,
            last_ack_sent: 0,
            unacked_segments: 0,
            quickacks: QUICKACKS,
            quick_before: QUICKACKS,
            rcv_ssthresh: None,
            delack_deadline: None,
            ack_now: false,
            last_echo: None,
            rcv_rtt: 0,
            rcv_rtt_last_tsecr: 0,
            bytes_received: 0,
            segments_received: 0,
            duplicate_segments: 0,
        }
    }

    pub fn path(&self) -> PathId {
        self.path
    }
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    pub fn bytes_received(&self) -> u64 {
        self.bytes_received
    }
    pub fn segments_received(&self) -> u64 {
        self.segments_received
    }
    pub fn duplicate_segments(&self) -> u64 {
        self.duplicate_segments
    }

    /// Start `tcp_grow_window`'s window cap at `window` bytes
    /// ([`RecvBuffer::first_offer`](crate::meta::recv::RecvBuffer::first_offer)).
    pub fn init_window(&mut self, window: u64) {
        self.rcv_ssthresh = Some(window);
    }

    /// The MSS this receiver announced, when it differs from the payload per segment.
    pub fn set_advmss(&mut self, advmss: u32) {
        self.advmss = advmss;
    }

    /// The window this subflow may offer, given what the buffer has room for (`space`):
    /// `__tcp_select_window` offers no more than `rcv_ssthresh`.
    pub fn offered_window(&self, space: u64) -> u64 {
        self.rcv_ssthresh.map_or(space, |t| space.min(t))
    }

    /// `tcp_grow_window` for a data segment of `len` bytes, with `space` the window the buffer
    /// allows now (`min(window_clamp, tcp_space)`): raise `rcv_ssthresh` and, if it grew, ACK
    /// this segment at once (`icsk_ack.quick |= 1`).
    pub fn grow_window(&mut self, len: u32, space: u64) {
        let Some(t) = self.rcv_ssthresh.as_mut() else {
            return;
        };
        if len < 128 || *t >= space {
            return;
        }
        let incr = (2 * u64::from(self.advmss)).max(2 * u64::from(len));
        *t += incr.min(space - *t);
        self.ack_now = true;
        // `icsk_ack.quick |= 1`, then the ACK sent spends one (`tcp_dec_quickack_mode`): an even
        // budget survives a growing window, so the [`QUICKACKS`] countdown runs only once the
        // window stops growing.
        self.quickacks = (self.quick_before | 1) - 1;
    }

    /// The receiver's RTT estimate (`tp->rcv_rtt_est.rtt_us`), once it has a sample.
    pub fn rcv_rtt(&self) -> Option<Duration> {
        (self.rcv_rtt > 0).then_some(Duration(self.rcv_rtt))
    }

    /// `tcp_rcv_rtt_measure_ts` (net/ipv4/tcp_input.c): a full-sized segment echoing a TSval
    /// not seen before gives the sample now − TSecr (the ACK it echoes was sent by this
    /// receiver), taken at once when smaller and folded in with gain 1/8 when larger
    /// (`tcp_rcv_rtt_update`, `win_dep` = 0).
    fn measure_rcv_rtt(&mut self, now: Time, seg: &DataSegment) {
        if seg.ts_ecr == 0 || seg.ts_ecr == self.rcv_rtt_last_tsecr {
            return;
        }
        self.rcv_rtt_last_tsecr = seg.ts_ecr;
        if seg.len < self.mss || now.0 <= seg.ts_ecr {
            return;
        }
        // `tcp_rcv_rtt_update`: a smaller sample replaces the estimate (the queue drained), a
        // larger one moves it by 1/8.
        let sample = now.0 - seg.ts_ecr;
        self.rcv_rtt = if self.rcv_rtt == 0 || sample < self.rcv_rtt {
            sample
        } else {
            self.rcv_rtt - self.rcv_rtt / 8 + sample / 8
        };
    }

    /// A data segment arrived at receiver-clock time `now`.
    pub fn on_segment(&mut self, now: Time, seg: &DataSegment) -> SegmentVerdict {
        self.segments_received += 1;
        self.last_echo = Some(OwdEcho {
            seq: seg.seq,
            ts_val: seg.ts_val,
            recv_time: now.0,
        });
        let (start, end) = (seg.seq, seg.end());
        if end <= self.rcv_nxt
            || (!self.ooo.is_empty()
                && self
                    .ooo
                    .range_containing(start)
                    .is_some_and(|(_, e)| e >= end))
        {
            self.duplicate_segments += 1;
            self.ack_now = true;
            return SegmentVerdict::Duplicate;
        }
        self.bytes_received += seg.len as u64;
        self.measure_rcv_rtt(now, seg);
        // RFC 7323 §4.3: record TSval of a segment that covers the last ACK sent.
        if start <= self.last_ack_sent {
            self.ts_recent = seg.ts_val;
        }
        let had_holes = !self.ooo.is_empty();
        if start <= self.rcv_nxt {
            self.rcv_nxt = end;
            if had_holes {
                self.fill_hole();
            }
        } else {
            self.out_of_order(start, end);
        }
        if seg.len >= self.mss {
            self.unacked_segments += 1;
        } else {
            self.unacked_segments += 2; // a short segment (end of data) is ACKed at once
        }
        self.quick_before = self.quickacks;
        if self.quickacks > 0 {
            self.quickacks -= 1;
            self.ack_now = true;
        } else if !self.delayed_ack || self.unacked_segments >= 2 {
            self.ack_now = true;
        } else if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + DELACK_TIMEOUT);
        }
        SegmentVerdict::New
    }

    /// In-order data arrived while out-of-order data waits: pull in what is now contiguous.
    /// Out of line, as `out_of_order`: the in-order path of every segment stays small (when
    /// the B-tree code was inlined into `on_segment`, every segment paid for it).
    #[inline(never)]
    fn fill_hole(&mut self) {
        if let Some((s, e)) = self.ooo.first() {
            if s <= self.rcv_nxt {
                self.rcv_nxt = self.rcv_nxt.max(e);
                self.ooo.remove_below(self.rcv_nxt);
            }
        }
        self.ack_now = true; // RFC 5681 §4.2: ACK at once when a hole is filled.
    }

    /// A segment beyond `rcv_nxt`: it waits in the out-of-order queue.
    #[inline(never)]
    fn out_of_order(&mut self, start: u64, end: u64) {
        self.ooo.insert(start, end);
        self.note_recent(start);
        self.ack_now = true; // out-of-order: immediate duplicate ACK carrying SACK.
    }

    fn note_recent(&mut self, start: u64) {
        let block_start = self.ooo.range_containing(start).map_or(start, |(s, _)| s);
        let mut next = [Some(block_start), None, None];
        let mut k = 1;
        for r in self.recent.iter().flatten() {
            if *r != block_start && k < 3 {
                next[k] = Some(*r);
                k += 1;
            }
        }
        self.recent = next;
    }

    /// True when an ACK is due now.
    pub fn wants_ack(&self) -> bool {
        self.ack_now
    }
    pub fn poll_timeout(&self) -> Option<Time> {
        self.delack_deadline
    }
    pub fn handle_timeout(&mut self, now: Time) {
        if self.delack_deadline.is_some_and(|d| d <= now) {
            self.delack_deadline = None;
            self.ack_now = true;
        }
    }

    /// Build the ACK now due (at receiver-clock time `now`), with the connection-level
    /// `data_ack` and `rwnd`.
    pub fn build_ack(&mut self, now: Time, data_ack: u64, rwnd: u64) -> Ack {
        let mut sack = [SackBlock::default(); 3];
        let mut n = 0;
        for start in self.recent.iter().flatten() {
            // A reported block may have merged with others or been passed by rcv_nxt.
            if let Some((s, e)) = self.ooo.range_containing((*start).max(self.rcv_nxt)) {
                if s >= self.rcv_nxt && !sack[..n].iter().any(|b| b.start == s) {
                    sack[n] = SackBlock { start: s, end: e };
                    n += 1;
                }
            }
        }
        self.recent = [None; 3];
        for (i, b) in sack[..n].iter().enumerate() {
            self.recent[i] = Some(b.start);
        }
        self.ack_now = false;
        self.unacked_segments = 0;
        self.delack_deadline = None;
        self.last_ack_sent = self.rcv_nxt;
        Ack {
            path: self.path,
            ack: self.rcv_nxt,
            sack,
            nsack: n as u8,
            data_ack,
            rwnd,
            ts_ecr: self.ts_recent,
            ts_val: now.0,
            owd_echo: self.last_echo.take(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn seg(seq: u64) -> DataSegment {
        DataSegment {
            path: 0,
            seq,
            len: MSS,
            dsn: seq,
            ts_val: 1 + seq,
            ts_ecr: 0,
            retransmit: false,
        }
    }

    #[test]
    fn receiver_rtt_comes_from_the_echo_of_its_own_ack() {
        // tcp_rcv_rtt_measure_ts: the first full segment echoing an ACK sent at 10 ms arrives
        // at 60 ms: 50 ms. A second segment with the same TSecr is no new sample; one echoing
        // the ACK of 70 ms at 150 ms (80 ms) moves the estimate by 1/8.
        let mut r = receiver();
        let mut s = seg(0);
        s.ts_ecr = 10_000_000;
        r.on_segment(Time(60_000_000), &s);
        assert_eq!(r.rcv_rtt(), Some(Duration(50_000_000)));
        let mut s = seg(1000);
        s.ts_ecr = 10_000_000;
        r.on_segment(Time(90_000_000), &s);
        assert_eq!(r.rcv_rtt(), Some(Duration(50_000_000)));
        let mut s = seg(2000);
        s.ts_ecr = 70_000_000;
        r.on_segment(Time(150_000_000), &s);
        assert_eq!(r.rcv_rtt(), Some(Duration(50_000_000 + 30_000_000 / 8)));
        // A smaller sample (the queue drained) replaces the estimate at once.
        let mut s = seg(3000);
        s.ts_ecr = 160_000_000;
        r.on_segment(Time(205_000_000), &s);
        assert_eq!(r.rcv_rtt(), Some(Duration(45_000_000)));
    }

    #[test]
    fn a_growing_window_keeps_an_even_quickack_budget() {
        // quick = 16: |= 1 makes 17, the ACK spends one: 16 again while the window grows.
        let mut r = SubflowReceiver::new(0, MSS, true);
        r.init_window(4000);
        for i in 0..3 {
            r.on_segment(Time(i), &seg(i * 1000));
            r.grow_window(MSS, 100_000);
            r.build_ack(Time(i), 0, 0);
        }
        assert_eq!(r.quickacks, QUICKACKS);
        // Past quick-ACK mode (0), growth forces the ACK but leaves no budget.
        r.quickacks = 0;
        r.on_segment(Time(9), &seg(3000));
        r.grow_window(MSS, 100_000);
        assert!(r.wants_ack());
        assert_eq!(r.quickacks, 0);
    }

    /// A receiver past its quick-ACK phase: the delayed-ACK rules in steady state.
    fn receiver() -> SubflowReceiver {
        let mut r = SubflowReceiver::new(0, MSS, true);
        r.quickacks = 0;
        r
    }

    #[test]
    fn every_segment_that_opens_the_window_is_acked_at_once() {
        // tcp_grow_window: rcv_ssthresh 4,000 B below a 100,000 B buffer grows by 2,000 B per
        // segment, and each growth forces an immediate ACK (`icsk_ack.quick |= 1`), even past
        // the quick-ACK phase.
        let mut r = receiver();
        r.init_window(4000);
        for i in 0..3 {
            r.on_segment(Time(i), &seg(i * 1000));
            r.grow_window(MSS, 100_000);
            assert!(r.wants_ack(), "segment {i} is ACKed at once");
            assert_eq!(r.offered_window(100_000), 4000 + 2000 * (i + 1));
            r.build_ack(Time(0), 0, 0);
        }
    }

    #[test]
    fn the_window_opens_by_twice_the_announced_mss() {
        // tcp_grow_window: incr = 2·advmss. An MPTCP subflow announces 1,448 bytes and carries
        // 1,420 per segment; Linux 6.18 opened its window by 2,896 bytes per segment (window
        // 81,920 -> 96,384 over five ACKs, in 128-byte steps).
        let mut r = receiver();
        r.init_window(80_000);
        r.set_advmss(1448);
        r.on_segment(Time(0), &seg(0));
        r.grow_window(1420, 200_000);
        assert_eq!(r.offered_window(200_000), 80_000 + 2 * 1448);
    }

    #[test]
    fn a_fully_open_window_falls_back_to_delayed_acks() {
        // rcv_ssthresh at the buffer's window: no growth, so every second segment again.
        let mut r = receiver();
        r.init_window(8000);
        r.on_segment(Time(0), &seg(0));
        r.grow_window(MSS, 8000);
        assert!(
            !r.wants_ack(),
            "one segment waits for the delayed-ACK timer"
        );
        assert_eq!(r.offered_window(20_000), 8000);
        r.on_segment(Time(1), &seg(1000));
        r.grow_window(MSS, 8000);
        assert!(r.wants_ack(), "the second is ACKed");
    }

    #[test]
    fn fresh_receiver_acks_its_first_segments_one_by_one() {
        let mut r = SubflowReceiver::new(0, MSS, true);
        for i in 0..QUICKACKS as u64 {
            r.on_segment(Time(i), &seg(i * 1000));
            assert!(r.wants_ack(), "segment {i} of the quick-ACK phase waits");
            assert_eq!(r.build_ack(Time(0), 0, 1 << 20).ack, (i + 1) * 1000);
        }
        r.on_segment(Time(99), &seg(QUICKACKS as u64 * 1000));
        assert!(!r.wants_ack(), "delayed ACK after the quick-ACK phase");
    }

    #[test]
    fn in_order_first_segment_delays_ack() {
        let mut r = receiver();
        assert_eq!(r.on_segment(Time(0), &seg(0)), SegmentVerdict::New);
        assert!(!r.wants_ack());
        assert_eq!(r.poll_timeout(), Some(Time(0) + DELACK_TIMEOUT));
    }

    #[test]
    fn in_order_second_segment_acks_both() {
        let mut r = receiver();
        r.on_segment(Time(0), &seg(0));
        r.on_segment(Time(1), &seg(1000));
        assert!(r.wants_ack());
        let a = r.build_ack(Time(0), 2000, 1 << 20);
        assert_eq!(a.ack, 2000);
        assert_eq!(a.nsack, 0);
        assert_eq!(
            a.ts_ecr, 1,
            "RFC 7323: echo the segment that advanced the left edge first"
        );
    }

    #[test]
    fn delack_timer_expiry_acks() {
        let mut r = receiver();
        r.on_segment(Time(0), &seg(0));
        r.handle_timeout(Time(0) + DELACK_TIMEOUT);
        assert!(r.wants_ack());
        assert_eq!(r.build_ack(Time(0), 1000, 0).ack, 1000);
    }

    #[test]
    fn out_of_order_acks_at_once_with_sack() {
        let mut r = receiver();
        r.on_segment(Time(0), &seg(0));
        r.on_segment(Time(1), &seg(2000));
        assert!(r.wants_ack());
        let a = r.build_ack(Time(0), 1000, 0);
        assert_eq!(a.ack, 1000);
        assert_eq!(
            a.sack_blocks(),
            &[SackBlock {
                start: 2000,
                end: 3000
            }]
        );
        assert_eq!(a.owd_echo.unwrap().seq, 2000);
    }

    #[test]
    fn newest_sack_block_comes_first() {
        let mut r = receiver();
        r.on_segment(Time(0), &seg(2000));
        r.on_segment(Time(1), &seg(4000));
        r.on_segment(Time(2), &seg(6000));
        let a = r.build_ack(Time(0), 0, 0);
        let starts: Vec<u64> = a.sack_blocks().iter().map(|b| b.start).collect();
        assert_eq!(starts, vec![6000, 4000, 2000]);
    }

    #[test]
    fn hole_fill_advances_past_buffered_data_and_acks_at_once() {
        let mut r = receiver();
        r.on_segment(Time(0), &seg(1000));
        r.on_segment(Time(1), &seg(2000));
        r.build_ack(Time(0), 0, 0);
        r.on_segment(Time(2), &seg(0));
        assert!(r.wants_ack());
        let a = r.build_ack(Time(0), 3000, 0);
        assert_eq!(a.ack, 3000);
        assert_eq!(a.nsack, 0);
    }

    #[test]
    fn duplicate_is_reported_and_acked() {
        let mut r = receiver();
        r.on_segment(Time(0), &seg(0));
        assert_eq!(r.on_segment(Time(1), &seg(0)), SegmentVerdict::Duplicate);
        assert!(r.wants_ack());
        assert_eq!(r.duplicate_segments(), 1);
    }
}
