// Thread-local arrays cannot be partitioned: only shared and global memory can.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k() {
    group(block[1], || {
        let mut a = [0u32; 4];
        partition(a, thread[1], |k| k, |a_t| {});
    });
}

fn main() {}
