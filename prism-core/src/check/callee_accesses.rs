//! [T-PARTITION] through device functions: the writes and reads a callee surely makes through a pointer
//! parameter at indices known at compile time, so that a view passed to it is checked as if the caller
//! made them (`fn put(x: *mut f32) { x[0] = 1.0; }` called by every thread with a global `|x| x` view races
//! on element 0; with `|j| t * 2 + j`, `for i in 0..4 { x[i] = .. }` reaches the next thread's elements, and
//! so does a read of `x[2]` when the caller writes its own elements).
//!
//! Only accesses every call makes are collected: statements of the body itself and of `for` loops over
//! constant ranges without `break`/`continue` (not under an `if`, `while`, split arm or nested view, nor
//! the sides of an `if` value or the right of `&&`/`||`), whose indices are constants, const generics,
//! integer parameters the caller passes a known value (a constant, or each value of its constant loop's
//! counter), immutable `let` constants or those loops' counters; and, through the parameter passed on as it is, the
//! sure accesses of the device functions it calls (a few levels deep). Anything else the callee does with
//! the parameter is not followed (the emulator's race detector sees it).

use super::stmt::leaves_early;
use super::*;

/// Most accesses collected from one callee for one parameter (loops over constant ranges are unrolled).
const MAX_WRITES: usize = 256;
/// Most nested calls followed (a device function passing the parameter on to another).
const MAX_DEPTH: u32 = 4;
/// Most statements visited for one argument (constant loops are unrolled: `0..u32::MAX` must not hang
/// the compiler); past it the walk stops with what it has.
const MAX_VISITS: usize = 1 << 16;

/// One access a callee makes through a parameter: its indices, how many consecutive elements
/// (`store2`/`store4`, `load2`/`load4`), whether it reads, and where in the callee.
pub(super) struct CalleeAccess {
    pub(super) indices: Vec<i64>,
    pub(super) width: i128,
    pub(super) read: bool,
    pub(super) span: Span,
}

/// The accesses `callee` surely makes through its parameter `param`; `consts` gives its const generics,
/// `deps` the device functions it may call.
pub(super) fn param_accesses(
    callee: &Function,
    param: &str,
    consts: &dyn Fn(&str) -> Option<i64>,
    deps: &[Function],
) -> Vec<CalleeAccess> {
    let mut visits = MAX_VISITS;
    walk_callee(callee, param, consts, deps, (0, &mut visits))
}

fn walk_callee(
    callee: &Function,
    param: &str,
    consts: &dyn Fn(&str) -> Option<i64>,
    deps: &[Function],
    (depth, visits): (u32, &mut usize),
) -> Vec<CalleeAccess> {
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
    out: Vec<CalleeAccess>,
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

    fn push(&mut self, indices: &[Expr], (width, read): (i128, bool), span: Span) {
        if self.out.len() >= MAX_WRITES {
            return;
        }
        if let Some(indices) = indices.iter().map(|e| self.eval(e)).collect() {
            self.out.push(CalleeAccess {
                indices,
                width,
                read,
                span,
            });
        }
    }

    /// The accesses evaluating `e` surely makes: reads `x[i]`, `load2/4(x, i)`, stores `store2/4(x, i, v)`,
    /// and those of the device functions `x` is passed to. Only the condition of an `if` value and the
    /// left of `&&`/`||` surely run.
    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Index { base, indices } => {
                if self.is_param(base) {
                    self.push(indices, (1, true), e.span);
                }
                indices.iter().for_each(|i| self.expr(i));
            }
            ExprKind::Call {
                path,
                generics,
                args,
            } => {
                let name = path.last().map(|p| p.name.as_str());
                let (width, read) = match name {
                    Some("store2") => (2, false),
                    Some("store4") => (4, false),
                    Some("load2") => (2, true),
                    Some("load4") => (4, true),
                    _ => (0, false),
                };
                if width == 0 {
                    self.nested_call(path, generics, args);
                } else if args.len() == 2 + usize::from(!read) && self.is_param(&args[0]) {
                    self.push(&args[1..2], (width, read), e.span);
                }
                for a in args {
                    if !self.is_param(a) {
                        self.expr(a);
                    }
                }
            }
            ExprKind::Binary {
                op: BinOp::And | BinOp::Or,
                lhs,
                ..
            } => self.expr(lhs),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::Select { cond, .. } => self.expr(cond),
            ExprKind::Unary { expr, .. }
            | ExprKind::Cast { expr, .. }
            | ExprKind::Ref { expr, .. } => self.expr(expr),
            ExprKind::MethodCall { recv, args, .. } => {
                self.expr(recv);
                args.iter().for_each(|a| self.expr(a));
            }
            ExprKind::ArrayLit(items) => items.iter().for_each(|a| self.expr(a)),
            ExprKind::ArrayRepeat { value, .. } => self.expr(value),
            ExprKind::Lit(_) | ExprKind::Var(_) | ExprKind::Asm { .. } => {}
        }
    }

    /// A device function the parameter is passed on to, as it is: its sure accesses through that parameter.
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
        // Integer parameters passed a value known here (`put(x, 4)`, `put(x, i)` in a constant loop).
        let scalars: Vec<(&str, Option<i64>)> = args
            .iter()
            .zip(&dep.params)
            .filter(|(_, p)| matches!(p.ty, Type::Scalar(t) if t.is_int()))
            .map(|(a, p)| (p.name.name.as_str(), self.eval(a)))
            .collect();
        let consts = |n: &str| {
            dep.const_params
                .iter()
                .position(|c| c.name.name == n)
                .and_then(|k| values[k])
                .or_else(|| scalars.iter().find(|(m, _)| *m == n).and_then(|(_, v)| *v))
        };
        for (a, p) in args.iter().zip(&dep.params) {
            let pointer = matches!(p.ty, Type::Ptr { .. } | Type::Shared { .. });
            if pointer && self.is_param(a) {
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
        if let (true, Some(tail)) = (go_on, &b.tail) {
            self.expr(tail);
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
                if let Some(e) = init {
                    self.expr(e);
                }
                let v = match (mutable, init) {
                    (false, Some(e)) => self.eval(e),
                    _ => None,
                };
                self.env.push((name.name.clone(), v));
            }
            StmtKind::Assign { place, op, value } => {
                self.expr(value);
                match &place.kind {
                    ExprKind::Index { base, indices } if self.is_param(base) => {
                        indices.iter().for_each(|i| self.expr(i));
                        // `x[i] += v` reads `x[i]` too.
                        if op.is_some() {
                            self.push(indices, (1, true), s.span);
                        }
                        self.push(indices, (1, false), s.span);
                    }
                    _ => self.expr(place),
                }
            }
            StmtKind::Expr(e) => self.expr(e),
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

/// Most combinations of the caller's loop counters followed through a callee's integer parameters.
const MAX_BINDINGS: usize = 64;

impl Cx<'_> {
    /// The values the callee's integer parameters take at the call, for each combination of the caller's
    /// loop counters they read (`put(pt, 4)`; `put(pt, i)` in `for i in 0..4`): `(parameter, value)` lists.
    /// Arguments known only at run time are left out (the callee's accesses through them are not followed).
    fn scalar_bindings<'p>(&self, callee: &'p Function, args: &[Expr]) -> Vec<Vec<(&'p str, i64)>> {
        let known: Vec<(&str, &Expr)> = args
            .iter()
            .zip(&callee.params)
            .filter(|(_, p)| matches!(p.ty, Type::Scalar(t) if t.is_int()))
            .filter(|(a, _)| self.index_tuples(std::slice::from_ref(*a)).is_some())
            .map(|(a, p)| (p.name.name.as_str(), a))
            .collect();
        let exprs: Vec<Expr> = known.iter().map(|(_, a)| (*a).clone()).collect();
        let tuples = match self.index_tuples(&exprs) {
            Some(t) if t.len() <= MAX_BINDINGS => t,
            _ => return vec![Vec::new()],
        };
        tuples
            .into_iter()
            .map(|t| {
                known
                    .iter()
                    .zip(t)
                    .filter_map(|((n, _), v)| Some((*n, i64::try_from(v).ok()?)))
                    .collect()
            })
            .collect()
    }

    /// A view passed to a pointer parameter of `callee`: the writes and reads the callee surely makes
    /// through it are checked as the caller's, at the argument (T-PARTITION), with the callee's integer
    /// parameters bound to the constants (and counters) the caller passes.
    pub(super) fn callee_accesses(
        &mut self,
        fname: &Ident,
        callee: &Function,
        (args, a, p): (&[Expr], &Expr, &Param),
        consts: &dyn Fn(&str) -> Option<i64>,
    ) {
        let pointer = matches!(p.ty, Type::Ptr { .. } | Type::Shared { .. });
        let ExprKind::Var(id) = &a.kind else { return };
        let Some(vi) = self.lookup(&id.name).filter(|_| pointer) else {
            return;
        };
        let v = self.vars[vi].clone();
        if (v.overlap.is_none() && v.layout.is_none()) || v.index_arity != 1 {
            return;
        }
        let mut accesses = Vec::new();
        for b in self.scalar_bindings(callee, args) {
            let bound = |n: &str| {
                b.iter()
                    .find(|(m, _)| *m == n)
                    .map(|(_, v)| *v)
                    .or_else(|| consts(n))
            };
            accesses.extend(param_accesses(callee, &p.name.name, &bound, self.deps));
        }
        for w in accesses {
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
                "passing `{}` to `{}`, which {} `{}[{shown}]`{},",
                v.name,
                fname.name,
                if w.read { "reads" } else { "writes" },
                p.name.name,
                if w.width > 1 {
                    format!(" and the {} elements after it", w.width - 1)
                } else {
                    String::new()
                }
            );
            let before = self.errors.len();
            if w.read {
                self.index_read_as(&v, id.span, &what, &lits, w.width);
            } else {
                self.overlapping_write(&v, id.span, &what, Some(&lits));
                self.index_overlap(&v, id.span, &what, &lits, w.width);
            }
            if self.errors.len() > before {
                // Spans of another crate's function do not point into this one.
                if callee.origin.is_none() {
                    if let Some(d) = self.errors.pop() {
                        self.errors.push(d.note(
                            w.span,
                            format!(
                                "the {}, through `{}`'s parameter `{}`",
                                if w.read { "read" } else { "write" },
                                fname.name,
                                p.name.name
                            ),
                        ));
                    }
                }
                return;
            }
        }
    }
}
