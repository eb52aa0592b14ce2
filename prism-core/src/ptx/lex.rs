//! The tokenizer: identifiers (dotted words, `%` registers, `$` labels, `::` state-space suffixes),
//! numbers (integers, `0f`/`0d` float bits, decimals with exponents), strings and punctuation; comments
//! dropped. Each token keeps its line and byte range, so verbatim statements can be cut from the source.

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    Num(String),
    Str(String),
    P(char),
}

#[derive(Clone, Debug)]
pub(super) struct Token {
    pub t: Tok,
    pub line: u32,
    pub start: usize,
    pub end: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$' || c == '%' || c == '.'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%' || c == '.' || c == ':'
}

/// A declaration directive run together with its qualifiers (`.reg.b32`, `.shared.align`) as its
/// dotted words, or `None`.
fn split_declaration(word: &str) -> Option<Vec<&str>> {
    const DECL: [&str; 6] = [".reg", ".local", ".shared", ".param", ".global", ".const"];
    let head = DECL.iter().find(|d| {
        word.len() > d.len() && word.starts_with(**d) && word.as_bytes()[d.len()] == b'.'
    })?;
    let mut parts = vec![&word[..head.len()]];
    let mut rest = &word[head.len()..];
    while !rest.is_empty() {
        let end = rest[1..].find('.').map_or(rest.len(), |k| k + 1);
        parts.push(&rest[..end]);
        rest = &rest[end..];
    }
    Some(parts)
}

/// Splits `src` into tokens. Never fails: an unknown character is a punctuation token the parser rejects.
pub(super) fn tokenize(src: &str) -> Vec<Token> {
    let b: Vec<(usize, char)> = src.char_indices().collect();
    let at = |i: usize| b.get(i).map(|x| x.1);
    let off = |i: usize| b.get(i).map(|x| x.0).unwrap_or(src.len());
    let mut i = 0;
    let mut line = 1u32;
    let mut out = Vec::new();
    while let Some(c) = at(i) {
        let start = i;
        if c == '\n' {
            line += 1;
            i += 1;
            continue;
        } else if c.is_whitespace() {
            i += 1;
            continue;
        } else if c == '/' && at(i + 1) == Some('/') {
            while at(i).is_some_and(|c| c != '\n') {
                i += 1;
            }
            continue;
        } else if c == '/' && at(i + 1) == Some('*') {
            i += 2;
            while i < b.len() && !(at(i) == Some('*') && at(i + 1) == Some('/')) {
                if at(i) == Some('\n') {
                    line += 1;
                }
                i += 1;
            }
            i += 2;
            continue;
        }
        let first_line = line;
        let t = if c == '"' {
            i += 1;
            while at(i).is_some_and(|c| c != '"') {
                if at(i) == Some('\n') {
                    line += 1;
                }
                i += 1;
            }
            let s: String = b[start + 1..i.min(b.len())].iter().map(|x| x.1).collect();
            i += 1;
            Tok::Str(s)
        } else if c.is_ascii_digit() {
            while let Some(d) = at(i) {
                if !(d.is_ascii_alphanumeric() || d == '.') {
                    break;
                }
                // An exponent's sign belongs to a decimal number (not to `0x…`, `0f…`, `0d…`).
                if (d == 'e' || d == 'E')
                    && matches!(at(i + 1), Some('-' | '+'))
                    && !b[start..i]
                        .iter()
                        .any(|x| matches!(x.1, 'x' | 'X' | 'f' | 'd'))
                {
                    i += 2;
                    continue;
                }
                i += 1;
            }
            Tok::Num(b[start..i].iter().map(|x| x.1).collect())
        } else if is_ident_start(c) {
            i += 1;
            while let Some(d) = at(i) {
                if !is_ident_char(d) {
                    break;
                }
                // `::` is part of names like `shared::cta`; a single ':' ends a label.
                if d == ':' {
                    if at(i + 1) == Some(':') {
                        i += 2;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            let word: String = b[start..i].iter().map(|x| x.1).collect();
            // `.reg.b32 t;` (cuda_fp16.hpp's inline asm writes declarations without the space): ptxas
            // reads the directive and its qualifiers as separate words, so the tokens are split here.
            if let Some(parts) = split_declaration(&word) {
                let mut o = off(start);
                for p in parts {
                    out.push(Token {
                        t: Tok::Ident(p.to_string()),
                        line: first_line,
                        start: o,
                        end: o + p.len(),
                    });
                    o += p.len();
                }
                continue;
            }
            Tok::Ident(word)
        } else {
            i += 1;
            Tok::P(c)
        };
        out.push(Token {
            t,
            line: first_line,
            start: off(start),
            end: off(i.min(b.len())),
        });
    }
    out
}

/// An integer literal: decimal, `0x` hex, `0b` binary, leading-zero octal, optional `U` suffix; values
/// above `i64::MAX` wrap (PTX integers are bit patterns).
pub fn parse_int(s: &str) -> Option<i64> {
    let s = s
        .strip_suffix('U')
        .or_else(|| s.strip_suffix('u'))
        .unwrap_or(s);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_run_together_with_their_qualifiers_split() {
        let src = "{.reg.b32 t; .reg.v2.f16 h; .shared::cta .shared.align}";
        let words: Vec<String> = tokenize(src)
            .into_iter()
            .filter_map(|t| match t.t {
                Tok::Ident(s) => Some(s),
                _ => None,
            })
            .collect();
        assert_eq!(
            words,
            [
                ".reg",
                ".b32",
                "t",
                ".reg",
                ".v2",
                ".f16",
                "h",
                ".shared::cta",
                ".shared",
                ".align"
            ]
        );
        let t = tokenize(".reg.b32 t;");
        assert_eq!(
            (t[1].start, t[1].end),
            (4, 8),
            "the split words keep their ranges"
        );
    }

    #[test]
    fn tokens_keep_lines_and_ranges() {
        let src = "ld.shared::cta.u32 %r1, [x+4]; // c\n$L__1: 1.5e-3 0f3F800000";
        let t = tokenize(src);
        assert_eq!(t[0].t, Tok::Ident("ld.shared::cta.u32".into()));
        assert_eq!(&src[t[0].start..t[0].end], "ld.shared::cta.u32");
        let label = t
            .iter()
            .find(|x| x.t == Tok::Ident("$L__1".into()))
            .unwrap();
        assert_eq!(label.line, 2);
        assert!(t.iter().any(|x| x.t == Tok::Num("1.5e-3".into())));
        assert!(t.iter().any(|x| x.t == Tok::Num("0f3F800000".into())));
    }

    #[test]
    fn integers_in_every_radix() {
        assert_eq!(parse_int("0x1f"), Some(31));
        assert_eq!(parse_int("0b101"), Some(5));
        assert_eq!(parse_int("017"), Some(15));
        assert_eq!(parse_int("42U"), Some(42));
        assert_eq!(parse_int("18446744073709551615"), Some(-1));
        assert_eq!(parse_int("1.5"), None);
    }
}
