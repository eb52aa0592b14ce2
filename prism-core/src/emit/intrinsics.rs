//! Lowering of the intrinsic functions (`id`, barriers, shuffles, votes, atomics, vector memory, tensor
//! cores, async copies); the Hopper ones are in `hopper.rs`. Any other call is a device function.

use super::*;
use crate::intrinsics::{lookup, Arity};

/// One intrinsic family's lowering: called with the intrinsic's name, its arguments and the call's span.
type Lowering = fn(&mut Em, &str, &[Expr], Span) -> R<Value>;

/// The lowering of each intrinsic this module lowers (its arity is the table's, [`crate::intrinsics`]).
fn lowering(name: &str) -> Option<Lowering> {
    Some(match name {
        "id" | "sync_threads" | "sync_warp" | "fence" | "block_dim" | "grid_dim" => {
            Em::lower_special
        }
        "shfl_down" | "shfl_up" | "shfl_xor" | "shfl_idx" => Em::lower_shfl,
        "vote_all" | "vote_any" | "ballot" => Em::lower_vote,
        "atomic_add" | "atomic_max" | "atomic_min" | "atomic_exch" | "atomic_cas" => {
            Em::lower_atomic
        }
        "load2" | "load4" => Em::lower_load_vec,
        "store2" | "store4" => Em::lower_store_vec,
        "mma_m16n8k8_tf32" => Em::lower_mma_tf32,
        "ldmatrix_x1" | "ldmatrix_x2" | "ldmatrix_x4" => Em::lower_ldmatrix,
        "cp_async" => Em::lower_cp_async,
        "cp_async_bulk" => Em::lower_cp_async_bulk,
        _ => return None,
    })
}

impl Em {
    /// A call: a Hopper intrinsic, another intrinsic (its arity checked, then its family's lowering), or a
    /// device function.
    pub(super) fn call(
        &mut self,
        path: &[Ident],
        generics: &[Expr],
        args: &[Expr],
        span: Span,
    ) -> R<Value> {
        let name = path.last().map(|p| p.name.clone()).unwrap_or_default();
        if let Some(r) = self.hopper_call(&name, args, span) {
            return r;
        }
        // Device functions shadow nothing: intrinsic names are reserved (docs/SYNTAX.md).
        let Some(lower) = lowering(&name) else {
            return self.call_device(path, generics, args, span);
        };
        let Some(Arity::Exactly(k)) = lookup(&name).map(|i| i.arity) else {
            return Err(bug(
                "INTRINSIC",
                span,
                format!("`{name}` has no fixed arity in the intrinsics table"),
            ));
        };
        let n = args.len();
        if n != k {
            return Err(bug(
                "TYPE",
                span,
                format!("`{name}` takes {k} argument(s), {n} given"),
            ));
        }
        lower(self, &name, args, span)
    }

    /// `id`, the block-wide barrier and fence, and the launch dimensions.
    fn lower_special(&mut self, name: &str, _args: &[Expr], span: Span) -> R<Value> {
        match name {
            "id" => {
                let target = self.id_target.unwrap_or(self.ctx.persp);
                Ok(Value::S(self.id_value(target)))
            }
            "sync_threads" => {
                self.line("bar.sync 0;".into());
                Ok(Value::Unit)
            }
            "sync_warp" => {
                self.line("bar.warp.sync -1;".into());
                Ok(Value::Unit)
            }
            "fence" => {
                self.line("membar.gl;".into());
                Ok(Value::Unit)
            }
            "block_dim" => {
                // An immediate with `threads = N`, else %ntid.x (read once in the prologue).
                Ok(Value::S(self.t.clone()))
            }
            "grid_dim" => {
                let r = self.fresh(ScalarType::U32);
                self.line(format!("mov.u32 {r}, %nctaid.x;"));
                Ok(Value::S(Val::Reg(r, ScalarType::U32)))
            }
            _ => Err(bug(
                "INTRINSIC",
                span,
                format!("`{name}` is not a special intrinsic"),
            )),
        }
    }

    /// Warp shuffles (64-bit values move as two 32-bit halves).
    fn lower_shfl(&mut self, name: &str, args: &[Expr], _span: Span) -> R<Value> {
        let v = self.scalar(&args[0])?;
        let d = self.scalar(&args[1])?;
        let d = self.coerce(d, ScalarType::U32, args[1].span)?;
        let t = v.ty().unwrap_or(ScalarType::I32);
        let v = self.coerce(v, t, args[0].span)?;
        let (mode, c) = match name {
            "shfl_down" => ("down", "0x1f"),
            "shfl_up" => ("up", "0"),
            "shfl_xor" => ("bfly", "0x1f"),
            _ => ("idx", "0x1f"),
        };
        let dop = self.op(&d, ScalarType::U32);
        let x = self.reg(&v, t);
        match t.size() {
            4 => {
                let r = self.fresh(t);
                self.line(format!("shfl.sync.{mode}.b32 {r}, {x}, {dop}, {c}, -1;"));
                Ok(Value::S(Val::Reg(r, t)))
            }
            8 => {
                let (lo, hi, lo2, hi2) = (
                    self.fresh(ScalarType::U32),
                    self.fresh(ScalarType::U32),
                    self.fresh(ScalarType::U32),
                    self.fresh(ScalarType::U32),
                );
                self.line(format!("mov.b64 {{{lo}, {hi}}}, {x};"));
                self.line(format!("shfl.sync.{mode}.b32 {lo2}, {lo}, {dop}, {c}, -1;"));
                self.line(format!("shfl.sync.{mode}.b32 {hi2}, {hi}, {dop}, {c}, -1;"));
                let r = self.fresh(t);
                self.line(format!("mov.b64 {r}, {{{lo2}, {hi2}}};"));
                Ok(Value::S(Val::Reg(r, t)))
            }
            _ => Err(bug("TYPE", args[0].span, format!("cannot shuffle a {t}"))
                .help("shuffle 32- or 64-bit values")),
        }
    }

    /// Warp votes and ballots.
    fn lower_vote(&mut self, name: &str, args: &[Expr], _span: Span) -> R<Value> {
        let p = self.scalar(&args[0])?;
        let p = self.coerce(p, ScalarType::Bool, args[0].span)?;
        let p = self.reg(&p, ScalarType::Bool);
        if name == "ballot" {
            let r = self.fresh(ScalarType::U32);
            self.line(format!("vote.sync.ballot.b32 {r}, {p}, -1;"));
            Ok(Value::S(Val::Reg(r, ScalarType::U32)))
        } else {
            let r = self.fresh(ScalarType::Bool);
            let m = if name == "vote_all" { "all" } else { "any" };
            self.line(format!("vote.sync.{m}.pred {r}, {p}, -1;"));
            Ok(Value::S(Val::Reg(r, ScalarType::Bool)))
        }
    }

    /// Atomic read-modify-writes on global or shared memory.
    fn lower_atomic(&mut self, name: &str, args: &[Expr], span: Span) -> R<Value> {
        let view = self.mem_arg(&args[0])?;
        let i = self.scalar(&args[1])?;
        let addr = self.address(&view, vec![i], args[1].span)?;
        let t = view.elem;
        let mut vals = Vec::new();
        for a in &args[2..] {
            let v = self.scalar_as(a, Some(t))?;
            let v = self.coerce(v, t, a.span)?;
            vals.push(self.reg(&v, t));
        }
        let sp = if view.space == Space::Shared {
            "shared"
        } else {
            "global"
        };
        let op = match name {
            "atomic_add" => {
                if t.size() == 2
                    || (t.is_float() && t != ScalarType::F32 && t != ScalarType::F64)
                    || t == ScalarType::I64
                {
                    return Err(bug("INTRINSIC", span, format!("no atomic add on {t}")));
                }
                format!(
                    "add.{}",
                    if t == ScalarType::I32 {
                        "s32"
                    } else {
                        ptx_ty(t)
                    }
                )
            }
            "atomic_max" | "atomic_min" => {
                if t.is_float() {
                    return Err(bug("INTRINSIC", span, format!("no atomic min/max on {t}")));
                }
                format!("{}.{}", &name[7..], ptx_ty(t))
            }
            "atomic_exch" => format!("exch.{}", bits_ty(t)),
            _ => format!("cas.{}", bits_ty(t)),
        };
        if t == ScalarType::Bool || t.size() == 2 {
            return Err(bug("INTRINSIC", span, format!("no atomics on {t}")));
        }
        let r = self.fresh(t);
        self.line(format!(
            "atom.{sp}.{op} {r}, [{addr}], {};",
            vals.join(", ")
        ));
        Ok(Value::S(Val::Reg(r, t)))
    }

    /// Vector loads (`load2`, `load4`).
    fn lower_load_vec(&mut self, name: &str, args: &[Expr], span: Span) -> R<Value> {
        let k: usize = if name == "load2" { 2 } else { 4 };
        let view = self.mem_arg(&args[0])?;
        let i = self.scalar(&args[1])?;
        let addr = self.address_n(&view, vec![i], args[1].span, k as u32)?;
        let t = view.elem;
        if t == ScalarType::Bool {
            return Err(bug("INTRINSIC", span, "no vector loads of bool"));
        }
        let regs: Vec<String> = (0..k).map(|_| self.fresh(t)).collect();
        let sp = Self::space_str(&view, true);
        self.line(format!(
            "ld.{sp}.v{k}.{} {{{}}}, [{addr}];",
            mem_ty(t),
            regs.join(", ")
        ));
        Ok(Value::Arr(
            regs.into_iter().map(|r| Val::Reg(r, t)).collect(),
            t,
        ))
    }

    /// Vector stores (`store2`, `store4`).
    fn lower_store_vec(&mut self, name: &str, args: &[Expr], _span: Span) -> R<Value> {
        let k: usize = if name == "store2" { 2 } else { 4 };
        let view = self.mem_arg(&args[0])?;
        let i = self.scalar(&args[1])?;
        let addr = self.address_n(&view, vec![i], args[1].span, k as u32)?;
        let vals = match self.expr(&args[2])? {
            Value::Arr(v, _) if v.len() == k => v,
            _ => {
                return Err(bug(
                    "TYPE",
                    args[2].span,
                    format!("`{name}` stores an array of {k} elements"),
                ))
            }
        };
        let vals = vals
            .into_iter()
            .map(|v| self.coerce(v, view.elem, args[2].span))
            .collect::<R<Vec<_>>>()?;
        self.store(&view, &addr, &vals);
        Ok(Value::Unit)
    }

    /// The tf32 tensor-core `mma` (operands converted from f32).
    fn lower_mma_tf32(&mut self, _name: &str, args: &[Expr], _span: Span) -> R<Value> {
        let c = self.array_arg(&args[0], 4)?;
        let a = self.array_arg(&args[1], 4)?;
        let b = self.array_arg(&args[2], 2)?;
        let mut ta = Vec::new();
        for x in a.iter().chain(b.iter()) {
            let r = self.fresh(ScalarType::U32);
            self.line(format!("cvt.rna.tf32.f32 {r}, {x};"));
            ta.push(r);
        }
        self.line(format!(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {{{c}}}, {{{}}}, {{{}}}, {{{c}}};",
            ta[..4].join(", "),
            ta[4..].join(", "),
            c = c.join(", ")
        ));
        Ok(Value::Unit)
    }

    /// `ldmatrix` from shared memory.
    fn lower_ldmatrix(&mut self, name: &str, args: &[Expr], _span: Span) -> R<Value> {
        let k: usize = name[10..].parse().unwrap_or(1);
        let view = self.mem_arg(&args[0])?;
        if view.space != Space::Shared {
            return Err(bug("TYPE", args[0].span, "`ldmatrix` reads shared memory"));
        }
        let i = self.scalar(&args[1])?;
        // Each lane's row is 16 bytes.
        let row = 16 / view.elem.size().max(1);
        let addr = self.address_n(&view, vec![i], args[1].span, row)?;
        let regs: Vec<String> = (0..k).map(|_| self.fresh(ScalarType::U32)).collect();
        self.line(format!(
            "ldmatrix.sync.aligned.m8n8.x{k}.shared.b16 {{{}}}, [{addr}];",
            regs.join(", ")
        ));
        Ok(Value::Arr(
            regs.into_iter()
                .map(|r| Val::Reg(r, ScalarType::U32))
                .collect(),
            ScalarType::U32,
        ))
    }

    /// `cp.async` (one committed group per copy).
    fn lower_cp_async(&mut self, _name: &str, args: &[Expr], span: Span) -> R<Value> {
        let dst = self.mem_arg(&args[0])?;
        let di = self.scalar(&args[1])?;
        let src = self.mem_arg(&args[2])?;
        let si = self.scalar(&args[3])?;
        let bytes = self.const_i64(&args[4])?;
        if !matches!(bytes, 4 | 8 | 16) {
            return Err(bug(
                "INTRINSIC",
                args[4].span,
                format!("cp.async copies 4, 8 or 16 bytes, not {bytes}"),
            ));
        }
        if dst.space != Space::Shared || src.space != Space::Global {
            return Err(bug(
                "INTRINSIC",
                span,
                "`cp_async` copies from global to shared memory",
            ));
        }
        let n = (bytes as u32 / dst.elem.size().max(1)).max(1);
        let da = self.address_n(&dst, vec![di], args[1].span, n)?;
        let sa = self.address(&src, vec![si], args[3].span)?;
        let kind = if bytes == 16 { "cg" } else { "ca" };
        self.line(format!(
            "cp.async.{kind}.shared.global [{da}], [{sa}], {bytes};"
        ));
        self.line("cp.async.commit_group;".into());
        self.uses_cp_async = true;
        Ok(Value::Unit)
    }

    /// `cp.async.bulk` on the mbarrier of the destination's `async_` scope.
    fn lower_cp_async_bulk(&mut self, _name: &str, args: &[Expr], span: Span) -> R<Value> {
        let mbar = self.copy_mbarrier(&args[0])?;
        let dst = self.mem_arg(&args[0])?;
        let di = self.scalar(&args[1])?;
        let src = self.mem_arg(&args[2])?;
        let si = self.scalar(&args[3])?;
        let bytes = self.const_i64(&args[4])?;
        if bytes <= 0 || bytes % 16 != 0 || bytes >= 1 << 20 {
            return Err(bug(
                "INTRINSIC",
                args[4].span,
                format!("cp.async.bulk copies a multiple of 16 bytes below 1 MiB, not {bytes}"),
            ));
        }
        if dst.space != Space::Shared || src.space != Space::Global {
            return Err(bug(
                "INTRINSIC",
                span,
                "`cp_async_bulk` copies from global to shared memory",
            ));
        }
        let n = (bytes as u32 / dst.elem.size().max(1)).max(1);
        let da = self.address_n(&dst, vec![di], args[1].span, n)?;
        let sa = self.address(&src, vec![si], args[3].span)?;
        // Announce the bytes before the copy can complete them, so the phase cannot end early.
        self.line(format!(
            "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{mbar}], {bytes};"
        ));
        self.line(format!(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{da}], [{sa}], {bytes}, [{mbar}];"
        ));
        Ok(Value::Unit)
    }

    /// The mbarrier a bulk copy (`cp_async_bulk`, `tma_load`) into `dst` completes on: the full mbarrier of
    /// the slot, for a `fill` name (a register holding its address), else that of `dst`'s `async_` scope.
    pub(super) fn copy_mbarrier(&mut self, dst: &Expr) -> R<String> {
        if let Some(a) = self.fill_slot_mbarrier(dst) {
            return Ok(a);
        }
        Ok(format!("__prism_mbar_{}", self.bulk_mbarrier(dst)?))
    }

    /// The register holding the full mbarrier of the slot `dst` names, when it is a `fill` name in scope.
    pub(super) fn fill_slot_mbarrier(&self, dst: &Expr) -> Option<String> {
        let ExprKind::Var(id) = &dst.kind else {
            return None;
        };
        let slot = self.fill_slots.iter().rev().find(|(n, _)| *n == id.name);
        slot.map(|(_, a)| a.clone())
    }

    /// The mbarrier of the `async_` scope that `dst` (a `cp_async_bulk` destination) names, allocated on
    /// first use; `ASYNC-BULK` when that scope's target is not a shared allocation at `block[1]`.
    pub(super) fn bulk_mbarrier(&mut self, dst: &Expr) -> R<u32> {
        let name = match &dst.kind {
            ExprKind::Var(id) => id.name.clone(),
            _ => String::new(),
        };
        let scope = self.async_scopes.iter_mut().rev().find(|s| s.name == name);
        match scope {
            Some(s) if s.bulk_ok => {
                if let Some(k) = s.mbar {
                    return Ok(k);
                }
                let k = self.mbars;
                s.mbar = Some(k);
                self.mbars += 1;
                Ok(k)
            }
            _ => Err(err(
                "ASYNC-BULK",
                dst.span,
                "cp_async_bulk needs the async_ target at block[1]",
            )
            .help(
                "copy into a shared allocation (`let s: Shared<[T; N]>;`) seen at block[1]: its copies complete \
                 on one mbarrier that every thread of the block waits on",
            )),
        }
    }

    pub(super) fn mem_arg(&mut self, e: &Expr) -> R<View> {
        match self.expr(e)? {
            Value::Mem(v) => Ok(v),
            _ => Err(bug(
                "TYPE",
                e.span,
                "expected a pointer or shared allocation",
            )),
        }
    }

    pub(super) fn array_arg(&mut self, e: &Expr, n: usize) -> R<Vec<String>> {
        match self.expr(e)? {
            Value::Arr(v, t) if v.len() == n => Ok(v.iter().map(|x| self.reg(x, t)).collect()),
            _ => Err(bug(
                "TYPE",
                e.span,
                format!("expected a thread-local array of {n} elements"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intrinsics::TABLE;

    /// The emitter lowers here exactly the table's intrinsics that are not Hopper's, each with a fixed arity.
    #[test]
    fn lowerings_match_the_table() {
        let hopper = crate::intrinsics::HOPPER;
        for i in TABLE {
            let lowered = lowering(i.name).is_some();
            assert_eq!(lowered, !hopper.contains(&i.name), "{}", i.name);
            if lowered {
                assert!(matches!(i.arity, Arity::Exactly(_)), "{}", i.name);
            }
        }
        assert!(lowering("not_an_intrinsic").is_none());
    }
}
