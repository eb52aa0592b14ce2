//! `stmatrix_bf16(tile, &acc, j)`: a warpgroup stores box `j` (columns 64j..64j + 64) of its wgmma
//! accumulator fragment as bf16 into its 64 × 64 tile in the 128-byte swizzle, and a TMA store writes the tile
//! out. Checked on the emulator against the fragment layout (PTX ISA, wgmma D: register `i` of thread `t` is
//! row `16·(t / 32) + (t % 32) / 4 + 8·((i / 2) % 2)`, column `8·(i / 4) + 2·(t % 4) + i % 2`), for two
//! warpgroups with their own tiles and both boxes of a 128-column fragment; dropping the barrier the
//! compiler places between the stmatrix writes and the TMA store's read is reported by the emulator.

mod emit_support;
use emit_support::*;
use prism_runtime::emu::{
    EmuConfig, EmuError, Emulator, Module, ParamValue, TensorDataType, TensorMap, TensorSwizzle,
};

const SRC: &str = r#"
#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256)]
fn store_fragments(d: TensorMapMut<bf16, 2>) {
    group(block[1], || {
        let e: Shared<[bf16; 64 * 64], Swizzle128>;
        let f: Shared<[bf16; 64 * 64], Swizzle128>;
        partition(e, thread[128], |x| x, |e_w| {
            partition(f, thread[128], |x| x, |f_w| {
                match split(warpgroup) {
                    1 => {
                        #[at(thread[1])]
                        let t: u32 = id();
                        #[at(thread[1])]
                        let mut acc = [0.0f32; 64];
                        group(thread[1], || {
                            // (1 + t / 128) · 2^(i - 32): a different bf16 value for every (t, i).
                            let mut s: f32 = 1.0 / 4294967296.0;
                            for i in 0..64 {
                                acc[i] = (1.0 + (t as f32) / 128.0) * s;
                                s = s * 2.0;
                            }
                        });
                        for j in 0..2 {
                            stmatrix_bf16(e_w, &acc, j);
                            match split(thread) {
                                1 => {
                                    tma_store(d, e_w, 64 * j, 0);
                                }
                            }
                        }
                    }
                    1 => {
                        #[at(thread[1])]
                        let t: u32 = id();
                        #[at(thread[1])]
                        let mut acc = [0.0f32; 64];
                        group(thread[1], || {
                            // (1 + t / 128) · 2^(i - 32): a different bf16 value for every (t, i).
                            let mut s: f32 = -1.0 / 4294967296.0;
                            for i in 0..64 {
                                acc[i] = (1.0 + (t as f32) / 128.0) * s;
                                s = s * 2.0;
                            }
                        });
                        for j in 0..2 {
                            stmatrix_bf16(f_w, &acc, j);
                            match split(thread) {
                                1 => {
                                    tma_store(d, f_w, 64 * j, 64);
                                }
                            }
                        }
                    }
                }
            });
        });
    });
}
"#;

/// Runs the kernel (PTX `ptx`) on a 128 × 128 bf16 `D`; returns `D` as f32 or the emulator's error.
fn run(ptx: &str, entry: &str, smem: u32) -> Result<Vec<f32>, EmuError> {
    let mut emu = Emulator::new(EmuConfig::default());
    let d = emu.alloc(128 * 128 * 2);
    let m = TensorMap::tiled(
        TensorDataType::Bf16,
        d,
        &[128, 128],
        &[256],
        &[64, 64],
        TensorSwizzle::B128,
    )
    .expect("map");
    let module = Module::parse(ptx).expect("parse");
    emu.launch(
        &module,
        entry,
        [1, 1, 1],
        [256, 1, 1],
        smem,
        &[ParamValue::Bytes(m.encode().to_vec())],
    )?;
    let raw = emu.read(d, 128 * 128 * 2).expect("read");
    Ok(raw
        .chunks_exact(2)
        .map(|b| f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16))
        .collect())
}

#[test]
fn fragments_land_where_the_wgmma_layout_says() {
    let ks = compile_src(SRC);
    assemble_all(&ks);
    let k = &ks[0];
    assert_eq!(
        k.ptx
            .matches("stmatrix.sync.aligned.m8n8.x4.shared.b16")
            .count(),
        16
    );
    let d = run(&k.ptx, &k.entry, k.contract.smem_bytes).expect("launch");
    let mut want = vec![f32::NAN; 128 * 128];
    for (g, sign) in [(0usize, 1.0f32), (1, -1.0)] {
        for t in 0..128usize {
            for i in 0..64usize {
                let row = 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2);
                let col = 8 * (i / 4) + 2 * (t % 4) + i % 2;
                // Exactly representable in bf16 (7 fraction bits), so the store is exact.
                let v = sign * (1.0 + t as f32 / 128.0) * 2f32.powi(i as i32 - 32);
                want[(64 * g + row) * 128 + col] = v;
            }
        }
    }
    for (x, (g, w)) in d.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "D[{}][{}]", x / 128, x % 128);
    }
}

#[test]
fn dropping_the_barrier_before_the_tma_store_is_reported() {
    let ks = compile_src(SRC);
    let k = &ks[0];
    // The named barrier (128 threads) right before each TMA store publishes the stmatrix writes.
    let lines: Vec<&str> = k.ptx.lines().collect();
    let mut dropped = 0;
    let broken: Vec<&str> = (0..lines.len())
        .filter(|&i| {
            let drop = lines[i].trim_start().starts_with("bar.sync")
                && lines[i].contains(", 128;")
                && lines[i + 1..]
                    .iter()
                    .take(8)
                    .any(|l| l.contains("cp.async.bulk.tensor.2d.global.shared"));
            dropped += drop as usize;
            !drop
        })
        .map(|i| lines[i])
        .collect();
    assert!(dropped > 0, "no barrier before a TMA store in\n{}", k.ptx);
    let r = run(&broken.join("\n"), &k.entry, k.contract.smem_bytes);
    assert!(
        matches!(r, Err(EmuError::Faulted { .. })),
        "the emulator must report the unordered stmatrix writes and TMA read: {r:?}"
    );
}

/// The storing thread waits for each box to be read only before the barrier after which the box is written
/// again (`cp.async.bulk.wait_group.read`, placed lazily): without those waits the next box's `stmatrix`
/// overwrites shared memory the TMA engine may still be reading, and the emulator says so.
#[test]
fn dropping_the_lazy_read_waits_is_reported() {
    let ks = compile_src(SRC);
    let k = &ks[0];
    let waits = k.ptx.matches("cp.async.bulk.wait_group.read 0;").count();
    assert!(waits > 0, "no read wait in\n{}", k.ptx);
    // Each sits right before a barrier, after the code that does not touch the box.
    let lines: Vec<&str> = k.ptx.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if l.contains("wait_group.read 0;") {
            assert!(
                lines[i + 1].trim_start().starts_with("bar.sync"),
                "{}",
                k.ptx
            );
        }
    }
    let broken: String = lines
        .iter()
        .filter(|l| !l.contains("wait_group.read 0;"))
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    let r = run(&broken, &k.entry, k.contract.smem_bytes);
    assert!(
        matches!(r, Err(EmuError::Faulted { .. })),
        "the emulator must report a box rewritten while its store may read it: {r:?}"
    );
}
