// A library device function called with a type its bound does not admit: the error names the library
// function (its source is not in this crate, so there is no note pointing into it).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn k(out: *mut u64) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(out, thread[1], |j| t + j, |o| {
        group(thread[32], || {
            #[at(thread[1])]
            let s: u64 = prism_kernels::warp_reduce::<u64>(t as u64);
            group(thread[1], || {
                o[0] = s;
            });
        });
    });
}

fn main() {}
