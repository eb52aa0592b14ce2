// `smem` is a byte count from 0 to the device's limit per block: a negative value or one above the limit
// is rejected where it is written, whatever the kernel allocates.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), smem = 999999999)]
fn too_much(y: *mut u32) {}

#[prism_kernel(requires(grid[1], block[1], thread[1]), smem = -1)]
fn negative(y: *mut u32) {}

fn main() {}
