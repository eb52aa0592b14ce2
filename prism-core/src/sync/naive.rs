//! The naive synchronization policy ([`super::SyncPolicy::Naive`]), kept for comparison and as a fallback.
//!
//! # Policy (naive, correct; see `docs/SYNC.md`)
//!
//! Every `partition` / `claim` / `async_` scope gets a barrier as its first and as its last statement, over
//! the threads of one unit of the perspective of the *target* (the original name): all threads that may
//! touch the data through the original name before the scope, or through the new name inside it, meet.
//! The end of an `async_` scope also waits for the thread's outstanding `cp.async` copies first.
//!
//! * `thread[1]` targets need no barrier (one thread).
//! * `grid[n]` and `block[n > 1]` targets cannot be synchronized inside a kernel: no barrier is inserted, and
//!   a later use of the original name in the same function is rejected with rule `SYNC-GRID`, since nothing
//!   orders it after the writes made through the partitioned name.
//!
//! [`super::infer`] replaces this by default with the inference of paper 000 §5.

use super::unsynchronizable;
use crate::ast::{
    Barrier, Block, Expr, ExprKind, Function, Ident, Perspective, Stmt, StmtKind, Type,
};
use crate::Diagnostic;
use proc_macro2::Span;
use std::collections::HashMap;

/// Returns a copy of `f` with explicit barriers at the start and end of each `partition`, `claim` and
/// `async_` scope (policy in the module documentation), or `SYNC-GRID` diagnostics.
pub fn insert_naive(f: &Function) -> Result<Function, Vec<Diagnostic>> {
    let top = f
        .requires
        .first()
        .map(|p| p.perspective)
        .unwrap_or(Perspective::grid(1));
    let mut pass = Pass {
        scopes: vec![HashMap::new()],
        code: top,
        unsynced: HashMap::new(),
        diags: Vec::new(),
    };
    for p in &f.params {
        let at = match p.ty {
            // A caller's register array is always per thread.
            Type::ArrayRef { .. } => Perspective::thread(1),
            _ => p.at.map(|a| a.perspective).unwrap_or(top),
        };
        pass.declare(&p.name.name, at);
    }
    let mut out = f.clone();
    pass.block(&mut out.body);
    if pass.diags.is_empty() {
        Ok(out)
    } else {
        Err(pass.diags)
    }
}

struct Pass {
    /// Perspective of every visible name, innermost scope last.
    scopes: Vec<HashMap<String, Perspective>>,
    /// Current code perspective.
    code: Perspective,
    /// Names partitioned/claimed at grid level: further uses are `SYNC-GRID` errors (value: the scope's span).
    unsynced: HashMap<String, (Span, Perspective)>,
    diags: Vec<Diagnostic>,
}

impl Pass {
    fn declare(&mut self, name: &str, p: Perspective) {
        // A new binding of the same name is a different variable: it is not the partitioned one.
        self.unsynced.remove(name);
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), p);
        }
    }

    fn lookup(&self, name: &str) -> Option<Perspective> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn use_name(&mut self, id: &Ident) {
        if let Some((span, p)) = self.unsynced.get(&id.name) {
            self.diags.push(
                Diagnostic::new(
                    "SYNC-GRID",
                    id.span,
                    format!(
                        "`{}` is used after a partition/claim of it at perspective {p}, which no barrier can \
                         synchronize",
                        id.name
                    ),
                )
                .note(*span, format!("`{}` was partitioned here; its threads span more than one block", id.name))
                .help("finish the work in one kernel without touching the original name again, or split the work into two kernels"),
            );
        }
    }

    fn block(&mut self, b: &mut Block) {
        self.scopes.push(HashMap::new());
        for s in &mut b.stmts {
            self.stmt(s);
        }
        if let Some(t) = &b.tail {
            self.expr(t);
        }
        self.scopes.pop();
    }

    fn with_code(&mut self, code: Perspective, b: &mut Block) {
        let saved = std::mem::replace(&mut self.code, code);
        self.block(b);
        self.code = saved;
    }

    fn stmt(&mut self, s: &mut Stmt) {
        match &mut s.kind {
            StmtKind::Let {
                name, ty, at, init, ..
            } => {
                if let Some(e) = init {
                    self.expr(e);
                }
                let p = match ty {
                    Some(Type::Shared { .. }) => Perspective::block(1),
                    _ => at.map(|a| a.perspective).unwrap_or(self.code),
                };
                self.declare(&name.name.clone(), p);
            }
            StmtKind::Assign { place, value, .. } => {
                self.expr(place);
                self.expr(value);
            }
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.expr(cond);
                self.block(then_block);
                if let Some(b) = else_block {
                    self.block(b);
                }
            }
            StmtKind::While { cond, body } => {
                self.expr(cond);
                self.block(body);
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                self.expr(start);
                self.expr(end);
                if let Some(e) = step {
                    self.expr(e);
                }
                self.scopes.push(HashMap::new());
                let code = self.code;
                self.declare(&var.name.clone(), code);
                self.block(body);
                self.scopes.pop();
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Barrier(_) => {}
            StmtKind::Group { at, body } => self.with_code(at.perspective, body),
            StmtKind::Split { level, arms, .. } => {
                let level = *level;
                for arm in arms {
                    self.with_code(Perspective::new(level, arm.size), &mut arm.body);
                }
            }
            StmtKind::Partition {
                target,
                at,
                index,
                new_name,
                body,
            } => {
                self.use_name(target);
                self.expr(&index.body);
                let at = at.perspective;
                self.scope(
                    target.clone(),
                    new_name.name.clone(),
                    at,
                    false,
                    body,
                    s.span,
                );
            }
            StmtKind::Claim {
                target,
                at,
                new_name,
                body,
            } => {
                self.use_name(target);
                let at = at.perspective;
                self.scope(
                    target.clone(),
                    new_name.name.clone(),
                    at,
                    false,
                    body,
                    s.span,
                );
            }
            StmtKind::Async {
                target,
                new_name,
                body,
            } => {
                self.use_name(target);
                let at = self.lookup(&target.name).unwrap_or(self.code);
                self.scope(
                    target.clone(),
                    new_name.name.clone(),
                    at,
                    true,
                    body,
                    s.span,
                );
            }
            StmtKind::Unsafe { body } => self.block(body),
            // Rings order their slots with mbarriers (emit); the naive policy adds nothing inside.
            StmtKind::Ring { targets, body, .. } => {
                for t in targets {
                    self.use_name(t);
                }
                self.block(body)
            }
            StmtKind::RingUse { body, .. } => self.block(body),
            StmtKind::Peer { target, body, .. } => {
                self.use_name(target);
                self.block(body)
            }
        }
    }

    /// Inserts the scope's two barriers (policy above) and walks its body.
    fn scope(
        &mut self,
        target: Ident,
        new_name: String,
        new_at: Perspective,
        is_async: bool,
        body: &mut Block,
        span: Span,
    ) {
        // Unknown names are the checker's business; treat them as the code perspective.
        let tp = self.lookup(&target.name).unwrap_or(self.code);
        let needs = !(unsynchronizable(tp) || tp == Perspective::thread(1));
        if needs {
            body.stmts.insert(0, barrier_stmt(tp, false, body.span));
            body.stmts.push(barrier_stmt(tp, is_async, body.span));
        }
        self.scopes.push(HashMap::new());
        self.declare(&new_name, new_at);
        // The original name is hidden inside (checked elsewhere); the body sees the new name only.
        self.block(body);
        self.scopes.pop();
        if unsynchronizable(tp) {
            self.unsynced.insert(target.name.clone(), (span, tp));
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Lit(_) | ExprKind::Asm { .. } => {
                if let ExprKind::Asm { operands, .. } = &e.kind {
                    for o in operands {
                        self.expr(&o.expr);
                    }
                }
            }
            ExprKind::Var(id) => self.use_name(id),
            ExprKind::Index { base, indices } => {
                self.expr(base);
                indices.iter().for_each(|i| self.expr(i));
            }
            ExprKind::Unary { expr, .. }
            | ExprKind::Cast { expr, .. }
            | ExprKind::Ref { expr, .. } => self.expr(expr),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::Call { generics, args, .. } => {
                generics.iter().for_each(|g| self.expr(g));
                args.iter().for_each(|a| self.expr(a));
            }
            ExprKind::MethodCall { recv, args, .. } => {
                self.expr(recv);
                args.iter().for_each(|a| self.expr(a));
            }
            ExprKind::ArrayLit(v) => v.iter().for_each(|a| self.expr(a)),
            ExprKind::ArrayRepeat { value, len } => {
                self.expr(value);
                self.expr(len);
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                self.expr(cond);
                self.expr(then_value);
                self.expr(else_value);
            }
        }
    }
}

fn barrier_stmt(at: Perspective, wait_async: bool, span: Span) -> Stmt {
    Stmt {
        kind: StmtKind::Barrier(Barrier { at, wait_async }),
        span,
    }
}
