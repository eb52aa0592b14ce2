// An offset that is constant after unrolling but negative for some steps (kk = 2, 3): the error names the value.
use prism_macros::prism_kernel;
#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
pub fn k(a: TensorMap<bf16, 2>) {
    group(block[1], || {
        let sa: Shared<[bf16; 64 * 64], Swizzle128>;
        #[at(thread[1])]
        let mut acc = [0.0f32; 32];
        async_(sa, |x| match split(thread) { 1 => { tma_load(x, a, 0, 0); } });
        for kk in 0..4 {
            wgmma_bf16(&mut acc, sa, 16 - kk * 16, sa, 0);
        }
    });
}
fn main() {}
