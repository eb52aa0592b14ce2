//! Fast paths of the interpreter (issue 12): the commonest instructions — integer and float arithmetic,
//! comparisons, moves, selects, conversions, and loads and stores that stay inside one shared-memory,
//! local or global region — executed for a whole lane group at once on the warp's structure-of-arrays
//! registers (`regs[r * 32 + lane]`), with operands gathered once per instruction instead of decoded per
//! lane, and the coalescing and bank-conflict counters computed from the lane addresses in one pass.
//!
//! A fast path either does exactly what the general code in `exec/` does for the instruction (same
//! results, counters, race checks in the same lane order, same faults) or declines before it has changed
//! any state, and the general code runs; an access that would fault is always left to the general code.
//! `tests/emu_golden.rs` holds the interpreter to results recorded before these paths existed.

use super::fast_lanes::{
    add_lanes, gather4, global_offsets, scatter4, shared_offsets, shared_offsets4, word_span,
};
use super::regs::{copy_lanes, select_lanes};
use super::*;

/// All 32 lanes.
const ALL: u32 = u32::MAX;

/// One value per lane.
type Lanes = [u64; 32];

/// Every lane zero (an absent operand).
static ZERO_LANES: Lanes = [0; 32];

/// Lanes of `m`, lowest first.
#[inline]
fn each(mut m: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if m == 0 {
            return None;
        }
        let l = m.trailing_zeros() as usize;
        m &= m - 1;
        Some(l)
    })
}

/// Lane arrays the fast paths work in, allocated once per launch (zeroing fresh arrays for every
/// instruction would cost more than most instructions).
pub(super) struct Scratch {
    t: [Lanes; 5],
    offs: [usize; 32],
    /// Lane offsets of the 4-byte shared paths (`fast_ld_shared4`).
    o32: [u32; 32],
    vals: [Lanes; 4],
}

impl Scratch {
    pub(super) fn new() -> Box<Scratch> {
        Box::new(Scratch {
            t: [[0; 32]; 5],
            offs: [0; 32],
            o32: [0; 32],
            vals: [[0; 32]; 4],
        })
    }
}

/// Where every lane of a fast memory access lands: one region, per-lane byte offsets into it.
#[derive(Clone, Copy)]
enum Region {
    Shared,
    Local,
    Global(usize),
}

impl L<'_> {
    /// Executes `ins` for lane group `mask` (guard true for `exec`) if a fast path covers it; `None` when
    /// it declines (nothing has changed then).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn fast_step(
        &mut self,
        sc: &mut Scratch,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        pc: u32,
        mask: u32,
        exec: u32,
    ) -> Option<Step> {
        let args = &ins.args;
        let t = &mut sc.t;
        match &ins.kind {
            Kind::Alu(op, ty, md) => self.fast_alu(t, b, w, wi, args, exec, *op, *ty, *md),
            // (`.ftz` compares flushed operands: the general path)
            Kind::Setp(cmp, ty, bop, false) => {
                self.fast_setp(t, b, w, wi, args, exec, *cmp, *ty, *bop)
            }
            Kind::Mov(ty) => {
                if matches!(args[0], Operand::Vec(_)) || matches!(args[1], Operand::Vec(_)) {
                    return None;
                }
                let mk = if *ty == PtxType::Pred {
                    1
                } else {
                    mask_bits(ty.bits())
                };
                if let (Operand::Reg(d), Operand::Reg(r)) = (&args[0], &args[1]) {
                    // Register to register, lane by lane within the register file (no lane arrays).
                    let (d, r) = (*d as usize * 32, *r as usize * 32);
                    w.regs.map_lanes(d, r, exec, |x| x & mk);
                } else {
                    let v = &mut t[0];
                    self.gather(b, w, wi, &args[1], exec, v);
                    for x in v.iter_mut() {
                        *x &= mk;
                    }
                    scatter(w, &args[0], exec, v);
                }
            }
            Kind::Cvta(to, space, ty) => {
                // A register's address into or out of a space's window, as `exec_cvta` converts it.
                let (Operand::Reg(d), Operand::Reg(r)) = (&args[0], &args[1]) else {
                    return None;
                };
                let (to, win, mk) = (*to, super::regops::cvta_window(space), mask_bits(ty.bits()));
                w.regs
                    .map_lanes(*d as usize * 32, *r as usize * 32, exec, |a| {
                        if to {
                            a.wrapping_sub(win) & mk
                        } else {
                            a.wrapping_add(win) & mk
                        }
                    });
            }
            Kind::Selp(_) => {
                let [x, y, p, ..] = t;
                self.gather(b, w, wi, &args[1], exec, x);
                self.gather(b, w, wi, &args[2], exec, y);
                self.gather(b, w, wi, &args[3], exec, p);
                for l in 0..32 {
                    x[l] = if p[l] != 0 { x[l] } else { y[l] };
                }
                scatter(w, &args[0], exec, x);
            }
            Kind::Cvt(dty, sty, rnd, sat) => {
                let (dty, sty, rnd, sat) = (*dty, *sty, *rnd, *sat);
                let packed = matches!(dty, PtxType::F16x2 | PtxType::BF16x2) && args.len() >= 3;
                let elem = if dty == PtxType::BF16x2 {
                    PtxType::BF16
                } else {
                    PtxType::F16
                };
                let [a, c, ..] = t;
                self.gather(b, w, wi, &args[1], exec, a);
                if packed {
                    self.gather(b, w, wi, &args[2], exec, c);
                }
                for l in each(exec) {
                    a[l] = if packed {
                        cvt(elem, sty, rnd, sat, c[l]) | cvt(elem, sty, rnd, sat, a[l]) << 16
                    } else {
                        cvt(dty, sty, rnd, sat, a[l])
                    };
                }
                scatter(w, &args[0], exec, a);
            }
            Kind::Shfl(mode) => {
                if !self.fast_shfl(t, b, wi, w, args, mask, exec, mode) {
                    return None;
                }
            }
            // Strong accesses (`.relaxed/.acquire/.release`) order threads in the race detector
            // (`exec_misc.rs`): the general code handles them.
            Kind::Ld(..) | Kind::St(..) if ins.order != 0 => return None,
            Kind::Ld(space, ty, vw) => {
                return self.fast_ld(sc, b, wi, w, ins, pc, mask, exec, *space, *ty, *vw as usize)
            }
            Kind::St(space, ty, vw) => {
                return self.fast_st(sc, b, wi, w, ins, pc, mask, exec, *space, *ty, *vw as usize)
            }
            _ => return None,
        }
        advance(w, mask);
        Some(Step::Continue)
    }

    /// `shfl.sync .., -1` in a converged full warp: every member is here, none is guarded off and every
    /// source lane is a member, so `exec_collective` would have nothing to wait for or report and would
    /// run it at once, as here. False (nothing done) otherwise (a partial mask goes the general way,
    /// which checks that the lanes read are members).
    /// (Not inlined: `fast_step` stays small enough to be inlined into the step.)
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn fast_shfl(
        &mut self,
        t: &mut [Lanes; 5],
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        args: &[Operand],
        mask: u32,
        exec: u32,
        mode: &ShflMode,
    ) -> bool {
        let Some(Operand::Imm(mv)) = args.last() else {
            return false;
        };
        let member = *mv as u32;
        if exec != mask || member != exec || member != u32::MAX || w.exist != u32::MAX {
            return false;
        }
        self.collective_orders(b, wi, exec);
        // (a full mask: no source lane can be outside it, so the shuffle cannot fault)
        self.shfl(b, wi, w, 0, args, exec, mode, t)
    }

    /// The values of a source operand for the lanes of `lanes` (other lanes: unspecified): a register's
    /// own lane array, else `tmp` filled in.
    #[inline]
    fn src<'a>(
        &self,
        b: &Block,
        w: &'a Warp,
        wi: usize,
        op: &Operand,
        lanes: u32,
        tmp: &'a mut Lanes,
    ) -> &'a Lanes {
        if let Operand::Reg(r) = op {
            let r = *r as usize * 32;
            return w.regs.lanes(r);
        }
        self.gather(b, w, wi, op, lanes, tmp);
        tmp
    }

    /// The values of a source operand for the lanes of `lanes` (other lanes: unspecified).
    #[inline]
    pub(super) fn gather(
        &self,
        b: &Block,
        w: &Warp,
        wi: usize,
        op: &Operand,
        lanes: u32,
        out: &mut Lanes,
    ) {
        match op {
            Operand::Reg(r) => {
                let r = *r as usize * 32;
                copy_lanes(out, w.regs.lanes(r));
            }
            Operand::Imm(v) => *out = [*v; 32],
            Operand::PredNot(r) => {
                let r = *r as usize * 32;
                for (o, v) in out.iter_mut().zip(w.regs.lanes(r)) {
                    *o = (*v == 0) as u64;
                }
            }
            Operand::Sym(s) if !matches!(s, SymRef::Local(_)) || w.stack.is_empty() => {
                *out = [self.sym_value(*s, false); 32]
            }
            _ => {
                for l in each(lanes) {
                    out[l] = self.val(b, w, wi, op, l);
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn fast_alu(
        &mut self,
        t: &mut [Lanes; 5],
        b: &Block,
        w: &mut Warp,
        wi: usize,
        args: &[Operand],
        exec: u32,
        op: AluOp,
        ty: PtxType,
        md: Mods,
    ) {
        let n = args.len();
        let imm0 = Operand::Imm(0);
        let arg = |k: usize| if n > k { &args[k] } else { &imm0 };
        let [tx, ty_, tz, tu, out] = t;
        {
            let x = self.src(b, w, wi, &args[1], exec, tx);
            let y = self.src(b, w, wi, arg(2), exec, ty_);
            // (an absent third source reads as zero: one fill, not one per instruction)
            let z = if n > 3 {
                self.src(b, w, wi, &args[3], exec, tz)
            } else {
                &ZERO_LANES
            };
            if !super::exec_alu::simple_int_lanes(op, ty, md, x, y, out)
                && !super::exec_alu::alu_lanes(op, ty, md, x, y, z, out)
            {
                let u = self.src(b, w, wi, arg(4), exec, tu);
                for l in each(exec) {
                    out[l] = alu(op, ty, md, x[l], y[l], z[l], u[l]);
                }
            }
        }
        scatter(w, &args[0], exec, out);
    }

    #[allow(clippy::too_many_arguments)]
    fn fast_setp(
        &mut self,
        t: &mut [Lanes; 5],
        b: &Block,
        w: &mut Warp,
        wi: usize,
        args: &[Operand],
        exec: u32,
        cmp: Cmp,
        ty: PtxType,
        bop: Option<BoolOp>,
    ) {
        // The operand layout as the general code reads it: `setp d|q, a, c (, p)`.
        let two = args.len() >= 4 + bop.is_some() as usize
            && matches!(args[1], Operand::Reg(_) | Operand::Sink)
            && bop.map(|_| args.len() == 5).unwrap_or(args.len() == 4);
        let (dq, ai) = if two { (Some(&args[1]), 2) } else { (None, 1) };
        let [tx, ty_, p, r, q] = t;
        {
            let x = self.src(b, w, wi, &args[ai], exec, tx);
            let y = self.src(b, w, wi, &args[ai + 1], exec, ty_);
            if !super::exec_alu::compare_lanes(cmp, ty, x, y, r) {
                for l in each(exec) {
                    r[l] = compare(cmp, ty, x[l], y[l]) as u64;
                }
            }
        }
        // (the complement only where a second destination takes it)
        if dq.is_some() {
            for l in 0..32 {
                q[l] = r[l] ^ 1;
            }
        }
        if let Some(bo) = bop {
            self.gather(b, w, wi, &args[ai + 2], exec, p);
            for l in 0..32 {
                let pv = p[l] != 0;
                r[l] = boolop(bo, r[l] != 0, pv) as u64;
                q[l] = boolop(bo, q[l] != 0, pv) as u64;
            }
        }
        scatter(w, &args[0], exec, r);
        if let Some(dq) = dq {
            scatter(w, dq, exec, q);
        }
    }

    /// Lane addresses of an address operand into `a`; false for operand forms the fast path leaves alone.
    #[inline]
    fn lane_addrs(&self, w: &Warp, op: &Operand, generic: bool, a: &mut Lanes) -> bool {
        match op {
            Operand::Addr(AddrBase::Reg(r), off) => {
                let r = *r as usize * 32;
                let base: &Lanes = w.regs.lanes(r);
                add_lanes(base, *off as u64, a);
                true
            }
            // A local symbol is relative to each lane's frame (lanes may be at different recursion depths).
            Operand::Addr(AddrBase::Sym(SymRef::Local(_)), _) if !w.stack.is_empty() => {
                for (l, x) in a.iter_mut().enumerate() {
                    if let Operand::Addr(base, off) = op {
                        *x = self.addr(w, base, *off, l, generic);
                    }
                }
                true
            }
            Operand::Addr(base, off) => {
                *a = [self.addr(w, base, *off, 0, generic); 32];
                true
            }
            _ => false,
        }
    }

    /// The region every lane of `exec` accesses (`size` bytes at `addr[l]`) and each lane's offset in it,
    /// when they all land, aligned and in bounds, in this block's shared memory, the threads' local memory
    /// or one global allocation; `None` otherwise (the general code then resolves each lane, and reports
    /// any fault exactly as before).
    #[allow(clippy::too_many_arguments)]
    fn fast_region(
        &mut self,
        b: &Block,
        wi: usize,
        space: Space,
        addr: &Lanes,
        exec: u32,
        size: usize,
        offs: &mut [usize; 32],
    ) -> Option<Region> {
        let align = size.min(16) as u64;
        if !align.is_power_of_two() {
            return None;
        }
        let amask = align - 1;
        let first = exec.trailing_zeros() as usize;
        let kind = match space {
            Space::Shared => Space::Shared,
            Space::Local => Space::Local,
            Space::Global | Space::Const => Space::Global,
            Space::Generic => {
                let a = addr[first];
                if (SHARED_WINDOW..SHARED_WINDOW + WINDOW).contains(&a) {
                    Space::Shared
                } else if (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW).contains(&a)
                    || (PARAM_WINDOW..PARAM_WINDOW + WINDOW).contains(&a)
                {
                    return None;
                } else {
                    Space::Global
                }
            }
            _ => return None,
        };
        let generic = space == Space::Generic;
        match kind {
            Space::Shared => {
                // Every lane computed (branch-free), the executing ones checked.
                let (crank1, limit) = (b.crank as u64 + 1, self.smem_size as u64);
                let (sub, keep) = if generic {
                    (SHARED_WINDOW, u64::MAX)
                } else {
                    (0, 0xFFFF_FFFF)
                };
                let bad =
                    shared_offsets(addr, [sub, keep, amask, crank1, limit, size as u64], offs);
                if bad & exec != 0 {
                    return None;
                }
                Some(Region::Shared)
            }
            Space::Local => {
                for l in each(exec) {
                    let a = addr[l] & 0xFFFF_FFFF;
                    if a & amask != 0 {
                        return None;
                    }
                    offs[l] = self.local_index(b, self.tid_of(wi, l) as usize, a, size)?;
                }
                Some(Region::Local)
            }
            _ => {
                let a0 = addr[first];
                let i = {
                    let c = self.last_alloc;
                    let inside = |x: &Alloc| {
                        a0 >= x.base
                            && a0.saturating_add(size as u64) <= x.base + x.data.len() as u64
                    };
                    if c < self.allocs.len() && inside(&self.allocs[c]) {
                        c
                    } else {
                        let i = self.allocs.partition_point(|x| x.base <= a0);
                        if i == 0 || !inside(&self.allocs[i - 1]) {
                            return None;
                        }
                        i - 1
                    }
                };
                let (base, len) = (self.allocs[i].base, self.allocs[i].data.len() as u64);
                if exec == ALL && !generic {
                    // Every lane at once, branch-free (the loop below stops at the first failing lane,
                    // with the same answer).
                    if !global_offsets(addr, [base, base + len, amask, size as u64], offs) {
                        return None;
                    }
                    self.last_alloc = i;
                    return Some(Region::Global(i));
                }
                for l in each(exec) {
                    let a = addr[l];
                    if generic
                        && ((SHARED_WINDOW..SHARED_WINDOW + WINDOW).contains(&a)
                            || (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW).contains(&a)
                            || (PARAM_WINDOW..PARAM_WINDOW + WINDOW).contains(&a))
                    {
                        return None;
                    }
                    if a & amask != 0 || a < base || a.saturating_add(size as u64) > base + len {
                        return None;
                    }
                    offs[l] = (a - base) as usize;
                }
                self.last_alloc = i;
                Some(Region::Global(i))
            }
        }
    }

    /// Counters and race checks of a fast access, as `track` + `finish_access` would do them.
    #[allow(clippy::too_many_arguments)]
    fn fast_track(
        &mut self,
        b: &mut Block,
        wi: usize,
        region: Region,
        addr: &Lanes,
        offs: &[usize; 32],
        exec: u32,
        size: usize,
        acc: Acc,
        pc: u32,
    ) {
        // A parallel run notes global accesses (`parallel.rs`); a read of data several blocks read needs
        // no race check there.
        let mut checked = exec;
        if let (Region::Global(i), true) = (region, self.spec.is_some()) {
            if self.cfg.check_races {
                for l in each(exec) {
                    if self.spec_note(Loc::Global(i, offs[l]), size, acc) {
                        checked &= !(1 << l);
                    }
                }
            } else {
                self.spec_note_lanes(i, offs, exec, size, acc);
            }
        }
        if self.cfg.check_races {
            // All lanes at once (`race_warp.rs`), as `check_access` would check them one by one.
            match region {
                Region::Shared => self.race_warp(b, wi, None, offs, addr, checked, size, acc, pc),
                Region::Global(i) => {
                    self.race_warp(b, wi, Some(i), offs, addr, checked, size, acc, pc)
                }
                Region::Local => {}
            }
        }
        match region {
            Region::Local => {}
            Region::Global(_) => {
                let counted = sorted_sectors(addr, exec, size).or_else(|| {
                    let bits =
                        window_bits(exec, |l| addr[l] >> 5, |l| (addr[l] + size as u64 - 1) >> 5)?;
                    Some(bits.iter().fold((0, 0), |(s, n), x| {
                        let nib = x | x >> 1 | x >> 2 | x >> 3;
                        (
                            s + x.count_ones() as u64,
                            n + (nib & 0x1111_1111_1111_1111).count_ones() as u64,
                        )
                    }))
                });
                let (sectors, lines) = match counted {
                    Some(x) => x,
                    None => {
                        for l in each(exec) {
                            self.acc_g.push((addr[l], size as u32));
                        }
                        self.finish_access(pc);
                        return;
                    }
                };
                let p = &mut self.pic[pc as usize];
                p.global_sectors += sectors;
                p.global_transactions += lines;
                p.global_accesses += 1;
            }
            Region::Shared => self.shared_counts(offs, exec, size, pc),
        }
    }

    /// The bank-conflict counters of a shared access, as `finish_access` would count them.
    fn shared_counts(&mut self, offs: &[usize; 32], exec: u32, size: usize, pc: u32) {
        match conflict_free(offs, exec, size)
            .or_else(|| sorted_bank_degree(offs, exec, size))
            .or_else(|| window_bank_degree(offs, exec, size))
        {
            Some(deg) => {
                let p = &mut self.pic[pc as usize];
                p.shared_accesses += 1;
                p.shared_bank_conflict_degree_sum += deg;
            }
            None => {
                for l in each(exec) {
                    self.acc_s.push((offs[l] as u32, size as u32));
                }
                self.finish_access(pc);
            }
        }
    }

    /// `ld.shared.{b32,u32,f32} d, [r + off]` by all 32 lanes without race detection, in two passes
    /// (offsets with their checks and word span, then the gather) instead of the general fast path's
    /// five; `None` (nothing changed) where a lane's access would not be aligned and in bounds.
    #[allow(clippy::too_many_arguments)]
    fn fast_ld_shared4(
        &mut self,
        sc: &mut Scratch,
        b: &mut Block,
        w: &mut Warp,
        d: u32,
        r: u32,
        off: i64,
        pc: u32,
        mask: u32,
    ) -> Option<Step> {
        let span = self.shared4_offsets(sc, b, w, r, off)?;
        let d = d as usize * 32;
        if !gather4(&b.shared, &sc.o32, &mut w.regs[d..d + 32]) {
            return None;
        }
        self.shared4_counts(sc, span, pc);
        advance(w, mask);
        Some(Step::Continue)
    }

    /// `st.shared.b32 [r + off], s` (or `.u32`, `.s32`, `.f32`) by all 32 lanes without race detection,
    /// as `fast_ld_shared4`: lane order, so of two lanes storing to one word the higher one wins.
    #[allow(clippy::too_many_arguments)]
    fn fast_st_shared4(
        &mut self,
        sc: &mut Scratch,
        b: &mut Block,
        w: &mut Warp,
        r: u32,
        off: i64,
        s: u32,
        pc: u32,
        mask: u32,
    ) -> Option<Step> {
        let span = self.shared4_offsets(sc, b, w, r, off)?;
        let s = s as usize * 32;
        if !scatter4(&mut b.shared, &sc.o32, &w.regs[s..s + 32]) {
            return None;
        }
        self.shared4_counts(sc, span, pc);
        advance(w, mask);
        Some(Step::Continue)
    }

    /// The offsets (into `sc.o32`) and word span of a 4-byte shared access of all 32 lanes at
    /// `[r + off]` (`shared_offsets4`), `None` where a lane would not be aligned and in bounds.
    #[inline(always)]
    fn shared4_offsets(
        &self,
        sc: &mut Scratch,
        b: &Block,
        w: &Warp,
        r: u32,
        off: i64,
    ) -> Option<u32> {
        let r = r as usize * 32;
        let base: &Lanes = w.regs.lanes(r);
        let k = [off as u64, b.crank as u64 + 1, self.smem_size as u64];
        shared_offsets4(base, k, &mut sc.o32)
    }

    /// The bank-conflict counters of a 4-byte shared access of all 32 lanes at `sc.o32`, whose word
    /// span is `span`.
    fn shared4_counts(&mut self, sc: &mut Scratch, span: u32, pc: u32) {
        if span < 32 {
            // All the words within 32 consecutive words: no bank conflict (`conflict_free`).
            let p = &mut self.pic[pc as usize];
            p.shared_accesses += 1;
            p.shared_bank_conflict_degree_sum += 1;
        } else {
            for (o, &x) in sc.offs.iter_mut().zip(&sc.o32) {
                *o = x as usize;
            }
            self.shared_counts(&sc.offs, ALL, 4, pc);
        }
    }

    fn region_bytes<'a>(&'a mut self, b: &'a mut Block, region: Region) -> &'a mut [u8] {
        match region {
            Region::Shared => &mut b.shared,
            Region::Local => &mut b.local,
            Region::Global(i) => &mut self.allocs[i].data,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn fast_ld(
        &mut self,
        sc: &mut Scratch,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        pc: u32,
        mask: u32,
        exec: u32,
        space: Space,
        ty: PtxType,
        vw: usize,
    ) -> Option<Step> {
        let es = ty.size();
        let total = es * vw;
        if es > 8 || exec == 0 {
            return None;
        }
        if space == Space::Param {
            return self.fast_ld_param(w, ins, mask, exec, ty, vw);
        }
        let shared4 = space == Space::Shared && es == 4 && vw == 1 && exec == ALL;
        if shared4 && !ty.is_signed() && !self.cfg.check_races {
            if let (Operand::Reg(d), Operand::Addr(AddrBase::Reg(r), off)) =
                (&ins.args[0], &ins.args[1])
            {
                if let Some(s) = self.fast_ld_shared4(sc, b, w, *d, *r, *off, pc, mask) {
                    return Some(s);
                }
            }
        }
        let (addr, offs) = (&mut sc.t[0], &mut sc.offs);
        if !self.lane_addrs(w, &ins.args[1], space == Space::Generic, addr) {
            return None;
        }
        let region = self.fast_region(b, wi, space, addr, exec, total, offs)?;
        self.fast_track(b, wi, region, addr, offs, exec, total, Acc::Read, pc);
        let signed = ty.is_signed();
        let bits = ty.bits();
        let mem = self.region_bytes(b, region);
        for k in 0..vw {
            let Some(r) = load_dest(&ins.args[0], k) else {
                continue;
            };
            let d = w.regs.lanes_mut(r);
            let ko = k * es;
            match (es, signed) {
                (4, false) if exec == ALL => {
                    // Every lane: a straight loop, no lane-mask walk.
                    for (l, dl) in d.iter_mut().enumerate() {
                        let o = offs[l] + ko;
                        *dl = u32::from_le_bytes(mem[o..o + 4].try_into().expect("4")) as u64;
                    }
                }
                (4, false) => {
                    for l in each(exec) {
                        let o = offs[l] + ko;
                        d[l] = u32::from_le_bytes(mem[o..o + 4].try_into().expect("4")) as u64;
                    }
                }
                (8, _) => {
                    for l in each(exec) {
                        let o = offs[l] + ko;
                        d[l] = u64::from_le_bytes(mem[o..o + 8].try_into().expect("8"));
                    }
                }
                _ => {
                    for l in each(exec) {
                        d[l] = load_value(mem, offs[l] + ko, es, signed, bits);
                    }
                }
            }
        }
        advance(w, mask);
        Some(Step::Continue)
    }

    /// `ld.param` from an address every lane shares (`[param + off]`): one read, its value broadcast to
    /// the lanes `exec` (a parameter access has no counters and no race checks); `None` (nothing changed)
    /// for a per-lane address or one the general code would fault on.
    fn fast_ld_param(
        &mut self,
        w: &mut Warp,
        ins: &Instr,
        mask: u32,
        exec: u32,
        ty: PtxType,
        vw: usize,
    ) -> Option<Step> {
        let (es, total) = (ty.size(), ty.size() * vw);
        let a = match &ins.args[1] {
            Operand::Addr(base @ (AddrBase::None | AddrBase::Sym(_)), off) => {
                self.addr(w, base, *off, 0, false)
            }
            _ => return None,
        };
        let in_bounds = usize::try_from(a)
            .ok()
            .and_then(|a| a.checked_add(total))
            .is_some_and(|e| e <= self.params.len());
        if (total > 1 && a % (total.min(16) as u64) != 0) || !in_bounds {
            return None;
        }
        for k in 0..vw {
            let Some(r) = load_dest(&ins.args[0], k) else {
                continue;
            };
            let v = load_value(
                &self.params,
                a as usize + k * es,
                es,
                ty.is_signed(),
                ty.bits(),
            );
            let d = w.regs.lanes_mut(r);
            for l in each(exec) {
                d[l] = v;
            }
        }
        advance(w, mask);
        Some(Step::Continue)
    }

    #[allow(clippy::too_many_arguments)]
    fn fast_st(
        &mut self,
        sc: &mut Scratch,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        pc: u32,
        mask: u32,
        exec: u32,
        space: Space,
        ty: PtxType,
        vw: usize,
    ) -> Option<Step> {
        let es = ty.size();
        let total = es * vw;
        if es > 8 || exec == 0 || vw > 4 {
            return None;
        }
        let shared4 = space == Space::Shared && es == 4 && vw == 1 && exec == ALL;
        if shared4 && !self.cfg.check_races {
            if let (Operand::Addr(AddrBase::Reg(r), off), Operand::Reg(s)) =
                (&ins.args[0], &ins.args[1])
            {
                if let Some(st) = self.fast_st_shared4(sc, b, w, *r, *off, *s, pc, mask) {
                    return Some(st);
                }
            }
        }
        let (addr, offs, vals) = (&mut sc.t[0], &mut sc.offs, &mut sc.vals);
        if !self.lane_addrs(w, &ins.args[0], space == Space::Generic, addr) {
            return None;
        }
        // Lanes of one store that hit one word are the general code's (with races on, the same value stored
        // by several lanes is not a race: `same_store_as_earlier_lane`): here addresses strictly increase.
        if self.cfg.check_races {
            let mut prev: Option<u64> = None;
            for l in each(exec) {
                if prev.is_some_and(|p| p.checked_add(total as u64).is_none_or(|e| addr[l] < e)) {
                    return None;
                }
                prev = Some(addr[l]);
            }
        }
        let region = self.fast_region(b, wi, space, addr, exec, total, offs)?;
        // The values, gathered before any store (stores do not change registers).
        for (k, v) in vals.iter_mut().enumerate().take(vw) {
            let src = match &ins.args[1] {
                Operand::Vec(ss) => ss.get(k),
                s => Some(s),
            };
            match src {
                Some(s) => self.gather(b, w, wi, s, exec, v),
                None => *v = [0; 32],
            }
        }
        self.fast_track(b, wi, region, addr, offs, exec, total, Acc::Write, pc);
        let mem = self.region_bytes(b, region);
        // Lane order, as the general code: of two lanes writing one address the higher one wins.
        for l in each(exec) {
            for (k, v) in vals.iter().enumerate().take(vw) {
                write_le(mem, offs[l] + k * es, es, v[l]);
            }
        }
        advance(w, mask);
        Some(Step::Continue)
    }
}

/// Writes the lanes of `lanes` of a destination register (a sink or non-register destination: nothing).
#[inline]
pub(super) fn scatter(w: &mut Warp, dst: &Operand, lanes: u32, v: &Lanes) {
    if let Operand::Reg(r) = dst {
        scatter_reg(w, *r as usize * 32, lanes, v);
    }
}

/// Element `k` of a load's destination (the register itself, or the `k`-th of a vector): the start of
/// its lanes, or `None` for an element that is not a register (a sink).
#[inline]
fn load_dest(dst: &Operand, k: usize) -> Option<usize> {
    let d = match dst {
        Operand::Vec(ds) => ds.get(k),
        d => Some(d),
    };
    match d {
        Some(Operand::Reg(r)) => Some(*r as usize * 32),
        _ => None,
    }
}

/// The `size`-byte element at `mem[o..]`, sign-extended from `bits` for a signed type.
#[inline]
fn load_value(mem: &[u8], o: usize, size: usize, signed: bool, bits: u32) -> u64 {
    let v = read_le(mem, o, size);
    if signed {
        sext(v, bits) as u64
    } else {
        v
    }
}

/// Writes the lanes of `lanes` of the register whose lanes start at `r`.
#[inline]
fn scatter_reg(w: &mut Warp, r: usize, lanes: u32, v: &Lanes) {
    let d = w.regs.lanes_mut(r);
    if lanes == ALL {
        copy_lanes(d, v);
    } else {
        select_lanes(d, v, lanes);
    }
}

/// The `size`-byte (at most 8) little-endian value at `o`: fixed-size reads for 1, 2, 4 and 8 bytes (a
/// variable-length byte copy into a buffer stalls the load of the buffer that follows it).
#[inline]
pub(super) fn read_le(mem: &[u8], o: usize, size: usize) -> u64 {
    match size {
        4 => u32::from_le_bytes(mem[o..o + 4].try_into().expect("4 bytes")) as u64,
        8 => u64::from_le_bytes(mem[o..o + 8].try_into().expect("8 bytes")),
        2 => u16::from_le_bytes(mem[o..o + 2].try_into().expect("2 bytes")) as u64,
        1 => mem[o] as u64,
        _ => {
            let mut buf = [0u8; 8];
            buf[..size].copy_from_slice(&mem[o..o + size]);
            u64::from_le_bytes(buf)
        }
    }
}

/// Stores the low `size` bytes (at most 8) of `v` at `o`.
#[inline]
pub(super) fn write_le(mem: &mut [u8], o: usize, size: usize, v: u64) {
    match size {
        4 => mem[o..o + 4].copy_from_slice(&(v as u32).to_le_bytes()),
        8 => mem[o..o + 8].copy_from_slice(&v.to_le_bytes()),
        2 => mem[o..o + 2].copy_from_slice(&(v as u16).to_le_bytes()),
        1 => mem[o] = v as u8,
        _ => mem[o..o + size].copy_from_slice(&v.to_le_bytes()[..size]),
    }
}

/// Every lane of `mask` moves to the next instruction.
#[inline(always)]
pub(super) fn advance(w: &mut Warp, mask: u32) {
    if mask == ALL {
        // The group's lanes share one PC (`pick_group`): lane 0's. (A converged warp's next step
        // follows the hint and reads no PC array.)
        w.pc = [w.pc[0] + 1; 32];
    } else {
        super::warp_scan::advance_lanes(&mut w.pc, mask);
    }
}

/// Distinct 32-byte sectors and 128-byte lines of the lanes' accesses when the lanes' sectors never
/// decrease in lane order (a coalesced or broadcast access); `None` otherwise (then sort).
fn sorted_sectors(addr: &Lanes, exec: u32, size: usize) -> Option<(u64, u64)> {
    let (mut sectors, mut lines) = (0u64, 0u64);
    let (mut last, mut last_line) = (None::<u64>, u64::MAX);
    for l in each(exec) {
        let (s0, s1) = (addr[l] >> 5, (addr[l] + size as u64 - 1) >> 5);
        // An exclusive range (s1 < 2^59): an inclusive one's iterator costs more than the one sector it
        // usually covers.
        for s in s0..s1 + 1 {
            match last {
                Some(p) if s < p => return None,
                Some(p) if s == p => continue,
                _ => {}
            }
            last = Some(s);
            sectors += 1;
            if s >> 2 != last_line {
                last_line = s >> 2;
                lines += 1;
            }
        }
    }
    Some((sectors, lines))
}

/// Degree 1 when no bank holds two different words (distinct banks, or lanes sharing a word: the
/// common conflict-free and broadcast patterns), found in one pass; `None` otherwise.
fn conflict_free(offs: &[usize; 32], exec: u32, size: usize) -> Option<u64> {
    // All the words within 32 consecutive words: distinct words lie in distinct banks.
    if exec != 0 && word_span(offs, exec, size as u32) < 32 {
        return Some(1);
    }
    let mut first = [u32::MAX; 32];
    let mut clash = false;
    if size <= 4 {
        // One word per lane (accesses are aligned to their size).
        for l in each(exec) {
            let wd = offs[l] as u32 >> 2;
            let f = &mut first[(wd % 32) as usize];
            if *f == u32::MAX {
                *f = wd;
            }
            clash |= *f != wd;
        }
        return (!clash).then_some(1);
    }
    for l in each(exec) {
        let o = offs[l] as u32;
        for wd in o >> 2..=(o + size as u32 - 1) >> 2 {
            let f = &mut first[(wd % 32) as usize];
            if *f == u32::MAX {
                *f = wd;
            }
            clash |= *f != wd;
        }
    }
    (!clash).then_some(1)
}

/// The bank-conflict degree (most distinct 4-byte words in one of the 32 banks, at least 1) when the
/// lanes' words never decrease in lane order; `None` otherwise (then sort).
fn sorted_bank_degree(offs: &[usize; 32], exec: u32, size: usize) -> Option<u64> {
    let mut banks = [0u32; 32];
    let mut last = None::<u32>;
    for l in each(exec) {
        let o = offs[l] as u32;
        for wd in o >> 2..=(o + size as u32 - 1) >> 2 {
            match last {
                Some(p) if wd < p => return None,
                Some(p) if wd == p => continue,
                _ => {}
            }
            last = Some(wd);
            banks[(wd % 32) as usize] += 1;
        }
    }
    Some(banks.iter().copied().max().unwrap_or(1).max(1) as u64)
}

/// The distinct values of the lanes' inclusive ranges `lo(l)..=hi(l)` as a bit set over the 2048 values
/// from the largest multiple of 64 at or below the least, or `None` when they span more.
fn window_bits(
    exec: u32,
    lo: impl Fn(usize) -> u64,
    hi: impl Fn(usize) -> u64,
) -> Option<[u64; 32]> {
    let base = each(exec).map(&lo).min()? & !63;
    let mut bits = [0u64; 32];
    for l in each(exec) {
        let (a, b) = (lo(l), hi(l));
        if b < a || b - base >= 2048 {
            return None;
        }
        for v in a - base..=b - base {
            bits[(v / 64) as usize] |= 1 << (v % 64);
        }
    }
    Some(bits)
}

/// The bank-conflict degree from a bit set of the distinct words (any lane order, words within 2048 of
/// each other; a multiple of 64 is a multiple of the 32 banks, so bit i is bank i mod 32).
fn window_bank_degree(offs: &[usize; 32], exec: u32, size: usize) -> Option<u64> {
    let bits = window_bits(
        exec,
        |l| offs[l] as u64 >> 2,
        |l| (offs[l] + size - 1) as u64 >> 2,
    )?;
    let mut banks = [0u32; 32];
    for mut x in bits {
        while x != 0 {
            banks[(x.trailing_zeros() % 32) as usize] += 1;
            x &= x - 1;
        }
    }
    Some(banks.iter().copied().max().unwrap_or(1).max(1) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The general code's counting (`finish_access` / `bank_degree`): collect, sort, dedup.
    fn sectors_by_sort(addr: &Lanes, exec: u32, size: usize) -> (u64, u64) {
        let mut v: Vec<u64> = each(exec)
            .flat_map(|l| (addr[l] >> 5)..=((addr[l] + size as u64 - 1) >> 5))
            .collect();
        v.sort_unstable();
        v.dedup();
        let sectors = v.len() as u64;
        v.iter_mut().for_each(|s| *s >>= 2);
        v.dedup();
        (sectors, v.len() as u64)
    }

    fn degree_by_sort(offs: &[usize; 32], exec: u32, size: usize) -> u64 {
        let mut v: Vec<u64> = each(exec)
            .flat_map(|l| (offs[l] as u64 >> 2)..=((offs[l] + size - 1) as u64 >> 2))
            .collect();
        v.sort_unstable();
        v.dedup();
        let mut banks = [0u32; 32];
        v.iter().for_each(|w| banks[(*w % 32) as usize] += 1);
        banks.iter().copied().max().unwrap_or(1).max(1) as u64
    }

    #[test]
    fn one_pass_counters_equal_the_sorted_ones() {
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let (mut by_scan, mut by_window) = (0, 0);
        for case in 0..20_000 {
            let size = [1usize, 2, 4, 8, 16, 32][case % 6];
            let exec = match case % 4 {
                0 => ALL,
                _ => (next() as u32) | 1,
            };
            // Patterns: coalesced, broadcast halves, strided, random within a window, random anywhere.
            let base = 0x10_0000_0000u64 + (next() % 4096) * 16;
            let stride = [size as u64, 0, 4 * size as u64, 33 * 4, 128][case % 5];
            let mut addr = [0u64; 32];
            let mut offs = [0usize; 32];
            for l in 0..32 {
                let a = match (case / 5) % 4 {
                    0 => base + (l as u64) * stride,
                    1 => base + (l as u64 % 16) * stride,
                    2 => base + (next() % 512) * size as u64,
                    _ => base + (next() % (1 << 20)) * size as u64,
                };
                addr[l] = a;
                offs[l] = (a % 48_000) as usize / size * size;
            }
            let want = sectors_by_sort(&addr, exec, size);
            if let Some(got) = sorted_sectors(&addr, exec, size) {
                assert_eq!(got, want, "scan: {addr:x?} {exec:#x} {size}");
                by_scan += 1;
            }
            if let Some(bits) =
                window_bits(exec, |l| addr[l] >> 5, |l| (addr[l] + size as u64 - 1) >> 5)
            {
                let got = bits.iter().fold((0, 0), |(s, n), x| {
                    let nib = x | x >> 1 | x >> 2 | x >> 3;
                    (
                        s + x.count_ones() as u64,
                        n + (nib & 0x1111_1111_1111_1111).count_ones() as u64,
                    )
                });
                assert_eq!(got, want, "window: {addr:x?} {exec:#x} {size}");
                by_window += 1;
            }
            let want = degree_by_sort(&offs, exec, size);
            for got in [
                conflict_free(&offs, exec, size),
                sorted_bank_degree(&offs, exec, size),
                window_bank_degree(&offs, exec, size),
            ]
            .into_iter()
            .flatten()
            {
                assert_eq!(got, want, "banks: {offs:?} {exec:#x} {size}");
            }
        }
        assert!(by_scan > 1000 && by_window > 1000, "{by_scan} {by_window}");
    }
}
