// Ring slots of 48 f32 (192 bytes) that a fill TMA-loads: slot 1 starts at byte 192, off TMA's 128-byte
// alignment.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warp), threads = 64)]
pub fn misaligned(a: TensorMap<f32, 1>, out: *mut f32, steps: u32) {
    #[at(block[1])]
    let blk: u32 = id();
    partition(out, block[1], |x| blk * steps * 48 + x, |o_blk| {
        group(block[1], || {
            let sa: Shared<[f32; 2 * 48]>;
            let sb: Shared<[f32; 2 * 48]>;
            partition(o_blk, thread[32], |x| x, |o_w| {
                ring(2, (sa, sb), |r| match split(warp) {
                    1 => {
                        for i in 0..steps {
                            fill(r, i, |sa_s, sb_s| match split(thread) {
                                1 => {
                                    tma_load(sa_s, a, i * 48);
                                    tma_load(sb_s, a, i * 48);
                                }
                            });
                        }
                    }
                    1 => {
                        #[at(thread[1])]
                        let l: u32 = id();
                        for i in 0..steps {
                            drain(r, i, |sa_s, sb_s| {
                                partition(o_w, thread[1], |x| i * 48 + l + x, |o_l| {
                                    group(thread[1], || {
                                        o_l[0] = sa_s[l] + sb_s[l];
                                    });
                                });
                            });
                        }
                    }
                });
            });
        });
    });
}

fn main() {}
