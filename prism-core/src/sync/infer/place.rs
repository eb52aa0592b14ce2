//! Which pending accesses a new access conflicts with, where the barrier goes, and the errors when none can
//! order them (SYNC-GRID, SYNC-ATOMIC).

use super::*;

impl Infer<'_> {
    /// Barriers the accesses need against `st`: each access checks its own level and the pending state of
    /// every hidden ancestor (accesses to the memory before the enclosing scopes began).
    pub(super) fn needs(&mut self, st: &State, accs: &[(usize, Acc)], span: Span) -> Vec<Need> {
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
                            soft: self.levels[lv].soft,
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
                    soft: self.levels[lv].soft,
                    atomic: p.atomic_involved(a).then_some((lv, a, p)),
                });
            }
        }
        out
    }

    pub(super) fn grid_error(&mut self, lv: usize, p: &Pend, span: Span) {
        let l = &self.levels[lv];
        let mut d = Diagnostic::new(
            "SYNC-GRID",
            span,
            format!(
                "`{}` is used after it was {} at perspective {}, by threads of more than one block, which no block barrier can order",
                l.name,
                if p.w || p.aw { "written" } else { "read" },
                l.at
            ),
        )
        .help(match self.cluster {
            Some(c) if l.at == Perspective::block(c) => format!(
                "its threads are the blocks of one cluster: call `sync_cluster()` between the accesses (in block[{c}] code)"
            ),
            _ => "finish the work in one kernel without touching the original name again, or split the work into two kernels".to_string(),
        });
        if let Some(n) = p.src.and_then(|n| self.nodes.get(n)) {
            d = d.note(
                *n,
                format!(
                    "`{}` was partitioned here; its threads span more than one block",
                    l.name
                ),
            );
        } else if let Some(s) = p.first.and_then(|i| self.access_spans.get(i)) {
            // A plain access, perhaps later in a loop body: then it is the previous iteration's.
            d = d.note(
                *s,
                format!(
                    "the earlier access of `{}`, by threads that span more than one block (if it comes after this line, in a loop around both, it is the previous iteration's)",
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
    pub(super) fn atomic_error(
        &mut self,
        lv: usize,
        a: Acc,
        p: &Pend,
        span: Span,
        code: Option<Perspective>,
    ) {
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
        if let Some(s) = p.asrc.and_then(|i| self.access_spans.get(i)) {
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
    pub(super) fn place(&mut self, st: &mut State, mut needs: Vec<Need>, span: Span) {
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
                // A shadow level's wait goes only where a barrier can (`cross`): drop it here, and give
                // the real waits it swallowed their own chance (they may be narrower).
                let (soft, covered): (Vec<Need>, Vec<Need>) =
                    covered.into_iter().partition(|n| n.soft);
                if !soft.is_empty() {
                    needs.extend(covered);
                    continue;
                }
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

    pub(super) fn mark(&mut self, st: &mut State, accs: &[(usize, Acc)], span: Span) {
        if accs.is_empty() {
            return;
        }
        // The statement's span, once per position in the function (the fixpoint walks loops again).
        let key = self.pos();
        let next = self.access_spans.len();
        let i = *self.access_keys.entry(key).or_insert(next);
        if i == next {
            self.access_spans.push(span);
        }
        let asrc = Some(i);
        for &(l, a) in accs {
            let p = st.pend.entry(l).or_default();
            p.mark(a);
            p.first.get_or_insert(i);
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
    pub(super) fn simple(&mut self, accs: Vec<(usize, Acc)>, mut st: State, span: Span) -> State {
        let needs = self.needs(&st, &accs, span);
        self.place(&mut st, needs, span);
        self.mark(&mut st, &accs, span);
        st
    }

    pub(super) fn accs_of(&mut self, exprs: &[&Expr]) -> Vec<(usize, Acc)> {
        let names = std::mem::take(&mut self.names);
        let mut out = Vec::new();
        for e in exprs {
            self.expr_accs(e, &names, Some(self.scratch), &mut out);
        }
        self.names = names;
        out
    }
}

pub(super) fn push_pend(out: &mut Vec<(usize, Acc)>, t: usize, p: &Pend) {
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
pub(super) fn clear(st: &mut State, levels: &[MemLevel], at: Perspective, wait_async: bool) {
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
