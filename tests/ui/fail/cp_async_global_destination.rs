// `cp_async` copies global memory into shared memory: a global destination is an INTRINSIC error from the
// checker (it used to surface only in the emitter, as EMIT-TYPE).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(x: *const f32, y: *mut f32) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(y, thread[1], |j| t + j, |y_t| {
        async_(y_t, |y_async| {
            group(thread[1], || {
                cp_async(y_async, 0, x, t, 4);
            });
        });
    });
}

fn main() {}
