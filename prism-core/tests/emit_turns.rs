//! Consumers taking turns on a ring (`turn`, ping-pong) and swizzled tiles read by logical index, on the
//! emulator against host references (split from `emit_hopper.rs`).
mod emit_support;
use emit_support::hopper::*;
use emit_support::*;
use prism_runtime::emu::{
    EmuConfig, EmuError, Emulator, FaultKind, Module, ParamValue, TensorDataType, TensorMap,
    TensorSwizzle,
};

/// Ping-pong (`turn`): one block; the producer fills every 64 × 64 tile of D's rows in order, consumer 0
/// drains tiles 0, 2, .. and consumer 1 tiles 1, 3, .. of the same ring, each tile's drains one turn.
const GEMM_TURNS: &str = r#"
#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 384, instances = [2])]
pub fn gemm_turns<const STAGES: u32>(
    a: TensorMap<bf16, 2>,
    b: TensorMap<bf16, 2>,
    d: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    let tiles: u32 = (m + 63) / 64;
    let k_tiles: u32 = (k + 63) / 64;
    partition(d, block[1], |x| x, |d_blk| {
        group(block[1], || {
            let sa: Shared<[bf16; STAGES * 64 * 64], Swizzle128>;
            let sb: Shared<[bf16; STAGES * 64 * 64], Swizzle128>;
            partition(d_blk, thread[128], |x| x, |d_wg| {
                ring(STAGES, (sa, sb), |r| match split(warpgroup) {
                    1 => {
                        for t in 0..tiles {
                            for kt in 0..k_tiles {
                                fill(r, t * k_tiles + kt, |sa_s, sb_s| match split(thread) {
                                    1 => {
                                        tma_load(sa_s, a, kt * 64, t * 64);
                                        tma_load(sb_s, b, kt * 64, 0);
                                    }
                                });
                            }
                        }
                    }
                    1 => {
                        consume::<0>(r, d_wg, tiles, k_tiles, m, n);
                    }
                    1 => {
                        consume::<1>(r, d_wg, tiles, k_tiles, m, n);
                    }
                });
            });
        });
    });
}

#[prism_device(requires(thread[128]))]
pub fn consume<const C: u32>(r: Ring<(bf16, bf16)>, d: *mut f32, tiles: u32, k_tiles: u32, m: u32, n: u32) {
    #[at(thread[1])]
    let mut acc = [0.0f32; 32];
    #[at(thread[1])]
    let t_id: u32 = id();
    #[at(thread[1])]
    let r0: u32 = 16 * (t_id / 32) + (t_id % 32) / 4;
    #[at(thread[1])]
    let c0: u32 = 2 * (t_id % 4);
    partition(d, thread[1], |q, c| (r0 + q) * n + c0 + c, |d_t| {
        for j in 0..(tiles + 1 - C) / 2 {
            let t: u32 = 2 * j + C;
            turn(r, C, || {
                for kt in 0..k_tiles {
                    drain(r, t * k_tiles + kt, |sa_s, sb_s| {
                        for kk in 0..4 {
                            wgmma_bf16(&mut acc, sa_s, kk * 16, sb_s, kk * 16, kt > 0 || kk > 0);
                        }
                    });
                }
            });
            group(thread[1], || {
                for i in 0..32 {
                    let dr: u32 = 8 * ((i / 2) % 2);
                    let dc: u32 = 8 * (i / 4) + i % 2;
                    if t * 64 + r0 + dr < m && c0 + dc < n {
                        d_t[(t * 64 + dr, dc)] = acc[i];
                    }
                }
            });
        }
    });
}
"#;

/// The two consumers take turns: the ring's empty mbarriers count one consumer's arrivals (4 warps), the
/// turn mbarrier one turn's; tile counts odd and even, k-steps that wrap the 2-slot ring several times
/// within a turn (where a consumer that did not wait for its turn could pass a full-barrier wait two
/// phases early), ragged sizes; every element checked, races and deadlocks checked by the emulator.
#[test]
fn consumers_taking_turns_on_one_ring() {
    let ks = compile_src(GEMM_TURNS);
    assemble_all(&ks);
    let k = &ks[0];
    for want in [
        "mbarrier.init.shared::cta.b64 [__prism_ring0_turn+8], 4;",
        "mbarrier.init.shared::cta.b64 [__prism_ring0_empty+0], 4;",
    ] {
        assert!(k.ptx.contains(want), "{want}\n{}", k.ptx);
    }
    for (mnk, seed) in [
        ((320, 64, 512), 41),
        ((200, 40, 136), 42),
        ((64, 64, 256), 43),
    ] {
        run_gemm_tile(k, (mnk.0, 64), mnk, seed);
    }
}

/// Without a turn's wait, consumer 1 starts its first tile at once and waits on slots many phases ahead of
/// the producer (its first step is 8 steps on, four rounds of the 2-slot ring): `try_wait.parity` passes on
/// an older phase and it reads a slot before its fill. The emulator reports it.
#[test]
fn dropping_a_turn_wait_is_reported() {
    let ks = compile_src(GEMM_TURNS);
    let k = &ks[0];
    let lines: Vec<&str> = k.ptx.lines().collect();
    let waits: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("try_wait") && lines[i - 1].contains("$L"))
        .filter(|&i| {
            lines[..i]
                .iter()
                .rev()
                .take(6)
                .any(|l| l.contains("__prism_ring0_turn"))
        })
        .collect();
    assert_eq!(waits.len(), 2, "one turn wait per consumer\n{}", k.ptx);
    let mut broken = k.clone();
    broken.ptx = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != waits[1] && *i != waits[1] + 1)
        .map(|(_, l)| *l)
        .collect::<Vec<_>>()
        .join("\n");
    let (m, n, kk) = (128u32, 64u32, 64 * 8);
    let (ab, _) = matrix(m as usize, kk as usize, 9);
    let (bb, _) = matrix(n as usize, kk as usize, 10);
    // The consumers then wait forever on phases that never complete: the emulator reports the deadlock.
    let mut emu = Emulator::new(EmuConfig::default());
    let da = buf(&mut emu, &ab);
    let db = buf(&mut emu, &bb);
    let dd = buf(&mut emu, &vec![0u8; (m * n * 4) as usize]);
    let params = [
        tmap(k, 0, da, m as u64, kk as u64),
        tmap(k, 1, db, n as u64, kk as u64),
        ParamValue::Ptr(dd),
        ParamValue::U32(m),
        ParamValue::U32(n),
        ParamValue::U32(kk),
    ];
    let run = |emu: &mut Emulator, ptx: &str| {
        let module = Module::parse(ptx).expect("parse");
        let r = emu.launch(
            &module,
            &k.entry,
            [1, 1, 1],
            [384, 1, 1],
            k.contract.smem_bytes,
            &params,
        );
        r.map(|_| ())
    };
    run(&mut emu, &k.ptx).expect("the intact kernel runs");
    match run(&mut emu, &broken.ptx) {
        Err(EmuError::Faulted { faults, .. }) => assert!(
            faults.iter().any(|f| f.kind == FaultKind::Deadlock),
            "{faults:?}"
        ),
        other => panic!("dropping consumer 1's turn wait went unnoticed: {other:?}"),
    }
}

/// A TMA-loaded swizzled tile read back by index: `s[r * W + c]` is element `(r, c)` of the box (the
/// compiler applies the layout's swizzle to the address), in every swizzle mode.
const TMA_THEN_READ: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128)]
pub fn tma_then_read(src: TensorMap<bf16, 2>, out: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(out, block[1], |x| b * 32 * @W@ + x, |o_blk| {
        group(block[1], || {
            let s: Shared<[bf16; 32 * @W@], @L@>;
            async_(s, |s_async| match split(thread) {
                1 => {
                    tma_load(s_async, src, 0, b * 32);
                }
            });
            #[at(thread[1])]
            let t: u32 = id();
            partition(o_blk, thread[1], |x| t * (@W@ / 4) + x, |o_t| {
                group(thread[1], || {
                    for i in 0..@W@ / 4 {
                        o_t[i] = s[t * (@W@ / 4) + i] as f32;
                    }
                });
            });
        });
    });
}
"#;

#[test]
fn swizzled_tiles_are_read_by_logical_index() {
    for (layout, w, sw) in [
        ("Swizzle128", 64u64, TensorSwizzle::B128),
        ("Swizzle64", 32, TensorSwizzle::B64),
        ("Swizzle32", 16, TensorSwizzle::B32),
    ] {
        let src = TMA_THEN_READ
            .replace("@L@", layout)
            .replace("@W@", &w.to_string());
        let ks = compile_src(&src);
        assemble_all(&ks);
        let k = &ks[0];
        let rows = 96u64; // three blocks of 32 rows
        let (bytes, vals) = matrix(rows as usize, w as usize, 7 + w);
        let mut emu = Emulator::new(EmuConfig::default());
        let a = buf(&mut emu, &bytes);
        let out = buf(
            &mut emu,
            &f32::NAN.to_le_bytes().repeat((rows * w) as usize),
        );
        let m = TensorMap::tiled(
            TensorDataType::Bf16,
            a,
            &[w, rows],
            &[w * 2],
            &[w as u32, 32],
            sw,
        )
        .expect("map");
        let module = Module::parse(&k.ptx).expect("parse");
        emu.launch(
            &module,
            &k.entry,
            [3, 1, 1],
            [128, 1, 1],
            k.contract.smem_bytes,
            &[ParamValue::Bytes(m.encode().to_vec()), ParamValue::Ptr(out)],
        )
        .unwrap_or_else(|e| panic!("{layout}: {e}"));
        let got = emu.read(out, (rows * w * 4) as usize).expect("read");
        let wrong = got
            .chunks_exact(4)
            .zip(&vals)
            .filter(|(g, v)| f32::from_le_bytes([g[0], g[1], g[2], g[3]]) != **v)
            .count();
        assert_eq!(
            wrong,
            0,
            "{layout}: {wrong} of {} elements read from the wrong place",
            rows * w
        );
    }
}
