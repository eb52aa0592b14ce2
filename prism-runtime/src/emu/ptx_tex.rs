//! Decoding of the texture and surface instructions in unified mode (PTX ISA §9.7.9 `tex`, `txq`; §9.7.10
//! `suld`, `sust`, `suq`): the object is a `.u64` handle operand (`cudaTextureObject_t`), not a module
//! `.texref`. What the emulator does not model decodes to `Unsupported` (layered, cube and multisample
//! geometries, formatted surface stores `sust.p`, `sured`, queries of formats).

use super::{Kind, PtxType};

/// What a surface access does outside the surface (§9.7.10: `.trap`, `.clamp`, `.zero`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SurfOob {
    Trap,
    Clamp,
    Zero,
}

/// A `tex` instruction: geometry, result and coordinate types, and the operands after the address
/// (`.level`'s level of detail, `.grad`'s two gradients), which a texture without mipmaps ignores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TexOp {
    pub dims: u8,
    /// `.f32` results (else `.s32` / `.u32`: the integer texel).
    pub float_result: bool,
    /// `.f32` coordinates (else `.s32`: texel indices).
    pub float_coords: bool,
    /// `tld4.{r,g,b,a}`: the component (0..=3) gathered from the four texels of the bilinear footprint.
    pub gather: Option<u8>,
}

/// A `suld.b` / `sust.b` instruction: geometry, vector width, element bits, out-of-range mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SurfOp {
    pub load: bool,
    pub dims: u8,
    pub vec: u8,
    pub bits: u8,
    pub oob: SurfOob,
}

/// What `txq` / `suq` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TexQuery {
    Width,
    Height,
    Depth,
    NormalizedCoords,
    FilterMode,
    AddrMode(u8),
}

fn geometry(mods: &[&str]) -> Option<u8> {
    mods.iter().find_map(|m| match *m {
        "1d" => Some(1),
        "2d" => Some(2),
        "3d" => Some(3),
        _ => None,
    })
}

/// The kind of `tex`, `suld`, `sust`, `txq`, `suq` with modifiers `mods` and types `types`.
pub(crate) fn decode(opcode: &str, base: &str, mods: &[&str], types: &[PtxType]) -> Kind {
    let unsupported = || Kind::Unsupported(opcode.to_string());
    let layered = ["a1d", "a2d", "cube", "acube", "2dms", "a2dms"];
    if mods.iter().any(|m| layered.contains(m)) {
        return unsupported();
    }
    match base {
        "tex" => {
            let (Some(dims), [d, c]) = (geometry(mods), types) else {
                return unsupported();
            };
            if !mods.contains(&"v4") || !matches!(c, PtxType::F32 | PtxType::S32) {
                return unsupported();
            }
            let float_result = match d {
                PtxType::F32 => true,
                PtxType::S32 | PtxType::U32 => false,
                _ => return unsupported(),
            };
            Kind::Tex(TexOp {
                dims,
                float_result,
                float_coords: *c == PtxType::F32,
                gather: None,
            })
        }
        // tld4.{r,g,b,a}.2d.v4.{f32,s32,u32}.f32 (§9.7.9.4).
        "tld4" => {
            let comp = ["r", "g", "b", "a"].iter().position(|c| mods.contains(c));
            let float_result = match types {
                [PtxType::F32, PtxType::F32] => true,
                [PtxType::S32 | PtxType::U32, PtxType::F32] => false,
                _ => return unsupported(),
            };
            match (comp, geometry(mods)) {
                (Some(c), Some(2)) if mods.contains(&"v4") => Kind::Tex(TexOp {
                    dims: 2,
                    float_result,
                    float_coords: true,
                    gather: Some(c as u8),
                }),
                _ => unsupported(),
            }
        }
        "suld" | "sust" => {
            let Some(dims) = geometry(mods) else {
                return unsupported();
            };
            // Only the raw `.b` forms; `sust.p` converts to the surface's format.
            if !mods.contains(&"b") {
                return unsupported();
            }
            let bits = match types {
                [PtxType::B8] => 8,
                [PtxType::B16] => 16,
                [PtxType::B32] => 32,
                [PtxType::B64] => 64,
                _ => return unsupported(),
            };
            let vec = if mods.contains(&"v4") {
                4
            } else if mods.contains(&"v2") {
                2
            } else {
                1
            };
            if vec == 4 && bits == 64 {
                return unsupported();
            }
            let oob = if mods.contains(&"clamp") {
                SurfOob::Clamp
            } else if mods.contains(&"zero") {
                SurfOob::Zero
            } else {
                SurfOob::Trap
            };
            Kind::Surf(SurfOp {
                load: base == "suld",
                dims,
                vec,
                bits,
                oob,
            })
        }
        "txq" | "suq" => {
            let q = mods.iter().find_map(|m| {
                Some(match *m {
                    "width" => TexQuery::Width,
                    "height" => TexQuery::Height,
                    "depth" => TexQuery::Depth,
                    "normalized_coords" if base == "txq" => TexQuery::NormalizedCoords,
                    "filter_mode" if base == "txq" => TexQuery::FilterMode,
                    "addr_mode_0" if base == "txq" => TexQuery::AddrMode(0),
                    "addr_mode_1" if base == "txq" => TexQuery::AddrMode(1),
                    "addr_mode_2" if base == "txq" => TexQuery::AddrMode(2),
                    _ => return None,
                })
            });
            match q {
                Some(q) if !mods.contains(&"level") => Kind::Txq(q, base == "suq"),
                _ => unsupported(),
            }
        }
        _ => unsupported(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(op: &str) -> Kind {
        let parts: Vec<&str> = op.split('.').collect();
        let types: Vec<PtxType> = parts[1..]
            .iter()
            .filter_map(|m| PtxType::from_name(m))
            .collect();
        decode(op, parts[0], &parts[1..], &types)
    }

    #[test]
    fn forms() {
        assert_eq!(
            kind("tex.2d.v4.f32.f32"),
            Kind::Tex(TexOp {
                dims: 2,
                float_result: true,
                float_coords: true,
                gather: None
            })
        );
        assert!(matches!(
            kind("tld4.b.2d.v4.s32.f32"),
            Kind::Tex(TexOp {
                gather: Some(2),
                float_result: false,
                ..
            })
        ));
        assert!(matches!(
            kind("tex.1d.v4.s32.s32"),
            Kind::Tex(TexOp {
                dims: 1,
                float_result: false,
                float_coords: false,
                gather: None
            })
        ));
        assert!(matches!(kind("tex.level.3d.v4.u32.f32"), Kind::Tex(_)));
        assert!(matches!(
            kind("suld.b.2d.v4.b32.trap"),
            Kind::Surf(SurfOp {
                load: true,
                dims: 2,
                vec: 4,
                bits: 32,
                oob: SurfOob::Trap
            })
        ));
        assert!(matches!(
            kind("sust.b.3d.b8.zero"),
            Kind::Surf(SurfOp { load: false, .. })
        ));
        assert_eq!(kind("txq.width.b32"), Kind::Txq(TexQuery::Width, false));
        assert_eq!(kind("suq.depth.b32"), Kind::Txq(TexQuery::Depth, true));
        for op in [
            "tex.a2d.v4.f32.f32",
            "tex.cube.v4.f32.f32",
            "tex.2d.v2.f16x2.f32",
            "sust.p.2d.v4.b32.trap",
            "suld.b.2d.v4.b64.trap",
            "txq.channel_order.b32",
            "suq.filter_mode.b32",
            "tld4.r.cube.v4.f32.f32",
        ] {
            assert!(matches!(kind(op), Kind::Unsupported(_)), "{op}");
        }
    }
}
