//! The Prism compiler as an ordinary library.
//!
//! The pipeline runs one way: [`parse`] (Rust tokens → [`ast`]), [`check`] (the perspective rules of
//! paper 000 §3 and appendix A), [`emit`] (checked tree → PTX text). `prism-macros` is a thin layer that
//! calls [`compile_kernel`] / [`check_device`] and turns [`Diagnostic`]s into `compile_error!`s; tests,
//! fuzzers and tools call the same functions directly.

pub mod ast;
pub mod check;
pub mod consteval;
pub mod diag;
pub mod emit;
pub mod hw;
pub mod intrinsics;
pub mod mono;
pub mod parse;
pub mod ptx;
pub mod sync;

pub use diag::Diagnostic;
pub use sync::SyncPolicy;

use ast::{FnKind, Function, ScalarType};

/// A kernel parameter as the launcher sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamKind {
    Scalar(ScalarType),
    /// A global-memory pointer; the launcher takes a device buffer of `elem`.
    Ptr {
        elem: ScalarType,
        mutable: bool,
    },
    /// A `TensorMap<elem, rank>`; the launcher takes a host tensor map whose box and swizzle must be
    /// `box_dims` (innermost first) and `swizzle`, as the kernel's `tma_load`s fill their allocations
    /// (empty `box_dims`: the map is never loaded from).
    TensorMap {
        elem: ScalarType,
        rank: u32,
        /// A `TensorMapMut`: the kernel stores through it (`tma_store`).
        mutable: bool,
        box_dims: Vec<u32>,
        swizzle: ast::SmemLayout,
    },
}

/// A kernel parameter: its Rust name and kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    pub name: String,
    pub kind: ParamKind,
}

/// The resource contract a launch must satisfy (checked by the launcher before it launches). The one
/// definition of its fields: `prism_runtime::Contract` is this value behind an `unsafe` constructor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contract {
    /// Threads per block must be a multiple of this (from the thread perspectives in `requires`).
    pub threads_multiple_of: u32,
    /// `threads = N`: threads per block must equal this.
    pub threads_exact: Option<u32>,
    /// Blocks per grid must be a multiple of this (from block perspectives in `requires`).
    pub blocks_multiple_of: u32,
    /// `blocks = N`: the grid must have exactly this many blocks.
    pub blocks_exact: Option<u32>,
    /// Dynamic shared memory the kernel uses, in bytes (all its `Shared` allocations and its callees').
    pub smem_bytes: u32,
    /// `cluster = N`: blocks per cluster (1: no clusters).
    pub cluster: u32,
}

/// One PTX entry: a kernel, or one instance of a templated kernel.
#[derive(Clone, Debug)]
pub struct CompiledKernel {
    /// `vector_add`, or `sgemm_64_64_8_8_8` for an instance.
    pub entry: String,
    /// Type arguments of this instance (empty when the kernel has no type parameters).
    pub types: Vec<ScalarType>,
    /// Values of the const generics for this instance (empty when there are none).
    pub instance: Vec<i64>,
    /// A complete PTX module containing exactly this entry.
    pub ptx: String,
    pub params: Vec<ParamInfo>,
    pub contract: Contract,
}

/// H100 limit on shared memory per block (bytes), against which allocations are checked.
pub const DEVICE_SMEM_LIMIT: u64 = hw::MAX_SMEM_BYTES as u64;

/// Options for [`compile_kernel_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompileOptions {
    /// Which barriers the synchronization pass inserts (`docs/SYNC.md`); default [`SyncPolicy::Inferred`].
    pub sync: SyncPolicy,
}

/// The stages after the check stage, in order: synchronization (barriers into the kernel and the device
/// functions it calls, under `policy`), then the emitter, one PTX module per instance. The check stage
/// ([`check_kernel`]) decided every user rule but the SYNC-* family, so an emitter error here is a compiler
/// bug, reported as `INTERNAL` with the emitter's rule and message (`tests/checked_emits.rs`).
pub fn lower(
    k: &CheckedKernel,
    policy: SyncPolicy,
) -> Result<Vec<CompiledKernel>, Vec<Diagnostic>> {
    if let (SyncPolicy::Inferred, Some(ks)) = (policy, &k.lowered) {
        return Ok(ks.clone());
    }
    let synced = sync::synchronize(&k.checked.function, &k.deps, policy)?;
    emit::emit_kernel(&k.checked, &synced).map_err(|diags| {
        diags
            .into_iter()
            .map(|d| {
                // Barriers over thread[n] units take named barriers: counted where the sync stage's
                // barriers are lowered. The emitter's own bug reports are INTERNAL already.
                if d.rule.starts_with("SYNC-") || d.rule == "INTERNAL" {
                    return d;
                }
                let message = format!(
                    "bug: the emitter rejected a checked kernel: [{}] {}",
                    d.rule, d.message
                );
                Diagnostic {
                    rule: "INTERNAL",
                    message,
                    ..d
                }
            })
            .collect()
    })
}

/// The check stage for one monomorphic kernel: the checker's rules ([`check::check_function`]), then the
/// instance rules, decided per instance by the lowering walk ([`emit::emit_kernel`] over the tree the
/// default policy synchronizes, its PTX kept for [`lower`]): only that walk has the constants after unrolling, the views'
/// layouts and the threads that run each call which WGMMA offsets, TMA boxes, RING counts, SETMAXNREG,
/// STMATRIX boxes, a `Shared` parameter's argument (CALL-ARG) and REG-INDEX need (docs/ARCHITECTURE.md,
/// "Known departures from a one-way flow").
fn check_monomorphic(
    root: &Function,
    deps: Vec<Function>,
    types: Vec<ScalarType>,
) -> Result<CheckedKernel, Vec<Diagnostic>> {
    let checked = check::check_function(root, &deps)?;
    // The walk runs on the tree the default policy synchronizes, and its PTX is kept for `lower` with that
    // policy (one walk per instance when compiling, not two). When that synchronization itself fails
    // (SYNC-*, the sync stage's rules, reported by `lower`), the walk runs on the unsynchronized tree.
    let (walked, synced_ok) =
        match sync::synchronize(&checked.function, &deps, SyncPolicy::Inferred) {
            Ok(s) => (s, true),
            Err(_) => {
                let callees: Vec<Function> = sync::callees(&checked.function, &deps)
                    .into_iter()
                    .cloned()
                    .collect();
                let unsynced = sync::Synced {
                    kernel: checked.function.clone(),
                    callees,
                };
                (unsynced, false)
            }
        };
    let emitted = emit::emit_kernel(&checked, &walked);
    if let Err(diags) = emitted.as_ref().map(|_| ()).map_err(|d| {
        // SYNC-* from lowering the barriers (named-barrier counts) belong to `lower`, like sync's own.
        d.iter()
            .filter(|d| !d.rule.starts_with("SYNC-"))
            .cloned()
            .collect::<Vec<_>>()
    }) {
        if diags.is_empty() {
            return Ok(CheckedKernel {
                checked,
                deps,
                types,
                lowered: None,
            });
        }
        // The emitter's nets (INTERNAL) guard what the checker rejects, in the kernel or in the bodies it
        // inlined. Through the macros each device function's own `#[prism_device]` has reported its errors
        // at its definition; a library caller gets the callees' checker rules here, not the bug.
        if diags.iter().any(|d| d.rule == "INTERNAL") {
            let callee_errors: Vec<Diagnostic> = walked
                .callees
                .iter()
                .filter_map(|c| {
                    let errs = check::check_function(c, &deps).err()?;
                    let name: Box<str> = c.name.name.as_str().into();
                    Some(errs.into_iter().map(move |mut d| {
                        d.in_callee = Some(name.clone());
                        d
                    }))
                })
                .flatten()
                .collect();
            if !callee_errors.is_empty() {
                return Err(callee_errors);
            }
        }
        return Err(diags);
    }
    let lowered = match (synced_ok, emitted) {
        (true, Ok(ks)) => Some(ks),
        _ => None,
    };
    Ok(CheckedKernel {
        checked,
        deps,
        types,
        lowered,
    })
}

/// Compiles kernel `f` under both synchronization policies and counts the barriers of each: in the trees
/// the sync stage produces and in the first instance's PTX (`docs/SYNC.md`, `tests/sync_counts.rs`).
pub fn sync_report(
    f: &ast::Function,
    deps: &[ast::Function],
) -> Result<sync::SyncReport, Vec<Diagnostic>> {
    // Type generics resolved first (the first instance of a generic kernel).
    let (f, deps) = mono::first_instance(f, deps)?;
    let checked = check_monomorphic(&f, deps.clone(), Vec::new())?;
    let naive = lower(&checked, SyncPolicy::Naive)?;
    let inferred = lower(&checked, SyncPolicy::Inferred)?;
    let ptx = |ks: &[CompiledKernel]| {
        ks.first()
            .map(|k| sync::count_ptx_barriers(&k.ptx))
            .unwrap_or(0)
    };
    Ok(sync::SyncReport {
        entry: inferred
            .first()
            .map(|k| k.entry.clone())
            .unwrap_or_default(),
        tree_naive: sync::tree_barriers(&f, &deps, SyncPolicy::Naive)?,
        tree_inferred: sync::tree_barriers(&f, &deps, SyncPolicy::Inferred)?,
        ptx_naive: ptx(&naive),
        ptx_inferred: ptx(&inferred),
    })
}

/// Checks a kernel and emits PTX for each of its instances. `deps` are the device functions it may call
/// (from this crate or others), already parsed. Synchronization is inferred (paper 000 §5).
pub fn compile_kernel(
    f: &Function,
    deps: &[Function],
) -> Result<Vec<CompiledKernel>, Vec<Diagnostic>> {
    compile_kernel_with(f, deps, &CompileOptions::default())
}

/// [`compile_kernel`] with options (e.g. the naive synchronization policy, for comparison).
pub fn compile_kernel_with(
    f: &Function,
    deps: &[Function],
    opts: &CompileOptions,
) -> Result<Vec<CompiledKernel>, Vec<Diagnostic>> {
    let mut out = Vec::new();
    for k in check_kernel(f, deps)? {
        for mut c in lower(&k, opts.sync)? {
            c.types = k.types.clone();
            out.push(c);
        }
    }
    Ok(out)
}

/// One type tuple of a kernel after the check stage ([`check_kernel`], the only way to make one): what
/// [`lower`] takes.
#[derive(Clone, Debug)]
pub struct CheckedKernel {
    checked: check::Checked,
    deps: Vec<Function>,
    types: Vec<ScalarType>,
    /// The check stage's walk under the default policy ([`SyncPolicy::Inferred`]), kept for [`lower`].
    lowered: Option<Vec<CompiledKernel>>,
}

impl CheckedKernel {
    /// The checked (monomorphic) kernel with its instances.
    pub fn checked(&self) -> &check::Checked {
        &self.checked
    }
    /// The device functions it may call, as resolved for this type tuple.
    pub fn deps(&self) -> &[Function] {
        &self.deps
    }
    /// The type arguments (empty without type parameters).
    pub fn types(&self) -> &[ScalarType] {
        &self.types
    }
}

/// The check stage of [`compile_kernel`]: every user rule but the SYNC-* family (the sync stage's, run by
/// [`lower`]) is decided here, for every type tuple and every instance. After `Ok`, [`lower`] fails only
/// with SYNC-* rules or an `INTERNAL` bug (`tests/checked_emits.rs`).
pub fn check_kernel(
    f: &Function,
    deps: &[Function],
) -> Result<Vec<CheckedKernel>, Vec<Diagnostic>> {
    debug_assert_eq!(f.kind, FnKind::Kernel);
    let alias_errors = mono::check_aliases(f);
    if !alias_errors.is_empty() {
        return Err(alias_errors);
    }
    if f.type_params.is_empty() {
        if let Some(i) = f.instances.iter().find(|i| !i.types.is_empty()) {
            return Err(vec![Diagnostic::new(
                "GENERIC",
                i.span,
                format!(
                    "`{}` has no type parameters, this instance names types",
                    f.name
                ),
            )]);
        }
        let (root, deps) = mono::resolve(f.clone(), deps)?;
        return Ok(vec![check_monomorphic(&root, deps, Vec::new())?]);
    }
    let tuples = kernel_tuples(f)?;
    // Every tuple is checked before any is emitted, so errors of one tuple only are GENERIC.
    mono::each_tuple(f, &tuples, |types| {
        let g = mono::kernel_instance(f, types)?;
        let (root, deps) = mono::resolve(g, deps)?;
        check_monomorphic(&root, deps, types.to_vec())
    })
}

/// The distinct tuples of type arguments of a generic kernel's instances, in order of appearance; every
/// instance must name one type per type parameter, each admitted by its bound (rule GENERIC).
pub(crate) fn kernel_tuples(f: &Function) -> Result<Vec<Vec<ScalarType>>, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut tuples: Vec<Vec<ScalarType>> = Vec::new();
    if f.instances.is_empty() {
        errors.push(
            Diagnostic::new(
                "INSTANCES",
                f.name.span,
                format!("kernel `{}` has type parameters but no `instances`", f.name),
            )
            .help("PTX is produced at compile time: list the instances, types first, e.g. `instances = [(f32, 4), (u32, 16)]`"),
        );
    }
    for i in &f.instances {
        if i.types.len() != f.type_params.len() {
            errors.push(
                Diagnostic::new(
                    "GENERIC",
                    i.span,
                    format!(
                        "instance has {} type argument(s) but `{}` has {} type parameter(s)",
                        i.types.len(),
                        f.name,
                        f.type_params.len()
                    ),
                )
                .help("list the types first, then the const values: `instances = [(f32, 4)]`"),
            );
            continue;
        }
        for (p, t) in f.type_params.iter().zip(&i.types) {
            if !p.bound.admits(*t) {
                let m: Vec<&str> = p.bound.members().iter().map(|t| t.rust_name()).collect();
                errors.push(
                    Diagnostic::new(
                        "GENERIC",
                        i.span,
                        format!(
                            "`{t}` does not satisfy `{}: {}` (it admits {})",
                            p.name,
                            p.bound,
                            m.join(", ")
                        ),
                    )
                    .note(p.bound_span, format!("`{}` bounded here", p.name)),
                );
            }
        }
        if !tuples.contains(&i.types) {
            tuples.push(i.types.clone());
        }
    }
    if errors.is_empty() {
        Ok(tuples)
    } else {
        Err(errors)
    }
}

/// Checks a device function on its own (its perspective signature and body); a generic one once for every
/// tuple of types its bounds admit ([`mono`]).
pub fn check_device(f: &Function, deps: &[Function]) -> Result<(), Vec<Diagnostic>> {
    let alias_errors = mono::check_aliases(f);
    if !alias_errors.is_empty() {
        return Err(alias_errors);
    }
    if f.type_params.is_empty() {
        let (root, deps) = mono::resolve(f.clone(), deps)?;
        return check::check_function(&root, &deps).map(|_| ());
    }
    let tuples = mono::bound_tuples(f).map_err(|d| vec![d])?;
    mono::each_tuple(f, &tuples, |types| {
        let g = mono::instantiate(f, types, &f.name.name, f.name.span)?;
        let (root, deps) = mono::resolve(g, deps)?;
        check::check_function(&root, &deps).map(|_| ())
    })
    .map(|_| ())
}
