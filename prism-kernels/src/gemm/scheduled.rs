//! Rung 5 with a space-filling tile order: the persistent kernel of [`super::gemm_bf16_persistent`] reading
//! its tile order from a table the host builds once per shape ([`super::TileSchedule`], by default a
//! generalized Hilbert curve: [`super::hilbert_order`]), as published Hopper GEMMs do (a curve is awkward to
//! compute per tile on the device; a table costs one cached load per tile).

// The kernel's device functions (`wgmma_k_tile`, `wgmma_tile_to_f32`) are the crate's own, found by the
// macro; its types are the language's.
use prism_macros::prism_kernel;

/// Rung 5, table-driven: each block takes tiles `blk, blk + grid, ..` of the schedule `sched`, whose entry
/// `t` is tile `t`'s `(tile row << 16) | tile column` in the `ceil(m / 128) × ceil(n / BN)` grid, and keeps one
/// ring running across its tiles (the ring's step counts k-tiles over all of them; the first k-step of each
/// tile overwrites the accumulators). `sched` must hold every tile of the grid exactly once (the host API
/// checks; an entry outside the grid computes nothing: its loads are TMA's zero fill and its stores are
/// guarded off). Launch `min(tiles, SMs)` blocks of 384 threads; `a` maps `A` with box 64 × 128, `b` maps
/// `B` with box 64 × `BN`, both with 128-byte swizzle.
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 384,
    instances = [(256, 4)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_scheduled<const BN: u32, const STAGES: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    c: *mut f32,
    sched: *const u32,
) {
    let tiles_m: u32 = (m + 127) / 128;
    let tiles_n: u32 = (n + BN - 1) / BN;
    let tiles: u32 = tiles_m * tiles_n;
    let k_tiles: u32 = (k + 63) / 64;
    let nblk: u32 = grid_dim();
    #[at(block[1])]
    let blk: u32 = id();
    #[at(block[1])]
    let iters: u32 = (tiles + nblk - 1 - blk) / nblk; // 0 when blk >= tiles (blk < nblk)
                                                      // Every block may write any tile of C: which ones is decided at run time by the table, whose
                                                      // tiles are disjoint (block `blk` takes entries ≡ blk mod grid).
    partition(
        c,
        block[1],
        |x| x,
        |c_blk| {
            group(block[1], || {
                let sa: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
                let sb: Shared<[bf16; STAGES * BN * 64], Swizzle128>;
                partition(
                    c_blk,
                    thread[128],
                    |x| x,
                    |c_wg| {
                        ring(STAGES, (sa, sb), |r| match split(warpgroup) {
                            1 => {
                                set_max_regs(40);
                                for it in 0..iters {
                                    let tile: u32 = sched[blk + it * nblk];
                                    let row0: u32 = (tile >> 16) * 128;
                                    let col0: u32 = (tile & 65535) * BN;
                                    for kt in 0..k_tiles {
                                        fill(r, it * k_tiles + kt, |sa_s, sb_s| {
                                            match split(thread) {
                                                1 => {
                                                    tma_load(sa_s, a, kt * 64, row0);
                                                    tma_load(sb_s, b, kt * 64, col0);
                                                }
                                            }
                                        });
                                    }
                                }
                            }
                            1 => {
                                set_max_regs(232);
                                #[at(thread[1])]
                                let mut acc = [0.0f32; BN / 2];
                                for it in 0..iters {
                                    let tile: u32 = sched[blk + it * nblk];
                                    let row0: u32 = (tile >> 16) * 128;
                                    let col0: u32 = (tile & 65535) * BN;
                                    for kt in 0..k_tiles {
                                        drain(r, it * k_tiles + kt, |sa_s, sb_s| {
                                            wgmma_k_tile::<0, { BN / 2 }>(
                                                &mut acc,
                                                sa_s,
                                                sb_s,
                                                kt == 0,
                                            );
                                        });
                                    }
                                    wgmma_tile_to_f32::<{ BN / 2 }>(
                                        &acc,
                                        c_wg,
                                        row0 * n + col0,
                                        m.max(row0) - row0,
                                        n.max(col0) - col0,
                                        n,
                                        alpha,
                                        beta,
                                    );
                                }
                            }
                            1 => {
                                set_max_regs(232);
                                #[at(thread[1])]
                                let mut acc = [0.0f32; BN / 2];
                                for it in 0..iters {
                                    let tile: u32 = sched[blk + it * nblk];
                                    let row0: u32 = (tile >> 16) * 128 + 64;
                                    let col0: u32 = (tile & 65535) * BN;
                                    for kt in 0..k_tiles {
                                        drain(r, it * k_tiles + kt, |sa_s, sb_s| {
                                            wgmma_k_tile::<1, { BN / 2 }>(
                                                &mut acc,
                                                sa_s,
                                                sb_s,
                                                kt == 0,
                                            );
                                        });
                                    }
                                    wgmma_tile_to_f32::<{ BN / 2 }>(
                                        &acc,
                                        c_wg,
                                        row0 * n + col0,
                                        m.max(row0) - row0,
                                        n.max(col0) - col0,
                                        n,
                                        alpha,
                                        beta,
                                    );
                                }
                            }
                        });
                    },
                );
            });
        },
    );
}

/// Rungs 5 + 6 + 7, table-driven: [`super::gemm_bf16_cluster_tma_store`] (persistent 2-block clusters, B
/// multicast by rank 0, bf16 `D` through `stmatrix_bf16` and `tma_store`) taking its 256 × `BN` cluster
/// tiles from the schedule `sched` (entry `t` = `(tile row << 16) | tile column` in the `ceil(m / 256) ×
/// ceil(n / BN)` grid of cluster tiles). Both blocks of a cluster read the same entries (the schedule is per
/// cluster, as multicast needs); rank 0 computes a tile's top 128 rows, rank 1 the bottom 128. Launch `2 ·
/// min(cluster tiles, SMs / 2)` blocks of 384 threads; maps as for [`super::gemm_bf16_tma_store`].
#[prism_kernel(
    requires(grid[1], block[2], block[1], warpgroup),
    threads = 384,
    cluster = 2,
    instances = [(256, 4)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_cluster_tma_store_scheduled<const BN: u32, const STAGES: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    c: *const bf16,
    d: TensorMapMut<bf16, 2>,
    sched: *const u32,
) {
    let tiles_m: u32 = (m + 255) / 256;
    let tiles_n: u32 = (n + BN - 1) / BN;
    let tiles: u32 = tiles_m * tiles_n;
    let k_tiles: u32 = (k + 63) / 64;
    let clusters: u32 = grid_dim() / 2;
    #[at(block[1])]
    let blk: u32 = id();
    #[at(block[1])]
    let rank: u32 = blk % 2;
    #[at(block[1])]
    let cl: u32 = blk / 2;
    #[at(block[1])]
    let iters: u32 = (tiles + clusters - 1 - cl) / clusters; // 0 when cl >= tiles (cl < clusters)
    group(block[1], || {
        let sa: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
        let sb: Shared<[bf16; STAGES * BN * 64], Swizzle128>;
        // Each consumer warpgroup's epilogue box (handed to it whole: `|x| x`).
        let e1: Shared<[bf16; 64 * 64], Swizzle128>;
        let e2: Shared<[bf16; 64 * 64], Swizzle128>;
        partition(
            e1,
            thread[128],
            |x| x,
            |e1_w| {
                partition(
                    e2,
                    thread[128],
                    |x| x,
                    |e2_w| {
                        ring(STAGES, (sa, sb), |r| match split(warpgroup) {
                            1 => {
                                set_max_regs(40);
                                for it in 0..iters {
                                    let tile: u32 = sched[cl + it * clusters];
                                    let row0: u32 = (tile >> 16) * 256 + rank * 128;
                                    let col0: u32 = (tile & 65535) * BN;
                                    for kt in 0..k_tiles {
                                        fill(r, it * k_tiles + kt, |sa_s, sb_s| {
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
                            }
                            1 => {
                                set_max_regs(232);
                                #[at(thread[1])]
                                let mut acc = [0.0f32; BN / 2];
                                for it in 0..iters {
                                    let tile: u32 = sched[cl + it * clusters];
                                    let row0: u32 = (tile >> 16) * 256 + rank * 128;
                                    let col0: u32 = (tile & 65535) * BN;
                                    for kt in 0..k_tiles {
                                        drain(r, it * k_tiles + kt, |sa_s, sb_s| {
                                            wgmma_k_tile::<0, { BN / 2 }>(
                                                &mut acc,
                                                sa_s,
                                                sb_s,
                                                kt == 0,
                                            );
                                        });
                                    }
                                    for j in 0..BN / 64 {
                                        // Columns 64j..64j + 64 of the fragment, scaled in place.
                                        scale_fragment_box::<{ BN / 2 }>(
                                            &mut acc, j, row0, col0, m, n, alpha, beta, c,
                                        );
                                        // Into the warpgroup's box (stmatrix), then to D.
                                        stmatrix_bf16(e1_w, &acc, j);
                                        match split(thread) {
                                            1 => {
                                                tma_store(d, e1_w, col0 + 64 * j, row0);
                                            }
                                        }
                                    }
                                }
                            }
                            1 => {
                                set_max_regs(232);
                                #[at(thread[1])]
                                let mut acc = [0.0f32; BN / 2];
                                for it in 0..iters {
                                    let tile: u32 = sched[cl + it * clusters];
                                    let row0: u32 = (tile >> 16) * 256 + rank * 128 + 64;
                                    let col0: u32 = (tile & 65535) * BN;
                                    for kt in 0..k_tiles {
                                        drain(r, it * k_tiles + kt, |sa_s, sb_s| {
                                            wgmma_k_tile::<1, { BN / 2 }>(
                                                &mut acc,
                                                sa_s,
                                                sb_s,
                                                kt == 0,
                                            );
                                        });
                                    }
                                    for j in 0..BN / 64 {
                                        // Columns 64j..64j + 64 of the fragment, scaled in place.
                                        scale_fragment_box::<{ BN / 2 }>(
                                            &mut acc, j, row0, col0, m, n, alpha, beta, c,
                                        );
                                        // Into the warpgroup's box (stmatrix), then to D.
                                        stmatrix_bf16(e2_w, &acc, j);
                                        match split(thread) {
                                            1 => {
                                                tma_store(d, e2_w, col0 + 64 * j, row0);
                                            }
                                        }
                                    }
                                }
                            }
                        });
                    },
                );
            },
        );
    });
}
