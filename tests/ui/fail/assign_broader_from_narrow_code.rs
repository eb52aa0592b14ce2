// Writing a block[1] variable from thread[1] code would let the threads of the block disagree.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k() {
    group(block[1], || {
        let mut total: u32 = 0;
        group(thread[1], || {
            total = 1;
        });
    });
}

fn main() {}
