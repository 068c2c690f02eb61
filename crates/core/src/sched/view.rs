//! What a scheduler reads about a subflow, whichever driver runs it.
//!
//! One scheduler contract, two drivers (issue 10): the simulated [`SubflowSender`] and a
//! kernel TCP subflow of the real proxy (`mpsched-net`, read from `TCP_INFO`) both implement
//! [`SubflowView`], and [`SchedCtx`](super::SchedCtx) hands schedulers `&dyn SubflowView`, so
//! no scheduler file knows which driver it runs in. The method names are those schedulers
//! called on `SubflowSender` before the view existed.
//!
//! Units: bytes, [`Duration`], bits per second. A kernel subflow counts its window in packets
//! (`tcpi_snd_cwnd`); its view multiplies by `tcpi_snd_mss`, as the simulator's packet-counted
//! windows weigh each segment one MSS.

use crate::packet::PathId;
use crate::subflow::sender::SubflowSender;
use crate::time::Duration;

pub use crate::subflow::sender::SubflowState;

/// One subflow as a scheduler sees it.
pub trait SubflowView {
    fn path(&self) -> PathId;
    /// Sender maximum segment size, bytes.
    fn mss(&self) -> u32;
    /// Congestion window, bytes.
    fn cwnd(&self) -> u64;
    fn ssthresh(&self) -> u64;
    /// Bytes committed to the subflow and not yet acknowledged (the RFC 6675 pipe in the
    /// simulator; for a kernel subflow also the bytes still queued unsent in the socket).
    fn in_flight(&self) -> u64;
    fn segments_in_flight(&self) -> u64;
    /// Bytes sent and not cumulatively acknowledged, SACKed and lost ones included: what the
    /// subflow's retransmission queue holds until SND.UNA passes it (`snd_nxt − snd_una`).
    /// Above the pipe while a loss is being repaired; equal to it otherwise.
    fn outstanding_bytes(&self) -> u64 {
        self.in_flight()
    }
    /// Segments in [`Self::outstanding_bytes`] (Linux `tp->packets_out`).
    fn packets_out(&self) -> u64 {
        self.segments_in_flight()
    }
    /// Segments of [`Self::packets_out`] SACKed (Linux `tp->sacked_out`).
    fn sacked_segments(&self) -> u64 {
        0
    }
    /// Skbs of the retransmission queue charged a head in `sk_wmem_queued`. Without a
    /// record of how segments left: one per un-SACKed segment, two segments per skb in slow
    /// start (an ACK lets two leave at once).
    fn skb_heads_out(&self) -> u64 {
        let segs = self.packets_out() - self.sacked_segments();
        segs.div_ceil(if self.cwnd() < self.ssthresh() { 2 } else { 1 })
    }
    /// Room for one more full segment in the congestion window.
    fn has_cwnd_space(&self) -> bool;
    /// Free congestion window, bytes.
    fn cwnd_free(&self) -> u64;
    fn srtt(&self) -> Option<Duration>;
    fn rttvar(&self) -> Duration;
    fn min_rtt(&self) -> Option<Duration>;
    fn latest_rtt(&self) -> Option<Duration>;
    fn rto(&self) -> Duration;
    fn state(&self) -> SubflowState;
    /// `state() == SubflowState::Loss` (RTO recovery), without working out the other states.
    fn in_loss(&self) -> bool {
        self.state() == SubflowState::Loss
    }
    fn bytes_sent(&self) -> u64;
    fn bytes_acked(&self) -> u64;
    /// Latest delivery-rate sample, bits/s.
    fn delivery_rate_bps(&self) -> Option<f64>;
    /// Pacing rate, bits/s (Linux `sk_pacing_rate`); `None` when unknown.
    fn pacing_rate_bps(&self) -> Option<f64> {
        None
    }
    /// Bytes written to the subflow that have not left it yet (`tcpi_notsent_bytes`); zero in
    /// the simulator, which transmits the moment it decides.
    fn notsent_bytes(&self) -> u64 {
        0
    }
    /// The subflow's handshake has completed (for a joined subflow, the MP_JOIN third ACK):
    /// it may carry data. Kernel subflows a driver reports exist only once connected.
    fn is_established(&self) -> bool {
        true
    }
    /// No ACK for one probe timeout (Linux's PTO, 2·sRTT + 2 ms, `tcp_schedule_loss_probe`)
    /// while data is outstanding: the earliest moment Linux TCP suspects a tail loss (RFC 8985
    /// §7), here kept in every congestion state until the next ACK. Drivers report it only to
    /// schedulers that watch for it ([`super::Scheduler::watches_silence`]).
    fn silent(&self) -> bool {
        false
    }
}

/// The subflows of one connection, indexed by path number.
pub trait SubflowSet {
    fn count(&self) -> usize;
    fn view(&self, p: PathId) -> &dyn SubflowView;
}

// For sized collections only: `SchedCtx` holds a `&dyn SubflowSet`, and a bare slice cannot
// be one.
impl<T: SubflowView> SubflowSet for Vec<T> {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn view(&self, p: PathId) -> &dyn SubflowView {
        &self[p as usize]
    }
}

impl<T: SubflowView, const N: usize> SubflowSet for [T; N] {
    #[inline]
    fn count(&self) -> usize {
        N
    }
    #[inline]
    fn view(&self, p: PathId) -> &dyn SubflowView {
        &self[p as usize]
    }
}

impl SubflowView for SubflowSender {
    #[inline]
    fn path(&self) -> PathId {
        SubflowSender::path(self)
    }
    #[inline]
    fn is_established(&self) -> bool {
        SubflowSender::is_established(self)
    }
    #[inline]
    fn mss(&self) -> u32 {
        SubflowSender::mss(self)
    }
    #[inline]
    fn cwnd(&self) -> u64 {
        SubflowSender::cwnd(self)
    }
    #[inline]
    fn ssthresh(&self) -> u64 {
        SubflowSender::ssthresh(self)
    }
    #[inline]
    fn in_flight(&self) -> u64 {
        SubflowSender::in_flight(self)
    }
    #[inline]
    fn segments_in_flight(&self) -> u64 {
        SubflowSender::segments_in_flight(self)
    }
    #[inline]
    fn has_cwnd_space(&self) -> bool {
        SubflowSender::has_cwnd_space(self)
    }
    #[inline]
    fn cwnd_free(&self) -> u64 {
        SubflowSender::cwnd_free(self)
    }
    #[inline]
    fn srtt(&self) -> Option<Duration> {
        SubflowSender::srtt(self)
    }
    #[inline]
    fn rttvar(&self) -> Duration {
        SubflowSender::rttvar(self)
    }
    #[inline]
    fn min_rtt(&self) -> Option<Duration> {
        SubflowSender::min_rtt(self)
    }
    #[inline]
    fn latest_rtt(&self) -> Option<Duration> {
        SubflowSender::latest_rtt(self)
    }
    #[inline]
    fn rto(&self) -> Duration {
        SubflowSender::rto(self)
    }
    #[inline]
    fn state(&self) -> SubflowState {
        SubflowSender::state(self)
    }
    #[inline]
    fn in_loss(&self) -> bool {
        SubflowSender::in_loss(self)
    }
    #[inline]
    fn silent(&self) -> bool {
        SubflowSender::silent(self)
    }
    #[inline]
    fn bytes_sent(&self) -> u64 {
        SubflowSender::bytes_sent(self)
    }
    #[inline]
    fn bytes_acked(&self) -> u64 {
        SubflowSender::bytes_acked(self)
    }
    #[inline]
    fn delivery_rate_bps(&self) -> Option<f64> {
        SubflowSender::delivery_rate_bps(self)
    }
    #[inline]
    fn pacing_rate_bps(&self) -> Option<f64> {
        SubflowSender::pacing_rate_bps(self)
    }
    #[inline]
    fn outstanding_bytes(&self) -> u64 {
        SubflowSender::outstanding_bytes(self)
    }
    #[inline]
    fn packets_out(&self) -> u64 {
        SubflowSender::packets_out(self)
    }
    #[inline]
    fn sacked_segments(&self) -> u64 {
        SubflowSender::sacked_segments(self)
    }
    #[inline]
    fn skb_heads_out(&self) -> u64 {
        SubflowSender::skb_heads_out(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcKind;

    /// A stand-in for a kernel subflow: the view is all a scheduler gets.
    struct Fixed {
        cwnd: u64,
        in_flight: u64,
        srtt_ms: u64,
    }

    impl SubflowView for Fixed {
        fn path(&self) -> PathId {
            0
        }
        fn mss(&self) -> u32 {
            1000
        }
        fn cwnd(&self) -> u64 {
            self.cwnd
        }
        fn ssthresh(&self) -> u64 {
            u64::MAX
        }
        fn in_flight(&self) -> u64 {
            self.in_flight
        }
        fn segments_in_flight(&self) -> u64 {
            self.in_flight.div_ceil(1000)
        }
        fn has_cwnd_space(&self) -> bool {
            self.in_flight + 1000 <= self.cwnd
        }
        fn cwnd_free(&self) -> u64 {
            self.cwnd.saturating_sub(self.in_flight)
        }
        fn srtt(&self) -> Option<Duration> {
            Some(Duration::from_millis(self.srtt_ms))
        }
        fn rttvar(&self) -> Duration {
            Duration::ZERO
        }
        fn min_rtt(&self) -> Option<Duration> {
            self.srtt()
        }
        fn latest_rtt(&self) -> Option<Duration> {
            self.srtt()
        }
        fn rto(&self) -> Duration {
            Duration::from_millis(200)
        }
        fn state(&self) -> SubflowState {
            SubflowState::CongestionAvoidance
        }
        fn bytes_sent(&self) -> u64 {
            0
        }
        fn bytes_acked(&self) -> u64 {
            0
        }
        fn delivery_rate_bps(&self) -> Option<f64> {
            None
        }
    }

    #[test]
    fn simulated_subflow_view_matches_its_own_accessors() {
        let sf = SubflowSender::new(0, CcKind::Reno, 1000, 10, Duration::from_millis(200));
        let v: &dyn SubflowView = &sf;
        assert_eq!(v.cwnd(), 10_000);
        assert_eq!(v.in_flight(), 0);
        assert!(v.has_cwnd_space());
        assert_eq!(v.srtt(), None);
        assert_eq!(v.pacing_rate_bps(), None, "no RTT sample yet");
        assert_eq!(v.notsent_bytes(), 0);
    }

    #[test]
    fn foreign_subflows_full_window_scheduler_sees_no_space() {
        use crate::estimate::Estimator;
        use crate::meta::send::SendBuffer;
        use crate::sched::{build, SchedCtx};
        use crate::time::Time;
        let subflows = [
            Fixed {
                cwnd: 10_000,
                in_flight: 10_000,
                srtt_ms: 10,
            },
            Fixed {
                cwnd: 10_000,
                in_flight: 0,
                srtt_ms: 50,
            },
        ];
        let mut meta = SendBuffer::new(1000, 1 << 20, 1 << 20);
        meta.write(5000, true);
        let est = Estimator::new(2);
        let mut pen = Vec::new();
        let mut ctx = SchedCtx::with_subflows(Time::ZERO, &subflows, &mut meta, &est, &mut pen);
        assert!(!ctx.has_space(0));
        let mut s = build("minrtt", &["a".into(), "b".into()], &[1.0, 1.0]).unwrap();
        // The fast subflow's window is full: MinRTT must pick the slow one.
        assert_eq!(s.next(&mut ctx).map(|a| a.path), Some(1));
    }
}
