//! The compile-fail suite: every illegal program of the paper and at least one per rule must be rejected
//! with a diagnostic naming the rule and the perspectives at the right span (`tests/ui/fail/*.stderr`);
//! the paper's legal programs must compile (`tests/ui/pass/*.rs`).
//!
//! Regenerate the expected output after an intended change with `TRYBUILD=overwrite cargo test --test ui`,
//! then read every changed `.stderr`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
