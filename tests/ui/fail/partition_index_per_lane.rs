// The index closure of a partition into thread[32] computes one offset per warp: it cannot read the lane
// index, which differs between the warp's threads (T-PARTITION: the closure reads at the partition's
// perspective).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k(c: *mut f32) {
    #[at(thread[1])]
    let lane: u32 = id();
    partition(c, thread[32], |j| lane + j, |c_w| {});
}

fn main() {}
