//! The receiving proxy's meta buffer: records arrive on any subflow, in any order, some twice
//! (reinjections); bytes leave in data-sequence order, each once (Guo et al., MobiCom 2017,
//! §5: "reassembles it in the receiver-side meta buffer, and delivers the in-order data").

use std::collections::BTreeMap;

use super::wire::MAX_SACKS;

#[derive(Debug, Default)]
pub struct Reassembly {
    /// Next DSN to deliver (the cumulative data-ACK).
    next: u64,
    /// Out-of-order bytes by start DSN; ranges never overlap each other or `..next`.
    ooo: BTreeMap<u64, Vec<u8>>,
    ooo_bytes: u64,
    /// Bytes that arrived a second time (reinjections and failover copies).
    pub duplicate_bytes: u64,
}

impl Reassembly {
    pub fn next_dsn(&self) -> u64 {
        self.next
    }
    /// Bytes held out of order.
    pub fn held(&self) -> u64 {
        self.ooo_bytes
    }

    /// Accept a record; append the bytes that became in order to `out`.
    pub fn on_data(&mut self, dsn: u64, payload: &[u8], out: &mut Vec<u8>) {
        let end = dsn + payload.len() as u64;
        // Trim what was delivered already.
        let (mut dsn, mut payload) = (dsn, payload);
        if end <= self.next {
            self.duplicate_bytes += payload.len() as u64;
            return;
        }
        if dsn < self.next {
            let cut = (self.next - dsn) as usize;
            self.duplicate_bytes += cut as u64;
            payload = &payload[cut..];
            dsn = self.next;
        }
        // Keep only the parts no held range covers.
        let mut pieces: Vec<(u64, &[u8])> = Vec::new();
        let mut at = dsn;
        let overlapping: Vec<(u64, u64)> = self
            .ooo
            .range(..end)
            .rev()
            .take_while(|(s, v)| **s + v.len() as u64 > dsn)
            .map(|(s, v)| (*s, *s + v.len() as u64))
            .collect();
        for (s, e) in overlapping.into_iter().rev() {
            if s > at {
                pieces.push((at, &payload[(at - dsn) as usize..(s - dsn) as usize]));
            }
            let covered_end = e.min(end);
            self.duplicate_bytes += covered_end.saturating_sub(s.max(at));
            at = at.max(covered_end);
        }
        if at < end {
            pieces.push((at, &payload[(at - dsn) as usize..]));
        }
        for (s, p) in pieces {
            if p.is_empty() {
                continue;
            }
            if s == self.next {
                out.extend_from_slice(p);
                self.next += p.len() as u64;
            } else {
                self.ooo_bytes += p.len() as u64;
                self.ooo.insert(s, p.to_vec());
            }
        }
        while let Some(v) = self.ooo.remove(&self.next) {
            self.ooo_bytes -= v.len() as u64;
            self.next += v.len() as u64;
            out.extend_from_slice(&v);
        }
    }

    /// SACK ranges of the held bytes, lowest first, merged, at most [`MAX_SACKS`].
    pub fn sacks(&self) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = Vec::new();
        for (s, p) in &self.ooo {
            let e = s + p.len() as u64;
            if let Some(last) = v.last_mut().filter(|l| l.1 == *s) {
                last.1 = e;
            } else if v.len() == MAX_SACKS {
                break;
            } else {
                v.push((*s, e));
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn feed(r: &mut Reassembly, dsn: u64, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        r.on_data(dsn, data, &mut out);
        out
    }

    #[test]
    fn in_order_record_is_delivered_at_once() {
        let mut r = Reassembly::default();
        assert_eq!(feed(&mut r, 0, b"abc"), b"abc");
        assert_eq!(r.next_dsn(), 3);
    }

    #[test]
    fn gap_holds_until_filled() {
        let mut r = Reassembly::default();
        assert!(feed(&mut r, 3, b"def").is_empty());
        assert_eq!(r.sacks(), vec![(3, 6)]);
        assert_eq!(feed(&mut r, 0, b"abc"), b"abcdef");
        assert_eq!(r.held(), 0);
    }

    #[test]
    fn duplicate_record_is_dropped_and_counted() {
        let mut r = Reassembly::default();
        feed(&mut r, 0, b"abc");
        assert!(feed(&mut r, 0, b"abc").is_empty());
        assert_eq!(r.duplicate_bytes, 3);
    }

    #[test]
    fn overlapping_out_of_order_copies_keep_one_byte_each() {
        let mut r = Reassembly::default();
        feed(&mut r, 4, b"efgh");
        feed(&mut r, 2, b"cdefghij");
        assert_eq!(r.held(), 8);
        assert_eq!(feed(&mut r, 0, b"ab"), b"abcdefghij");
        assert_eq!(r.duplicate_bytes, 4);
    }

    proptest! {
        /// Any arrival order of any set of (possibly overlapping, repeated) records covering
        /// the stream delivers the stream exactly once.
        #[test]
        fn any_arrival_order_delivers_the_stream_once(
            cuts in proptest::collection::vec((0usize..500, 1usize..80), 1..60),
            seed in any::<u64>(),
        ) {
            let data: Vec<u8> = (0..500u32).map(|i| (i * 7 % 251) as u8).collect();
            let mut recs: Vec<(usize, usize)> = cuts
                .iter()
                .map(|&(s, l)| (s, (s + l).min(500)))
                .collect();
            // Make sure the whole stream is covered.
            recs.extend((0..500).step_by(50).map(|s| (s, s + 50)));
            let mut rng = seed;
            for i in (1..recs.len()).rev() {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                recs.swap(i, (rng >> 33) as usize % (i + 1));
            }
            let mut r = Reassembly::default();
            let mut out = Vec::new();
            for (s, e) in recs {
                r.on_data(s as u64, &data[s..e], &mut out);
            }
            prop_assert_eq!(out, data);
            prop_assert_eq!(r.held(), 0);
        }
    }
}
