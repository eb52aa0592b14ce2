// A loop bound must not read a value narrower than the code perspective.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k() {
    group(block[1], || {
        #[at(thread[1])]
        let n: u32 = id();
        let mut acc: u32 = 0;
        for i in 0..n {
            acc += 0;
        }
    });
}

fn main() {}
