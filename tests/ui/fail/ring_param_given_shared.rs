// A `Ring<..>` parameter takes a ring by name, not the shared allocation it was made of.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[128]))]
fn consume(r: Ring<f32>, k_tiles: u32) {
    for kt in 0..k_tiles {
        drain(r, kt, |s_s| {});
    }
}

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
fn k(k_tiles: u32) {
    group(block[1], || {
        let s: Shared<[f32; 2 * 1024]>;
        group(thread[128], || {
            consume(s, k_tiles);
        });
    });
}

fn main() {}
