// Inside a claim, the claimed memory is reached only through the new name.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]), smem = 256)]
fn k() {
    group(block[1], || {
        let s: Shared<[f32; 64]>;
        claim(s, thread[32], |s_w| match split(warp) {
            1 => {
                #[at(thread[1])]
                let v: f32 = s[0];
            }
        });
    });
}

fn main() {}
