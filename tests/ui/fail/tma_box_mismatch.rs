// A tensor map has one box: loading it into allocations of two shapes would make the mbarrier expect bytes
// the copy does not deliver (or the copy overrun the smaller allocation).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
fn k(a: TensorMap<bf16, 2>) {
    group(block[1], || {
        let s1: Shared<[bf16; 64 * 64], Swizzle128>;
        let s2: Shared<[bf16; 128 * 64], Swizzle128>;
        async_(s1, |s1_async| {
            async_(s2, |s2_async| {
                match split(thread) {
                    1 => {
                        tma_load(s1_async, a, 0, 0);
                        tma_load(s2_async, a, 0, 64);
                    }
                }
            });
        });
    });
}

fn main() {}
