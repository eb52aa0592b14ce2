//! Expressions: literals, paths, indexing, operators, casts, calls, methods, references, arrays, selects,
//! and `asm!`.

use super::*;

impl Cx {
    pub(super) fn asm_macro(
        &mut self,
        mac: &syn::Macro,
        attrs: &[syn::Attribute],
    ) -> PResult<Expr> {
        self.no_attrs(attrs)?;
        let span = mac.span();
        if !mac.path.is_ident("asm") {
            return Err(syntax(span, "macros other than `asm!` are not supported"));
        }
        let args: AsmArgs = mac.parse_body().map_err(|e| {
            syntax(e.span(), format!("in `asm!`: {e}"))
                .help("write `asm!(\"template\", name = in(u32) expr, name = out(u32) place)`")
        })?;
        if args.templates.is_empty() {
            return Err(syntax(span, "`asm!` needs a template string"));
        }
        let template = args
            .templates
            .iter()
            .map(|t| t.value())
            .collect::<Vec<_>>()
            .join("\n");
        let mut operands = Vec::new();
        for (name, dir, ty, e) in &args.operands {
            let ty = self.scalar(ty)?;
            let expr = if *dir == AsmDir::In {
                self.expr(e)?
            } else {
                self.place(e)?
            };
            operands.push(AsmOperand {
                name: ident(name),
                dir: *dir,
                ty,
                expr,
            });
        }
        Ok(Expr {
            kind: ExprKind::Asm { template, operands },
            span,
        })
    }

    /// An assignment target: a variable or an indexed element.
    pub(super) fn place(&mut self, e: &syn::Expr) -> PResult<Expr> {
        match strip_paren(e) {
            syn::Expr::Path(_) | syn::Expr::Index(_) => self.expr(e),
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                Err(syntax(u.span(), "dereference is not supported")
                    .help("write `p[0] = v` for pointers"))
            }
            other => Err(syntax(other.span(), "cannot assign to this")
                .help("assign to a variable `x = ..` or an element `a[i] = ..`")),
        }
    }

    pub(super) fn expr(&mut self, e: &syn::Expr) -> PResult<Expr> {
        self.enter(e.span())?;
        let r = self.expr_inner(e);
        self.leave();
        r
    }

    // Each construct is handled in its own non-inlined function so that the recursive frame stays small (the
    // nesting limit must hold on a 2 MiB test-thread stack in debug builds).
    pub(super) fn expr_inner(&mut self, e: &syn::Expr) -> PResult<Expr> {
        let span = e.span();
        let kind = match e {
            syn::Expr::Paren(p) => return self.expr(&p.expr),
            syn::Expr::Group(g) => return self.expr(&g.expr),
            syn::Expr::Lit(l) => self.e_lit(l)?,
            syn::Expr::Path(_) => e_path(e, &|n| self.type_param(n))?,
            syn::Expr::Index(ix) => self.e_index(ix)?,
            syn::Expr::Unary(u) => self.e_unary(u)?,
            syn::Expr::Binary(b) => self.e_binary(b)?,
            syn::Expr::Cast(c) => self.e_cast(c)?,
            syn::Expr::Call(c) => self.e_call(e, c)?,
            syn::Expr::MethodCall(m) => self.e_method(m)?,
            syn::Expr::Reference(r) => self.e_ref(r)?,
            syn::Expr::Array(a) => self.e_array(a)?,
            syn::Expr::Repeat(r) => self.e_repeat(r)?,
            syn::Expr::If(i) => return self.select(i),
            syn::Expr::Macro(m) => return self.asm_macro(&m.mac, &m.attrs),
            syn::Expr::Block(b) => return self.e_block(b),
            other => return Err(unsupported_expr(other)),
        };
        Ok(Expr { kind, span })
    }

    #[inline(never)]
    pub(super) fn e_lit(&mut self, l: &syn::ExprLit) -> PResult<ExprKind> {
        self.no_attrs(&l.attrs)?;
        Ok(ExprKind::Lit(self.lit(&l.lit)?))
    }

    #[inline(never)]
    pub(super) fn e_index(&mut self, ix: &syn::ExprIndex) -> PResult<ExprKind> {
        let base = Box::new(self.expr(&ix.expr)?);
        let indices = match strip_paren(&ix.index) {
            syn::Expr::Tuple(t) => {
                let mut v = Vec::new();
                for el in &t.elems {
                    v.push(self.expr(el)?);
                }
                if v.is_empty() {
                    return Err(syntax(t.span(), "empty index"));
                }
                v
            }
            other => vec![self.expr(other)?],
        };
        Ok(ExprKind::Index { base, indices })
    }

    #[inline(never)]
    pub(super) fn e_unary(&mut self, u: &syn::ExprUnary) -> PResult<ExprKind> {
        let op = match u.op {
            syn::UnOp::Neg(_) => UnOp::Neg,
            syn::UnOp::Not(_) => UnOp::Not,
            _ => {
                return Err(
                    syntax(u.span(), "dereference is not supported").help("index pointers: `p[i]`")
                )
            }
        };
        Ok(ExprKind::Unary {
            op,
            expr: Box::new(self.expr(&u.expr)?),
        })
    }

    #[inline(never)]
    pub(super) fn e_binary(&mut self, b: &syn::ExprBinary) -> PResult<ExprKind> {
        let Some(op) = bin_op(&b.op) else {
            return Err(syntax(
                b.op.span(),
                "compound assignment is a statement, not an expression",
            )
            .help("write it as its own statement: `x += e;`"));
        };
        Ok(ExprKind::Binary {
            op,
            lhs: Box::new(self.expr(&b.left)?),
            rhs: Box::new(self.expr(&b.right)?),
        })
    }

    #[inline(never)]
    pub(super) fn e_cast(&mut self, c: &syn::ExprCast) -> PResult<ExprKind> {
        let usize_like = matches!(&*c.ty, syn::Type::Path(p) if p.path.is_ident("usize") || p.path.is_ident("isize"));
        let ty = self.scalar(&c.ty).map_err(|d| {
            d.help(if usize_like {
                "there is no `usize`: indices are `u32` (or `u64`) values, so index with the value itself (`x[i]`), or cast to `u32` / `u64`"
            } else {
                "casts go to scalar types: `x as f32`"
            })
        })?;
        // `0 as T` with `T` a type parameter is the literal of type T (`0u32`, `0.0f32`), when it is exact.
        let to_param = matches!(&*c.ty, syn::Type::Path(p) if p.path.get_ident().is_some_and(|i| self.type_param(&i.to_string()).is_some()));
        if to_param {
            if let syn::Expr::Lit(l) = strip_paren(&c.expr) {
                if let Some(lit) = typed_literal(self.lit(&l.lit)?, ty) {
                    return Ok(ExprKind::Lit(lit));
                }
            }
        }
        Ok(ExprKind::Cast {
            expr: Box::new(self.expr(&c.expr)?),
            ty,
        })
    }

    #[inline(never)]
    pub(super) fn e_call(&mut self, e: &syn::Expr, c: &syn::ExprCall) -> PResult<ExprKind> {
        if let Some(n) = construct_name(e) {
            return Err(syntax(
                c.func.span(),
                format!("`{n}` is a statement, not an expression"),
            )
            .help("write it as its own statement ending in `;`"));
        }
        let syn::Expr::Path(p) = strip_paren(&c.func) else {
            return Err(syntax(c.func.span(), "only named functions can be called"));
        };
        if p.qself.is_some() {
            return Err(syntax(
                p.span(),
                "qualified paths `<T as Trait>::f` are not supported",
            ));
        }
        let mut path = Vec::new();
        let mut generics = Vec::new();
        let nseg = p.path.segments.len();
        for (i, seg) in p.path.segments.iter().enumerate() {
            path.push(ident(&seg.ident));
            match &seg.arguments {
                syn::PathArguments::None => {}
                syn::PathArguments::AngleBracketed(ab) if i + 1 == nseg => {
                    for g in &ab.args {
                        generics.push(self.generic_arg(g)?);
                    }
                }
                other => {
                    return Err(syntax(
                        other.span(),
                        "generic arguments only on the function name: `f::<4>(..)`",
                    ))
                }
            }
        }
        let mut args = Vec::new();
        for a in &c.args {
            args.push(self.expr(a)?);
        }
        Ok(ExprKind::Call {
            path,
            generics,
            args,
        })
    }

    #[inline(never)]
    pub(super) fn e_method(&mut self, m: &syn::ExprMethodCall) -> PResult<ExprKind> {
        if m.turbofish.is_some() {
            return Err(syntax(m.span(), "generic method calls are not supported"));
        }
        let recv = Box::new(self.expr(&m.receiver)?);
        let mut args = Vec::new();
        for a in &m.args {
            args.push(self.expr(a)?);
        }
        Ok(ExprKind::MethodCall {
            recv,
            method: ident(&m.method),
            args,
        })
    }

    #[inline(never)]
    pub(super) fn e_ref(&mut self, r: &syn::ExprReference) -> PResult<ExprKind> {
        let inner = strip_paren(&r.expr);
        // `&a` passes a thread-local array; `&p[i]` is the address of a memory element (an `asm!` operand).
        let element =
            matches!(inner, syn::Expr::Index(ix) if path_ident(strip_paren(&ix.expr)).is_some());
        if path_ident(inner).is_none() && !element {
            return Err(syntax(
                r.span(),
                "references are only taken of local array variables (`&a`) or memory elements (`&p[i]`)",
            )
            .help("write `&a` or `&mut a` where `a` is a thread-local array"));
        }
        Ok(ExprKind::Ref {
            mutable: r.mutability.is_some(),
            expr: Box::new(self.expr(inner)?),
        })
    }

    #[inline(never)]
    pub(super) fn e_array(&mut self, a: &syn::ExprArray) -> PResult<ExprKind> {
        let mut v = Vec::new();
        for el in &a.elems {
            v.push(self.expr(el)?);
        }
        if v.is_empty() {
            return Err(syntax(a.span(), "empty arrays are not supported"));
        }
        Ok(ExprKind::ArrayLit(v))
    }

    #[inline(never)]
    pub(super) fn e_repeat(&mut self, r: &syn::ExprRepeat) -> PResult<ExprKind> {
        Ok(ExprKind::ArrayRepeat {
            value: Box::new(self.expr(&r.expr)?),
            len: Box::new(self.expr(&r.len)?),
        })
    }

    #[inline(never)]
    pub(super) fn e_block(&mut self, b: &syn::ExprBlock) -> PResult<Expr> {
        // `{ expr }` (e.g. in const generic arguments): allowed when it is a single expression.
        if b.block.stmts.len() == 1 {
            if let syn::Stmt::Expr(inner, None) = &b.block.stmts[0] {
                return self.expr(inner);
            }
        }
        Err(syntax(b.span(), "block expressions are not supported")
            .help("compute the value with `let` statements before"))
    }

    pub(super) fn generic_arg(&mut self, g: &syn::GenericArgument) -> PResult<Expr> {
        match g {
            syn::GenericArgument::Const(e) => self.expr(e),
            // `f::<N>` parses `N` as a type; a single name is a const generic of the caller.
            // A type argument is carried the same way, as the type's name (a type parameter resolved to the
            // type it stands for): `crate::mono` takes type arguments out before the checker runs.
            syn::GenericArgument::Type(syn::Type::Path(p)) if p.qself.is_none() => match p.path.get_ident() {
                Some(i) => {
                    let mut id = ident(i);
                    if let Some(t) = self.type_param(&id.name) {
                        id.name = t.rust_name().to_string();
                    }
                    Ok(Expr { kind: ExprKind::Var(id), span: i.span() })
                }
                None => Err(syntax(p.span(), "generic arguments must be constant expressions")),
            },
            other => Err(syntax(other.span(), "generic arguments must be constant expressions: `f::<4>`, `f::<N>`, `f::<{ N * 2 }>`")),
        }
    }

    /// `if c { a } else { b }` as a value.
    pub(super) fn select(&mut self, i: &syn::ExprIf) -> PResult<Expr> {
        let span = i.span();
        let help = "a value `if` must be `if c { a } else { b }` with one expression per branch";
        let Some((_, else_e)) = &i.else_branch else {
            return Err(syntax(span, "`if` used as a value needs an `else`").help(help));
        };
        let then_e = single_tail(&i.then_branch)
            .ok_or_else(|| syntax(i.then_branch.span(), "expected one expression").help(help))?;
        let cond = Box::new(self.expr(&i.cond)?);
        let then_value = Box::new(self.expr(then_e)?);
        let else_value = match &**else_e {
            syn::Expr::Block(b) => {
                let e = single_tail(&b.block)
                    .ok_or_else(|| syntax(b.span(), "expected one expression").help(help))?;
                Box::new(self.expr(e)?)
            }
            syn::Expr::If(_) => Box::new(self.expr(else_e)?),
            other => return Err(syntax(other.span(), "expected a block after `else`")),
        };
        Ok(Expr {
            kind: ExprKind::Select {
                cond,
                then_value,
                else_value,
            },
            span,
        })
    }

    pub(super) fn lit(&mut self, l: &syn::Lit) -> PResult<Lit> {
        match l {
            syn::Lit::Int(i) => {
                let suffix = match i.suffix() {
                    "" => None,
                    s => match scalar_from_name(s) {
                        Some(t) if t.is_int() => Some(t),
                        Some(t) if t.is_float() => {
                            let v: f64 = i
                                .base10_parse()
                                .map_err(|_| syntax(i.span(), "bad float literal"))?;
                            return Ok(Lit::Float(v, Some(t)));
                        }
                        _ => {
                            return Err(syntax(
                                i.span(),
                                format!("unsupported literal suffix `{s}`"),
                            )
                            .help("use u32, i32, u64, i64, f32 or f64"))
                        }
                    },
                };
                let v: u128 = i
                    .base10_parse()
                    .map_err(|e| syntax(i.span(), format!("bad integer literal: {e}")))?;
                Ok(Lit::Int(v, suffix))
            }
            syn::Lit::Float(f) => {
                let suffix = match f.suffix() {
                    "" => None,
                    "f32" => Some(ScalarType::F32),
                    "f64" => Some(ScalarType::F64),
                    s => {
                        return Err(
                            syntax(f.span(), format!("unsupported literal suffix `{s}`"))
                                .help("use f32 or f64"),
                        )
                    }
                };
                let v: f64 = f
                    .base10_parse()
                    .map_err(|e| syntax(f.span(), format!("bad float literal: {e}")))?;
                Ok(Lit::Float(v, suffix))
            }
            syn::Lit::Bool(b) => Ok(Lit::Bool(b.value)),
            other => Err(syntax(other.span(), "unsupported literal")
                .help("Prism has integer, float and bool literals")),
        }
    }
}

/// An unsuffixed literal as a literal of type `t`, when `t` holds its value exactly (else the cast stays).
fn typed_literal(l: Lit, t: ScalarType) -> Option<Lit> {
    let max_int: u128 = match t {
        ScalarType::U32 => u32::MAX as u128,
        ScalarType::I32 => i32::MAX as u128,
        ScalarType::U64 => u64::MAX as u128,
        ScalarType::I64 => i64::MAX as u128,
        ScalarType::F32 => 1 << 24,
        ScalarType::F64 => 1 << 53,
        _ => return None,
    };
    match l {
        Lit::Int(v, None) if v <= max_int => Some(if t.is_float() {
            Lit::Float(v as f64, Some(t))
        } else {
            Lit::Int(v, Some(t))
        }),
        Lit::Float(v, None) if t.is_float() && (t == ScalarType::F64 || (v as f32) as f64 == v) => {
            Some(Lit::Float(v, Some(t)))
        }
        _ => None,
    }
}

#[inline(never)]
pub(super) fn e_path(
    e: &syn::Expr,
    type_param: &dyn Fn(&str) -> Option<ScalarType>,
) -> PResult<ExprKind> {
    if let Some(i) = path_ident(e) {
        return Ok(ExprKind::Var(ident(i)));
    }
    if let Some(k) = assoc_const(e, type_param)? {
        return Ok(k);
    }
    Err(
        syntax(e.span(), "paths are only supported as function names")
            .help("write a variable name, or call `path::f(..)`; the scalar types' constants are written `f32::MAX`, `f32::INFINITY`, `u32::MAX`, .."),
    )
}

/// `f32::MAX`, `f32::NEG_INFINITY`, `u32::MAX`, `i64::MIN`, ..: the scalar types' constants as the
/// literal expressions they stand for (an infinity as `1.0 / 0.0`, as the checker allows); `T::MAX` of a
/// type parameter is its instance's (each instance is parsed with `T` bound, `crate::mono`). `None` when
/// `e` is not `type::NAME`.
fn assoc_const(
    e: &syn::Expr,
    type_param: &dyn Fn(&str) -> Option<ScalarType>,
) -> PResult<Option<ExprKind>> {
    let syn::Expr::Path(p) = e else {
        return Ok(None);
    };
    let segs: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let (Some(t), [_, name]) = (
        segs.first()
            .and_then(|s| type_param(s).or_else(|| types::scalar_from_name(s))),
        segs.as_slice(),
    ) else {
        return Ok(None);
    };
    let span = e.span();
    let lit = |l: Lit| Expr {
        kind: ExprKind::Lit(l),
        span,
    };
    let neg = |x: Expr| Expr {
        kind: ExprKind::Unary {
            op: UnOp::Neg,
            expr: Box::new(x),
        },
        span,
    };
    let bin = |op: BinOp, a: Expr, b: Expr| ExprKind::Binary {
        op,
        lhs: Box::new(a),
        rhs: Box::new(b),
    };
    let float = |v: f64| lit(Lit::Float(v, Some(t)));
    let (f32_or, int_max) = (t == ScalarType::F32, |m: u128| lit(Lit::Int(m, Some(t))));
    let pick = |a: f64, b: f64| if f32_or { a } else { b };
    // Matched in lower case: rules_doc reads upper-case string literals in the code as rule names.
    let constant = name.chars().all(|c| c.is_ascii_uppercase() || c == '_');
    let lower = if constant {
        name.to_ascii_lowercase()
    } else {
        String::new()
    };
    let kind = match (t, lower.as_str()) {
        (ScalarType::F32 | ScalarType::F64, "max") => float(pick(f32::MAX as f64, f64::MAX)).kind,
        (ScalarType::F32 | ScalarType::F64, "min") => {
            neg(float(pick(f32::MAX as f64, f64::MAX))).kind
        }
        (ScalarType::F32 | ScalarType::F64, "epsilon") => {
            float(pick(f32::EPSILON as f64, f64::EPSILON)).kind
        }
        (ScalarType::F32 | ScalarType::F64, "min_positive") => {
            float(pick(f32::MIN_POSITIVE as f64, f64::MIN_POSITIVE)).kind
        }
        (ScalarType::F32 | ScalarType::F64, "infinity") => bin(BinOp::Div, float(1.0), float(0.0)),
        (ScalarType::F32 | ScalarType::F64, "neg_infinity") => {
            bin(BinOp::Div, neg(float(1.0)), float(0.0))
        }
        (ScalarType::F32 | ScalarType::F64, "nan") => bin(BinOp::Div, float(0.0), float(0.0)),
        (ScalarType::U32, "max") => int_max(u32::MAX as u128).kind,
        (ScalarType::U64, "max") => int_max(u64::MAX as u128).kind,
        (ScalarType::U32 | ScalarType::U64, "min") => int_max(0).kind,
        (ScalarType::I32, "max") => int_max(i32::MAX as u128).kind,
        (ScalarType::I64, "max") => int_max(i64::MAX as u128).kind,
        // -MAX - 1: the literal 2^31 (2^63) is out of range before the negation.
        (ScalarType::I32, "min") => {
            bin(BinOp::Sub, neg(int_max(i32::MAX as u128)), int_max(1))
        }
        (ScalarType::I64, "min") => {
            bin(BinOp::Sub, neg(int_max(i64::MAX as u128)), int_max(1))
        }
        _ => {
            return Err(syntax(span, format!("`{}::{name}` is not supported", segs[0]))
                .help("supported: `MAX`, `MIN` of u32 i32 u64 i64 f32 f64, and `EPSILON`, `MIN_POSITIVE`, `INFINITY`, `NEG_INFINITY`, `NAN` of f32 f64"))
        }
    };
    Ok(Some(kind))
}

#[inline(never)]
pub(super) fn unsupported_expr(e: &syn::Expr) -> Diagnostic {
    let span = e.span();
    match e {
        syn::Expr::Closure(_) => syntax(
            span,
            "closures are only allowed as arguments of group/partition/claim/async_",
        ),
        syn::Expr::Tuple(_) => syntax(
            span,
            "tuples are only allowed as multi-dimensional indices `a[(i, j)]`",
        ),
        syn::Expr::Range(_) => syntax(span, "ranges are only allowed in `for` loops"),
        syn::Expr::Return(_) => syntax(span, "`return` is not supported")
            .help("end a device function with its value as the tail expression"),
        syn::Expr::Loop(l) => {
            syntax(l.loop_token.span, "`loop` is not supported").help("write `while true { .. }`")
        }
        syn::Expr::Struct(_) => syntax(span, "structs are not supported"),
        syn::Expr::Field(_) => {
            syntax(span, "field access is not supported").help("Prism has no structs or tuples")
        }
        syn::Expr::Unsafe(_) => syntax(span, "`unsafe` blocks are statements")
            .help("write `unsafe { asm!(..); }` as a statement"),
        syn::Expr::Assign(_) => syntax(span, "assignment is a statement, not an expression"),
        syn::Expr::Match(_) => syntax(
            span,
            "`match` is only supported as `match split(level) { .. }` statement",
        )
        .help("branch on a value with `if x == 0 { .. } else if x == 1 { .. } else { .. }`"),
        _ => syntax(span, "unsupported expression")
            .help("see docs/SYNTAX.md for the expressions Prism accepts"),
    }
}

/// The body of `asm!`: template strings, then `name = in(T) expr` / `out(T) place` / `inout(T) place`.
pub(super) struct AsmArgs {
    templates: Vec<syn::LitStr>,
    operands: Vec<(syn::Ident, AsmDir, syn::Type, syn::Expr)>,
}

impl syn::parse::Parse for AsmArgs {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let mut templates = Vec::new();
        let mut operands = Vec::new();
        while !input.is_empty() {
            if input.peek(syn::LitStr) && operands.is_empty() {
                templates.push(input.parse()?);
            } else {
                let name: syn::Ident = input.parse()?;
                input.parse::<Token![=]>()?;
                let dir = if input.peek(Token![in]) {
                    input.parse::<Token![in]>()?;
                    AsmDir::In
                } else {
                    let d: syn::Ident = input.parse()?;
                    match d.to_string().as_str() {
                        "out" => AsmDir::Out,
                        "inout" => AsmDir::InOut,
                        _ => {
                            return Err(syn::Error::new(
                                d.span(),
                                "expected `in`, `out` or `inout`",
                            ))
                        }
                    }
                };
                let content;
                syn::parenthesized!(content in input);
                let ty: syn::Type = content.parse()?;
                let e: syn::Expr = input.parse()?;
                operands.push((name, dir, ty, e));
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(AsmArgs {
            templates,
            operands,
        })
    }
}
