// async_ + cp_async staging a block's tile in shared memory, then a thread[64] device function reading it.
// Used by the emitter tests (named barriers under the naive policy) and the sync tests (the wait it needs).
#[prism_device(requires(thread[64]))]
pub fn half_reverse(#[at(thread[64])] src: *const f32, #[at(thread[64])] dst: *mut f32, #[at(thread[64])] base: u32) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(dst, thread[1], |j| t + j, |d_t| {
        group(thread[1], || {
            d_t[0] = src[base + 63 - t];
        });
    });
}

#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128, smem = 512)]
pub fn staged(x: *const f32, y: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(y, block[1], |j| b * 128 + j, |y_blk| {
        group(block[1], || {
            let s: Shared<[f32; 128]>;
            #[at(thread[1])]
            let t: u32 = id();
            async_(s, |s_async| {
                group(thread[1], || {
                    cp_async(s_async, t, x, b * 128 + t, 4);
                });
            });
            #[at(thread[64])]
            let h: u32 = id();
            partition(y_blk, thread[64], |j| h * 64 + j, |y_h| {
                group(thread[64], || {
                    half_reverse(s, y_h, h * 64);
                });
            });
        });
    });
}
