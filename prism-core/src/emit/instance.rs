//! One kernel instance: the entry's parameters and prologue, the body, the launch contract, and the final
//! assembly of the PTX text (register declarations, shared memory, mbarriers).

use super::body::{at, imm, ins, ins_if, label_stmt, name};
use super::*;
use crate::ptx;

pub(super) fn lcm(a: u32, b: u32) -> u32 {
    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    if a == 0 || b == 0 {
        a.max(b)
    } else {
        a / gcd(a, b) * b
    }
}

pub(super) fn emit_instance(
    f: &Function,
    facts: &crate::check::CheckedInstance,
    callees: &[Function],
) -> R<CompiledKernel> {
    let inst = facts.values.as_slice();
    let entry = entry_name(&f.name.name, inst);
    let mut em = Em::new();
    // The device functions as the sync stage left them (barriers inserted), inlined at each call.
    em.synced = callees
        .iter()
        .map(|c| (c.name.name.clone(), Rc::new(c.clone())))
        .collect();
    if inst.len() != f.const_params.len() {
        return Err(bug(
            "INSTANCES",
            f.name.span,
            format!(
                "instance has {} values for {} const generics",
                inst.len(),
                f.const_params.len()
            ),
        ));
    }
    for (cp, v) in f.const_params.iter().zip(inst) {
        em.bind(
            &cp.name.name,
            Binding::Scalar {
                val: Val::Imm(Imm::Int(*v as i128), Some(cp.ty)),
                persp: Perspective::grid(1),
            },
        );
    }
    let threads = f.threads.as_ref().map(|e| em.const_u32(e)).transpose()?;
    let blocks = f.blocks.as_ref().map(|e| em.const_u32(e)).transpose()?;
    em.threads = threads;
    em.cluster = f
        .cluster
        .as_ref()
        .map(|e| em.const_u32(e))
        .transpose()?
        .unwrap_or(1);
    em.proxy_fences = std::iter::once(f).chain(callees).any(|g| {
        let mut hit = false;
        crate::check::walk_calls(&g.body, &mut |name, _| {
            hit |= name.starts_with("wgmma_") || name == "tma_store"
        });
        hit
    });

    // Special registers, read once at entry (ptxas drops the unused ones).
    let tid = em.fresh(ScalarType::U32);
    let ctaid = em.fresh(ScalarType::U32);
    em.line(format!("mov.u32 {tid}, %tid.x;"));
    em.line(format!("mov.u32 {ctaid}, %ctaid.x;"));
    em.t = match threads {
        Some(t) => Val::imm_u32(t),
        None => {
            let r = em.fresh(ScalarType::U32);
            em.line(format!("mov.u32 {r}, %ntid.x;"));
            Val::Reg(r, ScalarType::U32)
        }
    };
    em.tid = Val::Reg(tid.clone(), ScalarType::U32);

    let top = f
        .requires
        .first()
        .map(|p| p.perspective)
        .unwrap_or(Perspective::grid(1));
    let mut params_decl = Vec::new();
    let mut params = Vec::new();
    for (i, p) in f.params.iter().enumerate() {
        let persp = p.at.map(|a| a.perspective).unwrap_or(top);
        entry_param(
            &mut em,
            &entry,
            (i, p),
            persp,
            &mut params_decl,
            &mut params,
        )?;
    }

    // Execution starts at grid[1]: rank = ctaid·T + tid; narrowing to the kernel's top perspective is a group.
    em.ctx = Ctx {
        persp: Perspective::grid(1),
        blk: Val::Reg(ctaid, ScalarType::U32),
        thr: Val::Reg(tid, ScalarType::U32),
        units: ring_sites::whole_block(em.threads),
    };
    em.group_into(top)?;
    em.smem_callee_base = em.own_smem(&f.body)?;
    em.block(&f.body)?;
    em.wgmma_retire();
    if em.cluster_rings {
        // Peers may still multicast into this block or arrive on its mbarriers until they are done too.
        em.line("barrier.cluster.arrive.release;".to_string());
        em.line("barrier.cluster.wait.acquire;".to_string());
    }
    if !em.bulk_pending.is_empty() {
        // TMA stores waited only until their boxes were read, if at all yet: their global writes finish
        // before the thread returns (a no-op for threads that issued none; it subsumes a pending wait).
        em.bulk_pending.clear();
        em.bulk_pending_since = None;
        em.line("cp.async.bulk.wait_group 0;".to_string());
    }
    em.line("ret;".to_string());
    for (i, p) in params.iter_mut().enumerate() {
        if let (
            ParamKind::TensorMap {
                box_dims, swizzle, ..
            },
            Some(u),
        ) = (&mut p.kind, em.tma_uses.get(&i))
        {
            box_dims.clone_from(&u.box_dims);
            *swizzle = u.layout;
        }
    }

    let contract = contract_of(f, facts, &em, (threads, blocks))?;
    let ptx = em.finish(&entry, params_decl, threads).map_err(|m| {
        Diagnostic::new("INTERNAL", f.name.span, format!("bug in the emitter: {m}"))
    })?;
    Ok(CompiledKernel {
        entry,
        types: f.type_args.clone(),
        instance: inst.to_vec(),
        ptx,
        params,
        contract,
    })
}

/// The launch contract of the instance: exact threads/blocks where declared, the multiples its `requires`
/// perspectives and cluster imply, and the shared memory it allocated.
/// The launch contract: the checker's facts of the instance (block and grid divisors and sizes), the
/// cluster size, and the shared memory the emitted code lays out. That is the checker's bound for straight
/// code, but an allocation inside an unrolled loop gets one slot per iteration, which only the lowering
/// walk counts: so SMEM-LIMIT is checked here again (in the check stage's walk, before any PTX is kept).
fn contract_of(
    f: &Function,
    facts: &crate::check::CheckedInstance,
    em: &Em,
    (threads, blocks): (Option<u32>, Option<u32>),
) -> Result<Contract, Diagnostic> {
    if (threads, blocks) != (facts.threads_exact, facts.blocks_exact) {
        return Err(Diagnostic::new(
            "INTERNAL",
            f.name.span,
            format!(
                "bug: the emitter evaluates threads/blocks to {threads:?}/{blocks:?}, the checker to {:?}/{:?}",
                facts.threads_exact, facts.blocks_exact
            ),
        ));
    }
    let smem = em.smem_top as u64 + (em.smem_align as u64 - 16);
    let declared = match &f.smem {
        Some(e) => Some(em.const_u32(e)? as u64),
        None => None,
    };
    let limit = declared
        .unwrap_or(crate::DEVICE_SMEM_LIMIT)
        .min(crate::DEVICE_SMEM_LIMIT);
    if smem > limit {
        let span = f.smem.as_ref().map_or(f.name.span, |e| e.span);
        return Err(Diagnostic::new(
            "SMEM-LIMIT",
            span,
            format!(
                "`{}` lays out {smem} bytes of shared memory (allocations inside unrolled loops take one slot per iteration), more than the {} of {limit} bytes",
                f.name,
                if declared.is_some() { "declared `smem`" } else { "device limit" }
            ),
        )
        .help("move the allocation out of the loop and reuse it across iterations"));
    }
    Ok(Contract {
        threads_multiple_of: facts.threads_multiple_of,
        threads_exact: facts.threads_exact,
        blocks_multiple_of: lcm(facts.blocks_multiple_of, em.cluster),
        blocks_exact: facts.blocks_exact,
        smem_bytes: smem as u32,
        cluster: em.cluster,
    })
}

/// Declares kernel parameter `i` of the entry, loads it in the prologue and binds its name: a global
/// pointer becomes a memory view, a scalar a register, a tensor map its generic address.
fn entry_param(
    em: &mut Em,
    entry: &str,
    (i, p): (usize, &Param),
    persp: Perspective,
    params_decl: &mut Vec<ptx::VarDecl>,
    params: &mut Vec<ParamInfo>,
) -> R<()> {
    let pname = format!("{entry}_param_{i}");
    match &p.ty {
        Type::Ptr { elem, mutable } => {
            params_decl.push(param_decl(&pname, None, ".u64", None));
            let a = em.fresh(ScalarType::U64);
            let g = em.fresh(ScalarType::U64);
            em.line(format!("ld.param.u64 {a}, [{pname}];"));
            em.line(format!("cvta.to.global.u64 {g}, {a};"));
            let view = View {
                space: Space::Global,
                base: Val::Reg(g, ScalarType::U64),
                elem: *elem,
                readonly: !*mutable,
                maps: Vec::new(),
                layout: SmemLayout::Linear,
                len: 0,
                peer: None,
            };
            em.bind(&p.name.name, Binding::Mem { view, persp });
            params.push(ParamInfo {
                name: p.name.name.clone(),
                kind: ParamKind::Ptr {
                    elem: *elem,
                    mutable: *mutable,
                },
            });
        }
        Type::Scalar(t) => {
            let (pt, rt) = match t {
                ScalarType::Bool => ("u32", ScalarType::U32),
                ScalarType::F16 | ScalarType::BF16 => ("b16", *t),
                _ => (ptx_ty(*t), *t),
            };
            params_decl.push(param_decl(&pname, None, &format!(".{pt}"), None));
            let r = em.fresh(rt);
            em.line(format!("ld.param.{pt} {r}, [{pname}];"));
            let val = if *t == ScalarType::Bool {
                let p = em.fresh(ScalarType::Bool);
                em.line(format!("setp.ne.u32 {p}, {r}, 0;"));
                Val::Reg(p, ScalarType::Bool)
            } else {
                Val::Reg(r, rt)
            };
            em.bind(&p.name.name, Binding::Scalar { val, persp });
            params.push(ParamInfo {
                name: p.name.name.clone(),
                kind: ParamKind::Scalar(*t),
            });
        }
        Type::TensorMap {
            elem,
            rank,
            mutable,
        } => {
            // By value, as `cuLaunchKernel` copies it; TMA reads it through its generic address.
            params_decl.push(param_decl(&pname, Some(64), ".b8", Some(128)));
            let a = em.fresh(ScalarType::U64);
            let g = em.fresh(ScalarType::U64);
            em.line(format!("mov.b64 {a}, {pname};"));
            em.line(format!("cvta.param.u64 {g}, {a};"));
            em.bind(
                &p.name.name,
                Binding::TensorMap {
                    param: i,
                    addr: g,
                    elem: *elem,
                    rank: *rank,
                },
            );
            params.push(ParamInfo {
                name: p.name.name.clone(),
                kind: ParamKind::TensorMap {
                    elem: *elem,
                    rank: *rank,
                    mutable: *mutable,
                    box_dims: Vec::new(),
                    swizzle: SmemLayout::Linear,
                },
            });
        }
        _ => {
            return Err(bug(
                "TYPE",
                p.span,
                format!(
                    "kernel parameter `{}` must be a scalar or a global pointer",
                    p.name
                ),
            ))
        }
    }
    Ok(())
}

/// `.param [.align A] ty name[[N]]`.
fn param_decl(name: &str, align: Option<i64>, ty: &str, len: Option<i64>) -> ptx::VarDecl {
    ptx::VarDecl {
        pos: ptx::Pos::default(),
        linkage: Vec::new(),
        space: ptx::Space::Param,
        align,
        quals: vec![ty.to_string()],
        name: name.to_string(),
        dims: len.map(Some).into_iter().collect(),
        init: None,
    }
}

/// A module-level `.shared` (or `.extern .shared`) variable of `ty` elements.
fn shared_decl(name: &str, ext: bool, align: i64, ty: &str, dims: Vec<Option<i64>>) -> ptx::Item {
    ptx::Item::Var(ptx::VarDecl {
        pos: ptx::Pos::default(),
        linkage: if ext {
            vec![".extern".into()]
        } else {
            Vec::new()
        },
        space: ptx::Space::Shared,
        align: Some(align),
        quals: vec![ty.to_string()],
        name: name.to_string(),
        dims,
        init: None,
    })
}

fn directive(name: &str, args: &str) -> ptx::Item {
    ptx::Item::Directive(ptx::Directive {
        pos: ptx::Pos::default(),
        name: name.into(),
        args: args.into(),
    })
}

fn perf(name: &str, args: Vec<i64>) -> ptx::PerfDirective {
    ptx::PerfDirective {
        pos: ptx::Pos::default(),
        name: name.into(),
        args,
    }
}

/// The comment that opens every emitted module (outside the model: comments are not PTX statements).
const HEADER: &str = "//\n// Generated by prism-core (Prism for Rust). Do not edit.\n//\n\n";

impl Em {
    /// Assembles the module (directives, shared variables, the entry with its parameters, performance
    /// directives, register declarations and body) and prints it.
    pub(super) fn finish(
        mut self,
        entry: &str,
        params: Vec<ptx::VarDecl>,
        threads: Option<u32>,
    ) -> Result<String, String> {
        // mbarrier transaction counts and bulk copies need sm_90.
        let target = if self.sm90a {
            "sm_90a"
        } else if self.mbars > 0 || self.cluster > 1 || !self.rings.is_empty() {
            "sm_90"
        } else {
            "sm_80"
        };
        let mut items = vec![
            directive(".version", "8.0"),
            directive(".target", target),
            directive(".address_size", "64"),
        ];
        if self.uses_smem {
            let align = self.smem_align as i64;
            items.push(shared_decl("__prism_smem", true, align, ".b8", vec![None]));
        }
        // Static, apart from the dynamic `__prism_smem`, so the checker's layout and the contract's
        // `smem_bytes` do not change (8 bytes per bulk `async_` scope).
        for k in 0..self.mbars {
            items.push(shared_decl(
                &format!("__prism_mbar_{k}"),
                false,
                8,
                ".b64",
                vec![],
            ));
        }
        for (r, ring) in self.rings.iter().enumerate() {
            for side in ["full", "empty"] {
                let n = Some(ring.stages as i64);
                items.push(shared_decl(
                    &format!("__prism_ring{r}_{side}"),
                    false,
                    8,
                    ".b64",
                    vec![n],
                ));
            }
            if ring.turn_count > 0 {
                let name = format!("__prism_ring{r}_turn");
                items.push(shared_decl(&name, false, 8, ".b64", vec![Some(2)]));
            }
        }
        let mut perfs = Vec::new();
        if let Some(t) = threads {
            perfs.push(perf(".reqntid", vec![t as i64]));
        }
        if self.cluster > 1 {
            perfs.push(perf(".reqnctapercluster", vec![self.cluster as i64, 1, 1]));
        }
        if !self.set_max_regs_used.is_empty() {
            // setmaxnreg needs a known register count at entry (PTX ISA §9.7.19.5).
            perfs.push(perf(".maxnreg", vec![self.maxnreg_entry() as i64]));
        }
        let mut body = self.smem_prologue();
        let (prologue, rest) = self.expand_async_waits();
        body.extend(prologue);
        body.extend(rest);
        super::proxy_fences::elide_redundant(&mut body);
        super::bounds::elide_proven(&mut body, threads);
        // Declarations last: the passes above allocate registers too.
        let mut decls: Vec<ptx::Stmt> = REG_CLASSES
            .iter()
            .enumerate()
            .filter(|(i, _)| self.nregs[*i] > 0)
            .map(|(i, (ty, prefix))| {
                ptx::Stmt::Reg(ptx::RegDecl {
                    pos: ptx::Pos::default(),
                    quals: vec![format!(".{ty}")],
                    names: vec![ptx::RegName {
                        name: prefix.to_string(),
                        range: Some(self.nregs[i] as i64 + 1),
                    }],
                })
            })
            .collect();
        decls.extend(body);
        items.push(ptx::Item::Func(ptx::Function {
            pos: ptx::Pos::default(),
            linkage: vec![".visible".into()],
            entry: true,
            rets: None,
            name: entry.to_string(),
            params: Some(params),
            perf: perfs,
            body: Some(decls),
            end: ptx::Pos::default(),
        }));
        if let Some(e) = self.internal_error.take() {
            return Err(e);
        }
        Ok(format!("{HEADER}{}", ptx::Module { items }))
    }

    /// The dynamic shared window's base register, rounded up to the allocation's alignment.
    fn smem_prologue(&self) -> Vec<ptx::Stmt> {
        let Some(r) = self.smem_reg.as_deref() else {
            return Vec::new();
        };
        let mut out = vec![ins("mov.u32", vec![name(r), name("__prism_smem")])];
        let align = self.smem_align as i64;
        if align > 16 {
            // The window's start is only 16-byte aligned on every device: round up (the contract requests
            // the extra bytes).
            out.push(ins("add.u32", vec![name(r), name(r), imm(align - 1)]));
            out.push(ins(
                "and.b32",
                vec![name(r), name(r), imm(!(align - 1) as i32 as i64)],
            ));
        }
        out
    }

    /// The mbarrier entry prologue and the body with every [`body::Piece::AsyncWait`] expanded (allocates
    /// the registers both use, so it runs before the register declarations are built).
    ///
    /// Protocol per mbarrier (one per bulk `async_` scope): thread 0 initializes it with an arrival count of
    /// the block's threads; the issuing thread adds the copy's bytes with `expect_tx` before the copy; every
    /// block-wide async wait has each thread arrive and spin on the current phase's parity, then flip its
    /// phase. A wait with no copy outstanding just completes an empty phase, so waiting on every mbarrier at
    /// every block-wide wait is correct and keeps all threads' phases in step.
    fn expand_async_waits(&mut self) -> (Vec<ptx::Stmt>, Vec<ptx::Stmt>) {
        let pieces = std::mem::take(&mut self.body);
        let mut pro = Vec::new();
        let mut phases = Vec::new();
        if self.mbars > 0 || !self.rings.is_empty() {
            let tid = self.fresh(ScalarType::U32);
            let cnt = self.fresh(ScalarType::U32);
            let p = self.fresh(ScalarType::Bool);
            let skip = self.label();
            pro.push(ins("mov.u32", vec![name(&tid), name("%tid.x")]));
            pro.push(ins("setp.ne.u32", vec![name(&p), name(&tid), imm(0)]));
            pro.push(ins_if(false, &p, "bra", vec![name(&skip)]));
            pro.push(ins("mov.u32", vec![name(&cnt), name("%ntid.x")]));
            let init = "mbarrier.init.shared::cta.b64";
            for k in 0..self.mbars {
                pro.push(ins(
                    init,
                    vec![at(&format!("__prism_mbar_{k}"), None), name(&cnt)],
                ));
            }
            for (r, ring) in self.rings.iter().enumerate() {
                for (sym, off, count) in ring.mbarriers(r) {
                    pro.push(ins(init, vec![at(&sym, Some(off)), imm(count as i64)]));
                }
            }
            pro.push(label_stmt(&skip));
            // The initialization must be visible to every thread before any arrives or waits (and, for
            // multicast rings, to the other blocks of the cluster).
            if self.cluster_rings {
                pro.push(ins("fence.mbarrier_init.release.cluster", vec![]));
                pro.push(ins("barrier.cluster.arrive.release", vec![]));
                pro.push(ins("barrier.cluster.wait.acquire", vec![]));
            } else {
                pro.push(ins("bar.sync", vec![imm(0)]));
            }
            for _ in 0..self.mbars {
                let ph = self.fresh(ScalarType::U32);
                pro.push(ins("mov.u32", vec![name(&ph), imm(0)]));
                phases.push(ph);
            }
        }
        let mut out = Vec::with_capacity(pieces.len());
        for piece in pieces {
            match piece {
                body::Piece::Stmt(s) | body::Piece::Own(s) => out.push(s),
                body::Piece::BulkStoreWait(param) => {
                    let full = self.tma_loaded.contains(&param);
                    let op = if full {
                        "cp.async.bulk.wait_group"
                    } else {
                        "cp.async.bulk.wait_group.read"
                    };
                    out.push(ins(op, vec![imm(0)]));
                }
                body::Piece::AsyncWait => {
                    if self.uses_cp_async || self.mbars == 0 {
                        out.push(ins("cp.async.wait_all", vec![]));
                    }
                    for (k, ph) in phases.iter().enumerate() {
                        let p = self.fresh(ScalarType::Bool);
                        let wait = self.label();
                        let mbar = format!("__prism_mbar_{k}");
                        let arrive = "mbarrier.arrive.shared::cta.b64";
                        out.push(ins(arrive, vec![ptx::Operand::Sink, at(&mbar, None)]));
                        out.push(label_stmt(&wait));
                        let try_wait = "mbarrier.try_wait.parity.shared::cta.b64";
                        out.push(ins(try_wait, vec![name(&p), at(&mbar, None), name(ph)]));
                        out.push(ins_if(true, &p, "bra", vec![name(&wait)]));
                        out.push(ins("xor.b32", vec![name(ph), name(ph), imm(1)]));
                    }
                }
            }
        }
        (pro, out)
    }
}
