// PTX is produced at compile time: a kernel with const generics lists the instances to build.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k<const N: u32>(c: *mut f32) {}

fn main() {}
