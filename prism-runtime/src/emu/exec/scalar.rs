//! Scalar semantics: comparisons and the ALU operations of one lane (integer, f16/bf16, f32, f64).

use super::*;

pub(super) fn f32v(x: u64) -> f32 {
    f32::from_bits(x as u32)
}
pub(super) fn f64v(x: u64) -> f64 {
    f64::from_bits(x)
}

/// `.ftz`: a subnormal f32 becomes a zero of the same sign (PTX ISA: "flushes subnormal inputs and
/// results to sign-preserving zero").
pub(super) fn flush32(x: f32) -> f32 {
    if x.is_subnormal() {
        0f32.copysign(x)
    } else {
        x
    }
}

/// `.ftz` on f64 (`rcp.approx.ftz.f64`, `rsqrt.approx.ftz.f64`).
fn flush64(x: f64) -> f64 {
    if x.is_subnormal() {
        0f64.copysign(x)
    } else {
        x
    }
}

/// A compare operand of type `ty` under `.ftz` (which applies to f32 only).
pub(super) fn ftz_operand(ftz: bool, ty: PtxType, v: u64) -> u64 {
    if ftz && ty == PtxType::F32 {
        flush32(f32v(v)).to_bits() as u64
    } else {
        v
    }
}

/// A `setp`/`set` operand of type `ty` under `.ftz`: f32, and f16 and each half of f16x2 (PTX ISA,
/// half-precision comparison: "flushes subnormal inputs to sign-preserving zero").
pub(super) fn ftz_compare(ftz: bool, ty: PtxType, v: u64) -> u64 {
    let half = |h: u64| if h & 0x7c00 == 0 { h & 0x8000 } else { h };
    match ty {
        PtxType::F16 if ftz => half(v & 0xffff),
        PtxType::F16x2 if ftz => half(v & 0xffff) | half((v >> 16) & 0xffff) << 16,
        _ => ftz_operand(ftz, ty, v),
    }
}

pub(super) fn boolop(o: BoolOp, a: bool, b: bool) -> bool {
    match o {
        BoolOp::And => a && b,
        BoolOp::Or => a || b,
        BoolOp::Xor => a ^ b,
    }
}

pub(super) fn to_f64(ty: PtxType, v: u64) -> f64 {
    match ty {
        PtxType::F32 | PtxType::TF32 => f32v(v) as f64,
        PtxType::F64 => f64v(v),
        PtxType::F16 => half::f16::from_bits(v as u16).to_f64(),
        PtxType::BF16 => half::bf16::from_bits(v as u16).to_f64(),
        _ => 0.0,
    }
}

pub(super) fn compare(c: Cmp, ty: PtxType, a: u64, b: u64) -> bool {
    if ty.is_float() {
        if matches!(ty, PtxType::F16x2 | PtxType::BF16x2) {
            let et = if ty == PtxType::F16x2 {
                PtxType::F16
            } else {
                PtxType::BF16
            };
            return compare(c, et, a & 0xffff, b & 0xffff);
        }
        let (x, y) = (to_f64(ty, a), to_f64(ty, b));
        let nan = x.is_nan() || y.is_nan();
        return match c {
            Cmp::Eq => !nan && x == y,
            Cmp::Ne => !nan && x != y,
            Cmp::Lt | Cmp::Lo => !nan && x < y,
            Cmp::Le | Cmp::Ls => !nan && x <= y,
            Cmp::Gt | Cmp::Hi => !nan && x > y,
            Cmp::Ge | Cmp::Hs => !nan && x >= y,
            Cmp::Equ => nan || x == y,
            Cmp::Neu => nan || x != y,
            Cmp::Ltu => nan || x < y,
            Cmp::Leu => nan || x <= y,
            Cmp::Gtu => nan || x > y,
            Cmp::Geu => nan || x >= y,
            Cmp::Num => !nan,
            Cmp::Nan => nan,
        };
    }
    let bits = if ty == PtxType::Pred { 1 } else { ty.bits() };
    let signed = ty.is_signed() && !matches!(c, Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs);
    let (x, y): (i128, i128) = if signed {
        (sext(a, bits) as i128, sext(b, bits) as i128)
    } else {
        ((a & mask_bits(bits)) as i128, (b & mask_bits(bits)) as i128)
    };
    match c {
        Cmp::Eq | Cmp::Equ => x == y,
        Cmp::Ne | Cmp::Neu => x != y,
        Cmp::Lt | Cmp::Lo | Cmp::Ltu => x < y,
        Cmp::Le | Cmp::Ls | Cmp::Leu => x <= y,
        Cmp::Gt | Cmp::Hi | Cmp::Gtu => x > y,
        Cmp::Ge | Cmp::Hs | Cmp::Geu => x >= y,
        Cmp::Num => true,
        Cmp::Nan => false,
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn alu(op: AluOp, ty: PtxType, m: Mods, a: u64, b: u64, c: u64, d: u64) -> u64 {
    use PtxType::*;
    match ty {
        F32 | TF32 => {
            if matches!(
                op,
                AluOp::TestpFinite
                    | AluOp::TestpInfinite
                    | AluOp::TestpNumber
                    | AluOp::TestpNan
                    | AluOp::TestpNormal
                    | AluOp::TestpSubnormal
            ) {
                return testp(
                    op,
                    f32v(a) as f64,
                    f32v(a).is_normal(),
                    f32v(a).is_subnormal(),
                ) as u64;
            }
            let r = f32_alu(op, m, f32v(a), f32v(b), f32v(c));
            r.to_bits() as u64
        }
        F64 => {
            if matches!(
                op,
                AluOp::TestpFinite
                    | AluOp::TestpInfinite
                    | AluOp::TestpNumber
                    | AluOp::TestpNan
                    | AluOp::TestpNormal
                    | AluOp::TestpSubnormal
            ) {
                return testp(op, f64v(a), f64v(a).is_normal(), f64v(a).is_subnormal()) as u64;
            }
            f64_alu(op, m, f64v(a), f64v(b), f64v(c)).to_bits()
        }
        F16 | BF16 => half_op(ty, op, m, a, b, c) as u64,
        F16x2 | BF16x2 => {
            let et = if ty == F16x2 { F16 } else { BF16 };
            let lo = half_op(et, op, m, a & 0xffff, b & 0xffff, c & 0xffff) as u64;
            let hi = half_op(
                et,
                op,
                m,
                (a >> 16) & 0xffff,
                (b >> 16) & 0xffff,
                (c >> 16) & 0xffff,
            ) as u64;
            lo | hi << 16
        }
        _ => int_alu(op, ty, m, a, b, c, d),
    }
}

pub(super) fn testp(op: AluOp, x: f64, normal: bool, sub: bool) -> bool {
    match op {
        AluOp::TestpFinite => x.is_finite(),
        AluOp::TestpInfinite => x.is_infinite(),
        AluOp::TestpNumber => !x.is_nan(),
        AluOp::TestpNan => x.is_nan(),
        AluOp::TestpNormal => normal,
        _ => sub,
    }
}

/// `.ftz` on f16 (`add.ftz.f16`, `fma.rn.ftz.f16`, ..): a subnormal input or result is a zero of the same
/// sign (PTX ISA, half-precision instructions). bf16 arithmetic has no `.ftz`.
fn flush16(ty: PtxType, m: Mods, v: u64) -> u64 {
    if ty == PtxType::F16 {
        ftz_compare(m.ftz, ty, v)
    } else {
        v
    }
}

pub(super) fn half_op(ty: PtxType, op: AluOp, m: Mods, a: u64, b: u64, c: u64) -> u16 {
    let (a, b, c) = (flush16(ty, m, a), flush16(ty, m, b), flush16(ty, m, c));
    flush16(ty, m, half_op_exact(ty, op, m, a, b, c) as u64) as u16
}

fn half_op_exact(ty: PtxType, op: AluOp, m: Mods, a: u64, b: u64, c: u64) -> u16 {
    let f = |x: u64| to_f64(ty, x) as f32;
    if matches!(op, AluOp::Abs | AluOp::Neg) {
        return match op {
            AluOp::Abs => (a as u16) & 0x7fff,
            _ => (a as u16) ^ 0x8000,
        };
    }
    // Add, multiply and fma are exact or once-rounded in f64, then rounded once to the 16-bit format
    // (through f32 they were rounded twice).
    // A sum far below the other operand is inexact in f64: it is rounded to odd there, which a second
    // rounding to 8 or 11 bits cannot turn into a tie (f64 has more than 2 × 11 + 2 bits).
    let g = |x: u64| to_f64(ty, x);
    let r = match op {
        AluOp::Add => sum_round_odd(g(a), g(b)),
        AluOp::Sub => sum_round_odd(g(a), -g(b)),
        AluOp::Mul => g(a) * g(b),
        // The product of two 16-bit floats is exact in f64.
        AluOp::Mad | AluOp::Fma => sum_round_odd(g(a) * g(b), g(c)),
        _ => f32_alu(op, m, f(a), f(b), f(c)) as f64,
    };
    let r = if matches!(
        op,
        AluOp::Add | AluOp::Sub | AluOp::Mul | AluOp::Mad | AluOp::Fma
    ) {
        f64_saturate(m, r)
    } else {
        r
    };
    // `.relu`: a NaN result is the canonical NaN.
    if r.is_nan() && m.relu {
        return 0x7fff;
    }
    if r.is_nan() {
        return if ty == PtxType::F16 {
            half::f16::from_f64(r).to_bits()
        } else {
            half::bf16::from_f64(r).to_bits()
        };
    }
    super::convert::cvt(ty, PtxType::F64, Rnd::Rn, 0, r.to_bits()) as u16
}

/// `x + y` rounded to odd (the odd one of the two f64 values around the exact sum when it is inexact).
fn sum_round_odd(x: f64, y: f64) -> f64 {
    let s = x + y;
    if !s.is_finite() {
        return s;
    }
    // TwoSum: the exact error of `s`.
    let yv = s - x;
    let err = (x - (s - yv)) + (y - yv);
    if err == 0.0 || s.to_bits() & 1 == 1 {
        return s;
    }
    // `s` is even: the odd neighbour on the side of the exact sum.
    let up = (err > 0.0) == (s > 0.0);
    let bits = s.to_bits();
    if s == 0.0 {
        return f64::from_bits(1).copysign(err);
    }
    f64::from_bits(if up { bits + 1 } else { bits - 1 })
}

/// `.sat` / `.relu` of a 16-bit operation's f64 result (no rounding on the way).
fn f64_saturate(m: Mods, r: f64) -> f64 {
    if m.sat {
        if r.is_nan() || r <= 0.0 {
            0.0
        } else {
            r.min(1.0)
        }
    } else if m.relu && r < 0.0 {
        0.0
    } else {
        r
    }
}

/// `.sat` / `.relu` of a float result when one applies: `None` leaves the result as it is.
fn f32_saturate(m: Mods, r: f32) -> Option<f32> {
    if m.sat {
        // Clamped to [+0.0, 1.0]: -0.0 and NaN become +0.0.
        Some(if r.is_nan() || r <= 0.0 {
            0.0
        } else {
            r.min(1.0)
        })
    } else if m.relu && r.is_nan() {
        Some(f32::NAN)
    } else if m.relu && r < 0.0 {
        Some(0.0)
    } else {
        None
    }
}

/// `min`/`max` (`fminmax` on f32, `fminmax64` on f64): a NaN operand gives the other one, and -0.0 orders
/// below +0.0 (CUDA's `__hmax`/`__hmin`: "+0.0 > -0.0"), whichever operand comes first.
macro_rules! min_max {
    ($name:ident, $t:ty) => {
        pub(super) fn $name(a: $t, b: $t, max: bool) -> $t {
            if a.is_nan() {
                return b;
            }
            if b.is_nan() {
                return a;
            }
            if a == 0.0 && b == 0.0 {
                let neg = if max {
                    a.is_sign_negative() && b.is_sign_negative()
                } else {
                    a.is_sign_negative() || b.is_sign_negative()
                };
                return if neg { -0.0 } else { 0.0 };
            }
            if max {
                a.max(b)
            } else {
                a.min(b)
            }
        }
    };
}
min_max!(fminmax, f32);
min_max!(fminmax64, f64);

/// `min/max{.NaN}.xorsign.abs.f32` (PTX ISA, min/max): the min/max of |a| and |b| under the usual NaN
/// rules, then, unless the result is NaN, the sign bit set to sign(a) ^ sign(b).
fn xorsign_minmax(max: bool, nan: bool, a: f32, b: f32) -> f32 {
    let neg = a.is_sign_negative() != b.is_sign_negative();
    let (a, b) = (a.abs(), b.abs());
    let r = if nan && (a.is_nan() || b.is_nan()) {
        f32::NAN
    } else {
        fminmax(a, b, max)
    };
    if r.is_nan() || !neg {
        r
    } else {
        -r
    }
}

pub(super) fn f32_alu(op: AluOp, m: Mods, a: f32, b: f32, c: f32) -> f32 {
    let (a, b, c) = if m.ftz {
        (flush32(a), flush32(b), flush32(c))
    } else {
        (a, b, c)
    };
    let r = match op {
        AluOp::Add => a + b,
        AluOp::Sub => a - b,
        AluOp::Mul => a * b,
        AluOp::Mad | AluOp::Fma => a.mul_add(b, c),
        AluOp::Div => a / b,
        AluOp::Abs => a.abs(),
        AluOp::Neg => -a,
        AluOp::Min | AluOp::Max if m.xorsign => xorsign_minmax(op == AluOp::Max, m.nan, a, b),
        // `.NaN`: a NaN operand gives the canonical NaN (without it, the other operand).
        AluOp::Min | AluOp::Max if m.nan && (a.is_nan() || b.is_nan()) => f32::NAN,
        AluOp::Min => fminmax(a, b, false),
        AluOp::Max => fminmax(a, b, true),
        AluOp::Rcp => 1.0 / a,
        AluOp::Sqrt => a.sqrt(),
        AluOp::Rsqrt => 1.0 / a.sqrt(),
        AluOp::Ex2 => a.exp2(),
        AluOp::Lg2 => a.log2(),
        AluOp::Sin => a.sin(),
        AluOp::Cos => a.cos(),
        AluOp::Tanh => a.tanh(),
        AluOp::Copysign => b.copysign(a),
        _ => f32::NAN,
    };
    let r = if m.dir == Dir::Near {
        r
    } else {
        super::directed::round(op, m.dir, a, b, c, r)
    };
    let r = if m.ftz { flush32(r) } else { r };
    f32_saturate(m, r).unwrap_or(r)
}

pub(super) fn f64_alu(op: AluOp, m: Mods, a: f64, b: f64, c: f64) -> f64 {
    let (a, b, c) = if m.ftz {
        (flush64(a), flush64(b), flush64(c))
    } else {
        (a, b, c)
    };
    let r = match op {
        AluOp::Add => a + b,
        AluOp::Sub => a - b,
        AluOp::Mul => a * b,
        AluOp::Mad | AluOp::Fma => a.mul_add(b, c),
        AluOp::Div => a / b,
        AluOp::Abs => a.abs(),
        AluOp::Neg => -a,
        AluOp::Min => fminmax64(a, b, false),
        AluOp::Max => fminmax64(a, b, true),
        AluOp::Rcp => 1.0 / a,
        AluOp::Sqrt => a.sqrt(),
        AluOp::Rsqrt => 1.0 / a.sqrt(),
        AluOp::Ex2 => a.exp2(),
        AluOp::Lg2 => a.log2(),
        AluOp::Sin => a.sin(),
        AluOp::Cos => a.cos(),
        AluOp::Tanh => a.tanh(),
        AluOp::Copysign => b.copysign(a),
        _ => f64::NAN,
    };
    let r = if m.dir == Dir::Near {
        r
    } else {
        super::directed::round(op, m.dir, a, b, c, r)
    };
    let r = if m.ftz { flush64(r) } else { r };
    if m.sat {
        // [+0.0, 1.0]: -0.0 and NaN become +0.0.
        if r.is_nan() || r <= 0.0 {
            0.0
        } else {
            r.min(1.0)
        }
    } else {
        r
    }
}

#[allow(clippy::too_many_arguments)]
/// The high half of a `bits`-bit product (signed products of 64-bit values fit i128, unsigned ones u128).
pub(super) fn mul_hi(x: i128, y: i128, bits: u32, signed: bool) -> i128 {
    if signed {
        (x * y) >> bits
    } else {
        ((x as u128 * y as u128) >> bits) as i128
    }
}

pub(super) fn int_alu(op: AluOp, ty: PtxType, m: Mods, a: u64, b: u64, c: u64, d: u64) -> u64 {
    let bits = if ty == PtxType::Pred { 1 } else { ty.bits() };
    let signed = ty.is_signed();
    let mk = mask_bits(bits);
    let iv = |x: u64| -> i128 {
        if signed {
            sext(x, bits) as i128
        } else {
            (x & mk) as i128
        }
    };
    let (x, y, z) = (iv(a), iv(b), iv(c));
    let wide_mk = mask_bits(bits * 2);
    let r: i128 = match op {
        AluOp::Add => {
            let s = x + y;
            if m.sat && signed {
                s.clamp(i32::MIN as i128, i32::MAX as i128)
            } else {
                s
            }
        }
        AluOp::Sub => {
            let s = x - y;
            if m.sat && signed {
                s.clamp(i32::MIN as i128, i32::MAX as i128)
            } else {
                s
            }
        }
        // A u64 x u64 product overflows i128: wrapping keeps its bit pattern, which is what `.hi`/`.lo`
        // take (an overflow check would panic on `mul.lo.u64` of large operands).
        AluOp::Mul => {
            // 64 x 64 unsigned products overflow i128: take them as u128 (the high half by a logical shift).
            let p = x.wrapping_mul(y);
            if m.hi {
                mul_hi(x, y, bits, signed)
            } else if m.wide {
                return (p as u128 as u64) & wide_mk;
            } else {
                p
            }
        }
        AluOp::Mad => {
            let p = x.wrapping_mul(y);
            if m.hi && m.sat && signed && bits == 32 {
                // `mad.hi.sat.s32`: the sum clamped to the s32 range, not wrapped.
                mul_hi(x, y, bits, signed)
                    .wrapping_add(z)
                    .clamp(i32::MIN as i128, i32::MAX as i128)
            } else if m.hi {
                mul_hi(x, y, bits, signed).wrapping_add(z)
            } else if m.wide {
                let cz = if signed {
                    sext(c, bits * 2) as i128
                } else {
                    (c & wide_mk) as i128
                };
                return (p.wrapping_add(cz) as u128 as u64) & wide_mk;
            } else {
                p.wrapping_add(z)
            }
        }
        AluOp::Mul24 | AluOp::Mad24 => mul24(op, signed, m, a, b, z),
        AluOp::Sad => (x - y).abs() + z,
        AluOp::Div => {
            if y == 0 {
                mk as i128
            } else if signed && y == -1 {
                -x
            } else {
                x / y
            }
        }
        AluOp::Rem => {
            if y == 0 {
                x
            } else {
                x % y
            }
        }
        AluOp::Abs => x.abs(),
        AluOp::Neg => -x,
        // `.relu` (signed types): a negative result is zero.
        AluOp::Min if m.relu => x.min(y).max(0),
        AluOp::Max if m.relu => x.max(y).max(0),
        AluOp::Min => x.min(y),
        AluOp::Max => x.max(y),
        AluOp::And => ((a & b) & mk) as i128,
        AluOp::Or => ((a | b) & mk) as i128,
        AluOp::Xor => ((a ^ b) & mk) as i128,
        AluOp::Not => ((!a) & mk) as i128,
        AluOp::Cnot => ((a & mk) == 0) as i128,
        AluOp::Shl => {
            let s = (b & 0xffff_ffff) as u32;
            if s >= bits {
                0
            } else {
                ((a << s) & mk) as i128
            }
        }
        AluOp::Shr => {
            let s = (b & 0xffff_ffff) as u32;
            if signed {
                x >> s.min(bits - 1)
            } else if s >= bits {
                0
            } else {
                ((a & mk) >> s) as i128
            }
        }
        AluOp::Popc => (a & mk).count_ones() as i128,
        AluOp::Clz => ((a & mk).leading_zeros() - (64 - bits)) as i128,
        AluOp::Brev => ((a & mk).reverse_bits() >> (64 - bits)) as i128,
        AluOp::Bmsk => bmsk(m, a, b),
        AluOp::Bfe | AluOp::Bfi | AluOp::Prmt | AluOp::Lop3 | AluOp::ShfL | AluOp::ShfR => {
            return bit_op(op, bits, signed, m, a, b, c, d);
        }
        AluOp::Bfind | AluOp::BfindShiftAmt => bfind(op, signed, bits, mk, a, x),
        AluOp::Szext | AluOp::Fns | AluOp::Dp4a(..) | AluOp::Dp2a(..) | AluOp::PrmtMode(_) => {
            return misc::alu_misc(op, ty, m, a, b, c);
        }
        _ => 0,
    };
    (r as u128 as u64) & mk
}

/// `mul24` / `mad24`: the product of the low 24 bits (its bits 16..48 with `.hi`), plus `z` for `mad24`.
fn mul24(op: AluOp, signed: bool, m: Mods, a: u64, b: u64, z: i128) -> i128 {
    let t = |v: u64| -> i128 {
        if signed {
            sext(v & 0xff_ffff, 24) as i128
        } else {
            (v & 0xff_ffff) as i128
        }
    };
    let p = t(a) * t(b);
    let p = if m.hi { p >> 16 } else { p };
    if op == AluOp::Mad24 && m.hi && m.sat && signed {
        // `mad24.hi.sat.s32` clamps to the s32 range.
        (p + z).clamp(i32::MIN as i128, i32::MAX as i128)
    } else if op == AluOp::Mad24 {
        p + z
    } else {
        p
    }
}

/// `bmsk`: a mask of `b` bits from bit `a` (wrapped or clamped to 32).
fn bmsk(m: Mods, a: u64, b: u64) -> i128 {
    // PTX ISA bmsk: `.wrap` takes position and width mod 32; `.clamp` clamps both to 32.
    let (pos, width) = if m.clamp {
        ((a as u32).min(32), (b as u32).min(32))
    } else {
        ((a as u32) & 31, (b as u32) & 31)
    };
    let mask = if width >= 32 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    ((mask << pos) & 0xffff_ffff) as i128
}

/// `bfind`: the position of the most significant non-sign bit (or its shift amount).
fn bfind(op: AluOp, signed: bool, bits: u32, mk: u64, a: u64, x: i128) -> i128 {
    let v = if signed && x < 0 { !a & mk } else { a & mk };
    if v == 0 {
        0xffff_ffff
    } else {
        let pos = 63 - v.leading_zeros() as i128;
        if op == AluOp::BfindShiftAmt {
            bits as i128 - 1 - pos
        } else {
            pos
        }
    }
}

/// The bit-field and byte operations of `int_alu` (`bfe`, `bfi`, `prmt`, `lop3`, `shf`), on raw bits.
#[allow(clippy::too_many_arguments)]
fn bit_op(op: AluOp, bits: u32, signed: bool, m: Mods, a: u64, b: u64, c: u64, d: u64) -> u64 {
    let mk = mask_bits(bits);
    match op {
        AluOp::Bfe => {
            let pos = (b & 0xff) as u32;
            let len = (c & 0xff) as u32;
            let msb = bits - 1;
            let sbit = if signed && len != 0 {
                (a >> (pos + len - 1).min(msb)) & 1
            } else {
                0
            };
            let mut r = 0u64;
            for i in 0..bits {
                let bit = if i < len && pos + i <= msb {
                    (a >> (pos + i)) & 1
                } else {
                    sbit
                };
                r |= bit << i;
            }
            r & mk
        }
        AluOp::Bfi => {
            // bfi d, f(a), b, pos(c), len(d)
            let pos = (c & 0xff) as u32;
            let len = (d & 0xff) as u32;
            let mut r = b & mk;
            for i in 0..len {
                if pos + i >= bits {
                    break;
                }
                let bit = (a >> i) & 1;
                r = (r & !(1 << (pos + i))) | (bit << (pos + i));
            }
            r
        }
        AluOp::Prmt => {
            let bytes = (a as u32 as u64) | ((b as u32 as u64) << 32);
            let mut r = 0u64;
            for i in 0..4 {
                let sel = (c >> (4 * i)) & 0xf;
                let mut byte = (bytes >> (8 * (sel & 7))) & 0xff;
                if sel & 8 != 0 {
                    byte = if byte & 0x80 != 0 { 0xff } else { 0 };
                }
                r |= byte << (8 * i);
            }
            r
        }
        AluOp::Lop3 => {
            let imm = d & 0xff;
            let mut r = 0u64;
            for i in 0..8 {
                if (imm >> i) & 1 == 1 {
                    let ta = if i & 4 != 0 { a } else { !a };
                    let tb = if i & 2 != 0 { b } else { !b };
                    let tc = if i & 1 != 0 { c } else { !c };
                    r |= ta & tb & tc;
                }
            }
            r & mk
        }
        // ShfL / ShfR: the caller passes only the operations above and these.
        _ => {
            let n = if m.clamp {
                (c as u32).min(32)
            } else {
                (c as u32) & 31
            };
            let v = (a as u32 as u64) | ((b as u32 as u64) << 32);
            if op == AluOp::ShfL {
                ((v << n) >> 32) & 0xffff_ffff
            } else {
                (v >> n) & 0xffff_ffff
            }
        }
    }
}
