//! Drops the `fence.proxy.async.shared::cta` fences that order nothing.
//!
//! The emitter puts a proxy fence before every barrier of a kernel that uses wgmma or `tma_store` (the
//! writers of shared memory must fence before the barrier that publishes their writes to the async proxy,
//! PTX ISA §9.7.13.4), and one before each `tma_store` (its thread may have written the box itself). Most
//! of them follow no shared-memory access of the thread since its last proxy fence: the epilogue barrier
//! that only waits for a TMA store to have read its box, the store issued right after the barrier whose
//! writers fenced. Each one assembles to `MEMBAR.ALL.CTA` + `FENCE.VIEW.ASYNC.S` (ptxas 12.9, sm_90a),
//! three per stored box where one is needed.
//!
//! A forward may-analysis over the body's control flow: a thread is *dirty* once it may have accessed
//! shared memory through the generic proxy (stores and atomics; loads too, to keep the reading side as
//! the emitter wrote it) since its last proxy fence. A fence reached only by clean paths is removed. Anything
//! the analysis does not model keeps every fence: indirect branches, branches inside `{ }` scopes.

use crate::ptx::{Instruction, Operand, Stmt};
use std::collections::HashMap;

const FENCE: &str = "fence.proxy.async.shared::cta";

/// Whether `i` may access shared memory through the generic proxy (or does something the analysis cannot
/// see into: a call).
fn touches_shared(i: &Instruction) -> bool {
    let op = i.opcode.as_str();
    let other_space = [".global", ".local", ".param", ".const"]
        .iter()
        .any(|s| op.contains(s));
    let memory = [
        "st.", "ld.", "atom.", "red.", "wmma.", "ldmatrix", "stmatrix", "ldu.",
    ]
    .iter()
    .any(|p| op.starts_with(p));
    // Non-bulk `cp.async` writes shared memory outside the async proxy; `st.async` / `red.async` write
    // another block's. Bulk copies and TMA are the async proxy itself.
    let async_generic = (op.starts_with("cp.async.") && !op.starts_with("cp.async.bulk"))
        || op.starts_with("st.async")
        || op.starts_with("red.async");
    (memory && !other_space)
        || async_generic
        || op.starts_with("call")
        || op.starts_with("tensormap.")
}

/// A fence that orders this thread's generic shared-memory accesses before its async-proxy ones.
fn cleans(i: &Instruction) -> bool {
    i.guard.is_none() && matches!(i.opcode.as_str(), FENCE | "fence.proxy.async")
}

/// Branch target of `bra` / `bra.uni`, or `None` for other instructions.
fn branch_target(i: &Instruction) -> Option<&str> {
    if i.opcode == "bra" || i.opcode.starts_with("bra.") {
        match i.operands.first() {
            Some(Operand::Name(l)) => return Some(l),
            _ => return Some(""),
        }
    }
    None
}

fn has_branch(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Instr(i) => branch_target(i).is_some() || i.opcode.starts_with("brx"),
        Stmt::Block(b) => has_branch(&b.stmts),
        _ => false,
    })
}

/// Removes the proxy fences of `body` (one function's statements) that no dirty path reaches.
pub(super) fn elide_redundant(body: &mut Vec<Stmt>) {
    let labels: HashMap<&str, usize> = body
        .iter()
        .enumerate()
        .filter_map(|(k, s)| match s {
            Stmt::Label(l) => Some((l.name.as_str(), k)),
            _ => None,
        })
        .collect();
    // Successors of each statement; `None` where the analysis gives up.
    let mut succ: Vec<Vec<usize>> = Vec::with_capacity(body.len());
    for (k, s) in body.iter().enumerate() {
        let next = (k + 1 < body.len()).then_some(k + 1);
        let mut out: Vec<usize> = Vec::new();
        match s {
            Stmt::Instr(i) => {
                if i.opcode.starts_with("brx") {
                    return;
                }
                if let Some(t) = branch_target(i) {
                    let Some(&to) = labels.get(t) else { return };
                    out.push(to);
                    if i.guard.is_some() {
                        out.extend(next);
                    }
                } else if !(i.guard.is_none()
                    && ["ret", "exit", "trap"].contains(&i.opcode.as_str()))
                {
                    out.extend(next);
                }
            }
            Stmt::Block(b) => {
                if has_branch(&b.stmts) {
                    return;
                }
                out.extend(next);
            }
            _ => out.extend(next),
        }
        succ.push(out);
    }
    // dirty_in[k]: some path into statement k may have touched shared memory since its last fence.
    let mut dirty_in = vec![false; body.len()];
    let mut reached = vec![false; body.len()];
    let mut work = vec![0usize];
    if !body.is_empty() {
        reached[0] = true;
    }
    while let Some(k) = work.pop() {
        let out = match &body[k] {
            Stmt::Instr(i) if cleans(i) => false,
            Stmt::Instr(i) => dirty_in[k] || touches_shared(i),
            Stmt::Block(_) => true,
            _ => dirty_in[k],
        };
        for &s in &succ[k] {
            if !reached[s] || (out && !dirty_in[s]) {
                reached[s] = true;
                dirty_in[s] |= out;
                work.push(s);
            }
        }
    }
    let mut k = 0;
    body.retain(|s| {
        let keep = match s {
            Stmt::Instr(i) if i.opcode == FENCE => dirty_in[k],
            _ => true,
        };
        k += 1;
        keep
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::parse_stmts;

    fn run(src: &str) -> usize {
        let mut body = parse_stmts(src).unwrap();
        elide_redundant(&mut body);
        body.iter()
            .filter(|s| matches!(s, Stmt::Instr(i) if i.opcode.starts_with("fence.proxy")))
            .count()
    }

    #[test]
    fn a_fence_after_a_fence_goes() {
        let src = "st.shared.u32 [%r1], %r2;\nfence.proxy.async.shared::cta;\nbar.sync 1, 128;\n\
                   fence.proxy.async.shared::cta;\ncp.async.bulk.commit_group;";
        assert_eq!(run(src), 1);
    }

    #[test]
    fn a_store_between_keeps_both() {
        let src = "st.shared.u32 [%r1], %r2;\nfence.proxy.async.shared::cta;\n\
                   st.shared.u32 [%r1], %r3;\nfence.proxy.async.shared::cta;";
        assert_eq!(run(src), 2);
    }

    #[test]
    fn generic_addressing_and_loads_count_as_shared() {
        // A fence no access precedes orders nothing: gone; the one after the access stays.
        let fenced = |access: &str| run(&format!("{FENCE};\n{access}\n{FENCE};"));
        assert_eq!(fenced("st.u32 [%rd1], %r2;"), 1);
        assert_eq!(fenced("ld.shared.u32 %r2, [%r1];"), 1);
        assert_eq!(
            fenced("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r1], {%r2, %r3, %r4, %r5};"),
            1
        );
        // Global stores are not shared memory: both go. A full `fence.proxy.async`, which also orders
        // global memory, always stays.
        assert_eq!(fenced("st.global.u32 [%rd1], %r2;"), 0);
        assert_eq!(run("fence.proxy.async;\nfence.proxy.async;"), 2);
    }

    #[test]
    fn a_store_on_the_back_edge_keeps_the_loop_head_fence() {
        // The fence at the loop head is reached from the entry (clean, and it is the first: removed only if
        // clean on every path) and from the back edge after a store.
        let src = "fence.proxy.async.shared::cta;\nL1:\nfence.proxy.async.shared::cta;\n\
                   setp.eq.u32 %p1, %r1, 0;\n@%p1 bra L2;\nst.shared.u32 [%r1], %r2;\nbra.uni L1;\nL2:\nret;";
        assert_eq!(run(src), 1);
        let clean = "fence.proxy.async.shared::cta;\nL1:\nfence.proxy.async.shared::cta;\n\
                     setp.eq.u32 %p1, %r1, 0;\n@%p1 bra L2;\nadd.u32 %r1, %r1, 1;\nbra.uni L1;\nL2:\nret;";
        assert_eq!(run(clean), 0);
    }

    #[test]
    fn a_skipped_store_still_makes_the_join_dirty() {
        let src = "@%p1 bra L1;\nst.shared.u32 [%r1], %r2;\nL1:\nfence.proxy.async.shared::cta;";
        assert_eq!(run(src), 1);
    }

    #[test]
    fn unknown_control_flow_keeps_every_fence() {
        let src =
            "fence.proxy.async.shared::cta;\nfence.proxy.async.shared::cta;\nbra.uni NOWHERE;";
        assert_eq!(run(src), 2);
    }
}
