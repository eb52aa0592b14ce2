// An m64nNk16 accumulator has N/2 f32 registers per thread, N a multiple of 8 up to 256.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
fn k() {
    group(block[1], || {
        let sa: Shared<[bf16; 64 * 64], Swizzle128>;
        let sb: Shared<[bf16; 64 * 64], Swizzle128>;
        #[at(thread[1])]
        let mut acc = [0.0f32; 6];
        wgmma_bf16(&mut acc, sa, 0, sb, 0);
    });
}

fn main() {}
