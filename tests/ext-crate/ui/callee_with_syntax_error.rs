// A device function with an error is reported at its definition, and its callers get one error at the call.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[32]))]
pub fn broken(x: u32) {
    let y: u32 = x + ;
}

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn caller(n: u32) {
    group(thread[32], || {
        broken(n);
    });
}

fn main() {}
