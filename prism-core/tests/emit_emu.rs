//! Emitted PTX runs on the emulator (prism-runtime::emu) and matches a CPU reference on random inputs.
//! Outputs are pre-filled with NaN so elements the kernel fails to write are caught.
mod emit_support;
use emit_support::*;
use prism_runtime::emu::{EmuConfig, Emulator, Module, ParamValue};

/// Deterministic xorshift inputs in [-1, 1).
fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn upload(emu: &mut Emulator, v: &[f32]) -> u64 {
    let a = emu.alloc(v.len() * 4);
    emu.write(a, &bytes(v)).expect("write");
    a
}

#[test]
fn vector_add_on_emulator() {
    let ks = compile_src(&program("vector_add.rs"));
    let k = &ks[0];
    let module = Module::parse(&k.ptx)
        .unwrap_or_else(|e| panic!("emulator cannot parse our PTX: {e:?}\n{}", k.ptx));
    for (n, threads) in [(1000usize, 128u32), (64, 32), (77, 64)] {
        let mut emu = Emulator::new(EmuConfig::default());
        let a = random(n, 1);
        let b = random(n, 2);
        let (da, db) = (upload(&mut emu, &a), upload(&mut emu, &b));
        let dc = upload(&mut emu, &vec![f32::NAN; n]);
        let blocks = (n as u32).div_ceil(threads);
        emu.launch(
            &module,
            &k.entry,
            [blocks, 1, 1],
            [threads, 1, 1],
            k.contract.smem_bytes,
            &[
                ParamValue::Ptr(da),
                ParamValue::Ptr(db),
                ParamValue::Ptr(dc),
                ParamValue::U32(n as u32),
            ],
        )
        .unwrap_or_else(|e| panic!("launch failed: {e:?}"));
        let c = floats(&emu.read(dc, n * 4).expect("read"));
        for i in 0..n {
            assert_eq!(c[i], a[i] + b[i], "c[{i}] (n = {n}, threads = {threads})");
        }
    }
}

/// Rounds to TF32 as `cvt.rna.tf32.f32` does (nearest, ties away from zero, 10 mantissa bits).
fn tf32(x: f32) -> f32 {
    f32::from_bits((x.to_bits().wrapping_add(0x1000)) & 0xffff_e000)
}

#[test]
fn fig6_mma_tf32_on_emulator() {
    let ks = compile_src(&program("mma.rs"));
    let k = &ks[0];
    let module = Module::parse(&k.ptx)
        .unwrap_or_else(|e| panic!("emulator cannot parse our PTX: {e:?}\n{}", k.ptx));
    // Shapes with partial tiles in every dimension, and several k-tiles (simple_mma accumulates into C).
    for (m, n, kk) in [
        (16usize, 8usize, 8usize),
        (48, 24, 8),
        (21, 13, 5),
        (32, 16, 27),
    ] {
        let mut emu = Emulator::new(EmuConfig::default());
        let a = random(m * kk, 3);
        let b = random(kk * n, 4);
        let (da, db) = (upload(&mut emu, &a), upload(&mut emu, &b));
        let dc = upload(&mut emu, &vec![f32::NAN; m * n]);
        let blocks = (m.div_ceil(16) * n.div_ceil(8)) as u32;
        emu.launch(
            &module,
            &k.entry,
            [blocks, 1, 1],
            [32, 1, 1],
            k.contract.smem_bytes,
            &[
                ParamValue::Ptr(da),
                ParamValue::Ptr(db),
                ParamValue::Ptr(dc),
                ParamValue::U32(m as u32),
                ParamValue::U32(n as u32),
                ParamValue::U32(kk as u32),
            ],
        )
        .unwrap_or_else(|e| panic!("launch failed ({m}x{n}x{kk}): {e:?}"));
        let c = floats(&emu.read(dc, m * n * 4).expect("read"));
        for i in 0..m {
            for j in 0..n {
                let want: f32 = (0..kk)
                    .map(|p| tf32(a[i * kk + p]) * tf32(b[p * n + j]))
                    .sum();
                let got = c[i * n + j];
                assert!(
                    (got - want).abs() <= 1e-4 * kk as f32,
                    "C[{i}][{j}] = {got}, want {want} ({m}x{n}x{kk})"
                );
            }
        }
    }
}

/// 64-bit shuffles (two 32-bit halves): butterfly sums of u64 values above 2^32 and of f64 values, every
/// lane's result checked.
#[test]
fn shuffles_of_64_bit_values() {
    let src = "
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 32)]
fn k(x: *const u64, y: *const f64, s: *mut u64, t: *mut f64) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(s, thread[1], |j| i + j, |so| {
        partition(t, thread[1], |j| i + j, |to| {
            group(thread[32], || {
                #[at(thread[1])]
                let mut a: u64 = x[i];
                #[at(thread[1])]
                let mut b: f64 = y[i];
                for k in 0..5 {
                    a = a + shfl_xor(a, 16u32 >> k);
                    b = b + shfl_xor(b, 16u32 >> k);
                }
                #[at(thread[1])]
                let up: u64 = shfl_up(a, 1u32);
                group(thread[1], || {
                    so[0] = a + up;
                    to[0] = b;
                });
            });
        });
    });
}
";
    let ks = compile_src(src);
    let k = &ks[0];
    let module = Module::parse(&k.ptx).expect("parses");
    let xs: Vec<u64> = (0..32u64).map(|l| ((l + 1) << 33) | (l * 7)).collect();
    let ys: Vec<f64> = (0..32).map(|l| 0.5 + l as f64 * 1.25).collect();
    let (sx, sy) = (xs.iter().sum::<u64>(), ys.iter().sum::<f64>());
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = emu.alloc(256);
    emu.write(
        dx,
        &xs.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    )
    .unwrap();
    let dy = emu.alloc(256);
    emu.write(
        dy,
        &ys.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    )
    .unwrap();
    let (ds, dt) = (emu.alloc(256), emu.alloc(256));
    let p = [
        ParamValue::Ptr(dx),
        ParamValue::Ptr(dy),
        ParamValue::Ptr(ds),
        ParamValue::Ptr(dt),
    ];
    emu.launch(&module, &k.entry, [1, 1, 1], [32, 1, 1], 0, &p)
        .unwrap_or_else(|e| panic!("{e}"));
    let s = emu.read(ds, 256).unwrap();
    let t = emu.read(dt, 256).unwrap();
    for l in 0..32 {
        let sv = u64::from_le_bytes(s[8 * l..8 * l + 8].try_into().unwrap());
        // `shfl_up` by 1: lane 0 reads itself.
        assert_eq!(sv, 2 * sx, "lane {l}: u64 sum (and its neighbour's)");
        let tv = f64::from_le_bytes(t[8 * l..8 * l + 8].try_into().unwrap());
        assert_eq!(tv, sy, "lane {l}: f64 sum (exact: multiples of 1/4)");
    }
}

/// `for j in (a..b).step_by(s)` with run-time bounds and step counts as Rust's `step_by` does, also where
/// `j + s` would pass `u32::MAX` (the loop leaves before adding); a run-time step of 0 traps instead of
/// looping for ever (Rust panics).
#[test]
fn run_time_step_by_stops_at_the_end_and_traps_on_zero() {
    use prism_runtime::emu::{EmuError, FaultKind};
    let src = "
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 32)]
fn k(y: *mut u32, a: u32, n: u32, s: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(y, thread[1], |j| i + j, |yt| {
        group(thread[1], || {
            let mut c: u32 = 0;
            let mut last: u32 = 0;
            for j in (a + i..n).step_by(s) {
                c += 1;
                last = j;
            }
            yt[0] = c * 65536 + last % 65536;
        });
    });
}
";
    let ks = compile_src(src);
    let k = &ks[0];
    let module = Module::parse(&k.ptx).expect("parses");
    let cases: [(u32, u32, u32); 6] = [
        (0, 0xFFFF_FFFF, 0x8000_0000),
        (0xFFFF_FF00, 0xFFFF_FFFF, 100),
        (0xFFFF_FFE0, u32::MAX, 3),
        (5, 1000, 7),
        (0, 10, 1),
        (10, 3, 2),
    ];
    for (a, n, s) in cases {
        let mut emu = Emulator::new(EmuConfig {
            max_steps: 2_000_000,
            ..EmuConfig::default()
        });
        let dy = emu.alloc(32 * 4);
        let p = [
            ParamValue::Ptr(dy),
            ParamValue::U32(a),
            ParamValue::U32(n),
            ParamValue::U32(s),
        ];
        emu.launch(&module, &k.entry, [1, 1, 1], [32, 1, 1], 0, &p)
            .unwrap_or_else(|e| panic!("a={a:#x} n={n:#x} s={s:#x}: {e}"));
        let y = emu.read(dy, 32 * 4).unwrap();
        for i in 0..32u32 {
            let got = u32::from_le_bytes(y[4 * i as usize..4 * i as usize + 4].try_into().unwrap());
            let mut it = (a.wrapping_add(i)..n).step_by(s as usize);
            let want = (it.clone().count() as u32) * 65536 + it.next_back().unwrap_or(0) % 65536;
            assert_eq!(got, want, "a={a:#x} n={n:#x} s={s:#x} thread {i}");
        }
    }
    let mut emu = Emulator::new(EmuConfig {
        max_steps: 2_000_000,
        ..EmuConfig::default()
    });
    let dy = emu.alloc(32 * 4);
    let p = [
        ParamValue::Ptr(dy),
        ParamValue::U32(0),
        ParamValue::U32(10),
        ParamValue::U32(0),
    ];
    match emu.launch(&module, &k.entry, [1, 1, 1], [32, 1, 1], 0, &p) {
        Err(EmuError::Faulted { faults, .. }) => {
            assert_eq!(faults[0].kind, FaultKind::Trap, "{faults:?}")
        }
        other => panic!("a zero step must trap: {other:?}"),
    }
}

/// Shifts by the type's width or more give 0 (all sign bits for `>>` of a negative signed value), for
/// every width of the amount: a u64 amount of 2^32 or more is not cut to its low 32 bits (docs/RUNTIME.md,
/// "Safety").
#[test]
fn shifts_by_the_width_or_more_shift_everything_out() {
    let src = "
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(x: *const u64, s: *const u64, o: *mut u64) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(o, thread[1], |j| t * 5 + j, |ot| {
        group(thread[1], || {
            let v: u64 = x[t];
            let sh: u64 = s[t];
            ot[0] = v << sh;
            ot[1] = v >> sh;
            ot[2] = ((v as i64) >> sh) as u64;
            ot[3] = ((v as u32) << sh) as u64;
            ot[4] = (((v as i32) >> (sh as i64)) as i64) as u64;
        });
    });
}
";
    let ks = compile_src(src);
    let k = &ks[0];
    let module = Module::parse(&k.ptx).expect("parses");
    let amounts: Vec<u64> = vec![
        0,
        1,
        31,
        32,
        33,
        63,
        64,
        65,
        255,
        256,
        1 << 32,
        (1 << 32) + 1,
        (1 << 32) + 63,
        u64::MAX,
        u64::MAX - 30,
    ];
    let n = amounts.len();
    let xs: Vec<u64> = (0..n as u64)
        .map(|i| 0x8000_0000_8000_0001u64.rotate_left(i as u32 * 7) ^ (i * 0x1234_5678_9abc))
        .collect();
    // The documented semantics: Rust's shift where the amount is below the width, else shifted out.
    let shl64 = |v: u64, s: u64| if s < 64 { v << s } else { 0 };
    let shr64 = |v: u64, s: u64| if s < 64 { v >> s } else { 0 };
    let sar64 = |v: i64, s: u64| if s < 64 { v >> s } else { v >> 63 };
    let shl32 = |v: u32, s: u64| if s < 32 { v << s } else { 0 };
    let sar32 = |v: i32, s: u64| if s < 32 { v >> s } else { v >> 31 };
    let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>();
    let mut emu = Emulator::new(EmuConfig::default());
    let (dx, ds, d_o) = (emu.alloc(8 * n), emu.alloc(8 * n), emu.alloc(40 * n));
    emu.write(dx, &le(&xs)).unwrap();
    emu.write(ds, &le(&amounts)).unwrap();
    let p = [
        ParamValue::Ptr(dx),
        ParamValue::Ptr(ds),
        ParamValue::Ptr(d_o),
    ];
    emu.launch(&module, &k.entry, [1, 1, 1], [n as u32, 1, 1], 0, &p)
        .unwrap_or_else(|e| panic!("{e}"));
    let out = emu.read(d_o, 40 * n).unwrap();
    let got = |i: usize| u64::from_le_bytes(out[8 * i..8 * i + 8].try_into().unwrap());
    for (t, (&v, &s)) in xs.iter().zip(&amounts).enumerate() {
        let want = [
            shl64(v, s),
            shr64(v, s),
            sar64(v as i64, s) as u64,
            shl32(v as u32, s) as u64,
            sar32(v as i32, s) as i64 as u64,
        ];
        for (j, w) in want.iter().enumerate() {
            assert_eq!(got(t * 5 + j), *w, "value {v:#x}, amount {s:#x}, form {j}");
        }
    }
}

#[test]
fn if_values_of_untyped_literals_take_the_type_they_are_used_at() {
    // Both sides unsuffixed literals, or the literal first: the value has the type of its `let`, of the
    // memory it is stored to or of the other operand, else f32 (i32 for integers), as the checker types it.
    let src = "
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(x: *const f32, of: *mut f32, od: *mut f64, oi: *mut i64) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(of, thread[1], |j| t * 7 + j, |ft| {
        partition(od, thread[1], |j| t * 2 + j, |dt| {
            partition(oi, thread[1], |j| t * 2 + j, |it| {
                group(thread[1], || {
                    let v: f32 = x[t];
                    let c = if v > 0.0 { 1.5 } else { 2.5 };
                    ft[0] = c;
                    ft[1] = (c as u32) as f32;
                    let d: f32 = if v > 0.5 { 1.0 } else { 2.0 };
                    ft[2] = d;
                    ft[3] = if v > 0.0 { 0.25 } else { x[t] };
                    ft[4] = (if v > 0.0 { 3.0 } else { 4.0 }) * v;
                    ft[5] = if v > 0.0 { 1.0 } else if v > -0.5 { 2.0 } else { 3.0 };
                    let mut m = 1.5;
                    m = m * v;
                    ft[6] = m;
                    dt[0] = if v > 0.0 { 1.5 } else { 2.5 };
                    let e: f64 = if v > 0.0 { 0.1 } else { 0.2 };
                    dt[1] = e;
                    it[0] = if v > 0.0 { 1 } else { -2 };
                    let g: i64 = if v > 0.0 { 5000000000 } else { 7 };
                    it[1] = g;
                });
            });
        });
    });
}
";
    let ks = compile_src(src);
    let k = &ks[0];
    let module = Module::parse(&k.ptx).expect("parses");
    let n = 64usize;
    let xs = random(n, 7);
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = upload(&mut emu, &xs);
    let (df, dd, di) = (emu.alloc(28 * n), emu.alloc(16 * n), emu.alloc(16 * n));
    let p = [
        ParamValue::Ptr(dx),
        ParamValue::Ptr(df),
        ParamValue::Ptr(dd),
        ParamValue::Ptr(di),
    ];
    emu.launch(&module, &k.entry, [1, 1, 1], [n as u32, 1, 1], 0, &p)
        .unwrap_or_else(|e| panic!("{e}"));
    let f = floats(&emu.read(df, 28 * n).unwrap());
    let d8 = emu.read(dd, 16 * n).unwrap();
    let i8 = emu.read(di, 16 * n).unwrap();
    let dbl = |i: usize| f64::from_le_bytes(d8[8 * i..8 * i + 8].try_into().unwrap());
    let int = |i: usize| i64::from_le_bytes(i8[8 * i..8 * i + 8].try_into().unwrap());
    for (t, &v) in xs.iter().enumerate() {
        let c: f32 = if v > 0.0 { 1.5 } else { 2.5 };
        let want = [
            c,
            (c as u32) as f32,
            if v > 0.5 { 1.0 } else { 2.0 },
            if v > 0.0 { 0.25 } else { v },
            (if v > 0.0 { 3.0 } else { 4.0 }) * v,
            if v > 0.0 {
                1.0
            } else if v > -0.5 {
                2.0
            } else {
                3.0
            },
            1.5 * v,
        ];
        assert_eq!(&f[7 * t..7 * t + 7], &want, "thread {t}, x = {v}");
        assert_eq!(dbl(2 * t), if v > 0.0 { 1.5 } else { 2.5 }, "thread {t}");
        assert_eq!(
            dbl(2 * t + 1),
            if v > 0.0 { 0.1 } else { 0.2 },
            "thread {t}"
        );
        assert_eq!(int(2 * t), if v > 0.0 { 1 } else { -2 }, "thread {t}");
        assert_eq!(
            int(2 * t + 1),
            if v > 0.0 { 5_000_000_000 } else { 7 },
            "thread {t}"
        );
    }
}

#[test]
fn untyped_arithmetic_takes_the_type_of_its_context() {
    // User round J: an `if` value of unsuffixed literals under `/`, `%`, `>>`, `<<` or `*`, as a device
    // function's or a method's argument, or an atomic's value, is computed in the type the checker gives
    // it (the sink's, the parameter's, the receiver's, the memory's), as Rust does; a shift's left side
    // never takes the amount's type.
    let src = "
#[prism_device(requires(thread[1]), returns = thread[1])]
fn keep64(v: f64) -> f64 { v }
#[prism_device(requires(thread[1]), returns = thread[1])]
fn keepu(v: u64) -> u64 { v }
#[prism_device(requires(thread[1]), returns = thread[1])]
fn keepi(v: i64) -> i64 { v }
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(ks: *const u32, x: *const f64, ou: *mut u32, oi: *mut i32, ow: *mut u64, od: *mut f64, cnt: *mut u64) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(ou, thread[1], |j| t * 3 + j, |ut| {
    partition(oi, thread[1], |j| t * 3 + j, |it| {
    partition(ow, thread[1], |j| t * 6 + j, |wt| {
    partition(od, thread[1], |j| t * 4 + j, |dt| {
        group(thread[1], || {
            let k: u32 = ks[t];
            let odd = t % 2 == 1;
            ut[0] = (if odd { 4000000000 } else { 3000000000 }) / 2;
            ut[1] = (if odd { 4000000000 } else { 3000000001 }) % 7;
            let h: u32 = (if odd { 4000000000 } else { 3000000000 }) >> 1;
            ut[2] = h;
            let m: i32 = -1024 >> k;
            it[0] = m;
            it[1] = -1024 >> k;
            it[2] = (-1024 >> k) / 3;
            wt[0] = keepu(if odd { 5 } else { 6 });
            wt[1] = keepi(if odd { -5 } else { 6 }) as u64;
            wt[2] = (if odd { 1 } else { 2 }) << 40;
            let a: u64 = 3;
            wt[3] = a.max(if odd { 1 } else { 5000000000 });
            let mask: u64 = (1 << (k + 32)) - 1;
            wt[4] = mask;
            let q: i64 = (if odd { 3000000000 } else { -3 }) / 2;
            wt[5] = q as u64;
            dt[0] = keep64(if odd { 0.1 } else { 3.25 });
            dt[1] = x[t].max(if odd { 0.5 } else { 1.5 });
            dt[2] = x[t].fma(if odd { 2.0 } else { 3.0 }, 1.0);
            dt[3] = (if odd { 0.1 } else { 0.2 }) * 3.0;
            let o: u64 = atomic_add(cnt, 0u32, if odd { 1 } else { 2 });
        });
    });
    });
    });
    });
}
";
    let ks = compile_src(src);
    let k = ks.last().expect("the kernel");
    let module = Module::parse(&k.ptx).expect("parses");
    let n = 8usize;
    let amounts: Vec<u32> = (0..n as u32).map(|i| (i * 3) % 10).collect();
    let xs: Vec<f64> = (0..n).map(|i| 0.37 * i as f64 - 1.1).collect();
    let mut emu = Emulator::new(EmuConfig::default());
    let (dk, dx) = (emu.alloc(4 * n), emu.alloc(8 * n));
    emu.write(
        dk,
        &amounts
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    emu.write(
        dx,
        &xs.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    )
    .unwrap();
    let (du, di, dw, dd, dc) = (
        emu.alloc(12 * n),
        emu.alloc(12 * n),
        emu.alloc(48 * n),
        emu.alloc(32 * n),
        emu.alloc(8),
    );
    let p = [dk, dx, du, di, dw, dd, dc].map(ParamValue::Ptr);
    emu.launch(&module, &k.entry, [1, 1, 1], [n as u32, 1, 1], 0, &p)
        .unwrap_or_else(|e| panic!("{e}"));
    let rd = |a, bytes: usize| emu.read(a, bytes).unwrap();
    let (u, i, w, d, c) = (
        rd(du, 12 * n),
        rd(di, 12 * n),
        rd(dw, 48 * n),
        rd(dd, 32 * n),
        rd(dc, 8),
    );
    let word = |b: &[u8], j: usize| u32::from_le_bytes(b[4 * j..4 * j + 4].try_into().unwrap());
    let dword = |b: &[u8], j: usize| u64::from_le_bytes(b[8 * j..8 * j + 8].try_into().unwrap());
    for t in 0..n {
        let (odd, k) = (t % 2 == 1, amounts[t]);
        let big: u32 = if odd { 4000000000 } else { 3000000000 };
        let r7: u32 = if odd { 4000000000 } else { 3000000001 };
        assert_eq!(
            [word(&u, 3 * t), word(&u, 3 * t + 1), word(&u, 3 * t + 2)],
            [big / 2, r7 % 7, big >> 1],
            "u32, thread {t}"
        );
        let m: i32 = -1024 >> k;
        assert_eq!(
            [0, 1, 2].map(|j| word(&i, 3 * t + j) as i32),
            [m, m, m / 3],
            "i32, thread {t} (k = {k})"
        );
        let big64: i64 = if odd { 3000000000 } else { -3 };
        let want_w: [u64; 6] = [
            if odd { 5 } else { 6 },
            (if odd { -5i64 } else { 6 }) as u64,
            (if odd { 1u64 } else { 2 }) << 40,
            3u64.max(if odd { 1 } else { 5000000000 }),
            (1u64 << (k + 32)) - 1,
            (big64 / 2) as u64,
        ];
        assert_eq!(
            (0..6).map(|j| dword(&w, 6 * t + j)).collect::<Vec<_>>(),
            want_w,
            "u64, thread {t}"
        );
        let x = xs[t];
        let want_d = [
            if odd { 0.1 } else { 3.25 },
            x.max(if odd { 0.5 } else { 1.5 }),
            x.mul_add(if odd { 2.0 } else { 3.0 }, 1.0),
            (if odd { 0.1 } else { 0.2 }) * 3.0,
        ];
        for (j, want) in want_d.iter().enumerate() {
            assert_eq!(
                f64::from_bits(dword(&d, 4 * t + j)),
                *want,
                "f64 {j}, thread {t}"
            );
        }
    }
    assert_eq!(
        dword(&c, 0),
        (0..n as u64)
            .map(|t| if t % 2 == 1 { 1 } else { 2 })
            .sum::<u64>()
    );
}

#[test]
fn if_values_of_arrays_choose_per_thread() {
    // User round J: the float4 n-body guards its last tile with an `if` value of arrays; only the chosen
    // side runs (the `load4` past the end does not).
    let src = "
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(x: *const f32, o: *mut f32, n: u32) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(o, thread[1], |j| t * 8 + j, |ot| {
        group(thread[1], || {
            let me = if t < n { load4(x, 4 * t) } else { [0.0f32; 4] };
            let other = if t % 2 == 0 { [1.0, 2.0, 3.0, 4.0] } else { [-1.0; 4] };
            for j in 0..4 {
                ot[j] = me[j];
                ot[4 + j] = other[j];
            }
        });
    });
}
";
    let ks = compile_src(src);
    let k = &ks[0];
    let module = Module::parse(&k.ptx).expect("parses");
    let (threads, n) = (16usize, 11usize);
    let xs = random(4 * n, 5);
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = upload(&mut emu, &xs);
    let d_o = emu.alloc(32 * threads);
    let p = [
        ParamValue::Ptr(dx),
        ParamValue::Ptr(d_o),
        ParamValue::U32(n as u32),
    ];
    emu.launch(&module, &k.entry, [1, 1, 1], [threads as u32, 1, 1], 0, &p)
        .unwrap_or_else(|e| panic!("{e}"));
    let got = floats(&emu.read(d_o, 32 * threads).unwrap());
    for t in 0..threads {
        let me: Vec<f32> = if t < n {
            xs[4 * t..4 * t + 4].to_vec()
        } else {
            vec![0.0; 4]
        };
        let other = if t % 2 == 0 {
            [1.0, 2.0, 3.0, 4.0]
        } else {
            [-1.0; 4]
        };
        assert_eq!(&got[8 * t..8 * t + 4], &me[..], "thread {t}");
        assert_eq!(&got[8 * t + 4..8 * t + 8], &other[..], "thread {t}");
    }
}

#[test]
fn scalar_type_constants() {
    // `f32::NEG_INFINITY` as an online maximum's start, and the other constants a port from Rust or CUDA uses.
    let src = "
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(x: *const f32, of: *mut f32, oi: *mut i64) {
    #[at(thread[1])]
    let t: u32 = id();
    partition(of, thread[1], |j| t * 8 + j, |ft| {
        partition(oi, thread[1], |j| t * 4 + j, |it| {
            group(thread[1], || {
                let mut m: f32 = f32::NEG_INFINITY;
                m = m.max(x[t]);
                ft[0] = m;
                ft[1] = f32::MAX;
                ft[2] = f32::MIN;
                ft[3] = f32::EPSILON;
                ft[4] = f32::INFINITY;
                ft[5] = f32::MIN_POSITIVE;
                ft[6] = f32::NAN;
                ft[7] = (f64::MAX / 1e300) as f32;
                it[0] = u32::MAX as i64;
                it[1] = i32::MIN as i64;
                it[2] = i64::MIN;
                it[3] = (u64::MAX >> 1) as i64;
            });
        });
    });
}
";
    let ks = compile_src(src);
    let k = &ks[0];
    let module = Module::parse(&k.ptx).expect("parses");
    let n = 32usize;
    let xs = random(n, 11);
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = upload(&mut emu, &xs);
    let (df, di) = (emu.alloc(32 * n), emu.alloc(32 * n));
    let p = [
        ParamValue::Ptr(dx),
        ParamValue::Ptr(df),
        ParamValue::Ptr(di),
    ];
    emu.launch(&module, &k.entry, [1, 1, 1], [n as u32, 1, 1], 0, &p)
        .unwrap_or_else(|e| panic!("{e}"));
    let f = floats(&emu.read(df, 32 * n).unwrap());
    let i8 = emu.read(di, 32 * n).unwrap();
    let int = |i: usize| i64::from_le_bytes(i8[8 * i..8 * i + 8].try_into().unwrap());
    for (t, &v) in xs.iter().enumerate() {
        let want = [
            v,
            f32::MAX,
            f32::MIN,
            f32::EPSILON,
            f32::INFINITY,
            f32::MIN_POSITIVE,
        ];
        assert_eq!(&f[8 * t..8 * t + 6], &want, "thread {t}");
        assert!(f[8 * t + 6].is_nan(), "thread {t}: {}", f[8 * t + 6]);
        assert_eq!(f[8 * t + 7], (f64::MAX / 1e300) as f32, "thread {t}");
        let ints = [
            u32::MAX as i64,
            i32::MIN as i64,
            i64::MIN,
            (u64::MAX >> 1) as i64,
        ];
        for (j, w) in ints.iter().enumerate() {
            assert_eq!(int(4 * t + j), *w, "thread {t}, constant {j}");
        }
    }
}

/// A shared index divided by a run-time divisor: `t / d` with `d = 0` is all ones (docs/RUNTIME.md), so the
/// SHARED-INDEX check must stay and the read fault. The check used to be elided (the quotient was bounded by
/// the dividend, `t < 128`), and the read reached the last element of the allocation before `s2`, `s1[127]`
/// (probe J, round 36), racing with its unordered write.
#[test]
fn a_shared_index_divided_by_a_run_time_zero_faults() {
    let src = "
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128, blocks = 1)]
fn k(o: *mut f32, d: u32) {
    partition(o, block[1], |j| j, |ob| { group(block[1], || {
        let s1: Shared<[f32; 128]>;
        let s2: Shared<[f32; 128]>;
        #[at(thread[1])]
        let t: u32 = id();
        partition(s1, thread[1], |j| t + j, |st| { group(thread[1], || { st[0] = 7.0; }); });
        partition(s2, thread[1], |j| t + j, |st| { group(thread[1], || { st[0] = t as f32; }); });
        #[at(thread[1])]
        let v: f32 = s2[t / d];
        partition(ob, thread[1], |j| t + j, |ot| { group(thread[1], || { ot[0] = v; }); });
    }); });
}
";
    let ks = compile_src(src);
    let k = &ks[0];
    let module = Module::parse(&k.ptx).expect("parses");
    for d in [0u32, 1, 2] {
        let mut emu = Emulator::new(EmuConfig::default());
        let o = upload(&mut emu, &[f32::NAN; 128]);
        let p = [ParamValue::Ptr(o), ParamValue::U32(d)];
        let r = emu.launch(
            &module,
            &k.entry,
            [1, 1, 1],
            [128, 1, 1],
            k.contract.smem_bytes,
            &p,
        );
        if d == 0 {
            let text = format!("{:?}", r.expect_err("t / 0 is past s2"));
            assert!(text.contains("OutOfBounds"), "{text}");
            continue;
        }
        r.unwrap_or_else(|e| panic!("{e}"));
        let got = floats(&emu.read(o, 128 * 4).unwrap());
        for (t, g) in got.iter().enumerate() {
            assert_eq!(*g, (t as u32 / d) as f32, "thread {t}, d = {d}");
        }
    }
}
