// A TMA store of the block's allocation from every thread of a warpgroup: each would store the same box.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
pub fn every_thread(src: TensorMap<bf16, 2>, dst: TensorMapMut<bf16, 2>) {
    group(block[1], || {
        let s: Shared<[bf16; 64 * 64], Swizzle128>;
        async_(s, |s_async| match split(thread) {
            1 => {
                tma_load(s_async, src, 0, 0);
            }
        });
        group(thread[1], || {
            tma_store(dst, s, 0, 0);
        });
    });
}

fn main() {}
