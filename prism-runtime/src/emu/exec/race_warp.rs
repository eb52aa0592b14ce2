//! The race checks of one warp-instruction's access at once (issue 12): the fast memory paths' lanes
//! all access one region with one size, so what is per warp is derived once, and the happens-before test
//! (`ordered`) is answered for all 32 lanes of the warp together and remembered for the instruction.
//!
//! The lanes of an access usually meet the same few earlier accesses (the same writer of a broadcast
//! word, the writers of one tile row): whether thread `u`'s access at its epoch `e` is ordered before a
//! lane's access depends on the lane only through one bit of each instance's waiter set, so one pass
//! over `u`'s instances gives the answer for every lane. Within one warp-instruction's checks the
//! instances do not change (the checks write only shadow cells), so the answers stay valid until its
//! end. Lanes are still checked one after another, in lane order, with the same cell updates as
//! `race.rs`: reports, faults and shadow states are those of the per-lane checks.

use super::race::{check_cells, Order};
use super::*;

/// Slots of [`OrderMemo`].
const SLOTS: usize = 64;

/// Remembered `ordered` answers for one warp's lanes, keyed by the earlier access's (thread, epoch).
pub(super) struct OrderMemo {
    /// Threads in the block, and the first global thread id of the block.
    nthreads: u32,
    base: u32,
    /// Block thread id of the warp's lane 0 (a multiple of 32).
    w0: u32,
    /// The lanes whose answers may be asked (a pass may stop once they are all ordered).
    need: u32,
    /// Per slot: the block thread id (`u32::MAX`: empty) and epoch of the earlier access, and the lanes
    /// whose thread is ordered after it.
    ent: [(u32, u32, u32); SLOTS],
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
            ent: [(u32::MAX, 0, 0); SLOTS],
        }
    }

    /// The lanes of the warp whose thread is ordered after thread `u`'s access at its epoch `ep_u`
    /// (global ids), exact for the lanes in `need`: bit `l` is `L::ordered(.., u, ep_u, t_l)`.
    #[inline(always)]
    pub(super) fn mask(&mut self, thr_inst: &[Vec<u32>], insts: &[Inst], u: u32, ep_u: u32) -> u32 {
        let ul = u.wrapping_sub(self.base);
        if ul >= self.nthreads {
            return 0;
        }
        // The accesses one instruction meets are mostly runs of consecutive threads at one epoch (a
        // tile's writers, the previous readers): consecutive threads get consecutive slots, and the
        // epoch moves the run by half the table.
        let slot = (ul.wrapping_add(ep_u.wrapping_mul(SLOTS as u32 / 2 + 5)) as usize) % SLOTS;
        let e = self.ent[slot];
        if e.0 == ul && e.1 == ep_u {
            return e.2;
        }
        self.fill(thr_inst, insts, ul, ep_u, slot)
    }

    /// The answer for block thread `ul` at `ep_u`, computed and kept in `slot`.
    #[inline(never)]
    fn fill(
        &mut self,
        thr_inst: &[Vec<u32>],
        insts: &[Inst],
        ul: u32,
        ep_u: u32,
        slot: usize,
    ) -> u32 {
        // Same thread: ordered by program order.
        let d = ul.wrapping_sub(self.w0);
        let mut m = if d < 32 { 1u32 << d } else { 0 };
        // The warp's 32 threads are one half of one word of each waiter set.
        let (word, shift) = ((self.w0 / 64) as usize, self.w0 % 64);
        let after = thr_inst[ul as usize].get(ep_u as usize..).unwrap_or(&[]);
        for &i in after {
            if m & self.need == self.need {
                break;
            }
            let inst = &insts[i as usize];
            if inst.completed {
                m |= (inst.waiters[word] >> shift) as u32;
            }
        }
        self.ent[slot] = (ul, ep_u, m);
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
        if let Some(i) = alloc {
            let a = &mut self.allocs[i];
            if a.shadow_launch != self.launch_id {
                a.shadow.reset(a.data.len());
                a.shadow_launch = self.launch_id;
            }
        }
        let nt = self.nthreads;
        let base = b.lin * nt;
        let mut memo = OrderMemo::new(nt, base, wi, lanes);
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
