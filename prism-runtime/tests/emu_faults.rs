//! Every fault kind planted and reported with kind, block, warp, lane and PTX line; the clean variants
//! report nothing.

use prism_runtime::emu::*;

fn src() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/faults.ptx"
    ))
    .unwrap()
}

/// 1-based line of the `nth` line containing `needle` at or after the line containing `after`.
fn line_of(src: &str, after: &str, needle: &str, nth: usize) -> usize {
    let start = src.lines().position(|l| l.contains(after)).expect("anchor");
    src.lines()
        .enumerate()
        .skip(start)
        .filter(|(_, l)| l.contains(needle))
        .nth(nth)
        .map(|(i, _)| i + 1)
        .expect("needle")
}

fn faults(r: Result<LaunchReport, EmuError>) -> Vec<Fault> {
    match r {
        Ok(_) => Vec::new(),
        Err(EmuError::Faulted { faults, .. }) => faults,
        Err(e) => panic!("unexpected error {}", e),
    }
}

fn find(f: &[Fault], k: FaultKind) -> &Fault {
    f.iter()
        .find(|x| x.kind == k)
        .unwrap_or_else(|| panic!("no {:?} in {:#?}", k, f))
}

fn cfg() -> EmuConfig {
    EmuConfig::default()
}

#[test]
fn barrier_divergence() {
    let s = src();
    let m = Module::parse(&s).unwrap();
    let mut e = Emulator::new(cfg());
    let out = e.alloc(64 * 4);
    let f = faults(e.launch(
        &m,
        "barrier_divergence",
        [1, 1, 1],
        [64, 1, 1],
        0,
        &[ParamValue::Ptr(out), ParamValue::I32(1)],
    ));
    let x = find(&f, FaultKind::BarrierDivergence);
    assert_eq!(
        x.ptx_line,
        line_of(&s, ".entry barrier_divergence", "bar.sync", 0)
    );
    assert_eq!((x.block, x.warp, x.lane), ([0, 0, 0], 0, Some(16)));
    assert!(faults(e.launch(
        &m,
        "barrier_divergence",
        [1, 1, 1],
        [64, 1, 1],
        0,
        &[ParamValue::Ptr(out), ParamValue::I32(0)]
    ))
    .is_empty());
}

#[test]
fn shfl_with_nonparticipating_lanes() {
    let s = src();
    let m = Module::parse(&s).unwrap();
    let mut e = Emulator::new(cfg());
    let out = e.alloc(64 * 4);
    let f = faults(e.launch(
        &m,
        "shfl_partial",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(out), ParamValue::I32(1)],
    ));
    let x = find(&f, FaultKind::CollectiveMisuse);
    assert_eq!(
        x.ptx_line,
        line_of(&s, ".entry shfl_partial", "shfl.sync", 0)
    );
    assert_eq!((x.block, x.warp), ([0, 0, 0], 0));
    assert_eq!(x.lane, Some(16));
    let ok = faults(e.launch(
        &m,
        "shfl_partial",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(out), ParamValue::I32(0)],
    ));
    assert!(ok.is_empty(), "{:?}", ok);
    assert_eq!(e.read(out, 4).unwrap(), 0u32.to_le_bytes());
}

/// Lanes 0..7 shuffle among themselves (membermask 0xff): `down` by `delta` reads lane l + delta, which is
/// a member for delta < 8 and in range (clamp 31) but not a member for delta = 16 (cuda-samples' reduce7
/// shape): the value read is undefined, a CollectiveMisuse. With clamp 7 (width 8) the same delta is out
/// of range and each lane keeps its own value: no fault.
const SHFL_NONMEMBER: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry shfl_nonmember(.param .u64 out, .param .u32 delta, .param .u32 clamp)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [delta];
    ld.param.u32 %r2, [clamp];
    mov.u32 %r3, %laneid;
    add.u32 %r4, %r3, 100;
    setp.ge.u32 %p1, %r3, 8;
    @%p1 bra DONE;
    shfl.sync.down.b32 %r5, %r4, %r1, %r2, 0xff;
    mul.wide.u32 %rd2, %r3, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r5;
DONE:
    ret;
}
"#;

#[test]
fn shfl_reading_a_lane_outside_its_membermask() {
    let m = Module::parse(SHFL_NONMEMBER).unwrap();
    let mut e = Emulator::new(cfg());
    let out = e.alloc(8 * 4);
    let run = |e: &mut Emulator, delta: u32, clamp: u32| {
        e.write(out, &[0; 32]).unwrap();
        let p = [
            ParamValue::Ptr(out),
            ParamValue::U32(delta),
            ParamValue::U32(clamp),
        ];
        faults(e.launch(&m, "shfl_nonmember", [1, 1, 1], [32, 1, 1], 0, &p))
    };
    let f = run(&mut e, 16, 31);
    let x = find(&f, FaultKind::CollectiveMisuse);
    assert!(
        x.message
            .contains("reads lane 16, which is not in the membermask"),
        "{}",
        x.message
    );
    assert_eq!(
        x.ptx_line,
        line_of(SHFL_NONMEMBER, ".entry", "shfl.sync", 0)
    );
    // Members only: lane l reads lane l + 4 while it is below 8, else (clamp 7: out of range) itself.
    let ok = run(&mut e, 4, 7);
    assert!(ok.is_empty(), "{ok:?}");
    let got: Vec<u32> = e
        .read(out, 32)
        .unwrap()
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let want: Vec<u32> = (0..8)
        .map(|l| if l + 4 < 8 { l + 104 } else { l + 100 })
        .collect();
    assert_eq!(got, want);
    // Width 8 (clamp 7): delta 16 is out of range for every lane; each keeps its own value.
    assert!(run(&mut e, 16, 7).is_empty());
}

const MMA_HALF: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry mma_half(.param .u32 plant)
{
    .reg .pred %p<3>;
    .reg .b32 %r<20>;
    .reg .f32 %f<8>;
    ld.param.u32 %r1, [plant];
    mov.u32 %r2, %laneid;
    setp.ge.u32 %p1, %r2, 16;
    setp.ne.u32 %p2, %r1, 0;
    and.pred %p1, %p1, %p2;
    @%p1 bra DONE;
    mov.b32 %r3, 0;
    mov.f32 %f1, 0f00000000;
    mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f2,%f3,%f4,%f5}, {%r3,%r3,%r3,%r3}, {%r3,%r3}, {%f1,%f1,%f1,%f1};
DONE:
    ret;
}
"#;

#[test]
fn mma_by_half_a_warp() {
    let m = Module::parse(MMA_HALF).unwrap();
    let mut e = Emulator::new(cfg());
    let f = faults(e.launch(
        &m,
        "mma_half",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::U32(1)],
    ));
    let x = find(&f, FaultKind::CollectiveMisuse);
    assert_eq!(x.ptx_line, line_of(MMA_HALF, "mma_half", "mma.sync", 0));
    assert_eq!((x.warp, x.lane), (0, Some(16)));
    assert!(faults(e.launch(
        &m,
        "mma_half",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::U32(0)]
    ))
    .is_empty());
}

const NAMED_BARRIER: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry named_bar(.param .u32 count)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    ld.param.u32 %r1, [count];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, 32;
    @%p1 bra DONE;
    bar.sync 1, %r1;
DONE:
    ret;
}
"#;

#[test]
fn deadlock_on_named_barrier() {
    let m = Module::parse(NAMED_BARRIER).unwrap();
    let mut e = Emulator::new(cfg());
    // warp 0 waits for 64 threads at barrier 1, warp 1 never arrives
    let f = faults(e.launch(
        &m,
        "named_bar",
        [2, 1, 1],
        [64, 1, 1],
        0,
        &[ParamValue::U32(64)],
    ));
    let x = find(&f, FaultKind::Deadlock);
    assert_eq!(
        x.ptx_line,
        line_of(NAMED_BARRIER, "named_bar", "bar.sync", 0)
    );
    assert_eq!((x.block, x.warp, x.lane), ([0, 0, 0], 0, Some(0)));
    let r = e
        .launch(
            &m,
            "named_bar",
            [2, 1, 1],
            [64, 1, 1],
            0,
            &[ParamValue::U32(32)],
        )
        .unwrap();
    assert_eq!(r.counters.barrier_waits, 2);
}

#[test]
fn out_of_bounds_global_shared_local() {
    let s = src();
    let m = Module::parse(&s).unwrap();
    let mut e = Emulator::new(cfg());
    let buf = e.alloc(64 * 4);
    let f = faults(e.launch(
        &m,
        "oob_global",
        [3, 1, 1],
        [32, 1, 1],
        0,
        &[
            ParamValue::Ptr(buf),
            ParamValue::I32(64),
            ParamValue::I32(1),
        ],
    ));
    let x = find(&f, FaultKind::OutOfBounds);
    assert_eq!((x.block, x.warp, x.lane), ([2, 0, 0], 0, Some(0)));
    assert_eq!(x.ptx_line, line_of(&s, ".entry oob_global", "st.global", 0));
    assert!(faults(e.launch(
        &m,
        "oob_global",
        [3, 1, 1],
        [32, 1, 1],
        0,
        &[
            ParamValue::Ptr(buf),
            ParamValue::I32(64),
            ParamValue::I32(0)
        ]
    ))
    .is_empty());

    let out = e.alloc(32 * 4);
    let f = faults(e.launch(
        &m,
        "oob_shared",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(out), ParamValue::I32(1)],
    ));
    let x = find(&f, FaultKind::OutOfBounds);
    assert_eq!((x.warp, x.lane), (0, Some(31)));
    assert_eq!(x.ptx_line, line_of(&s, ".entry oob_shared", "ld.shared", 0));
    assert!(faults(e.launch(
        &m,
        "oob_shared",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(out), ParamValue::I32(0)]
    ))
    .is_empty());

    let f = faults(e.launch(
        &m,
        "oob_local",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(out), ParamValue::I32(4)],
    ));
    let x = find(&f, FaultKind::OutOfBounds);
    assert_eq!((x.warp, x.lane), (0, Some(0)));
    assert_eq!(
        x.ptx_line,
        line_of(&s, ".entry oob_local", "ld.volatile.local", 0)
    );
    assert!(faults(e.launch(
        &m,
        "oob_local",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(out), ParamValue::I32(3)]
    ))
    .is_empty());
    let got: Vec<u32> = e
        .read(out, 128)
        .unwrap()
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, (0..32).map(|t| t * 3).collect::<Vec<u32>>());
}

#[test]
fn shared_race() {
    let s = src();
    let m = Module::parse(&s).unwrap();
    let mut e = Emulator::new(cfg());
    let out = e.alloc(64 * 4);
    let f = faults(e.launch(
        &m,
        "shared_race",
        [1, 1, 1],
        [64, 1, 1],
        0,
        &[ParamValue::Ptr(out), ParamValue::I32(1)],
    ));
    let x = find(&f, FaultKind::DataRace);
    assert_eq!(
        x.ptx_line,
        line_of(&s, ".entry shared_race", "ld.shared", 0)
    );
    assert!(x.lane.is_some());
    assert!(faults(e.launch(
        &m,
        "shared_race",
        [1, 1, 1],
        [64, 1, 1],
        0,
        &[ParamValue::Ptr(out), ParamValue::I32(0)]
    ))
    .is_empty());
    // races off: no report
    let mut e2 = Emulator::new(EmuConfig {
        check_races: false,
        ..cfg()
    });
    let out2 = e2.alloc(64 * 4);
    assert!(faults(e2.launch(
        &m,
        "shared_race",
        [1, 1, 1],
        [64, 1, 1],
        0,
        &[ParamValue::Ptr(out2), ParamValue::I32(1)]
    ))
    .is_empty());
}

#[test]
fn global_race_across_threads_and_blocks() {
    let s = src();
    let m = Module::parse(&s).unwrap();
    let mut e = Emulator::new(cfg());
    let buf = e.alloc(2 * 64 * 4);
    let f = faults(e.launch(
        &m,
        "global_race",
        [2, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(buf), ParamValue::I32(1)],
    ));
    let x = find(&f, FaultKind::DataRace);
    assert_eq!(
        x.ptx_line,
        line_of(&s, ".entry global_race", "ld.global", 0)
    );
    assert!(
        f.iter()
            .any(|x| x.message.contains("block #1") || x.block == [1, 0, 0]),
        "{:#?}",
        f
    );
    assert!(faults(e.launch(
        &m,
        "global_race",
        [2, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(buf), ParamValue::I32(0)]
    ))
    .is_empty());
}

#[test]
fn spin_lock_livelocks_in_lockstep_and_completes_independently() {
    let s = src();
    let m = Module::parse(&s).unwrap();
    let mut e = Emulator::new(EmuConfig {
        warp_mode: WarpMode::Lockstep,
        max_steps: 200_000,
        ..cfg()
    });
    let f = faults(e.launch(&m, "spin_lock", [1, 1, 1], [32, 1, 1], 0, &[]));
    let x = find(&f, FaultKind::Livelock);
    assert_eq!(x.warp, 0);
    let loop_start = line_of(&s, ".entry spin_lock", "atom.global.cas", 0);
    assert!(
        x.ptx_line >= loop_start - 1 && x.ptx_line <= loop_start + 3,
        "line {}",
        x.ptx_line
    );

    // cas/exch order the critical sections, so the default configuration (races on) reports nothing
    for cfg in [
        cfg(),
        EmuConfig {
            schedule: Schedule::Random { seed: 3 },
            ..cfg()
        },
        EmuConfig {
            check_races: false,
            ..cfg()
        },
    ] {
        let mut e = Emulator::new(cfg);
        let r = e
            .launch(&m, "spin_lock", [1, 1, 1], [32, 1, 1], 0, &[])
            .unwrap();
        assert!(r.counters.divergent_branches > 0);
        let c = e.global_symbol(&m, "counter").unwrap();
        assert_eq!(e.read(c, 4).unwrap(), 32u32.to_le_bytes());
    }
}

#[test]
fn launch_errors() {
    let s = src();
    let m = Module::parse(&s).unwrap();
    let mut e = Emulator::new(cfg());
    let out = e.alloc(64);
    assert!(matches!(
        e.launch(&m, "nope", [1, 1, 1], [1, 1, 1], 0, &[]),
        Err(EmuError::NoSuchEntry(_))
    ));
    assert!(matches!(
        e.launch(
            &m,
            "oob_shared",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::Ptr(out)]
        ),
        Err(EmuError::BadParams(_))
    ));
    assert!(matches!(
        e.launch(
            &m,
            "oob_shared",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::Ptr(out), ParamValue::U64(0)]
        ),
        Err(EmuError::BadParams(_))
    ));
    assert!(matches!(
        e.launch(
            &m,
            "oob_shared",
            [1, 1, 1],
            [2048, 1, 1],
            0,
            &[ParamValue::Ptr(out), ParamValue::I32(0)]
        ),
        Err(EmuError::BadLaunch(_))
    ));
    assert!(matches!(
        e.launch(
            &m,
            "oob_shared",
            [1, 0, 1],
            [32, 1, 1],
            0,
            &[ParamValue::Ptr(out), ParamValue::I32(0)]
        ),
        Err(EmuError::BadLaunch(_))
    ));
    assert!(e.free(out).is_ok());
    assert!(e.free(out).is_err());
    assert!(e.read(out, 4).is_err());
    let a = e.alloc(10);
    assert!(a != 0 && a.is_multiple_of(256));
    assert!(e.write(a, &[0; 11]).is_err());
}

#[test]
fn unsupported_and_garbage_never_panic() {
    let bad = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n  .reg .b32 %r<3>;\n  tex.1d.v4.s32.s32 {%r1,%r1,%r1,%r1}, [tex, {%r2}];\n  ret;\n}\n";
    if let Ok(m) = Module::parse(bad) {
        let mut e = Emulator::new(cfg());
        let f = faults(e.launch(&m, "k", [1, 1, 1], [32, 1, 1], 0, &[]));
        assert_eq!(f[0].kind, FaultKind::Unsupported);
        assert_eq!(f[0].ptx_line, 7);
    }
    let unknown = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n  .reg .b32 %r<3>;\n  frobnicate.b32 %r1, %r2;\n  ret;\n}\n";
    let m = Module::parse(unknown).unwrap();
    let mut e = Emulator::new(cfg());
    let f = faults(e.launch(&m, "k", [1, 1, 1], [32, 1, 1], 0, &[]));
    assert_eq!((f[0].kind, f[0].ptx_line), (FaultKind::Unsupported, 7));
    // truncated / malformed inputs: errors, not panics
    let s = src();
    for cut in (0..s.len()).step_by(s.len() / 97 + 1) {
        let _ = Module::parse(&s[..cut]);
    }
    for junk in [
        "",
        "}",
        "{",
        ".entry",
        ".visible .entry k( { ret; }",
        "@ ; ;",
        ".reg .b32 %r<>;",
        "[[[",
        ".entry k() { add.s32 %r1, %r2; }",
    ] {
        let _ = Module::parse(junk);
    }
}
