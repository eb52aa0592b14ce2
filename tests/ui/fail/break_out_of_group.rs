// `break` cannot leave a group body: the group's threads would not reach its end together.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(n: u32) {
    for i in 0..n {
        group(thread[1], || {
            break;
        });
    }
}

fn main() {}
