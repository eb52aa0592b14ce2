//! Perspectives: the algebra (units, ordering), `group`, `split`, `partition`, `claim` and `async_`
//! (T-GROUP, T-SPLIT, T-PARTITION, T-CLAIM, ASYNC), and where a call needs a perspective.

use super::*;

pub(super) fn narrower_syntactic(a: Perspective, b: Perspective) -> bool {
    a.narrower_eq_syntactic(b)
}

impl<'a> Cx<'a> {
    /// Guaranteed divisor of the number of `inner` units in one `outer` (§3.2, appendix A.1).
    pub(super) fn units(&self, inner: Level, outer: Perspective) -> Option<u64> {
        let n = outer.n as u64;
        match (outer.level, inner) {
            (a, b) if a == b => Some(n),
            (Level::Block, Level::Thread) => Some(n * self.t as u64),
            (Level::Grid, Level::Block) => Some(n * self.b as u64),
            (Level::Grid, Level::Thread) => Some(n * self.b as u64 * self.t as u64),
            _ => None,
        }
    }

    /// `a ≤ b`: `a` is narrower than or equal to `b`, alignment included.
    pub(super) fn le(&self, a: Perspective, b: Perspective) -> bool {
        match self.units(a.level, b) {
            Some(d) => d % a.n as u64 == 0,
            None => false,
        }
    }

    /// `code` holds exactly one `p` unit (alignment and exact sizes known), so nothing replicates.
    pub(super) fn one_unit(&self, p: Perspective, code: Perspective) -> bool {
        let exact = match (code.level, p.level) {
            (a, b) if a == b => Some(code.n as u64),
            (Level::Block, Level::Thread) => self.t_exact.map(|t| code.n as u64 * t as u64),
            (Level::Grid, Level::Block) => self.b_exact.map(|b| code.n as u64 * b as u64),
            (Level::Grid, Level::Thread) => self
                .b_exact
                .zip(self.t_exact)
                .map(|(b, t)| code.n as u64 * b as u64 * t as u64),
            _ => None,
        };
        exact == Some(p.n as u64)
    }

    pub(super) fn t_desc(&self) -> String {
        match self.t_exact {
            Some(t) => format!("threads = {t}"),
            None => format!("threads per block a multiple of {}", self.t),
        }
    }

    /// [T-GROUP] `group(P)` replicates narrower code P across the current perspective (Fig. 7).
    pub(super) fn t_group(&mut self, at: &SpannedPerspective, body: &Block, code: Perspective) {
        let p = at.perspective;
        if !self.le(p, code) {
            let why = if p.level > code.level {
                format!("{} is a broader level than {}", p.level, code.level)
            } else if p.level == code.level {
                format!("{} does not divide {}", p.n, code.n)
            } else {
                match self.units(p.level, code).unwrap_or(0) {
                    0 | 1 => format!(
                        "the number of {}s in {code} is not known to be a multiple of {} ({})",
                        p.level,
                        p.n,
                        self.t_desc()
                    ),
                    u => format!(
                        "{code} is only known to hold a multiple of {u} {}s ({}), not of {}",
                        p.level,
                        self.t_desc(),
                        p.n
                    ),
                }
            };
            self.errors.push(
                err("T-GROUP", at.span, format!("cannot group {p} inside {code}: {why}"))
                    .help("group into a perspective narrower than the current one that divides it evenly (add thread[n] to `requires` or set `threads = N`)"),
            );
        }
        // A group that runs its body in several units replicates every split arm inside it (claims).
        let replicates = !self.one_unit(p, code);
        if replicates {
            self.groups.push(p);
        }
        self.unit_body(body, p);
        if replicates {
            self.groups.pop();
        }
    }

    /// [T-SPLIT] n-ary split: the arms' sizes fit the available units, each aligned to its size (Figs. 9, 10).
    pub(super) fn t_split(
        &mut self,
        span: Span,
        level: Level,
        unit: u32,
        arms: &[SplitArm],
        code: Perspective,
    ) {
        let id = self.next_split;
        self.next_split += 1;
        if level == Level::Grid {
            // Blocks are the grid's units: `split(block)` divides them.
            self.errors
                .push(err("T-SPLIT", span, "a grid cannot be split"));
        }
        let avail = self.units(level, code);
        let sizes: Vec<String> = arms
            .iter()
            .map(|a| (a.size / unit.max(1)).to_string())
            .collect();
        let desc = if unit == 1 {
            format!("split({level}) {{ {} }}", sizes.join(", "))
        } else {
            format!(
                "split({}) {{ {} }}",
                if unit == 32 { "warp" } else { "warpgroup" },
                sizes.join(", ")
            )
        };
        // Arms that do not fit: their bodies' perspective errors would only repeat the split's.
        let mut bad = vec![avail.is_none(); arms.len()];
        match avail {
            None => self.errors.push(err(
                "T-SPLIT",
                span,
                format!(
                    "cannot split {code} by {level}: {level} is broader than the code perspective"
                ),
            )),
            Some(d) => {
                let mut off: u64 = 0;
                for (k, a) in arms.iter().enumerate() {
                    let n = a.size as u64;
                    bad[k] = off + n > d || d % n != 0 || !off.is_multiple_of(n);
                    if off + n > d {
                        self.errors.push(
                            err(
                                "T-SPLIT",
                                a.size_span,
                                format!("{desc} does not fit in {code}: arms need {} {level} units but only {d} are guaranteed", arms.iter().map(|a| a.size as u64).sum::<u64>()),
                            )
                            .help(if code.level > level { format!("guaranteed units come from `requires`/`threads` ({})", self.t_desc()) } else { "make the arms add up to at most the perspective's size".into() }),
                        );
                        break;
                    }
                    if d % n != 0 {
                        self.errors.push(err(
                            "T-SPLIT",
                            a.size_span,
                            format!("in {desc} inside {code}: arm {level}[{n}] does not divide the {d} available {level} units"),
                        ));
                    } else if !off.is_multiple_of(n) {
                        self.errors.push(
                            err(
                                "T-SPLIT",
                                a.size_span,
                                format!("in {desc} inside {code}: arm {level}[{n}] starts at offset {off}, which is not aligned to {n}"),
                            )
                            .help("order the arms largest first, or pad with smaller arms so each starts at a multiple of its size"),
                        );
                    }
                    off += n;
                }
            }
        }
        for (i, a) in arms.iter().enumerate() {
            let p = Perspective::new(level, a.size);
            self.arms.push(Arm {
                split: id,
                arm: i,
                at: p,
                groups: self.groups.len(),
            });
            self.conds.push(None);
            let before = self.errors.len();
            self.unit_body(&a.body, p);
            if bad[i] {
                let own: Vec<Diagnostic> = self
                    .errors
                    .drain(before..)
                    .filter(|d| !follows_from_perspective(d.rule))
                    .collect();
                self.errors.extend(own);
            }
            self.conds.pop();
            self.arms.pop();
        }
    }

    /// The pointer a partition/claim/async_ narrows: must be memory (not a local array).
    pub(super) fn memory_target(&mut self, rule: &'static str, target: &Ident) -> Option<usize> {
        let vi = self.use_var(target)?;
        let v = &self.vars[vi];
        match v.ty {
            Ty::Ptr { .. } => Some(vi),
            Ty::Err => None,
            _ => {
                let d = err(
                    rule,
                    target.span,
                    format!(
                        "`{}` has type {} but only pointers and shared allocations can be narrowed",
                        v.name, v.ty
                    ),
                )
                .help("thread-local arrays are already per-thread; index them directly");
                self.errors.push(d);
                None
            }
        }
    }

    /// [T-PARTITION] (T-Partition / T-Lower): `x` at the code perspective is split into views at narrower P.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn t_partition(
        &mut self,
        span: Span,
        target: &Ident,
        at: &SpannedPerspective,
        index: &IndexFn,
        new_name: &Ident,
        body: &Block,
        code: Perspective,
    ) {
        let p = at.perspective;
        let vi = self.memory_target("T-PARTITION", target);
        if let Some(vi) = vi {
            let v = self.vars[vi].clone();
            if v.at != code {
                self.errors.push(
                    err(
                        "T-PARTITION",
                        target.span,
                        format!("`{}` is at {} but the code is at {code}: only memory at the code perspective can be partitioned", v.name, v.at),
                    )
                    .note(v.span, format!("`{}` declared here at {}", v.name, v.at))
                    .help(format!("partition it from code at {}: first into this code's units there (`partition({}, {code}, |k| unit * N + k, ..)` outside the `group`), then that view further in here; or, for a position computed here (a scan's scatter), declare `#[at(thread[1])] let mut pos` in code at {}, assign it in here, and partition with it after this code", v.at, v.name, v.at)),
                );
            }
            if v.is_async {
                self.async_only(&v, target.span);
            }
        }
        if !self.le(p, code) {
            self.errors.push(err(
                "T-PARTITION",
                at.span,
                format!("cannot partition into {p} from {code}: {p} is not narrower than {code} with alignment ({})", self.t_desc()),
            ));
        }
        // The index function reads at P: its parameters are P-local integers.
        let mark = self.vars.len();
        for ip in &index.params {
            self.declare(ip, p, Ty::IntLit, false);
        }
        // T-PARTITION: the closure maps each P unit to its part of `x`, so it reads at P (READ-UP into P).
        let sink = Sink {
            p,
            rule: "T-PARTITION",
            what: format!(
                "the index closure of `partition({}, {p}, ..)`, which computes one offset per {p} unit",
                target.name
            ),
            id_target: None,
        };
        let ity = self.expr(&index.body, &sink, code);
        self.expect_int(&ity, index.body.span, "the partition index");
        // The variables the closure reads besides its parameters (declared before `mark`, so their
        // indices outlive the truncation).
        let mut reads = Vec::new();
        walk::walk_vars(&index.body, &mut |name| {
            if let Some(i) = self.lookup(name).filter(|&i| i < mark) {
                reads.push(i);
            }
        });
        let same_for = self.closure_same_for(index, &reads, code);
        let partition_id = self.next_partition;
        self.next_partition += 1;
        let (overlap, layout, inherited) =
            self.view_overlaps(index, (p, code), vi, partition_id, span, &target.name);
        self.vars.truncate(mark);
        // They stay as they are inside the partition (T-PARTITION).
        let frozen_mark = self.frozen.len();
        for i in reads {
            if !self.frozen.iter().any(|(f, _, _)| *f == i) {
                self.frozen.push((i, span, target.name.clone()));
            }
        }
        let Some(vi) = vi else {
            self.body_after_error(new_name, body, code);
            self.frozen.truncate(frozen_mark);
            return;
        };
        let saved = self.vars[vi].hidden.replace(Hidden::Partition(span));
        let ty = self.vars[vi].ty.clone();
        let shared = matches!(
            ty,
            Ty::Ptr {
                space: Space::Shared,
                ..
            }
        );
        let mutable = self.vars[vi].mutable;
        let mark = self.vars.len();
        let ni = self.declare(new_name, p, ty, mutable);
        self.vars[ni].index_arity = index.params.len();
        self.vars[ni].is_async = self.vars[vi].is_async;
        self.vars[ni].fill_slot = self.vars[vi].fill_slot;
        self.vars[ni].overlap = overlap.or(inherited);
        self.vars[ni].layout = layout;
        // An index closure that cannot tell the P units of a `same_for` unit apart hands them all the same
        // elements (`|x| x`: the whole allocation to every warpgroup): a shared view is then used as a claim,
        // by one split arm at P (CLAIM-ONE-BRANCH), else those units would race on it. Global memory keeps
        // this as the way to write elements chosen at run time (a persistent kernel's tiles): disjointness
        // is then the program's, and the emulator's race detector checks it.
        if let Some(same_for) = same_for.filter(|&f| shared && !self.one_unit(p, f)) {
            self.vars[ni].claim = Some(ClaimInfo {
                at: p,
                arm_base: self.arms.len(),
                first_use: None,
                group_base: self.groups.len(),
                same_for,
                from_partition: true,
            });
        }
        self.body(body, code);
        self.vars.truncate(mark);
        self.vars[vi].hidden = saved;
        self.frozen.truncate(frozen_mark);
    }

    /// [T-PARTITION] `vi` is read by an enclosing partition's index closure: assigning it would hand the
    /// units other elements halfway through (closures read their variables where the view is used).
    pub(super) fn frozen_by_partition(&mut self, vi: usize, span: Span) {
        if let Some((_, at, target)) = self.frozen.iter().find(|(f, _, _)| *f == vi).cloned() {
            let name = self.vars[vi].name.clone();
            self.errors.push(
                err(
                    "T-PARTITION",
                    span,
                    format!("`{name}` is read by the index closure of `partition({target}, ..)`: assigning it inside the partition would move the elements each unit owns"),
                )
                .note(at, "the partition whose closure reads it")
                .help(format!("copy it first (`let {name}0 = {name};`) and use the copy in the closure, or assign it after the partition")),
            );
        }
    }

    /// The narrowest perspective an index closure reads (`reads`: the variables it reads besides its
    /// parameters; `code` when none is narrower): every P unit inside one unit of it computes the same
    /// offsets. `None` when the closure calls anything (a call may tell the units apart) or reads
    /// perspectives that are not nested.
    fn closure_same_for(
        &self,
        index: &IndexFn,
        reads: &[usize],
        code: Perspective,
    ) -> Option<Perspective> {
        let mut calls = false;
        walk::walk_exprs(&index.body, &mut |e| {
            calls |= matches!(
                e.kind,
                ExprKind::Call { .. } | ExprKind::MethodCall { .. } | ExprKind::Asm { .. }
            );
        });
        if calls {
            return None;
        }
        let mut finest = Some(code);
        for v in reads.iter().map(|&i| &self.vars[i]) {
            if v.konst.is_some() {
                continue;
            }
            finest = self.narrower(finest, Some(v.at));
        }
        finest
    }

    /// The narrower of two nested perspectives; `None` when either is unknown or they are not nested.
    pub(super) fn narrower(
        &self,
        a: Option<Perspective>,
        b: Option<Perspective>,
    ) -> Option<Perspective> {
        match (a, b) {
            (Some(a), Some(b)) if self.le(a, b) => Some(a),
            (Some(a), Some(b)) if self.le(b, a) => Some(b),
            _ => None,
        }
    }

    /// A `group` body or split arm: code in a new unit, whose ranks start at 0.
    fn unit_body(&mut self, b: &Block, p: Perspective) {
        let saved = self.scope;
        self.scope = self.next_scope;
        self.next_scope += 1;
        self.body(b, p);
        self.scope = saved;
    }

    /// The body of a scope whose target was refused: its new name is declared with the error type, so its
    /// uses report nothing more (an UNKNOWN-NAME after the error that says what went wrong, with a "did you
    /// mean" of some other variable, sent users the wrong way).
    pub(super) fn body_after_error(&mut self, new_name: &Ident, b: &Block, code: Perspective) {
        let mark = self.vars.len();
        self.declare(new_name, code, Ty::Err, true);
        self.body(b, code);
        self.vars.truncate(mark);
    }

    /// [T-CLAIM] `claim(x, P, |y| ..)`: y at P is usable in one split arm at P only ([CLAIM-ONE-BRANCH]).
    pub(super) fn t_claim(
        &mut self,
        span: Span,
        target: &Ident,
        at: &SpannedPerspective,
        new_name: &Ident,
        body: &Block,
        code: Perspective,
    ) {
        let p = at.perspective;
        let vi = self.memory_target("T-CLAIM", target);
        if let Some(vi) = vi {
            let v = self.vars[vi].clone();
            if v.at != code {
                self.errors.push(
                    err(
                        "T-CLAIM",
                        target.span,
                        format!("`{}` is at {} but the code is at {code}: only memory at the code perspective can be claimed", v.name, v.at),
                    )
                    .note(v.span, format!("`{}` declared here at {}", v.name, v.at)),
                );
            }
        }
        if !self.le(p, code) {
            self.errors.push(err(
                "T-CLAIM",
                at.span,
                format!("cannot claim {p} from {code}: {p} is not narrower than {code} with alignment ({})", self.t_desc()),
            ));
        }
        let Some(vi) = vi else {
            self.body_after_error(new_name, body, code);
            return;
        };
        let saved = self.vars[vi].hidden.replace(Hidden::Claim(span));
        let ty = self.vars[vi].ty.clone();
        let mutable = self.vars[vi].mutable;
        let mark = self.vars.len();
        let ni = self.declare(new_name, p, ty, mutable);
        self.vars[ni].index_arity = self.vars[vi].index_arity;
        self.vars[ni].overlap = self.vars[vi].overlap.clone();
        self.vars[ni].layout = self.vars[vi].layout.clone();
        self.vars[ni].claim = Some(ClaimInfo {
            at: p,
            arm_base: self.arms.len(),
            first_use: None,
            group_base: self.groups.len(),
            same_for: code,
            from_partition: false,
        });
        self.body(body, code);
        self.vars.truncate(mark);
        self.vars[vi].hidden = saved;
    }

    /// §3.7 `async_(x, |y| ..)`: x hidden, y only for async copies ([ASYNC-ONLY]).
    pub(super) fn t_async(
        &mut self,
        span: Span,
        target: &Ident,
        new_name: &Ident,
        body: &Block,
        code: Perspective,
    ) {
        let Some(vi) = self.memory_target("ASYNC-ONLY", target) else {
            self.body_after_error(new_name, body, code);
            return;
        };
        let saved = self.vars[vi].hidden.replace(Hidden::Async(span));
        let (ty, at, mutable) = (
            self.vars[vi].ty.clone(),
            self.vars[vi].at,
            self.vars[vi].mutable,
        );
        let mark = self.vars.len();
        let ni = self.declare(new_name, at, ty, mutable);
        self.vars[ni].is_async = true;
        self.vars[ni].index_arity = self.vars[vi].index_arity;
        self.body(body, code);
        self.vars.truncate(mark);
        self.vars[vi].hidden = saved;
    }

    /// [ASYNC-ONLY] an `async_` name may only be the destination of an async copy intrinsic.
    pub(super) fn async_only(&mut self, v: &Var, span: Span) {
        let d = if v.fill_slot {
            err(
                "ASYNC-ONLY",
                span,
                format!("`{}` is the slot a `fill` is loading: only async copies into it (`tma_load`, `tma_load_multicast`, `cp_async_bulk`, `cp_async`) may use it", v.name),
            )
            .note(v.span, "bound by `fill` here")
            .help("read the slot in a `drain(r, step, |..| ..)` of the same step: it waits until the fill's copies have landed")
        } else {
            err(
                "ASYNC-ONLY",
                span,
                format!("`{}` is an `async_` name: only async copy intrinsics (`cp_async`, `cp_async_bulk`, `tma_load`) may use it", v.name),
            )
            .note(v.span, "bound by `async_` here")
            .help(format!("pass it as the destination (`cp_async({0}, di, src, si, 16)`, `tma_load({0}, map, x, y)`), and read the memory after the `async_` scope ends", v.name))
        };
        self.errors.push(d);
    }

    /// [INTRINSIC] the intrinsic `name` requires perspective `p` to divide the code perspective.
    pub(super) fn need_perspective(&mut self, name: &Ident, p: Perspective, code: Perspective) {
        if !self.le(p, code) {
            let why = if p.level > code.level || (p.level == code.level && p.n > code.n) {
                format!("{code} has fewer threads than {p}")
            } else {
                format!("{p} does not divide {code} ({})", self.t_desc())
            };
            self.errors.push(
                err(
                    "INTRINSIC",
                    name.span,
                    format!(
                        "`{}` requires {p} but is called from {code}: {why}",
                        name.name
                    ),
                )
                .help(format!(
                    "call it inside `group({p}, || {{ .. }})` or a split arm of {p}"
                )),
            );
        }
    }
}

/// Rules an arm's perspective decides: in an arm that does not fit its split (T-SPLIT), they would report
/// the consequences of the wrong perspective (a `grid[1]` value that "may differ" in a `thread[256]` that
/// does not divide the block), not mistakes of their own.
fn follows_from_perspective(rule: &str) -> bool {
    matches!(
        rule,
        "READ-UP"
            | "WRITE-DOWN"
            | "CALL-ARG"
            | "T-ARR-ACCESS-SHARED"
            | "T-GROUP"
            | "T-SPLIT"
            | "T-PARTITION"
            | "T-CLAIM"
            | "T-FUNCTION-CALL"
            | "INTRINSIC"
            | "STORE"
            | "CLAIM-ONE-BRANCH"
            | "WGMMA"
            | "STMATRIX"
            | "SETMAXNREG"
    )
}
