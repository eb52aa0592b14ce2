//! Hostile input: mutated nvcc PTX must end quickly with an error value or a run, never a panic or an
//! allocation that takes minutes (docs/EMULATOR.md, "Limits").
//!
//! A deterministic xorshift generator mutates the committed nvcc fixtures (token and line deletions,
//! duplications and swaps, numbers replaced by huge, negative or zero values, hostile declarations
//! inserted); each case is parsed and, if it parses, every entry (up to two) is launched on a small grid with
//! a small step budget. Each case runs on its own thread under a wall-time bound; a panic is caught and
//! reported with the mutated input (written to a file) so it can be reproduced.

use prism_runtime::emu::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Per-case bound on wall time (parse + launches); the cases take milliseconds.
const CASE_LIMIT: Duration = Duration::from_secs(2);

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn fixture(name: &str) -> String {
    let p = format!("{}/tests/fixtures/{}", env!("CARGO_MANIFEST_DIR"), name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

const HUGE: &[&str] = &[
    "0",
    "-1",
    "1",
    "99999999",
    "2147483647",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "1099511627776",
    "65536",
    "-99999999",
    "0x7fffffff",
    "0xffffffffffffffff",
];

/// Declarations a hostile or careless user writes; inserted after a `{`.
const HOSTILE: &[&str] = &[
    ".reg .b32 %r<99999999>;",
    ".reg .b64 %rd<2147483647>;",
    ".reg .pred %p<4294967295>;",
    ".reg .f32 %f<-5>;",
    ".reg .b32 %q<70000>;",
    ".shared .align 16 .b8 big_s[99999999999];",
    ".shared .b32 big_s2[4294967295][4294967295];",
    ".shared .b8 neg_s[-1];",
    ".local .align 8 .b8 big_l[99999999];",
    ".local .align 1073741824 .b8 al_l[1];",
    ".local .b8 l2[600000];",
    ".param .b8 big_p[2147483647];",
    ".global .b8 big_g[99999999];",
    ".const .b32 big_c[9223372036854775807];",
    ".shared .align 0 .b8 z_s[0];",
];

/// Splits into tokens: runs of identifier/number characters, single punctuation, whitespace runs.
fn tokens(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        let word = c.is_ascii_alphanumeric() || matches!(c, '_' | '%' | '.' | '$');
        if word {
            cur.push(c);
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            out.push(c.to_string());
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Applies 1–3 random mutations; returns the text and a description of what was done.
fn mutate(src: &str, rng: &mut XorShift) -> (String, Vec<String>) {
    let mut what = Vec::new();
    let mut text = src.to_string();
    for _ in 0..1 + rng.below(3) {
        let op = rng.below(9);
        if op < 5 {
            let mut t = tokens(&text);
            let n = t.len();
            match op {
                0 => {
                    // a number becomes huge, negative or zero
                    let nums: Vec<usize> = (0..n)
                        .filter(|&i| t[i].chars().next().is_some_and(|c| c.is_ascii_digit()))
                        .collect();
                    if let Some(&i) = nums.get(rng.below(nums.len())) {
                        let v = HUGE[rng.below(HUGE.len())];
                        what.push(format!("number {} -> {}", t[i], v));
                        t[i] = v.to_string();
                    }
                }
                1 => {
                    let i = rng.below(n);
                    what.push(format!("delete token {:?}", t[i]));
                    t.remove(i);
                }
                2 => {
                    let i = rng.below(n);
                    what.push(format!("duplicate token {:?}", t[i]));
                    let x = t[i].clone();
                    t.insert(i, x);
                }
                3 => {
                    let (i, j) = (rng.below(n), rng.below(n));
                    what.push(format!("swap tokens {:?} and {:?}", t[i], t[j]));
                    t.swap(i, j);
                }
                _ => {
                    let opens: Vec<usize> = (0..n).filter(|&i| t[i] == "{").collect();
                    if let Some(&i) = opens.get(rng.below(opens.len())) {
                        let h = HOSTILE[rng.below(HOSTILE.len())];
                        what.push(format!("insert {h}"));
                        t.insert(i + 1, format!("\n{h}\n"));
                    }
                }
            }
            text = t.concat();
        } else {
            let mut lines: Vec<&str> = text.lines().collect();
            let n = lines.len();
            let (i, j) = (rng.below(n), rng.below(n));
            match op {
                5 => {
                    what.push(format!("delete line {:?}", lines[i]));
                    lines.remove(i);
                }
                6 | 7 => {
                    what.push(format!("duplicate line {:?}", lines[i]));
                    let x = lines[i];
                    lines.insert(j, x);
                }
                _ => {
                    what.push(format!("swap lines {:?} and {:?}", lines[i], lines[j]));
                    lines.swap(i, j);
                }
            }
            text = lines.join("\n");
        }
    }
    (text, what)
}

/// Arguments for an entry: 4 KiB buffers for 64-bit parameters, small integers, raw bytes otherwise.
fn args_for(e: &mut Emulator, decls: &[ParamDecl]) -> Vec<ParamValue> {
    decls
        .iter()
        .map(|d| match (d.size, d.ty) {
            (8, _) => ParamValue::Ptr(e.alloc(4096)),
            (4, PtxType::F32) => ParamValue::F32(1.5),
            (4, _) => ParamValue::I32(48),
            (n, _) => ParamValue::Bytes(vec![0; n]),
        })
        .collect()
}

/// Parses and launches; returns a one-line summary of what happened.
fn run_case(text: &str, seed: u64) -> String {
    let m = match Module::parse(text) {
        Ok(m) => m,
        Err(e) => return format!("parse error: {e}"),
    };
    let mut out = String::from("parsed");
    for entry in m.entries().iter().take(2) {
        let mut e = Emulator::new(EmuConfig {
            schedule: Schedule::Random { seed },
            max_steps: 20_000,
            ..EmuConfig::default()
        });
        let decls = m.entry_params(entry).unwrap_or_default();
        let args = args_for(&mut e, &decls);
        let r = e.launch(&m, entry, [2, 1, 1], [64, 1, 1], 256, &args);
        out.push_str(match r {
            Ok(_) => "; ran",
            Err(EmuError::Faulted { .. }) => "; faulted",
            Err(_) => "; launch error",
        });
    }
    out
}

/// Runs one case on its own thread; panics (failing the test) with the input on a panic or a timeout.
fn check_case(label: &str, text: String, what: &[String], seed: u64) -> (String, Duration) {
    let (tx, rx) = mpsc::channel();
    let t0 = Instant::now();
    let input = text.clone();
    std::thread::spawn(move || {
        let r = catch_unwind(AssertUnwindSafe(|| run_case(&input, seed)));
        let _ = tx.send(r.map_err(|p| {
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "non-string panic".into())
        }));
    });
    let res = rx.recv_timeout(CASE_LIMIT * 5);
    let dt = t0.elapsed();
    let report = |why: String| -> ! {
        let path = std::env::temp_dir().join(format!("prism_emu_fuzz_{label}.ptx"));
        let _ = std::fs::write(&path, &text);
        panic!(
            "fuzz case {label} {why}; mutations: {what:?}; input written to {}",
            path.display()
        )
    };
    match res {
        Ok(Ok(summary)) => {
            if dt > CASE_LIMIT {
                report(format!("took {dt:?} (limit {CASE_LIMIT:?}): {summary}"));
            }
            (summary, dt)
        }
        Ok(Err(msg)) => report(format!("panicked: {msg}")),
        Err(_) => report(format!("did not finish within {:?}", CASE_LIMIT * 5)),
    }
}

#[test]
fn hostile_declarations_are_errors() {
    let base = fixture("kernels.ptx");
    let at = base.find('{').expect("a body") + 1;
    for (k, h) in HOSTILE.iter().enumerate() {
        let text = format!("{}\n{}\n{}", &base[..at], h, &base[at..]);
        let (summary, dt) = check_case(&format!("hostile{k}"), text, &[h.to_string()], 1);
        println!("{h:50} {dt:>10.3?}  {summary}");
    }
    // The cases the limits exist for are rejected by the parser, with a message saying why.
    for h in [
        ".reg .b32 %r<99999999>;",
        ".shared .align 16 .b8 big_s[99999999999];",
        ".local .b8 l2[600000];",
        ".param .b8 big_p[2147483647];",
        ".global .b8 big_g[99999999];",
    ] {
        let text = format!("{}\n{}\n{}", &base[..at], h, &base[at..]);
        let t0 = Instant::now();
        let err = Module::parse(&text).expect_err(h);
        assert!(
            t0.elapsed() < Duration::from_secs(1),
            "{h}: {:?}",
            t0.elapsed()
        );
        assert!(
            err.message.contains("limit") || err.message.contains("larger than"),
            "{h}: {err}"
        );
    }
}

#[test]
fn launch_memory_is_bounded() {
    // 4000 registers, each read before it is written (so none shares a slot with another), are within
    // the parse limit, but 1024-thread blocks of them, 264 resident, are not.
    let mut src = String::from(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry big() {\n  .reg .b32 %r<4000>;\n",
    );
    for i in 0..4000 {
        src.push_str(&format!("  add.u32 %r{i}, %r{i}, 1;\n"));
    }
    src.push_str("  ret;\n}\n");
    let src = src.as_str();
    let m = Module::parse(src).expect("parses");
    let mut e = Emulator::new(EmuConfig::default());
    let t0 = Instant::now();
    match e.launch(&m, "big", [1000, 1, 1], [1024, 1, 1], 0, &[]) {
        Err(EmuError::BadLaunch(msg)) => assert!(msg.contains("emulator memory"), "{msg}"),
        other => panic!("expected BadLaunch, got {other:?}"),
    }
    assert!(t0.elapsed() < Duration::from_secs(1));
    // One small block of the same kernel runs.
    e.launch(&m, "big", [1, 1, 1], [32, 1, 1], 0, &[])
        .expect("a 32-thread block fits");
}

#[test]
fn mutated_nvcc_fixtures() {
    let sources = [
        fixture("kernels.ptx"),
        fixture("faults.ptx"),
        fixture("extra.ptx"),
        fixture("wmma.ptx"),
    ];
    // PRISM_FUZZ_CASES / PRISM_FUZZ_SEED run a longer or different campaign by hand.
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let mut rng = XorShift(env("PRISM_FUZZ_SEED", 0x9E37_79B9_7F4A_7C15).max(1));
    let cases = env("PRISM_FUZZ_CASES", 400) as usize;
    let mut tally = std::collections::BTreeMap::<String, usize>::new();
    let mut slowest = Duration::ZERO;
    for case in 0..cases {
        let src = &sources[case % sources.len()];
        let (text, what) = mutate(src, &mut rng);
        let (summary, dt) = check_case(&format!("case{case}"), text, &what, case as u64);
        slowest = slowest.max(dt);
        let kind = if summary.starts_with("parse error") {
            "parse error".to_string()
        } else {
            summary
        };
        *tally.entry(kind).or_default() += 1;
    }
    println!("{cases} mutated cases, slowest {slowest:?}: {tally:#?}");
    // The mutations must exercise both the parser's errors and the interpreter.
    assert!(tally.get("parse error").copied().unwrap_or(0) > 0);
    assert!(tally.keys().any(|k| k.contains("ran")));
}

#[test]
fn addresses_at_the_top_of_the_address_space_fault() {
    // A load or store whose address plus size wraps past 2^64 is out of bounds, not an arithmetic
    // overflow (debug) or a wrapped in-bounds check (release).
    for (addr, op) in [
        ("0xFFFFFFFFFFFFFFFC", "ld.global.u32 %r1, [%rd1];"),
        ("0xFFFFFFFFFFFFFFF8", "st.global.u64 [%rd1], %rd1;"),
        ("0xFFFFFFFFFFFFFFFC", "atom.global.add.u32 %r1, [%rd1], 1;"),
        ("0xFFFFFFFFFFFFFFFC", "ld.u32 %r1, [%rd1];"),
    ] {
        let src = format!(
            "
.version 8.0
.target sm_90
.address_size 64
.visible .entry top() {{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  mov.u64 %rd1, {addr};
  {op}
  ret;
}}"
        );
        let m = Module::parse(&src).expect("parses");
        let mut e = Emulator::new(EmuConfig::default());
        let _keep = e.alloc(64);
        match e.launch(&m, "top", [1, 1, 1], [32, 1, 1], 0, &[]) {
            Err(EmuError::Faulted { faults, .. }) => {
                assert_eq!(faults[0].kind, FaultKind::OutOfBounds, "{op}: {faults:?}")
            }
            other => panic!("{op}: expected an OutOfBounds fault, got {other:?}"),
        }
    }
}
