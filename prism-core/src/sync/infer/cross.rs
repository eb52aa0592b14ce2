//! Views of block-local memory that reach past their unit's elements at run time.
//!
//! T-PARTITION proves that the units of a `partition` keep to their own elements only where it can evaluate
//! the indices (RULES.md: constants, counters of constant loops, …). A view indexed at a value known only at
//! run time (`st[stride]` through `|k| t + k`, the CUDA-style in-place tree reduction) may read or write the
//! elements of another unit, which the view's own level (one thread) never orders. Such a view gets a
//! *shadow* level at the viewed memory's threads: every access through the view counts there too, so a
//! barrier over those threads goes between conflicting accesses wherever one can (between two `group`s in
//! the partition's code), as CUDA's `__syncthreads()` between the levels. Where none can (both accesses in
//! one thread's code), nothing is placed and nothing is reported: the indices may well be the unit's own,
//! and the emulator's race detector reports the accesses that are not.

use super::*;

impl Infer<'_> {
    /// The shadow level for the view `y` of `x` that partition `s` creates, when it needs one.
    pub(super) fn shadow(&mut self, s: &Stmt, key: &[usize], x: usize, y: usize) -> Option<usize> {
        let StmtKind::Partition {
            index,
            new_name,
            body,
            ..
        } = &s.kind
        else {
            return None;
        };
        let (outer, inner) = (self.levels[x].at, self.levels[y].at);
        // Memory of several blocks has no barrier (SYNC-GRID's business); one thread orders itself.
        if unsynchronizable(outer) || outer == Perspective::thread(1) || !covers(outer, inner) {
            return None;
        }
        if outer == inner || is_identity(index) || !reaches_at_run_time(body, &new_name.name) {
            return None;
        }
        let mut k = key.to_vec();
        k.push(usize::MAX - 2);
        let c = self.level(k, &new_name.name, outer, None, false);
        self.levels[c].soft = true;
        self.levels[y].cross = Some(c);
        Some(c)
    }

    /// The shadow of level `t`, outside callee summaries (whose tokens are parameter indices, not levels).
    pub(super) fn cross_of(&self, t: usize) -> Option<usize> {
        if self.sum_depth > 0 {
            return None;
        }
        self.levels.get(t).and_then(|l| l.cross)
    }

    /// Records access `a` to token `t`, and to its shadow level when it has one.
    pub(super) fn push_acc(&self, out: &mut Vec<(usize, Acc)>, t: usize, a: Acc) {
        out.push((t, a));
        if let Some(c) = self.cross_of(t) {
            out.push((c, a));
        }
    }
}

/// `|x| x`: every unit sees the same elements, so the view is a claim (CLAIM-ONE-BRANCH), not a partition.
fn is_identity(index: &IndexFn) -> bool {
    match (&index.params[..], &index.body.kind) {
        ([p], ExprKind::Var(v)) => p.name == v.name,
        _ => false,
    }
}

/// Whether `body` indexes `name` at a value that is not an integer constant, or passes it to a call.
fn reaches_at_run_time(body: &Block, name: &str) -> bool {
    fn constant(e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Lit(_) => true,
            ExprKind::Cast { expr, .. } | ExprKind::Unary { expr, .. } => constant(expr),
            ExprKind::Binary { lhs, rhs, .. } => constant(lhs) && constant(rhs),
            _ => false,
        }
    }
    fn is_name(e: &Expr, name: &str) -> bool {
        match &e.kind {
            ExprKind::Var(v) => v.name == name,
            ExprKind::Ref { expr, .. } => is_name(expr, name),
            _ => false,
        }
    }
    fn expr(e: &Expr, name: &str) -> bool {
        let here = match &e.kind {
            ExprKind::Index { base, indices } => {
                is_name(base, name) && !indices.iter().all(constant)
            }
            ExprKind::Call { args, .. } => args.iter().any(|a| is_name(a, name)),
            _ => false,
        };
        here || sub_exprs(e).into_iter().any(|s| expr(s, name))
    }
    fn block(b: &Block, name: &str) -> bool {
        b.stmts.iter().any(|s| {
            stmt_exprs(s).into_iter().any(|e| expr(e, name))
                || child_blocks(s).into_iter().any(|c| block(c, name))
        }) || b.tail.as_ref().is_some_and(|t| expr(t, name))
    }
    block(body, name)
}
