//! Decoding of the smaller instruction families: extended-precision (carry) arithmetic, `isspacep`,
//! `getctarank`, `alloca`/`stacksave`/`stackrestore`, `cvt.pack` and `brkpt`. `emu/exec_misc.rs` runs them.
//! Also [`Module::unsupported_instructions`], which the coverage test uses.

use super::*;

/// Hidden per-thread register holding the carry flag `CC.CF` of `add.cc`/`addc`/`sub.cc`/`subc`/`mad.cc`/`madc`
/// (as the hardware's adder carry: a subtraction computes `a + !b + 1`, `subc` `a + !b + CF`, so after a
/// subtraction CF is 1 when there was no borrow; the PTX ISA's `a - (b + CF)` with CF the borrow).
pub(crate) const REG_CARRY: u32 = 0;
/// Hidden per-thread register holding the bytes of the thread's `alloca` stack in use.
pub(crate) const REG_STACK: u32 = 1;

/// A state space `isspacep` tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IsSpace {
    Global,
    Const,
    Local,
    /// `.shared::cta` (`false`) or `.shared` / `.shared::cluster` (`true`).
    Shared(bool),
    Param,
}

/// The instructions of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MiscOp {
    /// `add{.cc}`/`addc{.cc}`/`sub{.cc}`/`subc{.cc}`: subtract, use the carry in, write the carry out.
    AddCarry {
        sub: bool,
        cin: bool,
        cout: bool,
        ty: PtxType,
    },
    /// `mad{c}{.cc}.{lo,hi}`: `d = (a * b).lo|hi + c (+ CF)`.
    MadCarry {
        hi: bool,
        cin: bool,
        cout: bool,
        ty: PtxType,
    },
    /// `isspacep.space p, a`.
    Isspacep(IsSpace),
    /// `getctarank{.shared::cluster}.{u32,u64} d, a`.
    Getctarank,
    /// `alloca.{u32,u64} ptr, size{, align}`.
    Alloca,
    /// `stacksave.{u32,u64} d`.
    Stacksave,
    /// `stackrestore.{u32,u64} a`.
    Stackrestore,
    /// `cvt.pack.sat.{u16,s16,u8,s8,u4,s4,u2,s2}.s32{.b32} d, a, b{, c}`: the converted type.
    CvtPack(PtxType, u8),
    /// `brkpt`: a breakpoint, which without a debugger stops the kernel (a `Trap` fault).
    Brkpt,
    /// `cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size`: completes at issue.
    BulkStore,
    /// A scalar video instruction on 32-bit words (see [`VideoOp`]).
    Video(VideoOp),
    /// FP8 conversions (sm_89+, `<cuda_fp8.h>`): `cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b`
    /// (a to the high byte), `… .f16x2 d, a` (the high half to the high byte), and
    /// `cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a` (the high byte to the high half).
    CvtFp8(Fp8Cvt),
    /// SIMD video `v{add,sub,avrg,absdiff,min,max}{2,4}.dtype.atype.btype{.sat|.add} d, a, b, c` without
    /// operand byte selectors or a destination mask.
    Simd(SimdOp),
}

/// A scalar video instruction: operation (index into `add sub - absdiff min max`), signedness of d, a, b,
/// `.sat`, and the secondary operation with c (0 add, 1 min, 2 max).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VideoOp {
    pub op: u8,
    pub sd: bool,
    pub sa: bool,
    pub sb: bool,
    pub sat: bool,
    pub op2: Option<u8>,
}

/// An FP8 conversion: the FP8 format (E5M2 or E4M3), its direction and source, `.relu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fp8Cvt {
    pub e5m2: bool,
    /// Into FP8 from two `.f32` (false: from one `.f16x2`); unused for the conversion out of FP8.
    pub from_f32: bool,
    /// Out of FP8 into `.f16x2`.
    pub to_f16x2: bool,
    pub relu: bool,
}

/// A SIMD video instruction: operation (index into `add sub avrg absdiff min max`), elements per word
/// (2 or 4), signedness of d, a, b, saturation, and the `.add` secondary operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SimdOp {
    pub op: u8,
    pub lanes: u8,
    pub sd: bool,
    pub sa: bool,
    pub sb: bool,
    pub sat: bool,
    pub add: bool,
    /// `.relu` (`min`/`max` on `.s16x2`): each element result clamped at zero.
    pub relu: bool,
}

impl MiscOp {
    /// Operands the instruction needs at least.
    pub(crate) fn min_args(self) -> usize {
        match self {
            MiscOp::AddCarry { .. } => 3,
            MiscOp::MadCarry { .. } => 4,
            MiscOp::Isspacep(_) | MiscOp::Getctarank | MiscOp::Alloca => 2,
            MiscOp::Stacksave | MiscOp::Stackrestore => 1,
            MiscOp::CvtPack(..) => 3,
            MiscOp::Brkpt => 0,
            // (the packed `add`/`min`/`max` forms have no third source)
            MiscOp::Simd(_) => 3,
            MiscOp::BulkStore => 3,
            MiscOp::Video(v) => 3 + v.op2.is_some() as usize,
            MiscOp::CvtFp8(c) => {
                if c.from_f32 && !c.to_f16x2 {
                    3
                } else {
                    2
                }
            }
        }
    }
}

/// An instruction that faults as unsupported when executed.
pub(super) fn unsupported(opcode: &str, line: usize) -> Instr {
    Instr {
        kind: Kind::Unsupported(opcode.to_string()),
        guard: None,
        args: vec![],
        line: line as u32,
        is_cond_branch: false,
        order: 0,
    }
}

/// `add.cc`, `addc`, `sub.cc`, `subc`, `mad.cc`, `madc` (`base` without the `c` suffix or with it).
pub(super) fn carry(base: &str, cout: bool, hi: bool, ty: PtxType) -> Kind {
    let cin = matches!(base, "addc" | "subc" | "madc");
    Kind::Misc(match base {
        "mad" | "madc" => MiscOp::MadCarry { hi, cin, cout, ty },
        b => MiscOp::AddCarry {
            sub: b.starts_with("sub"),
            cin,
            cout,
            ty,
        },
    })
}

/// `cvt.pack.sat.convertType.s32{.b32}`.
/// A `cvt` to or from `.e4m3x2` / `.e5m2x2` (see [`MiscOp::CvtFp8`]); other narrow formats (FP6, FP4,
/// UE8M0: sm_100) and stochastic rounding are unsupported.
pub(super) fn cvt_fp8(opcode: &str, mods: &[&str]) -> Kind {
    let fp8 = |m: &str| matches!(m, "e4m3x2" | "e5m2x2");
    let Some(pos) = mods.iter().position(|m| fp8(m)) else {
        return Kind::Unsupported(opcode.to_string());
    };
    let e5m2 = mods[pos] == "e5m2x2";
    let to_f16x2 = mods.get(pos.wrapping_sub(1)) == Some(&"f16x2");
    let from_f32 = mods.get(pos + 1) == Some(&"f32");
    let from_f16x2 = mods.get(pos + 1) == Some(&"f16x2");
    if !mods.contains(&"rn") || !(to_f16x2 || from_f32 || from_f16x2) {
        return Kind::Unsupported(opcode.to_string());
    }
    Kind::Misc(MiscOp::CvtFp8(Fp8Cvt {
        e5m2,
        from_f32,
        to_f16x2,
        relu: mods.contains(&"relu"),
    }))
}

pub(super) fn cvt_pack(opcode: &str, types: &[PtxType]) -> Kind {
    let sub = |s: &str| opcode.split('.').any(|m| m == s);
    let (ty, bits) = match types.first() {
        Some(t @ (PtxType::U16 | PtxType::S16)) => (*t, 16),
        Some(t @ (PtxType::U8 | PtxType::S8)) => (*t, 8),
        _ if sub("u4") => (PtxType::U8, 4),
        _ if sub("s4") => (PtxType::S8, 4),
        _ if sub("u2") => (PtxType::U8, 2),
        _ if sub("s2") => (PtxType::S8, 2),
        _ => return Kind::Unsupported(opcode.to_string()),
    };
    if !sub("sat") {
        return Kind::Unsupported(opcode.to_string());
    }
    Kind::Misc(MiscOp::CvtPack(ty, bits))
}

/// The families of this module that need no other decoding, else `Unsupported`.
pub(super) fn decode(
    opcode: &str,
    base: &str,
    mods: &[&str],
    types: &[PtxType],
    space: Space,
) -> Kind {
    let has = |m: &str| mods.contains(&m);
    let _ = types;
    Kind::Misc(match base {
        "isspacep" => MiscOp::Isspacep(match space {
            Space::Global => IsSpace::Global,
            Space::Const => IsSpace::Const,
            Space::Local => IsSpace::Local,
            Space::Param => IsSpace::Param,
            Space::Shared => IsSpace::Shared(!has("shared::cta")),
            Space::Generic => return Kind::Unsupported(opcode.to_string()),
        }),
        "getctarank" => MiscOp::Getctarank,
        "alloca" => MiscOp::Alloca,
        "stacksave" => MiscOp::Stacksave,
        "stackrestore" => MiscOp::Stackrestore,
        "brkpt" => MiscOp::Brkpt,
        _ => return simd(opcode, base, mods, types),
    })
}

impl Module {
    /// The instructions decoded as unsupported (they fault if executed): `(PTX line, what)`. An empty list
    /// means every instruction of the module has an implementation.
    #[doc(hidden)]
    pub fn unsupported_instructions(&self) -> Vec<(usize, String)> {
        self.code
            .iter()
            .filter_map(|i| match &i.kind {
                Kind::Unsupported(s) => Some((i.line as usize, s.clone())),
                _ => None,
            })
            .collect()
    }

    /// Whether any instruction uses the `alloca` stack.
    pub(crate) fn uses_alloca(&self) -> bool {
        self.code.iter().any(|i| {
            matches!(
                i.kind,
                Kind::Misc(MiscOp::Alloca | MiscOp::Stacksave | MiscOp::Stackrestore)
            )
        })
    }
}

/// `add`, `sub`, `min`, `max` on `.u16x2` / `.s16x2` (two 16-bit integers per register, wrapping;
/// `min`/`max` with `.relu` on `.s16x2`), as the SIMD operation on two elements.
pub(super) fn packed16(opcode: &str, base: &str, mods: &[&str]) -> Kind {
    let signed = mods.contains(&"s16x2");
    let op = match base {
        "add" => 0,
        "sub" => 1,
        "min" => 4,
        "max" => 5,
        _ => return Kind::Unsupported(opcode.to_string()),
    };
    Kind::Misc(MiscOp::Simd(SimdOp {
        op,
        lanes: 2,
        sd: signed,
        sa: signed,
        sb: signed,
        sat: false,
        add: false,
        relu: mods.contains(&"relu"),
    }))
}

/// The scalar video instructions `vadd`, `vsub`, `vabsdiff`, `vmin`, `vmax` on whole 32-bit words
/// (`vmin.s32.s32.s32.max d, a, b, c` is BVH traversal's `fmin_fmin`): `.sat` and a secondary `.add`,
/// `.min` or `.max` with `c`; byte/half selectors and `d` merges are unsupported.
fn video(opcode: &str, base: &str, mods: &[&str], types: &[PtxType]) -> Kind {
    let op = match base {
        "vadd" => 0,
        "vsub" => 1,
        "vabsdiff" => 3,
        "vmin" => 4,
        "vmax" => 5,
        _ => return Kind::Unsupported(opcode.to_string()),
    };
    let op2 = mods.iter().find_map(|m| match *m {
        "add" => Some(0),
        "min" => Some(1),
        "max" => Some(2),
        _ => None,
    });
    if types.len() != 3 || types.iter().any(|t| t.size() != 4) {
        return Kind::Unsupported(opcode.to_string());
    }
    Kind::Misc(MiscOp::Video(VideoOp {
        op,
        sd: types[0].is_signed(),
        sa: types[1].is_signed(),
        sb: types[2].is_signed(),
        sat: mods.contains(&"sat"),
        op2,
    }))
}

/// `vadd2` … `vmax4` (see [`SimdOp`]); other video instructions are unsupported.
fn simd(opcode: &str, base: &str, mods: &[&str], types: &[PtxType]) -> Kind {
    if matches!(base, "vadd" | "vsub" | "vabsdiff" | "vmin" | "vmax") {
        return video(opcode, base, mods, types);
    }
    const OPS: [&str; 6] = ["vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax"];
    let (name, lanes) = match base.strip_suffix('4') {
        Some(n) => (n, 4),
        None => match base.strip_suffix('2') {
            Some(n) => (n, 2),
            None => return Kind::Unsupported(opcode.to_string()),
        },
    };
    let op = match OPS.iter().position(|o| *o == name) {
        Some(i) => i as u8,
        None => return Kind::Unsupported(opcode.to_string()),
    };
    let signed = |i: usize| types.get(i).is_some_and(|t| t.is_signed());
    if types.len() != 3 || mods.iter().any(|m| matches!(*m, "min" | "max")) {
        // Secondary .min/.max operations: not modelled.
        return Kind::Unsupported(opcode.to_string());
    }
    Kind::Misc(MiscOp::Simd(SimdOp {
        op,
        lanes,
        sd: signed(0),
        sa: signed(1),
        sb: signed(2),
        sat: mods.contains(&"sat"),
        add: mods.contains(&"add"),
        relu: false,
    }))
}
