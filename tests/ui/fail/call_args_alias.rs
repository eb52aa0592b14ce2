// One memory passed to a read-only and a writable pointer parameter of one device function: the callee's
// synchronization is inferred per parameter, so its writes through `dst` would race with its reads
// through `src` (CALL-ARG), as Rust refuses `f(&s, &mut s)`. Shared and global memory alike.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(block[1], thread[1]))]
pub fn shift_into(src: *const u32, dst: *mut u32) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(dst, thread[1], |j| t + j, |dt| {
        group(thread[1], || {
            dt[0] = src[(t + 1) % 128] * 2;
        });
    });
}

// shared memory
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128, smem = 512)]
pub fn alias_shift(x: *const u32, y: *mut u32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(y, block[1], |k| b * 128 + k, |yb| {
        group(block[1], || {
            let s: Shared<[u32; 128]>;
            #[at(thread[1])]
            let t: u32 = id();
            partition(s, thread[1], |j| t + j, |st| {
                group(thread[1], || {
                    st[0] = x[b * 128 + t];
                });
            });
            shift_into(s, s);
            partition(yb, thread[1], |j| t + j, |yt| {
                group(thread[1], || {
                    yt[0] = s[t];
                });
            });
        });
    });
}

// global memory
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128)]
pub fn alias_global(y: *mut u32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(y, block[1], |k| b * 128 + k, |yb| {
        group(block[1], || {
            shift_into(yb, yb);
        });
    });
}

fn main() {}
