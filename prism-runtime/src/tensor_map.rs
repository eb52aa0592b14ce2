//! Host-side TMA tensor maps: [`TensorMap`] describes a tensor in a [`DeviceBuffer`] and the box one
//! `cp.async.bulk.tensor` moves, validated when it is made, and becomes a kernel argument with
//! [`TensorMap::as_arg`].
//!
//! The rules are `cuTensorMapEncodeTiled`'s (checked once, by [`emu::TensorMap::validate`], for both
//! backends) plus one of ours: the whole tensor lies inside the buffer, so that no TMA copy through the map
//! can touch memory outside it (box elements outside the tensor are zero-filled on loads and skipped on
//! stores). That makes a map from safe code as safe to pass as the buffer itself. On the GPU the 128 bytes
//! come from the driver's `cuTensorMapEncodeTiled`; on the emulator from [`emu::TensorMap::encode`].

use std::fmt;

use crate::arg::{data_type, DeviceCopy, KernelArg, TensorMapBytes, TensorMapHandle};
use crate::device::DeviceBuffer;
use crate::emu::{self, TensorL2Promotion, TensorSwizzle};
use crate::error::RuntimeError;

/// A tiled TMA tensor map over a [`DeviceBuffer<T>`]: a `RANK`-dimensional tensor (dimension 0 innermost
/// and contiguous, like CUDA) and the box a `cp.async.bulk.tensor.{RANK}d` copy moves into or out of shared
/// memory, with a shared-memory swizzle. Borrows the buffer for `'a`, so the buffer outlives every launch
/// that uses the map; launching it on another device than the buffer's is refused
/// ([`RuntimeError::BadArgs`]).
///
/// Pass it to a kernel parameter of type `TensorMap<T, RANK>` (PTX `.param .align 64 .b8 name[128]`) with
/// [`TensorMap::as_arg`].
///
/// ```
/// use prism_runtime::{Device, TensorMap, TensorSwizzle};
/// let dev = Device::emulator();
/// let a = dev.alloc_zeros::<half::bf16>(128 * 256)?; // 128 rows of 256 bf16
/// // boxes of 64 rows × 64 columns: 128-byte box rows, the 128-byte swizzle wgmma reads
/// let map = TensorMap::row_major_2d(&a, 128, 256, 64, 64, TensorSwizzle::B128)?;
/// assert_eq!(map.box_bytes(), 64 * 64 * 2);
/// // the box row is wider than the 32-byte swizzle span: refused
/// assert!(TensorMap::row_major_2d(&a, 128, 256, 64, 64, TensorSwizzle::B32).is_err());
/// # Ok::<(), prism_runtime::RuntimeError>(())
/// ```
pub struct TensorMap<'a, T: DeviceCopy, const RANK: usize> {
    buf: &'a DeviceBuffer<T>,
    desc: emu::TensorMap,
    bytes: TensorMapBytes,
}

impl<'a, T: DeviceCopy, const RANK: usize> TensorMap<'a, T, RANK> {
    /// A tiled map over `buf`: `dims` elements per dimension (dimension 0 innermost), `strides_bytes` the
    /// byte strides of dimensions 1..RANK (RANK − 1 values; dimension 0 is contiguous), boxes of `box_dims`
    /// elements, element strides 1, out-of-bounds elements of a load filled with zeros.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::TensorMap`] naming the broken rule: RANK in 1..=5; RANK − 1 strides; the buffer
    /// 16-byte aligned; each dim in 1..=2^32; each stride a multiple of 16, below 2^40 and at least the
    /// bytes of the dimensions inside it; each box dim in 1..=256; the box's inner extent (`box_dims[0]` ×
    /// element size) a multiple of 16 bytes and, with a swizzle, at most the swizzle span (32, 64 or 128
    /// bytes); the tensor inside the buffer. On the GPU a refusal by `cuTensorMapEncodeTiled` itself is
    /// [`RuntimeError::Driver`].
    pub fn tiled(
        buf: &'a DeviceBuffer<T>,
        dims: [u64; RANK],
        strides_bytes: &[u64],
        box_dims: [u32; RANK],
        swizzle: TensorSwizzle,
    ) -> Result<Self, RuntimeError> {
        let (desc, bytes) = describe(buf, &dims, strides_bytes, &box_dims, swizzle)?;
        Ok(TensorMap { buf, desc, bytes })
    }

    /// The tensor's dimensions (elements; dimension 0 innermost).
    pub fn dims(&self) -> [u64; RANK] {
        std::array::from_fn(|i| self.desc.dims[i])
    }

    /// The box's dimensions (elements; dimension 0 innermost).
    pub fn box_dims(&self) -> [u32; RANK] {
        std::array::from_fn(|i| self.desc.box_dims[i])
    }

    /// Byte strides of dimensions 1..RANK.
    pub fn strides_bytes(&self) -> &[u64] {
        &self.desc.strides
    }

    /// The shared-memory swizzle.
    pub fn swizzle(&self) -> TensorSwizzle {
        self.desc.swizzle
    }

    /// The same map asking L2 to fetch `promotion` bytes at once for its copies' misses (the default is
    /// none): encoded again for the buffer's device. A hint to the GPU's L2; the emulator keeps it and
    /// ignores it.
    ///
    /// ```
    /// use prism_runtime::{Device, TensorL2Promotion, TensorMap, TensorSwizzle};
    /// let dev = Device::emulator();
    /// let a = dev.alloc_zeros::<half::bf16>(128 * 256)?;
    /// let map = TensorMap::row_major_2d(&a, 128, 256, 64, 64, TensorSwizzle::B128)?
    ///     .with_l2_promotion(TensorL2Promotion::B256)?;
    /// assert_eq!(map.l2_promotion(), TensorL2Promotion::B256);
    /// # Ok::<(), prism_runtime::RuntimeError>(())
    /// ```
    ///
    /// # Errors
    /// On the GPU, a refusal by `cuTensorMapEncodeTiled` ([`RuntimeError::Driver`]).
    pub fn with_l2_promotion(mut self, promotion: TensorL2Promotion) -> Result<Self, RuntimeError> {
        self.desc.l2_promotion = promotion;
        self.bytes = TensorMapBytes(self.buf.device().encode_tensor_map(&self.desc)?);
        Ok(self)
    }

    /// The L2 fetch size asked for the copies' misses.
    pub fn l2_promotion(&self) -> TensorL2Promotion {
        self.desc.l2_promotion
    }

    /// Bytes one box copy moves (the `expect_tx` count of a load), out-of-bounds elements included.
    pub fn box_bytes(&self) -> u64 {
        self.desc.box_bytes()
    }

    /// The validated description (with the buffer's device address), as the emulator encodes it.
    pub fn description(&self) -> &emu::TensorMap {
        &self.desc
    }

    /// The buffer the map describes.
    pub fn buffer(&self) -> &'a DeviceBuffer<T> {
        self.buf
    }

    /// The map as the argument of a `TensorMap<T, RANK>` kernel parameter.
    pub fn as_arg(&self) -> KernelArg<'_> {
        KernelArg::TensorMap {
            elem: T::ELEM,
            rank: RANK as u8,
            map: TensorMapHandle {
                buf: self.buf.const_handle(),
                elem: T::ELEM,
                rank: RANK as u8,
                bytes: Box::new(self.bytes),
            },
        }
    }
}

impl<'a, T: DeviceCopy> TensorMap<'a, T, 2> {
    /// A map over a row-major `rows × cols` matrix that fills `buf` from its start (row stride
    /// `cols × size_of::<T>()` bytes), with boxes of `box_rows × box_cols`. As [`TensorMap::tiled`] with
    /// `dims = [cols, rows]`, `box_dims = [box_cols, box_rows]` (innermost first).
    ///
    /// # Errors
    /// As [`TensorMap::tiled`]; the row stride must be a multiple of 16 bytes.
    pub fn row_major_2d(
        buf: &'a DeviceBuffer<T>,
        rows: u64,
        cols: u64,
        box_rows: u32,
        box_cols: u32,
        swizzle: TensorSwizzle,
    ) -> Result<Self, RuntimeError> {
        let stride = cols
            .checked_mul(std::mem::size_of::<T>() as u64)
            .ok_or_else(|| RuntimeError::TensorMap(format!("{cols} columns overflow a stride")))?;
        TensorMap::tiled(buf, [cols, rows], &[stride], [box_cols, box_rows], swizzle)
    }
}

/// Validates a map over `buf` (the rules of [`TensorMap::tiled`]) and encodes it for the buffer's device.
fn describe<T: DeviceCopy>(
    buf: &DeviceBuffer<T>,
    dims: &[u64],
    strides_bytes: &[u64],
    box_dims: &[u32],
    swizzle: TensorSwizzle,
) -> Result<(emu::TensorMap, TensorMapBytes), RuntimeError> {
    let desc = emu::TensorMap::tiled(
        data_type(T::ELEM),
        buf.raw_ptr(),
        dims,
        strides_bytes,
        box_dims,
        swizzle,
    )
    .map_err(|e| RuntimeError::TensorMap(e.0))?;
    let need = desc.extent_bytes();
    let have = buf.len() as u128 * std::mem::size_of::<T>() as u128;
    if need > have {
        return Err(RuntimeError::TensorMap(format!(
                "the tensor ({}, strides {:?} bytes) reaches {} bytes past its start, but the buffer has {} bytes \
                 ({} elements of {})",
                dims_text(dims),
                strides_bytes,
                need,
                have,
                buf.len(),
                T::ELEM
            )));
    }
    let bytes = TensorMapBytes(buf.device().encode_tensor_map(&desc)?);
    Ok((desc, bytes))
}

/// A tensor map a kernel may store through (`TensorMapMut<T, RANK>` parameters: `tma_store`): the same
/// description and rules as [`TensorMap`], over a buffer borrowed mutably for `'a`, so nothing else reads or
/// writes the buffer while a launch may write it.
///
/// ```
/// use prism_runtime::{Device, TensorMapMut, TensorSwizzle};
/// let dev = Device::emulator();
/// let mut c = dev.alloc_zeros::<f32>(64 * 64)?;
/// let map = TensorMapMut::row_major_2d(&mut c, 64, 64, 64, 32, TensorSwizzle::B128)?;
/// assert_eq!(map.box_dims(), [32, 64]);
/// # Ok::<(), prism_runtime::RuntimeError>(())
/// ```
pub struct TensorMapMut<'a, T: DeviceCopy, const RANK: usize> {
    buf: &'a mut DeviceBuffer<T>,
    desc: emu::TensorMap,
    bytes: TensorMapBytes,
}

impl<'a, T: DeviceCopy, const RANK: usize> TensorMapMut<'a, T, RANK> {
    /// As [`TensorMap::tiled`], over a mutably borrowed buffer.
    ///
    /// # Errors
    /// As [`TensorMap::tiled`].
    pub fn tiled(
        buf: &'a mut DeviceBuffer<T>,
        dims: [u64; RANK],
        strides_bytes: &[u64],
        box_dims: [u32; RANK],
        swizzle: TensorSwizzle,
    ) -> Result<Self, RuntimeError> {
        let (desc, bytes) = describe(buf, &dims, strides_bytes, &box_dims, swizzle)?;
        Ok(TensorMapMut { buf, desc, bytes })
    }

    /// The box's dimensions (elements; dimension 0 innermost).
    pub fn box_dims(&self) -> [u32; RANK] {
        std::array::from_fn(|i| self.desc.box_dims[i])
    }

    /// The shared-memory swizzle.
    pub fn swizzle(&self) -> TensorSwizzle {
        self.desc.swizzle
    }

    /// As [`TensorMap::with_l2_promotion`].
    ///
    /// # Errors
    /// As [`TensorMap::with_l2_promotion`].
    pub fn with_l2_promotion(mut self, promotion: TensorL2Promotion) -> Result<Self, RuntimeError> {
        self.desc.l2_promotion = promotion;
        self.bytes = TensorMapBytes(self.buf.device().encode_tensor_map(&self.desc)?);
        Ok(self)
    }

    /// The L2 fetch size asked for the copies' misses.
    pub fn l2_promotion(&self) -> TensorL2Promotion {
        self.desc.l2_promotion
    }

    /// The validated description (with the buffer's device address), as the emulator encodes it.
    pub fn description(&self) -> &emu::TensorMap {
        &self.desc
    }

    /// The map as the argument of a `TensorMapMut<T, RANK>` (or `TensorMap<T, RANK>`) kernel parameter.
    pub fn as_arg(&mut self) -> KernelArg<'_> {
        KernelArg::TensorMap {
            elem: T::ELEM,
            rank: RANK as u8,
            map: TensorMapHandle {
                buf: self.buf.mut_handle(),
                elem: T::ELEM,
                rank: RANK as u8,
                bytes: Box::new(self.bytes),
            },
        }
    }
}

impl<'a, T: DeviceCopy> TensorMapMut<'a, T, 2> {
    /// As [`TensorMap::row_major_2d`], over a mutably borrowed buffer.
    ///
    /// # Errors
    /// As [`TensorMap::tiled`].
    pub fn row_major_2d(
        buf: &'a mut DeviceBuffer<T>,
        rows: u64,
        cols: u64,
        box_rows: u32,
        box_cols: u32,
        swizzle: TensorSwizzle,
    ) -> Result<Self, RuntimeError> {
        let stride = cols
            .checked_mul(std::mem::size_of::<T>() as u64)
            .ok_or_else(|| RuntimeError::TensorMap(format!("{cols} columns overflow a stride")))?;
        TensorMapMut::tiled(buf, [cols, rows], &[stride], [box_cols, box_rows], swizzle)
    }
}

impl<T: DeviceCopy, const RANK: usize> fmt::Debug for TensorMap<'_, T, RANK> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TensorMap<{}, {}>(dims {}, box {}, {:?} swizzle, L2 promotion {:?}, over {:?})",
            T::ELEM,
            RANK,
            dims_text(&self.desc.dims),
            dims_text(&self.desc.box_dims),
            self.desc.swizzle,
            self.desc.l2_promotion,
            self.buf
        )
    }
}

fn dims_text<D: fmt::Display>(d: &[D]) -> String {
    d.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(" × ")
}
