//! Limits on what a module or launch may make the emulator allocate (docs/EMULATOR.md, "Limits").
//!
//! Every size that comes from PTX text or launch arguments is checked against these bounds BEFORE the
//! emulator allocates for it, so hostile input (`.reg .b32 %r<99999999>;`, a `.shared` array of 2^40
//! bytes, a 1024-thread grid of such blocks) ends at once with an error value instead of allocating for
//! minutes.

/// Virtual registers a module may declare (all functions together; nvcc's largest kernels use a few
/// thousand). Each costs 8 bytes per thread of every resident block.
pub const MAX_REGISTERS: u32 = 65_536;
/// Bytes of one declared variable (`.shared`, `.local`, `.param`, `.global`, `.const`; arrays included).
pub const MAX_VARIABLE_BYTES: u64 = 64 << 20;
/// Bytes of local memory per thread (the module's `.local` variables and device-function parameters
/// together; the hardware's limit is 512 KiB per thread).
pub const MAX_LOCAL_BYTES: u64 = 512 << 10;
/// Bytes of statically declared shared memory in a module (the launch separately checks the hardware's
/// 227 KiB per block).
pub const MAX_SHARED_DECL_BYTES: u64 = 16 << 20;
/// Bytes of module-scope `.global`/`.const` variables (allocated in device memory on first launch).
pub const MAX_GLOBAL_VAR_BYTES: u64 = 64 << 20;
/// Bytes of an entry's parameter list (the CUDA limit since 12.1).
pub const MAX_PARAM_BYTES: u64 = 32_764;
/// Largest `.align`.
pub const MAX_ALIGN: u64 = 1 << 16;
/// Field width and precision of a device `printf` conversion (larger ones are clamped to it).
pub const MAX_PRINTF_FIELD: usize = 4096;
/// Global memory an emulator holds at once (all allocations; an H100's 80 GB): larger requests are
/// `EmuError::Memory` from [`super::Emulator::try_alloc`], not an abort.
pub const MAX_GLOBAL_BYTES: u64 = 80 << 30;
/// Emulator memory the resident blocks of one launch may take (registers, shared memory and its race
/// shadow, local memory, per-thread bookkeeping).
pub const MAX_LAUNCH_BYTES: u64 = 4 << 30;

/// How many clusters are resident at once (132 SMs, per SM at most 32 blocks, 2048 threads and 228 KiB of
/// shared memory; clusters are the unit of residency), at least 1 and at most `clusters`.
pub(crate) fn resident_clusters(
    nthreads: u32,
    smem_size: usize,
    csize: u64,
    clusters: u64,
) -> usize {
    let per_sm = [
        32u64,
        2048 / (nthreads.max(1) as u64),
        (228 * 1024) / (smem_size.max(1) as u64),
    ]
    .into_iter()
    .min()
    .unwrap_or(1)
    .max(1);
    ((132 * per_sm) / csize.max(1)).clamp(1, clusters.max(1)) as usize
}

/// What one launch's resident blocks take, for [`check_launch`].
pub(crate) struct LaunchShape {
    /// Registers of the module.
    pub nregs: u32,
    /// Threads per block.
    pub nthreads: u32,
    /// Shared bytes per block (static + dynamic).
    pub smem: u64,
    /// Local bytes per thread.
    pub local: u64,
    /// Race detection on (shared memory then has a shadow per byte).
    pub races: bool,
    /// Blocks in the grid.
    pub blocks: u64,
    /// Blocks per cluster.
    pub csize: u64,
}

/// Bytes of the race shadow of one byte of shared memory.
const SHADOW_BYTES: u64 = 24;
/// Per-thread bookkeeping besides registers and local memory (barrier epochs, exit generation, cluster
/// arrival, lane state), rounded up.
const THREAD_BYTES: u64 = 64;

/// Checks the emulator memory of a launch's resident blocks against [`MAX_LAUNCH_BYTES`]; the error is the
/// message of an `EmuError::BadLaunch`.
pub(crate) fn check_launch(s: &LaunchShape) -> Result<(), String> {
    let warps = (s.nthreads as u64).div_ceil(32);
    let regs = warps * 32 * 8 * s.nregs as u64;
    let shared = s.smem * if s.races { 1 + SHADOW_BYTES } else { 1 };
    let local = s.local * s.nthreads as u64;
    let per_block = regs + shared + local + THREAD_BYTES * s.nthreads as u64;
    let clusters = s.blocks / s.csize.max(1);
    let resident =
        resident_clusters(s.nthreads, s.smem as usize, s.csize, clusters) as u64 * s.csize;
    let total = per_block.saturating_mul(resident);
    if total > MAX_LAUNCH_BYTES {
        return Err(format!(
            "the launch's {resident} resident blocks would take {} MiB of emulator memory ({} bytes per block: \
             {} registers x {} threads, {} bytes of shared memory, {} bytes of local memory per thread); the limit is {} MiB",
            total >> 20,
            per_block,
            s.nregs,
            s.nthreads,
            s.smem,
            s.local,
            MAX_LAUNCH_BYTES >> 20
        ));
    }
    Ok(())
}
