//! Which threads of a block run the current code: one interval of thread indices per unit of the
//! perspective, kept in the emitter's context as `group`s and `split`s narrow it.
//!
//! Two counts need the *distinct* threads of several sites rather than the size of one perspective:
//! * a ring's full (empty) mbarrier completes a phase when every thread that fills (drains) the slot has
//!   arrived, once per step. Two sites in one arm (two loops one after the other, or a loop the compiler
//!   unrolls) are run by the same threads and count once; sites in different arms (two consumer warpgroups)
//!   add up;
//! * `set_max_regs` budgets per warpgroup: a call in `group(thread[128])` of a 384-thread block is run by all
//!   three warpgroups.

/// Threads of a block as intervals `(first, len)`, one per unit of the current perspective.
pub(super) type Units = Vec<(u32, u32)>;

/// All threads of a block of `threads` (1024, the most a block can have, when the size is not declared).
pub(super) fn whole_block(threads: Option<u32>) -> Units {
    vec![(0, threads.unwrap_or(1024))]
}

/// S-GROUP to `thread[n]`: each unit splits into units of `n` threads (rank mod n).
pub(super) fn group(units: &Units, n: u32) -> Units {
    units
        .iter()
        .flat_map(|&(first, len)| {
            let n = n.clamp(1, len.max(1));
            (0..len / n).map(move |u| (first + u * n, n))
        })
        .collect()
}

/// T-SPLIT at thread level: the arm of `size` threads at offset `off` of every unit.
pub(super) fn split_arm(units: &Units, off: u32, size: u32) -> Units {
    units
        .iter()
        .filter(|&&(_, len)| off < len)
        .map(|&(first, len)| (first + off, size.min(len - off)))
        .collect()
}

/// The number of threads in a union of intervals.
pub(super) fn distinct(units: &[(u32, u32)]) -> u32 {
    let mut v: Vec<(u32, u32)> = units
        .iter()
        .map(|&(s, l)| (s, s.saturating_add(l)))
        .collect();
    v.sort_unstable();
    let (mut total, mut end) = (0u32, 0u32);
    for (s, e) in v {
        let s = s.max(end);
        if e > s {
            total += e - s;
            end = e;
        }
    }
    total
}

/// Whether some interval meets threads `lo..hi`.
pub(super) fn meets(units: &[(u32, u32)], lo: u32, hi: u32) -> bool {
    units
        .iter()
        .any(|&(s, l)| s < hi && s.saturating_add(l) > lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_counts_overlaps_once() {
        assert_eq!(distinct(&[(0, 128), (0, 128)]), 128);
        assert_eq!(distinct(&[(128, 128), (0, 128)]), 256);
        assert_eq!(distinct(&[(0, 64), (32, 64), (200, 8)]), 104);
        assert_eq!(distinct(&[]), 0);
    }

    #[test]
    fn groups_and_arms_narrow_the_block() {
        let block = whole_block(Some(384));
        let wgs = group(&block, 128);
        assert_eq!(wgs, vec![(0, 128), (128, 128), (256, 128)]);
        // `match split(thread) { 1 => .. }` in every warpgroup: its first thread.
        assert_eq!(split_arm(&wgs, 0, 1), vec![(0, 1), (128, 1), (256, 1)]);
        // `match split(warpgroup) { 1 => .., 2 => .. }` of the block.
        assert_eq!(split_arm(&block, 128, 256), vec![(128, 256)]);
        assert!(meets(&[(128, 256)], 256, 384) && !meets(&[(128, 256)], 0, 128));
        assert_eq!(distinct(&group(&block, 32)), 384);
    }
}
