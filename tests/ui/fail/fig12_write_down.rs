// Paper Fig. 12: writing a thread[1] value into a block[1] variable.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(p: *const u32) {
    group(block[1], || {
        #[at(thread[1])]
        let tid: u32 = id();
        #[at(thread[1])]
        let x: bool = p[tid] > 0;
        let mut y: bool = false;
        y = x;
        if y {
            sync_threads();
        }
    });
}

fn main() {}
