//! The perspective rules of the Hopper intrinsics (docs/SYNTAX.md "Hopper"; the PTX ISA 8.0 sections cited per rule).
//!
//! * `tma_load(dst_async, map, c0, ..)`: one thread issues a TMA tensor copy of a whole box into an `async_`
//!   name of a shared allocation at block[1] (like `cp_async_bulk`, ASYNC-ONLY / ASYNC-BULK); the box and
//!   swizzle that the allocation implies are checked by the emitter against every other use of the map and
//!   recorded for the launch check (rule TMA).
//! * `wgmma_bf16(&mut d, a, a_off, b, b_off)` / `wgmma_f16`: a warpgroup collective (`thread[128]`, aligned:
//!   paper 000 §6.2 needs no new perspective); `d` is each thread's f32 accumulator fragment of N/2
//!   registers for an m64nNk16 product, `a`/`b` shared allocations read through descriptors the compiler
//!   builds (rule WGMMA for shapes and offsets).
//! * `set_max_regs(n)`: `setmaxnreg` for the executing warpgroup (rule SETMAXNREG: 24..=256, a multiple of 8).

use super::walk::{walk_calls, walk_vars};
use super::{err, Cx, Hidden, Sink, Space, Ty};
use crate::ast::{Block, Expr, ExprKind, Ident, Perspective, ScalarType, StmtKind};
use proc_macro2::Span;

impl Cx<'_> {
    /// Checks a Hopper intrinsic call; `None` when `name` is not one.
    pub(super) fn hopper_intrinsic(
        &mut self,
        name: &Ident,
        args: &[Expr],
        code: Perspective,
    ) -> Option<Ty> {
        Some(match name.name.as_str() {
            "tma_load" | "tma_load_multicast" => self.tma_load_call(name, args, code),
            "tma_store" => self.tma_store_call(name, args, code),
            "wgmma_bf16" => self.wgmma_call(name, args, code, ScalarType::BF16),
            "wgmma_f16" => self.wgmma_call(name, args, code, ScalarType::F16),
            "sync_cluster" => self.sync_cluster_call(name, args, code),
            "stmatrix_bf16" => self.stmatrix_call(name, args, code, ScalarType::BF16),
            "store_fragment_f32" => self.stmatrix_call(name, args, code, ScalarType::F32),
            "set_max_regs" => self.set_max_regs_call(name, args, code),
            _ => return None,
        })
    }

    /// Checks a coordinate argument of a TMA copy: an integer, read per issuing thread.
    fn tma_coordinates(&mut self, name: &Ident, coords: &[Expr], code: Perspective) {
        let sink = arg_sink(name, Perspective::thread(1), "a coordinate");
        for c in coords {
            let t = self.expr(c, &sink, code);
            self.expect_int(&t, c.span, "a coordinate");
        }
    }

    /// `tma_load(dst_async, map, c0, ..)` and `tma_load_multicast(..)`: one thread issues the copy.
    fn tma_load_call(&mut self, name: &Ident, args: &[Expr], code: Perspective) -> Ty {
        let n = name.name.as_str();
        self.need_perspective(name, Perspective::thread(1), code);
        if n == "tma_load_multicast" {
            let c = self.f.cluster.as_ref().and_then(|e| self.eval(e).ok());
            if !matches!(c, Some(2..=8)) {
                self.errors.push(
                    err("CLUSTER", name.span, "`tma_load_multicast` writes the slot of every block of a cluster: it needs a kernel (or a device function) declared with `cluster = N`, N in 2..=8")
                        .help("add `cluster = 2` to the kernel's attribute (a device function's `cluster = 2` makes it callable only from such kernels)"),
                );
            }
        }
        if args.len() < 3 {
            self.arity_error(name, "2 + the map's rank", args.len());
            return Ty::Err;
        }
        self.async_dst(n, &args[0], true);
        let rank = self.tensor_map_arg(name, &args[1]).map(|(r, _)| r);
        if let Some(r) = rank {
            if args.len() != 2 + r as usize {
                self.arity_error(
                    name,
                    &format!("{} (the destination, the map and {r} coordinates)", 2 + r),
                    args.len(),
                );
            }
        }
        self.tma_coordinates(name, &args[2..], code);
        Ty::Unit
    }

    /// `tma_store(map, src, c0, ..)`: one thread stores a shared box through a `TensorMapMut`.
    fn tma_store_call(&mut self, name: &Ident, args: &[Expr], code: Perspective) -> Ty {
        self.need_perspective(name, Perspective::thread(1), code);
        if args.len() < 3 {
            self.arity_error(name, "2 + the map's rank", args.len());
            return Ty::Err;
        }
        if let Some((r, mutable)) = self.tensor_map_arg(name, &args[0]) {
            if !mutable {
                self.read_only_store_map(&args[0], r);
            }
            if args.len() != 2 + r as usize {
                self.arity_error(
                    name,
                    &format!("{} (the map, the source and {r} coordinates)", 2 + r),
                    args.len(),
                );
            }
        }
        // The source: a shared allocation itself, read through the async proxy.
        self.ptr_arg(name, &args[1], false, Some(Space::Shared), code);
        self.tma_coordinates(name, &args[2..], code);
        Ty::Unit
    }

    /// TMA: a store through a read-only `TensorMap`, with the declaration that would allow it.
    fn read_only_store_map(&mut self, map: &Expr, rank: u32) {
        let (pname, elem) = match &map.kind {
            ExprKind::Var(id) => {
                let el = self
                    .use_var(id)
                    .and_then(|vi| match &self.vars[vi].ty {
                        Ty::TensorMap { elem, .. } => Some(elem.to_string()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "T".into());
                (id.name.clone(), el)
            }
            _ => ("d".into(), "T".into()),
        };
        self.errors.push(
            err("TMA", map.span, "`tma_store` writes global memory through its map: the parameter must be a `TensorMapMut<T, RANK>`")
                .help(format!("declare it `{pname}: TensorMapMut<{elem}, {rank}>`; the host passes `&mut prism_runtime::TensorMapMut`")),
        );
    }

    /// `wgmma_bf16(&mut d, a, a_off, b, b_off[, accumulate])`: a warpgroup collective on shared operands.
    fn wgmma_call(
        &mut self,
        name: &Ident,
        args: &[Expr],
        code: Perspective,
        input: ScalarType,
    ) -> Ty {
        let n = name.name.as_str();
        let wg = Perspective::thread(128);
        self.need_perspective(name, wg, code);
        if args.len() != 5 && args.len() != 6 {
            self.arity_error(name, "5 or 6", args.len());
            return Ty::Err;
        }
        if let Some(acc) = args.get(5) {
            // scale-d: false computes D = A·B, ignoring D's old value (the first k-step).
            let t = self.expr(acc, &arg_sink(name, wg, "`accumulate`"), code);
            self.expect_ty(&t, &Ty::Scalar(ScalarType::Bool), acc.span, "`accumulate`");
        }
        self.accumulator_arg(name, &args[0]);
        for (k, what) in [(1, "A"), (3, "B")] {
            if let Some(el) = self.ptr_arg(name, &args[k], false, Some(Space::Shared), code) {
                if el != input {
                    self.errors.push(err(
                        "TYPE",
                        args[k].span,
                        format!("operand {what} of `{n}` must be shared {input}, found {el}"),
                    ));
                }
            }
            // Offsets are uniform over the warpgroup: one descriptor for all of its warps.
            let sink = arg_sink(name, wg, &format!("the offset into {what}"));
            let t = self.expr(&args[k + 1], &sink, code);
            self.expect_int(&t, args[k + 1].span, "an element offset");
        }
        Ty::Unit
    }

    /// `sync_cluster()`: a barrier of every thread of the cluster's blocks.
    fn sync_cluster_call(&mut self, name: &Ident, args: &[Expr], code: Perspective) -> Ty {
        let c = self.f.cluster.as_ref().and_then(|e| self.eval(e).ok());
        match c {
            Some(c @ 2..=8) => self.need_perspective(name, Perspective::block(c as u32), code),
            // A `cluster = N` out of range is reported where it is declared.
            Some(_) => {}
            None => self.errors.push(
                err("CLUSTER", name.span, "`sync_cluster()` needs a kernel (or a device function) declared with `cluster = N`, N in 2..=8")
                    .help("add `cluster = 2` to the kernel attribute, and `block[2]` to `requires`"),
            ),
        }
        if !args.is_empty() {
            self.arity_error(name, "0", args.len());
        }
        Ty::Unit
    }

    /// `stmatrix_bf16(tile, &acc, j)` / `store_fragment_f32(tile, &acc, j)`: the warpgroup stores box `j` of
    /// its accumulator fragment into its own tile of `elem` (64 × 64 bf16, 64 × 32 f32), a collective write
    /// (the tile is the warpgroup's: `partition(e, thread[128], |x| x, ..)`).
    fn stmatrix_call(
        &mut self,
        name: &Ident,
        args: &[Expr],
        code: Perspective,
        elem: ScalarType,
    ) -> Ty {
        let wg = Perspective::thread(128);
        self.need_perspective(name, wg, code);
        if args.len() != 3 {
            self.arity_error(name, "3", args.len());
            return Ty::Err;
        }
        self.stmatrix_tile_arg(name, &args[0], wg, elem);
        // `&acc` of a wgmma accumulator (`[f32; N / 2]`); the box `j` is a constant (checked against the
        // fragment's width by the emitter, after unrolling).
        if !matches!(&args[1].kind, ExprKind::Ref { mutable: false, .. }) {
            self.errors.push(err(
                "STMATRIX",
                args[1].span,
                "the fragment is `&acc`, an accumulator array",
            ));
        }
        let sink = Sink {
            p: wg,
            rule: "CALL-ARG",
            what: format!("the box index of `{}` ({wg})", name.name),
            id_target: None,
        };
        let t = self.expr(&args[2], &sink, code);
        self.expect_int(&t, args[2].span, "a box index");
        Ty::Unit
    }

    /// [SETMAXNREG] `set_max_regs(n)`: a warpgroup collective with a constant count, a multiple of 8 in
    /// 24..=256 (one count per warpgroup and the block's budget are the emitter's, which knows the threads).
    fn set_max_regs_call(&mut self, name: &Ident, args: &[Expr], code: Perspective) -> Ty {
        self.need_perspective(name, Perspective::thread(128), code);
        if args.len() != 1 {
            self.arity_error(name, "1", args.len());
            return Ty::Err;
        }
        match self.eval(&args[0]) {
            Ok(v) if (24..=256).contains(&v) && v % 8 == 0 => {}
            // A generic device function's const generic: the emitter checks the instance's value.
            Err(_) if self.mentions_unknown_const(&args[0]) => {}
            Ok(v) => self.errors.push(
                err(
                    "SETMAXNREG",
                    args[0].span,
                    format!("`set_max_regs({v})`: a warpgroup's register count must be a multiple of 8 in 24..=256"),
                )
                .help("e.g. 40 for a TMA producer, 232 for wgmma consumers (PTX ISA §9.7.19.5)"),
            ),
            Err(_) => self.errors.push(err(
                "SETMAXNREG",
                args[0].span,
                "`set_max_regs` takes a constant register count",
            )),
        }
        Ty::Unit
    }

    /// [STMATRIX] the tile a warpgroup stores into is a writable shared view of `elem` at exactly its
    /// perspective (each warpgroup writes its own tile, whole).
    fn stmatrix_tile_arg(&mut self, name: &Ident, a: &Expr, wg: Perspective, elem: ScalarType) {
        let ExprKind::Var(id) = &a.kind else {
            self.errors.push(err(
                "STMATRIX",
                a.span,
                format!("`{}` stores into a shared tile variable", name.name),
            ));
            return;
        };
        let Some(vi) = self.use_var(id) else { return };
        let v = self.vars[vi].clone();
        let ok = matches!(
            v.ty,
            Ty::Ptr {
                elem: e,
                mutable: true,
                space: Space::Shared
            } if e == elem
        );
        if !ok || v.at != wg {
            self.errors.push(
                err(
                    "STMATRIX",
                    id.span,
                    format!(
                        "`{}` stores a warpgroup's tile: `{}` must be writable shared {elem} memory at {wg}, not {} at {}",
                        name.name, v.name, v.ty, v.at
                    ),
                )
                .note(v.span, format!("`{}` declared here", v.name))
                .help("hand each warpgroup its tile: `partition(e, thread[128], |x| x, |e_w| { .. })` at block[1]"),
            );
        }
    }

    /// [CLUSTER] `cluster = N`: a kernel's blocks form clusters of 1..=8 (the portable maximum); a device
    /// function's `cluster = N` says it runs only in such kernels (checked at its calls), and lets it use the
    /// cluster's collectives (`tma_load_multicast`, `peer`, `sync_cluster`).
    pub(super) fn cluster_rule(&mut self) {
        let Some(e) = &self.f.cluster else { return };
        let span = e.span;
        match self.eval(e) {
            Ok(1..=8) => {}
            Ok(v) => self.errors.push(
                err(
                    "CLUSTER",
                    span,
                    format!("`cluster = {v}`: a cluster has 1 to 8 blocks"),
                )
                .help("8 is the portable maximum on sm_90 (16 needs a non-portable opt-in)"),
            ),
            Err(_) => self
                .errors
                .push(err("CLUSTER", span, "`cluster` must be a constant")),
        }
    }

    /// [RING] `ring(S, (a, b), |r| ..)`: at block[1], over shared allocations, `S` a constant in 1..=32; the
    /// memories are hidden inside ([RING-HIDDEN]): only `fill`/`drain` reach their slots.
    pub(super) fn t_ring(
        &mut self,
        span: Span,
        stages: &Expr,
        targets: &[Ident],
        name: &Ident,
        body: &Block,
        code: Perspective,
    ) {
        if code != Perspective::block(1) {
            self.errors.push(
                err("RING", span, format!("a ring is declared at block[1], not {code}: its slots belong to the whole block"))
                    .help("declare it right after the shared allocations, before `match split(..)`"),
            );
        }
        match self.eval(stages) {
            Ok(1..=32) => {}
            Ok(v) => self.errors.push(err(
                "RING",
                stages.span,
                format!("a ring has 1 to 32 slots, not {v}"),
            )),
            Err(_) => self.errors.push(err(
                "RING",
                stages.span,
                "the number of slots must be a constant",
            )),
        }
        let mut elems = Vec::new();
        let mut hidden = Vec::new();
        for t in targets {
            let Some(vi) = self.use_var(t) else { continue };
            match self.vars[vi].ty {
                Ty::Ptr {
                    elem,
                    space: Space::Shared,
                    ..
                } => elems.push(elem),
                Ty::Err => {}
                ref other => {
                    let msg = format!(
                        "a ring's memories are shared allocations, `{}` is {other}",
                        t.name
                    );
                    self.errors.push(err("RING", t.span, msg));
                    continue;
                }
            }
            let saved = self.vars[vi].hidden.replace(Hidden::Ring(span));
            hidden.push((vi, saved));
        }
        let mark = self.vars.len();
        self.declare(name, Perspective::block(1), Ty::Ring(elems), false);
        self.body(body, code);
        self.vars.truncate(mark);
        for (vi, saved) in hidden {
            self.vars[vi].hidden = saved;
        }
    }

    /// [RING] `fill(r, i, |a_s, ..| ..)` / `drain(r, i, |a_s, ..| ..)`: one name per memory of the ring; the
    /// step `i` is uniform over the code perspective (its slot and phase are the same for every thread that
    /// waits); fill names are `async_` names (only async copies write them: ASYNC-ONLY), drain names read-only.
    pub(super) fn t_ring_use(
        &mut self,
        fill: bool,
        ring: &Ident,
        index: &Expr,
        names: &[Ident],
        body: &Block,
        code: Perspective,
    ) {
        let what = if fill { "fill" } else { "drain" };
        let elems = match self.use_var(ring).map(|vi| self.vars[vi].ty.clone()) {
            Some(Ty::Ring(e)) => Some(e),
            Some(Ty::Err) | None => None,
            Some(other) => {
                self.errors.push(err(
                    "RING",
                    ring.span,
                    format!("`{what}` takes a ring, `{}` is {other}", ring.name),
                ));
                None
            }
        };
        let sink = Sink {
            p: code,
            rule: "READ-UP",
            what: format!("the step of `{what}` at code perspective {code}"),
            id_target: None,
        };
        let t = self.expr(index, &sink, code);
        self.expect_int(&t, index.span, "a step");
        let mark = self.vars.len();
        // The slot names are block memory. A fill's are async targets, at block[1] (ASYNC-BULK: their copies
        // complete on the slot's mbarrier); a drain's are reads, and in a device function that takes the ring
        // and knows no perspective as broad as block[1] they are at its broadest one.
        let device = self.f.kind == crate::ast::FnKind::Device;
        let at = if fill || !device || self.le(code, Perspective::block(1)) {
            Perspective::block(1)
        } else {
            self.facts.top
        };
        if let Some(elems) = &elems {
            if elems.len() != names.len() {
                self.errors.push(err(
                    "RING",
                    ring.span,
                    format!(
                        "the ring has {} memories, `{what}` binds {} names",
                        elems.len(),
                        names.len()
                    ),
                ));
            }
            for (n, el) in names.iter().zip(elems) {
                let ty = Ty::Ptr {
                    elem: *el,
                    mutable: fill,
                    space: Space::Shared,
                };
                let vi = self.declare(n, at, ty, fill);
                self.vars[vi].is_async = fill;
                self.vars[vi].fill_slot = fill;
            }
        }
        self.body(body, code);
        // A fill completes its slot for the drains: a memory it never loads would be read as whatever the
        // slot held before (a previous step's tile, or nothing at all).
        let loaded = |k: usize| self.vars.get(mark + k).is_none_or(|v| v.used);
        if fill && !names.is_empty() && !(0..names.len()).any(loaded) {
            self.errors.push(
                err(
                    "RING",
                    names[0].span,
                    "this `fill` loads none of the ring's memories: the drains of its step would read the slots as they were before (an earlier step's data, or memory nothing wrote)",
                )
                .help("load every memory of the ring in the fill (`tma_load(a_s, map, ..)`, `cp_async_bulk`, `cp_async`)"),
            );
        }
        let every_path: Vec<bool> = names
            .iter()
            .map(|n| loads_on_every_path(body, &n.name, &|e| self.eval(e).ok()))
            .collect();
        if fill && (0..names.len()).any(loaded) {
            for (k, n) in names.iter().enumerate() {
                if !loaded(k) {
                    self.errors.push(
                        err(
                            "RING",
                            n.span,
                            format!("`fill` never loads `{}`: the drains of this step would read its slot as it was before (an earlier step's data, or memory nothing wrote)", n.name),
                        )
                        .help(format!("load it in this fill (`tma_load({}, map, ..)`), or take the memory out of the ring", n.name)),
                    );
                } else if !every_path[k] {
                    self.errors.push(
                        err(
                            "RING",
                            n.span,
                            format!("`fill` loads `{}` only on some paths (under an `if`, or in a loop that may not run): where it does not, the drains of this step read its slot as it was before", n.name),
                        )
                        .help("load every memory of the ring in every fill; to leave a step out, leave it out of the fills and the drains alike (both sides visit the steps 0, 1, 2, .. in order)"),
                    );
                }
            }
        }
        self.vars.truncate(mark);
    }

    /// [TURN] `turn(r, c, || ..)`: consumer `c` (the constant 0 or 1, checked where the kernel is emitted) of a
    /// ring whose two consumers take turns: its drains of `r` run inside turns, and a turn of one consumer
    /// starts when the other's previous turn has waited for all its slots (the ping-pong schedule).
    pub(super) fn t_turn(&mut self, ring: &Ident, index: &Expr, body: &Block, code: Perspective) {
        match self.use_var(ring).map(|vi| self.vars[vi].ty.clone()) {
            Some(Ty::Ring(_)) | Some(Ty::Err) | None => {}
            Some(other) => self.errors.push(err(
                "TURN",
                ring.span,
                format!("`turn` takes a ring, `{}` is {other}", ring.name),
            )),
        }
        let sink = Sink {
            p: code,
            rule: "READ-UP",
            what: format!("the consumer of `turn` at code perspective {code}"),
            id_target: None,
        };
        let t = self.expr(index, &sink, code);
        self.expect_int(&t, index.span, "a consumer (0 or 1)");
        let mark = self.vars.len();
        self.body(body, code);
        self.vars.truncate(mark);
    }

    /// [CLUSTER] `peer(s, r, |s_r| ..)`: a cluster collective (code at `block[N]`, N = `cluster` ≥ 2) over a
    /// shared allocation; `s_r` is a read-only view of block rank `r`'s `s`, and `s` itself is hidden inside
    /// ([PEER-HIDDEN]): between the construct's two cluster barriers nobody writes it.
    pub(super) fn t_peer(
        &mut self,
        span: Span,
        target: &Ident,
        rank: &Expr,
        new_name: &Ident,
        body: &Block,
        code: Perspective,
    ) {
        let c = self.f.cluster.as_ref().and_then(|e| self.eval(e).ok());
        match c {
            Some(c @ 2..=8) if code == Perspective::block(c as u32) => {}
            Some(c @ 2..=8) => self.errors.push(
                err("CLUSTER", span, format!("`peer` is a collective of the cluster: call it in block[{c}] code, not {code}"))
                    .help(format!("wrap it in `group(block[{c}], || {{ .. }})`")),
            ),
            _ => self.errors.push(
                err("CLUSTER", span, "`peer` reads another block's shared memory: it needs a kernel (or a device function) declared with `cluster = N`, N in 2..=8")
                    .help("add `cluster = 2` to the kernel attribute and `block[2]` to `requires`"),
            ),
        }
        let sink = Sink {
            p: Perspective::block(1),
            rule: "READ-UP",
            what: "the block rank of `peer` (block[1])".to_string(),
            id_target: None,
        };
        let t = self.expr(rank, &sink, code);
        self.expect_int(&t, rank.span, "a block rank");
        if let (Some(c @ 2..=8), Ok(r)) = (c, self.eval(rank)) {
            if !(0..c).contains(&r) {
                self.errors.push(
                    err(
                        "CLUSTER",
                        rank.span,
                        format!(
                            "block rank {r} is outside the cluster: its blocks have ranks 0..{c}"
                        ),
                    )
                    .help(format!(
                        "a rank in 0..{c}, e.g. `(r + 1) % {c}` for the next block"
                    )),
                );
            }
        }
        // A `peer` of an allocation another `peer` is reading: both views only read it, and the outer one's
        // closing cluster barrier still keeps every block from rewriting it before all have read.
        let nested = self
            .lookup(&target.name)
            .filter(|&i| matches!(self.vars[i].hidden, Some(Hidden::Peer(_))));
        let Some(vi) = nested.or_else(|| self.use_var(target)) else {
            self.body_after_error(new_name, body, code);
            return;
        };
        let elem = match self.vars[vi].ty {
            Ty::Ptr {
                elem,
                space: Space::Shared,
                ..
            } => Some(elem),
            Ty::Err => None,
            ref other => {
                let msg = format!(
                    "`peer` reads a shared allocation, `{}` is {other}",
                    target.name
                );
                self.errors.push(err("CLUSTER", target.span, msg));
                None
            }
        };
        let saved = self.vars[vi].hidden.replace(Hidden::Peer(span));
        let mark = self.vars.len();
        let ty = match elem {
            Some(elem) => Ty::Ptr {
                elem,
                mutable: false,
                space: Space::Shared,
            },
            None => Ty::Err,
        };
        self.declare(new_name, Perspective::block(1), ty, false);
        self.body(body, code);
        self.vars.truncate(mark);
        self.vars[vi].hidden = saved;
    }

    fn arity_error(&mut self, name: &Ident, want: &str, found: usize) {
        self.errors.push(err(
            "TYPE",
            name.span,
            format!("`{}` takes {want} argument(s), found {found}", name.name),
        ));
    }

    /// The rank of a `TensorMap` argument (a kernel parameter used by name), and whether it is writable.
    fn tensor_map_arg(&mut self, name: &Ident, a: &Expr) -> Option<(u32, bool)> {
        let ExprKind::Var(id) = &a.kind else {
            self.errors.push(err(
                "TYPE",
                a.span,
                format!("`{}` takes a `TensorMap` parameter by name", name.name),
            ));
            return None;
        };
        let vi = self.use_var(id)?;
        match self.vars[vi].ty {
            Ty::TensorMap { rank, mutable, .. } => Some((rank, mutable)),
            Ty::Err => None,
            ref other => {
                let msg = format!(
                    "`{}` takes a `TensorMap<T, RANK>` parameter, `{}` is {other}",
                    name.name, id.name
                );
                self.errors.push(err("TYPE", id.span, msg));
                None
            }
        }
    }

    /// `&mut d`: a thread-local f32 array of N/2 registers, N a multiple of 8 up to 256 (m64nNk16).
    fn accumulator_arg(&mut self, name: &Ident, a: &Expr) {
        // `&mut d`, or a device function forwarding its `acc: &mut [f32; N]` parameter as `acc`.
        let forwarded = matches!(&a.kind, ExprKind::Var(id)
            if self.lookup(&id.name).is_some_and(|i| self.vars[i].mutable));
        let expr = match &a.kind {
            ExprKind::Ref {
                mutable: true,
                expr,
            } => &**expr,
            _ if forwarded => a,
            _ => {
                self.errors.push(err(
                    "CALL-ARG",
                    a.span,
                    format!(
                        "the accumulator of `{}` is written: pass `&mut d` with `d: [f32; N / 2]`",
                        name.name
                    ),
                ));
                return;
            }
        };
        let ExprKind::Var(id) = &expr.kind else {
            return;
        };
        let Some(vi) = self.use_var(id) else { return };
        let v = self.vars[vi].clone();
        match v.ty {
            Ty::Array {
                elem: ScalarType::F32,
                len,
            } => {
                if let Some(l) = len {
                    if !(4..=128).contains(&l) || l % 4 != 0 {
                        self.errors.push(
                            err(
                                "WGMMA",
                                id.span,
                                format!("`{}` has {l} f32 registers: an m64nNk16 accumulator has N/2, N a multiple of 8 in 8..=256", v.name),
                            )
                            .help("declare `let mut d = [0.0f32; N / 2];` at thread[1], e.g. 64 registers for N = 128"),
                        );
                    }
                }
                if v.at != Perspective::thread(1) {
                    self.errors.push(err(
                        "WGMMA",
                        id.span,
                        format!(
                            "the accumulator `{}` must be thread-local (thread[1]), it is at {}",
                            v.name, v.at
                        ),
                    ));
                }
                if !v.mutable {
                    self.errors.push(
                        err("MUT", id.span, format!("`{}` is not mutable", v.name))
                            .help(format!("declare it `let mut {}`", v.name)),
                    );
                }
            }
            Ty::Err => {}
            ref other => self.errors.push(err(
                "TYPE",
                id.span,
                format!(
                    "the accumulator of `{}` must be `[f32; N / 2]`, `{}` is {other}",
                    name.name, v.name
                ),
            )),
        }
    }
}

/// [RING] Whether every run of a fill's body `b` loads the slot of fill name `n`: a simple statement that
/// names it (a fill name is only ever a copy's destination, ASYNC-ONLY), an `if` both of whose sides do, a
/// body that runs (`group`, a split arm, a partition, claim or `async_` scope, a `for` over a non-empty
/// constant range: `konst` evaluates literals and const generics); not a `while` or another `for`, which may not run. A `tma_load_multicast` counts under
/// any condition: in a cluster ring one block loads the slot for all of them (`if rank == 0 { .. }`), and
/// each block's full mbarrier expects its bytes whichever block issues it.
fn loads_on_every_path(b: &Block, n: &str, konst: &dyn Fn(&Expr) -> Option<i64>) -> bool {
    let mut multicast = false;
    walk_calls(b, &mut |name, call| {
        if let ExprKind::Call { args, .. } = &call.kind {
            multicast |= name == "tma_load_multicast"
                && matches!(args.first().map(|a| &a.kind), Some(ExprKind::Var(v)) if v.name == n);
        }
    });
    multicast || surely(b, n, konst)
}

fn surely(b: &Block, n: &str, konst: &dyn Fn(&Expr) -> Option<i64>) -> bool {
    let names = |e: &Expr| {
        let mut hit = false;
        walk_vars(e, &mut |v| hit |= v == n);
        hit
    };
    b.stmts.iter().any(|s| match &s.kind {
        StmtKind::Let { init, .. } => init.as_ref().is_some_and(names),
        StmtKind::Assign { place, value, .. } => names(place) || names(value),
        StmtKind::Expr(e) => names(e),
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => {
            surely(then_block, n, konst) && else_block.as_ref().is_some_and(|e| surely(e, n, konst))
        }
        StmtKind::For {
            start, end, body, ..
        } => {
            matches!((konst(start), konst(end)), (Some(a), Some(z)) if a < z)
                && surely(body, n, konst)
        }
        StmtKind::Group { body, .. }
        | StmtKind::Partition { body, .. }
        | StmtKind::Claim { body, .. }
        | StmtKind::Async { body, .. }
        | StmtKind::Unsafe { body } => surely(body, n, konst),
        StmtKind::Split { arms, .. } => arms.iter().any(|a| surely(&a.body, n, konst)),
        _ => false,
    })
}

/// Where an argument of a Hopper intrinsic is read: at `p`, for rule CALL-ARG.
fn arg_sink(name: &Ident, p: Perspective, what: &str) -> Sink {
    Sink {
        p,
        rule: "CALL-ARG",
        what: format!("{what} of `{}` ({p})", name.name),
        id_target: None,
    }
}
