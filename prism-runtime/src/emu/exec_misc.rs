//! Reserved shared memory, and instruction forms that need no block state beyond the operands.
//!
//! Reserved shared memory: the driver reserves 1 KiB of each block's shared memory for system use on sm_80
//! and later (`cudaDevAttrReservedSharedMemoryPerBlock`; 228 KiB per SM of which 227 KiB per block for the
//! kernel), and PTX ISA 7.6 added the special registers `%reserved_smem_offset_begin`, `_end`, `_cap`
//! (start, end and capacity of that region in the block's shared window) and `%reserved_smem_offset_<2>`
//! (offsets of two slots inside it); ISA 8.1 added `%aggr_smem_size` (static + dynamic + reserved).
//! Cooperative groups uses slot 1 as the scratch of tiles wider than a warp (at least 288 bytes,
//! `cooperative_groups/details/memory.h`). The emulator models the region as 1 KiB at the start of the
//! window, before the kernel's own variables (which then start at offset 1024), with slot 0 at 0 and slot 1
//! at 512 — but only in modules that read one of these registers: a module that cannot name the region
//! cannot observe it, and leaving it out keeps every other module's layout and per-block cost unchanged.
//! The hardware's slot offsets are not documented (UNCONFIRMED: this layout is the emulator's own).

use super::*;

/// Size of the reserved region when a module reads a reserved-shared-memory register.
pub(super) const RESERVED_SMEM: u32 = 1024;
/// Offset of `%reserved_smem_offset_1` in the region (the cooperative-groups scratch).
const RESERVED_SLOT1: u32 = 512;

/// Reserved shared bytes of a launch of `m`: [`RESERVED_SMEM`] if any instruction reads a
/// reserved-shared-memory register (or `%aggr_smem_size`), else 0.
pub(super) fn reserved_bytes(m: &Module) -> u32 {
    fn names(o: &Operand) -> bool {
        match o {
            Operand::Sreg(Sreg::Reserved(_)) => true,
            Operand::Vec(v) | Operand::List(v) => v.iter().any(names),
            _ => false,
        }
    }
    if m.code.iter().any(|i| i.args.iter().any(names)) {
        RESERVED_SMEM
    } else {
        0
    }
}

impl L<'_> {
    /// The special registers of this module's concern.
    pub(super) fn sreg_misc(&self, s: Sreg) -> u64 {
        let r = self.reserved as u64;
        match s {
            Sreg::Reserved(0) | Sreg::Reserved(3) => 0,
            Sreg::Reserved(1) | Sreg::Reserved(2) => r,
            Sreg::Reserved(4) => RESERVED_SLOT1.min(self.reserved) as u64,
            Sreg::Reserved(_) => self.smem_size as u64,
            Sreg::ClockHi => self.clock >> 32,
            Sreg::ExplicitCluster => (self.cluster_size() > 1) as u64,
            _ => 0,
        }
    }
}

impl L<'_> {
    /// Whether an earlier lane of this store issue (`exec`, lanes in increasing order) wrote the same values
    /// to the same address. Such a lane's write is then not checked for races: the CUDA Programming Guide
    /// defines a warp instruction whose lanes write one location (one of the writes lands), so identical
    /// values give a defined result — cooperative groups stores a warp's redux result from every lane
    /// (`multi_warp_scratch`). Different values still race (which lane wins is undefined).
    pub(super) fn same_store_as_earlier_lane(
        &mut self,
        exec: u32,
        lane: usize,
        addr: u64,
        vals: &[u64],
    ) -> bool {
        if !self.cfg.check_races || vals.len() > 4 {
            return false;
        }
        if exec & ((1u32 << lane) - 1) == 0 {
            self.same_st.clear();
        }
        let mut v = [0u64; 4];
        v[..vals.len()].copy_from_slice(vals);
        if self.same_st.iter().any(|&(a, w)| a == addr && w == v) {
            return true;
        }
        self.same_st.push((addr, v));
        false
    }
}

/// How many of the releasing thread's synchronization instances before its release an acquirer inherits.
const RELEASE_HOPS: usize = 8;

impl L<'_> {
    /// The race detector's key of a memory location (None: not race-checked).
    fn sync_key(&self, loc: Loc) -> Option<(bool, u64)> {
        match loc {
            Loc::Global(i, o) => Some((true, self.allocs[i].base + o as u64)),
            Loc::Shared(o) => Some((false, o as u64)),
            _ => None,
        }
    }

    /// A `.release` store or atomic (`st.release`, `red.or.release`, `atom.acq_rel`, ...): a completed
    /// synchronization instance the thread joins, remembered as the thread's latest release on `loc`.
    pub(super) fn release(&mut self, b: &mut Block, wi: usize, lane: usize, loc: Loc) {
        let Some(key) = self.sync_key(loc).filter(|_| self.cfg.check_races) else {
            return;
        };
        let t = self.tid_of(wi, lane);
        let i = b.inst.len() as u32;
        b.inst.push(Inst {
            waiters: vec![0; self.nthreads.div_ceil(64) as usize],
            completed: true,
        });
        b.thr_inst[t as usize].push(i);
        let rel = b.relacq.entry(key).or_default();
        match rel.iter_mut().find(|x| x.0 == t) {
            Some(x) => x.1 = i,
            None => rel.push((t, i)),
        }
    }

    /// An `.acquire` load or atomic on `loc`: the thread is ordered after every earlier release on `loc`
    /// (each RMW extends the release sequence, and every access sees the latest value), and — one hop of
    /// transitivity — after the last [`RELEASE_HOPS`] barriers the releasing thread waited on before its
    /// release (cooperative groups' tiles wider than a warp publish a warp's writes with `bar.warp.sync` and
    /// one lane's `red.release`).
    pub(super) fn acquire(&mut self, b: &mut Block, wi: usize, lane: usize, loc: Loc) {
        let Some(key) = self.sync_key(loc).filter(|_| self.cfg.check_races) else {
            return;
        };
        let t = self.tid_of(wi, lane) as usize;
        let Some(rel) = b.relacq.get(&key) else {
            return;
        };
        let bit = |x: usize| (x / 64, 1u64 << (x % 64));
        let (tw, tb) = bit(t);
        let mut got = Vec::new();
        for &(u, r) in rel {
            let u = u as usize;
            if u == t {
                continue;
            }
            b.inst[r as usize].waiters[tw] |= tb;
            got.push(r);
            let list = &b.thr_inst[u];
            let pos = list.binary_search(&r).unwrap_or(list.len());
            let (uw, ub) = bit(u);
            for &j in &list[pos.saturating_sub(RELEASE_HOPS)..pos] {
                let inst = &mut b.inst[j as usize];
                if inst.completed && inst.waiters[uw] & ub != 0 {
                    inst.waiters[tw] |= tb;
                    got.push(j);
                }
            }
        }
        got.sort_unstable();
        got.dedup();
        remember(b.acquired.entry(t as u32).or_default(), &got);
    }
}

/// How many acquired instances a thread remembers for [`L::collective_orders`].
const ACQUIRED_KEPT: usize = 64;

impl L<'_> {
    /// A `shfl/vote/match/redux.sync` the lanes of `exec` executed together passes on what each member
    /// acquired (`acquire`, the last [`ACQUIRED_KEPT`] instances) to all of them: cooperative groups has one
    /// lane acquire a flag and broadcast it with `shfl.sync`, after which the whole warp reads the published
    /// data. The PTX memory model promises ordering for `bar.warp.sync` only; the hardware's warp executes
    /// the collective together, so this is what it does.
    pub(super) fn collective_orders(&mut self, b: &mut Block, wi: usize, exec: u32) {
        if !self.cfg.check_races || b.acquired.is_empty() || exec.count_ones() < 2 {
            return;
        }
        let members: Vec<usize> = (0..32)
            .filter(|l| exec & (1 << l) != 0)
            .map(|l| self.tid_of(wi, l) as usize)
            .collect();
        let mut got: Vec<u32> = members
            .iter()
            .filter_map(|t| b.acquired.get(&(*t as u32)))
            .flatten()
            .copied()
            .collect();
        if got.is_empty() {
            return;
        }
        got.sort_unstable();
        got.dedup();
        for &j in &got {
            for &t in &members {
                b.inst[j as usize].waiters[t / 64] |= 1 << (t % 64);
            }
        }
        for &t in &members {
            remember(b.acquired.entry(t as u32).or_default(), &got);
        }
    }
}

/// Adds `new` to a thread's acquired instances, keeping the last [`ACQUIRED_KEPT`].
fn remember(list: &mut Vec<u32>, new: &[u32]) {
    for &j in new {
        if !list.contains(&j) {
            list.push(j);
        }
    }
    if list.len() > ACQUIRED_KEPT {
        list.drain(..list.len() - ACQUIRED_KEPT);
    }
}
