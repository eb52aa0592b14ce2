// `|x| x` gives every unit the whole of global memory (the way to write elements chosen at run time), so the
// index must tell the units apart: every thread writing element 0, or a loop's elements in the same order,
// races (T-PARTITION). Writes at a unit's own index, or under a condition only some units meet, compile.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128)]
pub fn k(x: *const f32, c: *mut f32, n: u32) {
    partition(c, block[1], |x| x, |c_blk| {
        group(block[1], || {
            #[at(thread[1])]
            let t: u32 = id();
            partition(c_blk, thread[1], |x| x, |c_t| {
                group(thread[1], || {
                    c_t[0] = x[0];
                    c_t[n + 1] = x[1];
                    if t == 0 {
                        c_t[2] = x[2];
                    }
                    if n > 4 {
                        c_t[3] = x[3];
                    }
                });
            });
        });
    });
}

fn main() {}
