//! The continuation state carried through the `macro_rules!` callbacks (see `docs/COMPOSITION.md`).
//!
//! Token format (everything after `__prism_resume! {`):
//!
//! ```text
//! @dep extern|local|kernel [$crate] "crate_name" { attr } { fn item }   // prepended by the callee's macro
//! @root kernel|device { attr } { fn item }                  // the function whose expansion is in progress
//! @done [ { extern|local [$crate] "crate_name" { attr } { item } [ via path ] } .. ]
//! @alias [ "alias" "crate_name" .. ]                        // `alias::f` paths seen so far and their crates
//! @pending [ { "key" "alias" [ macro path ] } .. ]          // the head is the request in flight
//! ```
//!
//! The `$crate` token tree is kept exactly as received: it is how a dependency's own callees are reached
//! from the caller's crate (`$crate::g!`).

use proc_macro2::{Delimiter, Group, Literal, Span, TokenStream, TokenTree};
use quote::{quote, ToTokens};

/// Where a delivered device function lives.
#[derive(Clone, Debug)]
pub enum Origin {
    /// Another crate; the tokens are that crate's `$crate`.
    Extern(TokenStream),
    /// The crate being compiled (through the function's callback macro, `name!`, in textual scope).
    Local,
    /// Not a device function: the name is a `#[prism_kernel]` (its callback macro only says so, so that a
    /// call of a kernel is reported as such).
    Kernel,
}

/// A device function's tokens as its macro delivered them.
#[derive(Clone, Debug)]
pub struct DepTokens {
    pub origin: Origin,
    /// `CARGO_CRATE_NAME` of the crate that defined it.
    pub crate_name: String,
    pub attr: TokenStream,
    pub item: TokenStream,
    /// The macro path through which it was requested (its last token's span is the caller's call).
    pub via: TokenStream,
}

impl DepTokens {
    /// Span of the call that first requested this function.
    pub fn call_span(&self) -> Span {
        last_span(&self.via)
    }
}

/// A request for a device function's tokens.
#[derive(Clone, Debug)]
pub struct Pending {
    /// Identity used to avoid asking twice: `crate::name`, or `@alias::name` while the alias is unresolved.
    pub key: String,
    /// The first path segment for `alias::f` calls (so the alias's crate can be recorded), else empty.
    pub alias: String,
    /// The macro path, without `!` (e.g. `prism_kernels::warp_load`).
    pub path: TokenStream,
}

/// The whole continuation.
#[derive(Clone, Debug)]
pub struct State {
    /// How the root function's crate names the macros (`::prism_macros`, `::prism::__macros`): the
    /// dependencies' callback macros, written in their own crates, invoke `__prism_resume!` through it.
    pub macros: TokenStream,
    pub root_is_kernel: bool,
    pub root_attr: TokenStream,
    pub root_item: TokenStream,
    pub done: Vec<DepTokens>,
    pub aliases: Vec<(String, String)>,
    pub pending: Vec<Pending>,
}

pub fn last_span(ts: &TokenStream) -> Span {
    ts.clone()
        .into_iter()
        .last()
        .map(|t| t.span())
        .unwrap_or_else(Span::call_site)
}

fn lit(s: &str) -> Literal {
    Literal::string(s)
}

fn brace(ts: TokenStream) -> Group {
    Group::new(Delimiter::Brace, ts)
}

fn bracket(ts: TokenStream) -> Group {
    Group::new(Delimiter::Bracket, ts)
}

impl Origin {
    fn to_tokens(&self) -> TokenStream {
        match self {
            Origin::Extern(c) => {
                let g = bracket(c.clone());
                quote!(extern #g)
            }
            Origin::Local => {
                let g = bracket(TokenStream::new());
                quote!(local #g)
            }
            Origin::Kernel => {
                let g = bracket(TokenStream::new());
                quote!(kernel #g)
            }
        }
    }
}

impl State {
    /// The state's tokens (without any `@dep` header).
    pub fn to_tokens(&self) -> TokenStream {
        let kind = if self.root_is_kernel {
            quote!(kernel)
        } else {
            quote!(device)
        };
        let ra = brace(self.root_attr.clone());
        let ri = brace(self.root_item.clone());
        let mut done = TokenStream::new();
        for d in &self.done {
            let o = d.origin.to_tokens();
            let c = lit(&d.crate_name);
            let a = brace(d.attr.clone());
            let i = brace(d.item.clone());
            let v = bracket(d.via.clone());
            brace(quote!(#o #c #a #i #v)).to_tokens(&mut done);
        }
        let mut aliases = TokenStream::new();
        for (a, c) in &self.aliases {
            let (a, c) = (lit(a), lit(c));
            aliases.extend(quote!(#a #c));
        }
        let mut pending = TokenStream::new();
        for p in &self.pending {
            let (k, a) = (lit(&p.key), lit(&p.alias));
            let path = bracket(p.path.clone());
            brace(quote!(#k #a #path)).to_tokens(&mut pending);
        }
        let (done, aliases, pending) = (bracket(done), bracket(aliases), bracket(pending));
        let macros = bracket(self.macros.clone());
        quote!(@root #macros #kind #ra #ri @done #done @alias #aliases @pending #pending)
    }
}

/// A cursor over a token stream with small typed readers. Errors are strings: malformed state is an
/// internal error (the state is only ever written by this crate).
struct Cursor {
    toks: Vec<TokenTree>,
    pos: usize,
}

impl Cursor {
    fn new(ts: TokenStream) -> Self {
        Cursor {
            toks: ts.into_iter().collect(),
            pos: 0,
        }
    }
    fn next(&mut self) -> Result<TokenTree, String> {
        let t = self
            .toks
            .get(self.pos)
            .cloned()
            .ok_or("unexpected end of the continuation state")?;
        self.pos += 1;
        Ok(t)
    }
    fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }
    fn peek_punct(&self, c: char) -> bool {
        matches!(self.toks.get(self.pos), Some(TokenTree::Punct(p)) if p.as_char() == c)
    }
    fn marker(&mut self, name: &str) -> Result<(), String> {
        match (self.next()?, self.next()?) {
            (TokenTree::Punct(p), TokenTree::Ident(i)) if p.as_char() == '@' && i == name => Ok(()),
            (a, b) => Err(format!("expected `@{name}`, found `{a} {b}`")),
        }
    }
    fn ident(&mut self) -> Result<String, String> {
        match self.next()? {
            TokenTree::Ident(i) => Ok(i.to_string()),
            t => Err(format!("expected an identifier, found `{t}`")),
        }
    }
    fn group(&mut self, d: Delimiter) -> Result<TokenStream, String> {
        match self.next()? {
            TokenTree::Group(g) if g.delimiter() == d => Ok(g.stream()),
            t => Err(format!("expected a {d:?} group, found `{t}`")),
        }
    }
    fn string(&mut self) -> Result<String, String> {
        match self.next()? {
            TokenTree::Literal(l) => match syn::Lit::new(l) {
                syn::Lit::Str(s) => Ok(s.value()),
                _ => Err("expected a string literal".into()),
            },
            t => Err(format!("expected a string literal, found `{t}`")),
        }
    }
}

fn parse_origin(c: &mut Cursor) -> Result<Origin, String> {
    let kind = c.ident()?;
    let krate = c.group(Delimiter::Bracket)?;
    match kind.as_str() {
        "extern" => Ok(Origin::Extern(krate)),
        "local" => Ok(Origin::Local),
        "kernel" => Ok(Origin::Kernel),
        k => Err(format!("unknown origin `{k}`")),
    }
}

/// Parses `@dep ..` (optional) followed by the state.
pub fn parse(input: TokenStream) -> Result<(Option<DepTokens>, State), String> {
    let mut c = Cursor::new(input);
    let mut dep = None;
    if c.peek_punct('@') {
        let save = c.pos;
        if c.marker("dep").is_ok() {
            let origin = parse_origin(&mut c)?;
            let crate_name = c.string()?;
            let attr = c.group(Delimiter::Brace)?;
            let item = c.group(Delimiter::Brace)?;
            dep = Some(DepTokens {
                origin,
                crate_name,
                attr,
                item,
                via: TokenStream::new(),
            });
        } else {
            c.pos = save;
        }
    }
    c.marker("root")?;
    let macros = c.group(Delimiter::Bracket)?;
    let root_is_kernel = match c.ident()?.as_str() {
        "kernel" => true,
        "device" => false,
        k => return Err(format!("unknown root kind `{k}`")),
    };
    let root_attr = c.group(Delimiter::Brace)?;
    let root_item = c.group(Delimiter::Brace)?;
    c.marker("done")?;
    let mut done = Vec::new();
    let mut dc = Cursor::new(c.group(Delimiter::Bracket)?);
    while !dc.at_end() {
        let mut e = Cursor::new(dc.group(Delimiter::Brace)?);
        let origin = parse_origin(&mut e)?;
        let crate_name = e.string()?;
        let attr = e.group(Delimiter::Brace)?;
        let item = e.group(Delimiter::Brace)?;
        let via = e.group(Delimiter::Bracket)?;
        done.push(DepTokens {
            origin,
            crate_name,
            attr,
            item,
            via,
        });
    }
    c.marker("alias")?;
    let mut aliases = Vec::new();
    let mut ac = Cursor::new(c.group(Delimiter::Bracket)?);
    while !ac.at_end() {
        let a = ac.string()?;
        let k = ac.string()?;
        aliases.push((a, k));
    }
    c.marker("pending")?;
    let mut pending = Vec::new();
    let mut pc = Cursor::new(c.group(Delimiter::Bracket)?);
    while !pc.at_end() {
        let mut e = Cursor::new(pc.group(Delimiter::Brace)?);
        let key = e.string()?;
        let alias = e.string()?;
        let path = e.group(Delimiter::Bracket)?;
        pending.push(Pending { key, alias, path });
    }
    if !c.at_end() {
        return Err("trailing tokens after the continuation state".into());
    }
    Ok((
        dep,
        State {
            macros,
            root_is_kernel,
            root_attr,
            root_item,
            done,
            aliases,
            pending,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let st = State {
            macros: quote!(::prism_macros),
            root_is_kernel: true,
            root_attr: quote!(requires(grid[1])),
            root_item: quote!(
                fn k() {}
            ),
            done: vec![DepTokens {
                origin: Origin::Local,
                crate_name: "c".into(),
                attr: quote!(requires(thread[1])),
                item: quote!(
                    fn g() {}
                ),
                via: quote!(g),
            }],
            aliases: vec![("pk".into(), "prism_kernels".into())],
            pending: vec![Pending {
                key: "@pk::f".into(),
                alias: "pk".into(),
                path: quote!(pk::f),
            }],
        };
        let dep = quote!(@dep extern [krate] "x" { requires(thread[32]) } { fn f() {} });
        let mut ts = dep;
        ts.extend(st.to_tokens());
        let (d, s) = parse(ts).expect("parses");
        let d = d.expect("dep");
        assert_eq!(d.crate_name, "x");
        assert!(matches!(d.origin, Origin::Extern(_)));
        assert!(s.root_is_kernel);
        assert_eq!(s.done.len(), 1);
        assert_eq!(s.done[0].via.to_string(), "g");
        assert_eq!(
            s.aliases,
            vec![("pk".to_string(), "prism_kernels".to_string())]
        );
        assert_eq!(s.pending[0].key, "@pk::f");
        assert_eq!(s.pending[0].path.to_string(), "pk :: f");
        // Without a dep header.
        let (d, s2) = parse(s.to_tokens()).expect("parses");
        assert!(d.is_none());
        assert_eq!(s2.to_tokens().to_string(), s.to_tokens().to_string());
    }

    #[test]
    fn malformed_is_an_error() {
        assert!(parse(quote!(@root kernel)).is_err());
        assert!(parse(quote!(@bogus)).is_err());
        assert!(parse(TokenStream::new()).is_err());
    }
}
