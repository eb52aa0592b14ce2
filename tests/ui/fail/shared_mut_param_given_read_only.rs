// A `SharedMut<[T; N], L>` parameter is shared memory the device function writes: a caller's read-only
// `Shared` parameter cannot be passed on to it.
use prism_macros::prism_device;

#[prism_device(requires(thread[128]))]
fn store(acc: &[f32; 32], e: SharedMut<[bf16; 64 * 64], Swizzle128>) {
    stmatrix_bf16(e, &acc, 0);
}

#[prism_device(requires(thread[128]))]
fn forward(acc: &[f32; 32], e: Shared<[bf16; 64 * 64], Swizzle128>) {
    store(acc, e);
}

fn main() {}
