//! Statements: blocks, declarations (T-DECL, shared allocations), assignment (T-ASSN), loops and conditions.

use super::*;

impl<'a> Cx<'a> {
    pub(super) fn block(&mut self, b: &Block, code: Perspective) {
        let mark = self.vars.len();
        for s in &b.stmts {
            self.stmt(s, code);
        }
        // A nested block's tail (`{ ..; x }`) is evaluated and dropped, like an expression statement: the
        // emitter lowers it, so it passes the same rules. The function body's own tail is its value
        // (`run`, which does not come through here).
        if let Some(t) = &b.tail {
            let sink = Sink {
                p: code,
                rule: "READ-UP",
                what: format!("code at {code}"),
                id_target: None,
            };
            self.expr(t, &sink, code);
        }
        self.vars.truncate(mark);
    }

    /// A closure-like body (group/split arm/partition/..): fresh loop context, new scope.
    pub(super) fn body(&mut self, b: &Block, code: Perspective) {
        let saved = self.loop_depth;
        self.loop_depth = 0;
        self.block(b, code);
        self.loop_depth = saved;
    }

    pub(super) fn stmt(&mut self, s: &Stmt, code: Perspective) {
        match &s.kind {
            StmtKind::Let {
                name,
                mutable,
                ty,
                at,
                init,
            } => self.t_decl(s, name, *mutable, ty.as_ref(), *at, init.as_ref(), code),
            StmtKind::Assign { place, op, value } => self.t_assn(place, *op, value, code),
            StmtKind::Expr(e) => {
                let sink = Sink {
                    p: code,
                    rule: "READ-UP",
                    what: format!("code at {code}"),
                    id_target: None,
                };
                self.expr(e, &sink, code);
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.condition(cond, code, "the `if` condition");
                let c = self.cond_perspective(cond);
                // An arm a constant condition never takes (`if N > 1` with N = 1) writes nothing: not
                // judged as a write every unit makes (T-PARTITION).
                let known = self.const_bool(cond);
                let id = self.next_if;
                self.next_if += 1;
                for (arm, block) in [(0u8, Some(then_block)), (1, else_block.as_ref())] {
                    let Some(block) = block else { continue };
                    let dead = known.is_some_and(|k| k != (arm == 0));
                    self.conds.push(if dead { None } else { c });
                    self.if_arms.push((id, arm, self.loop_depth));
                    self.block(block, code);
                    self.if_arms.pop();
                    self.conds.pop();
                }
            }
            StmtKind::While { cond, body } => {
                self.condition(cond, code, "the `while` condition");
                // A body a constant `false` never runs writes nothing (T-PARTITION), as a dead `if` arm.
                let never = self.const_bool(cond) == Some(false);
                let c = self
                    .cond_perspective(cond)
                    .filter(|_| !never && !leaves_early(body));
                self.conds.push(c);
                self.loop_depth += 1;
                self.block(body, code);
                self.loop_depth -= 1;
                self.conds.pop();
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                // `step_by(0)` panics in Rust; a constant step must be positive.
                if let Some(st) = step {
                    if let Ok(v) = self.eval(st) {
                        if v <= 0 {
                            self.errors.push(
                                err(
                                    "LOOP",
                                    st.span,
                                    format!("`step_by({v})`: the step of a loop must be positive"),
                                )
                                .help("Rust's `step_by` panics on 0; use a step of 1 or more"),
                            );
                        }
                    }
                }
                self.t_for(var, start, end, step.as_ref(), body, code)
            }
            StmtKind::Break | StmtKind::Continue => {
                if self.loop_depth == 0 {
                    let what = if matches!(s.kind, StmtKind::Break) {
                        "break"
                    } else {
                        "continue"
                    };
                    self.errors.push(
                        err("LOOP", s.span, format!("`{what}` outside of a loop of this body"))
                            .help("a `group`, split arm, partition, claim or `async_` body is a closure: `break`/`continue` cannot leave it, even to a loop around it"),
                    );
                }
            }
            StmtKind::Group { at, body } => self.t_group(at, body, code),
            StmtKind::Split { level, unit, arms } => {
                self.t_split(s.span, *level, *unit, arms, code)
            }
            StmtKind::Partition {
                target,
                at,
                index,
                new_name,
                body,
            } => self.t_partition(s.span, target, at, index, new_name, body, code),
            StmtKind::Claim {
                target,
                at,
                new_name,
                body,
            } => self.t_claim(s.span, target, at, new_name, body, code),
            StmtKind::Async {
                target,
                new_name,
                body,
            } => self.t_async(s.span, target, new_name, body, code),
            StmtKind::Unsafe { body } => {
                self.unsafe_wrap(s.span);
                self.unsafe_depth += 1;
                self.block(body, code);
                self.unsafe_depth -= 1;
            }
            StmtKind::Barrier(_) => {}
            StmtKind::Ring {
                stages,
                targets,
                name,
                body,
            } => self.t_ring(s.span, stages, targets, name, body, code),
            StmtKind::RingUse {
                op: RingOp::Turn,
                ring,
                index,
                body,
                ..
            } => self.t_turn(ring, index, body, code),
            StmtKind::RingUse {
                op,
                ring,
                index,
                names,
                body,
            } => self.t_ring_use(*op == RingOp::Fill, ring, index, names, body, code),
            StmtKind::Peer {
                target,
                rank,
                new_name,
                body,
            } => self.t_peer(s.span, target, rank, new_name, body, code),
        }
    }

    /// [UNSAFE-WRAP] `unsafe` only in `#[prism_device]` functions, which declare the perspective signature.
    pub(super) fn unsafe_wrap(&mut self, span: Span) {
        if self.f.kind != FnKind::Device {
            self.errors.push(
                err("UNSAFE-WRAP", span, format!("`unsafe` in kernel `{}`: inline assembly must be wrapped in a device function", self.f.name))
                    .help("move the `unsafe { asm!(..) }` into a `#[prism_device(requires(..))]` function and call it"),
            );
        }
    }

    /// [READ-UP] for branch and loop conditions (Fig. 11).
    pub(super) fn condition(&mut self, cond: &Expr, code: Perspective, what: &str) {
        let sink = Sink {
            p: code,
            rule: "READ-UP",
            what: format!("{what} at code perspective {code}"),
            id_target: None,
        };
        let ty = self.expr(cond, &sink, code);
        self.expect_ty(&ty, &Ty::Scalar(ScalarType::Bool), cond.span, what);
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn t_decl(
        &mut self,
        s: &Stmt,
        name: &Ident,
        mutable: bool,
        ty: Option<&Type>,
        at: Option<SpannedPerspective>,
        init: Option<&Expr>,
        code: Perspective,
    ) {
        // Shared allocations: T-ALLOC-SHARED.
        if let Some(Type::Shared {
            elem, len, layout, ..
        }) = ty
        {
            self.t_alloc_shared(s, name, (*elem, *layout), len, at, init, code);
            return;
        }
        let p = at.map(|a| a.perspective).unwrap_or(code);
        if let Some(a) = at {
            if !self.le(a.perspective, code) {
                self.errors.push(
                    err(
                        "T-DECL",
                        a.span,
                        format!("`{}` is declared at {} but the code is at {code}: a variable cannot be broader than the code that declares it", name, a.perspective),
                    )
                    .help(format!("declare it at {code} or narrower, or declare it in broader code")),
                );
            }
        }
        let declared = ty.map(|t| match t {
            Type::Scalar(s) => Ty::Scalar(*s),
            Type::Array { elem, len } => Ty::Array {
                elem: *elem,
                len: self.eval_opt(len, "an array length"),
            },
            _ => Ty::Err,
        });
        let init_ty = init.map(|e| {
            let sink = Sink {
                p,
                rule: "WRITE-DOWN",
                what: format!("`{}` ({p})", name.name),
                id_target: Some(p),
            };
            self.expr(e, &sink, code)
        });
        let final_ty = match (declared, init_ty) {
            (Some(d), Some(i)) => {
                if let Some(e) = init {
                    self.expect_ty(&i, &d, e.span, &format!("`{}`", name.name));
                }
                d
            }
            (Some(d), None) => d,
            (None, Some(i)) => match i {
                Ty::IntLit => Ty::Scalar(ScalarType::I32),
                Ty::FloatLit => Ty::Scalar(ScalarType::F32),
                Ty::Unit => {
                    self.errors.push(err(
                        "TYPE",
                        s.span,
                        format!("`{}` is bound to a call that returns nothing", name.name),
                    ));
                    Ty::Err
                }
                Ty::Ptr { .. } => {
                    self.errors.push(
                        err("TYPE", s.span, "pointers cannot be copied into variables").help(
                            "use the pointer directly, or narrow it with `partition`/`claim`",
                        ),
                    );
                    Ty::Err
                }
                t => t,
            },
            (None, None) => {
                self.errors.push(
                    err(
                        "TYPE",
                        name.span,
                        format!("`{}` needs a type or an initializer", name.name),
                    )
                    .help("write `let x: u32;`"),
                );
                Ty::Err
            }
        };
        let vi = self.declare(name, p, final_ty, mutable || init.is_none());
        if let (false, Some(e)) = (mutable, init) {
            self.vars[vi].sym = self.sym_of_binding(e, p, code);
            if matches!(self.vars[vi].ty, Ty::Scalar(s) if s.is_int()) {
                self.vars[vi].uniform_over = self.cond_perspective(e);
                self.vars[vi].of_counters = self.of_counters(e, vi);
            }
        }
    }

    /// [T-ALLOC-SHARED] shared allocations only at code perspective block[1]; sizes are static.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn t_alloc_shared(
        &mut self,
        s: &Stmt,
        name: &Ident,
        (elem, layout): (ScalarType, SmemLayout),
        len: &Expr,
        at: Option<SpannedPerspective>,
        init: Option<&Expr>,
        code: Perspective,
    ) {
        // In a cluster kernel, cluster code (`block[N]`) may allocate too: each block gets its own copy, which
        // `peer` lets the others read.
        let cluster = self
            .f
            .cluster
            .as_ref()
            .and_then(|e| self.eval(e).ok())
            .filter(|c| (2..=8).contains(c));
        let cluster_code = cluster.is_some_and(|c| code == Perspective::block(c as u32));
        if code != Perspective::block(1) && !cluster_code {
            self.errors.push(
                err(
                    "T-ALLOC-SHARED",
                    name.span,
                    format!("shared memory `{}` is allocated at {code}; shared allocations are only allowed at block[1]", name.name),
                )
                .help("allocate inside `group(block[1], || { .. })`"),
            );
        }
        if let Some(a) = at {
            if a.perspective != Perspective::block(1) {
                self.errors.push(err(
                    "T-ALLOC-SHARED",
                    a.span,
                    format!("shared memory lives at block[1], not {}", a.perspective),
                ));
            }
        }
        if let Some(e) = init {
            self.errors.push(
                err(
                    "T-ALLOC-SHARED",
                    e.span,
                    "shared allocations have no initializer",
                )
                .help("write `let s: Shared<[f32; N]>;` and fill it through a partition"),
            );
        }
        if let Some(n) = self.eval_opt(len, "a shared array length") {
            if n < 1 {
                self.errors.push(err(
                    "T-ALLOC-SHARED",
                    len.span,
                    format!("shared array length {n} must be at least 1"),
                ));
            } else {
                let bytes = (n as u64).saturating_mul(elem.size() as u64);
                self.first_alloc.get_or_insert(s.span);
                let offset = layout.place(self.own_smem);
                self.smem_align = self.smem_align.max(layout.align() as u64);
                self.own_smem = offset.saturating_add(bytes);
                let start = s.span.start();
                self.shared.push(SharedAlloc {
                    name: name.name.clone(),
                    line: start.line,
                    column: start.column,
                    offset: offset.min(u32::MAX as u64) as u32,
                    bytes: bytes.min(u32::MAX as u64) as u32,
                });
            }
        }
        self.declare(
            name,
            Perspective::block(1),
            Ty::Ptr {
                elem,
                mutable: true,
                space: Space::Shared,
            },
            true,
        );
    }

    /// T-ASSN / T-ARR-ASSN with [WRITE-DOWN] (Fig. 12), [MUT], [STORE], [CONST].
    pub(super) fn t_assn(
        &mut self,
        place: &Expr,
        op: Option<BinOp>,
        value: &Expr,
        code: Perspective,
    ) {
        match &place.kind {
            ExprKind::Var(id) => self.assign_var(id, op, value, code),
            ExprKind::Index { base, indices } => {
                let ExprKind::Var(id) = &base.kind else {
                    self.errors
                        .push(err("TYPE", base.span, "only variables can be indexed"));
                    return;
                };
                let Some(vi) = self.use_var(id) else { return };
                let v = self.vars[vi].clone();
                self.index_arity(&v, indices, place.span);
                if v.is_async {
                    self.async_only(&v, id.span);
                    return;
                }
                match v.ty.clone() {
                    Ty::Array { elem, .. } => {
                        self.frozen_by_partition(vi, id.span);
                        // Thread-local array element: WRITE-DOWN with the array's perspective.
                        if !v.mutable {
                            self.errors.push(
                                err(
                                    "MUT",
                                    id.span,
                                    format!(
                                        "cannot assign to an element of immutable array `{}`",
                                        v.name
                                    ),
                                )
                                .note(v.span, "declared here")
                                .help(format!(
                                    "declare it `let mut {}` (or take `&mut [T; N]`)",
                                    v.name
                                )),
                            );
                        }
                        self.write_down(&v, id.span, code);
                        let sink = Sink {
                            p: v.at,
                            rule: "WRITE-DOWN",
                            what: format!("an element of `{}` ({})", v.name, v.at),
                            id_target: None,
                        };
                        for i in indices {
                            let t = self.expr(i, &sink, code);
                            self.expect_int(&t, i.span, "an index");
                        }
                        let sink = Sink {
                            id_target: Some(v.at),
                            ..sink
                        };
                        let ty = self.expr(value, &sink, code);
                        self.assign_ty(op, &ty, &Ty::Scalar(elem), value.span, &v.name);
                    }
                    Ty::Ptr {
                        elem,
                        mutable,
                        space,
                    } => {
                        self.store(&v, id.span, mutable, space, code, Some(indices));
                        let sink = Sink {
                            p: Perspective::thread(1),
                            rule: "WRITE-DOWN",
                            what: format!("memory through `{}` (thread[1])", v.name),
                            id_target: None,
                        };
                        for i in indices {
                            let t = self.expr(i, &sink, code);
                            self.expect_int(&t, i.span, "an index");
                        }
                        let sink = Sink {
                            id_target: Some(Perspective::thread(1)),
                            ..sink
                        };
                        let ty = self.expr(value, &sink, code);
                        self.assign_ty(op, &ty, &Ty::Scalar(elem), value.span, &v.name);
                    }
                    Ty::Err => {}
                    other => self.errors.push(err(
                        "TYPE",
                        id.span,
                        format!("`{}` has type {other} and cannot be indexed", v.name),
                    )),
                }
            }
            _ => self
                .errors
                .push(err("TYPE", place.span, "cannot assign to this expression")),
        }
    }

    /// Assignment to a variable (T-ASSN): mutable, not a const generic or pointer; the value written down to its perspective.
    fn assign_var(&mut self, id: &Ident, op: Option<BinOp>, value: &Expr, code: Perspective) {
        let Some(vi) = self.use_var(id) else {
            self.expr(
                value,
                &Sink {
                    p: code,
                    rule: "WRITE-DOWN",
                    what: "an unknown variable".into(),
                    id_target: Some(code),
                },
                code,
            );
            return;
        };
        self.frozen_by_partition(vi, id.span);
        let v = self.vars[vi].clone();
        if v.konst.is_some() {
            self.errors.push(err(
                "MUT",
                id.span,
                format!("cannot assign to const generic `{}`", v.name),
            ));
            return;
        }
        if matches!(v.ty, Ty::Ptr { .. }) {
            self.errors.push(
                err(
                    "TYPE",
                    id.span,
                    format!("cannot assign to pointer `{}`", v.name),
                )
                .help("write through it: `p[i] = v`"),
            );
            return;
        }
        if !v.mutable {
            self.errors.push(
                err(
                    "MUT",
                    id.span,
                    format!("cannot assign twice to immutable variable `{}`", v.name),
                )
                .note(v.span, "declared here")
                .help(format!("declare it `let mut {}`", v.name)),
            );
        }
        self.write_down(&v, id.span, code);
        let sink = Sink {
            p: v.at,
            rule: "WRITE-DOWN",
            what: format!("`{}` ({})", v.name, v.at),
            id_target: Some(v.at),
        };
        let ty = self.expr(value, &sink, code);
        let want = v.ty.clone();
        self.assign_ty(op, &ty, &want, value.span, &v.name);
    }

    pub(super) fn t_for(
        &mut self,
        var: &Ident,
        start: &Expr,
        end: &Expr,
        step: Option<&Expr>,
        body: &Block,
        code: Perspective,
    ) {
        let sink = Sink {
            p: code,
            rule: "READ-UP",
            what: format!("the `for` bounds at code perspective {code}"),
            id_target: None,
        };
        let ts = self.expr(start, &sink, code);
        let te = self.expr(end, &sink, code);
        self.expect_int(&ts, start.span, "a `for` bound");
        self.expect_int(&te, end.span, "a `for` bound");
        let mut ty = unify(&ts, &te).unwrap_or_else(|| {
            self.errors.push(err(
                "TYPE",
                end.span,
                format!("`for` bounds have different types: {ts} and {te}"),
            ));
            Ty::Err
        });
        if let Some(s) = step {
            let tst = self.expr(s, &sink, code);
            self.expect_int(&tst, s.span, "a `step_by` step");
            if let Some(u) = unify(&ty, &tst) {
                ty = u;
            }
        }
        let mark = self.vars.len();
        // The loop variable lives at the code perspective (it is uniform across it).
        let mut c = self.cond_perspective(start);
        for e in std::iter::once(end).chain(step) {
            c = self.narrower(c, self.cond_perspective(e));
        }
        let vi = self.declare(var, code, ty, false);
        self.vars[vi].range = self.constant_range(start, end, step);
        self.vars[vi].uniform_over = c;
        // A constant empty range (`0..0`, `1..N` with N = 1) never runs its body: it writes nothing.
        let never = self.vars[vi].range.as_ref().is_some_and(|r| r.is_empty());
        self.conds.push(c.filter(|_| !never && !leaves_early(body)));
        self.loop_depth += 1;
        self.block(body, code);
        self.loop_depth -= 1;
        self.conds.pop();
        self.vars.truncate(mark);
    }
}

impl Cx<'_> {
    /// A condition's value when constants decide it (literals, const generics, comparisons of constant
    /// expressions, `&&`, `||`, `!`).
    pub(super) fn const_bool(&self, e: &Expr) -> Option<bool> {
        match &e.kind {
            ExprKind::Lit(Lit::Bool(b)) => Some(*b),
            ExprKind::Unary {
                op: UnOp::Not,
                expr,
            } => self.const_bool(expr).map(|b| !b),
            ExprKind::Binary { op, lhs, rhs } => match op {
                BinOp::And => Some(self.const_bool(lhs)? && self.const_bool(rhs)?),
                BinOp::Or => Some(self.const_bool(lhs)? || self.const_bool(rhs)?),
                _ => {
                    let (a, b) = (self.eval(lhs).ok()?, self.eval(rhs).ok()?);
                    Some(match op {
                        BinOp::Eq => a == b,
                        BinOp::Ne => a != b,
                        BinOp::Lt => a < b,
                        BinOp::Le => a <= b,
                        BinOp::Gt => a > b,
                        BinOp::Ge => a >= b,
                        _ => return None,
                    })
                }
            },
            _ => None,
        }
    }

    /// The values of a `for` counter whose bounds and step are constants (at most 4096 of them).
    fn constant_range(&self, start: &Expr, end: &Expr, step: Option<&Expr>) -> Option<Vec<i64>> {
        let (s, e) = (self.eval(start).ok()?, self.eval(end).ok()?);
        let by = step.map_or(Ok(1), |x| self.eval(x)).ok()?;
        if by < 1 || e.checked_sub(s)? / by > 4096 {
            return None;
        }
        Some((s..e).step_by(by as usize).collect())
    }
}

/// A loop body with a `break` or `continue`: the statements after it may run in some units only.
pub(super) fn leaves_early(body: &Block) -> bool {
    let mut found = false;
    walk::walk_block(body, &mut |s| {
        found |= matches!(s.kind, StmtKind::Break | StmtKind::Continue);
    });
    found
}
