//! More nvcc-generated PTX (tests/fixtures/extra.ptx, from extra.cu): the kinds of kernels people bring to the
//! emulator's CLI — fp16 through <cuda_fp16.h>, 2-D launches, float atomics, nvcc's lowering of integer
//! intrinsics (`__ffs` is `brev` + `bfind.shiftamt`), f64 math, a C++ template instance — each checked
//! against a CPU reference on seeded random inputs, with outputs pre-filled so unwritten elements show.

use half::f16;
use prism_runtime::emu::*;

fn module() -> Module {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/extra.ptx"
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
    fn f32(&mut self) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
    }
}

fn upload(e: &mut Emulator, bytes: &[u8]) -> u64 {
    let a = e.alloc(bytes.len());
    e.write(a, bytes).expect("write");
    a
}

fn read<const W: usize, T>(e: &Emulator, a: u64, n: usize, f: impl Fn([u8; W]) -> T) -> Vec<T> {
    let bytes = e.read(a, n * W).expect("read");
    bytes
        .chunks(W)
        .map(|c| f(c.try_into().expect("chunk")))
        .collect()
}

fn run(
    e: &mut Emulator,
    m: &Module,
    entry: &str,
    grid: [u32; 3],
    block: [u32; 3],
    params: &[ParamValue],
) {
    e.launch(m, entry, grid, block, 0, params)
        .unwrap_or_else(|err| panic!("{entry}: {err}"));
}

#[test]
fn integer_intrinsics_match_cuda_semantics() {
    let m = module();
    let mut rng = Rng(11);
    let mut v: Vec<i32> = (0..64).map(|_| rng.next() as i32).collect();
    v[0] = 0;
    v[1] = -1;
    v[2] = i32::MIN;
    v[3] = 1 << 20;
    let mut e = Emulator::new(EmuConfig::default());
    let a = upload(
        &mut e,
        &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>(),
    );
    let out = upload(&mut e, &vec![0xAB; 64 * 12 * 8]);
    run(
        &mut e,
        &m,
        "terms",
        [1, 1, 1],
        [64, 1, 1],
        &[ParamValue::Ptr(a), ParamValue::Ptr(out)],
    );
    let got = read(&e, out, 64 * 12, i64::from_le_bytes);
    for (t, &x) in v.iter().enumerate() {
        let u = x as u32;
        let byte_perm = u.swap_bytes(); // selector 0x0123 reverses the bytes of x
        let ffs = if u == 0 {
            0
        } else {
            u.trailing_zeros() as i64 + 1
        };
        let want = [
            u.count_ones() as i64,
            u.leading_zeros() as i64,
            (x % 7) as u32 as i64,
            u.reverse_bits() as i64,
            (x >> 3) as i64,
            ffs,
            byte_perm as i64,
            (x as i64 * 3).abs(),
            ((u as u64 * 12345) >> 32) as i64,
            x.max(17) as i64,
            x.min(-5) as i64,
            x as i64,
        ];
        assert_eq!(&got[t * 12..t * 12 + 12], &want, "thread {t}, x = {x:#x}");
    }
}

#[test]
fn softmax_with_shuffles_and_shared_memory() {
    let m = module();
    let (rows, cols) = (3usize, 200usize);
    let mut rng = Rng(5);
    let x: Vec<f32> = (0..rows * cols).map(|_| rng.f32()).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let dx = upload(
        &mut e,
        &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    );
    let dy = upload(&mut e, &f32::NAN.to_le_bytes().repeat(rows * cols));
    let params = [
        ParamValue::Ptr(dx),
        ParamValue::Ptr(dy),
        ParamValue::I32(rows as i32),
        ParamValue::I32(cols as i32),
    ];
    run(
        &mut e,
        &m,
        "softmax_rows",
        [rows as u32, 1, 1],
        [96, 1, 1],
        &params,
    );
    let y = read(&e, dy, rows * cols, f32::from_le_bytes);
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let max = row.iter().cloned().fold(f32::MIN, f32::max);
        let sum: f64 = row.iter().map(|v| ((v - max) as f64).exp()).sum();
        for c in 0..cols {
            let want = ((row[c] - max) as f64).exp() / sum;
            let got = y[r * cols + c] as f64;
            assert!(
                (got - want).abs() < 1e-5,
                "y[{r}][{c}] = {got}, want {want}"
            );
        }
    }
}

#[test]
fn transpose_with_a_2d_grid_and_padded_tile() {
    let m = module();
    let (w, h) = (70usize, 45usize);
    let input: Vec<f32> = (0..w * h).map(|i| i as f32 * 0.25 + 1.0).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let din = upload(
        &mut e,
        &input
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>(),
    );
    let dout = upload(&mut e, &f32::NAN.to_le_bytes().repeat(w * h));
    let params = [
        ParamValue::Ptr(din),
        ParamValue::Ptr(dout),
        ParamValue::I32(w as i32),
        ParamValue::I32(h as i32),
    ];
    let report = e
        .launch(
            &m,
            "transpose",
            [w.div_ceil(32) as u32, h.div_ceil(32) as u32, 1],
            [32, 8, 1],
            0,
            &params,
        )
        .expect("transpose");
    let out = read(&e, dout, w * h, f32::from_le_bytes);
    for y in 0..h {
        for x in 0..w {
            assert_eq!(out[x * h + y], input[y * w + x], "out[{x}][{y}]");
        }
    }
    // The tile is padded to 33 columns: the column reads are free of bank conflicts.
    assert_eq!(
        report.counters.shared_accesses,
        report.counters.shared_bank_conflict_degree_sum
    );
}

#[test]
fn fp16_arithmetic_rounds_like_the_gpu() {
    let m = module();
    let n = 256usize;
    let mut rng = Rng(9);
    let x: Vec<f16> = (0..n).map(|_| f16::from_f32(rng.f32())).collect();
    let y: Vec<f16> = (0..n).map(|_| f16::from_f32(rng.f32())).collect();
    let bytes = |v: &[f16]| v.iter().flat_map(|h| h.to_le_bytes()).collect::<Vec<_>>();
    let mut e = Emulator::new(EmuConfig::default());
    let (dx, dy) = (upload(&mut e, &bytes(&x)), upload(&mut e, &bytes(&y)));
    let params = [
        ParamValue::Ptr(dx),
        ParamValue::Ptr(dy),
        ParamValue::F32(2.0),
        ParamValue::I32(n as i32),
    ];
    run(&mut e, &m, "half_axpy", [4, 1, 1], [64, 1, 1], &params);
    let got = read(&e, dy, n, f16::from_le_bytes);
    for i in 0..n {
        assert_eq!(
            got[i],
            f16::from_f32(2.0 * x[i].to_f32() + y[i].to_f32()),
            "axpy[{i}]"
        );
    }
    // __hmul2 on packed halves: the product rounded once to f16.
    let dy2 = upload(&mut e, &bytes(&y));
    run(
        &mut e,
        &m,
        "h2_mul",
        [2, 1, 1],
        [64, 1, 1],
        &[
            ParamValue::Ptr(dx),
            ParamValue::Ptr(dy2),
            ParamValue::I32(n as i32 / 2),
        ],
    );
    let got = read(&e, dy2, n, f16::from_le_bytes);
    for i in 0..n {
        assert_eq!(
            got[i],
            f16::from_f32(x[i].to_f32() * y[i].to_f32()),
            "hmul2[{i}]"
        );
    }
}

#[test]
fn float_atomics_and_a_template_instance() {
    let m = module();
    let n = 300usize;
    let mut rng = Rng(3);
    let x: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let dx = upload(
        &mut e,
        &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    );
    let dsum = upload(&mut e, &0f32.to_le_bytes());
    run(
        &mut e,
        &m,
        "atomic_float_sum",
        [5, 1, 1],
        [64, 1, 1],
        &[
            ParamValue::Ptr(dx),
            ParamValue::Ptr(dsum),
            ParamValue::I32(n as i32),
        ],
    );
    let sum = read(&e, dsum, 1, f32::from_le_bytes)[0] as f64;
    let want: f64 = x.iter().map(|&v| v as f64).sum();
    assert!((sum - want).abs() < 1e-4, "sum {sum}, want {want}");

    let d: Vec<f64> = (0..256).map(|i| i as f64 - 100.0).collect();
    let dd = upload(
        &mut e,
        &d.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    );
    run(
        &mut e,
        &m,
        "_Z10tmpl_scaleILi128EEvPdi",
        [2, 1, 1],
        [128, 1, 1],
        &[ParamValue::Ptr(dd), ParamValue::I32(256)],
    );
    let got = read(&e, dd, 256, f64::from_le_bytes);
    for i in 0..256 {
        assert_eq!(got[i], d[i] * 2.5 + (i as f64).sqrt(), "d[{i}]");
    }
}

#[test]
fn redux_and_match_are_warp_collectives() {
    let m = module();
    let mut rng = Rng(21);
    let x: Vec<u32> = (0..32).map(|_| (rng.next() % 1000) as u32).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let dx = upload(
        &mut e,
        &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    );
    let out = upload(&mut e, &[0xFF; 96 * 4]);
    run(
        &mut e,
        &m,
        "redux_match",
        [1, 1, 1],
        [32, 1, 1],
        &[ParamValue::Ptr(dx), ParamValue::Ptr(out)],
    );
    let got = read(&e, out, 96, u32::from_le_bytes);
    let (sum, max) = (x.iter().sum::<u32>(), *x.iter().max().expect("32 values"));
    for l in 0..32 {
        let same: u32 = (0..32)
            .filter(|&k| x[k] & 3 == x[l] & 3)
            .map(|k| 1u32 << k)
            .sum();
        assert_eq!(&got[3 * l..3 * l + 3], &[sum, max, same], "lane {l}");
    }
}

#[test]
fn printf_and_assert_from_the_device_runtime() {
    let m = module();
    let mut e = Emulator::new(EmuConfig::default());
    let out = upload(&mut e, &[0; 32 * 4]);
    let report = e
        .launch(
            &m,
            "with_printf",
            [2, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::Ptr(out)],
        )
        .err()
        .and_then(|err| match err {
            // Both blocks write out[threadIdx.x]: the race is real and reported; printf still ran.
            EmuError::Faulted { faults, report } => {
                assert!(
                    faults.iter().all(|f| f.kind == FaultKind::DataRace),
                    "{faults:?}"
                );
                Some(report)
            }
            _ => None,
        })
        .expect("the kernel's cross-block race is reported");
    assert_eq!(
        report.printf,
        vec!["block 0 says hi 1.500000\n", "block 1 says hi 1.500000\n"]
    );

    let x: Vec<i32> = (0..32).map(|i| if i == 7 { -1 } else { i }).collect();
    let dx = upload(
        &mut e,
        &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    );
    let dy = upload(&mut e, &[0; 32 * 4]);
    match e.launch(
        &m,
        "checked",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(dx), ParamValue::Ptr(dy)],
    ) {
        Err(EmuError::Faulted { faults, .. }) => {
            let f = &faults[0];
            assert_eq!((f.kind, f.lane), (FaultKind::Trap, Some(7)), "{f}");
            assert!(
                f.message.contains("v >= 0") && f.message.contains("extra.cu"),
                "{}",
                f.message
            );
        }
        other => panic!("a failed assert must be a fault, got {other:?}"),
    }
}

#[test]
fn struct_parameters_by_value_and_cas_loops() {
    let m = module();
    let mut e = Emulator::new(EmuConfig::default());
    // struct Params { float scale; int n; float bias[4]; }
    let n = 100usize;
    let mut p = Vec::new();
    p.extend(2.0f32.to_le_bytes());
    p.extend((n as i32).to_le_bytes());
    for b in [1.0f32, 2.0, 3.0, 4.0] {
        p.extend(b.to_le_bytes());
    }
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let dx = upload(
        &mut e,
        &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    );
    let dy = upload(&mut e, &f32::NAN.to_le_bytes().repeat(n));
    run(
        &mut e,
        &m,
        "ldg_struct",
        [2, 1, 1],
        [32, 1, 1],
        &[
            ParamValue::Ptr(dx),
            ParamValue::Ptr(dy),
            ParamValue::Bytes(p),
        ],
    );
    let y = read(&e, dy, n, f32::from_le_bytes);
    for i in 0..n {
        assert_eq!(y[i], x[i] * 2.0 + [1.0, 2.0, 3.0, 4.0][i & 3], "y[{i}]");
    }
    // The programming guide's atomicCAS loop reads the word plainly first: not a race.
    let mut rng = Rng(4);
    let v: Vec<f32> = (0..256).map(|_| rng.f32()).collect();
    let dv = upload(
        &mut e,
        &v.iter().flat_map(|a| a.to_le_bytes()).collect::<Vec<_>>(),
    );
    let dm = upload(&mut e, &f32::MIN.to_le_bytes());
    run(
        &mut e,
        &m,
        "cas_max",
        [4, 1, 1],
        [64, 1, 1],
        &[
            ParamValue::Ptr(dv),
            ParamValue::Ptr(dm),
            ParamValue::I32(256),
        ],
    );
    assert_eq!(
        read(&e, dm, 1, f32::from_le_bytes)[0],
        v.iter().cloned().fold(f32::MIN, f32::max)
    );
}

#[test]
fn a_plain_write_still_races_with_atomics() {
    let src = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p) {
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  .reg .pred %q;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %q, %r1, 0;
  @%q st.global.u32 [%rd2], %r1;
  @!%q atom.global.add.u32 %r2, [%rd2], 1;
  ret;
}
"#;
    let m = Module::parse(src).expect("parses");
    let mut e = Emulator::new(EmuConfig::default());
    let p = upload(&mut e, &[0; 4]);
    match e.launch(&m, "k", [1, 1, 1], [64, 1, 1], 0, &[ParamValue::Ptr(p)]) {
        Err(EmuError::Faulted { faults, .. }) => assert_eq!(faults[0].kind, FaultKind::DataRace),
        other => panic!("expected a race between the store and the atomics, got {other:?}"),
    }
}
