// Every block adds to a global counter with `atomic_add`, then reads it with a plain load and branches on
// it around a barrier: other blocks' atomics may not have happened yet, so threads of one block can read
// different totals and some skip the barrier. No barrier orders blocks: rejected.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 32)]
fn k(count: *mut u32) {
    group(block[1], || {
        match split(thread) {
            1 => {
                atomic_add(count, 0, 1u32);
            }
        }
        #[at(block[1])]
        let total: u32 = count[0];
        if total == 2u32 {
            sync_threads();
        }
    });
}

fn main() {}
