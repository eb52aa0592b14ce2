// A `peer` view read directly in cluster code (block[2]): shared memory is read from each block's code.
use prism_macros::prism_kernel;
#[prism_kernel(requires(grid[1], block[2], block[1], thread[1]), threads = 64, cluster = 2)]
pub fn k(out: *mut f32) {
    group(block[2], || {
        let s: Shared<[f32; 64]>;
        #[at(block[1])]
        let r: u32 = id();
        peer(s, 1 - r, |s_peer| {
            #[at(block[1])]
            let x: f32 = s_peer[0];
        });
    });
}
fn main() {}
