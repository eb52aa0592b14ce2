//! The items a `#[prism_device]` function expands to (besides its own check): the callback macros that hand
//! its tokens to callers, and a documentation-only item.

use crate::names::{current_crate, requires_text};
use prism_core::ast::{Function, Type};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, ToTokens};

fn type_text(t: &Type) -> String {
    match t {
        Type::Scalar(s) => s.to_string(),
        Type::Ptr {
            elem,
            mutable: true,
        } => format!("*mut {elem}"),
        Type::Ptr {
            elem,
            mutable: false,
        } => format!("*const {elem}"),
        Type::Array { elem, .. } => format!("[{elem}; _]"),
        Type::ArrayRef {
            elem,
            mutable: true,
            ..
        } => format!("&mut [{elem}; _]"),
        Type::ArrayRef {
            elem,
            mutable: false,
            ..
        } => format!("&[{elem}; _]"),
        Type::Shared {
            elem,
            mutable: false,
            ..
        } => format!("Shared<[{elem}; _]>"),
        Type::Shared { elem, .. } => format!("SharedMut<[{elem}; _]>"),
        Type::TensorMap {
            elem,
            rank,
            mutable: false,
        } => format!("TensorMap<{elem}, {rank}>"),
        Type::TensorMap { elem, rank, .. } => format!("TensorMapMut<{elem}, {rank}>"),
        Type::Ring { elems } if elems.len() == 1 => format!("Ring<{}>", elems[0]),
        Type::Ring { elems } => format!(
            "Ring<({})>",
            elems
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The perspective signature in words, for rustdoc.
fn signature_doc(f: &Function, item: &syn::ItemFn) -> String {
    let bound = requires_text(f);
    let default = f
        .requires
        .first()
        .map(|r| r.perspective.to_string())
        .unwrap_or_default();
    // A generic function's tree stands for its bounds' first members: show its types as written.
    let written: Vec<String> = item
        .sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            syn::FnArg::Typed(pt) => Some(pt.ty.to_token_stream().to_string()),
            _ => None,
        })
        .collect();
    let params = f
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let at = match (&p.ty, p.at) {
                (_, Some(a)) => a.perspective.to_string(),
                (Type::ArrayRef { .. }, None) => "thread[1]".to_string(),
                _ => default.clone(),
            };
            let ty = match written.get(i) {
                Some(w) if !f.type_params.is_empty() => w.clone(),
                _ => type_text(&p.ty),
            };
            format!("* `{}: {ty}` at `{at}`", p.name.name)
        })
        .collect::<Vec<_>>()
        .join("\n");
    let sig = &item.sig;
    let generics = &sig.generics;
    let inputs = &sig.inputs;
    let output = &sig.output;
    let rust_sig = quote!(fn #generics (#inputs) #output).to_string();
    let path = format!("{}::{}", current_crate(), f.name.name);
    format!(
        "\n\n**Prism device function** `{path}`: perspective bound `requires({bound})`{}{}.\n\n\
         Signature (Prism surface syntax): `{rust_sig}`\n\nParameters (perspective):\n{params}\n\n\
         Call it from a `#[prism_kernel]` or `#[prism_device]` body: `{}(..)` in this crate (after its \
         definition), `{path}(..)` from other crates. The call is checked against this signature and the body \
         is inlined. This item exists for documentation only.",
        f.smem.as_ref().map(|_| ", allocates shared memory (`smem`)").unwrap_or(""),
        f.returns.map(|r| format!(", result at `{}`", r.perspective)).unwrap_or_default(),
        f.name.name,
    )
}

/// Callback macros and the documentation item. `f` is `None` when the function did not parse (the macros are
/// still emitted so callers get a precise error).
pub fn items(attr: &TokenStream, item: &TokenStream, f: Option<&Function>) -> TokenStream {
    let parsed = syn::parse2::<syn::ItemFn>(item.clone()).ok();
    // When the item does not parse, its name and `pub` are still found by scanning the tokens, so the
    // callback macros exist and callers get "`f` has errors" rather than "cannot find macro".
    let (name, is_pub) = match &parsed {
        Some(p) => (
            p.sig.ident.clone(),
            matches!(p.vis, syn::Visibility::Public(_)),
        ),
        None => match scan_name(item) {
            Some(x) => x,
            None => return TokenStream::new(),
        },
    };
    let name = &name;
    let krate = current_crate();
    let mut callback = name.clone();
    callback.set_span(Span::call_site());
    // The callback macro has the function's own name, so that a call of an unknown or misspelled name fails
    // with rustc's "cannot find macro `name`" (and its similar-name suggestion) instead of an internal name.
    // A `pub` function's macro is exported (other crates reach it as `other_crate::name!`); the same macro
    // serves this crate through its textual scope (`__prism_resume!` recognises its own crate by name).
    // Anything other than the continuation state (e.g. `name!(..)` written by hand because the function's
    // name shadows a macro) gets a clear error instead of a Prism internal error.
    let misuse = format!(
        "`{name}!` is the Prism device function `{name}` (crate `{krate}`), not a macro: call it as `{name}(..)` \
         from a `#[prism_kernel]` or `#[prism_device]` body; if this was meant to be another macro, rename the \
         device function, whose name shadows it here"
    );
    let mut out = if is_pub {
        quote! {
            #[doc(hidden)]
            #[macro_export]
            macro_rules! #callback {
                (@root [$($m:tt)*] $($state:tt)*) => {
                    $($m)*::__prism_resume! { @dep extern [$crate] #krate { #attr } { #item } @root [$($m)*] $($state)* }
                };
                ($($other:tt)*) => { ::core::compile_error! { #misuse } };
            }
        }
    } else {
        quote! {
            #[doc(hidden)]
            #[allow(unused_macros)]
            macro_rules! #callback {
                (@root [$($m:tt)*] $($state:tt)*) => {
                    $($m)*::__prism_resume! { @dep local [] #krate { #attr } { #item } @root [$($m)*] $($state)* }
                };
                ($($other:tt)*) => { ::core::compile_error! { #misuse } };
            }
        }
    };
    let Some(parsed) = parsed else { return out };
    let vis = &parsed.vis;
    let docs: Vec<&syn::Attribute> = parsed
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let sig_doc = f.map(|f| signature_doc(f, &parsed)).unwrap_or_default();
    if let Some(f) = f {
        out.extend(alias_wrappers(attr, f, &parsed));
    }
    out.extend(quote! {
        #(#docs)*
        #[doc = #sig_doc]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name;
    });
    out
}

/// `fn <name>` and whether a top-level `pub` precedes it, from raw tokens.
fn scan_name(item: &TokenStream) -> Option<(Ident, bool)> {
    let toks: Vec<proc_macro2::TokenTree> = item.clone().into_iter().collect();
    let mut is_pub = false;
    for w in toks.windows(2) {
        if let proc_macro2::TokenTree::Ident(i) = &w[0] {
            if i == "pub" {
                is_pub = true;
            }
            if i == "fn" {
                if let proc_macro2::TokenTree::Ident(n) = &w[1] {
                    return Some((n.clone(), is_pub));
                }
            }
        }
    }
    None
}

/// `aliases = [u32, f32]` on a generic device function: for each tuple, a device function `name_u32` with the
/// type parameters replaced in its signature, whose body calls `name::<u32, N..>(..)` (its const parameters
/// stay generic). Each is an ordinary `#[prism_device]` item, checked and exported like any other.
fn alias_wrappers(attr: &TokenStream, f: &Function, item: &syn::ItemFn) -> TokenStream {
    if f.aliases.is_empty() || f.type_params.is_empty() {
        return TokenStream::new();
    }
    // The attribute without `aliases = [..]`.
    let Ok(args) = syn::parse::Parser::parse2(
        syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        attr.clone(),
    ) else {
        return TokenStream::new();
    };
    let kept: Vec<&syn::Expr> = args
        .iter()
        .filter(|a| !matches!(a, syn::Expr::Assign(x) if matches!(&*x.left, syn::Expr::Path(p) if p.path.is_ident("aliases"))))
        .collect();
    let name = &item.sig.ident;
    let consts: Vec<&syn::ConstParam> = item
        .sig
        .generics
        .params
        .iter()
        .filter_map(|g| match g {
            syn::GenericParam::Const(c) => Some(c),
            _ => None,
        })
        .collect();
    let cnames: Vec<&Ident> = consts.iter().map(|c| &c.ident).collect();
    let args: Vec<&syn::Pat> = item
        .sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            syn::FnArg::Typed(pt) => Some(&*pt.pat),
            _ => None,
        })
        .collect();
    let mut out = TokenStream::new();
    for a in &f.aliases {
        let subst: Vec<(String, Ident)> = f
            .type_params
            .iter()
            .zip(&a.types)
            .map(|(p, t)| {
                (
                    p.name.name.clone(),
                    Ident::new(t.rust_name(), Span::call_site()),
                )
            })
            .collect();
        let tys: Vec<&Ident> = subst.iter().map(|(_, t)| t).collect();
        let suffix: Vec<String> = tys.iter().map(|t| t.to_string()).collect();
        let alias = Ident::new(&format!("{name}_{}", suffix.join("_")), name.span());
        let mut sig = item.sig.clone();
        sig.ident = alias.clone();
        sig.generics.params = sig
            .generics
            .params
            .into_iter()
            .filter(|g| !matches!(g, syn::GenericParam::Type(_)))
            .collect();
        for input in sig.inputs.iter_mut() {
            if let syn::FnArg::Typed(pt) = input {
                subst_type(&mut pt.ty, &subst);
            }
        }
        if let syn::ReturnType::Type(_, t) = &mut sig.output {
            subst_type(t, &subst);
        }
        let call = quote!(#name::<#(#tys,)* #(#cnames),*>(#(#args),*));
        let body = match sig.output {
            syn::ReturnType::Default => quote!({ #call; }),
            _ => quote!({ #call }),
        };
        let doc = format!(
            "`{name}::<{}>` under a name of its own (`aliases = [..]`): the same device function, with the \
             same perspective signature.",
            suffix.join(", ")
        );
        let vis = &item.vis;
        let macros = crate::paths::deps().macros();
        out.extend(quote! {
            #[doc = #doc]
            #[#macros::prism_device(#(#kept),*)]
            #vis #sig #body
        });
    }
    out
}

/// Replaces the type parameters named in `subst` inside a signature type (`T`, `*const T`, `&mut [T; N]`).
fn subst_type(t: &mut syn::Type, subst: &[(String, Ident)]) {
    match t {
        syn::Type::Path(p) if p.qself.is_none() => {
            if let Some(i) = p.path.get_ident() {
                if let Some((_, to)) = subst.iter().find(|(n, _)| i == n) {
                    *t = syn::Type::Verbatim(quote!(#to));
                    return;
                }
            }
            for seg in p.path.segments.iter_mut() {
                if let syn::PathArguments::AngleBracketed(ab) = &mut seg.arguments {
                    for g in ab.args.iter_mut() {
                        if let syn::GenericArgument::Type(t) = g {
                            subst_type(t, subst);
                        }
                    }
                }
            }
        }
        syn::Type::Ptr(p) => subst_type(&mut p.elem, subst),
        syn::Type::Array(a) => subst_type(&mut a.elem, subst),
        syn::Type::Reference(r) => subst_type(&mut r.elem, subst),
        syn::Type::Group(g) => subst_type(&mut g.elem, subst),
        syn::Type::Paren(p) => subst_type(&mut p.elem, subst),
        _ => {}
    }
}
