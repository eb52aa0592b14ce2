//! Hardware facts the compiler, the runtime and the emulator all check against, defined once (sm_90,
//! the H100; CUDA C++ Programming Guide, "Compute Capabilities", and the PTX ISA).

/// Threads per block (every architecture since sm_20).
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
/// Blocks in grid x: 2^31 − 1.
pub const MAX_GRID_X: u32 = i32::MAX as u32;
/// Blocks in grid y and z.
pub const MAX_GRID_YZ: u32 = 65_535;
/// Shared memory per block with opt-in on sm_90 (227 KiB), the largest of any supported GPU.
pub const MAX_SMEM_BYTES: u32 = 232_448;
/// Largest portable thread-block cluster ("Thread Block Clusters": 8 blocks; 16 needs a non-portable
/// opt-in the runtime does not set).
pub const MAX_CLUSTER_BLOCKS: u32 = 8;
/// Named barriers per block (`bar.sync` ids 0..=15; id 0 is the block-wide barrier).
pub const NAMED_BARRIERS: u32 = 16;
/// 32-bit registers per SM, the budget `setmaxnreg` counts redistribute (64 K).
pub const REGISTERS_PER_SM: u32 = 65_536;
/// Threads per warp.
pub const WARP_SIZE: u32 = 32;
