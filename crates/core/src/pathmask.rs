//! Sets of subflows as bitmasks (bit p: subflow p), for the per-poll passes that visit only
//! the subflows with something to do (issue "Speed at scale").

/// The positions of the bits set in `mask`, lowest first.
pub(crate) fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let p = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            p
        })
    })
}

/// The subflows set in `mask`, from `turn` on, round robin.
pub(crate) fn rotation(mask: u64, turn: usize) -> impl Iterator<Item = usize> {
    let from_turn = (!0u64).checked_shl(turn as u32).unwrap_or(0);
    bits(mask & from_turn).chain(bits(mask & !from_turn))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_starts_at_the_turn_and_wraps() {
        let m = 0b1011_0101;
        assert_eq!(bits(m).collect::<Vec<_>>(), [0, 2, 4, 5, 7]);
        assert_eq!(rotation(m, 3).collect::<Vec<_>>(), [4, 5, 7, 0, 2]);
        assert_eq!(rotation(m, 0).collect::<Vec<_>>(), [0, 2, 4, 5, 7]);
        assert_eq!(rotation(m, 64).collect::<Vec<_>>(), [0, 2, 4, 5, 7]);
        assert_eq!(rotation(0, 5).next(), None);
    }
}
