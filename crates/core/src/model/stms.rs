//! Shi et al., USENIX ATC 2018 (STMS): the host-buffer requirement of a two-path connection and
//! the "true gap" of the slide-together scheduler.
//!
//! Units: bandwidths in bytes per second, delays in seconds, results in bytes. `b_f`/`b_s` are
//! the fast and slow path bandwidths, `owd_f`/`owd_s` their one-way delays, `rtt_s` the slow
//! path's round-trip time.

/// §3.1 Eq. 2: the number of bytes pre-allocated to the fast path so that the first packet the
/// slow path sends arrives together with the last of them: `B_f × (OWD_s − OWD_f)` (0 when the
/// "slow" path is not slower).
pub fn true_gap(b_f: f64, owd_f: f64, owd_s: f64) -> f64 {
    (b_f * (owd_s - owd_f)).max(0.0)
}

/// §2.3 Eq. 1 (after Raiciu et al., NSDI 2012): the host buffer the default (MinRTT) scheduler
/// needs to keep both paths busy, `(B_f + B_s) × RTT_s`.
pub fn buffer_default(b_f: f64, b_s: f64, rtt_s: f64) -> f64 {
    (b_f + b_s) * rtt_s
}

/// §3.2 Eq. 3: the host buffer STMS needs, `(B_f + B_s) × (OWD_s + OWD_f)`: the fast path's
/// unacknowledged data `B_f × RTT_f`, the slow path's `B_s × (OWD_s + OWD_f)` (its data-ACK
/// returns on the fast path) and the gap of Eq. 2.
pub fn buffer_stms(b_f: f64, b_s: f64, owd_f: f64, owd_s: f64) -> f64 {
    (b_f + b_s) * (owd_s + owd_f)
}

/// §3.2 Eq. 4: the smallest host buffer with which STMS still uses the slow path without
/// blocking the fast one, `RTT_f × B_f + Gap = B_f × (OWD_s + OWD_f)`. Below it STMS is
/// single-path TCP over the fast path.
pub fn buffer_fallback(b_f: f64, owd_f: f64, owd_s: f64) -> f64 {
    b_f * (owd_s + owd_f)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MBIT: f64 = 1e6 / 8.0;

    #[test]
    fn true_gap_is_one_fast_window_when_slow_rtt_is_three_fast_rtts() {
        // Fig. 9: RTT_s = 3 RTT_f with symmetric delays gives gap = CWND_f = B_f × RTT_f.
        let (b_f, rtt_f) = (30.0 * MBIT, 0.020);
        let gap = true_gap(b_f, rtt_f / 2.0, 3.0 * rtt_f / 2.0);
        assert!((gap - b_f * rtt_f).abs() < 1e-6, "{gap}");
    }

    #[test]
    fn true_gap_is_zero_when_slow_path_is_not_slower() {
        assert_eq!(true_gap(1e6, 0.05, 0.01), 0.0);
    }

    #[test]
    fn stms_buffer_is_default_buffer_with_slow_rtt_replaced_by_owd_sum() {
        let (b_f, b_s) = (30.0 * MBIT, 30.0 * MBIT);
        // Symmetric paths, RTT 20 ms and 200 ms: Eq. 1 uses 200 ms, Eq. 3 uses 110 ms.
        let d = buffer_default(b_f, b_s, 0.200);
        let s = buffer_stms(b_f, b_s, 0.010, 0.100);
        assert!((d - 60.0 * MBIT * 0.2).abs() < 1e-6);
        assert!((s - 60.0 * MBIT * 0.11).abs() < 1e-6);
        assert!(s < d);
    }

    #[test]
    fn eq3_is_sum_of_its_three_parts() {
        let (b_f, b_s, owd_f, owd_s) = (4e6, 1e6, 0.01, 0.07);
        let parts = b_f * 2.0 * owd_f + b_s * (owd_s + owd_f) + true_gap(b_f, owd_f, owd_s);
        assert!((buffer_stms(b_f, b_s, owd_f, owd_s) - parts).abs() < 1e-6);
    }

    #[test]
    fn fallback_is_fast_window_plus_gap() {
        let (b_f, owd_f, owd_s) = (4e6, 0.01, 0.07);
        let want = b_f * 2.0 * owd_f + true_gap(b_f, owd_f, owd_s);
        assert!((buffer_fallback(b_f, owd_f, owd_s) - want).abs() < 1e-6);
        assert!(buffer_fallback(b_f, owd_f, owd_s) < buffer_stms(b_f, 1e6, owd_f, owd_s));
    }
}
