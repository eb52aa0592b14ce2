//! `mma.sync` (the warp-level matrix multiply-accumulate shapes) on one warp's fragments.

use super::*;

/// Truncates an f32 to TF32 precision (10 explicit mantissa bits).
pub(super) fn tf32(x: u32) -> f32 {
    f32::from_bits(x & 0xffff_e000)
}

/// The float forms (tf32, f16, bf16 inputs); the integer and f64 ones go to [`exec_mma_int_f64`].
pub(super) fn exec_mma(
    l: &mut L<'_>,
    b: &Block,
    w: &mut Warp,
    wi: usize,
    kind: MmaKind,
    args: &[Operand],
) {
    if matches!(
        kind,
        MmaKind::Int { .. } | MmaKind::F64 { .. } | MmaKind::Fp8 { .. }
    ) {
        return exec_mma_int_f64(l, b, w, wi, kind, args);
    }
    let regs = Operand::elements;
    let (d, a, bb, c) = (
        regs(&args[0]),
        regs(&args[1]),
        regs(&args[2]),
        regs(&args[3]),
    );
    let k = match kind {
        MmaKind::Tf32K8 | MmaKind::F16K8 | MmaKind::Bf16K8 => 8,
        _ => 16,
    };
    let mut am = vec![[0f32; 16]; 16]; // am[row][k]
    let mut bm = vec![[0f32; 8]; 16]; // bm[k][col]
    let mut cm = [[0f32; 8]; 16];
    let half = |bits: u64, hi: bool| -> f32 {
        let h = if hi {
            (bits >> 16) & 0xffff
        } else {
            bits & 0xffff
        };
        match kind {
            MmaKind::F16K16 | MmaKind::F16K8 => half::f16::from_bits(h as u16).to_f32(),
            _ => half::bf16::from_bits(h as u16).to_f32(),
        }
    };
    for lane in 0..32usize {
        let g = lane >> 2;
        let t = lane & 3;
        let rv = |ops: &[Operand], i: usize| -> u64 {
            ops.get(i).map(|o| l.val(b, w, wi, o, lane)).unwrap_or(0)
        };
        match kind {
            MmaKind::Tf32K8 => {
                am[g][t] = tf32(rv(&a, 0) as u32);
                am[g + 8][t] = tf32(rv(&a, 1) as u32);
                am[g][t + 4] = tf32(rv(&a, 2) as u32);
                am[g + 8][t + 4] = tf32(rv(&a, 3) as u32);
                bm[t][g] = tf32(rv(&bb, 0) as u32);
                bm[t + 4][g] = tf32(rv(&bb, 1) as u32);
            }
            MmaKind::F16K16 | MmaKind::Bf16K16 => {
                for (ri, (row, col)) in [
                    (g, 2 * t),
                    (g + 8, 2 * t),
                    (g, 2 * t + 8),
                    (g + 8, 2 * t + 8),
                ]
                .iter()
                .enumerate()
                {
                    let v = rv(&a, ri);
                    am[*row][*col] = half(v, false);
                    am[*row][*col + 1] = half(v, true);
                }
                for (ri, kk) in [2 * t, 2 * t + 8].iter().enumerate() {
                    let v = rv(&bb, ri);
                    bm[*kk][g] = half(v, false);
                    bm[*kk + 1][g] = half(v, true);
                }
            }
            MmaKind::F16K8 | MmaKind::Bf16K8 => {
                for (ri, (row, col)) in [(g, 2 * t), (g + 8, 2 * t)].iter().enumerate() {
                    let v = rv(&a, ri);
                    am[*row][*col] = half(v, false);
                    am[*row][*col + 1] = half(v, true);
                }
                let v = rv(&bb, 0);
                bm[2 * t][g] = half(v, false);
                bm[2 * t + 1][g] = half(v, true);
            }
            MmaKind::Int { .. } | MmaKind::F64 { .. } | MmaKind::Fp8 { .. } => {}
        }
        if c.len() == 2 {
            // f16 accumulators: two f16x2 registers, rows g and g + 8.
            [cm[g][2 * t], cm[g][2 * t + 1]] = misc::f16x2_unpack(rv(&c, 0));
            [cm[g + 8][2 * t], cm[g + 8][2 * t + 1]] = misc::f16x2_unpack(rv(&c, 1));
        } else {
            cm[g][2 * t] = f32v(rv(&c, 0));
            cm[g][2 * t + 1] = f32v(rv(&c, 1));
            cm[g + 8][2 * t] = f32v(rv(&c, 2));
            cm[g + 8][2 * t + 1] = f32v(rv(&c, 3));
        }
    }
    let mut dm = [[0f64; 8]; 16];
    for (i, drow) in dm.iter_mut().enumerate() {
        for (j, dv) in drow.iter_mut().enumerate() {
            let mut acc = cm[i][j] as f64;
            for kk in 0..k {
                acc += am[i][kk] as f64 * bm[kk][j] as f64;
            }
            *dv = acc;
        }
    }
    let f16_d = d.len() == 2;
    for lane in 0..32usize {
        let g = lane >> 2;
        let t = lane & 3;
        let vals = [
            dm[g][2 * t],
            dm[g][2 * t + 1],
            dm[g + 8][2 * t],
            dm[g + 8][2 * t + 1],
        ];
        if f16_d {
            L::set(w, &d[0], lane, misc::f16x2_pack(vals[0], vals[1]));
            L::set(w, &d[1], lane, misc::f16x2_pack(vals[2], vals[3]));
            continue;
        }
        for (i, v) in vals.iter().enumerate() {
            if let Some(op) = d.get(i) {
                L::set(w, op, lane, (*v as f32).to_bits() as u64);
            }
        }
    }
}

/// (row, column) of C/D element `j` of lane (g, t) in the m8n8 and m16n8 shapes of the integer and f64
/// forms: c0, c1 = (g, 2t), (g, 2t+1); c2, c3 = (g+8, 2t), (g+8, 2t+1) (PTX ISA, "Matrix Fragments for
/// mma.m16n8k32", C/D; CUTLASS `SM80_16x8_Row`, `SM80_8x8_Row`).
fn cd_pos(g: usize, t: usize, j: usize) -> (usize, usize) {
    (g + 8 * (j >> 1), 2 * t + (j & 1))
}

/// (row m, column k) of A element `e` (register `e / 4`, byte `e % 4`) of lane (g, t), integer forms:
/// registers alternate rows g and g+8 (m16 shapes), the second pair covers k + 16 (m16n8k32), each holds four
/// consecutive k from 4t (PTX ISA, "Matrix Fragments for mma.m8n8k16 / m16n8k16 / m16n8k32" with .s8/.u8;
/// CUTLASS `SM80_16x8x32_S32S8S8S32_TN` ALayout).
/// With `per` elements to a register (4 for 8-bit, 8 for 4-bit integers: "Matrix Fragments for
/// mma.m8n8k32 / m16n8k32 / m16n8k64" with .s4/.u4, CUTLASS `SM80_16x8x64_S32S4S4S32_TN`) every k above
/// scales by `per / 4`.
fn int_a_pos(m16: bool, per: usize, g: usize, t: usize, e: usize) -> (usize, usize) {
    let r = e / per;
    let (row_hi, k_hi) = if m16 { (r & 1, r >> 1) } else { (0, 0) };
    (g + 8 * row_hi, per * t + e % per + 4 * per * k_hi)
}

/// (row k, column n) of B element `e` of lane (g, t), integer forms: column g, register j holds k = 4·per·j +
/// per·t .. 4·per·j + per·t + per - 1 (`per` elements to a register, as for A).
fn int_b_pos(per: usize, g: usize, t: usize, e: usize) -> (usize, usize) {
    (per * t + e % per + 4 * per * (e / per), g)
}

/// `mma` with 8-bit integer or f64 inputs on one warp's fragments (the fragment layouts of the PTX ISA's
/// "Matrix Fragments for mma.m8n8k4 / m16n8k4 / m16n8k8 / m16n8k16 with .f64" and the integer sections;
/// checked against CUTLASS's `mma_traits_sm80.hpp` / `mma_traits_sm90.hpp`). Integers: the exact sum of the
/// products and C, wrapped to s32 or (`.satfinite`) clamped. f64: C plus the products in k order, each step
/// one fused multiply-add (the ISA leaves the order open; every product and sum is an f64 operation).
/// The decoder checked the register counts (`mma_regs`).
fn exec_mma_int_f64(
    l: &mut L<'_>,
    b: &Block,
    w: &mut Warp,
    wi: usize,
    kind: MmaKind,
    args: &[Operand],
) {
    let ops: Vec<Vec<Operand>> = args.iter().take(4).map(Operand::elements).collect();
    let [d, a, bb, c] = &ops[..] else {
        return;
    };
    let (mm, kk) = match kind {
        MmaKind::Int { m16, k32, bits, .. } => (
            if m16 { 16 } else { 8 },
            if k32 { 32 } else { 16 } * (8 / bits as usize),
        ),
        MmaKind::F64 { m, k } => (m as usize, k as usize),
        MmaKind::Fp8 { .. } => (16, 32),
        _ => return,
    };
    // Row-major M×K, K×8 and M×8 matrices of values (integers are exact in f64: |products| < 2^16).
    let mut am = vec![0f64; mm * kk];
    let mut bm = vec![0f64; kk * 8];
    let mut cm = vec![0u64; mm * 8];
    for lane in 0..32usize {
        let (g, t) = (lane >> 2, lane & 3);
        let rv = |ops: &[Operand], i: usize| ops.get(i).map_or(0, |o| l.val(b, w, wi, o, lane));
        match kind {
            MmaKind::Int {
                m16,
                bits,
                a_signed,
                b_signed,
                ..
            } => {
                // element `e % per` of a register: bits [w·(e % per), w·(e % per + 1)), w = 32 / per
                let (per, bits) = (32 / bits as usize, bits as usize);
                let elem = |v: u64, e: usize, signed: bool| {
                    let x = ((v >> (bits * (e % per))) as u32) << (32 - bits);
                    if signed {
                        ((x as i32) >> (32 - bits)) as f64
                    } else {
                        (x >> (32 - bits)) as f64
                    }
                };
                for e in 0..a.len() * per {
                    let (r, k) = int_a_pos(m16, per, g, t, e);
                    am[r * kk + k] = elem(rv(a, e / per), e, a_signed);
                }
                for e in 0..bb.len() * per {
                    let (k, n) = int_b_pos(per, g, t, e);
                    bm[k * 8 + n] = elem(rv(bb, e / per), e, b_signed);
                }
            }
            MmaKind::Fp8 { a_e5m2, b_e5m2 } => {
                let code = |v: u64, e: usize| (v >> (8 * (e % 4))) as u8;
                for e in 0..a.len() * 4 {
                    let (r, k) = int_a_pos(true, 4, g, t, e);
                    am[r * kk + k] = super::misc::fp8_value(code(rv(a, e / 4), e), a_e5m2);
                }
                for e in 0..bb.len() * 4 {
                    let (k, n) = int_b_pos(4, g, t, e);
                    bm[k * 8 + n] = super::misc::fp8_value(code(rv(bb, e / 4), e), b_e5m2);
                }
            }
            _ => {
                // f64: a_i = (g + 8 (i % 2), t + 4 (i / 2)) (m8n8k4 has only a0); b_i = (t + 4i, g).
                for i in 0..a.len() {
                    am[(g + 8 * (i % 2)) * kk + t + 4 * (i / 2)] = f64::from_bits(rv(a, i));
                }
                for i in 0..bb.len() {
                    bm[(t + 4 * i) * 8 + g] = f64::from_bits(rv(bb, i));
                }
            }
        }
        for j in 0..c.len() {
            let (r, n) = cd_pos(g, t, j);
            cm[r * 8 + n] = rv(c, j);
        }
    }
    let dm: Vec<u64> = (0..mm * 8)
        .map(|i| {
            let (r, n) = (i / 8, i % 8);
            match kind {
                MmaKind::Int { sat, xor, .. } => {
                    let mut acc = cm[i] as u32 as i32 as i64;
                    for k in 0..kk {
                        let (x, y) = (am[r * kk + k], bm[k * 8 + n]);
                        // `.xor.popc` counts differing bits; otherwise the product (`.and.popc` for bits)
                        acc += if xor { (x != y) as i64 } else { (x * y) as i64 };
                    }
                    let v = if sat {
                        acc.clamp(i32::MIN as i64, i32::MAX as i64) as i32
                    } else {
                        acc as i32
                    };
                    v as u32 as u64
                }
                // FP8: the products (exact in f64) summed with C, rounded once to f32, as the emulator's
                // wgmma FP8 does.
                MmaKind::Fp8 { .. } => {
                    let mut acc = f32::from_bits(cm[i] as u32) as f64;
                    for k in 0..kk {
                        acc += am[r * kk + k] * bm[k * 8 + n];
                    }
                    (acc as f32).to_bits() as u64
                }
                _ => {
                    let mut acc = f64::from_bits(cm[i]);
                    for k in 0..kk {
                        acc = am[r * kk + k].mul_add(bm[k * 8 + n], acc);
                    }
                    acc.to_bits()
                }
            }
        })
        .collect();
    for lane in 0..32usize {
        let (g, t) = (lane >> 2, lane & 3);
        for (j, op) in d.iter().enumerate() {
            let (r, n) = cd_pos(g, t, j);
            L::set(w, op, lane, dm[r * 8 + n]);
        }
    }
}
