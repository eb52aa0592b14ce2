//! cp.async, mbarrier and bulk copies (functional model: copies complete when issued).

use prism_runtime::emu::*;

const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry cpasync(.param .u64 src, .param .u64 dst)
{
    .shared .align 16 .b8 buf[512];
    .reg .b32 %r<10>;
    .reg .b64 %rd<10>;
    .reg .f32 %f<4>;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 4;
    mov.u32 %r3, buf;
    add.u32 %r4, %r3, %r2;
    cvt.u64.u32 %rd3, %r2;
    add.s64 %rd4, %rd1, %rd3;
    cp.async.cg.shared.global [%r4], [%rd4], 16;
    cp.async.commit_group;
    cp.async.wait_group 0;
    bar.sync 0;
    mov.u32 %r5, 31;
    sub.u32 %r5, %r5, %r1;
    shl.b32 %r5, %r5, 4;
    add.u32 %r5, %r3, %r5;
    ld.shared.v4.f32 {%f0, %f1, %f2, %f3}, [%r5];
    add.s64 %rd5, %rd2, %rd3;
    st.global.v4.f32 [%rd5], {%f0, %f1, %f2, %f3};
    ret;
}

.visible .entry bulk(.param .u64 src, .param .u64 dst)
{
    .shared .align 16 .b8 sbuf[512];
    .shared .align 8 .b64 mbar;
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<10>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared.b64 [mbar], 1;
    bar.sync 0;
    @!%p1 bra WAIT;
    mbarrier.arrive.expect_tx.shared.b64 %rd5, [mbar], 512;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [sbuf], [%rd1], 512, [mbar];
WAIT:
    mbarrier.try_wait.parity.shared.b64 %p2, [mbar], 0;
    @!%p2 bra WAIT;
    shl.b32 %r2, %r1, 2;
    mov.u32 %r3, sbuf;
    add.u32 %r3, %r3, %r2;
    ld.shared.f32 %f1, [%r3];
    cvt.u64.u32 %rd3, %r2;
    add.s64 %rd4, %rd2, %rd3;
    st.global.f32 [%rd4], %f1;
    ret;
}

.visible .entry mbar_uninit()
{
    .shared .align 8 .b64 mb;
    .reg .b64 %rd<2>;
    mbarrier.arrive.shared.b64 %rd1, [mb];
    ret;
}

.visible .entry mbar_never(.param .u32 n)
{
    .shared .align 8 .b64 mb;
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<2>;
    ld.param.u32 %r5, [n];
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared.b64 [mb], 2;
    bar.sync 0;
    setp.lt.u32 %p3, %r1, 32;
    @!%p3 bra WAIT;
    mov.u32 %r2, 0;
LOOP:
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p2, %r2, %r5;
    @%p2 bra LOOP;
    @%p1 mbarrier.arrive.shared.b64 %rd1, [mb];
    setp.gt.u32 %p2, %r5, 1;
    and.pred %p2, %p2, %p1;
    @%p2 mbarrier.arrive.shared.b64 %rd1, [mb];
WAIT:
    mbarrier.try_wait.parity.shared.b64 %p2, [mb], 0;
    @!%p2 bra WAIT;
    ret;
}
"#;

fn data() -> Vec<f32> {
    (0..128)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
        .collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn cp_async_then_barrier() {
    let m = Module::parse(PTX).unwrap();
    for seed in [None, Some(4)] {
        let schedule = seed
            .map(|s| Schedule::Random { seed: s })
            .unwrap_or(Schedule::RoundRobin);
        let mut e = Emulator::new(EmuConfig {
            schedule,
            ..EmuConfig::default()
        });
        let x = data();
        let (s, d) = (e.alloc(512), e.alloc(512));
        e.write(s, &bytes(&x)).unwrap();
        e.write(d, &bytes(&[f32::NAN; 128])).unwrap();
        let r = e
            .launch(
                &m,
                "cpasync",
                [1, 1, 1],
                [32, 1, 1],
                0,
                &[ParamValue::Ptr(s), ParamValue::Ptr(d)],
            )
            .unwrap();
        let got = floats(&e.read(d, 512).unwrap());
        for t in 0..32 {
            assert_eq!(&got[t * 4..t * 4 + 4], &x[(31 - t) * 4..(31 - t) * 4 + 4]);
        }
        assert!(r.counters.global_sectors >= 16);
    }
}

#[test]
fn bulk_copy_with_mbarrier_is_race_free() {
    let m = Module::parse(PTX).unwrap();
    for seed in [None, Some(1), Some(2)] {
        let schedule = seed
            .map(|s| Schedule::Random { seed: s })
            .unwrap_or(Schedule::RoundRobin);
        let mut e = Emulator::new(EmuConfig {
            schedule,
            ..EmuConfig::default()
        });
        let x = data();
        let (s, d) = (e.alloc(512), e.alloc(512));
        e.write(s, &bytes(&x)).unwrap();
        e.write(d, &bytes(&[f32::NAN; 128])).unwrap();
        match e.launch(
            &m,
            "bulk",
            [1, 1, 1],
            [128, 1, 1],
            0,
            &[ParamValue::Ptr(s), ParamValue::Ptr(d)],
        ) {
            Ok(_) => {}
            Err(EmuError::Faulted { faults, .. }) => panic!("{:#?}", faults),
            Err(x) => panic!("{}", x),
        }
        assert_eq!(floats(&e.read(d, 512).unwrap()), x);
    }
}

#[test]
fn mbarrier_misuse() {
    let m = Module::parse(PTX).unwrap();
    let mut e = Emulator::new(EmuConfig::default());
    match e.launch(&m, "mbar_uninit", [1, 1, 1], [32, 1, 1], 0, &[]) {
        Err(EmuError::Faulted { faults, .. }) => {
            assert_eq!(faults[0].kind, FaultKind::MbarrierMisuse);
            let line = PTX
                .lines()
                .position(|l| l.contains("mbarrier.arrive.shared.b64 %rd1"))
                .unwrap()
                + 1;
            assert_eq!((faults[0].ptx_line, faults[0].lane), (line, Some(0)));
        }
        other => panic!("expected MbarrierMisuse, got {:?}", other.map(|_| ())),
    }
}

/// Every warp waiting on an mbarrier phase that cannot complete (2 arrivals expected, 1 made): a deadlock,
/// reported with the mbarrier's state soon after every warp has spun 2^18 steps, not as a `Livelock` at the
/// step limit.
#[test]
fn mbarrier_deadlock_is_reported_at_once() {
    let m = Module::parse(PTX).unwrap();
    let mut e = Emulator::new(EmuConfig::default());
    let t = std::time::Instant::now();
    match e.launch(
        &m,
        "mbar_never",
        [1, 1, 1],
        [128, 1, 1],
        0,
        &[ParamValue::U32(1)],
    ) {
        Err(EmuError::Faulted { faults, .. }) => {
            assert_eq!(faults[0].kind, FaultKind::Deadlock, "{}", faults[0].message);
            assert!(
                faults[0]
                    .message
                    .contains("1 of 2 arrivals done (1 still expected)"),
                "{}",
                faults[0].message
            );
        }
        other => panic!("expected Deadlock, got {:?}", other.map(|_| ())),
    }
    println!("deadlock reported after {:?}", t.elapsed());
}

/// Warps that wait on an mbarrier while another computes for millions of steps before it arrives are not
/// deadlocked: the worker's steps are not a spin.
#[test]
fn a_long_wait_for_a_working_warp_is_no_deadlock() {
    let m = Module::parse(PTX).unwrap();
    let mut e = Emulator::new(EmuConfig::default());
    // Warp 0 loops 4·10^5 times (about 1.2·10^6 of its steps, past the 2^18 a spin takes to be a deadlock)
    // and then makes both arrivals.
    e.launch(
        &m,
        "mbar_never",
        [1, 1, 1],
        [128, 1, 1],
        0,
        &[ParamValue::U32(400_000)],
    )
    .unwrap_or_else(|e| panic!("a working warp was taken for a deadlock: {e}"));
}
