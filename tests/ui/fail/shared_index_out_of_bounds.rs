// A constant index past the end of a shared allocation: a compile error, as for register arrays
// (a run-time one traps at run time instead of reading the next allocation).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128, smem = 1024)]
pub fn k(y: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(y, block[1], |j| b + j, |yb| {
        group(block[1], || {
            let s1: Shared<[f32; 128]>;
            #[at(thread[1])]
            let t: u32 = id();
            partition(s1, thread[1], |j| t + j, |st| { group(thread[1], || { st[0] = 1.0; }); });
            claim(yb, thread[1], |y1| match split(thread) {
                1 => { y1[0] = s1[130]; }
            });
        });
    });
}

fn main() {}
