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
    Barrier, Block, Expr, ExprKind, Function, Ident, Level, Perspective, Stmt, StmtKind, Type,
};
use crate::intrinsics::{lookup, MemEffect};
use crate::Diagnostic;
use proc_macro2::Span;
use std::collections::{BTreeMap, HashMap};

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

/// Names of the functions `f` calls (device functions and intrinsics alike).
pub(crate) fn called_names(f: &Function) -> Vec<String> {
    let mut out = Vec::new();
    fn expr(e: &Expr, out: &mut Vec<String>) {
        match &e.kind {
            ExprKind::Call {
                path,
                generics,
                args,
            } => {
                if let Some(p) = path.last() {
                    if lookup(&p.name).is_none() {
                        out.push(p.name.clone());
                    }
                }
                generics.iter().chain(args).for_each(|a| expr(a, out));
            }
            _ => sub_exprs(e).into_iter().for_each(|a| expr(a, out)),
        }
    }
    fn block(b: &Block, out: &mut Vec<String>) {
        for s in &b.stmts {
            stmt_exprs(s).into_iter().for_each(|e| expr(e, out));
            child_blocks(s).into_iter().for_each(|c| block(c, out));
        }
        if let Some(t) = &b.tail {
            expr(t, out);
        }
    }
    block(&f.body, &mut out);
    out
}

// ---------------------------------------------------------------------------------------------------------
// Tree helpers

fn block_at<'b>(b: &'b mut Block, path: &[usize]) -> Option<&'b mut Block> {
    if path.is_empty() {
        return Some(b);
    }
    let (si, ci) = (path[0], *path.get(1)?);
    let s = b.stmts.get_mut(si)?;
    let child = match &mut s.kind {
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => {
            if ci == 0 {
                then_block
            } else {
                else_block.as_mut()?
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
        | StmtKind::Unsafe { body } => body,
        StmtKind::Split { arms, .. } => &mut arms.get_mut(ci)?.body,
        _ => return None,
    };
    block_at(child, &path[2..])
}

fn child_blocks(s: &Stmt) -> Vec<&Block> {
    match &s.kind {
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => {
            let mut v = vec![then_block];
            v.extend(else_block.iter());
            v
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
        | StmtKind::Unsafe { body } => vec![body],
        StmtKind::Split { arms, .. } => arms.iter().map(|a| &a.body).collect(),
        _ => Vec::new(),
    }
}

/// Expressions evaluated by the statement itself (not its child blocks).
fn stmt_exprs(s: &Stmt) -> Vec<&Expr> {
    match &s.kind {
        StmtKind::Let { init, .. } => init.iter().collect(),
        StmtKind::Assign { place, value, .. } => vec![place, value],
        StmtKind::Expr(e) => vec![e],
        StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => vec![cond],
        StmtKind::For {
            start, end, step, ..
        } => {
            let mut v = vec![start, end];
            v.extend(step.iter());
            v
        }
        StmtKind::Partition { index, .. } => vec![&*index.body],
        _ => Vec::new(),
    }
}

pub(crate) fn sub_exprs(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => Vec::new(),
        ExprKind::Asm { operands, .. } => operands.iter().map(|o| &o.expr).collect(),
        ExprKind::Index { base, indices } => {
            let mut v = vec![&**base];
            v.extend(indices.iter());
            v
        }
        ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } | ExprKind::Ref { expr, .. } => {
            vec![expr]
        }
        ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
        ExprKind::Call { generics, args, .. } => generics.iter().chain(args).collect(),
        ExprKind::MethodCall { recv, args, .. } => {
            let mut v = vec![&**recv];
            v.extend(args.iter());
            v
        }
        ExprKind::ArrayLit(v) => v.iter().collect(),
        ExprKind::ArrayRepeat { value, len } => vec![value, len],
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => vec![cond, then_value, else_value],
    }
}

/// Sites at one position merge: the broadest barrier that covers the others survives.
fn merge_sites(mut sites: Vec<BarrierSite>) -> Vec<BarrierSite> {
    // Stable sort keeps, at one position, the order in which the walk placed them.
    sites.sort_by(|a, b| a.pos.cmp(&b.pos));
    let mut out: Vec<BarrierSite> = Vec::new();
    for s in sites {
        if let Some(last) = out
            .iter_mut()
            .rev()
            .take_while(|l| l.pos == s.pos)
            .find(|l| covers(l.barrier.at, s.barrier.at) || covers(s.barrier.at, l.barrier.at))
        {
            if covers(s.barrier.at, last.barrier.at) {
                last.barrier.at = s.barrier.at;
            }
            last.barrier.wait_async |= s.barrier.wait_async;
            for r in s.reasons {
                if !last.reasons.contains(&r) {
                    last.reasons.push(r);
                }
            }
            continue;
        }
        out.push(s);
    }
    out
}

/// A barrier over one unit of `outer` orders the threads of each unit of `inner` (§3.2 ordering).
fn covers(outer: Perspective, inner: Perspective) -> bool {
    inner.narrower_eq_syntactic(outer)
}

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
    /// The first pending atomic (index into `Infer::atomics`), for the note of `SYNC-ATOMIC`.
    asrc: Option<usize>,
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
    /// Statements that made atomic accesses (keyed by position), for the notes of `SYNC-ATOMIC`.
    atomic_spans: Vec<Span>,
    atomic_keys: HashMap<Vec<usize>, usize>,
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
            atomic_spans: Vec::new(),
            atomic_keys: HashMap::new(),
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

    fn lookup(names: &Names, id: &Ident) -> Option<usize> {
        names
            .iter()
            .rev()
            .find_map(|s| s.get(&id.name))
            .copied()
            .flatten()
    }

    fn mem_token(names: &Names, e: &Expr) -> Option<usize> {
        match &e.kind {
            ExprKind::Var(id) => Self::lookup(names, id),
            _ => None,
        }
    }

    /// Accesses `e` makes, as (token, kind); tokens come from `names`.
    fn expr_accs(
        &mut self,
        e: &Expr,
        names: &Names,
        scratch: Option<usize>,
        out: &mut Vec<(usize, Acc)>,
    ) {
        match &e.kind {
            ExprKind::Index { base, indices } => {
                match Self::mem_token(names, base) {
                    Some(t) => out.push((t, Acc::Read)),
                    None => self.expr_accs(base, names, scratch, out),
                }
                for i in indices {
                    self.expr_accs(i, names, scratch, out);
                }
            }
            ExprKind::Call {
                path,
                generics,
                args,
            } => {
                let name = path.last().map(|p| p.name.as_str()).unwrap_or("");
                for g in generics {
                    self.expr_accs(g, names, scratch, out);
                }
                if let Some(intrinsic) = lookup(name) {
                    for (i, a) in args.iter().enumerate() {
                        match (
                            Self::mem_token(names, a),
                            intrinsic.memory.iter().find(|(j, _)| *j == i),
                        ) {
                            (Some(t), Some((_, k))) => out.push((t, Acc::from(*k))),
                            // A memory name where no access is declared: count it as a read.
                            (Some(t), None) => out.push((t, Acc::Read)),
                            (None, _) => self.expr_accs(a, names, scratch, out),
                        }
                    }
                    return;
                }
                let sum = self.summary(name);
                for (i, a) in args.iter().enumerate() {
                    match Self::mem_token(names, a) {
                        Some(t) => {
                            let p = sum
                                .as_ref()
                                .and_then(|s| s.params.get(i).copied())
                                .unwrap_or(Pend {
                                    r: true,
                                    w: true,
                                    ..Pend::default()
                                });
                            push_pend(out, t, &p);
                        }
                        None => self.expr_accs(a, names, scratch, out),
                    }
                }
                if let Some(t) = scratch {
                    let p = sum.map(|s| s.scratch).unwrap_or(Pend {
                        r: true,
                        w: true,
                        ..Pend::default()
                    });
                    push_pend(out, t, &p);
                }
            }
            _ => {
                for s in sub_exprs(e) {
                    self.expr_accs(s, names, scratch, out);
                }
            }
        }
    }

    /// Accesses of a whole statement and its child blocks. Names declared inside resolve through `names`
    /// (new scope names alias their target's token; shared allocations are `scratch`).
    fn collect_stmt(
        &mut self,
        s: &Stmt,
        names: &mut Names,
        scratch: Option<usize>,
        alloc: Option<usize>,
        out: &mut Vec<(usize, Acc)>,
    ) {
        match &s.kind {
            StmtKind::Let { name, ty, init, .. } => {
                if let Some(e) = init {
                    self.expr_accs(e, names, scratch, out);
                }
                let t = match ty {
                    Some(Type::Shared { .. }) => alloc,
                    _ => init.as_ref().and_then(|e| Self::mem_token(names, e)),
                };
                if let Some(sc) = names.last_mut() {
                    sc.insert(name.name.clone(), t);
                }
            }
            StmtKind::Assign { place, op, value } => {
                self.expr_accs(value, names, scratch, out);
                self.place_accs(place, op.is_some(), names, scratch, out);
            }
            _ => {
                for e in stmt_exprs(s) {
                    self.expr_accs(e, names, scratch, out);
                }
                let alias = match &s.kind {
                    StmtKind::Partition {
                        target, new_name, ..
                    }
                    | StmtKind::Claim {
                        target, new_name, ..
                    }
                    | StmtKind::Async {
                        target, new_name, ..
                    } => Some((new_name.name.clone(), Self::lookup(names, target))),
                    StmtKind::For { var, .. } => Some((var.name.clone(), None)),
                    _ => None,
                };
                for b in child_blocks(s) {
                    let mut sc = HashMap::new();
                    if let Some((n, t)) = &alias {
                        sc.insert(n.clone(), *t);
                    }
                    names.push(sc);
                    self.collect_block(b, names, scratch, alloc, out);
                    names.pop();
                }
            }
        }
    }

    fn collect_block(
        &mut self,
        b: &Block,
        names: &mut Names,
        scratch: Option<usize>,
        alloc: Option<usize>,
        out: &mut Vec<(usize, Acc)>,
    ) {
        names.push(HashMap::new());
        for s in &b.stmts {
            self.collect_stmt(s, names, scratch, alloc, out);
        }
        if let Some(t) = &b.tail {
            self.expr_accs(t, names, scratch, out);
        }
        names.pop();
    }

    fn place_accs(
        &mut self,
        place: &Expr,
        compound: bool,
        names: &Names,
        scratch: Option<usize>,
        out: &mut Vec<(usize, Acc)>,
    ) {
        match &place.kind {
            ExprKind::Index { base, indices } => {
                if let Some(t) = Self::mem_token(names, base) {
                    out.push((t, Acc::Write));
                    if compound {
                        out.push((t, Acc::Read));
                    }
                }
                for i in indices {
                    self.expr_accs(i, names, scratch, out);
                }
            }
            _ => {
                for s in sub_exprs(place) {
                    self.expr_accs(s, names, scratch, out);
                }
            }
        }
    }

    /// What device function `name` does to its pointer parameters (None: unknown, assume everything).
    fn summary(&mut self, name: &str) -> Option<Summary> {
        if let Some(s) = self.summaries.get(name) {
            return Some(s.clone());
        }
        if self.sum_depth >= MAX_SUMMARY_DEPTH {
            return None;
        }
        let f = self.deps.iter().find(|f| f.name.name == name)?;
        let mut names: Names = vec![HashMap::new()];
        for (i, p) in f.params.iter().enumerate() {
            let t = matches!(p.ty, Type::Ptr { .. } | Type::Shared { .. }).then_some(i);
            names[0].insert(p.name.name.clone(), t);
        }
        let mut out = Vec::new();
        self.sum_depth += 1;
        self.collect_block(&f.body, &mut names, Some(SCRATCH), Some(SCRATCH), &mut out);
        self.sum_depth -= 1;
        let mut s = Summary {
            params: vec![Pend::default(); f.params.len()],
            scratch: Pend::default(),
        };
        for (t, a) in out {
            if t == SCRATCH {
                s.scratch.mark(a);
            } else if let Some(p) = s.params.get_mut(t) {
                p.mark(a);
            }
        }
        self.summaries.insert(name.to_string(), s.clone());
        Some(s)
    }

    // ----- conflicts and barriers

    /// Barriers the accesses need against `st`: each access checks its own level and the pending state of
    /// every hidden ancestor (accesses to the memory before the enclosing scopes began).
    fn needs(&mut self, st: &State, accs: &[(usize, Acc)], span: Span) -> Vec<Need> {
        let mut out = Vec::new();
        for &(l, a) in accs {
            let mut c = Some(l);
            while let Some(lv) = c {
                let own = lv == l;
                c = self.levels.get(lv).and_then(|x| x.parent);
                // Accesses through one `async_` name are one node (copies issued together).
                if own && self.levels[lv].is_async {
                    continue;
                }
                let Some(p) = st.pend.get(&lv).copied() else {
                    continue;
                };
                if !p.conflicts(a) {
                    continue;
                }
                let at = self.levels[lv].at;
                let reason = format!("{} {}", p.reason(a), self.levels[lv].name);
                if at == Perspective::thread(1) {
                    // One thread: program order suffices, except for its own async copies.
                    if p.aw {
                        out.push(Need {
                            at,
                            wait_async: true,
                            reason,
                            atomic: None,
                        });
                    }
                    continue;
                }
                if unsynchronizable(at) {
                    let same_node = p.src.is_some() && p.src == self.active.get(&lv).copied();
                    if !same_node && self.dry == 0 {
                        if p.atomic_involved(a) {
                            self.atomic_error(lv, a, &p, span, None);
                        } else {
                            self.grid_error(lv, &p, span);
                        }
                    }
                    continue;
                }
                out.push(Need {
                    at,
                    wait_async: p.aw,
                    reason,
                    atomic: p.atomic_involved(a).then_some((lv, a, p)),
                });
            }
        }
        out
    }

    fn grid_error(&mut self, lv: usize, p: &Pend, span: Span) {
        let l = &self.levels[lv];
        let mut d = Diagnostic::new(
            "SYNC-GRID",
            span,
            format!(
                "`{}` is used after a partition/claim that {} it at perspective {}, which no barrier can \
                 synchronize",
                l.name,
                if p.w || p.aw { "wrote" } else { "read" },
                l.at
            ),
        )
        .help("finish the work in one kernel without touching the original name again, or split the work into two kernels");
        if let Some(n) = p.src.and_then(|n| self.nodes.get(n)) {
            d = d.note(
                *n,
                format!(
                    "`{}` was partitioned here; its threads span more than one block",
                    l.name
                ),
            );
        }
        if !self.diags.iter().any(|x| x.message == d.message) {
            self.diags.push(d);
        }
    }

    /// `SYNC-ATOMIC`: a plain access after atomics (or an atomic after plain accesses) on `lv` that no barrier
    /// can order: the level spans several blocks (`code` = None), or the wait would have to sit in code at
    /// `code`, narrower than the level's threads.
    fn atomic_error(&mut self, lv: usize, a: Acc, p: &Pend, span: Span, code: Option<Perspective>) {
        let l = &self.levels[lv];
        let what = match a {
            Acc::Read => "read with a plain load after `atomic_*` updates",
            Acc::Write | Acc::AsyncWrite => "written with a plain store after `atomic_*` updates",
            Acc::Atomic => "updated by an `atomic_*` after plain reads/writes",
        };
        let (why, help) = match code {
            None => (
                format!(
                    "which no barrier can order: its threads span more than one block, so other blocks' {} \
                     may not have happened yet (the value differs between threads and runs)",
                    if a == Acc::Atomic {
                        "plain reads/writes"
                    } else {
                        "atomics"
                    }
                ),
                "use the value the atomic returns (`let old = atomic_add(..);`), keep combining with \
                 atomics, or read the result in a second kernel"
                    .to_string(),
            ),
            Some(c) => (
                format!(
                    "but the code here runs at {c}, narrower than {}: the barrier that orders them cannot \
                     go here",
                    l.at
                ),
                format!(
                    "move the access out of the narrower group/split arm into code at {} (the barrier goes \
                     before it), or use the value the atomic returns",
                    l.at
                ),
            ),
        };
        let mut d = Diagnostic::new(
            "SYNC-ATOMIC",
            span,
            format!("`{}` (at perspective {}) is {what}, {why}", l.name, l.at),
        )
        .help(help);
        if let Some(s) = p.asrc.and_then(|i| self.atomic_spans.get(i)) {
            d = d.note(*s, format!("the atomic update of `{}` is here", l.name));
        } else if let Some(n) = p.src.and_then(|n| self.nodes.get(n)) {
            d = d.note(*n, format!("`{}` was accessed in this scope", l.name));
        }
        if !self.diags.iter().any(|x| x.message == d.message) {
            self.diags.push(d);
        }
    }

    /// Places barriers for `needs` before the current statement (when `placeable` allows) and clears what
    /// they cover. Returns the needs it could not place.
    fn place(&mut self, st: &mut State, mut needs: Vec<Need>, span: Span) {
        while !needs.is_empty() {
            // The broadest first; it resolves every need it covers.
            let i = (0..needs.len())
                .max_by_key(|&i| (needs[i].at.level, needs[i].at.n))
                .unwrap_or(0);
            let at = needs[i].at;
            let (covered, rest): (Vec<Need>, Vec<Need>) =
                needs.into_iter().partition(|n| covers(at, n.at));
            needs = rest;
            let wait_async = covered.iter().any(|n| n.wait_async);
            if !covers(self.code, at) {
                if self.dry > 0 {
                    continue;
                }
                if let Some((lv, a, p)) = covered.iter().find_map(|n| n.atomic) {
                    self.atomic_error(lv, a, &p, span, Some(self.code));
                } else {
                    let reasons: Vec<&str> = covered.iter().map(|n| n.reason.as_str()).collect();
                    self.diags.push(
                        Diagnostic::new(
                            "SYNC-PLACE",
                            span,
                            format!(
                                "this access needs a barrier over {at} ({}), but the code here runs at {}",
                                reasons.join(", "),
                                self.code
                            ),
                        )
                        .help(format!("order the accesses in code at {at} or broader (e.g. move them out of the narrower group or split arm)")),
                    );
                }
                continue;
            }
            let mut reasons: Vec<String> = Vec::new();
            for n in covered {
                if !reasons.contains(&n.reason) {
                    reasons.push(n.reason);
                }
            }
            self.sites.push(BarrierSite {
                pos: self.pos(),
                barrier: Barrier { at, wait_async },
                reasons,
            });
            clear(st, &self.levels, at, wait_async);
        }
    }

    fn mark(&mut self, st: &mut State, accs: &[(usize, Acc)], span: Span) {
        let mut asrc = None;
        if accs.iter().any(|(_, a)| *a == Acc::Atomic) {
            let key = self.pos();
            let next = self.atomic_spans.len();
            let i = *self.atomic_keys.entry(key).or_insert(next);
            if i == next {
                self.atomic_spans.push(span);
            }
            asrc = Some(i);
        }
        for &(l, a) in accs {
            let p = st.pend.entry(l).or_default();
            p.mark(a);
            if a == Acc::Atomic && p.asrc.is_none() {
                p.asrc = asrc;
            }
            let mut c = self.levels.get(l).and_then(|x| x.parent);
            while let Some(p) = c {
                let q = st.inner.entry(p).or_default();
                q.mark(a);
                if a == Acc::Atomic && q.asrc.is_none() {
                    q.asrc = asrc;
                }
                c = self.levels.get(p).and_then(|x| x.parent);
            }
        }
    }

    /// An atomic statement: its accesses wait for what they conflict with, then become pending.
    fn simple(&mut self, accs: Vec<(usize, Acc)>, mut st: State, span: Span) -> State {
        let needs = self.needs(&st, &accs, span);
        self.place(&mut st, needs, span);
        self.mark(&mut st, &accs, span);
        st
    }

    fn accs_of(&mut self, exprs: &[&Expr]) -> Vec<(usize, Acc)> {
        let names = std::mem::take(&mut self.names);
        let mut out = Vec::new();
        for e in exprs {
            self.expr_accs(e, &names, Some(self.scratch), &mut out);
        }
        self.names = names;
        out
    }

    /// Before a statement whose body runs at a narrower perspective (`inner`): the waits its accesses need
    /// whose participants are not inside one unit of `inner` must happen here (no barrier in a narrower
    /// branch, which would diverge).
    fn precheck(&mut self, s: &Stmt, inner: &[Perspective], mut st: State) -> State {
        let mut names = std::mem::take(&mut self.names);
        let mut accs = Vec::new();
        let scratch = self.scratch;
        self.collect_stmt(s, &mut names, Some(scratch), None, &mut accs);
        self.names = names;
        let dry = self.dry;
        // Grid-level conflicts are reported by the walk inside, at the access.
        self.dry += 1;
        let needs = self.needs(&st, &accs, s.span);
        self.dry = dry;
        let needs: Vec<Need> = needs
            .into_iter()
            .filter(|n| inner.iter().any(|p| !covers(*p, n.at)))
            .collect();
        self.place(&mut st, needs, s.span);
        st
    }

    // ----- the walk

    fn block(&mut self, b: &Block, mut st: State) -> State {
        self.names.push(HashMap::new());
        let saved = self.cur;
        for (i, s) in b.stmts.iter().enumerate() {
            self.cur = i;
            st = self.stmt(s, st);
        }
        if let Some(t) = &b.tail {
            self.cur = b.stmts.len();
            if st.reach {
                let accs = self.accs_of(&[t]);
                st = self.simple(accs, st, t.span);
            }
        }
        self.cur = saved;
        self.names.pop();
        st
    }

    /// Walks child block `ci` of the current statement.
    fn child(
        &mut self,
        ci: usize,
        b: &Block,
        st: State,
        code: Perspective,
        bind: Option<(&str, Option<usize>)>,
    ) -> State {
        self.path.push(self.cur);
        self.path.push(ci);
        let saved = std::mem::replace(&mut self.code, code);
        let mut sc = HashMap::new();
        if let Some((n, l)) = bind {
            sc.insert(n.to_string(), l);
        }
        self.names.push(sc);
        let out = self.block(b, st);
        self.names.pop();
        self.code = saved;
        self.path.pop();
        self.path.pop();
        out
    }

    fn stmt(&mut self, s: &Stmt, st: State) -> State {
        if !st.reach {
            return st;
        }
        let code = self.code;
        match &s.kind {
            StmtKind::Let { name, ty, init, .. } => {
                let accs = match init {
                    Some(e) => self.accs_of(&[e]),
                    None => Vec::new(),
                };
                // Diagnostics point at the initializer (the access), not at `#[at(..)] let`.
                let sp = init.as_ref().map(|e| e.span).unwrap_or(s.span);
                let st = self.simple(accs, st, sp);
                let l = match ty {
                    Some(Type::Shared { .. }) => {
                        // Keyed by position: the same allocation on every loop iteration.
                        let key = self.pos();
                        Some(self.level(key, &name.name, Perspective::block(1), None, false))
                    }
                    _ => init.as_ref().and_then(|e| Self::mem_token(&self.names, e)),
                };
                self.declare(&name.name, l);
                st
            }
            StmtKind::Assign { place, op, value } => {
                let mut accs = self.accs_of(&[value]);
                let names = std::mem::take(&mut self.names);
                let scratch = self.scratch;
                self.place_accs(place, op.is_some(), &names, Some(scratch), &mut accs);
                self.names = names;
                self.simple(accs, st, s.span)
            }
            StmtKind::Expr(e) => {
                if let ExprKind::Call { path, args, .. } = &e.kind {
                    let n = path.last().map(|p| p.name.as_str());
                    if args.is_empty() && (n == Some("sync_threads") || n == Some("sync_warp")) {
                        // A barrier the user wrote orders plain accesses (not async copies).
                        let at = if n == Some("sync_threads") {
                            Perspective::block(1)
                        } else {
                            Perspective::thread(32)
                        };
                        let mut st = st;
                        clear(&mut st, &self.levels, at, false);
                        return st;
                    }
                }
                let accs = self.accs_of(&[e]);
                self.simple(accs, st, s.span)
            }
            StmtKind::Barrier(b) => {
                let mut st = st;
                clear(&mut st, &self.levels, b.at, b.wait_async);
                st
            }
            StmtKind::Break => {
                if let Some(l) = self.loops.last_mut() {
                    l.breaks.join(&st);
                }
                State::bottom()
            }
            StmtKind::Continue => {
                let mut st = st;
                let need = self
                    .loops
                    .last()
                    .map(|l| l.cond_need.clone())
                    .unwrap_or_default();
                self.place(&mut st, need, s.span);
                if let Some(l) = self.loops.last_mut() {
                    l.conts.join(&st);
                }
                State::bottom()
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let accs = self.accs_of(&[cond]);
                let st = self.simple(accs, st, s.span);
                // READ-UP: the condition is uniform over the code perspective, so barriers over
                // participants ≤ code may go into the branches.
                let mut t = self.child(0, then_block, st.clone(), code, None);
                let e = match else_block {
                    Some(b) => self.child(1, b, st, code, None),
                    None => st,
                };
                t.join(&e);
                t
            }
            StmtKind::While { cond, body } => self.loop_stmt(s, None, Some(cond), body, st),
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let mut es = vec![start, end];
                es.extend(step.iter());
                let accs = self.accs_of(&es);
                let st = self.simple(accs, st, s.span);
                self.loop_stmt(s, Some(&var.name), None, body, st)
            }
            StmtKind::Group { at, body } => {
                let st = self.precheck(s, &[at.perspective], st);
                self.child(0, body, st, at.perspective, None)
            }
            StmtKind::Split { level, arms, .. } => {
                let ps: Vec<Perspective> = arms
                    .iter()
                    .map(|a| Perspective::new(*level, a.size))
                    .collect();
                let st = self.precheck(s, &ps, st);
                // Threads outside every arm run none: the state after is the join with the one before.
                let mut out = st.clone();
                for (i, (a, p)) in arms.iter().zip(ps).enumerate() {
                    let o = self.child(i, &a.body, st.clone(), p, None);
                    out.join(&o);
                }
                out
            }
            StmtKind::Partition {
                target,
                at,
                index,
                new_name,
                body,
            } => {
                let accs = self.accs_of(&[&index.body]);
                let st = self.simple(accs, st, s.span);
                self.scope(s, target, Some(at.perspective), false, new_name, body, st)
            }
            StmtKind::Claim {
                target,
                at,
                new_name,
                body,
            } => self.scope(s, target, Some(at.perspective), false, new_name, body, st),
            StmtKind::Async {
                target,
                new_name,
                body,
            } => self.scope(s, target, None, true, new_name, body, st),
            StmtKind::Unsafe { body } => self.child(0, body, st, code, None),
            // A ring orders its own slots with mbarriers (full/empty per slot): the slot names inside are
            // untracked here. To everything around it, the ring is one node writing all its memories.
            StmtKind::Ring { targets, body, .. } => {
                let accs = targets
                    .iter()
                    .filter_map(|t| Self::lookup(&self.names, t).map(|l| (l, Acc::Write)))
                    .collect();
                let st = self.simple(accs, st, s.span);
                self.child(0, body, st, code, None)
            }
            // Distributed shared memory: ordered by the construct's cluster barriers; to everything around it,
            // one read of the allocation.
            StmtKind::Peer {
                target, rank, body, ..
            } => {
                let mut accs = self.accs_of(&[rank]);
                accs.extend(Self::lookup(&self.names, target).map(|l| (l, Acc::Read)));
                let st = self.simple(accs, st, s.span);
                self.child(0, body, st, code, None)
            }
            StmtKind::RingUse { index, body, .. } => {
                let accs = self.accs_of(&[index]);
                let st = self.simple(accs, st, s.span);
                self.child(0, body, st, code, None)
            }
        }
    }

    /// A `partition`/`claim`/`async_` scope: one node for the target's level; a new level for the body.
    #[allow(clippy::too_many_arguments)]
    fn scope(
        &mut self,
        s: &Stmt,
        target: &Ident,
        at: Option<Perspective>,
        is_async: bool,
        new_name: &Ident,
        body: &Block,
        mut st: State,
    ) -> State {
        let code = self.code;
        let Some(x) = Self::lookup(&self.names, target) else {
            return self.child(0, body, st, code, Some((new_name.name.as_str(), None)));
        };
        let key = self.pos();
        let at = at.unwrap_or(self.levels[x].at);
        let y = self.level(key.clone(), &new_name.name, at, Some(x), is_async);
        let node = self.node(key, s.span);
        st.pend.insert(y, Pend::default());
        st.inner.insert(y, Pend::default());
        st.inner.insert(x, Pend::default());
        let prev = self.active.insert(x, node);
        let mut out = self.child(0, body, st, code, Some((new_name.name.as_str(), Some(y))));
        match prev {
            Some(p) => self.active.insert(x, p),
            None => self.active.remove(&x),
        };
        if out.reach {
            let inner = out.inner.remove(&x).unwrap_or_default();
            let p = out.pend.entry(x).or_default();
            if !inner.is_empty() {
                p.join(&inner);
                p.src = Some(node);
            }
            out.pend.remove(&y);
            out.inner.remove(&y);
        }
        out
    }

    /// One pass over a loop body from head state `head`. Returns (state on the back edge, state leaving
    /// through `break`, state after the condition at the head).
    fn loop_pass(
        &mut self,
        s: &Stmt,
        var: Option<&str>,
        cond: Option<&Expr>,
        body: &Block,
        head: State,
    ) -> (State, State, State) {
        let mut st = head;
        let mut cond_need = Vec::new();
        if let Some(c) = cond {
            // The condition runs at the head: its waits go before the loop (first evaluation) and at the end
            // of the body and before each `continue` (later ones).
            let accs = self.accs_of(&[c]);
            cond_need = self.needs(&st, &accs, c.span);
            self.place(&mut st, cond_need.clone(), c.span);
            self.mark(&mut st, &accs, c.span);
        }
        let after_cond = st.clone();
        self.loops.push(LoopCtx {
            breaks: State::bottom(),
            conts: State::bottom(),
            cond_need: cond_need.clone(),
        });
        let code = self.code;
        let mut out = self.child(0, body, st, code, var.map(|v| (v, None)));
        if !cond_need.is_empty() && out.reach {
            self.path.push(self.cur);
            self.path.push(0);
            let saved = self.cur;
            self.cur = body.stmts.len();
            self.place(&mut out, cond_need, s.span);
            self.cur = saved;
            self.path.pop();
            self.path.pop();
        }
        let ctx = self.loops.pop().unwrap_or(LoopCtx {
            breaks: State::bottom(),
            conts: State::bottom(),
            cond_need: Vec::new(),
        });
        out.join(&ctx.conts);
        (out, ctx.breaks, after_cond)
    }

    /// The loop head's state: the least state ⊇ `pre` that the back edge does not grow. Returns it and the
    /// number of barriers the body then needs.
    fn fix(
        &mut self,
        s: &Stmt,
        var: Option<&str>,
        cond: Option<&Expr>,
        body: &Block,
        pre: &State,
    ) -> (State, usize) {
        let mut head = pre.clone();
        let mut n = 0;
        for _ in 0..MAX_FIX {
            let mark = self.sites.len();
            self.dry += 1;
            let (back, _, _) = self.loop_pass(s, var, cond, body, head.clone());
            self.dry -= 1;
            n = self.sites.len() - mark;
            self.sites.truncate(mark);
            let mut next = head.clone();
            next.join(&back);
            if next == head {
                return (head, n);
            }
            head = next;
        }
        (head, n)
    }

    fn loop_stmt(
        &mut self,
        s: &Stmt,
        var: Option<&str>,
        cond: Option<&Expr>,
        body: &Block,
        pre: State,
    ) -> State {
        // B: waits for what came before the loop go where the body first needs them (inside, every
        // iteration). A: they go before the loop, once. A wins when the body then needs fewer barriers.
        let (mut head, n_b) = self.fix(s, var, cond, body, &pre);
        let mut names = std::mem::take(&mut self.names);
        let mut accs = Vec::new();
        let scratch = self.scratch;
        self.collect_stmt(s, &mut names, Some(scratch), None, &mut accs);
        self.names = names;
        let dry = self.dry;
        self.dry += 1;
        let pre_needs = self.needs(&pre, &accs, s.span);
        self.dry = dry;
        if !pre_needs.is_empty() {
            let mark = self.sites.len();
            let mut pre_a = pre.clone();
            self.dry += 1;
            self.place(&mut pre_a, pre_needs.clone(), s.span);
            self.dry -= 1;
            self.sites.truncate(mark);
            let (head_a, n_a) = self.fix(s, var, cond, body, &pre_a);
            if n_a < n_b {
                let mut p = pre;
                self.place(&mut p, pre_needs, s.span);
                head = head_a;
            }
        }
        let (_, breaks, mut exit) = self.loop_pass(s, var, cond, body, head);
        exit.join(&breaks);
        exit
    }
}

fn push_pend(out: &mut Vec<(usize, Acc)>, t: usize, p: &Pend) {
    for (b, a) in [
        (p.r, Acc::Read),
        (p.w, Acc::Write),
        (p.a, Acc::Atomic),
        (p.aw, Acc::AsyncWrite),
    ] {
        if b {
            out.push((t, a));
        }
    }
}

/// A barrier over one unit of `at` orders every pending access of the levels it covers (async copies only
/// when it first waits for them).
fn clear(st: &mut State, levels: &[MemLevel], at: Perspective, wait_async: bool) {
    for m in [&mut st.pend, &mut st.inner] {
        for (l, p) in m.iter_mut() {
            if levels
                .get(*l)
                .is_some_and(|lv| covers(at, lv.at) && lv.at.level != Level::Grid)
            {
                let aw = p.aw && !wait_async;
                *p = Pend {
                    aw,
                    ..Pend::default()
                };
            }
        }
    }
}
