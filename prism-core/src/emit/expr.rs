//! Expressions: literals, names, indexing, operators (with constant folding), casts and methods.

use super::*;
use crate::ptx::Operand;

impl Em {
    /// The value of `e` is the same for all threads of a warp: it reads only constants and variables of a
    /// perspective ≥ thread[32] (or block/grid level; warps never span blocks).
    pub(super) fn uniform(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Lit(_) => true,
            ExprKind::Var(id) => match self.env.iter().rev().find_map(|s| s.get(&id.name)) {
                Some(Binding::Scalar {
                    val: Val::Imm(..), ..
                }) => true,
                Some(Binding::Scalar { persp, .. }) => warp_uniform_persp(*persp),
                _ => false,
            },
            ExprKind::Index { base, indices } => match &base.kind {
                ExprKind::Var(id) => match self.env.iter().rev().find_map(|s| s.get(&id.name)) {
                    Some(Binding::Array { persp, .. }) => {
                        warp_uniform_persp(*persp) && indices.iter().all(|i| self.uniform(i))
                    }
                    _ => false,
                },
                _ => false,
            },
            ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } => self.uniform(expr),
            ExprKind::Binary { lhs, rhs, .. } => self.uniform(lhs) && self.uniform(rhs),
            ExprKind::Call { path, args, .. } => {
                let n = path.last().map(|p| p.name.as_str()).unwrap_or("");
                matches!(n, "vote_all" | "vote_any" | "ballot") && args.iter().all(|_| true)
            }
            ExprKind::MethodCall { recv, args, .. } => {
                self.uniform(recv) && args.iter().all(|a| self.uniform(a))
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => self.uniform(cond) && self.uniform(then_value) && self.uniform(else_value),
            _ => false,
        }
    }

    pub(super) fn scalar(&mut self, e: &Expr) -> R<Val> {
        match self.expr(e)? {
            Value::S(v) => Ok(v),
            _ => Err(bug("TYPE", e.span, "expected a scalar value here")),
        }
    }

    pub(super) fn scalars(&mut self, es: &[Expr]) -> R<Vec<Val>> {
        es.iter().map(|e| self.scalar(e)).collect()
    }

    pub(super) fn expr(&mut self, e: &Expr) -> R<Value> {
        match &e.kind {
            ExprKind::Lit(l) => Ok(Value::S(match l {
                Lit::Int(v, t) => {
                    let v = i128::try_from(*v)
                        .map_err(|_| bug("CONST-OVERFLOW", e.span, "integer literal too large"))?;
                    match t {
                        Some(t) if t.is_float() => Val::Imm(Imm::Float(v as f64), Some(*t)),
                        _ => Val::Imm(Imm::Int(v), *t),
                    }
                }
                Lit::Float(x, t) => Val::Imm(Imm::Float(*x), *t),
                Lit::Bool(b) => Val::Imm(Imm::Bool(*b), Some(ScalarType::Bool)),
            })),
            ExprKind::Var(id) => Ok(match self.lookup(id)? {
                Binding::Scalar { val, .. } => Value::S(val),
                Binding::Array { regs, elem, .. } => {
                    Value::Arr(regs.into_iter().map(|r| Val::Reg(r, elem)).collect(), elem)
                }
                Binding::Mem { view, .. } => Value::Mem(view),
                Binding::TensorMap { .. } => {
                    return Err(bug(
                        "TYPE",
                        id.span,
                        format!(
                            "the tensor map `{}` is only an argument of `tma_load`, `tma_load_multicast` or `tma_store`, or of a device function's map parameter",
                            id.name
                        ),
                    ))
                }
                Binding::Ring { .. } => {
                    return Err(bug(
                        "RING",
                        id.span,
                        format!("the ring `{}` is only used by `fill` and `drain`", id.name),
                    ))
                }
                Binding::Hidden => return Err(bug("*-HIDDEN", id.span, "hidden name")),
            }),
            ExprKind::Index { base, indices } => {
                let id = match &base.kind {
                    ExprKind::Var(id) => id,
                    _ => return Err(bug("TYPE", e.span, "only `name[i]` can be indexed")),
                };
                match self.lookup(id)? {
                    Binding::Array { regs, elem, .. } => {
                        let i = self.reg_index(id, &regs, indices, e.span)?;
                        Ok(Value::S(Val::Reg(regs[i].clone(), elem)))
                    }
                    Binding::Mem { view, .. } => {
                        let idx = self.scalars(indices)?;
                        let addr = self.address(&view, idx, e.span)?;
                        Ok(Value::S(self.load(&view, &addr, None)))
                    }
                    _ => Err(bug(
                        "TYPE",
                        e.span,
                        format!("`{}` cannot be indexed", id.name),
                    )),
                }
            }
            ExprKind::Unary { op, expr } => {
                let v = self.scalar(expr)?;
                self.unop(*op, v, e.span).map(Value::S)
            }
            ExprKind::Binary {
                op: op @ (BinOp::And | BinOp::Or),
                lhs,
                rhs,
            } if !pure(rhs) => self.short_circuit(op, lhs, rhs),
            ExprKind::Binary {
                op: op @ (BinOp::Shl | BinOp::Shr),
                lhs,
                rhs,
            } => {
                // A shift's operands have their own types (Rust's): the result is the left side's, and an
                // untyped left side is i32 here (`scalar_as` gives it the type it is used at).
                let a = self.scalar(lhs)?;
                let a = match a.ty() {
                    Some(_) => a,
                    None => self.coerce(a.clone(), a.ty_or_default(), lhs.span)?,
                };
                let b = self.scalar(rhs)?;
                self.binop(*op, a, b, e.span).map(Value::S)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                // An `if` value of untyped literals takes the other operand's type (`(if c { 3.0 } else
                // { 4.0 }) * v`): that operand goes first when it is the right one (the left is pure).
                let (a, b) = if untyped(lhs) && !untyped(rhs) && pure(lhs) {
                    let b = self.scalar(rhs)?;
                    (self.scalar_as(lhs, b.ty())?, b)
                } else {
                    let a = self.scalar(lhs)?;
                    let b = self.scalar_as(rhs, a.ty())?;
                    (a, b)
                };
                self.binop(*op, a, b, e.span).map(Value::S)
            }
            ExprKind::Cast { expr, ty } => {
                let v = self.scalar(expr)?;
                self.cast(v, *ty, e.span).map(Value::S)
            }
            ExprKind::Call {
                path,
                generics,
                args,
            } => self.call(path, generics, args, e.span),
            ExprKind::MethodCall { recv, method, args } => {
                self.method(recv, method, args, e.span).map(Value::S)
            }
            ExprKind::Ref { expr, .. } => self.expr(expr),
            ExprKind::ArrayLit(items) => {
                let vals = self.scalars(items)?;
                // Untyped literals only: f32 for floats, else i32 (the checker's defaults).
                let t = vals
                    .iter()
                    .find_map(|v| v.ty())
                    .or_else(|| vals.first().map(Val::ty_or_default))
                    .unwrap_or(ScalarType::I32);
                let vals = vals
                    .into_iter()
                    .map(|v| self.coerce(v, t, e.span))
                    .collect::<R<Vec<_>>>()?;
                Ok(Value::Arr(vals, t))
            }
            ExprKind::ArrayRepeat { value, len } => {
                let n = self.const_u32(len)?;
                if n > 4096 {
                    return Err(bug(
                        "REG-ARRAY",
                        e.span,
                        format!("a register array of {n} elements is too large"),
                    ));
                }
                let v = self.scalar(value)?;
                let t = v.ty_or_default();
                let v = self.coerce(v, t, e.span)?;
                Ok(Value::Arr(vec![v; n as usize], t))
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } if self.array_valued(then_value) || self.array_valued(else_value) => {
                self.select_array(cond, then_value, else_value)
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => self.select(cond, then_value, else_value, None),
            ExprKind::Asm { template, operands } => {
                self.asm(template, operands, e.span).map(|_| Value::Unit)
            }
        }
    }

    /// `&&` / `||` whose right side is not pure: it runs only when the left side does not decide.
    fn short_circuit(&mut self, op: &BinOp, lhs: &Expr, rhs: &Expr) -> R<Value> {
        // Short-circuit: the right side may read memory that the left side guards.
        let a = self.scalar(lhs)?;
        let a = self.coerce(a, ScalarType::Bool, lhs.span)?;
        let r = self.fresh(ScalarType::Bool);
        self.mov_into(&r, &a, ScalarType::Bool);
        let done = self.label();
        let neg = if *op == BinOp::And { "!" } else { "" };
        self.line(format!("@{neg}{r} bra {done};"));
        let b = self.scalar(rhs)?;
        let b = self.coerce(b, ScalarType::Bool, rhs.span)?;
        self.mov_into(&r, &b, ScalarType::Bool);
        self.put_label(&done);
        Ok(Value::S(Val::Reg(r, ScalarType::Bool)))
    }

    /// `e` as a scalar, where the value is used at type `want` (a `let`'s, the memory it is stored to, the
    /// other operand): an `if` value of untyped literals takes that type, as the checker gives it.
    pub(super) fn scalar_as(&mut self, e: &Expr, want: Option<ScalarType>) -> R<Val> {
        match &e.kind {
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => match self.select(cond, then_value, else_value, want)? {
                Value::S(v) => Ok(v),
                _ => Err(bug("TYPE", e.span, "expected a scalar value here")),
            },
            // Arithmetic of untyped operands (`(if c { 4000000000 } else { 3 }) / 2`, `-1024 >> k`) is
            // computed in the type it is used at, as the checker types it; a shift's amount keeps its own.
            ExprKind::Binary { op, lhs, rhs } if want.is_some() && untyped(e) => {
                let a = self.scalar_as(lhs, want)?;
                let (a, b) = match (op, want) {
                    (BinOp::Shl | BinOp::Shr, Some(w)) => {
                        (self.coerce(a, w, lhs.span)?, self.scalar(rhs)?)
                    }
                    _ => {
                        let b = self.scalar_as(rhs, want.or(a.ty()))?;
                        (a, b)
                    }
                };
                self.binop(*op, a, b, e.span)
            }
            ExprKind::Unary { op, expr } if want.is_some() && untyped(e) => {
                let v = self.scalar_as(expr, want)?;
                self.unop(*op, v, e.span)
            }
            _ => self.scalar(e),
        }
    }

    /// `if c { a } else { b }` as a value: `selp` when both sides are pure, else a branch so only the chosen
    /// side runs. Its type is a typed side's, else `want`, else f32 for float literals and i32 for integer
    /// ones (the checker's defaults).
    fn select(
        &mut self,
        cond: &Expr,
        then_value: &Expr,
        else_value: &Expr,
        want: Option<ScalarType>,
    ) -> R<Value> {
        let c = self.scalar(cond)?;
        let c = self.coerce(c, ScalarType::Bool, cond.span)?;
        if let Val::Imm(Imm::Bool(b), _) = c {
            let chosen = if b { then_value } else { else_value };
            return self.scalar_as(chosen, want).map(Value::S);
        }
        let p = self.reg(&c, ScalarType::Bool);
        // A typed side's type, else `want`, else the literals' default (f32 if either is a float).
        let default = |a: &Val, b: Option<&Val>| {
            a.ty().or(b.and_then(Val::ty)).or(want).unwrap_or_else(|| {
                match b.map(Val::ty_or_default) {
                    Some(ScalarType::F32) => ScalarType::F32,
                    _ => a.ty_or_default(),
                }
            })
        };
        if pure(then_value) && pure(else_value) {
            let a = self.scalar_as(then_value, want)?;
            let b = self.scalar_as(else_value, want.or(a.ty()))?;
            let t = default(&a, Some(&b));
            let a = self.coerce(a, t, then_value.span)?;
            let b = self.coerce(b, t, else_value.span)?;
            let r = self.fresh(t);
            if t == ScalarType::Bool {
                let (x, y) = (self.reg(&a, t), self.reg(&b, t));
                // r = (p & x) | (!p & y)
                let tmp = self.fresh(t);
                self.line(format!("and.pred {r}, {p}, {x};"));
                self.line(format!("and.pred {tmp}, !{p}, {y};"));
                self.line(format!("or.pred {r}, {r}, {tmp};"));
            } else {
                let (x, y) = (self.op(&a, t), self.op(&b, t));
                let st = if t.size() == 2 { "b16" } else { ptx_ty(t) };
                self.line(format!("selp.{st} {r}, {x}, {y}, {p};"));
            }
            Ok(Value::S(Val::Reg(r, t)))
        } else {
            // Only the chosen side runs (it may read memory). An untyped literal side goes second, so that
            // it takes the other side's type.
            let swap = want.is_none() && untyped(then_value);
            let (first, second, neg) = if swap {
                (else_value, then_value, "")
            } else {
                (then_value, else_value, "!")
            };
            let (second_l, end) = (self.label(), self.label());
            self.line(format!("@{neg}{p} bra {second_l};"));
            let a = self.scalar_as(first, want)?;
            let t = default(&a, None);
            let r = self.fresh(t);
            let a = self.coerce(a, t, first.span)?;
            self.mov_into(&r, &a, t);
            self.line(format!("bra.uni {end};"));
            self.put_label(&second_l);
            let b = self.scalar_as(second, Some(t))?;
            let b = self.coerce(b, t, second.span)?;
            self.mov_into(&r, &b, t);
            self.put_label(&end);
            Ok(Value::S(Val::Reg(r, t)))
        }
    }

    /// Whether `e` is a register array (a literal, a repeat, `load2`/`load4`, an array variable, an `if` of
    /// those): the sides of an `if` value the checker unified as arrays.
    fn array_valued(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::ArrayLit(_) | ExprKind::ArrayRepeat { .. } => true,
            ExprKind::Call { path, .. } => path
                .last()
                .is_some_and(|p| p.name == "load2" || p.name == "load4"),
            ExprKind::Var(id) => matches!(
                self.env.iter().rev().find_map(|s| s.get(&id.name)),
                Some(Binding::Array { .. })
            ),
            ExprKind::Select { then_value, .. } => self.array_valued(then_value),
            _ => false,
        }
    }

    /// `if c { [..] } else { [..] }`: only the chosen side runs (`load4` may read past the end on the other),
    /// into fresh registers element by element. A literal side goes second, taking the other's type.
    fn select_array(&mut self, cond: &Expr, then_value: &Expr, else_value: &Expr) -> R<Value> {
        let c = self.scalar(cond)?;
        let c = self.coerce(c, ScalarType::Bool, cond.span)?;
        if let Val::Imm(Imm::Bool(b), _) = c {
            return self.expr(if b { then_value } else { else_value });
        }
        let p = self.reg(&c, ScalarType::Bool);
        let literal =
            |e: &Expr| matches!(e.kind, ExprKind::ArrayLit(_) | ExprKind::ArrayRepeat { .. });
        let swap = literal(then_value) && !literal(else_value);
        let (first, second, neg) = if swap {
            (else_value, then_value, "")
        } else {
            (then_value, else_value, "!")
        };
        let (second_l, end) = (self.label(), self.label());
        self.line(format!("@{neg}{p} bra {second_l};"));
        let Value::Arr(a, t) = self.expr(first)? else {
            return Err(bug("TYPE", first.span, "expected an array value here"));
        };
        let regs: Vec<String> = a.iter().map(|_| self.fresh(t)).collect();
        for (r, v) in regs.iter().zip(a) {
            let v = self.coerce(v, t, first.span)?;
            self.mov_into(r, &v, t);
        }
        self.line(format!("bra.uni {end};"));
        self.put_label(&second_l);
        let Value::Arr(b, _) = self.expr(second)? else {
            return Err(bug("TYPE", second.span, "expected an array value here"));
        };
        if b.len() != regs.len() {
            return Err(bug("TYPE", second.span, "the sides' array lengths differ"));
        }
        for (r, v) in regs.iter().zip(b) {
            let v = self.coerce(v, t, second.span)?;
            self.mov_into(r, &v, t);
        }
        self.put_label(&end);
        Ok(Value::Arr(
            regs.into_iter().map(|r| Val::Reg(r, t)).collect(),
            t,
        ))
    }

    /// The register of `a[i]` for a register array: `i` must be a constant after unrolling.
    pub(super) fn reg_index(
        &mut self,
        id: &Ident,
        regs: &[String],
        indices: &[Expr],
        span: Span,
    ) -> R<usize> {
        if indices.len() != 1 {
            return Err(bug("T-PARTITION", span, "a register array takes one index"));
        }
        let v = self.scalar(&indices[0])?;
        match v.as_int() {
            Some(i) if i >= 0 && (i as usize) < regs.len() => Ok(i as usize),
            Some(i) => Err(err("REG-INDEX", indices[0].span, format!("index {i} is out of bounds for `{}` of length {}", id.name, regs.len()))),
            None => Err(err(
                "REG-INDEX",
                indices[0].span,
                format!("thread-local array `{}` is indexed with a run-time value; it lives in registers, so every index must be a constant after loop unrolling", id.name),
            )
            .help("index with constants or with the variable of a `for` loop with constant bounds (such loops are unrolled, up to 4096 iterations when they index a register array), or keep the data in shared memory")),
        }
    }

    pub(super) fn unop(&mut self, op: UnOp, v: Val, span: Span) -> R<Val> {
        if let Val::Imm(i, t) = &v {
            return Ok(match (op, i) {
                (UnOp::Neg, Imm::Int(x)) => {
                    Val::Imm(Imm::Int(t.map(|t| wrap_int(-x, t)).unwrap_or(-x)), *t)
                }
                (UnOp::Neg, Imm::Float(x)) => Val::Imm(Imm::Float(-x), *t),
                (UnOp::Not, Imm::Bool(b)) => Val::Imm(Imm::Bool(!b), *t),
                (UnOp::Not, Imm::Int(x)) => {
                    Val::Imm(Imm::Int(t.map(|t| wrap_int(!x, t)).unwrap_or(!x)), *t)
                }
                _ => return Err(bug("TYPE", span, "invalid operand for this operator")),
            });
        }
        let t = v.ty().unwrap_or(ScalarType::I32);
        let r = self.fresh(t);
        let o = self.op(&v, t);
        match (op, t) {
            (UnOp::Not, ScalarType::Bool) => self.line(format!("not.pred {r}, {o};")),
            (UnOp::Not, t) if t.is_int() => self.line(format!("not.{} {r}, {o};", bits_ty(t))),
            (UnOp::Neg, ScalarType::U32 | ScalarType::I32) => {
                self.line(format!("neg.s32 {r}, {o};"))
            }
            (UnOp::Neg, ScalarType::U64 | ScalarType::I64) => {
                self.line(format!("neg.s64 {r}, {o};"))
            }
            (UnOp::Neg, ScalarType::F32 | ScalarType::F64) => {
                self.line(format!("neg.{} {r}, {o};", ptx_ty(t)))
            }
            _ => {
                return Err(bug("TYPE", span, format!("operator not defined on {t}"))
                    .help("convert f16/bf16 to f32 first"))
            }
        }
        Ok(Val::Reg(r, t))
    }

    pub(super) fn binop(&mut self, op: BinOp, a: Val, b: Val, span: Span) -> R<Val> {
        use BinOp::*;
        let t = match (a.ty(), b.ty()) {
            (Some(x), _) if matches!(op, Shl | Shr) => x,
            (Some(x), _) => x,
            (None, Some(y)) => y,
            (None, None) => {
                if matches!(
                    (&a, &b),
                    (Val::Imm(Imm::Float(_), _), _) | (_, Val::Imm(Imm::Float(_), _))
                ) {
                    // Two untyped float constants: fold in f64 and stay untyped (a literal), so that the
                    // result adopts the type of what it meets, as the checker types it.
                    if let (Val::Imm(x, _), Val::Imm(y, _)) = (&a, &b) {
                        if let Some(Val::Imm(i @ Imm::Float(_), _)) =
                            fold(op, *x, *y, ScalarType::F64)
                        {
                            return Ok(Val::Imm(i, None));
                        }
                    }
                    ScalarType::F64
                } else {
                    return fold_untyped(op, &a, &b, span);
                }
            }
        };
        let a = self.coerce(a, t, span)?;
        let b = if matches!(op, Shl | Shr) {
            let b = match b.ty() {
                None => b,
                Some(ScalarType::U32 | ScalarType::I32) => b,
                // Only the low 32 bits survive the cvt to u32: clamp first, so that an amount of 2^32 or
                // more still shifts everything out (a negative i64 amount is a huge unsigned one).
                Some(w @ (ScalarType::U64 | ScalarType::I64)) => {
                    let clamped = match b {
                        Val::Imm(Imm::Int(v), _) => {
                            Val::Imm(Imm::Int((v as u64).min(255) as i128), Some(ScalarType::U64))
                        }
                        _ => {
                            let r = self.fresh(ScalarType::U64);
                            let x = self.reg(&b, w);
                            self.line(format!("min.u64 {r}, {x}, 255;"));
                            Val::Reg(r, ScalarType::U64)
                        }
                    };
                    self.cast(clamped, ScalarType::U32, span)?
                }
                Some(_) => self.cast(b, ScalarType::U32, span)?,
            };
            self.coerce(b, ScalarType::U32, span)?
        } else {
            self.coerce(b, t, span)?
        };
        if let (Val::Imm(x, _), Val::Imm(y, _)) = (&a, &b) {
            if let Some(v) = fold(op, *x, *y, t) {
                return Ok(v);
            }
        }
        if t.is_int() {
            // Identities that index arithmetic meets constantly (x + 0, 1 * x, ...).
            let (ia, ib) = (a.as_int(), b.as_int());
            match (op, ia, ib) {
                (Add | Sub | BitOr | BitXor | Shl | Shr, _, Some(0)) | (Mul | Div, _, Some(1)) => {
                    return Ok(a)
                }
                (Add | BitOr | BitXor, Some(0), _) | (Mul, Some(1), _) => return Ok(b),
                (Mul | BitAnd, Some(0), _) | (Mul | BitAnd, _, Some(0)) | (Rem, _, Some(1)) => {
                    return Ok(Val::Imm(Imm::Int(0), Some(t)))
                }
                _ => {}
            }
        }
        if t == ScalarType::F16 || t == ScalarType::BF16 {
            return Err(bug(
                "TYPE",
                span,
                format!("{t} is a storage type: no arithmetic on it"),
            )
            .help("convert with `as f32` first"));
        }
        if let Some(c) = cmp_op(op, t) {
            return self.compare(op, c, &a, &b, t, span);
        }
        let r = self.fresh(t);
        let x = self.reg(&a, t);
        let pt = ptx_ty(t);
        let ins = match (op, t) {
            (And | BitAnd, ScalarType::Bool) => "and.pred".to_string(),
            (Or | BitOr, ScalarType::Bool) => "or.pred".to_string(),
            (BitXor, ScalarType::Bool) => "xor.pred".to_string(),
            (_, ScalarType::Bool) => return Err(bug("TYPE", span, "operator not defined on bool")),
            (And | Or, _) => return Err(bug("TYPE", span, "`&&`/`||` need bool operands")),
            // `.rn` on float add/sub/mul: without a rounding modifier ptxas may contract a mul and an add
            // into an fma (PTX ISA, add/mul "Semantics"), which rounds once where Rust rounds twice: results
            // would then differ between the GPU, the emulator and a CPU reference. Write `x.fma(y, z)` to fuse.
            (Add, _) if t.is_float() => format!("add.rn.{pt}"),
            (Sub, _) if t.is_float() => format!("sub.rn.{pt}"),
            (Mul, _) if t.is_float() => format!("mul.rn.{pt}"),
            (Add, _) => format!("add.{pt}"),
            (Sub, _) => format!("sub.{pt}"),
            (Mul, _) => format!("mul.lo.{pt}"),
            (Div, _) if t.is_float() => format!("div.rn.{pt}"),
            (Div, _) => format!("div.{pt}"),
            (Rem, _) if t.is_float() => {
                // Exact, as Rust's `%` (`fmod.rs`); `y` in a register for the bit moves.
                let y = self.reg(&b, t);
                self.float_rem(&r, &x, &y, t);
                return Ok(Val::Reg(r, t));
            }
            (Rem, _) => format!("rem.{pt}"),
            (BitAnd, _) if t.is_int() => format!("and.{}", bits_ty(t)),
            (BitOr, _) if t.is_int() => format!("or.{}", bits_ty(t)),
            (BitXor, _) if t.is_int() => format!("xor.{}", bits_ty(t)),
            (Shl, _) if t.is_int() => format!("shl.{}", bits_ty(t)),
            (Shr, _) if t.is_int() => format!("shr.{pt}"),
            _ => return Err(bug("TYPE", span, format!("operator not defined on {t}"))),
        };
        let y = self.operand(
            &b,
            if matches!(op, Shl | Shr) {
                ScalarType::U32
            } else {
                t
            },
        );
        self.emit(&ins, vec![Operand::Name(r.clone()), Operand::Name(x), y]);
        Ok(Val::Reg(r, t))
    }

    /// A comparison (`c` its PTX condition) into a fresh predicate; bools compare with `==` / `!=` only.
    fn compare(
        &mut self,
        op: BinOp,
        c: &str,
        a: &Val,
        b: &Val,
        t: ScalarType,
        span: Span,
    ) -> R<Val> {
        use BinOp::*;
        let p = self.fresh(ScalarType::Bool);
        if t == ScalarType::Bool {
            let (x, y) = (self.reg(a, t), self.reg(b, t));
            match op {
                Eq => self.line(format!("xor.pred {p}, {x}, {y};\n\tnot.pred {p}, {p};")),
                Ne => self.line(format!("xor.pred {p}, {x}, {y};")),
                _ => return Err(bug("TYPE", span, "bool values only compare with == and !=")),
            }
        } else {
            let (x, y) = (self.reg(a, t), self.op(b, t));
            let ct = if t.is_int() {
                bits_cmp_ty(t, c)
            } else {
                ptx_ty(t)
            };
            self.line(format!("setp.{c}.{ct} {p}, {x}, {y};"));
        }
        Ok(Val::Reg(p, ScalarType::Bool))
    }

    pub(super) fn cast(&mut self, v: Val, to: ScalarType, span: Span) -> R<Val> {
        let from = match v.ty() {
            Some(f) => f,
            None => return self.coerce(v, to, span),
        };
        if from == to {
            return Ok(v);
        }
        if let Val::Imm(i, _) = &v {
            // Fold the conversion with Rust's `as` semantics.
            let folded = match (*i, to) {
                (Imm::Bool(b), t) if t.is_int() => Some(Val::Imm(Imm::Int(b as i128), Some(t))),
                (Imm::Bool(b), t) => Some(Val::Imm(Imm::Float(b as u8 as f64), Some(t))),
                (Imm::Int(x), t) if t.is_int() => Some(Val::Imm(Imm::Int(wrap_int(x, t)), Some(t))),
                (Imm::Int(x), t) if t.is_float() => Some(Val::Imm(
                    Imm::Float(if t == ScalarType::F32 {
                        x as f32 as f64
                    } else {
                        x as f64
                    }),
                    Some(t),
                )),
                (Imm::Float(x), ScalarType::U32) => {
                    Some(Val::Imm(Imm::Int(x as u32 as i128), Some(to)))
                }
                (Imm::Float(x), ScalarType::I32) => {
                    Some(Val::Imm(Imm::Int(x as i32 as i128), Some(to)))
                }
                (Imm::Float(x), ScalarType::U64) => {
                    Some(Val::Imm(Imm::Int(x as u64 as i128), Some(to)))
                }
                (Imm::Float(x), ScalarType::I64) => {
                    Some(Val::Imm(Imm::Int(x as i64 as i128), Some(to)))
                }
                (Imm::Float(x), ScalarType::F32) => {
                    Some(Val::Imm(Imm::Float(x as f32 as f64), Some(to)))
                }
                (Imm::Float(x), ScalarType::F64) => Some(Val::Imm(Imm::Float(x), Some(to))),
                _ => None,
            };
            if let Some(f) = folded {
                if !(from == ScalarType::F16 || from == ScalarType::BF16) {
                    return Ok(f);
                }
            }
        }
        if to == ScalarType::Bool {
            return Err(bug("TYPE", span, format!("cannot cast {from} to bool"))
                .help("compare instead: `x != 0`"));
        }
        let r = self.fresh(to);
        if from == ScalarType::Bool {
            let p = self.reg(&v, from);
            let (one, zero) = (imm_str(Imm::Int(1), to), imm_str(Imm::Int(0), to));
            if to.size() == 2 {
                let f = self.fresh(ScalarType::F32);
                self.line(format!("selp.f32 {f}, 0f3F800000, 0f00000000, {p};"));
                return self.cast(Val::Reg(f, ScalarType::F32), to, span);
            }
            self.line(format!("selp.{} {r}, {one}, {zero}, {p};", ptx_ty(to)));
            return Ok(Val::Reg(r, to));
        }
        let x = self.reg(&v, from);
        // f16/bf16 convert through f32 (bf16 → f32 is a 16-bit shift, exact, and needs no sm_90).
        if from == ScalarType::BF16 {
            let w = self.fresh(ScalarType::U32);
            self.line(format!("cvt.u32.u16 {w}, {x};"));
            self.line(format!("shl.b32 {w}, {w}, 16;"));
            let f = self.fresh(ScalarType::F32);
            self.line(format!("mov.b32 {f}, {w};"));
            return self.cast(Val::Reg(f, ScalarType::F32), to, span);
        }
        if from == ScalarType::F16 {
            let f = self.fresh(ScalarType::F32);
            self.line(format!("cvt.f32.f16 {f}, {x};"));
            return self.cast(Val::Reg(f, ScalarType::F32), to, span);
        }
        if to == ScalarType::F16 || to == ScalarType::BF16 {
            let f = if from == ScalarType::F32 {
                x
            } else {
                self.reg_of_cast(&v, ScalarType::F32, span)?
            };
            self.line(format!("cvt.rn.{}.f32 {r}, {f};", ptx_ty(to)));
            return Ok(Val::Reg(r, to));
        }
        let line = match (from.is_float(), to.is_float()) {
            (false, false) => {
                if from.size() == to.size() {
                    format!("mov.{} {r}, {x};", bits_ty(to))
                } else {
                    format!("cvt.{}.{} {r}, {x};", ptx_ty(to), ptx_ty(from))
                }
            }
            (false, true) => format!("cvt.rn.{}.{} {r}, {x};", ptx_ty(to), ptx_ty(from)),
            (true, false) => format!("cvt.rzi.{}.{} {r}, {x};", ptx_ty(to), ptx_ty(from)),
            (true, true) => {
                if to.size() > from.size() {
                    format!("cvt.{}.{} {r}, {x};", ptx_ty(to), ptx_ty(from))
                } else {
                    format!("cvt.rn.{}.{} {r}, {x};", ptx_ty(to), ptx_ty(from))
                }
            }
        };
        self.line(line);
        Ok(Val::Reg(r, to))
    }

    pub(super) fn reg_of_cast(&mut self, v: &Val, to: ScalarType, span: Span) -> R<String> {
        let c = self.cast(v.clone(), to, span)?;
        Ok(self.reg(&c, to))
    }

    pub(super) fn method(
        &mut self,
        recv: &Expr,
        method: &Ident,
        args: &[Expr],
        span: Span,
    ) -> R<Val> {
        // Untyped operands take the others' type (`x.max(if c { 1.0 } else { 2.0 })` on f64).
        let (v, mut a) = if untyped(recv) && pure(recv) {
            let a = self.scalars(args)?;
            let want = a.iter().find_map(Val::ty);
            (self.scalar_as(recv, want)?, a)
        } else {
            let v = self.scalar(recv)?;
            let a = args
                .iter()
                .map(|x| self.scalar_as(x, v.ty()))
                .collect::<R<Vec<_>>>()?;
            (v, a)
        };
        let t = v
            .ty()
            .or_else(|| a.iter().find_map(|x| x.ty()))
            .unwrap_or(ScalarType::F32);
        let v = self.coerce(v, t, recv.span)?;
        for x in a.iter_mut() {
            *x = self.coerce(x.clone(), t, span)?;
        }
        let m = method.name.as_str();
        let want = |n: usize| -> R<()> {
            if args.len() == n {
                Ok(())
            } else {
                Err(bug("TYPE", span, format!("`{m}` takes {n} argument(s)")))
            }
        };
        let pt = ptx_ty(t);
        let r = self.fresh(t);
        let x = self.reg(&v, t);
        let f32_only = |s: &Self| -> R<()> {
            let _ = s;
            if t == ScalarType::F32 {
                Ok(())
            } else {
                Err(bug("TYPE", span, format!("`{m}` is only available on f32"))
                    .help("convert with `as f32`"))
            }
        };
        match m {
            "sqrt" => {
                want(0)?;
                if !t.is_float() || t.size() < 4 {
                    return Err(bug("TYPE", span, "`sqrt` needs f32 or f64"));
                }
                self.line(format!("sqrt.rn.{pt} {r}, {x};"));
            }
            "rsqrt" => {
                want(0)?;
                if !t.is_float() || t.size() < 4 {
                    return Err(bug("TYPE", span, "`rsqrt` needs f32 or f64"));
                }
                self.line(format!("rsqrt.approx.{pt} {r}, {x};"));
            }
            "exp2" | "log2" | "sin" | "cos" => {
                want(0)?;
                f32_only(self)?;
                let ins = match m {
                    "exp2" => "ex2.approx.f32",
                    "log2" => "lg2.approx.f32",
                    "sin" => "sin.approx.f32",
                    _ => "cos.approx.f32",
                };
                self.line(format!("{ins} {r}, {x};"));
            }
            "abs" => {
                want(0)?;
                match t {
                    ScalarType::U32 | ScalarType::U64 => return Ok(v),
                    ScalarType::I32 | ScalarType::I64 | ScalarType::F32 | ScalarType::F64 => {
                        self.line(format!("abs.{pt} {r}, {x};"))
                    }
                    _ => return Err(bug("TYPE", span, format!("`abs` is not defined on {t}"))),
                }
            }
            "min" | "max" => {
                want(1)?;
                let y = self.op(&a[0], t);
                self.line(format!("{m}.{pt} {r}, {x}, {y};"));
            }
            "fma" => {
                want(2)?;
                if !t.is_float() || t.size() < 4 {
                    return Err(bug("TYPE", span, "`fma` needs f32 or f64"));
                }
                let (y, z) = (self.op(&a[0], t), self.op(&a[1], t));
                self.line(format!("fma.rn.{pt} {r}, {x}, {y}, {z};"));
            }
            _ => {
                return Err(
                    bug("UNKNOWN-FN", method.span, format!("unknown method `{m}`"))
                        .help("available: sqrt, rsqrt, exp2, log2, sin, cos, abs, min, max, fma"),
                )
            }
        }
        Ok(Val::Reg(r, t))
    }
}

/// No memory reads, calls or side effects: safe to evaluate eagerly.
pub(super) fn pure(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => true,
        // Register-array reads are pure; memory reads are not (checked conservatively by syntax: any index).
        ExprKind::Index { .. } => false,
        ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } => pure(expr),
        ExprKind::Binary { lhs, rhs, .. } => pure(lhs) && pure(rhs),
        ExprKind::MethodCall { recv, args, .. } => pure(recv) && args.iter().all(pure),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => pure(cond) && pure(then_value) && pure(else_value),
        _ => false,
    }
}

/// `e` reads the variable `var`.
pub(super) fn mentions(e: &Expr, var: &str) -> bool {
    match &e.kind {
        ExprKind::Var(id) => id.name == var,
        ExprKind::Lit(_) => false,
        ExprKind::Index { base, indices } => {
            mentions(base, var) || indices.iter().any(|i| mentions(i, var))
        }
        ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } | ExprKind::Ref { expr, .. } => {
            mentions(expr, var)
        }
        ExprKind::Binary { lhs, rhs, .. } => mentions(lhs, var) || mentions(rhs, var),
        ExprKind::Call { args, generics, .. } => {
            args.iter().chain(generics.iter()).any(|a| mentions(a, var))
        }
        ExprKind::MethodCall { recv, args, .. } => {
            mentions(recv, var) || args.iter().any(|a| mentions(a, var))
        }
        ExprKind::ArrayLit(v) => v.iter().any(|a| mentions(a, var)),
        ExprKind::ArrayRepeat { value, len } => mentions(value, var) || mentions(len, var),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => mentions(cond, var) || mentions(then_value, var) || mentions(else_value, var),
        ExprKind::Asm { operands, .. } => operands.iter().any(|o| mentions(&o.expr, var)),
    }
}

/// The PTX condition of a comparison operator on `t` (unsigned integers compare with lo/ls/hi/hs), or
/// `None` for a non-comparison.
fn cmp_op(op: BinOp, t: ScalarType) -> Option<&'static str> {
    use BinOp::*;
    Some(match op {
        Eq => "eq",
        Ne => {
            if t.is_float() {
                "neu"
            } else {
                "ne"
            }
        }
        Lt => {
            if t.is_float() || t.is_signed() {
                "lt"
            } else {
                "lo"
            }
        }
        Le => {
            if t.is_float() || t.is_signed() {
                "le"
            } else {
                "ls"
            }
        }
        Gt => {
            if t.is_float() || t.is_signed() {
                "gt"
            } else {
                "hi"
            }
        }
        Ge => {
            if t.is_float() || t.is_signed() {
                "ge"
            } else {
                "hs"
            }
        }
        _ => return None,
    })
}

/// An expression of unsuffixed literals only (`1.5`, `-2`, `if c { 1.0 } else { 2.0 }`, their arithmetic,
/// a shift of one by anything): its type comes from where it is used.
pub(super) fn untyped(e: &Expr) -> bool {
    use BinOp::*;
    match &e.kind {
        ExprKind::Lit(Lit::Int(_, None) | Lit::Float(_, None)) => true,
        ExprKind::Unary { expr, .. } => untyped(expr),
        ExprKind::Binary {
            op: Shl | Shr, lhs, ..
        } => untyped(lhs),
        ExprKind::Binary {
            op: Add | Sub | Mul | Div | Rem | BitAnd | BitOr | BitXor,
            lhs,
            rhs,
        } => untyped(lhs) && untyped(rhs),
        ExprKind::Select {
            then_value,
            else_value,
            ..
        } => untyped(then_value) && untyped(else_value),
        _ => false,
    }
}
