// Paper Fig. 7, example 2: `block[5]` cannot be replicated evenly inside `block[6]`.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[6], block[1], thread[1]))]
fn k() {
    group(block[6], || {
        group(block[5], || {});
    });
}

fn main() {}
