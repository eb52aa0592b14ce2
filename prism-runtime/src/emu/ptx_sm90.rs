//! The warp- and warpgroup-level tensor-core instruction forms: `wmma` (PTX §9.7.14.4) and `wgmma`
//! (§9.7.15), decoded from an instruction's modifiers and types.

use super::{Kind, MmaKind, PtxType, Space};

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
/// another form. Integer: m8n8k16, m16n8k16, m16n8k32 with s8/u8 A and B in any mix and s32 C/D,
/// `.satfinite` optional; f64: m8n8k4 (sm_80) and m16n8k4/k8/k16 (sm_90), `.rn` the only rounding (PTX ISA,
/// Warp-level matrix instructions: `mma`). All need `.row.col`, the only layout these shapes accept.
pub(super) fn mma_int_f64(shape: &str, mods: &[&str], types: &[PtxType]) -> Option<MmaKind> {
    if !has(mods, "row") || !has(mods, "col") {
        return None;
    }
    let int8 = |t: PtxType| matches!(t, PtxType::S8 | PtxType::U8);
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
