//! Integer constant expressions: perspective sizes, `smem`/`threads`/`blocks`, array lengths, loop bounds
//! after const-generic substitution. Used by `parse`, `check` and `emit`.

use crate::ast::{BinOp, Expr, ExprKind, Lit, ScalarType, UnOp};
use crate::Diagnostic;

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
