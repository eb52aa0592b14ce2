//! Every kernel of the library through its host API, on whatever [`Device::auto`] picks, at sizes that fit
//! the backend: on a GPU, millions of elements and matrices of several hundred rows (the sizes the emulator
//! suites cannot afford); on the emulator, small ones, so the same checks run in CI. `scripts/gpu/run.sh`
//! runs this binary with `PRISM_BACKEND=gpu` (no fallback) and, with `--emulator`, on the emulator.
//!
//! Inputs are seeded random values, never all zero; outputs are pre-filled with a sentinel; every output
//! element is checked against a CPU reference. Sizes are not tile multiples wherever the kernel accepts that.
//! Floating-point sums use integer-valued `f32` inputs where the order of additions differs between the GPU
//! and the reference (atomics, tile look-back), so they are checked exactly; real-valued inputs are checked
//! against an f64 reference with a tolerance scaled by the sum of magnitudes.

mod e2e_util;

use e2e_util::{Rng, SENTINEL_F32, SENTINEL_I32};
use prism::kernels::reduce::{reduce_sum_f32, reduce_sum_i32, reduce_sum_u32};
use prism::kernels::scan::{scan_f32_with, scan_i32_with, scan_u32_with, ScanKind, ScanScratch};
use prism::kernels::sgemm::{mma_tf32, sgemm, SgemmVariant};
use prism::{Backend, Device, DeviceBuffer};

/// `gpu` on a GPU, `emu` on the emulator.
fn pick<T>(dev: &Device, gpu: T, emu: T) -> T {
    if dev.backend() == Backend::Gpu {
        gpu
    } else {
        emu
    }
}

/// Random integers in [-8, 8] as `f32`, never all zero: their sums are exact in `f32` while they stay below
/// 2^24 in magnitude, whatever the order of additions.
fn small_int_f32s(rng: &mut Rng, n: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..n)
        .map(|_| ((rng.next_u64() % 17) as i64 - 8) as f32)
        .collect();
    if let Some(x) = v.first_mut() {
        *x = 3.0;
    }
    v
}

const ALPHA: f32 = 1.25;
const BETA: f32 = -0.75;

/// `alpha·A·B + beta·C0` in f64 with the magnitude `|alpha|·Σ|a·b| + |beta·c|` of each element.
fn gemm_reference(
    (m, n, k): (usize, usize, usize),
    a: &[f32],
    b: &[f32],
    c0: &[f32],
    alpha: f64,
    beta: f64,
) -> Vec<(f64, f64)> {
    let mut out = vec![(0f64, 0f64); m * n];
    for (i, row) in out.chunks_mut(n.max(1)).enumerate().take(m) {
        for l in 0..k {
            let ail = a[i * k + l] as f64;
            let brow = &b[l * n..l * n + n];
            for (o, bv) in row.iter_mut().zip(brow) {
                let p = ail * *bv as f64;
                o.0 += p;
                o.1 += p.abs();
            }
        }
        for (j, o) in row.iter_mut().enumerate() {
            let cij = c0[i * n + j] as f64;
            *o = (
                alpha * o.0 + beta * cij,
                alpha.abs() * o.1 + (beta * cij).abs(),
            );
        }
    }
    out
}

fn check_gemm(what: &str, n: usize, got: &[f32], want: &[(f64, f64)], rel: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (idx, (g, (w, mag))) in got.iter().zip(want).enumerate() {
        let tol = rel * mag + 1e-5;
        assert!(
            g.is_finite() && (*g as f64 - w).abs() <= tol,
            "{what}: C[{}][{}] = {g}, expected {w} (tolerance {tol:e})",
            idx / n,
            idx % n
        );
    }
}

/// One sgemm variant at `(m, n, k)`: every element of C against the f64 reference.
fn sgemm_case(dev: &Device, v: SgemmVariant, (m, n, k): (usize, usize, usize), seed: u64) {
    let mut rng = Rng::new(seed);
    let a = rng.f32s(m * k);
    let b = rng.f32s(k * n);
    let c0 = rng.f32s(m * n);
    let (da, db) = (dev.htod(&a).unwrap(), dev.htod(&b).unwrap());
    let mut dc = dev.htod(&c0).unwrap();
    sgemm(
        dev, v, m as u32, n as u32, k as u32, ALPHA, &da, &db, BETA, &mut dc,
    )
    .unwrap_or_else(|e| panic!("{v} on {m}x{n}x{k}: {e}"));
    let got = dev.dtoh(&dc).unwrap();
    let want = gemm_reference((m, n, k), &a, &b, &c0, ALPHA as f64, BETA as f64);
    // f32 accumulation over k products: a few ulps per addition at worst.
    let rel = 2e-7 * (k as f64 + 8.0);
    check_gemm(&format!("{v} {m}x{n}x{k}"), n, &got, &want, rel);
}

#[test]
fn sgemm_every_variant() {
    let dev = e2e_util::device();
    for (i, v) in SgemmVariant::ALL.into_iter().enumerate() {
        let seed = 1000 + i as u64;
        match v.required_multiple() {
            // Any sizes: none of these is a multiple of anything.
            None => sgemm_case(&dev, v, pick(&dev, (1000, 1030, 517), (37, 45, 29)), seed),
            Some((bm, bn, bk)) => {
                let (bm, bn, bk) = (bm as usize, bn as usize, bk as usize);
                // Several tiles in each direction, and m ≠ n so row/column mix-ups show.
                let mnk = pick(&dev, (3 * bm, 5 * bn, 17 * bk), (bm, 2 * bn, 2 * bk));
                sgemm_case(&dev, v, mnk, seed);
            }
        }
    }
}

#[test]
fn mma_tf32_any_size() {
    let dev = e2e_util::device();
    let (m, n, k) = pick(&dev, (517, 1003, 300), (33, 17, 20));
    let mut rng = Rng::new(77);
    let a = rng.f32s(m * k);
    let b = rng.f32s(k * n);
    let (da, db) = (dev.htod(&a).unwrap(), dev.htod(&b).unwrap());
    let mut dc = dev.htod(&vec![SENTINEL_F32; m * n]).unwrap();
    mma_tf32(&dev, m as u32, n as u32, k as u32, &da, &db, &mut dc).unwrap();
    let got = dev.dtoh(&dc).unwrap();
    let want = gemm_reference((m, n, k), &a, &b, &vec![0.0; m * n], 1.0, 0.0);
    // TF32 keeps 10 mantissa bits: each product is off by at most ~2^-10 of its magnitude.
    check_gemm(&format!("mma_tf32 {m}x{n}x{k}"), n, &got, &want, 2e-3);
}

/// Sizes for reductions and scans: the empty and tiny cases, both item-count paths of the reduction, and a
/// large size that is no multiple of any tile.
fn lengths(dev: &Device) -> Vec<usize> {
    pick(
        dev,
        vec![1, 1000, (1 << 20) + 1, (1 << 24) + 12_345],
        vec![1, 1000, 5_003],
    )
}

#[test]
fn reduce_sums() {
    let dev = e2e_util::device();
    for (t, n) in lengths(&dev).into_iter().enumerate() {
        let mut rng = Rng::new(500 + t as u64);
        let xu: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
        let mut out = dev.htod(&[0xDEAD_BEEFu32]).unwrap();
        reduce_sum_u32(&dev, &dev.htod(&xu).unwrap(), &mut out).unwrap();
        let want = xu.iter().fold(0u32, |s, v| s.wrapping_add(*v));
        assert_eq!(dev.dtoh(&out).unwrap()[0], want, "reduce u32, n = {n}");

        let xi = rng.i32s(n);
        let mut out = dev.htod(&[SENTINEL_I32]).unwrap();
        reduce_sum_i32(&dev, &dev.htod(&xi).unwrap(), &mut out).unwrap();
        let want = xi.iter().fold(0i32, |s, v| s.wrapping_add(*v));
        assert_eq!(dev.dtoh(&out).unwrap()[0], want, "reduce i32, n = {n}");

        // Integer-valued: exact whatever order the blocks' atomics land in.
        let xf = small_int_f32s(&mut rng, n);
        let mut out = dev.htod(&[SENTINEL_F32]).unwrap();
        reduce_sum_f32(&dev, &dev.htod(&xf).unwrap(), &mut out).unwrap();
        let want: f64 = xf.iter().map(|v| *v as f64).sum();
        assert_eq!(
            dev.dtoh(&out).unwrap()[0] as f64,
            want,
            "reduce f32 (integer-valued), n = {n}"
        );

        // Real-valued: within the f32 rounding of a sum of n terms.
        let xr = rng.f32s(n);
        let mut out = dev.htod(&[SENTINEL_F32]).unwrap();
        reduce_sum_f32(&dev, &dev.htod(&xr).unwrap(), &mut out).unwrap();
        let want: f64 = xr.iter().map(|v| *v as f64).sum();
        let mag: f64 = xr.iter().map(|v| v.abs() as f64).sum();
        let got = dev.dtoh(&out).unwrap()[0] as f64;
        assert!(
            (got - want).abs() <= 1e-6 * mag + 1e-5,
            "reduce f32, n = {n}: {got}, expected {want}"
        );
    }
}

type ScanFn<T> = fn(
    &Device,
    &DeviceBuffer<T>,
    &mut DeviceBuffer<T>,
    ScanKind,
    u32,
    &mut ScanScratch,
) -> Result<(), prism::RuntimeError>;

/// Scans `x` both ways with every supported items-per-thread, comparing every element with `add`'s prefix.
fn scan_case<T>(dev: &Device, what: &str, x: &[T], sentinel: T, scan: ScanFn<T>, add: fn(T, T) -> T)
where
    T: prism::DeviceCopy + PartialEq + std::fmt::Debug + Default,
{
    let n = x.len();
    let mut inc = Vec::with_capacity(n);
    let mut exc = Vec::with_capacity(n);
    let mut s = T::default();
    for v in x {
        exc.push(s);
        s = add(s, *v);
        inc.push(s);
    }
    let input = dev.htod(x).unwrap();
    let mut scratch = ScanScratch::new(dev, n).unwrap();
    for items in [4u32, 8, 16] {
        for (kind, want) in [(ScanKind::Inclusive, &inc), (ScanKind::Exclusive, &exc)] {
            let mut out = dev.htod(&vec![sentinel; n]).unwrap();
            scan(dev, &input, &mut out, kind, items, &mut scratch).unwrap_or_else(|e| {
                panic!("{what} {kind:?}, {items} items, n = {n}: {e}");
            });
            let got = dev.dtoh(&out).unwrap();
            if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
                panic!(
                    "{what} {kind:?}, {items} items per thread, n = {n}: out[{i}] = {:?}, expected {:?}",
                    got[i], want[i]
                );
            }
        }
    }
}

#[test]
fn scans_every_element() {
    let dev = e2e_util::device();
    for (t, n) in lengths(&dev).into_iter().enumerate() {
        let mut rng = Rng::new(900 + t as u64);
        let xu: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
        scan_case(&dev, "scan u32", &xu, 0xDEAD_BEEF, scan_u32_with, |a, b| {
            a.wrapping_add(b)
        });
        let xi = rng.i32s(n);
        scan_case(
            &dev,
            "scan i32",
            &xi,
            SENTINEL_I32,
            scan_i32_with,
            |a, b| a.wrapping_add(b),
        );
        // Integer-valued f32: every prefix is exact, so the look-back's order of additions cannot matter.
        let xf = small_int_f32s(&mut rng, n);
        scan_case(
            &dev,
            "scan f32",
            &xf,
            SENTINEL_F32,
            scan_f32_with,
            |a, b| a + b,
        );
    }
}
