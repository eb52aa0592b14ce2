// `id()` at thread[1] inside `group(thread[1], ..)`: the code is one thread, so the index is always 0 (a
// user expected the thread's rank in the block).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 64)]
pub fn k(out: *mut f32) {
    partition(out, block[1], |j| j, |o_blk| {
        group(block[1], || {
            #[at(thread[1])]
            let t: u32 = id();
            partition(o_blk, thread[1], |j| t + j, |o_t| {
                group(thread[1], || {
                    #[at(thread[1])]
                    let u: u32 = id();
                    o_t[0] = (t * 100 + u) as f32;
                });
            });
        });
    });
}

fn main() {}
