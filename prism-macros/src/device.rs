//! The items a `#[prism_device]` function expands to (besides its own check): the callback macros that hand
//! its tokens to callers, and a documentation-only item.

use crate::kernel::{current_crate, requires_text};
use prism_core::ast::{Function, Type};
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

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
        Type::Shared { elem, .. } => format!("Shared<[{elem}; _]>"),
        Type::TensorMap {
            elem,
            rank,
            mutable: false,
        } => format!("TensorMap<{elem}, {rank}>"),
        Type::TensorMap { elem, rank, .. } => format!("TensorMapMut<{elem}, {rank}>"),
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
    let params = f
        .params
        .iter()
        .map(|p| {
            let at = match (&p.ty, p.at) {
                (_, Some(a)) => a.perspective.to_string(),
                (Type::ArrayRef { .. }, None) => "thread[1]".to_string(),
                _ => default.clone(),
            };
            format!("* `{}: {}` at `{at}`", p.name.name, type_text(&p.ty))
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
    let callback = Ident::new(&name.to_string(), Span::call_site());
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
                (@root $($state:tt)*) => {
                    ::prism_macros::__prism_resume! { @dep extern [$crate] #krate { #attr } { #item } @root $($state)* }
                };
                ($($other:tt)*) => { ::core::compile_error! { #misuse } };
            }
        }
    } else {
        quote! {
            #[doc(hidden)]
            #[allow(unused_macros)]
            macro_rules! #callback {
                (@root $($state:tt)*) => {
                    ::prism_macros::__prism_resume! { @dep local [] #krate { #attr } { #item } @root $($state)* }
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
