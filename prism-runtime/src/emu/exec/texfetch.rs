//! `tex`, `suld`, `sust`, `txq`, `suq` on the emulator's texture and surface objects (`emu/texture.rs`
//! samples; this reads the operands, finds the object of each lane's handle and writes the results).
//!
//! Every texel read and surface access is tracked as a load or store (counters, the parallel run's word
//! map, the race detector): a fetch of memory another thread wrote without ordering is a race, which on a
//! GPU is worse — the texture cache need not see writes made during the kernel.

use super::super::texture::{self, AddressMode, FilterMode, Texel};
use super::*;

impl L<'_> {
    /// Lane `l`'s object of the handle in `addr_op` (`[handle, {coords}]` or `[handle]`): a fault unless
    /// it is a live object of the wanted kind.
    #[allow(clippy::too_many_arguments)]
    fn object(
        &mut self,
        b: &mut Block,
        w: &Warp,
        wi: usize,
        l: usize,
        pc: u32,
        handle_op: &Operand,
        surface: bool,
    ) -> Option<TexObject> {
        let h = self.operand_addr(b, w, wi, handle_op, l, false);
        let obj = h
            .checked_sub(1)
            .and_then(|k| self.objects.get(k as usize).copied().flatten());
        match obj {
            Some(o) if o.surface == surface => Some(o),
            _ => {
                let (what, make) = if surface {
                    ("surface", "Emulator::create_surface, the CLI's surf:")
                } else {
                    ("texture", "Emulator::create_texture, the CLI's tex:")
                };
                let msg = format!("{h:#x} is not a live {what} object (made by {make})");
                self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
                None
            }
        }
    }

    /// One value of global memory for a fetch (`None`: the fault is reported).
    #[allow(clippy::too_many_arguments)]
    fn tex_read(
        &mut self,
        b: &mut Block,
        wi: usize,
        l: usize,
        pc: u32,
        addr: u64,
        size: usize,
    ) -> Option<u64> {
        let loc = self.resolve(b, wi, l, Space::Global, addr, size, pc)?;
        self.track(b, wi, l, loc, size, Acc::Read, pc, addr);
        Some(self.load(b, loc, size))
    }

    /// `tex.{1d,2d,3d}.v4.{f32,s32,u32}.{f32,s32}`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_tex(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        op: TexOp,
    ) -> Step {
        let args = &self.m.code[pc as usize].args;
        let (dst, handle, coords) = match (args.first(), args.get(1)) {
            (Some(d), Some(Operand::List(v))) if v.len() == 2 => {
                (d.elements(), &v[0], v[1].elements())
            }
            _ => return self.tex_operand_fault(b, wi, mask, pc),
        };
        lanes!(exec, l, {
            let Some(obj) = self.object(b, w, wi, l, pc, handle, false) else {
                return Step::Stop;
            };
            let c = [0, 1, 2].map(|k| coords.get(k).map_or(0, |o| self.val(b, w, wi, o, l)));
            let at = |k: usize| c[k];
            let mut read = |a: u64, s: usize| self.tex_read(b, wi, l, pc, a, s);
            let t: Option<Texel> = if let Some(comp) = op.gather {
                let x = [0, 1, 2].map(|k| f32::from_bits(at(k) as u32));
                texture::gather(&obj.desc, x, comp as usize, &mut read)
            } else if op.float_coords {
                let x = [0, 1, 2].map(|k| f32::from_bits(at(k) as u32));
                texture::sample(&obj.desc, x, &mut read)
            } else {
                let x = [0, 1, 2].map(|k| at(k) as u32 as i32);
                texture::fetch(&obj.desc, x, &mut read)
            };
            let Some(t) = t else {
                return Step::Stop;
            };
            for (k, d) in dst.iter().enumerate().take(4) {
                let v = if op.float_result {
                    t.f[k].to_bits()
                } else {
                    t.i[k]
                };
                Self::set(w, d, l, v as u64);
            }
        });
        self.finish_access(pc);
        Self::advance(w, mask);
        Step::Continue
    }

    fn tex_operand_fault(&mut self, b: &mut Block, wi: usize, mask: u32, pc: u32) -> Step {
        let msg = "texture or surface instruction without a [handle, {coordinates}] operand".into();
        self.fault(
            b,
            wi,
            Some(mask.trailing_zeros()),
            pc,
            FaultKind::InvalidOperation,
            msg,
        );
        Step::Stop
    }

    /// `suld.b` / `sust.b`: `vec` elements of `bits` at byte `x` of row `y` of slice `z`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_surf(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        op: SurfOp,
    ) -> Step {
        let args = &self.m.code[pc as usize].args;
        let (addr_op, data) = if op.load {
            (args.get(1), args.first())
        } else {
            (args.first(), args.get(1))
        };
        let (handle, coords, data) = match (addr_op, data) {
            (Some(Operand::List(v)), Some(d)) if v.len() == 2 => {
                (&v[0], v[1].elements(), d.elements())
            }
            _ => return self.tex_operand_fault(b, wi, mask, pc),
        };
        let eb = op.bits as usize / 8;
        let size = eb * op.vec as usize;
        lanes!(exec, l, {
            let Some(obj) = self.object(b, w, wi, l, pc, handle, true) else {
                return Step::Stop;
            };
            let d = obj.desc;
            let mut xyz = [0i64; 3];
            for (k, v) in xyz.iter_mut().enumerate().take(d.dims as usize) {
                *v = coords
                    .get(k)
                    .map_or(0, |o| self.val(b, w, wi, o, l) as u32 as i32 as i64);
            }
            if xyz[0] % eb as i64 != 0 {
                let msg = format!(
                    "surface access of {size} bytes at byte x = {} (not a multiple of {eb})",
                    xyz[0]
                );
                self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
                return Step::Stop;
            }
            let row = d.extent[0] as i64 * d.texel_bytes() as i64;
            let limit = [
                row - size as i64 + 1,
                d.extent[1] as i64,
                d.extent[2] as i64,
            ];
            let inside = (0..3).all(|k| (0..limit[k]).contains(&xyz[k]));
            if !inside {
                match op.oob {
                    SurfOob::Trap => {
                        let msg = format!(
                            "surface access of {size} bytes at (x = {} bytes, y = {}, z = {}) outside the surface {d}",
                            xyz[0], xyz[1], xyz[2]
                        );
                        self.fault(b, wi, Some(l as u32), pc, FaultKind::OutOfBounds, msg);
                        return Step::Stop;
                    }
                    SurfOob::Zero => {
                        if op.load {
                            for r in &data {
                                Self::set(w, r, l, 0);
                            }
                        }
                        continue;
                    }
                    SurfOob::Clamp => {
                        for k in 0..3 {
                            xyz[k] = xyz[k].clamp(0, (limit[k] - 1).max(0));
                        }
                        xyz[0] -= xyz[0] % eb as i64;
                    }
                }
            }
            let at = d.addr
                + (xyz[2] as u64 * d.extent[1] as u64 + xyz[1] as u64) * d.row_pitch()
                + xyz[0] as u64;
            for (k, r) in data.iter().enumerate().take(op.vec as usize) {
                let a = at + (k * eb) as u64;
                let Some(loc) = self.resolve(b, wi, l, Space::Global, a, eb, pc) else {
                    return Step::Stop;
                };
                let acc = if op.load { Acc::Read } else { Acc::Write };
                self.track(b, wi, l, loc, eb, acc, pc, a);
                if op.load {
                    let v = self.load(b, loc, eb);
                    Self::set(w, r, l, v);
                } else {
                    let v = self.val(b, w, wi, r, l);
                    self.store(b, loc, eb, v);
                }
            }
        });
        self.finish_access(pc);
        Self::advance(w, mask);
        Step::Continue
    }

    /// `txq` / `suq`: a property of the object of each lane's handle.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_txq(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        (q, surface): (TexQuery, bool),
    ) -> Step {
        let args = &self.m.code[pc as usize].args;
        let (Some(dst), Some(handle)) = (args.first(), args.get(1)) else {
            return self.tex_operand_fault(b, wi, mask, pc);
        };
        lanes!(exec, l, {
            let Some(obj) = self.object(b, w, wi, l, pc, handle, surface) else {
                return Step::Stop;
            };
            let d = obj.desc;
            let v = match q {
                TexQuery::Width => d.extent[0],
                TexQuery::Height => d.extent[1],
                TexQuery::Depth => d.extent[2],
                TexQuery::NormalizedCoords => d.normalized as u32,
                TexQuery::FilterMode => (d.filter == FilterMode::Linear) as u32,
                // cudaTextureAddressMode: wrap 0, clamp 1, mirror 2, border 3.
                TexQuery::AddrMode(k) => match d.address[k as usize] {
                    AddressMode::Wrap => 0,
                    AddressMode::Clamp => 1,
                    AddressMode::Mirror => 2,
                    AddressMode::Border => 3,
                },
            };
            Self::set(w, dst, l, v as u64);
        });
        Self::advance(w, mask);
        Step::Continue
    }
}
