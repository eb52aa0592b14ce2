//! `wgmma` (sm_90a warpgroup MMA, PTX §9.7.15): `fence`, `commit_group`, `wait_group N` and
//! `mma_async.m64nNkK` with f32 or f16 accumulators, bf16 or f16 inputs (k16), tf32 (k8), FP8 e4m3/e5m2 (k32,
//! f32 or f16 accumulators), 8-bit integers (k32, s32 accumulators), A from a shared-memory descriptor
//! or from registers, B from a descriptor, every swizzle mode, K-major and MN-major.
//!
//! Model (docs/EMULATOR.md): a warpgroup is warps 4g..4g+3 of the block. Each warp issues its part of an
//! op (its lanes' A fragments and accumulator inputs); the k-th op a warp issues pairs with the k-th op of
//! the other three, which must be the same instruction. The op is computed when its fourth part arrives
//! (shared memory is read then). `commit_group` closes a warp's pending ops into a group; `wait_group N`
//! blocks until every group but the newest N is computed, then writes this warp's results into the
//! accumulator registers: results become visible at the wait that retires them, not at issue, so code that
//! reads accumulators without the wait reads the old values, as on hardware where that read is undefined.
//!
//! Layouts (measured on an H100, docs/HOPPER-PROBES.md): descriptor fields start/LBO/SBO in 16-byte units,
//! swizzle code in bits 62-63 (0 none, 1 128B, 2 64B, 3 32B); the accumulator fragment of thread t, register
//! r is row 16·(t/32) + (t%32)/4 + 8·((r/2)%2), column 8·(r/4) + 2·(t%4) + r%2; the A register fragment
//! follows the same formula with N = 16; f16 accumulators pack elements 2j (low) and 2j+1 (high) in register j.

use std::collections::{HashMap, VecDeque};

use super::{Block, FaultKind, Ls, Operand, Step, Warp, L, TOPBIT};
use crate::emu::ptx::{Kind, PtxType, WgElem, WgmmaOp, WgmmaShape};

/// The wgmma state of one block: one entry per warpgroup that issued anything.
#[derive(Default)]
pub(super) struct WgState {
    groups: HashMap<u32, WarpGroup>,
    /// The register count each warpgroup set with `setmaxnreg`.
    maxnreg: HashMap<u32, u32>,
    /// Per warp of the block: registers of its wgmma ops not yet retired (with multiplicity).
    busy: Vec<Vec<u32>>,
    /// Per warp of the block: the `setmaxnreg` instructions it executed, in order.
    setmaxnreg: Vec<Vec<u32>>,
}

fn reg_indices(op: &Operand, out: &mut Vec<u32>) {
    match op {
        Operand::Reg(r) | Operand::PredNot(r) => out.push(*r),
        Operand::Vec(v) | Operand::List(v) => v.iter().for_each(|o| reg_indices(o, out)),
        Operand::Addr(super::AddrBase::Reg(r), _) => out.push(*r),
        _ => {}
    }
}

impl WgState {
    /// Whether warp `wi` has wgmma registers in flight.
    pub(super) fn warp_busy(&self, wi: usize) -> bool {
        self.busy.get(wi).is_some_and(|v| !v.is_empty())
    }

    /// The first register among `args` that a wgmma of warp `wi` still owns.
    pub(super) fn touched(&self, wi: usize, args: &[Operand]) -> Option<u32> {
        let busy = self.busy.get(wi)?;
        let mut regs = Vec::new();
        args.iter().for_each(|a| reg_indices(a, &mut regs));
        regs.into_iter().find(|r| busy.contains(r))
    }

    fn mark(&mut self, wi: usize, regs: &[u32]) {
        if self.busy.len() <= wi {
            self.busy.resize(wi + 1, Vec::new());
        }
        self.busy[wi].extend_from_slice(regs);
    }

    fn unmark(&mut self, wi: usize, regs: &[u32]) {
        if let Some(v) = self.busy.get_mut(wi) {
            for r in regs {
                if let Some(i) = v.iter().position(|x| x == r) {
                    v.swap_remove(i);
                }
            }
        }
    }
}

/// The accumulator and A-fragment registers of the wgmma at `args` (they stay the op's until retired).
fn owned_regs(args: &[Operand], a_regs: bool) -> Vec<u32> {
    let mut v = Vec::new();
    reg_indices(&args[0], &mut v);
    if a_regs {
        reg_indices(&args[1], &mut v);
    }
    v
}

#[derive(Default)]
struct WarpGroup {
    ops: Vec<WgOp>,
    warps: [PerWarp; 4],
}

#[derive(Default)]
struct PerWarp {
    /// Ops this warp has issued (its index into `ops` for the next one).
    issued: usize,
    uncommitted: Vec<usize>,
    committed: VecDeque<Vec<usize>>,
    /// For each set of accumulator registers, the last op this warp issued into it, while that op is not
    /// retired: a following wgmma into the same registers accumulates onto its result (PTX §9.7.15.7.1:
    /// wgmmas of one shape are ordered on their common accumulators without a fence, also when wgmmas into
    /// other accumulators come between them, as in a tile of two 64-row halves).
    last: Vec<(usize, Vec<u32>)>,
}

struct WgOp {
    pc: u32,
    shape: WgmmaShape,
    desc_a: u64,
    desc_b: u64,
    scale_d: bool,
    neg_a: bool,
    neg_b: bool,
    trans_a: bool,
    trans_b: bool,
    /// A fragments, `[thread][4]` (register form only).
    a: Vec<[u32; 4]>,
    /// Accumulator inputs, `[thread][register]`.
    c: Vec<u64>,
    arrived: u8,
    /// The earlier op whose result is this op's accumulator input (same registers, not yet retired).
    chain: Option<usize>,
    /// Accumulator outputs, `[thread][register]`, once all four warps have issued.
    d: Option<Vec<u64>>,
}

/// Byte address of element (r, k) of an R×K operand of `es`-byte elements through a descriptor, before the
/// swizzle (PTX ISA §9.7.15.5.1.2.1.3, canonical layouts; confirmed on hardware for 16-bit elements in
/// every mode and both majors: docs/HOPPER-PROBES.md). A core-matrix row is 16 bytes whatever the element
/// size; MN-major operands exist for 16-bit elements only.
#[allow(clippy::too_many_arguments)]
fn operand_addr(
    start: u64,
    lbo: u64,
    sbo: u64,
    mode: u64,
    mn_major: bool,
    r: u64,
    k: u64,
    es: u64,
) -> u64 {
    let w = match mode {
        1 => 8,
        2 => 4,
        3 => 2,
        _ => 1,
    };
    let per_row = 16 / es;
    match (mode, mn_major) {
        (0, false) => {
            start + (r / 8) * sbo + (r % 8) * 16 + (k / per_row) * lbo + (k % per_row) * es
        }
        (_, false) => start + (r / 8) * sbo + (r % 8) * 16 * w + k * es,
        (0, true) => start + (r / 8) * sbo + (r % 8) * 2 + (k % 8) * 16 + (k / 8) * lbo,
        (_, true) => {
            start + (r / (8 * w)) * lbo + (r % (8 * w)) * 2 + (k % 8) * 16 * w + (k / 8) * sbo
        }
    }
}

/// The swizzle XOR on an absolute shared-memory byte address (PTX ISA §5.5.7); `mode` as in descriptors.
pub(super) fn swizzle(a: u64, mode: u64) -> u64 {
    let m = match mode {
        1 => 7,
        2 => 3,
        3 => 1,
        _ => 0,
    };
    a ^ (((a >> 7) & m) << 4)
}

/// (row, column) of accumulator register `r` of thread `t` (0..128) in the 64×N tile.
fn frag(t: usize, r: usize) -> (usize, usize) {
    let (w, l) = (t / 32, t % 32);
    (
        16 * w + l / 4 + 8 * ((r / 2) % 2),
        8 * (r / 4) + 2 * (l % 4) + r % 2,
    )
}

impl L<'_> {
    /// A `.sync.aligned` warpgroup instruction runs with every lane of the warp together. Lanes of a warp
    /// that diverged earlier (one lane issued a TMA copy) reach it at different steps: like `mma.sync.aligned`
    /// (`exec_collective`), the first ones wait there for the others, which is what the reconvergence
    /// ptxas arranges does on the GPU. Returns the lanes that execute it now (`mask`, `exec`), or the step to
    /// take while they wait. Lanes that skip it (a false guard) or have exited are left to the caller's check.
    fn gather_aligned(
        &mut self,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
    ) -> Result<(u32, u32), Step> {
        let full = w.exist;
        if mask != exec || full != u32::MAX || mask == full {
            return Ok((mask, exec));
        }
        let missing = full & !exec;
        let mut all_here = true;
        let mut mm = missing;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            match w.st[l] {
                // An exited lane never comes: the caller reports the partial warp.
                Ls::Exit => return Ok((mask, exec)),
                Ls::Coll if w.pc[l] == pc => {}
                _ => all_here = false,
            }
        }
        let mut mm = if all_here { missing } else { exec };
        let state = if all_here { Ls::Run } else { Ls::Coll };
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            w.set_st(l, state);
        }
        if all_here {
            return Ok((full, full));
        }
        w.coll_member = full;
        Err(if w.run_mask() == 0 {
            Step::Stop
        } else {
            Step::Continue
        })
    }

    /// Executes a `wgmma` instruction for warp `wi` (every lane of the warp must execute it).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_wgmma(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        op: WgmmaOp,
    ) -> Step {
        let (mask, exec) = match self.gather_aligned(w, pc, mask, exec) {
            Ok(lanes) => lanes,
            Err(step) => return step,
        };
        let full = w.exist;
        if exec != full || mask != full || full != u32::MAX {
            let msg = format!(
                "wgmma is .sync.aligned over a warpgroup: every lane of the warp must execute it together, but lanes {:#010x} of {:#010x} did",
                exec, full
            );
            self.fault(
                b,
                wi,
                Some(exec.trailing_zeros()),
                pc,
                FaultKind::CollectiveMisuse,
                msg,
            );
            return Step::Stop;
        }
        let g = (wi / 4) as u32;
        if b.warps.len() < 4 * (g as usize + 1) {
            let msg = format!(
                "wgmma needs a whole warpgroup (4 warps, threads {}..{}), but the block has {} warps",
                128 * g,
                128 * g + 127,
                b.warps.len()
            );
            self.fault(b, wi, Some(0), pc, FaultKind::CollectiveMisuse, msg);
            return Step::Stop;
        }
        let q = wi % 4;
        match op {
            WgmmaOp::Fence => {}
            WgmmaOp::Commit => {
                let pw = &mut b.wg.groups.entry(g).or_default().warps[q];
                let ops = std::mem::take(&mut pw.uncommitted);
                pw.committed.push_back(ops);
            }
            WgmmaOp::Wait => {
                let n = match self.m.code[pc as usize].args.first() {
                    Some(Operand::Imm(v)) => *v as usize,
                    _ => 0,
                };
                match self.wgmma_wait(b, wi, w, pc, g, q, n) {
                    Some(true) => {}
                    Some(false) => return Step::Stop, // not complete yet: retry later
                    None => return Step::Stop,        // faulted
                }
            }
            WgmmaOp::Mma(shape) => {
                if !self.wgmma_issue(b, wi, w, pc, g, q, shape) {
                    return Step::Stop;
                }
            }
        }
        Self::advance(w, mask);
        Step::Continue
    }

    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 N`: a warpgroup collective whose only effect on a CPU is what it
    /// requires: every lane of every warp of a whole warpgroup, N a multiple of 8 in [24, 256], and the
    /// block's warpgroups within the 64 K registers of an SM once each has set its count.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_setmaxnreg(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        inc: bool,
    ) -> Step {
        let (mask, exec) = match self.gather_aligned(w, pc, mask, exec) {
            Ok(lanes) => lanes,
            Err(step) => return step,
        };
        let full = w.exist;
        let g = wi / 4;
        let n = match self.m.code[pc as usize].args.first() {
            Some(Operand::Imm(v)) => *v as u32,
            _ => 0,
        };
        // Before its first setmaxnreg a warpgroup has the entry count the kernel declares.
        let entry = (self.m.funcs.iter())
            .find(|f| f.start <= pc && pc < f.end)
            .and_then(|f| f.maxnreg);
        let problem = if exec != full || mask != full || full != u32::MAX {
            Some(format!(
                "setmaxnreg is .sync.aligned over a warpgroup: lanes {exec:#010x} of the warp executed it, not all 32"
            ))
        } else if b.warps.len() < 4 * (g + 1) {
            Some(format!(
                "setmaxnreg needs a whole warpgroup (threads {}..{}), but the block has {} warps",
                128 * g,
                128 * g + 127,
                b.warps.len()
            ))
        } else if n % 8 != 0 || !(24..=256).contains(&n) {
            Some(format!(
                "setmaxnreg.{} {n}: the register count must be a multiple of 8 in [24, 256]",
                if inc { "inc" } else { "dec" }
            ))
        } else if let Some(cur) = b.wg.maxnreg.get(&(g as u32)).copied().or(entry) {
            // `.inc` requires current ≤ N and `.dec` current ≥ N (PTX ISA §9.7.19.5); otherwise undefined.
            let wrong = if inc { cur > n } else { cur < n };
            wrong.then(|| {
                format!(
                    "setmaxnreg.{} {n}: warpgroup {g} has {cur} registers per thread; .inc needs at most and .dec at least the new count",
                    if inc { "inc" } else { "dec" }
                )
            })
        } else {
            None
        };
        let problem = problem
            .or_else(|| self.setmaxnreg_same(b, wi, pc))
            .or_else(|| self.setmaxnreg_budget(b, g as u32, n));
        if let Some(msg) = problem {
            self.fault(
                b,
                wi,
                Some(exec.trailing_zeros()),
                pc,
                FaultKind::CollectiveMisuse,
                msg,
            );
            return Step::Stop;
        }
        Self::advance(w, mask);
        Step::Continue
    }

    /// The k-th `setmaxnreg` of warp `wi` pairs with the k-th of the other warps of its warpgroup: the PTX
    /// ISA (setmaxnreg) has all threads of the warpgroup execute the same instruction (`.aligned`), so a
    /// different one is a misuse. Records it.
    fn setmaxnreg_same(&self, b: &mut Block, wi: usize, pc: u32) -> Option<String> {
        let seq = &mut b.wg.setmaxnreg;
        if seq.len() < b.warps.len() {
            seq.resize(b.warps.len(), Vec::new());
        }
        let k = seq[wi].len();
        let g = wi / 4;
        let other = (4 * g..4 * g + 4)
            .filter(|&o| o != wi)
            .find_map(|o| seq[o].get(k).filter(|&&p| p != pc).map(|&p| (o, p)));
        seq[wi].push(pc);
        let (o, p) = other?;
        let line = |pc: u32| self.m.code.get(pc as usize).map_or(0, |i| i.line);
        Some(format!(
            "setmaxnreg is .aligned over a warpgroup: its warps must execute the same setmaxnreg, but warp {wi} executed the one at PTX line {} where warp {o} of warpgroup {g} executed the one at PTX line {}",
            line(pc),
            line(p)
        ))
    }

    /// Warp `wi` has exited (at PTX line `line`): every warp of its warpgroup must have executed as many
    /// `setmaxnreg`s as it did (`.aligned`; a warp that skipped one leaves its partners' registers
    /// unchanged while they count on the new allotment). False after a fault.
    pub(super) fn setmaxnreg_at_exit(&mut self, b: &Block, wi: usize, line: u32) -> bool {
        let seq = &b.wg.setmaxnreg;
        if seq.is_empty() {
            return true;
        }
        let g = wi / 4;
        let count = |o: usize| seq.get(o).map_or(0, |v| v.len());
        let mine = count(wi);
        // A partner ahead of this warp, or one that exited behind it.
        let odd = (4 * g..(4 * g + 4).min(b.warps.len()))
            .filter(|&o| o != wi)
            .find(|&o| count(o) > mine || (count(o) < mine && b.warps[o].all_exited()));
        let Some(o) = odd else { return true };
        let msg = format!(
            "setmaxnreg is .aligned over a warpgroup: warp {wi} exited at PTX line {line} after {mine} setmaxnreg, but warp {o} of warpgroup {g} executed {}: every warp of the warpgroup must execute each setmaxnreg",
            count(o)
        );
        let pc = seq[wi].last().or(seq[o].last()).copied().unwrap_or(0);
        self.fault(b, wi, Some(0), pc, FaultKind::CollectiveMisuse, msg);
        false
    }

    /// Records warpgroup `g`'s new count; once every warpgroup of the block has set one, they must fit the
    /// SM's 64 K registers. (Before that an `.inc` may wait on the hardware for another warpgroup's `.dec`,
    /// which the emulator does not model: it checks the counts the warpgroups end up with.)
    fn setmaxnreg_budget(&self, b: &mut Block, g: u32, n: u32) -> Option<String> {
        let counts = &mut b.wg.maxnreg;
        counts.insert(g, n);
        if counts.len() < b.warps.len().div_ceil(4) {
            return None;
        }
        let total: u32 = counts.values().map(|c| c * 128).sum();
        (total > prism_core::hw::REGISTERS_PER_SM).then(|| {
            let mut v: Vec<_> = counts.iter().map(|(k, v)| (*k, *v)).collect();
            v.sort();
            format!(
                "setmaxnreg: the block's warpgroups now ask for {total} registers (counts {v:?} × 128 threads), over the SM's 65536"
            )
        })
    }

    /// The A and B descriptors and scale-d of a `wgmma.mma_async`, which must be the same in every thread of
    /// the warpgroup (one instruction for all of it); a difference is a fault (`None`).
    fn wgmma_uniform(
        &mut self,
        b: &mut Block,
        w: &Warp,
        wi: usize,
        pc: u32,
        a_regs: bool,
    ) -> Option<(u64, u64, bool)> {
        let args = &self.m.code[pc as usize].args;
        let lane_val = |l: &Self, op: &Operand, lane: usize| l.val(b, w, wi, op, lane);
        let at = |l: &Self, lane: usize| {
            let desc_b = lane_val(l, &args[2], lane);
            let desc_a = if a_regs {
                0
            } else {
                lane_val(l, &args[1], lane)
            };
            (desc_a, desc_b, lane_val(l, &args[3], lane) != 0)
        };
        let first = at(self, 0);
        if let Some(lane) = (1..32).find(|&lane| at(self, lane) != first) {
            let msg = "wgmma.mma_async: descriptors and scale-d must be the same in every thread of the warpgroup".to_string();
            self.fault(
                b,
                wi,
                Some(lane as u32),
                pc,
                FaultKind::CollectiveMisuse,
                msg,
            );
            return None;
        }
        Some(first)
    }

    #[allow(clippy::too_many_arguments)]
    fn wgmma_issue(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        g: u32,
        q: usize,
        shape: WgmmaShape,
    ) -> bool {
        let m = self.m;
        let args = &m.code[pc as usize].args;
        let nregs = if shape.dtype == PtxType::F16 {
            shape.n as usize / 4
        } else {
            shape.n as usize / 2
        };
        let dregs = args[0].elements();
        let imm = |i: usize| match args.get(i) {
            Some(Operand::Imm(v)) => Some(*v as i64 as i32),
            _ => None,
        };
        // d, a|a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b[, imm-trans-a], imm-trans-b; tf32 and FP8
        // have no transposes, 8-bit integers no scales either.
        let (sa, sb, ta, tb) = match (shape.a.bytes(), shape.dtype) {
            (_, PtxType::S32) => (Some(1), Some(1), Some(0), Some(0)),
            (2, _) if shape.a_regs => (imm(4), imm(5), Some(0), imm(6)),
            (2, _) => (imm(4), imm(5), imm(6), imm(7)),
            _ => (imm(4), imm(5), Some(0), Some(0)),
        };
        let bad_imm = |v: Option<i32>, ok: &[i32]| v.is_none_or(|x| !ok.contains(&x));
        if dregs.len() != nregs
            || bad_imm(sa, &[1, -1])
            || bad_imm(sb, &[1, -1])
            || bad_imm(ta, &[0, 1])
            || bad_imm(tb, &[0, 1])
        {
            let msg = format!(
                "{}: expected {} accumulator registers and immediate scale (±1) / transpose (0, 1) operands",
                name(&WgmmaOp::Mma(shape)),
                nregs
            );
            self.fault(b, wi, Some(0), pc, FaultKind::InvalidOperation, msg);
            return false;
        }
        let Some((desc_a, desc_b, scale_d)) = self.wgmma_uniform(b, w, wi, pc, shape.a_regs) else {
            return false;
        };
        let lane_val = |l: &Self, op: &Operand, lane: usize| l.val(b, w, wi, op, lane);
        let aregs = if shape.a_regs {
            args[1].elements()
        } else {
            Vec::new()
        };
        let mut a_part = Vec::new();
        let mut c_part = Vec::with_capacity(32 * nregs);
        for lane in 0..32 {
            if shape.a_regs {
                let mut v = [0u32; 4];
                for (j, x) in v.iter_mut().enumerate() {
                    *x = aregs
                        .get(j)
                        .map(|o| lane_val(self, o, lane) as u32)
                        .unwrap_or(0);
                }
                a_part.push(v);
            }
            for d in &dregs {
                c_part.push(lane_val(self, d, lane));
            }
        }
        let mut dst_regs = Vec::new();
        reg_indices(&args[0], &mut dst_regs);
        let state = b.wg.groups.entry(g).or_default();
        let idx = state.warps[q].issued;
        let chain = match state.warps[q].last.iter().find(|(_, r)| *r == dst_regs) {
            Some(&(prev, _)) if state.ops[prev].shape == shape => Some(prev),
            _ => None,
        };
        if idx == state.ops.len() {
            state.ops.push(WgOp {
                pc,
                shape,
                desc_a,
                desc_b,
                scale_d,
                neg_a: sa == Some(-1),
                neg_b: sb == Some(-1),
                trans_a: ta == Some(1),
                trans_b: tb == Some(1),
                a: vec![[0; 4]; if shape.a_regs { 128 } else { 0 }],
                c: vec![0; 128 * nregs],
                arrived: 0,
                chain,
                d: None,
            });
        }
        let op = &mut state.ops[idx];
        if op.pc != pc
            || op.desc_a != desc_a
            || op.desc_b != desc_b
            || op.scale_d != scale_d
            || op.chain != chain
        {
            let other = op.pc;
            let msg = format!(
                "wgmma.mma_async is .aligned over the warpgroup: warp {} issued a different instruction or different descriptors than its warpgroup's op #{} (PTX line of the first: {})",
                wi,
                idx,
                m.code.get(other as usize).map(|i| i.line).unwrap_or(0)
            );
            self.fault(b, wi, Some(0), pc, FaultKind::CollectiveMisuse, msg);
            return false;
        }
        for lane in 0..32 {
            let t = 32 * q + lane;
            if shape.a_regs {
                op.a[t] = a_part[lane];
            }
            op.c[t * nregs..(t + 1) * nregs]
                .copy_from_slice(&c_part[lane * nregs..(lane + 1) * nregs]);
        }
        op.arrived |= 1 << q;
        let state_w = &mut state.warps[q];
        state_w.issued += 1;
        state_w.uncommitted.push(idx);
        state_w.last.retain(|(_, r)| *r != dst_regs);
        state_w.last.push((idx, dst_regs));
        b.wg.mark(wi, &owned_regs(args, shape.a_regs));
        if b.wg.groups.entry(g).or_default().ops[idx].arrived == 0xF {
            return self.wgmma_complete(b, wi, pc, g, idx);
        }
        true
    }

    /// The fourth warp of warpgroup `g` has issued op `idx`: check its descriptors, hold its shared
    /// operands for the async proxy until it is retired, and compute it. False when it faulted.
    fn wgmma_complete(&mut self, b: &mut Block, wi: usize, pc: u32, g: u32, idx: usize) -> bool {
        self.mma_ops += 1;
        let op = &b.wg.groups.entry(g).or_default().ops[idx];
        let bad = desc_misaligned(op.desc_b).or_else(|| {
            (!op.shape.a_regs)
                .then(|| desc_misaligned(op.desc_a))
                .flatten()
        });
        let mut ranges = vec![desc_range(
            op.desc_b,
            op.trans_b,
            op.shape.n as u64,
            op.shape.b,
        )];
        if !op.shape.a_regs {
            ranges.push(desc_range(op.desc_a, op.trans_a, 64, op.shape.a));
        }
        if let Some(msg) = bad {
            self.fault(b, wi, Some(0), pc, FaultKind::Misaligned, msg);
            return false;
        }
        // The async proxy reads the shared operands now and holds them until the op is retired.
        for (lo, hi) in ranges {
            let holder = super::proxy::Holder::Wgmma { g, op: idx as u32 };
            self.proxy_async_read(b, wi, 0, pc, lo, hi, holder, "a wgmma");
            // (A race is reported and the op still computes: skipping it would fault the warpgroup's
            // later wgmmas, a consequence the program does not have.)
            self.wgmma_reads_ordered(b, wi, pc, lo, hi);
        }
        let state = b.wg.groups.entry(g).or_default();
        let chained = state.ops[idx].chain.and_then(|p| state.ops[p].d.as_deref());
        match compute(&state.ops[idx], chained, &b.shared) {
            Ok(d) => {
                if let Some(s) = b.wg.groups.get_mut(&g) {
                    s.ops[idx].d = Some(d);
                }
                true
            }
            Err(msg) => {
                self.fault(b, wi, Some(0), pc, FaultKind::OutOfBounds, msg);
                false
            }
        }
    }

    /// `Some(true)`: done (results written); `Some(false)`: an op of a group to retire is not complete yet;
    /// `None`: faulted.
    #[allow(clippy::too_many_arguments)]
    fn wgmma_wait(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        g: u32,
        q: usize,
        keep: usize,
    ) -> Option<bool> {
        let m = self.m;
        loop {
            let state = b.wg.groups.entry(g).or_default();
            if state.warps[q].committed.len() <= keep {
                return Some(true);
            }
            let group = state.warps[q]
                .committed
                .front()
                .cloned()
                .unwrap_or_default();
            if let Some(&missing) = group.iter().find(|&&i| state.ops[i].d.is_none()) {
                // Not complete: a partner warp has not issued yet. If it can never issue, say so.
                let arrived = state.ops[missing].arrived;
                for k in 0..4 {
                    if arrived & (1 << k) != 0 {
                        continue;
                    }
                    let other = 4 * g as usize + k;
                    let gone = b
                        .warps
                        .get(other)
                        .is_none_or(|ow| ow.run_mask() == 0 && ow.all_exited());
                    if gone {
                        let msg = format!(
                            "wgmma.wait_group waits for an op that warp {} of the warpgroup never issued (it exited)",
                            other
                        );
                        self.fault(b, wi, Some(0), pc, FaultKind::CollectiveMisuse, msg);
                        return None;
                    }
                }
                return Some(false);
            }
            state.warps[q].committed.pop_front();
            state.warps[q].last.retain(|(op, _)| !group.contains(op));
            let mut released = Vec::new();
            for &i in &group {
                let op = &state.ops[i];
                released.extend(owned_regs(&m.code[op.pc as usize].args, op.shape.a_regs));
            }
            for i in group {
                b.proxy.retire_wgmma(g, i as u32);
                let state = b.wg.groups.entry(g).or_default();
                let op = &state.ops[i];
                let d = op.d.as_ref().expect("checked above");
                let nregs = d.len() / 128;
                let dregs = m.code[op.pc as usize].args[0].elements();
                for lane in 0..32 {
                    let t = 32 * q + lane;
                    for (r, reg) in dregs.iter().enumerate().take(nregs) {
                        Self::set(w, reg, lane, d[t * nregs + r]);
                    }
                }
            }
            b.wg.unmark(wi, &released);
        }
    }
}

/// The shared bytes `[lo, hi)` a descriptor operand of `rows` × 16 elements spans.
fn desc_range(desc: u64, mn_major: bool, rows: u64, e: WgElem) -> (usize, usize) {
    let start = (desc & 0x3FFF) << 4;
    let lbo = ((desc >> 16) & 0x3FFF) << 4;
    let sbo = ((desc >> 32) & 0x3FFF) << 4;
    let mode = (desc >> 62) & 3;
    let es = e.bytes();
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for r in 0..rows {
        for k in 0..e.k() as u64 {
            let a = swizzle(
                operand_addr(start, lbo, sbo, mode, mn_major, r, k, es),
                mode,
            );
            lo = lo.min(a);
            hi = hi.max(a + es);
        }
    }
    (lo as usize, hi as usize)
}

/// Why a descriptor cannot be read as the emulator models it: a non-zero base-offset field (for misaligned
/// swizzle atoms) is not modelled. With base offset 0 a swizzled operand may start at any 16-byte address: the
/// XOR takes the row phase from the absolute address (`swizzle`), as TMA writes it. CUTLASS 4's sm90 kernels
/// rely on that: their stages start 128-byte aligned after the pipeline storage (example 48: shared byte
/// 384, row 3 of a 1024-byte atom) with base offset 0.
fn desc_misaligned(desc: u64) -> Option<String> {
    let mode = (desc >> 62) & 3;
    let base_offset = (desc >> 49) & 7;
    let atom = match mode {
        1 => 1024,
        2 => 512,
        3 => 256,
        _ => return None,
    };
    if base_offset != 0 {
        return Some(format!(
            "wgmma matrix descriptor {desc:#018x} has base offset {base_offset}: misaligned swizzle atoms are not modelled; align the tile to {atom} bytes"
        ));
    }
    None
}

/// Reads one element (its `e.bytes()` bytes, little-endian) of a descriptor operand.
fn read_elem(
    shared: &[u8],
    desc: u64,
    mn_major: bool,
    r: u64,
    k: u64,
    e: WgElem,
) -> Result<u32, String> {
    let start = (desc & 0x3FFF) << 4;
    let lbo = ((desc >> 16) & 0x3FFF) << 4;
    let sbo = ((desc >> 32) & 0x3FFF) << 4;
    let mode = (desc >> 62) & 3;
    let es = e.bytes() as usize;
    let a = swizzle(
        operand_addr(start, lbo, sbo, mode, mn_major, r, k, es as u64),
        mode,
    ) as usize;
    match shared.get(a..a + es) {
        Some(s) => Ok(s.iter().rev().fold(0u32, |v, &x| v << 8 | x as u32)),
        None => Err(format!(
            "wgmma matrix descriptor {desc:#018x} reads shared byte {a}, outside the block's {} bytes of shared memory",
            shared.len()
        )),
    }
}

/// The value of an input element's bits: floats exactly (tf32 from the top 19 bits of its f32, as the tensor
/// cores read it), 8-bit integers as integers.
fn elem_value(e: WgElem, bits: u32) -> f64 {
    match e {
        WgElem::F16 => half::f16::from_bits(bits as u16).to_f64(),
        WgElem::BF16 => half::bf16::from_bits(bits as u16).to_f64(),
        WgElem::TF32 => f32::from_bits(bits & 0xffff_e000) as f64,
        WgElem::E4M3 => super::misc::fp8_value(bits as u8, false),
        WgElem::E5M2 => super::misc::fp8_value(bits as u8, true),
        WgElem::S8 => bits as u8 as i8 as f64,
        WgElem::U8 => bits as u8 as f64,
    }
}

/// (row, k) of element `v` (0..16 / per register) of A-fragment register `j` of thread `t`, for A from
/// registers: CUTLASS's `ALayout_64x16` (16-bit: two per register), `ALayout_64x32` (8-bit: four),
/// `ALayout_64x8` (tf32: one) — each warp holds 16 rows, as `mma.sync` does.
fn a_frag(e: WgElem, t: usize, j: usize, v: usize) -> (usize, usize) {
    let (w, l) = (t / 32, t % 32);
    let row = 16 * w + l / 4 + 8 * (j % 2);
    match e.bytes() {
        2 => frag(t, 2 * j + v),
        1 => (row, 4 * (l % 4) + v + 16 * (j / 2)),
        _ => (row, l % 4 + 4 * (j / 2)),
    }
}

/// D = A·B (+ C): 64×N×K; float inputs accumulated in f32 in k order (their products are exact in f32),
/// 8-bit integers exactly, wrapping to s32 (or saturating with `.satfinite`).
fn compute(op: &WgOp, chained: Option<&[u64]>, shared: &[u8]) -> Result<Vec<u64>, String> {
    let n = op.shape.n as usize;
    let (ea, eb) = (op.shape.a, op.shape.b);
    let kk = ea.k() as usize;
    let acc16 = op.shape.dtype == PtxType::F16;
    let int = op.shape.dtype == PtxType::S32;
    let nregs = if acc16 { n / 4 } else { n / 2 };
    // A[m][k]
    let mut a = vec![vec![0f64; kk]; 64];
    if op.shape.a_regs {
        let per = 4 / ea.bytes() as usize;
        for t in 0..128 {
            for (j, word) in op.a[t].iter().enumerate() {
                for v in 0..per {
                    let (row, col) = a_frag(ea, t, j, v);
                    let bits = if per == 1 {
                        *word
                    } else {
                        (*word >> (32 / per * v)) & ((1u32 << (32 / per)) - 1)
                    };
                    a[row][col] = elem_value(ea, bits);
                }
            }
        }
    } else {
        for (r, row) in a.iter_mut().enumerate() {
            for (k, v) in row.iter_mut().enumerate() {
                let bits = read_elem(shared, op.desc_a, op.trans_a, r as u64, k as u64, ea)?;
                *v = elem_value(ea, bits);
            }
        }
    }
    // B[n][k]
    let mut bm = vec![vec![0f64; kk]; n];
    for (r, row) in bm.iter_mut().enumerate() {
        for (k, v) in row.iter_mut().enumerate() {
            let bits = read_elem(shared, op.desc_b, op.trans_b, r as u64, k as u64, eb)?;
            *v = elem_value(eb, bits);
        }
    }
    let (sa, sb) = (
        if op.neg_a { -1.0f64 } else { 1.0 },
        if op.neg_b { -1.0f64 } else { 1.0 },
    );
    let mut out = vec![0u64; 128 * nregs];
    for t in 0..128 {
        for r in 0..nregs {
            let word = match chained {
                Some(c) => c[t * nregs + r],
                None => op.c[t * nregs + r],
            };
            let mut res = 0u64;
            let elems = if acc16 { 2 } else { 1 };
            for h in 0..elems {
                let e = if acc16 { 2 * r + h } else { r };
                let (row, col) = frag(t, e);
                if int {
                    let mut acc = if op.scale_d {
                        word as u32 as i32 as i64
                    } else {
                        0
                    };
                    for k in 0..kk {
                        acc += (a[row][k] * bm[col][k]) as i64;
                    }
                    let v = if op.shape.satfinite {
                        acc.clamp(i32::MIN as i64, i32::MAX as i64) as i32
                    } else {
                        acc as i32
                    };
                    res = v as u32 as u64;
                    continue;
                }
                let mut acc = if !op.scale_d {
                    0.0
                } else if acc16 {
                    half::f16::from_bits((word >> (16 * h)) as u16).to_f32()
                } else {
                    f32::from_bits(word as u32)
                };
                for k in 0..kk {
                    acc += ((sa * a[row][k]) * (sb * bm[col][k])) as f32;
                }
                if acc16 {
                    res |= (half::f16::from_f32(acc).to_bits() as u64) << (16 * h);
                } else {
                    res = acc.to_bits() as u64;
                }
            }
            out[t * nregs + r] = res;
        }
    }
    Ok(out)
}

/// The instruction's name, for fault messages and counters.
pub(super) fn name(op: &WgmmaOp) -> String {
    match op {
        WgmmaOp::Fence => "wgmma.fence.sync.aligned".into(),
        WgmmaOp::Commit => "wgmma.commit_group.sync.aligned".into(),
        WgmmaOp::Wait => "wgmma.wait_group.sync.aligned".into(),
        WgmmaOp::Mma(s) => format!(
            "wgmma.mma_async.sync.aligned.m64n{}k{}.{}.{}.{}",
            s.n,
            s.a.k(),
            match s.dtype {
                PtxType::F32 => "f32",
                PtxType::S32 => "s32",
                _ => "f16",
            },
            s.a.name(),
            s.b.name()
        ),
    }
}

impl L<'_> {
    /// Read-after-write for wgmma's shared operands: every byte's last writer (a TMA load's issuing thread, a
    /// `st.shared`) must be ordered before the issuing thread (an mbarrier wait on the copy's completion, a
    /// barrier). Only checked, not recorded as a read: when the operands may be rewritten is the async proxy's
    /// hold (`proxy.rs`), released when the wgmma retires. A write its thread had completed in program order
    /// (not a TMA or bulk copy, which completes on an mbarrier) by a thread of the issuing warpgroup is
    /// ordered before the read: the op starts only once all four warps issued it, each after its own
    /// writes (CuTe's cp.async wgmma loop: `cp.async.wait_all`, then the wgmma, no barrier).
    fn wgmma_reads_ordered(&mut self, b: &mut Block, wi: usize, pc: u32, lo: usize, hi: usize) {
        if !self.cfg.check_races {
            return;
        }
        let hi = hi.min(b.sh_shadow.len());
        let t = b.lin * self.nthreads + self.tid_of(wi, 0);
        let nt = self.nthreads;
        let mut bad = None;
        let mut last = None;
        for i in lo.min(hi)..hi {
            let s = b.sh_shadow.get(i);
            if last == Some((s.w, s.w_ep)) {
                continue;
            }
            last = Some((s.w, s.w_ep));
            let w = s.w & !TOPBIT;
            // A writer in another block is a multicast TMA load of the cluster: it completes on this block's
            // own mbarrier, which the happens-before of threads does not model; not checked here.
            let same_block = w != 0 && (w - 1) / nt == t / nt;
            let warpgroup_done = same_block
                && ((w - 1) % nt) / 128 == (t % nt) / 128
                && !self.completes_on_mbarrier(s.w_pc);
            if same_block
                && !warpgroup_done
                && w - 1 != t
                && !Self::ordered(&b.thr_inst, &b.inst, (nt, b.lin * nt), w - 1, s.w_ep, t)
            {
                bad = Some((i, w - 1, s.w_pc));
                break;
            }
        }
        let Some((i, u, upc)) = bad else { return };
        if self.race_seen.insert(pc) {
            let uline = self.m.code.get(upc as usize).map(|x| x.line).unwrap_or(0);
            let msg = format!(
                "data race on shared memory at offset {i:#x}: a wgmma issued by thread {} reads it, unordered after its write by thread {} at PTX line {uline} (no mbarrier wait or barrier between them)",
                self.tid_of(wi, 0),
                u % nt
            );
            self.fault(b, wi, Some(0), pc, FaultKind::DataRace, msg);
        }
    }

    /// Whether the instruction at `pc` writes shared memory asynchronously, completing on an mbarrier (a
    /// TMA or bulk copy, `st.async`, `red.async`): its write is not done when its thread goes on.
    fn completes_on_mbarrier(&self, pc: u32) -> bool {
        matches!(
            self.m.code.get(pc as usize).map(|i| &i.kind),
            Some(
                Kind::CpAsyncBulkTensor { .. }
                    | Kind::CpAsyncBulk { .. }
                    | Kind::AsyncStore { .. }
                    | Kind::BulkReduce { .. }
                    | Kind::BulkCopyCluster
            )
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{desc_misaligned, read_elem, WgElem};

    #[test]
    fn descriptors_outside_shared_memory_are_errors() {
        let shared = vec![0u8; 4096];
        let inside = (1024u64 >> 4) | (1 << 16) | ((1024 >> 4) << 32) | (1 << 62);
        assert!(read_elem(&shared, inside, false, 7, 15, WgElem::BF16).is_ok());
        let outside = (8192u64 >> 4) | (1 << 16) | ((1024 >> 4) << 32) | (1 << 62);
        let e = read_elem(&shared, outside, false, 0, 0, WgElem::BF16).unwrap_err();
        assert!(e.contains("outside the block's 4096 bytes"), "{e}");
    }

    fn desc(start: u64, mode: u64, base: u64) -> u64 {
        (start >> 4) | (1 << 16) | ((1024 >> 4) << 32) | (base << 49) | (mode << 62)
    }

    #[test]
    fn swizzled_descriptors_start_anywhere_without_a_base_offset() {
        // 128B: a 1024-aligned tile plus the k offsets 0, 32, 64, 96, and a tile 128-byte aligned inside an
        // atom (CUTLASS example 48: shared byte 384), with k offsets.
        for k in [0, 32, 64, 96] {
            assert_eq!(desc_misaligned(desc(2048 + k, 1, 0)), None);
            assert_eq!(desc_misaligned(desc(2048 + 384 + k, 1, 0)), None);
        }
        // 32B atoms are 256 bytes: 256-aligned is fine.
        assert_eq!(desc_misaligned(desc(256, 3, 0)), None);
        // No swizzle: any 16-byte aligned start.
        assert_eq!(desc_misaligned(desc(48, 0, 0)), None);
        // A base offset is not modelled.
        assert!(desc_misaligned(desc(1024, 1, 3))
            .unwrap()
            .contains("base offset"));
    }
}
