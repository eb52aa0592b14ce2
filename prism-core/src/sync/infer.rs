//! Synchronization inference (paper 000 §5; the algorithm and an example are in `docs/SYNC.md`).
//!
//! One abstract-interpretation walk over the structured program carries, for every memory *level* (a root —
//! kernel/device pointer parameter, shared allocation — or the new name of a `partition`/`claim`/`async_`
//! scope, with the perspective of that name), the accesses made since the last barrier that covers the
//! level's threads ("pending" reads, writes, atomics, async copies). Walking in program order, with loops
//! iterated to a fixed point over their back edges and `if` branches joined, visits exactly the edges of the
//! data-control-flow graph: a node (an access, or a whole scope for the level it partitions) conflicts with a
//! predecessor on the same memory when one of them writes (§5 rules (1) RAW/WAW and (2) WAR).
//!
//! * A conflict asks for a wait over the level's participants, placed as late as possible: just before the
//!   first access of the dependent node (wait-motion), walking into scopes, `if`s and loops at the same code
//!   perspective, never into a `group`/split arm narrower than the participants (that barrier would diverge).
//! * Arrives coincide with waits: a `bar.sync` both arrives and waits. A split `bar.arrive id, n` /
//!   `bar.sync id, n` pair executed by the *same* threads is unsound (a warp's arrive and its own later sync
//!   both count toward one phase, so the phase can complete before slower warps have arrived), and a true
//!   split barrier for the same threads needs an mbarrier (left for later). The arrive point is therefore the
//!   barrier itself, which wait-motion already puts after the last access of the producing node.
//! * A barrier clears every pending level it covers, so a later wait that an earlier barrier (over the same or
//!   a broader participant set, on every path: branches are joined) already satisfies is never placed
//!   (redundant barrier elimination); waits that meet at one point merge into one barrier.
//! * Levels are hierarchical: a scope on `x` creating `y` is one node for `x` (its accesses through `y` are
//!   accumulated and become `x`'s pending accesses when the scope ends), while dependences between accesses
//!   through `y` are `y`'s, synchronized over `y`'s narrower participants. Inside the scope the pending
//!   accesses of `x` from before it still constrain every access through `y`.
//! * Device functions: a call is a node that reads/writes each memory argument as the callee's body does
//!   (summarized transitively), plus a pseudo-memory for the callee's own shared allocations, which overlay
//!   other callees' (docs/CODEGEN.md). A callee's own analysis starts with nothing pending: the caller has
//!   ordered everything before the call, and orders everything after it.

use super::unsynchronizable;
use crate::ast::{
    Barrier, Block, Expr, ExprKind, Function, Ident, IndexFn, Level, Perspective, Stmt, StmtKind,
    Type,
};
use crate::intrinsics::{lookup, MemEffect};
use crate::Diagnostic;
use proc_macro2::Span;
use std::collections::{BTreeMap, HashMap};

mod access;
mod cross;
mod place;
mod tree;
mod walk;

use place::{clear, push_pend};
use tree::{block_at, child_blocks, covers, merge_sites, stmt_exprs};
pub(crate) use tree::{called_names, sub_exprs};

/// One inferred barrier: where it goes and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarrierSite {
    /// Position in the function body: pairs `(statement index, child block)` down to the block that holds
    /// the barrier, then the index of the statement it is inserted before (the block's length: at its end).
    /// Child blocks: `if` 0 = then, 1 = else; split arm `i` = `i`; every other body = 0.
    pub pos: Vec<usize>,
    pub barrier: Barrier,
    /// The dependences it resolves, e.g. `RAW a_smem`, `WAR c_smem`.
    pub reasons: Vec<String>,
}

/// The barriers the inference places in `f` (its own body only), in tree order.
pub fn inferred_sites(
    f: &Function,
    deps: &[Function],
) -> Result<Vec<BarrierSite>, Vec<Diagnostic>> {
    let mut inf = Infer::new(deps);
    inf.run(f);
    if !inf.diags.is_empty() {
        return Err(inf.diags);
    }
    Ok(merge_sites(inf.sites))
}

/// Returns `f` with the inferred barriers inserted, without the `skip`-th one when given (test hook).
pub(crate) fn insert_inferred(
    f: &Function,
    deps: &[Function],
    skip: Option<usize>,
) -> Result<Function, Vec<Diagnostic>> {
    let sites = inferred_sites(f, deps)?;
    let mut out = f.clone();
    // Insert from the last position backwards so earlier positions stay valid.
    let mut keep: Vec<&BarrierSite> = sites
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != skip)
        .map(|(_, s)| s)
        .collect();
    keep.reverse();
    for s in keep {
        let Some((&idx, path)) = s.pos.split_last() else {
            continue;
        };
        if let Some(b) = block_at(&mut out.body, path) {
            // The barrier's span (for diagnostics of its lowering) is the access it orders: a `let`'s
            // initializer rather than its `#[at(..)]`.
            let span = b
                .stmts
                .get(idx)
                .map(|s| match &s.kind {
                    StmtKind::Let { init: Some(e), .. } => e.span,
                    _ => s.span,
                })
                .unwrap_or(b.span);
            let at = idx.min(b.stmts.len());
            b.stmts.insert(
                at,
                Stmt {
                    kind: StmtKind::Barrier(s.barrier),
                    span,
                },
            );
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------------------
// Tree helpers

// ---------------------------------------------------------------------------------------------------------
// Accesses and pending state

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Acc {
    Read,
    Write,
    /// `atomic_*`: concurrent with other atomics by design, ordered against plain reads and writes.
    Atomic,
    /// `cp_async` into an `async_` name: completes only after `cp.async.wait_all`.
    AsyncWrite,
}

impl From<MemEffect> for Acc {
    fn from(e: MemEffect) -> Acc {
        match e {
            MemEffect::Read => Acc::Read,
            MemEffect::Write => Acc::Write,
            MemEffect::Atomic => Acc::Atomic,
            MemEffect::AsyncWrite => Acc::AsyncWrite,
        }
    }
}

/// Accesses of one level since the last barrier covering it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Pend {
    r: bool,
    w: bool,
    a: bool,
    aw: bool,
    /// The scope node (index into `Infer::nodes`) whose accesses these are, when they come from one.
    src: Option<usize>,
    /// The first pending atomic (index into `Infer::access_spans`), for the note of `SYNC-ATOMIC`.
    asrc: Option<usize>,
    /// The first of these accesses (index into `Infer::access_spans`), for the note of `SYNC-GRID`.
    first: Option<usize>,
}

impl Pend {
    fn is_empty(&self) -> bool {
        !(self.r || self.w || self.a || self.aw)
    }
    /// §5 rules: (1) anything after a write (RAW, WAW); (2) a write after reads (WAR).
    fn conflicts(&self, a: Acc) -> bool {
        match a {
            Acc::Read => self.w || self.aw || self.a,
            Acc::Write | Acc::AsyncWrite => !self.is_empty(),
            Acc::Atomic => self.r || self.w || self.aw,
        }
    }
    fn mark(&mut self, a: Acc) {
        match a {
            Acc::Read => self.r = true,
            Acc::Write => self.w = true,
            Acc::Atomic => self.a = true,
            Acc::AsyncWrite => self.aw = true,
        }
    }
    fn join(&mut self, o: &Pend) {
        self.r |= o.r;
        self.w |= o.w;
        self.a |= o.a;
        self.aw |= o.aw;
        if self.src.is_none() {
            self.src = o.src;
        }
        if self.asrc.is_none() {
            self.asrc = o.asrc;
        }
        if self.first.is_none() {
            self.first = o.first;
        }
    }
    fn reason(&self, a: Acc) -> &'static str {
        match a {
            Acc::Read if self.w || self.aw => "RAW",
            Acc::Write | Acc::AsyncWrite if self.w || self.aw => "WAW",
            Acc::Write | Acc::AsyncWrite if self.r => "WAR",
            _ => "ATOMIC",
        }
    }
    /// The conflict involves an atomic (the access is one, or the only pending writes are atomics). Atomics
    /// are concurrent with each other only: a plain read after atomics (the total they accumulate), a plain
    /// write after them, or an atomic after plain accesses races like any write, and is reported as
    /// `SYNC-ATOMIC` where no barrier can order it.
    fn atomic_involved(&self, a: Acc) -> bool {
        let plain_writes = self.w || self.aw;
        a == Acc::Atomic || (self.a && !plain_writes)
    }
}

#[derive(Clone, Debug, PartialEq)]
struct State {
    reach: bool,
    /// Pending accesses per level, as its own name sees them (frozen while a scope hides the name).
    pend: BTreeMap<usize, Pend>,
    /// Accesses made through a hidden level's scope (through its new names), since the scope began.
    inner: BTreeMap<usize, Pend>,
}

impl State {
    fn start() -> State {
        State {
            reach: true,
            pend: BTreeMap::new(),
            inner: BTreeMap::new(),
        }
    }
    fn bottom() -> State {
        State {
            reach: false,
            ..State::start()
        }
    }
    fn join(&mut self, o: &State) {
        if !o.reach {
            return;
        }
        if !self.reach {
            *self = o.clone();
            return;
        }
        for (k, p) in &o.pend {
            self.pend.entry(*k).or_default().join(p);
        }
        for (k, p) in &o.inner {
            self.inner.entry(*k).or_default().join(p);
        }
    }
}

struct MemLevel {
    name: String,
    at: Perspective,
    parent: Option<usize>,
    is_async: bool,
    /// A view of block-local memory that its scope reaches at indices known only at run time (`st[stride]`):
    /// the shadow level its accesses count at too, at the viewed memory's threads (`cross::shadow`).
    cross: Option<usize>,
    /// This level is such a shadow: its waits go where a barrier can, and nowhere else (not an error).
    soft: bool,
}

/// What a device function does to each pointer parameter, and to its own (overlaid) shared memory.
#[derive(Clone, Debug)]
struct Summary {
    params: Vec<Pend>,
    scratch: Pend,
}

/// Token for "this function's own shared allocations" while summarizing a callee.
const SCRATCH: usize = usize::MAX;
/// Summaries nest at most this deep (the checker rejects recursion; this only bounds the work).
const MAX_SUMMARY_DEPTH: u32 = 64;
/// Iterations of a loop's fixed point (each adds at least one pending bit, so this is never reached in
/// practice; past it the walk uses the joined state, which stays sound only if converged: see `fix`).
const MAX_FIX: usize = 256;

type Names = Vec<HashMap<String, Option<usize>>>;

struct LoopCtx {
    breaks: State,
    conts: State,
    /// Barriers the `while` condition needs on the back edge (placed before each `continue`).
    cond_need: Vec<Need>,
}

#[derive(Clone, Debug)]
struct Need {
    at: Perspective,
    wait_async: bool,
    reason: String,
    /// From a shadow level (`MemLevel::soft`): where no barrier can go, nothing is placed and nothing reported.
    soft: bool,
    /// The conflict involves atomics: (level, the access, the pending accesses), for `SYNC-ATOMIC`.
    atomic: Option<(usize, Acc, Pend)>,
}

struct Infer<'a> {
    deps: &'a [Function],
    summaries: HashMap<String, Summary>,
    sum_depth: u32,
    levels: Vec<MemLevel>,
    level_keys: HashMap<Vec<usize>, usize>,
    /// Scope nodes: (span of the scope statement).
    nodes: Vec<Span>,
    node_keys: HashMap<Vec<usize>, usize>,
    /// The scope node currently hiding each level.
    active: HashMap<usize, usize>,
    names: Names,
    code: Perspective,
    path: Vec<usize>,
    cur: usize,
    sites: Vec<BarrierSite>,
    loops: Vec<LoopCtx>,
    dry: u32,
    diags: Vec<Diagnostic>,
    scratch: usize,
    /// Statements that made accesses (keyed by position), for the notes of `SYNC-ATOMIC` and `SYNC-GRID`.
    access_spans: Vec<Span>,
    access_keys: HashMap<Vec<usize>, usize>,
    /// `cluster = N` of the function: `sync_cluster()` orders the accesses of a `block[N]` level.
    cluster: Option<u32>,
}

impl<'a> Infer<'a> {
    fn new(deps: &'a [Function]) -> Self {
        Infer {
            deps,
            summaries: HashMap::new(),
            sum_depth: 0,
            levels: Vec::new(),
            level_keys: HashMap::new(),
            nodes: Vec::new(),
            node_keys: HashMap::new(),
            active: HashMap::new(),
            names: vec![HashMap::new()],
            code: Perspective::grid(1),
            path: Vec::new(),
            cur: 0,
            sites: Vec::new(),
            loops: Vec::new(),
            dry: 0,
            diags: Vec::new(),
            scratch: 0,
            access_spans: Vec::new(),
            access_keys: HashMap::new(),
            cluster: None,
        }
    }

    fn level(
        &mut self,
        key: Vec<usize>,
        name: &str,
        at: Perspective,
        parent: Option<usize>,
        is_async: bool,
    ) -> usize {
        if let Some(l) = self.level_keys.get(&key) {
            return *l;
        }
        self.levels.push(MemLevel {
            name: name.to_string(),
            at,
            parent,
            is_async,
            cross: None,
            soft: false,
        });
        let l = self.levels.len() - 1;
        self.level_keys.insert(key, l);
        l
    }

    fn node(&mut self, key: Vec<usize>, span: Span) -> usize {
        if let Some(n) = self.node_keys.get(&key) {
            return *n;
        }
        self.nodes.push(span);
        let n = self.nodes.len() - 1;
        self.node_keys.insert(key, n);
        n
    }

    fn pos(&self) -> Vec<usize> {
        let mut p = self.path.clone();
        p.push(self.cur);
        p
    }

    fn declare(&mut self, name: &str, l: Option<usize>) {
        if let Some(s) = self.names.last_mut() {
            s.insert(name.to_string(), l);
        }
    }

    fn run(&mut self, f: &Function) {
        let top = f
            .requires
            .first()
            .map(|p| p.perspective)
            .unwrap_or(Perspective::grid(1));
        self.code = top;
        self.cluster = f
            .cluster
            .as_ref()
            .and_then(|e| crate::consteval::eval_const(e, &|_| None).ok())
            .and_then(|c| u32::try_from(c).ok())
            .filter(|c| (2..=8).contains(c));
        for (i, p) in f.params.iter().enumerate() {
            let l = match p.ty {
                Type::Ptr { .. } | Type::Shared { .. } => {
                    let at = p.at.map(|a| a.perspective).unwrap_or(top);
                    Some(self.level(vec![usize::MAX, i], &p.name.name, at, None, false))
                }
                _ => None,
            };
            self.declare(&p.name.name, l);
        }
        self.scratch = self.level(
            vec![usize::MAX - 1],
            "<shared memory of callees>",
            Perspective::block(1),
            None,
            false,
        );
        self.block(&f.body, State::start());
    }

    // ----- accesses of expressions

    // ----- conflicts and barriers

    // ----- the walk
}
