// `loop` is not part of Prism: say `while true` and `break`.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k() {
    loop {}
}

fn main() {}
