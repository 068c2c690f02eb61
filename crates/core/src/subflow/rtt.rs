//! RTT estimation and the retransmission timeout as Linux computes them (`tcp_rtt_estimator`,
//! `tcp_set_rto`, net/ipv4/tcp_input.c), which refine RFC 6298 in three ways:
//!
//! * the mean deviation `mdev` is smoothed with gain 1/4 when the sample is above SRTT but only
//!   1/32 when it is below (a falling RTT must not inflate the timeout);
//! * the variance term of the RTO is `rttvar = max(4·mdev over the last RTT, tcp_rto_min)`,
//!   updated once per round trip and decaying by a quarter of the excess per round, so
//!   `RTO = srtt + rttvar ≥ srtt + 200 ms`: RFC 6298's `max(min_rto, srtt + 4·rttvar)` floors
//!   the sum instead, and a steady 500 ms queue then gives an RTO a few ms above the RTT;
//! * the first sample sets `4·mdev = 2·rtt`, so RTO = 3·rtt (or rtt + 200 ms).
//!
//! Samples come from RFC 7323 timestamps for every ACK that acknowledges new data,
//! retransmissions included: the echoed TSval identifies the transmission, so Karn's ambiguity
//! does not arise. Backoff doubles the RTO per expiry up to `TCP_RTO_MAX` = 120 s and is reset
//! by the next valid sample (`tcp_ack_update_rtt`).

use crate::time::Duration;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    /// Linux `mdev_us`: four times the smoothed mean deviation, nanoseconds.
    mdev4: u64,
    /// Linux `mdev_max_us`: the largest `mdev4` of the current round trip (at least rto_min).
    mdev4_max: u64,
    /// Linux `rttvar_us`: the variance term of the RTO, at least rto_min.
    rttvar4: u64,
    /// Linux `rtt_seq`: the round trip ends once SND.UNA passes it.
    rtt_seq: u64,
    min_rtt: Option<Duration>,
    latest: Option<Duration>,
    min_rto: Duration,
    /// Number of consecutive RTO expiries (`icsk_backoff`).
    backoff: u32,
    /// [`RttEstimator::rto`] as of the last change of `srtt`, `rttvar4` or `backoff`: the
    /// subflow reads it two or three times per segment (timers), it changes once per ACK.
    rto: Duration,
}

/// RFC 6298 §2.1 and Linux `TCP_TIMEOUT_INIT`: before any sample, RTO = 1 s.
const INITIAL_RTO: Duration = Duration::from_secs(1);
/// Linux `TCP_RTO_MAX`.
const MAX_RTO: Duration = Duration::from_secs(120);

impl RttEstimator {
    pub fn new(min_rto: Duration) -> Self {
        RttEstimator {
            srtt: None,
            mdev4: 0,
            mdev4_max: 0,
            rttvar4: 0,
            rtt_seq: 0,
            min_rtt: None,
            latest: None,
            min_rto,
            backoff: 0,
            rto: INITIAL_RTO,
        }
    }

    /// One RTT sample `r`, taken when the subflow's SND.UNA is `snd_una` and SND.NXT is
    /// `snd_nxt` (they delimit Linux's once-per-RTT update of `rttvar`). As
    /// `tcp_rtt_estimator`: srtt += (r − srtt)/8; 4·mdev += |r − srtt| − mdev, with the
    /// error scaled down by 8 when the sample is below srtt.
    pub fn on_sample(&mut self, r: Duration, snd_una: u64, snd_nxt: u64) {
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        let floor = self.min_rto.0;
        let m = r.0 as i64;
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.mdev4 = 2 * r.0;
                self.rttvar4 = self.mdev4.max(floor);
                self.mdev4_max = self.rttvar4;
                self.rtt_seq = snd_nxt;
            }
            Some(s) => {
                let err = m - s.0 as i64;
                self.srtt = Some(Duration((s.0 as i64 + err / 8).max(1) as u64));
                let mdev = (self.mdev4 / 4) as i64;
                let delta = if err < 0 {
                    let d = -err - mdev;
                    // A falling RTT: weight 1/32 instead of 1/4 (Linux: `if (m > 0) m >>= 3`).
                    if d > 0 {
                        d / 8
                    } else {
                        d
                    }
                } else {
                    err - mdev
                };
                self.mdev4 = (self.mdev4 as i64 + delta).max(0) as u64;
                if self.mdev4 > self.mdev4_max {
                    self.mdev4_max = self.mdev4;
                    self.rttvar4 = self.rttvar4.max(self.mdev4_max);
                }
                if snd_una > self.rtt_seq {
                    // One round trip over: rttvar decays a quarter of the way to this round's
                    // maximum, and the next round's maximum starts at rto_min.
                    if self.mdev4_max < self.rttvar4 {
                        self.rttvar4 -= (self.rttvar4 - self.mdev4_max) / 4;
                    }
                    self.rtt_seq = snd_nxt;
                    self.mdev4_max = floor;
                }
            }
        }
        // A valid sample after backoff resets it (`tcp_ack_update_rtt`, RFC 6298 §5.7).
        self.backoff = 0;
        self.rto = self.compute_rto();
    }

    /// `__tcp_set_rto`: srtt + rttvar (1 s before any sample), backed off by 2^backoff and
    /// capped at `TCP_RTO_MAX` (`inet_csk_rto_backoff`).
    #[inline]
    pub fn rto(&self) -> Duration {
        debug_assert_eq!(
            self.rto,
            self.compute_rto(),
            "a change bypassed the RTO cache"
        );
        self.rto
    }

    fn compute_rto(&self) -> Duration {
        let base = match self.srtt {
            None => INITIAL_RTO,
            Some(s) => s + Duration(self.rttvar4),
        };
        Duration(base.0.saturating_mul(1u64 << self.backoff.min(16))).min(MAX_RTO)
    }

    /// The RTO without backoff (Linux `icsk_rto` before `inet_csk_rto_backoff`).
    pub fn base_rto(&self) -> Duration {
        match self.srtt {
            None => INITIAL_RTO,
            Some(s) => (s + Duration(self.rttvar4)).min(MAX_RTO),
        }
    }

    pub fn on_rto_expired(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
        self.rto = self.compute_rto();
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    /// The smoothed mean deviation (RFC 6298's RTTVAR; Linux `mdev_us / 4`).
    pub fn rttvar(&self) -> Duration {
        Duration(self.mdev4 / 4)
    }
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }
    pub fn backoff(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn est() -> RttEstimator {
        RttEstimator::new(ms(200))
    }

    #[test]
    fn first_sample_gives_three_rtts_or_rtt_plus_rto_min() {
        // tcp_rtt_estimator: mdev_us = 2·m, rttvar_us = max(mdev_us, rto_min).
        let mut r = est();
        r.on_sample(ms(100), 0, 10);
        assert_eq!(r.srtt(), Some(ms(100)));
        assert_eq!(r.rttvar(), ms(50));
        assert_eq!(r.rto(), ms(300));
        let mut r = est();
        r.on_sample(ms(40), 0, 10);
        assert_eq!(r.rto(), ms(240), "40 ms + max(80 ms, 200 ms)");
    }

    #[test]
    fn steady_rtt_keeps_rto_at_srtt_plus_rto_min() {
        // The variance floor is added to srtt (tcp_set_rto), not applied to the sum: a steady
        // 570 ms RTT (a full 500 ms LTE buffer) gives 770 ms, RFC 6298 would give about 570 ms.
        let mut r = est();
        for k in 0..200 {
            r.on_sample(ms(570), k * 10, k * 10 + 10);
        }
        // (Linux's integer decay stops within 3 units of the floor, as here in nanoseconds.)
        assert!(r.rto().0.abs_diff(ms(770).0) < 4, "{:?}", r.rto());
        let mut r = est();
        for k in 0..200 {
            r.on_sample(ms(10), k * 10, k * 10 + 10);
        }
        assert!(r.rto().0.abs_diff(ms(210).0) < 4, "{:?}", r.rto());
    }

    #[test]
    fn falling_rtt_barely_moves_the_deviation() {
        // Linux weighs the error of a sample below srtt by 1/32, one above by 1/4.
        let mut down = est();
        down.on_sample(ms(100), 0, 10);
        down.on_sample(ms(20), 0, 10);
        let mut up = est();
        up.on_sample(ms(100), 0, 10);
        up.on_sample(ms(180), 0, 10);
        // mdev 50 ms; |err| = 80 ms: up 50 + (80 − 50)/4, down 50 + (80 − 50)/32.
        assert_eq!(up.rttvar(), Duration(57_500_000));
        assert_eq!(down.rttvar(), Duration(50_937_500));
    }

    #[test]
    fn expiry_doubles_rto_until_a_new_sample() {
        let mut r = est();
        r.on_sample(ms(100), 0, 10);
        r.on_rto_expired();
        r.on_rto_expired();
        assert_eq!(r.rto(), ms(1200));
        assert_eq!(r.base_rto(), ms(300));
        r.on_sample(ms(100), 0, 10);
        assert!(r.rto() <= ms(300));
    }

    #[test]
    fn backoff_is_capped_at_tcp_rto_max() {
        let mut r = est();
        r.on_sample(ms(1000), 0, 10);
        for _ in 0..10 {
            r.on_rto_expired();
        }
        assert_eq!(r.rto(), Duration::from_secs(120));
    }

    #[test]
    fn no_sample_means_one_second() {
        assert_eq!(est().rto(), Duration::from_secs(1));
    }
}
