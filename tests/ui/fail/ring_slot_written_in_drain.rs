// A drained slot is read-only: the consumers hand it back to the producer, who refills it.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128)]
fn k(n: u32) {
    group(block[1], || {
        let s: Shared<[f32; 2 * 128]>;
        #[at(thread[1])]
        let t: u32 = id();
        ring(2, s, |r| {
            for i in 0..n {
                drain(r, i, |s_slot| {
                    partition(s_slot, thread[1], |x| t + x, |s_t| {
                        group(thread[1], || {
                            s_t[0] = 1.0;
                        });
                    });
                });
            }
        });
    });
}

fn main() {}
