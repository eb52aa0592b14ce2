//! The lane scans of a warp step's group choice (`step.rs` `pick_group`), each built for the baseline
//! target and for AVX2 (`multiversion!`, issue 12): the lanes at a PC (whether the runnable lanes stand
//! at one), and for a diverged warp the lowest PC among them and the lanes that have waited too long.
//! Every step that follows no fast-path hint runs the first, a diverged warp the second. Each is
//! branch-free over the 32 lanes so that it compiles to vector compares and a mask extraction; the tests
//! hold both builds to per-lane definitions. (Which lanes may run is a mask the warp keeps, `Warp::run`.)

multiversion! {
/// The lowest PC among the lanes of `run` (`u32::MAX` when it is empty), and the lanes of `run` that
/// last ran more than `limit` steps of their warp ago (a lane's last step is the larger of its own
/// entry and `all_run`).
pub(super) fn diverged_lanes / diverged_lanes_on(
    run: u32,
    pc: &[u32; 32],
    last_run: &[u64; 32],
    all_run: u64,
    steps: u64,
    limit: u64,
) -> (u32, u32) {
    let mut minpc = u32::MAX;
    for (l, &p) in pc.iter().enumerate() {
        // (all ones for a lane outside `run`: a mask, not a select, so the loop is vector minimums)
        minpc = minpc.min(p | ((run >> l) & 1).wrapping_sub(1));
    }
    // No lane ran longer ago than the last step of the whole warp: usually nothing to scan.
    if steps.saturating_sub(all_run) <= limit {
        return (minpc, 0);
    }
    let mut starving = 0u32;
    for (l, &r) in last_run.iter().enumerate() {
        let r = r.max(all_run);
        starving |= ((steps.saturating_sub(r) > limit) as u32) << l;
    }
    (minpc, starving & run)
}
}

multiversion! {
/// Moves the lanes of `mask` to their next instruction. Built like the scans that read the PCs, so
/// that those reads find whole stores of the same width to forward from (a wide load over several
/// narrower stores waits for them to reach the cache).
pub(super) fn advance_lanes / advance_lanes_on(pc: &mut [u32; 32], mask: u32) -> () {
    for (l, p) in pc.iter_mut().enumerate() {
        *p += (mask >> l) & 1;
    }
}
}

multiversion! {
/// A branch of the group `mask`: its lanes of `taken` go to `target`, the others to `fall`; lanes
/// outside the group keep their PC.
pub(super) fn branch_lanes / branch_lanes_on(pc: &mut [u32; 32], mask: u32, taken: u32, target: u32, fall: u32) -> () {
    for (l, p) in pc.iter_mut().enumerate() {
        let (inside, t) = ((mask >> l) & 1 != 0, (taken >> l) & 1 != 0);
        let next = if t { target } else { fall };
        *p = if inside { next } else { *p };
    }
}
}

/// The lanes whose PC is `target`: four lanes per SSE2 compare (part of every x86-64), each 16-byte
/// load inside one store of the PC writers (`advance_lanes`, `branch_lanes` and the fast paths store
/// 16 or 32 bytes at a time from lane 0), so that it is forwarded from a store still in flight. (A
/// compiler-vectorised loop peels lane 0 and then loads across two stores, and waits for both.)
#[inline]
pub(super) fn lanes_at(pc: &[u32; 32], target: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut mask = 0u32;
        for (c, chunk) in pc.chunks_exact(4).enumerate() {
            // SAFETY: SSE2 is part of the x86-64 baseline; the unaligned load reads the 16 bytes of
            // `chunk`, four `u32`s of `pc`.
            let m = unsafe {
                let v = _mm_loadu_si128(chunk.as_ptr() as *const __m128i);
                let e = _mm_cmpeq_epi32(v, _mm_set1_epi32(target as i32));
                _mm_movemask_ps(_mm_castsi128_ps(e)) as u32
            };
            mask |= m << (4 * c);
        }
        mask
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        lanes_at_scalar(pc, target)
    }
}

/// The lanes whose 64-bit value is not zero (a guard predicate's lanes): two lanes per SSE2 compare.
/// (Compiled from a per-lane loop this builds the mask with a shift per lane.)
#[inline]
pub(super) fn nonzero_lanes(v: &[u64; 32]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut zero = 0u32;
        for (c, pair) in v.chunks_exact(2).enumerate() {
            // SAFETY: SSE2 is part of the x86-64 baseline; the unaligned load reads the 16 bytes of
            // `pair`, two `u64`s of `v`.
            let m = unsafe {
                let x = _mm_loadu_si128(pair.as_ptr() as *const __m128i);
                let e = _mm_cmpeq_epi32(x, _mm_setzero_si128());
                // (a 64-bit lane is zero when both its 32-bit halves are)
                let e = _mm_and_si128(e, _mm_shuffle_epi32(e, 0b10_11_00_01));
                _mm_movemask_pd(_mm_castsi128_pd(e)) as u32
            };
            zero |= m << (2 * c);
        }
        !zero
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        nonzero_lanes_scalar(v)
    }
}

/// `nonzero_lanes` lane by lane (other targets; the tests' definition).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn nonzero_lanes_scalar(v: &[u64; 32]) -> u32 {
    let mut mask = 0u32;
    for (l, &x) in v.iter().enumerate() {
        mask |= ((x != 0) as u32) << l;
    }
    mask
}

/// `lanes_at` lane by lane (other targets; the tests' definition).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn lanes_at_scalar(pc: &[u32; 32], target: u32) -> u32 {
    let mut mask = 0u32;
    for (l, &p) in pc.iter().enumerate() {
        mask |= ((p == target) as u32) << l;
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    #[test]
    fn scans_match_per_lane_definitions_in_both_builds() {
        let mut next = rng(0x5CA7_7E12_0000_0001);
        for case in 0..20_000 {
            // Few distinct PCs and runnable lanes in every pattern, so that converged and empty groups
            // occur too.
            let npc = 1 + (case % 4) as u64;
            let run = match case % 4 {
                0 => u32::MAX,
                1 => 0,
                _ => next() as u32,
            };
            let pc: [u32; 32] = std::array::from_fn(|_| 100 + (next() % npc) as u32);
            let steps = 1000 + next() % 100;
            let last_run: [u64; 32] = std::array::from_fn(|_| steps - next() % 120);
            let all_run = steps - next() % 120;
            let limit = 48;

            let minpc = (0..32)
                .filter(|&l| run >> l & 1 != 0)
                .map(|l| pc[l])
                .min()
                .unwrap_or(u32::MAX);
            let starving: u32 = (0..32)
                .filter(|&l| run >> l & 1 != 0 && steps - last_run[l].max(all_run) > limit)
                .map(|l| 1 << l)
                .sum();
            let target = 100 + (next() % npc) as u32;
            let at: u32 = (0..32).filter(|&l| pc[l] == target).map(|l| 1 << l).sum();
            for wide in [false, true] {
                if run != 0 {
                    assert_eq!(
                        diverged_lanes_on(wide, run, &pc, &last_run, all_run, steps, limit),
                        (minpc, starving),
                        "case {case}"
                    );
                }
                assert_eq!(lanes_at(&pc, target), at, "case {case}");
                assert_eq!(lanes_at_scalar(&pc, target), at, "case {case}");
                // Predicate-like lanes: zero, one, or a value whose only set bits are in one half.
                let vals: [u64; 32] = std::array::from_fn(|l| match (pc[l] + l as u32) % 4 {
                    0 => 0,
                    1 => 1,
                    2 => 1 << 40,
                    _ => next(),
                });
                let nz = (0..32).fold(0u32, |m, l| m | ((vals[l] != 0) as u32) << l);
                assert_eq!(nonzero_lanes(&vals), nz, "case {case}");
                assert_eq!(nonzero_lanes_scalar(&vals), nz, "case {case}");
                let group = lanes_at(&pc, pc[0]);
                let mut moved = pc;
                advance_lanes_on(wide, &mut moved, group);
                let mut branched = pc;
                let taken = next() as u32;
                branch_lanes_on(wide, &mut branched, run, taken, 7, 9);
                for l in 0..32 {
                    let inside = group >> l & 1 != 0;
                    assert_eq!(moved[l], pc[l] + inside as u32, "case {case}");
                    let want = match (run >> l & 1 != 0, taken >> l & 1 != 0) {
                        (false, _) => pc[l],
                        (true, true) => 7,
                        (true, false) => 9,
                    };
                    assert_eq!(branched[l], want, "case {case}");
                }
            }
        }
    }
}
