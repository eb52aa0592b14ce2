//! The bf16 Hopper GEMM ladder (`prism_kernels::gemm`) against cuBLAS bf16 (`cublasGemmEx`, bf16 inputs, f32
//! output and compute) on the GPU, in the same run on the same inputs: M = N = K in {2048, 4096, 6144, 8192}
//! and two shapes of LLM layers; rung 7 (bf16 output) against cuBLAS with a bf16 `C`. Every rung's result is
//! checked against cuBLAS before it is timed; the table gives TFLOP/s and ours/cuBLAS. The table-driven
//! variants (space-filling tile order) get their Hilbert `TileSchedule` built once per shape, outside the
//! timed calls, as an application would. One more row times the best rung's kernel on operand maps without
//! L2 promotion (the host API asks for 256-byte fetches), so the promotion's worth is measured in the same
//! run; the header says how many 2-block clusters the driver keeps resident (the cluster rungs' grid).
//! Targets (issue "bf16 Hopper GEMM"): ≥ 1.05× at 4096³, ≥ 1.00× at 8192³.
//!
//! Without a GPU it prints `no GPU: gemm_bf16 benchmarks skipped (reason)` and exits 0.
//!
//! ```text
//! cargo bench --bench gemm_bf16
//! ```

mod common;

use common::{cublas, gpu_or_skip, stream, time_events, time_median, Report, Rng, Timing};
use criterion::{BenchmarkId, Criterion, Throughput};
use prism::kernels::gemm::{
    gemm_bf16_out_bf16_with_schedule, gemm_bf16_tma_store_f32, gemm_bf16_with_schedule,
    GemmBf16OutVariant, GemmBf16Variant, TileSchedule,
};
use prism::runtime::cudarc::cublas::{sys as cublas_sys, CudaBlas};
use prism::runtime::cudarc::driver::DevicePtr;
use prism::runtime::half::bf16;
use prism::runtime::{LaunchDims, TensorMap, TensorMapMut, TensorSwizzle};
use prism::{Device, DeviceBuffer};
use std::time::Duration;

/// (m, n, k): squares, then an MLP up-projection and a down-projection of LLM layers.
const SHAPES: [(u32, u32, u32); 6] = [
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (6144, 6144, 6144),
    (8192, 8192, 8192),
    (4096, 14336, 4096),
    (8192, 1024, 8192),
];
const WARMUP: usize = 3;
const REPS: usize = 10;

/// `C (m×n, row-major) = A (m×k, row-major) · Bᵀ (B n×k, row-major)` in f32 with cuBLAS. Column-major,
/// that is `Cᵀ (n×m) = B · Aᵀ`: B's memory is the k×n column-major Bᵀ (transposed back: `T`), A's the k×m
/// column-major Aᵀ (`N`); the "TN" layout cuBLAS is fastest at.
fn cublas_gemm<T: prism::runtime::DeviceCopy>(
    dev: &Device,
    blas: &CudaBlas,
    (m, n, k): (u32, u32, u32),
    a: &DeviceBuffer<bf16>,
    b: &DeviceBuffer<bf16>,
    c: &mut DeviceBuffer<T>,
    c_type: cublas_sys::cudaDataType,
) -> Result<(), String> {
    let s = stream(dev)?;
    let (a, b) = (
        a.cuda_slice().ok_or("A is not on the GPU")?,
        b.cuda_slice().ok_or("B is not on the GPU")?,
    );
    let c = c.cuda_slice_mut().ok_or("C is not on the GPU")?;
    let (pa, _ga) = a.device_ptr(&s);
    let (pb, _gb) = b.device_ptr(&s);
    let (pc, _gc) = c.device_ptr(&s);
    let (alpha, beta) = (1.0f32, 0.0f32);
    // SAFETY: A, B and C hold m·k, n·k and m·n elements of the types named (allocated below from those sizes;
    // the callers pass `c_type` matching `T`),
    // which is what the sizes and leading dimensions describe; alpha and beta are host f32s.
    unsafe {
        prism::runtime::cudarc::cublas::result::gemm_ex(
            *blas.handle(),
            cublas_sys::cublasOperation_t::CUBLAS_OP_T,
            cublas_sys::cublasOperation_t::CUBLAS_OP_N,
            n as i32,
            m as i32,
            k as i32,
            (&alpha as *const f32).cast(),
            pb as *const _,
            cublas_sys::cudaDataType::CUDA_R_16BF,
            k as i32,
            pa as *const _,
            cublas_sys::cudaDataType::CUDA_R_16BF,
            k as i32,
            (&beta as *const f32).cast(),
            pc as *mut _,
            c_type,
            n as i32,
            cublas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            cublas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
    .map_err(|e| format!("cublasGemmEx: {e:?}"))
}

/// The Hilbert tile schedule of a table-driven variant (`grid` from its `schedule_grid`), built once per
/// shape; `None` for the variants that compute their order in the kernel.
fn schedule(dev: &Device, grid: Option<(u32, u32)>) -> Result<Option<TileSchedule>, String> {
    grid.map(|(tm, tn)| TileSchedule::hilbert(dev, tm, tn).map_err(|e| e.to_string()))
        .transpose()
}

fn tflops((m, n, k): (u32, u32, u32), secs: f64) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64 / secs / 1e12
}

/// Every element of `got` within `tol · sqrt(k)` of cuBLAS's (both accumulate in f32, in different orders).
fn compare(what: &str, got: &[f32], want: &[f32], k: u32) -> Result<(), String> {
    let tol = 2e-3 * (k as f32).sqrt() + 1e-3;
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

fn measure<F>(
    dev: &Device,
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    shape: (u32, u32, u32),
    mut f: F,
) -> Result<Timing, String>
where
    F: FnMut() -> Result<(), String>,
{
    let t = time_median(dev, WARMUP, REPS, &mut f)?;
    let id = format!("{}x{}x{}", shape.0, shape.1, shape.2);
    group.bench_function(BenchmarkId::new(name, id), |bch| {
        bch.iter_custom(|iters| {
            let t = time_events(dev, 1, iters as usize, &mut f).unwrap_or_default();
            Duration::from_secs_f64(t.iter().sum())
        })
    });
    Ok(Timing {
        secs: t,
        rate: tflops(shape, t),
    })
}

fn shape_cases(
    dev: &Device,
    c: &mut Criterion,
    blas: &CudaBlas,
    shape: (u32, u32, u32),
    report: &mut Report,
) -> Result<(), String> {
    let (m, n, k) = shape;
    let size = format!("{m}x{n}x{k}");
    let mut rng = Rng::new(m as u64 ^ (n as u64) << 20 ^ (k as u64) << 40);
    let mut bf =
        |len: usize| -> Vec<bf16> { (0..len).map(|_| bf16::from_f32(rng.f32())).collect() };
    let a = dev
        .htod(&bf(m as usize * k as usize))
        .map_err(|e| e.to_string())?;
    let b = dev
        .htod(&bf(n as usize * k as usize))
        .map_err(|e| e.to_string())?;
    let mut out = dev
        .alloc_zeros::<f32>(m as usize * n as usize)
        .map_err(|e| e.to_string())?;
    let mut group = c.benchmark_group(format!("gemm_bf16/{size}"));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(2 * m as u64 * n as u64 * k as u64));
    let f32_out = cublas_sys::cudaDataType::CUDA_R_32F;
    cublas_gemm(dev, blas, shape, &a, &b, &mut out, f32_out)?;
    let want = dev.dtoh(&out).map_err(|e| e.to_string())?;
    let t_cublas = measure(dev, &mut group, "cublas", shape, || {
        cublas_gemm(dev, blas, shape, &a, &b, &mut out, f32_out)
    })?;
    for v in GemmBf16Variant::ALL {
        let mut case = || -> Result<Timing, String> {
            let sched = schedule(dev, v.schedule_grid(m, n))?;
            let run = |out: &mut DeviceBuffer<f32>| {
                gemm_bf16_with_schedule(dev, v, sched.as_ref(), m, n, k, 1.0, &a, &b, 0.0, out)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            };
            run(&mut out)?;
            let got = dev.dtoh(&out).map_err(|e| e.to_string())?;
            compare(&format!("{} at {size}", v.name()), &got, &want, k)?;
            measure(dev, &mut group, v.name(), shape, || run(&mut out))
        };
        match case() {
            Ok(t) => report.pass(v.name(), &size, t, "cuBLAS bf16", t_cublas),
            Err(why) => report.fail(v.name(), &size, "cuBLAS bf16", &why),
        }
    }
    // The best rung on operand maps without L2 promotion (the host API asks for 256-byte fetches): what the
    // promotion is worth, in the same run.
    let name = "7 tma-store f32, maps without L2 promotion";
    match without_l2_promotion(dev, &mut group, shape, &a, &b, &mut out, &want) {
        Ok(t) => report.pass(name, &size, t, "cuBLAS bf16", t_cublas),
        Err(why) => report.fail(name, &size, "cuBLAS bf16", &why),
    }
    bf16_output(dev, &mut group, blas, shape, &a, &b, &want, report);
    group.finish();
    Ok(())
}

/// `GemmBf16Variant::TmaStore256`'s kernel through its typed launcher, as the host API launches it
/// (`beta` = 0, grouped order, one block per SM) but with operand maps that ask for no L2 promotion.
fn without_l2_promotion(
    dev: &Device,
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    shape: (u32, u32, u32),
    a: &DeviceBuffer<bf16>,
    b: &DeviceBuffer<bf16>,
    out: &mut DeviceBuffer<f32>,
    want: &[f32],
) -> Result<Timing, String> {
    let (m, n, k) = shape;
    let e = |e: prism::runtime::RuntimeError| e.to_string();
    let ma =
        TensorMap::row_major_2d(a, m as u64, k as u64, 128, 64, TensorSwizzle::B128).map_err(e)?;
    let mb =
        TensorMap::row_major_2d(b, n as u64, k as u64, 256, 64, TensorSwizzle::B128).map_err(e)?;
    let no_c = dev.alloc_zeros::<f32>(0).map_err(e)?;
    let no_table = dev.alloc_zeros::<u32>(0).map_err(e)?;
    let tiles = m.div_ceil(128) * n.div_ceil(256);
    let sms = dev.properties().multiprocessors.unwrap_or(132);
    let dims = LaunchDims::new(tiles.min(sms), 384);
    let run = |out: &mut DeviceBuffer<f32>| -> Result<(), String> {
        let mut md = TensorMapMut::tiled(
            out,
            [n as u64, m as u64],
            &[n as u64 * 4],
            [32, 64],
            TensorSwizzle::B128,
        )
        .map_err(e)?;
        gemm_bf16_tma_store_f32::<256, 4, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, 1.0, 0.0, &no_c, &mut md, &no_table,
        )
        .map(|_| ())
        .map_err(e)
    };
    run(out)?;
    let got = dev.dtoh(out).map_err(e)?;
    compare("7 without L2 promotion", &got, want, k)?;
    measure(dev, group, "7 tma-store f32 no-promotion", shape, || {
        run(out)
    })
}

/// The bf16-output rungs (bf16 `D` through TMA stores) against cuBLAS with a bf16 `C`, all checked against
/// the f32 result first (within the f32 tolerance plus one bf16 step).
#[allow(clippy::too_many_arguments)]
fn bf16_output(
    dev: &Device,
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    blas: &CudaBlas,
    shape: (u32, u32, u32),
    a: &DeviceBuffer<bf16>,
    b: &DeviceBuffer<bf16>,
    want: &[f32],
    report: &mut Report,
) {
    let (m, n, k) = shape;
    let size = format!("{m}x{n}x{k}");
    let bf16_out = cublas_sys::cudaDataType::CUDA_R_16BF;
    let check = |what: &str, got: &DeviceBuffer<bf16>| -> Result<(), String> {
        let got: Vec<f32> = dev
            .dtoh(got)
            .map_err(|e| e.to_string())?
            .iter()
            .map(|x| x.to_f32())
            .collect();
        let tol = 2e-3 * (k as f32).sqrt() + 1e-3;
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            if (g - w).is_nan() || (g - w).abs() > tol + w.abs() / 128.0 {
                return Err(format!("{what}: element {i} is {g}, the f32 result is {w}"));
            }
        }
        Ok(())
    };
    let mut d = match dev.alloc_zeros::<bf16>(m as usize * n as usize) {
        Ok(d) => d,
        Err(e) => return report.fail("bf16 out", &size, "cuBLAS bf16 out", &e.to_string()),
    };
    let mut t_cublas = || -> Result<Timing, String> {
        cublas_gemm(dev, blas, shape, a, b, &mut d, bf16_out)?;
        check("cuBLAS bf16 out", &d)?;
        measure(dev, group, "cublas bf16 out", shape, || {
            cublas_gemm(dev, blas, shape, a, b, &mut d, bf16_out)
        })
    };
    let t_cublas = match t_cublas() {
        Ok(t) => t,
        Err(why) => return report.fail("bf16 out", &size, "cuBLAS bf16 out", &why),
    };
    for v in GemmBf16OutVariant::ALL {
        let name = v.name();
        let mut case = || -> Result<Timing, String> {
            let sched = schedule(dev, v.schedule_grid(m, n))?;
            let run = |d: &mut DeviceBuffer<bf16>| {
                gemm_bf16_out_bf16_with_schedule(
                    dev,
                    v,
                    sched.as_ref(),
                    m,
                    n,
                    k,
                    1.0,
                    a,
                    b,
                    0.0,
                    None,
                    d,
                )
                .map(|_| ())
                .map_err(|e| e.to_string())
            };
            run(&mut d)?;
            check(name, &d)?;
            measure(dev, group, name, shape, || run(&mut d))
        };
        match case() {
            Ok(t) => report.pass(name, &size, t, "cuBLAS bf16 out", t_cublas),
            Err(why) => report.fail(name, &size, "cuBLAS bf16 out", &why),
        }
    }
}

fn main() {
    let Some(dev) = gpu_or_skip("gemm_bf16") else {
        return;
    };
    let mut c = Criterion::default().configure_from_args();
    // The cluster rungs' persistent grid: how many of their 2-block clusters the driver can keep resident.
    let resident = match dev.max_active_clusters(GemmBf16Variant::ClusterPersistent256.info(), 384)
    {
        Ok(Some(n)) => format!("{n} resident 2-block clusters"),
        Ok(None) => "resident clusters unknown".to_string(),
        Err(e) => format!("resident clusters not counted: {e}"),
    };
    let mut report = Report::new(
        "gemm_bf16",
        "TFLOP/s",
        &dev.name(),
        &format!("median of {REPS} after {WARMUP} warm-up runs, CUDA events; every result checked against cuBLAS first; {resident}"),
    );
    match cublas(&dev) {
        Ok(blas) => {
            for shape in SHAPES {
                if let Err(why) = shape_cases(&dev, &mut c, &blas, shape, &mut report) {
                    let size = format!("{}x{}x{}", shape.0, shape.1, shape.2);
                    report.fail("all rungs", &size, "cuBLAS bf16", &why);
                }
            }
        }
        Err(why) => report.fail("all rungs", "all", "cuBLAS bf16", &why),
    }
    c.final_summary();
    report.finish()
}
