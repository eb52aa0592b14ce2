//! Inputs for the property tests that start from the repository's own Prism programs: every program (seeds)
//! and random mutations of them (deleted, duplicated, swapped ranges; changed numbers and perspectives;
//! inserted fragments of Prism syntax; truncation).

use super::Rng;
use std::path::{Path, PathBuf};

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

pub fn seeds() -> Vec<(PathBuf, String)> {
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

pub fn mutate(rng: &mut Rng, src: &str) -> String {
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
