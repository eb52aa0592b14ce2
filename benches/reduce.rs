//! Device-wide sum (`prism_kernels::reduce`) against a device-to-device copy of the same `n` elements, in the
//! same run on the same device: n = 2^20, 2^22, .., 2^28 `u32` and `f32`. Each result is checked against a CPU
//! reference before it is timed. Timing: CUDA events after warm-up (criterion's `iter_custom`) plus a
//! median-of-N table at the end. The reduction reads `n` elements (GB/s = 4n / t); the copy reads and writes
//! them (GB/s = 8n / t), i.e. both columns are DRAM bandwidth and `ratio` compares them. Every reduction also
//! launches its one-thread zeroing kernel.
//!
//! Without a GPU it prints `no GPU: reduce benchmarks skipped (reason)` and exits 0.

mod common;

use common::{gbps, gpu_or_skip, time_dtod, time_events, time_median, Report, Rng, Timing};
use criterion::{BenchmarkId, Criterion, Throughput};
use prism::kernels::reduce::{reduce_sum_f32, reduce_sum_u32};
use prism::{Device, DeviceBuffer};
use std::time::Duration;

const LOG_SIZES: [u32; 5] = [20, 22, 24, 26, 28];
const WARMUP: usize = 3;
const REPS: usize = 20;

fn check_u32(x: &[u32], got: u32) -> Result<(), String> {
    let want = x.iter().fold(0u32, |s, v| s.wrapping_add(*v));
    if got == want {
        Ok(())
    } else {
        Err(format!("reduce_u32 = {got}, want {want}"))
    }
}

fn check_f32(x: &[f32], got: f32) -> Result<(), String> {
    let want: f64 = x.iter().map(|v| *v as f64).sum();
    let mag: f64 = x.iter().map(|v| v.abs() as f64).sum();
    if ((got as f64) - want).abs() <= 1e-5 * mag + 1e-3 {
        Ok(())
    } else {
        Err(format!("reduce_f32 = {got}, want {want}"))
    }
}

type ReduceFn<T> =
    fn(&Device, &DeviceBuffer<T>, &mut DeviceBuffer<T>) -> Result<(), prism::RuntimeError>;

#[allow(clippy::too_many_arguments)]
fn case<T: prism::DeviceCopy>(
    c: &mut Criterion,
    dev: &Device,
    x: &[T],
    reduce: ReduceFn<T>,
    check: fn(&[T], T) -> Result<(), String>,
) -> Result<(Timing, Timing), String> {
    let n = x.len();
    let e = |e: prism::RuntimeError| e.to_string();
    let input = dev.htod(x).map_err(e)?;
    let mut out = dev.alloc_zeros::<T>(1).map_err(e)?;
    let mut copy = dev.alloc_zeros::<T>(n).map_err(e)?;
    reduce(dev, &input, &mut out).map_err(e)?;
    check(x, dev.dtoh(&out).map_err(e)?[0])?;
    let mut run = || reduce(dev, &input, &mut out).map_err(e);
    let t_red = time_median(dev, WARMUP, REPS, &mut run)?;
    let t_copy = time_dtod(dev, &input, &mut copy, WARMUP, REPS)?;
    let bytes = std::mem::size_of_val(x) as f64;
    let mut g = c.benchmark_group(format!("reduce_{}", std::any::type_name::<T>()));
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function(BenchmarkId::from_parameter(n), |b| {
        b.iter_custom(|iters| {
            let t = time_events(dev, 0, iters as usize, &mut run).unwrap_or_default();
            Duration::from_secs_f64(t.iter().sum())
        })
    });
    g.finish();
    Ok((
        Timing {
            secs: t_red,
            rate: gbps(bytes, t_red),
        },
        Timing {
            secs: t_copy,
            rate: gbps(2.0 * bytes, t_copy),
        },
    ))
}

fn main() {
    let Some(dev) = gpu_or_skip("reduce") else {
        return;
    };
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .configure_from_args();
    let mut report = Report::new(
        "reduce",
        "GB/s",
        &dev.name(),
        &format!("median of {REPS} after {WARMUP} warm-up runs, CUDA events; reduce GB/s counts 4n bytes read, copy 8n read+written"),
    );
    for log in LOG_SIZES {
        let n = 1usize << log;
        let size = format!("2^{log}");
        let mut rng = Rng::new(log as u64);
        let xu = rng.u32s(n);
        match case(&mut c, &dev, &xu, reduce_sum_u32, check_u32) {
            Ok((ours, copy)) => report.pass("reduce sum u32", &size, ours, "dtod copy", copy),
            Err(err) => report.fail("reduce sum u32", &size, "dtod copy", &err),
        }
        drop(xu);
        let xf = rng.f32s(n);
        match case(&mut c, &dev, &xf, reduce_sum_f32, check_f32) {
            Ok((ours, copy)) => report.pass("reduce sum f32", &size, ours, "dtod copy", copy),
            Err(err) => report.fail("reduce sum f32", &size, "dtod copy", &err),
        }
    }
    c.final_summary();
    report.finish()
}
