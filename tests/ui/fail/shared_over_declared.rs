// The kernel declares 1024 bytes of shared memory but allocates 2048.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), smem = 1024)]
fn k() {
    group(block[1], || {
        let a: Shared<[f32; 256]>;
        let b: Shared<[f32; 256]>;
    });
}

fn main() {}
