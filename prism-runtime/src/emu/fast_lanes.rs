//! Lane kernels of the fast paths (issue 12), each built for the baseline target and for AVX2+FMA
//! (`multiversion!`): the lane addresses of `[reg + offset]`, the shared-memory address check of a fast
//! access, and the word span that proves a shared access free of bank conflicts. The tests hold both
//! builds to straightforward per-lane definitions.

/// One value per lane.
type Lanes = [u64; 32];

multiversion! {
/// `out[l] = x[l] + k` (wrapping) for every lane: the lane addresses of `[reg + offset]`.
pub(super) fn add_lanes / add_lanes_on(x: &Lanes, k: u64, out: &mut Lanes) -> () {
    for (o, v) in out.iter_mut().zip(x) {
        *o = v.wrapping_add(k);
    }
}
}

multiversion! {
/// Each lane's offset in this block's shared memory (`[sub, keep, amask, crank + 1, limit, size]`: the
/// window base a generic address loses, the bits a shared address keeps, the alignment mask, the tag a
/// cluster address must carry, the block's shared bytes and the access size), and a mask of the lanes
/// whose access would not be aligned and in bounds there. Every lane computed, branch-free.
pub(super) fn shared_offsets / shared_offsets_on(addr: &Lanes, k: [u64; 6], offs: &mut [usize; 32]) -> u32 {
    let [sub, keep, amask, crank1, limit, size] = k;
    // Past the window test, 32-bit arithmetic (twice the lanes per vector): the offset is below 2^24,
    // the size at most 16, the block's shared bytes and the tag small.
    let (amask, crank1, size) = (amask as u32, crank1 as u32, size as u32);
    let limit = limit.min(u32::MAX as u64) as u32;
    let mut fails = [0u32; 32];
    for l in 0..32 {
        let a = addr[l].wrapping_sub(sub) & keep;
        // (generic: outside the window, i.e. a ≥ 2^32 after subtracting its base)
        let out = (a >> 32) as u32 != 0;
        let a = a as u32;
        let tag = (a >> 24) & 0x3F;
        let o = a & 0xFF_FFFF;
        let fail = out | (a & amask != 0) | (tag != 0 && tag != crank1) | (o + size > limit);
        fails[l] = fail as u32;
        offs[l] = o as usize;
    }
    // Usually no lane fails: an OR over the lanes (vectorised) decides that without packing the mask.
    if fails.iter().fold(0, |a, f| a | f) == 0 {
        return 0;
    }
    let mut bad = 0u32;
    for (l, f) in fails.iter().enumerate() {
        bad |= f << l;
    }
    bad
}
}

multiversion! {
/// Each lane's offset `addr[l] - base` into a global allocation (`k = [base, end, amask, size]`), and
/// whether every lane's `size`-byte access lies aligned inside `base..end`. Every lane computed,
/// branch-free.
pub(super) fn global_offsets / global_offsets_on(addr: &Lanes, k: [u64; 4], offs: &mut [usize; 32]) -> bool {
    let [base, end, amask, size] = k;
    let mut bad = false;
    for l in 0..32 {
        let a = addr[l];
        bad |= (a & amask != 0) | (a < base) | (a.saturating_add(size) > end);
        offs[l] = a.wrapping_sub(base) as usize;
    }
    !bad
}
}

multiversion! {
/// Last word minus first word touched by the lanes of `exec` (not empty) accessing `size` bytes at their
/// offsets (words of 4 bytes). Branch-free over all 32 lanes: a lane outside `exec` counts as the first
/// lane of `exec`.
pub(super) fn word_span / word_span_on(offs: &[usize; 32], exec: u32, size: u32) -> u32 {
    let f = offs[exec.trailing_zeros() as usize & 31] as u32;
    let (mut lo, mut hi) = (u32::MAX, 0u32);
    for (l, &o) in offs.iter().enumerate() {
        let o = if (exec >> l) & 1 != 0 { o as u32 } else { f };
        lo = lo.min(o >> 2);
        hi = hi.max((o + size - 1) >> 2);
    }
    hi.wrapping_sub(lo)
}
}

multiversion! {
/// The commonest shared access, a 4-byte access by all 32 lanes at `[reg + off]` of `.shared`, in one
/// pass: each lane's offset into `offs` (`k = [off, crank + 1, limit]`), and the word span of
/// `word_span`; `None` when a lane would not be aligned and in bounds by the checks of
/// `shared_offsets` for a 32-bit shared address (`offs` is then unspecified). The checks are made once
/// per warp, on the OR and AND of the addresses and their largest offset, so they also decline the rare
/// warp whose lanes mix both valid cluster tags (0 and `crank + 1`): the general fast path takes it.
pub(super) fn shared_offsets4 / shared_offsets4_on(base: &Lanes, k: [u64; 3], offs: &mut [u32; 32]) -> Option<u32> {
    let (crank1, limit) = (k[1] as u32, k[2].min(u32::MAX as u64) as u32);
    let (mut any, mut all, mut lo, mut hi) = (0u32, u32::MAX, u32::MAX, 0u32);
    for l in 0..32 {
        let a = base[l].wrapping_add(k[0]) as u32;
        any |= a;
        all &= a;
        let o = a & 0xFF_FFFF;
        offs[l] = o;
        lo = lo.min(o);
        hi = hi.max(o);
    }
    // Every tag 0, or every tag this block's (the OR and the AND of the tags are the tag).
    let (tany, tall) = ((any >> 24) & 0x3F, (all >> 24) & 0x3F);
    let tags = tany == 0 || (tany == crank1 && tall == crank1);
    // (hi < 2^24: no overflow)
    (any & 3 == 0 && hi + 4 <= limit && tags).then_some((hi >> 2) - (lo >> 2))
}
}

/// `out[l]` = the little-endian 4-byte word at `mem[offs[l]..]` for every lane; false (nothing
/// written) unless every word lies inside `mem` and `out` has 32 lanes.
#[inline]
pub(super) fn gather4(mem: &[u8], offs: &[u32; 32], out: &mut [u64]) -> bool {
    gather4_on(true, mem, offs, out)
}

/// `gather4` with AVX2's gather instruction (`avx2`, where the CPU has it) or lane by lane.
#[inline]
pub(super) fn gather4_on(avx2: bool, mem: &[u8], offs: &[u32; 32], out: &mut [u64]) -> bool {
    let Ok(out) = <&mut [u64; 32]>::try_from(out) else {
        return false;
    };
    #[cfg(target_arch = "x86_64")]
    if avx2 && super::simd::avx2() {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { gather4_avx2(mem, offs, out) };
    }
    let _ = avx2;
    if words_inside(mem, offs).is_none() {
        return false;
    }
    for (d, &o) in out.iter_mut().zip(offs) {
        // SAFETY: o + 4 <= mem.len() for every lane (`words_inside` above): the 4 bytes lie inside `mem`.
        let v = unsafe { mem.as_ptr().add(o as usize).cast::<u32>().read_unaligned() };
        *d = u32::from_le(v) as u64;
    }
    true
}

/// Stores the low 4 bytes of `vals[l]` little-endian at `mem[offs[l]..]` for every lane in lane order
/// (of two lanes at one word the higher one's stays); false (nothing written) unless every word lies
/// inside `mem` and `vals` has 32 lanes.
pub(super) fn scatter4(mem: &mut [u8], offs: &[u32; 32], vals: &[u64]) -> bool {
    if vals.len() != 32 || words_inside(mem, offs).is_none() {
        return false;
    }
    for (&v, &o) in vals.iter().zip(offs) {
        // SAFETY: o + 4 <= mem.len() for every lane (`words_inside` above): the 4 bytes lie inside `mem`.
        unsafe {
            mem.as_mut_ptr()
                .add(o as usize)
                .cast::<u32>()
                .write_unaligned((v as u32).to_le())
        };
    }
    true
}

/// Whether the 4-byte word at every lane's offset lies inside `mem` (`o + 4 <= mem.len()` for the
/// largest `o`): what makes the unchecked reads and writes of `gather4` and `scatter4` sound.
/// Returns the largest offset when they do.
#[inline(always)]
fn words_inside(mem: &[u8], offs: &[u32; 32]) -> Option<u32> {
    let top = offs.iter().fold(0u32, |m, &o| m.max(o));
    (top as usize)
        .checked_add(4)
        .is_some_and(|e| e <= mem.len())
        .then_some(top)
}

/// `gather4` in four 8-lane pieces. Unsafe: the CPU must have AVX2.
///
/// A piece whose lanes read consecutive words (a row of a tile) is one 32-byte load, one whose lanes
/// all read one word (a broadcast) one 4-byte load; any other pattern is a gather instruction, which
/// costs several times either (a third of the tiled matmul's shared loads' time went to gathers of
/// such pieces).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gather4_avx2(mem: &[u8], offs: &[u32; 32], out: &mut [u64; 32]) -> bool {
    use std::arch::x86_64::*;
    // `offs` is read in 16-byte pieces, as its writers (`shared_offsets4`) store it: a 32-byte load
    // over two 16-byte stores still in flight waits until they reach the cache.
    // SAFETY (every call below): k < 8, so the load reads the four `u32`s 4k..4k + 4 of `offs`.
    let quarter = |k: usize| _mm_loadu_si128(offs.as_ptr().add(4 * k).cast());
    let mut top = quarter(0);
    for k in 1..8 {
        top = _mm_max_epu32(top, quarter(k));
    }
    top = _mm_max_epu32(top, _mm_shuffle_epi32::<0b01_00_11_10>(top));
    top = _mm_max_epu32(top, _mm_shuffle_epi32::<0b10_11_00_01>(top));
    let top = _mm_cvtsi128_si32(top) as u32;
    // The gather's indices are signed 32-bit byte offsets: every one below 2^31 as well.
    if top > i32::MAX as u32 || top as usize + 4 > mem.len() {
        return false;
    }
    let steps = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    for c in 0..4 {
        // SAFETY: lanes c*8..c*8+8 of `offs` and `out` are in bounds (32 each); every index is
        // below 2^31 and has its 4 bytes inside `mem` (checked above), so each gathered word
        // lies inside `mem`; so do the 32 bytes from the first lane's word when the lanes' words
        // are consecutive (the last lane's word ends there), and the one word all lanes read.
        unsafe {
            let idx = _mm256_set_m128i(quarter(2 * c + 1), quarter(2 * c));
            let first = _mm256_set1_epi32(offs[c * 8] as i32);
            let in_a_row = _mm256_cmpeq_epi32(idx, _mm256_add_epi32(first, steps));
            let v = if _mm256_movemask_epi8(in_a_row) == -1 {
                _mm256_loadu_si256(mem.as_ptr().add(offs[c * 8] as usize).cast())
            } else if _mm256_movemask_epi8(_mm256_cmpeq_epi32(idx, first)) == -1 {
                let w = mem
                    .as_ptr()
                    .add(offs[c * 8] as usize)
                    .cast::<u32>()
                    .read_unaligned();
                _mm256_set1_epi32(w as i32)
            } else {
                _mm256_i32gather_epi32::<1>(mem.as_ptr().cast(), idx)
            };
            let lo = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(v));
            let hi = _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(v));
            _mm256_storeu_si256(out.as_mut_ptr().add(c * 8).cast(), lo);
            _mm256_storeu_si256(out.as_mut_ptr().add(c * 8 + 4).cast(), hi);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::SHARED_WINDOW;
    use super::*;

    /// Lanes of `m`, lowest first.
    fn each(m: u32) -> impl Iterator<Item = usize> {
        (0..32).filter(move |l| (m >> l) & 1 != 0)
    }

    const ALL: u32 = u32::MAX;

    #[test]
    fn add_lanes_builds_agree() {
        let x: Lanes = std::array::from_fn(|l| (l as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        for k in [0, 1, 64, u64::MAX, 1 << 63] {
            let (mut a, mut b) = ([0; 32], [0; 32]);
            add_lanes_on(false, &x, k, &mut a);
            add_lanes_on(true, &x, k, &mut b);
            assert_eq!(a, b);
            assert!((0..32).all(|l| a[l] == x[l].wrapping_add(k)));
        }
    }

    #[test]
    fn word_span_builds_agree() {
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for case in 0..5000 {
            let size = [1u32, 2, 4, 8, 16][case % 5];
            let exec = if case % 3 == 0 {
                ALL
            } else {
                next() as u32 | 4
            };
            let mut offs = [0usize; 32];
            for o in offs.iter_mut() {
                *o = (next() % [64u64, 512, 48_000][case % 3]) as usize / size as usize
                    * size as usize;
            }
            let lanes: Vec<usize> = each(exec).collect();
            let lo = lanes
                .iter()
                .map(|&l| offs[l] as u32 >> 2)
                .min()
                .expect("lanes");
            let hi = lanes
                .iter()
                .map(|&l| (offs[l] as u32 + size - 1) >> 2)
                .max()
                .expect("lanes");
            assert_eq!(word_span_on(false, &offs, exec, size), hi - lo);
            assert_eq!(word_span_on(true, &offs, exec, size), hi - lo);
        }
    }

    #[test]
    fn shared_offsets_builds_agree() {
        if !super::super::simd::avx2() {
            println!("this CPU has no AVX2+FMA: nothing to compare the baseline build with");
            return;
        }
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut failing = 0;
        for case in 0..5000 {
            let generic = case % 2 == 0;
            let (sub, keep) = if generic {
                (SHARED_WINDOW, u64::MAX)
            } else {
                (0, 0xFFFF_FFFF)
            };
            let size = [1u64, 2, 4, 8, 16][case % 5];
            let mut addr = [0u64; 32];
            for a in addr.iter_mut() {
                let o = match next() % 4 {
                    0 => next() % 0x1000,
                    1 => ((next() % 4) << 24) | (next() % 0x800),
                    2 => next(),
                    _ => (next() % 64) * size,
                };
                *a = if generic {
                    SHARED_WINDOW.wrapping_add(o)
                } else {
                    o
                };
            }
            let k = [sub, keep, size - 1, 1 + case as u64 % 3, 2048, size];
            let (mut o1, mut o2) = ([0usize; 32], [0usize; 32]);
            let b1 = shared_offsets_on(false, &addr, k, &mut o1);
            let b2 = shared_offsets_on(true, &addr, k, &mut o2);
            assert_eq!((b1, o1), (b2, o2), "{addr:x?} {k:?}");
            // Against the lane test in 64-bit arithmetic.
            for l in 0..32 {
                let a = addr[l].wrapping_sub(sub) & keep;
                let (tag, o) = ((a >> 24) & 0x3F, a & 0xFF_FFFF);
                let fail =
                    a >> 32 != 0 || a & k[2] != 0 || (tag != 0 && tag != k[3]) || o + size > k[4];
                assert_eq!((b1 >> l) & 1 == 1, fail, "lane {l}: {:#x} {k:?}", addr[l]);
                if !fail {
                    assert_eq!(o1[l] as u64, o, "lane {l}");
                }
            }
            failing += (b1 != 0) as u32 + (b1 != u32::MAX) as u32;
        }
        assert!(failing > 5000, "{failing}");
    }

    #[test]
    fn shared_offsets4_and_gather4_agree_with_the_general_kernels() {
        let mut s = 0x1234_5678_9ABC_DEF1u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mem: Vec<u8> = (0..2048u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut passed = 0;
        for case in 0..4000 {
            let mut base = [0u64; 32];
            for (l, a) in base.iter_mut().enumerate() {
                *a = match case % 4 {
                    // (rows of words and broadcasts, which `gather4_avx2` reads without a gather)
                    0 if case % 8 == 0 => (l as u64 % 16) * 4,
                    0 => (l as u64 / 8) * 64 + (l as u64 / 24) * 4,
                    1 => next() % 0x900,
                    2 => ((next() % 3) << 24) | ((next() % 512) * 4),
                    _ => next(),
                };
            }
            let off = [0u64, 4, 3, u64::MAX - 3][case % 4 / 2 + (case / 4) % 2];
            let crank1 = 1 + case as u64 % 2;
            let (mut o4, mut o4w) = ([0u32; 32], [0u32; 32]);
            let got = shared_offsets4_on(false, &base, [off, crank1, 2048], &mut o4);
            let wide = shared_offsets4_on(true, &base, [off, crank1, 2048], &mut o4w);
            assert_eq!(got, wide);
            let mut addr = [0u64; 32];
            add_lanes(&base, off, &mut addr);
            let mut offs = [0usize; 32];
            let bad = shared_offsets(&addr, [0, 0xFFFF_FFFF, 3, crank1, 2048, 4], &mut offs);
            // Declined only where a lane fails, or where the lanes mix cluster tags 0 and crank + 1.
            let tags: Vec<u64> = addr.iter().map(|a| (a >> 24) & 0x3F).collect();
            let mixed = tags.iter().any(|&t| t != tags[0]);
            assert!(got.is_none() || bad == 0, "{base:x?} {off:x}");
            assert!(got.is_some() || bad != 0 || mixed, "{base:x?} {off:x}");
            if let Some(span) = got {
                passed += 1;
                assert_eq!(o4w, o4);
                assert!((0..32).all(|l| o4[l] as usize == offs[l]));
                assert_eq!(span, word_span(&offs, ALL, 4));
                let (mut v, mut vw) = ([0u64; 32], [0u64; 32]);
                assert!(gather4_on(false, &mem, &o4, &mut v));
                assert!(gather4_on(true, &mem, &o4, &mut vw));
                assert_eq!(v, vw);
                for l in 0..32 {
                    let o = offs[l];
                    let want = u32::from_le_bytes(mem[o..o + 4].try_into().expect("4"));
                    assert_eq!(v[l], want as u64);
                }
                // Stores in lane order: the higher lane's value stays where two lanes share a word.
                let vals: [u64; 32] = std::array::from_fn(|l| next() ^ l as u64);
                let (mut got, mut want) = (mem.clone(), mem.clone());
                assert!(scatter4(&mut got, &o4, &vals));
                for l in 0..32 {
                    want[offs[l]..offs[l] + 4].copy_from_slice(&(vals[l] as u32).to_le_bytes());
                }
                assert!(got == want);
            }
        }
        assert!(passed >= 1000, "{passed}");
        // Out of bounds or a short destination: nothing written.
        let mut o = [0u32; 32];
        o[7] = 2045;
        let mut v = [9u64; 32];
        assert!(!gather4(&mem, &o, &mut v));
        assert!(!gather4(&mem, &[0; 32], &mut v[..31]));
        assert_eq!(v, [9; 32]);
        let mut m2 = mem.clone();
        assert!(!scatter4(&mut m2, &o, &v));
        assert!(!scatter4(&mut m2, &[0; 32], &v[..31]));
        assert!(m2 == mem);
    }

    #[test]
    fn global_offsets_builds_agree() {
        let mut s = 0x0DDB_1A5E_5BAD_5EEDu64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let (base, end) = (0x10_0000_0000u64, 0x10_0000_4000u64);
        let mut passed = 0;
        for case in 0..4000 {
            let size = [1u64, 2, 4, 8, 16][case % 5];
            let addr: Lanes = std::array::from_fn(|l| match case % 3 {
                0 => base + (l as u64) * size,
                1 => base - 64 + next() % 0x4100,
                _ => next(),
            });
            let k = [base, end, size - 1, size];
            let (mut o1, mut o2) = ([0usize; 32], [0usize; 32]);
            let ok = global_offsets_on(false, &addr, k, &mut o1);
            assert_eq!(ok, global_offsets_on(true, &addr, k, &mut o2));
            assert_eq!(o1, o2);
            let want = addr
                .iter()
                .all(|&a| a % size == 0 && a >= base && a.saturating_add(size) <= end);
            assert_eq!(ok, want, "{addr:x?} {size}");
            if ok {
                passed += 1;
                assert!((0..32).all(|l| o1[l] as u64 == addr[l] - base));
            }
        }
        assert!(passed >= 1000, "{passed}");
    }
}
