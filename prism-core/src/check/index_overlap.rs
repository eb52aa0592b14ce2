//! [T-PARTITION] Writes whose indices reach another unit's elements.
//!
//! A partition's closure hands each unit its elements as a function of the index (`|j| t * 4 + j`); the
//! units' elements are disjoint only for the indices the program uses (paper 000 §3.4 asks the closure to be
//! injective over units and indices). When the closure is known exactly (a function of the rank and its
//! parameters, [`Sym::closed`]) and a write every unit makes uses indices known at compile time (constants,
//! const generics, the counters of `for` loops over constant ranges), the pass computes the element each
//! unit writes at each such index, over all the view's writes so far: two units on one element race
//! (thread 0's `ct[4]` is thread 1's `ct[0]` above).

use super::*;
use std::collections::{HashMap, HashSet};

/// Most (unit, index) pairs evaluated per partition; past it the pass concludes nothing more.
const MAX_PAIRS: usize = 1 << 20;
/// Most index tuples one write enumerates (the product of its loop counters' ranges).
const MAX_TUPLES: usize = 1024;

/// A partition view whose closure gives every unit's element at every index exactly.
#[derive(Clone, Debug)]
pub(super) struct Layout {
    /// The partition (numbered as for [`Overlap`], each reported once) and its span.
    pub(super) id: usize,
    pub(super) span: Span,
    pub(super) at: Perspective,
    pub(super) code: Perspective,
    pub(super) target: String,
    pub(super) sym: Sym,
    /// Threads per unit, and units per `code` unit (at most the overlap test's bound).
    pub(super) size: u64,
    pub(super) units: u64,
    pub(super) conds: usize,
    /// Loops open where the partition was made: an `if` inside a loop inside the partition runs both
    /// arms in one launch (one per iteration), so only `if`s outside such loops keep writes apart.
    pub(super) loop_depth: u32,
    /// The layout of the view this one partitions, when it has one.
    pub(super) outer: Option<Box<Layout>>,
}

/// The arms of uniform `if`s a write is in: `(if, 0)` then, `(if, 1)` else.
type Arms = Vec<(usize, u8)>;

/// How a unit reaches an element.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) enum Reach {
    Read,
    Write,
    /// `atomic_*`: concurrent with other units' atomics, a race with their plain reads and writes.
    Atomic,
}

/// One unit's write (or read, or atomic update) of an element: the unit, its indices, where, and the arms
/// of uniform `if`s it is in.
#[derive(Clone)]
struct Write {
    unit: u64,
    indices: Vec<i128>,
    span: Span,
    arms: Arms,
    kind: Reach,
}

impl Write {
    /// Both may run in one launch: no `if` puts them in different arms.
    fn together(&self, other: &Write) -> bool {
        self.arms
            .iter()
            .all(|(i, a)| other.arms.iter().all(|(j, b)| i != j || a == b))
    }

    /// Two units' accesses of one element that race: both may run, and they are not both reads nor both
    /// atomics.
    fn races(&self, other: &Write) -> bool {
        let both = |k| self.kind == k && other.kind == k;
        self.unit != other.unit
            && !both(Reach::Read)
            && !both(Reach::Atomic)
            && self.together(other)
    }
}

/// The elements a partition's writes (and reads) have reached, with their units.
#[derive(Default)]
pub(super) struct Reached {
    seen: HashSet<(Vec<i128>, Arms, Reach)>,
    elements: HashMap<i128, Vec<Write>>,
    pairs: usize,
}

impl<'a> Cx<'a> {
    /// The view's layout, when its closure is known exactly and tells its units apart.
    pub(super) fn layout(
        &self,
        index: &IndexFn,
        p: Perspective,
        code: Perspective,
        id: usize,
        span: Span,
        target: &str,
    ) -> Option<Layout> {
        let sym = self.sym(&index.body, code, &index.params)?;
        if !sym.closed() || !sym.has_rank() {
            return None;
        }
        let size = self.unit_threads(p)?;
        let units = (self.unit_threads(code)? / size).min(MAX_UNITS);
        (units >= 2).then(|| Layout {
            id,
            span,
            at: p,
            code,
            target: target.to_string(),
            sym,
            size,
            units,
            conds: self.conds.len(),
            loop_depth: self.loop_depth,
            outer: None,
        })
    }

    /// The initializer of immutable integer `let` `vi` when it reads only `for` counters over constant
    /// ranges, constants and other such `let`s, with at least one counter (`let k = i * 2 + 1;`).
    pub(super) fn of_counters(
        &self,
        init: &Expr,
        vi: usize,
    ) -> Option<std::rc::Rc<super::OfCounters>> {
        let mut refs: Vec<(String, usize)> = Vec::new();
        let mut ok = true;
        let mut counters = false;
        walk::walk_vars(init, &mut |name| {
            // The binding itself is not declared yet at its initializer: skip a same-named outer one.
            match self.lookup(name).filter(|&i| i != vi) {
                Some(i) => {
                    let v = &self.vars[i];
                    counters |= v.range.is_some() || v.of_counters.is_some();
                    ok &= v.range.is_some()
                        || v.of_counters.is_some()
                        || matches!(v.konst, Some(Some(_)))
                        || matches!(v.sym, Some(Sym::Const(_)));
                    if !refs.iter().any(|(n, _)| n == name) {
                        refs.push((name.to_string(), i));
                    }
                }
                None => ok = false,
            }
        });
        (ok && counters).then(|| std::rc::Rc::new((init.clone(), refs)))
    }

    /// The counters variable `vi` reads, through `let`s of counters (`of_counters`); `false` when it is
    /// not known at compile time.
    fn index_counters(&self, vi: usize, counters: &mut Vec<(usize, Vec<i64>)>, depth: u32) -> bool {
        let v = &self.vars[vi];
        if let Some(r) = &v.range {
            if !counters.iter().any(|(c, _)| *c == vi) {
                counters.push((vi, r.clone()));
            }
            return true;
        }
        if matches!(v.konst, Some(Some(_))) || matches!(v.sym, Some(Sym::Const(_))) {
            return true;
        }
        match &v.of_counters {
            Some(d) if depth < 16 => {
                d.1.iter()
                    .all(|(_, i)| self.index_counters(*i, counters, depth + 1))
            }
            _ => false,
        }
    }

    /// The value of variable `vi` for the counters' `values`.
    fn index_value(&self, vi: usize, values: &[(usize, i64)], depth: u32) -> Option<i64> {
        let v = &self.vars[vi];
        if v.range.is_some() {
            return values.iter().find(|(c, _)| *c == vi).map(|(_, x)| *x);
        }
        if let Some(Some(c)) = v.konst {
            return Some(c);
        }
        if let Some(Sym::Const(c)) = v.sym {
            return i64::try_from(c).ok();
        }
        let d = v.of_counters.as_ref().filter(|_| depth < 16)?;
        let lookup = |n: &str| {
            let (_, i) = d.1.iter().find(|(m, _)| m == n)?;
            self.index_value(*i, values, depth + 1)
        };
        crate::consteval::eval_const(&d.0, &lookup).ok()
    }

    /// The index tuples `indices` takes in one unit: every combination of the `for` counters it reads
    /// (constant ranges only, also through `let`s of them) with its constants; `None` when an index reads
    /// anything else.
    pub(super) fn index_tuples(&self, indices: &[Expr]) -> Option<Vec<Vec<i128>>> {
        let mut counters: Vec<(usize, Vec<i64>)> = Vec::new();
        let mut known = true;
        for e in indices {
            walk::walk_vars(e, &mut |name| match self.lookup(name) {
                Some(i) => known &= self.index_counters(i, &mut counters, 0),
                None => known = false,
            });
        }
        if !known {
            return None;
        }
        let count = counters
            .iter()
            .try_fold(1usize, |n, (_, r)| n.checked_mul(r.len()))?;
        if count > MAX_TUPLES {
            return None;
        }
        let mut out = Vec::with_capacity(count);
        for k in 0..count {
            // Counter values for combination `k` (mixed radix over the ranges).
            let mut rest = k;
            let values: Vec<(usize, i64)> = counters
                .iter()
                .map(|(c, r)| {
                    let v = r[rest % r.len()];
                    rest /= r.len();
                    (*c, v)
                })
                .collect();
            let consts = |n: &str| {
                self.lookup(n)
                    .and_then(|i| self.index_value(i, &values, 0))
                    .or_else(|| (self.consts())(n))
            };
            let tuple = indices
                .iter()
                .map(|e| {
                    crate::consteval::eval_const(e, &consts)
                        .ok()
                        .map(i128::from)
                })
                .collect::<Option<Vec<_>>>()?;
            out.push(tuple);
        }
        Some(out)
    }

    /// A write through `v` at `indices` (of `width` consecutive elements: `store4`) that reaches an
    /// element another unit writes or reads: [T-PARTITION].
    pub(super) fn index_overlap(
        &mut self,
        v: &Var,
        span: Span,
        what: &str,
        indices: &[Expr],
        width: i128,
    ) {
        self.index_access(v, span, what, (indices, width), Reach::Write);
    }

    /// An `atomic_*` through `v` at `indices` of an element another unit reads or writes plainly:
    /// [T-PARTITION] (atomics are concurrent only with atomics).
    pub(super) fn index_atomic(&mut self, v: &Var, span: Span, what: &str, indices: &[Expr]) {
        self.index_access(v, span, what, (indices, 1), Reach::Atomic);
    }

    /// A read through `v` at `indices` (of `width` consecutive elements: `load4`) of an element another
    /// unit writes: [T-PARTITION]. Reading elements no unit writes through the view (a halo of a read-only
    /// view) is fine.
    pub(super) fn index_read(&mut self, v: &Var, span: Span, indices: &[Expr], width: i128) {
        let what = format!("reading `{}`", v.name);
        self.index_read_as(v, span, &what, indices, width);
    }

    /// [`Self::index_read`] described as `what` (a device function's read through a parameter).
    pub(super) fn index_read_as(
        &mut self,
        v: &Var,
        span: Span,
        what: &str,
        indices: &[Expr],
        width: i128,
    ) {
        self.index_access(v, span, what, (indices, width), Reach::Read);
    }

    fn index_access(
        &mut self,
        v: &Var,
        span: Span,
        what: &str,
        (indices, width): (&[Expr], i128),
        read: Reach,
    ) {
        let Some(l) = v.layout.clone() else {
            return;
        };
        let Some(tuples) = self.index_tuples(indices) else {
            return;
        };
        self.layout_access(&l, span, what, (tuples, width), read);
    }

    /// An access through a view with layout `l` at each of `tuples` (each `width` consecutive elements),
    /// then the same elements as indices of the view `l` partitions, if that one has a layout too: an
    /// inner view reaching past its outer unit's elements (`|j| lane * 4 + j` inside a warp's
    /// `|j| w * 32 + j`) meets the next outer unit's there.
    fn layout_access(
        &mut self,
        l: &Layout,
        span: Span,
        what: &str,
        (tuples, width): (Vec<Vec<i128>>, i128),
        read: Reach,
    ) {
        let before = self.errors.len();
        self.view_access(l, span, what, (&tuples, width), read);
        // One error per access: the inner view's own race first.
        if self.errors.len() > before {
            return;
        }
        if let Some(outer) = &l.outer {
            // Every inner unit's elements, as indices of the outer view (the same in every outer unit:
            // the inner closure reads only ranks within its code and constants).
            let mut elements = std::collections::BTreeSet::new();
            for t in &tuples {
                for u in 0..l.units {
                    let Some(e0) = l.sym.eval_at(u * l.size, t) else {
                        continue;
                    };
                    elements
                        .extend((e0..e0 + width).take(MAX_TUPLES.saturating_sub(elements.len())));
                }
            }
            let outer_tuples = elements.into_iter().map(|e| vec![e]).collect();
            self.layout_access(outer, span, what, (outer_tuples, 1), read);
        }
    }

    /// [`Self::layout_access`] for `l` itself.
    fn view_access(
        &mut self,
        l: &Layout,
        span: Span,
        what: &str,
        (tuples, width): (&[Vec<i128>], i128),
        read: Reach,
    ) {
        if self.overlaps_reported.contains(&l.id) || !self.every_unit_reaches(l.conds, l.code) {
            return;
        }
        let arms: Arms = self
            .if_arms
            .iter()
            .filter(|(_, _, depth)| *depth <= l.loop_depth)
            .map(|&(i, a, _)| (i, a))
            .collect();
        let reached = self.reached.entry(l.id).or_default();
        let mut clash = None;
        'tuples: for t in tuples {
            if !reached.seen.insert((t.clone(), arms.clone(), read)) {
                continue;
            }
            for u in 0..l.units {
                reached.pairs += 1;
                if reached.pairs > MAX_PAIRS {
                    break 'tuples;
                }
                let Some(e0) = l.sym.eval_at(u * l.size, t) else {
                    continue;
                };
                let w = Write {
                    unit: u,
                    indices: t.clone(),
                    span,
                    arms: arms.clone(),
                    kind: read,
                };
                for e in e0..e0 + width {
                    let writers = reached.elements.entry(e).or_default();
                    if let Some(o) = writers.iter().find(|o| o.races(&w)) {
                        clash = Some((e, o.clone(), w));
                        break 'tuples;
                    }
                    if !writers
                        .iter()
                        .any(|o| o.unit == u && o.arms == w.arms && o.kind == w.kind)
                    {
                        writers.push(w.clone());
                    }
                }
            }
        }
        let Some((e, first, second)) = clash else {
            return;
        };
        self.overlaps_reported.insert(l.id);
        let (earlier, earlier_what) = (
            first.span,
            match first.kind {
                Reach::Read => "the other access (a read)",
                Reach::Atomic => "the other access (an atomic update)",
                Reach::Write => "the other write",
            },
        );
        let (a, b) = if first.unit < second.unit {
            (first, second)
        } else {
            (second, first)
        };
        let ix = |t: &[i128]| {
            t.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let access = |w: &Write| match w.kind {
            Reach::Read => "reads",
            Reach::Write => "writes",
            Reach::Atomic => "atomically updates",
        };
        let plain_writes = a.kind == Reach::Write && b.kind == Reach::Write;
        let atomic = a.kind == Reach::Atomic || b.kind == Reach::Atomic;
        let (verb, note_verb) = if !plain_writes {
            (
                format!(
                    "{} unit {} at index [{}] {} and unit {} at index [{}] {} element {e} of `{}`",
                    l.at,
                    a.unit,
                    ix(&a.indices),
                    access(&a),
                    b.unit,
                    ix(&b.indices),
                    access(&b),
                    l.target
                ),
                "uses",
            )
        } else {
            (
                format!(
                    "{} unit {} at index [{}] and unit {} at index [{}] both write element {e} of `{}`",
                    l.at, a.unit, ix(&a.indices), b.unit, ix(&b.indices), l.target
                ),
                "writes",
            )
        };
        let mut d = err(
            "T-PARTITION",
            span,
            format!(
                "{what} races: through the index closure of `partition({}, {}, ..)`, {verb}",
                l.target, l.at
            ),
        )
        .note(l.span, format!("each unit's elements are this closure's values at the indices it {note_verb}: units {} and {} meet at element {e}", a.unit, b.unit));
        let at = |s: Span| (s.start().line, s.start().column);
        if at(earlier) != at(span) {
            d = d.note(earlier, earlier_what);
        }
        self.errors.push(d.help(if atomic {
            "an atomic and a plain access of one element race (atomics are concurrent only with atomics): update the element with atomics only, or reach only the unit's own elements"
        } else if !plain_writes {
            "read only the unit's own elements, or elements no unit writes through this view; a barrier does not make this legal: a partition hands each unit its own elements for all of its scope, so read a neighbour's elements in a later phase (after this partition's scope: a new `partition`, or the memory itself)"
        } else {
            "index only the unit's own elements (for `|j| t * K + j`, indices 0..K), or give each unit more (a larger K); a barrier between the writes does not make this legal: a partition hands each unit its own elements for all of its scope, so a later phase that writes other elements partitions again"
        }));
    }
}
