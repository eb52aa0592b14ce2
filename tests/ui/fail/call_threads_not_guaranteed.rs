// The callee needs blocks made of thread[64]s; the kernel only guarantees thread[32]s.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(block[1], thread[64]))]
pub fn needs_pairs_of_warps() {}

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k() {
    group(block[1], || {
        needs_pairs_of_warps();
    });
}

fn main() {}
