//! Contract and argument checks, done before any launch on either backend.
//!
//! The perspective checker proves a kernel correct only for launches that satisfy its contract (paper §3.3:
//! the perspective bound `@requires(grid[1], block[1], thread[n])`, plus `threads = N`, `blocks = N` and the
//! `smem` budget). A launch outside it could split a warp collective across an incomplete group, so the
//! runtime refuses it with [`RuntimeError::BadLaunch`] instead of running it.

use crate::arg::{data_type, BufHandle, DeviceInfo, KernelArg, TensorMapHandle};
use crate::emu;
use crate::error::RuntimeError;
use crate::types::{Backend, ElemType};
use crate::types::{KernelInfo, LaunchDims, ParamType};

// The hardware limits, defined once for the compiler, the runtime and the emulator.
pub use prism_core::hw::{MAX_CLUSTER_BLOCKS, MAX_GRID_X, MAX_SMEM_BYTES, MAX_THREADS_PER_BLOCK};

fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("{} {}", n, word)
    } else {
        format!("{} {}s", n, word)
    }
}

/// Checks `dims` and the kernel's shared memory against `kernel.contract` and the hardware limits.
///
/// Rules, in order: block in `1..=1024`; block `== threads_exact`; block a multiple of
/// `threads_multiple_of` (`thread[n]`); grid in `1..=2^31-1`; grid `== blocks_exact`; grid a multiple of
/// `blocks_multiple_of` (`block[n]`); cluster size in `1..=8` ([`MAX_CLUSTER_BLOCKS`]) and the grid a
/// multiple of it; `smem_bytes <= 232448`. The first violated rule is reported as
/// [`RuntimeError::BadLaunch`] with the kernel name, the rule and the numbers.
pub fn validate_launch(kernel: &KernelInfo, dims: LaunchDims) -> Result<(), RuntimeError> {
    let c = &kernel.contract;
    let bad = |m: String| {
        Err(RuntimeError::BadLaunch(format!(
            "kernel `{}`: {}",
            kernel.name, m
        )))
    };
    let b = dims.block;
    if b == 0 {
        return bad("block of 0 threads: a block needs at least 1 thread".into());
    }
    if b > MAX_THREADS_PER_BLOCK {
        return bad(format!(
            "block of {} threads exceeds the hardware limit of {} threads per block",
            b, MAX_THREADS_PER_BLOCK
        ));
    }
    if let Some(n) = c.threads_exact() {
        if b != n {
            return bad(format!(
                "block of {} threads, but the kernel requires exactly {} per block (threads = {})",
                b,
                plural(n as u64, "thread"),
                n
            ));
        }
    }
    if c.threads_multiple_of() > 1 && !b.is_multiple_of(c.threads_multiple_of()) {
        return bad(format!(
            "block of {} threads is not a multiple of {} (kernel requires thread[{}])",
            b,
            c.threads_multiple_of(),
            c.threads_multiple_of()
        ));
    }
    let g = dims.grid;
    if g == 0 {
        return bad("grid of 0 blocks: a grid needs at least 1 block".into());
    }
    if g > MAX_GRID_X {
        return bad(format!(
            "grid of {} blocks exceeds the hardware limit of {} blocks",
            g, MAX_GRID_X
        ));
    }
    if let Some(n) = c.blocks_exact() {
        if g != n {
            return bad(format!(
                "grid of {}, but the kernel requires exactly {} (blocks = {})",
                plural(g as u64, "block"),
                plural(n as u64, "block"),
                n
            ));
        }
    }
    if c.blocks_multiple_of() > 1 && !g.is_multiple_of(c.blocks_multiple_of()) {
        let why = if c.cluster_blocks() == c.blocks_multiple_of() {
            format!(
                "the cluster size {} (cluster = {})",
                c.cluster_blocks(),
                c.cluster_blocks()
            )
        } else {
            format!(
                "{} (kernel requires block[{}])",
                c.blocks_multiple_of(),
                c.blocks_multiple_of()
            )
        };
        return bad(format!(
            "grid of {} is not a multiple of {why}",
            plural(g as u64, "block")
        ));
    }
    let cl = c.cluster_blocks();
    if cl == 0 {
        return bad("cluster of 0 blocks: a cluster needs at least 1 block".into());
    }
    if cl > MAX_CLUSTER_BLOCKS {
        return bad(format!(
            "cluster of {} blocks exceeds the portable limit of {} blocks per cluster",
            cl, MAX_CLUSTER_BLOCKS
        ));
    }
    if !g.is_multiple_of(cl) {
        return bad(format!(
            "grid of {} is not a multiple of the cluster size {} (cluster = {})",
            plural(g as u64, "block"),
            cl,
            cl
        ));
    }
    if c.smem_bytes() > MAX_SMEM_BYTES {
        return bad(format!(
            "smem = {} bytes exceeds the limit of {} bytes (227 KiB) of shared memory per block",
            c.smem_bytes(),
            MAX_SMEM_BYTES
        ));
    }
    Ok(())
}

/// Checks `args` against `kernel.params`: count, scalar kinds, buffer element types, mutability and owning
/// device. Errors name the parameter.
pub(crate) fn check_args(
    device: &dyn DeviceInfo,
    kernel: &KernelInfo,
    args: &[KernelArg<'_>],
) -> Result<(), RuntimeError> {
    let bad = |m: String| {
        Err(RuntimeError::BadArgs(format!(
            "kernel `{}`: {}",
            kernel.name, m
        )))
    };
    if args.len() != kernel.params.len() {
        let names: Vec<&str> = kernel.params.iter().map(|p| p.name).collect();
        return bad(format!(
            "takes {} ({}), got {}",
            plural(kernel.params.len() as u64, "argument"),
            names.join(", "),
            plural(args.len() as u64, "argument")
        ));
    }
    for (i, (p, a)) in kernel.params.iter().zip(args).enumerate() {
        let what = format!("parameter #{} `{}: {}`", i, p.name, p.ty);
        match (p.ty, a) {
            (ParamType::U32, KernelArg::U32(_))
            | (ParamType::I32, KernelArg::I32(_))
            | (ParamType::U64, KernelArg::U64(_))
            | (ParamType::I64, KernelArg::I64(_))
            | (ParamType::F32, KernelArg::F32(_))
            | (ParamType::F64, KernelArg::F64(_))
            | (ParamType::Bool, KernelArg::Bool(_)) => {}
            (
                ParamType::Ptr { elem, mutable },
                KernelArg::Buf {
                    elem: ae,
                    mutable: am,
                    buf,
                },
            ) => {
                check_buf(device, &what, elem, mutable, *ae, *am, buf).or_else(bad)?;
            }
            (
                ParamType::TensorMap {
                    elem,
                    rank,
                    writable,
                },
                KernelArg::TensorMap {
                    elem: ae,
                    rank: ar,
                    map,
                },
            ) => {
                check_map_arg(device, &what, elem, rank, *ae, *ar, map).or_else(bad)?;
                if writable && !map.buffer().is_mutable() {
                    return bad(format!(
                        "{what}: the kernel stores through this tensor map, so it takes a TensorMapMut (made from \
                         `&mut DeviceBuffer`), not a TensorMap"
                    ));
                }
            }
            (_, a) => return bad(format!("{} got {}", what, a.describe())),
        }
    }
    Ok(())
}

fn check_buf(
    device: &dyn DeviceInfo,
    what: &str,
    elem: crate::ElemType,
    mutable: bool,
    arg_elem: crate::ElemType,
    arg_mutable: bool,
    buf: &BufHandle<'_>,
) -> Result<(), String> {
    // The handle's own type facts win over the public fields, which a caller could have edited.
    if arg_elem != buf.elem() || arg_mutable != buf.is_mutable() {
        return Err(format!(
            "{}: the argument says {} {} buffer, but the handle is {} {} buffer",
            what,
            if arg_mutable { "a mutable" } else { "a const" },
            arg_elem,
            if buf.is_mutable() {
                "a mutable"
            } else {
                "a const"
            },
            buf.elem()
        ));
    }
    if buf.elem() != elem {
        return Err(format!("{} got a buffer of {}", what, buf.elem()));
    }
    if mutable && !buf.is_mutable() {
        return Err(format!(
            "{} got a const buffer: the kernel may write through it, pass it with `as_arg_mut()`",
            what
        ));
    }
    if buf.device_id() != device.id() {
        return Err(format!(
            "{} got a buffer of device #{} ({}), but the launch is on device #{} ({})",
            what,
            buf.device_id(),
            buf.device_name(),
            device.id(),
            device.name()
        ));
    }
    Ok(())
}

/// Checks the kernel's [`ParamSpec`](crate::ParamSpec) list against the parameters its PTX entry declares
/// (count and sizes). A mismatch is a code-generation bug; on the GPU it would make the driver read
/// arguments that were never passed, so it is refused as [`RuntimeError::Ptx`].
pub(crate) fn check_ptx_params(
    kernel: &KernelInfo,
    decls: &[crate::emu::ParamDecl],
) -> Result<(), RuntimeError> {
    let bad = |m: String| {
        Err(RuntimeError::Ptx(format!(
            "kernel `{}`: its parameter list does not match PTX entry `{}`: {}",
            kernel.name, kernel.entry, m
        )))
    };
    if decls.len() != kernel.params.len() {
        return bad(format!(
            "{} parameters declared, the PTX has {}",
            kernel.params.len(),
            decls.len()
        ));
    }
    for (p, d) in kernel.params.iter().zip(decls) {
        let ok = match p.ty {
            ParamType::U32 | ParamType::I32 | ParamType::F32 => d.size == 4,
            ParamType::U64 | ParamType::I64 | ParamType::F64 | ParamType::Ptr { .. } => d.size == 8,
            // Passed as a little-endian u32, of which the driver copies the declared width.
            ParamType::Bool => matches!(d.size, 1 | 2 | 4),
            // `.param .align 64 .b8 name[128]`: the driver and TMA need the 64-byte alignment.
            ParamType::TensorMap { .. } => {
                d.size == 128 && d.align >= 64 && d.align.is_multiple_of(64)
            }
        };
        if !ok {
            let (want, have) = if matches!(p.ty, ParamType::TensorMap { .. }) {
                (
                    "128 bytes aligned to 64".to_string(),
                    format!("{} bytes aligned to {}", d.size, d.align),
                )
            } else {
                (format!("{} bytes", param_size(p.ty)), format!("{}", d.size))
            };
            return bad(format!(
                "`{}: {}` is passed as {}, PTX parameter `{}` has {}",
                p.name, p.ty, want, d.name, have
            ));
        }
    }
    Ok(())
}

fn param_size(t: ParamType) -> usize {
    match t {
        ParamType::U32 | ParamType::I32 | ParamType::F32 | ParamType::Bool => 4,
        ParamType::TensorMap { .. } => 128,
        _ => 8,
    }
}

/// The launch check of a [`KernelArg::TensorMap`] against a `TensorMap<elem, rank>` parameter: the
/// argument's public fields agree with the handle, element type and rank match, the map's buffer belongs to
/// the launching device; on the emulator the bytes also decode to a valid map of that buffer.
pub(crate) fn check_map_arg(
    device: &dyn DeviceInfo,
    what: &str,
    elem: ElemType,
    rank: u8,
    arg_elem: ElemType,
    arg_rank: u8,
    map: &TensorMapHandle<'_>,
) -> Result<(), String> {
    // The handle's own facts win over the public fields, which a caller could have edited.
    if arg_elem != map.elem || arg_rank != map.rank {
        return Err(format!(
            "{what}: the argument says TensorMap<{arg_elem}, {arg_rank}>, but the handle is TensorMap<{}, {}>",
            map.elem, map.rank
        ));
    }
    if map.elem != elem || map.rank != rank {
        return Err(format!(
            "{what} got a TensorMap<{}, {}>",
            map.elem, map.rank
        ));
    }
    if map.buf.device_id() != device.id() {
        return Err(format!(
            "{} got a tensor map of a buffer of device #{} ({}), but the launch is on device #{} ({})",
            what,
            map.buf.device_id(),
            map.buf.device_name(),
            device.id(),
            device.name()
        ));
    }
    if device.backend() == Backend::Emulator {
        let m = emu::TensorMap::decode(&map.bytes.0)
            .map_err(|e| format!("{what}: the tensor map's bytes do not decode: {e}"))?;
        if m.data_type != data_type(elem)
            || m.rank() != rank as usize
            || m.global_address != map.buf.raw_ptr()
        {
            return Err(format!(
                "{what}: the tensor map's bytes describe a rank-{} {:?} tensor at {:#x}, not its buffer at {:#x}",
                m.rank(),
                m.data_type,
                m.global_address,
                map.buf.raw_ptr()
            ));
        }
    }
    Ok(())
}
