//! Rust tokens → [`crate::ast`], following `docs/SYNTAX.md`.
//!
//! syn parses the tokens as ordinary Rust; this module then maps the subset that has a Prism meaning onto the
//! syntax tree and rejects everything else with a `SYNTAX` diagnostic that says what to write instead. It
//! never panics: the token stream is first checked for nesting depth and operator runs (syn's parser is
//! recursive), and the conversion itself counts its recursion depth.

use crate::ast::*;
use crate::consteval::eval_const;
use crate::Diagnostic;
use proc_macro2::{Span, TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::Token;

/// Deepest nesting of expressions/blocks accepted (the checker and emitter recurse over the tree, so they may
/// rely on it: every tree `parse` returns is at most this deep).
pub const MAX_DEPTH: usize = 128;

/// Deepest nesting of delimiters (`()`, `[]`, `{}`) accepted before syn sees the tokens: syn's parser recurses
/// per group with large frames, and must not overflow a 2 MiB thread stack in debug builds.
pub const MAX_GROUP_DEPTH: usize = 64;

type PResult<T> = Result<T, Diagnostic>;

fn syntax(span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::new("SYNTAX", span, msg)
}

fn from_syn(e: syn::Error) -> Vec<Diagnostic> {
    e.into_iter()
        .map(|e| syntax(e.span(), e.to_string()))
        .collect()
}

/// Parses one function: `attr` is the argument tokens of `#[prism_kernel(..)]`/`#[prism_device(..)]`, `item`
/// the `fn` item.
pub fn parse_function(
    kind: FnKind,
    attr: TokenStream,
    item: TokenStream,
) -> Result<Function, Vec<Diagnostic>> {
    precheck(&attr)?;
    precheck(&item)?;
    let args =
        syn::parse::Parser::parse2(Punctuated::<syn::Expr, Token![,]>::parse_terminated, attr)
            .map_err(from_syn)?;
    let item: syn::ItemFn = syn::parse2(item).map_err(from_syn)?;
    let args: Vec<syn::Expr> = args.into_iter().collect();
    let mut cx = Cx {
        depth: 0,
        errors: Vec::new(),
    };
    let f = cx.function(kind, &args, &item);
    match f {
        Some(f) if cx.errors.is_empty() => Ok(f),
        _ => {
            if cx.errors.is_empty() {
                cx.errors.push(syntax(
                    item.sig.ident.span(),
                    "could not parse this function",
                ));
            }
            Err(cx.errors)
        }
    }
}

/// Parses every `#[prism_kernel(..)]` / `#[prism_device(..)]` function in a Rust source text (other items are
/// ignored). For tests, fuzzing and tools.
pub fn parse_source(src: &str) -> Result<Vec<Function>, Vec<Diagnostic>> {
    let ts: TokenStream = src.parse().map_err(|e: proc_macro2::LexError| {
        vec![syntax(e.span(), format!("cannot lex source: {e}"))]
    })?;
    precheck(&ts)?;
    let file: syn::File = syn::parse2(ts).map_err(from_syn)?;
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for item in file.items {
        let syn::Item::Fn(mut f) = item else { continue };
        let mut found = None;
        for (i, a) in f.attrs.iter().enumerate() {
            let last = a.path().segments.last().map(|s| s.ident.to_string());
            let kind = match last.as_deref() {
                Some("prism_kernel") => FnKind::Kernel,
                Some("prism_device") => FnKind::Device,
                _ => continue,
            };
            let tokens = match &a.meta {
                syn::Meta::List(l) => l.tokens.clone(),
                _ => TokenStream::new(),
            };
            found = Some((i, kind, tokens));
            break;
        }
        let Some((i, kind, tokens)) = found else {
            continue;
        };
        f.attrs.remove(i);
        match parse_function(kind, tokens, quote::quote!(#f)) {
            Ok(func) => out.push(func),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Rejects token streams that would make syn's recursive-descent parser recurse too deeply: deep delimiter
/// nesting, long runs of punctuation (prefix operators), long `else if` chains, and very long expressions.
fn precheck(ts: &TokenStream) -> Result<(), Vec<Diagnostic>> {
    // Explicit stack instead of recursion, so the check itself cannot overflow.
    let mut stack: Vec<proc_macro2::token_stream::IntoIter> = vec![ts.clone().into_iter()];
    let mut punct_run = 0usize;
    let mut puncts_since_semi = 0usize;
    let mut else_count = 0usize;
    let mut prev_else = false;
    while let Some(top) = stack.last_mut() {
        let Some(tt) = top.next() else {
            stack.pop();
            continue;
        };
        let span = tt.span();
        match tt {
            TokenTree::Group(g) => {
                punct_run = 0;
                prev_else = false;
                if stack.len() > MAX_GROUP_DEPTH {
                    return Err(vec![syntax(
                        span,
                        format!("nesting deeper than {MAX_GROUP_DEPTH} levels"),
                    )
                    .help("split the code into device functions")]);
                }
                stack.push(g.stream().into_iter());
            }
            TokenTree::Punct(p) => {
                punct_run += 1;
                puncts_since_semi += 1;
                prev_else = false;
                if p.as_char() == ';' {
                    puncts_since_semi = 0;
                }
                if punct_run > 32 {
                    return Err(vec![syntax(span, "too many operators in a row")]);
                }
                if puncts_since_semi > 2000 {
                    return Err(vec![
                        syntax(span, "expression too long").help("split it with `let` bindings")
                    ]);
                }
            }
            TokenTree::Ident(i) => {
                punct_run = 0;
                if prev_else && i == "if" {
                    else_count += 1;
                    if else_count > MAX_DEPTH {
                        return Err(vec![syntax(
                            span,
                            format!("more than {MAX_DEPTH} `else if` branches"),
                        )]);
                    }
                }
                prev_else = i == "else";
            }
            TokenTree::Literal(_) => {
                punct_run = 0;
                prev_else = false;
            }
        }
    }
    Ok(())
}

struct Cx {
    depth: usize,
    errors: Vec<Diagnostic>,
}

fn ident(i: &syn::Ident) -> Ident {
    Ident {
        name: i.to_string(),
        span: i.span(),
    }
}

/// The single identifier of a path expression (`x`), if it is one.
fn path_ident(e: &syn::Expr) -> Option<&syn::Ident> {
    match e {
        syn::Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => p.path.get_ident(),
        syn::Expr::Paren(p) => path_ident(&p.expr),
        syn::Expr::Group(g) => path_ident(&g.expr),
        _ => None,
    }
}

fn scalar_from_name(s: &str) -> Option<ScalarType> {
    Some(match s {
        "bool" => ScalarType::Bool,
        "u32" => ScalarType::U32,
        "i32" => ScalarType::I32,
        "u64" => ScalarType::U64,
        "i64" => ScalarType::I64,
        "f32" => ScalarType::F32,
        "f64" => ScalarType::F64,
        "f16" => ScalarType::F16,
        "bf16" => ScalarType::BF16,
        _ => return None,
    })
}

const TYPES_HELP: &str =
    "supported types: u32 i32 u64 i64 f32 f64 bool f16 bf16, *const T, *mut T, [T; N], \
                          &[T; N], &mut [T; N], Shared<[T; N]>, Shared<[T; N], Swizzle128>, TensorMap<T, RANK>";

/// The layout argument of `Shared<[T; N], L>`.
fn smem_layout(g: &syn::GenericArgument) -> PResult<SmemLayout> {
    if let syn::GenericArgument::Type(syn::Type::Path(p)) = g {
        if let Some(l) = p
            .path
            .get_ident()
            .and_then(|i| SmemLayout::from_name(&i.to_string()))
        {
            return Ok(l);
        }
    }
    Err(syntax(g.span(), "unknown shared-memory layout")
        .help("one of `Linear`, `Swizzle32`, `Swizzle64`, `Swizzle128` (K-major rows of 32/64/128 bytes, as TMA writes and wgmma reads them), `Swizzle32Mn`, `Swizzle64Mn`, `Swizzle128Mn` (MN-major rows)"))
}

/// What a construct call (`group`, `partition`, ..) in statement position is.
fn construct_name(e: &syn::Expr) -> Option<String> {
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
                    | "peer"
            ) {
                return Some(n);
            }
        }
    }
    None
}

impl Cx {
    fn err(&mut self, d: Diagnostic) {
        self.errors.push(d);
    }

    fn enter(&mut self, span: Span) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(
                syntax(span, format!("nesting deeper than {MAX_DEPTH} levels"))
                    .help("split the code into device functions or intermediate `let` bindings"),
            );
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // ---------------------------------------------------------------- function and attribute

    fn function(
        &mut self,
        kind: FnKind,
        args: &[syn::Expr],
        item: &syn::ItemFn,
    ) -> Option<Function> {
        let sig = &item.sig;
        let name = ident(&sig.ident);
        let mut requires: Option<(Vec<SpannedPerspective>, Span)> = None;
        let mut smem = None;
        let mut threads = None;
        let mut blocks = None;
        let mut cluster = None;
        let mut returns = None;
        let mut instances = Vec::new();
        let attr_name = if kind == FnKind::Kernel {
            "prism_kernel"
        } else {
            "prism_device"
        };
        for a in args {
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
                    requires = Some((ps, c.span()));
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
                                "smem" => smem = Some(e),
                                "threads" => threads = Some(e),
                                "cluster" => cluster = Some(e),
                                _ => blocks = Some(e),
                            }
                        }
                        "returns" => match self.perspective(&asg.right) {
                            Ok(p) => returns = Some(p),
                            Err(d) => self.err(d),
                        },
                        "instances" => match self.instances(&asg.right) {
                            Ok(v) => instances = v,
                            Err(d) => self.err(d),
                        },
                        other => self.err(
                            syntax(key.span(), format!("unknown `{attr_name}` argument `{other}`"))
                                .help("expected `requires(..)`, `smem = N`, `threads = N`, `blocks = N`, `cluster = N`, `returns = P` or `instances = [..]`"),
                        ),
                    }
                }
                other => self.err(
                    syntax(other.span(), format!("unexpected `{attr_name}` argument"))
                        .help("expected `requires(..)`, `smem = N`, `threads = N`, `blocks = N`, `cluster = N`, `returns = P` or `instances = [..]`"),
                ),
            }
        }
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
        let mut const_params = Vec::new();
        for g in &sig.generics.params {
            match g {
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
                    syntax(other.span(), "only const generic parameters are supported")
                        .help("write `const N: u32` and list the values in `instances = [..]`"),
                ),
            }
        }
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
            const_params,
            requires,
            requires_span,
            smem,
            threads,
            blocks,
            cluster,
            returns,
            instances,
            params,
            ret,
            body,
            span: sig.ident.span(),
            origin: None,
        })
    }

    fn instances(&mut self, e: &syn::Expr) -> PResult<Vec<Instance>> {
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
            for p in parts {
                let e = self.expr(p)?;
                values.push(eval_const(&e, &|_| None)?);
            }
            out.push(Instance {
                values,
                span: el.span(),
            });
        }
        Ok(out)
    }

    /// `grid[n]`, `block[n]`, `thread[n]`, `warp`, `warp[k]`, `warpgroup`; `n` constant without const generics.
    fn perspective(&mut self, e: &syn::Expr) -> PResult<SpannedPerspective> {
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
    fn at_attr(&mut self, attrs: &[syn::Attribute]) -> PResult<Option<SpannedPerspective>> {
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

    fn param(&mut self, pt: &syn::PatType) -> PResult<Param> {
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

    fn scalar(&mut self, t: &syn::Type) -> PResult<ScalarType> {
        if let syn::Type::Path(p) = t {
            if p.qself.is_none() {
                if let Some(s) = p
                    .path
                    .get_ident()
                    .and_then(|i| scalar_from_name(&i.to_string()))
                {
                    return Ok(s);
                }
            }
        }
        if let syn::Type::Group(g) = t {
            return self.scalar(&g.elem);
        }
        Err(syntax(t.span(), "expected a scalar type")
            .help("one of u32 i32 u64 i64 f32 f64 bool f16 bf16"))
    }

    fn array(&mut self, t: &syn::Type) -> PResult<(ScalarType, Box<Expr>)> {
        match t {
            syn::Type::Array(a) => Ok((self.scalar(&a.elem)?, Box::new(self.expr(&a.len)?))),
            syn::Type::Group(g) => self.array(&g.elem),
            _ => Err(syntax(t.span(), "expected an array type `[T; N]`")),
        }
    }

    /// `TensorMap<T, RANK>`: element type and a literal rank 1..=5.
    fn tensor_map(&mut self, seg: &syn::PathSegment) -> PResult<Type> {
        const WANT: &str = "expected `TensorMap<T, RANK>` with a scalar type and a rank 1..=5";
        let syn::PathArguments::AngleBracketed(ab) = &seg.arguments else {
            return Err(syntax(seg.span(), WANT));
        };
        let mut it = ab.args.iter();
        let (Some(syn::GenericArgument::Type(t)), Some(r), None) =
            (it.next(), it.next(), it.next())
        else {
            return Err(syntax(seg.span(), WANT));
        };
        let elem = self.scalar(t)?;
        let rank = match r {
            syn::GenericArgument::Const(syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            })) => i.base10_parse::<u32>().ok(),
            _ => None,
        };
        match rank {
            Some(rank @ 1..=5) => Ok(Type::TensorMap {
                elem,
                rank,
                mutable: seg.ident == "TensorMapMut",
            }),
            _ => Err(syntax(r.span(), WANT)
                .help("TMA tensors have 1 to 5 dimensions: `TensorMap<bf16, 2>`")),
        }
    }

    fn ty(&mut self, t: &syn::Type, cx: TyCtx) -> PResult<Type> {
        match t {
            syn::Type::Group(g) => self.ty(&g.elem, cx),
            syn::Type::Paren(p) => self.ty(&p.elem, cx),
            syn::Type::Ptr(p) => {
                if cx == TyCtx::Let || cx == TyCtx::Return {
                    return Err(
                        syntax(t.span(), "pointer variables can only be parameters").help(
                            "use `partition`/`claim` to narrow a pointer, or index it directly",
                        ),
                    );
                }
                Ok(Type::Ptr {
                    elem: self.scalar(&p.elem)?,
                    mutable: p.mutability.is_some(),
                })
            }
            syn::Type::Array(_) => {
                if cx == TyCtx::Param {
                    return Err(syntax(t.span(), "arrays are passed by reference")
                        .help("write `&[T; N]` or `&mut [T; N]`"));
                }
                let (elem, len) = self.array(t)?;
                Ok(Type::Array { elem, len })
            }
            syn::Type::Reference(r) => {
                if cx != TyCtx::Param {
                    return Err(syntax(
                        t.span(),
                        "references are only allowed as device-function parameters",
                    )
                    .help("declare a local array `[T; N]`, pass it with `&a` / `&mut a`"));
                }
                if let Some(l) = &r.lifetime {
                    return Err(syntax(l.span(), "lifetimes are not supported"));
                }
                let (elem, len) = self
                    .array(&r.elem)
                    .map_err(|d| d.help("references must be to arrays: `&[T; N]`"))?;
                Ok(Type::ArrayRef {
                    elem,
                    len,
                    mutable: r.mutability.is_some(),
                })
            }
            syn::Type::Path(p) if p.qself.is_none() => {
                let last = p.path.segments.last();
                if p.path.segments.len() == 1 {
                    if let Some(seg) = last {
                        if seg.ident == "Shared" {
                            if cx != TyCtx::Let {
                                return Err(syntax(t.span(), "`Shared<..>` is only allowed in `let`")
                                    .help("declare shared memory with `let s: Shared<[T; N]>;` at block[1]"));
                            }
                            if let syn::PathArguments::AngleBracketed(ab) = &seg.arguments {
                                let mut it = ab.args.iter();
                                if let (Some(syn::GenericArgument::Type(inner)), l, None) =
                                    (it.next(), it.next(), it.next())
                                {
                                    let (elem, len) = self.array(inner)?;
                                    let layout = match l {
                                        None => SmemLayout::Linear,
                                        Some(g) => smem_layout(g)?,
                                    };
                                    return Ok(Type::Shared { elem, len, layout });
                                }
                            }
                            return Err(syntax(
                                t.span(),
                                "expected `Shared<[T; N]>` or `Shared<[T; N], Swizzle128>`",
                            ));
                        }
                        if seg.ident == "TensorMap" || seg.ident == "TensorMapMut" {
                            if cx != TyCtx::Param {
                                return Err(syntax(t.span(), "`TensorMap<T, RANK>` is only allowed as a kernel parameter")
                                    .help("take the tensor map as a parameter `a: TensorMap<bf16, 2>`; the host builds it with `prism_runtime::TensorMap`"));
                            }
                            return self.tensor_map(seg);
                        }
                    }
                }
                Ok(Type::Scalar(
                    self.scalar(t).map_err(|d| d.help(TYPES_HELP))?,
                ))
            }
            _ => Err(syntax(t.span(), "unsupported type").help(TYPES_HELP)),
        }
    }

    // ---------------------------------------------------------------- statements

    fn block(&mut self, b: &syn::Block) -> PResult<Block> {
        self.enter(b.brace_token.span.join())?;
        let r = self.block_inner(b);
        self.leave();
        r
    }

    fn block_inner(&mut self, b: &syn::Block) -> PResult<Block> {
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

    fn local(&mut self, l: &syn::Local) -> PResult<Stmt> {
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

    fn no_attrs(&self, attrs: &[syn::Attribute]) -> PResult<()> {
        match attrs.first() {
            Some(a) => Err(syntax(a.span(), "attributes are not supported here")
                .help("`#[at(..)]` goes on `let` statements and parameters")),
            None => Ok(()),
        }
    }

    fn stmt_expr(&mut self, e: &syn::Expr) -> PResult<Stmt> {
        self.enter(e.span())?;
        let r = self.stmt_expr_inner(e);
        self.leave();
        r
    }

    fn stmt_expr_inner(&mut self, e: &syn::Expr) -> PResult<Stmt> {
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

    fn if_stmt(&mut self, i: &syn::ExprIf) -> PResult<Stmt> {
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

    fn split(&mut self, m: &syn::ExprMatch) -> PResult<Stmt> {
        self.no_attrs(&m.attrs)?;
        let help = "write `match split(thread) { 32 => { .. } 1 => { .. } }` (levels: thread, block, warp, warpgroup)";
        let syn::Expr::Call(c) = strip_paren(&m.expr) else {
            return Err(
                syntax(m.expr.span(), "`match` is only supported on `split(level)`").help(help),
            );
        };
        if path_ident(&c.func).is_none_or(|i| i != "split") || c.args.len() != 1 {
            return Err(
                syntax(m.expr.span(), "`match` is only supported on `split(level)`").help(help),
            );
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
            let body = match &*arm.body {
                syn::Expr::Block(b) if b.label.is_none() => self.block(&b.block)?,
                other => {
                    return Err(syntax(
                        other.span(),
                        "a split arm body must be a block `{ .. }`",
                    ))
                }
            };
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
    fn closure<'a>(
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

    fn closure_block(&mut self, body: &syn::Expr, what: &str) -> PResult<Block> {
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
                format!("{what}: the closure body must be a block `{{ .. }}`"),
            )),
        }
    }

    fn target(&mut self, e: &syn::Expr, what: &str) -> PResult<Ident> {
        path_ident(e).map(ident).ok_or_else(|| {
            syntax(
                e.span(),
                format!("the first argument of `{what}` must be a variable name"),
            )
        })
    }

    fn construct(&mut self, c: &syn::ExprCall) -> PResult<Stmt> {
        self.no_attrs(&c.attrs)?;
        let span = c.span();
        let name = path_ident(&c.func)
            .map(|i| i.to_string())
            .unwrap_or_default();
        let args: Vec<&syn::Expr> = c.args.iter().collect();
        let arity = |n: usize, shape: &str| -> PResult<()> {
            if args.len() == n {
                Ok(())
            } else {
                Err(syntax(
                    span,
                    format!("`{name}` takes {n} arguments, found {}", args.len()),
                )
                .help(format!("write `{shape}`")))
            }
        };
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
                let target = self.target(args[0], "partition")?;
                let at = self.perspective(args[1])?;
                let (iparams, ibody) =
                    self.closure(args[2], "the `partition` index function", None)?;
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
                StmtKind::Partition {
                    target,
                    at,
                    index,
                    new_name,
                    body: self.closure_block(body, "`partition`")?,
                }
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
            "fill" | "drain" => {
                arity(3, &format!("{name}(r, i, |a_slot, b_slot| {{ .. }})"))?;
                let ring = self.target(args[0], &name)?;
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
                    fill: name == "fill",
                    ring,
                    index,
                    names,
                    body: self.closure_block(body, &format!("`{name}`"))?,
                }
            }
            _ => {
                return Err(syntax(
                    span,
                    "`split` is used as `match split(level) { n => { .. } }`",
                ));
            }
        };
        Ok(Stmt { kind, span })
    }

    fn asm_macro(&mut self, mac: &syn::Macro, attrs: &[syn::Attribute]) -> PResult<Expr> {
        self.no_attrs(attrs)?;
        let span = mac.span();
        if !mac.path.is_ident("asm") {
            return Err(syntax(span, "macros other than `asm!` are not supported"));
        }
        let args: AsmArgs = mac.parse_body().map_err(|e| {
            syntax(e.span(), format!("in `asm!`: {e}"))
                .help("write `asm!(\"template\", name = in(u32) expr, name = out(u32) place)`")
        })?;
        if args.templates.is_empty() {
            return Err(syntax(span, "`asm!` needs a template string"));
        }
        let template = args
            .templates
            .iter()
            .map(|t| t.value())
            .collect::<Vec<_>>()
            .join("\n");
        let mut operands = Vec::new();
        for (name, dir, ty, e) in &args.operands {
            let ty = self.scalar(ty)?;
            let expr = if *dir == AsmDir::In {
                self.expr(e)?
            } else {
                self.place(e)?
            };
            operands.push(AsmOperand {
                name: ident(name),
                dir: *dir,
                ty,
                expr,
            });
        }
        Ok(Expr {
            kind: ExprKind::Asm { template, operands },
            span,
        })
    }

    // ---------------------------------------------------------------- expressions

    /// An assignment target: a variable or an indexed element.
    fn place(&mut self, e: &syn::Expr) -> PResult<Expr> {
        match strip_paren(e) {
            syn::Expr::Path(_) | syn::Expr::Index(_) => self.expr(e),
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                Err(syntax(u.span(), "dereference is not supported")
                    .help("write `p[0] = v` for pointers"))
            }
            other => Err(syntax(other.span(), "cannot assign to this")
                .help("assign to a variable `x = ..` or an element `a[i] = ..`")),
        }
    }

    fn expr(&mut self, e: &syn::Expr) -> PResult<Expr> {
        self.enter(e.span())?;
        let r = self.expr_inner(e);
        self.leave();
        r
    }

    // Each construct is handled in its own non-inlined function so that the recursive frame stays small (the
    // nesting limit must hold on a 2 MiB test-thread stack in debug builds).
    fn expr_inner(&mut self, e: &syn::Expr) -> PResult<Expr> {
        let span = e.span();
        let kind = match e {
            syn::Expr::Paren(p) => return self.expr(&p.expr),
            syn::Expr::Group(g) => return self.expr(&g.expr),
            syn::Expr::Lit(l) => self.e_lit(l)?,
            syn::Expr::Path(_) => e_path(e)?,
            syn::Expr::Index(ix) => self.e_index(ix)?,
            syn::Expr::Unary(u) => self.e_unary(u)?,
            syn::Expr::Binary(b) => self.e_binary(b)?,
            syn::Expr::Cast(c) => self.e_cast(c)?,
            syn::Expr::Call(c) => self.e_call(e, c)?,
            syn::Expr::MethodCall(m) => self.e_method(m)?,
            syn::Expr::Reference(r) => self.e_ref(r)?,
            syn::Expr::Array(a) => self.e_array(a)?,
            syn::Expr::Repeat(r) => self.e_repeat(r)?,
            syn::Expr::If(i) => return self.select(i),
            syn::Expr::Macro(m) => return self.asm_macro(&m.mac, &m.attrs),
            syn::Expr::Block(b) => return self.e_block(b),
            other => return Err(unsupported_expr(other)),
        };
        Ok(Expr { kind, span })
    }

    #[inline(never)]
    fn e_lit(&mut self, l: &syn::ExprLit) -> PResult<ExprKind> {
        self.no_attrs(&l.attrs)?;
        Ok(ExprKind::Lit(self.lit(&l.lit)?))
    }

    #[inline(never)]
    fn e_index(&mut self, ix: &syn::ExprIndex) -> PResult<ExprKind> {
        let base = Box::new(self.expr(&ix.expr)?);
        let indices = match strip_paren(&ix.index) {
            syn::Expr::Tuple(t) => {
                let mut v = Vec::new();
                for el in &t.elems {
                    v.push(self.expr(el)?);
                }
                if v.is_empty() {
                    return Err(syntax(t.span(), "empty index"));
                }
                v
            }
            other => vec![self.expr(other)?],
        };
        Ok(ExprKind::Index { base, indices })
    }

    #[inline(never)]
    fn e_unary(&mut self, u: &syn::ExprUnary) -> PResult<ExprKind> {
        let op = match u.op {
            syn::UnOp::Neg(_) => UnOp::Neg,
            syn::UnOp::Not(_) => UnOp::Not,
            _ => {
                return Err(
                    syntax(u.span(), "dereference is not supported").help("index pointers: `p[i]`")
                )
            }
        };
        Ok(ExprKind::Unary {
            op,
            expr: Box::new(self.expr(&u.expr)?),
        })
    }

    #[inline(never)]
    fn e_binary(&mut self, b: &syn::ExprBinary) -> PResult<ExprKind> {
        let Some(op) = bin_op(&b.op) else {
            return Err(syntax(
                b.op.span(),
                "compound assignment is a statement, not an expression",
            )
            .help("write it as its own statement: `x += e;`"));
        };
        Ok(ExprKind::Binary {
            op,
            lhs: Box::new(self.expr(&b.left)?),
            rhs: Box::new(self.expr(&b.right)?),
        })
    }

    #[inline(never)]
    fn e_cast(&mut self, c: &syn::ExprCast) -> PResult<ExprKind> {
        let ty = self
            .scalar(&c.ty)
            .map_err(|d| d.help("casts go to scalar types: `x as f32`"))?;
        Ok(ExprKind::Cast {
            expr: Box::new(self.expr(&c.expr)?),
            ty,
        })
    }

    #[inline(never)]
    fn e_call(&mut self, e: &syn::Expr, c: &syn::ExprCall) -> PResult<ExprKind> {
        if let Some(n) = construct_name(e) {
            return Err(syntax(
                c.func.span(),
                format!("`{n}` is a statement, not an expression"),
            )
            .help("write it as its own statement ending in `;`"));
        }
        let syn::Expr::Path(p) = strip_paren(&c.func) else {
            return Err(syntax(c.func.span(), "only named functions can be called"));
        };
        if p.qself.is_some() {
            return Err(syntax(
                p.span(),
                "qualified paths `<T as Trait>::f` are not supported",
            ));
        }
        let mut path = Vec::new();
        let mut generics = Vec::new();
        let nseg = p.path.segments.len();
        for (i, seg) in p.path.segments.iter().enumerate() {
            path.push(ident(&seg.ident));
            match &seg.arguments {
                syn::PathArguments::None => {}
                syn::PathArguments::AngleBracketed(ab) if i + 1 == nseg => {
                    for g in &ab.args {
                        generics.push(self.generic_arg(g)?);
                    }
                }
                other => {
                    return Err(syntax(
                        other.span(),
                        "generic arguments only on the function name: `f::<4>(..)`",
                    ))
                }
            }
        }
        let mut args = Vec::new();
        for a in &c.args {
            args.push(self.expr(a)?);
        }
        Ok(ExprKind::Call {
            path,
            generics,
            args,
        })
    }

    #[inline(never)]
    fn e_method(&mut self, m: &syn::ExprMethodCall) -> PResult<ExprKind> {
        if m.turbofish.is_some() {
            return Err(syntax(m.span(), "generic method calls are not supported"));
        }
        let recv = Box::new(self.expr(&m.receiver)?);
        let mut args = Vec::new();
        for a in &m.args {
            args.push(self.expr(a)?);
        }
        Ok(ExprKind::MethodCall {
            recv,
            method: ident(&m.method),
            args,
        })
    }

    #[inline(never)]
    fn e_ref(&mut self, r: &syn::ExprReference) -> PResult<ExprKind> {
        let inner = strip_paren(&r.expr);
        // `&a` passes a thread-local array; `&p[i]` is the address of a memory element (an `asm!` operand).
        let element =
            matches!(inner, syn::Expr::Index(ix) if path_ident(strip_paren(&ix.expr)).is_some());
        if path_ident(inner).is_none() && !element {
            return Err(syntax(
                r.span(),
                "references are only taken of local array variables (`&a`) or memory elements (`&p[i]`)",
            )
            .help("write `&a` or `&mut a` where `a` is a thread-local array"));
        }
        Ok(ExprKind::Ref {
            mutable: r.mutability.is_some(),
            expr: Box::new(self.expr(inner)?),
        })
    }

    #[inline(never)]
    fn e_array(&mut self, a: &syn::ExprArray) -> PResult<ExprKind> {
        let mut v = Vec::new();
        for el in &a.elems {
            v.push(self.expr(el)?);
        }
        if v.is_empty() {
            return Err(syntax(a.span(), "empty arrays are not supported"));
        }
        Ok(ExprKind::ArrayLit(v))
    }

    #[inline(never)]
    fn e_repeat(&mut self, r: &syn::ExprRepeat) -> PResult<ExprKind> {
        Ok(ExprKind::ArrayRepeat {
            value: Box::new(self.expr(&r.expr)?),
            len: Box::new(self.expr(&r.len)?),
        })
    }

    #[inline(never)]
    fn e_block(&mut self, b: &syn::ExprBlock) -> PResult<Expr> {
        // `{ expr }` (e.g. in const generic arguments): allowed when it is a single expression.
        if b.block.stmts.len() == 1 {
            if let syn::Stmt::Expr(inner, None) = &b.block.stmts[0] {
                return self.expr(inner);
            }
        }
        Err(syntax(b.span(), "block expressions are not supported")
            .help("compute the value with `let` statements before"))
    }

    fn generic_arg(&mut self, g: &syn::GenericArgument) -> PResult<Expr> {
        match g {
            syn::GenericArgument::Const(e) => self.expr(e),
            // `f::<N>` parses `N` as a type; a single name is a const generic of the caller.
            syn::GenericArgument::Type(syn::Type::Path(p)) if p.qself.is_none() => match p.path.get_ident() {
                Some(i) => Ok(Expr { kind: ExprKind::Var(ident(i)), span: i.span() }),
                None => Err(syntax(p.span(), "generic arguments must be constant expressions")),
            },
            other => Err(syntax(other.span(), "generic arguments must be constant expressions: `f::<4>`, `f::<N>`, `f::<{ N * 2 }>`")),
        }
    }

    /// `if c { a } else { b }` as a value.
    fn select(&mut self, i: &syn::ExprIf) -> PResult<Expr> {
        let span = i.span();
        let help = "a value `if` must be `if c { a } else { b }` with one expression per branch";
        let Some((_, else_e)) = &i.else_branch else {
            return Err(syntax(span, "`if` used as a value needs an `else`").help(help));
        };
        let then_e = single_tail(&i.then_branch)
            .ok_or_else(|| syntax(i.then_branch.span(), "expected one expression").help(help))?;
        let cond = Box::new(self.expr(&i.cond)?);
        let then_value = Box::new(self.expr(then_e)?);
        let else_value = match &**else_e {
            syn::Expr::Block(b) => {
                let e = single_tail(&b.block)
                    .ok_or_else(|| syntax(b.span(), "expected one expression").help(help))?;
                Box::new(self.expr(e)?)
            }
            syn::Expr::If(_) => Box::new(self.expr(else_e)?),
            other => return Err(syntax(other.span(), "expected a block after `else`")),
        };
        Ok(Expr {
            kind: ExprKind::Select {
                cond,
                then_value,
                else_value,
            },
            span,
        })
    }

    fn lit(&mut self, l: &syn::Lit) -> PResult<Lit> {
        match l {
            syn::Lit::Int(i) => {
                let suffix = match i.suffix() {
                    "" => None,
                    s => match scalar_from_name(s) {
                        Some(t) if t.is_int() => Some(t),
                        Some(t) if t.is_float() => {
                            let v: f64 = i
                                .base10_parse()
                                .map_err(|_| syntax(i.span(), "bad float literal"))?;
                            return Ok(Lit::Float(v, Some(t)));
                        }
                        _ => {
                            return Err(syntax(
                                i.span(),
                                format!("unsupported literal suffix `{s}`"),
                            )
                            .help("use u32, i32, u64, i64, f32 or f64"))
                        }
                    },
                };
                let v: u128 = i
                    .base10_parse()
                    .map_err(|e| syntax(i.span(), format!("bad integer literal: {e}")))?;
                Ok(Lit::Int(v, suffix))
            }
            syn::Lit::Float(f) => {
                let suffix = match f.suffix() {
                    "" => None,
                    "f32" => Some(ScalarType::F32),
                    "f64" => Some(ScalarType::F64),
                    s => {
                        return Err(
                            syntax(f.span(), format!("unsupported literal suffix `{s}`"))
                                .help("use f32 or f64"),
                        )
                    }
                };
                let v: f64 = f
                    .base10_parse()
                    .map_err(|e| syntax(f.span(), format!("bad float literal: {e}")))?;
                Ok(Lit::Float(v, suffix))
            }
            syn::Lit::Bool(b) => Ok(Lit::Bool(b.value)),
            other => Err(syntax(other.span(), "unsupported literal")
                .help("Prism has integer, float and bool literals")),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum TyCtx {
    Param,
    Let,
    Return,
}

#[inline(never)]
fn e_path(e: &syn::Expr) -> PResult<ExprKind> {
    match path_ident(e) {
        Some(i) => Ok(ExprKind::Var(ident(i))),
        None => Err(
            syntax(e.span(), "paths are only supported as function names")
                .help("write a variable name, or call `path::f(..)`"),
        ),
    }
}

#[inline(never)]
fn unsupported_expr(e: &syn::Expr) -> Diagnostic {
    let span = e.span();
    match e {
        syn::Expr::Closure(_) => syntax(
            span,
            "closures are only allowed as arguments of group/partition/claim/async_",
        ),
        syn::Expr::Tuple(_) => syntax(
            span,
            "tuples are only allowed as multi-dimensional indices `a[(i, j)]`",
        ),
        syn::Expr::Range(_) => syntax(span, "ranges are only allowed in `for` loops"),
        syn::Expr::Return(_) => syntax(span, "`return` is not supported")
            .help("end a device function with its value as the tail expression"),
        syn::Expr::Loop(l) => {
            syntax(l.loop_token.span, "`loop` is not supported").help("write `while true { .. }`")
        }
        syn::Expr::Struct(_) => syntax(span, "structs are not supported"),
        syn::Expr::Field(_) => {
            syntax(span, "field access is not supported").help("Prism has no structs or tuples")
        }
        syn::Expr::Unsafe(_) => syntax(span, "`unsafe` blocks are statements")
            .help("write `unsafe { asm!(..); }` as a statement"),
        syn::Expr::Assign(_) => syntax(span, "assignment is a statement, not an expression"),
        syn::Expr::Match(_) => syntax(
            span,
            "`match` is only supported as `match split(level) { .. }` statement",
        ),
        _ => syntax(span, "unsupported expression")
            .help("see docs/SYNTAX.md for the expressions Prism accepts"),
    }
}

fn strip_paren(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_paren(&p.expr),
        syn::Expr::Group(g) => strip_paren(&g.expr),
        other => other,
    }
}

fn single_tail(b: &syn::Block) -> Option<&syn::Expr> {
    match b.stmts.as_slice() {
        [syn::Stmt::Expr(e, None)] => Some(e),
        _ => None,
    }
}

/// A block's last expression without `;` is its value (a device function's result) unless it is a
/// statement-like construct. A trailing `if` is a value only when it has an `else` and every branch is a
/// single non-call expression (then it is a select); otherwise it is an `if` statement.
fn is_value_tail(e: &syn::Expr) -> bool {
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

fn bin_op(op: &syn::BinOp) -> Option<BinOp> {
    use syn::BinOp as B;
    Some(match op {
        B::Add(_) => BinOp::Add,
        B::Sub(_) => BinOp::Sub,
        B::Mul(_) => BinOp::Mul,
        B::Div(_) => BinOp::Div,
        B::Rem(_) => BinOp::Rem,
        B::And(_) => BinOp::And,
        B::Or(_) => BinOp::Or,
        B::BitXor(_) => BinOp::BitXor,
        B::BitAnd(_) => BinOp::BitAnd,
        B::BitOr(_) => BinOp::BitOr,
        B::Shl(_) => BinOp::Shl,
        B::Shr(_) => BinOp::Shr,
        B::Eq(_) => BinOp::Eq,
        B::Lt(_) => BinOp::Lt,
        B::Le(_) => BinOp::Le,
        B::Ne(_) => BinOp::Ne,
        B::Ge(_) => BinOp::Ge,
        B::Gt(_) => BinOp::Gt,
        _ => return None,
    })
}

fn compound_op(op: &syn::BinOp) -> Option<BinOp> {
    use syn::BinOp as B;
    Some(match op {
        B::AddAssign(_) => BinOp::Add,
        B::SubAssign(_) => BinOp::Sub,
        B::MulAssign(_) => BinOp::Mul,
        B::DivAssign(_) => BinOp::Div,
        B::RemAssign(_) => BinOp::Rem,
        B::BitXorAssign(_) => BinOp::BitXor,
        B::BitAndAssign(_) => BinOp::BitAnd,
        B::BitOrAssign(_) => BinOp::BitOr,
        B::ShlAssign(_) => BinOp::Shl,
        B::ShrAssign(_) => BinOp::Shr,
        _ => return None,
    })
}

/// The body of `asm!`: template strings, then `name = in(T) expr` / `out(T) place` / `inout(T) place`.
struct AsmArgs {
    templates: Vec<syn::LitStr>,
    operands: Vec<(syn::Ident, AsmDir, syn::Type, syn::Expr)>,
}

impl syn::parse::Parse for AsmArgs {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let mut templates = Vec::new();
        let mut operands = Vec::new();
        while !input.is_empty() {
            if input.peek(syn::LitStr) && operands.is_empty() {
                templates.push(input.parse()?);
            } else {
                let name: syn::Ident = input.parse()?;
                input.parse::<Token![=]>()?;
                let dir = if input.peek(Token![in]) {
                    input.parse::<Token![in]>()?;
                    AsmDir::In
                } else {
                    let d: syn::Ident = input.parse()?;
                    match d.to_string().as_str() {
                        "out" => AsmDir::Out,
                        "inout" => AsmDir::InOut,
                        _ => {
                            return Err(syn::Error::new(
                                d.span(),
                                "expected `in`, `out` or `inout`",
                            ))
                        }
                    }
                };
                let content;
                syn::parenthesized!(content in input);
                let ty: syn::Type = content.parse()?;
                let e: syn::Expr = input.parse()?;
                operands.push((name, dir, ty, e));
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(AsmArgs {
            templates,
            operands,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figs. 5 and 6, from the kernel library's source (the one copy of the paper's running example).
    const FIG5_6: &str = include_str!("../../prism-kernels/src/mma.rs");
    const CUB: &str = include_str!("../tests/programs/cub_load_store.rs");
    const VADD: &str = include_str!("../tests/programs/vector_add.rs");
    const FIG2: &str = include_str!("../tests/programs/fig2_warp_mma.rs");

    fn one(src: &str) -> Function {
        let mut v = parse_source(src)
            .unwrap_or_else(|e| panic!("{:?}", e.iter().map(|d| d.text()).collect::<Vec<_>>()));
        assert_eq!(v.len(), 1);
        v.remove(0)
    }

    fn err(src: &str) -> Diagnostic {
        match parse_source(src) {
            Ok(_) => panic!("expected a SYNTAX error for {src}"),
            Err(mut e) => e.remove(0),
        }
    }

    #[test]
    fn fixtures_parse() {
        for src in [FIG2, FIG5_6, CUB, VADD] {
            let fs = parse_source(src)
                .unwrap_or_else(|e| panic!("{:?}", e.iter().map(|d| d.text()).collect::<Vec<_>>()));
            assert!(!fs.is_empty());
        }
        assert_eq!(parse_source(CUB).unwrap().len(), 7);
    }

    #[test]
    fn fig5_structure() {
        let f = parse_source(FIG5_6).expect("parses").remove(0);
        assert_eq!(f.kind, FnKind::Device);
        assert_eq!(f.name.name, "simple_mma");
        assert!(f.is_pub);
        assert_eq!(f.requires.len(), 1);
        assert_eq!(f.requires[0].perspective, Perspective::thread(32));
        assert_eq!(f.params.len(), 5);
        assert!(matches!(
            f.params[2].ty,
            Type::Ptr {
                elem: ScalarType::F32,
                mutable: true
            }
        ));
        assert_eq!(f.params[0].at.unwrap().perspective, Perspective::thread(32));
        assert!(f.params[3].at.is_none());
        // let x; 3 arrays; group; mma call; partition
        assert_eq!(f.body.stmts.len(), 7);
        match &f.body.stmts[0].kind {
            StmtKind::Let {
                name,
                at,
                init: Some(init),
                ..
            } => {
                assert_eq!(name.name, "x");
                assert_eq!(at.unwrap().perspective, Perspective::thread(1));
                assert!(
                    matches!(&init.kind, ExprKind::Call { path, args, .. } if path[0].name == "id" && args.is_empty())
                );
            }
            other => panic!("{other:?}"),
        }
        match &f.body.stmts[6].kind {
            StmtKind::Partition {
                target,
                at,
                index,
                new_name,
                body,
            } => {
                assert_eq!(target.name, "c");
                assert_eq!(at.perspective, Perspective::thread(1));
                assert_eq!(index.params.len(), 2);
                assert_eq!(new_name.name, "c_thrd");
                assert!(
                    matches!(&body.stmts[0].kind, StmtKind::Group { body, .. } if body.stmts.len() == 4)
                );
            }
            other => panic!("{other:?}"),
        }
        match &f.body.stmts[5].kind {
            StmtKind::Expr(Expr {
                kind: ExprKind::Call { path, args, .. },
                ..
            }) => {
                assert_eq!(path[0].name, "mma_m16n8k8_tf32");
                assert!(matches!(args[0].kind, ExprKind::Ref { mutable: true, .. }));
                assert!(matches!(args[1].kind, ExprKind::Ref { mutable: false, .. }));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fig6_structure() {
        let fs = parse_source(FIG5_6).unwrap();
        let k = &fs[1];
        assert_eq!(k.kind, FnKind::Kernel);
        assert_eq!(
            k.requires.iter().map(|p| p.perspective).collect::<Vec<_>>(),
            vec![
                Perspective::grid(1),
                Perspective::block(1),
                Perspective::thread(32)
            ]
        );
        assert_eq!(
            eval_const(k.smem.as_ref().unwrap(), &|_| None).unwrap(),
            1280
        );
        // Find the split inside the claim.
        fn find_split(b: &Block) -> Option<(Level, u32, u32)> {
            for s in &b.stmts {
                let found = match &s.kind {
                    StmtKind::Split { level, unit, arms } => Some((*level, *unit, arms[0].size)),
                    StmtKind::Group { body, .. }
                    | StmtKind::Partition { body, .. }
                    | StmtKind::Claim { body, .. }
                    | StmtKind::For { body, .. } => find_split(body),
                    _ => None,
                };
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        assert_eq!(find_split(&k.body), Some((Level::Thread, 1, 32)));
        // The source spans are real line/column positions.
        let line = FIG5_6
            .lines()
            .position(|l| l.starts_with("pub fn mma_tf32_naive"))
            .expect("kernel")
            + 1;
        assert_eq!(k.name.span.start().line, line);
    }

    #[test]
    fn const_generics_and_instances() {
        let fs = parse_source(CUB).unwrap();
        let k = fs.iter().find(|f| f.name.name == "block_copy").unwrap();
        assert_eq!(k.const_params.len(), 1);
        assert_eq!(k.const_params[0].name.name, "N");
        assert_eq!(
            k.instances
                .iter()
                .map(|i| i.values.clone())
                .collect::<Vec<_>>(),
            vec![vec![1], vec![4]]
        );
        assert_eq!(
            eval_const(k.threads.as_ref().unwrap(), &|_| None).unwrap(),
            128
        );
        let w = fs.iter().find(|f| f.name.name == "warp_load").unwrap();
        assert!(matches!(
            &w.params[1].ty,
            Type::ArrayRef {
                elem: ScalarType::I32,
                mutable: true,
                ..
            }
        ));
        let src = "#[prism_kernel(requires(grid[1], block[1], thread[1]), instances = [(64, 8), (128, 16)])]
                   fn k<const BM: u32, const BK: u32>() { let x = f::<BM, { BK * 2 }, 3>(); }";
        let f = one(src);
        assert_eq!(f.instances[1].values, vec![128, 16]);
        match &f.body.stmts[0].kind {
            StmtKind::Let {
                init:
                    Some(Expr {
                        kind: ExprKind::Call { generics, .. },
                        ..
                    }),
                ..
            } => assert_eq!(generics.len(), 3),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn perspectives_sugar() {
        let f = one("#[prism_device(requires(block[1], warpgroup, warp[2], warp, thread[2 * 2]), returns = warp)] fn f() {}");
        let ps: Vec<_> = f.requires.iter().map(|p| p.perspective).collect();
        assert_eq!(
            ps,
            vec![
                Perspective::block(1),
                Perspective::thread(128),
                Perspective::thread(64),
                Perspective::thread(32),
                Perspective::thread(4)
            ]
        );
        assert_eq!(f.returns.unwrap().perspective, Perspective::thread(32));
    }

    #[test]
    fn statements() {
        let src = r#"
            #[prism_device(requires(thread[1]))]
            fn f(p: *mut f32, n: u32) -> f32 {
                let mut s = 0.0f32;
                let a: [f32; 4] = [1.0, 2.0, 3.0, 4.0];
                for i in (0..n).step_by(2) { s += a[i] * 2.0; if s > 1.0 { break; } else if s < 0.0 { continue; } else { s = -s; } }
                while s < 10.0 { s = s * 2.0; }
                p[0] = s.sqrt().min(1.0);
                let t = if s > 0.0 { s } else { 0.0 };
                let h = t as bf16;
                unsafe { asm!("mov.u32 {r}, 1;", r = out(u32) n2, q = in(u64) 4u64, z = inout(f32) s); }
                match split(warp) { 1 => { } 2 => { } }
                t + (h as f32) + (!true as i32) as f32
            }"#;
        let f = one(src);
        assert!(f.body.tail.is_some());
        assert!(matches!(f.ret, Some((Type::Scalar(ScalarType::F32), _))));
        let kinds: Vec<&StmtKind> = f.body.stmts.iter().map(|s| &s.kind).collect();
        assert!(matches!(kinds[2], StmtKind::For { step: Some(_), .. }));
        match kinds[2] {
            StmtKind::For { body, .. } => {
                assert!(matches!(
                    &body.stmts[0].kind,
                    StmtKind::Assign {
                        op: Some(BinOp::Add),
                        ..
                    }
                ));
                match &body.stmts[1].kind {
                    StmtKind::If {
                        else_block: Some(eb),
                        ..
                    } => {
                        assert!(matches!(
                            &eb.stmts[0].kind,
                            StmtKind::If {
                                else_block: Some(_),
                                ..
                            }
                        ))
                    }
                    other => panic!("{other:?}"),
                }
            }
            _ => unreachable!(),
        }
        assert!(matches!(
            kinds[5],
            StmtKind::Let {
                init: Some(Expr {
                    kind: ExprKind::Select { .. },
                    ..
                }),
                ..
            }
        ));
        match kinds[7] {
            StmtKind::Unsafe { body } => match &body.stmts[0].kind {
                StmtKind::Expr(Expr {
                    kind: ExprKind::Asm { template, operands },
                    ..
                }) => {
                    assert_eq!(template, "mov.u32 {r}, 1;");
                    assert_eq!(operands.len(), 3);
                    assert_eq!(operands[0].dir, AsmDir::Out);
                    assert_eq!(operands[1].dir, AsmDir::In);
                    assert_eq!(operands[2].dir, AsmDir::InOut);
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        match kinds[8] {
            StmtKind::Split { level, unit, arms } => {
                assert_eq!((*level, *unit), (Level::Thread, 32));
                assert_eq!(
                    arms.iter().map(|a| a.size).collect::<Vec<_>>(),
                    vec![32, 64]
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn shared_and_literals() {
        let f = one("#[prism_kernel(requires(grid[1], block[1], thread[1]))] fn k() { let s: Shared<[f32; 16 * 8]>; let x = 7u64; let y = 1.5; }");
        assert!(matches!(
            &f.body.stmts[0].kind,
            StmtKind::Let {
                ty: Some(Type::Shared {
                    elem: ScalarType::F32,
                    ..
                }),
                init: None,
                ..
            }
        ));
        assert!(matches!(
            &f.body.stmts[1].kind,
            StmtKind::Let {
                init: Some(Expr {
                    kind: ExprKind::Lit(Lit::Int(7, Some(ScalarType::U64))),
                    ..
                }),
                ..
            }
        ));
        assert!(matches!(
            &f.body.stmts[2].kind,
            StmtKind::Let {
                init: Some(Expr {
                    kind: ExprKind::Lit(Lit::Float(_, None)),
                    ..
                }),
                ..
            }
        ));
    }

    #[test]
    fn syntax_errors() {
        let cases: &[(&str, &str)] = &[
            ("#[prism_kernel(smem = 4)] fn k() {}", "requires"),
            ("#[prism_kernel(requires(grid[0]))] fn k() {}", "at least 1"),
            (
                "#[prism_kernel(requires(grid[N]))] fn k<const N: u32>() {}",
                "not a constant",
            ),
            (
                "#[prism_kernel(requires(wave[1]))] fn k() {}",
                "expected a perspective",
            ),
            (
                "#[prism_kernel(requires(grid[1]), foo = 3)] fn k() {}",
                "unknown",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { return; }",
                "`return`",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { loop { } }",
                "`loop`",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { let (a, b) = (1, 2); }",
                "patterns",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { let f = |x| x; }",
                "closures",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { let a = 1; let r = &(a + 1); }",
                "references",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { let t = (1, 2); }",
                "tuples",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { let s = S { a: 1 }; }",
                "structs",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k(x: String) {}",
                "scalar type",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k(x: &u32) {}",
                "arrays",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k<T>() {}",
                "const generic",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { match x { 1 => {} } }",
                "split",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { match split(thread) { _ => {} } }",
                "literal sizes",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { group(block[1], |x| { }); }",
                "0 closure parameters",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { let x = group(block[1], || {}); }",
                "statement",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { for i in 0..=3 {} }",
                "inclusive",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { let x = 1u8; }",
                "suffix",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { println!(\"hi\"); }",
                "asm!",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { partition(x, thread[1], |y| { }); }",
                "4 arguments",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { let x = a.b; }",
                "field",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { { let x = 1; } }",
                "bare blocks",
            ),
            (
                "#[prism_kernel(requires(grid[1]))] fn k() { let x = *p; }",
                "dereference",
            ),
        ];
        for (src, needle) in cases {
            let d = err(src);
            assert!(d.rule == "SYNTAX" || d.rule == "CONST", "{src}: {}", d.rule);
            assert!(
                d.message.contains(needle) || d.help.as_deref().unwrap_or("").contains(needle),
                "{src}: {}",
                d.text()
            );
        }
    }

    #[test]
    fn error_span_points_at_token() {
        let src = "#[prism_kernel(requires(grid[1]))]\nfn k() {\n    let a = 1;\n    return;\n}";
        let d = err(src);
        assert_eq!(d.span.start().line, 4);
        assert_eq!(d.span.start().column, 4);
    }

    #[test]
    fn several_errors_collected() {
        let src = "#[prism_kernel(requires(grid[1]))] fn k() { return; let (a, b) = c; loop {} }";
        assert_eq!(parse_source(src).unwrap_err().len(), 3);
    }

    #[test]
    fn deep_nesting_rejected_without_panic() {
        let deep = format!(
            "#[prism_kernel(requires(grid[1]))] fn k() {{ let x = {}1{}; }}",
            "(".repeat(5000),
            ")".repeat(5000)
        );
        assert!(parse_source(&deep).unwrap_err()[0]
            .message
            .contains("nesting"));
        let neg = format!(
            "#[prism_kernel(requires(grid[1]))] fn k() {{ let x = {}1; }}",
            "-".repeat(5000)
        );
        assert!(parse_source(&neg).is_err());
        let chain = format!(
            "#[prism_kernel(requires(grid[1]))] fn k() {{ let x = 1{}; }}",
            " + 1".repeat(300)
        );
        assert!(parse_source(&chain).unwrap_err()[0]
            .message
            .contains("nesting"));
        let elifs = format!(
            "#[prism_kernel(requires(grid[1]))] fn k() {{ if a {{}} {} }}",
            "else if a {} ".repeat(1000)
        );
        assert!(parse_source(&elifs).is_err());
        let blocks = format!(
            "#[prism_kernel(requires(grid[1]))] fn k() {{ {} {} }}",
            "if a {".repeat(70),
            "}".repeat(70)
        );
        assert!(parse_source(&blocks).unwrap_err()[0]
            .message
            .contains("nesting"));
    }

    /// Cheap fuzzing: every truncation and single-token deletion of the fixtures must give Ok or errors, never
    /// a panic.
    #[test]
    fn mutations_never_panic() {
        for src in [FIG5_6, CUB] {
            let toks: Vec<String> = src.split_whitespace().map(String::from).collect();
            for i in (0..toks.len()).step_by(3) {
                let mut t = toks.clone();
                t.remove(i);
                let _ = parse_source(&t.join(" "));
                let _ = parse_source(&toks[..i].join(" "));
            }
            for cut in (0..src.len()).step_by(97) {
                if src.is_char_boundary(cut) {
                    let _ = parse_source(&src[..cut]);
                }
            }
        }
    }
    #[test]
    fn brace_less_closure_body_from_rustfmt() {
        let src = r#"
            #[prism_kernel(requires(grid[1], block[1], thread[32]), smem = 256)]
            fn k() {
                group(block[1], || {
                    let s: Shared<[f32; 64]>;
                    claim(s, thread[32], |w| match split(thread) {
                        32 => {}
                    });
                });
            }
        "#;
        let fs = parse_source(src).expect("rustfmt's brace-less closure body parses");
        assert_eq!(fs.len(), 1);
    }
}
