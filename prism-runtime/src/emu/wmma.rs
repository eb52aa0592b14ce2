//! `wmma.load`, `wmma.store`, `wmma.mma` (PTX §9.7.14.4, what `nvcuda::wmma` compiles to): shapes m16n16k16,
//! m32n8k16, m8n32k16 with f16 or bf16 inputs, m16n16k8 with tf32; f32 or f16 accumulators; row- or
//! column-major memory with any stride; global, shared or generic addresses.
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
        PtxType::F16 | PtxType::BF16 => 16,
        _ => 32,
    }
}

/// Rows and columns of fragment `frag` for shape (m, n, k).
fn dims(frag: WmmaFrag, m: usize, n: usize, k: usize) -> (usize, usize) {
    match frag {
        WmmaFrag::A => (m, k),
        WmmaFrag::B => (k, n),
        WmmaFrag::C | WmmaFrag::D => (m, n),
    }
}

fn to_f32(ty: PtxType, bits: u32) -> f32 {
    match ty {
        PtxType::F16 => half::f16::from_bits(bits as u16).to_f32(),
        PtxType::BF16 => half::bf16::from_bits(bits as u16).to_f32(),
        // tf32 inputs keep 10 mantissa bits
        PtxType::TF32 => f32::from_bits(bits & 0xFFFF_E000),
        _ => f32::from_bits(bits),
    }
}

fn from_f32(ty: PtxType, v: f32) -> u32 {
    match ty {
        PtxType::F16 => half::f16::from_f32(v).to_bits() as u32,
        PtxType::BF16 => half::bf16::from_f32(v).to_bits() as u32,
        _ => v.to_bits(),
    }
}

/// The fragment of one warp as element values (bit patterns), `[lane][i]`.
fn unpack(l: &L<'_>, b: &Block, w: &Warp, wi: usize, op: &Operand, ty: PtxType) -> Vec<Vec<u32>> {
    let rs = op.elements();
    let per = 32 / elem_bits(ty);
    (0..32)
        .map(|lane| {
            let mut v = Vec::with_capacity(rs.len() * per);
            for r in &rs {
                let x = l.val(b, w, wi, r, lane) as u32;
                if per == 2 {
                    v.push(x & 0xFFFF);
                    v.push(x >> 16);
                } else {
                    v.push(x);
                }
            }
            v
        })
        .collect()
}

fn pack(w: &mut Warp, op: &Operand, ty: PtxType, vals: &[Vec<u32>]) {
    let rs = op.elements();
    let per = 32 / elem_bits(ty);
    for (lane, v) in vals.iter().enumerate() {
        for (j, r) in rs.iter().enumerate() {
            let x = if per == 2 {
                (v[2 * j] & 0xFFFF) | (v[2 * j + 1] << 16)
            } else {
                v[j]
            };
            L::set(w, r, lane, x as u64);
        }
    }
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
        let (mm, nn, kk) = (op.m as usize, op.n as usize, op.k as usize);
        if op.mma {
            {
                let fa = unpack(self, b, w, wi, &args[1], op.ty);
                let fb = unpack(self, b, w, wi, &args[2], op.ty);
                let fc = unpack(self, b, w, wi, &args[3], op.ctype);
                let gather = |f: &[Vec<u32>], ty: PtxType, r: usize, c: usize| -> Vec<f32> {
                    let mut g = vec![0f32; r * c];
                    for (lane, v) in f.iter().enumerate() {
                        let e = v.len();
                        for (i, x) in v.iter().enumerate() {
                            g[(lane * e + i) % (r * c)] = to_f32(ty, *x);
                        }
                    }
                    g
                };
                let a = gather(&fa, op.ty, mm, kk);
                let bm = gather(&fb, op.ty, kk, nn);
                let c = gather(&fc, op.ctype, mm, nn);
                let mut d = vec![0f32; mm * nn];
                for i in 0..mm {
                    for j in 0..nn {
                        let mut acc = c[i * nn + j];
                        for x in 0..kk {
                            acc += a[i * kk + x] * bm[x * nn + j];
                        }
                        d[i * nn + j] = acc;
                    }
                }
                let nd = args[0].elements().len() * (32 / elem_bits(op.dtype));
                let vals: Vec<Vec<u32>> = (0..32)
                    .map(|lane| {
                        (0..nd)
                            .map(|i| from_f32(op.dtype, d[(lane * nd + i) % (mm * nn)]))
                            .collect()
                    })
                    .collect();
                pack(w, &args[0], op.dtype, &vals);
                self.mma_ops += 1;
                return true;
            }
        }
        {
            {
                let frag = op.frag;
                let load = !op.store;
                let (r, c) = dims(frag, mm, nn, kk);
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
                let nslots = fop.elements().len() * (32 / elem_bits(op.ty));
                let addr_of = |row: usize, col: usize| -> u64 {
                    let e = if op.row {
                        row * stride + col
                    } else {
                        col * stride + row
                    };
                    base + (e * es) as u64
                };
                let space = op.space;
                if load {
                    let mut vals = vec![vec![0u32; nslots]; 32];
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
                            *x = if es == 2 {
                                u16::from_le_bytes([s[0], s[1]]) as u32
                            } else {
                                u32::from_le_bytes([s[0], s[1], s[2], s[3]])
                            };
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
                            if es == 2 {
                                s[..2].copy_from_slice(&(*x as u16).to_le_bytes());
                            } else {
                                s[..4].copy_from_slice(&x.to_le_bytes());
                            }
                        }
                    }
                    self.finish_access(pc);
                }
                if base % 16 != 0 && space != Space::Local {
                    let msg = format!("wmma.{} at {base:#x}: the matrix must be 16-byte aligned (PTX ISA, wmma.load)", if load { "load" } else { "store" });
                    self.fault(b, wi, Some(0), pc, FaultKind::Misaligned, msg);
                    return false;
                }
                true
            }
        }
    }
}
