// Undefined names are reported with a suggestion.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(count: u32) {
    let y: u32 = coutn + 1;
}

fn main() {}
