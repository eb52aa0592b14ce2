//! nvcc-generated PTX (tests/fixtures/kernels.ptx) run on the emulator and checked against CPU references.

use prism_runtime::emu::*;

fn module() -> Module {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/kernels.ptx"
    ))
    .unwrap();
    Module::parse(&src).unwrap()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn f32(&mut self) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec_f32(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f32()).collect()
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn i32_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn read_f32(e: &Emulator, a: u64, n: usize) -> Vec<f32> {
    e.read(a, n * 4)
        .unwrap()
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}
fn read_u32(e: &Emulator, a: u64, n: usize) -> Vec<u32> {
    e.read(a, n * 4)
        .unwrap()
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}
fn read_i32(e: &Emulator, a: u64, n: usize) -> Vec<i32> {
    read_u32(e, a, n).into_iter().map(|x| x as i32).collect()
}
fn upload(e: &mut Emulator, bytes: &[u8]) -> u64 {
    let a = e.alloc(bytes.len());
    e.write(a, bytes).unwrap();
    a
}
fn nan_buf(e: &mut Emulator, n: usize) -> u64 {
    upload(e, &f32_bytes(&vec![f32::NAN; n]))
}
fn ok(r: Result<LaunchReport, EmuError>) -> LaunchReport {
    match r {
        Ok(r) => r,
        Err(EmuError::Faulted { faults, .. }) => panic!("faults: {:#?}", faults),
        Err(e) => panic!("{}", e),
    }
}

fn configs() -> Vec<EmuConfig> {
    vec![
        EmuConfig::default(),
        EmuConfig {
            schedule: Schedule::Random { seed: 7 },
            warp_mode: WarpMode::Lockstep,
            ..EmuConfig::default()
        },
    ]
}

#[test]
fn reduction_shared_memory() {
    let m = module();
    for cfg in configs() {
        let mut e = Emulator::new(cfg);
        let n = 1000usize;
        let x = Rng(1).vec_f32(n);
        assert!(x.iter().any(|v| *v != 0.0));
        let xin = upload(&mut e, &f32_bytes(&x));
        let blocks = n.div_ceil(256);
        let out = nan_buf(&mut e, blocks);
        let r = ok(e.launch(
            &m,
            "reduce_sum",
            [blocks as u32, 1, 1],
            [128, 1, 1],
            0,
            &[
                ParamValue::Ptr(xin),
                ParamValue::Ptr(out),
                ParamValue::I32(n as i32),
            ],
        ));
        let got = read_f32(&e, out, blocks);
        for b in 0..blocks {
            let want: f32 = x[b * 256..((b + 1) * 256).min(n)].iter().sum();
            assert!(
                (got[b] - want).abs() < 1e-3,
                "block {}: {} vs {}",
                b,
                got[b],
                want
            );
        }
        assert!(r.counters.barrier_waits > 0);
        assert!(r.counters.shared_accesses > 0);
    }
}

fn run_matmul(
    e: &mut Emulator,
    m: &Module,
    mm: usize,
    nn: usize,
    kk: usize,
    seed: u64,
) -> (LaunchReport, Vec<f32>, Vec<f32>) {
    let mut rng = Rng(seed);
    let a = rng.vec_f32(mm * kk);
    let b = rng.vec_f32(kk * nn);
    let da = upload(e, &f32_bytes(&a));
    let db = upload(e, &f32_bytes(&b));
    let dc = nan_buf(e, mm * nn);
    let grid = [nn.div_ceil(16) as u32, mm.div_ceil(16) as u32, 1];
    let r = ok(e.launch(
        m,
        "matmul_tiled",
        grid,
        [16, 16, 1],
        0,
        &[
            ParamValue::Ptr(da),
            ParamValue::Ptr(db),
            ParamValue::Ptr(dc),
            ParamValue::I32(mm as i32),
            ParamValue::I32(nn as i32),
            ParamValue::I32(kk as i32),
        ],
    ));
    let got = read_f32(e, dc, mm * nn);
    let mut want = vec![0f32; mm * nn];
    for i in 0..mm {
        for j in 0..nn {
            let mut s = 0f64;
            for k in 0..kk {
                s += a[i * kk + k] as f64 * b[k * nn + j] as f64;
            }
            want[i * nn + j] = s as f32;
        }
    }
    (r, got, want)
}

#[test]
fn tiled_matmul() {
    let m = module();
    for cfg in configs() {
        let mut e = Emulator::new(cfg);
        let (r, got, want) = run_matmul(&mut e, &m, 40, 24, 36, 3);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() < 1e-4, "C[{}] = {} vs {}", i, g, w);
        }
        assert!(r.counters.divergent_branches > 0, "edge tiles diverge");
    }
}

#[test]
fn histogram_shared_and_global_atomics() {
    let m = module();
    let n = 2000usize;
    let nbins = 64usize;
    let mut rng = Rng(11);
    let data: Vec<u32> = (0..n).map(|_| (rng.next() % 1000) as u32).collect();
    let mut want = vec![0u32; nbins];
    for d in &data {
        want[*d as usize % nbins] += 1;
    }
    for cfg in configs() {
        let mut e = Emulator::new(cfg);
        let dd = upload(&mut e, &u32_bytes(&data));
        let h = e.alloc(nbins * 4);
        let r = ok(e.launch(
            &m,
            "histogram",
            [4, 1, 1],
            [128, 1, 1],
            (nbins * 4) as u32,
            &[
                ParamValue::Ptr(dd),
                ParamValue::Ptr(h),
                ParamValue::I32(n as i32),
                ParamValue::I32(nbins as i32),
            ],
        ));
        assert_eq!(read_u32(&e, h, nbins), want);
        assert!(r.counters.atomics > 0);
        let h2 = e.alloc(nbins * 4);
        ok(e.launch(
            &m,
            "histogram_global",
            [n.div_ceil(128) as u32, 1, 1],
            [128, 1, 1],
            0,
            &[
                ParamValue::Ptr(dd),
                ParamValue::Ptr(h2),
                ParamValue::I32(n as i32),
                ParamValue::I32(nbins as i32),
            ],
        ));
        assert_eq!(read_u32(&e, h2, nbins), want);
    }
}

#[test]
fn histogram_without_dynamic_smem_is_out_of_bounds() {
    let m = module();
    let mut e = Emulator::new(EmuConfig::default());
    let dd = upload(&mut e, &u32_bytes(&[1, 2, 3, 4]));
    let h = e.alloc(64 * 4);
    match e.launch(
        &m,
        "histogram",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[
            ParamValue::Ptr(dd),
            ParamValue::Ptr(h),
            ParamValue::I32(4),
            ParamValue::I32(64),
        ],
    ) {
        Err(EmuError::Faulted { faults, .. }) => assert_eq!(faults[0].kind, FaultKind::OutOfBounds),
        other => panic!("expected OOB, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn warp_shuffle_scan() {
    let m = module();
    let n = 200usize;
    let mut rng = Rng(5);
    let x: Vec<i32> = (0..n).map(|_| (rng.next() % 21) as i32 - 10).collect();
    for cfg in configs() {
        let mut e = Emulator::new(cfg);
        let din = upload(&mut e, &i32_bytes(&x));
        let dout = upload(&mut e, &i32_bytes(&vec![i32::MIN; n]));
        ok(e.launch(
            &m,
            "warp_scan",
            [2, 1, 1],
            [128, 1, 1],
            0,
            &[
                ParamValue::Ptr(din),
                ParamValue::Ptr(dout),
                ParamValue::I32(n as i32),
            ],
        ));
        let got = read_i32(&e, dout, n);
        for blk in 0..2 {
            let mut acc = 0;
            for i in blk * 128..((blk + 1) * 128).min(n) {
                acc += x[i];
                assert_eq!(got[i], acc, "element {}", i);
            }
        }
    }
}

#[test]
fn warp_shuffle_vote_ballot() {
    let m = module();
    let n = 128usize;
    let mut rng = Rng(9);
    let x: Vec<i32> = (0..n).map(|_| (rng.next() % 201) as i32 - 100).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let din = upload(&mut e, &i32_bytes(&x));
    let sums = upload(&mut e, &i32_bytes(&[i32::MIN; 4]));
    let ballots = upload(&mut e, &u32_bytes(&[0xdead_beef; 4]));
    let maxes = upload(&mut e, &i32_bytes(&vec![i32::MIN; n]));
    ok(e.launch(
        &m,
        "warp_ops",
        [2, 1, 1],
        [64, 1, 1],
        0,
        &[
            ParamValue::Ptr(din),
            ParamValue::Ptr(sums),
            ParamValue::Ptr(ballots),
            ParamValue::Ptr(maxes),
        ],
    ));
    let (s, b, mx) = (
        read_i32(&e, sums, 4),
        read_u32(&e, ballots, 4),
        read_i32(&e, maxes, n),
    );
    for w in 0..4 {
        let chunk = &x[w * 32..w * 32 + 32];
        assert_eq!(s[w], chunk.iter().sum::<i32>());
        let want_b = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, v)| if *v > 0 { acc | 1 << i } else { acc });
        assert_eq!(b[w], want_b);
        let wm = *chunk.iter().max().unwrap();
        for i in 0..32 {
            assert_eq!(mx[w * 32 + i], wm);
        }
    }
}

fn tf32_rna(x: f32) -> f32 {
    let b = x.to_bits();
    f32::from_bits(b.wrapping_add(0x1000) & 0xffff_e000)
}

#[test]
fn mma_m16n8k8_tf32_tile() {
    let m = module();
    let mut rng = Rng(21);
    let a = rng.vec_f32(16 * 8);
    let b = rng.vec_f32(8 * 8);
    let c = rng.vec_f32(16 * 8);
    let mut e = Emulator::new(EmuConfig::default());
    let (da, db, dc) = (
        upload(&mut e, &f32_bytes(&a)),
        upload(&mut e, &f32_bytes(&b)),
        upload(&mut e, &f32_bytes(&c)),
    );
    let dd = nan_buf(&mut e, 16 * 8);
    let r = ok(e.launch(
        &m,
        "mma_tf32_tile",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[
            ParamValue::Ptr(da),
            ParamValue::Ptr(db),
            ParamValue::Ptr(dc),
            ParamValue::Ptr(dd),
        ],
    ));
    assert_eq!(r.counters.mma_ops, 1);
    let got = read_f32(&e, dd, 128);
    for i in 0..16 {
        for j in 0..8 {
            let mut s = c[i * 8 + j] as f64;
            for k in 0..8 {
                s += tf32_rna(a[i * 8 + k]) as f64 * tf32_rna(b[k * 8 + j]) as f64;
            }
            assert!(
                (got[i * 8 + j] as f64 - s).abs() < 1e-5,
                "D[{}][{}] = {} vs {}",
                i,
                j,
                got[i * 8 + j],
                s
            );
        }
    }
}

#[test]
fn ldmatrix_and_mma_f16() {
    let m = module();
    let mut rng = Rng(33);
    let a: Vec<half::f16> = (0..256).map(|_| half::f16::from_f32(rng.f32())).collect();
    let b: Vec<half::f16> = (0..128).map(|_| half::f16::from_f32(rng.f32())).collect();
    let bytes = |v: &[half::f16]| {
        v.iter()
            .flat_map(|x| x.to_bits().to_le_bytes())
            .collect::<Vec<u8>>()
    };
    let mut e = Emulator::new(EmuConfig::default());
    let (da, db) = (upload(&mut e, &bytes(&a)), upload(&mut e, &bytes(&b)));
    let frag = upload(&mut e, &u32_bytes(&[0xdead_beef; 128]));
    let dd = nan_buf(&mut e, 128);
    ok(e.launch(
        &m,
        "ldmatrix_mma_f16",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[
            ParamValue::Ptr(da),
            ParamValue::Ptr(db),
            ParamValue::Ptr(frag),
            ParamValue::Ptr(dd),
        ],
    ));
    let fr = read_u32(&e, frag, 128);
    for lane in 0..32 {
        let (g, t) = (lane / 4, lane % 4);
        for i in 0..4 {
            let row = g + 8 * (i & 1);
            let col = 8 * (i >> 1) + 2 * t;
            let want =
                a[row * 16 + col].to_bits() as u32 | (a[row * 16 + col + 1].to_bits() as u32) << 16;
            assert_eq!(fr[lane * 4 + i], want, "lane {} reg {}", lane, i);
        }
    }
    let got = read_f32(&e, dd, 128);
    for i in 0..16 {
        for j in 0..8 {
            let s: f64 = (0..16)
                .map(|k| a[i * 16 + k].to_f64() * b[k * 8 + j].to_f64())
                .sum();
            assert!(
                (got[i * 8 + j] as f64 - s).abs() < 1e-4,
                "D[{}][{}] = {} vs {}",
                i,
                j,
                got[i * 8 + j],
                s
            );
        }
    }
}

#[test]
fn misc_math_calls_and_local_memory() {
    let m = module();
    let n = 50usize;
    let mut rng = Rng(77);
    let x = rng.vec_f32(n);
    let k: Vec<i32> = (0..n).map(|_| (rng.next() % 2001) as i32 - 1000).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let (dx, dk) = (
        upload(&mut e, &f32_bytes(&x)),
        upload(&mut e, &i32_bytes(&k)),
    );
    let of = nan_buf(&mut e, n * 6);
    let oi = upload(&mut e, &i32_bytes(&vec![i32::MIN; n * 4]));
    ok(e.launch(
        &m,
        "misc_math",
        [2, 1, 1],
        [32, 1, 1],
        0,
        &[
            ParamValue::Ptr(dx),
            ParamValue::Ptr(dk),
            ParamValue::Ptr(of),
            ParamValue::Ptr(oi),
            ParamValue::I32(n as i32),
        ],
    ));
    let gf = read_f32(&e, of, n * 6);
    let gi = read_i32(&e, oi, n * 4);
    for i in 0..n {
        let (v, kk) = (x[i], k[i]);
        let tmp = v * (kk & 7) as f32;
        let want = [
            v * v * kk as f32 + 1.0,
            v.abs().sqrt() + tmp,
            v.exp(),
            (kk / 3) as f32 + (kk % 5) as f32,
            v.min(0.25) * kk as f32,
            if v as f64 * 3.0 > 1.0 { 1.0 } else { -1.0 },
        ];
        for j in 0..6 {
            let tol = 1e-5 * want[j].abs().max(1.0) * if j == 2 { 10.0 } else { 1.0 };
            assert!(
                (gf[i * 6 + j] - want[j]).abs() <= tol,
                "outf[{}][{}] = {} vs {}",
                i,
                j,
                gf[i * 6 + j],
                want[j]
            );
        }
        let wi = [
            (v * 100.0).round_ties_even() as i32,
            (kk as u32).count_ones() as i32 + (kk + 1).leading_zeros() as i32,
            (kk << 3) ^ (kk >> 1) | ((kk as u32) >> 28) as i32,
            ((kk as u32).reverse_bits() >> 20) as i32,
        ];
        assert_eq!(&gi[i * 4..i * 4 + 4], &wi, "outi[{}] (k = {})", i, kk);
    }
}
