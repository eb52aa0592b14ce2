//! Shared benchmark harness (`benches/*.rs`, `harness = false`): GPU selection with a clean skip, CUDA-event
//! timing with warm-up and median-of-N, a device-to-device copy baseline, seeded random inputs, and the results
//! [`Report`] (a table, plus JSON and TSV files for `scripts/gpu/run.sh`).
//!
//! Every benchmark binary starts with [`gpu_or_skip`]: without a GPU (CI, the development machine) it prints
//! `no GPU: <what> benchmarks skipped (<reason>)` and the binary exits 0. Timings use CUDA events recorded on
//! the device's stream around the timed region (so launch overhead on the host is not counted, and the
//! end event is waited for before reading), after `warmup` untimed runs.
#![allow(dead_code)]

mod report;
pub use report::{Report, Timing};

use prism::runtime::cudarc::cublas::CudaBlas;
use prism::runtime::cudarc::driver::{sys::CUevent_flags, CudaStream};
use prism::{Device, DeviceBuffer};
use std::sync::Arc;

/// GPU 0, or `None` after printing `no GPU: {what} benchmarks skipped ({reason})`.
pub fn gpu_or_skip(what: &str) -> Option<Device> {
    match Device::gpu(0) {
        Ok(dev) => {
            println!("{what} benchmarks on {}", dev.name());
            Some(dev)
        }
        Err(e) => {
            println!("no GPU: {what} benchmarks skipped ({e})");
            None
        }
    }
}

/// The device's CUDA stream (a GPU device always has one).
pub fn stream(dev: &Device) -> Result<Arc<CudaStream>, String> {
    dev.cuda_stream()
        .ok_or_else(|| format!("{} has no CUDA stream", dev.name()))
}

/// Times `f` with CUDA events: `warmup` untimed calls, then `reps` timed calls, each bracketed by its own
/// pair of events on the device's stream. Returns the per-call times in seconds (unsorted).
pub fn time_events<F>(
    dev: &Device,
    warmup: usize,
    reps: usize,
    mut f: F,
) -> Result<Vec<f64>, String>
where
    F: FnMut() -> Result<(), String>,
{
    let s = stream(dev)?;
    for _ in 0..warmup {
        f()?;
    }
    s.synchronize().map_err(|e| format!("synchronize: {e:?}"))?;
    let mut out = Vec::with_capacity(reps);
    let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
    for _ in 0..reps {
        let start = s.record_event(flags).map_err(|e| format!("event: {e:?}"))?;
        f()?;
        let end = s.record_event(flags).map_err(|e| format!("event: {e:?}"))?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(|e| format!("elapsed: {e:?}"))?;
        out.push(ms as f64 * 1e-3);
    }
    Ok(out)
}

/// Median of `v` (the mean of the two middle values for an even count); `NaN` when empty.
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let h = s.len() / 2;
    if s.len() % 2 == 1 {
        s[h]
    } else {
        0.5 * (s[h - 1] + s[h])
    }
}

/// Median-of-`reps` seconds per call of `f` (after `warmup` calls), timed with CUDA events.
pub fn time_median<F>(dev: &Device, warmup: usize, reps: usize, f: F) -> Result<f64, String>
where
    F: FnMut() -> Result<(), String>,
{
    Ok(median(&time_events(dev, warmup, reps, f)?))
}

/// Seconds per device-to-device copy (`memcpy_dtod`) of `src` into `dst` (median of `reps`), the bandwidth
/// baseline for memory-bound kernels that read and write the same bytes.
pub fn time_dtod<T: prism::DeviceCopy>(
    dev: &Device,
    src: &DeviceBuffer<T>,
    dst: &mut DeviceBuffer<T>,
    warmup: usize,
    reps: usize,
) -> Result<f64, String> {
    let s = stream(dev)?;
    let src = src.cuda_slice().ok_or("source buffer is not on a GPU")?;
    let dst = dst.cuda_slice_mut().ok_or("destination is not on a GPU")?;
    if dst.len() < src.len() {
        return Err(format!(
            "dtod copy: destination has {} elements, source {}",
            dst.len(),
            src.len()
        ));
    }
    time_median(dev, warmup, reps, || {
        s.memcpy_dtod(src, &mut *dst)
            .map_err(|e| format!("memcpy_dtod: {e:?}"))
    })
}

/// Bandwidth in GB/s of moving `bytes` (read + write counted by the caller) in `secs`.
pub fn gbps(bytes: f64, secs: f64) -> f64 {
    bytes / secs / 1e9
}

/// splitmix64: seeded, reproducible random inputs.
pub struct Rng(u64);

impl Rng {
    /// A generator with this seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1), never exactly zero.
    pub fn f32(&mut self) -> f32 {
        let v = ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
        if v == 0.0 {
            0.5
        } else {
            v
        }
    }
    /// `n` values of [`Rng::f32`].
    pub fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f32()).collect()
    }
    /// `n` random `u32`s.
    pub fn u32s(&mut self, n: usize) -> Vec<u32> {
        (0..n).map(|_| self.next_u64() as u32).collect()
    }
}

/// A cuBLAS handle on the device's stream, or an error when the cuBLAS library cannot be loaded (cudarc opens
/// it on first use and would panic; `scripts/gpu/run.sh` puts the pip package's copy on the library path).
pub fn cublas(dev: &Device) -> Result<CudaBlas, String> {
    // SAFETY: only tries to dlopen the library and closes it again.
    if !unsafe { prism::runtime::cudarc::cublas::sys::is_culib_present() } {
        return Err(
            "the cuBLAS library (libcublas.so) cannot be loaded: put its folder on LD_LIBRARY_PATH"
                .into(),
        );
    }
    CudaBlas::new(stream(dev)?).map_err(|e| format!("cuBLAS: {e:?}"))
}
