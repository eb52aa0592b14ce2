//! The GPU side of tensor maps and cluster launches: `cuTensorMapEncodeTiled` for [`crate::TensorMap`], and
//! launches through `cuLaunchKernelEx` (with a `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` attribute when the
//! contract has clusters), used for every launch with a cluster or a tensor-map argument; the driver's count
//! of co-resident clusters (`cuOccupancyMaxActiveClusters`).

use std::ffi::c_void;

use cudarc::driver::{sys, SyncOnDrop};

use super::{GpuBackend, GpuFunction};
use crate::arg::TensorMapBytes;
use crate::arg::{HandleInner, KernelArg};
use crate::emu::{self, TensorDataType, TensorL2Promotion, TensorSwizzle};
use crate::error::RuntimeError;
use crate::types::{KernelInfo, LaunchDims};

fn cu_data_type(t: TensorDataType) -> sys::CUtensorMapDataType {
    use sys::CUtensorMapDataType as D;
    match t {
        TensorDataType::U8 => D::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        TensorDataType::U16 => D::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        TensorDataType::U32 => D::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        TensorDataType::I32 => D::CU_TENSOR_MAP_DATA_TYPE_INT32,
        TensorDataType::U64 => D::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        TensorDataType::I64 => D::CU_TENSOR_MAP_DATA_TYPE_INT64,
        TensorDataType::F16 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        TensorDataType::F32 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        TensorDataType::F64 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        TensorDataType::Bf16 => D::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        TensorDataType::F32Ftz => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
        TensorDataType::Tf32 => D::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
        TensorDataType::Tf32Ftz => D::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
    }
}

fn cu_swizzle(s: TensorSwizzle) -> sys::CUtensorMapSwizzle {
    use sys::CUtensorMapSwizzle as S;
    match s {
        TensorSwizzle::None => S::CU_TENSOR_MAP_SWIZZLE_NONE,
        TensorSwizzle::B32 => S::CU_TENSOR_MAP_SWIZZLE_32B,
        TensorSwizzle::B64 => S::CU_TENSOR_MAP_SWIZZLE_64B,
        TensorSwizzle::B128 => S::CU_TENSOR_MAP_SWIZZLE_128B,
    }
}

fn cu_l2_promotion(p: TensorL2Promotion) -> sys::CUtensorMapL2promotion {
    use sys::CUtensorMapL2promotion as P;
    match p {
        TensorL2Promotion::None => P::CU_TENSOR_MAP_L2_PROMOTION_NONE,
        TensorL2Promotion::B64 => P::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
        TensorL2Promotion::B128 => P::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        TensorL2Promotion::B256 => P::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
    }
}

/// The launch attribute of 1-D clusters of `blocks` blocks (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`).
fn cluster_dimension(blocks: u32) -> sys::CUlaunchAttribute {
    // SAFETY: all-zero bytes are a valid CUlaunchAttribute (a plain C struct with a union).
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = blocks;
    attr.value.clusterDim.y = 1;
    attr.value.clusterDim.z = 1;
    attr
}

impl GpuBackend {
    /// `cuTensorMapEncodeTiled` of a map already validated by [`emu::TensorMap::validate`] (interleave none,
    /// the map's L2 promotion, zero or NaN out-of-bounds fill as the map says).
    pub(crate) fn encode_tensor_map(&self, m: &emu::TensorMap) -> Result<[u8; 128], RuntimeError> {
        super::guard("cuTensorMapEncodeTiled", || {
            let rank = m.rank();
            let elem_strides: Vec<u32> = m.element_strides.clone();
            let oob = if m.oob_nan {
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
            } else {
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
            };
            let mut out = sys::CUtensorMap { opaque: [0; 16] };
            // SAFETY: `out` is a writable, aligned CUtensorMap; the arrays hold `rank` (dims, box, element
            // strides) and `rank - 1` (strides) values, as validate() checked; the global address is a
            // device allocation of this GPU that the caller keeps borrowed while the map is used.
            let r = unsafe {
                sys::cuTensorMapEncodeTiled(
                    &mut out,
                    cu_data_type(m.data_type),
                    rank as u32,
                    m.global_address as *mut c_void,
                    m.dims.as_ptr(),
                    m.strides.as_ptr(),
                    m.box_dims.as_ptr(),
                    elem_strides.as_ptr(),
                    sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                    cu_swizzle(m.swizzle),
                    cu_l2_promotion(m.l2_promotion),
                    oob,
                )
            };
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(RuntimeError::Driver(format!(
                    "cuTensorMapEncodeTiled refused {m:?}: {r:?}"
                )));
            }
            let mut b = [0u8; 128];
            for (i, q) in out.opaque.iter().enumerate() {
                b[8 * i..8 * i + 8].copy_from_slice(&q.to_le_bytes());
            }
            Ok(b)
        })
    }

    /// `cuOccupancyMaxActiveClusters` for `kernel` on a `grid` its contract allows, in blocks of `block`
    /// threads, clusters of its contract's size (1 without clusters) and its dynamic shared memory (opted in
    /// first, as a launch would); answers are cached per function and block size.
    pub(crate) fn max_active_clusters(
        &self,
        kernel: &KernelInfo,
        grid: u32,
        block: u32,
    ) -> Result<u32, RuntimeError> {
        super::guard("cuOccupancyMaxActiveClusters", || {
            let func = self.function(kernel)?;
            if let Some(n) = super::lock(&func.active_clusters).get(&block) {
                return Ok(*n);
            }
            self.opt_in_smem(&func, kernel)?;
            let cl = kernel.contract.cluster_blocks().max(1);
            let mut attr = cluster_dimension(cl);
            let cfg = sys::CUlaunchConfig {
                gridDimX: grid,
                gridDimY: 1,
                gridDimZ: 1,
                blockDimX: block,
                blockDimY: 1,
                blockDimZ: 1,
                sharedMemBytes: kernel.contract.smem_bytes(),
                hStream: self.stream.cu_stream(),
                attrs: &mut attr,
                numAttrs: 1,
            };
            self.ctx
                .bind_to_thread()
                .map_err(Self::driver("binding the context"))?;
            let mut n: std::os::raw::c_int = 0;
            // SAFETY: `n` is a writable int; `cfg` and the attribute it points to live across the call; the
            // function is a loaded entry of this context.
            let r =
                unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, func.f.cu_function(), &cfg) };
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(RuntimeError::Driver(format!(
                    "cuOccupancyMaxActiveClusters for `{}` (clusters of {cl} blocks of {block} threads, {} \
                     bytes of dynamic shared memory): {r:?}",
                    kernel.name,
                    kernel.contract.smem_bytes()
                )));
            }
            let n = n.max(0) as u32;
            super::lock(&func.active_clusters).insert(block, n);
            Ok(n)
        })
    }

    /// Launches a validated kernel with `cuLaunchKernelEx`: each parameter's bytes in its own 64-byte-aligned
    /// slot (scalars little-endian, bools as a 32-bit 0/1, buffers as their device address, tensor maps as
    /// their 128 bytes), and the cluster dimension as a launch attribute when the contract has clusters.
    /// Every buffer, including those behind tensor maps, goes through cudarc's access guards, so the launch
    /// is ordered after pending work on it as with the launch builder.
    pub(super) fn launch_ex(
        &self,
        func: &GpuFunction,
        kernel: &KernelInfo,
        dims: LaunchDims,
        args: &mut [KernelArg<'_>],
    ) -> Result<(), RuntimeError> {
        let mut slots = vec![TensorMapBytes([0; 128]); args.len()];
        let mut guards: Vec<SyncOnDrop<'_>> = Vec::new();
        for (slot, a) in slots.iter_mut().zip(args.iter_mut()) {
            let mut put = |b: &[u8]| slot.0[..b.len()].copy_from_slice(b);
            match a {
                KernelArg::U32(v) => put(&v.to_le_bytes()),
                KernelArg::I32(v) => put(&v.to_le_bytes()),
                KernelArg::U64(v) => put(&v.to_le_bytes()),
                KernelArg::I64(v) => put(&v.to_le_bytes()),
                KernelArg::F32(v) => put(&v.to_le_bytes()),
                KernelArg::F64(v) => put(&v.to_le_bytes()),
                KernelArg::Bool(v) => put(&(*v as u32).to_le_bytes()),
                KernelArg::Buf { buf, .. } => match &mut buf.inner {
                    HandleInner::Gpu(s) => {
                        let (p, g) = s.ptr_guard(&self.stream);
                        put(&p.to_le_bytes());
                        guards.push(g);
                    }
                    HandleInner::Emu(_) => return Err(RuntimeError::WrongDevice),
                },
                KernelArg::TensorMap { map, .. } => {
                    put(&map.bytes.0);
                    match &mut map.buffer_mut().inner {
                        // The kernel reaches the buffer through the map: order the launch after its writes.
                        HandleInner::Gpu(s) => guards.push(s.ptr_guard(&self.stream).1),
                        HandleInner::Emu(_) => return Err(RuntimeError::WrongDevice),
                    }
                }
            }
        }
        let mut params: Vec<*mut c_void> = slots
            .iter_mut()
            .map(|s| s.0.as_mut_ptr() as *mut c_void)
            .collect();
        let cl = kernel.contract.cluster_blocks();
        let mut attr = cluster_dimension(cl);
        let cfg = sys::CUlaunchConfig {
            gridDimX: dims.grid,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: dims.block,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: kernel.contract.smem_bytes(),
            hStream: self.stream.cu_stream(),
            attrs: &mut attr,
            numAttrs: (cl > 1) as u32,
        };
        self.ctx
            .bind_to_thread()
            .map_err(Self::driver("binding the context"))?;
        // SAFETY: `params` holds one pointer per parameter (count and sizes checked against the PTX by
        // check_ptx_params, values by check_args), each to a 64-byte-aligned slot alive until the call returns
        // (the driver copies the values at the call); buffer addresses stay valid while `args` borrows them,
        // and the guards record this launch on them when dropped after it; the launch satisfies the kernel's
        // contract (validate_launch).
        let r = unsafe {
            sys::cuLaunchKernelEx(
                &cfg,
                func.f.cu_function(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        drop(guards);
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(RuntimeError::Driver(format!(
                "launching `{}` with cuLaunchKernelEx (cluster of {} blocks): {:?}",
                kernel.name, cl, r
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The emulator's encoding uses the driver's numbering for data types and swizzles; the GPU path maps one
    /// to the other variant by variant, so the codes must agree.
    #[test]
    fn driver_enums_match_the_emulator_numbering() {
        use TensorDataType::*;
        for t in [
            U8, U16, U32, I32, U64, I64, F16, F32, F64, Bf16, F32Ftz, Tf32, Tf32Ftz,
        ] {
            assert_eq!(cu_data_type(t) as u32, t as u32, "{t:?}");
        }
        for s in [
            TensorSwizzle::None,
            TensorSwizzle::B32,
            TensorSwizzle::B64,
            TensorSwizzle::B128,
        ] {
            assert_eq!(cu_swizzle(s) as u32, s as u32, "{s:?}");
        }
        for p in [
            TensorL2Promotion::None,
            TensorL2Promotion::B64,
            TensorL2Promotion::B128,
            TensorL2Promotion::B256,
        ] {
            assert_eq!(cu_l2_promotion(p) as u32, p as u32, "{p:?}");
        }
        assert_eq!(
            sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION as u32,
            4
        );
        assert_eq!(std::mem::size_of::<sys::CUtensorMap>(), 128);
        assert_eq!(std::mem::align_of::<TensorMapBytes>(), 64);
    }
}
