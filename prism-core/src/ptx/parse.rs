//! The parser: tokens → [`Module`]. It accepts what the emulator has always accepted (nvcc's PTX,
//! hand-written PTX, ours) and gives nothing meaning: limits, types and names are the consumers' business.
//! Nesting is bounded, so hostile input ends in an error, not a stack overflow.

use super::lex::{parse_int, tokenize, Tok, Token};
use super::model::*;
use super::ParseError;

type R<T> = Result<T, ParseError>;

/// Deepest nesting of blocks, braces and parentheses the parser follows.
const MAX_DEPTH: u32 = 200;

fn perr<T>(line: u32, message: impl Into<String>) -> R<T> {
    Err(ParseError {
        line,
        message: message.into(),
    })
}

pub(super) struct Parser<'s> {
    src: &'s str,
    toks: Vec<Token>,
    pos: usize,
    depth: u32,
}

impl<'s> Parser<'s> {
    pub(super) fn new(src: &'s str) -> Parser<'s> {
        Parser {
            src,
            toks: tokenize(src),
            pos: 0,
            depth: 0,
        }
    }

    // ----- token helpers

    fn line(&self) -> u32 {
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
    fn next(&mut self) -> R<Tok> {
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
        let yes = self.is_p(c);
        if yes {
            self.pos += 1;
        }
        yes
    }
    fn expect_p(&mut self, c: char) -> R<()> {
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
    fn dotted(&self) -> Option<String> {
        match self.peek() {
            Some(Tok::Ident(s)) if s.starts_with('.') => Some(s.clone()),
            _ => None,
        }
    }
    fn ident(&mut self) -> R<String> {
        match self.next()? {
            Tok::Ident(s) => Ok(s),
            t => perr(self.line(), format!("expected identifier, found {:?}", t)),
        }
    }
    fn number(&mut self) -> R<i64> {
        let neg = self.eat_p('-');
        match self.next()? {
            Tok::Num(s) => {
                let v = parse_int(&s)
                    .ok_or_else(|| ParseError::new(self.line(), format!("bad integer '{}'", s)))?;
                Ok(if neg { v.wrapping_neg() } else { v })
            }
            t => perr(self.line(), format!("expected number, found {:?}", t)),
        }
    }
    fn skip_line(&mut self, line: u32) {
        while self.toks.get(self.pos).is_some_and(|t| t.line == line) {
            self.pos += 1;
        }
    }
    fn skip_to_semi(&mut self) {
        while let Some(t) = self.toks.get(self.pos) {
            self.pos += 1;
            if t.t == Tok::P(';') {
                break;
            }
        }
    }
    /// The source text of the tokens `start..self.pos`.
    fn text_from(&self, start: usize) -> String {
        match (
            self.toks.get(start),
            self.pos.checked_sub(1).and_then(|e| self.toks.get(e)),
        ) {
            (Some(a), Some(b)) if self.pos > start => self.src[a.start..b.end].to_string(),
            _ => String::new(),
        }
    }
    fn raw_from(&self, start: usize, line: u32) -> Raw {
        Raw {
            pos: Pos(line),
            text: self.text_from(start),
        }
    }
    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return perr(
                self.line(),
                format!("nested deeper than {MAX_DEPTH} levels"),
            );
        }
        Ok(())
    }

    // ----- module level

    pub(super) fn module(&mut self) -> R<Module> {
        let mut items = Vec::new();
        while let Some(t) = self.peek().cloned() {
            let line = self.line();
            let start = self.pos;
            match t {
                Tok::Ident(s) => match s.as_str() {
                    ".version" | ".target" | ".address_size" | ".file" | ".loc" => {
                        self.pos += 1;
                        let args_start = self.pos;
                        self.skip_line(line);
                        items.push(Item::Directive(Directive {
                            pos: Pos(line),
                            name: s.clone(),
                            args: self.text_from(args_start),
                        }));
                    }
                    ".section" => {
                        self.pos += 1;
                        while !self.is_p('{') && self.peek().is_some() {
                            self.pos += 1;
                        }
                        self.skip_braces()?;
                        items.push(Item::Raw(self.raw_from(start, line)));
                    }
                    ".pragma" => {
                        self.skip_to_semi();
                        items.push(Item::Raw(self.raw_from(start, line)));
                    }
                    _ => items.push(self.module_decl()?),
                },
                Tok::P(';') => self.pos += 1,
                // `@@dwarf` debug lines (old toolchains with -g).
                Tok::P('@') => {
                    self.skip_line(line);
                    items.push(Item::Raw(self.raw_from(start, line)));
                }
                other => {
                    return perr(
                        line,
                        format!("unexpected token at module level: {:?}", other),
                    )
                }
            }
        }
        Ok(Module { items })
    }

    fn skip_braces(&mut self) -> R<()> {
        let mut depth = 0u32;
        loop {
            match self.next()? {
                Tok::P('{') => depth += 1,
                Tok::P('}') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Ok(());
                    }
                }
                _ => {}
            }
        }
    }

    fn linkage(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(s) = self.dotted() {
            if !matches!(s.as_str(), ".visible" | ".weak" | ".common" | ".extern") {
                break;
            }
            out.push(s);
            self.pos += 1;
        }
        out
    }

    fn module_decl(&mut self) -> R<Item> {
        let line = self.line();
        let start = self.pos;
        let linkage = self.linkage();
        let kw = self.ident()?;
        let texture = matches!(self.peek(), Some(Tok::Ident(t)) if matches!(t.as_str(), ".texref" | ".samplerref" | ".surfref"));
        match kw.as_str() {
            ".entry" | ".func" => Ok(Item::Func(self.function(kw == ".entry", linkage, line)?)),
            // Texture/sampler/surface references and `.alias`: kept verbatim, given no meaning.
            ".global" | ".const" if texture => {
                self.skip_to_semi();
                Ok(Item::Raw(self.raw_from(start, line)))
            }
            ".global" | ".const" | ".shared" | ".local" => {
                let space = Space::from_name(&kw).unwrap_or(Space::Global);
                Ok(Item::Var(self.var_decl(space, linkage, line, true)?))
            }
            ".tex" | ".surf" | ".samplerref" | ".texref" | ".surfref" | ".alias" => {
                self.skip_to_semi();
                Ok(Item::Raw(self.raw_from(start, line)))
            }
            _ => perr(line, format!("unexpected module-level directive '{}'", kw)),
        }
    }

    /// `[.align N] qualifiers name dims [= init]`, after the state space. A statement (`statement`)
    /// ends at its `;` (anything between is skipped); a parameter does not.
    fn var_decl(
        &mut self,
        space: Space,
        linkage: Vec<String>,
        line: u32,
        statement: bool,
    ) -> R<VarDecl> {
        let mut align = None;
        let mut quals = Vec::new();
        while let Some(q) = self.dotted() {
            self.pos += 1;
            if q == ".align" {
                align = Some(self.number()?);
            } else {
                quals.push(q);
            }
        }
        let name = self.ident()?;
        let mut dims = Vec::new();
        while self.eat_p('[') {
            if self.eat_p(']') {
                dims.push(None);
                continue;
            }
            dims.push(Some(self.number()?));
            self.expect_p(']')?;
        }
        let mut init = None;
        if statement {
            if self.eat_p('=') {
                init = Some(self.init()?);
            }
            self.skip_to_semi();
        }
        Ok(VarDecl {
            pos: Pos(line),
            linkage,
            space,
            align,
            quals,
            name,
            dims,
            init,
        })
    }

    fn init(&mut self) -> R<Init> {
        self.enter()?;
        let r = if self.eat_p('{') {
            let mut v = Vec::new();
            while !self.eat_p('}') {
                v.push(self.init()?);
                self.eat_p(',');
            }
            Init::List(v)
        } else if let Some(a) = self.addr_init()? {
            Init::Addr(a)
        } else {
            Init::Value(self.operand()?)
        };
        self.depth -= 1;
        Ok(r)
    }

    /// An address initializer, if one starts here: `name`, `generic(name)`, `…+N`, or a mask around one
    /// (`0xFF00(generic(name)+N)`).
    fn addr_init(&mut self) -> R<Option<AddrInit>> {
        let line = self.line();
        if let (Some(Tok::Num(m)), Some(Tok::P('('))) = (self.peek().cloned(), self.peek_at(1)) {
            self.pos += 2;
            let Some(mut a) = self.addr_init()? else {
                return perr(line, format!("expected an address inside the mask {m}(…)"));
            };
            self.expect_p(')')?;
            a.mask = Some(m);
            return Ok(Some(a));
        }
        let (name, generic) = match (self.peek().cloned(), self.peek_at(1)) {
            (Some(Tok::Ident(g)), Some(Tok::P('('))) if g == "generic" => {
                self.pos += 2;
                let n = self.ident()?;
                self.expect_p(')')?;
                (n, true)
            }
            (Some(Tok::Ident(n)), _) if !n.starts_with('.') && !n.starts_with('%') => {
                self.pos += 1;
                (n, false)
            }
            _ => return Ok(None),
        };
        let mut offset = 0i64;
        while self.is_p('+') || self.is_p('-') {
            let neg = self.eat_p('-');
            if !neg {
                self.pos += 1;
            }
            let v = self.number()?;
            offset = offset.wrapping_add(if neg { v.wrapping_neg() } else { v });
        }
        Ok(Some(AddrInit {
            name,
            generic,
            offset,
            mask: None,
        }))
    }

    fn param_list(&mut self) -> R<Vec<VarDecl>> {
        let mut out = Vec::new();
        self.expect_p('(')?;
        while !self.eat_p(')') {
            let line = self.line();
            let kw = self.ident()?;
            if kw != ".param" && kw != ".reg" {
                return perr(self.line(), format!("expected .param, found {}", kw));
            }
            let space = if kw == ".reg" {
                Space::Reg
            } else {
                Space::Param
            };
            out.push(self.var_decl(space, Vec::new(), line, false)?);
            self.eat_p(',');
        }
        Ok(out)
    }

    fn function(&mut self, entry: bool, linkage: Vec<String>, line: u32) -> R<Function> {
        let rets = if !entry && self.is_p('(') {
            Some(self.param_list()?)
        } else {
            None
        };
        let name = self.ident()?;
        let params = if self.is_p('(') {
            Some(self.param_list()?)
        } else {
            None
        };
        let mut perf = Vec::new();
        while let Some(s) = self.dotted() {
            let pos = Pos(self.line());
            self.pos += 1;
            let mut args = Vec::new();
            if s != ".noreturn" {
                while let Some(Tok::Num(_)) = self.peek() {
                    args.push(self.number()?);
                    if !self.eat_p(',') {
                        break;
                    }
                }
            }
            perf.push(PerfDirective { pos, name: s, args });
        }
        let is_extern = linkage.iter().any(|l| l == ".extern");
        let body = if self.eat_p(';') || is_extern && !self.is_p('{') {
            None
        } else {
            self.expect_p('{')?;
            Some(self.stmts(true)?)
        };
        let end = Pos(self
            .pos
            .checked_sub(1)
            .and_then(|e| self.toks.get(e))
            .map_or(line, |t| t.line));
        Ok(Function {
            pos: Pos(line),
            linkage,
            entry,
            rets,
            name,
            params,
            perf,
            body,
            end,
        })
    }

    // ----- bodies

    /// Statements up to the `}` that closes the current block (`in_block`), or to the end of the input.
    pub(super) fn stmts(&mut self, in_block: bool) -> R<Vec<Stmt>> {
        let mut out = Vec::new();
        loop {
            let line = self.line();
            let t = match self.peek().cloned() {
                Some(t) => t,
                None if in_block => return perr(line, "unterminated function body"),
                None => return Ok(out),
            };
            match t {
                Tok::P('{') => {
                    self.pos += 1;
                    self.enter()?;
                    let stmts = self.stmts(true)?;
                    self.depth -= 1;
                    out.push(Stmt::Block(Block {
                        pos: Pos(line),
                        stmts,
                    }));
                }
                Tok::P('}') if in_block => {
                    self.pos += 1;
                    return Ok(out);
                }
                Tok::P('}') => return perr(line, "'}' without a matching '{'"),
                Tok::P(';') => self.pos += 1,
                Tok::Ident(s)
                    if matches!(self.peek_at(1), Some(Tok::P(':'))) && !s.starts_with('.') =>
                {
                    self.pos += 2;
                    out.push(Stmt::Label(Label {
                        pos: Pos(line),
                        name: s,
                    }));
                }
                Tok::Ident(s) if s.starts_with('.') => out.push(self.body_directive(&s, line)?),
                _ => out.push(Stmt::Instr(self.instruction()?)),
            }
        }
    }

    fn body_directive(&mut self, s: &str, line: u32) -> R<Stmt> {
        let start = self.pos;
        self.pos += 1;
        Ok(match s {
            ".loc" | ".file" => {
                self.skip_line(line);
                Stmt::Raw(self.raw_from(start, line))
            }
            ".reg" => {
                let mut quals = Vec::new();
                while let Some(q) = self.dotted() {
                    self.pos += 1;
                    quals.push(q);
                }
                let mut names = Vec::new();
                loop {
                    let name = self.ident()?;
                    let range = if self.eat_p('<') {
                        let n = self.number()?;
                        self.expect_p('>')?;
                        Some(n)
                    } else {
                        None
                    };
                    names.push(RegName { name, range });
                    if !self.eat_p(',') {
                        break;
                    }
                }
                self.skip_to_semi();
                Stmt::Reg(RegDecl {
                    pos: Pos(line),
                    quals,
                    names,
                })
            }
            ".local" | ".param" | ".shared" | ".global" | ".const" => {
                let space = Space::from_name(s).unwrap_or(Space::Local);
                Stmt::Var(self.var_decl(space, Vec::new(), line, true)?)
            }
            ".extern" if self.is_ident(".shared") => {
                self.pos += 1;
                Stmt::Var(self.var_decl(Space::Shared, vec![".extern".into()], line, true)?)
            }
            // `.pragma` and any other directive: the statement, verbatim.
            _ => {
                self.skip_to_semi();
                Stmt::Raw(self.raw_from(start, line))
            }
        })
    }

    fn instruction(&mut self) -> R<Instruction> {
        let line = self.line();
        let mut guard = None;
        if self.eat_p('@') {
            let negated = self.eat_p('!');
            let pred = self.ident()?;
            guard = Some(Guard { negated, pred });
        }
        let opcode = self.ident()?;
        let mut operands = Vec::new();
        loop {
            if self.eat_p(';') {
                break;
            }
            if self.peek().is_none() {
                return perr(line, "missing ';'");
            }
            let op = self.operand()?;
            if self.eat_p('|') {
                let q = self.operand()?;
                operands.push(Operand::Pair(Box::new(op), Box::new(q)));
            } else {
                operands.push(op);
            }
            self.eat_p(',');
        }
        Ok(Instruction {
            pos: Pos(line),
            guard,
            opcode,
            operands,
        })
    }

    // ----- operands

    fn operand(&mut self) -> R<Operand> {
        self.enter()?;
        let r = self.operand_inner();
        self.depth -= 1;
        r
    }

    fn list(&mut self, close: char) -> R<Vec<Operand>> {
        let mut v = Vec::new();
        while !self.eat_p(close) {
            v.push(self.operand()?);
            self.eat_p(',');
        }
        Ok(v)
    }

    fn operand_inner(&mut self) -> R<Operand> {
        let line = self.line();
        if self.eat_p('[') {
            return self.address(line);
        }
        if self.eat_p('{') {
            return Ok(Operand::Vector(self.list('}')?));
        }
        if self.eat_p('(') {
            return Ok(Operand::List(self.list(')')?));
        }
        if self.eat_p('!') {
            return Ok(Operand::NotName(self.ident()?));
        }
        let neg = self.eat_p('-');
        match self.next()? {
            Tok::Ident(s) if s == "_" => Ok(Operand::Sink),
            Tok::Ident(s) => {
                // `sym+N`: an address as an immediate (`mov.u64 %rd1, sym+4`).
                if self.is_p('+') && matches!(self.peek_at(1), Some(Tok::Num(_))) {
                    self.pos += 1;
                    let v = self.number()?;
                    return Ok(Operand::SymOffset(s, v));
                }
                Ok(Operand::Name(s))
            }
            Tok::Num(s) => number_operand(&s, neg, line),
            t => perr(line, format!("unexpected operand token {:?}", t)),
        }
    }

    /// The inside of `[…]` (the `[` is consumed): `base`, `base+N`, `N`, or `[map, {coords}]`.
    fn address(&mut self, line: u32) -> R<Operand> {
        let mut a = Address::default();
        let mut first = true;
        loop {
            if self.eat_p(']') {
                return Ok(Operand::Addr(a));
            }
            if !first && self.eat_p(',') {
                let coords = self.operand()?;
                if !self.eat_p(']') {
                    return perr(line, "expected ']' after tensor coordinates");
                }
                return Ok(Operand::Tensor(a, Box::new(coords)));
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
                    a.base = Some(s);
                }
                Some(Tok::Num(_)) | Some(Tok::P('-')) => {
                    let v = self.number()?;
                    let v = if neg { v.wrapping_neg() } else { v };
                    a.offset = Some(a.offset.unwrap_or(0).wrapping_add(v));
                }
                t => return perr(line, format!("bad address operand {:?}", t)),
            }
        }
    }
}

/// A number token as an operand: `0f…` / `0d…` float bits, an integer, or a decimal float.
fn number_operand(s: &str, neg: bool, line: u32) -> R<Operand> {
    let l = s.to_ascii_lowercase();
    if l.starts_with("0f") && l.len() == 10 {
        let b = u32::from_str_radix(&l[2..], 16)
            .map_err(|_| ParseError::new(line, format!("bad float {}", s)))?;
        Ok(Operand::F32Bits(if neg { b ^ 0x8000_0000 } else { b }))
    } else if l.starts_with("0d") && l.len() == 18 {
        let b = u64::from_str_radix(&l[2..], 16)
            .map_err(|_| ParseError::new(line, format!("bad double {}", s)))?;
        Ok(Operand::F64Bits(if neg { b ^ (1 << 63) } else { b }))
    } else if let Some(v) = parse_int(s) {
        Ok(Operand::Int(if neg { v.wrapping_neg() } else { v }))
    } else if let Ok(f) = s.parse::<f64>() {
        Ok(Operand::Float(if neg { -f } else { f }))
    } else {
        perr(line, format!("bad number '{}'", s))
    }
}
