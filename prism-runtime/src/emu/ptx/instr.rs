//! Instruction statements: guard, opcode and raw operands taken from the PTX model; names resolved and
//! every pending instruction decoded once all labels are known (`finish`).

use super::*;
use prism_core::ptx as model;

impl Parser {
    /// Queues an instruction for decoding (at the end of its body, once every label is known), with a
    /// snapshot of the names in scope.
    pub(super) fn instruction(&mut self, i: &model::Instruction) {
        let mut args = Vec::with_capacity(i.operands.len());
        for o in &i.operands {
            match o {
                // setp's two destinations `p|q` are two operands.
                model::Operand::Pair(p, q) => {
                    args.push(raw_op(p));
                    args.push(raw_op(q));
                }
                o => args.push(raw_op(o)),
            }
        }
        let idx = self.code.len();
        self.code.push(Instr {
            kind: Kind::Nop,
            guard: None,
            args: vec![],
            line: i.pos.0,
            is_cond_branch: false,
            order: 0,
        });
        // Snapshot the current scope chain for name resolution after the body is parsed (once per change of
        // the chain, not once per instruction).
        let scope = match self.snapshot {
            Some((gen, scope)) if gen == self.scope_gen => scope,
            _ => {
                let mut merged = HashMap::new();
                for s in self.scopes.iter() {
                    for (k, v) in s.iter() {
                        merged.insert(k.clone(), v.clone());
                    }
                }
                self.scope_store.push(merged);
                self.scope_parent.push(None);
                let scope = self.scope_store.len() - 1;
                self.snapshot = Some((self.scope_gen, scope));
                scope
            }
        };
        self.pending.push((
            idx,
            PendingInstr {
                opcode: i.opcode.clone(),
                guard: i.guard.as_ref().map(|g| (g.pred.clone(), g.negated)),
                args,
                line: i.pos.0 as usize,
                scope,
            },
        ));
    }

    pub(super) fn resolve_name(&self, scope: usize, name: &str) -> Option<Name> {
        if let Some(n) = self.scope_store[scope].get(name) {
            return Some(n.clone());
        }
        self.module_names.get(name).cloned()
    }

    pub(super) fn finish(mut self) -> Result<Module, PtxError> {
        self.resolve_relocs()?;
        // Dynamic shared memory is placed after all static shared memory.
        let dyn_align = self.dyn_smem.as_ref().map(|d| d.1).unwrap_or(16).max(16);
        for f in self.funcs.iter_mut() {
            f.smem = f.smem.max(self.smem);
        }
        for f in &self.funcs {
            if !f.defined && f.is_entry {
                return perr(0, format!("entry {} declared but not defined", f.name));
            }
        }
        // Registers never live at once share a slot (`ptx/liveness.rs`).
        let shared = self.share_slots.then(|| {
            liveness::share_slots(&self.funcs, &mut self.code, self.nregs, &self.reg_names)
        });
        if let Some(Some((n, names))) = shared {
            self.nregs = n;
            self.reg_names = names;
        }
        // Each function's registers (after renumbering), which a recursive call of it saves: calls may
        // recurse, directly or through function pointers (`exec/control.rs`).
        for f in self.funcs.iter_mut().filter(|f| f.defined && !f.is_entry) {
            let mut regs = Vec::new();
            for ins in self
                .code
                .get(f.start as usize..f.end as usize)
                .unwrap_or_default()
            {
                if let Some((p, _)) = ins.guard {
                    regs.push(p);
                }
                for op in &ins.args {
                    op.visit(&mut |o| match o {
                        Operand::Reg(r)
                        | Operand::PredNot(r)
                        | Operand::Addr(AddrBase::Reg(r), _) => regs.push(*r),
                        _ => {}
                    });
                }
            }
            regs.retain(|&r| r > REG_STACK);
            regs.sort_unstable();
            regs.dedup();
            f.regs = regs;
        }
        Ok(Module {
            id: NEXT_MODULE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            funcs: self.funcs,
            code: self.code,
            globals: self.globals,
            nregs: self.nregs,
            dyn_align,
            local_size: self.local,
            reg_names: self.reg_names,
        })
    }
}
