// asm! is only allowed inside an unsafe block.
use prism_macros::prism_device;

#[prism_device(requires(thread[1]))]
pub fn fence_gpu() {
    asm!("membar.gl;");
}

fn main() {}
