// The text of an `asm!` is PTX the compiler reads (here a statement lacks its `;`).
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[1]))]
pub fn threads() -> u32 {
    let mut t: u32 = 0;
    unsafe {
        asm!("mov.u32 {t}, %ntid.x", t = out(u32) t);
    }
    t
}

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(n: u32) {
    #[at(thread[1])]
    let v: u32 = threads() + n;
}

fn main() {}
