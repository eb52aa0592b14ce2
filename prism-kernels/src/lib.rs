//! Prism kernel library.
