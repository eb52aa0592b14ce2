// Kernels are launched from the host; a kernel (or device function) cannot call one.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn fill(out: *mut u32, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(out, thread[1], |x| i + x, |o| {
        group(thread[1], || {
            if i < n {
                o[0] = i;
            }
        });
    });
}

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn twice(out: *mut u32, n: u32) {
    group(thread[1], || {
        fill(out, n);
    });
}

fn main() {}
