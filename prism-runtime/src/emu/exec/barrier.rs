//! `bar` / `barrier` (block-wide and named barriers, with reductions) and barrier completion.

use super::*;

impl L<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_bar(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        mode: BarMode,
    ) -> Step {
        let args = &self.m.code[pc as usize].args;
        let is_red = matches!(mode, BarMode::RedPopc | BarMode::RedAnd | BarMode::RedOr);
        // operand positions
        let (d_op, a_op, b_op, c_op) = if is_red {
            if args.len() >= 4 {
                (Some(&args[0]), &args[1], Some(&args[2]), Some(&args[3]))
            } else {
                (Some(&args[0]), &args[1], None, args.get(2))
            }
        } else {
            (None, &args[0], args.get(1), None)
        };
        // lanes with a false guard skip the barrier
        Self::advance(w, mask & !exec);
        if exec == 0 {
            return Step::Continue;
        }
        if mode != BarMode::Arrive {
            self.pic[pc as usize].barrier_waits += 1;
        }
        // An immediate barrier id (nearly always) is the same for every lane: read once.
        let id_imm = match a_op {
            Operand::Imm(v) => Some(*v),
            _ => None,
        };
        let bulk = match (mode, id_imm, b_op) {
            (BarMode::Sync, Some(id), None) if id < prism_core::hw::NAMED_BARRIERS as u64 => b
                .bars
                .get(id as usize)
                .is_some_and(|bar| bar.arrived == 0 || (bar.expected.is_none() && bar.pc == pc)),
            _ => false,
        };
        // `bulk`: the loop below would arrive every lane without a fault; all at once here.
        let mut mm = if bulk {
            self.bar_sync_warp(b, wi, w, pc, exec, id_imm.unwrap_or(0) as usize);
            0
        } else {
            exec
        };
        let ops = BarOps {
            d: d_op,
            a: a_op,
            count: b_op,
            pred: c_op,
            id_imm,
            is_red,
        };
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            if let Some(stop) = self.bar_arrive_lane(b, wi, w, pc, l, mode, &ops) {
                return stop;
            }
        }
        for id in 0..16 {
            if b.bars[id].arrived > 0 && b.bars[id].expected.is_none() {
                self.try_complete(b, wi, w, id);
                if self.abort {
                    return Step::Stop;
                }
            }
        }
        if w.run_mask() == 0 {
            Step::Stop
        } else {
            Step::Continue
        }
    }

    /// Lane `l` of warp `wi` arrives at the barrier of `ops` (the per-lane arrival of `exec_bar`, with its
    /// checks); `Some` is the step's end when the lane faults or the launch aborts.
    #[allow(clippy::too_many_arguments)]
    fn bar_arrive_lane(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        l: usize,
        mode: BarMode,
        ops: &BarOps,
    ) -> Option<Step> {
        let id = match ops.id_imm {
            Some(v) => v,
            None => self.val(b, w, wi, ops.a, l),
        };
        if id >= prism_core::hw::NAMED_BARRIERS as u64 {
            self.fault(
                b,
                wi,
                Some(l as u32),
                pc,
                FaultKind::InvalidOperation,
                format!("barrier id {} out of range 0..15", id),
            );
            return Some(Step::Stop);
        }
        let id = id as usize;
        let count = ops.count.map(|o| self.val(b, w, wi, o, l) as u32);
        if let Some(c) = count {
            if c == 0 || c > self.nthreads.div_ceil(32) * 32 || c % 32 != 0 {
                self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, format!("barrier thread count {} must be a non-zero multiple of 32 not above the block size", c));
                return Some(Step::Stop);
            }
        }
        let bar = &mut b.bars[id];
        if bar.arrived > 0 {
            if bar.expected != count {
                let msg = format!(
                    "barrier {} used with inconsistent thread counts ({:?} vs {:?})",
                    id, bar.expected, count
                );
                self.fault(b, wi, Some(l as u32), pc, FaultKind::BarrierDivergence, msg);
                return Some(Step::Stop);
            }
            if count.is_none() && bar.pc != pc && mode != BarMode::Arrive {
                let other = self.m.code[bar.pc as usize].line;
                let msg = format!("threads wait at different barrier instructions for barrier {} (this one and the one at PTX line {}): the block diverged", id, other);
                self.fault(b, wi, Some(l as u32), pc, FaultKind::BarrierDivergence, msg);
                return Some(Step::Stop);
            }
        } else {
            bar.begin(pc, count, if ops.is_red { Some(mode) } else { None });
        }
        let inst = bar_instance(b, id);
        let t = self.tid_of(wi, l) as usize;
        // A thread's instances are read only by the race detector (happens-before).
        if self.cfg.check_races {
            b.thr_inst[t].push(inst);
        }
        let bar = &mut b.bars[id];
        bar.arrived += 1;
        if ops.is_red {
            let p = ops
                .pred
                .map(|o| self.val(b, w, wi, o, l) != 0)
                .unwrap_or(false);
            let bar = &mut b.bars[id];
            bar.red_popc += p as u32;
            bar.red_and &= p;
            bar.red_or |= p;
        }
        if mode == BarMode::Arrive {
            w.pc[l] += 1;
        } else {
            b.inst[inst as usize].waiters[t / 64] |= 1 << (t % 64);
            w.set_st(l, Ls::Bar);
            let dreg = ops.d.and_then(|d| {
                if let Operand::Reg(r) = d {
                    Some(*r)
                } else {
                    None
                }
            });
            b.bars[id].waiters.push((wi as u32, l as u32, dreg));
        }
        if count.is_some() {
            self.try_complete(b, wi, w, id);
            if self.abort {
                return Some(Step::Stop);
            }
        }
        None
    }

    /// The lanes `exec` of warp `wi` arrive at block-wide barrier `id` (`bar.sync id` with no thread
    /// count) and wait there, as the lane loop of `exec_bar` would arrive them one by one when barrier
    /// `id` is idle or waits at this `pc` with no count (then no lane faults).
    fn bar_sync_warp(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        exec: u32,
        id: usize,
    ) {
        let bar = &mut b.bars[id];
        if bar.arrived == 0 {
            bar.begin(pc, None, None);
        }
        let inst = bar_instance(b, id);
        let t0 = self.tid_of(wi, 0) as usize;
        if self.cfg.check_races {
            lanes!(exec, l, {
                b.thr_inst[t0 + l].push(inst);
            });
        }
        // Warp `wi`'s 32 threads are bits 32 * (wi % 2).. of word wi / 2.
        b.inst[inst as usize].waiters[t0 / 64] |= (exec as u64) << (t0 % 64);
        let bar = &mut b.bars[id];
        bar.arrived += exec.count_ones();
        bar.waiters.reserve(exec.count_ones() as usize);
        w.set_st_lanes(exec, Ls::Bar);
        lanes!(exec, l, {
            bar.waiters.push((wi as u32, l as u32, None));
        });
    }

    pub(super) fn try_complete(&mut self, b: &mut Block, wi: usize, w: &mut Warp, id: usize) {
        let expected = b.bars[id].expected.unwrap_or(self.nthreads - b.exited);
        if b.bars[id].arrived < expected || b.bars[id].arrived == 0 {
            return;
        }
        let mut bar = std::mem::take(&mut b.bars[id]);
        if let Some(i) = bar.inst {
            b.inst[i as usize].completed = true;
        }
        if bar.expected.is_none() {
            // block-wide barrier: threads that exited during this interval never reached it
            // (only when one did: a count per generation)
            let exits = if b.exits_this_gen > 0 {
                self.nthreads as usize
            } else {
                0
            };
            for t in 0..exits {
                if b.exit_gen[t] == b.gen {
                    let (ww, ll) = (t / 32, t % 32);
                    let line = self.m.code[bar.pc as usize].line;
                    let msg = format!(
                        "barrier divergence: thread {} (warp {}, lane {}) exited without reaching the block-wide barrier {} at PTX line {} that the other threads waited at",
                        t, ww, ll, id, line
                    );
                    self.fault(
                        b,
                        ww,
                        Some(ll as u32),
                        bar.pc,
                        FaultKind::BarrierDivergence,
                        msg,
                    );
                    return;
                }
            }
            b.gen += 1;
            b.exits_this_gen = 0;
        }
        let result = match bar.mode_red {
            Some(BarMode::RedPopc) => bar.red_popc as u64,
            Some(BarMode::RedAnd) => bar.red_and as u64,
            Some(BarMode::RedOr) => bar.red_or as u64,
            _ => 0,
        };
        // Waiters arrive a warp at a time: each run of one warp's lanes looks its warp up once.
        let mut rest = &bar.waiters[..];
        while let Some(&(ww, ..)) = rest.first() {
            let n = rest.iter().take_while(|x| x.0 == ww).count();
            let target: &mut Warp = if ww as usize == wi {
                &mut *w
            } else {
                &mut b.warps[ww as usize]
            };
            // (a lane waits at most once: its lanes are a mask, released and moved on together)
            let mut lanes = 0u32;
            for &(_, ll, d) in &rest[..n] {
                lanes |= 1 << ll;
                if let Some(r) = d {
                    target.regs[r as usize * 32 + ll as usize] = result;
                }
            }
            target.set_st_lanes(lanes, Ls::Run);
            warp_scan::advance_lanes(&mut target.pc, lanes);
            rest = &rest[n..];
        }
        bar.waiters.clear();
        // The next phase starts from a fresh barrier, but keeps the waiter list's room (growing it again
        // one arrival at a time, every phase, cost more than the rest of the barrier).
        b.bars[id].waiters = bar.waiters;
    }
}

/// The operands of a `bar`/`barrier` instruction: destination (reductions), barrier id, thread count,
/// predicate (reductions), the id when it is an immediate, and whether it reduces.
struct BarOps<'a> {
    d: Option<&'a Operand>,
    a: &'a Operand,
    count: Option<&'a Operand>,
    pred: Option<&'a Operand>,
    id_imm: Option<u64>,
    is_red: bool,
}

impl Bar {
    /// A phase's first arrival: the instruction, thread count and reduction every later arrival must
    /// match, and the reduction's start values.
    fn begin(&mut self, pc: u32, expected: Option<u32>, mode_red: Option<BarMode>) {
        self.expected = expected;
        self.pc = pc;
        self.red_popc = 0;
        self.red_and = true;
        self.red_or = false;
        self.mode_red = mode_red;
    }
}

/// The synchronization instance of barrier `id`'s current phase (created at its first arrival).
fn bar_instance(b: &mut Block, id: usize) -> u32 {
    if let Some(i) = b.bars[id].inst {
        return i;
    }
    let i = b.inst.len() as u32;
    b.inst.push(Inst {
        waiters: [0; THREAD_WORDS],
        completed: false,
    });
    b.bars[id].inst = Some(i);
    i
}
