// A bulk copy completes on a block-wide mbarrier: its async_ target is a shared allocation at block[1], not a
// warp's claim of it.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64, smem = 256)]
fn k(x: *const f32) {
    group(block[1], || {
        let s: Shared<[f32; 64]>;
        claim(s, thread[32], |s_w| match split(warp) {
            1 => {
                async_(s_w, |s_async| {
                    group(thread[1], || {
                        cp_async_bulk(s_async, 0, x, 0, 16);
                    });
                });
            }
        });
    });
}

fn main() {}
