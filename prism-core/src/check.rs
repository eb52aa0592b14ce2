//! The perspective checker: paper 000 §3 and appendix A (Bundl's typing rules), on the syntax tree.
//!
//! Each rule is a function named after it (`t_group`, `t_split`, `read_up`, ..); `docs/RULES.md` lists them
//! with an illegal example each. Diagnostics name the rule, the perspectives involved, and point at the token
//! that broke it. The checker never panics and collects independent errors.
//!
//! Perspective algebra (appendix A.1): with T threads per block and B blocks per grid, `block[1] ≅ thread[T]`
//! and `grid[1] ≅ block[B]`. T and B are not known exactly at compile time unless `threads =`/`blocks =` fix
//! them; `requires` gives guaranteed divisors (T is a multiple of every `thread[n]` under a block top). All
//! cross-level comparisons use these guaranteed divisors, which is what makes alignment sound.

use crate::ast::*;
use crate::consteval::eval_const;
use crate::{Diagnostic, DEVICE_SMEM_LIMIT};
use proc_macro2::Span;
use std::collections::HashSet;

/// One shared-memory allocation of the function itself, in source order, with its offset in the block's
/// dynamic shared memory. Callees' allocations start at [`CheckedInstance::callee_smem_base`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedAlloc {
    pub name: String,
    /// Line and column of the `let` (to tell apart same-named allocations in different scopes).
    pub line: usize,
    pub column: usize,
    pub offset: u32,
    pub bytes: u32,
}

/// The facts of one instance (one assignment of the const generics) of a checked function.
#[derive(Clone, Debug)]
pub struct CheckedInstance {
    /// Const-generic values in declaration order (empty when there are none).
    pub values: Vec<i64>,
    /// Total shared memory: own allocations (16-byte aligned, in order) plus the largest callee's.
    pub smem_bytes: u32,
    /// Offset where inlined callees' shared allocations begin (= the end of this function's own).
    pub callee_smem_base: u32,
    pub shared: Vec<SharedAlloc>,
    pub threads_multiple_of: u32,
    pub threads_exact: Option<u32>,
    pub blocks_multiple_of: u32,
    pub blocks_exact: Option<u32>,
}

mod hopper;

/// A function that passed every rule. The emitter only accepts these.
#[derive(Clone, Debug)]
pub struct Checked {
    pub function: Function,
    /// One entry per instance; exactly one (with empty `values`) for a function without const generics, and
    /// for a device function with const generics but no `instances` (checked generically: `values` empty).
    pub instances: Vec<CheckedInstance>,
}

/// Intrinsics the checker knows (docs/SYNTAX.md). Device functions may not shadow them.
pub const INTRINSICS: &[&str] = &[
    "id",
    "sync_threads",
    "sync_warp",
    "shfl_down",
    "shfl_up",
    "shfl_xor",
    "shfl_idx",
    "vote_all",
    "vote_any",
    "ballot",
    "atomic_add",
    "atomic_max",
    "atomic_min",
    "atomic_exch",
    "atomic_cas",
    "mma_m16n8k8_tf32",
    "ldmatrix_x4",
    "ldmatrix_x2",
    "ldmatrix_x1",
    "load4",
    "load2",
    "store4",
    "store2",
    "cp_async",
    "cp_async_bulk",
    "fence",
    "block_dim",
    "grid_dim",
    "tma_load",
    "tma_store",
    "tma_load_multicast",
    "wgmma_bf16",
    "wgmma_f16",
    "set_max_regs",
    "sync_cluster",
];

/// Checks `f` against the rules of paper 000; `deps` are the device functions it may call.
pub fn check_function(f: &Function, deps: &[Function]) -> Result<Checked, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let facts = requires_rule(f, &mut errors);
    // Which const-generic assignments to check.
    let mut value_sets: Vec<Option<Vec<i64>>> = Vec::new();
    if f.const_params.is_empty() {
        if let Some(i) = f.instances.first() {
            errors.push(
                Diagnostic::new(
                    "INSTANCES",
                    i.span,
                    "`instances` given but the function has no const generics",
                )
                .help("remove `instances`, or add `const N: u32` parameters"),
            );
        }
        value_sets.push(Some(Vec::new()));
    } else if f.instances.is_empty() {
        if f.kind == FnKind::Kernel {
            errors.push(
                Diagnostic::new(
                    "INSTANCES",
                    f.name.span,
                    format!("kernel `{}` has const generics but no `instances`", f.name),
                )
                .help("PTX is produced at compile time: list the instances, e.g. `instances = [(64, 64), (128, 128)]`"),
            );
        }
        value_sets.push(None);
    } else {
        for i in &f.instances {
            if i.values.len() != f.const_params.len() {
                errors.push(Diagnostic::new(
                    "INSTANCES",
                    i.span,
                    format!(
                        "instance has {} value(s) but `{}` has {} const generic(s)",
                        i.values.len(),
                        f.name,
                        f.const_params.len()
                    ),
                ));
            } else {
                value_sets.push(Some(i.values.clone()));
            }
        }
    }
    let mut instances = Vec::new();
    let mut seen = HashSet::new();
    if errors.is_empty() {
        for vals in value_sets {
            let mut cx = Cx::new(f, deps, facts, vals.clone());
            cx.run();
            cx.errors
                .extend(crate::consteval::check_overflow(f, vals.as_deref()));
            for d in cx.errors.drain(..) {
                // The same error in every instance is reported once.
                let key = (
                    d.rule,
                    d.message.clone(),
                    d.span.start().line,
                    d.span.start().column,
                );
                if seen.insert(key) {
                    errors.push(d);
                }
            }
            instances.push(cx.instance(vals.unwrap_or_default()));
        }
    }
    if errors.is_empty() {
        Ok(Checked {
            function: f.clone(),
            instances,
        })
    } else {
        Err(errors)
    }
}

// ------------------------------------------------------------------------------------------- facts

/// What `requires`/`threads`/`blocks` guarantee about the launch (rule 1 of docs/RULES.md).
#[derive(Clone, Copy, Debug)]
struct Facts {
    top: Perspective,
    t_mult: u32,
    b_mult: u32,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: u32, b: u32) -> Option<u32> {
    let l = (a as u64 / gcd(a as u64, b as u64)) * b as u64;
    u32::try_from(l).ok()
}

/// [REQUIRES] the perspective bound is ordered broadest first, each strictly narrower than the previous; a
/// kernel starts at `grid[1]`. Also derives the guaranteed divisors of T and B.
fn requires_rule(f: &Function, errors: &mut Vec<Diagnostic>) -> Facts {
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

fn narrower_syntactic(a: Perspective, b: Perspective) -> bool {
    a.narrower_eq_syntactic(b)
}

// ------------------------------------------------------------------------------------------- env

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Space {
    Global,
    Shared,
}

#[derive(Clone, Debug, PartialEq)]
enum Ty {
    Scalar(ScalarType),
    /// An unsuffixed integer literal (or a loop variable with literal bounds): adopts the other operand's type.
    IntLit,
    FloatLit,
    Array {
        elem: ScalarType,
        len: Option<i64>,
    },
    Ptr {
        elem: ScalarType,
        mutable: bool,
        space: Space,
    },
    /// The name a `ring(S, (a, b), |r| ..)` binds: the element types of its memories, in order.
    Ring(Vec<ScalarType>),
    /// A `TensorMap<T, RANK>` kernel parameter.
    TensorMap {
        elem: ScalarType,
        rank: u32,
        mutable: bool,
    },
    Unit,
    /// After an error: suppresses follow-up errors.
    Err,
}

impl std::fmt::Display for Ty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ty::Scalar(s) => write!(f, "{s}"),
            Ty::IntLit => f.write_str("integer"),
            Ty::FloatLit => f.write_str("float"),
            Ty::Array { elem, len: Some(n) } => write!(f, "[{elem}; {n}]"),
            Ty::Array { elem, len: None } => write!(f, "[{elem}; _]"),
            Ty::Ptr {
                elem,
                mutable: true,
                space: Space::Global,
            } => write!(f, "*mut {elem}"),
            Ty::Ptr {
                elem,
                mutable: false,
                space: Space::Global,
            } => write!(f, "*const {elem}"),
            Ty::Ptr { elem, .. } => write!(f, "Shared<[{elem}; _]>"),
            Ty::TensorMap {
                elem,
                rank,
                mutable: false,
            } => write!(f, "TensorMap<{elem}, {rank}>"),
            Ty::TensorMap { elem, rank, .. } => write!(f, "TensorMapMut<{elem}, {rank}>"),
            Ty::Ring(_) => f.write_str("a ring"),
            Ty::Unit => f.write_str("()"),
            Ty::Err => f.write_str("{error}"),
        }
    }
}

#[derive(Clone, Debug)]
enum Hidden {
    Partition(Span),
    Claim(Span),
    Async(Span),
    Ring(Span),
    Peer(Span),
}

#[derive(Clone, Debug)]
struct ClaimInfo {
    at: Perspective,
    /// Length of the split-arm stack when the claim began: only arms above it count.
    arm_base: usize,
    first_use: Option<(usize, usize, Span)>,
}

#[derive(Clone, Debug)]
struct Var {
    name: String,
    span: Span,
    at: Perspective,
    ty: Ty,
    mutable: bool,
    /// A const generic: readable everywhere; its value when known.
    konst: Option<Option<i64>>,
    hidden: Option<Hidden>,
    /// Number of indices at each use (partition names with multi-parameter index closures).
    index_arity: usize,
    claim: Option<ClaimInfo>,
    is_async: bool,
}

/// Where a value flows: the perspective it must be readable at, and how to talk about it.
#[derive(Clone)]
struct Sink {
    p: Perspective,
    rule: &'static str,
    what: String,
    /// `id()` is allowed here (initializer/assigned value of a variable), with this target perspective.
    id_target: Option<Perspective>,
}

#[derive(Clone, Copy)]
struct Arm {
    split: usize,
    arm: usize,
    at: Perspective,
}

struct Cx<'a> {
    f: &'a Function,
    deps: &'a [Function],
    facts: Facts,
    t: u32,
    b: u32,
    t_exact: Option<u32>,
    b_exact: Option<u32>,
    vars: Vec<Var>,
    errors: Vec<Diagnostic>,
    arms: Vec<Arm>,
    next_split: usize,
    loop_depth: u32,
    unsafe_depth: u32,
    shared: Vec<SharedAlloc>,
    own_smem: u64,
    /// Largest alignment a shared allocation needs (swizzled layouts): the dynamic window is rounded up to
    /// it at run time, which costs `align - 16` bytes.
    smem_align: u64,
    callee_smem: u64,
    /// The first shared allocation and the first call of a callee with shared memory (SMEM-LIMIT spans).
    first_alloc: Option<Span>,
    first_smem_call: Option<Span>,
}

/// The element types an atomic intrinsic supports (as the emitter lowers them to PTX `atom`): `None` when
/// `t` is one, else the list for the help line.
fn atomic_types(name: &str, t: ScalarType) -> Option<&'static str> {
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
const MAX_REG_ARRAY: i64 = 4096;

fn err(rule: &'static str, span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::new(rule, span, msg)
}

fn align16(x: u64) -> u64 {
    x.div_ceil(16) * 16
}

impl<'a> Cx<'a> {
    fn new(f: &'a Function, deps: &'a [Function], facts: Facts, vals: Option<Vec<i64>>) -> Self {
        let mut cx = Cx {
            f,
            deps,
            facts,
            t: facts.t_mult,
            b: facts.b_mult,
            t_exact: None,
            b_exact: None,
            vars: Vec::new(),
            errors: Vec::new(),
            arms: Vec::new(),
            next_split: 0,
            loop_depth: 0,
            unsafe_depth: 0,
            shared: Vec::new(),
            own_smem: 0,
            smem_align: 16,
            callee_smem: 0,
            first_alloc: None,
            first_smem_call: None,
        };
        for (i, c) in f.const_params.iter().enumerate() {
            let value = vals.as_ref().and_then(|v| v.get(i).copied());
            cx.vars.push(Var {
                name: c.name.name.clone(),
                span: c.name.span,
                at: facts.top,
                ty: Ty::Scalar(c.ty),
                mutable: false,
                konst: Some(value),
                hidden: None,
                index_arity: 1,
                claim: None,
                is_async: false,
            });
        }
        cx
    }

    fn consts(&self) -> impl Fn(&str) -> Option<i64> + '_ {
        move |n: &str| {
            self.vars
                .iter()
                .rev()
                .find(|v| v.name == n)
                .and_then(|v| v.konst.flatten())
        }
    }

    fn eval(&self, e: &Expr) -> Result<i64, Diagnostic> {
        eval_const(e, &self.consts())
    }

    /// Whether `e` names const generics whose values are unknown (generic device function).
    fn eval_opt(&mut self, e: &Expr, what: &str) -> Option<i64> {
        match self.eval(e) {
            Ok(v) => Some(v),
            Err(d) => {
                if self.mentions_unknown_const(e) {
                    None
                } else {
                    self.errors
                        .push(d.help(format!("{what} must be a constant expression")));
                    None
                }
            }
        }
    }

    fn mentions_unknown_const(&self, e: &Expr) -> bool {
        let mut found = false;
        walk_vars(e, &mut |n| {
            if self
                .vars
                .iter()
                .rev()
                .find(|v| v.name == n)
                .is_some_and(|v| v.konst == Some(None))
            {
                found = true;
            }
        });
        found
    }

    fn run(&mut self) {
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
        // Parameters.
        for p in &f.params {
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
            if let (FnKind::Kernel, Type::Ptr { mutable: true, .. }, Some(a)) =
                (f.kind, &p.ty, &p.at)
            {
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
                    if f.kind != FnKind::Kernel {
                        self.errors.push(
                            err("TYPE", p.span, "tensor maps are kernel parameters").help(
                                "take the `TensorMap` in the kernel and call `tma_load` there",
                            ),
                        );
                    }
                    (
                        Ty::TensorMap {
                            elem: *elem,
                            rank: *rank,
                            mutable: *mutable,
                        },
                        false,
                    )
                }
                Type::Array { .. } | Type::Shared { .. } => (Ty::Err, false),
            };
            self.declare(&p.name, at, ty, mutable);
        }
        let top = self.facts.top;
        // The body's own scope stays open for the tail expression.
        for s in &f.body.stmts {
            self.stmt(s, top);
        }
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
        self.smem_limit();
        self.cluster_rule();
    }

    fn instance(&self, values: Vec<i64>) -> CheckedInstance {
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
    fn smem_limit(&mut self) {
        let total = align16(self.own_smem) + self.callee_smem + (self.smem_align - 16);
        let span = self
            .f
            .smem
            .as_ref()
            .map(|e| e.span)
            .unwrap_or(self.f.name.span);
        if let Some(e) = &self.f.smem {
            if let Some(declared) = self.eval_opt(e, "`smem`") {
                if declared < 0 || total > declared as u64 {
                    self.errors.push(
                        err(
                            "SMEM-LIMIT",
                            span,
                            format!("`{}` uses {total} bytes of shared memory but declares `smem = {declared}`", self.f.name),
                        )
                        .help("raise `smem`, or allocate less (each allocation is rounded up to 16 bytes)"),
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
            self.errors.push(err(
                "SMEM-LIMIT",
                span,
                format!("`{}` uses {total} bytes of shared memory, more than the device limit of {DEVICE_SMEM_LIMIT} bytes", self.f.name),
            ));
        }
    }

    // --------------------------------------------------------------------------- perspective algebra

    /// Guaranteed divisor of the number of `inner` units in one `outer` (§3.2, appendix A.1).
    fn units(&self, inner: Level, outer: Perspective) -> Option<u64> {
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
    fn le(&self, a: Perspective, b: Perspective) -> bool {
        match self.units(a.level, b) {
            Some(d) => d % a.n as u64 == 0,
            None => false,
        }
    }

    fn t_desc(&self) -> String {
        match self.t_exact {
            Some(t) => format!("threads = {t}"),
            None => format!("threads per block a multiple of {}", self.t),
        }
    }

    // --------------------------------------------------------------------------- environment

    fn declare(&mut self, name: &Ident, at: Perspective, ty: Ty, mutable: bool) -> usize {
        self.vars.push(Var {
            name: name.name.clone(),
            span: name.span,
            at,
            ty,
            mutable,
            konst: None,
            hidden: None,
            index_arity: 1,
            claim: None,
            is_async: false,
        });
        self.vars.len() - 1
    }

    /// `&p[i]` where `p` is a pointer or shared allocation: the memory space of the element.
    fn memory_element(&self, e: &Expr) -> Option<Space> {
        let ExprKind::Ref { expr, .. } = &e.kind else {
            return None;
        };
        let ExprKind::Index { base, .. } = &expr.kind else {
            return None;
        };
        let ExprKind::Var(id) = &base.kind else {
            return None;
        };
        match &self.vars[self.lookup(&id.name)?].ty {
            Ty::Ptr { space, .. } => Some(*space),
            _ => None,
        }
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.vars.iter().rposition(|v| v.name == name)
    }

    /// A use of a variable: [UNKNOWN-NAME], hidden names, claim bookkeeping.
    fn use_var(&mut self, id: &Ident) -> Option<usize> {
        let Some(i) = self.lookup(&id.name) else {
            let mut d = err(
                "UNKNOWN-NAME",
                id.span,
                format!("cannot find `{}` in this scope", id.name),
            );
            if let Some(s) = self.similar(&id.name) {
                d = d.help(format!("did you mean `{s}`?"));
            }
            self.errors.push(d);
            return None;
        };
        if let Some(h) = self.vars[i].hidden.clone() {
            let d = match h {
                Hidden::Partition(s) => err(
                    "PARTITION-HIDDEN",
                    id.span,
                    format!("`{}` is partitioned here: inside the partition only its new name may be used", id.name),
                )
                .note(s, "partitioned here"),
                Hidden::Claim(s) => err(
                    "CLAIM-HIDDEN",
                    id.span,
                    format!("`{}` is claimed here: inside the claim only its new name may be used", id.name),
                )
                .note(s, "claimed here"),
                Hidden::Async(s) => err(
                    "ASYNC-HIDDEN",
                    id.span,
                    format!("`{}` is in an `async_` scope: it cannot be used until the scope ends", id.name),
                )
                .note(s, "async scope begins here"),
                Hidden::Ring(s) => err(
                    "RING-HIDDEN",
                    id.span,
                    format!("`{}` is a ring here: inside the ring its slots are reached only through `fill` and `drain`", id.name),
                )
                .note(s, "ring begins here"),
                Hidden::Peer(s) => err(
                    "PEER-HIDDEN",
                    id.span,
                    format!("`{}` is read by the other blocks of the cluster here: it cannot be used until `peer` ends", id.name),
                )
                .note(s, "peer begins here"),
            };
            self.errors.push(d);
            return None;
        }
        self.claim_one_branch(i, id.span);
        Some(i)
    }

    fn similar(&self, name: &str) -> Option<String> {
        let mut best: Option<(usize, &str)> = None;
        for v in &self.vars {
            let d = edit_distance(name, &v.name);
            if d <= 2 && d < name.len().max(1) && best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, &v.name));
            }
        }
        best.map(|(_, s)| s.to_string())
    }

    /// [CLAIM-ONE-BRANCH] every use of a claimed name lies in one and the same split arm (of perspective
    /// equal to the claim's) within the claim body.
    fn claim_one_branch(&mut self, i: usize, span: Span) {
        let Some(c) = self.vars[i].claim.clone() else {
            return;
        };
        let name = self.vars[i].name.clone();
        let arm = self.arms[c.arm_base.min(self.arms.len())..].last().copied();
        let Some(arm) = arm else {
            self.errors.push(
                err(
                    "CLAIM-ONE-BRANCH",
                    span,
                    format!("claimed `{name}` ({}) is used outside a `split` arm", c.at),
                )
                .help(format!(
                    "use it inside one arm of `match split(..)` whose perspective is {}",
                    c.at
                )),
            );
            return;
        };
        if arm.at != c.at {
            self.errors.push(err(
                "CLAIM-ONE-BRANCH",
                span,
                format!(
                    "claimed `{name}` is at {} but is used in a split arm at {}",
                    c.at, arm.at
                ),
            ));
            return;
        }
        match c.first_use {
            None => {
                if let Some(ci) = self.vars[i].claim.as_mut() {
                    ci.first_use = Some((arm.split, arm.arm, span));
                }
            }
            Some((s, a, first)) if (s, a) != (arm.split, arm.arm) => self.errors.push(
                err(
                    "CLAIM-ONE-BRANCH",
                    span,
                    format!(
                        "claimed `{name}` ({}) is used in two different split arms",
                        c.at
                    ),
                )
                .note(first, "first used here, in another arm")
                .help("a claim gives the memory to exactly one branch: use it in one arm only"),
            ),
            Some(_) => {}
        }
    }

    /// [READ-UP] / [WRITE-DOWN]: a variable at `v_at` flows into `sink`.
    fn read_up(&mut self, vi: usize, span: Span, sink: &Sink) {
        let v = &self.vars[vi];
        if v.konst.is_some() || self.le(sink.p, v.at) {
            return;
        }
        let d = err(
            sink.rule,
            span,
            format!(
                "`{}` lives at {} but is read into {}: it may differ between the threads of {}",
                v.name, v.at, sink.what, sink.p
            ),
        )
        .note(v.span, format!("`{}` declared here at {}", v.name, v.at))
        .help(if sink.rule == "T-PARTITION" {
            format!(
                "the index closure runs at {p} (READ-UP into {p}): it may read only variables at {p} or broader, \
                 which every thread of a {p} unit shares; per-thread offsets belong in the indices of the uses \
                 (`y[i]`), or partition further down to the threads that own the value",
                p = sink.p
            )
        } else {
            format!("only variables at {} or broader can flow there", sink.p)
        });
        self.errors.push(d);
    }

    // --------------------------------------------------------------------------- statements

    fn block(&mut self, b: &Block, code: Perspective) {
        let mark = self.vars.len();
        for s in &b.stmts {
            self.stmt(s, code);
        }
        // The tail of nested blocks is only the function body's (handled in `run`).
        self.vars.truncate(mark);
    }

    /// A closure-like body (group/split arm/partition/..): fresh loop context, new scope.
    fn body(&mut self, b: &Block, code: Perspective) {
        let saved = self.loop_depth;
        self.loop_depth = 0;
        self.block(b, code);
        self.loop_depth = saved;
    }

    fn stmt(&mut self, s: &Stmt, code: Perspective) {
        match &s.kind {
            StmtKind::Let {
                name,
                mutable,
                ty,
                at,
                init,
            } => self.t_decl(s, name, *mutable, ty.as_ref(), *at, init.as_ref(), code),
            StmtKind::Assign { place, op, value } => self.t_assn(place, *op, value, code),
            StmtKind::Expr(e) => {
                let sink = Sink {
                    p: code,
                    rule: "READ-UP",
                    what: format!("code at {code}"),
                    id_target: None,
                };
                self.expr(e, &sink, code);
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.condition(cond, code, "the `if` condition");
                self.block(then_block, code);
                if let Some(e) = else_block {
                    self.block(e, code);
                }
            }
            StmtKind::While { cond, body } => {
                self.condition(cond, code, "the `while` condition");
                self.loop_depth += 1;
                self.block(body, code);
                self.loop_depth -= 1;
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                // `step_by(0)` panics in Rust; a constant step must be positive.
                if let Some(st) = step {
                    if let Ok(v) = self.eval(st) {
                        if v <= 0 {
                            self.errors.push(
                                err(
                                    "LOOP",
                                    st.span,
                                    format!("`step_by({v})`: the step of a loop must be positive"),
                                )
                                .help("Rust's `step_by` panics on 0; use a step of 1 or more"),
                            );
                        }
                    }
                }
                self.t_for(var, start, end, step.as_ref(), body, code)
            }
            StmtKind::Break | StmtKind::Continue => {
                if self.loop_depth == 0 {
                    let what = if matches!(s.kind, StmtKind::Break) {
                        "break"
                    } else {
                        "continue"
                    };
                    self.errors.push(
                        err("LOOP", s.span, format!("`{what}` outside of a loop"))
                            .help("`break`/`continue` cannot leave a group, split arm, partition, claim or async_ body"),
                    );
                }
            }
            StmtKind::Group { at, body } => self.t_group(at, body, code),
            StmtKind::Split { level, unit, arms } => {
                self.t_split(s.span, *level, *unit, arms, code)
            }
            StmtKind::Partition {
                target,
                at,
                index,
                new_name,
                body,
            } => self.t_partition(s.span, target, at, index, new_name, body, code),
            StmtKind::Claim {
                target,
                at,
                new_name,
                body,
            } => self.t_claim(s.span, target, at, new_name, body, code),
            StmtKind::Async {
                target,
                new_name,
                body,
            } => self.t_async(s.span, target, new_name, body, code),
            StmtKind::Unsafe { body } => {
                self.unsafe_wrap(s.span);
                self.unsafe_depth += 1;
                self.block(body, code);
                self.unsafe_depth -= 1;
            }
            StmtKind::Barrier(_) => {}
            StmtKind::Ring {
                stages,
                targets,
                name,
                body,
            } => self.t_ring(s.span, stages, targets, name, body, code),
            StmtKind::RingUse {
                fill,
                ring,
                index,
                names,
                body,
            } => self.t_ring_use(*fill, ring, index, names, body, code),
            StmtKind::Peer {
                target,
                rank,
                new_name,
                body,
            } => self.t_peer(s.span, target, rank, new_name, body, code),
        }
    }

    /// [UNSAFE-WRAP] `unsafe` only in `#[prism_device]` functions, which declare the perspective signature.
    fn unsafe_wrap(&mut self, span: Span) {
        if self.f.kind != FnKind::Device {
            self.errors.push(
                err("UNSAFE-WRAP", span, format!("`unsafe` in kernel `{}`: inline assembly must be wrapped in a device function", self.f.name))
                    .help("move the `unsafe { asm!(..) }` into a `#[prism_device(requires(..))]` function and call it"),
            );
        }
    }

    /// [READ-UP] for branch and loop conditions (Fig. 11).
    fn condition(&mut self, cond: &Expr, code: Perspective, what: &str) {
        let sink = Sink {
            p: code,
            rule: "READ-UP",
            what: format!("{what} at code perspective {code}"),
            id_target: None,
        };
        let ty = self.expr(cond, &sink, code);
        self.expect_ty(&ty, &Ty::Scalar(ScalarType::Bool), cond.span, what);
    }

    #[allow(clippy::too_many_arguments)]
    fn t_decl(
        &mut self,
        s: &Stmt,
        name: &Ident,
        mutable: bool,
        ty: Option<&Type>,
        at: Option<SpannedPerspective>,
        init: Option<&Expr>,
        code: Perspective,
    ) {
        // Shared allocations: T-ALLOC-SHARED.
        if let Some(Type::Shared { elem, len, layout }) = ty {
            self.t_alloc_shared(s, name, (*elem, *layout), len, at, init, code);
            return;
        }
        let p = at.map(|a| a.perspective).unwrap_or(code);
        if let Some(a) = at {
            if !self.le(a.perspective, code) {
                self.errors.push(
                    err(
                        "T-DECL",
                        a.span,
                        format!("`{}` is declared at {} but the code is at {code}: a variable cannot be broader than the code that declares it", name, a.perspective),
                    )
                    .help(format!("declare it at {code} or narrower, or declare it in broader code")),
                );
            }
        }
        let declared = ty.map(|t| match t {
            Type::Scalar(s) => Ty::Scalar(*s),
            Type::Array { elem, len } => Ty::Array {
                elem: *elem,
                len: self.eval_opt(len, "an array length"),
            },
            _ => Ty::Err,
        });
        let init_ty = init.map(|e| {
            let sink = Sink {
                p,
                rule: "WRITE-DOWN",
                what: format!("`{}` ({p})", name.name),
                id_target: Some(p),
            };
            self.expr(e, &sink, code)
        });
        let final_ty = match (declared, init_ty) {
            (Some(d), Some(i)) => {
                if let Some(e) = init {
                    self.expect_ty(&i, &d, e.span, &format!("`{}`", name.name));
                }
                d
            }
            (Some(d), None) => d,
            (None, Some(i)) => match i {
                Ty::IntLit => Ty::Scalar(ScalarType::I32),
                Ty::FloatLit => Ty::Scalar(ScalarType::F32),
                Ty::Unit => {
                    self.errors.push(err(
                        "TYPE",
                        s.span,
                        format!("`{}` is bound to a call that returns nothing", name.name),
                    ));
                    Ty::Err
                }
                Ty::Ptr { .. } => {
                    self.errors.push(
                        err("TYPE", s.span, "pointers cannot be copied into variables").help(
                            "use the pointer directly, or narrow it with `partition`/`claim`",
                        ),
                    );
                    Ty::Err
                }
                t => t,
            },
            (None, None) => {
                self.errors.push(
                    err(
                        "TYPE",
                        name.span,
                        format!("`{}` needs a type or an initializer", name.name),
                    )
                    .help("write `let x: u32;`"),
                );
                Ty::Err
            }
        };
        self.declare(name, p, final_ty, mutable || init.is_none());
    }

    /// [T-ALLOC-SHARED] shared allocations only at code perspective block[1]; sizes are static.
    #[allow(clippy::too_many_arguments)]
    fn t_alloc_shared(
        &mut self,
        s: &Stmt,
        name: &Ident,
        (elem, layout): (ScalarType, SmemLayout),
        len: &Expr,
        at: Option<SpannedPerspective>,
        init: Option<&Expr>,
        code: Perspective,
    ) {
        // In a cluster kernel, cluster code (`block[N]`) may allocate too: each block gets its own copy, which
        // `peer` lets the others read.
        let cluster = self
            .f
            .cluster
            .as_ref()
            .and_then(|e| self.eval(e).ok())
            .filter(|c| (2..=8).contains(c));
        let cluster_code = cluster.is_some_and(|c| code == Perspective::block(c as u32));
        if code != Perspective::block(1) && !cluster_code {
            self.errors.push(
                err(
                    "T-ALLOC-SHARED",
                    name.span,
                    format!("shared memory `{}` is allocated at {code}; shared allocations are only allowed at block[1]", name.name),
                )
                .help("allocate inside `group(block[1], || { .. })`"),
            );
        }
        if let Some(a) = at {
            if a.perspective != Perspective::block(1) {
                self.errors.push(err(
                    "T-ALLOC-SHARED",
                    a.span,
                    format!("shared memory lives at block[1], not {}", a.perspective),
                ));
            }
        }
        if let Some(e) = init {
            self.errors.push(
                err(
                    "T-ALLOC-SHARED",
                    e.span,
                    "shared allocations have no initializer",
                )
                .help("write `let s: Shared<[f32; N]>;` and fill it through a partition"),
            );
        }
        if let Some(n) = self.eval_opt(len, "a shared array length") {
            if n < 1 {
                self.errors.push(err(
                    "T-ALLOC-SHARED",
                    len.span,
                    format!("shared array length {n} must be at least 1"),
                ));
            } else {
                let bytes = (n as u64).saturating_mul(elem.size() as u64);
                self.first_alloc.get_or_insert(s.span);
                let offset = layout.place(self.own_smem);
                self.smem_align = self.smem_align.max(layout.align() as u64);
                self.own_smem = offset.saturating_add(bytes);
                let start = s.span.start();
                self.shared.push(SharedAlloc {
                    name: name.name.clone(),
                    line: start.line,
                    column: start.column,
                    offset: offset.min(u32::MAX as u64) as u32,
                    bytes: bytes.min(u32::MAX as u64) as u32,
                });
            }
        }
        self.declare(
            name,
            Perspective::block(1),
            Ty::Ptr {
                elem,
                mutable: true,
                space: Space::Shared,
            },
            true,
        );
    }

    /// T-ASSN / T-ARR-ASSN with [WRITE-DOWN] (Fig. 12), [MUT], [STORE], [CONST].
    fn t_assn(&mut self, place: &Expr, op: Option<BinOp>, value: &Expr, code: Perspective) {
        match &place.kind {
            ExprKind::Var(id) => {
                let Some(vi) = self.use_var(id) else {
                    self.expr(
                        value,
                        &Sink {
                            p: code,
                            rule: "WRITE-DOWN",
                            what: "an unknown variable".into(),
                            id_target: Some(code),
                        },
                        code,
                    );
                    return;
                };
                let v = self.vars[vi].clone();
                if v.konst.is_some() {
                    self.errors.push(err(
                        "MUT",
                        id.span,
                        format!("cannot assign to const generic `{}`", v.name),
                    ));
                    return;
                }
                if matches!(v.ty, Ty::Ptr { .. }) {
                    self.errors.push(
                        err(
                            "TYPE",
                            id.span,
                            format!("cannot assign to pointer `{}`", v.name),
                        )
                        .help("write through it: `p[i] = v`"),
                    );
                    return;
                }
                if !v.mutable {
                    self.errors.push(
                        err(
                            "MUT",
                            id.span,
                            format!("cannot assign twice to immutable variable `{}`", v.name),
                        )
                        .note(v.span, "declared here")
                        .help(format!("declare it `let mut {}`", v.name)),
                    );
                }
                self.write_down(&v, id.span, code);
                let sink = Sink {
                    p: v.at,
                    rule: "WRITE-DOWN",
                    what: format!("`{}` ({})", v.name, v.at),
                    id_target: Some(v.at),
                };
                let ty = self.expr(value, &sink, code);
                let want = v.ty.clone();
                self.assign_ty(op, &ty, &want, value.span, &v.name);
            }
            ExprKind::Index { base, indices } => {
                let ExprKind::Var(id) = &base.kind else {
                    self.errors
                        .push(err("TYPE", base.span, "only variables can be indexed"));
                    return;
                };
                let Some(vi) = self.use_var(id) else { return };
                let v = self.vars[vi].clone();
                self.index_arity(&v, indices, place.span);
                if v.is_async {
                    self.async_only(&v, id.span);
                    return;
                }
                match v.ty.clone() {
                    Ty::Array { elem, .. } => {
                        // Thread-local array element: WRITE-DOWN with the array's perspective.
                        if !v.mutable {
                            self.errors.push(
                                err(
                                    "MUT",
                                    id.span,
                                    format!(
                                        "cannot assign to an element of immutable array `{}`",
                                        v.name
                                    ),
                                )
                                .note(v.span, "declared here")
                                .help(format!(
                                    "declare it `let mut {}` (or take `&mut [T; N]`)",
                                    v.name
                                )),
                            );
                        }
                        self.write_down(&v, id.span, code);
                        let sink = Sink {
                            p: v.at,
                            rule: "WRITE-DOWN",
                            what: format!("an element of `{}` ({})", v.name, v.at),
                            id_target: None,
                        };
                        for i in indices {
                            let t = self.expr(i, &sink, code);
                            self.expect_int(&t, i.span, "an index");
                        }
                        let sink = Sink {
                            id_target: Some(v.at),
                            ..sink
                        };
                        let ty = self.expr(value, &sink, code);
                        self.assign_ty(op, &ty, &Ty::Scalar(elem), value.span, &v.name);
                    }
                    Ty::Ptr {
                        elem,
                        mutable,
                        space,
                    } => {
                        self.store(&v, id.span, mutable, space, code);
                        let sink = Sink {
                            p: Perspective::thread(1),
                            rule: "WRITE-DOWN",
                            what: format!("memory through `{}` (thread[1])", v.name),
                            id_target: None,
                        };
                        for i in indices {
                            let t = self.expr(i, &sink, code);
                            self.expect_int(&t, i.span, "an index");
                        }
                        let sink = Sink {
                            id_target: Some(Perspective::thread(1)),
                            ..sink
                        };
                        let ty = self.expr(value, &sink, code);
                        self.assign_ty(op, &ty, &Ty::Scalar(elem), value.span, &v.name);
                    }
                    Ty::Err => {}
                    other => self.errors.push(err(
                        "TYPE",
                        id.span,
                        format!("`{}` has type {other} and cannot be indexed", v.name),
                    )),
                }
            }
            _ => self
                .errors
                .push(err("TYPE", place.span, "cannot assign to this expression")),
        }
    }

    /// [WRITE-DOWN] a variable can only be written from code at its perspective or broader.
    fn write_down(&mut self, v: &Var, span: Span, code: Perspective) {
        if !self.le(v.at, code) {
            self.errors.push(
                err(
                    "WRITE-DOWN",
                    span,
                    format!("`{}` lives at {} but is written from narrower code at {code}: the threads of {} would disagree on its value", v.name, v.at, v.at),
                )
                .note(v.span, format!("`{}` declared here at {}", v.name, v.at))
                .help(format!("write it from code at {} (outside the group/split), or declare it at {code}", v.at)),
            );
        }
    }

    /// [STORE]/[CONST]/[T-ARR-ACCESS-SHARED]: writes through memory go through a mutable thread[1] pointer.
    fn store(&mut self, v: &Var, span: Span, mutable: bool, space: Space, code: Perspective) {
        if !mutable {
            self.errors.push(
                err(
                    "CONST",
                    span,
                    format!(
                        "cannot write through `{}`: it is a `*const` pointer",
                        v.name
                    ),
                )
                .note(v.span, "declared here")
                .help("declare the parameter `*mut T`"),
            );
            return;
        }
        if v.at != Perspective::thread(1) {
            self.errors.push(
                err(
                    "STORE",
                    span,
                    format!("writing through `{}` at {} from code at {code}: memory is written only through a thread[1] view", v.name, v.at),
                )
                .note(v.span, format!("`{}` is at {}", v.name, v.at))
                .help(format!("narrow it first: `partition({}, thread[1], |i| offset + i, |{}_thread| {{ .. }})`", v.name, v.name)),
            );
        }
        if space == Space::Shared {
            self.arr_access_shared(v, span, code);
        }
    }

    /// [T-ARR-ACCESS-SHARED] shared memory is only accessed from code at block[1] or narrower.
    fn arr_access_shared(&mut self, v: &Var, span: Span, code: Perspective) {
        if !self.le(code, Perspective::block(1)) {
            self.errors.push(err(
                "T-ARR-ACCESS-SHARED",
                span,
                format!("shared memory `{}` is accessed from code at {code}; shared memory belongs to one block (block[1])", v.name),
            ));
        }
    }

    fn index_arity(&mut self, v: &Var, indices: &[Expr], span: Span) {
        if indices.len() != v.index_arity {
            let d = if v.index_arity > 1 || indices.len() > 1 {
                err(
                    "T-PARTITION",
                    span,
                    format!(
                        "`{}` takes {} index(es) (its partition's index function has {} parameter(s)), found {}",
                        v.name, v.index_arity, v.index_arity, indices.len()
                    ),
                )
            } else {
                err("TYPE", span, format!("`{}` takes one index", v.name))
            };
            self.errors.push(d);
        }
    }

    fn t_for(
        &mut self,
        var: &Ident,
        start: &Expr,
        end: &Expr,
        step: Option<&Expr>,
        body: &Block,
        code: Perspective,
    ) {
        let sink = Sink {
            p: code,
            rule: "READ-UP",
            what: format!("the `for` bounds at code perspective {code}"),
            id_target: None,
        };
        let ts = self.expr(start, &sink, code);
        let te = self.expr(end, &sink, code);
        self.expect_int(&ts, start.span, "a `for` bound");
        self.expect_int(&te, end.span, "a `for` bound");
        let mut ty = unify(&ts, &te).unwrap_or_else(|| {
            self.errors.push(err(
                "TYPE",
                end.span,
                format!("`for` bounds have different types: {ts} and {te}"),
            ));
            Ty::Err
        });
        if let Some(s) = step {
            let tst = self.expr(s, &sink, code);
            self.expect_int(&tst, s.span, "a `step_by` step");
            if let Some(u) = unify(&ty, &tst) {
                ty = u;
            }
        }
        let mark = self.vars.len();
        // The loop variable lives at the code perspective (it is uniform across it).
        self.declare(var, code, ty, false);
        self.loop_depth += 1;
        self.block(body, code);
        self.loop_depth -= 1;
        self.vars.truncate(mark);
    }

    /// [T-GROUP] `group(P)` replicates narrower code P across the current perspective (Fig. 7).
    fn t_group(&mut self, at: &SpannedPerspective, body: &Block, code: Perspective) {
        let p = at.perspective;
        if !self.le(p, code) {
            let why = if p.level > code.level {
                format!("{} is a broader level than {}", p.level, code.level)
            } else if p.level == code.level {
                format!("{} does not divide {}", p.n, code.n)
            } else {
                format!(
                    "{} {} units are guaranteed in {code} ({}), and {} does not divide that",
                    self.units(p.level, code).unwrap_or(0),
                    p.level,
                    self.t_desc(),
                    p.n
                )
            };
            self.errors.push(
                err("T-GROUP", at.span, format!("cannot group {p} inside {code}: {why}"))
                    .help("group into a perspective narrower than the current one that divides it evenly (add thread[n] to `requires` or set `threads = N`)"),
            );
        }
        self.body(body, p);
    }

    /// [T-SPLIT] n-ary split: the arms' sizes fit the available units, each aligned to its size (Figs. 9, 10).
    fn t_split(
        &mut self,
        span: Span,
        level: Level,
        unit: u32,
        arms: &[SplitArm],
        code: Perspective,
    ) {
        let id = self.next_split;
        self.next_split += 1;
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
                for a in arms {
                    let n = a.size as u64;
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
            });
            self.body(&a.body, p);
            self.arms.pop();
        }
    }

    /// The pointer a partition/claim/async_ narrows: must be memory (not a local array).
    fn memory_target(&mut self, rule: &'static str, target: &Ident) -> Option<usize> {
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
    fn t_partition(
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
                    .help(format!("partition it from code at {}", v.at)),
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
        self.vars.truncate(mark);
        let Some(vi) = vi else {
            self.body(body, code);
            return;
        };
        let saved = self.vars[vi].hidden.replace(Hidden::Partition(span));
        let ty = self.vars[vi].ty.clone();
        let mutable = self.vars[vi].mutable;
        let mark = self.vars.len();
        let ni = self.declare(new_name, p, ty, mutable);
        self.vars[ni].index_arity = index.params.len();
        self.vars[ni].is_async = self.vars[vi].is_async;
        self.block_in_scope(body, code);
        self.vars.truncate(mark);
        self.vars[vi].hidden = saved;
    }

    fn block_in_scope(&mut self, b: &Block, code: Perspective) {
        let saved = self.loop_depth;
        self.loop_depth = 0;
        self.block(b, code);
        self.loop_depth = saved;
    }

    /// [T-CLAIM] `claim(x, P, |y| ..)`: y at P is usable in one split arm at P only ([CLAIM-ONE-BRANCH]).
    fn t_claim(
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
            self.body(body, code);
            return;
        };
        let saved = self.vars[vi].hidden.replace(Hidden::Claim(span));
        let ty = self.vars[vi].ty.clone();
        let mutable = self.vars[vi].mutable;
        let mark = self.vars.len();
        let ni = self.declare(new_name, p, ty, mutable);
        self.vars[ni].index_arity = self.vars[vi].index_arity;
        self.vars[ni].claim = Some(ClaimInfo {
            at: p,
            arm_base: self.arms.len(),
            first_use: None,
        });
        self.block_in_scope(body, code);
        self.vars.truncate(mark);
        self.vars[vi].hidden = saved;
    }

    /// §3.7 `async_(x, |y| ..)`: x hidden, y only for async copies ([ASYNC-ONLY]).
    fn t_async(
        &mut self,
        span: Span,
        target: &Ident,
        new_name: &Ident,
        body: &Block,
        code: Perspective,
    ) {
        let Some(vi) = self.memory_target("ASYNC-ONLY", target) else {
            self.body(body, code);
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
        self.block_in_scope(body, code);
        self.vars.truncate(mark);
        self.vars[vi].hidden = saved;
    }

    /// [ASYNC-ONLY] an `async_` name may only be the destination of an async copy intrinsic.
    fn async_only(&mut self, v: &Var, span: Span) {
        self.errors.push(
            err(
                "ASYNC-ONLY",
                span,
                format!("`{}` is an `async_` name: only async copy intrinsics (`cp_async`, `cp_async_bulk`) may use it", v.name),
            )
            .note(v.span, "bound by `async_` here")
            .help(format!("pass it as the destination: `cp_async({}, di, src, si, 16)`", v.name)),
        );
    }

    // --------------------------------------------------------------------------- expressions

    fn expect_ty(&mut self, got: &Ty, want: &Ty, span: Span, what: &str) {
        if unify(got, want).is_none() {
            self.errors.push(err(
                "TYPE",
                span,
                format!("mismatched types: {what} expects {want}, found {got}"),
            ));
        } else if let (Ty::Array { len: Some(a), .. }, Ty::Array { len: Some(b), .. }) = (got, want)
        {
            if a != b {
                self.errors.push(err(
                    "TYPE",
                    span,
                    format!("mismatched array lengths: {what} expects {want}, found {got}"),
                ));
            }
        }
    }

    fn expect_int(&mut self, t: &Ty, span: Span, what: &str) {
        match t {
            Ty::Scalar(s) if s.is_int() => {}
            Ty::IntLit | Ty::Err => {}
            other => self.errors.push(err(
                "TYPE",
                span,
                format!("{what} must be an integer, found {other}"),
            )),
        }
    }

    fn assign_ty(&mut self, op: Option<BinOp>, got: &Ty, want: &Ty, span: Span, name: &str) {
        if let (Some(op), Ty::Scalar(s)) = (op, want) {
            self.binop_types(op, want, got, span);
            if matches!(s, ScalarType::F16 | ScalarType::BF16) {
                return;
            }
        }
        self.expect_ty(got, want, span, &format!("`{name}`"));
    }

    fn expr(&mut self, e: &Expr, sink: &Sink, code: Perspective) -> Ty {
        match &e.kind {
            ExprKind::Lit(Lit::Int(_, Some(t))) | ExprKind::Lit(Lit::Float(_, Some(t))) => {
                Ty::Scalar(*t)
            }
            ExprKind::Lit(Lit::Int(_, None)) => Ty::IntLit,
            ExprKind::Lit(Lit::Float(_, None)) => Ty::FloatLit,
            ExprKind::Lit(Lit::Bool(_)) => Ty::Scalar(ScalarType::Bool),
            ExprKind::Var(id) => self.e_var(id, sink),
            ExprKind::Index { base, indices } => self.e_index(e, base, indices, sink, code),
            ExprKind::Unary { op, expr } => self.e_unary(e, *op, expr, sink, code),
            ExprKind::Binary { op, lhs, rhs } => self.e_binary(e, *op, lhs, rhs, sink, code),
            ExprKind::Cast { expr, ty } => self.e_cast(e, expr, *ty, sink, code),
            ExprKind::Call {
                path,
                generics,
                args,
            } => self.e_call(e, path, generics, args, sink, code),
            ExprKind::MethodCall { recv, method, args } => {
                self.e_method(recv, method, args, sink, code)
            }
            ExprKind::Ref { .. } => {
                self.errors.push(
                    err(
                        "TYPE",
                        e.span,
                        "`&`/`&mut` are only used to pass a thread-local array to a function",
                    )
                    .help("e.g. `mma_m16n8k8_tf32(&mut c, &a, &b)`"),
                );
                Ty::Err
            }
            ExprKind::ArrayLit(items) => self.e_array(e, items, sink, code),
            ExprKind::ArrayRepeat { value, len } => {
                let sink2 = Sink {
                    id_target: None,
                    ..sink.clone()
                };
                let t = self.expr(value, &sink2, code);
                let n = self.eval_opt(len, "an array length");
                if let Some(v) = n.filter(|v| !(0..=MAX_REG_ARRAY).contains(v)) {
                    self.errors.push(
                        err(
                            "REG-ARRAY",
                            len.span,
                            format!("a register array of {v} elements: thread-local arrays live in registers, at most {MAX_REG_ARRAY} elements"),
                        )
                        .help("keep large data in shared or global memory"),
                    );
                }
                match scalar_of(&t) {
                    Some(s) => Ty::Array { elem: s, len: n },
                    None => {
                        if t != Ty::Err {
                            self.errors.push(err(
                                "TYPE",
                                value.span,
                                format!("array elements must be scalars, found {t}"),
                            ));
                        }
                        Ty::Err
                    }
                }
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                let csink = Sink {
                    p: code,
                    rule: "READ-UP",
                    what: format!("the `if` condition at code perspective {code}"),
                    id_target: None,
                };
                // The condition must also be readable at the sink: take the narrower requirement of both.
                let ct = self.expr(cond, &csink, code);
                if !self.le(sink.p, code) {
                    let s2 = Sink {
                        id_target: None,
                        ..sink.clone()
                    };
                    let _ = self.expr_silent_vars(cond, &s2);
                }
                self.expect_ty(
                    &ct,
                    &Ty::Scalar(ScalarType::Bool),
                    cond.span,
                    "the `if` condition",
                );
                let a = self.expr(then_value, sink, code);
                let b = self.expr(else_value, sink, code);
                unify(&a, &b).unwrap_or_else(|| {
                    self.errors.push(err(
                        "TYPE",
                        else_value.span,
                        format!("`if` branches have different types: {a} and {b}"),
                    ));
                    Ty::Err
                })
            }
            ExprKind::Asm {
                template: _,
                operands,
            } => {
                if self.unsafe_depth == 0 {
                    self.errors.push(
                        err("UNSAFE-WRAP", e.span, "`asm!` outside an `unsafe` block").help(
                            "write `unsafe { asm!(..); }` inside a `#[prism_device]` function",
                        ),
                    );
                }
                for op in operands {
                    match op.dir {
                        AsmDir::In => {
                            let s2 = Sink {
                                id_target: None,
                                ..sink.clone()
                            };
                            // `&p[i]`: the address of an element of global (`in(u64)`) or shared (`in(u32)`)
                            // memory, for instructions the language has no intrinsic for (acquire loads,
                            // atomics with other semantics, ...). The element access is checked like a read.
                            if let Some(space) = self.memory_element(&op.expr) {
                                let _ = self.expr(asm_address_target(&op.expr), &s2, code);
                                let want = match space {
                                    Space::Global => ScalarType::U64,
                                    Space::Shared => ScalarType::U32,
                                };
                                if op.ty != want {
                                    self.errors.push(
                                        err(
                                            "TYPE",
                                            op.expr.span,
                                            format!(
                                                "asm operand `{}` is the address of {} memory: declare it `in({want})`",
                                                op.name,
                                                if want == ScalarType::U64 { "global" } else { "shared" },
                                            ),
                                        )
                                        .help("global addresses are 64-bit, shared addresses 32-bit"),
                                    );
                                }
                                continue;
                            }
                            let t = self.expr(&op.expr, &s2, code);
                            self.expect_ty(
                                &t,
                                &Ty::Scalar(op.ty),
                                op.expr.span,
                                &format!("asm operand `{}`", op.name),
                            );
                        }
                        AsmDir::Out | AsmDir::InOut => {
                            if let ExprKind::Var(id) = &op.expr.kind {
                                if let Some(vi) = self.use_var(id) {
                                    let v = self.vars[vi].clone();
                                    if !v.mutable || v.konst.is_some() {
                                        self.errors.push(err(
                                            "MUT",
                                            id.span,
                                            format!(
                                                "asm output `{}` must be a `let mut` variable",
                                                v.name
                                            ),
                                        ));
                                    }
                                    self.write_down(&v, id.span, code);
                                    self.expect_ty(
                                        &v.ty,
                                        &Ty::Scalar(op.ty),
                                        id.span,
                                        &format!("asm operand `{}`", op.name),
                                    );
                                }
                            } else {
                                self.errors.push(err(
                                    "TYPE",
                                    op.expr.span,
                                    "asm outputs must be variables",
                                ));
                            }
                        }
                    }
                }
                Ty::Unit
            }
        }
    }

    /// Checks only the variable reads of `e` against `sink` (no types), for the second constraint on select
    /// conditions.
    fn expr_silent_vars(&mut self, e: &Expr, sink: &Sink) -> Option<()> {
        let mut names = Vec::new();
        walk_vars(e, &mut |n| names.push(n.to_string()));
        let mut spans = Vec::new();
        walk_var_idents(e, &mut |id| spans.push(id.clone()));
        for id in spans {
            if let Some(vi) = self.lookup(&id.name) {
                self.read_up(vi, id.span, sink);
            }
        }
        Some(())
    }

    fn e_var(&mut self, id: &Ident, sink: &Sink) -> Ty {
        let Some(vi) = self.use_var(id) else {
            return Ty::Err;
        };
        let v = self.vars[vi].clone();
        if v.is_async {
            self.async_only(&v, id.span);
            return Ty::Err;
        }
        match v.ty {
            Ty::Ptr { .. } => {
                self.errors.push(
                    err(
                        "TYPE",
                        id.span,
                        format!("pointer `{}` used as a value", v.name),
                    )
                    .help(format!("index it: `{}[i]`", v.name)),
                );
                Ty::Err
            }
            _ => {
                self.read_up(vi, id.span, sink);
                v.ty
            }
        }
    }

    fn e_index(
        &mut self,
        e: &Expr,
        base: &Expr,
        indices: &[Expr],
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        let ExprKind::Var(id) = &base.kind else {
            self.errors
                .push(err("TYPE", base.span, "only variables can be indexed"));
            return Ty::Err;
        };
        let Some(vi) = self.use_var(id) else {
            return Ty::Err;
        };
        let v = self.vars[vi].clone();
        if v.is_async {
            self.async_only(&v, id.span);
            return Ty::Err;
        }
        self.index_arity(&v, indices, e.span);
        // Reads: the memory's (or array's) perspective must be readable at the sink (T-ARR-ACCESS).
        self.read_up(vi, id.span, sink);
        let isink = Sink {
            id_target: None,
            ..sink.clone()
        };
        for i in indices {
            let t = self.expr(i, &isink, code);
            self.expect_int(&t, i.span, "an index");
        }
        match v.ty {
            Ty::Array { elem, .. } => Ty::Scalar(elem),
            Ty::Ptr { elem, space, .. } => {
                if space == Space::Shared {
                    self.arr_access_shared(&v, id.span, code);
                }
                Ty::Scalar(elem)
            }
            Ty::Err => Ty::Err,
            other => {
                self.errors.push(err(
                    "TYPE",
                    id.span,
                    format!("`{}` has type {other} and cannot be indexed", v.name),
                ));
                Ty::Err
            }
        }
    }

    fn e_unary(&mut self, e: &Expr, op: UnOp, inner: &Expr, sink: &Sink, code: Perspective) -> Ty {
        let t = self.expr(inner, sink, code);
        match (op, &t) {
            (_, Ty::Err) => Ty::Err,
            (UnOp::Neg, Ty::IntLit | Ty::FloatLit) => t,
            (UnOp::Neg, Ty::Scalar(s))
                if s.is_signed() || matches!(s, ScalarType::F32 | ScalarType::F64) =>
            {
                t
            }
            (UnOp::Not, Ty::Scalar(s)) if s.is_int() || *s == ScalarType::Bool => t,
            (UnOp::Not, Ty::IntLit) => t,
            _ => {
                let o = if op == UnOp::Neg { "-" } else { "!" };
                let mut d = err("TYPE", e.span, format!("cannot apply unary `{o}` to {t}"));
                if matches!(t, Ty::Scalar(ScalarType::F16 | ScalarType::BF16)) {
                    d = d.help("f16/bf16 are storage types: convert with `as f32` to compute");
                }
                self.errors.push(d);
                Ty::Err
            }
        }
    }

    fn binop_types(&mut self, op: BinOp, l: &Ty, r: &Ty, span: Span) -> Ty {
        if *l == Ty::Err || *r == Ty::Err {
            return Ty::Err;
        }
        let bad_half = |t: &Ty| matches!(t, Ty::Scalar(ScalarType::F16 | ScalarType::BF16));
        if bad_half(l) || bad_half(r) {
            self.errors.push(
                err(
                    "TYPE",
                    span,
                    format!(
                        "arithmetic on {}: f16/bf16 are storage types",
                        if bad_half(l) { l } else { r }
                    ),
                )
                .help("convert to f32 first: `(x as f32) + ..`, and back with `as bf16`"),
            );
            return Ty::Err;
        }
        match op {
            BinOp::And | BinOp::Or => {
                let b = Ty::Scalar(ScalarType::Bool);
                if unify(l, &b).is_none() || unify(r, &b).is_none() {
                    self.errors.push(err(
                        "TYPE",
                        span,
                        format!("`&&`/`||` need bool operands, found {l} and {r}"),
                    ));
                }
                b
            }
            BinOp::Shl | BinOp::Shr => {
                if !is_int(l) || !is_int(r) {
                    self.errors.push(err(
                        "TYPE",
                        span,
                        format!("shifts need integer operands, found {l} and {r}"),
                    ));
                    return Ty::Err;
                }
                l.clone()
            }
            _ => {
                let Some(t) = unify(l, r) else {
                    self.errors.push(
                        err("TYPE", span, format!("mismatched types: {l} and {r}"))
                            .help("convert one side with `as`"),
                    );
                    return Ty::Err;
                };
                let cmp = matches!(
                    op,
                    BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
                );
                let ok = match &t {
                    // PTX compares predicates only for (in)equality: `false < true` is not lowered.
                    Ty::Scalar(ScalarType::Bool) => matches!(
                        op,
                        BinOp::Eq | BinOp::Ne | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor
                    ),
                    Ty::Scalar(s) if s.is_float() => {
                        !matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor)
                    }
                    Ty::FloatLit => !matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor),
                    Ty::Scalar(_) | Ty::IntLit => true,
                    _ => false,
                };
                if !ok {
                    self.errors
                        .push(err("TYPE", span, format!("operator not defined on {t}")));
                    return Ty::Err;
                }
                if cmp {
                    Ty::Scalar(ScalarType::Bool)
                } else {
                    t
                }
            }
        }
    }

    fn e_binary(
        &mut self,
        e: &Expr,
        op: BinOp,
        lhs: &Expr,
        rhs: &Expr,
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        let l = self.expr(lhs, sink, code);
        let r = self.expr(rhs, sink, code);
        self.binop_types(op, &l, &r, e.span)
    }

    fn e_cast(
        &mut self,
        e: &Expr,
        inner: &Expr,
        to: ScalarType,
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        let t = self.expr(inner, sink, code);
        let ok = match &t {
            Ty::Err => true,
            Ty::IntLit | Ty::FloatLit => to != ScalarType::Bool,
            Ty::Scalar(ScalarType::Bool) => to.is_int() || to == ScalarType::Bool,
            Ty::Scalar(_) => to != ScalarType::Bool,
            _ => false,
        };
        if !ok {
            self.errors.push(
                err("TYPE", e.span, format!("cannot cast {t} to {to}"))
                    .help("compare with `!= 0` to get a bool"),
            );
            return Ty::Err;
        }
        Ty::Scalar(to)
    }

    fn e_array(&mut self, e: &Expr, items: &[Expr], sink: &Sink, code: Perspective) -> Ty {
        let s2 = Sink {
            id_target: None,
            ..sink.clone()
        };
        let mut t = Ty::IntLit;
        let mut first = true;
        for it in items {
            let ti = self.expr(it, &s2, code);
            if first {
                t = ti;
                first = false;
            } else if let Some(u) = unify(&t, &ti) {
                t = u;
            } else {
                self.errors.push(err(
                    "TYPE",
                    it.span,
                    format!("array elements have different types: {t} and {ti}"),
                ));
                return Ty::Err;
            }
        }
        match scalar_of(&t) {
            Some(s) => Ty::Array {
                elem: s,
                len: Some(items.len() as i64),
            },
            None => {
                if t != Ty::Err {
                    self.errors.push(err(
                        "TYPE",
                        e.span,
                        format!("array elements must be scalars, found {t}"),
                    ));
                }
                Ty::Err
            }
        }
    }

    fn e_method(
        &mut self,
        recv: &Expr,
        method: &Ident,
        args: &[Expr],
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        let t = self.expr(recv, sink, code);
        let arity = match method.name.as_str() {
            "sqrt" | "rsqrt" | "exp2" | "log2" | "sin" | "cos" | "abs" => 0,
            "min" | "max" => 1,
            "fma" => 2,
            other => {
                self.errors.push(
                    err(
                        "UNKNOWN-FN",
                        method.span,
                        format!("unknown method `{other}`"),
                    )
                    .help("math methods: sqrt, rsqrt, exp2, log2, sin, cos, abs, min, max, fma"),
                );
                return Ty::Err;
            }
        };
        if args.len() != arity {
            self.errors.push(err(
                "TYPE",
                method.span,
                format!(
                    "`{}` takes {arity} argument(s), found {}",
                    method.name,
                    args.len()
                ),
            ));
        }
        let float_only = !matches!(method.name.as_str(), "abs" | "min" | "max");
        let mut ty = t.clone();
        for a in args {
            let ta = self.expr(a, sink, code);
            match unify(&ty, &ta) {
                Some(u) => ty = u,
                None => self.errors.push(err(
                    "TYPE",
                    a.span,
                    format!("mismatched types: `{}` on {ty} with {ta}", method.name),
                )),
            }
        }
        // The approximate transcendental instructions (`ex2`, `lg2`, `sin`, `cos`) exist for f32 only.
        let f32_only = matches!(method.name.as_str(), "exp2" | "log2" | "sin" | "cos");
        let ok = match &ty {
            Ty::Err => true,
            Ty::FloatLit => true,
            Ty::Scalar(ScalarType::F32) => true,
            Ty::Scalar(ScalarType::F64) => !f32_only,
            Ty::Scalar(s) if s.is_int() => !float_only,
            Ty::IntLit => !float_only,
            _ => false,
        };
        if !ok {
            let mut d = err(
                "TYPE",
                method.span,
                format!("`{}` is not defined on {ty}", method.name),
            );
            if matches!(ty, Ty::Scalar(ScalarType::F16 | ScalarType::BF16)) {
                d = d.help("convert to f32 first: `(x as f32).sqrt()`");
            } else if f32_only && ty == Ty::Scalar(ScalarType::F64) {
                d = d.help(format!(
                    "PTX has `{}` for f32 only: `(x as f32).{}()`",
                    method.name, method.name
                ));
            }
            self.errors.push(d);
            return Ty::Err;
        }
        ty
    }

    // --------------------------------------------------------------------------- calls

    fn e_call(
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

    /// [T-FUNCTION-CALL] the callee's perspective signature is satisfied at the call site (§3.6).
    #[allow(clippy::too_many_arguments)]
    fn t_function_call(
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
        let ctop = callee
            .requires
            .first()
            .map(|p| p.perspective)
            .unwrap_or(Perspective::thread(1));
        if !self.le(ctop, code) {
            self.errors.push(
                err(
                    "T-FUNCTION-CALL",
                    name.span,
                    format!("`{}` requires {ctop} but is called from {code}", name.name),
                )
                .note(callee.name.span, format!("`{}` declares requires({})", name.name, callee.requires.iter().map(|p| p.perspective.to_string()).collect::<Vec<_>>().join(", ")))
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
        for (a, p) in args.iter().zip(&callee.params) {
            let pat = match p.ty {
                Type::ArrayRef { .. } => Perspective::thread(1),
                _ => p.at.map(|x| x.perspective).unwrap_or(ctop),
            };
            self.call_arg(name, a, p, pat, &callee_consts, code);
        }
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

    /// A call's result at perspective `rp` flows into `sink`.
    fn result_read_up(&mut self, span: Span, name: &str, rp: Perspective, sink: &Sink) {
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
    fn call_arg(
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
            Type::Ptr { elem, mutable } => {
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
                if *mutable {
                    if !vm {
                        self.errors.push(err(
                            "CONST",
                            id.span,
                            format!(
                                "`{}` is `*const` but parameter `{}` of `{}` is `*mut`",
                                v.name, p.name, fname.name
                            ),
                        ));
                    }
                    if v.at != pat {
                        self.errors.push(
                            err(
                                "CALL-ARG",
                                id.span,
                                format!("`{}` is at {} but parameter `{}` of `{}` is a `*mut` pointer at {pat}: mutable pointers must match exactly", v.name, v.at, p.name, fname.name),
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
                if space == Space::Shared {
                    self.arr_access_shared(&v, id.span, code);
                }
            }
            Type::ArrayRef { elem, len, mutable } => {
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
                        self.errors.push(err("TYPE", id.span, format!("parameter `{}` of `{}` is an array reference, but `{}` has type {}", p.name, fname.name, v.name, v.ty)));
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
                                format!("`{}` is at {} but `&mut` parameter `{}` of `{}` needs exactly {pat}", v.name, v.at, p.name, fname.name),
                            )
                            .note(v.span, format!("`{}` declared here at {}", v.name, v.at))
                            .help(format!("declare it `#[at(thread[1])] let mut {} = ..;`", v.name)),
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
            Type::Array { .. } | Type::Shared { .. } | Type::TensorMap { .. } => {}
        }
    }

    /// [INTRINSIC] the intrinsic `name` requires perspective `p` to divide the code perspective.
    fn need_perspective(&mut self, name: &Ident, p: Perspective, code: Perspective) {
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

    /// [INTRINSIC] intrinsics with perspective signatures (docs/SYNTAX.md); replicated when called from a
    /// broader perspective the required one divides.
    fn intrinsic(
        &mut self,
        e: &Expr,
        name: &Ident,
        args: &[Expr],
        sink: &Sink,
        code: Perspective,
    ) -> Ty {
        let n = name.name.as_str();
        let t1 = Perspective::thread(1);
        let w = Perspective::thread(32);
        let need = |cx: &mut Self, p: Perspective| cx.need_perspective(name, p, code);
        if let Some(t) = self.hopper_intrinsic(name, args, code) {
            return t;
        }
        let arity = |cx: &mut Self, k: usize| -> bool {
            if args.len() != k {
                cx.errors.push(err(
                    "TYPE",
                    name.span,
                    format!("`{n}` takes {k} argument(s), found {}", args.len()),
                ));
                false
            } else {
                true
            }
        };
        let at = |p: Perspective, what: &str| Sink {
            p,
            rule: "CALL-ARG",
            what: format!("{what} of `{n}` ({p})"),
            id_target: None,
        };
        match n {
            "id" => {
                if !args.is_empty() {
                    self.errors
                        .push(err("TYPE", name.span, "`id()` takes no arguments"));
                }
                self.t_id(e, sink);
                Ty::Scalar(ScalarType::U32)
            }
            "sync_threads" => {
                need(self, Perspective::block(1));
                arity(self, 0);
                Ty::Unit
            }
            "sync_warp" => {
                need(self, w);
                arity(self, 0);
                Ty::Unit
            }
            "fence" => {
                arity(self, 0);
                Ty::Unit
            }
            // The launch's block and grid size: the same for every thread of the grid, so the result is at
            // grid[1] and may flow anywhere.
            "block_dim" | "grid_dim" => {
                arity(self, 0);
                Ty::Scalar(ScalarType::U32)
            }
            "shfl_down" | "shfl_up" | "shfl_xor" | "shfl_idx" => {
                need(self, w);
                if !arity(self, 2) {
                    return Ty::Err;
                }
                let v = self.expr(&args[0], &at(t1, "the value"), code);
                if !matches!(
                    v,
                    Ty::Scalar(ScalarType::U32 | ScalarType::I32 | ScalarType::F32)
                        | Ty::IntLit
                        | Ty::FloatLit
                        | Ty::Err
                ) {
                    self.errors.push(err(
                        "TYPE",
                        args[0].span,
                        format!("`{n}` shuffles 32-bit values, found {v}"),
                    ));
                }
                let dp = if n == "shfl_idx" { t1 } else { w };
                let d = self.expr(&args[1], &at(dp, "the lane argument"), code);
                self.expect_ty(
                    &d,
                    &Ty::Scalar(ScalarType::U32),
                    args[1].span,
                    &format!("the lane argument of `{n}`"),
                );
                self.result_read_up(e.span, n, t1, sink);
                match v {
                    Ty::IntLit => Ty::Scalar(ScalarType::I32),
                    Ty::FloatLit => Ty::Scalar(ScalarType::F32),
                    v => v,
                }
            }
            "vote_all" | "vote_any" | "ballot" => {
                need(self, w);
                if !arity(self, 1) {
                    return Ty::Err;
                }
                let t = self.expr(&args[0], &at(t1, "the predicate"), code);
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
            "atomic_add" | "atomic_max" | "atomic_min" | "atomic_exch" | "atomic_cas" => {
                need(self, t1);
                let k = if n == "atomic_cas" { 4 } else { 3 };
                if !arity(self, k) {
                    return Ty::Err;
                }
                let elem = self.ptr_arg(name, &args[0], true, None, code);
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
                let i = self.expr(&args[1], &at(t1, "the index"), code);
                self.expect_int(&i, args[1].span, "an index");
                for v in &args[2..] {
                    let t = self.expr(v, &at(t1, "the value"), code);
                    if let Some(el) = elem {
                        self.expect_ty(&t, &Ty::Scalar(el), v.span, &format!("the value of `{n}`"));
                    }
                }
                self.result_read_up(e.span, n, t1, sink);
                elem.map(Ty::Scalar).unwrap_or(Ty::Err)
            }
            "mma_m16n8k8_tf32" => {
                need(self, w);
                if !arity(self, 3) {
                    return Ty::Err;
                }
                self.array_ref_arg(name, &args[0], true, ScalarType::F32, 4, "c");
                self.array_ref_arg(name, &args[1], false, ScalarType::F32, 4, "a");
                self.array_ref_arg(name, &args[2], false, ScalarType::F32, 2, "b");
                Ty::Unit
            }
            "ldmatrix_x4" | "ldmatrix_x2" | "ldmatrix_x1" => {
                need(self, w);
                if !arity(self, 2) {
                    return Ty::Err;
                }
                self.ptr_arg(name, &args[0], false, Some(Space::Shared), code);
                let i = self.expr(&args[1], &at(t1, "the row index"), code);
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
            "load4" | "load2" => {
                if !arity(self, 2) {
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
                                    Some(elem)
                                }
                                _ => {
                                    self.errors.push(err(
                                        "TYPE",
                                        id.span,
                                        format!(
                                            "`{n}` loads through a pointer, `{}` is {}",
                                            v.name, v.ty
                                        ),
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
            "store4" | "store2" => {
                if !arity(self, 3) {
                    return Ty::Err;
                }
                let k = if n == "store4" { 4 } else { 2 };
                let elem = self.ptr_arg(name, &args[0], true, None, code);
                self.vector_access(n, k, elem, args[0].span);
                let i = self.expr(&args[1], &at(t1, "the index"), code);
                self.expect_int(&i, args[1].span, "an index");
                let v = self.expr(&args[2], &at(t1, "the value"), code);
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
            "cp_async" | "cp_async_bulk" => {
                need(self, t1);
                if !arity(self, 5) {
                    return Ty::Err;
                }
                // Destination: an `async_` name (the only place it may appear).
                let dst_elem = self.async_dst(n, &args[0], n == "cp_async_bulk");
                let i = self.expr(&args[1], &at(t1, "the destination index"), code);
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
                let i = self.expr(&args[3], &at(t1, "the source index"), code);
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
                            "`cp_async_bulk` copies a constant multiple of 16 bytes below 1 MiB"
                                .to_string()
                        },
                    ));
                }
                Ty::Unit
            }
            _ => Ty::Err,
        }
    }

    /// The destination of an async copy (`cp_async`, `cp_async_bulk`, `tma_load`): an `async_` name (ASYNC-ONLY)
    /// of shared memory; bulk copies complete on a block-wide mbarrier, so their target is at block[1]
    /// (ASYNC-BULK). Returns the element type.
    fn async_dst(&mut self, n: &str, a: &Expr, bulk: bool) -> Option<ScalarType> {
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
    fn vector_access(&mut self, n: &str, k: i64, elem: Option<ScalarType>, span: Span) {
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

    /// A pointer argument of an intrinsic: `write` needs a mutable pointer at thread[1] ([STORE]/[CONST]).
    fn ptr_arg(
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
                self.store(&v, id.span, mutable, sp, code);
            }
        } else if sp == Space::Shared {
            self.arr_access_shared(&v, id.span, code);
        }
        Some(elem)
    }

    /// `&a`/`&mut a` of a thread-local `[elem; len]` for an intrinsic; `&mut` needs exactly thread[1].
    fn array_ref_arg(
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

    /// [T-ID] `id()` only where its target perspective is known: a variable's initializer or assigned value.
    fn t_id(&mut self, e: &Expr, sink: &Sink) {
        if sink.id_target.is_none() {
            self.errors.push(
                err("T-ID", e.span, format!("`id()` used in {}: its meaning depends on the perspective of the variable it is assigned to", sink.what))
                    .help("assign id() to a variable whose perspective says which id you want, e.g. `#[at(thread[1])] let tid: u32 = id();`"),
            );
        }
    }
}

/// Shared memory a callee needs: its declared `smem`, else its own allocations plus its largest callee's.
fn fn_smem(
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
            ty: Some(Type::Shared { elem, len, layout }),
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

fn type_to_ty(t: &Type) -> Ty {
    match t {
        Type::Scalar(s) => Ty::Scalar(*s),
        _ => Ty::Err,
    }
}

fn scalar_of(t: &Ty) -> Option<ScalarType> {
    match t {
        Ty::Scalar(s) => Some(*s),
        Ty::IntLit => Some(ScalarType::I32),
        Ty::FloatLit => Some(ScalarType::F32),
        _ => None,
    }
}

fn is_int(t: &Ty) -> bool {
    matches!(t, Ty::IntLit | Ty::Err) || matches!(t, Ty::Scalar(s) if s.is_int())
}

/// Unifies two types: literals adopt the other side's type (ints only int types, floats only float types).
fn unify(a: &Ty, b: &Ty) -> Option<Ty> {
    match (a, b) {
        (Ty::Err, _) | (_, Ty::Err) => Some(Ty::Err),
        (Ty::IntLit, Ty::IntLit) => Some(Ty::IntLit),
        (Ty::FloatLit, Ty::FloatLit) => Some(Ty::FloatLit),
        (Ty::IntLit, Ty::Scalar(s)) | (Ty::Scalar(s), Ty::IntLit) if s.is_int() => {
            Some(Ty::Scalar(*s))
        }
        (Ty::FloatLit, Ty::Scalar(s)) | (Ty::Scalar(s), Ty::FloatLit) if s.is_float() => {
            Some(Ty::Scalar(*s))
        }
        (Ty::Array { elem: x, len: l1 }, Ty::Array { elem: y, len: l2 }) if x == y => {
            Some(Ty::Array {
                elem: *x,
                len: l1.or(*l2),
            })
        }
        (x, y) if x == y => Some(x.clone()),
        _ => None,
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let c = if a[i - 1] == b[j - 1] { 0 } else { 1 };
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + c);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn walk_vars(e: &Expr, f: &mut dyn FnMut(&str)) {
    walk_var_idents(e, &mut |id| f(&id.name));
}

fn walk_var_idents(e: &Expr, f: &mut dyn FnMut(&Ident)) {
    match &e.kind {
        ExprKind::Var(id) => f(id),
        ExprKind::Lit(_) | ExprKind::Asm { .. } => {}
        ExprKind::Index { base, indices } => {
            walk_var_idents(base, f);
            indices.iter().for_each(|i| walk_var_idents(i, f));
        }
        ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } | ExprKind::Ref { expr, .. } => {
            walk_var_idents(expr, f)
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            walk_var_idents(lhs, f);
            walk_var_idents(rhs, f);
        }
        ExprKind::Call { args, generics, .. } => {
            generics.iter().for_each(|a| walk_var_idents(a, f));
            args.iter().for_each(|a| walk_var_idents(a, f));
        }
        ExprKind::MethodCall { recv, args, .. } => {
            walk_var_idents(recv, f);
            args.iter().for_each(|a| walk_var_idents(a, f));
        }
        ExprKind::ArrayLit(items) => items.iter().for_each(|a| walk_var_idents(a, f)),
        ExprKind::ArrayRepeat { value, len } => {
            walk_var_idents(value, f);
            walk_var_idents(len, f);
        }
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => {
            walk_var_idents(cond, f);
            walk_var_idents(then_value, f);
            walk_var_idents(else_value, f);
        }
    }
}

fn walk_block(b: &Block, f: &mut dyn FnMut(&Stmt)) {
    for s in &b.stmts {
        f(s);
        match &s.kind {
            StmtKind::If {
                then_block,
                else_block,
                ..
            } => {
                walk_block(then_block, f);
                if let Some(e) = else_block {
                    walk_block(e, f);
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
            | StmtKind::Unsafe { body } => walk_block(body, f),
            StmtKind::Split { arms, .. } => arms.iter().for_each(|a| walk_block(&a.body, f)),
            _ => {}
        }
    }
}

pub(crate) fn walk_calls(b: &Block, f: &mut dyn FnMut(&str, &Expr)) {
    fn in_expr(e: &Expr, f: &mut dyn FnMut(&str, &Expr)) {
        if let ExprKind::Call { path, args, .. } = &e.kind {
            if let Some(n) = path.last() {
                f(&n.name, e);
            }
            args.iter().for_each(|a| in_expr(a, f));
        }
    }
    walk_block(b, &mut |s| match &s.kind {
        StmtKind::Expr(e) => in_expr(e, f),
        StmtKind::Let { init: Some(e), .. } => in_expr(e, f),
        StmtKind::Assign { value, .. } => in_expr(value, f),
        _ => {}
    });
}

/// The `p[i]` inside an `&p[i]` asm address operand.
fn asm_address_target(e: &Expr) -> &Expr {
    match &e.kind {
        ExprKind::Ref { expr, .. } => expr,
        _ => e,
    }
}
