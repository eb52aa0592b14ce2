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

use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, LaunchArgs,
};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

use crate::device::{DeviceCopy, HandleInner, KernelArg};
use crate::emu;
use crate::error::RuntimeError;
use crate::types::{Backend, DeviceProperties, KernelInfo, LaunchDims};
use crate::validate::check_ptx_params;

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

/// A cudarc slice borrowed for one launch, with its element type erased. Pushing the slice itself (not its
/// raw pointer) lets cudarc order the launch after pending writes and record the access.
pub(crate) trait GpuSliceArg {
    /// Appends the slice as the next kernel argument.
    fn push<'s>(&'s mut self, b: &mut LaunchArgs<'s>);
    /// The `CUdeviceptr`.
    fn raw_ptr(&self) -> u64;
}

/// A slice passed to a `*const` parameter.
pub(crate) struct GpuSliceConst<'a, T>(pub &'a CudaSlice<T>);
/// A slice passed to a `*mut` parameter.
pub(crate) struct GpuSliceMut<'a, T>(pub &'a mut CudaSlice<T>);

impl<T> GpuSliceArg for GpuSliceConst<'_, T> {
    fn push<'s>(&'s mut self, b: &mut LaunchArgs<'s>) {
        b.arg(self.0);
    }
    fn raw_ptr(&self) -> u64 {
        raw_ptr(self.0)
    }
}

impl<T> GpuSliceArg for GpuSliceMut<'_, T> {
    fn push<'s>(&'s mut self, b: &mut LaunchArgs<'s>) {
        b.arg(&mut *self.0);
    }
    fn raw_ptr(&self) -> u64 {
        raw_ptr(self.0)
    }
}

/// The `CUdeviceptr` of a slice.
pub(crate) fn raw_ptr<T>(s: &CudaSlice<T>) -> u64 {
    let (p, _record) = s.device_ptr(s.stream());
    p
}

struct GpuFunction {
    f: CudaFunction,
    /// Static shared memory of the function (bytes), counted against the opt-in limit with the dynamic part.
    static_smem: u32,
    /// The dynamic shared memory limit set on the function so far.
    dyn_smem_limit: AtomicU32,
    /// The entry's `.param`s as the emulator's parser reads them, checked against each launch's `KernelInfo`.
    ptx_params: Option<Vec<emu::ParamDecl>>,
}

/// PTX address, PTX length, entry name.
type FunctionKey = (usize, usize, &'static str);

/// One GPU: its primary context, the default stream, and the module/function caches.
pub(crate) struct GpuBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    smem_optin: u32,
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
            Ok(GpuBackend {
                ctx,
                stream,
                name: format!("{} (GPU {})", dev_name, ordinal),
                smem_optin,
                modules: Mutex::new(HashMap::new()),
                functions: Mutex::new(HashMap::new()),
            })
        })
    }

    pub(crate) fn name(&self) -> String {
        self.name.clone()
    }

    /// The driver's answers about this GPU; a query that fails leaves its field `None`.
    pub(crate) fn properties(&self) -> DeviceProperties {
        use sys::CUdevice_attribute as A;
        let attr = |a: A| -> Option<u32> {
            guard("device attribute", || {
                self.ctx.attribute(a).map_err(Self::driver("attribute"))
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
            self.ctx.total_mem().map_err(Self::driver("total_mem"))
        })
        .ok()
        .map(|b| b as u64);
        DeviceProperties {
            name: self.name(),
            backend: Backend::Gpu,
            compute_capability: (major, minor),
            multiprocessors: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            driver_cuda_version,
            sm_clock_mhz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).map(|khz| khz / 1000),
            memory_clock_mhz: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE).map(|khz| khz / 1000),
            memory_bytes,
            l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).map(u64::from),
            max_smem_per_block: self.smem_optin,
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
        });
        lock(&self.functions).insert(fkey, gf.clone());
        Ok(gf)
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
            let smem = kernel.contract.smem_bytes;
            let total = func.static_smem as u64 + smem as u64;
            if total > self.smem_optin as u64 {
                return Err(RuntimeError::BadLaunch(format!(
                    "kernel `{}`: {} bytes of shared memory ({} static + smem = {} dynamic) exceed the device's \
                     limit of {} bytes per block ({})",
                    kernel.name, total, func.static_smem, smem, self.smem_optin, self.name
                )));
            }
            if smem > func.dyn_smem_limit.load(Ordering::Relaxed) {
                // Over 48 KiB of dynamic shared memory needs an explicit opt-in per function.
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
                };
            }
            let cfg = LaunchConfig {
                grid_dim: (dims.grid, 1, 1),
                block_dim: (dims.block, 1, 1),
                shared_mem_bytes: smem,
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
