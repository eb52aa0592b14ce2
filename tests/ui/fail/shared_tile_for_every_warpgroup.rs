// `|x| x` hands the whole tile to every warpgroup of the block: both would write it (a race), so the
// view is used as a claim, by one split arm at thread[128].
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256, smem = 16384)]
fn k() {
    group(block[1], || {
        let e: Shared<[f32; 4096]>;
        partition(e, thread[128], |x| x, |e_w| {
            group(thread[128], || {
                #[at(thread[1])]
                let t: u32 = id();
                partition(e_w, thread[1], |i| t * 32 + i, |e_t| {
                    group(thread[1], || {
                        e_t[0] = 1.0;
                    });
                });
            });
        });
    });
}

fn main() {}
