// `SharedMut<..>` is a device-function parameter type: shared memory is allocated with `Shared<..>`
// (an allocation is writable).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 32)]
fn k() {
    group(block[1], || {
        let s: SharedMut<[f32; 32]>;
    });
}

fn main() {}
