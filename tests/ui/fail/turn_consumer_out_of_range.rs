// The consumers of a ring drained in turns are 0 (first) and 1.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 384)]
fn pp(a: TensorMap<bf16, 2>, b: TensorMap<bf16, 2>, d: *mut f32, k_tiles: u32) {
    partition(d, block[1], |x| x, |d_blk| {
        group(block[1], || {
            let sa: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
            let sb: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
            partition(d_blk, thread[128], |x| x, |d_wg| {
                ring(2, (sa, sb), |r| match split(warpgroup) {
                    1 => {
                        for kt in 0..2 * k_tiles {
                            fill(r, kt, |sa_s, sb_s| match split(thread) {
                                1 => {
                                    tma_load(sa_s, a, kt * 64, 0);
                                    tma_load(sb_s, b, kt * 64, 0);
                                }
                            });
                        }
                    }
                    1 => {
                        #[at(thread[1])]
                        let mut acc = [0.0f32; 32];
                        turn(r, 0, || {
                            for kt in 0..k_tiles {
                                drain(r, kt, |sa_s, sb_s| {
                                    wgmma_bf16(&mut acc, sa_s, 0, sb_s, 0);
                                });
                            }
                        });
                        #[at(thread[1])]
                        let t: u32 = id();
                        partition(d_wg, thread[1], |x| t + x, |d_t| {
                            group(thread[1], || {
                                d_t[0] = acc[0];
                            });
                        });
                    }
                    1 => {
                        #[at(thread[1])]
                        let mut acc = [0.0f32; 32];
                        turn(r, 2, || {
                            for kt in 0..k_tiles {
                                drain(r, k_tiles + kt, |sa_s, sb_s| {
                                    wgmma_bf16(&mut acc, sa_s, 0, sb_s, 0);
                                });
                            }
                        });
                        #[at(thread[1])]
                        let t: u32 = id();
                        partition(d_wg, thread[1], |x| 128 + t + x, |d_t| {
                            group(thread[1], || {
                                d_t[0] = acc[0];
                            });
                        });
                    }
                });
            });
        });
    });
}

fn main() {}
