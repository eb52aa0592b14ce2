//! Synchronization inference (paper 000 §5, docs/SYNC.md): where barriers go, that every inferred barrier in
//! the test kernels matters (dropping one makes the emulator report a data race or a wrong result), and that
//! the full inferred set runs race-free.
mod emit_support;
use emit_support::*;
use prism_core::ast::{FnKind, Function, Perspective};
use prism_core::sync::{inferred_sites, BarrierSite};
use prism_core::{compile_kernel_with, CompileOptions, CompiledKernel, SyncPolicy};
use prism_runtime::emu::{EmuConfig, EmuError, Emulator, FaultKind, Module, ParamValue};

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}
fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn to_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn split(src: &str) -> (Vec<Function>, Vec<Function>) {
    let fns = prism_core::parse::parse_source(src)
        .unwrap_or_else(|d| panic!("parse failed: {}", texts(&d)));
    let deps = fns
        .iter()
        .filter(|f| f.kind == FnKind::Device)
        .cloned()
        .collect();
    let ks = fns
        .iter()
        .filter(|f| f.kind == FnKind::Kernel)
        .cloned()
        .collect();
    (ks, deps)
}

fn compile(k: &Function, deps: &[Function], sync: SyncPolicy) -> CompiledKernel {
    let mut ks = compile_kernel_with(k, deps, &CompileOptions { sync })
        .unwrap_or_else(|d| panic!("compile of `{}` failed: {}", k.name, texts(&d)));
    ks.remove(0)
}

fn sites(k: &Function, deps: &[Function]) -> Vec<BarrierSite> {
    inferred_sites(k, deps).unwrap_or_else(|d| panic!("{}", texts(&d)))
}

/// Runs a kernel; `Err(kind)` is the first fault the emulator reports.
fn run(
    k: &CompiledKernel,
    blocks: u32,
    threads: u32,
    inputs: &[Vec<f32>],
    out_len: usize,
    scalars: &[u32],
) -> Result<Vec<f32>, FaultKind> {
    let module = Module::parse(&k.ptx).unwrap_or_else(|e| panic!("{e:?}\n{}", k.ptx));
    let mut emu = Emulator::new(EmuConfig::default());
    let mut params = Vec::new();
    for v in inputs {
        let a = emu.alloc(v.len() * 4);
        emu.write(a, &f32_bytes(v)).expect("write");
        params.push(ParamValue::Ptr(a));
    }
    let out = emu.alloc(out_len * 4);
    emu.write(out, &f32_bytes(&vec![f32::NAN; out_len]))
        .expect("write");
    params.push(ParamValue::Ptr(out));
    params.extend(scalars.iter().map(|s| ParamValue::U32(*s)));
    match emu.launch(
        &module,
        &k.entry,
        [blocks, 1, 1],
        [threads, 1, 1],
        k.contract.smem_bytes,
        &params,
    ) {
        Ok(_) => Ok(to_f32(&emu.read(out, out_len * 4).expect("read"))),
        Err(EmuError::Faulted { faults, .. }) => Err(faults[0].kind),
        Err(e) => panic!("launch of `{}` failed: {e:?}", k.entry),
    }
}

// ---------------------------------------------------------------------------------------------------------
// The Fig. 16-style example of docs/SYNC.md.

/// Write partition -> read (through the original name) -> write partition, in a loop. Every thread reads
/// the element its neighbour wrote, so both barriers matter.
const FIG16: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64, smem = 256)]
pub fn fig16(x: *const f32, y: *mut f32, iters: u32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(y, block[1], |j| b * 64 + j, |y_blk| {
        group(block[1], || {
            let s: Shared<[f32; 64]>;
            #[at(thread[1])]
            let t: u32 = id();
            #[at(thread[1])]
            let mut acc: f32 = 0.0;
            for it in 0..iters {
                // N1: write partition of s.
                partition(s, thread[1], |j| t + j, |s_t| {
                    group(thread[1], || {
                        s_t[0] = x[b * 64 + t] + acc;
                    });
                });
                // N2: read of s through the original name (block[1]).
                group(thread[1], || {
                    acc = acc + s[(t + 1) % 64];
                });
                // N3: write partition of s.
                partition(s, thread[1], |j| t + j, |s_t| {
                    group(thread[1], || {
                        s_t[0] = acc;
                    });
                });
                // N4: read again.
                group(thread[1], || {
                    acc = s[(t + 63) % 64];
                });
            }
            partition(y_blk, thread[1], |j| t + j, |y_t| {
                group(thread[1], || {
                    y_t[0] = acc;
                });
            });
        });
    });
}
"#;

fn fig16_reference(x: &[f32], iters: u32) -> Vec<f32> {
    let mut y = vec![0.0f32; x.len()];
    for (b, yb) in y.chunks_mut(64).enumerate() {
        let xb = &x[b * 64..b * 64 + 64];
        let mut acc = [0.0f32; 64];
        for _ in 0..iters {
            let s: Vec<f32> = (0..64).map(|t| xb[t] + acc[t]).collect();
            for t in 0..64 {
                acc[t] += s[(t + 1) % 64];
            }
            let s = acc;
            for t in 0..64 {
                acc[t] = s[(t + 63) % 64];
            }
        }
        yb.copy_from_slice(&acc);
    }
    y
}

#[test]
fn fig16_barrier_placement() {
    let (ks, deps) = split(FIG16);
    let s = sites(&ks[0], &deps);
    for x in &s {
        eprintln!("{:?} {:?} {:?}", x.pos, x.barrier, x.reasons);
    }
    // Body of the kernel: [0] let b, [1] partition(y) -> [1,0] group -> [1,0,0,0] its body:
    // [0] let s, [1] let t, [2] let acc, [3] for -> loop body [3,0]: [0] N1, [1] N2, [2] N3, [3] N4.
    let lp = [1, 0, 0, 0, 3, 0];
    let at = |i: usize| -> Vec<usize> {
        let mut v = lp.to_vec();
        v.extend_from_slice(&[i, 0]);
        v
    };
    let block = Perspective::block(1);
    // N1 writes s after N4's read on the previous iteration (WAR over the back edge): the wait moves into
    // N1's partition, just before the group that writes (it cannot go into the thread[1] group).
    let mut n1 = at(0);
    n1.push(0);
    // N2 reads after N1's write (RAW): before N2's group.
    let mut n2 = lp.to_vec();
    n2.push(1);
    // N3 writes after N2's read (WAR).
    let mut n3 = at(2);
    n3.push(0);
    // N4 reads after N3's write (RAW).
    let mut n4 = lp.to_vec();
    n4.push(3);
    let got: Vec<(Vec<usize>, Perspective, Vec<String>)> = s
        .iter()
        .map(|x| (x.pos.clone(), x.barrier.at, x.reasons.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (n1, block, vec!["WAR s".to_string()]),
            (n2, block, vec!["RAW s".to_string()]),
            (n3, block, vec!["WAR s".to_string()]),
            (n4, block, vec!["RAW s".to_string()]),
        ]
    );
    // Naive: two per scope (s twice, y_blk once; y at grid needs none) = 6 statements; inferred 4.
    let naive = prism_core::sync_report(&ks[0], &deps).expect("report");
    assert_eq!(naive.tree_naive, 6);
    assert_eq!(naive.tree_inferred, 4);
}

#[test]
fn fig16_every_barrier_matters() {
    let (ks, deps) = split(FIG16);
    let x = random(128, 3);
    let want = fig16_reference(&x, 3);
    for policy in [SyncPolicy::Naive, SyncPolicy::Inferred] {
        let k = compile(&ks[0], &deps, policy);
        let y = run(&k, 2, 64, std::slice::from_ref(&x), 128, &[3])
            .unwrap_or_else(|f| panic!("{policy:?}: {f:?}"));
        assert_eq!(y, want, "{policy:?}");
    }
    let n = sites(&ks[0], &deps).len();
    for i in 0..n {
        let k = compile(&ks[0], &deps, SyncPolicy::InferredWithout(i));
        let r = run(&k, 2, 64, std::slice::from_ref(&x), 128, &[3]);
        assert_eq!(r, Err(FaultKind::DataRace), "without barrier {i}");
    }
}

// ---------------------------------------------------------------------------------------------------------
// Fig. 6 (TF32 mma.sync with shared-memory tiles).

/// This copy of Fig. 6 (tests/programs) overwrites C with each k tile's product, so C is the last tile's.
fn fig6_reference(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let tf32 = |x: f32| f32::from_bits((x.to_bits() + 0x1000) & !0x1fff);
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k)
                .map(|l| tf32(a[i * k + l]) * tf32(b[l * n + j]))
                .sum();
        }
    }
    c
}

#[test]
fn fig6_inferred_barriers_matter() {
    let (ks, deps) = split(&program("mma.rs"));
    let k = &ks[0];
    let s = sites(k, &deps);
    for x in &s {
        eprintln!("{:?} {:?} {:?}", x.pos, x.barrier, x.reasons);
    }
    let (m, n, kk) = (32usize, 16usize, 16usize);
    let a = random(m * kk, 1);
    let b = random(kk * n, 2);
    let want = fig6_reference(&a, &b, m, n, kk);
    let blocks = ((m / 16) * (n / 8)) as u32;
    let scal = [m as u32, n as u32, kk as u32];
    let check = |c: &[f32], what: &str| {
        for (i, (g, w)) in c.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-3 * (1.0 + w.abs()),
                "{what}: c[{i}] = {g}, want {w}"
            );
        }
    };
    for policy in [SyncPolicy::Naive, SyncPolicy::Inferred] {
        let c = compile(k, &deps, policy);
        let r = run(&c, blocks, 32, &[a.clone(), b.clone()], m * n, &scal)
            .unwrap_or_else(|f| panic!("{policy:?}: {f:?}\n{}", c.ptx));
        check(&r, &format!("{policy:?}"));
    }
    let mut races = 0;
    for i in 0..s.len() {
        let c = compile(k, &deps, SyncPolicy::InferredWithout(i));
        match run(&c, blocks, 32, &[a.clone(), b.clone()], m * n, &scal) {
            Err(FaultKind::DataRace) => races += 1,
            Err(f) => panic!("without barrier {i}: unexpected fault {f:?}"),
            Ok(_) => eprintln!("without barrier {i}: no race detected"),
        }
    }
    assert!(races >= 1, "no inferred barrier of Fig. 6 matters?");
    // Fewer barriers than the naive policy.
    let rep = prism_core::sync_report(k, &deps).expect("report");
    eprintln!("{rep:?}");
    assert!(rep.tree_inferred < rep.tree_naive, "{rep:?}");
}

// ---------------------------------------------------------------------------------------------------------
// A shared-memory tiled kernel from prism-kernels: sgemm_smem<16> (256 threads, 16x16 tiles).

fn run_sgemm(
    k: &CompiledKernel,
    m: u32,
    n: u32,
    kk: u32,
    a: &[f32],
    b: &[f32],
    c: &[f32],
) -> Result<Vec<f32>, FaultKind> {
    let module = Module::parse(&k.ptx).unwrap_or_else(|e| panic!("{e:?}\n{}", k.ptx));
    let mut emu = Emulator::new(EmuConfig::default());
    let mut buf = |v: &[f32]| {
        let p = emu.alloc(v.len() * 4);
        emu.write(p, &f32_bytes(v)).expect("write");
        p
    };
    let (da, db, dc) = (buf(a), buf(b), buf(c));
    let params = [
        ParamValue::U32(m),
        ParamValue::U32(n),
        ParamValue::U32(kk),
        ParamValue::F32(1.5),
        ParamValue::Ptr(da),
        ParamValue::Ptr(db),
        ParamValue::F32(0.5),
        ParamValue::Ptr(dc),
    ];
    let blocks = m.div_ceil(16) * n.div_ceil(16);
    match emu.launch(
        &module,
        &k.entry,
        [blocks, 1, 1],
        [256, 1, 1],
        k.contract.smem_bytes,
        &params,
    ) {
        Ok(_) => Ok(to_f32(&emu.read(dc, c.len() * 4).expect("read"))),
        Err(EmuError::Faulted { faults, .. }) => Err(faults[0].kind),
        Err(e) => panic!("launch failed: {e:?}"),
    }
}

#[test]
fn sgemm_smem_inferred_barriers_matter() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../prism-kernels/src");
    let mut fns = Vec::new();
    for f in ["lib.rs", "sgemm.rs"] {
        let Ok(src) = std::fs::read_to_string(root.join(f)) else {
            eprintln!("prism-kernels/src/{f} missing: skipped");
            return;
        };
        fns.extend(
            prism_core::parse::parse_source(&src).unwrap_or_else(|d| panic!("{}", texts(&d))),
        );
    }
    let deps: Vec<Function> = fns
        .iter()
        .filter(|f| f.kind == FnKind::Device)
        .cloned()
        .collect();
    let Some(k) = fns.iter().find(|f| f.name.name == "sgemm_smem") else {
        eprintln!("sgemm_smem not found: skipped");
        return;
    };
    let (m, n, kk) = (32u32, 16u32, 48u32);
    let a = random((m * kk) as usize, 5);
    let b = random((kk * n) as usize, 6);
    let c = random((m * n) as usize, 7);
    let mut want = c.clone();
    for i in 0..m as usize {
        for j in 0..n as usize {
            let dot: f32 = (0..kk as usize)
                .map(|l| a[i * kk as usize + l] * b[l * n as usize + j])
                .sum();
            want[i * n as usize + j] = 1.5 * dot + 0.5 * c[i * n as usize + j];
        }
    }
    let close = |got: &[f32]| {
        got.iter()
            .zip(&want)
            .all(|(g, w)| (g - w).abs() <= 1e-4 * (1.0 + w.abs()))
    };
    for policy in [SyncPolicy::Naive, SyncPolicy::Inferred] {
        let ck = compile(k, &deps, policy);
        let got =
            run_sgemm(&ck, m, n, kk, &a, &b, &c).unwrap_or_else(|f| panic!("{policy:?}: {f:?}"));
        assert!(close(&got), "{policy:?}: wrong result");
    }
    let s = sites(k, &deps);
    assert_eq!(s.len(), 2, "{s:?}");
    for (i, site) in s.iter().enumerate() {
        let ck = compile(k, &deps, SyncPolicy::InferredWithout(i));
        let r = run_sgemm(&ck, m, n, kk, &a, &b, &c);
        assert_eq!(
            r.err(),
            Some(FaultKind::DataRace),
            "without barrier {i} ({:?})",
            site.reasons
        );
    }
}

// ---------------------------------------------------------------------------------------------------------
// async_ + cp_async: the read after the copies waits for them (cp.async.wait_all + bar.sync).

/// tests/programs/staged_cp_async.rs (shared with the emitter tests).
const STAGED: &str = include_str!("programs/staged_cp_async.rs");

#[test]
fn async_copy_waits_before_the_read() {
    let (ks, deps) = split(STAGED);
    let s = sites(&ks[0], &deps);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0].barrier.at, Perspective::block(1));
    assert!(s[0].barrier.wait_async, "{s:?}");
    assert_eq!(s[0].reasons, vec!["RAW s".to_string()]);
    let k = compile(&ks[0], &deps, SyncPolicy::Inferred);
    let wait = k.ptx.find("cp.async.wait_all;").expect("wait_all");
    assert!(k.ptx[wait..].contains("bar.sync 0;"), "{}", k.ptx);
    let x = random(256, 9);
    let module = Module::parse(&k.ptx).expect("parse");
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = emu.alloc(1024);
    emu.write(dx, &f32_bytes(&x)).expect("write");
    let dy = emu.alloc(1024);
    emu.launch(
        &module,
        &k.entry,
        [2, 1, 1],
        [128, 1, 1],
        k.contract.smem_bytes,
        &[ParamValue::Ptr(dx), ParamValue::Ptr(dy)],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let y = to_f32(&emu.read(dy, 1024).expect("read"));
    for (i, v) in y.iter().enumerate() {
        let (blk, t) = (i / 128, i % 128);
        let (h, r) = (t / 64, t % 64);
        assert_eq!(*v, x[blk * 128 + h * 64 + 63 - r], "y[{i}]");
    }
    // Without it, the emulator sees the race.
    let k = compile(&ks[0], &deps, SyncPolicy::InferredWithout(0));
    let module = Module::parse(&k.ptx).expect("parse");
    let r = emu.launch(
        &module,
        &k.entry,
        [2, 1, 1],
        [128, 1, 1],
        k.contract.smem_bytes,
        &[ParamValue::Ptr(dx), ParamValue::Ptr(dy)],
    );
    assert!(
        matches!(r, Err(EmuError::Faulted { .. })),
        "no fault without the async wait"
    );
}

// ---------------------------------------------------------------------------------------------------------
// A view reached at an index known only at run time (`cross` shadow levels, docs/SYNC.md).

/// The CUDA-style in-place tree reduction: each thread's view reads `st[stride]`, its partner's element,
/// which T-PARTITION cannot evaluate (`stride` is a `let`). The reads of one level and the writes of the
/// previous one are in different `group`s, so a block barrier orders them, as `__syncthreads()` would.
/// `scratch` exercises the other side: one thread's own run-time indices in one group, where no barrier can
/// go and none is needed.
const TREE: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128)]
pub fn tree_sum(x: *const f32, out: *mut f32, n: u32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(out, block[1], |k| b + k, |ob| {
        group(block[1], || {
            let s: Shared<[f32; 128]>;
            let w: Shared<[f32; 512]>;
            #[at(thread[1])]
            let t: u32 = id();
            partition(w, thread[1], |k| t * 4 + k, |scratch| {
                group(thread[1], || {
                    for i in 0..n % 4 + 1 {
                        scratch[i] = 1.0;
                    }
                    let j = n % 3;
                    scratch[j] = scratch[j] + 1.0;
                });
            });
            partition(s, thread[1], |k| t + k, |st| {
                group(thread[1], || {
                    st[0] = if b * 128 + t < n { x[b * 128 + t] } else { 0.0 };
                });
                for lvl in 0..7 {
                    let stride: u32 = 64u32 >> lvl;
                    group(thread[1], || {
                        if t < stride {
                            st[0] += st[stride];
                        }
                    });
                }
            });
            claim(ob, thread[1], |o| {
                match split(thread) {
                    1 => {
                        o[0] = s[0];
                    }
                }
            });
        });
    });
}
"#;

#[test]
fn run_time_view_index_gets_a_barrier() {
    let (ks, deps) = split(TREE);
    let s = sites(&ks[0], &deps);
    let st: Vec<&BarrierSite> = s
        .iter()
        .filter(|x| x.reasons.iter().any(|r| r.ends_with(" st")))
        .collect();
    assert!(
        !st.is_empty() && st.iter().all(|x| x.barrier.at == Perspective::block(1)),
        "{s:?}"
    );
    // Nothing for `scratch`: its run-time accesses are one thread's, in one group.
    assert!(
        !s.iter()
            .any(|x| x.reasons.iter().any(|r| r.ends_with(" scratch"))),
        "{s:?}"
    );
    let n = 300u32;
    let x = random(n as usize, 21);
    let blocks = n.div_ceil(128);
    let k = compile(&ks[0], &deps, SyncPolicy::Inferred);
    let got = run(
        &k,
        blocks,
        128,
        std::slice::from_ref(&x),
        blocks as usize,
        &[n],
    )
    .expect("no fault");
    for (bi, g) in got.iter().enumerate() {
        let mut v: Vec<f32> = (0..128)
            .map(|t| x.get(bi * 128 + t).copied().unwrap_or(0.0))
            .collect();
        let mut stride = 64;
        while stride > 0 {
            for t in 0..stride {
                v[t] += v[t + stride];
            }
            stride /= 2;
        }
        assert_eq!(*g, v[0], "block {bi}");
    }
    // Each barrier over `st` matters: without it, the partner's element is read before it is written.
    let at = s.iter().position(|x| std::ptr::eq(x, st[0])).expect("site");
    let k = compile(&ks[0], &deps, SyncPolicy::InferredWithout(at));
    let r = run(&k, blocks, 128, &[x], blocks as usize, &[n]);
    assert_eq!(r, Err(FaultKind::DataRace));
}
