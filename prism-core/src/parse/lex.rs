//! Token-level helpers: the pre-check that bounds syn's recursion, identifiers, parentheses, and the
//! operator tokens.

use super::*;

/// Rejects token streams that would make syn's recursive-descent parser recurse too deeply: deep delimiter
/// nesting, long runs of punctuation (prefix operators), long `else if` chains, and very long expressions.
pub(super) fn precheck(ts: &TokenStream) -> Result<(), Vec<Diagnostic>> {
    // Explicit stack instead of recursion, so the check itself cannot overflow.
    let mut stack: Vec<proc_macro2::token_stream::IntoIter> = vec![ts.clone().into_iter()];
    let mut punct_run = 0usize;
    let mut puncts_since_semi = 0usize;
    let mut else_count = 0usize;
    let mut prev_else = false;
    while let Some(top) = stack.last_mut() {
        let Some(tt) = top.next() else {
            stack.pop();
            continue;
        };
        let span = tt.span();
        match tt {
            TokenTree::Group(g) => {
                punct_run = 0;
                prev_else = false;
                if stack.len() > MAX_GROUP_DEPTH {
                    return Err(vec![syntax(
                        span,
                        format!("nesting deeper than {MAX_GROUP_DEPTH} levels"),
                    )
                    .help("split the code into device functions")]);
                }
                stack.push(g.stream().into_iter());
            }
            TokenTree::Punct(p) => {
                punct_run += 1;
                puncts_since_semi += 1;
                prev_else = false;
                if p.as_char() == ';' {
                    puncts_since_semi = 0;
                }
                if punct_run > 32 {
                    return Err(vec![syntax(span, "too many operators in a row")]);
                }
                if puncts_since_semi > 2000 {
                    return Err(vec![
                        syntax(span, "expression too long").help("split it with `let` bindings")
                    ]);
                }
            }
            TokenTree::Ident(i) => {
                punct_run = 0;
                if prev_else && i == "if" {
                    else_count += 1;
                    if else_count > MAX_DEPTH {
                        return Err(vec![syntax(
                            span,
                            format!("more than {MAX_DEPTH} `else if` branches"),
                        )]);
                    }
                }
                prev_else = i == "else";
            }
            TokenTree::Literal(_) => {
                punct_run = 0;
                prev_else = false;
            }
        }
    }
    Ok(())
}

/// A name as the program means it: a raw identifier (`r#type`) is the name `type` (Rust's own reading).
pub(super) fn ident(i: &syn::Ident) -> Ident {
    let name = i.to_string();
    Ident {
        name: name.strip_prefix("r#").map(str::to_string).unwrap_or(name),
        span: i.span(),
    }
}

/// The single identifier of a path expression (`x`), if it is one.
pub(super) fn path_ident(e: &syn::Expr) -> Option<&syn::Ident> {
    match e {
        syn::Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => p.path.get_ident(),
        syn::Expr::Paren(p) => path_ident(&p.expr),
        syn::Expr::Group(g) => path_ident(&g.expr),
        _ => None,
    }
}

pub(super) fn strip_paren(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_paren(&p.expr),
        syn::Expr::Group(g) => strip_paren(&g.expr),
        other => other,
    }
}

pub(super) fn single_tail(b: &syn::Block) -> Option<&syn::Expr> {
    match b.stmts.as_slice() {
        [syn::Stmt::Expr(e, None)] => Some(e),
        _ => None,
    }
}

pub(super) fn bin_op(op: &syn::BinOp) -> Option<BinOp> {
    use syn::BinOp as B;
    Some(match op {
        B::Add(_) => BinOp::Add,
        B::Sub(_) => BinOp::Sub,
        B::Mul(_) => BinOp::Mul,
        B::Div(_) => BinOp::Div,
        B::Rem(_) => BinOp::Rem,
        B::And(_) => BinOp::And,
        B::Or(_) => BinOp::Or,
        B::BitXor(_) => BinOp::BitXor,
        B::BitAnd(_) => BinOp::BitAnd,
        B::BitOr(_) => BinOp::BitOr,
        B::Shl(_) => BinOp::Shl,
        B::Shr(_) => BinOp::Shr,
        B::Eq(_) => BinOp::Eq,
        B::Lt(_) => BinOp::Lt,
        B::Le(_) => BinOp::Le,
        B::Ne(_) => BinOp::Ne,
        B::Ge(_) => BinOp::Ge,
        B::Gt(_) => BinOp::Gt,
        _ => return None,
    })
}

pub(super) fn compound_op(op: &syn::BinOp) -> Option<BinOp> {
    use syn::BinOp as B;
    Some(match op {
        B::AddAssign(_) => BinOp::Add,
        B::SubAssign(_) => BinOp::Sub,
        B::MulAssign(_) => BinOp::Mul,
        B::DivAssign(_) => BinOp::Div,
        B::RemAssign(_) => BinOp::Rem,
        B::BitXorAssign(_) => BinOp::BitXor,
        B::BitAndAssign(_) => BinOp::BitAnd,
        B::BitOrAssign(_) => BinOp::BitOr,
        B::ShlAssign(_) => BinOp::Shl,
        B::ShrAssign(_) => BinOp::Shr,
        _ => return None,
    })
}
