//! Barrier counts, naive policy vs inferred (paper 000 §5), for every kernel of `prism-kernels` and the paper
//! programs in `tests/programs`. Prints the table that docs/SYNC.md reproduces (`cargo test -p prism-core
//! --test sync_counts -- --nocapture`).
mod emit_support;
use emit_support::*;
use prism_core::ast::{FnKind, Function};
use std::path::Path;

fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in [
        root.join("../prism-kernels/src"),
        root.join("tests/programs"),
    ] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<_> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .collect();
        files.sort();
        for f in files {
            if let Ok(s) = std::fs::read_to_string(&f) {
                let name = f
                    .strip_prefix(root.join(".."))
                    .unwrap_or(&f)
                    .display()
                    .to_string();
                out.push((name, s));
            }
        }
    }
    out
}

#[test]
fn naive_vs_inferred_barrier_counts() {
    let mut rows = Vec::new();
    // prism-kernels' device functions are visible to all its kernels (one crate).
    let mut lib_deps: Vec<Function> = Vec::new();
    let mut parsed = Vec::new();
    for (name, src) in sources() {
        let Ok(fns) = prism_core::parse::parse_source(&src) else {
            eprintln!("{name}: does not parse on its own, skipped");
            continue;
        };
        if name.starts_with("prism-kernels") {
            lib_deps.extend(fns.iter().filter(|f| f.kind == FnKind::Device).cloned());
        }
        parsed.push((name, fns));
    }
    for (name, fns) in &parsed {
        let deps: Vec<Function> = if name.starts_with("prism-kernels") {
            lib_deps.clone()
        } else {
            fns.iter()
                .filter(|f| f.kind == FnKind::Device)
                .cloned()
                .collect()
        };
        for k in fns.iter().filter(|f| f.kind == FnKind::Kernel) {
            match prism_core::sync_report(k, &deps) {
                Ok(r) => {
                    assert!(
                        r.ptx_inferred <= r.ptx_naive,
                        "{}: inferred {} > naive {}",
                        r.entry,
                        r.ptx_inferred,
                        r.ptx_naive
                    );
                    rows.push(format!(
                        "| `{}` | {} | {} | {} | {} | {} |",
                        k.name, name, r.tree_naive, r.tree_inferred, r.ptx_naive, r.ptx_inferred
                    ));
                }
                Err(d) => panic!("{name}: `{}`: {}", k.name, texts(&d)),
            }
        }
    }
    println!("| kernel | source | naive (tree) | inferred (tree) | naive (PTX) | inferred (PTX) |");
    println!("|---|---|---|---|---|---|");
    for r in &rows {
        println!("{r}");
    }
    assert!(!rows.is_empty());
}
