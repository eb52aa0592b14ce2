//! Prism for Rust: GPU kernels whose types carry *perspectives* (grid, block, thread), checked while rustc
//! compiles your crate, emitted as PTX text embedded in the binary, and launched on a GPU (cudarc) or on the
//! CPU PTX emulator.
//!
//! This umbrella crate re-exports the pieces:
//!
//! * [`prism_kernel`] and [`prism_device`]: the attributes (surface syntax: `docs/SYNTAX.md`);
//! * the runtime essentials ([`Device`], [`DeviceBuffer`], [`LaunchDims`], [`KernelInfo`], ..) from
//!   `prism-runtime`, and the whole crate as [`runtime`];
//! * the compiler library as [`core`] (parse, check, emit: usable at run time and in tests);
//! * the kernel library as [`kernels`] (CUB-like load/store, TF32 `mma.sync`, vector add, ..).
//!
//! A crate may depend on this crate alone and write its own kernels (`prism::prism_kernel`, the library's
//! device functions as `prism::kernels::block_load::<4>(..)`): the expansion names the runtime and the
//! macros through whichever of `prism-runtime`, `prism-macros` and `prism` the crate's `Cargo.toml` lists
//! (see `docs/COMPOSITION.md`).
//!
//! ```
//! use prism::{Device, LaunchDims};
//!
//! let dev = Device::auto()?; // GPU 0 if present, else the emulator
//! println!("running on {}", dev.name());
//! let a = dev.htod(&[1.0f32, 2.0, 3.0, 4.0])?;
//! let b = dev.htod(&[0.5f32; 4])?;
//! let mut c = dev.alloc_zeros::<f32>(4)?;
//! // A kernel from the library; its launcher is typed from the kernel's parameters, and the launch is
//! // validated against the kernel's contract before anything runs.
//! prism::kernels::vector_add::launch(&dev, LaunchDims::new(1, 32), &a, &b, &mut c, 4)?;
//! assert_eq!(dev.dtoh(&c)?, vec![1.5, 2.5, 3.5, 4.5]);
//! # Ok::<(), prism::RuntimeError>(())
//! ```
//!
//! A kernel of your own (checked at compile time: calling `sync_warp()` from `thread[1]` code, or a device
//! function with a narrower argument than its signature requires, is a compile error at that span):
//!
//! ```
//! use prism::{Device, LaunchDims};
//! use prism_macros::prism_kernel;
//!
//!
//! #[prism_kernel(requires(grid[1], block[1], thread[32]))]
//! pub fn copy_warps(input: *const i32, output: *mut i32) {
//!     #[at(thread[32])]
//!     let w: u32 = id();
//!     partition(input, thread[32], |x| w * 128 + x, |in_w| {
//!         partition(output, thread[32], |x| w * 128 + x, |out_w| {
//!             group(thread[32], || {
//!                 #[at(thread[1])]
//!                 let mut data = [0i32; 4];
//!                 prism_kernels::warp_load::<4>(in_w, &mut data);
//!                 prism_kernels::warp_store::<4>(&data, out_w);
//!             });
//!         });
//!     });
//! }
//!
//! let dev = Device::auto()?;
//! let data: Vec<i32> = (0..512).collect();
//! let input = dev.htod(&data)?;
//! let mut output = dev.alloc_zeros::<i32>(512)?;
//! copy_warps::launch(&dev, LaunchDims::new(1, 128), &input, &mut output)?; // 4 warps x 128 items
//! assert_eq!(dev.dtoh(&output)?, data);
//! # Ok::<(), prism::RuntimeError>(())
//! ```

/// The macros crate, for the expansion of kernels in crates that depend on this crate alone.
#[doc(hidden)]
pub use prism_macros as __macros;
pub use prism_macros::{prism_device, prism_kernel};
pub use prism_runtime::{
    registered_kernels, validate_launch, Backend, Contract, Device, DeviceBuffer, DeviceCopy,
    ElemType, KernelArg, KernelInfo, LaunchDims, LaunchReport, ParamSpec, ParamType, RuntimeError,
};

/// The compiler library (`prism-core`): syntax tree, perspective checker, PTX emitter.
pub use prism_core as core;
/// The kernel library (`prism-kernels`).
pub use prism_kernels as kernels;
/// The runtime (`prism-runtime`): devices, buffers, launches, the emulator.
pub use prism_runtime as runtime;
