//! Decoding of the tensor-map edits of sm_90a (PTX ISA §9.7.8.25 `tensormap.replace`, §9.7.12.15.18
//! `tensormap.cp_fenceproxy`): what CUTLASS's grouped and pointer-array GEMMs, Triton's device-side
//! descriptors and TransformerEngine use to retarget a map in device memory.

use super::{Kind, Space};

/// The field a `tensormap.replace` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TmField {
    GlobalAddress,
    /// The rank minus one.
    Rank,
    BoxDim,
    GlobalDim,
    /// Bytes between elements of dimension `ord + 1`.
    GlobalStride,
    ElementStride,
    ElemType,
    InterleaveLayout,
    SwizzleMode,
    FillMode,
}

/// The kind of `tensormap.replace.tile.FIELD{.global,.shared::cta}.b1024.{b32,b64}` and of
/// `tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.*.sync.aligned`.
pub(crate) fn decode(opcode: &str, mods: &[&str], space: Space) -> Kind {
    let unsupported = || Kind::Unsupported(opcode.to_string());
    if mods.first() == Some(&"cp_fenceproxy") {
        return if mods.contains(&"global") && mods.contains(&"shared::cta") {
            Kind::TensormapCopy
        } else {
            unsupported()
        };
    }
    if mods.first() != Some(&"replace") || !mods.contains(&"tile") || !mods.contains(&"b1024") {
        return unsupported();
    }
    let field = mods.iter().find_map(|m| {
        Some(match *m {
            "global_address" => TmField::GlobalAddress,
            "rank" => TmField::Rank,
            "box_dim" => TmField::BoxDim,
            "global_dim" => TmField::GlobalDim,
            "global_stride" => TmField::GlobalStride,
            "element_stride" => TmField::ElementStride,
            "elemtype" => TmField::ElemType,
            "interleave_layout" => TmField::InterleaveLayout,
            "swizzle_mode" => TmField::SwizzleMode,
            "fill_mode" => TmField::FillMode,
            _ => return None,
        })
    });
    match field {
        Some(f) => Kind::TensormapReplace(f, space),
        None => unsupported(),
    }
}

/// Whether field `f` takes an `ord` operand (the dimension) before its value.
pub(crate) fn has_ord(f: TmField) -> bool {
    matches!(
        f,
        TmField::BoxDim | TmField::GlobalDim | TmField::GlobalStride | TmField::ElementStride
    )
}
