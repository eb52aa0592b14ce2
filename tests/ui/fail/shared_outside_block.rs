// Shared memory is allocated only at block[1].
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), smem = 1024)]
fn k() {
    group(block[1], || {
        group(thread[1], || {
            let s: Shared<[f32; 256]>;
        });
    });
}

fn main() {}
