// A kernel takes global memory; shared memory is the block's own (`let s: Shared<..>;`).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 32)]
fn k(s: SharedMut<[f32; 32]>) {}

fn main() {}
