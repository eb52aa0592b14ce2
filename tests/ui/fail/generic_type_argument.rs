// Type generics: a call names an unknown type argument, another one a type the bound does not admit.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[32]), returns = thread[1])]
pub fn warp_sum<T: Num32>(#[at(thread[1])] v: T) -> T {
    #[at(thread[1])]
    let mut x: T = v;
    for k in 0..5 {
        x = x + shfl_xor(x, 16u32 >> k);
    }
    x
}

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn k(out: *mut f32) {
    #[at(thread[1])]
    let v: f32 = 1.0;
    #[at(thread[1])]
    let w: f32 = warp_sum::<Foo>(v);
}

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn k64(out: *mut u64) {
    #[at(thread[1])]
    let v: u64 = 1;
    #[at(thread[1])]
    let w: u64 = warp_sum::<u64>(v);
}

fn main() {}
