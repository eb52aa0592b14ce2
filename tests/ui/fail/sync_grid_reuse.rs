// There is no grid-wide barrier: after a partition at grid[1], the original name cannot be used again.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(c: *mut f32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(c, thread[1], |j| i + j, |c_t| {
        group(thread[1], || {
            c_t[0] = 1.0;
        });
    });
    partition(c, thread[1], |j| i + j, |c_t| {
        group(thread[1], || {
            c_t[0] = 2.0;
        });
    });
}

fn main() {}
