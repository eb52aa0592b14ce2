//! Rung 7 of the bf16 GEMM ladder: `D = alpha · A · Bᵀ + beta · C` with a bf16 `D` written through shared
//! memory and TMA stores (`prism_kernels::gemm::gemm_bf16_out_bf16`), on the emulator (or the GPU with
//! `PRISM_BACKEND=gpu`), against an f64 CPU reference: random bf16 inputs in [-1, 1) (never zeros), a random
//! `C` with `beta ≠ 0` or none with `beta = 0`, every element of `D` checked, at a tile multiple with several
//! tiles and at ragged sizes, and with fewer persistent blocks than tiles (TMA clips the stored boxes). Bad sizes are error values.

mod e2e_util;

use e2e_util::gemm::{BLayout, Problem};
use prism::kernels::gemm::{
    gemm_bf16_cluster_pingpong, gemm_bf16_cluster_tma_store, gemm_bf16_out_bf16,
    gemm_bf16_out_bf16_with, gemm_bf16_out_bf16_with_schedule, gemm_bf16_pingpong,
    gemm_bf16_tma_store, gemm_bf16_tma_store_wide, gemm_bf16_tma_store_x2, GemmBf16OutVariant,
    GemmError, TileSchedule,
};
use prism::runtime::half::bf16;
use prism::runtime::{
    Device, DeviceBuffer, LaunchDims, LaunchReport, RuntimeError, TensorMapMut, TensorSwizzle,
};
use prism::{prism_device, prism_kernel};

/// Runs `D = alpha·A·Bᵀ + beta·C` (with `C` when `beta ≠ 0`) on a `D` pre-filled with garbage and checks every
/// element against the f64 product rounded once to bf16: within one bf16 step of the exact value.
fn run(m: usize, n: usize, k: usize, alpha: f32, beta: f32, seed: u64, blocks: Option<u32>) {
    run_variant(
        GemmBf16OutVariant::TmaStore256,
        m,
        n,
        k,
        alpha,
        beta,
        seed,
        blocks,
    );
}

/// [`run`] on one variant; `blocks` launches that many persistent blocks through the typed launcher.
#[allow(clippy::too_many_arguments)]
fn run_variant(
    v: GemmBf16OutVariant,
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    beta: f32,
    seed: u64,
    blocks: Option<u32>,
) {
    let dev = e2e_util::device();
    let p = Problem::new((m, n, k), BLayout::NByK, seed);
    // A bf16 `C`: the problem's, rounded.
    let c: Vec<bf16> = p.c.iter().map(|&x| bf16::from_f32(x)).collect();
    let (da, db, _) = p.upload(&dev);
    let dc = dev.htod(&c).unwrap();
    let garbage = vec![bf16::from_f32(1234.0); m * n];
    let mut dd = dev.htod(&garbage).unwrap();
    match blocks {
        None => {
            let c_arg = (beta != 0.0).then_some(&dc);
            gemm_bf16_out_bf16_with(
                &dev, v, m as u32, n as u32, k as u32, alpha, &da, &db, beta, c_arg, &mut dd,
            )
            .unwrap_or_else(|e| panic!("{} {m}×{n}×{k}: {e}", v.name()));
        }
        Some(blocks) => {
            // Fewer persistent blocks than tiles: each block runs several tiles through one ring and
            // rewrites its epilogue boxes once their previous TMA stores have read them. The table-driven
            // instances read a Hilbert table; the grouped ones an empty one they ignore.
            let hilbert = v
                .schedule_grid(m as u32, n as u32)
                .map(|(tm, tn)| TileSchedule::hilbert(&dev, tm, tn).unwrap());
            let empty = dev.alloc_zeros::<u32>(0).unwrap();
            let sched = hilbert.as_ref().map_or(&empty, |s| s.table());
            let grid = (blocks, alpha, beta);
            launch_typed(&dev, v, &p, (&da, &db, &dc), &mut dd, grid, sched).unwrap();
        }
    }
    let bad = wrong_bf16(&p, &c, &dev.dtoh(&dd).unwrap(), alpha, beta);
    assert!(
        bad.is_empty(),
        "{m}×{n}×{k} (alpha {alpha}, beta {beta}): {} wrong elements of {}, first {:?}",
        bad.len(),
        m * n,
        &bad[..bad.len().min(4)]
    );
}

/// Launches variant `v` through its typed launcher: `(blocks, alpha, beta)`, the operands `(a, b, c)` of
/// `p`, and the tile table `sched` (read by the table-driven instances only).
fn launch_typed(
    dev: &Device,
    v: GemmBf16OutVariant,
    p: &Problem,
    (da, db, dc): (
        &DeviceBuffer<bf16>,
        &DeviceBuffer<bf16>,
        &DeviceBuffer<bf16>,
    ),
    dd: &mut DeviceBuffer<bf16>,
    (blocks, alpha, beta): (u32, f32, f32),
    sched: &DeviceBuffer<u32>,
) -> Result<LaunchReport, RuntimeError> {
    let (m, n, k) = (p.m as u32, p.n as u32, p.k as u32);
    let bn = match v {
        GemmBf16OutVariant::PingPong128 | GemmBf16OutVariant::ClusterPingPong128 => 128,
        _ => 256,
    };
    let (ma, mb) = p.maps(da, db, 128, bn);
    let mut md = TensorMapMut::tiled(
        dd,
        [n as u64, m as u64],
        &[n as u64 * 2],
        [64, 64],
        TensorSwizzle::B128,
    )?;
    let (dims, d) = (LaunchDims::new(blocks, 384), &mut md);
    match v {
        GemmBf16OutVariant::TmaStore256 => gemm_bf16_tma_store::<256, 4, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, dc, d, sched,
        ),
        GemmBf16OutVariant::TmaStoreHilbert256 => gemm_bf16_tma_store::<256, 4, 0>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, dc, d, sched,
        ),
        GemmBf16OutVariant::ClusterTmaStore256 => gemm_bf16_cluster_tma_store::<256, 4, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, dc, d, sched,
        ),
        GemmBf16OutVariant::ClusterTmaStoreHilbert256 => {
            gemm_bf16_cluster_tma_store::<256, 4, 0>::launch(
                dev, dims, &ma, &mb, m, n, k, alpha, beta, dc, d, sched,
            )
        }
        GemmBf16OutVariant::TmaStoreWide256 => gemm_bf16_tma_store_wide::<3, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, dc, d, sched,
        ),
        GemmBf16OutVariant::TmaStore256x2 => gemm_bf16_tma_store_x2::<256, 4, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, dc, d, sched,
        ),
        GemmBf16OutVariant::PingPong128 => gemm_bf16_pingpong::<6, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, dc, d, sched,
        ),
        GemmBf16OutVariant::ClusterPingPong128 => gemm_bf16_cluster_pingpong::<6, 8>::launch(
            dev, dims, &ma, &mb, m, n, k, alpha, beta, dc, d, sched,
        ),
    }
}

/// The elements `(i, j, got, want)` of `d` farther from the f64 reference than bf16 allows: one bf16 step
/// (|want| / 128, 8 significant bits) plus the f32 accumulation's rounding.
fn wrong_bf16(
    p: &Problem,
    c: &[bf16],
    d: &[bf16],
    alpha: f32,
    beta: f32,
) -> Vec<(usize, usize, f64, f64)> {
    let mut bad = Vec::new();
    for i in 0..p.m {
        for j in 0..p.n {
            let (want, f32_tol) = p.expected(i, j, alpha, beta, c[i * p.n + j].to_f32() as f64);
            let tol = want.abs() / 128.0 + f32_tol;
            let got = d[i * p.n + j].to_f32() as f64;
            let err = (got - want).abs();
            if err.is_nan() || err > tol {
                bad.push((i, j, got, want));
            }
        }
    }
    bad
}

/// The table-driven bf16 instances follow their table: with one entry of a Hilbert table replaced by a
/// tile outside the grid, exactly that tile of `D` keeps its garbage (TMA clips the outside boxes) and
/// every other element is right; 128 × 256 tiles (2 blocks) and 256 × 256 cluster tiles (1 and 2 clusters).
#[test]
fn table_driven_bf16_kernels_follow_their_table() {
    use prism::kernels::gemm::{hilbert_order, pack_order};
    let dev = e2e_util::device();
    for (v, m, rows, blocks) in [
        (GemmBf16OutVariant::TmaStoreHilbert256, 300, 128, 2u32),
        (GemmBf16OutVariant::ClusterTmaStoreHilbert256, 600, 256, 2),
        (GemmBf16OutVariant::ClusterTmaStoreHilbert256, 600, 256, 4),
    ] {
        // 3 × 2 tiles, ragged in both dimensions; tile (2, 1) is rows 2·rows.., columns 256..264.
        let (n, k) = (264, 72);
        let p = Problem::new((m, n, k), BLayout::NByK, 51);
        let c: Vec<bf16> = p.c.iter().map(|&x| bf16::from_f32(x)).collect();
        let (da, db, _) = p.upload(&dev);
        let dc = dev.htod(&c).unwrap();
        let garbage = bf16::from_f32(1234.0);
        let mut dd = dev.htod(&vec![garbage; m * n]).unwrap();
        assert_eq!(v.schedule_grid(m as u32, n as u32), Some((3, 2)));
        let mut table = pack_order(3, 2, &hilbert_order(3, 2)).unwrap();
        let at = table.iter().position(|&e| e == 2 << 16 | 1).unwrap();
        table[at] = 7 << 16 | 7;
        let sched = dev.htod(&table).unwrap();
        let args = (&da, &db, &dc);
        launch_typed(&dev, v, &p, args, &mut dd, (blocks, 1.0, 0.5), &sched).unwrap();
        let d = dev.dtoh(&dd).unwrap();
        let in_tile = |i: usize, j: usize| i >= 2 * rows && j >= 256;
        let bad = wrong_bf16(&p, &c, &d, 1.0, 0.5);
        assert!(
            bad.iter().all(|&(i, j, _, _)| in_tile(i, j)),
            "{} ({blocks} blocks): wrong outside tile (2, 1): {:?}",
            v.name(),
            &bad[..bad.len().min(4)]
        );
        let untouched = (0..m * n)
            .filter(|&e| in_tile(e / n, e % n))
            .all(|e| d[e] == garbage);
        assert!(untouched, "{}: tile (2, 1) was written", v.name());
        assert_eq!(bad.len(), (m - 2 * rows) * (n - 256));
    }
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

/// Rungs 5 + 7 in space-filling order (the 128 × 256 tiles from a Hilbert table): through the host API at a
/// tile multiple and at ragged sizes with and without `C`, and with two persistent blocks running three
/// tiles each.
#[test]
fn hilbert_bf16_output_every_element() {
    let v = GemmBf16OutVariant::TmaStoreHilbert256;
    run_variant(v, 384, 512, 192, 1.5, -0.5, 41, None);
    run_variant(v, 200, 328, 136, 0.75, 0.0, 42, None);
    run_variant(v, 72, 264, 40, -1.0, 2.0, 43, None);
    run_variant(v, 300, 264, 72, 1.0, 0.5, 44, Some(2));
}

/// Rung 7 with the whole tile staged at once (four boxes per consumer, one barrier, four stores): through
/// the host API at a tile multiple and at ragged sizes with and without `C`, and with two persistent blocks
/// running three tiles each (each tile's epilogue rewrites the boxes the previous tile's stores read).
#[test]
fn wide_bf16_output_every_element() {
    let v = GemmBf16OutVariant::TmaStoreWide256;
    run_variant(v, 384, 512, 192, 1.5, -0.5, 51, None);
    run_variant(v, 200, 328, 136, 0.75, 0.0, 52, None);
    run_variant(v, 72, 264, 40, -1.0, 2.0, 53, None);
    run_variant(v, 300, 264, 72, 1.0, 0.5, 54, Some(2));
}

/// Rung 7 with a two-stage epilogue (two boxes per consumer taking turns, each written while the other's
/// store reads): through the host API at a tile multiple and at ragged sizes with and without `C` (n = 328:
/// a tile whose second box of a pair lies wholly outside `D`), and with two persistent blocks running three
/// tiles each (each tile's first box is written again while the previous tile's last store may still read
/// the other).
#[test]
fn two_stage_bf16_output_every_element() {
    let v = GemmBf16OutVariant::TmaStore256x2;
    run_variant(v, 384, 512, 192, 1.5, -0.5, 61, None);
    run_variant(v, 200, 328, 136, 0.75, 0.0, 62, None);
    run_variant(v, 72, 264, 40, -1.0, 2.0, 63, None);
    run_variant(v, 300, 264, 72, 1.0, 0.5, 64, Some(2));
}

/// Rung 8, the ping-pong schedule (each consumer warpgroup a whole 128 × 128 tile, the two taking turns on
/// one ring): through the host API at a tile multiple and at ragged sizes with and without `C`, and with
/// fewer persistent blocks than tiles, so that both consumers take several turns: one block over nine
/// tiles (consumer 0 takes five turns, consumer 1 four), two and three blocks, and k-tiles that wrap the
/// 6-slot ring within a turn (k = 520: nine k-tiles, the last ragged). The emulator checks the turns for
/// races and deadlocks as it runs them.
#[test]
fn pingpong_bf16_output_every_element() {
    let v = GemmBf16OutVariant::PingPong128;
    run_variant(v, 384, 512, 192, 1.5, -0.5, 71, None);
    run_variant(v, 200, 328, 136, 0.75, 0.0, 72, None);
    run_variant(v, 72, 264, 40, -1.0, 2.0, 73, None);
    run_variant(v, 300, 264, 72, 1.0, 0.5, 74, Some(1));
    run_variant(v, 300, 264, 72, 1.0, 0.0, 75, Some(2));
    run_variant(v, 256, 256, 520, 1.0, 0.5, 76, Some(2));
    run_variant(v, 384, 136, 64, -0.5, 1.0, 77, Some(3));
}

/// The ping-pong rungs under the emulator's random schedules (warps, quanta and lane groups in a seeded random
/// order, race detection on): the consumers' turns hold whatever order the warps run in.
#[test]
fn pingpong_turns_hold_under_random_schedules() {
    if std::env::var(prism::runtime::BACKEND_ENV).is_ok_and(|v| v.trim() == "gpu") {
        println!("skipped: random schedules are the emulator's (PRISM_BACKEND=gpu)");
        return;
    }
    for seed in 0..3u64 {
        let dev = Device::emulator_with(prism::runtime::emu::EmuConfig {
            schedule: prism::runtime::emu::Schedule::Random { seed },
            ..Default::default()
        });
        for v in [
            GemmBf16OutVariant::PingPong128,
            GemmBf16OutVariant::ClusterPingPong128,
        ] {
            let (m, n, k) = (384usize, 264usize, 200usize);
            let p = Problem::new((m, n, k), BLayout::NByK, 90 + seed);
            let c: Vec<bf16> = vec![bf16::from_f32(0.0); m * n];
            let (da, db, _) = p.upload(&dev);
            let mut dd = dev.htod(&c).unwrap();
            gemm_bf16_out_bf16_with(
                &dev, v, m as u32, n as u32, k as u32, 1.0, &da, &db, 0.0, None, &mut dd,
            )
            .unwrap_or_else(|e| panic!("{} (seed {seed}): {e}", v.name()));
            let bad = wrong_bf16(&p, &c, &dev.dtoh(&dd).unwrap(), 1.0, 0.0);
            assert!(
                bad.is_empty(),
                "{} (seed {seed}): {} wrong, first {:?}",
                v.name(),
                bad.len(),
                bad.first()
            );
        }
    }
}

/// Rungs 8 + 6, ping-pong in 2-block clusters (B multicast by rank 0, each slot released in both blocks by
/// the consumer whose turn it is): through the host API, and with one and two clusters over several
/// 256 × 128 cluster tiles (odd and even turn counts), k-steps wrapping the ring.
#[test]
fn cluster_pingpong_bf16_output_every_element() {
    let v = GemmBf16OutVariant::ClusterPingPong128;
    run_variant(v, 512, 256, 192, 1.5, -0.5, 81, None);
    run_variant(v, 200, 328, 136, 0.75, 0.0, 82, None);
    run_variant(v, 600, 264, 72, 1.0, 0.5, 83, Some(2));
    run_variant(v, 600, 264, 520, 1.0, 0.0, 84, Some(4));
}

/// Rungs 5 + 6 + 7 (persistent 2-block clusters, B multicast, TMA-store epilogue): through the host API at
/// a tile multiple and at ragged sizes with and without `C`, and with one and two clusters running several
/// 256 × 256 tiles each.
#[test]
fn cluster_bf16_output_every_element() {
    let v = GemmBf16OutVariant::ClusterTmaStore256;
    run_variant(v, 512, 512, 192, 1.5, -0.5, 21, None);
    run_variant(v, 200, 328, 136, 0.75, 0.0, 22, None);
    run_variant(v, 72, 264, 40, -1.0, 2.0, 23, None);
    run_variant(v, 600, 264, 72, 1.0, 0.5, 24, Some(2));
    run_variant(v, 600, 264, 72, 1.0, 0.5, 25, Some(4));
}

/// Rungs 5 + 6 + 7 in space-filling order (the cluster tiles from a Hilbert table, read by both blocks of a
/// cluster): as above, plus a schedule built once and given for two calls (every element checked), and a
/// schedule for another grid refused before anything runs.
#[test]
fn cluster_hilbert_bf16_output_every_element() {
    let v = GemmBf16OutVariant::ClusterTmaStoreHilbert256;
    run_variant(v, 512, 512, 192, 1.5, -0.5, 31, None);
    run_variant(v, 200, 328, 136, 0.75, 0.0, 32, None);
    run_variant(v, 72, 264, 40, -1.0, 2.0, 33, None);
    run_variant(v, 600, 264, 72, 1.0, 0.5, 34, Some(2));
    run_variant(v, 600, 264, 72, 1.0, 0.5, 35, Some(4));

    let dev = e2e_util::device();
    let (m, n, k) = (600u32, 264u32, 8u32); // 3 × 2 cluster tiles
    let p = Problem::new((m as usize, n as usize, k as usize), BLayout::NByK, 36);
    let (da, db, _) = p.upload(&dev);
    let mut dd = dev.alloc_zeros::<bf16>((m * n) as usize).unwrap();
    let wrong = TileSchedule::hilbert(&dev, 5, 2).unwrap();
    let e = gemm_bf16_out_bf16_with_schedule(
        &dev,
        v,
        Some(&wrong),
        m,
        n,
        k,
        1.0,
        &da,
        &db,
        0.0,
        None,
        &mut dd,
    )
    .unwrap_err();
    assert!(
        matches!(&e, GemmError::Schedule(w) if w.contains("need 3 × 2")),
        "{e}"
    );
    let sched = TileSchedule::hilbert(&dev, 3, 2).unwrap();
    for alpha in [1.0f32, -2.0] {
        gemm_bf16_out_bf16_with_schedule(
            &dev,
            v,
            Some(&sched),
            m,
            n,
            k,
            alpha,
            &da,
            &db,
            0.0,
            None,
            &mut dd,
        )
        .unwrap();
        let d = dev.dtoh(&dd).unwrap();
        for (i, j) in (0..m as usize).flat_map(|i| (0..n as usize).map(move |j| (i, j))) {
            let (want, _) = p.expected(i, j, alpha, 0.0, 0.0);
            let got = d[i * n as usize + j].to_f32() as f64;
            assert!(
                (got - want).abs() <= want.abs() / 128.0 + 1e-5,
                "alpha {alpha}, D[{i}][{j}] = {got}, want {want}"
            );
        }
    }
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

/// The store map reaches `tma_store` through a device function's `TensorMapMut` parameter
/// (`consume_tiles_bf16`): the box it stores is still recorded on the kernel's parameter, and the typed
/// launcher refuses a map with another box before anything runs.
#[test]
fn a_store_map_with_another_box_is_refused() {
    let dev = e2e_util::device();
    let (m, n, k) = (128usize, 256usize, 64usize);
    let p = Problem::new((m, n, k), BLayout::NByK, 61);
    let (da, db, _) = p.upload(&dev);
    let dc = dev.alloc_zeros::<bf16>(m * n).unwrap();
    let mut dd = dev.htod(&vec![bf16::from_f32(1234.0); m * n]).unwrap();
    let (ma, mb) = p.maps(&da, &db, 128, 256);
    let mut md = TensorMapMut::tiled(
        &mut dd,
        [n as u64, m as u64],
        &[n as u64 * 2],
        [64, 32],
        TensorSwizzle::B128,
    )
    .unwrap();
    let no_table = dev.alloc_zeros::<u32>(0).unwrap();
    let r = gemm_bf16_tma_store::<256, 4, 8>::launch(
        &dev,
        LaunchDims::new(1, 384),
        &ma,
        &mb,
        m as u32,
        n as u32,
        k as u32,
        1.0,
        0.0,
        &dc,
        &mut md,
        &no_table,
    );
    match r {
        Err(RuntimeError::BadArgs(w)) => assert!(
            w.contains("a box of 64 rows × 64 columns (box_dims [64, 64]"),
            "{w}"
        ),
        other => panic!("expected BadArgs, got {other:?}"),
    }
    assert!(dev
        .dtoh(&dd)
        .unwrap()
        .iter()
        .all(|&x| x == bf16::from_f32(1234.0)));
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
    // The table-driven instances read their tile order from global memory: no shared memory added.
    let table = gemm_bf16_tma_store::<256, 4, 0>::INFO.contract();
    let cluster = gemm_bf16_cluster_tma_store::<256, 4, 8>::INFO.contract();
    let cluster_table = gemm_bf16_cluster_tma_store::<256, 4, 0>::INFO.contract();
    for other in [table, cluster, cluster_table] {
        assert_eq!(other.smem_bytes(), c.smem_bytes());
    }
    // Rung 8: a 6-slot ring of 128 × 64 A and B boxes (32 KiB a slot) and the two consumers' boxes.
    let pp = gemm_bf16_pingpong::<6, 8>::INFO.contract();
    println!("gemm_bf16_pingpong_6_8: {} bytes", pp.smem_bytes());
    assert!(pp.smem_bytes() >= 6 * 32 * 1024 + 2 * 8192 && pp.smem_bytes() <= 227 * 1024);
}

// docs/GUIDE.md §7 "Building blocks", verbatim: a k-step device function over shared tiles and a bf16
// epilogue device function through `stmatrix_bf16` and `tma_store` (a `SharedMut` tile and a `TensorMapMut`).

/// One 64-wide k-tile: four wgmmas over two shared tiles.
#[prism_device(requires(thread[128]))]
pub fn k_tile(
    acc: &mut [f32; 32],
    a: Shared<[bf16; 64 * 64], Swizzle128>,
    b: Shared<[bf16; 64 * 64], Swizzle128>,
) {
    for kk in 0..4 {
        wgmma_bf16(acc, a, kk * 16, b, kk * 16);
    }
}

/// The epilogue: a warpgroup's fragment (columns 0..64) as bf16 into its tile `e`, then one thread stores
/// the tile to `D` at (`row0`, `col0`).
#[prism_device(requires(thread[128]))]
pub fn store_tile(
    acc: &[f32; 32],
    e: SharedMut<[bf16; 64 * 64], Swizzle128>,
    d: TensorMapMut<bf16, 2>,
    row0: u32,
    col0: u32,
) {
    stmatrix_bf16(e, &acc, 0);
    match split(thread) {
        1 => {
            tma_store(d, e, col0, row0);
        }
    }
}

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
pub fn tile_gemm_bf16(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    d: TensorMapMut<bf16, 2>,
    n: u32,
    k: u32,
) {
    let tiles_n: u32 = n / 64;
    #[at(block[1])]
    let row0: u32 = (id() / tiles_n) * 64;
    #[at(block[1])]
    let col0: u32 = (id() % tiles_n) * 64;
    group(block[1], || {
        let sa: Shared<[bf16; 64 * 64], Swizzle128>;
        let sb: Shared<[bf16; 64 * 64], Swizzle128>;
        let e: Shared<[bf16; 64 * 64], Swizzle128>; // the result tile, in the layout TMA stores from
        #[at(thread[1])]
        let mut acc = [0.0f32; 32];
        for kt in 0..k / 64 {
            async_(sa, |sa_async| {
                async_(sb, |sb_async| match split(thread) {
                    1 => {
                        tma_load(sa_async, a, kt * 64, row0);
                        tma_load(sb_async, b, kt * 64, col0);
                    }
                });
            });
            group(thread[128], || {
                k_tile(&mut acc, sa, sb);
            });
        }
        partition(
            e,
            thread[128],
            |x| x,
            |e_w| {
                group(thread[128], || {
                    store_tile(&acc, e_w, d, row0, col0);
                });
            },
        );
    });
}

#[test]
fn the_guides_bf16_tile_gemm() {
    let dev = e2e_util::device();
    let (m, n, k) = (128usize, 192usize, 128usize);
    let p = Problem::new((m, n, k), BLayout::NByK, 78);
    let (da, db, _) = p.upload(&dev);
    let mut dd = dev.htod(&vec![bf16::from_f32(1234.0); m * n]).unwrap();
    let (ma, mb) = p.maps(&da, &db, 64, 64);
    let mut md = TensorMapMut::tiled(
        &mut dd,
        [n as u64, m as u64],
        &[2 * n as u64],
        [64, 64],
        TensorSwizzle::B128,
    )
    .unwrap();
    let blocks = ((m / 64) * (n / 64)) as u32;
    tile_gemm_bf16::launch(
        &dev,
        LaunchDims::new(blocks, 128),
        &ma,
        &mb,
        &mut md,
        n as u32,
        k as u32,
    )
    .unwrap();
    let d = dev.dtoh(&dd).unwrap();
    for i in 0..m {
        for j in 0..n {
            // D = A·Bᵀ, within one bf16 step of the exact value.
            let (s, f32_tol) = p.expected(i, j, 1.0, 0.0, 0.0);
            let got = d[i * n + j].to_f32() as f64;
            assert!(
                (got - s).abs() <= s.abs() / 128.0 + f32_tol,
                "D[{i}][{j}] = {got}, want {s}"
            );
        }
    }
}

// docs/GUIDE.md §7 "Consumers taking turns (ping-pong)", verbatim.

/// Consumer `C` (0 or 1): the block's tiles C, C + 2, ..; each tile's k-steps are one turn.
#[prism_device(requires(thread[128]))]
pub fn take_turns<const C: u32>(
    r: Ring<(bf16, bf16)>,
    e: SharedMut<[bf16; 64 * 64], Swizzle128>,
    d: TensorMapMut<bf16, 2>,
    tiles: u32,
    tiles_n: u32,
    k_tiles: u32,
) {
    #[at(thread[1])]
    let mut acc = [0.0f32; 32];
    for j in 0..(tiles + 1 - C) / 2 {
        let t: u32 = 2 * j + C;
        turn(r, C, || {
            for kt in 0..k_tiles {
                drain(r, t * k_tiles + kt, |sa_s, sb_s| {
                    for kk in 0..4 {
                        // the tile's first k-step overwrites the accumulator
                        wgmma_bf16(&mut acc, sa_s, kk * 16, sb_s, kk * 16, kt > 0 || kk > 0);
                    }
                });
            }
        });
        store_tile(&acc, e, d, (t / tiles_n) * 64, (t % tiles_n) * 64); // while the other consumer's turn runs
    }
}

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 384)]
pub fn pingpong_gemm_bf16(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    d: TensorMapMut<bf16, 2>,
    n: u32,
    k: u32,
    tiles: u32,
) {
    let tiles_n: u32 = n / 64;
    let k_tiles: u32 = k / 64;
    group(block[1], || {
        let sa: Shared<[bf16; 4 * 64 * 64], Swizzle128>;
        let sb: Shared<[bf16; 4 * 64 * 64], Swizzle128>;
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
                        ring(4, (sa, sb), |r| match split(warpgroup) {
                            1 => {
                                // the producer: every tile's k-steps, in the order the turns take them
                                for t in 0..tiles {
                                    for kt in 0..k_tiles {
                                        fill(r, t * k_tiles + kt, |sa_s, sb_s| {
                                            match split(thread) {
                                                1 => {
                                                    tma_load(sa_s, a, kt * 64, (t / tiles_n) * 64);
                                                    tma_load(sb_s, b, kt * 64, (t % tiles_n) * 64);
                                                }
                                            }
                                        });
                                    }
                                }
                            }
                            1 => {
                                take_turns::<0>(r, e1_w, d, tiles, tiles_n, k_tiles);
                            }
                            1 => {
                                take_turns::<1>(r, e2_w, d, tiles, tiles_n, k_tiles);
                            }
                        });
                    },
                );
            },
        );
    });
}

/// The guide's ping-pong kernel, one block: an even and an odd number of tiles (consumer 0 takes one turn
/// more), every element of `D` checked.
#[test]
fn the_guides_pingpong_gemm() {
    let dev = e2e_util::device();
    for (m, n, k, seed) in [(128usize, 192usize, 128usize, 79u64), (320, 64, 192, 80)] {
        let p = Problem::new((m, n, k), BLayout::NByK, seed);
        let (da, db, _) = p.upload(&dev);
        let mut dd = dev.htod(&vec![bf16::from_f32(1234.0); m * n]).unwrap();
        let (ma, mb) = p.maps(&da, &db, 64, 64);
        let mut md = TensorMapMut::tiled(
            &mut dd,
            [n as u64, m as u64],
            &[2 * n as u64],
            [64, 64],
            TensorSwizzle::B128,
        )
        .unwrap();
        let tiles = ((m / 64) * (n / 64)) as u32;
        pingpong_gemm_bf16::launch(
            &dev,
            LaunchDims::new(1, 384),
            &ma,
            &mb,
            &mut md,
            n as u32,
            k as u32,
            tiles,
        )
        .unwrap();
        drop(md);
        let d = dev.dtoh(&dd).unwrap();
        for i in 0..m {
            for j in 0..n {
                let (s, f32_tol) = p.expected(i, j, 1.0, 0.0, 0.0);
                let got = d[i * n + j].to_f32() as f64;
                assert!(
                    (got - s).abs() <= s.abs() / 128.0 + f32_tol,
                    "{m}×{n}×{k}: D[{i}][{j}] = {got}, want {s}"
                );
            }
        }
    }
}
