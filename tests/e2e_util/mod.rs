//! Helpers shared by the end-to-end tests (`tests/e2e_*.rs`): a seeded RNG and the device.
#![allow(dead_code)]

use prism::Device;

pub mod gemm;

/// splitmix64: seeded, reproducible, no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
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
    pub fn i32(&mut self) -> i32 {
        self.next_u64() as i32
    }
    pub fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f32()).collect()
    }
    pub fn i32s(&mut self, n: usize) -> Vec<i32> {
        (0..n).map(|_| self.i32()).collect()
    }
}

/// Written into every output buffer before a launch, so elements the kernel should write but does not are
/// caught (and elements it must not write are checked to keep it).
pub const SENTINEL_F32: f32 = -7777.25;
pub const SENTINEL_I32: i32 = 0x5EED_0BAD;

/// `Device::auto()`: the GPU when present, else the emulator. Prints which one runs the test.
pub fn device() -> Device {
    let dev = Device::auto().expect("Device::auto never fails: it falls back to the emulator");
    println!("backend: {:?} ({})", dev.backend(), dev.name());
    dev
}

/// The emulator with `cfg`; GPU 0 instead when `PRISM_BACKEND=gpu` (as `scripts/gpu/run.sh` sets it), so
/// suites written for the emulator also run their kernels on the GPU. Callers check emulator-only figures
/// (counters) only when the launch report has them.
pub fn emulator_or_gpu(cfg: prism::runtime::emu::EmuConfig) -> Device {
    if std::env::var(prism::runtime::BACKEND_ENV).is_ok_and(|v| v.trim() == "gpu") {
        return Device::gpu(0).unwrap_or_else(|e| panic!("PRISM_BACKEND=gpu, but GPU 0: {e}"));
    }
    Device::emulator_with(cfg)
}

/// The f64 dot product `Σₓ a(x)·b(x)` over `x < k` and `Σₓ |a(x)·b(x)|`, the scale of an f32 result's
/// rounding error: one entry of a matrix-product reference.
pub fn dot_f64(k: usize, a: impl Fn(usize) -> f64, b: impl Fn(usize) -> f64) -> (f64, f64) {
    (0..k).fold((0.0, 0.0), |(s, mag), x| {
        let p = a(x) * b(x);
        (s + p, mag + p.abs())
    })
}
