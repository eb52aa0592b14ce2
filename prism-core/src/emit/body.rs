//! The kernel body as the PTX model (`crate::ptx`): lowerings append statements; late decisions are passes
//! over the statements (the block-wide async waits expanded once the mbarriers are known, the join points
//! of wgmma runs found by the branches that name them), and the module is assembled as a model and printed
//! by the model's printer. Lowerings still write an instruction as PTX text (`line`); it is read by the
//! model's parser at once, so the text is checked there and nothing downstream handles text.

use crate::ptx::{self, Address, Instruction, Operand, Stmt};

use super::*;

/// One element of the body under construction.
pub(super) enum Piece {
    Stmt(Stmt),
    /// A block-wide wait for asynchronous copies: `cp.async.wait_all` and a phase of every bulk-copy
    /// mbarrier, which exist only once the whole body is lowered (`expand_async_waits`).
    AsyncWait,
    /// The wait after a `tma_store` through kernel parameter `.0`: until the box is read
    /// (`cp.async.bulk.wait_group.read 0`), or until the global write is done where the kernel also loads
    /// through that map (`expand_async_waits` knows once the whole body is lowered).
    BulkStoreWait(usize),
    /// A statement of the emitter's own bookkeeping (`raw_line`: ring arrives, wgmma commits and waits),
    /// never a point where a pending TMA store must have read its box.
    Own(Stmt),
}

/// A register or symbol operand.
pub(super) fn name(n: &str) -> Operand {
    Operand::Name(n.to_string())
}

/// An immediate operand.
pub(super) fn imm(v: i64) -> Operand {
    Operand::Int(v)
}

/// `[base]` or `[base+offset]`.
pub(super) fn at(base: &str, offset: Option<i64>) -> Operand {
    Operand::Addr(Address {
        base: Some(base.to_string()),
        offset,
    })
}

/// An unguarded instruction statement.
pub(super) fn ins(opcode: &str, operands: Vec<Operand>) -> Stmt {
    Stmt::Instr(Instruction::new(opcode, operands))
}

/// A guarded instruction statement (`@p` / `@!p`).
pub(super) fn ins_if(negated: bool, pred: &str, opcode: &str, operands: Vec<Operand>) -> Stmt {
    let mut i = Instruction::new(opcode, operands);
    i.guard = Some(ptx::Guard {
        negated,
        pred: pred.to_string(),
    });
    Stmt::Instr(i)
}

pub(super) fn label_stmt(l: &str) -> Stmt {
    Stmt::Label(ptx::Label {
        pos: ptx::Pos::default(),
        name: l.to_string(),
    })
}

/// Statements before which in-flight wgmmas must have retired: control flow (another path may touch the
/// accumulators), barriers and mbarrier operations (they publish the operand slots to other threads).
pub(super) fn ends_wgmma_run(s: &Stmt) -> bool {
    match s {
        Stmt::Instr(i) => {
            let o = i.opcode.as_str();
            i.guard.is_some()
                || matches!(i.op(), "bra" | "ret" | "exit")
                || o.starts_with("bar")
                || o.starts_with("mbarrier")
                || o.starts_with("cp.async")
                // Stores that may reach shared memory (the operands); loads and global stores cannot
                // disturb a wgmma (its accumulators are registers the statement would name).
                || (i.op() == "st" && i.space() != Some(ptx::Space::Global))
        }
        Stmt::Block(b) => b.stmts.iter().any(ends_wgmma_run),
        _ => false,
    }
}

/// Barriers (one of them orders the rewrite of a stored box) and returns: where pending TMA stores wait.
fn waits_for_stores(op: &str) -> bool {
    matches!(op, "ret" | "exit") || op.starts_with("bar")
}

impl Em {
    /// Appends the statements of `l`, PTX text written by a lowering. Text the model cannot read is a bug
    /// of the emitter, reported as an internal error when the kernel is finished.
    pub(super) fn line(&mut self, l: String) {
        match ptx::parse_stmts(&l) {
            Ok(stmts) => {
                // Issued, uncommitted wgmmas end at control flow and synchronization; a committed group a
                // drain keeps in flight does not (the drain's own wait and the loop around it touch no
                // accumulator).
                if self.wgmma_open && stmts.first().is_some_and(ends_wgmma_run) {
                    self.wgmma_retire();
                }
                for s in &stmts {
                    self.bulk_waits_before(s);
                }
                self.body.extend(stmts.into_iter().map(Piece::Stmt));
            }
            Err(e) => self.internal(format!("the emitter wrote `{l}`, which is not PTX: {e}")),
        }
    }

    /// Appends statements that never end a wgmma run (the run's own bookkeeping).
    pub(super) fn raw_line(&mut self, l: &str) {
        match ptx::parse_stmts(l) {
            Ok(stmts) => self.body.extend(stmts.into_iter().map(Piece::Own)),
            Err(e) => self.internal(format!("the emitter wrote `{l}`, which is not PTX: {e}")),
        }
    }

    /// Appends already-built statements (inline assembly), each ending a wgmma run as `line` would.
    pub(super) fn stmts(&mut self, stmts: Vec<Stmt>) {
        for s in stmts {
            if self.wgmma_open && ends_wgmma_run(&s) {
                self.wgmma_retire();
            }
            self.bulk_waits_before(&s);
            self.body.push(Piece::Stmt(s));
        }
    }

    /// Appends one unguarded instruction built as a model value (ending a wgmma run as `line` would).
    pub(super) fn emit(&mut self, opcode: &str, operands: Vec<Operand>) {
        self.stmts(vec![ins(opcode, operands)]);
    }

    /// A block-wide wait for asynchronous copies (expanded by `expand_async_waits`).
    pub(super) fn async_wait(&mut self) {
        if self.wgmma_open {
            self.wgmma_retire();
        }
        self.body.push(Piece::AsyncWait);
    }

    /// `tma_store`s wait for their boxes to be read lazily: before every later barrier (one of them orders
    /// the rewrite of a box; the inference places it) and `ret`/`exit`, and, in a loop around the store,
    /// before those of the loop body above it, which the next iteration meets first. Statements the
    /// emitter writes for itself (`raw_line`, `Piece::Own`: ring arrives, wgmma bookkeeping) are never such
    /// points. So a warpgroup that stores several boxes issues them back to back and goes on to the next
    /// tile's loads and wgmmas; a wait with nothing outstanding costs next to nothing.
    pub(super) fn bulk_waits_before(&mut self, s: &Stmt) {
        if let Stmt::Label(l) = s {
            self.labels.insert(l.name.clone(), self.body.len());
        }
        let Some(at) = self.bulk_pending_since else {
            return;
        };
        let Stmt::Instr(i) = s else { return };
        let op = i.op();
        let back_to = match op {
            "bra" => i.operands.first().and_then(|o| match o {
                Operand::Name(l) => self.labels.get(l.as_str()).copied(),
                _ => None,
            }),
            _ => None,
        };
        if let Some(head) = back_to.filter(|&h| h < at) {
            // A loop around the stores: the next iteration reaches the loop's own barriers (and exits)
            // before this point, so they wait too (a wait with nothing pending costs nothing); the stores
            // stay pending for the code after the loop.
            self.bulk_waits_in_loop(head, at);
            return;
        }
        if waits_for_stores(op) {
            // The stores stay pending: this barrier may sit on one path only (an `if`), and a wait with
            // nothing left to wait for costs next to nothing before the later ones.
            for &p in &self.bulk_pending {
                self.body.push(Piece::BulkStoreWait(p));
            }
        }
    }

    /// Puts the pending stores' waits before every wait point of the loop body `head .. at` (barriers,
    /// returns, branches back above `head`), where the next iteration meets them first.
    fn bulk_waits_in_loop(&mut self, head: usize, at: usize) {
        let labels = &self.labels;
        let points: Vec<usize> = (head..at.min(self.body.len()))
            .filter(|&k| match &self.body[k] {
                Piece::Stmt(Stmt::Instr(i)) => {
                    let op = i.op();
                    waits_for_stores(op)
                        || (op == "bra"
                            && i.operands.first().is_some_and(|o| match o {
                                Operand::Name(l) => {
                                    labels.get(l.as_str()).is_some_and(|&p| p < head)
                                }
                                _ => false,
                            }))
                }
                _ => false,
            })
            .collect();
        let pending = self.bulk_pending.clone();
        for &k in points.iter().rev() {
            for &p in pending.iter().rev() {
                self.body.insert(k, Piece::BulkStoreWait(p));
            }
        }
        let shift = |pos: usize| pos + pending.len() * points.iter().filter(|&&k| k <= pos).count();
        for pos in self.labels.values_mut() {
            *pos = shift(*pos);
        }
        self.bulk_pending_since = self.bulk_pending_since.map(shift);
    }

    pub(super) fn put_label(&mut self, l: &str) {
        // A join point of a forward branch: that path retired its wgmmas before branching, but may have
        // touched the accumulators since, so the next wgmma fences again.
        if self.wgmma_open && self.branches_to(l) {
            self.wgmma_fenced = false;
        }
        self.labels.insert(l.to_string(), self.body.len());
        self.body.push(Piece::Stmt(label_stmt(l)));
    }

    /// Whether an instruction emitted so far names label `l`.
    fn branches_to(&self, l: &str) -> bool {
        self.body.iter().any(|p| match p {
            Piece::Stmt(s) | Piece::Own(s) => s.instructions().any(|i| i.mentions(l)),
            Piece::AsyncWait | Piece::BulkStoreWait(_) => false,
        })
    }

    fn internal(&mut self, message: String) {
        if self.internal_error.is_none() {
            self.internal_error = Some(message);
        }
    }
}
