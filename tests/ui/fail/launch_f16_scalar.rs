// f16/bf16 are storage types: a kernel takes them through memory, not as scalar arguments.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(h: f16) {}

fn main() {}
