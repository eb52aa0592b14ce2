// Operands of an arithmetic operator have one type: convert with `as`.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(n: u32, x: f32) {
    let y: f32 = x * n;
}

fn main() {}
