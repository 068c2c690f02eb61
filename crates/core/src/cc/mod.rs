//! Congestion control behind a small trait, in the manner of quinn-proto's `Controller`.
//!
//! The subflow owns loss detection and recovery (RFC 6675); the controller only answers how
//! large the congestion window is and reacts to acknowledgements, congestion events and RTOs.
//! All quantities are bytes. Coupled controllers (LIA, OLIA, BALIA, wVegas) read the other
//! subflows through [`CoupledView`], which decoupled controllers ignore.

pub mod balia;
pub mod cubic;
pub mod cubic_linux;
mod hystart;
mod hystart_linux;
pub mod lia;
pub mod olia;
pub mod reno;
pub mod wvegas;

use crate::time::{Duration, Time};

/// What a decoupled controller needs to know about one acknowledgement.
#[derive(Clone, Copy, Debug)]
pub struct AckSample {
    /// Bytes newly acknowledged (cumulatively or by SACK) by this ACK.
    pub acked_bytes: u64,
    /// Bytes in flight before this ACK was processed (the RFC 7661-style check of
    /// [`window_validated`], for controllers that model an RFC).
    pub prior_in_flight: u64,
    /// Linux `tcp_is_cwnd_limited` (include/net/tcp.h) as the subflow evaluates it before this
    /// ACK's window update: the last transmit attempt within the latest window of data was
    /// stopped by a full congestion window (`tp->is_cwnd_limited`, set by
    /// `tcp_cwnd_validate`), or, in slow start, cwnd < 2 · `max_packets_out`. The controllers
    /// that model Linux grow only while it holds (`tcp_reno_cong_avoid`,
    /// `cubictcp_cong_avoid`, MPTCP v0.9x `mptcp_ccc_cong_avoid` / `mptcp_olia_cong_avoid` /
    /// `mptcp_balia_cong_avoid`).
    pub cwnd_limited: bool,
    /// Smoothed RTT after this ACK's sample, if any sample exists yet.
    pub srtt: Option<Duration>,
    /// Minimum RTT seen on the subflow.
    pub min_rtt: Option<Duration>,
    /// The RTT sample this ACK produced, if any (HyStart++ watches per-round minima).
    pub rtt: Option<Duration>,
    /// Bytes delivered on the subflow so far, this ACK included.
    pub delivered: u64,
    /// Highest sequence number sent so far (SND.NXT): a round ends when `delivered` passes the
    /// value it had when the round began (RFC 9406 §4.2 windowEnd).
    pub snd_nxt: u64,
}

/// RFC 3465 §2.2: during slow start one ACK may open the window by at most L*SMSS, L = 2, so
/// that stretch ACKs (delayed ACKs, ACK loss, ACK thinning) cannot cause line-rate bursts.
const ABC_LIMIT_SEGMENTS: u64 = 2;

/// RFC 7661-style application-limited test: the window is only validated (and so only grown)
/// while at least half of it was in use when the ACK arrived. Growing an unused window would let
/// an application that later fills it burst far beyond what the path was ever shown to carry.
///
/// Only the RFC 9438 controller (`cc/cubic.rs`) uses it. Linux decides differently, and
/// statefully ([`AckSample::cwnd_limited`]): in congestion avoidance only a window that was
/// actually full grows, whatever fraction of it was in flight when the ACK arrived.
pub(crate) fn window_validated(prior_in_flight: u64, cwnd: u64) -> bool {
    prior_in_flight >= cwnd / 2
}

/// One slow-start ACK: returns the new window and the acknowledged bytes left over for
/// congestion avoidance. RFC 5681 §3.1 with RFC 3465 §2.2: cwnd += min(N, L*SMSS), but never
/// past ssthresh; the bytes beyond the crossing count toward congestion avoidance (as RFC 9002
/// §7.3.1 does), so an ACK straddling ssthresh is not partly ignored. Bytes beyond the L*SMSS
/// limit are dropped, which is the point of the limit.
pub(crate) fn slow_start(cwnd: u64, ssthresh: u64, acked: u64, mss: u64) -> (u64, u64) {
    let room = ssthresh.saturating_sub(cwnd);
    let used = acked.min(room);
    let grown = cwnd + used.min(ABC_LIMIT_SEGMENTS * mss);
    if grown < ssthresh {
        (grown, 0)
    } else {
        (grown, acked - used)
    }
}

/// RFC 5681 §4.1 restart after idle, computed as Linux `tcp_cwnd_restart` does (the default
/// `net.ipv4.tcp_slow_start_after_idle = 1`): ssthresh becomes at least 3/4 of cwnd
/// (`tcp_current_ssthresh`), so slow start regains most of the old window in a few round
/// trips, and cwnd halves once for every full RTO of idle time beyond the first, never below
/// the restart window RW = min(IW, cwnd). Returns (cwnd, ssthresh).
///
/// Without it a window grown by the previous transfer leaves as one line-rate burst after
/// any pause, which the drop-tail buffer of a slow path cannot hold.
pub fn restart_window(
    cwnd: u64,
    ssthresh: u64,
    idle: Duration,
    rto: Duration,
    initial_window: u64,
) -> (u64, u64) {
    let ssthresh = ssthresh.max(cwnd / 2 + cwnd / 4);
    let floor = initial_window.min(cwnd);
    let mut cwnd = cwnd;
    let mut left = idle.as_nanos() as i128 - rto.as_nanos() as i128;
    while left > 0 && cwnd > floor {
        cwnd /= 2;
        left -= rto.as_nanos() as i128;
    }
    (cwnd.max(floor), ssthresh)
}

/// The other subflows of the connection, for coupled congestion control. Empty for a single path.
#[derive(Clone, Copy, Debug, Default)]
pub struct CoupledView<'a> {
    /// (cwnd bytes, srtt) of every subflow of the connection, this one included.
    pub subflows: &'a [(u64, Option<Duration>)],
    /// Every subflow's [`CongestionControl::loss_interval`], same order, when the controllers
    /// need them (OLIA); empty otherwise.
    pub loss_intervals: &'a [u64],
    /// This subflow's index in `subflows`.
    pub this: usize,
}

impl<'a> CoupledView<'a> {
    /// The view of `subflows` (loss intervals not given).
    pub fn of(subflows: &'a [(u64, Option<Duration>)]) -> Self {
        CoupledView {
            subflows,
            ..CoupledView::default()
        }
    }
}

pub trait CongestionControl: std::fmt::Debug + Send {
    /// Current congestion window, bytes.
    fn window(&self) -> u64;
    /// Slow-start threshold, bytes (`u64::MAX` before the first congestion event).
    fn ssthresh(&self) -> u64;
    /// New data was acknowledged outside loss recovery.
    fn on_ack(&mut self, now: Time, ack: &AckSample, coupled: CoupledView<'_>);
    /// A loss was detected and loss recovery begins (at most once per window of data, the
    /// subflow guarantees it). `in_flight` is the bytes in flight when the loss was detected.
    fn on_congestion_event(&mut self, now: Time, in_flight: u64);
    /// The retransmission timer fired (the subflow calls this once per RTO episode, on the first
    /// expiry; backoff is the subflow's business).
    fn on_rto(&mut self, now: Time, in_flight: u64);
    /// After an RTO has marked what it deems lost: Linux `tcp_enter_loss` sets
    /// cwnd = packets in flight + 1, here `cwnd` bytes (at least one segment). Controllers that
    /// keep [`CongestionControl::on_rto`]'s window may ignore it.
    fn set_loss_window(&mut self, _cwnd: u64) {}
    /// The last RTO was spurious (F-RTO, RFC 5682; Linux `tcp_undo_cwnd_reduction`): cwnd
    /// becomes at least `prior_cwnd` (`tcp_reno_undo_cwnd`, which CUBIC uses too) and ssthresh
    /// at least `prior_ssthresh`. Controllers without it keep the reduced window.
    fn undo(&mut self, _prior_cwnd: u64, _prior_ssthresh: u64) {}
    /// The subflow paces its transmissions (Linux `sk_pacing_status`); CUBIC's HyStart
    /// reads it.
    fn set_pacing(&mut self, _on: bool) {}
    /// Loss recovery ended (the recovery point was acknowledged).
    fn on_recovery_end(&mut self, _now: Time) {}
    /// The subflow sends again after an idle period of `idle` with nothing in flight, longer
    /// than its retransmission timeout `rto` (RFC 5681 §4.1). Implementations apply
    /// [`restart_window`]; `initial_window` is IW in bytes.
    fn restart_after_idle(&mut self, now: Time, idle: Duration, rto: Duration, initial_window: u64);
    /// The subflow sends with nothing in flight after sending nothing for `idle` (Linux
    /// `CA_EVENT_TX_START`, raised by `tcp_transmit_skb` when `packets_out` is zero), whatever
    /// the RTO. Linux CUBIC moves its epoch forward by it; others ignore it.
    fn on_tx_start(&mut self, _now: Time, _idle: Duration) {}
    /// Scheduler penalization (Linux MPTCP `mptcp_rcv_buf_optimization`): halve the window,
    /// and remember it as the new threshold.
    fn penalize(&mut self, now: Time);
    /// True while in slow start.
    fn in_slow_start(&self) -> bool {
        self.window() < self.ssthresh()
    }
    /// Bytes acknowledged between the last two losses or since the last one, whichever is
    /// larger (OLIA's `l_r`); 0 for controllers that do not track it.
    fn loss_interval(&self) -> u64 {
        0
    }
    /// Algorithm name, for reports.
    fn name(&self) -> &'static str;
}

/// A subflow's congestion controller, with its window read once per change.
///
/// The engine asks for the window several times per subflow per poll (`has_cwnd_space` in
/// every pass over the subflows, and the schedulers' views), a virtual call each: at 8 paths
/// that was 3% of a run. The window is a function of the controller's state alone, so it is
/// read again after each call that may change that state ([`Cached::update`]). Reads go
/// through `Deref`; there is no `DerefMut`, so no change can bypass the cache.
#[derive(Debug)]
pub struct Cached {
    cc: Box<dyn CongestionControl>,
    window: u64,
}

impl Cached {
    pub fn new(cc: Box<dyn CongestionControl>) -> Self {
        let window = cc.window();
        Cached { cc, window }
    }
    /// [`CongestionControl::window`], as of the last change.
    pub fn window(&self) -> u64 {
        debug_assert_eq!(self.window, self.cc.window(), "a change bypassed the cache");
        self.window
    }
    /// Tell the controller something (any `&mut self` method); the window is read again.
    pub fn update<R>(&mut self, f: impl FnOnce(&mut dyn CongestionControl) -> R) -> R {
        let r = f(self.cc.as_mut());
        self.window = self.cc.window();
        r
    }
}

impl std::ops::Deref for Cached {
    type Target = dyn CongestionControl;
    fn deref(&self) -> &Self::Target {
        self.cc.as_ref()
    }
}

/// Which controller a subflow runs, with the parameters every controller shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CcKind {
    Reno,
    /// Linux's CUBIC, net/ipv4/tcp_cubic.c (`cc/cubic_linux.rs`).
    Cubic,
    /// CUBIC as RFC 9438 states it (`cc/cubic.rs`).
    #[serde(rename = "cubic-rfc9438")]
    CubicRfc,
    /// Coupled (Cech, TUM 2020, §4.7): RFC 6356.
    Lia,
    /// Coupled: Khalili et al., CoNEXT 2012.
    Olia,
    /// Coupled: Peng et al., IEEE/ACM ToN 2016.
    Balia,
    /// Coupled, delay-based: Cao et al., ICNP 2012.
    Wvegas,
}

/// How CUBIC's slow start ends without a loss (`transport.hystart`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum HyStartMode {
    /// Linux's classic HyStart, `tcp_cubic.c` (ACK train and delay increase): the default.
    #[default]
    #[serde(rename = "linux")]
    Linux,
    /// HyStart++, RFC 9406.
    #[serde(rename = "hystart++")]
    PlusPlus,
    /// Plain RFC 5681 slow start.
    #[serde(rename = "off")]
    Off,
}

impl HyStartMode {
    pub fn parse(s: &str) -> Option<HyStartMode> {
        match s {
            "linux" => Some(HyStartMode::Linux),
            "hystart++" => Some(HyStartMode::PlusPlus),
            "off" => Some(HyStartMode::Off),
            _ => None,
        }
    }
}

impl CcKind {
    pub fn parse(s: &str) -> Option<CcKind> {
        match s {
            "reno" | "newreno" => Some(CcKind::Reno),
            "cubic" => Some(CcKind::Cubic),
            "cubic-rfc9438" => Some(CcKind::CubicRfc),
            "lia" => Some(CcKind::Lia),
            "olia" => Some(CcKind::Olia),
            "balia" => Some(CcKind::Balia),
            "wvegas" => Some(CcKind::Wvegas),
            _ => None,
        }
    }
    /// Coupled controllers read every subflow's (cwnd, srtt) through [`CoupledView`]; Reno
    /// and both CUBICs ignore it.
    pub fn is_coupled(self) -> bool {
        matches!(
            self,
            CcKind::Lia | CcKind::Olia | CcKind::Balia | CcKind::Wvegas
        )
    }
    /// OLIA also reads each subflow's [`CongestionControl::loss_interval`].
    pub fn reads_loss_intervals(self) -> bool {
        self == CcKind::Olia
    }
    /// A controller with an initial window of `init_cwnd` segments of `mss` bytes.
    pub fn build(self, mss: u64, init_cwnd: u64) -> Box<dyn CongestionControl> {
        match self {
            CcKind::Reno => Box::new(reno::Reno::new(mss, init_cwnd)),
            CcKind::Cubic => Box::new(cubic_linux::LinuxCubic::new(mss, init_cwnd)),
            CcKind::CubicRfc => Box::new(cubic::Cubic::new(mss, init_cwnd)),
            CcKind::Lia => Box::new(lia::Lia::new(mss, init_cwnd)),
            CcKind::Olia => Box::new(olia::Olia::new(mss, init_cwnd)),
            CcKind::Balia => Box::new(balia::Balia::new(mss, init_cwnd)),
            CcKind::Wvegas => Box::new(wvegas::Wvegas::new(mss, init_cwnd)),
        }
    }
    /// As [`CcKind::build`], with CUBIC's slow-start exit chosen (Reno has none).
    pub fn build_with(
        self,
        mss: u64,
        init_cwnd: u64,
        hystart: HyStartMode,
    ) -> Box<dyn CongestionControl> {
        match (self, hystart) {
            // Linux has no HyStart++: it comes with the RFC 9438 controller.
            (CcKind::Cubic | CcKind::CubicRfc, HyStartMode::PlusPlus) => {
                Box::new(cubic::Cubic::with_hystart_plus_plus(mss, init_cwnd))
            }
            (CcKind::Cubic, HyStartMode::Off) => {
                Box::new(cubic_linux::LinuxCubic::without_hystart(mss, init_cwnd))
            }
            (CcKind::CubicRfc, HyStartMode::Off) => {
                Box::new(cubic::Cubic::without_hystart(mss, init_cwnd))
            }
            _ => self.build(mss, init_cwnd),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    #[test]
    fn cubic_is_linux_and_the_rfc_controller_has_its_own_name() {
        // `transport.cc = "cubic"` runs net/ipv4/tcp_cubic.c's rules (cubic_linux.rs); RFC 9438
        // is "cubic-rfc9438", and HyStart++ (RFC 9406, which Linux lacks) comes with it.
        let build = |name: &str, hs| CcKind::parse(name).unwrap().build_with(MSS, 10, hs).name();
        assert_eq!(build("cubic", HyStartMode::Linux), "cubic");
        assert_eq!(build("cubic", HyStartMode::Off), "cubic");
        assert_eq!(build("cubic-rfc9438", HyStartMode::Linux), "cubic-rfc9438");
        assert_eq!(build("cubic", HyStartMode::PlusPlus), "cubic-rfc9438");
    }

    #[test]
    fn restart_window_halves_per_rto_beyond_the_first_down_to_iw() {
        let rto = Duration::from_millis(300);
        let idle = |ms: u64| Duration::from_millis(ms);
        // Linux tcp_cwnd_restart: `while ((delta -= rto) > 0 && cwnd > restart_cwnd) cwnd >>= 1`.
        assert_eq!(
            restart_window(80 * MSS, 40 * MSS, idle(300), rto, 10 * MSS).0,
            80 * MSS
        );
        assert_eq!(
            restart_window(80 * MSS, 40 * MSS, idle(301), rto, 10 * MSS).0,
            40 * MSS
        );
        assert_eq!(
            restart_window(80 * MSS, 40 * MSS, idle(601), rto, 10 * MSS).0,
            20 * MSS
        );
        assert_eq!(
            restart_window(80 * MSS, 40 * MSS, idle(60_000), rto, 10 * MSS).0,
            10 * MSS
        );
        // A window below IW stays (RW = min(IW, cwnd)).
        assert_eq!(
            restart_window(4 * MSS, 2 * MSS, idle(60_000), rto, 10 * MSS).0,
            4 * MSS
        );
    }

    #[test]
    fn restart_window_keeps_three_quarters_as_ssthresh() {
        let (rto, idle) = (Duration::from_millis(300), Duration::from_secs(5));
        // tcp_current_ssthresh: max(ssthresh, 3/4 cwnd).
        assert_eq!(
            restart_window(80 * MSS, 40 * MSS, idle, rto, 10 * MSS).1,
            60 * MSS
        );
        assert_eq!(
            restart_window(80 * MSS, 70 * MSS, idle, rto, 10 * MSS).1,
            70 * MSS
        );
    }
}
