//! Forms of the toolkit's headers as nvcc 13.5 compiles them for sm_90 (tests/fixtures/fidelity.ptx, from
//! fidelity.cu), each found computed wrongly or refused by the emulator when public-style CUDA code was run
//! on it: packed 16-bit integer SIMD (`__vadd2` … `add.u16x2`) and the DPX `.relu` forms; half comparisons
//! written into half registers (`set.nan.f16.f16` for `__hisnan`); conversions in every rounding mode
//! (f32 → f16/bf16, int → f16, long long → double, double → f16/bf16 rounded once); FP8 (`<cuda_fp8.h>`);
//! the half transcendental functions, whose inline asm declares `.reg.b32 t;`; `fma.rn.relu` on NaN; the
//! device heap (`malloc`/`free`, `new`/`delete`, a block kept from one launch to the next, a bad `free`).
//! Every output element is checked against a reference computed here, independently of the emulator's
//! code (directed roundings by stepping from the correctly rounded value, FP8 by searching the 256 codes).
//! Then, as inline PTX: a TMA load with an `.L2::cache_hint` policy (it was read as a multicast mask), and
//! the race detector on a cluster barrier and on `bar.warp.sync` + one lane's mbarrier arrive (correct
//! code it reported as racy; the same code without the ordering must still be reported).

use half::{bf16, f16};
use prism_runtime::emu::*;

mod common;
use common::{le, read, upload, Rng};

fn module() -> Module {
    common::fixture_module("fidelity.ptx")
}

fn launch(e: &mut Emulator, m: &Module, entry: &str, n: usize, params: &[ParamValue]) {
    let grid = n.div_ceil(64) as u32;
    e.launch(m, entry, [grid, 1, 1], [64, 1, 1], 0, params)
        .unwrap_or_else(|err| panic!("{entry}: {err}"));
}

// ---- references ----

/// The next representable value up (`up`) or down of a 16-bit float's bits (`sign_bit`: 0x8000).
fn step16(bits: u16, up: bool) -> u16 {
    let neg = bits & 0x8000 != 0;
    let mag = bits & 0x7fff;
    match (neg, up) {
        (false, true) => bits + 1,
        (true, false) => bits + 1,
        _ if mag == 0 => {
            if up {
                0x0001
            } else {
                0x8001
            }
        }
        _ => bits - 1,
    }
}

/// `x` rounded to a 16-bit format in a directed mode, by stepping from the correctly rounded `rn`.
fn directed16(rn: u16, rn_value: f64, x: f64, mode: char) -> u16 {
    match mode {
        'z' if rn_value.abs() > x.abs() => step16(rn, rn_value < 0.0),
        'd' if rn_value > x => step16(rn, false),
        'u' if rn_value < x => step16(rn, true),
        _ => rn,
    }
}

/// `x` correctly rounded to f16 or bf16 (ties to even), chosen among the half crate's candidate and its
/// neighbours by exact distance (the crate's f64 conversions round twice).
fn nearest16(x: f64, bf: bool) -> u16 {
    let val = |b: u16| {
        if bf {
            bf16::from_bits(b).to_f64()
        } else {
            f16::from_bits(b).to_f64()
        }
    };
    // At or beyond the largest finite value plus half its ulp, the nearest is infinity (ties to even:
    // the largest finite value's mantissa is odd).
    let overflow = if bf {
        (2.0 - 2f64.powi(-7)) * 2f64.powi(127) + 2f64.powi(119)
    } else {
        65520.0
    };
    if x.abs() >= overflow {
        return if x < 0.0 {
            0xfc00 | (bf as u16 * 0x0380) | 0x8000
        } else {
            0x7c00 | (bf as u16 * 0x0380)
        };
    }
    let c = if bf {
        bf16::from_f64(x).to_bits()
    } else {
        f16::from_f64(x).to_bits()
    };
    let mut best = c;
    for cand in [step16(c, true), step16(c, false)] {
        let (d, db) = ((val(cand) - x).abs(), (val(best) - x).abs());
        if val(cand).is_finite() && (d < db || d == db && cand & 1 == 0) {
            best = cand;
        }
    }
    best
}

fn step64(v: f64, up: bool) -> f64 {
    let b = v.to_bits();
    let r = if (v > 0.0) == up { b + 1 } else { b - 1 };
    f64::from_bits(r)
}

fn fp8_value(c: u8, e5m2: bool) -> f64 {
    let (mb, bias) = if e5m2 { (2, 15) } else { (3, 7) };
    let s = if c & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = ((c & 0x7f) >> mb) as i32;
    let m = (c & ((1 << mb) - 1)) as f64 / (1 << mb) as f64;
    if e == 0 {
        s * m * 2f64.powi(1 - bias)
    } else {
        s * (1.0 + m) * 2f64.powi(e - bias)
    }
}

/// `x` to FP8 with `.satfinite` by search over the finite codes (ties to the even code).
fn fp8_ref(x: f64, e5m2: bool) -> u8 {
    let finite = |c: u8| {
        let e = (c & 0x7f) >> if e5m2 { 2 } else { 3 };
        if e5m2 {
            e != 31
        } else {
            c & 0x7f != 0x7f
        }
    };
    let mut best = 0u8;
    let mut bd = f64::INFINITY;
    for c in 0..=255u8 {
        if !finite(c) || (c == 0x80) {
            continue;
        }
        let d = (fp8_value(c, e5m2) - x).abs();
        if d < bd || d == bd && c & 1 == 0 {
            best = c;
            bd = d;
        }
    }
    if best & 0x7f == 0 && x.is_sign_negative() {
        best = 0x80;
    }
    best
}

// ---- tests ----

#[test]
fn packed_16_bit_integers_and_relu_forms() {
    let m = module();
    let n = 500;
    let mut rng = Rng(1);
    let mut a: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    let mut b: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    // Carries across the halves, signed extremes, equal halves.
    a[..5].copy_from_slice(&[
        0x8000_0000,
        0xffff_ffff,
        0x0001_8000,
        0x7fff_8000,
        0x1234_5678,
    ]);
    b[..5].copy_from_slice(&[
        0x0000_0001,
        0xffff_ffff,
        0x0001_ffff,
        0x0001_7fff,
        0x9abc_def0,
    ]);
    let mut e = Emulator::new(EmuConfig::default());
    let (da, db) = (
        upload(&mut e, &le(&a, u32::to_le_bytes)),
        upload(&mut e, &le(&b, u32::to_le_bytes)),
    );
    let dout = upload(&mut e, &vec![0xA5; 40 * n]);
    launch(
        &mut e,
        &m,
        "packed_int",
        n,
        &[
            ParamValue::Ptr(da),
            ParamValue::Ptr(db),
            ParamValue::Ptr(dout),
            ParamValue::I32(n as i32),
        ],
    );
    let got = read(&e, dout, 10 * n, u32::from_le_bytes);
    let halves = |x: u32| [x as u16, (x >> 16) as u16];
    let pack = |f: &dyn Fn(u16, u16) -> u16, x: u32, y: u32| {
        let (hx, hy) = (halves(x), halves(y));
        f(hx[0], hy[0]) as u32 | (f(hx[1], hy[1]) as u32) << 16
    };
    let s = |v: u16| v as i16;
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let want = [
            pack(&|p, q| p.wrapping_add(q), x, y),
            pack(&|p, q| p.wrapping_sub(q), x, y),
            pack(&|p, q| p.min(q), x, y),
            pack(&|p, q| s(p).min(s(q)) as u16, x, y),
            pack(&|p, q| p.max(q), x, y),
            pack(&|p, q| s(p).max(s(q)) as u16, x, y),
            pack(&|p, q| s(p).min(s(q)).max(0) as u16, x, y),
            pack(&|p, q| s(p).max(s(q)).max(0) as u16, x, y),
            (x as i32).min(y as i32).max(0) as u32,
            (x as i32).max(y as i32).max(0) as u32,
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(
                got[10 * i + k],
                *w,
                "operation {k} of {x:#010x}, {y:#010x} (0 vadd2, 1 vsub2, 2 vminu2, 3 vmins2, 4 vmaxu2, 5 vmaxs2, 6-7 s16x2 relu, 8-9 s32 relu)"
            );
        }
    }
}

#[test]
fn half_comparisons_into_half_registers() {
    let m = module();
    let specials = [
        0x7e00u16, 0x7c00, 0xfc00, 0x0000, 0x8000, 0x3c00, 0x0001, 0x7bff, 0x7fff,
    ];
    let mut rng = Rng(2);
    let mut a: Vec<u16> = specials.to_vec();
    let mut b: Vec<u16> = specials.iter().rev().copied().collect();
    for _ in 0..300 {
        a.push(rng.next() as u16);
        b.push(if rng.next().is_multiple_of(4) {
            *a.last().unwrap()
        } else {
            rng.next() as u16
        });
    }
    let n = a.len();
    let mut e = Emulator::new(EmuConfig::default());
    let da = upload(&mut e, &le(&a, u16::to_le_bytes));
    let db = upload(&mut e, &le(&b, u16::to_le_bytes));
    let dout = upload(&mut e, &vec![0xA5; 8 * n]);
    launch(
        &mut e,
        &m,
        "half_compare",
        n,
        &[
            ParamValue::Ptr(da),
            ParamValue::Ptr(db),
            ParamValue::Ptr(dout),
            ParamValue::I32(n as i32),
        ],
    );
    let got = read(&e, dout, 4 * n, u16::from_le_bytes);
    for i in 0..n {
        let (x, y) = (f16::from_bits(a[i]), f16::from_bits(b[i]));
        let want = [
            x.is_nan() as u16,
            (x == y) as u16,
            (x < y) as u16,
            bf16::from_bits(a[i]).is_nan() as u16,
        ];
        assert_eq!(
            &got[4 * i..4 * i + 4],
            &want,
            "{:#06x} vs {:#06x}",
            a[i],
            b[i]
        );
    }
}

#[test]
fn conversions_round_once_in_every_mode() {
    let m = module();
    let mut rng = Rng(3);
    let mut x: Vec<f32> = vec![
        0.01,
        -0.01,
        1.000_000_1,
        65519.0,
        65520.0,
        1e6,
        -1e6,
        1e-7,
        -1e-7,
        3e38,
    ];
    let mut v: Vec<i32> = vec![70000, 2049, -2049, 9719, 65519, 65520, -70000, 1, -1, 0];
    let mut l: Vec<i64> = vec![
        (1 << 60) + 129,
        -(1 << 60) - 129,
        i64::MAX,
        i64::MIN + 1,
        3,
        -3,
    ];
    let mut d: Vec<f64> = vec![
        1.0 + 2f64.powi(-11) + 2f64.powi(-40),
        1.0 + 2f64.powi(-8) + 2f64.powi(-40),
        -(1.0 + 2f64.powi(-11)),
        1e-9,
        70000.0,
    ];
    while x.len() < 400 {
        x.push(f32::from_bits(
            rng.next() as u32 & 0xbfff_ffff | 0x3000_0000,
        ));
    }
    while v.len() < 400 {
        v.push((rng.next() as i32) >> (rng.next() % 24));
    }
    while l.len() < 400 {
        l.push((rng.next() as i64) >> (rng.next() % 40));
    }
    while d.len() < 400 {
        d.push(f64::from_bits(rng.next() & 0xbfff_ffff_ffff_ffff | 0x3e00_0000_0000_0000) * 1e-3);
    }
    let n = 400;
    let mut e = Emulator::new(EmuConfig::default());
    let dx = upload(&mut e, &le(&x, f32::to_le_bytes));
    let dv = upload(&mut e, &le(&v, i32::to_le_bytes));
    let dl = upload(&mut e, &le(&l, i64::to_le_bytes));
    let dd = upload(&mut e, &le(&d, f64::to_le_bytes));
    let (oh, oi, od, odh) = (
        upload(&mut e, &vec![0xA5; 16 * n]),
        upload(&mut e, &vec![0xA5; 8 * n]),
        upload(&mut e, &vec![0xA5; 24 * n]),
        upload(&mut e, &vec![0xA5; 4 * n]),
    );
    let ptrs = [dx, dv, dl, dd, oh, oi, od, odh].map(ParamValue::Ptr);
    let mut params = ptrs.to_vec();
    params.push(ParamValue::I32(n as i32));
    launch(&mut e, &m, "round_modes", n, &params);
    let h = read(&e, oh, 8 * n, u16::from_le_bytes);
    let ih = read(&e, oi, 4 * n, u16::from_le_bytes);
    let dbl = read(&e, od, 3 * n, f64::from_le_bytes);
    let dh = read(&e, odh, 2 * n, u16::from_le_bytes);
    for i in 0..n {
        let f = x[i] as f64;
        let rn = f16::from_f32(x[i]);
        let rb = bf16::from_f32(x[i]);
        let mut want = vec![rn.to_bits()];
        for mode in ['z', 'd', 'u'] {
            want.push(directed16(rn.to_bits(), rn.to_f64(), f, mode));
        }
        want.push(rb.to_bits());
        for mode in ['z', 'd', 'u'] {
            want.push(directed16(rb.to_bits(), rb.to_f64(), f, mode));
        }
        assert_eq!(
            &h[8 * i..8 * i + 8],
            &want[..],
            "f32 {} ({:#010x}) to f16 rn/rz/rd/ru, bf16 rn/rz/rd/ru",
            x[i],
            x[i].to_bits()
        );

        let vi = v[i] as f64;
        let rn = f16::from_f32(v[i] as f32);
        let mut want = vec![rn.to_bits()];
        for mode in ['z', 'd', 'u'] {
            want.push(directed16(rn.to_bits(), rn.to_f64(), vi, mode));
        }
        assert_eq!(
            &ih[4 * i..4 * i + 4],
            &want[..],
            "int {} to f16 rn/rz/rd/ru",
            v[i]
        );

        let li = l[i] as i128;
        let rn = l[i] as f64;
        let exact = |r: f64| (r as i128).cmp(&li);
        let rz = if exact(rn).is_ne() && (rn as i128).abs() > li.abs() {
            step64(rn, rn < 0.0)
        } else {
            rn
        };
        let rd = if exact(rn).is_gt() {
            step64(rn, false)
        } else {
            rn
        };
        let ru = if exact(rn).is_lt() {
            step64(rn, true)
        } else {
            rn
        };
        assert_eq!(
            &dbl[3 * i..3 * i + 3],
            &[rz, rd, ru],
            "long long {} to double rz/rd/ru",
            l[i]
        );

        let want = [nearest16(d[i], false), nearest16(d[i], true)];
        assert_eq!(
            &dh[2 * i..2 * i + 2],
            &want,
            "double {:e} to f16, bf16",
            d[i]
        );
    }
}

#[test]
fn fp8_pairs_both_ways() {
    let m = module();
    let mut rng = Rng(4);
    let mut x: Vec<f32> = vec![
        1.5,
        -3.0,
        448.0,
        1000.0,
        -1e9,
        1.0625,
        2f32.powi(-10),
        2f32.powi(-9),
        0.0,
        -0.0,
    ];
    while x.len() < 600 {
        let mag = 2f32.powi((rng.next() % 40) as i32 - 20);
        let v = (rng.next() % 2000) as f32 / 1000.0 * mag;
        x.push(if rng.next().is_multiple_of(2) { v } else { -v });
    }
    let n = x.len() / 2;
    let mut e = Emulator::new(EmuConfig::default());
    let dx = upload(&mut e, &le(&x, f32::to_le_bytes));
    let dq = upload(&mut e, &vec![0xA5; 4 * n]);
    let db = upload(&mut e, &vec![0xA5; 8 * n]);
    launch(
        &mut e,
        &m,
        "fp8_pairs",
        n,
        &[
            ParamValue::Ptr(dx),
            ParamValue::Ptr(dq),
            ParamValue::Ptr(db),
            ParamValue::I32(n as i32),
        ],
    );
    let q = read(&e, dq, 2 * n, u16::from_le_bytes);
    let back = read(&e, db, 2 * n, u32::from_le_bytes);
    for i in 0..n {
        // `__nv_cvt_float2_to_fp8x2` puts .x in the low byte.
        let (lo, hi) = (x[2 * i] as f64, x[2 * i + 1] as f64);
        for (k, e5m2) in [(0, false), (1, true)] {
            let want = fp8_ref(lo, e5m2) as u16 | (fp8_ref(hi, e5m2) as u16) << 8;
            assert_eq!(q[2 * i + k], want, "({lo}, {hi}) to FP8 (e5m2 {e5m2})");
            let h = |c: u8| f16::from_f64(fp8_value(c, e5m2)).to_bits() as u32;
            let want_back = h(want as u8) | h((want >> 8) as u8) << 16;
            assert_eq!(
                back[2 * i + k],
                want_back,
                "{want:#06x} back to half2 (e5m2 {e5m2})"
            );
        }
    }
}

#[test]
fn half_math_from_the_headers_runs_within_one_ulp() {
    let m = module();
    // Every 5th half code: its inline asm declares `.reg.b32 t;` (a parse failure before).
    let x: Vec<u16> = (0..=u16::MAX).step_by(5).collect();
    let n = x.len();
    let mut e = Emulator::new(EmuConfig::default());
    let dx = upload(&mut e, &le(&x, u16::to_le_bytes));
    let dout = upload(&mut e, &vec![0xA5; 8 * n]);
    launch(
        &mut e,
        &m,
        "half_math",
        n,
        &[
            ParamValue::Ptr(dx),
            ParamValue::Ptr(dout),
            ParamValue::I32(n as i32),
        ],
    );
    let got = read(&e, dout, 4 * n, u16::from_le_bytes);
    let ulps = |a: u16, b: u16| {
        let ord = |u: u16| {
            if u & 0x8000 != 0 {
                -((u & 0x7fff) as i32)
            } else {
                u as i32
            }
        };
        (ord(a) - ord(b)).abs()
    };
    let mut checked = 0;
    for i in 0..n {
        let v = f16::from_bits(x[i]).to_f64();
        let refs = [v.exp2(), v.log2(), v.sqrt(), 1.0 / v];
        for (k, r) in refs.iter().enumerate() {
            let g = got[4 * i + k];
            if r.is_nan() {
                assert!(
                    f16::from_bits(g).is_nan(),
                    "function {k} of {:#06x}: {g:#06x}, want NaN",
                    x[i]
                );
                continue;
            }
            let want = nearest16(*r, false);
            assert!(
                ulps(g, want) <= 1,
                "function {k} (exp2, log2, sqrt, rcp) of {:#06x}: {g:#06x}, correctly rounded {want:#06x}",
                x[i]
            );
            checked += 1;
        }
    }
    assert!(checked > 30_000, "{checked}");
}

#[test]
fn fma_relu_clamps_and_keeps_nan_canonical() {
    let m = module();
    let mut rng = Rng(5);
    let mut a: Vec<u16> = vec![0x3c00, 0x7e00, 0xbc00, 0x3c00];
    let mut b: Vec<u16> = vec![0x7e00, 0x3c00, 0x4000, 0x3c00];
    let mut c: Vec<u16> = vec![0x3c00, 0x0000, 0x0000, 0xfc00];
    while a.len() < 400 {
        a.push(rng.next() as u16 & 0xbfff);
        b.push(rng.next() as u16 & 0xbfff);
        c.push(rng.next() as u16 & 0xbfff);
    }
    let n = a.len();
    let mut e = Emulator::new(EmuConfig::default());
    let ds: Vec<u64> = [&a, &b, &c]
        .iter()
        .map(|v| upload(&mut e, &le(v, u16::to_le_bytes)))
        .collect();
    let dout = upload(&mut e, &vec![0xA5; 2 * n]);
    launch(
        &mut e,
        &m,
        "fma_relu",
        n,
        &[
            ParamValue::Ptr(ds[0]),
            ParamValue::Ptr(ds[1]),
            ParamValue::Ptr(ds[2]),
            ParamValue::Ptr(dout),
            ParamValue::I32(n as i32),
        ],
    );
    let got = read(&e, dout, n, u16::from_le_bytes);
    for i in 0..n {
        let v = |u: u16| f16::from_bits(u).to_f64();
        let r = v(a[i]) * v(b[i]) + v(c[i]);
        let want = if r.is_nan() {
            0x7fff
        } else if r < 0.0 {
            0
        } else {
            nearest16(r, false)
        };
        assert_eq!(
            got[i], want,
            "fma.relu({:#06x}, {:#06x}, {:#06x})",
            a[i], b[i], c[i]
        );
    }
}

/// `v` (finite, its ulp no finer than 2^-s) as the integer `v · 2^s`.
fn fixed(v: f64, s: i32) -> i128 {
    if v == 0.0 {
        return 0;
    }
    let b = v.to_bits();
    let (ef, mant) = (((b >> 52) & 0x7ff) as i32, (b & ((1 << 52) - 1)) as i128);
    let (m, e) = if ef == 0 {
        (mant, -1074)
    } else {
        (mant | 1 << 52, ef - 1075)
    };
    let tz = m.trailing_zeros() as i32;
    let (m, e) = (m >> tz, e + tz);
    assert!(e + s >= 0, "{v:e} is finer than 2^-{s}");
    let x = m << (e + s);
    if v < 0.0 {
        -x
    } else {
        x
    }
}

/// Whether `got` is `op`'s exact result rounded in `mode` (z, d, u): `cmp(g)` is the sign of `g` minus
/// the exact result; `next(g, up)` the neighbouring value of the result type.
fn directed_ok(
    got: f64,
    mode: char,
    cmp: &dyn Fn(f64) -> std::cmp::Ordering,
    next: &dyn Fn(f64, bool) -> f64,
) -> bool {
    use std::cmp::Ordering::*;
    let down = cmp(got) != Greater && cmp(next(got, true)) == Greater;
    let up = cmp(got) != Less && cmp(next(got, false)) == Less;
    match mode {
        'd' => down,
        'u' => up,
        // Toward zero: down for a non-negative exact result, up for a negative one.
        _ => {
            if cmp(0.0) != Greater {
                down
            } else {
                up
            }
        }
    }
}

#[test]
fn arithmetic_rounds_in_its_directed_mode() {
    let m = module();
    let n = 400;
    let mut rng = Rng(6);
    // Operands whose exact results the checks hold as integers (see `fixed`): f32 in ±[2^-10, 2^11),
    // f64 in ±[2^-2, 2^3); square roots of their magnitudes.
    let mut num = |lo: i32, span: u64, mbits: u32, signed: bool| -> f64 {
        let m = (1u64 << mbits) | (rng.next() & ((1 << mbits) - 1));
        let v = m as f64 * 2f64.powi(lo - mbits as i32 + (rng.next() % span) as i32);
        if signed && rng.next() % 2 == 1 {
            -v
        } else {
            v
        }
    };
    let f32s: Vec<[f32; 3]> = (0..n)
        .map(|_| [0, 1, 2].map(|_| num(-10, 21, 23, true) as f32))
        .collect();
    let f64s: Vec<[f64; 3]> = (0..n)
        .map(|_| [0, 1, 2].map(|_| num(-2, 5, 52, true)))
        .collect();
    let mut e = Emulator::new(EmuConfig::default());
    let col = |v: &[[f32; 3]], k: usize| {
        le(
            &v.iter().map(|x| x[k]).collect::<Vec<_>>(),
            f32::to_le_bytes,
        )
    };
    let cold = |v: &[[f64; 3]], k: usize| {
        le(
            &v.iter().map(|x| x[k]).collect::<Vec<_>>(),
            f64::to_le_bytes,
        )
    };
    let mut ins = Vec::new();
    for k in 0..3 {
        ins.push(upload(&mut e, &col(&f32s, k)));
    }
    for k in 0..3 {
        ins.push(upload(&mut e, &cold(&f64s, k)));
    }
    let (of, od) = (
        upload(&mut e, &vec![0xA5; 72 * n]),
        upload(&mut e, &vec![0xA5; 144 * n]),
    );
    let p = ParamValue::Ptr;
    launch(
        &mut e,
        &m,
        "arith_round",
        n,
        &[
            p(ins[0]),
            p(ins[1]),
            p(ins[2]),
            p(of),
            p(ins[3]),
            p(ins[4]),
            p(ins[5]),
            p(od),
            ParamValue::I32(n as i32),
        ],
    );
    let gf = read(&e, of, 18 * n, f32::from_le_bytes);
    let gd = read(&e, od, 18 * n, f64::from_le_bytes);
    let ops = ["add", "mul", "fma", "div", "sqrt", "rcp"];
    let mut checked = 0;
    for single in [true, false] {
        // Scale: results' ulps are no finer than 2^-s (f32 results ≥ 2^-21 with 24 bits; f64 ≥ 2^-5 with 53).
        let s = if single { 44 } else { 57 };
        let next = |g: f64, up: bool| -> f64 {
            if single {
                let f = g as f32;
                (if up { f.next_up() } else { f.next_down() }) as f64
            } else if up {
                g.next_up()
            } else {
                g.next_down()
            }
        };
        for i in 0..n {
            let [a, b, c] = if single {
                f32s[i].map(|v| v as f64)
            } else {
                f64s[i]
            };
            let (fa, fb, fc) = (fixed(a, s), fixed(b, s), fixed(c, s));
            for (k, op) in ops.iter().enumerate() {
                // The sign of g minus the exact result, in integers.
                let cmp = |g: f64| -> std::cmp::Ordering {
                    let fg = fixed(g, s);
                    match *op {
                        "add" => fg.cmp(&(fa + fb)),
                        "mul" => (fg << s).cmp(&(fa * fb)),
                        "fma" => (fg << s).cmp(&(fa * fb + (fc << s))),
                        "div" => (fg * fb)
                            .cmp(&(fa << s))
                            .then(std::cmp::Ordering::Equal)
                            .pipe_sign(fb),
                        "sqrt" => (fg * fg * fg.signum()).cmp(&(fa.abs() << s)),
                        _ => (fg * fb).cmp(&(1i128 << (2 * s))).pipe_sign(fb),
                    }
                };
                for (j, mode) in ['z', 'd', 'u'].iter().enumerate() {
                    let got = if single {
                        gf[18 * i + 3 * k + j] as f64
                    } else {
                        gd[18 * i + 3 * k + j]
                    };
                    // Results too small for the integer check (cancellation in fma): skipped.
                    if got != 0.0 && got.abs() < 2f64.powi(if single { -21 } else { -5 }) {
                        continue;
                    }
                    assert!(
                        directed_ok(got, *mode, &cmp, &next),
                        "{} {op}.r{mode} of ({a:e}, {b:e}, {c:e}) = {got:e}",
                        if single { "f32" } else { "f64" }
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 13_000, "{checked}");
}

/// The sign of a quotient's comparison flips with a negative divisor.
trait PipeSign {
    fn pipe_sign(self, divisor: i128) -> Self;
}
impl PipeSign for std::cmp::Ordering {
    fn pipe_sign(self, divisor: i128) -> Self {
        if divisor < 0 {
            self.reverse()
        } else {
            self
        }
    }
}

#[test]
fn the_device_heap_within_and_across_launches() {
    let m = module();
    let n = 10i32;
    let threads = 256usize;
    for cfg in [
        EmuConfig::default(),
        EmuConfig {
            schedule: Schedule::Random { seed: 9 },
            ..EmuConfig::default()
        },
    ] {
        let mut e = Emulator::new(cfg);
        let out = upload(&mut e, &vec![0xA5; 4 * threads]);
        // Blocks free and reuse each other's memory: no race is reported (the heap orders them).
        e.launch(
            &m,
            "heap_in_launch",
            [4, 1, 1],
            [64, 1, 1],
            0,
            &[ParamValue::Ptr(out), ParamValue::I32(n)],
        )
        .expect("heap_in_launch");
        let got = read(&e, out, threads, i32::from_le_bytes);
        for (t, &g) in got.iter().enumerate() {
            let t = t as i32;
            let want = (0..n).map(|k| t * k).sum::<i32>() + (0..4).map(|k| k + t).sum::<i32>() + 7;
            assert_eq!(g, want, "thread {t}");
        }
        let slots = upload(&mut e, &vec![0; 8 * threads]);
        e.launch(
            &m,
            "heap_keep",
            [4, 1, 1],
            [64, 1, 1],
            0,
            &[ParamValue::Ptr(slots), ParamValue::I32(n)],
        )
        .expect("heap_keep");
        let ptrs = read(&e, slots, threads, u64::from_le_bytes);
        assert!(
            ptrs.iter().all(|&p| p != 0 && p % 16 == 0),
            "16-byte aligned, non-null"
        );
        e.launch(
            &m,
            "heap_release",
            [4, 1, 1],
            [64, 1, 1],
            0,
            &[
                ParamValue::Ptr(slots),
                ParamValue::Ptr(out),
                ParamValue::I32(n),
            ],
        )
        .expect("heap_release");
        let got = read(&e, out, threads, i32::from_le_bytes);
        for (t, &g) in got.iter().enumerate() {
            assert_eq!(g, (0..n).map(|k| t as i32 + k).sum::<i32>(), "thread {t}");
        }
        // The same memory again: everything was freed.
        e.launch(
            &m,
            "heap_keep",
            [4, 1, 1],
            [64, 1, 1],
            0,
            &[ParamValue::Ptr(slots), ParamValue::I32(n)],
        )
        .expect("heap_keep again");
        let again = read(&e, slots, threads, u64::from_le_bytes);
        let (mut p0, mut p1) = (ptrs.clone(), again);
        p0.sort_unstable();
        p1.sort_unstable();
        assert_eq!(p0, p1, "the freed blocks are handed out again");
        let err = e
            .launch(
                &m,
                "heap_bad_free",
                [1, 1, 1],
                [1, 1, 1],
                0,
                &[ParamValue::Ptr(ptrs[0])],
            )
            .expect_err("free of a pointer malloc did not return");
        assert!(
            err.to_string().contains("not a block malloc returned"),
            "{err}"
        );
    }
}

// ---- inline PTX ----

const TMA_HINT: &str = r#"
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 map[128], .param .u64 out)
{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<2>;
    .shared .align 128 .b8 buf[1024];
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, buf;
    mov.u32 %r3, bar;
    mov.u64 %rd1, map;
    cvta.param.u64 %rd2, %rd1;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra WAIT;
    mbarrier.init.shared.b64 [%r3], 1;
    fence.mbarrier_init.release.cluster;
    createpolicy.fractional.L2::evict_last.b64 %rd4, 1.0;
    mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %rd5, [%r3], 1024;
    mov.u32 %r4, 0;
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%r2], [%rd2, {%r4, %r4}], [%r3], %rd4;
WAIT:
    bar.sync 0;
LOOP:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;
    @!%p2 bra LOOP;
    shl.b32 %r5, %r1, 2;
    add.u32 %r6, %r2, %r5;
    ld.shared.f32 %f1, [%r6];
    ld.param.u64 %rd6, [out];
    cvta.to.global.u64 %rd6, %rd6;
    mul.wide.u32 %rd7, %r5, 1;
    add.s64 %rd6, %rd6, %rd7;
    st.global.f32 [%rd6], %f1;
    ret;
}
"#;

#[test]
fn a_tma_load_with_a_cache_policy_loads() {
    let m = Module::parse(TMA_HINT).expect("parses");
    let mut e = Emulator::new(EmuConfig::default());
    let vals: Vec<f32> = (0..256).map(|i| i as f32 * 0.5 - 7.0).collect();
    let src = upload(&mut e, &le(&vals, f32::to_le_bytes));
    let map = TensorMap::tiled(
        TensorDataType::F32,
        src,
        &[32, 8],
        &[128],
        &[32, 8],
        TensorSwizzle::None,
    )
    .expect("map");
    let out = upload(&mut e, &vec![0; 1024]);
    e.launch(
        &m,
        "k",
        [1, 1, 1],
        [256, 1, 1],
        0,
        &[
            ParamValue::Bytes(map.encode().to_vec()),
            ParamValue::Ptr(out),
        ],
    )
    .expect("the policy operand is not a multicast mask");
    assert_eq!(read(&e, out, 256, f32::from_le_bytes), vals);
}

/// Thread 0 writes a shared word, the block passes a barrier `sync`, thread 32 reads it.
fn handoff(sync: &str) -> String {
    format!(
        r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<3>;
    .shared .align 4 .b32 s;
    mov.u32 %r1, %tid.x;
    setp.ne.s32 %p1, %r1, 0;
    @%p1 bra L1;
    mov.u32 %r2, 1;
    st.shared.u32 [s], %r2;
L1:
    {sync}
    setp.ne.s32 %p1, %r1, 32;
    @%p1 bra L2;
    ld.shared.u32 %r3, [s];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r3;
L2:
    ret;
}}
"#
    )
}

/// Every lane of warp 0 writes its word; then (`sync`) lane 0 arrives on an mbarrier; warp 1 waits for
/// the phase and reads the words.
fn warp_then_arrive(sync: &str) -> String {
    format!(
        r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<6>;
    .shared .align 8 .b64 bar;
    .shared .align 4 .b8 s[128];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 31;
    shr.u32 %r3, %r1, 5;
    mov.u32 %r4, bar;
    mov.u32 %r5, s;
    shl.b32 %r6, %r2, 2;
    add.s32 %r7, %r5, %r6;
    setp.ne.s32 %p1, %r1, 0;
    @%p1 bra SKIPINIT;
    mbarrier.init.shared.b64 [%r4], 1;
SKIPINIT:
    bar.sync 0;
    setp.ne.s32 %p1, %r3, 0;
    @%p1 bra CONSUMER;
    add.s32 %r8, %r2, 100;
    st.shared.u32 [%r7], %r8;
    {sync}
    setp.ne.s32 %p2, %r2, 0;
    @%p2 bra END;
    mbarrier.arrive.shared.b64 %rd1, [%r4];
    bra END;
CONSUMER:
    mbarrier.try_wait.parity.shared.b64 %p3, [%r4], 0;
    @!%p3 bra CONSUMER;
    ld.shared.u32 %r9, [%r7];
    ld.param.u64 %rd2, [out];
    cvta.to.global.u64 %rd2, %rd2;
    mul.wide.u32 %rd3, %r6, 1;
    add.s64 %rd2, %rd2, %rd3;
    st.global.u32 [%rd2], %r9;
END:
    ret;
}}
"#
    )
}

fn races(src: &str, words: usize) -> Result<Vec<u32>, String> {
    let m = Module::parse(src).expect("parses");
    let mut e = Emulator::new(EmuConfig::default());
    let out = upload(&mut e, &vec![0; 4 * words]);
    match e.launch(&m, "k", [1, 1, 1], [64, 1, 1], 0, &[ParamValue::Ptr(out)]) {
        Ok(_) => Ok(read(&e, out, words, u32::from_le_bytes)),
        Err(err) => Err(err.to_string()),
    }
}

#[test]
fn a_cluster_barrier_orders_the_blocks_accesses() {
    let ok = races(
        &handoff("barrier.cluster.arrive;\n    barrier.cluster.wait;"),
        1,
    );
    assert_eq!(
        ok,
        Ok(vec![1]),
        "a cluster barrier is a barrier of the block too"
    );
    let racy = races(&handoff(""), 1).expect_err("without the barrier it is a race");
    assert!(racy.contains("DataRace"), "{racy}");
}

#[test]
fn an_mbarrier_arrive_releases_what_its_warp_synchronised() {
    let want: Vec<u32> = (100..132).collect();
    assert_eq!(races(&warp_then_arrive("bar.warp.sync -1;"), 32), Ok(want));
    let racy =
        races(&warp_then_arrive(""), 32).expect_err("lanes 1-31 never synchronised with lane 0");
    assert!(racy.contains("DataRace"), "{racy}");
}

// ---- wgmma with 8-bit and tf32 inputs (tests/fixtures/hopper/wgmma_types.ptx, sm_90a) ----

fn wgmma_types() -> Module {
    common::fixture_module("hopper/wgmma_types.ptx")
}

/// Runs `entry` on A and B (64 rows of `kbytes` each) and returns D (64 × 64, 4-byte elements).
fn run_wgmma(m: &Module, entry: &str, a: &[u8], b: &[u8]) -> Vec<[u8; 4]> {
    let mut e = Emulator::new(EmuConfig::default());
    let (da, db) = (upload(&mut e, a), upload(&mut e, b));
    let dd = upload(&mut e, &vec![0xA5; 4 * 64 * 64]);
    e.launch(
        m,
        entry,
        [1, 1, 1],
        [128, 1, 1],
        0,
        &[
            ParamValue::Ptr(da),
            ParamValue::Ptr(db),
            ParamValue::Ptr(dd),
        ],
    )
    .unwrap_or_else(|err| panic!("{entry}: {err}"));
    read(&e, dd, 64 * 64, |x| x)
}

/// Checks float D against Σ_k a(m, k)·b(n, k), within the f32 accumulation's rounding.
fn check_float_d(
    what: &str,
    d: &[[u8; 4]],
    k: usize,
    a: &dyn Fn(usize, usize) -> f64,
    b: &dyn Fn(usize, usize) -> f64,
) {
    for m in 0..64 {
        for n in 0..64 {
            let (mut exact, mut mag) = (0f64, 0f64);
            for kk in 0..k {
                let p = a(m, kk) * b(n, kk);
                exact += p;
                mag += p.abs();
            }
            let got = f32::from_le_bytes(d[m * 64 + n]) as f64;
            assert!(
                (got - exact).abs() <= mag * 2e-6 + 1e-30,
                "{what}: D[{m}][{n}] = {got}, exact {exact}"
            );
        }
    }
}

fn fp8_codes(rng: &mut Rng, n: usize, e5m2: bool) -> Vec<u8> {
    (0..n)
        .map(|_| loop {
            let c = rng.next() as u8;
            let nan = if e5m2 {
                c & 0x7c == 0x7c
            } else {
                c & 0x7f == 0x7f
            };
            if !nan {
                break c;
            }
        })
        .collect()
}

#[test]
fn wgmma_fp8_inputs_swizzled_plain_and_from_registers() {
    let m = wgmma_types();
    let mut rng = Rng(7);
    let (a4, b4) = (
        fp8_codes(&mut rng, 64 * 128, false),
        fp8_codes(&mut rng, 64 * 128, false),
    );
    let a5 = fp8_codes(&mut rng, 64 * 128, true);
    let v4 = |c: u8| fp8_value(c, false);
    let v5 = |c: u8| fp8_value(c, true);
    for entry in ["wg_e4m3", "wg_e4m3_rs"] {
        let d = run_wgmma(&m, entry, &a4, &b4);
        check_float_d(entry, &d, 128, &|m, k| v4(a4[m * 128 + k]), &|n, k| {
            v4(b4[n * 128 + k])
        });
    }
    let d = run_wgmma(&m, "wg_e5m2_e4m3", &a5, &b4);
    check_float_d(
        "e5m2 x e4m3",
        &d,
        128,
        &|m, k| v5(a5[m * 128 + k]),
        &|n, k| v4(b4[n * 128 + k]),
    );
    // Without a swizzle: 32 bytes of K, core matrices 128 bytes apart along K.
    let (a, b): (Vec<u8>, Vec<u8>) = (a4[..64 * 32].to_vec(), b4[..64 * 32].to_vec());
    let d = run_wgmma(&m, "wg_e4m3_plain", &a, &b);
    check_float_d("e4m3 plain", &d, 32, &|m, k| v4(a[m * 32 + k]), &|n, k| {
        v4(b[n * 32 + k])
    });
}

#[test]
fn wgmma_s8_u8_and_tf32_inputs() {
    let m = wgmma_types();
    let mut rng = Rng(8);
    let a: Vec<u8> = (0..64 * 128).map(|_| rng.next() as u8).collect();
    let b: Vec<u8> = (0..64 * 128).map(|_| rng.next() as u8).collect();
    let d = run_wgmma(&m, "wg_s8_u8", &a, &b);
    for i in 0..64 {
        for j in 0..64 {
            let want: i32 = (0..128)
                .map(|k| a[i * 128 + k] as i8 as i32 * b[j * 128 + k] as i32)
                .sum();
            assert_eq!(
                i32::from_le_bytes(d[i * 64 + j]),
                want,
                "s8 x u8: D[{i}][{j}]"
            );
        }
    }
    // tf32: values with the low 13 mantissa bits clear (what cvt.rna.tf32.f32 produces).
    let tf = |rng: &mut Rng| {
        let v = ((rng.next() % 2001) as f32 - 1000.0) / 256.0;
        f32::from_bits(v.to_bits() & 0xffff_e000)
    };
    let fa: Vec<f32> = (0..64 * 32).map(|_| tf(&mut rng)).collect();
    let fb: Vec<f32> = (0..64 * 32).map(|_| tf(&mut rng)).collect();
    let d = run_wgmma(
        &m,
        "wg_tf32",
        &le(&fa, f32::to_le_bytes),
        &le(&fb, f32::to_le_bytes),
    );
    check_float_d("tf32", &d, 32, &|m, k| fa[m * 32 + k] as f64, &|n, k| {
        fb[n * 32 + k] as f64
    });
}

// ---- synchronization the race detector follows, and scalar video ----

fn flag_handoff(mode: i32, cfg: EmuConfig) -> Result<Vec<f32>, String> {
    let m = module();
    let mut e = Emulator::new(cfg);
    let input: Vec<f32> = (0..32).map(|i| i as f32 * 0.25 - 3.0).collect();
    let din = upload(&mut e, &le(&input, f32::to_le_bytes));
    let dout = upload(&mut e, &[0; 256]);
    e.launch(
        &m,
        "flag_handoff",
        [1, 1, 1],
        [64, 1, 1],
        0,
        &[
            ParamValue::Ptr(din),
            ParamValue::Ptr(dout),
            ParamValue::I32(mode),
        ],
    )
    .map_err(|err| err.to_string())?;
    Ok(read(&e, dout, 64, f32::from_le_bytes))
}

#[test]
fn volatile_flags_and_fences_synchronise_and_their_absence_is_a_race() {
    for cfg in [
        EmuConfig::default(),
        EmuConfig {
            schedule: Schedule::Random { seed: 3 },
            ..EmuConfig::default()
        },
    ] {
        for mode in [0, 1] {
            let out = flag_handoff(mode, cfg.clone())
                .unwrap_or_else(|err| panic!("mode {mode} is race-free: {err}"));
            for (lane, &o) in out.iter().take(32).enumerate() {
                assert_eq!(o, (lane as f32 * 0.25 - 3.0) * 2.0 + 1.0, "mode {mode}");
            }
        }
        let racy =
            flag_handoff(2, cfg.clone()).expect_err("a relaxed flag without fences orders nothing");
        assert!(racy.contains("DataRace"), "{racy}");
    }
}

#[test]
fn scalar_video_with_a_secondary_operation() {
    let m = module();
    let n = 300;
    let mut rng = Rng(11);
    let mut v = |_| rng.next() as i32 >> (rng.next() % 31);
    let (a, b, c): (Vec<i32>, Vec<i32>, Vec<i32>) = (
        (0..n).map(&mut v).collect(),
        (0..n).map(&mut v).collect(),
        (0..n).map(&mut v).collect(),
    );
    let mut e = Emulator::new(EmuConfig::default());
    let ins: Vec<u64> = [&a, &b, &c]
        .iter()
        .map(|x| upload(&mut e, &le(x, i32::to_le_bytes)))
        .collect();
    let dout = upload(&mut e, &vec![0xA5; 24 * n]);
    launch(
        &mut e,
        &m,
        "video_minmax",
        n,
        &[
            ParamValue::Ptr(ins[0]),
            ParamValue::Ptr(ins[1]),
            ParamValue::Ptr(ins[2]),
            ParamValue::Ptr(dout),
            ParamValue::I32(n as i32),
        ],
    );
    let got = read(&e, dout, 6 * n, i32::from_le_bytes);
    for i in 0..n {
        let (x, y, z) = (a[i], b[i], c[i]);
        let sat = (x as i64 + y as i64).clamp(i32::MIN as i64, i32::MAX as i64) as i32;
        let absdiff = ((x as u32 as i64 - y as u32 as i64).unsigned_abs() as u32)
            .wrapping_add(z as u32) as i32;
        let want = [
            x.min(y).min(z),
            x.min(y).max(z),
            x.max(y).min(z),
            x.max(y).max(z),
            sat,
            absdiff,
        ];
        assert_eq!(&got[6 * i..6 * i + 6], &want, "({x}, {y}, {z})");
    }
}

fn xblock_handoff(mode: i32, cfg: EmuConfig) -> Result<Vec<i32>, String> {
    let m = module();
    let mut e = Emulator::new(cfg);
    let (data, flag, out) = (
        upload(&mut e, &[0; 256]),
        upload(&mut e, &[0; 4]),
        upload(&mut e, &[0; 256]),
    );
    let p = ParamValue::Ptr;
    e.launch(
        &m,
        "xblock_handoff",
        [2, 1, 1],
        [64, 1, 1],
        0,
        &[p(data), p(flag), p(out), ParamValue::I32(mode)],
    )
    .map_err(|err| err.to_string())?;
    Ok(read(&e, out, 64, i32::from_le_bytes))
}

#[test]
fn release_and_acquire_order_accesses_across_blocks() {
    for cfg in [
        EmuConfig::default(),
        EmuConfig {
            schedule: Schedule::Random { seed: 5 },
            ..EmuConfig::default()
        },
    ] {
        for mode in [0, 1] {
            let out = xblock_handoff(mode, cfg.clone())
                .unwrap_or_else(|err| panic!("mode {mode} is race-free: {err}"));
            assert_eq!(
                out,
                (0..64).map(|t| 3 * t + 1).collect::<Vec<i32>>(),
                "mode {mode}"
            );
        }
        let racy = xblock_handoff(2, cfg.clone())
            .expect_err("a volatile flag without fences orders nothing");
        assert!(racy.contains("DataRace"), "{racy}");
    }
}

#[test]
fn a_spin_lock_taken_across_blocks_is_race_free() {
    let m = module();
    let n = 1000usize;
    let mut rng = Rng(12);
    let keys: Vec<i32> = (0..n).map(|_| (rng.next() % 5) as i32).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let dk = upload(&mut e, &le(&keys, i32::to_le_bytes));
    let (locks, sums, counts) = (
        upload(&mut e, &[0; 20]),
        upload(&mut e, &[0; 20]),
        upload(&mut e, &[0; 20]),
    );
    let p = ParamValue::Ptr;
    e.launch(
        &m,
        "locked_buckets",
        [8, 1, 1],
        [128, 1, 1],
        0,
        &[
            p(dk),
            ParamValue::I32(n as i32),
            p(locks),
            p(sums),
            p(counts),
        ],
    )
    .expect("the lock orders the buckets' updates across blocks");
    let (mut ws, mut wc) = ([0i32; 5], [0i32; 5]);
    for (i, &k) in keys.iter().enumerate() {
        ws[k as usize] += (i % 13) as i32;
        wc[k as usize] += 1;
    }
    assert_eq!(read(&e, sums, 5, i32::from_le_bytes), ws);
    assert_eq!(read(&e, counts, 5, i32::from_le_bytes), wc);
}
