//! Reductions (sums) at thread, warp and block level, and a device-wide reduction, for `u32`, `i32` and
//! `f32` (paper 000 §6.1.2: block functions call warp functions call thread functions).
//!
//! Each function is written once, generic over its value type `T: Num32` (u32, i32, f32; docs/SYNTAX.md
//! "Type generics"), and called with the type first: `warp_reduce::<f32>(v)`, `thread_reduce::<T, N>(&items)`.
//! The names from before Prism had type generics stay: `warp_reduce_f32(v)` is `warp_reduce::<f32>(v)`
//! (`aliases = [u32, i32, f32]`), the kernel `reduce_sum_kernel_u32::<4>` is `reduce_sum_kernel::<u32, 4>`.
//!
//! | level | function | perspective signature | result |
//! |---|---|---|---|
//! | thread | `thread_reduce::<T, N>(&[T; N])` | `requires(thread[1])` | `thread[1]` |
//! | warp | `warp_reduce::<T>(v)` (`shfl_xor`, all lanes) / `warp_reduce_down::<T>(v)` (`shfl_down`, lane 0) | `requires(thread[32])` | `thread[1]` |
//! | block | `block_reduce::<T>(v)` | `requires(block[1], thread[32])`, `smem = 144` | `block[1]` |
//! | device | [`reduce_sum`] (host API; also `reduce_sum_u32` etc.) | kernel `requires(grid[1], block[1], thread[32])`, 128 threads | `out[0]` |
//!
//! ```
//! use prism_runtime::Device;
//! let dev = Device::auto()?;
//! let data: Vec<u32> = (1..=1000).collect();
//! let input = dev.htod(&data)?;
//! let mut out = dev.alloc_zeros::<u32>(1)?;
//! prism_kernels::reduce::reduce_sum_u32(&dev, &input, &mut out)?;
//! assert_eq!(dev.dtoh(&out)?[0], 500_500);
//! # Ok::<(), prism_runtime::RuntimeError>(())
//! ```

use prism_macros::{prism_device, prism_kernel};
use prism_runtime::{Device, DeviceBuffer, DeviceCopy, LaunchDims, LaunchReport, RuntimeError};

/// Element counts are `u32` in the kernels.
pub(crate) fn checked_len(n: usize) -> Result<u32, RuntimeError> {
    u32::try_from(n).map_err(|_| {
        RuntimeError::BadArgs(format!(
            "{n} elements: the kernels index with u32 (at most {})",
            u32::MAX
        ))
    })
}

/// Block level (`block[1]`): the number of warps in the block, `ceil(%ntid.x / 32)`. Inline PTX wrapped in a
/// device function that declares the result `block[1]`: the block size is the same for every thread of the
/// block, which the checker cannot derive by itself.
#[prism_device(requires(block[1]), returns = block[1])]
pub fn block_warps() -> u32 {
    let mut t: u32 = 0;
    unsafe {
        asm!("mov.u32 {t}, %ntid.x;", t = out(u32) t);
    }
    (t + 31) / 32
}

/// Thread level (`thread[1]`): loads `input[first .. first + N]` into `items`, with zero (the identity of
/// the sum) for indices `>= n`. Full runs of a multiple of 4 use 16-byte vector loads (`ld.global.v4`).
#[prism_device(requires(thread[1]), aliases = [u32, i32, f32])]
pub fn load_items<T: Num32, const N: u32>(input: *const T, first: u32, n: u32, items: &mut [T; N]) {
    if N % 4 == 0 && first + N <= n {
        for j in 0..N / 4 {
            let v: [T; 4] = load4(input, first + 4 * j);
            items[4 * j] = v[0];
            items[4 * j + 1] = v[1];
            items[4 * j + 2] = v[2];
            items[4 * j + 3] = v[3];
        }
    } else {
        for i in 0..N {
            if first + i < n {
                items[i] = input[first + i];
            } else {
                items[i] = 0 as T;
            }
        }
    }
}

/// Thread level (`thread[1]`): the sum of this thread's `N` register items (`T`, wrapping for integers).
#[prism_device(requires(thread[1]), returns = thread[1], aliases = [u32, i32, f32])]
pub fn thread_reduce<T: Num32, const N: u32>(items: &[T; N]) -> T {
    let mut s: T = 0 as T;
    for i in 0..N {
        s = s + items[i];
    }
    s
}

/// Warp level (`thread[32]`): butterfly sum with `shfl_xor`; every lane receives the warp's total. The
/// result is typed `thread[1]` because the checker types every shuffle result `thread[1]` (it cannot know
/// the butterfly makes all lanes agree); see docs/KERNELS.md.
#[prism_device(requires(thread[32]), returns = thread[1], aliases = [u32, i32, f32])]
pub fn warp_reduce<T: Num32>(#[at(thread[1])] v: T) -> T {
    #[at(thread[1])]
    let mut x: T = v;
    for k in 0..5 {
        x = x + shfl_xor(x, 16u32 >> k);
    }
    x
}

/// Warp level (`thread[32]`): tree sum with `shfl_down`; lane 0 receives the warp's total (the other lanes
/// hold partial sums).
#[prism_device(requires(thread[32]), returns = thread[1], aliases = [u32, i32, f32])]
pub fn warp_reduce_down<T: Num32>(#[at(thread[1])] v: T) -> T {
    #[at(thread[1])]
    let mut x: T = v;
    for k in 0..5 {
        x = x + shfl_down(x, 16u32 >> k);
    }
    x
}

/// Block level (`block[1]`, warps of `thread[32]`): the sum of `v` over every thread of the block, returned
/// at `block[1]` (read back from shared memory, so every thread holds the same value). Each warp reduces
/// with [`warp_reduce`], lane 0 of each warp writes the warp's partial into a shared array (a
/// `thread[32]` partition, then a `thread[1]` claim taken by one split arm), and after the partition's
/// barrier the first warp (`split(warp)`) reduces the partials and publishes the total. Works for any
/// block of a multiple of 32 threads up to 1024.
#[prism_device(requires(block[1], thread[32]), smem = 144, returns = block[1], aliases = [u32, i32, f32])]
pub fn block_reduce<T: Num32>(#[at(thread[1])] v: T) -> T {
    // 32 warp partials + the block total.
    let partials: Shared<[T; 33]>;
    let nwarps: u32 = block_warps();
    #[at(thread[32])]
    let wid: u32 = id();
    partition(
        partials,
        thread[32],
        |x| wid + x,
        |pw| {
            group(thread[32], || {
                #[at(thread[1])]
                let s: T = warp_reduce::<T>(v);
                claim(pw, thread[1], |p1| match split(thread) {
                    1 => {
                        p1[0] = s;
                    }
                });
            });
        },
    );
    claim(partials, thread[32], |pw0| match split(warp) {
        1 => {
            #[at(thread[1])]
            let lane: u32 = id();
            #[at(thread[1])]
            let mut x: T = 0 as T;
            group(thread[1], || {
                if lane < nwarps {
                    x = pw0[lane];
                }
            });
            #[at(thread[1])]
            let t: T = warp_reduce::<T>(x);
            claim(pw0, thread[1], |p1| match split(thread) {
                1 => {
                    p1[32] = t;
                }
            });
        }
    });
    #[at(block[1])]
    let total: T = partials[32];
    total
}

/// Device-wide sum of `input[0..n]` into `out[0]`, which must hold zero before the launch (the host API
/// [`reduce_sum`] does that): each block of 128 threads reduces a tile of `128 * ITEMS` items
/// ([`thread_reduce`] → [`block_reduce`]) and its first thread adds the tile's sum with one `atomic_add`.
/// Launch `ceil(n / (128 * ITEMS))` blocks of 128 threads.
#[prism_kernel(
    requires(grid[1], block[1], thread[32]),
    threads = 128,
    smem = 144,
    instances = [(u32, 4), (u32, 16), (i32, 4), (i32, 16), (f32, 4), (f32, 16)],
    aliases = [u32, i32, f32]
)]
pub fn reduce_sum_kernel<T: Num32, const ITEMS: u32>(input: *const T, out: *mut T, n: u32) {
    #[at(block[1])]
    let bid: u32 = id();
    group(block[1], || {
        #[at(block[1])]
        let base: u32 = bid * 128 * ITEMS;
        #[at(thread[1])]
        let tid: u32 = id();
        #[at(thread[1])]
        let mut items = [0 as T; ITEMS];
        group(thread[1], || {
            load_items::<T, ITEMS>(input, base + tid * ITEMS, n, &mut items);
        });
        #[at(thread[1])]
        let mine: T = thread_reduce::<T, ITEMS>(&items);
        #[at(block[1])]
        let total: T = block_reduce::<T>(mine);
        match split(thread) {
            1 => {
                atomic_add(out, 0, total);
            }
        }
    });
}

/// Writes zero into `out[0]` (one thread), so the atomics of [`reduce_sum_kernel`] start from zero without a
/// host-to-device copy.
#[prism_kernel(requires(grid[1], block[1], thread[1]), instances = [u32, i32, f32], aliases = [u32, i32, f32])]
pub fn reduce_zero<T: Num32>(out: *mut T) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(
        out,
        thread[1],
        |x| i + x,
        |o| {
            group(thread[1], || {
                if i == 0 {
                    o[0] = 0 as T;
                }
            });
        },
    );
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
    impl Sealed for f32 {}
}

/// The value types of the reduce and scan library (`u32`, `i32`, `f32`: the Prism bound `Num32` the kernels
/// are generic over). Its methods launch this type's kernel instances; use the host APIs ([`reduce_sum`],
/// [`crate::scan::scan`]) instead.
pub trait Value: DeviceCopy + sealed::Sealed {
    /// Launches `reduce_zero::<Self>`.
    #[doc(hidden)]
    fn launch_reduce_zero(
        dev: &Device,
        dims: LaunchDims,
        out: &mut DeviceBuffer<Self>,
    ) -> Result<LaunchReport, RuntimeError>;
    /// Launches `reduce_sum_kernel::<Self, ITEMS>` (`items` 4 or 16).
    #[doc(hidden)]
    fn launch_reduce_sum(
        dev: &Device,
        items: u32,
        dims: LaunchDims,
        input: &DeviceBuffer<Self>,
        out: &mut DeviceBuffer<Self>,
        n: u32,
    ) -> Result<LaunchReport, RuntimeError>;
}

macro_rules! value_impl {
    ($t:ty) => {
        impl Value for $t {
            fn launch_reduce_zero(
                dev: &Device,
                dims: LaunchDims,
                out: &mut DeviceBuffer<$t>,
            ) -> Result<LaunchReport, RuntimeError> {
                reduce_zero::<$t>::launch(dev, dims, out)
            }
            fn launch_reduce_sum(
                dev: &Device,
                items: u32,
                dims: LaunchDims,
                input: &DeviceBuffer<$t>,
                out: &mut DeviceBuffer<$t>,
                n: u32,
            ) -> Result<LaunchReport, RuntimeError> {
                match items {
                    4 => reduce_sum_kernel::<$t, 4>::launch(dev, dims, input, out, n),
                    _ => reduce_sum_kernel::<$t, 16>::launch(dev, dims, input, out, n),
                }
            }
        }
    };
}
value_impl!(u32);
value_impl!(i32);
value_impl!(f32);

/// Host API: the sum of every element of `input`, written to `out[0]` on the device (no host round trip).
/// Launches [`reduce_zero`] then [`reduce_sum_kernel`] (4 items per thread below 2^20 elements, else 16).
/// Integer sums wrap; `f32` sums are accumulated per block in a fixed order but blocks are combined with
/// atomics, so on a GPU the last bits depend on the order in which blocks finish.
pub fn reduce_sum<T: Value>(
    dev: &Device,
    input: &DeviceBuffer<T>,
    out: &mut DeviceBuffer<T>,
) -> Result<(), RuntimeError> {
    let n = checked_len(input.len())?;
    if out.is_empty() {
        return Err(RuntimeError::BadArgs("reduce: `out` has no element".into()));
    }
    // Before `out` is zeroed: a refused call leaves memory as it was.
    for (what, d) in [("input", input.device()), ("out", out.device())] {
        if d.id() != dev.id() {
            return Err(RuntimeError::BadArgs(format!(
                "reduce_sum: `{what}` belongs to another device than `dev`"
            )));
        }
    }
    T::launch_reduce_zero(dev, LaunchDims::new(1, 32), out)?;
    if n == 0 {
        return Ok(());
    }
    let items = if n < 1 << 20 { 4 } else { 16 };
    T::launch_reduce_sum(
        dev,
        items,
        LaunchDims::new(n.div_ceil(128 * items), 128),
        input,
        out,
        n,
    )?;
    Ok(())
}

/// [`reduce_sum`] of `u32` values (the name from before the library was generic).
pub fn reduce_sum_u32(
    dev: &Device,
    input: &DeviceBuffer<u32>,
    out: &mut DeviceBuffer<u32>,
) -> Result<(), RuntimeError> {
    reduce_sum(dev, input, out)
}

/// [`reduce_sum`] of `i32` values (the name from before the library was generic).
pub fn reduce_sum_i32(
    dev: &Device,
    input: &DeviceBuffer<i32>,
    out: &mut DeviceBuffer<i32>,
) -> Result<(), RuntimeError> {
    reduce_sum(dev, input, out)
}

/// [`reduce_sum`] of `f32` values (the name from before the library was generic).
pub fn reduce_sum_f32(
    dev: &Device,
    input: &DeviceBuffer<f32>,
    out: &mut DeviceBuffer<f32>,
) -> Result<(), RuntimeError> {
    reduce_sum(dev, input, out)
}
