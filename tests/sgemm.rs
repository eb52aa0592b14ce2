//! The sgemm ladder (`prism_kernels::sgemm`) on the PTX emulator (race, barrier and bounds checks on, the
//! default), through the host API, against an f64 CPU reference. Inputs are seeded random values in
//! [-1, 1) without zeros; `C` is pre-filled with random values and `beta != 0`, so every element of `C` must
//! be read and written exactly right. A launch that faults on the emulator returns `Err`, so `unwrap`ing the
//! report asserts that no fault was detected.

mod e2e_util;

use e2e_util::Rng;
use prism::kernels::sgemm::{mma_tf32, sgemm, SgemmError, SgemmVariant};
use prism::{Backend, Device};

const ALPHA: f32 = 1.25;
const BETA: f32 = -0.75;

/// `alpha·A·B + beta·C0` in f64 and the magnitude `|alpha|·Σ|a||b| + |beta·c|` for the tolerance.
fn reference(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c0: &[f32]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let (s, mag) = e2e_util::dot_f64(k, |l| a[i * k + l] as f64, |l| b[l * n + j] as f64);
            let cij = c0[i * n + j] as f64;
            out.push((
                ALPHA as f64 * s + BETA as f64 * cij,
                (ALPHA as f64).abs() * mag + (BETA as f64 * cij).abs(),
            ));
        }
    }
    out
}

/// Runs `variant` on random `m × n × k` inputs and checks every element of `C` (relative tolerance `rel`
/// of the magnitude: f32 accumulation for the CUDA-core variants, TF32 for the tensor-core one).
fn run_and_check(
    dev: &Device,
    variant: SgemmVariant,
    (m, n, k): (usize, usize, usize),
    seed: u64,
) -> prism::runtime::emu::Counters {
    let mut rng = Rng::new(seed);
    let a = rng.f32s(m * k);
    let b = rng.f32s(k * n);
    let c0 = rng.f32s(m * n);
    let (da, db) = (dev.htod(&a).unwrap(), dev.htod(&b).unwrap());
    let mut dc = dev.htod(&c0).unwrap();
    let report = sgemm(
        dev, variant, m as u32, n as u32, k as u32, ALPHA, &da, &db, BETA, &mut dc,
    )
    .unwrap_or_else(|e| panic!("{variant} on {m}x{n}x{k}: {e}"));
    assert_eq!(report.backend, Backend::Emulator);
    let counters = report.emu.expect("emulator counters").counters;
    // One block per tile of C: the host API chose the grid from the instance.
    let dims = variant.launch_dims(m as u32, n as u32);
    if m * n > 0 {
        assert_eq!(counters.blocks, dims.grid as u64, "{variant}: blocks run");
    }
    // Variants 3-6 stage tiles in shared memory; 1-2 never touch it.
    let staged = !matches!(variant, SgemmVariant::Naive | SgemmVariant::Coalesced);
    assert_eq!(
        counters.shared_accesses > 0,
        staged && k > 0,
        "{variant}: shared accesses {}",
        counters.shared_accesses
    );
    let c = dev.dtoh(&dc).unwrap();
    for (idx, ((want, mag), got)) in reference(m, n, k, &a, &b, &c0)
        .into_iter()
        .zip(&c)
        .enumerate()
    {
        let tol = 2e-6 * (k as f64 + 4.0) * mag + 1e-6;
        assert!(
            (*got as f64 - want).abs() <= tol,
            "{variant} {m}x{n}x{k}: C[{}][{}] = {got}, expected {want} (tolerance {tol})",
            idx / n,
            idx % n
        );
    }
    counters
}

/// Variant 2's point: consecutive threads on consecutive columns touch far fewer 32-byte sectors of global
/// memory than variant 1's consecutive rows (same problem, same results).
#[test]
fn coalescing_reduces_global_sectors() {
    let dev = Device::emulator();
    let naive = run_and_check(&dev, SgemmVariant::Naive, (64, 64, 32), 30);
    let coalesced = run_and_check(&dev, SgemmVariant::Coalesced, (64, 64, 32), 30);
    assert!(
        naive.global_sectors > 2 * coalesced.global_sectors,
        "naive {} sectors vs coalesced {}",
        naive.global_sectors,
        coalesced.global_sectors
    );
}

/// Sizes that are not multiples of any tile, plus degenerate ones (k = 0: C = beta·C).
const AWKWARD: [(usize, usize, usize); 5] =
    [(33, 17, 9), (1, 1, 1), (5, 40, 33), (40, 3, 70), (7, 9, 0)];

#[test]
fn naive_any_sizes() {
    let dev = Device::emulator();
    run_and_check(&dev, SgemmVariant::Naive, (64, 32, 48), 11);
    for (i, &s) in AWKWARD.iter().enumerate() {
        run_and_check(&dev, SgemmVariant::Naive, s, 100 + i as u64);
    }
}

#[test]
fn coalesced_any_sizes() {
    let dev = Device::emulator();
    run_and_check(&dev, SgemmVariant::Coalesced, (64, 32, 48), 12);
    for (i, &s) in AWKWARD.iter().enumerate() {
        run_and_check(&dev, SgemmVariant::Coalesced, s, 200 + i as u64);
    }
}

#[test]
fn smem_any_sizes() {
    let dev = Device::emulator();
    run_and_check(&dev, SgemmVariant::SharedMem, (64, 32, 64), 13);
    for (i, &s) in AWKWARD.iter().enumerate() {
        run_and_check(&dev, SgemmVariant::SharedMem, s, 300 + i as u64);
    }
}

#[test]
fn blocktile_2d_tile_multiples() {
    let dev = Device::emulator();
    // Two blocks along m (64 tile) and along n, several k steps; k = 0 leaves beta·C.
    run_and_check(&dev, SgemmVariant::BlockTile2d64, (128, 64, 24), 14);
    run_and_check(&dev, SgemmVariant::BlockTile2d64, (64, 128, 0), 15);
    run_and_check(&dev, SgemmVariant::BlockTile2d128, (128, 128, 16), 16);
}

#[test]
fn vectorized_tile_multiples() {
    let dev = Device::emulator();
    run_and_check(&dev, SgemmVariant::Vectorized64, (128, 64, 24), 17);
    run_and_check(&dev, SgemmVariant::Vectorized64, (64, 128, 8), 18);
    run_and_check(&dev, SgemmVariant::Vectorized128, (128, 128, 16), 19);
}

#[test]
fn warptile_tile_multiples() {
    let dev = Device::emulator();
    run_and_check(&dev, SgemmVariant::Warptile64, (128, 64, 32), 20);
    run_and_check(&dev, SgemmVariant::Warptile64, (64, 128, 16), 21);
}

/// A test of its own: the largest module (the emulator's PTX parse dominates its time), so it runs in
/// parallel with the others.
#[test]
fn warptile_128_tile_multiple() {
    let dev = Device::emulator();
    run_and_check(&dev, SgemmVariant::Warptile128, (128, 128, 16), 22);
}

/// Tiled variants refuse sizes that are not tile multiples before launching: an error value, `C` untouched.
#[test]
fn tiled_variants_refuse_awkward_sizes() {
    let dev = Device::emulator();
    let mut rng = Rng::new(23);
    for v in SgemmVariant::ALL {
        let Some(tile) = v.required_multiple() else {
            continue;
        };
        for (m, n, k) in [
            (33u32, 17u32, 9u32),
            (tile.0, tile.1, tile.2 + 4),
            (tile.0 + 1, tile.1, tile.2),
            (tile.0, tile.1 / 2, tile.2),
        ] {
            let a = dev.htod(&rng.f32s((m * k) as usize)).unwrap();
            let b = dev.htod(&rng.f32s((k * n) as usize)).unwrap();
            let c0 = rng.f32s((m * n) as usize);
            let mut c = dev.htod(&c0).unwrap();
            match sgemm(&dev, v, m, n, k, ALPHA, &a, &b, BETA, &mut c) {
                Err(SgemmError::NotTileMultiple {
                    variant,
                    mnk,
                    tile: t,
                }) => {
                    assert_eq!((variant, mnk, t), (v, (m, n, k), tile));
                }
                other => panic!("{v} on {m}x{n}x{k}: expected NotTileMultiple, got {other:?}"),
            }
            assert_eq!(dev.dtoh(&c).unwrap(), c0, "{v}: C must be untouched");
        }
    }
}

/// Every variant validates buffer lengths against m, n, k; m = 0 or n = 0 launches nothing.
#[test]
fn buffer_lengths_are_validated() {
    let dev = Device::emulator();
    let (m, n, k) = (64u32, 128u32, 16u32);
    let a = dev.htod(&vec![1.0f32; (m * k) as usize]).unwrap();
    let b = dev.htod(&vec![1.0f32; (k * n) as usize]).unwrap();
    let short = dev.htod(&[1.0f32; 5]).unwrap();
    let c0 = vec![3.0f32; (m * n) as usize];
    for v in SgemmVariant::ALL {
        let mut c = dev.htod(&c0).unwrap();
        let e = sgemm(&dev, v, m, n, k, 1.0, &short, &b, 1.0, &mut c).unwrap_err();
        assert!(
            matches!(
                e,
                SgemmError::BufferLength {
                    buffer: "a",
                    expected: 1024,
                    got: 5
                }
            ),
            "{v}: {e}"
        );
        let e = sgemm(&dev, v, m, n, k, 1.0, &a, &short, 1.0, &mut c).unwrap_err();
        assert!(
            matches!(e, SgemmError::BufferLength { buffer: "b", .. }),
            "{v}: {e}"
        );
        let mut c_short = dev.htod(&[0.0f32; 7]).unwrap();
        let e = sgemm(&dev, v, m, n, k, 1.0, &a, &b, 1.0, &mut c_short).unwrap_err();
        assert!(
            matches!(e, SgemmError::BufferLength { buffer: "c", .. }),
            "{v}: {e}"
        );
        assert!(e.to_string().contains("buffer `c` has 7 elements"), "{e}");
        assert_eq!(dev.dtoh(&c).unwrap(), c0, "{v}: C must be untouched");
        // Empty result: nothing to launch.
        let mut empty = dev.alloc_zeros::<f32>(0).unwrap();
        let r = sgemm(
            &dev,
            v,
            0,
            n,
            k,
            1.0,
            &dev.alloc_zeros(0).unwrap(),
            &b,
            1.0,
            &mut empty,
        )
        .unwrap();
        assert!(r.emu.is_none(), "{v}: m = 0 must not launch");
    }
    // Too large for u32 indexing: refused before any length comparison could pass.
    let mut c = dev.htod(&[0.0f32; 1]).unwrap();
    let e = sgemm(
        &dev,
        SgemmVariant::Naive,
        1 << 16,
        1 << 16,
        1,
        1.0,
        &a,
        &b,
        1.0,
        &mut c,
    )
    .unwrap_err();
    assert!(matches!(e, SgemmError::TooLarge { .. }), "{e}");
}

/// The Fig. 6 TF32 kernel through its host API: C = A·B (TF32 inputs: relative tolerance 4e-3).
#[test]
fn fig6_mma_tf32_host_api() {
    let dev = Device::emulator();
    let mut rng = Rng::new(24);
    for &(m, n, k) in &[(32usize, 16usize, 24usize), (20, 12, 13)] {
        let a = rng.f32s(m * k);
        let b = rng.f32s(k * n);
        let (da, db) = (dev.htod(&a).unwrap(), dev.htod(&b).unwrap());
        let mut dc = dev.htod(&rng.f32s(m * n)).unwrap();
        mma_tf32(&dev, m as u32, n as u32, k as u32, &da, &db, &mut dc).unwrap();
        let c = dev.dtoh(&dc).unwrap();
        for i in 0..m {
            for j in 0..n {
                let (s, mag) =
                    e2e_util::dot_f64(k, |l| a[i * k + l] as f64, |l| b[l * n + j] as f64);
                let got = c[i * n + j] as f64;
                assert!(
                    (got - s).abs() <= 4e-3 * mag + 1e-5,
                    "C[{i}][{j}] = {got}, expected {s}"
                );
            }
        }
        let e = mma_tf32(&dev, m as u32, n as u32, k as u32 + 1, &da, &db, &mut dc).unwrap_err();
        assert!(
            matches!(e, SgemmError::BufferLength { buffer: "a", .. }),
            "{e}"
        );
    }
}

/// The staged variants under seeded random warp schedules (race detection on): a missing barrier between
/// staging and computing, or between computing and the next staging, shows up as a race fault or a wrong
/// element under some interleaving.
#[test]
fn staged_variants_under_random_schedules() {
    use prism::runtime::emu::{EmuConfig, Schedule};
    for seed in [1u64, 2, 3] {
        let dev = Device::emulator_with(EmuConfig {
            schedule: Schedule::Random { seed },
            ..EmuConfig::default()
        });
        run_and_check(&dev, SgemmVariant::SharedMem, (40, 36, 70), 40 + seed);
        run_and_check(&dev, SgemmVariant::Vectorized64, (64, 64, 24), 50 + seed);
    }
}

/// BLAS semantics for every variant: with `beta = 0`, `C` is not read (here it holds NaN, which a read would
/// spread into the result): `C` becomes `alpha·A·B` exactly as the f64 reference says.
#[test]
fn beta_zero_never_reads_c() {
    let dev = Device::emulator();
    let mut rng = Rng::new(41);
    for v in SgemmVariant::ALL {
        let (m, n, k) = v.required_multiple().unwrap_or((33, 17, 9));
        let (m, n, k) = (m as usize, n as usize, k as usize);
        let ha = rng.f32s(m * k);
        let hb = rng.f32s(k * n);
        let a = dev.htod(&ha).unwrap();
        let b = dev.htod(&hb).unwrap();
        let mut c = dev.htod(&vec![f32::NAN; m * n]).unwrap();
        sgemm(
            &dev, v, m as u32, n as u32, k as u32, ALPHA, &a, &b, 0.0, &mut c,
        )
        .unwrap_or_else(|e| panic!("{v}: {e}"));
        let got = dev.dtoh(&c).unwrap();
        let rel = 1e-5;
        for i in 0..m {
            for j in 0..n {
                let (s, mag) =
                    e2e_util::dot_f64(k, |l| ha[i * k + l] as f64, |l| hb[l * n + j] as f64);
                let want = ALPHA as f64 * s;
                let err = (got[i * n + j] as f64 - want).abs();
                assert!(
                    err <= rel * ALPHA.abs() as f64 * mag + 1e-6,
                    "{v} ({i}, {j}): {} vs {want}",
                    got[i * n + j]
                );
            }
        }
    }
}
