//! Type-and-perspective safety (paper 000 §4.3) for warp-specialized Hopper programs: every generated
//! program with producer/consumer rings, wgmma drains and `set_max_regs` that the checker accepts runs on the
//! emulator (race detection on, random schedules) without a collective misused, an mbarrier misused, an
//! operation in flight touched, a data race, a deadlock, or a spin past the step budget (a ring whose phases
//! never complete). A third run in 2-block clusters with multicast fills; some rings' two consumers take
//! turns (`turn`, ping-pong). `PRISM_SOUNDNESS_CASES` sets the
//! number of programs (default 300).

use prism_core::ast::FnKind;
use prism_core::{compile_kernel, parse};
use prism_runtime::emu::{
    EmuConfig, EmuError, Emulator, FaultKind, Module, ParamValue, Schedule, TensorDataType,
    TensorMap, TensorSwizzle,
};

mod common;
use common::hopper::generate_hopper;
use common::Rng;

fn cases() -> u64 {
    std::env::var("PRISM_SOUNDNESS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// A tensor map of `rows` × 64 bf16 at `addr`, in 64 × 64 boxes with the 128-byte swizzle (what a fill of a
/// generated ring loads).
fn tensor_map(addr: u64, rows: u64) -> ParamValue {
    let m = TensorMap::tiled(
        TensorDataType::Bf16,
        addr,
        &[64, rows],
        &[128],
        &[64, 64],
        TensorSwizzle::B128,
    )
    .expect("tensor map");
    ParamValue::Bytes(m.encode().to_vec())
}

#[test]
fn hopper_programs_never_misuse_collectives() {
    let mut rng = Rng(0x40_9e_e5);
    let (mut accepted, mut with_regs, mut two_rings, mut with_tma, mut multicast) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut device_steps, mut epilogues, mut turns) = (0u64, 0u64, 0u64);
    let mut rules = std::collections::BTreeMap::<String, u64>::new();
    for case in 0..cases() {
        let src = generate_hopper(&mut rng);
        let functions = parse::parse_source(&src).unwrap_or_else(|e| {
            panic!("case {case}: the generator wrote a program that does not parse: {e:?}\n{src}")
        });
        let deps: Vec<_> = functions
            .iter()
            .filter(|f| f.kind == FnKind::Device)
            .cloned()
            .collect();
        for f in functions.iter().filter(|f| f.kind == FnKind::Kernel) {
            let kernels = match compile_kernel(f, &deps) {
                Ok(k) => k,
                Err(diags) => {
                    for d in diags {
                        *rules.entry(d.rule.to_string()).or_default() += 1;
                    }
                    continue;
                }
            };
            accepted += 1;
            with_regs += src.contains("set_max_regs") as u64;
            two_rings += src.contains("let rs1:") as u64;
            with_tma += src.contains("tma_load") as u64;
            device_steps += src.contains("k_step::<") as u64;
            epilogues += src.contains("stmatrix_bf16(") as u64;
            multicast += src.contains("tma_load_multicast") as u64;
            turns += src.contains("turn(rr") as u64;
            for k in kernels {
                let module = Module::parse(&k.ptx).unwrap_or_else(|e| {
                    panic!(
                        "case {case}: emitted PTX does not parse: {e}\n{src}\n{}",
                        k.ptx
                    )
                });
                let threads = k
                    .contract
                    .threads_exact
                    .expect("generated kernels declare threads");
                let mut emu = Emulator::new(EmuConfig {
                    schedule: Schedule::Random { seed: case },
                    // A ring of at most a few dozen steps finishes in well under this; a ring whose phases never
                    // complete spins into it.
                    max_steps: 3_000_000,
                    ..EmuConfig::default()
                });
                let a = emu.alloc(4096);
                let c = emu.alloc(4096);
                let n = 1 + (case % 5) as u32;
                // Random bf16 tiles behind the two tensor maps (a fill reads rows (i % 4)·64.. of `ta`).
                let tiles: Vec<u8> = (0..256 * 64 + 64 * 64)
                    .flat_map(|i: u32| {
                        let x = ((i.wrapping_mul(2654435761) >> 16) % 17) as f32 - 8.0;
                        half::bf16::from_f32(x).to_bits().to_le_bytes()
                    })
                    .collect();
                let ga = emu.alloc(256 * 64 * 2);
                let gb = emu.alloc(64 * 64 * 2);
                emu.write(ga, &tiles[..256 * 64 * 2]).expect("write ta");
                emu.write(gb, &tiles[256 * 64 * 2..]).expect("write tb");
                let gd = emu.alloc(256 * 64 * 2);
                let clustered = k.contract.cluster > 1;
                let result = emu.launch_cluster(
                    &module,
                    &k.entry,
                    [if clustered { 4 } else { 2 }, 1, 1],
                    [threads, 1, 1],
                    clustered.then_some([k.contract.cluster, 1, 1]),
                    k.contract.smem_bytes,
                    &[
                        ParamValue::Ptr(a),
                        ParamValue::Ptr(c),
                        ParamValue::U32(n),
                        tensor_map(ga, 256),
                        tensor_map(gb, 64),
                        tensor_map(gd, 256),
                        ParamValue::Ptr(ga),
                    ],
                );
                match result {
                    Ok(_) => {}
                    Err(EmuError::Faulted { faults, .. }) => {
                        let bad: Vec<_> = faults
                            .iter()
                            .filter(|f| {
                                matches!(
                                    f.kind,
                                    FaultKind::BarrierDivergence
                                        | FaultKind::CollectiveMisuse
                                        | FaultKind::Deadlock
                                        | FaultKind::Livelock
                                        | FaultKind::MbarrierMisuse
                                        | FaultKind::InFlight
                                        | FaultKind::DataRace
                                )
                            })
                            .collect();
                        assert!(
                            bad.is_empty(),
                            "case {case} (n = {n}): a well-typed Hopper program went wrong: {bad:?}\n--- program ---\n{src}\n--- PTX ---\n{}",
                            k.ptx
                        );
                    }
                    Err(e) => panic!("case {case}: launch failed: {e}\n{src}"),
                }
            }
        }
    }
    println!(
        "{} generated Hopper programs, {accepted} well-typed ({with_regs} with set_max_regs, {two_rings} with two rings, {with_tma} with TMA fills, {multicast} multicast in clusters, {device_steps} with k-steps in a device function, {epilogues} storing a tile with stmatrix and TMA, {turns} with consumers taking turns); \
         rejected by rule: {rules:?}; none went wrong on the emulator",
        cases()
    );
    assert!(
        accepted >= cases() / 4,
        "too few well-typed programs ({accepted}) to say anything"
    );
    assert!(
        with_regs > 0
            && two_rings > 0
            && with_tma > 0
            && multicast > 0
            && device_steps > 0
            && epilogues > 0
            && turns > 0,
        "the generator must cover set_max_regs, consecutive rings, TMA fills, multicast and turns"
    );
}
