// Paper 000, Fig. 5 (and docs/SYNTAX.md): a warp-level TF32 tensor-core multiply of a 16x8 by 8x8 tile.
#[prism_device(requires(thread[32]))]
pub fn simple_mma(
    #[at(thread[32])] a: *const f32, // 16x8 row-major, stride k
    #[at(thread[32])] b: *const f32, // 8x8 row-major, stride n
    #[at(thread[32])] c: *mut f32,   // 16x8 row-major, stride n
    k: u32,
    n: u32,
) {
    #[at(thread[1])]
    let x: u32 = id();
    #[at(thread[1])]
    let mut fa = [0.0f32; 4];
    #[at(thread[1])]
    let mut fb = [0.0f32; 2];
    #[at(thread[1])]
    let mut fc = [0.0f32; 4];
    group(thread[1], || {
        fa[0] = a[(x / 4) * k + x % 4];
        fa[1] = a[(x / 4 + 8) * k + x % 4];
        fa[2] = a[(x / 4) * k + x % 4 + 4];
        fa[3] = a[(x / 4 + 8) * k + x % 4 + 4];
        fb[0] = b[(x % 4) * n + x / 4];
        fb[1] = b[(x % 4 + 4) * n + x / 4];
    });
    mma_m16n8k8_tf32(&mut fc, &fa, &fb);
    partition(c, thread[1], |ro, co| (x / 4 + ro) * n + 2 * (x % 4) + co, |c_thrd| {
        group(thread[1], || {
            c_thrd[(0, 0)] = fc[0];
            c_thrd[(0, 1)] = fc[1];
            c_thrd[(8, 0)] = fc[2];
            c_thrd[(8, 1)] = fc[3];
        });
    });
}
