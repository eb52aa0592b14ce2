// Consumer warpgroups raise their registers to 240 through a library function: with the other two
// warpgroups at the entry count (168 for 384 threads) the first raise already needs 73728 registers, over
// an SM's 65536. The error is at that call, in this crate (the library function's tokens have no span here).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 384)]
pub fn too_many_registers(out: *mut f32) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(out, thread[1], |x| t + x, |out_t| {
        match split(warpgroup) {
            1 => {
                group(thread[1], || {
                    out_t[0] = 1.0;
                });
            }
            1 => {
                prism_ext_crate::raise_regs_240();
            }
            1 => {
                prism_ext_crate::raise_regs_240();
            }
        }
    });
}

fn main() {}
