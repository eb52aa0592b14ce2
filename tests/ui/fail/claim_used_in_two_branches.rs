// A claimed name is usable in exactly one branch of a split.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64, smem = 256)]
fn k() {
    group(block[1], || {
        let s: Shared<[f32; 64]>;
        #[at(thread[1])]
        let t: u32 = id();
        claim(s, thread[32], |s_warp| {
            match split(thread) {
                32 => {
                    partition(s_warp, thread[1], |i| t % 32 + i, |s_t| {
                        group(thread[1], || {
                            s_t[0] = 1.0;
                        });
                    });
                }
                32 => {
                    partition(s_warp, thread[1], |i| t % 32 + i, |s_t| {
                        group(thread[1], || {
                            s_t[0] = 2.0;
                        });
                    });
                }
            }
        });
    });
}

fn main() {}
