//! Thread-block clusters: `mapa`, `barrier.cluster`, and operations on another block's mbarrier.
//!
//! While a block of a cluster runs, the scheduler lends it the other blocks' shared memory and mbarriers
//! (`L::remote`, `L::remote_mbar`, by rank). A shared::cluster address made by `mapa` carries the target
//! block's rank + 1 in bits 24..29 (`resolve` turns it into `Loc::Remote`).

use super::*;

impl Mbar {
    /// `arrivals` arrive and `tx` bytes are expected (negative: completed) on a barrier owned by another block
    /// of the cluster; the phase completes when both counts reach zero. (The owner's race-detector
    /// bookkeeping is not updated: accesses to another block's memory are not race-checked.)
    pub(super) fn remote_update(&mut self, arrivals: u32, tx: i64) -> Result<(), String> {
        if self.pending < arrivals {
            return Err(format!(
                "remote mbarrier arrive: {arrivals} arrivals but only {} pending in this phase",
                self.pending
            ));
        }
        self.pending -= arrivals;
        self.tx += tx;
        if self.pending == 0 && self.tx == 0 {
            self.phase += 1;
            self.pending = self.expected;
            self.remote_flips += 1;
        }
        Ok(())
    }
}

impl L<'_> {
    /// Blocks per cluster.
    pub(super) fn cluster_size(&self) -> u32 {
        self.cluster[0] * self.cluster[1] * self.cluster[2]
    }

    /// A multicast bulk copy's `data` into the other blocks of `targets` (bit r = rank r) at the same offset
    /// as `dst`, each with `complete_tx` of its bytes on its mbarrier at the offset of `mb`. This block's own
    /// copy is the caller's.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn multicast_bytes(
        &mut self,
        b: &mut Block,
        wi: usize,
        l: usize,
        pc: u32,
        targets: u32,
        dst: u64,
        mb: u32,
        data: &[u8],
    ) -> bool {
        let (off, mb) = ((dst & 0xFF_FFFF) as usize, mb & 0xFF_FFFF);
        for r in 0..self.cluster_size() {
            if targets & (1 << r) == 0 || r == b.crank {
                continue;
            }
            let ok = match self.remote.get_mut(r as usize).and_then(|m| m.as_mut()) {
                Some(m) if off + data.len() <= m.len() => {
                    m[off..off + data.len()].copy_from_slice(data);
                    true
                }
                _ => false,
            };
            let tx_ok = ok
                && self
                    .remote_mbar_mut(r as usize, mb)
                    .is_some_and(|m| m.remote_update(0, -(data.len() as i64)).is_ok());
            if !tx_ok {
                let msg = format!(
                    "multicast to block rank {r}: its shared memory at {off:#x} ({} bytes) or its mbarrier at offset {mb:#x} is not there (initialised?)",
                    data.len()
                );
                self.fault(b, wi, Some(l as u32), pc, FaultKind::MbarrierMisuse, msg);
                return false;
            }
        }
        true
    }

    /// The mbarrier at shared offset `off` of block rank `r` of the cluster (lent to the running block).
    pub(super) fn remote_mbar_mut(&mut self, r: usize, off: u32) -> Option<&mut Mbar> {
        self.remote_mbar
            .get_mut(r)
            .and_then(|m| m.as_mut())
            .and_then(|m| m.get_mut(&off))
    }

    /// `mbarrier.arrive(.expect_tx)` at address `a` if it names another block's mbarrier: `Some(true)` done,
    /// `Some(false)` not remote (the caller handles it), `None` faulted.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn remote_mbar_arrive(
        &mut self,
        b: &Block,
        wi: usize,
        l: usize,
        pc: u32,
        a: u64,
        op: MbarOp,
        extra: Option<u64>,
    ) -> Option<bool> {
        let sa = if (SHARED_WINDOW..SHARED_WINDOW + WINDOW).contains(&a) {
            a - SHARED_WINDOW
        } else {
            a
        };
        let tag = ((sa >> 24) & 0x3F) as u32;
        if tag == 0 || tag - 1 == b.crank {
            return Some(false);
        }
        let (r, roff) = ((tag - 1) as usize, (sa & 0xFF_FFFF) as u32);
        let (cnt, tx) = if op == MbarOp::Arrive {
            (extra.unwrap_or(1) as u32, 0)
        } else {
            (1, extra.unwrap_or(0) as i64)
        };
        let res = match self.remote_mbar_mut(r, roff) {
            None => Err(format!(
                "mbarrier arrive on block rank {r}'s mbarrier at shared offset 0x{roff:x}, which is not initialised (or the rank is outside the cluster)"
            )),
            Some(mb) => mb.remote_update(cnt, tx),
        };
        match res {
            Ok(()) => Some(true),
            Err(msg) => {
                self.fault(b, wi, Some(l as u32), pc, FaultKind::MbarrierMisuse, msg);
                None
            }
        }
    }

    /// `mapa(.shared::cluster) d, a, rank`: the same shared variable in block `rank` of the cluster.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_mapa(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        generic: bool,
    ) -> Step {
        let args = &self.m.code[pc as usize].args;
        let csize = self.cluster_size();
        let mut mm = exec;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let a = self.val(b, w, wi, &args[1], l);
            let r = self.val(b, w, wi, &args[2], l) as u32;
            let problem = if generic && !(SHARED_WINDOW..SHARED_WINDOW + WINDOW).contains(&a) {
                Some(format!(
                    "mapa of {a:#x}, which is not a shared-memory address"
                ))
            } else if r >= csize {
                Some(format!(
                    "mapa to block rank {r}, but the cluster has {csize} blocks"
                ))
            } else {
                None
            };
            if let Some(msg) = problem {
                self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, msg);
                return Step::Stop;
            }
            let off = if generic { a - SHARED_WINDOW } else { a };
            let tagged = (off & 0xFF_FFFF) | (((r + 1) as u64) << 24);
            let v = if generic {
                SHARED_WINDOW + tagged
            } else {
                tagged
            };
            Self::set(w, &args[0], l, v);
        }
        Self::advance(w, mask);
        Step::Continue
    }

    /// `barrier.cluster.arrive` (`arrive`) / `.wait` over every thread of every block of the cluster. A wait
    /// whose phase has not completed leaves the lanes where they are (they retry).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_cluster_bar(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        arrive: bool,
    ) -> Step {
        let expected = self.cluster_expected(b.cid);
        let (arrived, phase) = self.cbar.get(&b.cid).copied().unwrap_or((0, 0));
        let lanes: Vec<usize> = (0..32).filter(|l| exec & (1 << l) != 0).collect();
        for &l in &lanes {
            let t = self.tid_of(wi, l) as usize;
            let misuse = match (arrive, b.carrive[t] != u32::MAX) {
                (true, true) => {
                    Some("barrier.cluster.arrive twice without a barrier.cluster.wait in between")
                }
                (false, false) => {
                    Some("barrier.cluster.wait without a preceding barrier.cluster.arrive")
                }
                _ => None,
            };
            if let Some(msg) = misuse {
                let msg = msg.to_string();
                self.fault(b, wi, Some(l as u32), pc, FaultKind::BarrierDivergence, msg);
                return Step::Stop;
            }
        }
        if arrive {
            let inst = self.cfg.check_races.then(|| cluster_instance(b, phase));
            for &l in &lanes {
                let t = self.tid_of(wi, l) as usize;
                b.carrive[t] = phase;
                if let Some(i) = inst {
                    b.thr_inst[t].push(i);
                }
            }
            if inst.is_some() {
                self.cluster_release(b, phase);
            }
            let now = arrived + lanes.len() as u32;
            let v = if now >= expected {
                (0, phase + 1)
            } else {
                (now, phase)
            };
            self.cbar.insert(b.cid, v);
        } else {
            if lanes
                .iter()
                .any(|&l| b.carrive[self.tid_of(wi, l) as usize] >= phase)
            {
                // The cluster's other threads have not all arrived: try again later.
                return Step::Stop;
            }
            for &l in &lanes {
                let t = self.tid_of(wi, l) as usize;
                // The race detector: every thread of the cluster arrived before this wait returns, so the
                // phase orders their earlier accesses before this thread's later ones: within the block
                // through the phase's instance, across the cluster's blocks as an acquire of their arrivals.
                if self.cfg.check_races {
                    let p = b.carrive[t];
                    if let Some(&(_, i)) = b.cinst.iter().find(|x| x.0 == p) {
                        let inst = &mut b.inst[i as usize];
                        inst.completed = true;
                        inst.waiters[t / 64] |= 1 << (t % 64);
                    }
                    self.cluster_acquire(b, t, p);
                }
                b.carrive[t] = u32::MAX;
            }
        }
        Self::advance(w, mask);
        Step::Continue
    }
}

impl L<'_> {
    /// Threads a cluster barrier phase waits for: the cluster's threads that have not exited (PTX ISA
    /// `barrier.cluster.wait`).
    fn cluster_expected(&self, cid: u32) -> u32 {
        let exited = self.cexited.get(&cid).copied().unwrap_or(0);
        (self.cluster_size() * self.nthreads).saturating_sub(exited)
    }

    /// Thread `t` of `b` exited: the cluster's barriers stop waiting for it (an arrival it made on the
    /// pending phase now counts as its exit), which may complete that phase.
    pub(super) fn cluster_exit(&mut self, b: &Block, t: usize) {
        if self.cluster_size() < 2 {
            return;
        }
        let (mut arrived, phase) = self.cbar.get(&b.cid).copied().unwrap_or((0, 0));
        if b.carrive.get(t) == Some(&phase) {
            arrived = arrived.saturating_sub(1);
        }
        *self.cexited.entry(b.cid).or_default() += 1;
        let v = if arrived > 0 && arrived >= self.cluster_expected(b.cid) {
            (0, phase + 1)
        } else {
            (arrived, phase)
        };
        self.cbar.insert(b.cid, v);
    }

    /// A thread of `b` arrived on cluster-barrier phase `phase` (`.release` semantics): the block's threads'
    /// epochs now are what the other blocks' waits on this phase are ordered after (refreshed at each
    /// arrival, so the block's last one covers every thread's accesses before its arrival).
    fn cluster_release(&mut self, b: &Block, phase: u32) {
        self.xstamp += 1;
        let rel = Released {
            block: b.lin,
            snap: std::sync::Arc::new(b.thr_inst.iter().map(|l| l.len() as u32).collect()),
            stamp: self.xstamp,
        };
        let rels = self.csnap.entry((b.cid, phase)).or_default();
        match rels.iter_mut().find(|r| r.block == b.lin) {
            Some(r) => *r = rel,
            None => rels.push(rel),
        }
        // Two phases are live at most (a thread arrives on p + 1 only after its wait on p).
        if let Some(old) = phase.checked_sub(2) {
            self.csnap.remove(&(b.cid, old));
        }
    }

    /// Thread `t` of `b` returns from its wait on cluster-barrier phase `phase` (`.acquire`): it is ordered
    /// after every other block's accesses before their arrivals, as an acquire of their releases.
    fn cluster_acquire(&mut self, b: &mut Block, t: usize, phase: u32) {
        let Some(rels) = self.csnap.get(&(b.cid, phase)) else {
            return;
        };
        let tg = b.lin * self.nthreads + t as u32;
        let e_t = b.thr_inst[t].len() as u32;
        let foreign = std::sync::Arc::make_mut(&mut b.foreign);
        for r in rels.iter().filter(|r| r.block != b.lin) {
            Foreign::acquire(foreign, r, tg, e_t, u64::MAX);
        }
    }
}

/// The race detector's instance of the block's cluster-barrier phase `phase` (made on its first arrival).
fn cluster_instance(b: &mut Block, phase: u32) -> u32 {
    if let Some(&(_, i)) = b.cinst.iter().find(|x| x.0 == phase) {
        return i;
    }
    let i = b.inst.len() as u32;
    b.inst.push(Inst {
        waiters: [0; THREAD_WORDS],
        completed: false,
    });
    // Two phases at most are live: a thread arrives at p + 1 only after its wait for p returned.
    if b.cinst.len() >= 2 {
        b.cinst.remove(0);
    }
    b.cinst.push((phase, i));
    i
}
