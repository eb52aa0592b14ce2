//! Rust tokens → [`crate::ast`]. (In progress.)
