// A wgmma k-step reads 16 elements of K: offsets into a swizzled K-major tile are multiples of 16 within a
// row, and of 8 whole rows.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
fn k() {
    group(block[1], || {
        let sa: Shared<[bf16; 64 * 64], Swizzle128>;
        let sb: Shared<[bf16; 64 * 64], Swizzle128>;
        #[at(thread[1])]
        let mut acc = [0.0f32; 32];
        wgmma_bf16(&mut acc, sa, 8, sb, 0);
    });
}

fn main() {}
