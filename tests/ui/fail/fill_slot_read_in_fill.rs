// Reading a slot inside the `fill` that loads it: ASYNC-ONLY says it is a fill's slot and where to read it.
use prism_macros::prism_kernel;
#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256)]
pub fn k(a: TensorMap<bf16, 2>, k_tiles: u32) {
    group(block[1], || {
        let sa: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
        ring(2, sa, |r| match split(warpgroup) {
            1 => {
                for kt in 0..k_tiles {
                    fill(r, kt, |s| match split(thread) { 1 => { tma_load(s, a, kt * 64, 0); let v: f32 = s[0] as f32; } });
                }
            }
            1 => {
                for kt in 0..k_tiles { drain(r, kt, |s| { }); }
            }
        });
    });
}
fn main() {}
