//! The smaller PTX instruction families as nvcc 13.5 emits them for sm_90 (tests/fixtures/misc.ptx, from
//! misc.cu): `prmt` in its six special modes, `szext`, `fns`, `dp4a`/`dp2a`, `cvt.pack.sat`, 128-bit integer
//! arithmetic (`add.cc`/`addc`/`sub.cc`/`subc`) and explicit `mad.cc`/`madc` chains, `isspacep`, `getctarank`,
//! `nanosleep`, `elect.sync`, half-precision atomics and `alloca`. Each is checked element by element against a
//! CPU reference written from the PTX ISA's definition of the instruction.

use half::{bf16, f16};
use prism_runtime::emu::*;

fn module() -> Module {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/misc.ptx"
    ))
    .expect("fixture");
    Module::parse(&src).expect("nvcc PTX parses")
}

/// splitmix64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A full 32-bit value, a small signed one or an edge value, in turn.
    fn word(&mut self, k: usize) -> u32 {
        let r = self.next();
        match k % 3 {
            0 => r as u32,
            1 => ((r % 600) as i32 - 300) as u32,
            _ => [
                0,
                1,
                0x7fff_ffff,
                0x8000_0000,
                u32::MAX,
                0xff,
                0x100,
                31,
                32,
                33,
            ][(r % 10) as usize],
        }
    }
}

fn upload(e: &mut Emulator, bytes: &[u8]) -> u64 {
    let a = e.alloc(bytes.len());
    e.write(a, bytes).expect("write");
    a
}

fn words(e: &Emulator, a: u64, n: usize) -> Vec<u32> {
    e.read(a, 4 * n)
        .expect("read")
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect()
}

fn bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn configs() -> Vec<(String, EmuConfig)> {
    let mut v = vec![("round-robin".to_string(), EmuConfig::default())];
    for seed in [3u64, 99] {
        v.push((
            format!("random seed {seed}"),
            EmuConfig {
                schedule: Schedule::Random { seed },
                ..EmuConfig::default()
            },
        ));
    }
    v
}

/// `prmt.b32.mode`: for each mode and selector c[1:0], the source bytes of d.b3 d.b2 d.b1 d.b0 (as the PTX
/// ISA's table lists them; byte 0..3 of a, 4..7 of b).
fn prmt_ref(mode: usize, a: u32, b: u32, c: u32) -> u32 {
    const T: [[[u8; 4]; 4]; 6] = [
        [[3, 2, 1, 0], [4, 3, 2, 1], [5, 4, 3, 2], [6, 5, 4, 3]], // f4e
        [[5, 6, 7, 0], [6, 7, 0, 1], [7, 0, 1, 2], [0, 1, 2, 3]], // b4e
        [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]], // rc8
        [[3, 2, 1, 0], [3, 2, 1, 1], [3, 2, 2, 2], [3, 3, 3, 3]], // ecl
        [[0, 0, 0, 0], [1, 1, 1, 0], [2, 2, 1, 0], [3, 2, 1, 0]], // ecr
        [[1, 0, 1, 0], [3, 2, 3, 2], [1, 0, 1, 0], [3, 2, 3, 2]], // rc16
    ];
    let src = (a as u64) | (b as u64) << 32;
    let sel = T[mode][(c & 3) as usize];
    let byte = |i: u8| ((src >> (8 * i)) & 0xff) as u32;
    byte(sel[0]) << 24 | byte(sel[1]) << 16 | byte(sel[2]) << 8 | byte(sel[3])
}

fn szext_ref(a: u32, b: u32, clamp: bool, signed: bool) -> u32 {
    let n = if clamp { b.min(32) } else { b % 32 };
    if n == 0 {
        0
    } else if n == 32 {
        a
    } else if signed {
        let v = (a as u64) << (64 - n);
        ((v as i64) >> (64 - n)) as u32
    } else {
        a & ((1u32 << n) - 1)
    }
}

fn fns_ref(mask: u32, base: u32, offset: i32) -> u32 {
    let set: Vec<u32> = (0..32).filter(|&i| (mask >> i) & 1 == 1).collect();
    if offset == 0 {
        return if set.contains(&base) { base } else { u32::MAX };
    }
    let k = offset.unsigned_abs() as usize - 1;
    let found = if offset > 0 {
        set.iter().filter(|&&i| i >= base).nth(k)
    } else {
        set.iter().rev().filter(|&&i| i <= base).nth(k)
    };
    found.copied().unwrap_or(u32::MAX)
}

fn dp4a_ref(a: u32, b: u32, c: u32, sa: bool, sb: bool) -> u32 {
    let ext = |x: u32, i: u32, s: bool| -> i64 {
        let v = (x >> (8 * i)) as u8;
        if s {
            v as i8 as i64
        } else {
            v as i64
        }
    };
    let dot: i64 = (0..4).map(|i| ext(a, i, sa) * ext(b, i, sb)).sum();
    (c as i64 + dot) as u32
}

fn dp2a_ref(a: u32, b: u32, c: u32, hi: bool, sa: bool, sb: bool) -> u32 {
    let h = |i: u32| -> i64 {
        let v = (a >> (16 * i)) as u16;
        if sa {
            v as i16 as i64
        } else {
            v as i64
        }
    };
    let off = if hi { 2 } else { 0 };
    let by = |i: u32| -> i64 {
        let v = (b >> (8 * (off + i))) as u8;
        if sb {
            v as i8 as i64
        } else {
            v as i64
        }
    };
    (c as i64 + h(0) * by(0) + h(1) * by(1)) as u32
}

/// `cvt.pack.sat.T.s32{.b32} d, a, b{, c}`: a and b (s32) saturated to `bits`-bit T, a above b, c's low bits
/// above them (16-bit T: no c).
fn pack_ref(a: u32, b: u32, c: u32, bits: u32, signed: bool) -> u32 {
    let sat = |x: u32| -> u32 {
        let x = x as i32 as i64;
        let (lo, hi) = if signed {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            (0, (1i64 << bits) - 1)
        };
        (x.clamp(lo, hi) as u32) & (((1u64 << bits) - 1) as u32)
    };
    let td = sat(a) << bits | sat(b);
    if bits == 16 {
        td
    } else {
        ((td as u64) | (c as u64) << (2 * bits)) as u32
    }
}

fn bit_ops_ref(x: u32, y: u32, z: u32) -> Vec<u32> {
    let mut r = Vec::new();
    for mode in 0..6 {
        r.push(prmt_ref(mode, x, y, z));
    }
    let w = z & 63;
    r.push(szext_ref(x, w, true, true));
    r.push(szext_ref(x, w, false, true));
    r.push(szext_ref(x, w, true, false));
    r.push(szext_ref(x, w, false, false));
    r.push(fns_ref(x, y & 31, (z % 9) as i32 - 4));
    r.push(dp4a_ref(x, y, z, false, false));
    r.push(dp4a_ref(x, y, z, true, false));
    r.push(dp4a_ref(x, y, z, false, true));
    r.push(dp4a_ref(x, y, z, true, true));
    r.push(dp2a_ref(x, y, z, false, true, true));
    r.push(dp2a_ref(x, y, z, true, false, false));
    r.push(dp2a_ref(x, y, z, true, true, false));
    r.push(pack_ref(x, y, 0, 16, false));
    r.push(pack_ref(x, y, 0, 16, true));
    r.push(pack_ref(x, y, z, 8, false));
    r.push(pack_ref(x, y, z, 8, true));
    r.push(pack_ref(x, y, z, 4, true));
    let (x1, y1, z1) = (x as u128, y as u128, z as u128);
    let p = x1 << 96 | y1 << 64 | z1 << 32 | (x ^ y) as u128;
    let q = z1 << 96 | x1 << 64 | y1 << 32 | (y ^ z) as u128;
    let s = p.wrapping_add(q);
    let d = p.wrapping_sub(q);
    let m = ((x as u64) << 32 | y as u64) as u128 * ((z as u64) << 32 | x as u64) as u128;
    let w32 = |v: u128, k: u32| (v >> k) as u32;
    r.push(w32(s, 96) ^ w32(s, 64) ^ w32(s, 32) ^ w32(s, 0));
    r.push(w32(s, 96));
    r.push(w32(d, 96) ^ w32(d, 32));
    r.push(w32(d, 0));
    r.push(w32(m, 96));
    r.push(w32(m, 64));
    r.push(w32(m, 32));
    r.push(w32(m, 0));
    // add.cc lo = x + y; addc.cc hi = x + z + carry; addc top = carry.
    let lo = x as u64 + y as u64;
    let hi = x as u64 + z as u64 + (lo >> 32);
    r.push(lo as u32 ^ ((hi as u32) << 1) ^ (((hi >> 32) as u32) << 31));
    // mad.lo.cc lo = (x*y).lo + z; madc.hi.cc hi = (x*y).hi + z + carry; addc top = carry.
    let prod = x as u64 * y as u64;
    let lo = (prod as u32) as u64 + z as u64;
    let hi = (prod >> 32) + z as u64 + (lo >> 32);
    r.push(lo as u32 ^ ((hi as u32) << 1) ^ (((hi >> 32) as u32) << 31));
    r
}

#[test]
fn bit_ops_match_the_isa_definitions() {
    let m = module();
    assert!(
        m.unsupported_instructions().is_empty(),
        "{:?}",
        m.unsupported_instructions()
    );
    let n = 300usize;
    let mut rng = Rng(21);
    let a: Vec<u32> = (0..n).map(|k| rng.word(k)).collect();
    let b: Vec<u32> = (0..n).map(|k| rng.word(k + 1)).collect();
    let c: Vec<u32> = (0..n).map(|k| rng.word(k + 2)).collect();
    const NOUT: usize = 33;
    let mut e = Emulator::new(EmuConfig::default());
    let (da, db, dc) = (
        upload(&mut e, &bytes(&a)),
        upload(&mut e, &bytes(&b)),
        upload(&mut e, &bytes(&c)),
    );
    let dout = upload(&mut e, &vec![0xA5; 4 * NOUT * n]);
    let params = [
        ParamValue::Ptr(da),
        ParamValue::Ptr(db),
        ParamValue::Ptr(dc),
        ParamValue::Ptr(dout),
        ParamValue::I32(n as i32),
    ];
    e.launch(
        &m,
        "bit_ops",
        [n.div_ceil(64) as u32, 1, 1],
        [64, 1, 1],
        0,
        &params,
    )
    .unwrap_or_else(|err| panic!("bit_ops: {err}"));
    let got = words(&e, dout, NOUT * n);
    let names = [
        "prmt.f4e",
        "prmt.b4e",
        "prmt.rc8",
        "prmt.ecl",
        "prmt.ecr",
        "prmt.rc16",
        "szext.clamp.s32",
        "szext.wrap.s32",
        "szext.clamp.u32",
        "szext.wrap.u32",
        "fns",
        "dp4a.u32.u32",
        "dp4a.s32.u32",
        "dp4a.u32.s32",
        "dp4a.s32.s32",
        "dp2a.lo.s32.s32",
        "dp2a.hi.u32.u32",
        "dp2a.hi.s32.u32",
        "cvt.pack.u16",
        "cvt.pack.s16",
        "cvt.pack.u8",
        "cvt.pack.s8",
        "cvt.pack.s4",
        "u128 add",
        "u128 add top",
        "u128 sub",
        "u128 sub low",
        "u128 mul 3",
        "u128 mul 2",
        "u128 mul 1",
        "u128 mul 0",
        "add.cc chain",
        "mad.cc chain",
    ];
    for i in 0..n {
        let want = bit_ops_ref(a[i], b[i], c[i]);
        for k in 0..NOUT {
            assert_eq!(
                got[i * NOUT + k],
                want[k],
                "{} of a = {:#x}, b = {:#x}, c = {:#x}",
                names[k],
                a[i],
                b[i],
                c[i]
            );
        }
    }
}

#[test]
fn isspacep_getctarank_elect_and_nanosleep() {
    let m = module();
    let g: Vec<u32> = (0..32).map(|t| (t * 7 + 3) % 200).collect();
    for (what, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let dg = upload(&mut e, &bytes(&g));
        let dout = upload(&mut e, &[0; 128]);
        e.launch(
            &m,
            "spaces",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::Ptr(dg), ParamValue::Ptr(dout)],
        )
        .unwrap_or_else(|err| panic!("spaces ({what}): {err}"));
        let got = words(&e, dout, 32);
        for t in 0..32 {
            // global pointer: isspacep.global; shared: .shared; local: .local — one bit each, 4 bits per pointer.
            let spaces = 0x1 | 0x2 << 4 | 0x4 << 8;
            let want = spaces | g[(t + 1) % 32] << 24; // rank 0 (no cluster), elected lane 0
            assert_eq!(got[t], want, "thread {t}, {what}");
        }
    }
}

#[test]
fn half_precision_atomics() {
    let m = module();
    let n = 200usize;
    let mut rng = Rng(8);
    let v: Vec<u32> = (0..n).map(|_| (rng.next() % 4) as u32).collect();
    let mut want_h = [0f32; 4];
    let mut want_h2 = [0f32; 4];
    let mut want_b2 = [0f32; 4];
    for (i, &x) in v.iter().enumerate() {
        let x = x as f32;
        want_h[i % 4] += x;
        want_h2[2 * (i % 2)] += x;
        want_h2[2 * (i % 2) + 1] -= x;
        want_b2[2 * (i % 2)] += 2.0 * x;
        want_b2[2 * (i % 2) + 1] += x;
    }
    for (what, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let dv = upload(&mut e, &bytes(&v));
        let (dh, dbh, dh2, db2) = (
            upload(&mut e, &[0; 8]),
            upload(&mut e, &[0; 8]),
            upload(&mut e, &[0; 8]),
            upload(&mut e, &[0; 8]),
        );
        let params = [
            ParamValue::Ptr(dv),
            ParamValue::Ptr(dh),
            ParamValue::Ptr(dbh),
            ParamValue::Ptr(dh2),
            ParamValue::Ptr(db2),
            ParamValue::I32(n as i32),
        ];
        e.launch(&m, "half_atomics", [2, 1, 1], [128, 1, 1], 0, &params)
            .unwrap_or_else(|err| panic!("half_atomics ({what}): {err}"));
        let halves = |a: u64| -> Vec<u16> {
            e.read(a, 8)
                .expect("read")
                .chunks(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        };
        let h: Vec<f32> = halves(dh)
            .iter()
            .map(|&x| f16::from_bits(x).to_f32())
            .collect();
        let bh: Vec<f32> = halves(dbh)
            .iter()
            .map(|&x| bf16::from_bits(x).to_f32())
            .collect();
        let h2: Vec<f32> = halves(dh2)
            .iter()
            .map(|&x| f16::from_bits(x).to_f32())
            .collect();
        let b2: Vec<f32> = halves(db2)
            .iter()
            .map(|&x| bf16::from_bits(x).to_f32())
            .collect();
        assert_eq!(h, want_h, "f16, {what}");
        assert_eq!(bh, want_h, "bf16, {what}");
        assert_eq!(h2, want_h2, "f16x2, {what}");
        assert_eq!(b2, want_b2, "bf16x2, {what}");
    }
}

#[test]
fn alloca_gives_each_thread_its_own_stack() {
    let m = module();
    let n = 150usize;
    let mut rng = Rng(4);
    let input: Vec<u32> = (0..n)
        .map(|_| ((rng.next() % 80) as i32 - 40) as u32)
        .collect();
    let want: Vec<u32> = (0..n)
        .map(|i| {
            let r = input[i] as i32 % 16;
            let len = if 1 + r < 1 { -r } else { 1 + r };
            (0..len)
                .map(|k| (input[(i + k as usize) % n] as i32).wrapping_mul(k + 1))
                .sum::<i32>() as u32
        })
        .collect();
    for (what, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let din = upload(&mut e, &bytes(&input));
        let dout = upload(&mut e, &bytes(&vec![0x5A5A_5A5A; n]));
        let params = [
            ParamValue::Ptr(din),
            ParamValue::Ptr(dout),
            ParamValue::I32(n as i32),
        ];
        e.launch(&m, "with_alloca", [3, 1, 1], [64, 1, 1], 0, &params)
            .unwrap_or_else(|err| panic!("with_alloca ({what}): {err}"));
        assert_eq!(words(&e, dout, n), want, "{what}");
    }
}

/// Elements of a word: `lanes` of 32/lanes bits, sign- or zero-extended.
fn elems(x: u32, lanes: u32, signed: bool) -> Vec<i64> {
    let w = 32 / lanes;
    (0..lanes)
        .map(|i| {
            let v = ((x as u64) >> (w * i)) & ((1u64 << w) - 1);
            if signed && v >> (w - 1) == 1 {
                v as i64 - (1i64 << w)
            } else {
                v as i64
            }
        })
        .collect()
}

/// Packs per-element results (saturated to the element range if `sat`, else truncated).
fn pack(r: &[i64], lanes: u32, signed: bool, sat: bool) -> u32 {
    let w = 32 / lanes;
    let (lo, hi) = if signed {
        (-(1i64 << (w - 1)), (1i64 << (w - 1)) - 1)
    } else {
        (0, (1i64 << w) - 1)
    };
    r.iter().enumerate().fold(0u32, |d, (i, &v)| {
        let v = if sat { v.clamp(lo, hi) } else { v };
        d | (((v as u64) & ((1u64 << w) - 1)) as u32) << (w * i as u32)
    })
}

fn simd_ref(x: u32, y: u32, z: u32) -> Vec<u32> {
    let zip = |lanes, s, f: &dyn Fn(i64, i64) -> i64| -> Vec<i64> {
        elems(x, lanes, s)
            .into_iter()
            .zip(elems(y, lanes, s))
            .map(|(a, b)| f(a, b))
            .collect()
    };
    let absdiff = zip(4, false, &|a, b| (a - b).abs());
    let add2 = zip(2, false, &|a, b| a + b);
    vec![
        pack(&absdiff, 4, false, false),
        pack(&zip(4, false, &|a, b| a + b), 4, false, true),
        pack(&zip(2, true, &|a, b| a - b), 2, true, true),
        pack(&zip(4, false, &|a, b| (a + b + 1) >> 1), 4, false, false),
        pack(&zip(2, true, &|a, b| a.max(b)), 2, true, false),
        pack(&zip(4, true, &|a, b| a.min(b)), 4, true, false),
        (z as i64 + absdiff.iter().sum::<i64>()) as u32,
        (z as i64 + add2.iter().sum::<i64>()) as u32,
    ]
}

#[test]
fn simd_video_instructions() {
    let m = module();
    let n = 200usize;
    let mut rng = Rng(17);
    let a: Vec<u32> = (0..n).map(|k| rng.word(k)).collect();
    let b: Vec<u32> = (0..n).map(|k| rng.word(k + 2)).collect();
    let c: Vec<u32> = (0..n).map(|k| rng.word(k + 1)).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let (da, db, dc) = (
        upload(&mut e, &bytes(&a)),
        upload(&mut e, &bytes(&b)),
        upload(&mut e, &bytes(&c)),
    );
    let dout = upload(&mut e, &vec![0xA5; 4 * 8 * n]);
    let params = [
        ParamValue::Ptr(da),
        ParamValue::Ptr(db),
        ParamValue::Ptr(dc),
        ParamValue::Ptr(dout),
        ParamValue::I32(n as i32),
    ];
    e.launch(
        &m,
        "simd_video",
        [n.div_ceil(64) as u32, 1, 1],
        [64, 1, 1],
        0,
        &params,
    )
    .unwrap_or_else(|err| panic!("simd_video: {err}"));
    let got = words(&e, dout, 8 * n);
    let names = [
        "vabsdiff4 (__vabsdiffu4)",
        "vadd4.sat",
        "vsub2.s32.sat",
        "vavrg4",
        "vmax2.s32",
        "vmin4.s32",
        "vabsdiff4.add",
        "vadd2.add",
    ];
    for i in 0..n {
        let want = simd_ref(a[i], b[i], c[i]);
        for k in 0..8 {
            assert_eq!(
                got[8 * i + k],
                want[k],
                "{} of a = {:#x}, b = {:#x}, c = {:#x}",
                names[k],
                a[i],
                b[i],
                c[i]
            );
        }
    }
}

#[test]
fn mma_with_f16_accumulators() {
    let m = module();
    let mut rng = Rng(31);
    // Values k/8 for small k: products and sums are exact in f16 up to the final rounding.
    let mut val = || f16::from_f32(((rng.next() % 17) as i32 - 8) as f32 / 8.0);
    let a: Vec<f16> = (0..256).map(|_| val()).collect();
    let b: Vec<f16> = (0..128).map(|_| val()).collect(); // b[n * 16 + k]
    let c: Vec<f16> = (0..128).map(|_| val()).collect();
    let halves =
        |v: &[f16]| -> Vec<u8> { v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect() };
    let mut e = Emulator::new(EmuConfig::default());
    let (da, db, dc) = (
        upload(&mut e, &halves(&a)),
        upload(&mut e, &halves(&b)),
        upload(&mut e, &halves(&c)),
    );
    let dd = upload(&mut e, &[0xFF; 256]);
    let params = [
        ParamValue::Ptr(da),
        ParamValue::Ptr(db),
        ParamValue::Ptr(dc),
        ParamValue::Ptr(dd),
    ];
    e.launch(&m, "mma_f16acc", [1, 1, 1], [32, 1, 1], 0, &params)
        .unwrap_or_else(|err| panic!("mma_f16acc: {err}"));
    let got: Vec<f16> = e
        .read(dd, 256)
        .expect("read")
        .chunks(2)
        .map(|x| f16::from_bits(u16::from_le_bytes([x[0], x[1]])))
        .collect();
    for i in 0..16 {
        for j in 0..8 {
            let dot: f64 = (0..16)
                .map(|k| a[i * 16 + k].to_f64() * b[j * 16 + k].to_f64())
                .sum();
            let want = f16::from_f64(c[i * 8 + j].to_f64() + dot);
            assert_eq!(got[i * 8 + j], want, "D[{i}][{j}]");
        }
    }
}

#[test]
fn movmatrix_transposes_the_fragment() {
    let m = module();
    let src: Vec<u16> = (0..64).map(|i| 1000 + i as u16 * 7).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let dm = upload(
        &mut e,
        &src.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>(),
    );
    let dt = upload(&mut e, &[0; 128]);
    e.launch(
        &m,
        "transpose8x8",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(dm), ParamValue::Ptr(dt)],
    )
    .unwrap_or_else(|err| panic!("transpose8x8: {err}"));
    let got: Vec<u16> = e
        .read(dt, 128)
        .expect("read")
        .chunks(2)
        .map(|x| u16::from_le_bytes([x[0], x[1]]))
        .collect();
    for r in 0..8 {
        for c in 0..8 {
            assert_eq!(got[r * 8 + c], src[c * 8 + r], "T[{r}][{c}]");
        }
    }
    // Executed by half a warp it is a collective misuse (.aligned: the whole warp).
    let mut e = Emulator::new(EmuConfig::default());
    let dm = upload(&mut e, &[0; 128]);
    let dt = upload(&mut e, &[0; 128]);
    match e.launch(
        &m,
        "transpose8x8",
        [1, 1, 1],
        [16, 1, 1],
        0,
        &[ParamValue::Ptr(dm), ParamValue::Ptr(dt)],
    ) {
        Err(EmuError::Faulted { faults, .. }) => {
            assert!(
                faults.iter().any(|f| f.kind == FaultKind::CollectiveMisuse),
                "{faults:?}"
            )
        }
        other => panic!("expected a collective misuse, got {other:?}"),
    }
}

#[test]
fn bulk_store_from_shared_memory() {
    let m = module();
    let input: Vec<u32> = (0..64).map(|i| (i * 5 + 2) as u32).collect();
    for (what, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let din = upload(&mut e, &bytes(&input));
        let dout = upload(&mut e, &[0xEE; 256]);
        e.launch(
            &m,
            "bulk_store",
            [1, 1, 1],
            [64, 1, 1],
            0,
            &[ParamValue::Ptr(din), ParamValue::Ptr(dout)],
        )
        .unwrap_or_else(|err| panic!("bulk_store ({what}): {err}"));
        let want: Vec<u32> = input.iter().map(|x| x * 3 + 1).collect();
        assert_eq!(words(&e, dout, 64), want, "{what}");
    }
}
