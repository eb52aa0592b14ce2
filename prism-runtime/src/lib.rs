//! Loading and launching Prism kernels.
//!
//! Two backends share one launch API: the GPU (through cudarc) and the emulator ([`emu`]), which runs the
//! same PTX on the CPU with SIMT semantics, fault detection and cost counters. [`Device::auto`] picks the GPU
//! when a CUDA driver and a device are present and the emulator otherwise; [`Device::name`] says which.
//!
//! ```no_run
//! use prism_runtime::{Device, KernelArg, KernelInfo, LaunchDims};
//! # fn demo(kernel: &KernelInfo) -> Result<(), prism_runtime::RuntimeError> {
//! let dev = Device::auto()?;
//! let a = dev.htod(&[1.0f32, 2.0, 3.0])?;
//! let mut c = dev.alloc_zeros::<f32>(3)?;
//! // SAFETY: `kernel` is the `INFO` of a `#[prism_kernel]` (its checked PTX); the arguments are validated.
//! unsafe {
//!     dev.launch(kernel, LaunchDims::new(1, 32), &mut [a.as_arg(), c.as_arg_mut(), KernelArg::U32(3)])?;
//! }
//! let host = dev.dtoh(&c)?;
//! # let _ = host; Ok(()) }
//! ```
//!
//! Every launch is checked first: the dimensions against the kernel's [`Contract`] ([`validate_launch`]) and
//! the arguments against its [`ParamSpec`]s. See `docs/RUNTIME.md`.

#![warn(missing_docs)]

mod arg;
mod device;
pub mod emu;
mod error;
mod gpu;
mod tensor_map;
mod types;
mod validate;

pub use arg::{BufHandle, DeviceCopy, KernelArg, TensorMapHandle};
pub use device::{Device, DeviceBuffer, LaunchReport, BACKEND_ENV};
pub use emu::{TensorDataType, TensorL2Promotion, TensorSwizzle};
pub use error::RuntimeError;
pub use tensor_map::{TensorMap, TensorMapMut};
pub use types::{
    registered_kernels, Backend, Contract, DeviceProperties, ElemType, KernelInfo, LaunchDims,
    ParamSpec, ParamType, RegisteredKernel,
};
pub use validate::{
    validate_launch, MAX_CLUSTER_BLOCKS, MAX_GRID_X, MAX_SMEM_BYTES, MAX_THREADS_PER_BLOCK,
};

/// The cudarc version the GPU backend is built on, for code that needs the driver API directly.
pub use cudarc;
/// Re-exported for the `#[prism_kernel]` expansion: `::prism_runtime::half::bf16` in launch signatures.
pub use half;
/// Re-exported for the `#[prism_kernel]` expansion: `::prism_runtime::inventory::submit! { .. }`.
pub use inventory;
