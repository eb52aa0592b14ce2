// A library device function called without its type argument: the note names the library (its source is
// not in this crate), and the help writes a call the bound admits.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn k(out: *mut f32) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(out, thread[1], |j| t + j, |o| {
        group(thread[32], || {
            #[at(thread[1])]
            let s: f32 = prism_kernels::warp_reduce(t as f32);
            group(thread[1], || {
                o[0] = s;
            });
        });
    });
}

fn main() {}
