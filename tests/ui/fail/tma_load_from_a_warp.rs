// A TMA load copies a whole box: issued by a whole warp, 32 threads would copy the same box into the same
// allocation (duplicate writes, and 32 times the transaction bytes the mbarrier expects).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
pub fn warp_tma(src: TensorMap<bf16, 2>, dst: TensorMapMut<bf16, 2>) {
    group(block[1], || {
        let s: Shared<[bf16; 64 * 64], Swizzle128>;
        async_(s, |s_async| match split(warp) {
            1 => {
                tma_load(s_async, src, 0, 0);
            }
        });
        match split(thread) {
            1 => {
                tma_store(dst, s, 0, 0);
            }
        }
    });
}

fn main() {}
