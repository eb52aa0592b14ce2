// `&&` and `||` run their right side only where the left side lets them: a collective there runs with
// some of its threads only (`vote_any` by lanes 0..5), so a left side that differs between them is an
// error, as an `if` condition would be (READ-UP). A uniform left side compiles.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[32]), returns = thread[1])]
pub fn warp_sum(#[at(thread[1])] v: u32) -> u32 {
    #[at(thread[1])]
    let mut x: u32 = v;
    for k in 0..5 {
        x += shfl_xor(x, 16u32 >> k);
    }
    x
}

#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64, smem = 144)]
pub fn k(x: *const u32, y: *mut u32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(y, block[1], |k| b * 64 + k, |yb| {
        group(block[1], || {
            #[at(thread[1])]
            let t: u32 = id();
            #[at(thread[1])]
            let block_ok: bool = t < 5 && prism_kernels::block_reduce::<u32>(x[t]) > 3;
            #[at(thread[1])]
            let mut lanes: bool = false;
            group(thread[32], || {
                #[at(thread[1])]
                let lane: u32 = t % 32;
                #[at(thread[1])]
                let v: bool = lane < 5 && vote_any(lane == 9);
                #[at(thread[1])]
                let s: bool = x[t] > 5 || warp_sum(x[t]) > 100;
                lanes = v && s;
            });
            partition(yb, thread[1], |k| t + k, |yt| {
                group(thread[1], || {
                    yt[0] = (block_ok && lanes) as u32;
                });
            });
        });
    });
}

fn main() {}
