//! `ecf`: Earliest Completion First (Lim et al., CoNEXT 2017, Algorithm 1; Cech, TUM 2020,
//! §3.5, Algorithm 2).
//!
//! MinRTT decides first (with its opportunistic retransmission and penalization: the published
//! implementation, Linux MPTCP v0.95 `mptcp_ecf.c`, uses the default `mptcp_next_segment`).
//! When it picks a subflow `x_s` slower than the fastest one `x_f` (which has no window space),
//! ECF asks whether waiting for `x_f` finishes the `k` bytes still to send sooner than using
//! `x_s` now:
//!
//! ```text
//! n = 1 + k / CWND_f                 k = unsent bytes of the connection (at least one CWND_f)
//! δ = max(σ_f, σ_s)                  σ = RTT variation (RFC 6298 RTTVAR)
//! if n · RTT_f < (1 + waiting · β) · (RTT_s + δ):
//!     if (k / CWND_s) · RTT_s ≥ 2 · RTT_f + δ:   waiting = 1; send nothing now
//!     else:                                      send on x_s
//! else: waiting = 0; send on x_s
//! ```
//!
//! Constants the paper leaves to the implementation, from `mptcp_ecf.c`: β = 1/4
//! (`mptcp_ecf_r_beta = 4`); `k` is at least one congestion window of the subflow it is divided
//! by (`x_f = max(sndbuf, cwnd_f·mss)`, likewise for `x_s`), since at least one transmission
//! round is needed whatever is queued. `waiting` is the hysteresis: once ECF waited for the fast
//! subflow, the slow one must look better by the factor 1 + β before it is used again.
//! Linux's σ is `rttvar_us >> 1`, i.e. twice the mean deviation; we use RTTVAR as the paper says.

use crate::sched::common::fastest_and_where;
use crate::sched::minrtt::MinRtt;
use crate::sched::{Assignment, SchedCtx, Scheduler};

/// β = 1 / `mptcp_ecf_r_beta` (= 4) in `mptcp_ecf.c`.
const BETA: f64 = 0.25;

#[derive(Debug)]
pub struct Ecf {
    minrtt: MinRtt,
    waiting: bool,
}

impl Ecf {
    pub fn new() -> Self {
        Ecf {
            minrtt: MinRtt::new(true),
            waiting: false,
        }
    }
}

impl Default for Ecf {
    fn default() -> Self {
        Self::new()
    }
}

impl Scheduler for Ecf {
    fn name(&self) -> &'static str {
        "ecf"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        // MinRTT's choice and the fastest subflow from one pass over the subflows.
        let (fast, best) = fastest_and_where(ctx, |p| ctx.has_space(p))?;
        let a = self.minrtt.next_on(ctx, best?)?;
        if a.path == fast || ctx.meta().seg(a.seg)?.sent() {
            return Some(a);
        }
        let (f, s) = (ctx.subflow(fast), ctx.subflow(a.path));
        let (Some(rtt_f), Some(rtt_s)) = (f.srtt(), s.srtt()) else {
            return Some(a);
        };
        let (rtt_f, rtt_s) = (rtt_f.as_secs_f64(), rtt_s.as_secs_f64());
        let delta = f.rttvar().as_secs_f64().max(s.rttvar().as_secs_f64());
        let k = ctx.meta().unsent_bytes() as f64;
        let (cwnd_f, cwnd_s) = (f.cwnd().max(1) as f64, s.cwnd().max(1) as f64);
        let n = 1.0 + k.max(cwnd_f) / cwnd_f;
        let beta = if self.waiting { BETA } else { 0.0 };
        if n * rtt_f < (1.0 + beta) * (rtt_s + delta) {
            if k.max(cwnd_s) / cwnd_s * rtt_s >= 2.0 * rtt_f + delta {
                self.waiting = true;
                return None;
            }
            Some(a)
        } else {
            self.waiting = false;
            Some(a)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::minrtt::exchange::Exchange;

    /// p0 (100 ms) and p1 (10 ms) both sampled and idle at t = 100 ms; a large peer window so
    /// that only ECF's own rule can withhold.
    fn warmed(sched: &str) -> Exchange {
        let mut ex = Exchange::new(sched, 2, 4, 100_000);
        ex.at(0).write(6);
        ex.send();
        ex.at(10).ack(1, 0, 100_000);
        ex.at(100).ack(0, 6, 100_000);
        ex
    }

    #[test]
    fn fast_full_little_left_slow_subflow_withheld() {
        // A few segments beyond the fast window: n·RTT_f (≈ 2·10 ms) beats RTT_s (100 ms), and
        // sending them over the slow subflow would take a full 100 ms round.
        let mut ex = warmed("ecf");
        let w1 = ex.cwnd_segs(1);
        ex.write(w1 + 3);
        let sent = ex.send();
        assert!(sent.iter().all(|s| s.0 == 1), "{sent:?}");
        assert_eq!(sent.len() as u64, w1);
    }

    #[test]
    fn fast_full_much_left_slow_subflow_used() {
        // 1,000 segments: waiting for the fast subflow alone takes dozens of its rounds.
        let mut ex = warmed("ecf");
        ex.write(1_000);
        let sent = ex.send();
        assert!(sent.iter().any(|s| s.0 == 0), "{sent:?}");
    }

    #[test]
    fn minrtt_same_little_left_uses_slow_subflow() {
        let mut ex = warmed("minrtt");
        let w1 = ex.cwnd_segs(1);
        ex.write(w1 + 3);
        assert!(ex.send().iter().any(|s| s.0 == 0));
    }
}
