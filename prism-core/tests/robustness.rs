//! Macro robustness: no input may make the compiler panic (the proc macro runs exactly this code).
//!
//! Two sources of inputs, both seeded and bounded so CI runs them in seconds:
//! - mutations of every Prism program in the repository (deleted / duplicated / swapped ranges, changed
//!   numbers and perspectives, inserted fragments of Prism syntax, truncation);
//! - programs generated from Prism's grammar (nested `group`, `split`, `partition`, `claim`, `if`, `for`,
//!   collectives), which exercise the checker's and the emitter's deeper paths.
//!
//! Every input goes through parse → check → emit; a panic anywhere fails the test and prints the input.
//! `PRISM_FUZZ_CASES` sets the number of cases of each kind (default 1500), `PRISM_FUZZ_SEED` the seed.

use prism_core::ast::{FnKind, Function};
use prism_core::{check, compile_kernel, parse};
use std::panic::{catch_unwind, AssertUnwindSafe};

mod common;
use common::mutate::{mutate, seeds};
use common::{generate, Rng};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What happened to one input; a panic is the only failure.
#[derive(Default)]
struct Tally {
    parsed: usize,
    checked: usize,
    emitted: usize,
    rejected: usize,
}

/// parse → check every function → emit every kernel. Returns Err(message) on a panic.
fn run_pipeline(src: &str, tally: &mut Tally) -> Result<(), String> {
    let result = catch_unwind(AssertUnwindSafe(|| -> (bool, usize, usize, usize) {
        let functions = match parse::parse_source(src) {
            Ok(functions) => functions,
            Err(diags) => {
                if std::env::var_os("PRISM_FUZZ_DEBUG").is_some() {
                    eprintln!("parse error: {}\n{src}", diags[0]);
                }
                return (false, 0, 0, 1);
            }
        };
        let devices: Vec<Function> = functions
            .iter()
            .filter(|f| f.kind == FnKind::Device)
            .cloned()
            .collect();
        let (mut checked, mut emitted, mut rejected) = (0, 0, 0);
        for f in &functions {
            match f.kind {
                FnKind::Device => match check::check_function(f, &devices) {
                    Ok(_) => checked += 1,
                    Err(_) => rejected += 1,
                },
                FnKind::Kernel => match compile_kernel(f, &devices) {
                    Ok(_) => {
                        checked += 1;
                        emitted += 1
                    }
                    Err(_) => rejected += 1,
                },
            }
        }
        (true, checked, emitted, rejected)
    }));
    match result {
        Ok((parsed, checked, emitted, rejected)) => {
            tally.parsed += parsed as usize;
            tally.checked += checked;
            tally.emitted += emitted;
            tally.rejected += rejected;
            Ok(())
        }
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "non-string panic payload".into());
            Err(msg)
        }
    }
}

fn run_cases(kind: &str, cases: u64, mut make: impl FnMut(&mut Rng) -> String, seed: u64) -> Tally {
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    for case in 0..cases {
        let src = make(&mut rng);
        if let Err(panic) = run_pipeline(&src, &mut tally) {
            panic!("{kind} case {case} (seed {seed}) made the compiler panic: {panic}\n--- input ---\n{src}\n---");
        }
    }
    tally
}

/// Runs `f` on a thread with a large stack: deeply nested inputs must be rejected, not overflow.
fn with_big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn mutated_programs_never_panic() {
    with_big_stack(|| {
        // Keep the default panic hook quiet for caught panics? No: a panic is a failure and its message helps.
        let seeds = seeds();
        assert!(
            seeds.len() >= 5,
            "expected Prism programs in the repository to mutate, found {}",
            seeds.len()
        );
        let cases = env_u64("PRISM_FUZZ_CASES", 1500);
        let seed = env_u64("PRISM_FUZZ_SEED", 0x5eed);
        // The unmutated seeds first: they must not panic either.
        let mut tally = Tally::default();
        for (path, src) in &seeds {
            if let Err(p) = run_pipeline(src, &mut tally) {
                panic!("{} made the compiler panic: {p}", path.display());
            }
        }
        let texts: Vec<String> = seeds.iter().map(|(_, s)| s.clone()).collect();
        let t = run_cases(
            "mutated",
            cases,
            |rng| {
                let seed_text = rng.pick(&texts).clone();
                mutate(rng, &seed_text)
            },
            seed,
        );
        println!(
            "{} seeds, {cases} mutated inputs: {} parsed, {} functions accepted, {} kernels emitted, {} rejected with diagnostics; no panic",
            seeds.len(),
            t.parsed,
            t.checked,
            t.emitted,
            t.rejected
        );
        assert!(
            t.rejected > 0,
            "mutations should produce some rejected programs"
        );
    });
}

#[test]
fn generated_programs_never_panic() {
    with_big_stack(|| {
        let cases = env_u64("PRISM_FUZZ_CASES", 1500);
        let seed = env_u64("PRISM_FUZZ_SEED", 0x5eed) ^ 0xabcdef;
        let t = run_cases("generated", cases, generate, seed);
        println!(
            "{cases} generated kernels: {} parsed, {} accepted and emitted, {} rejected with diagnostics; no panic",
            t.parsed, t.emitted, t.rejected
        );
        assert_eq!(
            t.parsed as u64, cases,
            "the generator writes syntactically valid Prism"
        );
        assert!(t.emitted > 0, "some generated kernels must be well-typed");
        assert!(t.rejected > 0, "some generated kernels must be ill-typed");
    });
}

/// Type-extreme constants, loop bounds and steps (limits of u32/i32/u64/i64, ±1, wider than 64 bits), in
/// constant arithmetic, casts, loops and perspective sizes: never a panic (debug builds check arithmetic),
/// never an unbounded unroll; overflow is a `CONST-OVERFLOW` diagnostic.
#[test]
fn extreme_constants_never_panic() {
    with_big_stack(|| {
        let cases = env_u64("PRISM_FUZZ_CASES", 1500) / 2;
        let seed = env_u64("PRISM_FUZZ_SEED", 0x5eed) ^ 0xe7;
        let t = run_cases("extreme", cases, common::generate_extreme, seed);
        println!(
            "{cases} kernels with extreme constants: {} parsed, {} accepted and emitted, {} rejected; no panic",
            t.parsed, t.emitted, t.rejected
        );
        // Perspective and split-arm sizes past u32 are SYNTAX errors of the parser (a diagnostic, as it
        // should be); enough of the rest parses to reach the checker and the emitter.
        assert!(
            t.parsed as u64 >= cases / 5,
            "too few extreme programs parse"
        );
        assert!(t.emitted > 0 && t.rejected > 0);
    });
    // The cases of the issue, each a diagnostic, not a wrapped value or a panic.
    for body in [
        "let x: i32 = 2147483647 * 2;",
        "let x: i64 = -9223372036854775808i64 / -1;",
        "for i in (0u64..18446744073709551615u64).step_by(18446744073709551615) { }",
        "for i in -9223372036854775808i64..9223372036854775807i64 { }",
    ] {
        let src = format!(
            "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(n: u32) {{ {body} }}"
        );
        let mut tally = Tally::default();
        run_pipeline(&src, &mut tally).unwrap_or_else(|p| panic!("{body}: panic {p}"));
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    with_big_stack(|| {
        for depth in [50usize, 500, 5000] {
            let src = format!(
                "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn deep(n: u32) {{ let x: u32 = {}n{}; }}",
                "(".repeat(depth),
                ")".repeat(depth)
            );
            let mut tally = Tally::default();
            run_pipeline(&src, &mut tally).unwrap_or_else(|p| panic!("depth {depth}: panic {p}"));
            let nested = format!(
                "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn deep(n: u32) {{ {} {} }}",
                "if n > 0 {".repeat(depth),
                "}".repeat(depth)
            );
            run_pipeline(&nested, &mut tally)
                .unwrap_or_else(|p| panic!("depth {depth}: panic {p}"));
        }
    });
}

#[test]
fn nested_unrolled_loops_have_a_budget() {
    // Probe round I: loops of up to 16 iterations are unrolled, and loops that index a register array up to
    // 4096; nested, they multiplied (five loops of 16: a million copies, seconds; two register-array loops of
    // 4096: minutes and gigabytes). Past `MAX_UNROLLED` copies an optional unroll becomes a run-time loop,
    // and a loop that must be unrolled is an EMIT-LOOP error.
    let kernel = |body: &str| {
        format!(
            "#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 32)]\n\
             fn k(p: *mut f32) {{\n#[at(thread[1])]\nlet t: u32 = id();\n\
             partition(p, thread[1], |j| t + j, |pt| {{ group(thread[1], || {{\n{body}\n}}); }});\n}}\n"
        )
    };
    let loops = "#[at(thread[1])]\nlet mut a: f32 = 0.0;\n\
                 for i0 in 0..16 { for i1 in 0..16 { for i2 in 0..16 { for i3 in 0..16 { for i4 in 0..16 {\n\
                 a = a + 1.0; } } } } }\npt[0] = a;";
    let t0 = std::time::Instant::now();
    let fs = parse::parse_source(&kernel(loops)).expect("parses");
    let ks = compile_kernel(&fs[0], &[]).expect("compiles");
    let lines = ks[0].ptx.lines().count();
    assert!(lines < 200_000, "{lines} lines of PTX");
    assert!(t0.elapsed().as_secs() < 20, "{:?}", t0.elapsed());
    let arrays = "#[at(thread[1])]\nlet mut a = [0.0f32; 4096];\n\
                  for i in 0..4096 { for j in 0..4096 { a[i] = a[j] + 1.0; } }\npt[0] = a[0];";
    let fs = parse::parse_source(&kernel(arrays)).expect("parses");
    let ds = compile_kernel(&fs[0], &[]).expect_err("an unroll budget error");
    assert!(
        ds.iter()
            .any(|d| d.rule == "EMIT-LOOP" && d.message.contains("copies of its body")),
        "{:#?}",
        ds.iter().map(|d| d.text()).collect::<Vec<_>>()
    );
}
