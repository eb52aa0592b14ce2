// Each thread owns two counters of `s` (`|j| t * 2 + j`) and writes its first plainly, then adds into
// index 2, which is the next thread's first counter: an atomic and a plain write of one element race
// (atomics are concurrent only with atomics). T-PARTITION counts atomics at indices known at compile time.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128, smem = 1024)]
pub fn k(out: *mut u32) {
    group(block[1], || {
        let s: Shared<[u32; 256]>;
        #[at(thread[1])]
        let t: u32 = id();
        partition(s, thread[1], |j| t * 2 + j, |st| {
            group(thread[1], || {
                st[0] = t;
                atomic_add(st, 2, 1u32);
            });
        });
    });
}

fn main() {}
