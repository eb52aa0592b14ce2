//! Names both attributes use (the crate being compiled, a function's perspective signature as text): a leaf
//! module, so `device` and `kernel` do not import each other.

use prism_core::ast::Function;

/// `CARGO_CRATE_NAME` of the crate being compiled (set by cargo for every rustc invocation).
pub fn current_crate() -> String {
    std::env::var("CARGO_CRATE_NAME").unwrap_or_else(|_| "crate".to_string())
}

/// The perspective bound as written: `grid[1], block[1], thread[32]`.
pub fn requires_text(f: &Function) -> String {
    f.requires
        .iter()
        .map(|p| p.perspective.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
