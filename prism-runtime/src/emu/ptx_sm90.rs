//! The warp- and warpgroup-level tensor-core instruction forms: `wmma` (PTX §9.7.14.4) and `wgmma`
//! (§9.7.15), decoded from an instruction's modifiers and types.

use super::{Kind, PtxType, Space};

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

/// `wmma.{load,store,mma}.*`; an unsupported shape or type decodes to `Kind::Unsupported`.
pub(super) fn decode_wmma(opcode: &str, mods: &[&str], types: &[PtxType], space: Space) -> Kind {
    let has = |m: &str| has(mods, m);
    let shape = mods.iter().find_map(|m| {
        let r = m.strip_prefix('m')?;
        let (mm, r) = r.split_once('n')?;
        let (nn, kk) = r.split_once('k')?;
        Some((
            mm.parse::<u8>().ok()?,
            nn.parse::<u8>().ok()?,
            kk.parse::<u8>().ok()?,
        ))
    });
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
    let shape_ok = |s: (u8, u8, u8), t: PtxType| match t {
        PtxType::TF32 => s == (16, 16, 8),
        _ => matches!(s, (16, 16, 16) | (32, 8, 16) | (8, 32, 16)),
    };
    let float = |t: &PtxType| {
        matches!(
            t,
            PtxType::F16 | PtxType::BF16 | PtxType::TF32 | PtxType::F32
        )
    };
    let op = match (has("mma"), shape, types) {
        (true, Some(sh), [d, c])
            if matches!(d, PtxType::F16 | PtxType::F32)
                && matches!(c, PtxType::F16 | PtxType::F32)
                && shape_ok(sh, PtxType::F16) =>
        {
            Some(WmmaOp {
                mma: true,
                store: false,
                frag: WmmaFrag::D,
                m: sh.0,
                n: sh.1,
                k: sh.2,
                row: true,
                ty: PtxType::F16,
                dtype: *d,
                ctype: *c,
                space,
            })
        }
        (true, Some(sh), [d, a, b2, c])
            if a == b2
                && matches!(a, PtxType::BF16 | PtxType::TF32 | PtxType::F16)
                && *d == PtxType::F32
                && *c == PtxType::F32
                && shape_ok(sh, *a) =>
        {
            Some(WmmaOp {
                mma: true,
                store: false,
                frag: WmmaFrag::D,
                m: sh.0,
                n: sh.1,
                k: sh.2,
                row: true,
                ty: *a,
                dtype: *d,
                ctype: *c,
                space,
            })
        }
        (false, Some(sh), [t]) if (has("load") || has("store")) && float(t) && frag.is_some() => {
            let frag = frag.unwrap_or(WmmaFrag::A);
            let ok = if matches!(frag, WmmaFrag::A | WmmaFrag::B) {
                shape_ok(sh, *t)
            } else {
                shape_ok(sh, PtxType::F16) || shape_ok(sh, PtxType::TF32)
            };
            ok.then_some(WmmaOp {
                mma: false,
                store: has("store"),
                frag,
                m: sh.0,
                n: sh.1,
                k: sh.2,
                row: has("row"),
                ty: *t,
                dtype: *t,
                ctype: *t,
                space,
            })
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
