// Shared memory belongs to a block: not allocatable at grid[1].
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), smem = 1024)]
fn k() {
    let s: Shared<[f32; 256]>;
}

fn main() {}
