// Paper Fig. 2: a warp-level tensor-core instruction, legal because it runs in `group(thread[32])`.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warp))]
fn fig2(out: *mut f32) {
    group(block[1], || {
        #[at(thread[1])]
        let tid: u32 = id();
        group(thread[32], || {
            #[at(thread[1])]
            let mut a = [0.0f32; 4];
            #[at(thread[1])]
            let mut b = [0.0f32; 2];
            #[at(thread[1])]
            let mut c = [0.0f32; 4];
            for i in 0..4 {
                a[i] = (tid * 4 + 1) as f32;
                c[i] = 0.0;
            }
            for i in 0..2 {
                b[i] = (tid * 4 + 1) as f32;
            }
            mma_m16n8k8_tf32(&mut c, &a, &b);
        });
    });
}

fn main() {
    assert!(fig2::PTX.contains("mma.sync.aligned.m16n8k8"));
}
