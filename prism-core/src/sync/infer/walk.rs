//! The walk itself: blocks, statements, scopes, and loops to a fixed point.

use super::*;

impl Infer<'_> {
    /// Before a statement whose body runs at a narrower perspective (`inner`): the waits its accesses need
    /// whose participants are not inside one unit of `inner` must happen here (no barrier in a narrower
    /// branch, which would diverge).
    pub(super) fn precheck(&mut self, s: &Stmt, inner: &[Perspective], mut st: State) -> State {
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

    pub(super) fn block(&mut self, b: &Block, mut st: State) -> State {
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
    pub(super) fn child(
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

    pub(super) fn stmt(&mut self, s: &Stmt, st: State) -> State {
        if !st.reach {
            return st;
        }
        let code = self.code;
        match &s.kind {
            StmtKind::Let { .. }
            | StmtKind::Assign { .. }
            | StmtKind::Expr(_)
            | StmtKind::Barrier(_)
            | StmtKind::Break
            | StmtKind::Continue => self.plain_stmt(s, st),
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

    /// The statements without a body: lets, assignments, calls, barriers, `break` and `continue`.
    fn plain_stmt(&mut self, s: &Stmt, st: State) -> State {
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
                    if args.is_empty() && n == Some("sync_cluster") {
                        // `barrier.cluster.arrive.release` + `wait.acquire`: every block of the cluster
                        // has made its earlier accesses (global and shared) before any goes on.
                        if let Some(c) = self.cluster {
                            let mut st = st;
                            clear(&mut st, &self.levels, Perspective::block(c), false);
                            return st;
                        }
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
            _ => st,
        }
    }

    /// A `partition`/`claim`/`async_` scope: one node for the target's level; a new level for the body.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scope(
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
        let shadow = self.shadow(s, &key, x, y);
        let node = self.node(key, s.span);
        st.pend.insert(y, Pend::default());
        st.inner.insert(y, Pend::default());
        if let Some(c) = shadow {
            st.pend.insert(c, Pend::default());
        }
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
            if let Some(c) = shadow {
                out.pend.remove(&c);
                out.inner.remove(&c);
            }
        }
        out
    }

    /// One pass over a loop body from head state `head`. Returns (state on the back edge, state leaving
    /// through `break`, state after the condition at the head).
    pub(super) fn loop_pass(
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
    pub(super) fn fix(
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

    pub(super) fn loop_stmt(
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
