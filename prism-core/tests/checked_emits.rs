//! "Checked ⇒ code generation never fails on user input" (issue 11 item 2): for every program that passes
//! the driver's check stage ([`prism_core::check_kernel`]) and the sync stage, the emitter returns Ok.
//! The sync stage reports only SYNC-* rules; any other error after the check stage is an `INTERNAL` bug.
//! Programs come from the compiler's property-test generators (grammar programs, type-extreme constants,
//! Hopper pipelines) and from mutations of every Prism program in the repository. An emitter error after a
//! successful check is a user rule left for the emitter (or an `INTERNAL` bug): the test prints the rule,
//! the message and the input. `PRISM_FUZZ_CASES` sets the number of cases of each kind (default 600),
//! `PRISM_FUZZ_SEED` the seed.

use prism_core::ast::{FnKind, Function};
use prism_core::{check_kernel, lower, parse, SyncPolicy};
use std::collections::BTreeMap;

mod common;
use common::mutate::{mutate, seeds};
use common::Rng;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// How many kernels reached each stage.
#[derive(Default, Debug)]
struct Tally {
    kernels: u64,
    rejected_by_check: u64,
    rejected_by_sync: u64,
    emitted: u64,
    /// Rules the check stage reported, by name (to show the generators reach the rules).
    check_rules: BTreeMap<String, u64>,
}

/// parse → check stage → sync → emit for every kernel of `src`; Err(report) when the emitter fails after
/// the check and sync stages passed.
fn run(src: &str, tally: &mut Tally) -> Result<(), (String, String)> {
    let Ok(functions) = parse::parse_source(src) else {
        return Ok(());
    };
    let deps: Vec<Function> = functions
        .iter()
        .filter(|f| f.kind == FnKind::Device)
        .cloned()
        .collect();
    for f in functions.iter().filter(|f| f.kind == FnKind::Kernel) {
        tally.kernels += 1;
        let checked = match check_kernel(f, &deps) {
            Ok(c) => c,
            Err(diags) => {
                tally.rejected_by_check += 1;
                // The emitter's nets (INTERNAL) guard inputs the checker rejects first.
                if let Some(d) = diags.iter().find(|d| d.rule == "INTERNAL") {
                    return Err(("INTERNAL".into(), d.message.clone()));
                }
                for d in diags {
                    *tally.check_rules.entry(d.rule.to_string()).or_default() += 1;
                }
                continue;
            }
        };
        for k in &checked {
            for policy in [SyncPolicy::Inferred, SyncPolicy::Naive] {
                match lower(k, policy) {
                    Ok(_) => tally.emitted += 1,
                    // The sync stage's rules (SYNC-NAMED is counted where its barriers are lowered).
                    Err(diags) if diags.iter().all(|d| d.rule.starts_with("SYNC-")) => {
                        tally.rejected_by_sync += 1
                    }
                    Err(diags) => {
                        let d = diags.iter().find(|d| !d.rule.starts_with("SYNC-")).unwrap();
                        return Err((d.rule.to_string(), format!("[{}] {}", d.rule, d.message)));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Runs `cases` inputs from `make`; panics listing every emitter error after a passed check (by rule, with
/// the first input of each).
fn run_cases(kind: &str, cases: u64, seed: u64, mut make: impl FnMut(&mut Rng) -> String) -> Tally {
    let mut rng = Rng(seed);
    survey(
        &format!("{kind} (seed {seed})"),
        (0..cases).map(|_| make(&mut rng)),
    )
}

/// Runs every input; panics listing every emitter error after a passed check (by rule, with the first input
/// of each).
fn survey(kind: &str, inputs: impl Iterator<Item = String>) -> Tally {
    let mut tally = Tally::default();
    let mut failures: BTreeMap<String, (u64, usize, String)> = BTreeMap::new();
    let mut n = 0;
    for (case, src) in inputs.enumerate() {
        n += 1;
        if let Err((rule, e)) = run(&src, &mut tally) {
            let f = failures
                .entry(rule)
                .or_insert((0, case, format!("{e}\n{src}")));
            f.0 += 1;
        }
    }
    println!("{kind}: {n} inputs, {tally:?}");
    if !failures.is_empty() {
        let report: Vec<String> = failures
            .iter()
            .map(|(rule, (n, case, first))| format!("{n}× {rule}; first: case {case}: {first}"))
            .collect();
        panic!(
            "{kind}: the check stage accepted kernels the emitter rejects:\n{}",
            report.join("\n---\n")
        );
    }
    tally
}

/// Runs `f` on a thread with a large stack (deeply nested generated programs).
fn with_big_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn generated_programs_that_check_also_emit() {
    with_big_stack(|| {
        let cases = env_u64("PRISM_FUZZ_CASES", 600);
        let seed = env_u64("PRISM_FUZZ_SEED", 0x5eed);
        let t = run_cases("grammar", cases, seed ^ 0xc4ec, common::generate);
        assert!(t.emitted > 0 && t.rejected_by_check > 0, "{t:?}");
        let t = run_cases("extreme", cases / 2, seed ^ 0xe7, common::generate_extreme);
        assert!(t.emitted > 0 && t.rejected_by_check > 0, "{t:?}");
        let t = run_cases(
            "hopper",
            cases / 2,
            seed ^ 0x40,
            common::hopper::generate_hopper,
        );
        assert!(t.emitted > 0, "{t:?}");
    });
}

#[test]
fn mutated_programs_that_check_also_emit() {
    with_big_stack(|| {
        let seeds = seeds();
        assert!(seeds.len() >= 5, "found {} Prism programs", seeds.len());
        let tally = survey("repository programs", seeds.iter().map(|(_, s)| s.clone()));
        assert!(tally.emitted > 0, "{tally:?}");
        let texts: Vec<String> = seeds.into_iter().map(|(_, s)| s).collect();
        let cases = env_u64("PRISM_FUZZ_CASES", 600) * 2;
        let seed = env_u64("PRISM_FUZZ_SEED", 0x5eed);
        let t = run_cases("mutated", cases, seed ^ 0x37, |rng| {
            let text = rng.pick(&texts).clone();
            mutate(rng, &text)
        });
        assert!(t.emitted > 0 && t.rejected_by_check > 0, "{t:?}");
    });
}
