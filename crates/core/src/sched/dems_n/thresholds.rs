//! thres_j of the generalized Eq. 9 (see [`super`]), kept while what it is worked out from
//! stays: an O(N) sum per subflow asked, with δ a standard deviation per pair for `dems-f`,
//! asked on most decisions for the same few subflows (issue "Speed at scale").
//!
//! `dems-f`'s threshold, with δ_kj ≥ 0, is never above the one with δ = 0 (`dems-b`'s),
//! term by term and so in floating point too (rounding is monotonic): while D is at least the
//! latter, as in the bulk of a chunk, j may send, and no δ is needed.

use crate::packet::{PathId, MAX_PATHS};
use crate::sched::dems::{DeltaCache, NetView};

#[derive(Debug)]
pub(super) struct Thresholds {
    /// thres_j with δ = 0, for [`NetView::generation`].
    plain: Kept,
    /// thres_j with δ, for ([`NetView::generation`], [`NetView::delta_version`]).
    slack: Kept,
    deltas: DeltaCache,
}

#[derive(Debug)]
struct Kept {
    key: (u64, u64),
    thres: [Option<f64>; MAX_PATHS],
}

impl Kept {
    fn new() -> Self {
        Kept {
            key: (u64::MAX, u64::MAX),
            thres: [None; MAX_PATHS],
        }
    }

    fn get(&mut self, key: (u64, u64), j: PathId, work_out: impl FnOnce() -> f64) -> f64 {
        if key != self.key {
            self.key = key;
            self.thres = [None; MAX_PATHS];
        }
        *self.thres[j as usize].get_or_insert_with(work_out)
    }
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            plain: Kept::new(),
            slack: Kept::new(),
            deltas: DeltaCache::default(),
        }
    }
}

impl Thresholds {
    /// D ≥ thres_j, `unsent` bytes for D; δ_kj = k · StdDev(ΔOWD_kj) if `adaptive` (`dems-f`),
    /// else 0.
    pub(super) fn may_send_new(
        &mut self,
        view: &NetView,
        adaptive: bool,
        j: PathId,
        unsent: u64,
    ) -> bool {
        let d = unsent as f64;
        let plain = self.plain.get((view.generation(), 0), j, || {
            threshold(view, false, j, |_| 0.0)
        });
        debug_assert_eq!(
            plain.to_bits(),
            threshold(view, false, j, |_| 0.0).to_bits(),
            "a stale threshold for subflow {j}"
        );
        let ok = if d >= plain {
            true
        } else if !adaptive {
            false
        } else {
            let deltas = &mut self.deltas;
            let key = (view.generation(), view.delta_version());
            d >= self.slack.get(key, j, || {
                threshold(view, true, j, |k| view.delta_kept(deltas, k, j))
            })
        };
        debug_assert_eq!(
            ok,
            d >= threshold(view, adaptive, j, |k| view.delta(k, j)),
            "subflow {j}, D = {unsent}"
        );
        ok
    }
}

/// thres_j = Σ_{k: OWD_k < OWD_j} BW_k · (ΔOWD_kj − δ_kj)⁺, bytes (0 for the smallest OWD);
/// δ_kj = `delta(k)` if `adaptive` (`dems-f`), else 0.
fn threshold(
    view: &NetView,
    adaptive: bool,
    j: PathId,
    mut delta: impl FnMut(PathId) -> f64,
) -> f64 {
    let mut thres = 0.0;
    for &k in view.order() {
        if k == j {
            break;
        }
        let (Some(d), Some(bw)) = (view.delta_owd(k, j), view.bw(k)) else {
            continue; // no estimate: k cannot be counted on to take bytes from j
        };
        let slack = if adaptive { delta(k) } else { 0.0 };
        thres += bw * (d - slack).max(0.0);
    }
    thres
}
