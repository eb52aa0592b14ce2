//! PTX front end: tokenizer, parser and pre-decoder into a compact instruction form.
//!
//! The parser accepts the PTX subset emitted by nvcc and by Prism's code generator. Every instruction is
//! decoded once into an [`Instr`] (resolved opcode enum, register indices, resolved symbols, label targets),
//! so the interpreter never looks at strings.
//!
//! This file holds the instruction model (`Instr`, `Kind`, `Operand`, `Module`) and the parser's state; the
//! parts in `ptx/` add `impl Parser` blocks: `lex.rs`, `module.rs` (directives and functions), `decls.rs`,
//! `instr.rs`, `operand.rs` and `decode.rs` (with the per-family decoders of `decode_families.rs`).

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
    /// `%envreg0..31`, driver-defined: `%envreg1` (high half) and `%envreg2` (low half) hold the grid
    /// workspace of a cooperative launch (cooperative groups' `get_grid_workspace`), the others 0.
    Envreg(u8),
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

impl Operand {
    /// Calls `f` on this operand and every operand nested in it (vectors, lists).
    pub(crate) fn visit(&self, f: &mut impl FnMut(&Operand)) {
        f(self);
        if let Operand::Vec(v) | Operand::List(v) = self {
            for o in v {
                o.visit(f);
            }
        }
    }
}

// Texture and surface instructions in unified mode: their decoded types and decoder.
#[path = "ptx_tex.rs"]
pub(crate) mod tex;
pub(crate) use tex::{SurfOob, SurfOp, TexOp, TexQuery};
// Tensor-map edits in device memory (sm_90a).
#[path = "ptx_tmap.rs"]
pub(crate) mod tmap;
pub(crate) use tmap::TmField;
// The sm_70..sm_90a tensor-core instruction forms (wmma, wgmma): their decoded types and decoders.
#[path = "ptx_sm90.rs"]
mod sm90;
pub(crate) use sm90::{WgElem, WgmmaOp, WgmmaShape, WmmaFrag, WmmaOp};
// Carry arithmetic, isspacep, getctarank, alloca, cvt.pack and the other smaller families.
#[path = "ptx_misc.rs"]
mod pmisc;
pub(crate) use pmisc::{Fp8Cvt, IsSpace, MiscOp, SimdOp, VideoOp, REG_CARRY, REG_STACK};
// The parser's parts (`ptx/`): `impl Parser` blocks and free functions over the types below.
#[path = "ptx/scope.rs"]
mod scope;

#[path = "ptx/decls.rs"]
mod decls;
#[path = "ptx/instr.rs"]
mod instr;
#[path = "ptx/module.rs"]
mod module;
#[path = "ptx/operand.rs"]
mod operand;
use operand::*;
#[path = "ptx/decode.rs"]
mod decode;
#[path = "ptx/liveness.rs"]
mod liveness;

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
    /// Float arithmetic's rounding direction (`.rz`, `.rm`, `.rp`; `.rn` and none are `Near`).
    pub dir: Dir,
    /// `.ftz` (f32, and f64 `rcp/rsqrt.approx.ftz`): subnormal inputs and results become zeros of the
    /// same sign.
    pub ftz: bool,
    /// `min/max.xorsign.abs.f32`: compares |a| and |b|; the result's sign is sign(a) ^ sign(b).
    pub xorsign: bool,
}

/// The rounding direction of float arithmetic (`exec/directed.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Dir {
    #[default]
    Near,
    Zero,
    Down,
    Up,
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
    /// s32 += {s8,u8} * {s8,u8}: m8n8k16 (`m16` false), m16n8k16, m16n8k32 (`k32`) (`bits` 8); s32 +=
    /// {s4,u4} * {s4,u4} on twice the K: m8n8k32, m16n8k32, m16n8k64 (`bits` 4); s32 += popc(b1 `.and`/`.xor`
    /// b1) on eight times the K: m8n8k128, m16n8k128, m16n8k256 (`bits` 1, `xor`). `.satfinite` clamps the
    /// exact sum to the s32 range where it would otherwise wrap (PTX ISA, `mma`, integer `.satfinite`).
    Int {
        m16: bool,
        k32: bool,
        bits: u8,
        xor: bool,
        a_signed: bool,
        b_signed: bool,
        sat: bool,
    },
    /// f64 (DMMA): m8n8k4 (sm_80; `m` 8, `k` 4) and m16n8k4 / m16n8k8 / m16n8k16 (sm_90).
    F64 { m: u8, k: u8 },
    /// m16n8k32 f32 += {e4m3,e5m2} * {e4m3,e5m2} (sm_89+): the 8-bit integer m16n8k32's fragments.
    Fp8 { a_e5m2: bool, b_e5m2: bool },
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
    /// here: their data was written at issue; the race detector completes them now, `cp_async.rs`).
    ArriveNoinc,
    /// `cp.async.mbarrier.arrive [a]` (no `.noinc`): the pending count rises by one now and falls by one when
    /// the thread's earlier `cp.async`s complete, so no net change; the arrive-on still publishes the
    /// copies to the phase's waiters.
    CpAsyncArrive,
}

/// Decoded instruction kinds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Mov(PtxType),
    Alu(AluOp, PtxType, Mods),
    /// `setp.cmp{.ftz}.type{.bop}`: the bool is `.ftz` (f32 subnormal operands compare as zeros).
    Setp(Cmp, PtxType, Option<BoolOp>, bool),
    /// `set.cmp{.ftz}.dtype.stype{.bop}`: the bool is `.ftz`.
    Set(Cmp, PtxType, PtxType, Option<BoolOp>, bool),
    Selp(PtxType),
    Slct(PtxType, PtxType),
    /// `cvt.rnd.flags.dty.sty`: the flags are `CVT_SAT | CVT_RELU | CVT_SATFINITE | CVT_FTZ`.
    Cvt(PtxType, PtxType, Rnd, u8),
    Cvta(bool, Space, PtxType),
    Ld(Space, PtxType, u8),
    St(Space, PtxType, u8),
    /// `atom` / `red` (`true`): space, operation, element type, reduction, vector width (1, or the
    /// sm_90 `.v2/.v4/.v8` forms of `atom.global` on f32, f16, bf16, f16x2, bf16x2: one atomic per element).
    Atom(Space, AtomOp, PtxType, bool, u8),
    Bra,
    Call,
    Ret,
    Exit,
    Trap,
    Bar(BarMode),
    BarWarpSync,
    Nop,
    /// `membar` / `fence` (not the proxy and mbarrier-init forms): no effect on values; the race
    /// detector's fence-based synchronization (`exec/access.rs`, `exec_fence`).
    Fence,
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
    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes` (`multicast`: with
    /// `.multicast::cluster`, a CTA-mask operand after the mbarrier).
    CpAsyncBulk {
        multicast: bool,
    },
    /// `wgmma.*` (sm_90a): warpgroup-collective tensor-core instructions.
    Wgmma(WgmmaOp),
    /// `cp.async.bulk.tensor.Nd` tile mode: a load global → shared (`load`, with mbarrier completion,
    /// optionally `.multicast::cluster`) or a store shared → global (bulk-group completion).
    CpAsyncBulkTensor {
        rank: u8,
        load: bool,
        multicast: bool,
    },
    /// `st.async` (`op` `None`, PTX ISA §9.7.8.12) / `red.async` (§9.7.12.7) on shared::cluster memory with
    /// `.mbarrier::complete_tx::bytes`: a (vector of `vecw`) `ty` store or reduction whose completion is a
    /// complete_tx of its bytes on the mbarrier of the destination's block (`generic`: no `.shared::cluster`,
    /// the addresses are generic ones).
    AsyncStore {
        op: Option<AtomOp>,
        ty: PtxType,
        vecw: u8,
        generic: bool,
    },
    /// `cp.reduce.async.bulk` (PTX ISA §9.7.8.24.7): `size` bytes of `ty` elements of this block's shared
    /// memory reduced into global memory (`cluster` false: `.bulk_group` completion) or into a block's
    /// shared memory in the cluster (`cluster`: complete_tx on the destination block's mbarrier).
    BulkReduce {
        op: AtomOp,
        ty: PtxType,
        cluster: bool,
    },
    /// `cp.reduce.async.bulk.tensor.Nd.global.shared::cta.op.tile.bulk_group`: a TMA store whose writes
    /// are reductions (element type from the tensor map).
    BulkReduceTensor {
        rank: u8,
        op: AtomOp,
    },
    /// `cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]`:
    /// a bulk copy from this block's shared memory into a block's shared memory in the cluster.
    BulkCopyCluster,
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
    /// `tex` (unified mode): sample the texture object of the address operand's handle.
    Tex(TexOp),
    /// `suld.b` / `sust.b`: raw bytes of a surface object.
    Surf(SurfOp),
    /// `txq` / `suq` (`true`): a property of a texture or surface object.
    Txq(TexQuery, bool),
    /// `tensormap.replace.tile.FIELD`: one field of the tensor map at the address operand (global or
    /// shared memory).
    TensormapReplace(TmField, Space),
    /// `tensormap.cp_fenceproxy.global.shared::cta…`: a map's 128 bytes from shared to global memory.
    TensormapCopy,
    Unsupported(String),
}

impl Kind {
    /// Moves, arithmetic, compares, selects, conversions and loads: operand 0 is the register (for a
    /// load, the vector of registers) each executing lane writes, and the group only moves on to the
    /// next instruction. (Liveness takes them as the instructions that overwrite operand 0; the step
    /// as ones that keep a whole group together.)
    pub(crate) fn is_register_op(&self) -> bool {
        matches!(
            self,
            Kind::Mov(_)
                | Kind::Alu(..)
                | Kind::Setp(..)
                | Kind::Set(..)
                | Kind::Selp(_)
                | Kind::Slct(..)
                | Kind::Cvt(..)
                | Kind::Cvta(..)
                | Kind::Ld(..)
        )
    }
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
    /// The registers its code names (a recursive call saves them for the outer activation).
    pub regs: Vec<u32>,
}

#[derive(Debug, Clone)]
pub(crate) struct GlobalVar {
    pub name: String,
    pub size: usize,
    #[allow(dead_code)]
    pub align: usize,
    pub init: Vec<u8>,
    /// Addresses the initializer holds, written when the module's variables are placed.
    pub relocs: Vec<Reloc>,
}

/// An address in a variable's initializer (`{generic(A)+8, f}`): `size` bytes at byte `at` get the
/// target's address plus `offset`, masked and shifted down when `mask` is not all ones (nvcc's
/// `0xFF00(generic(A))` gives one byte of an address).
#[derive(Debug, Clone)]
pub(crate) struct Reloc {
    pub at: usize,
    pub size: usize,
    pub target: RelocTarget,
    pub offset: i64,
    pub mask: u64,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum RelocTarget {
    /// A `.global`/`.const` variable (index into `Module::globals`).
    Global(u32),
    /// A function (index into `Module::funcs`).
    Func(u32),
}

impl Reloc {
    /// The bytes to write, given the target's address.
    pub(crate) fn value(&self, target: u64) -> u64 {
        let a = target.wrapping_add(self.offset as u64);
        (a & self.mask) >> self.mask.trailing_zeros().min(63)
    }
}

/// `cvt`'s `.sat`: a float result clamped to [0, 1] (NaN to 0), an integer one to its type's range.
pub(crate) const CVT_SAT: u8 = 1;
/// `cvt`'s `.relu`: a negative result is +0.
pub(crate) const CVT_RELU: u8 = 2;
/// `cvt`'s `.satfinite`: a result beyond the largest finite value (an infinity included) is that value.
pub(crate) const CVT_SATFINITE: u8 = 4;
/// `cvt`'s `.ftz`: a subnormal f32 source, or f32 result, becomes a zero of the same sign.
pub(crate) const CVT_FTZ: u8 = 8;

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
        Self::parse_with(src, true)
    }

    /// [`Module::parse`] keeping a slot per declared register (the numbering before `ptx/liveness.rs`).
    #[cfg(test)]
    pub(crate) fn parse_declared_registers(src: &str) -> Result<Module, PtxError> {
        Self::parse_with(src, false)
    }

    fn parse_with(src: &str, share_slots: bool) -> Result<Module, PtxError> {
        let m = prism_core::ptx::parse(src).map_err(|e| PtxError {
            line: e.line as usize,
            message: e.message,
        })?;
        let mut p = Parser::new();
        p.share_slots = share_slots;
        p.module(&m)?;
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
    /// Whether registers never live at once share a slot (`ptx/liveness.rs`; off only in tests that
    /// compare with the declared numbering).
    share_slots: bool,
    funcs: Vec<Function>,
    globals: Vec<GlobalVar>,
    /// Address initializers waiting for every name of the module: (variable, byte, size, what, line).
    pending_relocs: Vec<(u32, usize, usize, prism_core::ptx::AddrInit, usize)>,
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
