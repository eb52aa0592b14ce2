// setmaxnreg raises or lowers the count a warpgroup *has*; the compiler picks `.inc` or `.dec` against the
// entry count, so each warpgroup sets one count. Here `group(thread[128])` runs in both warpgroups, and the
// consumer arm then asks warpgroup 1 for a second, different count.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256)]
fn k() {
    group(thread[128], || {
        set_max_regs(128);
    });
    match split(warpgroup) {
        1 => {}
        1 => {
            set_max_regs(232);
        }
    }
}

fn main() {}
