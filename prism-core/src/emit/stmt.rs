//! Statements: blocks, `let`, assignment, `if`/`while`, and the scoped statements that rebind memory.

use super::expr::mentions;
use super::*;

impl Em {
    pub(super) fn block(&mut self, b: &Block) -> R<Value> {
        self.env.push(Scope::new());
        let r = self.block_inner(b);
        self.env.pop();
        r
    }

    pub(super) fn block_inner(&mut self, b: &Block) -> R<Value> {
        for s in &b.stmts {
            self.stmt(s)?;
        }
        match &b.tail {
            Some(t) => {
                let saved = self.id_target.take();
                let v = self.expr(t);
                self.id_target = saved;
                v
            }
            None => Ok(Value::Unit),
        }
    }

    pub(super) fn with_target<T>(
        &mut self,
        p: Perspective,
        f: impl FnOnce(&mut Self) -> R<T>,
    ) -> R<T> {
        let saved = self.id_target.replace(p);
        let r = f(self);
        self.id_target = saved;
        r
    }

    pub(super) fn stmt(&mut self, s: &Stmt) -> R<()> {
        self.retire_wgmmas_before(s);
        match &s.kind {
            StmtKind::Let {
                name,
                mutable,
                ty,
                at,
                init,
            } => self.let_stmt(name, *mutable, ty.as_ref(), *at, init.as_ref(), s.span),
            StmtKind::Assign { place, op, value } => self.assign(place, *op, value),
            StmtKind::Expr(e) => {
                let saved = self.id_target.take();
                let r = self.expr(e).map(|_| ());
                self.id_target = saved;
                r
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => self.if_stmt(cond, then_block, else_block.as_ref()),
            StmtKind::While { cond, body } => self.while_stmt(cond, body),
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => self.for_stmt(var, start, end, step.as_ref(), body, s.span),
            StmtKind::Break | StmtKind::Continue => self.loop_jump(s),
            StmtKind::Group { at, body } => {
                let saved = self.ctx.clone();
                self.group_into(at.perspective)?;
                let r = self.block(body);
                self.ctx = saved;
                r.map(|_| ())
            }
            StmtKind::Split { level, arms, .. } => self.split(*level, arms, s.span),
            StmtKind::Partition {
                target,
                at,
                index,
                new_name,
                body,
            } => self.partition(target, at.perspective, index, new_name, body),
            StmtKind::Claim {
                target,
                at,
                new_name,
                body,
            } => {
                let (view, _) = self.mem_binding(target)?;
                self.scope_with(
                    target,
                    new_name,
                    Binding::Mem {
                        view,
                        persp: at.perspective,
                    },
                    body,
                )
            }
            StmtKind::Async {
                target,
                new_name,
                body,
            } => self.async_scope(target, new_name, body),
            StmtKind::Unsafe { body } => self.block(body).map(|_| ()),
            StmtKind::Ring {
                stages,
                targets,
                name,
                body,
            } => self.ring(stages, targets, name, body, s.span),
            StmtKind::RingUse {
                op: RingOp::Turn,
                ring,
                index,
                body,
                ..
            } => self.turn(ring, index, body, s.span),
            StmtKind::RingUse {
                op,
                ring,
                index,
                names,
                body,
            } => self.ring_use(*op == RingOp::Fill, ring, index, names, body, s.span),
            StmtKind::Peer {
                target,
                rank,
                new_name,
                body,
            } => self.peer(target, rank, new_name, body),
            StmtKind::Barrier(b) => self.barrier(*b, s.span),
        }
    }

    /// Waits for the wgmmas in flight before a statement that may touch their registers.
    fn retire_wgmmas_before(&mut self, s: &Stmt) {
        // A drain may start while the previous drain's wgmmas are in flight (it only issues more into the
        // same accumulators): every other statement could touch them, so it waits.
        let drain = matches!(
            &s.kind,
            StmtKind::RingUse {
                op: RingOp::Drain,
                ..
            }
        );
        let keeps_group = drain && !self.wgmma_open;
        // A simple statement that names no accumulator or operand of the wgmmas in flight runs while they do
        // (the wait goes as late as the dependences allow); compound statements branch, so they wait.
        let independent = matches!(
            &s.kind,
            StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Expr(_)
        ) && !self.wgmma_names.iter().any(|n| stmt_mentions(s, n));
        if !is_wgmma_stmt(s) && !keeps_group && !independent {
            self.wgmma_retire();
        }
    }

    /// `break` / `continue`: a jump to the innermost loop's exit or head.
    fn loop_jump(&mut self, s: &Stmt) -> R<()> {
        let l = self
            .loops
            .last()
            .ok_or_else(|| bug("LOOP", s.span, "`break`/`continue` outside a loop"))?;
        let target = if matches!(s.kind, StmtKind::Break) {
            l.brk.clone()
        } else {
            l.cont.clone()
        };
        self.line(format!("bra.uni {target};"));
        Ok(())
    }

    /// `partition(x, at, |i| .., |x_unit| body)`: the body sees `x` through one more index map.
    fn partition(
        &mut self,
        target: &Ident,
        at: Perspective,
        index: &IndexFn,
        new_name: &Ident,
        body: &Block,
    ) -> R<()> {
        let (mut view, _) = self.mem_binding(target)?;
        view.maps.push(Rc::new(IndexMap {
            params: index.params.iter().map(|p| p.name.clone()).collect(),
            body: (*index.body).clone(),
            env: self.capture(),
        }));
        self.scope_with(target, new_name, Binding::Mem { view, persp: at }, body)
    }

    /// `async_(x, |x_async| body)`: the body may start asynchronous copies into `x`.
    fn async_scope(&mut self, target: &Ident, new_name: &Ident, body: &Block) -> R<()> {
        let (view, persp) = self.mem_binding(target)?;
        self.async_scopes.push(AsyncScope {
            name: new_name.name.clone(),
            bulk_ok: view.space == Space::Shared && persp == Perspective::block(1),
            mbar: None,
        });
        let r = self.scope_with(target, new_name, Binding::Mem { view, persp }, body);
        self.async_scopes.pop();
        r
    }

    /// `while`: the condition is tested at the head; `continue` jumps to it, `break` past the loop.
    fn while_stmt(&mut self, cond: &Expr, body: &Block) -> R<()> {
        let uni = self.uniform(cond);
        let head = self.label();
        let end = self.label();
        self.put_label(&head);
        let c = self.scalar(cond)?;
        let c = self.coerce(c, ScalarType::Bool, cond.span)?;
        match c {
            Val::Imm(Imm::Bool(false), _) => {}
            Val::Imm(..) => {}
            _ => {
                let p = self.reg(&c, ScalarType::Bool);
                let bra = if uni { "bra.uni" } else { "bra" };
                self.line(format!("@!{p} {bra} {end};"));
            }
        }
        if !matches!(c, Val::Imm(Imm::Bool(false), _)) {
            self.loops.push(LoopLabels {
                cont: head.clone(),
                brk: end.clone(),
            });
            let r = self.loop_body(body);
            self.loops.pop();
            r?;
            self.line(format!("bra.uni {head};"));
        }
        self.put_label(&end);
        Ok(())
    }

    /// `if`: a constant condition emits only the taken side; a uniform one branches with `bra.uni`.
    fn if_stmt(&mut self, cond: &Expr, then_block: &Block, else_block: Option<&Block>) -> R<()> {
        let uni = self.uniform(cond);
        let c = self.scalar(cond)?;
        let c = self.coerce(c, ScalarType::Bool, cond.span)?;
        if let Val::Imm(Imm::Bool(b), _) = c {
            // Constant condition (e.g. on a const generic): only the taken side is emitted.
            if b {
                self.block(then_block)?;
            } else if let Some(e) = else_block {
                self.block(e)?;
            }
            return Ok(());
        }
        let p = self.reg(&c, ScalarType::Bool);
        let else_l = self.label();
        let bra = if uni { "bra.uni" } else { "bra" };
        self.line(format!("@!{p} {bra} {else_l};"));
        self.block(then_block)?;
        if let Some(e) = else_block {
            let end = self.label();
            self.line(format!("bra.uni {end};"));
            self.put_label(&else_l);
            self.block(e)?;
            self.put_label(&end);
        } else {
            self.put_label(&else_l);
        }
        Ok(())
    }

    pub(super) fn let_stmt(
        &mut self,
        name: &Ident,
        mutable: bool,
        ty: Option<&Type>,
        at: Option<SpannedPerspective>,
        init: Option<&Expr>,
        span: Span,
    ) -> R<()> {
        let persp = at.map(|a| a.perspective).unwrap_or(self.ctx.persp);
        if let Some(Type::Shared {
            elem, len, layout, ..
        }) = ty
        {
            let n = self.const_u32(len)?;
            let bytes = n
                .checked_mul(elem.size())
                .ok_or_else(|| bug("SMEM-LIMIT", span, "shared allocation too large"))?;
            let off = layout.place(self.smem_next as u64);
            let off = u32::try_from(off)
                .map_err(|_| bug("SMEM-LIMIT", span, "shared allocation too large"))?;
            self.smem_align = self.smem_align.max(layout.align());
            self.smem_next = off
                .checked_add(bytes)
                .ok_or_else(|| bug("SMEM-LIMIT", span, "shared allocation too large"))?;
            self.smem_top = self.smem_top.max(self.smem_next);
            let view = View {
                space: Space::Shared,
                base: Val::imm_u32(off),
                elem: *elem,
                readonly: false,
                maps: Vec::new(),
                layout: *layout,
                len: n,
                peer: None,
            };
            self.bind(
                &name.name,
                Binding::Mem {
                    view,
                    persp: Perspective::block(1),
                },
            );
            return Ok(());
        }
        let declared: Option<(ScalarType, Option<u32>)> = match ty {
            Some(Type::Scalar(t)) => Some((*t, None)),
            Some(Type::Array { elem, len }) => Some((*elem, Some(self.const_u32(len)?))),
            Some(Type::ArrayRef { .. }) | Some(Type::Ptr { .. }) => None,
            Some(Type::Shared { .. }) | Some(Type::TensorMap { .. }) | Some(Type::Ring { .. }) => {
                None
            }
            None => None,
        };
        let value = match (init, declared) {
            (Some(e), Some((t, None))) => {
                Some(self.with_target(persp, |s| s.scalar_as(e, Some(t)).map(Value::S))?)
            }
            (Some(e), _) => Some(self.with_target(persp, |s| s.expr(e))?),
            (None, _) => None,
        };
        match value {
            None => match declared {
                Some((t, None)) => {
                    let r = self.fresh(t);
                    self.bind(
                        &name.name,
                        Binding::Scalar {
                            val: Val::Reg(r, t),
                            persp,
                        },
                    );
                }
                Some((t, Some(n))) => {
                    let regs = (0..n).map(|_| self.fresh(t)).collect();
                    self.bind(
                        &name.name,
                        Binding::Array {
                            regs,
                            elem: t,
                            persp,
                        },
                    );
                }
                None => {
                    return Err(bug(
                        "TYPE",
                        span,
                        format!("`{}` needs a type or an initializer", name.name),
                    ))
                }
            },
            Some(Value::S(v)) => {
                let t = match declared {
                    Some((t, None)) => t,
                    // An untyped literal: the checker's defaults (f32, i32).
                    _ => v.ty_or_default(),
                };
                let v = self.coerce(v, t, span)?;
                let val = if !mutable && matches!(v, Val::Imm(..)) {
                    v
                } else {
                    let r = self.fresh(t);
                    self.mov_into(&r, &v, t);
                    Val::Reg(r, t)
                };
                self.bind(&name.name, Binding::Scalar { val, persp });
            }
            Some(Value::Arr(vals, et)) => {
                let t = match declared {
                    Some((t, _)) => t,
                    None => et,
                };
                let mut regs = Vec::with_capacity(vals.len());
                for v in vals {
                    let v = self.coerce(v, t, span)?;
                    let r = self.fresh(t);
                    self.mov_into(&r, &v, t);
                    regs.push(r);
                }
                self.bind(
                    &name.name,
                    Binding::Array {
                        regs,
                        elem: t,
                        persp,
                    },
                );
            }
            Some(Value::Mem(view)) => self.bind(&name.name, Binding::Mem { view, persp }),
            Some(Value::Unit) => return Err(bug("TYPE", span, "this expression has no value")),
        }
        Ok(())
    }

    pub(super) fn assign(&mut self, place: &Expr, op: Option<BinOp>, value: &Expr) -> R<()> {
        match &place.kind {
            ExprKind::Var(id) => match self.lookup(id)? {
                Binding::Scalar {
                    val: Val::Reg(r, t),
                    persp,
                } => {
                    let v = self.with_target(persp, |s| s.scalar_as(value, Some(t)))?;
                    let v = match op {
                        Some(op) => self.binop(op, Val::Reg(r.clone(), t), v, place.span)?,
                        None => v,
                    };
                    let v = self.coerce(v, t, value.span)?;
                    self.mov_into(&r, &v, t);
                    Ok(())
                }
                Binding::Array { regs, elem, persp } if op.is_none() => {
                    match self.with_target(persp, |s| s.expr(value))? {
                        Value::Arr(vals, _) if vals.len() == regs.len() => {
                            for (r, v) in regs.iter().zip(vals) {
                                let v = self.coerce(v, elem, value.span)?;
                                self.mov_into(r, &v, elem);
                            }
                            Ok(())
                        }
                        _ => Err(bug(
                            "TYPE",
                            value.span,
                            format!("expected an array of {} elements", regs.len()),
                        )),
                    }
                }
                _ => Err(
                    bug("MUT", place.span, format!("cannot assign to `{}`", id.name))
                        .help("declare it with `let mut`"),
                ),
            },
            ExprKind::Index { base, indices } => {
                let id = match &base.kind {
                    ExprKind::Var(id) => id,
                    _ => return Err(bug("TYPE", place.span, "only `name[i]` can be assigned")),
                };
                match self.lookup(id)? {
                    Binding::Array { regs, elem, persp } => {
                        let i = self.reg_index(id, &regs, indices, place.span)?;
                        let v = self.with_target(persp, |s| s.scalar_as(value, Some(elem)))?;
                        let v = match op {
                            Some(op) => {
                                self.binop(op, Val::Reg(regs[i].clone(), elem), v, place.span)?
                            }
                            None => v,
                        };
                        let v = self.coerce(v, elem, value.span)?;
                        self.mov_into(&regs[i], &v, elem);
                        Ok(())
                    }
                    Binding::Mem { view, persp } => {
                        let idx = self.scalars(indices)?;
                        let addr = self.address(&view, idx, place.span)?;
                        let v = self.with_target(persp, |s| s.scalar_as(value, Some(view.elem)))?;
                        let v = match op {
                            Some(op) => {
                                let cur = self.load(&view, &addr, None);
                                self.binop(op, cur, v, place.span)?
                            }
                            None => v,
                        };
                        let v = self.coerce(v, view.elem, value.span)?;
                        self.store(&view, &addr, &[v]);
                        Ok(())
                    }
                    _ => Err(bug(
                        "TYPE",
                        place.span,
                        format!("`{}` cannot be indexed", id.name),
                    )),
                }
            }
            _ => Err(bug("SYNTAX", place.span, "this place cannot be assigned")),
        }
    }

    /// Assigns an already computed value to a place (asm outputs).
    pub(super) fn assign_reg(&mut self, place: &Expr, v: Val) -> R<()> {
        match &place.kind {
            ExprKind::Var(id) => match self.lookup(id)? {
                Binding::Scalar {
                    val: Val::Reg(r, t),
                    ..
                } => {
                    let v = self.coerce(v, t, place.span)?;
                    self.mov_into(&r, &v, t);
                    Ok(())
                }
                _ => Err(bug(
                    "TYPE",
                    place.span,
                    "an `out` operand must be a mutable variable or element",
                )),
            },
            ExprKind::Index { base, indices } => {
                let id = match &base.kind {
                    ExprKind::Var(id) => id,
                    _ => return Err(bug("TYPE", place.span, "unsupported `out` place")),
                };
                match self.lookup(id)? {
                    Binding::Array { regs, elem, .. } => {
                        let i = self.reg_index(id, &regs, indices, place.span)?;
                        let v = self.coerce(v, elem, place.span)?;
                        self.mov_into(&regs[i], &v, elem);
                        Ok(())
                    }
                    Binding::Mem { view, .. } => {
                        let idx = self.scalars(indices)?;
                        let addr = self.address(&view, idx, place.span)?;
                        let v = self.coerce(v, view.elem, place.span)?;
                        self.store(&view, &addr, &[v]);
                        Ok(())
                    }
                    _ => Err(bug("TYPE", place.span, "unsupported `out` place")),
                }
            }
            _ => Err(bug("TYPE", place.span, "unsupported `out` place")),
        }
    }
}

/// A simple statement (`let`, assignment, expression) that names `var`.
pub(super) fn stmt_mentions(s: &Stmt, var: &str) -> bool {
    match &s.kind {
        StmtKind::Let { name, init, .. } => {
            name.name == var || init.as_ref().is_some_and(|e| mentions(e, var))
        }
        StmtKind::Assign { place, value, .. } => mentions(place, var) || mentions(value, var),
        StmtKind::Expr(e) => mentions(e, var),
        _ => true,
    }
}

/// A statement that is a call of a wgmma intrinsic (or of a device function named `wgmma_..`), or a `for`
/// loop of nothing else: consecutive ones form one run (one commit group). A loop that the emitter does not
/// unroll still ends the run at its branch (`ends_wgmma_run`).
pub(super) fn is_wgmma_stmt(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Expr(Expr {
            kind: ExprKind::Call { path, .. },
            ..
        }) => path.last().is_some_and(|p| p.name.starts_with("wgmma_")),
        StmtKind::For { body, .. } => {
            !body.stmts.is_empty() && body.stmts.iter().all(is_wgmma_stmt)
        }
        _ => false,
    }
}
