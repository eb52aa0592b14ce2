//! Type-and-perspective safety (paper 000 §4.3) for warp-specialized Hopper programs: every generated
//! program with producer/consumer rings, wgmma drains and `set_max_regs` that the checker accepts runs on the
//! emulator (race detection on, random schedules) without a collective misused, an mbarrier misused, an
//! operation in flight touched, a deadlock, or a spin past the step budget (a ring whose phases never
//! complete). `PRISM_SOUNDNESS_CASES` sets the number of programs (default 300).

use prism_core::ast::FnKind;
use prism_core::{compile_kernel, parse};
use prism_runtime::emu::{EmuConfig, EmuError, Emulator, FaultKind, Module, ParamValue, Schedule};

mod common;
use common::hopper::generate_hopper;
use common::Rng;

fn cases() -> u64 {
    std::env::var("PRISM_SOUNDNESS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

#[test]
fn hopper_programs_never_misuse_collectives() {
    let mut rng = Rng(0x40_9e_e5);
    let (mut accepted, mut with_regs, mut two_rings) = (0u64, 0u64, 0u64);
    let mut rules = std::collections::BTreeMap::<String, u64>::new();
    for case in 0..cases() {
        let src = generate_hopper(&mut rng);
        let functions = parse::parse_source(&src).unwrap_or_else(|e| {
            panic!("case {case}: the generator wrote a program that does not parse: {e:?}\n{src}")
        });
        for f in functions.iter().filter(|f| f.kind == FnKind::Kernel) {
            let kernels = match compile_kernel(f, &[]) {
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
                let result = emu.launch(
                    &module,
                    &k.entry,
                    [2, 1, 1],
                    [threads, 1, 1],
                    k.contract.smem_bytes,
                    &[ParamValue::Ptr(a), ParamValue::Ptr(c), ParamValue::U32(n)],
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
        "{} generated Hopper programs, {accepted} well-typed ({with_regs} with set_max_regs, {two_rings} with two rings); \
         rejected by rule: {rules:?}; none went wrong on the emulator",
        cases()
    );
    assert!(
        accepted >= cases() / 4,
        "too few well-typed programs ({accepted}) to say anything"
    );
    assert!(
        with_regs > 0 && two_rings > 0,
        "the generator must cover set_max_regs and consecutive rings"
    );
}
