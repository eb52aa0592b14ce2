//! Helpers of the Hopper emitter tests (`emit_hopper.rs`, `emit_turns.rs`): random bf16 matrices, emulator
//! buffers and tensor maps, and a GEMM run checked against an f64 reference.
#![allow(dead_code)]

use prism_core::{CompiledKernel, ParamKind};
use prism_runtime::emu::{
    EmuConfig, Emulator, Module, ParamValue, TensorDataType, TensorMap, TensorSwizzle,
};

pub fn rng(seed: u64) -> impl FnMut() -> f32 {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// bf16 bits of `x` (round to nearest even) and the value they hold.
pub fn bf16(x: f32) -> (u16, f32) {
    let b = x.to_bits();
    let r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) as u16;
    (r, f32::from_bits((r as u32) << 16))
}

/// A random `rows × cols` bf16 matrix: its bytes and values.
pub fn matrix(rows: usize, cols: usize, seed: u64) -> (Vec<u8>, Vec<f32>) {
    let mut g = rng(seed);
    let (mut bytes, mut vals) = (Vec::new(), Vec::new());
    for _ in 0..rows * cols {
        let (bits, v) = bf16(g());
        bytes.extend_from_slice(&bits.to_le_bytes());
        vals.push(v);
    }
    (bytes, vals)
}

pub fn buf(emu: &mut Emulator, bytes: &[u8]) -> u64 {
    let a = emu.alloc(bytes.len());
    emu.write(a, bytes).expect("write");
    a
}

/// A 2-D tensor map over a row-major `rows × cols` bf16 matrix at `addr`, with the box the kernel's
/// parameter records (the compiler's requirement, checked here like the runtime does).
pub fn tmap(k: &CompiledKernel, param: usize, addr: u64, rows: u64, cols: u64) -> ParamValue {
    let ParamKind::TensorMap {
        box_dims, swizzle, ..
    } = &k.params[param].kind
    else {
        panic!("parameter {param} of `{}` is not a tensor map", k.entry)
    };
    let sw = match swizzle.span() {
        128 => TensorSwizzle::B128,
        64 => TensorSwizzle::B64,
        32 => TensorSwizzle::B32,
        _ => TensorSwizzle::None,
    };
    let m = TensorMap::tiled(
        TensorDataType::Bf16,
        addr,
        &[cols, rows],
        &[cols * 2],
        box_dims,
        sw,
    )
    .expect("tensor map");
    ParamValue::Bytes(m.encode().to_vec())
}

pub fn launch(emu: &mut Emulator, k: &CompiledKernel, blocks: u32, params: &[ParamValue]) {
    let module = Module::parse(&k.ptx)
        .unwrap_or_else(|e| panic!("emulator cannot parse `{}`: {e:?}\n{}", k.entry, k.ptx));
    let threads = k.contract.threads_exact.expect("threads = N");
    emu.launch(
        &module,
        &k.entry,
        [blocks, 1, 1],
        [threads, 1, 1],
        k.contract.smem_bytes,
        params,
    )
    .unwrap_or_else(|e| panic!("launch of `{}` failed: {e:?}", k.entry));
}

/// Runs a GEMM kernel with `tm × tn` tiles on random inputs and checks every element of D.
pub fn run_gemm_tile(
    k: &CompiledKernel,
    (tm, bn): (u32, u32),
    (m, n, kk): (u32, u32, u32),
    seed: u64,
) {
    let (ab, av) = matrix(m as usize, kk as usize, seed);
    let (bb, bv) = matrix(n as usize, kk as usize, seed + 1);
    let mut emu = Emulator::new(EmuConfig::default());
    let da = buf(&mut emu, &ab);
    let db = buf(&mut emu, &bb);
    let dd = buf(&mut emu, &f32::NAN.to_le_bytes().repeat((m * n) as usize));
    let blocks = m.div_ceil(tm) * n.div_ceil(bn);
    let params = [
        tmap(k, 0, da, m as u64, kk as u64),
        tmap(k, 1, db, n as u64, kk as u64),
        ParamValue::Ptr(dd),
        ParamValue::U32(m),
        ParamValue::U32(n),
        ParamValue::U32(kk),
    ];
    launch(&mut emu, k, blocks, &params);
    let out = emu.read(dd, (m * n * 4) as usize).expect("read");
    let (mut bad, mut first) = (0usize, None);
    for i in 0..m as usize {
        for j in 0..n as usize {
            let (mut want, mut mag) = (0f64, 0f64);
            for x in 0..kk as usize {
                let p = av[i * kk as usize + x] as f64 * bv[j * kk as usize + x] as f64;
                want += p;
                mag += p.abs();
            }
            let o = i * n as usize + j;
            let got =
                f32::from_le_bytes([out[4 * o], out[4 * o + 1], out[4 * o + 2], out[4 * o + 3]]);
            let err = (got as f64 - want).abs();
            if err.is_nan() || err > 1e-5 * mag + 1e-6 {
                bad += 1;
                first.get_or_insert((i, j, got, want));
            }
        }
    }
    assert_eq!(
        bad, 0,
        "`{}` at {m}×{n}×{kk}: {bad} wrong elements, first {first:?}",
        k.entry
    );
}
