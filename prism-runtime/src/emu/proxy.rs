//! The async proxy, checked (part of race detection: off with `check_races = false`, `--no-races`).
//!
//! TMA copies and wgmma access shared memory through the *async proxy*; ordinary loads and stores use the
//! generic proxy (PTX ISA §9.7.13.4). Two mistakes that work by luck on today's hardware
//! are reported as `DataRace` faults:
//!
//! 1. Shared memory written through the generic proxy and then read by the async proxy (a TMA store or a
//!    plain bulk store of an epilogue tile, a wgmma operand written with `st.shared`) with no
//!    `fence.proxy.async` by the writer between the write and the read.
//! 2. Shared memory rewritten (by a thread or by a TMA load) while an async-proxy read of it may still be in
//!    flight: a TMA store (or `.bulk_group` bulk store or reduction) before its thread's
//!    `cp.async.bulk.wait_group(.read)`, a wgmma operand before the
//!    `wgmma.wait_group` that retires it.
//!
//! State per block: for each shared byte, the thread that last wrote it through the generic proxy and that
//! thread's fence count at the time; per thread, how many `fence.proxy.async` it has executed; the shared
//! ranges async reads still hold, with what releases them.

use super::{Block, FaultKind, L};

/// What releases an in-flight async read of shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Holder {
    /// A TMA store or `.bulk_group` bulk store or reduction issued by thread `tid`, in its bulk group `group`
    /// (released by its `wait_group`).
    Store { tid: u32, group: u32 },
    /// wgmma op `op` of warpgroup `g` (released when a warp retires it).
    Wgmma { g: u32, op: u32 },
}

#[derive(Default)]
pub(super) struct ProxyState {
    /// Per shared byte: generic-proxy writer (tid + 1; 0 = none since the last async write).
    writer: Vec<u32>,
    /// Per shared byte: the writer's fence count when it wrote.
    epoch: Vec<u32>,
    /// Per thread: `fence.proxy.async` executed so far.
    fences: Vec<u32>,
    /// Per thread: bulk groups committed so far, and stores not yet committed (their group is the next).
    committed: Vec<u32>,
    /// Shared ranges `[start, end)` held by in-flight async reads.
    held: Vec<(usize, usize, Holder)>,
}

impl ProxyState {
    fn ensure(&mut self, smem: usize, nthreads: usize) {
        if self.writer.len() < smem {
            self.writer.resize(smem, 0);
            self.epoch.resize(smem, 0);
        }
        if self.fences.len() < nthreads {
            self.fences.resize(nthreads, 0);
            self.committed.resize(nthreads, 0);
        }
    }

    /// A `fence.proxy.async` by thread `tid`.
    pub(super) fn fence(&mut self, tid: usize, nthreads: usize) {
        self.ensure(0, nthreads);
        self.fences[tid] += 1;
    }

    /// `cp.async.bulk.commit_group` by `tid`.
    pub(super) fn commit(&mut self, tid: usize, nthreads: usize) {
        self.ensure(0, nthreads);
        self.committed[tid] += 1;
    }

    /// `cp.async.bulk.wait_group(.read) n` by `tid`: stores of all but its newest `n` groups are done.
    pub(super) fn wait(&mut self, tid: usize, n: u32, nthreads: usize) {
        self.ensure(0, nthreads);
        let done_below = self.committed[tid].saturating_sub(n);
        self.held.retain(|&(_, _, h)| match h {
            Holder::Store { tid: t, group } => !(t as usize == tid && group < done_below),
            _ => true,
        });
    }

    /// wgmma op `op` of warpgroup `g` has been retired.
    pub(super) fn retire_wgmma(&mut self, g: u32, op: u32) {
        self.held.retain(|&(_, _, h)| h != Holder::Wgmma { g, op });
    }

    /// No asynchronous read holds shared memory (a generic write cannot fault then).
    pub(super) fn holds_none(&self) -> bool {
        self.held.is_empty()
    }

    /// The group a TMA store issued now by `tid` belongs to.
    pub(super) fn store_group(&mut self, tid: usize, nthreads: usize) -> u32 {
        self.ensure(0, nthreads);
        self.committed[tid]
    }
}

impl L<'_> {
    /// A write of `[o, o + len)` of this block's shared memory by thread `tid` (`generic`: through the
    /// generic proxy; else a TMA load). A race is reported and the write goes on: stopping the copy would
    /// leave its mbarrier without its bytes, a deadlock the program does not have.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn proxy_write(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        pc: u32,
        o: usize,
        len: usize,
        generic: bool,
    ) {
        if !self.cfg.check_races {
            return;
        }
        let tid = self.tid_of(wi, lane) as usize;
        let nthreads = self.nthreads as usize;
        let p = &mut b.proxy;
        p.ensure(self.smem_size, nthreads);
        if let Some(&(s, e, h)) = p.held.iter().find(|&&(s, e, _)| o < e && s < o + len) {
            let what = match h {
                Holder::Store { tid, .. } => format!(
                    "a TMA store or bulk store by thread {tid} still reads it (its cp.async.bulk.wait_group.read comes later)"
                ),
                Holder::Wgmma { g, .. } => format!(
                    "a wgmma of warpgroup {g} still reads it (before the wgmma.wait_group that retires it)"
                ),
            };
            let msg = format!(
                "{} write of shared bytes {o:#x}..{:#x} while an asynchronous read of {s:#x}..{e:#x} is in flight: {what}",
                if generic { "a" } else { "a TMA" },
                o + len
            );
            self.race_fault(b, wi, lane, pc, msg);
        }
        let p = &mut b.proxy;
        let (w, ep) = if generic {
            (tid as u32 + 1, p.fences[tid])
        } else {
            (0, 0)
        };
        let end = (o + len).min(p.writer.len());
        for i in o.min(end)..end {
            p.writer[i] = w;
            p.epoch[i] = ep;
        }
    }

    /// Reports a `DataRace` of the async proxy at `pc`, once per instruction (as the race detector does);
    /// execution goes on.
    fn race_fault(&mut self, b: &Block, wi: usize, lane: usize, pc: u32, msg: String) {
        if self.race_seen.insert(pc) {
            self.fault(b, wi, Some(lane as u32), pc, FaultKind::DataRace, msg);
        }
    }

    /// `proxy_write` through the generic proxy of `size` bytes at `offs[l]` by each lane `l` of `lanes`
    /// of warp `wi`, in lane order, while no asynchronous read holds shared memory (`holds_none`: none
    /// of them can fault).
    pub(super) fn proxy_write_lanes(
        &mut self,
        b: &mut Block,
        wi: usize,
        offs: &[usize; 32],
        lanes: u32,
        size: usize,
    ) {
        let nthreads = self.nthreads as usize;
        let p = &mut b.proxy;
        p.ensure(self.smem_size, nthreads);
        debug_assert!(p.held.is_empty());
        let mut mm = lanes;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let tid = self.tid_of(wi, l) as usize;
            let (w, ep) = (tid as u32 + 1, p.fences[tid]);
            let o = offs[l];
            let end = (o + size).min(p.writer.len());
            let start = o.min(end);
            p.writer[start..end].fill(w);
            p.epoch[start..end].fill(ep);
        }
    }

    /// An async-proxy read of shared bytes `addrs` (a TMA store's box, a wgmma operand) on behalf of
    /// `holder`: every byte a thread wrote through the generic proxy must have been fenced by that thread
    /// since (else a race, reported; the read goes on). The bytes stay held by `holder` until it is
    /// released.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn proxy_async_read(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        pc: u32,
        lo: usize,
        hi: usize,
        holder: Holder,
        what: &str,
    ) {
        if !self.cfg.check_races || lo >= hi {
            return;
        }
        self.proxy_async_check(b, wi, lane, pc, lo, hi, what);
        b.proxy.held.push((lo, hi, holder));
    }

    /// The fence check of an async-proxy read of shared bytes `[lo, hi)` without holding them: for the
    /// copies whose source reads are complete when the instruction completes (here: at issue), the
    /// `.mbarrier::complete_tx::bytes` bulk copies and reductions into shared::cluster memory, whose
    /// mbarrier is in the destination block. A race is reported (the first unfenced byte); the read goes on.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn proxy_async_check(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        pc: u32,
        lo: usize,
        hi: usize,
        what: &str,
    ) {
        if !self.cfg.check_races || lo >= hi {
            return;
        }
        // An async-proxy read of bytes a cp.async still writes (a wgmma operand before the copy's wait) is
        // a race, reported; the read goes on with the values as they are, like a generic one.
        if b.cpa.any() {
            self.cp_async_check(b, wi, lane, pc, lo, hi - lo, what);
        }
        let nthreads = self.nthreads as usize;
        let p = &mut b.proxy;
        p.ensure(self.smem_size, nthreads);
        let end = hi.min(p.writer.len());
        for i in lo.min(end)..end {
            let w = p.writer[i];
            if w != 0 && p.epoch[i] == p.fences[(w - 1) as usize] {
                let msg = format!(
                    "{what} reads shared byte {i:#x} through the async proxy, but thread {} wrote it through the generic proxy with no fence.proxy.async since",
                    w - 1
                );
                self.race_fault(b, wi, lane, pc, msg);
                return;
            }
        }
    }
}
