// Every `{name}` in an `asm!` template names one of its operands.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[1]))]
pub fn bump(x: u32) -> u32 {
    let mut y: u32 = 0;
    unsafe {
        asm!("add.u32 {y}, {x}, {z};", y = out(u32) y, x = in(u32) x);
    }
    y
}

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(n: u32) {
    #[at(thread[1])]
    let v: u32 = bump(n);
}

fn main() {}
