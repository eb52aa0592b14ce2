//! The Rust items a kernel expands to: one type per instance with its PTX, its `KernelInfo` and a typed
//! safe launcher (argument types from the kernel's parameters), the kernel's documentation, the aliases of
//! a generic kernel, and the raw-address analysis that makes a launcher `unsafe`.

use crate::names::{requires_text, rust_ident};
use crate::resolve;
use crate::state::State;
use prism_core::ast::{Function, ScalarType};
use prism_core::{CompiledKernel, Diagnostic, ParamKind};
use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// The generic parameters of a kernel's struct: `<T, const N: u32>` (type parameters without their Prism
/// bound: the struct only names instances).
pub(crate) fn const_generics_decl(f: &syn::ItemFn) -> TokenStream {
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
pub(crate) fn phantom_fields(f: &syn::ItemFn) -> TokenStream {
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
pub(crate) fn kernel_aliases(root: &Function, item: &syn::ItemFn) -> TokenStream {
    let vis = &item.vis;
    let name = rust_ident(&root.name.name, root.name.span);
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

/// Rust type a kernel parameter takes in `launch`, the `KernelArg` expression and the runtime `ParamType`.
struct LaunchParam {
    decl: TokenStream,
    arg: TokenStream,
    spec: TokenStream,
    doc: String,
    /// Statements the typed launcher runs before launching (returning an error value).
    check: TokenStream,
}

pub(crate) fn elem_tokens(t: ScalarType) -> Option<(TokenStream, TokenStream)> {
    let rt = crate::paths::deps().runtime();
    Some(match t {
        ScalarType::U32 => (quote!(u32), quote!(U32)),
        ScalarType::I32 => (quote!(i32), quote!(I32)),
        ScalarType::U64 => (quote!(u64), quote!(U64)),
        ScalarType::I64 => (quote!(i64), quote!(I64)),
        ScalarType::F32 => (quote!(f32), quote!(F32)),
        ScalarType::F64 => (quote!(f64), quote!(F64)),
        ScalarType::F16 => (quote!(#rt::half::f16), quote!(F16)),
        ScalarType::BF16 => (quote!(#rt::half::bf16), quote!(BF16)),
        ScalarType::Bool => return None,
    })
}

fn launch_param(root: &Function, p: &prism_core::ParamInfo) -> Result<LaunchParam, Diagnostic> {
    let rt = crate::paths::deps().runtime();
    let span = root
        .params
        .iter()
        .find(|q| q.name.name == p.name)
        .map(|q| q.span)
        .unwrap_or(root.span);
    let name = rust_ident(&p.name, span);
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
                arg: quote!(#rt::KernelArg::#variant(#name)),
                spec: quote!(#rt::ParamSpec { name: #pname, ty: #rt::ParamType::#variant }),
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
                    quote!(#name: &mut #rt::DeviceBuffer<#ty>),
                    quote!(#name.as_arg_mut()),
                    format!("`{pname}: *mut {elem}` (`&mut DeviceBuffer<{elem}>`)"),
                )
            } else {
                (
                    quote!(#name: &#rt::DeviceBuffer<#ty>),
                    quote!(#name.as_arg()),
                    format!("`{pname}: *const {elem}` (`&DeviceBuffer<{elem}>`)"),
                )
            };
            Ok(LaunchParam {
                decl,
                arg,
                spec: quote!(#rt::ParamSpec {
                    name: #pname,
                    ty: #rt::ParamType::Ptr { elem: #rt::ElemType::#variant, mutable: #mutable }
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
    let rt = crate::paths::deps().runtime();
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
        // In the host API's words (`TensorSwizzle`, `box_dims` innermost first; rows × columns for 2-d,
        // the order `row_major_2d` takes them in), so a matching half does not read as a mismatch.
        let sw_name = sw.to_string();
        let want = match box_dims {
            [cols, rows] => format!(
                "a box of {rows} rows × {cols} columns (box_dims {box_dims:?}, innermost first) with TensorSwizzle::{sw_name}"
            ),
            _ => format!("box_dims {box_dims:?} (innermost first) with TensorSwizzle::{sw_name}"),
        };
        quote! {
            if #name.box_dims()[..] != [#(#box_dims),*][..]
                || #name.swizzle() != #rt::TensorSwizzle::#sw
            {
                return ::core::result::Result::Err(#rt::RuntimeError::BadArgs(::std::format!(
                    "tensor map `{}`: the kernel's TMA copies move {}; the map has box_dims {:?} with TensorSwizzle::{:?}",
                    #pname, #want, #name.box_dims(), #name.swizzle()
                )));
            }
        }
    };
    let (decl, doc) = if mutable {
        (
            quote!(#name: &mut #rt::TensorMapMut<'_, #ty, #rank_lit>),
            format!("`{pname}: TensorMapMut<{elem}, {rank}>` (`&mut prism_runtime::TensorMapMut<{elem}, {rank}>`)"),
        )
    } else {
        (
            quote!(#name: &#rt::TensorMap<'_, #ty, #rank_lit>),
            format!("`{pname}: TensorMap<{elem}, {rank}>` (`&prism_runtime::TensorMap<{elem}, {rank}>`)"),
        )
    };
    Ok(LaunchParam {
        decl,
        arg: quote!(#name.as_arg()),
        spec: quote!(#rt::ParamSpec {
            name: #pname,
            ty: #rt::ParamType::TensorMap {
                elem: #rt::ElemType::#variant,
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
pub(crate) fn raw_address_params(
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

pub(crate) fn emit_kernel(
    st: &State,
    root: &Function,
    ks: &[CompiledKernel],
    raw: &[String],
) -> Result<TokenStream, Vec<Diagnostic>> {
    let rt = crate::paths::deps().runtime();
    let item = match syn::parse2::<syn::ItemFn>(st.root_item.clone()) {
        Ok(i) => i,
        Err(e) => return Ok(e.to_compile_error()),
    };
    let vis = &item.vis;
    let docs: Vec<&syn::Attribute> = item
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let name = rust_ident(&root.name.name, root.name.span);
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
        let unsafety = unsafe_launch(raw, &mut launch_doc);
        out.extend(quote_spanned! {root.name.span=>
            #[allow(dead_code)]
            impl #ty {
                #[doc = #ptx_doc]
                pub const PTX: &'static str = #ptx;
                #[doc = #info_doc]
                pub const INFO: #rt::KernelInfo = unsafe {
                    // SAFETY: the PTX, its entry, parameters and contract are the ones prism-core checked and
                    // generated for this kernel instance (the macro expansion is the only caller).
                    #rt::KernelInfo::new_unchecked(
                        #disp,
                        #entry,
                        Self::PTX,
                        &[#(#specs),*],
                        #rt::Contract::new_unchecked(#tm, #te, #bm, #be, #smem).with_cluster(#cluster),
                    )
                };
                #[doc = #launch_doc]
                #[allow(clippy::too_many_arguments, unused_unsafe)]
                pub #unsafety fn launch(
                    #dev: &#rt::Device,
                    #dims: #rt::LaunchDims,
                    #(#decls),*
                ) -> ::core::result::Result<#rt::LaunchReport, #rt::RuntimeError> {
                    #(#checks)*
                    // SAFETY: `Self::INFO` is this kernel's checked PTX and contract, and the arguments have the
                    // types of its parameters (validated again by `Device::launch`).
                    unsafe { #dev.launch(&Self::INFO, #dims, &mut [#(#args),*]) }
                }
            }
            #rt::inventory::submit! {
                #rt::RegisteredKernel(&#ty_expr::INFO)
            }
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let header = kernel_header(root, &bound, &inst_docs);
    let fields = phantom_fields(&item);
    let mut all = quote! {
        #(#docs)*
        #[doc = #header]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name #generics #fields;
    };
    all.extend(out);
    all.extend(kernel_aliases(root, &item));
    Ok(all)
}

/// A launcher that passes 64-bit integers which may reach `unsafe` inline PTX as addresses is `unsafe`, and
/// its documentation says why (`raw` are those parameters).
fn unsafe_launch(raw: &[String], launch_doc: &mut String) -> TokenStream {
    if raw.is_empty() {
        return TokenStream::new();
    }
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
}

/// The kernel type's documentation: its perspective bound, parameters and instances.
fn kernel_header(root: &Function, bound: &str, inst_docs: &[String]) -> String {
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
    format!(
        "\n\n**Prism kernel** `{}`: perspective bound `requires({bound})`.\n\nParameters (perspective):\n{params_doc}\n\n\
         Instances (PTX entries and launch contracts):\n{}\n\n\
         Launch with `launch(&device, LaunchDims::new(grid, block), ..)`; `INFO` describes the kernel to the \
         runtime and `PTX` is the generated module.",
        root.name.name,
        inst_docs.join("\n")
    )
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
