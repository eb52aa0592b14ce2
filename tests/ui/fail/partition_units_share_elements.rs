// Threads 2k and 2k + 1 get the same elements of `s` (the closure reads the thread only through `t / 2`):
// their writes race. Reading such a view is allowed; writing it is T-PARTITION's error.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128, smem = 512)]
pub fn k(y: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(y, block[1], |j| b * 128 + j, |yb| {
        group(block[1], || {
            let s: Shared<[f32; 128]>;
            #[at(thread[1])]
            let t: u32 = id();
            partition(s, thread[1], |j| t / 2 + j, |st| {
                group(thread[1], || {
                    st[0] = t as f32;
                });
            });
            partition(yb, thread[1], |j| t + j, |yt| {
                group(thread[1], || {
                    yt[0] = s[t];
                });
            });
        });
    });
}

fn main() {}
