// An exchange through global memory with one `sync_cluster()` per iteration: the next iteration's write
// of a block's half races with the other block's read of it. SYNC-GRID notes the read, later in the loop body.
use prism_macros::prism_kernel;
#[prism_kernel(requires(grid[1], block[2], block[1], thread[1]), threads = 64, cluster = 2)]
pub fn iter_xchg(x: *const f32, g: *mut f32, out: *mut f32, iters: u32) {
    #[at(block[2])]
    let cl: u32 = id();
    #[at(block[1])]
    let b: u32 = id();
    partition(g, block[2], |i| cl * 128 + i, |g_cl| {
        partition(out, block[1], |i| b * 64 + i, |o_blk| {
            group(block[2], || {
                #[at(block[1])]
                let r: u32 = id();
                #[at(thread[1])]
                let mut v: f32 = 0.0;
                group(block[1], || {
                    #[at(thread[1])]
                    let t: u32 = id();
                    group(thread[1], || {
                        v = x[b * 64 + t];
                    });
                });
                for it in 0..iters {
                    partition(g_cl, block[1], |i| r * 64 + i, |g_b| {
                        group(block[1], || {
                            #[at(thread[1])]
                            let t: u32 = id();
                            partition(g_b, thread[1], |i| t + i, |g_t| {
                                group(thread[1], || {
                                    g_t[0] = v;
                                });
                            });
                        });
                    });
                    sync_cluster();
                    group(block[1], || {
                        #[at(thread[1])]
                        let t: u32 = id();
                        group(thread[1], || {
                            v = g_cl[(1 - r) * 64 + (t + 1) % 64] + 1.0;
                        });
                    });
                }
                group(block[1], || {
                    #[at(thread[1])]
                    let t: u32 = id();
                    partition(o_blk, thread[1], |i| t + i, |o_t| {
                        group(thread[1], || {
                            o_t[0] = v;
                        });
                    });
                });
            });
        });
    });
}

fn main() {}
