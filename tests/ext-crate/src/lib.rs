//! Cross-crate composition.
