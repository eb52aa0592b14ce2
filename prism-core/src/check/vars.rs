//! Memory and sharing: the environment of declared names and their perspectives, reads up and writes down
//! (READ-UP, WRITE-DOWN), stores, claims, and suggestions for unknown names.

use super::*;

impl<'a> Cx<'a> {
    pub(super) fn declare(
        &mut self,
        name: &Ident,
        at: Perspective,
        ty: Ty,
        mutable: bool,
    ) -> usize {
        self.vars.push(Var {
            name: name.name.clone(),
            span: name.span,
            at,
            ty,
            mutable,
            konst: None,
            hidden: None,
            index_arity: 1,
            claim: None,
            is_async: false,
            fill_slot: false,
            sym: None,
            overlap: None,
            layout: None,
            range: None,
            uniform_over: None,
            of_counters: None,
            used: false,
        });
        self.vars.len() - 1
    }

    /// `&p[i]` where `p` is a pointer or shared allocation: the memory space of the element.
    pub(super) fn memory_element(&self, e: &Expr) -> Option<Space> {
        let ExprKind::Ref { expr, .. } = &e.kind else {
            return None;
        };
        let ExprKind::Index { base, .. } = &expr.kind else {
            return None;
        };
        let ExprKind::Var(id) = &base.kind else {
            return None;
        };
        match &self.vars[self.lookup(&id.name)?].ty {
            Ty::Ptr { space, .. } => Some(*space),
            _ => None,
        }
    }

    pub(super) fn lookup(&self, name: &str) -> Option<usize> {
        self.vars.iter().rposition(|v| v.name == name)
    }

    /// A use of a variable: [UNKNOWN-NAME], hidden names, claim bookkeeping.
    pub(super) fn use_var(&mut self, id: &Ident) -> Option<usize> {
        let Some(i) = self.lookup(&id.name) else {
            let mut d = err(
                "UNKNOWN-NAME",
                id.span,
                format!("cannot find `{}` in this scope", id.name),
            );
            if let Some(s) = self.similar(&id.name) {
                d = d.help(format!("did you mean `{s}`?"));
            }
            self.errors.push(d);
            return None;
        };
        if let Some(h) = self.vars[i].hidden.clone() {
            let d = match h {
                Hidden::Partition(s) => err(
                    "PARTITION-HIDDEN",
                    id.span,
                    format!("`{}` is partitioned here: inside the partition only its new name may be used", id.name),
                )
                .note(s, "partitioned here")
                .help(format!("read `{}` after the partition's scope, or in block code between two partitions: each phase (a compare-exchange of a sort, a level of a reduction) reads what the last one wrote, then writes through a new partition (docs/GUIDE.md §2)", id.name)),
                Hidden::Claim(s) => err(
                    "CLAIM-HIDDEN",
                    id.span,
                    format!("`{}` is claimed here: inside the claim only its new name may be used", id.name),
                )
                .note(s, "claimed here"),
                Hidden::Async(s) => err(
                    "ASYNC-HIDDEN",
                    id.span,
                    format!("`{}` is in an `async_` scope: it cannot be used until the scope ends", id.name),
                )
                .note(s, "async scope begins here"),
                Hidden::Ring(s) => err(
                    "RING-HIDDEN",
                    id.span,
                    format!("`{}` is a ring here: inside the ring its slots are reached only through `fill` and `drain`", id.name),
                )
                .note(s, "ring begins here"),
                Hidden::Peer(s) => err(
                    "PEER-HIDDEN",
                    id.span,
                    format!("`{}` is read by the other blocks of the cluster here: it cannot be used until `peer` ends", id.name),
                )
                .note(s, "peer begins here")
                .help("read what this block needs of it into thread variables before the `peer` (another block's copy is read through a `peer` nested in this one)"),
            };
            self.errors.push(d);
            return None;
        }
        self.vars[i].used = true;
        self.claim_one_branch(i, id.span);
        Some(i)
    }

    pub(super) fn similar(&self, name: &str) -> Option<String> {
        let mut best: Option<(usize, &str)> = None;
        for v in &self.vars {
            let d = edit_distance(name, &v.name);
            if d <= 2 && d < name.len().max(1) && best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, &v.name));
            }
        }
        best.map(|(_, s)| s.to_string())
    }

    /// [CLAIM-ONE-BRANCH] every use of a claimed name lies in one and the same split arm (of perspective
    /// equal to the claim's) within the claim body, and no `group` between the claim and that arm
    /// replicates the arm below the units that see the same elements. A partition whose index closure
    /// gives its units the same elements is held to the same rule.
    pub(super) fn claim_one_branch(&mut self, i: usize, span: Span) {
        let Some(c) = self.vars[i].claim.clone() else {
            return;
        };
        let name = self.vars[i].name.clone();
        let what = if c.from_partition {
            format!(
                "`{name}` is the same elements for every {} unit of {} (its index closure reads nothing that tells them apart), so it is used as a claim",
                c.at, c.same_for
            )
        } else {
            format!("claimed `{name}` ({})", c.at)
        };
        // The arm that hands the memory to one unit: the outermost one at the claim's perspective (arms
        // nested in it only narrow that unit further).
        let arms = &self.arms[c.arm_base.min(self.arms.len())..];
        let innermost = arms.last().copied();
        let arm = arms.iter().find(|a| a.at == c.at).copied().or(innermost);
        let Some(arm) = arm else {
            let mut help = format!(
                "use it inside one arm of `match split(..)` whose perspective is {}",
                c.at
            );
            if c.from_partition {
                let example = if c.at.n == 1 {
                    "`|i| u + i`".to_string()
                } else {
                    format!("`|i| u * {} + i`", c.at.n)
                };
                help.push_str(&format!(
                    ", or give each {} unit its own elements: an index closure that reads the unit's position ({example} with `u` a variable at {})",
                    c.at, c.at
                ));
            }
            let d = err(
                "CLAIM-ONE-BRANCH",
                span,
                format!("{what}: it is used outside a `split` arm"),
            )
            .help(help);
            self.errors.push(d);
            return;
        };
        if arm.at != c.at {
            self.errors.push(err(
                "CLAIM-ONE-BRANCH",
                span,
                format!("{what}: it is used in a split arm at {}", arm.at),
            ));
            return;
        }
        let base = c.group_base.min(arm.groups);
        if let Some(g) = self.groups[base..arm.groups]
            .iter()
            .find(|g| !self.le(c.same_for, **g))
        {
            self.errors.push(
                err(
                    "CLAIM-ONE-BRANCH",
                    span,
                    format!(
                        "{what}: the split arm using it runs once in every {g} unit of a `group({g}, ..)`, so several {} units use the same elements",
                        c.at
                    ),
                )
                .help(format!(
                    "split at {} (outside the `group`), or give each unit its own memory",
                    c.same_for
                )),
            );
            return;
        }
        match c.first_use {
            None => {
                if let Some(ci) = self.vars[i].claim.as_mut() {
                    ci.first_use = Some((arm.split, arm.arm, span));
                }
            }
            Some((s, a, first)) if (s, a) != (arm.split, arm.arm) => self.errors.push(
                err(
                    "CLAIM-ONE-BRANCH",
                    span,
                    format!("{what}: it is used in two different split arms"),
                )
                .note(first, "first used here, in another arm")
                .help("a claim gives the memory to exactly one branch: use it in one arm only"),
            ),
            Some(_) => {}
        }
    }

    /// [READ-UP] / [WRITE-DOWN]: a variable at `v_at` flows into `sink`.
    pub(super) fn read_up(&mut self, vi: usize, span: Span, sink: &Sink) {
        let v = &self.vars[vi];
        if v.konst.is_some() || self.le(sink.p, v.at) {
            return;
        }
        let d = err(
            sink.rule,
            span,
            format!(
                "`{}` lives at {} but is read into {}: it may differ between the threads of {}",
                v.name, v.at, sink.what, sink.p
            ),
        )
        .note(v.span, format!("`{}` declared here at {}", v.name, v.at))
        .help(if sink.rule == "T-PARTITION" {
            format!(
                "the index closure runs at {p} (READ-UP into {p}): it may read only variables at {p} or broader, \
                 which every thread of a {p} unit shares; per-thread offsets belong in the indices of the uses \
                 (`y[i]`), or partition further down to the threads that own the value",
                p = sink.p
            )
        } else if !v.mutable && v.uniform_over.is_some_and(|u| self.le(sink.p, u)) {
            // An immutable value made of broader values: its declaration is what narrows it.
            format!(
                "only variables at {p} or broader can flow there; `{}` is computed from values at {} or broader: declare it `#[at({p})]` (or drop its `#[at(..)]`)",
                v.name,
                v.uniform_over.unwrap_or(v.at),
                p = sink.p
            )
        } else {
            format!("only variables at {} or broader can flow there", sink.p)
        });
        self.errors.push(d);
    }

    /// [WRITE-DOWN] a variable can only be written from code at its perspective or broader.
    pub(super) fn write_down(&mut self, v: &Var, span: Span, code: Perspective) {
        if !self.le(v.at, code) {
            self.errors.push(
                err(
                    "WRITE-DOWN",
                    span,
                    format!("`{}` lives at {} but is written from narrower code at {code}: the threads of {} would disagree on its value", v.name, v.at, v.at),
                )
                .note(v.span, format!("`{}` declared here at {}", v.name, v.at))
                .help(format!("write it from code at {} (outside the group/split), or declare it at {code}", v.at)),
            );
        }
    }

    /// [STORE]/[CONST]/[T-ARR-ACCESS-SHARED]: writes through memory go through a mutable thread[1] pointer.
    pub(super) fn store(
        &mut self,
        v: &Var,
        span: Span,
        mutable: bool,
        space: Space,
        code: Perspective,
        indices: Option<&[Expr]>,
    ) {
        if !mutable {
            self.errors.push(
                err(
                    "CONST",
                    span,
                    format!(
                        "cannot write through `{}`: it is {}",
                        v.name,
                        if space == Space::Shared { "read-only shared memory (a `peer` view of another block's allocation, a drain's slot, or a `Shared` parameter)" } else { "a `*const` pointer" }
                    ),
                )
                .note(v.span, "declared here")
                .help(if space == Space::Shared {
                    "another block's shared memory and a ring's drained slots are only read; write your own block's allocation (outside `peer`), or a `SharedMut` parameter"
                } else {
                    "declare the parameter `*mut T`"
                }),
            );
            return;
        }
        if v.at != Perspective::thread(1) {
            self.errors.push(
                err(
                    "STORE",
                    span,
                    format!("writing through `{}` at {} from code at {code}: memory is written only through a thread[1] view", v.name, v.at),
                )
                .note(v.span, format!("`{}` is at {}", v.name, v.at))
                .help(format!("narrow it first: `partition({}, thread[1], |i| offset + i, |{}_thread| {{ .. }})`; an element chosen by data (a histogram's bin) is updated with `atomic_add({}, bin, 1)` instead", v.name, v.name, v.name)),
            );
        }
        if space == Space::Shared {
            self.arr_access_shared(v, span, code);
        }
        let what = format!("writing through `{}`", v.name);
        self.overlapping_write(v, span, &what, indices);
        if let Some(ix) = indices {
            self.index_overlap(v, span, &what, ix, 1);
        }
    }

    /// [T-ARR-ACCESS-SHARED] shared memory is only accessed from code at block[1] or narrower.
    pub(super) fn arr_access_shared(&mut self, v: &Var, span: Span, code: Perspective) {
        // In a device function, thread-level code is a unit its caller has inside one block (the call is
        // checked against the caller's launch facts, which the callee does not see).
        let device_thread_code = self.f.kind == FnKind::Device && code.level == Level::Thread;
        if !device_thread_code && !self.le(code, Perspective::block(1)) {
            self.errors.push(
                err(
                    "T-ARR-ACCESS-SHARED",
                    span,
                    format!("shared memory `{}` is accessed from code at {code}; shared memory belongs to one block (block[1])", v.name),
                )
                .help("access it from each block's code: `group(block[1], || { .. })` around the access (then narrow it to the threads that read it)"),
            );
        }
    }

    pub(super) fn index_arity(&mut self, v: &Var, indices: &[Expr], span: Span) {
        if indices.len() != v.index_arity {
            let d = if v.index_arity > 1 || indices.len() > 1 {
                err(
                    "T-PARTITION",
                    span,
                    format!(
                        "`{}` takes {} index(es) (its partition's index function has {} parameter(s)), found {}",
                        v.name, v.index_arity, v.index_arity, indices.len()
                    ),
                )
            } else {
                err("TYPE", span, format!("`{}` takes one index", v.name))
            };
            self.errors.push(d);
        }
    }
}

pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let c = if a[i - 1] == b[j - 1] { 0 } else { 1 };
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + c);
        }
        prev = cur;
    }
    prev[b.len()]
}
