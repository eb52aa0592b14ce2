//! Control flow and calls: `bra`, `exit` / `ret`, `call`, `trap`; the CUDA runtime's device functions the
//! emulator provides (`vprintf`, `__assertfail`) and the copying of call parameters and return values.

use super::*;

impl L<'_> {
    pub(super) fn exec_bra(
        &mut self,
        w: &mut Warp,
        ins: &Instr,
        pc: u32,
        mask: u32,
        exec: u32,
    ) -> Step {
        let args = &ins.args;
        let target = match args.last() {
            Some(Operand::Label(t)) => *t,
            _ => pc + 1,
        };
        if ins.is_cond_branch && exec != 0 && exec != mask {
            self.pic[pc as usize].divergent_branches += 1;
        }
        // Branch-free over all 32 lanes: lanes outside the group keep their PC.
        warp_scan::branch_lanes(&mut w.pc, mask, exec, target, pc + 1);
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_exit(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        ins: &Instr,
        mask: u32,
        exec: u32,
    ) -> Step {
        let m = self.m;
        let mut exits = 0u32;
        lanes!(exec, l, {
            let frame = if ins.kind == Kind::Ret {
                w.stack.get_mut(l).and_then(|s| s.pop())
            } else {
                None
            };
            match frame {
                Some(fr) => {
                    let callee = &m.funcs[fr.callee as usize];
                    // The outer activation's registers first: a return value may go to one of them.
                    for (&r, &v) in callee.regs.iter().zip(&fr.saved) {
                        w.regs[r as usize * 32 + l] = v;
                    }
                    // copy return values back
                    let tid = self.tid_of(wi, l) as usize;
                    for (k, r) in fr.rets.iter().enumerate() {
                        if let Some(rd) = callee.rets.get(k) {
                            if let Some(i) =
                                self.local_index(b, tid, fr.base + rd.offset as u64, rd.size)
                            {
                                copy_param(self, b, w, wi, l, Loc::Local(i), r, rd.size);
                            }
                        }
                    }
                    w.pc[l] = fr.ret_pc;
                }
                None => {
                    exits |= 1 << l;
                }
            }
        });
        Self::advance(w, mask & !exec);
        if exits != 0 {
            let mut mm = exits;
            while mm != 0 {
                let l = mm.trailing_zeros() as usize;
                mm &= mm - 1;
                w.set_st(l, Ls::Exit);
                let t = self.tid_of(wi, l) as usize;
                b.exit_gen[t] = b.gen;
                b.exits_this_gen += 1;
                b.exited += 1;
                self.cluster_exit(b, t);
            }
            // pending block-wide barriers may now be complete
            for id in 0..16 {
                if b.bars[id].arrived > 0 && b.bars[id].expected.is_none() {
                    self.try_complete(b, wi, w, id);
                }
            }
            if w.all_exited() && !self.setmaxnreg_at_exit(b, wi, ins.line) {
                return Step::Stop;
            }
        }
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_call(
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
        let m = self.m;
        let mut f_idx = None;
        // An indirect call's target: the register (or immediate) between the return list and the
        // argument list (`call (ret), %rd, (args), prototype;`).
        let mut target = None;
        let mut rets: Vec<Operand> = Vec::new();
        let mut cargs: Vec<Operand> = Vec::new();
        let mut seen_f = false;
        for a in args {
            match a {
                Operand::Func(f) => {
                    f_idx = Some(*f);
                    seen_f = true;
                }
                Operand::Reg(_) | Operand::Imm(_) if !seen_f => {
                    target = Some(a.clone());
                    seen_f = true;
                }
                Operand::List(v) => {
                    if seen_f {
                        cargs = v.clone();
                    } else {
                        rets = v.clone();
                    }
                }
                _ => {}
            }
        }
        let f = match f_idx {
            Some(f) if m.funcs[f as usize].defined => Some(f),
            // The CUDA runtime's device-side functions that nvcc declares `.extern`.
            Some(f) if is_heap_function(&m.funcs[f as usize].name) => {
                return self.exec_heap(
                    b,
                    wi,
                    w,
                    pc,
                    exec,
                    &m.funcs[f as usize].name,
                    &rets,
                    &cargs,
                );
            }
            Some(f)
                if matches!(
                    m.funcs[f as usize].name.as_str(),
                    "vprintf" | "__assertfail"
                ) =>
            {
                return self.exec_builtin(
                    b,
                    wi,
                    w,
                    pc,
                    exec,
                    &m.funcs[f as usize].name,
                    &rets,
                    &cargs,
                );
            }
            None if target.is_some() => None,
            _ => {
                let name = f_idx.map_or("?", |f| m.funcs[f as usize].name.as_str());
                let why = if name.starts_with("__cudaCDP") || name.starts_with("cudaLaunchDevice") {
                    " (CUDA dynamic parallelism: launching kernels from the device is not supported)"
                } else {
                    " (an .extern function the emulator does not provide)"
                };
                let msg = format!("call of {name}, which is not a defined .func{why}");
                self.fault(
                    b,
                    wi,
                    Some(exec.trailing_zeros()),
                    pc,
                    FaultKind::Unsupported,
                    msg,
                );
                return Step::Stop;
            }
        };
        if w.stack.is_empty() {
            w.stack = vec![Vec::new(); 32];
        }
        let Some(callees) = self.call_targets(b, wi, w, pc, exec, f, target.as_ref()) else {
            return Step::Stop;
        };
        let Some(fresh) = self.recursive_bases(b, wi, w, pc, exec, &callees) else {
            return Step::Stop;
        };
        lanes!(exec, l, {
            let f = callees[l];
            let callee = &m.funcs[f as usize];
            let tid = self.tid_of(wi, l) as usize;
            let caller_base = lane_base(w, l);
            let (base, saved) = match fresh[l] {
                Some(base) => {
                    let saved = callee
                        .regs
                        .iter()
                        .map(|&r| w.regs[r as usize * 32 + l])
                        .collect();
                    (base, saved)
                }
                None => (caller_base, Vec::new()),
            };
            for (k, a) in cargs.iter().enumerate() {
                let Some(pd) = callee.params.get(k) else {
                    continue;
                };
                let Some(dst) = self.local_index(b, tid, base + pd.offset as u64, pd.size) else {
                    continue;
                };
                match a {
                    Operand::Sym(SymRef::Local(o)) => {
                        if let Some(src) =
                            self.local_index(b, tid, caller_base + *o as u64, pd.size)
                        {
                            b.local.copy_within(src..src + pd.size, dst);
                        }
                    }
                    o => {
                        let v = self.val(b, w, wi, o, l);
                        let n = pd.size.min(8);
                        b.local[dst..dst + n].copy_from_slice(&v.to_le_bytes()[..n]);
                    }
                }
            }
            w.stack[l].push(Frame {
                ret_pc: pc + 1,
                callee: f,
                rets: rets.clone(),
                base,
                saved,
            });
            w.pc[l] = callee.start;
        });
        Self::advance(w, mask & !exec);
        Step::Continue
    }

    /// Each lane's callee: the named function `f`, or the one whose address the lane's `target` holds
    /// (lanes of a warp may call different functions: a virtual call on mixed objects). `None` after a
    /// fault for a target that is not a defined `.func`.
    #[allow(clippy::too_many_arguments)]
    fn call_targets(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &Warp,
        pc: u32,
        exec: u32,
        f: Option<u32>,
        target: Option<&Operand>,
    ) -> Option<[u32; 32]> {
        let m = self.m;
        let mut callees = [0u32; 32];
        let mut bad = None;
        lanes!(exec, l, {
            let c = match (f, target) {
                (Some(f), _) => Some(f),
                (None, Some(t)) => {
                    let v = self.val(b, w, wi, t, l);
                    let c = func_of_address(v).filter(|&c| {
                        m.funcs
                            .get(c as usize)
                            .is_some_and(|g| g.defined && !g.is_entry)
                    });
                    if c.is_none() {
                        bad.get_or_insert((l, v));
                    }
                    c
                }
                (None, None) => {
                    bad.get_or_insert((l, 0));
                    None
                }
            };
            if let Some(c) = c {
                callees[l] = c;
            }
        });
        if let Some((l, v)) = bad {
            let msg = format!(
                "indirect call through {v:#x}, which is not the address of a defined .func"
            );
            self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
            return None;
        }
        Some(callees)
    }

    /// For each lane whose callee is already active in it (recursion), the base of a fresh layer of local
    /// memory above every active frame (the block's layers grown to hold it); `None` for a lane whose call
    /// runs in its caller's layer (every function's frame has its own static offsets in it). `None`
    /// altogether after a call-stack-overflow fault.
    fn recursive_bases(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &Warp,
        pc: u32,
        exec: u32,
        callees: &[u32; 32],
    ) -> Option<[Option<u64>; 32]> {
        let layer = self.local_size * self.nthreads as usize;
        let mut fresh = [None; 32];
        let mut overflow = None;
        lanes!(exec, l, {
            let c = callees[l];
            if w.stack[l].iter().any(|fr| fr.callee == c) {
                let top = w.stack[l].iter().map(|fr| fr.base).max().unwrap_or(0);
                let need = (top / self.local_size.max(1) as u64) as usize + 2;
                if need > MAX_FRAME_LAYERS || need.saturating_mul(layer) > MAX_BLOCK_LOCAL_BYTES {
                    overflow = Some((l, c, need - 1));
                    break;
                }
                if b.local.len() < need * layer {
                    b.local.resize(need * layer, 0);
                }
                fresh[l] = Some(top + self.local_size as u64);
            }
        });
        if let Some((l, c, depth)) = overflow {
            let msg = format!(
                "call stack overflow: {depth} recursive activations of {} (the emulator's limit is {} layers of {} bytes per thread, at most {} MiB per block)",
                self.m.funcs[c as usize].name,
                MAX_FRAME_LAYERS,
                self.local_size,
                MAX_BLOCK_LOCAL_BYTES >> 20
            );
            self.fault(b, wi, Some(l as u32), pc, FaultKind::OutOfBounds, msg);
            return None;
        }
        Some(fresh)
    }

    pub(super) fn exec_trap(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
    ) -> Step {
        if exec != 0 {
            let mut msg = String::from("trap instruction executed");
            // Cooperative groups traps in `this_grid().sync()` when the launch has no grid workspace.
            let workspace = |o: &Operand| matches!(o, Operand::Sreg(Sreg::Envreg(1 | 2)));
            if self.grid_ws == 0 && self.m.code.iter().any(|i| i.args.iter().any(workspace)) {
                msg.push_str(
                    " (the kernel reads the grid workspace, %envreg1/2: cooperative groups' \
                     this_grid().sync() needs a cooperative launch — Emulator::launch_cooperative, \
                     the CLI's --cooperative)",
                );
            }
            self.fault(b, wi, Some(exec.trailing_zeros()), pc, FaultKind::Trap, msg);
            return Step::Stop;
        }
        Self::advance(w, mask);
        Step::Continue
    }

    /// A call argument of lane `l` for a device-runtime function: a `.param` variable of the call
    /// sequence (in the lane's frame) holds it in its first 8 bytes; a register or immediate is its value.
    pub(super) fn call_arg(&self, b: &Block, w: &Warp, wi: usize, l: usize, o: &Operand) -> u64 {
        match o {
            Operand::Sym(SymRef::Local(off)) => {
                let tid = self.tid_of(wi, l) as usize;
                let at = self.local_index(b, tid, lane_base(w, l) + *off as u64, 8);
                let mut v = [0u8; 8];
                if let Some(src) = at.and_then(|at| b.local.get(at..at + 8)) {
                    v.copy_from_slice(src);
                }
                u64::from_le_bytes(v)
            }
            o => self.val(b, w, wi, o, l),
        }
    }

    /// Stores a device-runtime function's `size`-byte return value for lane `l`: into the call
    /// sequence's return `.param` (in the lane's frame) or a register.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn set_ret(
        &mut self,
        b: &mut Block,
        w: &mut Warp,
        wi: usize,
        l: usize,
        r: &Operand,
        v: u64,
        size: usize,
    ) {
        let size = size.min(8);
        match r {
            Operand::Sym(SymRef::Local(off)) => {
                let tid = self.tid_of(wi, l) as usize;
                if let Some(at) = self.local_index(b, tid, lane_base(w, l) + *off as u64, size) {
                    b.local[at..at + size].copy_from_slice(&v.to_le_bytes()[..size]);
                }
            }
            r => Self::set(w, r, l, v),
        }
    }

    /// `vprintf(format, args)` and `__assertfail(message, file, line, function, char_size)`, the device
    /// runtime functions nvcc calls for `printf` and `assert`. Lanes run them in lane order.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_builtin(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        exec: u32,
        name: &str,
        rets: &[Operand],
        cargs: &[Operand],
    ) -> Step {
        for l in 0..32usize {
            if exec & (1 << l) == 0 {
                continue;
            }
            // Call arguments are `.param` variables of the call sequence (in the thread's local frame): load
            // their 8 bytes; a register or immediate argument is its value.
            let arg = |me: &mut Self, b: &mut Block, w: &Warp, k: usize| {
                cargs.get(k).map(|o| me.call_arg(b, w, wi, l, o))
            };
            if name == "vprintf" {
                let (Some(fmt_addr), Some(args_addr)) = (arg(self, b, w, 0), arg(self, b, w, 1))
                else {
                    self.fault(
                        b,
                        wi,
                        Some(l as u32),
                        pc,
                        FaultKind::InvalidOperation,
                        "vprintf called without its two arguments".into(),
                    );
                    return Step::Stop;
                };
                let Some(fmt) = self.read_c_string(b, wi, l, fmt_addr, pc) else {
                    return Step::Stop;
                };
                struct Src<'x, 'a> {
                    l: &'x mut L<'a>,
                    b: &'x mut Block,
                    wi: usize,
                    lane: usize,
                    base: u64,
                    pc: u32,
                }
                impl super::printf::ArgSource for Src<'_, '_> {
                    fn arg(&mut self, offset: usize, size: usize) -> Option<u64> {
                        if self.base == 0 {
                            return None;
                        }
                        let bytes = self.l.read_generic(
                            self.b,
                            self.wi,
                            self.lane,
                            self.base + offset as u64,
                            size,
                            self.pc,
                        )?;
                        let mut v = [0u8; 8];
                        v[..size].copy_from_slice(&bytes);
                        Some(u64::from_le_bytes(v))
                    }
                    fn string(&mut self, addr: u64) -> Option<String> {
                        self.l
                            .read_c_string(self.b, self.wi, self.lane, addr, self.pc)
                    }
                }
                let mut src = Src {
                    l: self,
                    b,
                    wi,
                    lane: l,
                    base: args_addr,
                    pc,
                };
                let text = super::printf::format(fmt.as_bytes(), &mut src);
                self.printf.push(text);
                if let Some(r) = rets.first() {
                    // vprintf returns an int.
                    self.set_ret(b, w, wi, l, r, 0, 4);
                }
            } else {
                let read = |me: &mut Self, b: &mut Block, w: &Warp, k: usize| {
                    arg(me, b, w, k)
                        .and_then(|a| me.read_c_string(b, wi, l, a, pc))
                        .unwrap_or_default()
                };
                let message = read(self, b, w, 0);
                let file = read(self, b, w, 1);
                let line = arg(self, b, w, 2).unwrap_or(0) as u32;
                let function = read(self, b, w, 3);
                self.fault(
                    b,
                    wi,
                    Some(l as u32),
                    pc,
                    FaultKind::Trap,
                    format!("assertion `{message}` failed at {file}:{line} in {function}"),
                );
                return Step::Stop;
            }
        }
        Self::advance(w, exec);
        Step::Continue
    }
}

#[allow(clippy::too_many_arguments)]
fn copy_param(
    l: &mut L<'_>,
    b: &mut Block,
    w: &mut Warp,
    wi: usize,
    lane: usize,
    src: Loc,
    dst: &Operand,
    size: usize,
) {
    match dst {
        Operand::Sym(SymRef::Local(o)) => {
            let tid = l.tid_of(wi, lane) as usize;
            let d = l.local_index(b, tid, lane_base(w, lane) + *o as u64, size);
            if let (Loc::Local(s), Some(d)) = (src, d) {
                b.local.copy_within(s..s + size, d);
            }
        }
        Operand::Reg(_) => {
            let v = l.load(b, src, size.min(8));
            L::set(w, dst, lane, v);
        }
        _ => {}
    }
}
