//! The README's first command: runs two real Prism kernels end to end and checks them against the CPU.
//!
//! `cargo run --release --example quickstart` uses GPU 0 when a CUDA driver and a GPU are present, and the
//! PTX emulator otherwise (set `PRISM_BACKEND=emulator` or `gpu` to choose). It prints which one ran.

use prism_runtime::{Backend, Device, LaunchDims};
use std::process::ExitCode;
use std::time::Instant;

/// A small deterministic generator, so the example needs no extra dependency.
fn random_f32s(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn vector_add(dev: &Device, n: u32) -> Result<(), String> {
    let a = random_f32s(n as usize, 1);
    let b = random_f32s(n as usize, 2);
    let da = dev.htod(&a).map_err(|e| e.to_string())?;
    let db = dev.htod(&b).map_err(|e| e.to_string())?;
    // Pre-filled with NaN so an element the kernel forgot to write cannot pass.
    let mut dc = dev
        .htod(&vec![f32::NAN; n as usize])
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    prism_kernels::vector_add::launch(
        dev,
        LaunchDims::new(n.div_ceil(256), 256),
        &da,
        &db,
        &mut dc,
        n,
    )
    .map_err(|e| e.to_string())?;
    dev.synchronize().map_err(|e| e.to_string())?;
    let elapsed = start.elapsed();
    let c = dev.dtoh(&dc).map_err(|e| e.to_string())?;
    let wrong = (0..n as usize).filter(|&i| c[i] != a[i] + b[i]).count();
    println!(
        "vector_add      n = {n:>9}: {wrong} wrong elements, {:.3} ms",
        elapsed.as_secs_f64() * 1e3
    );
    if wrong == 0 {
        Ok(())
    } else {
        Err(format!(
            "vector_add: {wrong} of {n} elements differ from the CPU"
        ))
    }
}

/// Rounds to TF32 (10 explicit mantissa bits, round to nearest) as the tensor core does with its inputs.
fn tf32(x: f32) -> f32 {
    let bits = x.to_bits();
    f32::from_bits(bits.wrapping_add(0x1000) & !0x1fff)
}

fn mma_tf32(dev: &Device, m: u32, n: u32, k: u32) -> Result<(), String> {
    let a = random_f32s((m * k) as usize, 3);
    let b = random_f32s((k * n) as usize, 4);
    let da = dev.htod(&a).map_err(|e| e.to_string())?;
    let db = dev.htod(&b).map_err(|e| e.to_string())?;
    let mut dc = dev
        .htod(&vec![f32::NAN; (m * n) as usize])
        .map_err(|e| e.to_string())?;
    let blocks = m.div_ceil(16) * n.div_ceil(8);
    let start = Instant::now();
    prism_kernels::mma_tf32_naive::launch(
        dev,
        LaunchDims::new(blocks, 32),
        &da,
        &db,
        &mut dc,
        m,
        n,
        k,
    )
    .map_err(|e| e.to_string())?;
    dev.synchronize().map_err(|e| e.to_string())?;
    let elapsed = start.elapsed();
    let c = dev.dtoh(&dc).map_err(|e| e.to_string())?;
    let mut worst = 0.0f64;
    for i in 0..m as usize {
        for j in 0..n as usize {
            let want: f64 = (0..k as usize)
                .map(|p| tf32(a[i * k as usize + p]) as f64 * tf32(b[p * n as usize + j]) as f64)
                .sum();
            let got = c[i * n as usize + j] as f64;
            let err = if got.is_nan() {
                f64::INFINITY
            } else {
                (got - want).abs()
            };
            worst = worst.max(err);
        }
    }
    println!(
        "mma_tf32_naive  {m}x{n}x{k}: max |error| vs CPU = {worst:.2e}, {:.3} ms",
        elapsed.as_secs_f64() * 1e3
    );
    let tolerance = 1e-3 * k as f64;
    if worst <= tolerance {
        Ok(())
    } else {
        Err(format!(
            "mma_tf32_naive: max error {worst:.3e} exceeds {tolerance:.1e}"
        ))
    }
}

fn main() -> ExitCode {
    let dev = match Device::auto() {
        Ok(dev) => dev,
        Err(e) => {
            eprintln!("error: no device to run on: {e}");
            return ExitCode::FAILURE;
        }
    };
    let on_gpu = dev.backend() == Backend::Gpu;
    println!(
        "running on: {} ({})",
        dev.name(),
        if on_gpu {
            "GPU"
        } else {
            "emulator: no GPU found"
        }
    );
    // The emulator runs every thread on the CPU: smaller problems keep the example quick there.
    let (n, (m, nn, k)) = if on_gpu {
        (1 << 24, (1024, 1024, 1024))
    } else {
        (100_000, (64, 64, 64))
    };
    let results = [vector_add(&dev, n), mma_tf32(&dev, m, nn, k)];
    let failures: Vec<_> = results.into_iter().filter_map(Result::err).collect();
    if failures.is_empty() {
        println!("all kernels match the CPU reference");
        ExitCode::SUCCESS
    } else {
        for f in &failures {
            eprintln!("error: {f}");
        }
        ExitCode::FAILURE
    }
}
