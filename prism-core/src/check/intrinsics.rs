//! Intrinsic calls: arity, argument types, perspectives and memory (collectives, atomics, vector memory,
//! tensor cores, async copies, `id()`); the Hopper ones are in `hopper.rs`.

use super::*;
use crate::intrinsics::{lookup, Arity, Intrinsic, Need};

/// One intrinsic call under check: what the rules of every family read.
#[derive(Clone, Copy)]
struct Call<'c> {
    e: &'c Expr,
    name: &'c Ident,
    /// The intrinsic's name.
    n: &'c str,
    args: &'c [Expr],
    sink: &'c Sink,
    code: Perspective,
    /// Its row of the intrinsics table.
    spec: &'static Intrinsic,
}

/// The call's code must run at the perspective the intrinsic needs (its row of the table).
fn need(cx: &mut Cx, c: &Call) {
    if let Need::At(p) = c.spec.need {
        cx.need_perspective(c.name, p, c.code)
    }
}

/// Whether the call has as many arguments as the table says; a TYPE error when not. (Only the Hopper rows,
/// checked in `hopper.rs`, have other arities than a fixed count.)
fn arity(cx: &mut Cx, c: &Call) -> bool {
    let Arity::Exactly(k) = c.spec.arity else {
        return true;
    };
    if c.args.len() != k {
        cx.errors.push(err(
            "TYPE",
            c.name.span,
            format!("`{}` takes {k} argument(s), found {}", c.n, c.args.len()),
        ));
        false
    } else {
        true
    }
}

/// The sink of an argument read at perspective `p` (`what` names it in diagnostics).
fn at(c: &Call, p: Perspective, what: &str) -> Sink {
    Sink {
        p,
        rule: "CALL-ARG",
        what: format!("{what} of `{}` ({p})", c.n),
        id_target: None,
    }
}

/// The element types an atomic intrinsic supports (as the emitter lowers them to PTX `atom`): `None` when
/// `t` is one, else the list for the help line.
pub(super) fn atomic_types(name: &str, t: ScalarType) -> Option<&'static str> {
    use ScalarType::*;
    match name {
        "atomic_add" => {
            (!matches!(t, U32 | I32 | U64 | F32 | F64)).then_some("u32, i32, u64, f32 and f64")
        }
        "atomic_max" | "atomic_min" => {
            (!matches!(t, U32 | I32 | U64 | I64)).then_some("u32, i32, u64 and i64")
        }
        _ => (t == Bool || t.size() == 2).then_some("32- and 64-bit types"),
    }
}

/// Largest thread-local (register) array, as the emitter lowers it.
pub(super) const MAX_REG_ARRAY: i64 = 4096;

/// The rules of one intrinsic family.
type Family<'a> = fn(&mut Cx<'a>, &Call) -> Ty;

/// The family of each intrinsic this module checks (the Hopper ones are `hopper.rs`'s).
fn family<'a>(name: &str) -> Option<Family<'a>> {
    Some(match name {
        "id" | "sync_threads" | "sync_warp" | "fence" | "block_dim" | "grid_dim" => Cx::i_special,
        "shfl_down" | "shfl_up" | "shfl_xor" | "shfl_idx" => Cx::i_shfl,
        "vote_all" | "vote_any" | "ballot" => Cx::i_vote,
        "atomic_add" | "atomic_max" | "atomic_min" | "atomic_exch" | "atomic_cas" => Cx::i_atomic,
        "mma_m16n8k8_tf32" | "ldmatrix_x4" | "ldmatrix_x2" | "ldmatrix_x1" => Cx::i_tensor_core,
        "load4" | "load2" => Cx::i_load_vec,
        "store4" | "store2" => Cx::i_store_vec,
        "cp_async" | "cp_async_bulk" => Cx::i_cp_async,
        _ => return None,
    })
}

impl<'a> Cx<'a> {
    /// An intrinsic call: the Hopper ones, else the rules of its family (unknown names are not intrinsics).
    pub(super) fn intrinsic(
        &mut self,
        e: &Expr,
        name: &Ident,
        args: &[Expr],
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        if let Some(t) = self.hopper_intrinsic(name, args, code) {
            return t;
        }
        let Some(spec) = lookup(&name.name) else {
            return Ty::Err;
        };
        let c = Call {
            e,
            name,
            n: name.name.as_str(),
            args,
            sink,
            code,
            spec,
        };
        let Some(family) = family(c.n) else {
            return Ty::Err;
        };
        family(self, &c)
    }

    /// `id()`, the barriers and fence, and the launch dimensions.
    fn i_special(&mut self, c: &Call) -> Ty {
        let Call {
            e,
            name,
            args,
            sink,
            ..
        } = *c;
        match c.n {
            "id" => {
                if !args.is_empty() {
                    self.errors
                        .push(err("TYPE", name.span, "`id()` takes no arguments"));
                }
                self.t_id(e, sink, c.code);
                Ty::Scalar(ScalarType::U32)
            }
            "sync_threads" => {
                need(self, c);
                arity(self, c);
                Ty::Unit
            }
            "sync_warp" => {
                need(self, c);
                arity(self, c);
                Ty::Unit
            }
            "fence" => {
                arity(self, c);
                Ty::Unit
            }
            // The launch's block and grid size: the same for every thread of the grid, so the result is at
            // grid[1] and may flow anywhere.
            "block_dim" | "grid_dim" => {
                arity(self, c);
                Ty::Scalar(ScalarType::U32)
            }
            _ => Ty::Err,
        }
    }

    /// Warp shuffles: 32-bit values, at thread[32]; the lane argument at thread[32] except for `shfl_idx`.
    fn i_shfl(&mut self, c: &Call) -> Ty {
        let Call {
            e,
            n,
            args,
            sink,
            code,
            ..
        } = *c;
        let t1 = Perspective::thread(1);
        let w = Perspective::thread(32);
        need(self, c);
        if !arity(self, c) {
            return Ty::Err;
        }
        let v = self.expr(&args[0], &at(c, t1, "the value"), code);
        if !matches!(
            v,
            Ty::Scalar(
                ScalarType::U32
                    | ScalarType::I32
                    | ScalarType::F32
                    | ScalarType::U64
                    | ScalarType::I64
                    | ScalarType::F64
            ) | Ty::IntLit
                | Ty::FloatLit
                | Ty::Err
        ) {
            self.errors.push(err(
                "TYPE",
                args[0].span,
                format!("`{n}` shuffles 32- and 64-bit values, found {v}"),
            ));
        }
        let dp = if n == "shfl_idx" { t1 } else { w };
        // Named as docs/SYNTAX.md names them: shfl_down(v, d), shfl_up(v, d), shfl_xor(v, m), shfl_idx(v, lane).
        let what = match n {
            "shfl_idx" => "the lane argument",
            "shfl_xor" => "the mask argument",
            _ => "the delta argument",
        };
        let d = self.expr(&args[1], &at(c, dp, what), code);
        self.expect_ty(
            &d,
            &Ty::Scalar(ScalarType::U32),
            args[1].span,
            &format!("{what} of `{n}`"),
        );
        self.result_read_up(e.span, n, t1, sink);
        match v {
            Ty::IntLit => Ty::Scalar(ScalarType::I32),
            Ty::FloatLit => Ty::Scalar(ScalarType::F32),
            v => v,
        }
    }

    /// Warp votes and ballots, at thread[32].
    fn i_vote(&mut self, c: &Call) -> Ty {
        let Call {
            e,
            n,
            args,
            sink,
            code,
            ..
        } = *c;
        let t1 = Perspective::thread(1);
        let w = Perspective::thread(32);
        need(self, c);
        if !arity(self, c) {
            return Ty::Err;
        }
        let t = self.expr(&args[0], &at(c, t1, "the predicate"), code);
        self.expect_ty(
            &t,
            &Ty::Scalar(ScalarType::Bool),
            args[0].span,
            &format!("the predicate of `{n}`"),
        );
        self.result_read_up(e.span, n, w, sink);
        if n == "ballot" {
            Ty::Scalar(ScalarType::U32)
        } else {
            Ty::Scalar(ScalarType::Bool)
        }
    }

    /// Atomics: a memory argument, an index and the values, of an element type the emitter lowers.
    fn i_atomic(&mut self, c: &Call) -> Ty {
        let Call {
            e,
            name,
            n,
            args,
            sink,
            code,
            ..
        } = *c;
        let t1 = Perspective::thread(1);
        need(self, c);
        if !arity(self, c) {
            return Ty::Err;
        }
        let elem = self.ptr_arg(name, &args[0], true, None, code);
        // T-PARTITION: an atomic at an element another unit of the view reads or writes plainly.
        if let ExprKind::Var(id) = &args[0].kind {
            if let Some(v) = self.lookup(&id.name).map(|i| self.vars[i].clone()) {
                let what = format!("`{n}` through `{}`", v.name);
                self.index_atomic(&v, args[0].span, &what, &args[1..2]);
            }
        }
        if let Some(el) = elem {
            if let Some(ok) = atomic_types(n, el) {
                self.errors.push(
                    err(
                        "INTRINSIC",
                        args[0].span,
                        format!("`{n}` is not available on {el} memory (PTX has no such `atom`)"),
                    )
                    .help(format!("`{n}` works on {ok}")),
                );
            }
        }
        let i = self.expr(&args[1], &at(c, t1, "the index"), code);
        self.expect_int(&i, args[1].span, "an index");
        for v in &args[2..] {
            let t = self.expr(v, &at(c, t1, "the value"), code);
            if let Some(el) = elem {
                self.expect_ty(&t, &Ty::Scalar(el), v.span, &format!("the value of `{n}`"));
            }
        }
        self.result_read_up(e.span, n, t1, sink);
        elem.map(Ty::Scalar).unwrap_or(Ty::Err)
    }

    /// The tf32 `mma` and `ldmatrix` (warp-wide, register arrays and shared memory).
    fn i_tensor_core(&mut self, c: &Call) -> Ty {
        let Call {
            e,
            name,
            n,
            args,
            sink,
            code,
            ..
        } = *c;
        let t1 = Perspective::thread(1);
        match c.n {
            "mma_m16n8k8_tf32" => {
                need(self, c);
                if !arity(self, c) {
                    return Ty::Err;
                }
                self.array_ref_arg(name, &args[0], true, ScalarType::F32, 4, "c");
                self.array_ref_arg(name, &args[1], false, ScalarType::F32, 4, "a");
                self.array_ref_arg(name, &args[2], false, ScalarType::F32, 2, "b");
                Ty::Unit
            }
            "ldmatrix_x4" | "ldmatrix_x2" | "ldmatrix_x1" => {
                need(self, c);
                if !arity(self, c) {
                    return Ty::Err;
                }
                self.ptr_arg(name, &args[0], false, Some(Space::Shared), code);
                let i = self.expr(&args[1], &at(c, t1, "the row index"), code);
                self.expect_int(&i, args[1].span, "an index");
                self.result_read_up(e.span, n, t1, sink);
                let k = match n {
                    "ldmatrix_x4" => 4,
                    "ldmatrix_x2" => 2,
                    _ => 1,
                };
                Ty::Array {
                    elem: ScalarType::U32,
                    len: Some(k),
                }
            }
            _ => Ty::Err,
        }
    }

    /// Vector loads (`load2`, `load4`).
    fn i_load_vec(&mut self, c: &Call) -> Ty {
        let Call {
            n,
            args,
            sink,
            code,
            ..
        } = *c;
        if !arity(self, c) {
            return Ty::Err;
        }
        let k = if n == "load4" { 4 } else { 2 };
        // Reads: the pointer must be readable at the sink (READ-UP), like `p[i]`.
        let elem = match &args[0].kind {
            ExprKind::Var(id) => {
                let vi = self.use_var(id);
                vi.and_then(|vi| {
                    let v = self.vars[vi].clone();
                    if v.is_async {
                        self.async_only(&v, id.span);
                        return None;
                    }
                    match v.ty {
                        Ty::Ptr { elem, space, .. } => {
                            self.read_up(vi, id.span, sink);
                            if space == Space::Shared {
                                self.arr_access_shared(&v, id.span, code);
                            }
                            self.index_read(&v, id.span, &args[1..2], k as i128);
                            Some(elem)
                        }
                        _ => {
                            self.errors.push(err(
                                "TYPE",
                                id.span,
                                format!("`{n}` loads through a pointer, `{}` is {}", v.name, v.ty),
                            ));
                            None
                        }
                    }
                })
            }
            _ => {
                self.errors.push(err(
                    "TYPE",
                    args[0].span,
                    format!("`{n}` takes a pointer variable"),
                ));
                None
            }
        };
        self.vector_access(n, k, elem, args[0].span);
        let isink = Sink {
            id_target: None,
            ..sink.clone()
        };
        let i = self.expr(&args[1], &isink, code);
        self.expect_int(&i, args[1].span, "an index");
        elem.map(|el| Ty::Array {
            elem: el,
            len: Some(k),
        })
        .unwrap_or(Ty::Err)
    }

    /// Vector stores (`store2`, `store4`).
    fn i_store_vec(&mut self, c: &Call) -> Ty {
        let Call {
            name,
            n,
            args,
            code,
            ..
        } = *c;
        let t1 = Perspective::thread(1);
        if !arity(self, c) {
            return Ty::Err;
        }
        let k = if n == "store4" { 4 } else { 2 };
        let elem = self.ptr_arg(name, &args[0], true, None, code);
        // T-PARTITION at the vector's index (`ptr_arg` cannot see it): `k` elements from there.
        if let Some(v) = match &args[0].kind {
            ExprKind::Var(id) => self.lookup(&id.name).map(|i| self.vars[i].clone()),
            _ => None,
        } {
            let what = format!("`{n}` through `{}`", v.name);
            self.overlapping_write(&v, args[0].span, &what, Some(&args[1..2]));
            self.index_overlap(&v, args[0].span, &what, &args[1..2], k as i128);
        }
        self.vector_access(n, k, elem, args[0].span);
        let i = self.expr(&args[1], &at(c, t1, "the index"), code);
        self.expect_int(&i, args[1].span, "an index");
        let v = self.expr(&args[2], &at(c, t1, "the value"), code);
        if let Some(el) = elem {
            self.expect_ty(
                &v,
                &Ty::Array {
                    elem: el,
                    len: Some(k),
                },
                args[2].span,
                &format!("the value of `{n}`"),
            );
        }
        Ty::Unit
    }

    /// `cp_async` and `cp_async_bulk`: global to shared memory, inside an `async_` scope.
    fn i_cp_async(&mut self, c: &Call) -> Ty {
        let Call {
            name,
            n,
            args,
            code,
            ..
        } = *c;
        let t1 = Perspective::thread(1);
        need(self, c);
        if !arity(self, c) {
            return Ty::Err;
        }
        // Destination: an `async_` name (the only place it may appear).
        let dst_elem = self.async_dst(n, &args[0], n == "cp_async_bulk");
        let i = self.expr(&args[1], &at(c, t1, "the destination index"), code);
        self.expect_int(&i, args[1].span, "an index");
        let src_elem = self.ptr_arg(name, &args[2], false, None, code);
        if let ExprKind::Var(id) = &args[2].kind {
            if let Some(v) = self.lookup(&id.name).map(|i| &self.vars[i]) {
                if let Ty::Ptr {
                    space: Space::Shared,
                    ..
                } = v.ty
                {
                    self.errors.push(
                        err(
                            "INTRINSIC",
                            id.span,
                            format!(
                                "`{n}` copies from global into shared memory, but its source `{}` is shared memory",
                                v.name
                            ),
                        )
                        .help("copy between shared allocations with plain loads and stores"),
                    );
                }
            }
        }
        if let (Some(a), Some(b)) = (dst_elem, src_elem) {
            if a != b {
                self.errors.push(err(
                    "TYPE",
                    args[2].span,
                    format!("`{n}` copies {b} into {a}"),
                ));
            }
        }
        let i = self.expr(&args[3], &at(c, t1, "the source index"), code);
        self.expect_int(&i, args[3].span, "an index");
        let bytes = self.eval(&args[4]).ok();
        let ok = match (n, bytes) {
            ("cp_async", Some(4 | 8 | 16)) => true,
            ("cp_async_bulk", Some(b)) => b > 0 && b % 16 == 0 && b < 1 << 20,
            _ => false,
        };
        if !ok {
            self.errors.push(err(
                "INTRINSIC",
                args[4].span,
                if n == "cp_async" {
                    "`cp_async` copies 4, 8 or 16 bytes (a constant)".to_string()
                } else {
                    "`cp_async_bulk` copies a constant multiple of 16 bytes below 1 MiB".to_string()
                },
            ));
        }
        Ty::Unit
    }

    /// The destination of an async copy (`cp_async`, `cp_async_bulk`, `tma_load`): an `async_` name (ASYNC-ONLY)
    /// of shared memory; bulk copies complete on a block-wide mbarrier, so their target is at block[1]
    /// (ASYNC-BULK). Returns the element type.
    pub(super) fn async_dst(&mut self, n: &str, a: &Expr, bulk: bool) -> Option<ScalarType> {
        let args = std::slice::from_ref(a);
        let mut dst_elem = None;
        match &args[0].kind {
            ExprKind::Var(id) => {
                if let Some(vi) = self.use_var(id) {
                    let v = self.vars[vi].clone();
                    if !v.is_async {
                        self.errors.push(
                            err("ASYNC-ONLY", id.span, format!("the destination of `{n}` must be an `async_` name, `{}` is not", v.name))
                                .help(format!("wrap it: `async_({}, |{}_async| {{ {n}({}_async, ..) }})`", v.name, v.name, v.name)),
                        );
                    }
                    if let Ty::Ptr { elem, space, .. } = v.ty {
                        dst_elem = Some(elem);
                        if bulk && space == Space::Shared && v.at != Perspective::block(1) {
                            self.errors.push(
                                err(
                                    "ASYNC-BULK",
                                    id.span,
                                    format!(
                                        "`{n}` needs its `async_` target at block[1], `{}` is at {}",
                                        v.name, v.at
                                    ),
                                )
                                .help(
                                    "copy into a shared allocation seen at block[1] (`async_(s, ..)` on `let s: Shared<[T; N]>;` itself): \
                                     its copies complete on one mbarrier that every thread of the block waits on",
                                ),
                            );
                        }
                        if space != Space::Shared {
                            self.errors.push(
                                err(
                                    "INTRINSIC",
                                    id.span,
                                    format!(
                                        "`{n}` copies from global into shared memory, but its destination `{}` is global memory",
                                        v.name
                                    ),
                                )
                                .help(format!(
                                    "copy into a shared allocation (`let s: Shared<[T; N]>;` then `async_(s, |s_async| {{ {n}(s_async, ..) }})`), or read the source with plain loads"
                                )),
                            );
                        }
                    }
                }
            }
            _ => self.errors.push(err(
                "ASYNC-ONLY",
                args[0].span,
                format!("the destination of `{n}` must be an `async_` name"),
            )),
        }
        dst_elem
    }

    /// [INTRINSIC] `load2/4`, `store2/4`: PTX vector accesses (`ld.v2/v4`, `st.v2/v4`) of at most 16 bytes
    /// (sm_90), not of predicates.
    pub(super) fn vector_access(&mut self, n: &str, k: i64, elem: Option<ScalarType>, span: Span) {
        let Some(el) = elem else {
            return;
        };
        if el == ScalarType::Bool {
            self.errors.push(
                err(
                    "INTRINSIC",
                    span,
                    format!("`{n}` has no form for bool memory"),
                )
                .help("access the elements one by one: `p[i]`"),
            );
        } else if el.size() as i64 * k > 16 {
            self.errors.push(
                err(
                    "INTRINSIC",
                    span,
                    format!(
                        "`{n}` of {el} moves {} bytes; vector accesses are at most 16 bytes on sm_90",
                        el.size() as i64 * k
                    ),
                )
                .help(format!("use `{}2` twice", &n[..n.len() - 1])),
            );
        }
    }

    /// [T-ID] `id()` only where its target perspective is known: a variable's initializer or assigned value.
    /// An `id()` at the code's own perspective counts the one unit the code is: always 0 (users wrote it
    /// inside `group(thread[1], ..)` expecting the thread's rank in the block, and got wrong results).
    pub(super) fn t_id(&mut self, e: &Expr, sink: &Sink, code: Perspective) {
        match sink.id_target {
            None => self.errors.push(
                err("T-ID", e.span, format!("`id()` used in {}: its meaning depends on the perspective of the variable it is assigned to", sink.what))
                    .help("assign id() to a variable whose perspective says which id you want, e.g. `#[at(thread[1])] let tid: u32 = id();`"),
            ),
            Some(p) if p == code && p != Perspective::grid(1) => self.errors.push(
                err("T-ID", e.span, format!("`id()` at {p} in code at {code} is always 0: it counts the units of {p} within the code it runs in, and this code is one of them"))
                    .help("take the index where the code still spans the units you mean (before the `group(..)` or `split` that narrowed it, e.g. in the warpgroup's code for a thread's rank in it) and use that variable here"),
            ),
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intrinsics::TABLE;

    /// The checker has rules here for exactly the table's intrinsics that are not Hopper's, each with a
    /// fixed arity.
    #[test]
    fn families_match_the_table() {
        let hopper = crate::intrinsics::HOPPER;
        for i in TABLE {
            let checked = family(i.name).is_some();
            assert_eq!(checked, !hopper.contains(&i.name), "{}", i.name);
            if checked {
                assert!(matches!(i.arity, Arity::Exactly(_)), "{}", i.name);
            }
        }
        assert!(family("warp_load").is_none());
    }
}
