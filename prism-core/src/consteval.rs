//! Integer constant expressions: perspective sizes, `smem`/`threads`/`blocks`, array lengths, loop bounds
//! after const-generic substitution. Used by `parse`, `check` and `emit`.

use crate::ast::{
    BinOp, Block, Expr, ExprKind, Function, Lit, ScalarType, Stmt, StmtKind, Type, UnOp,
};
use crate::Diagnostic;
use proc_macro2::Span;
use std::collections::HashMap;

/// A float literal whose value is infinite in type `t`: an infinite `x` (`1e400`), or a finite one that
/// rounds to nearest past `t`'s largest value (`1e39` as f32), as rustc's `overflowing_literals` says.
pub(crate) fn float_literal_overflows(x: f64, t: ScalarType) -> bool {
    let limit = match t {
        ScalarType::F32 => return (x as f32).is_infinite(),
        // The largest finite value plus half its ulp.
        ScalarType::F16 => 65520.0,
        ScalarType::BF16 => (2.0 - 1.0 / 256.0) * 2f64.powi(127),
        _ => f64::INFINITY,
    };
    x.is_infinite() || x.abs() >= limit
}

/// CONST-OVERFLOW for a float literal that [`float_literal_overflows`] type `t`.
pub(crate) fn float_literal_error(span: Span, t: ScalarType) -> Diagnostic {
    let max = match t {
        ScalarType::F32 => f32::MAX as f64,
        ScalarType::F16 => 65504.0,
        ScalarType::BF16 => 3.3895313892515355e38,
        _ => f64::MAX,
    };
    Diagnostic::new(
        "CONST-OVERFLOW",
        span,
        format!("literal out of range for {t}: the largest finite value is {max:e}"),
    )
    .help(format!("rustc rejects it too (`overflowing_literals`): write a smaller value (an infinity is `1.0{t} / 0.0`)"))
}

/// Evaluates an integer constant expression: literals, const names (looked up through `consts`), `+ - * / %
/// << >> & | ^`, unary `-`, parentheses (already gone in the tree) and casts to integer types. Arithmetic is
/// done in `i64` with overflow checks; a cast truncates to the target type as Rust's `as` does. Errors carry
/// the rule `CONST` and the span of the offending sub-expression.
pub fn eval_const(e: &Expr, consts: &dyn Fn(&str) -> Option<i64>) -> Result<i64, Diagnostic> {
    eval(e, consts, 0)
}

fn err(e: &Expr, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::new("CONST", e.span, msg)
}

fn eval(e: &Expr, consts: &dyn Fn(&str) -> Option<i64>, depth: u32) -> Result<i64, Diagnostic> {
    // The parser bounds nesting, but this is also called on trees built by hand.
    if depth > 256 {
        return Err(err(e, "constant expression nested too deeply"));
    }
    match &e.kind {
        ExprKind::Lit(Lit::Int(v, _)) => {
            i64::try_from(*v).map_err(|_| err(e, format!("integer literal {v} does not fit in i64")))
        }
        ExprKind::Lit(Lit::Bool(b)) => Ok(*b as i64),
        ExprKind::Lit(Lit::Float(..)) => {
            Err(err(e, "a float literal is not an integer constant").help("write an integer literal"))
        }
        ExprKind::Var(id) => consts(&id.name).ok_or_else(|| {
            err(e, format!("`{}` is not a constant here", id.name))
                .help("use a literal or a const generic parameter of the function")
        }),
        ExprKind::Unary { op: UnOp::Neg, expr } => {
            // `-9223372036854775808`: the magnitude of i64::MIN is a literal only under a negation.
            if let ExprKind::Lit(Lit::Int(v, _)) = &expr.kind {
                if *v == 1u128 << 63 {
                    return Ok(i64::MIN);
                }
            }
            let v = eval(expr, consts, depth + 1)?;
            v.checked_neg().ok_or_else(|| err(e, "overflow in constant negation"))
        }
        ExprKind::Unary { op: UnOp::Not, expr } => Ok(!eval(expr, consts, depth + 1)?),
        ExprKind::Binary { op, lhs, rhs } => {
            let a = eval(lhs, consts, depth + 1)?;
            let b = eval(rhs, consts, depth + 1)?;
            let r = match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                BinOp::Div => {
                    if b == 0 {
                        return Err(err(e, "division by zero in a constant expression"));
                    }
                    a.checked_div(b)
                }
                BinOp::Rem => {
                    if b == 0 {
                        return Err(err(e, "remainder by zero in a constant expression"));
                    }
                    a.checked_rem(b)
                }
                BinOp::Shl => {
                    if !(0..64).contains(&b) {
                        return Err(err(e, format!("shift by {b} is out of range")));
                    }
                    a.checked_mul(1i64 << b)
                }
                BinOp::Shr => {
                    if !(0..64).contains(&b) {
                        return Err(err(e, format!("shift by {b} is out of range")));
                    }
                    Some(a >> b)
                }
                BinOp::BitAnd => Some(a & b),
                BinOp::BitOr => Some(a | b),
                BinOp::BitXor => Some(a ^ b),
                _ => {
                    return Err(err(e, "comparisons and logical operators are not allowed in constant expressions"))
                }
            };
            r.ok_or_else(|| err(e, "overflow in constant expression"))
        }
        ExprKind::Cast { expr, ty } => {
            let v = eval(expr, consts, depth + 1)?;
            Ok(match ty {
                ScalarType::U32 => v as u32 as i64,
                ScalarType::I32 => v as i32 as i64,
                ScalarType::U64 | ScalarType::I64 => v,
                _ => return Err(err(e, format!("cast to `{ty}` in a constant expression")).help("cast to an integer type")),
            })
        }
        _ => Err(err(e, "not a constant expression").help(
            "constant expressions use integer literals, const generics, arithmetic, shifts, bit operations and casts",
        )),
    }
}

// ---------------------------------------------------------------------------------------------------------
// CONST-OVERFLOW: constant arithmetic in the kernel body, in the type it is computed in.

/// Checks every integer constant expression of `f`'s body (literals, const generics with known `values`,
/// arithmetic, casts) in the type Rust would give it: a literal out of range, `+ - * / %` or negation that
/// overflows, division by zero or a shift past the width are `CONST-OVERFLOW` errors (rustc rejects them
/// too: `overflowing_literals`, `arithmetic_overflow`, `unconditional_panic`), instead of values wrapped
/// silently by the emitter. Values of loop variables (which wrap at run time as on the GPU) are not
/// constants here.
pub fn check_overflow(f: &Function, values: Option<&[i64]>) -> Vec<Diagnostic> {
    let mut o = Ov {
        f,
        values,
        scopes: vec![HashMap::new()],
        out: Vec::new(),
    };
    for p in &f.params {
        if let Type::Scalar(t) = p.ty {
            o.declare(&p.name.name, Some(t));
        }
    }
    o.block(&f.body);
    o.out
}

struct Ov<'a> {
    f: &'a Function,
    values: Option<&'a [i64]>,
    scopes: Vec<HashMap<String, Option<ScalarType>>>,
    out: Vec<Diagnostic>,
}

pub(crate) fn range(t: ScalarType) -> (i128, i128) {
    match t {
        ScalarType::U32 => (0, u32::MAX as i128),
        ScalarType::I32 => (i32::MIN as i128, i32::MAX as i128),
        ScalarType::U64 => (0, u64::MAX as i128),
        _ => (i64::MIN as i128, i64::MAX as i128),
    }
}

fn wrap(v: i128, t: ScalarType) -> i128 {
    match t {
        ScalarType::U32 => v as u32 as i128,
        ScalarType::I32 => v as i32 as i128,
        ScalarType::U64 => v as u64 as i128,
        _ => v as i64 as i128,
    }
}

fn overflow(e: &Expr, msg: String) -> Diagnostic {
    Diagnostic::new("CONST-OVERFLOW", e.span, msg).help(
        "rustc rejects this constant expression too: compute it in a wider type (`as i64`, `as u64`) or change the value",
    )
}

fn is_arith(op: BinOp) -> bool {
    use BinOp::*;
    matches!(
        op,
        Add | Sub | Mul | Div | Rem | BitAnd | BitOr | BitXor | Shl | Shr
    )
}

impl Ov<'_> {
    fn declare(&mut self, name: &str, t: Option<ScalarType>) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), t);
        }
    }

    fn var_ty(&self, name: &str) -> Option<ScalarType> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name))
            .copied()
            .flatten()
    }

    /// A const generic (never shadowed: Rust forbids `let` shadowing them) with its value when known.
    fn konst(&self, name: &str) -> Option<(ScalarType, Option<i64>)> {
        let i = self
            .f
            .const_params
            .iter()
            .position(|c| c.name.name == name)?;
        Some((
            self.f.const_params[i].ty,
            self.values.and_then(|v| v.get(i).copied()),
        ))
    }

    /// An integer constant expression whose value is known.
    fn is_const(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Lit(Lit::Int(_, t)) => t.is_none_or(|t| t.is_int()),
            ExprKind::Var(id) => self.konst(&id.name).is_some_and(|(_, v)| v.is_some()),
            ExprKind::Unary { expr, .. } => self.is_const(expr),
            ExprKind::Binary { op, lhs, rhs } => {
                is_arith(*op) && self.is_const(lhs) && self.is_const(rhs)
            }
            ExprKind::Cast { expr, ty } => ty.is_int() && self.is_const(expr),
            _ => false,
        }
    }

    /// The type a constant expression has by itself (suffixes, const generics, casts).
    fn own_ty(&self, e: &Expr) -> Option<ScalarType> {
        match &e.kind {
            ExprKind::Lit(Lit::Int(_, t)) => *t,
            ExprKind::Var(id) => self.konst(&id.name).map(|k| k.0).or(self.var_ty(&id.name)),
            ExprKind::Cast { ty, .. } => Some(*ty),
            ExprKind::Unary { expr, .. } => self.own_ty(expr),
            ExprKind::Binary { op, lhs, rhs } if is_arith(*op) => {
                if matches!(op, BinOp::Shl | BinOp::Shr) {
                    self.own_ty(lhs)
                } else {
                    self.own_ty(lhs).or_else(|| self.own_ty(rhs))
                }
            }
            _ => None,
        }
    }

    fn eval(&self, e: &Expr, t: ScalarType, negated: bool) -> Result<Option<i128>, Diagnostic> {
        if !t.is_int() {
            return Ok(None);
        }
        let (lo, hi) = range(t);
        match &e.kind {
            ExprKind::Lit(Lit::Int(v, sfx)) => {
                let ty = sfx.unwrap_or(t);
                if !ty.is_int() {
                    return Ok(None);
                }
                let (_, hi) = range(ty);
                let v = i128::try_from(*v).unwrap_or(i128::MAX);
                // `-2147483648i32`: the literal is the magnitude of MIN under a negation.
                if v > hi && !(negated && ty.is_signed() && v == hi + 1) {
                    return Err(overflow(
                        e,
                        format!("literal out of range for {ty}: the largest is {hi}"),
                    ));
                }
                Ok(Some(v))
            }
            ExprKind::Var(id) => Ok(self.konst(&id.name).and_then(|(_, v)| v).map(|v| v as i128)),
            ExprKind::Unary {
                op: UnOp::Neg,
                expr,
            } => {
                let Some(x) = self.eval(expr, t, true)? else {
                    return Ok(None);
                };
                let r = -x;
                if r < lo || r > hi {
                    return Err(overflow(
                        e,
                        format!("negating {x} overflows {t} (range {lo}..={hi})"),
                    ));
                }
                Ok(Some(r))
            }
            ExprKind::Unary {
                op: UnOp::Not,
                expr,
            } => Ok(self.eval(expr, t, false)?.map(|x| wrap(!x, t))),
            ExprKind::Binary { op, lhs, rhs } if is_arith(*op) => {
                let shift = matches!(op, BinOp::Shl | BinOp::Shr);
                let Some(a) = self.eval(lhs, t, false)? else {
                    return Ok(None);
                };
                let bt = if shift {
                    self.own_ty(rhs).unwrap_or(ScalarType::I32)
                } else {
                    t
                };
                let Some(b) = self.eval(rhs, bt, false)? else {
                    return Ok(None);
                };
                let bits = t.size() as i128 * 8;
                let r = match op {
                    BinOp::Add => a + b,
                    BinOp::Sub => a - b,
                    BinOp::Mul => a * b,
                    BinOp::Div | BinOp::Rem if b == 0 => {
                        return Err(overflow(
                            e,
                            format!(
                                "{} by zero in a constant expression",
                                if *op == BinOp::Div {
                                    "division"
                                } else {
                                    "remainder"
                                }
                            ),
                        ))
                    }
                    BinOp::Div | BinOp::Rem if a == lo && b == -1 && t.is_signed() => {
                        return Err(overflow(
                            e,
                            format!(
                                "`{a} {} -1` overflows {t}",
                                if *op == BinOp::Div { "/" } else { "%" }
                            ),
                        ))
                    }
                    BinOp::Div => a / b,
                    BinOp::Rem => a % b,
                    BinOp::Shl | BinOp::Shr if !(0..bits).contains(&b) => {
                        return Err(overflow(
                            e,
                            format!("shift by {b} overflows {t} ({bits} bits)"),
                        ))
                    }
                    BinOp::Shl => return Ok(Some(wrap(((a as u128) << b) as i128, t))),
                    BinOp::Shr => a >> b,
                    BinOp::BitAnd => a & b,
                    BinOp::BitOr => a | b,
                    _ => a ^ b,
                };
                if r < lo || r > hi {
                    return Err(overflow(
                        e,
                        format!("this constant is {r}, which overflows {t} (range {lo}..={hi})"),
                    ));
                }
                Ok(Some(r))
            }
            ExprKind::Cast { expr, ty } if ty.is_int() => {
                let it = self.own_ty(expr).unwrap_or(ScalarType::I32);
                Ok(self.eval(expr, it, false)?.map(|x| wrap(x, *ty)))
            }
            _ => Ok(None),
        }
    }

    /// Checks `e`, which flows where type `want` is expected (when known).
    fn expr(&mut self, e: &Expr, want: Option<ScalarType>) {
        if self.is_const(e) {
            match self.own_ty(e).or(want) {
                Some(t) => {
                    if let Err(d) = self.eval(e, t, false) {
                        self.out.push(d);
                    }
                }
                // Type still open (it adopts what it meets): a literal wider than every integer type is
                // already wrong.
                None => self.too_wide(e),
            }
            return;
        }
        match &e.kind {
            ExprKind::Binary { op, lhs, rhs } => {
                let shift = matches!(op, BinOp::Shl | BinOp::Shr);
                let t = if shift {
                    // A shift's left side has the result's type, never the amount's (`-1024 >> k`).
                    want.or_else(|| self.known(lhs))
                } else if is_arith(*op) {
                    want.or_else(|| self.known(lhs)).or_else(|| self.known(rhs))
                } else if matches!(op, BinOp::And | BinOp::Or) {
                    None
                } else {
                    self.known(lhs).or_else(|| self.known(rhs))
                };
                self.expr(lhs, t);
                self.expr(rhs, if shift { None } else { t });
            }
            ExprKind::Unary { expr, .. } => self.expr(expr, want),
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                self.expr(cond, None);
                self.expr(then_value, want);
                self.expr(else_value, want);
            }
            _ => {
                for s in crate::sync::infer::sub_exprs(e) {
                    self.expr(s, None);
                }
            }
        }
    }

    fn too_wide(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Lit(Lit::Int(v, _)) if *v > u64::MAX as u128 => self.out.push(overflow(
                e,
                format!(
                    "literal {v} is out of range for every integer type (the largest is u64::MAX)"
                ),
            )),
            ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } => self.too_wide(expr),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.too_wide(lhs);
                self.too_wide(rhs);
            }
            _ => {}
        }
    }

    /// The type of a non-constant operand when it is plain to see (a typed variable, a cast, a suffix).
    fn known(&self, e: &Expr) -> Option<ScalarType> {
        match &e.kind {
            ExprKind::Var(id) => self.konst(&id.name).map(|k| k.0).or(self.var_ty(&id.name)),
            ExprKind::Lit(Lit::Int(_, t)) => *t,
            ExprKind::Cast { ty, .. } => Some(*ty),
            ExprKind::Unary { expr, .. } => self.known(expr),
            ExprKind::Binary {
                op: BinOp::Shl | BinOp::Shr,
                lhs,
                ..
            } => self.known(lhs),
            ExprKind::Binary { op, lhs, rhs } if is_arith(*op) => {
                self.known(lhs).or_else(|| self.known(rhs))
            }
            _ => None,
        }
    }

    fn block(&mut self, b: &Block) {
        self.scopes.push(HashMap::new());
        for s in &b.stmts {
            self.stmt(s);
        }
        if let Some(t) = &b.tail {
            self.expr(t, None);
        }
        self.scopes.pop();
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Let { name, ty, init, .. } => {
                let t = match ty {
                    Some(Type::Scalar(t)) => Some(*t),
                    Some(_) => None,
                    // Rust's (and Prism's) default for an unsuffixed integer literal: i32.
                    None => init.as_ref().and_then(|e| {
                        if self.is_const(e) {
                            self.own_ty(e).or(Some(ScalarType::I32))
                        } else {
                            self.known(e)
                        }
                    }),
                };
                if let Some(e) = init {
                    self.expr(e, t);
                }
                self.declare(&name.name, t);
            }
            StmtKind::Assign { place, value, .. } => {
                let t = match &place.kind {
                    ExprKind::Var(id) => self.var_ty(&id.name),
                    _ => None,
                };
                self.expr(place, None);
                self.expr(value, t);
            }
            StmtKind::Expr(e) => self.expr(e, None),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.expr(cond, None);
                self.block(then_block);
                if let Some(b) = else_block {
                    self.block(b);
                }
            }
            StmtKind::While { cond, body } => {
                self.expr(cond, None);
                self.block(body);
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                // Unsuffixed literal bounds adopt the type of what the variable meets: unknown here.
                let t = self.known(start).or_else(|| self.known(end));
                self.expr(start, t);
                self.expr(end, t);
                if let Some(st) = step {
                    // `step_by` takes a usize.
                    self.expr(st, Some(ScalarType::U64));
                }
                self.scopes.push(HashMap::new());
                self.declare(&var.name, t);
                self.block(body);
                self.scopes.pop();
            }
            StmtKind::Group { body, .. }
            | StmtKind::Claim { body, .. }
            | StmtKind::Async { body, .. }
            | StmtKind::Peer { body, .. }
            | StmtKind::Ring { body, .. }
            | StmtKind::RingUse { body, .. }
            | StmtKind::Unsafe { body } => self.block(body),
            StmtKind::Split { arms, .. } => arms.iter().for_each(|a| self.block(&a.body)),
            StmtKind::Partition { index, body, .. } => {
                self.scopes.push(HashMap::new());
                for p in &index.params {
                    self.declare(&p.name, Some(ScalarType::U32));
                }
                self.expr(&index.body, None);
                self.scopes.pop();
                self.block(body);
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Barrier(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Ident;
    use proc_macro2::Span;

    fn lit(v: u128) -> Expr {
        Expr {
            kind: ExprKind::Lit(Lit::Int(v, None)),
            span: Span::call_site(),
        }
    }
    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr {
            kind: ExprKind::Binary {
                op,
                lhs: Box::new(a),
                rhs: Box::new(b),
            },
            span: Span::call_site(),
        }
    }
    fn var(n: &str) -> Expr {
        Expr {
            kind: ExprKind::Var(Ident {
                name: n.into(),
                span: Span::call_site(),
            }),
            span: Span::call_site(),
        }
    }

    #[test]
    fn arithmetic_and_names() {
        let e = bin(
            BinOp::Mul,
            bin(BinOp::Add, var("BM"), lit(2)),
            bin(BinOp::Shl, lit(1), lit(4)),
        );
        let v = eval_const(&e, &|n| (n == "BM").then_some(62)).unwrap();
        assert_eq!(v, 64 * 16);
    }

    #[test]
    fn errors() {
        assert_eq!(
            eval_const(&bin(BinOp::Div, lit(1), lit(0)), &|_| None)
                .unwrap_err()
                .rule,
            "CONST"
        );
        assert!(eval_const(&var("X"), &|_| None).is_err());
        assert!(eval_const(&bin(BinOp::Mul, lit(1 << 62), lit(4)), &|_| None).is_err());
        assert!(eval_const(&bin(BinOp::Shl, lit(1), lit(70)), &|_| None).is_err());
        assert!(eval_const(&lit(u128::MAX), &|_| None).is_err());
    }
}
