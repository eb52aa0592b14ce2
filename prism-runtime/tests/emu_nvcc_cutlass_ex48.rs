//! CUTLASS example 48 (`examples/48_hopper_warp_specialized_gemm`) on the emulator: the kernel the example
//! builds through `CollectiveBuilder` / `GemmUniversal` (fixture `hopper/cutlass_ex48.cu`, its types verbatim,
//! host code removed; see regen.sh): `KernelTmaWarpSpecializedCooperative` with 7 stages of 128×128×32 f32
//! (tf32) tiles, TMA multicast loads across a 4×2×1 cluster into 128-byte-swizzled shared memory (the stages
//! start at shared byte 384, inside a swizzle atom), wgmma m64n128k8 tf32, `setmaxnreg`, the persistent tile
//! scheduler, and the default (`ld.global` / `st.global`) epilogue `D = alpha·A·B + beta·C`. A is row-major
//! M×K, B column-major K×N, C and D column-major M×N. The fixture also instantiates the same GEMM with f16 A
//! and B (14 stages, 64-byte swizzle, wgmma m64n128k16 f16).
//!
//! The kernel takes `GemmKernel::Params` (1024 bytes) by value; its bytes are built here as
//! `GemmKernel::to_underlying_arguments` lays them out (offsets from the CUTLASS headers, checked byte for byte
//! against a host build of that function with a `cuTensorMapEncodeTiled` stub): the mode and problem shape,
//! the two TMA `Copy_Atom`s (their 128-byte `CUtensorMap`s built with the emulator's encoder in the shape
//! `make_tma_copy` gives the driver: dims (K, rows, 1) with byte strides (K·size, 0), the box
//! 32 × (128 / the cluster's other extent) × 1), the transaction bytes, the epilogue's alpha, beta, pointers
//! and strides, the hardware info and the tile scheduler's fast divisors, for the rasterization and swizzle
//! options the example takes on its command line. The grid is what `GemmKernel::get_grid_shape` gives.
//! Every output element is compared with a host reference on random small integers (exact in tf32, f16 and
//! f32).

use half::f16;
use prism_runtime::emu::*;

const EX48: &str = include_str!("fixtures/hopper/cutlass_ex48.ptx");

const THREADS: u32 = 384;
const CLUSTER: [u32; 3] = [4, 2, 1];
const TILE_M: usize = 128;
const TILE_N: usize = 128;
const TILE_K: u32 = 32;

/// The element type of A and B: example 48's f32 (tf32 wgmma) or f16.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Input {
    F32,
    F16,
}

impl Input {
    fn size(self) -> usize {
        match self {
            Input::F32 => 4,
            Input::F16 => 2,
        }
    }
    /// `GemmKernel::SharedStorageSize`: the stages of A and B tiles after the pipelines' barriers.
    fn smem(self) -> u32 {
        match self {
            Input::F32 => 229_760,
            Input::F16 => 229_888,
        }
    }
    /// The entry: the f16 instance names `cutlass::half_t`.
    fn entry(self, module: &Module) -> String {
        let found: Vec<String> = module
            .entries()
            .into_iter()
            .filter(|e| e.contains("half_t") == (self == Input::F16))
            .collect();
        assert_eq!(found.len(), 1, "one {self:?} entry");
        found[0].clone()
    }
}

/// The tile scheduler's options (example 48's `--raster` and `--swizzle`) and the SM count in `hw_info`.
#[derive(Clone, Copy, Debug)]
struct Sched {
    /// `RasterOrderOptions`: `None` is the heuristic, else along N (`true`) or M.
    along_n: Option<bool>,
    max_swizzle: u32,
    sms: u32,
}

const ONE_CLUSTER: Sched = Sched {
    along_n: None,
    max_swizzle: 1,
    sms: 8,
};

struct Problem {
    m: usize,
    n: usize,
    k: usize,
    input: Input,
    /// A row-major (`A[i][l]` at `i·K + l`), B column-major (`B[l][j]` at `j·K + l`), C column-major.
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    alpha: f32,
    beta: f32,
}

impl Problem {
    fn new(m: usize, n: usize, k: usize, input: Input, seed: u64) -> Problem {
        let mut s = seed;
        let mut small = |range: u64| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % (2 * range + 1)) as f32 - range as f32
        };
        let a = (0..m * k).map(|_| small(2)).collect();
        let b = (0..n * k).map(|_| small(2)).collect();
        let c = (0..m * n).map(|_| small(4)).collect();
        Problem {
            m,
            n,
            k,
            input,
            a,
            b,
            c,
            alpha: 2.0,
            beta: -1.0,
        }
    }

    fn check(&self, got: &[f32], what: &str) {
        let mut bad = 0;
        for j in 0..self.n {
            for i in 0..self.m {
                let acc: f32 = (0..self.k)
                    .map(|l| self.a[i * self.k + l] * self.b[j * self.k + l])
                    .sum();
                let want = self.alpha * acc + self.beta * self.c[i + j * self.m];
                let g = got[i + j * self.m];
                if g.to_bits() != want.to_bits() {
                    if bad < 8 {
                        eprintln!("{what}: D[{i}][{j}] = {g}, expected {want}");
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

/// `cutlass::FastDivmodU64(d)`: divisor, multiplier, shift, round-up (24 bytes).
fn fast_divmod_u64(d: u64) -> Vec<u8> {
    let shift = 63 - d.leading_zeros();
    let (mul, round_up) = if d.is_power_of_two() {
        (0u64, 0u32)
    } else {
        let p = 1u128 << shift;
        let lo = ((p << 64) / d as u128) as u64;
        let mul = (((p << 64) | p) / d as u128) as u64;
        (mul, (lo == mul) as u32)
    };
    let mut v = d.to_le_bytes().to_vec();
    v.extend(mul.to_le_bytes());
    v.extend(shift.to_le_bytes());
    v.extend(round_up.to_le_bytes());
    v
}

/// `cutlass::FastDivmodU64Pow2(d)`: divisor, shift, padding (16 bytes).
fn fast_divmod_pow2(d: u64) -> Vec<u8> {
    let mut v = d.to_le_bytes().to_vec();
    v.extend((63 - d.leading_zeros()).to_le_bytes());
    v.extend([0; 4]);
    v
}

/// What `PersistentTileSchedulerSm90Params` derives from the problem: the log2 swizzle, the blocks along M
/// and N (rounded up to the swizzle times the cluster) and the raster order (along N or not).
fn tiling(p: &Problem, s: Sched) -> (u32, u64, u64, bool) {
    // get_tiled_cta_shape_mnl rounds the blocks up to the cluster first.
    let bm = p.m.div_ceil(TILE_M).div_ceil(CLUSTER[0] as usize) as u64 * CLUSTER[0] as u64;
    let bn = p.n.div_ceil(TILE_N).div_ceil(CLUSTER[1] as usize) as u64 * CLUSTER[1] as u64;
    let min = bm.min(bn);
    let log = match s.max_swizzle {
        8.. if min >= 6 => 3,
        4.. if min >= 3 => 2,
        2.. if min >= 2 => 1,
        _ => 0,
    };
    let (bm, bn) = (
        bm.div_ceil((1 << log) * CLUSTER[0] as u64) * ((1 << log) * CLUSTER[0] as u64),
        bn.div_ceil((1 << log) * CLUSTER[1] as u64) * ((1 << log) * CLUSTER[1] as u64),
    );
    (log, bm, bn, s.along_n.unwrap_or(bn <= bm))
}

/// `PersistentTileSchedulerSm90Params::initialize`, 120 bytes.
fn scheduler_params(p: &Problem, s: Sched) -> Vec<u8> {
    let (cm, cn) = (CLUSTER[0] as u64, CLUSTER[1] as u64);
    let (log, blocks_m, blocks_n, along_n) = tiling(p, s);
    let mut v = Vec::new();
    let (major, minor, blk_major) = if along_n {
        (cn, cm, blocks_n / cn)
    } else {
        (cm, cn, blocks_m / cm)
    };
    v.extend(fast_divmod_pow2(major));
    v.extend(fast_divmod_pow2(minor));
    v.extend(fast_divmod_u64(blocks_m * blocks_n));
    v.extend(fast_divmod_u64(blk_major));
    v.extend((blocks_m * blocks_n).to_le_bytes());
    v.extend(log.to_le_bytes());
    // RasterOrder: AlongM = 0, AlongN = 1.
    v.extend((along_n as u32).to_le_bytes());
    for x in [blocks_m / cm, blocks_n / cn, 1, cm, cn] {
        v.extend((x as u32).to_le_bytes());
    }
    v.resize(120, 0);
    v
}

/// `get_grid_shape`: the cluster along the raster's minor side, as many clusters as the SMs hold (and the
/// problem needs) along the other.
fn grid(p: &Problem, s: Sched) -> [u32; 3] {
    let (_, blocks_m, blocks_n, along_n) = tiling(p, s);
    let total = (blocks_m * blocks_n) as u32;
    if along_n {
        [CLUSTER[0], (s.sms / CLUSTER[0]).min(total / CLUSTER[0]), 1]
    } else {
        [(s.sms / CLUSTER[1]).min(total / CLUSTER[1]), CLUSTER[1], 1]
    }
}

/// The TMA map of an operand of `rows` × K, K contiguous: (K, rows, 1), box 32 × `box_rows` × 1. CUTLASS
/// copies 16-bit elements as `uint16_t` and f32 as tf32; 32 elements are the 128-byte or 64-byte swizzle span.
fn tma_map(input: Input, addr: u64, k: usize, rows: usize, box_rows: u32) -> [u8; 128] {
    let (dt, sw) = match input {
        Input::F32 => (TensorDataType::Tf32, TensorSwizzle::B128),
        Input::F16 => (TensorDataType::U16, TensorSwizzle::B64),
    };
    let es = input.size() as u64;
    let mut map = TensorMap::tiled(
        dt,
        addr,
        &[k as u64, rows as u64, 1],
        &[es * k as u64, 0],
        &[TILE_K, box_rows, 1],
        sw,
    )
    .unwrap();
    map.l2_promotion = TensorL2Promotion::B128;
    map.encode()
}

fn put(params: &mut [u8], at: usize, bytes: &[u8]) {
    params[at..at + bytes.len()].copy_from_slice(bytes);
}

/// `GemmKernel::Params` for `D = alpha·A·B + beta·C` over the given buffers.
fn kernel_params(p: &Problem, s: Sched, [a, b, c, d]: [u64; 4]) -> Vec<u8> {
    let mut v = vec![0u8; 1024];
    // mode (kGemm = 0), problem shape (M, N, K)
    for (i, x) in [p.m, p.n, p.k].into_iter().enumerate() {
        put(&mut v, 4 + 4 * i, &(x as i32).to_le_bytes());
    }
    // mainloop (at 128): the A and B TMA atoms (256 bytes each; A multicast along the cluster's N extent,
    // B along its M extent), the transaction bytes of a stage and the multicast bytes of A and B.
    put(
        &mut v,
        128,
        &tma_map(p.input, a, p.k, p.m, 128 / CLUSTER[1]),
    );
    put(
        &mut v,
        384,
        &tma_map(p.input, b, p.k, p.n, 128 / CLUSTER[0]),
    );
    let stage = 128 * TILE_K * p.input.size() as u32;
    put(&mut v, 640, &(2 * stage).to_le_bytes());
    put(&mut v, 644, &stage.to_le_bytes());
    put(&mut v, 648, &stage.to_le_bytes());
    // epilogue (at 768): LinearCombination {alpha, beta, alpha_ptr, beta_ptr, ..}, ptr_C, dC, ptr_D, dD
    // (column-major: (1, M, 0), the static unit stride not stored).
    put(&mut v, 768, &p.alpha.to_le_bytes());
    put(&mut v, 772, &p.beta.to_le_bytes());
    for (at, ptr) in [(808, c), (832, d)] {
        put(&mut v, at, &ptr.to_le_bytes());
        put(&mut v, at + 8, &(p.m as i64).to_le_bytes());
    }
    // hw_info (at 856): device 0, sm_count
    put(&mut v, 860, &s.sms.to_le_bytes());
    put(&mut v, 896, &scheduler_params(p, s));
    v
}

fn upload(e: &mut Emulator, v: &[f32], input: Input) -> u64 {
    let bytes: Vec<u8> = match input {
        Input::F32 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Input::F16 => v
            .iter()
            .flat_map(|&x| f16::from_f32(x).to_bits().to_le_bytes())
            .collect(),
    };
    let ptr = e.alloc(bytes.len().max(4));
    e.write(ptr, &bytes).unwrap();
    ptr
}

fn run(p: &Problem, s: Sched, cfg: EmuConfig) -> Result<Vec<f32>, Vec<Fault>> {
    let module = Module::parse(EX48).unwrap();
    let entry = p.input.entry(&module);
    let mut e = Emulator::new(cfg);
    let (a, b) = (upload(&mut e, &p.a, p.input), upload(&mut e, &p.b, p.input));
    let c = upload(&mut e, &p.c, Input::F32);
    let d = upload(&mut e, &vec![f32::NAN; p.m * p.n], Input::F32);
    let params = kernel_params(p, s, [a, b, c, d]);
    e.launch_cluster(
        &module,
        &entry,
        grid(p, s),
        [THREADS, 1, 1],
        Some(CLUSTER),
        p.input.smem(),
        &[ParamValue::Bytes(params)],
    )
    .map_err(|err| match err {
        EmuError::Faulted { faults, .. } => faults,
        other => panic!("{other}"),
    })?;
    Ok(e.read(d, p.m * p.n * 4)
        .unwrap()
        .chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Runs and checks one problem.
fn gemm(m: usize, n: usize, k: usize, input: Input, s: Sched, cfg: EmuConfig, seed: u64) {
    let what = format!("ex48 {input:?} {m}x{n}x{k} {s:?}");
    let p = Problem::new(m, n, k, input, seed);
    let d = run(&p, s, cfg).unwrap_or_else(|faults| panic!("{what}: {faults:#?}"));
    p.check(&d, &what);
}

/// Every instruction decodes: two entries (f32 and f16), each with its one 1024-byte parameter.
#[test]
fn ex48_module_decodes_completely() {
    let m = Module::parse(EX48).unwrap();
    assert_eq!(m.unsupported_instructions(), vec![]);
    assert_eq!(m.entries().len(), 2);
    for input in [Input::F32, Input::F16] {
        let params = m.entry_params(&input.entry(&m)).unwrap();
        assert_eq!(params.len(), 1);
        assert_eq!((params[0].size, params[0].align), (1024, 128));
    }
}

/// Example 48 itself: 4 × 4 tiles on one cluster of 8 CTAs (two tiles each), 4 k-tiles: the 7-stage
/// pipeline wraps across tiles.
#[test]
fn ex48_gemm_full_tiles() {
    gemm(
        512,
        512,
        128,
        Input::F32,
        ONE_CLUSTER,
        EmuConfig::default(),
        1,
    );
}

/// Residues in every mode (M = 448, N = 320, K = 100: the TMA boxes read past M, N and K as zeros and the
/// epilogue predicates its stores), more tile columns than rows (the heuristic rasters along M), under a
/// random interleaving of warps.
#[test]
fn ex48_gemm_residues_random_schedule() {
    let cfg = EmuConfig {
        schedule: Schedule::Random { seed: 48 },
        ..EmuConfig::default()
    };
    gemm(448, 320, 100, Input::F32, ONE_CLUSTER, cfg.clone(), 2);
    gemm(256, 640, 64, Input::F32, ONE_CLUSTER, cfg, 3);
}

/// The example's `--raster` and `--swizzle` options on two clusters (16 SMs): along N with swizzle 2, along
/// M with swizzle 4 (the scheduler's blocks, rounded up to the swizzle, reach past the problem: tiles there
/// load zeros and store nothing).
#[test]
fn ex48_gemm_two_clusters_raster_and_swizzle() {
    let cfg = EmuConfig::default();
    let s = Sched {
        along_n: Some(true),
        max_swizzle: 2,
        sms: 16,
    };
    gemm(768, 512, 64, Input::F32, s, cfg.clone(), 4);
    let s = Sched {
        along_n: Some(false),
        max_swizzle: 4,
        sms: 16,
    };
    gemm(512, 768, 96, Input::F32, s, cfg, 5);
}

/// The f16 instance: 14 stages of 64-byte-swizzled tiles, full tiles and residues.
#[test]
fn ex48_gemm_f16() {
    gemm(
        512,
        512,
        128,
        Input::F16,
        ONE_CLUSTER,
        EmuConfig::default(),
        6,
    );
    let cfg = EmuConfig {
        schedule: Schedule::Random { seed: 16 },
        ..EmuConfig::default()
    };
    gemm(448, 320, 104, Input::F16, ONE_CLUSTER, cfg, 7);
}

/// The parameter bytes and grids as a host build of CUTLASS's `to_underlying_arguments` and
/// `get_grid_shape` gave them (with a `cuTensorMapEncodeTiled` stub; the fields the kernel reads: bytes
/// 0..16, 640..652, 768..864 and the scheduler's 896..1016 without its divisors' padding, 908..912 and
/// 924..928), for the problems and options of the tests above.
#[test]
fn ex48_params_match_cutlass() {
    let cases = [
        (
            (448, 320, 100, Input::F32),
            Sched {
                along_n: None,
                max_swizzle: 1,
                sms: 8,
            },
            [4, 2, 1],
            concat!(
                "00000000c0010000400100006400000000800000004000000040000000000040000080bf000000000000000000000000",
                "00000000000000000000000000000000000000000000300000000000c001000000000000000000000000000000004000",
                "00000000c001000000000000000000000000000000000000080000000200000000000000010000000400000000000000",
                "020000001000000000000000000000000000000004000000000000000200000000000000000000000000000001000000",
                "0000000010000000000000000000000001000000010000000200000001000000040000000200000000000000",
            ),
        ),
        (
            (768, 512, 64, Input::F32),
            Sched {
                along_n: Some(true),
                max_swizzle: 2,
                sms: 16,
            },
            [4, 4, 1],
            concat!(
                "0000000000030000000200004000000000800000004000000040000000000040000080bf000000000000000000000000",
                "000000000000000000000000000000000000000000003000000000000003000000000000000000000000000000004000",
                "000000000003000000000000000000000000000000000000100000000200000000000000010000000400000000000000",
                "020000002000000000000000000000000000000005000000000000000200000000000000000000000000000001000000",
                "0000000020000000000000000100000001000000020000000200000001000000040000000200000000000000",
            ),
        ),
        (
            (512, 768, 96, Input::F32),
            Sched {
                along_n: Some(false),
                max_swizzle: 4,
                sms: 16,
            },
            [8, 2, 1],
            concat!(
                "0000000000020000000300006000000000800000004000000040000000000040000080bf000000000000000000000000",
                "000000000000000000000000000000000000000000003000000000000002000000000000000000000000000000004000",
                "000000000002000000000000000000000000000000000000100000000400000000000000020000000200000000000000",
                "010000008000000000000000000000000000000007000000000000000400000000000000000000000000000002000000",
                "0000000080000000000000000200000000000000040000000400000001000000040000000200000000000000",
            ),
        ),
        (
            (448, 320, 104, Input::F16),
            Sched {
                along_n: None,
                max_swizzle: 1,
                sms: 8,
            },
            [4, 2, 1],
            concat!(
                "00000000c0010000400100006800000000400000002000000020000000000040000080bf000000000000000000000000",
                "00000000000000000000000000000000000000000000300000000000c001000000000000000000000000000000004000",
                "00000000c001000000000000000000000000000000000000080000000200000000000000010000000400000000000000",
                "020000001000000000000000000000000000000004000000000000000200000000000000000000000000000001000000",
                "0000000010000000000000000000000001000000010000000200000001000000040000000200000000000000",
            ),
        ),
    ];
    for ((m, n, k, input), s, want_grid, want) in cases {
        let p = Problem::new(m, n, k, input, 0);
        let v = kernel_params(&p, s, [0x100000, 0x200000, 0x300000, 0x400000]);
        let read = [0..16, 640..652, 768..864, 896..908, 912..924, 928..1016];
        let got: String = read
            .into_iter()
            .flat_map(|r| v[r].iter().map(|b| format!("{b:02x}")))
            .collect();
        assert_eq!(got, want, "{input:?} {m}x{n}x{k} {s:?}");
        assert_eq!(grid(&p, s), want_grid, "{input:?} {m}x{n}x{k} {s:?}");
    }
}
