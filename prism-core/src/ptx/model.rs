//! The PTX model: a module as an ordered list of directives, variables and functions; a function body as
//! statements (declarations, labels, instructions, nested blocks). It is syntax, not meaning: names are
//! not resolved, sizes are not checked against any limit, and an instruction is its dotted opcode with
//! its operands. Its consumers decide meaning: the emitter builds it, the emulator decodes it.

/// A source line, kept for messages. Two positions always compare equal, so a model parsed from printed
/// text equals the model that was printed (`parse(print(m)) == m`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Pos(pub u32);

impl PartialEq for Pos {
    fn eq(&self, _: &Pos) -> bool {
        true
    }
}

/// A whole PTX module.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Module {
    /// Module-level statements in source order.
    pub items: Vec<Item>,
}

/// A module-level statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// A one-line directive: `.version 8.0`, `.target sm_90a`, `.address_size 64`, `.file`, `.loc`.
    Directive(Directive),
    /// A `.global` / `.const` / `.shared` / `.local` variable.
    Var(VarDecl),
    /// An `.entry` or `.func`, declared or defined.
    Func(Function),
    /// Text the model keeps verbatim and gives no meaning (`.section { … }`, `.pragma`, texture
    /// references, `.alias`, `@@dwarf` lines).
    Raw(Raw),
}

/// A directive and the rest of its line, verbatim (`args` may be empty).
#[derive(Clone, Debug, PartialEq)]
pub struct Directive {
    /// Where it starts in the source (ignored by `==`).
    pub pos: Pos,
    /// With its dot: `.version`.
    pub name: String,
    /// The rest of the line, verbatim (may be empty).
    pub args: String,
}

/// Verbatim source text of a statement the model does not interpret.
#[derive(Clone, Debug, PartialEq)]
pub struct Raw {
    /// Where it starts in the source (ignored by `==`).
    pub pos: Pos,
    /// The statement as written, from its first token to its last.
    pub text: String,
}

/// `[linkage] space [.align N] qualifiers name dims [= init]`; also an entry's or function's parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    /// Where it starts in the source (ignored by `==`).
    pub pos: Pos,
    /// `.visible`, `.weak`, `.common`, `.extern`, in source order.
    pub linkage: Vec<String>,
    /// The state space (`.reg`: a `.func` register parameter).
    pub space: Space,
    /// `.align N`.
    pub align: Option<i64>,
    /// Every other dotted word before the name, in order: vector width, type, `.ptr` and the like.
    pub quals: Vec<String>,
    /// The declared or defined name.
    pub name: String,
    /// `[N]` is `Some(N)`, `[]` is `None`.
    pub dims: Vec<Option<i64>>,
    /// `= value` or `= {..}`.
    pub init: Option<Init>,
}

/// A PTX state space (PTX ISA §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    Reg,
    Param,
    Local,
    Shared,
    Global,
    Const,
}

impl Space {
    /// The space a directive or an opcode modifier names: `.shared`, `shared`, `shared::cta`, `shared::cluster`
    /// (a sibling block's shared memory is still shared memory).
    pub fn from_name(s: &str) -> Option<Space> {
        let s = s.strip_prefix('.').unwrap_or(s);
        Some(match s.split("::").next().unwrap_or(s) {
            "reg" => Space::Reg,
            "param" => Space::Param,
            "local" => Space::Local,
            "shared" => Space::Shared,
            "global" => Space::Global,
            "const" => Space::Const,
            _ => return None,
        })
    }

    /// The directive: `.shared`.
    pub fn directive(self) -> &'static str {
        match self {
            Space::Reg => ".reg",
            Space::Param => ".param",
            Space::Local => ".local",
            Space::Shared => ".shared",
            Space::Global => ".global",
            Space::Const => ".const",
        }
    }
}

/// A variable's initializer: a value, an address, or a braced list of initializers.
#[derive(Clone, Debug, PartialEq)]
pub enum Init {
    Value(Operand),
    /// The address of a variable or function (PTX ISA §5.4.4 "Initializers"): `sym`, `generic(sym)`,
    /// either `+N`, and nvcc's byte-masked form `0xFF00(generic(sym)+N)` for pointers at unaligned
    /// offsets of a `.b8`/`.u8` array.
    Addr(AddrInit),
    List(Vec<Init>),
}

/// An address initializer: `[mask(]` `generic(name)` or `name` `[+offset]` `[)]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddrInit {
    /// The variable or function whose address it is.
    pub name: String,
    /// `generic(name)`: the generic address rather than the state space's own.
    pub generic: bool,
    /// Bytes added to the address.
    pub offset: i64,
    /// `0xFF..(…)`: the value is the masked byte (`(address & mask) >> shift`, shift = the mask's
    /// trailing zeros), as text exactly as written.
    pub mask: Option<String>,
}

/// `.reg qualifiers name[<N>], …;`
#[derive(Clone, Debug, PartialEq)]
pub struct RegDecl {
    /// Where it starts in the source (ignored by `==`).
    pub pos: Pos,
    /// Every dotted word before the name, in order (vector width, type, ...).
    pub quals: Vec<String>,
    /// The names declared, in order.
    pub names: Vec<RegName>,
}

/// One name of a `.reg` declaration; `%r<8>` declares `%r0` … `%r7` (`range: Some(8)`).
#[derive(Clone, Debug, PartialEq)]
pub struct RegName {
    /// The declared or defined name.
    pub name: String,
    /// `Some(N)` for `name<N>`.
    pub range: Option<i64>,
}

/// An `.entry` (kernel) or `.func` (device function).
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Where it starts in the source (ignored by `==`).
    pub pos: Pos,
    /// `.visible`, `.weak`, `.common`, `.extern`, in source order.
    pub linkage: Vec<String>,
    /// `.entry` (a kernel) rather than `.func`.
    pub entry: bool,
    /// A `.func`'s return parameters, when it has a return list.
    pub rets: Option<Vec<VarDecl>>,
    /// The declared or defined name.
    pub name: String,
    /// `None` when the header has no parameter list at all.
    pub params: Option<Vec<VarDecl>>,
    /// Performance directives after the header: `.reqntid 128`, `.maxnreg 168`, `.noreturn`.
    pub perf: Vec<PerfDirective>,
    /// `None` for a declaration (`…;` or an `.extern` prototype).
    pub body: Option<Vec<Stmt>>,
    /// The line of the body's closing `}` (where its implicit return is).
    pub end: Pos,
}

/// `.maxntid 128, 1, 1` is `{ name: ".maxntid", args: [128, 1, 1] }`.
#[derive(Clone, Debug, PartialEq)]
pub struct PerfDirective {
    /// Where it starts in the source (ignored by `==`).
    pub pos: Pos,
    /// The declared or defined name.
    pub name: String,
    /// The rest of the line, verbatim (may be empty).
    pub args: Vec<i64>,
}

/// A statement of a function body.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Reg(RegDecl),
    /// `.local`, `.param`, `.shared`, `.global`, `.const` (with `.extern` in `linkage`).
    Var(VarDecl),
    Label(Label),
    Instr(Instruction),
    /// `{ … }`: a nested scope.
    Block(Block),
    /// `.loc`, `.file`, `.pragma` and other directives kept verbatim.
    Raw(Raw),
}

/// `name:`.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    /// Where it starts in the source (ignored by `==`).
    pub pos: Pos,
    /// The declared or defined name.
    pub name: String,
}

/// `{ … }` inside a body.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Where it starts in the source (ignored by `==`).
    pub pos: Pos,
    /// The block's statements.
    pub stmts: Vec<Stmt>,
}

/// `[@[!]pred] opcode operands;` where `opcode` is the whole dotted word (`ld.global.v4.f32`).
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    /// Where it starts in the source (ignored by `==`).
    pub pos: Pos,
    /// `@p` / `@!p`.
    pub guard: Option<Guard>,
    /// The whole dotted opcode: `ld.global.v4.f32`.
    pub opcode: String,
    /// Operands in order (`setp`'s `p|q` is one [`Operand::Pair`]).
    pub operands: Vec<Operand>,
}

/// `@p` or `@!p`.
#[derive(Clone, Debug, PartialEq)]
pub struct Guard {
    /// `@!p`.
    pub negated: bool,
    /// The predicate register.
    pub pred: String,
}

/// An operand, as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A register, special register, symbol, label or function name.
    Name(String),
    /// `!p` (a negated predicate operand).
    NotName(String),
    Int(i64),
    /// `0fXXXXXXXX`.
    F32Bits(u32),
    /// `0dXXXXXXXXXXXXXXXX`.
    F64Bits(u64),
    /// A decimal floating-point literal (`1.5`, `2e-3`).
    Float(f64),
    /// `[base+offset]`.
    Addr(Address),
    /// `[tensor_map, {c0, …}]`: a tensor copy's map and coordinates.
    Tensor(Address, Box<Operand>),
    /// `sym+N` (an address as an immediate).
    SymOffset(String, i64),
    /// `{a, b, …}`.
    Vector(Vec<Operand>),
    /// `(a, b, …)` (a call's return and argument lists).
    List(Vec<Operand>),
    /// `p|q` (the two destinations of `setp`).
    Pair(Box<Operand>, Box<Operand>),
    /// `_`.
    Sink,
}

/// The inside of `[…]`: `base`, `base+offset`, `offset`. The sum of the terms is kept; a written `+0`
/// stays written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Address {
    /// A register or symbol.
    pub base: Option<String>,
    /// The sum of the constant terms, when any is written.
    pub offset: Option<i64>,
}

impl Instruction {
    /// An unguarded instruction.
    pub fn new(opcode: impl Into<String>, operands: Vec<Operand>) -> Instruction {
        Instruction {
            pos: Pos::default(),
            guard: None,
            opcode: opcode.into(),
            operands,
        }
    }

    /// The opcode's first word (`ld` for `ld.global.u32`).
    pub fn op(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }

    /// The opcode's modifiers after its first word, in order (`global`, `v4`, `f32`).
    pub fn modifiers(&self) -> impl Iterator<Item = &str> {
        self.opcode.split('.').skip(1)
    }

    /// The first state space among the modifiers (`Shared` for `st.shared::cta.b32`, `None` for a generic
    /// access).
    pub fn space(&self) -> Option<Space> {
        self.modifiers().find_map(Space::from_name)
    }

    /// Whether any operand names `name` (a label, register or symbol), at any depth.
    pub fn mentions(&self, name: &str) -> bool {
        self.operands.iter().any(|o| o.mentions(name))
    }
}

impl Operand {
    /// Whether this operand names `name`, at any depth.
    pub fn mentions(&self, name: &str) -> bool {
        match self {
            Operand::Name(n) | Operand::NotName(n) | Operand::SymOffset(n, _) => n == name,
            Operand::Addr(a) => a.base.as_deref() == Some(name),
            Operand::Tensor(a, c) => a.base.as_deref() == Some(name) || c.mentions(name),
            Operand::Vector(v) | Operand::List(v) => v.iter().any(|o| o.mentions(name)),
            Operand::Pair(a, b) => a.mentions(name) || b.mentions(name),
            Operand::Int(_)
            | Operand::F32Bits(_)
            | Operand::F64Bits(_)
            | Operand::Float(_)
            | Operand::Sink => false,
        }
    }
}

impl Stmt {
    /// Every instruction of this statement, nested blocks included, in order.
    pub fn instructions(&self) -> Box<dyn Iterator<Item = &Instruction> + '_> {
        match self {
            Stmt::Instr(i) => Box::new(std::iter::once(i)),
            Stmt::Block(b) => Box::new(b.stmts.iter().flat_map(|s| s.instructions())),
            _ => Box::new(std::iter::empty()),
        }
    }
}
