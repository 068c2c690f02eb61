//! What Algorithm 1 reads from the estimator (Guo et al., MobiCom 2017, Algorithm 1 lines 2-5
//! and 15), shared by [`super::Dems`] and [`super::super::dems_n::DemsN`]: the estimates of one
//! decision ([`NetView`]), kept up to date between decisions by a [`ViewCache`].

use crate::estimate::{Estimator, OwdPiece};
use crate::packet::{PathId, MAX_PATHS};
use crate::sched::dems::Params;
use crate::sched::SchedCtx;

/// The network estimates of one decision, as a [`NetView`] reads them.
#[derive(Clone, Debug)]
pub(crate) struct Estimates {
    n: usize,
    /// Subflows by increasing OWD (ties and unknowns by path number).
    order: [PathId; MAX_PATHS],
    /// OWD_p on a basis common to all subflows (estimator OWD, else srtt/2), ns; `None` for all
    /// subflows when there is no common basis yet.
    owd: [Option<f64>; MAX_PATHS],
    /// BW_p, bytes per nanosecond ([`sustained_rate`]).
    bw: [Option<f64>; MAX_PATHS],
    /// `owd` comes from the estimator (not the srtt fallback), so its bins can be consulted.
    measured: bool,
}

impl Estimates {
    /// The estimates worked out afresh from the estimator and the subflows: what
    /// [`ViewCache::view`] answers without asking the estimator again for what did not change.
    fn new(ctx: &SchedCtx<'_>) -> Self {
        let n = ctx.npaths();
        let est = ctx.estimator();
        let mut e = Estimates {
            n,
            order: [0; MAX_PATHS],
            owd: [None; MAX_PATHS],
            bw: [None; MAX_PATHS],
            measured: true,
        };
        for p in 0..n {
            // The bin of the bytes in flight now: the one the next packet would be sent in.
            e.owd[p] = est.owd(p, ctx.subflow(p as PathId).in_flight());
            e.bw[p] = sustained_rate(ctx, p as PathId, est.bandwidth_bps(p).map(|b| b / 8e9));
            e.order[p] = p as PathId;
        }
        if e.owd[..n].iter().any(Option::is_none) {
            e.srtt_fallback(ctx);
        } else {
            sort_by_owd(&mut e.order[..n], &e.owd);
        }
        e
    }

    /// No OWD estimate on some subflow yet, so no common basis: srtt/2 if every subflow has
    /// one (symmetric paths), ordered by it, else no OWD and the order by srtt.
    fn srtt_fallback(&mut self, ctx: &SchedCtx<'_>) {
        let n = self.n;
        self.measured = false;
        for (p, o) in self.owd.iter_mut().enumerate().take(n) {
            *o = ctx
                .subflow(p as PathId)
                .srtt()
                .map(|s| s.as_nanos() as f64 / 2.0);
        }
        for (p, o) in self.order.iter_mut().enumerate().take(n) {
            *o = p as PathId;
        }
        if self.owd[..n].iter().any(Option::is_none) {
            self.owd = [None; MAX_PATHS];
            let by = ctx.by_srtt();
            self.order[..n].copy_from_slice(&by);
        } else {
            sort_by_owd(&mut self.order[..n], &self.owd);
        }
    }

    /// The same estimates, bit for bit (what a kept view is checked against).
    fn same(&self, o: &Estimates) -> bool {
        let bits = |v: &[Option<f64>]| -> Vec<Option<u64>> {
            v.iter().map(|x| x.map(f64::to_bits)).collect()
        };
        self.n == o.n
            && self.order[..self.n] == o.order[..o.n]
            && bits(&self.owd[..self.n]) == bits(&o.owd[..o.n])
            && bits(&self.bw[..self.n]) == bits(&o.bw[..o.n])
            && self.measured == o.measured
    }
}

/// A snapshot of the network estimates for one decision.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NetView<'e> {
    e: &'e Estimates,
    /// Changes whenever the estimates do (not δ, which the estimator keeps).
    generation: u64,
    /// Where δ between two subflows comes from: read per pair when asked ([`NetView::delta`]),
    /// since a decision needs a few of the N² pairs (filling the matrix was a fifth of an
    /// 8-path decision: issue "Speed at scale").
    est: &'e Estimator,
    k: f64,
    fixed_delta_ns: Option<f64>,
    /// The variant reads δ, so the estimator keeps the ΔOWD windows ([`Params::reads_delta`]).
    reads_delta: bool,
}

impl NetView<'_> {
    /// The same number in two views of one [`ViewCache`]: the same order, OWD and BW
    /// (what a value worked out from them may be kept by).
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }
    /// Changes whenever δ may ([`Estimator::delta_version`]).
    pub(crate) fn delta_version(&self) -> u64 {
        self.est.delta_version()
    }
    pub(crate) fn order(&self) -> &[PathId] {
        &self.e.order[..self.e.n]
    }
    /// The smallest-OWD subflow (Algorithm 1 line 2).
    pub(crate) fn smallest(&self) -> PathId {
        self.e.order[0]
    }
    pub(crate) fn owd(&self, p: PathId) -> Option<f64> {
        self.e.owd[p as usize]
    }
    /// OWD_large − OWD_small, ns (line 4), `None` before any common basis.
    pub(crate) fn delta_owd(&self, small: PathId, large: PathId) -> Option<f64> {
        Some(self.owd(large)? - self.owd(small)?)
    }
    /// δ between two subflows, ns (line 5); ∞ while the spread of ΔOWD is unknown.
    pub(crate) fn delta(&self, p: PathId, q: PathId) -> f64 {
        let (p, q) = (p as usize, q as usize);
        if p >= self.e.n || q >= self.e.n {
            f64::INFINITY
        } else if p == q {
            0.0
        } else if let Some(fixed) = self.fixed_delta_ns {
            fixed
        } else {
            debug_assert!(
                self.reads_delta,
                "δ of a variant the ΔOWD windows are not kept for"
            );
            self.est
                .delta_owd_stddev(p, q)
                .map_or(f64::INFINITY, |s| self.k * s)
        }
    }
    /// [`NetView::delta`], kept in `kept` per pair while the pair's ΔOWD window has no new
    /// sample ([`Estimator::delta_owd_version`]).
    pub(crate) fn delta_kept(&self, kept: &mut DeltaCache, p: PathId, q: PathId) -> f64 {
        let (a, b) = (p.min(q) as usize, p.max(q) as usize);
        if a == b || b >= self.e.n || self.fixed_delta_ns.is_some() {
            return self.delta(p, q);
        }
        let version = self.est.delta_owd_version(a, b);
        let slot = &mut kept.slots[a * MAX_PATHS + b];
        if slot.0 != version {
            *slot = (version, self.delta(p, q));
        }
        debug_assert_eq!(slot.1.to_bits(), self.delta(p, q).to_bits(), "a stale δ");
        slot.1
    }
    /// Bandwidth estimate, bytes per ns (line 15).
    pub(crate) fn bw(&self, p: PathId) -> Option<f64> {
        self.e.bw[p as usize]
    }
    /// `owd` comes from the estimator (its bins may be consulted), not the srtt fallback.
    pub(crate) fn measured(&self) -> bool {
        self.e.measured
    }
}

/// δ per pair of subflows as of the pair's ΔOWD window ([`NetView::delta_kept`]): a
/// standard deviation each, asked for several pairs on every `dems-f` decision, while a
/// window takes a sample only with an OWD sample of either path.
#[derive(Debug)]
pub(crate) struct DeltaCache {
    /// (window version, δ) by `a * MAX_PATHS + b`, a < b.
    slots: [(u64, f64); MAX_PATHS * MAX_PATHS],
}

impl Default for DeltaCache {
    fn default() -> Self {
        DeltaCache {
            slots: [(u64::MAX, 0.0); MAX_PATHS * MAX_PATHS],
        }
    }
}

/// BW_p (§5, bytes per ns): the bandwidth EWMA of the estimator (which keeps
/// application-limited samples out), or what the subflow's window sustains, cwnd / srtt,
/// before its first delivery-rate sample.
fn sustained_rate(ctx: &SchedCtx<'_>, p: PathId, ewma: Option<f64>) -> Option<f64> {
    ewma.or_else(|| {
        let sf = ctx.subflow(p);
        sf.srtt()
            .filter(|s| s.as_nanos() > 0)
            .map(|s| sf.cwnd() as f64 / s.as_nanos() as f64)
    })
}

/// Subflow `p` with OWD `owd` as one integer that orders as `f64::total_cmp` of the OWD, then
/// the path number, so that one comparison orders two subflows.
fn sort_key(owd: f64, p: PathId) -> u128 {
    let b = owd.to_bits();
    // `total_cmp`'s transformation of the bits, made unsigned.
    let k = if b >> 63 == 1 { !b } else { b | 1 << 63 };
    u128::from(k) << 8 | u128::from(p)
}

/// Order `order` (subflows) by increasing OWD, ties by path number. A total order, so the
/// result is the one any sort gives (the stable sort this replaced among them). Insertion
/// sort: at most [`MAX_PATHS`] subflows, nearly sorted from the last decision when kept.
fn sort_by_owd(order: &mut [PathId], owd: &[Option<f64>; MAX_PATHS]) {
    let mut keys = [0u128; MAX_PATHS];
    let keys = &mut keys[..order.len()];
    for (k, &p) in keys.iter_mut().zip(order.iter()) {
        *k = sort_key(owd[p as usize].expect("every subflow has an OWD"), p);
    }
    crate::sched::insertion_sort(keys);
    for (p, k) in order.iter_mut().zip(keys.iter()) {
        *p = (k & 0xff) as PathId;
    }
}

/// The [`Estimates`] kept between decisions (issue "Speed at scale": working them out afresh,
/// N OWD lookups and a sort, was half of an 8-path DEMS decision). Between two decisions an
/// ACK or a transmission changes one or two subflows; another subflow's OWD estimate is where
/// it was as long as the estimator has nothing new for the path ([`Estimator::owd_version`])
/// and its bytes in flight stay within the same 10 KB bin ([`OwdPiece`]; above the highest
/// populated bin, where the estimate grows with the load, at the same bytes in flight). The
/// order is sorted again only when an OWD moved, from the last one. Every view is checked
/// against [`Estimates::new`] in debug builds.
#[derive(Debug)]
pub(crate) struct ViewCache {
    e: Estimates,
    paths: [PathCache; MAX_PATHS],
    /// Per subflow: the estimator's OWD for its bytes in flight (as `e.owd`, unless that holds
    /// the srtt fallback: `no_owd` not empty) and its BW EWMA, bytes/ns.
    owd: [Option<f64>; MAX_PATHS],
    bw: [Option<f64>; MAX_PATHS],
    /// Subflows without an OWD estimate, and without a BW EWMA (whose BW follows cwnd/srtt).
    no_owd: u32,
    no_bw: u32,
    /// `e.order` is sorted by the OWD in `owd`, and `keys` are its [`sort_key`]s in order.
    sorted: bool,
    keys: [u128; MAX_PATHS],
    /// Changes whenever `e` does.
    generation: u64,
    /// [`Estimator::version`] at the last view.
    est_version: u64,
}

/// The estimator's answer for one subflow, as of its [`Estimator::owd_version`].
#[derive(Clone, Copy, Debug)]
struct PathCache {
    version: u64,
    /// The OWD in [`ViewCache::owd`] holds for bytes in flight in `lo..lo + span`.
    lo: u64,
    span: u64,
    piece: Option<OwdPiece>,
}

impl Default for ViewCache {
    fn default() -> Self {
        ViewCache {
            e: Estimates {
                n: 0,
                order: [0; MAX_PATHS],
                owd: [None; MAX_PATHS],
                bw: [None; MAX_PATHS],
                measured: false,
            },
            paths: [PathCache {
                version: u64::MAX,
                lo: 0,
                span: 0,
                piece: None,
            }; MAX_PATHS],
            owd: [None; MAX_PATHS],
            bw: [None; MAX_PATHS],
            no_owd: 0,
            no_bw: 0,
            sorted: false,
            keys: [0; MAX_PATHS],
            generation: 0,
            est_version: u64::MAX,
        }
    }
}

impl ViewCache {
    /// This decision's view: [`Estimates::new`], bit for bit.
    pub(crate) fn view<'v, 'a: 'v>(
        &'v mut self,
        ctx: &SchedCtx<'a>,
        params: &Params,
    ) -> NetView<'v> {
        let n = ctx.npaths();
        let est = ctx.estimator();
        if n != self.e.n {
            *self = ViewCache::default();
            self.e.n = n;
        }
        // Subflows whose OWD moved; whether a BW did. Most decisions ask the estimator about
        // one or two subflows (a new version, or bytes in flight out of the piece), often none.
        let mut moved = 0u32;
        let mut bw_moved = false;
        // Every path's version is the one kept (the last view asked again where it was not).
        let unchanged = est.version() == self.est_version;
        self.est_version = est.version();
        for p in 0..n {
            let bif = ctx.subflow(p as PathId).in_flight();
            let c = &self.paths[p];
            if bif.wrapping_sub(c.lo) < c.span && (unchanged || c.version == est.owd_version(p)) {
                continue;
            }
            let (owd, bw) = self.refresh(est, p, bif);
            moved |= u32::from(owd) << p;
            bw_moved |= bw;
        }
        let mut m = self.no_bw;
        while m != 0 {
            // Before the first delivery-rate sample BW follows cwnd and srtt: read every time.
            let p = m.trailing_zeros() as usize;
            m &= m - 1;
            self.e.bw[p] = sustained_rate(ctx, p as PathId, None);
            bw_moved = true;
        }
        if self.no_owd != 0 {
            // The first round trip: no common basis yet.
            self.sorted = false;
            self.e.srtt_fallback(ctx);
            self.generation += 1;
        } else if moved != 0 || !self.sorted {
            if !self.sorted {
                self.e.measured = true;
                self.e.owd = self.owd;
                for (p, k) in self.keys.iter_mut().enumerate().take(n) {
                    *k = p as u128;
                }
                moved = u32::MAX;
                self.sorted = true;
            }
            self.sort(n, moved);
            self.generation += 1;
        } else if bw_moved {
            self.generation += 1;
        }
        debug_assert!(
            self.e.same(&Estimates::new(ctx)),
            "a stale view: {:?}",
            self.e
        );
        NetView {
            e: &self.e,
            generation: self.generation,
            est,
            k: params.k,
            fixed_delta_ns: params.fixed_delta_ns,
            reads_delta: params.reads_delta(),
        }
    }

    /// Ask the estimator again about subflow `p` with `bif` bytes in flight: whether its OWD
    /// and its BW moved.
    #[inline(never)]
    fn refresh(&mut self, est: &Estimator, p: usize, bif: u64) -> (bool, bool) {
        let version = est.owd_version(p);
        let c = &mut self.paths[p];
        let mut bw_moved = false;
        if c.version != version {
            c.version = version;
            c.piece = None;
            let bw = est.bandwidth_bps(p).map(|b| b / 8e9);
            bw_moved = self.bw[p].map(f64::to_bits) != bw.map(f64::to_bits);
            self.bw[p] = bw;
            self.e.bw[p] = bw;
            self.no_bw = self.no_bw & !(1 << p) | u32::from(bw.is_none()) << p;
        }
        if !c.piece.is_some_and(|x| x.covers(bif)) {
            c.piece = est.owd_piece(p, bif);
        }
        let owd = c.piece.map(|x| x.at(bif));
        // A bin holds for all its loads; the extrapolation above the bins for this one.
        (c.lo, c.span) = match c.piece {
            Some(x) if x.is_flat() => (x.lo(), x.span()),
            _ => (bif, 1),
        };
        self.no_owd = self.no_owd & !(1 << p) | u32::from(owd.is_none()) << p;
        let owd_moved = self.owd[p].map(f64::to_bits) != owd.map(f64::to_bits);
        self.owd[p] = owd;
        self.e.owd[p] = owd;
        (owd_moved, bw_moved)
    }

    /// Sort again after the OWD of the subflows in `moved` changed: their keys anew, then
    /// insertion sort from the last order (nearly sorted: one or two subflows moved).
    fn sort(&mut self, n: usize, moved: u32) {
        let keys = &mut self.keys[..n];
        for k in keys.iter_mut() {
            let p = (*k & 0xff) as PathId;
            if moved & 1 << p != 0 {
                *k = sort_key(self.owd[p as usize].expect("every subflow measured"), p);
            }
        }
        crate::sched::insertion_sort(keys);
        for (o, k) in self.e.order.iter_mut().zip(keys.iter()) {
            *o = (k & 0xff) as PathId;
        }
    }
}
