//! The host API of the bf16 GEMM ladder: the variant enum, the errors, and the calls that check sizes,
//! layouts and devices, build the tensor maps and launch a rung (docs/KERNELS.md). The kernels themselves
//! are the parent module's.

use super::*;

/// The map of a row-major `rows × cols` bf16 operand with `box_rows × box_cols` boxes in the 128-byte
/// swizzle wgmma reads, asking L2 for 256-byte fetches: a box row is 128 bytes of a matrix row whose next
/// 128 bytes the next k-step loads (DeepGEMM's maps ask for the same; not yet measured here).
pub(super) fn operand_map(
    buf: &DeviceBuffer<bf16>,
    rows: u32,
    cols: u32,
    box_rows: u32,
    box_cols: u32,
) -> Result<TensorMap<'_, bf16, 2>, RuntimeError> {
    TensorMap::row_major_2d(
        buf,
        rows as u64,
        cols as u64,
        box_rows,
        box_cols,
        TensorSwizzle::B128,
    )?
    .with_l2_promotion(TensorL2Promotion::B256)
}

/// The clusters of `kernel` (384 threads a block) that can be resident at once, the grid of a persistent
/// cluster kernel: the driver's count ([`Device::max_active_clusters`]). A grid of more clusters than fit
/// would run its last ones in a second wave, each after a resident cluster had finished all its tiles.
/// Where there is no count (the emulator) or the query fails (the launch then reports what is wrong), the
/// SMs divided by the cluster size stand in (132, an H100's count, on the emulator).
pub(super) fn resident_clusters(dev: &Device, kernel: &KernelInfo) -> u64 {
    let cl = kernel.contract().cluster_blocks().max(1) as u64;
    let counted = dev.max_active_clusters(kernel, 384).ok().flatten();
    counted.map_or(sms(dev) / cl, u64::from).max(1)
}

/// The SMs of `dev`, the grid of a persistent kernel with one block per SM (the emulator reports none: 132,
/// an H100's count).
pub(super) fn sms(dev: &Device) -> u64 {
    dev.properties().multiprocessors.unwrap_or(132).max(1) as u64
}

/// One kernel instance of the bf16 GEMM ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmBf16Variant {
    /// Rung 1, [`gemm_bf16_tma_wgmma`]`<64>`: 64 × 64 tiles.
    TmaWgmma64,
    /// Rung 1, [`gemm_bf16_tma_wgmma`]`<128>`: 64 × 128 tiles.
    TmaWgmma128,
    /// Rung 3, [`gemm_bf16_ws`]`<128, 4, 0>`: warp-specialized, 128 × 128 tiles, a 4-slot ring.
    WarpSpecialized128,
    /// Rung 4, [`gemm_bf16_ws`]`<256, 3, 1>`: rung 3 with setmaxnreg, 128 × 256 tiles, a 3-slot ring.
    SetMaxNReg256x3,
    /// Rung 4, [`gemm_bf16_ws`]`<256, 4, 1>`: as above with a 4-slot ring.
    SetMaxNReg256x4,
    /// Rung 5, [`gemm_bf16_persistent`]`<128, 4, 8>`: persistent, 128 × 128 tiles.
    Persistent128,
    /// Rung 5, [`gemm_bf16_persistent`]`<256, 4, 8>`: persistent, 128 × 256 tiles.
    Persistent256,
    /// Rung 6, [`gemm_bf16_cluster`]`<256, 4, 1>`: 2-block clusters multicasting B, 128 × 256 tiles.
    Cluster256,
    /// Rungs 5 + 6, [`gemm_bf16_cluster_persistent`]`<256, 4, 8>`: persistent 2-block clusters in grouped
    /// tile order, multicasting B, 128 × 256 tiles per block.
    ClusterPersistent256,
    /// Rung 5 in space-filling order, [`gemm_bf16_persistent`]`<256, 4, 0>`: persistent, 128 × 256 tiles
    /// taken from a [`TileSchedule`] (a generalized Hilbert curve unless one is given).
    PersistentHilbert256,
    /// Rungs 5 + 6 in space-filling order, [`gemm_bf16_cluster_persistent`]`<256, 4, 0>`: as
    /// `ClusterPersistent256` with the 256 × 256 cluster tiles taken from a [`TileSchedule`].
    ClusterPersistentHilbert256,
    /// Rung 7 with an f32 `D`, [`gemm_bf16_tma_store_f32`]`<256, 4, 8>`: rung 5's persistent grouped
    /// 128 × 256 tiles, `D` written through shared memory and TMA stores. TMA needs `D`'s rows to be a
    /// multiple of 16 bytes: for `n` not a multiple of 4 the same tiles run `Persistent256`'s epilogue.
    /// With `beta ≠ 0` it reads `C` from a copy made on the device first (`D` is `C`'s buffer).
    TmaStore256,
    /// Rungs 5 + 6 + 7 with an f32 `D`, [`gemm_bf16_cluster_tma_store_f32`]`<256, 4, 8>`: `TmaStore256x2`'s
    /// two-box epilogue on `ClusterPersistent256`'s persistent 2-block clusters (256 × 256 tiles per cluster in
    /// grouped order, B multicast). For `n` not a multiple of 4 the same tiles run `ClusterPersistent256`'s
    /// epilogue; `beta ≠ 0` reads `C` from a device copy.
    ClusterTmaStore256,
    /// Rung 7 with an f32 `D` and a two-stage epilogue, [`gemm_bf16_tma_store_f32x2`]`<256, 4, 8>`:
    /// `TmaStore256` with two boxes per consumer taking turns, so a box is written while the other's store
    /// still reads (one barrier per box instead of two). Falls back as `TmaStore256` does.
    TmaStore256x2,
    /// Rung 8 with an f32 `D`, [`gemm_bf16_pingpong_f32`]`<6, 8>`: the ping-pong schedule (each consumer a
    /// whole 128 × 128 tile, the two taking turns on a 6-slot ring), 64 × 32 f32 boxes stored with TMA. For
    /// `n` not a multiple of 4 the same tiles run `Persistent128`'s epilogue; `beta ≠ 0` reads `C` from a
    /// device copy.
    PingPong128,
}

impl GemmBf16Variant {
    /// Every variant, in ladder order.
    pub const ALL: [GemmBf16Variant; 15] = [
        GemmBf16Variant::TmaWgmma64,
        GemmBf16Variant::TmaWgmma128,
        GemmBf16Variant::WarpSpecialized128,
        GemmBf16Variant::SetMaxNReg256x3,
        GemmBf16Variant::SetMaxNReg256x4,
        GemmBf16Variant::Persistent128,
        GemmBf16Variant::Persistent256,
        GemmBf16Variant::Cluster256,
        GemmBf16Variant::ClusterPersistent256,
        GemmBf16Variant::PersistentHilbert256,
        GemmBf16Variant::ClusterPersistentHilbert256,
        GemmBf16Variant::TmaStore256,
        GemmBf16Variant::ClusterTmaStore256,
        GemmBf16Variant::TmaStore256x2,
        GemmBf16Variant::PingPong128,
    ];
    /// The variant [`gemm_bf16`] picks by default: the fastest f32-output rung at every benchmarked shape on
    /// an H200 (2026-11-27: 0.95× cuBLAS at 4096³, 0.99× at 8192³, docs/BENCHMARKS.md); for `n` not a
    /// multiple of 4 it runs `Persistent256`'s epilogue, and `beta ≠ 0` costs a device copy of `C`.
    pub const BEST: GemmBf16Variant = GemmBf16Variant::TmaStore256;

    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            GemmBf16Variant::TmaWgmma64 => "1 tma+wgmma 64x64",
            GemmBf16Variant::TmaWgmma128 => "1 tma+wgmma 64x128",
            GemmBf16Variant::WarpSpecialized128 => "3 ws ring 128x128 x4",
            GemmBf16Variant::SetMaxNReg256x3 => "4 ws+setmaxnreg 128x256 x3",
            GemmBf16Variant::SetMaxNReg256x4 => "4 ws+setmaxnreg 128x256 x4",
            GemmBf16Variant::Persistent128 => "5 persistent 128x128 x4",
            GemmBf16Variant::Persistent256 => "5 persistent 128x256 x4",
            GemmBf16Variant::Cluster256 => "6 cluster2 multicast 128x256 x4",
            GemmBf16Variant::ClusterPersistent256 => "5+6 persistent cluster2 128x256 x4",
            GemmBf16Variant::PersistentHilbert256 => "5 persistent hilbert 128x256 x4",
            GemmBf16Variant::ClusterPersistentHilbert256 => {
                "5+6 persistent cluster2 hilbert 128x256 x4"
            }
            GemmBf16Variant::TmaStore256 => "7 persistent tma-store f32 128x256 x4",
            GemmBf16Variant::ClusterTmaStore256 => {
                "5+6+7 persistent cluster2 tma-store f32 128x256 x4"
            }
            GemmBf16Variant::TmaStore256x2 => "7 persistent tma-store f32 2-stage 128x256 x4",
            GemmBf16Variant::PingPong128 => "8 persistent ping-pong f32 128x128 x6",
        }
    }

    /// The kernel instance this variant launches.
    pub fn info(self) -> &'static prism_runtime::KernelInfo {
        match self {
            GemmBf16Variant::TmaWgmma64 => &gemm_bf16_tma_wgmma::<64>::INFO,
            GemmBf16Variant::TmaWgmma128 => &gemm_bf16_tma_wgmma::<128>::INFO,
            GemmBf16Variant::WarpSpecialized128 => &gemm_bf16_ws::<128, 4, 0>::INFO,
            GemmBf16Variant::SetMaxNReg256x3 => &gemm_bf16_ws::<256, 3, 1>::INFO,
            GemmBf16Variant::SetMaxNReg256x4 => &gemm_bf16_ws::<256, 4, 1>::INFO,
            GemmBf16Variant::Persistent128 => &gemm_bf16_persistent::<128, 4, 8>::INFO,
            GemmBf16Variant::Persistent256 => &gemm_bf16_persistent::<256, 4, 8>::INFO,
            GemmBf16Variant::Cluster256 => &gemm_bf16_cluster::<256, 4, 1>::INFO,
            GemmBf16Variant::ClusterPersistent256 => {
                &gemm_bf16_cluster_persistent::<256, 4, 8>::INFO
            }
            GemmBf16Variant::PersistentHilbert256 => &gemm_bf16_persistent::<256, 4, 0>::INFO,
            GemmBf16Variant::ClusterPersistentHilbert256 => {
                &gemm_bf16_cluster_persistent::<256, 4, 0>::INFO
            }
            GemmBf16Variant::TmaStore256 => &gemm_bf16_tma_store_f32::<256, 4, 8>::INFO,
            GemmBf16Variant::ClusterTmaStore256 => {
                &gemm_bf16_cluster_tma_store_f32::<256, 4, 8>::INFO
            }
            GemmBf16Variant::TmaStore256x2 => &gemm_bf16_tma_store_f32x2::<256, 4, 8>::INFO,
            GemmBf16Variant::PingPong128 => &gemm_bf16_pingpong_f32::<6, 8>::INFO,
        }
    }

    /// Tile of `C` per block: (rows, columns).
    pub fn tile(self) -> (u32, u32) {
        match self {
            GemmBf16Variant::TmaWgmma64 => (64, 64),
            GemmBf16Variant::TmaWgmma128 => (64, 128),
            GemmBf16Variant::WarpSpecialized128
            | GemmBf16Variant::Persistent128
            | GemmBf16Variant::PingPong128 => (128, 128),
            GemmBf16Variant::SetMaxNReg256x3
            | GemmBf16Variant::SetMaxNReg256x4
            | GemmBf16Variant::Persistent256
            | GemmBf16Variant::Cluster256
            | GemmBf16Variant::ClusterPersistent256
            | GemmBf16Variant::PersistentHilbert256
            | GemmBf16Variant::ClusterPersistentHilbert256
            | GemmBf16Variant::TmaStore256
            | GemmBf16Variant::ClusterTmaStore256
            | GemmBf16Variant::TmaStore256x2 => (128, 256),
        }
    }

    /// Threads per block.
    pub fn threads(self) -> u32 {
        match self {
            GemmBf16Variant::TmaWgmma64 | GemmBf16Variant::TmaWgmma128 => 128,
            _ => 384,
        }
    }

    /// The grid of tiles whose [`TileSchedule`] this variant reads for an `m × n` result, or `None` for the
    /// variants that compute their order in the kernel.
    pub fn schedule_grid(self, m: u32, n: u32) -> Option<(u32, u32)> {
        match self {
            GemmBf16Variant::PersistentHilbert256 => Some((m.div_ceil(128), n.div_ceil(256))),
            // Clusters take 256 × 256 tiles (two 128-row blocks).
            GemmBf16Variant::ClusterPersistentHilbert256 => {
                Some((m.div_ceil(256), n.div_ceil(256)))
            }
            _ => None,
        }
    }
}

/// Why [`gemm_bf16`] refused to run.
#[derive(Debug)]
pub enum GemmError {
    /// A buffer's length is not the matrix size.
    Length {
        /// `"a"`, `"b"` or `"c"`.
        operand: &'static str,
        /// Elements the sizes need.
        want: u64,
        /// Elements in the buffer.
        got: usize,
    },
    /// `k` breaks TMA's rule that row strides are multiples of 16 bytes (8 bf16), or is 0.
    K(u32),
    /// `n` breaks TMA's 16-byte stride rule for a `k × n` row-major `B` ([`gemm_bf16_kn`]) or a bf16 `D`
    /// ([`gemm_bf16_out_bf16`]).
    N(u32),
    /// `beta` is not 0 but no `C` was given ([`gemm_bf16_out_bf16`]).
    NoC(f32),
    /// The grid would need more blocks than a launch allows.
    TooLarge(u32, u32),
    /// A tile schedule that does not name every tile of its grid exactly once, does not cover the grid of
    /// the sizes, or was given to a kernel that reads none ([`TileSchedule`]).
    Schedule(String),
    /// The runtime refused (tensor maps, launch).
    Runtime(RuntimeError),
    /// An operand (`"a"`, `"b"`, `"c"`, `"d"`) belongs to another device than the one the call runs on.
    Device(&'static str),
}

impl fmt::Display for GemmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GemmError::Length { operand, want, got } => write!(
                f,
                "`{operand}` has {got} elements, the sizes need {want}"
            ),
            GemmError::K(k) => write!(
                f,
                "k = {k}: TMA needs rows of a multiple of 16 bytes, so k must be a positive multiple of 8"
            ),
            GemmError::N(n) => write!(
                f,
                "n = {n}: a k × n row-major B or a bf16 D needs rows of a multiple of 16 bytes, so n must be a multiple of 8"
            ),
            GemmError::NoC(beta) => write!(f, "beta = {beta} scales C, but no C was given"),
            GemmError::TooLarge(m, n) => write!(f, "{m} × {n} needs more than 2^31 - 1 blocks"),
            GemmError::Schedule(why) => write!(f, "tile schedule: {why}"),
            GemmError::Runtime(e) => write!(f, "{e}"),
            GemmError::Device(operand) => write!(
                f,
                "`{operand}` belongs to another device than the one the GEMM runs on"
            ),
        }
    }
}

impl std::error::Error for GemmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GemmError::Runtime(e) => Some(e),
            _ => None,
        }
    }
}

/// Every operand on `dev` (a buffer of another device is refused before anything runs, naming it).
pub(crate) fn same_device(
    dev: &Device,
    operands: &[(&'static str, &Device)],
) -> Result<(), GemmError> {
    match operands.iter().find(|(_, d)| d.id() != dev.id()) {
        Some((operand, _)) => Err(GemmError::Device(operand)),
        None => Ok(()),
    }
}

impl From<RuntimeError> for GemmError {
    fn from(e: RuntimeError) -> Self {
        GemmError::Runtime(e)
    }
}

/// `C = alpha · A · Bᵀ + beta · C` on the GPU or the emulator: `a` is `m × k` row-major bf16, `b` is `n × k`
/// row-major bf16 (each row of `b` is a column of the product's right operand), `c` is `m × n` row-major f32.
/// Any `m`, `n` ≥ 1 and `k` a positive multiple of 8; sizes and lengths are checked before anything runs.
/// With `beta = 0`, `C` is not read (BLAS semantics: it may hold anything, NaN included).
///
/// ```
/// use prism_kernels::gemm::{gemm_bf16, GemmBf16Variant};
/// use prism_runtime::{half::bf16, Device};
/// let dev = Device::auto()?;
/// let (m, n, k) = (70, 20, 24);
/// let a: Vec<bf16> = (0..m * k).map(|i| bf16::from_f32((i % 7) as f32 - 3.0)).collect();
/// let b: Vec<bf16> = (0..n * k).map(|i| bf16::from_f32((i % 5) as f32 * 0.5)).collect();
/// let (da, db) = (dev.htod(&a)?, dev.htod(&b)?);
/// let mut dc = dev.alloc_zeros::<f32>(m * n)?;
/// gemm_bf16(&dev, GemmBf16Variant::BEST, m as u32, n as u32, k as u32, 1.0, &da, &db, 0.0, &mut dc)?;
/// let c = dev.dtoh(&dc)?;
/// let want: f32 = (0..k).map(|x| a[5 * k + x].to_f32() * b[3 * k + x].to_f32()).sum();
/// assert_eq!(c[5 * n + 3], want);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16(
    dev: &Device,
    variant: GemmBf16Variant,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: &DeviceBuffer<bf16>,
    b: &DeviceBuffer<bf16>,
    beta: f32,
    c: &mut DeviceBuffer<f32>,
) -> Result<LaunchReport, GemmError> {
    gemm_bf16_with_schedule(dev, variant, None, m, n, k, alpha, a, b, beta, c)
}

/// [`gemm_bf16`] with the tile order of the table-driven variants given: `schedule` must cover
/// [`GemmBf16Variant::schedule_grid`]`(m, n)` (build it once per shape, e.g. [`TileSchedule::hilbert`]);
/// `None` builds a Hilbert schedule for this call. A schedule for a variant that reads none, or for another
/// grid, is [`GemmError::Schedule`] before anything launches.
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_with_schedule(
    dev: &Device,
    variant: GemmBf16Variant,
    schedule: Option<&TileSchedule>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: &DeviceBuffer<bf16>,
    b: &DeviceBuffer<bf16>,
    beta: f32,
    c: &mut DeviceBuffer<f32>,
) -> Result<LaunchReport, GemmError> {
    same_device(
        dev,
        &[("a", a.device()), ("b", b.device()), ("c", c.device())],
    )?;
    for (operand, rows, cols, got) in [
        ("a", m, k, a.len()),
        ("b", n, k, b.len()),
        ("c", m, n, c.len()),
    ] {
        let want = rows as u64 * cols as u64;
        if want != got as u64 {
            return Err(GemmError::Length { operand, want, got });
        }
    }
    if k == 0 || !k.is_multiple_of(8) {
        return Err(GemmError::K(k));
    }
    if m == 0 || n == 0 {
        if schedule.is_some() && variant.schedule_grid(m, n).is_none() {
            return Err(GemmError::Schedule(format!(
                "`{}` takes no tile schedule",
                variant.name()
            )));
        }
        return Ok(LaunchReport {
            backend: dev.backend(),
            emu: None,
        });
    }
    let (tm, tn) = variant.tile();
    let blocks = m.div_ceil(tm) as u64 * n.div_ceil(tn) as u64;
    if blocks > i32::MAX as u64 {
        return Err(GemmError::TooLarge(m, n));
    }
    let mut owned = None;
    let table = schedule::resolve(
        dev,
        variant.name(),
        variant.schedule_grid(m, n),
        schedule,
        &mut owned,
    )?;
    let ma = operand_map(a, m, k, tm, 64)?;
    let mb = operand_map(b, n, k, tn, 64)?;
    let blocks = match variant {
        // Persistent: one block per SM.
        GemmBf16Variant::Persistent128
        | GemmBf16Variant::Persistent256
        | GemmBf16Variant::PersistentHilbert256
        | GemmBf16Variant::TmaStore256
        | GemmBf16Variant::TmaStore256x2
        | GemmBf16Variant::PingPong128 => blocks.min(sms(dev)),
        // Clusters of two along M: pairs of 128-row tiles.
        GemmBf16Variant::Cluster256 => 2 * m.div_ceil(256) as u64 * n.div_ceil(tn) as u64,
        // Persistent clusters: as many pairs as can be resident at once.
        GemmBf16Variant::ClusterPersistent256
        | GemmBf16Variant::ClusterPersistentHilbert256
        | GemmBf16Variant::ClusterTmaStore256 => {
            let pairs = m.div_ceil(256) as u64 * n.div_ceil(tn) as u64;
            2 * pairs.min(resident_clusters(dev, variant.info()))
        }
        _ => blocks,
    };
    let dims = LaunchDims::new(blocks as u32, variant.threads());
    let r = match variant {
        GemmBf16Variant::TmaWgmma64 => {
            gemm_bf16_tma_wgmma::<64>::launch(dev, dims, &ma, &mb, m, n, k, alpha, beta, c)
        }
        GemmBf16Variant::TmaWgmma128 => {
            gemm_bf16_tma_wgmma::<128>::launch(dev, dims, &ma, &mb, m, n, k, alpha, beta, c)
        }
        GemmBf16Variant::WarpSpecialized128 => {
            gemm_bf16_ws::<128, 4, 0>::launch(dev, dims, &ma, &mb, m, n, k, alpha, beta, c)
        }
        GemmBf16Variant::SetMaxNReg256x3 => {
            gemm_bf16_ws::<256, 3, 1>::launch(dev, dims, &ma, &mb, m, n, k, alpha, beta, c)
        }
        GemmBf16Variant::SetMaxNReg256x4 => {
            gemm_bf16_ws::<256, 4, 1>::launch(dev, dims, &ma, &mb, m, n, k, alpha, beta, c)
        }
        GemmBf16Variant::Persistent128 => gemm_bf16_persistent::<128, 4, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, c, table,
        ),
        GemmBf16Variant::Persistent256 => gemm_bf16_persistent::<256, 4, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, c, table,
        ),
        GemmBf16Variant::Cluster256 => {
            gemm_bf16_cluster::<256, 4, 1>::launch(dev, dims, &ma, &mb, m, n, k, alpha, beta, c)
        }
        GemmBf16Variant::ClusterPersistent256 => gemm_bf16_cluster_persistent::<256, 4, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, c, table,
        ),
        GemmBf16Variant::PersistentHilbert256 => gemm_bf16_persistent::<256, 4, 0>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, c, table,
        ),
        GemmBf16Variant::ClusterPersistentHilbert256 => {
            gemm_bf16_cluster_persistent::<256, 4, 0>::launch(
                dev, dims, &ma, &mb, m, n, k, alpha, beta, c, table,
            )
        }
        // TMA stores need rows of a multiple of 16 bytes: otherwise the same tiles, stored from registers.
        GemmBf16Variant::TmaStore256 | GemmBf16Variant::TmaStore256x2 if !n.is_multiple_of(4) => {
            gemm_bf16_persistent::<256, 4, 8>::launch(
                dev, dims, &ma, &mb, m, n, k, alpha, beta, c, table,
            )
        }
        GemmBf16Variant::PingPong128 if !n.is_multiple_of(4) => {
            gemm_bf16_persistent::<128, 4, 8>::launch(
                dev, dims, &ma, &mb, m, n, k, alpha, beta, c, table,
            )
        }
        GemmBf16Variant::ClusterTmaStore256 if !n.is_multiple_of(4) => {
            gemm_bf16_cluster_persistent::<256, 4, 8>::launch(
                dev, dims, &ma, &mb, m, n, k, alpha, beta, c, table,
            )
        }
        GemmBf16Variant::TmaStore256
        | GemmBf16Variant::ClusterTmaStore256
        | GemmBf16Variant::TmaStore256x2
        | GemmBf16Variant::PingPong128 => {
            return launch_tma_store_f32(
                dev,
                variant,
                dims,
                (&ma, &mb),
                (m, n, k),
                alpha,
                beta,
                c,
                table,
            );
        }
    }?;
    Ok(r)
}

/// The f32 TMA-store rungs' launch: `D` is `C`'s buffer, written through a map that borrows it, so `C` is
/// read from a device copy (none is read with `beta = 0`, and an empty buffer stands in).
#[allow(clippy::too_many_arguments)]
fn launch_tma_store_f32(
    dev: &Device,
    variant: GemmBf16Variant,
    dims: LaunchDims,
    (ma, mb): (&TensorMap<'_, bf16, 2>, &TensorMap<'_, bf16, 2>),
    (m, n, k): (u32, u32, u32),
    alpha: f32,
    beta: f32,
    c: &mut DeviceBuffer<f32>,
    table: &DeviceBuffer<u32>,
) -> Result<LaunchReport, GemmError> {
    let c_old = if beta != 0.0 {
        dev.clone_dtod(c)?
    } else {
        dev.alloc_zeros::<f32>(0)?
    };
    let mut md = TensorMapMut::tiled(
        c,
        [n as u64, m as u64],
        &[n as u64 * 4],
        [32, 64],
        TensorSwizzle::B128,
    )?;
    let d = &mut md;
    Ok(match variant {
        GemmBf16Variant::TmaStore256 => gemm_bf16_tma_store_f32::<256, 4, 8>::launch(
            dev, dims, ma, mb, m, n, k, alpha, beta, &c_old, d, table,
        ),
        GemmBf16Variant::TmaStore256x2 => gemm_bf16_tma_store_f32x2::<256, 4, 8>::launch(
            dev, dims, ma, mb, m, n, k, alpha, beta, &c_old, d, table,
        ),
        GemmBf16Variant::PingPong128 => gemm_bf16_pingpong_f32::<6, 8>::launch(
            dev, dims, ma, mb, m, n, k, alpha, beta, &c_old, d, table,
        ),
        _ => gemm_bf16_cluster_tma_store_f32::<256, 4, 8>::launch(
            dev, dims, ma, mb, m, n, k, alpha, beta, &c_old, d, table,
        ),
    }?)
}

/// `C = alpha · A · B + beta · C` with `B` given `k × n` row-major (the layout of [`crate::sgemm::sgemm`]):
/// `a` is `m × k` row-major bf16, `b` `k × n` row-major bf16, `c` `m × n` row-major f32. Runs
/// [`gemm_bf16_tma_wgmma_kn`] (rung 1 with an MN-major B operand); any `m`, `k` ≥ 1 and `n` with `k` and `n`
/// multiples of 8 (TMA's 16-byte row strides). For speed, store B as `n × k` and call [`gemm_bf16`].
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_kn(
    dev: &Device,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: &DeviceBuffer<bf16>,
    b: &DeviceBuffer<bf16>,
    beta: f32,
    c: &mut DeviceBuffer<f32>,
) -> Result<LaunchReport, GemmError> {
    same_device(
        dev,
        &[("a", a.device()), ("b", b.device()), ("c", c.device())],
    )?;
    for (operand, rows, cols, got) in [
        ("a", m, k, a.len()),
        ("b", k, n, b.len()),
        ("c", m, n, c.len()),
    ] {
        let want = rows as u64 * cols as u64;
        if want != got as u64 {
            return Err(GemmError::Length { operand, want, got });
        }
    }
    if k == 0 || !k.is_multiple_of(8) {
        return Err(GemmError::K(k));
    }
    if !n.is_multiple_of(8) {
        return Err(GemmError::N(n));
    }
    if m == 0 || n == 0 {
        return Ok(LaunchReport {
            backend: dev.backend(),
            emu: None,
        });
    }
    let blocks = m.div_ceil(64) as u64 * n.div_ceil(64) as u64;
    if blocks > i32::MAX as u64 {
        return Err(GemmError::TooLarge(m, n));
    }
    let ma = operand_map(a, m, k, 64, 64)?;
    let mb = operand_map(b, k, n, 64, 64)?;
    let dims = LaunchDims::new(blocks as u32, 128);
    Ok(gemm_bf16_tma_wgmma_kn::<64>::launch(
        dev, dims, &ma, &mb, m, n, k, alpha, beta, c,
    )?)
}
