// A kernel outside prism-kernels calls prism_kernels::warp_load (requires thread[32]) from thread[1] code:
// the callee's perspective signature is checked at the call, in this crate.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn bad_warp_copy(input: *const i32) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(input, thread[1], |x| t * 4 + x, |in_t| {
        group(thread[1], || {
            #[at(thread[1])]
            let mut data = [0i32; 4];
            prism_kernels::warp_load::<4>(in_t, &mut data);
        });
    });
}

fn main() {}
