// sync_threads is a block collective: it needs block[1], not one warp.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k() {
    group(block[1], || {
        group(thread[32], || {
            sync_threads();
        });
    });
}

fn main() {}
