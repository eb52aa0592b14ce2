// setmaxnreg takes a multiple of 8 in 24..=256.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256)]
fn k() {
    match split(warpgroup) {
        1 => {
            set_max_regs(100);
        }
        1 => {
            set_max_regs(232);
        }
    }
}

fn main() {}
