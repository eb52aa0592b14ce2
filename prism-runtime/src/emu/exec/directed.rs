//! Directed rounding of float arithmetic (`add.rz.f32`, `mul.rm.f64`, `fma.rp.f32`, `div.rz.f32`,
//! `sqrt.rm.f32`, `rcp.rp.f64`: what `__fadd_rz`, `__dmul_rd`, `__fmaf_ru`, `__fdiv_rz`, `__fsqrt_rd`,
//! `__drcp_ru` compile to). The host computes the round-to-nearest result `r`; the sign of the exact
//! result's excess over `r` comes from an error-free transformation (TwoSum for sums, an fma for products,
//! the remainder `a - r·b` for quotients, `a - r²` for square roots); a directed mode then keeps `r` or
//! steps it one ulp toward its direction. Exact whenever the error terms are (always but for results in
//! the subnormal range, where the fma-based remainders may round).

use super::*;
use std::cmp::Ordering;

/// A float type's arithmetic, for the generic rounding below.
pub(super) trait Float: Copy + PartialOrd + std::ops::Neg<Output = Self> {
    const ZERO: Self;
    const ONE: Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn fma(self, b: Self, c: Self) -> Self;
    fn finite(self) -> bool;
    fn negative(self) -> bool;
    fn step(self, up: bool) -> Self;
}

macro_rules! float {
    ($t:ty) => {
        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            fn add(self, o: Self) -> Self {
                self + o
            }
            fn sub(self, o: Self) -> Self {
                self - o
            }
            fn fma(self, b: Self, c: Self) -> Self {
                self.mul_add(b, c)
            }
            fn finite(self) -> bool {
                self.is_finite()
            }
            fn negative(self) -> bool {
                self.is_sign_negative()
            }
            fn step(self, up: bool) -> Self {
                if up {
                    self.next_up()
                } else {
                    self.next_down()
                }
            }
        }
    };
}
float!(f32);
float!(f64);

/// The sign of `x` as an ordering against zero.
fn sign<F: Float>(x: F) -> Ordering {
    x.partial_cmp(&F::ZERO).unwrap_or(Ordering::Equal)
}

/// The exact error of the rounded sum `s = a + b` (TwoSum).
fn sum_error<F: Float>(a: F, b: F, s: F) -> F {
    let bb = s.sub(a);
    a.sub(s.sub(bb)).add(b.sub(bb))
}

/// How the exact result of `op(a, b, c)` compares with its round-to-nearest value `r` (`None`: the
/// operation is not one of the rounded ones, or the result is not a finite rounding of a finite value).
fn excess<F: Float>(op: AluOp, a: F, b: F, c: F, r: F) -> Option<Ordering> {
    let operands_finite =
        a.finite() && b.finite() && (c.finite() || !matches!(op, AluOp::Mad | AluOp::Fma));
    if !r.finite() {
        // An overflow of finite operands: the exact value is finite, below +inf or above -inf.
        return (operands_finite
            && matches!(
                op,
                AluOp::Add | AluOp::Sub | AluOp::Mul | AluOp::Mad | AluOp::Fma | AluOp::Div
            ))
        .then(|| {
            if r.negative() {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        });
    }
    Some(match op {
        AluOp::Add => sign(sum_error(a, b, r)),
        AluOp::Sub => sign(sum_error(a, -b, r)),
        AluOp::Mul => sign(a.fma(b, -r)),
        // a·b + c - r = (p - r) + ep + c with p = RN(a·b), ep its exact error: summed as (t + es) + ep
        // with t = RN(p + c) - r (exact: both near the result) and es that sum's error.
        AluOp::Mad | AluOp::Fma => {
            let p = a.fma(b, F::ZERO);
            let ep = a.fma(b, -p);
            let s = p.add(c);
            let es = sum_error(p, c, s);
            let t = s.sub(r);
            let u = t.add(es);
            let eu = sum_error(t, es, u);
            let v = u.add(ep);
            match sign(v) {
                Ordering::Equal => sign(sum_error(u, ep, v).add(eu)),
                o => o,
            }
        }
        // a / b - r = (a - r·b) / b.
        AluOp::Div if b != F::ZERO => {
            let rem = (-r).fma(b, a);
            if b.negative() {
                sign(rem).reverse()
            } else {
                sign(rem)
            }
        }
        AluOp::Rcp if a != F::ZERO => {
            let rem = (-r).fma(a, F::ONE);
            if a.negative() {
                sign(rem).reverse()
            } else {
                sign(rem)
            }
        }
        // sqrt(a) - r has the sign of a - r².
        AluOp::Sqrt if a >= F::ZERO => sign((-r).fma(r, a)),
        _ => return None,
    })
}

/// The result `r` (round to nearest) of `op(a, b, c)` in the directed mode `dir`.
pub(super) fn round<F: Float>(op: AluOp, dir: Dir, a: F, b: F, c: F, r: F) -> F {
    let Some(ex) = excess(op, a, b, c, r) else {
        return r;
    };
    match (dir, ex) {
        // An exact zero sum is -0 when rounding down (IEEE 754), +0 otherwise.
        (Dir::Down, Ordering::Equal)
            if r == F::ZERO && matches!(op, AluOp::Add | AluOp::Sub | AluOp::Mad | AluOp::Fma) =>
        {
            -F::ZERO
        }
        (_, Ordering::Equal) | (Dir::Near, _) => r,
        (Dir::Zero, Ordering::Less) if r > F::ZERO => r.step(false),
        (Dir::Zero, Ordering::Greater) if r < F::ZERO => r.step(true),
        (Dir::Down, Ordering::Less) => r.step(false),
        (Dir::Up, Ordering::Greater) => r.step(true),
        _ => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `a op b` in each directed mode against a reference from the exact value (sums and products of
    /// these f32 operands are exact in f64): the nearest f32, stepped toward the mode's direction when
    /// it lies on the wrong side.
    fn check(op: AluOp, a: f32, b: f32) {
        let r = match op {
            AluOp::Add => a + b,
            AluOp::Sub => a - b,
            _ => a * b,
        };
        let exact = match op {
            AluOp::Add => a as f64 + b as f64,
            AluOp::Sub => a as f64 - b as f64,
            _ => a as f64 * b as f64,
        };
        let rn = exact as f32;
        assert_eq!(r, rn, "round to nearest");
        for dir in [Dir::Zero, Dir::Down, Dir::Up] {
            let want = match dir {
                Dir::Down if rn as f64 > exact => rn.next_down(),
                Dir::Up if (rn as f64) < exact => rn.next_up(),
                Dir::Zero if (rn as f64).abs() > exact.abs() => {
                    if rn > 0.0 {
                        rn.next_down()
                    } else {
                        rn.next_up()
                    }
                }
                _ => rn,
            };
            let got = round(op, dir, a, b, 0.0, r);
            assert_eq!(got, want, "{op:?} {dir:?} {a:e} {b:e}, exact {exact:e}");
        }
    }

    #[test]
    fn directed_results_bracket_the_exact_value() {
        let mut s = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for _ in 0..20_000 {
            let mut f = || {
                let m = (next() % (1 << 24)) as f32 / (1 << 23) as f32;
                let e = (next() % 20) as i32 - 10;
                let v = m * 2f32.powi(e);
                if next() % 2 == 0 {
                    v
                } else {
                    -v
                }
            };
            let (a, b) = (f(), f());
            for op in [AluOp::Add, AluOp::Sub, AluOp::Mul] {
                check(op, a, b);
            }
        }
        // 1 + 2^-60: round to nearest gives 1; up gives the next float.
        let tiny = 2f32.powi(-60);
        assert_eq!(
            round(AluOp::Add, Dir::Up, 1.0f32, tiny, 0.0, 1.0),
            1.0f32.next_up()
        );
        assert_eq!(
            round(AluOp::Add, Dir::Zero, 1.0f32, -tiny, 0.0, 1.0),
            1.0f32.next_down()
        );
        assert_eq!(
            round(AluOp::Add, Dir::Down, 1.0f32, -1.0, 0.0, 0.0).to_bits(),
            (-0.0f32).to_bits()
        );
        // 1/3 rounded down and up bracket it; sqrt(2) too.
        let third = 1.0f32 / 3.0;
        let (d, u) = (
            round(AluOp::Div, Dir::Down, 1.0f32, 3.0, 0.0, third),
            round(AluOp::Div, Dir::Up, 1.0f32, 3.0, 0.0, third),
        );
        assert!((d as f64) < 1.0 / 3.0 && (u as f64) > 1.0 / 3.0 && d.next_up() == u);
        let s2 = 2.0f32.sqrt();
        let (d, u) = (
            round(AluOp::Sqrt, Dir::Down, 2.0f32, 0.0, 0.0, s2),
            round(AluOp::Sqrt, Dir::Up, 2.0f32, 0.0, 0.0, s2),
        );
        assert!((d as f64) < 2f64.sqrt() && (u as f64) > 2f64.sqrt() && d.next_up() == u);
        // Overflow: toward zero keeps the largest finite value.
        assert_eq!(
            round(AluOp::Mul, Dir::Zero, f32::MAX, 2.0, 0.0, f32::INFINITY),
            f32::MAX
        );
        assert_eq!(
            round(AluOp::Mul, Dir::Up, f32::MAX, 2.0, 0.0, f32::INFINITY),
            f32::INFINITY
        );
        // fma: 1 + 2^-30 · 2^-30 rounded up.
        let h = 2f64.powi(-30);
        assert_eq!(round(AluOp::Fma, Dir::Up, h, h, 1.0, 1.0), 1.0f64.next_up());
        assert_eq!(
            round(AluOp::Fma, Dir::Down, -h, h, 1.0, 1.0),
            1.0f64.next_down()
        );
    }
}
