//! The sgemm ladder of paper 000, §6.1.1 (after Boehm's SGEMM_CUDA, the paper's reference \[6\]), written in
//! Prism: `C = alpha · A · B + beta · C` with row-major `f32` matrices `A` (`m × k`), `B` (`k × n`) and
//! `C` (`m × n`).
//!
//! | variant | kernel | perspectives | sizes |
//! |---|---|---|---|
//! | 1 naive | [`sgemm_naive`] | grid → thread (consecutive threads → consecutive rows of C) | any |
//! | 2 coalescing | [`sgemm_coalesced`] | grid → block → thread (consecutive threads → consecutive columns) | any |
//! | 3 shared tiling | [`sgemm_smem`] | block stages `BS × BS` tiles through `thread[1]` partitions, thread computes | any |
//! | 4 2D block tiling | [`sgemm_blocktile_2d`] | block stages `BM × BK`, `BK × BN`; each thread `TM × TN` results | multiples |
//! | 5 vectorized | [`sgemm_vectorized`] | as 4 with `load4`/`store4` and `As` transposed | multiples |
//! | 6 warp tiling | [`sgemm_warptile`] | block → warp (`thread[32]`, `WM × WN`) → thread | multiples |
//!
//! The host API is [`sgemm`] (any variant, device buffers, sizes validated before anything runs) and
//! [`mma_tf32`] for the paper's Fig. 6 TF32 tensor-core kernel. Index arithmetic is `u32`: every matrix must
//! have fewer than 2³² elements.

use crate::mma_tf32_naive;
use prism_macros::{prism_device, prism_kernel};
use prism_runtime::{Device, DeviceBuffer, LaunchDims, LaunchReport, RuntimeError};
use std::fmt;

// ---- Host API. ----

/// One kernel instance of the sgemm ladder: the variant and its tile sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SgemmVariant {
    /// (1) [`sgemm_naive`], 256 threads per block.
    Naive,
    /// (2) [`sgemm_coalesced`]`<32>`.
    Coalesced,
    /// (3) [`sgemm_smem`]`<32>`.
    SharedMem,
    /// (4) [`sgemm_blocktile_2d`]`<64, 64, 8, 8, 8>` (64 threads).
    BlockTile2d64,
    /// (4) [`sgemm_blocktile_2d`]`<128, 128, 8, 8, 8>` (256 threads).
    BlockTile2d128,
    /// (5) [`sgemm_vectorized`]`<64, 64, 8, 8, 8>` (64 threads).
    Vectorized64,
    /// (5) [`sgemm_vectorized`]`<128, 128, 8, 8, 8>` (256 threads).
    Vectorized128,
    /// (6) [`sgemm_warptile`]`<64, 64, 16, 32, 32, 2, 4, 4>` (128 threads).
    Warptile64,
    /// (6) [`sgemm_warptile`]`<128, 128, 16, 64, 64, 4, 8, 4>` (128 threads).
    Warptile128,
}

impl SgemmVariant {
    /// Every variant, in ladder order.
    pub const ALL: [SgemmVariant; 9] = [
        SgemmVariant::Naive,
        SgemmVariant::Coalesced,
        SgemmVariant::SharedMem,
        SgemmVariant::BlockTile2d64,
        SgemmVariant::BlockTile2d128,
        SgemmVariant::Vectorized64,
        SgemmVariant::Vectorized128,
        SgemmVariant::Warptile64,
        SgemmVariant::Warptile128,
    ];

    /// Short name for tables, e.g. `"4 blocktile 128x128"`.
    pub fn name(self) -> &'static str {
        match self {
            SgemmVariant::Naive => "1 naive",
            SgemmVariant::Coalesced => "2 coalesced 32",
            SgemmVariant::SharedMem => "3 smem 32",
            SgemmVariant::BlockTile2d64 => "4 blocktile 64x64",
            SgemmVariant::BlockTile2d128 => "4 blocktile 128x128",
            SgemmVariant::Vectorized64 => "5 vectorized 64x64",
            SgemmVariant::Vectorized128 => "5 vectorized 128x128",
            SgemmVariant::Warptile64 => "6 warptile 64x64",
            SgemmVariant::Warptile128 => "6 warptile 128x128",
        }
    }

    /// The kernel instance this variant launches.
    pub fn info(self) -> &'static prism_runtime::KernelInfo {
        match self {
            SgemmVariant::Naive => &sgemm_naive::INFO,
            SgemmVariant::Coalesced => &sgemm_coalesced::<32>::INFO,
            SgemmVariant::SharedMem => &sgemm_smem::<32>::INFO,
            SgemmVariant::BlockTile2d64 => &sgemm_blocktile_2d::<64, 64, 8, 8, 8>::INFO,
            SgemmVariant::BlockTile2d128 => &sgemm_blocktile_2d::<128, 128, 8, 8, 8>::INFO,
            SgemmVariant::Vectorized64 => &sgemm_vectorized::<64, 64, 8, 8, 8>::INFO,
            SgemmVariant::Vectorized128 => &sgemm_vectorized::<128, 128, 8, 8, 8>::INFO,
            SgemmVariant::Warptile64 => &sgemm_warptile::<64, 64, 16, 32, 32, 2, 4, 4>::INFO,
            SgemmVariant::Warptile128 => &sgemm_warptile::<128, 128, 16, 64, 64, 4, 8, 4>::INFO,
        }
    }

    /// `Some((BM, BN, BK))` when the variant requires `m`, `n`, `k` to be multiples of its tile; `None` when
    /// it takes any sizes (it bounds-checks).
    pub fn required_multiple(self) -> Option<(u32, u32, u32)> {
        match self {
            SgemmVariant::Naive | SgemmVariant::Coalesced | SgemmVariant::SharedMem => None,
            SgemmVariant::BlockTile2d64 | SgemmVariant::Vectorized64 => Some((64, 64, 8)),
            SgemmVariant::BlockTile2d128 | SgemmVariant::Vectorized128 => Some((128, 128, 8)),
            SgemmVariant::Warptile64 => Some((64, 64, 16)),
            SgemmVariant::Warptile128 => Some((128, 128, 16)),
        }
    }

    /// Grid and block for an `m × n` result (sizes already validated).
    pub fn launch_dims(self, m: u32, n: u32) -> LaunchDims {
        match self {
            SgemmVariant::Naive => {
                let total = m as u64 * n as u64;
                LaunchDims::new(total.div_ceil(256) as u32, 256)
            }
            SgemmVariant::Coalesced | SgemmVariant::SharedMem => {
                LaunchDims::new(m.div_ceil(32) * n.div_ceil(32), 32 * 32)
            }
            _ => {
                let (bm, bn, _) = self.required_multiple().unwrap_or((1, 1, 1));
                let block = self.info().contract().threads_exact().unwrap_or(256);
                LaunchDims::new((m / bm) * (n / bn), block)
            }
        }
    }
}

impl fmt::Display for SgemmVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why [`sgemm`] or [`mma_tf32`] refused to run (nothing was launched), or the runtime's error.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum SgemmError {
    /// A buffer's length is not what `m`, `n`, `k` imply.
    BufferLength {
        /// `"a"`, `"b"` or `"c"`.
        buffer: &'static str,
        /// `m·k`, `k·n` or `m·n`.
        expected: u64,
        /// The buffer's length.
        got: usize,
    },
    /// The variant needs sizes that are multiples of its tile.
    NotTileMultiple {
        /// The variant.
        variant: SgemmVariant,
        /// The sizes asked for.
        mnk: (u32, u32, u32),
        /// The tile `(BM, BN, BK)` they must be multiples of.
        tile: (u32, u32, u32),
    },
    /// A matrix has 2³² elements or more (kernels index with `u32`), or the grid would be too large.
    TooLarge {
        /// The sizes asked for.
        mnk: (u32, u32, u32),
    },
    /// The launch itself failed.
    Runtime(RuntimeError),
}

impl fmt::Display for SgemmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SgemmError::BufferLength {
                buffer,
                expected,
                got,
            } => write!(
                f,
                "buffer `{buffer}` has {got} elements, but the sizes need {expected}"
            ),
            SgemmError::NotTileMultiple {
                variant,
                mnk: (m, n, k),
                tile: (bm, bn, bk),
            } => write!(
                f,
                "sgemm variant `{variant}` needs m, n, k multiples of ({bm}, {bn}, {bk}), got ({m}, {n}, {k}); \
                 use a variant with bounds checks (naive, coalesced, smem) or pad the matrices"
            ),
            SgemmError::TooLarge { mnk: (m, n, k) } => write!(
                f,
                "sgemm of ({m}, {n}, {k}): a matrix would have 2^32 elements or more (kernels index with u32)"
            ),
            SgemmError::Runtime(e) => write!(f, "sgemm launch failed: {e}"),
        }
    }
}

impl std::error::Error for SgemmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SgemmError::Runtime(e) => Some(e),
            _ => None,
        }
    }
}

impl From<RuntimeError> for SgemmError {
    fn from(e: RuntimeError) -> Self {
        SgemmError::Runtime(e)
    }
}

/// Checks the buffer lengths against `m`, `n`, `k` and that every matrix fits `u32` indexing.
fn check_sizes(m: u32, n: u32, k: u32, a: usize, b: usize, c: usize) -> Result<(), SgemmError> {
    let (m64, n64, k64) = (m as u64, n as u64, k as u64);
    let sizes = [
        ("a", m64 * k64, a),
        ("b", k64 * n64, b),
        ("c", m64 * n64, c),
    ];
    // Headroom below 2^32 so that global thread indices (rounded up to whole blocks) also fit.
    if sizes.iter().any(|s| s.1 > (u32::MAX - 1024) as u64) {
        return Err(SgemmError::TooLarge { mnk: (m, n, k) });
    }
    for (buffer, expected, got) in sizes {
        if expected != got as u64 {
            return Err(SgemmError::BufferLength {
                buffer,
                expected,
                got,
            });
        }
    }
    Ok(())
}

/// `C = alpha · A · B + beta · C` on `dev` with the given variant: `A` is `m × k`, `B` is `k × n`, `C` is
/// `m × n`, all row-major `f32` device buffers. Picks grid and block from the variant's instance. With
/// `beta = 0`, `C` is not read (BLAS semantics: it may hold anything, NaN included).
///
/// Nothing is launched (and `c` is untouched) when the sizes are refused: buffer lengths other than `m·k`,
/// `k·n`, `m·n` ([`SgemmError::BufferLength`]), sizes a tiled variant cannot handle
/// ([`SgemmError::NotTileMultiple`]), or matrices too large for `u32` indexing. When `m` or `n` is 0 there
/// is nothing to compute and nothing is launched either (`emu` is `None` in the report).
///
/// ```
/// use prism_kernels::sgemm::{sgemm, SgemmVariant};
/// use prism_runtime::Device;
/// let dev = Device::auto()?;
/// let (m, n, k) = (3u32, 2u32, 4u32);
/// let a = dev.htod(&vec![1.0f32; 12])?;
/// let b = dev.htod(&vec![0.5f32; 8])?;
/// let mut c = dev.htod(&vec![10.0f32; 6])?;
/// sgemm(&dev, SgemmVariant::SharedMem, m, n, k, 2.0, &a, &b, 0.5, &mut c)?;
/// assert_eq!(dev.dtoh(&c)?, vec![9.0f32; 6]); // 2 · (4 · 0.5) + 0.5 · 10
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn sgemm(
    dev: &Device,
    variant: SgemmVariant,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: &DeviceBuffer<f32>,
    b: &DeviceBuffer<f32>,
    beta: f32,
    c: &mut DeviceBuffer<f32>,
) -> Result<LaunchReport, SgemmError> {
    check_sizes(m, n, k, a.len(), b.len(), c.len())?;
    if let Some((bm, bn, bk)) = variant.required_multiple() {
        if !m.is_multiple_of(bm) || !n.is_multiple_of(bn) || !k.is_multiple_of(bk) {
            return Err(SgemmError::NotTileMultiple {
                variant,
                mnk: (m, n, k),
                tile: (bm, bn, bk),
            });
        }
    }
    if m == 0 || n == 0 {
        return Ok(LaunchReport {
            backend: dev.backend(),
            emu: None,
        });
    }
    let dims = variant.launch_dims(m, n);
    let r = match variant {
        SgemmVariant::Naive => sgemm_naive::launch(dev, dims, m, n, k, alpha, a, b, beta, c),
        SgemmVariant::Coalesced => {
            sgemm_coalesced::<32>::launch(dev, dims, m, n, k, alpha, a, b, beta, c)
        }
        SgemmVariant::SharedMem => {
            sgemm_smem::<32>::launch(dev, dims, m, n, k, alpha, a, b, beta, c)
        }
        SgemmVariant::BlockTile2d64 => {
            sgemm_blocktile_2d::<64, 64, 8, 8, 8>::launch(dev, dims, m, n, k, alpha, a, b, beta, c)
        }
        SgemmVariant::BlockTile2d128 => sgemm_blocktile_2d::<128, 128, 8, 8, 8>::launch(
            dev, dims, m, n, k, alpha, a, b, beta, c,
        ),
        SgemmVariant::Vectorized64 => {
            sgemm_vectorized::<64, 64, 8, 8, 8>::launch(dev, dims, m, n, k, alpha, a, b, beta, c)
        }
        SgemmVariant::Vectorized128 => {
            sgemm_vectorized::<128, 128, 8, 8, 8>::launch(dev, dims, m, n, k, alpha, a, b, beta, c)
        }
        SgemmVariant::Warptile64 => sgemm_warptile::<64, 64, 16, 32, 32, 2, 4, 4>::launch(
            dev, dims, m, n, k, alpha, a, b, beta, c,
        ),
        SgemmVariant::Warptile128 => sgemm_warptile::<128, 128, 16, 64, 64, 4, 8, 4>::launch(
            dev, dims, m, n, k, alpha, a, b, beta, c,
        ),
    }?;
    Ok(r)
}

/// `C = A · B` with the paper's Fig. 6 TF32 tensor-core kernel ([`mma_tf32_naive`]): `A` is `m × k`, `B` is
/// `k × n`, `C` is `m × n`, row-major `f32` (rounded to TF32 inside the tensor core, 10 mantissa bits). Any
/// sizes: one block of 32 threads per 16 × 8 tile of `C`. Buffer lengths are validated as in [`sgemm`];
/// `m == 0` or `n == 0` launches nothing.
pub fn mma_tf32(
    dev: &Device,
    m: u32,
    n: u32,
    k: u32,
    a: &DeviceBuffer<f32>,
    b: &DeviceBuffer<f32>,
    c: &mut DeviceBuffer<f32>,
) -> Result<LaunchReport, SgemmError> {
    check_sizes(m, n, k, a.len(), b.len(), c.len())?;
    if m == 0 || n == 0 {
        return Ok(LaunchReport {
            backend: dev.backend(),
            emu: None,
        });
    }
    let blocks = m.div_ceil(16) as u64 * n.div_ceil(8) as u64;
    if blocks > i32::MAX as u64 {
        return Err(SgemmError::TooLarge { mnk: (m, n, k) });
    }
    Ok(mma_tf32_naive::launch(
        dev,
        LaunchDims::new(blocks as u32, 32),
        a,
        b,
        c,
        m,
        n,
        k,
    )?)
}

// ---- (1) naive: one thread per element of C, consecutive threads walk down a column. ----

/// Variant 1, naive (paper 000 §6.1.1 (1)): written from the perspective of one thread. Global thread `t`
/// computes `C[t % m][t / m]`, so the 32 threads of a warp cover 32 consecutive *rows* of one column: every
/// read of `A` and every access of `C` is strided (uncoalesced), which is what variant 2 fixes. Launch at
/// least `m · n` threads in total; extra threads do nothing.
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn sgemm_naive(
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: *const f32,
    b: *const f32,
    beta: f32,
    c: *mut f32,
) {
    // id() into a thread[1] variable from grid[1] code: the global thread index.
    #[at(thread[1])]
    let t: u32 = id();
    #[at(thread[1])]
    let row: u32 = t % m;
    #[at(thread[1])]
    let col: u32 = t / m;
    partition(
        c,
        thread[1],
        |x| row * n + col + x,
        |c_th| {
            group(thread[1], || {
                if col < n {
                    let mut acc = 0.0f32;
                    for i in 0..k {
                        acc = a[row * k + i].fma(b[i * n + col], acc);
                    }
                    // BLAS semantics: with beta = 0, C is not read (it may hold NaN).
                    let mut v: f32 = alpha * acc;
                    if beta != 0.0 {
                        v = v + beta * c_th[0];
                    }
                    c_th[0] = v;
                }
            });
        },
    );
}

// ---- (2) global-memory coalescing: consecutive threads walk along a row. ----

/// Variant 2, global-memory coalescing (§6.1.1 (2)): each block owns a `BS × BS` tile of `C` (a `block[1]`
/// partition), and thread `t` of the block computes element `(t / BS, t % BS)` of it, so a warp covers
/// consecutive *columns*: its reads of `B` and its accesses of `C` are coalesced and its reads of `A` are
/// broadcasts. Launch `ceil(m / BS) · ceil(n / BS)` blocks of exactly `BS · BS` threads; any sizes.
#[prism_kernel(
    requires(grid[1], block[1], thread[1]),
    threads = BS * BS,
    instances = [16, 32]
)]
pub fn sgemm_coalesced<const BS: u32>(
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: *const f32,
    b: *const f32,
    beta: f32,
    c: *mut f32,
) {
    let tiles_n: u32 = (n + BS - 1) / BS;
    #[at(block[1])]
    let tile_row: u32 = (id() / tiles_n) * BS;
    #[at(block[1])]
    let tile_col: u32 = (id() % tiles_n) * BS;
    partition(
        c,
        block[1],
        |x| tile_row * n + tile_col + x,
        |c_blk| {
            group(block[1], || {
                #[at(thread[1])]
                let t: u32 = id();
                #[at(thread[1])]
                let tr: u32 = t / BS;
                #[at(thread[1])]
                let tc: u32 = t % BS;
                partition(
                    c_blk,
                    thread[1],
                    |x| tr * n + tc + x,
                    |c_th| {
                        group(thread[1], || {
                            let row: u32 = tile_row + tr;
                            let col: u32 = tile_col + tc;
                            if row < m && col < n {
                                let mut acc = 0.0f32;
                                for i in 0..k {
                                    acc = a[row * k + i].fma(b[i * n + col], acc);
                                }
                                // BLAS semantics: with beta = 0, C is not read (it may hold NaN).
                                let mut v: f32 = alpha * acc;
                                if beta != 0.0 {
                                    v = v + beta * c_th[0];
                                }
                                c_th[0] = v;
                            }
                        });
                    },
                );
            });
        },
    );
}

// ---- (3) shared-memory tiling. ----

/// Variant 3, shared-memory cache blocking (§6.1.1 (3)): the block (perspective `block[1]`) walks `k` in
/// steps of `BS`; each step every thread stages one element of the `BS × BS` tiles of `A` and `B` into the
/// `Shared` arrays through `thread[1]` partitions (whose scopes end with the block barrier), then, back at
/// `thread[1]`, reads a row of `As` and a column of `Bs` at block perspective. Out-of-range elements are
/// staged as zeros and out-of-range results are not written, so any sizes work. Launch
/// `ceil(m / BS) · ceil(n / BS)` blocks of exactly `BS · BS` threads.
#[prism_kernel(
    requires(grid[1], block[1], thread[1]),
    threads = BS * BS,
    smem = 2 * 4 * BS * BS,
    instances = [16, 32]
)]
pub fn sgemm_smem<const BS: u32>(
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: *const f32,
    b: *const f32,
    beta: f32,
    c: *mut f32,
) {
    let tiles_n: u32 = (n + BS - 1) / BS;
    let k_tiles: u32 = (k + BS - 1) / BS;
    #[at(block[1])]
    let tile_row: u32 = (id() / tiles_n) * BS;
    #[at(block[1])]
    let tile_col: u32 = (id() % tiles_n) * BS;
    partition(
        c,
        block[1],
        |x| tile_row * n + tile_col + x,
        |c_blk| {
            group(block[1], || {
                let a_s: Shared<[f32; BS * BS]>;
                let b_s: Shared<[f32; BS * BS]>;
                #[at(thread[1])]
                let t: u32 = id();
                #[at(thread[1])]
                let tr: u32 = t / BS;
                #[at(thread[1])]
                let tc: u32 = t % BS;
                #[at(thread[1])]
                let mut acc = 0.0f32;
                for kt in 0..k_tiles {
                    let k0: u32 = kt * BS;
                    // Stage: thread t owns element t of each tile (T-PARTITION at thread[1]).
                    partition(
                        a_s,
                        thread[1],
                        |x| t + x,
                        |a_th| {
                            partition(
                                b_s,
                                thread[1],
                                |x| t + x,
                                |b_th| {
                                    group(thread[1], || {
                                        if tile_row + tr < m && k0 + tc < k {
                                            a_th[0] = a[(tile_row + tr) * k + k0 + tc];
                                        } else {
                                            a_th[0] = 0.0;
                                        }
                                        if k0 + tr < k && tile_col + tc < n {
                                            b_th[0] = b[(k0 + tr) * n + tile_col + tc];
                                        } else {
                                            b_th[0] = 0.0;
                                        }
                                    });
                                },
                            );
                        },
                    );
                    // Compute: shared tiles read at block perspective from thread[1] code (READ-UP).
                    group(thread[1], || {
                        for i in 0..BS {
                            acc = a_s[tr * BS + i].fma(b_s[i * BS + tc], acc);
                        }
                    });
                }
                partition(
                    c_blk,
                    thread[1],
                    |x| tr * n + tc + x,
                    |c_th| {
                        group(thread[1], || {
                            if tile_row + tr < m && tile_col + tc < n {
                                // BLAS semantics: with beta = 0, C is not read (it may hold NaN).
                                let mut v: f32 = alpha * acc;
                                if beta != 0.0 {
                                    v = v + beta * c_th[0];
                                }
                                c_th[0] = v;
                            }
                        });
                    },
                );
            });
        },
    );
}

// ---- (4) 2D block tiling. ----

/// Variant 4, 2D block tiling (§6.1.1 (3)–(4), appendix B `my_sgemm_kernel_3`): a block computes a
/// `BM × BN` tile of `C` with `(BM · BN) / (TM · TN)` threads, each of which accumulates a `TM × TN` sub-tile
/// in a register array. Per `BK` step the block stages `As` (`BM × BK`) and `Bs` (`BK × BN`) through
/// `thread[1]` partitions (row strides `threads / BK` and `threads / BN`), then each thread caches a column
/// slice of `As` and a row slice of `Bs` in registers (`reg_m`, `reg_n`) and does `TM · TN` FMAs per `k`.
/// Requires `m % BM == 0`, `n % BN == 0`, `k % BK == 0` (checked by [`sgemm`]). Launch
/// `(m / BM) · (n / BN)` blocks of exactly `(BM · BN) / (TM · TN)` threads.
#[prism_kernel(
    requires(grid[1], block[1], thread[1]),
    threads = (BM * BN) / (TM * TN),
    smem = 4 * (BM * BK + BK * BN),
    instances = [(64, 64, 8, 8, 8), (128, 128, 8, 8, 8)]
)]
pub fn sgemm_blocktile_2d<
    const BM: u32,
    const BN: u32,
    const BK: u32,
    const TM: u32,
    const TN: u32,
>(
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: *const f32,
    b: *const f32,
    beta: f32,
    c: *mut f32,
) {
    let num_threads: u32 = (BM * BN) / (TM * TN);
    let stride_a: u32 = num_threads / BK;
    let stride_b: u32 = num_threads / BN;
    let blocks_n: u32 = n / BN;
    #[at(block[1])]
    let c_row: u32 = id() / blocks_n;
    #[at(block[1])]
    let c_col: u32 = id() % blocks_n;
    partition(
        c,
        block[1],
        |x| c_row * BM * n + c_col * BN + x,
        |c_blk| {
            group(block[1], || {
                let a_s: Shared<[f32; BM * BK]>;
                let b_s: Shared<[f32; BK * BN]>;
                #[at(thread[1])]
                let t: u32 = id();
                #[at(thread[1])]
                let thread_row: u32 = t / (BN / TN);
                #[at(thread[1])]
                let thread_col: u32 = t % (BN / TN);
                #[at(thread[1])]
                let inner_row_a: u32 = t / BK;
                #[at(thread[1])]
                let inner_col_a: u32 = t % BK;
                #[at(thread[1])]
                let inner_row_b: u32 = t / BN;
                #[at(thread[1])]
                let inner_col_b: u32 = t % BN;
                #[at(thread[1])]
                let mut results = [0.0f32; TM * TN];
                #[at(thread[1])]
                let mut reg_m = [0.0f32; TM];
                #[at(thread[1])]
                let mut reg_n = [0.0f32; TN];
                for bk in (0..k).step_by(BK) {
                    // Row r of this thread's slice of As / Bs.
                    partition(
                        a_s,
                        thread[1],
                        |r| (inner_row_a + r) * BK + inner_col_a,
                        |a_th| {
                            partition(
                                b_s,
                                thread[1],
                                |r| (inner_row_b + r) * BN + inner_col_b,
                                |b_th| {
                                    group(thread[1], || {
                                        for off in (0..BM).step_by(stride_a) {
                                            a_th[off] = a[(c_row * BM + inner_row_a + off) * k
                                                + bk
                                                + inner_col_a];
                                        }
                                        for off in (0..BK).step_by(stride_b) {
                                            b_th[off] = b[(bk + inner_row_b + off) * n
                                                + c_col * BN
                                                + inner_col_b];
                                        }
                                    });
                                },
                            );
                        },
                    );
                    group(thread[1], || {
                        for dot in 0..BK {
                            for i in 0..TM {
                                reg_m[i] = a_s[(thread_row * TM + i) * BK + dot];
                            }
                            for i in 0..TN {
                                reg_n[i] = b_s[dot * BN + thread_col * TN + i];
                            }
                            for rm in 0..TM {
                                for rn in 0..TN {
                                    results[rm * TN + rn] =
                                        reg_m[rm].fma(reg_n[rn], results[rm * TN + rn]);
                                }
                            }
                        }
                    });
                }
                partition(
                    c_blk,
                    thread[1],
                    |r, q| (thread_row * TM + r) * n + thread_col * TN + q,
                    |c_th| {
                        group(thread[1], || {
                            for rm in 0..TM {
                                for rn in 0..TN {
                                    let mut v: f32 = alpha * results[rm * TN + rn];
                                    if beta != 0.0 {
                                        v = v + beta * c_th[(rm, rn)];
                                    }
                                    c_th[(rm, rn)] = v;
                                }
                            }
                        });
                    },
                );
            });
        },
    );
}

// ---- (5) vectorized loads and stores. ----

/// Variant 5, vectorized (§6.1.1 (4), appendix B `my_sgemv_kernel_4`): variant 4 with 128-bit accesses.
/// Each thread reads 4 consecutive elements of `A` with `load4` and stores them *transposed* into `As`
/// (`BK × BM`, so a thread's `TM` values for one `k` are contiguous), copies `B` into `Bs` with
/// `load4`/`store4`, fills its register slices with `load4` from shared memory, and updates `C` with
/// `load4`/`store4`. Requires `m % BM == 0`, `n % BN == 0`, `k % BK == 0` (so every vector is 16-byte
/// aligned), `TM % 4 == 0`, `TN % 4 == 0`. Launch `(m / BM) · (n / BN)` blocks of exactly
/// `(BM · BN) / (TM · TN)` threads.
#[prism_kernel(
    requires(grid[1], block[1], thread[1]),
    threads = (BM * BN) / (TM * TN),
    smem = 4 * (BM * BK + BK * BN),
    instances = [(64, 64, 8, 8, 8), (128, 128, 8, 8, 8)]
)]
pub fn sgemm_vectorized<
    const BM: u32,
    const BN: u32,
    const BK: u32,
    const TM: u32,
    const TN: u32,
>(
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: *const f32,
    b: *const f32,
    beta: f32,
    c: *mut f32,
) {
    let num_threads: u32 = (BM * BN) / (TM * TN);
    let stride_a: u32 = num_threads / (BK / 4);
    let stride_b: u32 = num_threads / (BN / 4);
    let blocks_n: u32 = n / BN;
    #[at(block[1])]
    let c_row: u32 = id() / blocks_n;
    #[at(block[1])]
    let c_col: u32 = id() % blocks_n;
    partition(
        c,
        block[1],
        |x| c_row * BM * n + c_col * BN + x,
        |c_blk| {
            group(block[1], || {
                // As is stored transposed: As[kk][row].
                let a_s: Shared<[f32; BK * BM]>;
                let b_s: Shared<[f32; BK * BN]>;
                #[at(thread[1])]
                let t: u32 = id();
                #[at(thread[1])]
                let thread_row: u32 = t / (BN / TN);
                #[at(thread[1])]
                let thread_col: u32 = t % (BN / TN);
                #[at(thread[1])]
                let inner_row_a: u32 = t / (BK / 4);
                #[at(thread[1])]
                let inner_col_a: u32 = t % (BK / 4);
                #[at(thread[1])]
                let inner_row_b: u32 = t / (BN / 4);
                #[at(thread[1])]
                let inner_col_b: u32 = t % (BN / 4);
                #[at(thread[1])]
                let mut results = [0.0f32; TM * TN];
                #[at(thread[1])]
                let mut reg_m = [0.0f32; TM];
                #[at(thread[1])]
                let mut reg_n = [0.0f32; TN];
                for bk in (0..k).step_by(BK) {
                    partition(
                        a_s,
                        thread[1],
                        |j, r| (inner_col_a * 4 + j) * BM + inner_row_a + r,
                        |a_th| {
                            partition(
                                b_s,
                                thread[1],
                                |r| (inner_row_b + r) * BN + inner_col_b * 4,
                                |b_th| {
                                    group(thread[1], || {
                                        for off in (0..BM).step_by(stride_a) {
                                            let v = load4(
                                                a,
                                                (c_row * BM + inner_row_a + off) * k
                                                    + bk
                                                    + inner_col_a * 4,
                                            );
                                            a_th[(0, off)] = v[0];
                                            a_th[(1, off)] = v[1];
                                            a_th[(2, off)] = v[2];
                                            a_th[(3, off)] = v[3];
                                        }
                                        for off in (0..BK).step_by(stride_b) {
                                            let v = load4(
                                                b,
                                                (bk + inner_row_b + off) * n
                                                    + c_col * BN
                                                    + inner_col_b * 4,
                                            );
                                            store4(b_th, off, v);
                                        }
                                    });
                                },
                            );
                        },
                    );
                    group(thread[1], || {
                        for dot in 0..BK {
                            for i in 0..TM / 4 {
                                let v = load4(a_s, dot * BM + thread_row * TM + i * 4);
                                for j in 0..4 {
                                    reg_m[i * 4 + j] = v[j];
                                }
                            }
                            for i in 0..TN / 4 {
                                let v = load4(b_s, dot * BN + thread_col * TN + i * 4);
                                for j in 0..4 {
                                    reg_n[i * 4 + j] = v[j];
                                }
                            }
                            for rm in 0..TM {
                                for rn in 0..TN {
                                    results[rm * TN + rn] =
                                        reg_m[rm].fma(reg_n[rn], results[rm * TN + rn]);
                                }
                            }
                        }
                    });
                }
                partition(
                    c_blk,
                    thread[1],
                    |x| thread_row * TM * n + thread_col * TN + x,
                    |c_th| {
                        group(thread[1], || {
                            for rm in 0..TM {
                                for rn in (0..TN).step_by(4) {
                                    // BLAS semantics: with beta = 0, C is not read (it may hold NaN).
                                    let mut old = [0.0f32; 4];
                                    if beta != 0.0 {
                                        old = load4(c_th, rm * n + rn);
                                    }
                                    let mut out = [0.0f32; 4];
                                    for j in 0..4 {
                                        out[j] = alpha * results[rm * TN + rn + j] + beta * old[j];
                                    }
                                    store4(c_th, rm * n + rn, out);
                                }
                            }
                        });
                    },
                );
            });
        },
    );
}

// ---- (6) warp tiling. ----

/// `sgemm_warptile`'s epilogue for one thread: `C = alpha·results + beta·C` over the thread's pieces of
/// its warp's tile (`c_th` starts at the thread's first element; `n` is the row stride of `C`), four
/// columns at a time.
#[prism_device(requires(thread[1]))]
fn warptile_epilogue<
    const WM: u32,
    const WN: u32,
    const WNITER: u32,
    const TM: u32,
    const TN: u32,
>(
    c_th: *mut f32,
    results: &[f32; (WM * WN) / 32],
    n: u32,
    alpha: f32,
    beta: f32,
) {
    let wmiter: u32 = (WM * WN) / (32 * TM * TN * WNITER);
    let wsub_m: u32 = WM / wmiter;
    let wsub_n: u32 = WN / WNITER;
    for wm in 0..wmiter {
        for wn in 0..WNITER {
            for rm in 0..TM {
                for rn in (0..TN).step_by(4) {
                    let idx: u32 = (wm * wsub_m + rm) * n + wn * wsub_n + rn;
                    // BLAS semantics: with beta = 0, C is not read (it may hold NaN).
                    let mut old = [0.0f32; 4];
                    if beta != 0.0 {
                        old = load4(c_th, idx);
                    }
                    let mut out = [0.0f32; 4];
                    for j in 0..4 {
                        let ri = (wm * TM + rm) * (WNITER * TN) + wn * TN + rn + j;
                        out[j] = alpha * results[ri] + beta * old[j];
                    }
                    store4(c_th, idx, out);
                }
            }
        }
    }
}

/// One `BK`-deep step of `sgemm_warptile`'s thread: for each `dot` of the shared tiles `a_s` (`BK × BM`,
/// K-major) and `b_s` (`BK × BN`), the thread's `TM`-row and `TN`-column slices of every warp sub-tile
/// into `reg_m` and `reg_n`, then their outer product added into `results`. `row0` and `col0` are the
/// thread's first row and column within the block tile (its warp's tile plus its lane's place).
#[prism_device(requires(thread[1]))]
#[allow(clippy::too_many_arguments)]
fn warptile_step<
    const BM: u32,
    const BN: u32,
    const BK: u32,
    const WM: u32,
    const WN: u32,
    const WNITER: u32,
    const TM: u32,
    const TN: u32,
>(
    a_s: Shared<[f32; BK * BM]>,
    b_s: Shared<[f32; BK * BN]>,
    results: &mut [f32; (WM * WN) / 32],
    reg_m: &mut [f32; ((WM * WN) / (32 * TN * WNITER))],
    reg_n: &mut [f32; WNITER * TN],
    row0: u32,
    col0: u32,
) {
    let wmiter: u32 = (WM * WN) / (32 * TM * TN * WNITER);
    let wsub_m: u32 = WM / wmiter;
    let wsub_n: u32 = WN / WNITER;
    for dot in 0..BK {
        for wm in 0..wmiter {
            for i in 0..TM / 4 {
                let v = load4(a_s, dot * BM + row0 + wm * wsub_m + i * 4);
                for j in 0..4 {
                    reg_m[wm * TM + i * 4 + j] = v[j];
                }
            }
        }
        for wn in 0..WNITER {
            for i in 0..TN / 4 {
                let v = load4(b_s, dot * BN + col0 + wn * wsub_n + i * 4);
                for j in 0..4 {
                    reg_n[wn * TN + i * 4 + j] = v[j];
                }
            }
        }
        for wm in 0..wmiter {
            for wn in 0..WNITER {
                for rm in 0..TM {
                    for rn in 0..TN {
                        let ri = (wm * TM + rm) * (WNITER * TN) + wn * TN + rn;
                        results[ri] = reg_m[wm * TM + rm].fma(reg_n[wn * TN + rn], results[ri]);
                    }
                }
            }
        }
    }
}

/// Variant 6, warp tiling (§6.1.1 (5), Boehm's kernel 10): variant 5 plus a level of tiling from the
/// perspective of a warp. The block tile `BM × BN` is split into `WM × WN` warp tiles (one per warp:
/// `(BM / WM) · (BN / WN)` warps); a warp walks its tile in `WMITER × WNITER` sub-tiles of
/// `(WM / WMITER) × (WN / WNITER)`, where `WMITER = (WM · WN) / (32 · TM · TN · WNITER)`, and each lane
/// computes a `TM × TN` piece of every sub-tile. The warp's index and position are `thread[32]` values, the
/// lane's `thread[1]` values, and `C` is partitioned block → warp → lane. Requires `m % BM == 0`,
/// `n % BN == 0`, `k % BK == 0`. Launch `(m / BM) · (n / BN)` blocks of exactly `32 · (BM / WM) · (BN / WN)`
/// threads.
#[prism_kernel(
    requires(grid[1], block[1], thread[32]),
    threads = 32 * (BM / WM) * (BN / WN),
    smem = 4 * (BM * BK + BK * BN),
    instances = [(64, 64, 16, 32, 32, 2, 4, 4), (128, 128, 16, 64, 64, 4, 8, 4)]
)]
pub fn sgemm_warptile<
    const BM: u32,
    const BN: u32,
    const BK: u32,
    const WM: u32,
    const WN: u32,
    const WNITER: u32,
    const TM: u32,
    const TN: u32,
>(
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: *const f32,
    b: *const f32,
    beta: f32,
    c: *mut f32,
) {
    let num_threads: u32 = 32 * (BM / WM) * (BN / WN);
    let wsub_n: u32 = WN / WNITER;
    let stride_a: u32 = num_threads / (BK / 4);
    let stride_b: u32 = num_threads / (BN / 4);
    let blocks_n: u32 = n / BN;
    #[at(block[1])]
    let c_row: u32 = id() / blocks_n;
    #[at(block[1])]
    let c_col: u32 = id() % blocks_n;
    partition(
        c,
        block[1],
        |x| c_row * BM * n + c_col * BN + x,
        |c_blk| {
            group(block[1], || {
                let a_s: Shared<[f32; BK * BM]>;
                let b_s: Shared<[f32; BK * BN]>;
                // The warp's tile: id() into a thread[32] variable from block[1] code is the warp index.
                #[at(thread[32])]
                let warp_idx: u32 = id();
                #[at(thread[32])]
                let warp_row: u32 = warp_idx / (BN / WN);
                #[at(thread[32])]
                let warp_col: u32 = warp_idx % (BN / WN);
                #[at(thread[1])]
                let t: u32 = id();
                #[at(thread[1])]
                let inner_row_a: u32 = t / (BK / 4);
                #[at(thread[1])]
                let inner_col_a: u32 = t % (BK / 4);
                #[at(thread[1])]
                let inner_row_b: u32 = t / (BN / 4);
                #[at(thread[1])]
                let inner_col_b: u32 = t % (BN / 4);
                #[at(thread[1])]
                let mut results = [0.0f32; (WM * WN) / 32];
                #[at(thread[1])]
                let mut reg_m = [0.0f32; ((WM * WN) / (32 * TN * WNITER))];
                #[at(thread[1])]
                let mut reg_n = [0.0f32; WNITER * TN];
                for bk in (0..k).step_by(BK) {
                    partition(
                        a_s,
                        thread[1],
                        |j, r| (inner_col_a * 4 + j) * BM + inner_row_a + r,
                        |a_th| {
                            partition(
                                b_s,
                                thread[1],
                                |r| (inner_row_b + r) * BN + inner_col_b * 4,
                                |b_th| {
                                    group(thread[1], || {
                                        for off in (0..BM).step_by(stride_a) {
                                            let v = load4(
                                                a,
                                                (c_row * BM + inner_row_a + off) * k
                                                    + bk
                                                    + inner_col_a * 4,
                                            );
                                            a_th[(0, off)] = v[0];
                                            a_th[(1, off)] = v[1];
                                            a_th[(2, off)] = v[2];
                                            a_th[(3, off)] = v[3];
                                        }
                                        for off in (0..BK).step_by(stride_b) {
                                            let v = load4(
                                                b,
                                                (bk + inner_row_b + off) * n
                                                    + c_col * BN
                                                    + inner_col_b * 4,
                                            );
                                            store4(b_th, off, v);
                                        }
                                    });
                                },
                            );
                        },
                    );
                    // From the perspective of a warp: its lanes cover the warp tile.
                    group(thread[32], || {
                        #[at(thread[1])]
                        let lane: u32 = id();
                        #[at(thread[1])]
                        let lane_row: u32 = lane / (wsub_n / TN);
                        #[at(thread[1])]
                        let lane_col: u32 = lane % (wsub_n / TN);
                        group(thread[1], || {
                            warptile_step::<BM, BN, BK, WM, WN, WNITER, TM, TN>(
                                a_s,
                                b_s,
                                &mut results,
                                &mut reg_m,
                                &mut reg_n,
                                warp_row * WM + lane_row * TM,
                                warp_col * WN + lane_col * TN,
                            );
                        });
                    });
                }
                // C: block tile -> warp tile (thread[32]) -> the lane's pieces (thread[1]).
                partition(
                    c_blk,
                    thread[32],
                    |x| warp_row * WM * n + warp_col * WN + x,
                    |c_warp| {
                        group(thread[32], || {
                            #[at(thread[1])]
                            let lane: u32 = id();
                            #[at(thread[1])]
                            let lane_row: u32 = lane / (wsub_n / TN);
                            #[at(thread[1])]
                            let lane_col: u32 = lane % (wsub_n / TN);
                            partition(
                                c_warp,
                                thread[1],
                                |x| lane_row * TM * n + lane_col * TN + x,
                                |c_th| {
                                    group(thread[1], || {
                                        warptile_epilogue::<WM, WN, WNITER, TM, TN>(
                                            c_th, &results, n, alpha, beta,
                                        );
                                    });
                                },
                            );
                        });
                    },
                );
            });
        },
    );
}
