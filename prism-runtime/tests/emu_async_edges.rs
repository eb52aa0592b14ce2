//! Edges of asynchronous copies and the faults around them: non-bulk `cp.async` in flight until its
//! thread waits for it (race detection), deadlock reports after a race, mixed barrier/mbarrier deadlocks,
//! how long a launch runs on after a race, the plain bulk store's async-proxy read.

use prism_runtime::emu::*;

/// A 64-thread kernel: each thread `cp.async`es the word `src[tid]` into `buf[tid]` (and, where `sync`
/// says so, more), then runs `sync`, then reads its neighbour's word `buf[(tid + 1) % 64]` at byte offset
/// `read` more and stores it to `dst[tid]`. `mb` is an mbarrier initialised for 64 arrivals.
fn cp_async_kernel(sync: &str, read: u32) -> String {
    format!(
        r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 src, .param .u64 dst)
{{
    .reg .b32 %r<16>;
    .reg .b64 %rd<10>;
    .reg .pred %p<4>;
    .shared .align 16 .b8 buf[512];
    .shared .align 8 .b64 mb;
    mov.u32 %r1, %tid.x;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    mul.wide.u32 %rd3, %r1, 4;
    add.u64 %rd4, %rd1, %rd3;
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 2;
    add.u32 %r4, %r2, %r3;
    add.u32 %r8, %r4, 256;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared.b64 [mb], 64;
    bar.sync 0;
    {sync}
    add.u32 %r5, %r1, 1;
    and.b32 %r5, %r5, 63;
    shl.b32 %r5, %r5, 2;
    add.u32 %r6, %r2, %r5;
    ld.shared.u32 %r7, [%r6+{read}];
    add.u64 %rd5, %rd2, %rd3;
    st.global.u32 [%rd5], %r7;
    ret;
}}
"#
    )
}

const COPY: &str = "cp.async.ca.shared.global [%r4], [%rd4], 4;";
const COPY2: &str = "cp.async.ca.shared.global [%r8], [%rd4+256], 4;";
const MBAR_WAIT: &str = "WAIT:
    mbarrier.try_wait.parity.shared.b64 %p2, [mb], 0;
    @!%p2 bra WAIT;";

/// Runs `ptx`'s `k` on 64 threads over `src[i] = i` (128 words) under a few schedules (race detection
/// on unless `races` is false): the faults of the first faulting run (none: every run was clean, and
/// each read its neighbour's word).
fn run_cp_async(ptx: &str, read_second: bool, races: bool) -> Vec<Fault> {
    let m = Module::parse(ptx).unwrap();
    for schedule in [
        Schedule::RoundRobin,
        Schedule::Random { seed: 1 },
        Schedule::Random { seed: 7 },
    ] {
        let mut e = Emulator::new(EmuConfig {
            schedule,
            check_races: races,
            ..EmuConfig::default()
        });
        let (s, d) = (e.alloc(512), e.alloc(256));
        let src: Vec<u8> = (0u32..128).flat_map(|i| i.to_le_bytes()).collect();
        e.write(s, &src).unwrap();
        let params = [ParamValue::Ptr(s), ParamValue::Ptr(d)];
        match e.launch(&m, "k", [1, 1, 1], [64, 1, 1], 0, &params) {
            Ok(_) => {
                let got = e.read(d, 256).unwrap();
                for t in 0..64u32 {
                    let v = u32::from_le_bytes(got[t as usize * 4..][..4].try_into().unwrap());
                    let want = (t + 1) % 64 + if read_second { 64 } else { 0 };
                    assert_eq!(v, want, "thread {t}");
                }
            }
            Err(EmuError::Faulted { faults, .. }) => return faults,
            Err(e) => panic!("{e}"),
        }
    }
    Vec::new()
}

fn assert_in_flight_race(faults: &[Fault], who: &str) {
    let f = faults
        .first()
        .unwrap_or_else(|| panic!("{who}: no fault reported"));
    assert_eq!(f.kind, FaultKind::DataRace, "{who}: {f}");
    assert!(
        f.message.contains("cp.async") && f.message.contains("in flight"),
        "{who}: {f}"
    );
}

#[test]
fn cp_async_read_before_any_wait_is_a_race() {
    let sync = format!("{COPY}\n cp.async.commit_group;\n bar.sync 0;");
    let faults = run_cp_async(&cp_async_kernel(&sync, 0), false, true);
    assert_in_flight_race(&faults, "no wait");
    assert!(faults[0].message.contains("PTX line"), "{}", faults[0]);
}

#[test]
fn cp_async_waited_then_barrier_is_clean() {
    for (who, sync) in [
        (
            "wait_group 0",
            "cp.async.commit_group;\n cp.async.wait_group 0;",
        ),
        ("wait_all", "cp.async.wait_all;"),
    ] {
        let sync = format!("{COPY}\n {sync}\n bar.sync 0;");
        let faults = run_cp_async(&cp_async_kernel(&sync, 0), false, true);
        assert!(faults.is_empty(), "{who}: {faults:?}");
    }
}

#[test]
fn cp_async_waited_without_barrier_is_a_race() {
    // The wait completes the copy for its own thread only: the neighbour needs a barrier after it.
    let sync = format!("{COPY}\n cp.async.commit_group;\n cp.async.wait_group 0;");
    let faults = run_cp_async(&cp_async_kernel(&sync, 0), false, true);
    let f = faults.first().expect("a race");
    assert_eq!(f.kind, FaultKind::DataRace, "{f}");
}

#[test]
fn cp_async_own_read_before_the_wait_is_a_race() {
    let sync = format!(
        "{COPY}\n ld.shared.u32 %r9, [%r4];\n cp.async.commit_group;\n cp.async.wait_group 0;\n bar.sync 0;"
    );
    assert_in_flight_race(
        &run_cp_async(&cp_async_kernel(&sync, 0), false, true),
        "own read",
    );
}

#[test]
fn cp_async_wait_group_leaves_uncommitted_and_newest_groups_in_flight() {
    // wait_group 0 waits for committed groups only.
    let sync = format!("{COPY}\n cp.async.wait_group 0;\n bar.sync 0;");
    assert_in_flight_race(
        &run_cp_async(&cp_async_kernel(&sync, 0), false, true),
        "uncommitted",
    );
    // wait_group 1 completes the older group and leaves the newest in flight.
    let two = format!(
        "{COPY}\n cp.async.commit_group;\n {COPY2}\n cp.async.commit_group;\n cp.async.wait_group 1;\n bar.sync 0;"
    );
    let older = run_cp_async(&cp_async_kernel(&two, 0), false, true);
    assert!(older.is_empty(), "older group: {older:?}");
    assert_in_flight_race(
        &run_cp_async(&cp_async_kernel(&two, 256), true, true),
        "newest group",
    );
}

#[test]
fn cp_async_mbarrier_arrive_publishes_the_copies() {
    for (who, arrive) in [
        ("noinc", "cp.async.mbarrier.arrive.noinc.shared.b64 [mb];"),
        (
            "inc",
            "cp.async.mbarrier.arrive.shared.b64 [mb];\n mbarrier.arrive.shared.b64 %rd6, [mb];",
        ),
    ] {
        let sync = format!("{COPY}\n {arrive}\n {MBAR_WAIT}");
        let faults = run_cp_async(&cp_async_kernel(&sync, 0), false, true);
        assert!(faults.is_empty(), "{who}: {faults:?}");
    }
}

#[test]
fn cp_async_in_flight_is_race_detection_only() {
    // Without race detection the copy's data is there at issue, as before.
    let sync = format!("{COPY}\n cp.async.commit_group;\n bar.sync 0;");
    let faults = run_cp_async(&cp_async_kernel(&sync, 0), false, false);
    assert!(faults.is_empty(), "{faults:?}");
}

#[test]
fn cp_async_over_an_in_flight_copy_is_a_race() {
    // Thread t copies into its neighbour's word too, while the neighbour's own copy is in flight.
    let sync = format!(
        "{COPY}\n add.u32 %r10, %r1, 1;\n and.b32 %r10, %r10, 63;\n shl.b32 %r10, %r10, 2;\n add.u32 %r10, %r2, %r10;\n cp.async.ca.shared.global [%r10], [%rd4], 4;\n cp.async.wait_all;\n bar.sync 0;"
    );
    assert_in_flight_race(
        &run_cp_async(&cp_async_kernel(&sync, 0), false, true),
        "copy over copy",
    );
}

fn cli(args: &[&str]) -> (i32, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = cli::run_cli(&args, &mut out, &mut err);
    (code, String::from_utf8(out).unwrap())
}

/// A Prism ring whose drain `tma_store`s a slot and hands it back before `cp.async.bulk.wait_group.read`
/// (fixture `prism/copy_ring_race.ptx`: 64 threads, a 2-slot ring of 8 × 64 bf16 tiles, 6 steps): the next
/// fill's TMA load rewrites the slot while the store may still read it. The race is the only fault: the
/// racing load still delivers its bytes (before, it was dropped, and its mbarrier then never completed: a
/// `Deadlock` the program does not have), and the output is the one without race detection.
#[test]
fn race_of_a_tma_load_is_reported_alone() {
    let ptx = format!(
        "{}/tests/fixtures/prism/copy_ring_race.ptx",
        env!("CARGO_MANIFEST_DIR")
    );
    let maps = [
        "tmap:bf16:64x48:64x8:128:rand",
        "tmap:bf16:64x48:64x8:128:zero",
    ];
    for seed in ["0", "1", "2"] {
        let mut args = vec![&ptx[..], "copy_ring", "--grid", "1", "--block", "64"];
        args.extend(["--smem", "4096", "--json", "--seed", seed]);
        args.extend(maps);
        args.push("u32:6");
        let (code, out) = cli(&args);
        assert_eq!(code, 1, "{out}");
        assert_eq!(out.matches("\"kind\"").count(), 1, "{out}");
        assert!(
            out.contains("DataRace") && out.contains("TMA store"),
            "{out}"
        );
        assert!(!out.contains("Deadlock"), "{out}");
        let mut clean = args.clone();
        clean.insert(2, "--no-races");
        assert_eq!(cli(&clean).0, 0);
    }
}

/// Warp 0 waits at `bar.sync 0` for warp 1, which spins on an mbarrier nobody arrives on: a deadlock,
/// reported once warp 1 has spun 2^18 steps (before, a `Livelock` at the step limit, minutes later).
#[test]
fn barrier_waiter_and_mbarrier_spinner_deadlock_at_once() {
    let ptx = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry k()
{
    .reg .b32 %r<4>;
    .reg .pred %p<4>;
    .shared .align 8 .b64 mb;
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared.b64 [mb], 1;
    bar.sync 1;
    setp.lt.u32 %p3, %r1, 32;
    @%p3 bra BAR;
WAIT:
    mbarrier.try_wait.parity.shared.b64 %p2, [mb], 0;
    @!%p2 bra WAIT;
BAR:
    bar.sync 0;
    ret;
}
"#;
    let m = Module::parse(ptx).unwrap();
    let mut e = Emulator::new(EmuConfig {
        // Far below the default: the deadlock must come long before the step limit.
        max_steps: 4_000_000,
        ..EmuConfig::default()
    });
    match e.launch(&m, "k", [1, 1, 1], [64, 1, 1], 0, &[]) {
        Err(EmuError::Faulted { faults, .. }) => {
            let f = &faults[0];
            assert_eq!(f.kind, FaultKind::Deadlock, "{f}");
            assert!(
                f.message.contains(
                    "at a barrier the spinning warps never reach (warp 0 at PTX line 21)"
                ),
                "{f}"
            );
            assert!(
                f.message
                    .contains("0 of 1 arrivals done (1 still expected)"),
                "{f}"
            );
        }
        other => panic!("expected Deadlock, got {:?}", other.map(|_| ())),
    }
}

/// Rank 1 of a 2-block cluster raises a flag and exits; rank 0 waits for the flag, then reads rank 1's
/// shared memory through `mapa`: that memory is gone (undefined behaviour on a GPU), an `InvalidOperation`
/// naming the rank.
#[test]
fn access_to_an_exited_peer_blocks_shared_memory_faults() {
    let ptx = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 flag)
{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<4>;
    .shared .align 4 .u32 sv;
    ld.param.u64 %rd1, [flag];
    mov.u32 %r4, %cluster_ctarank;
    st.shared.u32 [sv], %r4;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    setp.eq.u32 %p1, %r4, 0;
    @%p1 bra READER;
    st.volatile.global.u32 [%rd1], 1;
    ret;
READER:
    ld.volatile.global.u32 %r1, [%rd1];
    setp.eq.u32 %p2, %r1, 0;
    @%p2 bra READER;
    mov.u32 %r2, 0;
LATER:
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p3, %r2, 200;
    @%p3 bra LATER;
    mov.u32 %r6, sv;
    mapa.shared::cluster.u32 %r7, %r6, 1;
    ld.shared::cluster.u32 %r8, [%r7];
    ret;
}
"#;
    let m = Module::parse(ptx).unwrap();
    for schedule in [Schedule::RoundRobin, Schedule::Random { seed: 3 }] {
        let mut e = Emulator::new(EmuConfig {
            schedule,
            ..EmuConfig::default()
        });
        let flag = e.alloc(4);
        let params = [ParamValue::Ptr(flag)];
        match e.launch_cluster(&m, "k", [2, 1, 1], [32, 1, 1], Some([2, 1, 1]), 0, &params) {
            Err(EmuError::Faulted { faults, .. }) => {
                let f = &faults[0];
                assert_eq!(f.kind, FaultKind::InvalidOperation, "{f}");
                assert!(
                    f.message.contains("block rank 1") && f.message.contains("exited"),
                    "{f}"
                );
            }
            other => panic!("expected InvalidOperation, got {:?}", other.map(|_| ())),
        }
    }
}

/// One warpgroup whose warps 0..3 run `body` (`%r1` is the warp index), then exit.
fn warpgroup_kernel(body: &str) -> String {
    format!(
        r#"
.version 8.0
.target sm_90a
.address_size 64

.visible .entry k()
{{
    .reg .b32 %r<4>;
    .reg .pred %p<4>;
    mov.u32 %r0, %tid.x;
    shr.u32 %r1, %r0, 5;
    {body}
    ret;
}}
"#
    )
}

fn setmaxnreg_fault(body: &str) -> Option<Fault> {
    let m = Module::parse(&warpgroup_kernel(body)).unwrap();
    let mut e = Emulator::new(EmuConfig::default());
    match e.launch(&m, "k", [1, 1, 1], [128, 1, 1], 0, &[]) {
        Ok(_) => None,
        Err(EmuError::Faulted { faults, .. }) => Some(faults[0].clone()),
        Err(e) => panic!("{e}"),
    }
}

/// `setmaxnreg` is `.sync.aligned` over the warpgroup: a warp that skips it, or executes another one, is
/// a `CollectiveMisuse`; all four warps executing it is fine.
#[test]
fn setmaxnreg_by_part_of_a_warpgroup_is_reported() {
    let all = "setmaxnreg.dec.sync.aligned.u32 40;";
    assert!(setmaxnreg_fault(all).is_none());
    let skipped =
        "setp.eq.u32 %p1, %r1, 3;\n @%p1 bra DONE;\n setmaxnreg.dec.sync.aligned.u32 40;\nDONE:";
    let other = "setp.eq.u32 %p1, %r1, 3;\n @%p1 bra INC;\n setmaxnreg.dec.sync.aligned.u32 40;\n bra DONE;\nINC:\n setmaxnreg.inc.sync.aligned.u32 232;\nDONE:";
    for (who, body) in [("skipped by warp 3", skipped), ("another in warp 3", other)] {
        let f = setmaxnreg_fault(body).unwrap_or_else(|| panic!("{who}: no fault"));
        assert_eq!(f.kind, FaultKind::CollectiveMisuse, "{who}: {f}");
        assert!(
            f.message
                .contains("setmaxnreg is .aligned over a warpgroup"),
            "{who}: {f}"
        );
    }
}

/// 64 threads: lane 0 of warps 0 and 1 write one shared word with no barrier between them (a race), then
/// every thread spins on a global flag nobody raises (`then` is the code between them).
fn race_then(then: &str) -> String {
    format!(
        r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 flag)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    .shared .align 4 .b32 s[1];
    .shared .align 8 .b64 mb;
    ld.param.u64 %rd1, [flag];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 31;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra THEN;
    st.shared.u32 [s], %r1;
THEN:
    {then}
SPIN:
    ld.volatile.global.u32 %r3, [%rd1];
    setp.eq.u32 %p2, %r3, 0;
    @%p2 bra SPIN;
    ret;
}}
"#
    )
}

/// Runs `race_then(then)`'s `k` on `blocks` blocks of 64 threads under `max_steps` on `threads` worker
/// threads: its faults and warp-instructions.
fn run_race_then_on(then: &str, max_steps: u64, blocks: u32, threads: usize) -> (Vec<Fault>, u64) {
    let m = Module::parse(&race_then(then)).unwrap();
    let mut e = Emulator::new(EmuConfig {
        max_steps,
        threads,
        ..EmuConfig::default()
    });
    let flag = e.alloc(4);
    match e.launch(
        &m,
        "k",
        [blocks, 1, 1],
        [64, 1, 1],
        0,
        &[ParamValue::Ptr(flag)],
    ) {
        Err(EmuError::Faulted { faults, report }) => (faults, report.counters.warp_instructions),
        other => panic!("expected faults, got {:?}", other.map(|_| ())),
    }
}

fn run_race_then(then: &str, max_steps: u64) -> (Vec<Fault>, u64) {
    run_race_then_on(then, max_steps, 1, 0)
}

/// A race after which the threads spin for ever (as a pipeline whose mbarrier phases a race left
/// inconsistent does): the launch ends once it has run on `max_steps / 16` warp-instructions without a new
/// fault, with the race as its only fault. Before, it ran into the step limit and added a `Livelock` (with
/// the default `max_steps`, minutes after the race).
#[test]
fn a_race_followed_by_a_spin_ends_the_launch_without_a_livelock() {
    let max_steps = 4_000_000;
    let (faults, steps) = run_race_then("", max_steps);
    assert_eq!(faults.len(), 1, "{faults:?}");
    let f = &faults[0];
    assert_eq!(f.kind, FaultKind::DataRace, "{f}");
    assert!(
        f.message.contains("the launch was ended after")
            && f.message.contains("without a new fault"),
        "{f}"
    );
    // The race comes within the first hundred steps; then a sixteenth of the budget.
    assert!(steps <= max_steps / 16 + 1_000, "{steps} steps");
    assert!(steps >= max_steps / 16, "{steps} steps");
}

/// The same on four blocks with worker threads: the parallel attempt sees the race and gives the launch
/// to the one-thread run, which ends it as above (same faults, same steps as without workers).
#[test]
fn a_race_followed_by_a_spin_ends_the_same_with_worker_threads() {
    let max_steps = 4_000_000;
    let serial = run_race_then_on("", max_steps, 4, 0);
    let parallel = run_race_then_on("", max_steps, 4, 4);
    assert_eq!(parallel.0.len(), 1, "{:?}", parallel.0);
    assert_eq!(parallel.0[0].kind, FaultKind::DataRace, "{}", parallel.0[0]);
    assert!(parallel.1 <= max_steps / 16 + 1_000, "{} steps", parallel.1);
    assert_eq!(parallel, serial);
}

/// A deadlock after a race says so: a `bar.sync 1, 64` that only warp 0 reaches (warp 1 has exited); warp 0
/// waiting at `bar.sync 0` while warp 1 spins on an mbarrier nobody arrives on (the mbarrier deadlock
/// detector, after 2^18 spinning steps, within the race's tail). Each is a second, distinct fault, which a
/// race may cause.
#[test]
fn a_deadlock_after_a_race_names_the_race() {
    let barrier = "setp.ge.u32 %p3, %r1, 32;
    @%p3 ret;
    bar.sync 1, 64;
    ret;";
    let mbarrier = "setp.eq.u32 %p3, %r1, 0;
    @%p3 mbarrier.init.shared.b64 [mb], 1;
    bar.sync 2;
    setp.lt.u32 %p3, %r1, 32;
    @%p3 bra BAR;
WAIT:
    mbarrier.try_wait.parity.shared.b64 %p2, [mb], 0;
    @!%p2 bra WAIT;
BAR:
    bar.sync 0;
    ret;";
    for (what, then) in [("barrier", barrier), ("mbarrier", mbarrier)] {
        let (faults, _) = run_race_then(then, 200_000_000);
        assert_eq!(faults[0].kind, FaultKind::DataRace, "{what}: {faults:?}");
        assert_eq!(faults.len(), 2, "{what}: {faults:?}");
        let f = &faults[1];
        assert_eq!(f.kind, FaultKind::Deadlock, "{what}: {f}");
        let note = format!(
            "(reported after the DataRace at PTX line {}: it may follow from the race)",
            faults[0].ptx_line
        );
        assert!(f.message.ends_with(&note), "{what}: {f}");
    }
}

/// 64 threads write `3 * tid + 1` to `tile[tid]` with `st.shared` (then `fence`), `bar.sync 0`, and thread 0
/// bulk-stores the 256-byte tile to `out` (`cp.async.bulk.global.shared::cta.bulk_group`), runs `after`,
/// commits and waits for its bulk group.
fn bulk_store_kernel(fence: &str, after: &str) -> String {
    format!(
        r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 out)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<2>;
    .shared .align 128 .b8 tile[256];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mad.lo.u32 %r2, %r1, 3, 1;
    mov.u32 %r3, tile;
    shl.b32 %r4, %r1, 2;
    add.u32 %r5, %r3, %r4;
    st.shared.u32 [%r5], %r2;
    {fence}
    bar.sync 0;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r3], 256;
    {after}
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
DONE:
    ret;
}}
"#
    )
}

/// Runs `ptx`'s `k` on 64 threads under a few schedules: the faults of the first faulting run (none: every
/// run wrote `3 * i + 1` to `out[i]`).
fn run_bulk_store(ptx: &str) -> Vec<Fault> {
    let m = Module::parse(ptx).unwrap();
    for schedule in [Schedule::RoundRobin, Schedule::Random { seed: 3 }] {
        let mut e = Emulator::new(EmuConfig {
            schedule,
            ..EmuConfig::default()
        });
        let out = e.alloc(256);
        match e.launch(&m, "k", [1, 1, 1], [64, 1, 1], 0, &[ParamValue::Ptr(out)]) {
            Ok(_) => {
                let got = e.read(out, 256).unwrap();
                for i in 0..64u32 {
                    let v = u32::from_le_bytes(got[i as usize * 4..][..4].try_into().unwrap());
                    assert_eq!(v, 3 * i + 1, "out[{i}]");
                }
            }
            Err(EmuError::Faulted { faults, .. }) => return faults,
            Err(e) => panic!("{e}"),
        }
    }
    Vec::new()
}

/// A plain bulk store reads its shared source through the async proxy, as a TMA store does: the threads'
/// `st.shared` writes need a `fence.proxy.async.shared::cta` before the barrier, else a `DataRace` (the
/// proxy check's message); with it the store is clean and delivers the tile. Before, the bulk store was
/// checked as a generic read only (ordered by the barrier: clean without the fence).
#[test]
fn a_bulk_store_of_generic_writes_needs_a_proxy_fence() {
    let faults = run_bulk_store(&bulk_store_kernel("", ""));
    let f = faults.first().expect("no fault without the proxy fence");
    assert_eq!(f.kind, FaultKind::DataRace, "{f}");
    assert!(
        f.message.contains(
            "a bulk store reads shared byte 0x0 through the async proxy, but thread 0 wrote it through the generic proxy with no fence.proxy.async since"
        ),
        "{f}"
    );
    let fenced = bulk_store_kernel("fence.proxy.async.shared::cta;", "");
    assert!(run_bulk_store(&fenced).is_empty());
}

/// The bulk store holds its source until its thread's `cp.async.bulk.wait_group.read` covers its group:
/// rewriting the tile before that is a `DataRace`, as for a TMA store.
#[test]
fn rewriting_a_bulk_stores_source_before_its_wait_is_a_race() {
    let early = "st.shared.u32 [%r3], %r1;";
    let faults = run_bulk_store(&bulk_store_kernel("fence.proxy.async.shared::cta;", early));
    let f = faults.first().expect("no fault for the early rewrite");
    assert_eq!(f.kind, FaultKind::DataRace, "{f}");
    assert!(
        f.message
            .contains("a TMA store or bulk store by thread 0 still reads it"),
        "{f}"
    );
}
