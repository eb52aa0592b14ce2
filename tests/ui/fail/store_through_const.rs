// A *const pointer is read-only.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(a: *const f32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(a, thread[1], |k| i + k, |a_t| {
        group(thread[1], || {
            a_t[0] = 1.0;
        });
    });
}

fn main() {}
