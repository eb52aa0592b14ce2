//! docs/RULES.md lists every rule name the compiler can print, and every rule of its main table has a UI case:
//! the names are collected from the code of prism-core and prism-macros (every string literal shaped like a
//! rule name, `"T-SPLIT"`, `"SYNC-ATOMIC"`, ..) and compared with the tables of docs/RULES.md both ways, so
//! the two cannot drift.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Literals shaped like rule names that are not rule names (dependence kinds in sync inference's reasons).
const NOT_RULES: &[&str] = &["RAW", "WAR", "WAW", "ATOMIC"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn is_rule_name(s: &str) -> bool {
    s.len() >= 3
        && s.starts_with(|c: char| c.is_ascii_uppercase())
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-')
        && !s.ends_with('-')
        && !s.contains("--")
}

/// Every `"NAME"` literal in the compiler's sources that looks like a rule name.
fn code_rules() -> BTreeSet<String> {
    let mut files = Vec::new();
    rs_files(&root().join("prism-core/src"), &mut files);
    rs_files(&root().join("prism-macros/src"), &mut files);
    let mut out = BTreeSet::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read source");
        for (i, part) in text.split('"').enumerate() {
            // Odd parts are inside quotes (good enough: rule literals never follow an escaped quote).
            if i % 2 == 1 && is_rule_name(part) && !NOT_RULES.contains(&part) {
                out.insert(part.to_string());
            }
        }
    }
    out
}

/// Rule names of docs/RULES.md's tables: (main table, safety nets).
fn doc_rules() -> (BTreeSet<String>, BTreeSet<String>) {
    let text = std::fs::read_to_string(root().join("docs/RULES.md")).expect("read RULES.md");
    let (mut main, mut nets) = (BTreeSet::new(), BTreeSet::new());
    let mut in_nets = false;
    for line in text.lines() {
        if line.starts_with("## ") {
            in_nets = line.contains("Safety nets");
        }
        let Some(rest) = line.strip_prefix("| `") else {
            continue;
        };
        let Some(name) = rest.split('`').next() else {
            continue;
        };
        if is_rule_name(name) {
            if in_nets { &mut nets } else { &mut main }.insert(name.to_string());
        }
    }
    (main, nets)
}

/// Rules with a compile-fail UI case (`error: [RULE]` in a blessed `.stderr`).
fn ui_rules() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for dir in ["tests/ui/fail", "tests/ext-crate/ui"] {
        for e in std::fs::read_dir(root().join(dir)).expect("ui dir") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "stderr") {
                let text = std::fs::read_to_string(&p).expect("read stderr");
                for line in text.lines() {
                    if let Some(r) = line.strip_prefix("error: [") {
                        if let Some(name) = r.split(']').next() {
                            out.insert(name.to_string());
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn rules_md_lists_exactly_the_rules_in_the_code() {
    let code = code_rules();
    let (main, nets) = doc_rules();
    let doc: BTreeSet<String> = main.union(&nets).cloned().collect();
    let undocumented: Vec<&String> = code.difference(&doc).collect();
    let stale: Vec<&String> = doc.difference(&code).collect();
    assert!(
        undocumented.is_empty(),
        "rule names the compiler can print but docs/RULES.md does not list: {undocumented:?}"
    );
    assert!(
        stale.is_empty(),
        "rule names in docs/RULES.md that the code never prints: {stale:?}"
    );
    let both: Vec<&String> = main.intersection(&nets).collect();
    assert!(
        both.is_empty(),
        "listed both as a rule and as a safety net: {both:?}"
    );
}

#[test]
fn every_rule_has_a_ui_case() {
    let (main, _) = doc_rules();
    let ui = ui_rules();
    let missing: Vec<&String> = main.difference(&ui).collect();
    assert!(
        missing.is_empty(),
        "rules of docs/RULES.md without a compile-fail case in tests/ui/fail or tests/ext-crate/ui: {missing:?}"
    );
    assert!(
        main.len() >= 40,
        "only {} rules found in docs/RULES.md",
        main.len()
    );
}
