//! The instruction decoder: an opcode and its modifiers to a `Kind`, operands to `Operand`s, and the
//! shape checks the interpreter relies on.

use super::*;

#[path = "decode_families.rs"]
mod families;
use families::*;

impl Parser {
    pub(super) fn decode(
        &self,
        p: &PendingInstr,
        labels: &HashMap<String, u32>,
    ) -> Result<Instr, PtxError> {
        let line = p.line;
        let parts: Vec<&str> = p.opcode.split('.').collect();
        let base = parts[0];
        let mods = &parts[1..];
        let mut types: Vec<PtxType> = mods.iter().filter_map(|m| PtxType::from_name(m)).collect();
        let has = |m: &str| mods.contains(&m);
        let b128 = types.contains(&PtxType::B128);
        let b128_mem = match b128_form(base, mods) {
            _ if !b128 => false,
            B128::Unsupported => {
                let what = format!("{} (128-bit `.b128` operands)", p.opcode);
                return Ok(pmisc::unsupported(&what, line));
            }
            B128::Memory => {
                // A 16-byte load or store is the `.v2.b64` one of the register pair.
                types = vec![PtxType::B64];
                true
            }
            B128::Pairs => false,
        };
        // `min/max{.NaN}.xorsign.abs` on f32 and f16/bf16(x2): each (half of a) pair through the f32 rule.
        let xorsign_ok = matches!(base, "min" | "max")
            && matches!(
                types[..],
                [PtxType::F32 | PtxType::F16 | PtxType::F16x2 | PtxType::BF16 | PtxType::BF16x2]
            )
            && has("abs");
        if (has("xorsign") && !xorsign_ok) || has("oob") {
            // `fma.oob` (0 for an out-of-bounds NaN operand) changes the result; not modelled, so it
            // faults instead of computing a plain fma.
            return Ok(pmisc::unsupported(&p.opcode, line));
        }
        let space = state_space(mods);
        let vecw = if has("v2") || b128_mem {
            2
        } else if has("v4") {
            4
        } else if has("v8") {
            8
        } else {
            1
        };
        let rnd = rounding(mods);
        let ty0 = types.first().copied().unwrap_or(PtxType::B32);
        let m = Mods {
            hi: has("hi"),
            wide: has("wide"),
            sat: has("sat") || has("satfinite"),
            clamp: has("clamp"),
            relu: has("relu"),
            nan: has("NaN"),
            dir: match rnd {
                Rnd::Rz => Dir::Zero,
                Rnd::Rm => Dir::Down,
                Rnd::Rp => Dir::Up,
                _ => Dir::Near,
            },
            ftz: has("ftz"),
            xorsign: has("xorsign"),
        };
        let o = OpInfo {
            p,
            line,
            base,
            mods,
            types: &types,
            space,
            vecw,
            rnd,
            ty0,
            m,
        };
        let kind = match decode_kind(&o)? {
            Decoded::Kind(k) => k,
            Decoded::Whole(i) => return Ok(i),
        };
        let mut args = match self.decode_operands(p, &kind, ty0, labels)? {
            Ok(a) => a,
            Err(i) => return Ok(i),
        };
        if b128 && !b128_operands(&kind, &args) {
            let what = format!("{} (128-bit operands other than registers)", p.opcode);
            return Ok(pmisc::unsupported(&what, line));
        }
        // `.L2::cache_hint`: the last operand is a cache policy (`createpolicy`'s), which the emulator,
        // without an L2, does not use; dropped so that no operand reads it as something else (a TMA load's
        // multicast mask, a `cp.async`'s source size).
        if p.opcode.contains(".L2::cache_hint")
            && matches!(args.last(), Some(Operand::Reg(_) | Operand::Imm(_)))
        {
            args.pop();
        }
        let guard = match &p.guard {
            None => None,
            Some((g, neg)) => match self.resolve_name(p.scope, g) {
                Some(Name::Reg(r, _)) => Some((r, *neg)),
                _ => return perr(line, format!("unknown guard predicate {}", g)),
            },
        };
        let kind = frame_params(kind, &args);
        // A call names a function, or (indirect) holds its address in a register.
        let kind = match kind {
            Kind::Call
                if !args
                    .iter()
                    .any(|a| matches!(a, Operand::Func(_) | Operand::Reg(_) | Operand::Imm(_))) =>
            {
                Kind::Unsupported(format!("{} (no call target)", p.opcode))
            }
            k => k,
        };
        let is_cond_branch = kind == Kind::Bra && guard.is_some();
        let min_args = min_args(&kind);
        if args.len() < min_args {
            return perr(
                line,
                format!(
                    "'{}' expects at least {} operands, got {}",
                    p.opcode,
                    min_args,
                    args.len()
                ),
            );
        }
        if let Err(msg) = operand_shapes(&kind, &args, &p.opcode) {
            return perr(line, msg);
        }
        if let Kind::Bra = kind {
            if !matches!(args.last(), Some(Operand::Label(_))) {
                return perr(line, "bra target must be a label of the same function");
            }
        }
        let order = memory_order(&kind, &p.opcode);
        Ok(Instr {
            kind,
            guard,
            args,
            line: line as u32,
            is_cond_branch,
            order,
        })
    }

    /// The operands of `p` for an instruction of `kind` (immediates read as the types it implies); an
    /// unknown name makes the whole instruction an unsupported one (`Err`).
    fn decode_operands(
        &self,
        p: &PendingInstr,
        kind: &Kind,
        ty0: PtxType,
        labels: &HashMap<String, u32>,
    ) -> Result<Result<Vec<Operand>, Instr>, PtxError> {
        let line = p.line;
        // operand type used to interpret immediates
        let imm_ty = match kind {
            Kind::Cvt(_, s, _, _) => *s,
            Kind::Set(_, _, s, _, _) => *s,
            Kind::Slct(d, _) => *d,
            Kind::Alu(AluOp::Shl | AluOp::Shr, _, _) => ty0,
            _ => ty0,
        };
        let mut args = Vec::with_capacity(p.args.len());
        for (i, a) in p.args.iter().enumerate() {
            // Some operands are 32-bit even for 64-bit instructions.
            let t = match kind {
                Kind::Alu(AluOp::Shl | AluOp::Shr | AluOp::Bfe, _, _) if i >= 2 => PtxType::U32,
                Kind::Alu(AluOp::Bfi, _, _) if i >= 3 => PtxType::U32,
                Kind::Slct(_, s) if i == 3 => *s,
                Kind::Shfl(_)
                | Kind::Vote(_)
                | Kind::Activemask
                | Kind::BarWarpSync
                | Kind::Elect
                | Kind::BulkGroup(_)
                | Kind::Mapa(_)
                | Kind::Setmaxnreg(_)
                | Kind::BulkReduce { .. }
                | Kind::BulkCopyCluster
                | Kind::Bar(_) => PtxType::U32,
                // Texture coordinates are read in their own type; surface coordinates are integers.
                Kind::Tex(op) if i >= 1 && !op.float_coords => PtxType::S32,
                Kind::Surf(_) | Kind::Txq(..) => PtxType::S32,
                // `ord` and 32-bit values are integers; a 64-bit value is read as its type says.
                Kind::TensormapReplace(..) | Kind::TensormapCopy => PtxType::U32,
                Kind::Wgmma(_) | Kind::CpAsyncBulkTensor { .. } | Kind::BulkReduceTensor { .. } => {
                    PtxType::S32
                }
                _ => imm_ty,
            };
            match self.operand(p, a, t, labels) {
                Ok(o) => args.push(o),
                // An unknown name (a special register, a constant) makes this one instruction unsupported,
                // not the module: it faults only if executed, naming what it did not know.
                Err(e) if e.message.starts_with("unknown name") => {
                    return Ok(Err(Instr {
                        kind: Kind::Unsupported(format!("{} ({})", p.opcode, e.message)),
                        guard: None,
                        args: vec![],
                        line: line as u32,
                        is_cond_branch: false,
                        order: 0,
                    }));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Ok(args))
    }
}

/// An opcode split at its dots, with the modifiers that several families read.
#[derive(Clone, Copy)]
struct OpInfo<'a> {
    p: &'a PendingInstr,
    line: usize,
    base: &'a str,
    mods: &'a [&'a str],
    types: &'a [PtxType],
    space: Space,
    vecw: u8,
    rnd: Rnd,
    ty0: PtxType,
    m: Mods,
}

/// What a family decoder makes of an opcode.
enum Decoded {
    /// The instruction's kind; its operands are decoded next.
    Kind(Kind),
    /// A whole instruction (one the emulator does not model; no operands).
    Whole(Instr),
}

/// An opcode's family decoders, tried in order (the order of the arms of one match: earlier arms with
/// guards, such as `st.async` before `st`, stay earlier); the smaller families of `ptx_misc.rs` last.
type Family = fn(&OpInfo) -> Result<Option<Decoded>, PtxError>;
const FAMILIES: [Family; 7] = [
    decode_texture,
    decode_regop,
    decode_memory,
    decode_control,
    decode_warp,
    decode_copy,
    decode_sm90,
];

/// The kind of the instruction `o` (or the whole instruction, for one the emulator does not model).
fn decode_kind(o: &OpInfo) -> Result<Decoded, PtxError> {
    for family in FAMILIES {
        if let Some(d) = family(o)? {
            return Ok(d);
        }
    }
    Ok(Decoded::Kind(pmisc::decode(
        &o.p.opcode,
        o.base,
        o.mods,
        o.types,
        o.space,
    )))
}

/// The state space an opcode names (`.global`, `.shared::cta`, ..), else generic.
fn state_space(mods: &[&str]) -> Space {
    mods.iter()
        .find_map(|m| match *m {
            "global" => Some(Space::Global),
            "shared" | "shared::cta" | "shared::cluster" => Some(Space::Shared),
            "local" => Some(Space::Local),
            "param" | "param::entry" | "param::func" => Some(Space::Param),
            "const" => Some(Space::Const),
            _ => None,
        })
        .unwrap_or(Space::Generic)
}

/// The rounding modifier of an opcode, if any.
fn rounding(mods: &[&str]) -> Rnd {
    mods.iter()
        .find_map(|m| match *m {
            "rn" => Some(Rnd::Rn),
            "rz" => Some(Rnd::Rz),
            "rm" => Some(Rnd::Rm),
            "rp" => Some(Rnd::Rp),
            "rni" => Some(Rnd::Rni),
            "rzi" => Some(Rnd::Rzi),
            "rmi" => Some(Rnd::Rmi),
            "rpi" => Some(Rnd::Rpi),
            "rna" => Some(Rnd::Rna),
            _ => None,
        })
        .unwrap_or(Rnd::None)
}

/// The fewest operands an instruction of `kind` has: the interpreter reads these by position.
/// Operand shapes some kinds need beyond their count: the integer and f64 `mma` forms read their fragments
/// by position (a register list of another length is malformed PTX, which ptxas rejects: a decode error
/// rather than a wrong result), and a vector atomic's value (and result) is a brace list of one register per
/// element.
fn operand_shapes(kind: &Kind, args: &[Operand], opcode: &str) -> Result<(), String> {
    if let Kind::Mma(k) = kind {
        if let Some(want) = sm90::mma_regs(*k) {
            let got: Vec<usize> = args.iter().take(4).map(|a| a.elements().len()).collect();
            if got != want {
                return Err(format!(
                    "'{opcode}' takes {want:?} registers in D, A, B, C, got {got:?}"
                ));
            }
        }
    }
    // `st.async`'s value: one register (or immediate), or a brace list of `.v2/.v4` elements.
    if let &Kind::AsyncStore { vecw, .. } = kind {
        let is_vec = matches!(args[1], Operand::Vec(_));
        if is_vec != (vecw > 1) || args[1].elements().len() != vecw as usize {
            return Err(format!(
                "'{opcode}' takes {vecw} value(s){}",
                if vecw > 1 { " in braces" } else { "" }
            ));
        }
    }
    if let &Kind::Atom(_, _, _, red, vw @ 2..) = kind {
        let vi = if red { 1 } else { 2 };
        let lens = [args[0].elements().len(), args[vi].elements().len()];
        let want = [if red { 1 } else { vw as usize }, vw as usize];
        if lens != want || !matches!(args[vi], Operand::Vec(_)) {
            return Err(format!(
                "'{opcode}' takes {vw} values in braces, got {lens:?}"
            ));
        }
    }
    Ok(())
}

/// How the emulator runs an instruction with a `.b128` type: `.b128` values live in register pairs
/// (`Parser::new_reg`).
enum B128 {
    /// `ld`/`st` (not vector): the `.v2.b64` load or store of the pair.
    Memory,
    /// `mov.b128` and `atom{.sem}{.scope}{.space}.{cas,exch}.b128` (sm_90), on register pairs.
    Pairs,
    /// Anything else faults as unsupported rather than compute with half of the value.
    Unsupported,
}

fn b128_form(base: &str, mods: &[&str]) -> B128 {
    let vector = mods.iter().any(|m| matches!(*m, "v2" | "v4" | "v8"));
    match base {
        "ld" | "st" if !vector => B128::Memory,
        "mov" => B128::Pairs,
        "atom" if mods.iter().any(|m| matches!(*m, "cas" | "exch")) => B128::Pairs,
        _ => B128::Unsupported,
    }
}

/// `.param` variables of device functions and call sites live in the thread's frame (local memory).
fn frame_params(kind: Kind, args: &[Operand]) -> Kind {
    let local =
        |o: Option<&Operand>| matches!(o, Some(Operand::Addr(AddrBase::Sym(SymRef::Local(_)), _)));
    match kind {
        Kind::Ld(Space::Param, t, v) if local(args.get(1)) => Kind::Ld(Space::Local, t, v),
        Kind::St(Space::Param, t, v) if local(args.first()) => Kind::St(Space::Local, t, v),
        k => k,
    }
}

/// The ordering bits of a load, store or atomic `opcode` (`ORDER_*`; 0 for other kinds).
fn memory_order(kind: &Kind, opcode: &str) -> u8 {
    if !matches!(kind, Kind::Ld(..) | Kind::St(..) | Kind::Atom(..)) {
        return 0;
    }
    let acq = opcode.contains(".acquire") || opcode.contains(".acq_rel");
    let rel = opcode.contains(".release") || opcode.contains(".acq_rel");
    // `.volatile` is `.relaxed.sys` for synchronization (PTX ISA, memory consistency model).
    let strong = acq || rel || opcode.contains(".relaxed") || opcode.contains(".volatile");
    (acq as u8 * ORDER_ACQUIRE) | (rel as u8 * ORDER_RELEASE) | (strong as u8 * ORDER_STRONG)
}

/// Whether the operands of a `.b128` instruction are register pairs where the value is 128 bits: a
/// `mov.b128` between a `.b128` register and two 64-bit ones (or another `.b128` register), an atomic's
/// destination and values (an immediate or a single 64-bit register would be a truncated value).
fn b128_operands(kind: &Kind, args: &[Operand]) -> bool {
    let pair = |o: &Operand| matches!(o, Operand::Vec(v) if v.len() == 2);
    match kind {
        Kind::Mov(_) => args.len() == 2 && args.iter().all(pair),
        Kind::Atom(..) => args.len() >= 3 && pair(&args[0]) && args[2..].iter().all(pair),
        _ => true,
    }
}

fn min_args(kind: &Kind) -> usize {
    // sanity checks on operand shapes for instructions that index args directly
    match kind {
        Kind::Mov(_) | Kind::Cvt(..) | Kind::Cvta(..) | Kind::Ld(..) | Kind::St(..) => 2,
        Kind::Alu(op, _, _) => match op {
            AluOp::Abs
            | AluOp::Neg
            | AluOp::Not
            | AluOp::Cnot
            | AluOp::Popc
            | AluOp::Clz
            | AluOp::Brev
            | AluOp::Bfind
            | AluOp::BfindShiftAmt
            | AluOp::Rcp
            | AluOp::Sqrt
            | AluOp::Rsqrt
            | AluOp::Ex2
            | AluOp::Lg2
            | AluOp::Sin
            | AluOp::Cos
            | AluOp::Tanh => 2,
            AluOp::TestpFinite
            | AluOp::TestpInfinite
            | AluOp::TestpNumber
            | AluOp::TestpNan
            | AluOp::TestpNormal
            | AluOp::TestpSubnormal => 2,
            AluOp::Mad
            | AluOp::Mad24
            | AluOp::Sad
            | AluOp::Fma
            | AluOp::Bfe
            | AluOp::Prmt
            | AluOp::ShfL
            | AluOp::ShfR
            | AluOp::Fns
            | AluOp::Dp4a(..)
            | AluOp::Dp2a(..)
            | AluOp::PrmtMode(_) => 4,
            AluOp::Bfi | AluOp::Lop3 => 5,
            _ => 3,
        },
        Kind::Setp(..) | Kind::Set(..) => 3,
        Kind::Selp(_) | Kind::Slct(..) => 4,
        Kind::Atom(_, op, _, red, _) => {
            let base = if *red { 2 } else { 3 };
            if *op == AtomOp::Cas {
                base + 1
            } else {
                base
            }
        }
        Kind::Bra => 1,
        Kind::Shfl(_) => 5,
        Kind::Vote(_) => 3,
        Kind::Redux(..) => 3,
        Kind::Activemask => 1,
        Kind::Match(..) => 3,
        Kind::Mma(_) => 4,
        Kind::Wmma(op) => {
            if op.mma {
                4
            } else {
                2
            }
        }
        Kind::Ldmatrix(..) => 2,
        Kind::CpAsync(_) => 3,
        Kind::BarWarpSync => 1,
        Kind::Misc(op) => op.min_args(),
        // `bar.sync;` without a barrier operand (found by tests/emu_fuzz.rs) must not reach the
        // interpreter, which reads the operands by position.
        Kind::Bar(m) => {
            if matches!(m, BarMode::RedPopc | BarMode::RedAnd | BarMode::RedOr) {
                2
            } else {
                1
            }
        }
        Kind::CpAsyncBulk { .. } | Kind::Mapa(_) | Kind::AsyncStore { .. } => 3,
        Kind::BulkReduce { cluster, .. } => 3 + *cluster as usize,
        Kind::BulkCopyCluster => 4,
        Kind::BulkReduceTensor { .. } => 2,
        Kind::Elect => 2,
        _ => 0,
    }
}

fn parse_cmp(m: &str) -> Option<Cmp> {
    Some(match m {
        "eq" => Cmp::Eq,
        "ne" => Cmp::Ne,
        "lt" => Cmp::Lt,
        "le" => Cmp::Le,
        "gt" => Cmp::Gt,
        "ge" => Cmp::Ge,
        "lo" => Cmp::Lo,
        "ls" => Cmp::Ls,
        "hi" => Cmp::Hi,
        "hs" => Cmp::Hs,
        "equ" => Cmp::Equ,
        "neu" => Cmp::Neu,
        "ltu" => Cmp::Ltu,
        "leu" => Cmp::Leu,
        "gtu" => Cmp::Gtu,
        "geu" => Cmp::Geu,
        "num" => Cmp::Num,
        "nan" => Cmp::Nan,
        _ => return None,
    })
}

trait Pipe: Sized {
    fn pipe<T>(self, f: impl FnOnce(Self) -> T) -> T {
        f(self)
    }
}
impl<T> Pipe for T {}
