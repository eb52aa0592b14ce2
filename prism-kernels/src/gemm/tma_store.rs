//! Rung 7 of the bf16 GEMM ladder: `D = alpha · A · Bᵀ + beta · C` with a **bf16** `D`, written back through
//! shared memory and TMA stores (the epilogue of the fastest published Hopper GEMMs), on the persistent,
//! warp-specialized mainloop of rung 5.

use super::{schedule, GemmError, TileSchedule};
use prism_macros::{prism_device, prism_kernel};
use prism_runtime::half::bf16;
use prism_runtime::{Device, DeviceBuffer, LaunchDims, LaunchReport, TensorMapMut, TensorSwizzle};

/// Rung 7: rung 5 ([`super::gemm_bf16_persistent`]: persistent grid, one ring across a block's tiles,
/// setmaxnreg; tiles in [`super::tile_at`]`::<GROUP_M>` order, grouped or with `GROUP_M` = 0 from the table
/// `sched`) with a bf16 result. Each consumer warpgroup converts its 64 × `BN` accumulator tile to bf16, 64
/// columns at a time, into its own 64 × 64 shared box in the 128-byte swizzle (the layout TMA reads) with
/// `stmatrix_bf16`, and one of its threads stores the box with `tma_store`: TMA clips the box at `D`'s
/// edges, so ragged sizes need no guards on the store. `beta ≠ 0` reads the old values from `c` (guarded
/// loads; `c` may be any buffer of `m × n` bf16, `d`'s own included only through a separate handle on the
/// host). Launch `min(tiles, SMs)` blocks of 384 threads; `a` maps `A` with box 64 × 128, `b` maps `B` with
/// box 64 × `BN`, `d` maps `D` with box 64 × 64, all with 128-byte swizzle.
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 384,
    instances = [(256, 4, 8), (256, 4, 0)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_tma_store<const BN: u32, const STAGES: u32, const GROUP_M: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    c: *const bf16,
    d: TensorMapMut<bf16, 2>,
    sched: *const u32,
) {
    let tiles_m: u32 = (m + 127) / 128;
    let tiles_n: u32 = (n + BN - 1) / BN;
    let tiles: u32 = tiles_m * tiles_n;
    let k_tiles: u32 = (k + 63) / 64;
    let nblk: u32 = grid_dim();
    #[at(block[1])]
    let blk: u32 = id();
    #[at(block[1])]
    let iters: u32 = (tiles + nblk - 1 - blk) / nblk; // 0 when blk >= tiles (blk < nblk)
    group(block[1], || {
        let sa: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
        let sb: Shared<[bf16; STAGES * BN * 64], Swizzle128>;
        // Each consumer warpgroup's epilogue box (handed to it whole: `|x| x`).
        let e1: Shared<[bf16; 64 * 64], Swizzle128>;
        let e2: Shared<[bf16; 64 * 64], Swizzle128>;
        partition(
            e1,
            thread[128],
            |x| x,
            |e1_w| {
                partition(
                    e2,
                    thread[128],
                    |x| x,
                    |e2_w| {
                        ring(STAGES, (sa, sb), |r| match split(warpgroup) {
                            1 => {
                                set_max_regs(40);
                                fill_tiles::<BN, GROUP_M>(
                                    r, a, b, sched, blk, nblk, iters, tiles_m, tiles_n, k_tiles,
                                );
                            }
                            1 => {
                                set_max_regs(232);
                                consume_tiles_bf16::<0, { BN / 2 }, GROUP_M>(
                                    r, e1_w, d, c, sched, blk, nblk, iters, tiles_m, tiles_n,
                                    k_tiles, 128, 0, m, n, alpha, beta,
                                );
                            }
                            1 => {
                                set_max_regs(232);
                                consume_tiles_bf16::<1, { BN / 2 }, GROUP_M>(
                                    r, e2_w, d, c, sched, blk, nblk, iters, tiles_m, tiles_n,
                                    k_tiles, 128, 0, m, n, alpha, beta,
                                );
                            }
                        });
                    },
                );
            },
        );
    });
}

/// [`super::consume_tiles_bf16`] with two boxes, `e0` and `e1`, taking turns (boxes `2i` and `2i + 1` of the
/// fragment, 64 columns each): a box is written while the other's TMA store still reads its predecessor, as
/// CUTLASS's two-stage epilogue (`StagesD = 2`); `N` a multiple of 64.
#[prism_device(requires(thread[128]))]
#[allow(clippy::too_many_arguments)]
pub fn consume_tiles_bf16_2<const HALF: u32, const N: u32, const GROUP_M: u32>(
    r: Ring<(bf16, bf16)>,
    e0: SharedMut<[bf16; 64 * 64], Swizzle128>,
    e1: SharedMut<[bf16; 64 * 64], Swizzle128>,
    d: TensorMapMut<bf16, 2>,
    c: *const bf16,
    sched: *const u32,
    first: u32,
    stride: u32,
    iters: u32,
    tiles_m: u32,
    tiles_n: u32,
    k_tiles: u32,
    m: u32,
    n: u32,
    alpha: f32,
    beta: f32,
) {
    #[at(thread[1])]
    let mut acc = [0.0f32; N];
    for it in 0..iters {
        let tile: u32 = tile_at::<GROUP_M>(first + it * stride, tiles_m, tiles_n, sched);
        drain_k_tiles::<HALF, N>(r, &mut acc, it * k_tiles, k_tiles);
        let row0: u32 = (tile >> 16) * 128 + 64 * HALF;
        let col0: u32 = (tile & 65535) * (2 * N);
        for i in 0..N / 64 {
            scale_fragment_box::<bf16, N, 64>(&mut acc, 2 * i, row0, col0, m, n, alpha, beta, c);
            stmatrix_bf16(e0, &acc, 2 * i);
            match split(thread) {
                1 => {
                    tma_store(d, e0, col0 + 128 * i, row0);
                }
            }
            scale_fragment_box::<bf16, N, 64>(
                &mut acc,
                2 * i + 1,
                row0,
                col0,
                m,
                n,
                alpha,
                beta,
                c,
            );
            stmatrix_bf16(e1, &acc, 2 * i + 1);
            match split(thread) {
                1 => {
                    tma_store(d, e1, col0 + 128 * i + 64, row0);
                }
            }
        }
    }
}

/// Rung 7 with a two-stage epilogue: [`gemm_bf16_tma_store`] whose consumers store through two boxes each
/// ([`consume_tiles_bf16_2`]); 32 KiB of boxes beside the 4-slot ring. Launch and maps as for
/// [`gemm_bf16_tma_store`].
#[prism_kernel(
    requires(grid[1], block[1], warpgroup),
    threads = 384,
    instances = [(256, 4, 8)]
)]
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_tma_store_x2<const BN: u32, const STAGES: u32, const GROUP_M: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
    c: *const bf16,
    d: TensorMapMut<bf16, 2>,
    sched: *const u32,
) {
    let tiles_m: u32 = (m + 127) / 128;
    let tiles_n: u32 = (n + BN - 1) / BN;
    let tiles: u32 = tiles_m * tiles_n;
    let k_tiles: u32 = (k + 63) / 64;
    let nblk: u32 = grid_dim();
    #[at(block[1])]
    let blk: u32 = id();
    #[at(block[1])]
    let iters: u32 = (tiles + nblk - 1 - blk) / nblk;
    group(block[1], || {
        let sa: Shared<[bf16; STAGES * 128 * 64], Swizzle128>;
        let sb: Shared<[bf16; STAGES * BN * 64], Swizzle128>;
        // Two boxes for each consumer warpgroup (handed to it whole: `|x| x`).
        let e1: Shared<[bf16; 64 * 64], Swizzle128>;
        let f1: Shared<[bf16; 64 * 64], Swizzle128>;
        let e2: Shared<[bf16; 64 * 64], Swizzle128>;
        let f2: Shared<[bf16; 64 * 64], Swizzle128>;
        partition(
            e1,
            thread[128],
            |x| x,
            |e1_w| {
                partition(
                    f1,
                    thread[128],
                    |x| x,
                    |f1_w| {
                        partition(
                            e2,
                            thread[128],
                            |x| x,
                            |e2_w| {
                                partition(
                                    f2,
                                    thread[128],
                                    |x| x,
                                    |f2_w| {
                                        ring(STAGES, (sa, sb), |r| match split(warpgroup) {
                                            1 => {
                                                set_max_regs(40);
                                                fill_tiles::<BN, GROUP_M>(
                                                    r, a, b, sched, blk, nblk, iters, tiles_m,
                                                    tiles_n, k_tiles,
                                                );
                                            }
                                            1 => {
                                                set_max_regs(232);
                                                consume_tiles_bf16_2::<0, { BN / 2 }, GROUP_M>(
                                                    r, e1_w, f1_w, d, c, sched, blk, nblk, iters,
                                                    tiles_m, tiles_n, k_tiles, m, n, alpha, beta,
                                                );
                                            }
                                            1 => {
                                                set_max_regs(232);
                                                consume_tiles_bf16_2::<1, { BN / 2 }, GROUP_M>(
                                                    r, e2_w, f2_w, d, c, sched, blk, nblk, iters,
                                                    tiles_m, tiles_n, k_tiles, m, n, alpha, beta,
                                                );
                                            }
                                        });
                                    },
                                );
                            },
                        );
                    },
                );
            },
        );
    });
}

/// `D = alpha · A · Bᵀ + beta · C` with a **bf16** result, on rung 7 ([`gemm_bf16_tma_store`]): `a` is
/// `m × k` row-major bf16, `b` is `n × k` row-major bf16 (as for [`super::gemm_bf16`]), `c` (read only when
/// `beta ≠ 0`) and `d` are `m × n` row-major bf16; products accumulate in f32 and are rounded once. Any `m`,
/// `n`, `k` ≥ 1 with `k` and `n` multiples of 8 (TMA's 16-byte row strides for `A`, `B` and `D`); `c = None`
/// needs `beta = 0`. Sizes, lengths and the `c`/`beta` pairing are checked before anything runs.
///
/// ```
/// use prism_kernels::gemm::gemm_bf16_out_bf16;
/// use prism_runtime::{half::bf16, Device};
/// let dev = Device::auto()?;
/// let (m, n, k) = (70, 24, 32);
/// let a: Vec<bf16> = (0..m * k).map(|i| bf16::from_f32((i % 7) as f32 - 3.0)).collect();
/// let b: Vec<bf16> = (0..n * k).map(|i| bf16::from_f32((i % 5) as f32 * 0.5)).collect();
/// let (da, db) = (dev.htod(&a)?, dev.htod(&b)?);
/// let mut dd = dev.alloc_zeros::<bf16>(m * n)?;
/// gemm_bf16_out_bf16(&dev, m as u32, n as u32, k as u32, 1.0, &da, &db, 0.0, None, &mut dd)?;
/// let d = dev.dtoh(&dd)?;
/// let want: f32 = (0..k).map(|x| a[5 * k + x].to_f32() * b[3 * k + x].to_f32()).sum();
/// assert_eq!(d[5 * n + 3], bf16::from_f32(want));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_out_bf16(
    dev: &Device,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: &DeviceBuffer<bf16>,
    b: &DeviceBuffer<bf16>,
    beta: f32,
    c: Option<&DeviceBuffer<bf16>>,
    d: &mut DeviceBuffer<bf16>,
) -> Result<LaunchReport, GemmError> {
    gemm_bf16_out_bf16_with(
        dev,
        GemmBf16OutVariant::BEST,
        m,
        n,
        k,
        alpha,
        a,
        b,
        beta,
        c,
        d,
    )
}

/// A kernel of the bf16-output ladder (rung 7 and above).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmBf16OutVariant {
    /// Rung 7, [`gemm_bf16_tma_store`]`<256, 4, 8>`: persistent blocks, 128 × 256 tiles, TMA-store epilogue.
    TmaStore256,
    /// Rungs 5 + 6 + 7, [`super::gemm_bf16_cluster_tma_store`]`<256, 4, 8>`: persistent 2-block clusters
    /// multicasting B, 128 × 256 tiles per block, TMA-store epilogue.
    ClusterTmaStore256,
    /// Rungs 5 + 6 + 7 in space-filling order, [`super::gemm_bf16_cluster_tma_store`]`<256, 4, 0>`: as
    /// `ClusterTmaStore256` with the 256 × 256 cluster tiles taken from a [`TileSchedule`] (a generalized
    /// Hilbert curve unless one is given).
    ClusterTmaStoreHilbert256,
    /// Rungs 5 + 7 in space-filling order, [`gemm_bf16_tma_store`]`<256, 4, 0>`: as `TmaStore256` with the
    /// 128 × 256 tiles taken from a [`TileSchedule`].
    TmaStoreHilbert256,
    /// Rung 7 with the whole tile staged at once, [`super::gemm_bf16_tma_store_wide`]`<3, 8>`: each
    /// consumer's four 64 × 64 boxes written together and stored behind one barrier, a 3-slot ring.
    TmaStoreWide256,
    /// Rung 7 with a two-stage epilogue, [`gemm_bf16_tma_store_x2`]`<256, 4, 8>`: `TmaStore256` with two
    /// 64 × 64 boxes per consumer taking turns (a box is written while the other's store reads; one barrier
    /// per box instead of two).
    TmaStore256x2,
    /// Rung 8, [`super::gemm_bf16_pingpong`]`<6, 8>`: the ping-pong schedule, each consumer warpgroup a
    /// whole 128 × 128 tile, the two taking turns on a 6-slot ring (one's epilogue under the other's wgmmas).
    PingPong128,
    /// Rungs 8 + 6, [`super::gemm_bf16_cluster_pingpong`]`<6, 8>`: the ping-pong schedule in 2-block clusters
    /// multicasting the 128 × 64 B box (256 × 128 cluster tiles).
    ClusterPingPong128,
}

impl GemmBf16OutVariant {
    /// Every variant, in ladder order.
    pub const ALL: [GemmBf16OutVariant; 8] = [
        GemmBf16OutVariant::TmaStore256,
        GemmBf16OutVariant::TmaStoreHilbert256,
        GemmBf16OutVariant::TmaStoreWide256,
        GemmBf16OutVariant::ClusterTmaStore256,
        GemmBf16OutVariant::ClusterTmaStoreHilbert256,
        GemmBf16OutVariant::TmaStore256x2,
        GemmBf16OutVariant::PingPong128,
        GemmBf16OutVariant::ClusterPingPong128,
    ];
    /// The variant [`gemm_bf16_out_bf16`] runs: the fastest or within 2 % of it at every shape of
    /// `benches/gemm_bf16.rs` on an H200 (2026-11-27: 0.95–1.02× cuBLAS bf16 at 4096³, 0.98–1.01× at 8192³;
    /// docs/BENCHMARKS.md).
    pub const BEST: GemmBf16OutVariant = GemmBf16OutVariant::TmaStore256;

    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            GemmBf16OutVariant::TmaStore256 => "7 persistent tma-store 128x256 x4",
            GemmBf16OutVariant::ClusterTmaStore256 => {
                "5+6+7 persistent cluster2 tma-store 128x256 x4"
            }
            GemmBf16OutVariant::ClusterTmaStoreHilbert256 => {
                "5+6+7 persistent cluster2 hilbert tma-store 128x256 x4"
            }
            GemmBf16OutVariant::TmaStoreHilbert256 => "5+7 persistent hilbert tma-store 128x256 x4",
            GemmBf16OutVariant::TmaStoreWide256 => "7 persistent tma-store 4 boxes 128x256 x3",
            GemmBf16OutVariant::TmaStore256x2 => "7 persistent tma-store 2-stage 128x256 x4",
            GemmBf16OutVariant::PingPong128 => "8 persistent ping-pong 128x128 x6",
            GemmBf16OutVariant::ClusterPingPong128 => {
                "8+6 persistent cluster2 ping-pong 128x128 x6"
            }
        }
    }

    /// The kernel instance this variant launches.
    pub fn info(self) -> &'static prism_runtime::KernelInfo {
        match self {
            GemmBf16OutVariant::TmaStore256 => &gemm_bf16_tma_store::<256, 4, 8>::INFO,
            GemmBf16OutVariant::ClusterTmaStore256 => {
                &super::gemm_bf16_cluster_tma_store::<256, 4, 8>::INFO
            }
            GemmBf16OutVariant::ClusterTmaStoreHilbert256 => {
                &super::gemm_bf16_cluster_tma_store::<256, 4, 0>::INFO
            }
            GemmBf16OutVariant::TmaStoreHilbert256 => &gemm_bf16_tma_store::<256, 4, 0>::INFO,
            GemmBf16OutVariant::TmaStoreWide256 => &super::gemm_bf16_tma_store_wide::<3, 8>::INFO,
            GemmBf16OutVariant::TmaStore256x2 => &gemm_bf16_tma_store_x2::<256, 4, 8>::INFO,
            GemmBf16OutVariant::PingPong128 => &super::gemm_bf16_pingpong::<6, 8>::INFO,
            GemmBf16OutVariant::ClusterPingPong128 => {
                &super::gemm_bf16_cluster_pingpong::<6, 8>::INFO
            }
        }
    }

    /// The grid of tiles whose [`TileSchedule`] this variant reads for an `m × n` result (128 × 256 block
    /// tiles, 256 × 256 cluster tiles), or `None` for the variants that compute their order in the kernel.
    pub fn schedule_grid(self, m: u32, n: u32) -> Option<(u32, u32)> {
        match self {
            GemmBf16OutVariant::TmaStoreHilbert256 => Some((m.div_ceil(128), n.div_ceil(256))),
            GemmBf16OutVariant::ClusterTmaStoreHilbert256 => {
                Some((m.div_ceil(256), n.div_ceil(256)))
            }
            _ => None,
        }
    }
}

/// [`gemm_bf16_out_bf16`] with the kernel chosen by `variant`; the same arguments and checks.
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_out_bf16_with(
    dev: &Device,
    variant: GemmBf16OutVariant,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: &DeviceBuffer<bf16>,
    b: &DeviceBuffer<bf16>,
    beta: f32,
    c: Option<&DeviceBuffer<bf16>>,
    d: &mut DeviceBuffer<bf16>,
) -> Result<LaunchReport, GemmError> {
    gemm_bf16_out_bf16_with_schedule(dev, variant, None, m, n, k, alpha, a, b, beta, c, d)
}

/// [`gemm_bf16_out_bf16_with`] with the tile order of the table-driven variants given: `schedule` must cover
/// [`GemmBf16OutVariant::schedule_grid`]`(m, n)`; `None` builds a Hilbert schedule for this call. A
/// schedule for a variant that reads none, or for another grid, is [`GemmError::Schedule`] before anything
/// launches.
#[allow(clippy::too_many_arguments)]
pub fn gemm_bf16_out_bf16_with_schedule(
    dev: &Device,
    variant: GemmBf16OutVariant,
    schedule: Option<&TileSchedule>,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    a: &DeviceBuffer<bf16>,
    b: &DeviceBuffer<bf16>,
    beta: f32,
    c: Option<&DeviceBuffer<bf16>>,
    d: &mut DeviceBuffer<bf16>,
) -> Result<LaunchReport, GemmError> {
    let mut lengths = vec![
        ("a", m, k, a.len()),
        ("b", n, k, b.len()),
        ("d", m, n, d.len()),
    ];
    let mut devices = vec![("a", a.device()), ("b", b.device()), ("d", d.device())];
    if let Some(c) = c {
        lengths.push(("c", m, n, c.len()));
        devices.push(("c", c.device()));
    }
    super::same_device(dev, &devices)?;
    for (operand, rows, cols, got) in lengths {
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
    if c.is_none() && beta != 0.0 {
        return Err(GemmError::NoC(beta));
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
    // Tile width: 128 columns for the ping-pong rung (a consumer's tile), 256 for the others (a block's).
    let bn = match variant {
        GemmBf16OutVariant::PingPong128 | GemmBf16OutVariant::ClusterPingPong128 => 128,
        _ => 256,
    };
    let tiles = m.div_ceil(128) as u64 * n.div_ceil(bn) as u64;
    if tiles > i32::MAX as u64 {
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
    let ma = super::operand_map(a, m, k, 128, 64)?;
    let mb = super::operand_map(b, n, k, bn, 64)?;
    // With beta = 0 the kernel never reads `c`: any bf16 buffer stands in.
    let c = c.unwrap_or(a);
    let mut md = TensorMapMut::tiled(
        d,
        [n as u64, m as u64],
        &[n as u64 * 2],
        [64, 64],
        TensorSwizzle::B128,
    )?;
    // Persistent: one block per SM; clusters: as many pairs as can be resident at once.
    let grid = match variant {
        GemmBf16OutVariant::TmaStore256
        | GemmBf16OutVariant::TmaStoreHilbert256
        | GemmBf16OutVariant::TmaStoreWide256
        | GemmBf16OutVariant::TmaStore256x2
        | GemmBf16OutVariant::PingPong128 => tiles.min(super::sms(dev)),
        GemmBf16OutVariant::ClusterTmaStore256
        | GemmBf16OutVariant::ClusterTmaStoreHilbert256
        | GemmBf16OutVariant::ClusterPingPong128 => {
            let pairs = m.div_ceil(256) as u64 * n.div_ceil(bn) as u64;
            2 * pairs.min(super::resident_clusters(dev, variant.info()))
        }
    };
    let dims = LaunchDims::new(grid as u32, 384);
    Ok(match variant {
        GemmBf16OutVariant::TmaStore256 => gemm_bf16_tma_store::<256, 4, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, c, &mut md, table,
        ),
        GemmBf16OutVariant::TmaStoreHilbert256 => gemm_bf16_tma_store::<256, 4, 0>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, c, &mut md, table,
        ),
        GemmBf16OutVariant::TmaStoreWide256 => super::gemm_bf16_tma_store_wide::<3, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, c, &mut md, table,
        ),
        GemmBf16OutVariant::TmaStore256x2 => gemm_bf16_tma_store_x2::<256, 4, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, c, &mut md, table,
        ),
        GemmBf16OutVariant::PingPong128 => super::gemm_bf16_pingpong::<6, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, c, &mut md, table,
        ),
        GemmBf16OutVariant::ClusterPingPong128 => {
            super::gemm_bf16_cluster_pingpong::<6, 8>::launch(
                dev, dims, &ma, &mb, m, n, k, alpha, beta, c, &mut md, table,
            )
        }
        GemmBf16OutVariant::ClusterTmaStore256 => {
            super::gemm_bf16_cluster_tma_store::<256, 4, 8>::launch(
                dev, dims, &ma, &mb, m, n, k, alpha, beta, c, &mut md, table,
            )
        }
        GemmBf16OutVariant::ClusterTmaStoreHilbert256 => {
            super::gemm_bf16_cluster_tma_store::<256, 4, 0>::launch(
                dev, dims, &ma, &mb, m, n, k, alpha, beta, c, &mut md, table,
            )
        }
    }?)
}
