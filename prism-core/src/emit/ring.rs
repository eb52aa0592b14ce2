//! Rings (`ring` / `fill` / `drain`): mbarrier pipelines between a producer and consumer arms, lowered as
//! true split barriers (a full and an empty mbarrier per slot, phase parity from the step); multicast fills
//! and `peer` reads in clusters. Synchronization between the arms is the rings' own (docs/SYNC.md).

use super::hopper::tma_box;
use super::{bug, err, ring_sites, Binding, Em, Space, Val, View, R};
use crate::ast::{Block, Expr, ExprKind, Ident, Level, ScalarType};
use proc_macro2::Span;

/// A `ring`: its slots and the arrivals that complete a phase of its full / empty mbarriers (one per step
/// from each warp or thread of its `fill` / `drain` sites, `ring_sites::Arrivals`).
pub(super) struct RingInfo {
    pub stages: u32,
    pub full_count: u32,
    pub empty_count: u32,
    /// The threads of its `fill` and `drain` sites, by how they arrive.
    fills: ring_sites::Arrivals,
    drains: ring_sites::Arrivals,
    /// Its fills multicast into every block of the cluster: drains release the slot in every block.
    pub cluster: bool,
    /// `turn(r, c, ..)` sites of consumers 0 and 1, and the drains inside each consumer's turns: a ring
    /// drained in turns hands each step to one consumer, so a phase of its empty mbarriers is one
    /// consumer's arrivals, and its turn mbarrier's phase one turn's.
    turns: [ring_sites::Arrivals; 2],
    turn_drains: [ring_sites::Arrivals; 2],
    /// Arrivals that end a turn (0: the ring is not drained in turns).
    pub turn_count: u32,
    /// Where diagnostics about turns point: the first `turn` of each consumer, the first drain outside
    /// any turn.
    turn_spans: [Option<Span>; 2],
    plain_drain: Option<Span>,
    /// A register holding the parity of the turns its thread's consumer has taken (0 at the ring's start),
    /// when the ring's body reaches a `turn`.
    turn_parity: Option<String>,
}

/// How one `fill` / `drain` site arrives on a slot's mbarrier.
#[derive(Clone, Copy, Debug)]
pub(super) struct Release {
    /// Whole warps run the site: after `bar.warp.sync` (which orders every lane's accesses of the slot before
    /// it) lane 0 arrives for its warp. A phase then needs 4 arrivals per warpgroup instead of 128 (and a
    /// drain of a 2-block cluster ring 8 remote arrivals instead of 256).
    pub per_warp: bool,
    /// Blocks whose barrier it arrives on (remote arrives through `mapa`): the cluster size for the drains of
    /// a multicast ring, else 1.
    pub cluster: u32,
}

/// A drain whose wgmmas are still in flight: the predicate "its slot waits to be handed back", that slot's
/// empty mbarrier, and how the drain arrives on it.
#[derive(Clone)]
pub(super) struct Deferred {
    pub pending: String,
    pub prev: String,
    pub release: Release,
}

impl RingInfo {
    /// The mbarriers of ring `id` and their arrival counts, as (symbol, byte offset, count): a full and
    /// an empty one per slot, and the two turn mbarriers of a ring drained in turns. The kernel's entry
    /// initializes them (`instance::expand_async_waits`), a ring inside a loop again at its end (`reinit`).
    pub(super) fn mbarriers(&self, id: usize) -> Vec<(String, i64, u32)> {
        let mut out = Vec::new();
        for i in 0..self.stages as i64 {
            out.push((format!("__prism_ring{id}_full"), 8 * i, self.full_count));
            out.push((format!("__prism_ring{id}_empty"), 8 * i, self.empty_count));
        }
        for c in 0..2 * (self.turn_count > 0) as i64 {
            out.push((format!("__prism_ring{id}_turn"), 8 * c, self.turn_count));
        }
        out
    }
}

impl Em {
    /// `ring(S, (a, b), |r| ..)`: checks that every memory splits into `S` slots that keep its layout's
    /// alignment, then emits the body with `r` bound.
    pub(super) fn ring(
        &mut self,
        stages: &Expr,
        targets: &[Ident],
        name: &Ident,
        body: &Block,
        span: Span,
    ) -> R<()> {
        let n = self.const_u32(stages)?;
        let mut views = Vec::new();
        for t in targets {
            let view = match self.lookup(t)? {
                Binding::Mem { view, .. }
                    if view.space == Space::Shared && view.maps.is_empty() =>
                {
                    view
                }
                _ => {
                    return Err(err(
                        "RING",
                        t.span,
                        "a ring's memories are shared allocations themselves",
                    ))
                }
            };
            let slot_bytes = view.len as u64 / n as u64 * view.elem.size() as u64;
            if view.len % n != 0 || !slot_bytes.is_multiple_of(view.layout.align() as u64) {
                return Err(err(
                    "RING",
                    t.span,
                    format!(
                        "`{}` ({} elements) does not split into {n} slots of a multiple of {} bytes",
                        t.name,
                        view.len,
                        view.layout.align()
                    ),
                )
                .help("declare it as `Shared<[T; STAGES * SLOT], L>` with slots aligned for the layout (1024 bytes for Swizzle128)"));
            }
            views.push(view);
        }
        let id = self.rings.len();
        // Multicast fills, here or in a producer written as a device function with `cluster = N`.
        let body_of = |name: &str| self.synced.get(name).map(|f| &f.body);
        let multicast = |name: &str| name == "tma_load_multicast";
        let cluster = crate::check::reaches_call(body, &body_of, &multicast, 0) && self.cluster > 1;
        let is_turn = |s: &crate::ast::Stmt| {
            matches!(
                s.kind,
                crate::ast::StmtKind::RingUse {
                    op: crate::ast::RingOp::Turn,
                    ..
                }
            )
        };
        let turned = crate::check::reaches_stmt(body, &body_of, &is_turn, 0);
        let turn_parity = turned.then(|| self.fresh(ScalarType::U32));
        if let Some(t) = &turn_parity {
            self.line(format!("mov.u32 {t}, 0;"));
        }
        self.cluster_rings |= cluster;
        self.rings.push(RingInfo {
            stages: n,
            full_count: 0,
            empty_count: 0,
            fills: Default::default(),
            drains: Default::default(),
            cluster,
            turns: Default::default(),
            turn_drains: Default::default(),
            turn_count: 0,
            turn_spans: [None; 2],
            plain_drain: None,
            turn_parity,
        });
        let pending = self.fresh(ScalarType::Bool);
        let prev = self.fresh(ScalarType::U32);
        self.line(format!("mov.pred {pending}, 0;"));
        self.line(format!("mov.u32 {prev}, 0;"));
        let outer = self.drain_deferred.replace(Deferred {
            pending,
            prev,
            release: Release {
                per_warp: false,
                cluster: 1,
            },
        });
        self.env.push(Default::default());
        self.bind(&name.name, Binding::Ring { id, views });
        let r = self.block_inner(body);
        self.env.pop();
        self.wgmma_retire();
        self.drain_deferred = outer;
        r?;
        self.turn_counts(id, span)?;
        let ring = &mut self.rings[id];
        let drains = if ring.turn_count > 0 {
            &ring.turn_drains[0]
        } else {
            &ring.drains
        };
        let (Some(full), Some(empty)) = (ring.fills.count(), drains.count()) else {
            return Err(err(
                "RING",
                span,
                "some threads of this ring fill (or drain) it both as whole warps and alone: the compiler cannot count its arrivals",
            )
            .help("fill (drain) it from whole warps everywhere, or from the same threads everywhere"));
        };
        ring.full_count = full;
        // In a cluster ring every block's consumers release the slot in every block (a multicast refills it
        // in all of them).
        ring.empty_count = empty * if cluster { self.cluster } else { 1 };
        if ring.full_count == 0 || ring.empty_count == 0 {
            let missing = if ring.full_count == 0 {
                "no `fill`"
            } else {
                "no `drain`"
            };
            return Err(err(
                "RING",
                span,
                format!("this ring has {missing}: a ring is filled by one `fill` (a producer) and emptied by `drain`s (consumers), else one side waits forever"),
            )
            .help("fill each step in one arm (`fill(r, i, |a_s, ..| ..)`) and drain it in the others (`drain(r, i, |a_s, ..| ..)`)"));
        }
        if self.runtime_loops > 0 {
            self.reinit(id);
        }
        Ok(())
    }

    /// The end of a ring inside a run-time loop: the next iteration's ring starts at step 0 again, on
    /// mbarriers in the phases this one left them in (which match step 0's parities only when every slot
    /// went through an even number of steps). Once every thread of the block (of the cluster, for a
    /// multicast ring) is past its last arrival and wait, thread 0 invalidates and initializes them afresh
    /// (`inval` first: an mbarrier's memory is reused only after it, PTX ISA §9.7.13.15), and the block waits
    /// for the fresh ones.
    fn reinit(&mut self, id: usize) {
        let bars = self.rings[id].mbarriers(id);
        let cluster = self.rings[id].cluster;
        let all_wait = |em: &mut Em| {
            if cluster {
                em.line("barrier.cluster.arrive.release;".into());
                em.line("barrier.cluster.wait.acquire;".into());
            } else {
                em.line("bar.sync 0;".into());
            }
        };
        all_wait(self);
        let (tid, p, skip) = (
            self.fresh(ScalarType::U32),
            self.fresh(ScalarType::Bool),
            self.label(),
        );
        self.line(format!("mov.u32 {tid}, %tid.x;"));
        self.line(format!("setp.ne.u32 {p}, {tid}, 0;"));
        self.line(format!("@{p} bra {skip};"));
        for (sym, off, count) in &bars {
            self.line(format!("mbarrier.inval.shared::cta.b64 [{sym}+{off}];"));
            self.line(format!(
                "mbarrier.init.shared::cta.b64 [{sym}+{off}], {count};"
            ));
        }
        // The async proxy's complete-tx must see the fresh barriers (the other blocks too, for a cluster).
        if cluster {
            self.line("fence.mbarrier_init.release.cluster;".into());
        } else {
            self.line("fence.proxy.async.shared::cta;".into());
        }
        self.put_label(&skip);
        all_wait(self);
    }

    /// `fill` / `drain` of step `i`: wait for the slot's empty (fill) or full (drain) phase, run the body on
    /// the slot's views, then arrive on the other mbarrier. Slot `i % S`, phase parity `(i / S) % 2`; a fill
    /// waits on the parity before it, which a fresh mbarrier reports complete (the slots start empty).
    pub(super) fn ring_use(
        &mut self,
        fill: bool,
        ring: &Ident,
        index: &Expr,
        names: &[Ident],
        body: &Block,
        span: Span,
    ) -> R<()> {
        let (id, views) = match self.lookup(ring)? {
            Binding::Ring { id, views } => (id, views),
            _ => return Err(bug("RING", ring.span, "expected a ring")),
        };
        let stages = self.rings[id].stages;
        // The arrival counts are the threads that run fills and drains: without the block size they are known
        // only for one interval of threads (a split arm), not for a whole block or its `group` units.
        let counted = self.threads.is_some()
            || self.ctx.units.len() == 1 && self.ctx.persp.level == Level::Thread;
        match self.ctx.persp.level {
            _ if !counted => {
                return Err(err(
                    "RING",
                    span,
                    "this `fill`/`drain` needs the block size: declare `threads = N` on the kernel",
                )
                .help("the compiler counts the threads that fill and drain each slot"))
            }
            Level::Thread => {}
            Level::Block if self.ctx.persp.n == 1 => {}
            _ => {
                return Err(err(
                    "RING",
                    span,
                    "`fill` and `drain` run in block or thread code",
                ))
            }
        }
        let cluster = if self.rings[id].cluster {
            self.cluster
        } else {
            1
        };
        let units = self.ctx.units.clone();
        let release = Release {
            per_warp: ring_sites::whole_warps(&units),
            cluster: if fill { 1 } else { cluster },
        };
        self.count_site(id, fill, &units, release.per_warp, span)?;
        let step = self.scalar(index)?;
        let step = self.coerce(step, ScalarType::U32, index.span)?;
        let slot = self.u32_bin("rem", &step, &Val::imm_u32(stages));
        let round = self.u32_bin("div", &step, &Val::imm_u32(stages));
        let parity = self.u32_bin("rem", &round, &Val::imm_u32(2));
        let parity = if fill {
            self.u32_bin("sub", &Val::imm_u32(1), &parity)
        } else {
            parity
        };
        let (wait_side, arrive_side) = if fill {
            ("empty", "full")
        } else {
            ("full", "empty")
        };
        let wait_addr = self.ring_mbar(id, wait_side, &slot);
        let arrive_addr = self.ring_mbar(id, arrive_side, &slot);
        let par = self.op(&parity, ScalarType::U32);
        self.wait_parity(&wait_addr, &par);
        if fill {
            self.tma_slots_aligned(body, names, &views, stages)?;
        }
        self.env.push(Default::default());
        for (n, v) in names.iter().zip(&views) {
            let slot_bytes = v.len / stages * v.elem.size();
            let off = self.u32_bin("mul", &slot, &Val::imm_u32(slot_bytes));
            let base = self.u32_bin("add", &v.base, &off);
            let view = View {
                base,
                readonly: !fill,
                len: v.len / stages,
                ..v.clone()
            };
            self.bind(
                &n.name,
                Binding::Mem {
                    view,
                    persp: crate::ast::Perspective::block(1),
                },
            );
        }
        if fill && cluster > 1 {
            // Each block's full barrier expects the multicast bytes it receives, whichever block issues them.
            let bytes = multicast_bytes(body, names, &views, stages);
            if bytes > 0 {
                let r = self.rank();
                let rr = self.op(&r, ScalarType::U32);
                let p = self.fresh(ScalarType::Bool);
                self.line(format!("setp.eq.u32 {p}, {rr}, 0;"));
                self.line(format!(
                    "@{p} mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{arrive_addr}], {bytes};"
                ));
            }
        }
        let marks = self.fill_slots.len();
        if fill {
            // Copies into the slot complete on its full mbarrier (the one this fill arrives on).
            for n in names {
                self.fill_slots.push((n.name.clone(), arrive_addr.clone()));
            }
        }
        let start = self.body.len();
        let r = self.block_inner(body);
        self.fill_slots.truncate(marks);
        self.env.pop();
        r?;
        self.slot_copies_done(fill, start);
        if !fill && self.wgmma_open && self.drain_deferred.is_some() && stages >= 2 {
            // The body ends in issued wgmmas: keep them in flight across the next step. The slot goes back
            // one step late, so this needs a second slot: with one, the next fill would wait for it forever.
            self.drain_defer(&arrive_addr, release);
            return Ok(());
        }
        // The body's wgmmas retire before the slot is handed back, those a drain nested in the body keeps
        // in flight too (they may read this slot as well).
        self.wgmma_retire();
        self.ring_arrive(&arrive_addr, None, release);
        Ok(())
    }

    /// The slot goes back (to the drains, to the producer) once the body's copies are done with it: a
    /// fill's `cp_async`s have written it (they complete on no mbarrier), a drain's `tma_store`s have read
    /// it (`wait_group.read`; the global write may go on). `start`: where the body's statements begin.
    fn slot_copies_done(&mut self, fill: bool, start: usize) {
        let issued = |em: &Em, copy: &dyn Fn(&str) -> bool| {
            em.body[start..].iter().any(|p| match p {
                super::body::Piece::Stmt(crate::ptx::Stmt::Instr(i)) => copy(&i.opcode),
                _ => false,
            })
        };
        let cp_async = |op: &str| op.starts_with("cp.async.ca.") || op.starts_with("cp.async.cg.");
        let store = |op: &str| op.starts_with("cp.async.bulk.") && op.contains(".global.shared");
        if fill && issued(self, &cp_async) {
            self.raw_line("cp.async.wait_all;");
        }
        if !fill && issued(self, &store) {
            self.raw_line("cp.async.bulk.wait_group.read 0;");
        }
    }

    /// [TMA] The slots a fill's body TMA-loads start on 128 bytes: the memory's first does (a linear memory
    /// after a smaller allocation may not), and so does every other (a slot of a linear memory may be any
    /// multiple of 16 bytes). The slot's address is a register, which `tma_smem_aligned` cannot judge.
    fn tma_slots_aligned(
        &mut self,
        body: &Block,
        names: &[Ident],
        views: &[View],
        stages: u32,
    ) -> R<()> {
        let mut loaded = vec![false; names.len()];
        crate::check::walk_calls(body, &mut |name, call| {
            if !matches!(name, "tma_load" | "tma_load_multicast") {
                return;
            }
            if let ExprKind::Call { args, .. } = &call.kind {
                if let Some(ExprKind::Var(id)) = args.first().map(|a| &a.kind) {
                    if let Some(k) = names.iter().position(|n| n.name == id.name) {
                        loaded[k] = true;
                    }
                }
            }
        });
        for ((n, v), _) in names.iter().zip(views).zip(&loaded).filter(|(_, &l)| l) {
            let slot_bytes = v.len / stages * v.elem.size();
            let first = match &v.base {
                Val::Imm(super::Imm::Int(off), _) => Some(*off),
                _ => None,
            };
            let bad = match first {
                Some(off) if off % 128 != 0 => Some(format!("its slot 0 starts at byte {off} of shared memory")),
                _ if stages > 1 && !slot_bytes.is_multiple_of(128) => Some(format!(
                    "its slots are {slot_bytes} bytes long, so slot 1 starts {slot_bytes} bytes into the memory"
                )),
                _ => None,
            };
            if let Some(why) = bad {
                return Err(err(
                    "TMA",
                    n.span,
                    format!("`{}` is TMA-loaded, which needs a slot address that is a multiple of 128 bytes, but {why}", n.name),
                )
                .help("make each slot of the ring's memory a multiple of 128 bytes (`Shared<[T; STAGES * SLOT]>` with SLOT × size_of::<T>() a multiple of 128), and declare it before the kernel's smaller allocations"));
            }
        }
        Ok(())
    }

    /// `turn(r, c, || ..)`: consumer `c` of a ring drained in turns (ping-pong). Each consumer has a turn
    /// mbarrier that the other's turns complete: turn `k` of consumer 0 waits for phase `k - 1` of its own
    /// (consumer 1's turn `k - 1`; a fresh mbarrier reports the phase before 0 complete, so consumer 0 goes
    /// first), turn `k` of consumer 1 for phase `k` of its own (consumer 0's turn `k`); a turn ends by
    /// arriving on the other's. One mbarrier for both would not do: a consumer is several warps, and one
    /// that has arrived for turn `k` could wait for turn `k + 1` while its phase is still open, two phases
    /// before the one it wants, which parity cannot tell. With two, the phase a warp waits for is at most
    /// one ahead: it passed the wait for the one before. Why turns at all: a consumer that skips the
    /// other's steps could wait on a slot's full mbarrier two phases early; once the other consumer's turn
    /// has waited for every slot before this turn's first, each wait is within one phase. In a cluster ring
    /// the turns are each block's own (its full mbarriers are its own); consumer `c` of every block drains
    /// the same steps and releases each slot in every block, so a phase of the empty mbarriers is consumer
    /// `c`'s arrivals from every block.
    pub(super) fn turn(&mut self, ring: &Ident, index: &Expr, body: &Block, span: Span) -> R<()> {
        let id = match self.lookup(ring)? {
            Binding::Ring { id, .. } => id,
            _ => return Err(bug("TURN", ring.span, "expected a ring")),
        };
        let c = self.const_u32(index)?;
        if c > 1 {
            return Err(err(
                "TURN",
                index.span,
                format!("consumer {c}: a ring's drains take turns between consumers 0 and 1"),
            )
            .help(
                "`turn(r, 0, ..)` in the consumer that drains first, `turn(r, 1, ..)` in the other",
            ));
        }
        if self.turn.is_some() {
            return Err(err("TURN", span, "a `turn` inside a `turn`"));
        }
        let counted = self.threads.is_some() && self.ctx.persp.level == Level::Thread;
        if !counted {
            return Err(err(
                "TURN",
                span,
                "`turn` runs in a consumer's thread code of a kernel that declares `threads = N`",
            )
            .help("the compiler counts the threads that end each turn"));
        }
        let units = self.ctx.units.clone();
        let per_warp = ring_sites::whole_warps(&units);
        self.rings[id].turns[c as usize].add(&units, per_warp);
        self.rings[id].turn_spans[c as usize].get_or_insert(span);
        let base = self.fresh(ScalarType::U32);
        self.line(format!("mov.u32 {base}, __prism_ring{id}_turn;"));
        let (mine, theirs) = (self.fresh(ScalarType::U32), self.fresh(ScalarType::U32));
        self.line(format!("add.u32 {mine}, {base}, {};", 8 * c));
        self.line(format!("add.u32 {theirs}, {base}, {};", 8 * (1 - c)));
        // Turn k (`par` = k % 2) waits for phase k - 1 (consumer 0) or k (consumer 1) of its own mbarrier.
        let Some(par) = self.rings[id].turn_parity.clone() else {
            return Err(bug("TURN", span, "a turn in a ring whose body has none"));
        };
        let want = if c == 0 {
            let w = self.fresh(ScalarType::U32);
            self.line(format!("xor.b32 {w}, {par}, 1;"));
            w
        } else {
            par.clone()
        };
        self.wait_parity(&mine, &want);
        let outer = self.turn.replace((id, c));
        let r = self.block_inner(body);
        self.turn = outer;
        r?;
        // The turn passes once this consumer has waited for its last slot; its wgmmas may still run. Then
        // they retire and the turn's last slot goes back: kept until this consumer's next drain, it would
        // wait for the other consumer's turn, whose steps may need that slot refilled first (a deadlock).
        let release = Release {
            per_warp,
            cluster: 1,
        };
        self.ring_arrive(&theirs, None, release);
        self.raw_line(&format!("xor.b32 {par}, {par}, 1;"));
        self.wgmma_retire();
        Ok(())
    }

    /// At the end of ring `id`: a ring with `turn`s has both consumers' turns, by different threads of the
    /// same count, and every drain inside a turn, the same number of arrivals in each consumer's; sets the
    /// arrivals of its turn mbarrier.
    fn turn_counts(&mut self, id: usize, span: Span) -> R<()> {
        let ring = &mut self.rings[id];
        if ring.turns.iter().all(|t| t.is_empty()) {
            return Ok(());
        }
        let first_turn = ring.turn_spans.iter().flatten().next().copied();
        let fail_at = |at: Span, m: &str| -> R<()> {
            Err(err("TURN", at, m.to_string()).help(
                "drain a ring in turns from two consumer arms of the same size: `turn(r, 0, || { .. drain(r, ..) .. })` in one, `turn(r, 1, ..)` in the other",
            ))
        };
        let fail = |m: &str| fail_at(first_turn.unwrap_or(span), m);
        if let Some(at) = ring.plain_drain {
            return fail_at(at, "this ring is drained in turns (it has a `turn`): every drain of it runs inside a `turn`, where it counts as that consumer's");
        }
        if ring.turns.iter().any(|t| t.is_empty()) {
            return fail("this ring is drained in turns by one consumer only: `turn(r, 0, ..)` and `turn(r, 1, ..)` are both needed");
        }
        if ring.turns[0].meets(&ring.turns[1]) {
            return fail("the two consumers of a ring's turns are different threads");
        }
        let (Some(a), Some(b)) = (ring.turns[0].count(), ring.turns[1].count()) else {
            return fail("some threads take a turn both as whole warps and alone: the compiler cannot count its arrivals");
        };
        let (Some(da), Some(db)) = (ring.turn_drains[0].count(), ring.turn_drains[1].count())
        else {
            return fail("some threads drain a turn's slots both as whole warps and alone: the compiler cannot count its arrivals");
        };
        if a != b || da != db || da == 0 {
            return fail("the two consumers of a ring's turns must be alike: the same threads per turn, each draining inside its turns");
        }
        ring.turn_count = a;
        Ok(())
    }

    /// Counts a `fill` / `drain` site of ring `id` among the arrivals of its fills, its drains, or (inside a
    /// `turn` of the ring) that consumer's drains.
    fn count_site(
        &mut self,
        id: usize,
        fill: bool,
        units: &[(u32, u32)],
        per_warp: bool,
        span: Span,
    ) -> R<()> {
        let turn = self.turn.filter(|&(r, _)| r == id).map(|(_, c)| c as usize);
        if fill && turn.is_some() {
            return Err(err(
                "TURN",
                span,
                "a `fill` inside a `turn` of its own ring: the producer fills, the consumers take turns draining",
            ));
        }
        let ring = &mut self.rings[id];
        if !fill && turn.is_none() {
            ring.plain_drain.get_or_insert(span);
        }
        match turn {
            Some(c) => &mut ring.turn_drains[c],
            None if fill => &mut ring.fills,
            None => &mut ring.drains,
        }
        .add(units, per_warp);
        Ok(())
    }

    /// Spins until the phase of parity `parity` of the mbarrier at `addr` has completed.
    fn wait_parity(&mut self, addr: &str, parity: &str) {
        let p = self.fresh(ScalarType::Bool);
        let again = self.label();
        self.put_label(&again);
        self.line(format!(
            "mbarrier.try_wait.parity.shared::cta.b64 {p}, [{addr}], {parity};"
        ));
        self.line(format!("@!{p} bra {again};"));
    }

    /// One arrival on the ring mbarrier at `addr` (under `guard` when given), as `release` says: by lane 0
    /// of each warp after `bar.warp.sync`, or by every thread; on this block's barrier, or through `mapa`
    /// on the same barrier of every block of the cluster (a multicast refills the slot in all of them).
    /// Never ends a wgmma run: callers retire the run first, or keep its group in flight on purpose.
    pub(super) fn ring_arrive(&mut self, addr: &str, guard: Option<&str>, release: Release) {
        let mut guard = guard.map(str::to_string);
        if release.per_warp {
            self.raw_line("bar.warp.sync -1;");
            let lane = self.fresh(ScalarType::U32);
            let first = self.fresh(ScalarType::Bool);
            self.raw_line(&format!("mov.u32 {lane}, %laneid;"));
            self.raw_line(&format!("setp.eq.u32 {first}, {lane}, 0;"));
            if let Some(g) = guard {
                self.raw_line(&format!("and.pred {first}, {first}, {g};"));
            }
            guard = Some(first);
        }
        let at = guard.map(|g| format!("@{g} ")).unwrap_or_default();
        if release.cluster <= 1 {
            self.raw_line(&format!("{at}mbarrier.arrive.shared::cta.b64 _, [{addr}];"));
            return;
        }
        // The default semantics (`.release` at `.cta` scope), as CUTLASS's cluster barriers arrive: what the
        // arrival must order is this block's reads of its own slot before the refill lands in it. A release
        // at `.cluster` scope assembles to MEMBAR.ALL.CTA + MEMBAR.ALL.GPU + ERRBAR + CGAERRBAR before each
        // arrival (ptxas 12.9, sm_90a): a full fence twice per consumer warp and k-step.
        for r in 0..release.cluster {
            let remote = self.fresh(ScalarType::U32);
            self.raw_line(&format!("mapa.shared::cluster.u32 {remote}, {addr}, {r};"));
            self.raw_line(&format!(
                "{at}mbarrier.arrive.shared::cluster.b64 _, [{remote}];"
            ));
        }
    }

    /// `tma_load_multicast(slot, map, c0, ..)` in a `fill` of a cluster kernel: one thread copies the box into
    /// the same slot of every block of the cluster, completing transactions on each block's full barrier (whose
    /// bytes every block's fill expects, see `ring_use`).
    pub(super) fn tma_load_multicast(&mut self, args: &[Expr], span: Span) -> R<()> {
        let slot_mbar = self.fill_slot_mbarrier(&args[0]);
        let Some(mbar) = slot_mbar else {
            return Err(err(
                "RING",
                args[0].span,
                "`tma_load_multicast` fills a slot of a ring (a `fill` name): every block's fill expects its bytes",
            ));
        };
        self.tma_issuer("tma_load_multicast", &args[0], span)?;
        let dst = self.mem_arg(&args[0])?;
        self.tma_smem_aligned(&dst, "the box's destination", args[0].span)?;
        let (param, map, elem, rank) = self.tensor_map(&args[1])?;
        self.tma_loaded.insert(param);
        if args.len() != 2 + rank as usize || dst.elem != elem {
            return Err(err(
                "EMIT-CALL",
                span,
                format!("`tma_load_multicast` with a rank-{rank} map of {elem}"),
            ));
        }
        let box_dims =
            tma_box(dst.layout, dst.len, elem, rank).map_err(|m| err("TMA", args[0].span, m))?;
        self.record_tma_use(param, box_dims, dst.layout, args[0].span)?;
        let da = self.address_raw(&dst, vec![Val::imm_u32(0)], args[0].span)?;
        let mut coords = Vec::new();
        for c in &args[2..] {
            let v = self.scalar(c)?;
            coords.push(self.reg(&v, v.ty().unwrap_or(ScalarType::U32)));
        }
        let mask = self.fresh(ScalarType::F16);
        self.line(format!("mov.b16 {mask}, {};", (1u32 << self.cluster) - 1));
        self.line(format!(
            "cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{da}], [{map}, {{{}}}], [{mbar}], {mask};",
            coords.join(", ")
        ));
        self.sm90a = true;
        Ok(())
    }

    /// `peer(s, r, |s_r| ..)`: a cluster barrier (every block's earlier writes of `s` visible), the body with
    /// `s_r` reading block `r`'s `s` through `mapa` + `ld.shared::cluster`, and a cluster barrier (no block
    /// rewrites `s` or exits while another still reads it).
    pub(super) fn peer(
        &mut self,
        target: &Ident,
        rank: &Expr,
        new_name: &Ident,
        body: &Block,
    ) -> R<()> {
        let view = match self.lookup(target)? {
            Binding::Mem { view, .. } if view.space == Space::Shared => view,
            _ => {
                return Err(bug(
                    "CLUSTER",
                    target.span,
                    "`peer` reads a shared allocation",
                ))
            }
        };
        let r = self.scalar(rank)?;
        let r = self.coerce(r, ScalarType::U32, rank.span)?;
        let r = Val::Reg(self.reg(&r, ScalarType::U32), ScalarType::U32);
        self.line("barrier.cluster.arrive.release;".into());
        self.line("barrier.cluster.wait.acquire;".into());
        self.env.push(Default::default());
        self.bind(
            &new_name.name,
            Binding::Mem {
                view: View {
                    readonly: true,
                    peer: Some(r),
                    ..view
                },
                persp: crate::ast::Perspective::block(1),
            },
        );
        let out = self.block_inner(body);
        self.env.pop();
        out?;
        self.line("barrier.cluster.arrive.release;".into());
        self.line("barrier.cluster.wait.acquire;".into());
        Ok(())
    }

    /// The address of slot `slot`'s `side` mbarrier of ring `id`.
    fn ring_mbar(&mut self, id: usize, side: &str, slot: &Val) -> String {
        let base = self.fresh(ScalarType::U32);
        self.line(format!("mov.u32 {base}, __prism_ring{id}_{side};"));
        let a = self.fresh(ScalarType::U32);
        let s = self.op(slot, ScalarType::U32);
        self.line(format!("mad.lo.u32 {a}, {s}, 8, {base};"));
        a
    }

    /// The end of a `drain` whose body left wgmmas issued: commit them and keep them in flight while the next
    /// step's are issued (`wait_group 1`, PTX ISA §9.7.15.7.3): the previous drain's group is then retired, so
    /// its slot goes back to the producer now; this one's goes back at the next drain or when the run is
    /// retired (`drain_deferred`: a predicate, false until a drain defers, and the slot's empty mbarrier).
    fn drain_defer(&mut self, arrive_addr: &str, release: Release) {
        let Some(d) = self.drain_deferred.clone() else {
            return;
        };
        self.raw_line("wgmma.commit_group.sync.aligned;");
        self.raw_line("wgmma.wait_group.sync.aligned 1;");
        // The slot waiting is this site's from the previous step (at run time: a loop around this drain) or
        // one of the same threads' (a drain before it in the same arm): either way it arrives as this one.
        self.ring_arrive(&d.prev, Some(&d.pending), release);
        self.raw_line(&format!("mov.u32 {}, {arrive_addr};", d.prev));
        self.raw_line(&format!("mov.pred {}, 1;", d.pending));
        if let Some(d) = &mut self.drain_deferred {
            d.release = release;
        }
        self.wgmma_open = false;
        self.wgmma_inflight = true;
    }
}

/// Bytes the `tma_load_multicast` calls of a fill body write into its slots (each fills a whole slot).
fn multicast_bytes(body: &Block, names: &[Ident], views: &[View], stages: u32) -> u64 {
    let mut bytes = 0u64;
    crate::check::walk_calls(body, &mut |name, call| {
        if name != "tma_load_multicast" {
            return;
        }
        if let ExprKind::Call { args, .. } = &call.kind {
            if let Some(ExprKind::Var(id)) = args.first().map(|a| &a.kind) {
                if let Some(i) = names.iter().position(|n| n.name == id.name) {
                    if let Some(v) = views.get(i) {
                        bytes += (v.len / stages) as u64 * v.elem.size() as u64;
                    }
                }
            }
        }
    });
    bytes
}
