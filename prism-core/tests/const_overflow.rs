//! Extreme constants (issue item 9): constant arithmetic that overflows its type, literals out of range,
//! division by zero and over-wide shifts are `CONST-OVERFLOW` errors at the offending expression (rustc
//! rejects them too), never wrapped values; loops with bounds and steps at the type limits compile without
//! a panic and without unrolling billions of times, and run the right number of iterations.
mod emit_support;
use emit_support::*;
use prism_core::ast::FnKind;
use prism_core::compile_kernel;
use prism_runtime::emu::{EmuConfig, Emulator, Module, ParamValue};

fn errors(body: &str) -> Vec<prism_core::Diagnostic> {
    let src = format!(
        "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(y: *mut u32, n: u32) {{\n{body}\n}}\n"
    );
    let fns = prism_core::parse::parse_source(&src).unwrap_or_else(|d| panic!("{}", texts(&d)));
    let k = fns.iter().find(|f| f.kind == FnKind::Kernel).unwrap();
    match compile_kernel(k, &[]) {
        Ok(_) => Vec::new(),
        Err(d) => d,
    }
}

fn rejected(body: &str, want: &str) {
    let d = errors(body);
    assert!(
        d.iter()
            .any(|d| d.rule == "CONST-OVERFLOW" && d.message.contains(want)),
        "expected CONST-OVERFLOW ({want}) for:\n{body}\ngot: {}",
        texts(&d)
    );
}

fn accepted(body: &str) {
    let d = errors(body);
    assert!(
        d.is_empty(),
        "expected no error for:\n{body}\ngot: {}",
        texts(&d)
    );
}

#[test]
fn overflowing_constants_are_rejected() {
    rejected("let x: i32 = 2147483647 * 2;", "overflows i32");
    rejected("let x = 2147483647 + 1;", "overflows i32");
    rejected(
        "let x: i64 = -9223372036854775808i64 / -1;",
        "overflows i64",
    );
    rejected(
        "let x: i64 = -9223372036854775808i64 % -1;",
        "overflows i64",
    );
    rejected("let x: u32 = 0u32 - 1;", "overflows u32");
    rejected("let x: u32 = 4294967296;", "out of range for u32");
    rejected("let x: i32 = 2147483648;", "out of range for i32");
    rejected("let x: u32 = 7 / 0;", "division by zero");
    rejected("let x: u32 = 7 % (3 - 3);", "remainder by zero");
    rejected("let x: u32 = 1u32 << 32;", "shift by 32");
    rejected("let x: u64 = (4294967295u32 + 1) as u64;", "overflows u32");
    rejected(
        "#[at(thread[1])] let t: u32 = id();\nlet z: u32 = n + 4294967296;",
        "out of range for u32",
    );
    rejected("let x: i32 = -(-2147483648);", "overflows i32");
    rejected(
        "for i in 0..340282366920938463463374607431768211455 { }",
        "every integer type",
    );
    // Unsuffixed float literals past the range of the type they take (user round I).
    rejected("let a: f32 = 1e39;", "out of range for f32");
    rejected("let mut a: f32 = 0.0;\na = -1e39;", "out of range for f32");
    rejected(
        "let a: f32 = 2.0;\nlet b: f32 = a.max(-1e39);",
        "out of range for f32",
    );
}

#[test]
fn unsuffixed_float_literals_at_the_limits_are_accepted() {
    // f32::MAX and a value that rounds down to it, and f64 values past f32's range.
    accepted("let a: f32 = 3.4028235e38;");
    accepted("let a: f32 = 3.40282356e38;");
    accepted("let a: f64 = 1e300;");
}

#[test]
fn constants_at_the_limits_are_accepted() {
    accepted("let x: i32 = -2147483648;");
    accepted("let x: i32 = 2147483647;");
    accepted("let x: i64 = -9223372036854775808i64;");
    accepted("let x: u64 = 18446744073709551615u64;");
    accepted("let x: u32 = 4294967295u32 / 1;");
    accepted("let x: u32 = 1u32 << 31;");
    accepted("let x: u32 = 3u32 << 31;");
    accepted("let x: u32 = !0u32;");
    accepted("let x: u32 = (0 - 1) as u32;");
    accepted("let x: u64 = 4294967295u32 as u64 + 1;");
    accepted("let x: u32 = n * 4294967295;");
}

/// Runs `k(y, n)` on one thread and returns y[0].
fn run_count(body: &str) -> u32 {
    let src = format!(
        "#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 1)]\nfn k(y: *mut u32, n: u32) {{\n\
         #[at(thread[1])]\nlet t: u32 = id();\n\
         partition(y, thread[1], |j| t + j, |y_t| {{\ngroup(thread[1], || {{\n\
         #[at(thread[1])]\nlet mut c: u32 = 0u32;\n{body}\ny_t[0] = c;\n}});\n}});\n}}\n"
    );
    let ks = compile_src(&src);
    // The wrap-safe increment assembles (skipped without ptxas).
    assemble_all(&ks);
    let module = Module::parse(&ks[0].ptx).unwrap_or_else(|e| panic!("{e:?}\n{}", ks[0].ptx));
    let mut emu = Emulator::new(EmuConfig::default());
    let y = emu.alloc(4);
    emu.write(y, &[0; 4]).unwrap();
    emu.launch(
        &module,
        &ks[0].entry,
        [1, 1, 1],
        [1, 1, 1],
        0,
        &[ParamValue::Ptr(y), ParamValue::U32(0)],
    )
    .unwrap_or_else(|e| panic!("{e:?}\n{}", ks[0].ptx));
    let b = emu.read(y, 4).unwrap();
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

#[test]
fn loops_at_the_type_limits() {
    // Steps near the limits: a trip count of 2 is unrolled; no overflow in the trip arithmetic.
    assert_eq!(
        run_count("for i in (0u32..4294967295u32).step_by(2147483648) { c = c + 1u32; }"),
        2
    );
    assert_eq!(
        run_count("for i in (-9223372036854775808i64..9223372036854775807i64).step_by(9223372036854775807) { c = c + 1u32; }"),
        3
    );
    // 2^64 - 1 trips: a run-time loop (not unrolled), here left after the first iteration.
    assert_eq!(
        run_count("for i in -9223372036854775808i64..9223372036854775807i64 { c = c + 1u32; if c == 5u32 { break; } }"),
        5
    );
    // The increment would wrap past u32::MAX: the loop ends instead of starting over at 0.
    assert_eq!(
        run_count("for i in (4294967000u32..4294967295u32).step_by(16) { c = c + 1u32; }"),
        19
    );
    assert_eq!(
        run_count("for i in 4294967290u32..4294967295u32 { c = c + 1u32; }"),
        5
    );
    assert_eq!(run_count("for i in 5u32..3u32 { c = c + 1u32; }"), 0);
    // A step of another integer type (Rust's `step_by` takes a usize) is converted to the loop's type.
    assert_eq!(
        run_count("for i in (4294967000u32..4294967295u32).step_by(16u64) { c = c + 1u32; }"),
        19
    );
}
