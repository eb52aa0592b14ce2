//! The race checks of one warp-instruction's access at once (issue 12): the fast memory paths' lanes
//! all access one region with one size, so what is per warp is derived once, and the happens-before test
//! (`ordered`) is answered for all 32 lanes of the warp together.
//!
//! The lanes of an access usually meet the same few earlier accesses (the same writer of a broadcast
//! word, the writers of one tile row): whether thread `u`'s access at its epoch `e` is ordered before a
//! lane's access depends on the lane only through one bit of each instance's waiter set, so one pass
//! over `u`'s instances gives a mask of the lanes (`OrderMemo`). Within one warp-instruction's checks
//! the instances do not change (the checks write only shadow cells), so what is read of them stays
//! valid until its end. Word reads and plain word writes in word-mode shadows (nearly all accesses) are
//! checked on those masks (`read_words`, `write_words`); the rest go through `check_cells` lane by lane.
//! Lanes are still taken in lane order with the same cell updates as `race.rs`: reports, faults and
//! shadow states are those of the per-lane checks (the tests below compare them on random states).

use super::race::{check_cells, Conflict, Order};
use super::*;

/// `ordered` for one warp's lanes at once, with the last instances' waiter sets remembered.
pub(super) struct OrderMemo {
    /// Threads in the block, and the first global thread id of the block.
    nthreads: u32,
    base: u32,
    /// Block thread id of the warp's lane 0 (a multiple of 32).
    w0: u32,
    /// The lanes whose answers may be asked (a pass may stop once they are all ordered).
    need: u32,
    /// Two instances (by index, `u32::MAX`: none; slot = index mod 2) and the warp's lanes among their
    /// waiters (none when not completed).
    inst: [(u32, u32); 2],
    /// What the block acquired from other blocks (`race.rs`, `foreign_ordered`).
    foreign: std::sync::Arc<ForeignMap>,
}

impl OrderMemo {
    /// An empty memo for warp `wi` of a block of `nthreads` threads starting at global id `base`,
    /// to be asked about lanes `need`.
    pub(super) fn new(nthreads: u32, base: u32, wi: usize, need: u32) -> OrderMemo {
        OrderMemo {
            nthreads,
            base,
            w0: wi as u32 * 32,
            need,
            inst: [(u32::MAX, 0); 2],
            foreign: Default::default(),
        }
    }

    /// The memo of a block that acquired `foreign` from other blocks.
    pub(super) fn with_foreign(mut self, foreign: &std::sync::Arc<ForeignMap>) -> OrderMemo {
        self.foreign = foreign.clone();
        self
    }

    /// The lanes of the warp whose thread is ordered after thread `u`'s access at its epoch `ep_u`
    /// (global ids), exact for the lanes in `need`: bit `l` is `L::ordered(.., u, ep_u, t_l)`.
    ///
    /// `u`'s first instance after the access is nearly always a barrier all the warp's lanes waited on
    /// (the barrier after a tile's stores, the one after the previous tile's reads), and the accesses
    /// one instruction meets share one or two of them: its waiters are remembered by instance.
    #[inline(always)]
    pub(super) fn mask(&mut self, thr_inst: &[Vec<u32>], insts: &[Inst], u: u32, ep_u: u32) -> u32 {
        let ul = u.wrapping_sub(self.base);
        if ul >= self.nthreads {
            return self.foreign_mask(thr_inst, insts, u, ep_u);
        }
        // Same thread: ordered by program order.
        let d = ul.wrapping_sub(self.w0);
        let own = if d < 32 { 1u32 << d } else { 0 };
        let list = &thr_inst[ul as usize];
        let Some(&i0) = list.get(ep_u as usize) else {
            // No instance since (an access in the current epoch).
            return own;
        };
        let slot = (i0 % 2) as usize;
        let m = if self.inst[slot].0 == i0 {
            own | self.inst[slot].1
        } else {
            let w = self.waiting(insts, i0);
            self.inst[slot] = (i0, w);
            own | w
        };
        if m & self.need == self.need {
            return m;
        }
        let after = &list[ep_u as usize + 1..];
        if after.is_empty() {
            return m;
        }
        self.rest(insts, after, m)
    }

    /// Across blocks: the lanes ordered after another block's thread `u`'s access at epoch `ep_u`
    /// through this block's acquisitions (`race.rs`, `foreign_ordered`).
    #[inline(never)]
    fn foreign_mask(&mut self, thr_inst: &[Vec<u32>], insts: &[Inst], u: u32, ep_u: u32) -> u32 {
        let mut m = 0;
        if self.nthreads == 0 {
            return 0;
        }
        let fo = self.foreign.clone();
        for f in Foreign::of_block(&fo, u / self.nthreads) {
            if f.covers(self.nthreads, u, ep_u) {
                let (t, e) = (f.t, f.e_t);
                m |= self.mask(thr_inst, insts, t, e);
            }
        }
        m
    }

    /// The warp's lanes among the waiters of instance `i` (none when it has not completed).
    #[inline(always)]
    fn waiting(&self, insts: &[Inst], i: u32) -> u32 {
        // The warp's 32 threads are one half of one word of each waiter set.
        let inst = &insts[i as usize];
        if inst.completed {
            (inst.waiters[(self.w0 / 64) as usize] >> (self.w0 % 64)) as u32
        } else {
            0
        }
    }

    /// `m` with the lanes that waited on the later instances `after`.
    #[inline(never)]
    fn rest(&self, insts: &[Inst], after: &[u32], mut m: u32) -> u32 {
        for &i in after {
            if m & self.need == self.need {
                break;
            }
            m |= self.waiting(insts, i);
        }
        m
    }
}

/// [`Order`] of lane `lane`'s access, answered from an [`OrderMemo`].
pub(super) struct MemoLane<'a> {
    pub(super) memo: &'a mut OrderMemo,
    pub(super) ti: &'a [Vec<u32>],
    pub(super) ins: &'a [Inst],
    pub(super) lane: usize,
}

impl Order for MemoLane<'_> {
    #[inline(always)]
    fn ordered(&mut self, u: u32, ep_u: u32) -> bool {
        (self.memo.mask(self.ti, self.ins, u, ep_u) >> self.lane) & 1 == 1
    }
}

impl L<'_> {
    /// The race checks of the lanes `lanes` of warp `wi` accessing `size` bytes at their offsets `offs`
    /// in a global allocation (`alloc`) or in shared memory (`None`); `addr` are their addresses. What
    /// `check_access` does for each lane, in lane order.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn race_warp(
        &mut self,
        b: &mut Block,
        wi: usize,
        alloc: Option<usize>,
        offs: &[usize; 32],
        addr: &[u64; 32],
        lanes: u32,
        size: usize,
        acc: Acc,
        pc: u32,
    ) {
        if lanes == 0 {
            return;
        }
        if alloc.is_none() && b.cpa.any() {
            self.cp_async_check_lanes(b, wi, offs, lanes, size, acc.name(), pc);
        }
        if let Some(i) = alloc {
            let a = &mut self.allocs[i];
            if a.shadow_launch != self.launch_id {
                a.shadow.reset(a.data.len());
                a.shadow_launch = self.launch_id;
            }
        }
        let nt = self.nthreads;
        let base = b.lin * nt;
        let mut memo = OrderMemo::new(nt, base, wi, lanes).with_foreign(&b.foreign);
        let aligned = (size | each_or(lanes, offs)).is_multiple_of(4);
        if acc == Acc::Read && aligned {
            let (ti, ins) = (&b.thr_inst, &b.inst);
            let words = match alloc {
                Some(i) => self.allocs[i].shadow.words(),
                None => b.sh_shadow.words(),
            };
            if let Some(cells) = words.filter(|c| c.len() < u32::MAX as usize) {
                let first = read_words(cells, &mut memo, ti, ins, offs, lanes, size / 4, pc);
                if let Some((l, c)) = first {
                    let at = if alloc.is_some() {
                        addr[l]
                    } else {
                        offs[l] as u64
                    };
                    self.report_race(b, wi, l, alloc.is_some(), acc, pc, at, c);
                }
                return;
            }
        }
        // A plain write, where the async proxy cannot fault (so the one race report comes first, as
        // it would lane by lane).
        let proxy = alloc.is_none() && !self.async_write;
        if acc == Acc::Write && aligned && (!proxy || b.proxy.holds_none()) {
            let (ti, ins) = (&b.thr_inst, &b.inst);
            let words = match alloc {
                Some(i) => self.allocs[i].shadow.words(),
                None => b.sh_shadow.words(),
            };
            if let Some(cells) = words {
                let first = write_words(cells, &mut memo, ti, ins, offs, lanes, size / 4, pc);
                if let Some((l, c)) = first {
                    let at = if alloc.is_some() {
                        addr[l]
                    } else {
                        offs[l] as u64
                    };
                    self.report_race(b, wi, l, alloc.is_some(), acc, pc, at, c);
                }
                if proxy {
                    self.proxy_write_lanes(b, wi, offs, lanes, size);
                }
                return;
            }
        }
        let proxy = alloc.is_none() && acc != Acc::Read && !self.async_write;
        let mut mm = lanes;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let tl = self.tid_of(wi, l);
            let t = base + tl;
            let conflict = {
                let (ti, ins) = (&b.thr_inst, &b.inst);
                let ep = ti[tl as usize].len() as u32;
                let sh: &mut [Shadow] = match alloc {
                    Some(i) => self.allocs[i].shadow.cells(offs[l], size),
                    None => b.sh_shadow.cells(offs[l], size),
                };
                let mut ord = MemoLane {
                    memo: &mut memo,
                    ti,
                    ins,
                    lane: l,
                };
                check_cells(sh, t, ep, pc, acc, &mut ord)
            };
            if let Some(c) = conflict {
                let at = if alloc.is_some() {
                    addr[l]
                } else {
                    offs[l] as u64
                };
                self.report_race(b, wi, l, alloc.is_some(), acc, pc, at, c);
            }
            if proxy {
                self.proxy_write(b, wi, l, pc, offs[l], size, true);
            }
        }
    }
}

/// The bitwise or of `offs` over the lanes `lanes`.
#[inline]
fn each_or(lanes: u32, offs: &[usize; 32]) -> usize {
    let mut x = 0;
    // Branch-free over all 32 lanes (it vectorises).
    for (l, &o) in offs.iter().enumerate() {
        x |= o & ((lanes >> l) & 1).wrapping_neg() as usize;
    }
    x
}

/// Slots of the per-cell answers of [`read_words`].
const CELL_SLOTS: usize = 32;

/// The race checks of a read of `n` words at byte offsets `offs` (multiples of 4) by the lanes `lanes`
/// of the memo's warp, on word cells `cells`: what `check_cells` does lane after lane, with the
/// happens-before answers of each cell's writer and reader kept while the instruction's lanes meet the
/// cell again (a broadcast word, a row read by both half-warps). Returns the first lane that conflicts
/// and its conflict (the only one a report can come from: one report per instruction).
///
/// For a read, `check_cell` comes down to two lane masks of the cell: `wm`, the lanes ordered after its
/// writer (every lane when there is none or the write was atomic), and `rm`, the lanes ordered after its
/// reader (every lane when there is none). A lane conflicts iff it is not in `wm` (a lane whose own
/// thread wrote is in it: program order); it becomes the reader iff it is in `rm` (likewise its own
/// earlier read), after which `rm` is that lane alone (its access is at its current epoch: no instance
/// follows it yet); otherwise the readers become several.
#[allow(clippy::too_many_arguments)]
fn read_words(
    cells: &mut [Shadow],
    memo: &mut OrderMemo,
    ti: &[Vec<u32>],
    ins: &[Inst],
    offs: &[usize; 32],
    lanes: u32,
    n: usize,
    pc: u32,
) -> Option<(usize, Conflict)> {
    // (One copy per width, with its cell loop unrolled.)
    match n {
        1 => read_words_n::<1>(cells, memo, ti, ins, offs, lanes, pc),
        2 => read_words_n::<2>(cells, memo, ti, ins, offs, lanes, pc),
        4 => read_words_n::<4>(cells, memo, ti, ins, offs, lanes, pc),
        _ => {
            // (Not a width of a fast access: each word as a one-word read, the same checks.)
            let mut first = None;
            let mut mm = lanes;
            while mm != 0 {
                let l = mm.trailing_zeros() as usize;
                mm &= mm - 1;
                for j in 0..n {
                    let mut o = *offs;
                    o[l] += 4 * j;
                    first = first.or(read_words_n::<1>(cells, memo, ti, ins, &o, 1 << l, pc));
                }
            }
            first
        }
    }
}

/// The race checks of a plain (non-atomic) write of `n` words at byte offsets `offs` (multiples of 4)
/// by the lanes `lanes` of the memo's warp, on word cells `cells`: `check_cells` lane after lane.
/// Returns the first lane that conflicts and its conflict.
///
/// For a write, `check_cell` comes down to: the lane conflicts with the cell's writer unless it is
/// ordered after it (atomic or not; its own thread's write is), else with its reader likewise; the
/// cell then holds the lane's write and no reader (the reader's epoch and instruction stay, unread).
#[allow(clippy::too_many_arguments)]
fn write_words(
    cells: &mut [Shadow],
    memo: &mut OrderMemo,
    ti: &[Vec<u32>],
    ins: &[Inst],
    offs: &[usize; 32],
    lanes: u32,
    n: usize,
    pc: u32,
) -> Option<(usize, Conflict)> {
    let mut first: Option<(usize, Conflict)> = None;
    let (base, w0) = (memo.base, memo.w0);
    let mut mm = lanes;
    while mm != 0 {
        let l = mm.trailing_zeros() as usize;
        mm &= mm - 1;
        let tl = w0 + l as u32;
        let t = base + tl;
        let ep = ti[tl as usize].len() as u32;
        let bit = 1u32 << l;
        let c0 = offs[l] / 4;
        for s in cells[c0..c0 + n].iter_mut() {
            if first.is_none() {
                let (w_thr, r_thr) = (s.w & !TOPBIT, s.r & !TOPBIT);
                if w_thr != 0 && memo.mask(ti, ins, w_thr - 1, s.w_ep) & bit == 0 {
                    first = Some((l, (w_thr - 1, s.w_pc, true)));
                } else if r_thr != 0 && memo.mask(ti, ins, r_thr - 1, s.r_ep) & bit == 0 {
                    first = Some((l, (r_thr - 1, s.r_pc, false)));
                }
            }
            s.w = t + 1;
            s.w_ep = ep;
            s.w_pc = pc;
            s.r = 0;
        }
    }
    first
}

/// [`read_words`] of `N` words per lane.
#[inline(never)]
fn read_words_n<const N: usize>(
    cells: &mut [Shadow],
    memo: &mut OrderMemo,
    ti: &[Vec<u32>],
    ins: &[Inst],
    offs: &[usize; 32],
    lanes: u32,
    pc: u32,
) -> Option<(usize, Conflict)> {
    // Per slot (cell mod CELL_SLOTS): cell index + 1 (0: empty; the caller's cells are fewer than
    // u32::MAX), `wm`, `rm`. (Small arrays: zeroed inline, not by a call.)
    let mut key = [0u32; CELL_SLOTS];
    let mut wms = [0u32; CELL_SLOTS];
    let mut rms = [0u32; CELL_SLOTS];
    let mut first: Option<(usize, Conflict)> = None;
    let (base, w0) = (memo.base, memo.w0);
    let mut mm = lanes;
    while mm != 0 {
        let l = mm.trailing_zeros() as usize;
        mm &= mm - 1;
        let t = base + w0 + l as u32;
        let bit = 1u32 << l;
        let c0 = offs[l] / 4;
        let lane_cells: &mut [Shadow; N] = (&mut cells[c0..c0 + N]).try_into().expect("N cells");
        for (j, s) in lane_cells.iter_mut().enumerate() {
            let c = c0 + j;
            let k = c % CELL_SLOTS;
            let (wm, rm) = if key[k] as usize == c + 1 {
                (wms[k], rms[k])
            } else {
                let (w_thr, r_thr) = (s.w & !TOPBIT, s.r & !TOPBIT);
                let wm = if w_thr == 0 || s.w & TOPBIT != 0 {
                    u32::MAX
                } else {
                    memo.mask(ti, ins, w_thr - 1, s.w_ep)
                };
                let rm = if r_thr == 0 {
                    u32::MAX
                } else {
                    memo.mask(ti, ins, r_thr - 1, s.r_ep)
                };
                (wm, rm)
            };
            if wm & bit == 0 && first.is_none() {
                first = Some((l, ((s.w & !TOPBIT) - 1, s.w_pc, true)));
            }
            let rm = if rm & bit != 0 {
                let ep = ti[(w0 + l as u32) as usize].len() as u32;
                if s.r != t + 1 || s.r_ep != ep || s.r_pc != pc {
                    s.r = t + 1;
                    s.r_ep = ep;
                    s.r_pc = pc;
                }
                bit
            } else {
                if s.r & TOPBIT == 0 {
                    s.r |= TOPBIT;
                }
                rm
            };
            (key[k], wms[k], rms[k]) = ((c + 1) as u32, wm, rm);
            if N == 1 && s.r & TOPBIT != 0 {
                // The next lanes reading this word too (a broadcast) change nothing while the word's
                // reader is not ordered before them: only a conflict with its writer is left to find.
                while mm != 0 {
                    let l2 = mm.trailing_zeros() as usize;
                    let bit2 = 1u32 << l2;
                    if offs[l2] != offs[l] || rm & bit2 != 0 {
                        break;
                    }
                    if wm & bit2 == 0 && first.is_none() {
                        first = Some((l2, ((s.w & !TOPBIT) - 1, s.w_pc, true)));
                    }
                    mm &= mm - 1;
                }
            }
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use super::super::race::{check_cells, LaneOrder};
    use super::*;

    fn rng(s: &mut u64) -> u64 {
        splitmix(s)
    }

    /// Random instances over a block of `nt` threads: each thread's list is increasing, each instance
    /// completed or not, with random waiters (often all, as a block barrier has).
    fn random_insts(s: &mut u64, nt: u32) -> (Vec<Vec<u32>>, Vec<Inst>) {
        let n = 1 + rng(s) % 12;
        let mut insts = Vec::new();
        let mut thr: Vec<Vec<u32>> = vec![Vec::new(); nt as usize];
        for i in 0..n as u32 {
            let mut waiters = [0u64; THREAD_WORDS];
            let all = rng(s).is_multiple_of(3);
            for t in 0..nt {
                if all || rng(s).is_multiple_of(4) {
                    waiters[t as usize / 64] |= 1 << (t % 64);
                }
                if all || rng(s).is_multiple_of(3) {
                    thr[t as usize].push(i);
                }
            }
            insts.push(Inst {
                waiters,
                completed: !rng(s).is_multiple_of(5),
            });
        }
        (thr, insts)
    }

    /// The per-lane checks of `race.rs` (`check_cells` at PC 3) of warp `wi`'s lanes `lanes`, in lane
    /// order, each over its `n` cells at `offs`: the definition the warp-wide checks are held to. Returns
    /// the first conflicting lane and its conflict.
    #[allow(clippy::too_many_arguments)]
    fn lane_checks(
        want: &mut [Shadow],
        (thr, insts): (&[Vec<u32>], &[Inst]),
        (nt, base): (u32, u32),
        wi: usize,
        lanes: u32,
        offs: &[usize; 32],
        n: usize,
        acc: Acc,
    ) -> Option<(usize, Conflict)> {
        let mut first = None;
        for l in (0..32).filter(|l| lanes >> l & 1 == 1) {
            let tl = wi as u32 * 32 + l as u32;
            let (t, ep) = (base + tl, thr[tl as usize].len() as u32);
            let sh = &mut want[offs[l] / 4..offs[l] / 4 + n];
            let mut lo = LaneOrder {
                ti: thr,
                ins: insts,
                ntb: (nt, base),
                t,
                fo: &ForeignMap::new(),
            };
            if let Some(c) = check_cells(sh, t, ep, 3, acc, &mut lo) {
                first = first.or(Some((l, c)));
            }
        }
        first
    }

    /// The warp-wide check of `acc` (`read_words` or `write_words`) and `lane_checks`, each on its own
    /// copy of `cells`: asserts that both find the same first conflict and leave the same shadow, and
    /// returns that conflict.
    #[allow(clippy::too_many_arguments)]
    fn warp_equals_lanes(
        cells: &[Shadow],
        (thr, insts): (&[Vec<u32>], &[Inst]),
        (nt, base): (u32, u32),
        wi: usize,
        lanes: u32,
        offs: &[usize; 32],
        n: usize,
        acc: Acc,
    ) -> Option<(usize, Conflict)> {
        let (mut want, mut got) = (cells.to_vec(), cells.to_vec());
        let first = lane_checks(&mut want, (thr, insts), (nt, base), wi, lanes, offs, n, acc);
        let mut memo = OrderMemo::new(nt, base, wi, lanes);
        let r = if acc == Acc::Read {
            read_words(&mut got, &mut memo, thr, insts, offs, lanes, n, 3)
        } else {
            write_words(&mut got, &mut memo, thr, insts, offs, lanes, n, 3)
        };
        assert_eq!(r, first);
        assert_eq!(got, want);
        first
    }

    /// A random shadow cell over threads of the block at `base` (and of other blocks).
    fn random_cell(s: &mut u64, nt: u32, base: u32) -> Shadow {
        let thread = |s: &mut u64| match rng(s) % 4 {
            0 => 0,
            1 => (rng(s) % (nt as u64 * 3)) as u32 + 1,
            _ => (base as u64 + rng(s) % nt as u64) as u32 + 1,
        };
        let top = |s: &mut u64| if rng(s).is_multiple_of(4) { TOPBIT } else { 0 };
        Shadow {
            w: thread(s) | top(s),
            w_ep: (rng(s) % 13) as u32,
            w_pc: (rng(s) % 5) as u32,
            r: thread(s) | top(s),
            r_ep: (rng(s) % 13) as u32,
            r_pc: (rng(s) % 5) as u32,
        }
    }

    /// `read_words` against the per-lane checks of `race.rs` (`check_cells` with `L::ordered`) on random
    /// word shadows, instances and lane offsets (repeated offsets: broadcasts): same shadow afterwards,
    /// and its conflict is the first lane's that conflicts.
    #[test]
    fn read_words_equals_lane_checks() {
        let mut s = 7u64;
        let mut conflicts = 0;
        for _ in 0..2000 {
            let nt = [32u32, 64, 256][(rng(&mut s) % 3) as usize];
            let base = nt * (rng(&mut s) % 2) as u32;
            let (thr, insts) = random_insts(&mut s, nt);
            let ncells = 4 + (rng(&mut s) % 60) as usize;
            let mut cells: Vec<Shadow> =
                (0..ncells).map(|_| random_cell(&mut s, nt, base)).collect();
            if rng(&mut s).is_multiple_of(2) {
                // No earlier writes (read-only data): the reader updates alone.
                cells.iter_mut().for_each(|c| c.w = 0);
            }
            let wi = (rng(&mut s) % (nt as u64 / 32)) as usize;
            let lanes = match rng(&mut s) % 3 {
                0 => u32::MAX,
                _ => rng(&mut s) as u32,
            };
            let n = [1usize, 2, 4, 3][(rng(&mut s) % 4) as usize];
            let spread = 1 + rng(&mut s) % (ncells as u64 - n as u64 + 1);
            let group = 1 + rng(&mut s) as usize % 16;
            let offs: [usize; 32] = if rng(&mut s).is_multiple_of(2) {
                std::array::from_fn(|_| 4 * (rng(&mut s) % spread) as usize)
            } else {
                // Runs of lanes reading one word (broadcasts).
                std::array::from_fn(|l| 4 * ((l / group) % spread as usize))
            };
            let first = warp_equals_lanes(
                &cells,
                (&thr, &insts),
                (nt, base),
                wi,
                lanes,
                &offs,
                n,
                Acc::Read,
            );
            conflicts += first.is_some() as u32;
        }
        // Both outcomes were exercised.
        assert!(conflicts > 100 && conflicts < 1900, "{conflicts}");
    }

    /// `write_words` against the per-lane checks of `race.rs` on random word shadows, instances and
    /// lane offsets (overlapping ones too): same shadow afterwards, same first conflicting lane.
    #[test]
    fn write_words_equals_lane_checks() {
        let mut s = 21u64;
        let mut conflicts = 0;
        for _ in 0..2000 {
            let nt = [32u32, 64, 256][(rng(&mut s) % 3) as usize];
            let base = nt * (rng(&mut s) % 2) as u32;
            let (thr, insts) = random_insts(&mut s, nt);
            let ncells = 4 + (rng(&mut s) % 200) as usize;
            let mut cells: Vec<Shadow> =
                (0..ncells).map(|_| random_cell(&mut s, nt, base)).collect();
            if rng(&mut s).is_multiple_of(2) {
                // Fresh memory, or cells last accessed by this thread's warp only.
                cells.iter_mut().for_each(|c| {
                    c.w = 0;
                    c.r = 0;
                });
            }
            let wi = (rng(&mut s) % (nt as u64 / 32)) as usize;
            let lanes = match rng(&mut s) % 3 {
                0 => u32::MAX,
                _ => rng(&mut s) as u32,
            };
            let n = [1usize, 2, 4][(rng(&mut s) % 3) as usize];
            let spread = 1 + rng(&mut s) % (ncells as u64 - n as u64 + 1);
            let offs: [usize; 32] = if ncells > 32 * n && rng(&mut s).is_multiple_of(2) {
                // One word range per lane (what a fast store has).
                std::array::from_fn(|l| 4 * n * l)
            } else {
                std::array::from_fn(|_| 4 * (rng(&mut s) % spread) as usize)
            };
            let first = warp_equals_lanes(
                &cells,
                (&thr, &insts),
                (nt, base),
                wi,
                lanes,
                &offs,
                n,
                Acc::Write,
            );
            conflicts += first.is_some() as u32;
        }
        assert!(conflicts > 100 && conflicts < 1900, "{conflicts}");
    }

    #[test]
    fn memo_answers_equal_ordered() {
        let mut s = 12u64;
        for _ in 0..300 {
            let nt = [32u32, 64, 96, 128, 1024][(rng(&mut s) % 5) as usize];
            let lin = (rng(&mut s) % 3) as u32;
            let base = lin * nt;
            let (thr, insts) = random_insts(&mut s, nt);
            let wi = (rng(&mut s) % (nt as u64 / 32)) as usize;
            let need = rng(&mut s) as u32 | 1;
            let mut memo = OrderMemo::new(nt, base, wi, need);
            for _ in 0..64 {
                // Threads of this block, and sometimes of another block.
                let u = (rng(&mut s) % (nt as u64 * 3)) as u32;
                let ep_u = (rng(&mut s) % 14) as u32;
                let m = memo.mask(&thr, &insts, u, ep_u);
                for l in (0..32).filter(|l| need >> l & 1 == 1) {
                    let t = base + wi as u32 * 32 + l;
                    let want = L::ordered(&thr, &insts, (nt, base), u, ep_u, t);
                    assert_eq!(m >> l & 1 == 1, want, "u {u} ep {ep_u} lane {l} warp {wi}");
                }
            }
        }
    }

    /// A warp's access checked through the memo, lane after lane, against the per-lane checks of
    /// `race.rs` on the same random shadow and instances: same shadow afterwards, same conflicts.
    #[test]
    fn warp_checks_equal_lane_checks() {
        let mut s = 99u64;
        for _ in 0..400 {
            let nt = [64u32, 128, 256][(rng(&mut s) % 3) as usize];
            let base = nt;
            let (thr, insts) = random_insts(&mut s, nt);
            let cells = 8usize;
            let mut shadow: Vec<Shadow> = (0..cells)
                .map(|_| {
                    let thread = |s: &mut u64| match rng(s) % 4 {
                        0 => 0,
                        1 => (rng(s) % (nt as u64 * 3)) as u32 + 1,
                        _ => (base as u64 + rng(s) % nt as u64) as u32 + 1,
                    };
                    let top = |s: &mut u64| if rng(s).is_multiple_of(4) { TOPBIT } else { 0 };
                    Shadow {
                        w: thread(&mut s) | top(&mut s),
                        w_ep: (rng(&mut s) % 13) as u32,
                        w_pc: (rng(&mut s) % 5) as u32,
                        r: thread(&mut s) | top(&mut s),
                        r_ep: (rng(&mut s) % 13) as u32,
                        r_pc: (rng(&mut s) % 5) as u32,
                    }
                })
                .collect();
            let mut other = shadow.clone();
            let wi = (rng(&mut s) % (nt as u64 / 32)) as usize;
            let lanes = rng(&mut s) as u32;
            let acc = [Acc::Read, Acc::Write, Acc::Atomic][(rng(&mut s) % 3) as usize];
            let size = 1 + (rng(&mut s) % 2) as usize;
            let offs: Vec<usize> = (0..32)
                .map(|_| (rng(&mut s) % (cells as u64 - 1)) as usize)
                .collect();
            let pc = 7;
            let mut memo = OrderMemo::new(nt, base, wi, lanes);
            for l in (0..32).filter(|l| lanes >> l & 1 == 1) {
                let tl = wi as u32 * 32 + l as u32;
                let (t, ep) = (base + tl, thr[tl as usize].len() as u32);
                let sh = &mut shadow[offs[l]..offs[l] + size];
                let mut lo = LaneOrder {
                    ti: &thr,
                    ins: &insts,
                    ntb: (nt, base),
                    t,
                    fo: &ForeignMap::new(),
                };
                let want = check_cells(sh, t, ep, pc, acc, &mut lo);
                let sh = &mut other[offs[l]..offs[l] + size];
                let mut ml = MemoLane {
                    memo: &mut memo,
                    ti: &thr,
                    ins: &insts,
                    lane: l,
                };
                let got = check_cells(sh, t, ep, pc, acc, &mut ml);
                assert_eq!(got, want, "lane {l}");
                assert_eq!(other, shadow, "lane {l}");
            }
        }
    }
}
