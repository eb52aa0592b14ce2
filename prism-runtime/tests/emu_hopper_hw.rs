//! The emulator against hardware: the Hopper probe kernels (tests/fixtures/hopper/probe.ptx, nvcc 13.0) run
//! on the emulator with the inputs that were given to an H100, and every output byte must equal what the
//! H100 produced (tests/fixtures/hopper/h100/, docs/HOPPER-PROBES.md). Inputs are small integers, so the
//! results are exact whatever the accumulation order: any difference is a modelling error (descriptor
//! decoding, swizzle, fragment layouts, scale/transpose flags, f16 packing).

use prism_runtime::emu::*;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hopper");
/// Dynamic shared memory of the wgmma probes (probe.cu: SMEM_A + SMEM_B + 1024).
const SMEM_DYN: u32 = 8192 + 32768 + 1024;

fn module() -> Module {
    let src = std::fs::read_to_string(format!("{DIR}/probe.ptx")).unwrap();
    Module::parse(&src).unwrap_or_else(|e| panic!("probe.ptx: {e}"))
}

fn hw(name: &str) -> Vec<u8> {
    std::fs::read(format!("{DIR}/h100/{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn upload(e: &mut Emulator, bytes: &[u8]) -> u64 {
    let a = e.alloc(bytes.len().max(16));
    e.write(a, bytes).unwrap();
    a
}

/// Runs `entry` on the probe's inputs for `case` and compares D with the H100's, byte for byte.
fn check(m: &Module, cfg: EmuConfig, entry: &str, case: &str, mode: u32, with_desc_out: bool) {
    let (a, b, c, d_hw) = (
        hw(&format!("{case}.A.bin")),
        hw(&format!("{case}.B.bin")),
        hw(&format!("{case}.C.bin")),
        hw(&format!("{case}.D.bin")),
    );
    let mut e = Emulator::new(cfg);
    let (pa, pb, pc) = (upload(&mut e, &a), upload(&mut e, &b), upload(&mut e, &c));
    let pd = upload(&mut e, &vec![0xEEu8; d_hw.len()]);
    let mut params = vec![
        ParamValue::Ptr(pa),
        ParamValue::Ptr(pb),
        ParamValue::Ptr(pc),
        ParamValue::Ptr(pd),
        ParamValue::I32(mode as i32),
    ];
    if with_desc_out {
        let pdesc = upload(&mut e, &[0u8; 16]);
        params.push(ParamValue::Ptr(pdesc));
    }
    match e.launch(m, entry, [1, 1, 1], [128, 1, 1], SMEM_DYN, &params) {
        Ok(_) => {}
        Err(EmuError::Faulted { faults, .. }) => panic!("{case}: faults: {faults:#?}"),
        Err(err) => panic!("{case}: {err}"),
    }
    let d = e.read(pd, d_hw.len()).unwrap();
    if let Some(i) = (0..d.len()).find(|&i| d[i] != d_hw[i]) {
        let word = |v: &[u8]| u32::from_le_bytes(v[i / 4 * 4..i / 4 * 4 + 4].try_into().unwrap());
        panic!(
            "{case}: D differs from the H100 at byte {i} (word {}: emulator {:#010x}, H100 {:#010x}; {} of {} bytes differ)",
            i / 4,
            word(&d),
            word(&d_hw),
            (0..d.len()).filter(|&j| d[j] != d_hw[j]).count(),
            d.len()
        );
    }
}

/// The probe's descriptor swizzle codes: 0 none, 1 128B, 2 64B, 3 32B.
const MODES: [(u32, &str); 4] = [(0, "none"), (1, "128B"), (2, "64B"), (3, "32B")];

#[test]
fn wgmma_from_shared_memory_matches_h100_in_every_swizzle_mode_and_major() {
    let m = module();
    // wgmma_ss<N, TA, TB, SA>: entry names as nvcc mangles them.
    let kernels = [
        (
            "_Z8wgmma_ssILi64ELi0ELi0ELi1EEvPKtS1_PKfPfiPm",
            "wgmma_m64n64_A-k_B-k",
        ),
        (
            "_Z8wgmma_ssILi64ELi1ELi1ELi1EEvPKtS1_PKfPfiPm",
            "wgmma_m64n64_A-mn_B-mn",
        ),
        (
            "_Z8wgmma_ssILi256ELi0ELi0ELi1EEvPKtS1_PKfPfiPm",
            "wgmma_m64n256_A-k_B-k",
        ),
        (
            "_Z8wgmma_ssILi256ELi1ELi1ELi1EEvPKtS1_PKfPfiPm",
            "wgmma_m64n256_A-mn_B-mn",
        ),
    ];
    for (entry, prefix) in kernels {
        for (mode, mname) in MODES {
            check(
                &m,
                EmuConfig::default(),
                entry,
                &format!("{prefix}_{mname}"),
                mode,
                true,
            );
        }
    }
    // Mixed majors and a negated A.
    check(
        &m,
        EmuConfig::default(),
        "_Z8wgmma_ssILi64ELi0ELi1ELi1EEvPKtS1_PKfPfiPm",
        "wgmma_m64n64_A-k_B-mn_128B",
        1,
        true,
    );
    check(
        &m,
        EmuConfig::default(),
        "_Z8wgmma_ssILi64ELi1ELi0ELi1EEvPKtS1_PKfPfiPm",
        "wgmma_m64n64_A-mn_B-k_32B",
        3,
        true,
    );
    check(
        &m,
        EmuConfig::default(),
        "_Z8wgmma_ssILi64ELi0ELi0ELin1EEvPKtS1_PKfPfiPm",
        "wgmma_m64n64_A-k_B-k_128B_negA",
        1,
        true,
    );
}

#[test]
fn wgmma_register_a_scale_d_and_f16_accumulators_match_h100() {
    let m = module();
    let random = EmuConfig {
        schedule: Schedule::Random { seed: 11 },
        ..EmuConfig::default()
    };
    for cfg in [EmuConfig::default(), random] {
        check(
            &m,
            cfg.clone(),
            "_Z12wgmma_ss_nodPKtS0_PKfPfi",
            "wgmma_m64n64_scale-d-0_128B",
            1,
            false,
        );
        check(
            &m,
            cfg.clone(),
            "_Z8wgmma_rsPKtS0_PKfPfi",
            "wgmma_m64n64_A-regs_B-k_128B",
            1,
            false,
        );
        check(
            &m,
            cfg,
            "_Z12wgmma_f16accPKtS0_PKjPji",
            "wgmma_m64n64_f16acc_128B",
            1,
            false,
        );
    }
}

/// A wgmma from a 32-thread block (not a warpgroup) is a fault, not a result.
#[test]
fn wgmma_needs_a_whole_warpgroup() {
    let m = module();
    let mut e = Emulator::new(EmuConfig::default());
    let buf = upload(&mut e, &vec![0u8; 128 * 32 * 4]);
    let r = e.launch(
        &m,
        "_Z12wgmma_ss_nodPKtS0_PKfPfi",
        [1, 1, 1],
        [32, 1, 1],
        SMEM_DYN,
        &[
            ParamValue::Ptr(buf),
            ParamValue::Ptr(buf),
            ParamValue::Ptr(buf),
            ParamValue::Ptr(buf),
            ParamValue::I32(1),
        ],
    );
    match r {
        Err(EmuError::Faulted { faults, .. }) => {
            assert!(
                faults
                    .iter()
                    .any(|f| f.kind == FaultKind::CollectiveMisuse
                        && f.message.contains("warpgroup")),
                "{faults:#?}"
            );
        }
        other => panic!("expected a CollectiveMisuse fault, got {other:?}"),
    }
}

// ---- TMA tensor copies and stmatrix ----

const GW: u64 = 104;
const GH: u64 = 40;

fn tmap(global: u64, box0: u32, box1: u32, sw: TensorSwizzle) -> ParamValue {
    let m = TensorMap::tiled(
        TensorDataType::U16,
        global,
        &[GW, GH],
        &[GW * 2],
        &[box0, box1],
        sw,
    )
    .unwrap();
    ParamValue::Bytes(m.encode().to_vec())
}

fn run(e: &mut Emulator, m: &Module, entry: &str, smem: u32, params: &[ParamValue], case: &str) {
    match e.launch(m, entry, [1, 1, 1], [128, 1, 1], smem, params) {
        Ok(_) => {}
        Err(EmuError::Faulted { faults, .. }) => panic!("{case}: faults: {faults:#?}"),
        Err(err) => panic!("{case}: {err}"),
    }
}

#[test]
fn tma_loads_match_h100_swizzle_oob_and_narrow_boxes() {
    let m = module();
    let cases: [(&str, u32, u32, TensorSwizzle, i32, i32, usize); 6] = [
        (
            "tma_load_none_64x8_inbounds",
            64,
            8,
            TensorSwizzle::None,
            0,
            0,
            1024,
        ),
        (
            "tma_load_128B_64x8_oob_xy",
            64,
            8,
            TensorSwizzle::B128,
            64,
            36,
            1024,
        ),
        ("tma_load_64B_32x8", 32, 8, TensorSwizzle::B64, 8, 3, 512),
        (
            "tma_load_32B_16x8_oob_x",
            16,
            8,
            TensorSwizzle::B32,
            96,
            5,
            256,
        ),
        (
            "tma_load_128B_32x8_narrow_box",
            32,
            8,
            TensorSwizzle::B128,
            0,
            0,
            1024,
        ),
        (
            "tma_load_128B_64x16_negative",
            64,
            16,
            TensorSwizzle::B128,
            -8,
            -3,
            2048,
        ),
    ];
    for (case, b0, b1, sw, c0, c1, dump) in cases {
        let mut e = Emulator::new(EmuConfig::default());
        let g = upload(&mut e, &hw(&format!("{case}.global.bin")));
        let out = upload(&mut e, &vec![0u8; dump]);
        let status = upload(&mut e, &[0xFFu8; 4]);
        let params = [
            tmap(g, b0, b1, sw),
            ParamValue::I32(c0),
            ParamValue::I32(c1),
            ParamValue::I32((b0 * b1 * 2) as i32),
            ParamValue::Ptr(out),
            ParamValue::I32(dump as i32),
            ParamValue::Ptr(status),
        ];
        run(
            &mut e,
            &m,
            "_Z8tma_load14CUtensorMap_stiiiPhiPi",
            dump as u32 + 1024,
            &params,
            case,
        );
        assert_eq!(
            e.read(status, 4).unwrap(),
            vec![1, 0, 0, 0],
            "{case}: the mbarrier did not complete"
        );
        let got = e.read(out, dump).unwrap();
        let want = hw(&format!("{case}.smem.bin"));
        let diff = (0..dump).filter(|&i| got[i] != want[i]).count();
        assert_eq!(
            diff, 0,
            "{case}: {diff} of {dump} shared-memory bytes differ from the H100's"
        );
    }
}

#[test]
fn tma_stores_match_h100() {
    let m = module();
    for (case, b0, b1, sw, c0, c1) in [
        (
            "tma_store_none_64x8_oob_xy",
            64u32,
            8u32,
            TensorSwizzle::None,
            64,
            36,
        ),
        ("tma_store_128B_64x8", 64, 8, TensorSwizzle::B128, 8, 2),
    ] {
        let mut e = Emulator::new(EmuConfig::default());
        let g = upload(&mut e, &vec![0u8; (GW * GH * 2) as usize]);
        let params = [
            tmap(g, b0, b1, sw),
            ParamValue::I32(c0),
            ParamValue::I32(c1),
            ParamValue::I32((b0 * b1) as i32),
            ParamValue::I32(sw.descriptor_code() as i32),
        ];
        run(
            &mut e,
            &m,
            "_Z9tma_store14CUtensorMap_stiiii",
            b0 * b1 * 2 + 1024,
            &params,
            case,
        );
        let got = e.read(g, (GW * GH * 2) as usize).unwrap();
        assert_eq!(
            got,
            hw(&format!("{case}.global.bin")),
            "{case}: global memory differs from the H100's"
        );
    }
}

#[test]
fn stmatrix_matches_h100() {
    let m = module();
    for (trans, case) in [(0, "stmatrix_x4"), (1, "stmatrix_x4_trans")] {
        let mut e = Emulator::new(EmuConfig::default());
        let out = upload(&mut e, &[0u8; 512]);
        match e.launch(
            &m,
            "_Z11stmatrix_x4Phi",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::Ptr(out), ParamValue::I32(trans)],
        ) {
            Ok(_) => {}
            Err(err) => panic!("{case}: {err}"),
        }
        assert_eq!(
            e.read(out, 512).unwrap(),
            hw(&format!("{case}.smem.bin")),
            "{case}"
        );
    }
}

/// A map whose box is wider than its swizzle span, or whose strides are not multiples of 16, is refused
/// with the driver's rule, not encoded.
#[test]
fn tensor_maps_are_validated() {
    let e = |r: Result<TensorMap, TensorMapError>| r.unwrap_err().to_string();
    assert!(e(TensorMap::tiled(
        TensorDataType::Bf16,
        0,
        &[512, 64],
        &[1024],
        &[128, 64],
        TensorSwizzle::B128
    ))
    .contains("swizzle span"));
    assert!(e(TensorMap::tiled(
        TensorDataType::U16,
        0,
        &[100, 40],
        &[200],
        &[64, 8],
        TensorSwizzle::None
    ))
    .contains("multiple of 16"));
    assert!(e(TensorMap::tiled(
        TensorDataType::F32,
        8,
        &[64],
        &[],
        &[64],
        TensorSwizzle::None
    ))
    .contains("16-byte aligned"));
    assert!(e(TensorMap::tiled(
        TensorDataType::F32,
        0,
        &[64, 4],
        &[256],
        &[64, 300],
        TensorSwizzle::None
    ))
    .contains("1 to 256"));
    assert!(TensorMap::decode(&[0u8; 128])
        .unwrap_err()
        .to_string()
        .contains("not a tensor map"));
}

/// The same kernel without its `wgmma.wait_group`: storing the accumulators reads registers the wgmma still
/// owns, which is an `InFlight` fault naming the register (on hardware: undefined, in practice stale values).
#[test]
fn reading_accumulators_before_the_wait_is_a_fault() {
    let src = std::fs::read_to_string(format!("{DIR}/probe.ptx")).unwrap();
    let entry = "_Z12wgmma_ss_nodPKtS0_PKfPfi";
    // Drop the wait in this entry only (its body ends at the next `.visible .entry`).
    let start = src.find(&format!(".visible .entry {entry}(")).unwrap();
    let end = src[start + 1..]
        .find(".visible .entry")
        .map(|e| start + 1 + e)
        .unwrap_or(src.len());
    let body = src[start..end].replacen("wgmma.wait_group.sync.aligned 0;", "", 1);
    assert_ne!(body, src[start..end], "the probe kernel has a wait to drop");
    let m = Module::parse(&format!("{}{}{}", &src[..start], body, &src[end..])).unwrap();
    let mut e = Emulator::new(EmuConfig::default());
    let buf = upload(&mut e, &vec![0u8; 128 * 32 * 4]);
    let r = e.launch(
        &m,
        entry,
        [1, 1, 1],
        [128, 1, 1],
        SMEM_DYN,
        &[
            ParamValue::Ptr(buf),
            ParamValue::Ptr(buf),
            ParamValue::Ptr(buf),
            ParamValue::Ptr(buf),
            ParamValue::I32(1),
        ],
    );
    match r {
        Err(EmuError::Faulted { faults, .. }) => assert!(
            faults
                .iter()
                .any(|f| f.kind == FaultKind::InFlight && f.message.contains("in flight")),
            "{faults:#?}"
        ),
        other => panic!("expected an InFlight fault, got {other:?}"),
    }
}

// ---- Clusters ----

/// Grid 4×4 in clusters of 2×2: every block's cluster ids (`%cluster_ctarank`, `%cluster_ctaid`,
/// `%clusterid`, ...) equal the H100's.
#[test]
fn cluster_special_registers_match_h100() {
    let m = module();
    let mut e = Emulator::new(EmuConfig::default());
    let out = upload(&mut e, &[0u8; 16 * 12 * 4]);
    e.launch_cluster(
        &m,
        "_Z11cluster_idsPj",
        [4, 4, 1],
        [32, 1, 1],
        Some([2, 2, 1]),
        0,
        &[ParamValue::Ptr(out)],
    )
    .unwrap();
    assert_eq!(
        e.read(out, 16 * 12 * 4).unwrap(),
        hw("cluster_2x2_grid_4x4.ids.bin")
    );
    // A grid that is not a multiple of the cluster, or a cluster of more than 16 blocks, is refused.
    for (grid, cl) in [([3, 4, 1], [2, 2, 1]), ([32, 1, 1], [32, 1, 1])] {
        let r = e.launch_cluster(
            &m,
            "_Z11cluster_idsPj",
            grid,
            [32, 1, 1],
            Some(cl),
            0,
            &[ParamValue::Ptr(out)],
        );
        assert!(matches!(r, Err(EmuError::BadLaunch(_))), "{r:?}");
    }
}

// ---- The async proxy ----

/// `src` with the first `line` removed from the body of `entry` (which must contain it).
fn without(src: &str, entry: &str, line: &str) -> String {
    let start = src.find(&format!(".visible .entry {entry}(")).unwrap();
    let end = src[start + 1..]
        .find(".visible .entry")
        .map(|e| start + 1 + e)
        .unwrap_or(src.len());
    let body = src[start..end].replacen(line, "", 1);
    assert_ne!(body, src[start..end], "{entry} has no `{line}`");
    format!("{}{}{}", &src[..start], body, &src[end..])
}

fn expect_race(r: Result<LaunchReport, EmuError>, needle: &str) {
    match r {
        Err(EmuError::Faulted { faults, .. }) => assert!(
            faults
                .iter()
                .any(|f| f.kind == FaultKind::DataRace && f.message.contains(needle)),
            "{faults:#?}"
        ),
        other => panic!("expected a DataRace fault mentioning `{needle}`, got {other:?}"),
    }
}

/// Operands written with `st.shared` and read by wgmma (async proxy) need `fence.proxy.async` in between;
/// without it the emulator reports the race, with race detection off it runs.
#[test]
fn wgmma_operands_written_without_proxy_fence() {
    let src = std::fs::read_to_string(format!("{DIR}/probe.ptx")).unwrap();
    let entry = "_Z12wgmma_ss_nodPKtS0_PKfPfi";
    let m = Module::parse(&without(&src, entry, "fence.proxy.async.shared::cta;")).unwrap();
    let run = |cfg: EmuConfig| {
        let mut e = Emulator::new(cfg);
        let buf = upload(&mut e, &vec![0u8; 128 * 32 * 4]);
        let p = [
            ParamValue::Ptr(buf),
            ParamValue::Ptr(buf),
            ParamValue::Ptr(buf),
            ParamValue::Ptr(buf),
            ParamValue::I32(1),
        ];
        e.launch(&m, entry, [1, 1, 1], [128, 1, 1], SMEM_DYN, &p)
    };
    expect_race(run(EmuConfig::default()), "fence.proxy.async");
    run(EmuConfig {
        check_races: false,
        ..EmuConfig::default()
    })
    .unwrap();
}

/// The epilogue tile of a TMA store written with `st.shared` needs `fence.proxy.async` before the store.
#[test]
fn tma_store_source_written_without_proxy_fence() {
    let src = std::fs::read_to_string(format!("{DIR}/probe.ptx")).unwrap();
    let entry = "_Z9tma_store14CUtensorMap_stiiii";
    let m = Module::parse(&without(&src, entry, "fence.proxy.async.shared::cta;")).unwrap();
    let mut e = Emulator::new(EmuConfig::default());
    let g = upload(&mut e, &vec![0u8; (GW * GH * 2) as usize]);
    let p = [
        tmap(g, 64, 8, TensorSwizzle::None),
        ParamValue::I32(0),
        ParamValue::I32(0),
        ParamValue::I32(512),
        ParamValue::I32(0),
    ];
    expect_race(
        e.launch(&m, entry, [1, 1, 1], [128, 1, 1], 2048, &p),
        "fence.proxy.async",
    );
}
