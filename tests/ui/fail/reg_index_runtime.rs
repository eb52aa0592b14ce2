// A thread-local array lives in registers: every index must be known once loops are unrolled.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(x: *const u32, y: *mut u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(y, thread[1], |j| i + j, |y_t| {
        group(thread[1], || {
            let mut regs = [0u32; 8];
            regs[x[i] % 8] = 1;
            y_t[0] = regs[0];
        });
    });
}

fn main() {}
