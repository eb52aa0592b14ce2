//! Declarations: `.reg`, `.global` / `.const` variables and their initializers, `.shared`, `.local`,
//! parameter lists; their placement in the state spaces.

use super::*;
use prism_core::ptx as model;

/// The values of an initializer, braces flattened in order.
fn flatten_init<'a>(i: &'a model::Init, out: &mut Vec<&'a model::Init>) {
    match i {
        model::Init::List(l) => l.iter().for_each(|x| flatten_init(x, out)),
        v => out.push(v),
    }
}

impl Parser {
    /// A declaration's (name, size, align, element type), checked against the emulator's limits before
    /// anything is allocated.
    pub(super) fn var_decl(
        &mut self,
        v: &model::VarDecl,
    ) -> Result<(String, usize, usize, PtxType), PtxError> {
        let line = v.pos.0 as usize;
        let mut align = 0usize;
        if let Some(a) = v.align {
            if !(0..=MAX_ALIGN as i64).contains(&a) {
                return perr(line, format!(".align {a} is outside 0..={MAX_ALIGN}"));
            }
            align = a as usize;
        }
        let mut ty = None;
        let mut vec = 1usize;
        for q in &v.quals {
            match q.as_str() {
                ".v2" => vec = 2,
                ".v4" => vec = 4,
                // Other qualifiers (`.ptr`, `.attribute`, ...) carry nothing the emulator needs.
                _ => {
                    if let Some(t) = PtxType::from_name(&q[1..]) {
                        ty = Some(t);
                    }
                }
            }
        }
        let ty = ty.ok_or_else(|| PtxError {
            line,
            message: "missing type in declaration".into(),
        })?;
        let name = v.name.clone();
        let mut count = vec;
        let mut unsized_ = false;
        for d in &v.dims {
            let Some(n) = *d else {
                unsized_ = true;
                continue;
            };
            // Checked before anything is allocated: `x[99999999999]` is an error, not an allocation.
            count = match u64::try_from(n).ok().and_then(|n| (count as u64).checked_mul(n)) {
                Some(c) if c.saturating_mul(ty.size() as u64) <= MAX_VARIABLE_BYTES => c as usize,
                _ => {
                    return perr(
                        line,
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

    pub(super) fn global_var(&mut self, v: &model::VarDecl) -> Result<(), PtxError> {
        let (name, mut size, align, ty) = self.var_decl(v)?;
        let line = v.pos.0 as usize;
        let mut init = Vec::new();
        if let Some(i) = &v.init {
            let mut vals = Vec::new();
            flatten_init(i, &mut vals);
            let idx = self.globals.len() as u32;
            for v in vals {
                let v = match v {
                    model::Init::Value(v) => v,
                    model::Init::Addr(a) => {
                        // Written once every name of the module is known (`finish`).
                        self.pending_relocs
                            .push((idx, init.len(), ty.size(), a.clone(), line));
                        init.extend_from_slice(&vec![0u8; ty.size()]);
                        continue;
                    }
                    model::Init::List(_) => continue,
                };
                match v {
                    model::Operand::Int(i) => {
                        init.extend_from_slice(&(*i as u64).to_le_bytes()[..ty.size()])
                    }
                    model::Operand::F32Bits(b) => init.extend_from_slice(&b.to_le_bytes()),
                    model::Operand::F64Bits(b) => init.extend_from_slice(&b.to_le_bytes()),
                    model::Operand::Float(f) => {
                        if ty == PtxType::F64 {
                            init.extend_from_slice(&f.to_le_bytes())
                        } else {
                            init.extend_from_slice(&(*f as f32).to_le_bytes())
                        }
                    }
                    _ => {
                        return perr(
                            line,
                            format!("initializer of {name}: {v} is not a constant or an address"),
                        )
                    }
                }
                if init.len() as u64 > MAX_GLOBAL_VAR_BYTES {
                    break;
                }
            }
            if size == 0 {
                size = init.len();
            }
        }
        let total: u64 = self.globals.iter().map(|g| g.size as u64).sum::<u64>() + size as u64;
        if total > MAX_GLOBAL_VAR_BYTES || init.len() as u64 > MAX_GLOBAL_VAR_BYTES {
            return perr(
                line,
                format!("module-scope .global/.const variables take more than {MAX_GLOBAL_VAR_BYTES} bytes (the emulator's limit) with {name}"),
            );
        }
        let idx = self.globals.len() as u32;
        self.globals.push(GlobalVar {
            name: name.clone(),
            size: size.max(1),
            align: align.max(1),
            init,
            relocs: Vec::new(),
        });
        self.declare(name, Name::Sym(SymRef::Global(idx)));
        Ok(())
    }

    /// Resolves the address initializers once every variable and function of the module is declared.
    pub(super) fn resolve_relocs(&mut self) -> Result<(), PtxError> {
        for (g, at, size, a, line) in std::mem::take(&mut self.pending_relocs) {
            let target = match self.module_names.get(&a.name) {
                Some(Name::Sym(SymRef::Global(i))) => RelocTarget::Global(*i),
                _ => match self.funcs.iter().position(|f| f.name == a.name) {
                    Some(f) => RelocTarget::Func(f as u32),
                    None => {
                        return perr(
                            line,
                            format!(
                                "initializer of {}: {} is not a .global/.const variable or a function of the module",
                                self.globals[g as usize].name, a.name
                            ),
                        )
                    }
                },
            };
            let mask = match &a.mask {
                None => u64::MAX,
                Some(m) => match prism_core::ptx::parse_int(m) {
                    Some(m) if m != 0 => m as u64,
                    _ => return perr(line, format!("bad address mask {m}")),
                },
            };
            self.globals[g as usize].relocs.push(Reloc {
                at,
                size,
                target,
                offset: a.offset,
                mask,
            });
        }
        Ok(())
    }

    pub(super) fn shared_var(
        &mut self,
        v: &model::VarDecl,
        is_extern: bool,
    ) -> Result<(), PtxError> {
        let (name, size, align, _) = self.var_decl(v)?;
        let line = v.pos.0 as usize;
        if is_extern || size == 0 {
            self.dyn_smem = Some((name.clone(), align as u32));
            self.declare(name, Name::Sym(SymRef::DynShared));
        } else if self.scopes.is_empty() {
            let start = self.smem.max(self.smem_fn_max);
            let (off, end) = self.place(
                line,
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
                line,
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
        decls: &[model::VarDecl],
        is_entry: bool,
    ) -> Result<(Vec<ParamDecl>, usize), PtxError> {
        let mut out = Vec::new();
        let mut off = 0usize;
        for d in decls {
            let line = d.pos.0 as usize;
            let (name, size, align, ty) = self.var_decl(d)?;
            let size = size.max(1);
            if d.space == model::Space::Reg {
                // A register parameter of a .func: a register.
                self.new_reg(&name, ty);
                out.push(ParamDecl {
                    name,
                    ty,
                    size,
                    align,
                    offset: usize::MAX,
                });
                continue;
            }
            let o = if is_entry {
                let (o, end) = self.place(
                    line,
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
                let o = self.place_local_at(line, align, size)?;
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
        Ok((out, off))
    }

    /// Offset and new end of a `size`-byte variable placed at `cur` with `align`, or an error when the end
    /// passes `limit` (checked before anything is allocated for it).
    pub(super) fn place(
        &self,
        line: usize,
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
                line,
                format!("{what} would take {end} bytes, more than the emulator's limit of {limit} bytes"),
            );
        }
        Ok((off as u32, end as u32))
    }

    /// Places a per-thread local variable (or device-function parameter); returns its offset.
    pub(super) fn place_local_at(
        &mut self,
        line: usize,
        align: usize,
        size: usize,
    ) -> Result<u32, PtxError> {
        let (off, end) = self.place(
            line,
            self.local,
            align,
            size,
            MAX_LOCAL_BYTES,
            "local memory per thread",
        )?;
        self.local = end;
        Ok(off)
    }

    /// A new register named `name`; a `.b128` one takes two 64-bit slots, `r` (bits 0..64) and `r + 1`
    /// (bits 64..128), and its operands decode to the pair (`Operand::Vec`).
    pub(super) fn new_reg(&mut self, name: &str, ty: PtxType) -> u32 {
        let r = self.nregs;
        self.nregs += 1;
        self.reg_names.push(name.to_string());
        if ty == PtxType::B128 {
            self.nregs += 1;
            self.reg_names.push(format!("{name}.hi"));
        }
        self.declare(name.to_string(), Name::Reg(r, ty));
        r
    }
}
