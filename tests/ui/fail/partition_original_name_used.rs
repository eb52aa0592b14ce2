// Inside a partition, the original name is hidden.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(c: *mut f32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(c, thread[1], |k| i + k, |c_thread| {
        group(thread[1], || {
            c_thread[0] = c[i];
        });
    });
}

fn main() {}
