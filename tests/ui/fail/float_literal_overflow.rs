// A float literal too large for its type is rejected (rustc's `overflowing_literals`), not stored as inf.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(y: *mut f32, z: *mut f64) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(y, thread[1], |j| i + j, |yt| {
        group(thread[1], || {
            yt[0] = 1e40f32;
        });
    });
    partition(z, thread[1], |j| i + j, |zt| {
        group(thread[1], || {
            zt[0] = 2e308;
        });
    });
}

fn main() {}
