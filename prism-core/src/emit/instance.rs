//! One kernel instance: the entry's parameters and prologue, the body, the launch contract, and the final
//! assembly of the PTX text (register declarations, shared memory, mbarriers).

use super::*;

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

pub(super) fn emit_instance(f: &Function, inst: &[i64], callees: &[Function]) -> R<CompiledKernel> {
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

    let contract = contract_of(f, &em, threads, blocks);
    let ptx = em.finish(&entry, &params_decl, threads);
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
fn contract_of(f: &Function, em: &Em, threads: Option<u32>, blocks: Option<u32>) -> Contract {
    let mut contract = Contract {
        threads_multiple_of: 1,
        threads_exact: threads,
        blocks_multiple_of: 1,
        blocks_exact: blocks,
        // Room to round the dynamic shared window up to the swizzle alignment at run time.
        smem_bytes: em.smem_top + (em.smem_align - 16),
        cluster: em.cluster,
    };
    contract.blocks_multiple_of = lcm(contract.blocks_multiple_of, em.cluster);
    for r in &f.requires {
        match r.perspective.level {
            Level::Thread => {
                contract.threads_multiple_of = lcm(contract.threads_multiple_of, r.perspective.n)
            }
            Level::Block => {
                contract.blocks_multiple_of = lcm(contract.blocks_multiple_of, r.perspective.n)
            }
            Level::Grid => {}
        }
    }
    contract
}

/// Declares kernel parameter `i` of the entry, loads it in the prologue and binds its name: a global
/// pointer becomes a memory view, a scalar a register, a tensor map its generic address.
fn entry_param(
    em: &mut Em,
    entry: &str,
    (i, p): (usize, &Param),
    persp: Perspective,
    params_decl: &mut Vec<String>,
    params: &mut Vec<ParamInfo>,
) -> R<()> {
    let pname = format!("{entry}_param_{i}");
    match &p.ty {
        Type::Ptr { elem, mutable } => {
            params_decl.push(format!("\t.param .u64 {pname}"));
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
            params_decl.push(format!("\t.param .{pt} {pname}"));
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
            params_decl.push(format!("\t.param .align 64 .b8 {pname}[128]"));
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

impl Em {
    pub(super) fn finish(mut self, entry: &str, params: &[String], threads: Option<u32>) -> String {
        let mut s = String::new();
        s.push_str("//\n// Generated by prism-core (Prism for Rust). Do not edit.\n//\n\n");
        // mbarrier transaction counts and bulk copies need sm_90.
        let target = if self.sm90a {
            "sm_90a"
        } else if self.mbars > 0 || self.cluster > 1 || !self.rings.is_empty() {
            "sm_90"
        } else {
            "sm_80"
        };
        let _ = write!(s, ".version 8.0\n.target {target}\n.address_size 64\n\n");
        if self.uses_smem {
            let _ = write!(
                s,
                ".extern .shared .align {} .b8 __prism_smem[];\n\n",
                self.smem_align
            );
        }
        // Static, apart from the dynamic `__prism_smem`, so the checker's layout and the contract's
        // `smem_bytes` do not change (8 bytes per bulk `async_` scope).
        for k in 0..self.mbars {
            let _ = writeln!(s, ".shared .align 8 .b64 __prism_mbar_{k};");
        }
        for (r, ring) in self.rings.iter().enumerate() {
            for side in ["full", "empty"] {
                let _ = writeln!(
                    s,
                    ".shared .align 8 .b64 __prism_ring{r}_{side}[{}];",
                    ring.stages
                );
            }
        }
        if self.mbars > 0 || !self.rings.is_empty() {
            s.push('\n');
        }
        let (prologue, body) = self.expand_async_waits();
        let _ = write!(s, ".visible .entry {entry}(");
        if params.is_empty() {
            s.push_str(")\n");
        } else {
            s.push('\n');
            s.push_str(&params.join(",\n"));
            s.push_str("\n)\n");
        }
        if let Some(t) = threads {
            let _ = writeln!(s, ".reqntid {t}");
        }
        if self.cluster > 1 {
            let _ = writeln!(s, ".reqnctapercluster {}, 1, 1", self.cluster);
        }
        if !self.set_max_regs_used.is_empty() {
            // setmaxnreg needs a known register count at entry (PTX ISA §9.7.19.5).
            let _ = writeln!(s, ".maxnreg {}", self.maxnreg_entry());
        }
        s.push_str("{\n");
        let align = self.smem_align;
        let smem_line = self.smem_reg.as_ref().map(|r| {
            let mut l = format!("\tmov.u32 {r}, __prism_smem;\n");
            if align > 16 {
                // The window's start is only 16-byte aligned on every device: round up (the contract
                // requests the extra bytes).
                let _ = write!(
                    l,
                    "\tadd.u32 {r}, {r}, {};\n\tand.b32 {r}, {r}, {};\n",
                    align - 1,
                    !(align - 1) as i32
                );
            }
            l
        });
        for (i, (ty, prefix)) in REG_CLASSES.iter().enumerate() {
            if self.nregs[i] > 0 {
                let _ = writeln!(s, "\t.reg .{ty} {prefix}<{}>;", self.nregs[i] + 1);
            }
        }
        s.push('\n');
        if let Some(l) = smem_line {
            s.push_str(&l);
        }
        s.push_str(&prologue);
        s.push_str(&body);
        s.push_str("}\n");
        s
    }

    /// The mbarrier entry prologue and the body with every [`ASYNC_WAIT_MARK`] expanded (allocates the
    /// registers both use, so it runs before the register declarations are written).
    ///
    /// Protocol per mbarrier (one per bulk `async_` scope): thread 0 initializes it with an arrival count of
    /// the block's threads; the issuing thread adds the copy's bytes with `expect_tx` before the copy; every
    /// block-wide async wait has each thread arrive and spin on the current phase's parity, then flip its
    /// phase. A wait with no copy outstanding just completes an empty phase, so waiting on every mbarrier at
    /// every block-wide wait is correct and keeps all threads' phases in step.
    pub(super) fn expand_async_waits(&mut self) -> (String, String) {
        let body = std::mem::take(&mut self.body);
        let mut pro = String::new();
        let mut phases = Vec::new();
        if self.mbars > 0 || !self.rings.is_empty() {
            let tid = self.fresh(ScalarType::U32);
            let cnt = self.fresh(ScalarType::U32);
            let p = self.fresh(ScalarType::Bool);
            let skip = self.label();
            let _ = writeln!(pro, "\tmov.u32 {tid}, %tid.x;");
            let _ = writeln!(pro, "\tsetp.ne.u32 {p}, {tid}, 0;");
            let _ = writeln!(pro, "\t@{p} bra {skip};");
            let _ = writeln!(pro, "\tmov.u32 {cnt}, %ntid.x;");
            for k in 0..self.mbars {
                let _ = writeln!(
                    pro,
                    "\tmbarrier.init.shared::cta.b64 [__prism_mbar_{k}], {cnt};"
                );
            }
            for (r, ring) in self.rings.iter().enumerate() {
                for i in 0..ring.stages {
                    let _ = writeln!(
                        pro,
                        "\tmbarrier.init.shared::cta.b64 [__prism_ring{r}_full+{}], {};",
                        8 * i,
                        ring.full_count
                    );
                    let _ = writeln!(
                        pro,
                        "\tmbarrier.init.shared::cta.b64 [__prism_ring{r}_empty+{}], {};",
                        8 * i,
                        ring.empty_count
                    );
                }
            }
            let _ = writeln!(pro, "{skip}:");
            // The initialization must be visible to every thread before any arrives or waits (and, for
            // multicast rings, to the other blocks of the cluster).
            if self.cluster_rings {
                pro.push_str("\tfence.mbarrier_init.release.cluster;\n");
                pro.push_str(
                    "\tbarrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;\n",
                );
            } else {
                pro.push_str("\tbar.sync 0;\n");
            }
            for _ in 0..self.mbars {
                let ph = self.fresh(ScalarType::U32);
                let _ = writeln!(pro, "\tmov.u32 {ph}, 0;");
                phases.push(ph);
            }
        }
        if !body.contains(ASYNC_WAIT_MARK) {
            return (pro, body);
        }
        let mut out = String::with_capacity(body.len());
        for l in body.split_inclusive('\n') {
            if l.trim() != ASYNC_WAIT_MARK {
                out.push_str(l);
                continue;
            }
            if self.uses_cp_async || self.mbars == 0 {
                out.push_str("\tcp.async.wait_all;\n");
            }
            for (k, ph) in phases.iter().enumerate() {
                let p = self.fresh(ScalarType::Bool);
                let wait = self.label();
                let _ = writeln!(
                    out,
                    "\tmbarrier.arrive.shared::cta.b64 _, [__prism_mbar_{k}];"
                );
                let _ = writeln!(out, "{wait}:");
                let _ = writeln!(
                    out,
                    "\tmbarrier.try_wait.parity.shared::cta.b64 {p}, [__prism_mbar_{k}], {ph};"
                );
                let _ = writeln!(out, "\t@!{p} bra {wait};");
                let _ = writeln!(out, "\txor.b32 {ph}, {ph}, 1;");
            }
        }
        (pro, out)
    }
}
