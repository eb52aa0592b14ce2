//! Declarations: `.reg`, `.global` / `.const` variables and their initializers, `.shared`, `.local`,
//! parameter lists; their placement in the state spaces.

use super::*;

impl Parser {
    /// Parses `[.align N] .type name[dims]` and returns (name, size, align, elem type). Consumes an
    /// initializer if present (returned separately by `global_var`).
    pub(super) fn var_decl(&mut self) -> Result<(String, usize, usize, PtxType), PtxError> {
        let mut align = 0usize;
        let mut ty = None;
        let mut vec = 1usize;
        loop {
            if self.is_ident(".align") {
                self.pos += 1;
                let a = self.number()?;
                if !(0..=MAX_ALIGN as i64).contains(&a) {
                    return perr(
                        self.line(),
                        format!(".align {a} is outside 0..={MAX_ALIGN}"),
                    );
                }
                align = a as usize;
            } else if self.is_ident(".v2") {
                self.pos += 1;
                vec = 2;
            } else if self.is_ident(".v4") {
                self.pos += 1;
                vec = 4;
            } else if let Some(Tok::Ident(s)) = self.peek() {
                if let Some(name) = s.strip_prefix('.') {
                    if let Some(t) = PtxType::from_name(name) {
                        ty = Some(t);
                    }
                    // other qualifiers (.ptr, .attribute...) ignored
                    self.pos += 1;
                } else {
                    break;
                }
            } else {
                break;
            }
        }
        let ty = ty.ok_or_else(|| PtxError {
            line: self.line(),
            message: "missing type in declaration".into(),
        })?;
        let name = self.ident()?;
        let mut count = vec;
        let mut unsized_ = false;
        while self.eat_p('[') {
            if self.eat_p(']') {
                unsized_ = true;
                continue;
            }
            let n = self.number()?;
            self.expect_p(']')?;
            // Checked before anything is allocated: `x[99999999999]` is an error, not an allocation.
            count = match u64::try_from(n).ok().and_then(|n| (count as u64).checked_mul(n)) {
                Some(c) if c.saturating_mul(ty.size() as u64) <= MAX_VARIABLE_BYTES => c as usize,
                _ => {
                    return perr(
                        self.line(),
                        format!("array {name}: dimension {n} makes it larger than {MAX_VARIABLE_BYTES} bytes (the emulator's limit for one variable) or is negative"),
                    )
                }
            };
        }
        let size = if unsized_ { 0 } else { count * ty.size() };
        if align == 0 {
            align = ty.size() * vec;
        }
        Ok((name, size, align, ty))
    }

    pub(super) fn global_var(&mut self, _line: usize) -> Result<(), PtxError> {
        let (name, mut size, align, ty) = self.var_decl()?;
        let mut init = Vec::new();
        if self.eat_p('=') {
            let mut vals = Vec::new();
            self.init_list(&mut vals)?;
            for v in vals {
                match v {
                    RawOp::Int(i) => init.extend_from_slice(&(i as u64).to_le_bytes()[..ty.size()]),
                    RawOp::F32Bits(b) => init.extend_from_slice(&b.to_le_bytes()),
                    RawOp::F64Bits(b) => init.extend_from_slice(&b.to_le_bytes()),
                    RawOp::Float(f) => {
                        if ty == PtxType::F64 {
                            init.extend_from_slice(&f.to_le_bytes())
                        } else {
                            init.extend_from_slice(&(f as f32).to_le_bytes())
                        }
                    }
                    _ => {
                        // address initializers (generic(sym)) are not supported: zero
                        init.extend_from_slice(&vec![0u8; ty.size()])
                    }
                }
            }
            if size == 0 {
                size = init.len();
            }
        }
        self.skip_to_semi();
        let total: u64 = self.globals.iter().map(|g| g.size as u64).sum::<u64>() + size as u64;
        if total > MAX_GLOBAL_VAR_BYTES || init.len() as u64 > MAX_GLOBAL_VAR_BYTES {
            return perr(
                self.line(),
                format!("module-scope .global/.const variables take more than {MAX_GLOBAL_VAR_BYTES} bytes (the emulator's limit) with {name}"),
            );
        }
        let idx = self.globals.len() as u32;
        self.globals.push(GlobalVar {
            name: name.clone(),
            size: size.max(1),
            align: align.max(1),
            init,
        });
        self.declare(name, Name::Sym(SymRef::Global(idx)));
        Ok(())
    }

    pub(super) fn init_list(&mut self, out: &mut Vec<RawOp>) -> Result<(), PtxError> {
        if self.eat_p('{') {
            loop {
                if self.eat_p('}') {
                    break;
                }
                self.init_list(out)?;
                self.eat_p(',');
            }
            Ok(())
        } else {
            let op = self.raw_operand()?;
            out.push(op);
            Ok(())
        }
    }

    pub(super) fn shared_var(&mut self, is_extern: bool) -> Result<(), PtxError> {
        let (name, size, align, _) = self.var_decl()?;
        self.skip_to_semi();
        if is_extern || size == 0 {
            self.dyn_smem = Some((name.clone(), align as u32));
            self.declare(name, Name::Sym(SymRef::DynShared));
        } else if self.scopes.is_empty() {
            let start = self.smem.max(self.smem_fn_max);
            let (off, end) = self.place(
                start,
                align,
                size,
                MAX_SHARED_DECL_BYTES,
                "static shared memory",
            )?;
            self.smem = end;
            self.declare(name, Name::Sym(SymRef::Shared(off)));
        } else {
            let (off, end) = self.place(
                self.smem_fn,
                align,
                size,
                MAX_SHARED_DECL_BYTES,
                "static shared memory",
            )?;
            self.smem_fn = end;
            self.declare(name, Name::Sym(SymRef::Shared(off)));
        }
        Ok(())
    }

    pub(super) fn param_list(
        &mut self,
        is_entry: bool,
    ) -> Result<(Vec<ParamDecl>, usize), PtxError> {
        let mut out = Vec::new();
        let mut off = 0usize;
        self.expect_p('(')?;
        loop {
            if self.eat_p(')') {
                break;
            }
            let kw = self.ident()?;
            if kw != ".param" && kw != ".reg" {
                return perr(self.line(), format!("expected .param, found {}", kw));
            }
            let is_reg = kw == ".reg";
            let (name, size, align, ty) = self.var_decl()?;
            let size = size.max(1);
            if is_reg {
                // register parameter of a .func: treat like a register
                let r = self.new_reg(&name, ty);
                let _ = r;
                out.push(ParamDecl {
                    name,
                    ty,
                    size,
                    align,
                    offset: usize::MAX,
                });
            } else {
                let o = if is_entry {
                    let (o, end) = self.place(
                        off as u32,
                        align,
                        size,
                        MAX_PARAM_BYTES,
                        "an entry's parameters",
                    )?;
                    off = end as usize;
                    self.declare(name.clone(), Name::Sym(SymRef::KParam(o)));
                    o as usize
                } else {
                    let o = self.place_local(align, size)?;
                    self.declare(name.clone(), Name::Sym(SymRef::Local(o)));
                    o as usize
                };
                out.push(ParamDecl {
                    name,
                    ty,
                    size,
                    align,
                    offset: o,
                });
            }
            self.eat_p(',');
        }
        Ok((out, off))
    }

    /// Offset and new end of a `size`-byte variable placed at `cur` with `align`, or an error when the end
    /// passes `limit` (checked before anything is allocated for it).
    pub(super) fn place(
        &self,
        cur: u32,
        align: usize,
        size: usize,
        limit: u64,
        what: &str,
    ) -> Result<(u32, u32), PtxError> {
        let off = align_up(cur, align as u32) as u64;
        let end = off + size as u64;
        if end > limit {
            return perr(
                self.line(),
                format!("{what} would take {end} bytes, more than the emulator's limit of {limit} bytes"),
            );
        }
        Ok((off as u32, end as u32))
    }

    /// Places a per-thread local variable (or device-function parameter); returns its offset.
    pub(super) fn place_local(&mut self, align: usize, size: usize) -> Result<u32, PtxError> {
        let (off, end) = self.place(
            self.local,
            align,
            size,
            MAX_LOCAL_BYTES,
            "local memory per thread",
        )?;
        self.local = end;
        Ok(off)
    }

    pub(super) fn new_reg(&mut self, name: &str, ty: PtxType) -> u32 {
        let r = self.nregs;
        self.nregs += 1;
        self.reg_names.push(name.to_string());
        self.declare(name.to_string(), Name::Reg(r, ty));
        r
    }
}
