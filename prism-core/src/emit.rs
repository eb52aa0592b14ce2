//! Checked tree → PTX (DESIGN.md §4). The execution model, the rank/`id()` mapping, register arrays,
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
use crate::sync::SyncPolicy;
use crate::{CompiledKernel, Contract, Diagnostic, ParamInfo, ParamKind};
use proc_macro2::Span;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::rc::Rc;

mod hopper;
mod ring_sites;

type R<T> = Result<T, Diagnostic>;

/// Largest trip count a loop is unrolled to.
const MAX_UNROLL: i128 = 4096;
/// Loops with at most this many iterations are always unrolled.
const SMALL_TRIP: i128 = 16;
/// Deepest chain of inlined device-function calls.
const MAX_INLINE_DEPTH: u32 = 64;

/// Emits one PTX module per instance of the checked kernel, with the inferred synchronization
/// ([`SyncPolicy::Inferred`]).
pub fn emit_kernel(k: &Checked, deps: &[Function]) -> Result<Vec<CompiledKernel>, Vec<Diagnostic>> {
    emit_kernel_with(k, deps, SyncPolicy::Inferred)
}

/// Emits one PTX module per instance of the checked kernel, inserting barriers under `policy` (device
/// functions get `Naive` under `Naive`, else `Inferred`).
pub fn emit_kernel_with(
    k: &Checked,
    deps: &[Function],
    policy: SyncPolicy,
) -> Result<Vec<CompiledKernel>, Vec<Diagnostic>> {
    let f = crate::sync::insert_barriers_with(&k.function, deps, policy)?;
    let instances: Vec<Vec<i64>> = if f.const_params.is_empty() {
        vec![Vec::new()]
    } else if f.instances.is_empty() {
        return Err(vec![Diagnostic::new(
            "TEMPLATE",
            f.name.span,
            format!(
                "kernel `{}` has const generics but no `instances = [..]`",
                f.name
            ),
        )
        .help(
            "list the instantiations in the attribute, e.g. `instances = [(64, 64)]`",
        )]);
    } else {
        f.instances.iter().map(|i| i.values.clone()).collect()
    };
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for inst in instances {
        match emit_instance(&f, &inst, deps, policy) {
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

/// PTX entry name of an instance: `name` or `name_v1_v2` (negative values as `m5`).
pub fn entry_name(name: &str, instance: &[i64]) -> String {
    let mut s = name.to_string();
    for v in instance {
        if *v < 0 {
            let _ = write!(s, "_m{}", v.unsigned_abs());
        } else {
            let _ = write!(s, "_{v}");
        }
    }
    s
}

fn lcm(a: u32, b: u32) -> u32 {
    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    if a == 0 || b == 0 {
        a.max(b)
    } else {
        a / gcd(a, b) * b
    }
}

fn emit_instance(
    f: &Function,
    inst: &[i64],
    deps: &[Function],
    policy: SyncPolicy,
) -> R<CompiledKernel> {
    let entry = entry_name(&f.name.name, inst);
    let mut em = Em::new(deps);
    em.callee_policy = match policy {
        SyncPolicy::Naive => SyncPolicy::Naive,
        _ => SyncPolicy::Inferred,
    };
    if inst.len() != f.const_params.len() {
        return Err(Diagnostic::new(
            "TEMPLATE",
            f.name.span,
            format!(
                "instance has {} values for {} const generics",
                inst.len(),
                f.const_params.len()
            ),
        ));
    }
    for (cp, v) in f.const_params.iter().zip(inst) {
        em.bind(
            &cp.name.name,
            Binding::Scalar {
                val: Val::Imm(Imm::Int(*v as i128), Some(cp.ty)),
                persp: Perspective::grid(1),
            },
        );
    }
    let threads = f.threads.as_ref().map(|e| em.const_u32(e)).transpose()?;
    let blocks = f.blocks.as_ref().map(|e| em.const_u32(e)).transpose()?;
    em.threads = threads;
    em.cluster = f
        .cluster
        .as_ref()
        .map(|e| em.const_u32(e))
        .transpose()?
        .unwrap_or(1);
    em.proxy_fences = std::iter::once(f).chain(deps).any(|g| {
        let mut hit = false;
        crate::check::walk_calls(&g.body, &mut |name, _| {
            hit |= name.starts_with("wgmma_") || name == "tma_store"
        });
        hit
    });

    // Special registers, read once at entry (ptxas drops the unused ones).
    let tid = em.fresh(ScalarType::U32);
    let ctaid = em.fresh(ScalarType::U32);
    em.line(format!("mov.u32 {tid}, %tid.x;"));
    em.line(format!("mov.u32 {ctaid}, %ctaid.x;"));
    em.t = match threads {
        Some(t) => Val::imm_u32(t),
        None => {
            let r = em.fresh(ScalarType::U32);
            em.line(format!("mov.u32 {r}, %ntid.x;"));
            Val::Reg(r, ScalarType::U32)
        }
    };
    em.tid = Val::Reg(tid.clone(), ScalarType::U32);

    let top = f
        .requires
        .first()
        .map(|p| p.perspective)
        .unwrap_or(Perspective::grid(1));
    let mut params_decl = Vec::new();
    let mut params = Vec::new();
    for (i, p) in f.params.iter().enumerate() {
        let pname = format!("{entry}_param_{i}");
        let persp = p.at.map(|a| a.perspective).unwrap_or(top);
        match &p.ty {
            Type::Ptr { elem, mutable } => {
                params_decl.push(format!("\t.param .u64 {pname}"));
                let a = em.fresh(ScalarType::U64);
                let g = em.fresh(ScalarType::U64);
                em.line(format!("ld.param.u64 {a}, [{pname}];"));
                em.line(format!("cvta.to.global.u64 {g}, {a};"));
                let view = View {
                    space: Space::Global,
                    base: Val::Reg(g, ScalarType::U64),
                    elem: *elem,
                    readonly: !*mutable,
                    maps: Vec::new(),
                    layout: SmemLayout::Linear,
                    len: 0,
                    peer: None,
                };
                em.bind(&p.name.name, Binding::Mem { view, persp });
                params.push(ParamInfo {
                    name: p.name.name.clone(),
                    kind: ParamKind::Ptr {
                        elem: *elem,
                        mutable: *mutable,
                    },
                });
            }
            Type::Scalar(t) => {
                let (pt, rt) = match t {
                    ScalarType::Bool => ("u32", ScalarType::U32),
                    ScalarType::F16 | ScalarType::BF16 => ("b16", *t),
                    _ => (ptx_ty(*t), *t),
                };
                params_decl.push(format!("\t.param .{pt} {pname}"));
                let r = em.fresh(rt);
                em.line(format!("ld.param.{pt} {r}, [{pname}];"));
                let val = if *t == ScalarType::Bool {
                    let p = em.fresh(ScalarType::Bool);
                    em.line(format!("setp.ne.u32 {p}, {r}, 0;"));
                    Val::Reg(p, ScalarType::Bool)
                } else {
                    Val::Reg(r, rt)
                };
                em.bind(&p.name.name, Binding::Scalar { val, persp });
                params.push(ParamInfo {
                    name: p.name.name.clone(),
                    kind: ParamKind::Scalar(*t),
                });
            }
            Type::TensorMap {
                elem,
                rank,
                mutable,
            } => {
                // By value, as `cuLaunchKernel` copies it; TMA reads it through its generic address.
                params_decl.push(format!("\t.param .align 64 .b8 {pname}[128]"));
                let a = em.fresh(ScalarType::U64);
                let g = em.fresh(ScalarType::U64);
                em.line(format!("mov.b64 {a}, {pname};"));
                em.line(format!("cvta.param.u64 {g}, {a};"));
                em.bind(
                    &p.name.name,
                    Binding::TensorMap {
                        param: i,
                        addr: g,
                        elem: *elem,
                        rank: *rank,
                    },
                );
                params.push(ParamInfo {
                    name: p.name.name.clone(),
                    kind: ParamKind::TensorMap {
                        elem: *elem,
                        rank: *rank,
                        mutable: *mutable,
                        box_dims: Vec::new(),
                        swizzle: SmemLayout::Linear,
                    },
                });
            }
            _ => {
                return Err(Diagnostic::new(
                    "EMIT-PARAM",
                    p.span,
                    format!(
                        "kernel parameter `{}` must be a scalar or a global pointer",
                        p.name
                    ),
                )
                .help("pass arrays through global memory (`*const T` / `*mut T`)"))
            }
        }
    }

    // Execution starts at grid[1]: rank = ctaid·T + tid; narrowing to the kernel's top perspective is a group.
    em.ctx = Ctx {
        persp: Perspective::grid(1),
        blk: Val::Reg(ctaid, ScalarType::U32),
        thr: Val::Reg(tid, ScalarType::U32),
        units: ring_sites::whole_block(em.threads),
    };
    em.group_into(top)?;
    em.smem_callee_base = em.own_smem(&f.body)?;
    em.block(&f.body)?;
    em.wgmma_retire();
    if em.cluster_rings {
        // Peers may still multicast into this block or arrive on its mbarriers until they are done too.
        em.line("barrier.cluster.arrive.release;".to_string());
        em.line("barrier.cluster.wait.acquire;".to_string());
    }
    em.line("ret;".to_string());
    for (i, p) in params.iter_mut().enumerate() {
        if let (
            ParamKind::TensorMap {
                box_dims, swizzle, ..
            },
            Some(u),
        ) = (&mut p.kind, em.tma_uses.get(&i))
        {
            box_dims.clone_from(&u.box_dims);
            *swizzle = u.layout;
        }
    }

    let mut contract = Contract {
        threads_multiple_of: 1,
        threads_exact: threads,
        blocks_multiple_of: 1,
        blocks_exact: blocks,
        // Room to round the dynamic shared window up to the swizzle alignment at run time.
        smem_bytes: em.smem_top + (em.smem_align - 16),
        cluster: em.cluster,
    };
    contract.blocks_multiple_of = lcm(contract.blocks_multiple_of, em.cluster);
    for r in &f.requires {
        match r.perspective.level {
            Level::Thread => {
                contract.threads_multiple_of = lcm(contract.threads_multiple_of, r.perspective.n)
            }
            Level::Block => {
                contract.blocks_multiple_of = lcm(contract.blocks_multiple_of, r.perspective.n)
            }
            Level::Grid => {}
        }
    }
    let ptx = em.finish(&entry, &params_decl, threads);
    Ok(CompiledKernel {
        entry,
        instance: inst.to_vec(),
        ptx,
        params,
        contract,
    })
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

fn ptx_ty(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Bool => "pred",
        ScalarType::U32 => "u32",
        ScalarType::I32 => "s32",
        ScalarType::U64 => "u64",
        ScalarType::I64 => "s64",
        ScalarType::F32 => "f32",
        ScalarType::F64 => "f64",
        ScalarType::F16 => "f16",
        ScalarType::BF16 => "bf16",
    }
}

/// Untyped bit width spelling (`b32`), for moves, bit operations and memory.
fn bits_ty(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Bool => "pred",
        ScalarType::F16 | ScalarType::BF16 => "b16",
        ScalarType::U32 | ScalarType::I32 | ScalarType::F32 => "b32",
        ScalarType::U64 | ScalarType::I64 | ScalarType::F64 => "b64",
    }
}

/// Memory access type.
fn mem_ty(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Bool => "u8",
        ScalarType::F16 | ScalarType::BF16 => "b16",
        _ => ptx_ty(t),
    }
}

const REG_CLASSES: [(&str, &str); 6] = [
    ("pred", "%p"),
    ("b16", "%h"),
    ("b32", "%r"),
    ("b64", "%rd"),
    ("f32", "%f"),
    ("f64", "%fd"),
];

fn reg_class(t: ScalarType) -> usize {
    match t {
        ScalarType::Bool => 0,
        ScalarType::F16 | ScalarType::BF16 => 1,
        ScalarType::U32 | ScalarType::I32 => 2,
        ScalarType::U64 | ScalarType::I64 => 3,
        ScalarType::F32 => 4,
        ScalarType::F64 => 5,
    }
}

fn wrap_int(v: i128, t: ScalarType) -> i128 {
    match t {
        ScalarType::U32 => v as u32 as i128,
        ScalarType::I32 => v as i32 as i128,
        ScalarType::U64 => v as u64 as i128,
        ScalarType::I64 => v as i64 as i128,
        _ => v,
    }
}

fn imm_str(i: Imm, t: ScalarType) -> String {
    match (i, t) {
        (Imm::Bool(b), _) => (b as u32).to_string(),
        (Imm::Int(v), ScalarType::F32) => format!("0f{:08X}", (v as f32).to_bits()),
        (Imm::Int(v), ScalarType::F64) => format!("0d{:016X}", (v as f64).to_bits()),
        (Imm::Int(v), _) => wrap_int(v, t).to_string(),
        (Imm::Float(x), ScalarType::F32) => format!("0f{:08X}", (x as f32).to_bits()),
        (Imm::Float(x), ScalarType::F16) => format!("0x{:04X}", f32_to_f16_bits(x as f32)),
        (Imm::Float(x), ScalarType::BF16) => format!("0x{:04X}", f32_to_bf16_bits(x as f32)),
        (Imm::Float(x), _) => format!("0d{:016X}", x.to_bits()),
    }
}

/// Round-to-nearest-even f32 → IEEE half bits (for folding literals into f16 storage).
fn f32_to_f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let mut r = m >> shift;
        let rem = m & ((1 << shift) - 1);
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

fn f32_to_bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    ((b.wrapping_add(round)) >> 16) as u16
}

fn is_pow2(n: i128) -> bool {
    n > 0 && n & (n - 1) == 0
}

fn warp_uniform_persp(p: Perspective) -> bool {
    p.level != Level::Thread || p.n.is_multiple_of(32)
}

fn err(rule: &'static str, span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::new(rule, span, msg)
}

// ---------------------------------------------------------------------------------------------------------
// The emitter

struct LoopLabels {
    cont: String,
    brk: String,
}

struct Em<'a> {
    deps: &'a [Function],
    body: String,
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
    synced: HashMap<String, Rc<Function>>,
    uses_smem: bool,
    /// Synchronization policy for inlined device functions.
    callee_policy: SyncPolicy,
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
    /// wgmmas have been issued since the last `wgmma.wait_group` (see `hopper`).
    wgmma_open: bool,
    /// A `wgmma.fence` precedes the next wgmma on every path to it.
    wgmma_fenced: bool,
    /// A committed wgmma group may still be in flight (a drain kept it: `wait_group 1`).
    wgmma_inflight: bool,
    /// Accumulators and operand allocations of the wgmmas in flight (by name).
    wgmma_names: Vec<String>,
    /// Inside a ring: the predicate "a drain's slot waits to be handed back" and that slot's empty mbarrier.
    drain_deferred: Option<(String, String)>,
    /// The module uses sm_90a-only instructions (wgmma, setmaxnreg).
    sm90a: bool,
    /// The box and layout each `TensorMap` parameter is loaded with.
    tma_uses: HashMap<usize, hopper::TmaUse>,
    /// `set_max_regs` values, where, and the threads that run each call (`ring_sites`).
    set_max_regs_used: Vec<(u32, Span, ring_sites::Units)>,
    /// `threads = N`, when given.
    threads: Option<u32>,
    /// The kernel's rings (their mbarriers are declared and initialized by `finish`).
    rings: Vec<hopper::RingInfo>,
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

/// Placeholder line for a block-wide async wait; `finish` expands it once every mbarrier is known (a wait may
/// come textually before the scope whose copies it waits for, e.g. at the top of a loop).
const ASYNC_WAIT_MARK: &str = "@@prism-async-wait@@";

impl<'a> Em<'a> {
    fn new(deps: &'a [Function]) -> Self {
        Em {
            deps,
            body: String::new(),
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
            synced: HashMap::new(),
            uses_smem: false,
            callee_policy: SyncPolicy::Inferred,
            named_bars: Vec::new(),
            next_bar: 1,
            async_scopes: Vec::new(),
            mbars: 0,
            uses_cp_async: false,
            wgmma_open: false,
            wgmma_fenced: false,
            wgmma_inflight: false,
            wgmma_names: Vec::new(),
            drain_deferred: None,
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

    fn finish(mut self, entry: &str, params: &[String], threads: Option<u32>) -> String {
        let mut s = String::new();
        s.push_str("//\n// Generated by prism-core (Prism for Rust). Do not edit.\n//\n\n");
        // mbarrier transaction counts and bulk copies need sm_90.
        let target = if self.sm90a {
            "sm_90a"
        } else if self.mbars > 0 || self.cluster > 1 || !self.rings.is_empty() {
            "sm_90"
        } else {
            "sm_80"
        };
        let _ = write!(s, ".version 8.0\n.target {target}\n.address_size 64\n\n");
        if self.uses_smem {
            let _ = write!(
                s,
                ".extern .shared .align {} .b8 __prism_smem[];\n\n",
                self.smem_align
            );
        }
        // Static, apart from the dynamic `__prism_smem`, so the checker's layout and the contract's
        // `smem_bytes` do not change (8 bytes per bulk `async_` scope).
        for k in 0..self.mbars {
            let _ = writeln!(s, ".shared .align 8 .b64 __prism_mbar_{k};");
        }
        for (r, ring) in self.rings.iter().enumerate() {
            for side in ["full", "empty"] {
                let _ = writeln!(
                    s,
                    ".shared .align 8 .b64 __prism_ring{r}_{side}[{}];",
                    ring.stages
                );
            }
        }
        if self.mbars > 0 || !self.rings.is_empty() {
            s.push('\n');
        }
        let (prologue, body) = self.expand_async_waits();
        let _ = write!(s, ".visible .entry {entry}(");
        if params.is_empty() {
            s.push_str(")\n");
        } else {
            s.push('\n');
            s.push_str(&params.join(",\n"));
            s.push_str("\n)\n");
        }
        if let Some(t) = threads {
            let _ = writeln!(s, ".reqntid {t}");
        }
        if self.cluster > 1 {
            let _ = writeln!(s, ".reqnctapercluster {}, 1, 1", self.cluster);
        }
        if !self.set_max_regs_used.is_empty() {
            // setmaxnreg needs a known register count at entry (HOPPER.md §7).
            let _ = writeln!(s, ".maxnreg {}", self.maxnreg_entry());
        }
        s.push_str("{\n");
        let align = self.smem_align;
        let smem_line = self.smem_reg.as_ref().map(|r| {
            let mut l = format!("\tmov.u32 {r}, __prism_smem;\n");
            if align > 16 {
                // The window's start is only 16-byte aligned on every device: round up (the contract
                // requests the extra bytes).
                let _ = write!(
                    l,
                    "\tadd.u32 {r}, {r}, {};\n\tand.b32 {r}, {r}, {};\n",
                    align - 1,
                    !(align - 1) as i32
                );
            }
            l
        });
        for (i, (ty, prefix)) in REG_CLASSES.iter().enumerate() {
            if self.nregs[i] > 0 {
                let _ = writeln!(s, "\t.reg .{ty} {prefix}<{}>;", self.nregs[i] + 1);
            }
        }
        s.push('\n');
        if let Some(l) = smem_line {
            s.push_str(&l);
        }
        s.push_str(&prologue);
        s.push_str(&body);
        s.push_str("}\n");
        s
    }

    /// The mbarrier entry prologue and the body with every [`ASYNC_WAIT_MARK`] expanded (allocates the
    /// registers both use, so it runs before the register declarations are written).
    ///
    /// Protocol per mbarrier (one per bulk `async_` scope): thread 0 initializes it with an arrival count of
    /// the block's threads; the issuing thread adds the copy's bytes with `expect_tx` before the copy; every
    /// block-wide async wait has each thread arrive and spin on the current phase's parity, then flip its
    /// phase. A wait with no copy outstanding just completes an empty phase, so waiting on every mbarrier at
    /// every block-wide wait is correct and keeps all threads' phases in step.
    fn expand_async_waits(&mut self) -> (String, String) {
        let body = std::mem::take(&mut self.body);
        let mut pro = String::new();
        let mut phases = Vec::new();
        if self.mbars > 0 || !self.rings.is_empty() {
            let tid = self.fresh(ScalarType::U32);
            let cnt = self.fresh(ScalarType::U32);
            let p = self.fresh(ScalarType::Bool);
            let skip = self.label();
            let _ = writeln!(pro, "\tmov.u32 {tid}, %tid.x;");
            let _ = writeln!(pro, "\tsetp.ne.u32 {p}, {tid}, 0;");
            let _ = writeln!(pro, "\t@{p} bra {skip};");
            let _ = writeln!(pro, "\tmov.u32 {cnt}, %ntid.x;");
            for k in 0..self.mbars {
                let _ = writeln!(
                    pro,
                    "\tmbarrier.init.shared::cta.b64 [__prism_mbar_{k}], {cnt};"
                );
            }
            for (r, ring) in self.rings.iter().enumerate() {
                for i in 0..ring.stages {
                    let _ = writeln!(
                        pro,
                        "\tmbarrier.init.shared::cta.b64 [__prism_ring{r}_full+{}], {};",
                        8 * i,
                        ring.full_count
                    );
                    let _ = writeln!(
                        pro,
                        "\tmbarrier.init.shared::cta.b64 [__prism_ring{r}_empty+{}], {};",
                        8 * i,
                        ring.empty_count
                    );
                }
            }
            let _ = writeln!(pro, "{skip}:");
            // The initialization must be visible to every thread before any arrives or waits (and, for
            // multicast rings, to the other blocks of the cluster).
            if self.cluster_rings {
                pro.push_str("\tfence.mbarrier_init.release.cluster;\n");
                pro.push_str(
                    "\tbarrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;\n",
                );
            } else {
                pro.push_str("\tbar.sync 0;\n");
            }
            for _ in 0..self.mbars {
                let ph = self.fresh(ScalarType::U32);
                let _ = writeln!(pro, "\tmov.u32 {ph}, 0;");
                phases.push(ph);
            }
        }
        if !body.contains(ASYNC_WAIT_MARK) {
            return (pro, body);
        }
        let mut out = String::with_capacity(body.len());
        for l in body.split_inclusive('\n') {
            if l.trim() != ASYNC_WAIT_MARK {
                out.push_str(l);
                continue;
            }
            if self.uses_cp_async || self.mbars == 0 {
                out.push_str("\tcp.async.wait_all;\n");
            }
            for (k, ph) in phases.iter().enumerate() {
                let p = self.fresh(ScalarType::Bool);
                let wait = self.label();
                let _ = writeln!(
                    out,
                    "\tmbarrier.arrive.shared::cta.b64 _, [__prism_mbar_{k}];"
                );
                let _ = writeln!(out, "{wait}:");
                let _ = writeln!(
                    out,
                    "\tmbarrier.try_wait.parity.shared::cta.b64 {p}, [__prism_mbar_{k}], {ph};"
                );
                let _ = writeln!(out, "\t@!{p} bra {wait};");
                let _ = writeln!(out, "\txor.b32 {ph}, {ph}, 1;");
            }
        }
        (pro, out)
    }

    // ----- small helpers

    fn line(&mut self, l: String) {
        // Issued, uncommitted wgmmas end at control flow and synchronization; a committed group a drain keeps
        // in flight does not (the drain's own wait and the loop around it touch no accumulator).
        if self.wgmma_open && ends_wgmma_run(&l) {
            self.wgmma_retire();
        }
        self.body.push('\t');
        self.body.push_str(&l);
        self.body.push('\n');
    }

    fn label(&mut self) -> String {
        self.nlabels += 1;
        format!("$L__{}", self.nlabels)
    }

    fn put_label(&mut self, l: &str) {
        // A join point of a forward branch: that path retired its wgmmas before branching, but may have
        // touched the accumulators since, so the next wgmma fences again.
        if self.wgmma_open && self.body.contains(&format!("{l};")) {
            self.wgmma_fenced = false;
        }
        self.body.push_str(l);
        self.body.push_str(":\n");
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
            Some(Binding::Hidden) => Err(err(
                "T-PARTITION",
                id.span,
                format!(
                    "`{}` is hidden inside its partition/claim/async scope",
                    id.name
                ),
            )
            .help("use the scope's new name")),
            Some(b) => Ok(b.clone()),
            None => Err(err(
                "EMIT-NAME",
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

    /// Operand text for `v` used as type `t`.
    fn op(&self, v: &Val, t: ScalarType) -> String {
        match v {
            Val::Imm(i, _) => imm_str(*i, t),
            Val::Reg(r, _) => r.clone(),
        }
    }

    /// `v` in a register of type `t` (immediates are moved in; registers are used as they are).
    fn reg(&mut self, v: &Val, t: ScalarType) -> String {
        match v {
            Val::Reg(r, _) => r.clone(),
            Val::Imm(i, _) => {
                let r = self.fresh(t);
                if t == ScalarType::Bool {
                    let b = matches!(i, Imm::Bool(true)) || matches!(i, Imm::Int(x) if *x != 0);
                    self.line(format!("setp.ne.u32 {r}, {}, 0;", b as u32));
                } else {
                    self.line(format!("mov.{} {r}, {};", bits_ty(t), imm_str(*i, t)));
                }
                r
            }
        }
    }

    /// Copies `v` into register `dst` of type `t`.
    fn mov_into(&mut self, dst: &str, v: &Val, t: ScalarType) {
        if t == ScalarType::Bool {
            match v {
                Val::Reg(r, _) => self.line(format!("mov.pred {dst}, {r};")),
                Val::Imm(i, _) => {
                    let b = matches!(i, Imm::Bool(true));
                    self.line(format!("setp.ne.u32 {dst}, {}, 0;", b as u32));
                }
            }
        } else {
            let o = self.op(v, t);
            if o != dst {
                self.line(format!("mov.{} {dst}, {o};", bits_ty(t)));
            }
        }
    }

    /// Gives an untyped immediate the type `t`; converts typed values of another type the way the checker
    /// allows implicitly (same-width integers reinterpret).
    fn coerce(&mut self, v: Val, t: ScalarType, span: Span) -> R<Val> {
        match v.ty() {
            None => Ok(match v {
                Val::Imm(Imm::Int(x), _) if t.is_float() => Val::Imm(Imm::Float(x as f64), Some(t)),
                Val::Imm(Imm::Int(x), _) => Val::Imm(Imm::Int(wrap_int(x, t)), Some(t)),
                Val::Imm(i, _) => Val::Imm(i, Some(t)),
                r => r,
            }),
            Some(vt) if vt == t => Ok(v),
            Some(vt) if vt.is_int() && t.is_int() && vt.size() == t.size() => Ok(match v {
                Val::Reg(r, _) => Val::Reg(r, t),
                Val::Imm(Imm::Int(x), _) => Val::Imm(Imm::Int(wrap_int(x, t)), Some(t)),
                o => o,
            }),
            Some(vt) => Err(err(
                "EMIT-TYPE",
                span,
                format!("expected a value of type {t}, found {vt}"),
            )
            .help(format!("convert explicitly with `as {t}`"))),
        }
    }

    // ----- arithmetic used by the rank machinery (u32, folds constants)

    fn u32_bin(&mut self, op: &str, a: &Val, b: &Val) -> Val {
        if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
            let x = x as u32;
            let y = y as u32;
            let r = match op {
                "add" => x.wrapping_add(y),
                "sub" => x.wrapping_sub(y),
                "mul" => x.wrapping_mul(y),
                "div" if y != 0 => x / y,
                "rem" if y != 0 => x % y,
                _ => 0,
            };
            return Val::imm_u32(r);
        }
        match (op, b.as_int()) {
            ("add" | "sub", Some(0)) | ("mul" | "div", Some(1)) => return a.clone(),
            ("rem", Some(1)) | ("mul", Some(0)) => return Val::imm_u32(0),
            ("div", Some(y)) if is_pow2(y) => {
                let r = self.fresh(ScalarType::U32);
                let a = self.op(a, ScalarType::U32);
                self.line(format!("shr.u32 {r}, {a}, {};", y.trailing_zeros()));
                return Val::Reg(r, ScalarType::U32);
            }
            ("rem", Some(y)) if is_pow2(y) => {
                let r = self.fresh(ScalarType::U32);
                let a = self.op(a, ScalarType::U32);
                self.line(format!("and.b32 {r}, {a}, {};", y - 1));
                return Val::Reg(r, ScalarType::U32);
            }
            ("mul", Some(y)) if is_pow2(y) => {
                let r = self.fresh(ScalarType::U32);
                let a = self.op(a, ScalarType::U32);
                self.line(format!("shl.b32 {r}, {a}, {};", y.trailing_zeros()));
                return Val::Reg(r, ScalarType::U32);
            }
            _ => {}
        }
        if op == "mul" && a.as_int() == Some(0) {
            return Val::imm_u32(0);
        }
        let r = self.fresh(ScalarType::U32);
        let ins = if op == "mul" {
            "mul.lo.u32".to_string()
        } else {
            format!("{op}.u32")
        };
        let (x, y) = (self.op(a, ScalarType::U32), self.op(b, ScalarType::U32));
        self.line(format!("{ins} {r}, {x}, {y};"));
        Val::Reg(r, ScalarType::U32)
    }

    /// The rank in threads within the current unit: blk·T + thr.
    fn rank(&mut self) -> Val {
        let (blk, thr, t) = (self.ctx.blk.clone(), self.ctx.thr.clone(), self.t.clone());
        let bt = self.u32_bin("mul", &blk, &t);
        self.u32_bin("add", &bt, &thr)
    }

    /// S-GROUP: narrowing to `p` keeps rank mod size(p).
    fn group_into(&mut self, p: Perspective) -> R<()> {
        let cur = self.ctx.persp;
        if cur == p {
            return Ok(());
        }
        match p.level {
            Level::Grid => {}
            Level::Block => {
                if cur.level == Level::Grid || cur.level == Level::Block {
                    let b = self.ctx.blk.clone();
                    self.ctx.blk = self.u32_bin("rem", &b, &Val::imm_u32(p.n));
                }
            }
            Level::Thread => {
                // size(thread[k]) divides T (the launch contract), so (blk·T + thr) mod k = thr mod k.
                let thr = self.ctx.thr.clone();
                let exact = matches!((&self.t, cur.level), (Val::Imm(Imm::Int(t), _), Level::Block | Level::Grid) if *t == p.n as i128);
                self.ctx.thr = if exact {
                    thr
                } else {
                    self.u32_bin("rem", &thr, &Val::imm_u32(p.n))
                };
                self.ctx.blk = Val::imm_u32(0);
                self.ctx.units = ring_sites::group(&self.ctx.units, p.n);
            }
        }
        self.ctx.persp = p;
        Ok(())
    }

    /// E-PARTITION-ID / §3.5: `id()` stored into a variable of perspective `target` = rank / size(target).
    fn id_value(&mut self, target: Perspective) -> Val {
        match target.level {
            Level::Grid => Val::imm_u32(0),
            Level::Block => {
                if self.ctx.persp.level == Level::Thread {
                    Val::imm_u32(0)
                } else {
                    let b = self.ctx.blk.clone();
                    self.u32_bin("div", &b, &Val::imm_u32(target.n))
                }
            }
            Level::Thread => {
                let thr = self.ctx.thr.clone();
                let tq = self.u32_bin("div", &thr, &Val::imm_u32(target.n));
                if self.ctx.persp.level == Level::Thread {
                    tq
                } else {
                    // m divides T: rank / m = blk·(T/m) + thr/m.
                    let (blk, t) = (self.ctx.blk.clone(), self.t.clone());
                    let per = self.u32_bin("div", &t, &Val::imm_u32(target.n));
                    let bp = self.u32_bin("mul", &blk, &per);
                    self.u32_bin("add", &bp, &tq)
                }
            }
        }
    }

    // ----- statements

    fn block(&mut self, b: &Block) -> R<Value> {
        self.env.push(Scope::new());
        let r = self.block_inner(b);
        self.env.pop();
        r
    }

    fn block_inner(&mut self, b: &Block) -> R<Value> {
        for s in &b.stmts {
            self.stmt(s)?;
        }
        match &b.tail {
            Some(t) => {
                let saved = self.id_target.take();
                let v = self.expr(t);
                self.id_target = saved;
                v
            }
            None => Ok(Value::Unit),
        }
    }

    fn with_target<T>(&mut self, p: Perspective, f: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        let saved = self.id_target.replace(p);
        let r = f(self);
        self.id_target = saved;
        r
    }

    fn stmt(&mut self, s: &Stmt) -> R<()> {
        // A drain may start while the previous drain's wgmmas are in flight (it only issues more into the
        // same accumulators): every other statement could touch them, so it waits.
        let drain = matches!(&s.kind, StmtKind::RingUse { fill: false, .. });
        let keeps_group = drain && !self.wgmma_open;
        // A simple statement that names no accumulator or operand of the wgmmas in flight runs while they do
        // (the wait goes as late as the dependences allow); compound statements branch, so they wait.
        let independent = matches!(
            &s.kind,
            StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Expr(_)
        ) && !self.wgmma_names.iter().any(|n| stmt_mentions(s, n));
        if !is_wgmma_stmt(s) && !keeps_group && !independent {
            self.wgmma_retire();
        }
        match &s.kind {
            StmtKind::Let {
                name,
                mutable,
                ty,
                at,
                init,
            } => self.let_stmt(name, *mutable, ty.as_ref(), *at, init.as_ref(), s.span),
            StmtKind::Assign { place, op, value } => self.assign(place, *op, value),
            StmtKind::Expr(e) => {
                let saved = self.id_target.take();
                let r = self.expr(e).map(|_| ());
                self.id_target = saved;
                r
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let uni = self.uniform(cond);
                let c = self.scalar(cond)?;
                let c = self.coerce(c, ScalarType::Bool, cond.span)?;
                if let Val::Imm(Imm::Bool(b), _) = c {
                    // Constant condition (e.g. on a const generic): only the taken side is emitted.
                    if b {
                        self.block(then_block)?;
                    } else if let Some(e) = else_block {
                        self.block(e)?;
                    }
                    return Ok(());
                }
                let p = self.reg(&c, ScalarType::Bool);
                let else_l = self.label();
                let bra = if uni { "bra.uni" } else { "bra" };
                self.line(format!("@!{p} {bra} {else_l};"));
                self.block(then_block)?;
                if let Some(e) = else_block {
                    let end = self.label();
                    self.line(format!("bra.uni {end};"));
                    self.put_label(&else_l);
                    self.block(e)?;
                    self.put_label(&end);
                } else {
                    self.put_label(&else_l);
                }
                Ok(())
            }
            StmtKind::While { cond, body } => {
                let uni = self.uniform(cond);
                let head = self.label();
                let end = self.label();
                self.put_label(&head);
                let c = self.scalar(cond)?;
                let c = self.coerce(c, ScalarType::Bool, cond.span)?;
                match c {
                    Val::Imm(Imm::Bool(false), _) => {}
                    Val::Imm(..) => {}
                    _ => {
                        let p = self.reg(&c, ScalarType::Bool);
                        let bra = if uni { "bra.uni" } else { "bra" };
                        self.line(format!("@!{p} {bra} {end};"));
                    }
                }
                if !matches!(c, Val::Imm(Imm::Bool(false), _)) {
                    self.loops.push(LoopLabels {
                        cont: head.clone(),
                        brk: end.clone(),
                    });
                    let r = self.block(body);
                    self.loops.pop();
                    r?;
                    self.line(format!("bra.uni {head};"));
                }
                self.put_label(&end);
                Ok(())
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => self.for_stmt(var, start, end, step.as_ref(), body, s.span),
            StmtKind::Break | StmtKind::Continue => {
                let l = self
                    .loops
                    .last()
                    .ok_or_else(|| err("EMIT-LOOP", s.span, "`break`/`continue` outside a loop"))?;
                let target = if matches!(s.kind, StmtKind::Break) {
                    l.brk.clone()
                } else {
                    l.cont.clone()
                };
                self.line(format!("bra.uni {target};"));
                Ok(())
            }
            StmtKind::Group { at, body } => {
                let saved = self.ctx.clone();
                self.group_into(at.perspective)?;
                let r = self.block(body);
                self.ctx = saved;
                r.map(|_| ())
            }
            StmtKind::Split { level, arms, .. } => self.split(*level, arms, s.span),
            StmtKind::Partition {
                target,
                at,
                index,
                new_name,
                body,
            } => {
                let (view, _) = self.mem_binding(target)?;
                let mut v = view;
                v.maps.push(Rc::new(IndexMap {
                    params: index.params.iter().map(|p| p.name.clone()).collect(),
                    body: (*index.body).clone(),
                    env: self.capture(),
                }));
                self.scope_with(
                    target,
                    new_name,
                    Binding::Mem {
                        view: v,
                        persp: at.perspective,
                    },
                    body,
                )
            }
            StmtKind::Claim {
                target,
                at,
                new_name,
                body,
            } => {
                let (view, _) = self.mem_binding(target)?;
                self.scope_with(
                    target,
                    new_name,
                    Binding::Mem {
                        view,
                        persp: at.perspective,
                    },
                    body,
                )
            }
            StmtKind::Async {
                target,
                new_name,
                body,
            } => {
                let (view, persp) = self.mem_binding(target)?;
                self.async_scopes.push(AsyncScope {
                    name: new_name.name.clone(),
                    bulk_ok: view.space == Space::Shared && persp == Perspective::block(1),
                    mbar: None,
                });
                let r = self.scope_with(target, new_name, Binding::Mem { view, persp }, body);
                self.async_scopes.pop();
                r
            }
            StmtKind::Unsafe { body } => self.block(body).map(|_| ()),
            StmtKind::Ring {
                stages,
                targets,
                name,
                body,
            } => self.ring(stages, targets, name, body, s.span),
            StmtKind::RingUse {
                fill,
                ring,
                index,
                names,
                body,
            } => self.ring_use(*fill, ring, index, names, body, s.span),
            StmtKind::Peer {
                target,
                rank,
                new_name,
                body,
            } => self.peer(target, rank, new_name, body),
            StmtKind::Barrier(b) => self.barrier(*b, s.span),
        }
    }

    fn mem_binding(&self, id: &Ident) -> R<(View, Perspective)> {
        match self.lookup(id)? {
            Binding::Mem { view, persp } => Ok((view, persp)),
            _ => Err(err(
                "EMIT-TYPE",
                id.span,
                format!("`{}` is not a pointer or shared allocation", id.name),
            )),
        }
    }

    fn scope_with(&mut self, target: &Ident, new_name: &Ident, b: Binding, body: &Block) -> R<()> {
        self.env.push(Scope::new());
        self.bind(&target.name, Binding::Hidden);
        self.bind(&new_name.name, b);
        let r = self.block(body);
        self.env.pop();
        r.map(|_| ())
    }

    /// Bytes of the shared allocations written in `b` itself (callees excluded), each 16-byte aligned, in
    /// order: the same layout `let_stmt` produces.
    fn own_smem(&self, b: &Block) -> R<u32> {
        fn walk(em: &Em, b: &Block, acc: &mut u32) -> R<()> {
            for s in &b.stmts {
                if let StmtKind::Let {
                    ty: Some(Type::Shared { elem, len, layout }),
                    ..
                } = &s.kind
                {
                    let n = em.const_u32(len)?;
                    *acc = (layout.place(*acc as u64).min(u32::MAX as u64) as u32)
                        .saturating_add(n.saturating_mul(elem.size()));
                } else {
                    let mut r = Ok(());
                    for_each_block(s, &mut |inner| {
                        if r.is_ok() {
                            r = walk(em, inner, acc);
                        }
                    });
                    r?;
                }
            }
            Ok(())
        }
        let mut acc = 0;
        walk(self, b, &mut acc)?;
        Ok(acc.div_ceil(16) * 16)
    }

    fn let_stmt(
        &mut self,
        name: &Ident,
        mutable: bool,
        ty: Option<&Type>,
        at: Option<SpannedPerspective>,
        init: Option<&Expr>,
        span: Span,
    ) -> R<()> {
        let persp = at.map(|a| a.perspective).unwrap_or(self.ctx.persp);
        if let Some(Type::Shared { elem, len, layout }) = ty {
            let n = self.const_u32(len)?;
            let bytes = n
                .checked_mul(elem.size())
                .ok_or_else(|| err("SMEM", span, "shared allocation too large"))?;
            let off = layout.place(self.smem_next as u64);
            let off =
                u32::try_from(off).map_err(|_| err("SMEM", span, "shared allocation too large"))?;
            self.smem_align = self.smem_align.max(layout.align());
            self.smem_next = off
                .checked_add(bytes)
                .ok_or_else(|| err("SMEM", span, "shared allocation too large"))?;
            self.smem_top = self.smem_top.max(self.smem_next);
            let view = View {
                space: Space::Shared,
                base: Val::imm_u32(off),
                elem: *elem,
                readonly: false,
                maps: Vec::new(),
                layout: *layout,
                len: n,
                peer: None,
            };
            self.bind(
                &name.name,
                Binding::Mem {
                    view,
                    persp: Perspective::block(1),
                },
            );
            return Ok(());
        }
        let declared: Option<(ScalarType, Option<u32>)> = match ty {
            Some(Type::Scalar(t)) => Some((*t, None)),
            Some(Type::Array { elem, len }) => Some((*elem, Some(self.const_u32(len)?))),
            Some(Type::ArrayRef { .. }) | Some(Type::Ptr { .. }) => None,
            Some(Type::Shared { .. }) | Some(Type::TensorMap { .. }) | None => None,
        };
        let value = match init {
            Some(e) => Some(self.with_target(persp, |s| s.expr(e))?),
            None => None,
        };
        match value {
            None => match declared {
                Some((t, None)) => {
                    let r = self.fresh(t);
                    self.bind(
                        &name.name,
                        Binding::Scalar {
                            val: Val::Reg(r, t),
                            persp,
                        },
                    );
                }
                Some((t, Some(n))) => {
                    let regs = (0..n).map(|_| self.fresh(t)).collect();
                    self.bind(
                        &name.name,
                        Binding::Array {
                            regs,
                            elem: t,
                            persp,
                        },
                    );
                }
                None => {
                    return Err(err(
                        "EMIT-TYPE",
                        span,
                        format!("`{}` needs a type or an initializer", name.name),
                    ))
                }
            },
            Some(Value::S(v)) => {
                let t = match declared {
                    Some((t, None)) => t,
                    _ => v
                        .ty()
                        .unwrap_or(if matches!(v, Val::Imm(Imm::Float(_), _)) {
                            ScalarType::F64
                        } else {
                            ScalarType::I32
                        }),
                };
                let v = self.coerce(v, t, span)?;
                let val = if !mutable && matches!(v, Val::Imm(..)) {
                    v
                } else {
                    let r = self.fresh(t);
                    self.mov_into(&r, &v, t);
                    Val::Reg(r, t)
                };
                self.bind(&name.name, Binding::Scalar { val, persp });
            }
            Some(Value::Arr(vals, et)) => {
                let t = match declared {
                    Some((t, _)) => t,
                    None => et,
                };
                let mut regs = Vec::with_capacity(vals.len());
                for v in vals {
                    let v = self.coerce(v, t, span)?;
                    let r = self.fresh(t);
                    self.mov_into(&r, &v, t);
                    regs.push(r);
                }
                self.bind(
                    &name.name,
                    Binding::Array {
                        regs,
                        elem: t,
                        persp,
                    },
                );
            }
            Some(Value::Mem(view)) => self.bind(&name.name, Binding::Mem { view, persp }),
            Some(Value::Unit) => {
                return Err(err("EMIT-TYPE", span, "this expression has no value"))
            }
        }
        Ok(())
    }

    fn assign(&mut self, place: &Expr, op: Option<BinOp>, value: &Expr) -> R<()> {
        match &place.kind {
            ExprKind::Var(id) => match self.lookup(id)? {
                Binding::Scalar {
                    val: Val::Reg(r, t),
                    persp,
                } => {
                    let v = self.with_target(persp, |s| s.scalar(value))?;
                    let v = match op {
                        Some(op) => self.binop(op, Val::Reg(r.clone(), t), v, place.span)?,
                        None => v,
                    };
                    let v = self.coerce(v, t, value.span)?;
                    self.mov_into(&r, &v, t);
                    Ok(())
                }
                Binding::Array { regs, elem, persp } if op.is_none() => {
                    match self.with_target(persp, |s| s.expr(value))? {
                        Value::Arr(vals, _) if vals.len() == regs.len() => {
                            for (r, v) in regs.iter().zip(vals) {
                                let v = self.coerce(v, elem, value.span)?;
                                self.mov_into(r, &v, elem);
                            }
                            Ok(())
                        }
                        _ => Err(err(
                            "EMIT-TYPE",
                            value.span,
                            format!("expected an array of {} elements", regs.len()),
                        )),
                    }
                }
                _ => Err(err(
                    "EMIT-ASSIGN",
                    place.span,
                    format!("cannot assign to `{}`", id.name),
                )
                .help("declare it with `let mut`")),
            },
            ExprKind::Index { base, indices } => {
                let id = match &base.kind {
                    ExprKind::Var(id) => id,
                    _ => {
                        return Err(err(
                            "EMIT-ASSIGN",
                            place.span,
                            "only `name[i]` can be assigned",
                        ))
                    }
                };
                match self.lookup(id)? {
                    Binding::Array { regs, elem, persp } => {
                        let i = self.reg_index(id, &regs, indices, place.span)?;
                        let v = self.with_target(persp, |s| s.scalar(value))?;
                        let v = match op {
                            Some(op) => {
                                self.binop(op, Val::Reg(regs[i].clone(), elem), v, place.span)?
                            }
                            None => v,
                        };
                        let v = self.coerce(v, elem, value.span)?;
                        self.mov_into(&regs[i], &v, elem);
                        Ok(())
                    }
                    Binding::Mem { view, persp } => {
                        let idx = self.scalars(indices)?;
                        let addr = self.address(&view, idx, place.span)?;
                        let v = self.with_target(persp, |s| s.scalar(value))?;
                        let v = match op {
                            Some(op) => {
                                let cur = self.load(&view, &addr, None);
                                self.binop(op, cur, v, place.span)?
                            }
                            None => v,
                        };
                        let v = self.coerce(v, view.elem, value.span)?;
                        self.store(&view, &addr, &[v]);
                        Ok(())
                    }
                    _ => Err(err(
                        "EMIT-ASSIGN",
                        place.span,
                        format!("`{}` cannot be indexed", id.name),
                    )),
                }
            }
            _ => Err(err(
                "EMIT-ASSIGN",
                place.span,
                "this place cannot be assigned",
            )),
        }
    }

    fn for_stmt(
        &mut self,
        var: &Ident,
        start: &Expr,
        end: &Expr,
        step: Option<&Expr>,
        body: &Block,
        span: Span,
    ) -> R<()> {
        let consts = (
            self.const_i64(start),
            self.const_i64(end),
            step.map(|s| self.const_i64(s)).transpose(),
        );
        // The increment of a run-time loop with constant bounds would wrap past the type's maximum (e.g.
        // `(0..u32::MAX).step_by(16)`): then the loop exits before adding instead of after.
        let mut guard_wrap = false;
        if let (Ok(a), Ok(b), Ok(st)) = consts {
            // Trip counts in i128: bounds and steps anywhere in i64 (and u32/u64 types) cannot overflow.
            let (a, b, st) = (a as i128, b as i128, st.unwrap_or(1) as i128);
            if st <= 0 {
                return Err(err("EMIT-LOOP", span, "`step_by` must be positive"));
            }
            let trips = if b > a { (b - a + st - 1) / st } else { 0 };
            let max = match self.loop_ty(start, end) {
                Some(ScalarType::U32) | None => u32::MAX as i128,
                Some(ScalarType::I32) => i32::MAX as i128,
                Some(ScalarType::U64) => u64::MAX as i128,
                _ => i64::MAX as i128,
            };
            guard_wrap = trips > 0 && a + (trips - 1) * st + st > max;
            let indexes = indexes_reg_array(body, &var.name, &self.array_names(body));
            if trips <= SMALL_TRIP || (indexes && trips <= MAX_UNROLL) {
                // Unrolled: the variable is a constant in each copy (register arrays stay in registers).
                let ty = self.loop_ty(start, end);
                let end_l = self.label();
                let mut i = a;
                while i < b {
                    let cont = self.label();
                    self.env.push(Scope::new());
                    self.bind(
                        &var.name,
                        Binding::Scalar {
                            val: Val::Imm(Imm::Int(i), ty),
                            persp: Perspective::grid(1),
                        },
                    );
                    self.loops.push(LoopLabels {
                        cont: cont.clone(),
                        brk: end_l.clone(),
                    });
                    let r = self.block(body);
                    self.loops.pop();
                    self.env.pop();
                    r?;
                    self.put_label(&cont);
                    i += st;
                }
                self.put_label(&end_l);
                return Ok(());
            }
        }
        // A run-time loop.
        let uni = self.uniform(start)
            && self.uniform(end)
            && step.map(|s| self.uniform(s)).unwrap_or(true);
        let s0 = self.scalar(start)?;
        let e0 = self.scalar(end)?;
        let t = s0.ty().or(e0.ty()).unwrap_or(ScalarType::U32);
        let s0 = self.coerce(s0, t, start.span)?;
        let e0 = self.coerce(e0, t, end.span)?;
        let e_reg = match e0 {
            Val::Imm(..) => e0,
            v => {
                let r = self.fresh(t);
                self.mov_into(&r, &v, t);
                Val::Reg(r, t)
            }
        };
        let st = match step {
            Some(s) => {
                let v = self.scalar(s)?;
                // `step_by` takes its own integer type (usize in Rust): convert it to the loop's.
                let v = match v.ty() {
                    Some(vt) if vt != t => self.cast(v, t, s.span)?,
                    _ => self.coerce(v, t, s.span)?,
                };
                match v {
                    Val::Imm(..) => v,
                    v => {
                        let r = self.fresh(t);
                        self.mov_into(&r, &v, t);
                        Val::Reg(r, t)
                    }
                }
            }
            None => Val::Imm(Imm::Int(1), Some(t)),
        };
        let i = self.fresh(t);
        self.mov_into(&i, &s0, t);
        let (head, cont, end_l) = (self.label(), self.label(), self.label());
        self.put_label(&head);
        let p = self.fresh(ScalarType::Bool);
        let eo = self.op(&e_reg, t);
        self.line(format!("setp.ge.{} {p}, {i}, {eo};", ptx_ty(t)));
        let bra = if uni { "bra.uni" } else { "bra" };
        self.line(format!("@{p} {bra} {end_l};"));
        self.env.push(Scope::new());
        // The body sees an immutable copy, so closures capturing it keep this iteration's value.
        let iv = self.fresh(t);
        self.line(format!("mov.{} {iv}, {i};", bits_ty(t)));
        let persp = if uni {
            Perspective::grid(1)
        } else {
            self.ctx.persp
        };
        self.bind(
            &var.name,
            Binding::Scalar {
                val: Val::Reg(iv, t),
                persp,
            },
        );
        self.loops.push(LoopLabels {
            cont: cont.clone(),
            brk: end_l.clone(),
        });
        let r = self.block(body);
        self.loops.pop();
        self.env.pop();
        r?;
        self.put_label(&cont);
        let so = self.op(&st, t);
        if guard_wrap {
            // i < end here: leave when end - i <= step, before i + step can wrap.
            let rem = self.fresh(t);
            let q = self.fresh(ScalarType::Bool);
            self.line(format!("sub.{} {rem}, {eo}, {i};", ptx_ty(t)));
            let ut = if t.size() == 8 { "u64" } else { "u32" };
            self.line(format!("setp.le.{ut} {q}, {rem}, {so};"));
            self.line(format!("@{q} {bra} {end_l};"));
        }
        self.line(format!("add.{} {i}, {i}, {so};", ptx_ty(t)));
        self.line(format!("bra.uni {head};"));
        self.put_label(&end_l);
        Ok(())
    }

    fn loop_ty(&self, start: &Expr, end: &Expr) -> Option<ScalarType> {
        let lit_ty = |e: &Expr| match &e.kind {
            ExprKind::Lit(Lit::Int(_, t)) => *t,
            ExprKind::Var(id) => match self.env.iter().rev().find_map(|s| s.get(&id.name)) {
                Some(Binding::Scalar { val, .. }) => val.ty(),
                _ => None,
            },
            ExprKind::Cast { ty, .. } => Some(*ty),
            _ => None,
        };
        lit_ty(start).or_else(|| lit_ty(end))
    }

    /// Names of register arrays visible now or declared in `body`.
    fn array_names(&self, body: &Block) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for s in &self.env {
            for (k, b) in s {
                if matches!(b, Binding::Array { .. }) {
                    v.push(k.clone());
                }
            }
        }
        collect_array_lets(body, &mut v);
        v
    }

    /// S-SPLIT-LEFT/RIGHT: each arm runs on the threads (blocks) whose rank lies in its range.
    fn split(&mut self, level: Level, arms: &[SplitArm], span: Span) -> R<()> {
        let mut off: u32 = 0;
        for arm in arms {
            let saved = self.ctx.clone();
            let skip = self.label();
            let (range_start, uni) = match level {
                Level::Thread => {
                    let rank = self.rank();
                    let rel = self.u32_bin("sub", &rank, &Val::imm_u32(off));
                    self.ctx = Ctx {
                        persp: Perspective::thread(arm.size),
                        blk: Val::imm_u32(0),
                        thr: rel.clone(),
                        units: ring_sites::split_arm(&saved.units, off, arm.size),
                    };
                    (rel, off.is_multiple_of(32) && arm.size.is_multiple_of(32))
                }
                Level::Block => {
                    if saved.persp.level == Level::Thread {
                        return Err(err(
                            "T-SPLIT",
                            span,
                            "a block split needs block- or grid-level code",
                        ));
                    }
                    let b = saved.blk.clone();
                    let rel = self.u32_bin("sub", &b, &Val::imm_u32(off));
                    self.ctx = Ctx {
                        persp: Perspective::block(arm.size),
                        blk: rel.clone(),
                        thr: saved.thr.clone(),
                        units: saved.units.clone(),
                    };
                    (rel, true)
                }
                Level::Grid => return Err(err("T-SPLIT", span, "a grid cannot be split")),
            };
            // rel = rank - off (wrapping): one unsigned compare tests off <= rank < off + size.
            match range_start.as_int() {
                Some(x) if (x as u32) < arm.size => {}
                Some(_) => {
                    // The arm never runs here (constant rank outside it).
                    self.ctx = saved;
                    off += arm.size;
                    continue;
                }
                None => {
                    let p = self.fresh(ScalarType::Bool);
                    let r = self.op(&range_start, ScalarType::U32);
                    self.line(format!("setp.ge.u32 {p}, {r}, {};", arm.size));
                    let bra = if uni { "bra.uni" } else { "bra" };
                    self.line(format!("@{p} {bra} {skip};"));
                }
            }
            let r = self.block(&arm.body);
            // wgmmas an arm leaves in flight (a drain keeps its group in flight) retire in the arm: the
            // other arms' threads must not run the warpgroup-aligned wait.
            self.wgmma_retire();
            self.ctx = saved;
            r?;
            self.put_label(&skip);
            off = off
                .checked_add(arm.size)
                .ok_or_else(|| err("T-SPLIT", arm.size_span, "split sizes overflow"))?;
        }
        Ok(())
    }

    fn barrier(&mut self, b: Barrier, span: Span) -> R<()> {
        if self.proxy_fences && !(b.at.level == Level::Thread && b.at.n == 1) {
            // Generic-proxy writes to shared memory become visible to wgmma (async proxy) only after a
            // proxy fence by the writers, before the barrier that publishes them (HOPPER.md §1.6, §5.6).
            self.line("fence.proxy.async.shared::cta;".to_string());
        }
        if b.wait_async {
            // Block-wide waits also cover bulk copies (their mbarriers count every thread of the block).
            let block_wide = match b.at.level {
                Level::Block => b.at.n == 1,
                Level::Thread => self.t.as_int() == Some(b.at.n as i128),
                Level::Grid => false,
            };
            if block_wide {
                self.line(ASYNC_WAIT_MARK.to_string());
            } else {
                self.line("cp.async.wait_all;".to_string());
            }
        }
        let p = b.at;
        match p.level {
            Level::Grid => Ok(()),
            Level::Block if p.n > 1 => Ok(()),
            Level::Block => {
                self.line("bar.sync 0;".to_string());
                Ok(())
            }
            Level::Thread => {
                let n = p.n;
                if n == 1 {
                    return Ok(());
                }
                if self.t.as_int() == Some(n as i128) {
                    self.line("bar.sync 0;".to_string());
                } else if n == 32 {
                    self.line("bar.warp.sync -1;".to_string());
                } else if n.is_multiple_of(32) {
                    // Named barrier per unit: id = first + tid / n, with ids `first..first + units`
                    // reserved for this group size (barrier 0 is the whole block's). Groups of different
                    // sizes get disjoint ids, so units of different sizes in different split arms never
                    // count toward one barrier.
                    let max_t = self.t.as_int().map(|t| t as u32).unwrap_or(1024);
                    let units = max_t.div_ceil(n);
                    let first = match self.named_bars.iter().find(|(m, _)| *m == n) {
                        Some((_, f)) => *f,
                        None => {
                            let f = self.next_bar;
                            if f + units - 1 > 15 {
                                return Err(err(
                                    "SYNC-NAMED",
                                    span,
                                    format!(
                                        "synchronizing thread[{n}] units needs {units} named barriers; the hardware has 15 \
                                         besides barrier 0 and {} are taken by other group sizes",
                                        f - 1
                                    ),
                                )
                                .help("fix the block size with `threads = N` in the kernel attribute, or use a larger perspective"));
                            }
                            self.named_bars.push((n, f));
                            self.next_bar = f + units;
                            f
                        }
                    };
                    let tid = self.tid.clone();
                    let q = self.u32_bin("div", &tid, &Val::imm_u32(n));
                    let id = self.u32_bin("add", &q, &Val::imm_u32(first));
                    let ido = self.op(&id, ScalarType::U32);
                    self.line(format!("bar.sync {ido}, {n};"));
                } else if n < 32 && 32 % n == 0 {
                    // Lanes of this thread's unit: ((1 << n) - 1) << (lane / n · n).
                    let tid = self.tid.clone();
                    let lane = self.u32_bin("rem", &tid, &Val::imm_u32(32));
                    let q = self.u32_bin("div", &lane, &Val::imm_u32(n));
                    let sh = self.u32_bin("mul", &q, &Val::imm_u32(n));
                    let m = self.fresh(ScalarType::U32);
                    let sho = self.op(&sh, ScalarType::U32);
                    self.line(format!("shl.b32 {m}, {}, {sho};", (1u64 << n) - 1));
                    self.line(format!("bar.warp.sync {m};"));
                } else {
                    return Err(err(
                        "SYNC-NAMED",
                        span,
                        format!("no barrier synchronizes thread[{n}]: below 32 the size must divide 32, above it be a multiple of 32"),
                    ));
                }
                Ok(())
            }
        }
    }

    // ----- uniformity (for bra.uni)

    /// The value of `e` is the same for all threads of a warp: it reads only constants and variables of a
    /// perspective ≥ thread[32] (or block/grid level; warps never span blocks).
    fn uniform(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Lit(_) => true,
            ExprKind::Var(id) => match self.env.iter().rev().find_map(|s| s.get(&id.name)) {
                Some(Binding::Scalar {
                    val: Val::Imm(..), ..
                }) => true,
                Some(Binding::Scalar { persp, .. }) => warp_uniform_persp(*persp),
                _ => false,
            },
            ExprKind::Index { base, indices } => match &base.kind {
                ExprKind::Var(id) => match self.env.iter().rev().find_map(|s| s.get(&id.name)) {
                    Some(Binding::Array { persp, .. }) => {
                        warp_uniform_persp(*persp) && indices.iter().all(|i| self.uniform(i))
                    }
                    _ => false,
                },
                _ => false,
            },
            ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } => self.uniform(expr),
            ExprKind::Binary { lhs, rhs, .. } => self.uniform(lhs) && self.uniform(rhs),
            ExprKind::Call { path, args, .. } => {
                let n = path.last().map(|p| p.name.as_str()).unwrap_or("");
                matches!(n, "vote_all" | "vote_any" | "ballot") && args.iter().all(|_| true)
            }
            ExprKind::MethodCall { recv, args, .. } => {
                self.uniform(recv) && args.iter().all(|a| self.uniform(a))
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => self.uniform(cond) && self.uniform(then_value) && self.uniform(else_value),
            _ => false,
        }
    }

    // ----- expressions

    fn scalar(&mut self, e: &Expr) -> R<Val> {
        match self.expr(e)? {
            Value::S(v) => Ok(v),
            _ => Err(err("EMIT-TYPE", e.span, "expected a scalar value here")),
        }
    }

    fn scalars(&mut self, es: &[Expr]) -> R<Vec<Val>> {
        es.iter().map(|e| self.scalar(e)).collect()
    }

    fn expr(&mut self, e: &Expr) -> R<Value> {
        match &e.kind {
            ExprKind::Lit(l) => Ok(Value::S(match l {
                Lit::Int(v, t) => {
                    let v = i128::try_from(*v)
                        .map_err(|_| err("EMIT-LIT", e.span, "integer literal too large"))?;
                    match t {
                        Some(t) if t.is_float() => Val::Imm(Imm::Float(v as f64), Some(*t)),
                        _ => Val::Imm(Imm::Int(v), *t),
                    }
                }
                Lit::Float(x, t) => Val::Imm(Imm::Float(*x), *t),
                Lit::Bool(b) => Val::Imm(Imm::Bool(*b), Some(ScalarType::Bool)),
            })),
            ExprKind::Var(id) => Ok(match self.lookup(id)? {
                Binding::Scalar { val, .. } => Value::S(val),
                Binding::Array { regs, elem, .. } => {
                    Value::Arr(regs.into_iter().map(|r| Val::Reg(r, elem)).collect(), elem)
                }
                Binding::Mem { view, .. } => Value::Mem(view),
                Binding::TensorMap { .. } => {
                    return Err(err(
                        "TYPE",
                        id.span,
                        format!(
                            "the tensor map `{}` is only an argument of `tma_load`",
                            id.name
                        ),
                    ))
                }
                Binding::Ring { .. } => {
                    return Err(err(
                        "RING",
                        id.span,
                        format!("the ring `{}` is only used by `fill` and `drain`", id.name),
                    ))
                }
                Binding::Hidden => return Err(err("T-PARTITION", id.span, "hidden name")),
            }),
            ExprKind::Index { base, indices } => {
                let id = match &base.kind {
                    ExprKind::Var(id) => id,
                    _ => return Err(err("EMIT-INDEX", e.span, "only `name[i]` can be indexed")),
                };
                match self.lookup(id)? {
                    Binding::Array { regs, elem, .. } => {
                        let i = self.reg_index(id, &regs, indices, e.span)?;
                        Ok(Value::S(Val::Reg(regs[i].clone(), elem)))
                    }
                    Binding::Mem { view, .. } => {
                        let idx = self.scalars(indices)?;
                        let addr = self.address(&view, idx, e.span)?;
                        Ok(Value::S(self.load(&view, &addr, None)))
                    }
                    _ => Err(err(
                        "EMIT-INDEX",
                        e.span,
                        format!("`{}` cannot be indexed", id.name),
                    )),
                }
            }
            ExprKind::Unary { op, expr } => {
                let v = self.scalar(expr)?;
                self.unop(*op, v, e.span).map(Value::S)
            }
            ExprKind::Binary {
                op: op @ (BinOp::And | BinOp::Or),
                lhs,
                rhs,
            } if !pure(rhs) => {
                // Short-circuit: the right side may read memory that the left side guards.
                let a = self.scalar(lhs)?;
                let a = self.coerce(a, ScalarType::Bool, lhs.span)?;
                let r = self.fresh(ScalarType::Bool);
                self.mov_into(&r, &a, ScalarType::Bool);
                let done = self.label();
                let neg = if *op == BinOp::And { "!" } else { "" };
                self.line(format!("@{neg}{r} bra {done};"));
                let b = self.scalar(rhs)?;
                let b = self.coerce(b, ScalarType::Bool, rhs.span)?;
                self.mov_into(&r, &b, ScalarType::Bool);
                self.put_label(&done);
                Ok(Value::S(Val::Reg(r, ScalarType::Bool)))
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.scalar(lhs)?;
                let b = self.scalar(rhs)?;
                self.binop(*op, a, b, e.span).map(Value::S)
            }
            ExprKind::Cast { expr, ty } => {
                let v = self.scalar(expr)?;
                self.cast(v, *ty, e.span).map(Value::S)
            }
            ExprKind::Call {
                path,
                generics,
                args,
            } => self.call(path, generics, args, e.span),
            ExprKind::MethodCall { recv, method, args } => {
                self.method(recv, method, args, e.span).map(Value::S)
            }
            ExprKind::Ref { expr, .. } => self.expr(expr),
            ExprKind::ArrayLit(items) => {
                let vals = self.scalars(items)?;
                let t = vals.iter().find_map(|v| v.ty()).unwrap_or(ScalarType::I32);
                let vals = vals
                    .into_iter()
                    .map(|v| self.coerce(v, t, e.span))
                    .collect::<R<Vec<_>>>()?;
                Ok(Value::Arr(vals, t))
            }
            ExprKind::ArrayRepeat { value, len } => {
                let n = self.const_u32(len)?;
                if n > 4096 {
                    return Err(err(
                        "REG-ARRAY",
                        e.span,
                        format!("a register array of {n} elements is too large"),
                    ));
                }
                let v = self.scalar(value)?;
                let t = v
                    .ty()
                    .unwrap_or(if matches!(v, Val::Imm(Imm::Float(_), _)) {
                        ScalarType::F32
                    } else {
                        ScalarType::I32
                    });
                let v = self.coerce(v, t, e.span)?;
                Ok(Value::Arr(vec![v; n as usize], t))
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                let c = self.scalar(cond)?;
                let c = self.coerce(c, ScalarType::Bool, cond.span)?;
                if let Val::Imm(Imm::Bool(b), _) = c {
                    return self.expr(if b { then_value } else { else_value });
                }
                let p = self.reg(&c, ScalarType::Bool);
                if pure(then_value) && pure(else_value) {
                    let a = self.scalar(then_value)?;
                    let b = self.scalar(else_value)?;
                    let t = a.ty().or(b.ty()).unwrap_or(ScalarType::I32);
                    let a = self.coerce(a, t, then_value.span)?;
                    let b = self.coerce(b, t, else_value.span)?;
                    let r = self.fresh(t);
                    if t == ScalarType::Bool {
                        let (x, y) = (self.reg(&a, t), self.reg(&b, t));
                        // r = (p & x) | (!p & y)
                        let tmp = self.fresh(t);
                        self.line(format!("and.pred {r}, {p}, {x};"));
                        self.line(format!("and.pred {tmp}, !{p}, {y};"));
                        self.line(format!("or.pred {r}, {r}, {tmp};"));
                    } else {
                        let (x, y) = (self.op(&a, t), self.op(&b, t));
                        let st = if t.size() == 2 { "b16" } else { ptx_ty(t) };
                        self.line(format!("selp.{st} {r}, {x}, {y}, {p};"));
                    }
                    Ok(Value::S(Val::Reg(r, t)))
                } else {
                    // Only the chosen side runs (it may read memory).
                    let (else_l, end) = (self.label(), self.label());
                    self.line(format!("@!{p} bra {else_l};"));
                    let a = self.scalar(then_value)?;
                    let t = a.ty().unwrap_or(ScalarType::I32);
                    let r = self.fresh(t);
                    let a = self.coerce(a, t, then_value.span)?;
                    self.mov_into(&r, &a, t);
                    self.line(format!("bra.uni {end};"));
                    self.put_label(&else_l);
                    let b = self.scalar(else_value)?;
                    let b = self.coerce(b, t, else_value.span)?;
                    self.mov_into(&r, &b, t);
                    self.put_label(&end);
                    Ok(Value::S(Val::Reg(r, t)))
                }
            }
            ExprKind::Asm { template, operands } => {
                self.asm(template, operands, e.span).map(|_| Value::Unit)
            }
        }
    }

    /// The register of `a[i]` for a register array: `i` must be a constant after unrolling.
    fn reg_index(&mut self, id: &Ident, regs: &[String], indices: &[Expr], span: Span) -> R<usize> {
        if indices.len() != 1 {
            return Err(err("EMIT-INDEX", span, "a register array takes one index"));
        }
        let v = self.scalar(&indices[0])?;
        match v.as_int() {
            Some(i) if i >= 0 && (i as usize) < regs.len() => Ok(i as usize),
            Some(i) => Err(err("REG-INDEX", indices[0].span, format!("index {i} is out of bounds for `{}` of length {}", id.name, regs.len()))),
            None => Err(err(
                "REG-INDEX",
                indices[0].span,
                format!("thread-local array `{}` is indexed with a run-time value; it lives in registers, so every index must be a constant after loop unrolling", id.name),
            )
            .help("index with constants or with the variable of a `for` loop with constant bounds (such loops are unrolled, up to 4096 iterations when they index a register array), or keep the data in shared memory")),
        }
    }

    fn unop(&mut self, op: UnOp, v: Val, span: Span) -> R<Val> {
        if let Val::Imm(i, t) = &v {
            return Ok(match (op, i) {
                (UnOp::Neg, Imm::Int(x)) => {
                    Val::Imm(Imm::Int(t.map(|t| wrap_int(-x, t)).unwrap_or(-x)), *t)
                }
                (UnOp::Neg, Imm::Float(x)) => Val::Imm(Imm::Float(-x), *t),
                (UnOp::Not, Imm::Bool(b)) => Val::Imm(Imm::Bool(!b), *t),
                (UnOp::Not, Imm::Int(x)) => {
                    Val::Imm(Imm::Int(t.map(|t| wrap_int(!x, t)).unwrap_or(!x)), *t)
                }
                _ => return Err(err("EMIT-TYPE", span, "invalid operand for this operator")),
            });
        }
        let t = v.ty().unwrap_or(ScalarType::I32);
        let r = self.fresh(t);
        let o = self.op(&v, t);
        match (op, t) {
            (UnOp::Not, ScalarType::Bool) => self.line(format!("not.pred {r}, {o};")),
            (UnOp::Not, t) if t.is_int() => self.line(format!("not.{} {r}, {o};", bits_ty(t))),
            (UnOp::Neg, ScalarType::U32 | ScalarType::I32) => {
                self.line(format!("neg.s32 {r}, {o};"))
            }
            (UnOp::Neg, ScalarType::U64 | ScalarType::I64) => {
                self.line(format!("neg.s64 {r}, {o};"))
            }
            (UnOp::Neg, ScalarType::F32 | ScalarType::F64) => {
                self.line(format!("neg.{} {r}, {o};", ptx_ty(t)))
            }
            _ => {
                return Err(
                    err("EMIT-TYPE", span, format!("operator not defined on {t}"))
                        .help("convert f16/bf16 to f32 first"),
                )
            }
        }
        Ok(Val::Reg(r, t))
    }

    fn binop(&mut self, op: BinOp, a: Val, b: Val, span: Span) -> R<Val> {
        use BinOp::*;
        let t = match (a.ty(), b.ty()) {
            (Some(x), _) if matches!(op, Shl | Shr) => x,
            (Some(x), _) => x,
            (None, Some(y)) => y,
            (None, None) => {
                if matches!(
                    (&a, &b),
                    (Val::Imm(Imm::Float(_), _), _) | (_, Val::Imm(Imm::Float(_), _))
                ) {
                    // Two untyped float constants: fold in f64 and stay untyped (a literal), so that the
                    // result adopts the type of what it meets, as the checker types it.
                    if let (Val::Imm(x, _), Val::Imm(y, _)) = (&a, &b) {
                        if let Some(Val::Imm(i @ Imm::Float(_), _)) =
                            fold(op, *x, *y, ScalarType::F64)
                        {
                            return Ok(Val::Imm(i, None));
                        }
                    }
                    ScalarType::F64
                } else {
                    return fold_untyped(op, &a, &b, span);
                }
            }
        };
        let a = self.coerce(a, t, span)?;
        let b = if matches!(op, Shl | Shr) {
            let b = match b.ty() {
                None => b,
                Some(ScalarType::U32 | ScalarType::I32) => b,
                Some(_) => self.cast(b, ScalarType::U32, span)?,
            };
            self.coerce(b, ScalarType::U32, span)?
        } else {
            self.coerce(b, t, span)?
        };
        if let (Val::Imm(x, _), Val::Imm(y, _)) = (&a, &b) {
            if let Some(v) = fold(op, *x, *y, t) {
                return Ok(v);
            }
        }
        if t.is_int() {
            // Identities that index arithmetic meets constantly (x + 0, 1 * x, ...).
            let (ia, ib) = (a.as_int(), b.as_int());
            match (op, ia, ib) {
                (Add | Sub | BitOr | BitXor | Shl | Shr, _, Some(0)) | (Mul | Div, _, Some(1)) => {
                    return Ok(a)
                }
                (Add | BitOr | BitXor, Some(0), _) | (Mul, Some(1), _) => return Ok(b),
                (Mul | BitAnd, Some(0), _) | (Mul | BitAnd, _, Some(0)) | (Rem, _, Some(1)) => {
                    return Ok(Val::Imm(Imm::Int(0), Some(t)))
                }
                _ => {}
            }
        }
        if t == ScalarType::F16 || t == ScalarType::BF16 {
            return Err(err(
                "EMIT-TYPE",
                span,
                format!("{t} is a storage type: no arithmetic on it"),
            )
            .help("convert with `as f32` first"));
        }
        let cmp = |op: BinOp| -> Option<&'static str> {
            Some(match op {
                Eq => "eq",
                Ne => {
                    if t.is_float() {
                        "neu"
                    } else {
                        "ne"
                    }
                }
                Lt => {
                    if t.is_float() || t.is_signed() {
                        "lt"
                    } else {
                        "lo"
                    }
                }
                Le => {
                    if t.is_float() || t.is_signed() {
                        "le"
                    } else {
                        "ls"
                    }
                }
                Gt => {
                    if t.is_float() || t.is_signed() {
                        "gt"
                    } else {
                        "hi"
                    }
                }
                Ge => {
                    if t.is_float() || t.is_signed() {
                        "ge"
                    } else {
                        "hs"
                    }
                }
                _ => return None,
            })
        };
        if let Some(c) = cmp(op) {
            let p = self.fresh(ScalarType::Bool);
            if t == ScalarType::Bool {
                let (x, y) = (self.reg(&a, t), self.reg(&b, t));
                match op {
                    Eq => self.line(format!("xor.pred {p}, {x}, {y};\n\tnot.pred {p}, {p};")),
                    Ne => self.line(format!("xor.pred {p}, {x}, {y};")),
                    _ => {
                        return Err(err(
                            "EMIT-TYPE",
                            span,
                            "bool values only compare with == and !=",
                        ))
                    }
                }
            } else {
                let (x, y) = (self.reg(&a, t), self.op(&b, t));
                let ct = if t.is_int() {
                    bits_cmp_ty(t, c)
                } else {
                    ptx_ty(t)
                };
                self.line(format!("setp.{c}.{ct} {p}, {x}, {y};"));
            }
            return Ok(Val::Reg(p, ScalarType::Bool));
        }
        let r = self.fresh(t);
        let x = self.reg(&a, t);
        let y = self.op(&b, t);
        let pt = ptx_ty(t);
        let ins = match (op, t) {
            (And | BitAnd, ScalarType::Bool) => "and.pred".to_string(),
            (Or | BitOr, ScalarType::Bool) => "or.pred".to_string(),
            (BitXor, ScalarType::Bool) => "xor.pred".to_string(),
            (_, ScalarType::Bool) => {
                return Err(err("EMIT-TYPE", span, "operator not defined on bool"))
            }
            (And | Or, _) => return Err(err("EMIT-TYPE", span, "`&&`/`||` need bool operands")),
            // `.rn` on float add/sub/mul: without a rounding modifier ptxas may contract a mul and an add
            // into an fma (PTX ISA, add/mul "Semantics"), which rounds once where Rust rounds twice: results
            // would then differ between the GPU, the emulator and a CPU reference. Write `x.fma(y, z)` to fuse.
            (Add, _) if t.is_float() => format!("add.rn.{pt}"),
            (Sub, _) if t.is_float() => format!("sub.rn.{pt}"),
            (Mul, _) if t.is_float() => format!("mul.rn.{pt}"),
            (Add, _) => format!("add.{pt}"),
            (Sub, _) => format!("sub.{pt}"),
            (Mul, _) => format!("mul.lo.{pt}"),
            (Div, _) if t.is_float() => format!("div.rn.{pt}"),
            (Div, _) => format!("div.{pt}"),
            (Rem, _) if t.is_float() => {
                // a % b = a - trunc(a / b) * b, as Rust defines it.
                let q = self.fresh(t);
                self.line(format!("div.rn.{pt} {q}, {x}, {y};"));
                self.line(format!("cvt.rzi.{pt}.{pt} {q}, {q};"));
                self.line(format!("mul.rn.{pt} {q}, {q}, {y};"));
                self.line(format!("sub.rn.{pt} {r}, {x}, {q};"));
                return Ok(Val::Reg(r, t));
            }
            (Rem, _) => format!("rem.{pt}"),
            (BitAnd, _) if t.is_int() => format!("and.{}", bits_ty(t)),
            (BitOr, _) if t.is_int() => format!("or.{}", bits_ty(t)),
            (BitXor, _) if t.is_int() => format!("xor.{}", bits_ty(t)),
            (Shl, _) if t.is_int() => format!("shl.{}", bits_ty(t)),
            (Shr, _) if t.is_int() => format!("shr.{pt}"),
            _ => {
                return Err(err(
                    "EMIT-TYPE",
                    span,
                    format!("operator not defined on {t}"),
                ))
            }
        };
        let y = if matches!(op, Shl | Shr) {
            self.op(&b, ScalarType::U32)
        } else {
            y
        };
        self.line(format!("{ins} {r}, {x}, {y};"));
        Ok(Val::Reg(r, t))
    }

    fn cast(&mut self, v: Val, to: ScalarType, span: Span) -> R<Val> {
        let from = match v.ty() {
            Some(f) => f,
            None => return self.coerce(v, to, span),
        };
        if from == to {
            return Ok(v);
        }
        if let Val::Imm(i, _) = &v {
            // Fold the conversion with Rust's `as` semantics.
            let folded = match (*i, to) {
                (Imm::Bool(b), t) if t.is_int() => Some(Val::Imm(Imm::Int(b as i128), Some(t))),
                (Imm::Bool(b), t) => Some(Val::Imm(Imm::Float(b as u8 as f64), Some(t))),
                (Imm::Int(x), t) if t.is_int() => Some(Val::Imm(Imm::Int(wrap_int(x, t)), Some(t))),
                (Imm::Int(x), t) if t.is_float() => Some(Val::Imm(
                    Imm::Float(if t == ScalarType::F32 {
                        x as f32 as f64
                    } else {
                        x as f64
                    }),
                    Some(t),
                )),
                (Imm::Float(x), ScalarType::U32) => {
                    Some(Val::Imm(Imm::Int(x as u32 as i128), Some(to)))
                }
                (Imm::Float(x), ScalarType::I32) => {
                    Some(Val::Imm(Imm::Int(x as i32 as i128), Some(to)))
                }
                (Imm::Float(x), ScalarType::U64) => {
                    Some(Val::Imm(Imm::Int(x as u64 as i128), Some(to)))
                }
                (Imm::Float(x), ScalarType::I64) => {
                    Some(Val::Imm(Imm::Int(x as i64 as i128), Some(to)))
                }
                (Imm::Float(x), ScalarType::F32) => {
                    Some(Val::Imm(Imm::Float(x as f32 as f64), Some(to)))
                }
                (Imm::Float(x), ScalarType::F64) => Some(Val::Imm(Imm::Float(x), Some(to))),
                _ => None,
            };
            if let Some(f) = folded {
                if !(from == ScalarType::F16 || from == ScalarType::BF16) {
                    return Ok(f);
                }
            }
        }
        if to == ScalarType::Bool {
            return Err(
                err("EMIT-TYPE", span, format!("cannot cast {from} to bool"))
                    .help("compare instead: `x != 0`"),
            );
        }
        let r = self.fresh(to);
        if from == ScalarType::Bool {
            let p = self.reg(&v, from);
            let (one, zero) = (imm_str(Imm::Int(1), to), imm_str(Imm::Int(0), to));
            if to.size() == 2 {
                let f = self.fresh(ScalarType::F32);
                self.line(format!("selp.f32 {f}, 0f3F800000, 0f00000000, {p};"));
                return self.cast(Val::Reg(f, ScalarType::F32), to, span);
            }
            self.line(format!("selp.{} {r}, {one}, {zero}, {p};", ptx_ty(to)));
            return Ok(Val::Reg(r, to));
        }
        let x = self.reg(&v, from);
        // f16/bf16 convert through f32 (bf16 → f32 is a 16-bit shift, exact, and needs no sm_90).
        if from == ScalarType::BF16 {
            let w = self.fresh(ScalarType::U32);
            self.line(format!("cvt.u32.u16 {w}, {x};"));
            self.line(format!("shl.b32 {w}, {w}, 16;"));
            let f = self.fresh(ScalarType::F32);
            self.line(format!("mov.b32 {f}, {w};"));
            return self.cast(Val::Reg(f, ScalarType::F32), to, span);
        }
        if from == ScalarType::F16 {
            let f = self.fresh(ScalarType::F32);
            self.line(format!("cvt.f32.f16 {f}, {x};"));
            return self.cast(Val::Reg(f, ScalarType::F32), to, span);
        }
        if to == ScalarType::F16 || to == ScalarType::BF16 {
            let f = if from == ScalarType::F32 {
                x
            } else {
                self.reg_of_cast(&v, ScalarType::F32, span)?
            };
            self.line(format!("cvt.rn.{}.f32 {r}, {f};", ptx_ty(to)));
            return Ok(Val::Reg(r, to));
        }
        let line = match (from.is_float(), to.is_float()) {
            (false, false) => {
                if from.size() == to.size() {
                    format!("mov.{} {r}, {x};", bits_ty(to))
                } else {
                    format!("cvt.{}.{} {r}, {x};", ptx_ty(to), ptx_ty(from))
                }
            }
            (false, true) => format!("cvt.rn.{}.{} {r}, {x};", ptx_ty(to), ptx_ty(from)),
            (true, false) => format!("cvt.rzi.{}.{} {r}, {x};", ptx_ty(to), ptx_ty(from)),
            (true, true) => {
                if to.size() > from.size() {
                    format!("cvt.{}.{} {r}, {x};", ptx_ty(to), ptx_ty(from))
                } else {
                    format!("cvt.rn.{}.{} {r}, {x};", ptx_ty(to), ptx_ty(from))
                }
            }
        };
        self.line(line);
        Ok(Val::Reg(r, to))
    }

    fn reg_of_cast(&mut self, v: &Val, to: ScalarType, span: Span) -> R<String> {
        let c = self.cast(v.clone(), to, span)?;
        Ok(self.reg(&c, to))
    }

    fn method(&mut self, recv: &Expr, method: &Ident, args: &[Expr], span: Span) -> R<Val> {
        let v = self.scalar(recv)?;
        let mut a = self.scalars(args)?;
        let t = v
            .ty()
            .or_else(|| a.iter().find_map(|x| x.ty()))
            .unwrap_or(ScalarType::F32);
        let v = self.coerce(v, t, recv.span)?;
        for x in a.iter_mut() {
            *x = self.coerce(x.clone(), t, span)?;
        }
        let m = method.name.as_str();
        let want = |n: usize| -> R<()> {
            if args.len() == n {
                Ok(())
            } else {
                Err(err(
                    "EMIT-CALL",
                    span,
                    format!("`{m}` takes {n} argument(s)"),
                ))
            }
        };
        let pt = ptx_ty(t);
        let r = self.fresh(t);
        let x = self.reg(&v, t);
        let f32_only = |s: &Self| -> R<()> {
            let _ = s;
            if t == ScalarType::F32 {
                Ok(())
            } else {
                Err(
                    err("EMIT-TYPE", span, format!("`{m}` is only available on f32"))
                        .help("convert with `as f32`"),
                )
            }
        };
        match m {
            "sqrt" => {
                want(0)?;
                if !t.is_float() || t.size() < 4 {
                    return Err(err("EMIT-TYPE", span, "`sqrt` needs f32 or f64"));
                }
                self.line(format!("sqrt.rn.{pt} {r}, {x};"));
            }
            "rsqrt" => {
                want(0)?;
                if !t.is_float() || t.size() < 4 {
                    return Err(err("EMIT-TYPE", span, "`rsqrt` needs f32 or f64"));
                }
                self.line(format!("rsqrt.approx.{pt} {r}, {x};"));
            }
            "exp2" | "log2" | "sin" | "cos" => {
                want(0)?;
                f32_only(self)?;
                let ins = match m {
                    "exp2" => "ex2.approx.f32",
                    "log2" => "lg2.approx.f32",
                    "sin" => "sin.approx.f32",
                    _ => "cos.approx.f32",
                };
                self.line(format!("{ins} {r}, {x};"));
            }
            "abs" => {
                want(0)?;
                match t {
                    ScalarType::U32 | ScalarType::U64 => return Ok(v),
                    ScalarType::I32 | ScalarType::I64 | ScalarType::F32 | ScalarType::F64 => {
                        self.line(format!("abs.{pt} {r}, {x};"))
                    }
                    _ => {
                        return Err(err(
                            "EMIT-TYPE",
                            span,
                            format!("`abs` is not defined on {t}"),
                        ))
                    }
                }
            }
            "min" | "max" => {
                want(1)?;
                let y = self.op(&a[0], t);
                self.line(format!("{m}.{pt} {r}, {x}, {y};"));
            }
            "fma" => {
                want(2)?;
                if !t.is_float() || t.size() < 4 {
                    return Err(err("EMIT-TYPE", span, "`fma` needs f32 or f64"));
                }
                let (y, z) = (self.op(&a[0], t), self.op(&a[1], t));
                self.line(format!("fma.rn.{pt} {r}, {x}, {y}, {z};"));
            }
            _ => {
                return Err(
                    err("EMIT-CALL", method.span, format!("unknown method `{m}`"))
                        .help("available: sqrt, rsqrt, exp2, log2, sin, cos, abs, min, max, fma"),
                )
            }
        }
        Ok(Val::Reg(r, t))
    }

    // ----- memory

    /// Applies the view's index closures (innermost partition first) and returns the address register.
    fn address(&mut self, view: &View, mut idx: Vec<Val>, span: Span) -> R<String> {
        for m in view.maps.iter().rev() {
            if m.params.len() != idx.len() {
                return Err(err(
                    "T-PARTITION",
                    span,
                    format!(
                        "this partition's index closure takes {} index(es), {} given",
                        m.params.len(),
                        idx.len()
                    ),
                )
                .help("write `y[(i, j)]` for a closure `|i, j| ..`"));
            }
            let mut scope = m.env.clone();
            for (p, v) in m.params.iter().zip(idx.drain(..)) {
                scope.insert(
                    p.clone(),
                    Binding::Scalar {
                        val: v,
                        persp: self.ctx.persp,
                    },
                );
            }
            let saved = std::mem::replace(&mut self.env, vec![scope]);
            let r = self.scalar(&m.body);
            self.env = saved;
            idx = vec![r?];
        }
        if idx.len() != 1 {
            return Err(err("EMIT-INDEX", span, "a pointer takes one index").help(
                "multi-index `y[(i, j)]` needs a partition closure with that many parameters",
            ));
        }
        let i = idx.pop().unwrap_or(Val::imm_u32(0));
        let size = view.elem.size() as i128;
        match view.space {
            Space::Global => {
                let base = self.reg(&view.base, ScalarType::U64);
                let r = self.fresh(ScalarType::U64);
                match (i.ty(), &i) {
                    (_, Val::Imm(Imm::Int(x), _)) => {
                        let off = *x * size;
                        if off == 0 {
                            return Ok(base);
                        }
                        self.line(format!("add.s64 {r}, {base}, {off};"));
                    }
                    (Some(t @ (ScalarType::U32 | ScalarType::I32)), Val::Reg(x, _)) => {
                        let w = self.fresh(ScalarType::U64);
                        self.line(format!("mul.wide.{} {w}, {x}, {size};", ptx_ty(t)));
                        self.line(format!("add.s64 {r}, {base}, {w};"));
                    }
                    (Some(ScalarType::U64 | ScalarType::I64), Val::Reg(x, _)) => {
                        let w = self.fresh(ScalarType::U64);
                        self.line(format!("mul.lo.s64 {w}, {x}, {size};"));
                        self.line(format!("add.s64 {r}, {base}, {w};"));
                    }
                    _ => return Err(err("EMIT-INDEX", span, "an index must be an integer")),
                }
                Ok(r)
            }
            Space::Shared => {
                let smem = self.smem_base();
                let i = match i.ty() {
                    Some(ScalarType::U64 | ScalarType::I64) => {
                        self.cast(i, ScalarType::U32, span)?
                    }
                    Some(t) if !t.is_int() => {
                        return Err(err("EMIT-INDEX", span, "an index must be an integer"))
                    }
                    _ => i,
                };
                let off = self.u32_bin("mul", &i, &Val::imm_u32(size as u32));
                let off = self.u32_bin("add", &view.base, &off);
                let r = self.fresh(ScalarType::U32);
                let o = self.op(&off, ScalarType::U32);
                self.line(format!("add.s32 {r}, {smem}, {o};"));
                if let Some(rank) = &view.peer {
                    // The same offset in block `rank` of the cluster (PTX ISA `mapa`).
                    let rr = self.op(rank, ScalarType::U32);
                    let m = self.fresh(ScalarType::U32);
                    self.line(format!("mapa.shared::cluster.u32 {m}, {r}, {rr};"));
                    return Ok(m);
                }
                Ok(r)
            }
        }
    }

    fn space_str(view: &View, read: bool) -> &'static str {
        match view.space {
            Space::Global if read && view.readonly => "global.nc",
            Space::Global => "global",
            Space::Shared if view.peer.is_some() => "shared::cluster",
            Space::Shared => "shared",
        }
    }

    /// Loads one element (`vec == None`) at `addr`.
    fn load(&mut self, view: &View, addr: &str, _vec: Option<u32>) -> Val {
        let t = view.elem;
        let sp = Self::space_str(view, true);
        if t == ScalarType::Bool {
            let w = self.fresh(ScalarType::U32);
            self.line(format!("ld.{sp}.u8 {w}, [{addr}];"));
            let p = self.fresh(ScalarType::Bool);
            self.line(format!("setp.ne.u32 {p}, {w}, 0;"));
            return Val::Reg(p, t);
        }
        let r = self.fresh(t);
        self.line(format!("ld.{sp}.{} {r}, [{addr}];", mem_ty(t)));
        Val::Reg(r, t)
    }

    fn store(&mut self, view: &View, addr: &str, vals: &[Val]) {
        let t = view.elem;
        let sp = Self::space_str(view, false);
        if vals.len() == 1 {
            if t == ScalarType::Bool {
                let p = self.reg(&vals[0], t);
                let w = self.fresh(ScalarType::U32);
                self.line(format!("selp.u32 {w}, 1, 0, {p};"));
                self.line(format!("st.{sp}.u8 [{addr}], {w};"));
                return;
            }
            let r = self.reg(&vals[0], t);
            self.line(format!("st.{sp}.{} [{addr}], {r};", mem_ty(t)));
        } else {
            let regs: Vec<String> = vals.iter().map(|v| self.reg(v, t)).collect();
            self.line(format!(
                "st.{sp}.v{}.{} [{addr}], {{{}}};",
                vals.len(),
                mem_ty(t),
                regs.join(", ")
            ));
        }
    }

    // ----- calls

    fn call(&mut self, path: &[Ident], generics: &[Expr], args: &[Expr], span: Span) -> R<Value> {
        let name = path.last().map(|p| p.name.clone()).unwrap_or_default();
        let n = args.len();
        let want = |k: usize| -> R<()> {
            if n == k {
                Ok(())
            } else {
                Err(err(
                    "EMIT-CALL",
                    span,
                    format!("`{name}` takes {k} argument(s), {n} given"),
                ))
            }
        };
        if let Some(r) = self.hopper_call(&name, args, span) {
            return r;
        }
        // Device functions shadow nothing: intrinsic names are reserved (docs/SYNTAX.md).
        match name.as_str() {
            "id" => {
                want(0)?;
                let target = self.id_target.unwrap_or(self.ctx.persp);
                Ok(Value::S(self.id_value(target)))
            }
            "sync_threads" => {
                want(0)?;
                self.line("bar.sync 0;".into());
                Ok(Value::Unit)
            }
            "sync_warp" => {
                want(0)?;
                self.line("bar.warp.sync -1;".into());
                Ok(Value::Unit)
            }
            "fence" => {
                want(0)?;
                self.line("membar.gl;".into());
                Ok(Value::Unit)
            }
            "block_dim" => {
                want(0)?;
                // An immediate with `threads = N`, else %ntid.x (read once in the prologue).
                Ok(Value::S(self.t.clone()))
            }
            "grid_dim" => {
                want(0)?;
                let r = self.fresh(ScalarType::U32);
                self.line(format!("mov.u32 {r}, %nctaid.x;"));
                Ok(Value::S(Val::Reg(r, ScalarType::U32)))
            }
            "shfl_down" | "shfl_up" | "shfl_xor" | "shfl_idx" => {
                want(2)?;
                let v = self.scalar(&args[0])?;
                let d = self.scalar(&args[1])?;
                let d = self.coerce(d, ScalarType::U32, args[1].span)?;
                let t = v.ty().unwrap_or(ScalarType::I32);
                let v = self.coerce(v, t, args[0].span)?;
                let (mode, c) = match name.as_str() {
                    "shfl_down" => ("down", "0x1f"),
                    "shfl_up" => ("up", "0"),
                    "shfl_xor" => ("bfly", "0x1f"),
                    _ => ("idx", "0x1f"),
                };
                let dop = self.op(&d, ScalarType::U32);
                let x = self.reg(&v, t);
                match t.size() {
                    4 => {
                        let r = self.fresh(t);
                        self.line(format!("shfl.sync.{mode}.b32 {r}, {x}, {dop}, {c}, -1;"));
                        Ok(Value::S(Val::Reg(r, t)))
                    }
                    8 => {
                        let (lo, hi, lo2, hi2) = (
                            self.fresh(ScalarType::U32),
                            self.fresh(ScalarType::U32),
                            self.fresh(ScalarType::U32),
                            self.fresh(ScalarType::U32),
                        );
                        self.line(format!("mov.b64 {{{lo}, {hi}}}, {x};"));
                        self.line(format!("shfl.sync.{mode}.b32 {lo2}, {lo}, {dop}, {c}, -1;"));
                        self.line(format!("shfl.sync.{mode}.b32 {hi2}, {hi}, {dop}, {c}, -1;"));
                        let r = self.fresh(t);
                        self.line(format!("mov.b64 {r}, {{{lo2}, {hi2}}};"));
                        Ok(Value::S(Val::Reg(r, t)))
                    }
                    _ => Err(
                        err("EMIT-TYPE", args[0].span, format!("cannot shuffle a {t}"))
                            .help("shuffle 32- or 64-bit values"),
                    ),
                }
            }
            "vote_all" | "vote_any" | "ballot" => {
                want(1)?;
                let p = self.scalar(&args[0])?;
                let p = self.coerce(p, ScalarType::Bool, args[0].span)?;
                let p = self.reg(&p, ScalarType::Bool);
                if name == "ballot" {
                    let r = self.fresh(ScalarType::U32);
                    self.line(format!("vote.sync.ballot.b32 {r}, {p}, -1;"));
                    Ok(Value::S(Val::Reg(r, ScalarType::U32)))
                } else {
                    let r = self.fresh(ScalarType::Bool);
                    let m = if name == "vote_all" { "all" } else { "any" };
                    self.line(format!("vote.sync.{m}.pred {r}, {p}, -1;"));
                    Ok(Value::S(Val::Reg(r, ScalarType::Bool)))
                }
            }
            "atomic_add" | "atomic_max" | "atomic_min" | "atomic_exch" | "atomic_cas" => {
                want(if name == "atomic_cas" { 4 } else { 3 })?;
                let view = self.mem_arg(&args[0])?;
                let i = self.scalar(&args[1])?;
                let addr = self.address(&view, vec![i], args[1].span)?;
                let t = view.elem;
                let mut vals = Vec::new();
                for a in &args[2..] {
                    let v = self.scalar(a)?;
                    let v = self.coerce(v, t, a.span)?;
                    vals.push(self.reg(&v, t));
                }
                let sp = if view.space == Space::Shared {
                    "shared"
                } else {
                    "global"
                };
                let op = match name.as_str() {
                    "atomic_add" => {
                        if t.size() == 2
                            || (t.is_float() && t != ScalarType::F32 && t != ScalarType::F64)
                            || t == ScalarType::I64
                        {
                            return Err(err("EMIT-TYPE", span, format!("no atomic add on {t}")));
                        }
                        format!(
                            "add.{}",
                            if t == ScalarType::I32 {
                                "s32"
                            } else {
                                ptx_ty(t)
                            }
                        )
                    }
                    "atomic_max" | "atomic_min" => {
                        if t.is_float() {
                            return Err(err(
                                "EMIT-TYPE",
                                span,
                                format!("no atomic min/max on {t}"),
                            ));
                        }
                        format!("{}.{}", &name[7..], ptx_ty(t))
                    }
                    "atomic_exch" => format!("exch.{}", bits_ty(t)),
                    _ => format!("cas.{}", bits_ty(t)),
                };
                if t == ScalarType::Bool || t.size() == 2 {
                    return Err(err("EMIT-TYPE", span, format!("no atomics on {t}")));
                }
                let r = self.fresh(t);
                self.line(format!(
                    "atom.{sp}.{op} {r}, [{addr}], {};",
                    vals.join(", ")
                ));
                Ok(Value::S(Val::Reg(r, t)))
            }
            "load2" | "load4" => {
                want(2)?;
                let k: usize = if name == "load2" { 2 } else { 4 };
                let view = self.mem_arg(&args[0])?;
                let i = self.scalar(&args[1])?;
                let addr = self.address(&view, vec![i], args[1].span)?;
                let t = view.elem;
                if t == ScalarType::Bool {
                    return Err(err("EMIT-TYPE", span, "no vector loads of bool"));
                }
                let regs: Vec<String> = (0..k).map(|_| self.fresh(t)).collect();
                let sp = Self::space_str(&view, true);
                self.line(format!(
                    "ld.{sp}.v{k}.{} {{{}}}, [{addr}];",
                    mem_ty(t),
                    regs.join(", ")
                ));
                Ok(Value::Arr(
                    regs.into_iter().map(|r| Val::Reg(r, t)).collect(),
                    t,
                ))
            }
            "store2" | "store4" => {
                want(3)?;
                let k: usize = if name == "store2" { 2 } else { 4 };
                let view = self.mem_arg(&args[0])?;
                let i = self.scalar(&args[1])?;
                let addr = self.address(&view, vec![i], args[1].span)?;
                let vals = match self.expr(&args[2])? {
                    Value::Arr(v, _) if v.len() == k => v,
                    _ => {
                        return Err(err(
                            "EMIT-TYPE",
                            args[2].span,
                            format!("`{name}` stores an array of {k} elements"),
                        ))
                    }
                };
                let vals = vals
                    .into_iter()
                    .map(|v| self.coerce(v, view.elem, args[2].span))
                    .collect::<R<Vec<_>>>()?;
                self.store(&view, &addr, &vals);
                Ok(Value::Unit)
            }
            "mma_m16n8k8_tf32" => {
                want(3)?;
                let c = self.array_arg(&args[0], 4)?;
                let a = self.array_arg(&args[1], 4)?;
                let b = self.array_arg(&args[2], 2)?;
                let mut ta = Vec::new();
                for x in a.iter().chain(b.iter()) {
                    let r = self.fresh(ScalarType::U32);
                    self.line(format!("cvt.rna.tf32.f32 {r}, {x};"));
                    ta.push(r);
                }
                self.line(format!(
                    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {{{c}}}, {{{}}}, {{{}}}, {{{c}}};",
                    ta[..4].join(", "),
                    ta[4..].join(", "),
                    c = c.join(", ")
                ));
                Ok(Value::Unit)
            }
            "ldmatrix_x1" | "ldmatrix_x2" | "ldmatrix_x4" => {
                want(2)?;
                let k: usize = name[10..].parse().unwrap_or(1);
                let view = self.mem_arg(&args[0])?;
                if view.space != Space::Shared {
                    return Err(err(
                        "EMIT-TYPE",
                        args[0].span,
                        "`ldmatrix` reads shared memory",
                    ));
                }
                let i = self.scalar(&args[1])?;
                let addr = self.address(&view, vec![i], args[1].span)?;
                let regs: Vec<String> = (0..k).map(|_| self.fresh(ScalarType::U32)).collect();
                self.line(format!(
                    "ldmatrix.sync.aligned.m8n8.x{k}.shared.b16 {{{}}}, [{addr}];",
                    regs.join(", ")
                ));
                Ok(Value::Arr(
                    regs.into_iter()
                        .map(|r| Val::Reg(r, ScalarType::U32))
                        .collect(),
                    ScalarType::U32,
                ))
            }
            "cp_async" => {
                want(5)?;
                let dst = self.mem_arg(&args[0])?;
                let di = self.scalar(&args[1])?;
                let src = self.mem_arg(&args[2])?;
                let si = self.scalar(&args[3])?;
                let bytes = self.const_i64(&args[4])?;
                if !matches!(bytes, 4 | 8 | 16) {
                    return Err(err(
                        "EMIT-CALL",
                        args[4].span,
                        format!("cp.async copies 4, 8 or 16 bytes, not {bytes}"),
                    ));
                }
                if dst.space != Space::Shared || src.space != Space::Global {
                    return Err(err(
                        "EMIT-TYPE",
                        span,
                        "`cp_async` copies from global to shared memory",
                    ));
                }
                let da = self.address(&dst, vec![di], args[1].span)?;
                let sa = self.address(&src, vec![si], args[3].span)?;
                let kind = if bytes == 16 { "cg" } else { "ca" };
                self.line(format!(
                    "cp.async.{kind}.shared.global [{da}], [{sa}], {bytes};"
                ));
                self.line("cp.async.commit_group;".into());
                self.uses_cp_async = true;
                Ok(Value::Unit)
            }
            "cp_async_bulk" => {
                want(5)?;
                let mbar = self.bulk_mbarrier(&args[0])?;
                let dst = self.mem_arg(&args[0])?;
                let di = self.scalar(&args[1])?;
                let src = self.mem_arg(&args[2])?;
                let si = self.scalar(&args[3])?;
                let bytes = self.const_i64(&args[4])?;
                if bytes <= 0 || bytes % 16 != 0 || bytes >= 1 << 20 {
                    return Err(err(
                        "EMIT-CALL",
                        args[4].span,
                        format!(
                            "cp.async.bulk copies a multiple of 16 bytes below 1 MiB, not {bytes}"
                        ),
                    ));
                }
                if dst.space != Space::Shared || src.space != Space::Global {
                    return Err(err(
                        "EMIT-TYPE",
                        span,
                        "`cp_async_bulk` copies from global to shared memory",
                    ));
                }
                let da = self.address(&dst, vec![di], args[1].span)?;
                let sa = self.address(&src, vec![si], args[3].span)?;
                // Announce the bytes before the copy can complete them, so the phase cannot end early.
                self.line(format!(
                    "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [__prism_mbar_{mbar}], {bytes};"
                ));
                self.line(format!(
                    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{da}], [{sa}], {bytes}, [__prism_mbar_{mbar}];"
                ));
                Ok(Value::Unit)
            }
            _ => self.call_device(path, generics, args, span),
        }
    }

    /// The mbarrier of the `async_` scope that `dst` (a `cp_async_bulk` destination) names, allocated on
    /// first use; `ASYNC-BULK` when that scope's target is not a shared allocation at `block[1]`.
    fn bulk_mbarrier(&mut self, dst: &Expr) -> R<u32> {
        let name = match &dst.kind {
            ExprKind::Var(id) => id.name.clone(),
            _ => String::new(),
        };
        let scope = self.async_scopes.iter_mut().rev().find(|s| s.name == name);
        match scope {
            Some(s) if s.bulk_ok => {
                if let Some(k) = s.mbar {
                    return Ok(k);
                }
                let k = self.mbars;
                s.mbar = Some(k);
                self.mbars += 1;
                Ok(k)
            }
            _ => Err(err(
                "ASYNC-BULK",
                dst.span,
                "cp_async_bulk needs the async_ target at block[1]",
            )
            .help(
                "copy into a shared allocation (`let s: Shared<[T; N]>;`) seen at block[1]: its copies complete \
                 on one mbarrier that every thread of the block waits on",
            )),
        }
    }

    fn mem_arg(&mut self, e: &Expr) -> R<View> {
        match self.expr(e)? {
            Value::Mem(v) => Ok(v),
            _ => Err(err(
                "EMIT-TYPE",
                e.span,
                "expected a pointer or shared allocation",
            )),
        }
    }

    fn array_arg(&mut self, e: &Expr, n: usize) -> R<Vec<String>> {
        match self.expr(e)? {
            Value::Arr(v, t) if v.len() == n => Ok(v.iter().map(|x| self.reg(x, t)).collect()),
            _ => Err(err(
                "EMIT-TYPE",
                e.span,
                format!("expected a thread-local array of {n} elements"),
            )),
        }
    }

    fn call_device(
        &mut self,
        path: &[Ident],
        generics: &[Expr],
        args: &[Expr],
        span: Span,
    ) -> R<Value> {
        let name = path.last().map(|p| p.name.clone()).unwrap_or_default();
        let f = match self.synced.get(&name) {
            Some(f) => f.clone(),
            None => {
                let raw = self
                    .deps
                    .iter()
                    .find(|f| f.name.name == name)
                    .ok_or_else(|| {
                        err("EMIT-CALL", span, format!("unknown function `{name}`"))
                            .help("device functions must be passed to the compiler as dependencies")
                    })?;
                let synced = crate::sync::insert_barriers_with(raw, self.deps, self.callee_policy)
                    .map_err(|mut d| d.remove(0))?;
                let rc = Rc::new(synced);
                self.synced.insert(name.clone(), rc.clone());
                rc
            }
        };
        if self.depth >= MAX_INLINE_DEPTH {
            return Err(err(
                "EMIT-CALL",
                span,
                format!("device functions nest deeper than {MAX_INLINE_DEPTH} calls (recursion?)"),
            ));
        }
        if f.params.len() != args.len() || f.const_params.len() != generics.len() {
            return Err(err(
                "EMIT-CALL",
                span,
                format!(
                    "`{name}` takes {} const argument(s) and {} argument(s)",
                    f.const_params.len(),
                    f.params.len()
                ),
            ));
        }
        // Bind in the caller's environment, then switch to the callee's.
        let mut scope = Scope::new();
        for (cp, g) in f.const_params.iter().zip(generics) {
            let v = self.const_i64(g)?;
            scope.insert(
                cp.name.name.clone(),
                Binding::Scalar {
                    val: Val::Imm(Imm::Int(v as i128), Some(cp.ty)),
                    persp: Perspective::grid(1),
                },
            );
        }
        let top = f
            .requires
            .first()
            .map(|p| p.perspective)
            .unwrap_or(self.ctx.persp);
        for (p, a) in f.params.iter().zip(args) {
            let persp = p.at.map(|x| x.perspective).unwrap_or(top);
            let b = match &p.ty {
                Type::Scalar(t) => {
                    let v = self.with_target(persp, |s| s.scalar(a))?;
                    let v = self.coerce(v, *t, a.span)?;
                    let val = match v {
                        Val::Imm(..) => v,
                        v => {
                            let r = self.fresh(*t);
                            self.mov_into(&r, &v, *t);
                            Val::Reg(r, *t)
                        }
                    };
                    Binding::Scalar { val, persp }
                }
                Type::Ptr { .. } | Type::Shared { .. } => Binding::Mem {
                    view: self.mem_arg(a)?,
                    persp,
                },
                Type::TensorMap { .. } => {
                    return Err(err("TYPE", a.span, "tensor maps are kernel parameters"))
                }
                Type::ArrayRef { elem, .. } => match self.expr(a)? {
                    // `&mut a` aliases the caller's registers.
                    Value::Arr(vals, _) => {
                        let regs = vals.iter().map(|v| self.reg(v, *elem)).collect();
                        Binding::Array {
                            regs,
                            elem: *elem,
                            persp: Perspective::thread(1),
                        }
                    }
                    _ => {
                        return Err(err(
                            "EMIT-TYPE",
                            a.span,
                            "expected `&array` or `&mut array`",
                        ))
                    }
                },
                Type::Array { elem, .. } => match self.expr(a)? {
                    Value::Arr(vals, _) => {
                        let mut regs = Vec::new();
                        for v in vals {
                            let v = self.coerce(v, *elem, a.span)?;
                            let r = self.fresh(*elem);
                            self.mov_into(&r, &v, *elem);
                            regs.push(r);
                        }
                        Binding::Array {
                            regs,
                            elem: *elem,
                            persp,
                        }
                    }
                    _ => return Err(err("EMIT-TYPE", a.span, "expected an array")),
                },
            };
            scope.insert(p.name.name.clone(), b);
        }
        let saved_env = std::mem::replace(&mut self.env, vec![scope]);
        let saved_ctx = self.ctx.clone();
        let saved_loops = std::mem::take(&mut self.loops);
        let saved_target = self.id_target.take();
        self.depth += 1;
        // The callee's own allocations start where the caller's callees go (they overlay each other).
        let saved_smem = (self.smem_next, self.smem_callee_base);
        self.smem_next = self.smem_callee_base;
        let r = self
            .own_smem(&f.body)
            .map(|own| self.smem_callee_base += own);
        // The callee runs at its top perspective; from a broader one it is replicated (rank mod size).
        let r = r
            .and_then(|_| self.group_into(top))
            .and_then(|_| self.block(&f.body));
        (self.smem_next, self.smem_callee_base) = saved_smem;
        self.depth -= 1;
        self.env = saved_env;
        self.ctx = saved_ctx;
        self.loops = saved_loops;
        self.id_target = saved_target;
        // Arrays returned by value must not alias registers the callee may reuse: copy them.
        match r? {
            Value::Arr(vals, t) => {
                let mut out = Vec::new();
                for v in vals {
                    let r = self.fresh(t);
                    self.mov_into(&r, &v, t);
                    out.push(Val::Reg(r, t));
                }
                Ok(Value::Arr(out, t))
            }
            v => Ok(v),
        }
    }

    fn asm(&mut self, template: &str, operands: &[AsmOperand], span: Span) -> R<()> {
        let mut regs: HashMap<String, String> = HashMap::new();
        let mut outs = Vec::new();
        for o in operands {
            // `&p[i]`: the address of an element of global or shared memory (the checker made sure the
            // operand type fits the space).
            if let (AsmDir::In, ExprKind::Ref { expr: inner, .. }) = (o.dir, &o.expr.kind) {
                if let ExprKind::Index { base, indices } = &inner.kind {
                    if let ExprKind::Var(id) = &base.kind {
                        if let Binding::Mem { view, .. } = self.lookup(id)? {
                            let idx = self.scalars(indices)?;
                            let addr = self.address(&view, idx, inner.span)?;
                            regs.insert(o.name.name.clone(), addr);
                            continue;
                        }
                    }
                }
            }
            let r = match o.dir {
                AsmDir::In | AsmDir::InOut => {
                    let v = self.scalar(&o.expr)?;
                    let v = self.coerce(v, o.ty, o.expr.span)?;
                    let r = self.fresh(o.ty);
                    self.mov_into(&r, &v, o.ty);
                    r
                }
                AsmDir::Out => self.fresh(o.ty),
            };
            if o.dir != AsmDir::In {
                outs.push((o.expr.clone(), r.clone(), o.ty));
            }
            regs.insert(o.name.name.clone(), r);
        }
        // Rust format-string rules: `{name}` is an operand, `{{` / `}}` are literal braces.
        let mut text = String::new();
        let mut chars = template.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    text.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    text.push('}');
                }
                '{' => {
                    let mut name = String::new();
                    for c in chars.by_ref() {
                        if c == '}' {
                            break;
                        }
                        name.push(c);
                    }
                    let r = regs.get(name.trim()).ok_or_else(|| {
                        err(
                            "ASM",
                            span,
                            format!("`{{{name}}}` names no operand of this `asm!`"),
                        )
                    })?;
                    text.push_str(r);
                }
                c => text.push(c),
            }
        }
        for l in text.lines() {
            let l = l.trim();
            if !l.is_empty() {
                self.line(l.to_string());
            }
        }
        for (place, r, t) in outs {
            self.assign_reg(&place, Val::Reg(r, t))?;
        }
        Ok(())
    }

    /// Assigns an already computed value to a place (asm outputs).
    fn assign_reg(&mut self, place: &Expr, v: Val) -> R<()> {
        match &place.kind {
            ExprKind::Var(id) => match self.lookup(id)? {
                Binding::Scalar {
                    val: Val::Reg(r, t),
                    ..
                } => {
                    let v = self.coerce(v, t, place.span)?;
                    self.mov_into(&r, &v, t);
                    Ok(())
                }
                _ => Err(err(
                    "ASM",
                    place.span,
                    "an `out` operand must be a mutable variable or element",
                )),
            },
            ExprKind::Index { base, indices } => {
                let id = match &base.kind {
                    ExprKind::Var(id) => id,
                    _ => return Err(err("ASM", place.span, "unsupported `out` place")),
                };
                match self.lookup(id)? {
                    Binding::Array { regs, elem, .. } => {
                        let i = self.reg_index(id, &regs, indices, place.span)?;
                        let v = self.coerce(v, elem, place.span)?;
                        self.mov_into(&regs[i], &v, elem);
                        Ok(())
                    }
                    Binding::Mem { view, .. } => {
                        let idx = self.scalars(indices)?;
                        let addr = self.address(&view, idx, place.span)?;
                        let v = self.coerce(v, view.elem, place.span)?;
                        self.store(&view, &addr, &[v]);
                        Ok(())
                    }
                    _ => Err(err("ASM", place.span, "unsupported `out` place")),
                }
            }
            _ => Err(err("ASM", place.span, "unsupported `out` place")),
        }
    }
}

/// Integer comparison type: `lo/ls/hi/hs` take unsigned, the others the value's own type.
fn bits_cmp_ty(t: ScalarType, _c: &str) -> &'static str {
    ptx_ty(t)
}

fn fold_untyped(op: BinOp, a: &Val, b: &Val, span: Span) -> R<Val> {
    match (a, b) {
        (Val::Imm(x, _), Val::Imm(y, _)) => fold(op, *x, *y, ScalarType::I64)
            .map(|v| match v {
                Val::Imm(i @ Imm::Int(_), _) => Val::Imm(i, None),
                o => o,
            })
            .ok_or_else(|| {
                err(
                    "EMIT-CONST",
                    span,
                    "cannot evaluate this constant expression",
                )
            }),
        _ => Err(err("EMIT-TYPE", span, "operands have no type")),
    }
}

/// Constant folding with the semantics of type `t`; `None` when it must happen at run time (e.g. / 0).
fn fold(op: BinOp, x: Imm, y: Imm, t: ScalarType) -> Option<Val> {
    use BinOp::*;
    let b = |v: bool| Some(Val::Imm(Imm::Bool(v), Some(ScalarType::Bool)));
    match (x, y) {
        (Imm::Int(a), Imm::Int(c)) if t.is_int() => {
            let (a, c) = (wrap_int(a, t), wrap_int(c, t));
            let v = match op {
                Add => a + c,
                Sub => a - c,
                Mul => a.checked_mul(c)?,
                Div if c != 0 => a / c,
                Rem if c != 0 => a % c,
                Div | Rem => return None,
                BitAnd => a & c,
                BitOr => a | c,
                BitXor => a ^ c,
                Shl if (0..(t.size() as i128 * 8)).contains(&c) => ((a as u128) << c) as i128,
                Shr if (0..(t.size() as i128 * 8)).contains(&c) => a >> c,
                Shl | Shr => return None,
                Eq => return b(a == c),
                Ne => return b(a != c),
                Lt => return b(a < c),
                Le => return b(a <= c),
                Gt => return b(a > c),
                Ge => return b(a >= c),
                And | Or => return None,
            };
            Some(Val::Imm(Imm::Int(wrap_int(v, t)), Some(t)))
        }
        (Imm::Bool(a), Imm::Bool(c)) => match op {
            And | BitAnd => b(a && c),
            Or | BitOr => b(a || c),
            BitXor | Ne => b(a != c),
            Eq => b(a == c),
            _ => None,
        },
        (x, y) if t == ScalarType::F32 || t == ScalarType::F64 => {
            let f = |i: Imm| match i {
                Imm::Int(v) => v as f64,
                Imm::Float(v) => v,
                Imm::Bool(v) => v as u8 as f64,
            };
            let (a, c) = (f(x), f(y));
            let r = |v: f64| {
                Some(Val::Imm(
                    Imm::Float(if t == ScalarType::F32 {
                        v as f32 as f64
                    } else {
                        v
                    }),
                    Some(t),
                ))
            };
            if t == ScalarType::F32 {
                let (a, c) = (a as f32, c as f32);
                return match op {
                    Add => r((a + c) as f64),
                    Sub => r((a - c) as f64),
                    Mul => r((a * c) as f64),
                    Div => r((a / c) as f64),
                    Rem => r((a % c) as f64),
                    Eq => b(a == c),
                    Ne => b(a != c),
                    Lt => b(a < c),
                    Le => b(a <= c),
                    Gt => b(a > c),
                    Ge => b(a >= c),
                    _ => None,
                };
            }
            match op {
                Add => r(a + c),
                Sub => r(a - c),
                Mul => r(a * c),
                Div => r(a / c),
                Rem => r(a % c),
                Eq => b(a == c),
                Ne => b(a != c),
                Lt => b(a < c),
                Le => b(a <= c),
                Gt => b(a > c),
                Ge => b(a >= c),
                _ => None,
            }
        }
        _ => None,
    }
}

/// No memory reads, calls or side effects: safe to evaluate eagerly.
fn pure(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => true,
        // Register-array reads are pure; memory reads are not (checked conservatively by syntax: any index).
        ExprKind::Index { .. } => false,
        ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } => pure(expr),
        ExprKind::Binary { lhs, rhs, .. } => pure(lhs) && pure(rhs),
        ExprKind::MethodCall { recv, args, .. } => pure(recv) && args.iter().all(pure),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => pure(cond) && pure(then_value) && pure(else_value),
        _ => false,
    }
}

fn collect_array_lets(b: &Block, out: &mut Vec<String>) {
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Let { name, ty, init, .. } => {
                let arr = matches!(ty, Some(Type::Array { .. }))
                    || matches!(
                        init.as_ref().map(|e| &e.kind),
                        Some(ExprKind::ArrayLit(_) | ExprKind::ArrayRepeat { .. })
                    );
                if arr {
                    out.push(name.name.clone());
                }
            }
            _ => {
                for_each_block(s, &mut |b| collect_array_lets(b, out));
            }
        }
    }
}

fn for_each_block(s: &Stmt, f: &mut dyn FnMut(&Block)) {
    match &s.kind {
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => {
            f(then_block);
            if let Some(e) = else_block {
                f(e);
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
        | StmtKind::Unsafe { body } => f(body),
        StmtKind::Split { arms, .. } => arms.iter().for_each(|a| f(&a.body)),
        _ => {}
    }
}

/// `body` indexes one of the register arrays `arrays` with an index that mentions `var`.
fn indexes_reg_array(body: &Block, var: &str, arrays: &[String]) -> bool {
    fn expr(e: &Expr, var: &str, arrays: &[String]) -> bool {
        match &e.kind {
            ExprKind::Index { base, indices } => {
                let hit = matches!(&base.kind, ExprKind::Var(id) if arrays.contains(&id.name))
                    && indices.iter().any(|i| mentions(i, var));
                hit || indices.iter().any(|i| expr(i, var, arrays))
            }
            ExprKind::Unary { expr: x, .. }
            | ExprKind::Cast { expr: x, .. }
            | ExprKind::Ref { expr: x, .. } => expr(x, var, arrays),
            ExprKind::Binary { lhs, rhs, .. } => expr(lhs, var, arrays) || expr(rhs, var, arrays),
            ExprKind::Call {
                path,
                args,
                generics,
            } => {
                // wgmma offsets must be constants: unroll loops that step through the operands.
                let wgmma = path.last().is_some_and(|p| p.name.starts_with("wgmma_"))
                    && args.iter().any(|a| mentions(a, var));
                wgmma
                    || args.iter().any(|a| expr(a, var, arrays))
                    || generics.iter().any(|g| mentions(g, var))
            }
            ExprKind::MethodCall { recv, args, .. } => {
                expr(recv, var, arrays) || args.iter().any(|a| expr(a, var, arrays))
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                expr(cond, var, arrays)
                    || expr(then_value, var, arrays)
                    || expr(else_value, var, arrays)
            }
            ExprKind::ArrayLit(v) => v.iter().any(|a| expr(a, var, arrays)),
            ExprKind::Asm { operands, .. } => operands.iter().any(|o| expr(&o.expr, var, arrays)),
            _ => false,
        }
    }
    fn block(b: &Block, var: &str, arrays: &[String]) -> bool {
        b.stmts.iter().any(|s| stmt(s, var, arrays))
            || b.tail.as_ref().is_some_and(|t| expr(t, var, arrays))
    }
    fn stmt(s: &Stmt, var: &str, arrays: &[String]) -> bool {
        let own = match &s.kind {
            StmtKind::Let { init, .. } => init.as_ref().is_some_and(|e| expr(e, var, arrays)),
            StmtKind::Assign { place, value, .. } => {
                expr(place, var, arrays) || expr(value, var, arrays)
            }
            StmtKind::Expr(e) => expr(e, var, arrays),
            StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => expr(cond, var, arrays),
            // Inner loops whose bounds depend on `var` become constant only if this one is unrolled.
            StmtKind::For {
                start, end, step, ..
            } => {
                mentions(start, var)
                    || mentions(end, var)
                    || step.as_ref().is_some_and(|x| mentions(x, var))
            }
            _ => false,
        };
        let mut inner = false;
        for_each_block(s, &mut |b| inner |= block(b, var, arrays));
        own || inner
    }
    block(body, var, arrays)
}

/// `e` reads the variable `var`.
fn mentions(e: &Expr, var: &str) -> bool {
    match &e.kind {
        ExprKind::Var(id) => id.name == var,
        ExprKind::Lit(_) => false,
        ExprKind::Index { base, indices } => {
            mentions(base, var) || indices.iter().any(|i| mentions(i, var))
        }
        ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } | ExprKind::Ref { expr, .. } => {
            mentions(expr, var)
        }
        ExprKind::Binary { lhs, rhs, .. } => mentions(lhs, var) || mentions(rhs, var),
        ExprKind::Call { args, generics, .. } => {
            args.iter().chain(generics.iter()).any(|a| mentions(a, var))
        }
        ExprKind::MethodCall { recv, args, .. } => {
            mentions(recv, var) || args.iter().any(|a| mentions(a, var))
        }
        ExprKind::ArrayLit(v) => v.iter().any(|a| mentions(a, var)),
        ExprKind::ArrayRepeat { value, len } => mentions(value, var) || mentions(len, var),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => mentions(cond, var) || mentions(then_value, var) || mentions(else_value, var),
        ExprKind::Asm { operands, .. } => operands.iter().any(|o| mentions(&o.expr, var)),
    }
}

/// A simple statement (`let`, assignment, expression) that names `var`.
fn stmt_mentions(s: &Stmt, var: &str) -> bool {
    match &s.kind {
        StmtKind::Let { name, init, .. } => {
            name.name == var || init.as_ref().is_some_and(|e| mentions(e, var))
        }
        StmtKind::Assign { place, value, .. } => mentions(place, var) || mentions(value, var),
        StmtKind::Expr(e) => mentions(e, var),
        _ => true,
    }
}

/// A statement that is a call of a wgmma intrinsic: consecutive ones form one run (one commit group).
fn is_wgmma_stmt(s: &Stmt) -> bool {
    matches!(&s.kind, StmtKind::Expr(Expr { kind: ExprKind::Call { path, .. }, .. })
        if path.last().is_some_and(|p| p.name.starts_with("wgmma_")))
}

/// Lines before which in-flight wgmmas must have retired: control flow (another path may touch the
/// accumulators), barriers and mbarrier operations (they publish the operand slots to other threads).
fn ends_wgmma_run(l: &str) -> bool {
    let l = l.trim_start();
    l.starts_with('@')
        || l.starts_with("bra")
        || l.starts_with("ret")
        || l.starts_with("exit")
        || l.starts_with("bar")
        || l.starts_with("mbarrier")
        || l.starts_with("cp.async")
        // Stores that may reach shared memory (the operands); loads and global stores cannot disturb a wgmma
        // (its accumulators are registers the statement would name).
        || (l.starts_with("st.") && !l.starts_with("st.global"))
        || l.contains(ASYNC_WAIT_MARK)
}
