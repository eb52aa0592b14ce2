//! `wmma.load`, `wmma.store`, `wmma.mma` (PTX §9.7.14.4, what `nvcuda::wmma` compiles to): shapes m16n16k16,
//! m32n8k16, m8n32k16 with f16 or bf16 inputs (f32 or f16 accumulators) or s8/u8 inputs (s32 accumulators,
//! `.satfinite` optional), m16n16k8 with tf32, m8n8k4 with f64; row- or column-major memory with any
//! stride; global, shared or generic addresses.
//!
//! The PTX ISA leaves the distribution of a fragment's elements over the warp's registers unspecified, so
//! programs can only move whole fragments between these instructions and apply the same operation to every
//! element. The emulator uses this mapping: a fragment of an R×C matrix held as E elements per thread puts
//! element i of lane t at linear position (t·E + i) mod R·C, row-major (so a fragment with more slots than
//! elements holds each element in several lanes, as hardware fragments do). 16-bit elements pack two per
//! 32-bit register, the even one in the low half.

use super::{Block, FaultKind, Operand, Space, Warp, L};
use crate::emu::ptx::{PtxType, WmmaFrag, WmmaOp};

fn elem_bits(ty: PtxType) -> usize {
    match ty {
        PtxType::S8 | PtxType::U8 => 8,
        PtxType::F16 | PtxType::BF16 => 16,
        PtxType::F64 => 64,
        _ => 32,
    }
}

/// Elements per register: four 8-bit, two 16-bit, else one.
fn per_reg(ty: PtxType) -> usize {
    (32 / elem_bits(ty)).max(1)
}

/// Rows and columns of fragment `frag` for shape (m, n, k).
fn dims(frag: WmmaFrag, m: usize, n: usize, k: usize) -> (usize, usize) {
    match frag {
        WmmaFrag::A => (m, k),
        WmmaFrag::B => (k, n),
        WmmaFrag::C | WmmaFrag::D => (m, n),
    }
}

/// An element's value: every input type is exact in f64.
fn to_f64(ty: PtxType, bits: u64) -> f64 {
    match ty {
        PtxType::F16 => half::f16::from_bits(bits as u16).to_f64(),
        PtxType::BF16 => half::bf16::from_bits(bits as u16).to_f64(),
        // tf32 inputs keep 10 mantissa bits
        PtxType::TF32 => f32::from_bits(bits as u32 & 0xFFFF_E000) as f64,
        PtxType::S8 => bits as u8 as i8 as f64,
        PtxType::U8 => bits as u8 as f64,
        PtxType::S32 => bits as u32 as i32 as f64,
        PtxType::F64 => f64::from_bits(bits),
        _ => f32::from_bits(bits as u32) as f64,
    }
}

fn from_f32(ty: PtxType, v: f32) -> u64 {
    match ty {
        PtxType::F16 => half::f16::from_f32(v).to_bits() as u64,
        PtxType::BF16 => half::bf16::from_f32(v).to_bits() as u64,
        _ => v.to_bits() as u64,
    }
}

/// The fragment of one warp as element values (bit patterns), `[lane][i]`.
fn unpack(l: &L<'_>, b: &Block, w: &Warp, wi: usize, op: &Operand, ty: PtxType) -> Vec<Vec<u64>> {
    let rs = op.elements();
    let (per, bits) = (per_reg(ty), elem_bits(ty));
    (0..32)
        .map(|lane| {
            let mut v = Vec::with_capacity(rs.len() * per);
            for r in &rs {
                let x = l.val(b, w, wi, r, lane);
                if per == 1 {
                    v.push(if bits == 64 { x } else { x & 0xFFFF_FFFF });
                } else {
                    v.extend((0..per).map(|j| (x >> (j * bits)) & ((1 << bits) - 1)));
                }
            }
            v
        })
        .collect()
}

fn pack(w: &mut Warp, op: &Operand, ty: PtxType, vals: &[Vec<u64>]) {
    let rs = op.elements();
    let (per, bits) = (per_reg(ty), elem_bits(ty));
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    };
    for (lane, v) in vals.iter().enumerate() {
        for (j, r) in rs.iter().enumerate() {
            let x = (0..per).fold(0u64, |x, i| {
                x | ((v.get(per * j + i).copied().unwrap_or(0) & mask) << (i * bits))
            });
            L::set(w, r, lane, x);
        }
    }
}

/// D = A·B + C of a fragment triple, as element bit patterns of `op.dtype`, `[lane][i]` with `nd`
/// elements a lane. Floats as before (f32 accumulation in k order, then the D type); 8-bit integers
/// exactly, wrapped to s32 or clamped with `.satfinite`; f64 by fused multiply-adds in k order (PTX ISA,
/// `wmma.mma`).
fn multiply(
    op: &WmmaOp,
    fa: &[Vec<u64>],
    fb: &[Vec<u64>],
    fc: &[Vec<u64>],
    nd: usize,
) -> Vec<Vec<u64>> {
    let (mm, nn, kk) = (op.m as usize, op.n as usize, op.k as usize);
    let gather = |f: &[Vec<u64>], ty: PtxType, r: usize, c: usize| -> Vec<f64> {
        let mut g = vec![0f64; r * c];
        for (lane, v) in f.iter().enumerate() {
            let e = v.len();
            for (i, x) in v.iter().enumerate() {
                g[(lane * e + i) % (r * c)] = to_f64(ty, *x);
            }
        }
        g
    };
    let a = gather(fa, op.ty, mm, kk);
    let bm = gather(fb, op.ty, kk, nn);
    let c = gather(fc, op.ctype, mm, nn);
    let d: Vec<u64> = (0..mm * nn)
        .map(|idx| {
            let (i, j) = (idx / nn, idx % nn);
            let prods = (0..kk).map(|x| (a[i * kk + x], bm[x * nn + j]));
            match op.dtype {
                PtxType::S32 => {
                    let sum = prods.fold(c[idx] as i64, |s, (p, q)| s + (p * q) as i64);
                    let v = if op.sat {
                        sum.clamp(i32::MIN as i64, i32::MAX as i64) as i32
                    } else {
                        sum as i32
                    };
                    v as u32 as u64
                }
                PtxType::F64 => prods.fold(c[idx], |s, (p, q)| p.mul_add(q, s)).to_bits(),
                dt => {
                    let acc = prods.fold(c[idx] as f32, |s, (p, q)| s + p as f32 * q as f32);
                    from_f32(dt, acc)
                }
            }
        })
        .collect();
    (0..32)
        .map(|lane| (0..nd).map(|i| d[(lane * nd + i) % (mm * nn)]).collect())
        .collect()
}

impl L<'_> {
    /// One warp's `wmma` instruction (all 32 lanes, checked by the collective machinery).
    pub(super) fn exec_wmma(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        op: WmmaOp,
    ) -> bool {
        let m = self.m;
        let args = &m.code[pc as usize].args;
        if op.mma {
            let fa = unpack(self, b, w, wi, &args[1], op.ty);
            let fb = unpack(self, b, w, wi, &args[2], op.ty);
            let fc = unpack(self, b, w, wi, &args[3], op.ctype);
            let nd = args[0].elements().len() * per_reg(op.dtype);
            let vals = multiply(&op, &fa, &fb, &fc, nd);
            pack(w, &args[0], op.dtype, &vals);
            self.mma_ops += 1;
            return true;
        }
        self.wmma_load_store(b, wi, w, pc, op)
    }

    /// `wmma.load` / `wmma.store`: the fragment's elements at their positions (module comment) of the
    /// matrix in memory.
    fn wmma_load_store(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        op: WmmaOp,
    ) -> bool {
        let m = self.m;
        let args = &m.code[pc as usize].args;
        let (mm, nn, kk) = (op.m as usize, op.n as usize, op.k as usize);
        let load = !op.store;
        let (r, c) = dims(op.frag, mm, nn, kk);
        let (fop, aop) = if load {
            (&args[0], &args[1])
        } else {
            (&args[1], &args[0])
        };
        let base = match aop {
            Operand::Addr(bs, off) => self.addr(w, bs, *off, 0, false),
            o => self.val(b, w, wi, o, 0),
        };
        let stride = args
            .get(2)
            .map(|s| self.val(b, w, wi, s, 0) as usize)
            .unwrap_or(if op.row { c } else { r });
        let es = elem_bits(op.ty) / 8;
        let nslots = fop.elements().len() * per_reg(op.ty);
        let addr_of = |row: usize, col: usize| -> u64 {
            let e = if op.row {
                row * stride + col
            } else {
                col * stride + row
            };
            base.wrapping_add((e * es) as u64)
        };
        let space = op.space;
        if load {
            let mut vals = vec![vec![0u64; nslots]; 32];
            for (lane, v) in vals.iter_mut().enumerate() {
                for (i, x) in v.iter_mut().enumerate() {
                    let idx = (lane * nslots + i) % (r * c);
                    let a = addr_of(idx / c, idx % c);
                    // Accessed as lane 0: the warp's wmma instructions are ordered with each other
                    // (warp-collective), so lanes must not race against each other here.
                    let loc = match self.resolve(b, wi, 0, space, a, es, pc) {
                        Some(l) => l,
                        None => return false,
                    };
                    self.track(b, wi, 0, loc, es, super::Acc::Read, pc, a);
                    let s = self.mem_slice(b, loc);
                    *x = s[..es]
                        .iter()
                        .rev()
                        .fold(0u64, |v, byte| (v << 8) | *byte as u64);
                }
            }
            self.finish_access(pc);
            pack(w, fop, op.ty, &vals);
        } else {
            let vals = unpack(self, b, w, wi, fop, op.ty);
            // Each element once (the first lane holding it), in row-major order of the matrix.
            let mut done = vec![false; r * c];
            for (lane, v) in vals.iter().enumerate() {
                for (i, x) in v.iter().enumerate() {
                    let idx = (lane * nslots + i) % (r * c);
                    if done[idx] {
                        continue;
                    }
                    done[idx] = true;
                    let a = addr_of(idx / c, idx % c);
                    let loc = match self.resolve(b, wi, 0, space, a, es, pc) {
                        Some(l) => l,
                        None => return false,
                    };
                    self.track(b, wi, 0, loc, es, super::Acc::Write, pc, a);
                    let s = self.mem_slice(b, loc);
                    s[..es].copy_from_slice(&x.to_le_bytes()[..es]);
                }
            }
            self.finish_access(pc);
        }
        if base % 16 != 0 && space != Space::Local {
            let msg = format!(
                "wmma.{} at {base:#x}: the matrix must be 16-byte aligned (PTX ISA, wmma.load)",
                if load { "load" } else { "store" }
            );
            self.fault(b, wi, Some(0), pc, FaultKind::Misaligned, msg);
            return false;
        }
        true
    }
}
