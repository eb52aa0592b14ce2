//! [`Device`], [`DeviceBuffer`] and [`KernelArg`]: one API over the GPU and the emulator.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::CudaSlice;

use crate::arg::{
    from_bytes, to_bytes, BufHandle, DeviceCopy, DeviceInfo, GpuSliceConst, GpuSliceMut,
    HandleInner, KernelArg,
};
use crate::emu;
use crate::error::RuntimeError;
use crate::gpu::GpuBackend;
use crate::types::{Backend, DeviceProperties, KernelInfo, LaunchDims};
use crate::validate::{check_args, validate_launch};

// Accessors to the CUDA stream and slices for cuBLAS and CUDA events (a child module: it reads private fields).
#[path = "gpu_access.rs"]
mod gpu_access;

/// Environment variable that overrides [`Device::auto`]: `emulator` (or `emu`), `gpu`, or `auto`.
pub const BACKEND_ENV: &str = "PRISM_BACKEND";

static NEXT_DEVICE_ID: AtomicU64 = AtomicU64::new(1);

/// A device kernels run on: a CUDA GPU or the CPU PTX emulator. Cheap to clone (an `Arc` inside); clones are
/// the same device, and buffers can be used with any clone of the device that made them.
#[derive(Clone)]
pub struct Device {
    inner: Arc<Inner>,
}

struct Inner {
    id: u64,
    kind: Kind,
}

enum Kind {
    Gpu(GpuBackend),
    Emu(EmuBackend),
}

/// The emulator backend: the emulator itself and the parsed modules, keyed by the PTX text's address and
/// length (kernel PTX is `&'static str`, so the key is stable and parsing happens once per module).
struct EmuBackend {
    emu: Arc<Mutex<emu::Emulator>>,
    modules: Mutex<HashMap<(usize, usize), Arc<emu::Module>>>,
}

/// Locks a mutex, recovering the data if a previous holder panicked (the emulator's memory stays usable).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl DeviceInfo for Device {
    fn id(&self) -> u64 {
        Device::id(self)
    }
    fn name(&self) -> String {
        Device::name(self)
    }
    fn backend(&self) -> Backend {
        Device::backend(self)
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device(#{} {})", self.inner.id, self.name())
    }
}

impl Device {
    fn from_kind(kind: Kind) -> Device {
        Device {
            inner: Arc::new(Inner {
                id: NEXT_DEVICE_ID.fetch_add(1, Ordering::Relaxed),
                kind,
            }),
        }
    }

    /// GPU 0 when a CUDA driver and a device are present, else the emulator. Never panics.
    ///
    /// The environment variable [`BACKEND_ENV`] (`PRISM_BACKEND`, any case) overrides the choice: `emulator`
    /// (or `emu`) forces the emulator, `gpu` requires GPU 0 (and fails with [`RuntimeError::NoGpu`] without
    /// one), `auto` or empty is the default; anything else is [`RuntimeError::BadArgs`] (a typo does not
    /// silently mean "automatic").
    ///
    /// # Errors
    /// [`RuntimeError::Driver`] when a GPU is present but could not be initialized (rather than silently
    /// running on the emulator); [`RuntimeError::NoGpu`] only with `PRISM_BACKEND=gpu`.
    pub fn auto() -> Result<Device, RuntimeError> {
        let choice = std::env::var(BACKEND_ENV)
            .ok()
            .map(|v| v.trim().to_ascii_lowercase());
        match choice.as_deref() {
            Some("emulator") | Some("emu") => return Ok(Device::emulator()),
            Some("gpu") => return Device::gpu(0),
            Some("") | Some("auto") | None => {}
            Some(other) => {
                return Err(RuntimeError::BadArgs(format!(
                    "{BACKEND_ENV}={other:?}: expected `gpu`, `emulator` (or `emu`) or `auto`"
                )))
            }
        }
        match Device::gpu(0) {
            Ok(d) => Ok(d),
            Err(RuntimeError::NoGpu(_)) => Ok(Device::emulator()),
            Err(e) => Err(e),
        }
    }

    /// The GPU with this ordinal.
    ///
    /// # Errors
    /// [`RuntimeError::NoGpu`] without a CUDA driver library, when the driver reports no device, or when
    /// `ordinal` is out of range; [`RuntimeError::Driver`] when context creation fails.
    pub fn gpu(ordinal: usize) -> Result<Device, RuntimeError> {
        GpuBackend::open(ordinal).map(|g| Device::from_kind(Kind::Gpu(g)))
    }

    /// A new emulator with the default configuration ([`emu::EmuConfig::default`]).
    pub fn emulator() -> Device {
        Device::emulator_with(emu::EmuConfig::default())
    }

    /// A new emulator with the given configuration.
    pub fn emulator_with(cfg: emu::EmuConfig) -> Device {
        Device::from_kind(Kind::Emu(EmuBackend {
            emu: Arc::new(Mutex::new(emu::Emulator::new(cfg))),
            modules: Mutex::new(HashMap::new()),
        }))
    }

    /// Which backend this device uses.
    pub fn backend(&self) -> Backend {
        match self.inner.kind {
            Kind::Gpu(_) => Backend::Gpu,
            Kind::Emu(_) => Backend::Emulator,
        }
    }

    /// Human-readable name: `"NVIDIA H100 80GB HBM3 (GPU 0)"` or `"Prism PTX emulator (CPU)"`.
    pub fn name(&self) -> String {
        match &self.inner.kind {
            Kind::Gpu(g) => g.name(),
            Kind::Emu(_) => "Prism PTX emulator (CPU)".to_string(),
        }
    }

    /// A process-unique id of this device (shared by its clones); appears in error messages.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The emulator behind this device (for its configuration, global symbols or raw memory access), or
    /// `None` on a GPU. Every `Device` method locks the same mutex: release the guard before calling one
    /// on this thread (holding it deadlocks).
    pub fn emulator_handle(&self) -> Option<Arc<Mutex<emu::Emulator>>> {
        match &self.inner.kind {
            Kind::Emu(e) => Some(e.emu.clone()),
            Kind::Gpu(_) => None,
        }
    }

    /// What this device is: name, compute capability, SMs, clocks, memory, the driver's CUDA version. On
    /// a GPU these are the driver's answers (a field it cannot give is `None`); the emulator reports the
    /// sm_90a target it models.
    pub fn properties(&self) -> DeviceProperties {
        match &self.inner.kind {
            Kind::Gpu(g) => g.properties(),
            Kind::Emu(_) => DeviceProperties {
                name: self.name(),
                backend: Backend::Emulator,
                compute_capability: (9, 0),
                multiprocessors: None,
                driver_cuda_version: None,
                sm_clock_mhz: None,
                memory_clock_mhz: None,
                memory_bytes: None,
                l2_bytes: None,
                max_smem_per_block: self.max_smem_bytes(),
            },
        }
    }

    /// How many clusters of `kernel` in blocks of `block` threads can be resident at once: the driver's
    /// `cuOccupancyMaxActiveClusters`, with the kernel's cluster size (1 block per cluster without clusters,
    /// which makes it the count of co-resident blocks) and its dynamic shared memory. A persistent grid of
    /// more clusters than this runs the extra ones only after others have finished all their work, so
    /// persistent cluster kernels size their grid by it. The emulator has no multiprocessors: `None`.
    ///
    /// `block` is checked as a launch would check it ([`validate_launch`], on the smallest grid the contract
    /// allows: its exact block count, else the least common multiple of the cluster size and its block
    /// multiple): [`RuntimeError::BadLaunch`] when the kernel's contract refuses it.
    ///
    /// ```no_run
    /// # fn demo(dev: &prism_runtime::Device, kernel: &prism_runtime::KernelInfo) -> Result<(), prism_runtime::RuntimeError> {
    /// let sms = dev.properties().multiprocessors.unwrap_or(132);
    /// let clusters = dev.max_active_clusters(kernel, 384)?.unwrap_or(sms / 2);
    /// # let _ = clusters; Ok(()) }
    /// ```
    pub fn max_active_clusters(
        &self,
        kernel: &KernelInfo,
        block: u32,
    ) -> Result<Option<u32>, RuntimeError> {
        let c = &kernel.contract;
        let cl = c.cluster_blocks().max(1);
        let (mut a, mut b) = (cl, c.blocks_multiple_of().max(1));
        while b != 0 {
            (a, b) = (b, a % b);
        }
        let lcm = (cl / a).saturating_mul(c.blocks_multiple_of().max(1));
        let grid = c.blocks_exact().unwrap_or(lcm);
        validate_launch(kernel, LaunchDims::new(grid, block))?;
        match &self.inner.kind {
            Kind::Gpu(g) => g.max_active_clusters(kernel, grid, block).map(Some),
            Kind::Emu(_) => Ok(None),
        }
    }

    /// The largest dynamic shared memory per block this device allows (GPU: the opt-in maximum reported by
    /// the driver; emulator: 232448 bytes).
    pub fn max_smem_bytes(&self) -> u32 {
        match &self.inner.kind {
            Kind::Gpu(g) => g.smem_optin(),
            Kind::Emu(_) => crate::validate::MAX_SMEM_BYTES,
        }
    }

    /// The 128 bytes of a validated tensor map on this device: the driver's `cuTensorMapEncodeTiled` on a
    /// GPU, the emulator's own encoding there.
    pub(crate) fn encode_tensor_map(&self, m: &emu::TensorMap) -> Result<[u8; 128], RuntimeError> {
        match &self.inner.kind {
            Kind::Gpu(g) => g.encode_tensor_map(m),
            Kind::Emu(_) => Ok(m.encode()),
        }
    }

    /// Copies `data` to a new device buffer.
    pub fn htod<T: DeviceCopy>(&self, data: &[T]) -> Result<DeviceBuffer<T>, RuntimeError> {
        let store = match &self.inner.kind {
            Kind::Gpu(g) => Store::Gpu(g.htod(data)?),
            Kind::Emu(e) => {
                let mut m = lock(&e.emu);
                let addr = m.try_alloc(std::mem::size_of_val(data))?;
                if let Err(err) = m.write(addr, &to_bytes(data)) {
                    let _ = m.free(addr);
                    return Err(err.into());
                }
                Store::Emu { addr }
            }
        };
        Ok(DeviceBuffer {
            device: self.clone(),
            len: data.len(),
            store,
        })
    }

    /// A new device buffer of `len` zeros.
    pub fn alloc_zeros<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>, RuntimeError> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            RuntimeError::BadArgs(format!("allocation of {} elements overflows", len))
        })?;
        let store = match &self.inner.kind {
            Kind::Gpu(g) => Store::Gpu(g.alloc_zeros(len)?),
            // Emulator allocations are zero-filled.
            Kind::Emu(e) => Store::Emu {
                addr: lock(&e.emu).try_alloc(bytes)?,
            },
        };
        Ok(DeviceBuffer {
            device: self.clone(),
            len,
            store,
        })
    }

    /// Copies a device buffer back to the host.
    ///
    /// # Errors
    /// [`RuntimeError::WrongDevice`] when `buf` belongs to another device.
    pub fn dtoh<T: DeviceCopy>(&self, buf: &DeviceBuffer<T>) -> Result<Vec<T>, RuntimeError> {
        if buf.device.id() != self.id() {
            return Err(RuntimeError::WrongDevice);
        }
        match (&self.inner.kind, &buf.store) {
            (Kind::Gpu(g), Store::Gpu(s)) => g.dtoh(s),
            (Kind::Emu(e), Store::Emu { addr }) => {
                let bytes = lock(&e.emu).read(*addr, buf.len * std::mem::size_of::<T>())?;
                Ok(from_bytes(&bytes))
            }
            _ => Err(RuntimeError::WrongDevice),
        }
    }

    /// Overwrites the start of `dst` with `data` (`data.len() <= dst.len()`).
    ///
    /// # Errors
    /// [`RuntimeError::WrongDevice`] when `dst` belongs to another device, [`RuntimeError::BadArgs`] when
    /// `data` is longer than `dst`.
    pub fn copy_htod<T: DeviceCopy>(
        &self,
        data: &[T],
        dst: &mut DeviceBuffer<T>,
    ) -> Result<(), RuntimeError> {
        if dst.device.id() != self.id() {
            return Err(RuntimeError::WrongDevice);
        }
        if data.len() > dst.len {
            return Err(RuntimeError::BadArgs(format!(
                "copy of {} elements into a buffer of {}",
                data.len(),
                dst.len
            )));
        }
        match (&self.inner.kind, &mut dst.store) {
            (Kind::Gpu(g), Store::Gpu(s)) => g.copy_htod(data, s),
            (Kind::Emu(e), Store::Emu { addr }) => Ok(lock(&e.emu).write(*addr, &to_bytes(data))?),
            _ => Err(RuntimeError::WrongDevice),
        }
    }

    /// A new buffer holding a copy of `src`, copied on the device (after the work queued before it; the
    /// host never sees the data).
    ///
    /// ```
    /// # use prism_runtime::Device;
    /// let dev = Device::emulator();
    /// let a = dev.htod(&[1u32, 2, 3])?;
    /// let b = dev.clone_dtod(&a)?;
    /// assert_eq!(dev.dtoh(&b)?, vec![1, 2, 3]);
    /// # Ok::<(), prism_runtime::RuntimeError>(())
    /// ```
    ///
    /// # Errors
    /// [`RuntimeError::WrongDevice`] when `src` belongs to another device; allocation errors.
    pub fn clone_dtod<T: DeviceCopy>(
        &self,
        src: &DeviceBuffer<T>,
    ) -> Result<DeviceBuffer<T>, RuntimeError> {
        if src.device.id() != self.id() {
            return Err(RuntimeError::WrongDevice);
        }
        match (&self.inner.kind, &src.store) {
            (Kind::Gpu(g), Store::Gpu(s)) => Ok(DeviceBuffer {
                device: self.clone(),
                len: src.len,
                store: Store::Gpu(g.clone_dtod(s)?),
            }),
            (Kind::Emu(_), Store::Emu { .. }) => {
                let data = self.dtoh(src)?;
                self.htod(&data)
            }
            _ => Err(RuntimeError::WrongDevice),
        }
    }

    /// Waits for all work on the device (the emulator runs launches synchronously: a no-op there).
    pub fn synchronize(&self) -> Result<(), RuntimeError> {
        match &self.inner.kind {
            Kind::Gpu(g) => g.synchronize(),
            Kind::Emu(_) => Ok(()),
        }
    }

    /// Validates `dims` against `kernel.contract` ([`validate_launch`]) and `args` against `kernel.params`
    /// (count, kinds, element types, mutability, buffers of this device), then launches `kernel` with
    /// `contract.smem_bytes()` of dynamic shared memory.
    ///
    /// GPU: the module is loaded once per PTX text and cached; over 48 KiB of dynamic shared memory sets
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` first; a contract with clusters
    /// ([`crate::Contract::with_cluster`]) or a [`crate::TensorMap`] argument launches through
    /// `cuLaunchKernelEx` (with the cluster dimension attribute); the launch is asynchronous (use
    /// [`Device::dtoh`] or [`Device::synchronize`]). Emulator: the module is parsed once and cached, the
    /// launch runs to completion (in clusters of the contract's size), and faults come back as
    /// `Err(RuntimeError::Emulator(..))`.
    ///
    /// This is the raw, untyped launch. Kernels compiled by `#[prism_kernel]` are launched with their
    /// generated, safe `launch` functions (`my_kernel::launch(&dev, dims, &a, &mut b, n)`), which call this
    /// one with the kernel's own `INFO` and arguments of the right types.
    ///
    /// # Safety
    ///
    /// `kernel` must uphold the contract of [`KernelInfo::new_unchecked`]: its PTX entry is memory-safe for
    /// every launch that passes the checks above. That holds for the `INFO` of a kernel compiled by
    /// `#[prism_kernel]`, except where the kernel's typed launcher is itself `unsafe` (then the caller takes
    /// that launcher's obligations). The checks compare `args` with `kernel`'s parameter list only: a scalar
    /// that the kernel uses as a device address (inline PTX), or a size that the kernel trusts, is the
    /// caller's responsibility, as is any other promise the kernel's documentation asks for.
    pub unsafe fn launch(
        &self,
        kernel: &KernelInfo,
        dims: LaunchDims,
        args: &mut [KernelArg<'_>],
    ) -> Result<LaunchReport, RuntimeError> {
        validate_launch(kernel, dims)?;
        check_args(self, kernel, args)?;
        match &self.inner.kind {
            Kind::Gpu(g) => {
                g.launch(kernel, dims, args)?;
                Ok(LaunchReport {
                    backend: Backend::Gpu,
                    emu: None,
                })
            }
            Kind::Emu(e) => {
                let report = e.launch(kernel, dims, args)?;
                // Device-side printf goes to the program's stdout, as the CUDA driver prints it.
                for line in &report.printf {
                    print!("{line}");
                }
                Ok(LaunchReport {
                    backend: Backend::Emulator,
                    emu: Some(report),
                })
            }
        }
    }
}

impl EmuBackend {
    fn module(&self, ptx: &'static str) -> Result<Arc<emu::Module>, RuntimeError> {
        let key = (ptx.as_ptr() as usize, ptx.len());
        let mut cache = lock(&self.modules);
        if let Some(m) = cache.get(&key) {
            return Ok(m.clone());
        }
        let m = Arc::new(emu::Module::parse(ptx).map_err(|e| RuntimeError::Ptx(e.to_string()))?);
        cache.insert(key, m.clone());
        Ok(m)
    }

    fn launch(
        &self,
        kernel: &KernelInfo,
        dims: LaunchDims,
        args: &[KernelArg<'_>],
    ) -> Result<emu::LaunchReport, RuntimeError> {
        let module = self.module(kernel.ptx)?;
        let decls = module.entry_params(kernel.entry).ok_or_else(|| {
            RuntimeError::Ptx(format!(
                "kernel `{}`: its PTX has no entry `{}`",
                kernel.name, kernel.entry
            ))
        })?;
        crate::validate::check_ptx_params(kernel, &decls)?;
        let params: Vec<emu::ParamValue> = args
            .iter()
            .enumerate()
            .map(|(i, a)| match a {
                KernelArg::U32(v) => emu::ParamValue::U32(*v),
                KernelArg::I32(v) => emu::ParamValue::I32(*v),
                KernelArg::U64(v) => emu::ParamValue::U64(*v),
                KernelArg::I64(v) => emu::ParamValue::I64(*v),
                KernelArg::F32(v) => emu::ParamValue::F32(*v),
                KernelArg::F64(v) => emu::ParamValue::F64(*v),
                // A bool parameter is as wide as the PTX declares it (.u8/.pred-as-byte or .u32).
                KernelArg::Bool(b) => match decls.get(i).map(|d| d.size) {
                    Some(8) => emu::ParamValue::U64(*b as u64),
                    Some(n @ 1..=2) => {
                        let mut v = vec![0u8; n];
                        v[0] = *b as u8;
                        emu::ParamValue::Bytes(v)
                    }
                    _ => emu::ParamValue::U32(*b as u32),
                },
                KernelArg::Buf { buf, .. } => emu::ParamValue::Ptr(buf.raw_ptr()),
                KernelArg::TensorMap { map, .. } => emu::ParamValue::Bytes(map.bytes().to_vec()),
            })
            .collect();
        // Cluster size 1 leaves the choice to the kernel (a `.reqnctapercluster` shape), as a plain
        // cuLaunchKernel does on the GPU.
        let cl = kernel.contract.cluster_blocks();
        let cluster = (cl > 1).then_some([cl, 1, 1]);
        let mut m = lock(&self.emu);
        match m.launch_cluster(
            &module,
            kernel.entry,
            [dims.grid, 1, 1],
            [dims.block, 1, 1],
            cluster,
            kernel.contract.smem_bytes(),
            &params,
        ) {
            Ok(r) => Ok(r),
            Err(emu::EmuError::Faulted { mut faults, report }) => {
                for f in &mut faults {
                    f.message = fault_in_terms_of_args(&m, kernel, args, &f.message);
                }
                Err(emu::EmuError::Faulted { faults, report }.into())
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// A fault's message with the kernel's name, and each global address in it named as an element of the
/// buffer argument it falls in or just past (`` `y`[5] ``, `` `y`[66], past its 64 elements ``): the emulator
/// knows addresses, the launch knows which parameter each buffer is.
fn fault_in_terms_of_args(
    emu: &emu::Emulator,
    kernel: &KernelInfo,
    args: &[KernelArg<'_>],
    message: &str,
) -> String {
    let mut notes = Vec::new();
    for word in message.split(|c: char| !c.is_ascii_alphanumeric()) {
        let Some(addr) = word
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
        else {
            continue;
        };
        // The buffer with the highest base at or below the address.
        let owner = args
            .iter()
            .enumerate()
            .filter_map(|(i, a)| match a {
                KernelArg::Buf { buf, .. } if buf.raw_ptr() <= addr => Some((i, buf)),
                _ => None,
            })
            .max_by_key(|(_, b)| b.raw_ptr());
        let Some((i, buf)) = owner else { continue };
        let Some(bytes) = emu.alloc_len(buf.raw_ptr()) else {
            continue;
        };
        let size = buf.elem().size().max(1) as u64;
        let (offset, len) = (addr - buf.raw_ptr(), bytes as u64 / size);
        let name = kernel.params.get(i).map_or("?", |p| p.name);
        let element = offset / size;
        let what = if element < len {
            format!("`{name}`[{element}]")
        } else if element - len < 1 << 20 {
            format!("`{name}`[{element}], past its {len} elements")
        } else {
            continue;
        };
        notes.push(format!("{word} is {what}, parameter #{i}"));
    }
    let mut out = format!("kernel `{}`: {message}", kernel.name);
    if !notes.is_empty() {
        out.push_str(&format!(" ({})", notes.join("; ")));
    }
    out
}

/// Result of [`Device::launch`].
#[derive(Debug, Clone)]
pub struct LaunchReport {
    /// Where the kernel ran.
    pub backend: Backend,
    /// The emulator's counters (instructions, divergence, memory sectors, bank conflicts, ...) when it ran
    /// on the emulator.
    pub emu: Option<emu::LaunchReport>,
}

enum Store<T> {
    Gpu(CudaSlice<T>),
    Emu { addr: u64 },
}

/// A typed buffer in device memory (GPU memory or emulator memory); freed on drop.
pub struct DeviceBuffer<T: DeviceCopy> {
    device: Device,
    len: usize,
    store: Store<T>,
}

impl<T: DeviceCopy> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DeviceBuffer<{}>(len {}, 0x{:x} on {:?})",
            T::ELEM,
            self.len,
            self.raw_ptr(),
            self.device
        )
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device the buffer lives on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The raw device address (emulator address or `CUdeviceptr`), e.g. for fault messages.
    pub fn raw_ptr(&self) -> u64 {
        match &self.store {
            Store::Gpu(s) => crate::arg::raw_ptr(s),
            Store::Emu { addr } => *addr,
        }
    }

    /// Passes the buffer to a `*const T` parameter.
    pub fn as_arg(&self) -> KernelArg<'_> {
        KernelArg::Buf {
            elem: T::ELEM,
            mutable: false,
            buf: self.const_handle(),
        }
    }

    /// A read-only handle to the buffer (what [`DeviceBuffer::as_arg`] and tensor maps pass).
    pub(crate) fn const_handle(&self) -> BufHandle<'_> {
        let inner = match &self.store {
            Store::Gpu(s) => HandleInner::Gpu(Box::new(GpuSliceConst(s))),
            Store::Emu { addr } => HandleInner::Emu(*addr),
        };
        BufHandle {
            device: &self.device,
            elem: T::ELEM,
            mutable: false,
            inner,
        }
    }

    /// Passes the buffer to a `*mut T` parameter (also accepted by `*const T` parameters).
    pub fn as_arg_mut(&mut self) -> KernelArg<'_> {
        KernelArg::Buf {
            elem: T::ELEM,
            mutable: true,
            buf: self.mut_handle(),
        }
    }

    /// A writable handle to the buffer (what [`DeviceBuffer::as_arg_mut`] and writable tensor maps pass).
    pub(crate) fn mut_handle(&mut self) -> BufHandle<'_> {
        let inner = match &mut self.store {
            Store::Gpu(s) => HandleInner::Gpu(Box::new(GpuSliceMut(s))),
            Store::Emu { addr } => HandleInner::Emu(*addr),
        };
        BufHandle {
            device: &self.device,
            elem: T::ELEM,
            mutable: true,
            inner,
        }
    }
}

impl<T: DeviceCopy> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        // GPU slices free themselves; emulator memory is returned here so that long test runs do not grow.
        if let (Store::Emu { addr }, Kind::Emu(e)) = (&self.store, &self.device.inner.kind) {
            let _ = lock(&e.emu).free(*addr);
        }
    }
}
