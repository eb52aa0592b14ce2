//! Tensor maps and cluster launches through the runtime API (`prism_runtime::TensorMap`, `Contract::with_cluster`).
//! They run on whatever `Device::auto()` picks: the emulator here, the GPU on a GPU host (`PRISM_BACKEND=gpu`
//! in scripts/gpu); assertions that only hold on one backend say so.
//!
//! Every validation rule gets its error value; a hand-written sm_90a kernel copies a TMA box into dynamic shared
//! memory (past 48 KiB, up to the 227 KiB limit) and out again, checked byte for byte against a CPU reference
//! for every swizzle mode and for boxes partly outside the tensor; a 2-block cluster kernel reads
//! `%cluster_ctarank`, its partner's shared memory and waits at cluster barriers.

use prism_runtime::emu::{self, EmuError};
use prism_runtime::{
    validate_launch, Backend, Contract, Device, DeviceBuffer, DeviceCopy, ElemType, KernelArg,
    KernelInfo, LaunchDims, ParamSpec, ParamType, RuntimeError, TensorL2Promotion, TensorMap,
    TensorSwizzle, MAX_SMEM_BYTES,
};

/// Thread 0 arms an mbarrier (at the start of dynamic shared memory) with `nbytes` and copies the box at
/// coordinates (`c0`, `c1`) to the first 1024-byte-aligned address at or after `boff` bytes into dynamic
/// shared memory; every thread waits on the barrier, then the block copies `nbytes` bytes from there to `out`
/// (4 bytes per thread per step).
const TMA_PTX: &str = r#"
.version 8.0
.target sm_90a
.address_size 64

// Dynamic shared memory is declared at module scope: ptxas rejects `.extern .shared` inside an entry.
.extern .shared .align 1024 .b8 dsmem[];

.visible .entry tma_box_2d(
    .param .align 64 .b8 tmap[128],
    .param .u64 out,
    .param .u32 c0,
    .param .u32 c1,
    .param .u32 nbytes,
    .param .u32 boff
)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u32 %r1, [c0];
    ld.param.u32 %r2, [c1];
    ld.param.u32 %r3, [nbytes];
    ld.param.u32 %r12, [boff];
    mov.u32 %r4, %tid.x;
    mov.u32 %r5, %ntid.x;
    mov.u32 %r6, dsmem;
    add.u32 %r7, %r6, %r12;
    add.u32 %r7, %r7, 1023;
    and.b32 %r7, %r7, -1024;
    setp.eq.u32 %p1, %r4, 0;
    @%p1 mbarrier.init.shared::cta.b64 [%r6], 1;
    bar.sync 0;
    @!%p1 bra WAIT;
    mov.u64 %rd2, tmap;
    cvta.param.u64 %rd3, %rd2;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd4, [%r6], %r3;
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r7], [%rd3, {%r1, %r2}], [%r6];
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r6], 0;
    @!%p2 bra WAIT;
    shl.b32 %r8, %r4, 2;
    shl.b32 %r11, %r5, 2;
LOOP:
    setp.ge.u32 %p3, %r8, %r3;
    @%p3 bra DONE;
    add.u32 %r9, %r7, %r8;
    ld.shared.u32 %r10, [%r9];
    cvt.u64.u32 %rd5, %r8;
    add.s64 %rd6, %rd1, %rd5;
    st.global.u32 [%rd6], %r10;
    add.u32 %r8, %r8, %r11;
    bra LOOP;
DONE:
    ret;
}

// The same entry with the tensor map declared without the 64-byte alignment the driver needs.
.visible .entry tma_unaligned_param(
    .param .b8 tmap[128],
    .param .u64 out,
    .param .u32 c0,
    .param .u32 c1,
    .param .u32 nbytes,
    .param .u32 boff
)
{
    ret;
}
"#;

/// Each block stores `ctaid * 1000 + 7` in shared memory; after a cluster barrier thread 0 reads its partner's
/// value (rank ^ 1) through `mapa` and writes `[%cluster_ctarank, %clusterid.x, %cluster_nctarank, partner]`
/// to `out[4 * ctaid ..]`; a second cluster barrier keeps every block's shared memory alive until its partner
/// has read it.
const CLUSTER_PTX: &str = r#"
.version 8.0
.target sm_90a
.address_size 64

.visible .entry cluster_pairs(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<6>;
    .shared .align 4 .u32 sv;

    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    setp.eq.u32 %p1, %r1, 0;
    mad.lo.u32 %r3, %r2, 1000, 7;
    @%p1 st.shared.u32 [sv], %r3;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    mov.u32 %r4, %cluster_ctarank;
    mov.u32 %r5, %clusterid.x;
    mov.u32 %r6, %cluster_nctarank;
    xor.b32 %r7, %r4, 1;
    mov.u32 %r8, sv;
    mapa.shared::cluster.u32 %r9, %r8, %r7;
    ld.shared::cluster.u32 %r10, [%r9];
    @!%p1 bra END;
    mul.wide.u32 %rd2, %r2, 16;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v4.u32 [%rd3], {%r4, %r5, %r6, %r10};
END:
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}
"#;

const fn tma_params(elem: ElemType) -> [ParamSpec; 6] {
    [
        ParamSpec {
            name: "tmap",
            ty: ParamType::TensorMap {
                elem,
                rank: 2,
                writable: false,
            },
        },
        ParamSpec {
            name: "out",
            ty: ParamType::Ptr {
                elem: ElemType::U32,
                mutable: true,
            },
        },
        ParamSpec {
            name: "c0",
            ty: ParamType::I32,
        },
        ParamSpec {
            name: "c1",
            ty: ParamType::I32,
        },
        ParamSpec {
            name: "nbytes",
            ty: ParamType::U32,
        },
        ParamSpec {
            name: "boff",
            ty: ParamType::U32,
        },
    ]
}

static TMA_U32_PARAMS: [ParamSpec; 6] = tma_params(ElemType::U32);
static TMA_BF16_PARAMS: [ParamSpec; 6] = tma_params(ElemType::BF16);
static TMA_U8_PARAMS: [ParamSpec; 6] = tma_params(ElemType::U8);
static CLUSTER_PARAMS: [ParamSpec; 1] = [ParamSpec {
    name: "out",
    ty: ParamType::Ptr {
        elem: ElemType::U32,
        mutable: true,
    },
}];

/// SAFETY (of the `unsafe` constructors, here and in `cluster_info`): the PTX above is hand-written to match
/// these parameter lists; `tma_box_2d` is memory-safe for one block with `nbytes` at most the box's region
/// and `boff + 1023 + nbytes` within the dynamic shared memory (the tests pass such values), since the tensor
/// map itself is validated to lie inside its buffer. `tma_unaligned_param` never runs (its PTX check fails).
const fn tma_info(entry: &'static str, params: &'static [ParamSpec]) -> KernelInfo {
    unsafe {
        KernelInfo::new_unchecked(
            entry,
            entry,
            TMA_PTX,
            params,
            Contract::new_unchecked(32, None, 1, Some(1), MAX_SMEM_BYTES),
        )
    }
}

static TMA_U32: KernelInfo = tma_info("tma_box_2d", &TMA_U32_PARAMS);
static TMA_BF16: KernelInfo = tma_info("tma_box_2d", &TMA_BF16_PARAMS);
static TMA_U8: KernelInfo = tma_info("tma_box_2d", &TMA_U8_PARAMS);

/// `cluster_pairs` in clusters of `n` blocks (the kernel assumes pairs: only `n = 2` runs it).
const fn cluster_info(n: u32) -> KernelInfo {
    unsafe {
        KernelInfo::new_unchecked(
            "cluster_pairs",
            "cluster_pairs",
            CLUSTER_PTX,
            &CLUSTER_PARAMS,
            Contract::new_unchecked(32, None, 1, None, 0).with_cluster(n),
        )
    }
}

fn launch(
    d: &Device,
    k: &KernelInfo,
    dims: LaunchDims,
    args: &mut [KernelArg<'_>],
) -> Result<prism_runtime::LaunchReport, RuntimeError> {
    // SAFETY: see `tma_info` and `cluster_info`.
    unsafe { d.launch(k, dims, args) }
}

fn device() -> Device {
    let d = Device::auto().expect("Device::auto");
    eprintln!("backend: {}", d.name());
    d
}

/// A deterministic byte stream (64-bit LCG).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 16
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// The swizzle (PTX ISA §5.5.7): the 16-byte chunk index (bits 4..) is XORed with the 128-byte line index (bits 7..), 1,
/// 2 or 3 bits of it for the 32, 64 and 128-byte swizzles.
fn swizzled(a: usize, s: TensorSwizzle) -> usize {
    let bits = match s {
        TensorSwizzle::None => 0,
        TensorSwizzle::B32 => 1,
        TensorSwizzle::B64 => 3,
        TensorSwizzle::B128 => 7,
    };
    a ^ (((a >> 7) & bits) << 4)
}

/// One TMA case: a `rows × cols` row-major tensor of `es`-byte elements (random bytes), a
/// `box_rows × box_cols` box at signed coordinates (`c0` column, `c1` row).
#[derive(Clone, Copy, Debug)]
struct Case {
    rows: usize,
    cols: usize,
    box_rows: u32,
    box_cols: u32,
    c0: i32,
    c1: i32,
    swizzle: TensorSwizzle,
    boff: u32,
}

/// What the kernel's output must be: the box's bytes in shared memory, with rows `pitch` bytes apart
/// (the swizzle span when there is one; the box rows are exactly that wide here) and every 16-byte chunk
/// moved by the swizzle; elements outside the tensor read as zero.
fn reference(c: &Case, es: usize, host: &[u8]) -> Vec<u8> {
    let inner = c.box_cols as usize * es;
    let pitch = inner.max(c.swizzle.span() as usize);
    let mut out = vec![0u8; c.box_rows as usize * pitch];
    for j1 in 0..c.box_rows as usize {
        for j0 in 0..c.box_cols as usize {
            let (r, col) = (c.c1 as i64 + j1 as i64, c.c0 as i64 + j0 as i64);
            let inside = (0..c.rows as i64).contains(&r) && (0..c.cols as i64).contains(&col);
            let lin = j1 * pitch + j0 * es;
            for b in 0..es {
                let v = if inside {
                    host[(r as usize * c.cols + col as usize) * es + b]
                } else {
                    0
                };
                out[swizzled(lin + b, c.swizzle)] = v;
            }
        }
    }
    out
}

/// Runs `c` with elements of type `T` (made from `es` random bytes each by `make`) through `k`; checks the
/// whole output buffer (sentinel past the box) against [`reference`].
fn run_case<T: DeviceCopy>(dev: &Device, k: &KernelInfo, c: Case, make: fn(&[u8]) -> T, seed: u64) {
    run_case_with(dev, k, c, make, seed, TensorL2Promotion::None);
}

/// [`run_case`] through a map that asks for `promotion` (which must change no byte of the box).
fn run_case_with<T: DeviceCopy>(
    dev: &Device,
    k: &KernelInfo,
    c: Case,
    make: fn(&[u8]) -> T,
    seed: u64,
    promotion: TensorL2Promotion,
) {
    let es = std::mem::size_of::<T>();
    let host = Rng(seed).bytes(c.rows * c.cols * es);
    assert!(host.iter().any(|&b| b != 0));
    let elems: Vec<T> = host.chunks(es).map(make).collect();
    let buf = dev.htod(&elems).unwrap();
    let map = TensorMap::row_major_2d(
        &buf,
        c.rows as u64,
        c.cols as u64,
        c.box_rows,
        c.box_cols,
        c.swizzle,
    )
    .and_then(|m| m.with_l2_promotion(promotion))
    .unwrap_or_else(|e| panic!("{c:?}: {e}"));
    assert_eq!(map.l2_promotion(), promotion);
    let want = reference(&c, es, &host);
    assert_eq!(
        map.box_bytes() as usize,
        c.box_rows as usize * c.box_cols as usize * es
    );
    assert_eq!(
        want.len() as u64,
        map.box_bytes(),
        "box rows fill the swizzle span"
    );
    // Sentinel words after the box catch a copy that runs long.
    let words = want.len() / 4 + 16;
    let mut out = dev.htod(&vec![0xDEAD_BEEFu32; words]).unwrap();
    launch(
        dev,
        k,
        LaunchDims::new(1, 128),
        &mut [
            map.as_arg(),
            out.as_arg_mut(),
            KernelArg::I32(c.c0),
            KernelArg::I32(c.c1),
            KernelArg::U32(want.len() as u32),
            KernelArg::U32(c.boff),
        ],
    )
    .unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let got: Vec<u8> = dev
        .dtoh(&out)
        .unwrap()
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "{c:?}: byte {i} of the box (element size {es})");
    }
    assert!(
        got[want.len()..]
            .chunks(4)
            .all(|w| w == 0xDEAD_BEEFu32.to_le_bytes()),
        "{c:?}: bytes past the box were written"
    );
}

fn u32_of(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().unwrap())
}

fn bf16_of(b: &[u8]) -> half::bf16 {
    half::bf16::from_bits(u16::from_le_bytes(b.try_into().unwrap()))
}

fn u8_of(b: &[u8]) -> u8 {
    b[0]
}

const KIB64: u32 = 64 * 1024;

#[test]
fn tma_box_matches_cpu_reference_for_every_swizzle() {
    let dev = device();
    for (i, (swizzle, box_cols)) in [
        (TensorSwizzle::None, 24),
        (TensorSwizzle::B32, 8),
        (TensorSwizzle::B64, 16),
        (TensorSwizzle::B128, 32),
    ]
    .into_iter()
    .enumerate()
    {
        let c = Case {
            rows: 40,
            cols: 72,
            box_rows: 16,
            box_cols,
            c0: 8,
            c1: 12,
            swizzle,
            boff: KIB64,
        };
        run_case(&dev, &TMA_U32, c, u32_of, 11 + i as u64);
    }
    // Other element sizes: bf16 rows of 64 elements (128 B), u8 rows of 64 (64 B).
    let c = Case {
        rows: 33,
        cols: 200,
        box_rows: 8,
        box_cols: 64,
        c0: 64,
        c1: 5,
        swizzle: TensorSwizzle::B128,
        boff: KIB64,
    };
    run_case(&dev, &TMA_BF16, c, bf16_of, 21);
    let c = Case {
        rows: 50,
        cols: 96,
        box_rows: 24,
        box_cols: 64,
        c0: 32,
        c1: 20,
        swizzle: TensorSwizzle::B64,
        boff: KIB64,
    };
    run_case(&dev, &TMA_U8, c, u8_of, 22);
}

/// Every L2 promotion is kept in the map (its encoding round-trips through the emulator's decoder) and moves
/// the same box: a fetch-size hint, not a change of layout.
#[test]
fn l2_promotion_is_kept_and_moves_the_same_box() {
    let dev = device();
    for (i, p) in [
        TensorL2Promotion::None,
        TensorL2Promotion::B64,
        TensorL2Promotion::B128,
        TensorL2Promotion::B256,
    ]
    .into_iter()
    .enumerate()
    {
        let mut desc = emu::TensorMap::tiled(
            emu::TensorDataType::Bf16,
            0x10000,
            &[200, 33],
            &[400],
            &[64, 8],
            TensorSwizzle::B128,
        )
        .unwrap();
        desc.l2_promotion = p;
        let bytes = desc.encode();
        assert_eq!(bytes[104], p as u8);
        assert_eq!(emu::TensorMap::decode(&bytes).unwrap(), desc);
        let c = Case {
            rows: 33,
            cols: 200,
            box_rows: 8,
            box_cols: 64,
            c0: 136,
            c1: 30,
            swizzle: TensorSwizzle::B128,
            boff: KIB64,
        };
        run_case_with(&dev, &TMA_BF16, c, bf16_of, 41 + i as u64, p);
    }
    let mut bad = emu::TensorMap::tiled(
        emu::TensorDataType::U8,
        0x10000,
        &[64],
        &[],
        &[64],
        TensorSwizzle::None,
    )
    .unwrap()
    .encode();
    bad[104] = 4;
    let e = emu::TensorMap::decode(&bad).unwrap_err();
    assert!(e.0.contains("L2 promotion 4"), "{e}");
}

#[test]
fn tma_box_partly_outside_the_tensor_is_zero_filled() {
    let dev = device();
    for (i, (swizzle, box_cols, c0, c1)) in [
        (TensorSwizzle::None, 24, 60, 35), // past the right and bottom edges
        (TensorSwizzle::B128, 32, -8, -3), // before the left and top edges
        (TensorSwizzle::B64, 16, 64, -10), // top-right corner
        (TensorSwizzle::B32, 8, 100, 0),   // entirely outside: all zeros
    ]
    .into_iter()
    .enumerate()
    {
        let c = Case {
            rows: 40,
            cols: 72,
            box_rows: 16,
            box_cols,
            c0,
            c1,
            swizzle,
            boff: KIB64,
        };
        run_case(&dev, &TMA_U32, c, u32_of, 31 + i as u64);
    }
}

/// The box lands in the last KiBs of the 227 KiB of dynamic shared memory the contract asks for.
#[test]
fn dynamic_shared_memory_up_to_227_kib() {
    let dev = device();
    assert_eq!(TMA_U32.contract().smem_bytes(), 232_448);
    let c = Case {
        rows: 40,
        cols: 72,
        box_rows: 16,
        box_cols: 32,
        c0: 0,
        c1: 0,
        swizzle: TensorSwizzle::B128,
        // box region 2 KiB, at most 1023 bytes of alignment: ends before 232448.
        boff: MAX_SMEM_BYTES - 4096,
    };
    run_case(&dev, &TMA_U32, c, u32_of, 41);
}

fn map_err<T: std::fmt::Debug>(r: Result<T, RuntimeError>) -> String {
    match r {
        Err(RuntimeError::TensorMap(m)) => m,
        other => panic!("expected RuntimeError::TensorMap, got {other:?}"),
    }
}

#[test]
fn every_tensor_map_rule_is_an_error_value() {
    let dev = device();
    let a = dev.alloc_zeros::<u32>(64 * 64).unwrap();
    let ok = TensorMap::row_major_2d(&a, 64, 64, 16, 32, TensorSwizzle::B128).unwrap();
    assert_eq!(ok.dims(), [64, 64]);
    assert_eq!(ok.box_dims(), [32, 16]);
    assert_eq!(ok.strides_bytes(), &[256]);
    let cases: Vec<(&str, Result<(), RuntimeError>)> = vec![
        // the tensor must fit the buffer: 65 rows of 256 bytes in a 16 KiB buffer
        (
            "buffer has 16384 bytes",
            TensorMap::row_major_2d(&a, 65, 64, 16, 32, TensorSwizzle::B128).map(drop),
        ),
        // ... also through a stride larger than the row
        (
            "buffer has 16384 bytes",
            TensorMap::tiled(&a, [64, 64], &[512], [32, 16], TensorSwizzle::B128).map(drop),
        ),
        (
            "box dim 1 = 0",
            TensorMap::row_major_2d(&a, 64, 64, 0, 32, TensorSwizzle::None).map(drop),
        ),
        (
            "box dim 1 = 257",
            TensorMap::row_major_2d(&a, 64, 64, 257, 32, TensorSwizzle::None).map(drop),
        ),
        (
            "box dim 0 = 300",
            TensorMap::tiled(&a, [4096], &[], [300], TensorSwizzle::None).map(drop),
        ),
        // inner box extent against the swizzle span, and a multiple of 16 bytes
        (
            "exceeds the 32-byte swizzle span",
            TensorMap::row_major_2d(&a, 64, 64, 16, 16, TensorSwizzle::B32).map(drop),
        ),
        (
            "exceeds the 128-byte swizzle span",
            TensorMap::row_major_2d(&a, 64, 64, 16, 64, TensorSwizzle::B128).map(drop),
        ),
        (
            "must be a multiple of 16",
            TensorMap::row_major_2d(&a, 64, 64, 16, 3, TensorSwizzle::None).map(drop),
        ),
        // strides: multiple of 16, below 2^40, at least the row
        (
            "multiple of 16 below 2^40",
            TensorMap::tiled(&a, [4, 64], &[24], [4, 1], TensorSwizzle::None).map(drop),
        ),
        (
            "multiple of 16 below 2^40",
            TensorMap::tiled(&a, [4, 2], &[1 << 40], [4, 1], TensorSwizzle::None).map(drop),
        ),
        // rows of 6 u32: a 24-byte row stride
        (
            "stride of dim 1 = 24 bytes",
            TensorMap::row_major_2d(&a, 64, 6, 1, 4, TensorSwizzle::None).map(drop),
        ),
        (
            "smaller than the 256 bytes",
            TensorMap::tiled(&a, [64, 8], &[128], [4, 1], TensorSwizzle::None).map(drop),
        ),
        // dims 1..=2^32, strides count, rank 1..=5
        (
            "dim 1 = 0",
            TensorMap::tiled(&a, [4, 0], &[16], [4, 1], TensorSwizzle::None).map(drop),
        ),
        (
            "dim 0 = 4294967297",
            TensorMap::tiled(&a, [(1 << 32) + 1], &[], [4], TensorSwizzle::None).map(drop),
        ),
        (
            "2 strides for rank 2",
            TensorMap::tiled(&a, [4, 4], &[16, 64], [4, 1], TensorSwizzle::None).map(drop),
        ),
        (
            "rank 6",
            TensorMap::<u32, 6>::tiled(
                &a,
                [4, 1, 1, 1, 1, 1],
                &[16; 5],
                [4, 1, 1, 1, 1, 1],
                TensorSwizzle::None,
            )
            .map(drop),
        ),
        (
            "rank 0",
            TensorMap::<u32, 0>::tiled(&a, [], &[], [], TensorSwizzle::None).map(drop),
        ),
    ];
    for (want, r) in cases {
        let m = map_err(r);
        assert!(m.contains(want), "expected `{want}` in `{m}`");
        eprintln!("refused: {m}");
    }
    // An empty buffer holds no tensor.
    let empty = dev.alloc_zeros::<u32>(0).unwrap();
    let m = map_err(TensorMap::tiled(&empty, [4], &[], [4], TensorSwizzle::None));
    assert!(m.contains("buffer has 0 bytes"), "{m}");
    // Display of the variant.
    let e = TensorMap::row_major_2d(&a, 64, 64, 16, 16, TensorSwizzle::B32).unwrap_err();
    assert!(e.to_string().starts_with("invalid tensor map: "), "{e}");
}

/// The runtime has no sub-buffers, so a whole `DeviceBuffer` is always 16-byte aligned; the alignment rule is
/// `emu::TensorMap::validate`'s, the one the runtime applies, checked here on an address directly.
#[test]
fn misaligned_global_address_is_refused_by_the_shared_rule() {
    let dev = device();
    let a = dev.alloc_zeros::<u8>(4096).unwrap();
    assert_eq!(
        a.raw_ptr() % 16,
        0,
        "device allocations are 16-byte aligned"
    );
    let m = TensorMap::tiled(&a, [64, 64], &[64], [16, 4], TensorSwizzle::None).unwrap();
    assert_eq!(m.description().global_address, a.raw_ptr());
    let e = emu::TensorMap::tiled(
        emu::TensorDataType::U8,
        a.raw_ptr() + 8,
        &[64, 64],
        &[64],
        &[16, 4],
        TensorSwizzle::None,
    )
    .unwrap_err();
    assert!(e.0.contains("not 16-byte aligned"), "{e}");
}

fn tma_args<'a>(map: KernelArg<'a>, out: &'a mut DeviceBuffer<u32>) -> Vec<KernelArg<'a>> {
    vec![
        map,
        out.as_arg_mut(),
        KernelArg::I32(0),
        KernelArg::I32(0),
        KernelArg::U32(64),
        KernelArg::U32(KIB64),
    ]
}

fn bad_args(r: Result<prism_runtime::LaunchReport, RuntimeError>) -> String {
    match r {
        Err(RuntimeError::BadArgs(m)) => m,
        other => panic!("expected BadArgs, got {other:?}"),
    }
}

#[test]
fn launch_checks_tensor_map_arguments() {
    let dev = device();
    let a32 = dev.htod(&vec![5u32; 64 * 64]).unwrap();
    let abf = dev.alloc_zeros::<half::bf16>(64 * 64).unwrap();
    let mut out = dev.htod(&vec![7u32; 64]).unwrap();
    let dims = LaunchDims::new(1, 32);

    // Wrong element type: a bf16 map for a TensorMap<u32, 2> parameter.
    let mbf = TensorMap::row_major_2d(&abf, 64, 64, 4, 8, TensorSwizzle::None).unwrap();
    let m = bad_args(launch(
        &dev,
        &TMA_U32,
        dims,
        &mut tma_args(mbf.as_arg(), &mut out),
    ));
    assert_eq!(
        m,
        "kernel `tma_box_2d`: parameter #0 `tmap: TensorMap<u32, 2>` got a TensorMap<bf16, 2>"
    );
    // Wrong rank: a rank-3 map.
    let m3 = TensorMap::tiled(
        &a32,
        [16, 16, 16],
        &[64, 1024],
        [4, 4, 4],
        TensorSwizzle::None,
    )
    .unwrap();
    let m = bad_args(launch(
        &dev,
        &TMA_U32,
        dims,
        &mut tma_args(m3.as_arg(), &mut out),
    ));
    assert!(m.ends_with("got a TensorMap<u32, 3>"), "{m}");
    // Edited public fields do not get past the handle's own facts.
    let m2 = TensorMap::row_major_2d(&a32, 64, 64, 4, 4, TensorSwizzle::None).unwrap();
    let mut edited = m3.as_arg();
    if let KernelArg::TensorMap { rank, .. } = &mut edited {
        *rank = 2;
    }
    let m = bad_args(launch(
        &dev,
        &TMA_U32,
        dims,
        &mut tma_args(edited, &mut out),
    ));
    assert!(m.contains("but the handle is TensorMap<u32, 3>"), "{m}");
    // A buffer where a tensor map is expected, and a tensor map where a buffer is.
    let m = bad_args(launch(
        &dev,
        &TMA_U32,
        dims,
        &mut tma_args(a32.as_arg(), &mut out),
    ));
    assert!(m.ends_with("got a const buffer of u32"), "{m}");
    let m = bad_args(launch(
        &dev,
        &TMA_U32,
        dims,
        &mut [
            m2.as_arg(),
            m2.as_arg(),
            KernelArg::I32(0),
            KernelArg::I32(0),
            KernelArg::U32(64),
            KernelArg::U32(KIB64),
        ],
    ));
    assert!(
        m.contains("parameter #1 `out: *mut u32` got a TensorMap<u32, 2>"),
        "{m}"
    );
    // A map of another device's buffer.
    let other = Device::auto().unwrap();
    assert_ne!(other.id(), dev.id());
    let b = other.alloc_zeros::<u32>(64 * 64).unwrap();
    let mo = TensorMap::row_major_2d(&b, 64, 64, 4, 4, TensorSwizzle::None).unwrap();
    let m = bad_args(launch(
        &dev,
        &TMA_U32,
        dims,
        &mut tma_args(mo.as_arg(), &mut out),
    ));
    assert!(
        m.contains(&format!(
            "got a tensor map of a buffer of device #{}",
            other.id()
        )),
        "{m}"
    );
    // Nothing ran.
    assert_eq!(dev.dtoh(&out).unwrap(), vec![7u32; 64]);
    // The right map runs.
    launch(&dev, &TMA_U32, dims, &mut tma_args(m2.as_arg(), &mut out)).unwrap();
    assert_eq!(dev.dtoh(&out).unwrap()[..16], [5u32; 16]);
}

#[test]
fn tensor_map_parameter_must_be_128_bytes_aligned_to_64_in_the_ptx() {
    static UNALIGNED: KernelInfo = tma_info("tma_unaligned_param", &TMA_U32_PARAMS);
    let dev = device();
    let a = dev.alloc_zeros::<u32>(64 * 64).unwrap();
    let map = TensorMap::row_major_2d(&a, 64, 64, 4, 4, TensorSwizzle::None).unwrap();
    let mut out = dev.alloc_zeros::<u32>(64).unwrap();
    let r = launch(
        &dev,
        &UNALIGNED,
        LaunchDims::new(1, 32),
        &mut tma_args(map.as_arg(), &mut out),
    );
    match r {
        Err(RuntimeError::Ptx(m)) => assert!(
            m.contains("`tmap: TensorMap<u32, 2>` is passed as 128 bytes aligned to 64, PTX parameter `tmap` has 128 bytes aligned to 1"),
            "{m}"
        ),
        other => panic!("expected a PTX mismatch, got {other:?}"),
    }
    assert_eq!(
        ParamType::TensorMap {
            elem: ElemType::BF16,
            rank: 2,
            writable: false,
        }
        .to_string(),
        "TensorMap<bf16, 2>"
    );
}

/// What the emulator's launch-time decode (and a TMA through a corrupted parameter) relies on: any 128 bytes
/// decode to a valid map or an error value, never a panic, including huge dims and strides.
#[test]
fn decoding_garbage_is_an_error_value() {
    let mut rng = Rng(99);
    let base = emu::TensorMap::tiled(
        emu::TensorDataType::F32,
        0x10000,
        &[64, 32, 8],
        &[256, 8192],
        &[32, 8, 2],
        TensorSwizzle::B128,
    )
    .unwrap()
    .encode();
    let (mut valid, mut refused) = (0, 0);
    for i in 0..20_000 {
        let mut b = if i % 4 == 0 {
            rng.bytes(128)
        } else {
            base.to_vec()
        };
        // Overwrite 1 to 3 fields of a valid encoding with random or edge values (dims and strides near
        // their limits, where the extent arithmetic overflows u64).
        for _ in 0..1 + rng.next() % 3 {
            let at = rng.next() as usize;
            match at % 6 {
                0 => b[at % 8 + 4] = rng.next() as u8,
                1 => {
                    let v = [0u64, 1, 1 << 32, (1 << 32) + 1, u64::MAX][at % 5];
                    let d = (at / 8) % 5;
                    b[16 + 8 * d..24 + 8 * d].copy_from_slice(&v.to_le_bytes());
                }
                2 => {
                    let v = [16u64, 48, (1 << 40) - 16, 1 << 40, u64::MAX][at % 5];
                    let s = (at / 8) % 4;
                    b[56 + 8 * s..64 + 8 * s].copy_from_slice(&v.to_le_bytes());
                }
                3 => b[88 + at / 8 % 10] = rng.next() as u8,
                4 => b[98 + at / 8 % 8] = rng.next() as u8 % 10,
                _ => b[8 + at / 8 % 8] = rng.next() as u8,
            }
        }
        match emu::TensorMap::decode(&b) {
            Ok(m) => {
                valid += 1;
                assert!(m.validate().is_ok());
                assert!(m.extent_bytes() > 0);
            }
            Err(_) => refused += 1,
        }
    }
    eprintln!("random encodings: {valid} valid maps, {refused} refused");
    assert!(
        valid > 100 && refused > 100,
        "{valid} valid, {refused} refused"
    );
    assert!(emu::TensorMap::decode(&[0u8; 128]).is_err());
    assert!(emu::TensorMap::decode(&[0u8; 7]).is_err());
}

#[test]
fn cluster_launch_runs_pairs_with_cluster_barriers() {
    static PAIRS: KernelInfo = cluster_info(2);
    let dev = device();
    assert_eq!(PAIRS.contract().cluster_blocks(), 2);
    let mut out = dev.htod(&[u32::MAX; 8 * 4]).unwrap();
    let r = launch(
        &dev,
        &PAIRS,
        LaunchDims::new(8, 64),
        &mut [out.as_arg_mut()],
    )
    .unwrap();
    assert_eq!(r.backend, dev.backend());
    let got = dev.dtoh(&out).unwrap();
    for b in 0..8u32 {
        let want = [b % 2, b / 2, 2, (b ^ 1) * 1000 + 7];
        assert_eq!(got[4 * b as usize..4 * b as usize + 4], want, "block {b}");
    }
}

#[test]
fn cluster_contract_violations_are_refused() {
    static PAIRS: KernelInfo = cluster_info(2);
    static SIXTEEN: KernelInfo = cluster_info(16);
    static ZERO: KernelInfo = cluster_info(0);
    let dev = device();
    let mut out = dev.htod(&[1u32; 8 * 4]).unwrap();
    let bad = |k: &KernelInfo, grid: u32, out: &mut DeviceBuffer<u32>| match launch(
        &dev,
        k,
        LaunchDims::new(grid, 64),
        &mut [out.as_arg_mut()],
    ) {
        Err(RuntimeError::BadLaunch(m)) => m,
        other => panic!("expected BadLaunch, got {other:?}"),
    };
    assert_eq!(
        bad(&PAIRS, 7, &mut out),
        "kernel `cluster_pairs`: grid of 7 blocks is not a multiple of the cluster size 2 (cluster = 2)"
    );
    assert_eq!(
        bad(&SIXTEEN, 16, &mut out),
        "kernel `cluster_pairs`: cluster of 16 blocks exceeds the portable limit of 8 blocks per cluster"
    );
    assert_eq!(
        bad(&ZERO, 2, &mut out),
        "kernel `cluster_pairs`: cluster of 0 blocks: a cluster needs at least 1 block"
    );
    assert!(validate_launch(&PAIRS, LaunchDims::new(6, 64)).is_ok());
    assert_eq!(dev.dtoh(&out).unwrap(), vec![1u32; 32], "nothing ran");
    // Without a cluster contract the default is 1 (no cluster) and any grid passes.
    let plain = unsafe { Contract::new_unchecked(32, None, 1, None, 0) };
    assert_eq!(plain.cluster_blocks(), 1);
}

/// The emulator refuses a cluster kernel's partner access outside a cluster: the same PTX under a contract
/// without clusters faults (what a wrong `cluster = n` would do), so the runtime must pass the cluster on.
#[test]
fn cluster_size_reaches_the_emulator() {
    static ONE: KernelInfo = cluster_info(1);
    let dev = device();
    if dev.backend() != Backend::Emulator {
        eprintln!(
            "skipped on {}: checks the emulator's fault for a missing cluster",
            dev.name()
        );
        return;
    }
    let mut out = dev.alloc_zeros::<u32>(8 * 4).unwrap();
    let r = launch(&dev, &ONE, LaunchDims::new(8, 64), &mut [out.as_arg_mut()]);
    match r {
        Err(RuntimeError::Emulator(EmuError::Faulted { faults, .. })) => {
            assert!(!faults.is_empty());
            eprintln!("fault without a cluster: {}", faults[0]);
        }
        other => panic!("expected a fault without clusters, got {other:?}"),
    }
}

/// The driver's JIT refused this file's TMA kernel on an H200 while it declared its dynamic shared memory
/// inside the entry (ptxas: "Parsing error near '.shared'"); the emulator refuses it too, saying where to
/// declare it.
#[test]
fn extern_shared_inside_an_entry_is_refused_as_ptxas_refuses_it() {
    let decl = "// Dynamic shared memory is declared at module scope: ptxas rejects `.extern .shared` inside an entry.\n.extern .shared .align 1024 .b8 dsmem[];\n";
    assert!(TMA_PTX.contains(decl));
    let inside = TMA_PTX.replace(decl, "").replacen(
        "    .reg .b64 %rd<8>;\n",
        "    .reg .b64 %rd<8>;\n    .extern .shared .align 1024 .b8 dsmem[];\n",
        1,
    );
    let err = emu::Module::parse(&inside).expect_err("`.extern .shared` inside an entry");
    assert!(
        err.message.contains("module scope") && err.message.contains("dsmem"),
        "{err}"
    );
    emu::Module::parse(TMA_PTX).expect("the module-scope declaration parses");
}
