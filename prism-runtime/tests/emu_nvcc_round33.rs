//! nvcc round 33 (fixtures `round33.cu` → `round33.ptx`, `round33_ftz.cu` → `round33_ftz.ptx` with
//! `-ftz=true`): warp primitives under partial masks, integer intrinsics, exact float library functions,
//! f64 libm, conversions at the edges, signed zeros in min/max, cache-hinted loads and stores, 16- and
//! 64-bit atomics, by-value struct calls, a volatile flag hand-off, device `assert`, `printf` conversions,
//! carved dynamic shared memory, a warp bitonic sort, and flush-to-zero arithmetic. Every output element
//! is checked against a CPU reference written from the PTX ISA / CUDA documentation.

mod common;

use common::{Pod, Rng};
use prism_runtime::emu::*;

fn module(name: &str) -> Module {
    common::fixture_module(name)
}

fn up<T: Pod>(e: &mut Emulator, v: &[T]) -> u64 {
    let mut b = Vec::with_capacity(v.len() * T::N);
    for x in v {
        x.put(&mut b);
    }
    let a = e.alloc(b.len().max(4));
    e.write(a, &b).expect("write");
    a
}

fn zeros(e: &mut Emulator, bytes: usize) -> u64 {
    e.alloc(bytes.max(4))
}

fn down<T: Pod>(e: &Emulator, a: u64, n: usize) -> Vec<T> {
    e.read(a, n * T::N)
        .expect("read")
        .chunks(T::N)
        .map(T::get)
        .collect()
}

fn configs() -> Vec<(String, EmuConfig)> {
    let mut v = vec![("round-robin".to_string(), EmuConfig::default())];
    v.push((
        "random seed 7".to_string(),
        EmuConfig {
            schedule: Schedule::Random { seed: 7 },
            ..EmuConfig::default()
        },
    ));
    v
}

fn launch(
    e: &mut Emulator,
    m: &Module,
    k: &str,
    grid: u32,
    block: u32,
    smem: u32,
    p: &[ParamValue],
) -> LaunchReport {
    common::launch_1d(e, m, k, (grid, block, smem), p)
}

/// The PTX ISA's `shfl.sync` source lane for mode `mode` (0 up, 1 down, 2 bfly, 3 idx), `b` and `c`
/// (CUDA's `c`: `(32 - width) << 8`, | 0x1f except for up); `None`: the lane keeps its own value.
fn shfl_src(mode: u32, lane: u32, b: u32, c: u32) -> Option<u32> {
    let bval = b & 31;
    let cval = c & 31;
    let seg = (c >> 8) & 31;
    let max_lane = (lane & seg) | (cval & !seg);
    let min_lane = lane & seg;
    let (j, ok) = match mode {
        0 => {
            let j = lane as i32 - bval as i32;
            (j, j >= max_lane as i32)
        }
        1 => {
            let j = (lane + bval) as i32;
            (j, j <= max_lane as i32)
        }
        2 => {
            let j = (lane ^ bval) as i32;
            (j, j <= max_lane as i32)
        }
        _ => {
            let j = (min_lane | (bval & !seg)) as i32;
            (j, j <= max_lane as i32)
        }
    };
    ok.then_some(j as u32)
}

fn warp_partial_ref(x: &[i32]) -> Vec<i32> {
    let mut out = vec![0i32; 16 * x.len()];
    for w in 0..x.len() / 32 {
        let xs = &x[w * 32..w * 32 + 32];
        let lanes = |odd: u32| (0..32u32).filter(move |l| l & 1 == odd);
        for l in 0..32u32 {
            let o = &mut out[(w * 32 + l as usize) * 16..][..16];
            let xv = xs[l as usize];
            let odd = l & 1;
            let m: Vec<u32> = lanes(odd).collect();
            let mask = if odd == 0 {
                0x5555_5555u32
            } else {
                0xAAAA_AAAA
            };
            let ballot = |f: &dyn Fn(i32) -> bool| {
                m.iter()
                    .filter(|&&k| f(xs[k as usize]))
                    .fold(0u32, |a, &k| a | 1 << k)
            };
            if odd == 0 {
                o[0] = xs[((l + 2) & 31) as usize];
                o[1] = m.iter().fold(0i32, |a, &k| a.wrapping_add(xs[k as usize]));
                o[2] = m.iter().map(|&k| xs[k as usize]).min().unwrap_or(0);
                o[3] = m.iter().map(|&k| xs[k as usize] as u32).max().unwrap_or(0) as i32;
                o[4] = ballot(&|v| v > 0) as i32;
                o[5] = ballot(&|v| v & 3 == xv & 3) as i32;
                o[6] = mask as i32;
                o[7] = 1;
            } else {
                o[0] = if l + 2 <= 31 { xs[l as usize + 2] } else { xv };
                o[1] = m.iter().fold(-1i32, |a, &k| a & xs[k as usize]);
                o[2] = m.iter().fold(0i32, |a, &k| a | xs[k as usize]);
                o[3] = m.iter().fold(0i32, |a, &k| a ^ xs[k as usize]);
                o[4] = ballot(&|v| v < 0) as i32;
                o[5] = ballot(&|v| v & 1 == xv & 1) as i32;
                let all = m
                    .iter()
                    .all(|&k| xs[k as usize] & 3 == xs[m[0] as usize] & 3);
                o[6] = if all { mask as i32 } else { 0 };
                o[7] = all as i32;
            }
            let div3 = (0..32u32)
                .filter(|&k| xs[k as usize] % 3 == 0)
                .fold(0u32, |a, k| a | 1 << k);
            o[8] = if xv % 3 == 0 {
                div3 as i32
            } else {
                -((!div3).count_ones() as i32)
            };
            let wv = |k: u32| ((xs[k as usize] as i64) << 20) ^ 0x1_2345_6789;
            o[9] = (wv(shfl_src(2, l, 5, (16 << 8) | 0x1f).unwrap_or(l)) >> 3) as i32;
            let s = shfl_src(0, l, 3, 24 << 8).unwrap_or(l);
            o[10] = ((xs[s as usize] as f64 * 0.25) * 8.0) as i32;
            o[11] = if l < 16 {
                xs[shfl_src(3, l, l + 9, (24 << 8) | 0x1f).unwrap_or(l) as usize]
            } else {
                0
            };
            o[12] = (0..32u32).fold(0u32, |a, k| {
                a.wrapping_add(k.wrapping_mul(xs[k as usize] as u32))
            }) as i32;
            o[13] = xs[shfl_src(0, l, 1, 0).unwrap_or(l) as usize];
            o[14] = xs[shfl_src(3, l, (-(l as i32) - 1) as u32, 0x1f).unwrap_or(l) as usize];
            o[15] = xs[shfl_src(1, l, 33, 0x1f).unwrap_or(l) as usize];
        }
    }
    out
}

#[test]
fn warp_primitives_with_partial_masks() {
    let m = module("round33.ptx");
    let mut r = Rng(33);
    for (name, cfg) in configs() {
        let x: Vec<i32> = (0..128)
            .map(|i| match i % 4 {
                0 => (r.below(7) as i32) - 3,
                1 => r.next() as i32,
                2 => (r.below(12) as i32) * 3,
                _ => [0, -1, i32::MIN, i32::MAX, 6][r.below(5) as usize],
            })
            .collect();
        let mut e = Emulator::new(cfg);
        let xin = up(&mut e, &x);
        let out = zeros(&mut e, 16 * 4 * x.len());
        launch(
            &mut e,
            &m,
            "warp_partial",
            2,
            64,
            0,
            &[ParamValue::Ptr(xin), ParamValue::Ptr(out)],
        );
        let got: Vec<i32> = down(&e, out, 16 * x.len());
        let want = warp_partial_ref(&x);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                g,
                w,
                "{name}: thread {} output {} (x = {})",
                i / 16,
                i % 16,
                x[i / 16]
            );
        }
    }
}

fn int_intrin_ref(x: u32, y: u32, z: u64, i: u32) -> ([u32; 20], [u64; 8]) {
    let sel = y & 0x7777;
    let src = (x as u64) | (y as u64) << 32;
    let bp = (0..4).fold(0u32, |a, n| {
        let s = (sel >> (4 * n)) & 7;
        a | (((src >> (8 * s)) & 0xff) as u32) << (8 * n)
    });
    let cat = (y as u64) << 32 | x as u64;
    let fl = |s: u32| ((cat << s) >> 32) as u32;
    let fr = |s: u32| (cat >> s) as u32;
    let s24 = |v: u32| ((v << 8) as i32 >> 8) as i64;
    let ffs = |v: u64| if v == 0 { 0 } else { v.trailing_zeros() + 1 };
    let (xi, yi) = (x as i32 as i64, y as i32 as i64);
    let o = [
        bp,
        fl(i & 31),
        fr(i & 31),
        if i >= 32 { x } else { fl(i) },
        if i >= 32 { y } else { fr(i) },
        z.count_ones(),
        z.leading_zeros(),
        ffs(z),
        (s24(x) * s24(y)) as u32,
        ((x & 0xff_ffff) as u64 * (y & 0xff_ffff) as u64) as u32,
        ((x as u64 * y as u64) >> 32) as u32,
        ((xi * yi) >> 32) as u32,
        ((xi - yi).unsigned_abs() as u32).wrapping_add(7),
        (x.abs_diff(y)).wrapping_add(9),
        ((xi + yi) >> 1) as u32,
        ((xi + yi + 1) >> 1) as u32,
        ((x as u64 + y as u64) >> 1) as u32,
        ((x as u64 + y as u64 + 1) >> 1) as u32,
        (0..4).fold(0u32, |a, n| {
            let (p, q) = ((x >> (8 * n)) & 0xff, (y >> (8 * n)) & 0xff);
            a | p.abs_diff(q) << (8 * n)
        }),
        x.leading_zeros() + 100 * ffs(y as u64),
    ];
    let k = (x as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let sh = x & 63;
    let q = [
        z.reverse_bits(),
        ((z as u128 * k as u128) >> 64) as u64,
        ((z as i64 as i128 * (y as i64 - 0x8000_0000) as i128) >> 64) as u64,
        z / (y | 1) as u64,
        (z as i64).wrapping_rem((y as i32 | 1) as i64) as u64,
        z.rotate_left(sh),
        ((z as i64) >> (y & 63)) as u64,
        ((z as u128 * x as u128) >> 17) as u64,
    ];
    (o, q)
}

#[test]
fn integer_intrinsics() {
    let m = module("round33.ptx");
    let mut r = Rng(5);
    let n = 64usize;
    let edge = [
        0u32,
        1,
        0x7fff_ffff,
        0x8000_0000,
        u32::MAX,
        0xff_ffff,
        0x80_0000,
        0x1_0000,
    ];
    let a: Vec<u32> = (0..n)
        .map(|i| {
            if i % 3 == 0 {
                edge[i / 3 % 8]
            } else {
                r.next() as u32
            }
        })
        .collect();
    let b: Vec<u32> = (0..n)
        .map(|i| {
            if i % 5 == 0 {
                edge[i / 5 % 8]
            } else {
                r.next() as u32
            }
        })
        .collect();
    let c: Vec<u64> = (0..n)
        .map(|i| match i % 4 {
            0 => [0, 1, u64::MAX, 1 << 63, i64::MIN as u64 + 1][i / 4 % 5],
            1 => r.next() >> r.below(64),
            _ => r.next(),
        })
        .collect();
    let mut e = Emulator::new(EmuConfig::default());
    let (pa, pb, pc) = (up(&mut e, &a), up(&mut e, &b), up(&mut e, &c));
    let (o, q) = (zeros(&mut e, 80 * n), zeros(&mut e, 64 * n));
    launch(
        &mut e,
        &m,
        "int_intrin",
        2,
        32,
        0,
        &[
            ParamValue::Ptr(pa),
            ParamValue::Ptr(pb),
            ParamValue::Ptr(pc),
            ParamValue::Ptr(o),
            ParamValue::Ptr(q),
            ParamValue::I32(n as i32),
        ],
    );
    let go: Vec<u32> = down(&e, o, 20 * n);
    let gq: Vec<u64> = down(&e, q, 8 * n);
    for i in 0..n {
        let (wo, wq) = int_intrin_ref(a[i], b[i], c[i], i as u32);
        for k in 0..20 {
            assert_eq!(
                go[20 * i + k],
                wo[k],
                "element {i} u32 output {k}: a={:#x} b={:#x}",
                a[i],
                b[i]
            );
        }
        for k in 0..8 {
            assert_eq!(
                gq[8 * i + k],
                wq[k],
                "element {i} u64 output {k}: a={:#x} b={:#x} c={:#x}",
                a[i],
                b[i],
                c[i]
            );
        }
    }
}

/// Bit patterns equal, or both NaN.
fn same32(g: u32, w: u32) -> bool {
    g == w || (f32::from_bits(g).is_nan() && f32::from_bits(w).is_nan())
}

fn frexp32(a: f32) -> (f32, i32) {
    if a == 0.0 || !a.is_finite() {
        return (a, 0);
    }
    let (s, k) = if a.is_subnormal() {
        (a * 2f32.powi(32), -32)
    } else {
        (a, 0)
    };
    let e = ((s.to_bits() >> 23) & 0xff) as i32 - 126;
    let m = f32::from_bits((s.to_bits() & 0x807f_ffff) | (126 << 23));
    (m, e + k)
}

fn ldexp32(a: f32, k: i32) -> f32 {
    (a as f64 * 2f64.powi(k)) as f32
}

fn nextafter32(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        return f32::NAN;
    }
    if a == b {
        return b;
    }
    if a == 0.0 {
        return f32::from_bits(1).copysign(b);
    }
    let up = (b > a) == (a > 0.0);
    f32::from_bits(if up { a.to_bits() + 1 } else { a.to_bits() - 1 })
}

/// IEEE remainder and the low three bits of the quotient's magnitude (with its sign).
fn remquo32(a: f32, b: f32) -> (f32, i32) {
    if a.is_nan() || b.is_nan() || a.is_infinite() || b == 0.0 {
        return (f32::NAN, 0);
    }
    if b.is_infinite() {
        return (a, 0);
    }
    let (ax, bx) = (a.abs() as f64, b.abs() as f64);
    // |a| mod 8|b| (exact in f64 for f32 operands: fmod is exact), its quotient digit by digit
    let t8 = ax % (8.0 * bx);
    let mut q = (t8 / bx).floor() as i32;
    let mut t = t8 - q as f64 * bx;
    if t > bx / 2.0 || (t == bx / 2.0 && q & 1 == 1) {
        t -= bx;
        q += 1;
    }
    let r = (t as f32).copysign(if t == 0.0 { a } else { t as f32 * a.signum() });
    let r = if t == 0.0 { 0f32.copysign(a) } else { r };
    let q = q & 7;
    (r, if (a < 0.0) != (b < 0.0) { -q } else { q })
}

fn ilogb32(a: f32) -> i32 {
    if a == 0.0 || a.is_nan() {
        i32::MIN
    } else if a.is_infinite() {
        i32::MAX
    } else {
        frexp32(a).1 - 1
    }
}

fn f32_exact_ref(a: f32, b: f32, k: i32) -> [u32; 16] {
    let (rq, quo) = remquo32(a, b);
    let (fm, fe) = frexp32(a);
    let ip = a.trunc();
    let frac = if a.is_infinite() {
        0f32.copysign(a)
    } else {
        (a - ip).copysign(a)
    };
    let fdim = if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a > b {
        a - b
    } else {
        0.0
    };
    [
        (a % b).to_bits(),
        rq.to_bits(),
        rq.to_bits(),
        if rq.is_nan() { 0 } else { (quo & 7) as u32 },
        fm.to_bits(),
        if a.is_finite() { fe as u32 } else { 0 },
        ldexp32(a, k).to_bits(),
        nextafter32(a, b).to_bits(),
        ilogb32(a) as u32,
        frac.to_bits(),
        ip.to_bits(),
        fdim.to_bits(),
        a.round_ties_even().to_bits(),
        a.round().to_bits(),
        (a.trunc() + b.floor()).to_bits(),
        ldexp32(b, k).to_bits(),
    ]
}

#[test]
fn exact_float_library_functions() {
    let m = module("round33.ptx");
    let mut r = Rng(9);
    let special = [
        0.0f32,
        -0.0,
        1.0,
        -2.5,
        0.5,
        1.5,
        -3.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(1),
        f32::from_bits(0x8000_1234),
        f32::MAX,
        f32::MIN_POSITIVE,
        8388609.0,
        -16777215.0,
        1e-30,
    ];
    let mut f = |i: usize, salt: usize| -> f32 {
        match (i + salt) % 3 {
            0 => special[(i * 7 + salt) % special.len()],
            1 => ((r.next() % 20001) as f32 - 10000.0) / 64.0,
            _ => f32::from_bits(r.next() as u32 & 0xbfff_ffff),
        }
    };
    let n = 192usize;
    let x: Vec<f32> = (0..n).map(|i| f(i, 0)).collect();
    let y: Vec<f32> = (0..n).map(|i| f(i, 1)).collect();
    let k: Vec<i32> = (0..n).map(|i| (i as i32 * 37 % 321) - 160).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let (px, py, pk) = (up(&mut e, &x), up(&mut e, &y), up(&mut e, &k));
    let o = zeros(&mut e, 64 * n);
    launch(
        &mut e,
        &m,
        "f32_exact",
        3,
        64,
        0,
        &[
            ParamValue::Ptr(px),
            ParamValue::Ptr(py),
            ParamValue::Ptr(pk),
            ParamValue::Ptr(o),
            ParamValue::I32(n as i32),
        ],
    );
    let got: Vec<u32> = down(&e, o, 16 * n);
    let names = [
        "fmodf",
        "remainderf",
        "remquof",
        "remquo quo",
        "frexpf",
        "frexp exp",
        "ldexpf",
        "nextafterf",
        "ilogbf",
        "modff frac",
        "modff int",
        "fdimf",
        "rintf",
        "roundf",
        "trunc+floor",
        "scalbnf",
    ];
    for i in 0..n {
        let want = f32_exact_ref(x[i], y[i], k[i]);
        for j in 0..16 {
            let g = got[16 * i + j];
            assert!(
                same32(g, want[j]),
                "{}({:e} [{:#x}], {:e} [{:#x}], k={}): got {:#x} ({:e}), want {:#x} ({:e})",
                names[j],
                x[i],
                x[i].to_bits(),
                y[i],
                y[i].to_bits(),
                k[i],
                g,
                f32::from_bits(g),
                want[j],
                f32::from_bits(want[j])
            );
        }
    }
}

/// `min`/`max` (PTX ISA): a NaN operand gives the other one; -0.0 orders below +0.0.
fn minmax64(a: f64, b: f64, max: bool) -> f64 {
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if a == 0.0 && b == 0.0 {
        let neg = if max {
            a.is_sign_negative() && b.is_sign_negative()
        } else {
            a.is_sign_negative() || b.is_sign_negative()
        };
        return if neg { -0.0 } else { 0.0 };
    }
    if (a < b) != max {
        a
    } else {
        b
    }
}

#[test]
fn min_max_of_signed_zeros_and_nans() {
    let m = module("round33.ptx");
    let vals = [
        0.0f64,
        -0.0,
        1.0,
        -1.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e-310,
        -2.5,
    ];
    let mut pairs = Vec::new();
    for &a in &vals {
        for &b in &vals {
            pairs.push((a, b));
        }
    }
    let n = pairs.len();
    let x: Vec<f32> = pairs.iter().map(|p| p.0 as f32).collect();
    let y: Vec<f32> = pairs.iter().map(|p| p.1 as f32).collect();
    let dx: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let dy: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let hx: Vec<u16> = pairs
        .iter()
        .map(|p| half::f16::from_f64(p.0).to_bits())
        .collect();
    let hy: Vec<u16> = pairs
        .iter()
        .map(|p| half::f16::from_f64(p.1).to_bits())
        .collect();
    for (name, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let ps = [
            up(&mut e, &x),
            up(&mut e, &y),
            up(&mut e, &dx),
            up(&mut e, &dy),
            up(&mut e, &hx),
            up(&mut e, &hy),
        ];
        let (o, o64, oh) = (
            zeros(&mut e, 8 * n),
            zeros(&mut e, 16 * n),
            zeros(&mut e, 4 * n),
        );
        let mut params: Vec<ParamValue> = ps.iter().map(|&p| ParamValue::Ptr(p)).collect();
        params.extend([
            ParamValue::Ptr(o),
            ParamValue::Ptr(o64),
            ParamValue::Ptr(oh),
            ParamValue::I32(n as i32),
        ]);
        launch(&mut e, &m, "minmax_zero", 2, 64, 0, &params);
        let g32: Vec<u32> = down(&e, o, 2 * n);
        let g64: Vec<u64> = down(&e, o64, 2 * n);
        let gh: Vec<u16> = down(&e, oh, 2 * n);
        for (i, &(a, b)) in pairs.iter().enumerate() {
            for (j, max) in [false, true].into_iter().enumerate() {
                let w32 = minmax64(x[i] as f64, y[i] as f64, max) as f32;
                assert!(
                    same32(g32[2 * i + j], w32.to_bits()),
                    "{name}: f32 max={max} ({a}, {b}): {:#x}",
                    g32[2 * i + j]
                );
                let w64 = minmax64(a, b, max);
                let g = f64::from_bits(g64[2 * i + j]);
                assert!(
                    g.to_bits() == w64.to_bits() || (g.is_nan() && w64.is_nan()),
                    "{name}: f64 max={max} ({a:?}, {b:?}): got {g:?}, want {w64:?}"
                );
                let (ha, hb) = (half::f16::from_bits(hx[i]), half::f16::from_bits(hy[i]));
                let wh = half::f16::from_f64(minmax64(ha.to_f64(), hb.to_f64(), max));
                let gv = half::f16::from_bits(gh[2 * i + j]);
                assert!(
                    gv.to_bits() == wh.to_bits() || (gv.is_nan() && wh.is_nan()),
                    "{name}: f16 max={max} ({ha}, {hb}): got {gv} ({:#x}), want {wh}",
                    gv.to_bits()
                );
            }
        }
    }
}

fn flush(x: f32) -> f32 {
    if x.is_subnormal() {
        0f32.copysign(x)
    } else {
        x
    }
}

/// The f32 nearest `p` toward zero.
fn f32_rz(p: f64) -> f32 {
    let r = p as f32;
    if (r as f64).abs() > p.abs() {
        f32::from_bits(r.to_bits() - 1)
    } else {
        r
    }
}

fn ftz_ref(a: f32, b: f32, c: f32) -> [u32; 14] {
    let (a, b, c) = (flush(a), flush(b), flush(c));
    let f = |x: f32| flush(x).to_bits();
    let sat = |x: f32| {
        if x.is_nan() || x <= 0.0 {
            0.0
        } else {
            x.min(1.0)
        }
    };
    [
        f(a + b),
        f(a * b),
        f(a.mul_add(b, c)),
        f(a - c),
        f(if a.is_nan() {
            b
        } else if b.is_nan() || a <= b {
            if a == b && a == 0.0 {
                if a.is_sign_negative() {
                    a
                } else {
                    b
                }
            } else {
                a
            }
        } else {
            b
        }),
        f(if a.is_nan() {
            c
        } else if c.is_nan() || a >= c {
            if a == c && a == 0.0 {
                if a.is_sign_negative() {
                    c
                } else {
                    a
                }
            } else {
                a
            }
        } else {
            c
        }),
        (a < b) as u32
            | ((a == c) as u32) << 1
            | ((a != 0.0) as u32) << 2
            | ((b > 0.0) as u32) << 3,
        f(a.abs()),
        f(-b),
        f(a.abs().sqrt()),
        f(a / b),
        f(flush(a + a)),
        f(f32_rz(a as f64 * c as f64)),
        f(sat(flush(a * 1e30))),
    ]
}

/// `-ftz=true` (what `-use_fast_math` implies): `add/sub/mul/fma/min/max/abs/neg/sqrt/div.ftz.f32`,
/// `setp.ftz.f32`, `mul.rz.ftz.f32` and `cvt.ftz.sat.f32.f32` flush subnormal inputs and results to zeros of
/// the same sign (PTX ISA). Until round 33 the emulator ignored `.ftz` and kept subnormals.
#[test]
fn flush_to_zero_arithmetic() {
    let m = module("round33_ftz.ptx");
    let mut r = Rng(77);
    let pick = |r: &mut Rng| -> f32 {
        match r.below(6) {
            0 => f32::from_bits((r.next() as u32 & 0x807f_ffff) | 1),
            1 => f32::from_bits(((r.next() as u32) & 0x80ff_ffff) | 0x0080_0000),
            2 => [
                0.0,
                -0.0,
                1.0,
                -1.0,
                0.5,
                f32::MIN_POSITIVE,
                -f32::MIN_POSITIVE,
            ][r.below(7) as usize],
            3 => ((r.below(2001) as f32) - 1000.0) / 8.0,
            4 => f32::from_bits(r.next() as u32 & 0x9fff_ffff),
            _ => 1e-20 * (r.below(100) as f32 + 1.0),
        }
    };
    let n = 256usize;
    let x: Vec<f32> = (0..n).map(|_| pick(&mut r)).collect();
    let y: Vec<f32> = (0..n).map(|_| pick(&mut r)).collect();
    let z: Vec<f32> = (0..n)
        .map(|i| if i % 4 == 0 { x[i] } else { pick(&mut r) })
        .collect();
    for (name, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let (px, py, pz) = (up(&mut e, &x), up(&mut e, &y), up(&mut e, &z));
        let o = zeros(&mut e, 14 * 4 * n);
        launch(
            &mut e,
            &m,
            "ftz_arith",
            4,
            64,
            0,
            &[
                ParamValue::Ptr(px),
                ParamValue::Ptr(py),
                ParamValue::Ptr(pz),
                ParamValue::Ptr(o),
                ParamValue::I32(n as i32),
            ],
        );
        let got: Vec<u32> = down(&e, o, 14 * n);
        let mut subnormal_seen = 0;
        for i in 0..n {
            let want = ftz_ref(x[i], y[i], z[i]);
            for k in 0..14 {
                let g = got[14 * i + k];
                if k != 6 && f32::from_bits(g).is_subnormal() {
                    subnormal_seen += 1;
                }
                assert!(
                    same32(g, want[k]),
                    "{name}: element {i} output {k} ({:e} [{:#x}], {:e} [{:#x}], {:e} [{:#x}]): got {:#x} ({:e}), want {:#x} ({:e})",
                    x[i], x[i].to_bits(), y[i], y[i].to_bits(), z[i], z[i].to_bits(),
                    g, f32::from_bits(g), want[k], f32::from_bits(want[k])
                );
            }
        }
        assert_eq!(subnormal_seen, 0, "{name}: a .ftz result was subnormal");
    }
}

/// A producer warp hands 32 values per round to a consumer warp through a volatile shared flag, with
/// `__threadfence_block` on both sides (fence + strong write / strong read + fence: synchronizing, so no
/// race is reported), under both schedules.
#[test]
fn volatile_flag_handoff() {
    let m = module("round33.ptx");
    let rounds = 8usize;
    let x: Vec<i32> = (0..32 * rounds as i32).map(|i| i * 7 - 100).collect();
    for (name, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let (px, o) = (up(&mut e, &x), zeros(&mut e, 4 * x.len()));
        let p = [
            ParamValue::Ptr(px),
            ParamValue::Ptr(o),
            ParamValue::I32(rounds as i32),
        ];
        launch(&mut e, &m, "volatile_flags", 1, 96, 0, &p);
        let got: Vec<i32> = down(&e, o, x.len());
        for r in 0..rounds {
            for l in 0..32 {
                let want = x[r * 32 + 31 - l] * (r as i32 + 1) + r as i32;
                assert_eq!(got[r * 32 + l], want, "{name}: round {r} lane {l}");
            }
        }
    }
}

/// A failing device `assert` is a `Trap` fault naming the expression; a passing one costs nothing.
#[test]
fn device_assert() {
    let m = module("round33.ptx");
    let mut e = Emulator::new(EmuConfig::default());
    let good: Vec<i32> = (0..64).collect();
    let (pg, o) = (up(&mut e, &good), zeros(&mut e, 256));
    let p = [ParamValue::Ptr(pg), ParamValue::Ptr(o), ParamValue::I32(64)];
    launch(&mut e, &m, "checked_assert", 1, 64, 0, &p);
    let got: Vec<i32> = down(&e, o, 64);
    assert_eq!(got, good.iter().map(|v| v * 2).collect::<Vec<_>>());
    let mut bad = good.clone();
    bad[37] = -5;
    let pb = up(&mut e, &bad);
    let p = [ParamValue::Ptr(pb), ParamValue::Ptr(o), ParamValue::I32(64)];
    match e.launch(&m, "checked_assert", [1, 1, 1], [64, 1, 1], 0, &p) {
        Err(EmuError::Faulted { faults, .. }) => {
            assert_eq!(faults[0].kind, FaultKind::Trap, "{faults:?}");
            assert_eq!(faults[0].lane, Some(5), "{faults:?}");
            assert!(
                faults[0].message.contains("in[i] >= 0"),
                "{}",
                faults[0].message
            );
        }
        other => panic!("expected the assert to fault: {other:?}"),
    }
}

/// `printf` conversions: flags, widths, precisions, 64-bit integers, `%e/%g/%G`, `%c`, `%s`, `%%`.
#[test]
fn printf_conversions() {
    let m = module("round33.ptx");
    let mut e = Emulator::new(EmuConfig::default());
    let r = launch(
        &mut e,
        &m,
        "printf_formats",
        1,
        32,
        0,
        &[ParamValue::I32(3)],
    );
    assert_eq!(
        r.printf,
        [
            "i=3 u=4294967293 x=2fd X=2FD o=3|    3|3    |00003|+3\n",
            "ll=-3298534883328 llu=3298534883328 lx=deadbeefcafebabe\n",
            "f=3.750000 .3f=1.000 e=3.703703e+04 E=3.00E-05 g=0.0003 g2=3e+10 G=1E-10\n",
            "c=D s=text pct=% w=  -0.429|3.00e+03|\n",
            "inf=inf nan=nan neg0=-0\n",
        ]
    );
}

/// Dynamic shared memory carved into f64, i32 and i16 arrays next to a static array.
#[test]
fn carved_dynamic_shared_memory() {
    let m = module("round33.ptx");
    let n = 200usize;
    let x: Vec<i32> = (0..n as i32).map(|i| i * 13 % 97 - 40).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let (px, o) = (up(&mut e, &x), zeros(&mut e, 8 * 256));
    let bs = 64usize;
    let smem = (bs * (8 + 4 + 2)) as u32;
    let p = [
        ParamValue::Ptr(px),
        ParamValue::Ptr(o),
        ParamValue::I32(n as i32),
    ];
    launch(&mut e, &m, "dyn_carve", 4, bs as u32, smem, &p);
    let got: Vec<f64> = down(&e, o, n);
    for (g, &gv) in got.iter().enumerate() {
        let (blk, t) = (g / bs, g % bs);
        let v = |k: usize| {
            let gi = blk * bs + k;
            if gi < n {
                x[gi]
            } else {
                0
            }
        };
        let u = bs - 1 - t;
        let want = v(u) as f64 * 0.5
            + (v((t + 1) % bs) * 3) as f64
            + ((v(u) - 100) as i16) as f64
            + v((t + 3) & 63) as f64 * 0.001;
        assert_eq!(gv, want, "element {g}");
    }
}

/// `__ldca/__ldcs/__ldcg/__ldlu/__ldcv/__ldg` and `__stwb/__stcg/__stcs/__stwt` (`ld.global.{ca,cs,cg,lu,cv,nc}`,
/// `st.global.{wb,cg,cs,wt}`) on float4, double2 and int.
#[test]
fn cache_hinted_loads_and_stores() {
    let m = module("round33.ptx");
    let n = 100usize;
    let a: Vec<f32> = (0..4 * n).map(|i| i as f32 * 0.5 - 7.0).collect();
    let b: Vec<f64> = (0..2 * n).map(|i| i as f64 * 1.25 + 3.0).collect();
    let c: Vec<i32> = (0..n as i32).map(|i| i * i - 50).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let (pa, pb, pc) = (up(&mut e, &a), up(&mut e, &b), up(&mut e, &c));
    let (o4, o2, oi) = (
        zeros(&mut e, 16 * n),
        zeros(&mut e, 16 * n),
        zeros(&mut e, 8 * n),
    );
    let p = [pa, pb, pc, o4, o2, oi].map(ParamValue::Ptr);
    let mut p = p.to_vec();
    p.push(ParamValue::I32(n as i32));
    launch(&mut e, &m, "cache_hints", 2, 64, 0, &p);
    let g4: Vec<f32> = down(&e, o4, 4 * n);
    let g2: Vec<f64> = down(&e, o2, 2 * n);
    let gi: Vec<i32> = down(&e, oi, 2 * n);
    for i in 0..n {
        let j = n - 1 - i;
        let (p4, q4) = (&a[4 * i..4 * i + 4], &a[4 * j..4 * j + 4]);
        let u = c[i];
        let v = c[i ^ 1];
        assert_eq!(
            &g4[4 * i..4 * i + 4],
            &[p4[0] + q4[3], p4[1] * 2.0, p4[2] - q4[0], p4[3] + u as f32],
            "float4 {i}"
        );
        assert_eq!(
            &g2[2 * i..2 * i + 2],
            &[b[2 * i] + b[2 * j + 1], b[2 * i + 1] - b[2 * j]],
            "double2 {i}"
        );
        assert_eq!((gi[i], gi[n + i]), (u * 3 + v, u ^ v), "int {i}");
    }
}

/// The fixture's `warp_bitonic` scans within `__match_any_sync` groups with `__shfl_up_sync(group, x, d)`,
/// which reads lanes outside the group when a group does not start at lane 0: undefined in CUDA, and
/// reported as `CollectiveMisuse` (the program's bug, found by the emulator in round 33).
#[test]
fn warp_group_scan_outside_its_mask_faults() {
    let m = module("round33.ptx");
    let mut r = Rng(21);
    let keys: Vec<u64> = (0..64)
        .map(|i| if i % 7 == 0 { 5 << 60 } else { r.next() })
        .collect();
    let mut e = Emulator::new(EmuConfig::default());
    let (pk, o, s) = (up(&mut e, &keys), zeros(&mut e, 512), zeros(&mut e, 256));
    let p = [pk, o, s].map(ParamValue::Ptr);
    match e.launch(&m, "warp_bitonic", [1, 1, 1], [64, 1, 1], 0, &p) {
        Err(EmuError::Faulted { faults, .. }) => {
            assert_eq!(faults[0].kind, FaultKind::CollectiveMisuse, "{faults:?}");
            assert!(
                faults[0].message.contains("not in the membermask"),
                "{}",
                faults[0].message
            );
        }
        other => panic!("expected a CollectiveMisuse fault: {other:?}"),
    }
}

#[derive(Clone, Copy)]
enum To {
    Zero,
    Up,
    Down,
}

/// `d` rounded to f32 in direction `to` (exact: `d as f32` rounds to nearest, then one step if it lies on
/// the wrong side of `d`).
fn dir32(d: f64, to: To) -> f32 {
    if !d.is_finite() {
        return d as f32;
    }
    let mut r = d as f32;
    if r.is_infinite() {
        r = f32::MAX.copysign(d as f32);
    }
    let rv = r as f64;
    match to {
        To::Zero if rv.abs() > d.abs() => f32::from_bits(r.to_bits() - 1),
        To::Up if rv < d => r.next_up(),
        To::Down if rv > d => r.next_down(),
        _ => r,
    }
}

fn conversions_ref(f: f32, d: f64, l: i64) -> ([u32; 16], [u64; 8]) {
    let i2f_up = |v: i64| {
        let r = v as f32;
        if (r as i128) < v as i128 {
            r.next_up()
        } else {
            r
        }
    };
    let u2d_rz = |v: u64| {
        let r = v as f64;
        if (r as u128) > v as u128 {
            r.next_down()
        } else {
            r
        }
    };
    let i2d_rd = |v: i64| {
        let r = v as f64;
        if (r as i128) > v as i128 {
            r.next_down()
        } else {
            r
        }
    };
    let sat = if f.is_nan() || f <= 0.0 {
        0.0
    } else {
        f.min(1.0)
    };
    let clamped = if f.is_nan() { 0.0 } else { f.clamp(0.0, 255.0) };
    let o = [
        f as i32 as u32,
        f as u32,
        f.round_ties_even() as i32 as u32,
        f.ceil() as i32 as u32,
        f.floor() as i32 as u32,
        f.round_ties_even() as u32,
        d as i32 as u32,
        d.floor() as u32,
        dir32(d, To::Zero).to_bits(),
        dir32(d, To::Up).to_bits(),
        dir32(l as i32 as f64, To::Zero).to_bits(),
        dir32(l as u32 as f64, To::Down).to_bits(),
        i2f_up(l).to_bits(),
        sat.to_bits(),
        (f as i32 as u32) & 0xffff,
        clamped.round_ties_even() as u32 & 0xff,
    ];
    let q = [
        f as i64 as u64,
        d as u64,
        d.ceil() as i64 as u64,
        f.floor() as u64,
        u2d_rz(l as u64).to_bits(),
        i2d_rd(l.wrapping_mul(3).wrapping_add(1)).to_bits(),
        f.round_ties_even() as i64 as u64,
        (l as u32 as f64 + f as f64).to_bits(),
    ];
    (o, q)
}

/// Float/integer conversions in every rounding mode at the edges: NaN (0), infinities and out-of-range
/// values (saturated), negative values into unsigned types (0), halves (ties to even), directed f64 → f32
/// and 64-bit integer → f32/f64 roundings.
#[test]
fn conversions_at_the_edges() {
    let m = module("round33.ptx");
    let mut r = Rng(3);
    let fs = [
        0.0f32,
        -0.0,
        0.5,
        1.5,
        2.5,
        -2.5,
        -0.5,
        1e10,
        -1e10,
        3e9,
        4.5e9,
        1e19,
        2e19,
        -1e19,
        1e20,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        255.5,
        254.5,
        0.99999994,
        1e-40,
        65535.7,
        -32769.0,
    ];
    let ds = [
        0.0f64,
        -0.0,
        1e300,
        -1e300,
        3.4028235677973366e38,
        3.4028235e38,
        1e-45,
        -1e-46,
        1.0000000596046448,
        -1.0000000596046448,
        f64::NAN,
        4294967295.9,
        -1.5,
        1.8446744073709552e19,
        9.3e18,
        1e-320,
    ];
    let ls = [
        0i64,
        1,
        -1,
        i64::MAX,
        i64::MIN,
        (1 << 53) + 1,
        -(1 << 60) - 3,
        16777217,
        -16777219,
        0x7fff_ffff,
        0xffff_ffff,
    ];
    let n = 192usize;
    let f: Vec<f32> = (0..n)
        .map(|i| {
            if i % 2 == 0 {
                fs[i / 2 % fs.len()]
            } else {
                f32::from_bits(r.next() as u32)
            }
        })
        .collect();
    let d: Vec<f64> = (0..n)
        .map(|i| {
            if i % 2 == 1 {
                ds[i / 2 % ds.len()]
            } else {
                f64::from_bits(r.next())
            }
        })
        .collect();
    let l: Vec<i64> = (0..n)
        .map(|i| {
            if i % 3 == 0 {
                ls[i / 3 % ls.len()]
            } else {
                (r.next() as i64) >> r.below(40)
            }
        })
        .collect();
    let mut e = Emulator::new(EmuConfig::default());
    let (pf, pd, pl) = (up(&mut e, &f), up(&mut e, &d), up(&mut e, &l));
    let (o, q) = (zeros(&mut e, 64 * n), zeros(&mut e, 64 * n));
    let mut p = [pf, pd, pl, o, q].map(ParamValue::Ptr).to_vec();
    p.push(ParamValue::I32(n as i32));
    launch(&mut e, &m, "conversions", 3, 64, 0, &p);
    let go: Vec<u32> = down(&e, o, 16 * n);
    let gq: Vec<u64> = down(&e, q, 8 * n);
    for i in 0..n {
        let (wo, wq) = conversions_ref(f[i], d[i], l[i]);
        for k in 0..16 {
            assert!(
                same32(go[16 * i + k], wo[k]),
                "element {i} u32 output {k}: f={:e} d={:e} l={}: got {:#x}, want {:#x}",
                f[i],
                d[i],
                l[i],
                go[16 * i + k],
                wo[k]
            );
        }
        for k in 0..8 {
            let (g, w) = (gq[8 * i + k], wq[k]);
            let nan = f64::from_bits(g).is_nan() && f64::from_bits(w).is_nan() && k >= 4;
            assert!(
                g == w || nan,
                "element {i} u64 output {k}: f={:e} d={:e} l={}: got {g:#x}, want {w:#x}",
                f[i],
                d[i],
                l[i]
            );
        }
    }
}

/// A 16-bit CAS loop, 64-bit and/or/xor/min/max (signed and unsigned), `atomicInc`/`atomicDec` wrapping,
/// a float exchange, block-scoped f64 add and u64 or in shared memory, a system-scoped add, and an f64 max
/// built from a 64-bit CAS loop.
#[test]
fn atomics_16_and_64_bit_and_scoped() {
    let m = module("round33.ptx");
    let mut r = Rng(17);
    let n = 128usize;
    let v: Vec<i32> = (0..n).map(|_| r.below(10001) as i32 - 5000).collect();
    for (name, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let pin = up(&mut e, &v);
        let h16 = zeros(&mut e, 8);
        let u64s = up(&mut e, &[0u64, u64::MAX, 0, 0, u64::MAX, 0, 0, 0, 0, 0]);
        let s64 = up(&mut e, &[i64::MAX, i64::MIN]);
        let incdec = zeros(&mut e, 8);
        let fx = zeros(&mut e, 4);
        let dmax = up(&mut e, &[-1e300f64]);
        let cnt = zeros(&mut e, 8);
        let mut p = [pin, h16, u64s, s64, incdec, fx, dmax, cnt]
            .map(ParamValue::Ptr)
            .to_vec();
        p.push(ParamValue::I32(n as i32));
        launch(&mut e, &m, "atomics_mix", 2, 64, 0, &p);
        let mut hw = [0u16; 4];
        for &x in &v {
            hw[(x & 3) as usize] += 1;
        }
        assert_eq!(down::<u16>(&e, h16, 4), hw, "{name}: 16-bit CAS counts");
        let (mut inc, mut dec) = (0u32, 0u32);
        for _ in 0..n {
            inc = if inc >= 10 { 0 } else { inc + 1 };
            dec = if dec == 0 || dec > 6 { 6 } else { dec - 1 };
        }
        assert_eq!(down::<u32>(&e, incdec, 2), [inc, dec], "{name}: inc/dec");
        let prod = |x: i32| x as i64 * -1_000_000_007;
        assert_eq!(
            down::<i64>(&e, s64, 2),
            [
                v.iter().map(|&x| prod(x)).min().unwrap_or(0),
                v.iter().map(|&x| prod(x)).max().unwrap_or(0)
            ],
            "{name}: s64 min/max"
        );
        let g: Vec<u64> = down(&e, u64s, 10);
        let half_sum = |b: usize| {
            v[64 * b..64 * b + 64]
                .iter()
                .map(|&x| x as f64 * 0.5)
                .sum::<f64>()
        };
        let want = [
            v.iter().map(|&x| x as u32 as u64).sum::<u64>(),
            0,
            v.iter().fold(0u64, |a, &x| a | 1 << ((x >> 4) & 63)),
            v.iter().fold(0u64, |a, &x| {
                a ^ (x as i64 as u64).wrapping_mul(0x1_0000_0001)
            }),
            v.iter().map(|&x| x as i64 as u64).min().unwrap_or(0),
            v.iter().map(|&x| x as i64 as u64).max().unwrap_or(0),
            half_sum(0).to_bits(),
            u64::MAX,
            half_sum(1).to_bits(),
            u64::MAX,
        ];
        assert_eq!(g, want, "{name}: u64 atomics");
        assert_eq!(down::<f32>(&e, fx, 1), [1.5], "{name}: exch");
        let dm = v.iter().map(|&x| x as f64 / 7.0).fold(-1e300, f64::max);
        assert_eq!(down::<f64>(&e, dmax, 1), [dm], "{name}: CAS max");
        assert_eq!(down::<i32>(&e, cnt, 2), [2, n as i32], "{name}: counters");
    }
}

fn sum_local(n: i32, depth: i32) -> i32 {
    let arr: Vec<i32> = (0..12).map(|j| n * j + depth).collect();
    let mut s = arr[((n + depth) % 12) as usize];
    if depth > 0 {
        s += sum_local(n + 1, depth - 1);
    }
    s + arr[(depth % 12) as usize]
}

/// Structs by value into and out of `__noinline__` functions (the `.param .align 8 .b8 p[40]` ABI), eight
/// mixed-width arguments, and a recursive function with a dynamically indexed local array per frame.
#[test]
fn struct_abi_and_recursion() {
    let m = module("round33.ptx");
    let n = 100usize;
    let mut e = Emulator::new(EmuConfig::default());
    let (oa, ob, oc) = (
        zeros(&mut e, 8 * n),
        zeros(&mut e, 4 * n),
        zeros(&mut e, 4 * n),
    );
    let p = [
        ParamValue::Ptr(oa),
        ParamValue::Ptr(ob),
        ParamValue::Ptr(oc),
        ParamValue::I32(n as i32),
    ];
    launch(&mut e, &m, "struct_abi", 2, 64, 0, &p);
    let (ga, gb, gc): (Vec<i64>, Vec<f32>, Vec<i32>) =
        (down(&e, oa, n), down(&e, ob, n), down(&e, oc, n));
    for i in 0..n as i32 {
        let big = |j: i32| {
            (
                [j as f64 * 0.5, -j as f64, j as f64 * 0.25],
                j * 3 - 7,
                j as f32 * 1.5,
                (j & 0x7f) as i8,
            )
        };
        let (x, y) = (big(i), big(i + 5));
        let a = (x.0[0] * 10.0) as i64
            + (y.0[2] * 100.0) as i64
            + (x.1 * y.1) as i64
            + i as i64
            + (-i) as i16 as i64
            + (i * 3) as u8 as i8 as i64
            + ((i as i64) << 33)
            + x.3 as i64;
        let b = x.2 * 0.5 + y.2 + (i as f64 * 0.125) as f32;
        let k = i as usize;
        assert_eq!(
            (ga[k], gb[k], gc[k]),
            (a, b, sum_local(i, i % 5)),
            "element {i}"
        );
    }
}

/// Units in the last place between two finite f64s.
fn ulps(a: f64, b: f64) -> u64 {
    let key = |x: f64| {
        let b = x.to_bits() as i64;
        if b < 0 {
            i64::MIN - b
        } else {
            b
        }
    };
    key(a).abs_diff(key(b))
}

/// libdevice's f64 functions (`exp log sin cos atan2 pow cbrt hypot fmod log1p sqrt rsqrt tan asinh`) within a
/// few ulps of the host's (their documented error bounds are 1–2 ulps; `fmod` and `sqrt` are exact).
#[test]
fn f64_library_functions() {
    let m = module("round33.ptx");
    let mut r = Rng(11);
    let n = 128usize;
    let x: Vec<f64> = (0..n)
        .map(|_| (r.next() % 40_000_001) as f64 / 1e6 - 20.0 + 1e-7)
        .collect();
    let y: Vec<f64> = (0..n)
        .map(|_| (r.next() % 10_000_001) as f64 / 1e6 - 5.0 + 3e-7)
        .collect();
    let mut e = Emulator::new(EmuConfig::default());
    let (px, py, o) = (up(&mut e, &x), up(&mut e, &y), zeros(&mut e, 96 * n));
    let p = [
        ParamValue::Ptr(px),
        ParamValue::Ptr(py),
        ParamValue::Ptr(o),
        ParamValue::I32(n as i32),
    ];
    launch(&mut e, &m, "f64_math", 2, 64, 0, &p);
    let got: Vec<f64> = down(&e, o, 12 * n);
    for i in 0..n {
        let (a, b) = (x[i], y[i]);
        let want = [
            a.exp(),
            a.abs().ln(),
            a.sin(),
            b.cos(),
            a.atan2(b),
            a.abs().powf(b),
            a.cbrt(),
            a.hypot(b),
            a % b,
            b.abs().ln_1p(),
            a.abs().sqrt() + 1.0 / (b.abs() + 1.0).sqrt(),
            a.tan() + b.asinh(),
        ];
        for k in 0..12 {
            let tol = if k == 8 { 0 } else { 4 };
            let g = got[12 * i + k];
            assert!(
                ulps(g, want[k]) <= tol,
                "element {i} function {k} ({a}, {b}): got {g:e}, want {:e}",
                want[k]
            );
        }
    }
}
