//! Single-pass decoupled look-back scan (`prism_kernels::scan`) against a device-to-device copy of the same
//! bytes, in the same run on the same device: for n = 2^20, 2^22, .., 2^28 `u32` and `f32` elements,
//! inclusive scan with 16 items per thread (2048 per tile). Each result is checked against a CPU reference
//! (every element for u32, a sample for f32) before it is timed. Timing: CUDA events around each call after
//! warm-up (criterion's `iter_custom`), plus a median-of-N per case for the table printed at the end:
//! GB/s counts one read and one write of `n` elements; `ratio` = scan GB/s / copy GB/s (target ≥ 0.90 at 2^28).
//! Every scan also runs its `scan_init` (tile status words + tile counter, 8 bytes per 2048 elements).
//!
//! Without a GPU it prints `no GPU: scan benchmarks skipped (reason)` and exits 0.

mod common;

use common::{gbps, gpu_or_skip, time_dtod, time_events, time_median, Report, Rng, Timing};
use criterion::{BenchmarkId, Criterion, Throughput};
use prism::kernels::scan::{scan_f32_with, scan_u32_with, ScanKind, ScanScratch};
use prism::{Device, DeviceBuffer};
use std::time::Duration;

const LOG_SIZES: [u32; 5] = [20, 22, 24, 26, 28];
const ITEMS: u32 = 16;
const WARMUP: usize = 3;
const REPS: usize = 20;

fn check_u32(x: &[u32], got: &[u32]) -> Result<(), String> {
    let mut s = 0u32;
    for (i, (v, g)) in x.iter().zip(got).enumerate() {
        s = s.wrapping_add(*v);
        if *g != s {
            return Err(format!("scan_u32[{i}] = {g}, want {s}"));
        }
    }
    Ok(())
}

fn check_f32(x: &[f32], got: &[f32]) -> Result<(), String> {
    let (mut s, mut m) = (0f64, 0f64);
    for (i, (v, g)) in x.iter().zip(got).enumerate() {
        s += *v as f64;
        m += v.abs() as f64;
        if (i % 997 == 0 || i + 1 == x.len()) && ((*g as f64) - s).abs() > 1e-4 * m + 1e-3 {
            return Err(format!("scan_f32[{i}] = {g}, want {s}"));
        }
    }
    Ok(())
}

type ScanFn<T> = fn(
    &Device,
    &DeviceBuffer<T>,
    &mut DeviceBuffer<T>,
    ScanKind,
    u32,
    &mut ScanScratch,
) -> Result<(), prism::RuntimeError>;

#[allow(clippy::too_many_arguments)]
fn case<T: prism::DeviceCopy>(
    c: &mut Criterion,
    dev: &Device,
    x: &[T],
    scan: ScanFn<T>,
    check: fn(&[T], &[T]) -> Result<(), String>,
) -> Result<(Timing, Timing), String> {
    let n = x.len();
    let e = |e: prism::RuntimeError| e.to_string();
    let input = dev.htod(x).map_err(e)?;
    let mut out = dev.alloc_zeros::<T>(n).map_err(e)?;
    let mut copy = dev.alloc_zeros::<T>(n).map_err(e)?;
    let mut scratch = ScanScratch::new(dev, n).map_err(e)?;
    scan(
        dev,
        &input,
        &mut out,
        ScanKind::Inclusive,
        ITEMS,
        &mut scratch,
    )
    .map_err(e)?;
    check(x, &dev.dtoh(&out).map_err(e)?)?;
    let mut run = || {
        scan(
            dev,
            &input,
            &mut out,
            ScanKind::Inclusive,
            ITEMS,
            &mut scratch,
        )
        .map_err(e)
    };
    let t_scan = time_median(dev, WARMUP, REPS, &mut run)?;
    let t_copy = time_dtod(dev, &input, &mut copy, WARMUP, REPS)?;
    let bytes = (2 * n * std::mem::size_of::<T>()) as f64;
    let mut g = c.benchmark_group(format!("scan_{}", std::any::type_name::<T>()));
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
            secs: t_scan,
            rate: gbps(bytes, t_scan),
        },
        Timing {
            secs: t_copy,
            rate: gbps(bytes, t_copy),
        },
    ))
}

fn main() {
    let Some(dev) = gpu_or_skip("scan") else {
        return;
    };
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .configure_from_args();
    let mut report = Report::new(
        "scan",
        "GB/s",
        &dev.name(),
        &format!("median of {REPS} after {WARMUP} warm-up runs, CUDA events; GB/s counts n elements read and n written, for both"),
    );
    for log in LOG_SIZES {
        let n = 1usize << log;
        let size = format!("2^{log}");
        let mut rng = Rng::new(log as u64);
        let xu = rng.u32s(n);
        match case(&mut c, &dev, &xu, scan_u32_with, check_u32) {
            Ok((ours, copy)) => report.pass("scan inclusive u32", &size, ours, "dtod copy", copy),
            Err(err) => report.fail("scan inclusive u32", &size, "dtod copy", &err),
        }
        drop(xu);
        let xf = rng.f32s(n);
        match case(&mut c, &dev, &xf, scan_f32_with, check_f32) {
            Ok((ours, copy)) => report.pass("scan inclusive f32", &size, ours, "dtod copy", copy),
            Err(err) => report.fail("scan inclusive f32", &size, "dtod copy", &err),
        }
    }
    c.final_summary();
    report.finish()
}
