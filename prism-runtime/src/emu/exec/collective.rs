//! Warp collectives: `bar.warp.sync`, `shfl`, `vote`, `redux`, `match`, `mma`, `ldmatrix`, `stmatrix`,
//! `movmatrix`, `wmma`, `elect`: lanes wait until every lane of the member mask has arrived, then the
//! group executes at once.

use super::*;

impl L<'_> {
    pub(super) fn exec_collective(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
    ) -> Step {
        let ins = &self.m.code[pc as usize];
        let aligned = matches!(
            ins.kind,
            Kind::Mma(_)
                | Kind::Ldmatrix(..)
                | Kind::Stmatrix(..)
                | Kind::Movmatrix
                | Kind::Wmma(_)
        );
        // lanes whose guard is false skip it
        Self::advance(w, mask & !exec);
        if exec == 0 {
            return Step::Continue;
        }
        let member: u32 = if aligned {
            0xffff_ffff
        } else {
            match self.member_mask(b, wi, w, pc, mask, exec) {
                Ok(mv) => mv,
                Err(s) => return s,
            }
        };
        // The instruction's name, for fault messages only (built when one is reported).
        let name = |l: &Self| l.opname(pc);
        if exec & !member != 0 {
            let l = (exec & !member).trailing_zeros();
            self.fault(
                b,
                wi,
                Some(l),
                pc,
                FaultKind::CollectiveMisuse,
                format!(
                    "lane {} executes {} but is not in its membermask 0x{:08x}",
                    l,
                    name(self),
                    member
                ),
            );
            return Step::Stop;
        }
        if member & !w.exist != 0 {
            let l = (member & !w.exist).trailing_zeros();
            self.fault(
                b,
                wi,
                Some(l),
                pc,
                FaultKind::CollectiveMisuse,
                format!(
                    "{} requires lane {} (membermask 0x{:08x}) which does not exist in this warp",
                    name(self),
                    l,
                    member
                ),
            );
            return Step::Stop;
        }
        let skipped = mask & !exec & member;
        if skipped != 0 {
            let l = skipped.trailing_zeros();
            self.fault(b, wi, Some(l), pc, FaultKind::CollectiveMisuse, format!("lane {} is named in the membermask 0x{:08x} of {} but its guard predicate is false", l, member, name(self)));
            return Step::Stop;
        }
        let missing = member & !exec;
        let mut all_here = true;
        let mut mm = missing;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            match w.st[l] {
                Ls::Exit => {
                    let msg = format!("{} with membermask 0x{:08x} executed by lanes 0x{:08x}, but lane {} has already exited", name(self), member, exec, l);
                    self.fault(b, wi, Some(l as u32), pc, FaultKind::CollectiveMisuse, msg);
                    return Step::Stop;
                }
                Ls::Coll if w.pc[l] == pc => {}
                _ => all_here = false,
            }
        }
        if !all_here {
            w.coll_member = member;
            let mut mm = exec;
            while mm != 0 {
                let l = mm.trailing_zeros() as usize;
                mm &= mm - 1;
                w.set_st(l, Ls::Coll);
            }
            return if w.run_mask() == 0 {
                Step::Stop
            } else {
                Step::Continue
            };
        }
        let exec = exec | missing;
        let mut mm = missing;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            w.set_st(l, Ls::Run);
        }
        self.run_collective(b, wi, w, pc, exec, member)
    }

    /// The membermask of a non-aligned collective, from the first executing lane (`Err`: the step's
    /// result when lanes pass different masks: a fault, or the first lane's group run alone).
    #[allow(clippy::too_many_arguments)]
    fn member_mask(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
    ) -> Result<u32, Step> {
        let ins = &self.m.code[pc as usize];
        let args = &ins.args;
        let first = exec.trailing_zeros() as usize;
        let mop = match &ins.kind {
            Kind::BarWarpSync => &args[0],
            Kind::Shfl(_) => &args[args.len() - 1],
            Kind::Vote(_) | Kind::Redux(..) | Kind::Match(..) | Kind::Elect => {
                &args[args.len() - 1]
            }
            _ => &args[0],
        };
        let mv = self.val(b, w, wi, mop, first) as u32;
        // Lanes may execute the same collective in disjoint groups, each with its own membermask
        // (cooperative groups' labeled_partition, coalesced_threads): the PTX ISA makes each thread wait
        // for the lanes of its own mask only. This step runs the first lane's group; lanes with another
        // mask stay at this instruction for a later step. A lane that is in this group's mask but passes
        // a different one is a misuse.
        let mut other = 0u32;
        // An immediate mask is every lane's (the usual case): nothing to compare.
        let mut mm = if matches!(mop, Operand::Imm(_)) {
            0
        } else {
            exec
        };
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            if self.val(b, w, wi, mop, l) as u32 != mv {
                if mv & (1 << l) != 0 {
                    self.fault(
                        b,
                        wi,
                        Some(l as u32),
                        pc,
                        FaultKind::CollectiveMisuse,
                        format!(
                            "lane {} is in the membermask 0x{:08x} of {} but passes a different one",
                            l,
                            mv,
                            self.opname(pc)
                        ),
                    );
                    return Err(Step::Stop);
                }
                other |= 1 << l;
            }
        }
        if other != 0 {
            // Lanes of this group's mask whose guard is false: the same misuse the full check reports.
            let skipped = mask & !exec & mv;
            if skipped != 0 {
                let l = skipped.trailing_zeros();
                let msg = format!(
                    "lane {} is named in the membermask 0x{:08x} of {} but its guard predicate is false",
                    l,
                    mv,
                    self.opname(pc)
                );
                self.fault(b, wi, Some(l), pc, FaultKind::CollectiveMisuse, msg);
                return Err(Step::Stop);
            }
            // Guarded-off lanes were advanced above; run this group alone, the others stay here.
            let group = exec & !other;
            return Err(self.exec_collective(b, wi, w, pc, group, group));
        }
        Ok(mv)
    }

    pub(super) fn run_collective(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        exec: u32,
        member: u32,
    ) -> Step {
        let m = self.m;
        let ins = &m.code[pc as usize];
        let args = &ins.args;
        // `bar.warp.sync` orders its members' memory accesses (PTX ISA); what one lane acquired before it
        // (a flag another warp released) orders the others after it too.
        if matches!(
            ins.kind,
            Kind::Shfl(_) | Kind::Vote(_) | Kind::Match(..) | Kind::Redux(..) | Kind::BarWarpSync
        ) {
            self.collective_orders(b, wi, exec);
        }
        match &ins.kind {
            Kind::BarWarpSync => self.bar_warp_sync(b, wi, exec),
            Kind::Shfl(mode) if !self.shfl(b, wi, w, pc, args, exec, mode, &mut [[0; 32]; 5]) => {
                return Step::Stop;
            }
            Kind::Vote(mode) => self.vote(b, wi, w, args, exec, mode),
            Kind::Redux(op, ty) => self.redux(b, wi, w, args, exec, op, ty),
            Kind::Match(all, ty) => self.match_sync(b, wi, w, args, exec, all, ty),
            Kind::Mma(kind) => {
                self.mma_ops += 1;
                exec_mma(self, b, w, wi, *kind, args);
            }
            Kind::Ldmatrix(n, trans) if !self.exec_ldmatrix(b, wi, w, pc, *n as usize, *trans) => {
                return Step::Stop;
            }
            Kind::Stmatrix(n, trans) if !self.exec_stmatrix(b, wi, w, pc, *n as usize, *trans) => {
                return Step::Stop;
            }
            Kind::Wmma(op) if !self.exec_wmma(b, wi, w, pc, *op) => {
                return Step::Stop;
            }
            Kind::Movmatrix => misc::movmatrix(self, b, w, wi, args),
            Kind::Elect => self.elect(w, args, exec),
            _ => {}
        }
        let _ = member;
        Self::advance(w, exec);
        Step::Continue
    }

    /// `bar.warp.sync`: one completed barrier instance that orders the member lanes.
    fn bar_warp_sync(&mut self, b: &mut Block, wi: usize, exec: u32) {
        let i = b.inst.len() as u32;
        let mut waiters = [0u64; THREAD_WORDS];
        for l in 0..32 {
            if exec & (1 << l) != 0 {
                let t = self.tid_of(wi, l) as usize;
                waiters[t / 64] |= 1 << (t % 64);
                b.thr_inst[t].push(i);
            }
        }
        b.inst.push(Inst {
            waiters,
            completed: true,
        });
    }

    /// `shfl.sync`: each lane reads the source lane of its mode (or its own value) and the in-range flag.
    /// `t` holds the lane arrays it works in (their old values are not read). `false` (a fault reported):
    /// an in-range source lane is not in the membermask, so the value read is undefined (the lane need
    /// not be at the instruction; CCCL's `shfl_sync` checks the same in debug mode).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn shfl(
        &mut self,
        b: &Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        args: &[Operand],
        exec: u32,
        mode: &ShflMode,
        t: &mut [[u64; 32]; 5],
    ) -> bool {
        let (d, p, ai) = if args.len() >= 6 {
            (&args[0], Some(&args[1]), 2)
        } else {
            (&args[0], None, 1)
        };
        // Operands as lane arrays (the source of every existing lane: a lane may read an inactive one).
        // The old values of `t` are never read: the source values are gathered for every existing lane
        // and cleared for absent ones, and the other operands' lanes outside `exec` only decide
        // results that are not written.
        let [vals, bvs, cs, out, inrange] = t;
        self.gather(b, w, wi, &args[ai], w.exist, vals);
        if w.exist != u32::MAX {
            // (a partial warp's absent lanes read as zero)
            for (l, v) in vals.iter_mut().enumerate() {
                *v &= ((w.exist & regs::LANE_BIT[l] != 0) as u64).wrapping_neg();
            }
        }
        // Every lane computed branch-free, then the executing lanes written (PTX ISA, shfl.sync). The
        // usual immediate lane operand and clamp are constants of the loop (vector code over 32-bit
        // lanes); register operands are read per lane.
        let read = match (&args[ai + 1], &args[ai + 2]) {
            (Operand::Imm(bv), Operand::Imm(c)) => {
                let (bv, c) = (*bv, *c);
                shfl_mode(mode, vals, |_| bv, |_| c, out, inrange, exec)
            }
            (bop, cop) => {
                self.gather(b, w, wi, bop, exec, bvs);
                self.gather(b, w, wi, cop, exec, cs);
                shfl_mode(mode, vals, |l| bvs[l], |l| cs[l], out, inrange, exec)
            }
        };
        // `exec` is the membermask here (every member arrived, no other lane executes).
        if read & !exec != 0 {
            let j = (read & !exec).trailing_zeros();
            let msg = format!(
                "{} with membermask 0x{exec:08x} reads lane {j}, which is not in the membermask: the value is undefined",
                self.opname(pc)
            );
            self.fault(b, wi, None, pc, FaultKind::CollectiveMisuse, msg);
            return false;
        }
        exec_fast::scatter(w, d, exec, out);
        if let Some(p) = p {
            exec_fast::scatter(w, p, exec, inrange);
        }
        true
    }

    /// `vote.sync`: all / any / uni / ballot over the member lanes.
    fn vote(
        &mut self,
        b: &Block,
        wi: usize,
        w: &mut Warp,
        args: &[Operand],
        exec: u32,
        mode: &VoteMode,
    ) {
        let mut ballot = 0u32;
        for l in 0..32 {
            if exec & (1 << l) != 0 && self.val(b, w, wi, &args[1], l) != 0 {
                ballot |= 1 << l;
            }
        }
        let r = match mode {
            VoteMode::All => (ballot == exec) as u64,
            VoteMode::Any => (ballot != 0) as u64,
            VoteMode::Uni => (ballot == exec || ballot == 0) as u64,
            VoteMode::Ballot => ballot as u64,
        };
        for l in 0..32 {
            if exec & (1 << l) != 0 {
                Self::set(w, &args[0], l, r);
            }
        }
    }

    /// `redux.sync`: the reduction of the member lanes' values, to every member.
    #[allow(clippy::too_many_arguments)]
    fn redux(
        &mut self,
        b: &Block,
        wi: usize,
        w: &mut Warp,
        args: &[Operand],
        exec: u32,
        op: &ReduxOp,
        ty: &PtxType,
    ) {
        let signed = ty.is_signed();
        let mk = mask_bits(ty.bits());
        let mut acc: Option<u64> = None;
        for l in 0..32 {
            if exec & (1 << l) == 0 {
                continue;
            }
            let v = self.val(b, w, wi, &args[1], l) & mk;
            acc = Some(match acc {
                None => v,
                Some(a) => match op {
                    ReduxOp::Add => a.wrapping_add(v) & mk,
                    ReduxOp::And => a & v,
                    ReduxOp::Or => a | v,
                    ReduxOp::Xor => a ^ v,
                    ReduxOp::Min | ReduxOp::Max => {
                        let (x, y) = if signed {
                            (a as u32 as i32 as i64, v as u32 as i32 as i64)
                        } else {
                            (a as i64, v as i64)
                        };
                        let pick_a = if *op == ReduxOp::Min { x <= y } else { x >= y };
                        if pick_a {
                            a
                        } else {
                            v
                        }
                    }
                },
            });
        }
        let r = acc.unwrap_or(0);
        for l in 0..32 {
            if exec & (1 << l) != 0 {
                Self::set(w, &args[0], l, r);
            }
        }
    }

    /// `match.sync`: the mask of member lanes holding the same value (`.any`), or all-or-nothing (`.all`).
    #[allow(clippy::too_many_arguments)]
    fn match_sync(
        &mut self,
        b: &Block,
        wi: usize,
        w: &mut Warp,
        args: &[Operand],
        exec: u32,
        all: &bool,
        ty: &PtxType,
    ) {
        let ai = if args.len() >= 4 { 2 } else { 1 };
        let mk = mask_bits(ty.bits());
        let mut vals = [0u64; 32];
        for (l, v) in vals.iter_mut().enumerate() {
            if exec & (1 << l) != 0 {
                *v = self.val(b, w, wi, &args[ai], l) & mk;
            }
        }
        for l in 0..32 {
            if exec & (1 << l) == 0 {
                continue;
            }
            let mut same = 0u32;
            for k in 0..32 {
                if exec & (1 << k) != 0 && vals[k] == vals[l] {
                    same |= 1 << k;
                }
            }
            if *all {
                let eq = same == exec;
                Self::set(w, &args[0], l, if eq { exec as u64 } else { 0 });
                if ai == 2 {
                    Self::set(w, &args[1], l, eq as u64);
                }
            } else {
                Self::set(w, &args[0], l, same as u64);
            }
        }
    }

    /// `elect.sync`: the lowest member lane is the leader.
    fn elect(&mut self, w: &mut Warp, args: &[Operand], exec: u32) {
        // d|p, membermask: every member is here (checked above); the lowest is the leader.
        let leader = exec.trailing_zeros() as u64;
        let (d, p) = if args.len() >= 3 {
            (&args[0], Some(&args[1]))
        } else {
            (&args[0], None)
        };
        for l in 0..32usize {
            if exec & (1 << l) != 0 {
                match p {
                    Some(p) => {
                        Self::set(w, d, l, leader);
                        Self::set(w, p, l, (l as u64 == leader) as u64);
                    }
                    // `elect.sync p, mask` (no d)
                    None => Self::set(w, d, l, (l as u64 == leader) as u64),
                }
            }
        }
    }

    pub(super) fn exec_ldmatrix(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        n: usize,
        trans: bool,
    ) -> bool {
        let m = self.m;
        let ins = &m.code[pc as usize];
        let args = &ins.args;
        // rows[i][r] = 8 b16 values of row r of matrix i
        let mut rows = [[[0u16; 8]; 8]; 4];
        for (i, mat) in rows.iter_mut().enumerate().take(n) {
            for (r, row) in mat.iter_mut().enumerate() {
                let l = i * 8 + r;
                let a = match &args[1] {
                    Operand::Addr(base, off) => self.addr(w, base, *off, l, false),
                    o => self.val(b, w, wi, o, l),
                };
                let a = if (SHARED_WINDOW..SHARED_WINDOW + WINDOW).contains(&a) {
                    a - SHARED_WINDOW
                } else {
                    a
                };
                let loc = match self.resolve(b, wi, l, Space::Shared, a, 16, pc) {
                    Some(x) => x,
                    None => return false,
                };
                self.track(b, wi, l, loc, 16, Acc::Read, pc, a);
                let s = self.mem_slice(b, loc);
                for (c, v) in row.iter_mut().enumerate() {
                    *v = u16::from_le_bytes([s[2 * c], s[2 * c + 1]]);
                }
            }
            // one shared wavefront per 8x8 matrix
            self.finish_access(pc);
        }
        let dsts = args[0].elements();
        for l in 0..32usize {
            let (g, t) = (l >> 2, l & 3);
            for (i, d) in dsts.iter().enumerate().take(n) {
                let (lo, hi) = if trans {
                    (rows[i][2 * t][g], rows[i][2 * t + 1][g])
                } else {
                    (rows[i][g][2 * t], rows[i][g][2 * t + 1])
                };
                Self::set(w, d, l, lo as u64 | (hi as u64) << 16);
            }
        }
        true
    }
}

/// The source lane j of each lane for `mode` (PTX ISA, shfl.sync), in range when j is within the lane's
/// segment bound: one loop per mode (the mode chosen once, not per lane). Returns the lanes that the
/// lanes of `exec` read in range.
#[inline(always)]
fn shfl_mode(
    mode: &ShflMode,
    vals: &[u64; 32],
    bv: impl Fn(usize) -> u64,
    c: impl Fn(usize) -> u64,
    out: &mut [u64; 32],
    inrange: &mut [u64; 32],
    exec: u32,
) -> u32 {
    match *mode {
        ShflMode::Up => shfl_lanes(vals, bv, c, out, inrange, exec, |lane, bv, _, max| {
            (lane - bv, lane - bv >= max)
        }),
        ShflMode::Down => shfl_lanes(vals, bv, c, out, inrange, exec, |lane, bv, _, max| {
            (lane + bv, lane + bv <= max)
        }),
        ShflMode::Bfly => shfl_lanes(vals, bv, c, out, inrange, exec, |lane, bv, _, max| {
            (lane ^ bv, (lane ^ bv) <= max)
        }),
        ShflMode::Idx => shfl_lanes(vals, bv, c, out, inrange, exec, |lane, bv, seg, max| {
            let j = (lane & seg) | (bv & !seg);
            (j, j <= max)
        }),
    }
}

/// `out[l]` = the value of lane l's source lane (`src(lane, b, segmask, max_lane)` gives it and whether
/// it is in range; `bv(l)` and `c(l)` are lane l's lane operand and clamp); an out-of-range or
/// out-of-warp source reads the lane's own value. Returns the source lanes the lanes of `exec` read in
/// range.
#[inline(always)]
fn shfl_lanes(
    vals: &[u64; 32],
    bv: impl Fn(usize) -> u64,
    c: impl Fn(usize) -> u64,
    out: &mut [u64; 32],
    inrange: &mut [u64; 32],
    exec: u32,
    src: impl Fn(i32, i32, i32, i32) -> (i32, bool),
) -> u32 {
    // The source lanes first (lane arithmetic only: vector code), then the reads.
    let mut from = [0u32; 32];
    for l in 0..32usize {
        let b = (bv(l) & 0x1f) as i32;
        let c = c(l) as u32;
        let cval = (c & 0x1f) as i32;
        let segmask = ((c >> 8) & 0x1f) as i32;
        let lane = l as i32;
        let max_lane = (lane & segmask) | (cval & !segmask);
        let (j, pval) = src(lane, b, segmask, max_lane);
        from[l] = if pval && (0..32).contains(&j) {
            j as u32
        } else {
            l as u32
        };
        inrange[l] = pval as u64;
    }
    let mut read = 0u32;
    for (l, (o, &f)) in out.iter_mut().zip(&from).enumerate() {
        // (`from` is a lane: the mask only spares the bounds check)
        *o = vals[f as usize & 31];
        read |= ((exec >> l) & inrange[l] as u32 & 1) << (f & 31);
    }
    read
}
