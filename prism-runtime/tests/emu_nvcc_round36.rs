//! nvcc round 36 (fixture `round36.cu` → `round36.ptx`, `-arch=sm_90a -O3`): a DeepGEMM-style FP8 GEMM
//! block (TMA with the 128-byte swizzle, `wgmma` e4m3, per-128-K scale promotion), a FlashAttention-2-style
//! causal forward tile (`ldmatrix.x4(.trans)`, `mma.sync` bf16, `exp2f` online softmax, `stmatrix`), a
//! cuda::ptx-style bulk-copy pipeline (`elect.sync`, `mbarrier.try_wait.parity` with a suspend-time hint,
//! `expect_tx`, `cp.async.bulk` both ways, `cp.reduce.async.bulk`, `griddepcontrol`), a cluster reduction
//! through `mapa` + `ld/st.shared::cluster` and `barrier.cluster.arrive.relaxed`, 64-bit and bit intrinsics,
//! half2/bf16x2 math, warp-aggregated atomics with `__match_any_sync` and `__reduce_*_sync`, float
//! conversion corners, CUB warp/block algorithms, `ldmatrix`/`stmatrix` transposes, `atom.inc/dec` and packed
//! half atomics, a FlashAttention-3-style `wgmma` tile (RS, MN-major V), a warp-specialized `wgmma` m64n24k16
//! GEMM, DSMEM vector accesses, and 4-bit / single-bit `mma.sync`. Every output
//! element is checked against a host reference on seeded random inputs, under round-robin, lockstep and
//! random schedules, with race detection on.

mod common;

use common::{check, configs, Dev, Rng};
use half::{bf16, f16};
use prism_runtime::emu::*;
use ParamValue::{Ptr, F32, I32};

fn module() -> Module {
    common::fixture_module("round36.ptx")
}

fn floats(rng: &mut Rng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..n)
        .map(|_| lo + (hi - lo) * (rng.below(1 << 24) as f32 / (1 << 24) as f32))
        .collect()
}

fn launch(d: &mut Dev, m: &Module, k: &str, grid: [u32; 3], block: u32, p: &[ParamValue]) {
    if let Err(e) = d.0.launch(m, k, grid, [block, 1, 1], 0, p) {
        panic!("{k}: {e:?}");
    }
}

// ---------------------------------------------------------------- K1: DeepGEMM-style FP8 GEMM

/// The value of an e4m3 byte (no NaN is generated).
fn e4m3(b: u8) -> f64 {
    let s = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (((b >> 3) & 15) as i32, (b & 7) as f64);
    if e == 0 {
        s * m / 8.0 * 2f64.powi(-6)
    } else {
        s * (1.0 + m / 8.0) * 2f64.powi(e - 7)
    }
}

fn fp8_bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n)
        .map(|_| loop {
            // magnitudes up to 2^3: exponent field below 11
            let b = rng.next() as u8;
            if (b >> 3) & 15 < 11 && b & 0x7f != 0 {
                break b;
            }
        })
        .collect()
}

#[test]
fn deepgemm_fp8_block_scaled_gemm_matches_host() {
    let m = module();
    let (mm, nn, kk) = (128usize, 128usize, 384usize);
    let nkb = kk / 128;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3601);
        let a = fp8_bytes(&mut rng, mm * kk);
        let b = fp8_bytes(&mut rng, nn * kk);
        let sa = floats(&mut rng, nkb * mm, 0.01, 2.0);
        let sb = floats(&mut rng, (nn / 128) * nkb, 0.01, 2.0);
        let mut d = Dev::new(cfg);
        let (ai, bi) = (d.up(&a), d.up(&b));
        let (sai, sbi) = (d.up(&sa), d.up(&sb));
        let out = d.unset(mm * nn);
        let map = |addr: u64, rows: usize| {
            let t = TensorMap::tiled(
                TensorDataType::U8,
                addr,
                &[kk as u64, rows as u64],
                &[kk as u64],
                &[128, 64],
                TensorSwizzle::B128,
            )
            .expect("map");
            ParamValue::Bytes(t.encode().to_vec())
        };
        let p = [
            map(ai, mm),
            map(bi, nn),
            Ptr(sai),
            Ptr(sbi),
            Ptr(out),
            I32(mm as i32),
            I32(nn as i32),
            I32(kk as i32),
        ];
        launch(
            &mut d,
            &m,
            "dg_fp8_gemm",
            [(nn / 64) as u32, (mm / 64) as u32, 1],
            128,
            &p,
        );
        let got = d.down::<f32>(out, mm * nn);
        for r in 0..mm {
            for c in 0..nn {
                let (mut want, mut bound) = (0.0f64, 0.0f64);
                for kb in 0..nkb {
                    let (mut acc, mut mag) = (0.0, 0.0);
                    for k in kb * 128..(kb + 1) * 128 {
                        let t = e4m3(a[r * kk + k]) * e4m3(b[c * kk + k]);
                        acc += t;
                        mag += t.abs();
                    }
                    let s = sa[kb * mm + r] as f64 * sb[(c / 128) * nkb + kb] as f64;
                    want += s * acc;
                    bound += s.abs() * mag;
                }
                let g = got[r * nn + c] as f64;
                assert!(
                    (g - want).abs() <= 2e-6 * bound + 1e-6,
                    "{name}: D[{r}][{c}]: got {g}, want {want}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------- K2: FlashAttention-2 causal tile

fn bf16s(rng: &mut Rng, n: usize, lo: f32, hi: f32) -> Vec<u16> {
    floats(rng, n, lo, hi)
        .into_iter()
        .map(|v| bf16::from_f32(v).to_bits())
        .collect()
}

#[test]
fn flash_attention2_causal_forward_matches_host() {
    let m = module();
    let (heads, l, dh) = (2usize, 192usize, 64usize);
    let scale = 1.0 / (dh as f32).sqrt();
    let mut rng = Rng(0x3602);
    let q = bf16s(&mut rng, heads * l * dh, -2.0, 2.0);
    let k = bf16s(&mut rng, heads * l * dh, -2.0, 2.0);
    let v = bf16s(&mut rng, heads * l * dh, -1.0, 1.0);
    let f = |x: u16| bf16::from_bits(x).to_f64();
    let mut want = vec![0.0f64; heads * l * dh];
    for h in 0..heads {
        let base = h * l * dh;
        for i in 0..l {
            let s: Vec<f64> = (0..=i)
                .map(|j| {
                    (0..dh)
                        .map(|t| f(q[base + i * dh + t]) * f(k[base + j * dh + t]))
                        .sum::<f64>()
                        * scale as f64
                })
                .collect();
            let mx = s.iter().cloned().fold(f64::MIN, f64::max);
            let p: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
            let sum: f64 = p.iter().sum();
            for t in 0..dh {
                want[base + i * dh + t] =
                    (0..=i).map(|j| p[j] * f(v[base + j * dh + t])).sum::<f64>() / sum;
            }
        }
    }
    for (name, cfg) in configs() {
        let mut d = Dev::new(cfg);
        let (qi, ki, vi) = (d.up(&q), d.up(&k), d.up(&v));
        let o = d.up(&vec![0x5A5Au16; heads * l * dh]);
        launch(
            &mut d,
            &m,
            "fa2_causal_fwd",
            [(l / 64) as u32, heads as u32, 1],
            128,
            &[Ptr(o), Ptr(qi), Ptr(ki), Ptr(vi), I32(l as i32), F32(scale)],
        );
        let got = d.down::<u16>(o, heads * l * dh);
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let g = f(g);
            assert!(
                (g - w).abs() <= 1e-2,
                "{name}: O element {i} (head {}, row {}, col {}): got {g}, want {w}",
                i / (l * dh),
                (i / dh) % l,
                i % dh
            );
        }
    }
}

// ---------------------------------------------------------------- K3: bulk-copy pipeline

#[test]
fn bulk_copy_pipeline_with_reduce_and_pdl_matches_host() {
    let m = module();
    let ntiles = 11usize;
    for (name, cfg) in configs() {
        for grid in [1u32, 3] {
            let mut rng = Rng(0x3603 + grid as u64);
            let x = floats(&mut rng, ntiles * 256, -1.0, 1.5);
            let a = 1.75f32;
            let mut d = Dev::new(cfg.clone());
            let xi = d.up(&x);
            let y = d.unset(ntiles * 256);
            let counts = d.up(&vec![7u32; 64]);
            launch(
                &mut d,
                &m,
                "bulk_pipe",
                [grid, 1, 1],
                160,
                &[Ptr(xi), Ptr(y), Ptr(counts), I32(ntiles as i32), F32(a)],
            );
            let wy: Vec<u32> = x.iter().map(|&v| a.mul_add(v, 1.0).to_bits()).collect();
            let gy: Vec<u32> = d
                .down::<f32>(y, ntiles * 256)
                .iter()
                .map(|v| v.to_bits())
                .collect();
            check(&format!("{name}: grid {grid}: y"), &gy, &wy);
            let mut wc = vec![7u32; 64];
            for (i, &v) in x.iter().enumerate() {
                wc[i % 64] += (v > 0.0) as u32;
            }
            check(
                &format!("{name}: grid {grid}: counts"),
                &d.down::<u32>(counts, 64),
                &wc,
            );
        }
    }
}

// ---------------------------------------------------------------- K4: cluster reduction

#[test]
fn cluster_dsmem_reduction_with_relaxed_barrier_matches_host() {
    let m = module();
    let (blocks, per) = (8usize, 300usize);
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3604);
        let x = rng.ints(blocks * per, -1000, 1000);
        let mut d = Dev::new(cfg);
        let xi = d.up(&x);
        let (totals, ring, ids) = (d.unset(2), d.unset(2 * blocks), d.unset(4 * blocks));
        launch(
            &mut d,
            &m,
            "cluster_sum",
            [blocks as u32, 1, 1],
            128,
            &[Ptr(xi), I32(per as i32), Ptr(totals), Ptr(ring), Ptr(ids)],
        );
        let part: Vec<i32> = (0..blocks)
            .map(|b| x[b * per..][..per].iter().sum())
            .collect();
        let wt: Vec<i32> = (0..2).map(|c| part[4 * c..][..4].iter().sum()).collect();
        check(&format!("{name}: totals"), &d.down::<i32>(totals, 2), &wt);
        let mut wr = vec![0i32; 2 * blocks];
        let mut wi = vec![0u32; 4 * blocks];
        for b in 0..blocks {
            let (c, r) = (b / 4, b % 4);
            let left = part[4 * c + (r + 3) % 4];
            (wr[2 * b], wr[2 * b + 1]) = (left, left);
            wi[4 * b..][..4].copy_from_slice(&[r as u32, 4, c as u32 * 100 + 2, 1]);
        }
        check(
            &format!("{name}: ring"),
            &d.down::<i32>(ring, 2 * blocks),
            &wr,
        );
        check(
            &format!("{name}: ids"),
            &d.down::<u32>(ids, 4 * blocks),
            &wi,
        );
    }
}

// ---------------------------------------------------------------- K5: bit intrinsics

fn prmt(x: u32, y: u32, s: u32) -> u32 {
    let bytes = (x as u64) | ((y as u64) << 32);
    (0..4).fold(0, |acc, i| {
        let sel = (s >> (4 * i)) & 7;
        acc | ((((bytes >> (8 * sel)) & 0xff) as u32) << (8 * i))
    })
}

fn fns(mask: u32, base: u32, offset: i32) -> u32 {
    if offset == 0 {
        return if mask >> base & 1 != 0 { base } else { !0 };
    }
    let (mut pos, mut count, inc) = (base as i32, offset.abs() - 1, offset.signum());
    while (0..32).contains(&pos) {
        if mask >> pos & 1 != 0 {
            if count == 0 {
                return pos as u32;
            }
            count -= 1;
        }
        pos += inc;
    }
    !0
}

fn bits_ref(xx: u64, yy: u64) -> [u32; 32] {
    let (x, y, z) = (xx as u32, yy as u32, (yy >> 32) as u32);
    let ffs = |v: u64| if v == 0 { 0 } else { v.trailing_zeros() + 1 };
    let umul = ((xx as u128 * yy as u128) >> 64) as u64;
    let smul = ((xx as i64 as i128 * yy as i64 as i128) >> 64) as u64;
    let s24 = |v: u32| ((v << 8) as i32) >> 8;
    let fs = ((y as u64) << 32) | x as u64;
    [
        prmt(x, y, 0x5410),
        prmt(x, y, 0x7632),
        prmt(x, 0, 0x0123),
        prmt(x, y, z & 0x7777),
        ((fs << (z & 31)) >> 32) as u32,
        (fs >> (z & 31)) as u32,
        ((fs << z.min(32)) >> 32) as u32,
        (fs >> z.min(32)) as u32,
        x.reverse_bits(),
        xx.reverse_bits() as u32,
        (xx.reverse_bits() >> 32) as u32,
        ffs((x & (x >> (z & 15))) as u64),
        ffs(xx & (yy << (z & 63)) & (xx >> (x & 31))),
        (xx ^ yy).count_ones(),
        (xx >> (z & 63)).leading_zeros(),
        umul as u32,
        (umul >> 32) as u32,
        smul as u32,
        (smul >> 32) as u32,
        ((x as i32 as i64 - y as i32 as i64).unsigned_abs() as u32).wrapping_add(z),
        x.abs_diff(y).wrapping_add(z),
        ((x as i32 as i64 * y as i32 as i64) >> 32) as u32,
        ((x as u64 * y as u64) >> 32) as u32,
        ((x as i32 as i64 + y as i32 as i64) >> 1) as u32,
        ((x as i32 as i64 + y as i32 as i64 + 1) >> 1) as u32,
        ((x as u64 + y as u64) >> 1) as u32,
        ((x as u64 + y as u64 + 1) >> 1) as u32,
        s24(x).wrapping_mul(s24(y)) as u32,
        (x & 0xff_ffff).wrapping_mul(y & 0xff_ffff),
        fns(x, z & 31, (y % 9) as i32 - 4),
        (x >> (z & 31)).leading_zeros(),
        ((xx as i64).max(yy as i64) as u32) ^ (xx.min(yy) as u32),
    ]
}

#[test]
fn bit_and_64bit_intrinsics_match_host() {
    let m = module();
    let n = 300usize;
    let mut rng = Rng(0x3605);
    let mut a: Vec<u64> = (0..n).map(|_| rng.next()).collect();
    // sparse words so that ffs/clz/fns see zeros and long runs
    for i in (0..n).step_by(7) {
        a[i] &= rng.next() & rng.next() & rng.next();
    }
    let mut want = Vec::with_capacity(32 * n);
    for i in 0..n {
        want.extend(bits_ref(a[i], a[(i * 5 + 1) % n]));
    }
    for (name, cfg) in configs().into_iter().take(3) {
        let mut d = Dev::new(cfg);
        let ai = d.up(&a);
        let o = d.unset(32 * n);
        d.run(&m, "bits64", (3, 128, 0), &[Ptr(o), Ptr(ai), I32(n as i32)]);
        let got = d.down::<u32>(o, 32 * n);
        for (j, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{name}: element {} word {}", j / 32, j % 32);
        }
    }
}

// ---------------------------------------------------------------- K6: half2 / bf16x2 math

fn h2(v: u32) -> [f64; 2] {
    [
        f16::from_bits(v as u16).to_f64(),
        f16::from_bits((v >> 16) as u16).to_f64(),
    ]
}

fn b2(v: u32) -> [f64; 2] {
    [
        bf16::from_bits(v as u16).to_f64(),
        bf16::from_bits((v >> 16) as u16).to_f64(),
    ]
}

/// How a packed result is checked: exact bits, or each half against an f64 value within a tolerance.
enum Want {
    F16([f64; 2]),
    Bf16([f64; 2]),
    F16Near([f64; 2], f64, f64),
    Bf16Near([f64; 2], f64, f64),
}

fn check_half(what: &str, got: u32, want: &Want) {
    for h in 0..2 {
        let gb = (got >> (16 * h)) as u16;
        let (g, w, abs, rel, exact) = match want {
            Want::F16(w) => (
                f16::from_bits(gb).to_f64(),
                w[h],
                0.0,
                0.0,
                Some(f16::from_f64(w[h]).to_bits()),
            ),
            Want::Bf16(w) => (
                bf16::from_bits(gb).to_f64(),
                w[h],
                0.0,
                0.0,
                Some(bf16::from_f64(w[h]).to_bits()),
            ),
            Want::F16Near(w, a, r) => (f16::from_bits(gb).to_f64(), w[h], *a, *r, None),
            Want::Bf16Near(w, a, r) => (bf16::from_bits(gb).to_f64(), w[h], *a, *r, None),
        };
        if w.is_nan() {
            // max/min .NaN give the canonical NaN; other NaN results only need to be NaN
            assert!(g.is_nan(), "{what}: half {h}: got {g}, want NaN");
            continue;
        }
        match exact {
            Some(e) => assert_eq!(gb, e, "{what}: half {h}: got {g}, want {w}"),
            None => assert!(
                (g - w).abs() <= abs + rel * w.abs() || (g.is_infinite() && g == w),
                "{what}: half {h}: got {g}, want {w}"
            ),
        }
    }
}

fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

fn half2_ref(x: u32, y: u32, z: u32, u: u32, v: u32, w: u32) -> Vec<Want> {
    let (x, y, z) = (h2(x), h2(y), h2(z));
    let (u, v, w) = (b2(u), b2(v), b2(w));
    let map = |f: &dyn Fn(usize) -> f64| [f(0), f(1)];
    let r16 = |v: f64| f16::from_f64(v).to_f64();
    let rb = |v: f64| bf16::from_f64(v).to_f64();
    let relu = |v: f64| if v < 0.0 { 0.0 } else { v };
    let sat = |v: f64| if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
    let fma = |h: usize| x[h] * y[h] + z[h];
    vec![
        Want::F16(map(&fma)),
        Want::F16(map(&|h| relu(r16(fma(h))))),
        Want::F16(map(&|h| nan_max(x[h], y[h]))),
        Want::F16(map(&|h| nan_min(x[h], y[h]))),
        Want::F16(map(&|h| x[h].max(y[h]))),
        Want::F16(map(&|h| sat(r16(x[h] * y[h])))),
        Want::F16(map(&|h| x[h] + y[h])),
        Want::F16(map(&|h| sat(r16(fma(h))))),
        Want::F16Near(map(&|h| r16(x[h] * 0.25).exp()), 1e-4, 3e-3),
        Want::F16Near(map(&|h| x[h].exp2()), 1e-4, 3e-3),
        Want::F16Near(map(&|h| x[h].abs().log2()), 2e-3, 3e-3),
        Want::F16Near(map(&|h| 1.0 / x[h]), 0.0, 2e-3),
        Want::F16Near(map(&|h| 1.0 / x[h].abs().sqrt()), 0.0, 2e-3),
        Want::F16Near(map(&|h| x[h].abs().sqrt()), 0.0, 2e-3),
        Want::Bf16(map(&|h| u[h] * v[h] + w[h])),
        Want::Bf16(map(&|h| nan_max(u[h], v[h]))),
        Want::Bf16(map(&|h| u[h].min(v[h]))),
        Want::Bf16(map(&|h| relu(rb(u[h] * v[h] + w[h])))),
        Want::Bf16Near(map(&|h| rb(u[h] * 0.25).exp()), 1e-3, 1.6e-2),
        Want::F16Near(map(&|h| x[h] / y[h]), 0.0, 1e-3),
    ]
}

#[test]
fn half2_and_bf16x2_math_matches_host() {
    let m = module();
    let n = 256usize;
    let mut rng = Rng(0x3606);
    let mut pack = |nan: bool, b16: bool| -> Vec<u32> {
        (0..n)
            .map(|i| {
                let mut w = 0u32;
                for h in 0..2 {
                    let v = loop {
                        let v = floats(&mut rng, 1, -4.0, 4.0)[0];
                        if v.abs() > 1.0 / 64.0 {
                            break v;
                        }
                    };
                    let mut bits = if b16 {
                        bf16::from_f32(v).to_bits()
                    } else {
                        f16::from_f32(v).to_bits()
                    };
                    if nan && (i * 2 + h) % 13 == 5 {
                        bits = if b16 { 0x7fc1 } else { 0x7e01 };
                    }
                    w |= (bits as u32) << (16 * h);
                }
                w
            })
            .collect()
    };
    let (x, y, z) = (pack(true, false), pack(false, false), pack(false, false));
    let (u, v, w) = (pack(false, true), pack(true, true), pack(false, true));
    for (name, cfg) in configs().into_iter().take(3) {
        let mut d = Dev::new(cfg);
        let ins: Vec<u64> = [&x, &y, &z, &u, &v, &w].iter().map(|a| d.up(a)).collect();
        let o = d.unset(20 * n);
        let mut p: Vec<ParamValue> = vec![Ptr(o)];
        p.extend(ins.iter().map(|&a| Ptr(a)));
        p.push(I32(n as i32));
        d.run(&m, "half2_math", (2, 128, 0), &p);
        let got = d.down::<u32>(o, 20 * n);
        for i in 0..n {
            for (k, want) in half2_ref(x[i], y[i], z[i], u[i], v[i], w[i])
                .iter()
                .enumerate()
            {
                check_half(
                    &format!("{name}: element {i} op {k}"),
                    got[20 * i + k],
                    want,
                );
            }
        }
    }
}

// ---------------------------------------------------------------- K7: warp-aggregated atomics with match

#[test]
fn match_any_warp_aggregated_atomics_match_host() {
    let m = module();
    let (n, cap) = (1000usize, 200usize);
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3607);
        let mut x: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
        // one warp where v >> 30 agrees everywhere (match_all true)
        for v in &mut x[64..96] {
            *v &= 0x3fff_ffff;
        }
        let mut d = Dev::new(cfg);
        let xi = d.up(&x);
        let counts = d.up(&[0i32; 16]);
        let slots = d.up(&vec![-1i32; 16 * cap]);
        let info = d.unset(6 * n);
        d.run(
            &m,
            "match_agg",
            (8, 128, 0),
            &[
                Ptr(xi),
                Ptr(counts),
                Ptr(slots),
                I32(cap as i32),
                Ptr(info),
                I32(n as i32),
            ],
        );
        let key = |v: i32| ((v & 0x7fff_ffff) % 16) as usize;
        let mut wc = vec![0i32; 16];
        let mut wi = vec![0i32; 6 * n];
        for w0 in (0..n).step_by(32) {
            let lanes: Vec<usize> = (w0..n.min(w0 + 32)).collect();
            let active: u32 = lanes.iter().fold(0, |a, &i| a | 1 << (i - w0));
            let same_hi = lanes.iter().all(|&i| x[i] >> 30 == x[w0] >> 30);
            for &i in &lanes {
                let grp: Vec<usize> = lanes
                    .iter()
                    .cloned()
                    .filter(|&j| key(x[j]) == key(x[i]))
                    .collect();
                let o = &mut wi[6 * i..][..6];
                o[0] = grp.iter().filter(|&&j| j < i).count() as i32;
                o[1] = grp
                    .iter()
                    .fold(0u32, |a, &j| a.wrapping_add(x[j] as u32 & 0xffff))
                    as i32;
                o[2] = grp.iter().map(|&j| x[j] as u32).min().unwrap() as i32;
                o[3] = grp.iter().map(|&j| x[j]).max().unwrap();
                o[4] = grp.iter().map(|&j| x[j]).min().unwrap();
                o[5] = if same_hi { active as i32 } else { -1 };
            }
            for &i in &lanes {
                wc[key(x[i])] += 1;
            }
        }
        check(&format!("{name}: counts"), &d.down::<i32>(counts, 16), &wc);
        check(&format!("{name}: info"), &d.down::<i32>(info, 6 * n), &wi);
        let got = d.down::<i32>(slots, 16 * cap);
        for k in 0..16 {
            let mut g: Vec<i32> = got[k * cap..][..wc[k] as usize].to_vec();
            g.sort();
            let w: Vec<i32> = (0..n as i32).filter(|&i| key(x[i as usize]) == k).collect();
            check(&format!("{name}: bucket {k}"), &g, &w);
            assert!(got[k * cap + wc[k] as usize..][..cap - wc[k] as usize]
                .iter()
                .all(|&v| v == -1));
        }
    }
}

// ---------------------------------------------------------------- K8: float conversion corners

/// f64 `v` rounded to a 16-bit float format in mode `dir` (0 nearest, 1 toward zero, 2 down, 3 up), given
/// the format's round-to-nearest conversion and bit-level neighbours.
fn round16(v: f64, dir: u8, rn: impl Fn(f64) -> u16, val: impl Fn(u16) -> f64) -> u16 {
    let b = rn(v);
    let r = val(b);
    if r == v || dir == 0 || v.is_nan() {
        return b;
    }
    // one step toward zero or away from zero on the magnitude
    let down = |b: u16| {
        if b & 0x7fff == 0 {
            0x8001
        } else if b & 0x8000 != 0 {
            b + 1
        } else {
            b - 1
        }
    };
    let up = |b: u16| {
        if b & 0x7fff == 0 {
            0x0001
        } else if b & 0x8000 != 0 {
            b - 1
        } else {
            b + 1
        }
    };
    let toward_down = match dir {
        1 => v > 0.0,
        2 => true,
        _ => false,
    };
    if toward_down && r > v {
        down(b)
    } else if !toward_down && r < v {
        up(b)
    } else {
        b
    }
}

fn f32_dir(v: f64, dir: u8) -> f32 {
    let r = v as f32;
    let rv = r as f64;
    if rv == v || v.is_nan() {
        return r;
    }
    let next = |f: f32, upward: bool| {
        if f == 0.0 {
            let t = f32::from_bits(1);
            return if upward { t } else { -t };
        }
        let b = f.to_bits();
        f32::from_bits(if (f > 0.0) == upward { b + 1 } else { b - 1 })
    };
    let down = match dir {
        1 => v > 0.0,
        2 => true,
        _ => false,
    };
    if down && rv > v {
        next(r, false)
    } else if !down && rv < v {
        next(r, true)
    } else {
        r
    }
}

fn int_f32_dir(v: i128, dir: u8) -> f32 {
    let r = v as f32;
    let rv = r as i128;
    if rv == v {
        return r;
    }
    // a neighbour at the same distance in f64 keeps the comparison exact enough: compare as i128
    let next = |f: f32, upward: bool| {
        let b = f.to_bits();
        f32::from_bits(if (f > 0.0) == upward { b + 1 } else { b - 1 })
    };
    let down = match dir {
        1 => v > 0,
        2 => true,
        _ => false,
    };
    if down && rv > v {
        next(r, false)
    } else if !down && rv < v {
        next(r, true)
    } else {
        r
    }
}

fn f2i(x: f32, mode: fn(f64) -> f64, lo: i128, hi: i128) -> i128 {
    if x.is_nan() {
        0
    } else {
        (mode(x as f64) as i128).clamp(lo, hi)
    }
}

fn cvt_ref(x: f32, y: f32, d: f64, l: i64) -> [u32; 28] {
    let xf = x as f64;
    let (i32lo, i32hi) = (i32::MIN as i128, i32::MAX as i128);
    let h = |dir| {
        round16(
            xf,
            dir,
            |v| f16::from_f64(v).to_bits(),
            |b| f16::from_bits(b).to_f64(),
        ) as u32
    };
    let bfr = |dir| {
        round16(
            xf,
            dir,
            |v| bf16::from_f64(v).to_bits(),
            |b| bf16::from_bits(b).to_f64(),
        ) as u32
    };
    let bf_relu = |v: f32| {
        if v.is_nan() {
            0x7fff
        } else {
            bf16::from_f32(v.max(0.0)).to_bits() as u32
        }
    };
    let bf_sat = |v: f32| {
        if v.is_nan() {
            0x7fff
        } else {
            let b = bf16::from_f32(v);
            if b.is_infinite() {
                (b.to_bits() & 0x8000 | 0x7f7f) as u32
            } else {
                b.to_bits() as u32
            }
        }
    };
    let tf = if x.is_finite() { x } else { 1.5 };
    let ll = f2i(x, f64::floor, i64::MIN as i128, i64::MAX as i128) as i64 as u64;
    let ull = f2i(x, f64::ceil, 0, u64::MAX as i128) as u64;
    let sat = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
    [
        f2i(x, f64::round_ties_even, i32lo, i32hi) as u32,
        f2i(x, f64::floor, i32lo, i32hi) as u32,
        f2i(x, f64::ceil, i32lo, i32hi) as u32,
        f2i(x, f64::trunc, i32lo, i32hi) as u32,
        f2i(x, f64::round_ties_even, 0, u32::MAX as i128) as u32,
        ll as u32,
        (ll >> 32) as u32,
        ull as u32,
        (ull >> 32) as u32,
        x.round_ties_even().to_bits(),
        sat.to_bits(),
        h(1),
        h(2),
        h(3),
        bfr(1),
        bfr(2),
        bfr(3),
        bf_relu(x) << 16 | bf_relu(y),
        bf_sat(x) << 16 | bf_sat(y),
        (tf.to_bits().wrapping_add(0x1000)) & 0xffff_e000,
        f32_dir(d, 2).to_bits(),
        f32_dir(d, 3).to_bits(),
        f32_dir(d, 1).to_bits(),
        int_f32_dir(l as i32 as i128, 2).to_bits(),
        int_f32_dir(l as i128, 3).to_bits(),
        int_f32_dir((l as u64 >> 32) as i128, 1).to_bits(),
        int_f32_dir(l as u64 as i128, 2).to_bits(),
        x.floor().to_bits(),
    ]
}

#[test]
fn float_conversion_corners_match_host() {
    let m = module();
    let mut rng = Rng(0x3608);
    let mut xs: Vec<f32> = vec![
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        0.5,
        1.5,
        2.5,
        -2.5,
        -0.5,
        65504.0,
        65519.0,
        65520.0,
        -65520.0,
        1e10,
        -1e10,
        3e9,
        -3e9,
        5e-8,
        -5e-8,
        1e-40,
        3.4e38,
        -3.4e38,
        1.0,
        -1.0,
        0.99999994,
        1.0000001,
        9.2e18,
        -9.3e18,
        2e19,
        f32::from_bits(0x3f80_8000),
        f32::from_bits(0x3f81_8000),
        f32::from_bits(0xbf80_1000),
    ];
    while xs.len() < 160 {
        let e = rng.range(-30, 40);
        let v = floats(&mut rng, 1, -1.0, 1.0)[0] * 2f32.powi(e);
        if v != 0.0 {
            xs.push(v);
        }
    }
    let n = xs.len();
    let ds: Vec<f64> = (0..n)
        .map(|i| {
            let m = (rng.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            match i % 4 {
                0 => m * 1e-39,
                1 => m * 1e39,
                2 => m * 2f64.powi(rng.range(-60, 60)),
                _ => 1.0 / 3.0 * (i as f64 - 80.0),
            }
        })
        .collect();
    let ls: Vec<i64> = (0..n)
        .map(|i| (rng.next() >> (i % 40)) as i64 * if i % 3 == 0 { -1 } else { 1 })
        .collect();
    let mut want = Vec::with_capacity(28 * n);
    for i in 0..n {
        want.extend(cvt_ref(xs[i], xs[(i * 3 + 1) % n], ds[i], ls[i]));
    }
    for (name, cfg) in configs().into_iter().take(3) {
        let mut d = Dev::new(cfg);
        let (xi, di, li) = (d.up(&xs), d.up(&ds), d.up(&ls));
        let o = d.unset(28 * n);
        d.run(
            &m,
            "cvt_corners",
            (2, 128, 0),
            &[Ptr(o), Ptr(xi), Ptr(di), Ptr(li), I32(n as i32)],
        );
        let got = d.down::<u32>(o, 28 * n);
        for (j, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let (i, k) = (j / 28, j % 28);
            // a NaN result (f32 or a 16-bit half) need only be a NaN
            let nan32 =
                matches!(k, 9 | 27) && f32::from_bits(w).is_nan() && f32::from_bits(g).is_nan();
            let nan16 = matches!(k, 11..=16) && xs[i].is_nan() && {
                let (gh, wh) = (g as u16, w as u16);
                let is = |b: u16, bf: bool| {
                    if bf {
                        bf16::from_bits(b).is_nan()
                    } else {
                        f16::from_bits(b).is_nan()
                    }
                };
                is(gh, k >= 14) && is(wh, k >= 14)
            };
            // `.satfinite` keeps a NaN a NaN (the ISA names no payload; `.relu`'s is canonical)
            let sat_nan = k == 18
                && (0..2).all(|h| {
                    let (gh, wh) = ((g >> (16 * h)) as u16, (w >> (16 * h)) as u16);
                    gh == wh || (wh == 0x7fff && bf16::from_bits(gh).is_nan())
                });
            assert!(
                g == w || nan32 || nan16 || sat_nan,
                "{name}: input {i} (x {:e}, d {:e}, l {}) word {k}: got {g:#x}, want {w:#x}",
                xs[i],
                ds[i],
                ls[i]
            );
        }
    }
}

// ---------------------------------------------------------------- K9: CUB algorithms

#[test]
fn cub_segmented_warp_reduce_scans_and_argmax_match_host() {
    let m = module();
    let (blocks, ntiles) = (3usize, 4usize);
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3609);
        let x = rng.ints(blocks * ntiles * 128, -50, 50);
        let flags: Vec<i32> = (0..blocks * 128)
            .map(|_| (rng.below(5) == 0) as i32)
            .collect();
        let mut d = Dev::new(cfg);
        let (xi, fi) = (d.up(&x), d.up(&flags));
        let (seg, smax) = (d.unset(blocks * 128), d.unset(blocks * 128));
        let (srun, amax) = (d.unset(blocks * ntiles * 128), d.unset(2 * blocks));
        d.run(
            &m,
            "cub_more",
            (blocks as u32, 128, 0),
            &[
                Ptr(xi),
                Ptr(fi),
                Ptr(seg),
                Ptr(smax),
                Ptr(srun),
                Ptr(amax),
                I32(ntiles as i32),
            ],
        );
        let (gseg, gmax) = (
            d.down::<i32>(seg, blocks * 128),
            d.down::<i32>(smax, blocks * 128),
        );
        let (grun, gam) = (
            d.down::<i32>(srun, blocks * ntiles * 128),
            d.down::<i32>(amax, 2 * blocks),
        );
        for b in 0..blocks {
            let xb = &x[b * 128..][..128];
            for w in 0..4 {
                let mut lane = 0;
                while lane < 32 {
                    let mut end = lane + 1;
                    while end < 32 && flags[b * 128 + w * 32 + end] == 0 {
                        end += 1;
                    }
                    let s: i32 = xb[w * 32 + lane..w * 32 + end].iter().sum();
                    assert_eq!(
                        gseg[b * 128 + w * 32 + lane],
                        s,
                        "{name}: block {b} warp {w} head {lane}"
                    );
                    lane = end;
                }
            }
            let mut run = -1_000_000;
            for t in 0..128 {
                assert_eq!(gmax[b * 128 + t], run, "{name}: block {b} scan max {t}");
                run = run.max(xb[t]);
            }
            let mut pre = 0;
            for t in 0..ntiles * 128 {
                let idx = b * ntiles * 128 + t;
                assert_eq!(grun[idx], pre, "{name}: block {b} running scan {t}");
                pre += x[idx] & 0xff;
            }
            let best = (0..128).fold(0, |bi, t| if xb[t] > xb[bi] { t } else { bi });
            check(
                &format!("{name}: block {b} argmax"),
                &gam[2 * b..][..2],
                &[best as i32, xb[best]],
            );
        }
    }
}

// ---------------------------------------------------------------- K10: ldmatrix / stmatrix transposes

#[test]
fn ldmatrix_stmatrix_transposes_match_host() {
    let m = module();
    let tiles = 8usize;
    let mut rng = Rng(0x360a);
    let input: Vec<u16> = (0..tiles * 256).map(|_| rng.next() as u16).collect();
    let mut want = vec![0u16; tiles * 256];
    for t in 0..tiles {
        for r in 0..16 {
            for c in 0..16 {
                want[t * 256 + c * 16 + r] = input[t * 256 + r * 16 + c];
            }
        }
    }
    for (name, cfg) in configs() {
        let mut d = Dev::new(cfg);
        let ii = d.up(&input);
        let outs: Vec<u64> = (0..3)
            .map(|_| d.up(&vec![0x5A5Au16; tiles * 256]))
            .collect();
        d.run(
            &m,
            "ldst_matrix",
            ((tiles / 4) as u32, 128, 0),
            &[Ptr(outs[0]), Ptr(outs[1]), Ptr(outs[2]), Ptr(ii)],
        );
        for (k, &o) in outs.iter().enumerate() {
            check(
                &format!("{name}: transpose {k}"),
                &d.down::<u16>(o, tiles * 256),
                &want,
            );
        }
    }
}

// ---------------------------------------------------------------- K11: atomics

#[test]
fn inc_dec_packed_half_64bit_cas16_and_float_max_atomics_match_host() {
    let m = module();
    let n = 1000usize;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x360b);
        let x: Vec<i32> = (0..n).map(|_| rng.next() as i32).collect();
        let mut d = Dev::new(cfg);
        let xi = d.up(&x);
        let incdec = d.up(&[5u32, 20, 0, 1, 2, 3]);
        let (h2, b2) = (d.up(&[0u32; 8]), d.up(&[0u32; 8]));
        let mx = d.up(&[0u64, 7, u64::MAX, 1 << 40]);
        let mn = d.up(&[0i64, i64::MAX, -5, 1 << 40]);
        let cas = d.up(&[0xfff0u16; 16]);
        let fmax = d.up(&[0f32; 3]);
        d.run(
            &m,
            "atomics_mix",
            (8, 128, 0),
            &[
                Ptr(incdec),
                Ptr(h2),
                Ptr(b2),
                Ptr(mx),
                Ptr(mn),
                Ptr(cas),
                Ptr(fmax),
                Ptr(xi),
                I32(n as i32),
            ],
        );
        // inc: old >= lim ? 0 : old + 1; dec: old == 0 || old > lim ? lim : old - 1 (each a cycle)
        let (mut wi, init) = (vec![0u32; 6], [5u32, 20, 0, 1, 2, 3]);
        wi[0] = (init[0] + n as u32) % 101;
        wi[1] = (init[1] + 38 - (n as u32 % 38)) % 38;
        for r in 0..4 {
            let cnt = (0..n).filter(|i| i % 4 == r).count() as u32;
            wi[2 + r] = (init[2 + r] + cnt) % (r as u32 * 5 + 4);
        }
        check(&format!("{name}: inc/dec"), &d.down::<u32>(incdec, 6), &wi);
        let (mut wh, mut wb) = (vec![[0f64; 2]; 8], vec![[0f64; 2]; 8]);
        let (mut wmx, mut wmn) = (
            vec![0u64, 7, u64::MAX, 1 << 40],
            vec![0i64, i64::MAX, -5, 1 << 40],
        );
        let mut wc = vec![0xfff0u16; 16];
        let mut wf = [0f32; 3];
        for (i, &v) in x.iter().enumerate() {
            wh[i % 8][0] += (v % 8) as f64;
            wh[i % 8][1] += ((v >> 4) % 4) as f64;
            wb[i % 8][0] += (v % 2) as f64;
            wb[i % 8][1] -= ((v >> 6) % 2) as f64;
            wmx[i % 4] = wmx[i % 4].max(v as u32 as u64 * 0x1_0000_0001);
            wmn[i % 4] = wmn[i % 4].min(v as i64 * 1_000_003);
            wc[i % 16] = wc[i % 16].wrapping_add(1);
            wf[i % 3] = wf[i % 3].max(f32::from_bits(v as u32 & 0x3fff_ffff));
        }
        let pack16 = |w: &[f64; 2], bf: bool| -> u32 {
            if bf {
                bf16::from_f64(w[0]).to_bits() as u32
                    | (bf16::from_f64(w[1]).to_bits() as u32) << 16
            } else {
                f16::from_f64(w[0]).to_bits() as u32 | (f16::from_f64(w[1]).to_bits() as u32) << 16
            }
        };
        let wh: Vec<u32> = wh.iter().map(|w| pack16(w, false)).collect();
        let wb: Vec<u32> = wb.iter().map(|w| pack16(w, true)).collect();
        // -0 + ... sums that end at zero may be -0 in one order and +0 in another: compare values
        let norm = |v: u32| {
            v & !(((v & 0x7fff == 0) as u32) << 15) & !(((v >> 16 & 0x7fff == 0) as u32) << 31)
        };
        let gh: Vec<u32> = d.down::<u32>(h2, 8).into_iter().map(norm).collect();
        let gb: Vec<u32> = d.down::<u32>(b2, 8).into_iter().map(norm).collect();
        check(
            &format!("{name}: half2 sums"),
            &gh,
            &wh.into_iter().map(norm).collect::<Vec<_>>(),
        );
        check(
            &format!("{name}: bf16x2 sums"),
            &gb,
            &wb.into_iter().map(norm).collect::<Vec<_>>(),
        );
        check(&format!("{name}: u64 max"), &d.down::<u64>(mx, 4), &wmx);
        check(&format!("{name}: i64 min"), &d.down::<i64>(mn, 4), &wmn);
        check(&format!("{name}: cas16"), &d.down::<u16>(cas, 16), &wc);
        check(&format!("{name}: float max"), &d.down::<f32>(fmax, 3), &wf);
    }
}

// ---------------------------------------------------------------- K12: FlashAttention-3-style wgmma tile

#[test]
fn flash_attention3_wgmma_rs_transposed_v_matches_host() {
    let m = module();
    let (heads, l, dh) = (2usize, 192usize, 64usize);
    let scale = 1.0 / (dh as f32).sqrt();
    let mut rng = Rng(0x360c);
    let q = bf16s(&mut rng, heads * l * dh, -2.0, 2.0);
    let k = bf16s(&mut rng, heads * l * dh, -2.0, 2.0);
    let v = bf16s(&mut rng, heads * l * dh, -1.0, 1.0);
    let f = |x: u16| bf16::from_bits(x).to_f64();
    let mut want = vec![0.0f64; heads * l * dh];
    for h in 0..heads {
        let base = h * l * dh;
        for i in 0..l {
            let s: Vec<f64> = (0..l)
                .map(|j| {
                    (0..dh)
                        .map(|t| f(q[base + i * dh + t]) * f(k[base + j * dh + t]))
                        .sum::<f64>()
                        * scale as f64
                })
                .collect();
            let mx = s.iter().cloned().fold(f64::MIN, f64::max);
            let p: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
            let sum: f64 = p.iter().sum();
            for t in 0..dh {
                want[base + i * dh + t] =
                    (0..l).map(|j| p[j] * f(v[base + j * dh + t])).sum::<f64>() / sum;
            }
        }
    }
    for (name, cfg) in configs() {
        let mut d = Dev::new(cfg);
        let (qi, ki, vi) = (d.up(&q), d.up(&k), d.up(&v));
        let o = d.unset(heads * l * dh);
        let map = |addr: u64| {
            let t = TensorMap::tiled(
                TensorDataType::Bf16,
                addr,
                &[dh as u64, (heads * l) as u64],
                &[(dh * 2) as u64],
                &[64, 64],
                TensorSwizzle::B128,
            )
            .expect("map");
            ParamValue::Bytes(t.encode().to_vec())
        };
        let p = [
            map(qi),
            map(ki),
            map(vi),
            Ptr(o),
            I32(l as i32),
            F32(scale * std::f32::consts::LOG2_E),
        ];
        launch(
            &mut d,
            &m,
            "fa3_wgmma_fwd",
            [(l / 64) as u32, heads as u32, 1],
            128,
            &p,
        );
        let got = d.down::<f32>(o, heads * l * dh);
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g as f64 - w).abs() <= 6e-3,
                "{name}: O element {i} (head {}, row {}, col {}): got {g}, want {w}",
                i / (l * dh),
                (i / dh) % l,
                i % dh
            );
        }
    }
}

// ---------------------------------------------------------------- K13: warp-specialized GEMM, n = 24

#[test]
fn warp_specialized_tma_wgmma_n24_gemm_matches_host() {
    let m = module();
    let (mm, nn, kk) = (128usize, 72usize, 320usize);
    let mut rng = Rng(0x360d);
    let a = bf16s(&mut rng, mm * kk, -1.0, 1.0);
    let b = bf16s(&mut rng, nn * kk, -1.0, 1.0);
    let f = |x: u16| bf16::from_bits(x).to_f64();
    for (name, cfg) in configs() {
        let mut d = Dev::new(cfg);
        let (ai, bi) = (d.up(&a), d.up(&b));
        let c = d.unset(mm * nn);
        let map = |addr: u64, rows: usize, box_rows: u32| {
            let t = TensorMap::tiled(
                TensorDataType::Bf16,
                addr,
                &[kk as u64, rows as u64],
                &[(kk * 2) as u64],
                &[64, box_rows],
                TensorSwizzle::B128,
            )
            .expect("map");
            ParamValue::Bytes(t.encode().to_vec())
        };
        let p = [
            map(ai, mm, 64),
            map(bi, nn, 24),
            Ptr(c),
            I32(mm as i32),
            I32(nn as i32),
            I32(kk as i32),
        ];
        launch(
            &mut d,
            &m,
            "ws_gemm_n24",
            [(nn / 24) as u32, (mm / 64) as u32, 1],
            256,
            &p,
        );
        let got = d.down::<f32>(c, mm * nn);
        for r in 0..mm {
            for col in 0..nn {
                let w: f64 = (0..kk).map(|k| f(a[r * kk + k]) * f(b[col * kk + k])).sum();
                let g = got[r * nn + col] as f64;
                assert!(
                    (g - w).abs() <= 1e-4,
                    "{name}: C[{r}][{col}]: got {g}, want {w}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------- K14: DSMEM vector accesses

#[test]
fn dsmem_vector_loads_stores_and_address_classes_match_host() {
    let m = module();
    let blocks = 4usize;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x360e);
        let x: Vec<u32> = (0..blocks * 64).map(|_| rng.next() as u32).collect();
        let mut d = Dev::new(cfg);
        let xi = d.up(&x);
        let (out, info) = (d.unset(blocks * 64), d.unset(4 * blocks));
        d.run(
            &m,
            "dsmem_v4",
            (blocks as u32, 64, 0),
            &[Ptr(xi), Ptr(out), Ptr(info)],
        );
        let mut wo = vec![0u32; blocks * 64];
        let mut wi = vec![0u32; 4 * blocks];
        for b in 0..blocks {
            let peer = b ^ 1;
            // block b's inbox is written by its peer from block b's own words, read back through DSMEM
            let own = |i: usize| x[b * 64 + i].wrapping_mul(3).wrapping_add((b % 2) as u32);
            for t in 0..16 {
                let u = [own(4 * t), own(4 * t + 1), own(4 * t + 2), own(4 * t + 3)];
                wo[b * 64 + 4 * t..][..4].copy_from_slice(&[
                    u[0].wrapping_add(u[3]),
                    u[1] ^ u[2],
                    u[0],
                    u[3],
                ]);
            }
            wi[4 * b..][..4].copy_from_slice(&[1, 0, 1, peer as u32 % 2]);
        }
        check(
            &format!("{name}: inboxes"),
            &d.down::<u32>(out, blocks * 64),
            &wo,
        );
        check(
            &format!("{name}: address classes"),
            &d.down::<u32>(info, 4 * blocks),
            &wi,
        );
    }
}

// ---------------------------------------------------------------- K15: 4-bit integer mma.sync

#[test]
fn int4_mma_sync_tiles_match_host() {
    let m = module();
    for (name, cfg) in configs() {
        let mut rng = Rng(0x360f);
        let a: Vec<u8> = (0..16 * 64).map(|_| rng.next() as u8).collect();
        let b: Vec<u8> = (0..8 * 64).map(|_| rng.next() as u8).collect();
        // C near the s32 limits so that .satfinite clamps some sums and not others
        let c: Vec<i32> = (0..128)
            .map(|i| match i % 3 {
                0 => i32::MAX - rng.range(0, 4000),
                1 => i32::MIN + rng.range(0, 4000),
                _ => rng.range(-100_000, 100_000),
            })
            .collect();
        let nib = |v: &[u8], row: usize, k: usize, signed: bool| {
            let x = (v[row * 64 + k / 2] >> (4 * (k % 2))) & 15;
            if signed {
                ((x << 4) as i8 >> 4) as i64
            } else {
                x as i64
            }
        };
        let mut d = Dev::new(cfg);
        let (ai, bi, ci) = (d.up(&a), d.up(&b), d.up(&c));
        let (d64, d32, d8) = (d.unset(128), d.unset(128), d.unset(64));
        d.run(
            &m,
            "int4_mma",
            (1, 32, 0),
            &[Ptr(d64), Ptr(d32), Ptr(d8), Ptr(ai), Ptr(bi), Ptr(ci)],
        );
        let dot = |r: usize, n: usize, ks: std::ops::Range<usize>, sa: bool, sb: bool| -> i64 {
            ks.map(|k| nib(&a, r, k, sa) * nib(&b, n, k, sb)).sum()
        };
        let w64: Vec<i32> = (0..128)
            .map(|i| dot(i / 8, i % 8, 0..128, true, true) as i32)
            .collect();
        let w32: Vec<i32> = (0..128)
            .map(|i| {
                let s = c[i] as i64 + dot(i / 8, i % 8, 0..32, false, true);
                s.clamp(i32::MIN as i64, i32::MAX as i64) as i32
            })
            .collect();
        let w8: Vec<i32> = (0..64)
            .map(|i| dot(i / 8, i % 8, 32..64, true, false) as i32)
            .collect();
        check(
            &format!("{name}: m16n8k64 s4.s4"),
            &d.down::<i32>(d64, 128),
            &w64,
        );
        check(
            &format!("{name}: m16n8k32 u4.s4 satfinite"),
            &d.down::<i32>(d32, 128),
            &w32,
        );
        check(
            &format!("{name}: m8n8k32 s4.u4"),
            &d.down::<i32>(d8, 64),
            &w8,
        );
    }
}

// ---------------------------------------------------------------- K16: single-bit mma.sync

#[test]
fn b1_mma_sync_hamming_tiles_match_host() {
    let m = module();
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3610);
        let a: Vec<u32> = (0..16 * 8).map(|_| rng.next() as u32).collect();
        let mut b: Vec<u32> = (0..8 * 8).map(|_| rng.next() as u32).collect();
        b[0..8].copy_from_slice(&a[0..8]); // one distance of zero
        let c = rng.ints(128, -1000, 1000);
        let mut d = Dev::new(cfg);
        let (ai, bi, ci) = (d.up(&a), d.up(&b), d.up(&c));
        let (dx, da, d8) = (d.unset(128), d.unset(128), d.unset(64));
        d.run(
            &m,
            "b1_mma",
            (1, 32, 0),
            &[Ptr(dx), Ptr(da), Ptr(d8), Ptr(ai), Ptr(bi), Ptr(ci)],
        );
        let pop = |r: usize, n: usize, words: std::ops::Range<usize>, xor: bool| -> i32 {
            words
                .map(|w| {
                    let (x, y) = (a[r * 8 + w], b[n * 8 + w]);
                    (if xor { x ^ y } else { x & y }).count_ones() as i32
                })
                .sum()
        };
        let wx: Vec<i32> = (0..128)
            .map(|i| c[i] + pop(i / 8, i % 8, 0..8, true))
            .collect();
        let wa: Vec<i32> = (0..128).map(|i| pop(i / 8, i % 8, 0..4, false)).collect();
        let w8: Vec<i32> = (0..64).map(|i| pop(i / 8, i % 8, 4..8, true)).collect();
        check(
            &format!("{name}: m16n8k256 xor.popc"),
            &d.down::<i32>(dx, 128),
            &wx,
        );
        check(
            &format!("{name}: m16n8k128 and.popc"),
            &d.down::<i32>(da, 128),
            &wa,
        );
        check(
            &format!("{name}: m8n8k128 xor.popc"),
            &d.down::<i32>(d8, 64),
            &w8,
        );
    }
}
