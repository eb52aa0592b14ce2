//! Names both attributes use (the crate being compiled, a function's perspective signature as text): a leaf
//! module, so `device` and `kernel` do not import each other.

use prism_core::ast::Function;

/// `CARGO_CRATE_NAME` of the crate being compiled (set by cargo for every rustc invocation).
pub fn current_crate() -> String {
    std::env::var("CARGO_CRATE_NAME").unwrap_or_else(|_| "crate".to_string())
}

/// A Rust identifier for a name the parser read (raw identifiers arrive without `r#`): raw where the name is
/// a keyword (`r#type`, `r#match`), so generated items and parameters keep the user's names.
pub fn rust_ident(name: &str, span: proc_macro2::Span) -> proc_macro2::Ident {
    if syn::parse_str::<syn::Ident>(name).is_ok() {
        proc_macro2::Ident::new(name, span)
    } else {
        proc_macro2::Ident::new_raw(name, span)
    }
}

/// The perspective bound as written: `grid[1], block[1], thread[32]`.
pub fn requires_text(f: &Function) -> String {
    f.requires
        .iter()
        .map(|p| p.perspective.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
