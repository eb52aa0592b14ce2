//! `split` statements (each arm a contiguous range of warps or blocks) and explicit barriers.

use super::*;

impl Em {
    /// S-SPLIT-LEFT/RIGHT: each arm runs on the threads (blocks) whose rank lies in its range.
    pub(super) fn split(&mut self, level: Level, arms: &[SplitArm], span: Span) -> R<()> {
        let mut off: u32 = 0;
        for arm in arms {
            let saved = self.ctx.clone();
            let skip = self.label();
            let (range_start, uni) = match level {
                Level::Thread => {
                    let rank = self.rank();
                    let rel = self.u32_bin("sub", &rank, &Val::imm_u32(off));
                    self.ctx = Ctx {
                        persp: Perspective::thread(arm.size),
                        blk: Val::imm_u32(0),
                        thr: rel.clone(),
                        units: ring_sites::split_arm(&saved.units, off, arm.size),
                    };
                    (rel, off.is_multiple_of(32) && arm.size.is_multiple_of(32))
                }
                Level::Block => {
                    if saved.persp.level == Level::Thread {
                        return Err(bug(
                            "T-SPLIT",
                            span,
                            "a block split needs block- or grid-level code",
                        ));
                    }
                    let b = saved.blk.clone();
                    let rel = self.u32_bin("sub", &b, &Val::imm_u32(off));
                    self.ctx = Ctx {
                        persp: Perspective::block(arm.size),
                        blk: rel.clone(),
                        thr: saved.thr.clone(),
                        units: saved.units.clone(),
                    };
                    (rel, true)
                }
                Level::Grid => return Err(bug("T-SPLIT", span, "a grid cannot be split")),
            };
            // rel = rank - off (wrapping): one unsigned compare tests off <= rank < off + size.
            match range_start.as_int() {
                Some(x) if (x as u32) < arm.size => {}
                Some(_) => {
                    // The arm never runs here (constant rank outside it).
                    self.ctx = saved;
                    off += arm.size;
                    continue;
                }
                None => {
                    let p = self.fresh(ScalarType::Bool);
                    let r = self.op(&range_start, ScalarType::U32);
                    self.line(format!("setp.ge.u32 {p}, {r}, {};", arm.size));
                    let bra = if uni { "bra.uni" } else { "bra" };
                    self.line(format!("@{p} {bra} {skip};"));
                }
            }
            let r = self.block(&arm.body);
            // wgmmas an arm leaves in flight (a drain keeps its group in flight) retire in the arm: the
            // other arms' threads must not run the warpgroup-aligned wait.
            self.wgmma_retire();
            self.ctx = saved;
            r?;
            self.put_label(&skip);
            off = off
                .checked_add(arm.size)
                .ok_or_else(|| bug("T-SPLIT", arm.size_span, "split sizes overflow"))?;
        }
        Ok(())
    }

    pub(super) fn barrier(&mut self, b: Barrier, span: Span) -> R<()> {
        if self.proxy_fences && !(b.at.level == Level::Thread && b.at.n == 1) {
            // Generic-proxy writes to shared memory become visible to wgmma (async proxy) only after a
            // proxy fence by the writers, before the barrier that publishes them (PTX ISA §9.7.13.4, §9.7.15.4: the async proxy).
            self.line("fence.proxy.async.shared::cta;".to_string());
        }
        if b.wait_async {
            // Block-wide waits also cover bulk copies (their mbarriers count every thread of the block).
            let block_wide = match b.at.level {
                Level::Block => b.at.n == 1,
                Level::Thread => self.t.as_int() == Some(b.at.n as i128),
                Level::Grid => false,
            };
            if block_wide {
                self.async_wait();
            } else {
                self.line("cp.async.wait_all;".to_string());
            }
        }
        let p = b.at;
        match p.level {
            Level::Grid => Ok(()),
            Level::Block if p.n > 1 => Ok(()),
            Level::Block => {
                self.line("bar.sync 0;".to_string());
                Ok(())
            }
            Level::Thread => {
                let n = p.n;
                if n == 1 {
                    return Ok(());
                }
                if self.t.as_int() == Some(n as i128) {
                    self.line("bar.sync 0;".to_string());
                } else if n == 32 {
                    self.line("bar.warp.sync -1;".to_string());
                } else if n.is_multiple_of(32) {
                    // Named barrier per unit: id = first + tid / n, with ids `first..first + units`
                    // reserved for this group size (barrier 0 is the whole block's). Groups of different
                    // sizes get disjoint ids, so units of different sizes in different split arms never
                    // count toward one barrier.
                    let max_t = self.t.as_int().map(|t| t as u32).unwrap_or(1024);
                    let units = max_t.div_ceil(n);
                    let first = match self.named_bars.iter().find(|(m, _)| *m == n) {
                        Some((_, f)) => *f,
                        None => {
                            let f = self.next_bar;
                            if f + units - 1 > crate::hw::NAMED_BARRIERS - 1 {
                                return Err(err(
                                    "SYNC-NAMED",
                                    span,
                                    format!(
                                        "synchronizing thread[{n}] units needs {units} named barriers; the hardware has 15 \
                                         besides barrier 0 and {} are taken by other group sizes",
                                        f - 1
                                    ),
                                )
                                .help("fix the block size with `threads = N` in the kernel attribute, or use a larger perspective"));
                            }
                            self.named_bars.push((n, f));
                            self.next_bar = f + units;
                            f
                        }
                    };
                    let tid = self.tid.clone();
                    let q = self.u32_bin("div", &tid, &Val::imm_u32(n));
                    let id = self.u32_bin("add", &q, &Val::imm_u32(first));
                    let ido = self.op(&id, ScalarType::U32);
                    self.line(format!("bar.sync {ido}, {n};"));
                } else if n < 32 && 32 % n == 0 {
                    // Lanes of this thread's unit: ((1 << n) - 1) << (lane / n · n).
                    let tid = self.tid.clone();
                    let lane = self.u32_bin("rem", &tid, &Val::imm_u32(32));
                    let q = self.u32_bin("div", &lane, &Val::imm_u32(n));
                    let sh = self.u32_bin("mul", &q, &Val::imm_u32(n));
                    let m = self.fresh(ScalarType::U32);
                    let sho = self.op(&sh, ScalarType::U32);
                    self.line(format!("shl.b32 {m}, {}, {sho};", (1u64 << n) - 1));
                    self.line(format!("bar.warp.sync {m};"));
                } else {
                    return Err(err(
                        "SYNC-NAMED",
                        span,
                        format!("no barrier synchronizes thread[{n}]: below 32 the size must divide 32, above it be a multiple of 32"),
                    ));
                }
                Ok(())
            }
        }
    }
}
