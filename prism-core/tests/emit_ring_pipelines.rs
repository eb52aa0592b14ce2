//! Ring pipelines beyond the producer/consumer GEMM (docs/SYNC.md "Rings"): a ring declared inside a loop,
//! one warpgroup that both fills and drains, drains that `tma_store` their slot, fills that copy with
//! `cp_async` or `cp_async_bulk`, and the compile-time checks of slots TMA cannot load and of fills that
//! load a memory only on some paths. Every kernel runs on the emulator under several schedules with the race
//! detector on, checked element by element against a CPU reference on random inputs.
mod emit_support;
use emit_support::hopper::*;
use emit_support::*;
use prism_core::CompiledKernel;
use prism_runtime::emu::{EmuConfig, Emulator, Module, ParamValue, Schedule};

/// The schedules every kernel here runs under: round-robin and three random ones.
fn schedules() -> Vec<EmuConfig> {
    let mut out = vec![EmuConfig::default()];
    for seed in [3, 11, 29] {
        out.push(EmuConfig {
            schedule: Schedule::Random { seed },
            ..EmuConfig::default()
        });
    }
    out
}

/// Launches `k` with `blocks` blocks on a fresh emulator; the buffers are made by `setup`, and `check`
/// reads the results back.
fn run_each_schedule(
    k: &CompiledKernel,
    blocks: u32,
    setup: &dyn Fn(&mut Emulator) -> (Vec<ParamValue>, u64),
    check: &dyn Fn(&Emulator, u64),
) {
    let module = Module::parse(&k.ptx).expect("parse");
    let threads = k.contract.threads_exact.expect("threads = N");
    for cfg in schedules() {
        let what = format!("{:?}", cfg.schedule);
        let mut emu = Emulator::new(cfg);
        let (params, out) = setup(&mut emu);
        emu.launch(
            &module,
            &k.entry,
            [blocks, 1, 1],
            [threads, 1, 1],
            k.contract.smem_bytes,
            &params,
        )
        .unwrap_or_else(|e| panic!("`{}` under {what}: {e:?}", k.entry));
        check(&emu, out);
    }
}

fn f32s(emu: &Emulator, at: u64, n: usize) -> Vec<f32> {
    let b = emu.read(at, 4 * n).expect("read");
    b.chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Every element of `got` against `want` (f64 sums; bf16 products are exact in f32, so only the order of
/// the sums differs).
fn assert_close(what: &str, got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| ((got[i] as f64) - want[i]).abs() > 1e-4 * (1.0 + want[i].abs()))
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: {} of {} wrong, first [{}] = {} (want {})",
        bad.len(),
        got.len(),
        bad[0],
        got[bad[0]],
        want[bad[0]]
    );
}

/// The accumulator fragment of a 64 × 64 wgmma tile written row-major into `c_x` (GUIDE §7's layout).
const STORE_TILE: &str = r#"
#[prism_device(requires(warpgroup, thread[1]))]
pub fn store_tile(c_x: *mut f32, acc: &[f32; 32]) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(c_x, thread[1], |rr, q| (16 * (t / 32) + (t % 32) / 4 + rr) * 64 + 2 * (t % 4) + q, |c_t| {
        group(thread[1], || {
            for i in 0..32 {
                c_t[(8 * ((i / 2) % 2), 8 * (i / 4) + i % 2)] = acc[i];
            }
        });
    });
}
"#;

/// A ring inside a loop over tiles: a fresh ring per tile whose steps start at 0 each time.
const RING_PER_TILE: &str = r#"
#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256)]
pub fn ring_per_tile(a: TensorMap<bf16, 2>, b: TensorMap<bf16, 2>, c: *mut f32, tiles: u32, k_tiles: u32) {
    partition(c, block[1], |x| x, |c_blk| {
        group(block[1], || {
            let sa: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
            let sb: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
            for tile in 0..tiles {
                partition(c_blk, thread[128], |x| tile * 4096 + x, |c_wg| {
                    ring(2, (sa, sb), |r| match split(warpgroup) {
                        1 => {
                            for kt in 0..k_tiles {
                                fill(r, kt, |sa_s, sb_s| match split(thread) {
                                    1 => {
                                        tma_load(sa_s, a, kt * 64, 0);
                                        tma_load(sb_s, b, kt * 64, tile * 64);
                                    }
                                });
                            }
                        }
                        1 => {
                            #[at(thread[1])]
                            let mut acc = [0.0f32; 32];
                            for kt in 0..k_tiles {
                                drain(r, kt, |sa_s, sb_s| {
                                    for kk in 0..4 {
                                        wgmma_bf16(&mut acc, sa_s, kk * 16, sb_s, kk * 16);
                                    }
                                });
                            }
                            store_tile(c_wg, &acc);
                        }
                    });
                });
            }
        });
    });
}
"#;

/// C[tile] (64 × 64) = A (64 × k) · B[tile rows]ᵀ, for `tiles` tiles of B's rows.
fn tiles_reference(av: &[f32], bv: &[f32], tiles: usize, k: usize) -> Vec<f64> {
    let mut want = vec![0f64; tiles * 4096];
    for t in 0..tiles {
        for i in 0..64 {
            for j in 0..64 {
                want[t * 4096 + i * 64 + j] = (0..k)
                    .map(|x| av[i * k + x] as f64 * bv[(t * 64 + j) * k + x] as f64)
                    .sum();
            }
        }
    }
    want
}

/// Each iteration's ring used to start on mbarriers in the phases the previous one left: a slot that went
/// through an odd number of steps passed its next fill's wait at once (silent wrong results for 1 and 2
/// k-steps, a deadlock for 3). Now every ring inside a run-time loop starts afresh.
#[test]
fn a_ring_inside_a_loop_starts_afresh_each_iteration() {
    let ks = compile_src(&format!("{STORE_TILE}{RING_PER_TILE}"));
    assemble_all(&ks);
    let k = &ks[0];
    assert!(
        k.ptx.contains("mbarrier.inval.shared::cta.b64"),
        "{}",
        k.ptx
    );
    let tiles = 3usize;
    for k_tiles in 1..=4usize {
        let kk = 64 * k_tiles;
        let (ab, av) = matrix(64, kk, 40 + k_tiles as u64);
        let (bb, bv) = matrix(64 * tiles, kk, 50 + k_tiles as u64);
        let want = tiles_reference(&av, &bv, tiles, kk);
        let setup = |emu: &mut Emulator| {
            let (da, db) = (buf(emu, &ab), buf(emu, &bb));
            let dc = buf(emu, &f32::NAN.to_le_bytes().repeat(tiles * 4096));
            let params = vec![
                tmap(k, 0, da, 64, kk as u64),
                tmap(k, 1, db, 64 * tiles as u64, kk as u64),
                ParamValue::Ptr(dc),
                ParamValue::U32(tiles as u32),
                ParamValue::U32(k_tiles as u32),
            ];
            (params, dc)
        };
        let check = |emu: &Emulator, dc: u64| {
            let got = f32s(emu, dc, tiles * 4096);
            assert_close(&format!("{k_tiles} k-steps"), &got, &want);
        };
        run_each_schedule(k, 1, &setup, &check);
    }
}

/// Software pipelining in one warpgroup: fill step kt + 1, then drain step kt, in a loop over a 2-slot ring.
const SELF_PIPE: &str = r#"
#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
pub fn self_pipe(a: TensorMap<bf16, 2>, b: TensorMap<bf16, 2>, c: *mut f32, k_tiles: u32) {
    partition(c, block[1], |x| x, |c_blk| {
        group(block[1], || {
            let sa: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
            let sb: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
            #[at(thread[1])]
            let mut acc = [0.0f32; 32];
            ring(2, (sa, sb), |r| {
                fill(r, 0, |sa_s, sb_s| match split(thread) {
                    1 => {
                        tma_load(sa_s, a, 0, 0);
                        tma_load(sb_s, b, 0, 0);
                    }
                });
                for kt in 0..k_tiles {
                    if kt + 1 < k_tiles {
                        fill(r, kt + 1, |sa_s, sb_s| match split(thread) {
                            1 => {
                                tma_load(sa_s, a, (kt + 1) * 64, 0);
                                tma_load(sb_s, b, (kt + 1) * 64, 0);
                            }
                        });
                    }
                    drain(r, kt, |sa_s, sb_s| {
                        for kk in 0..4 {
                            wgmma_bf16(&mut acc, sa_s, kk * 16, sb_s, kk * 16);
                        }
                    });
                }
            });
            partition(c_blk, thread[128], |x| x, |c_wg| {
                store_tile(c_wg, &acc);
            });
        });
    });
}
"#;

/// The drain of step kt keeps its wgmmas in flight and hands its slot back at the next drain; the loop's
/// back edge reached the next fill first, which waited for that very slot (a deadlock). A loop body that
/// ends with a group in flight and starts with something other than a drain now retires it at its head.
#[test]
fn one_warpgroup_prefetches_into_a_two_slot_ring() {
    let ks = compile_src(&format!("{STORE_TILE}{SELF_PIPE}"));
    assemble_all(&ks);
    run_single_tile(&ks[0], &[1, 2, 5], (60, 70));
}

/// A copy pipeline: one warp loads 8 × 64 tiles into a ring, the other stores each drained slot with TMA.
const COPY_RING: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64)]
pub fn copy_ring(src: TensorMap<bf16, 2>, dst: TensorMapMut<bf16, 2>, steps: u32) {
    group(block[1], || {
        let s: Shared<[bf16; 2 * 8 * 64], Swizzle128>;
        ring(2, s, |r| match split(warp) {
            1 => {
                for i in 0..steps {
                    drain(r, i, |s_s| match split(thread) {
                        1 => {
                            tma_store(dst, s_s, 0, i * 8);
                        }
                    });
                }
            }
            1 => {
                for i in 0..steps {
                    fill(r, i, |s_s| match split(thread) {
                        1 => {
                            tma_load(s_s, src, 0, i * 8);
                        }
                    });
                }
            }
        });
    });
}
"#;

/// A drain's `tma_store` reads the slot asynchronously: the slot goes back to the producer only after
/// `cp.async.bulk.wait_group.read`, else the next fill overwrites it while the store reads it (the
/// emulator's race detector reported it; a GPU stores the wrong data).
#[test]
fn a_drain_hands_its_slot_back_after_its_store_read_it() {
    let ks = compile_src(COPY_RING);
    assemble_all(&ks);
    let k = &ks[0];
    let store = k.ptx.find(".global.shared::cta").expect("a TMA store");
    let wait = k.ptx[store..]
        .find("cp.async.bulk.wait_group.read 0;")
        .expect("a wait after the store");
    let arrive = k.ptx[store..]
        .find("mbarrier.arrive")
        .expect("the drain's arrive");
    assert!(
        wait < arrive,
        "the slot goes back before the store read it:\n{}",
        k.ptx
    );
    let steps = 6usize;
    let (xb, xv) = matrix(steps * 8, 64, 80);
    let setup = |emu: &mut Emulator| {
        let x = buf(emu, &xb);
        let o = buf(emu, &vec![0xFFu8; xb.len()]);
        let params = vec![
            tmap(k, 0, x, steps as u64 * 8, 64),
            tmap(k, 1, o, steps as u64 * 8, 64),
            ParamValue::U32(steps as u32),
        ];
        (params, o)
    };
    let check = |emu: &Emulator, o: u64| {
        let got = emu.read(o, xb.len()).expect("read");
        let bad = (0..xv.len())
            .filter(|&i| got[2 * i..2 * i + 2] != xb[2 * i..2 * i + 2])
            .count();
        assert_eq!(bad, 0, "{bad} of {} elements not copied", xv.len());
    };
    run_each_schedule(k, 1, &setup, &check);
}

/// A ring filled (`@COPY@`) by per-lane `cp_async`s or by one thread's `cp_async_bulk` of the whole slot;
/// the other warp sums each slot.
const COPY_FILL: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64)]
pub fn copy_fill(x: *const f32, out: *mut f32, steps: u32) {
    partition(out, block[1], |j| j, |o_b| {
        group(block[1], || {
            let s: Shared<[f32; 2 * 64]>;
            partition(o_b, thread[32], |j| j, |o_w| {
                ring(2, s, |r| match split(warp) {
                    1 => {
                        #[at(thread[1])]
                        let l: u32 = id();
                        #[at(thread[1])]
                        let mut acc: f32 = 0.0;
                        for i in 0..steps {
                            drain(r, i, |s_s| {
                                acc += s_s[l] + s_s[l + 32] * ((i + 1) as f32);
                            });
                        }
                        partition(o_w, thread[1], |j| l + j, |o_t| {
                            group(thread[1], || {
                                o_t[0] = acc;
                            });
                        });
                    }
                    1 => {
                        #[at(thread[1])]
                        let l: u32 = id();
                        for i in 0..steps {
                            fill(r, i, |s_s| @COPY@);
                        }
                    }
                });
            });
        });
    });
}
"#;

fn run_copy_fill(k: &CompiledKernel) {
    let steps = 5usize;
    let mut g = rng(90);
    let x: Vec<f32> = (0..steps * 64).map(|_| g()).collect();
    let want: Vec<f64> = (0..32)
        .map(|l| {
            (0..steps)
                .map(|i| x[i * 64 + l] as f64 + x[i * 64 + l + 32] as f64 * (i + 1) as f64)
                .sum()
        })
        .collect();
    let setup = |emu: &mut Emulator| {
        let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let dx = buf(emu, &bytes);
        let o = buf(emu, &f32::NAN.to_le_bytes().repeat(32));
        let params = vec![
            ParamValue::Ptr(dx),
            ParamValue::Ptr(o),
            ParamValue::U32(steps as u32),
        ];
        (params, o)
    };
    let check = |emu: &Emulator, o: u64| assert_close(&k.entry, &f32s(emu, o, 32), &want);
    run_each_schedule(k, 1, &setup, &check);
}

/// `cp_async`s complete on no mbarrier: the fill waits for its own (`cp.async.wait_all`) before it arrives
/// on the full mbarrier, else a drain may read the slot before the copies land (the emulator completes
/// copies at issue, so only the PTX shows it).
#[test]
fn a_cp_async_fill_waits_for_its_copies_before_it_arrives() {
    let copy = "{ group(thread[1], || { cp_async(s_s, l, x, i * 64 + l, 4); \
                cp_async(s_s, l + 32, x, i * 64 + l + 32, 4); }); }";
    let ks = compile_src(&COPY_FILL.replace("@COPY@", copy));
    assemble_all(&ks);
    let k = &ks[0];
    let last_copy = k.ptx.rfind("cp.async.ca.shared.global").expect("copies");
    let rest = &k.ptx[last_copy..];
    let wait = rest
        .find("cp.async.wait_all;")
        .expect("a wait for the copies");
    let arrive = rest.find("mbarrier.arrive").expect("the fill's arrive");
    assert!(wait < arrive, "{}", k.ptx);
    run_copy_fill(k);
}

/// `cp_async_bulk` into a fill name completes on the slot's full mbarrier, like `tma_load` (it was refused
/// with ASYNC-BULK, whose message said the target was not at block[1]).
#[test]
fn cp_async_bulk_fills_a_slot() {
    let copy = "match split(thread) { 1 => { cp_async_bulk(s_s, 0, x, i * 64, 256); } }";
    let ks = compile_src(&COPY_FILL.replace("@COPY@", copy));
    assemble_all(&ks);
    run_copy_fill(&ks[0]);
}

/// A rank-1 TMA ring over `Shared<[f32; @N@]>` (@DECL@: allocations before it).
const LINEAR_TMA_RING: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64)]
pub fn linear_ring(x: TensorMap<f32, 1>, out: *mut f32, steps: u32) {
    partition(out, block[1], |j| j, |o_b| {
        group(block[1], || {
            @DECL@
            let s: Shared<[f32; @N@]>;
            partition(o_b, thread[32], |j| j, |o_w| {
                ring(@S@, s, |r| match split(warp) {
                    1 => {
                        #[at(thread[1])]
                        let l: u32 = id();
                        #[at(thread[1])]
                        let mut acc: f32 = 0.0;
                        for i in 0..steps {
                            drain(r, i, |s_s| {
                                acc += s_s[l];
                            });
                        }
                        partition(o_w, thread[1], |j| l + j, |o_t| {
                            group(thread[1], || {
                                o_t[0] = acc;
                            });
                        });
                    }
                    1 => {
                        for i in 0..steps {
                            fill(r, i, |s_s| match split(thread) {
                                1 => {
                                    tma_load(s_s, x, i * @SLOT@);
                                }
                            });
                        }
                    }
                });
            });
        });
    });
}
"#;

fn linear_ring(decl: &str, stages: u32, slot: u32) -> String {
    LINEAR_TMA_RING
        .replace("@DECL@", decl)
        .replace("@N@", &(stages * slot).to_string())
        .replace("@S@", &stages.to_string())
        .replace("@SLOT@", &slot.to_string())
}

/// TMA needs each slot's address on 128 bytes: slots of 48 f32 (192 bytes) put slot 1 at byte 192, and a
/// linear memory after a 16-byte allocation starts at byte 16. Both were accepted and faulted at run time.
#[test]
fn tma_loaded_slots_off_128_bytes_are_compile_errors() {
    let apart = texts(&emit_errors(&linear_ring("", 3, 48)));
    assert!(
        apart.contains("[TMA]") && apart.contains("192 bytes long"),
        "{apart}"
    );
    let late = texts(&emit_errors(&linear_ring(
        "let small: Shared<[f32; 4]>;",
        2,
        64,
    )));
    assert!(
        late.contains("[TMA]") && late.contains("starts at byte 16"),
        "{late}"
    );
    // 32 f32 slots (128 bytes) at the start of shared memory load and run.
    let ks = compile_src(&linear_ring("", 3, 32));
    assert!(emit_errors(&linear_ring("", 3, 32)).is_empty());
    assemble_all(&ks);
}

/// A fill must load every memory of the ring on every path: the drains of a step whose fill skipped one
/// read that slot as an earlier step left it (a user's `if kt % 2 == 0 { tma_load(sb_s, ..) }` ran clean
/// and computed garbage).
#[test]
fn a_fill_that_loads_a_memory_on_some_paths_is_an_error() {
    let conditional = SELF_PIPE.replace(
        "tma_load(sb_s, b, (kt + 1) * 64, 0);",
        "if kt % 2 == 0 { tma_load(sb_s, b, (kt + 1) * 64, 0); }",
    );
    let e = texts(&emit_errors(&format!("{STORE_TILE}{conditional}")));
    assert!(
        e.contains("[RING]") && e.contains("`sb_s` only on some paths"),
        "{e}"
    );
    // On both sides of an `if`, it loads on every path.
    let both = SELF_PIPE.replace(
        "tma_load(sb_s, b, (kt + 1) * 64, 0);",
        "if kt % 2 == 0 { tma_load(sb_s, b, (kt + 1) * 64, 0); } else { tma_load(sb_s, b, (kt + 1) * 64, 0); }",
    );
    let e = texts(&emit_errors(&format!("{STORE_TILE}{both}")));
    assert!(e.is_empty(), "{e}");
}

/// Runs a 64 × 64 · (64 × k) GEMM kernel whose parameters are (a, b, c, k_tiles) at each of `k_steps`, on
/// inputs of seeds `a_seed + k_tiles` and `b_seed + k_tiles`.
fn run_single_tile(k: &CompiledKernel, k_steps: &[usize], (a_seed, b_seed): (u64, u64)) {
    for &k_tiles in k_steps {
        let kk = 64 * k_tiles;
        let (ab, av) = matrix(64, kk, a_seed + k_tiles as u64);
        let (bb, bv) = matrix(64, kk, b_seed + k_tiles as u64);
        let want = tiles_reference(&av, &bv, 1, kk);
        let setup = |emu: &mut Emulator| {
            let (da, db) = (buf(emu, &ab), buf(emu, &bb));
            let dc = buf(emu, &f32::NAN.to_le_bytes().repeat(4096));
            let params = vec![
                tmap(k, 0, da, 64, kk as u64),
                tmap(k, 1, db, 64, kk as u64),
                ParamValue::Ptr(dc),
                ParamValue::U32(k_tiles as u32),
            ];
            (params, dc)
        };
        let check = |emu: &Emulator, dc: u64| {
            assert_close(
                &format!("{} at {k_tiles} k-steps", k.entry),
                &f32s(emu, dc, 4096),
                &want,
            );
        };
        run_each_schedule(k, 1, &setup, &check);
    }
}

/// The prefetching fill written inside the drain, before its wgmmas: the previous drain's slot (the one the
/// fill waits for) goes back at the head of the loop body, since the drain does not begin with wgmmas (with
/// two slots this deadlocked from three k-steps on).
#[test]
fn a_fill_inside_a_drain_gets_the_slot_the_previous_drain_held() {
    let fill = "                    if kt + 1 < k_tiles {
                        fill(r, kt + 1, |sa_s, sb_s| match split(thread) {
                            1 => {
                                tma_load(sa_s, a, (kt + 1) * 64, 0);
                                tma_load(sb_s, b, (kt + 1) * 64, 0);
                            }
                        });
                    }
";
    let drain = "                    drain(r, kt, |sa_s, sb_s| {\n";
    assert!(SELF_PIPE.contains(fill) && SELF_PIPE.contains(drain));
    let src = SELF_PIPE
        .replace(fill, "")
        .replace(
            drain,
            &format!(
                "{drain}{}",
                fill.replace(
                    "fill(r, kt + 1, |sa_s, sb_s|",
                    "fill(r, kt + 1, |sa_n, sb_n|"
                )
                .replace("tma_load(sa_s", "tma_load(sa_n")
                .replace("tma_load(sb_s", "tma_load(sb_n")
            ),
        )
        .replace("pub fn self_pipe", "pub fn fill_in_drain");
    let ks = compile_src(&format!("{STORE_TILE}{src}"));
    assemble_all(&ks);
    run_single_tile(&ks[0], &[1, 3, 5], (100, 110));
}

/// A drain nested in another's body, the wgmmas reading both slots: the outer drain's slot goes back only
/// after the group the inner drain kept in flight retired (it went back at once, and the producer refilled
/// it under the running wgmmas once the ring wrapped around).
const NESTED_DRAINS: &str = r#"
#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256)]
pub fn nested_drains(a: TensorMap<bf16, 2>, b: TensorMap<bf16, 2>, c: *mut f32, k_tiles: u32) {
    partition(c, block[1], |x| x, |c_blk| {
        group(block[1], || {
            let sa: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
            let sb: Shared<[bf16; 3 * 64 * 64], Swizzle128>;
            partition(c_blk, thread[128], |x| x, |c_wg| {
                ring(2, sa, |r1| {
                    ring(3, sb, |r2| match split(warpgroup) {
                        1 => {
                            for kt in 0..k_tiles {
                                fill(r1, kt, |sa_s| match split(thread) {
                                    1 => {
                                        tma_load(sa_s, a, kt * 64, 0);
                                    }
                                });
                                fill(r2, kt, |sb_s| match split(thread) {
                                    1 => {
                                        tma_load(sb_s, b, kt * 64, 0);
                                    }
                                });
                            }
                        }
                        1 => {
                            #[at(thread[1])]
                            let mut acc = [0.0f32; 32];
                            for kt in 0..k_tiles {
                                drain(r1, kt, |sa_s| {
                                    drain(r2, kt, |sb_s| {
                                        for kk in 0..4 {
                                            wgmma_bf16(&mut acc, sa_s, kk * 16, sb_s, kk * 16, kt > 0 || kk > 0);
                                        }
                                    });
                                });
                            }
                            store_tile(c_wg, &acc);
                        }
                    });
                });
            });
        });
    });
}
"#;

#[test]
fn a_nested_drain_keeps_the_outer_slot_until_its_wgmmas_retire() {
    let ks = compile_src(&format!("{STORE_TILE}{NESTED_DRAINS}"));
    assemble_all(&ks);
    run_single_tile(&ks[0], &[1, 3, 5], (120, 130));
}

/// A fill that loads nothing leaves the drains reading stale slots: an error. Copies in a `for` over a
/// constant range that is not a literal (`0..L / 128` with `L` a const generic) load on every path.
#[test]
fn empty_fills_are_errors_and_constant_loops_load() {
    let empty = COPY_FILL.replace("@COPY@", "match split(thread) { 1 => { } }");
    let e = texts(&emit_errors(&empty));
    assert!(e.contains("[RING]") && e.contains("loads none of"), "{e}");
    let looped = COPY_FILL
        .replace("pub fn copy_fill(", "pub fn copy_fill<const L: u32>(")
        .replace("#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64)]", "#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64, instances = [256])]")
        .replace(
            "@COPY@",
            "{ group(thread[1], || { for q in 0..L / 128 { cp_async(s_s, l + 32 * q, x, i * 64 + l + 32 * q, 4); } }); }",
        );
    let e = texts(&emit_errors(&looped));
    assert!(e.is_empty(), "{e}");
    run_copy_fill(&compile_src(&looped)[0]);
}
