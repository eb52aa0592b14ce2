//! The sm_90 asynchronous stores and reductions into shared::cluster and global memory: `st.async`
//! (PTX ISA §9.7.8.12), `red.async` (§9.7.12.7), `cp.reduce.async.bulk` (§9.7.8.24.7) and the
//! shared::cta → shared::cluster `cp.async.bulk` (§9.7.8.24.6).
//!
//! Like the other bulk copies of the emulator they complete when issued, a legal schedule: the
//! destination is written (or reduced into, element by element, with the arithmetic of `atom`) at once,
//! then the completion happens — a complete_tx of the bytes written on the mbarrier of the destination's
//! block (`.mbarrier::complete_tx::bytes`, in this block or, through the lent cluster state, another),
//! or, for `.bulk_group`, nothing until the thread's `cp.async.bulk.wait_group`, which releases the
//! async-proxy hold on the shared source (`proxy.rs`: the source of a bulk reduction into global memory
//! is read through the async proxy, like a TMA store's box). What the ISA leaves undefined is a fault:
//! a size that is not a multiple of 16 or an address not 16-byte aligned (bulk forms), a destination
//! or mbarrier outside the shared::cluster window, the mbarrier in another block than the destination,
//! `st.async` in a one-block cluster, `red.async` into the executing block.
//!
//! Race detection: `st.async` and `red.async` are generic-proxy accesses (§9.7.12.7: "performed in the
//! generic proxy"), tracked as this thread's store (reduction) when they land in this block, and ordered
//! before the mbarrier phase they complete, like a TMA load: a thread that reads the destination without
//! waiting for that phase races with the issuing thread. The bulk forms write through the async proxy.
//! Accesses to another block's shared memory are not race-checked (as for `ld/st.shared::cluster`).

use super::super::tensormap::TensorDataType;
use super::*;

impl L<'_> {
    /// `st.async` / `red.async` (`op`) of `vecw` elements of `ty` by the lanes `exec`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn exec_async_store(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        form: (Option<AtomOp>, PtxType, u8, bool),
    ) -> Step {
        let mut mm = exec;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            if !self.async_store_lane(b, wi, w, pc, l, form) {
                self.finish_access(pc);
                return Step::Stop;
            }
        }
        self.finish_access(pc);
        Self::advance(w, mask);
        Step::Continue
    }

    /// A shared::cluster address from an operand's value: a generic one must lie in the shared window
    /// (the ISA leaves anything else undefined), a `.shared::cluster` one is 32 bits. `None` after a fault.
    fn cluster_address(
        &mut self,
        b: &Block,
        wi: usize,
        l: usize,
        pc: u32,
        a: u64,
        generic: bool,
    ) -> Option<u64> {
        let window = SHARED_WINDOW..SHARED_WINDOW + WINDOW;
        let sa = if generic && window.contains(&a) {
            Some(a - SHARED_WINDOW)
        } else if !generic && a >> 32 == 0 {
            Some(a)
        } else {
            None
        };
        if sa.is_none() {
            let what = self.m.code[pc as usize].kind.clone();
            let msg = format!("{what:?}: address {a:#x} is not in the shared::cluster window");
            self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
        }
        sa
    }

    /// One lane's `st.async` / `red.async`; false after a fault (other than a race).
    #[allow(clippy::too_many_arguments)]
    fn async_store_lane(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &Warp,
        pc: u32,
        l: usize,
        (op, ty, vecw, generic): (Option<AtomOp>, PtxType, u8, bool),
    ) -> bool {
        let m = self.m;
        let args = &m.code[pc as usize].args;
        let name = if op.is_some() {
            "red.async"
        } else {
            "st.async"
        };
        let (es, vecw) = (ty.size(), vecw as usize);
        let size = es * vecw;
        let a = self.operand_addr(b, w, wi, &args[0], l, generic);
        let Some(sa) = self.cluster_address(b, wi, l, pc, a, generic) else {
            return false;
        };
        let csize = self.cluster_size();
        if csize < 2 {
            let msg = format!(
                "{name} in a cluster of {csize} block: the PTX ISA requires %cluster_nctarank > 1"
            );
            self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
            return false;
        }
        let Some(loc) = self.resolve(b, wi, l, Space::Shared, sa, size, pc) else {
            return false;
        };
        let dst_rank = match loc {
            Loc::Remote(r, _) => r as u32,
            _ => b.crank,
        };
        if op.is_some() && dst_rank == b.crank {
            let msg = format!("red.async into the executing block's own shared memory ({sa:#x}): the PTX ISA requires another block of the cluster");
            self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
            return false;
        }
        let acc = if op.is_some() {
            Acc::Atomic
        } else {
            Acc::Write
        };
        self.track(b, wi, l, loc, size, acc, pc, sa);
        let vals = args[1].elements();
        for (k, v) in vals.iter().enumerate().take(vecw) {
            let x = self.val(b, w, wi, v, l);
            let at = offset_loc(loc, k * es);
            let new = match op {
                Some(op) => {
                    let old = self.load(b, at, es);
                    atomic_op(op, ty, old, x, 0)
                }
                None => x,
            };
            self.store(b, at, es, new);
        }
        let mb = self.operand_addr(b, w, wi, &args[2], l, generic);
        let Some(mb) = self.cluster_address(b, wi, l, pc, mb, generic) else {
            return false;
        };
        self.mbar_complete_tx_at(b, wi, l, pc, mb, dst_rank, size as i64, name)
    }

    /// `cp.reduce.async.bulk` (`red`: its operation and element type) into global memory (`cluster`
    /// false) or shared::cluster memory, or the shared::cta → shared::cluster `cp.async.bulk` (`red`
    /// `None`), by the lanes `exec`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn exec_bulk_async(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        red: Option<(AtomOp, PtxType)>,
        cluster: bool,
    ) -> Step {
        let mut mm = exec;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            if !self.bulk_async_lane(b, wi, w, pc, l, red, cluster) && self.abort {
                self.finish_access(pc);
                return Step::Stop;
            }
        }
        self.finish_access(pc);
        Self::advance(w, mask);
        Step::Continue
    }

    /// One lane's bulk reduction or shared::cluster bulk copy: checks (§9.7.8.24: size a multiple of 16,
    /// both addresses 16-byte aligned, the source in this block), the async-proxy read of the source, the
    /// element-wise reduction (or copy), then the completion. False after a fault.
    #[allow(clippy::too_many_arguments)]
    fn bulk_async_lane(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &Warp,
        pc: u32,
        l: usize,
        red: Option<(AtomOp, PtxType)>,
        cluster: bool,
    ) -> bool {
        let m = self.m;
        let args = &m.code[pc as usize].args;
        let name = match (red, cluster) {
            (None, _) => "cp.async.bulk.shared::cluster.shared::cta",
            (Some(_), true) => "cp.reduce.async.bulk.shared::cluster",
            (Some(_), false) => "cp.reduce.async.bulk.global",
        };
        let dst = self.operand_addr(b, w, wi, &args[0], l, false);
        let src = self.operand_addr(b, w, wi, &args[1], l, false);
        let size = self.val(b, w, wi, &args[2], l) as u32 as usize;
        let problem = if !size.is_multiple_of(16) || size == 0 {
            Some((
                FaultKind::InvalidOperation,
                format!("{name}: size {size} is not a positive multiple of 16 (PTX ISA §9.7.8.24)"),
            ))
        } else if !dst.is_multiple_of(16) || !src.is_multiple_of(16) {
            Some((FaultKind::Misaligned, format!("{name}: addresses {dst:#x} (destination) and {src:#x} (source) must be 16-byte aligned")))
        } else {
            None
        };
        if let Some((kind, msg)) = problem {
            self.fault(b, wi, Some(l as u32), pc, kind, msg);
            return false;
        }
        let Some(Loc::Shared(soff)) = self.bulk_source(b, wi, l, pc, src, size, name) else {
            return false;
        };
        let dloc = if cluster {
            let Some(sa) = self.cluster_address(b, wi, l, pc, dst, false) else {
                return false;
            };
            self.resolve(b, wi, l, Space::Shared, sa, size, pc)
        } else {
            self.resolve(b, wi, l, Space::Global, dst, size, pc)
        };
        let Some(dloc) = dloc else {
            return false;
        };
        // The source: read through the async proxy (every generic write to it fenced), and held until the
        // thread's bulk wait for the `.bulk_group` form.
        self.track(b, wi, l, Loc::Shared(soff), size, Acc::Read, pc, src);
        if cluster {
            self.proxy_async_check(b, wi, l, pc, soff, soff + size, name);
        } else {
            let tid = self.tid_of(wi, l) as usize;
            let group = b.proxy.store_group(tid, self.nthreads as usize);
            let holder = super::proxy::Holder::Store {
                tid: tid as u32,
                group,
            };
            self.proxy_async_read(b, wi, l, pc, soff, soff + size, holder, name);
        }
        let data = self.mem_slice(b, Loc::Shared(soff))[..size].to_vec();
        if !self.bulk_write(b, wi, l, pc, dloc, dst, &data, red) {
            return !self.abort;
        }
        if !cluster {
            return true;
        }
        let dst_rank = match dloc {
            Loc::Remote(r, _) => r as u32,
            _ => b.crank,
        };
        let mb = self.operand_addr(b, w, wi, &args[3], l, false);
        let Some(mb) = self.cluster_address(b, wi, l, pc, mb, false) else {
            return false;
        };
        self.mbar_complete_tx_at(b, wi, l, pc, mb, dst_rank, size as i64, name)
    }

    /// The shared::cta source of a bulk operation: `size` bytes of this block's shared memory.
    #[allow(clippy::too_many_arguments)]
    fn bulk_source(
        &mut self,
        b: &Block,
        wi: usize,
        l: usize,
        pc: u32,
        src: u64,
        size: usize,
        name: &str,
    ) -> Option<Loc> {
        let loc = self.resolve(b, wi, l, Space::Shared, src, size, pc)?;
        if !matches!(loc, Loc::Shared(_)) {
            let msg = format!(
                "{name}: the source {src:#x} is another block's shared memory; it must be shared::cta"
            );
            self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
            return None;
        }
        Some(loc)
    }

    /// Writes (`red` `None`) or reduces `data` into the destination `dloc` (at address `dst`). A write into
    /// this block's shared memory is an async-proxy write: it must not overwrite bytes an async read
    /// still holds. False after a fault.
    #[allow(clippy::too_many_arguments)]
    fn bulk_write(
        &mut self,
        b: &mut Block,
        wi: usize,
        l: usize,
        pc: u32,
        dloc: Loc,
        dst: u64,
        data: &[u8],
        red: Option<(AtomOp, PtxType)>,
    ) -> bool {
        let size = data.len();
        let acc = if red.is_some() {
            Acc::Atomic
        } else {
            Acc::Write
        };
        self.async_write = true;
        self.track(b, wi, l, dloc, size, acc, pc, dst);
        self.async_write = false;
        if let Loc::Shared(o) = dloc {
            self.proxy_write(b, wi, l, pc, o, size, false);
        }
        match red {
            None => self.mem_slice(b, dloc)[..size].copy_from_slice(data),
            Some((op, ty)) => {
                let es = ty.size();
                for k in (0..size).step_by(es) {
                    let x = exec_fast::read_le(data, k, es);
                    let at = offset_loc(dloc, k);
                    let old = self.load(b, at, es);
                    self.store(b, at, es, atomic_op(op, ty, old, x, 0));
                }
            }
        }
        true
    }
}

/// The element type a tensor reduction `op` works on for the map's data type, per the PTX ISA's table
/// (§9.7.8.24.10, `cp.reduce.async.bulk.tensor`): add on .u32 .s32 .u64 .f32 .f16 .bf16; min/max on .u32
/// .s32 .u64 .s64 .f16 .bf16; inc/dec on .u32; and/or/xor on .b32 .b64 (any 32/64-bit integer map).
pub(super) fn tensor_reduce_type(op: AtomOp, dt: TensorDataType) -> Option<PtxType> {
    use TensorDataType as T;
    let ty = match dt {
        T::U32 => PtxType::U32,
        T::I32 => PtxType::S32,
        T::U64 => PtxType::U64,
        T::I64 => PtxType::S64,
        T::F16 => PtxType::F16,
        T::Bf16 => PtxType::BF16,
        T::F32 | T::F32Ftz => PtxType::F32,
        _ => return None,
    };
    let ok = match op {
        AtomOp::Add => !matches!(ty, PtxType::S64),
        AtomOp::Min | AtomOp::Max => ty != PtxType::F32,
        AtomOp::Inc | AtomOp::Dec => ty == PtxType::U32,
        AtomOp::And | AtomOp::Or | AtomOp::Xor => !ty.is_float(),
        _ => false,
    };
    ok.then_some(ty)
}
