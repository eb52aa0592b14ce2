//! `tensormap.replace` and `tensormap.cp_fenceproxy` (PTX ISA §9.7.8.25, §9.7.12.15.18) on the emulator's
//! tensor-map encoding (`emu/tensormap.rs`): a field is written in place, as the hardware edits a map in
//! memory, and the map is validated when a copy next uses it (several replaces may pass through invalid
//! states). The values follow the ISA: `.rank` holds the rank minus one, strides are in bytes, `.elemtype`
//! uses the ISA's numbering (`.u8` 0 … `.f32` 7, `.f32.ftz` 8, `.f64` 9, `.bf16` 10, `.tf32` 11,
//! `.tf32.ftz` 12), `.swizzle_mode` 0 none, 1–3 32/64/128 bytes, `.fill_mode` 0 zeros, 1 NaN.

use super::*;

/// Where a field lives in the encoding and its bytes for `val` (`Err`: a value the emulator's maps cannot
/// hold).
fn field_bytes(f: TmField, ord: u64, val: u64) -> Result<(usize, Vec<u8>), String> {
    let dim = |max: u64| {
        if ord < max {
            Ok(ord as usize)
        } else {
            Err(format!("dimension {ord} out of range"))
        }
    };
    Ok(match f {
        TmField::GlobalAddress => (8, val.to_le_bytes().to_vec()),
        TmField::Rank if val < 5 => (6, vec![val as u8 + 1]),
        TmField::GlobalDim => (16 + 8 * dim(5)?, (val as u32 as u64).to_le_bytes().to_vec()),
        TmField::GlobalStride => (56 + 8 * dim(4)?, val.to_le_bytes().to_vec()),
        TmField::BoxDim if (1..=256).contains(&val) => {
            (88 + 2 * dim(5)?, (val as u16).to_le_bytes().to_vec())
        }
        TmField::ElementStride if (1..=8).contains(&val) => (98 + dim(5)?, vec![val as u8]),
        TmField::ElemType => {
            // The ISA's numbering to the encoding's (CUtensorMapDataType's).
            let code = match val {
                0..=7 => val as u8,
                8 => 10,
                9 => 8,
                10 => 9,
                11 => 11,
                12 => 12,
                _ => {
                    return Err(format!(
                        "element type {val} (sub-byte types are not modelled)"
                    ))
                }
            };
            (5, vec![code])
        }
        TmField::InterleaveLayout if val == 0 => (7, vec![0]),
        TmField::SwizzleMode if val <= 3 => (103, vec![val as u8]),
        TmField::FillMode if val <= 1 => (105, vec![val as u8]),
        _ => return Err(format!("value {val} for {f:?}")),
    })
}

impl L<'_> {
    /// `tensormap.replace.tile.FIELD [map], {ord,} value`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_tensormap_replace(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        (f, space): (TmField, Space),
    ) -> Step {
        let args = &self.m.code[pc as usize].args;
        let with_ord = crate::emu::ptx::tmap::has_ord(f);
        lanes!(exec, l, {
            let at = self.operand_addr(b, w, wi, &args[0], l, space == Space::Generic);
            let ord = if with_ord {
                self.val(b, w, wi, &args[1], l)
            } else {
                0
            };
            let val = self.val(b, w, wi, &args[if with_ord { 2 } else { 1 }], l);
            let Some(loc) = self.resolve(b, wi, l, space, at, 128, pc) else {
                return Step::Stop;
            };
            if self.load(b, loc, 4) != super::super::tensormap::MAGIC as u64 {
                let msg = format!("tensormap.replace at {at:#x}: not a tensor map (copy one made by the host first)");
                self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
                return Step::Stop;
            }
            let (off, bytes) = match field_bytes(f, ord, val) {
                Ok(x) => x,
                Err(e) => {
                    let msg = format!("tensormap.replace at {at:#x}: {e}");
                    self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
                    return Step::Stop;
                }
            };
            let floc = offset_loc(loc, off);
            self.track(b, wi, l, floc, bytes.len(), Acc::Write, pc, at + off as u64);
            for (k, byte) in bytes.iter().enumerate() {
                self.store(b, offset_loc(floc, k), 1, *byte as u64);
            }
        });
        self.finish_access(pc);
        Self::advance(w, mask);
        Step::Continue
    }

    /// `tensormap.cp_fenceproxy.global.shared::cta…[dst], [src], 128`: the map's bytes from shared to
    /// global memory, once per warp (the fence it includes orders nothing more here: every access sees the
    /// latest value).
    pub(super) fn exec_tensormap_copy(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
    ) -> Step {
        let args = &self.m.code[pc as usize].args;
        // `.sync.aligned`: the warp copies once (its lanes name the same map).
        if exec != 0 {
            let l = exec.trailing_zeros() as usize;
            let dst = self.operand_addr(b, w, wi, &args[0], l, false);
            let src = self.operand_addr(b, w, wi, &args[1], l, false);
            let (Some(s), Some(d)) = (
                self.resolve(b, wi, l, Space::Shared, src, 128, pc),
                self.resolve(b, wi, l, Space::Global, dst, 128, pc),
            ) else {
                return Step::Stop;
            };
            self.track(b, wi, l, s, 128, Acc::Read, pc, src);
            self.track(b, wi, l, d, 128, Acc::Write, pc, dst);
            for k in 0..16 {
                let v = self.load(b, offset_loc(s, 8 * k), 8);
                self.store(b, offset_loc(d, 8 * k), 8, v);
            }
        }
        self.finish_access(pc);
        Self::advance(w, mask);
        Step::Continue
    }
}
