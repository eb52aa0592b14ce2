//! Values and PTX types: type suffixes, register classes, immediates and their folding, and the
//! coercions between register and immediate values.

use super::*;
use crate::ptx::Operand;

pub(super) fn ptx_ty(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Bool => "pred",
        ScalarType::U32 => "u32",
        ScalarType::I32 => "s32",
        ScalarType::U64 => "u64",
        ScalarType::I64 => "s64",
        ScalarType::F32 => "f32",
        ScalarType::F64 => "f64",
        ScalarType::F16 => "f16",
        ScalarType::BF16 => "bf16",
    }
}

/// Untyped bit width spelling (`b32`), for moves, bit operations and memory.
pub(super) fn bits_ty(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Bool => "pred",
        ScalarType::F16 | ScalarType::BF16 => "b16",
        ScalarType::U32 | ScalarType::I32 | ScalarType::F32 => "b32",
        ScalarType::U64 | ScalarType::I64 | ScalarType::F64 => "b64",
    }
}

/// Memory access type.
pub(super) fn mem_ty(t: ScalarType) -> &'static str {
    match t {
        ScalarType::Bool => "u8",
        ScalarType::F16 | ScalarType::BF16 => "b16",
        _ => ptx_ty(t),
    }
}

pub(super) const REG_CLASSES: [(&str, &str); 6] = [
    ("pred", "%p"),
    ("b16", "%h"),
    ("b32", "%r"),
    ("b64", "%rd"),
    ("f32", "%f"),
    ("f64", "%fd"),
];

pub(super) fn reg_class(t: ScalarType) -> usize {
    match t {
        ScalarType::Bool => 0,
        ScalarType::F16 | ScalarType::BF16 => 1,
        ScalarType::U32 | ScalarType::I32 => 2,
        ScalarType::U64 | ScalarType::I64 => 3,
        ScalarType::F32 => 4,
        ScalarType::F64 => 5,
    }
}

pub(super) fn wrap_int(v: i128, t: ScalarType) -> i128 {
    match t {
        ScalarType::U32 => v as u32 as i128,
        ScalarType::I32 => v as i32 as i128,
        ScalarType::U64 => v as u64 as i128,
        ScalarType::I64 => v as i64 as i128,
        _ => v,
    }
}

/// An immediate of type `t` as PTX text (the model's printing of [`imm_operand`]).
pub(super) fn imm_str(i: Imm, t: ScalarType) -> String {
    imm_operand(i, t).to_string()
}

/// An immediate of type `t` as a PTX-model operand (float types as their bits, bool as 0/1).
pub(super) fn imm_operand(i: Imm, t: ScalarType) -> crate::ptx::Operand {
    use crate::ptx::Operand;
    match (i, t) {
        (Imm::Bool(b), _) => Operand::Int(b as i64),
        (Imm::Int(v), ScalarType::F32) => Operand::F32Bits((v as f32).to_bits()),
        (Imm::Int(v), ScalarType::F64) => Operand::F64Bits((v as f64).to_bits()),
        // Two's complement of the wrapped value: what the text's integer reads back as.
        (Imm::Int(v), _) => Operand::Int(wrap_int(v, t) as i64),
        (Imm::Float(x), ScalarType::F32) => Operand::F32Bits((x as f32).to_bits()),
        (Imm::Float(x), ScalarType::F16) => Operand::Int(f32_to_f16_bits(x as f32) as i64),
        (Imm::Float(x), ScalarType::BF16) => Operand::Int(f32_to_bf16_bits(x as f32) as i64),
        (Imm::Float(x), _) => Operand::F64Bits(x.to_bits()),
    }
}

/// Round-to-nearest-even f32 → IEEE half bits (for folding literals into f16 storage).
pub(super) fn f32_to_f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let mut r = m >> shift;
        let rem = m & ((1 << shift) - 1);
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

pub(super) fn f32_to_bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    ((b.wrapping_add(round)) >> 16) as u16
}

pub(super) fn is_pow2(n: i128) -> bool {
    n > 0 && n & (n - 1) == 0
}

pub(super) fn warp_uniform_persp(p: Perspective) -> bool {
    p.level != Level::Thread || p.n.is_multiple_of(32)
}

pub(super) fn err(rule: &'static str, span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::new(rule, span, msg)
}

/// An input the checker's rule `checker_rule` rejects before the emitter sees it (`tests/emit_nets.rs`
/// gives each such input): reaching this is a compiler bug, an `INTERNAL` error (never a panic).
pub(super) fn bug(checker_rule: &str, span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::new(
        "INTERNAL",
        span,
        format!(
            "bug: {} (the checker's {checker_rule} rule rejects this first)",
            msg.into()
        ),
    )
}

/// Integer comparison type: `lo/ls/hi/hs` take unsigned, the others the value's own type.
pub(super) fn bits_cmp_ty(t: ScalarType, _c: &str) -> &'static str {
    ptx_ty(t)
}

pub(super) fn fold_untyped(op: BinOp, a: &Val, b: &Val, span: Span) -> R<Val> {
    match (a, b) {
        (Val::Imm(x, _), Val::Imm(y, _)) => fold(op, *x, *y, ScalarType::I64)
            .map(|v| match v {
                Val::Imm(i @ Imm::Int(_), _) => Val::Imm(i, None),
                o => o,
            })
            .ok_or_else(|| {
                err(
                    "EMIT-CONST",
                    span,
                    "cannot evaluate this constant expression",
                )
            }),
        // Registers always have a type: two untyped operands are two constants.
        _ => Err(Diagnostic::new(
            "INTERNAL",
            span,
            "bug: untyped operands that are not both constants",
        )),
    }
}

/// Constant folding with the semantics of type `t`; `None` when it must happen at run time (e.g. / 0).
pub(super) fn fold(op: BinOp, x: Imm, y: Imm, t: ScalarType) -> Option<Val> {
    use BinOp::*;
    let b = |v: bool| Some(Val::Imm(Imm::Bool(v), Some(ScalarType::Bool)));
    match (x, y) {
        (Imm::Int(a), Imm::Int(c)) if t.is_int() => {
            let (a, c) = (wrap_int(a, t), wrap_int(c, t));
            let v = match op {
                Add => a + c,
                Sub => a - c,
                Mul => a.checked_mul(c)?,
                Div if c != 0 => a / c,
                Rem if c != 0 => a % c,
                Div | Rem => return None,
                BitAnd => a & c,
                BitOr => a | c,
                BitXor => a ^ c,
                Shl if (0..(t.size() as i128 * 8)).contains(&c) => ((a as u128) << c) as i128,
                Shr if (0..(t.size() as i128 * 8)).contains(&c) => a >> c,
                Shl | Shr => return None,
                Eq => return b(a == c),
                Ne => return b(a != c),
                Lt => return b(a < c),
                Le => return b(a <= c),
                Gt => return b(a > c),
                Ge => return b(a >= c),
                And | Or => return None,
            };
            Some(Val::Imm(Imm::Int(wrap_int(v, t)), Some(t)))
        }
        (Imm::Bool(a), Imm::Bool(c)) => match op {
            And | BitAnd => b(a && c),
            Or | BitOr => b(a || c),
            BitXor | Ne => b(a != c),
            Eq => b(a == c),
            _ => None,
        },
        (x, y) if t == ScalarType::F32 || t == ScalarType::F64 => {
            let f = |i: Imm| match i {
                Imm::Int(v) => v as f64,
                Imm::Float(v) => v,
                Imm::Bool(v) => v as u8 as f64,
            };
            let (a, c) = (f(x), f(y));
            let r = |v: f64| {
                Some(Val::Imm(
                    Imm::Float(if t == ScalarType::F32 {
                        v as f32 as f64
                    } else {
                        v
                    }),
                    Some(t),
                ))
            };
            if t == ScalarType::F32 {
                let (a, c) = (a as f32, c as f32);
                return match op {
                    Add => r((a + c) as f64),
                    Sub => r((a - c) as f64),
                    Mul => r((a * c) as f64),
                    Div => r((a / c) as f64),
                    Rem => r((a % c) as f64),
                    Eq => b(a == c),
                    Ne => b(a != c),
                    Lt => b(a < c),
                    Le => b(a <= c),
                    Gt => b(a > c),
                    Ge => b(a >= c),
                    _ => None,
                };
            }
            match op {
                Add => r(a + c),
                Sub => r(a - c),
                Mul => r(a * c),
                Div => r(a / c),
                Rem => r(a % c),
                Eq => b(a == c),
                Ne => b(a != c),
                Lt => b(a < c),
                Le => b(a <= c),
                Gt => b(a > c),
                Ge => b(a >= c),
                _ => None,
            }
        }
        _ => None,
    }
}

impl Em {
    /// Operand text for `v` used as type `t`.
    pub(super) fn op(&self, v: &Val, t: ScalarType) -> String {
        match v {
            Val::Imm(i, _) => imm_str(*i, t),
            Val::Reg(r, _) => r.clone(),
        }
    }

    /// [`Em::op`] as a PTX-model operand.
    pub(super) fn operand(&self, v: &Val, t: ScalarType) -> crate::ptx::Operand {
        match v {
            Val::Imm(i, _) => imm_operand(*i, t),
            Val::Reg(r, _) => crate::ptx::Operand::Name(r.clone()),
        }
    }

    /// `v` in a register of type `t` (immediates are moved in; registers are used as they are).
    pub(super) fn reg(&mut self, v: &Val, t: ScalarType) -> String {
        match v {
            Val::Reg(r, _) => r.clone(),
            Val::Imm(i, _) => {
                let r = self.fresh(t);
                if t == ScalarType::Bool {
                    let b = matches!(i, Imm::Bool(true)) || matches!(i, Imm::Int(x) if *x != 0);
                    self.line(format!("setp.ne.u32 {r}, {}, 0;", b as u32));
                } else {
                    let mov = format!("mov.{}", bits_ty(t));
                    self.emit(&mov, vec![Operand::Name(r.clone()), imm_operand(*i, t)]);
                }
                r
            }
        }
    }

    /// Copies `v` into register `dst` of type `t`.
    pub(super) fn mov_into(&mut self, dst: &str, v: &Val, t: ScalarType) {
        if t == ScalarType::Bool {
            match v {
                Val::Reg(r, _) => self.line(format!("mov.pred {dst}, {r};")),
                Val::Imm(i, _) => {
                    let b = matches!(i, Imm::Bool(true));
                    self.line(format!("setp.ne.u32 {dst}, {}, 0;", b as u32));
                }
            }
        } else {
            let o = self.operand(v, t);
            if !matches!(&o, Operand::Name(n) if n == dst) {
                let mov = format!("mov.{}", bits_ty(t));
                self.emit(&mov, vec![Operand::Name(dst.to_string()), o]);
            }
        }
    }

    /// Gives an untyped immediate the type `t`; converts typed values of another type the way the checker
    /// allows implicitly (same-width integers reinterpret).
    pub(super) fn coerce(&mut self, v: Val, t: ScalarType, span: Span) -> R<Val> {
        match v.ty() {
            None => Ok(match v {
                // An unsuffixed literal takes its type here: past that type's range it would be stored as
                // an infinity, which the checker's CONST-OVERFLOW forbids for suffixed ones (a folded
                // infinity, `1.0 / 0.0`, stays one).
                Val::Imm(Imm::Float(x), _)
                    if x.is_finite() && crate::consteval::float_literal_overflows(x, t) =>
                {
                    return Err(crate::consteval::float_literal_error(span, t));
                }
                Val::Imm(Imm::Int(x), _) if t.is_float() => Val::Imm(Imm::Float(x as f64), Some(t)),
                Val::Imm(Imm::Int(x), _) => Val::Imm(Imm::Int(wrap_int(x, t)), Some(t)),
                Val::Imm(i, _) => Val::Imm(i, Some(t)),
                r => r,
            }),
            Some(vt) if vt == t => Ok(v),
            Some(vt) if vt.is_int() && t.is_int() && vt.size() == t.size() => Ok(match v {
                Val::Reg(r, _) => Val::Reg(r, t),
                Val::Imm(Imm::Int(x), _) => Val::Imm(Imm::Int(wrap_int(x, t)), Some(t)),
                o => o,
            }),
            Some(vt) => Err(bug(
                "TYPE",
                span,
                format!("expected a value of type {t}, found {vt}"),
            )
            .help(format!("convert explicitly with `as {t}`"))),
        }
    }

    pub(super) fn u32_bin(&mut self, op: &str, a: &Val, b: &Val) -> Val {
        if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
            let x = x as u32;
            let y = y as u32;
            let r = match op {
                "add" => x.wrapping_add(y),
                "sub" => x.wrapping_sub(y),
                "mul" => x.wrapping_mul(y),
                "div" if y != 0 => x / y,
                "rem" if y != 0 => x % y,
                _ => 0,
            };
            return Val::imm_u32(r);
        }
        match (op, b.as_int()) {
            ("add" | "sub", Some(0)) | ("mul" | "div", Some(1)) => return a.clone(),
            ("rem", Some(1)) | ("mul", Some(0)) => return Val::imm_u32(0),
            ("div", Some(y)) if is_pow2(y) => {
                let r = self.fresh(ScalarType::U32);
                let a = self.op(a, ScalarType::U32);
                self.line(format!("shr.u32 {r}, {a}, {};", y.trailing_zeros()));
                return Val::Reg(r, ScalarType::U32);
            }
            ("rem", Some(y)) if is_pow2(y) => {
                let r = self.fresh(ScalarType::U32);
                let a = self.op(a, ScalarType::U32);
                self.line(format!("and.b32 {r}, {a}, {};", y - 1));
                return Val::Reg(r, ScalarType::U32);
            }
            ("mul", Some(y)) if is_pow2(y) => {
                let r = self.fresh(ScalarType::U32);
                let a = self.op(a, ScalarType::U32);
                self.line(format!("shl.b32 {r}, {a}, {};", y.trailing_zeros()));
                return Val::Reg(r, ScalarType::U32);
            }
            _ => {}
        }
        if op == "mul" && a.as_int() == Some(0) {
            return Val::imm_u32(0);
        }
        let r = self.fresh(ScalarType::U32);
        let ins = if op == "mul" {
            "mul.lo.u32".to_string()
        } else {
            format!("{op}.u32")
        };
        let (x, y) = (self.op(a, ScalarType::U32), self.op(b, ScalarType::U32));
        self.line(format!("{ins} {r}, {x}, {y};"));
        Val::Reg(r, ScalarType::U32)
    }
}
