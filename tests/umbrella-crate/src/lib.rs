//! Kernels of a crate whose only Prism dependency is the umbrella crate, renamed `gpu` in its manifest:
//! the macros are reached as `gpu::prism_kernel`, the library's device functions as
//! `gpu::kernels::name::<..>(..)`, and the expansion names the runtime as `::gpu::runtime`.

use gpu::{prism_device, prism_kernel};

/// `thread[1]`: the sum of this thread's items, generic, with an alias per type (`sum_items_i32`).
#[prism_device(requires(thread[1]), returns = thread[1], aliases = [i32, f32])]
pub fn sum_items<T: Num32, const N: u32>(items: &[T; N]) -> T {
    let mut s: T = 0 as T;
    for i in 0..N {
        s = s + items[i];
    }
    s
}

/// Each block of 128 threads loads 512 items with the library's `block_load` (4 per thread, through the
/// umbrella's `kernels`), and thread `t` writes the sum of its items plus the warp's total of lane ids
/// (the library's `warp_reduce_u32`, 496): `out[t] = in[4t] + .. + in[4t+3] + 496`.
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128)]
pub fn sums_of_four(input: *const i32, out: *mut i32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(
        input,
        block[1],
        |x| b * 512 + x,
        |in_blk| {
            partition(
                out,
                block[1],
                |x| b * 128 + x,
                |out_blk| {
                    group(block[1], || {
                        #[at(thread[1])]
                        let mut items = [0i32; 4];
                        gpu::kernels::block_load::<4>(in_blk, &mut items);
                        #[at(thread[1])]
                        let t: u32 = id();
                        #[at(thread[1])]
                        let mut lanes: u32 = 0;
                        group(thread[32], || {
                            lanes = gpu::kernels::warp_reduce_u32(t % 32);
                        });
                        partition(
                            out_blk,
                            thread[1],
                            |x| t + x,
                            |o| {
                                group(thread[1], || {
                                    o[0] = sum_items_i32::<4>(&items) + lanes as i32;
                                });
                            },
                        );
                    });
                },
            );
        },
    );
}

/// bf16 in, f32 out: `out[i] = 2 * x[i]`, one element per thread (the launcher takes
/// `DeviceBuffer<gpu::runtime::half::bf16>`).
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 64)]
pub fn widen_bf16(x: *const bf16, out: *mut f32, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(
        out,
        thread[1],
        |j| i + j,
        |o| {
            group(thread[1], || {
                if i < n {
                    o[0] = 2.0 * x[i] as f32;
                }
            });
        },
    );
}
