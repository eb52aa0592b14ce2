// Assignment only to `let mut` variables.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k() {
    let a: u32 = 1;
    a = 2;
}

fn main() {}
