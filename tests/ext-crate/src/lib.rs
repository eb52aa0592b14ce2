//! Cross-crate composition: kernels in a crate other than `prism-kernels` that call its device functions.
//!
//! `prism_kernels::warp_load::<4>(..)` below is resolved through the macro `prism_kernels::__prism_device_warp_load!`
//! (see `docs/COMPOSITION.md`): the callee's perspective signature is checked at the call, in this crate, and
//! its body (with its own callees, `thread_load`) is inlined into these kernels' PTX: there is no `call`
//! instruction in it.

use prism_macros::{prism_device, prism_kernel};

/// Each warp copies `32 * 4` consecutive `i32`s through registers with `prism_kernels::warp_load::<4>` and
/// `prism_kernels::warp_store::<4>`. Launch `len / 128` items' worth of warps: any block size that is a
/// multiple of 32, `grid * block / 32 * 128 == len`.
#[prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn ext_warp_copy(input: *const i32, output: *mut i32) {
    // Global warp index (id() from grid[1] code into a thread[32] variable).
    #[at(thread[32])]
    let w: u32 = id();
    partition(
        input,
        thread[32],
        |x| w * 128 + x,
        |in_w| {
            partition(
                output,
                thread[32],
                |x| w * 128 + x,
                |out_w| {
                    group(thread[32], || {
                        #[at(thread[1])]
                        let mut data = [0i32; 4];
                        prism_kernels::warp_load::<4>(in_w, &mut data);
                        prism_kernels::warp_store::<4>(&data, out_w);
                    });
                },
            );
        },
    );
}

/// Each block of 64 threads copies `64 * 2` consecutive `i32`s with `prism_kernels::block_load::<2>` and
/// `prism_kernels::block_store::<2>`, adding 1 to every item on the way. Launch `len / 128` blocks of 64.
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64)]
pub fn ext_block_copy_plus_one(input: *const i32, output: *mut i32) {
    #[at(block[1])]
    let bid: u32 = id();
    partition(
        input,
        block[1],
        |x| bid * 128 + x,
        |in_blk| {
            partition(
                output,
                block[1],
                |x| bid * 128 + x,
                |out_blk| {
                    group(block[1], || {
                        #[at(thread[1])]
                        let mut data = [0i32; 2];
                        prism_kernels::block_load::<2>(in_blk, &mut data);
                        group(thread[1], || {
                            data[0] = data[0] + 1;
                            data[1] = data[1] + 1;
                        });
                        prism_kernels::block_store::<2>(&data, out_blk);
                    });
                },
            );
        },
    );
}

/// The warp's sum: a generic helper that [`lane_total_sq`] calls by its bare name. A crate calling
/// `lane_total_sq` may have a device function of this name of its own (`tests/e2e_kernels.rs` does).
#[prism_device(requires(thread[32]), returns = thread[1])]
pub fn lane_total<T: Num32>(#[at(thread[1])] v: T) -> T {
    #[at(thread[1])]
    let mut x: T = v;
    for k in 0..5 {
        x = x + shfl_xor(x, 16u32 >> k);
    }
    x
}

/// The warp's sum of squares, through the generic [`lane_total`].
#[prism_device(requires(thread[32]), returns = thread[1])]
pub fn lane_total_sq<T: Num32>(#[at(thread[1])] v: T) -> T {
    lane_total::<T>(v * v)
}

/// A consumer warpgroup's register raise (`setmaxnreg.inc` to 240): a library building block whose
/// budget only the calling kernel can check (`tests/ext-crate/ui/setmaxnreg_over_in_callee.rs`).
#[prism_device(requires(thread[128]))]
pub fn raise_regs_240() {
    set_max_regs(240);
}

/// Referenced by binaries that must keep this crate's kernels registered (the linker drops unreferenced
/// crates, and with them their `inventory` entries): `prism_ext_crate::link()`.
pub fn link() {}
