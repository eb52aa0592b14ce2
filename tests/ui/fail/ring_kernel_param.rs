// A ring is the block's own, declared with `ring(..)`: a kernel cannot take one.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 32)]
fn k(r: Ring<f32>) {}

fn main() {}
