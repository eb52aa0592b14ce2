// Paper Fig. 7, example 1: `group(block[1])` inside `thread[2]` code broadens the perspective.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[2]))]
fn k() {
    group(block[1], || {
        group(thread[2], || {
            group(block[1], || {});
        });
    });
}

fn main() {}
