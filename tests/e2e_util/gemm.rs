//! The bf16 GEMM tests' inputs and CPU reference (`tests/gemm_bf16.rs`, `tests/gemm_bf16_out.rs`):
//! random bf16 operands (never zero), a random `C`, the device copies and tensor maps every rung takes,
//! and `alpha·A·B + beta·C` in f64 with the tolerance of an f32-accumulated result.

use super::{dot_f64, Rng};
use prism::runtime::half::bf16;
use prism::runtime::{Device, DeviceBuffer, TensorMap, TensorSwizzle};

/// `n` random bf16 values in [-1, 1), none of them zero.
pub fn bf16s(rng: &mut Rng, n: usize) -> Vec<bf16> {
    (0..n)
        .map(|_| loop {
            let v = bf16::from_f32(rng.f32());
            if v.to_f32() != 0.0 {
                break v;
            }
        })
        .collect()
}

/// How `B` is stored: `n × k` row-major (`Bᵀ`, a K-major wgmma operand) or `k × n` row-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BLayout {
    NByK,
    KByN,
}

/// A random `m × n × k` problem: `A` `m × k` row-major, `B` as `layout` says, `C` `m × n` f32 (all in
/// [-1, 1), never zero).
pub struct Problem {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Vec<bf16>,
    pub b: Vec<bf16>,
    pub c: Vec<f32>,
    pub layout: BLayout,
}

impl Problem {
    pub fn new((m, n, k): (usize, usize, usize), layout: BLayout, seed: u64) -> Problem {
        let mut rng = Rng::new(seed);
        let a = bf16s(&mut rng, m * k);
        let b = bf16s(&mut rng, n * k);
        let c = rng.f32s(m * n);
        Problem {
            m,
            n,
            k,
            a,
            b,
            c,
            layout,
        }
    }

    /// `A`, `B` and `C` on `dev`.
    pub fn upload(
        &self,
        dev: &Device,
    ) -> (DeviceBuffer<bf16>, DeviceBuffer<bf16>, DeviceBuffer<f32>) {
        (
            dev.htod(&self.a).unwrap(),
            dev.htod(&self.b).unwrap(),
            dev.htod(&self.c).unwrap(),
        )
    }

    /// The rungs' tensor maps over the uploaded `A` and `B` (`n × k`): boxes of 64 columns (one 128-byte
    /// swizzle span) by `a_rows` and `b_rows` rows.
    pub fn maps<'a>(
        &self,
        da: &'a DeviceBuffer<bf16>,
        db: &'a DeviceBuffer<bf16>,
        a_rows: u32,
        b_rows: u32,
    ) -> (TensorMap<'a, bf16, 2>, TensorMap<'a, bf16, 2>) {
        assert_eq!(self.layout, BLayout::NByK, "the maps are of a K-major B");
        let (m, n, k) = (self.m as u64, self.n as u64, self.k as u64);
        (
            TensorMap::row_major_2d(da, m, k, a_rows, 64, TensorSwizzle::B128).unwrap(),
            TensorMap::row_major_2d(db, n, k, b_rows, 64, TensorSwizzle::B128).unwrap(),
        )
    }

    /// `alpha·(A·B)[i][j] + beta·c` in f64, and the tolerance of an f32-accumulated result: 10⁻⁵ of the
    /// terms' magnitudes (plus 10⁻⁶).
    pub fn expected(&self, i: usize, j: usize, alpha: f32, beta: f32, c: f64) -> (f64, f64) {
        let (k, n) = (self.k, self.n);
        let a = |x: usize| self.a[i * k + x].to_f32() as f64;
        let (s, mag) = match self.layout {
            BLayout::NByK => dot_f64(k, a, |x| self.b[j * k + x].to_f32() as f64),
            BLayout::KByN => dot_f64(k, a, |x| self.b[x * n + j].to_f32() as f64),
        };
        let (alpha, beta) = (alpha as f64, beta as f64);
        let want = alpha * s + beta * c;
        (want, 1e-5 * (alpha.abs() * mag + (beta * c).abs()) + 1e-6)
    }

    /// The (row, column) of the elements of an f32 `D` (`alpha·A·B + beta·C`) off the reference by more
    /// than the tolerance.
    pub fn wrong_f32(&self, alpha: f32, beta: f32, d: &[f32]) -> Vec<(usize, usize)> {
        let mut bad = Vec::new();
        for i in 0..self.m {
            for j in 0..self.n {
                let at = i * self.n + j;
                let (want, tol) = self.expected(i, j, alpha, beta, self.c[at] as f64);
                let err = (d[at] as f64 - want).abs();
                if err.is_nan() || err > tol {
                    bad.push((i, j));
                }
            }
        }
        bad
    }
}
