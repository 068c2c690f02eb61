//! Linux's classic HyStart for CUBIC (Ha and Rhee, "Taming the elephants: new TCP slow start",
//! Computer Networks 2011), as net/ipv4/tcp_cubic.c runs it by default (`hystart = 1`,
//! `hystart_detect = 3`): `cubictcp_acked` → `hystart_update`. Slow start ends
//! (ssthresh = cwnd) at the first of
//!
//! * **ACK train**: ACKs of one round keep arriving no more than `hystart_ack_delta_us` = 2 ms
//!   apart, and the train has lasted more than half the minimum delay (plus the ACK-delay
//!   cushion `hystart_ack_delay`; the whole of it when the sender paces, as then the round is
//!   spread over the RTT anyway);
//! * **delay increase**: after `HYSTART_MIN_SAMPLES` = 8 RTT samples in a round, the round's
//!   minimum RTT exceeds `delay_min + clamp(delay_min / 8, 4 ms, 16 ms)`.
//!
//! Neither is checked below `hystart_low_window` = 16 segments. A round starts when SND.UNA
//! passes the SND.NXT of the previous round's start (`bictcp_hystart_reset`); the controller
//! sees `delivered`, which counts every byte once like sequence numbers do. Delay samples in
//! the first second of a congestion-avoidance epoch are discarded (after recovery), and an RTO
//! resets everything (`cubictcp_state` → `bictcp_reset`), so HyStart runs again in the slow
//! start that follows.

use super::AckSample;
use crate::time::{Duration, Time};

/// `hystart_low_window`, segments.
const LOW_WINDOW: u64 = 16;
/// `hystart_ack_delta_us`.
const ACK_DELTA: Duration = Duration::from_millis(2);
/// `HYSTART_MIN_SAMPLES`.
const MIN_SAMPLES: u32 = 8;
/// `HYSTART_DELAY_MIN`, `HYSTART_DELAY_MAX`.
const DELAY_MIN: Duration = Duration::from_millis(4);
const DELAY_MAX: Duration = Duration::from_millis(16);
/// `sk_gso_max_size` of a Linux device (64 KiB), for `hystart_ack_delay`.
const GSO_MAX_SIZE: f64 = 65_536.0;

/// `HYSTART_DELAY_THRESH(delay_min >> 3)`.
fn delay_thresh(delay_min: Duration) -> Duration {
    Duration(delay_min.as_nanos() / 8).clamp(DELAY_MIN, DELAY_MAX)
}

/// `hystart_ack_delay`: min(1 ms, 4 GSO packets at the pacing rate), `rate` in bytes/s.
fn ack_delay(rate_bytes_per_s: f64) -> Duration {
    if rate_bytes_per_s <= 0.0 || !rate_bytes_per_s.is_finite() {
        return Duration::ZERO;
    }
    Duration::from_secs_f64(GSO_MAX_SIZE * 4.0 / rate_bytes_per_s).min(Duration::from_millis(1))
}

#[derive(Clone, Debug, Default)]
pub(crate) struct LinuxHyStart {
    /// Slow start was ended by HyStart (`ca->found`); no more detection until an RTO.
    found: bool,
    round_start: Time,
    last_ack: Time,
    /// The round ends once delivery passes it; `None` before the first ACK.
    end_seq: Option<u64>,
    curr_rtt: Option<Duration>,
    sample_cnt: u32,
    /// `ca->delay_min`: the smallest RTT sample seen.
    delay_min: Option<Duration>,
}

/// What `hystart_update` needs besides the ACK.
pub(crate) struct HyStartInput {
    pub now: Time,
    pub cwnd_segments: u64,
    /// Linux's pacing rate for the ACK-delay cushion, bytes/s (0 when unknown).
    pub pacing_rate: f64,
    /// The sender paces (`sk_pacing_status != SK_PACING_NONE`).
    pub paced: bool,
    /// Start of the current congestion-avoidance epoch, if any.
    pub epoch_start: Option<Time>,
}

impl HyStartInput {
    /// The input for a slow-start ACK of a window of `cwnd` bytes: Linux's pacing rate in slow
    /// start is `tcp_update_pacing_rate`'s 2 · cwnd / srtt (0 before an RTT sample).
    pub(crate) fn in_slow_start(
        now: Time,
        cwnd: f64,
        mss: u64,
        srtt: Option<Duration>,
        paced: bool,
        epoch_start: Option<Time>,
    ) -> HyStartInput {
        HyStartInput {
            now,
            cwnd_segments: cwnd as u64 / mss,
            pacing_rate: srtt.map_or(0.0, |s| 2.0 * cwnd / s.as_secs_f64().max(1e-9)),
            paced,
            epoch_start,
        }
    }
}

impl LinuxHyStart {
    pub(crate) fn found(&self) -> bool {
        self.found
    }

    /// `bictcp_reset` on entering the Loss state.
    pub(crate) fn reset(&mut self) {
        *self = LinuxHyStart::default();
    }

    fn reset_round(&mut self, now: Time, snd_nxt: u64) {
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = Some(snd_nxt);
        self.curr_rtt = None;
        self.sample_cnt = 0;
    }

    /// `cubictcp_acked` for one ACK in slow start, before the window grows. Returns true when
    /// slow start must end now (the caller sets ssthresh = cwnd).
    pub(crate) fn on_ack(&mut self, ack: &AckSample, input: &HyStartInput) -> bool {
        let Some(delay) = ack.rtt else { return false };
        // Discard delay samples right after fast recovery.
        if input
            .epoch_start
            .is_some_and(|e| input.now.saturating_since(e) < Duration::from_secs(1))
        {
            return false;
        }
        let delay = delay.max(Duration(1_000));
        let delay_min = *self
            .delay_min
            .insert(self.delay_min.map_or(delay, |m| m.min(delay)));
        if self.found {
            return false;
        }
        // hystart_update.
        if self.end_seq.is_none_or(|e| ack.delivered > e) {
            self.reset_round(input.now, ack.snd_nxt);
        }
        if input.cwnd_segments < LOW_WINDOW {
            return false;
        }
        // ACK train.
        if input.now.saturating_since(self.last_ack) <= ACK_DELTA {
            self.last_ack = input.now;
            let mut threshold = delay_min + ack_delay(input.pacing_rate);
            if !input.paced {
                threshold = Duration(threshold.as_nanos() / 2);
            }
            if input.now.saturating_since(self.round_start) > threshold {
                self.found = true;
                return true;
            }
        }
        // Delay increase: the minimum of the round's samples, from the ninth sample on.
        let curr = *self
            .curr_rtt
            .insert(self.curr_rtt.map_or(delay, |c| c.min(delay)));
        if self.sample_cnt < MIN_SAMPLES {
            self.sample_cnt += 1;
        } else if curr > delay_min + delay_thresh(delay_min) {
            self.found = true;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ms(v: u64) -> Time {
        Time(Duration::from_millis(v).as_nanos())
    }

    fn ack(rtt_ms: f64, delivered: u64, snd_nxt: u64) -> AckSample {
        AckSample {
            acked_bytes: MSS,
            prior_in_flight: 0,
            cwnd_limited: false,
            srtt: None,
            min_rtt: None,
            rtt: Some(Duration::from_secs_f64(rtt_ms / 1e3)),
            delivered,
            snd_nxt,
        }
    }

    fn input(now: Time, cwnd: u64) -> HyStartInput {
        HyStartInput {
            now,
            cwnd_segments: cwnd,
            pacing_rate: 0.0,
            paced: false,
            epoch_start: None,
        }
    }

    #[test]
    fn delay_threshold_is_an_eighth_clamped_to_4_and_16_ms() {
        // HYSTART_DELAY_THRESH(delay_min >> 3).
        assert_eq!(delay_thresh(Duration::from_millis(50)), Duration(6_250_000));
        assert_eq!(
            delay_thresh(Duration::from_millis(20)),
            Duration::from_millis(4)
        );
        assert_eq!(
            delay_thresh(Duration::from_millis(500)),
            Duration::from_millis(16)
        );
    }

    #[test]
    fn ack_delay_is_four_gso_packets_capped_at_one_ms() {
        assert_eq!(ack_delay(0.0), Duration::ZERO);
        // 1.25 GB/s: 262,144 B take 209.7 us.
        assert_eq!(ack_delay(1.25e9), Duration(209_715));
        assert_eq!(ack_delay(1e6), Duration::from_millis(1));
    }

    #[test]
    fn ack_train_longer_than_half_delay_min_ends_slow_start() {
        // ACKs 1 ms apart (a 12 Mbit/s bottleneck), delay_min 40 ms: the train passes 20 ms
        // at the 21st ACK after the round started.
        let mut hs = LinuxHyStart::default();
        let mut found_at = None;
        for k in 0..40u64 {
            let d = k * MSS;
            if hs.on_ack(&ack(40.0, d + MSS, 100 * MSS), &input(ms(100 + k), 32)) {
                found_at = Some(k);
                break;
            }
        }
        assert_eq!(found_at, Some(21));
        assert!(hs.found());
    }

    #[test]
    fn no_detection_below_the_low_window() {
        let mut hs = LinuxHyStart::default();
        for k in 0..40u64 {
            assert!(!hs.on_ack(
                &ack(40.0, (k + 1) * MSS, 100 * MSS),
                &input(ms(100 + k), 15)
            ));
        }
    }

    #[test]
    fn spaced_acks_do_not_form_a_train_but_delay_growth_ends_slow_start() {
        // ACKs 5 ms apart: never a train. Round 1 at 40 ms, round 2's samples at 47 ms: above
        // 40 + max(4, 40/8 = 5) ms after the eighth sample of the round.
        let mut hs = LinuxHyStart::default();
        let mut t = 0;
        for k in 0..10u64 {
            t += 5;
            assert!(!hs.on_ack(&ack(40.0, (k + 1) * MSS, 10 * MSS), &input(ms(t), 20)));
        }
        let mut found_at = None;
        for k in 0..10u64 {
            t += 5;
            if hs.on_ack(&ack(47.0, (11 + k) * MSS, 30 * MSS), &input(ms(t), 20)) {
                found_at = Some(k);
                break;
            }
        }
        // The round's first ACK resets it; samples 1-8 are collected; the ninth tests.
        assert_eq!(found_at, Some(8));
    }

    #[test]
    fn a_delay_below_the_threshold_does_not_end_slow_start() {
        let mut hs = LinuxHyStart::default();
        let mut t = 0;
        for k in 0..40u64 {
            t += 5;
            assert!(!hs.on_ack(&ack(44.0, (k + 1) * MSS, 10 * MSS), &input(ms(t), 20)));
        }
    }
}
