//! `fixed-split`: a fixed share of every chunk per path, the split the best-fixed-split search of
//! Guo et al., MobiCom 2017, §3.2 evaluates ("we download p% of the file over WiFi and 1 − p%
//! over cellular … an exhaustive search … covering the full range of p").
//!
//! The split fixes *how many* bytes of each chunk each path carries, not which ones: whenever a
//! path has congestion-window space and has not yet taken its share of a chunk, it takes the
//! chunk's lowest unsent segment. With the whole chunk in the send buffer (the paper's proxy)
//! this is the same run as giving path 0 the first bytes and path 1 the rest; under Linux's
//! autotuned send buffer (87 KB at first) it is not, because a path whose range lies beyond what
//! the application could write yet would sit idle. A path counts a segment against its share
//! when it takes it, so the split's resolution is one segment. Losses are repaired by the
//! subflow's own retransmissions: the split stays what was asked.
//!
//! `fixed-split:B0,B1,tail` (our addition; the best-fixed-split search runs both orders and
//! keeps the faster, `oracle` in crates/sim/src/oracle.rs): the last path takes the *highest* unsent segment of the oldest chunk it has a
//! share of, as DEMS's tail subflow does (Guo et al., MobiCom 2017, §4.1), and the lowest when
//! that lies past the peer's receive window. Its share then sits at the chunk's end instead of
//! among the other paths' segments, where it holds up in-order delivery (docs/experiments.md,
//! "Cells below the best fixed split").
//!
//! Not in the scheduler table (it needs its split): `fixed-split:B0,B1,...` gives the bytes per
//! chunk of every path but the last, which carries the rest of each chunk (known once the
//! application closed it, and whatever remains once every other path has its share); with one
//! number per path the last path's share is explicit too (the best-fixed-split search uses this
//! form, so that the last path need not wait for a chunk's end to be written). The search runs it
//! inside the same connection and world (same handshakes, same random-number streams) as the runs
//! it is compared with.

use std::collections::VecDeque;

use crate::meta::send::SegNo;
use crate::packet::{PathId, MAX_PATHS};
use crate::sched::{Assignment, SchedCtx, Scheduler};

#[derive(Debug)]
pub struct FixedSplit {
    /// Bytes per chunk of every path; `None` for a last path that carries the rest.
    shares: Vec<Option<u64>>,
    /// Per path: every segment below it is sent, or belongs to a chunk whose share it has.
    cursor: [SegNo; MAX_PATHS],
    /// Bytes each path took of the chunks still being sent: (chunk id, bytes per path).
    taken: VecDeque<(u64, [u64; MAX_PATHS])>,
    /// `tail`: the last path sends its share from each chunk's end.
    tail: bool,
}

impl FixedSplit {
    /// `shares[p]`: bytes of every chunk path p sends; `None` (only last): the rest.
    fn new(shares: Vec<Option<u64>>, tail: bool) -> Self {
        assert!(!shares.is_empty() && shares.len() <= MAX_PATHS);
        FixedSplit {
            shares,
            cursor: [0; MAX_PATHS],
            taken: VecDeque::new(),
            tail,
        }
    }

    /// `B0,B1,...`: bytes per chunk of the first `npaths - 1` paths, or of all `npaths`; a
    /// last `,tail` sends the last path's share from each chunk's end.
    pub fn parse(arg: &str, npaths: usize) -> Option<Self> {
        let (arg, tail) = match arg.trim().strip_suffix("tail") {
            Some(rest) => (rest.trim().strip_suffix(',')?, true),
            None => (arg, false),
        };
        let shares: Vec<u64> = arg
            .split(',')
            .map(|v| v.trim().parse().ok())
            .collect::<Option<_>>()?;
        let mut all: Vec<Option<u64>> = shares.into_iter().map(Some).collect();
        if all.len() + 1 == npaths {
            all.push(None);
        }
        (all.len() == npaths && !(tail && npaths < 2)).then(|| FixedSplit::new(all, tail))
    }

    /// `tail`, last path p: the highest unsent segment of the oldest chunk p has a share of,
    /// if it fits the peer's receive window.
    fn tail_for(&mut self, ctx: &mut SchedCtx<'_>, p: usize) -> Option<SegNo> {
        let mut chunk = None;
        for c in ctx.meta().chunks() {
            if c.unsent_bytes > 0 && self.has_share(p, c.id, c.end_dsn - c.start_dsn, c.closed) {
                chunk = Some(c.id);
                break;
            }
        }
        let seg = ctx.meta_mut().last_unsent(chunk?)?;
        ctx.may_send(seg).then_some(seg)
    }

    fn taken_of(&mut self, chunk: u64) -> &mut [u64; MAX_PATHS] {
        let i = match self.taken.iter().position(|(id, _)| *id == chunk) {
            Some(i) => i,
            None => {
                // Chunks are sent in order: ones older than the oldest with unsent data are done.
                if self.taken.len() >= 8 {
                    self.taken.pop_front();
                }
                self.taken.push_back((chunk, [0; MAX_PATHS]));
                self.taken.len() - 1
            }
        };
        &mut self.taken[i].1
    }

    /// Path p may still take a segment of `chunk` (`closed`: its length `len` is final).
    fn has_share(&mut self, p: usize, chunk: u64, len: u64, closed: bool) -> bool {
        let taken = *self.taken_of(chunk);
        let shares = &self.shares;
        if let Some(share) = shares[p] {
            let last = p + 1 == shares.len();
            // An explicit last share still ends with whatever the others leave.
            return taken[p] < share || (last && Self::others_done(shares, &taken, p));
        }
        let others: u64 = shares.iter().flatten().sum();
        (closed && taken[p] < len.saturating_sub(others)) || Self::others_done(shares, &taken, p)
    }

    /// Every path but `p` has taken its share of the chunk.
    fn others_done(shares: &[Option<u64>], taken: &[u64; MAX_PATHS], p: usize) -> bool {
        shares
            .iter()
            .enumerate()
            .all(|(q, s)| q == p || s.is_none_or(|s| taken[q] >= s))
    }

    /// Path p's next segment: the lowest unsent one of a chunk it has not yet taken its share of.
    fn next_for(&mut self, ctx: &SchedCtx<'_>, p: usize) -> Option<SegNo> {
        let meta = ctx.meta();
        let mut n = self.cursor[p].max(meta.base_seg());
        let end = meta.end_seg();
        // The cursor moves over segments already sent only; anything unsent may still become
        // p's (a chunk stays open, or another path falls short of its share).
        let mut all_sent_below = true;
        while n < end {
            let rec = *meta.seg(n).expect("segment within the buffer");
            if rec.sent() {
                n += 1;
                if all_sent_below {
                    self.cursor[p] = n;
                }
                continue;
            }
            let c = meta
                .chunks()
                .find(|c| c.id == rec.chunk)
                .expect("a segment's chunk is in the buffer");
            let (len, closed, chunk_end) = (c.end_dsn - c.start_dsn, c.closed, c.end);
            if self.has_share(p, rec.chunk, len, closed) {
                return Some(n);
            }
            all_sent_below = false;
            n = chunk_end;
        }
        None
    }
}

impl Scheduler for FixedSplit {
    fn name(&self) -> &'static str {
        "fixed-split"
    }

    fn next(&mut self, ctx: &mut SchedCtx<'_>) -> Option<Assignment> {
        for p in 0..ctx.npaths().min(self.shares.len()) {
            if !ctx.has_space(p as PathId) {
                continue;
            }
            let last = p > 0 && p + 1 == self.shares.len();
            let seg = match (self.tail && last).then(|| self.tail_for(ctx, p)).flatten() {
                Some(seg) => Some(seg),
                None => self.next_for(ctx, p),
            };
            if let Some(seg) = seg {
                if ctx.may_send(seg) {
                    let (chunk, len) = {
                        let rec = ctx.meta().seg(seg).expect("segment in the buffer");
                        (rec.chunk, u64::from(rec.len))
                    };
                    self.taken_of(chunk)[p] += len;
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

    /// `fixed-split:B0,...,Bn-1`: every path's share explicit.
    fn exchange_all(shares: &[u64], init_cwnd: u32) -> Exchange {
        let all: Vec<String> = shares.iter().map(|s| s.to_string()).collect();
        let name = format!("fixed-split:{}", all.join(","));
        Exchange::new(&name, shares.len(), init_cwnd, 1 << 10)
    }

    #[test]
    fn parse_needs_a_share_per_path_but_maybe_the_last() {
        assert!(FixedSplit::parse("1000", 2).is_some());
        assert!(FixedSplit::parse("1000,2000", 2).is_some());
        assert!(FixedSplit::parse("1000,2000", 3).is_some());
        assert!(FixedSplit::parse("1000", 3).is_none());
        assert!(FixedSplit::parse("1,2,3,4", 3).is_none());
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
    fn full_window_takes_the_lowest_unsent_within_the_share() {
        let mut ex = exchange(&[4 * MSS, 0], 2);
        ex.at(0).write(6);
        // Path 0 may send two of its four; path 1 takes the next two, its whole share.
        assert_eq!(
            ex.send(),
            [(0, 0, New), (0, 1, New), (1, 2, New), (1, 3, New)]
        );
        ex.at(10).ack(0, 2, 1 << 10);
        assert_eq!(ex.send(), [(0, 4, New), (0, 5, New)]);
    }

    #[test]
    fn open_chunk_last_path_waits_unless_its_share_is_given() {
        // The application has written three segments of a chunk it has not closed: with the
        // rest unknown, the last path of `fixed-split:B0` waits for path 0's share...
        let mut ex = Exchange::new("fixed-split:2000", 2, 1, 1 << 10);
        assert_eq!(ex.conn.write(3 * MSS, false), 3 * MSS);
        assert_eq!(ex.send(), [(0, 0, New)]);
        // ...and with its share explicit (`B0,B1`) it starts at once.
        let mut ex = Exchange::new("fixed-split:2000,3000", 2, 1, 1 << 10);
        assert_eq!(ex.conn.write(3 * MSS, false), 3 * MSS);
        assert_eq!(ex.send(), [(0, 0, New), (1, 1, New)]);
    }

    #[test]
    fn explicit_shares_leave_nothing_stranded() {
        // Shares summing to less than the chunk: the last path carries what is left.
        let mut ex = exchange_all(&[MSS, MSS], 10);
        ex.at(0).write(4);
        assert_eq!(
            ex.send(),
            [(0, 0, New), (1, 1, New), (1, 2, New), (1, 3, New)]
        );
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
    fn tail_sends_the_last_paths_share_from_the_chunks_end() {
        assert!(FixedSplit::parse("1000,tail", 2).is_some_and(|f| f.tail));
        assert!(FixedSplit::parse("1000, 2000 ,tail", 2).is_some_and(|f| f.tail));
        assert!(FixedSplit::parse("1000,2000", 2).is_some_and(|f| !f.tail));
        assert!(FixedSplit::parse("tail", 2).is_none());
        assert!(FixedSplit::parse("1000tail", 2).is_none());
        assert!(FixedSplit::parse("1000,tail", 1).is_none());
        let mut ex = Exchange::new(&format!("fixed-split:{},tail", 3 * MSS), 2, 10, 1 << 10);
        ex.at(0).write(6);
        assert_eq!(
            ex.send(),
            [
                (0, 0, New),
                (0, 1, New),
                (0, 2, New),
                (1, 5, New),
                (1, 4, New),
                (1, 3, New)
            ]
        );
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
