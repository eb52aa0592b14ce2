//! Statements: blocks, `let`, expression statements, `if`, `split` (a `match`), and the constructs
//! (`group`, `partition`, `claim`, `async_`, rings, ..) with their closures.

use super::*;

/// What a construct call (`group`, `partition`, ..) in statement position is.
pub(super) fn construct_name(e: &syn::Expr) -> Option<String> {
    if let syn::Expr::Call(c) = e {
        if let Some(i) = path_ident(&c.func) {
            let n = i.to_string();
            if matches!(
                n.as_str(),
                "group"
                    | "partition"
                    | "claim"
                    | "async_"
                    | "split"
                    | "ring"
                    | "fill"
                    | "drain"
                    | "turn"
                    | "peer"
            ) {
                return Some(n);
            }
        }
    }
    None
}

impl Cx {
    pub(super) fn block(&mut self, b: &syn::Block) -> PResult<Block> {
        self.enter(b.brace_token.span.join())?;
        let r = self.block_inner(b);
        self.leave();
        r
    }

    pub(super) fn block_inner(&mut self, b: &syn::Block) -> PResult<Block> {
        let mut stmts = Vec::new();
        let mut tail = None;
        let n = b.stmts.len();
        for (i, s) in b.stmts.iter().enumerate() {
            let last = i + 1 == n;
            let r = match s {
                syn::Stmt::Local(l) => self.local(l).map(Some),
                syn::Stmt::Item(it) => Err(syntax(
                    it.span(),
                    "items inside a Prism function are not supported",
                )
                .help("define device functions at module level with `#[prism_device]`")),
                syn::Stmt::Macro(m) => self.asm_macro(&m.mac, &m.attrs).map(|e| {
                    Some(Stmt {
                        span: e.span,
                        kind: StmtKind::Expr(e),
                    })
                }),
                syn::Stmt::Expr(e, semi) => {
                    if semi.is_none() && last && is_value_tail(e) {
                        match self.expr(e) {
                            Ok(v) => {
                                tail = Some(Box::new(v));
                                Ok(None)
                            }
                            Err(d) => Err(d),
                        }
                    } else {
                        self.stmt_expr(e).map(Some)
                    }
                }
            };
            match r {
                Ok(Some(s)) => stmts.push(s),
                Ok(None) => {}
                Err(d) => {
                    // Keep going: report independent errors in later statements too, unless the depth limit
                    // was hit (then every enclosing statement would repeat it).
                    let deep = self.depth >= MAX_DEPTH;
                    self.err(d);
                    if deep {
                        break;
                    }
                }
            }
        }
        Ok(Block {
            stmts,
            tail,
            span: b.brace_token.span.join(),
        })
    }

    pub(super) fn local(&mut self, l: &syn::Local) -> PResult<Stmt> {
        let at = self.at_attr(&l.attrs)?;
        let (pat, ty) = match &l.pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        let (name, mutable) = match pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                (ident(&pi.ident), pi.mutability.is_some())
            }
            other => {
                return Err(syntax(other.span(), "patterns in `let` are not supported")
                    .help("bind one name per `let`: `let x = ..;`"))
            }
        };
        let ty = match ty {
            Some(t) => Some(self.ty(t, TyCtx::Let)?),
            None => None,
        };
        let init = match &l.init {
            Some(init) => {
                if let Some((_, d)) = &init.diverge {
                    return Err(syntax(d.span(), "`let .. else` is not supported"));
                }
                Some(self.expr(&init.expr)?)
            }
            None => None,
        };
        Ok(Stmt {
            kind: StmtKind::Let {
                name,
                mutable,
                ty,
                at,
                init,
            },
            span: l.span(),
        })
    }

    pub(super) fn no_attrs(&self, attrs: &[syn::Attribute]) -> PResult<()> {
        match attrs.first() {
            Some(a) => Err(syntax(a.span(), "attributes are not supported here")
                .help("`#[at(..)]` goes on `let` statements and parameters")),
            None => Ok(()),
        }
    }

    pub(super) fn stmt_expr(&mut self, e: &syn::Expr) -> PResult<Stmt> {
        self.enter(e.span())?;
        let r = self.stmt_expr_inner(e);
        self.leave();
        r
    }

    pub(super) fn stmt_expr_inner(&mut self, e: &syn::Expr) -> PResult<Stmt> {
        let span = e.span();
        let kind = match e {
            syn::Expr::Assign(a) => {
                self.no_attrs(&a.attrs)?;
                StmtKind::Assign { place: self.place(&a.left)?, op: None, value: self.expr(&a.right)? }
            }
            syn::Expr::Binary(b) if compound_op(&b.op).is_some() => {
                self.no_attrs(&b.attrs)?;
                StmtKind::Assign { place: self.place(&b.left)?, op: compound_op(&b.op), value: self.expr(&b.right)? }
            }
            syn::Expr::If(i) => return self.if_stmt(i),
            syn::Expr::While(w) => {
                self.no_attrs(&w.attrs)?;
                if let Some(l) = &w.label {
                    return Err(syntax(l.span(), "loop labels are not supported"));
                }
                StmtKind::While { cond: self.expr(&w.cond)?, body: self.block(&w.body)? }
            }
            syn::Expr::ForLoop(f) => {
                self.no_attrs(&f.attrs)?;
                if let Some(l) = &f.label {
                    return Err(syntax(l.span(), "loop labels are not supported"));
                }
                let var = match &*f.pat {
                    syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() && pi.mutability.is_none() => {
                        ident(&pi.ident)
                    }
                    other => return Err(syntax(other.span(), "the loop variable must be a plain name")),
                };
                let (range, step) = match &*f.expr {
                    syn::Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 && m.turbofish.is_none() => {
                        (&*m.receiver, Some(self.expr(&m.args[0])?))
                    }
                    other => (other, None),
                };
                let range = strip_paren(range);
                let (start, end) = match range {
                    syn::Expr::Range(r) => {
                        if matches!(r.limits, syn::RangeLimits::Closed(_)) {
                            return Err(syntax(r.span(), "inclusive ranges `a..=b` are not supported")
                                .help("write `a..b + 1`"));
                        }
                        match (&r.start, &r.end) {
                            (Some(s), Some(e)) => (self.expr(s)?, self.expr(e)?),
                            _ => return Err(syntax(r.span(), "`for` ranges need both bounds: `a..b`")),
                        }
                    }
                    other => {
                        return Err(syntax(other.span(), "`for` loops iterate over ranges only")
                            .help("write `for i in a..b` or `for i in (a..b).step_by(s)`"))
                    }
                };
                StmtKind::For { var, start, end, step, body: self.block(&f.body)? }
            }
            syn::Expr::Break(b) => {
                if b.label.is_some() || b.expr.is_some() {
                    return Err(syntax(span, "`break` takes no label or value here"));
                }
                StmtKind::Break
            }
            syn::Expr::Continue(c) => {
                if c.label.is_some() {
                    return Err(syntax(span, "`continue` takes no label here"));
                }
                StmtKind::Continue
            }
            syn::Expr::Match(m) => return self.split(m),
            syn::Expr::Unsafe(u) => {
                self.no_attrs(&u.attrs)?;
                StmtKind::Unsafe { body: self.block(&u.block)? }
            }
            syn::Expr::Call(c) if construct_name(e).is_some() => return self.construct(c),
            syn::Expr::Block(b) => {
                return Err(syntax(b.span(), "bare blocks are not supported")
                    .help("remove the braces, or write `group(perspective, || { .. });`"))
            }
            syn::Expr::Loop(l) => {
                return Err(syntax(l.loop_token.span, "`loop` is not supported").help("write `while true { .. }`"))
            }
            syn::Expr::Return(r) => {
                return Err(syntax(r.span(), "`return` is not supported")
                    .help("end a device function with its value as the tail expression; restructure with `if`/`else`"))
            }
            other => StmtKind::Expr(self.expr(other)?),
        };
        Ok(Stmt { kind, span })
    }

    pub(super) fn if_stmt(&mut self, i: &syn::ExprIf) -> PResult<Stmt> {
        self.no_attrs(&i.attrs)?;
        let cond = self.expr(&i.cond)?;
        let then_block = self.block(&i.then_branch)?;
        let else_block = match &i.else_branch {
            None => None,
            Some((_, e)) => match &**e {
                syn::Expr::Block(b) => {
                    self.no_attrs(&b.attrs)?;
                    Some(self.block(&b.block)?)
                }
                syn::Expr::If(inner) => {
                    // `else if` becomes an else block holding one `if`.
                    self.enter(inner.span())?;
                    let s = self.if_stmt(inner);
                    self.leave();
                    let s = s?;
                    Some(Block {
                        span: s.span,
                        stmts: vec![s],
                        tail: None,
                    })
                }
                other => return Err(syntax(other.span(), "expected a block after `else`")),
            },
        };
        Ok(Stmt {
            kind: StmtKind::If {
                cond,
                then_block,
                else_block,
            },
            span: i.span(),
        })
    }

    pub(super) fn split(&mut self, m: &syn::ExprMatch) -> PResult<Stmt> {
        self.no_attrs(&m.attrs)?;
        let help = "write `match split(thread) { 32 => { .. } 1 => { .. } }` (levels: thread, block, warp, warpgroup)";
        let not_split = || {
            syntax(m.expr.span(), "`match` is only supported on `split(level)`").help(
                "branch on a value with `if x == 0 { .. } else if x == 1 { .. } else { .. }`; split \
                 the threads with `match split(thread) { 32 => { .. } 1 => { .. } }`",
            )
        };
        let syn::Expr::Call(c) = strip_paren(&m.expr) else {
            return Err(not_split());
        };
        if path_ident(&c.func).is_none_or(|i| i != "split") || c.args.len() != 1 {
            return Err(not_split());
        }
        let lv = &c.args[0];
        let (level, unit) = match path_ident(lv).map(|i| i.to_string()).as_deref() {
            Some("thread") => (Level::Thread, 1),
            Some("block") => (Level::Block, 1),
            Some("grid") => (Level::Grid, 1),
            Some("warp") => (Level::Thread, 32),
            Some("warpgroup") => (Level::Thread, 128),
            _ => {
                return Err(syntax(
                    lv.span(),
                    "expected a level: `thread`, `block`, `warp` or `warpgroup`",
                )
                .help(help))
            }
        };
        let mut arms = Vec::new();
        for arm in &m.arms {
            if let Some((i, _)) = &arm.guard {
                return Err(syntax(i.span, "`if` guards are not allowed in split arms").help(help));
            }
            let size = match &arm.pat {
                syn::Pat::Lit(syn::PatLit {
                    lit: syn::Lit::Int(li),
                    ..
                }) => {
                    let v = li
                        .base10_parse::<u32>()
                        .map_err(|_| syntax(li.span(), "split arm size must be a u32 literal"))?;
                    if v == 0 {
                        return Err(syntax(li.span(), "split arm size must be at least 1"));
                    }
                    v.checked_mul(unit)
                        .ok_or_else(|| syntax(li.span(), "split arm size too large"))?
                }
                other => {
                    return Err(
                        syntax(other.span(), "split arms are integer literal sizes").help(
                            "e.g. `32 => { .. }`; every arm is a separate group of units (no `_`)",
                        ),
                    )
                }
            };
            // A block, or one statement-like expression (`2 => match split(warp) { .. },`), as closures.
            let body = self.closure_block(&arm.body, "a split arm")?;
            arms.push(SplitArm {
                size,
                size_span: arm.pat.span(),
                body,
            });
        }
        if arms.is_empty() {
            return Err(syntax(m.span(), "`split` needs at least one arm").help(help));
        }
        Ok(Stmt {
            kind: StmtKind::Split { level, unit, arms },
            span: m.span(),
        })
    }

    /// A closure argument of a construct: its parameter names and body.
    pub(super) fn closure<'a>(
        &mut self,
        e: &'a syn::Expr,
        what: &str,
        nparams: Option<usize>,
    ) -> PResult<(Vec<Ident>, &'a syn::Expr)> {
        let syn::Expr::Closure(c) = strip_paren(e) else {
            return Err(syntax(e.span(), format!("expected a closure for {what}")));
        };
        if c.capture.is_some()
            || c.asyncness.is_some()
            || c.constness.is_some()
            || c.movability.is_some()
            || c.lifetimes.is_some()
        {
            return Err(syntax(
                c.span(),
                format!("{what}: write a plain closure `|..| ..`"),
            ));
        }
        if let syn::ReturnType::Type(..) = c.output {
            return Err(syntax(
                c.output.span(),
                format!("{what}: closure return types are not supported"),
            ));
        }
        let mut params = Vec::new();
        for p in &c.inputs {
            match p {
                syn::Pat::Ident(pi)
                    if pi.by_ref.is_none() && pi.subpat.is_none() && pi.mutability.is_none() =>
                {
                    params.push(ident(&pi.ident))
                }
                other => {
                    return Err(syntax(
                        other.span(),
                        format!("{what}: closure parameters must be plain names"),
                    ))
                }
            }
        }
        if let Some(n) = nparams {
            if params.len() != n {
                return Err(syntax(
                    c.or1_token.span,
                    format!(
                        "{what} takes {n} closure parameter{}, found {}",
                        if n == 1 { "" } else { "s" },
                        params.len()
                    ),
                ));
            }
        }
        Ok((params, &c.body))
    }

    pub(super) fn closure_block(&mut self, body: &syn::Expr, what: &str) -> PResult<Block> {
        match strip_paren(body) {
            syn::Expr::Block(b) if b.label.is_none() => self.block(&b.block),
            // rustfmt rewrites `|y| { match split(..) { .. } }` to `|y| match split(..) { .. }`: a body that
            // is one statement-like expression is that statement.
            other @ (syn::Expr::Match(_)
            | syn::Expr::If(_)
            | syn::Expr::While(_)
            | syn::Expr::ForLoop(_)
            | syn::Expr::Call(_)
            | syn::Expr::Unsafe(_)
            | syn::Expr::Assign(_)) => {
                let stmt = self.stmt_expr(other)?;
                Ok(Block {
                    span: stmt.span,
                    stmts: vec![stmt],
                    tail: None,
                })
            }
            other => Err(syntax(
                other.span(),
                format!("{what}: the body must be a block `{{ .. }}`"),
            )),
        }
    }

    pub(super) fn target(&mut self, e: &syn::Expr, what: &str) -> PResult<Ident> {
        path_ident(e).map(ident).ok_or_else(|| {
            syntax(
                e.span(),
                format!("the first argument of `{what}` must be a variable name"),
            )
        })
    }

    pub(super) fn construct(&mut self, c: &syn::ExprCall) -> PResult<Stmt> {
        self.no_attrs(&c.attrs)?;
        let span = c.span();
        let name = path_ident(&c.func)
            .map(|i| i.to_string())
            .unwrap_or_default();
        let args: Vec<&syn::Expr> = c.args.iter().collect();
        let arity = |n: usize, shape: &str| construct_arity(&name, span, args.len(), n, shape);
        let kind = match name.as_str() {
            "group" => {
                arity(2, "group(thread[1], || { .. })")?;
                let at = self.perspective(args[0])?;
                let (_, body) = self.closure(args[1], "`group`", Some(0))?;
                StmtKind::Group {
                    at,
                    body: self.closure_block(body, "`group`")?,
                }
            }
            "partition" => {
                arity(
                    4,
                    "partition(x, thread[1], |i| offset + i, |x_thread| { .. })",
                )?;
                self.partition_construct(&args)?
            }
            "claim" => {
                arity(3, "claim(x, thread[32], |x_warp| { .. })")?;
                let target = self.target(args[0], "claim")?;
                let at = self.perspective(args[1])?;
                let (mut np, body) = self.closure(args[2], "the `claim` body", Some(1))?;
                let new_name = np.remove(0);
                StmtKind::Claim {
                    target,
                    at,
                    new_name,
                    body: self.closure_block(body, "`claim`")?,
                }
            }
            "async_" => {
                arity(2, "async_(x, |x_async| { .. })")?;
                let target = self.target(args[0], "async_")?;
                let (mut np, body) = self.closure(args[1], "the `async_` body", Some(1))?;
                let new_name = np.remove(0);
                StmtKind::Async {
                    target,
                    new_name,
                    body: self.closure_block(body, "`async_`")?,
                }
            }
            "ring" => {
                arity(3, "ring(STAGES, (a, b), |r| { .. })")?;
                let stages = self.expr(args[0])?;
                let targets = match strip_paren(args[1]) {
                    syn::Expr::Tuple(t) => t
                        .elems
                        .iter()
                        .map(|e| self.target(e, "ring"))
                        .collect::<PResult<Vec<_>>>()?,
                    e => vec![self.target(e, "ring")?],
                };
                let (mut np, body) = self.closure(args[2], "the `ring` body", Some(1))?;
                StmtKind::Ring {
                    stages,
                    targets,
                    name: np.remove(0),
                    body: self.closure_block(body, "`ring`")?,
                }
            }
            "peer" => {
                arity(3, "peer(s, rank, |s_peer| { .. })")?;
                let target = self.target(args[0], "peer")?;
                let rank = self.expr(args[1])?;
                let (mut np, body) = self.closure(args[2], "the `peer` body", Some(1))?;
                StmtKind::Peer {
                    target,
                    rank,
                    new_name: np.remove(0),
                    body: self.closure_block(body, "`peer`")?,
                }
            }
            "fill" | "drain" | "turn" => self.ring_use_construct(&name, &args, span)?,
            _ => {
                return Err(syntax(
                    span,
                    "`split` is used as `match split(level) { n => { .. } }`",
                ));
            }
        };
        Ok(Stmt { kind, span })
    }

    /// `partition(x, at, |i| index, |x_unit| { .. })` (T-PARTITION), its arity already checked.
    fn partition_construct(&mut self, args: &[&syn::Expr]) -> PResult<StmtKind> {
        let target = self.target(args[0], "partition")?;
        let at = self.perspective(args[1])?;
        let (iparams, ibody) = self.closure(args[2], "the `partition` index function", None)?;
        if iparams.is_empty() {
            return Err(syntax(
                args[2].span(),
                "the `partition` index function needs at least one parameter",
            )
            .help("e.g. `|i| offset + i`"));
        }
        let index = IndexFn {
            params: iparams,
            body: Box::new(self.expr(ibody)?),
            span: args[2].span(),
        };
        let (mut np, body) = self.closure(args[3], "the `partition` body", Some(1))?;
        let new_name = np.remove(0);
        Ok(StmtKind::Partition {
            target,
            at,
            index,
            new_name,
            body: self.closure_block(body, "`partition`")?,
        })
    }

    /// `fill(r, i, |slots| ..)`, `drain(r, i, |slots| ..)` and `turn(r, consumer, || ..)`: a side's step of
    /// a ring.
    fn ring_use_construct(
        &mut self,
        name: &str,
        args: &[&syn::Expr],
        span: Span,
    ) -> PResult<StmtKind> {
        let arity = |n: usize, shape: &str| construct_arity(name, span, args.len(), n, shape);
        Ok(match name {
            "fill" | "drain" => {
                arity(3, &format!("{name}(r, i, |a_slot, b_slot| {{ .. }})"))?;
                let ring = self.target(args[0], name)?;
                let index = self.expr(args[1])?;
                let what = format!("the `{name}` body");
                let (names, body) = self.closure(args[2], &what, None)?;
                if names.is_empty() {
                    return Err(syntax(
                        args[2].span(),
                        format!(
                            "`{name}` binds one name per memory of the ring: `|a_slot, b_slot| ..`"
                        ),
                    ));
                }
                StmtKind::RingUse {
                    op: if name == "fill" {
                        RingOp::Fill
                    } else {
                        RingOp::Drain
                    },
                    ring,
                    index,
                    names,
                    body: self.closure_block(body, &format!("`{name}`"))?,
                }
            }
            // `turn`: the only other name this is called with.
            _ => {
                arity(3, "turn(r, consumer, || { .. })")?;
                let ring = self.target(args[0], name)?;
                let index = self.expr(args[1])?;
                let (names, body) = self.closure(args[2], "the `turn` body", Some(0))?;
                debug_assert!(names.is_empty());
                StmtKind::RingUse {
                    op: RingOp::Turn,
                    ring,
                    index,
                    names,
                    body: self.closure_block(body, "`turn`")?,
                }
            }
        })
    }
}

/// A construct's argument count, or the error that shows its shape.
fn construct_arity(name: &str, span: Span, found: usize, n: usize, shape: &str) -> PResult<()> {
    if found == n {
        Ok(())
    } else {
        Err(
            syntax(span, format!("`{name}` takes {n} arguments, found {found}"))
                .help(format!("write `{shape}`")),
        )
    }
}

/// A block's last expression without `;` is its value (a device function's result) unless it is a
/// statement-like construct. A trailing `if` is a value only when it has an `else` and every branch is a
/// single non-call expression (then it is a select); otherwise it is an `if` statement.
pub(super) fn is_value_tail(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::While(_)
        | syn::Expr::ForLoop(_)
        | syn::Expr::Match(_)
        | syn::Expr::Unsafe(_)
        | syn::Expr::Block(_)
        | syn::Expr::Loop(_)
        | syn::Expr::Assign(_)
        | syn::Expr::Break(_)
        | syn::Expr::Continue(_)
        | syn::Expr::Return(_)
        | syn::Expr::Macro(_) => false,
        syn::Expr::Binary(b) => compound_op(&b.op).is_none(),
        syn::Expr::Call(_) => construct_name(e).is_none(),
        syn::Expr::If(i) => {
            // A branch that is itself a statement (`match split`, a loop, a nested `if` without a value)
            // makes the whole `if` a statement.
            let branch_ok = |b: &syn::Block| {
                single_tail(b).is_some_and(|t| {
                    is_value_tail(t)
                        && !matches!(
                            t,
                            syn::Expr::Call(_) | syn::Expr::Macro(_) | syn::Expr::Assign(_)
                        )
                })
            };
            match &i.else_branch {
                None => false,
                Some((_, els)) => {
                    branch_ok(&i.then_branch)
                        && match &**els {
                            syn::Expr::Block(b) => branch_ok(&b.block),
                            inner @ syn::Expr::If(_) => is_value_tail(inner),
                            _ => false,
                        }
                }
            }
        }
        _ => true,
    }
}
