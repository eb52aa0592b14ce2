//! The Hopper bf16 GEMM ladder (`prism_kernels::gemm`) through its host API, on the emulator (or the GPU
//! with `PRISM_BACKEND=gpu`), against an f64 CPU reference: random bf16 inputs in [-1, 1) (never zeros),
//! `C` pre-filled with random values and `beta != 0`, every element checked, at tile multiples with several
//! tiles and k-tiles and at ragged sizes in every dimension. Bad sizes and maps are error values.

mod e2e_util;

use e2e_util::gemm::{BLayout, Problem};
use prism::kernels::gemm::{gemm_bf16, gemm_bf16_tma_wgmma, GemmBf16Variant, GemmError};
use prism::prism_kernel;
use prism::runtime::half::bf16;
use prism::runtime::{DeviceBuffer, LaunchDims, RuntimeError, TensorMap, TensorSwizzle};

const ALPHA: f32 = 1.5;
const BETA: f32 = -0.5;

fn run(variant: GemmBf16Variant, m: usize, n: usize, k: usize, seed: u64) {
    let dev = e2e_util::device();
    let p = Problem::new((m, n, k), BLayout::NByK, seed);
    let (da, db, mut dc) = p.upload(&dev);
    gemm_bf16(
        &dev, variant, m as u32, n as u32, k as u32, ALPHA, &da, &db, BETA, &mut dc,
    )
    .unwrap_or_else(|e| panic!("{} at {m}×{n}×{k}: {e}", variant.name()));
    let bad = p.wrong_f32(ALPHA, BETA, &dev.dtoh(&dc).unwrap());
    assert!(
        bad.is_empty(),
        "{} at {m}×{n}×{k}: {} wrong elements, first {:?}",
        variant.name(),
        bad.len(),
        &bad[..bad.len().min(4)]
    );
}

#[test]
fn every_rung_at_tile_multiples() {
    for v in GemmBf16Variant::ALL {
        let (tm, tn) = v.tile();
        run(v, 2 * tm as usize, 2 * tn as usize, 192, 1);
    }
}

#[test]
fn every_rung_at_ragged_sizes() {
    for v in GemmBf16Variant::ALL {
        run(v, 200, 328, 136, 2);
        run(v, 1, 9, 8, 3);
    }
}

#[test]
fn bad_sizes_are_errors_before_launch() {
    let dev = e2e_util::device();
    let a = dev.alloc_zeros::<bf16>(64 * 24).unwrap();
    let b = dev.alloc_zeros::<bf16>(64 * 24).unwrap();
    let mut c = dev.alloc_zeros::<f32>(64 * 64).unwrap();
    let v = GemmBf16Variant::BEST;
    assert!(matches!(
        gemm_bf16(&dev, v, 64, 64, 20, 1.0, &a, &b, 0.0, &mut c),
        Err(GemmError::Length { operand: "a", .. })
    ));
    let a12 = dev.alloc_zeros::<bf16>(64 * 12).unwrap();
    let b12 = dev.alloc_zeros::<bf16>(64 * 12).unwrap();
    let e = gemm_bf16(&dev, v, 64, 64, 12, 1.0, &a12, &b12, 0.0, &mut c).unwrap_err();
    assert!(matches!(e, GemmError::K(12)), "{e}");
    assert!(e.to_string().contains("multiple of 8"), "{e}");
    let mut c_small = dev.alloc_zeros::<f32>(10).unwrap();
    assert!(matches!(
        gemm_bf16(&dev, v, 64, 64, 24, 1.0, &a, &b, 0.0, &mut c_small),
        Err(GemmError::Length { operand: "c", .. })
    ));
}

/// The typed launcher refuses a tensor map whose box differs from the one the kernel's `tma_load` fills
/// (the mbarrier would expect other bytes than TMA delivers).
#[test]
fn a_map_with_another_box_is_refused() {
    let dev = e2e_util::device();
    let a = dev.alloc_zeros::<bf16>(64 * 64).unwrap();
    let b = dev.alloc_zeros::<bf16>(64 * 64).unwrap();
    let mut c = dev.alloc_zeros::<f32>(64 * 64).unwrap();
    let ma = TensorMap::row_major_2d(&a, 64, 64, 32, 64, TensorSwizzle::B128).unwrap();
    let mb = TensorMap::row_major_2d(&b, 64, 64, 64, 64, TensorSwizzle::B128).unwrap();
    let r = gemm_bf16_tma_wgmma::<64>::launch(
        &dev,
        LaunchDims::new(1, 128),
        &ma,
        &mb,
        64,
        64,
        64,
        1.0,
        0.0,
        &mut c,
    );
    match r {
        Err(RuntimeError::BadArgs(m)) => assert!(
            m.contains("a box of 64 rows × 64 columns")
                && m.contains("the map has box_dims [64, 32] with TensorSwizzle::B128"),
            "{m}"
        ),
        other => panic!("expected BadArgs, got {other:?}"),
    }
    let mb64 = TensorMap::row_major_2d(&b, 64, 64, 64, 64, TensorSwizzle::B64);
    assert!(
        mb64.is_err(),
        "a 128-byte box row is wider than the 64-byte swizzle span"
    );
}

// docs/GUIDE.md §7: the guide's Hopper example (as rustfmt lays it out) compiles and computes what it says.
#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
pub fn tile_gemm(a: TensorMap<bf16, 2>, b: TensorMap<bf16, 2>, c: *mut f32, n: u32, k: u32) {
    let tiles_n: u32 = n / 64;
    #[at(block[1])]
    let row0: u32 = (id() / tiles_n) * 64;
    #[at(block[1])]
    let col0: u32 = (id() % tiles_n) * 64;
    partition(
        c,
        block[1],
        |x| row0 * n + col0 + x,
        |c_blk| {
            group(block[1], || {
                let sa: Shared<[bf16; 64 * 64], Swizzle128>; // 64 rows of 64 bf16 (128 bytes): one TMA box
                let sb: Shared<[bf16; 64 * 64], Swizzle128>;
                #[at(thread[1])]
                let mut acc = [0.0f32; 32]; // m64n64 accumulator: 32 f32 per thread
                for kt in 0..k / 64 {
                    async_(sa, |sa_async| {
                        async_(sb, |sb_async| match split(thread) {
                            1 => {
                                tma_load(sa_async, a, kt * 64, row0); // coordinates: (k, row), innermost first
                                tma_load(sb_async, b, kt * 64, col0);
                            }
                        });
                    }); // the block waits here for both tiles
                    for kk in 0..4 {
                        wgmma_bf16(&mut acc, sa, kk * 16, sb, kk * 16); // one warpgroup collective per k16
                    }
                }
                #[at(thread[1])]
                let t: u32 = id();
                partition(
                    c_blk,
                    thread[1],
                    |r, q| (16 * (t / 32) + (t % 32) / 4 + r) * n + 2 * (t % 4) + q,
                    |c_t| {
                        group(thread[1], || {
                            for i in 0..32 {
                                c_t[(8 * ((i / 2) % 2), 8 * (i / 4) + i % 2)] = acc[i];
                            }
                        });
                    },
                );
            });
        },
    );
}

#[test]
fn the_guides_tile_gemm() {
    let dev = e2e_util::device();
    let (m, n, k) = (128usize, 192usize, 128usize);
    let p = Problem::new((m, n, k), BLayout::NByK, 77);
    let (da, db, _) = p.upload(&dev);
    let mut c = dev.alloc_zeros::<f32>(m * n).unwrap();
    let (ma, mb) = p.maps(&da, &db, 64, 64);
    let blocks = ((m / 64) * (n / 64)) as u32;
    tile_gemm::launch(
        &dev,
        LaunchDims::new(blocks, 128),
        &ma,
        &mb,
        &mut c,
        n as u32,
        k as u32,
    )
    .unwrap();
    // C = A·Bᵀ (alpha 1, beta 0).
    let bad = p.wrong_f32(1.0, 0.0, &dev.dtoh(&c).unwrap());
    assert!(
        bad.is_empty(),
        "wrong elements, first {:?}",
        &bad[..bad.len().min(4)]
    );
}

/// A TMA store through the typed launcher: `TensorMapMut` from `&mut DeviceBuffer`; a read-only map is
/// refused before anything runs.
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 256)]
pub fn store_rows(out: TensorMapMut<f32, 1>, scale: f32) {
    #[at(block[1])]
    let b: u32 = id();
    group(block[1], || {
        let tile: Shared<[f32; 256]>;
        #[at(thread[1])]
        let t: u32 = id();
        partition(
            tile,
            thread[1],
            |x| t + x,
            |tile_t| {
                group(thread[1], || {
                    tile_t[0] = scale * (b * 256 + t) as f32;
                });
            },
        );
        match split(thread) {
            1 => {
                tma_store(out, tile, b * 256);
            }
        }
    });
}

#[test]
fn tma_store_through_the_typed_launcher() {
    use prism::runtime::TensorMapMut;
    let dev = e2e_util::device();
    let n = 1000usize;
    let mut out = dev.htod(&vec![-1.0f32; n]).unwrap();
    {
        let mut map =
            TensorMapMut::tiled(&mut out, [n as u64], &[], [256], TensorSwizzle::None).unwrap();
        store_rows::launch(&dev, LaunchDims::new(4, 256), &mut map, 0.25).unwrap();
    }
    let got = dev.dtoh(&out).unwrap();
    for (i, v) in got.iter().enumerate() {
        assert_eq!(*v, 0.25 * i as f32, "element {i}");
    }
    // Through the raw launch, a read-only map for the TensorMapMut parameter is refused.
    let ro = TensorMap::tiled(&out, [n as u64], &[], [256], TensorSwizzle::None).unwrap();
    // SAFETY: the launch is refused by the argument check before anything runs.
    let r = unsafe {
        dev.launch(
            &store_rows::INFO,
            LaunchDims::new(4, 256),
            &mut [ro.as_arg(), 0.25f32.into()],
        )
    };
    match r {
        Err(RuntimeError::BadArgs(m)) => assert!(m.contains("TensorMapMut"), "{m}"),
        other => panic!("expected BadArgs, got {other:?}"),
    }
}

/// Rung 5 with fewer blocks than tiles: each block runs several tiles through one ring (steps continue
/// across tiles), in grouped order, and every element is still right.
#[test]
fn persistent_blocks_run_several_tiles() {
    use prism::kernels::gemm::gemm_bf16_persistent;
    let dev = e2e_util::device();
    let (m, n, k) = (300usize, 328usize, 136usize); // 3 × 3 tiles of 128 × 128
    let p = Problem::new((m, n, k), BLayout::NByK, 5);
    let (da, db, mut dc) = p.upload(&dev);
    let (ma, mb) = p.maps(&da, &db, 128, 128);
    // The grouped instance computes its order: its table is empty (never read).
    let no_table = dev.alloc_zeros::<u32>(0).unwrap();
    for blocks in [2u32, 4] {
        dev.copy_htod(&p.c, &mut dc).unwrap();
        gemm_bf16_persistent::<128, 4, 8>::launch(
            &dev,
            LaunchDims::new(blocks, 384),
            &ma,
            &mb,
            m as u32,
            n as u32,
            k as u32,
            ALPHA,
            BETA,
            &mut dc,
            &no_table,
        )
        .unwrap();
        let bad = p.wrong_f32(ALPHA, BETA, &dev.dtoh(&dc).unwrap());
        assert!(
            bad.is_empty(),
            "{blocks} blocks: wrong elements {:?}",
            &bad[..bad.len().min(4)]
        );
    }
}

/// `B` given `k × n` row-major (`gemm_bf16_kn`: an MN-major wgmma operand), every element checked.
#[test]
fn b_given_k_by_n_row_major() {
    use prism::kernels::gemm::gemm_bf16_kn;
    let dev = e2e_util::device();
    for ((m, n, k), seed) in [((128usize, 192usize, 128usize), 8u64), ((200, 328, 136), 9)] {
        let p = Problem::new((m, n, k), BLayout::KByN, seed);
        let (da, db, mut dc) = p.upload(&dev);
        gemm_bf16_kn(
            &dev, m as u32, n as u32, k as u32, ALPHA, &da, &db, BETA, &mut dc,
        )
        .unwrap();
        let bad = p.wrong_f32(ALPHA, BETA, &dev.dtoh(&dc).unwrap());
        assert!(
            bad.is_empty(),
            "{m}x{n}x{k}: wrong elements {:?}",
            &bad[..bad.len().min(4)]
        );
    }
    let a = dev.alloc_zeros::<bf16>(64 * 64).unwrap();
    let b = dev.alloc_zeros::<bf16>(64 * 60).unwrap();
    let mut c = dev.alloc_zeros::<f32>(64 * 60).unwrap();
    let e = gemm_bf16_kn(&dev, 64, 60, 64, 1.0, &a, &b, 0.0, &mut c).unwrap_err();
    assert!(e.to_string().contains("multiple of 8"), "{e}");
}

/// Rungs 5 + 6: persistent 2-block clusters each run several 256-row tiles, in grouped order and in the
/// order of a Hilbert table over the cluster tiles (both blocks of a cluster read the same entries), with
/// the B panel multicast; one cluster (all six tiles) and two clusters (three each), every element checked.
#[test]
fn persistent_clusters_run_several_tiles() {
    use prism::kernels::gemm::{
        gemm_bf16_cluster_persistent, hilbert_order, pack_order, TileSchedule,
    };
    let dev = e2e_util::device();
    let (m, n, k) = (600usize, 328usize, 136usize); // 3 × 2 tiles of 256 × 256 (ragged in m and n)
    let p = Problem::new((m, n, k), BLayout::NByK, 7);
    let (da, db, mut dc) = p.upload(&dev);
    let (ma, mb) = p.maps(&da, &db, 128, 256);
    let no_table = dev.alloc_zeros::<u32>(0).unwrap();
    let hilbert = TileSchedule::hilbert(&dev, 3, 2).unwrap();
    // C reset to the problem's, then the grouped (`table` None) or the table-driven instance on `blocks`.
    let mut run = |blocks: u32, table: Option<&DeviceBuffer<u32>>| -> Vec<f32> {
        dev.copy_htod(&p.c, &mut dc).unwrap();
        let (dims, (mu, nu, ku)) = (LaunchDims::new(blocks, 384), (m as u32, n as u32, k as u32));
        match table {
            None => gemm_bf16_cluster_persistent::<256, 4, 8>::launch(
                &dev, dims, &ma, &mb, mu, nu, ku, ALPHA, BETA, &mut dc, &no_table,
            ),
            Some(t) => gemm_bf16_cluster_persistent::<256, 4, 0>::launch(
                &dev, dims, &ma, &mb, mu, nu, ku, ALPHA, BETA, &mut dc, t,
            ),
        }
        .unwrap();
        dev.dtoh(&dc).unwrap()
    };
    for (order, table) in [("grouped", None), ("hilbert", Some(hilbert.table()))] {
        for blocks in [2u32, 4] {
            let bad = p.wrong_f32(ALPHA, BETA, &run(blocks, table)).len();
            assert_eq!(bad, 0, "{order}, {blocks} blocks: {bad} wrong elements");
        }
    }
    // The table-driven instance follows its table: with cluster tile (2, 1) (rows 512..600, columns
    // 256..328) replaced by a tile outside the grid, exactly that tile of `C` is left as it was.
    let mut table = pack_order(3, 2, &hilbert_order(3, 2)).unwrap();
    let at = table.iter().position(|&e| e == 2 << 16 | 1).unwrap();
    table[at] = 7 << 16 | 7;
    let planted = dev.htod(&table).unwrap();
    let c = run(2, Some(&planted));
    let in_tile = |i: usize, j: usize| i >= 512 && j >= 256;
    let bad = p.wrong_f32(ALPHA, BETA, &c);
    assert!(
        bad.iter().all(|&(i, j)| in_tile(i, j)),
        "{:?}",
        &bad[..bad.len().min(4)]
    );
    assert!((0..m * n)
        .filter(|&e| in_tile(e / n, e % n))
        .all(|e| c[e] == p.c[e]));
}

/// The persistent cluster rungs size their grid by the clusters that fit at once: on a GPU the driver's
/// count is between 1 and half the SMs for 2-block clusters of 384 threads (and cached: a second call gives
/// the same); on the emulator there is none. A block size the kernel's contract refuses is an error value.
#[test]
fn resident_clusters_come_from_the_driver() {
    use prism::kernels::gemm::gemm_bf16_cluster_persistent;
    use prism::runtime::Backend;
    let dev = e2e_util::device();
    let info = &gemm_bf16_cluster_persistent::<256, 4, 8>::INFO;
    let n = dev.max_active_clusters(info, 384).unwrap();
    match dev.backend() {
        Backend::Gpu => {
            let sms = dev.properties().multiprocessors.unwrap();
            let n = n.expect("a GPU counts its resident clusters");
            println!(
                "{}: {n} resident clusters of 2 blocks on {sms} SMs",
                dev.name()
            );
            assert!((1..=sms / 2).contains(&n), "{n} clusters on {sms} SMs");
            assert_eq!(dev.max_active_clusters(info, 384).unwrap(), Some(n));
        }
        Backend::Emulator => {
            println!("emulator: no multiprocessors, so no count of resident clusters (None)");
            assert_eq!(n, None);
        }
    }
    let err = dev.max_active_clusters(info, 256).unwrap_err();
    assert!(matches!(err, RuntimeError::BadLaunch(_)), "{err}");
}

/// Rung 5 in space-filling order through the typed launcher: 2 and 4 persistent blocks over 3 × 2 ragged
/// tiles of 128 × 256, each block stepping through its entries of a Hilbert table and of a reversed
/// row-major table (any order the host gives), every element checked. Then a planted wrong entry (tile
/// (2, 1) replaced by a second (0, 0)) leaves exactly tile (2, 1) of `C` uncomputed: the kernel follows the
/// table.
#[test]
fn scheduled_blocks_follow_their_table() {
    use prism::kernels::gemm::{gemm_bf16_persistent, hilbert_order, pack_order};
    let dev = e2e_util::device();
    let (m, n, k) = (300usize, 328usize, 72usize); // 3 × 2 tiles of 128 × 256
    let p = Problem::new((m, n, k), BLayout::NByK, 31);
    let (da, db, mut dc) = p.upload(&dev);
    let (ma, mb) = p.maps(&da, &db, 128, 256);
    let mut launch = |blocks: u32, table: &[u32]| -> Result<Vec<f32>, RuntimeError> {
        let t = dev.htod(table).unwrap();
        dev.copy_htod(&p.c, &mut dc).unwrap();
        gemm_bf16_persistent::<256, 4, 0>::launch(
            &dev,
            LaunchDims::new(blocks, 384),
            &ma,
            &mb,
            m as u32,
            n as u32,
            k as u32,
            ALPHA,
            BETA,
            &mut dc,
            &t,
        )?;
        dev.dtoh(&dc)
    };
    let hilbert = pack_order(3, 2, &hilbert_order(3, 2)).unwrap();
    let reversed: Vec<u32> = (0..6u32).rev().map(|t| (t / 2) << 16 | (t % 2)).collect();
    for (name, table) in [("hilbert", &hilbert), ("reversed", &reversed)] {
        for blocks in [2u32, 4] {
            let c = launch(blocks, table).unwrap();
            let bad = p.wrong_f32(ALPHA, BETA, &c);
            assert!(
                bad.is_empty(),
                "{name}, {blocks} blocks: {} wrong, first {:?}",
                bad.len(),
                &bad[..bad.len().min(4)]
            );
        }
    }
    // Planted wrong entries in place of tile (2, 1) (rows 256..300, columns 256..328).
    let at = hilbert.iter().position(|&e| e == 2 << 16 | 1).unwrap();
    let tile_2_1 = |bad: &[(usize, usize)]| {
        bad.len() == (300 - 256) * (328 - 256) && bad.iter().all(|&(i, j)| i >= 256 && j >= 256)
    };
    // A tile outside the grid: nothing computed for it (TMA's zero fill, guarded stores), tile (2, 1) left
    // as it was, everything else right.
    let mut outside = hilbert.clone();
    outside[at] = 7 << 16 | 7;
    let c = launch(2, &outside).unwrap();
    let bad = p.wrong_f32(ALPHA, BETA, &c);
    assert!(
        tile_2_1(&bad),
        "{} wrong, first {:?}",
        bad.len(),
        &bad[..bad.len().min(4)]
    );
    // Tile (0, 0) twice (by both blocks): the emulator reports the two blocks' unordered writes as a data
    // race; a GPU leaves tile (2, 1) as it was and may scale tile (0, 0) by `beta` twice (both blocks read
    // and write it), everything else right.
    let mut twice = hilbert.clone();
    twice[at] = 0;
    match launch(2, &twice) {
        Err(RuntimeError::Emulator(e)) => {
            assert!(e.to_string().contains("data race"), "{e}");
        }
        Ok(c) => {
            let bad = p.wrong_f32(ALPHA, BETA, &c);
            let in_2_1 = bad.iter().filter(|&&(i, j)| i >= 256 && j >= 256).count();
            assert_eq!(in_2_1, (300 - 256) * (328 - 256));
            assert!(bad
                .iter()
                .all(|&(i, j)| (i >= 256 && j >= 256) || (i < 128 && j < 256)));
        }
        Err(e) => panic!("{e}"),
    }
}

/// The table-driven instances need the shared memory of the grouped ones (their order is in global memory).
#[test]
fn scheduled_kernel_needs_no_more_shared_memory() {
    use prism::kernels::gemm::{gemm_bf16_cluster_persistent, gemm_bf16_persistent};
    let grouped = gemm_bf16_persistent::<256, 4, 8>::INFO.contract();
    let scheduled = gemm_bf16_persistent::<256, 4, 0>::INFO.contract();
    println!(
        "gemm_bf16_persistent_256_4_0: {} bytes of shared memory",
        scheduled.smem_bytes()
    );
    assert_eq!(scheduled.smem_bytes(), grouped.smem_bytes());
    let grouped = gemm_bf16_cluster_persistent::<256, 4, 8>::INFO.contract();
    let scheduled = gemm_bf16_cluster_persistent::<256, 4, 0>::INFO.contract();
    assert_eq!(scheduled.smem_bytes(), grouped.smem_bytes());
}

/// Tile schedules are checked before anything launches: a schedule for another grid, a schedule for a
/// variant that computes its order in the kernel, and orders that miss or repeat a tile are error values.
#[test]
fn bad_schedules_are_errors_before_launch() {
    use prism::kernels::gemm::{gemm_bf16_with_schedule, TileSchedule};
    let dev = e2e_util::device();
    let (m, n, k) = (300u32, 328u32, 16u32);
    let a = dev.alloc_zeros::<bf16>((m * k) as usize).unwrap();
    let b = dev.alloc_zeros::<bf16>((n * k) as usize).unwrap();
    let mut c = dev.htod(&vec![7.0f32; (m * n) as usize]).unwrap();
    let v = GemmBf16Variant::PersistentHilbert256;
    assert_eq!(v.schedule_grid(m, n), Some((3, 2)));
    let other = TileSchedule::hilbert(&dev, 2, 3).unwrap();
    let e = gemm_bf16_with_schedule(&dev, v, Some(&other), m, n, k, 1.0, &a, &b, 0.0, &mut c)
        .unwrap_err();
    assert!(
        matches!(&e, GemmError::Schedule(w) if w.contains("need 3 × 2")),
        "{e}"
    );
    let right = TileSchedule::hilbert(&dev, 3, 2).unwrap();
    let e = gemm_bf16_with_schedule(
        &dev,
        GemmBf16Variant::Persistent256,
        Some(&right),
        m,
        n,
        k,
        1.0,
        &a,
        &b,
        0.0,
        &mut c,
    )
    .unwrap_err();
    assert!(
        matches!(&e, GemmError::Schedule(w) if w.contains("takes no tile schedule")),
        "{e}"
    );
    // Nothing ran: C is as it was.
    assert!(dev.dtoh(&c).unwrap().iter().all(|&x| x == 7.0));
    let missing = TileSchedule::from_order(&dev, 3, 2, &[(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]);
    assert!(matches!(missing, Err(GemmError::Schedule(w)) if w.contains("5 entries")));
    let twice = [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (1, 1)];
    let e = TileSchedule::from_order(&dev, 3, 2, &twice).err().unwrap();
    assert!(
        e.to_string()
            .contains("entry 5, tile (1, 1), is named twice"),
        "{e}"
    );
    // The right schedule, given: zeros in, zeros out.
    gemm_bf16_with_schedule(&dev, v, Some(&right), m, n, k, 1.0, &a, &b, 0.0, &mut c).unwrap();
    assert!(dev.dtoh(&c).unwrap().iter().all(|&x| x == 0.0));
}

// A warp-specialized tile GEMM whose producer and consumer are device functions taking the ring: the
// producer's `fill` and the consumer's `drain`s (`prism_kernels::gemm::drain_k_tiles`) run inside callees
// and count among the ring's sites where they are called.

/// One k-step of the producer: fills slot `step` of `r` with the A and B tiles at k-offset `64 · step`.
#[prism::prism_device(requires(thread[128]))]
pub fn load_k_tile(
    r: Ring<(bf16, bf16)>,
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    step: u32,
    row0: u32,
    col0: u32,
) {
    fill(r, step, |sa_s, sb_s| match split(thread) {
        1 => {
            tma_load(sa_s, a, step * 64, row0);
            tma_load(sb_s, b, step * 64, col0);
        }
    });
}

/// `C = alpha · A · Bᵀ + beta · C`, a 64 × 64 tile per block: warpgroup 0 fills a 2-slot ring, warpgroup 1
/// drains it.
#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256)]
#[allow(clippy::too_many_arguments)]
pub fn ws_tile_gemm(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
    alpha: f32,
    beta: f32,
) {
    let tiles_n: u32 = (n + 63) / 64;
    let k_tiles: u32 = (k + 63) / 64;
    #[at(block[1])]
    let row0: u32 = (id() / tiles_n) * 64;
    #[at(block[1])]
    let col0: u32 = (id() % tiles_n) * 64;
    partition(
        c,
        block[1],
        |x| row0 * n + col0 + x,
        |c_blk| {
            group(block[1], || {
                let sa: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
                let sb: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
                partition(
                    c_blk,
                    thread[128],
                    |x| x,
                    |c_wg| {
                        ring(2, (sa, sb), |r| match split(warpgroup) {
                            1 => {
                                for kt in 0..k_tiles {
                                    load_k_tile(r, a, b, kt, row0, col0);
                                }
                            }
                            1 => {
                                #[at(thread[1])]
                                let mut acc = [0.0f32; 32];
                                prism_kernels::gemm::drain_k_tiles::<0, 32>(
                                    r, &mut acc, 0, k_tiles,
                                );
                                prism_kernels::gemm::wgmma_tile_to_f32::<32>(
                                    &acc,
                                    c_wg,
                                    0,
                                    m.max(row0) - row0,
                                    n.max(col0) - col0,
                                    n,
                                    alpha,
                                    beta,
                                );
                            }
                        });
                    },
                );
            });
        },
    );
}

/// The ring's device functions on the emulator: 3 × 3 ragged tiles, 5 k-steps through 2 slots (each slot
/// refilled), every element against the f64 reference.
#[test]
fn ring_device_functions_fill_and_drain() {
    let dev = e2e_util::device();
    let (m, n, k) = (150usize, 136usize, 320usize);
    let p = Problem::new((m, n, k), BLayout::NByK, 91);
    let (da, db, mut dc) = p.upload(&dev);
    let (ma, mb) = p.maps(&da, &db, 64, 64);
    let blocks = (m.div_ceil(64) * n.div_ceil(64)) as u32;
    ws_tile_gemm::launch(
        &dev,
        LaunchDims::new(blocks, 256),
        &ma,
        &mb,
        &mut dc,
        m as u32,
        n as u32,
        k as u32,
        ALPHA,
        BETA,
    )
    .unwrap();
    let bad = p.wrong_f32(ALPHA, BETA, &dev.dtoh(&dc).unwrap());
    assert!(
        bad.is_empty(),
        "{} wrong, first {:?}",
        bad.len(),
        &bad[..bad.len().min(4)]
    );
}

/// Rung 7 with an f32 `D`, alone (`TmaStore256`, and `TmaStore256x2` with two boxes per consumer) and on
/// 2-block clusters (`ClusterTmaStore256`): TMA clips
/// the stored boxes at `D`'s edges in both directions (sizes one past and short of the 128 × 256 tile, the
/// 256-row cluster tile and the 32-column box), `beta = 0` never reads `C` (pre-filled with NaN here, which
/// any read would spread), and `n` not a multiple of 4 (rows TMA cannot store) takes the same tiles through
/// the register epilogue. Rung 8 (`PingPong128`) likewise, with 128 × 128 tiles taken in turns.
#[test]
fn f32_tma_store_clips_and_ignores_c_when_beta_is_zero() {
    let dev = e2e_util::device();
    let cases = [
        (GemmBf16Variant::TmaStore256, 129, 260, 64, 21),
        (GemmBf16Variant::TmaStore256, 127, 36, 72, 22),
        (GemmBf16Variant::TmaStore256, 64, 290, 8, 23),
        (GemmBf16Variant::TmaStore256, 65, 30, 16, 24),
        (GemmBf16Variant::ClusterTmaStore256, 257, 36, 64, 25),
        (GemmBf16Variant::ClusterTmaStore256, 255, 260, 16, 26),
        (GemmBf16Variant::ClusterTmaStore256, 130, 30, 8, 27),
        (GemmBf16Variant::TmaStore256x2, 129, 260, 64, 28),
        (GemmBf16Variant::TmaStore256x2, 127, 36, 72, 29),
        (GemmBf16Variant::TmaStore256x2, 65, 30, 16, 30),
        (GemmBf16Variant::PingPong128, 129, 260, 64, 31),
        (GemmBf16Variant::PingPong128, 127, 36, 72, 32),
        (GemmBf16Variant::PingPong128, 65, 30, 16, 33),
        (GemmBf16Variant::PingPong128, 300, 264, 200, 34),
    ];
    for (v, m, n, k, seed) in cases {
        let mut p = Problem::new((m, n, k), BLayout::NByK, seed);
        p.c = vec![f32::NAN; m * n];
        let (da, db, mut dc) = p.upload(&dev);
        gemm_bf16(
            &dev, v, m as u32, n as u32, k as u32, ALPHA, &da, &db, 0.0, &mut dc,
        )
        .unwrap_or_else(|e| panic!("{} at {m}×{n}×{k}: {e}", v.name()));
        let d = dev.dtoh(&dc).unwrap();
        let mut wrong = 0;
        for i in 0..m {
            for j in 0..n {
                let (want, tol) = p.expected(i, j, ALPHA, 0.0, 0.0);
                let err = (d[i * n + j] as f64 - want).abs();
                if err.is_nan() || err > tol {
                    wrong += 1;
                }
            }
        }
        assert_eq!(
            wrong,
            0,
            "{} at {m}×{n}×{k}: {wrong} wrong elements",
            v.name()
        );
        // And with beta ≠ 0 the same sizes read `C` (from a copy) where it lies.
        let p = Problem::new((m, n, k), BLayout::NByK, seed + 100);
        let (da, db, mut dc) = p.upload(&dev);
        gemm_bf16(
            &dev, v, m as u32, n as u32, k as u32, ALPHA, &da, &db, BETA, &mut dc,
        )
        .unwrap();
        let bad = p.wrong_f32(ALPHA, BETA, &dev.dtoh(&dc).unwrap());
        assert!(
            bad.is_empty(),
            "{} at {m}×{n}×{k}: {} wrong",
            v.name(),
            bad.len()
        );
    }
}

/// The f32 TMA-store rungs with fewer persistent blocks than tiles, through their typed launchers: each
/// block (cluster) runs several tiles and rewrites its epilogue boxes once their previous stores have read
/// them — one box per consumer, two taking turns, and the cluster kernel's — over 3 × 2 ragged tiles, with
/// `C` read from a copy (`beta ≠ 0`), every element checked.
#[test]
fn f32_tma_store_blocks_run_several_tiles() {
    use prism::kernels::gemm::{
        gemm_bf16_cluster_tma_store_f32, gemm_bf16_pingpong_f32, gemm_bf16_tma_store_f32,
        gemm_bf16_tma_store_f32x2,
    };
    use prism::runtime::TensorMapMut;
    let dev = e2e_util::device();
    let no_table = dev.alloc_zeros::<u32>(0).unwrap();
    for (kernel, m, blocks) in [
        ("one box", 300usize, 2u32),
        ("two boxes", 300, 2),
        ("two boxes", 300, 4),
        ("clusters", 600, 2),
        ("clusters", 600, 4),
        ("ping-pong", 300, 1),
        ("ping-pong", 300, 2),
    ] {
        let (n, k) = (328usize, 72usize); // 3 × 2 tiles (cluster tiles for m = 600), ragged
        let p = Problem::new((m, n, k), BLayout::NByK, 71);
        let (da, db, mut dd) = p.upload(&dev);
        let dc = dev.htod(&p.c).unwrap();
        // Ping-pong: 3 × 3 tiles of 128 × 128, taken in turns by each block's two consumers.
        let bn = if kernel == "ping-pong" { 128 } else { 256 };
        let (ma, mb) = p.maps(&da, &db, 128, bn);
        let mut md = TensorMapMut::tiled(
            &mut dd,
            [n as u64, m as u64],
            &[n as u64 * 4],
            [32, 64],
            TensorSwizzle::B128,
        )
        .unwrap();
        let (dims, (mu, nu, ku)) = (LaunchDims::new(blocks, 384), (m as u32, n as u32, k as u32));
        match kernel {
            "one box" => gemm_bf16_tma_store_f32::<256, 4, 8>::launch(
                &dev, dims, &ma, &mb, mu, nu, ku, ALPHA, BETA, &dc, &mut md, &no_table,
            ),
            "two boxes" => gemm_bf16_tma_store_f32x2::<256, 4, 8>::launch(
                &dev, dims, &ma, &mb, mu, nu, ku, ALPHA, BETA, &dc, &mut md, &no_table,
            ),
            "ping-pong" => gemm_bf16_pingpong_f32::<6, 8>::launch(
                &dev, dims, &ma, &mb, mu, nu, ku, ALPHA, BETA, &dc, &mut md, &no_table,
            ),
            _ => gemm_bf16_cluster_tma_store_f32::<256, 4, 8>::launch(
                &dev, dims, &ma, &mb, mu, nu, ku, ALPHA, BETA, &dc, &mut md, &no_table,
            ),
        }
        .unwrap_or_else(|e| panic!("{kernel}, {blocks} blocks: {e}"));
        drop(md);
        let bad = p.wrong_f32(ALPHA, BETA, &dev.dtoh(&dd).unwrap());
        assert!(
            bad.is_empty(),
            "{kernel}, {blocks} blocks: {} wrong, first {:?}",
            bad.len(),
            &bad[..bad.len().min(4)]
        );
    }
}

/// BLAS semantics for every f32 rung: with `beta = 0`, `C` is not read (here it holds NaN, which a read
/// would spread into `D`).
#[test]
fn beta_zero_never_reads_c() {
    let dev = e2e_util::device();
    let (m, n, k) = (130, 264, 64);
    for v in GemmBf16Variant::ALL {
        let mut p = Problem::new((m, n, k), BLayout::NByK, 31);
        p.c = vec![f32::NAN; m * n];
        let (da, db, mut dc) = p.upload(&dev);
        gemm_bf16(
            &dev, v, m as u32, n as u32, k as u32, ALPHA, &da, &db, 0.0, &mut dc,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", v.name()));
        let d = dev.dtoh(&dc).unwrap();
        let wrong = (0..m * n)
            .filter(|&at| {
                let (want, tol) = p.expected(at / n, at % n, ALPHA, 0.0, 0.0);
                let err = (d[at] as f64 - want).abs();
                err.is_nan() || err > tol
            })
            .count();
        assert_eq!(wrong, 0, "{}: {wrong} wrong elements", v.name());
    }
}
