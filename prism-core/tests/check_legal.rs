//! Legal programs: the paper's figures and the CUB-like load/store chain (fixtures in `tests/programs/`;
//! Figs. 5 and 6 are compiled from the kernel library's own source, `prism-kernels/src/mma.rs`) pass every
//! rule, and the checker reports the facts the emitter relies on.

use prism_core::ast::Function;
use prism_core::check::check_function;
use prism_core::parse::parse_source;

fn parse(src: &str) -> Vec<Function> {
    parse_source(src).unwrap_or_else(|e| {
        panic!(
            "parse: {:#?}",
            e.iter().map(|d| d.text()).collect::<Vec<_>>()
        )
    })
}

/// Checks every function of `src` with all the others as dependencies; returns them checked.
fn check_all(src: &str) -> Vec<prism_core::check::Checked> {
    let fs = parse(src);
    fs.iter()
        .map(|f| {
            check_function(f, &fs).unwrap_or_else(|e| {
                panic!(
                    "{}: {:#?}",
                    f.name,
                    e.iter()
                        .map(|d| format!("{} at {:?}", d.text(), d.span.start()))
                        .collect::<Vec<_>>()
                )
            })
        })
        .collect()
}

#[test]
fn fig2_warp_mma() {
    check_all(include_str!("programs/fig2_warp_mma.rs"));
}

#[test]
fn fig5_simple_mma() {
    let c = check_all(include_str!("../../prism-kernels/src/mma.rs"));
    assert_eq!(c[0].function.name.name, "simple_mma");
    assert_eq!(c[0].instances.len(), 1);
    assert_eq!(c[0].instances[0].smem_bytes, 0);
}

#[test]
fn fig6_mma_tf32_and_its_smem_layout() {
    let c = check_all(include_str!("../../prism-kernels/src/mma.rs"));
    let k = &c[1];
    assert_eq!(k.function.name.name, "mma_tf32_naive");
    let inst = &k.instances[0];
    assert_eq!(inst.smem_bytes, 1280);
    assert_eq!(inst.threads_multiple_of, 32);
    assert_eq!(inst.threads_exact, Some(32));
    let layout: Vec<(&str, u32, u32)> = inst
        .shared
        .iter()
        .map(|s| (s.name.as_str(), s.offset, s.bytes))
        .collect();
    assert_eq!(
        layout,
        vec![
            ("a_smem", 0, 512),
            ("b_smem", 512, 256),
            ("c_smem", 768, 512)
        ]
    );
}

#[test]
fn fig6_check_time() {
    let src = include_str!("../../prism-kernels/src/mma.rs");
    let fs = parse(src);
    let t0 = std::time::Instant::now();
    let n = 50;
    for _ in 0..n {
        check_function(&fs[1], &fs).unwrap();
    }
    let per = t0.elapsed() / n;
    let t1 = std::time::Instant::now();
    for _ in 0..n {
        let _ = parse_source(src).unwrap();
    }
    let parse_per = t1.elapsed() / n;
    println!("fig6: check {per:?} per run, parse {parse_per:?} per run");
    // Well under the 100 ms budget for a whole macro expansion, even in debug builds.
    assert!(per.as_millis() < 50, "check took {per:?}");
}

#[test]
fn cub_load_store_chain() {
    let c = check_all(include_str!("programs/cub_load_store.rs"));
    let k = c
        .iter()
        .find(|c| c.function.name.name == "block_copy")
        .unwrap();
    assert_eq!(
        k.instances
            .iter()
            .map(|i| i.values.clone())
            .collect::<Vec<_>>(),
        vec![vec![1], vec![4]]
    );
    assert_eq!(k.instances[0].threads_exact, Some(128));
    assert_eq!(k.instances[0].threads_multiple_of, 32);
}

#[test]
fn vector_add() {
    let c = check_all(include_str!("programs/vector_add.rs"));
    assert_eq!(c[0].instances[0].threads_multiple_of, 1);
}

#[test]
fn more_legal_constructs() {
    let src = r#"
        #[prism_device(requires(thread[32]), returns = thread[32])]
        fn warp_sum(#[at(thread[1])] v: f32) -> f32 {
            #[at(thread[1])]
            let mut s: f32 = 0.0;
            #[at(thread[1])]
            let x: f32 = v;
            group(thread[1], || { s = x; });
            s = s + shfl_down(s, 16);
            s = s + shfl_down(s, 8);
            #[at(thread[32])]
            let total: f32 = 1.0;
            total
        }
        #[prism_device(requires(thread[1]), returns = thread[1])]
        fn ld(p: *const u32) -> u32 {
            #[at(thread[1])]
            let mut r: u32 = 0;
            unsafe { asm!("ld.global.u32 {r}, [{p}];", r = out(u32) r, p = in(u32) p[0]); }
            r
        }
        #[prism_kernel(requires(grid[1], block[1], warpgroup, warp), threads = 256, smem = 8192)]
        fn k(out: *mut f32, flags: *const u32, n: u32) {
            let half: u32 = n / 2;
            group(block[1], || {
                let buf: Shared<[f32; 1024]>;
                let st: Shared<[f32; 1024]>;
                sync_threads();
                match split(warpgroup) {
                    1 => {
                        match split(warp) { 2 => { sync_warp(); } 1 => { } 1 => { } }
                    }
                    1 => { }
                }
                #[at(thread[1])]
                let t: u32 = id();
                #[at(thread[1])]
                let w = warp_sum(t as f32);
                #[at(thread[1])]
                let mut acc = [0.0f32; 4];
                for i in (0..4).step_by(2) {
                    acc[i] = if half > 3 { 1.0 } else { 2.0 };
                }
                group(thread[1], || {
                    let v: u32 = ld(flags);
                    if v > 0 && t < half { acc[0] += w; }
                    let q = acc[0].max(0.0).sqrt();
                });
                claim(buf, thread[32], |b_warp| {
                    match split(warp) {
                        1 => { partition(b_warp, thread[1], |i| t + i, |b_t| { group(thread[1], || { b_t[0] = 1.0; }); }); }
                        1 => { }
                        2 => { }
                        4 => { }
                    }
                });
                async_(st, |st_async| {
                    group(thread[1], || { cp_async(st_async, 4 * t, out, 4 * t, 16); });
                });
            });
            #[at(thread[1])]
            let gid: u32 = id();
            partition(out, thread[1], |i| gid + i, |o| {
                group(thread[1], || { o[0] = (gid as f32) * 2.0; });
            });
        }
    "#;
    let c = check_all(src);
    let k = &c[2];
    assert_eq!(k.instances[0].threads_exact, Some(256));
    assert_eq!(k.instances[0].threads_multiple_of, 128);
    assert_eq!(k.instances[0].smem_bytes, 8192);
}

/// Mutated fixtures that still parse must be checked without panicking (errors are fine).
#[test]
fn mutations_never_panic_in_check() {
    for src in [
        include_str!("../../prism-kernels/src/mma.rs"),
        include_str!("programs/cub_load_store.rs"),
    ] {
        let toks: Vec<&str> = src.split_whitespace().collect();
        for i in 0..toks.len() {
            let mut t = toks.clone();
            t.remove(i);
            if let Ok(fs) = parse_source(&t.join(" ")) {
                for f in &fs {
                    let _ = check_function(f, &fs);
                }
            }
        }
    }
    // The deepest expression the parser accepts is also fine for the checker on a test thread.
    let deep = format!(
        "#[prism_kernel(requires(grid[1]))] fn k() {{ let x: u32 = 1{}; }}",
        " + 1".repeat(120)
    );
    let fs = parse(&deep);
    check_function(&fs[0], &fs).unwrap();
}

/// `&&`/`||` short-circuit: a left side that differs between the threads is fine while the right side
/// is per-thread work (a guarded load or atomic), and a uniform left side may guard a collective.
#[test]
fn short_circuits_guard_per_thread_work_and_uniform_collectives() {
    check_all(
        "#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k(x: *const u32, y: *mut u32, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(y, thread[1], |k| i + k, |yt| {
        group(thread[32], || {
            #[at(thread[1])]
            let lane: u32 = id();
            #[at(thread[1])]
            let a: bool = lane < n && x[lane] > 10;
            #[at(thread[1])]
            let b: bool = n > 4 && vote_any(lane == 9);
            #[at(thread[1])]
            let c: bool = n == 0 || shfl_xor(lane, 1u32) > 3;
            group(thread[1], || {
                yt[0] = (a && b || c) as u32;
            });
        });
    });
}",
    );
}

#[test]
fn if_values_choose_per_thread_in_broader_code() {
    // Without a collective in its sides, an `if` value's condition is read at its sink: each thread of the
    // block picks its own (only the chosen side runs, so the guarded load stays in bounds).
    check_all(
        "#[prism_kernel(requires(grid[1], block[1], thread[32]), smem = 144)]
fn k(x: *const f32, y: *mut f32, n: u32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(y, block[1], |j| b * block_dim() + j, |yb| {
        group(block[1], || {
            #[at(thread[1])]
            let t: u32 = id();
            #[at(thread[1])]
            let i: u32 = b * block_dim() + t;
            #[at(thread[1])]
            let v: f32 = if i < n { x[i] } else { 0.0 };
            partition(yb, thread[1], |j| t + j, |o| {
                group(thread[1], || {
                    if i < n {
                        o[0] = v;
                    }
                });
            });
        });
    });
}",
    );
}

#[test]
fn split_arms_take_a_bare_statement_like_body() {
    // As closures do (rustfmt writes `2 => match split(warp) { .. },`).
    check_all(
        "#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128)]
fn k(y: *mut u32) {
    group(block[1], || {
        match split(warp) {
            2 => match split(warp) {
                1 => {}
                1 => {}
            },
            2 => {}
        }
    });
}",
    );
}
