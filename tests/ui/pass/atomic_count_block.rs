// Legal twin of fail/atomic_then_read_*: the threads of a block add to a shared counter; the read at
// block[1] after the group gets a barrier (synchronization inference treats the atomics as writes), so every
// thread sees the full count and the branch around the barrier is uniform.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 64, smem = 16)]
fn k(out: *mut u32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(out, block[1], |j| b + j, |out_b| {
        group(block[1], || {
            let cnt: Shared<[u32; 4]>;
            claim(cnt, thread[1], |c1| match split(thread) {
                1 => {
                    c1[0] = 0u32;
                }
            });
            group(thread[1], || {
                atomic_add(cnt, 0, 1u32);
            });
            #[at(block[1])]
            let total: u32 = cnt[0];
            if total == 64u32 {
                sync_threads();
            }
            claim(out_b, thread[1], |o1| match split(thread) {
                1 => {
                    o1[0] = total;
                }
            });
        });
    });
}

fn main() {}
