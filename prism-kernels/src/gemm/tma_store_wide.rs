//! Rung 7 with the whole tile staged at once: each consumer warpgroup writes its 64 × 256 bf16 fragment into
//! four 64 × 64 boxes of its own and stores them with four TMA stores behind one barrier, instead of one box
//! at a time behind two barriers each ([`super::gemm_bf16_tma_store`]). The four stores' reads of shared
//! memory overlap the next tile's loads and wgmmas (the compiler waits for them only before the next
//! epilogue rewrites the boxes). The 64 KiB of boxes leave room for a 3-slot ring.

use prism_macros::{prism_device, prism_kernel};

/// A consumer warpgroup of [`gemm_bf16_tma_store_wide`]: for each of its block's `iters` tiles (as in
/// [`super::consume_tiles_bf16`]), [`super::drain_k_tiles`]`::<HALF, 128>`, then all four 64-column boxes:
/// [`super::scale_fragment_box`] and `stmatrix_bf16` into `e0` .. `e3`, and one thread's four `tma_store`s
/// through `D`'s map `d`. `c` (`m × n` bf16) is read only when `beta ≠ 0`.
#[prism_device(requires(thread[128]))]
#[allow(clippy::too_many_arguments)]
pub fn consume_tiles_bf16_wide<const HALF: u32, const GROUP_M: u32>(
    r: Ring<(bf16, bf16)>,
    e0: SharedMut<[bf16; 64 * 64], Swizzle128>,
    e1: SharedMut<[bf16; 64 * 64], Swizzle128>,
    e2: SharedMut<[bf16; 64 * 64], Swizzle128>,
    e3: SharedMut<[bf16; 64 * 64], Swizzle128>,
    d: TensorMapMut<bf16, 2>,
    c: *const bf16,
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
    let mut acc = [0.0f32; 128];
    for it in 0..iters {
        let tile: u32 = tile_at::<GROUP_M>(first + it * stride, tiles_m, tiles_n, sched);
        drain_k_tiles::<HALF, 128>(r, &mut acc, it * k_tiles, k_tiles);
        let row0: u32 = (tile >> 16) * 128 + 64 * HALF;
        let col0: u32 = (tile & 65535) * 256;
        for j in 0..4 {
            scale_fragment_box::<bf16, 128, 64>(&mut acc, j, row0, col0, m, n, alpha, beta, c);
        }
        stmatrix_bf16(e0, &acc, 0);
        stmatrix_bf16(e1, &acc, 1);
        stmatrix_bf16(e2, &acc, 2);
        stmatrix_bf16(e3, &acc, 3);
        match split(thread) {
            1 => {
                tma_store(d, e0, col0, row0);
                tma_store(d, e1, col0 + 64, row0);
                tma_store(d, e2, col0 + 128, row0);
                tma_store(d, e3, col0 + 192, row0);
            }
        }
    }
}

/// Rung 7, whole-tile epilogue: [`super::gemm_bf16_tma_store`] (persistent, warp-specialized, grouped
/// 128 × 256 tiles, bf16 `D` through TMA stores) with each consumer's four boxes staged together
/// ([`consume_tiles_bf16_wide`]) and a `STAGES`-slot ring. Launch `min(tiles, SMs)` blocks of 384 threads;
/// the maps as for [`super::gemm_bf16_tma_store`].
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 384,
    instances = [(3, 8)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_tma_store_wide<const STAGES: u32, const GROUP_M: u32>(
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
    let tiles_n: u32 = (n + 255) / 256;
    let tiles: u32 = tiles_m * tiles_n;
    let k_tiles: u32 = (k + 63) / 64;
    let nblk: u32 = grid_dim();
    #[at(block[1])]
    let blk: u32 = id();
    #[at(block[1])]
    let iters: u32 = (tiles + nblk - 1 - blk) / nblk; // 0 when blk >= tiles (blk < nblk)
    group(block[1], || {
        let sa: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
        let sb: Shared<[bf16; STAGES * 256 * 64], Swizzle128>;
        // Each consumer warpgroup's four epilogue boxes (handed to it whole: `|x| x`).
        let f0: Shared<[bf16; 64 * 64], Swizzle128>;
        let f1: Shared<[bf16; 64 * 64], Swizzle128>;
        let f2: Shared<[bf16; 64 * 64], Swizzle128>;
        let f3: Shared<[bf16; 64 * 64], Swizzle128>;
        let g0: Shared<[bf16; 64 * 64], Swizzle128>;
        let g1: Shared<[bf16; 64 * 64], Swizzle128>;
        let g2: Shared<[bf16; 64 * 64], Swizzle128>;
        let g3: Shared<[bf16; 64 * 64], Swizzle128>;
        partition(
            f0,
            thread[128],
            |x| x,
            |f0w| {
                partition(
                    f1,
                    thread[128],
                    |x| x,
                    |f1w| {
                        partition(
                            f2,
                            thread[128],
                            |x| x,
                            |f2w| {
                                partition(
                                    f3,
                                    thread[128],
                                    |x| x,
                                    |f3w| {
                                        partition(
                                            g0,
                                            thread[128],
                                            |x| x,
                                            |g0w| {
                                                partition(
                                                    g1,
                                                    thread[128],
                                                    |x| x,
                                                    |g1w| {
                                                        partition(
                                                            g2,
                                                            thread[128],
                                                            |x| x,
                                                            |g2w| {
                                                                partition(
                                                                    g3,
                                                                    thread[128],
                                                                    |x| x,
                                                                    |g3w| {
                                                                        ring(
                                                                            STAGES,
                                                                            (sa, sb),
                                                                            |r| match split(
                                                                                warpgroup,
                                                                            ) {
                                                                                1 => {
                                                                                    set_max_regs(
                                                                                        40,
                                                                                    );
                                                                                    fill_tiles::<
                                                                                        256,
                                                                                        GROUP_M,
                                                                                    >(
                                                                                        r, a, b,
                                                                                        sched, blk,
                                                                                        nblk,
                                                                                        iters,
                                                                                        tiles_m,
                                                                                        tiles_n,
                                                                                        k_tiles,
                                                                                    );
                                                                                }
                                                                                1 => {
                                                                                    set_max_regs(
                                                                                        232,
                                                                                    );
                                                                                    consume_tiles_bf16_wide::<0, GROUP_M>(
                                                    r, f0w, f1w, f2w, f3w, d, c, sched, blk, nblk,
                                                    iters, tiles_m, tiles_n, k_tiles, m, n, alpha,
                                                    beta,
                                                );
                                                                                }
                                                                                1 => {
                                                                                    set_max_regs(
                                                                                        232,
                                                                                    );
                                                                                    consume_tiles_bf16_wide::<1, GROUP_M>(
                                                    r, g0w, g1w, g2w, g3w, d, c, sched, blk, nblk,
                                                    iters, tiles_m, tiles_n, k_tiles, m, n, alpha,
                                                    beta,
                                                );
                                                                                }
                                                                            },
                                                                        );
                                                                    },
                                                                );
                                                            },
                                                        );
                                                    },
                                                );
                                            },
                                        );
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
