// Paper Fig. 11: branching on a thread[1] value in block[1] code, around a block barrier.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(x: *const u32) {
    group(block[1], || {
        #[at(thread[1])]
        let tid: u32 = id();
        #[at(thread[1])]
        let flag: bool = x[tid] > 0;
        if flag {
            sync_threads();
        }
    });
}

fn main() {}
