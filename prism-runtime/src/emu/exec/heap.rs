//! The device heap behind `malloc` / `free` (and C++ `new` / `delete`, which nvcc lowers to them): the
//! CUDA device runtime's functions that nvcc declares `.extern .func`. The heap is one allocation of the
//! emulator's global memory, made on the first launch of a module that calls them and kept across launches
//! (a block allocated by one kernel may be used and freed by a later one, as on the GPU); its size is the
//! CUDA default for `cudaLimitMallocHeapSize`. A launch that reaches `malloc` or `free` runs its blocks on
//! one OS thread (the heap is shared state).

use super::*;

/// Bytes of the device heap (CUDA's default `cudaLimitMallocHeapSize`, 8 MiB).
pub const DEVICE_HEAP_BYTES: u64 = 8 << 20;
/// `malloc`'s alignment (CUDA's device `malloc` returns 16-byte aligned blocks).
const HEAP_ALIGN: u64 = 16;

/// First-fit allocator over `[base, base + size)`.
#[derive(Debug, Clone)]
pub(crate) struct DeviceHeap {
    base: u64,
    /// Free ranges (offset, bytes), sorted and coalesced.
    free: Vec<(u64, u64)>,
    /// Live blocks: offset → bytes.
    live: std::collections::BTreeMap<u64, u64>,
}

impl DeviceHeap {
    pub(crate) fn new(base: u64, size: u64) -> DeviceHeap {
        DeviceHeap {
            base,
            free: vec![(0, size)],
            live: Default::default(),
        }
    }

    /// The heap's first address.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// The size of the live block at `addr`, if there is one.
    pub(crate) fn block_size(&self, addr: u64) -> Option<u64> {
        self.live.get(&addr.wrapping_sub(self.base)).copied()
    }

    /// A block of at least `n` bytes, or `None` when no free range is large enough (`malloc` returns
    /// NULL, as on the GPU when the heap is exhausted).
    pub(crate) fn malloc(&mut self, n: u64) -> Option<u64> {
        let n = n.max(1).checked_next_multiple_of(HEAP_ALIGN)?;
        let i = self.free.iter().position(|&(_, len)| len >= n)?;
        let (off, len) = self.free[i];
        if len == n {
            self.free.remove(i);
        } else {
            self.free[i] = (off + n, len - n);
        }
        self.live.insert(off, n);
        Some(self.base + off)
    }

    /// Returns the block at `addr` (`free(NULL)` does nothing); an address `malloc` did not return, or
    /// one already freed, is an error.
    pub(crate) fn free(&mut self, addr: u64) -> Result<(), String> {
        if addr == 0 {
            return Ok(());
        }
        let off = addr.wrapping_sub(self.base);
        let Some(n) = self.live.remove(&off) else {
            return Err(format!(
                "free({addr:#x}): not a block malloc returned, or freed already"
            ));
        };
        let i = self.free.partition_point(|&(o, _)| o < off);
        self.free.insert(i, (off, n));
        // Coalesce with the next range, then with the previous one.
        if i + 1 < self.free.len() && self.free[i].0 + self.free[i].1 == self.free[i + 1].0 {
            self.free[i].1 += self.free[i + 1].1;
            self.free.remove(i + 1);
        }
        if i > 0 && self.free[i - 1].0 + self.free[i - 1].1 == self.free[i].0 {
            self.free[i - 1].1 += self.free[i].1;
            self.free.remove(i);
        }
        Ok(())
    }
}

/// Whether `name` is a device-runtime function the heap implements.
pub(crate) fn is_heap_function(name: &str) -> bool {
    matches!(name, "malloc" | "free")
}

impl<'a> L<'a> {
    /// `malloc(size)` / `free(ptr)` for the lanes of `exec`, in lane order.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_heap(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        exec: u32,
        name: &str,
        rets: &[Operand],
        cargs: &[Operand],
    ) -> Step {
        let mut mm = exec;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let a = cargs.first().map_or(0, |o| self.call_arg(b, w, wi, l, o));
            if name == "malloc" {
                let p = self.heap.as_mut().and_then(|h| h.malloc(a)).unwrap_or(0);
                if p != 0 {
                    self.forget_accesses(p);
                }
                if let Some(r) = rets.first() {
                    self.set_ret(b, w, wi, l, r, p, 8);
                }
            } else {
                if a != 0 {
                    self.forget_accesses(a);
                }
                let r = match self.heap.as_mut() {
                    Some(h) => h.free(a),
                    None if a == 0 => Ok(()),
                    None => Err(format!("free({a:#x}) before any malloc")),
                };
                if let Err(msg) = r {
                    self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
                    return Step::Stop;
                }
            }
        }
        Self::advance(w, exec);
        Step::Continue
    }

    /// The race detector forgets the accesses to the heap block at `addr`: the heap orders a block's
    /// next owner after its last (a thread writing memory another thread freed is no race).
    fn forget_accesses(&mut self, addr: u64) {
        let Some(h) = &self.heap else { return };
        let (Some(n), base) = (h.block_size(addr), h.base()) else {
            return;
        };
        let launch = self.launch_id;
        if let Some(a) = self.allocs.iter_mut().find(|a| a.base == base) {
            if a.shadow_launch == launch {
                a.shadow.forget((addr - base) as usize, n as usize);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_reuses_and_coalesces() {
        let mut h = DeviceHeap::new(0x1000, 256);
        let a = h.malloc(10).unwrap();
        let b = h.malloc(16).unwrap();
        let c = h.malloc(100).unwrap();
        assert_eq!((a, b, c), (0x1000, 0x1010, 0x1020));
        assert_eq!(h.malloc(200), None, "only 256 - 144 bytes are left");
        h.free(b).unwrap();
        assert_eq!(h.malloc(16), Some(0x1010), "the freed block is reused");
        h.free(0x1010).unwrap();
        h.free(a).unwrap();
        h.free(c).unwrap();
        assert_eq!(h.free, vec![(0, 256)], "everything coalesces back");
        assert!(h.free(c).is_err(), "double free");
        assert!(h.free(0x1008).is_err(), "not a block");
        assert!(h.free(0).is_ok(), "free(NULL)");
        assert_eq!(h.malloc(256), Some(0x1000));
        assert_eq!(h.malloc(0), None);
    }
}
