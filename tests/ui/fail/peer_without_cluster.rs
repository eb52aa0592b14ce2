// Reading another block's shared memory needs blocks that form a cluster.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 64)]
fn k(out: *mut f32) {
    group(block[1], || {
        let s: Shared<[f32; 64]>;
        peer(s, 1, |s_peer| {
            #[at(block[1])]
            let x: f32 = s_peer[0];
        });
    });
}

fn main() {}
