//! Emitter tests on small kernels written for them: every kernel assembles with ptxas (no warnings, no
//! local memory), golden checks on the PTX (bra.uni, unrolling, vector forms), and runs on the emulator
//! against CPU references. Outputs are pre-filled with NaN / a sentinel so unwritten elements are caught.
mod emit_support;
use emit_support::*;
use prism_core::CompiledKernel;
use prism_runtime::emu::{EmuConfig, Emulator, Module, ParamValue};

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

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn to_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
fn to_u32(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn buf(emu: &mut Emulator, bytes: &[u8]) -> u64 {
    let a = emu.alloc(bytes.len());
    emu.write(a, bytes).expect("write");
    a
}

fn launch(
    emu: &mut Emulator,
    k: &CompiledKernel,
    blocks: u32,
    threads: u32,
    params: &[ParamValue],
) {
    let module = Module::parse(&k.ptx)
        .unwrap_or_else(|e| panic!("emulator cannot parse `{}`: {e:?}\n{}", k.entry, k.ptx));
    emu.launch(
        &module,
        &k.entry,
        [blocks, 1, 1],
        [threads, 1, 1],
        k.contract.smem_bytes,
        params,
    )
    .unwrap_or_else(|e| panic!("launch of `{}` failed: {e:?}\n{}", k.entry, k.ptx));
}

fn one(src: &str) -> CompiledKernel {
    let ks = compile_src(src);
    assert_eq!(ks.len(), 1);
    assemble_all(&ks);
    ks.into_iter().next().unwrap_or_else(|| unreachable!())
}

const WARP_REDUCE: &str = r#"
#[prism_device(requires(thread[32]), returns = thread[1])]
pub fn warp_sum(#[at(thread[1])] v: f32) -> f32 {
    #[at(thread[1])]
    let mut x: f32 = v;
    let mut off: u32 = 16;
    while off > 0 {
        x += shfl_down(x, off);
        off = off / 2;
    }
    x
}

#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128)]
pub fn reduce_sum(x: *const f32, out: *mut f32, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    group(thread[32], || {
        #[at(thread[1])]
        let mut v: f32 = 0.0;
        group(thread[1], || {
            if i < n {
                v = x[i];
            }
        });
        #[at(thread[1])]
        let s: f32 = warp_sum(v);
        match split(thread) {
            1 => {
                atomic_add(out, 0, s);
            }
        }
    });
}
"#;

#[test]
fn warp_reduction_with_shfl_down() {
    let k = one(WARP_REDUCE);
    assert!(k.ptx.contains("shfl.sync.down.b32"), "{}", k.ptx);
    assert!(k.ptx.contains("atom.global.add.f32"));
    assert!(k.ptx.contains(".reqntid 128"));
    assert_eq!(k.contract.threads_exact, Some(128));
    // `off` is thread[32]: the loop branch is warp-uniform. `i < n` (thread[1]) is not.
    assert!(k.ptx.contains("bra.uni"), "{}", k.ptx);
    let n = 1000usize;
    let x = random(n, 7);
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = buf(&mut emu, &f32_bytes(&x));
    let dout = buf(&mut emu, &f32_bytes(&[0.0]));
    launch(
        &mut emu,
        &k,
        8,
        128,
        &[
            ParamValue::Ptr(dx),
            ParamValue::Ptr(dout),
            ParamValue::U32(n as u32),
        ],
    );
    let got = to_f32(&emu.read(dout, 4).expect("read"))[0];
    let want: f32 = x.iter().sum();
    assert!((got - want).abs() < 1e-3, "sum = {got}, want {want}");
}

const SPLIT: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128)]
pub fn split_tag(y: *mut u32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(y, block[1], |x| b * 128 + x, |y_blk| {
        group(block[1], || {
            #[at(thread[1])]
            let t: u32 = id();
            partition(y_blk, thread[1], |x| t + x, |y_t| {
                match split(warp) {
                    2 => {
                        group(thread[1], || {
                            y_t[0] = 1;
                        });
                    }
                    1 => {
                        match split(thread) {
                            16 => {
                                group(thread[1], || {
                                    y_t[0] = 2;
                                });
                            }
                            8 => {
                                group(thread[1], || {
                                    y_t[0] = 3;
                                });
                            }
                        }
                    }
                }
            });
        });
    });
}
"#;

#[test]
fn split_arms_run_on_their_threads() {
    let k = one(SPLIT);
    // Warp-sized arms test with bra.uni; the 16/8-thread arms inside a warp do not.
    let lines: Vec<&str> = k
        .ptx
        .lines()
        .filter(|l| l.contains("setp.ge.u32") || l.contains(" bra"))
        .collect();
    assert!(k.ptx.contains("bra.uni"), "{}", k.ptx);
    assert!(lines.iter().any(|l| l.contains(" bra $")), "{}", k.ptx);
    let mut emu = Emulator::new(EmuConfig::default());
    let n = 3 * 128;
    let dy = buf(&mut emu, &u32_bytes(&vec![7u32; n]));
    launch(&mut emu, &k, 3, 128, &[ParamValue::Ptr(dy)]);
    let y = to_u32(&emu.read(dy, n * 4).expect("read"));
    for (i, v) in y.iter().enumerate() {
        let t = i % 128;
        let want = match t {
            0..=63 => 1,
            64..=79 => 2,
            80..=87 => 3,
            _ => 7,
        };
        assert_eq!(*v, want, "y[{i}]");
    }
}

const HISTOGRAM: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 64, smem = 64)]
pub fn histogram(x: *const u32, hist: *mut u32, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    group(block[1], || {
        let h: Shared<[u32; 16]>;
        #[at(thread[1])]
        let t: u32 = id();
        partition(h, thread[1], |j| t + j, |h_t| {
            group(thread[1], || {
                if t < 16 {
                    h_t[0] = 0;
                }
            });
        });
        group(thread[1], || {
            if i < n {
                atomic_add(h, x[i] % 16, 1);
            }
        });
        sync_threads();
        group(thread[1], || {
            if t < 16 {
                atomic_add(hist, t, h[t]);
            }
        });
    });
}
"#;

#[test]
fn shared_memory_and_atomics() {
    let k = one(HISTOGRAM);
    assert!(k.ptx.contains("atom.shared.add.u32"), "{}", k.ptx);
    assert!(k.ptx.contains("atom.global.add.u32"));
    assert!(k
        .ptx
        .contains(".extern .shared .align 16 .b8 __prism_smem[];"));
    assert_eq!(k.contract.smem_bytes, 64);
    let n = 1000usize;
    let x: Vec<u32> = random(n, 9)
        .iter()
        .map(|v| (v.abs() * 1000.0) as u32)
        .collect();
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = buf(&mut emu, &u32_bytes(&x));
    let dh = buf(&mut emu, &u32_bytes(&[0u32; 16]));
    launch(
        &mut emu,
        &k,
        (n as u32).div_ceil(64),
        64,
        &[
            ParamValue::Ptr(dx),
            ParamValue::Ptr(dh),
            ParamValue::U32(n as u32),
        ],
    );
    let h = to_u32(&emu.read(dh, 64).expect("read"));
    let mut want = [0u32; 16];
    for v in &x {
        want[(*v % 16) as usize] += 1;
    }
    assert_eq!(h, want);
}

const HALF: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn halves(x: *const f16, y: *mut bf16, z: *mut f16, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(y, thread[1], |j| i + j, |y_t| {
        partition(z, thread[1], |j| i + j, |z_t| {
            group(thread[1], || {
                if i < n {
                    let v: f32 = x[i] as f32;
                    y_t[0] = (v * 2.0) as bf16;
                    z_t[0] = (v + 1.0) as f16;
                }
            });
        });
    });
}
"#;

#[test]
fn f16_bf16_conversions() {
    use half::{bf16, f16};
    let k = one(HALF);
    assert!(k.ptx.contains("ld.global.nc.b16"), "{}", k.ptx);
    assert!(k.ptx.contains("cvt.f32.f16"));
    assert!(k.ptx.contains("cvt.rn.bf16.f32"));
    assert!(k.ptx.contains("cvt.rn.f16.f32"));
    assert!(
        k.ptx.contains(".target sm_80"),
        "bf16 conversions must not force Hopper"
    );
    let n = 100usize;
    let x: Vec<f16> = random(n, 5)
        .iter()
        .map(|v| f16::from_f32(v * 10.0))
        .collect();
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = buf(
        &mut emu,
        &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    );
    let dy = buf(&mut emu, &vec![0xffu8; n * 2]);
    let dz = buf(&mut emu, &vec![0xffu8; n * 2]);
    launch(
        &mut emu,
        &k,
        4,
        32,
        &[
            ParamValue::Ptr(dx),
            ParamValue::Ptr(dy),
            ParamValue::Ptr(dz),
            ParamValue::U32(n as u32),
        ],
    );
    let y = emu.read(dy, n * 2).expect("read");
    let z = emu.read(dz, n * 2).expect("read");
    for i in 0..n {
        let v = x[i].to_f32();
        let gy = bf16::from_le_bytes([y[2 * i], y[2 * i + 1]]);
        let gz = f16::from_le_bytes([z[2 * i], z[2 * i + 1]]);
        assert_eq!(gy, bf16::from_f32(v * 2.0), "y[{i}]");
        assert_eq!(gz, f16::from_f32(v + 1.0), "z[{i}]");
    }
}

const VEC4: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn copy4(x: *const f32, y: *mut f32, n4: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(y, thread[1], |j| i * 4 + j, |y_t| {
        group(thread[1], || {
            if i < n4 {
                let v: [f32; 4] = load4(x, i * 4);
                store4(y_t, 0, [v[3], v[2], v[1], v[0]]);
            }
        });
    });
}
"#;

#[test]
fn vector_load_store() {
    let k = one(VEC4);
    assert!(k.ptx.contains("ld.global.nc.v4.f32"), "{}", k.ptx);
    assert!(k.ptx.contains("st.global.v4.f32"));
    let n4 = 50usize;
    let x = random(n4 * 4, 11);
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = buf(&mut emu, &f32_bytes(&x));
    let dy = buf(&mut emu, &f32_bytes(&vec![f32::NAN; n4 * 4]));
    launch(
        &mut emu,
        &k,
        2,
        32,
        &[
            ParamValue::Ptr(dx),
            ParamValue::Ptr(dy),
            ParamValue::U32(n4 as u32),
        ],
    );
    let y = to_f32(&emu.read(dy, n4 * 16).expect("read"));
    for i in 0..n4 * 4 {
        assert_eq!(y[i], x[i / 4 * 4 + 3 - i % 4], "y[{i}]");
    }
}

const ASM: &str = r#"
#[prism_device(requires(thread[1]), returns = thread[1])]
pub fn mad3(a: u32, b: u32, c: u32) -> u32 {
    let mut r: u32 = 0;
    unsafe {
        asm!("mad.lo.u32 {r}, {a}, {b}, {c};", r = out(u32) r, a = in(u32) a, b = in(u32) b, c = in(u32) c);
    }
    r
}

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn use_asm(y: *mut u32, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(y, thread[1], |j| i + j, |y_t| {
        group(thread[1], || {
            if i < n {
                y_t[0] = mad3(i, 3, 5);
            }
        });
    });
}
"#;

#[test]
fn inline_asm_device_function() {
    let k = one(ASM);
    assert!(k.ptx.contains("mad.lo.u32"), "{}", k.ptx);
    let n = 70usize;
    let mut emu = Emulator::new(EmuConfig::default());
    let dy = buf(&mut emu, &u32_bytes(&vec![u32::MAX; n]));
    launch(
        &mut emu,
        &k,
        3,
        32,
        &[ParamValue::Ptr(dy), ParamValue::U32(n as u32)],
    );
    let y = to_u32(&emu.read(dy, n * 4).expect("read"));
    for (i, v) in y.iter().enumerate() {
        assert_eq!(*v, i as u32 * 3 + 5, "y[{i}]");
    }
}

const UNROLL: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn row_sums(x: *const f32, y: *mut f32, rows: u32, reps: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(y, thread[1], |j| i + j, |y_t| {
        group(thread[1], || {
            if i < rows {
                let mut acc = [0.0f32; 32];
                for r in 0..reps {
                    for c in 0..32 {
                        acc[c] += x[i * 32 + c];
                    }
                }
                let mut s: f32 = 0.0;
                for c in 0..32 {
                    s += acc[c];
                }
                y_t[0] = s;
            }
        });
    });
}
"#;

#[test]
fn register_array_loops_are_unrolled() {
    let k = one(UNROLL);
    assert!(!k.ptx.contains(".local"), "{}", k.ptx);
    // The 32-trip loops indexing `acc` are unrolled; the `reps` loop stays a loop.
    assert_eq!(k.ptx.matches("ld.global.nc.f32").count(), 32, "{}", k.ptx);
    assert!(k.ptx.contains("setp.ge.u32"), "{}", k.ptx);
    let rows = 40usize;
    let x = random(rows * 32, 13);
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = buf(&mut emu, &f32_bytes(&x));
    let dy = buf(&mut emu, &f32_bytes(&vec![f32::NAN; rows]));
    launch(
        &mut emu,
        &k,
        2,
        32,
        &[
            ParamValue::Ptr(dx),
            ParamValue::Ptr(dy),
            ParamValue::U32(rows as u32),
            ParamValue::U32(2),
        ],
    );
    let y = to_f32(&emu.read(dy, rows * 4).expect("read"));
    for i in 0..rows {
        let want: f32 = x[i * 32..i * 32 + 32].iter().map(|v| v + v).sum();
        assert!((y[i] - want).abs() < 1e-4, "y[{i}] = {}, want {want}", y[i]);
    }
}

#[test]
fn uniform_and_divergent_branches() {
    let src = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn branches(y: *mut u32, n: u32, flag: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(y, thread[1], |j| i + j, |y_t| {
        group(thread[1], || {
            if flag > 3 {
                y_t[0] = 1;
            }
            if i < n {
                y_t[0] = 2;
            }
        });
    });
}
"#;
    let k = one(src);
    let branches: Vec<&str> = k
        .ptx
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("@"))
        .collect();
    assert_eq!(branches.len(), 2, "{}", k.ptx);
    assert!(
        branches[0].contains("bra.uni"),
        "grid-level `flag` is uniform: {branches:?}"
    );
    assert!(
        !branches[1].contains("bra.uni") && branches[1].contains(" bra "),
        "thread-level `i` is not: {branches:?}"
    );
}

#[test]
fn templated_kernel_has_one_entry_per_instance() {
    let ks = compile_src(&program("cub_load_store.rs"));
    let names: Vec<&str> = ks.iter().map(|k| k.entry.as_str()).collect();
    assert_eq!(names, ["block_copy_1", "block_copy_4"]);
    assert_eq!(ks[1].instance, vec![4]);
    assert!(ks[1].ptx.contains(".visible .entry block_copy_4("));
    assemble_all(&ks);
    for k in &ks {
        let per = k.instance[0] as usize;
        let n = 2 * 128 * per;
        let x: Vec<u32> = (0..n as u32)
            .map(|v| v.wrapping_mul(2_654_435_761))
            .collect();
        let mut emu = Emulator::new(EmuConfig::default());
        let dx = buf(&mut emu, &u32_bytes(&x));
        let dy = buf(&mut emu, &u32_bytes(&vec![0xdead_beef; n]));
        launch(
            &mut emu,
            k,
            2,
            128,
            &[ParamValue::Ptr(dx), ParamValue::Ptr(dy)],
        );
        assert_eq!(
            to_u32(&emu.read(dy, n * 4).expect("read")),
            x,
            "{}",
            k.entry
        );
    }
}

#[test]
fn emission_is_deterministic() {
    let a = compile_src(&program("mma.rs"));
    let b = compile_src(&program("mma.rs"));
    assert_eq!(a[0].ptx, b[0].ptx);
}

#[test]
fn run_time_index_into_register_array_is_reg_index() {
    let src = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn bad(y: *mut f32, k: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(y, thread[1], |j| i + j, |y_t| {
        group(thread[1], || {
            let mut a = [0.0f32; 4];
            a[k] = 1.0;
            y_t[0] = a[0];
        });
    });
}
"#;
    let d = emit_errors(src);
    assert_eq!(d.len(), 1, "{}", texts(&d));
    assert_eq!(d[0].rule, "REG-INDEX");
    assert!(d[0].help.is_some());
}

#[test]
fn reuse_after_grid_partition_is_sync_grid() {
    let src = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn twice(y: *mut f32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(y, thread[1], |j| i + j, |y_t| {
        group(thread[1], || {
            y_t[0] = 1.0;
        });
    });
    partition(y, thread[1], |j| i + j + 1, |y_t| {
        group(thread[1], || {
            y_t[0] = 2.0;
        });
    });
}
"#;
    let d = emit_errors(src);
    assert!(d.iter().any(|d| d.rule == "SYNC-GRID"), "{}", texts(&d));
}

/// tests/programs/staged_cp_async.rs (shared with the sync tests).
const STAGED: &str = include_str!("programs/staged_cp_async.rs");

#[test]
fn async_copy_and_named_barrier() {
    // Under the naive policy the thread[64] target is synchronized with a named barrier per half block.
    let naive = compile_src_with(STAGED, prism_core::sync::SyncPolicy::Naive);
    assemble_all(&naive);
    assert!(
        naive[0]
            .ptx
            .lines()
            .any(|l| l.trim().starts_with("bar.sync %r") && l.trim().ends_with(", 64;")),
        "{}",
        naive[0].ptx
    );
    for k in [
        naive.into_iter().next().unwrap_or_else(|| unreachable!()),
        one(STAGED),
    ] {
        run_staged(&k);
    }
}

fn run_staged(k: &CompiledKernel) {
    assert!(k.ptx.contains("cp.async.ca.shared.global"), "{}", k.ptx);
    assert!(k.ptx.contains("cp.async.commit_group;"));
    assert!(k.ptx.contains("cp.async.wait_all;"));
    let x = random(2 * 128, 17);
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = buf(&mut emu, &f32_bytes(&x));
    let dy = buf(&mut emu, &f32_bytes(&[f32::NAN; 256]));
    launch(
        &mut emu,
        k,
        2,
        128,
        &[ParamValue::Ptr(dx), ParamValue::Ptr(dy)],
    );
    let y = to_f32(&emu.read(dy, 256 * 4).expect("read"));
    for (i, v) in y.iter().enumerate() {
        let (blk, t) = (i / 128, i % 128);
        let (h, r) = (t / 64, t % 64);
        assert_eq!(*v, x[blk * 128 + h * 64 + 63 - r], "y[{i}]");
    }
}

const LDMATRIX: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 32, smem = 512)]
pub fn ldm(y: *mut u32) {
    #[at(thread[1])]
    let g: u32 = id();
    partition(y, thread[1], |j| g * 4 + j, |y_t| {
        group(block[1], || {
            let s: Shared<[f16; 256]>;
            #[at(thread[1])]
            let t: u32 = id();
            partition(s, thread[1], |j| t * 8 + j, |s_t| {
                group(thread[1], || {
                    for j in 0..8 {
                        s_t[j] = (t * 8 + j) as f32 as f16;
                    }
                });
            });
            group(thread[32], || {
                #[at(thread[1])]
                let l: u32 = id();
                #[at(thread[1])]
                let r: [u32; 4] = ldmatrix_x4(s, l * 8);
                group(thread[1], || {
                    store4(y_t, 0, r);
                });
            });
        });
    });
}
"#;

#[test]
fn ldmatrix_x4_fragments() {
    use half::f16;
    let k = one(LDMATRIX);
    assert!(
        k.ptx.contains("ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
        "{}",
        k.ptx
    );
    assert!(k.ptx.contains("st.shared.b16"));
    let mut emu = Emulator::new(EmuConfig::default());
    let dy = buf(&mut emu, &u32_bytes(&[0xdead_beef; 128]));
    launch(&mut emu, &k, 1, 32, &[ParamValue::Ptr(dy)]);
    let y = to_u32(&emu.read(dy, 128 * 4).expect("read"));
    // Lane L, register q: row L/4, columns 2(L%4) and +1 of matrix q (rows addressed by lanes 8q..8q+7).
    for l in 0..32usize {
        for q in 0..4usize {
            let e = 64 * q + 8 * (l / 4) + 2 * (l % 4);
            let want = f16::from_f32(e as f32).to_bits() as u32
                | (f16::from_f32((e + 1) as f32).to_bits() as u32) << 16;
            assert_eq!(y[l * 4 + q], want, "lane {l} reg {q}");
        }
    }
}

const TWO_CALLEES: &str = r#"
#[prism_device(requires(block[1], thread[32]), smem = 512)]
pub fn stage_add(#[at(block[1])] x: *const f32, #[at(block[1])] y: *mut f32, #[at(block[1])] c: f32) {
    let s: Shared<[f32; 128]>;
    #[at(thread[1])]
    let t: u32 = id();
    partition(s, thread[1], |j| t + j, |s_t| {
        group(thread[1], || {
            s_t[0] = x[t] + c;
        });
    });
    partition(y, thread[1], |j| t + j, |y_t| {
        group(thread[1], || {
            y_t[0] = s[127 - t];
        });
    });
}

#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128, smem = 528)]
pub fn two_calls(x: *const f32, y: *mut f32, z: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(y, block[1], |j| b * 128 + j, |y_blk| {
        partition(z, block[1], |j| b * 128 + j, |z_blk| {
            group(block[1], || {
                let flag: Shared<[u32; 1]>;
                stage_add(x, y_blk, 1.0);
                stage_add(x, z_blk, 2.0);
            });
        });
    });
}
"#;

#[test]
fn callee_shared_memory_overlays() {
    let k = one(TWO_CALLEES);
    // 16 bytes own (1 u32, aligned), then the callees' 512 overlaid: 528, as the checker budgets.
    assert_eq!(k.contract.smem_bytes, 528);
    let x = random(128, 19);
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = buf(&mut emu, &f32_bytes(&x));
    let dy = buf(&mut emu, &f32_bytes(&[f32::NAN; 128]));
    let dz = buf(&mut emu, &f32_bytes(&[f32::NAN; 128]));
    launch(
        &mut emu,
        &k,
        1,
        128,
        &[
            ParamValue::Ptr(dx),
            ParamValue::Ptr(dy),
            ParamValue::Ptr(dz),
        ],
    );
    let y = to_f32(&emu.read(dy, 512).expect("read"));
    let z = to_f32(&emu.read(dz, 512).expect("read"));
    for t in 0..128 {
        assert_eq!(y[t], x[127 - t] + 1.0, "y[{t}]");
        assert_eq!(z[t], x[127 - t] + 2.0, "z[{t}]");
    }
}

const ASM_ADDRESS: &str = r#"
/// An acquire load, which Prism has no intrinsic for: inline PTX on the address of `p[i]`.
#[prism_device(requires(thread[1]))]
pub fn load_acquire(p: *const u32, i: u32) -> u32 {
    let mut v: u32 = 0;
    unsafe {
        asm!("ld.acquire.gpu.global.u32 {v}, [{a}];", v = out(u32) v, a = in(u64) &p[i]);
    }
    v
}

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn gather(x: *const u32, y: *mut u32, n: u32) {
    #[at(thread[1])]
    let g: u32 = id();
    partition(y, thread[1], |j| g + j, |y_t| {
        group(thread[1], || {
            if g < n {
                y_t[0] = load_acquire(x, n - 1 - g) + 1;
            }
        });
    });
}
"#;

#[test]
fn asm_takes_the_address_of_a_memory_element() {
    let k = one(ASM_ADDRESS);
    assert!(k.ptx.contains("ld.acquire.gpu.global.u32"), "{}", k.ptx);
    let n = 70usize;
    let x: Vec<u32> = (0..n as u32).map(|i| i * 7 + 3).collect();
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = buf(
        &mut emu,
        &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    );
    let dy = buf(&mut emu, &vec![0xFF; n * 4]);
    launch(
        &mut emu,
        &k,
        3,
        32,
        &[
            ParamValue::Ptr(dx),
            ParamValue::Ptr(dy),
            ParamValue::U32(n as u32),
        ],
    );
    let y: Vec<u32> = emu
        .read(dy, n * 4)
        .expect("read")
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    for i in 0..n {
        assert_eq!(y[i], x[n - 1 - i] + 1, "y[{i}]");
    }
    // A global address is 64-bit: `in(u32)` is a type error naming the space.
    let bad = ASM_ADDRESS.replace("a = in(u64) &p[i]", "a = in(u32) &p[i]");
    let fns = prism_core::parse::parse_source(&bad).expect("parses");
    let device = fns
        .iter()
        .find(|f| f.name.name == "load_acquire")
        .expect("device fn");
    let d =
        prism_core::check::check_function(device, &[]).expect_err("in(u32) for a global address");
    assert!(
        texts(&d).contains("[TYPE]") && texts(&d).contains("global memory: declare it `in(u64)`"),
        "{}",
        texts(&d)
    );
}

const BULK: &str = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 256, smem = 1024)]
pub fn bulk_tiles(x: *const f32, y: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(y, block[1], |j| b * 256 + j, |y_blk| {
        group(block[1], || {
            let s: Shared<[f32; 256]>;
            #[at(thread[1])]
            let t: u32 = id();
            #[at(thread[1])]
            let mut acc: f32 = 0.0;
            #[at(block[1])]
            let mut tile: u32 = 0;
            while tile < 3 {
                async_(s, |s_async| {
                    match split(thread) {
                        1 => {
                            cp_async_bulk(s_async, 0, x, (b * 3 + tile) * 256, 1024);
                        }
                    }
                });
                acc += s[t] * (tile + 1) as f32;
                tile += 1;
            }
            partition(y_blk, thread[1], |j| t + j, |y_t| {
                group(thread[1], || {
                    y_t[0] = acc;
                });
            });
        });
    });
}
"#;

fn run_bulk(k: &CompiledKernel) {
    assert!(k.ptx.contains(".target sm_90"), "{}", k.ptx);
    assert!(
        k.ptx.contains("cp.async.bulk.shared::cluster.global"),
        "{}",
        k.ptx
    );
    assert!(k.ptx.contains("mbarrier.expect_tx"), "{}", k.ptx);
    assert!(k.ptx.contains("mbarrier.try_wait.parity"), "{}", k.ptx);
    assert!(!k.ptx.contains("cp.async.wait_all"), "{}", k.ptx);
    // The mbarrier is static shared memory: the dynamic size is the allocation alone.
    assert_eq!(k.contract.smem_bytes, 1024);
    let x = random(2 * 3 * 256, 41);
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = buf(&mut emu, &f32_bytes(&x));
    let dy = buf(&mut emu, &f32_bytes(&[f32::NAN; 512]));
    launch(
        &mut emu,
        k,
        2,
        256,
        &[ParamValue::Ptr(dx), ParamValue::Ptr(dy)],
    );
    let y = to_f32(&emu.read(dy, 512 * 4).expect("read"));
    for (i, v) in y.iter().enumerate() {
        let (blk, t) = (i / 256, i % 256);
        let mut want = 0.0f32;
        for tile in 0..3 {
            want += x[(blk * 3 + tile) * 256 + t] * (tile + 1) as f32;
        }
        assert_eq!(*v, want, "y[{i}]");
    }
    // The wait is what orders the copy before the reads: without it the emulator reports the race.
    let broken = without_bulk_wait(&k.ptx);
    assert!(!broken.contains("mbarrier.try_wait"), "{broken}");
    let module = Module::parse(&broken).expect("parses");
    let mut emu = Emulator::new(EmuConfig::default());
    let dx = buf(&mut emu, &f32_bytes(&x));
    let dy = buf(&mut emu, &f32_bytes(&[f32::NAN; 512]));
    let r = emu.launch(
        &module,
        &k.entry,
        [2, 1, 1],
        [256, 1, 1],
        k.contract.smem_bytes,
        &[ParamValue::Ptr(dx), ParamValue::Ptr(dy)],
    );
    let e = format!("{:?}", r.err());
    assert!(e.contains("DataRace"), "without its wait: {e}");
}

/// `k.ptx` without its block-wide wait after the copy (the mbarrier wait and the barrier behind it).
fn without_bulk_wait(ptx: &str) -> String {
    let lines: Vec<&str> = ptx.lines().collect();
    let a = lines
        .iter()
        .position(|l| l.contains("mbarrier.arrive"))
        .expect("an mbarrier arrive");
    let x = a + lines[a..]
        .iter()
        .position(|l| l.contains("xor.b32"))
        .expect("the phase flip");
    let end = if lines[x + 1].trim() == "bar.sync 0;" {
        x + 2
    } else {
        x + 1
    };
    let mut out: Vec<&str> = lines[..a].to_vec();
    out.extend_from_slice(&lines[end..]);
    out.join("\n")
}

#[test]
fn bulk_async_copy_completes_on_an_mbarrier() {
    let naive = compile_src_with(BULK, prism_core::sync::SyncPolicy::Naive);
    assemble_all(&naive);
    for k in [
        naive.into_iter().next().unwrap_or_else(|| unreachable!()),
        one(BULK),
    ] {
        run_bulk(&k);
    }
}

#[test]
fn bulk_async_copy_needs_a_block_target() {
    // A global pointer as the async_ target: no block-wide mbarrier can track it.
    let src = r#"
#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 32)]
pub fn bulk_global(x: *const f32, y: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(y, block[1], |j| b * 32 + j, |y_blk| {
        group(block[1], || {
            async_(y_blk, |y_async| {
                match split(thread) {
                    1 => {
                        cp_async_bulk(y_async, 0, x, b * 32, 128);
                    }
                }
            });
        });
    });
}
"#;
    // The checker finds it now (it used to surface only in the emitter): a global destination.
    let d = emit_errors(src);
    assert!(
        d.iter().any(|d| d.rule == "INTRINSIC"
            && d.message.contains("global memory")
            && d.help.is_some()),
        "{}",
        texts(&d)
    );
    // A shared allocation claimed by a warp: not at block[1] (ASYNC-BULK, also from the checker).
    let warp = r#"
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64, smem = 256)]
pub fn bulk_warp(x: *const f32) {
    group(block[1], || {
        let s: Shared<[f32; 64]>;
        claim(s, thread[32], |s_w| match split(warp) {
            1 => {
                async_(s_w, |s_async| {
                    group(thread[1], || {
                        cp_async_bulk(s_async, 0, x, 0, 16);
                    });
                });
            }
        });
    });
}
"#;
    let d = emit_errors(warp);
    assert!(
        d.iter()
            .any(|d| d.rule == "ASYNC-BULK" && d.message.contains("block[1]") && d.help.is_some()),
        "{}",
        texts(&d)
    );
}
