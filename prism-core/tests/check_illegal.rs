//! Illegal programs, one (or more) per rule: the diagnostic names the rule, the perspectives involved, and
//! points at the offending token (line/column of `span.start()`, 1-based lines, 0-based columns).

use prism_core::check::check_function;
use prism_core::parse::parse_source;
use prism_core::Diagnostic;

/// Checks the last function of `src` (the others are its dependencies) and returns the diagnostics.
fn diags(src: &str) -> Vec<Diagnostic> {
    let fs = parse_source(src).unwrap_or_else(|e| {
        panic!(
            "parse: {:?}",
            e.iter().map(|d| d.text()).collect::<Vec<_>>()
        )
    });
    let f = fs.last().expect("a function");
    match check_function(f, &fs) {
        Ok(_) => panic!("expected an error in:\n{src}"),
        Err(e) => e,
    }
}

/// Asserts a diagnostic of `rule` whose message contains every `needle`, at (line, column) of the marker
/// `/*@*/` in `src` (the token right after it).
fn expect(src: &str, rule: &str, needles: &[&str]) -> Diagnostic {
    let ds = diags(src);
    let marker = src.find("/*@*/").expect("marker");
    let line = src[..marker].matches('\n').count() + 1;
    let col = marker - src[..marker].rfind('\n').map(|i| i + 1).unwrap_or(0) + 5;
    let found = ds
        .iter()
        .find(|d| d.rule == rule && needles.iter().all(|n| d.message.contains(n)));
    let Some(d) = found else {
        panic!(
            "no [{rule}] with {needles:?}; got {:#?}",
            ds.iter().map(|d| d.text()).collect::<Vec<_>>()
        );
    };
    let at = d.span.start();
    assert_eq!((at.line, at.column), (line, col), "span of {}", d.text());
    d.clone()
}

const K: &str = "#[prism_kernel(requires(grid[1], block[1], thread[32]))]";

fn kernel(body: &str) -> String {
    format!("{K}\nfn k(p: *mut f32, q: *const f32, n: u32) {{\n{body}\n}}\n")
}

// ---- paper figures

#[test]
fn fig7_group_broader_level() {
    let src = kernel("    group(thread[2], || {\n        group(/*@*/block[1], || { });\n    });");
    expect(&src, "T-GROUP", &["block[1]", "thread[2]", "broader level"]);
}

#[test]
fn fig7_group_not_dividing() {
    let src = "#[prism_kernel(requires(grid[1], block[6]))]\nfn k() {\n    group(block[6], || {\n        group(/*@*/block[5], || { });\n    });\n}\n";
    expect(
        src,
        "T-GROUP",
        &["block[5]", "block[6]", "5 does not divide 6"],
    );
}

#[test]
fn fig9_split_does_not_fit() {
    let src = kernel("    group(thread[4], || {\n        match split(thread) {\n            4 => { }\n            /*@*/1 => { }\n        }\n    });");
    expect(&src, "T-SPLIT", &["does not fit", "thread[4]", "4, 1"]);
}

#[test]
fn misfit_split_arm_reports_only_the_split() {
    // Arm `2` of warps starts at warp 1 in a block of 3 warps: the arm's perspective (thread[64]) does not
    // divide the block, so the `grid[1]` read inside would be refused too; only the split is reported.
    let src = "#[prism_kernel(requires(grid[1], block[1], warp), threads = 96)]\nfn k(p: *mut f32, n: u32) {\n    group(block[1], || {\n        match split(warp) {\n            1 => { }\n            /*@*/2 => { for i in 0..n { } }\n        }\n    });\n}\n";
    expect(src, "T-SPLIT", &["does not divide"]);
    let ds = diags(src);
    assert!(
        ds.iter().all(|d| d.rule == "T-SPLIT"),
        "{:#?}",
        ds.iter().map(|d| d.text()).collect::<Vec<_>>()
    );
}

#[test]
fn fig10_split_misaligned() {
    let src = "#[prism_kernel(requires(grid[1], block[1], thread[3]))]\nfn k() {\n    group(thread[3], || {\n        match split(thread) {\n            1 => { }\n            /*@*/2 => { }\n        }\n    });\n}\n";
    let d = expect(src, "T-SPLIT", &["thread[2]", "thread[3]"]);
    assert!(
        d.message.contains("does not divide") || d.message.contains("not aligned"),
        "{}",
        d.message
    );
    let src = kernel("    group(thread[4], || {\n        match split(thread) {\n            1 => { }\n            /*@*/2 => { }\n            1 => { }\n        }\n    });");
    expect(
        &src,
        "T-SPLIT",
        &["offset 1", "not aligned to 2", "thread[4]"],
    );
}

#[test]
fn fig11_read_up_if() {
    let src = kernel("    #[at(thread[1])]\n    let flag: bool = true;\n    group(block[1], || {\n        if /*@*/flag {\n            sync_threads();\n        }\n    });");
    let d = expect(&src, "READ-UP", &["`flag`", "thread[1]", "block[1]"]);
    assert_eq!(d.notes[0].0.start().line, 4, "note at the declaration");
}

#[test]
fn fig12_write_down() {
    let src = kernel("    #[at(thread[1])]\n    let x: bool = true;\n    #[at(block[1])]\n    let mut y: bool = false;\n    group(block[1], || {\n        y = /*@*/x;\n        if y { sync_threads(); }\n    });");
    expect(&src, "WRITE-DOWN", &["`x`", "thread[1]", "`y` (block[1])"]);
}

// ---- one per rule

#[test]
fn requires_kernel_not_at_grid() {
    let src = "#[prism_kernel(requires(/*@*/block[1], thread[32]))]\nfn k() {}\n";
    expect(src, "REQUIRES", &["grid[1]", "block[1]"]);
}

#[test]
fn requires_sizes_no_launch_has() {
    let src = "#[prism_kernel(requires(grid[1], block[1], /*@*/thread[2048]))]\nfn k() {\n}\n";
    expect(src, "REQUIRES", &["thread[2048]", "1024", "no launch"]);
    let src =
        "#[prism_kernel(requires(grid[1], /*@*/block[4294967295], thread[32]))]\nfn k() {\n}\n";
    expect(src, "REQUIRES", &["2147483647", "blocks a grid"]);
}

#[test]
fn requires_order() {
    let src = "#[prism_kernel(requires(grid[1], thread[32], /*@*/block[1]))]\nfn k() {}\n";
    expect(src, "REQUIRES", &["block[1] follows thread[32]"]);
}

#[test]
fn requires_threads_not_multiple() {
    let src =
        "#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = /*@*/48)]\nfn k() {}\n";
    expect(src, "REQUIRES", &["48", "32"]);
}

#[test]
fn instances_missing() {
    let src = "#[prism_kernel(requires(grid[1], block[1]))]\nfn /*@*/k<const N: u32>() {}\n";
    expect(src, "INSTANCES", &["no `instances`"]);
}

#[test]
fn group_threads_not_guaranteed() {
    let src = "#[prism_kernel(requires(grid[1], block[1]))]\nfn k() {\n    group(block[1], || {\n        group(/*@*/thread[32], || { });\n    });\n}\n";
    expect(src, "T-GROUP", &["thread[32]", "block[1]", "multiple of 1"]);
}

#[test]
fn decl_broader_than_code() {
    let src = kernel(
        "    group(thread[1], || {\n        #[at(/*@*/block[1])]\n        let b: u32 = 1;\n    });",
    );
    expect(&src, "T-DECL", &["block[1]", "thread[1]"]);
}

#[test]
fn read_up_for_an_if_value_that_decides_a_collective() {
    // An `if` value whose side calls a collective decides whether it runs: its condition is read at the
    // code perspective, as an `if` statement's.
    let src = kernel("    #[at(thread[1])]\n    let t: u32 = id();\n    group(thread[32], || {\n        #[at(thread[1])]\n        let v: u32 = if /*@*/t < 5 { shfl_xor(t, 1u32) } else { 0 };\n    });");
    expect(&src, "READ-UP", &["`t`", "`shfl_xor`", "thread[32]"]);
    // Into a broader sink, the condition is read at the sink.
    let src = kernel("    #[at(thread[1])]\n    let t: u32 = id();\n    group(block[1], || {\n        #[at(block[1])]\n        let v: u32 = if /*@*/t < 5 { 1 } else { 0 };\n    });");
    expect(&src, "WRITE-DOWN", &["`t`", "`v` (block[1])"]);
    // A collective device function called by a path (`crate::f`, `some_crate::f`) is one too, in an `if`
    // value and on the right of `&&`.
    let wsum = "#[prism_device(requires(thread[32]), returns = thread[1])]\nfn wsum(#[at(thread[1])] v: u32) -> u32 {\n#[at(thread[1])]\nlet mut a: u32 = v;\nfor k in 0..5 { a = a + shfl_xor(a, 16u32 >> k); }\na\n}\n";
    for (value, callee) in [
        ("if /*@*/t < 5 { crate::wsum(t) } else { 0 }", "`wsum`"),
        ("if /*@*/t < 5 { other::wsum(t) } else { 0 }", "`wsum`"),
        ("((/*@*/t < 5 && crate::wsum(t) > 3) as u32)", "`wsum`"),
    ] {
        let src = format!(
            "{wsum}{}",
            kernel(&format!("    #[at(thread[1])]\n    let t: u32 = id();\n    group(thread[32], || {{\n        #[at(thread[1])]\n        let v: u32 = {value};\n    }});"))
        );
        expect(&src, "READ-UP", &["`t`", callee, "thread[32]"]);
    }
}

#[test]
fn read_up_suggests_the_perspective_a_let_of_broader_values_may_have() {
    // `k` is made of values at grid[1] but declared at thread[1]: its declaration narrows it.
    let src = kernel("    #[at(thread[1])]\n    let k: u32 = n / 2;\n    group(block[1], || {\n        if /*@*/k > 3 { sync_threads(); }\n    });");
    let d = expect(&src, "READ-UP", &["`k`", "block[1]"]);
    assert!(
        d.help
            .as_deref()
            .is_some_and(|h| h.contains("declare it `#[at(block[1])]`")),
        "{}",
        d.text()
    );
}

#[test]
fn read_up_for_bound_and_while() {
    let src = kernel("    #[at(thread[1])]\n    let t: u32 = id();\n    group(block[1], || {\n        for i in 0../*@*/t { }\n    });");
    expect(&src, "READ-UP", &["`t`", "`for` bounds", "block[1]"]);
    let src = kernel("    #[at(thread[1])]\n    let t: u32 = id();\n    while /*@*/t > 0 { }");
    expect(&src, "READ-UP", &["`t`", "`while` condition", "grid[1]"]);
}

#[test]
fn write_down_from_narrow_code() {
    let src = kernel("    #[at(block[1])]\n    let mut y: u32 = 0;\n    group(block[1], || {\n        group(thread[1], || {\n            /*@*/y = 1;\n        });\n    });");
    expect(&src, "WRITE-DOWN", &["`y`", "block[1]", "thread[1]"]);
}

#[test]
fn t_id_without_target() {
    let src = kernel("    if /*@*/id() > 3 { }");
    let d = expect(&src, "T-ID", &["id()"]);
    assert!(d.help.unwrap().contains("assign id() to a variable"));
}

#[test]
fn shared_alloc_not_at_block() {
    let src = kernel("    let /*@*/s: Shared<[f32; 16]>;");
    expect(&src, "T-ALLOC-SHARED", &["grid[1]", "block[1]"]);
}

#[test]
fn shared_over_declared_and_device_limit() {
    let src = "#[prism_kernel(requires(grid[1], block[1]), smem = /*@*/1024)]\nfn k() {\n    group(block[1], || {\n        let a: Shared<[f32; 200]>;\n        let b: Shared<[f32; 100]>;\n    });\n}\n";
    // 800 -> 800, +400 = 1200 bytes (16-byte aligned).
    expect(src, "SMEM-LIMIT", &["1200", "1024"]);
    // Over the device limit: at the (first) allocation.
    let src = "#[prism_kernel(requires(grid[1], block[1]))]\nfn k() {\n    group(block[1], || {\n        /*@*/let a: Shared<[f32; 60000]>;\n    });\n}\n";
    expect(src, "SMEM-LIMIT", &["240000", "232448"]);
}

#[test]
fn shared_access_from_grid() {
    let src = "#[prism_device(requires(block[1]), smem = 64)]\nfn d() {\n    let s: Shared<[f32; 16]>;\n    #[at(thread[1])]\n    let t: u32 = id();\n    partition(s, thread[1], |i| t + i, |s_t| { group(thread[1], || { s_t[0] = 1.0; }); });\n}\n#[prism_kernel(requires(grid[1], block[1]), smem = 64)]\nfn k() {\n    group(block[1], || {\n        d();\n    });\n}\n";
    // Legal: shared memory used at block[1] and below, callee smem accounted.
    let fs = parse_source(src).unwrap();
    let c = check_function(&fs[1], &fs).unwrap();
    assert_eq!(c.instances[0].smem_bytes, 64);
    let src2 = src.replace("smem = 64)]\nfn k", "smem = 32)]\nfn k");
    let fs = parse_source(&src2).unwrap();
    let e = check_function(&fs[1], &fs).unwrap_err();
    assert!(e
        .iter()
        .any(|d| d.rule == "SMEM-LIMIT" && d.message.contains("64") && d.message.contains("32")));
}

#[test]
fn store_without_partition_and_through_const() {
    let src = kernel("    group(thread[1], || {\n        /*@*/p[0] = 1.0;\n    });");
    expect(&src, "STORE", &["`p`", "grid[1]", "thread[1]"]);
    let src = kernel("    #[at(thread[1])]\n    let t: u32 = id();\n    partition(q, thread[1], |i| t + i, |qt| {\n        group(thread[1], || { /*@*/qt[0] = 1.0; });\n    });");
    expect(&src, "CONST", &["`qt`", "*const"]);
}

#[test]
fn partition_local_array_and_wrong_perspective() {
    let src = kernel("    #[at(thread[1])]\n    let a = [0.0f32; 4];\n    partition(/*@*/a, thread[1], |i| i, |b| { });");
    expect(&src, "T-PARTITION", &["`a`", "[f32; 4]"]);
    let src = kernel(
        "    group(block[1], || {\n        partition(/*@*/p, thread[1], |i| i, |pt| { });\n    });",
    );
    expect(&src, "T-PARTITION", &["`p`", "grid[1]", "block[1]"]);
    let src = "#[prism_kernel(requires(grid[1], block[1]))]\nfn k(p: *mut f32) {\n    group(block[1], || {\n        partition(p, /*@*/thread[32], |i| i, |pt| { });\n    });\n}\n";
    // p is at grid[1] (the top) but code is block[1]: first error is the perspective of p; the size too.
    let ds = diags(src);
    assert!(ds
        .iter()
        .any(|d| d.rule == "T-PARTITION" && d.message.contains("thread[32]")));
}

#[test]
fn partition_hidden_and_arity() {
    let src = kernel("    #[at(thread[1])]\n    let t: u32 = id();\n    partition(p, thread[1], |i| t + i, |pt| {\n        group(thread[1], || { pt[0] = q[/*@*/n]; /*@x*/p[0] = 2.0; });\n    });")
        .replace("/*@*/n", "n")
        .replace("/*@x*/p", "/*@*/p");
    let d = expect(&src, "PARTITION-HIDDEN", &["`p`"]);
    assert_eq!(d.notes[0].0.start().line, 5);
    let src = kernel("    #[at(thread[1])]\n    let t: u32 = id();\n    partition(p, thread[1], |i, j| t + i + j, |pt| {\n        group(thread[1], || { /*@*/pt[0] = 1.0; });\n    });");
    expect(&src, "T-PARTITION", &["2 index"]);
}

#[test]
fn claim_two_branches_and_outside_split() {
    let src = "#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64)]\nfn k(p: *mut f32) {\n    group(block[1], || {\n        let s: Shared<[f32; 64]>;\n        claim(s, thread[32], |sw| {\n            match split(thread) {\n                32 => { partition(sw, thread[1], |i| i, |x| { }); }\n                32 => { partition(/*@*/sw, thread[1], |i| i, |x| { }); }\n            }\n        });\n    });\n}\n";
    let d = expect(
        src,
        "CLAIM-ONE-BRANCH",
        &["`sw`", "two different split arms"],
    );
    assert_eq!(d.notes[0].0.start().line, 7);
    let src = "#[prism_kernel(requires(grid[1], block[1], thread[32]))]\nfn k() {\n    group(block[1], || {\n        let s: Shared<[f32; 64]>;\n        claim(s, thread[32], |sw| {\n            partition(/*@*/sw, thread[1], |i| i, |x| { });\n        });\n    });\n}\n";
    expect(src, "CLAIM-ONE-BRANCH", &["outside a `split` arm"]);
}

#[test]
fn async_only() {
    let src = "#[prism_kernel(requires(grid[1], block[1], thread[32]))]\nfn k(g: *const f32) {\n    group(block[1], || {\n        let s: Shared<[f32; 64]>;\n        async_(s, |sa| {\n            group(thread[1], || { let v: f32 = /*@*/sa[0]; });\n        });\n    });\n}\n";
    expect(src, "ASYNC-ONLY", &["`sa`", "cp_async"]);
    let src = "#[prism_kernel(requires(grid[1], block[1], thread[32]))]\nfn k(g: *const f32) {\n    group(block[1], || {\n        let s: Shared<[f32; 64]>;\n        async_(s, |sa| {\n            group(thread[1], || { let v: f32 = /*@*/s[0]; });\n        });\n    });\n}\n";
    expect(src, "ASYNC-HIDDEN", &["`s`"]);
}

const LOADS: &str = "#[prism_device(requires(thread[1]))]\nfn thread_load(p: *const i32, #[at(thread[1])] n: u32) {}\n#[prism_device(requires(thread[32]))]\nfn warp_load(p: *const i32, n: u32) {}\n#[prism_device(requires(block[1], thread[128]))]\nfn block_fn() {}\n#[prism_device(requires(thread[32]))]\nfn warp_store(#[at(thread[32])] out: *mut i32) {}\n";

#[test]
fn call_from_narrower_code() {
    let src = format!("{LOADS}#[prism_device(requires(thread[1]))]\nfn thread_load2(p: *const i32) {{\n    /*@*/warp_load(p, 4);\n}}\n");
    let d = expect(
        &src,
        "T-FUNCTION-CALL",
        &["`warp_load` requires thread[32] but is called from thread[1]"],
    );
    assert!(d.help.is_some());
}

#[test]
fn call_threads_not_guaranteed() {
    let src =
        format!("{LOADS}{K}\nfn k() {{\n    group(block[1], || {{ /*@*/block_fn(); }});\n}}\n");
    expect(&src, "T-FUNCTION-CALL", &["thread[128]", "multiple of 32"]);
}

#[test]
fn call_args() {
    // Scalar narrower than the parameter.
    let src = format!("{LOADS}#[prism_device(requires(thread[32]))]\nfn f(p: *const i32) {{\n    #[at(thread[1])]\n    let t: u32 = id();\n    warp_load(p, /*@*/t);\n}}\n");
    expect(&src, "CALL-ARG", &["`t`", "thread[1]", "thread[32]"]);
    // *mut pointer broader than the parameter.
    let src = format!("{LOADS}#[prism_device(requires(block[1], thread[32]))]\nfn f(out: *mut i32) {{\n    group(thread[32], || {{ warp_store(/*@*/out); }});\n}}\n");
    expect(
        &src,
        "CALL-ARG",
        &["`out`", "block[1]", "thread[32]", "exactly"],
    );
    // Wrong argument count and type.
    let src = format!("{LOADS}#[prism_device(requires(thread[32]))]\nfn f(p: *const i32) {{\n    warp_load(p, /*@*/1.5);\n}}\n");
    expect(&src, "TYPE", &["u32", "float"]);
}

#[test]
fn unknown_function_and_name() {
    let src =
        format!("{LOADS}{K}\nfn k() {{\n    group(thread[32], || {{ /*@*/warp_lod(); }});\n}}\n");
    let d = expect(&src, "UNKNOWN-FN", &["warp_lod"]);
    assert!(d.help.unwrap().contains("warp_load"));
    let src = kernel("    let count: u32 = 1;\n    let y: u32 = /*@*/cont + 1;");
    let d = expect(&src, "UNKNOWN-NAME", &["cont"]);
    assert!(d.help.unwrap().contains("count"));
}

#[test]
fn intrinsics() {
    let src = kernel("    group(thread[32], || {\n        /*@*/sync_threads();\n    });");
    expect(
        &src,
        "INTRINSIC",
        &["sync_threads", "block[1]", "thread[32]"],
    );
    let src = kernel("    group(thread[1], || {\n        #[at(thread[1])]\n        let v: f32 = 1.0;\n        let w: f32 = /*@*/shfl_down(v, 1);\n    });");
    expect(&src, "INTRINSIC", &["shfl_down", "thread[32]", "thread[1]"]);
    let src = kernel("    group(thread[16], || {\n        #[at(thread[1])]\n        let mut c = [0.0f32; 4];\n        #[at(thread[1])]\n        let a = [0.0f32; 4];\n        #[at(thread[1])]\n        let b = [0.0f32; 2];\n        /*@*/mma_m16n8k8_tf32(&mut c, &a, &b);\n    });");
    expect(
        &src,
        "INTRINSIC",
        &["mma_m16n8k8_tf32", "thread[32]", "thread[16]"],
    );
    let src = kernel("    group(thread[32], || {\n        let mut c = [0.0f32; 4];\n        #[at(thread[1])]\n        let a = [0.0f32; 4];\n        #[at(thread[1])]\n        let b = [0.0f32; 2];\n        mma_m16n8k8_tf32(&mut /*@*/c, &a, &b);\n    });");
    expect(
        &src,
        "CALL-ARG",
        &["`c`", "thread[32]", "exactly thread[1]"],
    );
    let src = kernel("    group(thread[32], || {\n        #[at(thread[1])]\n        let v: u32 = id();\n        let w: u32 = shfl_down(1u32, /*@*/v);\n    });");
    expect(&src, "CALL-ARG", &["`v`", "thread[1]", "thread[32]"]);
}

#[test]
fn unsafe_wrap() {
    let src = kernel("    /*@*/unsafe { }");
    expect(&src, "UNSAFE-WRAP", &["kernel"]);
    let src = "#[prism_device(requires(thread[1]))]\nfn d() {\n    let mut r: u32 = 0;\n    /*@*/asm!(\"mov.u32 {r}, 1;\", r = out(u32) r);\n}\n";
    expect(src, "UNSAFE-WRAP", &["asm!"]);
}

#[test]
fn types_and_mut() {
    let src = kernel("    let a: u32 = 1;\n    let b: f32 = 2.0;\n    let c = /*@*/a + b;");
    expect(&src, "TYPE", &["u32", "f32"]);
    let src = kernel("    let h: bf16 = 1.0 as bf16;\n    let c = /*@*/h * h;");
    let d = expect(&src, "TYPE", &["bf16"]);
    assert!(d.help.unwrap().contains("f32"));
    let src = kernel("    let a: u32 = 1;\n    /*@*/a = 2;");
    expect(&src, "MUT", &["`a`"]);
    let src = kernel("    if /*@*/n { }");
    expect(&src, "TYPE", &["bool", "u32"]);
}

#[test]
fn break_outside_loop() {
    let src = kernel("    for i in 0..4 {\n        group(thread[1], || { /*@*/break; });\n    }");
    expect(&src, "LOOP", &["break"]);
}

#[test]
fn several_errors_reported_at_once() {
    let src = kernel(
        "    let a: u32 = 1;\n    a = 2;\n    if id() > 0 { }\n    group(block[3], || { });",
    );
    let ds = diags(&src);
    let rules: Vec<&str> = ds.iter().map(|d| d.rule).collect();
    assert!(
        rules.contains(&"MUT") && rules.contains(&"T-ID") && rules.contains(&"T-GROUP"),
        "{rules:?}"
    );
}

#[test]
fn errors_per_instance() {
    let src = "#[prism_kernel(requires(grid[1], block[1]), smem = 4096, instances = [256, 2048])]\nfn k<const N: u32>() {\n    group(block[1], || {\n        let s: Shared<[f32; N]>;\n    });\n}\n";
    let fs = parse_source(src).unwrap();
    let e = check_function(&fs[0], &fs).unwrap_err();
    assert_eq!(e.len(), 1);
    assert!(e[0].message.contains("8192") && e[0].message.contains("4096"));
}

// ---- misuses that only the emitter used to find (EMIT-*) are checker errors now, at the offending token

fn kern(params: &str, body: &str) -> String {
    format!(
        "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k({params}) {{\n{body}\n}}\n"
    )
}

#[test]
fn emitter_only_misuses_are_checker_errors() {
    let cases: &[(&str, &str, &str, &[&str])] = &[
        (
            "x: *const f32, y: *mut f32",
            "    #[at(thread[1])]\n    let t: u32 = id();\n    partition(y, thread[1], |j| t + j, |y_t| {\n        async_(y_t, |y_async| {\n            group(thread[1], || {\n                cp_async(/*@*/y_async, 0, x, t, 4);\n            });\n        });\n    });",
            "INTRINSIC",
            &["cp_async", "global memory"],
        ),
        (
            "m: *mut f32",
            "    group(thread[1], || {\n        atomic_max(/*@*/m, 0, 1.0f32);\n    });",
            "INTRINSIC",
            &["atomic_max", "f32"],
        ),
        (
            "m: *mut f16",
            "    group(thread[1], || {\n        atomic_add(/*@*/m, 0, 1.0 as f16);\n    });",
            "INTRINSIC",
            &["atomic_add", "f16"],
        ),
        (
            "x: *const f64",
            "    #[at(thread[1])]\n    let v = load4(/*@*/x, 0);",
            "INTRINSIC",
            &["load4", "32 bytes"],
        ),
        (
            "x: *const bool",
            "    #[at(thread[1])]\n    let v = load2(/*@*/x, 0);",
            "INTRINSIC",
            &["load2", "bool"],
        ),
        (
            "n: u32",
            "    for i in (0..n).step_by(/*@*/0) { }",
            "LOOP",
            &["step_by(0)"],
        ),
        (
            "n: u32",
            "    #[at(thread[1])]\n    let x: f64 = 5.0;\n    #[at(thread[1])]\n    let y: f64 = x./*@*/sin();",
            "TYPE",
            &["sin", "f64"],
        ),
    ];
    for (params, body, rule, needles) in cases {
        expect(&kern(params, body), rule, needles);
    }
}

#[test]
fn param_mut_narrower_than_the_kernel() {
    let src = "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(#[at(/*@*/block[1])] c: *mut f32) {}\n";
    let d = expect(src, "PARAM-MUT", &["`c`", "block[1]", "grid[1]"]);
    assert!(d.help.as_deref().is_some_and(|h| h.contains("T-PARTITION")));
    // Device functions receive narrower `*mut` pointers from their callers' partitions (CALL-ARG: exactly
    // equal), and `*const` kernel parameters are only read: both stay legal.
    let ok = "#[prism_device(requires(thread[32]))]\nfn d(#[at(thread[32])] c: *mut f32) {}\n#[prism_kernel(requires(grid[1], block[1], thread[32]))]\nfn k(#[at(block[1])] x: *const f32) {}\n";
    let fs = parse_source(ok).expect("parse");
    for f in &fs {
        check_function(f, &fs)
            .unwrap_or_else(|d| panic!("{:?}", d.iter().map(|d| d.text()).collect::<Vec<_>>()));
    }
}

/// A claim or a partition that gives its units the same elements belongs to one unit: a `group` between
/// the claim and the split arm replicates the arm (one writer per group unit), a shared `|x| x` partition
/// used by every warpgroup or by two arms races, and an index closure that reads only a warp's position
/// hands its 32 lanes one element.
#[test]
fn shared_views_belong_to_one_unit() {
    let head = "#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64)]\nfn k() {\n    group(block[1], || {\n        let s: Shared<[f32; 64]>;\n";
    let tail = "    });\n}\n";
    let src = format!("{head}        claim(s, thread[1], |st| {{\n            group(warp[1], || {{\n                match split(thread) {{\n                    1 => {{ /*@*/st[0] = 1.0; }}\n                }}\n            }});\n        }});\n{tail}");
    let d = expect(
        &src,
        "CLAIM-ONE-BRANCH",
        &["`st`", "group(thread[32], ..)", "several thread[1] units"],
    );
    assert!(
        d.help
            .as_deref()
            .unwrap_or("")
            .contains("split at block[1]"),
        "{}",
        d.text()
    );
    let src = format!("{head}        partition(s, thread[32], |x| x, |sw| {{\n            group(thread[32], || {{\n                partition(/*@*/sw, thread[1], |i| i, |st| {{ }});\n            }});\n        }});\n{tail}");
    expect(
        &src,
        "CLAIM-ONE-BRANCH",
        &[
            "`sw` is the same elements for every thread[32] unit of block[1]",
            "outside a `split` arm",
        ],
    );
    let src = format!("{head}        partition(s, thread[32], |x| x, |sw| {{\n            match split(warp) {{\n                1 => {{ partition(sw, thread[1], |i| i, |st| {{ }}); }}\n                1 => {{ partition(/*@*/sw, thread[1], |i| i, |st| {{ }}); }}\n            }}\n        }});\n{tail}");
    expect(
        &src,
        "CLAIM-ONE-BRANCH",
        &["`sw`", "two different split arms"],
    );
    let src = format!("{head}        #[at(warp[1])]\n        let w: u32 = id();\n        partition(s, thread[1], |k| w * 32 + k, |st| {{\n            group(thread[1], || {{ /*@*/st[0] = 1.0; }});\n        }});\n{tail}");
    let d = expect(
        &src,
        "CLAIM-ONE-BRANCH",
        &["`st` is the same elements for every thread[1] unit of thread[32]"],
    );
    assert!(
        d.help.as_deref().unwrap_or("").contains("`|i| u + i`"),
        "{}",
        d.text()
    );
}

/// A variable an enclosing partition's index closure reads cannot be assigned inside the partition: the
/// views would hand their units other elements halfway through (a user moved a block's rows onto the next
/// block's with `b = b + 1`).
#[test]
fn partition_closure_variables_are_frozen_inside() {
    let src = "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(y: *mut f32) {\n    #[at(block[1])]\n    let mut b: u32 = id();\n    partition(y, block[1], |j| b * 64 + j, |yb| {\n        group(block[1], || {\n            /*@*/b = b + 1;\n        });\n    });\n}\n";
    let d = expect(
        src,
        "T-PARTITION",
        &["`b` is read by the index closure of `partition(y, ..)`"],
    );
    assert_eq!(d.notes[0].0.start().line, 5);
    // After the partition, it may change.
    let ok = "#[prism_kernel(requires(grid[1], block[1], thread[1]))]\nfn k(y: *mut f32) {\n    #[at(block[1])]\n    let mut b: u32 = id();\n    partition(y, block[1], |j| b * 64 + j, |yb| { });\n    b = b + 1;\n}\n";
    let fs = parse_source(ok).unwrap();
    check_function(fs.last().unwrap(), &fs)
        .unwrap_or_else(|e| panic!("{:?}", e.iter().map(|d| d.text()).collect::<Vec<_>>()));
}

// ---- what a port from Rust or CUDA writes first (user round I): the help says what to write instead

#[test]
fn porting_helps_name_the_prism_spelling() {
    let src =
        kernel("#[at(thread[1])]\nlet t: u32 = id();\n#[at(thread[1])]\nlet v: f32 = q[t].exp();");
    let ds = diags(&src);
    assert!(
        ds.iter().any(|d| d.rule == "UNKNOWN-FN"
            && d.help
                .as_deref()
                .is_some_and(|h| h.contains("`(x * 1.442695).exp2()`"))),
        "{:#?}",
        ds.iter().map(|d| d.text()).collect::<Vec<_>>()
    );
    let parse_help = |src: &str| {
        let ds = parse_source(src).expect_err("a syntax error");
        ds.iter()
            .filter_map(|d| d.help.clone())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let h = parse_help(&kernel(
        "#[at(thread[1])]\nlet t: u32 = id();\n#[at(thread[1])]\nlet v: f32 = q[t as usize];",
    ));
    assert!(h.contains("there is no `usize`"), "{h}");
    let h = parse_help(
        "#[prism_device(requires(thread[1]))]\nfn pair(a: f32) -> (f32, f32) { (a, a) }\n",
    );
    assert!(h.contains("`&mut [T; N]` parameter"), "{h}");
}
