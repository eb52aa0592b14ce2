//! The rules that used to fire only in the emitter are reported by the driver's check stage alone
//! ([`prism_core::check_kernel`], with `check_device` on each device function as the macros run it):
//! for every compile-fail UI case of such a rule (`tests/ui/fail/*.stderr`), the check stage reports the same
//! rule with the same message, without the sync stage or the emitter.

use prism_core::ast::{FnKind, Function};
use prism_core::{check_device, check_kernel, parse};
use std::path::Path;

/// Rules whose instance cases are decided by the check stage's lowering walk (docs/RULES.md, "Where each
/// rule fires").
const MOVED: &[&str] = &[
    "WGMMA",
    "TMA",
    "RING",
    "SETMAXNREG",
    "STMATRIX",
    "CALL-ARG",
    "REG-INDEX",
    "ASM",
];

/// `(rule, message)` of every `error: [RULE] message` of a blessed `.stderr` (notes and the macros' summary of
/// a callee's errors left out).
fn expected(stderr: &str) -> Vec<(String, String)> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("error: ["))
        .filter_map(|l| l.split_once("] "))
        .filter(|(_, m)| !m.starts_with("note:"))
        // The macros' one-line summary at a kernel whose callee's own macro reports the error.
        .filter(|(_, m)| !m.contains("which breaks this rule in its own body"))
        .map(|(r, m)| (r.to_string(), m.to_string()))
        .collect()
}

/// The check stage's diagnostics for every function of `src`, as `(rule, message)`.
fn check_stage(src: &str) -> Vec<(String, String)> {
    let fs = parse::parse_source(src).unwrap_or_else(|d| panic!("parse: {}", d[0].text()));
    let deps: Vec<Function> = fs
        .iter()
        .filter(|f| f.kind == FnKind::Device)
        .cloned()
        .collect();
    let mut out = Vec::new();
    for f in &fs {
        let r = match f.kind {
            FnKind::Device => check_device(f, &deps),
            FnKind::Kernel => check_kernel(f, &deps).map(|_| ()),
        };
        if let Err(ds) = r {
            out.extend(ds.into_iter().map(|d| (d.rule.to_string(), d.message)));
        }
    }
    out
}

#[test]
fn moved_rules_fire_in_the_check_stage() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/ui/fail");
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/ui/fail")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "stderr"))
        .collect();
    entries.sort();
    let mut cases = 0;
    let mut seen_rules = std::collections::BTreeSet::new();
    let mut bad = Vec::new();
    for stderr in entries {
        let want: Vec<_> = expected(&std::fs::read_to_string(&stderr).unwrap())
            .into_iter()
            .filter(|(r, _)| MOVED.contains(&r.as_str()))
            .collect();
        if want.is_empty() {
            continue;
        }
        let src = std::fs::read_to_string(stderr.with_extension("rs")).unwrap();
        let got = check_stage(&src);
        cases += 1;
        for w in &want {
            seen_rules.insert(w.0.clone());
            if !got.contains(w) {
                bad.push(format!(
                    "{}: [{}] {} not reported by the check stage; it reported {got:?}",
                    stderr.display(),
                    w.0,
                    w.1
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(cases >= 10, "only {cases} UI cases of the moved rules");
    for r in MOVED {
        assert!(seen_rules.contains(*r), "no UI case of [{r}]");
    }
}

/// A shared allocation inside an unrolled loop takes one slot per iteration: the check stage counts the
/// laid-out total against the device (SMEM-LIMIT), and the contract asks for all of it.
#[test]
fn shared_allocations_in_unrolled_loops_count_per_iteration() {
    let src = |iters: u32| {
        format!(
            "#[prism_kernel(requires(grid[1], block[1], thread[1]))]
            fn k(c: *mut f32) {{
                for i in 0..{iters} {{
                    group(block[1], || {{
                        let s: Shared<[f32; 16384]>;
                        #[at(thread[1])]
                        let t: u32 = id();
                        partition(s, thread[1], |j| t + j, |st| {{
                            group(thread[1], || {{ st[0] = 1.0; }});
                        }});
                    }});
                }}
            }}"
        )
    };
    let compile = |iters: u32| {
        let fs =
            parse::parse_source(&src(iters)).unwrap_or_else(|d| panic!("parse: {}", d[0].text()));
        prism_core::compile_kernel(&fs[0], &[])
    };
    // 2 × 64 KiB fits and is what the launch asks for; 4 × 64 KiB is over the device's 227 KiB.
    let ok = compile(2).unwrap_or_else(|d| panic!("{}", d[0].text()));
    assert!(
        ok[0].contract.smem_bytes >= 2 * 65536,
        "{:?}",
        ok[0].contract
    );
    let fs = parse::parse_source(&src(4)).unwrap();
    let errs = check_kernel(&fs[0], &[])
        .map(|_| ())
        .expect_err("4 slots of 64 KiB must be refused");
    assert!(
        errs.iter()
            .any(|d| d.rule == "SMEM-LIMIT" && d.message.contains("unrolled loops")),
        "{:?}",
        errs.iter().map(|d| d.text()).collect::<Vec<_>>()
    );
}
