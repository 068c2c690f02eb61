//! The `stream` workload: a live source at application rate `f` (Park et al. (R-TSC), §II),
//! constant bit rate or variable bit rate, and the application-level delay of every packet.
//!
//! * CBR: one application packet of `packet_bytes` every `packet_bytes · 8 / f` seconds.
//! * VBR: one frame every `frame_interval_s`, its size drawn from a log-normal distribution with
//!   mean `f · frame_interval_s / 8` bytes and coefficient of variation `cv`, cut into
//!   application packets of `packet_bytes` (the last one shorter).
//!
//! Every application packet is stamped when the application generates it. When the send buffer
//! is full the application blocks (Shi et al., USENIX ATC 2018, §2.3) and its packets wait, in
//! order, until the buffer takes them; that wait counts as send-buffer delay. The delay of a
//! packet to its delivery in order to the receiving application is split as in R-TSC Eq. 1-4
//! (Fig. 1):
//!
//! * send-buffer delay `T^s`: generation to the first transmission of its last byte;
//! * network delay `T^n`: that transmission to the first arrival of its last byte at the
//!   receiver (retransmissions included);
//! * reordering delay `T^o`: that arrival to in-order delivery.
//!
//! Playback: the player starts `playout_delay_s` after generation and plays in real time; a
//! packet not there when its turn comes stalls playback until it is, and the schedule shifts by
//! the stall (count and total duration reported).

use std::collections::VecDeque;

use mpsched_core::hist::LogHistogram;
use mpsched_core::time::{Duration, Time};
use rand::Rng;
use rand_pcg::Pcg64;

/// What the scenario asks for (resolved, SI units).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamSpec {
    pub rate_bps: f64,
    pub duration_s: f64,
    pub packet_bytes: u64,
    /// Coefficient of variation of the frame size; 0 = CBR.
    pub cv: f64,
    pub frame_interval_s: f64,
    pub playout_delay_s: f64,
}

#[derive(Clone, Copy, Debug)]
struct AppPacket {
    /// DSN one past its last byte.
    end: u64,
    generated: Time,
    first_tx: Option<Time>,
    arrived: Option<Time>,
}

/// Per-packet delay histograms, nanoseconds.
#[derive(Debug, Default)]
pub struct DelayStats {
    pub total: LogHistogram,
    pub send: LogHistogram,
    pub network: LogHistogram,
    pub reorder: LogHistogram,
    pub stalls: u64,
    pub stall_time: Duration,
}

#[derive(Debug)]
pub struct Stream {
    spec: StreamSpec,
    rng: Pcg64,
    next_gen: Time,
    end: Time,
    /// Generated, not yet accepted by the send buffer: (bytes, generation time).
    blocked: VecDeque<(u64, Time)>,
    written: u64,
    /// Written and not yet delivered, in DSN order.
    inflight: VecDeque<AppPacket>,
    /// Playback schedule offset: playout delay plus the stalls so far.
    play_offset: Duration,
    pub stats: DelayStats,
    pub generated_bytes: u64,
}

impl Stream {
    pub fn new(spec: &StreamSpec, rng: Pcg64) -> Self {
        Stream {
            spec: spec.clone(),
            rng,
            next_gen: Time::ZERO,
            end: Time::from_secs_f64(spec.duration_s),
            blocked: VecDeque::new(),
            written: 0,
            inflight: VecDeque::new(),
            play_offset: Duration::from_secs_f64(spec.playout_delay_s),
            stats: DelayStats::default(),
            generated_bytes: 0,
        }
    }

    pub fn duration(&self) -> Time {
        self.end
    }

    /// Generation is over and every packet was delivered.
    pub fn done(&self) -> bool {
        self.next_gen >= self.end && self.blocked.is_empty() && self.inflight.is_empty()
    }

    /// One log-normal frame size with the spec's mean and coefficient of variation (bytes).
    fn frame_bytes(&mut self) -> u64 {
        let mean = self.spec.rate_bps * self.spec.frame_interval_s / 8.0;
        if self.spec.cv <= 0.0 {
            return mean.round() as u64;
        }
        let s2 = (1.0 + self.spec.cv * self.spec.cv).ln();
        let mu = mean.ln() - s2 / 2.0;
        // Box-Muller: one standard normal from two uniforms in (0, 1].
        let u1 = 1.0 - self.rng.gen::<f64>();
        let u2 = self.rng.gen::<f64>();
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (mu + s2.sqrt() * z).exp().round() as u64
    }

    /// Generate everything due by `now`; returns when the next generation is due.
    pub fn generate(&mut self, now: Time) -> Option<Time> {
        while self.next_gen <= now && self.next_gen < self.end {
            let t = self.next_gen;
            let pkt = self.spec.packet_bytes.max(1);
            if self.spec.cv > 0.0 {
                let mut left = self.frame_bytes();
                while left > 0 {
                    let n = left.min(pkt);
                    self.blocked.push_back((n, t));
                    self.generated_bytes += n;
                    left -= n;
                }
                self.next_gen = t + Duration::from_secs_f64(self.spec.frame_interval_s);
            } else {
                self.blocked.push_back((pkt, t));
                self.generated_bytes += pkt;
                self.next_gen = t + Duration::from_secs_f64(pkt as f64 * 8.0 / self.spec.rate_bps);
            }
        }
        (self.next_gen < self.end).then_some(self.next_gen)
    }

    /// Generated packets wait for room in the send buffer.
    pub fn has_unwritten(&self) -> bool {
        !self.blocked.is_empty()
    }

    /// Write blocked packets while `write` accepts them whole (an application packet is one
    /// write; a partial write would split it across a blocking period).
    pub fn flush(&mut self, free: u64, write: &mut dyn FnMut(u64) -> u64) {
        let mut free = free;
        while let Some(&(n, t)) = self.blocked.front() {
            if n > free {
                return;
            }
            let wrote = write(n);
            debug_assert_eq!(wrote, n);
            free -= wrote;
            self.written += n;
            self.inflight.push_back(AppPacket {
                end: self.written,
                generated: t,
                first_tx: None,
                arrived: None,
            });
            self.blocked.pop_front();
        }
    }

    /// The packets not delivered yet whose last byte lies in `[dsn, dsn+len)`. Only the
    /// segment with a packet's last byte counts: a packet longer than the MSS is several
    /// segments, and one segment may end several packets: the sender appends a write to a
    /// short unsent segment (`tcp_sendmsg_locked`, [`mpsched_core::meta::send::SendBuffer::write`]).
    fn packets_ending_in(&mut self, dsn: u64, len: u32) -> impl Iterator<Item = &mut AppPacket> {
        let end = dsn + u64::from(len);
        let i = self.inflight.partition_point(|p| p.end <= dsn);
        self.inflight
            .range_mut(i..)
            .take_while(move |p| p.end <= end)
    }

    /// Data `[dsn, dsn+len)` was sent for the first time at `now`.
    pub fn on_first_tx(&mut self, dsn: u64, len: u32, now: Time) {
        for p in self.packets_ending_in(dsn, len) {
            p.first_tx.get_or_insert(now);
        }
    }

    /// Data `[dsn, dsn+len)` arrived (new) at the receiver at `now`.
    pub fn on_arrival(&mut self, dsn: u64, len: u32, now: Time) {
        for p in self.packets_ending_in(dsn, len) {
            p.arrived.get_or_insert(now);
        }
    }

    /// In-order delivery reached `upto` at `now`.
    pub fn on_delivered(&mut self, upto: u64, now: Time) {
        while let Some(p) = self.inflight.front().copied() {
            if p.end > upto {
                break;
            }
            self.inflight.pop_front();
            let tx = p.first_tx.unwrap_or(now).max(p.generated);
            let arr = p.arrived.unwrap_or(now).max(tx);
            let s = &mut self.stats;
            s.total.record(now.saturating_since(p.generated).0);
            s.send.record(tx.saturating_since(p.generated).0);
            s.network.record(arr.saturating_since(tx).0);
            s.reorder.record(now.saturating_since(arr).0);
            let due = p.generated + self.play_offset;
            if now > due {
                let late = now.saturating_since(due);
                s.stalls += 1;
                s.stall_time = Duration(s.stall_time.0 + late.0);
                self.play_offset = Duration(self.play_offset.0 + late.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn ms(v: u64) -> Time {
        Time::ZERO + Duration::from_millis(v)
    }

    fn cbr(rate_bps: f64) -> Stream {
        let spec = StreamSpec {
            rate_bps,
            duration_s: 1.0,
            packet_bytes: 1000,
            cv: 0.0,
            frame_interval_s: 0.04,
            playout_delay_s: 0.1,
        };
        Stream::new(&spec, Pcg64::seed_from_u64(1))
    }

    fn write_all(s: &mut Stream) {
        s.flush(u64::MAX, &mut |n| n);
    }

    #[test]
    fn cbr_generates_one_packet_per_interval() {
        let mut s = cbr(8e6); // 1000 bytes every 1 ms
        assert_eq!(s.generate(ms(4)), Some(ms(5)));
        assert_eq!(s.generated_bytes, 5000);
    }

    #[test]
    fn vbr_frames_average_the_rate() {
        let spec = StreamSpec {
            rate_bps: 8e6,
            duration_s: 100.0,
            packet_bytes: 1000,
            cv: 0.5,
            frame_interval_s: 0.04,
            playout_delay_s: 0.1,
        };
        let mut s = Stream::new(&spec, Pcg64::seed_from_u64(7));
        s.generate(Time::from_secs_f64(99.999));
        let rate = s.generated_bytes as f64 * 8.0 / 100.0;
        assert!((rate - 8e6).abs() / 8e6 < 0.03, "{rate}");
    }

    #[test]
    fn delay_splits_into_send_network_reorder() {
        let mut s = cbr(8e6);
        s.generate(Time::ZERO);
        write_all(&mut s);
        s.on_first_tx(0, 1000, ms(3));
        s.on_arrival(0, 1000, ms(13));
        s.on_delivered(1000, ms(20));
        let st = &s.stats;
        assert_eq!(st.send.max(), 3_000_000);
        assert_eq!(st.network.max(), 10_000_000);
        assert_eq!(st.reorder.max(), 7_000_000);
        assert_eq!(st.total.max(), 20_000_000);
        assert_eq!(st.stalls, 0);
    }

    #[test]
    fn a_segment_ending_two_packets_times_both() {
        // Two 1000-byte packets (generated at 0 and 1 ms) in one 2000-byte segment, sent at 3
        // ms, arrived and delivered at 13 ms: the segment holds both packets' last bytes.
        // Counted only where a segment ends exactly at a packet's end, packet 0 took no
        // transmission time and all its delay was send-buffer delay.
        let mut s = cbr(8e6);
        s.generate(ms(1));
        write_all(&mut s);
        s.on_first_tx(0, 2000, ms(3));
        s.on_arrival(0, 2000, ms(13));
        s.on_delivered(2000, ms(13));
        let st = &s.stats;
        assert_eq!((st.send.max(), st.send.mean()), (3_000_000, 2_500_000.0));
        assert_eq!(
            (st.network.max(), st.network.mean()),
            (10_000_000, 10_000_000.0)
        );
        assert_eq!(st.reorder.max(), 0);

        // Segments of 1420 and 580 bytes: packet 0 ends in the first, packet 1 in the second.
        let mut s = cbr(8e6);
        s.generate(ms(1));
        write_all(&mut s);
        s.on_first_tx(0, 1420, ms(3));
        s.on_first_tx(1420, 580, ms(4));
        s.on_arrival(0, 1420, ms(13));
        s.on_arrival(1420, 580, ms(15));
        s.on_delivered(2000, ms(20));
        // Packet 0: send 3, network 10, reorder 7 ms; packet 1: send 3, network 11, reorder 5.
        let st = &s.stats;
        assert_eq!((st.send.max(), st.send.mean()), (3_000_000, 3_000_000.0));
        assert_eq!(
            (st.network.max(), st.network.mean()),
            (11_000_000, 10_500_000.0)
        );
        assert_eq!(
            (st.reorder.max(), st.reorder.mean()),
            (7_000_000, 6_000_000.0)
        );
    }

    #[test]
    fn late_packet_stalls_playback_once_and_shifts_it() {
        let mut s = cbr(8e6);
        s.generate(ms(1));
        write_all(&mut s);
        // Both packets delivered 150 ms after the first was generated: the first is 50 ms past
        // its 100 ms playout deadline; the second, 1 ms later in the shifted schedule, is not.
        s.on_delivered(2000, ms(150));
        assert_eq!(s.stats.stalls, 1);
        assert_eq!(s.stats.stall_time, Duration::from_millis(50));
    }

    #[test]
    fn full_send_buffer_blocks_the_application_in_order() {
        let mut s = cbr(8e6);
        s.generate(ms(2));
        s.flush(1500, &mut |n| n);
        // One 1000-byte packet fits; the next waits whole.
        assert_eq!(s.written, 1000);
        s.flush(2000, &mut |n| n);
        assert_eq!(s.written, 3000);
    }
}
