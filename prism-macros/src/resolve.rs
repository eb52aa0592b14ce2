//! Finding the device functions a function calls, naming the macros that deliver them, and rewriting the
//! calls so prism-core can match each one to its dependency by name.

use prism_core::ast::{Block, Expr, ExprKind, Function, Ident, StmtKind};
use proc_macro2::Span;

/// Construct names (parsed as statements; listed in case one appears in expression position) and names
/// reserved for intrinsics prism-core does not have yet (Hopper collectives). prism-core's own intrinsics
/// come from [`prism_core::check::INTRINSICS`], so the two lists cannot drift apart.
const RESERVED: &[&str] = &[
    "group",
    "partition",
    "claim",
    "async_",
    "split",
    "wgmma_fence",
    "wgmma_commit_group",
    "wgmma_wait_group",
    "setmaxnreg_inc",
    "setmaxnreg_dec",
    "mbarrier_init",
    "mbarrier_arrive",
    "mbarrier_arrive_expect_tx",
    "mbarrier_try_wait_parity",
    "fence_proxy_async",
    "cp_async_commit_group",
    "cp_async_wait_group",
    "cp_async_wait_all",
];

/// `name` (a single-segment call) is an intrinsic or construct, never a device function.
pub fn is_intrinsic(name: &str) -> bool {
    prism_core::check::INTRINSICS.contains(&name) || RESERVED.contains(&name)
}

/// What a call path refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `f(..)`, `crate::m::f(..)`, `self::f(..)`, `super::f(..)`: a device function of the caller's own crate.
    SameCrate { name: String },
    /// `other::m::f(..)`: a device function exported by the crate `other` (as the caller's crate names it;
    /// `prism::kernels` for the library reached through the umbrella crate).
    Qualified { alias: String, name: String },
}

/// Classifies a call path; `None` for intrinsics.
pub fn classify(path: &[Ident]) -> Option<Target> {
    let last = path.last()?;
    if path.len() == 1 {
        if is_intrinsic(&last.name) {
            return None;
        }
        return Some(Target::SameCrate {
            name: last.name.clone(),
        });
    }
    let first = &path[0].name;
    if matches!(first.as_str(), "crate" | "self" | "super") {
        Some(Target::SameCrate {
            name: last.name.clone(),
        })
    } else if path.len() >= 3
        && path[1].name == "kernels"
        && crate::paths::deps().umbrella() == Some(first.as_str())
    {
        // `prism::kernels::f` from a crate that has only the umbrella: the library's callback macros are
        // at `prism_kernels`' root, which the umbrella re-exports as `kernels`.
        Some(Target::Qualified {
            alias: format!("{first}::kernels"),
            name: last.name.clone(),
        })
    } else {
        Some(Target::Qualified {
            alias: first.clone(),
            name: last.name.clone(),
        })
    }
}

/// Calls `f` on every call path of the function's body.
pub fn visit_calls(func: &mut Function, f: &mut dyn FnMut(&mut Vec<Ident>, Span)) {
    prism_core::mono::visit_calls_mut(&mut func.body, &mut |path, _, span| f(path, span));
}

/// The device functions `func` calls, first occurrence first, each with the span of the called name.
pub fn callees(func: &Function) -> Vec<(Target, Span)> {
    let mut out: Vec<(Target, Span)> = Vec::new();
    let mut copy = func.clone();
    visit_calls(&mut copy, &mut |path, _span| {
        if let Some(t) = classify(path) {
            let name_span = path.last().map(|i| i.span).unwrap_or_else(Span::call_site);
            if !out.iter().any(|(o, _)| *o == t) {
                out.push((t, name_span));
            }
        }
    });
    out
}

/// Whether `b` (or a block nested in it) contains an `unsafe` block (inline PTX).
pub fn has_unsafe(b: &Block) -> bool {
    b.stmts.iter().any(|s| match &s.kind {
        StmtKind::Unsafe { .. } => true,
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => has_unsafe(then_block) || else_block.as_ref().is_some_and(has_unsafe),
        StmtKind::While { body, .. }
        | StmtKind::For { body, .. }
        | StmtKind::Group { body, .. }
        | StmtKind::Claim { body, .. }
        | StmtKind::Async { body, .. }
        | StmtKind::Peer { body, .. }
        | StmtKind::Ring { body, .. }
        | StmtKind::RingUse { body, .. }
        | StmtKind::Partition { body, .. } => has_unsafe(body),
        StmtKind::Split { arms, .. } => arms.iter().any(|a| has_unsafe(&a.body)),
        _ => false,
    })
}

/// Variable names an expression reads, and the calls in it: `(single-segment callee name, names its arguments
/// read)`.
fn expr_flows(e: &Expr, reads: &mut Vec<String>, calls: &mut Vec<(String, Vec<String>)>) {
    match &e.kind {
        ExprKind::Lit(_) => {}
        ExprKind::Var(id) => reads.push(id.name.clone()),
        ExprKind::Index { base, indices } => {
            expr_flows(base, reads, calls);
            for i in indices {
                expr_flows(i, reads, calls);
            }
        }
        ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } | ExprKind::Ref { expr, .. } => {
            expr_flows(expr, reads, calls)
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            expr_flows(lhs, reads, calls);
            expr_flows(rhs, reads, calls);
        }
        ExprKind::Call { path, args, .. } => {
            let mut arg_reads = Vec::new();
            for a in args {
                expr_flows(a, &mut arg_reads, calls);
            }
            if let [name] = path.as_slice() {
                calls.push((name.name.clone(), arg_reads.clone()));
            }
            reads.extend(arg_reads);
        }
        ExprKind::MethodCall { recv, args, .. } => {
            expr_flows(recv, reads, calls);
            for a in args {
                expr_flows(a, reads, calls);
            }
        }
        ExprKind::ArrayLit(items) => {
            for i in items {
                expr_flows(i, reads, calls);
            }
        }
        ExprKind::ArrayRepeat { value, len } => {
            expr_flows(value, reads, calls);
            expr_flows(len, reads, calls);
        }
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => {
            expr_flows(cond, reads, calls);
            expr_flows(then_value, reads, calls);
            expr_flows(else_value, reads, calls);
        }
        ExprKind::Asm { operands, .. } => {
            for o in operands {
                expr_flows(&o.expr, reads, calls);
            }
        }
    }
}

/// Assignments `(target, names read)` and calls of a block, in any order (the analysis is flow-insensitive).
fn block_flows(
    b: &Block,
    assigns: &mut Vec<(String, Vec<String>)>,
    calls: &mut Vec<(String, Vec<String>)>,
) {
    let expr = |e: &Expr, calls: &mut Vec<(String, Vec<String>)>| {
        let mut r = Vec::new();
        expr_flows(e, &mut r, calls);
        r
    };
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Let {
                name,
                init: Some(e),
                ..
            } => {
                let r = expr(e, calls);
                assigns.push((name.name.clone(), r));
            }
            StmtKind::Assign { place, value, .. } => {
                let r = expr(value, calls);
                let _ = expr(place, calls);
                if let ExprKind::Var(id) = &place.kind {
                    assigns.push((id.name.clone(), r));
                }
            }
            StmtKind::Expr(e) => {
                let _ = expr(e, calls);
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let _ = expr(cond, calls);
                block_flows(then_block, assigns, calls);
                if let Some(b) = else_block {
                    block_flows(b, assigns, calls);
                }
            }
            StmtKind::While { cond, body } => {
                let _ = expr(cond, calls);
                block_flows(body, assigns, calls);
            }
            StmtKind::For {
                start,
                end,
                step,
                body,
                ..
            } => {
                let _ = expr(start, calls);
                let _ = expr(end, calls);
                if let Some(s) = step {
                    let _ = expr(s, calls);
                }
                block_flows(body, assigns, calls);
            }
            StmtKind::Group { body, .. }
            | StmtKind::Claim { body, .. }
            | StmtKind::Async { body, .. }
            | StmtKind::Peer { body, .. }
            | StmtKind::Ring { body, .. }
            | StmtKind::RingUse { body, .. }
            | StmtKind::Unsafe { body } => block_flows(body, assigns, calls),
            StmtKind::Split { arms, .. } => {
                for a in arms {
                    block_flows(&a.body, assigns, calls);
                }
            }
            StmtKind::Partition { index, body, .. } => {
                let _ = expr(&index.body, calls);
                block_flows(body, assigns, calls);
            }
            _ => {}
        }
    }
    if let Some(t) = &b.tail {
        let _ = expr(t, calls);
    }
}

/// The parameters among `candidates` whose values reach, directly or through local variables (by name, flow-
/// insensitively: an over-approximation), an argument of a call of a function for which `reaches_unsafe` holds
/// (calls are single-segment names, as `kernel::finish` rewrites them).
pub fn params_reaching(
    f: &Function,
    candidates: &[String],
    reaches_unsafe: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let (mut assigns, mut calls) = (Vec::new(), Vec::new());
    block_flows(&f.body, &mut assigns, &mut calls);
    candidates
        .iter()
        .filter(|p| {
            let mut tainted: Vec<&str> = vec![p.as_str()];
            loop {
                let before = tainted.len();
                for (t, reads) in &assigns {
                    if !tainted.contains(&t.as_str())
                        && reads.iter().any(|r| tainted.contains(&r.as_str()))
                    {
                        tainted.push(t);
                    }
                }
                if tainted.len() == before {
                    break;
                }
            }
            calls.iter().any(|(callee, reads)| {
                reaches_unsafe(callee) && reads.iter().any(|r| tainted.contains(&r.as_str()))
            })
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> Ident {
        Ident {
            name: s.into(),
            span: Span::call_site(),
        }
    }

    #[test]
    fn classification() {
        assert_eq!(classify(&[id("id")]), None);
        assert_eq!(classify(&[id("mma_m16n8k8_tf32")]), None);
        assert_eq!(
            classify(&[id("warp_load")]),
            Some(Target::SameCrate {
                name: "warp_load".into()
            })
        );
        assert_eq!(
            classify(&[id("crate"), id("m"), id("f")]),
            Some(Target::SameCrate { name: "f".into() })
        );
        assert_eq!(
            classify(&[id("prism_kernels"), id("warp_load")]),
            Some(Target::Qualified {
                alias: "prism_kernels".into(),
                name: "warp_load".into()
            })
        );
        assert_eq!(
            classify(&[id("pk"), id("load"), id("warp_load")]),
            Some(Target::Qualified {
                alias: "pk".into(),
                name: "warp_load".into()
            })
        );
    }
}
