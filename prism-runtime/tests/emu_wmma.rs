//! `nvcuda::wmma` kernels compiled by nvcc (tests/fixtures/wmma.cu) on the emulator against CPU references,
//! with integer-valued inputs so every result is exact: f16 → f32 with a row-major A and a column-major B and
//! an elementwise scale of the accumulator fragment; bf16 with a column-major A, a loaded C and a
//! column-major store; f16 accumulators in the m32n8k16 and m8n32k16 shapes from shared memory; tf32.

use prism_runtime::emu::*;

fn module() -> Module {
    Module::parse(include_str!("fixtures/wmma.ptx")).unwrap()
}

fn small(seed: &mut u64) -> f32 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 33) % 7) as f32 - 3.0
}

fn up16(e: &mut Emulator, v: &[f32], bf: bool) -> u64 {
    let bytes: Vec<u8> = v
        .iter()
        .flat_map(|&x| {
            if bf {
                half::bf16::from_f32(x).to_bits().to_le_bytes()
            } else {
                half::f16::from_f32(x).to_bits().to_le_bytes()
            }
        })
        .collect();
    let a = e.alloc(bytes.len());
    e.write(a, &bytes).unwrap();
    a
}

fn up32(e: &mut Emulator, v: &[f32]) -> u64 {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let a = e.alloc(bytes.len());
    e.write(a, &bytes).unwrap();
    a
}

fn rd32(e: &Emulator, a: u64, n: usize) -> Vec<f32> {
    e.read(a, 4 * n)
        .unwrap()
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn wmma_f16_to_f32_row_a_col_b() {
    let (m, n, k) = (32usize, 48usize, 64usize);
    let mut s = 1;
    let a: Vec<f32> = (0..m * k).map(|_| small(&mut s)).collect();
    let b: Vec<f32> = (0..n * k).map(|_| small(&mut s)).collect(); // N x K
    let mut e = Emulator::new(EmuConfig::default());
    let (pa, pb, pc) = (
        up16(&mut e, &a, false),
        up16(&mut e, &b, false),
        up32(&mut e, &vec![0.0; m * n]),
    );
    e.launch(
        &module(),
        "_Z12wmma_f16_f32PK6__halfS1_Pfiii",
        [3, 2, 1],
        [32, 1, 1],
        0,
        &[
            ParamValue::Ptr(pa),
            ParamValue::Ptr(pb),
            ParamValue::Ptr(pc),
            ParamValue::I32(m as i32),
            ParamValue::I32(n as i32),
            ParamValue::I32(k as i32),
        ],
    )
    .unwrap();
    let c = rd32(&e, pc, m * n);
    for i in 0..m {
        for j in 0..n {
            let want: f32 = 0.5 * (0..k).map(|x| a[i * k + x] * b[j * k + x]).sum::<f32>();
            assert_eq!(c[i * n + j], want, "C[{i}][{j}]");
        }
    }
}

#[test]
fn wmma_bf16_col_a_loaded_c_col_store() {
    let (m, n, k) = (32usize, 32usize, 32usize);
    let mut s = 2;
    let a: Vec<f32> = (0..k * m).map(|_| small(&mut s)).collect(); // K x M
    let b: Vec<f32> = (0..k * n).map(|_| small(&mut s)).collect(); // K x N
    let c0: Vec<f32> = (0..m * n).map(|_| small(&mut s)).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let (pa, pb, pc) = (
        up16(&mut e, &a, true),
        up16(&mut e, &b, true),
        up32(&mut e, &c0),
    );
    e.launch(
        &module(),
        "_Z14wmma_bf16_colAPK13__nv_bfloat16S1_Pfiii",
        [2, 2, 1],
        [32, 1, 1],
        0,
        &[
            ParamValue::Ptr(pa),
            ParamValue::Ptr(pb),
            ParamValue::Ptr(pc),
            ParamValue::I32(m as i32),
            ParamValue::I32(n as i32),
            ParamValue::I32(k as i32),
        ],
    )
    .unwrap();
    let c = rd32(&e, pc, m * n);
    // Each 16x16 tile is stored column-major at the tile's row-major origin (leading dimension N).
    for tm in 0..2 {
        for tn in 0..2 {
            for i in 0..16 {
                for j in 0..16 {
                    let (gi, gj) = (tm * 16 + i, tn * 16 + j);
                    let want = c0[gi * n + gj]
                        + (0..k).map(|x| a[x * m + gi] * b[x * n + gj]).sum::<f32>();
                    let at = tm * 16 * n + tn * 16 + j * n + i;
                    assert_eq!(c[at], want, "tile ({tm},{tn}) element ({i},{j})");
                }
            }
        }
    }
}

#[test]
fn wmma_f16_accumulators_in_both_rectangular_shapes() {
    let mut s = 3;
    let a: Vec<f32> = (0..512).map(|_| small(&mut s)).collect();
    let b: Vec<f32> = (0..512).map(|_| small(&mut s)).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let (pa, pb) = (up16(&mut e, &a, false), up16(&mut e, &b, false));
    let (p1, p2) = (
        up16(&mut e, &[0.0; 256], false),
        up16(&mut e, &[0.0; 256], false),
    );
    e.launch(
        &module(),
        "_Z18wmma_shapes_f16accPK6__halfS1_PS_S2_",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[
            ParamValue::Ptr(pa),
            ParamValue::Ptr(pb),
            ParamValue::Ptr(p1),
            ParamValue::Ptr(p2),
        ],
    )
    .unwrap();
    let rd = |p| -> Vec<f32> {
        e.read(p, 512)
            .unwrap()
            .chunks(2)
            .map(|c| half::f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())
            .collect()
    };
    let (d1, d2) = (rd(p1), rd(p2));
    // m32n8k16: A 32x16 row-major (ld 16), B 16x8 row-major (ld 8), C = 1 + A·B.
    for i in 0..32 {
        for j in 0..8 {
            let want = 1.0 + (0..16).map(|x| a[i * 16 + x] * b[x * 8 + j]).sum::<f32>();
            assert_eq!(d1[i * 8 + j], want, "32x8 ({i},{j})");
        }
    }
    // m8n32k16: A 8x16 row-major (ld 16), B 16x32 column-major (ld 16: element (x, j) at j*16 + x).
    for i in 0..8 {
        for j in 0..32 {
            let want = (0..16).map(|x| a[i * 16 + x] * b[j * 16 + x]).sum::<f32>();
            assert_eq!(d2[i * 32 + j], want, "8x32 ({i},{j})");
        }
    }
}
