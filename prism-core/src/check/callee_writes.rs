//! [T-PARTITION] through device functions: the writes a callee surely makes through a pointer parameter at
//! indices known at compile time, so that a view passed to it is checked as if the caller wrote them
//! (`fn put(x: *mut f32) { x[0] = 1.0; }` called by every thread with a global `|x| x` view races on
//! element 0; with `|j| t * 2 + j`, `for i in 0..4 { x[i] = .. }` reaches the next thread's elements).
//!
//! Only writes every call makes are collected: statements of the body itself and of `for` loops over
//! constant ranges without `break`/`continue` (not under an `if`, `while`, split arm or nested view), whose
//! indices are constants, const generics, immutable `let` constants or those loops' counters; and, through
//! the parameter passed on as it is, the sure writes of the device functions it calls (a few levels deep).
//! Anything else the callee does with the parameter is not followed (the emulator's race detector sees it).

use super::stmt::leaves_early;
use super::*;

/// Most writes collected from one callee for one parameter (loops over constant ranges are unrolled).
const MAX_WRITES: usize = 256;
/// Most nested calls followed (a device function passing the parameter on to another).
const MAX_DEPTH: u32 = 4;
/// Most statements visited for one argument (constant loops are unrolled: `0..u32::MAX` must not hang
/// the compiler); past it the walk stops with what it has.
const MAX_VISITS: usize = 1 << 16;

/// One write a callee makes through a parameter: its indices, how many consecutive elements
/// (`store2`/`store4`), and where in the callee.
pub(super) struct CalleeWrite {
    pub(super) indices: Vec<i64>,
    pub(super) width: i128,
    pub(super) span: Span,
}

/// The writes `callee` surely makes through its parameter `param`; `consts` gives its const generics,
/// `deps` the device functions it may call.
pub(super) fn param_writes(
    callee: &Function,
    param: &str,
    consts: &dyn Fn(&str) -> Option<i64>,
    deps: &[Function],
) -> Vec<CalleeWrite> {
    let mut visits = MAX_VISITS;
    walk_callee(callee, param, consts, deps, (0, &mut visits))
}

fn walk_callee(
    callee: &Function,
    param: &str,
    consts: &dyn Fn(&str) -> Option<i64>,
    deps: &[Function],
    (depth, visits): (u32, &mut usize),
) -> Vec<CalleeWrite> {
    let mut w = Walk {
        param,
        consts,
        deps,
        depth,
        visits: *visits,
        env: Vec::new(),
        out: Vec::new(),
    };
    w.block(&callee.body);
    *visits = w.visits;
    w.out
}

struct Walk<'a> {
    param: &'a str,
    consts: &'a dyn Fn(&str) -> Option<i64>,
    deps: &'a [Function],
    depth: u32,
    /// Statements left to visit ([`MAX_VISITS`]).
    visits: usize,
    /// Names bound in the callee: their constant value, `None` when not constant (shadowing a const).
    env: Vec<(String, Option<i64>)>,
    out: Vec<CalleeWrite>,
}

impl Walk<'_> {
    fn eval(&self, e: &Expr) -> Option<i64> {
        let lookup = |n: &str| match self.env.iter().rev().find(|(m, _)| m == n) {
            Some((_, v)) => *v,
            None => (self.consts)(n),
        };
        crate::consteval::eval_const(e, &lookup).ok()
    }

    fn is_param(&self, e: &Expr) -> bool {
        matches!(&e.kind, ExprKind::Var(id) if id.name == self.param)
    }

    fn push(&mut self, indices: &[Expr], width: i128, span: Span) {
        if self.out.len() >= MAX_WRITES {
            return;
        }
        if let Some(indices) = indices.iter().map(|e| self.eval(e)).collect() {
            self.out.push(CalleeWrite {
                indices,
                width,
                span,
            });
        }
    }

    /// A device function the parameter is passed on to, as it is: its sure writes through that parameter.
    fn nested_call(&mut self, path: &[Ident], generics: &[Expr], args: &[Expr]) {
        let Some(name) = path.last() else { return };
        let Some(dep) = self.deps.iter().find(|d| d.name.name == name.name) else {
            return;
        };
        if self.depth >= MAX_DEPTH || args.len() != dep.params.len() {
            return;
        }
        // Const arguments follow the type arguments.
        let values: Vec<Option<i64>> = dep
            .const_params
            .iter()
            .enumerate()
            .map(|(k, _)| {
                generics
                    .get(dep.type_params.len() + k)
                    .and_then(|g| self.eval(g))
            })
            .collect();
        let consts = |n: &str| {
            dep.const_params
                .iter()
                .position(|c| c.name.name == n)
                .and_then(|k| values[k])
        };
        for (a, p) in args.iter().zip(&dep.params) {
            let writable = matches!(
                p.ty,
                Type::Ptr { mutable: true, .. } | Type::Shared { mutable: true, .. }
            );
            if writable && self.is_param(a) {
                let mut visits = self.visits;
                let inner = walk_callee(
                    dep,
                    &p.name.name,
                    &consts,
                    self.deps,
                    (self.depth + 1, &mut visits),
                );
                self.visits = visits;
                let room = MAX_WRITES.saturating_sub(self.out.len());
                self.out.extend(inner.into_iter().take(room));
            }
        }
    }

    /// Walks `b`'s statements in order; `false` once the parameter's name is rebound (stop there).
    fn block(&mut self, b: &Block) -> bool {
        let mark = self.env.len();
        let mut go_on = true;
        for s in &b.stmts {
            if !self.stmt(s) {
                go_on = false;
                break;
            }
        }
        self.env.truncate(mark);
        go_on
    }

    fn stmt(&mut self, s: &Stmt) -> bool {
        if self.visits == 0 {
            return false;
        }
        self.visits -= 1;
        match &s.kind {
            StmtKind::Let {
                name,
                mutable,
                init,
                ..
            } => {
                if name.name == self.param {
                    return false;
                }
                let v = match (mutable, init) {
                    (false, Some(e)) => self.eval(e),
                    _ => None,
                };
                self.env.push((name.name.clone(), v));
            }
            StmtKind::Assign { place, .. } => {
                if let ExprKind::Index { base, indices } = &place.kind {
                    if self.is_param(base) {
                        self.push(indices, 1, s.span);
                    }
                }
            }
            StmtKind::Expr(e) => {
                if let ExprKind::Call {
                    path,
                    generics,
                    args,
                } = &e.kind
                {
                    let width = match path.last().map(|p| p.name.as_str()) {
                        Some("store2") => 2,
                        Some("store4") => 4,
                        _ => 0,
                    };
                    if width > 0 && args.len() == 3 && self.is_param(&args[0]) {
                        self.push(&args[1..2], width, s.span);
                    } else if width == 0 {
                        self.nested_call(path, generics, args);
                    }
                }
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } if !leaves_early(body) => {
                let (Some(a), Some(b)) = (self.eval(start), self.eval(end)) else {
                    return true;
                };
                let step = match step {
                    Some(e) => self.eval(e).filter(|&k| k > 0),
                    None => Some(1),
                };
                let Some(step) = step else { return true };
                let mut i = a;
                while i < b && self.out.len() < MAX_WRITES && self.visits > 0 {
                    // Each iteration costs a visit, an empty body too.
                    self.visits -= 1;
                    self.env.push((var.name.clone(), Some(i)));
                    let go_on = self.block(body);
                    self.env.pop();
                    if !go_on {
                        return false;
                    }
                    i = i.saturating_add(step);
                }
            }
            StmtKind::Unsafe { body } => return self.block(body),
            _ => {}
        }
        true
    }
}

impl Cx<'_> {
    /// A view passed to a writable pointer parameter of `callee`: the writes the callee surely makes
    /// through it are checked as the caller's, at the argument (T-PARTITION).
    pub(super) fn callee_writes(
        &mut self,
        fname: &Ident,
        callee: &Function,
        (a, p): (&Expr, &Param),
        consts: &dyn Fn(&str) -> Option<i64>,
    ) {
        let writable = matches!(
            p.ty,
            Type::Ptr { mutable: true, .. } | Type::Shared { mutable: true, .. }
        );
        let ExprKind::Var(id) = &a.kind else { return };
        let Some(vi) = self.lookup(&id.name).filter(|_| writable) else {
            return;
        };
        let v = self.vars[vi].clone();
        if (v.overlap.is_none() && v.layout.is_none()) || v.index_arity != 1 {
            return;
        }
        for w in param_writes(callee, &p.name.name, consts, self.deps) {
            let Some(lits) = w
                .indices
                .iter()
                .map(|&i| {
                    let i = u128::try_from(i).ok()?;
                    Some(Expr {
                        kind: ExprKind::Lit(Lit::Int(i, None)),
                        span: a.span,
                    })
                })
                .collect::<Option<Vec<_>>>()
            else {
                continue;
            };
            let shown = w
                .indices
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let what = format!(
                "passing `{}` to `{}`, which writes `{}[{shown}]`{},",
                v.name,
                fname.name,
                p.name.name,
                if w.width > 1 {
                    format!(" and the {} elements after it", w.width - 1)
                } else {
                    String::new()
                }
            );
            let before = self.errors.len();
            self.overlapping_write(&v, id.span, &what, Some(&lits));
            self.index_overlap(&v, id.span, &what, &lits, w.width);
            if self.errors.len() > before {
                // Spans of another crate's function do not point into this one.
                if callee.origin.is_none() {
                    if let Some(d) = self.errors.pop() {
                        self.errors.push(d.note(
                            w.span,
                            format!(
                                "the write, through `{}`'s parameter `{}`",
                                fname.name, p.name.name
                            ),
                        ));
                    }
                }
                return;
            }
        }
    }
}
