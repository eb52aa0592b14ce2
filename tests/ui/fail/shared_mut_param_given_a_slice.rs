// A `SharedMut` parameter is a whole allocation (what wgmma descriptors and TMA boxes start at): a warp's
// slice of one goes to a `*mut` parameter at thread[32] instead (the help says so).
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[32]))]
pub fn warp_fill(sm: SharedMut<[f32; 32]>, x: *const f32, base: u32) {
    #[at(thread[1])]
    let l: u32 = id();
    partition(sm, thread[1], |k| l + k, |st| {
        group(thread[1], || {
            st[0] = x[base + l];
        });
    });
}

#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128, smem = 512)]
pub fn k(x: *const f32) {
    group(block[1], || {
        let s: Shared<[f32; 128]>;
        #[at(thread[32])]
        let w: u32 = id();
        partition(s, thread[32], |k| w * 32 + k, |sw| {
            group(thread[32], || {
                warp_fill(sw, x, w * 32);
            });
        });
    });
}

fn main() {}
