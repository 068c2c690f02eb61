//! The runs of unsent segments of a [`super::send::SendBuffer`], kept up to date on every
//! transition instead of rediscovered by a scan (issue "Speed at scale": the N-path DEMS looks
//! for the untransmitted gaps of a chunk whenever a subflow starts a new run, and the scan over
//! every unsent segment was most of its decision at 8 paths).
//!
//! A sorted list of disjoint, non-adjacent half-open intervals `[lo, hi)` of absolute segment
//! numbers. It holds a few entries per subflow (a run of DEMS splits at most one interval) and
//! one per chunk boundary at most, so a sorted vector beats a tree.

use super::send::SegNo;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct UnsentRuns {
    runs: Vec<(SegNo, SegNo)>,
}

impl UnsentRuns {
    /// Index of the first run whose end lies above `n` (the run holding `n`, if any).
    fn first_ending_above(&self, n: SegNo) -> usize {
        self.runs.partition_point(|&(_, hi)| hi <= n)
    }

    /// Segment `n` became unsent (written, or returned from a subflow's queue).
    pub(crate) fn insert(&mut self, n: SegNo) {
        let i = self.first_ending_above(n);
        if self.runs.get(i).is_some_and(|&(lo, _)| lo <= n) {
            return; // already unsent
        }
        let joins_prev = i > 0 && self.runs[i - 1].1 == n;
        let joins_next = self.runs.get(i).is_some_and(|&(lo, _)| lo == n + 1);
        match (joins_prev, joins_next) {
            (true, true) => {
                self.runs[i - 1].1 = self.runs[i].1;
                self.runs.remove(i);
            }
            (true, false) => self.runs[i - 1].1 = n + 1,
            (false, true) => self.runs[i].0 = n,
            (false, false) => self.runs.insert(i, (n, n + 1)),
        }
    }

    /// Segments `[lo, hi)` became unsent (appended at the buffer's end).
    pub(crate) fn insert_range(&mut self, lo: SegNo, hi: SegNo) {
        if lo >= hi {
            return;
        }
        match self.runs.last_mut() {
            Some(last) if last.1 == lo => last.1 = hi,
            Some(last) if last.1 > lo => {
                for n in lo..hi {
                    self.insert(n);
                }
            }
            _ => self.runs.push((lo, hi)),
        }
    }

    /// Segment `n` was sent (or left the buffer).
    pub(crate) fn remove(&mut self, n: SegNo) {
        let i = self.first_ending_above(n);
        let Some(&(lo, hi)) = self.runs.get(i) else {
            return;
        };
        if lo > n {
            return;
        }
        match (lo == n, hi == n + 1) {
            (true, true) => {
                self.runs.remove(i);
            }
            (true, false) => self.runs[i].0 = n + 1,
            (false, true) => self.runs[i].1 = n,
            (false, false) => {
                self.runs[i].1 = n;
                self.runs.insert(i + 1, (n + 1, hi));
            }
        }
    }

    /// Every segment numbered `at` or above was renumbered by `d` (±1: a record inserted at
    /// `at`, or the record before `at` removed; the caller updates that one record itself).
    pub(crate) fn shift_from(&mut self, at: SegNo, d: i64) {
        let mv = |n: SegNo| {
            if n >= at {
                n.saturating_add_signed(d)
            } else {
                n
            }
        };
        for r in &mut self.runs {
            // `hi` is exclusive: the run moves its end when its last segment moves.
            *r = (mv(r.0), if r.1 > at { mv(r.1 - 1) + 1 } else { r.1 });
        }
        // A removed record may make two runs touch; merge them.
        let mut out: Vec<(SegNo, SegNo)> = Vec::with_capacity(self.runs.len());
        for &(lo, hi) in &self.runs {
            match out.last_mut() {
                Some(last) if last.1 >= lo => last.1 = last.1.max(hi),
                _ if lo < hi => out.push((lo, hi)),
                _ => {}
            }
        }
        self.runs = out;
    }

    /// Forget everything below `base` (data-acknowledged segments, which were all sent).
    pub(crate) fn trim_below(&mut self, base: SegNo) {
        let k = self.runs.partition_point(|&(_, hi)| hi <= base);
        self.runs.drain(..k);
        if let Some(first) = self.runs.first_mut() {
            first.0 = first.0.max(base);
        }
    }

    /// The runs that meet `[lo, hi)`, clipped to it, in increasing order.
    pub(crate) fn within(&self, lo: SegNo, hi: SegNo) -> impl Iterator<Item = (SegNo, SegNo)> + '_ {
        self.runs[self.first_ending_above(lo)..]
            .iter()
            .take_while(move |&&(a, _)| a < hi)
            .map(move |&(a, b)| (a.max(lo), b.min(hi)))
    }

    #[cfg(test)]
    pub(crate) fn as_slice(&self) -> &[(SegNo, SegNo)] {
        &self.runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs of a plain vector of "unsent" flags, segment `base + i` at index `i`.
    fn scan(base: SegNo, unsent: &[bool]) -> Vec<(SegNo, SegNo)> {
        let mut out: Vec<(SegNo, SegNo)> = Vec::new();
        for (i, &u) in unsent.iter().enumerate() {
            let n = base + i as SegNo;
            match out.last_mut() {
                Some(last) if u && last.1 == n => last.1 = n + 1,
                _ if u => out.push((n, n + 1)),
                _ => {}
            }
        }
        out
    }

    #[test]
    fn random_transitions_match_a_scan_of_the_flags() {
        // A small deterministic generator (no dependency): Knuth's MMIX LCG.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        let (mut base, mut flags, mut runs) = (100u64, Vec::<bool>::new(), UnsentRuns::default());
        for step in 0..20_000 {
            let len = flags.len() as u64;
            match rnd(7) {
                0 => {
                    let k = rnd(5) + 1;
                    runs.insert_range(base + len, base + len + k);
                    flags.extend(std::iter::repeat_n(true, k as usize));
                }
                1 | 2 if len > 0 => {
                    let i = rnd(len);
                    runs.remove(base + i);
                    flags[i as usize] = false;
                }
                3 if len > 0 => {
                    let i = rnd(len);
                    runs.insert(base + i);
                    flags[i as usize] = true;
                }
                4 if len > 0 => {
                    // A record inserted in the middle (a cut's bytes passed on), unsent.
                    let i = rnd(len);
                    runs.shift_from(base + i, 1);
                    runs.insert(base + i);
                    flags.insert(i as usize, true);
                }
                5 if len > 1 => {
                    // An unsent record removed (collapsed into the one before).
                    let i = rnd(len - 1) + 1;
                    if flags[i as usize] {
                        runs.remove(base + i);
                        runs.shift_from(base + i + 1, -1);
                        flags.remove(i as usize);
                    }
                }
                6 => {
                    // The data-ACK frees a sent prefix.
                    let k = flags
                        .iter()
                        .take_while(|&&u| !u)
                        .count()
                        .min(rnd(4) as usize);
                    flags.drain(..k);
                    base += k as u64;
                    runs.trim_below(base);
                }
                _ => {}
            }
            assert_eq!(runs.as_slice(), scan(base, &flags), "step {step}");
            let (lo, hi) = (base + rnd(len + 1), base + rnd(len + 1));
            let want: Vec<_> = scan(base, &flags)
                .into_iter()
                .filter(|&(a, b)| a < hi && b > lo)
                .map(|(a, b)| (a.max(lo), b.min(hi)))
                .collect();
            assert_eq!(runs.within(lo, hi).collect::<Vec<_>>(), want, "step {step}");
        }
    }
}
