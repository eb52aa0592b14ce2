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

/// Shape and types of a `wgmma.mma_async`: M = 64, K = 16 (16-bit inputs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WgmmaShape {
    /// N: a multiple of 8 in 8..=256.
    pub n: u16,
    /// Accumulator type: `F32` or `F16`.
    pub dtype: PtxType,
    /// Input type: `BF16` or `F16`.
    pub itype: PtxType,
    /// A comes from four registers per thread rather than a shared-memory descriptor.
    pub a_regs: bool,
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

/// `wgmma.{fence,commit_group,wait_group,mma_async}.*`; `a_regs`: A is a register list.
pub(super) fn decode_wgmma(opcode: &str, mods: &[&str], types: &[PtxType], a_regs: bool) -> Kind {
    let has = |m: &str| has(mods, m);
    if has("fence") {
        Kind::Wgmma(WgmmaOp::Fence)
    } else if has("commit_group") {
        Kind::Wgmma(WgmmaOp::Commit)
    } else if has("wait_group") {
        Kind::Wgmma(WgmmaOp::Wait)
    } else if has("mma_async") {
        let n = mods
            .iter()
            .find_map(|m| m.strip_prefix("m64n").and_then(|r| r.strip_suffix("k16")))
            .and_then(|n| n.parse::<u16>().ok())
            .filter(|n| n % 8 == 0 && (8..=256).contains(n));
        match (n, types) {
            (Some(n), [d, a, b])
                if a == b
                    && matches!(a, PtxType::BF16 | PtxType::F16)
                    && (*d == PtxType::F32 || (*d == PtxType::F16 && *a == PtxType::F16))
                    && !has("sp") =>
            {
                Kind::Wgmma(WgmmaOp::Mma(WgmmaShape {
                    n,
                    dtype: *d,
                    itype: *a,
                    a_regs,
                }))
            }
            _ => Kind::Unsupported(opcode.to_string()),
        }
    } else {
        Kind::Unsupported(opcode.to_string())
    }
}
