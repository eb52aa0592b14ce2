//! nvcc round 35 (fixture `round35.cu` → `round35.ptx`, `-arch=sm_90a -O3`): llm.c-style layernorm
//! (float4 `__ldcs`/`__stcs`, `cg::reduce`), online softmax, bf16 GELU forward/backward through 16-byte
//! packs, AdamW, a ggml-style q8 dot product (`__dp4a`, half scales), packed byte SIMD intrinsics,
//! hand-written PTX integer forms (`bmsk`, `szext`, `shf` clamp/wrap, `bfind.shiftamt`, `prmt` modes,
//! `cvt.pack.sat`, `lop3`) and float forms (`tanh.approx`, `min/max.xorsign.abs`, `ex2.approx.ftz.bf16x2`,
//! `fma.rn.relu.f16`), cuda-samples bitonic sort, histogram256 and Walsh transform, and warp forms
//! (`redux.sync`, `vote.sync.uni`, `elect.sync`, `clock64`, `%globaltimer`). Every output element is
//! checked against a host reference on seeded random inputs, under round-robin, lockstep and random
//! schedules, with race detection on.

mod common;

use common::{check, configs, Dev, Rng};
use half::{bf16, f16};
use prism_runtime::emu::*;
use ParamValue::{Ptr, F32, I32};

fn module() -> Module {
    common::fixture_module("round35.ptx")
}

/// Sentinel for outputs: an element the kernel should have written but did not shows as this.
const UNSET: u32 = common::UNSET_BITS;

/// Float comparison with an absolute and a relative tolerance.
fn close(what: &str, got: &[f32], want: &[f64], abs: f64, rel: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g as f64 - w).abs() <= abs + rel * w.abs();
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

fn floats(rng: &mut Rng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..n)
        .map(|_| lo + (hi - lo) * (rng.below(1 << 24) as f32 / (1 << 24) as f32))
        .collect()
}

fn words(rng: &mut Rng, n: usize) -> Vec<u32> {
    (0..n).map(|_| rng.next() as u32).collect()
}

// ---------------------------------------------------------------- K1: layernorm forward

#[test]
fn layernorm_forward_x128_matches_host() {
    let m = module();
    let (n, c) = (10usize, 256usize);
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3501);
        let x = floats(&mut rng, n * c, -3.0, 3.0);
        let w = floats(&mut rng, c, 0.5, 1.5);
        let b = floats(&mut rng, c, -0.5, 0.5);
        let mut d = Dev::new(cfg);
        let (xi, wi, bi) = (d.up(&x), d.up(&w), d.up(&b));
        let (o, mo, ro) = (d.unset(n * c), d.unset(n), d.unset(n));
        // 4 warps a block, 3 blocks: rows 10 and 11 exit early
        let p = [
            Ptr(o),
            Ptr(mo),
            Ptr(ro),
            Ptr(xi),
            Ptr(wi),
            Ptr(bi),
            I32(n as i32),
            I32(c as i32),
        ];
        d.run(&m, "ln_fwd_x128", (3, 128, 0), &p);
        let (mut wo, mut wm, mut wr) = (vec![0.0; n * c], vec![0.0; n], vec![0.0; n]);
        for r in 0..n {
            let xs: Vec<f64> = x[r * c..][..c].iter().map(|&v| v as f64).collect();
            let mean = xs.iter().sum::<f64>() / c as f64;
            let var = xs.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / c as f64;
            let s = 1.0 / (var + 1e-5).sqrt();
            for k in 0..c {
                wo[r * c + k] = s * (xs[k] - mean) * w[k] as f64 + b[k] as f64;
            }
            (wm[r], wr[r]) = (mean, s);
        }
        close(
            &format!("{name}: out"),
            &d.down::<f32>(o, n * c),
            &wo,
            1e-4,
            1e-4,
        );
        close(
            &format!("{name}: mean"),
            &d.down::<f32>(mo, n),
            &wm,
            1e-5,
            1e-4,
        );
        close(
            &format!("{name}: rstd"),
            &d.down::<f32>(ro, n),
            &wr,
            0.0,
            1e-5,
        );
    }
}

// ---------------------------------------------------------------- K2: online softmax

#[test]
fn softmax_online_matches_host() {
    let m = module();
    let (n, c) = (7usize, 200usize);
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3502);
        let x = floats(&mut rng, n * c, -20.0, 20.0);
        let mut d = Dev::new(cfg);
        let xi = d.up(&x);
        let o = d.unset(n * c);
        d.run(
            &m,
            "softmax_online",
            (2, 128, 0),
            &[Ptr(o), Ptr(xi), I32(n as i32), I32(c as i32)],
        );
        let mut want = vec![0.0; n * c];
        for r in 0..n {
            let xs = &x[r * c..][..c];
            let mx = xs.iter().fold(f64::MIN, |a, &v| a.max(v as f64));
            let sum: f64 = xs.iter().map(|&v| (v as f64 - mx).exp()).sum();
            for k in 0..c {
                want[r * c + k] = (xs[k] as f64 - mx).exp() / sum;
            }
        }
        close(
            &format!("{name}: softmax"),
            &d.down::<f32>(o, n * c),
            &want,
            1e-9,
            1e-5,
        );
    }
}

// ---------------------------------------------------------------- K3: GELU bf16

/// `a` and `b` are the same bf16 or neighbours (tanhf and the products round differently from f64).
fn bf16_near(what: &str, got: &[u16], want: &[f64]) {
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let gv = bf16::from_bits(g).to_f64();
        let ulp = (bf16::from_f64(w).to_f64().abs() * 2f64.powi(-7)).max(1e-30);
        assert!(
            (gv - w).abs() <= ulp * 1.01,
            "{what}: element {i}: got {gv}, want {w}"
        );
    }
}

#[test]
fn gelu_bf16_forward_backward_matches_host() {
    let m = module();
    let n = 8 * 200;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3503);
        let x: Vec<u16> = floats(&mut rng, n, -4.0, 4.0)
            .iter()
            .map(|&v| bf16::from_f32(v).to_bits())
            .collect();
        let g: Vec<u16> = floats(&mut rng, n, -2.0, 2.0)
            .iter()
            .map(|&v| bf16::from_f32(v).to_bits())
            .collect();
        let mut d = Dev::new(cfg);
        let (xi, gi) = (d.up(&x), d.up(&g));
        let (o, di) = (d.up(&vec![0x5A5Au16; n]), d.up(&vec![0x5A5Au16; n]));
        d.run(
            &m,
            "gelu_bf16",
            (2, 128, 0),
            &[Ptr(o), Ptr(di), Ptr(xi), Ptr(gi), I32(n as i32)],
        );
        let s = 0.7978845608f64;
        let (mut wo, mut wd) = (vec![0.0; n], vec![0.0; n]);
        for i in 0..n {
            let v = bf16::from_bits(x[i]).to_f64();
            let t = (s * (v + 0.044715 * v * v * v)).tanh();
            wo[i] = 0.5 * v * (1.0 + t);
            let lg = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * s * (1.0 + 3.0 * 0.044715 * v * v);
            wd[i] = lg * bf16::from_bits(g[i]).to_f64();
        }
        bf16_near(&format!("{name}: gelu"), &d.down::<u16>(o, n), &wo);
        bf16_near(&format!("{name}: dgelu"), &d.down::<u16>(di, n), &wd);
    }
}

// ---------------------------------------------------------------- K4: AdamW

#[test]
fn adamw_matches_host() {
    let m = module();
    let n = 1000;
    let (lr, b1, b2, b1c, b2c, eps, wd) = (
        1e-3f32, 0.9f32, 0.999f32, 0.271f32, 0.0297f32, 1e-8f32, 0.01f32,
    );
    for (name, cfg) in configs().into_iter().take(3) {
        let mut rng = Rng(0x3504);
        let p = floats(&mut rng, n, -1.0, 1.0);
        let mm = floats(&mut rng, n, -0.1, 0.1);
        let v = floats(&mut rng, n, 0.0, 0.01);
        let g = floats(&mut rng, n, -0.5, 0.5);
        let mut d = Dev::new(cfg);
        let (pi, mi, vi, gi) = (d.up(&p), d.up(&mm), d.up(&v), d.up(&g));
        let args = [
            Ptr(pi),
            Ptr(mi),
            Ptr(vi),
            Ptr(gi),
            I32(n as i32),
            F32(lr),
            F32(b1),
            F32(b2),
            F32(b1c),
            F32(b2c),
            F32(eps),
            F32(wd),
        ];
        d.run(&m, "adamw", (4, 256, 0), &args);
        let (mut wp, mut wm, mut wv) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        for i in 0..n {
            let gr = g[i] as f64;
            let m1 = b1 as f64 * (mm[i] as f64 - gr) + gr;
            let v1 = b2 as f64 * (v[i] as f64 - gr * gr) + gr * gr;
            let (mh, vh) = (m1 / b1c as f64, v1 / b2c as f64);
            wp[i] =
                p[i] as f64 - lr as f64 * (mh / (vh.sqrt() + eps as f64) + wd as f64 * p[i] as f64);
            (wm[i], wv[i]) = (m1, v1);
        }
        close(
            &format!("{name}: p"),
            &d.down::<f32>(pi, n),
            &wp,
            1e-6,
            1e-5,
        );
        close(
            &format!("{name}: m"),
            &d.down::<f32>(mi, n),
            &wm,
            1e-7,
            1e-5,
        );
        close(
            &format!("{name}: v"),
            &d.down::<f32>(vi, n),
            &wv,
            1e-8,
            1e-5,
        );
    }
}

// ---------------------------------------------------------------- K5: q8 dot + byte SIMD

#[test]
fn q8_dot_matches_host() {
    let m = module();
    let (rows, nb) = (4usize, 9usize);
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3505);
        // block_q8 = { half d; int8 qs[32] }: 34 bytes, 2-byte aligned
        let block = |rng: &mut Rng| -> (f64, Vec<i8>, Vec<u8>) {
            let dv = f16::from_f32(0.01 + rng.below(1000) as f32 / 20000.0);
            let qs: Vec<i8> = (0..32).map(|_| rng.range(-128, 128) as i8).collect();
            let mut b = dv.to_le_bytes().to_vec();
            b.extend(qs.iter().map(|&q| q as u8));
            (dv.to_f64(), qs, b)
        };
        let xs: Vec<_> = (0..rows * nb).map(|_| block(&mut rng)).collect();
        let ys: Vec<_> = (0..nb).map(|_| block(&mut rng)).collect();
        let mut d = Dev::new(cfg);
        let xb: Vec<u8> = xs.iter().flat_map(|b| b.2.clone()).collect();
        let yb: Vec<u8> = ys.iter().flat_map(|b| b.2.clone()).collect();
        let (xi, yi) = (d.up(&xb), d.up(&yb));
        let (o, s) = (d.unset(rows), d.unset(rows));
        d.run(
            &m,
            "q8_dot",
            (rows as u32, 32, 0),
            &[Ptr(o), Ptr(s), Ptr(xi), Ptr(yi), I32(nb as i32)],
        );
        let (mut wo, mut ws) = (vec![0.0; rows], vec![0i32; rows]);
        for r in 0..rows {
            for b in 0..nb {
                let (dx, qx, _) = &xs[r * nb + b];
                let (dy, qy, _) = &ys[b];
                let dot: i32 = qx.iter().zip(qy).map(|(&a, &b)| a as i32 * b as i32).sum();
                ws[r] += dot;
                wo[r] += dx * dy * dot as f64;
            }
        }
        check(&format!("{name}: isum"), &d.down::<i32>(s, rows), &ws);
        close(
            &format!("{name}: dot"),
            &d.down::<f32>(o, rows),
            &wo,
            1e-3,
            1e-4,
        );
    }
}

fn bytes(x: u32) -> [u8; 4] {
    x.to_le_bytes()
}

fn dp2(a: u32, b: u32, c: u32, hi: bool, signed: bool) -> u32 {
    let bb = bytes(b);
    let (b0, b1) = if hi { (bb[2], bb[3]) } else { (bb[0], bb[1]) };
    let (h0, h1) = (a & 0xffff, a >> 16);
    let v = if signed {
        (h0 as u16 as i16 as i32) * (b0 as i8 as i32)
            + (h1 as u16 as i16 as i32) * (b1 as i8 as i32)
    } else {
        (h0 * b0 as u32 + h1 * b1 as u32) as i32
    };
    c.wrapping_add(v as u32)
}

fn simd_ref(x: u32, y: u32) -> [u32; 8] {
    let (xb, yb) = (bytes(x), bytes(y));
    let per = |f: &dyn Fn(u8, u8) -> u8| u32::from_le_bytes([0, 1, 2, 3].map(|k| f(xb[k], yb[k])));
    let absu = per(&|a, b| a.abs_diff(b));
    let abss = per(&|a, b| (a as i8 as i32 - b as i8 as i32).unsigned_abs() as u8);
    let subss = per(&|a, b| (a as i8).saturating_sub(b as i8) as u8);
    let sel = y & 0x7777;
    let all = [xb, yb].concat();
    let perm = u32::from_le_bytes([0, 1, 2, 3].map(|k| all[((sel >> (4 * k)) & 7) as usize]));
    let dp4s: i32 = (0..4)
        .map(|k| xb[k] as i8 as i32 * yb[k] as i8 as i32)
        .sum();
    let dp4u: u32 = (0..4).map(|k| xb[k] as u32 * yb[k] as u32).sum();
    let sad: u32 = (0..4).map(|k| xb[k].abs_diff(yb[k]) as u32).sum();
    let maxs = per(&|a, b| (a as i8).max(b as i8) as u8);
    let minu = per(&|a, b| a.min(b));
    [
        absu ^ abss,
        subss,
        perm,
        (dp4s.wrapping_add(x as i32)) as u32,
        dp4u.wrapping_add(y),
        dp2(x, y, 7, false, true),
        dp2(x, y, 3, true, false),
        sad.wrapping_add(maxs.wrapping_mul(3)).wrapping_add(minu),
    ]
}

#[test]
fn simd_byte_intrinsics_match_host() {
    let m = module();
    let n = 300;
    for (name, cfg) in configs().into_iter().take(3) {
        let mut rng = Rng(0x3506);
        let (a, b) = (words(&mut rng, n), words(&mut rng, n));
        let mut d = Dev::new(cfg);
        let (ai, bi) = (d.up(&a), d.up(&b));
        let o = d.unset(n * 8);
        d.run(
            &m,
            "simd_bytes",
            (3, 128, 0),
            &[Ptr(o), Ptr(ai), Ptr(bi), I32(n as i32)],
        );
        let want: Vec<u32> = (0..n).flat_map(|i| simd_ref(a[i], b[i])).collect();
        check(&format!("{name}: simd"), &d.down::<u32>(o, n * 8), &want);
    }
}

// ---------------------------------------------------------------- K6: PTX integer forms

fn prmt_mode(x: u32, y: u32, c: u32, mode: &str) -> u32 {
    let all = [bytes(x), bytes(y)].concat();
    let s = (c & 3) as usize;
    // PTX ISA, prmt: byte d.b0..d.b3 for each mode and selector c[1:0]
    let idx: [usize; 4] = match mode {
        "f4e" => [s, s + 1, s + 2, s + 3],
        "b4e" => [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]][s],
        "rc8" => [s; 4],
        "ecl" => [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]][s],
        "ecr" => [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]][s],
        "rc16" => [[0, 1, 0, 1], [2, 3, 2, 3]][s & 1],
        _ => unreachable!(),
    };
    u32::from_le_bytes(idx.map(|k| all[k % 8]))
}

fn int_ref(x: u32, y: u32) -> [u32; 16] {
    let sh = y & 63;
    let bmsk = |a: u32, b: u32| ((if b >= 32 { u64::MAX } else { (1u64 << b) - 1 }) << a) as u32;
    let (ca, cb) = ((x & 31).min(32), sh.min(32));
    let (wa, wb) = (x & 31, sh & 31);
    let szext = |a: u32, b: u32, signed: bool| -> u32 {
        if b == 0 {
            0
        } else if b >= 32 {
            a
        } else if signed {
            (((a << (32 - b)) as i32) >> (32 - b)) as u32
        } else {
            a & ((1 << b) - 1)
        }
    };
    let wide = ((y as u64) << 32) | x as u64;
    let nl = sh.min(32);
    let shl = ((wide << nl) >> 32) as u32;
    let shr = (wide >> (sh & 31)) as u32;
    let sx = x as i32;
    let nonsign = if sx < 0 { !x } else { x };
    let bfs = if nonsign == 0 {
        u32::MAX
    } else {
        nonsign.leading_zeros()
    };
    let yv = y >> (x & 31);
    let bfu = if yv == 0 {
        u32::MAX
    } else {
        31 - yv.leading_zeros()
    };
    let sat = |v: u32| (v as i32).clamp(0, 255) as u32;
    let pack = ((x ^ y) << 16) | (sat(x) << 8) | sat(y);
    [
        bmsk(ca, cb),
        bmsk(wa, wb),
        szext(x, sh.min(32), true),
        szext(x, sh & 31, false),
        shl,
        shr,
        bfs,
        bfu,
        prmt_mode(x, y, sh, "f4e"),
        prmt_mode(x, y, sh, "b4e"),
        prmt_mode(x, y, sh, "rc8"),
        prmt_mode(x, y, sh, "ecl"),
        prmt_mode(x, y, sh, "ecr"),
        prmt_mode(x, y, sh, "rc16"),
        pack,
        x ^ y ^ sh,
    ]
}

#[test]
fn ptx_integer_forms_match_host() {
    let m = module();
    let n = 400;
    for (name, cfg) in configs().into_iter().take(3) {
        let mut rng = Rng(0x3507);
        let mut a = words(&mut rng, n);
        let b = words(&mut rng, n);
        // small positive and negative values reach the saturation-free and sign cases of cvt.pack/bfind
        for (i, v) in a.iter_mut().enumerate().step_by(5) {
            *v = (*v % 600).wrapping_sub(300) ^ (i as u32 & 1);
        }
        let mut d = Dev::new(cfg);
        let (ai, bi) = (d.up(&a), d.up(&b));
        let o = d.unset(n * 16);
        d.run(
            &m,
            "ptx_int_forms",
            (4, 128, 0),
            &[Ptr(o), Ptr(ai), Ptr(bi), I32(n as i32)],
        );
        let got = d.down::<u32>(o, n * 16);
        for i in 0..n {
            let want = int_ref(a[i], b[i]);
            for k in 0..16 {
                assert_eq!(
                    got[i * 16 + k],
                    want[k],
                    "{name}: thread {i} form {k} (x={:#x} y={:#x})",
                    a[i],
                    b[i]
                );
            }
        }
    }
}

// ---------------------------------------------------------------- K7: PTX float forms

fn xorsign(a: f32, b: f32, min: bool) -> f32 {
    let m = if min {
        a.abs().min(b.abs())
    } else {
        a.abs().max(b.abs())
    };
    let neg = a.is_sign_negative() != b.is_sign_negative();
    if neg {
        -m
    } else {
        m
    }
}

/// `got` is 2^x correctly rounded to bf16 or one of its neighbours (ex2.approx).
fn ex2_bf16_ok(got: u16, x: u16) -> bool {
    let want = bf16::from_f64(2f64.powf(bf16::from_bits(x).to_f64())).to_bits();
    got.abs_diff(want) <= 1
}

#[test]
fn ptx_float_forms_match_host() {
    let m = module();
    let n = 300;
    for (name, cfg) in configs().into_iter().take(3) {
        let mut rng = Rng(0x3508);
        let a = floats(&mut rng, n, -8.0, 8.0);
        let b = floats(&mut rng, n, -8.0, 8.0);
        let mut d = Dev::new(cfg);
        let (ai, bi) = (d.up(&a), d.up(&b));
        let (o, bits) = (d.unset(n * 4), d.unset(n * 3));
        d.run(
            &m,
            "ptx_float_forms",
            (3, 128, 0),
            &[Ptr(o), Ptr(bits), Ptr(ai), Ptr(bi), I32(n as i32)],
        );
        let got = d.down::<f32>(o, n * 4);
        let gb = d.down::<u32>(bits, n * 3);
        for i in 0..n {
            let (x, y) = (a[i], b[i]);
            let w = format!("{name}: thread {i} (x={x} y={y})");
            // tanh.approx: maximum relative error 2^-10.987 (PTX ISA)
            let t = (x as f64).tanh();
            assert!(
                (got[i * 4] as f64 - t).abs() <= t.abs() * 2f64.powf(-10.9),
                "{w}: tanh {}",
                got[i * 4]
            );
            assert_eq!(
                got[i * 4 + 1].to_bits(),
                xorsign(x, y, true).to_bits(),
                "{w}: min.xorsign"
            );
            assert_eq!(
                got[i * 4 + 2].to_bits(),
                xorsign(x, y, false).to_bits(),
                "{w}: max.xorsign"
            );
            assert_eq!(got[i * 4 + 3], x, "{w}: copy");
            let hb = ((bf16::from_f32(y * 0.25).to_bits() as u32) << 16)
                | bf16::from_f32(x * 0.25).to_bits() as u32;
            assert_eq!(gb[i * 3 + 1], hb, "{w}: bf16x2 pack");
            let e = gb[i * 3];
            assert!(ex2_bf16_ok(e as u16, hb as u16), "{w}: ex2 lo {e:#x}");
            assert!(
                ex2_bf16_ok((e >> 16) as u16, (hb >> 16) as u16),
                "{w}: ex2 hi {e:#x}"
            );
            let (hx, hy) = (f16::from_f32(x).to_f64(), f16::from_f32(y).to_f64());
            let f = f16::from_f64(hx * hy + 0.25);
            let relu = if f.to_f64() < 0.0 { 0 } else { f.to_bits() };
            // the store is 16 bits wide: the upper half keeps the sentinel
            assert_eq!(
                gb[i * 3 + 2],
                (UNSET & 0xffff_0000) | relu as u32,
                "{w}: fma.relu.f16"
            );
        }
    }
}

// ---------------------------------------------------------------- K8: bitonic sort in shared memory

#[test]
fn bitonic_shared_sort_matches_host() {
    let m = module();
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3509);
        // distinct keys (an odd multiplier and an xor are bijections), so the value order is defined
        let salt = rng.next() as u32;
        let k: Vec<u32> = (0..2048u32)
            .map(|i| {
                i.wrapping_mul(0x9E37_79B1)
                    .wrapping_add(rng.below(1 << 20) as u32 * 2048)
                    ^ salt
            })
            .collect();
        let mut k = k;
        for (i, v) in k.iter_mut().enumerate() {
            *v = (*v & !2047) | i as u32; // low 11 bits make every key distinct
        }
        let v = words(&mut rng, 2048);
        for dir in [1u32, 0] {
            let mut d = Dev::new(cfg.clone());
            let (ki, vi) = (d.up(&k), d.up(&v));
            let (ko, vo) = (d.unset(2048), d.unset(2048));
            d.run(
                &m,
                "bitonic_shared",
                (2, 512, 0),
                &[Ptr(ko), Ptr(vo), Ptr(ki), Ptr(vi), I32(dir as i32)],
            );
            let (mut wk, mut wv) = (Vec::new(), Vec::new());
            for b in 0..2 {
                let mut pairs: Vec<(u32, u32)> = (0..1024)
                    .map(|i| (k[b * 1024 + i], v[b * 1024 + i]))
                    .collect();
                pairs.sort();
                if dir == 0 {
                    pairs.reverse();
                }
                wk.extend(pairs.iter().map(|p| p.0));
                wv.extend(pairs.iter().map(|p| p.1));
            }
            check(
                &format!("{name} dir {dir}: keys"),
                &d.down::<u32>(ko, 2048),
                &wk,
            );
            check(
                &format!("{name} dir {dir}: values"),
                &d.down::<u32>(vo, 2048),
                &wv,
            );
        }
    }
}

// ---------------------------------------------------------------- K9: histogram256

#[test]
fn histogram256_shared_atomics_match_host() {
    let m = module();
    let n = 5003;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x350A);
        // skewed bytes: many collisions in the same bins
        let data: Vec<u32> = (0..n)
            .map(|_| {
                let r = rng.next() as u32;
                if r & 3 == 0 {
                    r & 0x0f0f_0f0f
                } else {
                    r
                }
            })
            .collect();
        let mut d = Dev::new(cfg);
        let di = d.up(&data);
        let h = d.up(&vec![0u32; 256]);
        d.run(&m, "hist256", (3, 192, 0), &[Ptr(h), Ptr(di), I32(n)]);
        let mut want = vec![0u32; 256];
        for w in &data {
            for b in bytes(*w) {
                want[b as usize] += 1;
            }
        }
        check(&format!("{name}: hist"), &d.down::<u32>(h, 256), &want);
    }
}

// ---------------------------------------------------------------- K10: fast Walsh transform

#[test]
fn fast_walsh_transform_matches_host() {
    let m = module();
    let log2n = 10;
    let nn = 1usize << log2n;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x350B);
        let x = rng.ints(2 * nn, -1000, 1000);
        let mut d = Dev::new(cfg);
        let xi = d.up(&x);
        d.run(
            &m,
            "fwt_shared",
            (2, 256, 4 * nn as u32),
            &[Ptr(xi), I32(log2n)],
        );
        let mut want = x.clone();
        for blk in want.chunks_mut(nn) {
            // Hadamard order: H_N x, which every butterfly order yields
            let mut h = 1;
            while h < nn {
                for i in (0..nn).step_by(2 * h) {
                    for j in i..i + h {
                        let (a, b) = (blk[j], blk[j + h]);
                        (blk[j], blk[j + h]) = (a + b, a - b);
                    }
                }
                h *= 2;
            }
        }
        check(&format!("{name}: fwt"), &d.down::<i32>(xi, 2 * nn), &want);
    }
}

// ---------------------------------------------------------------- K11: warp forms

#[test]
fn warp_reduce_vote_elect_timers_match_host() {
    let m = module();
    let (blocks, threads) = (2usize, 64usize);
    let total = blocks * threads;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x350C);
        let mut a = words(&mut rng, total);
        // warp 1: top bits all clear, warp 2: all set (vote.uni true); warps 0, 3 mixed
        for (i, v) in a.iter_mut().enumerate() {
            match i / 32 {
                1 => *v &= 0x7fff_ffff,
                2 => *v |= 0x8000_0000,
                _ => {}
            }
        }
        let mut d = Dev::new(cfg);
        let ai = d.up(&a);
        let o = d.unset(total * 8);
        d.run(
            &m,
            "warp_forms",
            (blocks as u32, threads as u32, 0),
            &[Ptr(o), Ptr(ai)],
        );
        let got = d.down::<u32>(o, total * 8);
        for w in 0..total / 32 {
            let xs = &a[w * 32..][..32];
            let odd: u32 = (0..32).filter(|&l| xs[l] & 1 == 1).map(|l| 1u32 << l).sum();
            let mn = *xs.iter().min().unwrap();
            let mx = xs.iter().map(|&v| v as i32).max().unwrap() as u32;
            let and = xs.iter().fold(!0u32, |s, &v| s & (v | 0x8000_0000));
            let or = xs.iter().fold(0u32, |s, &v| s | (v & 0xff));
            let top = xs.iter().filter(|&&v| v >> 31 == 1).count();
            let uni = (top == 0 || top == 32) as u32;
            for l in 0..32 {
                let g = &got[(w * 32 + l) * 8..][..8];
                let what = format!("{name}: warp {w} lane {l}");
                // odd lanes store __activemask() (the odd lanes), even lanes ~__activemask() (~even = odd)
                let want0 = odd;
                let h = l / 16;
                let half: u32 = xs[h * 16..][..16]
                    .iter()
                    .fold(0u32, |s, &v| s.wrapping_add(v & 0xffff));
                let want = [want0, mn, mx, and ^ or, uni, (l == 0) as u32, 3, half];
                check(&what, g, &want);
            }
        }
    }
}

// ---------------------------------------------------------------- K12: cache hints + packed approx math

/// `got` (16 bits) is within `ulps` of `want` rounded to the format (`bf` for bf16, else f16).
fn near16(got: u16, want: f64, ulps: u16, bf: bool) -> bool {
    let w = if bf {
        bf16::from_f64(want).to_bits()
    } else {
        f16::from_f64(want).to_bits()
    };
    // same sign: bit patterns order like magnitudes
    (got ^ w) & 0x8000 == 0 && got.abs_diff(w) <= ulps
        || (want.abs() < 1e-4 && (got & 0x7fff) < 0x0400)
}

#[test]
fn cache_hint_loads_stores_and_packed_approx_math_match_host() {
    let m = module();
    let n = 200;
    for (name, cfg) in configs().into_iter().take(3) {
        let mut rng = Rng(0x350D);
        let x = floats(&mut rng, 4 * n, -2.0, 2.0);
        let mut d = Dev::new(cfg);
        let xi = d.up(&x);
        let (o, hb) = (d.unset(4 * n), d.unset(5 * n));
        d.run(
            &m,
            "cache_hint_forms",
            (2, 128, 0),
            &[Ptr(o), Ptr(hb), Ptr(xi), I32(n as i32)],
        );
        let got = d.down::<f32>(o, 4 * n);
        let bits = d.down::<u32>(hb, 5 * n);
        for i in 0..n {
            let (a, b) = (&x[4 * i..][..4], &x[4 * (n - 1 - i)..][..4]);
            let want = [a[0] + b[3], a[1] * b[2], a[2] - b[1], a[0] + b[0]];
            check(
                &format!("{name}: thread {i} loads"),
                &got[4 * i..][..4],
                &want,
            );
            let w = format!("{name}: thread {i}");
            let h = bits[5 * i];
            let hv = [f16::from_f32(a[0] * 0.5), f16::from_f32(a[1] * 0.5)];
            assert_eq!(
                h,
                hv[0].to_bits() as u32 | (hv[1].to_bits() as u32) << 16,
                "{w}: half2 pack"
            );
            for (k, sh) in [0, 16].into_iter().enumerate() {
                let v = hv[k].to_f64();
                let (t, e) = (
                    (bits[5 * i + 1] >> sh) as u16,
                    (bits[5 * i + 2] >> sh) as u16,
                );
                assert!(
                    near16(t, v.tanh(), 2, false),
                    "{w}: tanh.approx.f16x2[{k}] {t:#x} for {v}"
                );
                assert!(
                    near16(e, v.exp2(), 2, false),
                    "{w}: ex2.approx.f16x2[{k}] {e:#x} for {v}"
                );
            }
            let bb = [bf16::from_f32(a[2]), bf16::from_f32(a[3])];
            assert_eq!(
                bits[5 * i + 3],
                bb[0].to_bits() as u32 | (bb[1].to_bits() as u32) << 16,
                "{w}: bf16x2"
            );
            let relu = |v: bf16| {
                let r = bf16::from_f64(1.0 - v.to_f64() * v.to_f64());
                if r.to_f64() < 0.0 {
                    0
                } else {
                    r.to_bits() as u32
                }
            };
            assert_eq!(
                bits[5 * i + 4],
                relu(bb[0]) | relu(bb[1]) << 16,
                "{w}: fma.rn.relu.bf16x2"
            );
        }
    }
}

// ---------------------------------------------------------------- K13: flash-attention-lite

#[test]
fn flash_attention_lite_mma_ldmatrix_matches_host() {
    let m = module();
    let heads = 3usize;
    let scale = 0.25f32;
    let scale_log2 = scale * std::f32::consts::LOG2_E;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x350E);
        let mut gen = |n: usize| -> Vec<u16> {
            floats(&mut rng, n, -1.0, 1.0)
                .iter()
                .map(|&v| bf16::from_f32(v).to_bits())
                .collect()
        };
        let (q, k, v) = (gen(heads * 256), gen(heads * 512), gen(heads * 256));
        let mut d = Dev::new(cfg);
        let (qi, ki, vi) = (d.up(&q), d.up(&k), d.up(&v));
        let o = d.unset(heads * 128);
        d.run(
            &m,
            "flash_lite",
            (heads as u32, 32, 0),
            &[Ptr(o), Ptr(qi), Ptr(ki), Ptr(vi), F32(scale_log2)],
        );
        let f = |b: u16| bf16::from_bits(b).to_f64();
        let mut want = vec![0.0; heads * 128];
        for h in 0..heads {
            for r in 0..16 {
                let s: Vec<f64> = (0..32)
                    .map(|j| {
                        (0..16)
                            .map(|c| f(q[h * 256 + r * 16 + c]) * f(k[h * 512 + j * 16 + c]))
                            .sum::<f64>()
                    })
                    .map(|x| x * scale as f64)
                    .collect();
                let mx = s.iter().cloned().fold(f64::MIN, f64::max);
                let p: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
                let l: f64 = p.iter().sum();
                for c in 0..8 {
                    let acc: f64 = (0..32).map(|j| p[j] * f(v[h * 256 + j * 8 + c])).sum();
                    want[h * 128 + r * 8 + c] = acc / l;
                }
            }
        }
        // P is rounded to bf16 before P·V (as FA2 does): a relative error of 2^-9 per weight
        close(
            &format!("{name}: O"),
            &d.down::<f32>(o, heads * 128),
            &want,
            4e-3,
            0.0,
        );
    }
}

// ---------------------------------------------------------------- K14: exact PTX grab bag

fn bf16_pair(a: u32, b: u32, f: impl Fn(f64, f64) -> f64) -> u32 {
    let h = |v: u32, s: u32| bf16::from_bits((v >> s) as u16).to_f64();
    let lo = bf16::from_f64(f(h(a, 0), h(b, 0))).to_bits() as u32;
    let hi = bf16::from_f64(f(h(a, 16), h(b, 16))).to_bits() as u32;
    lo | hi << 16
}

/// f32 → f16, round to nearest even, `.relu` (negative sources give +0), `.satfinite`.
fn f16_relu_sat(v: f32) -> u32 {
    if v < 0.0 {
        return 0;
    }
    let h = f16::from_f32(v);
    if h.is_infinite() {
        0x7bff
    } else {
        h.to_bits() as u32
    }
}

/// f32 → bf16 toward zero, `.relu`.
fn bf16_rz_relu(v: f32) -> u32 {
    if v < 0.0 {
        0
    } else {
        v.to_bits() >> 16
    }
}

fn exact_ref(x: u64, y: u64) -> [u64; 18] {
    let (xl, yl) = (x as u32, y as u32);
    let v = x >> (y & 63);
    let (pos, len) = ((xl & 63) as u128, (yl & 31) as u128);
    let mask = (((1u128 << len) - 1) << pos) as u64;
    let bfi = (y & !mask) | (((x as u128) << pos) as u64 & mask);
    let (bp, bl) = ((yl & 63) as u64, ((yl >> 8) & 63) as u64);
    let bfe = (0..64u64).fold(0u64, |d, i| {
        let msb = (bp + bl).saturating_sub(1).min(63);
        let sbit = if bl != 0 { (x >> msb) & 1 } else { 0 };
        let bit = if i < bl && bp + i <= 63 {
            (x >> (bp + i)) & 1
        } else {
            sbit
        };
        d | bit << i
    });
    let all = [xl.to_le_bytes(), yl.to_le_bytes()].concat();
    let sel = (y >> 32) as u32;
    let prmt = u32::from_le_bytes([0, 1, 2, 3].map(|k| {
        let s = (sel >> (4 * k)) & 15;
        let byte = all[(s & 7) as usize];
        if s & 8 != 0 {
            if byte & 0x80 != 0 {
                0xff
            } else {
                0
            }
        } else {
            byte
        }
    }));
    let (sx, sy) = (xl as i32, yl as i32);
    let mul24 = (((xl & 0xff_ffff) as u64 * (yl & 0xff_ffff) as u64) >> 16) as u32;
    let sad = (xl ^ yl).wrapping_add((sx as i64 - sy as i64).unsigned_abs() as u32);
    let (bx, by) = (xl & 0xbfff_bfff, yl & 0xbfff_bfff);
    let fx = f32::from_bits((xl & 0x87ff_ffff) | 0x4000_0000);
    let fy = f32::from_bits(yl & 0xc7ff_ffff);
    let sub = f32::from_bits(xl & 0x807f_ffff);
    let tp = (sub.is_subnormal() as u32) + 2 * ((fx * 1e36).is_finite() as u32);
    let dx = (x as i64) as f64 * 1e-10;
    let cs = if ((y as i64) as f64).is_sign_negative() {
        -dx.abs()
    } else {
        dx.abs()
    };
    [
        if v == 0 {
            u32::MAX as u64
        } else {
            63 - v.leading_zeros() as u64
        },
        x.reverse_bits(),
        v.leading_zeros() as u64,
        bfi,
        bfe,
        prmt as u64,
        sx.saturating_add(sy) as u32 as u64,
        sx.saturating_sub(sy) as u32 as u64,
        mul24 as u64,
        sad as u64,
        bf16_pair(bx, by, |a, b| a + b) as u64,
        bf16_pair(bx, by, |a, b| a * b) as u64,
        (bx & 0x7fff_7fff) as u64,
        (f16_relu_sat(fx) << 16 | f16_relu_sat(fy)) as u64,
        (bf16_rz_relu(fx * 1e30) << 16 | bf16_rz_relu(fy)) as u64,
        tp as u64,
        cs.to_bits(),
        (dx * 1e-6).round_ties_even().to_bits(),
    ]
}

#[test]
fn exact_ptx_grab_bag_matches_host() {
    let m = module();
    let n = 256usize;
    for (name, cfg) in configs().into_iter().take(3) {
        let mut rng = Rng(0x350F);
        let a: Vec<u64> = (0..n).map(|_| rng.next()).collect();
        let mut d = Dev::new(cfg);
        let ai = d.up(&a);
        let o = d.up(&vec![0x5A5A_5A5A_5A5A_5A5Au64; n * 20]);
        d.run(
            &m,
            "exact_forms",
            (2, 128, 0),
            &[Ptr(o), Ptr(ai), I32(n as i32)],
        );
        let got = d.down::<u64>(o, n * 20);
        for i in 0..n {
            let (x, y) = (a[i], a[(i * 7 + 3) % n]);
            let want = exact_ref(x, y);
            for (k, w) in want.iter().enumerate() {
                assert_eq!(
                    got[i * 20 + k],
                    *w,
                    "{name}: thread {i} form {k} (x={x:#x} y={y:#x})"
                );
            }
            let (lane, base) = (i % 32, i - i % 32);
            let yl = y as u32;
            let src = (lane & !7) + (yl % 11) as usize % 8;
            assert_eq!(
                got[i * 20 + 18],
                a[base + src] as u32 as u64,
                "{name}: thread {i}: shfl width 8"
            );
            let half = lane & 16;
            let ball: u32 = (0..16)
                .filter(|&l| (a[base + half + l] as u32 >> 3) & 1 == 1)
                .map(|l| 1u32 << (half + l))
                .sum();
            let dn = if lane % 16 + 3 < 16 { lane + 3 } else { lane };
            let want19 = ball as u64 | ((a[base + dn] as u32 as u64) << 32);
            assert_eq!(
                got[i * 20 + 19],
                want19,
                "{name}: thread {i}: ballot/shfl.down"
            );
        }
    }
}

// ---------------------------------------------------------------- K15: transpose + convolution rows

#[test]
fn transpose_padded_and_convolution_rows_match_host() {
    let m = module();
    let (w, h) = (70usize, 45usize); // ragged: partial tiles on both axes
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3510);
        let x = floats(&mut rng, w * h, -10.0, 10.0);
        let taps = floats(&mut rng, 17, -1.0, 1.0);
        let mut d = Dev::new(cfg);
        let (xi, ti) = (d.up(&x), d.up(&taps));
        let (t, c) = (d.unset(w * h), d.unset(w * h));
        let grid = [w.div_ceil(32) as u32, h.div_ceil(32) as u32, 1];
        let p = [Ptr(t), Ptr(xi), I32(w as i32), I32(h as i32)];
        let r = d.0.launch(&m, "transpose_pad", grid, [32, 8, 1], 0, &p);
        r.unwrap_or_else(|e| panic!("transpose_pad: {e:?}"));
        let p = [Ptr(c), Ptr(xi), Ptr(ti), I32(w as i32)];
        let r = d.0.launch(
            &m,
            "conv_rows",
            [w.div_ceil(64) as u32, h as u32, 1],
            [32, 1, 1],
            0,
            &p,
        );
        r.unwrap_or_else(|e| panic!("conv_rows: {e:?}"));
        let wt: Vec<f32> = (0..w * h).map(|k| x[(k % h) * w + k / h]).collect();
        check(&format!("{name}: transpose"), &d.down::<f32>(t, w * h), &wt);
        let mut wc = vec![0.0; w * h];
        for row in 0..h {
            for col in 0..w {
                let acc: f64 = (-8i64..=8)
                    .map(|k| {
                        let xx = col as i64 + k;
                        let v = if (0..w as i64).contains(&xx) {
                            x[row * w + xx as usize]
                        } else {
                            0.0
                        };
                        taps[(8 - k) as usize] as f64 * v as f64
                    })
                    .sum();
                wc[row * w + col] = acc;
            }
        }
        close(
            &format!("{name}: conv rows"),
            &d.down::<f32>(c, w * h),
            &wc,
            1e-4,
            1e-5,
        );
    }
}
