//! Non-bulk `cp.async` in flight (part of race detection: off with `check_races = false`, `--no-races`).
//!
//! The emulator writes a `cp.async.ca/cg.shared.global` copy's bytes when it is issued, but on a GPU they
//! land at some point before the copy completes for its thread: its `cp.async.wait_all`, a
//! `cp.async.wait_group N` that covers its group (PTX ISA §9.7.9.25.3), or the arrive-on a
//! `cp.async.mbarrier.arrive(.noinc)` triggers. Until then the destination bytes are *pending*: any read or
//! write of them, by any thread (the issuing one included), is a `DataRace` naming the copy. At completion
//! the bytes' shadow cells are written again as the issuing thread's write at that point of its program,
//! so other threads are ordered after the copy only through what orders them after the completion (a
//! `bar.sync` after the wait, the mbarrier phase the arrive-on joined), as the PTX memory model has it.
//!
//! This is the async proxy's in-flight hold (`proxy.rs`) for asynchronous *writes*, kept per shared word
//! instead of as a list of ranges, since a pipeline has a copy per thread and stage in flight (thousands of
//! ranges, against a handful of TMA boxes) and every shared access looks here.

use super::{Block, FaultKind, Shadow, L};

/// One pending copy of a thread: shared bytes `[lo, hi)`, its commit group and instruction.
#[derive(Clone, Copy, Debug)]
struct Pending {
    lo: u32,
    hi: u32,
    group: u32,
    pc: u32,
}

#[derive(Default)]
pub(super) struct CpAsyncState {
    /// Per shared word: 1 + the (block-local) thread whose pending copy writes it, 0 when none does.
    owner: Vec<u32>,
    /// Per thread: its pending copies, oldest first.
    pending: Vec<Vec<Pending>>,
    /// Per thread: `cp.async.commit_group`s so far (uncommitted copies belong to the next group).
    committed: Vec<u32>,
    /// Pending copies of the block (0: no access needs the check).
    live: usize,
}

impl CpAsyncState {
    fn ensure(&mut self, smem: usize, nthreads: usize) {
        if self.owner.len() < smem.div_ceil(4) {
            self.owner.resize(smem.div_ceil(4), 0);
        }
        if self.pending.len() < nthreads {
            self.pending.resize(nthreads, Vec::new());
            self.committed.resize(nthreads, 0);
        }
    }

    /// Whether any copy of the block is pending.
    pub(super) fn any(&self) -> bool {
        self.live != 0
    }

    /// The pending copy that writes shared bytes `[o, o + len)` first, as (thread, copy).
    fn find(&self, o: usize, len: usize) -> Option<(u32, Pending)> {
        let words = self
            .owner
            .get(o / 4..(o + len).div_ceil(4).min(self.owner.len()))?;
        let t = words.iter().copied().find(|&x| x != 0)? - 1;
        let hit = |p: &&Pending| (p.lo as usize) < o + len && o < p.hi as usize;
        let p = *self.pending.get(t as usize)?.iter().find(hit)?;
        Some((t, p))
    }
}

impl L<'_> {
    /// Records lane `lane`'s `cp.async` (issued at `pc`) of shared bytes `[o, o + len)` as pending.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cp_async_issue(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        pc: u32,
        o: usize,
        len: usize,
    ) {
        if !self.cfg.check_races || len == 0 {
            return;
        }
        let t = self.tid_of(wi, lane) as usize;
        let c = &mut b.cpa;
        c.ensure(self.smem_size, self.nthreads as usize);
        let end = (o + len).div_ceil(4).min(c.owner.len());
        for x in &mut c.owner[(o / 4).min(end)..end] {
            *x = t as u32 + 1;
        }
        let group = c.committed[t];
        c.pending[t].push(Pending {
            lo: o as u32,
            hi: (o + len) as u32,
            group,
            pc,
        });
        c.live += 1;
    }

    /// `cp.async.commit_group` by thread `t`.
    pub(super) fn cp_async_commit(&mut self, b: &mut Block, t: usize) {
        if self.cfg.check_races {
            b.cpa.ensure(0, self.nthreads as usize);
            b.cpa.committed[t] += 1;
        }
    }

    /// Thread `t`'s copies complete: those of groups below `below` (`cp.async.wait_group N`: all but the
    /// newest N committed groups), or all of them (`None`: `cp.async.wait_all`, the arrive-on of
    /// `cp.async.mbarrier.arrive`). Their bytes become the thread's write at this point of its program.
    pub(super) fn cp_async_complete(&mut self, b: &mut Block, t: usize, below: Option<u32>) {
        if !self.cfg.check_races || b.cpa.pending.get(t).is_none_or(|p| p.is_empty()) {
            return;
        }
        let done = |p: &Pending| below.is_none_or(|n| p.group < n);
        let list = std::mem::take(&mut b.cpa.pending[t]);
        let (finished, kept): (Vec<Pending>, Vec<Pending>) = list.into_iter().partition(done);
        b.cpa.pending[t] = kept;
        b.cpa.live -= finished.len();
        let cell = Shadow {
            w: b.lin * self.nthreads + t as u32 + 1,
            w_ep: b.thr_inst[t].len() as u32,
            ..Shadow::default()
        };
        for p in finished {
            let (lo, hi) = (p.lo as usize, p.hi as usize);
            for x in &mut b.cpa.owner[lo / 4..hi.div_ceil(4)] {
                // (Another thread's copy of the same bytes, reported as a race, keeps its own.)
                if *x == t as u32 + 1 {
                    *x = 0;
                }
            }
            if hi <= b.sh_shadow.len() {
                b.sh_shadow
                    .cells(lo, hi - lo)
                    .fill(Shadow { w_pc: p.pc, ..cell });
            }
        }
    }

    /// `cp.async.wait_group N` (`Some(N)`) or `cp.async.wait_all` (`None`) by thread `t`.
    pub(super) fn cp_async_wait(&mut self, b: &mut Block, t: usize, n: Option<u32>) {
        if !self.cfg.check_races {
            return;
        }
        b.cpa.ensure(0, self.nthreads as usize);
        match n {
            // wait_all is commit_group + wait_group 0 (PTX ISA): uncommitted copies complete too.
            None => self.cp_async_complete(b, t, None),
            Some(n) => {
                let below = b.cpa.committed[t].saturating_sub(n);
                self.cp_async_complete(b, t, Some(below));
            }
        }
    }

    /// An access (`what`: "read", "write", ..) by lane `lane` of warp `wi` to shared bytes `[o, o + len)`:
    /// a `DataRace` (reported once per instruction) when a pending copy writes any of them. True when
    /// it raced.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cp_async_check(
        &mut self,
        b: &Block,
        wi: usize,
        lane: usize,
        pc: u32,
        o: usize,
        len: usize,
        what: &str,
    ) -> bool {
        let Some((u, p)) = b.cpa.find(o, len) else {
            return false;
        };
        if !self.race_seen.insert(pc) {
            return true;
        }
        let tl = self.tid_of(wi, lane);
        let line = self.m.code.get(p.pc as usize).map_or(0, |i| i.line);
        let msg = format!(
            "data race on shared memory at offset {o:#x}: {what} by thread {tl} while the cp.async of shared bytes {:#x}..{:#x} by thread {u} at PTX line {line} is in flight \
             (it completes only at that thread's cp.async.wait_group / wait_all or cp.async.mbarrier.arrive, and other threads see it after a barrier or mbarrier wait that follows)",
            p.lo, p.hi
        );
        self.fault(b, wi, Some(lane as u32), pc, FaultKind::DataRace, msg);
        true
    }

    /// [`Self::cp_async_check`] of one warp instruction's lanes `lanes`, lane `l` at `offs[l]`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cp_async_check_lanes(
        &mut self,
        b: &Block,
        wi: usize,
        offs: &[usize; 32],
        lanes: u32,
        size: usize,
        what: &str,
        pc: u32,
    ) {
        let mut mm = lanes;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            if self.cp_async_check(b, wi, l, pc, offs[l], size, what) {
                return;
            }
        }
    }
}
