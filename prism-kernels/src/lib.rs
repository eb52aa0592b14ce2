//! The Prism kernel library: device functions at thread, warp and block level (the CUB-like load/store of
//! paper 000, appendix B), the paper's TF32 tensor-core example (Figs. 5 and 6), and small kernels.
//!
//! Every item here is written in Prism's surface syntax (`docs/SYNTAX.md`) and checked for perspective
//! correctness while this crate compiles. Kernels become unit structs with `PTX`, `INFO` and a typed
//! `launch`; device functions can be called from kernels in any crate as `prism_kernels::warp_load::<4>(..)`
//! (see `docs/COMPOSITION.md`): the call is checked against the function's perspective signature and the
//! body is inlined into the caller's PTX.
//!
//! ```
//! use prism_runtime::{Device, LaunchDims};
//! let dev = Device::auto()?; // the GPU when present, else the PTX emulator
//! let a = dev.htod(&[1.0f32, 2.0, 3.0])?;
//! let b = dev.htod(&[10.0f32, 20.0, 30.0])?;
//! let mut c = dev.alloc_zeros::<f32>(3)?;
//! prism_kernels::vector_add::launch(&dev, LaunchDims::new(1, 32), &a, &b, &mut c, 3)?;
//! assert_eq!(dev.dtoh(&c)?, vec![11.0, 22.0, 33.0]);
//! # Ok::<(), prism_runtime::RuntimeError>(())
//! ```

// Device functions must be defined before the kernels that call them (textual scope, like `macro_rules!`).

use prism_macros::{prism_device, prism_kernel};

// ---- Appendix B: CUB-like load/store, composed by calls (thread <- warp <- block). ----

/// Appendix B `thread_load`: each thread copies `N` consecutive items of `input` into its register array
/// `out` (`thread[1]`).
#[prism_device(requires(thread[1]))]
pub fn thread_load<const N: u32>(input: *const i32, out: &mut [i32; N]) {
    for i in 0..N {
        out[i] = input[i];
    }
}

/// Appendix B `warp_load`: a warp loads `32 * N` consecutive items of `input` (a `thread[32]` pointer); lane
/// `i` receives items `i * N .. (i + 1) * N` in `out`. Calls [`thread_load`] per lane.
#[prism_device(requires(thread[32]))]
pub fn warp_load<const N: u32>(input: *const i32, out: &mut [i32; N]) {
    #[at(thread[1])]
    let tid: u32 = id();
    partition(
        input,
        thread[1],
        |x| tid * N + x,
        |input_thrd| {
            group(thread[1], || {
                thread_load::<N>(input_thrd, out);
            });
        },
    );
}

/// Appendix B `block_load`: a block loads `blockDim * N` consecutive items of `input`; thread `t` receives items
/// `t * N .. (t + 1) * N` in `out`. Splits the block into warps and calls [`warp_load`] in each.
#[prism_device(requires(block[1], thread[32]))]
pub fn block_load<const N: u32>(input: *const i32, out: &mut [i32; N]) {
    #[at(thread[32])]
    let wid: u32 = id();
    partition(
        input,
        thread[32],
        |x| wid * 32 * N + x,
        |input_warp| {
            group(thread[32], || {
                warp_load::<N>(input_warp, out);
            });
        },
    );
}

/// Appendix B `thread_store`: each thread writes its `N` register items `input` to `output` (`thread[1]`).
#[prism_device(requires(thread[1]))]
pub fn thread_store<const N: u32>(input: &[i32; N], output: *mut i32) {
    for i in 0..N {
        output[i] = input[i];
    }
}

/// Appendix B `warp_store`: lane `i` writes its `N` items to `output[i * N .. (i + 1) * N]` (a `thread[32]`
/// pointer). Calls [`thread_store`] per lane.
#[prism_device(requires(thread[32]))]
pub fn warp_store<const N: u32>(input: &[i32; N], output: *mut i32) {
    #[at(thread[1])]
    let tid: u32 = id();
    partition(
        output,
        thread[1],
        |x| tid * N + x,
        |output_thrd| {
            group(thread[1], || {
                thread_store::<N>(input, output_thrd);
            });
        },
    );
}

/// Appendix B `block_store`: thread `t` writes its `N` items to `output[t * N .. (t + 1) * N]`. Calls
/// [`warp_store`] in each warp.
#[prism_device(requires(block[1], thread[32]))]
pub fn block_store<const N: u32>(input: &[i32; N], output: *mut i32) {
    #[at(thread[32])]
    let wid: u32 = id();
    partition(
        output,
        thread[32],
        |x| wid * 32 * N + x,
        |output_warp| {
            group(thread[32], || {
                warp_store::<N>(input, output_warp);
            });
        },
    );
}

// ---- Load/store chain. ----

/// Copies `input` to `output` through registers with [`block_load`] then [`block_store`]: each of the 128
/// threads of a block holds `N` consecutive `i32` items, so a block copies `128 * N` items. Launch
/// `len / (128 * N)` blocks of exactly 128 threads (`len` a multiple of `128 * N`).
///
/// ```
/// use prism_runtime::{Device, LaunchDims};
/// let dev = Device::auto()?;
/// let data: Vec<i32> = (0..1024).collect();
/// let input = dev.htod(&data)?;
/// let mut output = dev.alloc_zeros::<i32>(data.len())?;
/// prism_kernels::load_store_chain::<4>::launch(&dev, LaunchDims::new(2, 128), &input, &mut output)?;
/// assert_eq!(dev.dtoh(&output)?, data);
/// # Ok::<(), prism_runtime::RuntimeError>(())
/// ```
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128, instances = [1, 4])]
pub fn load_store_chain<const N: u32>(input: *const i32, output: *mut i32) {
    #[at(block[1])]
    let bid: u32 = id();
    partition(
        input,
        block[1],
        |x| bid * 128 * N + x,
        |in_blk| {
            partition(
                output,
                block[1],
                |x| bid * 128 * N + x,
                |out_blk| {
                    group(block[1], || {
                        #[at(thread[1])]
                        let mut data = [0i32; N];
                        block_load::<N>(in_blk, &mut data);
                        block_store::<N>(&data, out_blk);
                    });
                },
            );
        },
    );
}

// ---- Fig. 5 and Fig. 6: TF32 tensor cores. ----

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

// ---- Vector add. ----

/// `c[i] = a[i] + b[i]` for `i < n`, one element per thread (`f32`). Any grid and block size works; launch
/// at least `n` threads in total.
///
/// ```
/// use prism_runtime::{Device, LaunchDims};
/// let dev = Device::auto()?;
/// let n = 1000u32;
/// let a = dev.htod(&vec![1.0f32; n as usize])?;
/// let b = dev.htod(&vec![2.0f32; n as usize])?;
/// let mut c = dev.alloc_zeros::<f32>(n as usize)?;
/// prism_kernels::vector_add::launch(&dev, LaunchDims::new(n.div_ceil(256), 256), &a, &b, &mut c, n)?;
/// assert!(dev.dtoh(&c)?.iter().all(|&x| x == 3.0));
/// # Ok::<(), prism_runtime::RuntimeError>(())
/// ```
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn vector_add(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    // id() into a thread[1] variable from grid[1] code: the global thread index.
    #[at(thread[1])]
    let i: u32 = id();
    partition(
        c,
        thread[1],
        |x| i + x,
        |c_th| {
            group(thread[1], || {
                if i < n {
                    c_th[0] = a[i] + b[i];
                }
            });
        },
    );
}

// ---- The sgemm ladder of paper 000 §6.1.1 (and a host API for Fig. 6). ----
pub mod sgemm;

// ---- Reductions and scans (CUB-like thread/warp/block functions, decoupled look-back scan). ----
// `macro_use`: the scan module calls the reduction module's device functions (textual macro scope).
#[macro_use]
pub mod reduce;
pub mod scan;
