//! The race detector: per-byte shadow state of shared and global memory, happens-before through
//! barrier instances and atomics, and the bank-conflict count of a warp's shared accesses.

use super::*;

impl L<'_> {
    /// Records an access for counters and checks races.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn track(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        loc: Loc,
        size: usize,
        acc: Acc,
        pc: u32,
        gaddr: u64,
    ) {
        match loc {
            Loc::Global(..) => self.acc_g.push((gaddr, size as u32)),
            Loc::Shared(o) => self.acc_s.push((o as u32, size as u32)),
            _ => {}
        }
        if self.spec.is_some() && self.spec_note(loc, size, acc) {
            return;
        }
        self.check_access(b, wi, lane, loc, size, acc, pc, gaddr);
    }

    /// The race checks of one lane's access (`track` without the counters).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_access(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        loc: Loc,
        size: usize,
        acc: Acc,
        pc: u32,
        gaddr: u64,
    ) {
        if !self.cfg.check_races {
            return;
        }
        match loc {
            Loc::Global(i, o) => {
                let launch = self.launch_id;
                let a = &mut self.allocs[i];
                if a.shadow_launch != launch {
                    a.shadow.reset(a.data.len());
                    a.shadow_launch = launch;
                }
                self.race(b, wi, lane, Some(i), o, size, acc, pc, gaddr);
            }
            Loc::Shared(o) => {
                if b.cpa.any() {
                    self.cp_async_check(b, wi, lane, pc, o, size, acc.name());
                }
                self.race(b, wi, lane, None, o, size, acc, pc, o as u64);
                if acc != Acc::Read && !self.async_write {
                    self.proxy_write(b, wi, lane, pc, o, size, true);
                }
            }
            _ => {}
        }
    }

    /// Whether thread `u`'s access at its epoch `ep_u` is ordered before thread `t` (global ids; `base` is the
    /// first global id of `t`'s block, so `u` is in that block iff `u - base < nthreads`).
    pub(super) fn ordered(
        thr_inst: &[Vec<u32>],
        insts: &[Inst],
        (nthreads, base): (u32, u32),
        u: u32,
        ep_u: u32,
        t: u32,
    ) -> bool {
        let ul = u.wrapping_sub(base);
        if ul >= nthreads {
            return false;
        }
        let ul = ul as usize;
        let tl = (t - base) as usize;
        if ul == tl {
            return true;
        }
        let list = &thr_inst[ul];
        for &i in list.iter().skip(ep_u as usize) {
            let inst = &insts[i as usize];
            if inst.completed && (inst.waiters[tl / 64] >> (tl % 64)) & 1 == 1 {
                return true;
            }
        }
        false
    }

    /// The race check of one lane's access to `off .. off + size` of a global allocation (`alloc`) or of
    /// shared memory (`None`); `addr` is the address the report names.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn race(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        alloc: Option<usize>,
        off: usize,
        size: usize,
        acc: Acc,
        pc: u32,
        addr: u64,
    ) {
        let tl = self.tid_of(wi, lane);
        let t = b.lin * self.nthreads + tl;
        let ep = b.thr_inst[tl as usize].len() as u32;
        let ntb = (self.nthreads, b.lin * self.nthreads);
        let conflict = {
            let (ti, ins) = (&b.thr_inst, &b.inst);
            let sh: &mut [Shadow] = match alloc {
                Some(i) => self.allocs[i].shadow.cells(off, size),
                None => b.sh_shadow.cells(off, size),
            };
            let fo = &b.foreign;
            check_cells(
                sh,
                t,
                ep,
                pc,
                acc,
                &mut LaneOrder {
                    ti,
                    ins,
                    ntb,
                    t,
                    fo,
                },
            )
        };
        if let Some(c) = conflict {
            self.report_race(b, wi, lane, alloc.is_some(), acc, pc, addr, c);
        }
    }

    /// Reports `conflict` (from [`check_cells`]) of lane `lane`'s access at `addr`, once per instruction.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn report_race(
        &mut self,
        b: &Block,
        wi: usize,
        lane: usize,
        global: bool,
        acc: Acc,
        pc: u32,
        addr: u64,
        (u, upc, was_write): Conflict,
    ) {
        if !self.race_seen.insert(pc) {
            return;
        }
        let nt = self.nthreads;
        let tl = self.tid_of(wi, lane);
        let ub = u / nt;
        let ul = u % nt;
        let uline = self.m.code.get(upc as usize).map(|i| i.line).unwrap_or(0);
        let what = acc.name();
        let space = if global { "global" } else { "shared" };
        let msg = format!(
            "data race on {} memory at {}0x{:x}: {} by thread {} conflicts with an unordered {} by thread {} of block #{} at PTX line {} (no barrier between them)",
            space,
            if global { "" } else { "offset " },
            addr,
            what,
            tl,
            if was_write { "write" } else { "read" },
            ul,
            ub,
            uline
        );
        self.fault(b, wi, Some(lane as u32), pc, FaultKind::DataRace, msg);
    }

    /// `atom.cas`/`atom.exch` act as acquire + release on their location (lock words, flags): the
    /// thread is ordered after the accesses the previous cas/exch thread made before its atomic.
    pub(super) fn sync_through_atomic(&mut self, b: &mut Block, wi: usize, lane: usize, loc: Loc) {
        let key = match loc {
            Loc::Global(i, o) => (true, self.allocs[i].base + o as u64),
            Loc::Shared(o) => (false, o as u64),
            _ => return,
        };
        let t = self.tid_of(wi, lane) as usize;
        if let Some(&prev) = b.rel.get(&key) {
            b.inst[prev as usize].waiters[t / 64] |= 1 << (t % 64);
        }
        let i = b.inst.len() as u32;
        b.inst.push(Inst {
            waiters: [0; THREAD_WORDS],
            completed: true,
        });
        b.thr_inst[t].push(i);
        b.rel.insert(key, i);
    }

    pub(super) fn finish_access(&mut self, pc: u32) {
        if !self.acc_g.is_empty() {
            self.scratch.clear();
            for &(a, n) in &self.acc_g {
                let s0 = a >> 5;
                let s1 = (a + n as u64 - 1) >> 5;
                for s in s0..=s1 {
                    self.scratch.push(s);
                }
            }
            self.scratch.sort_unstable();
            self.scratch.dedup();
            let sectors = self.scratch.len() as u64;
            for s in self.scratch.iter_mut() {
                *s >>= 2;
            }
            self.scratch.dedup();
            let lines = self.scratch.len() as u64;
            let p = &mut self.pic[pc as usize];
            p.global_sectors += sectors;
            p.global_transactions += lines;
            p.global_accesses += 1;
            self.acc_g.clear();
        }
        if !self.acc_s.is_empty() {
            let deg = self.bank_degree();
            let p = &mut self.pic[pc as usize];
            p.shared_accesses += 1;
            p.shared_bank_conflict_degree_sum += deg;
            self.acc_s.clear();
        }
    }

    pub(super) fn bank_degree(&mut self) -> u64 {
        self.scratch.clear();
        for &(a, n) in &self.acc_s {
            let w0 = a >> 2;
            let w1 = (a + n - 1) >> 2;
            for w in w0..=w1 {
                self.scratch.push(w as u64);
            }
        }
        self.scratch.sort_unstable();
        self.scratch.dedup();
        let mut banks = [0u32; 32];
        for w in &self.scratch {
            banks[(*w % 32) as usize] += 1;
        }
        banks.iter().copied().max().unwrap_or(1).max(1) as u64
    }
}

/// The happens-before test of one access: whether thread `u`'s access at its epoch `ep_u` (global id)
/// is ordered before it.
pub(super) trait Order {
    /// `u`'s access at epoch `ep_u` is ordered before this access.
    fn ordered(&mut self, u: u32, ep_u: u32) -> bool;
}

/// [`Order`] of thread `t`'s access by [`L::ordered`] (one lane).
pub(super) struct LaneOrder<'a> {
    pub(super) ti: &'a [Vec<u32>],
    pub(super) ins: &'a [Inst],
    /// Threads per block and the block's first global thread id.
    pub(super) ntb: (u32, u32),
    pub(super) t: u32,
    /// What the block acquired from other blocks.
    pub(super) fo: &'a ForeignMap,
}

impl Order for LaneOrder<'_> {
    #[inline(always)]
    fn ordered(&mut self, u: u32, ep_u: u32) -> bool {
        L::ordered(self.ti, self.ins, self.ntb, u, ep_u, self.t)
            || foreign_ordered(self.fo, self.ntb.0, u, ep_u, |t, e| {
                L::ordered(self.ti, self.ins, self.ntb, t, e, self.t)
            })
    }
}

/// Across blocks: whether another block's thread `u`'s access at epoch `ep_u` is ordered before this
/// access through an acquisition `f` of this block — the access was before `f`'s release, and `f`'s
/// acquire is ordered before this access (`after(f.t, f.e_t)`, this block's happens-before).
#[inline]
pub(super) fn foreign_ordered(
    fo: &ForeignMap,
    nthreads: u32,
    u: u32,
    ep_u: u32,
    mut after: impl FnMut(u32, u32) -> bool,
) -> bool {
    if fo.is_empty() || nthreads == 0 {
        return false;
    }
    Foreign::of_block(fo, u / nthreads).any(|f| f.covers(nthreads, u, ep_u) && after(f.t, f.e_t))
}

/// A conflicting earlier access: (its global thread id, its instruction, whether it was a write).
pub(super) type Conflict = (u32, u32, bool);

/// Checks and updates the shadow cells `sh` of one access by global thread `t` at its epoch `ep`
/// (instruction `pc`); `ord` says which earlier accesses are ordered before this one. Returns the first
/// conflict found.
#[inline(always)]
pub(super) fn check_cells(
    sh: &mut [Shadow],
    t: u32,
    ep: u32,
    pc: u32,
    acc: Acc,
    ord: &mut impl Order,
) -> Option<Conflict> {
    let mut conflict: Option<Conflict> = None;
    if let [s] = sh {
        // One cell (a word access in word mode, nearly all of them).
        let mut updated = *s;
        if check_cell(&mut updated, t, ep, pc, acc, ord, &mut conflict) {
            *s = updated;
        }
        return conflict;
    }
    // Bytes of one access usually share one shadow state: decide once and copy the outcome.
    let (first, rest) = sh.split_first_mut().expect("non-empty access");
    // (Updated in a local: reading the shadow back right after the field-wise writes of `check_cell`
    // would stall on store forwarding.)
    let orig = *first;
    let mut updated = orig;
    // Unchanged states (a read of data many threads already read) are not written back: that
    // would dirty the shadow's cache lines for nothing.
    let changed = check_cell(&mut updated, t, ep, pc, acc, ord, &mut conflict);
    if changed {
        *first = updated;
    }
    for s in rest.iter_mut() {
        if *s == orig {
            if changed {
                *s = updated;
            }
        } else {
            check_cell(s, t, ep, pc, acc, ord, &mut conflict);
        }
    }
    conflict
}

/// One cell of [`check_cells`]. Returns whether `s` changed, decided from its fields before they are
/// written (comparing the whole cell after the field-wise writes would load it back while those stores
/// are in flight: a store-forwarding stall that was most of a race check's time).
///
/// A plain read and an atomic read-modify-write of the same word do not race: hardware loads are
/// single-copy atomic, and CUDA's documented atomicCAS loops start with exactly such a read. A plain
/// write still races with everything, atomics included.
#[inline(always)]
fn check_cell(
    s: &mut Shadow,
    t: u32,
    ep: u32,
    pc: u32,
    acc: Acc,
    ord: &mut impl Order,
    conflict: &mut Option<Conflict>,
) -> bool {
    let w_thr = s.w & !TOPBIT;
    let w_atomic = s.w & TOPBIT != 0;
    // (`ordered` is pure: it is skipped once a conflict is known.)
    if w_thr != 0
        && w_thr - 1 != t
        && !(w_atomic && acc != Acc::Write)
        && conflict.is_none()
        && !ord.ordered(w_thr - 1, s.w_ep)
    {
        *conflict = Some((w_thr - 1, s.w_pc, true));
    }
    if acc != Acc::Read {
        let r_thr = s.r & !TOPBIT;
        let many = s.r & TOPBIT != 0;
        if r_thr != 0
            && acc == Acc::Write
            && (r_thr - 1 != t || many)
            && conflict.is_none()
            && !ord.ordered(r_thr - 1, s.r_ep)
        {
            *conflict = Some((r_thr - 1, s.r_pc, false));
        }
        let nw = (t + 1) | if acc == Acc::Atomic { TOPBIT } else { 0 };
        let changed = s.w != nw || s.w_ep != ep || s.w_pc != pc || s.r != 0;
        s.w = nw;
        s.w_ep = ep;
        s.w_pc = pc;
        s.r = 0;
        changed
    } else {
        let r_thr = s.r & !TOPBIT;
        if r_thr == 0 || (r_thr - 1 == t && s.r & TOPBIT == 0) || ord.ordered(r_thr - 1, s.r_ep) {
            let changed = s.r != t + 1 || s.r_ep != ep || s.r_pc != pc;
            s.r = t + 1;
            s.r_ep = ep;
            s.r_pc = pc;
            changed
        } else if r_thr - 1 != t {
            let changed = s.r & TOPBIT == 0;
            s.r |= TOPBIT;
            changed
        } else {
            false
        }
    }
}
