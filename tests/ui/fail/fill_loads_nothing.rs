// A fill that loads none of the ring's memories: the drains read slots nothing wrote.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warp), threads = 64)]
pub fn nothing(a: TensorMap<f32, 1>, out: *mut f32, steps: u32) {
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
                                1 => {}
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
