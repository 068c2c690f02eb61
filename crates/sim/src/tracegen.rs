//! Synthetic bandwidth traces in mahimahi format (see [`crate::trace`]).
//!
//! Every generator first builds a [`RatePlan`]: piecewise-constant rates over time. The plan is
//! then turned into delivery opportunities (one per [`OPPORTUNITY_BYTES`]) millisecond by
//! millisecond with a carry, so a trace's long-run rate is the plan's mean rate to within one
//! opportunity per period, however low the rate or short the millisecond.
//!
//! Shapes, after the seed papers' evaluations:
//! - [`constant`]: one rate;
//! - [`steps`]: a rate held for `step_s`, then the next from a set — cycled in order, or drawn
//!   uniformly with a seed (Shi et al., USENIX ATC 2018, §5: {5, 10, 20, 30} Mbit/s, changing every 10 s);
//! - [`random`]: a rate per `interval_s` drawn from a lognormal law with the requested mean and
//!   standard deviation (never negative), rescaled so the drawn rates average exactly the mean;
//! - [`handover`]: a rate divided by a factor for `length_s` every `every_s` (Cech, TUM 2020, §5: every
//!   15 s, 2 s long, rate / 10); a factor of infinity is an outage (no opportunities at all).
//!
//! Any plan can take dips with [`RatePlan::with_dips`], e.g. random variation plus handovers.
//!
//! The period of a mahimahi trace is its last timestamp, so the last millisecond of the plan must
//! hold an opportunity; when it does not (low rate, or an outage at the very end) the last
//! opportunity is moved there. A plan with no opportunity at all still gets one, at its end.
//!
//! Randomness: `rand_pcg::Pcg64` seeded with the given seed; the same arguments give the same
//! trace on every machine.

use std::fmt::Write as _;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::trace::{Trace, OPPORTUNITY_BYTES};

const BITS_PER_OPPORTUNITY: f64 = OPPORTUNITY_BYTES as f64 * 8.0;

/// Why a generator's arguments cannot make a trace; renders as one line naming the argument.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceGenError {
    #[error("{name} must be a positive number of seconds (got {value})")]
    Duration { name: &'static str, value: f64 },
    #[error("{name} must be a non-negative number of bits per second (got {value})")]
    Rate { name: &'static str, value: f64 },
    #[error("{0}")]
    Other(String),
}

/// Piecewise-constant rates: segment `i` runs from `starts_ms[i]` to the next start (or the
/// end), at `rates_bps[i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct RatePlan {
    duration_ms: u64,
    segments: Vec<(u64, f64)>,
}

fn check_duration(name: &'static str, value: f64) -> Result<(), TraceGenError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(TraceGenError::Duration { name, value })
    }
}

fn check_rate(name: &'static str, value: f64) -> Result<(), TraceGenError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(TraceGenError::Rate { name, value })
    }
}

/// Seconds to whole milliseconds, at least 1.
fn to_ms(s: f64) -> u64 {
    ((s * 1e3).round() as u64).max(1)
}

impl RatePlan {
    /// One rate for `duration_s`.
    pub fn constant(rate_bps: f64, duration_s: f64) -> Result<RatePlan, TraceGenError> {
        check_rate("rate", rate_bps)?;
        check_duration("duration", duration_s)?;
        Ok(RatePlan {
            duration_ms: to_ms(duration_s),
            segments: vec![(0, rate_bps)],
        })
    }

    /// Rates held `step_s` each: in the given order, cycling (`seed` None), or each drawn
    /// uniformly from `rates_bps` (`seed` Some).
    pub fn steps(
        rates_bps: &[f64],
        step_s: f64,
        duration_s: f64,
        seed: Option<u64>,
    ) -> Result<RatePlan, TraceGenError> {
        if rates_bps.is_empty() {
            return Err(TraceGenError::Other("steps: no rates given".into()));
        }
        for &r in rates_bps {
            check_rate("rates", r)?;
        }
        check_duration("step", step_s)?;
        check_duration("duration", duration_s)?;
        let mut rng = seed.map(Pcg64::seed_from_u64);
        let rates = (0..).map(|i| match rng.as_mut() {
            Some(rng) => rates_bps[rng.gen_range(0..rates_bps.len())],
            None => rates_bps[i % rates_bps.len()],
        });
        Ok(RatePlan::every(to_ms(step_s), to_ms(duration_s), rates))
    }

    /// A rate per `interval_s` from a lognormal law of mean `mean_bps` and standard deviation
    /// `stddev_bps`, rescaled so the drawn rates average `mean_bps` exactly (a short trace would
    /// otherwise miss the mean by chance). `stddev_bps` 0 gives a constant rate.
    pub fn random(
        mean_bps: f64,
        stddev_bps: f64,
        duration_s: f64,
        interval_s: f64,
        seed: u64,
    ) -> Result<RatePlan, TraceGenError> {
        check_rate("mean", mean_bps)?;
        check_rate("stddev", stddev_bps)?;
        check_duration("interval", interval_s)?;
        check_duration("duration", duration_s)?;
        let step = to_ms(interval_s);
        let total = to_ms(duration_s);
        let n = total.div_ceil(step) as usize;
        if mean_bps == 0.0 || stddev_bps == 0.0 {
            return Ok(RatePlan::every(step, total, std::iter::repeat(mean_bps)));
        }
        // Lognormal with E = m, SD = s: sigma^2 = ln(1 + s^2/m^2), mu = ln m - sigma^2 / 2.
        let sigma2 = (1.0 + (stddev_bps / mean_bps).powi(2)).ln();
        let sigma = sigma2.sqrt();
        let mu = mean_bps.ln() - sigma2 / 2.0;
        let mut rng = Pcg64::seed_from_u64(seed);
        let mut draws: Vec<f64> = (0..n)
            .map(|_| (mu + sigma * standard_normal(&mut rng)).exp())
            .collect();
        // Weight by each interval's length: the last one may be short.
        let weight = |i: usize| {
            let start = i as u64 * step;
            ((start + step).min(total) - start) as f64
        };
        let weighted: f64 = draws.iter().enumerate().map(|(i, r)| r * weight(i)).sum();
        let scale = mean_bps * total as f64 / weighted;
        for r in &mut draws {
            *r *= scale;
        }
        Ok(RatePlan::every(step, total, draws.into_iter()))
    }

    fn every(step_ms: u64, duration_ms: u64, mut rates: impl Iterator<Item = f64>) -> RatePlan {
        let segments = (0..duration_ms)
            .step_by(step_ms as usize)
            .map(|start| (start, rates.next().expect("endless")))
            .collect();
        RatePlan {
            duration_ms,
            segments,
        }
    }

    /// The plan with its rate divided by `factor` during `[k * every_s + offset_s, + length_s)`
    /// for every k (Cech, TUM 2020, §5: handovers every 15 s lasting 2 s at a tenth of the rate).
    /// `factor` infinity makes the dips outages.
    pub fn with_dips(
        &self,
        every_s: f64,
        length_s: f64,
        offset_s: f64,
        factor: f64,
    ) -> Result<RatePlan, TraceGenError> {
        check_duration("every", every_s)?;
        check_duration("length", length_s)?;
        if !(offset_s.is_finite() && offset_s >= 0.0) {
            return Err(TraceGenError::Other(format!(
                "offset must be a non-negative number of seconds (got {offset_s})"
            )));
        }
        if factor.is_nan() || factor < 1.0 {
            return Err(TraceGenError::Other(format!(
                "factor must be at least 1 (got {factor})"
            )));
        }
        if length_s > every_s {
            return Err(TraceGenError::Other(format!(
                "length ({length_s} s) must not exceed every ({every_s} s)"
            )));
        }
        let every = to_ms(every_s);
        let length = to_ms(length_s);
        let offset = (offset_s * 1e3).round() as u64;
        // Cut points: every segment start plus every dip start and end.
        let mut cuts: Vec<u64> = self.segments.iter().map(|&(s, _)| s).collect();
        let mut t = offset;
        while t < self.duration_ms {
            cuts.push(t);
            cuts.push(t + length);
            t += every;
        }
        cuts.retain(|&c| c < self.duration_ms);
        cuts.sort_unstable();
        cuts.dedup();
        let in_dip = |t: u64| t >= offset && (t - offset) % every < length;
        let segments = cuts
            .into_iter()
            .map(|c| {
                let base = self.rate_at(c);
                let rate = if in_dip(c) { base / factor } else { base };
                (c, rate)
            })
            .collect();
        Ok(RatePlan {
            duration_ms: self.duration_ms,
            segments,
        })
    }

    /// Rate in force at millisecond `t`.
    pub fn rate_at(&self, t_ms: u64) -> f64 {
        let i = self.segments.partition_point(|&(s, _)| s <= t_ms);
        self.segments[i.saturating_sub(1)].1
    }

    pub fn duration_ms(&self) -> u64 {
        self.duration_ms
    }

    /// `(start_ms, rate_bps)` of every segment, in order.
    pub fn segments(&self) -> &[(u64, f64)] {
        &self.segments
    }

    /// Time-weighted mean rate.
    pub fn mean_rate_bps(&self) -> f64 {
        let mut sum = 0.0;
        for (i, &(start, rate)) in self.segments.iter().enumerate() {
            let end = self
                .segments
                .get(i + 1)
                .map_or(self.duration_ms, |&(s, _)| s);
            sum += rate * (end - start) as f64;
        }
        sum / self.duration_ms as f64
    }

    /// Opportunity timestamps (ms, 1..=duration): the opportunities of millisecond `t` (the
    /// interval `[t-1, t)`) are stamped `t`. The carry starts at one half, so the count is the
    /// plan's bits rounded to the nearest opportunity.
    pub fn timestamps_ms(&self) -> Vec<u64> {
        let mut out = Vec::new();
        let mut carry = 0.5;
        let mut seg = 0;
        for t in 0..self.duration_ms {
            while seg + 1 < self.segments.len() && self.segments[seg + 1].0 <= t {
                seg += 1;
            }
            carry += self.segments[seg].1 * 1e-3 / BITS_PER_OPPORTUNITY;
            while carry >= 1.0 {
                out.push(t + 1);
                carry -= 1.0;
            }
        }
        // The period is the last timestamp: it must be the plan's end.
        match out.last_mut() {
            Some(last) => *last = self.duration_ms,
            None => out.push(self.duration_ms),
        }
        out
    }

    /// The plan's opportunities as mahimahi text: one timestamp per line.
    pub fn to_mahimahi(&self) -> String {
        mahimahi_text(&self.timestamps_ms())
    }

    /// The plan as a trace named `name`.
    pub fn to_trace(&self, name: &str) -> Trace {
        Trace::parse(name, &self.to_mahimahi())
            .expect("generated timestamps are non-decreasing and end after 0")
    }
}

/// Box–Muller; one normal draw per call (the second is dropped to keep the stream simple).
fn standard_normal(rng: &mut Pcg64) -> f64 {
    let u1: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]: ln is finite
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn mahimahi_text(ms: &[u64]) -> String {
    let mut s = String::with_capacity(ms.len() * 7);
    for t in ms {
        writeln!(s, "{t}").expect("writing to a String");
    }
    s
}

/// A trace's period as mahimahi text: one timestamp per line.
pub fn to_mahimahi(trace: &Trace) -> String {
    mahimahi_text(trace.timestamps_ms())
}

/// Constant `rate_bps` for `duration_s`.
///
/// # Panics
/// On a negative or non-finite rate or a non-positive duration ([`RatePlan::constant`] returns
/// the error instead).
pub fn constant(rate_bps: f64, duration_s: f64) -> Trace {
    RatePlan::constant(rate_bps, duration_s)
        .unwrap_or_else(|e| panic!("tracegen::constant: {e}"))
        .to_trace(&format!("constant-{rate_bps}bps"))
}

/// Rates from `rates_bps` held `step_s` each, in order or (with a seed) drawn uniformly.
///
/// # Panics
/// On bad arguments, like [`constant`].
pub fn steps(rates_bps: &[f64], step_s: f64, duration_s: f64, seed: Option<u64>) -> Trace {
    RatePlan::steps(rates_bps, step_s, duration_s, seed)
        .unwrap_or_else(|e| panic!("tracegen::steps: {e}"))
        .to_trace("steps")
}

/// Random variation: a lognormal rate per `interval_s` with mean `mean_bps` and standard
/// deviation `stddev_bps`, seeded. The trace's mean rate is `mean_bps` to within one
/// opportunity per period.
///
/// # Panics
/// On bad arguments, like [`constant`].
pub fn random(
    mean_bps: f64,
    stddev_bps: f64,
    duration_s: f64,
    interval_s: f64,
    seed: u64,
) -> crate::trace::Trace {
    RatePlan::random(mean_bps, stddev_bps, duration_s, interval_s, seed)
        .unwrap_or_else(|e| panic!("tracegen::random: {e}"))
        .to_trace(&format!("random-{mean_bps}bps-sd{stddev_bps}-seed{seed}"))
}

/// `rate_bps` divided by `factor` for `length_s` every `every_s`, the first dip at `every_s`
/// (Cech, TUM 2020, §5: `handover(r, 15.0, 2.0, 10.0, d)`). `factor` infinity gives outages.
///
/// # Panics
/// On bad arguments, like [`constant`].
pub fn handover(rate_bps: f64, every_s: f64, length_s: f64, factor: f64, duration_s: f64) -> Trace {
    RatePlan::constant(rate_bps, duration_s)
        .and_then(|p| p.with_dips(every_s, length_s, every_s, factor))
        .unwrap_or_else(|e| panic!("tracegen::handover: {e}"))
        .to_trace("handover")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MBIT: f64 = 1e6;

    fn per_second(t: &Trace) -> Vec<f64> {
        let secs = t.period_ms().div_ceil(1000) as usize;
        let mut v = vec![0.0; secs];
        for &ms in t.timestamps_ms() {
            v[((ms.max(1) - 1) / 1000) as usize] += BITS_PER_OPPORTUNITY;
        }
        v
    }

    #[test]
    fn constant_has_the_rate_and_period() {
        let t = constant(12.032 * MBIT, 10.0);
        // 12.032 Mbit/s = one opportunity per ms exactly.
        assert_eq!(t.period_ms(), 10_000);
        assert_eq!(t.opportunities_per_period(), 10_000);
        assert_eq!(t.timestamps_ms()[..3], [1, 2, 3]);
        assert!((t.mean_rate_bps() - 12.032 * MBIT).abs() < 1.0);
    }

    #[test]
    fn constant_low_rate_keeps_the_mean_with_carry() {
        // 0.5 opportunity per ms: the carry alternates.
        let t = constant(6.016 * MBIT, 2.0);
        assert_eq!(t.opportunities_per_period(), 1000);
        assert_eq!(t.period_ms(), 2000);
        let very_low = constant(100_000.0, 60.0);
        let rel = (very_low.mean_rate_bps() - 100_000.0).abs() / 100_000.0;
        assert!(rel < 0.01, "{}", very_low.mean_rate_bps());
    }

    #[test]
    fn constant_zero_rate_still_makes_a_valid_trace() {
        let t = constant(0.0, 1.0);
        assert_eq!(t.timestamps_ms(), &[1000]);
    }

    #[test]
    fn steps_cycle_in_order_without_seed() {
        let rates = [5.0 * MBIT, 10.0 * MBIT, 20.0 * MBIT, 30.0 * MBIT];
        let t = steps(&rates, 10.0, 80.0, None);
        let s = per_second(&t);
        for (i, bits) in s.iter().enumerate() {
            let want = rates[(i / 10) % 4];
            assert!((bits - want).abs() <= BITS_PER_OPPORTUNITY, "second {i}");
        }
    }

    #[test]
    fn steps_with_seed_draw_from_the_set_reproducibly() {
        let rates = [5.0 * MBIT, 10.0 * MBIT, 20.0 * MBIT, 30.0 * MBIT];
        let a = RatePlan::steps(&rates, 10.0, 200.0, Some(7)).unwrap();
        let b = RatePlan::steps(&rates, 10.0, 200.0, Some(7)).unwrap();
        let c = RatePlan::steps(&rates, 10.0, 200.0, Some(8)).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.segments().len(), 20);
        assert!(a.segments().iter().all(|(_, r)| rates.contains(r)));
        assert!(a.segments().iter().any(|&(_, r)| r != a.segments()[0].1));
    }

    #[test]
    fn random_mean_is_exact_and_stddev_close() {
        let mean = 10.0 * MBIT;
        let sd = 3.0 * MBIT;
        let t = random(mean, sd, 600.0, 1.0, 42);
        assert_eq!(t.period_ms(), 600_000);
        let rel = (t.mean_rate_bps() - mean).abs() / mean;
        assert!(rel < 1e-5, "mean {}", t.mean_rate_bps());
        let s = per_second(&t);
        let m = s.iter().sum::<f64>() / s.len() as f64;
        let var = s.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (s.len() - 1) as f64;
        let got_sd = var.sqrt();
        assert!((got_sd - sd).abs() / sd < 0.15, "sd {got_sd}");
        assert!(s.iter().all(|&x| x >= 0.0));
    }

    #[test]
    fn random_is_seeded() {
        let a = random(8.0 * MBIT, 4.0 * MBIT, 30.0, 0.5, 1);
        let b = random(8.0 * MBIT, 4.0 * MBIT, 30.0, 0.5, 1);
        let c = random(8.0 * MBIT, 4.0 * MBIT, 30.0, 0.5, 2);
        assert_eq!(a.timestamps_ms(), b.timestamps_ms());
        assert_ne!(a.timestamps_ms(), c.timestamps_ms());
    }

    #[test]
    fn random_zero_stddev_is_constant() {
        let a = random(8.0 * MBIT, 0.0, 5.0, 1.0, 1);
        let b = constant(8.0 * MBIT, 5.0);
        assert_eq!(a.timestamps_ms(), b.timestamps_ms());
    }

    #[test]
    fn random_short_last_interval_keeps_the_mean() {
        let t = random(20.0 * MBIT, 10.0 * MBIT, 10.5, 4.0, 3);
        assert_eq!(t.period_ms(), 10_500);
        assert!((t.mean_rate_bps() - 20.0 * MBIT).abs() / (20.0 * MBIT) < 1e-4);
    }

    #[test]
    fn handover_divides_the_rate_during_dips() {
        // Cech, TUM 2020, §5: every 15 s, 2 s long, rate / 10.
        let t = handover(10.0 * MBIT, 15.0, 2.0, 10.0, 60.0);
        let s = per_second(&t);
        for (i, bits) in s.iter().enumerate() {
            let dip = i >= 15 && (i - 15) % 15 < 2;
            let want = if dip { 1.0 * MBIT } else { 10.0 * MBIT };
            assert!(
                (bits - want).abs() <= 2.0 * BITS_PER_OPPORTUNITY,
                "second {i}: {bits}"
            );
        }
    }

    #[test]
    fn outage_has_no_opportunities() {
        let t = handover(10.0 * MBIT, 5.0, 1.0, f64::INFINITY, 12.0);
        assert!(t
            .timestamps_ms()
            .iter()
            .all(|&ms| !(5001..=6000).contains(&ms) && !(10_001..=11_000).contains(&ms)));
        assert_eq!(t.period_ms(), 12_000);
    }

    #[test]
    fn outage_at_the_end_keeps_the_period() {
        let t = handover(10.0 * MBIT, 5.0, 2.0, f64::INFINITY, 7.0);
        assert_eq!(t.period_ms(), 7000);
    }

    #[test]
    fn dips_compose_with_random_variation() {
        let plan = RatePlan::random(10.0 * MBIT, 2.0 * MBIT, 30.0, 1.0, 5)
            .unwrap()
            .with_dips(15.0, 2.0, 15.0, 10.0)
            .unwrap();
        let base = RatePlan::random(10.0 * MBIT, 2.0 * MBIT, 30.0, 1.0, 5).unwrap();
        assert_eq!(plan.rate_at(15_500), base.rate_at(15_500) / 10.0);
        assert_eq!(plan.rate_at(17_500), base.rate_at(17_500));
        assert_eq!(plan.rate_at(3_000), base.rate_at(3_000));
    }

    #[test]
    fn bad_arguments_are_one_line_errors() {
        let e = RatePlan::constant(-1.0, 1.0).unwrap_err().to_string();
        assert_eq!(
            e,
            "rate must be a non-negative number of bits per second (got -1)"
        );
        assert!(RatePlan::constant(1.0, 0.0).is_err());
        assert!(RatePlan::random(1.0, f64::NAN, 1.0, 1.0, 0).is_err());
        assert!(RatePlan::steps(&[], 1.0, 1.0, None).is_err());
        let p = RatePlan::constant(1e6, 10.0).unwrap();
        assert!(p.with_dips(1.0, 2.0, 0.0, 10.0).is_err());
        assert!(p.with_dips(5.0, 1.0, 0.0, 0.5).is_err());
    }

    #[test]
    fn mahimahi_text_round_trips() {
        let t = random(5.0 * MBIT, 1.0 * MBIT, 3.0, 0.5, 9);
        let text = to_mahimahi(&t);
        let back = Trace::parse("x", &text).unwrap();
        assert_eq!(back.timestamps_ms(), t.timestamps_ms());
        assert!(text.ends_with('\n'));
    }
}
