// setmaxnreg moves registers between warpgroups of one block: together they cannot ask for more than the
// 64 K registers of an SM (40·128 + 240·128 + 240·128 = 66560).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 384)]
fn k() {
    match split(warpgroup) {
        1 => {
            set_max_regs(40);
        }
        1 => {
            set_max_regs(240);
        }
        1 => {
            set_max_regs(240);
        }
    }
}

fn main() {}
