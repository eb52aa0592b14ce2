// Device functions are inlined: a function that calls itself is rejected at the recursive call.
use prism_macros::prism_device;

#[prism_device(requires(thread[1]))]
pub fn countdown(x: u32) -> u32 {
    countdown(x - 1)
}

fn main() {}
