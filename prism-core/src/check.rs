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

mod callee_accesses;
mod calls;
mod contract;
mod expr;
mod hopper;
mod index_overlap;
mod intrinsics;
mod overlap;
mod persp;
mod stmt;
mod vars;
mod walk;

use contract::*;
use expr::*;
use index_overlap::*;
use intrinsics::*;
use overlap::*;
use persp::*;
use vars::*;
use walk::*;
pub(crate) use walk::{reaches_call, reaches_stmt, walk_calls};

/// A function that passed every rule. The emitter only accepts these.
#[derive(Clone, Debug)]
pub struct Checked {
    pub function: Function,
    /// One entry per instance; exactly one (with empty `values`) for a function without const generics, and
    /// for a device function with const generics but no `instances` (checked generically: `values` empty).
    pub instances: Vec<CheckedInstance>,
}

/// Intrinsics the checker knows (docs/SYNTAX.md; [`crate::intrinsics::TABLE`]). Device functions may not
/// shadow them.
pub const INTRINSICS: &[&str] = &crate::intrinsics::NAMES;

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
                    format!("kernel `{}` has const generics but no `instances` (or an empty list)", f.name),
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
            } else if let Some((c, v)) = f.const_params.iter().zip(&i.values).find(|(c, v)| {
                let (lo, hi) = crate::consteval::range(c.ty);
                !(lo..=hi).contains(&i128::from(**v))
            }) {
                // Rust would refuse it later, at the whole attribute (`-1` for a `u32`).
                errors.push(
                    Diagnostic::new(
                        "INSTANCES",
                        i.span,
                        format!("instance value {v} does not fit `{}: {}`", c.name, c.ty),
                    )
                    .help(format!("give `{}` a value of type {}", c.name, c.ty)),
                );
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
            for mut d in cx.errors.drain(..) {
                // Shared memory depends on the instance: say which one is too large.
                if let (Some(v @ [_, ..]), "SMEM-LIMIT") = (vals.as_deref(), d.rule) {
                    let list: Vec<String> = v.iter().map(i64::to_string).collect();
                    d.message = format!("{} (instance ({}))", d.message, list.join(", "));
                }
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
            Ty::Ring(e) if e.len() == 1 => write!(f, "Ring<{}>", e[0]),
            Ty::Ring(e) => {
                let e: Vec<String> = e.iter().map(|t| t.to_string()).collect();
                write!(f, "Ring<({})>", e.join(", "))
            }
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
    /// Length of the replicating-group stack when the claim began.
    group_base: usize,
    /// The broadest perspective whose units all see the same elements: the claim's code perspective, or
    /// for a partition whose index closure does not tell its units apart, the narrowest perspective the
    /// closure reads. A `group` narrower than this between the claim and the arm replicates the arm, so
    /// several units would use the memory.
    same_for: Perspective,
    /// A partition treated as a claim (its index closure gives every unit the same elements).
    from_partition: bool,
}

/// An immutable `let` of loop counters: its initializer and the variables it names (their indices).
type OfCounters = (Expr, Vec<(String, usize)>);

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
    /// The async name is a ring slot a `fill` binds (not an `async_` scope's).
    fill_slot: bool,
    /// An immutable integer binding's value as a function of the unit (T-PARTITION's overlap test).
    sym: Option<Sym>,
    /// A partition view whose closure hands two units the same elements: writes through it race.
    overlap: Option<Overlap>,
    /// A partition view whose closure is known exactly: writes at known indices are checked against
    /// each other (`index_overlap.rs`).
    layout: Option<Layout>,
    /// A `for` counter over a constant range: its values.
    range: Option<Vec<i64>>,
    /// A `for` counter or an immutable integer `let`: the narrowest perspective its bounds or its value
    /// read (every unit at least that broad counts the same values, or binds the same value).
    uniform_over: Option<Perspective>,
    /// An immutable integer `let` of `for` counters (over constant ranges), constants and other such
    /// `let`s: its initializer and the variables it names, resolved where it is declared (T-PARTITION
    /// evaluates it per counter value).
    of_counters: Option<std::rc::Rc<OfCounters>>,
    /// Named by the program since its declaration (a fill's slot names must each be loaded).
    used: bool,
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
    /// Length of the replicating-group stack at the split.
    groups: usize,
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
    /// The enclosing `group`s that run their body in more than one unit of the code perspective.
    groups: Vec<Perspective>,
    /// Variables read by the index closure of an enclosing `partition` (with that partition's span and
    /// name): assigning one inside would move the elements the units own.
    frozen: Vec<(usize, Span, String)>,
    /// The unit of code the current statements run in: a fresh number for each `group` body and split
    /// arm (ranks, and so `id()` values, are relative to it).
    scope: usize,
    next_scope: usize,
    /// Partitions numbered in source order, and those whose overlap was reported.
    next_partition: usize,
    overlaps_reported: HashSet<usize>,
    /// Per partition, the elements its views' writes reached (`index_overlap.rs`).
    reached: std::collections::HashMap<usize, Reached>,
    /// The arms of uniform `if`s the current statement is in: `(if, 0)` then, `(if, 1)` else. Writes in
    /// the two arms of one `if` never both run (`index_overlap.rs`).
    if_arms: Vec<(usize, u8, u32)>,
    next_if: usize,
    /// The enclosing conditions, loops and split arms: the narrowest perspective each reads (`None`:
    /// unknown, a split arm, or a loop that may `break`).
    conds: Vec<Option<Perspective>>,
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
            groups: Vec::new(),
            frozen: Vec::new(),
            scope: 0,
            next_scope: 1,
            next_partition: 0,
            overlaps_reported: HashSet::new(),
            reached: std::collections::HashMap::new(),
            if_arms: Vec::new(),
            next_if: 0,
            conds: Vec::new(),
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
                fill_slot: false,
                sym: None,
                overlap: None,
                layout: None,
                range: None,
                uniform_over: None,
                of_counters: None,
                used: false,
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
}
