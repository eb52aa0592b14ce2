// Paper Figs. 5 and 6: `simple_mma` (a thread[32] device function around `mma.sync`) called from a user's
// kernel in another crate, the way Fig. 6 calls it: claim the output tile for one warp, split off that warp.
use prism_macros::prism_kernel;

/// One 16×8×8 TF32 tile: `c = a · b` with `a` 16×8, `b` 8×8, `c` 16×8 (row-major), one block of one warp.
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 32, smem = 512)]
fn one_tile(a: *const f32, b: *const f32, c: *mut f32) {
    group(block[1], || {
        let c_smem: Shared<[f32; 16 * 8]>;
        claim(c_smem, thread[32], |c_warp| {
            match split(thread) {
                32 => {
                    prism_kernels::simple_mma(a, b, c_warp, 8, 8);
                }
            }
        });
    });
}

fn main() {
    // The callee's code is inlined into the caller's PTX: one tensor-core instruction, no call.
    assert_eq!(one_tile::PTX.matches("mma.sync.aligned.m16n8k8").count(), 1);
    assert!(!one_tile::PTX.contains("call"));
    // Fig. 6 itself lives in prism-kernels and compiled with it.
    assert_eq!(prism_kernels::mma_tf32_naive::INFO.contract().smem_bytes(), 1280);
}
