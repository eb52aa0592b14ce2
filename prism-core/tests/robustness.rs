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
use std::path::{Path, PathBuf};

mod common;
use common::{generate, Rng};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Every `.rs` file under `dir` (recursively) that contains a Prism attribute.
fn prism_sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            prism_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            if let Ok(text) = std::fs::read_to_string(&path) {
                if text.contains("#[prism_kernel") || text.contains("#[prism_device") {
                    out.push((path, text));
                }
            }
        }
    }
}

fn seeds() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for dir in [
        "prism-core/tests",
        "prism-kernels/src",
        "tests/ui",
        "tests/ext-crate/src",
        "docs",
    ] {
        prism_sources(&root.join(dir), &mut out);
    }
    // docs/SYNTAX.md holds the worked example inside a fenced block: take the Rust blocks from markdown too.
    let syntax = root.join("docs/SYNTAX.md");
    if let Ok(md) = std::fs::read_to_string(&syntax) {
        for block in md.split("```rust").skip(1) {
            if let Some(code) = block.split("```").next() {
                out.push((syntax.clone(), code.to_string()));
            }
        }
    }
    out
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

const FRAGMENTS: &[&str] = &[
    "group(thread[32], || {",
    "group(block[1], || {",
    "group(grid[1], || {",
    "});",
    "}",
    "{",
    "match split(thread) { 32 => {} 1 => {} }",
    "match split(warp) { 1 => { sync_warp(); } }",
    "match split(block) { 0 => {} }",
    "partition(c, thread[1], |i| i, |y| { y[0] = 1.0; });",
    "claim(s, thread[32], |w| {});",
    "async_(s, |a| { cp_async(a, 0, x, 0, 16); });",
    "#[at(thread[1])] let t: u32 = id();",
    "#[at(block[0])] let t: u32 = 0;",
    "let s: Shared<[f32; 4294967295]>;",
    "let a = [0u32; 0];",
    "let q = a[999999];",
    "sync_threads();",
    "shfl_down(1.0, 1);",
    "mma_m16n8k8_tf32(&mut c, &a, &b);",
    "unsafe { asm!(\"{x}\", x = in(u32) 1); }",
    "id()",
    "as f16",
    "for i in 0..4294967295 {}",
    "for i in (0..8).step_by(0) {}",
    "while true { break; }",
    "x / 0",
    "1 << 99",
    "thread[0]",
    "block[4294967296]",
    "warp[0]",
    "|x, y|",
    "::<>",
    "(((",
    ")))",
    ";",
    ",",
    "@",
    "'a",
];

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "31",
    "32",
    "33",
    "64",
    "1024",
    "4294967295",
    "18446744073709551616",
];
const WORDS: &[&str] = &[
    "thread",
    "block",
    "grid",
    "warp",
    "warpgroup",
    "id",
    "group",
    "split",
    "partition",
    "claim",
];

fn mutate(rng: &mut Rng, src: &str) -> String {
    let mut s: Vec<char> = src.chars().collect();
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        let len = s.len();
        match rng.below(7) {
            0 if len > 0 => {
                // delete a range
                let a = rng.below(len);
                let b = (a + 1 + rng.below(40)).min(len);
                s.drain(a..b);
            }
            1 if len > 0 => {
                // duplicate a range
                let a = rng.below(len);
                let b = (a + 1 + rng.below(80)).min(len);
                let chunk: Vec<char> = s[a..b].to_vec();
                let at = rng.below(len);
                s.splice(at..at, chunk);
            }
            2 => {
                // insert a Prism fragment
                let at = rng.below(len + 1);
                s.splice(at..at, rng.pick(FRAGMENTS).chars());
            }
            3 => {
                // replace a number
                let text: String = s.iter().collect();
                let digits: Vec<usize> = text
                    .char_indices()
                    .filter(|(i, c)| {
                        c.is_ascii_digit()
                            && (*i == 0 || !text.as_bytes()[i - 1].is_ascii_alphanumeric())
                    })
                    .map(|(i, _)| i)
                    .collect();
                if !digits.is_empty() {
                    let start = *rng.pick(&digits);
                    let end = text[start..]
                        .find(|c: char| !c.is_ascii_digit())
                        .map_or(text.len(), |e| start + e);
                    let replaced =
                        format!("{}{}{}", &text[..start], rng.pick(NUMBERS), &text[end..]);
                    s = replaced.chars().collect();
                }
            }
            4 => {
                // swap one Prism word for another
                let text: String = s.iter().collect();
                let from = rng.pick(WORDS);
                let to = rng.pick(WORDS);
                let hits: Vec<usize> = text.match_indices(from).map(|(i, _)| i).collect();
                if !hits.is_empty() {
                    let at = *rng.pick(&hits);
                    let replaced = format!("{}{}{}", &text[..at], to, &text[at + from.len()..]);
                    s = replaced.chars().collect();
                }
            }
            5 if len > 0 => {
                // truncate
                s.truncate(rng.below(len));
            }
            _ if len > 1 => {
                // swap two ranges of one character class (brackets shuffle)
                let a = rng.below(len);
                let b = rng.below(len);
                s.swap(a, b);
            }
            _ => {}
        }
    }
    s.into_iter().collect()
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
