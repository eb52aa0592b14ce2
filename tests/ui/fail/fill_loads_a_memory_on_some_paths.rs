// A fill that loads one of the ring's memories only on even steps: the odd steps' drains read that slot as
// an earlier step left it.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warp), threads = 64)]
pub fn sometimes(a: TensorMap<f32, 1>, out: *mut f32, steps: u32) {
    #[at(block[1])]
    let blk: u32 = id();
    partition(out, block[1], |x| blk * steps * 64 + x, |o_blk| {
        group(block[1], || {
            let sa: Shared<[f32; 2 * 64]>;
            let sb: Shared<[f32; 2 * 64]>;
            partition(o_blk, thread[32], |x| x, |o_w| {
                ring(2, (sa, sb), |r| match split(warp) {
                    1 => {
                        for i in 0..steps {
                            fill(r, i, |sa_s, sb_s| match split(thread) {
                                1 => {
                                    tma_load(sa_s, a, i * 64);
                                    if i % 2 == 0 {
                                        tma_load(sb_s, a, i * 64);
                                    }
                                }
                            });
                        }
                    }
                    1 => {
                        #[at(thread[1])]
                        let l: u32 = id();
                        for i in 0..steps {
                            drain(r, i, |sa_s, sb_s| {
                                partition(o_w, thread[1], |x| i * 64 + l * 2 + x, |o_l| {
                                    group(thread[1], || {
                                        o_l[0] = sa_s[l * 2] + sb_s[l * 2];
                                        o_l[1] = sa_s[l * 2 + 1] + sb_s[l * 2 + 1];
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
