//! Rung 7 of the bf16 GEMM ladder: `D = alpha · A · Bᵀ + beta · C` with a bf16 `D` written through shared
//! memory and TMA stores (`prism_kernels::gemm::gemm_bf16_out_bf16`), on the emulator (or the GPU with
//! `PRISM_BACKEND=gpu`), against an f64 CPU reference: random bf16 inputs in [-1, 1) (never zeros), a random
//! `C` with `beta ≠ 0` or none with `beta = 0`, every element of `D` checked, at a tile multiple with several
//! tiles and at ragged sizes, and with fewer persistent blocks than tiles (TMA clips the stored boxes). Bad sizes are error values.

mod e2e_util;

use e2e_util::Rng;
use prism::kernels::gemm::{gemm_bf16_out_bf16, gemm_bf16_tma_store, GemmError};
use prism::runtime::half::bf16;
use prism::runtime::{LaunchDims, TensorMap, TensorMapMut, TensorSwizzle};

fn bf16s(rng: &mut Rng, n: usize) -> Vec<bf16> {
    (0..n)
        .map(|_| loop {
            let v = bf16::from_f32(rng.f32());
            if v.to_f32() != 0.0 {
                break v;
            }
        })
        .collect()
}

/// Runs `D = alpha·A·Bᵀ + beta·C` (with `C` when `beta ≠ 0`) on a `D` pre-filled with garbage and checks every
/// element against the f64 product rounded once to bf16: within one bf16 step of the exact value.
fn run(m: usize, n: usize, k: usize, alpha: f32, beta: f32, seed: u64, blocks: Option<u32>) {
    let dev = e2e_util::device();
    let mut rng = Rng::new(seed);
    let a = bf16s(&mut rng, m * k);
    let b = bf16s(&mut rng, n * k);
    let c = bf16s(&mut rng, m * n);
    let (da, db, dc) = (
        dev.htod(&a).unwrap(),
        dev.htod(&b).unwrap(),
        dev.htod(&c).unwrap(),
    );
    let garbage = vec![bf16::from_f32(1234.0); m * n];
    let mut dd = dev.htod(&garbage).unwrap();
    match blocks {
        None => {
            let c_arg = (beta != 0.0).then_some(&dc);
            gemm_bf16_out_bf16(
                &dev, m as u32, n as u32, k as u32, alpha, &da, &db, beta, c_arg, &mut dd,
            )
            .unwrap_or_else(|e| panic!("{m}×{n}×{k}: {e}"));
        }
        Some(blocks) => {
            // Fewer persistent blocks than tiles: each block runs several tiles through one ring and
            // rewrites its epilogue boxes once their previous TMA stores have read them.
            let ma = TensorMap::row_major_2d(&da, m as u64, k as u64, 128, 64, TensorSwizzle::B128)
                .unwrap();
            let mb = TensorMap::row_major_2d(&db, n as u64, k as u64, 256, 64, TensorSwizzle::B128)
                .unwrap();
            let mut md = TensorMapMut::tiled(
                &mut dd,
                [n as u64, m as u64],
                &[n as u64 * 2],
                [64, 64],
                TensorSwizzle::B128,
            )
            .unwrap();
            gemm_bf16_tma_store::<256, 4, 8>::launch(
                &dev,
                LaunchDims::new(blocks, 384),
                &ma,
                &mb,
                m as u32,
                n as u32,
                k as u32,
                alpha,
                beta,
                &dc,
                &mut md,
            )
            .unwrap();
        }
    }
    let d = dev.dtoh(&dd).unwrap();
    let mut bad = Vec::new();
    for i in 0..m {
        for j in 0..n {
            let (s, mag) = e2e_util::dot_f64(
                k,
                |x| a[i * k + x].to_f32() as f64,
                |x| b[j * k + x].to_f32() as f64,
            );
            let cij = c[i * n + j].to_f32() as f64;
            let want = alpha as f64 * s + beta as f64 * cij;
            // bf16 keeps 8 significant bits: the result is within one step (|want| / 128) of the exact
            // value, plus the f32 accumulation's rounding.
            let tol = want.abs() / 128.0 + 1e-5 * (alpha.abs() as f64 * mag + cij.abs()) + 1e-6;
            let got = d[i * n + j].to_f32() as f64;
            let err = (got - want).abs();
            if err.is_nan() || err > tol {
                bad.push((i, j, got, want));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{m}×{n}×{k} (alpha {alpha}, beta {beta}): {} wrong elements of {}, first {:?}",
        bad.len(),
        m * n,
        &bad[..bad.len().min(4)]
    );
}

#[test]
fn bf16_output_at_tile_multiples() {
    // 3 × 2 tiles of 128 × 256 and 3 k-tiles.
    run(384, 512, 192, 1.5, -0.5, 11, None);
}

#[test]
fn bf16_output_at_ragged_sizes_without_c() {
    run(200, 328, 136, 0.75, 0.0, 12, None);
}

#[test]
fn bf16_output_at_ragged_sizes_with_c() {
    run(72, 264, 40, -1.0, 2.0, 13, None);
}

#[test]
fn persistent_blocks_store_several_tiles() {
    // 3 × 2 ragged tiles over 2 blocks.
    run(300, 264, 72, 1.0, 0.5, 14, Some(2));
}

#[test]
fn bad_bf16_output_arguments_are_errors() {
    let dev = e2e_util::device();
    let a = dev.alloc_zeros::<bf16>(64 * 64).unwrap();
    let b = dev.alloc_zeros::<bf16>(64 * 64).unwrap();
    let mut d = dev.alloc_zeros::<bf16>(64 * 64).unwrap();
    let e = gemm_bf16_out_bf16(&dev, 64, 64, 64, 1.0, &a, &b, 0.5, None, &mut d).unwrap_err();
    assert!(matches!(e, GemmError::NoC(_)), "{e}");
    let mut d2 = dev.alloc_zeros::<bf16>(64 * 60).unwrap();
    let b2 = dev.alloc_zeros::<bf16>(60 * 64).unwrap();
    let e = gemm_bf16_out_bf16(&dev, 64, 64, 60, 1.0, &b2, &b2, 0.0, None, &mut d).unwrap_err();
    assert!(matches!(e, GemmError::K(60)), "{e}");
    let e = gemm_bf16_out_bf16(&dev, 64, 60, 64, 1.0, &a, &b2, 0.0, None, &mut d2).unwrap_err();
    assert!(matches!(e, GemmError::N(60)), "{e}");
    let e = gemm_bf16_out_bf16(&dev, 64, 64, 64, 1.0, &a, &b, 1.0, Some(&b2), &mut d).unwrap_err();
    assert!(matches!(e, GemmError::Length { operand: "c", .. }), "{e}");
}

#[test]
fn rung_7_fits_the_shared_memory_of_an_sm() {
    let c = gemm_bf16_tma_store::<256, 4, 8>::INFO.contract();
    println!(
        "gemm_bf16_tma_store_256_4_8: {} bytes of shared memory",
        c.smem_bytes()
    );
    // The 4-slot ring (4 · 48 KiB) and two 8 KiB epilogue boxes, under the 227 KiB an H100 block may use.
    assert!(c.smem_bytes() >= 4 * 48 * 1024 + 2 * 8192 && c.smem_bytes() <= 227 * 1024);
}
