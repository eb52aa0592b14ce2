// Writing the block's own `s` through a partition while the other blocks read it through `peer`: one
// PEER-HIDDEN error, and no follow-on UNKNOWN-NAME for the partition's own name `s_t`.
use prism_macros::prism_kernel;
#[prism_kernel(requires(grid[1], block[2], block[1], thread[1]), threads = 64, cluster = 2)]
pub fn k(out: *mut f32) {
    group(block[2], || {
        let s: Shared<[f32; 64]>;
        #[at(block[1])]
        let r: u32 = id();
        peer(s, 1 - r, |s_peer| {
            group(block[1], || {
                #[at(thread[1])]
                let t: u32 = id();
                partition(s, thread[1], |j| t + j, |s_t| {
                    group(thread[1], || { s_t[0] = s_peer[t]; });
                });
            });
        });
    });
}
fn main() {}
