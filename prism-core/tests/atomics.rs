//! Plain reads after atomics (issue item 1): a value that threads or blocks accumulate with `atomic_*` and
//! then read with a plain load must be ordered by a barrier at the right scope (block level), or the program
//! is rejected (`SYNC-ATOMIC`: across blocks no barrier can order them).
mod emit_support;
use emit_support::*;
use prism_core::ast::{FnKind, Function};
use prism_core::{compile_kernel_with, CompileOptions, CompiledKernel, SyncPolicy};
use prism_runtime::emu::{EmuConfig, EmuError, Emulator, FaultKind, Module, ParamValue, Schedule};

fn kernels(src: &str) -> Vec<Function> {
    prism_core::parse::parse_source(src)
        .unwrap_or_else(|d| panic!("parse failed: {}", texts(&d)))
        .into_iter()
        .filter(|f| f.kind == FnKind::Kernel)
        .collect()
}

/// Runs `k` with `blocks` x `threads`, params (y: *mut u32 of `out_len`, n), under a random schedule.
fn run(
    k: &CompiledKernel,
    blocks: u32,
    threads: u32,
    out_len: usize,
    seed: u64,
) -> Result<Vec<u32>, Vec<FaultKind>> {
    let module = Module::parse(&k.ptx).unwrap_or_else(|e| panic!("{e:?}\n{}", k.ptx));
    let mut emu = Emulator::new(EmuConfig {
        schedule: Schedule::Random { seed },
        ..EmuConfig::default()
    });
    let y = emu.alloc(out_len * 4);
    emu.write(y, &vec![0u8; out_len * 4]).expect("write");
    let params = [ParamValue::Ptr(y), ParamValue::U32(out_len as u32)];
    match emu.launch(
        &module,
        &k.entry,
        [blocks, 1, 1],
        [threads, 1, 1],
        k.contract.smem_bytes,
        &params,
    ) {
        Ok(_) => Ok(emu
            .read(y, out_len * 4)
            .expect("read")
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()),
        Err(EmuError::Faulted { faults, .. }) => Err(faults.iter().map(|f| f.kind).collect()),
        Err(e) => panic!("launch of `{}` failed: {e:?}", k.entry),
    }
}

/// Block level: every thread adds 1 to a shared counter, then the block reads it (plainly) and branches on it
/// around a barrier.
const BLOCK_COUNT: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 64, smem = 16)]
pub fn block_count(y: *mut u32, n: u32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(y, block[1], |j| b + j, |y_b| {
        group(block[1], || {
            let cnt: Shared<[u32; 4]>;
            claim(cnt, thread[1], |c1| match split(thread) {
                1 => {
                    c1[0] = 0u32;
                }
            });
            group(thread[1], || {
                atomic_add(cnt, 0, 1u32);
            });
            #[at(block[1])]
            let total: u32 = cnt[0];
            if total == 64u32 {
                sync_threads();
            }
            claim(y_b, thread[1], |y1| match split(thread) {
                1 => {
                    y1[0] = total;
                }
            });
        });
    });
}
"#;

/// Grid level: every block adds 1 to a global counter, then reads it plainly.
const GRID_COUNT: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 32)]
pub fn grid_count(y: *mut u32, n: u32) {
    #[at(block[1])]
    let b: u32 = id();
    group(block[1], || {
        match split(thread) {
            1 => {
                atomic_add(y, 0, 1u32);
            }
        }
        #[at(block[1])]
        let total: u32 = y[0];
        if total == 2u32 {
            sync_threads();
        }
    });
}
"#;

/// Block level, in one thread group: each thread adds, then reads the counter while others still add.
const BLOCK_SAME_GROUP: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 64, smem = 16)]
pub fn block_same_group(y: *mut u32, n: u32) {
    group(block[1], || {
        let cnt: Shared<[u32; 4]>;
        #[at(thread[1])]
        let mut seen: u32 = 0u32;
        group(thread[1], || {
            atomic_add(cnt, 0, 1u32);
            seen = cnt[0];
        });
    });
}
"#;

fn compile(src: &str, sync: SyncPolicy) -> Result<CompiledKernel, Vec<prism_core::Diagnostic>> {
    let k = kernels(src).remove(0);
    compile_kernel_with(&k, &[], &CompileOptions { sync }).map(|mut v| v.remove(0))
}

fn rejected(src: &str) -> Vec<prism_core::Diagnostic> {
    match compile(src, SyncPolicy::Inferred) {
        Ok(_) => panic!("expected a rejection:\n{src}"),
        Err(d) => d,
    }
}

#[test]
fn block_total_after_atomics_gets_a_barrier_and_runs_race_free() {
    let k = kernels(BLOCK_COUNT).remove(0);
    let sites =
        prism_core::sync::inferred_sites(&k, &[]).unwrap_or_else(|d| panic!("{}", texts(&d)));
    // Body: [0] let b, [1] partition(y) -> [1,0] group -> [1,0,0,0]: [0] let cnt, [1] claim, [2] group
    // (atomics), [3] let total = cnt[0].
    let before_read: Vec<usize> = vec![1, 0, 0, 0, 3];
    assert!(
        sites.iter().any(|x| x.pos == before_read
            && x.barrier.at == prism_core::ast::Perspective::block(1)
            && x.reasons.iter().any(|r| r.ends_with("cnt"))),
        "a block barrier orders the read of the total after the atomics: {sites:?}"
    );
    let ck = compile(BLOCK_COUNT, SyncPolicy::Inferred).unwrap_or_else(|d| panic!("{}", texts(&d)));
    for seed in 0..24 {
        assert_eq!(run(&ck, 4, 64, 4, seed), Ok(vec![64; 4]), "schedule {seed}");
    }
    // Without that barrier, some schedule reads a partial total (a race, or threads disagree on the branch).
    let i = sites.iter().position(|x| x.pos == before_read).unwrap();
    let weak = compile(BLOCK_COUNT, SyncPolicy::InferredWithout(i))
        .unwrap_or_else(|d| panic!("{}", texts(&d)));
    let bad = (0..24)
        .filter(|&seed| run(&weak, 4, 64, 4, seed) != Ok(vec![64; 4]))
        .count();
    assert!(
        bad > 0,
        "dropping the barrier before the read must show on the emulator"
    );
}

#[test]
fn reads_after_atomics_that_no_barrier_can_order_are_rejected() {
    for (src, name, at) in [
        (GRID_COUNT, "`y`", "grid[1]"),
        (BLOCK_SAME_GROUP, "`cnt`", "thread[1]"),
    ] {
        let d = rejected(src);
        assert!(
            d.iter().any(|d| d.rule == "SYNC-ATOMIC"
                && d.message.contains(name)
                && d.message.contains(at)
                && d.help.is_some()
                && !d.notes.is_empty()),
            "{}",
            texts(&d)
        );
    }
    // What the rule prevents: the naive policy (no inference, so no SYNC-ATOMIC) still compiles the grid-level
    // program, and under random schedules threads of one block read different totals and diverge at the
    // barrier.
    let naive = compile(GRID_COUNT, SyncPolicy::Naive).unwrap_or_else(|d| panic!("{}", texts(&d)));
    {
        let ck = naive;
        let diverged = (0..24)
            .filter(|&seed| {
                run(&ck, 4, 32, 4, seed).is_err_and(|f| f.contains(&FaultKind::BarrierDivergence))
            })
            .count();
        assert!(
            diverged > 0,
            "the unordered read must show as barrier divergence"
        );
    }
}

/// Atomics followed by atomics (reductions), and atomics whose returned value is used (the look-back scan's
/// tile counter), stay legal.
const ATOMICS_ONLY: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 32, smem = 16)]
pub fn atomics_only(y: *mut u32, n: u32) {
    group(block[1], || {
        let tile_s: Shared<[u32; 4]>;
        claim(tile_s, thread[1], |ts| match split(thread) {
            1 => {
                ts[0] = atomic_add(y, 0, 1u32);
            }
        });
        #[at(block[1])]
        let tile: u32 = tile_s[0];
        group(thread[1], || {
            atomic_add(y, 1, tile);
            atomic_max(y, 2, tile);
        });
    });
}
"#;

/// A plain write, then atomics on the same grid-level memory: the atomics race with other blocks' writes.
const WRITE_THEN_ATOMIC: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 32)]
pub fn write_then_atomic(y: *mut u32, n: u32) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(y, thread[1], |j| t + j, |y_t| {
        group(thread[1], || {
            y_t[0] = 0u32;
        });
    });
    group(thread[1], || {
        atomic_add(y, 0, 1u32);
    });
}
"#;

#[test]
fn atomics_with_atomics_stay_legal_and_plain_then_atomic_is_rejected() {
    let ck =
        compile(ATOMICS_ONLY, SyncPolicy::Inferred).unwrap_or_else(|d| panic!("{}", texts(&d)));
    for seed in 0..8 {
        let out = run(&ck, 3, 32, 4, seed).expect("race-free");
        assert_eq!(out[0], 3, "three tiles taken");
        assert_eq!(
            out[1],
            32 * 3,
            "32 threads per block add their tile: 32 * (0 + 1 + 2)"
        );
        assert_eq!(out[2], 2);
    }
    let d = rejected(WRITE_THEN_ATOMIC);
    assert!(
        d.iter()
            .any(|d| d.rule == "SYNC-ATOMIC" && d.message.contains("after plain")),
        "{}",
        texts(&d)
    );
}
