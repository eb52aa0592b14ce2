//! Arithmetic and comparisons over all 32 lanes at once (issue 12): straight loops over lane arrays that
//! the compiler vectorises, for the operation/type combinations that dominate real kernels. Each computes
//! bit for bit what the per-lane `alu` / `compare` of `exec/scalar.rs` computes (the unit tests below compare
//! them on random and edge-case inputs); any other combination returns `false` and the caller falls back to
//! the per-lane functions. Lanes outside the executing group are computed too (the operations are pure
//! and cannot panic) and then not written back.

use super::{AluOp, Cmp, Dir, Mods, PtxType};

type Lanes = [u64; 32];

#[inline(always)]
fn map1(x: &Lanes, out: &mut Lanes, f: impl Fn(u64) -> u64) {
    for (o, a) in out.iter_mut().zip(x) {
        *o = f(*a);
    }
}

#[inline(always)]
fn map2(x: &Lanes, y: &Lanes, out: &mut Lanes, f: impl Fn(u64, u64) -> u64) {
    for l in 0..32 {
        out[l] = f(x[l], y[l]);
    }
}

#[inline(always)]
fn map3(x: &Lanes, y: &Lanes, z: &Lanes, out: &mut Lanes, f: impl Fn(u64, u64, u64) -> u64) {
    for l in 0..32 {
        out[l] = f(x[l], y[l], z[l]);
    }
}

fn mask_bits(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Sign extension of the low `bits` bits (1 ≤ bits ≤ 64).
#[inline]
fn sext(v: u64, bits: u32) -> i64 {
    ((v << (64 - bits)) as i64) >> (64 - bits)
}

#[inline]
fn f32v(x: u64) -> f32 {
    f32::from_bits(x as u32)
}

#[inline]
fn f32b(x: f32) -> u64 {
    x.to_bits() as u64
}

/// An f32 operation over every lane (generic, so each operation is inlined into its own loop).
#[inline(always)]
fn f32_map(x: &Lanes, y: &Lanes, z: &Lanes, out: &mut Lanes, g: impl Fn(f32, f32, f32) -> f32) {
    map3(x, y, z, out, |a, b, c| f32b(g(f32v(a), f32v(b), f32v(c))))
}

/// An f64 operation over every lane.
#[inline(always)]
fn f64_map(x: &Lanes, y: &Lanes, z: &Lanes, out: &mut Lanes, g: impl Fn(f64, f64, f64) -> f64) {
    map3(x, y, z, out, |a, b, c| {
        g(f64::from_bits(a), f64::from_bits(b), f64::from_bits(c)).to_bits()
    })
}

/// The one-operation integer lanes (`add`, `sub` and the bitwise operations, unmodified), inline in the
/// caller's (baseline) build; false for anything else, `out` untouched. SSE2 has these operations on
/// 64-bit lanes, and for them the call into `alu_lanes`'s AVX2 build cost more than its wider vectors
/// gained (5 % on a chain of adds). The same bits as `alu_lanes` (the tests compare them).
#[inline(always)]
pub(super) fn simple_int_lanes(
    op: AluOp,
    ty: PtxType,
    m: Mods,
    x: &Lanes,
    y: &Lanes,
    out: &mut Lanes,
) -> bool {
    use PtxType::*;
    if !matches!(ty, U16 | S16 | B16 | U32 | S32 | B32 | U64 | S64 | B64) || m != Mods::default() {
        return false;
    }
    one_op_lanes(op, mask_bits(ty.bits()), x, y, out)
}

/// `add`, `sub`, `and`, `or`, `xor`, `not` of integer lanes kept to the bits of `mk`; false (`out`
/// untouched) for any other operation.
#[inline(always)]
fn one_op_lanes(op: AluOp, mk: u64, x: &Lanes, y: &Lanes, out: &mut Lanes) -> bool {
    match op {
        AluOp::Add => map2(x, y, out, |a, b| a.wrapping_add(b) & mk),
        AluOp::Sub => map2(x, y, out, |a, b| a.wrapping_sub(b) & mk),
        AluOp::And => map2(x, y, out, |a, b| a & b & mk),
        AluOp::Or => map2(x, y, out, |a, b| (a | b) & mk),
        AluOp::Xor => map2(x, y, out, |a, b| (a ^ b) & mk),
        AluOp::Not => map1(x, out, |a| !a & mk),
        _ => return false,
    }
    true
}

multiversion! {
/// `out[l] = op(x[l], y[l], z[l])` for every lane when (op, ty, mods) is one of the covered combinations;
/// false (out untouched) otherwise.
pub(super) fn alu_lanes / alu_lanes_on(
    op: AluOp,
    ty: PtxType,
    m: Mods,
    x: &Lanes,
    y: &Lanes,
    z: &Lanes,
    out: &mut Lanes,
) -> bool {
    use PtxType::*;
    match ty {
        U16 | S16 | B16 | U32 | S32 | B32 | U64 | S64 | B64 => int_lanes(op, ty, m, x, y, z, out),
        // Predicate logic (`and.pred`, `or.pred`, ...): one bit per lane.
        Pred if m == Mods::default() => {
            match op {
                AluOp::And => map2(x, y, out, |a, b| a & b & 1),
                AluOp::Or => map2(x, y, out, |a, b| (a | b) & 1),
                AluOp::Xor => map2(x, y, out, |a, b| (a ^ b) & 1),
                AluOp::Not => map1(x, out, |a| !a & 1),
                _ => return false,
            }
            true
        }
        F32 if !m.sat && !m.relu && !m.nan && !m.ftz && !m.xorsign && m.dir == Dir::Near => {
            match op {
                AluOp::Add => f32_map(x, y, z, out, |a, b, _| a + b),
                AluOp::Sub => f32_map(x, y, z, out, |a, b, _| a - b),
                AluOp::Mul => f32_map(x, y, z, out, |a, b, _| a * b),
                AluOp::Mad | AluOp::Fma => f32_map(x, y, z, out, |a, b, c| a.mul_add(b, c)),
                AluOp::Div => f32_map(x, y, z, out, |a, b, _| a / b),
                AluOp::Neg => f32_map(x, y, z, out, |a, _, _| -a),
                AluOp::Abs => f32_map(x, y, z, out, |a, _, _| a.abs()),
                AluOp::Rcp => f32_map(x, y, z, out, |a, _, _| 1.0 / a),
                AluOp::Sqrt => f32_map(x, y, z, out, |a, _, _| a.sqrt()),
                AluOp::Min => f32_map(x, y, z, out, |a, b, _| super::fminmax(a, b, false)),
                AluOp::Max => f32_map(x, y, z, out, |a, b, _| super::fminmax(a, b, true)),
                _ => return false,
            }
            true
        }
        F64 if !m.sat && !m.ftz && m.dir == Dir::Near => {
            match op {
                AluOp::Add => f64_map(x, y, z, out, |a, b, _| a + b),
                AluOp::Sub => f64_map(x, y, z, out, |a, b, _| a - b),
                AluOp::Mul => f64_map(x, y, z, out, |a, b, _| a * b),
                AluOp::Mad | AluOp::Fma => f64_map(x, y, z, out, |a, b, c| a.mul_add(b, c)),
                AluOp::Div => f64_map(x, y, z, out, |a, b, _| a / b),
                AluOp::Neg => f64_map(x, y, z, out, |a, _, _| -a),
                AluOp::Abs => f64_map(x, y, z, out, |a, _, _| a.abs()),
                _ => return false,
            }
            true
        }
        _ => false,
    }
}
}

#[inline(always)]
fn int_lanes(
    op: AluOp,
    ty: PtxType,
    m: Mods,
    x: &Lanes,
    y: &Lanes,
    z: &Lanes,
    out: &mut Lanes,
) -> bool {
    let bits = ty.bits();
    let mk = mask_bits(bits);
    let signed = ty.is_signed();
    let plain = m == Mods::default();
    match op {
        AluOp::Add | AluOp::Sub if plain => return one_op_lanes(op, mk, x, y, out),
        AluOp::And | AluOp::Or | AluOp::Xor | AluOp::Not => return one_op_lanes(op, mk, x, y, out),
        // Integer division lane by lane in 64-bit hardware division (the per-lane `alu` divides in
        // i128, a library call): the same results, division by zero included (`scalar.rs` `int_alu`:
        // a zero divisor gives all ones for `div` and the dividend for `rem`; `div` by -1 negates).
        // Signed 64-bit operands stay on the per-lane path (i64::MIN / -1).
        AluOp::Div | AluOp::Rem if plain && (!signed || bits <= 32) => {
            let div = op == AluOp::Div;
            if signed {
                map2(x, y, out, |a, b| {
                    let (sx, sy) = (sext(a, bits), sext(b, bits));
                    let r = match (sy, div) {
                        (0, true) => mk as i64,
                        (0, false) => sx,
                        (-1, true) => sx.wrapping_neg(),
                        (_, true) => sx / sy,
                        (_, false) => sx % sy,
                    };
                    r as u64 & mk
                })
            } else {
                map2(x, y, out, |a, b| {
                    let (ux, uy) = (a & mk, b & mk);
                    let r = match (uy, div) {
                        (0, true) => mk,
                        (0, false) => ux,
                        (_, true) => ux / uy,
                        (_, false) => ux % uy,
                    };
                    r & mk
                })
            }
        }
        AluOp::Mul | AluOp::Mad if !m.hi && !m.wide && !m.sat => {
            if op == AluOp::Mul {
                map2(x, y, out, |a, b| a.wrapping_mul(b) & mk)
            } else {
                map3(x, y, z, out, |a, b, c| {
                    a.wrapping_mul(b).wrapping_add(c) & mk
                })
            }
        }
        AluOp::Mul | AluOp::Mad if m.wide && !m.hi && bits <= 32 => {
            let wmk = mask_bits(bits * 2);
            let ext = move |v: u64| -> u64 {
                if signed {
                    sext(v, bits) as u64
                } else {
                    v & mk
                }
            };
            if op == AluOp::Mul {
                map2(x, y, out, |a, b| ext(a).wrapping_mul(ext(b)) & wmk)
            } else {
                map3(x, y, z, out, |a, b, c| {
                    ext(a).wrapping_mul(ext(b)).wrapping_add(c) & wmk
                })
            }
        }
        AluOp::Mul if m.hi && !m.wide && bits == 32 => {
            if signed {
                map2(x, y, out, |a, b| {
                    (((sext(a, 32) * sext(b, 32)) >> 32) as u64) & mk
                })
            } else {
                map2(x, y, out, |a, b| ((a & mk) * (b & mk)) >> 32)
            }
        }
        AluOp::Shl => map2(x, y, out, |a, b| {
            let s = b as u32;
            if s >= bits {
                0
            } else {
                (a << s) & mk
            }
        }),
        AluOp::Shr => {
            if signed {
                map2(x, y, out, |a, b| {
                    ((sext(a, bits) >> (b as u32).min(bits - 1)) as u64) & mk
                })
            } else {
                map2(x, y, out, |a, b| {
                    let s = b as u32;
                    if s >= bits {
                        0
                    } else {
                        (a & mk) >> s
                    }
                })
            }
        }
        AluOp::Min | AluOp::Max if !m.relu => {
            let max = op == AluOp::Max;
            if signed {
                map2(x, y, out, |a, b| {
                    let (p, q) = (sext(a, bits), sext(b, bits));
                    (if max { p.max(q) } else { p.min(q) }) as u64 & mk
                })
            } else {
                map2(x, y, out, |a, b| {
                    let (p, q) = (a & mk, b & mk);
                    if max {
                        p.max(q)
                    } else {
                        p.min(q)
                    }
                })
            }
        }
        _ => return false,
    }
    true
}

/// Outcomes of a comparison, as bits: less, equal, greater, unordered (a NaN operand).
const LT: u64 = 1;
const EQ: u64 = 2;
const GT: u64 = 4;
const UN: u64 = 8;

/// The outcomes for which `cmp` is true (`None`: an unordered test on integers, which the per-lane
/// `compare` handles).
fn outcomes(cmp: Cmp, float: bool) -> Option<u64> {
    Some(match cmp {
        Cmp::Eq => EQ,
        Cmp::Ne if float => LT | GT,
        Cmp::Lt | Cmp::Lo => LT,
        Cmp::Le | Cmp::Ls => LT | EQ,
        Cmp::Gt | Cmp::Hi => GT,
        Cmp::Ge | Cmp::Hs => GT | EQ,
        Cmp::Equ if float => EQ | UN,
        Cmp::Neu if float => LT | GT | UN,
        Cmp::Ltu if float => LT | UN,
        Cmp::Leu if float => LT | EQ | UN,
        Cmp::Gtu if float => GT | UN,
        Cmp::Geu if float => GT | EQ | UN,
        Cmp::Num if float => LT | EQ | GT,
        Cmp::Nan if float => UN,
        // Integers have no unordered outcome: `equ` is `eq`, `neu` is `ne`, and so on.
        Cmp::Equ => EQ,
        Cmp::Ne | Cmp::Neu => LT | GT,
        Cmp::Ltu => LT,
        Cmp::Leu => LT | EQ,
        Cmp::Gtu => GT,
        Cmp::Geu => GT | EQ,
        Cmp::Num | Cmp::Nan => return None,
    })
}

/// 1 where the outcome of comparing each lane is one of `want` (branch-free, so the loop vectorises).
#[inline(always)]
fn by_outcome<T: PartialOrd + Copy>(
    x: &Lanes,
    y: &Lanes,
    out: &mut Lanes,
    want: u64,
    conv: impl Fn(u64) -> T,
) {
    let (wl, we, wg, wu) = (
        want & LT,
        (want & EQ) >> 1,
        (want & GT) >> 2,
        (want & UN) >> 3,
    );
    map2(x, y, out, |a, b| {
        let (a, b) = (conv(a), conv(b));
        let (lt, eq, gt) = ((a < b) as u64, (a == b) as u64, (a > b) as u64);
        let un = 1 ^ (lt | eq | gt);
        (lt & wl) | (eq & we) | (gt & wg) | (un & wu)
    })
}

multiversion! {
/// `out[l] = cmp(x[l], y[l])` (0 or 1) for every lane for integer and f32/f64 comparisons; false otherwise.
pub(super) fn compare_lanes / compare_lanes_on(
    cmp: Cmp,
    ty: PtxType,
    x: &Lanes,
    y: &Lanes,
    out: &mut Lanes,
) -> bool {
    use PtxType::*;
    match ty {
        U16 | S16 | B16 | U32 | S32 | B32 | U64 | S64 | B64 => {
            let bits = ty.bits();
            let mk = mask_bits(bits);
            let signed = ty.is_signed() && !matches!(cmp, Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs);
            let Some(want) = outcomes(cmp, false) else {
                return false;
            };
            if signed {
                by_outcome(x, y, out, want, |v| sext(v, bits));
            } else {
                by_outcome(x, y, out, want, |v| v & mk);
            }
            true
        }
        F32 | F64 => {
            let Some(want) = outcomes(cmp, true) else {
                return false;
            };
            if ty == F32 {
                by_outcome(x, y, out, want, f32v);
            } else {
                by_outcome(x, y, out, want, f64::from_bits);
            }
            true
        }
        _ => false,
    }
}
}

#[cfg(test)]
mod tests {
    use super::super::{alu, compare};
    use super::*;

    fn inputs() -> Vec<u64> {
        let mut v = vec![
            0,
            1,
            2,
            31,
            32,
            33,
            63,
            64,
            0x7f,
            0x80,
            0xff,
            0x7fff,
            0x8000,
            0xffff,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_ffff,
            0x1_0000_0000,
            0x7fff_ffff_ffff_ffff,
            0x8000_0000_0000_0000,
            u64::MAX,
            1.5f32.to_bits() as u64,
            (-2.25f32).to_bits() as u64,
            f32::NAN.to_bits() as u64,
            f32::INFINITY.to_bits() as u64,
            (-0.0f32).to_bits() as u64,
            1e-40f32.to_bits() as u64,
            3.25f64.to_bits(),
            f64::NAN.to_bits(),
            (-1e300f64).to_bits(),
        ];
        let mut s = 0x1234_5678_9abc_def0u64;
        for _ in 0..200 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            v.push(if s & 1 == 0 { s } else { s >> (s % 64) });
        }
        v
    }

    const TYPES: [PtxType; 12] = [
        PtxType::Pred,
        PtxType::U16,
        PtxType::S16,
        PtxType::B16,
        PtxType::U32,
        PtxType::S32,
        PtxType::B32,
        PtxType::U64,
        PtxType::S64,
        PtxType::B64,
        PtxType::F32,
        PtxType::F64,
    ];

    /// The builds to check: the baseline, and AVX2+FMA where this CPU has them (else said and skipped).
    fn builds() -> Vec<bool> {
        if crate::emu::exec::simd::avx2() {
            vec![false, true]
        } else {
            println!(
                "this CPU has no AVX2+FMA: only the baseline build of the lane loops is checked"
            );
            vec![false]
        }
    }

    #[test]
    fn lanes_equal_per_lane_alu() {
        use AluOp::*;
        let ops = [
            Add, Sub, Mul, Mad, Fma, Div, Rem, Neg, Abs, Rcp, Sqrt, Min, Max, And, Or, Xor, Not,
            Shl, Shr,
        ];
        let mods = [
            Mods::default(),
            Mods {
                wide: true,
                ..Mods::default()
            },
            Mods {
                hi: true,
                ..Mods::default()
            },
            Mods {
                sat: true,
                ..Mods::default()
            },
        ];
        let v = inputs();
        let mut covered = 0;
        for ty in TYPES {
            for op in ops {
                for m in mods {
                    for chunk in 0..v.len() / 32 {
                        let mut x = [0u64; 32];
                        let mut y = [0u64; 32];
                        let mut z = [0u64; 32];
                        for l in 0..32 {
                            x[l] = v[(chunk * 32 + l) % v.len()];
                            y[l] = v[(chunk * 32 + l * 7 + 3) % v.len()];
                            z[l] = v[(chunk * 32 + l * 13 + 5) % v.len()];
                        }
                        let mut simple = [0u64; 32];
                        if simple_int_lanes(op, ty, m, &x, &y, &mut simple) {
                            covered += 1;
                            for l in 0..32 {
                                let want = alu(op, ty, m, x[l], y[l], z[l], 0);
                                assert_eq!(simple[l], want, "{op:?}.{ty:?} {m:?} simple lane {l}");
                            }
                        }
                        for wide in builds() {
                            let mut out = [0u64; 32];
                            if !alu_lanes_on(wide, op, ty, m, &x, &y, &z, &mut out) {
                                continue;
                            }
                            covered += 1;
                            for l in 0..32 {
                                let want = alu(op, ty, m, x[l], y[l], z[l], 0);
                                let same = want == out[l];
                                assert!(
                                    same,
                                    "{op:?}.{ty:?} {m:?} avx2 {wide} ({:#x}, {:#x}, {:#x}): lanes {:#x}, per lane {:#x}",
                                    x[l], y[l], z[l], out[l], want
                                );
                            }
                        }
                    }
                }
            }
        }
        assert!(covered > 100, "only {covered} combinations covered");
    }

    #[test]
    fn lanes_equal_per_lane_compare() {
        use Cmp::*;
        let cmps = [
            Eq, Ne, Lt, Le, Gt, Ge, Lo, Ls, Hi, Hs, Equ, Neu, Ltu, Leu, Gtu, Geu, Num, Nan,
        ];
        let v = inputs();
        let mut covered = 0;
        for ty in TYPES {
            for c in cmps {
                for chunk in 0..v.len() / 32 {
                    let mut x = [0u64; 32];
                    let mut y = [0u64; 32];
                    for l in 0..32 {
                        x[l] = v[(chunk * 32 + l) % v.len()];
                        y[l] = v[(chunk * 32 + l * 5 + 1) % v.len()];
                    }
                    y[3] = x[3];
                    for wide in builds() {
                        let mut out = [0u64; 32];
                        if !compare_lanes_on(wide, c, ty, &x, &y, &mut out) {
                            continue;
                        }
                        covered += 1;
                        for l in 0..32 {
                            assert_eq!(
                                out[l],
                                compare(c, ty, x[l], y[l]) as u64,
                                "{c:?}.{ty:?} avx2 {wide} {:#x} {:#x}",
                                x[l],
                                y[l]
                            );
                        }
                    }
                }
            }
        }
        assert!(covered > 100, "only {covered} combinations covered");
    }
}
