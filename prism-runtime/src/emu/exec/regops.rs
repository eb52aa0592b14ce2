//! Register instructions: `mov` (with vector packing), the ALU (`alu` in `scalar.rs`), `setp`, `set`,
//! `selp`, `slct`, `cvt`, `cvta`, `activemask`.

use super::*;

impl L<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_mov(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        mask: u32,
        exec: u32,
        ty: &PtxType,
    ) -> Step {
        let args = &ins.args;
        match (&args[0], &args[1]) {
            // `mov.b128` between a register pair and a `.b128` register (both are pairs here).
            (Operand::Vec(ds), Operand::Vec(ss)) if ds.len() == ss.len() => {
                lanes!(exec, l, {
                    let vals: Vec<u64> = ss.iter().map(|s| self.val(b, w, wi, s, l)).collect();
                    for (d, v) in ds.iter().zip(vals) {
                        Self::set(w, d, l, v);
                    }
                });
            }
            (Operand::Vec(ds), src) => {
                // unpack
                let n = ds.len() as u32;
                let eb = (ty.bits() / n).max(1);
                lanes!(exec, l, {
                    let v = self.val(b, w, wi, src, l);
                    for (k, d) in ds.iter().enumerate() {
                        Self::set(w, d, l, (v >> (eb * k as u32)) & mask_bits(eb));
                    }
                });
            }
            (d, Operand::Vec(ss)) if ss.len() > 1 => {
                let n = ss.len() as u32;
                let eb = (ty.bits() / n).max(1);
                lanes!(exec, l, {
                    let mut v = 0u64;
                    for (k, s) in ss.iter().enumerate() {
                        v |= (self.val(b, w, wi, s, l) & mask_bits(eb)) << (eb * k as u32);
                    }
                    Self::set(w, d, l, v);
                });
            }
            (d, s) => {
                let mk = if *ty == PtxType::Pred {
                    1
                } else {
                    mask_bits(ty.bits())
                };
                let generic_sym = false;
                lanes!(exec, l, {
                    let v = match s {
                        Operand::Sym(sy) => self.sym_lane(w, *sy, generic_sym, l),
                        _ => self.val(b, w, wi, s, l),
                    };
                    Self::set(w, d, l, v & mk);
                });
            }
        }
        Self::advance(w, mask);
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_alu_op(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        mask: u32,
        exec: u32,
        op: &AluOp,
        ty: &PtxType,
        md: &Mods,
    ) -> Step {
        let args = &ins.args;
        let (op, ty, md) = (*op, *ty, *md);
        let n = args.len();
        lanes!(exec, l, {
            let a = self.val(b, w, wi, &args[1], l);
            let bb = if n > 2 {
                self.val(b, w, wi, &args[2], l)
            } else {
                0
            };
            let c = if n > 3 {
                self.val(b, w, wi, &args[3], l)
            } else {
                0
            };
            let d = if n > 4 {
                self.val(b, w, wi, &args[4], l)
            } else {
                0
            };
            let r = alu(op, ty, md, a, bb, c, d);
            Self::set(w, &args[0], l, r);
        });
        Self::advance(w, mask);
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_setp(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        mask: u32,
        exec: u32,
        (cmp, ty, bop): (&Cmp, &PtxType, &Option<BoolOp>),
        ftz: bool,
    ) -> Step {
        let args = &ins.args;
        let two = args.len() >= 4 + bop.is_some() as usize
            && matches!(args[1], Operand::Reg(_) | Operand::Sink)
            && bop.map(|_| args.len() == 5).unwrap_or(args.len() == 4);
        let (dp, dq, ai) = if two {
            (&args[0], Some(&args[1]), 2)
        } else {
            (&args[0], None, 1)
        };
        lanes!(exec, l, {
            let a = ftz_compare(ftz, *ty, self.val(b, w, wi, &args[ai], l));
            let c = ftz_compare(ftz, *ty, self.val(b, w, wi, &args[ai + 1], l));
            let mut r = compare(*cmp, *ty, a, c);
            // setp.f16x2/bf16x2 p|q: p from the low halves, q from the high ones.
            let mut q = if matches!(ty, PtxType::F16x2 | PtxType::BF16x2) {
                compare(*cmp, *ty, a >> 16, c >> 16)
            } else {
                !r
            };
            if let Some(bo) = bop {
                let p = self.val(b, w, wi, &args[ai + 2], l) != 0;
                r = boolop(*bo, r, p);
                q = boolop(*bo, q, p);
            }
            Self::set(w, dp, l, r as u64);
            if let Some(dq) = dq {
                Self::set(w, dq, l, q as u64);
            }
        });
        Self::advance(w, mask);
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_set(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        mask: u32,
        exec: u32,
        (cmp, dty, sty, bop): (&Cmp, &PtxType, &PtxType, &Option<BoolOp>),
        ftz: bool,
    ) -> Step {
        let args = &ins.args;
        // `.f16x2`/`.bf16x2` sources compare two elements, each giving a 16-bit result (PTX ISA `set`).
        let (elems, ety, ebits) = match sty {
            PtxType::F16x2 => (2, PtxType::F16, 16),
            PtxType::BF16x2 => (2, PtxType::BF16, 16),
            _ => (1, *sty, dty.bits()),
        };
        // True is 1.0 in a float destination (of the destination's width), all ones in an integer one.
        let yes = match dty {
            PtxType::F16 | PtxType::F16x2 => 0x3c00,
            PtxType::BF16 | PtxType::BF16x2 => 0x3f80,
            PtxType::F64 => 1.0f64.to_bits(),
            d if d.is_float() => 1.0f32.to_bits() as u64,
            _ => mask_bits(ebits),
        };
        lanes!(exec, l, {
            let a = ftz_compare(ftz, *sty, self.val(b, w, wi, &args[1], l));
            let c = ftz_compare(ftz, *sty, self.val(b, w, wi, &args[2], l));
            let p = bop.map(|_| self.val(b, w, wi, &args[3], l) != 0);
            let mut v = 0u64;
            for k in 0..elems {
                let sh = 16 * k;
                let (x, y) = if elems == 1 {
                    (a, c)
                } else {
                    ((a >> sh) & 0xffff, (c >> sh) & 0xffff)
                };
                let mut r = compare(*cmp, ety, x, y);
                if let (Some(bo), Some(p)) = (bop, p) {
                    r = boolop(*bo, r, p);
                }
                if r {
                    v |= yes << sh;
                }
            }
            Self::set(w, &args[0], l, v);
        });
        Self::advance(w, mask);
        Step::Continue
    }

    pub(super) fn exec_selp(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        mask: u32,
        exec: u32,
    ) -> Step {
        let args = &ins.args;
        lanes!(exec, l, {
            let p = self.val(b, w, wi, &args[3], l) != 0;
            let v = if p {
                self.val(b, w, wi, &args[1], l)
            } else {
                self.val(b, w, wi, &args[2], l)
            };
            Self::set(w, &args[0], l, v);
        });
        Self::advance(w, mask);
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_slct(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        mask: u32,
        exec: u32,
        sty: &PtxType,
    ) -> Step {
        let args = &ins.args;
        lanes!(exec, l, {
            let c = self.val(b, w, wi, &args[3], l);
            let pos = if *sty == PtxType::F32 {
                f32::from_bits(c as u32) >= 0.0
            } else {
                (c as u32 as i32) >= 0
            };
            let v = if pos {
                self.val(b, w, wi, &args[1], l)
            } else {
                self.val(b, w, wi, &args[2], l)
            };
            Self::set(w, &args[0], l, v);
        });
        Self::advance(w, mask);
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_cvt(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        mask: u32,
        exec: u32,
        dty: &PtxType,
        sty: &PtxType,
        rnd: &Rnd,
        sat: &u8,
    ) -> Step {
        let args = &ins.args;
        let packed = matches!(dty, PtxType::F16x2 | PtxType::BF16x2) && args.len() >= 3;
        let elem = if *dty == PtxType::BF16x2 {
            PtxType::BF16
        } else {
            PtxType::F16
        };
        lanes!(exec, l, {
            let a = self.val(b, w, wi, &args[1], l);
            let v = if packed {
                // cvt.rn.f16x2.f32 d, a, b: d.hi = a, d.lo = b
                let c = self.val(b, w, wi, &args[2], l);
                cvt(elem, *sty, *rnd, *sat, c) | cvt(elem, *sty, *rnd, *sat, a) << 16
            } else {
                cvt(*dty, *sty, *rnd, *sat, a)
            };
            Self::set(w, &args[0], l, v);
        });
        Self::advance(w, mask);
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_cvta(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        mask: u32,
        exec: u32,
        to: &bool,
        space: &Space,
        ty: &PtxType,
    ) -> Step {
        let args = &ins.args;
        let win = cvta_window(space);
        let mk = mask_bits(ty.bits());
        lanes!(exec, l, {
            let a = match &args[1] {
                Operand::Sym(s) => self.sym_lane(w, *s, false, l),
                o => self.val(b, w, wi, o, l),
            };
            let r = if *to {
                a.wrapping_sub(win) & mk
            } else {
                a.wrapping_add(win)
            };
            Self::set(w, &args[0], l, if *to { r } else { r & mk });
        });
        Self::advance(w, mask);
        Step::Continue
    }

    pub(super) fn exec_activemask(
        &mut self,
        w: &mut Warp,
        ins: &Instr,
        mask: u32,
        exec: u32,
    ) -> Step {
        let args = &ins.args;
        lanes!(exec, l, {
            Self::set(w, &args[0], l, mask as u64);
        });
        Self::advance(w, mask);
        Step::Continue
    }
}

/// The generic-address window of a state space, which `cvta` adds (to generic) or subtracts (`.to`):
/// global addresses are generic addresses as they are.
pub(super) fn cvta_window(space: &Space) -> u64 {
    match space {
        Space::Shared => SHARED_WINDOW,
        Space::Local => LOCAL_WINDOW,
        Space::Param => PARAM_WINDOW,
        _ => 0,
    }
}
