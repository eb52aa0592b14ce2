//! Blocks on several OS threads, with the result of one thread (issue 12).
//!
//! A launch whose blocks do not interact gives the same memory, counters and (no) faults whatever order its
//! blocks run in, so they may run on worker threads. Whether they interact is known only afterwards, so
//! the run is speculative: each worker runs whole blocks, one after another, on its own copy of global
//! memory, and every global access of a block is noted in a map shared by the workers with one state per
//! 4-byte word (untouched, read by one block, read by several, written by one block). The run is kept only
//! if no word was written by one block and read or written by another and no block did anything whose
//! result depends on the interleaving (read `%clock`/`%globaltimer`, printed, faulted, raced, wrote a kernel
//! parameter, took more than its share of the step budget); the words each block wrote are then copied
//! into global memory and the counters summed. Otherwise the run is discarded before anything of it is
//! visible and the launch runs on one thread as always, so faults, races, `printf` order and `Livelock`
//! are reported exactly as documented. docs/EMULATOR.md ("Blocks on several OS threads") has the
//! argument why a kept run equals the one-thread run.

use super::*;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};

/// Word state: written by block `b` (and perhaps read by it): `WRITTEN | (b + 1)`.
const WRITTEN: u32 = 1 << 31;
/// Word state: read by at least two blocks, written by none.
const SHARED: u32 = 1 << 30;
/// Block indices must stay below this so that `b + 1` fits beside the two flags.
const MAX_BLOCKS: u64 = (1 << 30) - 2;
/// Global memory (all allocations) times workers that a parallel run may copy; larger launches run on
/// one thread.
const MAX_COPY_BYTES: u64 = 1 << 30;

/// What the workers of one parallel run share.
pub(super) struct Spec {
    /// Per allocation, per 4-byte word: which blocks touched it (see [`note_word`]).
    words: Vec<Vec<AtomicU32>>,
    /// Set when the run cannot vouch for its result: the workers stop and the launch runs on one thread.
    abort: AtomicBool,
    /// The next block (linear index, x fastest) a worker takes.
    next: AtomicU64,
    /// One worker: the word map has no other writer, so a plain load and store replace the
    /// compare-exchange.
    single: bool,
}

/// A worker's view of the run, in its launch state (`L::spec`).
pub(super) struct Worker<'a> {
    spec: &'a Spec,
    /// Linear index of the block the worker runs now, plus one.
    me: u32,
    /// `%clock`, `%clock64`, `%globaltimer` or their high halves were read (their values count the steps
    /// of all blocks of the launch, i.e. depend on the interleaving).
    clock: Cell<bool>,
}

/// Notes one access by block `me - 1` to a word; the word's new state, or `None` when the access makes
/// two blocks interact.
fn note_word(cell: &AtomicU32, me: u32, write: bool, single: bool) -> Option<u32> {
    let mut cur = cell.load(Relaxed);
    loop {
        let next = if write {
            if cur == WRITTEN | me {
                return Some(cur);
            }
            if cur != 0 && cur != me {
                return None;
            }
            WRITTEN | me
        } else {
            if cur == me || cur == SHARED || cur == WRITTEN | me {
                return Some(cur);
            }
            if cur & WRITTEN != 0 {
                return None;
            }
            if cur == 0 {
                me
            } else {
                SHARED
            }
        };
        if single {
            cell.store(next, Relaxed);
            return Some(next);
        }
        match cell.compare_exchange_weak(cur, next, Relaxed, Relaxed) {
            Ok(_) => return Some(next),
            Err(x) => cur = x,
        }
    }
}

impl L<'_> {
    /// Notes an access of the block this worker runs (only called with `spec` set): a global access in the
    /// word map, a write of kernel parameters (shared by all blocks) as an interaction. True when the
    /// access is a read of words that several blocks have read: no block may write them any more (that
    /// would end the run), so no race can be reported on them and the race shadow need not follow them.
    pub(super) fn spec_note(&mut self, loc: Loc, size: usize, acc: Acc) -> bool {
        let Some(wk) = &self.spec else { return false };
        let (ok, shared) = match loc {
            Loc::Global(i, o) => {
                let words = &wk.spec.words[i];
                let last = (o + size.max(1) - 1) / 4;
                let mut shared = acc == Acc::Read;
                let ok = (o / 4..=last).all(|k| match words.get(k) {
                    Some(c) => {
                        let r = note_word(c, wk.me, acc != Acc::Read, wk.spec.single);
                        shared &= r == Some(SHARED);
                        r.is_some()
                    }
                    None => false,
                });
                (ok, shared)
            }
            Loc::Param(_) => (acc == Acc::Read, false),
            _ => (true, false),
        };
        if !ok {
            wk.spec.abort.store(true, Relaxed);
            self.abort = true;
        }
        shared && ok
    }

    /// [`L::spec_note`] of one warp's access to allocation `i` (the lanes of `exec`, `size` bytes at
    /// `offs[l]`) when no race check needs its per-lane answer: each word once (noting a word twice in a
    /// row for one block changes nothing), so a coalesced or broadcast access notes its few words.
    pub(super) fn spec_note_lanes(
        &mut self,
        i: usize,
        offs: &[usize; 32],
        exec: u32,
        size: usize,
        acc: Acc,
    ) {
        let Some(wk) = &self.spec else { return };
        let words = &wk.spec.words[i];
        let (write, single) = (acc != Acc::Read, wk.spec.single);
        let mut last = usize::MAX;
        let mut ok = true;
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            // An exclusive range (a word index is below usize::MAX / 4): an inclusive one's iterator costs
            // more than the one word it usually covers.
            for k in offs[l] / 4..(offs[l] + size.max(1) - 1) / 4 + 1 {
                if k != last {
                    ok &= words
                        .get(k)
                        .is_some_and(|c| note_word(c, wk.me, write, single).is_some());
                    last = k;
                }
            }
        }
        if !ok {
            wk.spec.abort.store(true, Relaxed);
            self.abort = true;
        }
    }

    /// Records a read of a special register whose value depends on the interleaving of blocks.
    pub(super) fn spec_clock(&self) {
        if let Some(wk) = &self.spec {
            wk.clock.set(true);
        }
    }
}

/// A worker's result: its copy of global memory and its counters.
struct Out {
    allocs: Vec<Alloc>,
    pic: Vec<InstrCounters>,
    atomics: u64,
    mma_ops: u64,
    ran: Vec<u64>,
}

/// Runs the launch on worker threads when it qualifies and the run shows its blocks did not interact;
/// then global memory holds the result and the report is returned. `None`: nothing changed, run the
/// launch on one thread.
pub(super) fn try_parallel(e: &mut Emulator, m: &Module, a: &LaunchArgs) -> Option<LaunchReport> {
    let total: u64 = a.grid.iter().map(|&d| d as u64).product();
    if e.cfg.threads == 0 {
        return None;
    }
    // One worker (one thread, or a grid of 2 or 3 blocks) is the same scheme on this thread: each block
    // runs to completion before the next starts, so only one block's registers and shadows are live at a
    // time instead of every resident block's (faster than the interleaved run, and exact when kept).
    let workers = (e.cfg.threads as u64).min(total / 2).max(1);
    let bytes: u64 = e.allocs.iter().map(|x| x.data.len() as u64).sum();
    let kernel = (m.id, a.fi);
    if total < 2
        || e.cfg.schedule != Schedule::RoundRobin
        || a.cluster != [1, 1, 1]
        || total > MAX_BLOCKS
        || bytes.saturating_mul(workers) > MAX_COPY_BYTES
        || e.serial_kernels.contains(&kernel)
    {
        return None;
    }
    // Global atomics almost always combine blocks' results (a sum, a counter, a ticket), often only at
    // the end of each block: such a launch would run twice. Not tried; neither is a kernel whose earlier
    // parallel run was discarded (a performance choice only: the one-thread run is always exact).
    if global_atomics(m, a.fi) {
        e.serial_kernels.insert(kernel);
        return None;
    }
    // Each block gets its share of the step budget: when every block stays within it, the launch's total
    // stays within `max_steps`, so the one-thread run would not have reported a Livelock either. One
    // worker counts the steps of all its blocks against `max_steps` itself, which is the same total.
    let cap = if workers == 1 {
        e.cfg.max_steps
    } else {
        e.cfg.max_steps / total
    };
    if cap == 0 {
        return None;
    }
    let spec = Spec {
        words: e
            .allocs
            .iter()
            .map(|x| {
                (0..x.data.len().div_ceil(4))
                    .map(|_| AtomicU32::new(0))
                    .collect()
            })
            .collect(),
        abort: AtomicBool::new(false),
        next: AtomicU64::new(0),
        single: workers == 1,
    };
    let mut cfg = e.cfg.clone();
    cfg.max_steps = cap;
    let (launch_id, src) = (e.launches, &e.allocs);
    if workers == 1 {
        let out = work(&spec, src, m, a, cfg, launch_id, total, false);
        return match out {
            Some(out) if !spec.abort.load(Relaxed) => {
                // The worker's memory is global memory after the blocks' stores: every word one block
                // wrote holds its last store, every other word is as before (what `commit` would copy).
                let report = report_of(m, std::slice::from_ref(&out), total, 0, total);
                for (dst, src) in e.allocs.iter_mut().zip(out.allocs) {
                    dst.data = src.data;
                }
                Some(report)
            }
            _ => {
                e.serial_kernels.insert(kernel);
                None
            }
        };
    }
    let outs: Vec<Option<Out>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let cfg = cfg.clone();
                std::thread::Builder::new()
                    .spawn_scoped(s, || work(&spec, src, m, a, cfg, launch_id, total, true))
            })
            .collect();
        // A thread the system refused is a discarded run (the others stop at once), not a panic.
        if handles.iter().any(|h| h.is_err()) {
            spec.abort.store(true, Relaxed);
        }
        handles
            .into_iter()
            .map(|h| h.ok().and_then(|h| h.join().unwrap_or(None)))
            .collect()
    });
    if spec.abort.load(Relaxed) || outs.iter().any(|o| o.is_none()) {
        e.serial_kernels.insert(kernel);
        return None;
    }
    let outs: Vec<Out> = outs.into_iter().flatten().collect();
    commit(e, &spec, &outs, total);
    Some(report_of(m, &outs, total, total, 0))
}

/// The report of a kept run: the workers' counters summed.
fn report_of(m: &Module, outs: &[Out], total: u64, parallel: u64, isolated: u64) -> LaunchReport {
    let mut pic = m
        .code
        .iter()
        .map(|i| InstrCounters {
            ptx_line: i.line as usize,
            ..Default::default()
        })
        .collect::<Vec<_>>();
    let mut counters = Counters::default();
    for o in outs {
        for (p, q) in pic.iter_mut().zip(&o.pic) {
            add_instr(p, q);
        }
        counters.atomics += o.atomics;
        counters.mma_ops += o.mma_ops;
    }
    for p in &pic {
        counters.add(p);
    }
    counters.blocks = total;
    LaunchReport {
        counters,
        per_instruction: pic,
        printf: Vec::new(),
        parallel_blocks: parallel,
        isolated_blocks: isolated,
    }
}

/// Whether the code the entry `fi` can reach has an atomic or reduction on global memory (or on a
/// generic address, which may be global).
fn global_atomics(m: &Module, fi: usize) -> bool {
    let mut seen = vec![false; m.funcs.len()];
    let mut todo = vec![fi];
    seen[fi] = true;
    while let Some(f) = todo.pop() {
        let (lo, hi) = (m.funcs[f].start as usize, m.funcs[f].end as usize);
        for ins in m.code.get(lo..hi).unwrap_or_default() {
            match &ins.kind {
                Kind::Atom(Space::Global | Space::Generic, ..) => return true,
                // Bulk reductions into global memory (`cp.reduce.async.bulk`, its tensor form).
                Kind::BulkReduce { cluster: false, .. } | Kind::BulkReduceTensor { .. } => {
                    return true
                }
                // An indirect call may reach any function.
                Kind::Call if !ins.args.iter().any(|a| matches!(a, Operand::Func(_))) => {
                    return true
                }
                Kind::Call => {
                    for op in &ins.args {
                        if let Operand::Func(g) = op {
                            let g = *g as usize;
                            // The device heap is shared by every block.
                            if m.funcs.get(g).is_some_and(|f| is_heap_function(&f.name)) {
                                return true;
                            }
                            if g < seen.len() && !seen[g] {
                                seen[g] = true;
                                todo.push(g);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    false
}

fn add_instr(p: &mut InstrCounters, q: &InstrCounters) {
    p.warp_instructions += q.warp_instructions;
    p.thread_instructions += q.thread_instructions;
    p.divergent_branches += q.divergent_branches;
    p.global_sectors += q.global_sectors;
    p.global_transactions += q.global_transactions;
    p.global_accesses += q.global_accesses;
    p.shared_accesses += q.shared_accesses;
    p.shared_bank_conflict_degree_sum += q.shared_bank_conflict_degree_sum;
    p.barrier_waits += q.barrier_waits;
}

/// One worker: takes blocks in order until none is left or the run is aborted; `None` when it aborted.
/// `per_block`: each block's steps count from 0 against `cfg.max_steps` (else all of the worker's).
#[allow(clippy::too_many_arguments)]
fn work(
    spec: &Spec,
    src: &[Alloc],
    m: &Module,
    a: &LaunchArgs,
    cfg: EmuConfig,
    launch_id: u64,
    total: u64,
    per_block: bool,
) -> Option<Out> {
    let mut allocs: Vec<Alloc> = src
        .iter()
        .map(|x| Alloc {
            base: x.base,
            data: x.data.clone(),
            shadow: ShadowMem::default(),
            shadow_launch: u64::MAX,
        })
        .collect();
    let entry_pc = m.funcs[a.fi].start;
    let mut l = L::new(m, &mut allocs, cfg, a, launch_id);
    l.spec = Some(Worker {
        spec,
        me: 0,
        clock: Cell::new(false),
    });
    let mut ran = Vec::new();
    while !spec.abort.load(Relaxed) {
        let k = spec.next.fetch_add(1, Relaxed);
        if k >= total {
            break;
        }
        ran.push(k);
        if let Some(wk) = &mut l.spec {
            wk.me = k as u32 + 1;
        }
        if per_block {
            l.steps = 0;
        }
        let mut b = l.new_block(k as u32, 0, entry_pc);
        loop {
            let finished = l.run_slice(&mut b);
            let clock = l.spec.as_ref().is_some_and(|w| w.clock.get());
            if l.abort || clock || !l.faults.is_empty() || !l.printf.is_empty() {
                spec.abort.store(true, Relaxed);
            }
            if spec.abort.load(Relaxed) {
                return None;
            }
            if finished {
                break;
            }
        }
    }
    if spec.abort.load(Relaxed) {
        return None;
    }
    let (pic, atomics, mma_ops) = (std::mem::take(&mut l.pic), l.atomics, l.mma_ops);
    drop(l);
    Some(Out {
        allocs,
        pic,
        atomics,
        mma_ops,
        ran,
    })
}

/// Copies every word a block wrote from its worker's memory into global memory.
fn commit(e: &mut Emulator, spec: &Spec, outs: &[Out], total: u64) {
    let mut owner = vec![0u8; total as usize];
    for (w, o) in outs.iter().enumerate() {
        for &k in &o.ran {
            owner[k as usize] = w as u8;
        }
    }
    for (i, dst) in e.allocs.iter_mut().enumerate() {
        let len = dst.data.len();
        for (k, cell) in spec.words[i].iter().enumerate() {
            let s = cell.load(Relaxed);
            if s & WRITTEN == 0 {
                continue;
            }
            let b = (s & !WRITTEN) as usize - 1;
            let from = &outs[owner[b] as usize].allocs[i].data;
            let (lo, hi) = (k * 4, (k * 4 + 4).min(len));
            dst.data[lo..hi].copy_from_slice(&from[lo..hi]);
        }
    }
}
