// A scalar argument may be broader than the parameter, never narrower.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[32]))]
pub fn uses_count(#[at(thread[32])] n: u32) {
    let m: u32 = n + 1;
}

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k() {
    group(block[1], || {
        #[at(thread[1])]
        let tid: u32 = id();
        group(thread[32], || {
            uses_count(tid);
        });
    });
}

fn main() {}
