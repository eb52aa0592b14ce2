// A call to a function that is neither an intrinsic nor a device function in scope.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k() {
    group(thread[1], || {
        not_a_device_fn(1);
    });
}

fn main() {}
