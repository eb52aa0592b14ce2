//! The tokenizer, and the parser's token-level helpers (peek, expect, skip, declare).

use super::*;

impl Parser {
    pub(super) fn new(toks: Vec<Token>) -> Parser {
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
    pub(super) fn line(&self) -> usize {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map(|t| t.line)
            .unwrap_or(0)
    }
    pub(super) fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.t)
    }
    pub(super) fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k).map(|t| &t.t)
    }
    pub(super) fn next(&mut self) -> Result<Tok, PtxError> {
        match self.toks.get(self.pos) {
            Some(t) => {
                self.pos += 1;
                Ok(t.t.clone())
            }
            None => perr(self.line(), "unexpected end of input"),
        }
    }
    pub(super) fn is_p(&self, c: char) -> bool {
        self.peek() == Some(&Tok::P(c))
    }
    pub(super) fn eat_p(&mut self, c: char) -> bool {
        if self.is_p(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    pub(super) fn expect_p(&mut self, c: char) -> Result<(), PtxError> {
        if self.eat_p(c) {
            Ok(())
        } else {
            perr(
                self.line(),
                format!("expected '{}', found {:?}", c, self.peek()),
            )
        }
    }
    pub(super) fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(x)) if x == s)
    }
    pub(super) fn ident(&mut self) -> Result<String, PtxError> {
        match self.next()? {
            Tok::Ident(s) => Ok(s),
            t => perr(self.line(), format!("expected identifier, found {:?}", t)),
        }
    }
    pub(super) fn number(&mut self) -> Result<i64, PtxError> {
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
    pub(super) fn skip_line(&mut self, line: usize) {
        while let Some(t) = self.toks.get(self.pos) {
            if t.line != line {
                break;
            }
            self.pos += 1;
        }
    }
    pub(super) fn skip_to_semi(&mut self) {
        while let Some(t) = self.peek().cloned() {
            self.pos += 1;
            if t == Tok::P(';') {
                break;
            }
        }
    }
    pub(super) fn skip_braces(&mut self) -> Result<(), PtxError> {
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

    pub(super) fn declare(&mut self, name: String, n: Name) {
        self.scope_gen += 1;
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name, n);
        } else {
            self.module_names.insert(name, n);
        }
    }
}

pub(super) fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$' || c == '%' || c == '.'
}
pub(super) fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%' || c == '.' || c == ':'
}

pub(super) fn tokenize(src: &str) -> Result<Vec<Token>, PtxError> {
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
