//! Network condition estimation for schedulers (Guo et al., MobiCom 2017, §5, "ΔOWD Measurement and
//! Prediction").
//!
//! * One-way delay per subflow from the receiver's timestamp echoes: sample = receiver arrival
//!   time − sender send time, which includes the unknown sender/receiver clock offset. Samples
//!   are binned by the subflow's bytes in flight when the segment was sent (10 KB bins) and each
//!   bin is an EWMA with α = 0.25. The current estimate of a subflow is its bin for the bytes in
//!   flight now; a bin without samples is predicted from its neighbours (interpolated between
//!   populated bins, extrapolated above the highest at the queueing slope the samples show,
//!   at most 1/bandwidth: see [`Estimator::owd`]).
//! * ΔOWD between two subflows is a difference of estimates, so the clock offset cancels.
//!   δ = k · StdDev(ΔOWD) over the most recent ΔOWD samples (k = 1 by default).
//! * Bandwidth per subflow: EWMA (α = 0.25) of delivery-rate samples, without the
//!   application-limited ones that would lower it (a subflow the scheduler left idle delivers
//!   less than its path can).
//!
//! OWD values are signed nanoseconds (`i64`): with a clock offset they may be negative.

use crate::packet::MAX_PATHS;
use crate::time::Time;

/// Guo et al., MobiCom 2017, §5: "EWMA with α empirically chosen to be 0.25".
pub const OWD_ALPHA: f64 = 0.25;
/// Guo et al., MobiCom 2017, §5: "a bin size of 10KB".
pub const BIF_BIN_BYTES: u64 = 10_000;
/// Bins per subflow; bytes in flight beyond the last bin share it (1.28 MB and more).
const BINS: usize = 128;
/// Bins per subflow, for callers that keep one value per bin ([`Estimator::owd_bin_if_constant`]).
pub const OWD_BINS: usize = BINS;
// `PathEstimate::populated` has one bit per bin.
const _: () = assert!(BINS <= 128);
/// ΔOWD samples kept for the standard deviation.
const DELTA_WINDOW: usize = 64;

/// The OWD above a path's highest populated bin ([`Estimator::owd_above`]): the bin's EWMA
/// plus the bytes in flight beyond its middle at the slope of the two highest bins.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OwdAbove {
    from: u64,
    base: f64,
    slope: f64,
}

impl OwdAbove {
    /// The OWD at `bif` bytes in flight, ns (for `bif` above the highest populated bin).
    pub fn at(&self, bif: u64) -> f64 {
        self.base + self.slope * bif.saturating_sub(self.from) as f64
    }
}

/// What [`Estimator::owd`] answers for path `p` over a range of bytes in flight, as long as the
/// path's [`Estimator::owd_version`] stays: a caller asking every decision for the OWD at the
/// bytes in flight of the moment (DEMS's view of the subflows) keeps one piece per path and
/// only asks again when the path changes or its load leaves the piece.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OwdPiece {
    lo: u64,
    hi: u64,
    shape: PieceShape,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum PieceShape {
    /// One 10 KB bin: its EWMA, or the interpolation or nearest value for it.
    Flat(f64),
    /// Above the highest populated bin.
    Above(OwdAbove),
}

impl OwdPiece {
    /// Whether `bif` bytes in flight lie within the piece.
    #[inline]
    pub fn covers(&self, bif: u64) -> bool {
        self.lo <= bif && bif < self.hi
    }
    /// The piece is one bin, where the estimate does not depend on the exact load.
    #[inline]
    pub fn is_flat(&self) -> bool {
        matches!(self.shape, PieceShape::Flat(_))
    }
    /// The lowest bytes in flight the piece covers.
    #[inline]
    pub fn lo(&self) -> u64 {
        self.lo
    }
    /// How many bytes in flight from [`OwdPiece::lo`] it covers.
    #[inline]
    pub fn span(&self) -> u64 {
        self.hi - self.lo
    }
    /// [`Estimator::owd`] at `bif` bytes in flight (which the piece covers), bit for bit.
    #[inline]
    pub fn at(&self, bif: u64) -> f64 {
        debug_assert!(self.covers(bif));
        match self.shape {
            PieceShape::Flat(v) => v,
            PieceShape::Above(a) => a.at(bif),
        }
    }
}

#[derive(Clone, Debug)]
struct PathEstimate {
    bins: Vec<Option<f64>>,
    /// Bit `i` set when `bins[i]` holds a value (bins only ever fill), so that `owd` finds the
    /// nearest populated bins with two bit scans instead of walking up to 128 bins per lookup
    /// (DEMS asks for every path's OWD on every decision).
    populated: u128,
    /// Unbinned EWMA of all samples (used for ΔOWD samples and as a fallback).
    overall: Option<f64>,
    latest: Option<i64>,
    samples: u64,
    bw_bps: Option<f64>,
    /// Bumped by every change that may change what [`Estimator::owd`] answers for this path
    /// (an OWD sample, a new bandwidth estimate, which caps the slope above the bins).
    version: u64,
}

impl PathEstimate {
    fn new() -> Self {
        PathEstimate {
            bins: vec![None; BINS],
            populated: 0,
            overall: None,
            latest: None,
            samples: 0,
            bw_bps: None,
            version: 0,
        }
    }
}

/// A fixed window of samples with running sums for O(1) mean and variance.
#[derive(Clone, Debug)]
struct Window {
    /// The samples, `len` of them (in an array: one window per pair of paths takes a sample
    /// on every OWD sample of either path).
    buf: [f64; DELTA_WINDOW],
    len: usize,
    next: usize,
    sum: f64,
    sum_sq: f64,
    /// Samples taken so far: the window's version ([`Estimator::delta_owd_version`]).
    pushes: u64,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            buf: [0.0; DELTA_WINDOW],
            len: 0,
            next: 0,
            sum: 0.0,
            sum_sq: 0.0,
            pushes: 0,
        }
    }
}

impl Window {
    fn push(&mut self, x: f64) {
        if self.len < DELTA_WINDOW {
            self.buf[self.len] = x;
            self.len += 1;
        } else {
            let old = std::mem::replace(&mut self.buf[self.next], x);
            self.sum -= old;
            self.sum_sq -= old * old;
            self.next = (self.next + 1) % DELTA_WINDOW;
        }
        self.sum += x;
        self.sum_sq += x * x;
        self.pushes += 1;
    }
    fn stddev(&self) -> Option<f64> {
        let n = self.len;
        if n < 2 {
            return None;
        }
        let mean = self.sum / n as f64;
        // Population variance; clamp the rounding error of the running sums.
        Some((self.sum_sq / n as f64 - mean * mean).max(0.0).sqrt())
    }
}

#[derive(Clone, Debug)]
pub struct Estimator {
    paths: Vec<PathEstimate>,
    /// ΔOWD windows for every ordered pair (p, q), p < q: samples of OWD_q − OWD_p.
    delta: Vec<Window>,
    /// Whether OWD samples feed the ΔOWD windows (only DEMS reads them: the pairs cost O(N)
    /// per sample, a few percent of an 8-path run for every other scheduler).
    track_delta: bool,
    /// Bumped whenever a ΔOWD window changes.
    delta_version: u64,
    /// Bumped with every path's [`Estimator::owd_version`].
    version: u64,
    k: f64,
}

fn pair_index(p: usize, q: usize) -> usize {
    debug_assert!(p < q);
    p * MAX_PATHS + q
}

impl Estimator {
    pub fn new(npaths: usize) -> Self {
        Estimator {
            paths: (0..npaths).map(|_| PathEstimate::new()).collect(),
            delta: vec![Window::default(); MAX_PATHS * MAX_PATHS],
            track_delta: true,
            delta_version: 0,
            version: 0,
            k: 1.0,
        }
    }

    /// Keep the ΔOWD windows ([`Estimator::delta_owd_stddev`]) or not; on by default. A
    /// connection turns them off when its scheduler does not read them
    /// ([`crate::sched::Scheduler::reads_delta_owd`]); they stay empty then.
    pub fn track_delta(&mut self, on: bool) {
        self.track_delta = on;
    }

    /// δ = k · StdDev(ΔOWD) (Guo et al., MobiCom 2017, §4.4 suggests k as the confidence knob).
    pub fn set_k(&mut self, k: f64) {
        self.k = k;
    }

    /// One OWD sample on path `p`: sent at `sent` (sender clock) with `bif` bytes in flight,
    /// received at `recv_time` (receiver clock, ns).
    pub fn on_owd_sample(&mut self, p: usize, sent: Time, bif: u64, recv_time: u64) {
        let sample = recv_time as i64 - sent.0 as i64;
        let pe = &mut self.paths[p];
        let bin = ((bif / BIF_BIN_BYTES) as usize).min(BINS - 1);
        let ewma = |old: Option<f64>| match old {
            None => sample as f64,
            Some(o) => (1.0 - OWD_ALPHA) * o + OWD_ALPHA * sample as f64,
        };
        pe.bins[bin] = Some(ewma(pe.bins[bin]));
        pe.populated |= 1u128 << bin;
        pe.overall = Some(ewma(pe.overall));
        pe.latest = Some(sample);
        pe.samples += 1;
        pe.version += 1;
        self.version += 1;
        let this = pe.overall.unwrap();
        if !self.track_delta {
            return;
        }
        self.delta_version += 1;
        // Pair (a, b), a < b, takes OWD_b − OWD_a.
        let delta = &mut self.delta;
        for (q, pq) in self.paths.iter().enumerate() {
            let Some(other) = pq.overall else { continue };
            if q < p {
                delta[pair_index(q, p)].push(this - other);
            } else if q > p {
                delta[pair_index(p, q)].push(other - this);
            }
        }
    }

    /// A delivery-rate sample (bits per second) on path `p`. An application-limited sample
    /// (sent while the subflow had nothing to send) measures the sender, not the path, so it
    /// only counts when it exceeds the estimate (as BBR treats them).
    pub fn on_bandwidth_sample(&mut self, p: usize, bps: f64, app_limited: bool) {
        if bps <= 0.0 || !bps.is_finite() {
            return;
        }
        let pe = &mut self.paths[p];
        if app_limited && pe.bw_bps.is_some_and(|b| bps <= b) {
            return;
        }
        pe.bw_bps = Some(match pe.bw_bps {
            None => bps,
            Some(o) => (1.0 - OWD_ALPHA) * o + OWD_ALPHA * bps,
        });
        pe.version += 1;
        self.version += 1;
    }

    /// Paths the estimator knows.
    pub fn npaths(&self) -> usize {
        self.paths.len()
    }
    pub fn has_owd(&self, p: usize) -> bool {
        self.paths[p].overall.is_some()
    }
    pub fn owd_samples(&self, p: usize) -> u64 {
        self.paths[p].samples
    }

    /// OWD estimate of path `p` (ns, clock offset included) for `bif` bytes in flight: the
    /// EWMA of that bin; for a bin without samples yet, a prediction from its neighbours:
    ///
    /// * between two populated bins, the linear interpolation of their EWMAs;
    /// * below the lowest populated bin, that bin's EWMA (a smaller load does not make a path
    ///   faster than its emptiest measurement);
    /// * above the highest populated bin, that bin's EWMA plus the extra bytes' drain time at
    ///   the slope the two highest bins show, capped at 1/bandwidth: beyond the bottleneck's
    ///   bandwidth-delay product every extra byte in flight waits in its FIFO queue, and a
    ///   subflow in slow start keeps reaching loads whose samples are still a round trip away.
    ///   Falling back to the nearest (lower) bin would predict no queueing growth at all.
    ///
    /// `None` before the first sample.
    pub fn owd(&self, p: usize, bif: u64) -> Option<f64> {
        let pe = &self.paths[p];
        let want = ((bif / BIF_BIN_BYTES) as usize).min(BINS - 1);
        if let Some(v) = pe.bins[want] {
            return Some(v);
        }
        // The highest populated bin below `want` and the lowest above it (`want` is empty).
        let highest_below = |i: usize| {
            let m = pe.populated & ((1u128 << i) - 1);
            (m != 0).then(|| 127 - m.leading_zeros() as usize)
        };
        let below = highest_below(want);
        let above = {
            let m = pe.populated & !((1u128 << want) | ((1u128 << want) - 1));
            (m != 0).then(|| m.trailing_zeros() as usize)
        };
        let at = |i: usize| pe.bins[i].expect("populated");
        match (below, above) {
            (Some(b), Some(a)) => {
                let f = (want - b) as f64 / (a - b) as f64;
                Some(at(b) + f * (at(a) - at(b)))
            }
            (None, Some(a)) => Some(at(a)),
            (Some(_), None) => Some(self.owd_above(p).expect("populated").at(bif)),
            (None, None) => None,
        }
    }

    /// Changes whenever some path's [`Estimator::owd_version`] does.
    #[inline]
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Changes whenever [`Estimator::owd`] may answer differently for path `p` at some bytes
    /// in flight (a new OWD sample or bandwidth estimate): the validity of an [`OwdPiece`].
    #[inline]
    pub fn owd_version(&self, p: usize) -> u64 {
        self.paths[p].version
    }

    /// The piece of path `p`'s OWD estimate that holds at `bif` bytes in flight: one bin, where
    /// [`Estimator::owd`] does not depend on the exact load, or everything above the highest
    /// populated bin, where it grows with it (`None` before the first sample).
    pub fn owd_piece(&self, p: usize, bif: u64) -> Option<OwdPiece> {
        let pe = &self.paths[p];
        if pe.populated == 0 {
            return None;
        }
        let want = ((bif / BIF_BIN_BYTES) as usize).min(BINS - 1);
        let highest = 127 - pe.populated.leading_zeros() as usize;
        let piece = if want > highest {
            OwdPiece {
                lo: (highest as u64 + 1) * BIF_BIN_BYTES,
                hi: u64::MAX,
                shape: PieceShape::Above(self.owd_above(p)?),
            }
        } else {
            let lo = want as u64 * BIF_BIN_BYTES;
            OwdPiece {
                lo,
                hi: if want == BINS - 1 {
                    u64::MAX
                } else {
                    lo + BIF_BIN_BYTES
                },
                shape: PieceShape::Flat(self.owd(p, bif)?),
            }
        };
        debug_assert_eq!(
            piece.at(bif).to_bits(),
            self.owd(p, bif).map(f64::to_bits).unwrap_or(0)
        );
        Some(piece)
    }

    /// [`Estimator::owd`] above path `p`'s highest populated bin, where it grows with the
    /// bytes in flight themselves: its parameters until the next sample, so that a caller
    /// asking for many copies there computes the slope once (`None` before the first sample).
    pub fn owd_above(&self, p: usize) -> Option<OwdAbove> {
        let pe = &self.paths[p];
        if pe.populated == 0 {
            return None;
        }
        let b = 127 - pe.populated.leading_zeros() as usize;
        let at = |i: usize| pe.bins[i].expect("populated");
        let below = pe.populated & ((1u128 << b) - 1);
        let slope = if below == 0 {
            0.0
        } else {
            let b2 = 127 - below.leading_zeros() as usize;
            let s = (at(b) - at(b2)) / ((b - b2) as u64 * BIF_BIN_BYTES) as f64;
            // ns per byte; 8e9 / bps is the serialization time of one byte.
            let cap = pe.bw_bps.map_or(0.0, |bw| 8e9 / bw);
            s.clamp(0.0, cap)
        };
        Some(OwdAbove {
            from: b as u64 * BIF_BIN_BYTES + BIF_BIN_BYTES / 2,
            base: at(b),
            slope,
        })
    }

    /// The 10 KB bin of `bif` bytes in flight on path `p`, if [`Estimator::owd`] answers the same
    /// for every `bif` of that bin (every case but the extrapolation above the highest populated
    /// bin, which grows with `bif` itself): a caller that looks up many copies' OWDs may keep
    /// one answer per bin while no sample arrives.
    pub fn owd_bin_if_constant(&self, p: usize, bif: u64) -> Option<usize> {
        let pe = &self.paths[p];
        let want = ((bif / BIF_BIN_BYTES) as usize).min(BINS - 1);
        // Populated at or above `want`: a bin's own value, or an interpolation between two
        // populated bins, or the lowest one's value below it.
        let at_or_above = pe.populated & !((1u128 << want) - 1);
        (at_or_above != 0).then_some(want)
    }

    /// The largest populated bin's OWD on path `p`: with [`Estimator::owd`] at the largest
    /// bytes in flight of interest, a bound on what `owd` answers below it (interpolations lie
    /// between populated bins, the extrapolation grows with the bytes in flight).
    pub fn owd_bins_max(&self, p: usize) -> Option<f64> {
        let pe = &self.paths[p];
        let mut m = pe.populated;
        let mut best: Option<f64> = None;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            let v = pe.bins[i].expect("populated");
            best = Some(best.map_or(v, |b: f64| b.max(v)));
        }
        best
    }

    /// Unbinned OWD EWMA of path `p`.
    pub fn owd_overall(&self, p: usize) -> Option<f64> {
        self.paths[p].overall
    }
    pub fn owd_latest(&self, p: usize) -> Option<i64> {
        self.paths[p].latest
    }

    /// Changes whenever [`Estimator::delta_owd_stddev`] may answer differently for a pair.
    pub fn delta_version(&self) -> u64 {
        self.delta_version
    }

    /// Changes whenever [`Estimator::delta_owd_stddev`] of `p` and `q` may (`p != q`).
    #[inline]
    pub fn delta_owd_version(&self, p: usize, q: usize) -> u64 {
        let (a, b) = if p < q { (p, q) } else { (q, p) };
        self.delta[pair_index(a, b)].pushes
    }

    /// StdDev of ΔOWD between paths `p` and `q`, ns.
    pub fn delta_owd_stddev(&self, p: usize, q: usize) -> Option<f64> {
        if p == q {
            return Some(0.0);
        }
        let (a, b) = if p < q { (p, q) } else { (q, p) };
        self.delta[pair_index(a, b)].stddev()
    }

    /// δ = k · StdDev(ΔOWD) between `p` and `q`, ns (0 until there are two samples).
    pub fn delta(&self, p: usize, q: usize) -> f64 {
        self.k * self.delta_owd_stddev(p, q).unwrap_or(0.0)
    }

    /// Bandwidth EWMA of path `p`, bits per second.
    pub fn bandwidth_bps(&self, p: usize) -> Option<f64> {
        self.paths[p].bw_bps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_offset_cancels_in_delta_owd() {
        for offset in [0i64, 5_000_000_000, -3_000_000_000] {
            let mut e = Estimator::new(2);
            for i in 0..10u64 {
                let t = 10_000_000_000 + i * 1_000_000;
                let recv = |owd: u64| (t as i64 + owd as i64 + offset) as u64;
                e.on_owd_sample(0, Time(t), 0, recv(25_000_000));
                e.on_owd_sample(1, Time(t), 0, recv(135_000_000));
            }
            let d = e.owd(1, 0).unwrap() - e.owd(0, 0).unwrap();
            assert!((d - 110e6).abs() < 1.0, "offset {offset}: ΔOWD {d}");
        }
    }

    /// The nearest populated bins by linear scan (how `owd` found them before the bit mask).
    fn neighbours_by_scan(pe: &PathEstimate, want: usize) -> (Option<usize>, Option<usize>) {
        let populated = |i: &usize| pe.bins[*i].is_some();
        (
            (0..want).rev().find(populated),
            (want + 1..BINS).find(populated),
        )
    }

    #[test]
    fn sparse_bins_lookup_matches_a_linear_scan_of_the_neighbours() {
        // Bins 0, 3, 64, 126 and 127 populated (the edges of the bit mask included): every
        // load's estimate is the interpolation/extrapolation between the neighbours a scan finds.
        let mut e = Estimator::new(1);
        for (i, bin) in [3u64, 64, 0, 127, 126].into_iter().enumerate() {
            let owd = 10_000_000 + 1_000_000 * i as u64 * (bin + 1);
            e.on_owd_sample(0, Time(0), bin * BIF_BIN_BYTES + 1, owd);
        }
        let pe = &e.paths[0];
        assert_eq!(pe.populated.count_ones(), 5);
        let at = |i: usize| pe.bins[i].unwrap();
        for want in 0..BINS {
            let got = e
                .owd(0, want as u64 * BIF_BIN_BYTES + BIF_BIN_BYTES / 2)
                .unwrap();
            let expect = match (pe.bins[want], neighbours_by_scan(pe, want)) {
                (Some(v), _) => v,
                (None, (Some(b), Some(a))) => {
                    at(b) + (want - b) as f64 / (a - b) as f64 * (at(a) - at(b))
                }
                other => panic!("bin {want}: no neighbours on both sides: {other:?}"),
            };
            assert_eq!(got.to_bits(), expect.to_bits(), "bin {want}");
        }
    }

    #[test]
    fn owd_pieces_answer_as_owd_over_their_loads_until_the_version_changes() {
        // Bins 2 and 5 populated: below, between and above them (the extrapolation).
        let mut e = Estimator::new(1);
        e.on_owd_sample(0, Time(0), 2 * BIF_BIN_BYTES, 30_000_000);
        e.on_owd_sample(0, Time(0), 5 * BIF_BIN_BYTES, 50_000_000);
        let v = e.owd_version(0);
        for bif in (0..9 * BIF_BIN_BYTES).step_by(997) {
            let piece = e.owd_piece(0, bif).unwrap();
            assert!(piece.covers(bif));
            assert_eq!(piece.is_flat(), bif < 6 * BIF_BIN_BYTES, "{bif}");
            for other in [
                piece.lo(),
                piece.lo() + piece.span().min(1 << 40) - 1,
                bif + 1,
            ] {
                if piece.covers(other) {
                    let want = e.owd(0, other).unwrap();
                    assert_eq!(piece.at(other).to_bits(), want.to_bits(), "{bif} {other}");
                }
            }
        }
        e.on_bandwidth_sample(0, 8e6, false);
        assert_ne!(e.owd_version(0), v, "the slope cap changed");
        let v = e.owd_version(0);
        e.on_owd_sample(0, Time(0), 0, 20_000_000);
        assert_ne!(e.owd_version(0), v);
        assert_eq!(Estimator::new(1).owd_piece(0, 0), None);
    }

    #[test]
    fn ewma_uses_alpha_one_quarter() {
        let mut e = Estimator::new(1);
        e.on_owd_sample(0, Time(0), 0, 100);
        e.on_owd_sample(0, Time(0), 0, 200);
        assert_eq!(e.owd(0, 0), Some(125.0));
    }

    #[test]
    fn samples_are_binned_by_bytes_in_flight() {
        let mut e = Estimator::new(1);
        e.on_owd_sample(0, Time(0), 5_000, 10);
        e.on_owd_sample(0, Time(0), 55_000, 90);
        assert_eq!(e.owd(0, 0), Some(10.0));
        assert_eq!(e.owd(0, 50_000), Some(90.0));
    }

    #[test]
    fn empty_bin_between_samples_is_interpolated() {
        let mut e = Estimator::new(1);
        e.on_owd_sample(0, Time(0), 5_000, 10);
        e.on_owd_sample(0, Time(0), 45_000, 90);
        assert_eq!(e.owd(0, 25_000), Some(50.0));
    }

    #[test]
    fn empty_bin_below_samples_takes_the_lowest() {
        let mut e = Estimator::new(1);
        e.on_owd_sample(0, Time(0), 35_000, 70);
        assert_eq!(e.owd(0, 0), Some(70.0));
    }

    #[test]
    fn load_beyond_samples_queues_at_the_observed_slope() {
        let mut e = Estimator::new(1);
        // 1 ns per byte between bins 0 and 1 (centres 5 KB and 15 KB).
        e.on_owd_sample(0, Time(0), 5_000, 1_000_000);
        e.on_owd_sample(0, Time(0), 15_000, 1_010_000);
        // At 8 Gbit/s a byte drains in 1 ns: the slope is not capped.
        e.on_bandwidth_sample(0, 8e9, false);
        assert_eq!(e.owd(0, 45_000), Some(1_040_000.0));
        // A faster bottleneck drains extra bytes faster than the samples suggest: capped.
        e.on_bandwidth_sample(0, 8e11, false);
        e.on_bandwidth_sample(0, 8e11, false);
        e.on_bandwidth_sample(0, 8e11, false);
        e.on_bandwidth_sample(0, 8e11, false);
        let capped = e.owd(0, 45_000).unwrap();
        assert!(capped < 1_040_000.0 && capped > 1_010_000.0, "{capped}");
    }

    #[test]
    fn load_beyond_flat_samples_predicts_no_queueing() {
        let mut e = Estimator::new(1);
        e.on_owd_sample(0, Time(0), 5_000, 500);
        e.on_owd_sample(0, Time(0), 15_000, 500);
        e.on_bandwidth_sample(0, 8e6, false);
        assert_eq!(e.owd(0, 95_000), Some(500.0));
    }

    #[test]
    fn app_limited_bandwidth_samples_only_raise_the_estimate() {
        let mut e = Estimator::new(1);
        e.on_bandwidth_sample(0, 8e6, false);
        e.on_bandwidth_sample(0, 1e6, true);
        assert_eq!(
            e.bandwidth_bps(0),
            Some(8e6),
            "a lower app-limited sample is ignored"
        );
        e.on_bandwidth_sample(0, 12e6, true);
        assert_eq!(
            e.bandwidth_bps(0),
            Some(9e6),
            "a higher one still shows the path can do more"
        );
        e.on_bandwidth_sample(0, 1e6, false);
        assert_eq!(e.bandwidth_bps(0), Some(7e6));
    }

    #[test]
    fn constant_delays_have_zero_spread() {
        let mut e = Estimator::new(2);
        for i in 0..10 {
            e.on_owd_sample(0, Time(i), 0, i + 10);
            e.on_owd_sample(1, Time(i), 0, i + 50);
        }
        assert!(e.delta(0, 1) < 1e-6);
    }
}
