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

use common::{gpu_or_skip, stream, time_events, time_median, Rng, Table};
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

fn run(dev: &Device, c: &mut Criterion) -> Result<Table, String> {
    let st = stream(dev)?;
    let blas = CudaBlas::new(st.clone()).map_err(|e| format!("cuBLAS: {e:?}"))?;
    let blas_tf32 = CudaBlas::new(st).map_err(|e| format!("cuBLAS: {e:?}"))?;
    // SAFETY: a valid handle owned by `blas_tf32`; TF32 tensor-op math only changes the compute mode.
    let status = unsafe {
        cublas_sys::cublasSetMathMode(
            *blas_tf32.handle(),
            cublas_sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH,
        )
    };
    if status != cublas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        return Err(format!("cublasSetMathMode(TF32): {status:?}"));
    }
    let mut table = Table::new(&[
        "M=N=K",
        "kernel",
        "ms",
        "GFLOP/s",
        "cuBLAS GFLOP/s",
        "ours/cuBLAS",
    ]);
    let e = |e: prism::kernels::sgemm::SgemmError| e.to_string();
    for s in SIZES {
        let mut inp = inputs(dev, s)?;
        let k_f = s as f32;
        // cuBLAS FP32 reference result and time.
        dev.copy_htod(&inp.c0, &mut inp.c)
            .map_err(|e| e.to_string())?;
        cublas_sgemm(&blas, s, s, s, ALPHA, &inp.a, &inp.b, BETA, &mut inp.c)?;
        let want = dev.dtoh(&inp.c).map_err(|e| e.to_string())?;
        let t_cublas = time_median(dev, WARMUP, REPS, || {
            cublas_sgemm(&blas, s, s, s, ALPHA, &inp.a, &inp.b, BETA, &mut inp.c)
        })?;
        let mut group = c.benchmark_group(format!("sgemm/{s}"));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .throughput(Throughput::Elements(2 * (s as u64).pow(3)));
        group.bench_function(BenchmarkId::new("cublas", s), |bch| {
            bch.iter_custom(|iters| {
                let t = time_events(dev, 1, iters as usize, || {
                    cublas_sgemm(&blas, s, s, s, ALPHA, &inp.a, &inp.b, BETA, &mut inp.c)
                })
                .expect("cuBLAS timing");
                Duration::from_secs_f64(t.iter().sum())
            })
        });
        table.row(vec![
            s.to_string(),
            "cuBLAS sgemm".into(),
            format!("{:.3}", t_cublas * 1e3),
            format!("{:.0}", gflops(s, t_cublas)),
            format!("{:.0}", gflops(s, t_cublas)),
            "1.00".into(),
        ]);
        for v in SgemmVariant::ALL {
            // Correctness first: one call from C0, compared with cuBLAS.
            dev.copy_htod(&inp.c0, &mut inp.c)
                .map_err(|e| e.to_string())?;
            sgemm(dev, v, s, s, s, ALPHA, &inp.a, &inp.b, BETA, &mut inp.c).map_err(e)?;
            let got = dev.dtoh(&inp.c).map_err(|e| e.to_string())?;
            compare(&format!("{v} at {s}"), &got, &want, 1e-5 * k_f)?;
            let t = time_median(dev, WARMUP, REPS, || {
                sgemm(dev, v, s, s, s, ALPHA, &inp.a, &inp.b, BETA, &mut inp.c)
                    .map(|_| ())
                    .map_err(e)
            })?;
            group.bench_function(BenchmarkId::new(v.name(), s), |bch| {
                bch.iter_custom(|iters| {
                    let t = time_events(dev, 1, iters as usize, || {
                        sgemm(dev, v, s, s, s, ALPHA, &inp.a, &inp.b, BETA, &mut inp.c)
                            .map(|_| ())
                            .map_err(e)
                    })
                    .expect("sgemm timing");
                    Duration::from_secs_f64(t.iter().sum())
                })
            });
            table.row(vec![
                s.to_string(),
                v.name().into(),
                format!("{:.3}", t * 1e3),
                format!("{:.0}", gflops(s, t)),
                format!("{:.0}", gflops(s, t_cublas)),
                format!("{:.2}", t_cublas / t),
            ]);
        }
        // Fig. 6 TF32 tensor cores against cuBLAS with TF32 math: C = A·B.
        cublas_sgemm(&blas_tf32, s, s, s, 1.0, &inp.a, &inp.b, 0.0, &mut inp.c)?;
        let want_tf32 = dev.dtoh(&inp.c).map_err(|e| e.to_string())?;
        let t_tf32 = time_median(dev, WARMUP, REPS, || {
            cublas_sgemm(&blas_tf32, s, s, s, 1.0, &inp.a, &inp.b, 0.0, &mut inp.c)
        })?;
        mma_tf32(dev, s, s, s, &inp.a, &inp.b, &mut inp.c).map_err(e)?;
        let got = dev.dtoh(&inp.c).map_err(|e| e.to_string())?;
        compare(
            &format!("Fig. 6 TF32 at {s}"),
            &got,
            &want_tf32,
            1e-2 * k_f.sqrt(),
        )?;
        let t_fig6 = time_median(dev, WARMUP, REPS, || {
            mma_tf32(dev, s, s, s, &inp.a, &inp.b, &mut inp.c)
                .map(|_| ())
                .map_err(e)
        })?;
        group.bench_function(BenchmarkId::new("fig6 mma tf32", s), |bch| {
            bch.iter_custom(|iters| {
                let t = time_events(dev, 1, iters as usize, || {
                    mma_tf32(dev, s, s, s, &inp.a, &inp.b, &mut inp.c)
                        .map(|_| ())
                        .map_err(e)
                })
                .expect("Fig. 6 timing");
                Duration::from_secs_f64(t.iter().sum())
            })
        });
        group.finish();
        table.row(vec![
            s.to_string(),
            "cuBLAS tf32".into(),
            format!("{:.3}", t_tf32 * 1e3),
            format!("{:.0}", gflops(s, t_tf32)),
            format!("{:.0}", gflops(s, t_tf32)),
            "1.00".into(),
        ]);
        table.row(vec![
            s.to_string(),
            "fig6 mma tf32".into(),
            format!("{:.3}", t_fig6 * 1e3),
            format!("{:.0}", gflops(s, t_fig6)),
            format!("{:.0}", gflops(s, t_tf32)),
            format!("{:.2}", t_tf32 / t_fig6),
        ]);
    }
    Ok(table)
}

fn main() {
    let Some(dev) = gpu_or_skip("sgemm") else {
        return;
    };
    let mut c = Criterion::default().configure_from_args();
    match run(&dev, &mut c) {
        Ok(table) => {
            c.final_summary();
            println!(
                "\nsgemm on {} (median of {REPS} after {WARMUP} warm-up runs, CUDA events; every result checked against cuBLAS first)",
                dev.name()
            );
            table.print();
        }
        Err(msg) => {
            eprintln!("sgemm benchmark failed: {msg}");
            std::process::exit(1);
        }
    }
}
