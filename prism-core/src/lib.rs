//! The Prism compiler.
