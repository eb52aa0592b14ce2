//! The GPU backend over cudarc's driver API.
//!
//! cudarc is built with `dynamic-loading`: libcuda is opened on the first driver call, and that call panics
//! when the library (or one of its symbols) is missing. So device selection checks
//! `sys::is_culib_present()` and `CudaContext::device_count()` first, and every driver call runs inside
//! [`guard`], which turns a panic into [`RuntimeError::Driver`].

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

use crate::arg::{raw_ptr, DeviceCopy, HandleInner, KernelArg};
use crate::emu;
use crate::error::RuntimeError;
use crate::types::{Backend, DeviceProperties, KernelInfo, LaunchDims};
use crate::validate::check_ptx_params;

// Tensor-map encoding and cuLaunchKernelEx launches (clusters, tensor-map arguments); a child module so it
// can use the private caches and function records.
#[path = "gpu_ex.rs"]
mod gpu_ex;

/// Dynamic shared memory a kernel may use without opting in (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
const DEFAULT_DYN_SMEM: u32 = 48 * 1024;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Runs `f` (which makes driver calls) and turns a panic of the CUDA binding into [`RuntimeError::Driver`].
pub(crate) fn guard<R>(
    what: &str,
    f: impl FnOnce() -> Result<R, RuntimeError>,
) -> Result<R, RuntimeError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(RuntimeError::Driver(format!(
            "{}: the CUDA binding panicked: {}",
            what,
            panic_message(&*p)
        ))),
    }
}

struct GpuFunction {
    f: CudaFunction,
    /// Static shared memory of the function (bytes), counted against the opt-in limit with the dynamic part.
    static_smem: u32,
    /// The dynamic shared memory limit set on the function so far.
    dyn_smem_limit: AtomicU32,
    /// The entry's `.param`s as the emulator's parser reads them, checked against each launch's `KernelInfo`.
    ptx_params: Option<Vec<emu::ParamDecl>>,
    /// `cuOccupancyMaxActiveClusters` answers by block size: persistent host APIs ask on every call.
    active_clusters: Mutex<HashMap<u32, u32>>,
}

/// PTX address, PTX length, entry name.
type FunctionKey = (usize, usize, &'static str);

/// One GPU: its primary context, the default stream, and the module/function caches.
pub(crate) struct GpuBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    smem_optin: u32,
    /// Queried once when the GPU is opened: some queries (`cuMemGetInfo` for the memory size) take about a
    /// millisecond, and the host APIs read the multiprocessor count on every call (persistent grids).
    props: Box<DeviceProperties>,
    /// Loaded modules keyed by the PTX text's address and length (kernel PTX is `&'static str`).
    modules: Mutex<HashMap<(usize, usize), Arc<CudaModule>>>,
    functions: Mutex<HashMap<FunctionKey, Arc<GpuFunction>>>,
}

impl GpuBackend {
    /// Opens GPU `ordinal`; [`RuntimeError::NoGpu`] when there is no driver or no such device.
    pub(crate) fn open(ordinal: usize) -> Result<GpuBackend, RuntimeError> {
        guard("opening the GPU", || {
            // SAFETY: only tries to dlopen the driver library and closes it again.
            if !unsafe { sys::is_culib_present() } {
                return Err(RuntimeError::NoGpu(
                    "no CUDA driver library (libcuda) could be loaded".into(),
                ));
            }
            let n = CudaContext::device_count().map_err(|e| {
                RuntimeError::NoGpu(format!("the CUDA driver reports no usable device: {}", e))
            })?;
            if n <= 0 {
                return Err(RuntimeError::NoGpu(
                    "the CUDA driver reports 0 devices".into(),
                ));
            }
            if ordinal >= n as usize {
                return Err(RuntimeError::NoGpu(format!(
                    "GPU {} requested, but the CUDA driver reports {} device(s)",
                    ordinal, n
                )));
            }
            let ctx = CudaContext::new(ordinal).map_err(|e| {
                RuntimeError::Driver(format!("creating a context on GPU {}: {}", ordinal, e))
            })?;
            let stream = ctx.default_stream();
            let dev_name = ctx.name().unwrap_or_else(|_| "CUDA device".to_string());
            let smem_optin = ctx
                .attribute(
                    sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                )
                .map(|v| v.max(0) as u32)
                .unwrap_or(DEFAULT_DYN_SMEM);
            let name = format!("{} (GPU {})", dev_name, ordinal);
            let props = Box::new(Self::query_properties(&ctx, &name, smem_optin));
            Ok(GpuBackend {
                ctx,
                stream,
                name,
                smem_optin,
                props,
                modules: Mutex::new(HashMap::new()),
                functions: Mutex::new(HashMap::new()),
            })
        })
    }

    pub(crate) fn name(&self) -> String {
        self.name.clone()
    }

    /// The driver's answers about this GPU (asked when it was opened).
    pub(crate) fn properties(&self) -> DeviceProperties {
        (*self.props).clone()
    }

    /// Asks the driver about the GPU of `ctx`; a query that fails leaves its field `None`.
    fn query_properties(ctx: &CudaContext, name: &str, smem_optin: u32) -> DeviceProperties {
        use sys::CUdevice_attribute as A;
        let attr = |a: A| -> Option<u32> {
            guard("device attribute", || {
                ctx.attribute(a).map_err(Self::driver("attribute"))
            })
            .ok()
            .and_then(|v| u32::try_from(v).ok())
        };
        let major = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR).unwrap_or(0);
        let minor = attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR).unwrap_or(0);
        let driver_cuda_version = guard("cuDriverGetVersion", || {
            let mut v: std::os::raw::c_int = 0;
            // SAFETY: writes one int through a valid pointer.
            let r = unsafe { sys::cuDriverGetVersion(&mut v) };
            if r == sys::CUresult::CUDA_SUCCESS {
                Ok(v)
            } else {
                Err(RuntimeError::Driver(format!("cuDriverGetVersion: {r:?}")))
            }
        })
        .ok()
        .and_then(|v| u32::try_from(v).ok())
        .map(|v| (v / 1000, (v % 1000) / 10));
        let memory_bytes = guard("total memory", || {
            ctx.total_mem().map_err(Self::driver("total_mem"))
        })
        .ok()
        .map(|b| b as u64);
        DeviceProperties {
            name: name.to_string(),
            backend: Backend::Gpu,
            compute_capability: (major, minor),
            multiprocessors: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            driver_cuda_version,
            sm_clock_mhz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).map(|khz| khz / 1000),
            memory_clock_mhz: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE).map(|khz| khz / 1000),
            memory_bytes,
            l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).map(u64::from),
            max_smem_per_block: smem_optin,
        }
    }

    pub(crate) fn smem_optin(&self) -> u32 {
        self.smem_optin
    }

    fn driver(what: &str) -> impl Fn(cudarc::driver::DriverError) -> RuntimeError + '_ {
        move |e| RuntimeError::Driver(format!("{}: {}", what, e))
    }

    pub(crate) fn htod<T: DeviceCopy>(&self, data: &[T]) -> Result<CudaSlice<T>, RuntimeError> {
        guard("htod", || {
            if data.is_empty() {
                return self.stream.null::<T>().map_err(Self::driver("htod"));
            }
            self.stream.clone_htod(data).map_err(Self::driver("htod"))
        })
    }

    pub(crate) fn alloc_zeros<T: DeviceCopy>(
        &self,
        len: usize,
    ) -> Result<CudaSlice<T>, RuntimeError> {
        guard("alloc_zeros", || {
            if len == 0 {
                return self.stream.null::<T>().map_err(Self::driver("alloc_zeros"));
            }
            self.stream
                .alloc_zeros::<T>(len)
                .map_err(Self::driver("alloc_zeros"))
        })
    }

    pub(crate) fn dtoh<T: DeviceCopy>(&self, s: &CudaSlice<T>) -> Result<Vec<T>, RuntimeError> {
        guard("dtoh", || {
            if s.is_empty() {
                return Ok(Vec::new());
            }
            let v = self.stream.clone_dtoh(s).map_err(Self::driver("dtoh"))?;
            self.stream
                .synchronize()
                .map_err(Self::driver("dtoh: synchronize"))?;
            Ok(v)
        })
    }

    pub(crate) fn copy_htod<T: DeviceCopy>(
        &self,
        data: &[T],
        dst: &mut CudaSlice<T>,
    ) -> Result<(), RuntimeError> {
        guard("copy_htod", || {
            if data.is_empty() {
                return Ok(());
            }
            self.stream
                .memcpy_htod(data, dst)
                .map_err(Self::driver("copy_htod"))
        })
    }

    pub(crate) fn clone_dtod<T: DeviceCopy>(
        &self,
        s: &CudaSlice<T>,
    ) -> Result<CudaSlice<T>, RuntimeError> {
        guard("clone_dtod", || {
            if s.is_empty() {
                return self.stream.null::<T>().map_err(Self::driver("clone_dtod"));
            }
            self.stream
                .clone_dtod(s)
                .map_err(Self::driver("clone_dtod"))
        })
    }

    pub(crate) fn synchronize(&self) -> Result<(), RuntimeError> {
        guard("synchronize", || {
            self.stream
                .synchronize()
                .map_err(Self::driver("synchronize"))
        })
    }

    /// The loaded function for `kernel`, loading (JIT-compiling) its module on first use.
    fn function(&self, kernel: &KernelInfo) -> Result<Arc<GpuFunction>, RuntimeError> {
        let mkey = (kernel.ptx.as_ptr() as usize, kernel.ptx.len());
        let fkey = (mkey.0, mkey.1, kernel.entry);
        if let Some(f) = lock(&self.functions).get(&fkey) {
            return Ok(f.clone());
        }
        let module = {
            let mut modules = lock(&self.modules);
            match modules.get(&mkey) {
                Some(m) => m.clone(),
                None => {
                    if kernel.ptx.contains('\0') {
                        return Err(RuntimeError::Ptx(format!(
                            "PTX of `{}` contains a NUL byte",
                            kernel.name
                        )));
                    }
                    let m = self
                        .ctx
                        .load_module(Ptx::from_src(kernel.ptx))
                        .map_err(|e| {
                            RuntimeError::Ptx(format!(
                                "loading the PTX of `{}`: {}",
                                kernel.name, e
                            ))
                        })?;
                    modules.insert(mkey, m.clone());
                    m
                }
            }
        };
        if kernel.entry.contains('\0') {
            return Err(RuntimeError::Ptx(format!(
                "entry name of `{}` contains a NUL byte",
                kernel.name
            )));
        }
        let f = module.load_function(kernel.entry).map_err(|e| {
            RuntimeError::Ptx(format!(
                "entry `{}` of `{}` not found in its PTX: {}",
                kernel.entry, kernel.name, e
            ))
        })?;
        let static_smem = f.shared_size_bytes().map(|v| v.max(0) as u32).unwrap_or(0);
        // The driver cannot tell how many parameters a function takes; the emulator's parser can. A PTX form
        // it does not know leaves `ptx_params` empty and skips the check.
        let ptx_params = emu::Module::parse(kernel.ptx)
            .ok()
            .and_then(|m| m.entry_params(kernel.entry));
        let gf = Arc::new(GpuFunction {
            f,
            static_smem,
            dyn_smem_limit: AtomicU32::new(DEFAULT_DYN_SMEM),
            ptx_params,
            active_clusters: Mutex::new(HashMap::new()),
        });
        lock(&self.functions).insert(fkey, gf.clone());
        Ok(gf)
    }

    /// Checks `kernel`'s shared memory (static + dynamic) against the device's limit and opts its function
    /// in to that much dynamic shared memory (over 48 KiB needs an explicit opt-in per function).
    fn opt_in_smem(&self, func: &GpuFunction, kernel: &KernelInfo) -> Result<(), RuntimeError> {
        let smem = kernel.contract.smem_bytes();
        let total = func.static_smem as u64 + smem as u64;
        if total > self.smem_optin as u64 {
            return Err(RuntimeError::BadLaunch(format!(
                "kernel `{}`: {} bytes of shared memory ({} static + smem = {} dynamic) exceed the device's \
                 limit of {} bytes per block ({})",
                kernel.name, total, func.static_smem, smem, self.smem_optin, self.name
            )));
        }
        if smem > func.dyn_smem_limit.load(Ordering::Relaxed) {
            func.f
                .set_attribute(
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    smem as i32,
                )
                .map_err(Self::driver(
                    "setting CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
                ))?;
            func.dyn_smem_limit.fetch_max(smem, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Launches an already validated kernel on the default stream (asynchronously).
    pub(crate) fn launch(
        &self,
        kernel: &KernelInfo,
        dims: LaunchDims,
        args: &mut [KernelArg<'_>],
    ) -> Result<(), RuntimeError> {
        guard("launch", || {
            let func = self.function(kernel)?;
            if let Some(decls) = &func.ptx_params {
                check_ptx_params(kernel, decls)?;
            }
            self.opt_in_smem(&func, kernel)?;
            // Clusters need cuLaunchKernelEx; tensor maps are passed by value from 64-byte-aligned copies.
            if kernel.contract.cluster_blocks() > 1
                || args
                    .iter()
                    .any(|a| matches!(a, KernelArg::TensorMap { .. }))
            {
                return self.launch_ex(&func, kernel, dims, args);
            }
            // Bools go as 32-bit values: the driver copies as many bytes as the PTX parameter has, so a
            // `.u8` or `.u32` parameter both read 0/1 from a little-endian u32.
            let bools: Vec<u32> = args
                .iter()
                .map(|a| matches!(a, KernelArg::Bool(true)) as u32)
                .collect();
            let mut b = self.stream.launch_builder(&func.f);
            for (i, a) in args.iter_mut().enumerate() {
                match a {
                    KernelArg::U32(v) => b.arg(&*v),
                    KernelArg::I32(v) => b.arg(&*v),
                    KernelArg::U64(v) => b.arg(&*v),
                    KernelArg::I64(v) => b.arg(&*v),
                    KernelArg::F32(v) => b.arg(&*v),
                    KernelArg::F64(v) => b.arg(&*v),
                    KernelArg::Bool(_) => b.arg(&bools[i]),
                    KernelArg::Buf { buf, .. } => match &mut buf.inner {
                        HandleInner::Gpu(s) => {
                            s.push(&mut b);
                            &mut b
                        }
                        HandleInner::Emu(_) => return Err(RuntimeError::WrongDevice),
                    },
                    // Routed to `launch_ex` above.
                    KernelArg::TensorMap { .. } => {
                        return Err(RuntimeError::BadArgs(
                            "internal: tensor map on the plain launch path".into(),
                        ))
                    }
                };
            }
            let cfg = LaunchConfig {
                grid_dim: (dims.grid, 1, 1),
                block_dim: (dims.block, 1, 1),
                shared_mem_bytes: kernel.contract.smem_bytes(),
            };
            // SAFETY: the arguments were checked against the kernel's parameter list (count, scalar types,
            // pointer element types and mutability, owning device) by `check_args`, and the launch against its
            // contract by `validate_launch`; the PTX comes from the Prism compiler, which emitted that list.
            unsafe { b.launch(cfg) }
                .map_err(|e| RuntimeError::Driver(format!("launching `{}`: {}", kernel.name, e)))?;
            Ok(())
        })
    }
}

/// One argument of [`GpuBackend::run_ptx`]: a value passed by value (a scalar or a struct, its exact bytes
/// as the `.param` declares them) or a device buffer with its initial contents.
pub(crate) enum RawArg<'a> {
    /// The parameter's bytes.
    Value(&'a [u8]),
    /// A buffer: allocated, filled with these bytes, passed as its device address.
    Buffer(&'a [u8]),
}

/// What [`GpuBackend::run_ptx`] brings back.
pub(crate) struct RawRun {
    /// Every [`RawArg::Buffer`]'s bytes after the kernel, in argument order.
    pub buffers: Vec<Vec<u8>>,
    /// The `.version` directive was lowered for this driver: the note says from what to what.
    pub note: Option<String>,
    /// Launch to the end of the synchronisation.
    pub elapsed: std::time::Duration,
}

/// The newest PTX ISA version a driver of CUDA version `major.minor` JIT-compiles (the PTX ISA document's
/// release table); `None` when the version is outside the table (then the PTX is loaded as it is).
pub(crate) fn max_ptx_isa(major: u32, minor: u32) -> Option<(u32, u32)> {
    Some(match (major, minor) {
        (11, m) if m <= 8 => (7, m),
        (12, m) if m <= 5 => (8, m),
        (12, 6) | (12, 7) => (8, 5),
        (12, 8) => (8, 7),
        (12, _) => (8, 8),
        (13, m) => (9, m),
        _ => return None,
    })
}

/// `src` with its `.version` lowered to `max` when it declares a newer one (nvcc of a newer toolkit than the
/// driver writes a version the driver refuses, though the instructions are older), and a note saying so.
pub(crate) fn lower_ptx_version(
    src: &str,
    max: (u32, u32),
) -> (std::borrow::Cow<'_, str>, Option<String>) {
    for (start, line) in src.split_inclusive('\n').scan(0usize, |pos, l| {
        let s = *pos;
        *pos += l.len();
        Some((s, l))
    }) {
        let t = line.trim();
        let Some(v) = t.strip_prefix(".version") else {
            continue;
        };
        let v = v.trim();
        let parsed = v.split_once('.').and_then(|(a, b)| {
            Some((a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?))
        });
        return match parsed {
            Some(have) if have > max => {
                let mut s = String::with_capacity(src.len());
                s.push_str(&src[..start]);
                s.push_str(&format!(".version {}.{}\n", max.0, max.1));
                s.push_str(&src[start + line.len()..]);
                let note = format!(
                    "the PTX declares .version {}.{}, newer than this driver's PTX ISA {}.{}: loaded as .version {}.{}",
                    have.0, have.1, max.0, max.1, max.0, max.1
                );
                (std::borrow::Cow::Owned(s), Some(note))
            }
            _ => (std::borrow::Cow::Borrowed(src), None),
        };
    }
    (std::borrow::Cow::Borrowed(src), None)
}

impl GpuBackend {
    /// The driver's CUDA version `(major, minor)`, if it tells.
    fn driver_version(&self) -> Option<(u32, u32)> {
        self.properties().driver_cuda_version
    }

    /// Loads arbitrary PTX (any text the driver accepts), uploads the buffers, launches `entry` on
    /// `[grid, block]` with the parameters given as raw bytes (`cuLaunchKernel` with a `kernelParams` array,
    /// or `cuLaunchCooperativeKernel` when `cooperative`), synchronises and reads every buffer back. Nothing
    /// here is checked against a Prism kernel contract: this is the `emulate` CLI's GPU backend, for PTX from
    /// anywhere.
    pub(crate) fn run_ptx(
        &self,
        ptx: &str,
        entry: &str,
        [grid, block]: [[u32; 3]; 2],
        smem: u32,
        cooperative: bool,
        args: &[RawArg<'_>],
    ) -> Result<RawRun, RuntimeError> {
        guard("running PTX", || {
            if ptx.contains('\0') || entry.contains('\0') {
                return Err(RuntimeError::Ptx(
                    "the PTX or the entry name contains a NUL byte".into(),
                ));
            }
            let (src, note) = match self.driver_version().and_then(|(a, b)| max_ptx_isa(a, b)) {
                Some(max) => lower_ptx_version(ptx, max),
                None => (std::borrow::Cow::Borrowed(ptx), None),
            };
            let module = self
                .ctx
                .load_module(Ptx::from_src(src.into_owned()))
                .map_err(|e| RuntimeError::Ptx(format!("loading the PTX: {}", e)))?;
            let f = module
                .load_function(entry)
                .map_err(|e| RuntimeError::Ptx(format!("entry `{}`: {}", entry, e)))?;
            let static_smem = f.shared_size_bytes().map(|v| v.max(0) as u64).unwrap_or(0);
            if static_smem + smem as u64 > self.smem_optin as u64 {
                return Err(RuntimeError::BadLaunch(format!(
                    "{} bytes of shared memory ({} static + {} dynamic) exceed the device's limit of {} bytes per block",
                    static_smem + smem as u64,
                    static_smem,
                    smem,
                    self.smem_optin
                )));
            }
            if smem > DEFAULT_DYN_SMEM {
                f.set_attribute(
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    smem as i32,
                )
                .map_err(Self::driver(
                    "setting CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
                ))?;
            }
            // Buffers first (kept alive until the copies back), then one byte vector per parameter.
            let mut slices: Vec<Option<CudaSlice<u8>>> = Vec::new();
            let mut storage: Vec<Vec<u8>> = Vec::with_capacity(args.len());
            for a in args {
                match a {
                    RawArg::Value(b) => storage.push(b.to_vec()),
                    RawArg::Buffer(b) => {
                        let (ptr, s) = if b.is_empty() {
                            (0u64, None)
                        } else {
                            let s = self.stream.clone_htod(*b).map_err(Self::driver("htod"))?;
                            (raw_ptr(&s), Some(s))
                        };
                        slices.push(s);
                        storage.push(ptr.to_le_bytes().to_vec());
                    }
                }
            }
            self.stream
                .synchronize()
                .map_err(Self::driver("synchronize after the uploads"))?;
            let mut params: Vec<*mut std::ffi::c_void> = storage
                .iter_mut()
                .map(|v| v.as_mut_ptr() as *mut std::ffi::c_void)
                .collect();
            self.ctx
                .bind_to_thread()
                .map_err(Self::driver("binding the context"))?;
            let t0 = std::time::Instant::now();
            // SAFETY: `f` belongs to `module`, alive here; `params` holds one pointer per parameter, each to
            // as many bytes as the caller says the `.param` declares (the CLI checks the sizes against the
            // PTX), alive until the launch returns (the driver copies them at the call); the device
            // addresses point into `slices`, alive until after the synchronisation below.
            unsafe {
                if cooperative {
                    sys::cuLaunchCooperativeKernel(
                        f.cu_function(),
                        grid[0],
                        grid[1],
                        grid[2],
                        block[0],
                        block[1],
                        block[2],
                        smem,
                        self.stream.cu_stream(),
                        params.as_mut_ptr(),
                    )
                    .result()
                } else {
                    cudarc::driver::result::launch_kernel(
                        f.cu_function(),
                        (grid[0], grid[1], grid[2]),
                        (block[0], block[1], block[2]),
                        smem,
                        self.stream.cu_stream(),
                        &mut params,
                    )
                }
            }
            .map_err(|e| RuntimeError::Driver(format!("launching `{}`: {}", entry, e)))?;
            self.stream.synchronize().map_err(|e| {
                RuntimeError::Driver(format!("running `{}` (synchronize): {}", entry, e))
            })?;
            let elapsed = t0.elapsed();
            let mut buffers = Vec::with_capacity(slices.len());
            for s in &slices {
                buffers.push(match s {
                    Some(s) => self.stream.clone_dtoh(s).map_err(Self::driver("dtoh"))?,
                    None => Vec::new(),
                });
            }
            self.stream
                .synchronize()
                .map_err(Self::driver("synchronize after the copies back"))?;
            drop(module);
            Ok(RawRun {
                buffers,
                note,
                elapsed,
            })
        })
    }
}

#[cfg(test)]
mod raw_tests {
    use super::*;

    #[test]
    fn ptx_version_is_lowered_only_when_newer() {
        let src = "//\n.version 9.5\n.target sm_90\n";
        let (s, note) = lower_ptx_version(src, (9, 0));
        assert_eq!(s, "//\n.version 9.0\n.target sm_90\n");
        assert!(note.is_some_and(|n| n.contains("9.5")));
        let (s, note) = lower_ptx_version(src, (9, 5));
        assert_eq!(s, src);
        assert!(note.is_none());
        assert_eq!(max_ptx_isa(13, 0), Some((9, 0)));
        assert_eq!(max_ptx_isa(12, 6), Some((8, 5)));
        assert_eq!(max_ptx_isa(14, 0), None);
    }
}
