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
fn run(k: &CompiledKernel, blocks: u32, threads: u32, out_len: usize, seed: u64) -> Result<Vec<u32>, Vec<FaultKind>> {
    let module = Module::parse(&k.ptx).unwrap_or_else(|e| panic!("{e:?}\n{}", k.ptx));
    let mut emu = Emulator::new(EmuConfig {
        schedule: Schedule::Random { seed },
        ..EmuConfig::default()
    });
    let y = emu.alloc(out_len * 4);
    emu.write(y, &vec![0u8; out_len * 4]).expect("write");
    let params = [ParamValue::Ptr(y), ParamValue::U32(out_len as u32)];
    match emu.launch(&module, &k.entry, [blocks, 1, 1], [threads, 1, 1], k.contract.smem_bytes, &params) {
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

#[test]
fn show() {
    for src in [BLOCK_COUNT, GRID_COUNT, BLOCK_SAME_GROUP] {
        for k in kernels(src) {
            match compile_kernel_with(&k, &[], &CompileOptions { sync: SyncPolicy::Inferred }) {
                Err(d) => eprintln!("{}: rejected: {}", k.name, texts(&d)),
                Ok(ks) => {
                    let sites = prism_core::sync::inferred_sites(&k, &[]).unwrap();
                    eprintln!("{}: sites {:?}", k.name, sites);
                    for seed in 0..20 {
                        let r = run(&ks[0], 4, 64.min(ks[0].contract.threads_exact.unwrap_or(64)), 4, seed);
                        eprintln!("  seed {seed}: {:?}", r);
                    }
                }
            }
        }
    }
}

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
