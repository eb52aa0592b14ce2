//! A warp-specialized Hopper GEMM as public Hopper GEMMs write it (tests/fixtures/hopper/gemm.cu, nvcc 13.0
//! PTX): a producer warpgroup issuing TMA loads into a 3-stage ring with full/empty mbarriers, two consumer
//! warpgroups with setmaxnreg running m64n256k16 wgmmas on 128×256×64 tiles, a persistent grid and a
//! TMA-store epilogue. On the emulator it must produce exactly what a CPU reference gives (integer inputs:
//! exact), at a tile multiple with several tiles and k-steps and at a ragged size; the same source passed the
//! same checks on an H100 (tests/fixtures/hopper/h100/gemm.txt).

use prism_runtime::emu::*;

const PTX: &str = include_str!("fixtures/hopper/gemm.ptx");
const ENTRY: &str = "_Z7gemm_ws14CUtensorMap_stS_S_iii";
/// The 2-block-cluster variant: B tile halves multicast to both blocks (`.reqnctapercluster 2, 1, 1`).
const ENTRY_CLUSTER: &str = "_Z15gemm_ws_cluster14CUtensorMap_stS_S_iii";
/// gemm.cu: STAGES·(A + B stage) + 2 epilogue halves + 1024 alignment slack.
const SMEM: u32 = 3 * (16384 + 32768) + 2 * 32768 + 1024;

fn bf16(x: f32) -> u16 {
    half::bf16::from_f32(x).to_bits()
}

/// Runs D = A·Bᵀ (A: M×K, B: N×K, D: M×N, bf16) on the emulator; returns D.
#[allow(clippy::too_many_arguments)]
fn run(
    src: &str,
    cfg: EmuConfig,
    clustered: bool,
    grid_cap: usize,
    m: usize,
    n: usize,
    k: usize,
    a: &[u16],
    b: &[u16],
) -> Result<Vec<u16>, String> {
    let module = Module::parse(src).map_err(|e| e.to_string())?;
    let mut e = Emulator::new(cfg);
    let up = |e: &mut Emulator, v: &[u16]| {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let p = e.alloc(bytes.len());
        e.write(p, &bytes).unwrap();
        p
    };
    let (pa, pb) = (up(&mut e, a), up(&mut e, b));
    let pd = up(&mut e, &vec![0xEEEE; m * n]);
    let map = |addr: u64, inner: usize, outer: usize, b0: u32, b1: u32, sw| {
        let t = TensorMap::tiled(
            TensorDataType::Bf16,
            addr,
            &[inner as u64, outer as u64],
            &[inner as u64 * 2],
            &[b0, b1],
            sw,
        )
        .unwrap();
        ParamValue::Bytes(t.encode().to_vec())
    };
    let tiles = m.div_ceil(128) * n.div_ceil(256);
    let params = [
        map(pa, k, m, 64, 128, TensorSwizzle::B128),
        map(
            pb,
            k,
            n,
            64,
            if clustered { 128 } else { 256 },
            TensorSwizzle::B128,
        ),
        map(pd, n, m, 256, 64, TensorSwizzle::None),
        ParamValue::I32(m as i32),
        ParamValue::I32(n as i32),
        ParamValue::I32(k as i32),
    ];
    let (entry, grid) = if clustered {
        // One cluster per pair of vertically adjacent tiles.
        let pairs = m.div_ceil(128).div_ceil(2) * n.div_ceil(256);
        (ENTRY_CLUSTER, 2 * pairs.min(grid_cap / 2).max(1) as u32)
    } else {
        (ENTRY, tiles.min(grid_cap) as u32)
    };
    e.launch(&module, entry, [grid, 1, 1], [384, 1, 1], SMEM, &params)
        .map_err(|err| match err {
            EmuError::Faulted { faults, .. } => format!("{faults:#?}"),
            other => other.to_string(),
        })?;
    let bytes = e.read(pd, m * n * 2).unwrap();
    Ok(bytes
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect())
}

fn check(
    cfg: EmuConfig,
    clustered: bool,
    grid_cap: usize,
    m: usize,
    n: usize,
    k: usize,
    seed: u64,
) -> std::time::Duration {
    let mut s = seed;
    let mut small = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 33) % 9) as f32 - 4.0
    };
    let a32: Vec<f32> = (0..m * k).map(|_| small()).collect();
    let b32: Vec<f32> = (0..n * k).map(|_| small()).collect();
    assert!(a32.iter().any(|&x| x != 0.0) && b32.iter().any(|&x| x != 0.0));
    let a: Vec<u16> = a32.iter().map(|&x| bf16(x)).collect();
    let b: Vec<u16> = b32.iter().map(|&x| bf16(x)).collect();
    let t0 = std::time::Instant::now();
    let d = run(PTX, cfg, clustered, grid_cap, m, n, k, &a, &b)
        .unwrap_or_else(|f| panic!("{m}x{n}x{k}: {f}"));
    let elapsed = t0.elapsed();
    for i in 0..m {
        for j in 0..n {
            let acc: f32 = (0..k).map(|l| a32[i * k + l] * b32[j * k + l]).sum();
            assert_eq!(
                d[i * n + j],
                bf16(acc),
                "{m}x{n}x{k}: D[{i}][{j}] = {}, expected {acc}",
                half::bf16::from_bits(d[i * n + j])
            );
        }
    }
    elapsed
}

#[test]
fn warp_specialized_gemm_tile_multiple() {
    // 2 × 2 output tiles (one per block), 4 k-steps: the ring wraps around its 3 stages.
    check(EmuConfig::default(), false, 132, 256, 512, 256, 1);
}

#[test]
fn warp_specialized_gemm_ragged() {
    // Partial tiles in M and N, a partial last k-tile: TMA zero fill and clipped stores.
    check(EmuConfig::default(), false, 132, 200, 328, 136, 2);
}

#[test]
fn warp_specialized_gemm_persistent_random_schedule() {
    // 6 output tiles on 2 persistent blocks: each walks three tiles through the same ring; blocks, warps
    // and the ring's producer and consumers interleave at random.
    check(
        EmuConfig {
            schedule: Schedule::Random { seed: 5 },
            ..EmuConfig::default()
        },
        false,
        2,
        256,
        768,
        192,
        3,
    );
}

/// The yardstick for emulator speed on Hopper code: a 512³ GEMM of this kind (printed, not timed
/// as a test; docs/EMULATOR.md records the figure).
#[test]
fn warp_specialized_gemm_512_cubed() {
    let t = check(EmuConfig::default(), false, 132, 512, 512, 512, 4);
    println!(
        "emulator: 512x512x512 warp-specialized bf16 GEMM in {:.2} s",
        t.as_secs_f64()
    );
}

/// 2-block clusters: each block loads half of the shared B tile and multicasts it to both; consumers
/// release a stage in both blocks (a remote mbarrier arrive). At a tile multiple, ragged, and with one
/// persistent cluster over several tile pairs under a random schedule.
#[test]
fn cluster_multicast_gemm() {
    check(EmuConfig::default(), true, 132, 256, 512, 256, 5);
    check(EmuConfig::default(), true, 132, 200, 328, 136, 6);
    check(
        EmuConfig {
            schedule: Schedule::Random { seed: 9 },
            ..EmuConfig::default()
        },
        true,
        2,
        512,
        512,
        128,
        7,
    );
}

/// Inputs of `m` × `k` and `n` × `k` ones (bf16 1.0) for the fault tests, where only the faults matter.
fn ones(m: usize, n: usize, k: usize) -> (Vec<u16>, Vec<u16>) {
    (vec![bf16(1.0); m * k], vec![bf16(1.0); n * k])
}

/// Without `cp.async.bulk.wait_group.read`, a persistent block rewrites its epilogue tile for the next output
/// tile while the TMA store of the previous one may still be reading it: reported.
#[test]
fn epilogue_rewritten_while_its_tma_store_reads_it() {
    let src = PTX.replacen("cp.async.bulk.wait_group.read 0;", "", 1);
    assert_ne!(src, PTX);
    let (a, b) = ones(128, 768, 64);
    // One persistent block walks all three output tiles.
    let faults = run(&src, EmuConfig::default(), false, 1, 128, 768, 64, &a, &b)
        .expect_err("the rewrite must be reported");
    assert!(
        faults.contains("DataRace") && faults.contains("TMA store"),
        "{faults}"
    );
}

/// setmaxnreg with a count that is not a multiple of 8, or counts that take the block past the SM's 64 K
/// registers (40·128 + 240·256 > 65536), are faults; the fixture's 40 / 232 are fine (the tests above).
#[test]
fn setmaxnreg_counts_are_checked() {
    let (a, b) = ones(128, 256, 64);
    for (count, needle) in [("236", "multiple of 8"), ("240", "65536")] {
        let src = PTX.replace(
            "setmaxnreg.inc.sync.aligned.u32 232;",
            &format!("setmaxnreg.inc.sync.aligned.u32 {count};"),
        );
        let faults = run(&src, EmuConfig::default(), false, 132, 128, 256, 64, &a, &b)
            .expect_err("the count must be refused");
        assert!(faults.contains(needle), "setmaxnreg {count}: {faults}");
    }
}

/// setmaxnreg sets a count relative to the one the warpgroup has (`.inc` needs current ≤ N, `.dec` current
/// ≥ N): with the entry count declared (`.maxnreg 168`), consumers that `dec` to 232 or a producer that `inc`s
/// to 40 are faults, and the fixture's directions run.
#[test]
fn setmaxnreg_direction_is_checked_against_the_current_count() {
    let (a, b) = ones(128, 256, 64);
    let declared = PTX.replacen(
        ".maxntid 384, 1, 1\n",
        ".maxntid 384, 1, 1\n.maxnreg 168\n",
        1,
    );
    assert_ne!(declared, PTX, "the fixture declares .maxntid");
    run(
        &declared,
        EmuConfig::default(),
        false,
        132,
        128,
        256,
        64,
        &a,
        &b,
    )
    .expect("the fixture's inc 232 / dec 40 from 168 are fine");
    for (from, to, needle) in [
        (
            "inc.sync.aligned.u32 232;",
            "dec.sync.aligned.u32 232;",
            "setmaxnreg.dec 232: warpgroup",
        ),
        (
            "dec.sync.aligned.u32 40;",
            "inc.sync.aligned.u32 40;",
            "setmaxnreg.inc 40: warpgroup 0 has 168",
        ),
    ] {
        let src = declared.replace(&format!("setmaxnreg.{from}"), &format!("setmaxnreg.{to}"));
        let faults = run(&src, EmuConfig::default(), false, 132, 128, 256, 64, &a, &b)
            .expect_err("the direction must be refused");
        assert!(faults.contains(needle), "setmaxnreg.{to}: {faults}");
    }
}
