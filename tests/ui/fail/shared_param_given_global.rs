// A device function's `Shared<[T; N], L>` parameter is the caller's shared memory (a wgmma operand, say):
// a global pointer cannot stand in for it.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[128]))]
fn first(acc: &mut [f32; 32], a: Shared<[bf16; 64 * 64], Swizzle128>, b: Shared<[bf16; 64 * 64], Swizzle128>) {
    wgmma_bf16(acc, a, 0, b, 0);
}

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
fn k(g: *const bf16) {
    group(block[1], || {
        let sb: Shared<[bf16; 64 * 64], Swizzle128>;
        #[at(thread[1])]
        let mut acc = [0.0f32; 32];
        group(thread[128], || {
            first(&mut acc, g, sb);
        });
    });
}

fn main() {}
