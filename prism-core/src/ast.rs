//! The Prism syntax tree.
//!
//! `parse` builds it from Rust tokens (see `docs/SYNTAX.md` for the surface syntax), `check` verifies the
//! perspective rules of paper 000 on it, `emit` turns a checked tree into PTX. Every node keeps the span of
//! the Rust tokens it came from, so each diagnostic points at the code that caused it.

use proc_macro2::Span;
use std::fmt;

/// A level of the compute hierarchy (§3.1). Ordered `Thread < Block < Grid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Thread,
    Block,
    Grid,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Thread => "thread",
            Level::Block => "block",
            Level::Grid => "grid",
        })
    }
}

/// A perspective `level[n]` (§3.2): `n` units of `level`, aligned to `n`. Sizes written in the source must
/// be constant expressions without const generics (`thread[4 * 32]` is fine, `thread[BM]` is not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Perspective {
    pub level: Level,
    pub n: u32,
}

impl Perspective {
    pub const fn new(level: Level, n: u32) -> Self {
        Perspective { level, n }
    }
    pub const fn thread(n: u32) -> Self {
        Perspective::new(Level::Thread, n)
    }
    pub const fn block(n: u32) -> Self {
        Perspective::new(Level::Block, n)
    }
    pub const fn grid(n: u32) -> Self {
        Perspective::new(Level::Grid, n)
    }
    /// `self` is narrower than or equal to `other` at the same level or a lower one, judged on levels and
    /// divisibility only (§3.2). Across levels the caller must also know that the sizes line up; see
    /// `check::perspective` for the version that uses the kernel's known threads/blocks.
    pub fn narrower_eq_syntactic(self, other: Perspective) -> bool {
        if self.level == other.level {
            other.n.is_multiple_of(self.n)
        } else {
            self.level < other.level
        }
    }
}

impl fmt::Display for Perspective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.level, self.n)
    }
}

/// A name with the span of its occurrence.
#[derive(Clone, Debug)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

impl PartialEq for Ident {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// A value type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    Bool,
    U32,
    I32,
    U64,
    I64,
    F32,
    F64,
    /// Storage type: convert with `as f32` to compute.
    F16,
    /// Storage type: convert with `as f32` to compute.
    BF16,
}

impl ScalarType {
    /// Every scalar type.
    pub const ALL: [ScalarType; 9] = [
        ScalarType::Bool,
        ScalarType::U32,
        ScalarType::I32,
        ScalarType::U64,
        ScalarType::I64,
        ScalarType::F32,
        ScalarType::F64,
        ScalarType::F16,
        ScalarType::BF16,
    ];

    /// Size in bytes of one element in memory.
    pub fn size(self) -> u32 {
        match self {
            ScalarType::Bool => 1,
            ScalarType::F16 | ScalarType::BF16 => 2,
            ScalarType::U32 | ScalarType::I32 | ScalarType::F32 => 4,
            ScalarType::U64 | ScalarType::I64 | ScalarType::F64 => 8,
        }
    }
    pub fn is_int(self) -> bool {
        matches!(
            self,
            ScalarType::U32 | ScalarType::I32 | ScalarType::U64 | ScalarType::I64
        )
    }
    pub fn is_float(self) -> bool {
        matches!(
            self,
            ScalarType::F32 | ScalarType::F64 | ScalarType::F16 | ScalarType::BF16
        )
    }
    pub fn is_signed(self) -> bool {
        matches!(self, ScalarType::I32 | ScalarType::I64)
    }
    /// The Rust spelling.
    pub fn rust_name(self) -> &'static str {
        match self {
            ScalarType::Bool => "bool",
            ScalarType::U32 => "u32",
            ScalarType::I32 => "i32",
            ScalarType::U64 => "u64",
            ScalarType::I64 => "i64",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            ScalarType::F16 => "f16",
            ScalarType::BF16 => "bf16",
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rust_name())
    }
}

/// A type as written in a parameter or `let`.
#[derive(Clone, Debug)]
pub enum Type {
    Scalar(ScalarType),
    /// `*const T` (`mutable == false`) or `*mut T`: a pointer into global memory.
    Ptr {
        elem: ScalarType,
        mutable: bool,
    },
    /// `[T; N]`: a thread-local array (registers). `len` is a constant expression (may name const generics).
    Array {
        elem: ScalarType,
        len: Box<Expr>,
    },
    /// `&[T; N]` / `&mut [T; N]` as a device-function parameter: a caller's thread-local array.
    ArrayRef {
        elem: ScalarType,
        len: Box<Expr>,
        mutable: bool,
    },
    /// `Shared<[T; N]>` or `Shared<[T; N], Swizzle128>`: a static shared-memory allocation (only at
    /// `block[1]`), with the layout TMA writes and wgmma reads it in. As a device-function parameter, a
    /// caller's shared memory with that layout: read-only, or writable when spelled `SharedMut<..>`
    /// (`mutable`; a parameter type only).
    Shared {
        elem: ScalarType,
        len: Box<Expr>,
        layout: SmemLayout,
        mutable: bool,
    },
    /// `Ring<T>` / `Ring<(T, U, ..)>` (device-function parameters only): a caller's `ring` of memories with
    /// those element types, used only by `fill` / `drain` (its slots, counts and phases stay the caller's).
    Ring {
        elems: Vec<ScalarType>,
    },
    /// `TensorMap<T, RANK>` / `TensorMapMut<T, RANK>` (kernel parameters): a CUDA tensor map, passed by
    /// value (128 bytes, 64-byte aligned), read by `tma_load`; a `TensorMapMut` (`mutable`) also by
    /// `tma_store`.
    TensorMap {
        elem: ScalarType,
        rank: u32,
        mutable: bool,
    },
}

/// How a shared allocation is laid out (`Shared<[T; N], L>`): plain, or in rows of the swizzle span with the
/// 16-byte chunks of row `r` XOR-permuted by `r % (span / 16)` (PTX ISA §5.5.7: the same XOR for TMA writes and wgmma reads). A
/// `SwizzleN` allocation is K-major (each row of `span` bytes holds consecutive K elements of one M or N row,
/// as TMA writes a row-major `A` or an `n × k` `B`); a `SwizzleNMn` one is MN-major (each row holds
/// consecutive M or N elements of one K: a `k × n` row-major `B`), which wgmma reads transposed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SmemLayout {
    #[default]
    Linear,
    Swizzle32,
    Swizzle64,
    Swizzle128,
    Swizzle32Mn,
    Swizzle64Mn,
    Swizzle128Mn,
}

impl SmemLayout {
    /// Parses the Rust spelling (`Swizzle128`, ...).
    pub fn from_name(s: &str) -> Option<SmemLayout> {
        match s {
            "Linear" => Some(SmemLayout::Linear),
            "Swizzle32" => Some(SmemLayout::Swizzle32),
            "Swizzle64" => Some(SmemLayout::Swizzle64),
            "Swizzle128" => Some(SmemLayout::Swizzle128),
            "Swizzle32Mn" => Some(SmemLayout::Swizzle32Mn),
            "Swizzle64Mn" => Some(SmemLayout::Swizzle64Mn),
            "Swizzle128Mn" => Some(SmemLayout::Swizzle128Mn),
            _ => None,
        }
    }

    /// Bytes per swizzled row (0 for `Linear`).
    pub fn span(self) -> u32 {
        match self {
            SmemLayout::Linear => 0,
            SmemLayout::Swizzle32 | SmemLayout::Swizzle32Mn => 32,
            SmemLayout::Swizzle64 | SmemLayout::Swizzle64Mn => 64,
            SmemLayout::Swizzle128 | SmemLayout::Swizzle128Mn => 128,
        }
    }

    /// Rows hold M (or N) elements of one K: wgmma reads the allocation transposed (`imm-trans` 1).
    pub fn mn_major(self) -> bool {
        matches!(
            self,
            SmemLayout::Swizzle32Mn | SmemLayout::Swizzle64Mn | SmemLayout::Swizzle128Mn
        )
    }

    /// Alignment the allocation needs so the swizzle pattern starts at its first byte (8 rows of the span):
    /// then wgmma descriptors carry base offset 0 (PTX ISA §9.7.15.5.1.2.2, the base offset).
    pub fn align(self) -> u32 {
        match self {
            SmemLayout::Linear => 16,
            l => 8 * l.span(),
        }
    }
}

impl SmemLayout {
    /// Where an allocation with this layout starts when the previous ones end at byte `end` (one rule for
    /// the checker's budget and the emitter's layout).
    pub fn place(self, end: u64) -> u64 {
        let a = self.align() as u64;
        end.div_ceil(a) * a
    }
}

impl fmt::Display for SmemLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SmemLayout::Linear => "Linear",
            SmemLayout::Swizzle32 => "Swizzle32",
            SmemLayout::Swizzle64 => "Swizzle64",
            SmemLayout::Swizzle128 => "Swizzle128",
            SmemLayout::Swizzle32Mn => "Swizzle32Mn",
            SmemLayout::Swizzle64Mn => "Swizzle64Mn",
            SmemLayout::Swizzle128Mn => "Swizzle128Mn",
        })
    }
}

/// Kernel (`#[prism_kernel]`, a PTX `.entry`) or device function (`#[prism_device]`, inlined at calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FnKind {
    Kernel,
    Device,
}

/// A const generic parameter `const BM: u32`.
#[derive(Clone, Debug)]
pub struct ConstParam {
    pub name: Ident,
    pub ty: ScalarType,
}

/// The bound of a type parameter (`T: Num`): the finite set of scalar types it admits. A generic function is
/// checked once for every admitted type (device functions) or every instance (kernels), so the bound says
/// which operations the body may use: those that type-check for every member (docs/SYNTAX.md, "Type
/// generics").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeBound {
    /// Every value type but `bool`: u32 i32 u64 i64 f32 f64 f16 bf16 (loads, stores, moves).
    Scalar,
    /// The arithmetic types: u32 i32 u64 i64 f32 f64.
    Num,
    /// The 32-bit arithmetic types, one register each: u32 i32 f32 (shuffles, 32-bit atomics, `asm!` `.b32`).
    Num32,
    /// The integer types: u32 i32 u64 i64.
    Int,
    /// The computing float types: f32 f64.
    Float,
}

impl TypeBound {
    /// Every bound, for diagnostics and docs.
    pub const ALL: [TypeBound; 5] = [
        TypeBound::Scalar,
        TypeBound::Num,
        TypeBound::Num32,
        TypeBound::Int,
        TypeBound::Float,
    ];

    /// Parses the Rust spelling (`Num`, ...).
    pub fn from_name(s: &str) -> Option<TypeBound> {
        TypeBound::ALL.into_iter().find(|b| b.name() == s)
    }

    /// The Rust spelling.
    pub fn name(self) -> &'static str {
        match self {
            TypeBound::Scalar => "Scalar",
            TypeBound::Num => "Num",
            TypeBound::Num32 => "Num32",
            TypeBound::Int => "Int",
            TypeBound::Float => "Float",
        }
    }

    /// The admitted types; the first is the one a generic function's own parse stands for.
    pub fn members(self) -> &'static [ScalarType] {
        use ScalarType::*;
        match self {
            TypeBound::Scalar => &[U32, I32, U64, I64, F32, F64, F16, BF16],
            TypeBound::Num => &[U32, I32, U64, I64, F32, F64],
            TypeBound::Num32 => &[U32, I32, F32],
            TypeBound::Int => &[U32, I32, U64, I64],
            TypeBound::Float => &[F32, F64],
        }
    }

    /// Whether `t` satisfies the bound.
    pub fn admits(self, t: ScalarType) -> bool {
        self.members().contains(&t)
    }
}

impl fmt::Display for TypeBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A type parameter `T: Num` of a generic function.
#[derive(Clone, Debug)]
pub struct TypeParam {
    pub name: Ident,
    pub bound: TypeBound,
    /// Span of the bound (diagnostics about what it admits).
    pub bound_span: Span,
}

/// The tokens a generic function was parsed from: each instantiation parses them again with its types
/// (`crate::mono`), as const generics are bound per instance.
#[derive(Clone, Debug)]
pub struct FnSource {
    pub attr: proc_macro2::TokenStream,
    pub item: proc_macro2::TokenStream,
}

/// A perspective with the span where it was written.
#[derive(Clone, Copy, Debug)]
pub struct SpannedPerspective {
    pub perspective: Perspective,
    pub span: Span,
}

/// A function parameter.
#[derive(Clone, Debug)]
pub struct Param {
    pub name: Ident,
    pub ty: Type,
    /// From `#[at(..)]`; `None` means the function's broadest `requires` perspective.
    pub at: Option<SpannedPerspective>,
    pub span: Span,
}

/// One instantiation of the generics, in declaration order: `(f32, 4)` (type arguments first).
#[derive(Clone, Debug)]
pub struct Instance {
    /// The type arguments (empty for a function without type parameters).
    pub types: Vec<ScalarType>,
    pub values: Vec<i64>,
    pub span: Span,
}

/// A kernel or device function, as parsed from the attribute and the `fn` item.
#[derive(Clone, Debug)]
pub struct Function {
    pub kind: FnKind,
    pub name: Ident,
    pub is_pub: bool,
    /// `<T: Num, ..>`: type parameters (declared before the const ones). Non-empty only for a generic
    /// function as written: its own tree stands for the bounds' first members, and `crate::mono` parses
    /// `source` again per instantiation; the checker and emitter only ever see instantiated functions.
    pub type_params: Vec<TypeParam>,
    /// The types an instantiated function was parsed with (empty otherwise).
    pub type_args: Vec<ScalarType>,
    /// The tokens of a generic function (`Some` exactly when `type_params` is not empty).
    pub source: Option<FnSource>,
    pub const_params: Vec<ConstParam>,
    /// `requires(..)`: the perspective bound (§3.3), broadest first as written. Never empty after parsing.
    pub requires: Vec<SpannedPerspective>,
    pub requires_span: Span,
    /// `smem = N`: bytes of shared memory the function may allocate (its own and its callees'). A constant
    /// expression: it may name const generics, and is evaluated per instance.
    pub smem: Option<Box<Expr>>,
    /// `threads = N` (kernels): the exact number of threads per block (constant expression, per instance).
    pub threads: Option<Box<Expr>>,
    /// `blocks = N` (kernels): the exact number of blocks in the grid (constant expression, per instance).
    pub blocks: Option<Box<Expr>>,
    /// `cluster = N` (kernels): blocks per thread-block cluster (sm_90); an aligned `block[N]` is a cluster.
    pub cluster: Option<Box<Expr>>,
    /// `returns = level[n]` (device functions): perspective of the result.
    pub returns: Option<SpannedPerspective>,
    /// `instances = [(..), ..]`: instantiations (required for kernels with generics).
    pub instances: Vec<Instance>,
    /// `aliases = [u32, f32]`: tuples of type arguments under which the macro also exports the function with a
    /// name of its own (`f_u32`, const parameters still generic): a device function calling `f::<u32, ..>`,
    /// a kernel type alias `k_u32<..> = k<u32, ..>`.
    pub aliases: Vec<Instance>,
    pub params: Vec<Param>,
    /// Return type of a device function (`-> T`).
    pub ret: Option<(Type, Span)>,
    pub body: Block,
    pub span: Span,
    /// For functions that come from another crate: the path prefix (e.g. `prism_kernels`) through which their
    /// own callees are found. `None` for functions of the crate being compiled.
    pub origin: Option<String>,
}

/// `{ stmts; tail }`
#[derive(Clone, Debug)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    /// Final expression without `;` (the value of a device function).
    pub tail: Option<Box<Expr>>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

/// An arm of `match split(level) { n => { .. } }`.
#[derive(Clone, Debug)]
pub struct SplitArm {
    /// Size in units of the split's level (already multiplied by 32 for `split(warp)`).
    pub size: u32,
    pub size_span: Span,
    pub body: Block,
}

/// The indexing closure of a `partition`: `|i, j| expr`.
#[derive(Clone, Debug)]
pub struct IndexFn {
    pub params: Vec<Ident>,
    pub body: Box<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum StmtKind {
    /// `#[at(p)] let [mut] name[: ty] [= init];`
    Let {
        name: Ident,
        mutable: bool,
        ty: Option<Type>,
        at: Option<SpannedPerspective>,
        init: Option<Expr>,
    },
    /// `place = value` or `place op= value`.
    Assign {
        place: Expr,
        op: Option<BinOp>,
        value: Expr,
    },
    /// An expression statement (calls).
    Expr(Expr),
    If {
        cond: Expr,
        then_block: Block,
        else_block: Option<Block>,
    },
    While {
        cond: Expr,
        body: Block,
    },
    /// `for var in start..end` or `for var in (start..end).step_by(step)`.
    For {
        var: Ident,
        start: Expr,
        end: Expr,
        step: Option<Expr>,
        body: Block,
    },
    Break,
    Continue,
    /// `group(p, || { body })` (§3.3, T-GROUP).
    Group {
        at: SpannedPerspective,
        body: Block,
    },
    /// `match split(level) { .. }` (§3.3, T-SPLIT). `unit` is 32 for `split(warp)`, 128 for `split(warpgroup)`.
    Split {
        level: Level,
        unit: u32,
        arms: Vec<SplitArm>,
    },
    /// `partition(x, p, |i..| f, |y| { body })` (§3.4.2, T-PARTITION / T-LOWER).
    Partition {
        target: Ident,
        at: SpannedPerspective,
        index: IndexFn,
        new_name: Ident,
        body: Block,
    },
    /// `claim(x, p, |y| { body })` (§3.4.2, T-CLAIM).
    Claim {
        target: Ident,
        at: SpannedPerspective,
        new_name: Ident,
        body: Block,
    },
    /// `async_(x, |y| { body })` (§3.7).
    Async {
        target: Ident,
        new_name: Ident,
        body: Block,
    },
    /// `ring(S, (a, b), |r| { body })`: the shared allocations `a`, `b` become a ring of `S` slots (slot `i`
    /// of each is its `i`-th `len / S` elements), filled and drained through `r` only (docs/SYNTAX.md "Rings").
    Ring {
        stages: Expr,
        targets: Vec<Ident>,
        name: Ident,
        body: Block,
    },
    /// `fill(r, i, |a_s, b_s| { body })` or `drain(r, i, |a_s, b_s| { body })`: the slot of step `i` (slot
    /// `i % S`), after it was drained (fill) or filled (drain); async names for `fill`, read-only names for
    /// `drain`. `turn(r, c, || { body })` (no names): consumer `c` (0 or 1) of a ring whose two consumers
    /// take turns draining it (`RingOp::Turn`).
    RingUse {
        op: RingOp,
        ring: Ident,
        index: Expr,
        names: Vec<Ident>,
        body: Block,
    },
    /// `peer(s, r, |s_r| { body })` in cluster code (`block[N]`, N = `cluster`): a read-only view of the shared
    /// allocation `s` of block rank `r` of the cluster (distributed shared memory), between two cluster
    /// barriers.
    Peer {
        target: Ident,
        rank: Expr,
        new_name: Ident,
        body: Block,
    },
    /// `unsafe { .. }`: may contain `asm!`. Only in device functions.
    Unsafe {
        body: Block,
    },
    /// A barrier inserted by the synchronization pass (`sync::insert_barriers`), never written by users:
    /// waits for the threads of one `at` unit (and first for this thread's `cp.async` copies when
    /// `wait_async`). The parser never produces it; the checker may ignore it.
    Barrier(Barrier),
}

/// An explicit barrier over the threads of one unit of perspective `at` (see `docs/CODEGEN.md`, "Sync").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Barrier {
    pub at: Perspective,
    /// Wait for this thread's outstanding `cp.async` copies before the barrier (end of an `async_` scope).
    pub wait_async: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Debug)]
pub enum Lit {
    /// Integer literal with an optional suffix type.
    Int(u128, Option<ScalarType>),
    /// Float literal with an optional suffix type.
    Float(f64, Option<ScalarType>),
    Bool(bool),
}

/// Direction of an `asm!` operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsmDir {
    In,
    Out,
    InOut,
}

/// `name = in(u32) expr` inside `asm!`.
#[derive(Clone, Debug)]
pub struct AsmOperand {
    pub name: Ident,
    pub dir: AsmDir,
    pub ty: ScalarType,
    pub expr: Expr,
}

/// The template with every `{name}` replaced by `subst(name)` (the name trimmed) and `{{` / `}}` by single
/// braces (Rust's format-string rules; an unterminated `{name` runs to the end); the first name `subst`
/// does not know is the error. The checker (rule ASM) and the emitter (which substitutes registers) read
/// templates this one way.
pub fn asm_expand(
    template: &str,
    mut subst: impl FnMut(&str) -> Option<String>,
) -> Result<String, String> {
    let mut text = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' | '}' if chars.peek() == Some(&c) => {
                chars.next();
                text.push(c);
            }
            '{' => {
                let mut name = String::new();
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                    name.push(c);
                }
                text.push_str(&subst(name.trim()).ok_or(name)?);
            }
            c => text.push(c),
        }
    }
    Ok(text)
}

/// The operand names an `asm!` template refers to, in order ([`asm_expand`]'s reading).
pub fn asm_template_names(template: &str) -> Vec<String> {
    let mut names = Vec::new();
    let _ = asm_expand(template, |n| {
        names.push(n.to_string());
        Some(String::new())
    });
    names
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    Lit(Lit),
    /// A variable, parameter, const generic or shared allocation.
    Var(Ident),
    /// `base[i]` (one index) or `base[(i, j, ..)]` (several, for partitions with multi-parameter closures).
    Index {
        base: Box<Expr>,
        indices: Vec<Expr>,
    },
    Unary {
        op: UnOp,
        expr: Box<Expr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Cast {
        expr: Box<Expr>,
        ty: ScalarType,
    },
    /// `path::to::f::<G..>(args)`: intrinsic, `id()`, or device function. `path` has at least one segment.
    Call {
        path: Vec<Ident>,
        generics: Vec<Expr>,
        args: Vec<Expr>,
    },
    /// `recv.method(args)`: math methods (`sqrt`, `min`, ..).
    MethodCall {
        recv: Box<Expr>,
        method: Ident,
        args: Vec<Expr>,
    },
    /// `&x` / `&mut x`: passes a thread-local array to a device function or intrinsic.
    Ref {
        mutable: bool,
        expr: Box<Expr>,
    },
    /// `[a, b, c]`
    ArrayLit(Vec<Expr>),
    /// `[v; n]`
    ArrayRepeat {
        value: Box<Expr>,
        len: Box<Expr>,
    },
    /// `if c { a } else { b }` as a value (select).
    Select {
        cond: Box<Expr>,
        then_value: Box<Expr>,
        else_value: Box<Expr>,
    },
    /// `asm!("template", ops..)`; only inside `unsafe` in a device function.
    Asm {
        template: String,
        operands: Vec<AsmOperand>,
    },
}

/// What a ring statement does with the ring (`StmtKind::RingUse`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingOp {
    /// `fill(r, i, |..| ..)`: the producer's step `i`.
    Fill,
    /// `drain(r, i, |..| ..)`: a consumer's step `i`.
    Drain,
    /// `turn(r, c, || ..)`: a turn of consumer `c` of a ring drained in turns (ping-pong).
    Turn,
}
