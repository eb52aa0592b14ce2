//! Rung 8 of the bf16 GEMM ladder: the ping-pong schedule (CUTLASS's `KernelTmaWarpSpecializedPingpong`).
//! The two consumer warpgroups work on different 128 × 128 tiles and take turns draining one ring, so one
//! consumer's epilogue runs while the other's wgmmas keep the tensor cores busy. In the cooperative rungs
//! (5 and 7) both consumers share a tile and reach their epilogue together, and the tensor cores idle
//! through it.

use prism_macros::{prism_device, prism_kernel};

/// One turn of consumer `C` (0 or 1) of a ring drained in turns: the `k_tiles` drains of a 128 × 128 tile
/// (steps `step0 ..`), each eight `wgmma.m64n128k16` in one group ([`wgmma_k_tile`](super::wgmma_k_tile)
/// over the top and the bottom 64 rows of the A slot, into `top` and `bottom`); the tile's first k-step
/// overwrites them. The turn passes to the other consumer once the last slot is waited for.
#[prism_device(requires(thread[128]))]
pub fn drain_turn<const C: u32>(
    r: Ring<(bf16, bf16)>,
    top: &mut [f32; 64],
    bottom: &mut [f32; 64],
    step0: u32,
    k_tiles: u32,
) {
    turn(r, C, || {
        for kt in 0..k_tiles {
            drain(r, step0 + kt, |sa_s, sb_s| {
                wgmma_k_tile::<0, 64>(top, sa_s, sb_s, kt == 0);
                wgmma_k_tile::<1, 64>(bottom, sa_s, sb_s, kt == 0);
            });
        }
    });
}

/// Consumer `C` (0 or 1) of [`gemm_bf16_pingpong`]: the block's tiles `C, C + 2, ..` of its `iters` (tile
/// `it` is `first + it · stride` of the [`tile_at`](super::tile_at)`::<GROUP_M>` order over `tiles_m × tiles_n` tiles of
/// `tile_rows` × 128, of which this block computes rows `row_off .. row_off + 128`). Each tile's `k_tiles` drains of the ring `r` (steps `it · k_tiles ..`, as the producer
/// [`fill_tiles`](super::fill_tiles)`::<128, GROUP_M>` fills them) are one `turn`: consumer 0 drains the block's first tile,
/// consumer 1 the second, and neither starts a tile before the other has waited for every slot of its own
/// previous one ([`drain_turn`]). The
/// epilogue as rung 7's ([`store_boxes_bf16`](super::store_boxes_bf16) through the consumer's own 64 × 64
/// box `e`, each 64-row half in turn), while the other consumer's turn runs.
#[prism_device(requires(thread[128]))]
#[allow(clippy::too_many_arguments)]
pub fn consume_turns_bf16<const C: u32, const GROUP_M: u32>(
    r: Ring<(bf16, bf16)>,
    e: SharedMut<[bf16; 64 * 64], Swizzle128>,
    d: TensorMapMut<bf16, 2>,
    c: *const bf16,
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
    let mut top = [0.0f32; 64];
    #[at(thread[1])]
    let mut bottom = [0.0f32; 64];
    for j in 0..(iters + 1 - C) / 2 {
        let it: u32 = 2 * j + C;
        let tile: u32 = tile_at::<GROUP_M>(first + it * stride, tiles_m, tiles_n, sched);
        drain_turn::<C>(r, &mut top, &mut bottom, it * k_tiles, k_tiles);
        let row0: u32 = (tile >> 16) * tile_rows + row_off;
        let col0: u32 = (tile & 65535) * 128;
        store_boxes_bf16::<64>(&mut top, e, d, c, row0, col0, m, n, alpha, beta);
        store_boxes_bf16::<64>(&mut bottom, e, d, c, row0 + 64, col0, m, n, alpha, beta);
    }
}

/// Rung 8: `D = alpha · A · Bᵀ + beta · C` with a bf16 `D` on the ping-pong schedule. A persistent grid
/// (tiles in [`tile_at`](super::tile_at)`::<GROUP_M>` order, grouped or from the table `sched` with `GROUP_M` = 0); a
/// producer warpgroup (setmaxnreg 40) fills a `STAGES`-slot ring with each tile's 128 × 64 A and 128 × 64 B
/// boxes ([`fill_tiles`](super::fill_tiles)`::<128, GROUP_M>`); two consumer warpgroups (setmaxnreg 232) take the block's tiles
/// in turns ([`consume_turns_bf16`]), each a whole 128 × 128 tile. Launch `min(tiles, SMs)` blocks of 384
/// threads; `a` maps `A` with box 64 × 128, `b` maps `B` with box 64 × 128, `d` maps `D` with box 64 × 64,
/// all with 128-byte swizzle.
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 384,
    instances = [(6, 8)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_pingpong<const STAGES: u32, const GROUP_M: u32>(
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
    let tiles_m: u32 = (m + 127) / 128;
    let tiles_n: u32 = (n + 127) / 128;
    let tiles: u32 = tiles_m * tiles_n;
    let k_tiles: u32 = (k + 63) / 64;
    let nblk: u32 = grid_dim();
    #[at(block[1])]
    let blk: u32 = id();
    #[at(block[1])]
    let iters: u32 = (tiles + nblk - 1 - blk) / nblk; // 0 when blk >= tiles (blk < nblk)
    group(block[1], || {
        let sa: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
        let sb: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
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
                                fill_tiles::<128, GROUP_M>(
                                    r, a, b, sched, blk, nblk, iters, tiles_m, tiles_n, k_tiles,
                                );
                            }
                            1 => {
                                set_max_regs(232);
                                consume_turns_bf16::<0, GROUP_M>(
                                    r, e1_w, d, c, sched, blk, nblk, iters, tiles_m, tiles_n,
                                    k_tiles, 128, 0, m, n, alpha, beta,
                                );
                            }
                            1 => {
                                set_max_regs(232);
                                consume_turns_bf16::<1, GROUP_M>(
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

/// Rungs 8 + 6: [`gemm_bf16_pingpong`] in 2-block clusters. A cluster takes 256 × 128 tiles (each block 128
/// rows of it) in [`tile_at`](super::tile_at)`::<GROUP_M>` order; each block loads its own 128 × 64 A box and
/// block rank 0 multicasts the shared 128 × 64 B box into both blocks' slot
/// ([`fill_cluster_tiles`](super::fill_cluster_tiles)`::<128, GROUP_M>`), halving B's traffic from L2. In
/// each block the two consumers take turns as in rung 8; consumer `c` of both blocks drains the same steps
/// and releases each slot in both. Launch `2 · min(cluster tiles, resident clusters)` blocks of 384
/// threads; maps as for [`gemm_bf16_pingpong`].
#[prism_kernel(
    requires(grid[1], block[2], block[1], warpgroup),
    threads = 384,
    cluster = 2,
    instances = [(6, 8)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_cluster_pingpong<const STAGES: u32, const GROUP_M: u32>(
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
    let tiles_n: u32 = (n + 127) / 128;
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
        let sb: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
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
                                fill_cluster_tiles::<128, GROUP_M>(
                                    r, a, b, sched, cl, clusters, iters, tiles_m, tiles_n, k_tiles,
                                    rank,
                                );
                            }
                            1 => {
                                set_max_regs(232);
                                consume_turns_bf16::<0, GROUP_M>(
                                    r,
                                    e1_w,
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
                                consume_turns_bf16::<1, GROUP_M>(
                                    r,
                                    e2_w,
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
    });
}

/// Consumer `C` of [`gemm_bf16_pingpong_f32`]: [`consume_turns_bf16`] with an f32 `D`, the epilogue as rung
/// 7's f32 one ([`store_boxes_f32`](super::store_boxes_f32) through the consumer's own 64 × 32 f32 box `e`;
/// eight boxes per tile).
#[prism_device(requires(thread[128]))]
#[allow(clippy::too_many_arguments)]
pub fn consume_turns_f32<const C: u32, const GROUP_M: u32>(
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
    m: u32,
    n: u32,
    alpha: f32,
    beta: f32,
) {
    #[at(thread[1])]
    let mut top = [0.0f32; 64];
    #[at(thread[1])]
    let mut bottom = [0.0f32; 64];
    for j in 0..(iters + 1 - C) / 2 {
        let it: u32 = 2 * j + C;
        let tile: u32 = tile_at::<GROUP_M>(first + it * stride, tiles_m, tiles_n, sched);
        drain_turn::<C>(r, &mut top, &mut bottom, it * k_tiles, k_tiles);
        let row0: u32 = (tile >> 16) * 128;
        let col0: u32 = (tile & 65535) * 128;
        store_boxes_f32::<64>(&mut top, e, d, c, row0, col0, m, n, alpha, beta);
        store_boxes_f32::<64>(&mut bottom, e, d, c, row0 + 64, col0, m, n, alpha, beta);
    }
}

/// Rung 8 with an **f32** `D`: [`gemm_bf16_pingpong`] whose consumers write `D = alpha · A · Bᵀ + beta · C`
/// through 64 × 32 f32 boxes ([`consume_turns_f32`]); `c` (`m × n` f32) is read only when `beta ≠ 0` and
/// must not be `D`'s buffer. `d` maps `D` with box 32 × 64 and 128-byte swizzle; the rest as rung 8.
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 384,
    instances = [(6, 8)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_pingpong_f32<const STAGES: u32, const GROUP_M: u32>(
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
    let tiles_n: u32 = (n + 127) / 128;
    let tiles: u32 = tiles_m * tiles_n;
    let k_tiles: u32 = (k + 63) / 64;
    let nblk: u32 = grid_dim();
    #[at(block[1])]
    let blk: u32 = id();
    #[at(block[1])]
    let iters: u32 = (tiles + nblk - 1 - blk) / nblk;
    group(block[1], || {
        let sa: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
        let sb: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
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
                                fill_tiles::<128, GROUP_M>(
                                    r, a, b, sched, blk, nblk, iters, tiles_m, tiles_n, k_tiles,
                                );
                            }
                            1 => {
                                set_max_regs(232);
                                consume_turns_f32::<0, GROUP_M>(
                                    r, e1_w, d, c, sched, blk, nblk, iters, tiles_m, tiles_n,
                                    k_tiles, m, n, alpha, beta,
                                );
                            }
                            1 => {
                                set_max_regs(232);
                                consume_turns_f32::<1, GROUP_M>(
                                    r, e2_w, d, c, sched, blk, nblk, iters, tiles_m, tiles_n,
                                    k_tiles, m, n, alpha, beta,
                                );
                            }
                        });
                    },
                );
            },
        );
    });
}
