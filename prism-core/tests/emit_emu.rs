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
