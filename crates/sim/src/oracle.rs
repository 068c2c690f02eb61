//! `oracle`: the offline-optimal split of seed 000 §3.2.
//!
//! "We download p% of the file over WiFi and 1 − p% over cellular … an exhaustive search …
//! covering the full range of p." Each path downloads its share as an independent single-path
//! transfer with the same transport settings; the download time of a split is the slower of the
//! two, and the oracle is the split that minimizes it. The request crosses the first path, as in
//! every multipath run, so times are comparable.
//!
//! Instead of a grid of p we search exactly, in whole segments: a path's single-path time grows
//! with its share, so for two paths the optimum is where the two times cross (bisection over the
//! share, O(log(S/MSS)) runs each). For N paths we bisect on the finish time T: each path takes
//! the largest share it finishes by T, and the smallest T whose shares cover the chunk wins.
//! Single-path times are memoized per (path, share).

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::scenario::{Scenario, Workload};
use crate::SimError;

pub const ORACLE: (&str, &str) = (
    "oracle",
    "offline-optimal fixed split: every path downloads its share as an independent single-path transfer; the split with the shortest download time (seed 000 §3.2)",
);

struct Search<'a> {
    sc: &'a Scenario,
    seed: u64,
    mss: u64,
    size: u64,
    /// Request delay over the first path (added to every path's transfer time).
    request_delay: f64,
    memo: HashMap<(usize, u64), f64>,
    runs: u64,
    events: u64,
}

impl Search<'_> {
    /// Transfer time (request at the server to last byte delivered) of `bytes` over path `p`
    /// alone, plus the first path's request delay.
    fn time(&mut self, p: usize, bytes: u64) -> Result<f64, SimError> {
        if bytes == 0 {
            return Ok(0.0);
        }
        if let Some(&t) = self.memo.get(&(p, bytes)) {
            return Ok(t);
        }
        let mut one = self.sc.clone();
        one.paths = vec![self.sc.paths[p].clone()];
        one.workload = Workload::Chunk { size_bytes: bytes };
        let v = crate::run(&one, "single", self.seed)?;
        self.runs += 1;
        self.events += v["events"].as_u64().unwrap_or(0);
        let own_request = self.sc.paths[p].reverse.delay_s;
        let t = match v["download_time_s"].as_f64() {
            Some(d) => d - own_request + self.request_delay,
            None => f64::INFINITY,
        };
        self.memo.insert((p, bytes), t);
        Ok(t)
    }

    /// Largest share (whole segments, or everything) path `p` delivers by time `t`.
    fn max_share_by(&mut self, p: usize, t: f64) -> Result<u64, SimError> {
        let nseg = self.size.div_ceil(self.mss);
        let (mut lo, mut hi) = (0u64, nseg); // lo feasible, find largest feasible
        if self.time(p, self.size)? <= t {
            return Ok(self.size);
        }
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if self.time(p, mid * self.mss)? <= t {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(lo * self.mss)
    }

    /// Best split for two paths: bisection on the first path's share where the times cross.
    fn two_paths(&mut self) -> Result<(Vec<u64>, f64), SimError> {
        let nseg = self.size.div_ceil(self.mss);
        let share = |k: u64, size: u64, mss: u64| (k * mss).min(size);
        let (mut lo, mut hi) = (0u64, nseg);
        // f(k) = T0(k) - T1(S - k) is non-decreasing in k: find the crossing.
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            let s0 = share(mid, self.size, self.mss);
            if self.time(0, s0)? < self.time(1, self.size - s0)? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let mut best = (vec![0, self.size], f64::INFINITY);
        // Examine the neighbourhood of the crossing and the two single-path extremes.
        for k in [0, lo.saturating_sub(1), lo, hi, (hi + 1).min(nseg), nseg] {
            let s0 = share(k, self.size, self.mss);
            let t = self.time(0, s0)?.max(self.time(1, self.size - s0)?);
            if t < best.1 {
                best = (vec![s0, self.size - s0], t);
            }
        }
        Ok(best)
    }

    /// Best split for N paths: bisection on the finish time.
    fn n_paths(&mut self) -> Result<(Vec<u64>, f64), SimError> {
        let n = self.sc.paths.len();
        let mut hi = f64::INFINITY;
        let mut best_single = 0;
        for p in 0..n {
            let t = self.time(p, self.size)?;
            if t < hi {
                hi = t;
                best_single = p;
            }
        }
        let mut best = (vec![0; n], hi);
        best.0[best_single] = self.size;
        let mut lo = self.request_delay;
        for _ in 0..24 {
            let mid = 0.5 * (lo + hi);
            let shares: Vec<u64> = (0..n)
                .map(|p| self.max_share_by(p, mid))
                .collect::<Result<_, _>>()?;
            if shares.iter().sum::<u64>() >= self.size {
                hi = mid;
                // Trim the surplus from the last paths so the shares sum to the chunk.
                let mut left = self.size;
                let mut split = vec![0; n];
                for (p, s) in shares.iter().enumerate() {
                    split[p] = (*s).min(left);
                    left -= split[p];
                }
                let t = (0..n)
                    .map(|p| self.time(p, split[p]))
                    .collect::<Result<Vec<_>, _>>()?
                    .into_iter()
                    .fold(0.0, f64::max);
                if t < best.1 {
                    best = (split, t);
                }
            } else {
                lo = mid;
            }
            if hi - lo < 1e-5 {
                break;
            }
        }
        Ok(best)
    }
}

pub fn run(sc: &Scenario, seed: u64) -> Result<Value, SimError> {
    let wall = std::time::Instant::now();
    let (size, count) = match sc.workload {
        Workload::Chunk { size_bytes } => (size_bytes, 1),
        Workload::Chunks {
            size_bytes, count, ..
        } => (size_bytes, count),
        Workload::Bulk { .. } | Workload::Stream { .. } => {
            return Err(SimError::Scenario(
                "scheduler oracle: needs a chunk or chunks workload".into(),
            ))
        }
    };
    let mut s = Search {
        sc,
        seed,
        mss: sc.transport.mss as u64,
        size,
        request_delay: sc.paths[0].reverse.delay_s,
        memo: HashMap::new(),
        runs: 0,
        events: 0,
    };
    let (split, t) = if sc.paths.len() == 1 {
        (vec![size], s.time(0, size)?)
    } else if sc.paths.len() == 2 {
        s.two_paths()?
    } else {
        s.n_paths()?
    };
    // The subflows' completion gap of the best split: the spread of the finish times of the
    // paths that carry a share (each is an independent transfer, so its last byte arrives when
    // its transfer completes).
    let finish: Vec<f64> = (0..split.len())
        .filter(|&p| split[p] > 0)
        .map(|p| s.time(p, split[p]))
        .collect::<Result<_, _>>()?;
    let gap = finish.iter().fold(0.0f64, |a, &b| a.max(b))
        - finish.iter().fold(f64::INFINITY, |a, &b| a.min(b));
    let mut bytes = Map::new();
    let mut frac = Map::new();
    for (p, b) in sc.paths.iter().zip(&split) {
        bytes.insert(p.name.clone(), json!(b * count));
        frac.insert(p.name.clone(), json!(*b as f64 / size as f64));
    }
    Ok(json!({
        "scheduler": "oracle",
        "seed": seed,
        "engine_version": crate::VERSION,
        "scenario": sc,
        "download_time_s": t * count as f64,
        "chunk_times_s": vec![t; count as usize],
        "completion_gap_s": gap,
        "completion_gaps_s": vec![gap; count as usize],
        "reinjected_bytes": 0,
        "bytes_by_path": bytes,
        "oracle_split": frac,
        "goodput_bps": (size * count) as f64 * 8.0 / (t * count as f64),
        "oracle_runs": s.runs,
        "events": s.events,
        "sim_time_s": t * count as f64,
        "wall_time_s": wall.elapsed().as_secs_f64(),
        "truncated": false,
    }))
}
