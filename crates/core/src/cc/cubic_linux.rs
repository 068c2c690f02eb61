//! CUBIC as Linux runs it (net/ipv4/tcp_cubic.c, `cubictcp_*`; v2.3 of Ha, Rhee and Xu, ACM
//! SIGOPS OSR 2008) — the controller of `transport.cc = "cubic"`. RFC 9438 is kept as
//! `"cubic-rfc9438"` ([`super::cubic::Cubic`]).
//!
//! Where the kernel and the RFC part, this follows the kernel, because the kernel is what the
//! papers measured and what `mpsched kernel` runs beside us:
//!
//! * **First epoch before any loss** (`bictcp_update`: `last_max_cwnd == 0 && cnt > 20`): the
//!   window grows by at least 1 segment per 20 acknowledged, about 5% per RTT, after HyStart
//!   ended slow start. RFC 9438 §4.10 starts a flat cubic at K = 0 there, which grows by a
//!   fraction of a segment per RTT: measured on the emulator, the kernel's WiFi subflow went
//!   from 57 to 60 segments within 100 ms after HyStart and then overflowed the 50 ms buffer at
//!   the end of a 256 KiB download, the RFC controller stayed at 57-58 and lost nothing.
//! * The Reno-friendly estimate `tcp_cwnd` grows by one segment per `cwnd · beta_scale / 8`
//!   segments acknowledged (α ≈ 0.53 always; the RFC switches to 1 at cwnd_prior).
//! * Window arithmetic in whole segments (`snd_cwnd`, `snd_cwnd_cnt`, `tcp_cong_avoid_ai`),
//!   the cubic's time in jiffies ([`HZ`]) plus the minimum delay (`delay_min`), and `ca->cnt`
//!   recomputed at most once per jiffy and not while cwnd is unchanged for HZ/32.
//! * ssthresh = cwnd · 717/1024 (`bictcp_recalc_ssthresh`), not flight size · 0.7; fast
//!   convergence always on (`fast_convergence = 1`).
//! * Slow start is `tcp_slow_start`: cwnd += segments acknowledged, up to ssthresh, without
//!   RFC 3465's per-ACK limit; it ends by Linux's classic HyStart (`cc/hystart_linux.rs`).
//! * After idle (`CA_EVENT_TX_START`, `cubictcp_cwnd_event`) the epoch start moves forward by
//!   the time nothing was sent; an RTO (`cubictcp_state(TCP_CA_Loss)` → `bictcp_reset`) forgets
//!   W_max and the minimum delay, so the next epoch is a "first" one again.
//!
//! Deviations: `cubic_root` is computed exactly (the kernel's table plus one Newton step is
//! within 0.2%); segments acknowledged are counted from bytes (`acked_bytes / mss`, carrying
//! the remainder), which equals the kernel's packet count for full-sized segments.

use super::hystart_linux::{HyStartInput, LinuxHyStart};
use super::{restart_window, AckSample, CongestionControl, CoupledView};
use crate::time::{Duration, Time};

/// CONFIG_HZ of the kernel on the emulator (Linux 6.18 here, `CONFIG_HZ=250`); a jiffy is 4 ms.
/// Distribution kernels use 250 or 1000.
pub const HZ: u64 = 250;
const JIFFY_NS: u64 = 1_000_000_000 / HZ;
/// `BICTCP_BETA_SCALE` and `beta` (717/1024 ≈ 0.7).
const BETA_SCALE: u64 = 1024;
const BETA: u64 = 717;
/// `BICTCP_HZ`: the cubic's time unit is 2^-10 s.
const BICTCP_HZ: u32 = 10;
/// `bic_scale` = 41: C = 41 · 10 / 1024 ≈ 0.4 (`cube_rtt_scale`).
const CUBE_RTT_SCALE: u64 = 41 * 10;
/// `TCP_INFINITE_SSTHRESH`.
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// `beta_scale = 8 · (1024 + beta) / 3 / (1024 − beta)`, integer arithmetic as the kernel's (15).
const fn beta_scale() -> u64 {
    8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA)
}

/// `cube_factor = 2^(10 + 3·BICTCP_HZ) / (bic_scale · 10)`.
const fn cube_factor() -> u64 {
    (1u64 << (10 + 3 * BICTCP_HZ)) / CUBE_RTT_SCALE
}

fn jiffies(t: Time) -> u64 {
    t.0 / JIFFY_NS
}

/// `usecs_to_jiffies`: rounds up.
fn usecs_to_jiffies(us: u64) -> u64 {
    (us * 1000).div_ceil(JIFFY_NS)
}

/// `struct bictcp` up to `unused`: what `bictcp_reset` zeroes.
#[derive(Clone, Debug, Default)]
struct Bic {
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u64,
    origin_point: u32,
    /// K in 2^-10 s.
    k: u64,
    /// Smallest RTT sample, microseconds; 0 = none (`ca->delay_min`).
    delay_min_us: u64,
    /// Jiffies; `None` is the kernel's `epoch_start == 0`.
    epoch_start: Option<u64>,
    ack_cnt: u32,
    tcp_cwnd: u32,
}

#[derive(Clone, Debug)]
pub struct LinuxCubic {
    mss: u64,
    /// `snd_cwnd`, `snd_cwnd_cnt`, `snd_ssthresh`, in segments.
    cwnd: u32,
    cwnd_cnt: u32,
    ssthresh: u32,
    /// Acknowledged bytes short of a whole segment, carried to the next ACK.
    acked_rem: u64,
    /// `struct bictcp` (HyStart's part apart).
    bic: Bic,
    hystart: Option<LinuxHyStart>,
    paced: bool,
}

impl LinuxCubic {
    /// With Linux's classic HyStart (the kernel's default).
    pub fn new(mss: u64, init_cwnd_segments: u64) -> LinuxCubic {
        LinuxCubic::build(mss, init_cwnd_segments, true)
    }

    /// With plain slow start (`hystart = 0`).
    pub fn without_hystart(mss: u64, init_cwnd_segments: u64) -> LinuxCubic {
        LinuxCubic::build(mss, init_cwnd_segments, false)
    }

    fn build(mss: u64, init_cwnd_segments: u64, hystart: bool) -> LinuxCubic {
        assert!(mss > 0, "mss must be positive");
        LinuxCubic {
            mss,
            cwnd: init_cwnd_segments.clamp(1, u64::from(u32::MAX)) as u32,
            cwnd_cnt: 0,
            ssthresh: INFINITE_SSTHRESH,
            acked_rem: 0,
            bic: Bic::default(),
            hystart: hystart.then(LinuxHyStart::default),
            paced: false,
        }
    }

    /// `ca->cnt`: segments to acknowledge per one-segment increase.
    pub fn cnt(&self) -> u32 {
        self.bic.cnt
    }

    /// W_max in segments (`last_max_cwnd`); 0 before the first loss and after an RTO.
    pub fn last_max_cwnd(&self) -> u32 {
        self.bic.last_max_cwnd
    }

    /// K in seconds.
    pub fn k_secs(&self) -> f64 {
        self.bic.k as f64 / f64::from(1u32 << BICTCP_HZ)
    }

    /// `bictcp_recalc_ssthresh`: ends the epoch, remembers W_max (fast convergence), returns
    /// the new ssthresh in segments.
    fn recalc_ssthresh(&mut self) -> u32 {
        self.bic.epoch_start = None;
        self.bic.last_max_cwnd = if self.cwnd < self.bic.last_max_cwnd {
            ((u64::from(self.cwnd) * (BETA_SCALE + BETA)) / (2 * BETA_SCALE)) as u32
        } else {
            self.cwnd
        };
        ((u64::from(self.cwnd) * BETA / BETA_SCALE) as u32).max(2)
    }

    /// `bictcp_update`: recompute `ca->cnt` for the window `cwnd` (segments).
    fn update(&mut self, now: Time, acked: u32) {
        let cwnd = self.cwnd;
        let now_j = jiffies(now);
        self.bic.ack_cnt = self.bic.ack_cnt.saturating_add(acked);
        if self.bic.last_cwnd == cwnd && now_j.saturating_sub(self.bic.last_time) <= HZ / 32 {
            return;
        }
        // The cubic part at most once per jiffy; the friendliness part every time.
        if !(self.bic.epoch_start.is_some() && now_j == self.bic.last_time) {
            self.bic.last_cwnd = cwnd;
            self.bic.last_time = now_j;
            let epoch = match self.bic.epoch_start {
                Some(e) => e,
                None => {
                    self.bic.epoch_start = Some(now_j);
                    self.bic.ack_cnt = acked;
                    self.bic.tcp_cwnd = cwnd;
                    if self.bic.last_max_cwnd <= cwnd {
                        self.bic.k = 0;
                        self.bic.origin_point = cwnd;
                    } else {
                        let d = u64::from(self.bic.last_max_cwnd - cwnd);
                        self.bic.k = ((cube_factor() * d) as f64).cbrt() as u64;
                        self.bic.origin_point = self.bic.last_max_cwnd;
                    }
                    now_j
                }
            };
            let t_j = now_j.saturating_sub(epoch) + usecs_to_jiffies(self.bic.delay_min_us);
            let t = (t_j << BICTCP_HZ) / HZ;
            let offs = t.abs_diff(self.bic.k);
            // c/rtt · (t − K)^3 in segments; u128 keeps the cube of a long epoch exact.
            let delta = ((u128::from(CUBE_RTT_SCALE) * u128::from(offs).pow(3))
                >> (10 + 3 * BICTCP_HZ)) as u64;
            let target = if t < self.bic.k {
                u64::from(self.bic.origin_point).saturating_sub(delta)
            } else {
                u64::from(self.bic.origin_point) + delta
            };
            self.bic.cnt = if target > u64::from(cwnd) {
                (u64::from(cwnd) / (target - u64::from(cwnd))) as u32
            } else {
                100 * cwnd
            };
            // "The initial growth of cubic function may be too conservative when the
            // available bandwidth is still unknown": 5% per RTT.
            if self.bic.last_max_cwnd == 0 && self.bic.cnt > 20 {
                self.bic.cnt = 20;
            }
        }
        // TCP friendliness.
        let delta = ((u64::from(cwnd) * beta_scale()) >> 3).max(1) as u32;
        while self.bic.ack_cnt > delta {
            self.bic.ack_cnt -= delta;
            self.bic.tcp_cwnd += 1;
        }
        if self.bic.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.bic.tcp_cwnd - cwnd);
            self.bic.cnt = self.bic.cnt.min(max_cnt);
        }
        // At most one segment per two acknowledged: 1.5x per RTT.
        self.bic.cnt = self.bic.cnt.max(2);
    }

    /// `tcp_cong_avoid_ai(tp, w, acked)`.
    fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
    }

    /// `cubictcp_acked` (for every ACK with an RTT sample): minimum delay, and HyStart, which
    /// may end slow start (ssthresh = cwnd).
    fn acked(&mut self, now: Time, ack: &AckSample) {
        let Some(rtt) = ack.rtt else { return };
        // "Discard delay samples right after fast recovery".
        if let Some(e) = self.bic.epoch_start {
            if jiffies(now).saturating_sub(e) < HZ {
                return;
            }
        }
        let us = (rtt.as_nanos() / 1000).max(1);
        if self.bic.delay_min_us == 0 || self.bic.delay_min_us > us {
            self.bic.delay_min_us = us;
        }
        if !self.in_slow_start() {
            return;
        }
        let input = HyStartInput::in_slow_start(
            now,
            self.window() as f64,
            self.mss,
            ack.srtt,
            self.paced,
            self.bic.epoch_start.map(|j| Time(j * JIFFY_NS)),
        );
        if let Some(hs) = self.hystart.as_mut() {
            if hs.on_ack(ack, &input) {
                self.ssthresh = self.cwnd;
            }
        }
    }

    fn segs(&self, bytes: u64) -> u32 {
        (bytes / self.mss).clamp(1, u64::from(INFINITE_SSTHRESH)) as u32
    }
}

impl CongestionControl for LinuxCubic {
    fn window(&self) -> u64 {
        u64::from(self.cwnd) * self.mss
    }

    fn ssthresh(&self) -> u64 {
        if self.ssthresh >= INFINITE_SSTHRESH {
            u64::MAX
        } else {
            u64::from(self.ssthresh) * self.mss
        }
    }

    fn on_ack(&mut self, now: Time, ack: &AckSample, _coupled: CoupledView<'_>) {
        // `tcp_ack` → `tcp_clean_rtx_queue` → `cubictcp_acked`, then `tcp_cong_control` →
        // `cubictcp_cong_avoid`.
        self.acked(now, ack);
        let bytes = ack.acked_bytes + self.acked_rem;
        let mut acked = (bytes / self.mss) as u32;
        self.acked_rem = bytes % self.mss;
        // `cubictcp_cong_avoid`: no growth unless `tcp_is_cwnd_limited`, which the subflow
        // evaluates as the kernel does (`AckSample::cwnd_limited`): the window was full during
        // the last window of data, or, in slow start, cwnd < 2 · max_packets_out.
        if acked == 0 || !ack.cwnd_limited {
            return;
        }
        if self.in_slow_start() {
            // `tcp_slow_start`.
            let cwnd = (self.cwnd.saturating_add(acked)).min(self.ssthresh);
            acked -= cwnd - self.cwnd;
            self.cwnd = cwnd;
            if acked == 0 {
                return;
            }
        }
        self.update(now, acked);
        self.cong_avoid_ai(self.bic.cnt, acked);
    }

    fn on_congestion_event(&mut self, _now: Time, _in_flight: u64) {
        // `tcp_init_cwnd_reduction`: ssthresh from the window (not the flight size); the
        // subflow's recovery brings cwnd down to it by PRR and leaves it here at its end.
        self.ssthresh = self.recalc_ssthresh();
        self.cwnd = self.ssthresh;
        self.cwnd_cnt = 0;
    }

    fn on_rto(&mut self, _now: Time, _in_flight: u64) {
        // `tcp_enter_loss`: ssthresh from `bictcp_recalc_ssthresh`, then the Loss state resets
        // CUBIC (`bictcp_reset`) and HyStart; cwnd is set by `set_loss_window`.
        self.ssthresh = self.recalc_ssthresh();
        // `bictcp_reset`.
        self.bic = Bic::default();
        if let Some(hs) = self.hystart.as_mut() {
            hs.reset();
        }
        self.cwnd = 1;
        self.cwnd_cnt = 0;
    }

    fn set_loss_window(&mut self, cwnd: u64) {
        self.cwnd = self.segs(cwnd);
    }

    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        // `tcp_reno_undo_cwnd` and `tcp_undo_cwnd_reduction`.
        self.cwnd = self.cwnd.max(self.segs(prior_cwnd));
        if prior_ssthresh == u64::MAX {
            self.ssthresh = INFINITE_SSTHRESH;
        } else {
            self.ssthresh = self.ssthresh.max(self.segs(prior_ssthresh));
        }
    }

    fn set_pacing(&mut self, on: bool) {
        self.paced = on;
    }

    fn on_tx_start(&mut self, now: Time, idle: Duration) {
        // `cubictcp_cwnd_event(CA_EVENT_TX_START)`: keep the growth on the cubic curve across
        // an application-limited pause.
        let delta = idle.as_nanos() / JIFFY_NS;
        if let Some(e) = self.bic.epoch_start.as_mut() {
            if delta > 0 {
                *e = (*e + delta).min(jiffies(now));
            }
        }
    }

    fn restart_after_idle(&mut self, _now: Time, idle: Duration, rto: Duration, iw: u64) {
        let (cwnd, ssthresh) = restart_window(self.window(), self.ssthresh(), idle, rto, iw);
        self.cwnd = self.segs(cwnd);
        if ssthresh != u64::MAX {
            self.ssthresh = self.segs(ssthresh);
        }
    }

    fn penalize(&mut self, _now: Time) {
        // v0.9x `mptcp_rcv_buf_optimization`: cwnd halves; ssthresh halves only outside slow
        // start, so a penalty never ends slow start (as the RFC controller does it).
        let prior = self.cwnd;
        self.cwnd = (self.cwnd / 2).max(1);
        if prior >= self.ssthresh {
            self.ssthresh = (self.ssthresh / 2).max(2);
            self.bic.epoch_start = None;
        }
    }

    fn name(&self) -> &'static str {
        "cubic"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    /// A window-limited sender on a fixed-RTT path: every ACK acknowledges `per_ack` segments.
    struct Path {
        cc: LinuxCubic,
        now: Time,
        rtt: Duration,
        delivered: u64,
    }

    impl Path {
        fn new(rtt_ms: u64) -> Path {
            Path {
                cc: LinuxCubic::without_hystart(MSS, 10),
                now: Time::ZERO,
                rtt: Duration::from_millis(rtt_ms),
                delivered: 0,
            }
        }

        fn cwnd(&self) -> u64 {
            self.cc.window() / MSS
        }

        /// One RTT of ACKs, one per `per_ack` segments, spread over the RTT.
        fn round(&mut self, per_ack: u64) {
            let w = self.cwnd();
            let acks = (w / per_ack).max(1);
            let step = Duration(self.rtt.as_nanos() / acks);
            for _ in 0..acks {
                self.now += step;
                let sample = AckSample {
                    acked_bytes: per_ack * MSS,
                    prior_in_flight: w * MSS,
                    cwnd_limited: true,
                    srtt: Some(self.rtt),
                    min_rtt: Some(self.rtt),
                    rtt: Some(self.rtt),
                    delivered: self.delivered + per_ack * MSS,
                    snd_nxt: self.delivered + w * MSS,
                };
                self.delivered += per_ack * MSS;
                self.cc.on_ack(self.now, &sample, CoupledView::default());
            }
        }
    }

    #[test]
    fn slow_start_grows_by_every_segment_acked_without_a_per_ack_limit() {
        // tcp_slow_start: cwnd = min(cwnd + acked, ssthresh) — a stretch ACK of 8 segments
        // opens 8 (RFC 3465 would allow 2).
        let mut p = Path::new(50);
        p.round(8);
        assert_eq!(p.cwnd(), 10 + 8);
    }

    #[test]
    fn first_epoch_without_loss_grows_five_percent_per_rtt() {
        // bictcp_update: last_max_cwnd == 0 caps cnt at 20. Slow start ended at 60 segments
        // (as HyStart ends it): one RTT of 60 acknowledged segments adds 60 / 20 = 3.
        let mut p = Path::new(50);
        p.cc.cwnd = 60;
        p.cc.ssthresh = 60;
        p.round(1);
        assert_eq!(p.cc.last_max_cwnd(), 0);
        assert_eq!(p.cc.cnt(), 20);
        assert_eq!(p.cwnd(), 63);
    }

    #[test]
    fn loss_sets_ssthresh_from_the_window_and_w_max_with_fast_convergence() {
        // bictcp_recalc_ssthresh: ssthresh = cwnd * 717 / 1024; W_max = cwnd, or, when the
        // window is below the previous W_max, cwnd * (1024 + 717) / 2048.
        let mut p = Path::new(50);
        p.cc.cwnd = 100;
        p.cc.ssthresh = 100;
        p.cc.on_congestion_event(p.now, 80 * MSS);
        assert_eq!(p.cwnd(), 70); // 100 * 717 / 1024 = 70.02
        assert_eq!(p.cc.last_max_cwnd(), 100);
        p.cc.on_congestion_event(p.now, 60 * MSS);
        assert_eq!(p.cwnd(), 49);
        assert_eq!(p.cc.last_max_cwnd(), 70 * 1741 / 2048); // 59
    }

    #[test]
    fn window_follows_the_cubic_back_to_w_max() {
        // W(t) = 0.4 (t − K)^3 + W_max, K = cbrt((W_max − cwnd) / 0.4) = cbrt(75) = 4.22 s
        // from 70 back to 100 segments; the kernel evaluates it at t + delay_min and moves
        // cwnd towards it within an RTT (cnt = cwnd / (target − cwnd)).
        let mut p = Path::new(100);
        p.cc.cwnd = 100;
        p.cc.ssthresh = 100;
        p.cc.on_congestion_event(p.now, 100 * MSS);
        assert_eq!(p.cwnd(), 70);
        let start = p.now;
        let w = |t: f64, k: f64| 0.4 * (t - k).powi(3) + 100.0;
        let mut checked = 0;
        while p.now.saturating_since(start).as_secs_f64() < 6.0 {
            p.round(1);
            let k = p.cc.k_secs();
            let t = p.now.saturating_since(start).as_secs_f64();
            // One RTT behind the target at most (the first ACK starts the epoch).
            let (lo, hi) = (w(t - 0.1, k), w(t + 0.2, k));
            let c = p.cwnd() as f64;
            assert!(
                c >= lo.min(100.0) - 1.0 && c <= hi.max(100.0) + 1.0,
                "t {t}: {c} vs [{lo}, {hi}]"
            );
            checked += 1;
        }
        assert!(
            (p.cc.k_secs() - 75f64.cbrt()).abs() < 0.01,
            "K = {}",
            p.cc.k_secs()
        );
        assert!(checked > 50);
        // Past K the convex part grows beyond W_max.
        assert!(p.cwnd() > 100, "{}", p.cwnd());
    }

    #[test]
    fn rto_forgets_w_max_so_the_next_epoch_is_a_first_one() {
        // cubictcp_state(TCP_CA_Loss) → bictcp_reset zeroes last_max_cwnd.
        let mut p = Path::new(50);
        p.cc.cwnd = 100;
        p.cc.ssthresh = 100;
        p.cc.on_congestion_event(p.now, 100 * MSS);
        assert_eq!(p.cc.last_max_cwnd(), 100);
        p.cc.on_rto(p.now, 70 * MSS);
        assert_eq!(p.cc.last_max_cwnd(), 0);
        assert_eq!(p.cwnd(), 1);
        assert_eq!(p.cc.ssthresh() / MSS, 49);
    }

    #[test]
    fn tx_start_moves_the_epoch_by_the_idle_time() {
        // cubictcp_cwnd_event(CA_EVENT_TX_START): epoch_start += now − lsndtime.
        let mut p = Path::new(50);
        p.cc.cwnd = 60;
        p.cc.ssthresh = 60;
        p.round(1);
        let e = p.cc.bic.epoch_start.unwrap();
        p.now += Duration::from_millis(400);
        p.cc.on_tx_start(p.now, Duration::from_millis(400));
        assert_eq!(p.cc.bic.epoch_start.unwrap(), e + 100);
    }
}
