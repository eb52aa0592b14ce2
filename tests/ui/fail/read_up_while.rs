// A while condition must not read a value narrower than the code perspective.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k() {
    group(block[1], || {
        #[at(thread[1])]
        let mut i: u32 = id();
        while i < 10 {
            i += 1;
        }
    });
}

fn main() {}
