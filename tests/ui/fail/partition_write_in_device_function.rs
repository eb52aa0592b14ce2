// Each thread owns 4 elements (`|j| t * 4 + j`), but `clear::<8>` writes 8 through the view it is passed:
// thread 0's `x[4]` is thread 1's `x[0]`. T-PARTITION follows a device function's writes through a pointer
// parameter when their indices are known at compile time (constants, const generics, constant loops).
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[1]))]
pub fn clear<const K: u32>(x: *mut f32) {
    for i in 0..K {
        x[i] = 0.0;
    }
}

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 64)]
pub fn k(c: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(c, block[1], |x| b * 512 + x, |cb| {
        group(block[1], || {
            #[at(thread[1])]
            let t: u32 = id();
            partition(cb, thread[1], |j| t * 4 + j, |ct| {
                group(thread[1], || {
                    clear::<8>(ct);
                });
            });
        });
    });
}

fn main() {}
