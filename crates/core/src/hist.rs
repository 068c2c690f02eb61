//! A fixed-size log-bucketed histogram (HDR-style: 64 sub-buckets per power of two, so a
//! quantile is within 1.6% of the true value). Percentile metrics use it so that memory does
//! not grow with the number of packets.

const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;

#[derive(Clone, Debug)]
pub struct LogHistogram {
    counts: Vec<u64>,
    total: u64,
    max: u64,
    sum: f64,
}

impl Default for LogHistogram {
    fn default() -> Self {
        Self::new()
    }
}

fn bucket(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // v in [2^e, 2^(e+1)), e >= SUB_BITS
    let shift = e - SUB_BITS;
    let mant = (v >> shift) - SUB; // 0..SUB
    (SUB + (shift as u64) * SUB + mant) as usize
}

/// Midpoint of a bucket's range (inverse of `bucket`).
fn value_of(b: usize) -> u64 {
    let b = b as u64;
    if b < SUB {
        return b;
    }
    let shift = (b - SUB) / SUB;
    let mant = (b - SUB) % SUB + SUB;
    let lo = mant << shift;
    lo + ((1u64 << shift) >> 1)
}

impl LogHistogram {
    pub fn new() -> Self {
        LogHistogram {
            counts: vec![0; (SUB + 64 * SUB) as usize],
            total: 0,
            max: 0,
            sum: 0.0,
        }
    }
    pub fn record(&mut self, v: u64) {
        self.counts[bucket(v)] += 1;
        self.total += 1;
        self.max = self.max.max(v);
        self.sum += v as f64;
    }
    pub fn count(&self) -> u64 {
        self.total
    }
    pub fn max(&self) -> u64 {
        self.max
    }
    pub fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum / self.total as f64
        }
    }
    /// The q-quantile (0 <= q <= 1); 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return value_of(b).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact() {
        let mut h = LogHistogram::new();
        for v in 0..10 {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 4);
        assert_eq!(h.max(), 9);
    }

    #[test]
    fn quantiles_are_within_two_percent() {
        let mut h = LogHistogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for q in [0.5, 0.9, 0.99] {
            let exact = q * 100_000.0 * 1000.0;
            let got = h.quantile(q) as f64;
            assert!(
                (got - exact).abs() / exact < 0.02,
                "q={q} got={got} exact={exact}"
            );
        }
    }
}
