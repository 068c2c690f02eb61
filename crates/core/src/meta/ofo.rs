//! The receiver's out-of-order queue: segments `(dsn, end, arrival)` in DSN order, stored in
//! blocks of at most [`BLOCK`] entries instead of one sorted array.
//!
//! Why: with several subflows, each delivers its own ascending stream of DSNs, and their
//! arrivals interleave. In one sorted array nearly every arrival lands in the middle and moves
//! everything on one side of it: at 8 paths the queue holds thousands of segments, and that move
//! was the largest single cost of the receiver per packet. Here an arrival moves at most a
//! block. A full block splits where the arrival goes (no part under a quarter block), so that
//! the stream the arrival belongs to appends from then on; a stream that runs ahead of the
//! others (a burst on one subflow) appends to its block or starts a new one. Delivery pops from the front of the first
//! block. The queue's order and contents are exactly those of the sorted array (a property
//! test holds it against one).

use crate::time::Time;

/// One queued segment: first DSN, end DSN, arrival time.
pub type OfoEntry = (u64, u64, Time);

/// Entries per block at most: a move within a block costs little, and blocks stay few.
pub const BLOCK: usize = 64;

/// Entries [`OfoQueue::find_hinted`] steps over from its hint before it searches instead.
const HINT_STEPS: usize = 8;

/// Where a DSN is in the queue: block `block`, entry `at` of that block. For a DSN not in the
/// queue, the entry it would be inserted before (`at` may be the block's length).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OfoPos {
    block: usize,
    at: usize,
}

/// Where an entry is stored: block `block`, index `raw` of that block's vector (delivered
/// entries of the first block included, so that deliveries do not move it). A hint for
/// [`OfoQueue::find_hinted`]; any value is safe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawPos {
    block: usize,
    raw: usize,
}

impl RawPos {
    /// The place one entry on.
    pub fn next(self) -> RawPos {
        RawPos {
            block: self.block,
            raw: self.raw + 1,
        }
    }
}

#[derive(Debug, Default)]
pub struct OfoQueue {
    /// Non-empty blocks of at most [`BLOCK`] entries, each sorted by DSN; every entry of a
    /// block precedes every entry of the next. The first block's entries before `head` were
    /// delivered already ([`OfoQueue::live`]).
    ///
    /// Plain vectors, not `VecDeque`s: an arrival into the middle of a block (most arrivals
    /// at 8 paths: the faster subflows delivered the segments behind it) is one `memmove` and
    /// the block's binary search runs over one slice, where a `VecDeque` paid its wrap-around
    /// arithmetic on each (issue "Speed at scale": about 130 instructions per out-of-order
    /// arrival in an 8-path round-robin run). Delivery moves `head` instead of the entries;
    /// a block leaves the front only when its last entry is delivered, and the move of the
    /// (few dozen) block headers then costs little.
    blocks: Vec<Vec<OfoEntry>>,
    /// Entries of the first block already delivered.
    head: usize,
    /// `firsts[i]` is the DSN of block `i`'s first live entry, kept beside the blocks so that
    /// `find` searches one flat array of integers (issue "Speed at scale": the binary search
    /// through two levels of `VecDeque` indexing cost `find` about 60 instructions per
    /// out-of-order arrival in an 8-path round-robin run).
    firsts: Vec<u64>,
    /// Emptied blocks kept for reuse, so that the steady state allocates nothing.
    spare: Vec<Vec<OfoEntry>>,
}

impl OfoQueue {
    /// Block `b`'s live entries.
    #[inline]
    fn live(&self, b: usize) -> &[OfoEntry] {
        let r = &self.blocks[b];
        if b == 0 {
            &r[self.head..]
        } else {
            r
        }
    }

    /// Where block `b`'s live entries start in its vector.
    #[inline]
    fn offset(&self, b: usize) -> usize {
        if b == 0 {
            self.head
        } else {
            0
        }
    }

    pub fn front(&self) -> Option<&OfoEntry> {
        self.blocks.first().map(|r| &r[self.head])
    }

    pub fn back(&self) -> Option<&OfoEntry> {
        self.blocks.last().and_then(|r| r.last())
    }

    pub fn pop_front(&mut self) -> Option<OfoEntry> {
        let b = self.blocks.first()?;
        let e = b[self.head];
        self.head += 1;
        match b.get(self.head) {
            Some(&(s, _, _)) => self.firsts[0] = s,
            None => {
                let mut r = self.blocks.remove(0);
                r.clear();
                self.spare.push(r);
                self.firsts.remove(0);
                self.head = 0;
            }
        }
        self.check_firsts();
        Some(e)
    }

    /// `Ok` with the position of the entry that starts at `dsn`, or `Err` with where an entry
    /// starting there goes.
    pub fn find(&self, dsn: u64) -> Result<OfoPos, OfoPos> {
        // Behind everything: new data on the subflow that is furthest ahead.
        if let Some(last) = self.blocks.last() {
            if last.last().is_some_and(|&(s, _, _)| dsn > s) {
                let block = self.blocks.len() - 1;
                return Err(OfoPos {
                    block,
                    at: self.live(block).len(),
                });
            }
        }
        // The last block whose first entry starts at or before `dsn`.
        let after = self.firsts.partition_point(|&s| s <= dsn);
        if after == 0 {
            return Err(OfoPos { block: 0, at: 0 });
        }
        let block = after - 1;
        let r = self.live(block);
        // Most arrivals go behind the last entry of their block.
        if r.last().is_some_and(|&(s, _, _)| dsn > s) {
            return Err(OfoPos { block, at: r.len() });
        }
        match r.binary_search_by_key(&dsn, |&(s, _, _)| s) {
            Ok(at) => Ok(OfoPos { block, at }),
            Err(at) => Err(OfoPos { block, at }),
        }
    }

    /// [`OfoQueue::find`] for a DSN expected at `hint`: where the last arrival of the same
    /// subflow went, one entry on. Each subflow delivers its own ascending stream, so its next
    /// arrival usually goes at most a few entries behind its last one; the place found there
    /// is taken when the entries around it prove it (the entry before it starts below `dsn`,
    /// the entry at it, or else the next block's first, above), which `find` would then
    /// answer too, without its two binary searches (issue "Speed at scale": `find` was the
    /// largest part of an out-of-order arrival at 8 paths).
    #[inline]
    pub fn find_hinted(&self, dsn: u64, hint: RawPos) -> Result<OfoPos, OfoPos> {
        match self.check_hint(dsn, hint) {
            Some(pos) => {
                debug_assert_eq!(Err(pos), self.find(dsn), "a hint taken at the wrong place");
                Err(pos)
            }
            None => self.find(dsn),
        }
    }

    #[inline]
    fn check_hint(&self, dsn: u64, h: RawPos) -> Option<OfoPos> {
        let r = self.blocks.get(h.block)?;
        let off = self.offset(h.block);
        // Not the first live entry of its block (the place could be the previous block's end).
        if h.raw <= off || h.raw > r.len() || r[h.raw - 1].0 >= dsn {
            return None;
        }
        // Other subflows' arrivals may have landed right behind this one's last: a few steps
        // over them (at 8 paths half the arrivals missed a hint taken literally).
        let mut at = h.raw;
        let stop = (at + HINT_STEPS).min(r.len());
        while at < stop && r[at].0 < dsn {
            at += 1;
        }
        let above = match r.get(at) {
            Some(e) => e.0 > dsn,
            None => self.firsts.get(h.block + 1).is_none_or(|&f| f > dsn),
        };
        above.then_some(OfoPos {
            block: h.block,
            at: at - off,
        })
    }

    /// The entry at `pos` (a position `find` returned as `Ok`).
    pub fn get(&self, pos: OfoPos) -> OfoEntry {
        self.live(pos.block)[pos.at]
    }

    /// Replaces the entry at `pos` (a position `find` returned as `Ok`) by one that starts at
    /// the same DSN.
    pub fn replace(&mut self, pos: OfoPos, e: OfoEntry) {
        let i = pos.at + self.offset(pos.block);
        debug_assert_eq!(self.blocks[pos.block][i].0, e.0);
        self.blocks[pos.block][i] = e;
    }

    /// Inserts `e` at `pos` (a position `find` returned as `Err` for `e.0`, with no change to
    /// the queue since). Returns where it is stored.
    pub fn insert(&mut self, pos: OfoPos, e: OfoEntry) -> RawPos {
        if self.blocks.is_empty() {
            let r = self.block_of(e);
            self.blocks.push(r);
            self.firsts.push(e.0);
            self.check_firsts();
            return RawPos { block: 0, raw: 0 };
        }
        let OfoPos { block, at } = pos;
        let len = self.live(block).len();
        if len < BLOCK {
            let off = self.offset(block);
            self.blocks[block].insert(off + at, e);
            if at == 0 {
                self.firsts[block] = e.0;
            }
            self.check_firsts();
            return RawPos {
                block,
                raw: off + at,
            };
        }
        // A full block changes shape: the first one drops its delivered entries first.
        if block == 0 && self.head > 0 {
            self.blocks[0].drain(..self.head);
            self.head = 0;
        }
        let stored = if at == len {
            // Behind a full block: a new block (a burst on one subflow runs ahead).
            let r = self.block_of(e);
            self.blocks.insert(block + 1, r);
            self.firsts.insert(block + 1, e.0);
            RawPos {
                block: block + 1,
                raw: 0,
            }
        } else if at == 0 {
            // Only before the first entry of the queue (any later DSN finds a block to follow).
            let r = self.block_of(e);
            self.blocks.insert(block, r);
            self.firsts.insert(block, e.0);
            RawPos { block, raw: 0 }
        } else {
            // A full block splits where the arrival goes, so that the stream it belongs to
            // appends from then on, but no part is left with less than a quarter block. (The
            // arrival is never first in either part: 0 < at < len.)
            let cut = at.clamp(BLOCK / 4, len - BLOCK / 4);
            let mut tail = self.spare.pop().unwrap_or_default();
            tail.extend(self.blocks[block].drain(cut..));
            self.firsts.insert(block + 1, tail[0].0);
            self.blocks.insert(block + 1, tail);
            if at <= cut {
                self.blocks[block].insert(at, e);
                RawPos { block, raw: at }
            } else {
                self.blocks[block + 1].insert(at - cut, e);
                RawPos {
                    block: block + 1,
                    raw: at - cut,
                }
            }
        };
        self.check_firsts();
        debug_assert_eq!(self.blocks[stored.block][stored.raw].0, e.0);
        stored
    }

    /// A block holding `e` alone (a spare one if there is).
    fn block_of(&mut self, e: OfoEntry) -> Vec<OfoEntry> {
        let mut r = self
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(BLOCK));
        r.push(e);
        r
    }

    /// Debug builds: `firsts` holds each block's first live DSN, and every block has a live
    /// entry.
    #[inline]
    fn check_firsts(&self) {
        debug_assert!(
            self.firsts.len() == self.blocks.len()
                && (0..self.blocks.len())
                    .all(|b| self.live(b).first().is_some_and(|f| f.0 == self.firsts[b])),
            "firsts out of date"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The queue as one sorted array (what it replaces), for comparison.
    fn flatten(q: &OfoQueue) -> Vec<OfoEntry> {
        (0..q.blocks.len())
            .flat_map(|b| q.live(b).iter().copied())
            .collect()
    }

    fn model_find(m: &[OfoEntry], dsn: u64) -> Result<usize, usize> {
        m.binary_search_by_key(&dsn, |&(s, _, _)| s)
    }

    /// A queue of one full block: one subflow's stream at even DSNs.
    fn full_block() -> OfoQueue {
        let mut q = OfoQueue::default();
        for k in 0..BLOCK as u64 {
            let dsn = 2 * k;
            let pos = q.find(dsn).unwrap_err();
            q.insert(pos, (dsn, dsn + 1, Time(k)));
        }
        assert_eq!(q.blocks.len(), 1);
        q
    }

    fn arrive(q: &mut OfoQueue, dsn: u64) {
        let pos = q.find(dsn).unwrap_err();
        q.insert(pos, (dsn, dsn + 1, Time(0)));
    }

    fn lens(q: &OfoQueue) -> Vec<usize> {
        (0..q.blocks.len()).map(|b| q.live(b).len()).collect()
    }

    #[test]
    fn a_full_block_splits_where_the_arrival_goes() {
        // Another subflow's segment lands after the 33 entries up to DSN 64: it ends the first
        // part, so that its stream appends from then on.
        let mut q = full_block();
        arrive(&mut q, 65);
        assert_eq!(lens(&q), [34, 31]);
        assert_eq!(q.live(0).last().unwrap().0, 65);
        // Near an end of the block, no part is left with less than a quarter block.
        let mut q = full_block();
        arrive(&mut q, 1);
        assert_eq!(lens(&q), [BLOCK / 4 + 1, BLOCK - BLOCK / 4]);
    }

    #[test]
    fn appending_behind_a_full_block_starts_a_new_one() {
        let mut q = full_block();
        arrive(&mut q, 1_000);
        assert_eq!(lens(&q), [BLOCK, 1]);
    }

    #[test]
    fn a_subflow_s_next_arrival_is_found_at_its_hint() {
        // A fast subflow delivered DSNs 0-31 and 100-131 (a full block); a slow one fills the
        // hole between them from 50 on, each arrival right behind its last, where its hint
        // points.
        let mut q = OfoQueue::default();
        for dsn in (0..32).chain(100..132) {
            arrive(&mut q, dsn);
        }
        assert_eq!(lens(&q), [BLOCK]);
        let mut hint = q.insert(q.find(50).unwrap_err(), (50, 51, Time(0))).next();
        for dsn in 51..54 {
            let pos = q.check_hint(dsn, hint).expect("the hint is the place");
            assert_eq!(Err(pos), q.find(dsn));
            hint = q.insert(pos, (dsn, dsn + 1, Time(0))).next();
        }
        // A DSN that goes elsewhere (behind the fast subflow's data) is refused, found anew.
        assert_eq!(q.check_hint(200, hint), None);
        assert_eq!(q.find_hinted(200, hint), q.find(200));
        // Deliveries from the front leave the hint good.
        for _ in 0..10 {
            q.pop_front();
        }
        assert!(q.check_hint(54, hint).is_some());
    }

    #[test]
    fn emptied_blocks_are_reused() {
        let mut q = OfoQueue::default();
        for dsn in 0..BLOCK as u64 + 1 {
            let pos = q.find(dsn).unwrap_err();
            q.insert(pos, (dsn, dsn + 1, Time(0)));
        }
        assert_eq!(q.blocks.len(), 2);
        while q.pop_front().is_some() {}
        assert!(q.front().is_none());
        assert_eq!(q.spare.len(), 2);
        let pos = q.find(5).unwrap_err();
        q.insert(pos, (5, 6, Time(0)));
        assert_eq!(q.spare.len(), 1);
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// Arrival of a segment: DSN, length.
        Arrive(u64, u64),
        Pop,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..2_000, 1u64..4).prop_map(|(d, l)| Op::Arrive(d, l)),
            1 => Just(Op::Pop),
        ]
    }

    proptest! {
        /// Every operation leaves the queue equal to one sorted array driven the same way, and
        /// `find` answers as a binary search of that array does.
        #[test]
        fn the_blocks_are_the_sorted_array(ops in proptest::collection::vec(op(), 1..600)) {
            let mut q = OfoQueue::default();
            let mut m: Vec<OfoEntry> = Vec::new();
            // One hint per stream (DSN modulo 4 stands for the subflow), left stale by the
            // other streams' arrivals and by deliveries: a hint never changes the answer.
            let mut hints = [RawPos::default(); 4];
            for (t, o) in ops.into_iter().enumerate() {
                let now = Time(t as u64);
                match o {
                    Op::Arrive(dsn, len) => {
                        let got = q.find(dsn);
                        let k = (dsn % 4) as usize;
                        prop_assert_eq!(q.find_hinted(dsn, hints[k]), got);
                        let want = model_find(&m, dsn);
                        prop_assert_eq!(got.is_ok(), want.is_ok());
                        match (got, want) {
                            (Ok(p), Ok(i)) => {
                                prop_assert_eq!(q.get(p), m[i]);
                                q.replace(p, (dsn, dsn + len, now));
                                m[i] = (dsn, dsn + len, now);
                            }
                            (Err(p), Err(i)) => {
                                hints[k] = q.insert(p, (dsn, dsn + len, now)).next();
                                m.insert(i, (dsn, dsn + len, now));
                            }
                            _ => unreachable!(),
                        }
                    }
                    Op::Pop => {
                        let want = if m.is_empty() { None } else { Some(m.remove(0)) };
                        prop_assert_eq!(q.pop_front(), want);
                    }
                }
                prop_assert_eq!(flatten(&q), m.clone());
                prop_assert_eq!(q.front().copied(), m.first().copied());
                prop_assert_eq!(q.back().copied(), m.last().copied());
                let sizes_ok = lens(&q).iter().all(|&n| n > 0 && n <= BLOCK);
                prop_assert!(sizes_ok);
            }
        }
    }
}
