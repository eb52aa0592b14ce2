//! The expansion pipeline: parse the root function, gather its device-function dependencies through the
//! `macro_rules!` callbacks (`state`), then run prism-core and emit items.

use crate::device;
use crate::names::{current_crate, requires_text};
use crate::resolve::{self, Target};
use crate::state::{self, DepTokens, Origin, Pending, State};
use prism_core::ast::{FnKind, Function, Ident as AstIdent, ScalarType};
use prism_core::diag::to_compile_errors;
use prism_core::{CompiledKernel, Diagnostic, ParamKind};
use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

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
                let m = Ident::new(name, span);
                (quote!(#krate :: #m), String::new())
            }
            (Target::SameCrate { name }, _) => {
                let m = Ident::new(name, span);
                (quote!(#m), String::new())
            }
            (Target::Qualified { alias, name }, _) => {
                let a = Ident::new(alias, span);
                let m = Ident::new(name, span);
                (quote!(#a :: #m), alias.clone())
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
    let mut out = to_compile_errors(&diags);
    if st.root_is_kernel {
        out.extend(fallback_items(&st.root_item));
        // The aliases too, so that code naming them adds no errors of its own.
        if let Ok(item) = syn::parse2::<syn::ItemFn>(st.root_item.clone()) {
            out.extend(kernel_aliases(root, &item));
        }
    }
    out
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
    let callback = Ident::new(&name.to_string(), Span::call_site());
    let misuse = format!(
        "`{name}!` is the Prism kernel `{name}`, not a macro: launch it from the host with \
         `{name}::launch(..)`; if this was meant to be another macro, rename the kernel, whose name shadows it here"
    );
    quote! {
        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #callback {
            (@root $($state:tt)*) => {
                ::prism_macros::__prism_resume! { @dep kernel [] #krate {} {} @root $($state)* }
            };
            ($($other:tt)*) => { ::core::compile_error! { #misuse } };
        }
    }
}

/// What a rejected kernel expands to besides its errors: the struct, and an `impl` with `PTX`, `INFO` and a
/// `launch` that accepts any arguments (one per parameter), so that uses of the kernel elsewhere in the crate
/// type-check and only Prism's errors are reported. None of it can run: the crate does not compile.
fn fallback_items(item: &TokenStream) -> TokenStream {
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
            pub const INFO: ::prism_runtime::KernelInfo = unsafe {
                // SAFETY: never launched: a rejected kernel leaves a `compile_error!`, so no binary exists.
                ::prism_runtime::KernelInfo::new_unchecked(
                    #disp,
                    "",
                    "",
                    &[],
                    ::prism_runtime::Contract::new_unchecked(1, ::core::option::Option::None, 1, ::core::option::Option::None, 0),
                )
            };
            /// Placeholder: the kernel did not compile (see the errors reported for it).
            #[allow(clippy::too_many_arguments)]
            pub fn launch<#(#tys),*>(
                _: &::prism_runtime::Device,
                _: ::prism_runtime::LaunchDims,
                #(_: #tys),*
            ) -> ::core::result::Result<::prism_runtime::LaunchReport, ::prism_runtime::RuntimeError> {
                ::core::unreachable!(#msg)
            }
        }
    }
}

/// The generic parameters of a kernel's struct: `<T, const N: u32>` (type parameters without their Prism
/// bound: the struct only names instances).
fn const_generics_decl(f: &syn::ItemFn) -> TokenStream {
    let params: Vec<TokenStream> = f
        .sig
        .generics
        .params
        .iter()
        .filter_map(|g| match g {
            syn::GenericParam::Const(c) => {
                let (i, t) = (&c.ident, &c.ty);
                Some(quote!(const #i: #t))
            }
            syn::GenericParam::Type(t) => {
                let i = &t.ident;
                Some(quote!(#i))
            }
            _ => None,
        })
        .collect();
    if params.is_empty() {
        TokenStream::new()
    } else {
        quote!(<#(#params),*>)
    }
}

/// `(PhantomData<(T, ..)>)` for a kernel struct with type parameters (Rust rejects unused ones), else empty.
fn phantom_fields(f: &syn::ItemFn) -> TokenStream {
    let tps: Vec<&Ident> = f
        .sig
        .generics
        .params
        .iter()
        .filter_map(|g| match g {
            syn::GenericParam::Type(t) => Some(&t.ident),
            _ => None,
        })
        .collect();
    if tps.is_empty() {
        TokenStream::new()
    } else {
        quote!((::core::marker::PhantomData<(#(#tps,)*)>))
    }
}

/// `pub type k_u32<const N: u32> = k<u32, N>;` for each `aliases = [..]` tuple of a generic kernel.
fn kernel_aliases(root: &Function, item: &syn::ItemFn) -> TokenStream {
    let vis = &item.vis;
    let name = Ident::new(&root.name.name, root.name.span);
    let consts: Vec<(&Ident, &syn::Type)> = item
        .sig
        .generics
        .params
        .iter()
        .filter_map(|g| match g {
            syn::GenericParam::Const(c) => Some((&c.ident, &c.ty)),
            _ => None,
        })
        .collect();
    let decl: Vec<TokenStream> = consts.iter().map(|(i, t)| quote!(const #i: #t)).collect();
    let decl = if decl.is_empty() {
        TokenStream::new()
    } else {
        quote!(<#(#decl),*>)
    };
    let cnames: Vec<&Ident> = consts.iter().map(|(i, _)| *i).collect();
    let mut out = TokenStream::new();
    for a in &root.aliases {
        let suffix: Vec<&str> = a.types.iter().map(|t| t.rust_name()).collect();
        let alias = Ident::new(
            &format!("{}_{}", root.name.name, suffix.join("_")),
            root.name.span,
        );
        let tys: Vec<TokenStream> = a
            .types
            .iter()
            .filter_map(|t| elem_tokens(*t).map(|(ty, _)| ty))
            .collect();
        let doc = format!(
            "`{}` with `{}`: an alias (`aliases = [..]`) under the name of the kernel before it was generic.",
            root.name.name,
            suffix.join(", ")
        );
        out.extend(quote! {
            #[doc = #doc]
            #[allow(non_camel_case_types)]
            #vis type #alias #decl = #name<#(#tys,)* #(#cnames),*>;
        });
    }
    out
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
                emit_kernel(st, &root, &ks, &raw)
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

/// Rust type a kernel parameter takes in `launch`, the `KernelArg` expression and the runtime `ParamType`.
struct LaunchParam {
    decl: TokenStream,
    arg: TokenStream,
    spec: TokenStream,
    doc: String,
    /// Statements the typed launcher runs before launching (returning an error value).
    check: TokenStream,
}

fn elem_tokens(t: ScalarType) -> Option<(TokenStream, TokenStream)> {
    Some(match t {
        ScalarType::U32 => (quote!(u32), quote!(U32)),
        ScalarType::I32 => (quote!(i32), quote!(I32)),
        ScalarType::U64 => (quote!(u64), quote!(U64)),
        ScalarType::I64 => (quote!(i64), quote!(I64)),
        ScalarType::F32 => (quote!(f32), quote!(F32)),
        ScalarType::F64 => (quote!(f64), quote!(F64)),
        ScalarType::F16 => (quote!(::prism_runtime::half::f16), quote!(F16)),
        ScalarType::BF16 => (quote!(::prism_runtime::half::bf16), quote!(BF16)),
        ScalarType::Bool => return None,
    })
}

fn launch_param(root: &Function, p: &prism_core::ParamInfo) -> Result<LaunchParam, Diagnostic> {
    let span = root
        .params
        .iter()
        .find(|q| q.name.name == p.name)
        .map(|q| q.span)
        .unwrap_or(root.span);
    let name = Ident::new(&p.name, span);
    let pname = &p.name;
    match &p.kind {
        ParamKind::Scalar(t) => {
            let (ty, variant) = match t {
                ScalarType::Bool => (quote!(bool), quote!(Bool)),
                ScalarType::F16 | ScalarType::BF16 => {
                    return Err(Diagnostic::new(
                        "LAUNCH",
                        span,
                        format!(
                            "kernel parameter `{pname}`: {t} scalars cannot be passed to a kernel"
                        ),
                    )
                    .help("pass the value as f32 and convert inside the kernel (`x as bf16`)"))
                }
                _ => elem_tokens(*t).expect("non-bool scalar"),
            };
            Ok(LaunchParam {
                decl: quote!(#name: #ty),
                arg: quote!(::prism_runtime::KernelArg::#variant(#name)),
                spec: quote!(::prism_runtime::ParamSpec { name: #pname, ty: ::prism_runtime::ParamType::#variant }),
                doc: format!("`{pname}: {t}`"),
                check: TokenStream::new(),
            })
        }
        ParamKind::TensorMap {
            elem,
            rank,
            mutable,
            box_dims,
            swizzle,
        } => tensor_map_param(
            name,
            pname,
            span,
            (*elem, *rank, *mutable),
            box_dims,
            *swizzle,
        ),
        ParamKind::Ptr { elem, mutable } => {
            let Some((ty, variant)) = elem_tokens(*elem) else {
                return Err(Diagnostic::new(
                    "LAUNCH",
                    span,
                    format!(
                        "kernel parameter `{pname}`: pointers to bool cannot be passed to a kernel"
                    ),
                )
                .help("use a `*const u32`/`*mut u32` buffer of 0/1 values"));
            };
            let (decl, arg, doc) = if *mutable {
                (
                    quote!(#name: &mut ::prism_runtime::DeviceBuffer<#ty>),
                    quote!(#name.as_arg_mut()),
                    format!("`{pname}: *mut {elem}` (`&mut DeviceBuffer<{elem}>`)"),
                )
            } else {
                (
                    quote!(#name: &::prism_runtime::DeviceBuffer<#ty>),
                    quote!(#name.as_arg()),
                    format!("`{pname}: *const {elem}` (`&DeviceBuffer<{elem}>`)"),
                )
            };
            Ok(LaunchParam {
                decl,
                arg,
                spec: quote!(::prism_runtime::ParamSpec {
                    name: #pname,
                    ty: ::prism_runtime::ParamType::Ptr { elem: ::prism_runtime::ElemType::#variant, mutable: #mutable }
                }),
                doc,
                check: TokenStream::new(),
            })
        }
    }
}

/// A `TensorMap<T, RANK>` parameter: the launcher takes `&prism_runtime::TensorMap<T, RANK>` and, when the
/// kernel loads from it, refuses a map whose box or swizzle differs from what its `tma_load`s fill (the
/// mbarrier expects exactly that many bytes; rule TMA, docs/SYNTAX.md).
fn tensor_map_param(
    name: Ident,
    pname: &str,
    span: Span,
    (elem, rank, mutable): (ScalarType, u32, bool),
    box_dims: &[u32],
    swizzle: prism_core::ast::SmemLayout,
) -> Result<LaunchParam, Diagnostic> {
    let Some((ty, variant)) = elem_tokens(elem) else {
        return Err(Diagnostic::new(
            "LAUNCH",
            span,
            format!("kernel parameter `{pname}`: tensor maps of bool are not supported"),
        ));
    };
    let rank_lit = rank as usize;
    let rank8 = rank as u8;
    let check = if box_dims.is_empty() {
        TokenStream::new()
    } else {
        let sw = match swizzle.span() {
            128 => quote!(B128),
            64 => quote!(B64),
            32 => quote!(B32),
            _ => quote!(None),
        };
        let want = format!("box {box_dims:?} with swizzle {swizzle}");
        quote! {
            if #name.box_dims()[..] != [#(#box_dims),*][..]
                || #name.swizzle() != ::prism_runtime::TensorSwizzle::#sw
            {
                return ::core::result::Result::Err(::prism_runtime::RuntimeError::BadArgs(::std::format!(
                    "tensor map `{}`: the kernel's TMA copies move {}, the map has box {:?} with swizzle {:?}",
                    #pname, #want, #name.box_dims(), #name.swizzle()
                )));
            }
        }
    };
    let (decl, doc) = if mutable {
        (
            quote!(#name: &mut ::prism_runtime::TensorMapMut<'_, #ty, #rank_lit>),
            format!("`{pname}: TensorMapMut<{elem}, {rank}>` (`&mut prism_runtime::TensorMapMut<{elem}, {rank}>`)"),
        )
    } else {
        (
            quote!(#name: &::prism_runtime::TensorMap<'_, #ty, #rank_lit>),
            format!("`{pname}: TensorMap<{elem}, {rank}>` (`&prism_runtime::TensorMap<{elem}, {rank}>`)"),
        )
    };
    Ok(LaunchParam {
        decl,
        arg: quote!(#name.as_arg()),
        spec: quote!(::prism_runtime::ParamSpec {
            name: #pname,
            ty: ::prism_runtime::ParamType::TensorMap {
                elem: ::prism_runtime::ElemType::#variant,
                rank: #rank8,
                writable: #mutable,
            }
        }),
        doc,
        check,
    })
}

fn opt_u32(v: Option<u32>) -> TokenStream {
    match v {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

fn const_value(v: i64) -> TokenStream {
    let l = Literal::i64_unsuffixed(v.unsigned_abs() as i64);
    if v < 0 {
        quote!({ -#l })
    } else {
        quote!(#l)
    }
}

/// The kernel's 64-bit integer parameters (`u64`/`i64`, the width of a global address) whose values reach an
/// argument of a device function that contains, or calls one that contains, `unsafe` inline PTX. Such a value
/// may be used as an address that inline PTX reads or writes, which no launch-time check can validate, so the
/// kernel's launcher is `unsafe` (pass memory as a typed pointer parameter instead, see
/// `prism_kernels::global_address_u64`). `graph` is `finish`'s call graph (0 = root, `j + 1` = `deps[j]`).
fn raw_address_params(
    root: &Function,
    deps: &[Function],
    graph: &[Vec<(usize, Span)>],
) -> Vec<String> {
    let candidates: Vec<String> = root
        .params
        .iter()
        .filter(|p| {
            matches!(
                p.ty,
                prism_core::ast::Type::Scalar(ScalarType::U64 | ScalarType::I64)
            )
        })
        .map(|p| p.name.name.clone())
        .collect();
    if candidates.is_empty() {
        return candidates;
    }
    let mut reach: Vec<bool> = deps.iter().map(|f| resolve::has_unsafe(&f.body)).collect();
    loop {
        let mut changed = false;
        for j in 0..deps.len() {
            if !reach[j]
                && graph
                    .get(j + 1)
                    .is_some_and(|es| es.iter().any(|(to, _)| *to > 0 && reach[to - 1]))
            {
                reach[j] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    resolve::params_reaching(root, &candidates, &|callee| {
        deps.iter()
            .position(|f| f.name.name == callee)
            .is_some_and(|j| reach[j])
    })
}

fn emit_kernel(st: &State, root: &Function, ks: &[CompiledKernel], raw: &[String]) -> TokenStream {
    let item = match syn::parse2::<syn::ItemFn>(st.root_item.clone()) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let vis = &item.vis;
    let docs: Vec<&syn::Attribute> = item
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let name = Ident::new(&root.name.name, root.name.span);
    let generics = const_generics_decl(&item);
    let bound = requires_text(root);
    let mut out = TokenStream::new();
    let mut errors = Vec::new();
    let mut inst_docs = Vec::new();
    for k in ks {
        let mut params = Vec::new();
        for p in &k.params {
            match launch_param(root, p) {
                Ok(lp) => params.push(lp),
                Err(d) => errors.push(d),
            }
        }
        if !errors.is_empty() {
            continue;
        }
        let mut vals: Vec<TokenStream> = k
            .types
            .iter()
            .filter_map(|t| elem_tokens(*t).map(|(ty, _)| ty))
            .collect();
        vals.extend(k.instance.iter().map(|v| const_value(*v)));
        let (ty, ty_expr, disp) = if vals.is_empty() {
            (quote!(#name), quote!(#name), root.name.name.clone())
        } else {
            let disp = format!(
                "{}<{}>",
                root.name.name,
                k.types
                    .iter()
                    .map(|t| t.to_string())
                    .chain(k.instance.iter().map(|v| v.to_string()))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            (quote!(#name<#(#vals),*>), quote!(#name::<#(#vals),*>), disp)
        };
        let c = &k.contract;
        let contract_doc = contract_text(c);
        inst_docs.push(format!("* `{disp}`: entry `{}`; {contract_doc}", k.entry));
        let (tm, bm, smem) = (c.threads_multiple_of, c.blocks_multiple_of, c.smem_bytes);
        let cluster = c.cluster;
        let (te, be) = (opt_u32(c.threads_exact), opt_u32(c.blocks_exact));
        let entry = &k.entry;
        let ptx = &k.ptx;
        let specs = params.iter().map(|p| &p.spec);
        let decls = params.iter().map(|p| &p.decl);
        let args = params.iter().map(|p| &p.arg);
        let checks = params.iter().map(|p| &p.check);
        let param_docs = params
            .iter()
            .map(|p| format!("* {}", p.doc))
            .collect::<Vec<_>>()
            .join("\n");
        let dev = if k.params.iter().any(|p| p.name == "dev") {
            format_ident!("dev_")
        } else {
            format_ident!("dev")
        };
        let dims = if k.params.iter().any(|p| p.name == "dims") {
            format_ident!("dims_")
        } else {
            format_ident!("dims")
        };
        let ptx_doc =
            format!("PTX of `{disp}` (entry `{entry}`), generated at compile time by prism-core.");
        let info_doc = format!(
            "Launch description of `{disp}`: entry `{entry}`, perspective bound `requires({bound})`, {contract_doc}."
        );
        let mut launch_doc = format!(
            "Launches `{disp}` on `{dev}` with `{dims}` (1-D grid of blocks).\n\n\
             The contract is validated first ({contract_doc}); a launch that violates it returns \
             `Err(RuntimeError::BadLaunch(..))` and nothing runs.\n\nParameters:\n{param_docs}"
        );
        let unsafety = if raw.is_empty() {
            TokenStream::new()
        } else {
            let names = raw
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            launch_doc.push_str(&format!(
                "\n\n# Safety\n\n{names} reach{} a device function with `unsafe` inline PTX, which may use \
                 {} as a device address: no launch-time check can validate {}. The caller must pass values that \
                 those device functions' documentation allows (typically the address of live memory of this \
                 device, of the size the kernel indexes). To get a safe launcher, take the memory as a typed \
                 pointer parameter and compute the address in the kernel (`prism_kernels::global_address_u64`).",
                if raw.len() == 1 { "es" } else { "" },
                if raw.len() == 1 { "it" } else { "them" },
                if raw.len() == 1 { "it" } else { "them" },
            ));
            quote!(unsafe)
        };
        out.extend(quote_spanned! {root.name.span=>
            #[allow(dead_code)]
            impl #ty {
                #[doc = #ptx_doc]
                pub const PTX: &'static str = #ptx;
                #[doc = #info_doc]
                pub const INFO: ::prism_runtime::KernelInfo = unsafe {
                    // SAFETY: the PTX, its entry, parameters and contract are the ones prism-core checked and
                    // generated for this kernel instance (the macro expansion is the only caller).
                    ::prism_runtime::KernelInfo::new_unchecked(
                        #disp,
                        #entry,
                        Self::PTX,
                        &[#(#specs),*],
                        ::prism_runtime::Contract::new_unchecked(#tm, #te, #bm, #be, #smem).with_cluster(#cluster),
                    )
                };
                #[doc = #launch_doc]
                #[allow(clippy::too_many_arguments, unused_unsafe)]
                pub #unsafety fn launch(
                    #dev: &::prism_runtime::Device,
                    #dims: ::prism_runtime::LaunchDims,
                    #(#decls),*
                ) -> ::core::result::Result<::prism_runtime::LaunchReport, ::prism_runtime::RuntimeError> {
                    #(#checks)*
                    // SAFETY: `Self::INFO` is this kernel's checked PTX and contract, and the arguments have the
                    // types of its parameters (validated again by `Device::launch`).
                    unsafe { #dev.launch(&Self::INFO, #dims, &mut [#(#args),*]) }
                }
            }
            ::prism_runtime::inventory::submit! {
                ::prism_runtime::RegisteredKernel(&#ty_expr::INFO)
            }
        });
    }
    if !errors.is_empty() {
        return fail(st, root, errors);
    }
    let params_doc = root
        .params
        .iter()
        .map(|p| {
            let at = p.at.map(|a| a.perspective.to_string()).unwrap_or_else(|| {
                root.requires
                    .first()
                    .map(|r| r.perspective.to_string())
                    .unwrap_or_default()
            });
            format!("* `{}` at `{at}`", p.name.name)
        })
        .collect::<Vec<_>>()
        .join("\n");
    let header = format!(
        "\n\n**Prism kernel** `{}`: perspective bound `requires({bound})`.\n\nParameters (perspective):\n{params_doc}\n\n\
         Instances (PTX entries and launch contracts):\n{}\n\n\
         Launch with `launch(&device, LaunchDims::new(grid, block), ..)`; `INFO` describes the kernel to the \
         runtime and `PTX` is the generated module.",
        root.name.name,
        inst_docs.join("\n")
    );
    let fields = phantom_fields(&item);
    let mut all = quote! {
        #(#docs)*
        #[doc = #header]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name #generics #fields;
    };
    all.extend(out);
    all.extend(kernel_aliases(root, &item));
    all
}

fn contract_text(c: &prism_core::Contract) -> String {
    let mut parts = Vec::new();
    match c.threads_exact {
        Some(t) => parts.push(format!("exactly {t} threads per block")),
        None => parts.push(format!(
            "threads per block a multiple of {}",
            c.threads_multiple_of.max(1)
        )),
    }
    match c.blocks_exact {
        Some(b) => parts.push(format!("exactly {b} blocks")),
        None if c.blocks_multiple_of > 1 => {
            parts.push(format!("blocks a multiple of {}", c.blocks_multiple_of))
        }
        None => {}
    }
    parts.push(format!("{} bytes of shared memory", c.smem_bytes));
    parts.join(", ")
}
