//! T-PARTITION's overlap test: a write through a partition view whose index closure gives two units the
//! same elements (it reads the unit only through values equal for both) is a race and an error; closures
//! that tell every unit apart, views that are only read, and closures the test cannot see through compile.

use prism_core::check::check_function;
use prism_core::parse::parse_source;
use prism_core::Diagnostic;

fn check(src: &str) -> Result<(), Vec<Diagnostic>> {
    let fs = parse_source(src).unwrap_or_else(|e| {
        panic!(
            "parse: {:?}",
            e.iter().map(|d| d.text()).collect::<Vec<_>>()
        )
    });
    check_function(fs.last().expect("a function"), &fs).map(|_| ())
}

/// A block of `threads` with a shared allocation `s` of 1024 f32, `t` the thread's index in the block and
/// `w` its warp's; `body` runs in block code.
fn block_kernel(threads: u32, body: &str) -> String {
    format!(
        "#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = {threads}, smem = 4096)]\n\
         fn k(p: *mut f32, q: *const f32, n: u32) {{\n\
         group(block[1], || {{\n\
         let s: Shared<[f32; 1024]>;\n\
         #[at(thread[1])]\nlet t: u32 = id();\n\
         #[at(thread[32])]\nlet w: u32 = id();\n\
         {body}\n}});\n}}\n"
    )
}

/// The line and column (1-based line, 0-based column as spans count) of the token after the `/*@*/` marker.
fn marker_at(src: &str) -> (usize, usize) {
    let marker = src.find("/*@*/").expect("marker");
    let line = src[..marker].matches('\n').count() + 1;
    let col = marker - src[..marker].rfind('\n').map(|i| i + 1).unwrap_or(0) + "/*@*/".len();
    (line, col)
}

/// The overlap error: names the units, and points at the write (`/*@*/` marks the token).
fn expect_overlap(src: &str, units: (u64, u64)) {
    let ds = check(src).expect_err("an overlap error");
    let d = ds
        .iter()
        .find(|d| d.rule == "T-PARTITION" && d.message.contains("same elements"))
        .unwrap_or_else(|| {
            panic!(
                "no overlap error; got {:#?}",
                ds.iter().map(|d| d.text()).collect::<Vec<_>>()
            )
        });
    let (a, b) = units;
    assert!(
        d.message.contains(&format!("units {a} and {b}")),
        "{}",
        d.text()
    );
    let at = d.span.start();
    assert_eq!((at.line, at.column), marker_at(src), "span of {}", d.text());
    assert_eq!(
        ds.iter()
            .filter(|d| d.message.contains("same elements"))
            .count(),
        1,
        "reported once"
    );
}

fn expect_ok(src: &str) {
    if let Err(ds) = check(src) {
        panic!(
            "expected to compile:\n{src}\n{:#?}",
            ds.iter().map(|d| d.text()).collect::<Vec<_>>()
        );
    }
}

const WRITE: &str = "group(thread[1], || { /*@*/st[0] = 1.0; st[1] = 2.0; });";

#[test]
fn pairs_of_threads_share_elements() {
    for closure in [
        "|j| t / 2 + j",
        "|j| (t >> 1) * 4 + j",
        "|j| (t & 126) + j",
        "|j| t / 2 * 2 + j",
    ] {
        let src = block_kernel(
            128,
            &format!("partition(s, thread[1], {closure}, |st| {{ {WRITE} }});"),
        );
        expect_overlap(&src, (0, 1));
    }
}

#[test]
fn every_warp_writes_the_same_lanes() {
    // `t % 32` is the lane: thread 32 (warp 1's lane 0) gets thread 0's elements.
    let src = block_kernel(
        128,
        &format!("partition(s, thread[1], |j| (t % 32) * 4 + j, |st| {{ {WRITE} }});"),
    );
    expect_overlap(&src, (0, 32));
    // Warps 0 and 2 of `w % 2`, for warp-sized units.
    let src = block_kernel(
        128,
        "partition(s, thread[32], |j| (w % 2) * 32 + j, |sw| { group(thread[32], || { partition(sw, thread[1], |j| (t % 32) + j, |st| { group(thread[1], || { /*@*/st[0] = 1.0; }); }); }); });",
    );
    expect_overlap(&src, (0, 2));
}

#[test]
fn through_let_bindings_and_device_calls() {
    // The unit reaches the closure through immutable bindings.
    let src = block_kernel(
        256,
        &format!("#[at(thread[1])]\nlet half: u32 = t / 2;\n#[at(thread[1])]\nlet base: u32 = half * 8;\npartition(s, thread[1], |j| base + j, |st| {{ {WRITE} }});"),
    );
    expect_overlap(&src, (0, 1));
    // Passing the view to a `*mut` parameter writes it.
    let src = format!(
        "#[prism_device(requires(thread[1]))]\nfn put(x: *mut f32) {{ x[0] = 1.0; }}\n{}",
        block_kernel(128, "partition(s, thread[1], |j| t / 4 + j, |st| { group(thread[1], || { put(/*@*/st); }); });")
    );
    expect_overlap(&src, (0, 1));
}

#[test]
fn global_memory_blocks_that_share_a_tile() {
    // Blocks 2b and 2b + 1 write the same 128 elements.
    let src = "#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128)]\n\
               fn k(p: *mut f32) {\n\
               #[at(block[1])]\nlet b: u32 = id();\n\
               partition(p, block[1], |j| (b / 2) * 128 + j, |pb| {\n\
               group(block[1], || {\n#[at(thread[1])]\nlet t: u32 = id();\n\
               partition(pb, thread[1], |j| t + j, |pt| { group(thread[1], || { /*@*/pt[0] = 1.0; }); });\n\
               });\n});\n}\n";
    expect_overlap(src, (0, 1));
}

#[test]
fn closures_that_tell_units_apart_compile() {
    for closure in [
        "|j| t * 2 + j",
        "|j| t + j * 128",
        "|j| (t / 32) * 32 + t % 32 + j",
        "|j| (t % 32) * 4 + (t / 32) * 128 + j",
        "|j| (t ^ 1) * 2 + j",
        // Reads something the test cannot evaluate (a parameter times the unit): no conclusion.
        "|j| (t * n) % 1024 + j",
    ] {
        expect_ok(&block_kernel(128, &format!("partition(s, thread[1], {closure}, |st| {{ group(thread[1], || {{ st[0] = 1.0; }}); }});")));
    }
    // The wgmma accumulator layout of docs/GUIDE.md §7: three lossy pieces, jointly one-to-one.
    expect_ok(&block_kernel(
        128,
        "partition(s, thread[1], |r, c| (16 * (t / 32) + (t % 32) / 4 + r) * 8 + 2 * (t % 4) + c, |st| { group(thread[1], || { st[(0, 1)] = 1.0; }); });",
    ));
    // Lanes in warp code: 32 units, `t % 32` tells them apart.
    expect_ok(&block_kernel(
        128,
        "partition(s, thread[32], |j| w * 32 + j, |sw| { group(thread[32], || { #[at(thread[1])]\nlet l: u32 = id();\npartition(sw, thread[1], |j| (l % 32) + j, |st| { group(thread[1], || { st[0] = 1.0; }); }); }); });",
    ));
}

#[test]
fn shared_views_that_are_only_read_compile() {
    expect_ok(&block_kernel(
        128,
        "partition(s, thread[1], |j| t / 2 + j, |st| { group(thread[1], || { #[at(thread[1])]\nlet x: f32 = st[0]; }); });",
    ));
}

#[test]
fn mutable_bindings_are_not_followed() {
    // `h` may change before the partition: nothing is concluded from its initializer.
    expect_ok(&block_kernel(
        128,
        "#[at(thread[1])]\nlet mut h: u32 = t / 2;\nh = t;\npartition(s, thread[1], |j| h + j, |st| { group(thread[1], || { st[0] = 1.0; }); });",
    ));
}

#[test]
fn writes_that_only_some_units_make_are_not_judged() {
    // Only even threads write: no two writers share an element. Nor in a split arm, or after a `continue`.
    for body in [
        "if t % 2 == 0 { st[0] = 1.0; }",
        "for k in 0..4 { if t % 2 == 1 { continue; } st[k] = 1.0; }",
        "while n > t { st[0] = 1.0; }",
    ] {
        expect_ok(&block_kernel(
            128,
            &format!("partition(s, thread[1], |j| t / 2 + j, |st| {{ group(thread[1], || {{ {body} }}); }});"),
        ));
    }
    expect_ok(&block_kernel(
        128,
        "partition(s, thread[1], |j| t / 2 + j, |st| { match split(thread) { 1 => { st[0] = 1.0; } } });",
    ));
    // A condition or loop bound every unit evaluates the same way does not save the write.
    for body in [
        "if n > 4 { /*@*/st[0] = 1.0; }",
        "for k in 0..4 { /*@*/st[k] = 1.0; }",
        "for k in 0..n { /*@*/st[k] = 1.0; }",
    ] {
        expect_overlap(
            &block_kernel(128, &format!("partition(s, thread[1], |j| t / 2 + j, |st| {{ group(thread[1], || {{ {body} }}); }});")),
            (0, 1),
        );
    }
}

/// The overlap through the indices: names the two units and the element, at the write (`/*@*/`).
fn expect_index_overlap(src: &str, units: (u64, u64), element: i64) {
    let ds = check(src).expect_err("an overlap error");
    let d = ds
        .iter()
        .find(|d| d.rule == "T-PARTITION" && d.message.contains("both write element"))
        .unwrap_or_else(|| {
            panic!(
                "no index overlap error for\n{src}\ngot {:#?}",
                ds.iter().map(|d| d.text()).collect::<Vec<_>>()
            )
        });
    let (a, b) = units;
    assert!(
        d.message.contains(&format!("unit {a} at index")),
        "{}",
        d.text()
    );
    assert!(
        d.message.contains(&format!("unit {b} at index")),
        "{}",
        d.text()
    );
    assert!(
        d.message.contains(&format!("element {element} ")),
        "{}",
        d.text()
    );
    assert_eq!(
        d.span.start().line,
        marker_at(src).0,
        "span of {}",
        d.text()
    );
    assert_eq!(ds.len(), 1, "reported once: {ds:#?}");
}

#[test]
fn indices_that_reach_another_units_elements() {
    // Four elements per thread, eight written: thread 0's index 4 is thread 1's index 0.
    for (body, element) in [
        ("for i in 0..8 { /*@*/st[i] = 1.0; }", 4),
        ("st[0] = 1.0; /*@*/st[4] = 2.0;", 4),
        ("for i in 0..4 { st[i] = 1.0; }\n/*@*/st[5] = 2.0;", 5),
        ("for i in 0..4 { /*@*/st[i * 2] = 1.0; }", 4),
    ] {
        expect_index_overlap(
            &block_kernel(128, &format!("partition(s, thread[1], |j| t * 4 + j, |st| {{ group(thread[1], || {{ {body} }}); }});")),
            (0, 1),
            element,
        );
    }
    // Column-major: thread t owns rows t of 128; index 1 of thread 127 is fine, of a 2-D closure too.
    expect_index_overlap(
        &block_kernel(128, "partition(s, thread[1], |r, c| t * 2 + r * 8 + c, |st| { group(thread[1], || { st[(0, 0)] = 1.0; /*@*/st[(0, 2)] = 1.0; }); });"),
        (0, 1),
        2,
    );
}

#[test]
fn indices_within_each_units_elements_compile() {
    for (closure, body) in [
        ("|j| t * 4 + j", "for i in 0..4 { st[i] = 1.0; }"),
        ("|j| t * 4 + j", "st[3] = 1.0; st[0] = 2.0;"),
        // Shifted by one: thread 0 writes 1..5, thread 1 writes 5..9.
        ("|j| t * 4 + j", "for i in 0..4 { st[i + 1] = 1.0; }"),
        ("|j| t + j * 128", "for i in 0..8 { st[i] = 1.0; }"),
        (
            "|j| (t % 32) * 4 + (t / 32) * 128 + j",
            "for i in 0..4 { st[i] = 1.0; }",
        ),
        // Only some threads write past their elements: not judged (the emulator's race detector is).
        ("|j| t * 4 + j", "if t % 2 == 0 { st[4] = 1.0; }"),
        // Indices the test cannot enumerate: no conclusion.
        ("|j| t * 4 + j", "for i in 0..n { st[i] = 1.0; }"),
    ] {
        expect_ok(&block_kernel(
            128,
            &format!("partition(s, thread[1], {closure}, |st| {{ group(thread[1], || {{ {body} }}); }});"),
        ));
    }
    // Reading a neighbour's elements that no unit writes through the view is fine.
    expect_ok(&block_kernel(
        128,
        "partition(s, thread[1], |j| t * 4 + j, |st| { group(thread[1], || { #[at(thread[1])]\nlet x: f32 = st[6] + st[7]; st[0] = x; st[1] = x; }); });",
    ));
}

/// A block of 128 threads seeing all of global `p` (`|x| x`), each thread `t` all of it again (`pt`);
/// `body` runs in thread code. `attrs` adds to the kernel's attribute (`, blocks = 1`).
fn whole_view_kernel(attrs: &str, body: &str) -> String {
    format!(
        "#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128{attrs})]\n\
         fn k(p: *mut f32, n: u32) {{\n\
         partition(p, block[1], |x| x, |pb| {{\n\
         group(block[1], || {{\n#[at(thread[1])]\nlet t: u32 = id();\n\
         partition(pb, thread[1], |x| x, |pt| {{ group(thread[1], || {{ {body} }}); }});\n\
         }});\n}});\n}}\n"
    )
}

#[test]
fn whole_global_views_written_at_one_index() {
    // `|x| x` of global memory: the index must tell the units apart; element 0 by every thread races.
    let kernel = |body: &str| whole_view_kernel("", body);
    for body in [
        "/*@*/pt[0] = 1.0;",
        "/*@*/pt[n] = 1.0;",
        "if n > 2 { /*@*/pt[n - 1] = 1.0; }",
    ] {
        let src = kernel(body);
        let ds = check(&src).expect_err("an overlap error");
        assert!(
            ds.iter().any(|d| d.rule == "T-PARTITION"
                && d.message
                    .contains("an index that is the same for all of them")),
            "{src}\n{ds:#?}"
        );
    }
    // At the thread's own index, or by one thread only: compiles.
    for body in ["pt[t] = 1.0;", "if t == 0 { pt[0] = 1.0; }"] {
        expect_ok(&kernel(body));
    }
}

#[test]
fn whole_views_of_warps_refined_by_lane() {
    // Every warp sees all of `y` (`|x| x`), then hands its lanes `lane + k`: lane 0 of every warp writes
    // element 0. With the warp's own offset in the inner closure (a value that tells warps apart), or a
    // lane index that does, it compiles.
    let kernel = |inner: &str, write: &str| {
        format!(
            "#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64)]\n\
             fn k(y: *mut u32, n: u32) {{\n\
             #[at(thread[32])]\nlet w: u32 = id();\n\
             partition(y, thread[32], |x| x, |yw| {{\n\
             group(thread[32], || {{\n#[at(thread[1])]\nlet lane: u32 = id();\n\
             partition(yw, thread[1], {inner}, |yt| {{ group(thread[1], || {{ {write} }}); }});\n\
             }});\n}});\n}}\n"
        )
    };
    let src = kernel("|k| lane + k", "/*@*/yt[0] = n;");
    let ds = check(&src).expect_err("an overlap error");
    assert!(
        ds.iter().any(|d| d.rule == "T-PARTITION"
            && d.message
                .contains("an index that is the same for all of them")),
        "{ds:#?}"
    );
    for (inner, write) in [
        ("|k| w * 32 + lane + k", "yt[0] = n;"),
        ("|k| lane + k", "yt[w * 32] = n;"),
        ("|k| lane + k", "if w == 0 { yt[0] = n; }"),
    ] {
        expect_ok(&kernel(inner, write));
    }
}

#[test]
fn loop_counters_and_let_constants_index_like_constants() {
    // Through a global `|x| x` view every thread writing the same loop of elements races, whether the
    // loop's range is constant or uniform at run time.
    let kernel = |body: &str| whole_view_kernel("", body);
    for body in [
        "for i in 0..4 { /*@*/pt[i] = 1.0; }",
        "for i in 0..n { /*@*/pt[i] = 1.0; }",
        "#[at(thread[1])]\nlet v = [1.0f32; 4];\n/*@*/store4(pt, 0, v);",
        // A `let` of values uniform over the threads indexes like them.
        "#[at(thread[1])]\nlet k: u32 = n / 2;\n/*@*/pt[k] = 1.0;",
        "#[at(thread[1])]\nlet k: u32 = n / 2;\nfor i in k..k + 2 { /*@*/pt[i] = 1.0; }",
    ] {
        let src = kernel(body);
        let ds = check(&src).expect_err("an overlap error");
        assert!(
            ds.iter().any(|d| d.rule == "T-PARTITION"
                && d.message
                    .contains("an index that is the same for all of them")),
            "{src}\n{ds:#?}"
        );
    }
    // A loop whose range differs between the threads, or indices that tell them apart: compiles.
    for body in [
        "for i in t..t + 1 { pt[i] = 1.0; }",
        "for i in 0..4 { pt[t * 4 + i] = 1.0; }",
        "#[at(thread[1])]\nlet k: u32 = t * 2 + n;\npt[k] = 1.0;",
    ] {
        expect_ok(&kernel(body));
    }
    // A `let` constant is an index known at compile time; `store4` writes four elements.
    for (body, element) in [
        (
            "#[at(thread[1])]\nlet k: u32 = 4;\nst[0] = 1.0;\n/*@*/st[k] = 2.0;",
            4,
        ),
        (
            "#[at(thread[1])]\nlet v = [1.0f32; 4];\nstore4(st, 0, v);\n/*@*/store4(st, 2, v);",
            4,
        ),
    ] {
        expect_index_overlap(
            &block_kernel(128, &format!("partition(s, thread[1], |j| t * 4 + j, |st| {{ group(thread[1], || {{ {body} }}); }});")),
            (0, 1),
            element,
        );
    }
}

#[test]
fn writes_that_never_run_together_are_not_compared() {
    // The two arms of a uniform `if` never both run; an arm a constant condition never takes writes nothing.
    for body in [
        "if n > 2 { for i in 0..4 { st[i] = 1.0; } } else { st[4] = 2.0; }",
        "if 2 > 3 { st[4] = 2.0; }\nst[0] = 1.0;",
        // Nor does a loop that never runs its body (probe round I).
        "for i in 0..0 { st[4] = 2.0; }\nst[0] = 1.0;",
        "while false { st[4] = 2.0; }\nst[0] = 1.0;",
    ] {
        expect_ok(&block_kernel(
            128,
            &format!("partition(s, thread[1], |j| t * 4 + j, |st| {{ group(thread[1], || {{ {body} }}); }});"),
        ));
    }
    let src = "#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128, smem = 4096, instances = [1, 4])]\n\
               fn k<const N: u32>(p: *mut f32) {\n\
               group(block[1], || {\n\
               let s: Shared<[f32; 1024]>;\n\
               #[at(thread[1])]\nlet t: u32 = id();\n\
               partition(s, thread[1], |j| t * N + j, |st| { group(thread[1], || { st[0] = 1.0; if N > 1 { st[1] = 2.0; } for i in 1..N { st[1] = 2.0; } }); });\n\
               });\n}\n";
    expect_ok(src);
}

#[test]
fn one_register_array_for_two_array_parameters() {
    let src = "#[prism_device(requires(thread[1]))]\n\
               fn rev(a: &[u32; 4], b: &mut [u32; 4]) { for i in 0..4 { b[i] = a[3 - i]; } }\n\
               #[prism_kernel(requires(grid[1], block[1], thread[1]))]\n\
               fn k(p: *mut u32) {\n\
               #[at(thread[1])]\nlet t: u32 = id();\n\
               partition(p, thread[1], |j| t * 4 + j, |pt| { group(thread[1], || {\n\
               #[at(thread[1])]\nlet mut x = [1u32, 2, 3, 4];\nrev(&x, &mut x);\npt[0] = x[0];\n}); });\n}\n";
    let ds = check(src).expect_err("an alias error");
    assert!(
        ds.iter()
            .any(|d| d.rule == "CALL-ARG" && d.message.contains("is passed to both")),
        "{ds:#?}"
    );
}

#[test]
fn writes_inside_device_functions_count_at_the_call() {
    // A device function's sure writes through a pointer parameter (constant indices, constant loops,
    // const generics) are checked as the caller's writes through the view it passes.
    let devices = "#[prism_device(requires(thread[1]))]\nfn put(x: *mut f32) { x[0] = 1.0; }\n\
                   #[prism_device(requires(thread[1]))]\nfn fill<const K: u32>(x: *mut f32) { for i in 0..K { x[i] = 0.0; } }\n\
                   #[prism_device(requires(thread[1]))]\nfn put_at(x: *mut f32, i: u32) { x[i] = 1.0; }\n\
                   #[prism_device(requires(thread[1]))]\nfn fill_twice<const K: u32>(y: *mut f32) { fill::<K>(y); put(y); }\n";
    // Through a shared view of four elements per thread: eight reach the next thread's first four.
    let shared = |call: &str| {
        format!(
            "{devices}{}",
            block_kernel(
                128,
                &format!("partition(s, thread[1], |j| t * 4 + j, |st| {{ group(thread[1], || {{ {call} }}); }});")
            )
        )
    };
    // Through a function that passes its parameter on (const generics evaluated on the way).
    expect_index_overlap(&shared("fill_twice::<6>(/*@*/st);"), (0, 1), 4);
    let src = shared("fill::<8>(/*@*/st);");
    expect_index_overlap(&src, (0, 1), 4);
    let ds = check(&src).unwrap_err();
    assert!(
        ds[0].message.contains("which writes `x[4]`")
            && ds[0]
                .notes
                .iter()
                .any(|(_, n)| n.contains("the write, through `fill::<8>`'s parameter `x`")),
        "{}",
        ds[0].text()
    );
    for call in [
        "fill::<4>(st);",
        "put(st);",
        "put_at(st, 3);",
        "fill_twice::<4>(st);",
        "for i in 0..4 { put_at(st, i); }",
        "put_at(st, n);",
    ] {
        expect_ok(&shared(call));
    }
    // Integer parameters take the constants and constant-loop counters the caller passes, a call deeper too.
    let shifted = format!(
        "{devices}#[prism_device(requires(thread[1]))]\nfn put_after(z: *mut f32, k: u32) {{ put_at(z, k + 2); }}\n"
    );
    for (call, element) in [
        ("put(st); put_at(/*@*/st, 4);", 4),
        ("for i in 0..8 { put_at(/*@*/st, i); }", 4),
        ("st[0] = 1.0; put_after(/*@*/st, 2);", 4),
    ] {
        let src = format!(
            "{shifted}{}",
            block_kernel(
                128,
                &format!("partition(s, thread[1], |j| t * 4 + j, |st| {{ group(thread[1], || {{ {call} }}); }});")
            )
        );
        expect_index_overlap(&src, (0, 1), element);
    }
    // Through a global `|x| x` view, every thread writing element 0 inside `put` races.
    let global = |body: &str| format!("{devices}{}", whole_view_kernel(", blocks = 1", body));
    let ds = check(&global("put(pt);")).expect_err("an overlap error");
    assert!(
        ds.iter().any(|d| d.rule == "T-PARTITION"
            && d.message
                .contains("passing `pt` to `put`, which writes `x[0]`")
            && d.message
                .contains("an index that is the same for all of them")),
        "{ds:#?}"
    );
    // One thread, or an index the caller tells apart (not followed): compiles.
    for body in ["if t == 0 { put(pt); }", "put_at(pt, t);"] {
        expect_ok(&global(body));
    }
}

#[test]
fn reads_inside_device_functions_count_at_the_call() {
    // A device function's sure reads through a pointer parameter are checked as the caller's reads: thread
    // t writes its four elements and passes its view to a function that reads one past them.
    let devices = "#[prism_device(requires(thread[1]), returns = thread[1])]\nfn peek(x: *const f32) -> f32 { x[4] }\n\
                   #[prism_device(requires(thread[1]), returns = thread[1])]\nfn sum<const K: u32>(x: *const f32) -> f32 { let mut a: f32 = 0.0; for i in 0..K { a = a + x[i]; } a }\n\
                   #[prism_device(requires(thread[1]))]\nfn bump(x: *mut f32) { x[4] += 1.0; }\n\
                   #[prism_device(requires(thread[1]), returns = thread[1])]\nfn maybe(x: *const f32, c: bool) -> f32 { if c { x[4] } else { 0.0 } }\n";
    let shared = |call: &str| {
        format!(
            "{devices}{}",
            block_kernel(
                128,
                &format!("partition(s, thread[1], |j| t * 4 + j, |st| {{ group(thread[1], || {{ st[0] = 1.0;\n{call} }}); }});")
            )
        )
    };
    for call in [
        "#[at(thread[1])]\nlet v: f32 = peek(/*@*/st);",
        "#[at(thread[1])]\nlet v: f32 = sum::<5>(/*@*/st);",
        "bump(/*@*/st);",
    ] {
        let src = shared(call);
        let ds = check(&src)
            .err()
            .unwrap_or_else(|| panic!("accepted: {call}"));
        let d = ds
            .iter()
            .find(|d| d.rule == "T-PARTITION" && d.message.contains("which reads"))
            .unwrap_or_else(|| panic!("{src}\n{ds:#?}"));
        assert!(
            d.message.contains("unit 1 at index [0] writes")
                && d.notes.iter().any(|(_, n)| n.contains("the read, through")),
            "{}",
            d.text()
        );
        assert_eq!(d.span.start().line, marker_at(&src).0, "{}", d.text());
    }
    // Its own elements, or a read only one side of an `if` value makes: compiles.
    for call in [
        "#[at(thread[1])]\nlet v: f32 = sum::<4>(st);",
        "#[at(thread[1])]\nlet v: f32 = maybe(st, t > 200);",
    ] {
        expect_ok(&shared(call));
    }
}

#[test]
fn an_inner_view_reaching_past_its_outer_units_elements() {
    // Each warp gets `stride` elements; each lane four of its warp's. With a stride of 32, lane 8 of warp
    // 0 writes outer index 32, element 32: warp 1's index 0, which warp 1's lane 0 writes.
    let nested = |stride: u32, per_lane: u32, write: &str| {
        block_kernel(
            128,
            &format!(
                "partition(s, thread[32], |j| w * {stride} + j, |sw| {{ group(thread[32], || {{\n\
                 #[at(thread[1])]\nlet l: u32 = id();\n\
                 partition(sw, thread[1], |j| l * {per_lane} + j, |st| {{ group(thread[1], || {{ {write} }}); }});\n\
                 }}); }});"
            ),
        )
    };
    let src = nested(32, 4, "/*@*/st[0] = 1.0;");
    let ds = check(&src).expect_err("lanes 8.. reach the next warp's elements");
    let d = ds
        .iter()
        .find(|d| d.rule == "T-PARTITION" && d.message.contains("both write element 32 of `s`"))
        .unwrap_or_else(|| {
            panic!(
                "{src}\n{:#?}",
                ds.iter().map(|d| d.text()).collect::<Vec<_>>()
            )
        });
    assert!(
        d.message.contains("partition(s, thread[32], ..)")
            && d.message.contains("unit 0 at index [32]"),
        "{}",
        d.text()
    );
    assert_eq!(d.span.start().line, marker_at(&src).0, "{}", d.text());
    // One element per lane: lane l reads inner index 32, no lane's own element but the next warp's
    // index l, which that warp's lane l writes.
    let src = nested(
        32,
        1,
        "st[0] = 1.0;\n#[at(thread[1])]\nlet v: f32 = /*@*/st[32];",
    );
    let ds = check(&src).expect_err("a read of the next warp's written element");
    assert!(
        ds.iter()
            .any(|d| d.rule == "T-PARTITION" && d.message.contains("reads")),
        "{src}\n{:#?}",
        ds.iter().map(|d| d.text()).collect::<Vec<_>>()
    );
    // 128 elements per warp hold its 32 lanes' four; one per lane fits in 32.
    expect_ok(&nested(128, 4, "st[0] = 1.0;\nst[3] = 2.0;"));
    expect_ok(&nested(
        32,
        1,
        "st[0] = 1.0;\n#[at(thread[1])]\nlet v: f32 = st[0];",
    ));
    // Reading elements no unit writes (a halo) past the stride: fine.
    expect_ok(&nested(
        32,
        4,
        "#[at(thread[1])]\nlet v: f32 = st[0] + st[5];",
    ));
}

#[test]
fn lets_of_loop_counters_index_like_the_counters() {
    // `k = i * 2 + 2` for `i` in 0..2 reaches index 4, the next thread's index 0, which it writes.
    let body = |inner: &str| {
        block_kernel(
            128,
            &format!("partition(s, thread[1], |j| t * 4 + j, |st| {{ group(thread[1], || {{ {inner} }}); }});"),
        )
    };
    let src = body(
        "st[0] = 0.0;\nfor i in 0..2 {\n#[at(thread[1])]\nlet k: u32 = i * 2 + 2;\n#[at(thread[1])]\nlet m: u32 = k + 1;\n/*@*/st[m - 1] = 1.0;\n}",
    );
    expect_index_overlap(&src, (0, 1), 4);
    // Within each thread's four: compiles.
    expect_ok(&body(
        "for i in 0..2 {\n#[at(thread[1])]\nlet k: u32 = i * 2;\nst[k] = 1.0;\nst[k + 1] = 2.0;\n}",
    ));
}

#[test]
fn reads_of_elements_another_unit_writes() {
    // Thread t writes `st[0]` and reads `st[1]`, thread t + 1's `st[0]`: a race however the two are
    // ordered (the partition hands each unit its elements for all of its scope).
    for body in [
        "st[0] = 1.0;\n#[at(thread[1])]\nlet v: f32 = /*@*/st[1];",
        "#[at(thread[1])]\nlet v: f32 = st[1];\n/*@*/st[0] = v;",
    ] {
        let src = block_kernel(
            128,
            &format!("partition(s, thread[1], |j| t + j, |st| {{ group(thread[1], || {{ {body} }}); }});"),
        );
        let ds = check(&src).expect_err("a read/write race");
        let d = ds
            .iter()
            .find(|d| d.rule == "T-PARTITION" && d.message.contains("reads"))
            .unwrap_or_else(|| panic!("{src}\n{ds:#?}"));
        assert!(
            d.message.contains("unit 0 at index [1] reads")
                && d.message.contains("unit 1 at index [0] writes"),
            "{}",
            d.text()
        );
        assert_eq!(d.span.start().line, marker_at(&src).0, "{}", d.text());
    }
    // Reading only its own elements, or elements no unit writes through the view: compiles.
    for body in [
        "st[0] = 1.0;\n#[at(thread[1])]\nlet v: f32 = st[0];\nst[0] = v + 1.0;",
        "#[at(thread[1])]\nlet v: f32 = st[0] + st[1];",
    ] {
        let src = block_kernel(
            128,
            &format!("partition(s, thread[1], |j| t + j, |st| {{ group(thread[1], || {{ {body} }}); }});"),
        );
        expect_ok(&src);
    }
}

#[test]
fn vector_loads_read_every_element_they_load() {
    // Thread t owns `4t .. 4t + 4`; `load4(st, 4)` / `load2(st, 4)` also read thread t + 1's first elements.
    const OWN: &str = "st[0] = 1.0;\nst[1] = 1.0;\nst[2] = 1.0;\nst[3] = 1.0;\n";
    for load in ["load4(/*@*/st, 4)", "load2(/*@*/st, 4)"] {
        let n = if load.starts_with("load4") { 4 } else { 2 };
        let body = format!("{OWN}#[at(thread[1])]\nlet v: [f32; {n}] = {load};");
        let src = block_kernel(
            128,
            &format!("partition(s, thread[1], |j| t * 4 + j, |st| {{ group(thread[1], || {{ {body} }}); }});"),
        );
        let ds = check(&src).expect_err("a vector read of a neighbour's elements");
        let d = ds
            .iter()
            .find(|d| d.rule == "T-PARTITION" && d.message.contains("reads"))
            .unwrap_or_else(|| panic!("{src}\n{ds:#?}"));
        assert_eq!(d.span.start().line, marker_at(&src).0, "{}", d.text());
    }
    // A vector of its own elements: compiles.
    let body = format!("{OWN}#[at(thread[1])]\nlet v: [f32; 4] = load4(st, 0);");
    expect_ok(&block_kernel(
        128,
        &format!("partition(s, thread[1], |j| t * 4 + j, |st| {{ group(thread[1], || {{ {body} }}); }});"),
    ));
}

#[test]
fn arms_of_an_if_inside_a_loop_both_run() {
    // Inside a loop inside the partition, the two arms of one `if` run in one launch (one per iteration):
    // thread 1 writes element 1 in phase 0, thread 0 reads it in phase 1.
    let src = block_kernel(
        128,
        "partition(s, thread[1], |j| t + j, |st| { group(thread[1], || {\n\
         for ph in 0..2 { if ph == 0 { st[0] = 1.0; } else {\n#[at(thread[1])]\nlet v: f32 = /*@*/st[1];\n} }\n}); });",
    );
    let ds = check(&src).expect_err("a race across iterations");
    assert!(
        ds.iter()
            .any(|d| d.rule == "T-PARTITION" && d.message.contains("reads")),
        "{ds:#?}"
    );
    // Outside a loop, the arms never both run.
    expect_ok(&block_kernel(
        128,
        "partition(s, thread[1], |j| t + j, |st| { group(thread[1], || {\n\
         if n == 0 { st[0] = 1.0; } else {\n#[at(thread[1])]\nlet v: f32 = st[1];\n}\n}); });",
    ));
}

#[test]
fn huge_constant_loops_in_a_callee_end_quickly() {
    // The callee's constant loops are unrolled within a budget: `0..u32::MAX` does not hang the compiler.
    let devices = "#[prism_device(requires(thread[1]))]\nfn mx(x: *mut f32) { for i in 0..4294967295u32 { } x[4] = 1.0; }\n\
                   #[prism_device(requires(thread[1]))]\nfn big(x: *mut f32) {\n#[at(thread[1])]\nlet mut a: u32 = 0;\nfor i in 0..100000 { for j in 0..100000 { a = a + j; } }\nx[0] = a as f32; }\n";
    let start = std::time::Instant::now();
    for call in ["mx(st);", "big(st);"] {
        let src = format!(
            "{devices}{}",
            block_kernel(
                128,
                &format!("partition(s, thread[1], |j| t * 4 + j, |st| {{ group(thread[1], || {{ {call} }}); }});")
            )
        );
        let _ = check(&src);
    }
    assert!(
        start.elapsed() < std::time::Duration::from_secs(20),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn a_view_of_two_indices_is_not_a_pointer() {
    let src = format!(
        "#[prism_device(requires(thread[1]))]\nfn rd(x: *const f32) -> f32 {{ x[0] }}\n{}",
        block_kernel(
            128,
            "partition(s, thread[1], |r, c| t * 2 + r * 256 + c, |st| { group(thread[1], || { st[(0, 0)] = rd(/*@*/st); }); });"
        )
    );
    let ds = check(&src).expect_err("a two-index view passed to a pointer");
    let d = ds
        .iter()
        .find(|d| d.rule == "T-PARTITION" && d.message.contains("takes 2 indices"))
        .unwrap_or_else(|| panic!("{ds:#?}"));
    assert_eq!(d.span.start().line, marker_at(&src).0, "{}", d.text());
}

#[test]
fn atomics_at_another_units_plain_elements() {
    // An atomic is concurrent only with atomics: at an element another unit writes or reads plainly, it
    // races (probe round I, P6).
    for (body, other) in [
        ("st[0] = 1.0; /*@*/atomic_add(st, 4, 2.0);", "writes"),
        ("/*@*/atomic_add(st, 4, 2.0); st[0] = 1.0;", "writes"),
        (
            "#[at(thread[1])]\nlet x: f32 = st[0]; /*@*/atomic_add(st, 4, x);",
            "reads",
        ),
    ] {
        let src = block_kernel(
            128,
            &format!("partition(s, thread[1], |j| t * 4 + j, |st| {{ group(thread[1], || {{ {body} }}); }});"),
        );
        let ds = check(&src).expect_err("an atomic/plain race");
        let d = ds
            .iter()
            .find(|d| d.rule == "T-PARTITION" && d.message.contains("atomically updates"))
            .unwrap_or_else(|| {
                panic!(
                    "{src}\n{:#?}",
                    ds.iter().map(|d| d.text()).collect::<Vec<_>>()
                )
            });
        assert!(d.message.contains(other), "{}", d.text());
        assert!(d.message.contains("element 4 "), "{}", d.text());
        assert_eq!(d.span.start().line, marker_at(&src).0, "{}", d.text());
    }
    // Atomics with atomics, and atomics at the unit's own elements, compile.
    for body in [
        "atomic_add(st, 0, 1.0); atomic_add(st, 4, 2.0);",
        "st[0] = 1.0; atomic_add(st, 3, 2.0);",
    ] {
        expect_ok(&block_kernel(
            128,
            &format!("partition(s, thread[1], |j| t * 4 + j, |st| {{ group(thread[1], || {{ {body} }}); }});"),
        ));
    }
}
