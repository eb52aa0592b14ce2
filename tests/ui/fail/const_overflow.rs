// Constant arithmetic is checked in the type it is computed in (rustc rejects these too): no silently
// wrapped values.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(y: *mut i32) {
    #[at(thread[1])]
    let big: i32 = 2147483647 * 2;
    #[at(thread[1])]
    let q: i64 = -9223372036854775808i64 / -1;
}

fn main() {}
