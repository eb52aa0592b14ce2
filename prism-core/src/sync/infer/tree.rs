//! Walking the tree for the inference: calls, child blocks, a statement's expressions, and merging barrier
//! sites that meet at one point.

use super::*;

/// Names of the functions `f` calls (device functions and intrinsics alike).
pub(crate) fn called_names(f: &Function) -> Vec<String> {
    let mut out = Vec::new();
    fn expr(e: &Expr, out: &mut Vec<String>) {
        match &e.kind {
            ExprKind::Call {
                path,
                generics,
                args,
            } => {
                if let Some(p) = path.last() {
                    if lookup(&p.name).is_none() {
                        out.push(p.name.clone());
                    }
                }
                generics.iter().chain(args).for_each(|a| expr(a, out));
            }
            _ => sub_exprs(e).into_iter().for_each(|a| expr(a, out)),
        }
    }
    fn block(b: &Block, out: &mut Vec<String>) {
        for s in &b.stmts {
            stmt_exprs(s).into_iter().for_each(|e| expr(e, out));
            child_blocks(s).into_iter().for_each(|c| block(c, out));
        }
        if let Some(t) = &b.tail {
            expr(t, out);
        }
    }
    block(&f.body, &mut out);
    out
}

pub(super) fn block_at<'b>(b: &'b mut Block, path: &[usize]) -> Option<&'b mut Block> {
    if path.is_empty() {
        return Some(b);
    }
    let (si, ci) = (path[0], *path.get(1)?);
    let s = b.stmts.get_mut(si)?;
    let child = match &mut s.kind {
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => {
            if ci == 0 {
                then_block
            } else {
                else_block.as_mut()?
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
        | StmtKind::Unsafe { body } => body,
        StmtKind::Split { arms, .. } => &mut arms.get_mut(ci)?.body,
        _ => return None,
    };
    block_at(child, &path[2..])
}

pub(super) fn child_blocks(s: &Stmt) -> Vec<&Block> {
    match &s.kind {
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => {
            let mut v = vec![then_block];
            v.extend(else_block.iter());
            v
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
        | StmtKind::Unsafe { body } => vec![body],
        StmtKind::Split { arms, .. } => arms.iter().map(|a| &a.body).collect(),
        _ => Vec::new(),
    }
}

/// Expressions evaluated by the statement itself (not its child blocks).
pub(super) fn stmt_exprs(s: &Stmt) -> Vec<&Expr> {
    match &s.kind {
        StmtKind::Let { init, .. } => init.iter().collect(),
        StmtKind::Assign { place, value, .. } => vec![place, value],
        StmtKind::Expr(e) => vec![e],
        StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => vec![cond],
        StmtKind::For {
            start, end, step, ..
        } => {
            let mut v = vec![start, end];
            v.extend(step.iter());
            v
        }
        StmtKind::Partition { index, .. } => vec![&*index.body],
        _ => Vec::new(),
    }
}

pub(crate) fn sub_exprs(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => Vec::new(),
        ExprKind::Asm { operands, .. } => operands.iter().map(|o| &o.expr).collect(),
        ExprKind::Index { base, indices } => {
            let mut v = vec![&**base];
            v.extend(indices.iter());
            v
        }
        ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } | ExprKind::Ref { expr, .. } => {
            vec![expr]
        }
        ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
        ExprKind::Call { generics, args, .. } => generics.iter().chain(args).collect(),
        ExprKind::MethodCall { recv, args, .. } => {
            let mut v = vec![&**recv];
            v.extend(args.iter());
            v
        }
        ExprKind::ArrayLit(v) => v.iter().collect(),
        ExprKind::ArrayRepeat { value, len } => vec![value, len],
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => vec![cond, then_value, else_value],
    }
}

/// Sites at one position merge: the broadest barrier that covers the others survives.
pub(super) fn merge_sites(mut sites: Vec<BarrierSite>) -> Vec<BarrierSite> {
    // Stable sort keeps, at one position, the order in which the walk placed them.
    sites.sort_by(|a, b| a.pos.cmp(&b.pos));
    let mut out: Vec<BarrierSite> = Vec::new();
    for s in sites {
        if let Some(last) = out
            .iter_mut()
            .rev()
            .take_while(|l| l.pos == s.pos)
            .find(|l| covers(l.barrier.at, s.barrier.at) || covers(s.barrier.at, l.barrier.at))
        {
            if covers(s.barrier.at, last.barrier.at) {
                last.barrier.at = s.barrier.at;
            }
            last.barrier.wait_async |= s.barrier.wait_async;
            for r in s.reasons {
                if !last.reasons.contains(&r) {
                    last.reasons.push(r);
                }
            }
            continue;
        }
        out.push(s);
    }
    out
}

/// A barrier over one unit of `outer` orders the threads of each unit of `inner` (§3.2 ordering).
pub(super) fn covers(outer: Perspective, inner: Perspective) -> bool {
    inner.narrower_eq_syntactic(outer)
}
