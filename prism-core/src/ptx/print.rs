//! The printer: [`Module`] → PTX text, in one layout (nvcc's: instructions indented by a tab, labels at
//! column 0, a blank line between groups of module items and after a body's declarations). Whatever it
//! prints, [`super::parse`] reads back to an equal model.

use std::fmt::{self, Display, Formatter, Write};

use super::model::*;

impl Display for Module {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let mut prev: Option<u8> = None;
        for item in &self.items {
            let group = match item {
                Item::Directive(_) => 0,
                Item::Var(v) if v.linkage.iter().any(|l| l == ".extern") => 1,
                Item::Var(_) => 2,
                Item::Raw(_) => 3,
                Item::Func(_) => 4,
            };
            if prev.is_some_and(|p| p != group || group == 4) {
                f.write_char('\n')?;
            }
            prev = Some(group);
            match item {
                Item::Directive(d) => writeln!(f, "{d}")?,
                Item::Var(v) => writeln!(f, "{v};")?,
                Item::Func(func) => write!(f, "{func}")?,
                Item::Raw(r) => writeln!(f, "{}", r.text)?,
            }
        }
        Ok(())
    }
}

impl Display for Directive {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.args.is_empty() {
            write!(f, " {}", self.args)?;
        }
        Ok(())
    }
}

/// A declaration without its `;` (parameters are separated by commas instead).
impl Display for VarDecl {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for l in &self.linkage {
            write!(f, "{l} ")?;
        }
        f.write_str(self.space.directive())?;
        if let Some(a) = self.align {
            write!(f, " .align {a}")?;
        }
        for q in &self.quals {
            write!(f, " {q}")?;
        }
        write!(f, " {}", self.name)?;
        for d in &self.dims {
            match d {
                Some(n) => write!(f, "[{n}]")?,
                None => f.write_str("[]")?,
            }
        }
        if let Some(init) = &self.init {
            write!(f, " = {init}")?;
        }
        Ok(())
    }
}

impl Display for Init {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Init::Value(v) => write!(f, "{v}"),
            Init::Addr(a) => write!(f, "{a}"),
            Init::List(items) => {
                f.write_char('{')?;
                comma_list(f, items)?;
                f.write_char('}')
            }
        }
    }
}

impl Display for AddrInit {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(m) = &self.mask {
            write!(f, "{m}(")?;
        }
        if self.generic {
            write!(f, "generic({})", self.name)?;
        } else {
            f.write_str(&self.name)?;
        }
        if self.offset != 0 {
            write!(f, "{:+}", self.offset)?;
        }
        if self.mask.is_some() {
            f.write_char(')')?;
        }
        Ok(())
    }
}

fn comma_list<T: Display>(f: &mut Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{x}")?;
    }
    Ok(())
}

fn param_block(f: &mut Formatter<'_>, params: &[VarDecl]) -> fmt::Result {
    if params.is_empty() {
        return f.write_str("()");
    }
    f.write_str("(\n")?;
    for (i, p) in params.iter().enumerate() {
        let sep = if i + 1 < params.len() { "," } else { "" };
        writeln!(f, "\t{p}{sep}")?;
    }
    f.write_char(')')
}

impl Display for Function {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for l in &self.linkage {
            write!(f, "{l} ")?;
        }
        f.write_str(if self.entry { ".entry" } else { ".func" })?;
        if let Some(rets) = &self.rets {
            f.write_str(" (")?;
            comma_list(f, rets)?;
            f.write_char(')')?;
        }
        write!(f, " {}", self.name)?;
        if let Some(params) = &self.params {
            param_block(f, params)?;
        }
        f.write_char('\n')?;
        for p in &self.perf {
            f.write_str(&p.name)?;
            if !p.args.is_empty() {
                f.write_char(' ')?;
                comma_list(f, &p.args)?;
            }
            f.write_char('\n')?;
        }
        match &self.body {
            None => f.write_str(";\n"),
            Some(body) => {
                f.write_str("{\n")?;
                stmts(f, body, 1)?;
                f.write_str("}\n")
            }
        }
    }
}

fn indent(f: &mut Formatter<'_>, depth: usize) -> fmt::Result {
    for _ in 0..depth {
        f.write_char('\t')?;
    }
    Ok(())
}

fn stmts(f: &mut Formatter<'_>, body: &[Stmt], depth: usize) -> fmt::Result {
    for (i, s) in body.iter().enumerate() {
        match s {
            Stmt::Label(l) => writeln!(f, "{}:", l.name)?,
            Stmt::Block(b) => {
                indent(f, depth)?;
                f.write_str("{\n")?;
                stmts(f, &b.stmts, depth + 1)?;
                indent(f, depth)?;
                f.write_str("}\n")?;
            }
            Stmt::Reg(r) => {
                indent(f, depth)?;
                writeln!(f, "{r}")?;
            }
            Stmt::Var(v) => {
                indent(f, depth)?;
                writeln!(f, "{v};")?;
            }
            Stmt::Instr(ins) => {
                indent(f, depth)?;
                writeln!(f, "{ins}")?;
            }
            Stmt::Raw(r) => {
                indent(f, depth)?;
                writeln!(f, "{}", r.text)?;
            }
        }
        // The top level's declarations end with a blank line.
        let decl = |s: &Stmt| matches!(s, Stmt::Reg(_) | Stmt::Var(_));
        if depth == 1 && decl(s) && body.get(i + 1).is_some_and(|n| !decl(n)) {
            f.write_char('\n')?;
        }
    }
    Ok(())
}

impl Display for RegDecl {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(".reg")?;
        for q in &self.quals {
            write!(f, " {q}")?;
        }
        for (i, n) in self.names.iter().enumerate() {
            f.write_str(if i == 0 { " " } else { ", " })?;
            f.write_str(&n.name)?;
            if let Some(r) = n.range {
                write!(f, "<{r}>")?;
            }
        }
        f.write_char(';')
    }
}

/// An instruction with its `;`.
impl Display for Instruction {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(g) = &self.guard {
            let bang = if g.negated { "!" } else { "" };
            write!(f, "@{bang}{} ", g.pred)?;
        }
        f.write_str(&self.opcode)?;
        if !self.operands.is_empty() {
            f.write_char(' ')?;
            comma_list(f, &self.operands)?;
        }
        f.write_char(';')
    }
}

impl Display for Address {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match (&self.base, self.offset) {
            (Some(b), Some(o)) if o < 0 => write!(f, "{b}-{}", o.unsigned_abs()),
            (Some(b), Some(o)) => write!(f, "{b}+{o}"),
            (Some(b), None) => f.write_str(b),
            (None, Some(o)) => write!(f, "{o}"),
            (None, None) => Ok(()),
        }
    }
}

impl Display for Operand {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Name(n) => f.write_str(n),
            Operand::NotName(n) => write!(f, "!{n}"),
            Operand::Int(v) => write!(f, "{v}"),
            Operand::F32Bits(b) => write!(f, "0f{b:08X}"),
            Operand::F64Bits(b) => write!(f, "0d{b:016X}"),
            // `{:?}` is the shortest text that reads back to the same value; infinities as a literal
            // that overflows to them (NaN cannot be written in decimal PTX).
            Operand::Float(v) if v.is_infinite() => {
                f.write_str(if *v < 0.0 { "-1e999" } else { "1e999" })
            }
            Operand::Float(v) => write!(f, "{v:?}"),
            Operand::Addr(a) => write!(f, "[{a}]"),
            Operand::Tensor(a, c) => write!(f, "[{a}, {c}]"),
            // A negative offset is written as its bit pattern: `sym+` must be followed by a number.
            Operand::SymOffset(s, v) if *v < 0 => write!(f, "{s}+{:#x}", *v as u64),
            Operand::SymOffset(s, v) => write!(f, "{s}+{v}"),
            Operand::Vector(v) => {
                f.write_char('{')?;
                comma_list(f, v)?;
                f.write_char('}')
            }
            Operand::List(v) => {
                f.write_char('(')?;
                comma_list(f, v)?;
                f.write_char(')')
            }
            Operand::Pair(a, b) => write!(f, "{a}|{b}"),
            Operand::Sink => f.write_char('_'),
        }
    }
}
