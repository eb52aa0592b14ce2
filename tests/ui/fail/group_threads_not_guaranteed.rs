// group(thread[64]) needs blocks made of thread[64]s; the kernel only guarantees thread[32]s.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k() {
    group(block[1], || {
        group(thread[64], || {});
    });
}

fn main() {}
