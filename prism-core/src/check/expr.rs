//! Expressions and types: names, indexing, operators, casts, array literals and methods.

use super::*;
use crate::consteval::{float_literal_error, float_literal_overflows};

impl<'a> Cx<'a> {
    pub(super) fn expect_ty(&mut self, got: &Ty, want: &Ty, span: Span, what: &str) {
        if unify(got, want).is_none() {
            self.errors.push(err(
                "TYPE",
                span,
                format!("mismatched types: {what} expects {want}, found {got}"),
            ));
        } else if let (Ty::Array { len: Some(a), .. }, Ty::Array { len: Some(b), .. }) = (got, want)
        {
            if a != b {
                self.errors.push(err(
                    "TYPE",
                    span,
                    format!("mismatched array lengths: {what} expects {want}, found {got}"),
                ));
            }
        }
    }

    pub(super) fn expect_int(&mut self, t: &Ty, span: Span, what: &str) {
        match t {
            Ty::Scalar(s) if s.is_int() => {}
            Ty::IntLit | Ty::Err => {}
            other => self.errors.push(err(
                "TYPE",
                span,
                format!("{what} must be an integer, found {other}"),
            )),
        }
    }

    pub(super) fn assign_ty(
        &mut self,
        op: Option<BinOp>,
        got: &Ty,
        want: &Ty,
        span: Span,
        name: &str,
    ) {
        if let (Some(op), Ty::Scalar(s)) = (op, want) {
            self.binop_types(op, want, got, span);
            if matches!(s, ScalarType::F16 | ScalarType::BF16) {
                return;
            }
        }
        self.expect_ty(got, want, span, &format!("`{name}`"));
    }

    pub(super) fn expr(&mut self, e: &Expr, sink: &Sink, code: Perspective) -> Ty {
        match &e.kind {
            ExprKind::Lit(Lit::Float(v, t))
                if float_literal_overflows(*v, t.unwrap_or(ScalarType::F64)) =>
            {
                self.errors
                    .push(float_literal_error(e.span, t.unwrap_or(ScalarType::F64)));
                t.map_or(Ty::FloatLit, Ty::Scalar)
            }
            ExprKind::Lit(Lit::Int(_, Some(t))) | ExprKind::Lit(Lit::Float(_, Some(t))) => {
                Ty::Scalar(*t)
            }
            ExprKind::Lit(Lit::Int(_, None)) => Ty::IntLit,
            ExprKind::Lit(Lit::Float(_, None)) => Ty::FloatLit,
            ExprKind::Lit(Lit::Bool(_)) => Ty::Scalar(ScalarType::Bool),
            ExprKind::Var(id) => self.e_var(id, sink),
            ExprKind::Index { base, indices } => self.e_index(e, base, indices, sink, code),
            ExprKind::Unary { op, expr } => self.e_unary(e, *op, expr, sink, code),
            ExprKind::Binary { op, lhs, rhs } => self.e_binary(e, *op, lhs, rhs, sink, code),
            ExprKind::Cast { expr, ty } => self.e_cast(e, expr, *ty, sink, code),
            ExprKind::Call {
                path,
                generics,
                args,
            } => self.e_call(e, path, generics, args, sink, code),
            ExprKind::MethodCall { recv, method, args } => {
                self.e_method(recv, method, args, sink, code)
            }
            ExprKind::Ref { .. } => {
                self.errors.push(
                    err(
                        "TYPE",
                        e.span,
                        "`&`/`&mut` are only used to pass a thread-local array to a function",
                    )
                    .help("e.g. `mma_m16n8k8_tf32(&mut c, &a, &b)`"),
                );
                Ty::Err
            }
            ExprKind::ArrayLit(items) => self.e_array(e, items, sink, code),
            ExprKind::ArrayRepeat { value, len } => {
                let sink2 = Sink {
                    id_target: None,
                    ..sink.clone()
                };
                let t = self.expr(value, &sink2, code);
                let n = self.eval_opt(len, "an array length");
                if let Some(v) = n.filter(|v| !(0..=MAX_REG_ARRAY).contains(v)) {
                    self.errors.push(
                        err(
                            "REG-ARRAY",
                            len.span,
                            format!("a register array of {v} elements: thread-local arrays live in registers, at most {MAX_REG_ARRAY} elements"),
                        )
                        .help("keep large data in shared or global memory"),
                    );
                }
                match scalar_of(&t) {
                    Some(s) => Ty::Array { elem: s, len: n },
                    None => {
                        if t != Ty::Err {
                            self.errors.push(err(
                                "TYPE",
                                value.span,
                                format!("array elements must be scalars, found {t}"),
                            ));
                        }
                        Ty::Err
                    }
                }
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => self.e_select(cond, then_value, else_value, sink, code),
            ExprKind::Asm { template, operands } => {
                self.asm_template(e, template, operands);
                self.e_asm(e, operands, sink, code)
            }
        }
    }

    /// `if c { a } else { b }` as a value. The condition decides the value: it is read at the sink (a
    /// `thread[1]` value may be chosen per thread in block code). When a side calls a collective, it also
    /// decides whether that collective runs: then it is read at the code perspective too (READ-UP, as an
    /// `if` statement's).
    fn e_select(
        &mut self,
        cond: &Expr,
        then_value: &Expr,
        else_value: &Expr,
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        let guard = self
            .collective_in(then_value)
            .or_else(|| self.collective_in(else_value))
            .map(|what| {
                format!("the `if` condition at code perspective {code}, which decides whether {what} runs")
            });
        let vsink = Sink {
            id_target: None,
            ..sink.clone()
        };
        let ct = self.deciding_condition(cond, guard, &vsink, code);
        self.expect_ty(
            &ct,
            &Ty::Scalar(ScalarType::Bool),
            cond.span,
            "the `if` condition",
        );
        let a = self.expr(then_value, sink, code);
        let b = self.expr(else_value, sink, code);
        unify(&a, &b).unwrap_or_else(|| {
            self.errors.push(err(
                "TYPE",
                else_value.span,
                format!("`if` branches have different types: {a} and {b}"),
            ));
            Ty::Err
        })
    }

    /// `asm!`: inside `unsafe`; inputs are values or element addresses (`&p[i]`, checked like reads), outputs `let mut` variables.
    /// Rule ASM: every `{name}` of the template names one of the operands (once per name).
    fn asm_template(&mut self, e: &Expr, template: &str, operands: &[AsmOperand]) {
        let mut seen = Vec::new();
        for name in crate::ast::asm_template_names(template) {
            if !operands.iter().any(|o| o.name.name == name) && !seen.contains(&name) {
                self.errors.push(err(
                    "ASM",
                    e.span,
                    format!("`{{{name}}}` names no operand of this `asm!`"),
                ));
                seen.push(name);
            }
        }
        // The text must be PTX the model reads (any operand name stands for its register here).
        if seen.is_empty() {
            if let Ok(text) = crate::ast::asm_expand(template, |n| Some(format!("%{n}"))) {
                if let Err(pe) = crate::ptx::parse_stmts(&text) {
                    self.errors.push(
                        err(
                            "ASM",
                            e.span,
                            format!("the assembly is not PTX (its line {}): {}", pe.line, pe.message),
                        )
                        .help("write PTX statements, each ending in `;`, with `{name}` for an operand"),
                    );
                }
            }
        }
    }

    fn e_asm(&mut self, e: &Expr, operands: &[AsmOperand], sink: &Sink, code: Perspective) -> Ty {
        if self.unsafe_depth == 0 {
            self.errors.push(
                err("UNSAFE-WRAP", e.span, "`asm!` outside an `unsafe` block")
                    .help("write `unsafe { asm!(..); }` inside a `#[prism_device]` function"),
            );
        }
        for op in operands {
            match op.dir {
                AsmDir::In => {
                    let s2 = Sink {
                        id_target: None,
                        ..sink.clone()
                    };
                    // `&p[i]`: the address of an element of global (`in(u64)`) or shared (`in(u32)`)
                    // memory, for instructions the language has no intrinsic for (acquire loads,
                    // atomics with other semantics, ...). The element access is checked like a read.
                    if let Some(space) = self.memory_element(&op.expr) {
                        let _ = self.expr(asm_address_target(&op.expr), &s2, code);
                        let want = match space {
                            Space::Global => ScalarType::U64,
                            Space::Shared => ScalarType::U32,
                        };
                        if op.ty != want {
                            self.errors.push(
                                err(
                                    "TYPE",
                                    op.expr.span,
                                    format!(
                                        "asm operand `{}` is the address of {} memory: declare it `in({want})`",
                                        op.name,
                                        if want == ScalarType::U64 { "global" } else { "shared" },
                                    ),
                                )
                                .help("global addresses are 64-bit, shared addresses 32-bit"),
                            );
                        }
                        continue;
                    }
                    let t = self.expr(&op.expr, &s2, code);
                    self.expect_ty(
                        &t,
                        &Ty::Scalar(op.ty),
                        op.expr.span,
                        &format!("asm operand `{}`", op.name),
                    );
                }
                AsmDir::Out | AsmDir::InOut => {
                    if let ExprKind::Var(id) = &op.expr.kind {
                        if let Some(vi) = self.use_var(id) {
                            let v = self.vars[vi].clone();
                            if !v.mutable || v.konst.is_some() {
                                self.errors.push(err(
                                    "MUT",
                                    id.span,
                                    format!("asm output `{}` must be a `let mut` variable", v.name),
                                ));
                            }
                            self.write_down(&v, id.span, code);
                            self.expect_ty(
                                &v.ty,
                                &Ty::Scalar(op.ty),
                                id.span,
                                &format!("asm operand `{}`", op.name),
                            );
                        }
                    } else {
                        self.errors.push(err(
                            "TYPE",
                            op.expr.span,
                            "asm outputs must be variables",
                        ));
                    }
                }
            }
        }
        Ty::Unit
    }

    /// Checks only the variable reads of `e` against `sink` (no types), for the second constraint on select
    /// conditions.
    pub(super) fn expr_silent_vars(&mut self, e: &Expr, sink: &Sink) -> Option<()> {
        let mut names = Vec::new();
        walk_vars(e, &mut |n| names.push(n.to_string()));
        let mut spans = Vec::new();
        walk_var_idents(e, &mut |id| spans.push(id.clone()));
        for id in spans {
            if let Some(vi) = self.lookup(&id.name) {
                self.read_up(vi, id.span, sink);
            }
        }
        Some(())
    }

    pub(super) fn e_var(&mut self, id: &Ident, sink: &Sink) -> Ty {
        let Some(vi) = self.use_var(id) else {
            return Ty::Err;
        };
        let v = self.vars[vi].clone();
        if v.is_async {
            self.async_only(&v, id.span);
            return Ty::Err;
        }
        match v.ty {
            Ty::Ptr { .. } => {
                self.errors.push(
                    err(
                        "TYPE",
                        id.span,
                        format!("pointer `{}` used as a value", v.name),
                    )
                    .help(format!("index it: `{}[i]`", v.name)),
                );
                Ty::Err
            }
            // Tensor maps and rings are names for intrinsics (which take them without reading a value).
            Ty::TensorMap { .. } => {
                self.errors.push(err(
                    "TYPE",
                    id.span,
                    format!(
                        "the tensor map `{}` is only an argument of `tma_load`, `tma_load_multicast` or `tma_store`, or of a device function's map parameter",
                        id.name
                    ),
                ));
                Ty::Err
            }
            Ty::Ring(_) => {
                self.errors.push(err(
                    "RING",
                    id.span,
                    format!("the ring `{}` is only used by `fill` and `drain`", id.name),
                ));
                Ty::Err
            }
            _ => {
                self.read_up(vi, id.span, sink);
                v.ty
            }
        }
    }

    pub(super) fn e_index(
        &mut self,
        e: &Expr,
        base: &Expr,
        indices: &[Expr],
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        let ExprKind::Var(id) = &base.kind else {
            self.errors
                .push(err("TYPE", base.span, "only variables can be indexed"));
            return Ty::Err;
        };
        let Some(vi) = self.use_var(id) else {
            return Ty::Err;
        };
        let v = self.vars[vi].clone();
        if v.is_async {
            self.async_only(&v, id.span);
            return Ty::Err;
        }
        self.index_arity(&v, indices, e.span);
        // Reads: the memory's (or array's) perspective must be readable at the sink (T-ARR-ACCESS).
        self.read_up(vi, id.span, sink);
        let isink = Sink {
            id_target: None,
            ..sink.clone()
        };
        for i in indices {
            let t = self.expr(i, &isink, code);
            self.expect_int(&t, i.span, "an index");
        }
        match v.ty {
            Ty::Array { elem, .. } => Ty::Scalar(elem),
            Ty::Ptr { elem, space, .. } => {
                if space == Space::Shared {
                    self.arr_access_shared(&v, id.span, code);
                }
                self.index_read(&v, id.span, indices, 1);
                Ty::Scalar(elem)
            }
            Ty::Err => Ty::Err,
            other => {
                self.errors.push(err(
                    "TYPE",
                    id.span,
                    format!("`{}` has type {other} and cannot be indexed", v.name),
                ));
                Ty::Err
            }
        }
    }

    pub(super) fn e_unary(
        &mut self,
        e: &Expr,
        op: UnOp,
        inner: &Expr,
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        let t = self.expr(inner, sink, code);
        match (op, &t) {
            (_, Ty::Err) => Ty::Err,
            (UnOp::Neg, Ty::IntLit | Ty::FloatLit) => t,
            (UnOp::Neg, Ty::Scalar(s))
                if s.is_signed() || matches!(s, ScalarType::F32 | ScalarType::F64) =>
            {
                t
            }
            (UnOp::Not, Ty::Scalar(s)) if s.is_int() || *s == ScalarType::Bool => t,
            (UnOp::Not, Ty::IntLit) => t,
            _ => {
                let o = if op == UnOp::Neg { "-" } else { "!" };
                let mut d = err("TYPE", e.span, format!("cannot apply unary `{o}` to {t}"));
                if matches!(t, Ty::Scalar(ScalarType::F16 | ScalarType::BF16)) {
                    d = d.help("f16/bf16 are storage types: convert with `as f32` to compute");
                }
                self.errors.push(d);
                Ty::Err
            }
        }
    }

    pub(super) fn binop_types(&mut self, op: BinOp, l: &Ty, r: &Ty, span: Span) -> Ty {
        if *l == Ty::Err || *r == Ty::Err {
            return Ty::Err;
        }
        let bad_half = |t: &Ty| matches!(t, Ty::Scalar(ScalarType::F16 | ScalarType::BF16));
        if bad_half(l) || bad_half(r) {
            self.errors.push(
                err(
                    "TYPE",
                    span,
                    format!(
                        "arithmetic on {}: f16/bf16 are storage types",
                        if bad_half(l) { l } else { r }
                    ),
                )
                .help("convert to f32 first: `(x as f32) + ..`, and back with `as bf16`"),
            );
            return Ty::Err;
        }
        match op {
            BinOp::And | BinOp::Or => {
                let b = Ty::Scalar(ScalarType::Bool);
                if unify(l, &b).is_none() || unify(r, &b).is_none() {
                    self.errors.push(err(
                        "TYPE",
                        span,
                        format!("`&&`/`||` need bool operands, found {l} and {r}"),
                    ));
                }
                b
            }
            BinOp::Shl | BinOp::Shr => {
                if !is_int(l) || !is_int(r) {
                    self.errors.push(err(
                        "TYPE",
                        span,
                        format!("shifts need integer operands, found {l} and {r}"),
                    ));
                    return Ty::Err;
                }
                l.clone()
            }
            _ => {
                let Some(t) = unify(l, r) else {
                    self.errors.push(
                        err("TYPE", span, format!("mismatched types: {l} and {r}"))
                            .help("convert one side with `as`"),
                    );
                    return Ty::Err;
                };
                let cmp = matches!(
                    op,
                    BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
                );
                let ok = match &t {
                    // PTX compares predicates only for (in)equality: `false < true` is not lowered.
                    Ty::Scalar(ScalarType::Bool) => matches!(
                        op,
                        BinOp::Eq | BinOp::Ne | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor
                    ),
                    Ty::Scalar(s) if s.is_float() => {
                        !matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor)
                    }
                    Ty::FloatLit => !matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor),
                    Ty::Scalar(_) | Ty::IntLit => true,
                    _ => false,
                };
                if !ok {
                    self.errors
                        .push(err("TYPE", span, format!("operator not defined on {t}")));
                    return Ty::Err;
                }
                if cmp {
                    Ty::Scalar(ScalarType::Bool)
                } else {
                    t
                }
            }
        }
    }

    pub(super) fn e_binary(
        &mut self,
        e: &Expr,
        op: BinOp,
        lhs: &Expr,
        rhs: &Expr,
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        // `&&`/`||` run their right side only where the left side lets them (Rust's short circuit, a
        // branch in PTX): a collective there is under a condition, so the left side is one (READ-UP at the
        // code perspective, as an `if`'s).
        let guarded = matches!(op, BinOp::And | BinOp::Or)
            .then(|| self.collective_in(rhs))
            .flatten();
        let guard = guarded.map(|what| {
            format!(
                "the left side of `{}` at code perspective {code}, which decides whether {what} on its right runs",
                if op == BinOp::And { "&&" } else { "||" }
            )
        });
        let l = self.deciding_condition(lhs, guard, sink, code);
        let r = self.expr(rhs, sink, code);
        self.binop_types(op, &l, &r, e.span)
    }

    /// A condition that decides whether a collective runs (`guard` says which, for READ-UP's message) is
    /// read at the code perspective, and at the sink too (the narrower of both); without one it is an
    /// ordinary value, read at the sink.
    fn deciding_condition(
        &mut self,
        cond: &Expr,
        guard: Option<String>,
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        let Some(what) = guard else {
            return self.expr(cond, sink, code);
        };
        let csink = Sink {
            p: code,
            rule: "READ-UP",
            what,
            id_target: None,
        };
        let t = self.expr(cond, &csink, code);
        if !self.le(sink.p, code) {
            let s2 = Sink {
                id_target: None,
                ..sink.clone()
            };
            let _ = self.expr_silent_vars(cond, &s2);
        }
        t
    }

    /// The first collective `e` calls (an intrinsic or device function that needs more than `thread[1]`),
    /// described for a message: "`vote_any` (a thread[32] collective)".
    fn collective_in(&self, e: &Expr) -> Option<String> {
        let mut found = None;
        walk::walk_exprs(e, &mut |x| {
            let ExprKind::Call { path, .. } = &x.kind else {
                return;
            };
            let Some(name) = path.last().map(|n| n.name.as_str()) else {
                return;
            };
            if found.is_some() {
                return;
            }
            // Intrinsics are called by their bare name; a device function by any path (`crate::f`,
            // `prism_kernels::f`) resolves by its last segment, as `e_call` does.
            let intrinsic = (path.len() == 1)
                .then(|| crate::intrinsics::lookup(name))
                .flatten();
            let need = match intrinsic {
                Some(i) => match i.need {
                    crate::intrinsics::Need::At(p) => Some(p),
                    crate::intrinsics::Need::Cluster => Some(Perspective::block(1)),
                    crate::intrinsics::Need::Any => None,
                },
                None => self
                    .deps
                    .iter()
                    .find(|d| d.name.name == name)
                    .and_then(|d| d.requires.first())
                    .map(|r| r.perspective),
            };
            if let Some(p) = need.filter(|p| *p != Perspective::thread(1)) {
                found = Some(format!("`{name}` (a {p} collective)"));
            }
        });
        found
    }

    pub(super) fn e_cast(
        &mut self,
        e: &Expr,
        inner: &Expr,
        to: ScalarType,
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        let t = self.expr(inner, sink, code);
        let ok = match &t {
            Ty::Err => true,
            Ty::IntLit | Ty::FloatLit => to != ScalarType::Bool,
            Ty::Scalar(ScalarType::Bool) => to.is_int() || to == ScalarType::Bool,
            Ty::Scalar(_) => to != ScalarType::Bool,
            _ => false,
        };
        if !ok {
            self.errors.push(
                err("TYPE", e.span, format!("cannot cast {t} to {to}"))
                    .help("compare with `!= 0` to get a bool"),
            );
            return Ty::Err;
        }
        Ty::Scalar(to)
    }

    pub(super) fn e_array(
        &mut self,
        e: &Expr,
        items: &[Expr],
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        let s2 = Sink {
            id_target: None,
            ..sink.clone()
        };
        let mut t = Ty::IntLit;
        let mut first = true;
        for it in items {
            let ti = self.expr(it, &s2, code);
            if first {
                t = ti;
                first = false;
            } else if let Some(u) = unify(&t, &ti) {
                t = u;
            } else {
                self.errors.push(err(
                    "TYPE",
                    it.span,
                    format!("array elements have different types: {t} and {ti}"),
                ));
                return Ty::Err;
            }
        }
        match scalar_of(&t) {
            Some(s) => Ty::Array {
                elem: s,
                len: Some(items.len() as i64),
            },
            None => {
                if t != Ty::Err {
                    self.errors.push(err(
                        "TYPE",
                        e.span,
                        format!("array elements must be scalars, found {t}"),
                    ));
                }
                Ty::Err
            }
        }
    }

    pub(super) fn e_method(
        &mut self,
        recv: &Expr,
        method: &Ident,
        args: &[Expr],
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        let t = self.expr(recv, sink, code);
        let arity = match method.name.as_str() {
            "sqrt" | "rsqrt" | "exp2" | "log2" | "sin" | "cos" | "abs" => 0,
            "min" | "max" => 1,
            "fma" => 2,
            other => {
                self.errors.push(
                    err(
                        "UNKNOWN-FN",
                        method.span,
                        format!("unknown method `{other}`"),
                    )
                    .help(match other {
                        "exp" => "math methods: sqrt, rsqrt, exp2, log2, sin, cos, abs, min, max, fma; e^x is `(x * 1.442695).exp2()` (log2 e)",
                        "ln" | "log" => "math methods: sqrt, rsqrt, exp2, log2, sin, cos, abs, min, max, fma; ln x is `x.log2() * 0.6931472` (ln 2)",
                        "tanh" => "math methods: sqrt, rsqrt, exp2, log2, sin, cos, abs, min, max, fma; tanh x is `1.0 - 2.0 / ((x * 2.885390).exp2() + 1.0)` (2 log2 e)",
                        "wrapping_add" | "wrapping_sub" | "wrapping_mul" => "integer `+ - *` already wrap (two's complement, as PTX computes them): write `a * b`",
                        "count_ones" | "leading_zeros" | "trailing_zeros" | "rotate_left" | "rotate_right" | "reverse_bits" => "integer bit methods are not built in: a `#[prism_device]` function with inline PTX gives them (`popc.b32`, `clz.b32`, `brev.b32`, `shf.l.wrap.b32`; docs/SYNTAX.md, `asm!`)",
                        _ => "math methods: sqrt, rsqrt, exp2, log2, sin, cos, abs, min, max, fma",
                    }),
                );
                return Ty::Err;
            }
        };
        if args.len() != arity {
            self.errors.push(err(
                "TYPE",
                method.span,
                format!(
                    "`{}` takes {arity} argument(s), found {}",
                    method.name,
                    args.len()
                ),
            ));
        }
        let float_only = !matches!(method.name.as_str(), "abs" | "min" | "max");
        let mut ty = t.clone();
        for a in args {
            let ta = self.expr(a, sink, code);
            match unify(&ty, &ta) {
                Some(u) => ty = u,
                None => self.errors.push(err(
                    "TYPE",
                    a.span,
                    format!("mismatched types: `{}` on {ty} with {ta}", method.name),
                )),
            }
        }
        // The approximate transcendental instructions (`ex2`, `lg2`, `sin`, `cos`) exist for f32 only.
        let f32_only = matches!(method.name.as_str(), "exp2" | "log2" | "sin" | "cos");
        let ok = match &ty {
            Ty::Err => true,
            Ty::FloatLit => true,
            Ty::Scalar(ScalarType::F32) => true,
            Ty::Scalar(ScalarType::F64) => !f32_only,
            Ty::Scalar(s) if s.is_int() => !float_only,
            Ty::IntLit => !float_only,
            _ => false,
        };
        if !ok {
            let mut d = err(
                "TYPE",
                method.span,
                format!("`{}` is not defined on {ty}", method.name),
            );
            if matches!(ty, Ty::Scalar(ScalarType::F16 | ScalarType::BF16)) {
                d = d.help("convert to f32 first: `(x as f32).sqrt()`");
            } else if f32_only && ty == Ty::Scalar(ScalarType::F64) {
                d = d.help(format!(
                    "PTX has `{}` for f32 only: `(x as f32).{}()`",
                    method.name, method.name
                ));
            }
            self.errors.push(d);
            return Ty::Err;
        }
        ty
    }
}

pub(super) fn type_to_ty(t: &Type) -> Ty {
    match t {
        Type::Scalar(s) => Ty::Scalar(*s),
        _ => Ty::Err,
    }
}

pub(super) fn scalar_of(t: &Ty) -> Option<ScalarType> {
    match t {
        Ty::Scalar(s) => Some(*s),
        Ty::IntLit => Some(ScalarType::I32),
        Ty::FloatLit => Some(ScalarType::F32),
        _ => None,
    }
}

pub(super) fn is_int(t: &Ty) -> bool {
    matches!(t, Ty::IntLit | Ty::Err) || matches!(t, Ty::Scalar(s) if s.is_int())
}

/// Unifies two types: literals adopt the other side's type (ints only int types, floats only float types).
pub(super) fn unify(a: &Ty, b: &Ty) -> Option<Ty> {
    match (a, b) {
        (Ty::Err, _) | (_, Ty::Err) => Some(Ty::Err),
        (Ty::IntLit, Ty::IntLit) => Some(Ty::IntLit),
        (Ty::FloatLit, Ty::FloatLit) => Some(Ty::FloatLit),
        (Ty::IntLit, Ty::Scalar(s)) | (Ty::Scalar(s), Ty::IntLit) if s.is_int() => {
            Some(Ty::Scalar(*s))
        }
        (Ty::FloatLit, Ty::Scalar(s)) | (Ty::Scalar(s), Ty::FloatLit) if s.is_float() => {
            Some(Ty::Scalar(*s))
        }
        (Ty::Array { elem: x, len: l1 }, Ty::Array { elem: y, len: l2 }) if x == y => {
            Some(Ty::Array {
                elem: *x,
                len: l1.or(*l2),
            })
        }
        (x, y) if x == y => Some(x.clone()),
        _ => None,
    }
}
