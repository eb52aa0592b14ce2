//! Calls of device functions (T-FUNCTION-CALL): arity, const arguments and instances, each argument's
//! perspective and memory, and the result's perspective.

use super::*;

impl<'a> Cx<'a> {
    pub(super) fn e_call(
        &mut self,
        e: &Expr,
        path: &[Ident],
        generics: &[Expr],
        args: &[Expr],
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        let Some(name) = path.last() else {
            return Ty::Err;
        };
        if path.len() == 1 && INTRINSICS.contains(&name.name.as_str()) {
            if !generics.is_empty() {
                self.errors.push(err(
                    "TYPE",
                    name.span,
                    format!("intrinsic `{}` takes no generic arguments", name.name),
                ));
            }
            return self.intrinsic(e, name, args, sink, code);
        }
        let deps = self.deps;
        let Some(callee) = deps.iter().find(|d| d.name.name == name.name) else {
            let mut known: Vec<&str> = deps.iter().map(|d| d.name.name.as_str()).collect();
            known.sort();
            let mut d = err(
                "UNKNOWN-FN",
                name.span,
                format!("cannot find device function `{}`", name.name),
            );
            let close = known
                .iter()
                .chain(INTRINSICS.iter())
                .find(|k| edit_distance(k, &name.name) <= 2)
                .map(|s| s.to_string());
            d = match close {
                Some(c) => d.help(format!(
                    "did you mean `{c}`? known device functions: {}",
                    if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    }
                )),
                None => d.help(format!(
                    "known device functions: {}; intrinsics: {}",
                    if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    },
                    INTRINSICS.join(", ")
                )),
            };
            self.errors.push(d);
            for a in args {
                let s2 = Sink {
                    id_target: None,
                    ..sink.clone()
                };
                if !matches!(a.kind, ExprKind::Ref { .. }) {
                    self.expr(a, &s2, code);
                }
            }
            return Ty::Err;
        };
        self.t_function_call(e, name, callee, generics, args, sink, code)
    }

    /// T-FUNCTION-CALL's perspective side: the callee's broadest `requires` (returned) must hold at `code`,
    /// and its inner thread (block) requirements for the caller's threads per block (blocks per grid).
    fn call_perspectives(
        &mut self,
        name: &Ident,
        callee: &Function,
        code: Perspective,
    ) -> Perspective {
        let ctop = callee
            .requires
            .first()
            .map(|p| p.perspective)
            .unwrap_or(Perspective::thread(1));
        if !self.le(ctop, code) {
            let (note_at, note) = requires_note(callee, name);
            self.errors.push(
                err(
                    "T-FUNCTION-CALL",
                    name.span,
                    format!("`{}` requires {ctop} but is called from {code}", name.name),
                )
                .note(note_at, note)
                .help(format!("call it from code at {ctop} or broader (where {ctop} divides it), e.g. inside `group({ctop}, ..)` or a split arm")),
            );
        }
        // Inner thread requirements of a block-level callee must hold for the caller's threads per block.
        if ctop.level > Level::Thread {
            for p in &callee.requires {
                if p.perspective.level == Level::Thread && !self.t.is_multiple_of(p.perspective.n) {
                    self.errors.push(
                        err(
                            "T-FUNCTION-CALL",
                            name.span,
                            format!(
                                "`{}` requires {} inside {ctop}, but this kernel only guarantees {}",
                                name.name,
                                p.perspective,
                                self.t_desc()
                            ),
                        )
                        .help(format!("add {} to this function's `requires` or set `threads = N` with N a multiple of {}", p.perspective, p.perspective.n)),
                    );
                }
                if p.perspective.level == Level::Block
                    && ctop.level == Level::Grid
                    && !self.b.is_multiple_of(p.perspective.n)
                {
                    self.errors.push(err(
                        "T-FUNCTION-CALL",
                        name.span,
                        format!("`{}` requires {} inside {ctop}, but blocks per grid are only known to be a multiple of {}", name.name, p.perspective, self.b),
                    ));
                }
            }
        }
        ctop
    }

    /// [T-FUNCTION-CALL] the callee's perspective signature is satisfied at the call site (§3.6).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn t_function_call(
        &mut self,
        e: &Expr,
        name: &Ident,
        callee: &Function,
        generics: &[Expr],
        args: &[Expr],
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        if callee.kind == FnKind::Kernel {
            self.errors.push(
                err(
                    "T-FUNCTION-CALL",
                    name.span,
                    format!("`{}` is a kernel and cannot be called", name.name),
                )
                .help("call `#[prism_device]` functions"),
            );
            return Ty::Err;
        }
        if callee.name.name == self.f.name.name {
            self.errors.push(
                err(
                    "T-FUNCTION-CALL",
                    name.span,
                    format!("recursive call of `{}`", name.name),
                )
                .help("device functions are inlined: recursion is not supported"),
            );
            return Ty::Err;
        }
        let ctop = self.call_perspectives(name, callee, code);
        // Const generics.
        let mut gvals: Vec<Option<i64>> = Vec::new();
        if generics.len() != callee.const_params.len() {
            self.errors.push(err(
                "TYPE",
                name.span,
                format!(
                    "`{}` takes {} const generic argument(s), found {}",
                    name.name,
                    callee.const_params.len(),
                    generics.len()
                ),
            ));
        } else {
            for g in generics {
                gvals.push(self.eval_opt(g, "a const generic argument"));
            }
        }
        let callee_consts = |n: &str| -> Option<i64> {
            callee
                .const_params
                .iter()
                .position(|c| c.name.name == n)
                .and_then(|i| gvals.get(i).copied().flatten())
        };
        // [CLUSTER] A device function declared `cluster = N` (it multicasts into, or reads, every block of a
        // cluster) runs only where the blocks form clusters of N: in a kernel, or a device function, with the
        // same `cluster = N`.
        if let Some(ce) = &callee.cluster {
            let want = crate::consteval::eval_const(ce, &callee_consts).ok();
            let have = self.f.cluster.as_ref().and_then(|e| self.eval(e).ok());
            if want.is_some() && want != have {
                let here = match have {
                    Some(c) => format!("`cluster = {c}`"),
                    None => "no `cluster`".to_string(),
                };
                self.errors.push(
                    err(
                        "CLUSTER",
                        name.span,
                        format!(
                            "`{}` declares `cluster = {}` but is called from `{}`, which declares {here}",
                            name.name,
                            want.unwrap_or(0),
                            self.f.name.name
                        ),
                    )
                    .note(ce.span, "declared here")
                    .help(format!(
                        "call it from a kernel attributed `cluster = {}`",
                        want.unwrap_or(0)
                    )),
                );
            }
        }
        // Shared memory of the callee (T-Function-Call: m' ≤ m).
        if let Some(bytes) = fn_smem(callee, &callee_consts, self.deps, 0) {
            self.callee_smem = self.callee_smem.max(bytes);
            if bytes > 0 {
                self.first_smem_call.get_or_insert(name.span);
            }
        }
        if args.len() != callee.params.len() {
            self.errors.push(err(
                "TYPE",
                name.span,
                format!(
                    "`{}` takes {} argument(s), found {}",
                    name.name,
                    callee.params.len(),
                    args.len()
                ),
            ));
        }
        // Argument messages name the instance as called, const arguments included (`sumsq::<f32, 8>`):
        // they decide parameter types such as `[T; N]`.
        let shown = with_const_args(name, &gvals);
        for (a, p) in args.iter().zip(&callee.params) {
            let pat = match p.ty {
                Type::ArrayRef { .. } => Perspective::thread(1),
                _ => p.at.map(|x| x.perspective).unwrap_or(ctop),
            };
            self.call_arg(&shown, a, p, pat, &callee_consts, code);
            self.callee_accesses(&shown, callee, (args, a, p), &callee_consts);
        }
        self.aliased_args(&shown, args, &callee.params);
        // The result has the callee's `returns` perspective (default: its top).
        let ret = match &callee.ret {
            None => Ty::Unit,
            Some((t, _)) => match t {
                Type::Scalar(s) => Ty::Scalar(*s),
                _ => Ty::Err,
            },
        };
        if ret != Ty::Unit {
            let rp = callee.returns.map(|r| r.perspective).unwrap_or(ctop);
            self.result_read_up(e.span, &name.name, rp, sink);
        }
        ret
    }

    /// [CALL-ARG] one memory (or register array) passed to two pointer (or array-reference) parameters of
    /// which one writes: the callee's
    /// synchronization is inferred per parameter (SYNC.md: distinct pointers do not alias), so its writes
    /// through one would race with its accesses through the other (Rust refuses `f(&s, &mut s)` alike).
    fn aliased_args(&mut self, fname: &Ident, args: &[Expr], params: &[Param]) {
        let ptr = |p: &Param| match &p.ty {
            Type::Ptr { mutable, .. }
            | Type::Shared { mutable, .. }
            | Type::ArrayRef { mutable, .. } => Some(*mutable),
            _ => None,
        };
        // The name a pointer or array-reference argument passes (`s`, `&a`, `&mut a`).
        fn named(a: &Expr) -> Option<&Ident> {
            match &a.kind {
                ExprKind::Var(id) => Some(id),
                ExprKind::Ref { expr, .. } => match &expr.kind {
                    ExprKind::Var(id) => Some(id),
                    _ => None,
                },
                _ => None,
            }
        }
        let mut seen: Vec<(&Ident, &Param, bool)> = Vec::new();
        for (a, p) in args.iter().zip(params) {
            let (Some(id), Some(m)) = (named(a), ptr(p)) else {
                continue;
            };
            let earlier = seen
                .iter()
                .find(|(i, _, em)| i.name == id.name && (m || *em))
                .map(|(_, q, em)| (q.name.clone(), *em));
            if let Some((q, qm)) = earlier {
                let kind = |m: bool| if m { "writable" } else { "read-only" };
                self.errors.push(
                    err(
                        "CALL-ARG",
                        id.span,
                        format!(
                            "`{}` is passed to both `{q}` ({}) and `{}` ({}) of `{}`: a device function's pointer parameters must not alias (its synchronization is inferred for each parameter apart), so its writes through one would race with its accesses through the other",
                            id.name, kind(qm), p.name, kind(m), fname.name
                        ),
                    )
                    .help("pass different memories (copy the input first), or give the function one writable parameter that it both reads and writes"),
                );
                return;
            }
            seen.push((id, p, m));
        }
    }

    /// A call's result at perspective `rp` flows into `sink`.
    pub(super) fn result_read_up(&mut self, span: Span, name: &str, rp: Perspective, sink: &Sink) {
        if !self.le(sink.p, rp) {
            self.errors.push(
                err(
                    sink.rule,
                    span,
                    format!(
                        "the result of `{name}` is at {rp} but is read into {}",
                        sink.what
                    ),
                )
                .help(format!("assign it to a variable at {rp} or narrower")),
            );
        }
    }

    /// [CALL-ARG] scalars may be broader than the parameter; `*mut` pointers must match exactly; `*const`
    /// pointers may be broader; array references pass thread-local arrays (`&mut` exactly thread[1]).
    pub(super) fn call_arg(
        &mut self,
        fname: &Ident,
        a: &Expr,
        p: &Param,
        pat: Perspective,
        callee_consts: &dyn Fn(&str) -> Option<i64>,
        code: Perspective,
    ) {
        match &p.ty {
            Type::Scalar(s) => {
                let sink = Sink {
                    p: pat,
                    rule: "CALL-ARG",
                    what: format!("parameter `{}` of `{}` ({pat})", p.name, fname.name),
                    id_target: None,
                };
                let t = self.expr(a, &sink, code);
                self.expect_ty(
                    &t,
                    &Ty::Scalar(*s),
                    a.span,
                    &format!("parameter `{}` of `{}`", p.name, fname.name),
                );
            }
            Type::Ptr { .. } | Type::Shared { .. } => self.ptr_param_arg(fname, a, p, pat, code),
            Type::ArrayRef { .. } => {
                self.array_ref_param_arg(fname, a, p, pat, callee_consts, code)
            }
            Type::TensorMap {
                elem,
                rank,
                mutable,
            } => self.tensor_map_param_arg(fname, a, p, (*elem, *rank, *mutable)),
            Type::Ring { elems } => self.ring_param_arg(fname, a, p, elems),
            Type::Array { .. } => {}
        }
    }

    /// [RING] a ring argument: a ring (a `ring`'s name, or a device function's forwarding its ring
    /// parameter) whose memories have the parameter's element types, in order. The callee's `fill`s and
    /// `drain`s count among the ring's sites where it is called.
    fn ring_param_arg(&mut self, fname: &Ident, a: &Expr, p: &Param, elems: &[ScalarType]) {
        let want = Ty::Ring(elems.to_vec());
        let fits = |t: &Ty| *t == want;
        if let Some(d) = self.by_name_arg(("RING", "a ring"), fname, a, p, &want, fits) {
            self.errors.push(d);
        }
    }

    /// [CALL-ARG] a tensor-map argument: a map (a kernel's parameter, or a device function's forwarding
    /// it) of the parameter's element type and rank, writable (`TensorMapMut`) when the parameter is.
    fn tensor_map_param_arg(
        &mut self,
        fname: &Ident,
        a: &Expr,
        p: &Param,
        (elem, rank, mutable): (ScalarType, u32, bool),
    ) {
        let want = Ty::TensorMap {
            elem,
            rank,
            mutable,
        };
        let fits = |t: &Ty| {
            matches!(*t, Ty::TensorMap { elem: e, rank: r, mutable: m }
                if e == elem && r == rank && (m || !mutable))
        };
        let what = ("CALL-ARG", "a tensor-map parameter");
        let Some(mut d) = self.by_name_arg(what, fname, a, p, &want, fits) else {
            return;
        };
        // A read-only map where the callee stores: say how to make it writable.
        if let (true, ExprKind::Var(id)) = (mutable, &a.kind) {
            let read_only = self
                .lookup(&id.name)
                .is_some_and(|i| matches!(self.vars[i].ty, Ty::TensorMap { mutable: false, .. }));
            if read_only {
                d = d.help(format!(
                    "`{}` stores through its map: declare `{}: TensorMapMut<{elem}, {rank}>`",
                    fname.name, id.name
                ));
            }
        }
        self.errors.push(d);
    }

    /// An argument passed by name (a ring or a tensor map, which are not values): `None` when `a` names a
    /// variable whose type `fits` (or one already in error), else the diagnostic under `rule`, for the
    /// caller to push (it may add help). `what` says what to pass when `a` is not a name at all.
    fn by_name_arg(
        &mut self,
        (rule, what): (&'static str, &str),
        fname: &Ident,
        a: &Expr,
        p: &Param,
        want: &Ty,
        fits: impl Fn(&Ty) -> bool,
    ) -> Option<Diagnostic> {
        let ExprKind::Var(id) = &a.kind else {
            return Some(err(
                rule,
                a.span,
                format!(
                    "parameter `{}` of `{}` is a {want}: pass {what} by name",
                    p.name, fname.name
                ),
            ));
        };
        let vi = self.use_var(id)?;
        let v = self.vars[vi].clone();
        if v.ty == Ty::Err || fits(&v.ty) {
            return None;
        }
        Some(
            err(
                rule,
                id.span,
                format!(
                    "parameter `{}` of `{}` is a {want}, but `{}` is {}",
                    p.name, fname.name, v.name, v.ty
                ),
            )
            .note(v.span, format!("`{}` declared here", v.name)),
        )
    }

    /// An array-reference argument: `&a` / `&mut a` of a thread-local array of the parameter's type (or a
    /// forwarded array-reference parameter); `&mut` needs a mutable array at exactly the parameter's perspective.
    fn array_ref_param_arg(
        &mut self,
        fname: &Ident,
        a: &Expr,
        p: &Param,
        pat: Perspective,
        callee_consts: &dyn Fn(&str) -> Option<i64>,
        code: Perspective,
    ) {
        let Type::ArrayRef { elem, len, mutable } = &p.ty else {
            return;
        };
        let (inner, amut) = match &a.kind {
            ExprKind::Ref { mutable, expr } => (&**expr, *mutable),
            // Forwarding an array-reference parameter as in Rust: `f(out)`.
            ExprKind::Var(_) => (a, *mutable),
            _ => {
                self.errors.push(err(
                    "CALL-ARG",
                    a.span,
                    format!(
                        "parameter `{}` of `{}` takes `&{}a` of a thread-local array",
                        p.name,
                        fname.name,
                        if *mutable { "mut " } else { "" }
                    ),
                ));
                return;
            }
        };
        let ExprKind::Var(id) = &inner.kind else {
            return;
        };
        let Some(vi) = self.use_var(id) else { return };
        let v = self.vars[vi].clone();
        let Ty::Array { elem: ve, len: vl } = v.ty else {
            if v.ty != Ty::Err {
                self.errors.push(err(
                    "TYPE",
                    id.span,
                    format!(
                        "parameter `{}` of `{}` is an array reference, but `{}` has type {}",
                        p.name, fname.name, v.name, v.ty
                    ),
                ));
            }
            return;
        };
        let want_len = eval_const(len, callee_consts).ok();
        if ve != *elem || matches!((vl, want_len), (Some(x), Some(y)) if x != y) {
            self.errors.push(err(
                "TYPE",
                id.span,
                format!(
                    "parameter `{}` of `{}` is [{elem}; {}], but `{}` is {}",
                    p.name,
                    fname.name,
                    want_len.map(|l| l.to_string()).unwrap_or("_".into()),
                    v.name,
                    v.ty
                ),
            ));
        }
        if *mutable {
            if !amut {
                self.errors.push(err(
                    "CALL-ARG",
                    a.span,
                    format!(
                        "parameter `{}` of `{}` is `&mut`: pass `&mut {}`",
                        p.name, fname.name, v.name
                    ),
                ));
            }
            if !v.mutable {
                self.errors.push(
                    err("MUT", id.span, format!("`{}` is not mutable", v.name))
                        .help(format!("declare it `let mut {}`", v.name)),
                );
            }
            if v.at != pat {
                self.errors.push(
                    err(
                        "CALL-ARG",
                        id.span,
                        format!(
                            "`{}` is at {} but `&mut` parameter `{}` of `{}` needs exactly {pat}",
                            v.name, v.at, p.name, fname.name
                        ),
                    )
                    .note(v.span, format!("`{}` declared here at {}", v.name, v.at))
                    .help(format!(
                        "declare it `#[at(thread[1])] let mut {} = ..;`",
                        v.name
                    )),
                );
            }
            self.write_down(&v, id.span, code);
        } else if !self.le(pat, v.at) {
            self.errors.push(err(
                "CALL-ARG",
                id.span,
                format!(
                    "`{}` is at {} but parameter `{}` of `{}` needs {pat} or broader",
                    v.name, v.at, p.name, fname.name
                ),
            ));
        }
    }

    /// A pointer argument: a pointer variable of the element type; `*mut` at exactly the parameter's
    /// perspective, `*const` at it or broader.
    fn ptr_param_arg(
        &mut self,
        fname: &Ident,
        a: &Expr,
        p: &Param,
        pat: Perspective,
        code: Perspective,
    ) {
        // A `Shared<[T; N], L>` parameter is a read-only pointer into the caller's shared memory; a
        // `SharedMut<..>` one a writable pointer, held to the rules of `*mut`.
        let (elem, mutable, shared) = match &p.ty {
            Type::Ptr { elem, mutable } => (elem, mutable, false),
            Type::Shared { elem, mutable, .. } => (elem, mutable, true),
            _ => return,
        };
        let (mut_ty, const_ty) = if shared {
            ("SharedMut", "read-only")
        } else {
            ("*mut", "`*const`")
        };
        let ExprKind::Var(id) = &a.kind else {
            self.errors.push(err(
                "CALL-ARG",
                a.span,
                format!(
                    "parameter `{}` of `{}` is a pointer: pass a pointer variable",
                    p.name, fname.name
                ),
            ));
            return;
        };
        let Some(vi) = self.use_var(id) else { return };
        let v = self.vars[vi].clone();
        if v.is_async {
            self.async_only(&v, id.span);
            return;
        }
        let Ty::Ptr {
            elem: ve,
            mutable: vm,
            space,
        } = v.ty
        else {
            if v.ty != Ty::Err {
                self.errors.push(err(
                    "TYPE",
                    id.span,
                    format!(
                        "parameter `{}` of `{}` is a pointer, but `{}` has type {}",
                        p.name, fname.name, v.name, v.ty
                    ),
                ));
            }
            return;
        };
        if ve != *elem {
            self.errors.push(err(
                "TYPE",
                id.span,
                format!(
                    "parameter `{}` of `{}` points to {elem}, but `{}` points to {ve}",
                    p.name, fname.name, v.name
                ),
            ));
        }
        if v.index_arity != 1 {
            self.errors.push(
                err(
                    "T-PARTITION",
                    id.span,
                    format!(
                        "`{}` takes {} indices (its partition's closure has {} parameters), but parameter `{}` of `{}` is a pointer, indexed by one",
                        v.name, v.index_arity, v.index_arity, p.name, fname.name
                    ),
                )
                .note(v.span, format!("`{}` declared here", v.name))
                .help("pass a view whose closure takes one index (`|j| base + j`)"),
            );
            return;
        }
        if *mutable {
            self.overlapping_write(
                &v,
                id.span,
                &format!(
                    "passing `{}` to `{mut_ty}` parameter `{}` of `{}`",
                    v.name, p.name, fname.name
                ),
                None,
            );
            if !vm {
                let d = err(
                    "CONST",
                    id.span,
                    format!(
                        "`{}` is {const_ty} but parameter `{}` of `{}` is `{mut_ty}`",
                        v.name, p.name, fname.name
                    ),
                )
                .note(v.span, format!("`{}` declared here", v.name));
                self.errors.push(if shared {
                    d.help(format!("`{}` writes it: pass a shared allocation or a `SharedMut` parameter, narrowed to {pat}", fname.name))
                } else {
                    d
                });
            }
            if v.at != pat {
                self.errors.push(
                        err(
                            "CALL-ARG",
                            id.span,
                            format!("`{}` is at {} but parameter `{}` of `{}` is a `{mut_ty}` pointer at {pat}: mutable pointers must match exactly", v.name, v.at, p.name, fname.name),
                        )
                        .note(v.span, format!("`{}` declared here at {}", v.name, v.at))
                        .help(format!("narrow it to {pat} with `partition`/`claim` first")),
                    );
            }
        } else if !self.le(pat, v.at) {
            self.errors.push(
                err(
                    "CALL-ARG",
                    id.span,
                    format!(
                        "`{}` is at {} but parameter `{}` of `{}` needs {pat} or broader",
                        v.name, v.at, p.name, fname.name
                    ),
                )
                .note(v.span, format!("`{}` declared here at {}", v.name, v.at)),
            );
        }
        if shared && space != Space::Shared {
            self.errors.push(
                err(
                    "CALL-ARG",
                    id.span,
                    format!(
                        "parameter `{}` of `{}` is shared memory, but `{}` is global memory",
                        p.name, fname.name, v.name
                    ),
                )
                .note(v.span, format!("`{}` declared here", v.name))
                .help("pass a shared allocation (`let s: Shared<[T; N], L>;`) or a ring slot"),
            );
        }
        if space == Space::Shared {
            self.arr_access_shared(&v, id.span, code);
        }
    }

    /// A pointer argument of an intrinsic: `write` needs a mutable pointer at thread[1] ([STORE]/[CONST]).
    pub(super) fn ptr_arg(
        &mut self,
        fname: &Ident,
        a: &Expr,
        write: bool,
        space: Option<Space>,
        code: Perspective,
    ) -> Option<ScalarType> {
        let ExprKind::Var(id) = &a.kind else {
            self.errors.push(err(
                "TYPE",
                a.span,
                format!("`{}` takes a pointer variable here", fname.name),
            ));
            return None;
        };
        let vi = self.use_var(id)?;
        let v = self.vars[vi].clone();
        if v.is_async {
            self.async_only(&v, id.span);
            return None;
        }
        let Ty::Ptr {
            elem,
            mutable,
            space: sp,
        } = v.ty
        else {
            if v.ty != Ty::Err {
                self.errors.push(err(
                    "TYPE",
                    id.span,
                    format!("`{}` takes a pointer, `{}` is {}", fname.name, v.name, v.ty),
                ));
            }
            return None;
        };
        if let Some(want) = space {
            if want != sp {
                self.errors.push(err(
                    "TYPE",
                    id.span,
                    format!(
                        "`{}` needs shared memory, `{}` is global memory",
                        fname.name, v.name
                    ),
                ));
            }
        }
        if write {
            if fname.name.starts_with("atomic") {
                // Atomics may go through broader pointers (their point is concurrent access).
                if !mutable {
                    self.errors.push(err(
                        "CONST",
                        id.span,
                        format!(
                            "`{}` writes through `{}`, which is `*const`",
                            fname.name, v.name
                        ),
                    ));
                }
                if sp == Space::Shared {
                    self.arr_access_shared(&v, id.span, code);
                }
            } else {
                self.store(&v, id.span, mutable, sp, code, None);
            }
        } else if sp == Space::Shared {
            self.arr_access_shared(&v, id.span, code);
        }
        Some(elem)
    }

    /// `&a`/`&mut a` of a thread-local `[elem; len]` for an intrinsic; `&mut` needs exactly thread[1].
    pub(super) fn array_ref_arg(
        &mut self,
        fname: &Ident,
        a: &Expr,
        mutable: bool,
        elem: ScalarType,
        len: i64,
        pname: &str,
    ) {
        let ExprKind::Ref { mutable: am, expr } = &a.kind else {
            self.errors.push(err(
                "CALL-ARG",
                a.span,
                format!(
                    "argument `{pname}` of `{}` is `&{}[{elem}; {len}]`",
                    fname.name,
                    if mutable { "mut " } else { "" }
                ),
            ));
            return;
        };
        let ExprKind::Var(id) = &expr.kind else {
            return;
        };
        let Some(vi) = self.use_var(id) else { return };
        let v = self.vars[vi].clone();
        let want = Ty::Array {
            elem,
            len: Some(len),
        };
        match &v.ty {
            Ty::Array { elem: ve, len: vl } if *ve == elem && vl.is_none_or(|l| l == len) => {}
            Ty::Err => return,
            other => {
                self.errors.push(err(
                    "TYPE",
                    id.span,
                    format!(
                        "argument `{pname}` of `{}` must be {want}, `{}` is {other}",
                        fname.name, v.name
                    ),
                ));
                return;
            }
        }
        if mutable {
            if !am {
                self.errors.push(err(
                    "CALL-ARG",
                    a.span,
                    format!(
                        "argument `{pname}` of `{}` is written: pass `&mut {}`",
                        fname.name, v.name
                    ),
                ));
            }
            if !v.mutable {
                self.errors.push(
                    err("MUT", id.span, format!("`{}` is not mutable", v.name))
                        .help(format!("declare it `let mut {}`", v.name)),
                );
            }
            if v.at != Perspective::thread(1) {
                self.errors.push(
                    err(
                        "CALL-ARG",
                        id.span,
                        format!("`{}` is at {} but argument `{pname}` of `{}` must be exactly thread[1] (each thread's own fragment)", v.name, v.at, fname.name),
                    )
                    .note(v.span, format!("`{}` declared here at {}", v.name, v.at))
                    .help(format!("declare it `#[at(thread[1])] let mut {} = ..;`", v.name)),
                );
            }
        }
    }
}

/// The note naming a callee's `requires`: at its declaration, or — for another crate's function, which has
/// no source span here — at the call `name`, with the crate named.
fn requires_note(callee: &Function, name: &Ident) -> (Span, String) {
    let ps: Vec<String> = callee
        .requires
        .iter()
        .map(|p| p.perspective.to_string())
        .collect();
    let from = callee
        .origin
        .as_ref()
        .map(|c| format!(" (from `{c}`)"))
        .unwrap_or_default();
    let at = if callee.origin.is_some() {
        name.span
    } else {
        callee.name.span
    };
    (
        at,
        format!("`{}`{from} declares requires({})", name.name, ps.join(", ")),
    )
}

/// `name` with the values of a call's const generic arguments: `f::<f32>` and `[8]` give `f::<f32, 8>`, `g`
/// and `[4]` give `g::<4>`; unchanged when there are none or one is not known.
fn with_const_args(name: &Ident, consts: &[Option<i64>]) -> Ident {
    let vals: Option<Vec<String>> = consts.iter().map(|v| v.map(|v| v.to_string())).collect();
    let mut shown = name.clone();
    match vals {
        Some(v) if !v.is_empty() => {
            let v = v.join(", ");
            shown.name = match name.name.strip_suffix('>') {
                Some(head) => format!("{head}, {v}>"),
                None => format!("{}::<{v}>", name.name),
            };
        }
        _ => {}
    }
    shown
}
