// Paper 000, Fig. 2: the warp-level tensor-core instruction is valid because it runs in a group of 32
// threads. Each warp of the block multiplies fragments held in registers and writes them out.
#[prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn warp_mma(out: *mut f32) {
    #[at(thread[1])]
    let tid: u32 = id();
    group(thread[32], || {
        #[at(thread[1])]
        let lane: u32 = id();
        #[at(thread[1])]
        let a = [1.0f32, 2.0, 3.0, 4.0];
        #[at(thread[1])]
        let b = [0.5f32; 2];
        #[at(thread[1])]
        let mut c = [0.0f32; 4];
        group(thread[1], || {
            if lane < 32 {
                c[0] = lane as f32;
            }
        });
        mma_m16n8k8_tf32(&mut c, &a, &b);
    });
    partition(out, thread[1], |i| tid * 4 + i, |o| {
        group(thread[1], || {
            o[0] = 1.0;
        });
    });
}
