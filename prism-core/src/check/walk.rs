//! Walks over the syntax tree that several rules share: the variables an expression names, every statement
//! of a block, every call.

use super::*;

pub(super) fn walk_vars(e: &Expr, f: &mut dyn FnMut(&str)) {
    walk_var_idents(e, &mut |id| f(&id.name));
}

pub(super) fn walk_var_idents(e: &Expr, f: &mut dyn FnMut(&Ident)) {
    walk_exprs(e, &mut |x| {
        if let ExprKind::Var(id) = &x.kind {
            f(id)
        }
    });
}

/// Every expression of `e`, itself first (an `asm!`'s operands are not expressions of the program).
pub(super) fn walk_exprs(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Var(_) | ExprKind::Lit(_) | ExprKind::Asm { .. } => {}
        ExprKind::Index { base, indices } => {
            walk_exprs(base, f);
            indices.iter().for_each(|i| walk_exprs(i, f));
        }
        ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } | ExprKind::Ref { expr, .. } => {
            walk_exprs(expr, f)
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            walk_exprs(lhs, f);
            walk_exprs(rhs, f);
        }
        ExprKind::Call { args, generics, .. } => {
            generics.iter().for_each(|a| walk_exprs(a, f));
            args.iter().for_each(|a| walk_exprs(a, f));
        }
        ExprKind::MethodCall { recv, args, .. } => {
            walk_exprs(recv, f);
            args.iter().for_each(|a| walk_exprs(a, f));
        }
        ExprKind::ArrayLit(items) => items.iter().for_each(|a| walk_exprs(a, f)),
        ExprKind::ArrayRepeat { value, len } => {
            walk_exprs(value, f);
            walk_exprs(len, f);
        }
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => {
            walk_exprs(cond, f);
            walk_exprs(then_value, f);
            walk_exprs(else_value, f);
        }
    }
}

pub(super) fn walk_block(b: &Block, f: &mut dyn FnMut(&Stmt)) {
    for s in &b.stmts {
        f(s);
        match &s.kind {
            StmtKind::If {
                then_block,
                else_block,
                ..
            } => {
                walk_block(then_block, f);
                if let Some(e) = else_block {
                    walk_block(e, f);
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
            | StmtKind::Unsafe { body } => walk_block(body, f),
            StmtKind::Split { arms, .. } => arms.iter().for_each(|a| walk_block(&a.body, f)),
            _ => {}
        }
    }
}

pub(crate) fn walk_calls(b: &Block, f: &mut dyn FnMut(&str, &Expr)) {
    fn in_expr(e: &Expr, f: &mut dyn FnMut(&str, &Expr)) {
        if let ExprKind::Call { path, args, .. } = &e.kind {
            if let Some(n) = path.last() {
                f(&n.name, e);
            }
            args.iter().for_each(|a| in_expr(a, f));
        }
    }
    walk_block(b, &mut |s| match &s.kind {
        StmtKind::Expr(e) => in_expr(e, f),
        StmtKind::Let { init: Some(e), .. } => in_expr(e, f),
        StmtKind::Assign { value, .. } => in_expr(value, f),
        _ => {}
    });
}

/// Whether `b`, or a function it calls (its body from `body_of`, followed up to 16 calls deep), calls a
/// function `hit` names: an intrinsic reached through device functions.
pub(crate) fn reaches_call<'a>(
    b: &Block,
    body_of: &dyn Fn(&str) -> Option<&'a Block>,
    hit: &dyn Fn(&str) -> bool,
    depth: u32,
) -> bool {
    let mut found = false;
    walk_calls(b, &mut |name, _| {
        found = found
            || hit(name)
            || (depth < 16
                && body_of(name).is_some_and(|c| reaches_call(c, body_of, hit, depth + 1)));
    });
    found
}

/// Whether `b`, or a function it calls (followed as [`reaches_call`] does), has a statement `hit` names.
pub(crate) fn reaches_stmt<'a>(
    b: &Block,
    body_of: &dyn Fn(&str) -> Option<&'a Block>,
    hit: &dyn Fn(&Stmt) -> bool,
    depth: u32,
) -> bool {
    let mut found = false;
    walk_block(b, &mut |s| found = found || hit(s));
    walk_calls(b, &mut |name, _| {
        found = found
            || (depth < 16
                && body_of(name).is_some_and(|c| reaches_stmt(c, body_of, hit, depth + 1)));
    });
    found
}

/// The `p[i]` inside an `&p[i]` asm address operand.
pub(super) fn asm_address_target(e: &Expr) -> &Expr {
    match &e.kind {
        ExprKind::Ref { expr, .. } => expr,
        _ => e,
    }
}
