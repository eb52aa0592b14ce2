// 240000 bytes of shared memory exceed the H100's 232448 bytes per block.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k() {
    group(block[1], || {
        let s: Shared<[f32; 60000]>;
    });
}

fn main() {}
