// setmaxnreg is a warpgroup collective (thread[128]): a single warp cannot change its register budget.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
fn k() {
    match split(warp) {
        1 => {
            set_max_regs(232);
        }
    }
}

fn main() {}
