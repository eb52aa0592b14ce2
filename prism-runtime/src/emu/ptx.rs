//! PTX front end: tokenizer, parser and pre-decoder into a compact instruction form.
//!
//! The parser accepts the PTX subset emitted by nvcc and by Prism's code generator. Every instruction is
//! decoded once into an [`Instr`] (resolved opcode enum, register indices, resolved symbols, label targets),
//! so the interpreter never looks at strings.

use std::collections::HashMap;
use std::fmt;

use super::limits::*;

/// A PTX parse or decode error with the 1-based PTX source line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxError {
    /// 1-based source line (0 when unknown).
    pub line: usize,
    /// Human readable description.
    pub message: String,
}

impl fmt::Display for PtxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PTX line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for PtxError {}

fn perr<T>(line: usize, msg: impl Into<String>) -> Result<T, PtxError> {
    Err(PtxError {
        line,
        message: msg.into(),
    })
}

/// A PTX fundamental type.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PtxType {
    Pred,
    B8,
    B16,
    B32,
    B64,
    B128,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F16x2,
    BF16,
    BF16x2,
    F32,
    F64,
    TF32,
}

impl PtxType {
    /// Parses a type name without the leading dot (`u32`, `f16x2`, ...).
    pub fn from_name(s: &str) -> Option<PtxType> {
        use PtxType::*;
        Some(match s {
            "pred" => Pred,
            "b8" => B8,
            "b16" => B16,
            "b32" => B32,
            "b64" => B64,
            "b128" => B128,
            "u8" => U8,
            "u16" => U16,
            "u32" => U32,
            "u64" => U64,
            "s8" => S8,
            "s16" => S16,
            "s32" => S32,
            "s64" => S64,
            "f16" => F16,
            "f16x2" => F16x2,
            "bf16" => BF16,
            "bf16x2" => BF16x2,
            "f32" => F32,
            "f64" => F64,
            "tf32" => TF32,
            _ => return None,
        })
    }
    /// Size in bytes (predicates count as 1).
    pub fn size(self) -> usize {
        use PtxType::*;
        match self {
            Pred | B8 | U8 | S8 => 1,
            B16 | U16 | S16 | F16 | BF16 => 2,
            B32 | U32 | S32 | F32 | F16x2 | BF16x2 | TF32 => 4,
            B64 | U64 | S64 | F64 => 8,
            B128 => 16,
        }
    }
    /// Size in bits.
    pub fn bits(self) -> u32 {
        self.size() as u32 * 8
    }
    /// True for signed integer types.
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            PtxType::S8 | PtxType::S16 | PtxType::S32 | PtxType::S64
        )
    }
    /// True for floating-point types (scalar or packed).
    pub fn is_float(self) -> bool {
        use PtxType::*;
        matches!(self, F16 | F16x2 | BF16 | BF16x2 | F32 | F64 | TF32)
    }
}

/// State spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    Generic,
    Global,
    Shared,
    Local,
    Param,
    Const,
}

/// Special registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sreg {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    Laneid,
    Warpid,
    Nwarpid,
    LanemaskEq,
    LanemaskLt,
    LanemaskLe,
    LanemaskGt,
    LanemaskGe,
    Clock,
    Clock64,
    Globaltimer,
    Smid,
    Nsmid,
    DynSmem,
    TotalSmem,
    /// `%cluster_ctaid.d`: the block's position in its cluster (clusters of one block: 0).
    ClusterCtaid(u8),
    /// `%cluster_nctaid.d`: cluster dimensions (1 until clusters are modelled).
    ClusterNctaid(u8),
    /// `%clusterid.d`: the cluster's position in the grid (= `%ctaid` with clusters of one block).
    Clusterid(u8),
    /// `%nclusterid.d`: clusters in the grid (= `%nctaid`).
    Nclusterid(u8),
    /// `%cluster_ctarank` (0) and `%cluster_nctarank` (1) with clusters of one block.
    ClusterCtarank,
    ClusterNctarank,
    /// `%reserved_smem_offset_{begin,end,cap,0,1}` (0..=4) and `%aggr_smem_size` (5): the block's reserved
    /// shared memory (`emu/exec_misc.rs` documents the layout).
    Reserved(u8),
    /// `%clock_hi`, `%globaltimer_hi`: the upper 32 bits of the counter.
    ClockHi,
    /// `%is_explicit_cluster`: 1 when the launch names a cluster shape.
    ExplicitCluster,
    Zero,
}

/// A symbol resolved at decode time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SymRef {
    /// Module `.global`/`.const` variable (index into `Module::globals`).
    Global(u32),
    /// Offset in the block's shared memory.
    Shared(u32),
    /// Offset in the thread's local memory (also used for `.func` / call-site `.param` variables).
    Local(u32),
    /// Offset in the kernel parameter buffer.
    KParam(u32),
    /// The dynamic shared memory base (its offset is fixed per module).
    DynShared,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AddrBase {
    None,
    Reg(u32),
    Sym(SymRef),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operand {
    Reg(u32),
    PredNot(u32),
    Imm(u64),
    Sreg(Sreg),
    Sym(SymRef),
    Addr(AddrBase, i64),
    Vec(Vec<Operand>),
    Sink,
    Label(u32),
    Func(u32),
    List(Vec<Operand>),
}

// The sm_70..sm_90a tensor-core instruction forms (wmma, wgmma): their decoded types and decoders.
#[path = "ptx_sm90.rs"]
mod sm90;
pub(crate) use sm90::{WgmmaOp, WgmmaShape, WmmaFrag, WmmaOp};
// Carry arithmetic, isspacep, getctarank, alloca, cvt.pack and the other smaller families.
#[path = "ptx_misc.rs"]
mod pmisc;
pub(crate) use pmisc::{IsSpace, MiscOp, SimdOp, REG_CARRY, REG_STACK};

impl Operand {
    /// The operands of a brace list `{a, b, ..}`, or this operand alone.
    pub(crate) fn elements(&self) -> Vec<Operand> {
        match self {
            Operand::Vec(v) => v.clone(),
            o => vec![o.clone()],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rnd {
    None,
    Rn,
    Rz,
    Rm,
    Rp,
    Rni,
    Rzi,
    Rmi,
    Rpi,
    Rna,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Lo,
    Ls,
    Hi,
    Hs,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoolOp {
    And,
    Or,
    Xor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AluOp {
    Add,
    Sub,
    Mul,
    Mad,
    Mul24,
    Mad24,
    Sad,
    Div,
    Rem,
    Abs,
    Neg,
    Min,
    Max,
    Fma,
    Rcp,
    Sqrt,
    Rsqrt,
    Ex2,
    Lg2,
    Sin,
    Cos,
    Tanh,
    And,
    Or,
    Xor,
    Not,
    Cnot,
    Shl,
    Shr,
    Popc,
    Clz,
    Brev,
    Bfe,
    /// `bmsk.{clamp,wrap}.b32 d, a, b`: a mask of `b` ones starting at bit `a`.
    Bmsk,
    Bfi,
    Bfind,
    /// `bfind.shiftamt`: the left shift that moves the most significant (non-sign) bit to the top.
    BfindShiftAmt,
    Copysign,
    Prmt,
    Lop3,
    ShfL,
    ShfR,
    TestpFinite,
    TestpInfinite,
    TestpNumber,
    TestpNan,
    TestpNormal,
    TestpSubnormal,
    /// `szext.{clamp,wrap}.{u32,s32}`, `fns.b32`, `dp4a`/`dp2a` (signedness of a and b), `prmt` in one of
    /// its special modes (index into `f4e b4e rc8 ecl ecr rc16`): `emu/exec_misc.rs`.
    Szext,
    Fns,
    Dp4a(bool, bool),
    Dp2a(bool, bool),
    PrmtMode(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Mods {
    pub hi: bool,
    pub wide: bool,
    pub sat: bool,
    pub clamp: bool,
    pub relu: bool,
    /// `min/max.NaN`: NaN operands propagate.
    pub nan: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtomOp {
    Add,
    Min,
    Max,
    Inc,
    Dec,
    Cas,
    Exch,
    And,
    Or,
    Xor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BarMode {
    Sync,
    Arrive,
    RedPopc,
    RedAnd,
    RedOr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReduxOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VoteMode {
    All,
    Any,
    Uni,
    Ballot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MmaKind {
    /// m16n8k8 f32 += tf32 * tf32
    Tf32K8,
    /// m16n8k16 f32 += f16 * f16
    F16K16,
    /// m16n8k16 f32 += bf16 * bf16
    Bf16K16,
    /// m16n8k8 f32 += f16 * f16
    F16K8,
    /// m16n8k8 f32 += bf16 * bf16
    Bf16K8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MbarOp {
    Init,
    Arrive,
    ArriveExpectTx,
    ExpectTx,
    TestWait,
    TestWaitParity,
    TryWait,
    TryWaitParity,
    Inval,
    /// `mbarrier.arrive_drop`: an arrive that also lowers the expected count of later phases.
    ArriveDrop,
    /// `mbarrier.complete_tx [a], n`: `n` bytes of the expected transactions completed.
    CompleteTx,
    /// `cp.async.mbarrier.arrive.noinc [a]`: an arrive when the thread's earlier `cp.async`s complete (at once
    /// here, as copies complete at issue).
    ArriveNoinc,
}

/// Decoded instruction kinds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Mov(PtxType),
    Alu(AluOp, PtxType, Mods),
    Setp(Cmp, PtxType, Option<BoolOp>),
    Set(Cmp, PtxType, PtxType, Option<BoolOp>),
    Selp(PtxType),
    Slct(PtxType, PtxType),
    Cvt(PtxType, PtxType, Rnd, bool),
    Cvta(bool, Space, PtxType),
    Ld(Space, PtxType, u8),
    St(Space, PtxType, u8),
    Atom(Space, AtomOp, PtxType, bool),
    Bra,
    Call,
    Ret,
    Exit,
    Trap,
    Bar(BarMode),
    BarWarpSync,
    Nop,
    Shfl(ShflMode),
    Vote(VoteMode),
    /// `redux.sync.{add,min,max,and,or,xor}`: a warp-wide integer reduction (sm_80+).
    Redux(ReduxOp, PtxType),
    Activemask,
    Match(bool, PtxType),
    Mma(MmaKind),
    Ldmatrix(u8, bool),
    CpAsync(u32),
    CpAsyncCommit,
    CpAsyncWait,
    Mbarrier(MbarOp),
    CpAsyncBulk,
    /// `wgmma.*` (sm_90a): warpgroup-collective tensor-core instructions.
    Wgmma(WgmmaOp),
    /// `cp.async.bulk.tensor.Nd` tile mode: a load global → shared (`load`, with mbarrier completion,
    /// optionally `.multicast::cluster`) or a store shared → global (bulk-group completion).
    CpAsyncBulkTensor {
        rank: u8,
        load: bool,
        multicast: bool,
    },
    /// `stmatrix.sync.aligned.m8n8.xN(.trans).shared.b16`
    Stmatrix(u8, bool),
    /// `movmatrix.sync.aligned.m8n8.trans.b16 d, a`: transposes an 8x8 matrix held in the warp's fragment.
    Movmatrix,
    /// `elect.sync d|p, membermask`: the lowest member lane is the leader.
    Elect,
    /// `wmma.load` / `wmma.store` / `wmma.mma` (warp-collective, opaque fragments).
    Wmma(WmmaOp),
    /// `fence.proxy.async(.shared::cta|...)`: orders this thread's generic-proxy accesses before later
    /// async-proxy ones.
    FenceProxyAsync,
    /// `cp.async.bulk.commit_group` (`false`) / `cp.async.bulk.wait_group(.read) N` (`true`).
    BulkGroup(bool),
    /// `barrier.cluster.arrive` (`true`) or `barrier.cluster.wait` (`false`).
    ClusterBar(bool),
    /// `mapa(.shared::cluster).{u32,u64} d, a, rank`: the address of the same variable in block `rank`
    /// of the cluster (`true`: the generic form).
    Mapa(bool),
    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 N` (`true` = inc): warpgroup-collective register reallocation.
    Setmaxnreg(bool),
    /// The smaller families (`emu/ptx_misc.rs` decodes them, `emu/exec_misc.rs` runs them).
    Misc(MiscOp),
    Unsupported(String),
}

/// A pre-decoded instruction.
#[derive(Debug, Clone)]
pub(crate) struct Instr {
    pub kind: Kind,
    pub guard: Option<(u32, bool)>,
    pub args: Vec<Operand>,
    pub line: u32,
    pub is_cond_branch: bool,
    /// Memory-order qualifiers of a load, store or atomic: [`ORDER_ACQUIRE`] | [`ORDER_RELEASE`].
    pub order: u8,
}

/// `.acquire` (or `.acq_rel`) on a load or atomic.
pub(crate) const ORDER_ACQUIRE: u8 = 1;
/// `.release` (or `.acq_rel`) on a store or atomic.
pub(crate) const ORDER_RELEASE: u8 = 2;
/// A strong (`.relaxed`, `.acquire`, `.release`) load or store: such accesses do not race with each other
/// (PTX ISA memory consistency model: morally strong operations).
pub(crate) const ORDER_STRONG: u8 = 4;

/// A `.param` declaration of an entry or function.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamDecl {
    /// Parameter name as written in the PTX.
    pub name: String,
    /// Element type of the parameter (for arrays, the element type).
    pub ty: PtxType,
    /// Total size in bytes.
    pub size: usize,
    /// Alignment in bytes.
    pub align: usize,
    /// Byte offset in the parameter buffer (entries) or in the thread's frame (functions).
    pub offset: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct Function {
    pub name: String,
    pub is_entry: bool,
    pub params: Vec<ParamDecl>,
    pub rets: Vec<ParamDecl>,
    pub start: u32,
    pub end: u32,
    pub param_buf_size: usize,
    pub defined: bool,
    pub reqntid: Option<[u32; 3]>,
    pub maxntid: Option<[u32; 3]>,
    /// `.maxnreg N`: the registers per thread at entry (where `setmaxnreg` starts from).
    pub maxnreg: Option<u32>,
    /// `.reqnctapercluster X, Y, Z`: the cluster shape the kernel requires.
    pub cluster: Option<[u32; 3]>,
    /// Static shared memory of this function (module-level plus its own `.shared` variables).
    pub smem: u32,
}

#[derive(Debug, Clone)]
pub(crate) struct GlobalVar {
    pub name: String,
    pub size: usize,
    #[allow(dead_code)]
    pub align: usize,
    pub init: Vec<u8>,
}

/// A parsed and pre-decoded PTX module.
#[derive(Debug, Clone)]
pub struct Module {
    pub(crate) id: u64,
    pub(crate) funcs: Vec<Function>,
    pub(crate) code: Vec<Instr>,
    pub(crate) globals: Vec<GlobalVar>,
    pub(crate) nregs: u32,
    pub(crate) dyn_align: u32,
    pub(crate) local_size: u32,
    #[allow(dead_code)]
    pub(crate) reg_names: Vec<String>,
}

static NEXT_MODULE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Module {
    /// Parses PTX source text.
    pub fn parse(src: &str) -> Result<Module, PtxError> {
        let toks = tokenize(src)?;
        let mut p = Parser::new(toks);
        p.module()?;
        p.finish()
    }
    /// Names of the `.entry` kernels in the module.
    pub fn entries(&self) -> Vec<String> {
        self.funcs
            .iter()
            .filter(|f| f.is_entry)
            .map(|f| f.name.clone())
            .collect()
    }
    /// Parameter list of an entry, `None` if there is no such entry.
    pub fn entry_params(&self, entry: &str) -> Option<Vec<ParamDecl>> {
        self.funcs
            .iter()
            .find(|f| f.is_entry && f.name == entry)
            .map(|f| f.params.clone())
    }
    /// Static shared memory of an entry, in bytes (`None` if there is no such entry).
    pub fn static_shared_bytes(&self, entry: &str) -> Option<u32> {
        self.funcs
            .iter()
            .find(|f| f.is_entry && f.name == entry)
            .map(|f| f.smem)
    }
    /// Offset of dynamic shared memory (`.extern .shared`) for an entry.
    pub(crate) fn dyn_offset(&self, fi: usize) -> u32 {
        align_up(self.funcs[fi].smem, self.dyn_align)
    }
    /// Number of decoded instructions.
    pub fn instruction_count(&self) -> usize {
        self.code.len()
    }
    /// The PTX source line of decoded instruction `idx`.
    pub fn instruction_line(&self, idx: usize) -> Option<usize> {
        self.code.get(idx).map(|i| i.line as usize)
    }
}

// ------------------------------------------------------------------------------------------------
// Tokenizer

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Num(String),
    Str(String),
    P(char),
}

#[derive(Debug, Clone)]
struct Token {
    t: Tok,
    line: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$' || c == '%' || c == '.'
}
fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%' || c == '.' || c == ':'
}

fn tokenize(src: &str) -> Result<Vec<Token>, PtxError> {
    let b: Vec<char> = src.chars().collect();
    let mut i = 0;
    let mut line = 1;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && i + 1 < b.len() && b[i + 1] == '/' {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && i + 1 < b.len() && b[i + 1] == '*' {
            i += 2;
            while i + 1 < b.len() && !(b[i] == '*' && b[i + 1] == '/') {
                if b[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 2;
        } else if c == '"' {
            let start = i + 1;
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
            let s: String = b[start..i.min(b.len())].iter().collect();
            out.push(Token {
                t: Tok::Str(s),
                line,
            });
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == '.') {
                // exponent sign
                if (b[i] == 'e' || b[i] == 'E')
                    && i + 1 < b.len()
                    && (b[i + 1] == '-' || b[i + 1] == '+')
                    && !b[start..i]
                        .iter()
                        .any(|c| *c == 'x' || *c == 'X' || *c == 'f' || *c == 'd')
                {
                    i += 2;
                    continue;
                }
                i += 1;
            }
            out.push(Token {
                t: Tok::Num(b[start..i].iter().collect()),
                line,
            });
        } else if is_ident_start(c) {
            let start = i;
            i += 1;
            while i < b.len() && is_ident_char(b[i]) {
                // `::` is part of names like shared::cta; a single ':' ends a label
                if b[i] == ':' {
                    if i + 1 < b.len() && b[i + 1] == ':' {
                        i += 2;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            out.push(Token {
                t: Tok::Ident(b[start..i].iter().collect()),
                line,
            });
        } else {
            out.push(Token { t: Tok::P(c), line });
            i += 1;
        }
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------------------
// Parser

#[derive(Debug, Clone)]
enum Name {
    Reg(u32, #[allow(dead_code)] PtxType),
    Sym(SymRef),
}

struct PendingInstr {
    opcode: String,
    guard: Option<(String, bool)>,
    args: Vec<RawOp>,
    line: usize,
    scope: usize,
}

#[derive(Debug, Clone)]
enum RawOp {
    Name(String),
    NotName(String),
    Int(i64),
    F32Bits(u32),
    F64Bits(u64),
    Float(f64),
    Addr(Option<String>, i64),
    Vec(Vec<RawOp>),
    List(Vec<RawOp>),
    Sink,
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    funcs: Vec<Function>,
    globals: Vec<GlobalVar>,
    module_names: HashMap<String, Name>,
    scopes: Vec<HashMap<String, Name>>,
    // all scopes ever created (so pending instructions can resolve names after labels are known)
    scope_store: Vec<HashMap<String, Name>>,
    scope_parent: Vec<Option<usize>>,
    // Bumped whenever the scope chain changes; instructions parsed while it stays the same share one
    // snapshot (without this, parsing copies the chain once per instruction: quadratic in function size).
    scope_gen: u64,
    snapshot: Option<(u64, usize)>,
    nregs: u32,
    reg_names: Vec<String>,
    smem: u32,
    smem_fn: u32,
    smem_fn_max: u32,
    dyn_smem: Option<(String, u32)>,
    local: u32,
    code: Vec<Instr>,
    pending: Vec<(usize, PendingInstr)>,
}

fn align_up(x: u32, a: u32) -> u32 {
    let a = a.max(1);
    x.div_ceil(a) * a
}

impl Parser {
    fn new(toks: Vec<Token>) -> Parser {
        Parser {
            toks,
            pos: 0,
            funcs: Vec::new(),
            globals: Vec::new(),
            module_names: HashMap::new(),
            scopes: Vec::new(),
            scope_store: Vec::new(),
            scope_parent: Vec::new(),
            scope_gen: 0,
            snapshot: None,
            // Registers 0 and 1 are hidden per-thread state: the carry flag (`add.cc`) and the `alloca` stack.
            nregs: 2,
            reg_names: vec!["%cc.cf".into(), "%stack".into()],
            smem: 0,
            smem_fn: 0,
            smem_fn_max: 0,
            dyn_smem: None,
            local: 0,
            code: Vec::new(),
            pending: Vec::new(),
        }
    }
    fn line(&self) -> usize {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map(|t| t.line)
            .unwrap_or(0)
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.t)
    }
    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k).map(|t| &t.t)
    }
    fn next(&mut self) -> Result<Tok, PtxError> {
        match self.toks.get(self.pos) {
            Some(t) => {
                self.pos += 1;
                Ok(t.t.clone())
            }
            None => perr(self.line(), "unexpected end of input"),
        }
    }
    fn is_p(&self, c: char) -> bool {
        self.peek() == Some(&Tok::P(c))
    }
    fn eat_p(&mut self, c: char) -> bool {
        if self.is_p(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect_p(&mut self, c: char) -> Result<(), PtxError> {
        if self.eat_p(c) {
            Ok(())
        } else {
            perr(
                self.line(),
                format!("expected '{}', found {:?}", c, self.peek()),
            )
        }
    }
    fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(x)) if x == s)
    }
    fn ident(&mut self) -> Result<String, PtxError> {
        match self.next()? {
            Tok::Ident(s) => Ok(s),
            t => perr(self.line(), format!("expected identifier, found {:?}", t)),
        }
    }
    fn number(&mut self) -> Result<i64, PtxError> {
        let neg = self.eat_p('-');
        match self.next()? {
            Tok::Num(s) => {
                let v = parse_int(&s).ok_or_else(|| PtxError {
                    line: self.line(),
                    message: format!("bad integer '{}'", s),
                })?;
                Ok(if neg { -v } else { v })
            }
            t => perr(self.line(), format!("expected number, found {:?}", t)),
        }
    }
    fn skip_line(&mut self, line: usize) {
        while let Some(t) = self.toks.get(self.pos) {
            if t.line != line {
                break;
            }
            self.pos += 1;
        }
    }
    fn skip_to_semi(&mut self) {
        while let Some(t) = self.peek().cloned() {
            self.pos += 1;
            if t == Tok::P(';') {
                break;
            }
        }
    }
    fn skip_braces(&mut self) -> Result<(), PtxError> {
        // assumes current token is '{'
        let mut depth = 0;
        loop {
            let t = self.next()?;
            if t == Tok::P('{') {
                depth += 1;
            } else if t == Tok::P('}') {
                depth -= 1;
                if depth == 0 {
                    return Ok(());
                }
            }
        }
    }

    fn declare(&mut self, name: String, n: Name) {
        self.scope_gen += 1;
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name, n);
        } else {
            self.module_names.insert(name, n);
        }
    }

    fn module(&mut self) -> Result<(), PtxError> {
        while let Some(t) = self.peek().cloned() {
            let line = self.line();
            match t {
                Tok::Ident(s) => match s.as_str() {
                    ".version" | ".target" | ".address_size" | ".file" | ".loc" => {
                        self.skip_line(line)
                    }
                    ".section" => {
                        self.pos += 1;
                        while !self.is_p('{') && self.peek().is_some() {
                            self.pos += 1;
                        }
                        self.skip_braces()?;
                    }
                    ".pragma" => self.skip_to_semi(),
                    _ => self.module_decl()?,
                },
                Tok::P(';') => self.pos += 1,
                // `@@dwarf` debug lines (old toolchains with -g): ignored.
                Tok::P('@') => self.skip_line(line),
                other => {
                    return perr(
                        line,
                        format!("unexpected token at module level: {:?}", other),
                    )
                }
            }
        }
        Ok(())
    }

    fn module_decl(&mut self) -> Result<(), PtxError> {
        let line = self.line();
        let mut is_extern = false;
        loop {
            if self.is_ident(".visible") || self.is_ident(".weak") || self.is_ident(".common") {
                self.pos += 1;
            } else if self.is_ident(".extern") {
                is_extern = true;
                self.pos += 1;
            } else {
                break;
            }
        }
        let kw = self.ident()?;
        match kw.as_str() {
            ".entry" => self.function(true, is_extern),
            ".func" => self.function(false, is_extern),
            // Texture/sampler/surface references: no texture unit here; an instruction that uses one faults.
            ".global" | ".const" if matches!(self.peek(), Some(Tok::Ident(t)) if matches!(t.as_str(), ".texref" | ".samplerref" | ".surfref")) =>
            {
                self.skip_to_semi();
                Ok(())
            }
            ".global" | ".const" => self.global_var(line),
            ".shared" => self.shared_var(is_extern),
            ".local" => {
                let (name, size, align, _) = self.var_decl()?;
                let off = self.place_local(align, size)?;
                self.declare(name, Name::Sym(SymRef::Local(off)));
                Ok(())
            }
            // Legacy texture declarations and `.alias f, g;` (not modelled): skipped, so a use is an unknown name.
            ".tex" | ".surf" | ".samplerref" | ".texref" | ".surfref" | ".alias" => {
                self.skip_to_semi();
                Ok(())
            }
            _ => perr(line, format!("unexpected module-level directive '{}'", kw)),
        }
    }

    /// Parses `[.align N] .type name[dims]` and returns (name, size, align, elem type). Consumes an
    /// initializer if present (returned separately by `global_var`).
    fn var_decl(&mut self) -> Result<(String, usize, usize, PtxType), PtxError> {
        let mut align = 0usize;
        let mut ty = None;
        let mut vec = 1usize;
        loop {
            if self.is_ident(".align") {
                self.pos += 1;
                let a = self.number()?;
                if !(0..=MAX_ALIGN as i64).contains(&a) {
                    return perr(
                        self.line(),
                        format!(".align {a} is outside 0..={MAX_ALIGN}"),
                    );
                }
                align = a as usize;
            } else if self.is_ident(".v2") {
                self.pos += 1;
                vec = 2;
            } else if self.is_ident(".v4") {
                self.pos += 1;
                vec = 4;
            } else if let Some(Tok::Ident(s)) = self.peek() {
                if let Some(name) = s.strip_prefix('.') {
                    if let Some(t) = PtxType::from_name(name) {
                        ty = Some(t);
                    }
                    // other qualifiers (.ptr, .attribute...) ignored
                    self.pos += 1;
                } else {
                    break;
                }
            } else {
                break;
            }
        }
        let ty = ty.ok_or_else(|| PtxError {
            line: self.line(),
            message: "missing type in declaration".into(),
        })?;
        let name = self.ident()?;
        let mut count = vec;
        let mut unsized_ = false;
        while self.eat_p('[') {
            if self.eat_p(']') {
                unsized_ = true;
                continue;
            }
            let n = self.number()?;
            self.expect_p(']')?;
            // Checked before anything is allocated: `x[99999999999]` is an error, not an allocation.
            count = match u64::try_from(n).ok().and_then(|n| (count as u64).checked_mul(n)) {
                Some(c) if c.saturating_mul(ty.size() as u64) <= MAX_VARIABLE_BYTES => c as usize,
                _ => {
                    return perr(
                        self.line(),
                        format!("array {name}: dimension {n} makes it larger than {MAX_VARIABLE_BYTES} bytes (the emulator's limit for one variable) or is negative"),
                    )
                }
            };
        }
        let size = if unsized_ { 0 } else { count * ty.size() };
        if align == 0 {
            align = ty.size() * vec;
        }
        Ok((name, size, align, ty))
    }

    fn global_var(&mut self, _line: usize) -> Result<(), PtxError> {
        let (name, mut size, align, ty) = self.var_decl()?;
        let mut init = Vec::new();
        if self.eat_p('=') {
            let mut vals = Vec::new();
            self.init_list(&mut vals)?;
            for v in vals {
                match v {
                    RawOp::Int(i) => init.extend_from_slice(&(i as u64).to_le_bytes()[..ty.size()]),
                    RawOp::F32Bits(b) => init.extend_from_slice(&b.to_le_bytes()),
                    RawOp::F64Bits(b) => init.extend_from_slice(&b.to_le_bytes()),
                    RawOp::Float(f) => {
                        if ty == PtxType::F64 {
                            init.extend_from_slice(&f.to_le_bytes())
                        } else {
                            init.extend_from_slice(&(f as f32).to_le_bytes())
                        }
                    }
                    _ => {
                        // address initializers (generic(sym)) are not supported: zero
                        init.extend_from_slice(&vec![0u8; ty.size()])
                    }
                }
            }
            if size == 0 {
                size = init.len();
            }
        }
        self.skip_to_semi();
        let total: u64 = self.globals.iter().map(|g| g.size as u64).sum::<u64>() + size as u64;
        if total > MAX_GLOBAL_VAR_BYTES || init.len() as u64 > MAX_GLOBAL_VAR_BYTES {
            return perr(
                self.line(),
                format!("module-scope .global/.const variables take more than {MAX_GLOBAL_VAR_BYTES} bytes (the emulator's limit) with {name}"),
            );
        }
        let idx = self.globals.len() as u32;
        self.globals.push(GlobalVar {
            name: name.clone(),
            size: size.max(1),
            align: align.max(1),
            init,
        });
        self.declare(name, Name::Sym(SymRef::Global(idx)));
        Ok(())
    }

    fn init_list(&mut self, out: &mut Vec<RawOp>) -> Result<(), PtxError> {
        if self.eat_p('{') {
            loop {
                if self.eat_p('}') {
                    break;
                }
                self.init_list(out)?;
                self.eat_p(',');
            }
            Ok(())
        } else {
            let op = self.raw_operand()?;
            out.push(op);
            Ok(())
        }
    }

    fn shared_var(&mut self, is_extern: bool) -> Result<(), PtxError> {
        let (name, size, align, _) = self.var_decl()?;
        self.skip_to_semi();
        if is_extern || size == 0 {
            self.dyn_smem = Some((name.clone(), align as u32));
            self.declare(name, Name::Sym(SymRef::DynShared));
        } else if self.scopes.is_empty() {
            let start = self.smem.max(self.smem_fn_max);
            let (off, end) = self.place(
                start,
                align,
                size,
                MAX_SHARED_DECL_BYTES,
                "static shared memory",
            )?;
            self.smem = end;
            self.declare(name, Name::Sym(SymRef::Shared(off)));
        } else {
            let (off, end) = self.place(
                self.smem_fn,
                align,
                size,
                MAX_SHARED_DECL_BYTES,
                "static shared memory",
            )?;
            self.smem_fn = end;
            self.declare(name, Name::Sym(SymRef::Shared(off)));
        }
        Ok(())
    }

    fn param_list(&mut self, is_entry: bool) -> Result<(Vec<ParamDecl>, usize), PtxError> {
        let mut out = Vec::new();
        let mut off = 0usize;
        self.expect_p('(')?;
        loop {
            if self.eat_p(')') {
                break;
            }
            let kw = self.ident()?;
            if kw != ".param" && kw != ".reg" {
                return perr(self.line(), format!("expected .param, found {}", kw));
            }
            let is_reg = kw == ".reg";
            let (name, size, align, ty) = self.var_decl()?;
            let size = size.max(1);
            if is_reg {
                // register parameter of a .func: treat like a register
                let r = self.new_reg(&name, ty);
                let _ = r;
                out.push(ParamDecl {
                    name,
                    ty,
                    size,
                    align,
                    offset: usize::MAX,
                });
            } else {
                let o = if is_entry {
                    let (o, end) = self.place(
                        off as u32,
                        align,
                        size,
                        MAX_PARAM_BYTES,
                        "an entry's parameters",
                    )?;
                    off = end as usize;
                    self.declare(name.clone(), Name::Sym(SymRef::KParam(o)));
                    o as usize
                } else {
                    let o = self.place_local(align, size)?;
                    self.declare(name.clone(), Name::Sym(SymRef::Local(o)));
                    o as usize
                };
                out.push(ParamDecl {
                    name,
                    ty,
                    size,
                    align,
                    offset: o,
                });
            }
            self.eat_p(',');
        }
        Ok((out, off))
    }

    /// Offset and new end of a `size`-byte variable placed at `cur` with `align`, or an error when the end
    /// passes `limit` (checked before anything is allocated for it).
    fn place(
        &self,
        cur: u32,
        align: usize,
        size: usize,
        limit: u64,
        what: &str,
    ) -> Result<(u32, u32), PtxError> {
        let off = align_up(cur, align as u32) as u64;
        let end = off + size as u64;
        if end > limit {
            return perr(
                self.line(),
                format!("{what} would take {end} bytes, more than the emulator's limit of {limit} bytes"),
            );
        }
        Ok((off as u32, end as u32))
    }

    /// Places a per-thread local variable (or device-function parameter); returns its offset.
    fn place_local(&mut self, align: usize, size: usize) -> Result<u32, PtxError> {
        let (off, end) = self.place(
            self.local,
            align,
            size,
            MAX_LOCAL_BYTES,
            "local memory per thread",
        )?;
        self.local = end;
        Ok(off)
    }

    fn new_reg(&mut self, name: &str, ty: PtxType) -> u32 {
        let r = self.nregs;
        self.nregs += 1;
        self.reg_names.push(name.to_string());
        self.declare(name.to_string(), Name::Reg(r, ty));
        r
    }

    fn function(&mut self, is_entry: bool, is_extern: bool) -> Result<(), PtxError> {
        self.scopes.push(HashMap::new());
        self.scope_gen += 1;
        let mut rets = Vec::new();
        if !is_entry && self.is_p('(') {
            rets = self.param_list(false)?.0;
        }
        let name = self.ident()?;
        let mut params = Vec::new();
        let mut pbuf = 0;
        if self.is_p('(') {
            let (p, s) = self.param_list(is_entry)?;
            params = p;
            pbuf = s;
        }
        let mut reqntid = None;
        let mut maxntid = None;
        let mut maxnreg = None;
        let mut cluster = None;
        // performance directives
        while let Some(Tok::Ident(s)) = self.peek().cloned() {
            if !s.starts_with('.') {
                break;
            }
            self.pos += 1;
            if s == ".noreturn" {
                continue;
            }
            let mut dims = Vec::new();
            while let Some(Tok::Num(_)) = self.peek() {
                dims.push(self.number()? as u32);
                if !self.eat_p(',') {
                    break;
                }
            }
            let mut d = [1u32; 3];
            for (i, v) in dims.iter().take(3).enumerate() {
                d[i] = *v;
            }
            if s == ".reqntid" {
                reqntid = Some(d);
            } else if s == ".maxntid" {
                maxntid = Some(d);
            } else if s == ".maxnreg" {
                maxnreg = dims.first().copied();
            } else if s == ".reqnctapercluster" {
                cluster = Some(d);
            }
        }
        // Register the function name at module level (for calls, possibly before definition).
        let existing = self.funcs.iter().position(|f| f.name == name);
        let fidx = match existing {
            Some(i) => i,
            None => {
                self.funcs.push(Function {
                    name: name.clone(),
                    is_entry,
                    params: params.clone(),
                    rets: rets.clone(),
                    start: 0,
                    end: 0,
                    param_buf_size: pbuf,
                    defined: false,
                    reqntid,
                    maxntid,
                    maxnreg,
                    cluster,
                    smem: 0,
                });
                self.funcs.len() - 1
            }
        };
        if self.eat_p(';') || is_extern && !self.is_p('{') {
            self.scopes.pop();
            self.scope_gen += 1;
            return Ok(());
        }
        {
            let f = &mut self.funcs[fidx];
            if f.defined {
                return perr(self.line(), format!("function {} defined twice", name));
            }
            f.params = params;
            f.rets = rets;
            f.param_buf_size = pbuf;
            f.reqntid = reqntid;
            f.maxntid = maxntid;
            f.defined = true;
            f.start = self.code.len() as u32;
        }
        self.smem_fn = self.smem;
        self.expect_p('{')?;
        self.body()?;
        self.funcs[fidx].end = self.code.len() as u32;
        // implicit return at the end of a body
        let line = self
            .toks
            .get(self.pos.saturating_sub(1))
            .map(|t| t.line)
            .unwrap_or(0);
        self.code.push(Instr {
            kind: Kind::Ret,
            guard: None,
            args: vec![],
            line: line as u32,
            is_cond_branch: false,
            order: 0,
        });
        self.funcs[fidx].end = self.code.len() as u32;
        self.funcs[fidx].smem = self.smem_fn;
        self.smem_fn_max = self.smem_fn_max.max(self.smem_fn);
        self.scopes.pop();
        self.scope_gen += 1;
        Ok(())
    }

    fn body(&mut self) -> Result<(), PtxError> {
        // Labels of this function
        let mut labels: HashMap<String, u32> = HashMap::new();
        let fn_start_pending = self.pending.len();
        self.push_scope();
        let mut depth = 1;
        loop {
            let line = self.line();
            let t = match self.peek().cloned() {
                Some(t) => t,
                None => return perr(line, "unterminated function body"),
            };
            match t {
                Tok::P('{') => {
                    self.pos += 1;
                    depth += 1;
                    self.push_scope();
                }
                Tok::P('}') => {
                    self.pos += 1;
                    self.scopes.pop();
                    self.scope_gen += 1;
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Tok::P(';') => self.pos += 1,
                Tok::Ident(s)
                    if matches!(self.peek_at(1), Some(Tok::P(':'))) && !s.starts_with('.') =>
                {
                    self.pos += 2;
                    labels.insert(s, self.code.len() as u32);
                }
                Tok::Ident(s) if s.starts_with('.') => self.body_directive(&s, line)?,
                _ => self.instruction()?,
            }
        }
        // resolve pending instructions (labels now known)
        let pend: Vec<(usize, PendingInstr)> = self.pending.drain(fn_start_pending..).collect();
        for (idx, p) in pend {
            let ins = self.decode(&p, &labels)?;
            self.code[idx] = ins;
        }
        Ok(())
    }

    fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
        self.scope_gen += 1;
    }

    fn body_directive(&mut self, s: &str, line: usize) -> Result<(), PtxError> {
        match s {
            ".loc" | ".file" => {
                self.skip_line(line);
            }
            ".pragma" => self.skip_to_semi(),
            ".reg" => {
                self.pos += 1;
                let mut ty = None;
                let mut vec = 1;
                while let Some(Tok::Ident(x)) = self.peek().cloned() {
                    if !x.starts_with('.') {
                        break;
                    }
                    self.pos += 1;
                    if x == ".v2" {
                        vec = 2;
                    } else if x == ".v4" {
                        vec = 4;
                    } else if let Some(t) = PtxType::from_name(&x[1..]) {
                        ty = Some(t);
                    }
                }
                let _ = vec;
                let ty = ty.ok_or_else(|| PtxError {
                    line,
                    message: "missing register type".into(),
                })?;
                loop {
                    let name = self.ident()?;
                    if self.eat_p('<') {
                        let n = self.number()?;
                        self.expect_p('>')?;
                        // Checked before the loop: `%r<99999999>` is an error, not minutes of allocation.
                        if n > (MAX_REGISTERS - self.nregs.min(MAX_REGISTERS)) as i64 {
                            return perr(
                                line,
                                format!("{name}<{n}> takes the module past {MAX_REGISTERS} registers (the emulator's limit)"),
                            );
                        }
                        for i in 0..n {
                            self.new_reg(&format!("{}{}", name, i), ty);
                        }
                    } else if self.nregs >= MAX_REGISTERS {
                        return perr(line, format!("{name} takes the module past {MAX_REGISTERS} registers (the emulator's limit)"));
                    } else {
                        self.new_reg(&name, ty);
                    }
                    if !self.eat_p(',') {
                        break;
                    }
                }
                self.skip_to_semi();
            }
            ".local" | ".param" => {
                self.pos += 1;
                let (name, size, align, _) = self.var_decl()?;
                self.skip_to_semi();
                let off = self.place_local(align, size.max(1))?;
                self.declare(name, Name::Sym(SymRef::Local(off)));
            }
            ".shared" => {
                self.pos += 1;
                self.shared_var(false)?;
            }
            ".extern" => {
                self.pos += 1;
                let kw = self.ident()?;
                if kw == ".shared" {
                    self.shared_var(true)?;
                } else {
                    self.skip_to_semi();
                }
            }
            ".global" | ".const" => {
                self.pos += 1;
                self.global_var(line)?;
            }
            _ => {
                // unknown directive inside a body: skip the statement
                self.skip_to_semi();
            }
        }
        Ok(())
    }

    fn raw_operand(&mut self) -> Result<RawOp, PtxError> {
        let line = self.line();
        if self.eat_p('[') {
            let mut base = None;
            let mut off = 0i64;
            let mut first = true;
            loop {
                if self.eat_p(']') {
                    break;
                }
                // `[tensorMap, {c0, ..}]` (cp.async.bulk.tensor): the address and its coordinate vector.
                if !first && self.is_p(',') {
                    self.pos += 1;
                    let coords = self.raw_operand()?;
                    if !self.eat_p(']') {
                        return perr(line, "expected ']' after tensor coordinates");
                    }
                    return Ok(RawOp::List(vec![RawOp::Addr(base, off), coords]));
                }
                let neg = if first {
                    false
                } else if self.eat_p('+') {
                    self.eat_p('-')
                } else if self.eat_p('-') {
                    true
                } else {
                    return perr(line, "bad address expression");
                };
                first = false;
                match self.peek().cloned() {
                    Some(Tok::Ident(s)) => {
                        self.pos += 1;
                        base = Some(s);
                    }
                    Some(Tok::Num(_)) | Some(Tok::P('-')) => {
                        let v = self.number()?;
                        off += if neg { -v } else { v };
                    }
                    t => return perr(line, format!("bad address operand {:?}", t)),
                }
            }
            return Ok(RawOp::Addr(base, off));
        }
        if self.eat_p('{') {
            let mut v = Vec::new();
            loop {
                if self.eat_p('}') {
                    break;
                }
                v.push(self.raw_operand()?);
                self.eat_p(',');
            }
            return Ok(RawOp::Vec(v));
        }
        if self.eat_p('(') {
            let mut v = Vec::new();
            loop {
                if self.eat_p(')') {
                    break;
                }
                v.push(self.raw_operand()?);
                self.eat_p(',');
            }
            return Ok(RawOp::List(v));
        }
        if self.eat_p('!') {
            let n = self.ident()?;
            return Ok(RawOp::NotName(n));
        }
        let neg = self.eat_p('-');
        match self.next()? {
            Tok::Ident(s) => {
                if s == "_" {
                    return Ok(RawOp::Sink);
                }
                // symbol+offset as an operand (e.g. mov.u64 %rd, sym+4) is rare: support `sym+N`
                if self.is_p('+') {
                    if let Some(Tok::Num(_)) = self.peek_at(1) {
                        self.pos += 1;
                        let v = self.number()?;
                        return Ok(RawOp::Addr(Some(format!("&{}", s)), v));
                    }
                }
                Ok(RawOp::Name(s))
            }
            Tok::Num(s) => {
                let l = s.to_ascii_lowercase();
                if (l.starts_with("0f")) && l.len() == 10 {
                    let b = u32::from_str_radix(&l[2..], 16).map_err(|_| PtxError {
                        line,
                        message: format!("bad float {}", s),
                    })?;
                    let b = if neg { b ^ 0x8000_0000 } else { b };
                    Ok(RawOp::F32Bits(b))
                } else if l.starts_with("0d") && l.len() == 18 {
                    let b = u64::from_str_radix(&l[2..], 16).map_err(|_| PtxError {
                        line,
                        message: format!("bad double {}", s),
                    })?;
                    let b = if neg { b ^ 0x8000_0000_0000_0000 } else { b };
                    Ok(RawOp::F64Bits(b))
                } else if let Some(v) = parse_int(&s) {
                    Ok(RawOp::Int(if neg { v.wrapping_neg() } else { v }))
                } else if let Ok(f) = s.parse::<f64>() {
                    Ok(RawOp::Float(if neg { -f } else { f }))
                } else {
                    perr(line, format!("bad number '{}'", s))
                }
            }
            t => perr(line, format!("unexpected operand token {:?}", t)),
        }
    }

    fn instruction(&mut self) -> Result<(), PtxError> {
        let line = self.line();
        let mut guard = None;
        if self.eat_p('@') {
            let neg = self.eat_p('!');
            let g = self.ident()?;
            guard = Some((g, neg));
        }
        let opcode = self.ident()?;
        let mut args = Vec::new();
        // `call` has a special shape: call(.uni) (ret), func, (args);
        loop {
            if self.eat_p(';') {
                break;
            }
            if self.peek().is_none() {
                return perr(line, "missing ';'");
            }
            let op = self.raw_operand()?;
            // setp with two destinations: p|q
            if self.eat_p('|') {
                let q = self.raw_operand()?;
                args.push(op);
                args.push(q);
            } else {
                args.push(op);
            }
            self.eat_p(',');
        }
        let idx = self.code.len();
        self.code.push(Instr {
            kind: Kind::Nop,
            guard: None,
            args: vec![],
            line: line as u32,
            is_cond_branch: false,
            order: 0,
        });
        // Snapshot the current scope chain for name resolution after the body is parsed (once per change of
        // the chain, not once per instruction).
        let scope = match self.snapshot {
            Some((gen, scope)) if gen == self.scope_gen => scope,
            _ => {
                let mut merged = HashMap::new();
                for s in self.scopes.iter() {
                    for (k, v) in s.iter() {
                        merged.insert(k.clone(), v.clone());
                    }
                }
                self.scope_store.push(merged);
                self.scope_parent.push(None);
                let scope = self.scope_store.len() - 1;
                self.snapshot = Some((self.scope_gen, scope));
                scope
            }
        };
        self.pending.push((
            idx,
            PendingInstr {
                opcode,
                guard,
                args,
                line,
                scope,
            },
        ));
        Ok(())
    }

    fn resolve_name(&self, scope: usize, name: &str) -> Option<Name> {
        if let Some(n) = self.scope_store[scope].get(name) {
            return Some(n.clone());
        }
        self.module_names.get(name).cloned()
    }

    fn finish(mut self) -> Result<Module, PtxError> {
        // Dynamic shared memory is placed after all static shared memory.
        let dyn_align = self.dyn_smem.as_ref().map(|d| d.1).unwrap_or(16).max(16);
        for f in self.funcs.iter_mut() {
            f.smem = f.smem.max(self.smem);
        }
        // recursion check
        let nf = self.funcs.len();
        let mut calls: Vec<Vec<usize>> = vec![Vec::new(); nf];
        for (fi, f) in self.funcs.iter().enumerate() {
            for ins in &self.code[f.start as usize..f.end as usize] {
                if ins.kind == Kind::Call {
                    for a in &ins.args {
                        if let Operand::Func(c) = a {
                            calls[fi].push(*c as usize);
                        }
                    }
                }
            }
        }
        for start in 0..nf {
            let mut stack = calls[start].clone();
            let mut seen = vec![false; nf];
            while let Some(c) = stack.pop() {
                if c == start {
                    return perr(
                        0,
                        format!(
                            "recursive function {} is not supported by the emulator",
                            self.funcs[start].name
                        ),
                    );
                }
                if !seen[c] {
                    seen[c] = true;
                    stack.extend(calls[c].iter().copied());
                }
            }
        }
        for f in &self.funcs {
            if !f.defined && f.is_entry {
                return perr(0, format!("entry {} declared but not defined", f.name));
            }
        }
        Ok(Module {
            id: NEXT_MODULE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            funcs: self.funcs,
            code: self.code,
            globals: self.globals,
            nregs: self.nregs,
            dyn_align,
            local_size: self.local,
            reg_names: self.reg_names,
        })
    }

    // --------------------------------------------------------------------------------------------
    // Decoder

    fn operand(
        &self,
        p: &PendingInstr,
        r: &RawOp,
        ty: PtxType,
        labels: &HashMap<String, u32>,
    ) -> Result<Operand, PtxError> {
        let line = p.line;
        Ok(match r {
            RawOp::Sink => Operand::Sink,
            RawOp::Int(i) => Operand::Imm(imm_int(*i, ty)),
            RawOp::F32Bits(b) => Operand::Imm(if ty == PtxType::F64 {
                (f32::from_bits(*b) as f64).to_bits()
            } else {
                *b as u64
            }),
            RawOp::F64Bits(b) => Operand::Imm(if ty == PtxType::F64 {
                *b
            } else {
                (f64::from_bits(*b) as f32).to_bits() as u64
            }),
            RawOp::Float(f) => Operand::Imm(if ty == PtxType::F64 {
                f.to_bits()
            } else {
                (*f as f32).to_bits() as u64
            }),
            RawOp::NotName(n) => match self.resolve_name(p.scope, n) {
                Some(Name::Reg(r, _)) => Operand::PredNot(r),
                _ => return perr(line, format!("unknown predicate {}", n)),
            },
            RawOp::Name(n) => {
                if let Some(s) = special_reg(n) {
                    return Ok(Operand::Sreg(s));
                }
                match self.resolve_name(p.scope, n) {
                    Some(Name::Reg(r, _)) => Operand::Reg(r),
                    Some(Name::Sym(s)) => Operand::Sym(s),
                    None => {
                        if let Some(l) = labels.get(n) {
                            Operand::Label(*l)
                        } else if let Some(f) = self.funcs.iter().position(|f| &f.name == n) {
                            Operand::Func(f as u32)
                        } else if n.starts_with("%envreg") || n.starts_with("%pm") {
                            Operand::Sreg(Sreg::Zero)
                        } else if n == "WARP_SZ" {
                            // The PTX predefined constant nvcc emits for `warpSize`.
                            Operand::Imm(32)
                        } else {
                            return perr(line, format!("unknown name '{}'", n));
                        }
                    }
                }
            }
            RawOp::Addr(base, off) => {
                let b = match base {
                    None => AddrBase::None,
                    Some(n) => {
                        let n2 = n.strip_prefix('&').unwrap_or(n);
                        match self.resolve_name(p.scope, n2) {
                            Some(Name::Reg(r, _)) => AddrBase::Reg(r),
                            Some(Name::Sym(s)) => AddrBase::Sym(s),
                            None => return perr(line, format!("unknown name '{}' in address", n2)),
                        }
                    }
                };
                Operand::Addr(b, *off)
            }
            RawOp::Vec(v) => Operand::Vec(
                v.iter()
                    .map(|x| self.operand(p, x, ty, labels))
                    .collect::<Result<_, _>>()?,
            ),
            RawOp::List(v) => Operand::List(
                v.iter()
                    .map(|x| self.operand(p, x, ty, labels))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }

    fn decode(&self, p: &PendingInstr, labels: &HashMap<String, u32>) -> Result<Instr, PtxError> {
        let line = p.line;
        let parts: Vec<&str> = p.opcode.split('.').collect();
        let base = parts[0];
        let mods = &parts[1..];
        let types: Vec<PtxType> = mods.iter().filter_map(|m| PtxType::from_name(m)).collect();
        let has = |m: &str| mods.contains(&m);
        let space = mods
            .iter()
            .find_map(|m| match *m {
                "global" => Some(Space::Global),
                "shared" | "shared::cta" | "shared::cluster" => Some(Space::Shared),
                "local" => Some(Space::Local),
                "param" | "param::entry" | "param::func" => Some(Space::Param),
                "const" => Some(Space::Const),
                _ => None,
            })
            .unwrap_or(Space::Generic);
        let vecw = if has("v2") {
            2
        } else if has("v4") {
            4
        } else if has("v8") {
            8
        } else {
            1
        };
        let rnd = mods
            .iter()
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
            .unwrap_or(Rnd::None);
        let ty0 = types.first().copied().unwrap_or(PtxType::B32);
        let m = Mods {
            hi: has("hi"),
            wide: has("wide"),
            sat: has("sat") || has("satfinite"),
            clamp: has("clamp"),
            relu: has("relu"),
            nan: has("NaN"),
        };
        let alu = |op: AluOp| Kind::Alu(op, ty0, m);
        let kind = match base {
            // st.async / red.async (remote shared memory with mbarrier completion), st.bulk: not modelled.
            "st" | "red" if has("async") || has("bulk") => Kind::Unsupported(p.opcode.clone()),
            "add" | "sub" | "mad" if has("cc") => pmisc::carry(base, true, m.hi, ty0),
            "addc" | "subc" | "madc" => pmisc::carry(base, has("cc"), m.hi, ty0),
            "cvt" if has("pack") => pmisc::cvt_pack(&p.opcode, &types),
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
                    Kind::Setp(cmp, ty0, bop)
                } else if matches!(sty, PtxType::F16x2 | PtxType::BF16x2) {
                    // Two 16-bit results per register: not modelled.
                    Kind::Unsupported(p.opcode.clone())
                } else {
                    Kind::Set(cmp, ty0, sty, bop)
                }
            }
            "selp" => Kind::Selp(ty0),
            "slct" => Kind::Slct(ty0, types.get(1).copied().unwrap_or(PtxType::S32)),
            "cvt" => {
                if types.len() < 2 {
                    return perr(line, format!("cvt needs two types: {}", p.opcode));
                }
                Kind::Cvt(types[0], types[1], rnd, m.sat || m.relu)
            }
            "cvta" => Kind::Cvta(has("to"), space, ty0),
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
                if vecw != 1 || (half && !matches!(op, AtomOp::Add | AtomOp::Min | AtomOp::Max)) {
                    Kind::Unsupported(p.opcode.clone())
                } else {
                    Kind::Atom(space, op, ty0, base == "red")
                }
            }
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
            "membar" | "fence" | "prefetch" | "prefetchu" | "nanosleep" | "pmevent"
            | "griddepcontrol" | "discard" | "applypriority" | "createpolicy" => {
                if base == "createpolicy" {
                    Kind::Mov(PtxType::B64)
                } else {
                    Kind::Nop
                }
            }
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
                    if !(types.first() == Some(&PtxType::F32)
                        && types.get(3) != Some(&PtxType::F16)
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
            "cp" => {
                if has("reduce") {
                    // cp.reduce.async.bulk(.tensor): reductions into global memory, not modelled.
                    Kind::Unsupported(p.opcode.clone())
                } else if has("prefetch") {
                    // cp.async.bulk.prefetch(.tensor) only warms the L2: nothing to do.
                    Kind::Nop
                } else if has("async") && has("bulk") && (has("commit_group") || has("wait_group"))
                {
                    // Bulk async-groups: every bulk copy completes when issued; the groups only matter to the
                    // async-proxy checks (a TMA store's source stays held until its wait).
                    Kind::BulkGroup(has("wait_group"))
                } else if has("async")
                    && has("bulk")
                    && mods.iter().any(|x| x.starts_with("tensor"))
                {
                    let rank = mods
                        .iter()
                        .find_map(|m| m.strip_suffix('d').and_then(|d| d.parse::<u8>().ok()))
                        .filter(|r| (1..=5).contains(r));
                    let first_space = mods
                        .iter()
                        .find(|m| m.starts_with("shared") || **m == "global")
                        .copied();
                    let tiled = !mods.iter().any(|m| {
                        m.starts_with("im2col")
                            || m.starts_with("gather")
                            || m.starts_with("scatter")
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
                        Some(_) if has("global") => Kind::CpAsyncBulk,
                        _ => Kind::Unsupported(p.opcode.clone()),
                    }
                } else if has("async") && has("commit_group") {
                    Kind::CpAsyncCommit
                } else if has("async") && (has("wait_group") || has("wait_all")) {
                    Kind::CpAsyncWait
                } else if has("async") && mods.iter().any(|x| x.starts_with("mbarrier")) {
                    // cp.async.mbarrier.arrive: the copies complete at issue, so the arrive-on happens at once;
                    // without .noinc it also raised the pending count by one first (no net change).
                    if has("noinc") {
                        Kind::Mbarrier(MbarOp::ArriveNoinc)
                    } else {
                        Kind::Nop
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
            "elect" if has("sync") => Kind::Elect,
            "setmaxnreg" if has("inc") || has("dec") => Kind::Setmaxnreg(has("inc")),
            "movmatrix" if has("m8n8") && has("trans") && has("b16") => Kind::Movmatrix,
            "wmma" => sm90::decode_wmma(&p.opcode, mods, &types, space),
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
                &types,
                matches!(p.args.get(1), Some(RawOp::Vec(_))),
            ),
            "mbarrier" => {
                let op = if has("init") {
                    MbarOp::Init
                } else if has("arrive_drop") {
                    if has("expect_tx") {
                        return Ok(pmisc::unsupported(&p.opcode, line));
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
                    return Ok(Instr {
                        kind: Kind::Unsupported(p.opcode.clone()),
                        guard: None,
                        args: vec![],
                        line: line as u32,
                        is_cond_branch: false,
                        order: 0,
                    });
                };
                Kind::Mbarrier(op)
            }
            _ => pmisc::decode(&p.opcode, base, mods, &types, space),
        };
        // operand type used to interpret immediates
        let imm_ty = match &kind {
            Kind::Cvt(_, s, _, _) => *s,
            Kind::Set(_, _, s, _) => *s,
            Kind::Slct(d, _) => *d,
            Kind::Alu(AluOp::Shl | AluOp::Shr, _, _) => ty0,
            _ => ty0,
        };
        let mut args = Vec::with_capacity(p.args.len());
        for (i, a) in p.args.iter().enumerate() {
            // Some operands are 32-bit even for 64-bit instructions.
            let t = match &kind {
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
                | Kind::Bar(_) => PtxType::U32,
                Kind::Wgmma(_) | Kind::CpAsyncBulkTensor { .. } => PtxType::S32,
                _ => imm_ty,
            };
            match self.operand(p, a, t, labels) {
                Ok(o) => args.push(o),
                // An unknown name (a special register, a constant) makes this one instruction unsupported,
                // not the module: it faults only if executed, naming what it did not know.
                Err(e) if e.message.starts_with("unknown name") => {
                    return Ok(Instr {
                        kind: Kind::Unsupported(format!("{} ({})", p.opcode, e.message)),
                        guard: None,
                        args: vec![],
                        line: line as u32,
                        is_cond_branch: false,
                        order: 0,
                    });
                }
                Err(e) => return Err(e),
            }
        }
        let guard = match &p.guard {
            None => None,
            Some((g, neg)) => match self.resolve_name(p.scope, g) {
                Some(Name::Reg(r, _)) => Some((r, *neg)),
                _ => return perr(line, format!("unknown guard predicate {}", g)),
            },
        };
        // `.param` variables of device functions and call sites live in the thread's frame (local memory)
        let kind = match kind {
            Kind::Ld(Space::Param, t, v)
                if matches!(
                    args.get(1),
                    Some(Operand::Addr(AddrBase::Sym(SymRef::Local(_)), _))
                ) =>
            {
                Kind::Ld(Space::Local, t, v)
            }
            Kind::St(Space::Param, t, v)
                if matches!(
                    args.first(),
                    Some(Operand::Addr(AddrBase::Sym(SymRef::Local(_)), _))
                ) =>
            {
                Kind::St(Space::Local, t, v)
            }
            k => k,
        };
        // An indirect call (through a register, with a .callprototype): not modelled.
        let kind = match kind {
            Kind::Call if !args.iter().any(|a| matches!(a, Operand::Func(_))) => {
                Kind::Unsupported(format!("{} (indirect call)", p.opcode))
            }
            k => k,
        };
        let is_cond_branch = kind == Kind::Bra && guard.is_some();
        // sanity checks on operand shapes for instructions that index args directly
        let min_args = match &kind {
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
            Kind::Atom(_, op, _, red) => {
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
            Kind::CpAsyncBulk | Kind::Mapa(_) => 3,
            Kind::Elect => 2,
            _ => 0,
        };
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
        if let Kind::Bra = kind {
            if !matches!(args.last(), Some(Operand::Label(_))) {
                return perr(line, "bra target must be a label of the same function");
            }
        }
        let order = if matches!(kind, Kind::Ld(..) | Kind::St(..) | Kind::Atom(..)) {
            let p = &p.opcode;
            let acq = p.contains(".acquire") || p.contains(".acq_rel");
            let rel = p.contains(".release") || p.contains(".acq_rel");
            let strong = acq || rel || p.contains(".relaxed");
            (acq as u8 * ORDER_ACQUIRE)
                | (rel as u8 * ORDER_RELEASE)
                | (strong as u8 * ORDER_STRONG)
        } else {
            0
        };
        Ok(Instr {
            kind,
            guard,
            args,
            line: line as u32,
            is_cond_branch,
            order,
        })
    }
}

trait Pipe: Sized {
    fn pipe<T>(self, f: impl FnOnce(Self) -> T) -> T {
        f(self)
    }
}
impl<T> Pipe for T {}

fn imm_int(i: i64, ty: PtxType) -> u64 {
    match ty {
        PtxType::F32 => (i as f32).to_bits() as u64,
        PtxType::F64 => (i as f64).to_bits(),
        _ => i as u64,
    }
}

fn parse_int(s: &str) -> Option<i64> {
    let (s, unsigned) = match s.strip_suffix('U').or_else(|| s.strip_suffix('u')) {
        Some(x) => (x, true),
        None => (s, false),
    };
    let _ = unsigned;
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok().map(|v| v as i64)
    } else if let Some(b) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok().map(|v| v as i64)
    } else if s.len() > 1 && s.starts_with('0') && s.chars().all(|c| c.is_ascii_digit()) {
        u64::from_str_radix(&s[1..], 8).ok().map(|v| v as i64)
    } else {
        s.parse::<u64>().ok().map(|v| v as i64)
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

fn special_reg(n: &str) -> Option<Sreg> {
    let dim = |s: &str| match s {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((a, b)) = n.split_once('.') {
        let d = dim(b)?;
        return Some(match a {
            "%tid" => Sreg::Tid(d),
            "%ntid" => Sreg::Ntid(d),
            "%ctaid" => Sreg::Ctaid(d),
            "%nctaid" => Sreg::Nctaid(d),
            "%cluster_ctaid" => Sreg::ClusterCtaid(d),
            "%cluster_nctaid" => Sreg::ClusterNctaid(d),
            "%clusterid" => Sreg::Clusterid(d),
            "%nclusterid" => Sreg::Nclusterid(d),
            _ => return None,
        });
    }
    Some(match n {
        "%laneid" => Sreg::Laneid,
        "%warpid" => Sreg::Warpid,
        "%nwarpid" => Sreg::Nwarpid,
        "%lanemask_eq" => Sreg::LanemaskEq,
        "%lanemask_lt" => Sreg::LanemaskLt,
        "%lanemask_le" => Sreg::LanemaskLe,
        "%lanemask_gt" => Sreg::LanemaskGt,
        "%lanemask_ge" => Sreg::LanemaskGe,
        "%clock" => Sreg::Clock,
        "%clock64" => Sreg::Clock64,
        "%globaltimer" | "%globaltimer_lo" => Sreg::Globaltimer,
        "%clock_hi" | "%globaltimer_hi" => Sreg::ClockHi,
        "%reserved_smem_offset_begin" => Sreg::Reserved(0),
        "%reserved_smem_offset_end" => Sreg::Reserved(1),
        "%reserved_smem_offset_cap" => Sreg::Reserved(2),
        "%reserved_smem_offset_0" => Sreg::Reserved(3),
        "%reserved_smem_offset_1" => Sreg::Reserved(4),
        "%aggr_smem_size" => Sreg::Reserved(5),
        "%smid" => Sreg::Smid,
        "%nsmid" => Sreg::Nsmid,
        "%dynamic_smem_size" => Sreg::DynSmem,
        "%total_smem_size" => Sreg::TotalSmem,
        "%cluster_ctarank" => Sreg::ClusterCtarank,
        "%cluster_nctarank" => Sreg::ClusterNctarank,
        "%is_explicit_cluster" => Sreg::ExplicitCluster,
        // Driver-defined registers the CUDA runtime leaves zero outside graphs and profilers: `%envreg0..31`,
        // the performance-monitor counters `%pm0..7` / `%pm0_64..7_64` (not counting here), the graph handle.
        "%gridid" | "%current_graph_exec" => Sreg::Zero,
        _ if driver_defined_zero(n) => Sreg::Zero,
        _ => return None,
    })
}

/// `%envreg0..31`, `%pm0..7`, `%pm0_64..7_64`.
fn driver_defined_zero(n: &str) -> bool {
    let idx = |s: &str, max: u32| s.parse::<u32>().is_ok_and(|i| i <= max);
    if let Some(i) = n.strip_prefix("%envreg") {
        return idx(i, 31);
    }
    match n.strip_prefix("%pm") {
        Some(i) => idx(i.strip_suffix("_64").unwrap_or(i), 7),
        None => false,
    }
}
