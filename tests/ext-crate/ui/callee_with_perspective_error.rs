// A device function that breaks a perspective rule is rejected at its definition (sync_threads needs
// block[1], the function only guarantees thread[32]).
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[32]))]
pub fn bad_barrier(x: u32) {
    sync_threads();
}

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn caller(n: u32) {
    group(thread[32], || {
        bad_barrier(n);
    });
}

fn main() {}
