//! Prism for Rust.
