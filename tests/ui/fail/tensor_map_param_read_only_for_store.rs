// A device function that stores through its map takes a `TensorMapMut`: a kernel's read-only `TensorMap`
// cannot be passed to it.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[128]))]
fn store(e: SharedMut<[bf16; 64 * 64], Swizzle128>, d: TensorMapMut<bf16, 2>) {
    match split(thread) {
        1 => {
            tma_store(d, e, 0, 0);
        }
    }
}

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
fn k(d: TensorMap<bf16, 2>) {
    group(block[1], || {
        let e: Shared<[bf16; 64 * 64], Swizzle128>;
        partition(e, thread[128], |x| x, |e_w| {
            group(thread[128], || {
                store(e_w, d);
            });
        });
    });
}

fn main() {}
