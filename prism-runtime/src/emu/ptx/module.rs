//! Module structure: the top-level directives, `.entry` / `.func` headers and bodies, and the
//! directives inside a body.

use super::*;

impl Parser {
    pub(super) fn module(&mut self) -> Result<(), PtxError> {
        while let Some(t) = self.peek().cloned() {
            let line = self.line();
            match t {
                Tok::Ident(s) => match s.as_str() {
                    ".version" | ".target" | ".address_size" | ".file" | ".loc" => {
                        self.skip_line(line)
                    }
                    ".section" => {
                        self.pos += 1;
                        while !self.is_p('{') && self.peek().is_some() {
                            self.pos += 1;
                        }
                        self.skip_braces()?;
                    }
                    ".pragma" => self.skip_to_semi(),
                    _ => self.module_decl()?,
                },
                Tok::P(';') => self.pos += 1,
                // `@@dwarf` debug lines (old toolchains with -g): ignored.
                Tok::P('@') => self.skip_line(line),
                other => {
                    return perr(
                        line,
                        format!("unexpected token at module level: {:?}", other),
                    )
                }
            }
        }
        Ok(())
    }

    pub(super) fn module_decl(&mut self) -> Result<(), PtxError> {
        let line = self.line();
        let mut is_extern = false;
        loop {
            if self.is_ident(".visible") || self.is_ident(".weak") || self.is_ident(".common") {
                self.pos += 1;
            } else if self.is_ident(".extern") {
                is_extern = true;
                self.pos += 1;
            } else {
                break;
            }
        }
        let kw = self.ident()?;
        match kw.as_str() {
            ".entry" => self.function(true, is_extern),
            ".func" => self.function(false, is_extern),
            // Texture/sampler/surface references: no texture unit here; an instruction that uses one faults.
            ".global" | ".const" if matches!(self.peek(), Some(Tok::Ident(t)) if matches!(t.as_str(), ".texref" | ".samplerref" | ".surfref")) =>
            {
                self.skip_to_semi();
                Ok(())
            }
            ".global" | ".const" => self.global_var(line),
            ".shared" => self.shared_var(is_extern),
            ".local" => {
                let (name, size, align, _) = self.var_decl()?;
                let off = self.place_local(align, size)?;
                self.declare(name, Name::Sym(SymRef::Local(off)));
                Ok(())
            }
            // Legacy texture declarations and `.alias f, g;` (not modelled): skipped, so a use is an unknown name.
            ".tex" | ".surf" | ".samplerref" | ".texref" | ".surfref" | ".alias" => {
                self.skip_to_semi();
                Ok(())
            }
            _ => perr(line, format!("unexpected module-level directive '{}'", kw)),
        }
    }

    pub(super) fn function(&mut self, is_entry: bool, is_extern: bool) -> Result<(), PtxError> {
        self.scopes.push(HashMap::new());
        self.scope_gen += 1;
        let mut rets = Vec::new();
        if !is_entry && self.is_p('(') {
            rets = self.param_list(false)?.0;
        }
        let name = self.ident()?;
        let mut params = Vec::new();
        let mut pbuf = 0;
        if self.is_p('(') {
            let (p, s) = self.param_list(is_entry)?;
            params = p;
            pbuf = s;
        }
        let mut reqntid = None;
        let mut maxntid = None;
        let mut maxnreg = None;
        let mut cluster = None;
        // performance directives
        while let Some(Tok::Ident(s)) = self.peek().cloned() {
            if !s.starts_with('.') {
                break;
            }
            self.pos += 1;
            if s == ".noreturn" {
                continue;
            }
            let mut dims = Vec::new();
            while let Some(Tok::Num(_)) = self.peek() {
                dims.push(self.number()? as u32);
                if !self.eat_p(',') {
                    break;
                }
            }
            let mut d = [1u32; 3];
            for (i, v) in dims.iter().take(3).enumerate() {
                d[i] = *v;
            }
            if s == ".reqntid" {
                reqntid = Some(d);
            } else if s == ".maxntid" {
                maxntid = Some(d);
            } else if s == ".maxnreg" {
                maxnreg = dims.first().copied();
            } else if s == ".reqnctapercluster" {
                cluster = Some(d);
            }
        }
        // Register the function name at module level (for calls, possibly before definition).
        let existing = self.funcs.iter().position(|f| f.name == name);
        let fidx = match existing {
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
                });
                self.funcs.len() - 1
            }
        };
        if self.eat_p(';') || is_extern && !self.is_p('{') {
            self.scopes.pop();
            self.scope_gen += 1;
            return Ok(());
        }
        {
            let f = &mut self.funcs[fidx];
            if f.defined {
                return perr(self.line(), format!("function {} defined twice", name));
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
        self.expect_p('{')?;
        self.body()?;
        self.funcs[fidx].end = self.code.len() as u32;
        // implicit return at the end of a body
        let line = self
            .toks
            .get(self.pos.saturating_sub(1))
            .map(|t| t.line)
            .unwrap_or(0);
        self.code.push(Instr {
            kind: Kind::Ret,
            guard: None,
            args: vec![],
            line: line as u32,
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

    pub(super) fn body(&mut self) -> Result<(), PtxError> {
        // Labels of this function
        let mut labels: HashMap<String, u32> = HashMap::new();
        let fn_start_pending = self.pending.len();
        self.push_scope();
        let mut depth = 1;
        loop {
            let line = self.line();
            let t = match self.peek().cloned() {
                Some(t) => t,
                None => return perr(line, "unterminated function body"),
            };
            match t {
                Tok::P('{') => {
                    self.pos += 1;
                    depth += 1;
                    self.push_scope();
                }
                Tok::P('}') => {
                    self.pos += 1;
                    self.scopes.pop();
                    self.scope_gen += 1;
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Tok::P(';') => self.pos += 1,
                Tok::Ident(s)
                    if matches!(self.peek_at(1), Some(Tok::P(':'))) && !s.starts_with('.') =>
                {
                    self.pos += 2;
                    labels.insert(s, self.code.len() as u32);
                }
                Tok::Ident(s) if s.starts_with('.') => self.body_directive(&s, line)?,
                _ => self.instruction()?,
            }
        }
        // resolve pending instructions (labels now known)
        let pend: Vec<(usize, PendingInstr)> = self.pending.drain(fn_start_pending..).collect();
        for (idx, p) in pend {
            let ins = self.decode(&p, &labels)?;
            self.code[idx] = ins;
        }
        Ok(())
    }

    pub(super) fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
        self.scope_gen += 1;
    }

    pub(super) fn body_directive(&mut self, s: &str, line: usize) -> Result<(), PtxError> {
        match s {
            ".loc" | ".file" => {
                self.skip_line(line);
            }
            ".pragma" => self.skip_to_semi(),
            ".reg" => {
                self.pos += 1;
                let mut ty = None;
                let mut vec = 1;
                while let Some(Tok::Ident(x)) = self.peek().cloned() {
                    if !x.starts_with('.') {
                        break;
                    }
                    self.pos += 1;
                    if x == ".v2" {
                        vec = 2;
                    } else if x == ".v4" {
                        vec = 4;
                    } else if let Some(t) = PtxType::from_name(&x[1..]) {
                        ty = Some(t);
                    }
                }
                let _ = vec;
                let ty = ty.ok_or_else(|| PtxError {
                    line,
                    message: "missing register type".into(),
                })?;
                loop {
                    let name = self.ident()?;
                    if self.eat_p('<') {
                        let n = self.number()?;
                        self.expect_p('>')?;
                        // Checked before the loop: `%r<99999999>` is an error, not minutes of allocation.
                        if n > (MAX_REGISTERS - self.nregs.min(MAX_REGISTERS)) as i64 {
                            return perr(
                                line,
                                format!("{name}<{n}> takes the module past {MAX_REGISTERS} registers (the emulator's limit)"),
                            );
                        }
                        for i in 0..n {
                            self.new_reg(&format!("{}{}", name, i), ty);
                        }
                    } else if self.nregs >= MAX_REGISTERS {
                        return perr(line, format!("{name} takes the module past {MAX_REGISTERS} registers (the emulator's limit)"));
                    } else {
                        self.new_reg(&name, ty);
                    }
                    if !self.eat_p(',') {
                        break;
                    }
                }
                self.skip_to_semi();
            }
            ".local" | ".param" => {
                self.pos += 1;
                let (name, size, align, _) = self.var_decl()?;
                self.skip_to_semi();
                let off = self.place_local(align, size.max(1))?;
                self.declare(name, Name::Sym(SymRef::Local(off)));
            }
            ".shared" => {
                self.pos += 1;
                self.shared_var(false)?;
            }
            ".extern" => {
                self.pos += 1;
                let kw = self.ident()?;
                if kw == ".shared" {
                    self.shared_var(true)?;
                } else {
                    self.skip_to_semi();
                }
            }
            ".global" | ".const" => {
                self.pos += 1;
                self.global_var(line)?;
            }
            _ => {
                // unknown directive inside a body: skip the statement
                self.skip_to_semi();
            }
        }
        Ok(())
    }
}
