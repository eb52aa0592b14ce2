//! Warp-level integer and f64 matrix instructions and the sm_90 vector atomics, as nvcc 13.5 compiles
//! public-style CUDA for sm_90 (tests/fixtures/mma_int.ptx, from mma_int.cu): `mma.sync` m8n8k16, m16n8k16,
//! m16n8k32 with s8/u8 inputs in every mix, with and without `.satfinite` (fragments loaded by hand in the
//! PTX ISA's layouts, as llama.cpp's MMQ and CUTLASS do); f64 `mma.sync` m8n8k4 and the sm_90 m16n8k4/k8/k16;
//! `nvcuda::wmma` with signed/unsigned char (three shapes, both memory layouts, `.satfinite`) and double;
//! `atomicAdd` on float2 / float4 and the 16-bit vector `atom` / `red` forms. Every output element is
//! checked against a reference computed here (matrix products over the logical matrices, each `mma`
//! instruction's saturation applied per K step as the kernels issue them), on random inputs with the 8-bit
//! extremes (−128, 127, 255) and accumulators near the s32 limits; several tiles per launch.

use half::{bf16, f16};
use prism_runtime::emu::*;

mod common;
use common::{le, read, upload, Rng};

fn module() -> Module {
    common::fixture_module("mma_int.ptx")
}

/// One warp per block, `grid` = (tiles along N, tiles along M).
fn launch(e: &mut Emulator, m: &Module, entry: &str, grid: [u32; 2], params: &[ParamValue]) {
    e.launch(m, entry, [grid[0], grid[1], 1], [32, 1, 1], 0, params)
        .unwrap_or_else(|err| panic!("{entry}: {err}"));
}

/// Random bytes with runs of the extremes: rows of 0x80 (−128 / 128) and 0xff (−1 / 255), and 0x7f.
fn bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
    for (i, x) in v.iter_mut().enumerate() {
        match (i / 16) % 11 {
            3 => *x = 0x80,
            7 => *x = 0xff,
            9 if i % 2 == 0 => *x = 0x7f,
            _ => {}
        }
    }
    v
}

/// Accumulators: random in the whole s32 range, with runs next to i32::MAX and i32::MIN so that the
/// products overflow.
fn accumulators(rng: &mut Rng, n: usize) -> Vec<i32> {
    (0..n)
        .map(|i| match i % 5 {
            0 => i32::MAX - rng.range(0, 30_000),
            1 => i32::MIN + rng.range(0, 30_000),
            2 => rng.range(-1000, 1000),
            _ => rng.next() as i32,
        })
        .collect()
}

/// D = A·B + C for M×K A (row-major), B given as N×K `bt`, M×N C; each instruction covers `kstep` of K and
/// wraps (or, `sat`, clamps) its s32 result, as the kernels' K loops issue them.
#[allow(clippy::too_many_arguments)]
fn int_reference(
    a: &[u8],
    bt: &[u8],
    c: &[i32],
    (m, n, k): (usize, usize, usize),
    kstep: usize,
    (sa, sb): (bool, bool),
    sat: bool,
) -> Vec<i32> {
    let val = |x: u8, signed: bool| if signed { x as i8 as i64 } else { x as i64 };
    let mut d = vec![0i32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = c[i * n + j];
            for k0 in (0..k).step_by(kstep) {
                let s: i64 = (k0..k0 + kstep)
                    .map(|x| val(a[i * k + x], sa) * val(bt[j * k + x], sb))
                    .sum();
                let t = acc as i64 + s;
                acc = if sat {
                    t.clamp(i32::MIN as i64, i32::MAX as i64) as i32
                } else {
                    t as i32
                };
            }
            d[i * n + j] = acc;
        }
    }
    d
}

struct IntCase {
    entry: &'static str,
    /// Tile M (16 or 8) and K per instruction.
    tile_m: usize,
    kstep: usize,
    signed: (bool, bool),
    sat: bool,
}

fn run_int_case(case: &IntCase, seed: u64, cfg: EmuConfig) {
    let (tile_n, k) = (8, 96);
    let m = module();
    let (mt, nt) = (2usize, 3usize);
    let (mm, nn) = (mt * case.tile_m, nt * tile_n);
    let mut rng = Rng(seed);
    let a = bytes(&mut rng, mm * k);
    let bt = bytes(&mut rng, nn * k);
    let c = accumulators(&mut rng, mm * nn);
    let mut e = Emulator::new(cfg);
    let (da, db, dc) = (
        upload(&mut e, &a),
        upload(&mut e, &bt),
        upload(&mut e, &le(&c, i32::to_le_bytes)),
    );
    let dd = upload(&mut e, &vec![0xA5; 4 * mm * nn]);
    launch(
        &mut e,
        &m,
        case.entry,
        [nt as u32, mt as u32],
        &[
            ParamValue::Ptr(da),
            ParamValue::Ptr(db),
            ParamValue::Ptr(dc),
            ParamValue::Ptr(dd),
            ParamValue::I32(nn as i32),
            ParamValue::I32(k as i32),
        ],
    );
    let got = read(&e, dd, mm * nn, i32::from_le_bytes);
    let want = int_reference(&a, &bt, &c, (mm, nn, k), case.kstep, case.signed, case.sat);
    let mut saturated = 0;
    for i in 0..mm * nn {
        assert_eq!(
            got[i],
            want[i],
            "{}: D[{}][{}] (C {})",
            case.entry,
            i / nn,
            i % nn,
            c[i]
        );
        saturated += (want[i] == i32::MAX || want[i] == i32::MIN) as usize;
    }
    // The inputs reach the limits: saturation (or wrapping) is exercised, not just plain sums.
    if case.sat {
        assert!(saturated > mm * nn / 20, "{}: {saturated}", case.entry);
    }
}

#[test]
fn mma_sync_8_bit_integers() {
    let cases = [
        ("mma_k32_s8s8", 16, 32, (true, true), false),
        ("mma_k32_u8s8", 16, 32, (false, true), false),
        ("mma_k32_s8u8_sat", 16, 32, (true, false), true),
        ("mma_k32_u8u8_sat", 16, 32, (false, false), true),
        ("mma_k16_s8s8", 16, 16, (true, true), false),
        ("mma_k16_u8u8_sat", 16, 16, (false, false), true),
        ("mma_m8_s8u8", 8, 16, (true, false), false),
        ("mma_m8_s8s8_sat", 8, 16, (true, true), true),
    ];
    for (i, (entry, tile_m, kstep, signed, sat)) in cases.into_iter().enumerate() {
        let case = IntCase {
            entry,
            tile_m,
            kstep,
            signed,
            sat,
        };
        run_int_case(&case, 100 + i as u64, EmuConfig::default());
        // The warp-collective result does not depend on the schedule (lockstep, random).
        if i == 0 {
            for (_, cfg) in common::configs() {
                run_int_case(&case, 100, cfg);
            }
        }
    }
}

/// f64 inputs: multiples of 1/16 in [−8, 8) (every product and sum exact, so any summation order gives
/// the same result) or random reals in [−1, 1) (compared within a few ulps of the sum's magnitude).
fn f64s(rng: &mut Rng, n: usize, exact: bool) -> Vec<f64> {
    (0..n)
        .map(|_| {
            if exact {
                rng.range(-128, 128) as f64 / 16.0
            } else {
                (rng.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn check_f64(name: &str, got: &[f64], want: &[f64], scale: &[f64], exact: bool) {
    for i in 0..want.len() {
        let tol = if exact { 0.0 } else { scale[i] * 1e-14 };
        assert!(
            (got[i] - want[i]).abs() <= tol,
            "{name}: element {i}: {} vs {}",
            got[i],
            want[i]
        );
    }
}

/// D = A·B + C (+ `add`), f64, and Σ|a·b| + |c| per element (the error scale of a float sum).
fn f64_reference(
    a: &[f64],
    bt: &[f64],
    c: &[f64],
    (m, n, k): (usize, usize, usize),
) -> (Vec<f64>, Vec<f64>) {
    let mut d = vec![0f64; m * n];
    let mut s = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            d[i * n + j] = c[i * n + j] + (0..k).map(|x| a[i * k + x] * bt[j * k + x]).sum::<f64>();
            s[i * n + j] = c[i * n + j].abs()
                + (0..k)
                    .map(|x| (a[i * k + x] * bt[j * k + x]).abs())
                    .sum::<f64>();
        }
    }
    (d, s)
}

#[test]
fn mma_sync_f64_shapes() {
    let m = module();
    for (entry, tile_m) in [
        ("dmma_m8n8k4", 8),
        ("dmma_m16n8k4", 16),
        ("dmma_m16n8k8", 16),
        ("dmma_m16n8k16", 16),
    ] {
        for exact in [true, false] {
            let (mt, nt, k) = (2usize, 3usize, 32usize);
            let (mm, nn) = (mt * tile_m, nt * 8);
            let mut rng = Rng(7 + tile_m as u64 + exact as u64);
            let (a, bt, c) = (
                f64s(&mut rng, mm * k, exact),
                f64s(&mut rng, nn * k, exact),
                f64s(&mut rng, mm * nn, exact),
            );
            let mut e = Emulator::new(EmuConfig::default());
            let up = |e: &mut Emulator, v: &[f64]| upload(e, &le(v, f64::to_le_bytes));
            let (da, db, dc) = (up(&mut e, &a), up(&mut e, &bt), up(&mut e, &c));
            let dd = upload(&mut e, &vec![0xA5; 8 * mm * nn]);
            launch(
                &mut e,
                &m,
                entry,
                [nt as u32, mt as u32],
                &[
                    ParamValue::Ptr(da),
                    ParamValue::Ptr(db),
                    ParamValue::Ptr(dc),
                    ParamValue::Ptr(dd),
                    ParamValue::I32(nn as i32),
                    ParamValue::I32(k as i32),
                ],
            );
            let got = read(&e, dd, mm * nn, f64::from_le_bytes);
            let (want, scale) = f64_reference(&a, &bt, &c, (mm, nn, k));
            check_f64(entry, &got, &want, &scale, exact);
        }
    }
}

#[test]
fn wmma_8_bit_integers_row_a_col_b() {
    let m = module();
    // (entry, tile M, tile N, A/B signed, .satfinite)
    for (i, (entry, tm, tn, signed, sat)) in [
        ("wmma_s8_16x16", 16usize, 16usize, true, false),
        ("wmma_u8_32x8_sat", 32, 8, false, true),
        ("wmma_s8_8x32_sat", 8, 32, true, true),
    ]
    .into_iter()
    .enumerate()
    {
        let (mt, nt, k) = (2usize, 2usize, 64usize);
        let (mm, nn) = (mt * tm, nt * tn);
        let mut rng = Rng(300 + i as u64);
        let a = bytes(&mut rng, mm * k);
        let bt = bytes(&mut rng, nn * k);
        let c = accumulators(&mut rng, mm * nn);
        let mut e = Emulator::new(EmuConfig::default());
        let (da, db, dc) = (
            upload(&mut e, &a),
            upload(&mut e, &bt),
            upload(&mut e, &le(&c, i32::to_le_bytes)),
        );
        let dd = upload(&mut e, &vec![0xA5; 4 * mm * nn]);
        launch(
            &mut e,
            &m,
            entry,
            [nt as u32, mt as u32],
            &[
                ParamValue::Ptr(da),
                ParamValue::Ptr(db),
                ParamValue::Ptr(dc),
                ParamValue::Ptr(dd),
                ParamValue::I32(nn as i32),
                ParamValue::I32(k as i32),
            ],
        );
        let got = read(&e, dd, mm * nn, i32::from_le_bytes);
        let want = int_reference(&a, &bt, &c, (mm, nn, k), 16, (signed, signed), sat);
        for j in 0..mm * nn {
            assert_eq!(got[j], want[j], "{entry}: D[{}][{}]", j / nn, j % nn);
        }
    }
}

#[test]
fn wmma_u8_column_major_a_row_major_b_shared() {
    let m = module();
    let (mt, nt) = (2usize, 3usize);
    let (mm, nn, k) = (16 * mt, 16 * nt, 16usize);
    let mut rng = Rng(400);
    let at = bytes(&mut rng, k * mm); // K x M
    let b = bytes(&mut rng, k * nn); // K x N
    let mut e = Emulator::new(EmuConfig::default());
    let (da, db) = (upload(&mut e, &at), upload(&mut e, &b));
    let dd = upload(&mut e, &vec![0xA5; 4 * mm * nn]);
    launch(
        &mut e,
        &m,
        "wmma_u8_16x16_layouts",
        [nt as u32, mt as u32],
        &[
            ParamValue::Ptr(da),
            ParamValue::Ptr(db),
            ParamValue::Ptr(dd),
            ParamValue::I32(mm as i32),
            ParamValue::I32(nn as i32),
        ],
    );
    let got = read(&e, dd, mm * nn, i32::from_le_bytes); // column-major M x N
    for i in 0..mm {
        for j in 0..nn {
            let s: i64 = (0..k)
                .map(|x| at[x * mm + i] as i64 * b[x * nn + j] as i64)
                .sum();
            let want = (2 * (7 + s) - 1) as i32;
            assert_eq!(got[j * mm + i], want, "D[{i}][{j}]");
        }
    }
}

#[test]
fn wmma_f64_both_layouts() {
    let m = module();
    for exact in [true, false] {
        let (mt, nt, k) = (3usize, 2usize, 12usize);
        let (mm, nn) = (8 * mt, 8 * nt);
        let mut rng = Rng(500 + exact as u64);
        let (a, bt, c) = (
            f64s(&mut rng, mm * k, exact),
            f64s(&mut rng, nn * k, exact),
            f64s(&mut rng, mm * nn, exact),
        );
        let mut e = Emulator::new(EmuConfig::default());
        let up = |e: &mut Emulator, v: &[f64]| upload(e, &le(v, f64::to_le_bytes));
        let (da, db, dc) = (up(&mut e, &a), up(&mut e, &bt), up(&mut e, &c));
        let dd = upload(&mut e, &vec![0xA5; 8 * mm * nn]);
        let params = [
            ParamValue::Ptr(da),
            ParamValue::Ptr(db),
            ParamValue::Ptr(dc),
            ParamValue::Ptr(dd),
            ParamValue::I32(nn as i32),
            ParamValue::I32(k as i32),
        ];
        launch(&mut e, &m, "wmma_f64", [nt as u32, mt as u32], &params);
        let got = read(&e, dd, mm * nn, f64::from_le_bytes);
        let (want, scale) = f64_reference(&a, &bt, &c, (mm, nn, k));
        let want: Vec<f64> = want.iter().map(|x| x + 0.5).collect();
        check_f64("wmma_f64", &got, &want, &scale, exact);

        // The same product from A column-major (K x M) and B row-major (K x N), D column-major, C = 0.
        let at: Vec<f64> = (0..k * mm).map(|i| a[(i % mm) * k + i / mm]).collect();
        let b: Vec<f64> = (0..k * nn).map(|i| bt[(i % nn) * k + i / nn]).collect();
        let (dat, dbr) = (up(&mut e, &at), up(&mut e, &b));
        let dd2 = upload(&mut e, &vec![0xA5; 8 * mm * nn]);
        let params = [
            ParamValue::Ptr(dat),
            ParamValue::Ptr(dbr),
            ParamValue::Ptr(dd2),
            ParamValue::I32(mm as i32),
            ParamValue::I32(nn as i32),
            ParamValue::I32(k as i32),
        ];
        launch(
            &mut e,
            &m,
            "wmma_f64_layouts",
            [nt as u32, mt as u32],
            &params,
        );
        let got = read(&e, dd2, mm * nn, f64::from_le_bytes); // column-major
        let zero = vec![0f64; mm * nn];
        let (want, scale) = f64_reference(&a, &bt, &zero, (mm, nn, k));
        let got_rm: Vec<f64> = (0..mm * nn).map(|i| got[(i % nn) * mm + i / nn]).collect();
        check_f64("wmma_f64_layouts", &got_rm, &want, &scale, exact);
    }
}

/// Every serialization of atomic adds of `adds` onto `init` returns old values that, with their own
/// addend, chain from `init` to `fin`: {init} ∪ {old + v} = {old} ∪ {fin} as multisets (exact sums).
fn chained(init: f64, fin: f64, olds: &[f64], adds: &[f64]) -> bool {
    let mut lhs: Vec<f64> = olds.iter().zip(adds).map(|(o, v)| o + v).collect();
    lhs.push(init);
    let mut rhs = olds.to_vec();
    rhs.push(fin);
    lhs.sort_by(f64::total_cmp);
    rhs.sort_by(f64::total_cmp);
    lhs == rhs
}

#[test]
fn vector_atomic_add_float2_float4() {
    for (name, cfg) in common::configs() {
        eprintln!("schedule: {name}");
        vector_atomic_f32(cfg);
    }
}

fn vector_atomic_f32(cfg: EmuConfig) {
    let m = module();
    let (n, slots) = (1000usize, 7usize);
    let mut rng = Rng(600);
    // Multiples of 1/4 (exact sums in any order).
    let mut q =
        |k: usize| -> Vec<f32> { (0..k).map(|_| rng.range(-256, 256) as f32 / 4.0).collect() };
    let (init2, init4, v2, v4) = (q(2 * slots), q(4 * slots), q(2 * n), q(4 * n));
    let mut e = Emulator::new(cfg);
    let up = |e: &mut Emulator, v: &[f32]| upload(e, &le(v, f32::to_le_bytes));
    let (a2, a4, dv2, dv4) = (
        up(&mut e, &init2),
        up(&mut e, &init4),
        up(&mut e, &v2),
        up(&mut e, &v4),
    );
    let old = upload(&mut e, &vec![0xA5; 16 * n]);
    e.launch(
        &m,
        "atomic_vec_f32",
        [n.div_ceil(128) as u32, 1, 1],
        [128, 1, 1],
        0,
        &[
            ParamValue::Ptr(a2),
            ParamValue::Ptr(a4),
            ParamValue::Ptr(dv2),
            ParamValue::Ptr(dv4),
            ParamValue::Ptr(old),
            ParamValue::I32(slots as i32),
            ParamValue::I32(n as i32),
        ],
    )
    .expect("atomic_vec_f32");
    let (got2, got4) = (
        read(&e, a2, 2 * slots, f32::from_le_bytes),
        read(&e, a4, 4 * slots, f32::from_le_bytes),
    );
    let olds = read(&e, old, 4 * n, f32::from_le_bytes);
    for s in 0..slots {
        let threads: Vec<usize> = (s..n).step_by(slots).collect();
        for c in 0..2 {
            let sum: f32 = threads.iter().map(|&i| v2[2 * i + c]).sum();
            assert_eq!(
                got2[2 * s + c],
                init2[2 * s + c] + sum,
                "float2 slot {s}.{c}"
            );
        }
        for c in 0..4 {
            let sum: f32 = threads.iter().map(|&i| v4[4 * i + c]).sum();
            assert_eq!(
                got4[4 * s + c],
                init4[4 * s + c] + sum,
                "float4 slot {s}.{c}"
            );
            let o: Vec<f64> = threads.iter().map(|&i| olds[4 * i + c] as f64).collect();
            let v: Vec<f64> = threads.iter().map(|&i| v4[4 * i + c] as f64).collect();
            let (i0, f0) = (init4[4 * s + c] as f64, got4[4 * s + c] as f64);
            assert!(chained(i0, f0, &o, &v), "float4 old values of slot {s}.{c}");
        }
    }
}

#[test]
fn vector_atomics_16_bit() {
    let m = module();
    let (n, slots) = (256usize, 8usize);
    let mut rng = Rng(700);
    // Small integers: exact in f16 and bf16, sums too (|sum| < 256).
    let mut ints = |k: usize, lo: i32, hi: i32| -> Vec<f32> {
        (0..k).map(|_| rng.range(lo, hi) as f32).collect()
    };
    let (v, vb) = (ints(8 * n, -4, 5), ints(8 * n, -3, 4));
    let init_add = ints(8 * slots, -8, 9);
    let init_max = ints(8 * slots, -6, 7);
    let init_badd = ints(4 * slots, -8, 9);
    let init_min = ints(8 * slots, -6, 7);
    let h = |v: &[f32]| {
        le(
            &v.iter()
                .map(|&x| f16::from_f32(x).to_bits())
                .collect::<Vec<_>>(),
            u16::to_le_bytes,
        )
    };
    let hb = |v: &[f32]| {
        le(
            &v.iter()
                .map(|&x| bf16::from_f32(x).to_bits())
                .collect::<Vec<_>>(),
            u16::to_le_bytes,
        )
    };
    let mut e = Emulator::new(EmuConfig::default());
    let (add, max, badd, min) = (
        upload(&mut e, &h(&init_add)),
        upload(&mut e, &h(&init_max)),
        upload(&mut e, &hb(&init_badd)),
        upload(&mut e, &hb(&init_min)),
    );
    let (dv, dvb) = (upload(&mut e, &h(&v)), upload(&mut e, &hb(&vb)));
    let old = upload(&mut e, &vec![0xA5; 16 * n]);
    e.launch(
        &m,
        "atomic_vec_half",
        [n.div_ceil(64) as u32, 1, 1],
        [64, 1, 1],
        0,
        &[
            ParamValue::Ptr(add),
            ParamValue::Ptr(max),
            ParamValue::Ptr(badd),
            ParamValue::Ptr(min),
            ParamValue::Ptr(dv),
            ParamValue::Ptr(dvb),
            ParamValue::Ptr(old),
            ParamValue::I32(slots as i32),
            ParamValue::I32(n as i32),
        ],
    )
    .expect("atomic_vec_half");
    let rd_h = |a: u64, k: usize| -> Vec<f32> {
        read(&e, a, k, u16::from_le_bytes)
            .into_iter()
            .map(|b| f16::from_bits(b).to_f32())
            .collect()
    };
    let rd_b = |a: u64, k: usize| -> Vec<f32> {
        read(&e, a, k, u16::from_le_bytes)
            .into_iter()
            .map(|b| bf16::from_bits(b).to_f32())
            .collect()
    };
    let (got_add, got_max, got_badd, got_min, olds) = (
        rd_h(add, 8 * slots),
        rd_h(max, 8 * slots),
        rd_b(badd, 4 * slots),
        rd_b(min, 8 * slots),
        rd_h(old, 8 * n),
    );
    for s in 0..slots {
        let threads: Vec<usize> = (s..n).step_by(slots).collect();
        for c in 0..8 {
            let at = 8 * s + c;
            let sum: f32 = threads.iter().map(|&i| v[8 * i + c]).sum();
            assert_eq!(got_add[at], init_add[at] + sum, "v8.f16 add slot {s}.{c}");
            let o: Vec<f64> = threads.iter().map(|&i| olds[8 * i + c] as f64).collect();
            let a: Vec<f64> = threads.iter().map(|&i| v[8 * i + c] as f64).collect();
            assert!(
                chained(init_add[at] as f64, got_add[at] as f64, &o, &a),
                "v8.f16 old values of slot {s}.{c}"
            );
            let mx = threads
                .iter()
                .map(|&i| v[8 * i + c])
                .fold(init_max[at], f32::max);
            assert_eq!(got_max[at], mx, "v4.f16x2 max slot {s}.{c}");
            let mn = threads
                .iter()
                .map(|&i| vb[8 * i + c])
                .fold(init_min[at], f32::min);
            assert_eq!(got_min[at], mn, "v8.bf16 min slot {s}.{c}");
            if c < 4 {
                let at4 = 4 * s + c;
                let sum: f32 = threads.iter().map(|&i| vb[8 * i + c]).sum();
                assert_eq!(
                    got_badd[at4],
                    init_badd[at4] + sum,
                    "v2.bf16x2 add slot {s}.{c}"
                );
            }
        }
    }
}

// ---- decoder forms ----

/// A one-entry module around `body` (registers %r, %rd, %f, %fd, %rs declared; `sbuf` in shared memory).
fn module_with(body: &str) -> Result<Module, PtxError> {
    Module::parse(&format!(
        ".version 8.5\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n\
         .reg .b16 %rs<16>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<8>;\n.reg .f32 %f<16>;\n.reg .f64 %fd<16>;\n\
         .shared .align 16 .b8 sbuf[64];\nld.param.u64 %rd1, [p];\n{body}\nret;\n}}\n"
    ))
}

#[test]
fn decoder_accepts_the_integer_f64_and_vector_forms_and_refuses_the_rest() {
    let supported = [
        "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%r1, %r2, %r3, %r4};",
        "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32 {%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%r1, %r2, %r3, %r4};",
        "mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r9}, {%r1, %r2, %r3, %r4};",
        "mma.sync.aligned.m8n8k16.row.col.satfinite.s32.u8.u8.s32 {%r1, %r2}, {%r5}, {%r9}, {%r1, %r2};",
        "mma.sync.aligned.m8n8k32.row.col.s32.s4.s4.s32 {%r1, %r2}, {%r5}, {%r9}, {%r1, %r2};",
        "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.u4.s4.s32 {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r9}, {%r1, %r2, %r3, %r4};",
        "mma.sync.aligned.m16n8k64.row.col.s32.s4.u4.s32 {%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%r1, %r2, %r3, %r4};",
        "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc {%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%r1, %r2, %r3, %r4};",
        "mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.and.popc {%r1, %r2}, {%r5}, {%r9}, {%r1, %r2};",
        "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%fd1, %fd2, %fd3, %fd4}, {%fd5, %fd6}, {%fd7}, {%fd1, %fd2, %fd3, %fd4};",
        "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%fd1, %fd2, %fd3, %fd4}, {%fd5, %fd6, %fd7, %fd8}, {%fd9, %fd10}, {%fd1, %fd2, %fd3, %fd4};",
        "wmma.load.b.sync.aligned.row.m8n32k16.global.u8 {%r1, %r2, %r3, %r4}, [%rd1], 32;",
        "wmma.mma.sync.aligned.col.row.m32n8k16.s32.u8.u8.s32 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, {%r9, %r10, %r11, %r12}, {%r13}, {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8};",
        "wmma.store.d.sync.aligned.col.m8n8k4.shared.f64 [sbuf], {%fd1, %fd2}, 8;",
        "atom.global.add.v2.f32 {%f1, %f2}, [%rd1], {%f3, %f4};",
        "red.add.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};",
        "atom.global.add.noftz.v4.f16x2 {%r1, %r2, %r3, %r4}, [%rd1], {%r5, %r6, %r7, %r8};",
        "red.global.max.noftz.v8.bf16 [%rd1], {%rs1, %rs2, %rs3, %rs4, %rs5, %rs6, %rs7, %rs8};",
    ];
    for form in supported {
        let m = module_with(form).unwrap_or_else(|e| panic!("{form}: {e}"));
        assert!(
            m.unsupported_instructions().is_empty(),
            "{form}: {:?}",
            m.unsupported_instructions()
        );
    }
    let unsupported = [
        // single-bit with both or no bit operation or in another shape, 4-bit in an 8-bit shape or mixed with 8-bit, FP8 other than m16n8k32 (sm_120's), sparse,
        // Volta, other layouts, other accumulators
        "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.xor.popc {%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%r1, %r2, %r3, %r4};",
        "mma.sync.aligned.m16n8k64.row.col.s32.b1.b1.s32.xor.popc {%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%r1, %r2, %r3, %r4};",
        "mma.sync.aligned.m16n8k16.row.col.s32.s4.s4.s32 {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r9}, {%r1, %r2, %r3, %r4};",
        "mma.sync.aligned.m16n8k64.row.col.s32.s4.s8.s32 {%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%r1, %r2, %r3, %r4};",
        "mma.sync.aligned.m16n8k16.row.col.f32.e4m3.e4m3.f32 {%f1, %f2, %f3, %f4}, {%r5, %r6}, {%r9}, {%f1, %f2, %f3, %f4};",
        "mma.sp.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r9, %r10}, {%r1, %r2, %r3, %r4}, %r11, 0x0;",
        "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, {%r1, %r2}, {%r3, %r4}, {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8};",
        "mma.sync.aligned.m8n8k4.row.row.f64.f64.f64.f64 {%fd1, %fd2}, {%fd3}, {%fd4}, {%fd1, %fd2};",
        "mma.sync.aligned.m16n8k32.row.col.f32.s8.s8.f32 {%f1, %f2, %f3, %f4}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%f1, %f2, %f3, %f4};",
        "mma.sync.aligned.m16n8k32.row.col.f64.f64.f64.f64 {%fd1, %fd2, %fd3, %fd4}, {%fd5, %fd6}, {%fd7}, {%fd1, %fd2, %fd3, %fd4};",
        "wmma.mma.sync.aligned.row.col.m8n8k4.rz.f64.f64.f64.f64 {%fd1, %fd2}, {%fd3}, {%fd4}, {%fd1, %fd2};",
        "wmma.load.a.sync.aligned.row.m8n8k32.global.s4 {%r1}, [%rd1], 32;",
        "wmma.load.a.sync.aligned.row.m16n16k16.global.f64 {%fd1}, [%rd1], 16;",
        // vector atomics: shared memory, f32 other than add, integers, widths the ISA does not list
        "atom.shared.add.v2.f32 {%f1, %f2}, [sbuf], {%f3, %f4};",
        "atom.global.min.v2.f32 {%f1, %f2}, [%rd1], {%f3, %f4};",
        "atom.global.add.v2.u32 {%r1, %r2}, [%rd1], {%r3, %r4};",
        "atom.global.add.v8.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, [%rd1], {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8};",
        "atom.global.exch.v2.f16x2 {%r1, %r2}, [%rd1], {%r3, %r4};",
    ];
    for form in unsupported {
        let m = module_with(form).unwrap_or_else(|e| panic!("{form}: {e}"));
        assert_eq!(m.unsupported_instructions().len(), 1, "{form}");
    }
    // Register lists of the wrong length are malformed, not wrong results.
    let malformed = [
        "mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r9, %r10}, {%r1, %r2, %r3, %r4};",
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r9, %r10}, {%r1, %r2, %r3, %r4};",
        "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%fd1, %fd2, %fd3, %fd4}, {%fd3}, {%fd4}, {%fd1, %fd2};",
        "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%fd1, %fd2, %fd3, %fd4}, {%fd5, %fd6}, {%fd7}, {%fd1, %fd2, %fd3, %fd4};",
        "atom.global.add.v4.f32 {%f1, %f2}, [%rd1], {%f3, %f4, %f5, %f6};",
        "red.global.add.v2.f32 [%rd1], %f1;",
        "wmma.mma.sync.aligned.row.col.m8n8k4.f64.f64.f64.f64 {%fd1, %fd2}, {%fd3};",
        "wmma.load.a.sync.aligned.row.m16n16k16.global.s8 {%r1, %r2};",
    ];
    for form in malformed {
        assert!(module_with(form).is_err(), "{form}");
    }
}

#[test]
fn vector_atomics_fault_off_global_memory_and_misaligned() {
    // A generic address into shared memory (valid PTX, wrong at run time), and a float4 at 8-byte alignment.
    for (body, kind) in [
        (
            "cvta.shared.u64 %rd2, sbuf;\nmov.f32 %f1, 0f3F800000;\n\
             atom.add.v2.f32 {%f2, %f3}, [%rd2], {%f1, %f1};",
            FaultKind::InvalidOperation,
        ),
        (
            "mov.f32 %f1, 0f3F800000;\nred.global.add.v4.f32 [%rd1+8], {%f1, %f1, %f1, %f1};",
            FaultKind::Misaligned,
        ),
    ] {
        let m = module_with(body).expect("parses");
        let mut e = Emulator::new(EmuConfig::default());
        let buf = upload(&mut e, &[0u8; 64]);
        match e.launch(&m, "k", [1, 1, 1], [32, 1, 1], 0, &[ParamValue::Ptr(buf)]) {
            Err(EmuError::Faulted { faults, .. }) => {
                assert!(faults.iter().any(|f| f.kind == kind), "{body}: {faults:?}")
            }
            other => panic!("{body}: expected a {kind:?} fault, got {other:?}"),
        }
    }
}

/// An FP8 code's value (e4m3: bias 7, no infinities, 0x7f/0xff NaN; e5m2: bias 15), written out here from
/// the OCP FP8 definitions, independently of the emulator's conversion code.
fn fp8(c: u8, e5m2: bool) -> f64 {
    let (mb, bias) = if e5m2 { (2, 15) } else { (3, 7) };
    let sign = if c & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = ((c & 0x7f) >> mb) as i32;
    let m = (c & ((1 << mb) - 1)) as f64;
    let v = if e == 0 {
        m / (1 << mb) as f64 * 2f64.powi(1 - bias)
    } else {
        (1.0 + m / (1 << mb) as f64) * 2f64.powi(e - bias)
    };
    sign * v
}

/// `mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32` (the int8 m16n8k32's fragments) on 3x2 tiles,
/// K = 96: each instruction's exact sum of products and C rounded once to f32. A mutated fragment layout
/// moves products between elements, which the mixed FP8 codes (no NaN or infinity codes) expose.
#[test]
fn mma_sync_fp8() {
    let m = module();
    let (mt, nt, k) = (2usize, 3usize, 96usize);
    let (mm, nn) = (16 * mt, 8 * nt);
    let mut rng = Rng(21);
    let code = |rng: &mut Rng, e5m2: bool| loop {
        let c = (rng.next() & 0xff) as u8;
        let bad = if e5m2 {
            c & 0x7c == 0x7c
        } else {
            c & 0x7f == 0x7f
        };
        if !bad {
            return c;
        }
    };
    let a: Vec<u8> = (0..mm * k).map(|_| code(&mut rng, false)).collect();
    let bt: Vec<u8> = (0..nn * k).map(|_| code(&mut rng, true)).collect();
    let c: Vec<f32> = (0..mm * nn)
        .map(|_| rng.range(-500, 500) as f32 / 16.0)
        .collect();
    let mut e = Emulator::new(EmuConfig::default());
    let (da, db) = (upload(&mut e, &a), upload(&mut e, &bt));
    let dc = upload(&mut e, &le(&c, f32::to_le_bytes));
    let dd = upload(&mut e, &vec![0; 4 * mm * nn]);
    let p = ParamValue::Ptr;
    launch(
        &mut e,
        &m,
        "mma_fp8_e4m3_e5m2",
        [nt as u32, mt as u32],
        &[
            p(da),
            p(db),
            p(dc),
            p(dd),
            ParamValue::I32(nn as i32),
            ParamValue::I32(k as i32),
        ],
    );
    let got = read(&e, dd, mm * nn, f32::from_le_bytes);
    for r in 0..mm {
        for n in 0..nn {
            let mut acc = c[r * nn + n];
            for k0 in (0..k).step_by(32) {
                let mut s = acc as f64;
                for kk in k0..k0 + 32 {
                    s += fp8(a[r * k + kk], false) * fp8(bt[n * k + kk], true);
                }
                acc = s as f32;
            }
            assert_eq!(
                got[r * nn + n].to_bits(),
                acc.to_bits(),
                "D[{r}][{n}]: {} vs {acc}",
                got[r * nn + n]
            );
        }
    }
}
