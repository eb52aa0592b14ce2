// wgmma reads its shared operands through descriptors of a swizzled K-major layout: the allocation declares it.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
fn k() {
    group(block[1], || {
        let sa: Shared<[bf16; 64 * 64]>;
        let sb: Shared<[bf16; 64 * 64], Swizzle128>;
        #[at(thread[1])]
        let mut acc = [0.0f32; 32];
        wgmma_bf16(&mut acc, sa, 0, sb, 0);
    });
}

fn main() {}
