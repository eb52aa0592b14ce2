//! Items: a kernel or device function's attributes (`threads`, `blocks`, `requires`, `instances`, ..),
//! signature and perspectives.

use super::*;

/// What the attribute's arguments say (unset ones are `None` / empty).
#[derive(Default)]
struct FnAttrs {
    requires: Option<(Vec<SpannedPerspective>, Span)>,
    smem: Option<Box<Expr>>,
    threads: Option<Box<Expr>>,
    blocks: Option<Box<Expr>>,
    cluster: Option<Box<Expr>>,
    returns: Option<SpannedPerspective>,
    instances: Vec<Instance>,
    aliases: Vec<Instance>,
}

impl Cx {
    pub(super) fn function(
        &mut self,
        kind: FnKind,
        args: &[syn::Expr],
        item: &syn::ItemFn,
    ) -> Option<Function> {
        let sig = &item.sig;
        let name = ident(&sig.ident);
        let attr_name = if kind == FnKind::Kernel {
            "prism_kernel"
        } else {
            "prism_device"
        };
        let FnAttrs {
            requires,
            smem,
            threads,
            blocks,
            cluster,
            returns,
            instances,
            aliases,
        } = self.fn_attrs(attr_name, args);
        let (requires, requires_span) = match requires {
            Some(r) => r,
            None => {
                self.err(
                    syntax(
                        sig.ident.span(),
                        format!("`{attr_name}` needs `requires(..)`"),
                    )
                    .help("e.g. `#[prism_kernel(requires(grid[1], block[1], thread[32]))]`"),
                );
                (Vec::new(), sig.ident.span())
            }
        };

        // Signature.
        if let Some(t) = &sig.asyncness {
            self.err(
                syntax(t.span, "`async fn` is not supported")
                    .help("write `async_(x, |y| { .. })` inside the body"),
            );
        }
        if let Some(t) = &sig.unsafety {
            self.err(
                syntax(t.span, "`unsafe fn` is not supported")
                    .help("put `unsafe { asm!(..) }` inside a `#[prism_device]` function"),
            );
        }
        if let Some(v) = &sig.variadic {
            self.err(syntax(v.span(), "variadic functions are not supported"));
        }
        if let Some(w) = &sig.generics.where_clause {
            self.err(syntax(w.span(), "`where` clauses are not supported"));
        }
        let type_params = self.type_params(sig);
        let const_params = self.const_params(sig);
        let mut params = Vec::new();
        for a in &sig.inputs {
            match a {
                syn::FnArg::Receiver(r) => self.err(
                    syntax(r.span(), "`self` parameters are not supported")
                        .help("Prism functions are free functions"),
                ),
                syn::FnArg::Typed(pt) => match self.param(pt) {
                    Ok(p) => params.push(p),
                    Err(d) => self.err(d),
                },
            }
        }
        let ret = match &sig.output {
            syn::ReturnType::Default => None,
            syn::ReturnType::Type(_, t) => match self.ty(t, TyCtx::Return) {
                Ok(ty) => Some((ty, t.span())),
                Err(d) => {
                    self.err(d);
                    None
                }
            },
        };
        let body = match self.block(&item.block) {
            Ok(b) => b,
            Err(d) => {
                self.err(d);
                Block {
                    stmts: Vec::new(),
                    tail: None,
                    span: item.block.span(),
                }
            }
        };
        Some(Function {
            kind,
            name,
            is_pub: matches!(item.vis, syn::Visibility::Public(_)),
            type_params,
            type_args: Vec::new(),
            source: None,
            const_params,
            requires,
            requires_span,
            smem,
            threads,
            blocks,
            cluster,
            returns,
            instances,
            aliases,
            params,
            ret,
            body,
            span: sig.ident.span(),
            origin: None,
        })
    }

    /// The arguments of `#[prism_kernel(..)]` / `#[prism_device(..)]`: `requires(..)` and `key = value`s.
    fn fn_attrs(&mut self, attr_name: &str, args: &[syn::Expr]) -> FnAttrs {
        let mut at = FnAttrs::default();
        // Each argument once: a repeated one would silently override the first.
        let mut seen: Vec<(String, proc_macro2::Span)> = Vec::new();
        for a in args {
            let key = match a {
                syn::Expr::Call(c) => path_ident(&c.func).map(|i| i.to_string()),
                syn::Expr::Assign(asg) => path_ident(&asg.left).map(|i| i.to_string()),
                _ => None,
            };
            if let Some(k) = key {
                if let Some((_, first)) = seen.iter().find(|(n, _)| *n == k) {
                    let mut d = syntax(a.span(), format!("`{k}` is given twice in `{attr_name}`"))
                        .help("give each argument once");
                    d = d.note(*first, "first given here");
                    self.err(d);
                    continue;
                }
                seen.push((k, a.span()));
            }
            match a {
                syn::Expr::Call(c) if path_ident(&c.func).is_some_and(|i| i == "requires") => {
                    let mut ps = Vec::new();
                    for p in &c.args {
                        match self.perspective(p) {
                            Ok(p) => ps.push(p),
                            Err(d) => self.err(d),
                        }
                    }
                    if c.args.is_empty() {
                        self.err(syntax(c.span(), "`requires()` needs at least one perspective")
                            .help("e.g. `requires(grid[1], block[1], thread[32])`"));
                    }
                    at.requires = Some((ps, c.span()));
                }
                syn::Expr::Assign(asg) => {
                    let Some(key) = path_ident(&asg.left) else {
                        self.err(syntax(asg.left.span(), "expected `smem`, `threads`, `blocks`, `returns` or `instances`"));
                        continue;
                    };
                    match key.to_string().as_str() {
                        "smem" | "threads" | "blocks" | "cluster" => {
                            let e = match self.expr(&asg.right) {
                                Ok(e) => Box::new(e),
                                Err(d) => {
                                    self.err(d);
                                    continue;
                                }
                            };
                            match key.to_string().as_str() {
                                "smem" => at.smem = Some(e),
                                "threads" => at.threads = Some(e),
                                "cluster" => at.cluster = Some(e),
                                _ => at.blocks = Some(e),
                            }
                        }
                        "returns" => match self.perspective(&asg.right) {
                            Ok(p) => at.returns = Some(p),
                            Err(d) => self.err(d),
                        },
                        "instances" => match self.instances(&asg.right) {
                            Ok(v) => at.instances = v,
                            Err(d) => self.err(d),
                        },
                        "aliases" => match self.instances(&asg.right) {
                            Ok(v) => at.aliases = v,
                            Err(d) => self.err(d),
                        },
                        other => self.err(
                            syntax(key.span(), format!("unknown `{attr_name}` argument `{other}`"))
                                .help("expected `requires(..)`, `smem = N`, `threads = N`, `blocks = N`, `cluster = N`, `returns = P`, `instances = [..]` or `aliases = [..]`"),
                        ),
                    }
                }
                other => self.err(
                    syntax(other.span(), format!("unexpected `{attr_name}` argument"))
                        .help("expected `requires(..)`, `smem = N`, `threads = N`, `blocks = N`, `cluster = N`, `returns = P`, `instances = [..]` or `aliases = [..]`"),
                ),
            }
        }
        at
    }

    /// The type parameters `T: Bound` (before the const ones; rule GENERIC), and what each stands for in this
    /// parse: the instantiation's type, else the bound's first member.
    fn type_params(&mut self, sig: &syn::Signature) -> Vec<TypeParam> {
        let mut out = Vec::new();
        let mut seen_const = false;
        for g in &sig.generics.params {
            let tp = match g {
                syn::GenericParam::Const(_) => {
                    seen_const = true;
                    continue;
                }
                syn::GenericParam::Type(tp) => tp,
                _ => continue,
            };
            if seen_const {
                self.err(
                    Diagnostic::new(
                        "GENERIC",
                        tp.ident.span(),
                        "type parameters must come before const parameters",
                    )
                    .help("write `fn f<T: Num, const N: u32>`; calls and instances list the types first"),
                );
            }
            if let Some(d) = &tp.default {
                self.err(Diagnostic::new(
                    "GENERIC",
                    d.span(),
                    "type parameter defaults are not supported",
                ));
            }
            let bounds: Vec<&syn::TypeParamBound> = tp.bounds.iter().collect();
            let bound = match bounds.as_slice() {
                [syn::TypeParamBound::Trait(t)] if t.path.get_ident().is_some() => t
                    .path
                    .get_ident()
                    .and_then(|i| TypeBound::from_name(&i.to_string()))
                    .map(|b| (b, t.path.span())),
                _ => None,
            };
            let Some((bound, bound_span)) = bound else {
                let span = if bounds.is_empty() {
                    tp.ident.span()
                } else {
                    tp.bounds.span()
                };
                self.err(
                    Diagnostic::new(
                        "GENERIC",
                        span,
                        format!(
                            "type parameter `{}` needs one bound naming the types it admits",
                            tp.ident
                        ),
                    )
                    .help(bounds_help()),
                );
                continue;
            };
            out.push(TypeParam {
                name: ident(&tp.ident),
                bound,
                bound_span,
            });
        }
        let types = match &self.types {
            Some(t) if t.len() == out.len() => t.clone(),
            Some(t) => {
                self.err(Diagnostic::new(
                    "GENERIC",
                    sig.ident.span(),
                    format!(
                        "`{}` has {} type parameter(s), {} type argument(s) given",
                        sig.ident,
                        out.len(),
                        t.len()
                    ),
                ));
                Vec::new()
            }
            None => out.iter().map(|p| p.bound.members()[0]).collect(),
        };
        self.tsubst = out
            .iter()
            .zip(types)
            .map(|(p, t)| (p.name.name.clone(), t))
            .collect();
        out
    }

    /// The const generic parameters (integers, no defaults); anything else is a SYNTAX error.
    fn const_params(&mut self, sig: &syn::Signature) -> Vec<ConstParam> {
        let mut const_params = Vec::new();
        for g in &sig.generics.params {
            match g {
                syn::GenericParam::Type(_) => {}
                syn::GenericParam::Const(c) => {
                    let ty = match &c.ty {
                        syn::Type::Path(p) if p.qself.is_none() => p
                            .path
                            .get_ident()
                            .and_then(|i| scalar_from_name(&i.to_string())),
                        _ => None,
                    };
                    match ty {
                        Some(ty) if ty.is_int() => const_params.push(ConstParam {
                            name: ident(&c.ident),
                            ty,
                        }),
                        _ => self.err(syntax(
                            c.ty.span(),
                            "const generic parameters must have type u32, i32, u64 or i64",
                        )),
                    }
                    if c.default.is_some() {
                        self.err(
                            syntax(c.ident.span(), "const generic defaults are not supported")
                                .help("list the values in `instances = [..]`"),
                        );
                    }
                }
                other => self.err(
                    syntax(other.span(), "only type and const generic parameters are supported")
                        .help("write `T: Num` or `const N: u32` and list the instances in `instances = [..]`"),
                ),
            }
        }
        const_params
    }

    pub(super) fn instances(&mut self, e: &syn::Expr) -> PResult<Vec<Instance>> {
        let syn::Expr::Array(arr) = e else {
            return Err(syntax(
                e.span(),
                "`instances` must be a list: `[(64, 64), (128, 128)]` or `[4, 8]`",
            ));
        };
        let mut out = Vec::new();
        for el in &arr.elems {
            let parts: Vec<&syn::Expr> = match el {
                syn::Expr::Tuple(t) => t.elems.iter().collect(),
                syn::Expr::Paren(p) => vec![&*p.expr],
                other => vec![other],
            };
            let mut values = Vec::new();
            let mut types = Vec::new();
            for p in parts {
                // A type name is a type argument (they come first; `crate::mono` checks the order).
                if let Some(t) = path_ident(p).and_then(|i| scalar_from_name(&i.to_string())) {
                    if !values.is_empty() {
                        return Err(Diagnostic::new(
                            "GENERIC",
                            p.span(),
                            "type arguments come before const arguments: `(f32, 4)`",
                        ));
                    }
                    types.push(t);
                    continue;
                }
                let e = self.expr(p)?;
                values.push(eval_const(&e, &|_| None)?);
            }
            out.push(Instance {
                types,
                values,
                span: el.span(),
            });
        }
        Ok(out)
    }

    /// `grid[n]`, `block[n]`, `thread[n]`, `warp`, `warp[k]`, `warpgroup`; `n` constant without const generics.
    pub(super) fn perspective(&mut self, e: &syn::Expr) -> PResult<SpannedPerspective> {
        let span = e.span();
        let bad = || {
            syntax(span, "expected a perspective").help(
                "write `grid[n]`, `block[n]`, `thread[n]`, `warp`, `warp[k]` or `warpgroup` with a constant size",
            )
        };
        let (name, size) = match e {
            syn::Expr::Index(ix) => match path_ident(&ix.expr) {
                Some(i) => (i.clone(), Some(&*ix.index)),
                None => return Err(bad()),
            },
            other => match path_ident(other) {
                Some(i) => (i.clone(), None),
                None => return Err(bad()),
            },
        };
        let name_s = name.to_string();
        let n = match size {
            Some(s) => {
                let ex = self.expr(s)?;
                let v = eval_const(&ex, &|_| None).map_err(|d| {
                    d.help("perspective sizes must be constant expressions without const generics (e.g. `thread[4 * 32]`)")
                })?;
                if v < 1 || v > u32::MAX as i64 {
                    return Err(syntax(
                        s.span(),
                        format!("perspective size {v} must be at least 1 and fit in u32"),
                    ));
                }
                Some(v as u32)
            }
            None => None,
        };
        let (level, n) = match (name_s.as_str(), n) {
            ("grid", Some(n)) => (Level::Grid, n),
            ("block", Some(n)) => (Level::Block, n),
            ("thread", Some(n)) => (Level::Thread, n),
            ("warp", None) => (Level::Thread, 32),
            ("warp", Some(k)) => match k.checked_mul(32) {
                Some(n) => (Level::Thread, n),
                None => return Err(syntax(span, "perspective size too large")),
            },
            ("warpgroup", None) => (Level::Thread, 128),
            ("grid" | "block" | "thread", None) => {
                return Err(syntax(span, format!("`{name_s}` needs a size"))
                    .help(format!("write `{name_s}[1]`")))
            }
            _ => return Err(bad()),
        };
        Ok(SpannedPerspective {
            perspective: Perspective::new(level, n),
            span,
        })
    }

    /// `#[at(P)]` among `attrs`; other attributes (docs) are ignored, unknown ones rejected.
    pub(super) fn at_attr(
        &mut self,
        attrs: &[syn::Attribute],
    ) -> PResult<Option<SpannedPerspective>> {
        let mut at = None;
        for a in attrs {
            if a.path().is_ident("at") {
                let syn::Meta::List(l) = &a.meta else {
                    return Err(syntax(
                        a.span(),
                        "`#[at]` needs a perspective: `#[at(thread[1])]`",
                    ));
                };
                let e: syn::Expr = syn::parse2(l.tokens.clone())
                    .map_err(|e| syntax(e.span(), format!("in `#[at(..)]`: {e}")))?;
                if at.is_some() {
                    return Err(syntax(a.span(), "more than one `#[at(..)]`"));
                }
                at = Some(self.perspective(&e)?);
            } else if a.path().is_ident("doc") || a.path().is_ident("allow") {
                continue;
            } else {
                return Err(syntax(a.span(), "unsupported attribute")
                    .help("only `#[at(perspective)]` is allowed here"));
            }
        }
        Ok(at)
    }

    pub(super) fn param(&mut self, pt: &syn::PatType) -> PResult<Param> {
        let at = self.at_attr(&pt.attrs)?;
        let name = match &*pt.pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                if let Some(m) = &pi.mutability {
                    return Err(syntax(m.span, "`mut` parameters are not supported")
                        .help("copy the parameter into a `let mut` variable"));
                }
                ident(&pi.ident)
            }
            other => {
                return Err(syntax(other.span(), "parameters must be plain names")
                    .help("write `name: type`"))
            }
        };
        let ty = self.ty(&pt.ty, TyCtx::Param)?;
        Ok(Param {
            name,
            ty,
            at,
            span: pt.span(),
        })
    }
}

/// The bounds a type parameter may name, for help texts.
pub(super) fn bounds_help() -> String {
    let list: Vec<String> = TypeBound::ALL
        .iter()
        .map(|b| {
            let m: Vec<&str> = b.members().iter().map(|t| t.rust_name()).collect();
            format!("`{b}` ({})", m.join(", "))
        })
        .collect();
    format!("write `T: Num`; the bounds are {}", list.join(", "))
}
