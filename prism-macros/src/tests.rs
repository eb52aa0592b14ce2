//! Expansion-shape tests: the macros' pipeline on token streams (proc_macro2), without rustc.

use crate::kernel::{expand_attr, resume};
use prism_core::ast::FnKind;
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::quote;

fn s(ts: &TokenStream) -> String {
    ts.to_string()
}

/// `ts` without its top-level `macro_rules!` definitions (the callback macros, whose misuse arm holds a
/// `compile_error!` of its own), as text.
fn items(ts: &TokenStream) -> String {
    let toks: Vec<TokenTree> = ts.clone().into_iter().collect();
    let mut out = TokenStream::new();
    let mut i = 0;
    while i < toks.len() {
        if matches!(&toks[i], TokenTree::Ident(m) if m == "macro_rules") {
            i += 4; // `macro_rules` `!` name { .. }
            continue;
        }
        out.extend([toks[i].clone()]);
        i += 1;
    }
    out.to_string()
}

#[test]
fn kernel_without_calls_expands_to_struct_info_launch_and_registration() {
    let out = expand_attr(
        FnKind::Kernel,
        quote!(requires(grid[1], block[1], thread[1])),
        quote!(
            /// Adds.
            pub fn add(a: *const f32, c: *mut f32, n: u32) {
                #[at(thread[1])]
                let i: u32 = id();
                partition(
                    c,
                    thread[1],
                    |x| i + x,
                    |c_th| {
                        group(thread[1], || {
                            if i < n {
                                c_th[0] = a[i];
                            }
                        });
                    },
                );
            }
        ),
    );
    let t = s(&out);
    assert!(!items(&out).contains("compile_error"), "{t}");
    assert!(
        t.contains("macro_rules ! add"),
        "a callback macro marks the kernel: {t}"
    );
    assert!(t.contains("@ dep kernel []"), "{t}");
    assert!(t.contains("pub struct add ;"), "{t}");
    assert!(t.contains("impl add {"), "{t}");
    assert!(t.contains("pub const PTX : & 'static str"), "{t}");
    assert!(
        t.contains("pub const INFO : :: prism_runtime :: KernelInfo"),
        "{t}"
    );
    assert!(
        t.contains("a : & :: prism_runtime :: DeviceBuffer < f32 >"),
        "{t}"
    );
    assert!(
        t.contains("c : & mut :: prism_runtime :: DeviceBuffer < f32 >"),
        "{t}"
    );
    assert!(t.contains("n : u32"), "{t}");
    assert!(t.contains("dev . launch (& Self :: INFO , dims , & mut [a . as_arg () , c . as_arg_mut () , :: prism_runtime :: KernelArg :: U32 (n)])"), "{t}");
    assert!(
        t.contains(":: prism_runtime :: inventory :: submit !"),
        "{t}"
    );
    assert!(t.contains("\" Adds.\""), "doc comments are kept: {t}");
    assert!(
        t.contains("requires(grid[1], block[1], thread[1])"),
        "docs state the perspective bound: {t}"
    );
}

#[test]
fn template_kernel_has_one_impl_per_instance() {
    let out = expand_attr(
        FnKind::Kernel,
        quote!(
            requires(grid[1], block[1], thread[32]),
            threads = 64,
            instances = [1, 2]
        ),
        quote!(
            pub fn fill<const N: u32>(c: *mut i32) {
                #[at(thread[1])]
                let i: u32 = id();
                partition(
                    c,
                    thread[1],
                    |x| i * N + x,
                    |c_th| {
                        group(thread[1], || {
                            for j in 0..N {
                                c_th[j] = 1;
                            }
                        });
                    },
                );
            }
        ),
    );
    let t = s(&out);
    assert!(!items(&out).contains("compile_error"), "{t}");
    assert!(t.contains("pub struct fill < const N : u32 > ;"), "{t}");
    assert!(t.contains("impl fill < 1 > {"), "{t}");
    assert!(t.contains("impl fill < 2 > {"), "{t}");
    assert!(t.contains("\"fill<2>\""), "{t}");
    assert!(t.contains("& fill :: < 2 > :: INFO"), "{t}");
    assert!(
        t.contains(":: prism_runtime :: Contract :: new_unchecked (32u32 , :: core :: option :: Option :: Some (64u32)"),
        "{t}"
    );
}

#[test]
fn kernel_errors_become_compile_errors_and_placeholder_items() {
    let out = expand_attr(
        FnKind::Kernel,
        quote!(requires(grid[1], block[1], thread[1])),
        quote!(
            pub fn k() {
                sync_warp();
            }
        ),
    );
    let t = s(&out);
    assert!(t.contains("compile_error"), "{t}");
    assert!(t.contains("pub struct k ;"), "{t}");
    // Placeholders with the kernel's names, so that code using the kernel adds no errors of its own.
    assert!(t.contains("pub const PTX"), "{t}");
    assert!(t.contains("pub const INFO"), "{t}");
    assert!(t.contains("pub fn launch < >"), "{t}");
    assert!(t.contains("unreachable !"), "{t}");
    assert!(
        !t.contains("inventory"),
        "a rejected kernel is not registered: {t}"
    );
}

#[test]
fn device_function_exports_callback_macros() {
    let item = quote!(
        pub fn lane_copy(#[at(thread[1])] x: u32) -> u32 {
            x
        }
    );
    let out = expand_attr(FnKind::Device, quote!(requires(thread[1])), item);
    let t = s(&out);
    // One callback macro with the function's own name: exported, and used by this crate in textual scope.
    assert!(
        t.contains("# [macro_export] macro_rules ! lane_copy"),
        "{t}"
    );
    assert_eq!(t.matches("macro_rules !").count(), 1, "{t}");
    assert!(t.contains("@ dep extern [$ crate]"), "{t}");
    assert!(!t.contains("__prism_local"), "{t}");
    // The callback invokes `__prism_resume!` through the path the root's crate names the macros by.
    assert!(
        t.contains(
            "(@ root [$ ($ m : tt) *] $ ($ state : tt) *) => { $ ($ m) * :: __prism_resume !"
        ),
        "{t}"
    );
    assert!(t.contains("pub struct lane_copy ;"), "{t}");
    assert!(!items(&out).contains("compile_error"), "{t}");
    // Private device functions are not exported to other crates.
    let t = s(&expand_attr(
        FnKind::Device,
        quote!(requires(thread[1])),
        quote!(
            fn private_fn() {}
        ),
    ));
    assert!(t.contains("macro_rules ! private_fn"), "{t}");
    assert!(t.contains("@ dep local []"), "{t}");
    assert!(!t.contains("macro_export"), "{t}");
}

/// The body of the first `name! { .. }` invocation in `ts` (searched at top level).
fn invocation_body(ts: &TokenStream, name: &str) -> Option<TokenStream> {
    let toks: Vec<TokenTree> = ts.clone().into_iter().collect();
    for w in toks.windows(3) {
        if let (TokenTree::Ident(i), TokenTree::Punct(p), TokenTree::Group(g)) =
            (&w[0], &w[1], &w[2])
        {
            if i == name && p.as_char() == '!' && g.delimiter() == Delimiter::Brace {
                return Some(g.stream());
            }
        }
    }
    None
}

#[test]
fn calls_route_through_the_callee_macro_and_resume_finishes() {
    let kernel_attr = quote!(requires(grid[1], block[1], thread[32]));
    let kernel_item = quote!(
        pub fn k(c: *mut f32) {
            #[at(thread[32])]
            let w: u32 = id();
            partition(
                c,
                thread[32],
                |x| w * 32 + x,
                |c_w| {
                    group(thread[32], || {
                        helper(c_w);
                    });
                },
            );
        }
    );
    let chain = expand_attr(FnKind::Kernel, kernel_attr, kernel_item);
    let state = invocation_body(&chain, "helper").expect("a call of the callee's local macro");
    let st = s(&state);
    assert!(st.starts_with("@ root [:: prism_macros] kernel"), "{st}");
    assert!(st.contains("@ pending ["), "{st}");
    // What `helper!` would deliver.
    let helper_attr = quote!(requires(thread[32]));
    let helper_item = quote!(
        pub fn helper(#[at(thread[32])] out: *mut f32) {
            #[at(thread[1])]
            let lane: u32 = id();
            partition(
                out,
                thread[1],
                |x| lane + x,
                |o| {
                    group(thread[1], || {
                        o[0] = 1.0;
                    });
                },
            );
        }
    );
    let mut input = quote!(@dep local [] "this_crate" { #helper_attr } { #helper_item });
    input.extend(state);
    let out = resume(input);
    let t = s(&out);
    assert!(!t.contains("compile_error"), "{t}");
    assert!(t.contains("pub struct k ;"), "{t}");
    assert!(t.contains("fn launch"), "{t}");
}

#[test]
fn a_called_kernel_is_unknown_fn_at_the_call() {
    let kernel_attr = quote!(requires(grid[1], block[1], thread[1]));
    let kernel_item = quote!(
        pub fn k(n: u32) {
            group(thread[1], || {
                other(n);
            });
        }
    );
    let chain = expand_attr(FnKind::Kernel, kernel_attr, kernel_item);
    let state = invocation_body(&chain, "other").expect("a call of the callee's macro");
    // What the kernel `other`'s callback macro delivers.
    let mut input = quote!(@dep kernel [] "this_crate" {} {});
    input.extend(state);
    let out = resume(input);
    let t = s(&out);
    assert!(t.contains("[UNKNOWN-FN] `other` is a kernel"), "{t}");
    assert!(
        t.contains("pub fn launch"),
        "placeholders follow the error: {t}"
    );
}

#[test]
fn a_kernel_calling_itself_is_unknown_fn() {
    let t = s(&expand_attr(
        FnKind::Kernel,
        quote!(requires(grid[1], block[1], thread[1])),
        quote!(
            pub fn k(n: u32) {
                group(thread[1], || {
                    k(n);
                });
            }
        ),
    ));
    assert!(t.contains("[UNKNOWN-FN] `k` is a kernel"), "{t}");
}

#[test]
fn recursion_is_reported_at_the_call() {
    let t = s(&expand_attr(
        FnKind::Device,
        quote!(requires(thread[1])),
        quote!(
            pub fn again(x: u32) -> u32 {
                again(x)
            }
        ),
    ));
    assert!(
        t.contains("recursive device-function call: again -> again"),
        "{t}"
    );
}

#[test]
fn malformed_resume_input_is_an_error_not_a_panic() {
    let t = s(&resume(quote!(@dep local [] "c" {} {})));
    assert!(t.contains("compile_error"), "{t}");
    let t = s(&resume(quote!(garbage)));
    assert!(t.contains("compile_error"), "{t}");
}

#[test]
fn panics_become_compile_errors() {
    let t = s(&crate::catch_panic("test", || panic!("boom")));
    assert!(t.contains("compile_error"), "{t}");
    assert!(
        t.contains("internal compiler error") && t.contains("boom"),
        "{t}"
    );
}

#[test]
fn generic_device_function_with_aliases_expands_to_wrappers() {
    let out = expand_attr(
        FnKind::Device,
        quote!(
            requires(thread[1]),
            returns = thread[1],
            aliases = [u32, f32]
        ),
        quote!(
            pub fn first<T: Num32, const N: u32>(items: &[T; N], p: *const T) -> T {
                items[0]
            }
        ),
    );
    let text = items(&out);
    assert!(!text.contains("compile_error"), "{text}");
    // One `#[prism_device]` wrapper per alias: types substituted in the signature, the `aliases` key dropped,
    // the const parameter still generic, the body a call of the generic function with the types first.
    for t in ["u32", "f32"] {
        let want = format!(
            "pub fn first_{t} < const N : u32 > (items : & [{t} ; N] , p : * const {t}) -> {t} {{ first :: < {t} , N > (items , p) }}"
        );
        assert!(text.contains(&want), "missing `{want}` in {text}");
    }
    assert_eq!(
        text.matches("prism_device (requires (thread [1]) , returns = thread [1])")
            .count(),
        2,
        "{text}"
    );
}

#[test]
fn generic_kernel_expands_to_typed_instances_and_aliases() {
    let out = expand_attr(
        FnKind::Kernel,
        quote!(
            requires(grid[1], block[1], thread[1]),
            instances = [(u32, 2), (f32, 2)],
            aliases = [f32]
        ),
        quote!(
            pub fn put<T: Num32, const N: u32>(c: *mut T) {
                #[at(thread[1])]
                let i: u32 = id();
                partition(
                    c,
                    thread[1],
                    |x| i + x,
                    |c_th| {
                        group(thread[1], || {
                            c_th[0] = N as T;
                        });
                    },
                );
            }
        ),
    );
    let text = items(&out);
    assert!(!text.contains("compile_error"), "{text}");
    assert!(
        text.contains(
            "pub struct put < T , const N : u32 > (:: core :: marker :: PhantomData < (T ,) >)"
        ),
        "{text}"
    );
    assert!(text.contains("impl put < u32 , 2 >"), "{text}");
    assert!(text.contains("impl put < f32 , 2 >"), "{text}");
    assert!(text.contains("\"put_f32_2\""), "{text}");
    assert!(
        text.contains("c : & mut :: prism_runtime :: DeviceBuffer < f32 >"),
        "{text}"
    );
    assert!(
        text.contains("pub type put_f32 < const N : u32 > = put < f32 , N >"),
        "{text}"
    );
}
