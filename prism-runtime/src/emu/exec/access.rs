//! Memory instructions: `ld`, `st`, `atom` / `red`, `cp.async`, `cp.async.bulk`, the TMA tensor copies
//! (`tma.rs`), and the async-proxy fence and bulk groups (`proxy.rs`).

use super::*;

impl L<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_ld(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        pc: u32,
        mask: u32,
        exec: u32,
        space: &Space,
        ty: &PtxType,
        vw: &u8,
    ) -> Step {
        let args = &ins.args;
        let (space, ty, vw) = (*space, *ty, *vw as usize);
        let es = ty.size();
        let total = es * vw;
        let generic = space == Space::Generic;
        let mut ok = true;
        lanes!(exec, l, {
            let a = match &args[1] {
                Operand::Addr(base, off) => self.addr(w, base, *off, l, generic),
                o => self.val(b, w, wi, o, l),
            };
            let loc = match self.resolve(b, wi, l, space, a, total, pc) {
                Some(x) => x,
                None => {
                    ok = false;
                    break;
                }
            };
            self.track(b, wi, l, loc, total, Acc::Read, pc, a);
            if ins.order & ORDER_ACQUIRE != 0 {
                self.acquire(b, wi, l, loc);
            } else if ins.order & ORDER_STRONG != 0 && self.cfg.check_races {
                b.strong_loads.insert(self.tid_of(wi, l), loc);
            }
            for k in 0..vw {
                let lk = offset_loc(loc, k * es);
                let v = if es <= 8 { self.load(b, lk, es) } else { 0 };
                let v = if ty.is_signed() {
                    sext(v, ty.bits()) as u64
                } else {
                    v
                };
                let dst = match &args[0] {
                    Operand::Vec(ds) => ds.get(k),
                    d => Some(d),
                };
                if let Some(d) = dst {
                    Self::set(w, d, l, v);
                }
            }
        });
        self.finish_access(pc);
        if !ok {
            return Step::Stop;
        }
        Self::advance(w, mask);
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_st(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        pc: u32,
        mask: u32,
        exec: u32,
        space: &Space,
        ty: &PtxType,
        vw: &u8,
    ) -> Step {
        let args = &ins.args;
        let (space, ty, vw) = (*space, *ty, *vw as usize);
        let es = ty.size();
        let total = es * vw;
        let generic = space == Space::Generic;
        let mut ok = true;
        lanes!(exec, l, {
            let a = match &args[0] {
                Operand::Addr(base, off) => self.addr(w, base, *off, l, generic),
                o => self.val(b, w, wi, o, l),
            };
            let loc = match self.resolve(b, wi, l, space, a, total, pc) {
                Some(x) => x,
                None => {
                    ok = false;
                    break;
                }
            };
            let mut vals = [0u64; 8];
            for (k, v) in vals.iter_mut().enumerate().take(vw) {
                let src = match &args[1] {
                    Operand::Vec(ss) => ss.get(k),
                    s => Some(s),
                };
                *v = src.map(|s| self.val(b, w, wi, s, l)).unwrap_or(0);
            }
            if !self.same_store_as_earlier_lane(exec, l, a, &vals[..vw]) {
                let acc = if ins.order & ORDER_STRONG != 0 {
                    Acc::Atomic
                } else {
                    Acc::Write
                };
                self.track(b, wi, l, loc, total, acc, pc, a);
            }
            // A relaxed or volatile store after a fence releases (fence-based synchronization); the fence
            // is spent on it.
            let fenced = ins.order & ORDER_STRONG != 0 && b.fenced.remove(&self.tid_of(wi, l));
            if ins.order & ORDER_RELEASE != 0 || fenced {
                self.release(b, wi, l, loc);
            }
            for (k, &v) in vals.iter().enumerate().take(vw) {
                self.store(b, offset_loc(loc, k * es), es.min(8), v);
            }
        });
        self.finish_access(pc);
        if !ok {
            return Step::Stop;
        }
        Self::advance(w, mask);
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_atom(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        pc: u32,
        mask: u32,
        exec: u32,
        space: &Space,
        op: &AtomOp,
        ty: &PtxType,
        red: &bool,
    ) -> Step {
        let args = &ins.args;
        let (space, op, ty, red) = (*space, *op, *ty, *red);
        let es = ty.size();
        let ai = if red { 0 } else { 1 };
        let generic = space == Space::Generic;
        let mut ok = true;
        lanes!(exec, l, {
            let a = match &args[ai] {
                Operand::Addr(base, off) => self.addr(w, base, *off, l, generic),
                o => self.val(b, w, wi, o, l),
            };
            let loc = match self.resolve(b, wi, l, space, a, es, pc) {
                Some(x) => x,
                None => {
                    ok = false;
                    break;
                }
            };
            self.track(b, wi, l, loc, es, Acc::Atomic, pc, a);
            self.atom_order(b, wi, l, loc, op, ins.order);
            let x = self.val(b, w, wi, &args[ai + 1], l);
            let y = if op == AtomOp::Cas {
                self.val(b, w, wi, &args[ai + 2], l)
            } else {
                0
            };
            let old = self.load(b, loc, es);
            let new = atomic_op(op, ty, old, x, y);
            self.store(b, loc, es, new);
            if !red {
                Self::set(w, &args[0], l, old);
            }
        });
        self.atomics += 1;
        self.finish_access(pc);
        if !ok {
            return Step::Stop;
        }
        Self::advance(w, mask);
        Step::Continue
    }

    /// What a scalar atomic on `loc` does for the race detector: `cas`/`exch` synchronize through the
    /// location, `.acquire`/`.release` (`order`) order, and a relaxed one spends a preceding fence.
    fn atom_order(&mut self, b: &mut Block, wi: usize, l: usize, loc: Loc, op: AtomOp, order: u8) {
        if self.cfg.check_races && matches!(op, AtomOp::Cas | AtomOp::Exch) {
            self.sync_through_atomic(b, wi, l, loc);
        }
        if order & ORDER_ACQUIRE != 0 {
            self.acquire(b, wi, l, loc);
        }
        if order & ORDER_RELEASE != 0 {
            self.release(b, wi, l, loc);
        }
        // A relaxed read-modify-write after a fence (`__threadfence(); atomicInc(&count, ..)`, the
        // last-block reduction): acquire and release on its location; the fence is spent on it.
        if order & (ORDER_ACQUIRE | ORDER_RELEASE) == 0 && self.cfg.check_races {
            let t = self.tid_of(wi, l);
            if b.fenced.remove(&t) {
                self.acquire(b, wi, l, loc);
                self.release(b, wi, l, loc);
            }
            // A fence after it makes it an acquire (`atomicCAS(lock, 0, 1); __threadfence();`).
            b.strong_loads.insert(t, loc);
        }
    }

    /// `atom{.sem}{.scope}{.space}.cas.b128 d, [a], b, c` and `.exch.b128 d, [a], b` (sm_90; CUDA's
    /// 16-byte `atomicCAS`/`atomicExch`, `cuda::atomic_ref` of a 16-byte type): one atomic on 16
    /// bytes aligned to 16, the values in register pairs (`d`, `b`, `c` decode to `{lo, hi}`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_atom128(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        pc: u32,
        mask: u32,
        exec: u32,
        space: &Space,
        op: &AtomOp,
    ) -> Step {
        let args = &ins.args;
        let (space, op) = (*space, *op);
        let (dst, x, y) = (
            args[0].elements(),
            args[2].elements(),
            args.get(3).map(Operand::elements),
        );
        let mut ok = true;
        lanes!(exec, l, {
            let a = match &args[1] {
                Operand::Addr(base, off) => self.addr(w, base, *off, l, space == Space::Generic),
                o => self.val(b, w, wi, o, l),
            };
            let Some(loc) = self.resolve(b, wi, l, space, a, 16, pc) else {
                ok = false;
                break;
            };
            self.track(b, wi, l, loc, 16, Acc::Atomic, pc, a);
            self.atom_order(b, wi, l, loc, op, ins.order);
            let hi = offset_loc(loc, 8);
            let old = [self.load(b, loc, 8), self.load(b, hi, 8)];
            let pair =
                |e: &Self, v: &[Operand], w: &Warp| [0, 1].map(|k| e.val(b, w, wi, &v[k], l));
            let xv = pair(self, &x, w);
            let new = match (op, &y) {
                (AtomOp::Cas, Some(y)) if old == xv => pair(self, y, w),
                (AtomOp::Cas, _) => old,
                _ => xv,
            };
            self.store(b, loc, 8, new[0]);
            self.store(b, hi, 8, new[1]);
            for (d, v) in dst.iter().zip(old) {
                Self::set(w, d, l, v);
            }
        });
        self.atomics += 1;
        self.finish_access(pc);
        if !ok {
            return Step::Stop;
        }
        Self::advance(w, mask);
        Step::Continue
    }

    /// The sm_90 vector `atom` / `red` (`.v2/.v4/.v8` of f32, f16, bf16, f16x2, bf16x2 on global memory):
    /// each element is its own atomic (PTX ISA, `atom`: on a vector type "the atomicity is guaranteed
    /// separately for each of the individual scalar elements"); the address must be aligned to the whole
    /// vector and point to global memory (a generic address elsewhere faults).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_atom_vec(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        pc: u32,
        mask: u32,
        exec: u32,
        (space, op, ty, red, vw): (Space, AtomOp, PtxType, bool, u8),
    ) -> Step {
        let args = &ins.args;
        let (es, vw) = (ty.size(), vw as usize);
        let ai = if red { 0 } else { 1 };
        let (dst, src) = (args[0].elements(), args[ai + 1].elements());
        let mut ok = true;
        lanes!(exec, l, {
            let a = match &args[ai] {
                Operand::Addr(base, off) => self.addr(w, base, *off, l, space == Space::Generic),
                o => self.val(b, w, wi, o, l),
            };
            let Some(loc) = self.resolve(b, wi, l, space, a, es * vw, pc) else {
                ok = false;
                break;
            };
            if !matches!(loc, Loc::Global(..)) {
                let msg = format!(
                    "vector {} at {a:#x}: the address must be in global memory (PTX ISA, atom)",
                    if red { "red" } else { "atom" }
                );
                self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
                ok = false;
                break;
            }
            self.track(b, wi, l, loc, es * vw, Acc::Atomic, pc, a);
            if ins.order & ORDER_ACQUIRE != 0 {
                self.acquire(b, wi, l, loc);
            }
            if ins.order & ORDER_RELEASE != 0 {
                self.release(b, wi, l, loc);
            }
            for k in 0..vw {
                let at = offset_loc(loc, k * es);
                let x = src.get(k).map_or(0, |o| self.val(b, w, wi, o, l));
                let old = self.load(b, at, es);
                let new = atomic_op(op, ty, old, x, 0);
                self.store(b, at, es, new);
                if let Some(d) = dst.get(k).filter(|_| !red) {
                    Self::set(w, d, l, old);
                }
            }
        });
        self.atomics += 1;
        self.finish_access(pc);
        if !ok {
            return Step::Stop;
        }
        Self::advance(w, mask);
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_cp_async(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        pc: u32,
        mask: u32,
        exec: u32,
        sz: &u32,
    ) -> Step {
        let args = &ins.args;
        let sz = *sz as usize;
        let mut ok = true;
        lanes!(exec, l, {
            let dst = match &args[0] {
                Operand::Addr(base, off) => self.addr(w, base, *off, l, false),
                o => self.val(b, w, wi, o, l),
            };
            let src = match &args[1] {
                Operand::Addr(base, off) => self.addr(w, base, *off, l, false),
                o => self.val(b, w, wi, o, l),
            };
            let src_size = if args.len() > 3 {
                (self.val(b, w, wi, &args[3], l) as usize).min(sz)
            } else {
                sz
            };
            let dl = match self.resolve(b, wi, l, Space::Shared, dst, sz, pc) {
                Some(x) => x,
                None => {
                    ok = false;
                    break;
                }
            };
            let mut data = [0u8; 16];
            if src_size > 0 {
                let sl = match self.resolve(b, wi, l, Space::Global, src, sz, pc) {
                    Some(x) => x,
                    None => {
                        ok = false;
                        break;
                    }
                };
                self.track(b, wi, l, sl, src_size, Acc::Read, pc, src);
                let s = self.mem_slice(b, sl);
                data[..src_size].copy_from_slice(&s[..src_size]);
            }
            self.track(b, wi, l, dl, sz, Acc::Write, pc, dst);
            if let Loc::Shared(o) = dl {
                self.cp_async_issue(b, wi, l, pc, o, sz);
            }
            let d = self.mem_slice(b, dl);
            d[..sz].copy_from_slice(&data[..sz]);
        });
        self.finish_access(pc);
        if !ok {
            return Step::Stop;
        }
        Self::advance(w, mask);
        Step::Continue
    }

    /// `cp.async.commit_group`, `cp.async.wait_group N`, `cp.async.wait_all`: the copies' data was written
    /// at issue; what changes is which of them the race detector still holds in flight (`cp_async.rs`).
    pub(super) fn exec_cp_async_group(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        mask: u32,
        exec: u32,
    ) -> Step {
        if self.cfg.check_races {
            let commit = ins.kind == Kind::CpAsyncCommit;
            // wait_group has its N; wait_all has no operand.
            let n = match ins.args.first() {
                Some(Operand::Imm(v)) => Some(*v as u32),
                _ => None,
            };
            lanes!(exec, l, {
                let t = self.tid_of(wi, l) as usize;
                if commit {
                    self.cp_async_commit(b, t);
                } else {
                    self.cp_async_wait(b, t, n);
                }
            });
        }
        Self::advance(w, mask);
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_cp_async_bulk(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        pc: u32,
        mask: u32,
        exec: u32,
    ) -> Step {
        let args = &ins.args;
        // cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]
        // (.multicast::cluster: then a CTA mask)
        let multicast = matches!(ins.kind, Kind::CpAsyncBulk { multicast: true });
        let mut ok = true;
        lanes!(exec, l, {
            let dst = match &args[0] {
                Operand::Addr(base, off) => self.addr(w, base, *off, l, false),
                o => self.val(b, w, wi, o, l),
            };
            let src = match &args[1] {
                Operand::Addr(base, off) => self.addr(w, base, *off, l, false),
                o => self.val(b, w, wi, o, l),
            };
            let size = self.val(b, w, wi, &args[2], l) as usize;
            let mb = match args.get(3) {
                Some(Operand::Addr(base, off)) => self.addr(w, base, *off, l, false),
                Some(o) => self.val(b, w, wi, o, l),
                None => 0,
            };
            if !size.is_multiple_of(16) || !dst.is_multiple_of(16) || !src.is_multiple_of(16) {
                let msg = format!("cp.async.bulk of {size} bytes from {src:#x} to {dst:#x}: the size and both addresses must be multiples of 16");
                self.fault(b, wi, Some(l as u32), pc, FaultKind::Misaligned, msg);
                ok = false;
                break;
            }
            let targets = if multicast {
                let mask = self.val(b, w, wi, &args[4], l) as u32 & 0xFFFF;
                if mask >> self.cluster_size() != 0 {
                    let msg = format!("cp.async.bulk multicast to CTA mask {mask:#06x}, but the cluster has {} block(s)", self.cluster_size());
                    self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
                    ok = false;
                    break;
                }
                mask
            } else {
                1 << b.crank
            };
            let dl = self.resolve(b, wi, l, Space::Shared, dst, size.max(1), pc);
            let sl = self.resolve(b, wi, l, Space::Global, src, size.max(1), pc);
            let (dl, sl) = match (dl, sl) {
                (Some(d), Some(s)) => (d, s),
                _ => {
                    ok = false;
                    break;
                }
            };
            let data = self.mem_slice(b, sl)[..size].to_vec();
            self.track(b, wi, l, sl, size, Acc::Read, pc, src);
            if targets & (1 << b.crank) != 0 {
                // Bulk copies write through the async proxy (PTX ISA, cp.async.bulk), as TMA does: a wgmma
                // may read the bytes after the mbarrier wait with no proxy fence.
                self.async_write = true;
                self.track(b, wi, l, dl, size, Acc::Write, pc, dst);
                self.async_write = false;
                if let Loc::Shared(o) = dl {
                    self.proxy_write(b, wi, l, pc, o, size, false);
                }
                self.mem_slice(b, dl)[..size].copy_from_slice(&data);
            }
            self.finish_access(pc);
            if !self.multicast_bytes(b, wi, l, pc, targets, dst, mb as u32, &data) {
                ok = false;
                break;
            }
            if targets & (1 << b.crank) != 0
                && !self.mbar_complete_tx(b, wi, l, pc, mb as u32, size as i64)
            {
                ok = false;
                break;
            }
        });
        self.finish_access(pc);
        if !ok {
            return Step::Stop;
        }
        Self::advance(w, mask);
        Step::Continue
    }

    /// `membar` / `fence`: values need nothing (every access sees the latest value). For the race detector,
    /// a fence makes the thread's last relaxed or volatile load an acquire (load; fence) and its later
    /// relaxed or volatile stores releases (fence; store): the PTX memory model's fence-based
    /// synchronization, which volatile flag protocols (`__threadfence()` / `membar` and a volatile flag,
    /// CUB's look-back) use.
    pub(super) fn exec_fence(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        mask: u32,
        exec: u32,
    ) -> Step {
        if self.cfg.check_races {
            lanes!(exec, l, {
                let t = self.tid_of(wi, l);
                if let Some(loc) = b.strong_loads.remove(&t) {
                    self.acquire(b, wi, l, loc);
                }
                b.fenced.insert(t);
            });
        }
        Self::advance(w, mask);
        Step::Continue
    }

    pub(super) fn exec_fence_proxy_async(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        mask: u32,
        exec: u32,
    ) -> Step {
        let nt = self.nthreads as usize;
        lanes!(exec, l, {
            let t = self.tid_of(wi, l) as usize;
            b.proxy.fence(t, nt);
        });
        Self::advance(w, mask);
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_bulk_group(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        mask: u32,
        exec: u32,
        wait: &bool,
    ) -> Step {
        let args = &ins.args;
        let nt = self.nthreads as usize;
        let n = match args.first() {
            Some(Operand::Imm(v)) => *v as u32,
            _ => 0,
        };
        lanes!(exec, l, {
            let t = self.tid_of(wi, l) as usize;
            if *wait {
                b.proxy.wait(t, n, nt);
            } else {
                b.proxy.commit(t, nt);
            }
        });
        Self::advance(w, mask);
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_bulk_tensor(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        rank: &u8,
        load: &bool,
    ) -> Step {
        let (rank, load) = (*rank as usize, *load);
        let mut ok = true;
        lanes!(exec, l, {
            if !self.exec_tensor_copy(b, wi, w, pc, l, rank, load) {
                ok = false;
                break;
            }
        });
        self.finish_access(pc);
        if !ok {
            return Step::Stop;
        }
        Self::advance(w, mask);
        Step::Continue
    }
}
