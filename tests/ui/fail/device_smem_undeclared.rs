// A device function that allocates shared memory declares how much (`smem`), so that its callers can budget
// it: the error points at the allocation, with a note at the signature.
use prism_macros::prism_device;

#[prism_device(requires(block[1], thread[1]))]
pub fn stage(x: *const f32) {
    let s: Shared<[f32; 64]>;
    #[at(thread[1])]
    let t: u32 = id();
    partition(s, thread[1], |j| t + j, |s_t| {
        group(thread[1], || {
            s_t[0] = x[t];
        });
    });
}

fn main() {}
