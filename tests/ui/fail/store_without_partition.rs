// Writes to memory are made from a thread[1] view of it: partition the pointer first.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(c: *mut f32) {
    #[at(thread[1])]
    let i: u32 = id();
    group(thread[1], || {
        c[i] = 1.0;
    });
}

fn main() {}
