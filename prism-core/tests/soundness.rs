//! Type-and-perspective safety (paper 000 §4.3, Theorem 4.1) as a property test: every
//! generated program that the checker accepts is compiled and run on the emulator, and must never run a
//! collective operation with the wrong threads — no barrier divergence, no collective misuse, no deadlock.
//!
//! The generator (tests/common) nests `group`, `split`, `if`, `for`, `partition` and collectives (`sync_threads`,
//! `sync_warp`, `shfl_xor`, `mma`, warpgroup `wgmma_bf16`, producer/consumer `ring` arms) at random perspectives, and atomics whose total is then read plainly and
//! branched on around a barrier (block level: the inferred barrier makes the branch uniform; across blocks or
//! in the atomics' own thread group: rejected, SYNC-ATOMIC); about a quarter of its programs are well-typed.
//! Data races are not part of the guarantee (paper §3.4.2: Prism does not prevent them) and are not checked.
//! `PRISM_SOUNDNESS_CASES` sets the number of generated programs (default 600).

use prism_core::ast::FnKind;
use prism_core::{compile_kernel, parse};
use prism_runtime::emu::{EmuConfig, EmuError, Emulator, FaultKind, Module, ParamValue, Schedule};

mod common;
use common::{generate, Rng};

fn cases() -> u64 {
    std::env::var("PRISM_SOUNDNESS_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600)
}

/// Threads per block for a launch that satisfies the contract, near 64.
fn block_size(multiple_of: u32, exact: Option<u32>) -> u32 {
    exact.unwrap_or_else(|| {
        let m = multiple_of.max(1);
        m * (64 / m).max(1)
    })
}

#[test]
fn well_typed_programs_never_misuse_collectives() {
    let mut rng = Rng(0x500d_ae55);
    let (mut accepted, mut ran, mut with_atomics) = (0u64, 0u64, 0u64);
    let (mut with_wgmma, mut with_ring) = (0u64, 0u64);
    for case in 0..cases() {
        let src = generate(&mut rng);
        let Ok(functions) = parse::parse_source(&src) else {
            continue;
        };
        for f in functions.iter().filter(|f| f.kind == FnKind::Kernel) {
            let Ok(kernels) = compile_kernel(f, &[]) else {
                continue;
            };
            accepted += 1;
            if src.contains("atomic_add(cnt") {
                with_atomics += 1;
            }
            with_wgmma += src.contains("wgmma_bf16") as u64;
            with_ring += src.contains("ring(2") as u64;
            for k in kernels {
                let module = Module::parse(&k.ptx).unwrap_or_else(|e| {
                    panic!(
                        "case {case}: emitted PTX does not parse: {e}\n{src}\n{}",
                        k.ptx
                    )
                });
                let threads = block_size(k.contract.threads_multiple_of, k.contract.threads_exact);
                let blocks = 2u32;
                let n = (threads * blocks) as usize;
                // Seeded random scheduling: different interleavings for different cases.
                let mut emu = Emulator::new(EmuConfig {
                    schedule: Schedule::Random { seed: case },
                    check_races: false,
                    ..EmuConfig::default()
                });
                let a = emu.alloc(n * 4);
                let c = emu.alloc(n * 4);
                let input: Vec<u8> = (0..n)
                    .flat_map(|i| (i as f32 * 0.5 + 1.0).to_le_bytes())
                    .collect();
                emu.write(a, &input).expect("write input");
                let params = [
                    ParamValue::Ptr(a),
                    ParamValue::Ptr(c),
                    ParamValue::U32(n as u32),
                ];
                let result = emu.launch(
                    &module,
                    &k.entry,
                    [blocks, 1, 1],
                    [threads, 1, 1],
                    k.contract.smem_bytes,
                    &params,
                );
                ran += 1;
                if let Err(EmuError::Faulted { faults, .. }) = &result {
                    let bad: Vec<_> = faults
                        .iter()
                        .filter(|f| {
                            matches!(
                                f.kind,
                                FaultKind::BarrierDivergence
                                    | FaultKind::CollectiveMisuse
                                    | FaultKind::Deadlock
                            )
                        })
                        .collect();
                    assert!(
                        bad.is_empty(),
                        "case {case}: a well-typed program misused a collective: {bad:?}\n--- program ---\n{src}\n--- PTX ---\n{}",
                        k.ptx
                    );
                } else if let Err(e) = result {
                    panic!("case {case}: launch failed: {e}\n{src}");
                }
            }
        }
    }
    println!(
        "{} generated programs, {accepted} well-typed ({with_atomics} read a total accumulated with atomics, \
         {with_wgmma} issue wgmma in warpgroups, {with_ring} run a producer/consumer ring), {ran} launches: no \
         collective misuse",
        cases()
    );
    assert!(
        with_atomics > 0 || cases() < 100,
        "the generator must produce accepted programs that branch on a total accumulated with atomics"
    );
    assert!(
        (with_wgmma > 0 && with_ring > 0) || cases() < 300,
        "the generator must produce accepted programs with warpgroup collectives and pipeline arms"
    );
    assert!(
        accepted >= cases() / 10,
        "too few well-typed programs ({accepted}) to say anything"
    );
}
