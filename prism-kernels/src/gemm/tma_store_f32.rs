//! Rung 7 with an **f32** `D`: the persistent, warp-specialized mainloop of rung 5 with rung 7's epilogue
//! (shared memory and TMA stores) in 32-column f32 boxes. On an H200 (2026-11-27) it runs at 0.97× / 0.99×
//! cuBLAS at 4096³ / 8192³ where rung 5, which stores from registers, runs at 0.85× / 0.90×
//! (docs/BENCHMARKS.md). [`gemm_bf16_tma_store_f32x2`] gives each consumer two boxes taking turns, and
//! [`gemm_bf16_cluster_tma_store_f32`] is that two-box epilogue on rungs 5 + 6 (2-block clusters
//! multicasting B).

use prism_macros::{prism_device, prism_kernel};

/// A consumer warpgroup of [`gemm_bf16_tma_store_f32`]: for each of
/// its block's `iters` tiles (as in [`super::consume_tiles_f32`]: tile `t` starts at row `(t >> 16) ·
/// tile_rows + row_off`), [`super::drain_k_tiles`]`::<HALF, N>`, then 32 columns at a time
/// [`super::scale_fragment_box`], `store_fragment_f32` into the warpgroup's own 64 × 32 box `e` (the
/// 128-byte swizzle TMA reads) and one thread's `tma_store` through `D`'s map `d`, which clips the box at
/// `D`'s edges. `c` (`m × n` f32) is read only when `beta ≠ 0`. The compiler orders the box's writes before each
/// store, and each store's reads before the box is written again.
#[prism_device(requires(thread[128]))]
#[allow(clippy::too_many_arguments)]
pub fn consume_tiles_f32_tma<const HALF: u32, const N: u32, const GROUP_M: u32>(
    r: Ring<(bf16, bf16)>,
    e: SharedMut<[f32; 64 * 32], Swizzle128>,
    d: TensorMapMut<f32, 2>,
    c: *const f32,
    sched: *const u32,
    first: u32,
    stride: u32,
    iters: u32,
    tiles_m: u32,
    tiles_n: u32,
    k_tiles: u32,
    tile_rows: u32,
    row_off: u32,
    m: u32,
    n: u32,
    alpha: f32,
    beta: f32,
) {
    #[at(thread[1])]
    let mut acc = [0.0f32; N];
    for it in 0..iters {
        let tile: u32 = tile_at::<GROUP_M>(first + it * stride, tiles_m, tiles_n, sched);
        drain_k_tiles::<HALF, N>(r, &mut acc, it * k_tiles, k_tiles);
        let row0: u32 = (tile >> 16) * tile_rows + row_off + 64 * HALF;
        let col0: u32 = (tile & 65535) * (2 * N);
        super::store_boxes_f32::<N>(&mut acc, e, d, c, row0, col0, m, n, alpha, beta);
    }
}

/// [`consume_tiles_f32_tma`] with two boxes, `e0` and `e1`, taking turns (boxes `2i` and `2i + 1` of the
/// fragment; tiles placed as there, by `tile_rows` and `row_off`): a box is written while the other's TMA store still reads its predecessor — each store's wait
/// for its box to be read sits before the barrier that publishes the other box's writes, as CUTLASS's
/// two-stage epilogue (`StagesD = 2`) waits.
#[prism_device(requires(thread[128]))]
#[allow(clippy::too_many_arguments)]
pub fn consume_tiles_f32_tma2<const HALF: u32, const N: u32, const GROUP_M: u32>(
    r: Ring<(bf16, bf16)>,
    e0: SharedMut<[f32; 64 * 32], Swizzle128>,
    e1: SharedMut<[f32; 64 * 32], Swizzle128>,
    d: TensorMapMut<f32, 2>,
    c: *const f32,
    sched: *const u32,
    first: u32,
    stride: u32,
    iters: u32,
    tiles_m: u32,
    tiles_n: u32,
    k_tiles: u32,
    tile_rows: u32,
    row_off: u32,
    m: u32,
    n: u32,
    alpha: f32,
    beta: f32,
) {
    #[at(thread[1])]
    let mut acc = [0.0f32; N];
    for it in 0..iters {
        let tile: u32 = tile_at::<GROUP_M>(first + it * stride, tiles_m, tiles_n, sched);
        drain_k_tiles::<HALF, N>(r, &mut acc, it * k_tiles, k_tiles);
        let row0: u32 = (tile >> 16) * tile_rows + row_off + 64 * HALF;
        let col0: u32 = (tile & 65535) * (2 * N);
        for i in 0..N / 32 {
            scale_fragment_box::<f32, N, 32>(&mut acc, 2 * i, row0, col0, m, n, alpha, beta, c);
            store_fragment_f32(e0, &acc, 2 * i);
            match split(thread) {
                1 => {
                    tma_store(d, e0, col0 + 64 * i, row0);
                }
            }
            scale_fragment_box::<f32, N, 32>(&mut acc, 2 * i + 1, row0, col0, m, n, alpha, beta, c);
            store_fragment_f32(e1, &acc, 2 * i + 1);
            match split(thread) {
                1 => {
                    tma_store(d, e1, col0 + 64 * i + 32, row0);
                }
            }
        }
    }
}

/// Rung 7 with an f32 result and a two-stage epilogue: [`gemm_bf16_tma_store_f32`] whose consumers store
/// through two boxes each ([`consume_tiles_f32_tma2`]); 32 KiB of boxes beside the 4-slot ring.
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 384,
    instances = [(256, 4, 8)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_tma_store_f32x2<const BN: u32, const STAGES: u32, const GROUP_M: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    c: *const f32,
    d: TensorMapMut<f32, 2>,
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
    let iters: u32 = (tiles + nblk - 1 - blk) / nblk;
    group(block[1], || {
        let sa: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
        let sb: Shared<[bf16; STAGES * BN * 64], Swizzle128>;
        // Two boxes for each consumer warpgroup (handed to it whole: `|x| x`).
        let e1: Shared<[f32; 64 * 32], Swizzle128>;
        let f1: Shared<[f32; 64 * 32], Swizzle128>;
        let e2: Shared<[f32; 64 * 32], Swizzle128>;
        let f2: Shared<[f32; 64 * 32], Swizzle128>;
        partition(
            e1,
            thread[128],
            |x| x,
            |e1_w| {
                partition(
                    f1,
                    thread[128],
                    |x| x,
                    |f1_w| {
                        partition(
                            e2,
                            thread[128],
                            |x| x,
                            |e2_w| {
                                partition(
                                    f2,
                                    thread[128],
                                    |x| x,
                                    |f2_w| {
                                        ring(STAGES, (sa, sb), |r| match split(warpgroup) {
                                            1 => {
                                                set_max_regs(40);
                                                fill_tiles::<BN, GROUP_M>(
                                                    r, a, b, sched, blk, nblk, iters, tiles_m,
                                                    tiles_n, k_tiles,
                                                );
                                            }
                                            1 => {
                                                set_max_regs(232);
                                                consume_tiles_f32_tma2::<0, { BN / 2 }, GROUP_M>(
                                                    r, e1_w, f1_w, d, c, sched, blk, nblk, iters,
                                                    tiles_m, tiles_n, k_tiles, 128, 0, m, n, alpha,
                                                    beta,
                                                );
                                            }
                                            1 => {
                                                set_max_regs(232);
                                                consume_tiles_f32_tma2::<1, { BN / 2 }, GROUP_M>(
                                                    r, e2_w, f2_w, d, c, sched, blk, nblk, iters,
                                                    tiles_m, tiles_n, k_tiles, 128, 0, m, n, alpha,
                                                    beta,
                                                );
                                            }
                                        });
                                    },
                                );
                            },
                        );
                    },
                );
            },
        );
    });
}

/// Rung 7 with an f32 result: rung 5 ([`super::gemm_bf16_persistent`]: persistent grid, one ring across a
/// block's tiles, setmaxnreg; tiles in [`super::tile_at`]`::<GROUP_M>` order) whose consumer warpgroups
/// write `D = alpha · A · Bᵀ + beta · C` through shared memory and TMA stores
/// ([`consume_tiles_f32_tma`]). `c` is read only when `beta ≠ 0` and must not be `D`'s buffer (the host API
/// passes a copy). Launch `min(tiles, SMs)` blocks of 384 threads; `a` maps `A` with box 64 × 128, `b` maps
/// `B` with box 64 × `BN`, `d` maps `D` (f32) with box 32 × 64, all with 128-byte swizzle.
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 384,
    instances = [(256, 4, 8)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_tma_store_f32<const BN: u32, const STAGES: u32, const GROUP_M: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    c: *const f32,
    d: TensorMapMut<f32, 2>,
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
    group(block[1], || {
        let sa: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
        let sb: Shared<[bf16; STAGES * BN * 64], Swizzle128>;
        // Each consumer warpgroup's epilogue box (handed to it whole: `|x| x`).
        let e1: Shared<[f32; 64 * 32], Swizzle128>;
        let e2: Shared<[f32; 64 * 32], Swizzle128>;
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
                                fill_tiles::<BN, GROUP_M>(
                                    r, a, b, sched, blk, nblk, iters, tiles_m, tiles_n, k_tiles,
                                );
                            }
                            1 => {
                                set_max_regs(232);
                                consume_tiles_f32_tma::<0, { BN / 2 }, GROUP_M>(
                                    r, e1_w, d, c, sched, blk, nblk, iters, tiles_m, tiles_n,
                                    k_tiles, 128, 0, m, n, alpha, beta,
                                );
                            }
                            1 => {
                                set_max_regs(232);
                                consume_tiles_f32_tma::<1, { BN / 2 }, GROUP_M>(
                                    r, e2_w, d, c, sched, blk, nblk, iters, tiles_m, tiles_n,
                                    k_tiles, 128, 0, m, n, alpha, beta,
                                );
                            }
                        });
                    },
                );
            },
        );
    });
}

/// Rungs 5 + 6 + 7 with an f32 result: [`super::gemm_bf16_cluster_persistent`]'s schedule (clusters of two
/// blocks take 256 × `BN` tiles in [`super::tile_at`]`::<GROUP_M>` order, rank 0 the top 128 rows and rank 1
/// the bottom 128, rank 0 multicasting the B panel into both blocks' ring slots) with
/// [`gemm_bf16_tma_store_f32x2`]'s two-box epilogue ([`consume_tiles_f32_tma2`]). `c` is read only when `beta ≠ 0` and
/// must not be `D`'s buffer. Launch `2 · min(cluster tiles, resident clusters)` blocks of 384 threads
/// ([`prism_runtime::Device::max_active_clusters`]); maps as for [`gemm_bf16_tma_store_f32`].
#[prism_kernel(
    requires(grid[1], block[2], block[1], warpgroup),
    threads = 384,
    cluster = 2,
    instances = [(256, 4, 8)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_cluster_tma_store_f32<const BN: u32, const STAGES: u32, const GROUP_M: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    c: *const f32,
    d: TensorMapMut<f32, 2>,
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
        // Two boxes for each consumer warpgroup (handed to it whole: `|x| x`), taking turns.
        let e1: Shared<[f32; 64 * 32], Swizzle128>;
        let f1: Shared<[f32; 64 * 32], Swizzle128>;
        let e2: Shared<[f32; 64 * 32], Swizzle128>;
        let f2: Shared<[f32; 64 * 32], Swizzle128>;
        partition(
            e1,
            thread[128],
            |x| x,
            |e1_w| {
                partition(
                    f1,
                    thread[128],
                    |x| x,
                    |f1_w| {
                        partition(
                            e2,
                            thread[128],
                            |x| x,
                            |e2_w| {
                                partition(
                                    f2,
                                    thread[128],
                                    |x| x,
                                    |f2_w| {
                                        ring(STAGES, (sa, sb), |r| match split(warpgroup) {
                                            1 => {
                                                set_max_regs(40);
                                                fill_cluster_tiles::<BN, GROUP_M>(
                                                    r, a, b, sched, cl, clusters, iters, tiles_m,
                                                    tiles_n, k_tiles, rank,
                                                );
                                            }
                                            1 => {
                                                set_max_regs(232);
                                                consume_tiles_f32_tma2::<0, { BN / 2 }, GROUP_M>(
                                                    r,
                                                    e1_w,
                                                    f1_w,
                                                    d,
                                                    c,
                                                    sched,
                                                    cl,
                                                    clusters,
                                                    iters,
                                                    tiles_m,
                                                    tiles_n,
                                                    k_tiles,
                                                    256,
                                                    rank * 128,
                                                    m,
                                                    n,
                                                    alpha,
                                                    beta,
                                                );
                                            }
                                            1 => {
                                                set_max_regs(232);
                                                consume_tiles_f32_tma2::<1, { BN / 2 }, GROUP_M>(
                                                    r,
                                                    e2_w,
                                                    f2_w,
                                                    d,
                                                    c,
                                                    sched,
                                                    cl,
                                                    clusters,
                                                    iters,
                                                    tiles_m,
                                                    tiles_n,
                                                    k_tiles,
                                                    256,
                                                    rank * 128,
                                                    m,
                                                    n,
                                                    alpha,
                                                    beta,
                                                );
                                            }
                                        });
                                    },
                                );
                            },
                        );
                    },
                );
            },
        );
    });
}
