// A kernel's `*mut` parameter is one address for the whole launch: declaring it at block[1] would give every
// block "its own" pointer to the same memory. Narrow it with `partition` (paper 000 §3.4.2, T-PARTITION).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(#[at(block[1])] c: *mut f32) {
    #[at(thread[1])]
    let t: u32 = id();
    group(block[1], || {
        partition(c, thread[1], |j| t + j, |c_t| {
            group(thread[1], || {
                c_t[0] = 1.0;
            });
        });
    });
}

fn main() {}
