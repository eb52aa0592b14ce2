// Shared memory depends on the instance: the error says which instance is too large.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 32, instances = [16, 65536])]
fn k<const N: u32>(out: *mut f32) {
    group(block[1], || {
        let s: Shared<[f32; N]>;
        #[at(thread[1])]
        let t: u32 = id();
        partition(s, thread[1], |x| t + 32 * x, |s_t| {
            group(thread[1], || {
                s_t[0] = 1.0;
            });
        });
    });
}

fn main() {}
