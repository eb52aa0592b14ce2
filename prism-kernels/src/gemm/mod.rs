//! The Hopper bf16 GEMM ladder (paper 000 §6.2–6.3; issue "bf16 Hopper GEMM"): `C = alpha · A · Bᵀ + beta · C`
//! with `A` row-major `m × k` bf16, `B` stored `n × k` row-major (K-major, i.e. the column-major `k × n`
//! operand), `C` row-major `m × n` f32, written in Prism with the Hopper intrinsics of docs/SYNTAX.md
//! (`TensorMap`, `tma_load`, `wgmma_bf16`).
//!
//! | rung | kernel | what it adds |
//! |---|---|---|
//! | 1 | [`gemm_bf16_tma_wgmma`] | one warpgroup per 64 × `BN` tile; per 64-wide k-tile, one thread loads the A and B tiles with TMA (128-byte swizzle) and the warpgroup multiplies them with four `wgmma.m64nBNk16` |
//! | 1 (B `k × n`) | [`gemm_bf16_tma_wgmma_kn`] | rung 1 reading an MN-major B (64 × 64 tiles): [`gemm_bf16_kn`] |
//! | 3 | [`gemm_bf16_ws`]`<BN, STAGES, 0>` | 128 × `BN` tiles, warp specialization: a producer warpgroup fills a `ring` of `STAGES` slots with TMA while two consumer warpgroups (64 rows each) drain them with wgmma; full/empty mbarriers, slot and parity computed by the compiler |
//! | 4 | [`gemm_bf16_ws`]`<BN, STAGES, 1>` | rung 3 with `set_max_regs`: producer 40 registers, consumers 232, so a 128 × 256 tile's 128 accumulator registers per thread fit |
//! | 6 | [`gemm_bf16_cluster`]`<256, 4, 1>` | rung 4 in 2-block clusters: the two blocks share the B tile, loaded once with a multicast TMA load |
//! | 5 | [`gemm_bf16_persistent`]`<BN, STAGES, GROUP_M>` | rung 4 on a persistent grid (one block per SM), tiles in grouped order for L2 reuse, one ring across a block's tiles, `accumulate` false on each tile's first k-step |
//! | 5 (space-filling) | [`gemm_bf16_persistent`]`<BN, STAGES, 0>` | rung 5 with the tile order read from a [`TileSchedule`] the host builds once per shape (a generalized Hilbert curve, [`hilbert_order`]); every persistent kernel takes its order from [`tile_at`], so each has a table-driven instance |
//! | 5 + 6 | [`gemm_bf16_cluster_persistent`]`<BN, STAGES, GROUP_M>` | rung 5 run by 2-block clusters multicasting B |
//! | 7 | [`gemm_bf16_tma_store`]`<256, 4, GROUP_M>` | rung 5 with a bf16 `D` written through shared memory and `tma_store` ([`gemm_bf16_out_bf16`]); [`gemm_bf16_cluster_tma_store`] is the same on rung 5 + 6 |
//! | 8 (f32) | [`gemm_bf16_pingpong_f32`]`<6, 8>` | rung 8 with an f32 `D` (64 × 32 boxes), [`GemmBf16Variant::PingPong128`] |
//! | 8 | [`gemm_bf16_pingpong`]`<6, 8>` | the ping-pong schedule: each consumer warpgroup a whole 128 × 128 tile, the two taking `turn`s draining one 6-slot ring, so one's epilogue runs under the other's wgmmas ([`GemmBf16OutVariant::PingPong128`]); [`gemm_bf16_cluster_pingpong`] the same in 2-block clusters multicasting B |
//! | 7 (f32) | [`gemm_bf16_tma_store_f32`]`<256, 4, 8>` | rung 7 with an f32 `D` (32-column boxes, `store_fragment_f32`), [`GemmBf16Variant::BEST`]; [`gemm_bf16_tma_store_f32x2`] the same with two boxes per consumer taking turns, [`gemm_bf16_cluster_tma_store_f32`] that on rung 5 + 6 |
//!
//! Ragged `m`, `n`, `k` go through TMA's out-of-bounds handling (zero-filled boxes) and guarded stores, not a
//! separate kernel; TMA's 16-byte stride rule needs `k` to be a multiple of 8.
//! Rung 2 (two consumer warpgroups without a producer) is skipped: rung 3 has both. Rung 7 goes through
//! shared memory and TMA stores; the other f32 rungs store their fragments directly
//! ([`wgmma_tile_to_f32`]): see docs/KERNELS.md.

use prism_macros::{prism_device, prism_kernel};
use prism_runtime::half::bf16;
use prism_runtime::{
    Device, DeviceBuffer, KernelInfo, LaunchDims, LaunchReport, RuntimeError, TensorL2Promotion,
    TensorMap, TensorMapMut, TensorSwizzle,
};
use std::fmt;

/// One 64-wide k-tile of a consumer warpgroup: four `wgmma.m64nNk16` (`N` = `2·ACC` columns) over rows
/// `64·HALF .. 64·HALF + 64` of the A tile `a` and the whole B tile `b` (K-major, 64 K per row, 128-byte
/// swizzle: what `tma_load` writes); `fresh` makes the first of them overwrite `acc` (a tile's first k-step)
/// instead of adding to it. The wgmmas are still in flight when this returns: the compiler retires them
/// where `acc` or the tiles are next touched (or keeps them in flight across a ring's next `drain`).
#[prism_device(requires(thread[128]))]
pub fn wgmma_k_tile<const HALF: u32, const ACC: u32>(
    acc: &mut [f32; ACC],
    a: Shared<[bf16; (HALF + 1) * 64 * 64], Swizzle128>,
    b: Shared<[bf16; 2 * ACC * 64], Swizzle128>,
    fresh: bool,
) {
    for kk in 0..4 {
        wgmma_bf16(
            acc,
            a,
            HALF * 64 * 64 + kk * 16,
            b,
            kk * 16,
            !fresh || kk > 0,
        );
    }
}

/// A consumer warpgroup's main loop over one tile: `k_tiles` drains of the ring `r` (an A and a B memory),
/// steps `step0 ..`, each a [`wgmma_k_tile`]`::<HALF, ACC>` over its rows of the A slot and the whole B
/// slot into `acc`; the tile's first k-step overwrites `acc`. Written once for every consumer arm of the
/// ladder: the drains count among the ring's sites where it is called, and the last k-tile's wgmmas are
/// still in flight when it returns (the compiler retires them before `acc` is next read).
#[prism_device(requires(thread[128]))]
pub fn drain_k_tiles<const HALF: u32, const ACC: u32>(
    r: Ring<(bf16, bf16)>,
    acc: &mut [f32; ACC],
    step0: u32,
    k_tiles: u32,
) {
    for kt in 0..k_tiles {
        drain(r, step0 + kt, |sa_s, sb_s| {
            wgmma_k_tile::<HALF, ACC>(acc, sa_s, sb_s, kt == 0);
        });
    }
}

/// Rung 5's tile order: tiles are taken `GROUP_M` tile rows at a time (consecutive tiles share B panels
/// and the group's A panels stay in L2; the last group may be shorter). The tile row of tile `tile` of a
/// `tiles_m × tiles_n` grid of tiles.
#[prism_device(requires(thread[128]))]
pub fn grouped_tile_m<const GROUP_M: u32>(tile: u32, tiles_m: u32, tiles_n: u32) -> u32 {
    let width: u32 = GROUP_M * tiles_n;
    let first_m: u32 = (tile / width) * GROUP_M;
    let rows: u32 = (tiles_m - first_m).min(GROUP_M);
    first_m + (tile % width) % rows
}

/// The tile column of tile `tile` in [`grouped_tile_m`]'s order.
#[prism_device(requires(thread[128]))]
pub fn grouped_tile_n<const GROUP_M: u32>(tile: u32, tiles_m: u32, tiles_n: u32) -> u32 {
    let width: u32 = GROUP_M * tiles_n;
    let first_m: u32 = (tile / width) * GROUP_M;
    let rows: u32 = (tiles_m - first_m).min(GROUP_M);
    (tile % width) / rows
}

/// The persistent kernels' tile order: the `(tile row << 16) | tile column` of the `i`-th tile a persistent
/// grid visits in a `tiles_m × tiles_n` grid of tiles. With `GROUP_M` = 0 the order is the host's table
/// `sched` (a [`TileSchedule`], e.g. a space-filling curve: a cached load per tile); otherwise it is
/// [`grouped_tile_m`]'s, computed here, and `sched` is not read (it may be an empty buffer). The constant
/// condition folds: each instance holds one of the two.
#[prism_device(requires(thread[128]))]
pub fn tile_at<const GROUP_M: u32>(i: u32, tiles_m: u32, tiles_n: u32, sched: *const u32) -> u32 {
    let mut t: u32 = 0;
    if GROUP_M == 0 {
        t = sched[i];
    } else {
        t = (grouped_tile_m::<GROUP_M>(i, tiles_m, tiles_n) << 16)
            | grouped_tile_n::<GROUP_M>(i, tiles_m, tiles_n);
    }
    t
}

/// The `m64nNk16` accumulator fragment of a warpgroup (PTX ISA, wgmma D layout: register `i` of thread `t`
/// holds row `16·(t / 32) + (t % 32) / 4 + 8·((i / 2) % 2)`, column `8·(i / 4) + 2·(t % 4) + i % 2`) →
/// `C = alpha · acc + beta · C` for the 64 × `2N` tile whose top-left element is `c[base]` (`ld`
/// elements per row of `C`); only its first `rows` rows and `cols` columns are inside `C` (ragged edges).
/// With `beta = 0`, `C` is not read.
/// Every consumer warpgroup of the ladder ends with this.
#[prism_device(requires(thread[128]))]
#[allow(clippy::too_many_arguments)]
pub fn wgmma_tile_to_f32<const N: u32>(
    acc: &[f32; N],
    c: *mut f32,
    base: u32,
    rows: u32,
    cols: u32,
    ld: u32,
    alpha: f32,
    beta: f32,
) {
    #[at(thread[1])]
    let t: u32 = id();
    #[at(thread[1])]
    let r0: u32 = 16 * (t / 32) + (t % 32) / 4;
    #[at(thread[1])]
    let c0: u32 = 2 * (t % 4);
    partition(
        c,
        thread[1],
        |q, e| base + (r0 + q) * ld + c0 + e,
        |c_t| {
            group(thread[1], || {
                // BLAS semantics: with beta = 0, C is not read (it may hold NaN). One uniform branch
                // around the fragment, not one per element (see `scale_fragment_box`).
                if beta != 0.0 {
                    for i in 0..N {
                        let dr: u32 = 8 * ((i / 2) % 2);
                        let dc: u32 = 8 * (i / 4) + i % 2;
                        if r0 + dr < rows && c0 + dc < cols {
                            c_t[(dr, dc)] = alpha * acc[i] + beta * c_t[(dr, dc)];
                        }
                    }
                } else {
                    for i in 0..N {
                        let dr: u32 = 8 * ((i / 2) % 2);
                        let dc: u32 = 8 * (i / 4) + i % 2;
                        if r0 + dr < rows && c0 + dc < cols {
                            c_t[(dr, dc)] = alpha * acc[i];
                        }
                    }
                }
            });
        },
    );
}

/// Rung 7's epilogue, box `j` of `W` columns: columns `Wj .. Wj + W` of a warpgroup's `m64nNk16`
/// accumulator fragment (registers `(W/2)j .. (W/2)(j + 1)`, the layout of [`wgmma_tile_to_f32`]) become
/// `alpha · acc + beta · C` in place, for the 64-row tile whose top-left element is `(row0, col0)` of the
/// `m × n` `C` of `T` (read only when `beta ≠ 0`, and only inside `C`: ragged edges). `W` is 64 for a bf16
/// box (128 bytes a row), 32 for an f32 one.
#[prism_device(requires(thread[128]))]
#[allow(clippy::too_many_arguments)]
pub fn scale_fragment_box<T: Scalar, const N: u32, const W: u32>(
    acc: &mut [f32; N],
    j: u32,
    row0: u32,
    col0: u32,
    m: u32,
    n: u32,
    alpha: f32,
    beta: f32,
    c: *const T,
) {
    #[at(thread[1])]
    let t: u32 = id();
    #[at(thread[1])]
    let r0: u32 = 16 * (t / 32) + (t % 32) / 4;
    #[at(thread[1])]
    let c0: u32 = 2 * (t % 4);
    group(thread[1], || {
        // One uniform branch around the box: with beta = 0 (the common case) the epilogue is 32
        // multiplies, not 32 guarded loads whose address and bounds arithmetic the consumers would
        // issue, predicated off, while the tensor cores wait for the next tile.
        if beta != 0.0 {
            for q in 0..W / 2 {
                let row: u32 = row0 + r0 + 8 * ((q / 2) % 2);
                let col: u32 = col0 + W * j + c0 + 8 * (q / 4) + q % 2;
                acc[(W / 2) * j + q] = alpha * acc[(W / 2) * j + q];
                if row < m && col < n {
                    acc[(W / 2) * j + q] = acc[(W / 2) * j + q] + beta * (c[row * n + col] as f32);
                }
            }
        } else {
            for q in 0..W / 2 {
                acc[(W / 2) * j + q] = alpha * acc[(W / 2) * j + q];
            }
        }
    });
}

/// Rung 7's bf16 epilogue of one 64-row accumulator fragment (`N` registers: `2N` columns): 64 columns at a
/// time, [`scale_fragment_box`] (`alpha · acc + beta · C`, `C` read only when `beta ≠ 0`), `stmatrix_bf16`
/// into the warpgroup's own 64 × 64 box `e` and one thread's `tma_store` to `(row0, col0 + 64j)` of `D`
/// (TMA clips the box at `D`'s edges). The compiler orders the box's writes before each store and each
/// store's reads before the box is written again.
#[prism_device(requires(thread[128]))]
#[allow(clippy::too_many_arguments)]
pub fn store_boxes_bf16<const N: u32>(
    acc: &mut [f32; N],
    e: SharedMut<[bf16; 64 * 64], Swizzle128>,
    d: TensorMapMut<bf16, 2>,
    c: *const bf16,
    row0: u32,
    col0: u32,
    m: u32,
    n: u32,
    alpha: f32,
    beta: f32,
) {
    for j in 0..N / 32 {
        scale_fragment_box::<bf16, N, 64>(acc, j, row0, col0, m, n, alpha, beta, c);
        stmatrix_bf16(e, &acc, j);
        match split(thread) {
            1 => {
                tma_store(d, e, col0 + 64 * j, row0);
            }
        }
    }
}

/// [`store_boxes_bf16`] with an f32 `D`: 32 columns at a time into the warpgroup's own 64 × 32 f32 box `e`
/// (`store_fragment_f32`, unrounded).
#[prism_device(requires(thread[128]))]
#[allow(clippy::too_many_arguments)]
pub fn store_boxes_f32<const N: u32>(
    acc: &mut [f32; N],
    e: SharedMut<[f32; 64 * 32], Swizzle128>,
    d: TensorMapMut<f32, 2>,
    c: *const f32,
    row0: u32,
    col0: u32,
    m: u32,
    n: u32,
    alpha: f32,
    beta: f32,
) {
    for j in 0..N / 16 {
        scale_fragment_box::<f32, N, 32>(acc, j, row0, col0, m, n, alpha, beta, c);
        store_fragment_f32(e, &acc, j);
        match split(thread) {
            1 => {
                tma_store(d, e, col0 + 32 * j, row0);
            }
        }
    }
}

/// The producer warpgroup of the persistent kernels without clusters, written once: for each of its
/// block's `iters` tiles (`first, first + stride, ..` of the [`tile_at`]`::<GROUP_M>` order over `tiles_m ×
/// tiles_n` tiles of 128 × `BN`), `k_tiles` fills of the ring `r` (steps `it · k_tiles ..`), in each of
/// which one thread loads the tile's 128 × 64 A box and `BN` × 64 B box with TMA. The cluster kernels'
/// producer is [`fill_cluster_tiles`].
#[prism_device(requires(thread[128]))]
#[allow(clippy::too_many_arguments)]
pub fn fill_tiles<const BN: u32, const GROUP_M: u32>(
    r: Ring<(bf16, bf16)>,
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    sched: *const u32,
    first: u32,
    stride: u32,
    iters: u32,
    tiles_m: u32,
    tiles_n: u32,
    k_tiles: u32,
) {
    for it in 0..iters {
        let tile: u32 = tile_at::<GROUP_M>(first + it * stride, tiles_m, tiles_n, sched);
        let row0: u32 = (tile >> 16) * 128;
        let col0: u32 = (tile & 65535) * BN;
        for kt in 0..k_tiles {
            fill(r, it * k_tiles + kt, |sa_s, sb_s| match split(thread) {
                1 => {
                    tma_load(sa_s, a, kt * 64, row0);
                    tma_load(sb_s, b, kt * 64, col0);
                }
            });
        }
    }
}

/// The producer warpgroup of the persistent 2-block cluster kernels, written once: for each of its cluster's
/// `iters` tiles (`first, first + stride, ..` of the [`tile_at`]`::<GROUP_M>` order over `tiles_m × tiles_n`
/// cluster tiles of 256 × `BN`), `k_tiles` fills of the ring `r`, in each of which one thread loads the
/// block's 128 × 64 A box (rows `rank · 128 ..` of the cluster tile) and, in block rank 0, the `BN` × 64 B box
/// with a multicast into the same slot of both blocks. `cluster = 2`: only kernels of 2-block clusters call
/// it (rule CLUSTER), and their drains release each slot in both blocks.
#[prism_device(requires(thread[128]), cluster = 2)]
#[allow(clippy::too_many_arguments)]
pub fn fill_cluster_tiles<const BN: u32, const GROUP_M: u32>(
    r: Ring<(bf16, bf16)>,
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    sched: *const u32,
    first: u32,
    stride: u32,
    iters: u32,
    tiles_m: u32,
    tiles_n: u32,
    k_tiles: u32,
    rank: u32,
) {
    for it in 0..iters {
        let tile: u32 = tile_at::<GROUP_M>(first + it * stride, tiles_m, tiles_n, sched);
        let row0: u32 = (tile >> 16) * 256 + rank * 128;
        let col0: u32 = (tile & 65535) * BN;
        for kt in 0..k_tiles {
            fill(r, it * k_tiles + kt, |sa_s, sb_s| match split(thread) {
                1 => {
                    tma_load(sa_s, a, kt * 64, row0);
                    if rank == 0 {
                        tma_load_multicast(sb_s, b, kt * 64, col0);
                    }
                }
            });
        }
    }
}

/// A consumer warpgroup of the persistent f32-output kernels, written once: for each of its block's `iters`
/// tiles (`first, first + stride, ..` of the [`tile_at`]`::<GROUP_M>` order over `tiles_m × tiles_n` tiles of
/// `tile_rows × 2N`), [`drain_k_tiles`]`::<HALF, N>` (ring steps `it · k_tiles ..`) and
/// [`wgmma_tile_to_f32`] into its 64 rows, `tile_rows · tile row + row_off + 64 · HALF ..`, of `C` (`c`: the
/// warpgroup's view of all of `C`, `m × n` row-major). `row_off` places a block inside a cluster tile.
#[prism_device(requires(thread[128]))]
#[allow(clippy::too_many_arguments)]
pub fn consume_tiles_f32<const HALF: u32, const N: u32, const GROUP_M: u32>(
    r: Ring<(bf16, bf16)>,
    c: *mut f32,
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
        wgmma_tile_to_f32::<N>(
            &acc,
            c,
            row0 * n + col0,
            m.max(row0) - row0,
            n.max(col0) - col0,
            n,
            alpha,
            beta,
        );
    }
}

/// [`consume_tiles_f32`] for the bf16-output kernels (rung 7's epilogue): each tile's fragment becomes
/// `D = alpha · acc + beta · C` in bf16, 64 columns at a time: [`scale_fragment_box`] scales a box of the
/// fragment in place, `stmatrix_bf16` writes it into the warpgroup's own box `e` (the 128-byte swizzle TMA
/// reads) and one thread stores the box through `D`'s map `d` with `tma_store`, which clips it at `D`'s edges
/// (no guards for ragged sizes). `c` (`m × n` bf16) is read only when `beta ≠ 0`. The compiler orders the
/// box's writes before each store, and each store before the box is written again.
#[prism_device(requires(thread[128]))]
#[allow(clippy::too_many_arguments)]
pub fn consume_tiles_bf16<const HALF: u32, const N: u32, const GROUP_M: u32>(
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
    let mut acc = [0.0f32; N];
    for it in 0..iters {
        let tile: u32 = tile_at::<GROUP_M>(first + it * stride, tiles_m, tiles_n, sched);
        drain_k_tiles::<HALF, N>(r, &mut acc, it * k_tiles, k_tiles);
        let row0: u32 = (tile >> 16) * tile_rows + row_off + 64 * HALF;
        let col0: u32 = (tile & 65535) * (2 * N);
        store_boxes_bf16::<N>(&mut acc, e, d, c, row0, col0, m, n, alpha, beta);
    }
}

// Rung 7 calls the device functions above (macro scope: declared after them).
mod cluster_persistent;
mod cluster_tma_store;
mod hilbert;
mod host;
mod pingpong;
mod schedule;
mod tma_store;
mod tma_store_f32;
mod tma_store_wide;
pub use cluster_persistent::gemm_bf16_cluster_persistent;
pub use cluster_tma_store::gemm_bf16_cluster_tma_store;
pub use hilbert::{hilbert_order, wave_footprint};
pub(crate) use host::same_device;
pub use host::{gemm_bf16, gemm_bf16_kn, gemm_bf16_with_schedule, GemmBf16Variant, GemmError};
use host::{operand_map, resident_clusters, sms};
pub use pingpong::{
    consume_turns_bf16, consume_turns_f32, drain_turn, gemm_bf16_cluster_pingpong,
    gemm_bf16_pingpong, gemm_bf16_pingpong_f32,
};
pub use schedule::{pack_order, TileSchedule};
pub use tma_store::{
    gemm_bf16_out_bf16, gemm_bf16_out_bf16_with, gemm_bf16_out_bf16_with_schedule,
    gemm_bf16_tma_store, gemm_bf16_tma_store_x2, GemmBf16OutVariant,
};
pub use tma_store_f32::{
    gemm_bf16_cluster_tma_store_f32, gemm_bf16_tma_store_f32, gemm_bf16_tma_store_f32x2,
};
pub use tma_store_wide::gemm_bf16_tma_store_wide;

/// Rung 1: TMA + wgmma, one warpgroup, a `64 × BN` tile of `C` per block, k-tiles of 64 (one 128-byte
/// swizzle span of bf16). Launch `ceil(m / 64) · ceil(n / BN)` blocks of 128 threads; `a` maps `A` with box
/// 64 × 64, `b` maps `B` (`n × k`) with box `BN × 64`, both with 128-byte swizzle (the launcher checks).
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 128,
    instances = [64, 128]
)]
pub fn gemm_bf16_tma_wgmma<const BN: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    c: *mut f32,
) {
    let tiles_n: u32 = (n + BN - 1) / BN;
    let k_tiles: u32 = (k + 63) / 64;
    #[at(block[1])]
    let row0: u32 = (id() / tiles_n) * 64;
    #[at(block[1])]
    let col0: u32 = (id() % tiles_n) * BN;
    partition(
        c,
        block[1],
        |x| row0 * n + col0 + x,
        |c_blk| {
            group(block[1], || {
                let sa: Shared<[bf16; 64 * 64], Swizzle128>;
                let sb: Shared<[bf16; BN * 64], Swizzle128>;
                #[at(thread[1])]
                let mut acc = [0.0f32; BN / 2];
                for kt in 0..k_tiles {
                    async_(sa, |sa_async| {
                        async_(sb, |sb_async| match split(thread) {
                            1 => {
                                tma_load(sa_async, a, kt * 64, row0);
                                tma_load(sb_async, b, kt * 64, col0);
                            }
                        });
                    });
                    wgmma_k_tile::<0, { BN / 2 }>(&mut acc, sa, sb, false);
                }
                // The block is one warpgroup.
                partition(
                    c_blk,
                    thread[128],
                    |x| x,
                    |c_wg| {
                        group(thread[128], || {
                            wgmma_tile_to_f32::<{ BN / 2 }>(
                                &acc,
                                c_wg,
                                0,
                                m.max(row0) - row0,
                                n.max(col0) - col0,
                                n,
                                alpha,
                                beta,
                            );
                        });
                    },
                );
            });
        },
    );
}

/// Rung 1 for `B` given `k × n` row-major (N contiguous): the B tile is loaded as it is, 64 K rows of 64 N
/// elements (`Swizzle128Mn`), and wgmma reads it transposed; 64 × 64 tiles (an MN-major operand is one
/// 128-byte row of N per K). Launch `ceil(m / 64) · ceil(n / BN)` blocks of 128 threads; `a` maps `A` with box
/// 64 × 64, `b` maps `B` (`n × k`) with box `BN × 64`, both with 128-byte swizzle (the launcher checks).
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 128,
    instances = [64]
)]
pub fn gemm_bf16_tma_wgmma_kn<const BN: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    c: *mut f32,
) {
    let tiles_n: u32 = (n + BN - 1) / BN;
    let k_tiles: u32 = (k + 63) / 64;
    #[at(block[1])]
    let row0: u32 = (id() / tiles_n) * 64;
    #[at(block[1])]
    let col0: u32 = (id() % tiles_n) * BN;
    partition(
        c,
        block[1],
        |x| row0 * n + col0 + x,
        |c_blk| {
            group(block[1], || {
                let sa: Shared<[bf16; 64 * 64], Swizzle128>;
                let sb: Shared<[bf16; BN * 64], Swizzle128Mn>;
                #[at(thread[1])]
                let mut acc = [0.0f32; BN / 2];
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
                // The block is one warpgroup.
                partition(
                    c_blk,
                    thread[128],
                    |x| x,
                    |c_wg| {
                        group(thread[128], || {
                            wgmma_tile_to_f32::<{ BN / 2 }>(
                                &acc,
                                c_wg,
                                0,
                                m.max(row0) - row0,
                                n.max(col0) - col0,
                                n,
                                alpha,
                                beta,
                            );
                        });
                    },
                );
            });
        },
    );
}

/// Rungs 3 and 4: warp specialization over a `ring` of `STAGES` slots, a `128 × BN` tile of `C` per block of
/// 384 threads. Warpgroup 0 produces (one thread issues the TMA loads of a slot after waiting for it to be
/// drained), warpgroups 1 and 2 consume rows 0..64 and 64..128 (they wait for the slot to be filled, run four
/// wgmmas, and hand it back). `REGS = 1` moves registers from the producer (40) to the consumers (232).
/// Launch `ceil(m / 128) · ceil(n / BN)` blocks; `a` maps `A` with box 64 × 128, `b` maps `B` with box
/// 64 × `BN`, both with 128-byte swizzle.
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 384,
    instances = [(128, 4, 0), (256, 3, 1), (256, 4, 1)]
)]
pub fn gemm_bf16_ws<const BN: u32, const STAGES: u32, const REGS: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    c: *mut f32,
) {
    let tiles_n: u32 = (n + BN - 1) / BN;
    let k_tiles: u32 = (k + 63) / 64;
    #[at(block[1])]
    let row0: u32 = (id() / tiles_n) * 128;
    #[at(block[1])]
    let col0: u32 = (id() % tiles_n) * BN;
    partition(
        c,
        block[1],
        |x| row0 * n + col0 + x,
        |c_blk| {
            group(block[1], || {
                let sa: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
                let sb: Shared<[bf16; STAGES * BN * 64], Swizzle128>;
                // Warpgroup 0 produces; warpgroups 1 and 2 own rows 0..64 and 64..128 of the tile.
                #[at(thread[128])]
                let wg: u32 = id();
                partition(
                    c_blk,
                    thread[128],
                    |x| (wg - 1) * 64 * n + x,
                    |c_wg| {
                        ring(STAGES, (sa, sb), |r| match split(warpgroup) {
                            1 => {
                                if REGS == 1 {
                                    set_max_regs(40);
                                }
                                for kt in 0..k_tiles {
                                    fill(r, kt, |sa_s, sb_s| match split(thread) {
                                        1 => {
                                            tma_load(sa_s, a, kt * 64, row0);
                                            tma_load(sb_s, b, kt * 64, col0);
                                        }
                                    });
                                }
                            }
                            1 => {
                                if REGS == 1 {
                                    set_max_regs(232);
                                }
                                #[at(thread[1])]
                                let mut acc = [0.0f32; BN / 2];
                                drain_k_tiles::<0, { BN / 2 }>(r, &mut acc, 0, k_tiles);
                                wgmma_tile_to_f32::<{ BN / 2 }>(
                                    &acc,
                                    c_wg,
                                    0,
                                    m.max(row0) - row0,
                                    n.max(col0) - col0,
                                    n,
                                    alpha,
                                    beta,
                                );
                            }
                            1 => {
                                if REGS == 1 {
                                    set_max_regs(232);
                                }
                                #[at(thread[1])]
                                let mut acc = [0.0f32; BN / 2];
                                drain_k_tiles::<1, { BN / 2 }>(r, &mut acc, 0, k_tiles);
                                wgmma_tile_to_f32::<{ BN / 2 }>(
                                    &acc,
                                    c_wg,
                                    0,
                                    m.max(row0 + 64) - (row0 + 64),
                                    n.max(col0) - col0,
                                    n,
                                    alpha,
                                    beta,
                                );
                            }
                        });
                    },
                );
            });
        },
    );
}

/// Rung 6: rung 4 in clusters of two blocks that share the B tile: a cluster computes two 128-row tiles over
/// the same `BN` columns, block rank 0 loads B once for both with a multicast TMA load into the same slot of
/// both blocks, each block loads its own A; each block's consumers release a slot in both blocks. Launch
/// `2 · ceil(m / 256) · ceil(n / BN)` blocks (clusters of 2) of 384 threads.
///
/// The rest as rungs 3 and 4: warp specialization over a `ring` of `STAGES` slots, a `128 × BN` tile of `C` per block of
/// 384 threads. Warpgroup 0 produces (one thread issues the TMA loads of a slot after waiting for it to be
/// drained), warpgroups 1 and 2 consume rows 0..64 and 64..128 (they wait for the slot to be filled, run four
/// wgmmas, and hand it back). `REGS = 1` moves registers from the producer (40) to the consumers (232).
/// Launch `ceil(m / 128) · ceil(n / BN)` blocks; `a` maps `A` with box 64 × 128, `b` maps `B` with box
/// 64 × `BN`, both with 128-byte swizzle.
#[prism_kernel(
    requires(grid[1], block[2], block[1], warpgroup),
    threads = 384,
    cluster = 2,
    instances = [(256, 4, 1)]
)]
pub fn gemm_bf16_cluster<const BN: u32, const STAGES: u32, const REGS: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    c: *mut f32,
) {
    let tiles_n: u32 = (n + BN - 1) / BN;
    let k_tiles: u32 = (k + 63) / 64;
    #[at(block[1])]
    let blk: u32 = id();
    #[at(block[1])]
    let rank: u32 = blk % 2;
    #[at(block[1])]
    let row0: u32 = ((blk / 2) / tiles_n) * 256 + rank * 128;
    #[at(block[1])]
    let col0: u32 = ((blk / 2) % tiles_n) * BN;
    partition(
        c,
        block[1],
        |x| row0 * n + col0 + x,
        |c_blk| {
            group(block[1], || {
                let sa: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
                let sb: Shared<[bf16; STAGES * BN * 64], Swizzle128>;
                // Warpgroup 0 produces; warpgroups 1 and 2 own rows 0..64 and 64..128 of the tile.
                #[at(thread[128])]
                let wg: u32 = id();
                partition(
                    c_blk,
                    thread[128],
                    |x| (wg - 1) * 64 * n + x,
                    |c_wg| {
                        ring(STAGES, (sa, sb), |r| match split(warpgroup) {
                            1 => {
                                if REGS == 1 {
                                    set_max_regs(40);
                                }
                                for kt in 0..k_tiles {
                                    fill(r, kt, |sa_s, sb_s| match split(thread) {
                                        1 => {
                                            tma_load(sa_s, a, kt * 64, row0);
                                            if rank == 0 {
                                                tma_load_multicast(sb_s, b, kt * 64, col0);
                                            }
                                        }
                                    });
                                }
                            }
                            1 => {
                                if REGS == 1 {
                                    set_max_regs(232);
                                }
                                #[at(thread[1])]
                                let mut acc = [0.0f32; BN / 2];
                                drain_k_tiles::<0, { BN / 2 }>(r, &mut acc, 0, k_tiles);
                                wgmma_tile_to_f32::<{ BN / 2 }>(
                                    &acc,
                                    c_wg,
                                    0,
                                    m.max(row0) - row0,
                                    n.max(col0) - col0,
                                    n,
                                    alpha,
                                    beta,
                                );
                            }
                            1 => {
                                if REGS == 1 {
                                    set_max_regs(232);
                                }
                                #[at(thread[1])]
                                let mut acc = [0.0f32; BN / 2];
                                drain_k_tiles::<1, { BN / 2 }>(r, &mut acc, 0, k_tiles);
                                wgmma_tile_to_f32::<{ BN / 2 }>(
                                    &acc,
                                    c_wg,
                                    0,
                                    m.max(row0 + 64) - (row0 + 64),
                                    n.max(col0) - col0,
                                    n,
                                    alpha,
                                    beta,
                                );
                            }
                        });
                    },
                );
            });
        },
    );
}

/// Rung 5: rung 4 on a persistent grid. Each block takes tiles `blk, blk + grid, ..` of the tile order
/// [`tile_at`]`::<GROUP_M>` and keeps one ring running across its tiles: the ring's step counts k-tiles over
/// all of them, and the first k-step of each tile overwrites the accumulators (`accumulate` false). The
/// order is grouped (`GROUP_M` tile rows at a time, so concurrently running blocks share A and B panels in
/// L2), or with `GROUP_M` = 0 the table `sched`, whose entry `t` is tile `t`'s `(tile row << 16) | tile
/// column` in the `ceil(m / 128) × ceil(n / BN)` grid (a [`TileSchedule`], by default a generalized Hilbert
/// curve, as published Hopper GEMMs use: a curve is awkward to compute per tile on the device, a table
/// costs one cached load per tile). A table must hold every tile exactly once (the host API checks; an entry
/// outside the grid computes nothing: its loads are TMA's zero fill and its stores are guarded off); the
/// grouped instances never read `sched`, which may then be empty. Launch `min(tiles, SMs)` blocks of 384
/// threads; `a` maps `A` with box 64 × 128, `b` maps `B` with box 64 × `BN`, both with 128-byte swizzle.
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 384,
    instances = [(128, 4, 8), (256, 4, 8), (256, 4, 0)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_persistent<const BN: u32, const STAGES: u32, const GROUP_M: u32>(
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
                                                      // Every block may write any tile of C: which ones is decided at run time by the tile order, whose
                                                      // tiles are disjoint (block `blk` takes the tiles `blk, blk + grid, ..` of the order).
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
                                fill_tiles::<BN, GROUP_M>(
                                    r, a, b, sched, blk, nblk, iters, tiles_m, tiles_n, k_tiles,
                                );
                            }
                            1 => {
                                set_max_regs(232);
                                consume_tiles_f32::<0, { BN / 2 }, GROUP_M>(
                                    r, c_wg, sched, blk, nblk, iters, tiles_m, tiles_n, k_tiles,
                                    128, 0, m, n, alpha, beta,
                                );
                            }
                            1 => {
                                set_max_regs(232);
                                consume_tiles_f32::<1, { BN / 2 }, GROUP_M>(
                                    r, c_wg, sched, blk, nblk, iters, tiles_m, tiles_n, k_tiles,
                                    128, 0, m, n, alpha, beta,
                                );
                            }
                        });
                    },
                );
            });
        },
    );
}
