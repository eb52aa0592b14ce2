// A pointer is partitioned from the code perspective it lives at (T-PARTITION).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(c: *mut f32) {
    group(block[1], || {
        group(thread[1], || {
            partition(c, thread[1], |k| k, |c_thread| {
                c_thread[0] = 0.0;
            });
        });
    });
}

fn main() {}
