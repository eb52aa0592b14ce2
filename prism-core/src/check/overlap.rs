//! [T-PARTITION] Partitions whose index closure hands two of its units the same elements.
//!
//! Paper 000 §3.4 leaves the injectivity of index closures to the programmer. This pass proves the
//! opposite for a useful class: when the closure reads the unit only through sub-expressions that are the
//! same for two units (`t / 2`, `t % 32` in a block of 128, `t & !1`), the two units get the same offset
//! at every index, whatever the closure's parameters and the code's uniform values are. Writing through
//! such a view is then a race (reads are fine: several units may read one element).
//!
//! Values are tracked symbolically ([`Sym`]) as functions of a thread's rank in the unit of the code that
//! computed them (`id()`, §3.5): variables bound once by `let` carry their value; anything else the
//! closure reads at a perspective narrower than the code is unknown, and the pass then concludes nothing.
//! The sub-expressions that read only the rank ("atoms") are evaluated exactly for every unit of a launch
//! the contract allows (the smallest, when sizes are not fixed); two units with equal atoms collide.

use super::*;
use std::collections::HashMap;

/// Most units compared (a collision among them is a collision).
pub(super) const MAX_UNITS: u64 = 4096;

/// A value as a function of a thread's rank in the unit of the code that computed it.
#[derive(Clone, Debug)]
pub(super) enum Sym {
    /// `rank / div`: `id()` into a variable whose units hold `div` threads, in code scope `scope`.
    Rank {
        scope: usize,
        div: u64,
    },
    Const(i128),
    /// Not a function of the unit: the same for every unit compared.
    Free,
    /// The index closure's parameter number `k` (the index a write uses).
    Param(usize),
    Bin(BinOp, Box<Sym>, Box<Sym>),
}

impl Sym {
    pub(super) fn has_rank(&self) -> bool {
        match self {
            Sym::Rank { .. } => true,
            Sym::Bin(_, a, b) => a.has_rank() || b.has_rank(),
            _ => false,
        }
    }

    fn has_free(&self) -> bool {
        match self {
            Sym::Free | Sym::Param(_) => true,
            Sym::Bin(_, a, b) => a.has_free() || b.has_free(),
            _ => false,
        }
    }

    /// The maximal sub-expressions that read the rank and nothing free: the value depends on the unit
    /// only through them.
    fn atoms<'s>(&'s self, out: &mut Vec<&'s Sym>) {
        if !self.has_rank() {
            return;
        }
        if !self.has_free() {
            out.push(self);
        } else if let Sym::Bin(_, a, b) = self {
            a.atoms(out);
            b.atoms(out);
        }
    }

    /// Whether the value is known once the rank and the closure's parameters are (nothing `Free`).
    pub(super) fn closed(&self) -> bool {
        match self {
            Sym::Free => false,
            Sym::Bin(_, a, b) => a.closed() && b.closed(),
            _ => true,
        }
    }

    /// The value for the thread of rank `rank`; `None` where PTX's result could differ from the exact one
    /// (outside the i32 range, shifts by 31 or more, division by zero, bit operations on negatives).
    fn eval(&self, rank: u64) -> Option<i128> {
        self.eval_at(rank, &[])
    }

    /// [`Sym::eval`] with the closure's parameters bound to `args`.
    pub(super) fn eval_at(&self, rank: u64, args: &[i128]) -> Option<i128> {
        const LIM: i128 = 1 << 31;
        let v = match self {
            Sym::Rank { div, .. } => (rank / div) as i128,
            Sym::Const(c) => *c,
            Sym::Free => return None,
            Sym::Param(k) => *args.get(*k)?,
            Sym::Bin(op, a, b) => {
                let (a, b) = (a.eval_at(rank, args)?, b.eval_at(rank, args)?);
                let bits = a >= 0 && b >= 0;
                match op {
                    BinOp::Add => a + b,
                    BinOp::Sub => a - b,
                    BinOp::Mul => a * b,
                    BinOp::Div if b != 0 => a / b,
                    BinOp::Rem if b != 0 => a % b,
                    BinOp::BitAnd if bits => a & b,
                    BinOp::BitOr if bits => a | b,
                    BinOp::BitXor if bits => a ^ b,
                    BinOp::Shl if bits && b < 31 => a << b,
                    BinOp::Shr if bits && b < 31 => a >> b,
                    _ => return None,
                }
            }
        };
        (-LIM..LIM).contains(&v).then_some(v)
    }

    fn scopes_are(&self, scope: usize) -> bool {
        match self {
            Sym::Rank { scope: s, .. } => *s == scope,
            Sym::Bin(_, a, b) => a.scopes_are(scope) && b.scopes_are(scope),
            _ => true,
        }
    }
}

/// Two units of a partition that get the same elements; reported at the first write through the view.
#[derive(Clone, Debug)]
pub(super) struct Overlap {
    /// The partition (numbered, so that each is reported once) and its span.
    pub(super) id: usize,
    pub(super) span: Span,
    pub(super) at: Perspective,
    /// The partition's code perspective: its units compute one closure each.
    pub(super) code: Perspective,
    pub(super) target: String,
    pub(super) units: (u64, u64),
    /// Length of the condition stack at the partition: a write under a later condition that may differ
    /// between the units (or in a split arm) may be made by one of them only, and is not reported.
    pub(super) conds: usize,
    /// The closure gives every unit the same offset for the same index (`|x| x` of global memory, the way
    /// to write elements chosen at run time): only a write at an index equal for every unit races.
    pub(super) by_index: bool,
}

impl<'a> Cx<'a> {
    /// Threads in one unit of `p`, with the block size the analysis assumes.
    pub(super) fn unit_threads(&self, p: Perspective) -> Option<u64> {
        let t = self.t_exact.unwrap_or(self.t).max(1) as u64;
        let n = (p.n as u64).max(1);
        match p.level {
            Level::Thread => Some(n),
            Level::Block => n.checked_mul(t),
            // A grid of the contract's exact size, else of two of its block multiples (the contract allows it).
            Level::Grid => {
                let b = self
                    .b_exact
                    .map_or(2 * self.b.max(1) as u64, |b| b.max(1) as u64);
                n.checked_mul(b)?.checked_mul(t)
            }
        }
    }

    /// The value of `e`, computed in code at `code` in the current scope, as a function of the rank;
    /// `params` are the names of an index closure's parameters. `None`: unknown.
    pub(super) fn sym(&self, e: &Expr, code: Perspective, params: &[Ident]) -> Option<Sym> {
        Some(match &e.kind {
            ExprKind::Lit(Lit::Int(v, _)) => Sym::Const(i128::try_from(*v).ok()?),
            ExprKind::Var(id) if params.iter().any(|p| p.name == id.name) => {
                Sym::Param(params.iter().position(|p| p.name == id.name)?)
            }
            ExprKind::Var(id) => {
                let v = &self.vars[self.lookup(&id.name)?];
                match (&v.konst, &v.sym) {
                    (Some(Some(c)), _) => Sym::Const(*c as i128),
                    (Some(None), _) => Sym::Free,
                    _ if self.le(code, v.at) => Sym::Free,
                    // A loop counter whose bounds, or a `let` whose value, every unit of `code` reads
                    // alike.
                    _ if v.uniform_over.is_some_and(|c| self.le(code, c)) => Sym::Free,
                    (None, Some(s)) if s.scopes_are(self.scope) => s.clone(),
                    _ => return None,
                }
            }
            ExprKind::Binary { op, lhs, rhs } => Sym::Bin(
                *op,
                Box::new(self.sym(lhs, code, params)?),
                Box::new(self.sym(rhs, code, params)?),
            ),
            // Widening casts keep the (small, non-negative) values the atoms are limited to.
            ExprKind::Cast { expr, ty } if ty.size() >= 4 && ty.is_int() => {
                self.sym(expr, code, params)?
            }
            ExprKind::Call { path, args, .. } if path.len() == 1 && args.is_empty() => {
                match path[0].name.as_str() {
                    "block_dim" | "grid_dim" => Sym::Free,
                    _ => return None,
                }
            }
            _ => return None,
        })
    }

    /// The narrowest perspective a condition or loop bound reads (`grid[1]` for constants): every unit of
    /// a perspective at least that broad takes the same way. `None` when it calls a function.
    pub(super) fn cond_perspective(&self, e: &Expr) -> Option<Perspective> {
        let mut finest = Some(Perspective::grid(1));
        walk::walk_exprs(e, &mut |x| match &x.kind {
            ExprKind::Call { path, .. }
                if !matches!(
                    path.last().map(|p| p.name.as_str()),
                    Some("block_dim" | "grid_dim")
                ) =>
            {
                finest = None
            }
            ExprKind::Var(id) => {
                let Some(v) = self.lookup(&id.name).map(|i| &self.vars[i]) else {
                    return;
                };
                if v.konst.is_some() {
                    return;
                }
                // A counter or `let` of values broader than its own perspective reads at theirs.
                let at = v.uniform_over.filter(|&u| self.le(v.at, u)).unwrap_or(v.at);
                finest = self.narrower(finest, Some(at));
            }
            _ => {}
        });
        finest
    }

    /// The value `let x = init` binds at perspective `p` (immutable integer bindings only).
    pub(super) fn sym_of_binding(
        &self,
        init: &Expr,
        p: Perspective,
        code: Perspective,
    ) -> Option<Sym> {
        if let ExprKind::Call { path, args, .. } = &init.kind {
            if path.len() == 1 && path[0].name == "id" && args.is_empty() {
                return Some(Sym::Rank {
                    scope: self.scope,
                    div: self.unit_threads(p)?,
                });
            }
        }
        // Rank-free values only when constant: `Free` means uniform over this `code`, which a later use
        // in broader code must not take for its own.
        let s = self.sym(init, code, &[])?;
        (s.has_rank() || s.closed()).then_some(s)
    }

    /// Two `p` units of one `code` unit that the index closure hands the same offsets, if it reads the
    /// unit only through sub-expressions equal for them.
    pub(super) fn partition_overlap(
        &self,
        index: &IndexFn,
        p: Perspective,
        code: Perspective,
    ) -> Option<(u64, u64)> {
        let sym = self.sym(&index.body, code, &index.params)?;
        let mut atoms = Vec::new();
        sym.atoms(&mut atoms);
        if atoms.is_empty() {
            return None;
        }
        let size = self.unit_threads(p)?;
        let units = (self.unit_threads(code)? / size).min(MAX_UNITS);
        let mut seen: HashMap<Vec<i128>, u64> = HashMap::new();
        for u in 0..units {
            let key = atoms
                .iter()
                .map(|a| a.eval(u.checked_mul(size)?))
                .collect::<Option<Vec<_>>>()?;
            if let Some(&first) = seen.get(&key) {
                return Some((first, u));
            }
            seen.insert(key, u);
        }
        None
    }

    /// What T-PARTITION knows of a new view of `vi` (`partition(target, p, index, ..)` in `code` code):
    /// two units with the same elements (`Overlap`), else the closure's exact layout (`Layout`), and the
    /// parent view's overlap that still holds for this one.
    pub(super) fn view_overlaps(
        &self,
        index: &IndexFn,
        (p, code): (Perspective, Perspective),
        vi: Option<usize>,
        partition_id: usize,
        span: Span,
        target: &str,
    ) -> (Option<Overlap>, Option<Layout>, Option<Overlap>) {
        let overlap = self
            .partition_overlap(index, p, code)
            .map(|units| (units, false))
            .or_else(|| {
                // Global memory only: a shared view that every unit sees whole is a claim (`t_partition`).
                let global = matches!(
                    vi.map(|i| &self.vars[i].ty),
                    Some(Ty::Ptr {
                        space: Space::Global,
                        ..
                    })
                );
                global
                    .then(|| self.same_offsets(index, p, code))
                    .flatten()
                    .map(|u| (u, true))
            })
            .map(|(units, by_index)| Overlap {
                id: partition_id,
                span,
                at: p,
                code,
                target: target.to_string(),
                units,
                conds: self.conds.len(),
                by_index,
            });
        let layout = overlap
            .is_none()
            .then(|| self.layout(index, p, code, partition_id, span, target))
            .flatten()
            .map(|mut l| {
                // One index into the view partitioned: its accesses are that view's too.
                if index.params.len() == 1 {
                    l.outer = vi.and_then(|i| self.vars[i].layout.clone()).map(Box::new);
                }
                l
            });
        // A view of a view that every unit sees whole keeps that while this closure tells those units
        // no more apart: it reads only values uniform over their code, and ranks within this code, which
        // repeat in each of them (`|k| lane + k` in every warp of a warp's `|x| x` view). A value that
        // differs between them (a persistent kernel's `|j| tile * T + t * 4 + j`) ends it.
        let inherited = vi
            .and_then(|i| self.vars[i].overlap.clone())
            .filter(|o| !o.by_index || self.sym(&index.body, o.code, &index.params).is_some());
        (overlap, layout, inherited)
    }

    /// Whether every unit of a partition made at `code` (with `conds` conditions open) runs the current
    /// statement: no condition since is narrower than `code` (nor a split arm, nor after a `break`).
    pub(super) fn every_unit_reaches(&self, conds: usize, code: Perspective) -> bool {
        self.conds[conds.min(self.conds.len())..]
            .iter()
            .all(|c| c.is_some_and(|c| self.le(code, c)))
    }

    /// Two units of a `code` unit when the closure gives every `p` unit the same offset for the same
    /// index (it reads no unit: `|x| x`, `|j| base + j` with `base` uniform over `code`).
    pub(super) fn same_offsets(
        &self,
        index: &IndexFn,
        p: Perspective,
        code: Perspective,
    ) -> Option<(u64, u64)> {
        let sym = self.sym(&index.body, code, &index.params)?;
        let units = self.unit_threads(code)? / self.unit_threads(p)?;
        (!sym.has_rank() && units >= 2).then_some((0, 1))
    }

    /// A write through a view whose partition hands two units the same elements: [T-PARTITION].
    /// `indices`: the write's indices, when it names them (a store, not a call argument).
    pub(super) fn overlapping_write(
        &mut self,
        v: &Var,
        span: Span,
        what: &str,
        indices: Option<&[Expr]>,
    ) {
        let Some(o) = v.overlap.clone() else {
            return;
        };
        // A closure that reads no unit leaves the elements to the index: the units race only where it is
        // the same for all of them (constants, values uniform over the partition's code).
        if o.by_index {
            let uniform = indices.is_some_and(|ix| {
                ix.iter()
                    .all(|i| self.sym(i, o.code, &[]).is_some_and(|s| !s.has_rank()))
            });
            if !uniform {
                return;
            }
        }
        if !self.every_unit_reaches(o.conds, o.code) || !self.overlaps_reported.insert(o.id) {
            return;
        }
        let (a, b) = o.units;
        let (why, note) = if o.by_index {
            (
                "every unit writes it at an index that is the same for all of them".to_string(),
                format!("the closure reads no unit: every {} unit sees the same elements, so the index must tell them apart", o.at),
            )
        } else {
            (
                "its offsets are equal for both at every index".to_string(),
                format!("the closure reads the unit only through values that are the same for units {a} and {b}"),
            )
        };
        self.errors.push(
            err(
                "T-PARTITION",
                span,
                format!(
                    "{what} races: the index closure of `partition({}, {}, ..)` gives {} units {a} and {b} the same elements of `{}` ({why})",
                    o.target, o.at, o.at, o.target
                ),
            )
            .note(o.span, note)
            .help(format!("give each unit its own elements (`|j| t * K + j` for K elements each), or write from one unit (`claim` the memory, or a split arm); a view that is only read may be shared: pass it to a `*const` parameter{}", if o.at.level == Level::Block && o.code.level == Level::Grid { "; a kernel that runs one block declares `blocks = 1`" } else { "" })),
        );
    }
}
