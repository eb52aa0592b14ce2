//! Conversions (`cvt` with rounding and saturation) and atomic operations.

use super::*;

pub(super) fn round_f64(x: f64, r: Rnd) -> f64 {
    match r {
        Rnd::Rni | Rnd::Rn => x.round_ties_even(),
        Rnd::Rzi | Rnd::Rz => x.trunc(),
        Rnd::Rmi | Rnd::Rm => x.floor(),
        Rnd::Rpi | Rnd::Rp => x.ceil(),
        Rnd::Rna => x.round(),
        Rnd::None => x,
    }
}

/// A binary floating-point format: exponent and stored mantissa bits.
#[derive(Clone, Copy)]
struct Format {
    ebits: u32,
    mbits: u32,
}

const HALF: Format = Format {
    ebits: 5,
    mbits: 10,
};
const BFLOAT: Format = Format { ebits: 8, mbits: 7 };
const SINGLE: Format = Format {
    ebits: 8,
    mbits: 23,
};
const DOUBLE: Format = Format {
    ebits: 11,
    mbits: 52,
};

/// The exact value `(-1)^neg · m · 2^e` rounded once to format `f` in mode `r` (PTX's `.rn`, `.rz`,
/// `.rm`, `.rp`, `.rna`; no mode is `.rn`): the result's bits. Overflow gives infinity or the largest
/// finite value as the mode (or `satfinite`) says; gradual underflow to subnormals.
fn round_exact(f: Format, neg: bool, m: u128, e: i32, r: Rnd, satfinite: bool) -> u64 {
    let bias = (1i32 << (f.ebits - 1)) - 1;
    let (emin, emax) = (1 - bias, bias);
    let mb = f.mbits as i32;
    let sign = (neg as u64) << (f.ebits + f.mbits);
    if m == 0 {
        return sign;
    }
    let top = e + (127 - m.leading_zeros() as i32);
    // The quantum (last mantissa bit) of the result's binade, no finer than the subnormals'.
    let q = top.max(emin) - mb;
    let shift = q - e;
    let mut kept = if shift <= 0 {
        m << (-shift) as u32
    } else {
        let (kept, rem, half) = if shift >= 128 {
            (
                0,
                m,
                if shift == 128 {
                    1u128 << 127
                } else {
                    u128::MAX
                },
            )
        } else {
            (m >> shift, m & ((1u128 << shift) - 1), 1u128 << (shift - 1))
        };
        let exact_half = shift <= 128 && rem == half;
        let up = match r {
            Rnd::Rz | Rnd::Rzi => false,
            Rnd::Rm | Rnd::Rmi => neg && rem != 0,
            Rnd::Rp | Rnd::Rpi => !neg && rem != 0,
            Rnd::Rna => rem > half || exact_half,
            _ => rem > half && !exact_half || exact_half && kept & 1 == 1,
        };
        kept + up as u128
    };
    if kept == 0 {
        return sign;
    }
    let exp = q + (127 - kept.leading_zeros() as i32);
    if kept >> (mb + 1) != 0 {
        kept >>= 1;
    }
    let max_finite = ((((1u64 << f.ebits) - 2) << f.mbits) | ((1u64 << f.mbits) - 1)) | sign;
    if exp > emax {
        let to_inf = match r {
            Rnd::Rz | Rnd::Rzi => false,
            Rnd::Rm | Rnd::Rmi => neg,
            Rnd::Rp | Rnd::Rpi => !neg,
            _ => true,
        };
        return if to_inf && !satfinite {
            sign | ((1u64 << f.ebits) - 1) << f.mbits
        } else {
            max_finite
        };
    }
    if exp < emin {
        return sign | kept as u64;
    }
    sign | ((exp + bias) as u64) << f.mbits | (kept as u64 & ((1u64 << f.mbits) - 1))
}

/// A finite f64 as `(negative, m, e)` with value `(-1)^negative · m · 2^e`, exactly.
fn f64_parts(x: f64) -> (bool, u128, i32) {
    let b = x.to_bits();
    let (ef, mant) = (((b >> 52) & 0x7ff) as i32, b & ((1u64 << 52) - 1));
    let neg = b >> 63 != 0;
    if ef == 0 {
        (neg, mant as u128, -1074)
    } else {
        (neg, (mant | 1u64 << 52) as u128, ef - 1075)
    }
}

/// Rounds an f64 to f32 with a rounding mode (once, exactly).
pub(super) fn f64_to_f32(x: f64, r: Rnd) -> f32 {
    if !x.is_finite() {
        return x as f32;
    }
    let (neg, m, e) = f64_parts(x);
    f32::from_bits(round_exact(SINGLE, neg, m, e, r, false) as u32)
}

/// `cvt.rnd.sat.dty.sty` of `a` (`sat`: the `CVT_*` flags). `.ftz` (PTX ISA: "`cvt.ftz.dtype.f32`
/// flushes subnormal inputs to sign-preserving zero; `cvt.ftz.f32.atype` flushes subnormal results")
/// applies to an f32 source and an f32 result.
pub(crate) fn cvt(dty: PtxType, sty: PtxType, rnd: Rnd, flags: u8, a: u64) -> u64 {
    if flags & CVT_FTZ == 0 {
        return cvt_exact(dty, sty, rnd, flags, a);
    }
    let a = ftz_operand(true, sty, a);
    let r = cvt_exact(dty, sty, rnd, flags, a);
    ftz_operand(true, dty, r)
}

/// `cvt` without `.ftz`.
fn cvt_exact(dty: PtxType, sty: PtxType, rnd: Rnd, flags: u8, a: u64) -> u64 {
    let sat = flags & CVT_SAT != 0;
    use PtxType::*;
    let sfloat = sty.is_float();
    let dfloat = dty.is_float();
    if !sfloat && !dfloat {
        let sb = sty.bits();
        let v: i128 = if sty.is_signed() {
            sext(a, sb) as i128
        } else {
            (a & mask_bits(sb)) as i128
        };
        let db = dty.bits();
        let v = if sat {
            let (lo, hi) = if dty.is_signed() {
                (-(1i128 << (db - 1)), (1i128 << (db - 1)) - 1)
            } else {
                (0, (1i128 << db) - 1)
            };
            v.clamp(lo, hi)
        } else {
            v
        };
        let r = (v as u128 as u64) & mask_bits(db);
        return if dty.is_signed() {
            sext(r, db) as u64 & mask_bits(db.max(32))
        } else {
            r
        };
    }
    if sfloat && !dfloat {
        let x = to_f64(sty, a);
        if x.is_nan() {
            return 0;
        }
        let x = round_f64(x, if rnd == Rnd::None { Rnd::Rzi } else { rnd });
        let db = dty.bits();
        let (lo, hi) = if dty.is_signed() {
            (-(2f64.powi(db as i32 - 1)), 2f64.powi(db as i32 - 1) - 1.0)
        } else {
            (0.0, 2f64.powi(db as i32) - 1.0)
        };
        let x = x.clamp(lo, hi);
        if dty.is_signed() {
            // Sign-extended to (at least) 32 bits like the integer forms: `cvt.rni.s8.f32` into a `.b32`
            // register holds -2, not 254.
            return (x as i64 as u64) & mask_bits(db.max(32));
        }
        return (x as u64) & mask_bits(db);
    }
    // destination float: the source's exact value (an integer of up to 64 bits, or any float as an f64)
    // rounded once to the destination format.
    let format = match dty {
        F16 => Some(HALF),
        BF16 => Some(BFLOAT),
        F32 => Some(SINGLE),
        F64 => Some(DOUBLE),
        _ => None,
    };
    let satfinite = flags & CVT_SATFINITE != 0;
    if !sfloat {
        let v: i128 = if sty.is_signed() {
            sext(a, sty.bits()) as i128
        } else {
            (a & mask_bits(sty.bits())) as i128
        };
        let v = if flags & CVT_RELU != 0 { v.max(0) } else { v };
        if let (Some(f), false) = (format, sat) {
            return round_exact(f, v < 0, v.unsigned_abs(), 0, rnd, satfinite);
        }
    }
    let x: f64 = if sfloat {
        to_f64(sty, a)
    } else if sty.is_signed() {
        sext(a, sty.bits()) as f64
    } else {
        (a & mask_bits(sty.bits())) as f64
    };
    let x = if matches!(rnd, Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi) {
        round_f64(x, rnd)
    } else {
        x
    };
    if x.is_nan() && flags & CVT_RELU != 0 {
        // PTX ISA (cvt, `.relu`): for 16-bit and tf32 destinations "NaN results are converted to
        // canonical NaN" (0x7FFF; 0x7FFFFFFF in tf32's 32-bit container), whatever the source NaN's payload.
        match dty {
            F16 | BF16 => return 0x7fff,
            TF32 => return 0x7fff_ffff,
            _ => {}
        }
    }
    let x = if sat {
        // [+0.0, 1.0]: -0.0 and NaN become +0.0.
        if x.is_nan() || x <= 0.0 {
            0.0
        } else {
            x.min(1.0)
        }
    } else if flags & CVT_RELU != 0 && x < 0.0 {
        0.0
    } else {
        x
    };
    if let (Some(f), true) = (format, x.is_finite()) {
        let (neg, m, e) = f64_parts(x);
        return round_exact(f, neg, m, e, rnd, satfinite);
    }
    if satfinite && x.is_infinite() {
        if let Some(f) = format {
            let (neg, m, e) = f64_parts(f64::MAX.copysign(x));
            return round_exact(f, neg, m, e, Rnd::Rz, true);
        }
    }
    match dty {
        F64 => x.to_bits(),
        F32 => f64_to_f32(x, rnd).to_bits() as u64,
        TF32 => {
            // An f32 with 10 explicit mantissa bits: the low 13 bits rounded off the magnitude (sign and
            // magnitude, so adding to the bits rounds away from zero).
            let b = (x as f32).to_bits();
            if !(x as f32).is_finite() {
                return if satfinite && x.is_infinite() {
                    (0x7F7F_E000 | (b & 0x8000_0000)) as u64
                } else {
                    b as u64
                };
            }
            let r = match rnd {
                Rnd::Rz => b & 0xffff_e000,
                // Ties to even.
                Rnd::Rn => b.wrapping_add(0xFFF + ((b >> 13) & 1)) & 0xffff_e000,
                // `.rna`: ties away from zero.
                _ => b.wrapping_add(0x1000) & 0xffff_e000,
            };
            if satfinite && r & 0x7FFF_FFFF == 0x7F80_0000 {
                (0x7F7F_E000 | (r & 0x8000_0000)) as u64
            } else {
                r as u64
            }
        }
        F16 => half::f16::from_f64(x).to_bits() as u64,
        BF16 => half::bf16::from_f64(x).to_bits() as u64,
        _ => (x as f32).to_bits() as u64,
    }
}

pub(crate) fn atomic_op(op: AtomOp, ty: PtxType, old: u64, x: u64, y: u64) -> u64 {
    let bits = ty.bits();
    let mk = mask_bits(bits);
    match ty {
        PtxType::F32 => {
            let (o, v) = (f32v(old), f32v(x));
            let r = match op {
                AtomOp::Add => o + v,
                AtomOp::Min => fminmax(o, v, false),
                AtomOp::Max => fminmax(o, v, true),
                AtomOp::Exch => v,
                AtomOp::Cas => {
                    return if old as u32 == x as u32 { y & mk } else { old };
                }
                _ => return int_atomic(op, PtxType::B32, old, x, y),
            };
            r.to_bits() as u64
        }
        PtxType::F64 => {
            let (o, v) = (f64v(old), f64v(x));
            match op {
                AtomOp::Add => (o + v).to_bits(),
                AtomOp::Min => fminmax64(o, v, false).to_bits(),
                AtomOp::Max => fminmax64(o, v, true).to_bits(),
                _ => int_atomic(op, PtxType::B64, old, x, y),
            }
        }
        PtxType::F16 | PtxType::BF16 | PtxType::F16x2 | PtxType::BF16x2 => {
            misc::atomic_half(op, ty, old, x)
        }
        _ => int_atomic(op, ty, old, x, y),
    }
}

pub(super) fn int_atomic(op: AtomOp, ty: PtxType, old: u64, x: u64, y: u64) -> u64 {
    let bits = ty.bits();
    let mk = mask_bits(bits);
    let (o, v) = (old & mk, x & mk);
    let r = match op {
        AtomOp::Add => o.wrapping_add(v),
        AtomOp::Min => {
            if ty.is_signed() {
                if sext(o, bits) <= sext(v, bits) {
                    o
                } else {
                    v
                }
            } else {
                o.min(v)
            }
        }
        AtomOp::Max => {
            if ty.is_signed() {
                if sext(o, bits) >= sext(v, bits) {
                    o
                } else {
                    v
                }
            } else {
                o.max(v)
            }
        }
        AtomOp::Inc => {
            if o >= v {
                0
            } else {
                o + 1
            }
        }
        AtomOp::Dec => {
            if o == 0 || o > v {
                v
            } else {
                o - 1
            }
        }
        AtomOp::Cas => {
            if o == v {
                y
            } else {
                o
            }
        }
        AtomOp::Exch => v,
        AtomOp::And => o & v,
        AtomOp::Or => o | v,
        AtomOp::Xor => o ^ v,
    };
    r & mk
}
