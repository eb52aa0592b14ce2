// `instances = [-1]` for a `u32` const generic: an INSTANCES error (not rustc's, at the whole attribute).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), instances = [-1])]
pub fn k<const N: u32>(y: *mut u32) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(y, thread[1], |j| t + j, |yt| {
        group(thread[1], || {
            yt[0] = t + N;
        });
    });
}

fn main() {}
