// A library function called from too narrow a perspective: the error is at the call, and so is the note
// naming the callee's `requires` (its source is in another crate), with the crate named.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]), smem = 144)]
pub fn k(x: *const f32, y: *mut f32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(y, thread[1], |j| i + j, |yt| {
        group(thread[32], || {
            let s: f32 = prism_kernels::block_reduce::<f32>(x[i]);
            group(thread[1], || {
                yt[0] = s;
            });
        });
    });
}

fn main() {}
