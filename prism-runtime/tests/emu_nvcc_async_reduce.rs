//! The sm_90 asynchronous stores and reductions (`st.async`, `red.async`, `cp.reduce.async.bulk`, its tensor
//! form, the shared::cta → shared::cluster `cp.async.bulk`) on nvcc 13.5's PTX of
//! `tests/fixtures/hopper/async_reduce.cu` (CCCL `cuda::ptx` wrappers and CUTLASS-style inline asm): every
//! output element against a host reference on random non-zero inputs, several clusters, race detection on;
//! and the cases the PTX ISA makes undefined, which the emulator reports as faults.

mod common;

use common::*;
use prism_runtime::emu::*;

const N: usize = 128;

fn module() -> Module {
    fixture_module("hopper/async_reduce.ptx")
}

fn nonzero(r: &mut Rng) -> u32 {
    loop {
        let v = r.next() as u32;
        if v != 0 {
            return v;
        }
    }
}

/// `atom.inc` / `atom.dec` (PTX ISA): wrap to 0 above the bound, to the bound below 0.
fn inc(old: u32, b: u32) -> u32 {
    if old >= b {
        0
    } else {
        old + 1
    }
}
fn dec(old: u32, b: u32) -> u32 {
    if old == 0 || old > b {
        b
    } else {
        old - 1
    }
}

/// What block `g` of `async_exchange` receives from its sender `s` (the previous rank of its cluster).
fn exchange_reference(in32: &[u32], in64: &[u64], s: usize) -> (Vec<u32>, Vec<u64>, Vec<u32>, u64) {
    let buf = in32[s * 8 * N..s * 8 * N + 7 * N].to_vec();
    let buf64 = in64[s * 3 * N..(s + 1) * 3 * N].to_vec();
    let xs = &in32[s * 8 * N + 7 * N..(s + 1) * 8 * N];
    let mut red = vec![
        5u32,
        0xFFFF_FFFF,
        0,
        0xFFFF_FFFF,
        0,
        0,
        0,
        7,
        0x7FFF_FFFF,
        0x8000_0000,
        3,
    ];
    for &x in xs {
        red[0] = red[0].wrapping_add(x);
        red[1] = red[1].min(x);
        red[2] = red[2].max(x);
        red[3] &= x | 0x0F0F_0000;
        red[4] |= x & 0x00F0_00F0;
        red[5] ^= x;
        red[6] = inc(red[6], 50);
        red[7] = dec(red[7], 50);
        red[8] = (red[8] as i32).min(x as i32) as u32;
        red[9] = (red[9] as i32).max(x as i32) as u32;
        red[10] = red[10].wrapping_add(x);
    }
    let red64 = buf64[..N].iter().fold(11u64, |a, &v| a.wrapping_add(v));
    (buf, buf64, red, red64)
}

/// st.async (b32, v2.b32, v4.b32, b64, v2.b64) and red.async (every form of the ISA's table) around
/// two clusters of four blocks, under every schedule.
#[test]
fn st_async_and_red_async_reach_the_next_block_of_the_cluster() {
    let m = module();
    let blocks = 8;
    let mut r = Rng(0xA5A5);
    let in32: Vec<u32> = (0..blocks * 8 * N).map(|_| nonzero(&mut r)).collect();
    let in64: Vec<u64> = (0..blocks * 3 * N).map(|_| r.next() | 1).collect();
    for (name, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let a32 = upload(&mut e, &le(&in32, u32::to_le_bytes));
        let a64 = upload(&mut e, &le(&in64, u64::to_le_bytes));
        let o32 = e.alloc(blocks * 7 * N * 4);
        let o64 = e.alloc(blocks * 3 * N * 8);
        let ored = e.alloc(blocks * 11 * 4);
        let ored64 = e.alloc(blocks * 8);
        let params = [a32, a64, o32, o64, ored, ored64].map(ParamValue::Ptr);
        e.launch_cluster(
            &m,
            "_Z14async_exchangePKjPKmPjPmS3_S4_",
            [blocks as u32, 1, 1],
            [N as u32, 1, 1],
            Some([4, 1, 1]),
            0,
            &params,
        )
        .unwrap_or_else(|err| panic!("{name}: {err}"));
        let got32 = read(&e, o32, blocks * 7 * N, u32::from_le_bytes);
        let got64 = read(&e, o64, blocks * 3 * N, u64::from_le_bytes);
        let gotred = read(&e, ored, blocks * 11, u32::from_le_bytes);
        let gotred64 = read(&e, ored64, blocks, u64::from_le_bytes);
        for g in 0..blocks {
            let s = (g & !3) | ((g + 3) % 4);
            let (buf, buf64, red, red64) = exchange_reference(&in32, &in64, s);
            assert_eq!(
                &got32[g * 7 * N..(g + 1) * 7 * N],
                &buf[..],
                "{name}: block {g} st.async u32"
            );
            assert_eq!(
                &got64[g * 3 * N..(g + 1) * 3 * N],
                &buf64[..],
                "{name}: block {g} st.async u64"
            );
            assert_eq!(
                &gotred[g * 11..(g + 1) * 11],
                &red[..],
                "{name}: block {g} red.async"
            );
            assert_eq!(gotred64[g], red64, "{name}: block {g} red.async.add.u64");
        }
    }
}

/// The eight global `cp.reduce.async.bulk` forms of the fixture, every block into the same arrays.
fn bulk_inputs(r: &mut Rng, blocks: usize) -> (Vec<u32>, Vec<u32>) {
    let small = |r: &mut Rng| loop {
        let v = r.range(-8, 9);
        if v != 0 {
            return v;
        }
    };
    let slices = |k: usize, r: &mut Rng| -> Vec<u32> {
        match k {
            1 => (0..256).map(|_| (small(r) as f32).to_bits()).collect(),
            3 => (0..128)
                .flat_map(|_| {
                    let v = r.next() | 1;
                    [v as u32, (v >> 32) as u32]
                })
                .collect(),
            5 | 6 => (0..256)
                .map(|_| {
                    let h = |x: f32| {
                        if k == 5 {
                            half::f16::from_f32(x).to_bits() as u32
                        } else {
                            half::bf16::from_f32(x).to_bits() as u32
                        }
                    };
                    h(small(r) as f32) | h(small(r) as f32) << 16
                })
                .collect(),
            7 => (0..128)
                .flat_map(|_| {
                    let v = (small(r) as f64).to_bits();
                    [v as u32, (v >> 32) as u32]
                })
                .collect(),
            _ => (0..256).map(|_| nonzero(r)).collect(),
        }
    };
    let input: Vec<u32> = (0..blocks)
        .flat_map(|_| (0..8).collect::<Vec<_>>())
        .flat_map(|k| slices(k, r))
        .collect();
    let out: Vec<u32> = (0..8).flat_map(|k| slices(k, r)).collect();
    (input, out)
}

/// The host reference of `bulk_reduce_global`: slice k of every block reduced into slice k of `out`.
fn bulk_reference(input: &[u32], out0: &[u32], blocks: usize) -> Vec<u32> {
    let mut out = out0.to_vec();
    let u64s = |w: &[u32]| -> Vec<u64> {
        w.chunks(2)
            .map(|c| c[0] as u64 | (c[1] as u64) << 32)
            .collect()
    };
    for b in 0..blocks {
        for k in 0..8 {
            let src = &input[(b * 8 + k) * 256..(b * 8 + k + 1) * 256];
            let dst = &mut out[k * 256..(k + 1) * 256];
            match k {
                3 | 7 => {
                    let (s, d) = (u64s(src), u64s(dst));
                    for (i, (x, y)) in s.iter().zip(d).enumerate() {
                        let v = if k == 3 {
                            (*x).max(y)
                        } else {
                            (f64::from_bits(*x) + f64::from_bits(y)).to_bits()
                        };
                        dst[2 * i] = v as u32;
                        dst[2 * i + 1] = (v >> 32) as u32;
                    }
                }
                _ => {
                    for (d, &s) in dst.iter_mut().zip(src) {
                        *d = match k {
                            0 => d.wrapping_add(s),
                            1 => (f32::from_bits(*d) + f32::from_bits(s)).to_bits(),
                            2 => (*d as i32).min(s as i32) as u32,
                            4 => *d ^ s,
                            _ => {
                                let h = |w: u32, i: u32| -> f32 {
                                    let bits = (w >> (16 * i)) as u16;
                                    if k == 5 {
                                        half::f16::from_bits(bits).to_f32()
                                    } else {
                                        half::bf16::from_bits(bits).to_f32()
                                    }
                                };
                                let r = |x: f32| -> u32 {
                                    if k == 5 {
                                        half::f16::from_f32(x).to_bits() as u32
                                    } else {
                                        half::bf16::from_f32(x).to_bits() as u32
                                    }
                                };
                                r(h(*d, 0) + h(s, 0)) | r(h(*d, 1) + h(s, 1)) << 16
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn bulk_reductions_into_global_memory_match_the_host() {
    let m = module();
    let blocks = 6;
    let (input, out0) = bulk_inputs(&mut Rng(7), blocks);
    let want = bulk_reference(&input, &out0, blocks);
    for (name, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let a = upload(&mut e, &le(&input, u32::to_le_bytes));
        let o = upload(&mut e, &le(&out0, u32::to_le_bytes));
        e.launch(
            &m,
            "_Z18bulk_reduce_globalPKjPj",
            [blocks as u32, 1, 1],
            [N as u32, 1, 1],
            0,
            &[ParamValue::Ptr(a), ParamValue::Ptr(o)],
        )
        .unwrap_or_else(|err| panic!("{name}: {err}"));
        let got = read(&e, o, 2048, u32::from_le_bytes);
        for k in 0..8 {
            assert_eq!(
                &got[k * 256..(k + 1) * 256],
                &want[k * 256..(k + 1) * 256],
                "{name}: slice {k}"
            );
        }
    }
}

#[test]
fn bulk_copy_and_reduction_into_the_neighbour_block() {
    let m = module();
    let blocks = 4;
    let mut r = Rng(99);
    let input: Vec<u32> = (0..blocks * 384).map(|_| nonzero(&mut r)).collect();
    for (name, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let a = upload(&mut e, &le(&input, u32::to_le_bytes));
        let o = e.alloc(blocks * 256 * 4);
        e.launch_cluster(
            &m,
            "_Z12bulk_clusterPKjPj",
            [blocks as u32, 1, 1],
            [N as u32, 1, 1],
            Some([2, 1, 1]),
            0,
            &[ParamValue::Ptr(a), ParamValue::Ptr(o)],
        )
        .unwrap_or_else(|err| panic!("{name}: {err}"));
        let got = read(&e, o, blocks * 256, u32::from_le_bytes);
        for g in 0..blocks {
            let s = g ^ 1;
            for t in 0..N {
                assert_eq!(got[g * 256 + t], input[s * 384 + t], "{name}: copy {g}/{t}");
                let (mine, theirs) = (input[g * 384 + 256 + t], input[s * 384 + 128 + t]);
                let want = if t < 64 {
                    mine.wrapping_add(theirs)
                } else {
                    (mine as i32).min(theirs as i32) as u32
                };
                assert_eq!(got[g * 256 + N + t], want, "{name}: reduction {g}/{t}");
            }
        }
    }
}

#[test]
fn tensor_reductions_add_and_min_into_global_tensors() {
    let m = module();
    let blocks = 5usize;
    let mut r = Rng(3);
    let small = |r: &mut Rng| loop {
        let v = r.range(-50, 51);
        if v != 0 {
            return v;
        }
    };
    let (w, h) = (40usize, 24usize);
    let f_in: Vec<f32> = (0..blocks * 512).map(|_| small(&mut r) as f32).collect();
    let f0: Vec<f32> = (0..w * h).map(|_| small(&mut r) as f32).collect();
    let i_in: Vec<i32> = (0..blocks * 128).map(|_| nonzero(&mut r) as i32).collect();
    let i0: Vec<i32> = (0..20 * 10 * 2).map(|_| nonzero(&mut r) as i32).collect();
    let coords: Vec<i32> = (0..blocks)
        .flat_map(|_| [r.range(0, 16), r.range(0, 13), r.range(0, 8), r.range(0, 8)])
        .collect();
    let mut want_f = f0.clone();
    let mut want_i = i0.clone();
    for g in 0..blocks {
        let (x0, y0, cx, cy) = (
            coords[4 * g] as usize,
            coords[4 * g + 1] as usize,
            coords[4 * g + 2] as usize,
            coords[4 * g + 3] as usize,
        );
        for j in 0..16 {
            for i in 0..32 {
                if x0 + i < w && y0 + j < h {
                    want_f[(y0 + j) * w + x0 + i] += f_in[g * 512 + j * 32 + i];
                }
            }
        }
        for t in 0..128 {
            let (z, y, x) = (t / 64, (t / 16) % 4, t % 16);
            if cx + x < 20 && cy + y < 10 {
                let at = z * 200 + (cy + y) * 20 + cx + x;
                want_i[at] = want_i[at].min(i_in[g * 128 + t]);
            }
        }
    }
    for (name, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let fa = upload(&mut e, &le(&f0, f32::to_le_bytes));
        let ia = upload(&mut e, &le(&i0, i32::to_le_bytes));
        let fin = upload(&mut e, &le(&f_in, f32::to_le_bytes));
        let iin = upload(&mut e, &le(&i_in, i32::to_le_bytes));
        let ca = upload(&mut e, &le(&coords, i32::to_le_bytes));
        let tf = TensorMap::tiled(
            TensorDataType::F32,
            fa,
            &[w as u64, h as u64],
            &[(w * 4) as u64],
            &[32, 16],
            TensorSwizzle::None,
        )
        .unwrap();
        let ti = TensorMap::tiled(
            TensorDataType::I32,
            ia,
            &[20, 10, 2],
            &[80, 800],
            &[16, 4, 2],
            TensorSwizzle::None,
        )
        .unwrap();
        e.launch(
            &m,
            "_Z10tma_reduce9TensorMapS_PKfPKiS3_",
            [blocks as u32, 1, 1],
            [N as u32, 1, 1],
            0,
            &[
                ParamValue::Bytes(tf.encode().to_vec()),
                ParamValue::Bytes(ti.encode().to_vec()),
                ParamValue::Ptr(fin),
                ParamValue::Ptr(iin),
                ParamValue::Ptr(ca),
            ],
        )
        .unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(
            read(&e, fa, w * h, f32::from_le_bytes),
            want_f,
            "{name}: add.f32"
        );
        assert_eq!(
            read(&e, ia, 400, i32::from_le_bytes),
            want_i,
            "{name}: min.s32"
        );
    }
}

/// An `.add` tensor reduction through a map of f64 elements is not in the ISA's table: a fault.
#[test]
fn a_tensor_reduction_on_an_element_type_outside_the_table_faults() {
    let m = module();
    let mut e = Emulator::new(EmuConfig::default());
    let fa = e.alloc(40 * 24 * 8);
    let tf = TensorMap::tiled(
        TensorDataType::F64,
        fa,
        &[40, 24],
        &[320],
        &[16, 16],
        TensorSwizzle::None,
    )
    .unwrap();
    let ti = tf.clone();
    let buf = e.alloc(5 * 512 * 4 + 64);
    let r = e.launch(
        &m,
        "_Z10tma_reduce9TensorMapS_PKfPKiS3_",
        [1, 1, 1],
        [N as u32, 1, 1],
        0,
        &[
            ParamValue::Bytes(tf.encode().to_vec()),
            ParamValue::Bytes(ti.encode().to_vec()),
            ParamValue::Ptr(buf),
            ParamValue::Ptr(buf),
            ParamValue::Ptr(buf),
        ],
    );
    expect_fault(
        r,
        FaultKind::InvalidOperation,
        "not a reduction on the tensor map",
    );
}

fn expect_fault(r: Result<LaunchReport, EmuError>, kind: FaultKind, text: &str) {
    match r {
        Err(EmuError::Faulted { faults, .. }) => assert!(
            faults
                .iter()
                .any(|f| f.kind == kind && f.message.contains(text)),
            "want {kind:?} '{text}': {faults:#?}"
        ),
        other => panic!("expected a {kind:?} fault '{text}', got {other:?}"),
    }
}

/// st.async into the block's own buffer: reading it after the mbarrier phase completes is ordered; reading
/// it without waiting is a race with the issuing thread's store.
#[test]
fn reading_an_st_async_destination_before_the_mbarrier_wait_is_a_race() {
    let m = module();
    for (name, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let o = e.alloc(8);
        let run = |e: &mut Emulator, wait: i32| {
            e.launch_cluster(
                &m,
                "_Z13st_async_selfPji",
                [2, 1, 1],
                [64, 1, 1],
                Some([2, 1, 1]),
                0,
                &[ParamValue::Ptr(o), ParamValue::I32(wait)],
            )
        };
        run(&mut e, 1).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(read(&e, o, 2, u32::from_le_bytes), vec![1, 2], "{name}");
        expect_fault(run(&mut e, 0), FaultKind::DataRace, "");
    }
}

/// Hand-written forms the ISA makes undefined (PTX ISA §9.7.8.12, §9.7.12.7, §9.7.8.24), one per `mode`.
const NEG: &str = r#"
.version 8.1
.target sm_90a
.address_size 64

.visible .entry neg(.param .u64 dst, .param .u32 mode) .reqnctapercluster 2, 1, 1
{
	.reg .pred %p<10>;
	.reg .b32 %r<20>;
	.reg .b64 %rd<4>;
	.shared .align 16 .b8 buf[256];
	.shared .align 8 .b64 bar;
	ld.param.u64 %rd1, [dst];
	ld.param.u32 %r1, [mode];
	mov.u32 %r2, buf;
	mov.u32 %r3, bar;
	mov.u32 %r10, %tid.x;
	setp.eq.u32 %p9, %r10, 0;
	@%p9 mbarrier.init.shared::cta.b64 [%r3], 1;
	mov.u32 %r4, %cluster_ctarank;
	xor.b32 %r5, %r4, 1;
	mapa.shared::cluster.u32 %r6, %r2, %r5;
	mapa.shared::cluster.u32 %r7, %r3, %r5;
	barrier.cluster.arrive;
	barrier.cluster.wait;
	setp.eq.u32 %p0, %r1, 0;
	setp.eq.u32 %p1, %r1, 1;
	setp.eq.u32 %p2, %r1, 2;
	setp.eq.u32 %p3, %r1, 3;
	setp.eq.u32 %p4, %r1, 4;
	setp.eq.u32 %p5, %r1, 5;
	setp.eq.u32 %p6, %r1, 6;
	setp.eq.u32 %p7, %r1, 7;
	@%p0 cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r2], 24;
	@%p1 cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r2], 512;
	add.u32 %r8, %r2, 4;
	@%p2 cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r8], 16;
	@%p3 st.async.mbarrier::complete_tx::bytes.b32 [%rd1], %r1, [%rd1];
	or.b32 %r9, %r2, 0x06000000;
	@%p4 st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%r9], %r1, [%r7];
	@%p5 red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%r2], %r1, [%r3];
	@%p6 st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%r6], %r1, [%r3];
	add.u32 %r11, %r6, 32;
	@%p7 cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.add.u32 [%r11], [%r2], 256, [%r7];
	setp.eq.u32 %p8, %r1, 8;
	@%p8 st.shared.u32 [%r2], %r1;
	@%p8 cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r2], 16;
	setp.eq.u32 %p8, %r1, 9;
	@%p8 fence.proxy.async.shared::cta;
	@%p8 cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r2], 16;
	@%p8 cp.async.bulk.commit_group;
	@%p8 st.shared.u32 [%r2], %r1;
	@%p8 cp.async.bulk.wait_group.read 0;
	barrier.cluster.arrive;
	barrier.cluster.wait;
	ret;
}
"#;

#[test]
fn undefined_async_stores_and_bulk_reductions_fault() {
    let m = Module::parse(NEG).unwrap();
    let cases = [
        (FaultKind::InvalidOperation, "not a positive multiple of 16"),
        (FaultKind::OutOfBounds, "outside the block's"),
        (FaultKind::Misaligned, "16-byte aligned"),
        (
            FaultKind::InvalidOperation,
            "not in the shared::cluster window",
        ),
        (FaultKind::OutOfBounds, "names block rank 5"),
        (
            FaultKind::InvalidOperation,
            "red.async into the executing block",
        ),
        (
            FaultKind::InvalidOperation,
            "the PTX ISA requires both in the same block",
        ),
        (FaultKind::OutOfBounds, "outside its"),
        // The async-proxy checks of the source: a generic write not fenced before the bulk read, and a
        // write while the bulk group may still read it.
        (FaultKind::DataRace, "no fence.proxy.async"),
        (FaultKind::DataRace, "still reads it"),
    ];
    for (mode, (kind, text)) in cases.into_iter().enumerate() {
        let mut e = Emulator::new(EmuConfig::default());
        let d = e.alloc(1024);
        let r = e.launch_cluster(
            &m,
            "neg",
            [2, 1, 1],
            [32, 1, 1],
            Some([2, 1, 1]),
            0,
            &[ParamValue::Ptr(d), ParamValue::U32(mode as u32)],
        );
        expect_fault(r, kind, text);
    }
}

/// The forms the fixture does not use still decode; sm_100 forms and pairs outside the ISA's tables stay
/// `Unsupported` and fault only when executed.
#[test]
fn sm100_forms_and_invalid_pairs_are_unsupported() {
    for (form, ok) in [
        ("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.inc.u32 [%r1], %r2, [%r3];", true),
        ("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.f32 [%r1], %f1, [%r3];", false),
        ("red.async.release.gpu.global.add.u32 [%rd1], %r2;", false),
        ("st.async.release.gpu.global.u32 [%rd1], %r2;", false),
        ("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b64 [%r1], {%rd1, %rd1, %rd1, %rd1}, [%r3];", false),
        ("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f16 [%rd1], [%r1], 16;", false),
        ("cp.reduce.async.bulk.global.shared::cta.bulk_group.L2::cache_hint.min.bf16 [%rd1], [%r1], 16, %rd2;", true),
        ("cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.min.u64 [%r1], [%r2], 16, [%r3];", false),
        ("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.im2col_no_offs.bulk_group [%rd1, {%r1, %r2, %r3}], [%r4];", false),
    ] {
        let src = format!(
            ".version 8.1\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{{\n.reg .b32 %r<5>;\n.reg .f32 %f<2>;\n.reg .b64 %rd<3>;\nret;\n{form}\nret;\n}}\n"
        );
        let m = Module::parse(&src).unwrap_or_else(|e| panic!("{form}: {e}"));
        let unsupported = !m.unsupported_instructions().is_empty();
        assert_eq!(!unsupported, ok, "{form}");
    }
}
