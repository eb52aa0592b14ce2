//! Compile-fail cases of the composition mechanism (`docs/COMPOSITION.md`), kept next to the ext crate in
//! `tests/ext-crate/ui/`: a cross-crate call that violates the callee's signature (reported at the call), a
//! recursive device function, a callee with errors, an unknown cross-crate function.
//!
//! Regenerate with `TRYBUILD=overwrite cargo test --test e2e_composition_ui`, then read every `.stderr`.

#[test]
fn composition_ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ext-crate/ui/*.rs");
}
