//! Drops the shared-memory bounds checks (SHARED-INDEX) whose index is in range on every path.
//!
//! The emitter guards every run-time index into a shared allocation with `setp.gt.u32 p, i, last` and
//! `selp.b32 a, OUT_OF_BOUNDS, a, p`: two instructions per access, which in an unrolled sgemm mainloop are
//! about 15% of the issued instructions. Most of those indices are built from the thread's position and
//! unrolled constants (`ty * 8 + 3`), whose largest value the kernel already fixes.
//!
//! An interval analysis over the registers that have exactly one, unguarded definition in the body: such a
//! register holds the value of that definition wherever it is read (the emitter defines before it reads),
//! so an upper bound computed from its operands' bounds holds at every read, in loops too. A register
//! defined twice (a mutable variable, a loop counter) or under a guard has no bound, and the checks on it
//! stay. Only unsigned, non-wrapping arithmetic is modelled.
//!
//! One exception for loop counters: a `for` loop's body reads an immutable copy of its counter, made right
//! after the loop's test (`setp.ge.u32 p, i, end; @p bra END; mov iv, i`, `emit/loops.rs`): the copy is below
//! `end` wherever it is read, so its bound is `end`'s minus one.

use crate::ptx::{Instruction, Operand, Stmt};
use std::collections::{HashMap, HashSet};

/// The address an out-of-range access is sent to (`view.rs`), as the parser reads it.
const OUT_OF_BOUNDS: i64 = 0xFFFF_FFF0;

/// Removes the checks proven redundant; `threads` is the block's exact size when the kernel fixes it.
pub(super) fn elide_proven(body: &mut Vec<Stmt>, threads: Option<u32>) {
    let mut instrs = Vec::new();
    collect(body, &mut instrs);
    // Definitions per register (any first operand that names a register, vector and pair members too;
    // a guarded one counts twice: the register may keep its old, undefined value).
    let mut defs: HashMap<String, u32> = HashMap::new();
    for i in &instrs {
        let n = if i.guard.is_some() { 2 } else { 1 };
        for r in dests(i) {
            *defs.entry(r).or_default() += n;
        }
    }
    let single = |r: &str| defs.get(r) == Some(&1);
    let mut below: HashMap<String, Operand> = HashMap::new();
    loop_copies(body, &mut below);
    let mut max: HashMap<String, u64> = HashMap::new();
    // Forward in text order, a few rounds for definitions that follow their use in the text.
    for _ in 0..4 {
        let before = max.len();
        for i in &instrs {
            let Some(Operand::Name(d)) = i.operands.first() else {
                continue;
            };
            if !single(d) || max.contains_key(d) {
                continue;
            }
            let m = match below.get(d) {
                Some(end) => value_max(end, &max).and_then(|e| e.checked_sub(1)),
                None => bound(i, &max, threads),
            };
            if let Some(m) = m {
                max.insert(d.clone(), m);
            }
        }
        if max.len() == before {
            break;
        }
    }
    // The checks: `setp.gt.u32 p, i, last` with `i ≤ last`, whose `p` only selects the out-of-bounds address.
    let mut never: HashSet<String> = HashSet::new();
    for i in &instrs {
        if i.opcode != "setp.gt.u32" || i.guard.is_some() {
            continue;
        }
        let (Some(Operand::Name(p)), Some(x), Some(Operand::Int(last))) =
            (i.operands.first(), i.operands.get(1), i.operands.get(2))
        else {
            continue;
        };
        if single(p) && value_max(x, &max).is_some_and(|m| m <= *last as u64) {
            never.insert(p.clone());
        }
    }
    // A predicate read anywhere but as a check's selector keeps its check.
    for i in &instrs {
        for (k, o) in i.operands.iter().enumerate() {
            if let Operand::Name(n) | Operand::NotName(n) = o {
                let selector = is_check_select(i) && k == 3;
                if never.contains(n) && k > 0 && !selector {
                    never.remove(n);
                }
            }
        }
        if let Some(g) = &i.guard {
            never.remove(&g.pred);
        }
    }
    if !never.is_empty() {
        rewrite(body, &never);
    }
}

/// The loop copies `mov iv, i` right after `setp.ge.u32 p, i, end; @p bra L;` (consecutive, no label
/// between: nothing jumps past the test), with their `end`.
fn loop_copies(stmts: &[Stmt], out: &mut HashMap<String, Operand>) {
    for w in stmts.windows(3) {
        let [Stmt::Instr(test), Stmt::Instr(exit), Stmt::Instr(copy)] = w else {
            continue;
        };
        let (Some(Operand::Name(p)), Some(Operand::Name(i)), Some(end)) = (
            test.operands.first(),
            test.operands.get(1),
            test.operands.get(2),
        ) else {
            continue;
        };
        let exits = exit.opcode.starts_with("bra")
            && exit
                .guard
                .as_ref()
                .is_some_and(|g| !g.negated && &g.pred == p);
        let copies = matches!(copy.opcode.as_str(), "mov.b32" | "mov.u32")
            && copy.guard.is_none()
            && copy.operands.get(1) == Some(&Operand::Name(i.clone()));
        if test.opcode == "setp.ge.u32" && test.guard.is_none() && exits && copies {
            if let Some(Operand::Name(iv)) = copy.operands.first() {
                out.insert(iv.clone(), end.clone());
            }
        }
    }
    for s in stmts {
        if let Stmt::Block(b) = s {
            loop_copies(&b.stmts, out);
        }
    }
}

fn collect<'a>(stmts: &'a [Stmt], out: &mut Vec<&'a Instruction>) {
    for s in stmts {
        match s {
            Stmt::Instr(i) => out.push(i),
            Stmt::Block(b) => collect(&b.stmts, out),
            _ => {}
        }
    }
}

/// The registers an instruction writes (its first operand), as far as this analysis needs: stores,
/// branches and barriers have an address, a label or a constant there.
fn dests(i: &Instruction) -> Vec<String> {
    let mut v = Vec::new();
    match i.operands.first() {
        Some(Operand::Name(n)) => v.push(n.clone()),
        Some(Operand::Vector(xs)) | Some(Operand::List(xs)) => {
            for x in xs {
                if let Operand::Name(n) = x {
                    v.push(n.clone());
                }
            }
        }
        Some(Operand::Pair(a, b)) => {
            for x in [a.as_ref(), b.as_ref()] {
                if let Operand::Name(n) = x {
                    v.push(n.clone());
                }
            }
        }
        _ => {}
    }
    // `shfl.sync d|p`-style second destinations and calls' return lists.
    for o in i.operands.iter().skip(1) {
        if let Operand::Pair(a, b) = o {
            for x in [a.as_ref(), b.as_ref()] {
                if let Operand::Name(n) = x {
                    v.push(n.clone());
                }
            }
        }
    }
    v
}

fn is_check_select(i: &Instruction) -> bool {
    i.opcode == "selp.b32"
        && i.guard.is_none()
        && matches!(i.operands.get(1), Some(Operand::Int(OUT_OF_BOUNDS)))
}

/// The largest unsigned value of an operand, when known.
fn value_max(o: &Operand, max: &HashMap<String, u64>) -> Option<u64> {
    match o {
        Operand::Int(c) if (0..=u32::MAX as i64).contains(c) => Some(*c as u64),
        Operand::Name(n) => max.get(n).copied(),
        _ => None,
    }
}

/// The largest value the instruction's 32-bit result can take, given its operands' bounds.
fn bound(i: &Instruction, max: &HashMap<String, u64>, threads: Option<u32>) -> Option<u64> {
    let ops = &i.operands;
    let a = || ops.get(1).and_then(|o| value_max(o, max));
    let b = || ops.get(2).and_then(|o| value_max(o, max));
    let fits = |v: u64| (v <= u32::MAX as u64).then_some(v);
    let signed_fits = |v: u64| (v <= i32::MAX as u64).then_some(v);
    match i.opcode.as_str() {
        "mov.u32" | "mov.b32" | "mov.s32" => match ops.get(1)? {
            Operand::Name(s) if s.starts_with("%tid.") => Some(match (s.as_str(), threads) {
                ("%tid.x", Some(t)) => t.saturating_sub(1) as u64,
                ("%tid.x" | "%tid.y", _) => 1023,
                _ => 63,
            }),
            Operand::Name(s) if s == "%laneid" => Some(31),
            _ => a(),
        },
        "add.u32" => fits(a()? + b()?),
        "add.s32" => signed_fits(a()? + b()?),
        "mul.lo.u32" => fits(a()?.checked_mul(b()?)?),
        "mul.lo.s32" => signed_fits(a()?.checked_mul(b()?)?),
        "shl.b32" => match ops.get(2)? {
            Operand::Int(k) if (0..32).contains(k) => fits(a()? << k),
            _ => None,
        },
        "shr.u32" | "shr.b32" => match ops.get(2)? {
            Operand::Int(k) if (0..32).contains(k) => Some(a()? >> k),
            _ => a(),
        },
        // A divisor known only at run time may be zero, and `div.u32` by zero gives all ones (PTX leaves
        // the value unspecified): no bound then (`s[t / n]` with `n = 0` must fault, not reach the
        // allocation before `s`). `rem` by zero gives the dividend (the emulator, as the GPU), so `a()`.
        "div.u32" => match ops.get(2)? {
            Operand::Int(c) if *c > 0 => Some(a()? / *c as u64),
            _ => None,
        },
        "rem.u32" => match ops.get(2)? {
            Operand::Int(c) if *c > 0 => Some(a().map_or(*c as u64 - 1, |m| m.min(*c as u64 - 1))),
            _ => a(),
        },
        "and.b32" => match (a(), b()) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (Some(x), None) | (None, Some(x)) => Some(x),
            _ => None,
        },
        "min.u32" => match (a(), b()) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (Some(x), None) | (None, Some(x)) => Some(x),
            _ => None,
        },
        _ => None,
    }
}

/// Deletes the proven checks' `setp`s and turns their `selp`s into moves of the address.
fn rewrite(stmts: &mut Vec<Stmt>, never: &HashSet<String>) {
    stmts.retain(|s| match s {
        Stmt::Instr(i) => {
            !(i.opcode == "setp.gt.u32"
                && matches!(i.operands.first(), Some(Operand::Name(p)) if never.contains(p)))
        }
        _ => true,
    });
    for s in stmts.iter_mut() {
        match s {
            Stmt::Instr(i) if is_check_select(i) => {
                if matches!(i.operands.get(3), Some(Operand::Name(p)) if never.contains(p)) {
                    let (d, a) = (i.operands[0].clone(), i.operands[2].clone());
                    *i = Instruction::new("mov.b32", vec![d, a]);
                }
            }
            Stmt::Block(b) => rewrite(&mut b.stmts, never),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::{Guard, Instruction as I};

    fn n(s: &str) -> Operand {
        Operand::Name(s.into())
    }

    fn checked(index_defs: Vec<I>, last: i64) -> Vec<Stmt> {
        let mut v: Vec<Stmt> = index_defs.into_iter().map(Stmt::Instr).collect();
        v.push(Stmt::Instr(I::new(
            "setp.gt.u32",
            vec![n("%p1"), n("%r9"), Operand::Int(last)],
        )));
        v.push(Stmt::Instr(I::new(
            "selp.b32",
            vec![n("%r10"), Operand::Int(OUT_OF_BOUNDS), n("%r8"), n("%p1")],
        )));
        v
    }

    fn kept(body: &[Stmt]) -> bool {
        body.iter()
            .any(|s| matches!(s, Stmt::Instr(i) if i.opcode == "selp.b32"))
    }

    #[test]
    fn thread_position_times_a_stride_plus_a_constant() {
        // tid.x < 128, tid * 8 + 7 <= 1023.
        let defs = || {
            vec![
                I::new("mov.u32", vec![n("%r1"), n("%tid.x")]),
                I::new("mul.lo.u32", vec![n("%r2"), n("%r1"), Operand::Int(8)]),
                I::new("add.u32", vec![n("%r9"), n("%r2"), Operand::Int(7)]),
            ]
        };
        let mut body = checked(defs(), 1023);
        elide_proven(&mut body, Some(128));
        assert!(!kept(&body), "{body:?}");
        assert_eq!(body.len(), 3 + 1, "the setp gone, the selp a mov");
        // Without `threads`, tid.x may reach 1023: 8191 > 1023 keeps the check.
        let mut body = checked(defs(), 1023);
        elide_proven(&mut body, None);
        assert!(kept(&body));
        // One element fewer: 1023 > 1022.
        let mut body = checked(defs(), 1022);
        elide_proven(&mut body, Some(128));
        assert!(kept(&body));
    }

    #[test]
    fn registers_defined_twice_or_under_a_guard_have_no_bound() {
        let twice = vec![
            I::new("mov.u32", vec![n("%r9"), Operand::Int(0)]),
            I::new("add.u32", vec![n("%r9"), n("%r9"), Operand::Int(64)]),
        ];
        let mut body = checked(twice, 127);
        elide_proven(&mut body, Some(32));
        assert!(kept(&body), "a loop counter");
        let mut guarded = I::new("mov.u32", vec![n("%r9"), Operand::Int(3)]);
        guarded.guard = Some(Guard {
            negated: false,
            pred: "%p7".into(),
        });
        let mut body = checked(vec![guarded], 127);
        elide_proven(&mut body, Some(32));
        assert!(kept(&body), "a guarded definition");
        // An unknown source (a load) bounds nothing.
        let mut body = checked(vec![I::new("ld.shared.u32", vec![n("%r9"), n("%r1")])], 127);
        elide_proven(&mut body, Some(32));
        assert!(kept(&body));
    }

    /// `for k in 0..end` as `emit/loops.rs` writes it, with `k * 32 + 5` as the index.
    fn counted_loop(end: Operand, test: &str) -> Vec<Stmt> {
        let mut exit = I::new("bra.uni", vec![n("$L__9")]);
        exit.guard = Some(Guard {
            negated: false,
            pred: "%p2".into(),
        });
        let mut v = vec![
            Stmt::Instr(I::new("mov.b32", vec![n("%r1"), Operand::Int(0)])),
            Stmt::Instr(I::new(test, vec![n("%p2"), n("%r1"), end])),
            Stmt::Instr(exit),
            Stmt::Instr(I::new("mov.b32", vec![n("%r2"), n("%r1")])),
        ];
        v.extend(checked(
            vec![
                I::new("mul.lo.u32", vec![n("%r3"), n("%r2"), Operand::Int(32)]),
                I::new("add.u32", vec![n("%r9"), n("%r3"), Operand::Int(5)]),
            ],
            1023,
        ));
        v.push(Stmt::Instr(I::new(
            "add.u32",
            vec![n("%r1"), n("%r1"), Operand::Int(1)],
        )));
        v
    }

    #[test]
    fn loop_counters_are_below_their_end() {
        // k < 32: k * 32 + 5 <= 997.
        let mut body = counted_loop(Operand::Int(32), "setp.ge.u32");
        elide_proven(&mut body, None);
        assert!(!kept(&body), "{body:?}");
        // k < 33: 32 * 32 + 5 = 1029 > 1023.
        let mut body = counted_loop(Operand::Int(33), "setp.ge.u32");
        elide_proven(&mut body, None);
        assert!(kept(&body));
        // A signed test (k may be negative) and an unknown end prove nothing.
        let mut body = counted_loop(Operand::Int(32), "setp.ge.s32");
        elide_proven(&mut body, None);
        assert!(kept(&body));
        let mut body = counted_loop(n("%r7"), "setp.ge.u32");
        elide_proven(&mut body, None);
        assert!(kept(&body));
        // A label between the test and the copy: something may jump past the test.
        let mut body = counted_loop(Operand::Int(32), "setp.ge.u32");
        body.insert(
            3,
            Stmt::Label(crate::ptx::Label {
                pos: Default::default(),
                name: "$L__3".into(),
            }),
        );
        elide_proven(&mut body, None);
        assert!(kept(&body));
    }

    #[test]
    fn masks_and_remainders_bound_anything() {
        let mut body = checked(
            vec![
                I::new("ld.global.u32", vec![n("%r1"), n("%rd1")]),
                I::new("rem.u32", vec![n("%r9"), n("%r1"), Operand::Int(128)]),
            ],
            127,
        );
        elide_proven(&mut body, None);
        assert!(!kept(&body));
        let mut body = checked(
            vec![
                I::new("ld.global.u32", vec![n("%r1"), n("%rd1")]),
                I::new("and.b32", vec![n("%r9"), n("%r1"), Operand::Int(255)]),
            ],
            127,
        );
        elide_proven(&mut body, None);
        assert!(kept(&body), "255 > 127");
    }

    /// A quotient by a run-time divisor is unbounded: the divisor may be zero (all ones).
    #[test]
    fn a_quotient_by_a_run_time_divisor_keeps_its_check() {
        let mut body = checked(
            vec![
                I::new("mov.u32", vec![n("%r1"), n("%tid.x")]),
                I::new("ld.global.u32", vec![n("%r2"), n("%rd1")]),
                I::new("div.u32", vec![n("%r9"), n("%r1"), n("%r2")]),
            ],
            255,
        );
        elide_proven(&mut body, Some(128));
        assert!(kept(&body), "t / n is all ones for n = 0");
        let mut body = checked(
            vec![
                I::new("mov.u32", vec![n("%r1"), n("%tid.x")]),
                I::new("div.u32", vec![n("%r9"), n("%r1"), Operand::Int(2)]),
            ],
            63,
        );
        elide_proven(&mut body, Some(128));
        assert!(!kept(&body), "t / 2 <= 63");
    }
}
