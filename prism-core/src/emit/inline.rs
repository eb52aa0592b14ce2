//! Device functions, inlined at their calls (each synchronized once by the sync pass), and inline `asm!`.

use super::*;

/// An error inside device function `krate::name` of another crate, moved to its call in this crate: the
/// function's own spans can only point at the macro that carries its tokens (the caller's attribute).
fn at_foreign_call(mut d: Diagnostic, krate: &str, name: &str, call: Span) -> Diagnostic {
    d.span = call;
    d.message = format!("{} (in `{krate}::{name}`, called here)", d.message);
    d
}

impl Em {
    pub(super) fn call_device(
        &mut self,
        path: &[Ident],
        generics: &[Expr],
        args: &[Expr],
        span: Span,
    ) -> R<Value> {
        let name = path.last().map(|p| p.name.clone()).unwrap_or_default();
        let f = self.synced.get(&name).cloned().ok_or_else(|| {
            bug("UNKNOWN-FN", span, format!("unknown function `{name}`"))
                .help("device functions must be passed to the compiler as dependencies")
        })?;
        if self.depth >= MAX_INLINE_DEPTH {
            return Err(err(
                "EMIT-CALL",
                span,
                format!("device functions nest deeper than {MAX_INLINE_DEPTH} calls (recursion?)"),
            ));
        }
        if f.params.len() != args.len() || f.const_params.len() != generics.len() {
            return Err(bug(
                "TYPE",
                span,
                format!(
                    "`{name}` takes {} const argument(s) and {} argument(s)",
                    f.const_params.len(),
                    f.params.len()
                ),
            ));
        }
        // Bind in the caller's environment, then switch to the callee's.
        let mut scope = Scope::new();
        for (cp, g) in f.const_params.iter().zip(generics) {
            let v = self.const_i64(g)?;
            scope.insert(
                cp.name.name.clone(),
                Binding::Scalar {
                    val: Val::Imm(Imm::Int(v as i128), Some(cp.ty)),
                    persp: Perspective::grid(1),
                },
            );
        }
        let top = f
            .requires
            .first()
            .map(|p| p.perspective)
            .unwrap_or(self.ctx.persp);
        for (p, a) in f.params.iter().zip(args) {
            let persp = p.at.map(|x| x.perspective).unwrap_or(top);
            let b = self.arg_binding(p, a, persp)?;
            if let (
                Type::Shared {
                    elem,
                    len,
                    layout,
                    mutable,
                },
                Binding::Mem { view, .. },
            ) = (&p.ty, &b)
            {
                let konst = |n: &str| match scope.get(n) {
                    Some(Binding::Scalar {
                        val: Val::Imm(Imm::Int(v), _),
                        ..
                    }) => Some(*v as i64),
                    _ => None,
                };
                let want = crate::consteval::eval_const(len, &konst).map_err(|_| {
                    err(
                        "CALL-ARG",
                        p.span,
                        "the length of a `Shared` parameter must be a constant",
                    )
                })?;
                hopper::shared_param(view, (*elem, want, *layout, *mutable), &p.name.name, a.span)?;
            }
            scope.insert(p.name.name.clone(), b);
        }
        let saved_env = std::mem::replace(&mut self.env, vec![scope]);
        let caller_wgmma = self.wgmma_names_enter(&f.params, args);
        let saved_ctx = self.ctx.clone();
        let saved_loops = std::mem::take(&mut self.loops);
        let saved_target = self.id_target.take();
        self.depth += 1;
        let foreign_call = f.origin.is_some() && !self.in_foreign;
        self.in_foreign |= foreign_call;
        // The callee's own allocations start where the caller's callees go (they overlay each other).
        let saved_smem = (self.smem_next, self.smem_callee_base);
        self.smem_next = self.smem_callee_base;
        let r = self
            .own_smem(&f.body)
            .map(|own| self.smem_callee_base += own);
        // The callee runs at its top perspective; from a broader one it is replicated (rank mod size).
        let r = r
            .and_then(|_| self.group_into(top))
            .and_then(|_| self.block(&f.body));
        (self.smem_next, self.smem_callee_base) = saved_smem;
        self.depth -= 1;
        if foreign_call {
            self.in_foreign = false;
        }
        let r = r.map_err(|d| match (&f.origin, foreign_call) {
            (Some(krate), true) => at_foreign_call(d, krate, &name, span),
            _ => d,
        });
        self.env = saved_env;
        self.wgmma_names_leave(caller_wgmma, &f.params, args);
        self.ctx = saved_ctx;
        self.loops = saved_loops;
        self.id_target = saved_target;
        // Arrays returned by value must not alias registers the callee may reuse: copy them.
        match r? {
            Value::Arr(vals, t) => {
                let mut out = Vec::new();
                for v in vals {
                    let r = self.fresh(t);
                    self.mov_into(&r, &v, t);
                    out.push(Val::Reg(r, t));
                }
                Ok(Value::Arr(out, t))
            }
            v => Ok(v),
        }
    }

    /// The binding of device-function parameter `p` to the caller's argument `a`: a scalar is evaluated at
    /// the parameter's perspective into a fresh register, memory passes its view, `&array` aliases the
    /// caller's registers and an array by value is copied.
    fn arg_binding(&mut self, p: &Param, a: &Expr, persp: Perspective) -> R<Binding> {
        Ok(match &p.ty {
            Type::Scalar(t) => {
                let v = self.with_target(persp, |s| s.scalar_as(a, Some(*t)))?;
                let v = self.coerce(v, *t, a.span)?;
                let val = match v {
                    Val::Imm(..) => v,
                    v => {
                        let r = self.fresh(*t);
                        self.mov_into(&r, &v, *t);
                        Val::Reg(r, *t)
                    }
                };
                Binding::Scalar { val, persp }
            }
            Type::Ptr { .. } | Type::Shared { .. } => Binding::Mem {
                view: self.mem_arg(a)?,
                persp,
            },
            // The caller's ring: the callee's fills and drains use its slots and count among its sites.
            Type::Ring { .. } => match &a.kind {
                ExprKind::Var(id) => match self.lookup(id)? {
                    b @ Binding::Ring { .. } => b,
                    _ => return Err(bug("CALL-ARG", a.span, "expected a ring")),
                },
                _ => return Err(bug("CALL-ARG", a.span, "expected a ring by name")),
            },
            // The caller's map (a kernel parameter, possibly forwarded): boxes moved through it are recorded
            // on that parameter.
            Type::TensorMap { .. } => match &a.kind {
                ExprKind::Var(id) => match self.lookup(id)? {
                    b @ Binding::TensorMap { .. } => b,
                    _ => return Err(bug("CALL-ARG", a.span, "expected a tensor map")),
                },
                _ => return Err(bug("CALL-ARG", a.span, "expected a tensor map by name")),
            },
            Type::ArrayRef { elem, .. } => match self.expr(a)? {
                // `&mut a` aliases the caller's registers.
                Value::Arr(vals, _) => {
                    let regs = vals.iter().map(|v| self.reg(v, *elem)).collect();
                    Binding::Array {
                        regs,
                        elem: *elem,
                        persp: Perspective::thread(1),
                    }
                }
                _ => return Err(bug("CALL-ARG", a.span, "expected `&array` or `&mut array`")),
            },
            Type::Array { elem, .. } => match self.expr(a)? {
                Value::Arr(vals, _) => {
                    let mut regs = Vec::new();
                    for v in vals {
                        let v = self.coerce(v, *elem, a.span)?;
                        let r = self.fresh(*elem);
                        self.mov_into(&r, &v, *elem);
                        regs.push(r);
                    }
                    Binding::Array {
                        regs,
                        elem: *elem,
                        persp,
                    }
                }
                _ => return Err(bug("CALL-ARG", a.span, "expected an array")),
            },
        })
    }

    pub(super) fn asm(&mut self, template: &str, operands: &[AsmOperand], span: Span) -> R<()> {
        let mut regs: HashMap<String, String> = HashMap::new();
        let mut outs = Vec::new();
        for o in operands {
            // `&p[i]`: the address of an element of global or shared memory (the checker made sure the
            // operand type fits the space).
            if let (AsmDir::In, ExprKind::Ref { expr: inner, .. }) = (o.dir, &o.expr.kind) {
                if let ExprKind::Index { base, indices } = &inner.kind {
                    if let ExprKind::Var(id) = &base.kind {
                        if let Binding::Mem { view, .. } = self.lookup(id)? {
                            let idx = self.scalars(indices)?;
                            let addr = self.address(&view, idx, inner.span)?;
                            regs.insert(o.name.name.clone(), addr);
                            continue;
                        }
                    }
                }
            }
            let r = match o.dir {
                AsmDir::In | AsmDir::InOut => {
                    let v = self.scalar(&o.expr)?;
                    let v = self.coerce(v, o.ty, o.expr.span)?;
                    let r = self.fresh(o.ty);
                    self.mov_into(&r, &v, o.ty);
                    r
                }
                AsmDir::Out => self.fresh(o.ty),
            };
            if o.dir != AsmDir::In {
                outs.push((o.expr.clone(), r.clone(), o.ty));
            }
            regs.insert(o.name.name.clone(), r);
        }
        // Rust format-string rules: `{name}` is an operand, `{{` / `}}` are literal braces.
        let text = crate::ast::asm_expand(template, |n| regs.get(n).cloned()).map_err(|name| {
            bug(
                "ASM",
                span,
                format!("`{{{name}}}` names no operand of this `asm!`"),
            )
        })?;
        let stmts = crate::ptx::parse_stmts(&text).map_err(|e| {
            bug(
                "ASM",
                span,
                format!(
                    "the assembly is not PTX (its line {}): {}",
                    e.line, e.message
                ),
            )
        })?;
        self.stmts(stmts);
        for (place, r, t) in outs {
            self.assign_reg(&place, Val::Reg(r, t))?;
        }
        Ok(())
    }
}
