// Each thread adds to a shared counter and reads it back in the same thread group, while other threads of
// the block are still adding: the barrier that would order the read after every atomic is over block[1]
// and cannot go inside group(thread[1]).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 64, smem = 16)]
fn k(out: *mut u32) {
    group(block[1], || {
        let cnt: Shared<[u32; 4]>;
        #[at(thread[1])]
        let mut seen: u32 = 0u32;
        group(thread[1], || {
            atomic_add(cnt, 0, 1u32);
            seen = cnt[0];
        });
    });
}

fn main() {}
