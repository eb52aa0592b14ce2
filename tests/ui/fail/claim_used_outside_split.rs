// A claimed name is used inside a split arm of the claimed perspective, not by the whole block.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]), smem = 256)]
fn k() {
    group(block[1], || {
        let s: Shared<[f32; 64]>;
        claim(s, thread[32], |s_warp| {
            #[at(thread[1])]
            let v: f32 = s_warp[0];
        });
    });
}

fn main() {}
