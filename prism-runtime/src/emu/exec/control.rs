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
                    // copy return values back
                    let callee = &m.funcs[fr.callee as usize];
                    for (k, r) in fr.rets.iter().enumerate() {
                        if let Some(rd) = callee.rets.get(k) {
                            let src = Loc::Local(
                                self.tid_of(wi, l) as usize * self.local_size + rd.offset,
                            );
                            copy_param(self, b, w, wi, l, src, r, rd.size);
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
            }
            // pending block-wide barriers may now be complete
            for id in 0..16 {
                if b.bars[id].arrived > 0 && b.bars[id].expected.is_none() {
                    self.try_complete(b, wi, w, id);
                }
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
        let mut rets: Vec<Operand> = Vec::new();
        let mut cargs: Vec<Operand> = Vec::new();
        let mut seen_f = false;
        for a in args {
            match a {
                Operand::Func(f) => {
                    f_idx = Some(*f);
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
            Some(f) if m.funcs[f as usize].defined => f,
            // The CUDA runtime's device-side functions that nvcc declares `.extern`.
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
            _ => {
                self.fault(
                    b,
                    wi,
                    Some(exec.trailing_zeros()),
                    pc,
                    FaultKind::Unsupported,
                    "call target is not a defined .func (indirect calls are unsupported)".into(),
                );
                return Step::Stop;
            }
        };
        let callee = &m.funcs[f as usize];
        if w.stack.is_empty() {
            w.stack = vec![Vec::new(); 32];
        }
        lanes!(exec, l, {
            for (k, a) in cargs.iter().enumerate() {
                if let Some(pd) = callee.params.get(k) {
                    let dst = self.tid_of(wi, l) as usize * self.local_size + pd.offset;
                    match a {
                        Operand::Sym(SymRef::Local(o)) => {
                            let src = self.tid_of(wi, l) as usize * self.local_size + *o as usize;
                            b.local.copy_within(src..src + pd.size, dst);
                        }
                        o => {
                            let v = self.val(b, w, wi, o, l);
                            let n = pd.size.min(8);
                            b.local[dst..dst + n].copy_from_slice(&v.to_le_bytes()[..n]);
                        }
                    }
                }
            }
            w.stack[l].push(Frame {
                ret_pc: pc + 1,
                callee: f,
                rets: rets.clone(),
            });
            w.pc[l] = callee.start;
        });
        Self::advance(w, mask & !exec);
        Step::Continue
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
            self.fault(
                b,
                wi,
                Some(exec.trailing_zeros()),
                pc,
                FaultKind::Trap,
                "trap instruction executed".into(),
            );
            return Step::Stop;
        }
        Self::advance(w, mask);
        Step::Continue
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
                cargs.get(k).map(|o| match o {
                    Operand::Sym(SymRef::Local(off)) => {
                        let at = me.tid_of(wi, l) as usize * me.local_size + *off as usize;
                        let mut v = [0u8; 8];
                        if let Some(src) = b.local.get(at..at + 8) {
                            v.copy_from_slice(src);
                        }
                        u64::from_le_bytes(v)
                    }
                    o => me.val(b, w, wi, o, l),
                })
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
                    Self::set(w, r, l, 0);
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
            let d = l.tid_of(wi, lane) as usize * l.local_size + *o as usize;
            if let Loc::Local(s) = src {
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
