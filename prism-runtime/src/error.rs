//! The runtime's error type.

use std::fmt;

use crate::emu;

/// Errors of the runtime. Every failure of device selection, memory transfer, argument checking or launch
/// comes back as one of these; the runtime never panics on them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RuntimeError {
    /// No usable GPU: no CUDA driver library, no device, or the requested ordinal does not exist.
    NoGpu(String),
    /// A CUDA driver call failed (or the driver binding panicked, e.g. on a missing symbol).
    Driver(String),
    /// The launch dimensions or shared memory violate the kernel's contract or the device's limits.
    BadLaunch(String),
    /// Bad arguments: to a kernel (count, kind, element type, mutability, owning device, a tensor map's
    /// box), or to a host API (lengths, sizes, the backend named in `PRISM_BACKEND`); the message says which.
    BadArgs(String),
    /// The emulator rejected the launch or the kernel faulted there.
    Emulator(emu::EmuError),
    /// A buffer was used with a device it does not belong to (e.g. [`crate::Device::dtoh`]).
    WrongDevice,
    /// The kernel's PTX could not be loaded (parse error on the emulator, JIT error on the GPU).
    Ptx(String),
    /// A [`crate::TensorMap`] was refused: the message names the rule of `cuTensorMapEncodeTiled` (or the
    /// tensor-inside-the-buffer rule) it breaks.
    TensorMap(String),
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::NoGpu(m) => write!(f, "no GPU available: {}", m),
            RuntimeError::Driver(m) => write!(f, "CUDA driver error: {}", m),
            RuntimeError::BadLaunch(m) => write!(f, "launch violates the kernel contract: {}", m),
            RuntimeError::BadArgs(m) => write!(f, "bad arguments: {}", m),
            RuntimeError::Emulator(e) => write!(f, "emulator: {}", e),
            RuntimeError::WrongDevice => f.write_str(
                "the buffer belongs to another device than the one the call was made on",
            ),
            RuntimeError::Ptx(m) => write!(f, "PTX could not be loaded: {}", m),
            RuntimeError::TensorMap(m) => write!(f, "invalid tensor map: {}", m),
        }
    }
}

impl std::error::Error for RuntimeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RuntimeError::Emulator(e) => Some(e),
            _ => None,
        }
    }
}

impl From<emu::EmuError> for RuntimeError {
    fn from(e: emu::EmuError) -> Self {
        RuntimeError::Emulator(e)
    }
}
