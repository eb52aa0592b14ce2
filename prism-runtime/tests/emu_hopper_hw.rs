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
