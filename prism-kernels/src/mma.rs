//! Paper 000, Figs. 5 and 6: the TF32 tensor-core instruction `mma.sync.m16n8k8` wrapped in a warp-level
//! device function, and the naive TF32 matrix multiplication that calls it. (prism-core's tests compile this
//! file too: it is the one copy of the paper's running example.)

use prism_macros::{prism_device, prism_kernel};

/// Paper 000, Fig. 5: one warp multiplies a 16 × 8 tile of `a` (row stride `k`) by an 8 × 8 tile of `b` (row
/// stride `n`) with the TF32 tensor-core instruction `mma.sync.m16n8k8` and writes the 16 × 8 result to `c`
/// (row stride `n`), accumulating: `c += a · b`. Each lane loads its own fragments (`thread[1]`, including
/// its part of `c`), the instruction runs at `thread[32]`, and the result is written back through a
/// `thread[1]` partition of `c`. (The paper's Fig. 5 starts from a zero accumulator; loading `c` makes the
/// Fig. 6 kernel correct for any `k`, where each k-tile adds to the tile of `C`.)
#[prism_device(requires(thread[32]))]
pub fn simple_mma(
    #[at(thread[32])] a: *const f32,
    #[at(thread[32])] b: *const f32,
    #[at(thread[32])] c: *mut f32,
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
        fc[0] = c[(x / 4) * n + 2 * (x % 4)];
        fc[1] = c[(x / 4) * n + 2 * (x % 4) + 1];
        fc[2] = c[(x / 4 + 8) * n + 2 * (x % 4)];
        fc[3] = c[(x / 4 + 8) * n + 2 * (x % 4) + 1];
    });
    mma_m16n8k8_tf32(&mut fc, &fa, &fb);
    partition(
        c,
        thread[1],
        |ro, co| (x / 4 + ro) * n + 2 * (x % 4) + co,
        |c_thrd| {
            group(thread[1], || {
                c_thrd[(0, 0)] = fc[0];
                c_thrd[(0, 1)] = fc[1];
                c_thrd[(8, 0)] = fc[2];
                c_thrd[(8, 1)] = fc[3];
            });
        },
    );
}

/// Paper 000, Fig. 6: naive TF32 matrix multiplication `C = A · B` (`A` is `m × k`, `B` is `k × n`, all
/// row-major `f32`). Each block computes a 16 × 8 tile of `C`: its threads stage tiles of `A` and `B` in
/// shared memory, then the first warp runs [`simple_mma`] (one `mma.sync` TF32 tensor-core instruction per
/// k-tile). Launch `ceil(m / 16) * ceil(n / 8)` blocks of exactly 32 threads (the contract says `threads = 32`:
/// the staging loops give each of the 32 threads 4 elements of the 16 × 8 tile).
///
/// ```
/// use prism_runtime::{Device, LaunchDims};
/// let (m, n, k) = (32u32, 16u32, 24u32);
/// let dev = Device::auto()?;
/// let a = dev.htod(&vec![1.0f32; (m * k) as usize])?;
/// let b = dev.htod(&vec![0.5f32; (k * n) as usize])?;
/// let mut c = dev.alloc_zeros::<f32>((m * n) as usize)?;
/// let blocks = m.div_ceil(16) * n.div_ceil(8);
/// prism_kernels::mma_tf32_naive::launch(&dev, LaunchDims::new(blocks, 32), &a, &b, &mut c, m, n, k)?;
/// let c = dev.dtoh(&c)?;
/// assert!((c[0] - 12.0).abs() < 1e-2);
/// # Ok::<(), prism_runtime::RuntimeError>(())
/// ```
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 32, smem = 1280)]
pub fn mma_tf32_naive(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
    // grid[1]: inferred from the code perspective.
    let num_blocks_n: u32 = (n + 8 - 1) / 8;
    // id() written into block[1] variables from grid[1] code: the block index.
    #[at(block[1])]
    let blk_row: u32 = (id() / num_blocks_n) * 16;
    #[at(block[1])]
    let blk_col: u32 = (id() % num_blocks_n) * 8;
    partition(
        c,
        block[1],
        |x| blk_row * n + blk_col + x,
        |c_blk| {
            group(block[1], || {
                // Shared allocations only at block[1]: 3 * 512 B rounded to 16 B = 1280 B.
                let a_smem: Shared<[f32; 16 * 8]>;
                let b_smem: Shared<[f32; 8 * 8]>;
                let c_smem: Shared<[f32; 16 * 8]>;
                // id() into a thread[1] variable from block[1] code: the thread index in the block.
                #[at(thread[1])]
                let tid: u32 = id();
                partition(
                    c_smem,
                    thread[1],
                    |x| tid * 4 + x,
                    |c_th| {
                        group(thread[1], || {
                            for i in 0..4 {
                                c_th[i] = 0.0;
                            }
                        });
                    },
                );
                let k_tiles: u32 = (k + 8 - 1) / 8;
                for i in 0..k_tiles {
                    // A tile: 16x8 = 128 floats, 4 per thread.
                    for j in 0..4 {
                        #[at(thread[1])]
                        let flat: u32 = tid * 4 + j;
                        #[at(thread[1])]
                        let global_row: u32 = blk_row + flat / 8;
                        #[at(thread[1])]
                        let global_col: u32 = i * 8 + flat % 8;
                        partition(
                            a_smem,
                            thread[1],
                            |x| flat + x,
                            |a_th| {
                                group(thread[1], || {
                                    if global_row < m && global_col < k {
                                        a_th[0] = a[global_row * k + global_col];
                                    } else {
                                        a_th[0] = 0.0;
                                    }
                                });
                            },
                        );
                    }
                    // B tile: 8x8 = 64 floats, 2 per thread.
                    for j in 0..2 {
                        #[at(thread[1])]
                        let flat: u32 = tid * 2 + j;
                        #[at(thread[1])]
                        let global_row: u32 = i * 8 + flat / 8;
                        #[at(thread[1])]
                        let global_col: u32 = blk_col + flat % 8;
                        partition(
                            b_smem,
                            thread[1],
                            |x| flat + x,
                            |b_th| {
                                group(thread[1], || {
                                    if global_row < k && global_col < n {
                                        b_th[0] = b[global_row * n + global_col];
                                    } else {
                                        b_th[0] = 0.0;
                                    }
                                });
                            },
                        );
                    }
                    // Give the first warp C_smem and run the tensor-core instruction there.
                    claim(c_smem, thread[32], |cs_warp| {
                        // The first warp of the block: split(thread) masks off the others.
                        match split(thread) {
                            32 => {
                                simple_mma(a_smem, b_smem, cs_warp, 8, 8);
                            }
                        }
                    });
                }
                // Write the tile back to C.
                for j in 0..4 {
                    #[at(thread[1])]
                    let flat: u32 = tid * 4 + j;
                    #[at(thread[1])]
                    let row_c: u32 = flat / 8;
                    #[at(thread[1])]
                    let col_c: u32 = flat % 8;
                    partition(
                        c_blk,
                        thread[1],
                        |x| row_c * n + col_c + x,
                        |c_th| {
                            group(thread[1], || {
                                if blk_row + row_c < m && blk_col + col_c < n {
                                    c_th[0] = c_smem[row_c * 8 + col_c];
                                }
                            });
                        },
                    );
                }
            });
        },
    );
}
