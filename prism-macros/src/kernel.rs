//! The expansion pipeline: parse the root function, gather its device-function dependencies through the
//! `macro_rules!` callbacks (`state`), then run prism-core and emit items.

use crate::device;
use crate::launch::{
    self, const_generics_decl, kernel_aliases, phantom_fields, raw_address_params,
};
use crate::names::{current_crate, rust_ident};
use crate::resolve::{self, Target};
use crate::state::{self, DepTokens, Origin, Pending, State};
use prism_core::ast::{FnKind, Function, Ident as AstIdent};
use prism_core::diag::to_compile_errors;
use prism_core::Diagnostic;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

fn internal(msg: impl std::fmt::Display) -> TokenStream {
    let msg =
        format!("internal error in Prism's macro expansion: {msg}. This is a bug in prism-macros");
    quote!(::core::compile_error! { #msg })
}

/// Entry point of both attributes.
pub fn expand_attr(kind: FnKind, attr: TokenStream, item: TokenStream) -> TokenStream {
    let parsed = prism_core::parse::parse_function(kind, attr.clone(), item.clone());
    let mut out = TokenStream::new();
    if kind == FnKind::Kernel {
        // A callback macro with the kernel's name, so that a call of this kernel from a kernel or device
        // function is reported as `[UNKNOWN-FN]` (kernels are not callable) rather than "cannot find macro".
        out.extend(kernel_marker(&item));
    }
    if kind == FnKind::Device {
        // The callback macros and the documentation item are emitted even when the function has errors, so
        // that its callers see one clear error ("`f` does not compile") rather than "cannot find macro".
        out.extend(device::items(&attr, &item, parsed.as_ref().ok()));
    }
    let root = match parsed {
        Ok(f) => f,
        Err(diags) => {
            out.extend(to_compile_errors(&diags));
            if kind == FnKind::Kernel {
                out.extend(fallback_items(&item));
            }
            return out;
        }
    };
    let st = State {
        macros: crate::paths::deps().macros(),
        root_is_kernel: kind == FnKind::Kernel,
        root_attr: attr,
        root_item: item,
        done: Vec::new(),
        aliases: Vec::new(),
        pending: Vec::new(),
    };
    out.extend(advance(st, &root, &root, None));
    out
}

/// Continuation after a dependency's macro delivered it.
pub fn resume(input: TokenStream) -> TokenStream {
    let (dep, mut st) = match state::parse(input) {
        Ok(x) => x,
        Err(e) => return internal(e),
    };
    let Some(mut dep) = dep else {
        return internal("continuation without a delivered device function");
    };
    if st.pending.is_empty() {
        return internal("a device function was delivered but none was requested");
    }
    let req = st.pending.remove(0);
    dep.via = req.path.clone();
    // A `pub` device function's one callback macro says `extern [$crate]`; reached from its own crate (through
    // textual scope) it is a local function.
    if matches!(dep.origin, Origin::Extern(_)) && dep.crate_name == current_crate() {
        dep.origin = Origin::Local;
    }
    let root = match prism_core::parse::parse_function(
        if st.root_is_kernel {
            FnKind::Kernel
        } else {
            FnKind::Device
        },
        st.root_attr.clone(),
        st.root_item.clone(),
    ) {
        Ok(f) => f,
        // The root parsed before the first hop; parsing is deterministic.
        Err(d) => return to_compile_errors(&d),
    };
    if let Origin::Kernel = dep.origin {
        let name = path_text(&req.path);
        let d = kernel_call(&name, dep.call_span());
        return fail(&st, &root, vec![d]);
    }
    // Parse the delivered function; if it does not compile, say so at the call (its own expansion reports
    // the details at its definition).
    let f = match prism_core::parse::parse_function(
        FnKind::Device,
        dep.attr.clone(),
        dep.item.clone(),
    ) {
        Ok(f) => f,
        Err(_) => {
            let span = dep.call_span();
            let d = Diagnostic::new(
                "CALL",
                span,
                format!(
                    "device function `{}` (crate `{}`) has errors, so `{}` cannot be checked against it",
                    path_text(&req.path),
                    dep.crate_name,
                    root.name
                ),
            )
            .help("fix the errors reported at the device function's definition");
            return fail(&st, &root, vec![d]);
        }
    };
    let key = format!("{}::{}", dep.crate_name, f.name.name);
    if !req.alias.is_empty() && !st.aliases.iter().any(|(a, _)| *a == req.alias) {
        st.aliases.push((req.alias.clone(), dep.crate_name.clone()));
    }
    let already = st
        .done
        .iter()
        .any(|d| dep_key(d).as_deref() == Some(key.as_str()));
    if already {
        return advance(st, &root, &root, None);
    }
    st.done.push(dep.clone());
    advance(st, &root, &f, Some(&dep))
}

/// Identity `crate::name` of a collected dependency.
fn dep_key(d: &DepTokens) -> Option<String> {
    let name = fn_name(&d.item)?;
    Some(format!("{}::{}", d.crate_name, name))
}

fn fn_name(item: &TokenStream) -> Option<String> {
    syn::parse2::<syn::ItemFn>(item.clone())
        .ok()
        .map(|f| f.sig.ident.to_string())
}

fn path_text(path: &TokenStream) -> String {
    path.to_string().replace(' ', "")
}

/// `[UNKNOWN-FN]` for a call of the kernel `name` (at `span`, the called name).
fn kernel_call(name: &str, span: Span) -> Diagnostic {
    Diagnostic::new(
        "UNKNOWN-FN",
        span,
        format!("`{name}` is a kernel (`#[prism_kernel]`), not a device function: kernels cannot be called"),
    )
    .help(
        "a kernel is launched from the host (`name::launch(..)`); to share its code, move it into a \
         `#[prism_device]` function and call that from both",
    )
}

/// Canonical key of `target` called from function `from` (of crate `from_crate`), given the known aliases.
fn key_of(target: &Target, from_crate: &str, aliases: &[(String, String)]) -> String {
    match target {
        Target::SameCrate { name } => format!("{from_crate}::{name}"),
        Target::Qualified { alias, name } => match aliases.iter().find(|(a, _)| a == alias) {
            Some((_, c)) => format!("{c}::{name}"),
            None => format!("@{alias}::{name}"),
        },
    }
}

fn origin_crate(dep: Option<&DepTokens>) -> String {
    dep.map(|d| d.crate_name.clone())
        .unwrap_or_else(current_crate)
}

/// Adds `f`'s callees (f is the root, or the dependency `dep` just delivered) to the pending list, then
/// requests the next pending dependency or, when none is left, finishes.
fn advance(mut st: State, root: &Function, f: &Function, dep: Option<&DepTokens>) -> TokenStream {
    let from_crate = origin_crate(dep);
    let root_key = format!("{}::{}", current_crate(), root.name.name);
    // Hygiene of the root's tokens (the user's code), location of the call: textual-scope macro names
    // (`__prism_local_g`) must resolve as if written where the root function is.
    let hyg = root.span;
    for (target, call_span) in resolve::callees(f) {
        let key = key_of(&target, &from_crate, &st.aliases);
        let is_done = st
            .done
            .iter()
            .any(|d| dep_key(d).as_deref() == Some(key.as_str()));
        let is_pending = st.pending.iter().any(|p| p.key == key);
        if is_done || is_pending || key == root_key {
            // Already collected or requested; a call back to the root is a cycle, reported by `finish`.
            continue;
        }
        let span = hyg.located_at(call_span);
        // Every device function's callback macro has the function's name (`device::items`): `name!` in
        // textual scope for this crate, `krate::name!` for exported ones.
        let (path, alias) = match (&target, dep.map(|d| &d.origin)) {
            (Target::SameCrate { name }, Some(Origin::Extern(krate))) => {
                let m = rust_ident(name, span);
                (quote!(#krate :: #m), String::new())
            }
            (Target::SameCrate { name }, _) => {
                let m = rust_ident(name, span);
                (quote!(#m), String::new())
            }
            (Target::Qualified { alias, name }, _) => {
                let a = alias.split("::").map(|seg| Ident::new(seg, span));
                let m = rust_ident(name, span);
                (quote!(#(#a ::)* #m), alias.clone())
            }
        };
        st.pending.push(Pending { key, alias, path });
    }
    if let Some(next) = st.pending.first() {
        let path = next.path.clone();
        let state = st.to_tokens();
        return quote!(#path ! { #state });
    }
    finish(&st, root)
}

/// Emits what a failed expansion leaves behind: the errors, and for kernels items with the kernel's names
/// (`fallback_items`) so that code using the kernel does not add errors of its own.
fn fail(st: &State, root: &Function, diags: Vec<Diagnostic>) -> TokenStream {
    let mut out = to_compile_errors(&reported_here(root, diags));
    if st.root_is_kernel {
        out.extend(fallback_items(&st.root_item));
        // The aliases too, so that code naming them adds no errors of its own.
        if let Ok(item) = syn::parse2::<syn::ItemFn>(st.root_item.clone()) {
            out.extend(kernel_aliases(root, &item));
        }
    }
    out
}

/// The errors this expansion reports: a device function's own errors are reported by its own
/// `#[prism_device]` at its definition, so here they become one error at the kernel naming the functions.
fn reported_here(root: &Function, diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let (callee, mut own): (Vec<Diagnostic>, Vec<Diagnostic>) =
        diags.into_iter().partition(|d| d.in_callee.is_some());
    if own.is_empty() {
        if let Some(first) = callee.first() {
            let mut names: Vec<&str> = callee
                .iter()
                .filter_map(|d| d.in_callee.as_deref())
                .collect();
            names.dedup();
            own.push(Diagnostic::new(
                first.rule,
                root.name.span,
                format!(
                    "`{}` calls `{}`, which breaks this rule in its own body (reported at its definition)",
                    root.name.name,
                    names.join("`, `")
                ),
            ));
        }
    }
    own
}

/// The kernel's name from its item tokens (also when the item does not parse as a Rust `fn`).
fn item_name(item: &TokenStream) -> Option<Ident> {
    if let Ok(f) = syn::parse2::<syn::ItemFn>(item.clone()) {
        return Some(f.sig.ident);
    }
    let toks: Vec<proc_macro2::TokenTree> = item.clone().into_iter().collect();
    toks.windows(2).find_map(|w| match (&w[0], &w[1]) {
        (proc_macro2::TokenTree::Ident(f), proc_macro2::TokenTree::Ident(n)) if f == "fn" => {
            Some(n.clone())
        }
        _ => None,
    })
}

/// The callback macro of a kernel (see `expand_attr`): it delivers only the fact that the name is a kernel.
fn kernel_marker(item: &TokenStream) -> TokenStream {
    let Some(name) = item_name(item) else {
        return TokenStream::new();
    };
    let krate = current_crate();
    let mut callback = name.clone();
    callback.set_span(Span::call_site());
    let misuse = format!(
        "`{name}!` is the Prism kernel `{name}`, not a macro: launch it from the host with \
         `{name}::launch(..)`; if this was meant to be another macro, rename the kernel, whose name shadows it here"
    );
    quote! {
        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #callback {
            (@root [$($m:tt)*] $($state:tt)*) => {
                $($m)*::__prism_resume! { @dep kernel [] #krate {} {} @root [$($m)*] $($state)* }
            };
            ($($other:tt)*) => { ::core::compile_error! { #misuse } };
        }
    }
}

/// What a rejected kernel expands to besides its errors: the struct, and an `impl` with `PTX`, `INFO` and a
/// `launch` that accepts any arguments (one per parameter), so that uses of the kernel elsewhere in the crate
/// type-check and only Prism's errors are reported. None of it can run: the crate does not compile.
fn fallback_items(item: &TokenStream) -> TokenStream {
    let rt = crate::paths::deps().runtime();
    let f = match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(f) => f,
        Err(_) => return TokenStream::new(),
    };
    let vis = &f.vis;
    let name = &f.sig.ident;
    let generics = const_generics_decl(&f);
    let args: Vec<&Ident> = f
        .sig
        .generics
        .params
        .iter()
        .filter_map(|g| match g {
            syn::GenericParam::Const(c) => Some(&c.ident),
            syn::GenericParam::Type(t) => Some(&t.ident),
            _ => None,
        })
        .collect();
    let ty = if args.is_empty() {
        quote!(#name)
    } else {
        quote!(#name<#(#args),*>)
    };
    let tys: Vec<Ident> = (0..f.sig.inputs.len())
        .map(|i| format_ident!("P{}", i))
        .collect();
    let disp = name.to_string();
    let msg = format!("kernel `{disp}` was rejected by Prism at compile time");
    let fields = phantom_fields(&f);
    quote! {
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name #generics #fields;
        #[allow(dead_code, clippy::all)]
        impl #generics #ty {
            /// Placeholder: the kernel did not compile (see the errors reported for it).
            pub const PTX: &'static str = "";
            /// Placeholder: the kernel did not compile (see the errors reported for it).
            pub const INFO: #rt::KernelInfo = unsafe {
                // SAFETY: never launched: a rejected kernel leaves a `compile_error!`, so no binary exists.
                #rt::KernelInfo::new_unchecked(
                    #disp,
                    "",
                    "",
                    &[],
                    #rt::Contract::new_unchecked(1, ::core::option::Option::None, 1, ::core::option::Option::None, 0),
                )
            };
            /// Placeholder: the kernel did not compile (see the errors reported for it).
            #[allow(clippy::too_many_arguments)]
            pub fn launch<#(#tys),*>(
                _: &#rt::Device,
                _: #rt::LaunchDims,
                #(_: #tys),*
            ) -> ::core::result::Result<#rt::LaunchReport, #rt::RuntimeError> {
                ::core::unreachable!(#msg)
            }
        }
    }
}

/// All dependencies are collected: parse them, point every call at its dependency, check for cycles, run
/// prism-core.
fn finish(st: &State, root: &Function) -> TokenStream {
    let mut deps: Vec<Function> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    let mut errors = Vec::new();
    for d in &st.done {
        match prism_core::parse::parse_function(FnKind::Device, d.attr.clone(), d.item.clone()) {
            Ok(mut f) => {
                keys.push(format!("{}::{}", d.crate_name, f.name.name));
                if let Origin::Extern(_) = d.origin {
                    f.origin = Some(d.crate_name.clone());
                }
                deps.push(f);
            }
            Err(_) => errors.push(Diagnostic::new(
                "CALL",
                d.call_span(),
                format!("device function `{}` has errors", path_text(&d.via)),
            )),
        }
    }
    if !errors.is_empty() {
        return fail(st, root, errors);
    }
    // Internal names: the function's own name unless two dependencies share it (then `crate__name`).
    let names: Vec<String> = deps
        .iter()
        .zip(&keys)
        .map(|(f, k)| {
            let clash = deps.iter().filter(|g| g.name.name == f.name.name).count() > 1
                || (f.name.name == root.name.name
                    && *k != format!("{}::{}", current_crate(), root.name.name));
            if clash {
                k.replace("::", "__")
            } else {
                f.name.name.clone()
            }
        })
        .collect();
    let cur = current_crate();
    let root_key = format!("{cur}::{}", root.name.name);
    // Rewrite calls: every device-function call becomes a single-segment path naming its dependency, and
    // record the call graph (by index: 0 = root, i + 1 = deps[i]) for the cycle check.
    let mut graph: Vec<Vec<(usize, Span)>> = vec![Vec::new(); deps.len() + 1];
    let mut root = root.clone();
    let crates: Vec<String> = std::iter::once(cur.clone())
        .chain(st.done.iter().map(|d| d.crate_name.clone()))
        .collect();
    for idx in 0..=deps.len() {
        let from_crate = crates[idx].clone();
        let func = if idx == 0 {
            &mut root
        } else {
            &mut deps[idx - 1]
        };
        let edges = &mut graph[idx];
        resolve::visit_calls(func, &mut |path, span| {
            let Some(t) = resolve::classify(path) else {
                return;
            };
            let key = key_of(&t, &from_crate, &st.aliases);
            let last_span = path.last().map(|i| i.span).unwrap_or(span);
            if key == root_key {
                edges.push((0, last_span));
                return;
            }
            if let Some(j) = keys.iter().position(|k| *k == key) {
                edges.push((j + 1, last_span));
                *path = vec![AstIdent {
                    name: names[j].clone(),
                    span: last_span,
                }];
            }
        });
    }
    if st.root_is_kernel {
        // A call back to the kernel itself: kernels are not callable (not a recursion of device functions).
        if let Some(&(_, span)) = graph.iter().flatten().find(|(to, _)| *to == 0) {
            return fail(st, &root, vec![kernel_call(&root.name.name, span)]);
        }
    }
    if let Some(d) = find_cycle(&graph, &root, &deps) {
        return fail(st, &root, vec![d]);
    }
    for (f, n) in deps.iter_mut().zip(&names) {
        f.name.name = n.clone();
    }
    if std::env::var_os("PRISM_TRACE_EXPANSION").is_some() {
        // Debugging aid for the composition mechanism (docs/COMPOSITION.md).
        let list: Vec<String> = deps
            .iter()
            .zip(&keys)
            .map(|(f, k)| format!("{} ({k}, origin {:?})", f.name.name, f.origin))
            .collect();
        eprintln!(
            "prism: {} `{}` deps: [{}]",
            if st.root_is_kernel {
                "kernel"
            } else {
                "device"
            },
            root.name.name,
            list.join(", ")
        );
    }
    if st.root_is_kernel {
        match prism_core::compile_kernel(&root, &deps) {
            Ok(ks) => {
                let raw = raw_address_params(&root, &deps, &graph);
                launch::emit_kernel(st, &root, &ks, &raw).unwrap_or_else(|d| fail(st, &root, d))
            }
            Err(d) => fail(st, &root, d),
        }
    } else {
        match prism_core::check_device(&root, &deps) {
            Ok(()) => TokenStream::new(),
            Err(d) => to_compile_errors(&d),
        }
    }
}

/// Depth-first search for a call cycle reachable from the root; reports it at the call that closes it.
fn find_cycle(
    graph: &[Vec<(usize, Span)>],
    root: &Function,
    deps: &[Function],
) -> Option<Diagnostic> {
    let name = |i: usize| {
        if i == 0 {
            root.name.name.clone()
        } else {
            deps[i - 1].name.name.clone()
        }
    };
    // 0 = unvisited, 1 = on the stack, 2 = finished.
    let mut mark = vec![0u8; graph.len()];
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    mark[0] = 1;
    while let Some(&mut (node, ref mut next)) = stack.last_mut() {
        if let Some(&(to, span)) = graph[node].get(*next) {
            *next += 1;
            match mark[to] {
                0 => {
                    mark[to] = 1;
                    stack.push((to, 0));
                }
                1 => {
                    let start = stack.iter().position(|(n, _)| *n == to).unwrap_or(0);
                    let mut chain: Vec<String> =
                        stack[start..].iter().map(|(n, _)| name(*n)).collect();
                    chain.push(name(to));
                    return Some(
                        Diagnostic::new(
                            "CALL",
                            span,
                            format!("recursive device-function call: {}", chain.join(" -> ")),
                        )
                        .help("device functions are inlined into the kernel, so they cannot call themselves"),
                    );
                }
                _ => {}
            }
        } else {
            mark[node] = 2;
            stack.pop();
        }
    }
    None
}
