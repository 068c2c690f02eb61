//! RTT estimation and the retransmission timeout, RFC 6298 (with RFC 7323 timestamps giving a
//! sample for every ACK that acknowledges new data, retransmissions included: the echoed TSval
//! identifies the transmission, so Karn's ambiguity does not arise).

use crate::time::Duration;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    min_rtt: Option<Duration>,
    latest: Option<Duration>,
    min_rto: Duration,
    /// Number of consecutive RTO expiries (RFC 6298 §5.5 backoff).
    backoff: u32,
}

/// RFC 6298 §2.1: before any sample, RTO = 1 s.
const INITIAL_RTO: Duration = Duration::from_secs(1);
/// RFC 6298 §2.5 allows an upper bound of at least 60 s.
const MAX_RTO: Duration = Duration::from_secs(60);

impl RttEstimator {
    pub fn new(min_rto: Duration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            min_rtt: None,
            latest: None,
            min_rto,
            backoff: 0,
        }
    }

    /// RFC 6298 §2.2-2.3 with alpha = 1/8, beta = 1/4.
    pub fn on_sample(&mut self, r: Duration) {
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = Duration(r.0 / 2);
            }
            Some(s) => {
                let diff = s.0.abs_diff(r.0);
                self.rttvar = Duration((3 * self.rttvar.0 + diff) / 4);
                self.srtt = Some(Duration((7 * s.0 + r.0) / 8));
            }
        }
        // A valid sample after backoff: RFC 6298 §5.7 allows collapsing the backoff once a new
        // RTT sample is available (the path answers again).
        self.backoff = 0;
    }

    /// RTO = max(min_rto, SRTT + max(G, 4*RTTVAR)) backed off by 2^backoff, capped at 60 s.
    /// The clock granularity G is taken as 1 ms (Linux's jiffy-based timer is coarser still).
    pub fn rto(&self) -> Duration {
        let base = match self.srtt {
            None => INITIAL_RTO,
            Some(s) => s + Duration(self.rttvar.0.saturating_mul(4).max(1_000_000)),
        };
        let base = base.max(self.min_rto);
        Duration(base.0.saturating_mul(1u64 << self.backoff.min(16))).min(MAX_RTO)
    }

    pub fn on_rto_expired(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    pub fn rttvar(&self) -> Duration {
        self.rttvar
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

    #[test]
    fn first_sample_sets_srtt_and_half_rttvar() {
        let mut r = RttEstimator::new(Duration::from_millis(200));
        r.on_sample(Duration::from_millis(100));
        assert_eq!(r.srtt(), Some(Duration::from_millis(100)));
        assert_eq!(r.rttvar(), Duration::from_millis(50));
        // 100 + 4*50 = 300 ms
        assert_eq!(r.rto(), Duration::from_millis(300));
    }

    #[test]
    fn rto_is_floored_at_min_rto() {
        let mut r = RttEstimator::new(Duration::from_millis(200));
        for _ in 0..50 {
            r.on_sample(Duration::from_millis(10));
        }
        assert_eq!(r.rto(), Duration::from_millis(200));
    }

    #[test]
    fn expiry_doubles_rto_until_a_new_sample() {
        let mut r = RttEstimator::new(Duration::from_millis(200));
        r.on_sample(Duration::from_millis(100));
        r.on_rto_expired();
        r.on_rto_expired();
        assert_eq!(r.rto(), Duration::from_millis(1200));
        r.on_sample(Duration::from_millis(100));
        assert!(r.rto() < Duration::from_millis(400));
    }

    #[test]
    fn no_sample_means_one_second() {
        let r = RttEstimator::new(Duration::from_millis(200));
        assert_eq!(r.rto(), Duration::from_secs(1));
    }
}
