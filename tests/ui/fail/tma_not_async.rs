// TMA writes shared memory asynchronously: its destination is the `async_` name of the allocation, so no
// code can read the tile before the copy has landed.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
fn k(a: TensorMap<bf16, 2>) {
    group(block[1], || {
        let s: Shared<[bf16; 64 * 64], Swizzle128>;
        match split(thread) {
            1 => {
                tma_load(s, a, 0, 0);
            }
        }
    });
}

fn main() {}
