// A `Ring<..>` parameter names the element types of the ring's memories, in order: a ring of f32 memories
// cannot be passed where a ring of two bf16 memories is expected.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[128]))]
fn consume(r: Ring<(bf16, bf16)>, k_tiles: u32) {
    for kt in 0..k_tiles {
        drain(r, kt, |sa_s, sb_s| {});
    }
}

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256)]
fn k(x: *const f32, k_tiles: u32) {
    group(block[1], || {
        let s: Shared<[f32; 2 * 1024]>;
        ring(2, s, |r| match split(warpgroup) {
            1 => {
                for kt in 0..k_tiles {
                    fill(r, kt, |s_s| match split(thread) {
                        1 => {
                            cp_async_bulk(s_s, 0, x, 0, 1024);
                        }
                    });
                }
            }
            1 => {
                consume(r, k_tiles);
            }
        });
    });
}

fn main() {}
