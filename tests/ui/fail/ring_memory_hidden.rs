// Inside a ring, its memory is reached only through `fill` and `drain`, which wait for the slot's turn.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256)]
fn k(out: *mut f32) {
    group(block[1], || {
        let s: Shared<[f32; 4 * 256]>;
        ring(4, s, |r| {
            #[at(block[1])]
            let x: f32 = s[0];
        });
    });
}

fn main() {}
