// Writing through a `peer` view: another block's shared memory is only read.
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
                partition(s_peer, thread[1], |j| t + j, |sp| {
                    group(thread[1], || {
                        sp[0] = 1.0;
                    });
                });
            });
        });
    });
}
fn main() {}
