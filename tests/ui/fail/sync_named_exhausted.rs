// Ordering a thread[64] group's shared memory takes one named barrier per group: 1024 threads make 16
// groups, and the hardware has 15 named barriers besides barrier 0.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[64]), threads = 1024, smem = 4096)]
fn k(out: *mut f32) {
    group(block[1], || {
        let s: Shared<[f32; 1024]>;
        #[at(thread[64])]
        let g: u32 = id();
        partition(s, thread[64], |j| g * 64 + j, |s_g| {
            group(thread[64], || {
                #[at(thread[1])]
                let t: u32 = id();
                partition(s_g, thread[1], |j| t + j, |s_t| {
                    group(thread[1], || {
                        s_t[0] = 1.0;
                    });
                });
                #[at(thread[1])]
                let v: f32 = s_g[(t + 1) % 64];
            });
        });
    });
}

fn main() {}
