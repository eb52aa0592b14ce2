// Legal Hopper counterparts of the WGMMA, TMA, RING, SETMAXNREG and CLUSTER cases: a warp-specialized tile
// GEMM (a producer warpgroup with TMA, a consumer warpgroup with wgmma) in 2-block clusters.
use prism_macros::prism_kernel;

#[prism_kernel(
    requires(grid[1], block[2], block[1], warpgroup),
    threads = 256,
    cluster = 2
)]
fn ws(a: TensorMap<bf16, 2>, b: TensorMap<bf16, 2>, d: *mut f32, n: u32, k_tiles: u32) {
    #[at(block[1])]
    let blk: u32 = id();
    partition(d, block[1], |x| blk * 128 * n + x, |d_blk| {
        group(block[1], || {
            let sa: Shared<[bf16; 2 * 128 * 64], Swizzle128>;
            let sb: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
            #[at(thread[128])]
            let wg: u32 = id();
            partition(d_blk, thread[128], |x| (wg - 1) * 64 * n + x, |d_wg| {
                ring(2, (sa, sb), |r| match split(warpgroup) {
                    1 => {
                        set_max_regs(40);
                        for kt in 0..k_tiles {
                            fill(r, kt, |sa_s, sb_s| match split(thread) {
                                1 => {
                                    tma_load(sa_s, a, kt * 64, blk * 128);
                                    tma_load(sb_s, b, kt * 64, 0);
                                }
                            });
                        }
                    }
                    1 => {
                        set_max_regs(232);
                        #[at(thread[1])]
                        let mut acc = [0.0f32; 32];
                        for kt in 0..k_tiles {
                            drain(r, kt, |sa_s, sb_s| {
                                for kk in 0..4 {
                                    wgmma_bf16(&mut acc, sa_s, kk * 16, sb_s, kk * 16);
                                }
                            });
                        }
                        #[at(thread[1])]
                        let t: u32 = id();
                        partition(d_wg, thread[1], |x| t + x, |d_t| {
                            group(thread[1], || {
                                d_t[0] = acc[0];
                            });
                        });
                    }
                });
            });
        });
    });
    group(block[2], || {
        sync_cluster();
    });
}

fn main() {}
