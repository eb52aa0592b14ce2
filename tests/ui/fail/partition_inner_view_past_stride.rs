// Each warp owns 32 elements of `s` (`|j| w * 32 + j`) and hands each lane four of them (`|j| l * 4 + j`):
// lanes 8..31 reach past their warp's 32, into the next warps' elements. Lane 8 of warp 0 writes element
// 32, which lane 0 of warp 1 writes too. T-PARTITION carries an inner view's accesses to the view it
// partitions when both closures are known exactly.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128, smem = 512)]
pub fn k(out: *mut f32) {
    group(block[1], || {
        let s: Shared<[f32; 128]>;
        #[at(thread[32])]
        let w: u32 = id();
        partition(s, thread[32], |j| w * 32 + j, |sw| {
            group(thread[32], || {
                #[at(thread[1])]
                let l: u32 = id();
                partition(sw, thread[1], |j| l * 4 + j, |st| {
                    group(thread[1], || {
                        st[0] = 1.0;
                    });
                });
            });
        });
    });
}

fn main() {}
