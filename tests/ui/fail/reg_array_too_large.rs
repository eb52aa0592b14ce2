// Thread-local arrays live in registers: at most 4096 elements.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k() {
    #[at(thread[1])]
    let a = [0u32; 5000];
}

fn main() {}
