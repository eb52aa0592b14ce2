//! Memory access: generic and state-space addresses resolved to a location (bounds faults), raw loads
//! and stores, strings read from device memory.

use super::*;

impl L<'_> {
    /// Resolves an address in a state space for one lane; checks bounds and alignment.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn resolve(
        &mut self,
        b: &Block,
        wi: usize,
        lane: usize,
        space: Space,
        addr: u64,
        size: usize,
        pc: u32,
    ) -> Option<Loc> {
        let tid = self.tid_of(wi, lane) as usize;
        let (sp, a) = match space {
            Space::Generic => {
                if (SHARED_WINDOW..SHARED_WINDOW + WINDOW).contains(&addr) {
                    (Space::Shared, addr - SHARED_WINDOW)
                } else if (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW).contains(&addr) {
                    (Space::Local, addr - LOCAL_WINDOW)
                } else if (PARAM_WINDOW..PARAM_WINDOW + WINDOW).contains(&addr) {
                    (Space::Param, addr - PARAM_WINDOW)
                } else {
                    (Space::Global, addr)
                }
            }
            Space::Const => (Space::Global, addr),
            // Shared and local addresses are 32 bits: `[%r + 128]` with %r = -64 (as nvcc emits for a loop
            // that starts below its base) wraps around, as the hardware's address arithmetic does.
            Space::Shared | Space::Local => (space, addr & 0xFFFF_FFFF),
            s => (s, addr),
        };
        if size > 1 && a % (size.min(16) as u64) != 0 {
            self.fault(
                b,
                wi,
                Some(lane as u32),
                pc,
                FaultKind::Misaligned,
                format!(
                    "misaligned {}-byte {:?} access at address 0x{:x}",
                    size, sp, addr
                ),
            );
            return None;
        }
        match sp {
            Space::Shared => self.resolve_shared(b, wi, lane, a, size, pc),
            Space::Local => {
                if let Some(i) = self.local_index(b, tid, a, size) {
                    Some(Loc::Local(i))
                } else {
                    self.fault(b, wi, Some(lane as u32), pc, FaultKind::OutOfBounds, format!("local access of {} bytes at offset 0x{:x} outside the thread's {} bytes of local memory{}", size, a, self.local_size, if b.local.len() > self.local_size * self.nthreads as usize { " (or its recursive calls' frames)" } else { "" }));
                    None
                }
            }
            Space::Param => {
                if a as usize + size <= self.params.len() {
                    Some(Loc::Param(a as usize))
                } else {
                    self.fault(b, wi, Some(lane as u32), pc, FaultKind::OutOfBounds, format!("kernel parameter access at offset {} outside the {}-byte parameter buffer", a, self.params.len()));
                    None
                }
            }
            _ => {
                // global
                let i = {
                    let c = self.last_alloc;
                    if c < self.allocs.len()
                        && a >= self.allocs[c].base
                        && a.saturating_add(size as u64)
                            <= self.allocs[c].base + self.allocs[c].data.len() as u64
                    {
                        Some(c)
                    } else {
                        let i = self.allocs.partition_point(|x| x.base <= a);
                        if i > 0
                            && a.saturating_add(size as u64)
                                <= self.allocs[i - 1].base + self.allocs[i - 1].data.len() as u64
                        {
                            Some(i - 1)
                        } else {
                            None
                        }
                    }
                };
                match i {
                    Some(i) => {
                        self.last_alloc = i;
                        Some(Loc::Global(i, (a - self.allocs[i].base) as usize))
                    }
                    None => {
                        let msg = if a == 0 {
                            "global access through a null pointer".to_string()
                        } else {
                            format!("global access of {} bytes at 0x{:x} is not inside a live allocation", size, a)
                        };
                        self.fault(b, wi, Some(lane as u32), pc, FaultKind::OutOfBounds, msg);
                        None
                    }
                }
            }
        }
    }

    /// [`Self::resolve`] for a shared (or shared::cluster) offset `a`, bounds checked.
    #[inline]
    fn resolve_shared(
        &mut self,
        b: &Block,
        wi: usize,
        lane: usize,
        a: u64,
        size: usize,
        pc: u32,
    ) -> Option<Loc> {
        // Past every shared window: where a Prism kernel's bounds check (SHARED-INDEX) sends an
        // index out of range of its shared allocation (the GPU refuses the address too).
        if a >= 0xFFFF_FF00 {
            let msg = format!("shared address 0x{a:x} is past every shared window: an index out of bounds of a shared allocation (a Prism kernel's SHARED-INDEX check sends such accesses here)");
            self.fault(b, wi, Some(lane as u32), pc, FaultKind::OutOfBounds, msg);
            return None;
        }
        // A shared::cluster address made by `mapa` carries the target block's rank + 1 in bits
        // 24..29; rank + 1 = 0 (or this block's own rank) is this block's shared memory.
        let tag = ((a >> 24) & 0x3F) as u32;
        let a = a & 0xFF_FFFF;
        let csize = self.cluster_size();
        if tag != 0 && tag - 1 != b.crank {
            let r = tag - 1;
            if r >= csize {
                let msg = format!("shared::cluster address names block rank {r}, but the cluster has {csize} blocks");
                self.fault(b, wi, Some(lane as u32), pc, FaultKind::OutOfBounds, msg);
                return None;
            }
            if a as usize + size > self.smem_size {
                let msg = format!("shared::cluster access of {size} bytes at offset 0x{a:x} of block rank {r}, outside its {} bytes", self.smem_size);
                self.fault(b, wi, Some(lane as u32), pc, FaultKind::OutOfBounds, msg);
                return None;
            }
            // Distributed shared memory lives as long as its block: a block must not exit
            // while others of its cluster may still access it (CUDA Programming Guide,
            // distributed shared memory), so an access after that is undefined behaviour.
            if (self.remote_exited >> r) & 1 != 0 {
                let msg = format!("shared::cluster access of {size} bytes at offset 0x{a:x} of block rank {r} of the cluster, which has exited: its shared memory no longer exists (keep every block until its peers are done with it, e.g. a barrier.cluster before exit)");
                self.fault(
                    b,
                    wi,
                    Some(lane as u32),
                    pc,
                    FaultKind::InvalidOperation,
                    msg,
                );
                return None;
            }
            return Some(Loc::Remote(r as usize, a as usize));
        }
        if a as usize + size <= self.smem_size {
            Some(Loc::Shared(a as usize))
        } else {
            self.fault(
                b,
                wi,
                Some(lane as u32),
                pc,
                FaultKind::OutOfBounds,
                format!("shared access of {} bytes at offset 0x{:x} outside the block's {} bytes of shared memory", size, a, self.smem_size),
            );
            None
        }
    }

    /// Reads `len` bytes at a generic address for one lane, or `None` (a fault is recorded) when it is not
    /// mapped.
    pub(super) fn read_generic(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        addr: u64,
        len: usize,
        pc: u32,
    ) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(len);
        for i in 0..len as u64 {
            let loc = self.resolve(b, wi, lane, Space::Generic, addr + i, 1, pc)?;
            out.push(self.load(b, loc, 1) as u8);
        }
        Some(out)
    }

    /// The NUL-terminated string at a generic address (at most 4 KiB).
    pub(super) fn read_c_string(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        addr: u64,
        pc: u32,
    ) -> Option<String> {
        let mut bytes = Vec::new();
        for i in 0..4096u64 {
            let loc = self.resolve(b, wi, lane, Space::Generic, addr + i, 1, pc)?;
            match self.load(b, loc, 1) as u8 {
                0 => break,
                c => bytes.push(c),
            }
        }
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    pub(super) fn mem_slice<'b>(&'b mut self, b: &'b mut Block, loc: Loc) -> &'b mut [u8] {
        match loc {
            Loc::Global(i, o) => &mut self.allocs[i].data[o..],
            Loc::Shared(o) => &mut b.shared[o..],
            Loc::Remote(r, o) => match self.remote.get_mut(r).and_then(|m| m.as_mut()) {
                Some(m) => &mut m[o..],
                None => &mut [],
            },
            Loc::Local(o) => &mut b.local[o..],
            Loc::Param(o) => &mut self.params[o..],
        }
    }

    pub(super) fn load(&mut self, b: &mut Block, loc: Loc, size: usize) -> u64 {
        exec_fast::read_le(self.mem_slice(b, loc), 0, size)
    }

    pub(super) fn store(&mut self, b: &mut Block, loc: Loc, size: usize, v: u64) {
        exec_fast::write_le(self.mem_slice(b, loc), 0, size, v)
    }
}

pub(super) fn offset_loc(l: Loc, k: usize) -> Loc {
    match l {
        Loc::Global(i, o) => Loc::Global(i, o + k),
        Loc::Shared(o) => Loc::Shared(o + k),
        Loc::Local(o) => Loc::Local(o + k),
        Loc::Param(o) => Loc::Param(o + k),
        Loc::Remote(r, o) => Loc::Remote(r, o + k),
    }
}
