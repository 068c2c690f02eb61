//! A set of disjoint half-open `u64` ranges, kept sorted. Used for SACK scoreboards, receiver
//! out-of-order state and DSN reassembly. Operations cost O(log n + k) where k is the number of
//! ranges touched, so a window full of holes never makes a single packet cost O(window).

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    /// start -> end, disjoint and non-adjacent.
    map: BTreeMap<u64, u64>,
    total: u64,
}

impl RangeSet {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// Number of disjoint ranges.
    pub fn len(&self) -> usize {
        self.map.len()
    }
    /// Total bytes covered.
    pub fn covered(&self) -> u64 {
        self.total
    }
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        self.map.iter().map(|(&s, &e)| (s, e))
    }
    pub fn first(&self) -> Option<(u64, u64)> {
        self.map.iter().next().map(|(&s, &e)| (s, e))
    }
    pub fn last(&self) -> Option<(u64, u64)> {
        self.map.iter().next_back().map(|(&s, &e)| (s, e))
    }
    pub fn contains(&self, x: u64) -> bool {
        self.map
            .range(..=x)
            .next_back()
            .is_some_and(|(_, &e)| e > x)
    }
    /// The range containing `x`, if any.
    pub fn range_containing(&self, x: u64) -> Option<(u64, u64)> {
        self.map
            .range(..=x)
            .next_back()
            .filter(|(_, &e)| e > x)
            .map(|(&s, &e)| (s, e))
    }

    /// Insert `[start, end)`, appending to `new_parts` the sub-ranges that were not covered
    /// before, in order (what is new).
    pub fn insert_collect(&mut self, start: u64, end: u64, new_parts: &mut Vec<(u64, u64)>) {
        self.insert_inner(start, end, Some(new_parts));
    }

    /// Insert `[start, end)`; returns the number of bytes that were not covered before.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        let before = self.total;
        self.insert_inner(start, end, None);
        self.total - before
    }

    fn insert_inner(&mut self, start: u64, end: u64, mut new_parts: Option<&mut Vec<(u64, u64)>>) {
        if start >= end {
            return;
        }
        let (mut s, mut e, mut cur) = (start, end, start);
        if let Some((&ps, &pe)) = self.map.range(..=start).next_back() {
            if pe >= start {
                if pe >= end {
                    return;
                }
                s = ps;
                cur = pe;
                self.map.remove(&ps);
                self.total -= pe - ps;
            }
        }
        while let Some((&fs, &fe)) = self.map.range(start..=end).next() {
            if fs > cur {
                if let Some(np) = &mut new_parts {
                    np.push((cur, fs));
                }
            }
            cur = cur.max(fe);
            e = e.max(fe);
            self.map.remove(&fs);
            self.total -= fe - fs;
        }
        if cur < end {
            if let Some(np) = &mut new_parts {
                np.push((cur, end));
            }
        }
        self.map.insert(s, e);
        self.total += e - s;
    }

    /// Remove everything below `x` (e.g. when the cumulative ACK passes it).
    pub fn remove_below(&mut self, x: u64) {
        while let Some((&s, &e)) = self.map.iter().next() {
            if s >= x {
                break;
            }
            self.map.remove(&s);
            self.total -= e - s;
            if e > x {
                self.map.insert(x, e);
                self.total += e - x;
                break;
            }
        }
    }

    /// If a range starts exactly at `x`, remove and return it.
    pub fn pop_if_starts_at(&mut self, x: u64) -> Option<(u64, u64)> {
        let e = self.map.remove(&x)?;
        self.total -= e - x;
        Some((x, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(rs: &[(u64, u64)]) -> RangeSet {
        let mut s = RangeSet::new();
        for &(a, b) in rs {
            s.insert(a, b);
        }
        s
    }

    #[test]
    fn insert_disjoint_then_bridge_reports_only_the_gap() {
        let mut s = set(&[(0, 10), (20, 30)]);
        let mut new = vec![];
        s.insert_collect(5, 25, &mut new);
        assert_eq!(new, vec![(10, 20)]);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(0, 30)]);
        assert_eq!(s.covered(), 30);
    }

    #[test]
    fn insert_covered_range_is_a_no_op() {
        let mut s = set(&[(0, 100)]);
        assert_eq!(s.insert(10, 20), 0);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn adjacent_ranges_merge() {
        let s = set(&[(0, 10), (10, 20)]);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(0, 20)]);
    }

    #[test]
    fn remove_below_splits_a_range() {
        let mut s = set(&[(0, 10), (20, 30)]);
        s.remove_below(25);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(25, 30)]);
        assert_eq!(s.covered(), 5);
    }

    proptest::proptest! {
        #[test]
        fn matches_a_bitmap(ops in proptest::collection::vec((0u64..200, 1u64..40), 1..40)) {
            let mut s = RangeSet::new();
            let mut bits = vec![false; 256];
            for (a, l) in ops {
                let b = (a + l).min(256);
                let mut new = vec![];
                s.insert_collect(a, b, &mut new);
                let newly: u64 = new.iter().map(|(x, y)| y - x).sum();
                let expect = bits[a as usize..b as usize].iter().filter(|x| !**x).count() as u64;
                proptest::prop_assert_eq!(newly, expect);
                for x in a..b { bits[x as usize] = true; }
                proptest::prop_assert_eq!(s.covered(), bits.iter().filter(|x| **x).count() as u64);
            }
            for x in 0..256u64 {
                proptest::prop_assert_eq!(s.contains(x), bits[x as usize]);
            }
        }
    }
}
