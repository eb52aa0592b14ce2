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

/// Whether every interval is whole warps (starts and ends on a multiple of 32 threads).
pub(super) fn whole_warps(units: &[(u32, u32)]) -> bool {
    !units.is_empty()
        && units
            .iter()
            .all(|&(s, l)| s % 32 == 0 && l % 32 == 0 && l > 0)
}

/// The `fill` (or `drain`) sites of a ring: the threads of the sites where every thread arrives, and those
/// of the sites where lane 0 arrives for its warp.
#[derive(Default)]
pub(super) struct Arrivals {
    threads: Units,
    warps: Units,
}

impl Arrivals {
    pub(super) fn add(&mut self, units: &[(u32, u32)], per_warp: bool) {
        if per_warp {
            &mut self.warps
        } else {
            &mut self.threads
        }
        .extend_from_slice(units);
    }

    /// No site at all.
    pub(super) fn is_empty(&self) -> bool {
        self.threads.is_empty() && self.warps.is_empty()
    }

    /// Whether a thread of these sites is also one of `other`'s.
    pub(super) fn meets(&self, other: &Arrivals) -> bool {
        let mine = self.threads.iter().chain(&self.warps);
        mine.clone()
            .any(|&(s, l)| meets(&other.threads, s, s + l) || meets(&other.warps, s, s + l))
    }

    /// Arrivals per phase: the distinct threads of the thread sites plus the distinct warps of the warp
    /// sites; `None` when a thread is in both (it would arrive twice, or its warp would count for it).
    pub(super) fn count(&self) -> Option<u32> {
        if self
            .threads
            .iter()
            .any(|&(s, l)| meets(&self.warps, s, s + l))
        {
            return None;
        }
        Some(distinct(&self.threads) + distinct(&self.warps) / 32)
    }
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

    #[test]
    fn arrivals_count_warps_or_threads() {
        let wgs = group(&whole_block(Some(384)), 128);
        assert!(whole_warps(&wgs[1..]) && !whole_warps(&split_arm(&wgs, 0, 1)));
        assert!(!whole_warps(&[(16, 32)]) && !whole_warps(&[]));
        let mut a = Arrivals::default();
        // Two consumer warpgroups (sites in two arms) and a second site of the first one.
        a.add(&wgs[1..2], true);
        a.add(&wgs[2..3], true);
        a.add(&wgs[1..2], true);
        assert_eq!(a.count(), Some(8));
        // The producer's one thread arrives alone.
        a.add(&[(0, 1)], false);
        assert_eq!(a.count(), Some(9));
        // A thread of a warp site cannot also arrive alone.
        a.add(&[(130, 1)], false);
        assert_eq!(a.count(), None);
    }
}
