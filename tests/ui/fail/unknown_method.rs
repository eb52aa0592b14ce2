// Methods are the math intrinsics only.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(x: f32) {
    #[at(thread[1])]
    let y: f32 = x.tanh();
}

fn main() {}
