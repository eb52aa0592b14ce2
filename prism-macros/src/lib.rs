//! The Prism procedural macros: a thin layer over `prism-core`.
//!
//! * [`macro@prism_kernel`] turns a Rust `fn` written in Prism's surface syntax (`docs/SYNTAX.md`) into a
//!   unit struct carrying the checked kernel's PTX, its [`KernelInfo`](../prism_runtime/struct.KernelInfo.html)
//!   and a typed `launch` function.
//! * [`macro@prism_device`] checks a device function and exports its tokens through `macro_rules!` callbacks so
//!   that kernels in this crate and in other crates can call it (checked at the call, inlined into the
//!   caller's PTX). The mechanism is described in `docs/COMPOSITION.md`.
//! * [`__prism_resume!`](macro@__prism_resume) is the callback those `macro_rules!` route through; it is not
//!   meant to be written by hand.
//!
//! Every failure becomes a `compile_error!` at the span that caused it; the macros never panic (a panic in
//! the compiler is caught and reported as a compiler bug).
//!
//! Crates that use these macros must depend on `prism-macros` and `prism-runtime` directly (the expansion
//! names `::prism_macros` and `::prism_runtime`).

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use std::panic::{catch_unwind, AssertUnwindSafe};

mod device;
mod kernel;
mod launch;
mod names;
mod paths;
mod resolve;
mod state;
#[cfg(test)]
mod tests;

/// Runs `f`, turning a panic into a `compile_error!` (the macros must never abort rustc).
fn guarded(what: &str, f: impl FnOnce() -> TokenStream2) -> TokenStream {
    catch_panic(what, f).into()
}

fn catch_panic(what: &str, f: impl FnOnce() -> TokenStream2) -> TokenStream2 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(ts) => ts,
        Err(payload) => {
            let detail = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            let msg = format!(
                "internal compiler error in Prism ({what}): {detail}. This is a bug in prism-core/prism-macros, \
                 not in your kernel; please report it with the function that triggered it"
            );
            let span = Span::call_site();
            quote::quote_spanned!(span=> ::core::compile_error! { #msg })
        }
    }
}

/// A Prism kernel: `#[prism_kernel(requires(grid[1], block[1], thread[32]), smem = 1280, threads = 128,
/// blocks = 4, instances = [(64, 64)])]` on a Rust `fn` (surface syntax: `docs/SYNTAX.md`).
///
/// The function is checked against the perspective rules while rustc compiles the crate, and replaced by a
/// unit struct with the function's name (generic over the const parameters for templates) whose inherent
/// items are, per instance:
///
/// * `pub const PTX: &'static str`: the PTX module;
/// * `pub const INFO: ::prism_runtime::KernelInfo`: entry name, parameters and launch contract;
/// * `pub fn launch(dev: &Device, dims: LaunchDims, <params>) -> Result<LaunchReport, RuntimeError>`: pointers
///   become `&DeviceBuffer<T>` (`*const T`) or `&mut DeviceBuffer<T>` (`*mut T`), scalars are passed by value.
///
/// Each instance is also registered with `::prism_runtime::inventory` (see `prism_runtime::registered_kernels`).
///
/// Type generics (`fn k<T: Num32, const N: u32>`, `instances = [(f32, 4)]`, docs/SYNTAX.md): the struct is
/// generic over the types too (`k::<f32, 4>`, with a `PhantomData` field), the launcher takes the instance's
/// types (`&DeviceBuffer<f32>`), and `aliases = [f32]` adds `pub type k_f32<const N: u32> = k<f32, N>;`. On a
/// `#[prism_device]` function `aliases = [f32]` adds a device function `name_f32` calling `name::<f32, ..>`.
#[proc_macro_attribute]
pub fn prism_kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    guarded("#[prism_kernel]", || {
        kernel::expand_attr(prism_core::ast::FnKind::Kernel, attr.into(), item.into())
    })
}

/// A Prism device function: `#[prism_device(requires(thread[32]), smem = N, returns = thread[32])]` on a Rust
/// `fn`. It is checked on its own here, and inlined (after a check of its perspective signature at the call)
/// into every kernel that calls it: `f(..)` from the same crate (defined earlier in the file, like
/// `macro_rules!`), `other_crate::f(..)` from other crates. See `docs/COMPOSITION.md`.
///
/// Expands to a documentation-only unit struct with the function's name (so rustdoc lists the function and its
/// perspective signature), a crate-local `macro_rules! __prism_local_<name>` and, for `pub` functions, an
/// exported `macro_rules! __prism_device_<name>`, which hand the function's tokens to callers.
#[proc_macro_attribute]
pub fn prism_device(attr: TokenStream, item: TokenStream) -> TokenStream {
    guarded("#[prism_device]", || {
        kernel::expand_attr(prism_core::ast::FnKind::Device, attr.into(), item.into())
    })
}

/// Internal: the continuation of a `#[prism_kernel]`/`#[prism_device]` expansion after a device function's
/// `macro_rules!` delivered its tokens. Its input format is private and may change; do not call it directly.
#[doc(hidden)]
#[proc_macro]
pub fn __prism_resume(input: TokenStream) -> TokenStream {
    guarded("__prism_resume!", || kernel::resume(input.into()))
}
