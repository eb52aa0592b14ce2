// PTX has no atomic min/max on floats: the checker says so (INTRINSIC) instead of the emitter.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(m: *mut f32) {
    group(thread[1], || {
        atomic_max(m, 0, 1.0f32);
    });
}

fn main() {}
