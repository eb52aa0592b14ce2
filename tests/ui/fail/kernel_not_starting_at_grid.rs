// A kernel's perspective bound starts at grid[1].
use prism_macros::prism_kernel;

#[prism_kernel(requires(block[1], thread[32]))]
fn k() {}

fn main() {}
