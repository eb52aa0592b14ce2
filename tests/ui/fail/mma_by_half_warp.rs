// mma.sync needs a whole warp: a split arm of 16 threads is not one.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k() {
    group(block[1], || {
        group(thread[32], || {
            match split(thread) {
                16 => {
                    #[at(thread[1])]
                    let a = [0.0f32; 4];
                    #[at(thread[1])]
                    let b = [0.0f32; 2];
                    #[at(thread[1])]
                    let mut c = [0.0f32; 4];
                    mma_m16n8k8_tf32(&mut c, &a, &b);
                }
            }
        });
    });
}

fn main() {}
