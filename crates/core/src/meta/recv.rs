//! The receiver's meta buffer: one connection-level receive buffer shared by all subflows
//! (Shi et al., USENIX ATC 2018, §2.2), reassembly by DSN, and the out-of-order queue.
//!
//! The application reads in-order data as soon as it is there, so buffer occupancy is the
//! out-of-order queue; the advertised window is what is left of the buffer, except that the
//! window's right edge (data-ACK + window) never moves left: RFC 1122 §4.2.2.16, and Linux
//! (`tcp_select_window`, MPTCP's `mptcp_select_window`) keeps the offered edge when out-of-order
//! data fills the space it offered.
//!
//! The buffer is autotuned as Linux 6.18 does for an MPTCP socket (`mptcp_rcv_space_adjust` and
//! `mptcp_rcvbuf_grow`, net/mptcp/protocol.c, after "tcp: fix too slow tcp_rcvbuf_grow()
//! action"; the same dynamic right-sizing as `tcp_rcvbuf_grow`, net/ipv4/tcp_input.c): it
//! starts at `tcp_rmem[1]` = 131,072 bytes and, once per receiver RTT estimate in which the
//! application read more than in the RTT before, grows to the space of a window of
//! `2·copied` plus twice the growth over the previous RTT; capped by `tcp_rmem[2]` (the
//! configured buffer). Plain TCP also adds the span of its out-of-order queue, and grows on
//! every out-of-order insertion (`tcp_data_queue_ofo`); an MPTCP socket does neither since
//! "mptcp: do not account for OoO in mptcp_rcvbuf_grow()" (upstream 6b329393502e, in 6.18.14
//! stable): MPTCP-level reordering is normal with several subflows, and a hole a dead subflow
//! left no longer lets the buffer, and the window offered past the hole, grow. The receiver
//! RTT is the largest of the subflows' `tcp_rcv_rtt_measure_ts` estimates. Per-packet
//! out-of-order delay (arrival to in-order delivery, Shi et al., USENIX ATC 2018, §5.1.1) goes
//! into a fixed-size histogram so that memory stays flat however long the run.

use super::ofo::{OfoQueue, RawPos};
use crate::hist::LogHistogram;
use crate::packet::PathId;
use crate::time::Time;

/// Linux `tcp_rmem[1]`: the receive buffer a connection starts with.
pub const TCP_RMEM_DEFAULT: u64 = 131_072;

/// Dynamic right-sizing state (`msk->rcvq_space`; for one subflow, `tp->rcvq_space`).
#[derive(Debug, Clone, Copy)]
struct Drs {
    /// `tcp_rmem[2]`.
    max: u64,
    /// Bytes the application read in the last measured RTT.
    space: u64,
    /// Data-ACK and time at the start of the current measurement.
    seq: u64,
    time: Option<Time>,
    /// The receiver's RTT (ns): the largest of its subflows' estimates
    /// ([`RecvBuffer::set_rcv_rtt`]); 0 until one has a sample.
    rtt: u64,
}

#[derive(Debug)]
pub struct RecvBuffer {
    /// `sk_rcvbuf`: the window offered is half of it.
    capacity: u64,
    drs: Option<Drs>,
    /// Highest right window edge offered so far (DSN).
    right_edge: u64,
    /// Next DSN expected in order (the data-ACK).
    rcv_nxt: u64,
    /// Out-of-order segments sorted by DSN: (DSN, end, arrival time), walked in order from
    /// the front; stored in blocks so that an arrival between interleaved subflows' data moves
    /// at most a block ([`OfoQueue`]).
    ofo: OfoQueue,
    /// Per subflow, where its next out-of-order arrival is expected in the queue: one entry
    /// past its last ([`OfoQueue::find_hinted`]).
    ofo_hints: [RawPos; crate::packet::MAX_PATHS],
    ofo_bytes: u64,
    ofo_max: u64,
    /// Integral of ofo_bytes over time (byte·ns) and the time it was last updated.
    ofo_integral: f64,
    ofo_since: Option<Time>,
    duplicate_bytes: u64,
    ooo_delay: LogHistogram,
    /// An MPTCP socket whose `msk->scaling_ratio` is still the default
    /// ([`DEFAULT_SCALING_RATIO`]); false once a measurement found every subflow with its own,
    /// and always for plain TCP, whose window follows its own measured ratio from the first
    /// segment.
    msk_default_ratio: bool,
    /// Every subflow of the connection has received data (and so measured its ratio).
    subflows_measured: bool,
    /// The buffer grows with its out-of-order queue (`tcp_rcvbuf_grow`, `tcp_data_queue_ofo`):
    /// plain TCP only; an MPTCP socket's does not ([`RecvBuffer::set_mptcp`]).
    ofo_grows: bool,
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

/// `tp->scaling_ratio` (of 256) once data has arrived: payload / truesize of the received skbs
/// (`tcp_measure_rcv_mss`, Linux 6.7+). Measured on Linux 6.18 behind the mpsched emulator: an
/// MPTCP subflow's `rcv_ssthresh` stops growing at 78,971 bytes while `sk_rcvbuf` is 131,072
/// (`ss -tmi` every ~5 ms in the client namespace), i.e. `tcp_space` = 0.6025 of the buffer.
pub const SCALING_RATIO: u64 = 154;

/// `TCP_DEFAULT_SCALING_RATIO` (include/net/tcp.h, Linux 6.18): the 50% a socket assumes
/// before it has measured a received segment's payload against its true size.
pub const DEFAULT_SCALING_RATIO: u64 = 128;

/// True size of one received full segment (1,420 or 1,448 bytes of payload) behind the
/// emulator's veth: the MPTCP socket's window of 64,384 bytes while its buffer was 131,072 and
/// its scaling ratio the default is (131,072 − 2,304) · 128/256, one segment in `sk_rmem_alloc`
/// when the ACK is built (captured on Linux 6.18, 256 KiB download over WiFi and LTE).
const RCV_SKB_TRUESIZE: u64 = 2_304;

/// `msk->scaling_ratio`, which turns a window into buffer space when the MPTCP socket grows
/// (`tcp_space_from_win`). Fitted to Linux 6.18 behind the mpsched emulator: `rcv_space`
/// 14,480 → 28,400 → 55,992 gave `sk_rcvbuf` 270,684 and 537,401, i.e. 157/256 at both steps
/// under the formula above.
pub const MSK_SCALING_RATIO: u64 = 157;

impl RecvBuffer {
    /// A buffer of fixed size `capacity`, all of it offered as window.
    pub fn new(capacity: u64) -> Self {
        RecvBuffer {
            capacity,
            drs: None,
            right_edge: capacity,
            rcv_nxt: 0,
            ofo: OfoQueue::default(),
            ofo_hints: Default::default(),
            ofo_bytes: 0,
            ofo_max: 0,
            ofo_integral: 0.0,
            ofo_since: None,
            duplicate_bytes: 0,
            ooo_delay: LogHistogram::new(),
            msk_default_ratio: false,
            subflows_measured: true,
            ofo_grows: true,
        }
    }

    /// The buffer of an MPTCP socket (Linux 6.18). Its window is offered from the MPTCP-level
    /// space (`mptcp_space` in `__tcp_select_window`), which converts buffer to window with
    /// `msk->scaling_ratio`. That starts at [`DEFAULT_SCALING_RATIO`] (`__mptcp_init_sock`)
    /// and is only re-read, as the lowest of the subflows' ratios, when
    /// `mptcp_rcv_space_adjust` takes its once-per-RTT measurement; a subflow that has not
    /// received data yet still has the default. So while a joined subflow waits for its first
    /// data the connection offers about half its buffer, not the 60% a measured ratio gives.
    /// Captured: 64,384 bytes offered through the first 140 ms of a WiFi/LTE download, where
    /// a measured ratio would have offered 78,848 (the simulator did, and committed 14 KB
    /// more to WiFi before LTE's first push).
    ///
    /// Its out-of-order queue does not grow the buffer: Linux 6.18.14+ (upstream 6b329393502e,
    /// "mptcp: do not account for OoO in mptcp_rcvbuf_grow()") dropped both the span term of
    /// `mptcp_rcvbuf_grow` and its call from `mptcp_data_queue_ofo`. Captured on 6.18.44
    /// (1 MiB, LTE dark 0.2-5.2 s, its first 14 KB lost): the window offered past the hole stops
    /// at data-ACK + 259,840 bytes from 0.34 s until WiFi's re-push of LTE's data fills it.
    ///
    /// For a fresh buffer only: it lowers the first window offered, which an edge already
    /// advertised must never do.
    pub fn set_mptcp(&mut self) {
        debug_assert_eq!(
            self.rcv_nxt, 0,
            "set_mptcp on a buffer that has received data"
        );
        self.ofo_grows = false;
        if self.drs.is_some() {
            self.msk_default_ratio = true;
            self.subflows_measured = false;
            self.right_edge = self.right_edge.min(self.window_space());
        }
    }

    /// Whether every subflow has received data; read at the next measurement.
    pub fn set_subflows_measured(&mut self, all: bool) {
        self.subflows_measured = all;
    }

    /// A buffer autotuned as Linux's from `tcp_rmem[1]` up to `max` (`tcp_rmem[2]`), for a
    /// connection whose peer announced `advmss` (the TCP MSS option: 1,448 bytes on a 1,500-byte
    /// MTU, for MPTCP too).
    pub fn autotuned(advmss: u32, max: u64) -> Self {
        let start = TCP_RMEM_DEFAULT.min(max);
        let mut b = RecvBuffer::new(start);
        let advmss = u64::from(advmss);
        b.drs = Some(Drs {
            max,
            // `mptcp_rcv_space_init`: min(rcv_wnd, TCP_INIT_CWND · advmss) (14,480 bytes read
            // back from `ss` on Linux 6.18).
            space: (10 * advmss).min(start / 2),
            seq: 0,
            time: None,
            rtt: 0,
        });
        b.right_edge = b.window_space();
        b
    }

    /// The window the first segment of an autotuned connection offers (before any ACK).
    pub fn initial_window(max: u64) -> u64 {
        TCP_RMEM_DEFAULT.min(max) / 2
    }

    /// The window a connection with a buffer of at most `max` bytes offers first: Linux's
    /// initial `rcv_ssthresh`, the window of `tcp_rmem[1]` = 131,072 bytes at the default 50%
    /// scaling ratio less the segment `tcp_init_buffer_space` reserves (65,536 − 1,448 =
    /// 64,088 bytes measured on Linux 6.18), never below two segments.
    pub fn first_offer(max: u64, mss: u32) -> u64 {
        let w = Self::initial_window(max);
        let mss = u64::from(mss);
        w.saturating_sub(mss).max(2 * mss).min(max)
    }

    /// The window the connection's buffer offers: of an MPTCP socket still at the default
    /// ratio, half of it less the segment being received; otherwise [`Self::measured_space`].
    fn window_space(&self) -> u64 {
        if self.msk_default_ratio {
            self.capacity.saturating_sub(RCV_SKB_TRUESIZE) * DEFAULT_SCALING_RATIO / 256
        } else {
            self.measured_space()
        }
    }

    /// `tcp_win_from_space`: all of a fixed buffer; of an autotuned one, the share Linux's
    /// measured `scaling_ratio` gives ([`SCALING_RATIO`]).
    fn measured_space(&self) -> u64 {
        if self.drs.is_some() {
            self.capacity * SCALING_RATIO / 256
        } else {
            self.capacity
        }
    }

    /// The receive buffer now (`sk_rcvbuf`).
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The receiver's RTT now: `mptcp_rcv_space_adjust` (net/mptcp/protocol.c) takes the
    /// largest `rcv_rtt_est` of the subflows; a single-path connection has its own.
    pub fn set_rcv_rtt(&mut self, rtt_ns: u64) {
        if let Some(d) = self.drs.as_mut() {
            d.rtt = rtt_ns;
        }
    }

    /// `mptcp_rcv_space_adjust` / `tcp_rcv_space_adjust` after in-order data up to
    /// `self.rcv_nxt` (from `before`) reached the application at `now`: once per receiver RTT,
    /// if more was read than in the RTT before, the buffer grows to what a sender in slow
    /// start needs next.
    fn space_adjust(&mut self, now: Time, before: u64) {
        let Some(d) = self.drs.as_mut() else { return };
        let Some(start) = d.time else {
            // `mptcp_rcv_space_init` on the first read; that read already counts.
            d.time = Some(now);
            d.seq = before;
            return;
        };
        if d.rtt == 0 || now.saturating_since(start).0 < d.rtt {
            return;
        }
        // The measurement re-reads the subflows' scaling ratios.
        if self.subflows_measured {
            self.msk_default_ratio = false;
        }
        let copied = self.rcv_nxt - d.seq;
        if copied > d.space {
            self.rcvbuf_grow(copied);
        }
        let d = self.drs.as_mut().expect("checked");
        d.seq = self.rcv_nxt;
        d.time = Some(now);
    }

    /// `tcp_rcvbuf_grow` / `mptcp_rcvbuf_grow(sk, newval)` (Linux 6.18): the window of twice
    /// `newval` (DRS is one RTT late) plus twice its growth over the last measurement (a sender
    /// in slow start doubles per RTT), plus for plain TCP the out-of-order span, as buffer
    /// space; it never shrinks.
    fn rcvbuf_grow(&mut self, newval: u64) {
        let ofo_span = if self.ofo_grows {
            self.ofo.back().map_or(0, |&(_, end, _)| end - self.rcv_nxt)
        } else {
            0
        };
        let Some(d) = self.drs.as_mut() else { return };
        let oldval = d.space.max(1);
        d.space = newval;
        let mut rcvwin = u128::from(newval) * 2;
        rcvwin += 2 * (rcvwin * u128::from(newval.saturating_sub(oldval)) / u128::from(oldval));
        rcvwin += u128::from(ofo_span);
        let ratio = if self.msk_default_ratio {
            DEFAULT_SCALING_RATIO
        } else {
            MSK_SCALING_RATIO
        };
        let rcvbuf = (rcvwin * 256 / u128::from(ratio)).min(u128::from(d.max)) as u64;
        if rcvbuf > self.capacity {
            self.capacity = rcvbuf;
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
        let free = self.window_space().saturating_sub(self.ofo_bytes);
        self.right_edge = self.right_edge.max(self.rcv_nxt + free);
    }
    /// The window the buffer could offer now if nothing capped it (`tcp_space`: the window
    /// share of the buffer less what the out-of-order queue holds).
    ///
    /// This is a subflow's own space (`tcp_grow_window` reads the subflow's `tcp_space`,
    /// whose buffer the MPTCP socket propagates to it), converted with the ratio the subflow
    /// measured, whatever the MPTCP socket's own ratio is.
    pub fn window_room(&self) -> u64 {
        self.measured_space().saturating_sub(self.ofo_bytes)
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
        // An empty queue adds +0.0, which leaves the (non-negative) integral as it is: skip
        // the two conversions and the product for every in-order segment.
        if let (Some(t), true) = (self.ofo_since, self.ofo_bytes != 0) {
            // Both through `i64`: below 2^63 the conversion is the same number as from `u64`
            // (one rounding of the same integer), and the baseline x86-64 target converts a
            // signed integer in one instruction, an unsigned one in a branch and several
            // (issue "Speed at scale": at 8 paths the queue is never empty).
            let (dt, bytes) = (now.saturating_since(t).0, self.ofo_bytes);
            debug_assert!(dt < 1 << 63 && bytes < 1 << 63);
            self.ofo_integral += dt as i64 as f64 * bytes as i64 as f64;
        }
        self.ofo_since = Some(now);
    }

    /// An arrival of `len` bytes that were all received before.
    fn duplicate(&mut self, len: u32) -> Delivery {
        self.duplicate_bytes += len as u64;
        Delivery {
            bytes: 0,
            upto: self.rcv_nxt,
            duplicate: true,
        }
    }

    /// Data `[dsn, dsn+len)` arrived at `now` on some subflow.
    pub fn on_data(&mut self, now: Time, dsn: u64, len: u32) -> Delivery {
        self.on_data_from(now, None, dsn, len)
    }

    /// Data `[dsn, dsn+len)` arrived at `now` on subflow `path`, if known: what
    /// [`RecvBuffer::on_data`] does, with the subflow's place in the out-of-order queue as a
    /// hint (the same result, found faster).
    pub fn on_data_from(
        &mut self,
        now: Time,
        path: Option<PathId>,
        dsn: u64,
        len: u32,
    ) -> Delivery {
        let end = dsn + len as u64;
        if end <= self.rcv_nxt {
            return self.duplicate(len);
        }
        if dsn > self.rcv_nxt {
            // Every queued segment starts past the data-ACK, so only out-of-order data can
            // match one.
            let hint = path.and_then(|p| self.ofo_hints.get(p as usize).copied());
            let at = match hint {
                Some(h) => self.ofo.find_hinted(dsn, h),
                None => self.ofo.find(dsn),
            };
            if at.is_ok_and(|i| self.ofo.get(i).1 >= end) {
                return self.duplicate(len);
            }
            self.integrate(now);
            // Segments never straddle: a meta segment has fixed boundaries on every path.
            match at {
                // A longer copy of a segment queued before replaces it (as a map insert did);
                // only its extra bytes are new in the queue.
                Ok(i) => {
                    self.ofo_bytes += end - self.ofo.get(i).1;
                    self.ofo.replace(i, (dsn, end, now));
                }
                Err(i) => {
                    let stored = self.ofo.insert(i, (dsn, end, now));
                    if let Some(h) = path.and_then(|p| self.ofo_hints.get_mut(p as usize)) {
                        *h = stored.next();
                    }
                    self.ofo_bytes += len as u64;
                }
            }
            self.ofo_max = self.ofo_max.max(self.ofo_bytes);
            // `tcp_data_queue_ofo`: the buffer follows the out-of-order span at once (plain TCP;
            // `mptcp_data_queue_ofo` no longer does, see `set_mptcp`).
            if let (true, Some(space)) = (self.ofo_grows, self.drs.map(|d| d.space)) {
                self.rcvbuf_grow(space);
            }
            self.offer_window();
            return Delivery {
                bytes: 0,
                upto: self.rcv_nxt,
                duplicate: false,
            };
        }
        self.integrate(now);
        let before = self.rcv_nxt;
        self.rcv_nxt = end;
        self.ooo_delay.record(0);
        while let Some(&(s, e, arrived)) = self.ofo.front() {
            if s > self.rcv_nxt {
                break;
            }
            self.ofo.pop_front();
            self.ofo_bytes -= e - s;
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.ooo_delay.record(now.saturating_since(arrived).0);
        }
        self.space_adjust(now, before);
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
    fn a_longer_copy_counts_only_its_extra_bytes_out_of_order() {
        let mut r = RecvBuffer::new(10_000);
        r.on_data(Time(1), 1000, 500);
        assert_eq!(r.ofo_bytes(), 500);
        r.on_data(Time(2), 1000, 800);
        assert_eq!(r.ofo_bytes(), 800);
        let d = r.on_data(Time(3), 0, 1000);
        assert_eq!((d.bytes, d.upto), (1800, 1800));
        assert_eq!(
            r.ofo_bytes(),
            0,
            "nothing left counted once all is delivered"
        );
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

    /// In-order data of `n` segments of 1,000 bytes at `t` ns, delivered at once.
    fn deliver(r: &mut RecvBuffer, t: u64, n: u64) {
        for _ in 0..n {
            let dsn = r.data_ack();
            r.on_data(Time(t), dsn, 1000);
        }
    }

    #[test]
    fn autotuned_buffer_starts_at_tcp_rmem_default_offering_its_scaling_ratio() {
        let r = RecvBuffer::autotuned(1000, 6 << 20);
        assert_eq!(r.capacity(), TCP_RMEM_DEFAULT);
        // 131,072 · 154/256: the 78,848 bytes at which Linux's rcv_ssthresh stopped.
        assert_eq!(r.rwnd(), 78_848);
        assert_eq!(RecvBuffer::initial_window(6 << 20), TCP_RMEM_DEFAULT / 2);
    }

    #[test]
    fn autotuned_buffer_waits_for_a_receiver_rtt_sample() {
        let mut r = RecvBuffer::autotuned(1000, 6 << 20);
        let ms = 1_000_000;
        deliver(&mut r, ms, 1);
        deliver(&mut r, 101 * ms, 65);
        assert_eq!(r.capacity(), TCP_RMEM_DEFAULT);
    }

    #[test]
    fn autotuned_buffer_grows_as_linux_6_18_did_behind_the_emulator() {
        // Replays what `ss -tmi` showed of a Linux 6.18 MPTCP client (advmss 1,448, receiver
        // RTT ~52 ms): rcv_space 14,480 -> 28,400 gave sk_rcvbuf 270,684, then 28,400 -> 55,992
        // gave 537,401. rcvwin = 2·28,400 + 2·56,800·13,920/14,480 = 166,006 -> ·256/157.
        let mut r = RecvBuffer::autotuned(1448, 6 << 20);
        r.set_rcv_rtt(52_000_000);
        let ms = 1_000_000;
        r.on_data(Time(ms), 0, 1000);
        r.on_data(Time(53 * ms), 1000, 27_400);
        assert_eq!(r.capacity(), 270_684, "kernel: 270,684");
        r.on_data(Time(106 * ms), 28_400, 55_992);
        assert_eq!(r.capacity(), 537_401, "kernel: 537,401");
        // The window offered is the buffer's scaling-ratio share.
        assert_eq!(r.rwnd(), 537_401 * SCALING_RATIO / 256);
    }

    #[test]
    fn out_of_order_data_grows_the_autotuned_buffer_by_its_span() {
        // tcp_data_queue_ofo -> tcp_rcvbuf_grow(sk, space): 2·14,480 plus the span from the
        // ACK to the end of the out-of-order queue (400,000 bytes).
        let mut r = RecvBuffer::autotuned(1448, 6 << 20);
        r.on_data(Time(0), 390_000, 10_000);
        assert_eq!(
            r.capacity(),
            (2 * 14_480 + 400_000) * 256 / MSK_SCALING_RATIO
        );
    }

    #[test]
    fn mptcp_out_of_order_data_does_not_grow_the_buffer() {
        // 6.18.14+: mptcp_data_queue_ofo no longer calls mptcp_rcvbuf_grow, and a measurement
        // adds no out-of-order span (upstream 6b329393502e).
        let ms = 1_000_000;
        let mut r = mptcp_buffer();
        r.on_data(Time(0), 390_000, 10_000);
        assert_eq!(r.capacity(), TCP_RMEM_DEFAULT);
        r.on_data(Time(ms), 0, 1000);
        r.on_data(Time(53 * ms), 1000, 27_400);
        // The measurement at 53 ms grows the buffer as without the queue (see
        // mptcp_growth_at_the_default_ratio_offers_the_same_window).
        let rcvwin = 2 * 28_400 + 2 * 56_800 * 13_920 / 14_480;
        assert_eq!(r.capacity(), rcvwin * 2);
    }

    /// An MPTCP socket's buffer on Linux 6.18, before and after its first measurement.
    fn mptcp_buffer() -> RecvBuffer {
        let mut r = RecvBuffer::autotuned(1448, 6 << 20);
        r.set_mptcp();
        r.set_rcv_rtt(52_000_000);
        r
    }

    #[test]
    fn mptcp_window_follows_the_default_scaling_ratio_until_measured() {
        // Captured on Linux 6.18 (256 KiB over WiFi and LTE): 64,384 bytes offered through
        // the first 140 ms = (131,072 − 2,304) · 128/256; a measured ratio would offer 78,848.
        let mut r = mptcp_buffer();
        assert_eq!(r.rwnd(), 64_384);
        let ms = 1_000_000;
        r.on_data(Time(ms), 0, 1000);
        r.on_data(Time(2 * ms), 1000, 1000);
        assert_eq!(r.rwnd(), 64_384);
        // The subflow's own room is the measured ratio's.
        assert_eq!(r.window_room(), 78_848);
    }

    #[test]
    fn mptcp_measurement_adopts_the_subflows_ratio_once_all_have_data() {
        let ms = 1_000_000;
        let mut r = mptcp_buffer();
        r.on_data(Time(ms), 0, 1000);
        // A joined subflow without data yet keeps the default through a measurement...
        r.on_data(Time(60 * ms), 1000, 1000);
        assert_eq!(r.rwnd(), 64_384);
        // ... and the next measurement after every subflow has received data takes the
        // measured ratio (no growth here: little was read).
        r.set_subflows_measured(true);
        r.on_data(Time(120 * ms), 2000, 1000);
        assert_eq!(r.rwnd(), 78_848);
    }

    #[test]
    fn mptcp_growth_at_the_default_ratio_offers_the_same_window() {
        // mptcp_rcvbuf_grow converts the window it wants into buffer with the socket's ratio:
        // at 128/256 the buffer is twice the window, and the window offered is the same.
        let ms = 1_000_000;
        let mut r = mptcp_buffer();
        r.on_data(Time(ms), 0, 1000);
        r.on_data(Time(53 * ms), 1000, 27_400);
        let rcvwin = 2 * 28_400 + 2 * 56_800 * 13_920 / 14_480;
        assert_eq!(r.capacity(), rcvwin * 2);
        assert_eq!(r.rwnd(), (rcvwin * 2 - RCV_SKB_TRUESIZE) / 2);
    }

    #[test]
    fn autotuned_buffer_is_capped_by_tcp_rmem_max() {
        let mut r = RecvBuffer::autotuned(1000, 1_000_000);
        r.set_rcv_rtt(100_000_000);
        let ms = 1_000_000;
        deliver(&mut r, ms, 1);
        deliver(&mut r, 100 * ms, 64);
        deliver(&mut r, 101 * ms, 1);
        assert_eq!(r.capacity(), 1_000_000);
    }
}
