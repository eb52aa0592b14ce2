//! Tensor-map copies (`cp.async.bulk.tensor.Nd`, tile mode, PTX §9.7.9.27; with `cp.reduce.async.bulk.tensor`,
//! a store that reduces) and `stmatrix` (PTX §9.7.14.5.16).
//!
//! A load copies one box of the tensor a map describes into shared memory and performs `complete_tx` of
//! the box's bytes on the mbarrier; a store copies a box from shared memory to global memory. Both complete
//! when issued (a legal schedule). Box rows are laid out in order, dimension 0 innermost; with a swizzle,
//! each row takes max(inner bytes, span) bytes and 16-byte chunks are XOR-permuted by the line index of the
//! absolute shared address; elements outside the tensor read as zero (or NaN) and are not stored. All of
//! this was measured on an H100 (docs/HOPPER-PROBES.md). Clusters have one block: a multicast lands in this
//! block if its mask has bit 0 and is a fault if it names any other block.

use super::tensormap::TensorMap;
use super::wgmma::swizzle;
use super::{Acc, Block, FaultKind, Operand, Space, Warp, L};

/// The NaN pattern of an out-of-bounds element for `oob_nan` maps (quiet NaN of the element's width).
fn nan_bytes(size: usize) -> [u8; 8] {
    match size {
        2 => 0x7fffu64.to_le_bytes(),
        4 => 0x7fff_ffffu64.to_le_bytes(),
        _ => 0x7fff_ffff_ffff_ffffu64.to_le_bytes(),
    }
}

/// One lane's tensor copy, decoded: the map, the box's start coordinates and element counts, and its
/// layout in shared memory (rows of `pitch` bytes, `region` bytes in all, swizzled with descriptor code
/// `mode`) at shared address `smem` (`sloc`).
struct BoxCopy {
    map: TensorMap,
    c: Vec<i64>,
    n: Vec<u64>,
    es: usize,
    inner: usize,
    pitch: usize,
    rows: u64,
    region: usize,
    mode: u64,
    smem: u64,
    sloc: super::Loc,
}

impl L<'_> {
    pub(super) fn operand_addr(
        &self,
        b: &Block,
        w: &Warp,
        wi: usize,
        op: &Operand,
        lane: usize,
        generic: bool,
    ) -> u64 {
        match op {
            Operand::Addr(base, off) => self.addr(w, base, *off, lane, generic),
            o => self.val(b, w, wi, o, lane),
        }
    }

    /// A run of `len` bytes of global memory made of `es`-byte elements: element-aligned (not run-aligned),
    /// within one allocation.
    #[allow(clippy::too_many_arguments)]
    fn resolve_run(
        &mut self,
        b: &mut Block,
        wi: usize,
        l: usize,
        pc: u32,
        ga: u64,
        len: usize,
        es: usize,
    ) -> Option<super::Loc> {
        let first = self.resolve(b, wi, l, Space::Global, ga, es, pc)?;
        let last = self.resolve(b, wi, l, Space::Global, ga + (len - es) as u64, es, pc)?;
        match (first, last) {
            (super::Loc::Global(i, _), super::Loc::Global(j, _)) if i == j => Some(first),
            _ => {
                let msg = format!(
                    "tensor copy of {len} bytes at {ga:#x} crosses the end of an allocation"
                );
                self.fault(b, wi, Some(l as u32), pc, FaultKind::OutOfBounds, msg);
                None
            }
        }
    }

    /// Reads and decodes the tensor map at a generic address (kernel parameter, constant or global memory).
    fn read_tensor_map(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        pc: u32,
        a: u64,
    ) -> Option<TensorMap> {
        let loc = self.resolve(b, wi, lane, Space::Generic, a, 128, pc)?;
        if self.spec.is_some() {
            // (Only noted: the map's bytes are not race-checked on the one-thread path either.)
            let _ = self.spec_note(loc, 128, super::Acc::Read);
        }
        let bytes = self.mem_slice(b, loc)[..128].to_vec();
        match TensorMap::decode(&bytes) {
            Ok(m) => Some(m),
            Err(e) => {
                let msg = format!("cp.async.bulk.tensor through the 128 bytes at {a:#x}: {e}");
                self.fault(
                    b,
                    wi,
                    Some(lane as u32),
                    pc,
                    FaultKind::InvalidOperation,
                    msg,
                );
                None
            }
        }
    }

    /// Decodes one lane's `cp.async.bulk.tensor` operands: the map, the box's coordinates and its layout
    /// in shared memory (checked: rank, 128-byte alignment, non-negative store coordinates, bounds).
    #[allow(clippy::too_many_arguments)]
    fn tensor_copy_operands(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &Warp,
        pc: u32,
        l: usize,
        rank: usize,
        load: bool,
    ) -> Option<BoxCopy> {
        let m = self.m;
        let args = &m.code[pc as usize].args;
        let (tm_op, smem_op) = if load {
            (&args[1], &args[0])
        } else {
            (&args[0], &args[1])
        };
        let (map_op, coords) = match tm_op {
            Operand::List(v) if v.len() == 2 => (&v[0], v[1].elements()),
            _ => {
                let msg = "cp.async.bulk.tensor: expected [tensorMap, {coordinates}]".to_string();
                self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
                return None;
            }
        };
        let map_addr = self.operand_addr(b, w, wi, map_op, l, true);
        let map = self.read_tensor_map(b, wi, l, pc, map_addr)?;
        if map.rank() != rank || coords.len() != rank {
            let msg = format!(
                "cp.async.bulk.tensor.{rank}d with {} coordinates through a rank-{} tensor map",
                coords.len(),
                map.rank()
            );
            self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
            return None;
        }
        let c: Vec<i64> = coords
            .iter()
            .map(|o| self.val(b, w, wi, o, l) as u32 as i32 as i64)
            .collect();
        let es = map.data_type.size() as usize;
        let n: Vec<u64> = (0..rank).map(|i| map.box_elems(i)).collect();
        let inner = n[0] as usize * es;
        let span = map.swizzle.span() as usize;
        let pitch = if span > 0 { inner.max(span) } else { inner };
        let rows: u64 = n[1..].iter().product();
        let region = rows as usize * pitch;
        let smem = self.operand_addr(b, w, wi, smem_op, l, false);
        if !smem.is_multiple_of(128) {
            let msg =
                format!("cp.async.bulk.tensor: shared address {smem:#x} is not 128-byte aligned");
            self.fault(b, wi, Some(l as u32), pc, FaultKind::Misaligned, msg);
            return None;
        }
        if !load && c.iter().any(|&x| x < 0) {
            let msg = format!("cp.async.bulk.tensor store at coordinates {c:?}: a store's coordinates must not be negative");
            self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
            return None;
        }
        let sloc = self.resolve(b, wi, l, Space::Shared, smem, region.max(1), pc)?;
        let mode = map.swizzle.descriptor_code();
        Some(BoxCopy {
            map,
            c,
            n,
            es,
            inner,
            pitch,
            rows,
            region,
            mode,
            smem,
            sloc,
        })
    }

    /// One lane's `cp.async.bulk.tensor`; false when it faulted.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_tensor_copy(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &Warp,
        pc: u32,
        l: usize,
        rank: usize,
        load: bool,
    ) -> bool {
        let bx = match self.tensor_copy_operands(b, wi, w, pc, l, rank, load) {
            Some(x) => x,
            None => return false,
        };
        let ins = &self.m.code[pc as usize];
        let args = &ins.args;
        // `cp.reduce.async.bulk.tensor`: a store whose writes reduce into global memory, on the element
        // types the PTX ISA's table allows for the operation.
        let red = match ins.kind {
            super::ptx::Kind::BulkReduceTensor { op, .. } => {
                match super::async_red::tensor_reduce_type(op, bx.map.data_type) {
                    Some(ty) => Some((op, ty)),
                    None => {
                        let msg = format!(
                            "cp.reduce.async.bulk.tensor: {op:?} is not a reduction on the tensor map's {:?} elements (PTX ISA, cp.reduce.async.bulk.tensor)",
                            bx.map.data_type
                        );
                        self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
                        return false;
                    }
                }
            }
            _ => None,
        };
        // Multicast: the box lands at the same offset in every block of the mask (bit r = rank r), and each
        // of them gets complete_tx on its mbarrier at the same offset. Only `.multicast::cluster` has a mask
        // operand (the fourth); without it a fourth operand is the `.L2::cache_hint` policy.
        let multicast = matches!(
            ins.kind,
            super::ptx::Kind::CpAsyncBulkTensor {
                multicast: true,
                ..
            }
        );
        let csize = self.cluster_size();
        let targets: u32 = if load && multicast && args.len() > 3 {
            let mask = self.val(b, w, wi, &args[3], l) as u32 & 0xFFFF;
            if mask >> csize != 0 {
                let msg = format!(
                    "cp.async.bulk.tensor multicast to CTA mask {mask:#06x}, but the cluster has {csize} block(s)"
                );
                self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
                return false;
            }
            mask
        } else {
            1 << b.crank
        };
        let soff = match bx.sloc {
            super::Loc::Shared(o) => o,
            _ => 0,
        };
        if load {
            // An async-proxy write: not a generic write for the proxy checks, but it must not overwrite
            // bytes an async read still holds.
            self.async_write = true;
            self.track(b, wi, l, bx.sloc, bx.region, Acc::Write, pc, bx.smem);
            self.async_write = false;
            self.proxy_write(b, wi, l, pc, soff, bx.region, false);
        } else {
            self.track(b, wi, l, bx.sloc, bx.region, Acc::Read, pc, bx.smem);
            let tid = self.tid_of(wi, l) as usize;
            let group = b.proxy.store_group(tid, self.nthreads as usize);
            let holder = super::proxy::Holder::Store {
                tid: tid as u32,
                group,
            };
            let (lo, hi) = (soff, soff + bx.region);
            self.proxy_async_read(b, wi, l, pc, lo, hi, holder, "a TMA store");
        }
        let writes = match self.copy_box_rows(b, wi, l, pc, &bx, load, red) {
            Some(w) => w,
            None => return false,
        };
        if !load {
            return true;
        }
        let mb = self.operand_addr(b, w, wi, &args[2], l, false) as u32 & 0xFF_FFFF;
        self.deliver_box(b, wi, l, pc, &bx, targets, mb, &writes)
    }

    /// Copies the box row by row: a load returns the bytes it writes into shared memory (offset in the
    /// region, value; out-of-bounds elements filled), a store writes global memory (`red`: reduces into
    /// it, element by element) and returns nothing.
    #[allow(clippy::too_many_arguments)]
    fn copy_box_rows(
        &mut self,
        b: &mut Block,
        wi: usize,
        l: usize,
        pc: u32,
        bx: &BoxCopy,
        load: bool,
        red: Option<(super::ptx::AtomOp, super::ptx::PtxType)>,
    ) -> Option<Vec<(usize, u8)>> {
        let (map, c, n, es, smem, mode) = (&bx.map, &bx.c, &bx.n, bx.es, bx.smem, bx.mode);
        let mut writes: Vec<(usize, u8)> = Vec::new();
        let fill = if map.oob_nan { nan_bytes(es) } else { [0u8; 8] };
        for row in 0..bx.rows {
            // Box coordinates of this row (dims 1..), dim 1 fastest.
            let mut rem = row;
            let mut off: i64 = 0;
            let mut inb = true;
            for i in 1..map.rank() {
                let j = (rem % n[i]) as i64;
                rem /= n[i];
                let g = c[i] + j * map.element_strides[i] as i64;
                if g < 0 || g >= map.dims[i] as i64 {
                    inb = false;
                }
                off += g * map.strides[i - 1] as i64;
            }
            // The in-bounds run of dim 0 (contiguous in global memory).
            let x0 = c[0];
            let lo = x0.max(0);
            let hi = (x0 + n[0] as i64).min(map.dims[0] as i64);
            let mut buf = vec![0u8; bx.inner];
            if load {
                for e in 0..n[0] as usize {
                    buf[e * es..(e + 1) * es].copy_from_slice(&fill[..es]);
                }
            }
            if inb && lo < hi {
                let ga = (map.global_address as i64 + off + lo * es as i64) as u64;
                let len = (hi - lo) as usize * es;
                let gloc = self.resolve_run(b, wi, l, pc, ga, len, es)?;
                let at = (lo - x0) as usize * es;
                if load {
                    self.track(b, wi, l, gloc, len, Acc::Read, pc, ga);
                    buf[at..at + len].copy_from_slice(&self.mem_slice(b, gloc)[..len]);
                } else {
                    let s = self.mem_slice(b, bx.sloc);
                    for (k, v) in buf[at..at + len].iter_mut().enumerate() {
                        let lin = (row as usize * bx.pitch + at + k) as u64;
                        *v = s[(swizzle(smem + lin, mode) - smem) as usize];
                    }
                    self.store_box_run(b, wi, l, pc, gloc, ga, &buf[at..at + len], red);
                }
            }
            if load {
                for (k, v) in buf.iter().enumerate() {
                    let lin = (row as usize * bx.pitch + k) as u64;
                    writes.push(((swizzle(smem + lin, mode) - smem) as usize, *v));
                }
            }
        }
        Some(writes)
    }

    /// One in-bounds run of a TMA store's row into global memory at `gloc` (address `ga`): written, or
    /// with `red` reduced element by element (each element its own relaxed atomic, PTX ISA
    /// `cp.reduce.async.bulk.tensor`).
    #[allow(clippy::too_many_arguments)]
    fn store_box_run(
        &mut self,
        b: &mut Block,
        wi: usize,
        l: usize,
        pc: u32,
        gloc: super::Loc,
        ga: u64,
        data: &[u8],
        red: Option<(super::ptx::AtomOp, super::ptx::PtxType)>,
    ) {
        let len = data.len();
        match red {
            None => {
                self.track(b, wi, l, gloc, len, Acc::Write, pc, ga);
                self.mem_slice(b, gloc)[..len].copy_from_slice(data);
            }
            Some((op, ty)) => {
                self.track(b, wi, l, gloc, len, Acc::Atomic, pc, ga);
                let es = ty.size();
                for k in (0..len).step_by(es) {
                    let x = super::exec_fast::read_le(data, k, es);
                    let at = super::offset_loc(gloc, k);
                    let old = self.load(b, at, es);
                    self.store(b, at, es, super::atomic_op(op, ty, old, x, 0));
                }
            }
        }
    }

    /// A loaded box's bytes into every block of `targets` (this one and, for a multicast, the others of the
    /// cluster), each followed by `complete_tx` of the box's bytes on its mbarrier at offset `mb`.
    #[allow(clippy::too_many_arguments)]
    fn deliver_box(
        &mut self,
        b: &mut Block,
        wi: usize,
        l: usize,
        pc: u32,
        bx: &BoxCopy,
        targets: u32,
        mb: u32,
        writes: &[(usize, u8)],
    ) -> bool {
        let bytes = bx.map.box_bytes() as i64;
        let smem_off = (bx.smem & 0xFF_FFFF) as usize;
        let deliver = targets & (1 << b.crank) != 0;
        if deliver {
            let s = self.mem_slice(b, bx.sloc);
            for &(o, v) in writes {
                s[o] = v;
            }
        }
        for r in 0..self.cluster_size() {
            if targets & (1 << r) == 0 || r == b.crank {
                continue;
            }
            // Another block of the cluster: the same bytes, and complete_tx on its mbarrier.
            let ok = match self.remote.get_mut(r as usize).and_then(|m| m.as_mut()) {
                Some(m) if smem_off + bx.region <= m.len() => {
                    for &(o, v) in writes {
                        m[smem_off + o] = v;
                    }
                    true
                }
                _ => false,
            };
            let tx_ok = ok
                && self
                    .remote_mbar_mut(r as usize, mb)
                    .is_some_and(|m| m.remote_update(0, -bytes).is_ok());
            if !tx_ok {
                let msg = format!(
                    "multicast to block rank {r}: its shared memory or its mbarrier at offset {mb:#x} is not there (initialised?)"
                );
                self.fault(b, wi, Some(l as u32), pc, FaultKind::MbarrierMisuse, msg);
                return false;
            }
        }
        if deliver {
            return self.mbar_complete_tx(b, wi, l, pc, mb, bytes);
        }
        true
    }

    /// `stmatrix.sync.aligned.m8n8.xN(.trans).shared.b16`: lane l's register i holds row l/4, columns
    /// 2(l%4), 2(l%4)+1 of matrix i (its transpose with `.trans`); lanes 8i..8i+7 give the row addresses of
    /// matrix i.
    pub(super) fn exec_stmatrix(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        n: usize,
        trans: bool,
    ) -> bool {
        let m = self.m;
        let args = &m.code[pc as usize].args;
        let srcs = args[1].elements();
        let mut rows = [[[0u16; 8]; 8]; 4];
        for l in 0..32usize {
            let (g, t) = (l >> 2, l & 3);
            for (i, s) in srcs.iter().enumerate().take(n) {
                let v = self.val(b, w, wi, s, l);
                let (lo, hi) = (v as u16, (v >> 16) as u16);
                if trans {
                    rows[i][2 * t][g] = lo;
                    rows[i][2 * t + 1][g] = hi;
                } else {
                    rows[i][g][2 * t] = lo;
                    rows[i][g][2 * t + 1] = hi;
                }
            }
        }
        for (i, mat) in rows.iter().enumerate().take(n) {
            for (r, row) in mat.iter().enumerate() {
                let l = i * 8 + r;
                let a = self.operand_addr(b, w, wi, &args[0], l, false);
                let a = if (super::SHARED_WINDOW..super::SHARED_WINDOW + super::WINDOW).contains(&a)
                {
                    a - super::SHARED_WINDOW
                } else {
                    a
                };
                let loc = match self.resolve(b, wi, l, Space::Shared, a, 16, pc) {
                    Some(x) => x,
                    None => return false,
                };
                self.track(b, wi, l, loc, 16, Acc::Write, pc, a);
                let s = self.mem_slice(b, loc);
                for (c, v) in row.iter().enumerate() {
                    s[2 * c..2 * c + 2].copy_from_slice(&v.to_le_bytes());
                }
            }
            self.finish_access(pc);
        }
        true
    }
}
