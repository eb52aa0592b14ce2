// Inline PTX must be wrapped in a device function that declares its perspective signature.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k() {
    group(thread[1], || {
        unsafe {
            asm!("membar.gl;");
        }
    });
}

fn main() {}
