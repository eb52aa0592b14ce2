//! Synchronization pass: makes the barriers that `partition`, `claim` and `async_` scopes imply explicit, as
//! [`StmtKind::Barrier`] statements, before the emitter runs (so the emitter only ever sees explicit
//! barriers). The algorithm is described in `docs/SYNC.md`.
//!
//! Two policies:
//! * [`SyncPolicy::Inferred`] (default): the inference of paper 000 §5 ([`infer`]): a data-control-flow
//!   graph of read/write nodes per memory, a wait before every node that depends on an earlier write
//!   (RAW/WAW) or that writes after earlier reads (WAR), moved down to the first use (wait-motion) and
//!   dropped where an earlier barrier already orders the accesses on every path.
//! * [`SyncPolicy::Naive`] ([`naive`]): a barrier at the start and end of every scope.

pub mod infer;
pub mod naive;

use crate::ast::{Barrier, Block, Function, Level, Perspective, StmtKind};
use crate::Diagnostic;

pub use infer::{inferred_sites, BarrierSite};

/// Which barriers the synchronization pass inserts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SyncPolicy {
    /// A barrier at the start and the end of every `partition` / `claim` / `async_` scope.
    Naive,
    /// Paper 000 §5 inference (the default).
    #[default]
    Inferred,
    /// Test hook: the inferred barriers of the kernel's own body without the `i`-th one (tree order, as
    /// [`inferred_sites`] lists them). Callees keep all of theirs. Used to show which barriers matter.
    InferredWithout(usize),
}

/// Returns a copy of `f` with explicit barriers under the default policy ([`SyncPolicy::Inferred`]); calls to
/// device functions not in `deps` are assumed to read and write every memory argument.
pub fn insert_barriers(f: &Function) -> Result<Function, Vec<Diagnostic>> {
    insert_barriers_with(f, &[], SyncPolicy::Inferred)
}

/// Returns a copy of `f` with explicit barriers under `policy`. `deps` are the device functions `f` may
/// call (their effect on each memory argument is summarized from their bodies).
pub fn insert_barriers_with(
    f: &Function,
    deps: &[Function],
    policy: SyncPolicy,
) -> Result<Function, Vec<Diagnostic>> {
    match policy {
        SyncPolicy::Naive => naive::insert_naive(f),
        SyncPolicy::Inferred => infer::insert_inferred(f, deps, None),
        SyncPolicy::InferredWithout(i) => infer::insert_inferred(f, deps, Some(i)),
    }
}

/// `true` when no barrier can make the threads of one `p` unit wait for each other.
pub fn unsynchronizable(p: Perspective) -> bool {
    p.level == Level::Grid || (p.level == Level::Block && p.n > 1)
}

/// Barrier statements in a function body (static count, loops not unrolled, callees not included).
pub fn count_barriers(f: &Function) -> usize {
    fn block(b: &Block) -> usize {
        b.stmts
            .iter()
            .map(|s| match &s.kind {
                StmtKind::Barrier(Barrier { .. }) => 1,
                StmtKind::If {
                    then_block,
                    else_block,
                    ..
                } => block(then_block) + else_block.as_ref().map(block).unwrap_or(0),
                StmtKind::While { body, .. }
                | StmtKind::For { body, .. }
                | StmtKind::Group { body, .. }
                | StmtKind::Partition { body, .. }
                | StmtKind::Claim { body, .. }
                | StmtKind::Async { body, .. }
                | StmtKind::Peer { body, .. }
                | StmtKind::Ring { body, .. }
                | StmtKind::RingUse { body, .. }
                | StmtKind::Unsafe { body } => block(body),
                StmtKind::Split { arms, .. } => arms.iter().map(|a| block(&a.body)).sum(),
                _ => 0,
            })
            .sum()
    }
    block(&f.body)
}

/// Barriers of a kernel under both policies, for comparison (`docs/SYNC.md`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncReport {
    /// Entry name of the first instance.
    pub entry: String,
    /// Barrier statements in the kernel body and the bodies of the device functions it calls (each once).
    pub tree_naive: usize,
    pub tree_inferred: usize,
    /// Barrier instructions (`bar.sync`, `bar.arrive`, `bar.warp.sync`) in the PTX of the first instance
    /// (loops with constant trip counts unrolled, callees inlined at every call).
    pub ptx_naive: usize,
    pub ptx_inferred: usize,
}

/// A kernel and every device function it calls, with barriers inserted: what the emitter lowers (the
/// driver runs this stage between the checker and the emitter).
#[derive(Clone, Debug)]
pub struct Synced {
    /// The kernel, synchronized under the policy asked for.
    pub kernel: Function,
    /// The device functions it calls, directly or not: under `Naive` when the kernel is, else `Inferred`.
    pub callees: Vec<Function>,
}

/// Inserts barriers into `f` under `policy` and into the device functions it calls (from `deps`).
pub fn synchronize(
    f: &Function,
    deps: &[Function],
    policy: SyncPolicy,
) -> Result<Synced, Vec<Diagnostic>> {
    let kernel = insert_barriers_with(f, deps, policy)?;
    let callee_policy = match policy {
        SyncPolicy::Naive => SyncPolicy::Naive,
        _ => SyncPolicy::Inferred,
    };
    let callees = callees(f, deps)
        .into_iter()
        .map(|d| insert_barriers_with(d, deps, callee_policy))
        .collect::<Result<_, _>>()?;
    Ok(Synced { kernel, callees })
}

/// Barriers in the tree of `f` and of the device functions it calls, under `policy` (for [`SyncReport`]).
pub fn tree_barriers(
    f: &Function,
    deps: &[Function],
    policy: SyncPolicy,
) -> Result<usize, Vec<Diagnostic>> {
    let mut n = count_barriers(&insert_barriers_with(f, deps, policy)?);
    for d in callees(f, deps) {
        n += count_barriers(&insert_barriers_with(d, deps, policy)?);
    }
    Ok(n)
}

/// Barrier instructions in PTX text.
pub fn count_ptx_barriers(ptx: &str) -> usize {
    ptx.lines()
        .map(str::trim_start)
        .filter(|l| {
            l.starts_with("bar.sync")
                || l.starts_with("bar.arrive")
                || l.starts_with("bar.warp.sync")
                || l.starts_with("barrier.")
        })
        .count()
}

/// The device functions `f` calls, transitively, each once (by name, as the emitter resolves them).
pub(crate) fn callees<'a>(f: &Function, deps: &'a [Function]) -> Vec<&'a Function> {
    let mut out: Vec<&'a Function> = Vec::new();
    let mut todo = infer::called_names(f);
    while let Some(n) = todo.pop() {
        if out.iter().any(|d| d.name.name == n) {
            continue;
        }
        if let Some(d) = deps.iter().find(|d| d.name.name == n) {
            out.push(d);
            todo.extend(infer::called_names(d));
        }
    }
    out
}
