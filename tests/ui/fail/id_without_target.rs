// id() has a meaning only relative to the variable it is written to.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(a: *const f32, c: *mut f32) {
    partition(c, thread[1], |k| k, |c_thread| {
        group(thread[1], || {
            c_thread[0] = a[id()];
        });
    });
}

fn main() {}
