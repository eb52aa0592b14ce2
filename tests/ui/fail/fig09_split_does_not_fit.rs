// Paper Fig. 9: the arms of the split ask for 4 + 1 threads, but thread[4] has 4.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[4]))]
fn k() {
    group(block[1], || {
        group(thread[4], || {
            match split(thread) {
                4 => {}
                1 => {}
            }
        });
    });
}

fn main() {}
