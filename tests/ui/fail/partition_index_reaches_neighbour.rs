// Each thread owns 4 elements (`|j| t * 4 + j`) but writes 8: thread 0's `ct[4]` is thread 1's `ct[0]`.
// T-PARTITION follows the closure through the indices a write uses (constants and constant-range loops).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 64)]
pub fn k(c: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(c, block[1], |x| b * 256 + x, |cb| {
        group(block[1], || {
            #[at(thread[1])]
            let t: u32 = id();
            partition(cb, thread[1], |j| t * 4 + j, |ct| {
                group(thread[1], || {
                    for i in 0..8 {
                        ct[i] = 1.0;
                    }
                });
            });
        });
    });
}

fn main() {}
