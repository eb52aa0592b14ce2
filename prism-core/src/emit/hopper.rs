//! Lowering of the Hopper intrinsics (sm_90a; PTX ISA 8.0: wgmma §9.7.15, tensor copies §9.7.9.27,
//! mbarrier §9.7.13.15, setmaxnreg §9.7.19.5, cluster barriers §9.7.13.3 and directives §11.7; what was
//! confirmed on a GPU: docs/HOPPER-PROBES.md).
//!
//! * `tma_load` → `mbarrier.expect_tx` + `cp.async.bulk.tensor.Nd...mbarrier::complete_tx::bytes` on the
//!   mbarrier of the destination's `async_` scope (the block-wide protocol of `cp_async_bulk`). The box is the
//!   whole destination allocation: its swizzle span is the inner box extent and its size the box's bytes, so
//!   the bytes the mbarrier expects are exactly the bytes TMA delivers (rule TMA). The box and swizzle are
//!   recorded on the parameter, and the launch checks the host's tensor map against them.
//! * `wgmma_bf16/f16` → `wgmma.fence` before the first of a run of wgmmas, the matrix descriptors built from the
//!   operand's layout (K-major, SBO = 8 rows, LBO unused, base offset 0 because swizzled allocations are
//!   placed at the pattern's alignment), and `wgmma.commit_group` + `wgmma.wait_group 0` where the run ends:
//!   before any other statement, label, branch, barrier or mbarrier operation, so no code can touch the
//!   accumulators or the operand slots while a wgmma is in flight.
//! * `set_max_regs` → `setmaxnreg.inc/dec` relative to the entry budget the kernel declares with `.maxnreg`; one
//!   count per warpgroup, and all of them within the SM's 64 K registers.

use super::{bug, err, ring_sites, Binding, Em, Space, Val, Value, View, R};
use crate::ast::{Expr, ExprKind, Param, ScalarType, SmemLayout};
use proc_macro2::Span;

/// What a `tma_load` needs of its tensor map, recorded per parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TmaUse {
    /// Box extents, innermost first (elements).
    pub box_dims: Vec<u32>,
    pub layout: SmemLayout,
}

impl Em {
    /// Ends a run of wgmmas: commit them as one group and wait for every group, so accumulators and shared
    /// operands are ordinary again; then hands back the slot of a drain whose group was still in flight.
    pub(super) fn wgmma_retire(&mut self) {
        if !self.wgmma_open && !self.wgmma_inflight {
            return;
        }
        if self.wgmma_open {
            self.raw_line("wgmma.commit_group.sync.aligned;");
        }
        self.wgmma_open = false;
        self.wgmma_inflight = false;
        self.wgmma_names.clear();
        self.raw_line("wgmma.wait_group.sync.aligned 0;");
        if let Some(d) = self.drain_deferred.clone() {
            self.ring_arrive(&d.prev, Some(&d.pending), d.release);
            self.raw_line(&format!("mov.pred {}, 0;", d.pending));
        }
    }

    /// Entering a device function: the wgmma operands in flight are known inside by the names of the
    /// parameters they are passed as (the "touches an operand in flight" test is by name). Returns the
    /// caller's names for [`Self::wgmma_names_leave`].
    pub(super) fn wgmma_names_enter(&mut self, params: &[Param], args: &[Expr]) -> Vec<String> {
        let caller = std::mem::take(&mut self.wgmma_names);
        self.wgmma_names = (params.iter().zip(args))
            .filter(|(_, a)| caller.iter().any(|n| super::expr::mentions(a, n)))
            .map(|(p, _)| p.name.name.clone())
            .collect();
        caller
    }

    /// Leaving a device function with wgmmas in flight: their operands are the caller's arguments again;
    /// one the caller cannot name (a callee's local) retires them here.
    pub(super) fn wgmma_names_leave(
        &mut self,
        caller: Vec<String>,
        params: &[Param],
        args: &[Expr],
    ) {
        if !self.wgmma_open && !self.wgmma_inflight {
            self.wgmma_names.clear();
            return;
        }
        let inside = std::mem::take(&mut self.wgmma_names);
        let mut names = caller;
        for n in &inside {
            let Some((_, a)) = params.iter().zip(args).find(|(p, _)| p.name.name == *n) else {
                self.wgmma_names = inside;
                self.wgmma_retire();
                return;
            };
            let Some(v) = root_var(a) else {
                self.wgmma_names = inside;
                self.wgmma_retire();
                return;
            };
            if !names.contains(&v) {
                names.push(v);
            }
        }
        self.wgmma_names = names;
    }

    pub(super) fn hopper_call(
        &mut self,
        name: &str,
        args: &[Expr],
        span: Span,
    ) -> Option<R<Value>> {
        let r = match name {
            "tma_load" => self.tma_load(args, span),
            "tma_load_multicast" => self.tma_load_multicast(args, span),
            "tma_store" => self.tma_store(args, span),
            "wgmma_bf16" => self.wgmma(args, ScalarType::BF16, span),
            "wgmma_f16" => self.wgmma(args, ScalarType::F16, span),
            "set_max_regs" => self.set_max_regs(args, span),
            "stmatrix_bf16" => self.stmatrix_bf16(args),
            "store_fragment_f32" => self.store_fragment_f32(args),
            "sync_cluster" => {
                // Arrive (release) and wait (acquire): every thread of the cluster, shared memory of every
                // block of it ordered (PTX ISA §9.7.13.3.2).
                self.line("barrier.cluster.arrive.release;".into());
                self.line("barrier.cluster.wait.acquire;".into());
                Ok(())
            }
            _ => return None,
        };
        Some(r.map(|()| Value::Unit))
    }

    fn tma_load(&mut self, args: &[Expr], span: Span) -> R<()> {
        let mbar = self.copy_mbarrier(&args[0])?;
        self.tma_issuer("tma_load", &args[0], span)?;
        let dst = self.mem_arg(&args[0])?;
        self.tma_smem_aligned(&dst, "the box's destination", args[0].span)?;
        let (param, map, elem, rank) = self.tensor_map(&args[1])?;
        self.tma_loaded.insert(param);
        if args.len() != 2 + rank as usize {
            return Err(bug(
                "TYPE",
                span,
                format!(
                    "`tma_load` with a rank-{rank} map takes {} coordinates",
                    rank
                ),
            ));
        }
        if dst.space == Space::Shared && dst.maps.is_empty() && dst.elem != elem {
            return Err(err(
                "TMA",
                args[0].span,
                format!(
                    "`tma_load` of a map of {elem} into shared memory of {}: the element types must match",
                    dst.elem
                ),
            )
            .help(format!("load a `TensorMap<{}, RANK>`, or declare the allocation `Shared<[{elem}; N], L>`", dst.elem)));
        }
        if dst.space != Space::Shared || !dst.maps.is_empty() {
            return Err(err(
                "TMA",
                args[0].span,
                format!(
                    "`tma_load` fills a whole shared allocation of {elem} (the `async_` name of a `Shared<[{elem}; N], L>` itself)"
                ),
            ));
        }
        let box_dims = tma_box(dst.layout, dst.len, elem, rank).map_err(|m| {
            err("TMA", args[0].span, m).help(
                "a rank-2 box is one swizzle span wide (64 bf16 for `Swizzle128`) and as tall as the allocation \
                 (at most 256 rows); a rank-1 box is a `Linear` allocation of at most 256 elements",
            )
        })?;
        self.record_tma_use(param, box_dims, dst.layout, args[0].span)?;
        let bytes = dst.len as u64 * elem.size() as u64;
        let da = self.address_raw(&dst, vec![Val::imm_u32(0)], args[0].span)?;
        let mut coords = Vec::new();
        for c in &args[2..] {
            let v = self.scalar(c)?;
            coords.push(self.reg(&v, v.ty().unwrap_or(ScalarType::U32)));
        }
        self.line(format!(
            "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{mbar}], {bytes};"
        ));
        self.line(format!(
            "cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{da}], [{map}, {{{}}}], [{mbar}];",
            coords.join(", ")
        ));
        Ok(())
    }

    /// A `TensorMap` parameter named by `e`: its index, the register holding its address, element type and rank.
    pub(super) fn tensor_map(&self, e: &Expr) -> R<(usize, String, ScalarType, u32)> {
        if let ExprKind::Var(id) = &e.kind {
            if let Binding::TensorMap {
                param,
                addr,
                elem,
                rank,
            } = self.lookup(id)?
            {
                return Ok((param, addr, elem, rank));
            }
        }
        Err(bug("TYPE", e.span, "expected a tensor map"))
    }

    /// One map has one box: every copy through the parameter moves the same box with the same swizzle.
    pub(super) fn record_tma_use(
        &mut self,
        param: usize,
        box_dims: Vec<u32>,
        layout: SmemLayout,
        span: Span,
    ) -> R<()> {
        let want = TmaUse { box_dims, layout };
        match self.tma_uses.get(&param) {
            Some(prev) if *prev != want => Err(err(
                "TMA",
                span,
                format!(
                    "this tensor map moves box {:?} ({}) here but box {:?} ({}) elsewhere: one map has one box",
                    want.box_dims, want.layout, prev.box_dims, prev.layout
                ),
            )
            .help("pass a second tensor map for the other tile shape")),
            _ => {
                self.tma_uses.insert(param, want);
                Ok(())
            }
        }
    }

    /// `tma_store(map, src, c0, ..)`: the whole shared allocation `src` (the box) to the tensor at the
    /// coordinates; parts of the box outside the tensor are not written. The issuing thread fences its own
    /// generic writes into the async proxy (the other writers did before the barrier the inference placed),
    /// and waits until the store has read the box (`wait_group.read`), so `src` may be rewritten after the
    /// next barrier while the global write completes in the background; every thread waits for its stores'
    /// writes before the kernel returns. A kernel that also `tma_load`s through the same map waits for the
    /// write itself instead (`Piece::BulkStoreWait`), so its loads see it. Waiting for the write after every
    /// box cost rung 7 about 1 µs per 64 × 64 box.
    fn tma_store(&mut self, args: &[Expr], span: Span) -> R<()> {
        let (param, map, elem, rank) = self.tensor_map(&args[0])?;
        if args.len() != 2 + rank as usize {
            return Err(bug(
                "TYPE",
                span,
                format!("`tma_store` with a rank-{rank} map takes {rank} coordinates"),
            ));
        }
        self.tma_issuer("tma_store", &args[1], span)?;
        let src = self.mem_arg(&args[1])?;
        self.tma_smem_aligned(&src, "the stored box", args[1].span)?;
        if src.space != Space::Shared || !whole_allocation(&src) || src.elem != elem {
            return Err(err(
                "TMA",
                args[1].span,
                format!("`tma_store` stores a whole shared allocation of {elem} (a `Shared<[{elem}; N], L>` itself, or an `|x| x` partition of it)"),
            ));
        }
        let box_dims =
            tma_box(src.layout, src.len, elem, rank).map_err(|m| err("TMA", args[1].span, m))?;
        self.record_tma_use(param, box_dims, src.layout, args[1].span)?;
        let sa = self.address_raw(&src, vec![Val::imm_u32(0)], args[1].span)?;
        let mut coords = Vec::new();
        for c in &args[2..] {
            let v = self.scalar(c)?;
            coords.push(self.reg(&v, v.ty().unwrap_or(ScalarType::U32)));
        }
        self.line("fence.proxy.async.shared::cta;".into());
        self.line(format!(
            "cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group [{map}, {{{}}}], [{sa}];",
            coords.join(", ")
        ));
        self.line("cp.async.bulk.commit_group;".into());
        // Its wait for the box to be read is placed lazily (`bulk_waits_before`).
        self.bulk_pending_since.get_or_insert(self.body.len());
        if !self.bulk_pending.contains(&param) {
            self.bulk_pending.push(param);
        }
        self.sm90a = true;
        Ok(())
    }

    fn wgmma(&mut self, args: &[Expr], input: ScalarType, span: Span) -> R<()> {
        let d = match self.expr(&args[0])? {
            Value::Arr(v, ScalarType::F32) => v
                .iter()
                .map(|x| self.reg(x, ScalarType::F32))
                .collect::<Vec<_>>(),
            _ => {
                return Err(bug(
                    "TYPE",
                    args[0].span,
                    "expected `&mut d` with `d: [f32; N / 2]`",
                ))
            }
        };
        let n = 2 * d.len() as u32;
        for a in [&args[0], &args[1], &args[3]] {
            let e = match &a.kind {
                ExprKind::Ref { expr, .. } => expr,
                _ => a,
            };
            if let ExprKind::Var(id) = &e.kind {
                if !self.wgmma_names.contains(&id.name) {
                    self.wgmma_names.push(id.name.clone());
                }
            }
        }
        let (desc_a, trans_a) = self.wgmma_descriptor(&args[1], &args[2], 64, "A")?;
        let (desc_b, trans_b) = self.wgmma_descriptor(&args[3], &args[4], n, "B")?;
        if !self.wgmma_open || !self.wgmma_fenced {
            self.line("wgmma.fence.sync.aligned;".into());
            self.wgmma_open = true;
            self.wgmma_fenced = true;
        }
        let scale_d = match args.get(5) {
            Some(e) => {
                let v = self.scalar(e)?;
                let v = self.coerce(v, ScalarType::Bool, e.span)?;
                match v {
                    Val::Imm(..) => {
                        let one = !matches!(v, Val::Imm(super::Imm::Bool(false), _)) as u32;
                        let r = self.fresh(ScalarType::U32);
                        let p = self.fresh(ScalarType::Bool);
                        self.line(format!("mov.u32 {r}, {one};"));
                        self.line(format!("setp.ne.u32 {p}, {r}, 0;"));
                        p
                    }
                    v => self.reg(&v, ScalarType::Bool),
                }
            }
            None => self.wgmma_scale_d(),
        };
        let t = if input == ScalarType::BF16 {
            "bf16"
        } else {
            "f16"
        };
        self.line(format!(
            "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t} {{{}}}, {desc_a}, {desc_b}, {scale_d}, 1, 1, {trans_a}, {trans_b};",
            d.join(", ")
        ));
        self.sm90a = true;
        let _ = span;
        Ok(())
    }

    /// A predicate register holding `true` (wgmma's scale-d: accumulate into `d`), set right here: a register
    /// set once could sit on a path (another split arm) that this wgmma's threads never ran.
    fn wgmma_scale_d(&mut self) -> String {
        let one = self.fresh(ScalarType::U32);
        let p = self.fresh(ScalarType::Bool);
        self.line(format!("mov.u32 {one}, 1;"));
        self.line(format!("setp.ne.u32 {p}, {one}, 0;"));
        p
    }

    /// The 64-bit shared-memory matrix descriptor (PTX ISA §9.7.15.5.1.2.2) of the `rows`×16
    /// operand that starts at element `off` of the allocation `mem`, and its `imm-trans` (1 for MN-major).
    fn wgmma_descriptor(
        &mut self,
        mem: &Expr,
        off: &Expr,
        rows: u32,
        what: &str,
    ) -> R<(String, u32)> {
        let view = self.mem_arg(mem)?;
        if view.space != Space::Shared || !view.maps.is_empty() {
            return Err(err(
                "WGMMA",
                mem.span,
                format!("wgmma operand {what} is read from a shared allocation itself"),
            ));
        }
        let span_b = view.layout.span();
        if span_b == 0 {
            return Err(err(
                "WGMMA",
                mem.span,
                format!("wgmma operand {what} must be a swizzled K-major tile"),
            )
            .help("declare it `Shared<[bf16; ROWS * 64], Swizzle128>` (or Swizzle64 / Swizzle32, or the MN-major `Swizzle128Mn` ..) and fill it with `tma_load`"));
        }
        let off_e = match self.const_i64(off) {
            Ok(v) => u32::try_from(v).map_err(|_| {
                err(
                    "WGMMA",
                    off.span,
                    format!("offset {v} into wgmma operand {what} (in one of the unrolled steps) is outside the allocation: offsets are element indices from 0"),
                )
                .help("check the offset's arithmetic for each value of the loop variables")
            })?,
            Err(_) => {
                return Err(err(
                    "WGMMA",
                    off.span,
                    format!("the offset into wgmma operand {what} must be a constant (after unrolling)"),
                )
                .help("use constants and the variables of `for` loops with constant bounds"))
            }
        };
        let byte = off_e as u64 * 2;
        let (row, kb) = (byte / span_b as u64, byte % span_b as u64);
        let alloc_rows = view.len as u64 * 2 / span_b as u64;
        if view.layout.mn_major() {
            // Rows are K (16 per instruction), each one swizzle span of M (or N) elements: the operand's M
            // (or N) extent is exactly one row, so the atoms adjacent in M/N (LBO) do not occur.
            let width = span_b / 2;
            if rows != width || kb != 0 || row % 8 != 0 || row + 16 > alloc_rows {
                return Err(err(
                    "WGMMA",
                    off.span,
                    format!(
                        "offset {off_e} into MN-major operand {what}: its {rows} M/N elements must be one {span_b}-byte row                          ({width} elements), and the 16 K rows from a multiple of 8 rows inside the allocation ({alloc_rows} rows)"
                    ),
                ));
            }
        } else if row % 8 != 0 || kb % 32 != 0 || row + rows as u64 > alloc_rows {
            return Err(err(
                "WGMMA",
                off.span,
                format!(
                    "offset {off_e} into operand {what}: a {rows}×16 slice starts on a multiple of 8 rows and of 16 \
                     elements within a {span_b}-byte row, and lies inside the allocation ({} rows)",
                    view.len as u64 * 2 / span_b as u64
                ),
            ));
        }
        let addr = self.address_raw(&view, vec![Val::imm_u32(off_e)], off.span)?;
        let a64 = self.fresh(ScalarType::U64);
        let desc = self.fresh(ScalarType::U64);
        let mode: u64 = match span_b {
            128 => 1,
            64 => 2,
            _ => 3,
        };
        // LBO is unused for swizzled K-major operands and for one-atom MN-major ones (encoded 1); SBO = 8
        // rows (8 rows of M/N for K-major, 8 K rows for MN-major).
        let fixed = (1u64 << 16) | (((8 * span_b as u64) >> 4) << 32) | (mode << 62);
        self.line(format!("cvt.u64.u32 {a64}, {addr};"));
        self.line(format!("bfe.u64 {a64}, {a64}, 4, 14;"));
        self.line(format!("or.b64 {desc}, {a64}, {fixed};"));
        Ok((desc, view.layout.mn_major() as u32))
    }

    /// The arguments of `stmatrix_bf16` / `store_fragment_f32` (`tile, &acc, j`): the warpgroup's whole
    /// `Shared<[elem; 64 * cols], Swizzle128>` tile and registers `regs·j .. regs·(j + 1)` of the accumulator
    /// fragment (box `j`, `cols` columns).
    fn fragment_box(
        &mut self,
        args: &[Expr],
        name: &str,
        elem: ScalarType,
        cols: u32,
        regs: usize,
    ) -> R<(View, Vec<Val>)> {
        let tile = self.mem_arg(&args[0])?;
        if tile.space != Space::Shared
            || !whole_allocation(&tile)
            || tile.elem != elem
            || tile.layout != SmemLayout::Swizzle128
            || tile.len != 64 * cols
        {
            return Err(err(
                "STMATRIX",
                args[0].span,
                format!(
                    "`{name}` stores into a whole `Shared<[{elem}; 64 * {cols}], Swizzle128>` (this is {} {} in {})",
                    tile.len, tile.elem, tile.layout
                ),
            ));
        }
        let frag = match self.expr(&args[1])? {
            Value::Arr(v, ScalarType::F32) => v,
            _ => {
                return Err(err(
                    "STMATRIX",
                    args[1].span,
                    "the fragment is `&acc` with `acc: [f32; N / 2]`",
                ))
            }
        };
        let j = self.const_u32(&args[2])? as usize;
        if frag.len() % regs != 0 || regs * (j + 1) > frag.len() {
            return Err(err(
                "STMATRIX",
                args[2].span,
                format!(
                    "box {j} of a {}-register fragment: a box is {regs} registers ({cols} columns), the fragment has {} box(es)",
                    frag.len(),
                    frag.len() / regs
                ),
            ));
        }
        Ok((tile, frag[regs * j..regs * (j + 1)].to_vec()))
    }

    /// `stmatrix_bf16(tile, &acc, j)`: columns `64j .. 64j + 64` of the warpgroup's m64nN accumulator fragment
    /// (the wgmma D layout: registers `32j .. 32j + 32` of each thread) rounded to bf16 into its 64 × 64 tile
    /// in the 128-byte swizzle, with four `stmatrix.m8n8.x4` per warp (PTX ISA §9.7.14.5.15; the layout TMA
    /// stores from). Box registers `8q .. 8q + 8` are columns `16q .. 16q + 16` of the warp's 16 rows: four
    /// 8 × 8 matrices (rows 0–7 and 8–15 of column blocks `2q`, `2q + 1`), lane `l` giving the address of
    /// row `l % 8` of matrix `l / 8`.
    fn stmatrix_bf16(&mut self, args: &[Expr]) -> R<()> {
        let (tile, vals) = self.fragment_box(args, "stmatrix_bf16", ScalarType::BF16, 64, 32)?;
        let vals = &vals[..];
        // Within the warpgroup: warp w, lane l; this lane addresses row 16w + 8·((l / 8) % 2) + l % 8 and
        // column block 2q + l / 16.
        let t = self.ctx.thr.clone();
        let t = self.u32_bin("rem", &t, &Val::imm_u32(128));
        let w = self.u32_bin("div", &t, &Val::imm_u32(32));
        let l = self.u32_bin("rem", &t, &Val::imm_u32(32));
        let m = self.u32_bin("div", &l, &Val::imm_u32(8));
        let half = self.u32_bin("rem", &m, &Val::imm_u32(2));
        let half = self.u32_bin("mul", &half, &Val::imm_u32(8));
        let r = self.u32_bin("rem", &l, &Val::imm_u32(8));
        let w16 = self.u32_bin("mul", &w, &Val::imm_u32(16));
        let row = self.u32_bin("add", &w16, &half);
        let row = self.u32_bin("add", &row, &r);
        let hi = self.u32_bin("div", &l, &Val::imm_u32(16));
        let row_bytes = self.u32_bin("mul", &row, &Val::imm_u32(128));
        let base = self.address_raw(&tile, vec![Val::imm_u32(0)], args[0].span)?;
        let line = self.u32_bin("add", &Val::Reg(base, ScalarType::U32), &row_bytes);
        for q in 0..4u32 {
            let cb = self.u32_bin("add", &hi, &Val::imm_u32(2 * q));
            // The 128-byte swizzle: 16-byte chunk `cb` of row `row` sits at chunk `cb ^ (row % 8)`.
            let chunk = self.fresh(ScalarType::U32);
            let (cbr, rr) = (self.op(&cb, ScalarType::U32), self.op(&r, ScalarType::U32));
            self.line(format!("xor.b32 {chunk}, {cbr}, {rr};"));
            let off = self.u32_bin("mul", &Val::Reg(chunk, ScalarType::U32), &Val::imm_u32(16));
            let addr = self.u32_bin("add", &line, &off);
            let mut regs = Vec::new();
            for k in 0..4 {
                let i = (8 * q + 2 * k) as usize;
                let (lo, hi_v) = (
                    self.op(&vals[i], ScalarType::F32),
                    self.op(&vals[i + 1], ScalarType::F32),
                );
                let p = self.fresh(ScalarType::U32);
                // The lower column goes to the low half.
                self.line(format!("cvt.rn.bf16x2.f32 {p}, {hi_v}, {lo};"));
                regs.push(p);
            }
            let a = self.op(&addr, ScalarType::U32);
            self.line(format!(
                "stmatrix.sync.aligned.m8n8.x4.shared.b16 [{a}], {{{}}};",
                regs.join(", ")
            ));
        }
        self.sm90a = true;
        Ok(())
    }

    /// `store_fragment_f32(tile, &acc, j)`: columns `32j .. 32j + 32` of the warpgroup's m64nN accumulator
    /// fragment (registers `16j .. 16j + 16` of each thread) into its 64 × 32 f32 tile in the 128-byte
    /// swizzle (128-byte rows: the layout `tma_store` reads), unrounded. Thread `t` (warp `w`, lane `l`) holds
    /// rows `16w + l / 4` (registers `4q`, `4q + 1`) and `+ 8` (`4q + 2`, `4q + 3`), columns `8q + 2·(l % 4)`
    /// and the next: one `st.shared.v2.f32` each, at 16-byte chunk `(2q + (l % 4) / 2) ^ (row % 8)` of the
    /// row (`row % 8` is `l / 4` for both rows), byte `8·(l % 2)` of the chunk.
    fn store_fragment_f32(&mut self, args: &[Expr]) -> R<()> {
        let (tile, vals) =
            self.fragment_box(args, "store_fragment_f32", ScalarType::F32, 32, 16)?;
        let vals = &vals[..];
        let t = self.ctx.thr.clone();
        let t = self.u32_bin("rem", &t, &Val::imm_u32(128));
        let w = self.u32_bin("div", &t, &Val::imm_u32(32));
        let l = self.u32_bin("rem", &t, &Val::imm_u32(32));
        let r = self.u32_bin("div", &l, &Val::imm_u32(4));
        let w16 = self.u32_bin("mul", &w, &Val::imm_u32(16));
        let row = self.u32_bin("add", &w16, &r);
        let row_bytes = self.u32_bin("mul", &row, &Val::imm_u32(128));
        let base = self.address_raw(&tile, vec![Val::imm_u32(0)], args[0].span)?;
        let line = self.u32_bin("add", &Val::Reg(base, ScalarType::U32), &row_bytes);
        let quad = self.u32_bin("rem", &l, &Val::imm_u32(4));
        let pair = self.u32_bin("div", &quad, &Val::imm_u32(2));
        let odd = self.u32_bin("rem", &l, &Val::imm_u32(2));
        let within = self.u32_bin("mul", &odd, &Val::imm_u32(8));
        for q in 0..4u32 {
            let cb = self.u32_bin("add", &pair, &Val::imm_u32(2 * q));
            let chunk = self.fresh(ScalarType::U32);
            let (cbr, rr) = (self.op(&cb, ScalarType::U32), self.op(&r, ScalarType::U32));
            self.line(format!("xor.b32 {chunk}, {cbr}, {rr};"));
            let off = self.u32_bin("mul", &Val::Reg(chunk, ScalarType::U32), &Val::imm_u32(16));
            let off = self.u32_bin("add", &off, &within);
            let top = self.u32_bin("add", &line, &off);
            // Rows 8 further down: 8 · 128 bytes, the same chunk (row % 8 is unchanged).
            let bottom = self.u32_bin("add", &top, &Val::imm_u32(8 * 128));
            for (h, addr) in [(0usize, top), (2, bottom)] {
                let i = 4 * q as usize + h;
                let (lo, hi) = (
                    self.op(&vals[i], ScalarType::F32),
                    self.op(&vals[i + 1], ScalarType::F32),
                );
                let a = self.op(&addr, ScalarType::U32);
                self.line(format!("st.shared.v2.f32 [{a}], {{{lo}, {hi}}};"));
            }
        }
        Ok(())
    }

    /// `setmaxnreg` sets the executing warpgroup's count *relative to the count it has* (`.inc` needs
    /// current ≤ n, `.dec` current ≥ n, PTX ISA §9.7.19.5), so each warpgroup gets one count: every call that a
    /// warpgroup may run sets the same value, and the direction is taken against the entry count. Then the
    /// register file must hold every warpgroup's count at once (64 K per SM, one block of these).
    fn set_max_regs(&mut self, args: &[Expr], span: Span) -> R<()> {
        let n = self.const_u32(&args[0])?;
        // The checker knows a generic device function's count only as an expression of its const generics.
        if !(24..=256).contains(&n) || n % 8 != 0 {
            return Err(err(
                "SETMAXNREG",
                args[0].span,
                format!("`set_max_regs({n})`: a warpgroup's register count must be a multiple of 8 in 24..=256"),
            )
            .help("e.g. 40 for a TMA producer, 232 for wgmma consumers (PTX ISA §9.7.19.5)"));
        }
        let entry = self.maxnreg_entry();
        let block = self.threads.unwrap_or(1024);
        let units = self.ctx.units.clone();
        let groups = block.div_ceil(128);
        let wg = |g: u32| (128 * g, (128 * g + 128).min(block));
        for (m, at, other) in &self.set_max_regs_used {
            let shared = (0..groups).find(|&g| {
                let (lo, hi) = wg(g);
                ring_sites::meets(&units, lo, hi) && ring_sites::meets(other, lo, hi)
            });
            if let (Some(g), true) = (shared, *m != n) {
                let (lo, hi) = wg(g);
                return Err(err(
                    "SETMAXNREG",
                    span,
                    format!(
                        "`set_max_regs({n})`: warpgroup {g} (threads {lo}..{hi}) also sets its register count to {m}; \
                         a warpgroup sets one count"
                    ),
                )
                .note(*at, format!("`set_max_regs({m})` here"))
                .help("setmaxnreg raises or lowers the count a warpgroup has: call it once per warpgroup, e.g. at the top of each `split` arm"));
            }
        }
        self.set_max_regs_used.push((n, span, units));
        // Each warpgroup holds the count it sets, or the entry count.
        let total: u64 = (0..groups)
            .map(|g| {
                let (lo, hi) = wg(g);
                let v = self
                    .set_max_regs_used
                    .iter()
                    .find(|(_, _, u)| ring_sites::meets(u, lo, hi))
                    .map_or(entry, |(v, _, _)| *v);
                v as u64 * (hi - lo) as u64
            })
            .sum();
        if total > 65536 {
            let threads = ring_sites::distinct(&self.ctx.units);
            return Err(err(
                "SETMAXNREG",
                span,
                format!(
                    "`set_max_regs({n})` for {threads} threads brings the block's registers to {total}, over the 65536 of an SM"
                ),
            )
            .help("e.g. 3 warpgroups: producer 40, two consumers 232 (40·128 + 2·232·128 = 64512)"));
        }
        self.sm90a = true;
        match n.cmp(&entry) {
            std::cmp::Ordering::Greater => {
                self.line(format!("setmaxnreg.inc.sync.aligned.u32 {n};"))
            }
            std::cmp::Ordering::Less => self.line(format!("setmaxnreg.dec.sync.aligned.u32 {n};")),
            std::cmp::Ordering::Equal => {}
        }
        Ok(())
    }

    /// Registers per thread at entry when the kernel uses `set_max_regs`: the block's share of the 64 K
    /// register file, a multiple of 8, at most 256 (ptxas needs a known entry count, PTX ISA §9.7.19.5).
    pub(super) fn maxnreg_entry(&self) -> u32 {
        let t = self.threads.unwrap_or(1024).max(1);
        // ptxas ignores (with a warning) a `.maxnreg` above 255: the largest multiple of 8 below it.
        (65536 / t / 8 * 8).min(248)
    }
}

/// The TMA box that fills an allocation of `len` elements with `layout` (innermost first).
pub(super) fn tma_box(
    layout: SmemLayout,
    len: u32,
    elem: ScalarType,
    rank: u32,
) -> Result<Vec<u32>, String> {
    let bytes = len as u64 * elem.size() as u64;
    match (layout, rank) {
        (SmemLayout::Linear, 1) if len <= 256 && bytes.is_multiple_of(16) => Ok(vec![len]),
        (SmemLayout::Linear, _) => Err(format!(
            "a `Linear` allocation of {len} {elem} is filled by a rank-1 box of at most 256 elements and a multiple of 16 bytes"
        )),
        (l, 2) => {
            let span = l.span() as u64;
            let inner = (span / elem.size() as u64) as u32;
            let rows = bytes / span;
            if !bytes.is_multiple_of(span) || rows == 0 || rows > 256 {
                return Err(format!(
                    "a `{l}` allocation of {len} {elem} is not 1..=256 rows of {span} bytes"
                ));
            }
            Ok(vec![inner, rows as u32])
        }
        (l, r) => Err(format!("a `{l}` allocation is filled by a rank-2 box, not rank {r}")),
    }
}

/// A `Shared<[T; N], L>` device-function parameter takes a whole shared allocation or ring slot (`|x| x`
/// partitions included) of element `T`, layout `L` and at least `N` elements: what the callee's wgmma
/// descriptors and TMA boxes assume of it.
pub(super) fn shared_param(
    view: &View,
    (elem, len, layout, mutable): (ScalarType, i64, SmemLayout, bool),
    name: &str,
    span: Span,
) -> R<()> {
    let whole = whole_allocation(view);
    let fits = view.space == Space::Shared
        && whole
        && view.elem == elem
        && view.layout == layout
        && view.len as i64 >= len;
    if fits {
        return Ok(());
    }
    let kind = if mutable { "SharedMut" } else { "Shared" };
    let what = if view.space != Space::Shared {
        "global memory".to_string()
    } else if !whole {
        format!(
            "a partition of an allocation of {} elements of {} into smaller parts (each unit's slice)",
            view.len, view.elem
        )
    } else {
        format!(
            "an allocation of {} elements of {} in layout {}",
            view.len, view.elem, view.layout
        )
    };
    let mut d = err(
        "CALL-ARG",
        span,
        format!(
            "parameter `{name}` is `{kind}<[{elem}; {len}], {layout}>`, which takes a whole shared allocation or \
             ring slot (or an `|x| x` view of one) of at least {len} {elem} in that layout; this is {what}"
        ),
    );
    if view.space == Space::Shared && !whole {
        d = d.help(format!(
            "a `{kind}` parameter is the allocation its wgmma descriptors and TMA boxes start at; to hand a unit its own \
             slice, declare the parameter as a pointer at that perspective (`#[at(thread[32])] {name}: {}{elem}`) \
             and index it",
            if mutable { "*mut " } else { "*const " }
        ));
    }
    Err(d)
}

impl Em {
    /// TMA moves boxes to and from shared memory at 128-byte aligned addresses (PTX ISA,
    /// `cp.async.bulk.tensor`): the dynamic shared memory starts on 128 bytes in a kernel that uses TMA, and
    /// an allocation at a known offset that is not a multiple of 128 is refused here (swizzled layouts are
    /// aligned further; a linear one is aligned only to 16 bytes after another allocation).
    /// [TMA] A TMA copy moves a whole box per call: one thread issues it for each copy of the memory it moves.
    /// Called from code that runs several threads per unit (`group(thread[1], ..)` in a warp, a warp's
    /// code), or from several units while the shared memory is the block's (not partitioned per unit),
    /// every thread would copy the same box: duplicate writes and, for loads, transaction bytes the
    /// mbarrier does not expect.
    pub(super) fn tma_issuer(&mut self, what: &str, mem: &Expr, span: Span) -> R<()> {
        let units = self.ctx.units.clone();
        let one_each = units.iter().all(|&(_, l)| l == 1);
        let blocks_own = match &mem.kind {
            ExprKind::Var(id) => matches!(
                self.lookup(id)?,
                Binding::Mem { persp, .. } if persp.level != crate::ast::Level::Thread
            ),
            _ => false,
        };
        if one_each && !(blocks_own && units.len() > 1) {
            return Ok(());
        }
        let threads = ring_sites::distinct(&units);
        Err(err(
            "TMA",
            span,
            format!(
                "`{what}` copies a whole box and is issued by one thread, but {threads} threads run this call (code at {}) and each would copy the same box",
                self.ctx.persp
            ),
        )
        .help("issue it from one thread of the code the memory belongs to (of the block for a block's allocation or ring slot, of the warpgroup for the tile it was handed): `match split(thread) { 1 => { .. } }`"))
    }

    pub(super) fn tma_smem_aligned(&mut self, view: &View, what: &str, span: Span) -> R<()> {
        self.smem_align = self.smem_align.max(128);
        if let Val::Imm(super::Imm::Int(off), _) = &view.base {
            if off % 128 != 0 {
                return Err(err(
                    "TMA",
                    span,
                    format!("{what} starts at byte {off} of shared memory; TMA needs a multiple of 128"),
                )
                .help("declare it before the kernel's other shared allocations, or give it a swizzled layout (aligned to 256 bytes or more)"));
            }
        }
        Ok(())
    }
}

/// The view is a whole shared allocation: no partition, or only `|x| x` ones (which hand the whole
/// allocation to a group of threads, e.g. a consumer warpgroup's own epilogue tile).
fn whole_allocation(view: &View) -> bool {
    view.maps
        .iter()
        .all(|m| matches!((&m.params[..], &m.body.kind), ([p], ExprKind::Var(v)) if *p == v.name))
}

/// The variable an argument passes (`x`, `&mut x`, `x[i]`), if it is one.
fn root_var(e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Var(id) => Some(id.name.clone()),
        ExprKind::Ref { expr, .. } => root_var(expr),
        ExprKind::Index { base, .. } => root_var(base),
        _ => None,
    }
}
