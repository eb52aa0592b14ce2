//! Kernel descriptions shared by the macro expansion and both backends: element and parameter types, the
//! resource contract, [`KernelInfo`] and the global kernel registry.

use std::fmt;

/// Which backend a [`crate::Device`] runs kernels on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// A CUDA GPU through the driver API (cudarc).
    Gpu,
    /// The CPU PTX emulator ([`crate::emu`]).
    Emulator,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Gpu => "GPU",
            Backend::Emulator => "emulator",
        })
    }
}

/// What a [`crate::Device`] is, for logs, benchmark records and choosing code paths
/// ([`crate::Device::properties`]). Fields the backend cannot report are `None`.
///
/// ```
/// let dev = prism_runtime::Device::emulator();
/// let p = dev.properties();
/// assert_eq!(p.compute_capability, (9, 0)); // the emulator models sm_90a
/// println!("{p}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceProperties {
    /// As [`crate::Device::name`].
    pub name: String,
    /// GPU or emulator.
    pub backend: Backend,
    /// `(major, minor)`: `(9, 0)` on an H100; the emulator reports the target it models, `(9, 0)`.
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors (132 on an H100 SXM).
    pub multiprocessors: Option<u32>,
    /// The CUDA version the driver supports, `(13, 0)` for a CUDA 13.0 driver.
    pub driver_cuda_version: Option<(u32, u32)>,
    /// Peak SM clock in MHz, as the driver reports it.
    pub sm_clock_mhz: Option<u32>,
    /// Peak memory clock in MHz.
    pub memory_clock_mhz: Option<u32>,
    /// Device memory in bytes.
    pub memory_bytes: Option<u64>,
    /// L2 cache in bytes.
    pub l2_bytes: Option<u64>,
    /// Largest shared memory per block with opt-in, as [`crate::Device::max_smem_bytes`].
    pub max_smem_per_block: u32,
}

impl fmt::Display for DeviceProperties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ma, mi) = self.compute_capability;
        write!(
            f,
            "{} [{}], compute capability {ma}.{mi}",
            self.name, self.backend
        )?;
        if let Some(n) = self.multiprocessors {
            write!(f, ", {n} SMs")?;
        }
        if let Some(c) = self.sm_clock_mhz {
            write!(f, ", SM clock {c} MHz")?;
        }
        if let Some(c) = self.memory_clock_mhz {
            write!(f, ", memory clock {c} MHz")?;
        }
        if let Some(b) = self.memory_bytes {
            write!(f, ", {:.1} GiB", b as f64 / (1u64 << 30) as f64)?;
        }
        if let Some(b) = self.l2_bytes {
            write!(f, ", L2 {} MiB", b >> 20)?;
        }
        write!(f, ", {} B shared memory per block", self.max_smem_per_block)?;
        if let Some((ma, mi)) = self.driver_cuda_version {
            write!(f, ", driver supports CUDA {ma}.{mi}")?;
        }
        Ok(())
    }
}

/// Element type of a device buffer or of a pointer parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// `u8`
    U8,
    /// `u32`
    U32,
    /// `i32`
    I32,
    /// `u64`
    U64,
    /// `i64`
    I64,
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `half::f16`
    F16,
    /// `half::bf16`
    BF16,
}

impl ElemType {
    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            ElemType::U8 => 1,
            ElemType::F16 | ElemType::BF16 => 2,
            ElemType::U32 | ElemType::I32 | ElemType::F32 => 4,
            ElemType::U64 | ElemType::I64 | ElemType::F64 => 8,
        }
    }

    /// The Rust spelling of the type (`f32`, `bf16`, ...), used in error messages.
    pub fn rust_name(self) -> &'static str {
        match self {
            ElemType::U8 => "u8",
            ElemType::U32 => "u32",
            ElemType::I32 => "i32",
            ElemType::U64 => "u64",
            ElemType::I64 => "i64",
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
            ElemType::F16 => "f16",
            ElemType::BF16 => "bf16",
        }
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rust_name())
    }
}

/// Type of a kernel parameter as the kernel declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamType {
    /// `u32` scalar.
    U32,
    /// `i32` scalar.
    I32,
    /// `u64` scalar.
    U64,
    /// `i64` scalar.
    I64,
    /// `f32` scalar.
    F32,
    /// `f64` scalar.
    F64,
    /// `bool` scalar.
    Bool,
    /// Global pointer: `*const elem` or `*mut elem`.
    Ptr {
        /// Pointee type.
        elem: ElemType,
        /// `*mut` (the kernel may write through it) rather than `*const`.
        mutable: bool,
    },
    /// A TMA tensor map (`TensorMap<elem, rank>`), passed by value as the 128-byte, 64-byte-aligned
    /// parameter `.param .align 64 .b8 name[128]`; the argument is [`crate::TensorMap::as_arg`].
    TensorMap {
        /// Element type of the tensor.
        elem: ElemType,
        /// Rank of the tensor (1 to 5).
        rank: u8,
        /// The kernel writes through the map (TMA stores: `TensorMapMut<T, RANK>`), so the argument must be
        /// a [`crate::TensorMapMut`], which borrows its buffer mutably.
        writable: bool,
    },
}

impl fmt::Display for ParamType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamType::U32 => f.write_str("u32"),
            ParamType::I32 => f.write_str("i32"),
            ParamType::U64 => f.write_str("u64"),
            ParamType::I64 => f.write_str("i64"),
            ParamType::F32 => f.write_str("f32"),
            ParamType::F64 => f.write_str("f64"),
            ParamType::Bool => f.write_str("bool"),
            ParamType::Ptr {
                elem,
                mutable: true,
            } => write!(f, "*mut {}", elem),
            ParamType::Ptr {
                elem,
                mutable: false,
            } => write!(f, "*const {}", elem),
            ParamType::TensorMap {
                elem,
                rank,
                writable: false,
            } => write!(f, "TensorMap<{}, {}>", elem, rank),
            ParamType::TensorMap {
                elem,
                rank,
                writable: true,
            } => write!(f, "TensorMapMut<{}, {}>", elem, rank),
        }
    }
}

/// One kernel parameter: its name (as written in the Rust kernel) and type.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    /// Parameter name, used in error messages.
    pub name: &'static str,
    /// Declared type.
    pub ty: ParamType,
}

/// A kernel's resource contract, from `#[prism_kernel(requires(..), smem = .., threads = .., blocks = ..)]`.
///
/// [`validate_launch`](crate::validate_launch) checks a launch against it before anything runs, because the
/// perspective checker proved the kernel correct only for launches that satisfy it (paper §3.3: the
/// perspective bound `@requires(grid[1], block[1], thread[n])`).
///
/// Contracts are made by the compiler: the fields are private (read them with the accessors), and the only
/// constructor, [`Contract::new_unchecked`], is `unsafe`, so safe code cannot launch a kernel under a weaker
/// contract than the one its checker proved.
///
/// The fields are those of the compiler's [`prism_core::Contract`] (one definition of what a launch must
/// satisfy); this type only makes a value of it a proof obligation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contract(prism_core::Contract);

impl Contract {
    /// The contract with these values; `#[prism_kernel]` emits the call.
    ///
    /// # Safety
    ///
    /// The values must be the ones the Prism checker derived for the kernel the contract is paired with (or
    /// stricter): block size a multiple of `threads_multiple_of` (`thread[n]` in `requires`, 0 and 1 mean no
    /// constraint) or exactly `threads_exact` (`threads = N`), grid size a multiple of `blocks_multiple_of` or
    /// exactly `blocks_exact`, and `smem_bytes` of dynamic shared memory at least what the kernel's shared
    /// allocations need (`smem = N`). A weaker contract lets [`crate::Device::launch`] run the kernel with
    /// launches for which it was not proved, e.g. warp collectives with incomplete warps, or shared memory
    /// accesses past the allocation.
    pub const unsafe fn new_unchecked(
        threads_multiple_of: u32,
        threads_exact: Option<u32>,
        blocks_multiple_of: u32,
        blocks_exact: Option<u32>,
        smem_bytes: u32,
    ) -> Contract {
        Contract(prism_core::Contract {
            threads_multiple_of,
            threads_exact,
            blocks_multiple_of,
            blocks_exact,
            smem_bytes,
            cluster: 1,
        })
    }

    /// This contract with thread-block clusters of `blocks` blocks along x (`cluster = n`; 1 means no
    /// cluster): the launch groups consecutive blocks into clusters that are scheduled together and share
    /// distributed shared memory, `barrier.cluster` and multicast TMA. [`crate::validate_launch`] requires
    /// the grid to be a multiple of `blocks` and `blocks` ≤ 8 (the portable cluster size).
    ///
    /// ```
    /// use prism_runtime::Contract;
    /// // SAFETY (doc example): no kernel is launched with this contract.
    /// let c = unsafe { Contract::new_unchecked(128, None, 2, None, 0).with_cluster(2) };
    /// assert_eq!(c.cluster_blocks(), 2);
    /// ```
    ///
    /// # Safety
    ///
    /// As [`Contract::new_unchecked`]: `blocks` must be the cluster size the kernel was checked for. A kernel
    /// that addresses a sibling block's shared memory (`mapa`), multicasts or waits at a cluster barrier is
    /// only correct when launched in clusters of the size it assumes.
    pub const unsafe fn with_cluster(self, blocks: u32) -> Contract {
        let mut c = self.0;
        c.cluster = blocks;
        Contract(c)
    }

    /// The block size must be a multiple of this (`thread[n]` in `requires`). 0 and 1 mean no constraint.
    pub const fn threads_multiple_of(&self) -> u32 {
        self.0.threads_multiple_of
    }

    /// `threads = N`: the block size must be exactly N.
    pub const fn threads_exact(&self) -> Option<u32> {
        self.0.threads_exact
    }

    /// The grid size must be a multiple of this (`block[n]` in `requires`). 0 and 1 mean no constraint.
    pub const fn blocks_multiple_of(&self) -> u32 {
        self.0.blocks_multiple_of
    }

    /// `blocks = N`: the grid size must be exactly N.
    pub const fn blocks_exact(&self) -> Option<u32> {
        self.0.blocks_exact
    }

    /// Dynamic shared memory per block in bytes, passed as the launch's dynamic shared memory: what the
    /// kernel's shared allocations and its callees' take (16-byte aligned, plus the alignment of swizzled
    /// layouts), computed by the compiler; `smem = N` is the budget it is checked against, not this value.
    pub const fn smem_bytes(&self) -> u32 {
        self.0.smem_bytes
    }

    /// Blocks per thread-block cluster along x (`cluster = n`); 1 when the kernel is launched without
    /// clusters (the default of [`Contract::new_unchecked`]).
    pub const fn cluster_blocks(&self) -> u32 {
        self.0.cluster
    }
}

/// Everything the runtime needs to launch one (instantiated) kernel; emitted by `#[prism_kernel]` as the
/// kernel's `INFO`.
///
/// Like [`Contract`], a `KernelInfo` is made by the compiler: its fields are private (read them with the
/// accessors) and its constructor, [`KernelInfo::new_unchecked`], is `unsafe`. Safe code can only launch
/// what the checker proved, through the typed `launch` the macro generates for each kernel.
#[derive(Clone, Copy, Debug)]
pub struct KernelInfo {
    pub(crate) name: &'static str,
    pub(crate) entry: &'static str,
    pub(crate) ptx: &'static str,
    pub(crate) params: &'static [ParamSpec],
    pub(crate) contract: Contract,
}

impl KernelInfo {
    /// The description of a kernel; `#[prism_kernel]` emits the call (hand-written PTX can use it too, in
    /// `unsafe` code that takes the obligations below).
    ///
    /// # Safety
    ///
    /// `ptx` must contain the `.entry` named `entry`, whose parameters are `params` in order, and the entry
    /// must be memory-safe (no out-of-bounds or racing accesses, no misused collectives, no deadlock) for every
    /// launch that satisfies `contract` with arguments that pass [`crate::Device::launch`]'s argument checks
    /// (buffers of the declared element type and mutability, scalars of the declared type, tensor maps of the
    /// declared element type and rank whose tensor lies inside their buffer). For kernels
    /// compiled by Prism this is what the perspective checker proves, with the contract it derived.
    pub const unsafe fn new_unchecked(
        name: &'static str,
        entry: &'static str,
        ptx: &'static str,
        params: &'static [ParamSpec],
        contract: Contract,
    ) -> KernelInfo {
        KernelInfo {
            name,
            entry,
            ptx,
            params,
            contract,
        }
    }

    /// Rust path-ish name, e.g. `"sgemm<64, 64>"`.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The PTX `.entry` name.
    pub const fn entry(&self) -> &'static str {
        self.entry
    }

    /// The PTX module text containing the entry.
    pub const fn ptx(&self) -> &'static str {
        self.ptx
    }

    /// Parameters in declaration order.
    pub const fn params(&self) -> &'static [ParamSpec] {
        self.params
    }

    /// Launch contract.
    pub const fn contract(&self) -> Contract {
        self.contract
    }
}

/// One-dimensional launch dimensions: `grid` blocks of `block` threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDims {
    /// Number of blocks.
    pub grid: u32,
    /// Threads per block.
    pub block: u32,
}

impl LaunchDims {
    /// `grid` blocks of `block` threads.
    pub const fn new(grid: u32, block: u32) -> LaunchDims {
        LaunchDims { grid, block }
    }
}

/// Registry entry; the macro expansion emits `::prism_runtime::inventory::submit! { RegisteredKernel(&INFO) }`
/// for every kernel instance so tools (PTX dumps, ptxas checks, listings) can enumerate them.
pub struct RegisteredKernel(pub &'static KernelInfo);

inventory::collect!(RegisteredKernel);

/// All kernels registered in the linked binary, sorted by entry name (then by name).
pub fn registered_kernels() -> Vec<&'static KernelInfo> {
    let mut v: Vec<&'static KernelInfo> = inventory::iter::<RegisteredKernel>
        .into_iter()
        .map(|r| r.0)
        .collect();
    v.sort_by(|a, b| a.entry.cmp(b.entry).then(a.name.cmp(b.name)));
    v
}
