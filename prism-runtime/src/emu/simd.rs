//! Lane loops compiled twice (issue 12): for the baseline x86-64 target (SSE2) and for AVX2 with FMA,
//! the second chosen at run time where the CPU has both. The two builds compute the same bits: the
//! loops use only operations whose IEEE or integer results do not depend on the instruction set
//! (`f32::mul_add` is a fused multiply-add in both: a libm call there, one `vfmadd` here).

/// The CPU has AVX2 and FMA, detected once and kept in one byte (0: not yet known, 1: no, 2: yes): one
/// load per lane kernel, where the two cached feature tests cost several.
#[inline]
pub(super) fn avx2() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    static KNOWN: AtomicU8 = AtomicU8::new(0);
    match KNOWN.load(Ordering::Relaxed) {
        2 => true,
        1 => false,
        _ => {
            let has = detect_avx2();
            KNOWN.store(1 + has as u8, Ordering::Relaxed);
            has
        }
    }
}

#[cold]
fn detect_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `fn $name(args) -> R body` becomes `$name(args)`, which runs `body` compiled for AVX2+FMA where the
/// CPU has them and for the baseline otherwise, and `$on(avx2, args)`, which picks the build (`true`
/// still falls back to the baseline on a CPU without AVX2; the tests compare the two builds).
macro_rules! multiversion {
    ($(#[$m:meta])* $vis:vis fn $name:ident / $on:ident ($($a:ident: $t:ty),* $(,)?) -> $r:ty $body:block) => {
        $(#[$m])*
        #[allow(clippy::too_many_arguments)]
        #[inline]
        $vis fn $name($($a: $t),*) -> $r {
            $on(super::simd::avx2(), $($a),*)
        }

        /// The same, compiled for AVX2 and FMA (`avx2`, where the CPU has them) or the baseline target.
        #[allow(dead_code, clippy::too_many_arguments)]
        #[inline]
        $vis fn $on(avx2: bool, $($a: $t),*) -> $r {
            #[allow(clippy::too_many_arguments)]
            #[inline(always)]
            fn body($($a: $t),*) -> $r $body
            #[cfg(target_arch = "x86_64")]
            {
                #[allow(clippy::too_many_arguments)]
                #[target_feature(enable = "avx2,fma")]
                unsafe fn wide($($a: $t),*) -> $r {
                    body($($a),*)
                }
                if avx2 && super::simd::avx2() {
                    // SAFETY: the CPU has AVX2 and FMA (checked just above).
                    return unsafe { wide($($a),*) };
                }
            }
            let _ = avx2;
            body($($a),*)
        }
    };
}
