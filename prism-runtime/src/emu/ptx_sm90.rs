//! The warp- and warpgroup-level tensor-core instruction forms: `wmma` (PTX §9.7.14.4) and `wgmma`
//! (§9.7.15), decoded from an instruction's modifiers and types; and the sm_90 asynchronous stores and
//! reductions (`st.async`, `red.async`, `cp.reduce.async.bulk`), whose forms are tables of the same kind.

use super::{AtomOp, Kind, MmaKind, PtxType, Space};

/// Which matrix a `wmma` fragment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WmmaFrag {
    A,
    B,
    C,
    D,
}

/// A decoded `wmma` instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WmmaOp {
    /// `wmma.mma` (else a load or a store).
    pub mma: bool,
    /// `wmma.store.d`.
    pub store: bool,
    pub frag: WmmaFrag,
    pub m: u8,
    pub n: u8,
    pub k: u8,
    /// Row-major memory layout (loads and stores).
    pub row: bool,
    /// Element type of a loaded/stored fragment; the A/B type of an mma.
    pub ty: PtxType,
    /// D and C types of an mma.
    pub dtype: PtxType,
    pub ctype: PtxType,
    pub space: Space,
    /// `.satfinite` of an integer `wmma.mma`: the s32 result clamps instead of wrapping.
    pub sat: bool,
}

/// A `wgmma` instruction (PTX §9.7.15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WgmmaOp {
    /// `wgmma.fence.sync.aligned`
    Fence,
    /// `wgmma.commit_group.sync.aligned`
    Commit,
    /// `wgmma.wait_group.sync.aligned N`
    Wait,
    /// `wgmma.mma_async.sync.aligned.m64nNk16.D.A.B`
    Mma(WgmmaShape),
}

/// Shape and types of a `wgmma.mma_async`: M = 64, K = 32 bytes of the input type (16 for f16/bf16, 8
/// for tf32, 32 for FP8 and 8-bit integers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WgmmaShape {
    /// N: a multiple of 8 in 8..=256 (8-bit integers: 8, 24, and multiples of 16).
    pub n: u16,
    /// Accumulator type: `F32`, `F16` (f16 and FP8 inputs) or `S32` (8-bit integers).
    pub dtype: PtxType,
    /// Input types of A and B (equal but for FP8 and 8-bit integers, which mix).
    pub a: WgElem,
    pub b: WgElem,
    /// A comes from four registers per thread rather than a shared-memory descriptor.
    pub a_regs: bool,
    /// `.satfinite` (8-bit integers): the sum saturates to the s32 range instead of wrapping.
    pub satfinite: bool,
}

/// An input element type of `wgmma.mma_async`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WgElem {
    F16,
    BF16,
    TF32,
    E4M3,
    E5M2,
    S8,
    U8,
}

impl WgElem {
    fn parse(s: &str) -> Option<WgElem> {
        Some(match s {
            "f16" => WgElem::F16,
            "bf16" => WgElem::BF16,
            "tf32" => WgElem::TF32,
            "e4m3" => WgElem::E4M3,
            "e5m2" => WgElem::E5M2,
            "s8" => WgElem::S8,
            "u8" => WgElem::U8,
            _ => return None,
        })
    }

    /// The PTX type name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            WgElem::F16 => "f16",
            WgElem::BF16 => "bf16",
            WgElem::TF32 => "tf32",
            WgElem::E4M3 => "e4m3",
            WgElem::E5M2 => "e5m2",
            WgElem::S8 => "s8",
            WgElem::U8 => "u8",
        }
    }

    /// Bytes per element.
    pub(crate) fn bytes(self) -> u64 {
        match self {
            WgElem::F16 | WgElem::BF16 => 2,
            WgElem::TF32 => 4,
            _ => 1,
        }
    }

    /// K of one instruction: 32 bytes of elements.
    pub(crate) fn k(self) -> u16 {
        32 / self.bytes() as u16
    }

    fn int(self) -> bool {
        matches!(self, WgElem::S8 | WgElem::U8)
    }

    fn fp8(self) -> bool {
        matches!(self, WgElem::E4M3 | WgElem::E5M2)
    }
}

fn has(mods: &[&str], m: &str) -> bool {
    mods.contains(&m)
}

/// The integer and f64 forms of `mma.sync.aligned` (`shape`, `types` = D, A, B, C), or `None` for
/// another form. Integer: m8n8k16, m16n8k16, m16n8k32 with s8/u8 A and B in any mix and s32 C/D, and
/// m8n8k32, m16n8k32, m16n8k64 with s4/u4, `.satfinite` optional, and m8n8k128, m16n8k128, m16n8k256 with
/// b1 `.and.popc`/`.xor.popc`; f64: m8n8k4 (sm_80) and m16n8k4/k8/k16 (sm_90), `.rn` the only rounding (PTX ISA,
/// Warp-level matrix instructions: `mma`). All need `.row.col`, the only layout these shapes accept.
pub(super) fn mma_int_f64(shape: &str, mods: &[&str], types: &[PtxType]) -> Option<MmaKind> {
    if !has(mods, "row") || !has(mods, "col") {
        return None;
    }
    let int8 = |t: PtxType| matches!(t, PtxType::S8 | PtxType::U8);
    // FP8 (sm_89+): m16n8k32 with .e4m3/.e5m2 A and B and f32 C/D, the integer m16n8k32's fragments.
    let fp8: Vec<bool> = mods
        .iter()
        .filter_map(|m| match *m {
            "e4m3" => Some(false),
            "e5m2" => Some(true),
            _ => None,
        })
        .collect();
    if !fp8.is_empty() {
        return match (shape, &fp8[..], types) {
            ("m16n8k32", [a, b], [PtxType::F32, PtxType::F32]) if !has(mods, "satfinite") => {
                Some(MmaKind::Fp8 {
                    a_e5m2: *a,
                    b_e5m2: *b,
                })
            }
            _ => None,
        };
    }
    // 4-bit integers (sm_80+; `.s4`/`.u4` are not register types, so they arrive as modifiers, A's first):
    // the 8-bit forms' fragments with eight elements to a register and twice the K.
    let int4: Vec<bool> = mods
        .iter()
        .filter_map(|m| match *m {
            "s4" => Some(true),
            "u4" => Some(false),
            _ => None,
        })
        .collect();
    // Single-bit (sm_80+): `.b1.b1` with `.and.popc` or `.xor.popc`, eight times the 8-bit K at 32 bits a
    // register.
    if has(mods, "b1") {
        let (m16, k32) = match shape {
            "m8n8k128" => (false, false),
            "m16n8k128" => (true, false),
            "m16n8k256" => (true, true),
            _ => return None,
        };
        let xor = has(mods, "xor");
        let ok = has(mods, "popc") && (xor ^ has(mods, "and")) && !has(mods, "satfinite");
        return (ok && types == [PtxType::S32, PtxType::S32]).then_some(MmaKind::Int {
            m16,
            k32,
            bits: 1,
            xor,
            a_signed: false,
            b_signed: false,
            sat: false,
        });
    }
    if !int4.is_empty() {
        let (m16, k32) = match shape {
            "m8n8k32" => (false, false),
            "m16n8k32" => (true, false),
            "m16n8k64" => (true, true),
            _ => return None,
        };
        return match (&int4[..], types) {
            ([a, b], [PtxType::S32, PtxType::S32]) => Some(MmaKind::Int {
                m16,
                k32,
                bits: 4,
                xor: false,
                a_signed: *a,
                b_signed: *b,
                sat: has(mods, "satfinite"),
            }),
            _ => None,
        };
    }
    match types {
        [PtxType::S32, a, b, PtxType::S32] if int8(*a) && int8(*b) => {
            let (m16, k32) = match shape {
                "m8n8k16" => (false, false),
                "m16n8k16" => (true, false),
                "m16n8k32" => (true, true),
                _ => return None,
            };
            Some(MmaKind::Int {
                m16,
                k32,
                bits: 8,
                xor: false,
                a_signed: *a == PtxType::S8,
                b_signed: *b == PtxType::S8,
                sat: has(mods, "satfinite"),
            })
        }
        [PtxType::F64, PtxType::F64, PtxType::F64, PtxType::F64] => {
            let directed = ["rz", "rm", "rp"].iter().any(|r| has(mods, r));
            let (m, k) = match shape {
                "m8n8k4" => (8, 4),
                "m16n8k4" => (16, 4),
                "m16n8k8" => (16, 8),
                "m16n8k16" => (16, 16),
                _ => return None,
            };
            (!directed && !has(mods, "satfinite")).then_some(MmaKind::F64 { m, k })
        }
        _ => None,
    }
}

/// The registers per thread of D, A, B and C of an integer or f64 `mma` (the fragments of the PTX ISA's
/// "Matrix Fragments for mma.mMnNkK" sections: M·K/32 A elements, K·N/32 B elements, M·N/32 C/D
/// elements per thread, four 8-bit elements to a 32-bit register); `None` for the other kinds.
pub(crate) fn mma_regs(kind: MmaKind) -> Option<[usize; 4]> {
    match kind {
        // 4- and 1-bit forms: 2 or 8 times the K at 8 or 32 elements a register, so the same register counts
        MmaKind::Int { m16, k32, .. } => {
            let (m, k) = (if m16 { 16 } else { 8 }, if k32 { 32 } else { 16 });
            let cd = m * 8 / 32;
            Some([cd, m * k / 128, k * 8 / 128, cd])
        }
        MmaKind::F64 { m, k } => {
            let (m, k) = (m as usize, k as usize);
            let cd = m * 8 / 32;
            Some([cd, m * k / 32, k * 8 / 32, cd])
        }
        MmaKind::Fp8 { .. } => Some([4, 4, 2, 4]),
        _ => None,
    }
}

/// The shape (m, n, k) a `wmma` modifier names (`m16n16k16`).
fn wmma_shape(mods: &[&str]) -> Option<(u8, u8, u8)> {
    mods.iter().find_map(|m| {
        let r = m.strip_prefix('m')?;
        let (mm, r) = r.split_once('n')?;
        let (nn, kk) = r.split_once('k')?;
        Some((
            mm.parse::<u8>().ok()?,
            nn.parse::<u8>().ok()?,
            kk.parse::<u8>().ok()?,
        ))
    })
}

/// Whether `wmma` has shape `s` for A/B elements of type `ab` (PTX ISA, `wmma.load`: f16/bf16 and s8/u8 in
/// m16n16k16, m32n8k16, m8n32k16; tf32 in m16n16k8; f64 in m8n8k4).
fn wmma_shape_ok(s: (u8, u8, u8), ab: PtxType) -> bool {
    match ab {
        PtxType::TF32 => s == (16, 16, 8),
        PtxType::F64 => s == (8, 8, 4),
        PtxType::F16 | PtxType::BF16 | PtxType::S8 | PtxType::U8 => {
            matches!(s, (16, 16, 16) | (32, 8, 16) | (8, 32, 16))
        }
        _ => false,
    }
}

/// `wmma.mma`'s D, A, B, C types (the A/B type, D, C) when the emulator computes the form: f16 with f16/f32
/// accumulators (`.dtype.ctype`), bf16 and tf32 with f32, s8/u8 with s32, f64 with f64 (`.rn` or no
/// rounding modifier).
fn wmma_mma_types(mods: &[&str], types: &[PtxType]) -> Option<(PtxType, PtxType, PtxType)> {
    use PtxType::*;
    let f16_or_f32 = |t: &PtxType| matches!(t, F16 | F32);
    match types {
        [d, c] if f16_or_f32(d) && f16_or_f32(c) => Some((F16, *d, *c)),
        [F32, a, b, F32] if a == b && matches!(a, BF16 | TF32 | F16) => Some((*a, F32, F32)),
        [S32, a, b, S32] if a == b && matches!(a, S8 | U8) => Some((*a, S32, S32)),
        [F64, F64, F64, F64] if !["rz", "rm", "rp"].iter().any(|r| has(mods, r)) => {
            Some((F64, F64, F64))
        }
        _ => None,
    }
}

/// `wmma.{load,store,mma}.*`; an unsupported shape or type decodes to `Kind::Unsupported`.
pub(super) fn decode_wmma(opcode: &str, mods: &[&str], types: &[PtxType], space: Space) -> Kind {
    let has = |m: &str| has(mods, m);
    let shape = wmma_shape(mods);
    let frag = if has("a") {
        Some(WmmaFrag::A)
    } else if has("b") {
        Some(WmmaFrag::B)
    } else if has("c") {
        Some(WmmaFrag::C)
    } else if has("d") {
        Some(WmmaFrag::D)
    } else {
        None
    };
    let op = |frag, sh: (u8, u8, u8), ty, dtype, ctype| WmmaOp {
        mma: has("mma"),
        store: has("store"),
        frag,
        m: sh.0,
        n: sh.1,
        k: sh.2,
        row: has("row"),
        ty,
        dtype,
        ctype,
        space,
        sat: has("satfinite"),
    };
    let op = match (has("mma"), shape, frag, types) {
        (true, Some(sh), _, _) => wmma_mma_types(mods, types)
            .filter(|(ab, _, _)| wmma_shape_ok(sh, *ab))
            .map(|(ab, d, c)| op(WmmaFrag::D, sh, ab, d, c)),
        (false, Some(sh), Some(frag), [t]) if has("load") || has("store") => {
            let ok = match (frag, t) {
                (WmmaFrag::A | WmmaFrag::B, _) => wmma_shape_ok(sh, *t),
                // Accumulators: f16/f32 with the f16 or tf32 shapes, s32 with the 8-bit ones, f64.
                (_, PtxType::F16 | PtxType::F32) => {
                    wmma_shape_ok(sh, PtxType::F16) || wmma_shape_ok(sh, PtxType::TF32)
                }
                (_, PtxType::S32) => wmma_shape_ok(sh, PtxType::S8),
                (_, PtxType::F64) => wmma_shape_ok(sh, PtxType::F64),
                _ => false,
            };
            ok.then(|| op(frag, sh, *t, *t, *t))
        }
        _ => None,
    };
    match op {
        Some(op) => Kind::Wmma(op),
        None => Kind::Unsupported(opcode.to_string()),
    }
}

/// `wgmma.mma_async`'s `.m64nNkK.dtype.atype.btype` (and `.satfinite`), when it is a form the emulator
/// computes: f16/bf16 (k16), tf32 (k8), FP8 (k32, f32 or f16 accumulators), 8-bit integers (k32, s32).
fn wgmma_shape(mods: &[&str], a_regs: bool) -> Option<WgmmaShape> {
    let at = mods.iter().position(|m| m.starts_with("m64n"))?;
    let (n, k) = mods[at].strip_prefix("m64n")?.split_once('k')?;
    let (n, k) = (n.parse::<u16>().ok()?, k.parse::<u16>().ok()?);
    let types: Vec<&str> = mods[at + 1..]
        .iter()
        .copied()
        .filter(|m| *m != "satfinite")
        .collect();
    let [d, a, b] = types[..] else {
        return None;
    };
    let (a, b) = (WgElem::parse(a)?, WgElem::parse(b)?);
    let dtype = match d {
        "f32" => PtxType::F32,
        "f16" => PtxType::F16,
        "s32" => PtxType::S32,
        _ => return None,
    };
    let types_ok = match (a, b) {
        (WgElem::F16, WgElem::F16) => dtype != PtxType::S32,
        (WgElem::BF16, WgElem::BF16) | (WgElem::TF32, WgElem::TF32) => dtype == PtxType::F32,
        _ if a.fp8() && b.fp8() => dtype != PtxType::S32,
        _ if a.int() && b.int() => dtype == PtxType::S32,
        _ => false,
    };
    let n_ok = if a.int() {
        n == 8 || n == 24 || (n % 16 == 0 && (16..=256).contains(&n))
    } else {
        n % 8 == 0 && (8..=256).contains(&n)
    };
    (types_ok && n_ok && k == a.k()).then_some(WgmmaShape {
        n,
        dtype,
        a,
        b,
        a_regs,
        satfinite: mods.contains(&"satfinite"),
    })
}

/// `wgmma.{fence,commit_group,wait_group,mma_async}.*`; `a_regs`: A is a register list.
pub(super) fn decode_wgmma(opcode: &str, mods: &[&str], _types: &[PtxType], a_regs: bool) -> Kind {
    let has = |m: &str| has(mods, m);
    if has("fence") {
        Kind::Wgmma(WgmmaOp::Fence)
    } else if has("commit_group") {
        Kind::Wgmma(WgmmaOp::Commit)
    } else if has("wait_group") {
        Kind::Wgmma(WgmmaOp::Wait)
    } else if has("mma_async") {
        match wgmma_shape(mods, a_regs) {
            Some(shape) if !has("sp") => Kind::Wgmma(WgmmaOp::Mma(shape)),
            _ => Kind::Unsupported(opcode.to_string()),
        }
    } else {
        Kind::Unsupported(opcode.to_string())
    }
}

/// The reduction a modifier names (`.add`, `.min`, …) among the eight that `red.async` and
/// `cp.reduce.async.bulk(.tensor)` accept.
pub(super) fn reduce_op(mods: &[&str]) -> Option<AtomOp> {
    mods.iter().find_map(|m| match *m {
        "add" => Some(AtomOp::Add),
        "min" => Some(AtomOp::Min),
        "max" => Some(AtomOp::Max),
        "inc" => Some(AtomOp::Inc),
        "dec" => Some(AtomOp::Dec),
        "and" => Some(AtomOp::And),
        "or" => Some(AtomOp::Or),
        "xor" => Some(AtomOp::Xor),
        _ => None,
    })
}

/// Whether `op` on `ty` is a valid reduction of `red.async` (`shared_cluster`, PTX ISA §9.7.12.7: inc/dec
/// .u32, min/max .u32/.s32, and/or/xor .b32, add .u32/.s32/.u64; the same table as the shared::cluster
/// `cp.reduce.async.bulk`) or of the global `cp.reduce.async.bulk` (§9.7.8.24.7's table: add also .f32,
/// .f64, .f16, .bf16; min/max also .u64, .s64, .f16, .bf16; and/or/xor also .b64).
pub(super) fn reduce_type_ok(op: AtomOp, ty: PtxType, shared_cluster: bool) -> bool {
    use PtxType::*;
    match (op, shared_cluster) {
        (AtomOp::Inc | AtomOp::Dec, _) => ty == U32,
        (AtomOp::Min | AtomOp::Max, true) => matches!(ty, U32 | S32),
        (AtomOp::Min | AtomOp::Max, false) => matches!(ty, U32 | S32 | U64 | S64 | F16 | BF16),
        (AtomOp::And | AtomOp::Or | AtomOp::Xor, true) => ty == B32,
        (AtomOp::And | AtomOp::Or | AtomOp::Xor, false) => matches!(ty, B32 | B64),
        (AtomOp::Add, true) => matches!(ty, U32 | S32 | U64),
        (AtomOp::Add, false) => matches!(ty, U32 | S32 | U64 | F32 | F64 | F16 | BF16),
        _ => false,
    }
}

/// `st.async` / `red.async` (`base`): the sm_90 forms on `.shared::cluster` (or generic) addresses with
/// `.mbarrier::complete_tx::bytes` completion (PTX ISA §9.7.8.12, §9.7.12.7). The sm_100 forms
/// (`.release` to global memory, `.mmio`) and invalid type/operation pairs decode to `Unsupported`.
pub(super) fn decode_async_store(
    opcode: &str,
    base: &str,
    mods: &[&str],
    types: &[PtxType],
) -> Kind {
    use PtxType::*;
    let unsupported = || Kind::Unsupported(opcode.to_string());
    let sm100 = ["release", "mmio", "global", "gpu", "sys"]
        .iter()
        .any(|m| has(mods, m));
    let mbar = has(mods, "mbarrier::complete_tx::bytes");
    let generic = !has(mods, "shared::cluster");
    let vecw = if has(mods, "v4") {
        4
    } else if has(mods, "v2") {
        2
    } else {
        1
    };
    let [ty] = types[..] else {
        return unsupported();
    };
    if sm100 || (base == "st" && !mbar) {
        return unsupported();
    }
    if base == "st" {
        let ok = matches!(ty, B32 | B64 | U32 | U64 | S32 | S64 | F32 | F64)
            && (vecw != 4 || ty.size() == 4);
        return if ok {
            Kind::AsyncStore {
                op: None,
                ty,
                vecw,
                generic,
            }
        } else {
            unsupported()
        };
    }
    match reduce_op(mods) {
        // `.add.s64` is the same bits as `.add.u64`; the ISA's table omits it but ptxas 13.5 accepts it.
        Some(op)
            if vecw == 1 && (reduce_type_ok(op, ty, true) || (op == AtomOp::Add && ty == S64)) =>
        {
            Kind::AsyncStore {
                op: Some(op),
                ty,
                vecw,
                generic,
            }
        }
        _ => unsupported(),
    }
}

/// `cp.reduce.async.bulk(.tensor)` (PTX ISA §9.7.8.24.7, §9.7.8.24.10): the global `.bulk_group` and the
/// shared::cluster `.mbarrier::complete_tx::bytes` forms with the ISA's operation/type table (f16/bf16
/// add only with `.noftz`), and the tensor form in tile mode. Others (im2col) decode to `Unsupported`.
pub(super) fn decode_bulk_reduce(opcode: &str, mods: &[&str], types: &[PtxType]) -> Kind {
    let unsupported = || Kind::Unsupported(opcode.to_string());
    let Some(op) = reduce_op(mods) else {
        return unsupported();
    };
    let dst = mods
        .iter()
        .find(|m| m.starts_with("shared") || **m == "global")
        .copied();
    let src_cta = has(mods, "shared::cta") || has(mods, "shared");
    if mods.iter().any(|m| m.starts_with("tensor")) {
        let rank = mods
            .iter()
            .find_map(|m| m.strip_suffix('d').and_then(|d| d.parse::<u8>().ok()))
            .filter(|r| (1..=5).contains(r));
        let tiled = !mods.iter().any(|m| m.starts_with("im2col"));
        return match rank {
            Some(rank) if tiled && dst == Some("global") && has(mods, "bulk_group") => {
                Kind::BulkReduceTensor { rank, op }
            }
            _ => unsupported(),
        };
    }
    let [ty] = types[..] else {
        return unsupported();
    };
    let half = matches!(ty, PtxType::F16 | PtxType::BF16);
    match dst {
        Some("global") if src_cta && has(mods, "bulk_group") => {
            let ok = reduce_type_ok(op, ty, false)
                && !(half && op == AtomOp::Add && !has(mods, "noftz"));
            if ok {
                Kind::BulkReduce {
                    op,
                    ty,
                    cluster: false,
                }
            } else {
                unsupported()
            }
        }
        Some("shared::cluster")
            if src_cta
                && has(mods, "mbarrier::complete_tx::bytes")
                && reduce_type_ok(op, ty, true) =>
        {
            Kind::BulkReduce {
                op,
                ty,
                cluster: true,
            }
        }
        _ => unsupported(),
    }
}
