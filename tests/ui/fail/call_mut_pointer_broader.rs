// A non-const pointer argument must live at exactly the parameter's perspective.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[32]))]
pub fn fill(#[at(thread[32])] out: *mut f32) {
    #[at(thread[1])]
    let lane: u32 = id();
    partition(out, thread[1], |k| lane + k, |o| {
        group(thread[1], || {
            o[0] = 1.0;
        });
    });
}

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k(c: *mut f32) {
    group(block[1], || {
        group(thread[32], || {
            fill(c);
        });
    });
}

fn main() {}
