//! Type generics by monomorphization, before the checker runs.
//!
//! A generic function (`fn f<T: Num, const N: u32>`) keeps its tokens ([`FnSource`]); an instantiation parses
//! them again with `T` bound to a scalar type (`crate::parse::parse_function_with`), exactly as const
//! generics are bound per instance, so the checker and emitter only ever see ordinary functions. Calls with
//! type arguments (`f::<f32, 4>(..)`) are pointed at an instance named `f::<f32>` (its const arguments stay
//! at the call); a generic kernel becomes one function per tuple of type arguments in its `instances`, named
//! `k_f32` so that its PTX entries are `k_f32_4`.
//!
//! A generic device function is checked once for every tuple of types its bounds admit, a generic kernel once
//! per tuple of its instances: an error that occurs for some of them only is reported as rule `GENERIC` (the
//! bound admits a type the body cannot handle), an error of every tuple as itself.

use crate::ast::*;
use crate::Diagnostic;
use proc_macro2::Span;

/// Most tuples of type arguments a generic device function is checked with (the product of its bounds).
pub const MAX_TUPLES: usize = 64;

/// The name of `f`'s instance for `types` as diagnostics show it: `f::<f32>`.
pub fn instance_name(name: &str, types: &[ScalarType]) -> String {
    let t: Vec<&str> = types.iter().map(|t| t.rust_name()).collect();
    format!("{name}::<{}>", t.join(", "))
}

/// The instance of generic `f` with its type parameters bound to `types`, named `name`. Errors if a type
/// does not satisfy its bound (`GENERIC`), or the function's tokens do not parse (not expected: the
/// generic function itself parsed).
pub fn instantiate(
    f: &Function,
    types: &[ScalarType],
    name: &str,
    span: Span,
) -> Result<Function, Vec<Diagnostic>> {
    let Some(src) = &f.source else {
        return Err(vec![Diagnostic::new(
            "GENERIC",
            span,
            format!("`{}` has no type parameters", f.name),
        )]);
    };
    if types.len() != f.type_params.len() {
        return Err(vec![count_error(f, types.len(), span)]);
    }
    let mut errors = Vec::new();
    for (p, t) in f.type_params.iter().zip(types) {
        if !p.bound.admits(*t) {
            errors.push(bound_error(f, p, *t, span));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut g =
        crate::parse::parse_function_with(f.kind, src.attr.clone(), src.item.clone(), Some(types))?;
    g.name.name = name.to_string();
    g.origin = f.origin.clone();
    g.type_params.clear();
    g.source = None;
    keep_call_paths(f, &mut g);
    Ok(g)
}

/// The instance, parsed again from the template's tokens, has its calls as written; the template's calls
/// may have been pointed at their dependencies since (the macros name a dependency `crate__name` when two
/// share a name). The same tokens make the same calls in the same order: take the template's paths.
fn keep_call_paths(template: &Function, g: &mut Function) {
    let mut paths = Vec::new();
    let mut body = template.body.clone();
    visit_calls_mut(&mut body, &mut |p, _, _| paths.push(p.clone()));
    let mut count = 0;
    visit_calls_mut(&mut g.body, &mut |_, _, _| count += 1);
    if count != paths.len() {
        return;
    }
    let mut it = paths.into_iter();
    visit_calls_mut(&mut g.body, &mut |p, _, _| {
        if let Some(q) = it.next() {
            *p = q;
        }
    });
}

/// The instance of generic kernel `f` for one tuple of type arguments of its `instances`: named `k_f32` (so
/// its PTX entries are `k_f32_4`), with the const values of the instances that name these types.
pub fn kernel_instance(f: &Function, types: &[ScalarType]) -> Result<Function, Vec<Diagnostic>> {
    let base: Vec<&str> = types.iter().map(|t| t.rust_name()).collect();
    let name = format!("{}_{}", f.name.name, base.join("_"));
    let mut g = instantiate(f, types, &name, f.name.span)?;
    g.instances = f
        .instances
        .iter()
        .filter(|i| i.types == types && !f.const_params.is_empty())
        .map(|i| Instance {
            types: Vec::new(),
            values: i.values.clone(),
            span: i.span,
        })
        .collect();
    Ok(g)
}

/// A kernel ready for the checker: calls resolved ([`resolve`]); for a generic kernel, the instance of the
/// types its first `instances` entry names (tools that look at one instance, e.g. `crate::sync_report`).
pub fn first_instance(
    f: &Function,
    deps: &[Function],
) -> Result<(Function, Vec<Function>), Vec<Diagnostic>> {
    if f.type_params.is_empty() {
        return resolve(f.clone(), deps);
    }
    let tuples = crate::kernel_tuples(f)?;
    let g = kernel_instance(f, &tuples[0])?;
    resolve(g, deps)
}

fn count_error(f: &Function, found: usize, span: Span) -> Diagnostic {
    let names: Vec<String> = f
        .type_params
        .iter()
        .map(|p| format!("{}: {}", p.name, p.bound))
        .collect();
    // A type each bound admits, then the const parameters by name.
    let example: Vec<String> = f
        .type_params
        .iter()
        .map(|p| {
            let m = p.bound.members();
            let t = m.iter().find(|t| t.rust_name() == "f32").or(m.first());
            t.map_or_else(|| p.name.name.clone(), |t| t.rust_name().to_string())
        })
        .chain(f.const_params.iter().map(|c| c.name.name.clone()))
        .collect();
    // Another crate's function has no span here: the note goes to the call and names the crate.
    let (note_span, note) = match &f.origin {
        Some(c) => (
            span,
            format!(
                "`{}` (from `{c}`) declares `<{}>`",
                f.name,
                names.join(", ")
            ),
        ),
        None => (f.name.span, format!("`{}` declared here", f.name)),
    };
    Diagnostic::new(
        "GENERIC",
        span,
        format!(
            "`{}` takes {} type argument(s) (`{}`), found {found}",
            f.name,
            f.type_params.len(),
            names.join(", ")
        ),
    )
    .note(note_span, note)
    .help(format!(
        "write the types first{}: `{}::<{}>(..)`",
        if f.const_params.is_empty() {
            ""
        } else {
            ", then the const arguments"
        },
        f.name,
        example.join(", ")
    ))
}

fn bound_error(f: &Function, p: &TypeParam, t: ScalarType, span: Span) -> Diagnostic {
    let m: Vec<&str> = p.bound.members().iter().map(|t| t.rust_name()).collect();
    // Another crate's spans do not point into this one: name the crate instead of a note at the bound.
    let name = match &f.origin {
        Some(krate) => format!("{krate}::{}", f.name),
        None => f.name.to_string(),
    };
    let d = Diagnostic::new(
        "GENERIC",
        span,
        format!(
            "`{t}` does not satisfy `{}: {}` of `{name}` (it admits {})",
            p.name,
            p.bound,
            m.join(", ")
        ),
    );
    if f.origin.is_some() {
        d
    } else {
        d.note(p.bound_span, format!("`{}` bounded here", p.name))
    }
}

/// The scalar type a generic argument names (`f32`), if it is one.
fn type_arg(e: &Expr) -> Option<ScalarType> {
    match &e.kind {
        ExprKind::Var(id) => ScalarType::ALL
            .into_iter()
            .find(|t| t.rust_name() == id.name),
        _ => None,
    }
}

/// Points every call with type arguments in `root` and the functions it reaches at an instance of the
/// generic device function it names, adding the instances (themselves resolved) to the returned
/// dependencies. Generic functions are left out of them: only instances are called.
pub fn resolve(
    root: Function,
    deps: &[Function],
) -> Result<(Function, Vec<Function>), Vec<Diagnostic>> {
    let templates: Vec<&Function> = deps.iter().filter(|d| d.source.is_some()).collect();
    let mut out: Vec<Function> = deps
        .iter()
        .filter(|d| d.source.is_none())
        .cloned()
        .collect();
    let mut errors = Vec::new();
    let mut root = root;
    // Instances created so far: (template index, types) -> name.
    let mut made: Vec<(usize, Vec<ScalarType>, String)> = Vec::new();
    let mut todo: Vec<Function> = Vec::new();
    rewrite(&mut root, &templates, &mut made, &mut todo, &mut errors);
    out.append(&mut todo);
    // Instances are appended as they are made and rewritten when the loop reaches them.
    let mut i = 0;
    while i < out.len() {
        let mut f = std::mem::replace(&mut out[i], placeholder());
        rewrite(&mut f, &templates, &mut made, &mut todo, &mut errors);
        out[i] = f;
        out.append(&mut todo);
        i += 1;
    }
    if errors.is_empty() {
        Ok((root, out))
    } else {
        Err(errors)
    }
}

/// An empty function, swapped in while the real one is rewritten.
fn placeholder() -> Function {
    Function {
        kind: FnKind::Device,
        name: Ident {
            name: String::new(),
            span: Span::call_site(),
        },
        is_pub: false,
        type_params: Vec::new(),
        type_args: Vec::new(),
        source: None,
        const_params: Vec::new(),
        requires: Vec::new(),
        requires_span: Span::call_site(),
        smem: None,
        threads: None,
        blocks: None,
        cluster: None,
        returns: None,
        instances: Vec::new(),
        aliases: Vec::new(),
        params: Vec::new(),
        ret: None,
        body: Block {
            stmts: Vec::new(),
            tail: None,
            span: Span::call_site(),
        },
        span: Span::call_site(),
        origin: None,
    }
}

/// Rewrites the calls of `f` with type arguments (see [`resolve`]); new instances go to `todo`.
fn rewrite(
    f: &mut Function,
    templates: &[&Function],
    made: &mut Vec<(usize, Vec<ScalarType>, String)>,
    todo: &mut Vec<Function>,
    errors: &mut Vec<Diagnostic>,
) {
    visit_block(&mut f.body, &mut |path, generics, span| {
        let Some(last) = path.last().cloned() else {
            return;
        };
        let Some(ti) = templates.iter().position(|t| t.name.name == last.name) else {
            if let Some(g) = generics.iter().find(|g| type_arg(g).is_some()) {
                if path.len() == 1 && !crate::check::INTRINSICS.contains(&last.name.as_str()) {
                    errors.push(Diagnostic::new(
                        "GENERIC",
                        g.span,
                        format!("`{}` has no type parameters", last.name),
                    ));
                }
            }
            return;
        };
        let t = templates[ti];
        let k = t.type_params.len();
        let types: Vec<ScalarType> = generics.iter().take(k).map_while(type_arg).collect();
        if types.len() < k {
            match generics.get(types.len()) {
                Some(g) if matches!(g.kind, ExprKind::Var(_)) && types.len() < generics.len() => {
                    let p = &t.type_params[types.len()];
                    errors.push(
                        Diagnostic::new(
                            "GENERIC",
                            g.span,
                            format!(
                                "`{}` is not a type `{}: {}` of `{}` admits",
                                expr_name(g),
                                p.name,
                                p.bound,
                                t.name
                            ),
                        )
                        .help(format!(
                            "type arguments are scalar types: {}",
                            members(p.bound)
                        )),
                    );
                }
                _ => errors.push(count_error(t, types.len(), last.span)),
            }
            return;
        }
        let name = match made.iter().find(|(i, ty, _)| *i == ti && *ty == types) {
            Some((_, _, n)) => n.clone(),
            None => {
                let name = instance_name(&t.name.name, &types);
                // Bound errors point at the type arguments.
                let at = generics.first().map(|g| g.span).unwrap_or(span);
                match instantiate(t, &types, &name, at) {
                    Ok(g) => {
                        made.push((ti, types.clone(), name.clone()));
                        todo.push(g);
                    }
                    Err(mut e) => {
                        errors.append(&mut e);
                        return;
                    }
                }
                name
            }
        };
        *path = vec![Ident {
            name,
            span: last.span,
        }];
        generics.drain(..k);
    });
}

fn expr_name(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Var(id) => id.name.clone(),
        _ => "this".into(),
    }
}

fn members(b: TypeBound) -> String {
    let m: Vec<&str> = b.members().iter().map(|t| t.rust_name()).collect();
    m.join(", ")
}

/// `aliases = [..]`: each names one admitted type per type parameter and no const value (rule GENERIC).
pub fn check_aliases(f: &Function) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for a in &f.aliases {
        if a.types.len() != f.type_params.len() || !a.values.is_empty() {
            errors.push(
                Diagnostic::new(
                    "GENERIC",
                    a.span,
                    format!(
                        "an alias names one type per type parameter of `{}` ({}) and nothing else",
                        f.name,
                        f.type_params.len()
                    ),
                )
                .help("e.g. `aliases = [u32, f32]`, or `[(u32, f32)]` for two type parameters"),
            );
            continue;
        }
        for (p, t) in f.type_params.iter().zip(&a.types) {
            if !p.bound.admits(*t) {
                errors.push(
                    Diagnostic::new(
                        "GENERIC",
                        a.span,
                        format!(
                            "`{t}` does not satisfy `{}: {}` (it admits {})",
                            p.name,
                            p.bound,
                            members(p.bound)
                        ),
                    )
                    .note(p.bound_span, format!("`{}` bounded here", p.name)),
                );
            }
        }
    }
    errors
}

/// Every tuple of types the bounds of `f`'s type parameters admit (the product; `GENERIC` above
/// [`MAX_TUPLES`]).
pub fn bound_tuples(f: &Function) -> Result<Vec<Vec<ScalarType>>, Diagnostic> {
    let mut out: Vec<Vec<ScalarType>> = vec![Vec::new()];
    for p in &f.type_params {
        let mut next = Vec::new();
        for t in &out {
            for m in p.bound.members() {
                let mut t = t.clone();
                t.push(*m);
                next.push(t);
            }
        }
        if next.len() > MAX_TUPLES {
            return Err(Diagnostic::new(
                "GENERIC",
                p.bound_span,
                format!(
                    "`{}`'s bounds admit more than {MAX_TUPLES} combinations of types, each checked",
                    f.name
                ),
            )
            .help("use narrower bounds (`Num32`, `Int`, `Float`)"));
        }
        out = next;
    }
    Ok(out)
}

/// Runs `check` on every tuple of `tuples` and combines the outcomes: all pass → every result; all fail →
/// the first tuple's errors; some fail → the first failing tuple's errors as `GENERIC` (the bound, or the
/// instances, admit a type the body does not handle).
pub fn each_tuple<T>(
    f: &Function,
    tuples: &[Vec<ScalarType>],
    mut check: impl FnMut(&[ScalarType]) -> Result<T, Vec<Diagnostic>>,
) -> Result<Vec<T>, Vec<Diagnostic>> {
    let mut ok = Vec::new();
    let mut failed: Vec<(usize, Vec<Diagnostic>)> = Vec::new();
    for (i, t) in tuples.iter().enumerate() {
        match check(t) {
            Ok(r) => ok.push(r),
            Err(e) => failed.push((i, e)),
        }
    }
    let Some((i, first)) = failed.first().cloned() else {
        return Ok(ok);
    };
    if failed.len() == tuples.len() {
        return Err(first);
    }
    let binding: Vec<String> = f
        .type_params
        .iter()
        .zip(&tuples[i])
        .map(|(p, t)| format!("{} = {t}", p.name))
        .collect();
    let binding = binding.join(", ");
    let bounds: Vec<String> = f
        .type_params
        .iter()
        .map(|p| format!("{}: {}", p.name, p.bound))
        .collect();
    Err(first
        .into_iter()
        .map(|d| {
            let mut g = Diagnostic::new(
                "GENERIC",
                d.span,
                format!("with `{binding}`: {} (rule {})", d.message, d.rule),
            );
            g.notes = d.notes;
            for p in &f.type_params {
                g = g.note(
                    p.bound_span,
                    format!("`{}: {}` admits {}", p.name, p.bound, members(p.bound)),
                );
            }
            g.help(format!(
                "the body must hold for every type `{}` admits{}: narrow the bound, or write the operation for \
                 each type",
                bounds.join(", "),
                if f.kind == FnKind::Kernel {
                    " and the instances list"
                } else {
                    ""
                }
            ))
        })
        .collect())
}

/// What [`visit_calls_mut`] calls on each call: its path, generic arguments and span.
pub type CallVisitor<'a> = dyn FnMut(&mut Vec<Ident>, &mut Vec<Expr>, Span) + 'a;

/// Calls `f(path, generics, span)` for every call in `b`, nested blocks included, in source order (also
/// used by prism-macros to resolve and rewrite call paths).
pub fn visit_calls_mut(b: &mut Block, f: &mut CallVisitor) {
    visit_block(b, f)
}

fn visit_block(b: &mut Block, f: &mut CallVisitor) {
    for s in &mut b.stmts {
        match &mut s.kind {
            StmtKind::Let { init, .. } => {
                if let Some(e) = init {
                    visit_expr(e, f);
                }
            }
            StmtKind::Assign { place, value, .. } => {
                visit_expr(place, f);
                visit_expr(value, f);
            }
            StmtKind::Expr(e) => visit_expr(e, f),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                visit_expr(cond, f);
                visit_block(then_block, f);
                if let Some(b) = else_block {
                    visit_block(b, f);
                }
            }
            StmtKind::While { cond, body } => {
                visit_expr(cond, f);
                visit_block(body, f);
            }
            StmtKind::For {
                start,
                end,
                step,
                body,
                ..
            } => {
                visit_expr(start, f);
                visit_expr(end, f);
                if let Some(s) = step {
                    visit_expr(s, f);
                }
                visit_block(body, f);
            }
            StmtKind::Ring { stages, body, .. } => {
                visit_expr(stages, f);
                visit_block(body, f);
            }
            StmtKind::RingUse { index, body, .. } => {
                visit_expr(index, f);
                visit_block(body, f);
            }
            StmtKind::Peer { rank, body, .. } => {
                visit_expr(rank, f);
                visit_block(body, f);
            }
            StmtKind::Group { body, .. }
            | StmtKind::Claim { body, .. }
            | StmtKind::Async { body, .. }
            | StmtKind::Unsafe { body } => visit_block(body, f),
            StmtKind::Split { arms, .. } => {
                for a in arms {
                    visit_block(&mut a.body, f);
                }
            }
            StmtKind::Partition { index, body, .. } => {
                visit_expr(&mut index.body, f);
                visit_block(body, f);
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Barrier(_) => {}
        }
    }
    if let Some(t) = &mut b.tail {
        visit_expr(t, f);
    }
}

fn visit_expr(e: &mut Expr, f: &mut CallVisitor) {
    let span = e.span;
    match &mut e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => {}
        ExprKind::Index { base, indices } => {
            visit_expr(base, f);
            for i in indices {
                visit_expr(i, f);
            }
        }
        ExprKind::Unary { expr, .. } | ExprKind::Cast { expr, .. } | ExprKind::Ref { expr, .. } => {
            visit_expr(expr, f)
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            visit_expr(lhs, f);
            visit_expr(rhs, f);
        }
        ExprKind::Call {
            path,
            generics,
            args,
        } => {
            f(path, generics, span);
            for g in generics {
                visit_expr(g, f);
            }
            for a in args {
                visit_expr(a, f);
            }
        }
        ExprKind::MethodCall { recv, args, .. } => {
            visit_expr(recv, f);
            for a in args {
                visit_expr(a, f);
            }
        }
        ExprKind::ArrayLit(items) => {
            for i in items {
                visit_expr(i, f);
            }
        }
        ExprKind::ArrayRepeat { value, len } => {
            visit_expr(value, f);
            visit_expr(len, f);
        }
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => {
            visit_expr(cond, f);
            visit_expr(then_value, f);
            visit_expr(else_value, f);
        }
        ExprKind::Asm { operands, .. } => {
            for o in operands {
                visit_expr(&mut o.expr, f);
            }
        }
    }
}
