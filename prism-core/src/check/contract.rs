//! The launch contract and layout: `requires` / `threads` / `blocks` (rule REQUIRES), the function's
//! parameters and result, each instance's facts, and shared-memory sizes (SMEM-LIMIT).

use super::*;

pub(super) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

pub(super) fn lcm(a: u32, b: u32) -> Option<u32> {
    let l = (a as u64 / gcd(a as u64, b as u64)) * b as u64;
    u32::try_from(l).ok()
}

/// [REQUIRES] the perspective bound is ordered broadest first, each strictly narrower than the previous; a
/// kernel starts at `grid[1]`. Also derives the guaranteed divisors of T and B.
pub(super) fn requires_rule(f: &Function, errors: &mut Vec<Diagnostic>) -> Facts {
    let top = f
        .requires
        .first()
        .map(|p| p.perspective)
        .unwrap_or(Perspective::thread(1));
    if f.requires.is_empty() {
        errors.push(Diagnostic::new(
            "REQUIRES",
            f.requires_span,
            "`requires(..)` is empty",
        ));
    }
    if f.kind == FnKind::Kernel && top != Perspective::grid(1) {
        let span = f
            .requires
            .first()
            .map(|p| p.span)
            .unwrap_or(f.requires_span);
        errors.push(
            Diagnostic::new(
                "REQUIRES",
                span,
                format!("a kernel starts at grid[1], but `requires` starts at {top}"),
            )
            .help("write `requires(grid[1], block[1], thread[..])`"),
        );
    }
    for w in f.requires.windows(2) {
        let (a, b) = (w[0].perspective, w[1].perspective);
        let ok = if a.level == b.level {
            a.n % b.n == 0 && a.n != b.n
        } else {
            b.level < a.level
        };
        if !ok {
            errors.push(
                Diagnostic::new(
                    "REQUIRES",
                    w[1].span,
                    format!("`requires` must go from broadest to narrowest, but {b} follows {a}"),
                )
                .help("order the bound like `grid[1], block[1], thread[128], thread[32]` (same-level sizes must divide)"),
            );
        }
    }
    // Perspectives no launch can hold: a block has at most 1024 threads, a grid at most 2^31 - 1 blocks.
    for p in &f.requires {
        let (n, limit, what) = match p.perspective.level {
            Level::Thread => (p.perspective.n, 1024, "threads a block can have"),
            Level::Block => (p.perspective.n, i32::MAX as u32, "blocks a grid can have"),
            Level::Grid => continue,
        };
        if n > limit {
            errors.push(
                Diagnostic::new(
                    "REQUIRES",
                    p.span,
                    format!(
                        "{} is more than the {limit} {what}: no launch satisfies it",
                        p.perspective
                    ),
                )
                .help("use a size a launch can have (`thread[32]`, `thread[128]`, `block[2]`, ..)"),
            );
        }
    }
    let mut t_mult = 1u32;
    let mut b_mult = 1u32;
    for p in &f.requires {
        let below_top = p.perspective.level < top.level;
        match p.perspective.level {
            Level::Thread if below_top => t_mult = lcm(t_mult, p.perspective.n).unwrap_or(t_mult),
            Level::Block if below_top => b_mult = lcm(b_mult, p.perspective.n).unwrap_or(b_mult),
            _ => {}
        }
    }
    if let Some(r) = &f.returns {
        if !f.requires.is_empty() && !narrower_syntactic(r.perspective, top) {
            errors.push(Diagnostic::new(
                "REQUIRES",
                r.span,
                format!("`returns = {}` is not narrower than or equal to the function's top perspective {top}", r.perspective),
            ));
        }
    }
    Facts {
        top,
        t_mult,
        b_mult,
    }
}

impl<'a> Cx<'a> {
    pub(super) fn run(&mut self) {
        let f = self.f;
        self.launch_shape();
        // Parameters.
        for p in &f.params {
            self.param(p);
        }
        let top = self.facts.top;
        // The body's own scope stays open for the tail expression.
        for s in &f.body.stmts {
            self.stmt(s, top);
        }
        self.tail();
        if f.kind == FnKind::Kernel && uses_tma(f, self.deps) {
            self.smem_align = self.smem_align.max(128);
        }
        self.smem_limit();
        self.cluster_rule();
    }

    /// `threads = ..` and `blocks = ..` (rule 1): in range and multiples of what `requires` needs.
    fn launch_shape(&mut self) {
        let f = self.f;
        // threads / blocks (rule 1).
        if let Some(e) = &f.threads {
            if let Some(v) = self.eval_opt(e, "`threads`") {
                if !(1..=1024).contains(&v) {
                    self.errors.push(err(
                        "REQUIRES",
                        e.span,
                        format!("`threads = {v}` must be between 1 and 1024"),
                    ));
                } else if !(v as u32).is_multiple_of(self.facts.t_mult) {
                    self.errors.push(
                        err(
                            "REQUIRES",
                            e.span,
                            format!(
                                "`threads = {v}` is not a multiple of {}, which `requires` needs (thread[{}])",
                                self.facts.t_mult, self.facts.t_mult
                            ),
                        )
                        .help("make the block size a multiple of every thread[n] in `requires`"),
                    );
                } else {
                    self.t = v as u32;
                    self.t_exact = Some(v as u32);
                }
            }
        }
        if let Some(e) = &f.blocks {
            if let Some(v) = self.eval_opt(e, "`blocks`") {
                if v < 1 || v > u32::MAX as i64 {
                    self.errors.push(err(
                        "REQUIRES",
                        e.span,
                        format!("`blocks = {v}` must be at least 1"),
                    ));
                } else if !(v as u32).is_multiple_of(self.facts.b_mult) {
                    self.errors.push(err(
                        "REQUIRES",
                        e.span,
                        format!(
                            "`blocks = {v}` is not a multiple of {}, which `requires` needs",
                            self.facts.b_mult
                        ),
                    ));
                } else {
                    self.b = v as u32;
                    self.b_exact = Some(v as u32);
                }
            }
        }
    }

    /// A parameter: its perspective (T-DECL, PARAM-MUT) and type, declared in the function's scope.
    fn param(&mut self, p: &Param) {
        let f = self.f;
        let at = match &p.ty {
            Type::ArrayRef { .. } => {
                if let Some(a) = &p.at {
                    if a.perspective != Perspective::thread(1) {
                        self.errors.push(err(
                            "T-DECL",
                            a.span,
                            format!("array reference `{}` is thread-local: its perspective is thread[1], not {}", p.name, a.perspective),
                        ));
                    }
                }
                Perspective::thread(1)
            }
            _ => p.at.map(|a| a.perspective).unwrap_or(self.facts.top),
        };
        if let Some(a) = &p.at {
            if !self.le(a.perspective, self.facts.top) {
                self.errors.push(err(
                    "T-DECL",
                    a.span,
                    format!(
                        "parameter `{}` at {} is not narrower than or equal to the function's top perspective {}",
                        p.name, a.perspective, self.facts.top
                    ),
                ));
            }
        }
        // Paper 000 §3.4.2: thread-shared data gets a narrower perspective only from a shared allocation
        // (block[1]), `partition` (T-PARTITION: y at π/c) or `claim` (T-CLAIM). A kernel's pointer
        // arguments come from the host, the same address for every thread: a `*mut` one declared
        // narrower than the kernel would let every unit write "its own" copy of the same memory.
        if let (FnKind::Kernel, Type::Ptr { mutable: true, .. }, Some(a)) = (f.kind, &p.ty, &p.at) {
            if a.perspective != self.facts.top {
                self.errors.push(
                    err(
                        "PARAM-MUT",
                        a.span,
                        format!(
                            "`*mut` kernel parameter `{}` is declared at {}, narrower than the kernel's {}: \
                             the host passes the same pointer to every {}, so their writes through it would race",
                            p.name, a.perspective, self.facts.top, a.perspective
                        ),
                    )
                    .note(p.name.span, format!("`{}` is one address for the whole launch", p.name))
                    .help(format!(
                        "declare it at {} (or drop `#[at]`) and narrow it with `partition({}, {}, |i| .., |{}_part| ..)` \
                         (paper 000 §3.4.2, T-PARTITION)",
                        self.facts.top, p.name, a.perspective, p.name
                    )),
                );
            }
        }
        if f.kind == FnKind::Kernel && matches!(p.ty, Type::ArrayRef { .. }) {
            self.errors.push(
                err("TYPE", p.span, "kernels cannot take array references")
                    .help("pass a pointer `*const T`"),
            );
        }
        let (ty, mutable) = match &p.ty {
            Type::Scalar(s) => (Ty::Scalar(*s), false),
            Type::Ptr { elem, mutable } => (
                Ty::Ptr {
                    elem: *elem,
                    mutable: *mutable,
                    space: Space::Global,
                },
                *mutable,
            ),
            Type::ArrayRef { elem, len, mutable } => {
                let len = self.eval_opt(len, "an array length");
                (Ty::Array { elem: *elem, len }, *mutable)
            }
            Type::TensorMap {
                elem,
                rank,
                mutable,
            } => {
                // A device function's map is its caller's (the argument names a map parameter): the box it
                // moves is recorded on the kernel's parameter at each call.
                (
                    Ty::TensorMap {
                        elem: *elem,
                        rank: *rank,
                        mutable: *mutable,
                    },
                    false,
                )
            }
            // A caller's shared memory, read-only (wgmma operands, loads) or, as `SharedMut`, writable
            // (`stmatrix_bf16` targets, stores); its layout and length are checked at each call (the emitter
            // sees the caller's allocation).
            Type::Shared { elem, mutable, .. } if f.kind == FnKind::Device => (
                Ty::Ptr {
                    elem: *elem,
                    mutable: *mutable,
                    space: Space::Shared,
                },
                false,
            ),
            Type::Shared { .. } => {
                self.errors.push(
                    err("TYPE", p.span, "kernels take global memory, not shared memory").help(
                        "allocate shared memory in the kernel: `let s: Shared<[T; N]>;` at block[1]",
                    ),
                );
                (Ty::Err, false)
            }
            // A caller's ring: only `fill` / `drain` use it (RING).
            Type::Ring { elems } if f.kind == FnKind::Device => (Ty::Ring(elems.clone()), false),
            Type::Ring { .. } => {
                self.errors.push(
                    err("RING", p.span, "a kernel cannot take a ring: rings are the block's own")
                        .help("declare it in the kernel with `ring(STAGES, (sa, sb), |r| ..)` and pass `r` to device functions"),
                );
                (Ty::Err, false)
            }
            Type::Array { .. } => (Ty::Err, false),
        };
        self.declare(&p.name, at, ty, mutable);
    }

    /// The tail expression: the device function's value, at its result perspective, of its return type.
    fn tail(&mut self) {
        let f = self.f;
        let top = self.facts.top;
        // Tail expression: the device function's value (T-FUNCTION-CALL result perspective).
        let ret_at = f.returns.map(|r| r.perspective).unwrap_or(top);
        match (&f.body.tail, &f.ret) {
            (Some(t), Some((rt, _))) => {
                let sink = Sink {
                    p: ret_at,
                    rule: "READ-UP",
                    what: format!("the result of `{}` ({ret_at})", f.name),
                    id_target: None,
                };
                let ty = self.expr(t, &sink, top);
                let want = type_to_ty(rt);
                self.expect_ty(&ty, &want, t.span, "the function's result");
            }
            (Some(t), None) => self.errors.push(
                err(
                    "TYPE",
                    t.span,
                    "this function has no return type but ends in a value",
                )
                .help("add `-> T` to the signature, or end the expression with `;`"),
            ),
            (None, Some((_, span))) => self.errors.push(err(
                "TYPE",
                *span,
                format!(
                    "`{}` declares a return type but has no tail expression",
                    f.name
                ),
            )),
            (None, None) => {}
        }
        if f.kind == FnKind::Kernel && f.ret.is_some() {
            if let Some((_, span)) = &f.ret {
                self.errors.push(
                    err("TYPE", *span, "kernels cannot return a value")
                        .help("write results through a `*mut` pointer"),
                );
            }
        }
    }

    pub(super) fn instance(&self, values: Vec<i64>) -> CheckedInstance {
        let own = align16(self.own_smem);
        CheckedInstance {
            values,
            smem_bytes: (own + self.callee_smem + (self.smem_align - 16)).min(u32::MAX as u64)
                as u32,
            callee_smem_base: own.min(u32::MAX as u64) as u32,
            shared: self.shared.clone(),
            threads_multiple_of: self.facts.t_mult,
            threads_exact: self.t_exact,
            blocks_multiple_of: self.facts.b_mult,
            blocks_exact: self.b_exact,
        }
    }

    /// [SMEM-LIMIT] own allocations plus the largest callee's fit the declared `smem` and the device.
    pub(super) fn smem_limit(&mut self) {
        let total = align16(self.own_smem) + self.callee_smem + (self.smem_align - 16);
        let span = self
            .f
            .smem
            .as_ref()
            .map(|e| e.span)
            .unwrap_or(self.f.name.span);
        if let Some(e) = &self.f.smem {
            if let Some(declared) = self.eval_opt(e, "`smem`") {
                if declared < 0 || declared > DEVICE_SMEM_LIMIT as i64 {
                    let help = if total > DEVICE_SMEM_LIMIT {
                        // Reported below, at the allocation.
                        format!("its allocations need {total} bytes, more than the device has: allocate less")
                    } else {
                        format!("declare the bytes of shared memory the function needs: `smem = {total}`")
                    };
                    self.errors.push(
                        err(
                            "SMEM-LIMIT",
                            span,
                            format!("`{}` declares `smem = {declared}`: a byte count from 0 to the device limit of {DEVICE_SMEM_LIMIT} bytes per block", self.f.name),
                        )
                        .help(help),
                    );
                } else if total > declared as u64 {
                    self.errors.push(
                        err(
                            "SMEM-LIMIT",
                            span,
                            format!("`{}` uses {total} bytes of shared memory but declares `smem = {declared}`", self.f.name),
                        )
                        .help(format!(
                            "declare `smem = {total}`, or allocate less: each allocation is rounded up to 16 bytes{}",
                            if self.smem_align > 16 {
                                format!(
                                    ", and {} bytes more let the window start at a {}-byte boundary (TMA and swizzled layouts need it; the dynamic window is only 16-byte aligned)",
                                    self.smem_align - 16,
                                    self.smem_align
                                )
                            } else {
                                String::new()
                            }
                        )),
                    );
                }
            }
        } else if self.f.kind == FnKind::Device && total > 0 {
            // Device functions announce their shared memory so callers can account for it. The error points
            // at the first allocation (or the call of a callee that needs shared memory).
            let (at, what) = match (self.first_alloc, self.first_smem_call) {
                (Some(a), _) => (a, "this allocation"),
                (None, Some(c)) => (c, "this call (the callee's `smem`)"),
                (None, None) => (self.f.name.span, "its body"),
            };
            self.errors.push(
                err(
                    "SMEM-LIMIT",
                    at,
                    format!(
                        "`{}` allocates {total} bytes of shared memory ({what}) but declares no `smem`",
                        self.f.name
                    ),
                )
                .note(
                    self.f.name.span,
                    format!("`{}` is declared here without `smem = ..`", self.f.name),
                )
                .help(format!("add `smem = {total}` to the attribute, so that callers can budget it")),
            );
        }
        if total > DEVICE_SMEM_LIMIT {
            // At the allocations (the first), not at the attribute that may already be reported.
            let (at, what) = match (self.first_alloc, self.first_smem_call) {
                (Some(a), _) => (a, "its allocations, the first one here"),
                (None, Some(c)) => (c, "with this call's callee"),
                (None, None) => (span, "in all"),
            };
            self.errors.push(
                err(
                    "SMEM-LIMIT",
                    at,
                    format!("`{}` uses {total} bytes of shared memory ({what}), more than the device limit of {DEVICE_SMEM_LIMIT} bytes", self.f.name),
                )
                .help("allocate less per block: smaller tiles, or fewer ring slots"),
            );
        }
    }
}

/// Shared memory a callee needs: its declared `smem`, else its own allocations plus its largest callee's.
pub(super) fn fn_smem(
    f: &Function,
    consts: &dyn Fn(&str) -> Option<i64>,
    deps: &[Function],
    depth: u32,
) -> Option<u64> {
    if depth > 16 {
        return None;
    }
    if let Some(e) = &f.smem {
        return eval_const(e, consts).ok().map(|v| v.max(0) as u64);
    }
    let mut own = 0u64;
    let mut callee = 0u64;
    walk_block(&f.body, &mut |s| {
        if let StmtKind::Let {
            ty: Some(Type::Shared {
                elem, len, layout, ..
            }),
            ..
        } = &s.kind
        {
            if let Ok(n) = eval_const(len, consts) {
                own = layout.place(own) + (n.max(0) as u64) * elem.size() as u64;
            }
        }
    });
    walk_calls(&f.body, &mut |name, _| {
        if let Some(c) = deps
            .iter()
            .find(|d| d.name.name == name && d.name.name != f.name.name)
        {
            if c.const_params.is_empty() {
                if let Some(b) = fn_smem(c, &|_| None, deps, depth + 1) {
                    callee = callee.max(b);
                }
            }
        }
    });
    Some(align16(own) + callee)
}

/// Whether `f` or a function it calls moves TMA boxes (`tma_load`, `tma_load_multicast`, `tma_store`): the
/// kernel's dynamic shared memory then starts on 128 bytes, as the emitter lays it out (TMA's alignment).
pub(super) fn uses_tma(f: &Function, deps: &[Function]) -> bool {
    let body_of = |name: &str| {
        deps.iter()
            .find(|d| d.name.name == name && d.name.name != f.name.name)
            .map(|d| &d.body)
    };
    let tma = |name: &str| matches!(name, "tma_load" | "tma_load_multicast" | "tma_store");
    super::walk::reaches_call(&f.body, &body_of, &tma, 0)
}
