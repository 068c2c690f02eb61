//! HyStart++, RFC 9406 (Balasubramanian, Huang, Olson, 2023): slow start that watches the
//! per-round minimum RTT and, once it has grown, continues with a slower Conservative Slow Start
//! (CSS) before settling into congestion avoidance.
//!
//! Implemented:
//! * §4.2 rounds: windowEnd is SND.NXT when a round begins, and the round ends on the ACK that
//!   acknowledges windowEnd. The controller sees `delivered` rather than SND.UNA; every byte is
//!   counted once however often it is sent, so `delivered` lives in the same space as sequence
//!   numbers and `delivered >= windowEnd` is the test.
//! * §4.2 per ACK: the cwnd increase min(N, L*SMSS), divided by CSS_GROWTH_DIVISOR in CSS
//!   ([`HyStart::window_increase`]); then currentRoundMinRTT and rttSampleCount from this ACK's
//!   RTT sample; then, with at least N_RTT_SAMPLE samples in the round, the delay-increase test
//!   (slow start to CSS, cssBaselineMinRtt = currentRoundMinRTT) or the spurious-exit test (CSS
//!   back to slow start when currentRoundMinRTT < cssBaselineMinRtt); a partial round at the
//!   entry into CSS counts towards CSS_ROUNDS, and after CSS_ROUNDS rounds the controller sets
//!   ssthresh = cwnd ([`HyStart::on_ack`] returns true).
//! * §4.3 constants, with L = 8 because the subflow does not pace.
//! * §4.3: HyStart++ only in the initial slow start. The controller gates it on ssthresh still
//!   having its initial, arbitrarily high value, so any loss, RTO or penalty (each sets a finite
//!   ssthresh) ends it for good and later slow starts are RFC 5681's, bounded by the ssthresh
//!   they found. That is also the §4.2 rule for loss during slow start or CSS: the controller's
//!   usual reaction, which ends slow start.
//!
//! Interpretations where the RFC leaves a choice:
//! * windowEnd is initialized from the first ACK's SND.NXT (the controller sees nothing
//!   earlier), so the first round is the flight of the initial window.
//! * The ACK that ends a round has its RTT sample, and the tests above, counted in the round it
//!   ends; the next round starts empty.
//! * An ACK without an RTT sample grows cwnd and can end a round, but is not a sample.
//! * An application-limited ACK (the controller's RFC 7661-style test) does not grow cwnd, but its
//!   RTT sample and the round accounting still count.
//! * Not implemented: HyStart++ for the restart window after idle (a §4.3 MAY).

use super::AckSample;
use crate::time::Duration;

/// §4.3: lower bound of RttThresh.
const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
/// §4.3: upper bound of RttThresh.
const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
/// §4.3: RttThresh is lastRoundMinRTT / MIN_RTT_DIVISOR, clamped.
const MIN_RTT_DIVISOR: u64 = 8;
/// §4.3: RTT samples a round needs before its minimum is trusted.
const N_RTT_SAMPLE: u32 = 8;
/// §4.3: CSS grows cwnd this many times slower than slow start.
const CSS_GROWTH_DIVISOR: u64 = 4;
/// §4.3: rounds of CSS before congestion avoidance.
const CSS_ROUNDS: u32 = 5;
/// §4.3: L, the cap on segments one ACK may add, for a sender that does not pace (a paced one
/// uses infinity). RFC 9406 replaces RFC 3465's L = 2 while it runs.
const NON_PACED_L: u64 = 8;

/// §4.2: RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT / MIN_RTT_DIVISOR, MAX_RTT_THRESH)).
fn rtt_thresh(last_round_min_rtt: Duration) -> Duration {
    Duration(last_round_min_rtt.as_nanos() / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH)
}

/// The HyStart++ state of one subflow's initial slow start. `None` stands for the RFC's infinity.
#[derive(Clone, Debug, Default)]
pub(crate) struct HyStart {
    /// windowEnd: the round ends when `delivered` reaches it. `None` before the first ACK.
    window_end: Option<u64>,
    last_round_min_rtt: Option<Duration>,
    current_round_min_rtt: Option<Duration>,
    rtt_sample_count: u32,
    /// cssBaselineMinRtt; `Some` exactly while in CSS.
    css_baseline_min_rtt: Option<Duration>,
    /// Rounds of CSS ended so far, the partial round CSS began in included.
    css_rounds: u32,
}

impl HyStart {
    pub(crate) fn in_css(&self) -> bool {
        self.css_baseline_min_rtt.is_some()
    }

    /// §4.2: the bytes an ACK of `acked` bytes adds to cwnd, min(N, L*SMSS) in slow start and a
    /// CSS_GROWTH_DIVISOR-th of it in CSS. The caller applies it before [`HyStart::on_ack`].
    pub(crate) fn window_increase(&self, acked: u64, mss: u64) -> f64 {
        let increase = acked.min(NON_PACED_L * mss) as f64;
        if self.in_css() {
            increase / CSS_GROWTH_DIVISOR as f64
        } else {
            increase
        }
    }

    /// §4.2 bookkeeping for one ACK in slow start or CSS, after the window was updated. Returns
    /// true when CSS has lasted CSS_ROUNDS rounds: the caller then sets ssthresh = cwnd.
    pub(crate) fn on_ack(&mut self, ack: &AckSample) -> bool {
        let window_end = *self.window_end.get_or_insert(ack.snd_nxt);

        if let Some(rtt) = ack.rtt {
            self.current_round_min_rtt =
                Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.rtt_sample_count += 1;
        }

        if self.rtt_sample_count >= N_RTT_SAMPLE {
            // At least N_RTT_SAMPLE samples, so currentRoundMinRTT is finite.
            let current = self.current_round_min_rtt;
            match self.css_baseline_min_rtt {
                // CSS: the RTT fell below the baseline, so the exit was spurious.
                Some(baseline) => {
                    if current.is_some_and(|c| c < baseline) {
                        self.css_baseline_min_rtt = None;
                    }
                }
                // Slow start: delay increase, so enter CSS.
                None => {
                    if let (Some(current), Some(last)) = (current, self.last_round_min_rtt) {
                        if current >= last + rtt_thresh(last) {
                            self.css_baseline_min_rtt = Some(current);
                            self.css_rounds = 0;
                        }
                    }
                }
            }
        }

        if ack.delivered < window_end {
            return false;
        }
        // The round is over.
        if self.in_css() {
            self.css_rounds += 1;
            if self.css_rounds >= CSS_ROUNDS {
                return true;
            }
        }
        self.window_end = Some(ack.snd_nxt);
        self.last_round_min_rtt = self.current_round_min_rtt;
        self.current_round_min_rtt = None;
        self.rtt_sample_count = 0;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtt_thresh_is_an_eighth_clamped_to_4_and_16_ms() {
        assert_eq!(
            rtt_thresh(Duration::from_millis(50)),
            Duration::from_micros(6250)
        );
        assert_eq!(
            rtt_thresh(Duration::from_millis(20)),
            Duration::from_millis(4)
        );
        assert_eq!(
            rtt_thresh(Duration::from_millis(200)),
            Duration::from_millis(16)
        );
    }

    #[test]
    fn css_increase_is_capped_at_l_segments_then_divided() {
        let mut hs = HyStart::default();
        assert_eq!(hs.window_increase(1000, 1000), 1000.0);
        assert_eq!(hs.window_increase(20_000, 1000), 8000.0);
        hs.css_baseline_min_rtt = Some(Duration::from_millis(60));
        assert_eq!(hs.window_increase(1000, 1000), 250.0);
        assert_eq!(hs.window_increase(20_000, 1000), 2000.0);
    }
}
