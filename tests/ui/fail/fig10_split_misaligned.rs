// Paper Fig. 10: in thread[3], an arm of 2 threads after an arm of 1 is not aligned to 2.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[3]))]
fn k() {
    group(block[1], || {
        group(thread[3], || {
            match split(thread) {
                1 => {}
                2 => {}
            }
        });
    });
}

fn main() {}
