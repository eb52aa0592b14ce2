//! Accessors to the CUDA objects behind a GPU [`Device`] and its [`DeviceBuffer`]s, for code that calls CUDA
//! libraries directly (cuBLAS in the benchmarks) or times work with CUDA events. Everything returns `None` on
//! the emulator. Purely additive: nothing here changes how devices, buffers or launches behave.
//!
//! (A child module of `device`, declared there with `#[path]`, so that it can read the private fields.)

use super::{Device, DeviceBuffer, Kind, Store};
use crate::arg::DeviceCopy;
use cudarc::driver::{CudaSlice, CudaStream};
use std::sync::Arc;

impl Device {
    /// The CUDA stream every launch, copy and allocation of this GPU device is queued on (the primary
    /// context's default stream), or `None` on the emulator. Work queued on it by other libraries (cuBLAS,
    /// CUDA events) is ordered with Prism's launches.
    pub fn cuda_stream(&self) -> Option<Arc<CudaStream>> {
        match &self.inner.kind {
            // An empty upload allocates nothing: cudarc returns a null slice that carries the stream.
            Kind::Gpu(g) => g.htod::<u8>(&[]).ok().map(|s| s.stream().clone()),
            Kind::Emu(_) => None,
        }
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// The cudarc slice behind a GPU buffer (`None` on the emulator), e.g. as a cuBLAS operand.
    pub fn cuda_slice(&self) -> Option<&CudaSlice<T>> {
        match &self.store {
            Store::Gpu(s) => Some(s),
            Store::Emu { .. } => None,
        }
    }

    /// The cudarc slice behind a GPU buffer, writable (`None` on the emulator).
    pub fn cuda_slice_mut(&mut self) -> Option<&mut CudaSlice<T>> {
        match &mut self.store {
            Store::Gpu(s) => Some(s),
            Store::Emu { .. } => None,
        }
    }
}
