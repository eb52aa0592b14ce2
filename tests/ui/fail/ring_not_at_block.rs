// A ring's slots belong to the whole block: it is declared in block code, and its producer and consumers
// are split arms inside it.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256)]
fn k(n: u32) {
    group(block[1], || {
        let s: Shared<[f32; 4 * 256]>;
        match split(warpgroup) {
            1 => {
                ring(4, s, |r| {
                    for i in 0..n {
                        drain(r, i, |s_slot| {});
                    }
                });
            }
        }
    });
}

fn main() {}
