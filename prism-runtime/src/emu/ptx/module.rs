//! Module structure: walks the PTX model (`prism_core::ptx`) in source order, placing variables,
//! registering functions and collecting each body's instructions for decoding.

use super::*;
use prism_core::ptx as model;

impl Parser {
    pub(super) fn module(&mut self, m: &model::Module) -> Result<(), PtxError> {
        for item in &m.items {
            match item {
                // `.version`, `.target`, `.address_size`, debug directives, sections, pragmas, texture
                // references: no meaning here (an instruction that uses a texture faults).
                model::Item::Directive(_) | model::Item::Raw(_) => {}
                model::Item::Var(v) => self.module_var(v)?,
                model::Item::Func(f) => self.function(f)?,
            }
        }
        Ok(())
    }

    fn module_var(&mut self, v: &model::VarDecl) -> Result<(), PtxError> {
        let is_extern = v.linkage.iter().any(|l| l == ".extern");
        match v.space {
            model::Space::Global | model::Space::Const => self.global_var(v),
            model::Space::Shared => self.shared_var(v, is_extern),
            _ => {
                let (name, size, align, _) = self.var_decl(v)?;
                let off = self.place_local_at(v.pos.0 as usize, align, size)?;
                self.declare(name, Name::Sym(SymRef::Local(off)));
                Ok(())
            }
        }
    }

    pub(super) fn function(&mut self, func: &model::Function) -> Result<(), PtxError> {
        let is_entry = func.entry;
        self.scopes.push(HashMap::new());
        self.scope_gen += 1;
        let rets = match &func.rets {
            Some(r) => self.param_list(r, false)?.0,
            None => Vec::new(),
        };
        let name = func.name.clone();
        let (params, pbuf) = match &func.params {
            Some(p) => self.param_list(p, is_entry)?,
            None => (Vec::new(), 0),
        };
        let mut reqntid = None;
        let mut maxntid = None;
        let mut maxnreg = None;
        let mut cluster = None;
        for p in &func.perf {
            let mut d = [1u32; 3];
            for (i, v) in p.args.iter().take(3).enumerate() {
                d[i] = *v as u32;
            }
            match p.name.as_str() {
                ".reqntid" => reqntid = Some(d),
                ".maxntid" => maxntid = Some(d),
                ".maxnreg" => maxnreg = p.args.first().map(|v| *v as u32),
                ".reqnctapercluster" => cluster = Some(d),
                _ => {}
            }
        }
        // Register the function name at module level (for calls, possibly before definition).
        let fidx = match self.funcs.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                self.funcs.push(Function {
                    name: name.clone(),
                    is_entry,
                    params: params.clone(),
                    rets: rets.clone(),
                    start: 0,
                    end: 0,
                    param_buf_size: pbuf,
                    defined: false,
                    reqntid,
                    maxntid,
                    maxnreg,
                    cluster,
                    smem: 0,
                    regs: Vec::new(),
                });
                self.funcs.len() - 1
            }
        };
        let Some(body) = &func.body else {
            self.scopes.pop();
            self.scope_gen += 1;
            return Ok(());
        };
        {
            let f = &mut self.funcs[fidx];
            if f.defined {
                return perr(
                    func.pos.0 as usize,
                    format!("function {} defined twice", name),
                );
            }
            f.params = params;
            f.rets = rets;
            f.param_buf_size = pbuf;
            f.reqntid = reqntid;
            f.maxntid = maxntid;
            f.defined = true;
            f.start = self.code.len() as u32;
        }
        self.smem_fn = self.smem;
        self.body(body)?;
        // The implicit return at the end of a body, on the line of its closing brace.
        self.code.push(Instr {
            kind: Kind::Ret,
            guard: None,
            args: vec![],
            line: func.end.0,
            is_cond_branch: false,
            order: 0,
        });
        self.funcs[fidx].end = self.code.len() as u32;
        self.funcs[fidx].smem = self.smem_fn;
        self.smem_fn_max = self.smem_fn_max.max(self.smem_fn);
        self.scopes.pop();
        self.scope_gen += 1;
        Ok(())
    }

    /// A function body: its statements, then every instruction decoded once all its labels are known.
    pub(super) fn body(&mut self, body: &[model::Stmt]) -> Result<(), PtxError> {
        let mut labels: HashMap<String, u32> = HashMap::new();
        let fn_start_pending = self.pending.len();
        self.push_scope();
        self.stmts(body, &mut labels, &mut BlockLabels::default())?;
        self.scopes.pop();
        self.scope_gen += 1;
        let pend: Vec<(usize, PendingInstr)> = self.pending.drain(fn_start_pending..).collect();
        for (idx, p) in pend {
            let ins = self.decode(&p, &labels)?;
            self.code[idx] = ins;
        }
        Ok(())
    }

    fn stmts(
        &mut self,
        stmts: &[model::Stmt],
        labels: &mut HashMap<String, u32>,
        blocks: &mut BlockLabels,
    ) -> Result<(), PtxError> {
        for s in stmts {
            match s {
                model::Stmt::Block(b) => {
                    self.push_scope();
                    blocks.enter(&b.stmts);
                    self.stmts(&b.stmts, labels, blocks)?;
                    blocks.open.pop();
                    self.scopes.pop();
                    self.scope_gen += 1;
                }
                model::Stmt::Label(l) => {
                    labels.insert(blocks.key(&l.name), self.code.len() as u32);
                }
                model::Stmt::Instr(i) => {
                    self.instruction(i);
                    if !blocks.open.is_empty() {
                        if let Some((_, p)) = self.pending.last_mut() {
                            p.args.iter_mut().for_each(|a| blocks.rename(a));
                        }
                    }
                }
                model::Stmt::Reg(r) => self.reg_decl(r)?,
                model::Stmt::Var(v) => self.body_var(v)?,
                // `.loc`, `.file`, `.pragma` and unknown directives: no meaning here.
                model::Stmt::Raw(_) => {}
            }
        }
        Ok(())
    }

    pub(super) fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
        self.scope_gen += 1;
    }

    fn reg_decl(&mut self, r: &model::RegDecl) -> Result<(), PtxError> {
        let line = r.pos.0 as usize;
        let ty = r
            .quals
            .iter()
            .rev()
            .filter(|q| !matches!(q.as_str(), ".v2" | ".v4"))
            .find_map(|q| PtxType::from_name(&q[1..]))
            .ok_or_else(|| PtxError {
                line,
                message: "missing register type".into(),
            })?;
        // A `.b128` register takes two 64-bit slots (`Parser::new_reg`).
        let slots = if ty == PtxType::B128 { 2u32 } else { 1 };
        for n in &r.names {
            let name = &n.name;
            match n.range {
                Some(count) => {
                    // Checked before the loop: `%r<99999999>` is an error, not minutes of allocation.
                    if count.saturating_mul(slots as i64)
                        > (MAX_REGISTERS - self.nregs.min(MAX_REGISTERS)) as i64
                    {
                        return perr(
                            line,
                            format!("{name}<{count}> takes the module past {MAX_REGISTERS} registers (the emulator's limit)"),
                        );
                    }
                    for i in 0..count {
                        self.new_reg(&format!("{}{}", name, i), ty);
                    }
                }
                None if self.nregs + slots > MAX_REGISTERS => {
                    return perr(line, format!("{name} takes the module past {MAX_REGISTERS} registers (the emulator's limit)"));
                }
                None => {
                    self.new_reg(name, ty);
                }
            }
        }
        Ok(())
    }

    fn body_var(&mut self, v: &model::VarDecl) -> Result<(), PtxError> {
        match v.space {
            // ptxas: "Parsing error near '.shared'" (the driver's JIT fails the same way, as a GPU run
            // showed): dynamic shared memory is declared at module scope.
            model::Space::Shared if v.linkage.iter().any(|l| l == ".extern") => perr(
                v.pos.0 as usize,
                format!(
                    "`.extern .shared {}` inside a function: ptxas rejects it; declare dynamic shared memory at module scope",
                    v.name
                ),
            ),
            model::Space::Shared => self.shared_var(v, false),
            model::Space::Global | model::Space::Const => self.global_var(v),
            // `.local` and `.param` (a call's argument buffers): per-thread local memory.
            _ => {
                let (name, size, align, _) = self.var_decl(v)?;
                let off = self.place_local_at(v.pos.0 as usize, align, size.max(1))?;
                self.declare(name, Name::Sym(SymRef::Local(off)));
                Ok(())
            }
        }
    }
}

/// Labels of nested `{ }` blocks are local to their block, as its registers are (PTX ISA 11.1: a block is a
/// scope; a branch names the innermost visible label). nvcc pastes an inline-asm block once per use, so one
/// function may hold several blocks that each define `LAB_WAIT:` and `DONE:` (CUTLASS's
/// `ClusterBarrier::wait`). Their labels are stored under a key unique to the block, and the operands of the
/// block's instructions are renamed to the keys of the labels they see; the function body's own labels keep
/// their names.
#[derive(Default)]
pub(super) struct BlockLabels {
    /// The open nested blocks, outermost first: each one's labels and their keys.
    open: Vec<HashMap<String, String>>,
    /// Blocks entered so far in this function (numbers the keys).
    count: u32,
}

impl BlockLabels {
    /// Opens a block whose statements are `stmts`: the labels it defines itself become visible.
    fn enter(&mut self, stmts: &[model::Stmt]) {
        self.count += 1;
        let own = stmts
            .iter()
            .filter_map(|s| match s {
                model::Stmt::Label(l) => {
                    Some((l.name.clone(), format!("{}\u{1}{}", l.name, self.count)))
                }
                _ => None,
            })
            .collect();
        self.open.push(own);
    }

    /// The key of a label defined in the innermost open block (its own name at function level).
    fn key(&self, name: &str) -> String {
        match self.open.last().and_then(|m| m.get(name)) {
            Some(k) => k.clone(),
            None => name.to_string(),
        }
    }

    /// Renames a name operand that is a label of an open block (innermost first) to its key.
    fn rename(&self, op: &mut RawOp) {
        match op {
            RawOp::Name(n) => {
                if let Some(k) = self.open.iter().rev().find_map(|m| m.get(n.as_str())) {
                    *n = k.clone();
                }
            }
            RawOp::Vec(v) | RawOp::List(v) => v.iter_mut().for_each(|o| self.rename(o)),
            _ => {}
        }
    }
}
