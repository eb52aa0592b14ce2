// A `SharedMut` parameter at thread[128] is written by one warpgroup: the block's whole allocation (at
// block[1]) must first be handed to the warpgroup with `partition`, as for any mutable pointer.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[128]))]
fn store(acc: &[f32; 32], e: SharedMut<[bf16; 64 * 64], Swizzle128>) {
    stmatrix_bf16(e, &acc, 0);
}

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
fn k() {
    group(block[1], || {
        let e: Shared<[bf16; 64 * 64], Swizzle128>;
        #[at(thread[1])]
        let acc = [1.0f32; 32];
        group(thread[128], || {
            store(&acc, e);
        });
    });
}

fn main() {}
