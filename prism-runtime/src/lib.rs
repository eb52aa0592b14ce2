//! Loading and launching Prism kernels.
//!
//! Two backends share one launch API: the GPU (through cudarc) and the emulator ([`emu`]), which runs the
//! same PTX on the CPU with SIMT semantics, fault detection and cost counters.

pub mod emu;
