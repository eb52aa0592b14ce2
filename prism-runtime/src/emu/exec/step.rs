//! The warp step: choosing the group of lanes that runs next, executing one instruction for it
//! (the dispatch to the instruction families), and the diagnosis of a block that can make no progress.

use super::*;

/// A runnable lane that has not run for more than this many steps of its warp goes first (independent
/// mode).
const STARVE_STEPS: u64 = 48;

impl L<'_> {
    pub(super) fn diagnose_stall(&mut self, b: &Block) {
        // collective waits first
        for (wi, w) in b.warps.iter().enumerate() {
            for ln in 0..32 {
                if w.st[ln] == Ls::Coll {
                    let pc = w.pc[ln];
                    let waiting: u32 = (0..32)
                        .filter(|&x| w.st[x] == Ls::Coll && w.pc[x] == pc)
                        .fold(0, |a, x| a | 1 << x);
                    let missing = w.coll_member & !waiting;
                    let culprit = if missing != 0 {
                        missing.trailing_zeros()
                    } else {
                        ln as u32
                    };
                    let where_ = match w.st[culprit as usize] {
                        Ls::Exit => "has exited".to_string(),
                        Ls::Bar => format!(
                            "waits at the barrier at PTX line {}",
                            self.m.code[w.pc[culprit as usize] as usize].line
                        ),
                        Ls::Coll => format!(
                            "waits at another collective at PTX line {}",
                            self.m.code[w.pc[culprit as usize] as usize].line
                        ),
                        _ => "did not arrive".to_string(),
                    };
                    let msg = format!(
                        "warp collective '{}' with membermask 0x{:08x} is executed by lanes 0x{:08x} only; member lane {} {}",
                        self.opname(pc),
                        w.coll_member,
                        waiting,
                        culprit,
                        where_
                    );
                    self.fault(b, wi, Some(culprit), pc, FaultKind::CollectiveMisuse, msg);
                    return;
                }
            }
        }
        for (wi, w) in b.warps.iter().enumerate() {
            for ln in 0..32 {
                if w.st[ln] == Ls::Bar {
                    let pc = w.pc[ln];
                    let mut desc = String::new();
                    for (id, bar) in b.bars.iter().enumerate() {
                        if bar.arrived > 0 {
                            let exp = bar.expected.unwrap_or(self.nthreads - b.exited);
                            desc.push_str(&format!(
                                " barrier {}: {} of {} threads arrived;",
                                id, bar.arrived, exp
                            ));
                        }
                    }
                    let msg = format!(
                        "deadlock: no thread can make progress;{} {} threads exited",
                        desc, b.exited
                    );
                    self.fault(b, wi, Some(ln as u32), pc, FaultKind::Deadlock, msg);
                    return;
                }
            }
        }
    }

    /// Ends a launch whose threads still run after a `DataRace` once its tail has passed (or `max_steps`):
    /// no `Livelock` is added (the spin may be the race's doing); the first race's message says where the
    /// launch stopped.
    fn end_after_race(&mut self) {
        self.abort = true;
        let steps = self.steps - 1;
        let quiet = self
            .race_tail
            .as_ref()
            .map_or(0, |t| steps.saturating_sub(t.last));
        if let Some(f) = self
            .faults
            .iter_mut()
            .find(|f| f.kind == FaultKind::DataRace)
        {
            f.message.push_str(&format!(
                " [the launch was ended after {steps} warp-instructions, the last {quiet} without a new fault, with threads still running: \
                 after a race, execution goes on only to find further faults]"
            ));
        }
    }

    pub(super) fn opname(&self, pc: u32) -> String {
        match &self.m.code[pc as usize].kind {
            Kind::Shfl(_) => "shfl.sync".into(),
            Kind::Vote(_) => "vote.sync".into(),
            Kind::Redux(..) => "redux.sync".into(),
            Kind::Match(..) => "match.sync".into(),
            Kind::BarWarpSync => "bar.warp.sync".into(),
            Kind::Mma(_) => "mma.sync.aligned".into(),
            Kind::Ldmatrix(..) => "ldmatrix.sync.aligned".into(),
            Kind::Stmatrix(..) => "stmatrix.sync.aligned".into(),
            Kind::Movmatrix => "movmatrix.sync.aligned".into(),
            Kind::Wmma(_) => "wmma.sync.aligned".into(),
            Kind::Elect => "elect.sync".into(),
            Kind::Setmaxnreg(inc) => format!(
                "setmaxnreg.{}.sync.aligned.u32",
                if *inc { "inc" } else { "dec" }
            ),
            Kind::Wgmma(op) => wgmma::name(op),
            k => format!("{:?}", k),
        }
    }

    /// Chooses the lane group to run: (pc, mask), and whether the group holds every runnable lane of the
    /// warp.
    fn pick_group(&mut self, w: &mut Warp) -> ((u32, u32), bool) {
        // A converged warp (every runnable lane at one PC) runs that PC with all of them: what the scan
        // below chooses too, since starvation and random choices apply only to diverged warps.
        let run = w.run_mask();
        if run == 0 {
            return ((0, 0), false);
        }
        let pc0 = w.pc[run.trailing_zeros() as usize];
        if warp_scan::lanes_at(&w.pc, pc0) & run == run {
            return ((pc0, run), true);
        }
        // Diverged (so several PCs): the lowest PC, and the lowest runnable lane that has not run for
        // `STARVE_STEPS` steps of its warp goes first (independent mode).
        if w.steps.saturating_sub(w.all_run) > STARVE_STEPS {
            // (the lanes' entries are read only then)
            w.settle_last_run();
        }
        let (minpc, starving) =
            warp_scan::diverged_lanes(run, &w.pc, &w.last_run, w.all_run, w.steps, STARVE_STEPS);
        let mut pc = minpc;
        if self.cfg.warp_mode == WarpMode::Independent {
            if starving != 0 {
                pc = w.pc[starving.trailing_zeros() as usize];
            } else if matches!(self.cfg.schedule, Schedule::Random { .. })
                && self.rand().is_multiple_of(8)
            {
                let runs: Vec<u32> = (0..32)
                    .filter(|&l| w.st[l] == Ls::Run)
                    .map(|l| w.pc[l])
                    .collect();
                pc = runs[(self.rand() % runs.len() as u64) as usize];
            }
        }
        ((pc, warp_scan::lanes_at(&w.pc, pc) & run), false)
    }

    /// Executes one warp step. Returns `Stop` when the warp cannot continue. (Inlined into the quantum
    /// loop, its one caller: a call per warp-instruction costs the matmul 8%.)
    #[inline(always)]
    pub(super) fn step(
        &mut self,
        sc: &mut exec_fast::Scratch,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
    ) -> Step {
        // `converged`: the group is every runnable lane of the warp (a hint is only ever such a group).
        let ((pc, mask), converged) = match w.hint.take() {
            Some(h) => {
                debug_assert!(
                    w.run_mask() == h.1 && (0..32).all(|l| h.1 >> l & 1 == 0 || w.pc[l] == h.0),
                    "a hint is every runnable lane, all at its PC"
                );
                (h, true)
            }
            None => self.pick_group(w),
        };
        if mask == 0 {
            return Step::Stop;
        }
        self.steps += 1;
        self.clock += 1;
        if self.steps > self.step_limit {
            if self.race_tail.is_some() {
                self.end_after_race();
                return Step::Stop;
            }
            let lane = mask.trailing_zeros();
            let msg = format!("step limit of {} warp-instructions exceeded; threads keep running (spinning?) at this instruction", self.cfg.max_steps);
            self.fault(b, wi, Some(lane), pc, FaultKind::Livelock, msg);
            return Step::Stop;
        }
        w.steps += 1;
        let steps = w.steps;
        if mask == u32::MAX {
            w.all_run = steps;
        } else {
            if w.part.0 != mask {
                w.settle_last_run();
            }
            w.part = (mask, steps);
        }
        let m = self.m;
        let ins = match m.code.get(pc as usize) {
            Some(i) => i,
            None => {
                self.fault(
                    b,
                    wi,
                    Some(mask.trailing_zeros()),
                    pc.saturating_sub(1),
                    FaultKind::InvalidOperation,
                    "control fell off the end of the code".into(),
                );
                return Step::Stop;
            }
        };
        let exec = match ins.guard {
            None => mask,
            Some((p, neg)) => {
                let t = warp_scan::nonzero_lanes(w.regs.lanes(p as usize * 32));
                (if neg { !t } else { t }) & mask
            }
        };
        {
            let p = &mut self.pic[pc as usize];
            p.warp_instructions += 1;
            // (the baseline target has no popcount instruction: a full warp skips the bit count)
            p.thread_instructions += if exec == u32::MAX {
                32
            } else {
                exec.count_ones() as u64
            };
        }
        let args = &ins.args;
        if self.has_wgmma && !matches!(ins.kind, Kind::Wgmma(_)) && b.wg.warp_busy(wi) {
            if let Some(r) = b.wg.touched(wi, args) {
                let msg = format!(
                    "register {} is an operand of a wgmma that is still in flight: it may be read or written only after the wgmma.wait_group that retires it",
                    self.m.reg_names.get(r as usize).map(String::as_str).unwrap_or("?")
                );
                self.fault(
                    b,
                    wi,
                    Some(exec.trailing_zeros()),
                    pc,
                    FaultKind::InFlight,
                    msg,
                );
                return Step::Stop;
            }
        }
        if let Some(s) = self.fast_step(sc, b, wi, w, ins, pc, mask, exec) {
            // Every runnable lane was in the group (converged) and moved to pc + 1, and a fast path changes
            // no lane's state: that is the next group.
            if converged {
                w.hint = Some((pc + 1, mask));
            }
            return s;
        }
        let s = self.dispatch(b, wi, w, ins, pc, mask, exec);
        // The general path: when the group was every runnable lane, none changed state, and the
        // instruction moves a whole group to one PC, the group stays whole there.
        if converged && w.run == mask && matches!(s, Step::Continue) {
            if let Some(next) = uniform_next(ins, pc, mask, exec) {
                w.hint = Some((next, mask));
            } else if matches!(
                ins.kind,
                Kind::Shfl(_) | Kind::Vote(_) | Kind::Redux(..) | Kind::Match(..)
            ) && warp_scan::lanes_at(&w.pc, pc + 1) & mask == mask
            {
                // (lanes passing another membermask run as a later group: then some stayed at `pc`)
                w.hint = Some((pc + 1, mask));
            }
        }
        s
    }

    /// Executes `ins` for the lanes `exec` of the group `mask` at `pc`: one arm per instruction family.
    #[allow(clippy::too_many_arguments)]
    fn dispatch(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        pc: u32,
        mask: u32,
        exec: u32,
    ) -> Step {
        match &ins.kind {
            Kind::Mov(ty) => return self.exec_mov(b, wi, w, ins, mask, exec, ty),
            Kind::Alu(op, ty, md) => {
                return self.exec_alu_op(b, wi, w, ins, mask, exec, op, ty, md)
            }
            Kind::Setp(cmp, ty, bop, ftz) => {
                return self.exec_setp(b, wi, w, ins, mask, exec, (cmp, ty, bop), *ftz)
            }
            Kind::Set(cmp, dty, sty, bop, ftz) => {
                return self.exec_set(b, wi, w, ins, mask, exec, (cmp, dty, sty, bop), *ftz)
            }
            Kind::Selp(_) => return self.exec_selp(b, wi, w, ins, mask, exec),
            Kind::Slct(_, sty) => return self.exec_slct(b, wi, w, ins, mask, exec, sty),
            Kind::Cvt(dty, sty, rnd, sat) => {
                return self.exec_cvt(b, wi, w, ins, mask, exec, dty, sty, rnd, sat)
            }
            Kind::Cvta(to, space, ty) => {
                return self.exec_cvta(b, wi, w, ins, mask, exec, to, space, ty)
            }
            Kind::Ld(space, ty, vw) => {
                return self.exec_ld(b, wi, w, ins, pc, mask, exec, space, ty, vw)
            }
            Kind::St(space, ty, vw) => {
                return self.exec_st(b, wi, w, ins, pc, mask, exec, space, ty, vw)
            }
            Kind::Atom(space, op, PtxType::B128, _, _) => {
                return self.exec_atom128(b, wi, w, ins, pc, mask, exec, space, op)
            }
            Kind::Atom(space, op, ty, red, 1) => {
                return self.exec_atom(b, wi, w, ins, pc, mask, exec, space, op, ty, red)
            }
            Kind::Atom(space, op, ty, red, vw) => {
                let form = (*space, *op, *ty, *red, *vw);
                return self.exec_atom_vec(b, wi, w, ins, pc, mask, exec, form);
            }
            Kind::Bra => return self.exec_bra(w, ins, pc, mask, exec),
            Kind::Nop => Self::advance(w, mask),
            Kind::CpAsyncCommit | Kind::CpAsyncWait => {
                return self.exec_cp_async_group(b, wi, w, ins, mask, exec)
            }
            Kind::Fence => return self.exec_fence(b, wi, w, mask, exec),
            Kind::Exit | Kind::Ret => return self.exec_exit(b, wi, w, ins, mask, exec),
            Kind::Call => return self.exec_call(b, wi, w, ins, pc, mask, exec),
            Kind::Trap => return self.exec_trap(b, wi, w, pc, mask, exec),
            Kind::Bar(mode) => {
                return self.exec_bar(b, wi, w, pc, mask, exec, *mode);
            }
            Kind::BarWarpSync
            | Kind::Shfl(_)
            | Kind::Vote(_)
            | Kind::Redux(..)
            | Kind::Match(..)
            | Kind::Mma(_)
            | Kind::Ldmatrix(..)
            | Kind::Stmatrix(..)
            | Kind::Movmatrix
            | Kind::Wmma(_)
            | Kind::Elect => {
                return self.exec_collective(b, wi, w, pc, mask, exec);
            }
            Kind::Activemask => return self.exec_activemask(w, ins, mask, exec),
            Kind::CpAsync(sz) => return self.exec_cp_async(b, wi, w, ins, pc, mask, exec, sz),
            Kind::Mbarrier(op) => {
                return self.exec_mbarrier(b, wi, w, pc, mask, exec, *op);
            }
            Kind::CpAsyncBulk { .. } => {
                return self.exec_cp_async_bulk(b, wi, w, ins, pc, mask, exec)
            }
            Kind::Wgmma(op) => {
                return self.exec_wgmma(b, wi, w, pc, mask, exec, *op);
            }
            Kind::FenceProxyAsync => return self.exec_fence_proxy_async(b, wi, w, mask, exec),
            Kind::BulkGroup(wait) => return self.exec_bulk_group(b, wi, w, ins, mask, exec, wait),
            Kind::Mapa(generic) => return self.exec_mapa(b, wi, w, pc, mask, exec, *generic),
            Kind::ClusterBar(arrive) => {
                return self.exec_cluster_bar(b, wi, w, pc, mask, exec, *arrive)
            }
            Kind::Setmaxnreg(inc) => {
                return self.exec_setmaxnreg(b, wi, w, pc, mask, exec, *inc);
            }
            Kind::CpAsyncBulkTensor { rank, load, .. } => {
                return self.exec_bulk_tensor(b, wi, w, pc, mask, exec, rank, load)
            }
            Kind::BulkReduceTensor { rank, .. } => {
                return self.exec_bulk_tensor(b, wi, w, pc, mask, exec, rank, &false)
            }
            Kind::AsyncStore {
                op,
                ty,
                vecw,
                generic,
            } => {
                let form = (*op, *ty, *vecw, *generic);
                return self.exec_async_store(b, wi, w, pc, mask, exec, form);
            }
            Kind::BulkReduce { op, ty, cluster } => {
                let red = Some((*op, *ty));
                return self.exec_bulk_async(b, wi, w, pc, mask, exec, red, *cluster);
            }
            Kind::BulkCopyCluster => {
                return self.exec_bulk_async(b, wi, w, pc, mask, exec, None, true)
            }
            Kind::Misc(op) => return self.exec_misc(b, wi, w, pc, mask, exec, *op),
            Kind::Tex(op) => return self.exec_tex(b, wi, w, pc, mask, exec, *op),
            Kind::Surf(op) => return self.exec_surf(b, wi, w, pc, mask, exec, *op),
            Kind::Txq(q, s) => return self.exec_txq(b, wi, w, pc, mask, exec, (*q, *s)),
            Kind::TensormapReplace(f, sp) => {
                return self.exec_tensormap_replace(b, wi, w, pc, mask, exec, (*f, *sp))
            }
            Kind::TensormapCopy => return self.exec_tensormap_copy(b, wi, w, pc, mask, exec),
            Kind::Unsupported(name) => {
                self.fault(
                    b,
                    wi,
                    Some(mask.trailing_zeros()),
                    pc,
                    FaultKind::Unsupported,
                    format!("instruction '{}' is not supported by the emulator", name),
                );
                return Step::Stop;
            }
        }
        Step::Continue
    }
}

/// The PC every lane of the group `mask` stands at after the general path ran `ins` at `pc` for the lanes
/// `exec` and left every lane's state as it was: `pc + 1` for the instructions that only ever advance
/// their group (guarded-off lanes included), and a branch's single destination when the group agrees on
/// it. `None` for everything that may move lanes elsewhere (calls, returns, exits, a divergent branch),
/// may leave part of the group behind (a collective whose lanes pass different membermasks) or that
/// the list does not name.
fn uniform_next(ins: &Instr, pc: u32, mask: u32, exec: u32) -> Option<u32> {
    match &ins.kind {
        k if k.is_register_op() => Some(pc + 1),
        Kind::St(..)
        | Kind::Atom(..)
        | Kind::Nop
        | Kind::Fence
        | Kind::CpAsyncCommit
        | Kind::CpAsyncWait
        | Kind::Bar(_)
        | Kind::Activemask => Some(pc + 1),
        Kind::Bra if exec == mask => match ins.args.last() {
            Some(Operand::Label(t)) => Some(*t),
            _ => Some(pc + 1),
        },
        Kind::Bra if exec == 0 => Some(pc + 1),
        _ => None,
    }
}
