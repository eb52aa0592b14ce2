// shfl_down is a warp collective: it needs thread[32], not thread[1].
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k() {
    group(block[1], || {
        group(thread[1], || {
            let v: f32 = 1.0;
            let w: f32 = shfl_down(v, 1);
        });
    });
}

fn main() {}
