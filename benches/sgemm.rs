//! sgemm ladder (paper 000 §6.1.1) against cuBLAS on the GPU: for M = N = K in {1024, 2048, 4096}, every
//! [`SgemmVariant`] and cuBLAS SGEMM, and the Fig. 6 TF32 kernel against cuBLAS with TF32 tensor-op math, in
//! the same run on the same inputs. Each result is checked against cuBLAS before it is timed. Timing: CUDA
//! events around each call after warm-up (criterion's `iter_custom`), plus a median-of-N per kernel for the
//! table of GFLOP/s and ours/cuBLAS ratios printed at the end.
//!
//! Without a GPU it prints `no GPU: sgemm benchmarks skipped (reason)` and exits 0.
//!
//! ```text
//! cargo bench --bench sgemm            # everything
//! cargo bench --bench sgemm -- 1024    # criterion filter; the table still covers every size
//! ```

mod common;

use common::{cublas, gpu_or_skip, time_events, time_median, Report, Rng, Timing};
use criterion::{BenchmarkId, Criterion, Throughput};
use prism::kernels::sgemm::{mma_tf32, sgemm, SgemmVariant};
use prism::runtime::cudarc::cublas::{sys as cublas_sys, CudaBlas, Gemm, GemmConfig};
use prism::{Device, DeviceBuffer};
use std::time::Duration;

const SIZES: [u32; 3] = [1024, 2048, 4096];
const ALPHA: f32 = 1.0;
const BETA: f32 = 0.5;
const WARMUP: usize = 3;
const REPS: usize = 10;

/// Row-major `C = alpha·A·B + beta·C` with column-major cuBLAS: computes `Cᵀ = Bᵀ·Aᵀ`, i.e. the operands
/// swapped and `m`/`n` exchanged, no transposes.
#[allow(clippy::too_many_arguments)]
fn cublas_sgemm(
    blas: &CudaBlas,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: &DeviceBuffer<f32>,
    b: &DeviceBuffer<f32>,
    beta: f32,
    c: &mut DeviceBuffer<f32>,
) -> Result<(), String> {
    let cfg = GemmConfig {
        transa: cublas_sys::cublasOperation_t::CUBLAS_OP_N,
        transb: cublas_sys::cublasOperation_t::CUBLAS_OP_N,
        m: n as i32,
        n: m as i32,
        k: k as i32,
        alpha,
        lda: n as i32,
        ldb: k as i32,
        beta,
        ldc: n as i32,
    };
    let (a, b) = (
        a.cuda_slice().ok_or("A is not on the GPU")?,
        b.cuda_slice().ok_or("B is not on the GPU")?,
    );
    let c = c.cuda_slice_mut().ok_or("C is not on the GPU")?;
    // SAFETY: the three buffers hold exactly m·k, k·n and m·n f32s (allocated below from those sizes), which
    // is what the leading dimensions above describe.
    unsafe { blas.gemm(cfg, b, a, c) }.map_err(|e| format!("cublasSgemm: {e:?}"))
}

/// `Ok` when every element of `got` is within `tol` of `want` (NaN fails), else the first offender.
fn compare(what: &str, got: &[f32], want: &[f32], tol: f32) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} results, expected {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let d = (g - w).abs();
        if d.is_nan() || d > tol {
            return Err(format!(
                "{what}: element {i} is {g}, cuBLAS gives {w} (tolerance {tol})"
            ));
        }
    }
    Ok(())
}

struct Inputs {
    a: DeviceBuffer<f32>,
    b: DeviceBuffer<f32>,
    c0: Vec<f32>,
    c: DeviceBuffer<f32>,
}

fn inputs(dev: &Device, s: u32) -> Result<Inputs, String> {
    let n = (s * s) as usize;
    let mut rng = Rng::new(s as u64);
    let a = dev.htod(&rng.f32s(n)).map_err(|e| e.to_string())?;
    let b = dev.htod(&rng.f32s(n)).map_err(|e| e.to_string())?;
    let c0 = rng.f32s(n);
    let c = dev.htod(&c0).map_err(|e| e.to_string())?;
    Ok(Inputs { a, b, c0, c })
}

fn gflops(s: u32, secs: f64) -> f64 {
    2.0 * (s as f64).powi(3) / secs / 1e9
}

/// Times `f` for the table (median of `REPS`) and registers it with criterion as `group/name`.
fn measure<F>(
    dev: &Device,
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    s: u32,
    mut f: F,
) -> Result<Timing, String>
where
    F: FnMut() -> Result<(), String>,
{
    let t = time_median(dev, WARMUP, REPS, &mut f)?;
    group.bench_function(BenchmarkId::new(name, s), |bch| {
        bch.iter_custom(|iters| {
            let t = time_events(dev, 1, iters as usize, &mut f).unwrap_or_default();
            Duration::from_secs_f64(t.iter().sum())
        })
    });
    Ok(Timing {
        secs: t,
        rate: gflops(s, t),
    })
}

/// One size: cuBLAS SGEMM, every variant against it, then cuBLAS TF32 and the Fig. 6 kernel against it.
fn size_cases(
    dev: &Device,
    c: &mut Criterion,
    blas: &CudaBlas,
    blas_tf32: &CudaBlas,
    s: u32,
    report: &mut Report,
) -> Result<(), String> {
    let size = s.to_string();
    let e = |e: prism::kernels::sgemm::SgemmError| e.to_string();
    let mut inp = inputs(dev, s)?;
    let k_f = s as f32;
    let mut group = c.benchmark_group(format!("sgemm/{s}"));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(2 * (s as u64).pow(3)));
    // cuBLAS FP32 reference result and time.
    dev.copy_htod(&inp.c0, &mut inp.c)
        .map_err(|e| e.to_string())?;
    cublas_sgemm(blas, s, s, s, ALPHA, &inp.a, &inp.b, BETA, &mut inp.c)?;
    let want = dev.dtoh(&inp.c).map_err(|e| e.to_string())?;
    let t_cublas = measure(dev, &mut group, "cublas", s, || {
        cublas_sgemm(blas, s, s, s, ALPHA, &inp.a, &inp.b, BETA, &mut inp.c)
    })?;
    for v in SgemmVariant::ALL {
        // Correctness first: one call from C0, compared with cuBLAS; then timing.
        let mut case = || -> Result<Timing, String> {
            dev.copy_htod(&inp.c0, &mut inp.c)
                .map_err(|e| e.to_string())?;
            sgemm(dev, v, s, s, s, ALPHA, &inp.a, &inp.b, BETA, &mut inp.c).map_err(e)?;
            let got = dev.dtoh(&inp.c).map_err(|e| e.to_string())?;
            compare(&format!("{v} at {s}"), &got, &want, 1e-5 * k_f)?;
            measure(dev, &mut group, v.name(), s, || {
                sgemm(dev, v, s, s, s, ALPHA, &inp.a, &inp.b, BETA, &mut inp.c)
                    .map(|_| ())
                    .map_err(e)
            })
        };
        match case() {
            Ok(t) => report.pass(v.name(), &size, t, "cuBLAS sgemm", t_cublas),
            Err(why) => report.fail(v.name(), &size, "cuBLAS sgemm", &why),
        }
    }
    // Fig. 6 TF32 tensor cores against cuBLAS with TF32 math: C = A·B.
    cublas_sgemm(blas_tf32, s, s, s, 1.0, &inp.a, &inp.b, 0.0, &mut inp.c)?;
    let want_tf32 = dev.dtoh(&inp.c).map_err(|e| e.to_string())?;
    let t_tf32 = measure(dev, &mut group, "cublas tf32", s, || {
        cublas_sgemm(blas_tf32, s, s, s, 1.0, &inp.a, &inp.b, 0.0, &mut inp.c)
    })?;
    let mut fig6 = || -> Result<Timing, String> {
        mma_tf32(dev, s, s, s, &inp.a, &inp.b, &mut inp.c).map_err(e)?;
        let got = dev.dtoh(&inp.c).map_err(|e| e.to_string())?;
        compare(
            &format!("Fig. 6 TF32 at {s}"),
            &got,
            &want_tf32,
            1e-2 * k_f.sqrt(),
        )?;
        measure(dev, &mut group, "fig6 mma tf32", s, || {
            mma_tf32(dev, s, s, s, &inp.a, &inp.b, &mut inp.c)
                .map(|_| ())
                .map_err(e)
        })
    };
    match fig6() {
        Ok(t) => report.pass("fig6 mma tf32", &size, t, "cuBLAS tf32", t_tf32),
        Err(why) => report.fail("fig6 mma tf32", &size, "cuBLAS tf32", &why),
    }
    group.finish();
    Ok(())
}

fn main() {
    let Some(dev) = gpu_or_skip("sgemm") else {
        return;
    };
    let mut c = Criterion::default().configure_from_args();
    let mut report = Report::new(
        "sgemm",
        "GFLOP/s",
        &dev.name(),
        &format!("median of {REPS} after {WARMUP} warm-up runs, CUDA events; every result checked against cuBLAS first"),
    );
    let handles = cublas(&dev).and_then(|blas| {
        let tf32 = cublas(&dev)?;
        // SAFETY: a valid handle owned by `tf32`; TF32 tensor-op math only changes the compute mode.
        let status = unsafe {
            cublas_sys::cublasSetMathMode(
                *tf32.handle(),
                cublas_sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH,
            )
        };
        if status != cublas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(format!("cublasSetMathMode(TF32): {status:?}"));
        }
        Ok((blas, tf32))
    });
    match handles {
        Ok((blas, tf32)) => {
            for s in SIZES {
                if let Err(why) = size_cases(&dev, &mut c, &blas, &tf32, s, &mut report) {
                    report.fail("all variants", &s.to_string(), "cuBLAS sgemm", &why);
                }
            }
        }
        Err(why) => report.fail("all variants", "all", "cuBLAS sgemm", &why),
    }
    c.final_summary();
    report.finish()
}
