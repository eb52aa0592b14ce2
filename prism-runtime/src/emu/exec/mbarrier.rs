//! `mbarrier` objects in shared memory: phases, arrivals, transaction counts, remote completion.

use super::*;

impl L<'_> {
    pub(super) fn mbar_loc(
        &mut self,
        b: &Block,
        wi: usize,
        lane: usize,
        pc: u32,
        a: u64,
    ) -> Option<u32> {
        let a = if (SHARED_WINDOW..SHARED_WINDOW + WINDOW).contains(&a) {
            a - SHARED_WINDOW
        } else {
            a
        };
        match self.resolve(b, wi, lane, Space::Shared, a, 8, pc) {
            Some(Loc::Shared(o)) => Some(o as u32),
            Some(_) => {
                let msg = format!("mbarrier operation on another block's mbarrier at {a:#x}: only multicast copies complete on remote mbarriers so far");
                self.fault(b, wi, Some(lane as u32), pc, FaultKind::Unsupported, msg);
                None
            }
            None => None,
        }
    }

    pub(super) fn mbar_complete_tx(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        pc: u32,
        a: u32,
        bytes: i64,
    ) -> bool {
        let off = match self.mbar_loc(b, wi, lane, pc, a as u64) {
            Some(o) => o,
            None => return false,
        };
        let t = self.tid_of(wi, lane) as usize;
        self.mbar_sync_remote(b, off);
        match b.mbar.get_mut(&off) {
            None => {
                self.fault(
                    b,
                    wi,
                    Some(lane as u32),
                    pc,
                    FaultKind::MbarrierMisuse,
                    format!(
                        "complete_tx on uninitialized mbarrier at shared offset 0x{:x}",
                        off
                    ),
                );
                false
            }
            Some(mb) => {
                mb.tx -= bytes;
                let inst = mb.inst;
                b.thr_inst[t].push(inst);
                self.mbar_maybe_flip(b, off);
                true
            }
        }
    }

    /// complete_tx of `bytes` on the mbarrier at shared::cluster address `sa` (a `mapa` result or this
    /// block's own shared offset) on behalf of an asynchronous store into block rank `dst_rank` (`what`
    /// names the instruction). The PTX ISA (§9.7.8.12 `st.async`, §9.7.12.7 `red.async`, §9.7.8.24
    /// `cp(.reduce).async.bulk`) has the mbarrier in the destination's block; anything else is undefined
    /// behaviour, reported here. A remote mbarrier is updated through the cluster's lent state (the
    /// owner's race bookkeeping catches up in `mbar_sync_remote`). False after a fault.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn mbar_complete_tx_at(
        &mut self,
        b: &mut Block,
        wi: usize,
        l: usize,
        pc: u32,
        sa: u64,
        dst_rank: u32,
        bytes: i64,
        what: &str,
    ) -> bool {
        let tag = ((sa >> 24) & 0x3F) as u32;
        let rank = if tag == 0 { b.crank } else { tag - 1 };
        let off = (sa & 0xFF_FFFF) as u32;
        let problem = if sa >> 30 != 0 {
            Some((
                FaultKind::InvalidOperation,
                format!("{what}: mbarrier address {sa:#x} is not a shared::cluster address"),
            ))
        } else if !off.is_multiple_of(8) {
            Some((
                FaultKind::Misaligned,
                format!("{what}: mbarrier address {sa:#x} is not 8-byte aligned"),
            ))
        } else if rank != dst_rank {
            Some((FaultKind::InvalidOperation, format!(
                "{what}: the mbarrier at {sa:#x} is in block rank {rank} but the destination in block rank {dst_rank}; the PTX ISA requires both in the same block"
            )))
        } else {
            None
        };
        if let Some((kind, msg)) = problem {
            self.fault(b, wi, Some(l as u32), pc, kind, msg);
            return false;
        }
        if rank == b.crank {
            return self.mbar_complete_tx(b, wi, l, pc, off, bytes);
        }
        let res = match self.remote_mbar_mut(rank as usize, off) {
            None => Err(format!(
                "{what}: complete_tx on block rank {rank}'s mbarrier at shared offset {off:#x}, which is not initialised"
            )),
            Some(mb) => mb.remote_update(0, -bytes),
        };
        match res {
            Ok(()) => true,
            Err(msg) => {
                self.fault(b, wi, Some(l as u32), pc, FaultKind::MbarrierMisuse, msg);
                false
            }
        }
    }

    /// Completes the happens-before bookkeeping of phases another block flipped (see `Mbar::remote_flips`):
    /// whoever arrived or completed transactions in them is ordered before their waiters.
    pub(super) fn mbar_sync_remote(&mut self, b: &mut Block, off: u32) {
        let Some(mb) = b.mbar.get_mut(&off) else {
            return;
        };
        for _ in 0..std::mem::take(&mut mb.remote_flips) {
            let old = mb.inst;
            let ni = b.inst.len() as u32;
            mb.inst = ni;
            mb.prev = Some(old);
            b.inst[old as usize].completed = true;
            b.inst.push(Inst {
                waiters: [0; THREAD_WORDS],
                completed: false,
            });
        }
    }

    pub(super) fn mbar_maybe_flip(&mut self, b: &mut Block, off: u32) {
        let mb = b.mbar.get_mut(&off).unwrap();
        if mb.pending == 0 && mb.tx == 0 {
            mb.phase += 1;
            mb.pending = mb.expected;
            let old = mb.inst;
            let ni = b.inst.len() as u32;
            mb.inst = ni;
            mb.prev = Some(old);
            b.inst[old as usize].completed = true;
            b.inst.push(Inst {
                waiters: [0; THREAD_WORDS],
                completed: false,
            });
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_mbarrier(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        op: MbarOp,
    ) -> Step {
        let m = self.m;
        let args = &m.code[pc as usize].args;
        Self::advance(w, mask & !exec);
        let mut mm = exec;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            if !self.mbarrier_lane(b, wi, w, pc, l, op, args) {
                return Step::Stop;
            }
        }
        Self::advance(w, exec);
        Step::Continue
    }

    /// The transaction count after `op` stays in [-(2^20 - 1), 2^20 - 1] (PTX ISA, mbarrier): beyond it is
    /// an error, recorded as a fault of lane `l` (false).
    fn mbar_tx_in_range(
        &mut self,
        b: &Block,
        (wi, l, pc): (usize, usize, u32),
        tx: i64,
        op: MbarOp,
        extra: Option<u64>,
    ) -> bool {
        let tx_add = match op {
            MbarOp::ArriveExpectTx | MbarOp::ExpectTx => extra.unwrap_or(0) as i64,
            MbarOp::CompleteTx => -(extra.unwrap_or(0) as i64),
            _ => 0,
        };
        if (tx + tx_add).abs() < 1 << 20 {
            return true;
        }
        let msg = format!(
            "mbarrier transaction count {} (expected {} more bytes) outside its range of ±(2^20 - 1)",
            tx + tx_add,
            tx_add
        );
        self.fault(b, wi, Some(l as u32), pc, FaultKind::MbarrierMisuse, msg);
        false
    }

    /// One lane's `mbarrier` operation (false after a fault).
    #[allow(clippy::too_many_arguments)]
    fn mbarrier_lane(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        l: usize,
        op: MbarOp,
        args: &[Operand],
    ) -> bool {
        let t = self.tid_of(wi, l) as usize;
        let (ai, has_dst) = match op {
            MbarOp::Init
            | MbarOp::ExpectTx
            | MbarOp::Inval
            | MbarOp::CompleteTx
            | MbarOp::ArriveNoinc
            | MbarOp::CpAsyncArrive => (0, false),
            _ => (1, true),
        };
        let a = match &args[ai] {
            Operand::Addr(base, off) => self.addr(w, base, *off, l, false),
            o => self.val(b, w, wi, o, l),
        };
        let extra = args.get(ai + 1).map(|o| self.val(b, w, wi, o, l));
        // An arrive on another block's mbarrier (an address from `mapa`).
        if matches!(op, MbarOp::Arrive | MbarOp::ArriveExpectTx) {
            match self.remote_mbar_arrive(b, wi, l, pc, a, op, extra) {
                Some(true) => return true,
                Some(false) => {}
                None => return false,
            }
        }
        let off = match self.mbar_loc(b, wi, l, pc, a) {
            Some(o) => o,
            None => return false,
        };
        self.mbar_sync_remote(b, off);
        if op == MbarOp::Init {
            return self.mbar_init(b, wi, l, pc, off, extra);
        }
        if op == MbarOp::Inval {
            b.mbar.remove(&off);
            return true;
        }
        let mb = match b.mbar.get(&off).copied() {
            Some(x) => x,
            None => {
                self.fault(
                    b,
                    wi,
                    Some(l as u32),
                    pc,
                    FaultKind::MbarrierMisuse,
                    format!(
                        "mbarrier operation on uninitialized mbarrier at shared offset 0x{:x}",
                        off
                    ),
                );
                return false;
            }
        };
        if !self.mbar_tx_in_range(b, (wi, l, pc), mb.tx, op, extra) {
            return false;
        }
        if matches!(op, MbarOp::ArriveNoinc | MbarOp::CpAsyncArrive) {
            // The arrive-on follows the completion of the thread's earlier cp.asyncs, so the phase's
            // waiters are ordered after their writes.
            self.cp_async_complete(b, t, None);
        }
        match op {
            MbarOp::CpAsyncArrive => {
                if self.cfg.check_races {
                    note_arrival_hops(b, t, mb.inst);
                }
                b.thr_inst[t].push(mb.inst);
            }
            MbarOp::Arrive | MbarOp::ArriveExpectTx | MbarOp::ArriveDrop | MbarOp::ArriveNoinc => {
                let mut cnt = 1u32;
                if op == MbarOp::ArriveExpectTx {
                    b.mbar.get_mut(&off).unwrap().tx += extra.unwrap_or(0) as i64;
                } else if let Some(c) = extra {
                    cnt = c as u32;
                }
                if mb.pending < cnt {
                    self.fault(
                        b,
                        wi,
                        Some(l as u32),
                        pc,
                        FaultKind::MbarrierMisuse,
                        format!(
                            "mbarrier arrive: {} arrivals but only {} pending in this phase",
                            cnt, mb.pending
                        ),
                    );
                    return false;
                }
                if self.cfg.check_races {
                    note_arrival_hops(b, t, mb.inst);
                }
                b.thr_inst[t].push(mb.inst);
                b.mbar.get_mut(&off).unwrap().pending -= cnt;
                if op == MbarOp::ArriveDrop {
                    // Later phases expect fewer arrivals (the pending count of this one already fell).
                    let mb = b.mbar.get_mut(&off).unwrap();
                    mb.expected = mb.expected.saturating_sub(cnt);
                }
                if has_dst {
                    Self::set(w, &args[0], l, mb.phase as u64);
                }
                self.mbar_maybe_flip(b, off);
            }
            MbarOp::ExpectTx => {
                b.mbar.get_mut(&off).unwrap().tx += extra.unwrap_or(0) as i64;
            }
            MbarOp::CompleteTx => {
                b.mbar.get_mut(&off).unwrap().tx -= extra.unwrap_or(0) as i64;
                b.thr_inst[t].push(mb.inst);
                self.mbar_maybe_flip(b, off);
            }
            MbarOp::TestWait | MbarOp::TryWait | MbarOp::TestWaitParity | MbarOp::TryWaitParity => {
                let tok = extra.unwrap_or(0) as u32;
                let done = if matches!(op, MbarOp::TestWaitParity | MbarOp::TryWaitParity) {
                    (mb.phase & 1) != (tok & 1)
                } else {
                    mb.phase != tok
                };
                if done {
                    // the waiter is ordered after all arrivals of the completed phase
                    mark_mbar_waiter(b, off, t);
                } else if w.spin.1 != w.steps && self.mbar_spin(b, wi, w, l, pc, off, tok) {
                    return false;
                }
                Self::set(w, &args[0], l, done as u64);
            }
            _ => {}
        }
        true
    }

    /// A failed mbarrier wait by warp `w` (once per instruction): extends or starts its run of failed waits,
    /// and when every live warp of the block has spun on such waits for `SPIN_LIMIT` of its steps, reports
    /// the deadlock (true: faulted). The emulator completes asynchronous copies when they are issued, so
    /// a block whose every warp only waits on mbarriers has nobody left to arrive: what would otherwise
    /// run into the step limit as a `Livelock` after minutes is reported at once, with the mbarrier.
    #[allow(clippy::too_many_arguments)]
    fn mbar_spin(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        l: usize,
        pc: u32,
        off: u32,
        tok: u32,
    ) -> bool {
        if w.steps - w.spin.1 > SPIN_GAP {
            w.spin.0 = w.steps;
        }
        let before = w.spin.1.saturating_sub(w.spin.0);
        w.spin.1 = w.steps;
        let run = w.steps - w.spin.0;
        // Look at the block once per 1024 steps of the run, from SPIN_LIMIT on.
        if run < SPIN_LIMIT || run >> 10 == before >> 10 {
            return false;
        }
        let spinning = |o: &Warp| {
            o.exist == 0
                || o.all_exited()
                || (o.steps - o.spin.1 <= SPIN_GAP && o.steps - o.spin.0 >= SPIN_LIMIT / 2)
        };
        // A warp whose live lanes all wait at a `bar.sync` / `barrier.sync` will not arrive on an mbarrier
        // either: its barrier completes only when the spinning threads reach it, and they cannot leave
        // their loops.
        if !b
            .warps
            .iter()
            .enumerate()
            .all(|(i, o)| i == wi || spinning(o) || at_barrier(o))
        {
            return false;
        }
        let Some(mb) = b.mbar.get(&off).copied() else {
            return false;
        };
        let msg = format!(
            "deadlock: every warp of the block keeps waiting on mbarriers whose phases cannot complete{} (no thread is left to arrive); \
             this one waits at shared 0x{off:x} for the phase of parity {} while it is in phase {} with {} of {} arrivals done ({} still expected) and {} transaction bytes outstanding \
             (a producer and a consumer visiting different steps of a ring, consumers taking turns out of order — a ring's turns alternate consumer 0, 1, 0, 1 —, a missing arrive, or a wait for the wrong parity)",
            self.barrier_waiters_note(b),
            tok & 1,
            mb.phase,
            mb.expected.saturating_sub(mb.pending),
            mb.expected,
            mb.pending,
            mb.tx
        );
        self.fault(b, wi, Some(l as u32), pc, FaultKind::Deadlock, msg);
        true
    }

    /// For the deadlock report: the warps that wait at a barrier instead of spinning, and where (empty
    /// when there are none).
    fn barrier_waiters_note(&self, b: &Block) -> String {
        let waiting: Vec<String> = b
            .warps
            .iter()
            .enumerate()
            .filter(|(_, o)| o.exist != 0 && !o.all_exited() && at_barrier(o))
            .map(|(i, o)| {
                let l = (0..32).find(|&l| o.st[l] == Ls::Bar).unwrap_or(0);
                let line = self.m.code.get(o.pc[l] as usize).map_or(0, |x| x.line);
                format!("warp {i} at PTX line {line}")
            })
            .collect();
        if waiting.is_empty() {
            return String::new();
        }
        format!(
            ", or at a barrier the spinning warps never reach ({})",
            waiting.join(", ")
        )
    }

    /// `mbarrier.init` of the mbarrier at shared offset `off` by lane `l` with the expected arrival count
    /// (false after a fault).
    #[allow(clippy::too_many_arguments)]
    fn mbar_init(
        &mut self,
        b: &mut Block,
        wi: usize,
        l: usize,
        pc: u32,
        off: u32,
        extra: Option<u64>,
    ) -> bool {
        let cnt = extra.unwrap_or(1) as u32;
        if cnt == 0 {
            self.fault(
                b,
                wi,
                Some(l as u32),
                pc,
                FaultKind::MbarrierMisuse,
                "mbarrier.init with a zero count".into(),
            );
            return false;
        }
        let i = b.inst.len() as u32;
        b.inst.push(Inst {
            waiters: [0; THREAD_WORDS],
            completed: false,
        });
        b.mbar.insert(
            off,
            Mbar {
                expected: cnt,
                pending: cnt,
                tx: 0,
                phase: 0,
                inst: i,
                prev: None,
                remote_flips: 0,
            },
        );
        self.track(
            b,
            wi,
            l,
            Loc::Shared(off as usize),
            8,
            Acc::Write,
            pc,
            off as u64,
        );
        true
    }
}

/// Whether every live lane of warp `o` waits at a block barrier (`bar.sync`, `barrier.sync`), some at least.
fn at_barrier(o: &Warp) -> bool {
    let live = (0..32).filter(|&l| o.exist & (1 << l) != 0 && o.st[l] != Ls::Exit);
    let mut any = false;
    for l in live {
        if o.st[l] != Ls::Bar {
            return false;
        }
        any = true;
    }
    any
}

fn mark_mbar_waiter(b: &mut Block, off: u32, t: usize) {
    // `t` observed the completion of the mbarrier's most recent phase: it is ordered after every thread
    // that arrived on (or completed transactions of) that phase, and after the barriers those threads
    // had just waited on before arriving (`note_arrival_hops`).
    if let Some(prev) = b.mbar.get(&off).and_then(|mb| mb.prev) {
        b.inst[prev as usize].waiters[t / 64] |= 1 << (t % 64);
        if let Some(hops) = b.inst_hops.get(&prev) {
            for &j in hops {
                b.inst[j as usize].waiters[t / 64] |= 1 << (t % 64);
            }
        }
    }
}

/// Barrier instances arriving thread `t` waited on last (completed, `t` among their waiters), remembered
/// for the mbarrier phase `inst` it arrives on: an arrive has release semantics, cumulative over what `t`
/// was ordered after — the CUTLASS/`cuda::barrier` pattern of a warp's writes, `__syncwarp()`, and one
/// lane's arrive.
fn note_arrival_hops(b: &mut Block, t: usize, inst: u32) {
    let list = &b.thr_inst[t];
    let (tw, tb) = (t / 64, 1u64 << (t % 64));
    for &j in &list[list.len().saturating_sub(ARRIVAL_HOPS)..] {
        let waited = b.inst[j as usize].completed && b.inst[j as usize].waiters[tw] & tb != 0;
        if j != inst && waited {
            let hops = b.inst_hops.entry(inst).or_default();
            if !hops.contains(&j) {
                hops.push(j);
            }
        }
    }
}

/// How many of an arriving thread's last barrier instances its arrive carries over.
const ARRIVAL_HOPS: usize = 4;

/// Failed mbarrier waits of one warp at most this many of its steps apart are one spin (a wait, its branch
/// back and a few register instructions).
const SPIN_GAP: u64 = 8;
/// Steps of spinning, by every live warp of a block, after which the block is deadlocked.
const SPIN_LIMIT: u64 = 1 << 18;
