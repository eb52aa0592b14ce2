// A peer rank that is a constant outside the cluster's ranks (a run-time one faults instead).
use prism_macros::prism_kernel;
#[prism_kernel(requires(grid[1], block[2], block[1], thread[1]), threads = 64, cluster = 2)]
pub fn k(out: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(out, block[1], |i| b * 64 + i, |o_blk| {
        group(block[2], || {
            let s: Shared<[f32; 64]>;
            peer(s, 5, |s_peer| {
                group(block[1], || {
                    #[at(thread[1])]
                    let t: u32 = id();
                    partition(o_blk, thread[1], |i| t + i, |o_t| { group(thread[1], || { o_t[0] = s_peer[t]; }); });
                });
            });
        });
    });
}
fn main() {}
