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

mod expr;
mod items;
mod lex;
mod stmt;
mod types;

use lex::*;
use stmt::*;
use types::*;

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
    parse_function_with(kind, attr, item, None)
}

/// [`parse_function`] with the type parameters bound to `types` (in declaration order; `None`: each stands
/// for its bound's first member). `crate::mono` instantiates generic functions through it.
pub fn parse_function_with(
    kind: FnKind,
    attr: TokenStream,
    item: TokenStream,
    types: Option<&[ScalarType]>,
) -> Result<Function, Vec<Diagnostic>> {
    precheck(&attr)?;
    precheck(&item)?;
    let source = FnSource {
        attr: attr.clone(),
        item: item.clone(),
    };
    let args =
        syn::parse::Parser::parse2(Punctuated::<syn::Expr, Token![,]>::parse_terminated, attr)
            .map_err(from_syn)?;
    let item: syn::ItemFn = syn::parse2(item).map_err(from_syn)?;
    let args: Vec<syn::Expr> = args.into_iter().collect();
    let mut cx = Cx {
        depth: 0,
        errors: Vec::new(),
        tsubst: Vec::new(),
        types: types.map(|t| t.to_vec()),
    };
    let f = cx.function(kind, &args, &item).map(|mut f| {
        if !f.type_params.is_empty() {
            f.source = Some(source);
            if let Some(t) = types {
                f.type_args = t.to_vec();
            }
        }
        f
    });
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

struct Cx {
    depth: usize,
    errors: Vec<Diagnostic>,
    /// Type parameters and the scalar type each stands for in this parse.
    tsubst: Vec<(String, ScalarType)>,
    /// The type arguments of an instantiation (`parse_function_with`).
    types: Option<Vec<ScalarType>>,
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

    // ---------------------------------------------------------------- statements

    // ---------------------------------------------------------------- expressions
}

#[cfg(test)]
mod tests;
