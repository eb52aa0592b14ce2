//! The emitter's safety nets (docs/RULES.md, "Safety nets"): each input below once reached an emitter
//! error of its own (`EMIT-*`, `TEMPLATE`, `SMEM`); the checker rejects it first, with the rule named here,
//! so the emitter's branch is an `INTERNAL` bug report. Each case runs the checker alone
//! (`check::check_function` on every function), then the driver's check stage (`check_device` on each
//! device function, as the macros do, then [`prism_core::check_kernel`]), which must report the same
//! rules, never an emitter name.

use prism_core::ast::FnKind;
use prism_core::check::check_function;
use prism_core::parse::parse_source;

/// (what the emitter's branch guarded, kernel body or whole source, the checker's rule)
const CASES: &[(&str, &str, &str)] = &[
    ("EMIT-LOOP: break outside a loop", "break;", "LOOP"),
    ("EMIT-NAME: unknown name", "let x: u32 = nope + 1;", "UNKNOWN-NAME"),
    ("EMIT-CALL: unknown function", "nope(1u32);", "UNKNOWN-FN"),
    ("EMIT-CALL: unknown function in a callee", "#[prism_device(requires(thread[1]))]\nfn d() -> u32 { nope(1u32) }\n#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k() { group(thread[1], || { let y = d(); }); }", "UNKNOWN-FN"),
    ("EMIT-NAME: unknown name in a callee", "#[prism_device(requires(thread[1]))]\nfn d() -> u32 { nope }\n#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k() { group(thread[1], || { let y = d(); }); }", "UNKNOWN-NAME"),
    ("EMIT-CALL: intrinsic arity", "sync_threads(1u32);", "TYPE"),
    ("EMIT-CALL: unknown method", "let x: f32 = 1.0f32.nope();", "UNKNOWN-FN"),
    ("EMIT-CALL: method arity", "let x: f32 = 1.0f32.sqrt(2.0f32);", "TYPE"),
    ("EMIT-LIT: literal wider than 127 bits", "let x: u64 = 170141183460469231731687303715884105728;", "CONST-OVERFLOW"),
    ("EMIT-LIT: untyped literal wider than 127 bits", "let x = 170141183460469231731687303715884105728;", "CONST-OVERFLOW"),
    ("EMIT-INDEX: a scalar indexed", "let v: u32 = 1; let x: u32 = v[0];", "TYPE"),
    ("EMIT-INDEX: two indices into a register array", "let r = [0u32; 4]; let x: u32 = r[(0, 1)];", "T-PARTITION"),
    ("EMIT-INDEX: two indices into a pointer", "group(thread[1], || { let x: f32 = a[(0, 1)]; });", "T-PARTITION"),
    ("EMIT-ASSIGN: a scalar indexed", "let mut v: u32 = 1; v[0] = 2;", "TYPE"),
    ("EMIT-TYPE: array of another length", "let mut r = [0u32; 4]; r = [0u32; 2];", "TYPE"),
    ("EMIT-TYPE: an array as a scalar", "let r = [0u32; 4]; let x = r + 1u32;", "TYPE"),
    ("EMIT-TYPE: bool ordered", "let c = true < false;", "TYPE"),
    ("EMIT-TYPE: negated bool", "let c = -true;", "TYPE"),
    ("EMIT-TYPE: abs on unsigned", "let c = true.abs();", "TYPE"),
    ("EMIT-TYPE: fma on an integer", "let c = 4u32.fma(1u32, 2u32);", "TYPE"),
    ("EMIT-TYPE: a float shifted", "let c = 1.0f32 << 1u32;", "TYPE"),
    ("EMIT-TYPE: floats and-ed", "let c = 1.0f32 & 2.0f32;", "TYPE"),
    ("EMIT-TYPE: rsqrt on an integer", "let c = 4u32.rsqrt();", "TYPE"),
    ("EMIT-TYPE: mma with a scalar fragment", "@32 group(thread[32], || { #[at(thread[1])] let mut d = 0.0f32; #[at(thread[1])] let x = [0.0f32; 4]; #[at(thread[1])] let y = [0.0f32; 2]; mma_m16n8k8_tf32(&mut d, &x, &y); });", "TYPE"),
    ("EMIT-ASSIGN: an expression assigned", "let mut v: u32 = 1; (v + 1u32) = 2;", "SYNTAX"),
    ("EMIT-ASSIGN: a call's element assigned", "group(thread[1], || { id()[0] = 2; });", "TYPE"),
    ("EMIT-INDEX: a call indexed", "let x: u32 = id()[0];", "TYPE"),
    ("EMIT-TYPE: exp2 on f64", "let c = 4.0f64.exp2();", "TYPE"),
    ("EMIT-TYPE: shuffle a bool", "@32 group(thread[32], || { #[at(thread[1])] let v = shfl_down(true, 1u32); });", "TYPE"),
    ("EMIT-TYPE: load4 of bool", "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(b: *const bool) { group(thread[1], || { let v = load4(b, 0); }); }", "INTRINSIC"),
    ("EMIT-TYPE: store4 of two elements", "group(thread[1], || { let v = [0.0f32; 2]; store4(c, 0, v); });", "TYPE"),
    ("EMIT-TYPE: ldmatrix from global", "@32 group(thread[32], || { #[at(thread[1])] let v = ldmatrix_x4(a, 0u32); });", "TYPE"),
    ("EMIT-TYPE: a wgmma accumulator that is not an array", "@128 group(block[1], || { let wa: Shared<[bf16; 64 * 64], Swizzle128>; group(thread[128], || { #[at(thread[1])] let mut d = 0.0f32; wgmma_bf16(&mut d, wa, 0, wa, 0); }); });", "TYPE"),
    ("EMIT-CALL: tma_load coordinates", "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(m: TensorMap<bf16, 2>) { let s: Shared<[bf16; 64 * 64], Swizzle128>; async_(s, |sa| { tma_load(sa, m, 0u32); }); }", "TYPE"),
    ("EMIT-CALL: tma_store coordinates", "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(m: TensorMapMut<bf16, 2>) { let s: Shared<[bf16; 64 * 64], Swizzle128>; tma_store(m, s, 0u32); }", "TYPE"),
    ("EMIT-TYPE: a pointer for a tensor map", "let s: Shared<[bf16; 64 * 64], Swizzle128>; async_(s, |sa| { tma_load(sa, a, 0u32, 0u32); });", "TYPE"),
    ("EMIT-CALL: cp_async of 12 bytes", "let s: Shared<[f32; 16]>; group(thread[1], || { async_(s, |sa| { cp_async(sa, 0, a, 0, 12); }); });", "INTRINSIC"),
    ("EMIT-CALL: cp_async_bulk of 24 bytes", "let s: Shared<[f32; 16]>; async_(s, |sa| { cp_async_bulk(sa, 0, a, 0, 24); });", "INTRINSIC"),
    ("EMIT-TYPE: partition of a scalar", "partition(n, thread[1], |i| i, |y| { });", "T-PARTITION"),
    ("EMIT-TYPE: atomic of a scalar", "group(thread[1], || { atomic_add(n, 0, 1u32); });", "TYPE"),
    ("EMIT-CALL: device function arity", "#[prism_device(requires(thread[1]))]\nfn d(x: u32) -> u32 { x }\n#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k() { group(thread[1], || { let y = d(1u32, 2u32); }); }", "TYPE"),
    ("EMIT-TYPE: a scalar for an array parameter", "#[prism_device(requires(thread[1]))]\nfn d(x: &[u32; 4]) -> u32 { x[0] }\n#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k() { group(thread[1], || { let y = d(1u32); }); }", "CALL-ARG"),
    ("EMIT-PARAM: an array parameter", "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(x: &[u32; 4]) { }", "TYPE"),
    ("EMIT-PARAM: a shared parameter", "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(x: Shared<[u32; 4]>) { }", "TYPE"),
    ("ASM: an `out` array", "#[prism_device(requires(thread[1]))]\nfn d() -> u32 { let mut r = [0u32; 2]; unsafe { asm!(\"mov.u32 {y}, 1;\", y = out(u32) r); } r[0] }\n#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k() { group(thread[1], || { let y = d(); }); }", "TYPE"),
    ("ASM: an `out` element", "#[prism_device(requires(thread[1]))]\nfn d() -> u32 { let mut r = [0u32; 2]; unsafe { asm!(\"mov.u32 {y}, 1;\", y = out(u32) r[0]); } r[0] }\n#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k() { group(thread[1], || { let y = d(); }); }", "TYPE"),
    ("EMIT-TYPE: a let of a unit call", "let x = sync_threads();", "TYPE"),
    ("EMIT-TYPE: a let of a unit device call", "#[prism_device(requires(thread[1]))]\nfn d() { }\n#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k() { group(thread[1], || { let y = d(); }); }", "TYPE"),
    ("T-SPLIT: a grid split", "match split(grid) { 1 => {} }", "T-SPLIT"),
    ("T-SPLIT: a block split in thread code", "group(thread[1], || { match split(block) { 1 => {} } });", "T-SPLIT"),
    ("T-SPLIT: arm sizes past u32", "@32 group(block[1], || { match split(thread) { 4294967295 => {} 4294967295 => {} } });", "T-SPLIT"),
    ("T-PARTITION: a hidden name", "partition(c, thread[1], |i| i, |y| { c[0] = 1.0f32; });", "PARTITION-HIDDEN"),
    ("T-PARTITION: a hidden claimed name", "@32 group(block[1], || { let s: Shared<[f32; 32]>; claim(s, thread[32], |sw| { match split(thread) { 32 => { s[0] = 1.0f32; } } }); });", "CLAIM-HIDDEN"),
    ("T-PARTITION: a hidden async name", "group(block[1], || { let s: Shared<[f32; 32]>; async_(s, |sa| { s[0] = 1.0f32; }); });", "ASYNC-HIDDEN"),
    ("T-PARTITION: index count", "partition(c, thread[1], |i, j| i + j, |y| { y[0] = 1.0f32; });", "T-PARTITION"),
    ("REG-ARRAY: 5000 registers", "let r = [0u32; 5000];", "REG-ARRAY"),
    ("TYPE: a tensor map as a value", "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(m: TensorMap<bf16, 2>) { let x = m; }", "TYPE"),
    ("TYPE: a tensor map for a device function", "#[prism_device(requires(thread[1]))]\nfn d(x: u32) -> u32 { x }\n#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(m: TensorMap<bf16, 2>) { group(thread[1], || { let y = d(m); }); }", "TYPE"),
    ("CALL-ARG: a scalar for a device function's tensor-map parameter", "#[prism_device(requires(thread[1]))]\nfn d(m: TensorMap<bf16, 2>) -> u32 { 1u32 }\n#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(x: u32) { group(thread[1], || { let y = d(x); }); }", "CALL-ARG"),
    ("CALL-ARG: a read-only map for a `TensorMapMut` parameter", "#[prism_device(requires(thread[1]))]\nfn d(m: TensorMapMut<bf16, 2>) -> u32 { 1u32 }\n#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(m: TensorMap<bf16, 2>) { group(thread[1], || { let y = d(m); }); }", "CALL-ARG"),
    ("CALL-ARG: a map of another rank", "#[prism_device(requires(thread[1]))]\nfn d(m: TensorMap<bf16, 2>) -> u32 { 1u32 }\n#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(m: TensorMap<bf16, 1>) { group(thread[1], || { let y = d(m); }); }", "CALL-ARG"),
    ("CONST: a read-only shared parameter for a `SharedMut` one", "#[prism_device(requires(thread[1]))]\nfn w(s: SharedMut<[f32; 4]>) { s[0] = 1.0f32; }\n#[prism_device(requires(thread[1]))]\nfn d(s: Shared<[f32; 4]>) { w(s); }\n#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k() { }", "CONST"),
    ("RING: fill of an allocation", "group(block[1], || { let s: Shared<[f32; 256]>; fill(s, 0, |x| { }); });", "RING"),
    ("RING: a scalar for a ring parameter", "#[prism_device(requires(thread[1]))]\nfn d(r: Ring<f32>) -> u32 { 1u32 }\n#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(x: u32) { group(thread[1], || { let y = d(x); }); }", "RING"),
    ("RING: a ring as a value", "group(block[1], || { let s: Shared<[f32; 256]>; ring(2, s, |r| { let x = r; }); });", "RING"),
    ("CLUSTER: peer of a pointer", "#[prism_kernel(requires(grid[1], block[2], block[1], thread[1]), threads = 64, cluster = 2)]\nfn k(out: *mut f32) { group(block[2], || { #[at(block[1])] let r: u32 = id(); peer(out, 1 - r, |o| { }); }); }", "CLUSTER"),
    ("ASYNC-BULK: a bulk copy into a warp's claim", "@64 group(block[1], || { let s: Shared<[f32; 64]>; claim(s, thread[32], |sw| { match split(thread) { 32 => { async_(sw, |sa| { cp_async_bulk(sa, 0, a, 0, 64); }); } } }); });", "ASYNC-BULK"),
    ("TEMPLATE: const generics without instances", "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k<const N: u32>() { }", "INSTANCES"),
    ("SMEM: an allocation past 4 GiB", "let s: Shared<[f32; 4294967295]>;", "SMEM-LIMIT"),
    ("EMIT-INDEX: a float index", "group(thread[1], || { let x: f32 = a[1.0f32]; });", "TYPE"),
    ("EMIT-ASSIGN: immutable", "let v: u32 = 1; v = 2;", "MUT"),
    ("EMIT-TYPE: operator on bool", "let b = true; let c = b + b;", "TYPE"),
    ("EMIT-TYPE: arithmetic on bf16", "let h: bf16 = 1.0f32 as bf16; let g = h * h;", "TYPE"),
    ("EMIT-TYPE: && on integers", "let c = 1u32 && 2u32;", "TYPE"),
    ("EMIT-TYPE: cast to bool", "let c = 1u32 as bool;", "TYPE"),
    ("EMIT-TYPE: sqrt on an integer", "let c = 4u32.sqrt();", "TYPE"),
    ("EMIT-TYPE: mismatched operand types", "let c = 1u32 + 1.0f32;", "TYPE"),
    ("EMIT-TYPE: a let without type or initializer", "let q;", "TYPE"),
    ("EMIT-TYPE: atomic min on f32", "group(thread[1], || { atomic_max(c, 0, 1.0f32); });", "INTRINSIC"),
    ("EMIT-TYPE: cp_async into global memory", "async_(c, |ca| { cp_async(ca, 0, a, 0, 16); });", "INTRINSIC"),
];

/// A kernel around `body` (`@32 ` / `@128 ` first: blocks of 32 / 128 threads).
fn kernel(body: &str) -> String {
    let (t, body) = if let Some(b) = body.strip_prefix("@32 ") {
        (32, b)
    } else if let Some(b) = body.strip_prefix("@64 ") {
        (64, b)
    } else if let Some(b) = body.strip_prefix("@128 ") {
        (128, b)
    } else {
        (1, body)
    };
    format!(
        "#[prism_kernel(requires(grid[1], block[1], thread[{t}]))]\nfn k(a: *const f32, c: *mut f32, n: u32) {{ {body} }}"
    )
}

#[test]
fn the_checker_rejects_what_the_emitter_nets_guard() {
    let mut bad = Vec::new();
    for (what, body, rule) in CASES {
        let src = if body.contains("#[prism_kernel") {
            body.to_string()
        } else {
            kernel(body)
        };
        let fs = match parse_source(&src) {
            Ok(fs) => fs,
            // The parser's SYNTAX comes before the checker.
            Err(d) if d.iter().any(|d| d.rule == *rule) => continue,
            Err(d) => {
                bad.push(format!("{what}: parse: {}", d[0].text()));
                continue;
            }
        };
        let k = fs
            .iter()
            .find(|f| f.kind == FnKind::Kernel)
            .expect("a kernel");
        let deps: Vec<_> = fs
            .iter()
            .filter(|f| f.kind == FnKind::Device)
            .cloned()
            .collect();
        // The checker alone on every function (device functions are checked by their own macro first).
        let mut got: Vec<&str> = Vec::new();
        for f in &fs {
            if let Err(d) = check_function(f, &deps) {
                got.extend(d.iter().map(|d| d.rule));
            }
        }
        if got.is_empty() {
            got.push("(accepted)");
        }
        // The driver's check stage: `check_device` for each device function, then `check_kernel`.
        let mut stage: Vec<&str> = Vec::new();
        for d in &deps {
            if let Err(d) = prism_core::check_device(d, &deps) {
                stage.extend(d.iter().map(|d| d.rule));
            }
        }
        if let Err(d) = prism_core::check_kernel(k, &deps) {
            stage.extend(d.iter().map(|d| d.rule));
        }
        if stage.is_empty() {
            stage.push("(accepted)");
        }
        // check_kernel checks the callees' bodies again: compare the rules, not how often each fires.
        got.sort_unstable();
        got.dedup();
        stage.sort_unstable();
        stage.dedup();
        if !got.contains(rule) || stage != got {
            bad.push(format!(
                "{what}: want [{rule}], checker {got:?}, check stage {stage:?}"
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
