//! Real CUTLASS / CuTe kernels, compiled by nvcc 13.5, on the emulator: the CuTe tutorial GEMMs
//! `examples/cute/tutorial/hopper/wgmma_sm90.cu` (cp.async into 128-byte-swizzled shared memory, wgmma
//! m64n64k16 f16 from descriptors), `hopper/wgmma_tma_sm90.cu` (TMA loads into a 3-stage mbarrier pipeline,
//! `elect.sync`, a one-block cluster barrier, wgmma) and `sgemm_sm80.cu` (cp.async, `ldmatrix`, `mma.sync`
//! m16n8k16), each in the layouts the tutorial instantiates (fixtures `hopper/cute_wgmma.cu`,
//! `hopper/cute_wgmma_tma.cu`, `cute_sgemm_sm80.cu`: trimmed copies, see regen.sh). The kernels take CuTe
//! structs by value; their bytes are built here from the `.param` declarations and the CuTe headers:
//! static shapes and strides (`Int<N>`, layouts, tiled copies) are empty structs (one byte, unread), dynamic
//! ones are `int`s, a `TiledMMA` over a GMMA atom holds `GMMA::ScaleOut accumulate_` (1: accumulate), a TMA
//! `Copy_Atom` starts with its 128-byte `CUtensorMap` (built with the emulator's encoder in the box and
//! swizzle `make_tma_atom` derives from the tutorial's shared-memory layouts). Every output element is
//! compared with a host reference on random small integers (exact in f16).

use half::f16;
use prism_runtime::emu::*;

const WGMMA: &str = include_str!("fixtures/hopper/cute_wgmma.ptx");
const WGMMA_TMA: &str = include_str!("fixtures/hopper/cute_wgmma_tma.ptx");
const SM80: &str = include_str!("fixtures/cute_sgemm_sm80.ptx");

/// CuTe tutorial tiles: 128 × 128 × 64, 3 stages of f16 A and B in shared memory.
const TILE: usize = 128;
const SMEM_AB: u32 = 2 * 128 * 64 * 3 * 2;

/// Layout of a GEMM's operands as the tutorial's `gemm_nt` / `gemm_tn` set them up.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    /// A (M×K) and B (N×K) M- and N-major: `dA = (1, ldA)`, `ldA = M`.
    Nt,
    /// A and B K-major: `dA = (ldA, 1)`, `ldA = K`.
    Tn,
}

struct Problem {
    m: usize,
    n: usize,
    k: usize,
    layout: Layout,
    /// A and B in memory order, C (column-major, `ldC = M`) before the launch.
    a: Vec<f16>,
    b: Vec<f16>,
    c: Vec<f16>,
    alpha: f16,
    beta: f16,
}

impl Problem {
    fn new(m: usize, n: usize, k: usize, layout: Layout, seed: u64) -> Problem {
        let mut s = seed;
        let mut small = |range: u64| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            f16::from_f32(((s >> 33) % (2 * range + 1)) as f32 - range as f32)
        };
        let a: Vec<f16> = (0..m * k).map(|_| small(2)).collect();
        let b: Vec<f16> = (0..n * k).map(|_| small(2)).collect();
        let c: Vec<f16> = (0..m * n).map(|_| small(4)).collect();
        assert!(a.iter().chain(&b).filter(|x| x.to_f32() != 0.0).count() > m * k / 2);
        Problem {
            m,
            n,
            k,
            layout,
            a,
            b,
            c,
            alpha: f16::from_f32(2.0),
            beta: f16::from_f32(-1.0),
        }
    }
    fn lda(&self) -> usize {
        match self.layout {
            Layout::Nt => self.m,
            Layout::Tn => self.k,
        }
    }
    fn ldb(&self) -> usize {
        match self.layout {
            Layout::Nt => self.n,
            Layout::Tn => self.k,
        }
    }
    fn a_at(&self, i: usize, l: usize) -> f32 {
        let idx = match self.layout {
            Layout::Nt => i + l * self.lda(),
            Layout::Tn => i * self.lda() + l,
        };
        self.a[idx].to_f32()
    }
    fn b_at(&self, j: usize, l: usize) -> f32 {
        let idx = match self.layout {
            Layout::Nt => j + l * self.ldb(),
            Layout::Tn => j * self.ldb() + l,
        };
        self.b[idx].to_f32()
    }
    /// `C = alpha·(A·Bᵀ) + beta·C` as CuTe's `axpby` computes it in `half_t` (every step exact here).
    fn check(&self, got: &[f16], what: &str) {
        let mut bad = 0;
        for j in 0..self.n {
            for i in 0..self.m {
                let acc: f32 = (0..self.k).map(|l| self.a_at(i, l) * self.b_at(j, l)).sum();
                assert!(acc.abs() < 2048.0, "the reference must stay exact in f16");
                let ax = f16::from_f32(self.alpha.to_f32() * acc);
                let by = f16::from_f32(self.beta.to_f32() * self.c[i + j * self.m].to_f32());
                let want = f16::from_f32(ax.to_f32() + by.to_f32());
                let g = got[i + j * self.m];
                if g.to_bits() != want.to_bits() {
                    if bad < 8 {
                        eprintln!("{what}: C[{i}][{j}] = {g}, expected {want}");
                    }
                    bad += 1;
                }
            }
        }
        assert_eq!(
            bad,
            0,
            "{what}: {bad} of {} elements wrong",
            self.m * self.n
        );
    }
}

fn upload(e: &mut Emulator, v: &[f16]) -> u64 {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect();
    let p = e.alloc(bytes.len());
    e.write(p, &bytes).unwrap();
    p
}

fn download(e: &Emulator, p: u64, n: usize) -> Vec<f16> {
    e.read(p, n * 2)
        .unwrap()
        .chunks(2)
        .map(|c| f16::from_bits(u16::from_le_bytes([c[0], c[1]])))
        .collect()
}

/// An empty CuTe struct (static shape, stride, layout or tiled copy): one unread byte.
fn empty() -> ParamValue {
    ParamValue::Bytes(vec![0])
}

fn shape(p: &Problem) -> ParamValue {
    let v: Vec<u8> = [p.m, p.n, p.k]
        .iter()
        .flat_map(|&x| (x as i32).to_le_bytes())
        .collect();
    ParamValue::Bytes(v)
}

fn int(x: usize) -> ParamValue {
    ParamValue::Bytes((x as i32).to_le_bytes().to_vec())
}

fn half(x: f16) -> ParamValue {
    ParamValue::Bytes(x.to_bits().to_le_bytes().to_vec())
}

/// A `TiledMMA` of one GMMA atom: `GMMA::ScaleOut accumulate_ = One`, then padding (8 bytes).
fn gmma_tiled_mma() -> ParamValue {
    ParamValue::Bytes(vec![1, 0, 0, 0, 0, 0, 0, 0])
}

/// The entry instantiated with the given GMMA major (`GMMA::Major::K` = 0 for TN, `MN` = 1 for NT).
fn entry_for(module: &Module, layout: Layout) -> String {
    let tag = match layout {
        Layout::Nt => "MajorE1",
        Layout::Tn => "MajorE0",
    };
    let found: Vec<String> = module
        .entries()
        .into_iter()
        .filter(|e| e.contains(tag))
        .collect();
    assert_eq!(found.len(), 1, "one {layout:?} entry");
    found[0].clone()
}

fn launch(
    e: &mut Emulator,
    module: &Module,
    entry: &str,
    p: &Problem,
    smem: u32,
    params: &[ParamValue],
) -> Result<(), Vec<Fault>> {
    let grid = [(p.m / TILE) as u32, (p.n / TILE) as u32, 1];
    e.launch(module, entry, grid, [128, 1, 1], smem, params)
        .map(|_| ())
        .map_err(|err| match err {
            EmuError::Faulted { faults, .. } => faults,
            other => panic!("{:?}: {other}", p.layout),
        })
}

/// `wgmma_sm90.cu`: `gemm_device(shape, tiler, A, dA, sA, copyA, B, dB, sB, copyB, C, dC, mma, alpha,
/// beta)`.
fn run_wgmma(p: &Problem, cfg: EmuConfig) -> Result<Vec<f16>, Vec<Fault>> {
    let module = Module::parse(WGMMA).unwrap();
    let entry = entry_for(&module, p.layout);
    let mut e = Emulator::new(cfg);
    let (pa, pb, pc) = (
        upload(&mut e, &p.a),
        upload(&mut e, &p.b),
        upload(&mut e, &p.c),
    );
    let params = [
        shape(p),
        empty(),
        ParamValue::Ptr(pa),
        int(p.lda()),
        empty(),
        empty(),
        ParamValue::Ptr(pb),
        int(p.ldb()),
        empty(),
        empty(),
        ParamValue::Ptr(pc),
        int(p.m),
        gmma_tiled_mma(),
        half(p.alpha),
        half(p.beta),
    ];
    launch(&mut e, &module, &entry, p, SMEM_AB, &params)?;
    Ok(download(&e, pc, p.m * p.n))
}

/// The TMA `Copy_Atom` of `make_tma_atom(SM90_TMA_LOAD{}, mX, sX(_,_,0), (128, 64))` for an f16 operand
/// of `rows` × `k` with leading dimension `ld` (256 bytes, the 128-byte tensor map first). With the
/// tutorial's 128-byte-swizzled layouts the box is 64 elements of the contiguous mode by 8 (MN-major: one
/// swizzle atom, the kernel issues 16 per tile) or by 128 rows (K-major: the whole tile in one copy).
fn tma_atom(addr: u64, layout: Layout, rows: usize, k: usize, ld: usize) -> ParamValue {
    let (dims, boxd) = match layout {
        Layout::Nt => ([rows as u64, k as u64], [64, 8]),
        Layout::Tn => ([k as u64, rows as u64], [64, 128]),
    };
    let map = TensorMap::tiled(
        TensorDataType::F16,
        addr,
        &dims,
        &[ld as u64 * 2],
        &boxd,
        TensorSwizzle::B128,
    )
    .unwrap();
    let mut bytes = map.encode().to_vec();
    bytes.resize(256, 0);
    ParamValue::Bytes(bytes)
}

/// `wgmma_tma_sm90.cu`: `gemm_device(shape, tiler, A, tma_a, B, tma_b, C, dC, mma, alpha, beta)`.
fn run_wgmma_tma(p: &Problem, cfg: EmuConfig) -> Result<Vec<f16>, Vec<Fault>> {
    let module = Module::parse(WGMMA_TMA).unwrap();
    let entry = entry_for(&module, p.layout);
    let mut e = Emulator::new(cfg);
    let (pa, pb, pc) = (
        upload(&mut e, &p.a),
        upload(&mut e, &p.b),
        upload(&mut e, &p.c),
    );
    let params = [
        shape(p),
        empty(),
        ParamValue::Ptr(pa),
        tma_atom(pa, p.layout, p.m, p.k, p.lda()),
        ParamValue::Ptr(pb),
        tma_atom(pb, p.layout, p.n, p.k, p.ldb()),
        ParamValue::Ptr(pc),
        int(p.m),
        gmma_tiled_mma(),
        half(p.alpha),
        half(p.beta),
    ];
    // SharedStorage: A and B stages, then 3 TMA and 3 MMA mbarriers.
    launch(&mut e, &module, &entry, p, SMEM_AB + 48, &params)?;
    Ok(download(&e, pc, p.m * p.n))
}

/// `sgemm_sm80.cu` (its half-precision TN kernel): `gemm_device(shape, tiler, A, dA, sA, copyA, s2rA, B,
/// dB, sB, copyB, s2rB, C, dC, sC, mma, alpha, beta)`.
fn run_sm80(p: &Problem, cfg: EmuConfig) -> Result<Vec<f16>, Vec<Fault>> {
    assert_eq!(p.layout, Layout::Tn);
    let module = Module::parse(SM80).unwrap();
    let entries = module.entries();
    assert_eq!(entries.len(), 1);
    let mut e = Emulator::new(cfg);
    let (pa, pb, pc) = (
        upload(&mut e, &p.a),
        upload(&mut e, &p.b),
        upload(&mut e, &p.c),
    );
    let params = [
        shape(p),
        empty(),
        ParamValue::Ptr(pa),
        int(p.lda()),
        empty(),
        empty(),
        empty(),
        ParamValue::Ptr(pb),
        int(p.ldb()),
        empty(),
        empty(),
        empty(),
        ParamValue::Ptr(pc),
        int(p.m),
        empty(),
        empty(),
        half(p.alpha),
        half(p.beta),
    ];
    launch(&mut e, &module, &entries[0], p, SMEM_AB, &params)?;
    Ok(download(&e, pc, p.m * p.n))
}

/// Every instruction of the three modules decodes (none is `Unsupported`), with the entries and parameter
/// lists the tests rely on.
#[test]
fn cute_tutorial_modules_decode_completely() {
    for (name, src, entries, nparams) in [
        ("cute_wgmma", WGMMA, 2, 15),
        ("cute_wgmma_tma", WGMMA_TMA, 2, 11),
        ("cute_sgemm_sm80", SM80, 1, 18),
    ] {
        let m = Module::parse(src).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(m.unsupported_instructions(), vec![], "{name}");
        assert_eq!(m.entries().len(), entries, "{name}");
        for entry in m.entries() {
            assert_eq!(m.entry_params(&entry).unwrap().len(), nparams, "{name}");
        }
    }
}

/// Faults as a test failure message.
fn ok<T>(r: Result<T, Vec<Fault>>, what: &str) -> T {
    r.unwrap_or_else(|faults| panic!("{what}: {faults:#?}"))
}

/// The cp.async kernel fills shared memory through the generic proxy (`cp.async` is not an async-proxy
/// operation) and its wgmmas read it through the async proxy with no `fence.proxy.async` between (nor does
/// CUTLASS's own `MainloopSm90CpAsyncGmma*`): the PTX ISA (9.7.15.4, 9.7.15.7.1) requires that fence, so the
/// race detector reports it, and only that. Without race detection, every element is right.
#[test]
fn cute_wgmma_sm90_nt_and_tn() {
    for (layout, seed) in [(Layout::Nt, 1), (Layout::Tn, 2)] {
        let p = Problem::new(256, 256, 256, layout, seed);
        let faults = run_wgmma(&p, EmuConfig::default()).expect_err("the missing proxy fence");
        assert!(
            faults.iter().all(|f| f.kind == FaultKind::DataRace
                && f.message.contains("wgmma reads shared byte")
                && f.message.contains("no fence.proxy.async")),
            "{faults:#?}"
        );
        let cfg = EmuConfig {
            check_races: false,
            ..EmuConfig::default()
        };
        let c = ok(run_wgmma(&p, cfg), "wgmma_sm90");
        p.check(&c, &format!("wgmma_sm90 {layout:?}"));
    }
}

#[test]
fn cute_wgmma_tma_sm90_nt_and_tn() {
    for (layout, seed) in [(Layout::Nt, 3), (Layout::Tn, 4)] {
        let p = Problem::new(256, 256, 256, layout, seed);
        let c = ok(run_wgmma_tma(&p, EmuConfig::default()), "wgmma_tma_sm90");
        p.check(&c, &format!("wgmma_tma_sm90 {layout:?}"));
    }
}

/// The TMA pipeline under a random interleaving of warps, and with fewer k-tiles (2) than stages (3): the
/// prologue's third load reads past K (zero fill) and is never consumed.
#[test]
fn cute_wgmma_tma_sm90_random_schedule_short_k() {
    let cfg = EmuConfig {
        schedule: Schedule::Random { seed: 11 },
        ..EmuConfig::default()
    };
    let p = Problem::new(128, 256, 128, Layout::Nt, 5);
    let c = ok(run_wgmma_tma(&p, cfg.clone()), "NT, K = 128");
    p.check(&c, "wgmma_tma_sm90 NT, K = 128");
    let p = Problem::new(256, 128, 320, Layout::Tn, 6);
    p.check(
        &ok(run_wgmma_tma(&p, cfg), "TN"),
        "wgmma_tma_sm90 TN, K = 320",
    );
}

#[test]
fn cute_sgemm_sm80_tn() {
    let p = Problem::new(256, 256, 256, Layout::Tn, 7);
    let c = ok(run_sm80(&p, EmuConfig::default()), "sgemm_sm80");
    p.check(&c, "sgemm_sm80 TN");
}

/// Regression (found on `wgmma_tma_sm90.cu`): labels of a `{ }` block are local to it. CUTLASS's
/// `ClusterBarrier::wait` is an inline-asm block with `LAB_WAIT:` and `DONE:`, pasted once per wait; the
/// decoder kept one label table per function, so every `bra DONE` jumped to the last block's `DONE` (the
/// MMA warps' wait on the TMA barrier jumped into the producer's code: an mbarrier arrive with no arrival
/// pending). Here two blocks reuse the labels and a third branches to a function-level label of the same
/// name from inside a block.
#[test]
fn block_labels_are_scoped() {
    let ptx = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, 0;
    {
    .reg .pred P1;
    LAB: add.u32 %r1, %r1, 1;
    setp.lt.u32 P1, %r1, 3;
    @P1 bra LAB;
    bra DONE;
    DONE:
    }
    mov.u32 %r2, %r1;
    {
    .reg .pred P1;
    LAB: add.u32 %r1, %r1, 10;
    setp.lt.u32 P1, %r1, 40;
    @P1 bra LAB;
    bra DONE;
    add.u32 %r1, %r1, 1000;
    DONE:
    }
    {
    bra OUT;
    }
    add.u32 %r1, %r1, 5000;
OUT:
    st.global.v2.u32 [%rd1], {%r2, %r1};
    ret;
}
"#;
    let module = Module::parse(ptx).unwrap();
    assert_eq!(module.unsupported_instructions(), vec![]);
    let mut e = Emulator::new(EmuConfig::default());
    let out = e.alloc(8);
    e.launch(
        &module,
        "k",
        [1, 1, 1],
        [1, 1, 1],
        0,
        &[ParamValue::Ptr(out)],
    )
    .unwrap();
    let b = e.read(out, 8).unwrap();
    let r2 = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let r1 = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    // First loop: 1, 2, 3. Second: 13, 23, 33, 43; its `bra DONE` skips the +1000; `bra OUT` the +5000.
    assert_eq!((r2, r1), (3, 43));
}
