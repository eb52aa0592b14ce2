//! Prism procedural macros.
