// With exactly 128 threads per block there are 4 warps: one producer and four consumers do not fit.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warp), threads = 128)]
fn k() {
    group(block[1], || {
        match split(warp) {
            1 => {}
            4 => {}
        }
    });
}

fn main() {}
