//! PTX emulator: runs PTX kernels on the CPU with SIMT semantics, fault detection and cost counters.
//!
//! * [`Module::parse`] reads and pre-decodes PTX text.
//! * [`Emulator`] owns device (global) memory: [`Emulator::alloc`], [`Emulator::write`], [`Emulator::read`].
//! * [`Emulator::launch`] runs a grid and returns a [`LaunchReport`] with [`Counters`], or
//!   [`EmuError::Faulted`] with the detected [`Fault`]s (barrier divergence, collective misuse, deadlock,
//!   livelock, out-of-bounds accesses, data races, ...).
//!
//! See `docs/EMULATOR.md` for the execution model (per-thread program counters, lanes regrouped at equal
//! PCs, min-PC scheduling), the race detection scheme and the counter definitions.

use std::collections::HashMap;
use std::fmt;

pub mod cli;
mod exec;
pub mod limits;
mod printf;
mod ptx;
mod tensormap;
mod texture;

pub use ptx::{Module, ParamDecl, PtxError, PtxType};
pub use tensormap::{TensorDataType, TensorL2Promotion, TensorMap, TensorMapError, TensorSwizzle};
pub use texture::{AddressMode, FilterMode, ReadMode, TexelType, TextureDesc};

/// Order in which warps (and, in independent mode, diverged lane groups) are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// Deterministic round-robin over warps.
    RoundRobin,
    /// Seeded pseudo-random choice of warp, quantum and (independent mode) lane group.
    Random {
        /// Seed of the scheduler's generator.
        seed: u64,
    },
}

/// How the lanes of a diverged warp are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarpMode {
    /// Pre-Volta lockstep: the warp always runs the lane group with the smallest PC; a diverged group
    /// waits until the others reach it. A spin lock inside a warp livelocks.
    Lockstep,
    /// Volta+ independent thread scheduling: groups normally run min-PC first, but a group starved for a
    /// while is scheduled, so diverged lanes make progress (the spin lock completes).
    Independent,
}

/// The shape of a launch ([`Emulator::launch_cluster`], [`Emulator::launch_cooperative`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchGeometry {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// `None`: the kernel's `.reqnctapercluster`, or 1.
    pub cluster: Option<[u32; 3]>,
    pub dynamic_smem_bytes: u32,
    pub cooperative: bool,
}

/// Emulator configuration.
#[derive(Debug, Clone)]
pub struct EmuConfig {
    /// Warp scheduling order.
    pub schedule: Schedule,
    /// Intra-warp scheduling model.
    pub warp_mode: WarpMode,
    /// Detect data races on shared and global memory.
    pub check_races: bool,
    /// Bound on executed warp-instructions per launch; exceeding it reports [`FaultKind::Livelock`].
    pub max_steps: u64,
    /// OS threads a launch may run its blocks on (1 = one thread). Several are used only where the result
    /// is provably that of one thread (see `docs/EMULATOR.md`, "Blocks on several OS threads"); the
    /// default is the environment variable `PRISM_EMU_THREADS`, else the machine's available cores. With
    /// 1, blocks that provably do not interact run to completion one after another (faster than the
    /// interleaved run, same result); 0 always runs the interleaved one-thread model (a reference for
    /// tests).
    pub threads: usize,
}

/// [`EmuConfig::threads`]' default: `PRISM_EMU_THREADS` when it holds a positive number, else the
/// available cores (at most 64).
pub fn default_threads() -> usize {
    std::env::var("PRISM_EMU_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .min(64)
}

impl Default for EmuConfig {
    fn default() -> Self {
        EmuConfig {
            schedule: Schedule::RoundRobin,
            warp_mode: WarpMode::Independent,
            check_races: true,
            max_steps: 200_000_000,
            threads: default_threads(),
        }
    }
}

/// A kernel argument value.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    /// 32-bit unsigned.
    U32(u32),
    /// 32-bit signed.
    I32(i32),
    /// 64-bit unsigned.
    U64(u64),
    /// 64-bit signed.
    I64(i64),
    /// 32-bit float.
    F32(f32),
    /// 64-bit float.
    F64(f64),
    /// Device pointer (from [`Emulator::alloc`]).
    Ptr(u64),
    /// Raw bytes (structs, arrays).
    Bytes(Vec<u8>),
}

impl ParamValue {
    /// Little-endian bytes of the value.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            ParamValue::U32(v) => v.to_le_bytes().to_vec(),
            ParamValue::I32(v) => v.to_le_bytes().to_vec(),
            ParamValue::U64(v) | ParamValue::Ptr(v) => v.to_le_bytes().to_vec(),
            ParamValue::I64(v) => v.to_le_bytes().to_vec(),
            ParamValue::F32(v) => v.to_le_bytes().to_vec(),
            ParamValue::F64(v) => v.to_le_bytes().to_vec(),
            ParamValue::Bytes(b) => b.clone(),
        }
    }
}

/// Kinds of faults the emulator detects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// Not all (non-exited) threads of the block / warp reached the same barrier.
    BarrierDivergence,
    /// A warp collective (`shfl.sync`, `vote.sync`, `bar.warp.sync`, `match.sync`, `.aligned` `mma`/`ldmatrix`)
    /// whose member lanes did not execute it together.
    CollectiveMisuse,
    /// No thread can make progress.
    Deadlock,
    /// The step bound was exceeded while threads keep running (spinning).
    Livelock,
    /// Access outside a live allocation / the shared or local window.
    OutOfBounds,
    /// Conflicting unordered accesses by different threads.
    DataRace,
    /// Misuse of an `mbarrier` object.
    MbarrierMisuse,
    /// An instruction or form the emulator does not implement.
    Unsupported,
    /// Misaligned memory access.
    Misaligned,
    /// `trap` executed.
    Trap,
    /// Invalid operation (e.g. call of an undefined function).
    InvalidOperation,
    /// A register an asynchronous operation still owns was read or written: an accumulator or A-fragment
    /// register of a `wgmma` between its issue and the `wgmma.wait_group` that retires it.
    InFlight,
}

impl FaultKind {
    /// Stable name used in JSON output.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::BarrierDivergence => "BarrierDivergence",
            FaultKind::CollectiveMisuse => "CollectiveMisuse",
            FaultKind::Deadlock => "Deadlock",
            FaultKind::Livelock => "Livelock",
            FaultKind::OutOfBounds => "OutOfBounds",
            FaultKind::DataRace => "DataRace",
            FaultKind::MbarrierMisuse => "MbarrierMisuse",
            FaultKind::Unsupported => "Unsupported",
            FaultKind::Misaligned => "Misaligned",
            FaultKind::Trap => "Trap",
            FaultKind::InvalidOperation => "InvalidOperation",
            FaultKind::InFlight => "InFlight",
        }
    }
}

/// One detected fault.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// What went wrong.
    pub kind: FaultKind,
    /// Block index (ctaid).
    pub block: [u32; 3],
    /// Warp index within the block.
    pub warp: u32,
    /// Lane within the warp, if a single lane is to blame.
    pub lane: Option<u32>,
    /// PTX source line of the faulting instruction.
    pub ptx_line: usize,
    /// Description.
    pub message: String,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} at PTX line {} (block {:?}, warp {}",
            self.kind, self.ptx_line, self.block, self.warp
        )?;
        if let Some(l) = self.lane {
            write!(f, ", lane {}", l)?;
        }
        write!(f, "): {}", self.message)
    }
}

/// Per-launch cost counters (see `docs/EMULATOR.md` for definitions).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Warp-level instruction issues (one per lane group executing an instruction).
    pub warp_instructions: u64,
    /// Thread-level instructions (sum of active lanes over issues).
    pub thread_instructions: u64,
    /// Conditional branches where the active lanes disagreed.
    pub divergent_branches: u64,
    /// Distinct 32-byte sectors touched, summed over warp-level global accesses.
    pub global_sectors: u64,
    /// Distinct 128-byte lines touched, summed over warp-level global accesses.
    pub global_transactions: u64,
    /// Warp-level global memory accesses (loads, stores, atomics).
    pub global_accesses: u64,
    /// Warp-level shared memory accesses.
    pub shared_accesses: u64,
    /// Sum over warp-level shared accesses of the bank-conflict degree (1 = conflict free).
    pub shared_bank_conflict_degree_sum: u64,
    /// Thread arrivals at a waiting barrier (`bar.sync`, `bar.red`).
    pub barrier_waits: u64,
    /// Warp-level atomic operations.
    pub atomics: u64,
    /// Executed `mma` warp instructions.
    pub mma_ops: u64,
    /// Blocks executed.
    pub blocks: u64,
}

impl Counters {
    fn add(&mut self, o: &InstrCounters) {
        self.warp_instructions += o.warp_instructions;
        self.thread_instructions += o.thread_instructions;
        self.divergent_branches += o.divergent_branches;
        self.global_sectors += o.global_sectors;
        self.global_transactions += o.global_transactions;
        self.global_accesses += o.global_accesses;
        self.shared_accesses += o.shared_accesses;
        self.shared_bank_conflict_degree_sum += o.shared_bank_conflict_degree_sum;
        self.barrier_waits += o.barrier_waits;
    }
}

/// Counters of one decoded instruction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstrCounters {
    /// PTX source line of the instruction.
    pub ptx_line: usize,
    /// Warp-level issues.
    pub warp_instructions: u64,
    /// Active-lane sum.
    pub thread_instructions: u64,
    /// Divergent executions (branches).
    pub divergent_branches: u64,
    /// Global sectors.
    pub global_sectors: u64,
    /// Global 128-byte transactions.
    pub global_transactions: u64,
    /// Global warp accesses.
    pub global_accesses: u64,
    /// Shared warp accesses.
    pub shared_accesses: u64,
    /// Shared bank-conflict degree sum.
    pub shared_bank_conflict_degree_sum: u64,
    /// Barrier waits.
    pub barrier_waits: u64,
}

/// Result of a launch.
#[derive(Clone, Default)]
pub struct LaunchReport {
    /// Kernel totals.
    pub counters: Counters,
    /// Counters per decoded instruction of the module (index = instruction index; see `ptx_line`).
    pub per_instruction: Vec<InstrCounters>,
    /// Lines printed by device-side `printf` (`vprintf`), in the order the threads ran them.
    pub printf: Vec<String>,
    /// Blocks that ran on worker threads in a parallel run whose result was kept (0 when the launch ran
    /// on one thread, or its parallel attempt was discarded and it ran again on one).
    pub parallel_blocks: u64,
    /// Blocks that ran to completion one after another on this thread in a kept speculative run (the
    /// parallel scheme with one worker: one OS thread, or a grid of 2 or 3 blocks); 0 otherwise.
    pub isolated_blocks: u64,
}

/// Short enough for a panic message (`unwrap` on a faulted launch prints it): the counters and `printf`
/// lines, the per-instruction counters by count only.
impl fmt::Debug for LaunchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LaunchReport")
            .field("counters", &self.counters)
            .field(
                "per_instruction",
                &format_args!("[{} instructions]", self.per_instruction.len()),
            )
            .field("printf", &self.printf)
            .field("parallel_blocks", &self.parallel_blocks)
            .field("isolated_blocks", &self.isolated_blocks)
            .finish()
    }
}

/// Emulator errors.
#[derive(Debug, Clone)]
pub enum EmuError {
    /// PTX could not be parsed.
    Ptx(PtxError),
    /// The module has no such entry.
    NoSuchEntry(String),
    /// Parameter count or sizes do not match the entry.
    BadParams(String),
    /// Invalid grid/block/shared-memory configuration.
    BadLaunch(String),
    /// Host-side memory API misuse (bad address, double free, ...).
    Memory(String),
    /// The kernel faulted; the report holds the counters up to the fault.
    Faulted {
        /// Detected faults (first is the most relevant).
        faults: Vec<Fault>,
        /// Counters up to the point of the fault.
        report: Box<LaunchReport>,
    },
}

impl fmt::Display for EmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmuError::Ptx(e) => write!(f, "{}", e),
            EmuError::NoSuchEntry(e) => write!(f, "no such entry: {}", e),
            EmuError::BadParams(e) => write!(f, "bad parameters: {}", e),
            EmuError::BadLaunch(e) => write!(f, "bad launch: {}", e),
            EmuError::Memory(e) => write!(f, "memory error: {}", e),
            EmuError::Faulted { faults, .. } => {
                write!(f, "kernel faulted ({} fault(s))", faults.len())?;
                if let Some(x) = faults.first() {
                    write!(f, ": {}", x)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for EmuError {}

impl From<PtxError> for EmuError {
    fn from(e: PtxError) -> Self {
        EmuError::Ptx(e)
    }
}

/// One global-memory allocation.
pub(crate) struct Alloc {
    pub base: u64,
    pub data: Vec<u8>,
    pub shadow: exec::ShadowMem,
    pub shadow_launch: u64,
}

/// Base of the device address range handed out by [`Emulator::alloc`].
pub const GLOBAL_BASE: u64 = 0x0000_0010_0000_0000;

/// The CPU emulator; owns global memory.
pub struct Emulator {
    pub(crate) cfg: EmuConfig,
    pub(crate) allocs: Vec<Alloc>,
    next_addr: u64,
    module_globals: HashMap<u64, Vec<u64>>,
    pub(crate) launches: u64,
    /// Kernels (module id, entry) not to run on several threads: their parallel run was discarded, or
    /// they use global atomics (`exec/parallel.rs`).
    pub(crate) serial_kernels: std::collections::HashSet<(u64, usize)>,
    /// The device heap of `malloc` / `free`, made by the first launch that needs it (`exec/heap.rs`).
    pub(crate) heap: Option<exec::DeviceHeap>,
    /// Texture and surface objects (`texture.rs`): handle `k + 1` is entry `k`, `None` once destroyed.
    pub(crate) objects: Vec<Option<TexObject>>,
}

/// A texture or surface object of the emulator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TexObject {
    pub desc: TextureDesc,
    pub surface: bool,
}

impl Emulator {
    /// Creates an emulator with no allocations.
    pub fn new(cfg: EmuConfig) -> Emulator {
        Emulator {
            cfg,
            allocs: Vec::new(),
            next_addr: GLOBAL_BASE,
            module_globals: HashMap::new(),
            launches: 0,
            serial_kernels: Default::default(),
            heap: None,
            objects: Vec::new(),
        }
    }

    /// The length in bytes of the live allocation that starts at `base`.
    pub(crate) fn alloc_len(&self, base: u64) -> Option<usize> {
        self.allocs
            .iter()
            .find(|a| a.base == base)
            .map(|a| a.data.len())
    }

    /// The configuration.
    pub fn config(&self) -> &EmuConfig {
        &self.cfg
    }

    /// Changes the configuration for subsequent launches.
    pub fn set_config(&mut self, cfg: EmuConfig) {
        self.cfg = cfg;
    }

    /// Allocates `bytes` of zero-filled global memory; returns a non-zero, 512-aligned device address (what
    /// `cudaMalloc` returns in practice, and the base alignment textures need). Allocations are separated
    /// by unmapped gaps of at least 256 bytes so that overruns are detected.
    pub fn alloc(&mut self, bytes: usize) -> u64 {
        match self.try_alloc(bytes) {
            Ok(a) => a,
            Err(e) => panic!("{e}"),
        }
    }

    /// [`Emulator::alloc`] as an error value: more than [`limits::MAX_GLOBAL_BYTES`] in all, or more than
    /// the host can give, is `EmuError::Memory` (the runtime's `Device::alloc_zeros`/`htod` and the CLI
    /// allocate through it).
    pub fn try_alloc(&mut self, bytes: usize) -> Result<u64, EmuError> {
        let held: u64 = self.allocs.iter().map(|a| a.data.len() as u64).sum();
        let limit = limits::MAX_GLOBAL_BYTES;
        if bytes as u64 > limit.saturating_sub(held) {
            return Err(EmuError::Memory(format!(
                "allocating {bytes} bytes would take the emulator's global memory past its limit of {limit} bytes ({held} held)"
            )));
        }
        let data = zeroed(bytes).ok_or_else(|| {
            EmuError::Memory(format!(
                "the host could not give {bytes} bytes for the emulator's global memory"
            ))
        })?;
        let base = self.next_addr;
        let span = (bytes as u64 + 256).div_ceil(512) * 512;
        self.next_addr += span;
        self.allocs.push(Alloc {
            base,
            data,
            shadow: exec::ShadowMem::default(),
            shadow_launch: u64::MAX,
        });
        Ok(base)
    }

    fn find(&self, addr: u64) -> Option<usize> {
        let i = self.allocs.partition_point(|a| a.base <= addr);
        if i == 0 {
            return None;
        }
        let a = &self.allocs[i - 1];
        if addr >= a.base && addr <= a.base + a.data.len() as u64 {
            Some(i - 1)
        } else {
            None
        }
    }

    /// Frees an allocation made by [`Emulator::alloc`] (`addr` must be its base address).
    pub fn free(&mut self, addr: u64) -> Result<(), EmuError> {
        match self.allocs.iter().position(|a| a.base == addr) {
            Some(i) => {
                self.allocs.remove(i);
                Ok(())
            }
            None => Err(EmuError::Memory(format!(
                "free of 0x{:x}: not the base of a live allocation",
                addr
            ))),
        }
    }

    /// `cudaCreateTextureObject`: a texture over the device memory `desc` describes (within one
    /// allocation), sampled as its fields say (docs/EMULATOR.md, "Textures and surfaces"). Returns the
    /// object's handle, nonzero, which a kernel takes as a `.u64` parameter (`cudaTextureObject_t`).
    pub fn create_texture(&mut self, desc: &TextureDesc) -> Result<u64, EmuError> {
        self.create_object(desc, false)
    }

    /// `cudaCreateSurfaceObject`: a surface over the device memory `desc` describes, which `suld`/`sust`
    /// read and write as raw bytes (the sampler fields are not used). Returns its handle.
    pub fn create_surface(&mut self, desc: &TextureDesc) -> Result<u64, EmuError> {
        self.create_object(desc, true)
    }

    /// `cudaDestroyTextureObject` / `cudaDestroySurfaceObject`: a later fetch through `handle` faults.
    pub fn destroy_object(&mut self, handle: u64) -> Result<(), EmuError> {
        match handle
            .checked_sub(1)
            .and_then(|k| self.objects.get_mut(k as usize))
        {
            Some(o @ Some(_)) => {
                *o = None;
                Ok(())
            }
            _ => Err(EmuError::BadParams(format!(
                "{handle:#x} is not a live texture or surface object"
            ))),
        }
    }

    fn create_object(&mut self, desc: &TextureDesc, surface: bool) -> Result<u64, EmuError> {
        let what = if surface { "surface" } else { "texture" };
        desc.validate(surface)
            .map_err(|e| EmuError::BadParams(format!("{what} {desc}: {e}")))?;
        let inside = self.find(desc.addr).is_some_and(|i| {
            let a = &self.allocs[i];
            desc.addr - a.base + desc.span() <= a.data.len() as u64
        });
        if !inside {
            return Err(EmuError::BadParams(format!(
                "{what} {desc}: its {} bytes are not inside one allocation",
                desc.span()
            )));
        }
        self.objects.push(Some(TexObject {
            desc: *desc,
            surface,
        }));
        Ok(self.objects.len() as u64)
    }

    /// Copies host bytes to device memory.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), EmuError> {
        let i = self
            .find(addr)
            .ok_or_else(|| EmuError::Memory(format!("write to unmapped address 0x{:x}", addr)))?;
        let a = &mut self.allocs[i];
        let off = (addr - a.base) as usize;
        if off + data.len() > a.data.len() {
            return Err(EmuError::Memory(format!(
                "write of {} bytes at 0x{:x} overruns allocation of {} bytes at 0x{:x}",
                data.len(),
                addr,
                a.data.len(),
                a.base
            )));
        }
        a.data[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    /// Copies device memory to the host.
    pub fn read(&self, addr: u64, len: usize) -> Result<Vec<u8>, EmuError> {
        let i = self
            .find(addr)
            .ok_or_else(|| EmuError::Memory(format!("read from unmapped address 0x{:x}", addr)))?;
        let a = &self.allocs[i];
        let off = (addr - a.base) as usize;
        if off + len > a.data.len() {
            return Err(EmuError::Memory(format!(
                "read of {} bytes at 0x{:x} overruns allocation of {} bytes at 0x{:x}",
                len,
                addr,
                a.data.len(),
                a.base
            )));
        }
        Ok(a.data[off..off + len].to_vec())
    }

    /// Address of a module-scope `.global`/`.const` variable (allocated on first use of the module).
    pub fn global_symbol(&mut self, module: &Module, name: &str) -> Option<u64> {
        let idx = module.globals.iter().position(|g| g.name == name)?;
        let addrs = self.module_addrs(module);
        Some(addrs[idx])
    }

    fn module_addrs(&mut self, module: &Module) -> Vec<u64> {
        if let Some(v) = self.module_globals.get(&module.id) {
            return v.clone();
        }
        let mut v = Vec::new();
        for g in &module.globals {
            let a = self.alloc(g.size);
            let n = g.init.len().min(g.size);
            let _ = self.write(a, &g.init[..n]);
            v.push(a);
        }
        // Addresses in initializers, now that every variable has one (global addresses are generic).
        for (g, &a) in module.globals.iter().zip(&v) {
            for r in &g.relocs {
                let target = match r.target {
                    ptx::RelocTarget::Global(i) => v[i as usize],
                    ptx::RelocTarget::Func(f) => exec::func_address(f),
                };
                let bytes = r.value(target).to_le_bytes();
                if r.at + r.size <= g.size {
                    let _ = self.write(a + r.at as u64, &bytes[..r.size.min(8)]);
                }
            }
        }
        self.module_globals.insert(module.id, v.clone());
        v
    }

    /// Launches `entry` of `module` on a grid; see the module docs. A kernel declared with
    /// `.reqnctapercluster` runs in clusters of that shape; otherwise clusters have one block
    /// ([`Emulator::launch_cluster`] chooses).
    pub fn launch(
        &mut self,
        module: &Module,
        entry: &str,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_smem_bytes: u32,
        params: &[ParamValue],
    ) -> Result<LaunchReport, EmuError> {
        self.launch_cluster(module, entry, grid, block, None, dynamic_smem_bytes, params)
    }

    /// [`Emulator::launch`] with a thread-block cluster shape (what `cuLaunchKernelEx` takes as the cluster
    /// dimension): every grid dimension must be a multiple of it, at most 16 blocks per cluster, and a
    /// kernel declared with `.reqnctapercluster` must be launched with that shape (`None`: the declared
    /// one, or 1).
    #[allow(clippy::too_many_arguments)]
    pub fn launch_cluster(
        &mut self,
        module: &Module,
        entry: &str,
        grid: [u32; 3],
        block: [u32; 3],
        cluster: Option<[u32; 3]>,
        dynamic_smem_bytes: u32,
        params: &[ParamValue],
    ) -> Result<LaunchReport, EmuError> {
        let shape = LaunchGeometry {
            grid,
            block,
            cluster,
            dynamic_smem_bytes,
            cooperative: false,
        };
        self.launch_shaped(module, entry, shape, params)
    }

    /// [`Emulator::launch`] as `cuLaunchCooperativeKernel` does it: every block of the grid is resident at
    /// once (more blocks than fit is [`EmuError::BadLaunch`], CUDA's `cudaErrorCooperativeLaunchTooLarge`),
    /// and the launch has a grid workspace, so `cooperative_groups::this_grid().sync()` (which traps after
    /// an ordinary launch, as on a GPU) is a grid-wide barrier. The race detector orders accesses across
    /// it (docs/EMULATOR.md, "Cooperative launch").
    ///
    /// ```no_run
    /// # use prism_runtime::emu::{EmuConfig, Emulator, Module, ParamValue};
    /// # fn demo(src: &str) -> Result<(), Box<dyn std::error::Error>> {
    /// let module = Module::parse(src)?;
    /// let mut emu = Emulator::new(EmuConfig::default());
    /// let data = emu.alloc(4 * 264 * 256);
    /// // 264 blocks of 256 threads: two per SM of the emulated H100, all resident.
    /// emu.launch_cooperative(&module, "two_phase", [264, 1, 1], [256, 1, 1], 0, &[ParamValue::Ptr(data)])?;
    /// # Ok(()) }
    /// ```
    pub fn launch_cooperative(
        &mut self,
        module: &Module,
        entry: &str,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_smem_bytes: u32,
        params: &[ParamValue],
    ) -> Result<LaunchReport, EmuError> {
        let shape = LaunchGeometry {
            grid,
            block,
            cluster: None,
            dynamic_smem_bytes,
            cooperative: true,
        };
        self.launch_shaped(module, entry, shape, params)
    }

    /// Validates a launch of `entry` in `shape` and runs it.
    pub(crate) fn launch_shaped(
        &mut self,
        module: &Module,
        entry: &str,
        shape: LaunchGeometry,
        params: &[ParamValue],
    ) -> Result<LaunchReport, EmuError> {
        let LaunchGeometry {
            grid,
            block,
            cluster,
            dynamic_smem_bytes,
            cooperative,
        } = shape;
        let fi = module
            .funcs
            .iter()
            .position(|f| f.is_entry && f.name == entry)
            .ok_or_else(|| EmuError::NoSuchEntry(entry.to_string()))?;
        let f = &module.funcs[fi];
        if params.len() != f.params.len() {
            return Err(EmuError::BadParams(format!(
                "{} expects {} parameters, got {}",
                entry,
                f.params.len(),
                params.len()
            )));
        }
        let mut pbuf = vec![0u8; f.param_buf_size];
        for (i, (d, v)) in f.params.iter().zip(params).enumerate() {
            let b = v.to_bytes();
            if b.len() != d.size {
                return Err(EmuError::BadParams(format!(
                    "parameter {} ({}) is {} bytes, value has {} bytes",
                    i,
                    d.name,
                    d.size,
                    b.len()
                )));
            }
            pbuf[d.offset..d.offset + d.size].copy_from_slice(&b);
        }
        if grid.contains(&0) || block.contains(&0) {
            return Err(EmuError::BadLaunch(format!(
                "zero dimension in grid {:?} / block {:?}",
                grid, block
            )));
        }
        let nthreads = block[0] as u64 * block[1] as u64 * block[2] as u64;
        if nthreads > prism_core::hw::MAX_THREADS_PER_BLOCK as u64 || block[2] > 64 {
            return Err(EmuError::BadLaunch(format!(
                "block {:?} has {} threads (max 1024, z max 64)",
                block, nthreads
            )));
        }
        if grid[1] > prism_core::hw::MAX_GRID_YZ || grid[2] > prism_core::hw::MAX_GRID_YZ {
            return Err(EmuError::BadLaunch(format!(
                "grid {:?}: y and z are limited to 65535",
                grid
            )));
        }
        if grid[0] > i32::MAX as u32 {
            return Err(EmuError::BadLaunch(format!(
                "grid {:?}: x is limited to 2147483647 (2^31 - 1)",
                grid
            )));
        }
        if let Some(r) = f.reqntid {
            if r != block {
                return Err(EmuError::BadLaunch(format!(
                    "{} requires .reqntid {:?}, launched with {:?}",
                    entry, r, block
                )));
            }
        }
        if let Some(m) = f.maxntid {
            if nthreads > m[0] as u64 * m[1] as u64 * m[2] as u64 {
                return Err(EmuError::BadLaunch(format!(
                    "{} has .maxntid {:?}, launched with {:?}",
                    entry, m, block
                )));
            }
        }
        let smem_total = module.dyn_offset(fi) as u64 + dynamic_smem_bytes as u64;
        if smem_total > prism_core::hw::MAX_SMEM_BYTES as u64 {
            return Err(EmuError::BadLaunch(format!(
                "shared memory {} bytes exceeds 227 KiB",
                smem_total
            )));
        }
        let declared = module.funcs[fi].cluster;
        let cluster = match (cluster, declared) {
            (Some(c), Some(d)) if c != d => {
                return Err(EmuError::BadLaunch(format!(
                    "{entry} requires .reqnctapercluster {d:?}, launched with clusters of {c:?}"
                )))
            }
            (Some(c), _) => c,
            (None, Some(d)) => d,
            (None, None) => [1, 1, 1],
        };
        let csize = cluster[0] as u64 * cluster[1] as u64 * cluster[2] as u64;
        if cluster.contains(&0) || csize > 16 {
            return Err(EmuError::BadLaunch(format!(
                "cluster {cluster:?}: 1 to 16 blocks per cluster"
            )));
        }
        if (0..3).any(|d| !grid[d].is_multiple_of(cluster[d])) {
            return Err(EmuError::BadLaunch(format!(
                "grid {grid:?} is not a multiple of the cluster {cluster:?}"
            )));
        }
        limits::check_launch(&limits::LaunchShape {
            nregs: module.nregs,
            nthreads: nthreads as u32,
            smem: smem_total,
            local: module.local_size as u64,
            races: self.cfg.check_races,
            blocks: grid.iter().map(|&d| d as u64).product(),
            csize,
        })
        .map_err(EmuError::BadLaunch)?;
        let gaddrs = self.module_addrs(module);
        self.launches += 1;
        let args = exec::LaunchArgs {
            fi,
            grid,
            block,
            cluster,
            dyn_bytes: dynamic_smem_bytes,
            params: pbuf,
            gaddrs,
            cooperative,
            objects: self.objects.clone(),
        };
        exec::run_launch(self, module, args)
    }
}

/// `n` zero bytes, or `None` when the host cannot allocate them (zeroed pages from the allocator: a large
/// buffer costs memory only where it is written).
pub(crate) fn zeroed(n: usize) -> Option<Vec<u8>> {
    if n == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(n).ok()?;
    // SAFETY: `layout` has a non-zero size; a non-null result is `n` initialised (zero) bytes with the
    // alignment and size a `Vec<u8>` of capacity `n` deallocates with.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout);
        (!p.is_null()).then(|| Vec::from_raw_parts(p, n, n))
    }
}
