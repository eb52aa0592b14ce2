//! The ladder's top: rung 7's bf16 epilogue (stmatrix into swizzled boxes, TMA stores) on rungs 5 + 6
//! (persistent 2-block clusters in grouped or table-driven tile order, B multicast): the structure of the fastest published
//! Hopper GEMMs.

// The kernel's device functions are the crate's own, found by the macro; its types are the language's.
use prism_macros::prism_kernel;

/// Rungs 5 + 6 + 7: [`super::gemm_bf16_cluster_persistent`]'s schedule (clusters of two blocks take 256 ×
/// `BN` tiles in [`super::tile_at`]`::<GROUP_M>` order, grouped or from the table `sched`, rank 0 the top 128 rows and rank 1 the bottom 128, rank 0 multicasting the
/// B panel into both blocks' ring slots: [`super::fill_cluster_tiles`]) with [`super::gemm_bf16_tma_store`]'s
/// epilogue (each consumer warpgroup scales its accumulators, writes them as bf16 into its own 64 × 64 box
/// with `stmatrix_bf16` and stores the box with `tma_store`, which clips at `D`'s edges). Launch `2 ·
/// min(cluster tiles, resident clusters)` blocks of 384 threads
/// ([`prism_runtime::Device::max_active_clusters`]); maps as for [`super::gemm_bf16_tma_store`].
#[prism_kernel(
    requires(grid[1], block[2], block[1], warpgroup),
    threads = 384,
    cluster = 2,
    instances = [(256, 4, 8), (256, 4, 0)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_cluster_tma_store<const BN: u32, const STAGES: u32, const GROUP_M: u32>(
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
                                fill_cluster_tiles::<BN, GROUP_M>(
                                    r, a, b, sched, cl, clusters, iters, tiles_m, tiles_n, k_tiles,
                                    rank,
                                );
                            }
                            1 => {
                                set_max_regs(232);
                                consume_tiles_bf16::<0, { BN / 2 }, GROUP_M>(
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
                                consume_tiles_bf16::<1, { BN / 2 }, GROUP_M>(
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
