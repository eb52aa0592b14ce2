//! Golden PTX: the PTX of every registered kernel instance (`prism-kernels`, `prism-ext-crate`) is compared
//! with the fingerprints recorded in `tests/golden/ptx.txt` (entry, lines, bytes, FNV-1a 64 of the text), so a
//! refactoring of the compiler shows that it changed no kernel's PTX — or exactly which ones it changed.
//!
//! After an intended change: `PRISM_BLESS=1 cargo test --test golden_ptx`, then review the changed kernels
//! (their PTX is written to `target/golden-ptx/` by every failing run, to diff against `examples/dump_ptx`
//! output of the previous commit).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use prism_ext_crate as _;

fn fnv64(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn golden_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/ptx.txt")
}

/// `entry -> "lines bytes hash"` for every registered kernel.
fn current() -> BTreeMap<String, (String, &'static str)> {
    prism_ext_crate::link();
    let _ = &prism_kernels::vector_add::INFO;
    prism::registered_kernels()
        .into_iter()
        .map(|k| {
            let ptx = k.ptx();
            let fp = format!("{} {} {:016x}", ptx.lines().count(), ptx.len(), fnv64(ptx));
            (k.entry().to_string(), (fp, ptx))
        })
        .collect()
}

#[test]
fn every_kernel_ptx_matches_its_golden_fingerprint() {
    let now = current();
    assert!(now.len() > 30, "only {} kernels registered", now.len());
    let text: String = now
        .iter()
        .map(|(e, (fp, _))| format!("{e} {fp}\n"))
        .collect();
    if std::env::var("PRISM_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(golden_path(), &text).expect("write tests/golden/ptx.txt");
        println!("blessed {} kernels", now.len());
        return;
    }
    let golden = std::fs::read_to_string(golden_path()).expect("read tests/golden/ptx.txt");
    let want: BTreeMap<&str, &str> = golden.lines().filter_map(|l| l.split_once(' ')).collect();
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/golden-ptx");
    let mut diffs = Vec::new();
    for (entry, (fp, ptx)) in &now {
        match want.get(entry.as_str()) {
            Some(w) if w == fp => {}
            other => {
                std::fs::create_dir_all(&out).ok();
                std::fs::write(out.join(format!("{entry}.ptx")), ptx).ok();
                diffs.push(format!("{entry}: golden {:?}, now {fp}", other));
            }
        }
    }
    for entry in want.keys() {
        if !now.contains_key(*entry) {
            diffs.push(format!("{entry}: in the golden file, no longer registered"));
        }
    }
    assert!(
        diffs.is_empty(),
        "PTX changed for {} kernel(s) (new PTX in {}; bless with PRISM_BLESS=1 after review):\n{}",
        diffs.len(),
        out.display(),
        diffs.join("\n")
    );
}

/// Every kernel's PTX is text of the one PTX model (`prism_core::ptx`): it reads into the model, and the
/// model prints back exactly the text the emitter produced (after the generated-file comment).
#[test]
fn every_kernel_ptx_is_the_printed_model() {
    let now = current();
    let mut instrs = 0;
    for (entry, (_, ptx)) in &now {
        let m = prism_core::ptx::parse(ptx).unwrap_or_else(|e| panic!("{entry}: {e}"));
        let body = ptx.split_once("\n\n").map(|x| x.1).unwrap_or(ptx);
        let printed = m.to_string();
        if let Some((i, (a, b))) = printed
            .lines()
            .zip(body.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
        {
            panic!(
                "{entry}, line {}: the model prints `{a}`, the emitter wrote `{b}`",
                i + 1
            );
        }
        assert_eq!(
            printed.len(),
            body.len(),
            "{entry}: printed model differs in length"
        );
        assert_eq!(
            prism_core::ptx::parse(&m.to_string()).as_ref(),
            Ok(&m),
            "{entry}"
        );
        for it in &m.items {
            if let prism_core::ptx::Item::Func(f) = it {
                instrs += f
                    .body
                    .iter()
                    .flatten()
                    .flat_map(|s| s.instructions())
                    .count();
            }
        }
    }
    assert!(
        instrs > 50_000,
        "only {instrs} instructions in {} kernels",
        now.len()
    );
}
