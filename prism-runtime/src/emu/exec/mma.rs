//! `mma.sync` (the warp-level matrix multiply-accumulate shapes) on one warp's fragments.

use super::*;

/// Truncates an f32 to TF32 precision (10 explicit mantissa bits).
pub(super) fn tf32(x: u32) -> f32 {
    f32::from_bits(x & 0xffff_e000)
}

pub(super) fn exec_mma(
    l: &mut L<'_>,
    b: &Block,
    w: &mut Warp,
    wi: usize,
    kind: MmaKind,
    args: &[Operand],
) {
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
