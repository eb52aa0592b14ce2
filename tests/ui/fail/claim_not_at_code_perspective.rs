// A claim narrows memory seen at the code perspective: `c` is at grid[1], the code at block[1].
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k(c: *mut f32) {
    group(block[1], || {
        claim(c, thread[32], |c_w| match split(warp) {
            1 => {}
        });
    });
}

fn main() {}
