//! Checked tree → PTX (docs/ARCHITECTURE.md). The execution model, the rank/`id()` mapping, register arrays,
//! uniform branches and the barrier policy are described in `docs/CODEGEN.md`.
//!
//! The emitter walks the tree once per kernel instance, with an environment that maps names to registers
//! (scalars, register arrays), constants (const generics, unrolled loop variables), or memory *views*
//! (a base address plus the chain of `partition` index closures to apply on each access). Device functions
//! are inlined at their calls. Constants fold as they are met, so ranks and indices that the launch shape
//! fixes become immediates.

use crate::ast::*;
use crate::check::Checked;
use crate::consteval::eval_const;
use crate::sync::Synced;
use crate::{CompiledKernel, Contract, Diagnostic, ParamInfo, ParamKind};
use proc_macro2::Span;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::rc::Rc;

mod body;
mod bounds;
mod expr;
mod fmod;
mod hopper;
mod inline;
mod instance;
mod intrinsics;
mod loops;
mod proxy_fences;
mod ring;
mod ring_sites;
mod split;
mod stmt;
mod values;
mod view;

use instance::emit_instance;
use values::*;

type R<T> = Result<T, Diagnostic>;

/// Largest trip count a loop is unrolled to.
const MAX_UNROLL: i128 = 4096;
/// Loops with at most this many iterations are unrolled (unless [`MAX_UNROLLED`] is reached).
const SMALL_TRIP: i128 = 16;
/// Most copies of one loop body that nested unrolled loops make (`for` loops of 16 nested five deep
/// would make a million: minutes of compile time and PTX that ptxas cannot take).
const MAX_UNROLLED: i128 = 1 << 14;
/// Deepest chain of inlined device-function calls.
const MAX_INLINE_DEPTH: u32 = 64;

/// Emits one PTX module per instance of the checked kernel `k`, from its synchronized form `synced` (the
/// sync stage's output for `k`; [`crate::lower`] runs both).
pub fn emit_kernel(k: &Checked, synced: &Synced) -> Result<Vec<CompiledKernel>, Vec<Diagnostic>> {
    debug_assert_eq!(k.function.name.name, synced.kernel.name.name);
    let f = &synced.kernel;
    let instances: Vec<Vec<i64>> = if f.const_params.is_empty() {
        vec![Vec::new()]
    } else if f.instances.is_empty() {
        return Err(vec![bug(
            "INSTANCES",
            f.name.span,
            format!(
                "kernel `{}` has const generics but no `instances = [..]`",
                f.name
            ),
        )]);
    } else {
        f.instances.iter().map(|i| i.values.clone()).collect()
    };
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for inst in instances {
        // The checker's facts of this instance (its launch contract) travel here; the emitter does not
        // recompute them.
        let Some(facts) = k.instances.iter().find(|c| c.values == inst) else {
            diags.push(bug(
                "INSTANCES",
                f.name.span,
                format!("no checked instance {inst:?} of `{}`", f.name),
            ));
            continue;
        };
        match emit_instance(f, facts, &synced.callees) {
            Ok(c) => out.push(c),
            Err(d) => diags.push(d),
        }
    }
    if diags.is_empty() {
        Ok(out)
    } else {
        Err(diags)
    }
}

/// PTX entry name of an instance: `name` or `name_v1_v2` (negative values as `m5`). PTX names are ASCII
/// letters, digits and `_`: any other character of a Rust name is written `_uXXXX_` (`données` is
/// `donn_ue9_es`). Instruction names are not reserved (ptxas takes `.entry match`).
pub fn entry_name(name: &str, instance: &[i64]) -> String {
    let mut s = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            s.push(c);
        } else {
            let _ = write!(s, "_u{:x}_", c as u32);
        }
    }
    for v in instance {
        if *v < 0 {
            let _ = write!(s, "_m{}", v.unsigned_abs());
        } else {
            let _ = write!(s, "_{v}");
        }
    }
    s
}

// ---------------------------------------------------------------------------------------------------------
// Values

#[derive(Clone, Copy, Debug, PartialEq)]
enum Imm {
    Int(i128),
    Float(f64),
    Bool(bool),
}

/// A scalar value: an immediate (typed, or an unsuffixed literal whose type is not known yet) or a register.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Imm(Imm, Option<ScalarType>),
    Reg(String, ScalarType),
}

impl Val {
    fn imm_u32(v: u32) -> Val {
        Val::Imm(Imm::Int(v as i128), Some(ScalarType::U32))
    }
    fn ty(&self) -> Option<ScalarType> {
        match self {
            Val::Imm(Imm::Bool(_), _) => Some(ScalarType::Bool),
            Val::Imm(_, t) => *t,
            Val::Reg(_, t) => Some(*t),
        }
    }
    /// Its type, or for an untyped literal the checker's default: f32 for a float, else i32.
    fn ty_or_default(&self) -> ScalarType {
        self.ty().unwrap_or(match self {
            Val::Imm(Imm::Float(_), _) => ScalarType::F32,
            _ => ScalarType::I32,
        })
    }
    fn as_int(&self) -> Option<i128> {
        match self {
            Val::Imm(Imm::Int(v), _) => Some(*v),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Space {
    Global,
    /// `base` is a byte offset into `__prism_smem` (u32).
    Shared,
}

/// One `partition` index closure with the environment it captured.
#[derive(Debug)]
struct IndexMap {
    params: Vec<String>,
    body: Expr,
    env: Scope,
}

/// A pointer as the emitter sees it: `view[i..]` = `base[maps[0](..maps[k](i..))]` (§3.4.2).
#[derive(Clone, Debug)]
struct View {
    space: Space,
    base: Val,
    elem: ScalarType,
    /// Reads may use the non-coherent path: the root is a kernel `*const` parameter.
    readonly: bool,
    maps: Vec<Rc<IndexMap>>,
    /// Layout of the root shared allocation (`Linear` for global memory).
    layout: SmemLayout,
    /// Elements of the root shared allocation (0 for global memory).
    len: u32,
    /// A view of another block's shared memory (`peer`): the cluster rank whose copy it reads.
    peer: Option<Val>,
}

#[derive(Clone, Debug)]
enum Binding {
    /// A scalar: immutable values may be immediates; mutable ones always live in their register.
    Scalar { val: Val, persp: Perspective },
    /// A thread-local array held in registers (`regs[i]` is element `i`).
    Array {
        regs: Vec<String>,
        elem: ScalarType,
        persp: Perspective,
    },
    /// A pointer into global or shared memory.
    Mem { view: View, persp: Perspective },
    /// A `ring` name: its index in `Em::rings` and the views of its whole memories.
    Ring { id: usize, views: Vec<View> },
    /// A `TensorMap` kernel parameter: its index and the generic address of the 128-byte parameter.
    TensorMap {
        param: usize,
        addr: String,
        elem: ScalarType,
        rank: u32,
    },
    /// The original name inside a `partition`/`claim`/`async_` scope.
    Hidden,
}

type Scope = HashMap<String, Binding>;

/// The value of an expression.
#[derive(Clone, Debug)]
enum Value {
    S(Val),
    Arr(Vec<Val>, ScalarType),
    Mem(View),
    Unit,
}

/// The perspective the code runs at, and this thread's rank within its unit (paper 000 A.3.2), split as
/// rank = blk·T + thr: `blk` is the block index within the unit (0 at thread level), `thr` the thread index
/// within the block (within the unit at thread level).
#[derive(Clone, Debug)]
struct Ctx {
    persp: Perspective,
    blk: Val,
    thr: Val,
    /// The threads of a block that run the current code, one interval per unit of the perspective
    /// (`ring_sites`): what counts a ring's arrivals and a warpgroup's register budget.
    units: ring_sites::Units,
}

// ---------------------------------------------------------------------------------------------------------
// PTX spelling

// ---------------------------------------------------------------------------------------------------------
// The emitter

struct LoopLabels {
    cont: String,
    brk: String,
}

struct Em {
    body: Vec<body::Piece>,
    /// The first emitter bug found (text a lowering wrote that is not PTX); reported when finishing.
    internal_error: Option<String>,
    nregs: [u32; 6],
    nlabels: u32,
    env: Vec<Scope>,
    ctx: Ctx,
    /// Threads per block: an immediate with `threads = N`, else `%ntid.x`.
    t: Val,
    tid: Val,
    smem_reg: Option<String>,
    /// Next offset for an allocation of the function being emitted (its own allocations, in order).
    smem_next: u32,
    /// Where the shared allocations of functions called from the current one begin: the end of its own
    /// (16-byte aligned). Callees overlay each other there, as the checker's budget assumes.
    smem_callee_base: u32,
    /// End of the furthest allocation: the kernel's dynamic shared memory.
    smem_top: u32,
    loops: Vec<LoopLabels>,
    /// Perspective of the variable the current expression is assigned to (for `id()`, §3.5).
    id_target: Option<Perspective>,
    depth: u32,
    /// Set while inlining a device function of another crate: errors there are reported at the outermost
    /// call in the crate being compiled (the foreign function's own spans point at its crate's macro).
    in_foreign: bool,
    synced: HashMap<String, Rc<Function>>,
    uses_smem: bool,
    /// Synchronization policy for inlined device functions.
    /// Named barrier ids: first id of each `thread[n]` group size used so far (each unit of that size gets
    /// `first + tid / n`), so that groups of different sizes never share an id.
    named_bars: Vec<(u32, u32)>,
    next_bar: u32,
    /// The `async_` scopes around the code being emitted, innermost last.
    async_scopes: Vec<AsyncScope>,
    /// Number of `__prism_mbar_<k>` mbarriers (one per `async_` scope that issues `cp_async_bulk`).
    mbars: u32,
    /// A non-bulk `cp_async` was emitted: block-wide async waits also need `cp.async.wait_all`.
    uses_cp_async: bool,
    /// Kernel parameters (tensor maps) that a `tma_load` reads through: `Piece::BulkStoreWait` waits for the
    /// global writes of stores through them.
    tma_loaded: std::collections::HashSet<usize>,
    /// The maps' parameters of the `tma_store`s emitted so far (their waits are placed lazily, and a full
    /// wait before `ret`) and the body position of the first of them (`Em::bulk_waits_before`); where each
    /// label was placed.
    bulk_pending: Vec<usize>,
    bulk_pending_since: Option<usize>,
    labels: HashMap<String, usize>,
    /// wgmmas have been issued since the last `wgmma.wait_group` (see `hopper`).
    wgmma_open: bool,
    /// A `wgmma.fence` precedes the next wgmma on every path to it.
    wgmma_fenced: bool,
    /// A committed wgmma group may still be in flight (a drain kept it: `wait_group 1`).
    wgmma_inflight: bool,
    /// Accumulators and operand allocations of the wgmmas in flight (by name).
    wgmma_names: Vec<String>,
    /// Inside a ring: the drain whose slot waits to be handed back (`ring::Deferred`).
    drain_deferred: Option<ring::Deferred>,
    /// Run-time loops around the code being emitted, through inlined calls (a ring inside one starts afresh
    /// at every iteration: `ring::reinit`).
    runtime_loops: u32,
    /// Copies of the code being emitted that the unrolled loops around it make (the product of their trip
    /// counts, through inlined calls): at most [`MAX_UNROLLED`].
    unrolled: i128,
    /// Inside `turn(r, c, ..)`: ring `r`'s id and the consumer `c` (its drains count as that consumer's).
    turn: Option<(usize, u32)>,
    /// The module uses sm_90a-only instructions (wgmma, setmaxnreg).
    sm90a: bool,
    /// The box and layout each `TensorMap` parameter is loaded with.
    tma_uses: HashMap<usize, hopper::TmaUse>,
    /// `set_max_regs` values, where, and the threads that run each call (`ring_sites`).
    set_max_regs_used: Vec<(u32, Span, ring_sites::Units)>,
    /// `threads = N`, when given.
    threads: Option<u32>,
    /// The kernel's rings (their mbarriers are declared and initialized by `finish`).
    rings: Vec<ring::RingInfo>,
    /// `fill` names in scope and the address register of the full mbarrier of their slot.
    fill_slots: Vec<(String, String)>,
    /// `cluster = N` (1 without).
    cluster: u32,
    /// A ring multicasts across the cluster: its mbarriers are published to the cluster before use, and no
    /// block leaves while another may still write into it.
    cluster_rings: bool,
    /// The kernel (or a callee) issues wgmma: barriers carry a proxy fence.
    proxy_fences: bool,
    /// Alignment of the first shared allocation's address (swizzled layouts need up to 1024 bytes).
    smem_align: u32,
}

/// An `async_` scope being emitted: where its `cp_async_bulk` copies complete.
struct AsyncScope {
    /// The scope's new name (the only valid `cp_async_bulk` destination for it).
    name: String,
    /// The target is a shared allocation at `block[1]`, so one block-wide mbarrier can track its copies.
    bulk_ok: bool,
    /// The scope's mbarrier, allocated at its first `cp_async_bulk`.
    mbar: Option<u32>,
}

impl Em {
    fn new() -> Self {
        Em {
            body: Vec::new(),
            internal_error: None,
            nregs: [0; 6],
            nlabels: 0,
            env: vec![Scope::new()],
            ctx: Ctx {
                persp: Perspective::grid(1),
                blk: Val::imm_u32(0),
                thr: Val::imm_u32(0),
                units: ring_sites::whole_block(None),
            },
            t: Val::imm_u32(1),
            tid: Val::imm_u32(0),
            smem_reg: None,
            smem_next: 0,
            smem_callee_base: 0,
            smem_top: 0,
            loops: Vec::new(),
            id_target: None,
            depth: 0,
            in_foreign: false,
            synced: HashMap::new(),
            uses_smem: false,
            named_bars: Vec::new(),
            next_bar: 1,
            async_scopes: Vec::new(),
            mbars: 0,
            uses_cp_async: false,
            tma_loaded: Default::default(),
            bulk_pending: Vec::new(),
            bulk_pending_since: None,
            labels: HashMap::new(),
            wgmma_open: false,
            wgmma_fenced: false,
            wgmma_inflight: false,
            wgmma_names: Vec::new(),
            drain_deferred: None,
            runtime_loops: 0,
            unrolled: 1,
            turn: None,
            sm90a: false,
            tma_uses: HashMap::new(),
            set_max_regs_used: Vec::new(),
            threads: None,
            rings: Vec::new(),
            fill_slots: Vec::new(),
            cluster: 1,
            cluster_rings: false,
            proxy_fences: false,
            smem_align: 16,
        }
    }

    // ----- small helpers

    fn label(&mut self) -> String {
        self.nlabels += 1;
        format!("$L__{}", self.nlabels)
    }

    fn fresh(&mut self, t: ScalarType) -> String {
        let c = reg_class(t);
        self.nregs[c] += 1;
        format!("{}{}", REG_CLASSES[c].1, self.nregs[c])
    }

    fn smem_base(&mut self) -> String {
        self.uses_smem = true;
        if self.smem_reg.is_none() {
            let r = self.fresh(ScalarType::U32);
            self.smem_reg = Some(r);
        }
        self.smem_reg.clone().unwrap_or_default()
    }

    fn bind(&mut self, name: &str, b: Binding) {
        if let Some(s) = self.env.last_mut() {
            s.insert(name.to_string(), b);
        }
    }

    fn lookup(&self, id: &Ident) -> R<Binding> {
        match self.env.iter().rev().find_map(|s| s.get(&id.name)) {
            Some(Binding::Hidden) => Err(bug(
                "*-HIDDEN",
                id.span,
                format!(
                    "`{}` is hidden inside its partition/claim/async scope",
                    id.name
                ),
            )),
            Some(b) => Ok(b.clone()),
            None => Err(bug(
                "UNKNOWN-NAME",
                id.span,
                format!("unknown name `{}`", id.name),
            )),
        }
    }

    /// A flat copy of every visible binding (captured by index closures).
    fn capture(&self) -> Scope {
        let mut s = Scope::new();
        for sc in &self.env {
            for (k, v) in sc {
                s.insert(k.clone(), v.clone());
            }
        }
        s
    }

    /// Immutable constants visible now, for `consteval::eval_const`.
    fn const_of(&self, name: &str) -> Option<i64> {
        match self.env.iter().rev().find_map(|s| s.get(name)) {
            Some(Binding::Scalar {
                val: Val::Imm(Imm::Int(v), _),
                ..
            }) => i64::try_from(*v).ok(),
            _ => None,
        }
    }

    fn const_i64(&self, e: &Expr) -> R<i64> {
        eval_const(e, &|n| self.const_of(n))
    }

    fn const_u32(&self, e: &Expr) -> R<u32> {
        let v = self.const_i64(e)?;
        u32::try_from(v).map_err(|_| err("CONST", e.span, format!("{v} is out of range for u32")))
    }
}
