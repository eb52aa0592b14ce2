//! Hand-written PTX exercising integer/bit/float/conversion/warp instructions against Rust references.

use prism_runtime::emu::*;

const N: usize = 24;

const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry ops(.param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b16 %h<4>;
    .reg .b32 %r<40>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<8>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mul.lo.u32 %r2, %r1, 16843009;
    add.u32 %r2, %r2, 7;
    mad.lo.u32 %r3, %r1, 3, 1;
    mul.wide.u32 %rd2, %r1, 96;
    add.s64 %rd1, %rd1, %rd2;
    bfe.u32 %r10, %r2, 4, 8;
    st.global.u32 [%rd1+0], %r10;
    bfe.s32 %r10, %r2, 28, 8;
    st.global.u32 [%rd1+4], %r10;
    bfi.b32 %r10, %r3, %r2, 8, 4;
    st.global.u32 [%rd1+8], %r10;
    prmt.b32 %r10, %r2, %r3, 0x5140;
    st.global.u32 [%rd1+12], %r10;
    lop3.b32 %r10, %r2, %r3, %r1, 0x96;
    st.global.u32 [%rd1+16], %r10;
    shf.l.wrap.b32 %r10, %r2, %r3, 5;
    st.global.u32 [%rd1+20], %r10;
    shf.r.clamp.b32 %r10, %r2, %r3, 40;
    st.global.u32 [%rd1+24], %r10;
    mul.hi.u32 %r10, %r2, %r3;
    st.global.u32 [%rd1+28], %r10;
    sub.s32 %r11, %r1, 16;
    cvt.rn.f32.s32 %f1, %r11;
    mul.f32 %f1, %f1, 0f3F000000;
    cvt.rni.s32.f32 %r10, %f1;
    st.global.u32 [%rd1+32], %r10;
    cvt.rmi.s32.f32 %r10, %f1;
    st.global.u32 [%rd1+36], %r10;
    setp.lt.u32 %p1, %r1, 16;
    vote.sync.uni.pred %p2, %p1, -1;
    selp.u32 %r10, 1, 0, %p2;
    st.global.u32 [%rd1+40], %r10;
    and.b32 %r12, %r1, 3;
    match.any.sync.b32 %r10, %r12, -1;
    st.global.u32 [%rd1+44], %r10;
    rem.u32 %r13, %r1, 3;
    setp.eq.u32 %p3, %r13, 0;
    bar.red.popc.u32 %r10, 0, %p3;
    st.global.u32 [%rd1+48], %r10;
    activemask.b32 %r10;
    st.global.u32 [%rd1+52], %r10;
    shfl.sync.up.b32 %r10|%p1, %r1, 3, 0, -1;
    st.global.u32 [%rd1+56], %r10;
    shfl.sync.down.b32 %r10, %r1, 5, 31, -1;
    st.global.u32 [%rd1+60], %r10;
    slct.s32.s32 %r10, %r2, %r3, %r11;
    st.global.u32 [%rd1+64], %r10;
    clz.b32 %r10, %r3;
    st.global.u32 [%rd1+68], %r10;
    brev.b32 %r10, %r3;
    st.global.u32 [%rd1+72], %r10;
    mul.lo.s32 %r14, %r1, 20;
    sub.s32 %r14, %r14, 100;
    cvt.sat.u8.s32 %r10, %r14;
    st.global.u32 [%rd1+76], %r10;
    add.s32 %r15, %r1, 1;
    neg.s32 %r15, %r15;
    rem.s32 %r10, %r15, 7;
    st.global.u32 [%rd1+80], %r10;
    div.s32 %r10, %r15, 4;
    st.global.u32 [%rd1+84], %r10;
    cvt.rn.f32.u32 %f2, %r1;
    mov.b32 %r16, 0f3F800000;
    cvt.rn.f16x2.f32 %r17, %f2, %f1;
    mov.b32 %r18, 0x3C003C00;
    add.rn.f16x2 %r10, %r17, %r18;
    st.global.u32 [%rd1+88], %r10;
    mov.b32 {%h1, %h2}, %r10;
    cvt.f32.f16 %f3, %h2;
    cvt.rzi.s32.f32 %r10, %f3;
    st.global.u32 [%rd1+92], %r10;
    ret;
}
"#;

fn f16(x: f32) -> u32 {
    half::f16::from_f32(x).to_bits() as u32
}

fn expected(t: u32, popc3: u32) -> [u32; N] {
    let a = t.wrapping_mul(0x0101_0101).wrapping_add(7);
    let b = t * 3 + 1;
    let bytes = (a as u64) | ((b as u64) << 32);
    let prmt = {
        let mut r = 0u32;
        for (i, sel) in [0u32, 4, 1, 5].iter().enumerate() {
            r |= (((bytes >> (8 * sel)) & 0xff) as u32) << (8 * i);
        }
        r
    };
    let half_f = (t as i32 - 16) as f32 * 0.5;
    let v = -(t as i32 + 1);
    // f16x2 pack: cvt.rn.f16x2.f32 d, a, b puts a in the upper half
    let packed_hi = f16(t as f32 + 1.0);
    let packed_lo = f16(half_f + 1.0);
    [
        (a >> 4) & 0xff,
        ((a as i32) >> 28) as u32,
        (a & !0xf00) | ((b & 0xf) << 8),
        prmt,
        a ^ b ^ t,
        (b << 5) | (a >> 27),
        b,
        ((a as u64 * b as u64) >> 32) as u32,
        half_f.round_ties_even() as i32 as u32,
        half_f.floor() as i32 as u32,
        0,
        0x1111_1111 << (t & 3),
        popc3,
        0xffff_ffff,
        if t >= 3 { t - 3 } else { t },
        if t + 5 <= 31 { t + 5 } else { t },
        if t >= 16 { a } else { b },
        b.leading_zeros(),
        b.reverse_bits(),
        (t as i32 * 20 - 100).clamp(0, 255) as u32,
        (v % 7) as u32,
        (v / 4) as u32,
        packed_lo | (packed_hi << 16),
        (t + 1) as i32 as u32,
    ]
}

#[test]
fn integer_bit_float_and_warp_ops() {
    let m = Module::parse(PTX).unwrap();
    for mode in [WarpMode::Independent, WarpMode::Lockstep] {
        let mut e = Emulator::new(EmuConfig {
            warp_mode: mode,
            ..EmuConfig::default()
        });
        let out = e.alloc(64 * N * 4);
        e.write(out, &vec![0xAB; 64 * N * 4]).unwrap();
        e.launch(&m, "ops", [1, 1, 1], [64, 1, 1], 0, &[ParamValue::Ptr(out)])
            .unwrap();
        let got: Vec<u32> = e
            .read(out, 64 * N * 4)
            .unwrap()
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let popc3 = (0..64).filter(|t| t % 3 == 0).count() as u32;
        for t in 0..64u32 {
            let want = expected(t, popc3);
            let mut w = want;
            // match.any/vote/shfl/activemask are per warp: lane = t % 32
            let lane = t % 32;
            w[10] = (t >= 32) as u32;
            w[11] = 0x1111_1111 << (lane & 3);
            w[14] = if lane >= 3 { t - 3 } else { t };
            w[15] = if lane + 5 <= 31 { t + 5 } else { t };
            for (k, x) in w.iter().enumerate() {
                assert_eq!(got[t as usize * N + k], *x, "thread {} slot {}", t, k);
            }
        }
    }
}

/// `WARP_SZ` (what nvcc emits for `warpSize`) and `bmsk` (CUB's radix sort on sm_90) run; an unknown
/// special register makes only its own instruction unsupported: the module loads, the other kernel runs, and
/// the unknown name is a fault when (and only when) executed.
#[test]
fn warp_sz_bmsk_and_unknown_names() {
    let src = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry ok_kernel(.param .u64 out, .param .u32 pos, .param .u32 width)
{
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r2, [pos];
	ld.param.u32 %r3, [width];
	mov.u32 %r1, WARP_SZ;
	st.global.u32 [%rd1], %r1;
	bmsk.wrap.b32 %r4, %r2, %r3;
	st.global.u32 [%rd1+4], %r4;
	bmsk.clamp.b32 %r5, %r2, %r3;
	st.global.u32 [%rd1+8], %r5;
	ret;
}
.visible .entry uses_unknown(.param .u64 out)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %no_such_register;
	st.global.u32 [%rd1], %r1;
	ret;
}
"#;
    let m = Module::parse(src).expect("an unknown special register must not reject the module");
    // (pos, width) -> (wrap, clamp), per the PTX ISA's bmsk definition.
    for (pos, width, wrap, clamp) in [
        (4u32, 8u32, 0xff0u32, 0xff0u32),
        (28, 8, 0xf000_0000, 0xf000_0000),
        (0, 32, 0, 0xffff_ffff),
        (33, 4, 0x1e, 0),
        (3, 40, 0x7f8, 0xffff_fff8),
    ] {
        let mut e = Emulator::new(EmuConfig::default());
        let out = e.alloc(12);
        e.launch(
            &m,
            "ok_kernel",
            [1, 1, 1],
            [1, 1, 1],
            0,
            &[
                ParamValue::Ptr(out),
                ParamValue::U32(pos),
                ParamValue::U32(width),
            ],
        )
        .unwrap();
        let v: Vec<u32> = e
            .read(out, 12)
            .unwrap()
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(v, vec![32, wrap, clamp], "bmsk({pos}, {width})");
    }
    let mut e = Emulator::new(EmuConfig::default());
    let out = e.alloc(4);
    match e.launch(
        &m,
        "uses_unknown",
        [1, 1, 1],
        [1, 1, 1],
        0,
        &[ParamValue::Ptr(out)],
    ) {
        Err(EmuError::Faulted { faults, .. }) => assert!(
            faults.iter().any(
                |f| f.kind == FaultKind::Unsupported && f.message.contains("%no_such_register")
            ),
            "{faults:#?}"
        ),
        other => panic!("expected an Unsupported fault, got {other:?}"),
    }
}

/// Disjoint lane groups executing one collective with their own membermasks (what cooperative groups'
/// `labeled_partition` and warp-aggregated atomics compile to): per the PTX ISA each lane waits for its own
/// mask only, so this is legal, under every schedule; a lane that is in another lane's mask but passes a
/// different one is still a misuse.
#[test]
fn collectives_in_disjoint_membermask_groups() {
    let src = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry groups(.param .u64 out, .param .u32 bad)
{
	.reg .pred %p<3>;
	.reg .b32 %r<12>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r10, [bad];
	mov.u32 %r1, %laneid;
	and.b32 %r2, %r1, 1;
	setp.eq.u32 %p1, %r2, 0;
	selp.b32 %r3, 0x55555555, 0xAAAAAAAA, %p1;
	// bad = 1: lane 2 claims the odd lanes' mask while being in the even lanes' mask
	setp.eq.u32 %p2, %r1, 2;
	and.pred %p2, %p2, %p2;
	setp.ne.u32 %p1, %r10, 0;
	and.pred %p2, %p2, %p1;
	@%p2 mov.u32 %r3, 0xAAAAAAAB;
	mul.lo.u32 %r4, %r1, 100;
	shfl.sync.idx.b32 %r5, %r4, %r2, 31, %r3;
	setp.ne.u32 %p1, %r1, 99;
	vote.sync.ballot.b32 %r6, %p1, %r3;
	mul.wide.u32 %rd2, %r1, 8;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r5;
	st.global.u32 [%rd3+4], %r6;
	ret;
}
"#;
    let m = Module::parse(src).unwrap();
    let mut cfgs = vec![EmuConfig::default()];
    for seed in [1, 2, 3, 4] {
        for warp_mode in [WarpMode::Independent, WarpMode::Lockstep] {
            cfgs.push(EmuConfig {
                schedule: Schedule::Random { seed },
                warp_mode,
                ..EmuConfig::default()
            });
        }
    }
    for cfg in cfgs {
        let mut e = Emulator::new(cfg.clone());
        let out = e.alloc(32 * 8);
        e.launch(
            &m,
            "groups",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::Ptr(out), ParamValue::U32(0)],
        )
        .unwrap_or_else(|err| panic!("{:?} {:?}: {err}", cfg.schedule, cfg.warp_mode));
        let v: Vec<u32> = e
            .read(out, 256)
            .unwrap()
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        for l in 0..32u32 {
            // shfl.idx with source lane (l & 1) within the group; the ballot is the group's mask.
            assert_eq!(v[2 * l as usize], (l & 1) * 100, "lane {l} shfl");
            let mask = if l & 1 == 0 { 0x5555_5555 } else { 0xAAAA_AAAA };
            assert_eq!(v[2 * l as usize + 1], mask, "lane {l} ballot");
        }
    }
    let mut e = Emulator::new(EmuConfig::default());
    let out = e.alloc(32 * 8);
    match e.launch(
        &m,
        "groups",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(out), ParamValue::U32(1)],
    ) {
        Err(EmuError::Faulted { faults, .. }) => assert!(
            faults.iter().any(|f| f.kind == FaultKind::CollectiveMisuse),
            "{faults:#?}"
        ),
        other => panic!("expected CollectiveMisuse, got {other:?}"),
    }
}
