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
#[macro_use]
mod mma;
pub use mma::{mma_tf32_naive, simple_mma};

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

// ---- The Hopper bf16 GEMM ladder (TMA, wgmma): `gemm_bf16`. ----
pub mod gemm;

// ---- Reductions and scans (CUB-like thread/warp/block functions, decoupled look-back scan). ----
// `macro_use`: the scan module calls the reduction module's device functions (textual macro scope).
#[macro_use]
pub mod reduce;
pub mod scan;
