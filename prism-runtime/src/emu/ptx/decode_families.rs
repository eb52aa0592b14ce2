//! The family decoders of `decode.rs`: each maps the opcodes of one family (with their modifiers) to a
//! `Kind`, and any other opcode to `None`.

use super::*;

/// The registers and arithmetic: `mov`, the ALU, carry arithmetic, `setp` / `set`, `selp`, `slct`, `cvt`, `cvta`; `None` for another family's opcode.
pub(super) fn decode_regop(o: &OpInfo) -> Result<Option<Decoded>, PtxError> {
    let OpInfo {
        p,
        line,
        base,
        mods,
        types,
        space,
        rnd,
        ty0,
        m,
        ..
    } = *o;
    let has = |m: &str| mods.contains(&m);
    let alu = |op: AluOp| Kind::Alu(op, ty0, m);
    let kind = match base {
        // st.async / red.async: stores and reductions into a cluster block's shared memory with mbarrier
        // completion (sm_90); st.bulk (sm_100): not modelled.
        "st" | "red" if has("async") => sm90::decode_async_store(&p.opcode, base, mods, types),
        "st" if has("bulk") => Kind::Unsupported(p.opcode.clone()),
        "add" | "sub" | "mad" if has("cc") => pmisc::carry(base, true, m.hi, ty0),
        "addc" | "subc" | "madc" => pmisc::carry(base, has("cc"), m.hi, ty0),
        "cvt" if has("pack") => pmisc::cvt_pack(&p.opcode, types),
        "szext" => alu(AluOp::Szext),
        "fns" => alu(AluOp::Fns),
        "dp4a" | "dp2a" => {
            let sa = types.first().is_some_and(|t| t.is_signed());
            let sb = types.get(1).is_some_and(|t| t.is_signed());
            let ty = if sa || sb { PtxType::S32 } else { PtxType::U32 };
            let op = if base == "dp4a" {
                AluOp::Dp4a(sa, sb)
            } else {
                AluOp::Dp2a(sa, sb)
            };
            Kind::Alu(op, ty, m)
        }
        "mov" => Kind::Mov(ty0),
        "add" | "sub" | "min" | "max" if has("u16x2") || has("s16x2") => {
            pmisc::packed16(&p.opcode, base, mods)
        }
        "add" => alu(AluOp::Add),
        "sub" => alu(AluOp::Sub),
        "mul" => alu(AluOp::Mul),
        "mad" => alu(AluOp::Mad),
        "mul24" => alu(AluOp::Mul24),
        "mad24" => alu(AluOp::Mad24),
        "sad" => alu(AluOp::Sad),
        "div" => alu(AluOp::Div),
        "rem" => alu(AluOp::Rem),
        "abs" => alu(AluOp::Abs),
        "neg" => alu(AluOp::Neg),
        "min" => alu(AluOp::Min),
        "max" => alu(AluOp::Max),
        "fma" => alu(AluOp::Fma),
        "rcp" => alu(AluOp::Rcp),
        "sqrt" => alu(AluOp::Sqrt),
        "rsqrt" => alu(AluOp::Rsqrt),
        "ex2" => alu(AluOp::Ex2),
        "lg2" => alu(AluOp::Lg2),
        "sin" => alu(AluOp::Sin),
        "cos" => alu(AluOp::Cos),
        "tanh" => alu(AluOp::Tanh),
        "and" => alu(AluOp::And),
        "or" => alu(AluOp::Or),
        "xor" => alu(AluOp::Xor),
        "not" => alu(AluOp::Not),
        "cnot" => alu(AluOp::Cnot),
        "shl" => alu(AluOp::Shl),
        "shr" => alu(AluOp::Shr),
        "popc" => alu(AluOp::Popc),
        "clz" => alu(AluOp::Clz),
        "brev" => alu(AluOp::Brev),
        "bfe" => alu(AluOp::Bfe),
        "bmsk" => alu(AluOp::Bmsk),
        "bfi" => alu(AluOp::Bfi),
        "bfind" if has("shiftamt") => alu(AluOp::BfindShiftAmt),
        "bfind" => alu(AluOp::Bfind),
        "copysign" => alu(AluOp::Copysign),
        "prmt" => {
            let modes = ["f4e", "b4e", "rc8", "ecl", "ecr", "rc16"];
            match modes.iter().position(|x| has(x)) {
                Some(i) => alu(AluOp::PrmtMode(i as u8)),
                None => alu(AluOp::Prmt),
            }
        }
        "lop3" => alu(AluOp::Lop3),
        "shf" => {
            if has("l") {
                alu(AluOp::ShfL)
            } else {
                alu(AluOp::ShfR)
            }
        }
        "testp" => {
            let op = if has("finite") {
                AluOp::TestpFinite
            } else if has("infinite") {
                AluOp::TestpInfinite
            } else if has("number") {
                AluOp::TestpNumber
            } else if has("notanumber") {
                AluOp::TestpNan
            } else if has("normal") {
                AluOp::TestpNormal
            } else {
                AluOp::TestpSubnormal
            };
            alu(op)
        }
        "setp" | "set" => {
            let cmp = mods
                .iter()
                .find_map(|m| parse_cmp(m))
                .ok_or_else(|| PtxError {
                    line,
                    message: format!("missing compare op in {}", p.opcode),
                })?;
            let bop = mods.iter().find_map(|m| match *m {
                "and" => Some(BoolOp::And),
                "or" => Some(BoolOp::Or),
                "xor" => Some(BoolOp::Xor),
                _ => None,
            });
            let sty = types.get(1).copied().unwrap_or(ty0);
            if base == "setp" {
                Kind::Setp(cmp, ty0, bop, m.ftz)
            } else {
                Kind::Set(cmp, ty0, sty, bop, m.ftz)
            }
        }
        "selp" => Kind::Selp(ty0),
        "slct" => Kind::Slct(ty0, types.get(1).copied().unwrap_or(PtxType::S32)),
        "cvt" => {
            if types.len() < 2 {
                // FP8 (its types are not `PtxType`s), or a type the emulator does not know: Unsupported
                // where it runs, the module still loads.
                return Ok(Some(Decoded::Kind(pmisc::cvt_fp8(&p.opcode, mods))));
            }
            let flags = (has("sat") as u8 * CVT_SAT)
                | (m.relu as u8 * CVT_RELU)
                | (has("satfinite") as u8 * CVT_SATFINITE)
                | (m.ftz as u8 * CVT_FTZ);
            Kind::Cvt(types[0], types[1], rnd, flags)
        }
        "cvta" => Kind::Cvta(has("to"), space, ty0),
        _ => return Ok(None),
    };
    Ok(Some(Decoded::Kind(kind)))
}

/// The memory: `ld` / `ldu`, `st`, `atom` / `red`; `None` for another family's opcode.
pub(super) fn decode_memory(o: &OpInfo) -> Result<Option<Decoded>, PtxError> {
    let OpInfo {
        p,
        line,
        base,
        mods,
        types,
        space,
        vecw,
        ty0,
        ..
    } = *o;
    let kind = match base {
        "ld" | "ldu" => {
            if base == "ld"
                && mods
                    .iter()
                    .any(|x| x.starts_with("global") && x.contains("nc"))
            {
                Kind::Ld(Space::Global, ty0, vecw)
            } else {
                Kind::Ld(space, ty0, vecw)
            }
        }
        "st" => Kind::St(space, ty0, vecw),
        "atom" | "red" => {
            let op = mods
                .iter()
                .find_map(|m| match *m {
                    "add" => Some(AtomOp::Add),
                    "min" => Some(AtomOp::Min),
                    "max" => Some(AtomOp::Max),
                    "inc" => Some(AtomOp::Inc),
                    "dec" => Some(AtomOp::Dec),
                    "cas" => Some(AtomOp::Cas),
                    "exch" => Some(AtomOp::Exch),
                    "and" => Some(AtomOp::And),
                    "or" => Some(AtomOp::Or),
                    "xor" => Some(AtomOp::Xor),
                    _ => None,
                })
                .ok_or_else(|| PtxError {
                    line,
                    message: format!("unknown atomic op {}", p.opcode),
                })?;
            let half = types.iter().any(|t| {
                matches!(
                    t,
                    PtxType::F16 | PtxType::F16x2 | PtxType::BF16 | PtxType::BF16x2
                )
            });
            // 16-bit float atomics: add, min, max (exch/cas are bit-wise and use .b16).
            let half_ok = !half || matches!(op, AtomOp::Add | AtomOp::Min | AtomOp::Max);
            if !half_ok || (vecw != 1 && !vector_atom_ok(space, op, ty0, vecw)) {
                Kind::Unsupported(p.opcode.clone())
            } else {
                Kind::Atom(space, op, ty0, base == "red", vecw)
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(Decoded::Kind(kind)))
}

/// The vector forms of `atom` / `red` (PTX ISA 8.1+, sm_90; "Parallel Synchronization and Communication
/// Instructions: atom"): global (or generic) memory only; `.add` on `.v2/.v4.f32`; `.add/.min/.max` on
/// `.v2/.v4/.v8` of `.f16/.bf16` and on `.v2/.v4` of `.f16x2/.bf16x2`.
fn vector_atom_ok(space: Space, op: AtomOp, ty: PtxType, vecw: u8) -> bool {
    let space_ok = matches!(space, Space::Global | Space::Generic);
    let form_ok = match ty {
        PtxType::F32 => op == AtomOp::Add && matches!(vecw, 2 | 4),
        PtxType::F16 | PtxType::BF16 => matches!(vecw, 2 | 4 | 8),
        PtxType::F16x2 | PtxType::BF16x2 => matches!(vecw, 2 | 4),
        _ => false,
    };
    let op_ok = matches!(op, AtomOp::Add | AtomOp::Min | AtomOp::Max);
    space_ok && form_ok && op_ok
}

/// The control: branches, calls, `exit`, `trap`, block and cluster barriers, `mapa`, fences; `None` for another family's opcode.
pub(super) fn decode_control(o: &OpInfo) -> Result<Option<Decoded>, PtxError> {
    let OpInfo { p, base, mods, .. } = *o;
    let has = |m: &str| mods.contains(&m);
    let kind = match base {
        "bra" | "brx" => {
            if base == "brx" {
                Kind::Unsupported(p.opcode.clone())
            } else {
                Kind::Bra
            }
        }
        "call" => Kind::Call,
        "ret" => Kind::Ret,
        "exit" => Kind::Exit,
        "trap" => Kind::Trap,
        "barrier" if has("cluster") => Kind::ClusterBar(has("arrive")),
        "mapa" => Kind::Mapa(!has("shared::cluster")),
        "bar" | "barrier" => {
            if has("warp") {
                Kind::BarWarpSync
            } else if has("arrive") {
                Kind::Bar(BarMode::Arrive)
            } else if has("red") {
                if has("popc") {
                    Kind::Bar(BarMode::RedPopc)
                } else if has("and") {
                    Kind::Bar(BarMode::RedAnd)
                } else {
                    Kind::Bar(BarMode::RedOr)
                }
            } else {
                Kind::Bar(BarMode::Sync)
            }
        }
        "fence" if has("proxy") && has("async") => Kind::FenceProxyAsync,
        "membar" => Kind::Fence,
        "fence" if !has("proxy") && !has("mbarrier_init") => Kind::Fence,
        "fence" | "prefetch" | "prefetchu" | "nanosleep" | "pmevent" | "griddepcontrol"
        | "discard" | "applypriority" | "createpolicy" => {
            if base == "createpolicy" {
                Kind::Mov(PtxType::B64)
            } else {
                Kind::Nop
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(Decoded::Kind(kind)))
}

/// The warp collectives: `shfl`, `vote`, `redux`, `activemask`, `match`, `mma`, `ldmatrix`; `None` for another family's opcode.
pub(super) fn decode_warp(o: &OpInfo) -> Result<Option<Decoded>, PtxError> {
    let OpInfo {
        base,
        p,
        line,
        mods,
        types,
        ty0,
        ..
    } = *o;
    let has = |m: &str| mods.contains(&m);
    let kind = match base {
        "shfl" => {
            let mode = if has("up") {
                ShflMode::Up
            } else if has("down") {
                ShflMode::Down
            } else if has("bfly") {
                ShflMode::Bfly
            } else {
                ShflMode::Idx
            };
            // Without .sync (deprecated, not valid for sm_70+): faults if executed.
            if has("sync") {
                Kind::Shfl(mode)
            } else {
                Kind::Unsupported(format!("{} (sm_70+ requires shfl.sync)", p.opcode))
            }
        }
        "vote" => {
            let mode = if has("all") {
                VoteMode::All
            } else if has("any") {
                VoteMode::Any
            } else if has("uni") {
                VoteMode::Uni
            } else {
                VoteMode::Ballot
            };
            if has("sync") {
                Kind::Vote(mode)
            } else {
                Kind::Unsupported(format!("{} (sm_70+ requires vote.sync)", p.opcode))
            }
        }
        "redux" => {
            let op = if has("add") {
                ReduxOp::Add
            } else if has("min") {
                ReduxOp::Min
            } else if has("max") {
                ReduxOp::Max
            } else if has("and") {
                ReduxOp::And
            } else if has("or") {
                ReduxOp::Or
            } else if has("xor") {
                ReduxOp::Xor
            } else {
                return perr(line, "redux.sync needs one of .add .min .max .and .or .xor");
            };
            if ty0.is_float() || !has("sync") {
                Kind::Unsupported(p.opcode.clone())
            } else {
                Kind::Redux(op, ty0)
            }
        }
        "activemask" => Kind::Activemask,
        "match" => Kind::Match(has("all"), ty0),
        "mma" => {
            let shape = mods
                .iter()
                .find(|m| m.starts_with('m'))
                .copied()
                .unwrap_or("");
            let ab = types.get(1).copied();
            if let Some(k) = sm90::mma_int_f64(shape, mods, types) {
                let sparse = mods.iter().any(|m| m.starts_with("sp"));
                return Ok(Some(Decoded::Kind(if sparse {
                    Kind::Unsupported(p.opcode.clone())
                } else {
                    Kind::Mma(k)
                })));
            }
            match (shape, ab) {
                ("m16n8k8", Some(PtxType::TF32)) => Kind::Mma(MmaKind::Tf32K8),
                ("m16n8k16", Some(PtxType::F16)) => Kind::Mma(MmaKind::F16K16),
                ("m16n8k16", Some(PtxType::BF16)) => Kind::Mma(MmaKind::Bf16K16),
                ("m16n8k8", Some(PtxType::F16)) => Kind::Mma(MmaKind::F16K8),
                ("m16n8k8", Some(PtxType::BF16)) => Kind::Mma(MmaKind::Bf16K8),
                _ => Kind::Unsupported(p.opcode.clone()),
            }
            .pipe(|k| {
                // f32 accumulators; f16 ones (`.f16.f16.f16.f16`, `.f32.f16.f16.f16`) with f16 inputs.
                let f16_acc = ab == Some(PtxType::F16)
                    && types
                        .first()
                        .is_some_and(|d| matches!(d, PtxType::F16 | PtxType::F32))
                    && types
                        .get(3)
                        .is_some_and(|c| matches!(c, PtxType::F16 | PtxType::F32));
                if !(types.first() == Some(&PtxType::F32) && types.get(3) != Some(&PtxType::F16)
                    || f16_acc)
                    || !has("row")
                    || !has("col")
                {
                    Kind::Unsupported(p.opcode.clone())
                } else {
                    k
                }
            })
        }
        "ldmatrix" => {
            let n = if has("x4") {
                4
            } else if has("x2") {
                2
            } else {
                1
            };
            if !has("m8n8") {
                Kind::Unsupported(p.opcode.clone())
            } else {
                Kind::Ldmatrix(n, has("trans"))
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(Decoded::Kind(kind)))
}

/// The asynchronous copies: `cp.async` and its bulk and tensor forms; `None` for another family's opcode.
pub(super) fn decode_copy(o: &OpInfo) -> Result<Option<Decoded>, PtxError> {
    let OpInfo {
        base,
        p,
        line,
        mods,
        ..
    } = *o;
    let has = |m: &str| mods.contains(&m);
    let kind = match base {
        "cp" => {
            if has("reduce") {
                // cp.reduce.async.bulk(.tensor): bulk copies whose writes are element-wise reductions.
                sm90::decode_bulk_reduce(&p.opcode, mods, o.types)
            } else if has("prefetch") {
                // cp.async.bulk.prefetch(.tensor) only warms the L2: nothing to do.
                Kind::Nop
            } else if has("async") && has("bulk") && (has("commit_group") || has("wait_group")) {
                // Bulk async-groups: every bulk copy completes when issued; the groups only matter to the
                // async-proxy checks (a TMA store's source stays held until its wait).
                Kind::BulkGroup(has("wait_group"))
            } else if has("async") && has("bulk") && mods.iter().any(|x| x.starts_with("tensor")) {
                let rank = mods
                    .iter()
                    .find_map(|m| m.strip_suffix('d').and_then(|d| d.parse::<u8>().ok()))
                    .filter(|r| (1..=5).contains(r));
                let first_space = mods
                    .iter()
                    .find(|m| m.starts_with("shared") || **m == "global")
                    .copied();
                let tiled = !mods.iter().any(|m| {
                    m.starts_with("im2col") || m.starts_with("gather") || m.starts_with("scatter")
                });
                match (rank, first_space) {
                    (Some(rank), Some(sp)) if tiled => Kind::CpAsyncBulkTensor {
                        rank,
                        load: sp.starts_with("shared"),
                        multicast: mods.iter().any(|m| m.starts_with("multicast")),
                    },
                    _ => Kind::Unsupported(p.opcode.clone()),
                }
            } else if has("async") && has("bulk") {
                let first = mods
                    .iter()
                    .find(|m| m.starts_with("shared") || **m == "global");
                match first {
                    // cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size: a bulk store.
                    Some(&"global") => Kind::Misc(MiscOp::BulkStore),
                    Some(_) if has("global") => Kind::CpAsyncBulk {
                        multicast: mods.iter().any(|m| m.starts_with("multicast")),
                    },
                    // cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes: shared memory
                    // to a cluster block's shared memory.
                    Some(&"shared::cluster")
                        if has("shared::cta") && has("mbarrier::complete_tx::bytes") =>
                    {
                        Kind::BulkCopyCluster
                    }
                    _ => Kind::Unsupported(p.opcode.clone()),
                }
            } else if has("async") && has("commit_group") {
                Kind::CpAsyncCommit
            } else if has("async") && (has("wait_group") || has("wait_all")) {
                Kind::CpAsyncWait
            } else if has("async") && mods.iter().any(|x| x.starts_with("mbarrier")) {
                // cp.async.mbarrier.arrive: the copies' data is written at issue, so the arrive-on happens
                // at once; without .noinc it also raised the pending count by one first (no net change).
                if has("noinc") {
                    Kind::Mbarrier(MbarOp::ArriveNoinc)
                } else {
                    Kind::Mbarrier(MbarOp::CpAsyncArrive)
                }
            } else if has("async") {
                let sz = p
                    .args
                    .get(2)
                    .and_then(|a| {
                        if let RawOp::Int(i) = a {
                            Some(*i as u32)
                        } else {
                            None
                        }
                    })
                    .unwrap_or(0);
                if !matches!(sz, 4 | 8 | 16) {
                    return perr(line, "cp.async copy size must be 4, 8 or 16");
                }
                Kind::CpAsync(sz)
            } else {
                Kind::Unsupported(p.opcode.clone())
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(Decoded::Kind(kind)))
}

/// The sm_90 and tensor cores: `elect`, `setmaxnreg`, `movmatrix`, `wmma`, `stmatrix`, `wgmma`, `mbarrier`; `None` for another family's opcode.
/// Textures and surfaces (`tex`, `tld4`, `txq`, `suld`, `sust`, `sured`, `suq`) and tensor-map edits.
pub(super) fn decode_texture(o: &OpInfo) -> Result<Option<Decoded>, PtxError> {
    let OpInfo {
        base,
        p,
        mods,
        types,
        ..
    } = *o;
    Ok(match base {
        "tex" | "tld4" | "txq" | "suld" | "sust" | "sured" | "suq" => Some(Decoded::Kind(
            super::tex::decode(&p.opcode, base, mods, types),
        )),
        "tensormap" => Some(Decoded::Kind(super::tmap::decode(&p.opcode, mods, o.space))),
        _ => None,
    })
}

pub(super) fn decode_sm90(o: &OpInfo) -> Result<Option<Decoded>, PtxError> {
    let OpInfo {
        base,
        p,
        line,
        mods,
        types,
        space,
        ..
    } = *o;
    let has = |m: &str| mods.contains(&m);
    let kind = match base {
        "elect" if has("sync") => Kind::Elect,
        "setmaxnreg" if has("inc") || has("dec") => Kind::Setmaxnreg(has("inc")),
        "movmatrix" if has("m8n8") && has("trans") && has("b16") => Kind::Movmatrix,
        "wmma" => sm90::decode_wmma(&p.opcode, mods, types, space),
        "stmatrix" => {
            let n = if has("x4") {
                4
            } else if has("x2") {
                2
            } else {
                1
            };
            if !has("m8n8") {
                Kind::Unsupported(p.opcode.clone())
            } else {
                Kind::Stmatrix(n, has("trans"))
            }
        }
        "wgmma" => sm90::decode_wgmma(
            &p.opcode,
            mods,
            types,
            matches!(p.args.get(1), Some(RawOp::Vec(_))),
        ),
        "mbarrier" => {
            let op = if has("init") {
                MbarOp::Init
            } else if has("arrive_drop") {
                if has("expect_tx") {
                    return Ok(Some(Decoded::Whole(pmisc::unsupported(&p.opcode, line))));
                }
                MbarOp::ArriveDrop
            } else if has("complete_tx") {
                MbarOp::CompleteTx
            } else if has("arrive") && has("expect_tx") {
                MbarOp::ArriveExpectTx
            } else if has("expect_tx") {
                MbarOp::ExpectTx
            } else if has("arrive") {
                MbarOp::Arrive
            } else if has("test_wait") {
                if has("parity") {
                    MbarOp::TestWaitParity
                } else {
                    MbarOp::TestWait
                }
            } else if has("try_wait") {
                if has("parity") {
                    MbarOp::TryWaitParity
                } else {
                    MbarOp::TryWait
                }
            } else if has("inval") {
                MbarOp::Inval
            } else {
                return Ok(Some(Decoded::Whole(Instr {
                    kind: Kind::Unsupported(p.opcode.clone()),
                    guard: None,
                    args: vec![],
                    line: line as u32,
                    is_cond_branch: false,
                    order: 0,
                })));
            };
            Kind::Mbarrier(op)
        }
        _ => return Ok(None),
    };
    Ok(Some(Decoded::Kind(kind)))
}
