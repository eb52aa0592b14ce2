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

/// Rounds an f64 to f32 with a directed rounding mode.
pub(super) fn f64_to_f32(x: f64, r: Rnd) -> f32 {
    let n = x as f32;
    if n.is_nan() || n.is_infinite() || n as f64 == x {
        return n;
    }
    let up = |v: f32| {
        if v >= 0.0 {
            f32::from_bits(v.to_bits() + 1)
        } else if v == 0.0 {
            f32::from_bits(1)
        } else {
            f32::from_bits(v.to_bits() - 1)
        }
    };
    let down = |v: f32| {
        if v > 0.0 {
            f32::from_bits(v.to_bits() - 1)
        } else if v == 0.0 {
            -f32::from_bits(1)
        } else {
            f32::from_bits(v.to_bits() + 1)
        }
    };
    match r {
        Rnd::Rz => {
            if (n as f64).abs() > x.abs() {
                if n > 0.0 {
                    down(n)
                } else {
                    up(n)
                }
            } else {
                n
            }
        }
        Rnd::Rm => {
            if n as f64 > x {
                down(n)
            } else {
                n
            }
        }
        Rnd::Rp => {
            if (n as f64) < x {
                up(n)
            } else {
                n
            }
        }
        _ => n,
    }
}

pub(crate) fn cvt(dty: PtxType, sty: PtxType, rnd: Rnd, sat: bool, a: u64) -> u64 {
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
        let v = if dty.is_signed() {
            x as i64 as u64
        } else {
            x as u64
        };
        return v & mask_bits(db);
    }
    // destination float
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
    let x = if sat {
        if x.is_nan() {
            0.0
        } else {
            x.clamp(0.0, 1.0)
        }
    } else {
        x
    };
    match dty {
        F64 => x.to_bits(),
        F32 => f64_to_f32(x, rnd).to_bits() as u64,
        TF32 => {
            let b = (x as f32).to_bits();
            // round to nearest, ties away (cvt.rna.tf32.f32)
            let r = b.wrapping_add(0x1000) & 0xffff_e000;
            if (x as f32).is_finite() {
                r as u64
            } else {
                b as u64
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
                AtomOp::Min => o.min(v).to_bits(),
                AtomOp::Max => o.max(v).to_bits(),
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
