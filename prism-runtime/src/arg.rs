//! What a launch passes: kernel arguments ([`KernelArg`]), type-erased buffer borrows ([`BufHandle`]),
//! tensor-map handles ([`TensorMapHandle`]) and the element types a buffer may hold ([`DeviceCopy`]). A
//! leaf under the device and its backends: `device`, `gpu`, `validate` and `tensor_map` import it, and it
//! imports none of them (a handle knows its device only through [`DeviceInfo`]).

use std::fmt;

use cudarc::driver::{
    CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, LaunchArgs, PushKernelArg,
    SyncOnDrop, ValidAsZeroBits,
};

use crate::emu::TensorDataType;
use crate::types::{Backend, ElemType, ParamType};

/// What a buffer or a launch check needs to know of a device: its id, name and backend.
pub(crate) trait DeviceInfo: Sync {
    /// [`crate::Device::id`].
    fn id(&self) -> u64;
    /// [`crate::Device::name`].
    fn name(&self) -> String;
    /// [`crate::Device::backend`].
    fn backend(&self) -> Backend;
}

mod sealed {
    /// Explicit little-endian conversions for the emulator's byte-addressed memory (no transmutes).
    pub trait Sealed: Sized {
        const SIZE: usize;
        fn put_le(self, out: &mut Vec<u8>);
        fn get_le(bytes: &[u8]) -> Self;
    }
}

/// Element types that can live in a [`DeviceBuffer`](crate::DeviceBuffer): `u8 u32 i32 u64 i64 f32 f64 half::f16 half::bf16`.
/// Sealed: the runtime knows the byte layout of each.
pub trait DeviceCopy:
    Copy + Default + Send + Sync + Unpin + 'static + sealed::Sealed + DeviceRepr + ValidAsZeroBits
{
    /// The element type's tag, checked against pointer parameters at launch.
    const ELEM: ElemType;
}

macro_rules! device_copy {
    ($($t:ty => $e:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get_le(bytes: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(bytes);
                <$t>::from_le_bytes(a)
            }
        }
        impl DeviceCopy for $t {
            const ELEM: ElemType = ElemType::$e;
        }
    )*};
}

device_copy!(u8 => U8, u32 => U32, i32 => I32, u64 => U64, i64 => I64, f32 => F32, f64 => F64,
    half::f16 => F16, half::bf16 => BF16);

pub(crate) fn to_bytes<T: DeviceCopy>(data: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(std::mem::size_of_val(data));
    for &x in data {
        x.put_le(&mut out);
    }
    out
}

pub(crate) fn from_bytes<T: DeviceCopy>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(T::SIZE).map(T::get_le).collect()
}

/// A cudarc slice borrowed for one launch, with its element type erased. Pushing the slice itself (not its
/// raw pointer) lets cudarc order the launch after pending writes and record the access.
pub(crate) trait GpuSliceArg {
    /// Appends the slice as the next kernel argument.
    fn push<'s>(&'s mut self, b: &mut LaunchArgs<'s>);
    /// The `CUdeviceptr`.
    fn raw_ptr(&self) -> u64;
    /// The `CUdeviceptr` for a launch on `stream` that reads (const) or writes (mut) the slice: `stream`
    /// waits for pending accesses, and the guard records this one when dropped after the launch.
    fn ptr_guard<'s>(&'s mut self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>);
}

/// A slice passed to a `*const` parameter.
pub(crate) struct GpuSliceConst<'a, T>(pub &'a CudaSlice<T>);
/// A slice passed to a `*mut` parameter.
pub(crate) struct GpuSliceMut<'a, T>(pub &'a mut CudaSlice<T>);

impl<T> GpuSliceArg for GpuSliceConst<'_, T> {
    fn push<'s>(&'s mut self, b: &mut LaunchArgs<'s>) {
        b.arg(self.0);
    }
    fn raw_ptr(&self) -> u64 {
        raw_ptr(self.0)
    }
    fn ptr_guard<'s>(&'s mut self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        self.0.device_ptr(stream)
    }
}

impl<T> GpuSliceArg for GpuSliceMut<'_, T> {
    fn push<'s>(&'s mut self, b: &mut LaunchArgs<'s>) {
        b.arg(&mut *self.0);
    }
    fn raw_ptr(&self) -> u64 {
        raw_ptr(self.0)
    }
    fn ptr_guard<'s>(&'s mut self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        self.0.device_ptr_mut(stream)
    }
}

/// The `CUdeviceptr` of a slice.
pub(crate) fn raw_ptr<T>(s: &CudaSlice<T>) -> u64 {
    let (p, _record) = s.device_ptr(s.stream());
    p
}

/// The 128 bytes of a `CUtensorMap`, 64-byte aligned as the driver and `cp.async.bulk.tensor` require
/// (on the GPU a kernel parameter is passed as a pointer to its value, and the driver copies from there).
#[repr(C, align(64))]
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct TensorMapBytes(pub(crate) [u8; 128]);

// SAFETY: plain bytes with the size and alignment of the `.param .align 64 .b8 name[128]` they fill.
unsafe impl DeviceRepr for TensorMapBytes {}

/// The tensor-map data type of an element type (`CUtensorMapDataType`). Total: every [`DeviceCopy`] type
/// has one.
pub(crate) fn data_type(e: ElemType) -> TensorDataType {
    match e {
        ElemType::U8 => TensorDataType::U8,
        ElemType::U32 => TensorDataType::U32,
        ElemType::I32 => TensorDataType::I32,
        ElemType::U64 => TensorDataType::U64,
        ElemType::I64 => TensorDataType::I64,
        ElemType::F32 => TensorDataType::F32,
        ElemType::F64 => TensorDataType::F64,
        ElemType::F16 => TensorDataType::F16,
        ElemType::BF16 => TensorDataType::Bf16,
    }
}

/// A type-erased borrow of a [`DeviceBuffer`](crate::DeviceBuffer), carried by [`KernelArg::Buf`]. It knows its element type,
/// whether it was borrowed mutably, its device, and what each backend needs to pass it (the emulator address,
/// or the cudarc slice so cudarc's stream bookkeeping sees the access).
pub struct BufHandle<'a> {
    pub(crate) device: &'a dyn DeviceInfo,
    pub(crate) elem: ElemType,
    pub(crate) mutable: bool,
    pub(crate) inner: HandleInner<'a>,
}

pub(crate) enum HandleInner<'a> {
    Gpu(Box<dyn GpuSliceArg + 'a>),
    Emu(u64),
}

impl BufHandle<'_> {
    /// Element type of the underlying buffer.
    pub fn elem(&self) -> ElemType {
        self.elem
    }
    /// True when borrowed with [`DeviceBuffer::as_arg_mut`](crate::DeviceBuffer::as_arg_mut).
    pub fn is_mutable(&self) -> bool {
        self.mutable
    }
    /// Id of the owning device ([`Device::id`](crate::Device::id)).
    pub fn device_id(&self) -> u64 {
        self.device.id()
    }
    /// Name of the owning device.
    pub fn device_name(&self) -> String {
        self.device.name()
    }
    /// The raw device address.
    pub fn raw_ptr(&self) -> u64 {
        match &self.inner {
            HandleInner::Gpu(s) => s.raw_ptr(),
            HandleInner::Emu(a) => *a,
        }
    }
}

impl fmt::Debug for BufHandle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BufHandle({} {}, 0x{:x} on device #{})",
            if self.mutable { "mut" } else { "const" },
            self.elem,
            self.raw_ptr(),
            self.device.id()
        )
    }
}

/// One kernel argument. Scalars by value; buffers through [`DeviceBuffer::as_arg`](crate::DeviceBuffer::as_arg) /
/// [`DeviceBuffer::as_arg_mut`](crate::DeviceBuffer::as_arg_mut).
#[derive(Debug)]
pub enum KernelArg<'a> {
    /// `u32` scalar.
    U32(u32),
    /// `i32` scalar.
    I32(i32),
    /// `u64` scalar.
    U64(u64),
    /// `i64` scalar.
    I64(i64),
    /// `f32` scalar.
    F32(f32),
    /// `f64` scalar.
    F64(f64),
    /// `bool` scalar.
    Bool(bool),
    /// A device buffer for a pointer parameter.
    Buf {
        /// Element type (must equal the handle's).
        elem: ElemType,
        /// Borrowed mutably (must equal the handle's).
        mutable: bool,
        /// The buffer.
        buf: BufHandle<'a>,
    },
    /// A TMA tensor map for a `TensorMap<elem, rank>` parameter, from [`crate::TensorMap::as_arg`].
    TensorMap {
        /// Element type (must equal the handle's).
        elem: ElemType,
        /// Rank (must equal the handle's).
        rank: u8,
        /// The encoded map and the buffer it describes.
        map: TensorMapHandle<'a>,
    },
}

impl KernelArg<'_> {
    /// Short description for error messages: `"a u32 scalar"`, `"a const buffer of f32"`.
    pub fn describe(&self) -> String {
        match self {
            KernelArg::U32(_) => "a u32 scalar".into(),
            KernelArg::I32(_) => "an i32 scalar".into(),
            KernelArg::U64(_) => "a u64 scalar".into(),
            KernelArg::I64(_) => "an i64 scalar".into(),
            KernelArg::F32(_) => "an f32 scalar".into(),
            KernelArg::F64(_) => "an f64 scalar".into(),
            KernelArg::Bool(_) => "a bool scalar".into(),
            KernelArg::Buf { buf, .. } => {
                format!(
                    "a {} buffer of {}",
                    if buf.mutable { "mutable" } else { "const" },
                    buf.elem
                )
            }
            KernelArg::TensorMap { map, .. } => {
                format!("a TensorMap<{}, {}>", map.elem(), map.rank())
            }
        }
    }

    /// The parameter type this argument fits best (buffers: a pointer of their mutability).
    pub fn param_type(&self) -> ParamType {
        match self {
            KernelArg::U32(_) => ParamType::U32,
            KernelArg::I32(_) => ParamType::I32,
            KernelArg::U64(_) => ParamType::U64,
            KernelArg::I64(_) => ParamType::I64,
            KernelArg::F32(_) => ParamType::F32,
            KernelArg::F64(_) => ParamType::F64,
            KernelArg::Bool(_) => ParamType::Bool,
            KernelArg::Buf { buf, .. } => ParamType::Ptr {
                elem: buf.elem,
                mutable: buf.mutable,
            },
            KernelArg::TensorMap { map, .. } => ParamType::TensorMap {
                elem: map.elem(),
                rank: map.rank(),
                writable: map.buffer().is_mutable(),
            },
        }
    }
}

macro_rules! arg_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for KernelArg<'_> {
            fn from(x: $t) -> Self {
                KernelArg::$v(x)
            }
        }
    )*};
}
arg_from!(u32 => U32, i32 => I32, u64 => U64, i64 => I64, f32 => F32, f64 => F64, bool => Bool);

/// A tensor map borrowed for one launch, carried by [`KernelArg::TensorMap`]: the encoded 128 bytes, the
/// element type and rank it was made with, and the buffer it describes (its device, and on the GPU its
/// cudarc slice, so the launch is ordered after pending writes to it). Only [`TensorMap::as_arg`](crate::TensorMap::as_arg) makes
/// one, so the bytes are always a validated map of that buffer.
pub struct TensorMapHandle<'a> {
    pub(crate) buf: BufHandle<'a>,
    pub(crate) elem: ElemType,
    pub(crate) rank: u8,
    pub(crate) bytes: Box<TensorMapBytes>,
}

impl<'a> TensorMapHandle<'a> {
    /// Element type of the map.
    pub fn elem(&self) -> ElemType {
        self.elem
    }
    /// Rank of the map.
    pub fn rank(&self) -> u8 {
        self.rank
    }
    /// The 128 encoded bytes.
    pub fn bytes(&self) -> &[u8; 128] {
        &self.bytes.0
    }
    /// The buffer the map describes.
    pub fn buffer(&self) -> &BufHandle<'a> {
        &self.buf
    }
    pub(crate) fn buffer_mut(&mut self) -> &mut BufHandle<'a> {
        &mut self.buf
    }
}

impl fmt::Debug for TensorMapHandle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TensorMapHandle(TensorMap<{}, {}> over {:?})",
            self.elem, self.rank, self.buf
        )
    }
}
