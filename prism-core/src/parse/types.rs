//! Types: scalars, pointers, arrays and array references, `Shared<..>` with its layout, tensor maps.

use super::*;

pub(super) fn scalar_from_name(s: &str) -> Option<ScalarType> {
    Some(match s {
        "bool" => ScalarType::Bool,
        "u32" => ScalarType::U32,
        "i32" => ScalarType::I32,
        "u64" => ScalarType::U64,
        "i64" => ScalarType::I64,
        "f32" => ScalarType::F32,
        "f64" => ScalarType::F64,
        "f16" => ScalarType::F16,
        "bf16" => ScalarType::BF16,
        _ => return None,
    })
}

pub(super) const TYPES_HELP: &str =
    "supported types: u32 i32 u64 i64 f32 f64 bool f16 bf16, *const T, *mut T, [T; N], \
                          &[T; N], &mut [T; N], Shared<[T; N]>, Shared<[T; N], Swizzle128>, SharedMut<[T; N], L>, \
                          TensorMap<T, RANK>, TensorMapMut<T, RANK>, Ring<(T, U)>";

/// The layout argument of `Shared<[T; N], L>`.
pub(super) fn smem_layout(g: &syn::GenericArgument) -> PResult<SmemLayout> {
    if let syn::GenericArgument::Type(syn::Type::Path(p)) = g {
        if let Some(l) = p
            .path
            .get_ident()
            .and_then(|i| SmemLayout::from_name(&i.to_string()))
        {
            return Ok(l);
        }
    }
    Err(syntax(g.span(), "unknown shared-memory layout")
        .help("one of `Linear`, `Swizzle32`, `Swizzle64`, `Swizzle128` (K-major rows of 32/64/128 bytes, as TMA writes and wgmma reads them), `Swizzle32Mn`, `Swizzle64Mn`, `Swizzle128Mn` (MN-major rows)"))
}

impl Cx {
    /// The scalar a type parameter stands for in this parse.
    pub(super) fn type_param(&self, name: &str) -> Option<ScalarType> {
        self.tsubst.iter().find(|(n, _)| n == name).map(|(_, t)| *t)
    }

    pub(super) fn scalar(&mut self, t: &syn::Type) -> PResult<ScalarType> {
        if let syn::Type::Path(p) = t {
            if p.qself.is_none() {
                if let Some(s) = p.path.get_ident().and_then(|i| {
                    let n = i.to_string();
                    self.type_param(&n).or_else(|| scalar_from_name(&n))
                }) {
                    return Ok(s);
                }
            }
        }
        if let syn::Type::Group(g) = t {
            return self.scalar(&g.elem);
        }
        Err(syntax(t.span(), "expected a scalar type")
            .help("one of u32 i32 u64 i64 f32 f64 bool f16 bf16"))
    }

    pub(super) fn array(&mut self, t: &syn::Type) -> PResult<(ScalarType, Box<Expr>)> {
        match t {
            syn::Type::Array(a) => Ok((self.scalar(&a.elem)?, Box::new(self.expr(&a.len)?))),
            syn::Type::Group(g) => self.array(&g.elem),
            _ => Err(syntax(t.span(), "expected an array type `[T; N]`")),
        }
    }

    /// `TensorMap<T, RANK>`: element type and a literal rank 1..=5.
    pub(super) fn tensor_map(&mut self, seg: &syn::PathSegment) -> PResult<Type> {
        const WANT: &str = "expected `TensorMap<T, RANK>` with a scalar type and a rank 1..=5";
        let syn::PathArguments::AngleBracketed(ab) = &seg.arguments else {
            return Err(syntax(seg.span(), WANT));
        };
        let mut it = ab.args.iter();
        let (Some(syn::GenericArgument::Type(t)), Some(r), None) =
            (it.next(), it.next(), it.next())
        else {
            return Err(syntax(seg.span(), WANT));
        };
        let elem = self.scalar(t)?;
        let rank = match r {
            syn::GenericArgument::Const(syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            })) => i.base10_parse::<u32>().ok(),
            _ => None,
        };
        match rank {
            Some(rank @ 1..=5) => Ok(Type::TensorMap {
                elem,
                rank,
                mutable: seg.ident == "TensorMapMut",
            }),
            _ => Err(syntax(r.span(), WANT)
                .help("TMA tensors have 1 to 5 dimensions: `TensorMap<bf16, 2>`")),
        }
    }

    pub(super) fn ty(&mut self, t: &syn::Type, cx: TyCtx) -> PResult<Type> {
        match t {
            syn::Type::Group(g) => self.ty(&g.elem, cx),
            syn::Type::Paren(p) => self.ty(&p.elem, cx),
            syn::Type::Ptr(p) => {
                if cx == TyCtx::Let || cx == TyCtx::Return {
                    return Err(
                        syntax(t.span(), "pointer variables can only be parameters").help(
                            "use `partition`/`claim` to narrow a pointer, or index it directly",
                        ),
                    );
                }
                Ok(Type::Ptr {
                    elem: self.scalar(&p.elem)?,
                    mutable: p.mutability.is_some(),
                })
            }
            syn::Type::Array(_) => {
                if cx == TyCtx::Param {
                    return Err(syntax(t.span(), "arrays are passed by reference")
                        .help("write `&[T; N]` or `&mut [T; N]`"));
                }
                let (elem, len) = self.array(t)?;
                Ok(Type::Array { elem, len })
            }
            syn::Type::Reference(r) => {
                if cx != TyCtx::Param {
                    return Err(syntax(
                        t.span(),
                        "references are only allowed as device-function parameters",
                    )
                    .help("declare a local array `[T; N]`, pass it with `&a` / `&mut a`"));
                }
                if let Some(l) = &r.lifetime {
                    return Err(syntax(l.span(), "lifetimes are not supported"));
                }
                let (elem, len) = self
                    .array(&r.elem)
                    .map_err(|d| d.help("references must be to arrays: `&[T; N]`"))?;
                Ok(Type::ArrayRef {
                    elem,
                    len,
                    mutable: r.mutability.is_some(),
                })
            }
            syn::Type::Path(p) if p.qself.is_none() => {
                let last = p.path.segments.last();
                if p.path.segments.len() == 1 {
                    if let Some(seg) = last {
                        if seg.ident == "Shared" || seg.ident == "SharedMut" {
                            // In `let` an allocation; as a (device-function) parameter a caller's shared
                            // memory with that layout, which `SharedMut` may also write.
                            let mutable = seg.ident == "SharedMut";
                            if cx == TyCtx::Return {
                                return Err(syntax(t.span(), "`Shared<..>` is only allowed in `let` and as a parameter")
                                    .help("declare shared memory with `let s: Shared<[T; N]>;` at block[1]"));
                            }
                            if mutable && cx != TyCtx::Param {
                                return Err(syntax(t.span(), "`SharedMut<..>` is a device-function parameter type: a caller's shared memory the function writes")
                                    .help("allocate shared memory with `let s: Shared<[T; N]>;` at block[1] (an allocation is writable)"));
                            }
                            if let syn::PathArguments::AngleBracketed(ab) = &seg.arguments {
                                let mut it = ab.args.iter();
                                if let (Some(syn::GenericArgument::Type(inner)), l, None) =
                                    (it.next(), it.next(), it.next())
                                {
                                    let (elem, len) = self.array(inner)?;
                                    let layout = match l {
                                        None => SmemLayout::Linear,
                                        Some(g) => smem_layout(g)?,
                                    };
                                    return Ok(Type::Shared {
                                        elem,
                                        len,
                                        layout,
                                        mutable,
                                    });
                                }
                            }
                            return Err(syntax(
                                t.span(),
                                "expected `Shared<[T; N]>` or `Shared<[T; N], Swizzle128>` (`SharedMut<..>` alike)",
                            ));
                        }
                        if seg.ident == "TensorMap" || seg.ident == "TensorMapMut" {
                            if cx != TyCtx::Param {
                                return Err(syntax(t.span(), "`TensorMap<T, RANK>` is only allowed as a kernel parameter")
                                    .help("take the tensor map as a parameter `a: TensorMap<bf16, 2>`; the host builds it with `prism_runtime::TensorMap`"));
                            }
                            return self.tensor_map(seg);
                        }
                        if seg.ident == "Ring" {
                            if cx != TyCtx::Param {
                                return Err(syntax(t.span(), "`Ring<..>` is a device-function parameter type: a caller's ring")
                                    .help("declare a ring with `ring(STAGES, (sa, sb), |r| ..)` at block[1]"));
                            }
                            return self.ring_type(seg);
                        }
                    }
                }
                Ok(Type::Scalar(
                    self.scalar(t).map_err(|d| d.help(TYPES_HELP))?,
                ))
            }
            syn::Type::Tuple(_) => Err(syntax(t.span(), "tuples are not supported")
                .help("return several values through a `&mut [T; N]` parameter (`fn f(out: &mut [f32; 2])`, called as `f(&mut pair)`), or return an array `[T; N]`")),
            _ => Err(syntax(t.span(), "unsupported type").help(TYPES_HELP)),
        }
    }
}

impl Cx {
    /// `Ring<T>` or `Ring<(T, U, ..)>`: the element types of a ring's memories, in order.
    fn ring_type(&mut self, seg: &syn::PathSegment) -> PResult<Type> {
        let bad = || {
            syntax(seg.span(), "expected `Ring<T>` or `Ring<(T, U, ..)>`")
                .help("one element type per memory of the ring, in the order of `ring(S, (a, b), ..)`: `Ring<(bf16, bf16)>`")
        };
        let syn::PathArguments::AngleBracketed(ab) = &seg.arguments else {
            return Err(bad());
        };
        let mut it = ab.args.iter();
        let (Some(syn::GenericArgument::Type(inner)), None) = (it.next(), it.next()) else {
            return Err(bad());
        };
        let elems = match inner {
            syn::Type::Tuple(tup) if !tup.elems.is_empty() => tup
                .elems
                .iter()
                .map(|e| self.scalar(e))
                .collect::<PResult<Vec<_>>>()?,
            syn::Type::Paren(p) => vec![self.scalar(&p.elem)?],
            other => vec![self.scalar(other)?],
        };
        Ok(Type::Ring { elems })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum TyCtx {
    Param,
    Let,
    Return,
}
