//! `for` loops: unrolled (constant trip counts, loops that index register arrays) or emitted as a loop.

use super::expr::mentions;
use super::*;

/// A `for` loop's start, end and step as constants, where they are.
type ConstBounds = (R<i64>, R<i64>, R<Option<i64>>);

impl Em {
    pub(super) fn for_stmt(
        &mut self,
        var: &Ident,
        start: &Expr,
        end: &Expr,
        step: Option<&Expr>,
        body: &Block,
        span: Span,
    ) -> R<()> {
        let consts = (
            self.const_i64(start),
            self.const_i64(end),
            step.map(|s| self.const_i64(s)).transpose(),
        );
        // The increment of a run-time loop with constant bounds would wrap past the type's maximum (e.g.
        // `(0..u32::MAX).step_by(16)`): then the loop exits before adding instead of after.
        let mut guard_wrap = false;
        if let (Ok(a), Ok(b), Ok(st)) = consts {
            // Trip counts in i128: bounds and steps anywhere in i64 (and u32/u64 types) cannot overflow.
            let (a, b, st) = (a as i128, b as i128, st.unwrap_or(1) as i128);
            if st <= 0 {
                return Err(err("EMIT-LOOP", span, "`step_by` must be positive"));
            }
            let trips = if b > a { (b - a + st - 1) / st } else { 0 };
            let max = type_max(self.loop_ty(start, end).unwrap_or(ScalarType::U32));
            guard_wrap = trips > 0 && a + (trips - 1) * st + st > max;
            let indexes = indexes_reg_array(body, &var.name, &self.array_names(body));
            let copies = self.unrolled.saturating_mul(trips.max(1));
            if indexes && trips <= MAX_UNROLL && copies > MAX_UNROLLED {
                // The loop must be unrolled (register arrays, wgmma offsets), and nested in other
                // unrolled loops it would make more copies of its body than any kernel can use.
                return Err(err(
                    "EMIT-LOOP",
                    span,
                    format!(
                        "unrolling this loop ({trips} iterations, inside unrolled loops making {} copies) \
                         makes {copies} copies of its body, more than {MAX_UNROLLED}",
                        self.unrolled
                    ),
                )
                .help("a loop that indexes a thread-local array is unrolled (the array lives in registers): make the loops around it run-time loops (bounds not known at compile time) or smaller"));
            }
            if (trips <= SMALL_TRIP && copies <= MAX_UNROLLED) || (indexes && trips <= MAX_UNROLL) {
                let saved = self.unrolled;
                self.unrolled = copies;
                // Unrolled: the variable is a constant in each copy (register arrays stay in registers).
                let ty = self.loop_ty(start, end);
                let end_l = self.label();
                let mut i = a;
                while i < b {
                    let cont = self.label();
                    self.env.push(Scope::new());
                    self.bind(
                        &var.name,
                        Binding::Scalar {
                            val: Val::Imm(Imm::Int(i), ty),
                            persp: Perspective::grid(1),
                        },
                    );
                    self.loops.push(LoopLabels {
                        cont: cont.clone(),
                        brk: end_l.clone(),
                    });
                    let r = self.block(body);
                    self.loops.pop();
                    self.env.pop();
                    r?;
                    self.put_label(&cont);
                    i += st;
                }
                self.put_label(&end_l);
                self.unrolled = saved;
                return Ok(());
            }
        }
        self.runtime_for(var, (start, end, step), body, consts, guard_wrap)
    }

    /// A `for` loop emitted as a loop: counter, unsigned test at the head, the body on a copy of the
    /// counter, the increment (guarded against wrapping where it may) at `cont`.
    fn runtime_for(
        &mut self,
        var: &Ident,
        (start, end, step): (&Expr, &Expr, Option<&Expr>),
        body: &Block,
        consts: ConstBounds,
        mut guard_wrap: bool,
    ) -> R<()> {
        let uni = self.uniform(start)
            && self.uniform(end)
            && step.map(|s| self.uniform(s)).unwrap_or(true);
        let s0 = self.scalar(start)?;
        let e0 = self.scalar(end)?;
        let t = s0.ty().or(e0.ty()).unwrap_or(ScalarType::U32);
        let s0 = self.coerce(s0, t, start.span)?;
        let e0 = self.coerce(e0, t, end.span)?;
        let e_reg = match e0 {
            Val::Imm(..) => e0,
            v => {
                let r = self.fresh(t);
                self.mov_into(&r, &v, t);
                Val::Reg(r, t)
            }
        };
        let st = match step {
            Some(s) => {
                let v = self.scalar(s)?;
                // `step_by` takes its own integer type (usize in Rust): convert it to the loop's.
                let v = match v.ty() {
                    Some(vt) if vt != t => self.cast(v, t, s.span)?,
                    _ => self.coerce(v, t, s.span)?,
                };
                match v {
                    Val::Imm(..) => v,
                    v => {
                        let r = self.fresh(t);
                        self.mov_into(&r, &v, t);
                        Val::Reg(r, t)
                    }
                }
            }
            None => Val::Imm(Imm::Int(1), Some(t)),
        };
        if let Val::Reg(r, _) = &st {
            // A step of 0 known only at run time would repeat the body for ever (Rust's `step_by` panics):
            // the kernel traps instead (a `Trap` fault on the emulator, a launch error on a GPU).
            let z = self.fresh(ScalarType::Bool);
            self.line(format!("setp.eq.{} {z}, {r}, 0;", bits_ty(t)));
            self.line(format!("@{z} trap;"));
        }
        // `i + step` may wrap past the type's maximum unless the step is 1 or `end - 1 + step` fits: then
        // the loop leaves before adding (Rust's `step_by` stops at the end, it does not wrap).
        if consts.0.is_err() || consts.1.is_err() || consts.2.is_err() {
            guard_wrap = match (&consts.1, &consts.2) {
                (_, Ok(None)) => false,
                (_, Ok(Some(1))) => false,
                (Ok(b), Ok(Some(sv))) => (*b as i128) - 1 + (*sv as i128) > type_max(t),
                _ => true,
            };
        }
        let i = self.fresh(t);
        self.mov_into(&i, &s0, t);
        let (head, cont, end_l) = (self.label(), self.label(), self.label());
        self.put_label(&head);
        let p = self.fresh(ScalarType::Bool);
        let eo = self.op(&e_reg, t);
        self.line(format!("setp.ge.{} {p}, {i}, {eo};", ptx_ty(t)));
        let bra = if uni { "bra.uni" } else { "bra" };
        self.line(format!("@{p} {bra} {end_l};"));
        self.env.push(Scope::new());
        // The body sees an immutable copy, so closures capturing it keep this iteration's value.
        let iv = self.fresh(t);
        self.line(format!("mov.{} {iv}, {i};", bits_ty(t)));
        let persp = if uni {
            Perspective::grid(1)
        } else {
            self.ctx.persp
        };
        self.bind(
            &var.name,
            Binding::Scalar {
                val: Val::Reg(iv, t),
                persp,
            },
        );
        self.loops.push(LoopLabels {
            cont: cont.clone(),
            brk: end_l.clone(),
        });
        let r = self.loop_body(body);
        self.loops.pop();
        self.env.pop();
        r?;
        self.put_label(&cont);
        let so = self.op(&st, t);
        if guard_wrap {
            // i < end here: leave when end - i <= step, before i + step can wrap.
            let rem = self.fresh(t);
            let q = self.fresh(ScalarType::Bool);
            self.line(format!("sub.{} {rem}, {eo}, {i};", ptx_ty(t)));
            let ut = if t.size() == 8 { "u64" } else { "u32" };
            self.line(format!("setp.le.{ut} {q}, {rem}, {so};"));
            self.line(format!("@{q} {bra} {end_l};"));
        }
        self.line(format!("add.{} {i}, {i}, {so};", ptx_ty(t)));
        self.line(format!("bra.uni {head};"));
        self.put_label(&end_l);
        Ok(())
    }

    /// The body of a run-time loop. One that ends with a drain's wgmmas in flight (their slot goes back at
    /// the next drain, `ring::drain_defer`) meets its own first statements again at the next iteration:
    /// unless the first is a drain, the group retires and the slot goes back there, as before any statement
    /// after a drain in straight-line code. Without it a `fill` heading the body waits for that very slot,
    /// which only the drain after it would hand back: a deadlock.
    pub(super) fn loop_body(&mut self, body: &Block) -> R<()> {
        let head = self.body.len();
        self.runtime_loops += 1;
        let r = self.block(body).map(|_| ());
        self.runtime_loops -= 1;
        r?;
        // A drain whose body begins with wgmmas issues more into the group in flight; one that begins with
        // anything else (a prefetching `fill`) must see the slot handed back first.
        let first_drains = matches!(
            body.stmts.first().map(|s| &s.kind),
            Some(StmtKind::RingUse {
                op: crate::ast::RingOp::Drain,
                body,
                ..
            }) if body.stmts.first().is_some_and(super::stmt::is_wgmma_stmt)
        );
        // An open run is retired by the branch back to the head (`Em::line`).
        if !self.wgmma_inflight || self.wgmma_open || first_drains {
            return Ok(());
        }
        let Some(d) = self.drain_deferred.clone() else {
            return Ok(());
        };
        let rest = self.body.split_off(head);
        self.raw_line("wgmma.wait_group.sync.aligned 0;");
        self.ring_arrive(&d.prev, Some(&d.pending), d.release);
        self.raw_line(&format!("mov.pred {}, 0;", d.pending));
        let added = self.body.len() - head;
        self.body.extend(rest);
        let shift = |pos: usize| if pos >= head { pos + added } else { pos };
        for pos in self.labels.values_mut() {
            *pos = shift(*pos);
        }
        self.bulk_pending_since = self.bulk_pending_since.map(shift);
        Ok(())
    }

    pub(super) fn loop_ty(&self, start: &Expr, end: &Expr) -> Option<ScalarType> {
        let lit_ty = |e: &Expr| match &e.kind {
            ExprKind::Lit(Lit::Int(_, t)) => *t,
            ExprKind::Var(id) => match self.env.iter().rev().find_map(|s| s.get(&id.name)) {
                Some(Binding::Scalar { val, .. }) => val.ty(),
                _ => None,
            },
            ExprKind::Cast { ty, .. } => Some(*ty),
            _ => None,
        };
        lit_ty(start).or_else(|| lit_ty(end))
    }

    /// Names of register arrays visible now or declared in `body`.
    pub(super) fn array_names(&self, body: &Block) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for s in &self.env {
            for (k, b) in s {
                if matches!(b, Binding::Array { .. }) {
                    v.push(k.clone());
                }
            }
        }
        collect_array_lets(body, &mut v);
        v
    }
}

pub(super) fn collect_array_lets(b: &Block, out: &mut Vec<String>) {
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Let { name, ty, init, .. } => {
                let arr = matches!(ty, Some(Type::Array { .. }))
                    || matches!(
                        init.as_ref().map(|e| &e.kind),
                        Some(ExprKind::ArrayLit(_) | ExprKind::ArrayRepeat { .. })
                    );
                if arr {
                    out.push(name.name.clone());
                }
            }
            _ => {
                for_each_block(s, &mut |b| collect_array_lets(b, out));
            }
        }
    }
}

pub(super) fn for_each_block(s: &Stmt, f: &mut dyn FnMut(&Block)) {
    match &s.kind {
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => {
            f(then_block);
            if let Some(e) = else_block {
                f(e);
            }
        }
        StmtKind::While { body, .. }
        | StmtKind::For { body, .. }
        | StmtKind::Group { body, .. }
        | StmtKind::Partition { body, .. }
        | StmtKind::Claim { body, .. }
        | StmtKind::Async { body, .. }
        | StmtKind::Peer { body, .. }
        | StmtKind::Ring { body, .. }
        | StmtKind::RingUse { body, .. }
        | StmtKind::Unsafe { body } => f(body),
        StmtKind::Split { arms, .. } => arms.iter().for_each(|a| f(&a.body)),
        _ => {}
    }
}

/// `body` indexes one of the register arrays `arrays` with an index that mentions `var`.
pub(super) fn indexes_reg_array(body: &Block, var: &str, arrays: &[String]) -> bool {
    fn expr(e: &Expr, var: &str, arrays: &[String]) -> bool {
        match &e.kind {
            ExprKind::Index { base, indices } => {
                let hit = matches!(&base.kind, ExprKind::Var(id) if arrays.contains(&id.name))
                    && indices.iter().any(|i| mentions(i, var));
                hit || indices.iter().any(|i| expr(i, var, arrays))
            }
            ExprKind::Unary { expr: x, .. }
            | ExprKind::Cast { expr: x, .. }
            | ExprKind::Ref { expr: x, .. } => expr(x, var, arrays),
            ExprKind::Binary { lhs, rhs, .. } => expr(lhs, var, arrays) || expr(rhs, var, arrays),
            ExprKind::Call {
                path,
                args,
                generics,
            } => {
                // wgmma offsets and the accumulator box of `stmatrix_bf16` / `store_fragment_f32` must be
                // constants: unroll loops that step through them.
                let wgmma = path.last().is_some_and(|p| {
                    p.name.starts_with("wgmma_")
                        || matches!(p.name.as_str(), "stmatrix_bf16" | "store_fragment_f32")
                }) && args.iter().any(|a| mentions(a, var));
                wgmma
                    || args.iter().any(|a| expr(a, var, arrays))
                    || generics.iter().any(|g| mentions(g, var))
            }
            ExprKind::MethodCall { recv, args, .. } => {
                expr(recv, var, arrays) || args.iter().any(|a| expr(a, var, arrays))
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                expr(cond, var, arrays)
                    || expr(then_value, var, arrays)
                    || expr(else_value, var, arrays)
            }
            ExprKind::ArrayLit(v) => v.iter().any(|a| expr(a, var, arrays)),
            ExprKind::Asm { operands, .. } => operands.iter().any(|o| expr(&o.expr, var, arrays)),
            _ => false,
        }
    }
    fn block(b: &Block, var: &str, arrays: &[String]) -> bool {
        b.stmts.iter().any(|s| stmt(s, var, arrays))
            || b.tail.as_ref().is_some_and(|t| expr(t, var, arrays))
    }
    fn stmt(s: &Stmt, var: &str, arrays: &[String]) -> bool {
        let own = match &s.kind {
            StmtKind::Let { init, .. } => init.as_ref().is_some_and(|e| expr(e, var, arrays)),
            StmtKind::Assign { place, value, .. } => {
                expr(place, var, arrays) || expr(value, var, arrays)
            }
            StmtKind::Expr(e) => expr(e, var, arrays),
            StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => expr(cond, var, arrays),
            // Inner loops whose bounds depend on `var` become constant only if this one is unrolled.
            StmtKind::For {
                start, end, step, ..
            } => {
                mentions(start, var)
                    || mentions(end, var)
                    || step.as_ref().is_some_and(|x| mentions(x, var))
            }
            _ => false,
        };
        let mut inner = false;
        for_each_block(s, &mut |b| inner |= block(b, var, arrays));
        own || inner
    }
    block(body, var, arrays)
}

/// The largest value of a loop counter's type.
fn type_max(t: ScalarType) -> i128 {
    match t {
        ScalarType::U32 => u32::MAX as i128,
        ScalarType::I32 => i32::MAX as i128,
        ScalarType::U64 => u64::MAX as i128,
        _ => i64::MAX as i128,
    }
}
