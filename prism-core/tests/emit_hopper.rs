//! Hopper in the language (docs/SYNTAX.md "Hopper"): `TensorMap` parameters, `tma_load` into swizzled shared
//! allocations, `wgmma_bf16` with compiler-built descriptors and inferred fence/commit/wait, `set_max_regs`.
//! Every kernel assembles with `ptxas -arch=sm_90a` (no warning, no spill) and runs on the emulator against
//! an f64 CPU reference on random bf16 inputs, every output element checked, at ragged sizes.
mod emit_support;
use emit_support::hopper::*;
use emit_support::*;
use prism_core::{CompiledKernel, ParamKind};
use prism_runtime::emu::{
    EmuConfig, Emulator, Module, ParamValue, TensorDataType, TensorMap, TensorSwizzle,
};

/// D (m×n f32) = A (m×k, row-major) · Bᵀ (B stored n×k, row-major: K-major), one 64×BN tile per block,
/// k-tiles of BK = one swizzle span (`@L@`, `@BK@` are substituted per layout).
const GEMM: &str = r#"
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 128,
    instances = [64, 128]
)]
pub fn gemm_tile<const BN: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    d: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    let tiles_n: u32 = (n + BN - 1) / BN;
    let k_tiles: u32 = (k + @BK@ - 1) / @BK@;
    #[at(block[1])]
    let row0: u32 = (id() / tiles_n) * 64;
    #[at(block[1])]
    let col0: u32 = (id() % tiles_n) * BN;
    partition(d, block[1], |x| row0 * n + col0 + x, |d_blk| {
        group(block[1], || {
            let sa: Shared<[bf16; 64 * @BK@], @L@>;
            let sb: Shared<[bf16; BN * @BK@], @L@>;
            #[at(thread[1])]
            let mut acc = [0.0f32; BN / 2];
            for kt in 0..k_tiles {
                async_(sa, |sa_async| {
                    async_(sb, |sb_async| {
                        match split(thread) {
                            1 => {
                                tma_load(sa_async, a, kt * @BK@, row0);
                                tma_load(sb_async, b, kt * @BK@, col0);
                            }
                        }
                    });
                });
                for kk in 0..@BK@ / 16 {
                    wgmma_bf16(&mut acc, sa, kk * 16, sb, kk * 16);
                }
            }
            #[at(thread[1])]
            let t: u32 = id();
            #[at(thread[1])]
            let r0: u32 = 16 * (t / 32) + (t % 32) / 4;
            #[at(thread[1])]
            let c0: u32 = 2 * (t % 4);
            partition(d_blk, thread[1], |r, c| (r0 + r) * n + c0 + c, |d_t| {
                group(thread[1], || {
                    for i in 0..BN / 2 {
                        let dr: u32 = 8 * ((i / 2) % 2);
                        let dc: u32 = 8 * (i / 4) + i % 2;
                        if row0 + r0 + dr < m && col0 + c0 + dc < n {
                            d_t[(dr, dc)] = acc[i];
                        }
                    }
                });
            });
        });
    });
}
"#;

fn run_gemm(k: &CompiledKernel, bn: u32, mnk: (u32, u32, u32), seed: u64) {
    run_gemm_tile(k, (64, bn), mnk, seed)
}

fn gemm_src(layout: &str, bk: u32) -> String {
    GEMM.replace("@L@", layout).replace("@BK@", &bk.to_string())
}

#[test]
fn tma_wgmma_gemm_tiles_on_the_emulator() {
    let ks = compile_src(&gemm_src("Swizzle128", 64));
    assemble_all(&ks);
    for k in &ks {
        let bn = k.instance[0] as u32;
        assert!(k.ptx.contains(".target sm_90a"), "{}", k.ptx);
        assert!(k.ptx.contains(&format!(
            "wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.bf16.bf16"
        )));
        // One fence, one commit and one wait per k-tile: the four k-steps are one group.
        assert_eq!(k.ptx.matches("wgmma.commit_group").count(), 1, "{}", k.ptx);
        assert_eq!(k.ptx.matches("wgmma.wait_group.sync.aligned 0").count(), 1);
        assert_eq!(k.ptx.matches("wgmma.fence").count(), 1);
        match &k.params[1].kind {
            ParamKind::TensorMap { box_dims, .. } => assert_eq!(box_dims, &vec![64, bn]),
            other => panic!("{other:?}"),
        }
        // Several tiles and k-steps, then ragged sizes in every dimension.
        run_gemm(k, bn, (128, 2 * bn, 128), 7);
        run_gemm(k, bn, (72, bn + 40, 136), 11);
    }
}

/// One kernel per swizzle mode: the descriptors (SBO, mode) and the TMA box follow the allocation's layout.
#[test]
fn every_swizzle_mode() {
    for (layout, bk) in [("Swizzle64", 32), ("Swizzle32", 16)] {
        let ks = compile_src(&gemm_src(layout, bk));
        assemble_all(&ks);
        let k = &ks[0];
        match &k.params[0].kind {
            ParamKind::TensorMap { box_dims, .. } => assert_eq!(box_dims, &vec![bk, 64]),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            k.ptx.matches("wgmma.mma_async").count() as u32,
            bk / 16,
            "{}",
            k.ptx
        );
        run_gemm(k, 64, (64, 64, 4 * bk), 3);
        run_gemm(k, 64, (100, 72, 3 * bk + 8), 5);
    }
}

/// Without the inferred `wgmma.wait_group`, the epilogue reads accumulators of a wgmma still in flight:
/// the emulator reports it (and without the compiler's TMA box, the tensor copy and the mbarrier disagree).
#[test]
fn dropping_the_inferred_wait_is_reported() {
    let ks = compile_src(&gemm_src("Swizzle128", 64));
    let k = &ks[0];
    let mut broken = k.clone();
    broken.ptx = k.ptx.replace("\twgmma.wait_group.sync.aligned 0;\n", "");
    assert_ne!(broken.ptx, k.ptx);
    let (ab, _) = matrix(64, 64, 1);
    let (bb, _) = matrix(64, 64, 2);
    let mut emu = Emulator::new(EmuConfig::default());
    let da = buf(&mut emu, &ab);
    let db = buf(&mut emu, &bb);
    let dd = buf(&mut emu, &[0u8; 64 * 64 * 4]);
    let params = [
        tmap(k, 0, da, 64, 64),
        tmap(k, 1, db, 64, 64),
        ParamValue::Ptr(dd),
        ParamValue::U32(64),
        ParamValue::U32(64),
        ParamValue::U32(64),
    ];
    let module = Module::parse(&broken.ptx).expect("parse");
    let e = emu
        .launch(
            &module,
            &k.entry,
            [1, 1, 1],
            [128, 1, 1],
            k.contract.smem_bytes,
            &params,
        )
        .expect_err("a read of in-flight accumulators must fault");
    assert!(format!("{e:?}").contains("InFlight"), "{e:?}");
}

/// Warp specialization with a ring: a producer warpgroup fills STAGES slots with TMA (waiting for each slot
/// to be drained), two consumer warpgroups drain them with wgmma (64 rows each of a 128 × BN tile) and hand
/// the slot back; registers move from the producer to the consumers with `set_max_regs`.
const GEMM_WS: &str = r#"
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 384,
    instances = [(128, 3)]
)]
pub fn gemm_ws<const BN: u32, const STAGES: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    d: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    let tiles_n: u32 = (n + BN - 1) / BN;
    let k_tiles: u32 = (k + 63) / 64;
    #[at(block[1])]
    let row0: u32 = (id() / tiles_n) * 128;
    #[at(block[1])]
    let col0: u32 = (id() % tiles_n) * BN;
    partition(d, block[1], |x| row0 * n + col0 + x, |d_blk| {
        group(block[1], || {
            let sa: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
            let sb: Shared<[bf16; STAGES * BN * 64], Swizzle128>;
            // Warpgroup 0 produces; warpgroups 1 and 2 own rows 0..64 and 64..128 of the tile.
            #[at(thread[128])]
            let wg: u32 = id();
            partition(d_blk, thread[128], |x| (wg - 1) * 64 * n + x, |d_wg| {
                ring(STAGES, (sa, sb), |r| {
                    match split(warpgroup) {
                        1 => {
                            set_max_regs(40);
                            for kt in 0..k_tiles {
                                fill(r, kt, |sa_s, sb_s| {
                                    match split(thread) {
                                        1 => {
                                            tma_load(sa_s, a, kt * 64, row0);
                                            tma_load(sb_s, b, kt * 64, col0);
                                        }
                                    }
                                });
                            }
                        }
                        1 => {
                            set_max_regs(232);
                            #[at(thread[1])]
                            let mut acc = [0.0f32; BN / 2];
                            for kt in 0..k_tiles {
                                drain(r, kt, |sa_s, sb_s| {
                                    for kk in 0..4 {
                                        wgmma_bf16(&mut acc, sa_s, kk * 16, sb_s, kk * 16);
                                    }
                                });
                            }
                            #[at(thread[1])]
                            let t: u32 = id();
                            #[at(thread[1])]
                            let r0: u32 = 16 * (t / 32) + (t % 32) / 4;
                            #[at(thread[1])]
                            let c0: u32 = 2 * (t % 4);
                            partition(d_wg, thread[1], |q, c| (r0 + q) * n + c0 + c, |d_t| {
                                group(thread[1], || {
                                    for i in 0..BN / 2 {
                                        let dr: u32 = 8 * ((i / 2) % 2);
                                        let dc: u32 = 8 * (i / 4) + i % 2;
                                        if row0 + 0 + r0 + dr < m && col0 + c0 + dc < n {
                                            d_t[(dr, dc)] = acc[i];
                                        }
                                    }
                                });
                            });
                        }
                        1 => {
                            set_max_regs(232);
                            #[at(thread[1])]
                            let mut acc = [0.0f32; BN / 2];
                            for kt in 0..k_tiles {
                                drain(r, kt, |sa_s, sb_s| {
                                    for kk in 0..4 {
                                        wgmma_bf16(&mut acc, sa_s, 64 * 64 + kk * 16, sb_s, kk * 16);
                                    }
                                });
                            }
                            #[at(thread[1])]
                            let t: u32 = id();
                            #[at(thread[1])]
                            let r0: u32 = 16 * (t / 32) + (t % 32) / 4;
                            #[at(thread[1])]
                            let c0: u32 = 2 * (t % 4);
                            partition(d_wg, thread[1], |q, c| (r0 + q) * n + c0 + c, |d_t| {
                                group(thread[1], || {
                                    for i in 0..BN / 2 {
                                        let dr: u32 = 8 * ((i / 2) % 2);
                                        let dc: u32 = 8 * (i / 4) + i % 2;
                                        if row0 + 64 + r0 + dr < m && col0 + c0 + dc < n {
                                            d_t[(dr, dc)] = acc[i];
                                        }
                                    }
                                });
                            });
                        }
                    }
                });
            });
        });
    });
}
"#;

/// Rung 6 shape: 2-block clusters sharing the B tile through a multicast TMA load.
const GEMM_CLUSTER: &str = r#"
#[prism_kernel(
    requires(grid[1], block[2], block[1], warpgroup),
    threads = 384,
    cluster = 2,
    instances = [(128, 3)]
)]
pub fn gemm_cluster<const BN: u32, const STAGES: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    d: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    let tiles_n: u32 = (n + BN - 1) / BN;
    let k_tiles: u32 = (k + 63) / 64;
    // A cluster of two blocks computes two 128-row tiles over the same columns: they share B, which block
    // rank 0 loads once for both (multicast).
    #[at(block[1])]
    let blk: u32 = id();
    #[at(block[1])]
    let rank: u32 = blk % 2;
    #[at(block[1])]
    let row0: u32 = ((blk / 2) / tiles_n) * 256 + rank * 128;
    #[at(block[1])]
    let col0: u32 = ((blk / 2) % tiles_n) * BN;
    partition(d, block[1], |x| row0 * n + col0 + x, |d_blk| {
        group(block[1], || {
            let sa: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
            let sb: Shared<[bf16; STAGES * BN * 64], Swizzle128>;
            // Warpgroup 0 produces; warpgroups 1 and 2 own rows 0..64 and 64..128 of the tile.
            #[at(thread[128])]
            let wg: u32 = id();
            partition(d_blk, thread[128], |x| (wg - 1) * 64 * n + x, |d_wg| {
                ring(STAGES, (sa, sb), |r| {
                    match split(warpgroup) {
                        1 => {
                            set_max_regs(40);
                            for kt in 0..k_tiles {
                                fill(r, kt, |sa_s, sb_s| {
                                    match split(thread) {
                                        1 => {
                                            tma_load(sa_s, a, kt * 64, row0);
                                            if rank == 0 {
                                                tma_load_multicast(sb_s, b, kt * 64, col0);
                                            }
                                        }
                                    }
                                });
                            }
                        }
                        1 => {
                            set_max_regs(232);
                            #[at(thread[1])]
                            let mut acc = [0.0f32; BN / 2];
                            for kt in 0..k_tiles {
                                drain(r, kt, |sa_s, sb_s| {
                                    for kk in 0..4 {
                                        wgmma_bf16(&mut acc, sa_s, kk * 16, sb_s, kk * 16);
                                    }
                                });
                            }
                            #[at(thread[1])]
                            let t: u32 = id();
                            #[at(thread[1])]
                            let r0: u32 = 16 * (t / 32) + (t % 32) / 4;
                            #[at(thread[1])]
                            let c0: u32 = 2 * (t % 4);
                            partition(d_wg, thread[1], |q, c| (r0 + q) * n + c0 + c, |d_t| {
                                group(thread[1], || {
                                    for i in 0..BN / 2 {
                                        let dr: u32 = 8 * ((i / 2) % 2);
                                        let dc: u32 = 8 * (i / 4) + i % 2;
                                        if row0 + 0 + r0 + dr < m && col0 + c0 + dc < n {
                                            d_t[(dr, dc)] = acc[i];
                                        }
                                    }
                                });
                            });
                        }
                        1 => {
                            set_max_regs(232);
                            #[at(thread[1])]
                            let mut acc = [0.0f32; BN / 2];
                            for kt in 0..k_tiles {
                                drain(r, kt, |sa_s, sb_s| {
                                    for kk in 0..4 {
                                        wgmma_bf16(&mut acc, sa_s, 64 * 64 + kk * 16, sb_s, kk * 16);
                                    }
                                });
                            }
                            #[at(thread[1])]
                            let t: u32 = id();
                            #[at(thread[1])]
                            let r0: u32 = 16 * (t / 32) + (t % 32) / 4;
                            #[at(thread[1])]
                            let c0: u32 = 2 * (t % 4);
                            partition(d_wg, thread[1], |q, c| (r0 + q) * n + c0 + c, |d_t| {
                                group(thread[1], || {
                                    for i in 0..BN / 2 {
                                        let dr: u32 = 8 * ((i / 2) % 2);
                                        let dc: u32 = 8 * (i / 4) + i % 2;
                                        if row0 + 64 + r0 + dr < m && col0 + c0 + dc < n {
                                            d_t[(dr, dc)] = acc[i];
                                        }
                                    }
                                });
                            });
                        }
                    }
                });
            });
        });
    });
}
"#;

#[test]
fn warp_specialized_ring_gemm() {
    let ks = compile_src(GEMM_WS);
    assemble_all(&ks);
    let k = &ks[0];
    assert!(
        k.ptx.contains("setmaxnreg.dec.sync.aligned.u32 40"),
        "{}",
        k.ptx
    );
    assert!(k.ptx.contains("setmaxnreg.inc.sync.aligned.u32 232"));
    assert!(k.ptx.contains(".maxnreg 168"));
    // Each drain keeps its wgmma group in flight while the next step's are issued.
    assert!(
        k.ptx.contains("wgmma.wait_group.sync.aligned 1;"),
        "{}",
        k.ptx
    );
    // No block-wide barrier orders the slots: the ring's mbarriers do.
    let body = k.ptx.split("bar.sync 0;").nth(1).unwrap_or("");
    assert!(!body.contains("bar.sync"), "{}", k.ptx);
    for (mnk, seed) in [
        ((256, 256, 512), 1),
        ((200, 328, 136), 2),
        ((128, 128, 64), 3),
    ] {
        run_gemm_tile(k, (128, 128), mnk, seed);
    }
}

/// Without the ring's inferred full-barrier wait, consumers read a slot before (or while) TMA fills it;
/// without its empty-barrier wait, the producer refills a slot the consumers still read. The emulator
/// reports both instead of computing garbage.
#[test]
fn dropping_a_ring_wait_is_reported() {
    let ks = compile_src(GEMM_WS);
    let k = &ks[0];
    let lines: Vec<&str> = k.ptx.lines().collect();
    let waits: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("mbarrier.try_wait.parity"))
        .collect();
    // The producer's empty wait, then each consumer's full wait.
    assert_eq!(waits.len(), 3, "{}", k.ptx);
    for (which, &w) in waits.iter().enumerate() {
        let mut broken = k.clone();
        // Drop the wait and its retry branch: the thread goes on at once.
        broken.ptx = lines
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != w && *i != w + 1)
            .map(|(_, l)| *l)
            .collect::<Vec<_>>()
            .join("\n");
        let (m, n, kk) = (128u32, 128u32, 64 * 8);
        let (ab, _) = matrix(m as usize, kk as usize, 9);
        let (bb, _) = matrix(n as usize, kk as usize, 10);
        let mut emu = Emulator::new(EmuConfig::default());
        let da = buf(&mut emu, &ab);
        let db = buf(&mut emu, &bb);
        let dd = buf(&mut emu, &vec![0u8; (m * n * 4) as usize]);
        let params = [
            tmap(k, 0, da, m as u64, kk as u64),
            tmap(k, 1, db, n as u64, kk as u64),
            ParamValue::Ptr(dd),
            ParamValue::U32(m),
            ParamValue::U32(n),
            ParamValue::U32(kk),
        ];
        let module = Module::parse(&broken.ptx).expect("parse");
        let r = emu.launch(
            &module,
            &k.entry,
            [1, 1, 1],
            [384, 1, 1],
            k.contract.smem_bytes,
            &params,
        );
        assert!(r.is_err(), "dropping wait {which} went unnoticed");
    }
}

/// `cluster = 2`: an aligned `block[2]` is a cluster; `id()` from it is the block's rank in the cluster, and
/// `sync_cluster()` orders the blocks of a cluster. Every block writes its rank, then (after the cluster
/// barrier) block rank 0 of each cluster sums both ranks' values from global memory.
const CLUSTER: &str = r#"
#[prism_kernel(requires(grid[1], block[2], block[1], thread[1]), threads = 32, cluster = 2)]
pub fn cluster_ranks(out: *mut u32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(out, block[1], |x| b * 32 + x, |o_blk| {
        group(block[2], || {
            #[at(block[1])]
            let r: u32 = id();
            group(block[1], || {
                #[at(thread[1])]
                let t: u32 = id();
                partition(o_blk, thread[1], |x| t + x, |o_t| {
                    group(thread[1], || {
                        o_t[0] = 1000 * b + 10 * r + t;
                    });
                });
            });
            sync_cluster();
        });
    });
}
"#;

/// The same with the cluster barrier in a device function declared `cluster = 2` (rule CLUSTER: only
/// 2-block cluster kernels call it).
const PAIR_BARRIER: &str = r#"
#[prism_device(requires(block[2]), cluster = 2)]
pub fn pair_barrier() {
    sync_cluster();
}
"#;

#[test]
fn cluster_attribute_and_barrier() {
    cluster_ranks(CLUSTER);
    let through_a_function = CLUSTER.replace("sync_cluster();", "pair_barrier();");
    assert_ne!(through_a_function, CLUSTER);
    cluster_ranks(&format!("{PAIR_BARRIER}{through_a_function}"));
}

/// Blocks of a cluster exchange data through global memory: each writes its half of the cluster's buffer,
/// `sync_cluster()` (release/acquire at cluster scope) orders the halves before the sibling reads them.
/// The checker accepts it (SYNC-GRID counts the cluster barrier for memory at `block[2]`) and the
/// emulator's race detector, under random schedules, finds the accesses ordered; without the barrier the
/// program is refused, with a help that names `sync_cluster()`.
const EXCHANGE: &str = r#"
#[prism_kernel(requires(grid[1], block[2], block[1], thread[1]), threads = 64, cluster = 2)]
pub fn exchange(x: *const f32, tmp: *mut f32, out: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    #[at(block[2])]
    let cl: u32 = id();
    partition(out, block[1], |i| b * 64 + i, |o_blk| {
        partition(tmp, block[2], |i| cl * 128 + i, |t_cl| {
            group(block[2], || {
                #[at(block[1])]
                let r: u32 = id();
                partition(t_cl, block[1], |i| r * 64 + i, |t_b| {
                    group(block[1], || {
                        #[at(thread[1])]
                        let t: u32 = id();
                        partition(t_b, thread[1], |i| t + i, |tt| {
                            group(thread[1], || {
                                tt[0] = x[b * 64 + t] * 2.0;
                            });
                        });
                    });
                });
                sync_cluster();
                group(block[1], || {
                    #[at(thread[1])]
                    let t: u32 = id();
                    partition(o_blk, thread[1], |i| t + i, |o_t| {
                        group(thread[1], || {
                            o_t[0] = t_cl[(1 - r) * 64 + t];
                        });
                    });
                });
            });
        });
    });
}
"#;

#[test]
fn blocks_of_a_cluster_exchange_through_global_memory() {
    let ks = compile_src(EXCHANGE);
    assemble_all(&ks);
    let k = &ks[0];
    let module = Module::parse(&k.ptx).expect("parse");
    let x: Vec<f32> = {
        let mut r = rng(41);
        (0..4 * 64).map(|_| r()).collect()
    };
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let run = |module: &Module, config: EmuConfig| {
        let mut emu = Emulator::new(config);
        let dx = buf(&mut emu, &bytes);
        let tmp = buf(&mut emu, &[0u8; 4 * 64 * 4]);
        let out = buf(&mut emu, &[0xFFu8; 4 * 64 * 4]);
        let params = [
            ParamValue::Ptr(dx),
            ParamValue::Ptr(tmp),
            ParamValue::Ptr(out),
        ];
        let (grid, block, cluster) = ([4, 1, 1], [64, 1, 1], Some([2, 1, 1]));
        emu.launch_cluster(
            module,
            &k.entry,
            grid,
            block,
            cluster,
            k.contract.smem_bytes,
            &params,
        )
        .map(|_| emu.read(out, 4 * 64 * 4).expect("read"))
    };
    for seed in [0, 3, 17] {
        let schedule = if seed == 0 {
            prism_runtime::emu::Schedule::RoundRobin
        } else {
            prism_runtime::emu::Schedule::Random { seed }
        };
        let config = EmuConfig {
            schedule,
            check_races: true,
            ..EmuConfig::default()
        };
        let got = run(&module, config).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for (i, w) in got.chunks_exact(4).enumerate() {
            let v = f32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            let want = 2.0 * x[((i / 64) ^ 1) * 64 + i % 64];
            assert_eq!(v, want, "seed {seed}, element {i}");
        }
    }
    // The same PTX without its cluster barriers: the race detector reports the sibling's read.
    let stripped: String = k
        .ptx
        .lines()
        .filter(|l| !l.contains("barrier.cluster"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(stripped.len(), k.ptx.len());
    let e = run(
        &Module::parse(&stripped).expect("parse"),
        EmuConfig::default(),
    )
    .expect_err("a race without the cluster barrier");
    assert!(e.to_string().contains("data race on global memory"), "{e}");
    let unordered = EXCHANGE.replace("sync_cluster();", "");
    let d = emit_errors(&unordered);
    let t = texts(&d);
    assert!(
        t.contains("[SYNC-GRID]") && t.contains("sync_cluster()"),
        "{t}"
    );
}

fn cluster_ranks(src: &str) {
    let ks = compile_src(src);
    assemble_all(&ks);
    let k = &ks[0];
    assert!(k.ptx.contains(".reqnctapercluster 2, 1, 1"), "{}", k.ptx);
    assert!(
        k.ptx.contains("barrier.cluster.arrive.release"),
        "{}",
        k.ptx
    );
    assert_eq!(k.contract.cluster, 2);
    assert_eq!(k.contract.blocks_multiple_of, 2);
    let mut emu = Emulator::new(EmuConfig::default());
    let out = buf(&mut emu, &[0xFFu8; 6 * 32 * 4]);
    let module = Module::parse(&k.ptx).expect("parse");
    emu.launch_cluster(
        &module,
        &k.entry,
        [6, 1, 1],
        [32, 1, 1],
        Some([2, 1, 1]),
        k.contract.smem_bytes,
        &[ParamValue::Ptr(out)],
    )
    .expect("cluster launch");
    let got = emu.read(out, 6 * 32 * 4).expect("read");
    for (i, w) in got.chunks_exact(4).enumerate() {
        let v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        let (blk, t) = (i / 32, i % 32);
        assert_eq!(
            v,
            1000 * blk as u32 + 10 * (blk % 2) as u32 + t as u32,
            "element {i}"
        );
    }
}

/// TMA stores: blocks write a tile into shared memory with ordinary stores (thread[1] partitions), one thread
/// stores it to global memory through a `TensorMapMut`. The compiler places the barrier and the proxy fences
/// between the generic writes and the async-proxy read; the tensor is ragged (the last box is partly outside
/// and those elements are not written).
const TMA_STORE: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 256)]
pub fn store_rows(out: TensorMapMut<f32, 1>, scale: f32) {
    #[at(block[1])]
    let b: u32 = id();
    group(block[1], || {
        let tile: Shared<[f32; 256]>;
        #[at(thread[1])]
        let t: u32 = id();
        partition(tile, thread[1], |x| t + x, |tile_t| {
            group(thread[1], || {
                tile_t[0] = scale * (b * 256 + t) as f32;
            });
        });
        match split(thread) {
            1 => {
                tma_store(out, tile, b * 256);
            }
        }
    });
}

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128)]
pub fn store_swizzled(out: TensorMapMut<f32, 2>) {
    #[at(block[1])]
    let b: u32 = id();
    group(block[1], || {
        // 64 rows of 32 f32 (128 bytes), written by logical index: the compiler places element (r, c) where
        // the 128-byte swizzle puts it (16-byte chunk c / 4 of row r at chunk (c / 4) ^ (r % 8)), which is
        // where the TMA store reads it.
        let tile: Shared<[f32; 64 * 32], Swizzle128>;
        #[at(thread[1])]
        let t: u32 = id();
        partition(tile, thread[1], |x| t * 16 + x, |tile_t| {
            group(thread[1], || {
                for j in 0..16 {
                    let e: u32 = t * 16 + j;
                    let r: u32 = e / 32;
                    let c: u32 = e % 32;
                    tile_t[j] = (1000 * (b * 64 + r) + c) as f32;
                }
            });
        });
        match split(thread) {
            1 => {
                tma_store(out, tile, 0, b * 64);
            }
        }
    });
}
"#;

#[test]
fn tma_store_from_shared_memory() {
    let ks = compile_src(TMA_STORE);
    assemble_all(&ks);
    for k in &ks {
        assert!(
            k.ptx.contains("global.shared::cta.tile.bulk_group"),
            "{}",
            k.ptx
        );
        assert!(k.ptx.contains("fence.proxy.async.shared::cta"), "{}", k.ptx);
        // The store's wait is lazy: nothing rewrites the box, so the one wait is the full one before `ret`
        // (the global write finishes before the thread returns).
        let (body, tail) = k
            .ptx
            .rsplit_once("cp.async.bulk.wait_group 0;")
            .expect("a full wait");
        assert!(tail.trim_start().starts_with("ret;"), "{}", k.ptx);
        let after_store = body.rsplit_once("bulk_group").expect("the store").1;
        assert!(!after_store.contains("wait_group"), "{}", k.ptx);
    }
    // Rank 1: 1000 floats, 4 blocks of 256 (the last box is 24 elements past the end).
    let k = &ks[0];
    let mut emu = Emulator::new(EmuConfig::default());
    let n = 1000usize;
    let out = buf(&mut emu, &f32::NAN.to_le_bytes().repeat(n + 64));
    let m = TensorMap::tiled(
        TensorDataType::F32,
        out,
        &[n as u64],
        &[],
        &[256],
        TensorSwizzle::None,
    )
    .expect("map");
    let module = Module::parse(&k.ptx).expect("parse");
    emu.launch(
        &module,
        &k.entry,
        [4, 1, 1],
        [256, 1, 1],
        k.contract.smem_bytes,
        &[ParamValue::Bytes(m.encode().to_vec()), ParamValue::F32(0.5)],
    )
    .expect("launch");
    let got = emu.read(out, (n + 64) * 4).expect("read");
    for (i, w) in got.chunks_exact(4).enumerate() {
        let v = f32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        if i < n {
            assert_eq!(v, 0.5 * i as f32, "element {i}");
        } else {
            assert!(v.is_nan(), "element {i} past the tensor was written: {v}");
        }
    }
    // Rank 2, 128-byte swizzle: a 200 × 32 matrix from 4 blocks of 64 rows.
    let k = &ks[1];
    let mut emu = Emulator::new(EmuConfig::default());
    let rows = 200usize;
    let out = buf(&mut emu, &f32::NAN.to_le_bytes().repeat(rows * 32));
    let m = TensorMap::tiled(
        TensorDataType::F32,
        out,
        &[32, rows as u64],
        &[128],
        &[32, 64],
        TensorSwizzle::B128,
    )
    .expect("map");
    let module = Module::parse(&k.ptx).expect("parse");
    emu.launch(
        &module,
        &k.entry,
        [4, 1, 1],
        [128, 1, 1],
        k.contract.smem_bytes,
        &[ParamValue::Bytes(m.encode().to_vec())],
    )
    .expect("launch");
    let got = emu.read(out, rows * 32 * 4).expect("read");
    for (i, w) in got.chunks_exact(4).enumerate() {
        let v = f32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        assert_eq!(
            v,
            (1000 * (i / 32) + i % 32) as f32,
            "element ({}, {})",
            i / 32,
            i % 32
        );
    }
}

/// scale-d: `wgmma_bf16(.., accumulate)` with `accumulate` false on the first k-step ignores the accumulator's
/// old contents (here 7.0 everywhere), so no zeroing is needed.
#[test]
fn first_step_overwrites_the_accumulator() {
    let src = gemm_src("Swizzle128", 64)
        .replace(
            "let mut acc = [0.0f32; BN / 2];",
            "let mut acc = [7.0f32; BN / 2];",
        )
        .replace(
            "wgmma_bf16(&mut acc, sa, kk * 16, sb, kk * 16);",
            "wgmma_bf16(&mut acc, sa, kk * 16, sb, kk * 16, kt > 0 || kk > 0);",
        );
    let ks = compile_src(&src);
    assemble_all(&ks);
    for k in &ks {
        let bn = k.instance[0] as u32;
        run_gemm(k, bn, (128, 2 * bn, 192), 21);
        run_gemm(k, bn, (72, bn + 8, 72), 22);
    }
}

#[test]
fn cluster_multicast_ring_gemm() {
    let ks = compile_src(GEMM_CLUSTER);
    assemble_all(&ks);
    let k = &ks[0];
    assert!(k.ptx.contains(".multicast::cluster"), "{}", k.ptx);
    // Remote arrivals with the default `.release.cta` semantics: a `.release.cluster` one assembles to a
    // full fence (MEMBAR.ALL.GPU) before every arrival.
    assert!(
        k.ptx.contains("mbarrier.arrive.shared::cluster.b64 _, ["),
        "{}",
        k.ptx
    );
    assert!(!k.ptx.contains(".release.cluster.shared::cluster"));
    assert!(k.ptx.contains(".reqnctapercluster 2, 1, 1"));
    for ((m, n, kk), seed) in [((512u32, 256u32, 256u32), 1u64), ((200, 200, 136), 2)] {
        let (ab, av) = matrix(m as usize, kk as usize, seed);
        let (bb, bv) = matrix(n as usize, kk as usize, seed + 1);
        let mut emu = Emulator::new(EmuConfig::default());
        let da = buf(&mut emu, &ab);
        let db = buf(&mut emu, &bb);
        let dd = buf(&mut emu, &f32::NAN.to_le_bytes().repeat((m * n) as usize));
        let params = [
            tmap(k, 0, da, m as u64, kk as u64),
            tmap(k, 1, db, n as u64, kk as u64),
            ParamValue::Ptr(dd),
            ParamValue::U32(m),
            ParamValue::U32(n),
            ParamValue::U32(kk),
        ];
        let blocks = 2 * m.div_ceil(256) * n.div_ceil(128);
        let module = Module::parse(&k.ptx).expect("parse");
        emu.launch_cluster(
            &module,
            &k.entry,
            [blocks, 1, 1],
            [384, 1, 1],
            Some([2, 1, 1]),
            k.contract.smem_bytes,
            &params,
        )
        .unwrap_or_else(|e| panic!("{m}x{n}x{kk}: {e:?}"));
        let out = emu.read(dd, (m * n * 4) as usize).expect("read");
        for i in 0..m as usize {
            for j in 0..n as usize {
                let (mut want, mut mag) = (0f64, 0f64);
                for x in 0..kk as usize {
                    let p = av[i * kk as usize + x] as f64 * bv[j * kk as usize + x] as f64;
                    want += p;
                    mag += p.abs();
                }
                let o = 4 * (i * n as usize + j);
                let got = f32::from_le_bytes([out[o], out[o + 1], out[o + 2], out[o + 3]]) as f64;
                let err = (got - want).abs();
                assert!(
                    err <= 1e-5 * mag + 1e-6,
                    "{m}x{n}x{kk} ({i}, {j}): {got} vs {want}"
                );
            }
        }
    }
}

/// MN-major operands: `B` given `k × n` row-major (N contiguous) is loaded as it is, 64 K rows of 64 N
/// elements (`Swizzle128Mn`), and wgmma reads it transposed (`imm-trans-b` 1).
const GEMM_B_KN: &str = r#"
#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
pub fn gemm_b_kn(a: TensorMap<bf16, 2>, b: TensorMap<bf16, 2>, d: *mut f32, m: u32, n: u32, k: u32) {
    let tiles_n: u32 = (n + 63) / 64;
    let k_tiles: u32 = (k + 63) / 64;
    #[at(block[1])]
    let row0: u32 = (id() / tiles_n) * 64;
    #[at(block[1])]
    let col0: u32 = (id() % tiles_n) * 64;
    partition(d, block[1], |x| row0 * n + col0 + x, |d_blk| {
        group(block[1], || {
            let sa: Shared<[bf16; 64 * 64], Swizzle128>;
            let sb: Shared<[bf16; 64 * 64], Swizzle128Mn>;
            #[at(thread[1])]
            let mut acc = [0.0f32; 32];
            for kt in 0..k_tiles {
                async_(sa, |sa_async| {
                    async_(sb, |sb_async| match split(thread) {
                        1 => {
                            tma_load(sa_async, a, kt * 64, row0);
                            tma_load(sb_async, b, col0, kt * 64);
                        }
                    });
                });
                for kk in 0..4 {
                    wgmma_bf16(&mut acc, sa, kk * 16, sb, kk * 16 * 64);
                }
            }
            #[at(thread[1])]
            let t: u32 = id();
            #[at(thread[1])]
            let r0: u32 = 16 * (t / 32) + (t % 32) / 4;
            #[at(thread[1])]
            let c0: u32 = 2 * (t % 4);
            partition(d_blk, thread[1], |r, c| (r0 + r) * n + c0 + c, |d_t| {
                group(thread[1], || {
                    for i in 0..32 {
                        let dr: u32 = 8 * ((i / 2) % 2);
                        let dc: u32 = 8 * (i / 4) + i % 2;
                        if row0 + r0 + dr < m && col0 + c0 + dc < n {
                            d_t[(dr, dc)] = acc[i];
                        }
                    }
                });
            });
        });
    });
}
"#;

#[test]
fn mn_major_b_operand() {
    let ks = compile_src(GEMM_B_KN);
    assemble_all(&ks);
    let k = &ks[0];
    assert!(k.ptx.contains(", 1, 1, 0, 1;"), "{}", k.ptx);
    for ((m, n, kk), seed) in [((128u32, 128u32, 192u32), 31u64), ((72, 200, 136), 32)] {
        let (ab, av) = matrix(m as usize, kk as usize, seed);
        let (bb, bv) = matrix(kk as usize, n as usize, seed + 1); // k × n row-major
        let mut emu = Emulator::new(EmuConfig::default());
        let da = buf(&mut emu, &ab);
        let db = buf(&mut emu, &bb);
        let dd = buf(&mut emu, &f32::NAN.to_le_bytes().repeat((m * n) as usize));
        let params = [
            tmap(k, 0, da, m as u64, kk as u64),
            tmap(k, 1, db, kk as u64, n as u64),
            ParamValue::Ptr(dd),
            ParamValue::U32(m),
            ParamValue::U32(n),
            ParamValue::U32(kk),
        ];
        launch(&mut emu, k, m.div_ceil(64) * n.div_ceil(64), &params);
        let out = emu.read(dd, (m * n * 4) as usize).expect("read");
        for i in 0..m as usize {
            for j in 0..n as usize {
                let (mut want, mut mag) = (0f64, 0f64);
                for x in 0..kk as usize {
                    let p = av[i * kk as usize + x] as f64 * bv[x * n as usize + j] as f64;
                    want += p;
                    mag += p.abs();
                }
                let o = 4 * (i * n as usize + j);
                let got = f32::from_le_bytes([out[o], out[o + 1], out[o + 2], out[o + 3]]) as f64;
                let err = (got - want).abs();
                assert!(
                    err <= 1e-5 * mag + 1e-6,
                    "{m}x{n}x{kk} ({i}, {j}): {got} vs {want}"
                );
            }
        }
    }
}

/// Distributed shared memory: each block of a 2-block cluster fills its own `s`, then reads its sibling's
/// through `peer` (between cluster barriers the compiler places).
const PEER: &str = r#"
#[prism_kernel(requires(grid[1], block[2], block[1], thread[1]), threads = 64, cluster = 2)]
pub fn read_sibling(out: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(out, block[1], |x| b * 64 + x, |o_blk| {
        group(block[2], || {
            let s: Shared<[f32; 64]>;
            #[at(block[1])]
            let r: u32 = id();
            group(block[1], || {
                #[at(thread[1])]
                let t: u32 = id();
                partition(s, thread[1], |x| t + x, |s_t| {
                    group(thread[1], || {
                        s_t[0] = (b * 1000 + t) as f32;
                    });
                });
            });
            peer(s, 1 - r, |s_peer| {
                group(block[1], || {
                    #[at(thread[1])]
                    let t: u32 = id();
                    partition(o_blk, thread[1], |x| t + x, |o_t| {
                        group(thread[1], || {
                            o_t[0] = s_peer[63 - t];
                        });
                    });
                });
            });
        });
    });
}
"#;

#[test]
fn peer_reads_the_sibling_blocks_shared_memory() {
    let ks = compile_src(PEER);
    assemble_all(&ks);
    let k = &ks[0];
    assert!(k.ptx.contains("mapa.shared::cluster.u32"), "{}", k.ptx);
    assert!(k.ptx.contains("ld.shared::cluster.f32"), "{}", k.ptx);
    let mut emu = Emulator::new(EmuConfig::default());
    let out = buf(&mut emu, &f32::NAN.to_le_bytes().repeat(6 * 64));
    let module = Module::parse(&k.ptx).expect("parse");
    emu.launch_cluster(
        &module,
        &k.entry,
        [6, 1, 1],
        [64, 1, 1],
        Some([2, 1, 1]),
        k.contract.smem_bytes,
        &[ParamValue::Ptr(out)],
    )
    .expect("cluster launch");
    let got = emu.read(out, 6 * 64 * 4).expect("read");
    for (i, w) in got.chunks_exact(4).enumerate() {
        let v = f32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        let (blk, t) = (i / 64, i % 64);
        let sibling = blk ^ 1;
        assert_eq!(
            v,
            (sibling * 1000 + 63 - t) as f32,
            "block {blk} thread {t}"
        );
    }
}

/// Two `peer` views of one allocation at once (both only read): each block of a 4-block cluster adds its two
/// next blocks' values, `out[b][t] = x[(b + 1) % 4][t] + 10 · x[(b + 2) % 4][t]` (nesting was refused with
/// PEER-HIDDEN, and the workaround cost two more cluster barriers).
const TWO_PEERS: &str = r#"
#[prism_kernel(requires(grid[1], block[4], block[1], thread[1]), threads = 32, cluster = 4)]
pub fn two_peers(x: *const f32, out: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(out, block[1], |i| b * 32 + i, |o_blk| {
        group(block[4], || {
            let s: Shared<[f32; 32]>;
            #[at(block[1])]
            let r: u32 = id();
            group(block[1], || {
                #[at(thread[1])]
                let t: u32 = id();
                partition(s, thread[1], |j| t + j, |s_t| {
                    group(thread[1], || {
                        s_t[0] = x[b * 32 + t];
                    });
                });
            });
            peer(s, (r + 1) % 4, |p1| {
                peer(s, (r + 2) % 4, |p2| {
                    group(block[1], || {
                        #[at(thread[1])]
                        let t: u32 = id();
                        partition(o_blk, thread[1], |i| t + i, |o_t| {
                            group(thread[1], || {
                                o_t[0] = p1[t] + p2[t] * 10.0;
                            });
                        });
                    });
                });
            });
        });
    });
}
"#;

#[test]
fn nested_peers_read_two_blocks_at_once() {
    let ks = compile_src(TWO_PEERS);
    assemble_all(&ks);
    let k = &ks[0];
    let mut g = rng(21);
    let x: Vec<f32> = (0..8 * 32).map(|_| g()).collect();
    let mut emu = Emulator::new(EmuConfig::default());
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let dx = buf(&mut emu, &bytes);
    let out = buf(&mut emu, &f32::NAN.to_le_bytes().repeat(8 * 32));
    let module = Module::parse(&k.ptx).expect("parse");
    emu.launch_cluster(
        &module,
        &k.entry,
        [8, 1, 1],
        [32, 1, 1],
        Some([4, 1, 1]),
        k.contract.smem_bytes,
        &[ParamValue::Ptr(dx), ParamValue::Ptr(out)],
    )
    .expect("cluster launch");
    let got = emu.read(out, 8 * 32 * 4).expect("read");
    for (i, w) in got.chunks_exact(4).enumerate() {
        let v = f32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        let (blk, t) = (i / 32, i % 32);
        let base = blk / 4 * 4;
        let at = |r: usize| x[(base + (blk % 4 + r) % 4) * 32 + t];
        assert_eq!(v, at(1) + at(2) * 10.0, "block {blk} thread {t}");
    }
}

/// The wait for a run of wgmmas goes as late as the dependences allow: a statement that names no
/// accumulator or operand runs while the wgmmas are in flight.
#[test]
fn independent_statements_run_before_the_wait() {
    let src = gemm_src("Swizzle128", 64).replace(
        "wgmma_bf16(&mut acc, sa, kk * 16, sb, kk * 16);\n                }",
        "wgmma_bf16(&mut acc, sa, kk * 16, sb, kk * 16);\n                }\n                let spare: u32 = kt * 7 + k;",
    );
    assert!(src.contains("let spare"), "{src}");
    let ks = compile_src(&src);
    assemble_all(&ks);
    for k in &ks {
        let lines: Vec<&str> = k.ptx.lines().collect();
        let last = lines
            .iter()
            .rposition(|l| l.contains("wgmma.mma_async"))
            .expect("a wgmma");
        let commit = last
            + lines[last..]
                .iter()
                .position(|l| l.contains("wgmma.commit_group"))
                .expect("a commit");
        assert!(
            lines[last..commit]
                .iter()
                .any(|l| l.contains("mul.lo.u32") && l.contains(", 7;")),
            "the independent statement should sit between the last wgmma and the commit:\n{}",
            lines[last..=commit].join("\n")
        );
        let bn = k.instance[0] as u32;
        run_gemm(k, bn, (128, bn, 128), 41);
    }
}

/// A ring stepped by a loop the compiler unrolls (constant trip count, found by the Hopper property test):
/// each `fill`/`drain` site counts its arrivals once, not once per unrolled copy, or the phases never complete.
/// Both arms are whole warpgroups, so lane 0 of each warp arrives for it: 4 arrivals per phase (the fill's
/// bulk copies are one thread's, inside the warpgroup's site).
const UNROLLED_RING: &str = r#"
#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256, smem = 140000)]
fn generated(a: *const bf16, c: *mut f32, n: u32) {
group(block[1], || {
let rs: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
let rt: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
ring(2, (rs, rt), |rr| {
match split(warpgroup) {
1 => {
for i in 0..5 {
fill(rr, i, |rs_f, rt_f| match split(thread) { 1 => { cp_async_bulk(rs_f, 0, a, 0, 8192); cp_async_bulk(rt_f, 0, a, 0, 8192); } });
}
}
1 => {
#[at(thread[1])] let mut racc = [0.0f32; 32];
for i in 0..5 {
drain(rr, i, |rs_d, rt_d| {
wgmma_bf16(&mut racc, rs_d, 0, rt_d, 16);
});
}
}
}
});
});
}
"#;

#[test]
fn unrolled_ring_steps_count_each_site_once() {
    let ks = compile_src(UNROLLED_RING);
    assemble_all(&ks);
    let k = &ks[0];
    assert!(k.ptx.contains("[__prism_ring0_full+0], 4;"), "{}", k.ptx);
    assert!(k.ptx.contains("[__prism_ring0_empty+0], 4;"), "{}", k.ptx);
    let mut emu = Emulator::new(EmuConfig::default());
    let a = emu.alloc(8192);
    let c = emu.alloc(4096);
    launch(
        &mut emu,
        k,
        2,
        &[ParamValue::Ptr(a), ParamValue::Ptr(c), ParamValue::U32(8)],
    );
}

/// A kernel that loads back through the map it stored through waits for each store's global write, not
/// only for its box to be read: the load must see the write.
const STORE_THEN_LOAD: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128, blocks = 1)]
pub fn store_then_load(m: TensorMapMut<f32, 1>, out: *mut f32) {
    partition(out, block[1], |x| x, |out_b| {
    group(block[1], || {
        let tile: Shared<[f32; 128]>;
        let back: Shared<[f32; 128]>;
        #[at(thread[1])]
        let t: u32 = id();
        partition(tile, thread[1], |x| t + x, |tile_t| {
            group(thread[1], || {
                tile_t[0] = (3 * t + 1) as f32;
            });
        });
        match split(thread) {
            1 => {
                tma_store(m, tile, 0);
            }
        }
        async_(back, |back_async| {
            match split(thread) {
                1 => {
                    tma_load(back_async, m, 0);
                }
            }
        });
        partition(out_b, thread[1], |x| t + x, |out_t| {
            partition(back, thread[1], |x| t + x, |back_t| {
                group(thread[1], || {
                    out_t[0] = back_t[0] + 0.5;
                });
            });
        });
    });
    });
}
"#;

#[test]
fn a_map_loaded_back_waits_for_the_store_write() {
    let ks = compile_src(STORE_THEN_LOAD);
    assemble_all(&ks);
    let k = &ks[0];
    assert!(!k.ptx.contains("wait_group.read"), "{}", k.ptx);
    assert_eq!(
        k.ptx.matches("cp.async.bulk.wait_group 0;").count(),
        2,
        "{}",
        k.ptx
    );
    let mut emu = Emulator::new(EmuConfig::default());
    let mem = buf(&mut emu, &f32::NAN.to_le_bytes().repeat(128));
    let out = buf(&mut emu, &f32::NAN.to_le_bytes().repeat(128));
    let map = TensorMap::tiled(
        TensorDataType::F32,
        mem,
        &[128],
        &[],
        &[128],
        TensorSwizzle::None,
    )
    .expect("map");
    let module = Module::parse(&k.ptx).expect("parse");
    emu.launch(
        &module,
        &k.entry,
        [1, 1, 1],
        [128, 1, 1],
        k.contract.smem_bytes,
        &[
            ParamValue::Bytes(map.encode().to_vec()),
            ParamValue::Ptr(out),
        ],
    )
    .expect("launch");
    let got = emu.read(out, 128 * 4).expect("read");
    for (i, w) in got.chunks_exact(4).enumerate() {
        let v = f32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        assert_eq!(v, (3 * i + 1) as f32 + 0.5, "element {i}");
    }
}

/// TMA moves boxes at 128-byte aligned shared addresses. A kernel that uses TMA starts its shared memory
/// on 128 bytes, and a linear box that a smaller allocation before it pushes off that alignment is a
/// compile error at the box, naming the offset (the checker does not track which allocation a name views,
/// so the emitter refuses it; the emulator would fault at run time, the GPU would not say).
#[test]
fn a_misaligned_tma_box_is_a_compile_error() {
    let src = "#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(m: TensorMapMut<f32, 1>) {
    group(block[1], || {
        let first: Shared<[f32; 4]>;
        let s: Shared<[f32; 64]>;
        match split(thread) {
            1 => {
                tma_store(m, s, 0u32);
            }
        }
    });
}";
    let d = emit_errors(src);
    assert!(
        d.iter()
            .any(|d| d.rule == "TMA" && d.message.contains("byte 16") && d.message.contains("128")),
        "{}",
        texts(&d)
    );
    // Declared first, the same box is aligned.
    let ok = src.replace(
        "let first: Shared<[f32; 4]>;\n        let s: Shared<[f32; 64]>;",
        "let s: Shared<[f32; 64]>;\n        let first: Shared<[f32; 4]>;",
    );
    assert_ne!(ok, src);
    assert!(emit_errors(&ok).is_empty(), "{}", texts(&emit_errors(&ok)));
}

/// A device function may take its register count as a const generic (a library consumer warpgroup): the
/// instance's value is checked where it is emitted.
#[test]
fn set_max_regs_takes_a_device_functions_const_generic() {
    let src = |producer: u32| {
        format!(
            "#[prism_device(requires(thread[128]))]\nfn regs<const R: u32>() {{ set_max_regs(R); }}\n\
             #[prism_kernel(requires(grid[1], block[1], thread[128]), threads = 256)]\n\
             fn k(y: *mut u32) {{\n\
             group(block[1], || {{\n\
             match split(warpgroup) {{\n\
             1 => {{ regs::<{producer}>(); }}\n\
             1 => {{ regs::<232>(); }}\n\
             }}\n\
             }});\n\
             }}\n"
        )
    };
    let ks = compile_src(&src(40));
    assert!(
        ks[0].ptx.contains("setmaxnreg.dec.sync.aligned.u32 40"),
        "{}",
        ks[0].ptx
    );
    // Two warpgroups enter with 248 registers each: both counts lower it.
    assert!(
        ks[0].ptx.contains("setmaxnreg.dec.sync.aligned.u32 232"),
        "{}",
        ks[0].ptx
    );
    let ds = emit_errors(&src(44));
    assert!(
        ds.iter()
            .any(|d| d.rule == "SETMAXNREG" && d.message.contains("set_max_regs(44)")),
        "{}",
        texts(&ds)
    );
}
