//! `fixed-split`: a fixed share of every chunk per path, the split the best-fixed-split search of
//! Guo et al., MobiCom 2017, §3.2 evaluates ("we download p% of the file over WiFi and 1 − p%
//! over cellular … an exhaustive search … covering the full range of p").
//!
//! Path 0 sends the first `shares[0]` bytes of each chunk, path 1 the next `shares[1]`, and so
//! on; the last path sends the rest. Each path sends its range in order, as fast as its
//! congestion window allows, and never anything of another path's range: losses are repaired by
//! the subflow's own retransmissions, so the split stays what was asked. A segment belongs to the
//! path whose range holds its first byte (offsets are measured from the chunk's first DSN), so
//! the split's resolution is one segment.
//!
//! Not in the scheduler table (it needs its split): `fixed-split:B0,B1,...` gives the bytes per
//! chunk of every path but the last. The best-fixed-split search runs it inside the same
//! connection and world (same handshakes, same random-number streams) as the runs it is
//! compared with.

use crate::meta::send::SegNo;
use crate::packet::{PathId, MAX_PATHS};
use crate::sched::{Assignment, SchedCtx, Scheduler};

#[derive(Debug)]
pub struct FixedSplit {
    /// `bounds[p]..bounds[p + 1]` is path p's byte range within a chunk; the last is open.
    bounds: Vec<u64>,
    /// Per path: every segment below it is sent or belongs to another path.
    cursor: [SegNo; MAX_PATHS],
    /// (chunk id, its first DSN) of the last lookup: segments come chunk after chunk.
    chunk_start: Option<(u64, u64)>,
}

impl FixedSplit {
    /// `shares[p]`: bytes of every chunk path p sends (the last path's entry is ignored: it
    /// sends whatever the others leave).
    pub fn new(shares: &[u64]) -> Self {
        assert!(!shares.is_empty() && shares.len() <= MAX_PATHS);
        let mut bounds = Vec::with_capacity(shares.len() + 1);
        let mut at = 0u64;
        bounds.push(0);
        for s in &shares[..shares.len() - 1] {
            at = at.saturating_add(*s);
            bounds.push(at);
        }
        bounds.push(u64::MAX);
        FixedSplit {
            bounds,
            cursor: [0; MAX_PATHS],
            chunk_start: None,
        }
    }

    /// `B0,B1,...`: bytes per chunk of the first paths, one number for each of `npaths - 1`.
    pub fn parse(arg: &str, npaths: usize) -> Option<Self> {
        let shares: Vec<u64> = arg
            .split(',')
            .map(|v| v.trim().parse().ok())
            .collect::<Option<_>>()?;
        (shares.len() + 1 == npaths).then(|| {
            let mut all = shares;
            all.push(0);
            FixedSplit::new(&all)
        })
    }

    /// The path whose range holds byte `offset` of a chunk.
    fn owner(&self, offset: u64) -> usize {
        self.bounds.partition_point(|&b| b <= offset) - 1
    }

    fn chunk_start(&mut self, ctx: &SchedCtx<'_>, chunk: u64) -> u64 {
        if let Some((id, start)) = self.chunk_start {
            if id == chunk {
                return start;
            }
        }
        let start = ctx
            .meta()
            .chunks()
            .find(|c| c.id == chunk)
            .map_or(0, |c| c.start_dsn);
        self.chunk_start = Some((chunk, start));
        start
    }

    /// Path p's lowest unsent segment, moving its cursor past what is not its own to send.
    fn next_for(&mut self, ctx: &SchedCtx<'_>, p: usize) -> Option<SegNo> {
        let meta = ctx.meta();
        let mut n = self.cursor[p].max(meta.base_seg());
        let end = meta.end_seg();
        while n < end {
            let rec = *meta.seg(n).expect("segment within the buffer");
            let start = self.chunk_start(ctx, rec.chunk);
            if !rec.sent() && self.owner(rec.dsn - start) == p {
                self.cursor[p] = n;
                return Some(n);
            }
            n += 1;
        }
        self.cursor[p] = n;
        None
    }
}

impl Scheduler for FixedSplit {
    fn name(&self) -> &'static str {
        "fixed-split"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        for p in 0..ctx.npaths().min(self.bounds.len() - 1) {
            if !ctx.has_space(p as PathId) {
                continue;
            }
            if let Some(seg) = self.next_for(ctx, p) {
                if ctx.may_send(seg) {
                    return Some(Assignment {
                        path: p as PathId,
                        seg,
                    });
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::FixedSplit;
    use crate::sched::minrtt::exchange::{Exchange, MSS};
    use crate::sender::TxKind::New;

    fn exchange(shares: &[u64], init_cwnd: u32) -> Exchange {
        let first: Vec<String> = shares[..shares.len() - 1]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let name = format!("fixed-split:{}", first.join(","));
        Exchange::new(&name, shares.len(), init_cwnd, 1 << 10)
    }

    #[test]
    fn parse_needs_one_share_per_path_but_the_last() {
        assert!(FixedSplit::parse("1000", 2).is_some());
        assert!(FixedSplit::parse("1000,2000", 3).is_some());
        assert!(FixedSplit::parse("1000", 3).is_none());
        assert!(FixedSplit::parse("x", 2).is_none());
    }

    #[test]
    fn chunk_first_bytes_on_path_0_rest_on_path_1() {
        let mut ex = exchange(&[3 * MSS, 0], 10);
        ex.at(0).write(5);
        assert_eq!(
            ex.send(),
            [
                (0, 0, New),
                (0, 1, New),
                (0, 2, New),
                (1, 3, New),
                (1, 4, New)
            ]
        );
    }

    #[test]
    fn full_window_leaves_the_other_paths_share_alone() {
        let mut ex = exchange(&[4 * MSS, 0], 2);
        ex.at(0).write(6);
        // Path 0 may send two of its four; path 1 its two: nobody takes the other's.
        assert_eq!(
            ex.send(),
            [(0, 0, New), (0, 1, New), (1, 4, New), (1, 5, New)]
        );
        ex.at(10).ack(0, 2, 1 << 10);
        assert_eq!(ex.send(), [(0, 2, New), (0, 3, New)]);
    }

    #[test]
    fn every_chunk_is_split_alike() {
        let mut ex = exchange(&[MSS, 0], 10);
        ex.at(0).write(2).write(2);
        assert_eq!(
            ex.send(),
            [(0, 0, New), (0, 2, New), (1, 1, New), (1, 3, New)]
        );
    }

    #[test]
    fn zero_share_sends_nothing_on_that_path() {
        let mut ex = exchange(&[0, 0], 10);
        ex.at(0).write(3);
        assert_eq!(ex.send(), [(1, 0, New), (1, 1, New), (1, 2, New)]);
    }

    #[test]
    fn pending_subflow_carries_nothing_until_established() {
        let mut ex = exchange(&[MSS, 0], 10);
        ex.conn.set_subflow_pending(1);
        ex.at(0).write(3);
        assert_eq!(ex.send(), [(0, 0, New)]);
        ex.conn.set_subflow_established(1, None);
        assert_eq!(ex.send(), [(1, 1, New), (1, 2, New)]);
    }
}
