//! Tensor maps (`CUtensorMap`): what a TMA copy (`cp.async.bulk.tensor`) reads to find a box of a tensor in
//! global memory. On a GPU the driver's `cuTensorMapEncodeTiled` writes an undocumented 128-byte encoding;
//! on the emulator [`TensorMap::encode`] writes this project's own, documented below and in
//! docs/EMULATOR.md, and the emulator decodes it when a kernel copies through the map. The validation is
//! the driver's documented one (CUDA Driver API, `cuTensorMapEncodeTiled`), so a map the emulator accepts is
//! one the driver accepts.
//!
//! Encoding (little-endian, 128 bytes, the rest zero):
//!
//! | offset | field |
//! |---|---|
//! | 0 | u32 magic `0x50414D54` ("TMAP") |
//! | 4 | u8 version (1) |
//! | 5 | u8 data type ([`TensorDataType`], the driver's numbering) |
//! | 6 | u8 rank (1..=5) |
//! | 7 | u8 interleave (0: none; the only one supported) |
//! | 8 | u64 global address |
//! | 16 | u64 × 5 global dims (elements, dim 0 innermost) |
//! | 56 | u64 × 4 global strides (bytes, of dims 1..rank) |
//! | 88 | u16 × 5 box dims |
//! | 98 | u8 × 5 element strides |
//! | 103 | u8 swizzle ([`TensorSwizzle`], the driver's numbering) |
//! | 104 | u8 L2 promotion ([`TensorL2Promotion`], the driver's numbering; the emulator has no L2 and only keeps it) |
//! | 105 | u8 out-of-bounds fill (0: zeros, 1: NaN) |
//!
//! ```
//! use prism_runtime::emu::{TensorDataType, TensorMap, TensorSwizzle};
//! // 256 rows of 512 bf16, boxes of 64 × 128 (128-byte rows: 128B swizzle)
//! let m = TensorMap::tiled(TensorDataType::Bf16, 0x1000, &[512, 256], &[1024], &[64, 128], TensorSwizzle::B128)?;
//! assert_eq!(m.box_bytes(), 64 * 128 * 2);
//! assert_eq!(TensorMap::decode(&m.encode())?, m);
//! # Ok::<(), prism_runtime::emu::TensorMapError>(())
//! ```

use std::fmt;

pub(crate) const MAGIC: u32 = 0x5041_4D54;

/// Element type of a tensor map (`CUtensorMapDataType`, same numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorDataType {
    /// `UINT8`
    U8 = 0,
    /// `UINT16`
    U16 = 1,
    /// `UINT32`
    U32 = 2,
    /// `INT32`
    I32 = 3,
    /// `UINT64`
    U64 = 4,
    /// `INT64`
    I64 = 5,
    /// `FLOAT16`
    F16 = 6,
    /// `FLOAT32`
    F32 = 7,
    /// `FLOAT64`
    F64 = 8,
    /// `BFLOAT16`
    Bf16 = 9,
    /// `FLOAT32_FTZ`
    F32Ftz = 10,
    /// `TFLOAT32`
    Tf32 = 11,
    /// `TFLOAT32_FTZ`
    Tf32Ftz = 12,
}

impl TensorDataType {
    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            TensorDataType::U8 => 1,
            TensorDataType::U16 | TensorDataType::F16 | TensorDataType::Bf16 => 2,
            TensorDataType::U64 | TensorDataType::I64 | TensorDataType::F64 => 8,
            _ => 4,
        }
    }

    fn from_code(c: u8) -> Option<TensorDataType> {
        use TensorDataType::*;
        Some(match c {
            0 => U8,
            1 => U16,
            2 => U32,
            3 => I32,
            4 => U64,
            5 => I64,
            6 => F16,
            7 => F32,
            8 => F64,
            9 => Bf16,
            10 => F32Ftz,
            11 => Tf32,
            12 => Tf32Ftz,
            _ => return None,
        })
    }

    /// Whether out-of-bounds elements may be filled with NaN (floating-point types).
    fn is_float(self) -> bool {
        !matches!(
            self,
            TensorDataType::U8
                | TensorDataType::U16
                | TensorDataType::U32
                | TensorDataType::I32
                | TensorDataType::U64
                | TensorDataType::I64
        )
    }
}

/// Shared-memory swizzle of a tensor map (`CUtensorMapSwizzle`, same numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorSwizzle {
    /// No swizzle.
    None = 0,
    /// 32-byte span.
    B32 = 1,
    /// 64-byte span.
    B64 = 2,
    /// 128-byte span.
    B128 = 3,
}

impl TensorSwizzle {
    /// The swizzle span in bytes (0 for none).
    pub fn span(self) -> u64 {
        match self {
            TensorSwizzle::None => 0,
            TensorSwizzle::B32 => 32,
            TensorSwizzle::B64 => 64,
            TensorSwizzle::B128 => 128,
        }
    }

    /// The same swizzle as a wgmma descriptor's layout code (0 none, 1 128B, 2 64B, 3 32B).
    pub fn descriptor_code(self) -> u64 {
        match self {
            TensorSwizzle::None => 0,
            TensorSwizzle::B128 => 1,
            TensorSwizzle::B64 => 2,
            TensorSwizzle::B32 => 3,
        }
    }

    fn from_code(c: u8) -> Option<TensorSwizzle> {
        Some(match c {
            0 => TensorSwizzle::None,
            1 => TensorSwizzle::B32,
            2 => TensorSwizzle::B64,
            3 => TensorSwizzle::B128,
            _ => return None,
        })
    }

    /// Parses `none`, `32`, `64`, `128` (the CLI's spelling).
    pub fn parse(s: &str) -> Option<TensorSwizzle> {
        Some(match s {
            "none" | "0" => TensorSwizzle::None,
            "32" | "32B" => TensorSwizzle::B32,
            "64" | "64B" => TensorSwizzle::B64,
            "128" | "128B" => TensorSwizzle::B128,
            _ => return None,
        })
    }
}

/// How many bytes L2 fetches from DRAM at once for misses of copies through the map
/// (`CUtensorMapL2promotion`, same numbering). Wider fetches bring in the neighbours of a box's rows, which
/// the next k-step of a GEMM reads (DeepGEMM's maps ask for 256 bytes). A hint for the GPU's L2: the emulator
/// keeps it and ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TensorL2Promotion {
    /// No promotion (the default).
    #[default]
    None = 0,
    /// 64-byte fetches.
    B64 = 1,
    /// 128-byte fetches.
    B128 = 2,
    /// 256-byte fetches.
    B256 = 3,
}

impl TensorL2Promotion {
    fn from_code(c: u8) -> Option<TensorL2Promotion> {
        Some(match c {
            0 => TensorL2Promotion::None,
            1 => TensorL2Promotion::B64,
            2 => TensorL2Promotion::B128,
            3 => TensorL2Promotion::B256,
            _ => return None,
        })
    }
}

/// A tiled tensor map: a tensor of `rank` dimensions in global memory and the box a copy moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMap {
    /// Element type.
    pub data_type: TensorDataType,
    /// Address of element (0, .., 0) in global memory (16-byte aligned).
    pub global_address: u64,
    /// Elements per dimension, dimension 0 innermost (contiguous).
    pub dims: Vec<u64>,
    /// Byte strides of dimensions 1..rank (rank − 1 entries, multiples of 16).
    pub strides: Vec<u64>,
    /// Box extent per dimension (1..=256).
    pub box_dims: Vec<u32>,
    /// Traversal step per dimension (1..=8; the box loads ceil(box / step) elements along a dimension).
    pub element_strides: Vec<u32>,
    /// Shared-memory swizzle.
    pub swizzle: TensorSwizzle,
    /// Out-of-bounds elements read as NaN (floating-point types) instead of zero.
    pub oob_nan: bool,
    /// L2 fetch size for the copies' misses (a hint; no effect on the emulator).
    pub l2_promotion: TensorL2Promotion,
}

/// Why a tensor map was refused: the rule of `cuTensorMapEncodeTiled` it breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMapError(pub String);

impl fmt::Display for TensorMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad tensor map: {}", self.0)
    }
}

impl std::error::Error for TensorMapError {}

fn bad<T>(msg: impl Into<String>) -> Result<T, TensorMapError> {
    Err(TensorMapError(msg.into()))
}

impl TensorMap {
    /// A tiled map with element strides 1 and zero out-of-bounds fill, validated.
    pub fn tiled(
        data_type: TensorDataType,
        global_address: u64,
        dims: &[u64],
        strides: &[u64],
        box_dims: &[u32],
        swizzle: TensorSwizzle,
    ) -> Result<TensorMap, TensorMapError> {
        let m = TensorMap {
            data_type,
            global_address,
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            box_dims: box_dims.to_vec(),
            element_strides: vec![1; box_dims.len()],
            swizzle,
            oob_nan: false,
            l2_promotion: TensorL2Promotion::None,
        };
        m.validate()?;
        Ok(m)
    }

    /// The tensor's rank.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Elements the box holds along dimension `i`: ceil(box / element stride).
    pub fn box_elems(&self, i: usize) -> u64 {
        let s = self.element_strides.get(i).copied().unwrap_or(1).max(1) as u64;
        (self.box_dims[i] as u64).div_ceil(s)
    }

    /// Bytes one copy of the box moves (what `complete_tx` counts, out-of-bounds elements included).
    pub fn box_bytes(&self) -> u64 {
        (0..self.rank()).map(|i| self.box_elems(i)).product::<u64>() * self.data_type.size()
    }

    /// Bytes from the global address to the end of the last element of the tensor:
    /// `dims[0]·size + Σ (dims[i] − 1)·strides[i − 1]`. A map whose tensor lies inside one allocation (this
    /// many bytes from the global address) never makes a copy touch memory outside it: box elements outside
    /// the tensor are filled on loads and skipped on stores.
    pub fn extent_bytes(&self) -> u128 {
        let inner = self.dims.first().copied().unwrap_or(0) as u128 * self.data_type.size() as u128;
        self.dims
            .iter()
            .skip(1)
            .zip(&self.strides)
            .fold(inner, |acc, (&d, &s)| {
                acc + (d.max(1) as u128 - 1) * s as u128
            })
    }

    /// Checks the driver's documented constraints (CUDA Driver API, `cuTensorMapEncodeTiled`).
    pub fn validate(&self) -> Result<(), TensorMapError> {
        let r = self.rank();
        let es = self.data_type.size();
        if !(1..=5).contains(&r) {
            return bad(format!("rank {r}: must be 1 to 5"));
        }
        if self.strides.len() != r - 1 {
            return bad(format!(
                "{} strides for rank {r}: give the byte strides of dimensions 1..{r} ({} values)",
                self.strides.len(),
                r - 1
            ));
        }
        if self.box_dims.len() != r || self.element_strides.len() != r {
            return bad(format!(
                "{} box dims and {} element strides for rank {r}",
                self.box_dims.len(),
                self.element_strides.len()
            ));
        }
        if !self.global_address.is_multiple_of(16) {
            return bad(format!(
                "global address {:#x} is not 16-byte aligned",
                self.global_address
            ));
        }
        for (i, &d) in self.dims.iter().enumerate() {
            if d == 0 || d > 1 << 32 {
                return bad(format!("dim {i} = {d}: must be 1 to 2^32"));
            }
        }
        let mut extent = self.dims[0] * es;
        for (i, &s) in self.strides.iter().enumerate() {
            if s % 16 != 0 || s >= 1 << 40 {
                return bad(format!(
                    "stride of dim {} = {s} bytes: must be a multiple of 16 below 2^40",
                    i + 1
                ));
            }
            // A dimension of one element is never stepped along: its stride is free (CUTLASS passes 0 for
            // the batch mode of every unbatched sm90 GEMM, e.g. example 48, and the driver takes it), and the
            // dimensions inside it span what they spanned.
            if self.dims[i + 1] == 1 {
                continue;
            }
            if s < extent {
                return bad(format!(
                    "stride of dim {} = {s} bytes is smaller than the {extent} bytes of the dimensions inside it",
                    i + 1
                ));
            }
            // Saturating: garbage from `decode` must give an error, not an overflow.
            extent = s.saturating_mul(self.dims[i + 1]);
        }
        for (i, &b) in self.box_dims.iter().enumerate() {
            if !(1..=256).contains(&b) {
                return bad(format!("box dim {i} = {b}: must be 1 to 256"));
            }
        }
        for (i, &e) in self.element_strides.iter().enumerate() {
            if !(1..=8).contains(&e) {
                return bad(format!("element stride {i} = {e}: must be 1 to 8"));
            }
        }
        let inner = self.box_dims[0] as u64 * es;
        if !inner.is_multiple_of(16) {
            return bad(format!(
                "the box's inner extent is {inner} bytes: must be a multiple of 16"
            ));
        }
        let span = self.swizzle.span();
        if span > 0 && inner > span {
            return bad(format!(
                "the box's inner extent ({inner} bytes) exceeds the {span}-byte swizzle span"
            ));
        }
        if self.oob_nan && !self.data_type.is_float() {
            return bad("NaN out-of-bounds fill needs a floating-point data type");
        }
        Ok(())
    }

    /// The 128-byte encoding the emulator reads (module docs).
    pub fn encode(&self) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4] = 1;
        b[5] = self.data_type as u8;
        b[6] = self.rank() as u8;
        b[8..16].copy_from_slice(&self.global_address.to_le_bytes());
        for (i, d) in self.dims.iter().enumerate().take(5) {
            b[16 + 8 * i..24 + 8 * i].copy_from_slice(&d.to_le_bytes());
        }
        for (i, s) in self.strides.iter().enumerate().take(4) {
            b[56 + 8 * i..64 + 8 * i].copy_from_slice(&s.to_le_bytes());
        }
        for (i, x) in self.box_dims.iter().enumerate().take(5) {
            b[88 + 2 * i..90 + 2 * i].copy_from_slice(&(*x as u16).to_le_bytes());
        }
        for (i, e) in self.element_strides.iter().enumerate().take(5) {
            b[98 + i] = *e as u8;
        }
        b[103] = self.swizzle as u8;
        b[104] = self.l2_promotion as u8;
        b[105] = self.oob_nan as u8;
        b
    }

    /// Reads an encoding written by [`TensorMap::encode`] and validates it.
    pub fn decode(b: &[u8]) -> Result<TensorMap, TensorMapError> {
        if b.len() < 128 {
            return bad(format!("{} bytes: a tensor map has 128", b.len()));
        }
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
        if u32::from_le_bytes([b[0], b[1], b[2], b[3]]) != MAGIC || b[4] != 1 {
            return bad(
                "not a tensor map made by the emulator's encoder (a map from cuTensorMapEncodeTiled, or uninitialised bytes?)",
            );
        }
        let data_type = TensorDataType::from_code(b[5])
            .ok_or_else(|| TensorMapError(format!("unknown data type {}", b[5])))?;
        let rank = b[6] as usize;
        if !(1..=5).contains(&rank) {
            return bad(format!("rank {rank}: must be 1 to 5"));
        }
        if b[7] != 0 {
            return bad("interleaved layouts are not supported");
        }
        let swizzle = TensorSwizzle::from_code(b[103])
            .ok_or_else(|| TensorMapError(format!("unknown swizzle {}", b[103])))?;
        let l2_promotion = TensorL2Promotion::from_code(b[104])
            .ok_or_else(|| TensorMapError(format!("unknown L2 promotion {}", b[104])))?;
        let m = TensorMap {
            data_type,
            global_address: u64_at(8),
            dims: (0..rank).map(|i| u64_at(16 + 8 * i)).collect(),
            strides: (0..rank - 1).map(|i| u64_at(56 + 8 * i)).collect(),
            box_dims: (0..rank)
                .map(|i| u16::from_le_bytes([b[88 + 2 * i], b[89 + 2 * i]]) as u32)
                .collect(),
            element_strides: (0..rank).map(|i| b[98 + i] as u32).collect(),
            swizzle,
            oob_nan: b[105] != 0,
            l2_promotion,
        };
        m.validate()?;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_map(dims: &[u64], strides: &[u64], boxd: &[u32]) -> Result<TensorMap, TensorMapError> {
        TensorMap::tiled(
            TensorDataType::F32,
            0x1000,
            dims,
            strides,
            boxd,
            TensorSwizzle::None,
        )
    }

    /// CUTLASS's sm90 GEMMs (example 48) describe an unbatched operand as (K, M, 1) with batch stride 0.
    #[test]
    fn a_size_one_dimension_takes_any_stride() {
        let m = f32_map(&[256, 512, 1], &[1024, 0], &[32, 64, 1]).unwrap();
        assert_eq!(TensorMap::decode(&m.encode()).unwrap(), m);
        assert_eq!(m.extent_bytes(), 512 * 1024);
        // Any multiple of 16, also one below the inner extent.
        f32_map(&[256, 512, 1], &[1024, 512], &[32, 64, 1]).unwrap();
        // Still a multiple of 16.
        let e = f32_map(&[256, 512, 1], &[1024, 8], &[32, 64, 1]).unwrap_err();
        assert!(e.0.contains("multiple of 16"), "{e}");
    }

    /// A dimension of more than one element must still clear the dimensions inside it, and a size-one
    /// dimension between does not shrink what they span.
    #[test]
    fn a_stepped_dimension_still_clears_the_inner_ones() {
        let e = f32_map(&[256, 2], &[0], &[32, 1]).unwrap_err();
        assert!(e.0.contains("smaller than the 1024 bytes"), "{e}");
        f32_map(&[32, 1, 8], &[0, 128], &[32, 1, 1]).unwrap();
        let e = f32_map(&[32, 1, 8], &[0, 64], &[32, 1, 1]).unwrap_err();
        assert!(
            e.0.contains("stride of dim 2 = 64 bytes is smaller than the 128"),
            "{e}"
        );
    }
}
