//! `blest`: BLocking ESTimation (Ferlin et al., IFIP Networking 2016; Cech, TUM 2020, §3.4,
//! Algorithm 1).
//!
//! MinRTT decides first (with its opportunistic retransmission and penalization, as the
//! published implementation, Linux MPTCP v0.95 `mptcp_blest.c`, keeps them). When MinRTT picks
//! a subflow `x_s` slower than the fastest one `x_f`, BLEST estimates how much the fast subflow
//! would send while the segment lingers on the slow one, and withholds the segment if that
//! would not fit in the connection-level send window:
//!
//! ```text
//! rtts = RTT_s / RTT_f
//! X    = MSS_f · (CWND_f + (rtts − 1)/2) · rtts        (fast-subflow bytes during RTT_s)
//! Y    = |MPTCP send window| − MSS_s · (inflight_s + 1)
//! if X · λ > Y: send nothing now (wait for x_f)
//! ```
//!
//! Cech's rendition of Algorithm 1 returns `x_s` in the `X·λ > Y` branch; both the BLEST paper
//! and `mptcp_blest.c` (which returns NULL when `fast_bytes > avail_space`) withhold there, and
//! so do we. `CWND_f` and `inflight_s` count segments; the send window is the peer's advertised
//! connection-level window (Linux `meta_tp->snd_wnd`).
//!
//! λ is adapted at run time as `mptcp_blest.c` does (the paper leaves the constants open):
//! λ starts at 1.2 and stays within [1.0, 1.3]; at most once per minimum sRTT of the slow
//! subflow it grows by 0.04 if MinRTT had to reinject since the last update (a sign that the
//! slow subflow blocked the window) and shrinks by 0.01 otherwise (use the slow subflow more).

use crate::packet::PathId;
use crate::sched::common::fastest_and_where;
use crate::sched::minrtt::MinRtt;
use crate::sched::{Assignment, SchedCtx, Scheduler};
use crate::time::Time;

/// `mptcp_blest.c` module parameters, in thousandths: lambda = 12, min_lambda = 10,
/// max_lambda = 13 (tenths), dyn_lambda_good = 10, dyn_lambda_bad = 40 (thousandths).
const LAMBDA_INIT: i32 = 1200;
const LAMBDA_MIN: i32 = 1000;
const LAMBDA_MAX: i32 = 1300;
const LAMBDA_GOOD: i32 = 10;
const LAMBDA_BAD: i32 = 40;

#[derive(Debug)]
pub struct Blest {
    minrtt: MinRtt,
    /// λ · 1000.
    lambda_milli: i32,
    last_update: Option<Time>,
    /// A reinjection happened since the last λ update.
    retransmitted: bool,
    /// Per subflow, the smallest sRTT seen (Linux `min_srtt_us`), the λ update period, in
    /// nanoseconds; `u64::MAX` before the first sample. Plain integers, not `Option<Duration>`s,
    /// because every decision folds in every subflow's sRTT (issue "Speed at scale": the
    /// optional minimum was about a third of a decision at 8 paths). No sRTT reaches `u64::MAX`
    /// nanoseconds (585 years), so the folded minimum is the same.
    min_srtt: Vec<u64>,
}

impl Blest {
    pub fn new(npaths: usize) -> Self {
        Blest {
            minrtt: MinRtt::new(true),
            lambda_milli: LAMBDA_INIT,
            last_update: None,
            retransmitted: false,
            min_srtt: vec![u64::MAX; npaths],
        }
    }

    /// The current λ (for tests and traces).
    pub fn lambda(&self) -> f64 {
        self.lambda_milli as f64 / 1000.0
    }

    /// MinRTT reinjected the data-level left edge: the next λ update grows λ.
    fn on_reinjection(&mut self) {
        self.retransmitted = true;
    }

    fn update_lambda(&mut self, now: Time, slow: PathId) {
        let period = match self.min_srtt[slow as usize] {
            u64::MAX => 0,
            m => m,
        };
        if let Some(t) = self.last_update {
            if now.0.saturating_sub(t.0) < period {
                return;
            }
        }
        self.lambda_milli += if self.retransmitted {
            LAMBDA_BAD
        } else {
            -LAMBDA_GOOD
        };
        self.lambda_milli = self.lambda_milli.clamp(LAMBDA_MIN, LAMBDA_MAX);
        self.retransmitted = false;
        self.last_update = Some(now);
    }

    /// Algorithm 1, lines 4-7: true when sending on `slow` now would leave the fast subflow
    /// without send-window space once it can send again.
    fn would_block(&self, ctx: &SchedCtx<'_>, fast: PathId, slow: PathId) -> bool {
        // Read directly, not through the view's dynamic calls (issue "Speed at scale": about a
        // hundred instructions per slow-subflow decision at 8 paths).
        let (srtt_f, mss_f, cwnd_f) = ctx.read_subflow(fast, |f| (f.srtt(), f.mss(), f.cwnd()));
        let (srtt_s, mss_s, in_flight_s) =
            ctx.read_subflow(slow, |s| (s.srtt(), s.mss(), s.segments_in_flight()));
        let (Some(rtt_f), Some(rtt_s)) = (srtt_f, srtt_s) else {
            return false;
        };
        let rtts = rtt_s.as_secs_f64() / rtt_f.as_secs_f64().max(1e-9);
        let mss_f = mss_f as f64;
        let cwnd_f = cwnd_f as f64 / mss_f;
        let x = mss_f * (cwnd_f + (rtts - 1.0) / 2.0) * rtts;
        let y = ctx.meta().peer_rwnd() as f64 - mss_s as f64 * (in_flight_s as f64 + 1.0);
        x * self.lambda() > y
    }
}

impl Scheduler for Blest {
    fn name(&self) -> &'static str {
        "blest"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        for (p, m) in self.min_srtt.iter_mut().enumerate().take(ctx.npaths()) {
            *m = (*m).min(ctx.srtt_of(p as PathId).map_or(u64::MAX, |r| r.0));
        }
        // MinRTT's choice and the fastest subflow from one pass over the subflows.
        let (fast, best) = fastest_and_where(ctx, |p| ctx.has_space(p))?;
        let a = self.minrtt.next_on(ctx, best?)?;
        let rec = ctx.meta().seg(a.seg)?;
        if rec.sent() {
            // MinRTT's opportunistic retransmission: the slow subflow blocked the window.
            self.on_reinjection();
            return Some(a);
        }
        if a.path == fast {
            return Some(a);
        }
        self.update_lambda(ctx.now, a.path);
        if self.would_block(ctx, fast, a.path) {
            None
        } else {
            Some(a)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::minrtt::exchange::Exchange;
    use crate::sender::TxKind::New;

    /// p0 (100 ms) and p1 (10 ms) both sampled and idle at t = 100 ms, as in the MinRTT tests;
    /// the peer's window is `rwnd_segs` segments.
    fn warmed(sched: &str, rwnd_segs: u64) -> Exchange {
        let mut ex = Exchange::new(sched, 2, 4, rwnd_segs);
        ex.at(0).write(6);
        ex.send();
        ex.at(10).ack(1, 0, rwnd_segs);
        ex.at(100).ack(0, 6, rwnd_segs);
        ex
    }

    #[test]
    fn fast_full_small_window_slow_subflow_withheld() {
        // Window of 30 segments: X = 1000·(cwnd_f + 4.5)·10 is far beyond what is left.
        let mut ex = warmed("blest", 30);
        let w1 = ex.cwnd_segs(1);
        ex.write(40);
        let sent = ex.send();
        assert!(
            sent.iter().all(|s| s.0 == 1 && s.2 == New),
            "only the fast subflow sends: {sent:?}"
        );
        assert_eq!(sent.len() as u64, w1);
    }

    #[test]
    fn fast_full_large_window_slow_subflow_used() {
        // A window of 10,000 segments holds everything the fast subflow could send meanwhile.
        let mut ex = warmed("blest", 10_000);
        let (w0, w1) = (ex.cwnd_segs(0), ex.cwnd_segs(1));
        ex.write(w0 + w1 + 5);
        let sent = ex.send();
        assert_eq!(sent.iter().filter(|s| s.0 == 1).count() as u64, w1);
        assert_eq!(sent.iter().filter(|s| s.0 == 0).count() as u64, w0);
    }

    #[test]
    fn minrtt_same_small_window_uses_slow_subflow() {
        // The contrast: MinRTT fills the slow subflow under the same window.
        let mut ex = warmed("minrtt", 30);
        ex.write(40);
        assert!(ex.send().iter().any(|s| s.0 == 0));
    }

    #[test]
    fn lambda_decays_without_retransmissions_and_stays_in_range() {
        let mut b = super::Blest::new(2);
        for i in 0..100 {
            b.update_lambda(crate::time::Time(i * 1_000_000_000), 0);
        }
        assert_eq!(b.lambda(), 1.0);
        b.on_reinjection();
        b.update_lambda(crate::time::Time(200_000_000_000), 0);
        assert!((b.lambda() - 1.04).abs() < 1e-9);
    }
}
