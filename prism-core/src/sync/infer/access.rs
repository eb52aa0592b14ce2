//! The accesses a statement or expression makes: memory levels by name, intrinsic effects, device-function
//! summaries.

use super::*;

impl Infer<'_> {
    pub(super) fn lookup(names: &Names, id: &Ident) -> Option<usize> {
        names
            .iter()
            .rev()
            .find_map(|s| s.get(&id.name))
            .copied()
            .flatten()
    }

    pub(super) fn mem_token(names: &Names, e: &Expr) -> Option<usize> {
        match &e.kind {
            ExprKind::Var(id) => Self::lookup(names, id),
            _ => None,
        }
    }

    /// Accesses `e` makes, as (token, kind); tokens come from `names`.
    pub(super) fn expr_accs(
        &mut self,
        e: &Expr,
        names: &Names,
        scratch: Option<usize>,
        out: &mut Vec<(usize, Acc)>,
    ) {
        match &e.kind {
            ExprKind::Index { base, indices } => {
                match Self::mem_token(names, base) {
                    Some(t) => self.push_acc(out, t, Acc::Read),
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
                            (Some(t), Some((_, k))) => self.push_acc(out, t, Acc::from(*k)),
                            // A memory name where no access is declared: count it as a read.
                            (Some(t), None) => self.push_acc(out, t, Acc::Read),
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
                            if let Some(c) = self.cross_of(t) {
                                push_pend(out, c, &p);
                            }
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
    pub(super) fn collect_stmt(
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

    pub(super) fn collect_block(
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

    pub(super) fn place_accs(
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
                    self.push_acc(out, t, Acc::Write);
                    if compound {
                        self.push_acc(out, t, Acc::Read);
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
    pub(super) fn summary(&mut self, name: &str) -> Option<Summary> {
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
}
