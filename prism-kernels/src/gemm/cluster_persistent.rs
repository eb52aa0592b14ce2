//! Rungs 5 and 6 together: the persistent, grouped tile schedule of [`super::gemm_bf16_persistent`] run by
//! 2-block clusters that share `B` by TMA multicast, as in [`super::gemm_bf16_cluster`]. The structure of
//! the fastest published Hopper GEMMs (fast.cu's kernels 11–12: clusters, persistent blocks, an L2-aware
//! tile order).

// The kernel's device functions (`tile_at`, `wgmma_k_tile`, ..) are the crate's own, found by the
// macro; its types are the language's.
use prism_macros::prism_kernel;

/// Rung 5 + 6: each cluster of two blocks takes 256 × `BN` tiles `c, c + clusters, ..` (`c` = block / 2) of
/// the order [`super::tile_at`]`::<GROUP_M>` on the grid of cluster tiles (grouped, `GROUP_M` tile rows at a
/// time, or with `GROUP_M` = 0 the table `sched`, as for [`super::gemm_bf16_persistent`]); block rank 0 computes the tile's top 128 rows, rank 1 the
/// bottom 128. Both blocks load their own rows of `A`; rank 0 multicasts the shared `B` panel into both
/// blocks' ring slots, so `B` crosses L2 once per cluster. One ring runs across a block's tiles (its step
/// counts k-tiles over all of them), consumers reset their accumulators on each tile's first k-step, and
/// both blocks of a cluster run the same number of steps (the schedule is per cluster), as multicast needs.
/// The producer is [`super::fill_cluster_tiles`]. Launch `2 · min(cluster tiles, resident clusters)` blocks
/// of 384 threads ([`prism_runtime::Device::max_active_clusters`]); `a` maps `A` with box 64 × 128, `b`
/// maps `B` with box 64 × `BN`, both with 128-byte swizzle.
#[prism_kernel(
    requires(grid[1], block[2], block[1], warpgroup),
    threads = 384,
    cluster = 2,
    instances = [(256, 4, 8), (256, 4, 0)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_cluster_persistent<const BN: u32, const STAGES: u32, const GROUP_M: u32>(
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
                                                             // Every block may write any tile of C: the schedule above gives each (cluster, rank) disjoint rows.
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
                                fill_cluster_tiles::<BN, GROUP_M>(
                                    r, a, b, sched, cl, clusters, iters, tiles_m, tiles_n, k_tiles,
                                    rank,
                                );
                            }
                            1 => {
                                set_max_regs(232);
                                consume_tiles_f32::<0, { BN / 2 }, GROUP_M>(
                                    r,
                                    c_wg,
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
                                consume_tiles_f32::<1, { BN / 2 }, GROUP_M>(
                                    r,
                                    c_wg,
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
            });
        },
    );
}
