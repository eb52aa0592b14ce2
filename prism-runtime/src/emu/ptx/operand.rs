//! Operands: the model's operands in raw form and their resolution against the instruction's types and
//! the scope's names; special registers.

use super::*;
use prism_core::ptx as model;

/// A model operand in the decoder's raw form (`sym+N` and a tensor copy's `[map, {coords}]` take the
/// shapes the decoder has always read).
pub(super) fn raw_op(o: &model::Operand) -> RawOp {
    match o {
        model::Operand::Name(n) => RawOp::Name(n.clone()),
        model::Operand::NotName(n) => RawOp::NotName(n.clone()),
        model::Operand::Int(v) => RawOp::Int(*v),
        model::Operand::F32Bits(b) => RawOp::F32Bits(*b),
        model::Operand::F64Bits(b) => RawOp::F64Bits(*b),
        model::Operand::Float(f) => RawOp::Float(*f),
        model::Operand::Addr(a) => RawOp::Addr(a.base.clone(), a.offset.unwrap_or(0)),
        model::Operand::Tensor(a, c) => RawOp::List(vec![
            RawOp::Addr(a.base.clone(), a.offset.unwrap_or(0)),
            raw_op(c),
        ]),
        model::Operand::SymOffset(s, v) => RawOp::Addr(Some(format!("&{s}")), *v),
        model::Operand::Vector(v) => RawOp::Vec(v.iter().map(raw_op).collect()),
        model::Operand::List(v) => RawOp::List(v.iter().map(raw_op).collect()),
        // Only an instruction's own operands are pairs (`Parser::instruction` splits them).
        model::Operand::Pair(p, q) => RawOp::List(vec![raw_op(p), raw_op(q)]),
        model::Operand::Sink => RawOp::Sink,
    }
}

impl Parser {
    pub(super) fn operand(
        &self,
        p: &PendingInstr,
        r: &RawOp,
        ty: PtxType,
        labels: &HashMap<String, u32>,
    ) -> Result<Operand, PtxError> {
        let line = p.line;
        Ok(match r {
            RawOp::Sink => Operand::Sink,
            RawOp::Int(i) => Operand::Imm(imm_int(*i, ty)),
            RawOp::F32Bits(b) => Operand::Imm(if ty == PtxType::F64 {
                (f32::from_bits(*b) as f64).to_bits()
            } else {
                *b as u64
            }),
            // A `0d` literal is a double: its bits for any 64-bit type (`mov.b64 %fd, 0d3FF0..` is how
            // nvcc writes f64 constants), rounded to single for 32-bit ones.
            RawOp::F64Bits(b) => Operand::Imm(if ty.size() == 8 {
                *b
            } else {
                (f64::from_bits(*b) as f32).to_bits() as u64
            }),
            RawOp::Float(f) => Operand::Imm(if ty.size() == 8 {
                f.to_bits()
            } else {
                (*f as f32).to_bits() as u64
            }),
            RawOp::NotName(n) => match self.resolve_name(p.scope, n) {
                Some(Name::Reg(r, _)) => Operand::PredNot(r),
                _ => return perr(line, format!("unknown predicate {}", n)),
            },
            RawOp::Name(n) => {
                if let Some(s) = special_reg(n) {
                    return Ok(Operand::Sreg(s));
                }
                match self.resolve_name(p.scope, n) {
                    // A `.b128` register: its two 64-bit halves, low first.
                    Some(Name::Reg(r, PtxType::B128)) => {
                        Operand::Vec(vec![Operand::Reg(r), Operand::Reg(r + 1)])
                    }
                    Some(Name::Reg(r, _)) => Operand::Reg(r),
                    Some(Name::Sym(s)) => Operand::Sym(s),
                    None => {
                        if let Some(l) = labels.get(n) {
                            Operand::Label(*l)
                        } else if let Some(f) = self.funcs.iter().position(|f| &f.name == n) {
                            Operand::Func(f as u32)
                        } else if n.starts_with("%envreg") || n.starts_with("%pm") {
                            Operand::Sreg(Sreg::Zero)
                        } else if n == "WARP_SZ" {
                            // The PTX predefined constant nvcc emits for `warpSize`.
                            Operand::Imm(32)
                        } else {
                            return perr(line, format!("unknown name '{}'", n));
                        }
                    }
                }
            }
            RawOp::Addr(base, off) => {
                let b = match base {
                    None => AddrBase::None,
                    Some(n) => {
                        let n2 = n.strip_prefix('&').unwrap_or(n);
                        match self.resolve_name(p.scope, n2) {
                            Some(Name::Reg(r, _)) => AddrBase::Reg(r),
                            Some(Name::Sym(s)) => AddrBase::Sym(s),
                            None => return perr(line, format!("unknown name '{}' in address", n2)),
                        }
                    }
                };
                Operand::Addr(b, *off)
            }
            RawOp::Vec(v) => Operand::Vec(
                v.iter()
                    .map(|x| self.operand(p, x, ty, labels))
                    .collect::<Result<_, _>>()?,
            ),
            RawOp::List(v) => Operand::List(
                v.iter()
                    .map(|x| self.operand(p, x, ty, labels))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
}

pub(super) fn imm_int(i: i64, ty: PtxType) -> u64 {
    match ty {
        PtxType::F32 => (i as f32).to_bits() as u64,
        PtxType::F64 => (i as f64).to_bits(),
        _ => i as u64,
    }
}

pub(super) fn special_reg(n: &str) -> Option<Sreg> {
    let dim = |s: &str| match s {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((a, b)) = n.split_once('.') {
        let d = dim(b)?;
        return Some(match a {
            "%tid" => Sreg::Tid(d),
            "%ntid" => Sreg::Ntid(d),
            "%ctaid" => Sreg::Ctaid(d),
            "%nctaid" => Sreg::Nctaid(d),
            "%cluster_ctaid" => Sreg::ClusterCtaid(d),
            "%cluster_nctaid" => Sreg::ClusterNctaid(d),
            "%clusterid" => Sreg::Clusterid(d),
            "%nclusterid" => Sreg::Nclusterid(d),
            _ => return None,
        });
    }
    Some(match n {
        "%laneid" => Sreg::Laneid,
        "%warpid" => Sreg::Warpid,
        "%nwarpid" => Sreg::Nwarpid,
        "%lanemask_eq" => Sreg::LanemaskEq,
        "%lanemask_lt" => Sreg::LanemaskLt,
        "%lanemask_le" => Sreg::LanemaskLe,
        "%lanemask_gt" => Sreg::LanemaskGt,
        "%lanemask_ge" => Sreg::LanemaskGe,
        "%clock" => Sreg::Clock,
        "%clock64" => Sreg::Clock64,
        "%globaltimer" | "%globaltimer_lo" => Sreg::Globaltimer,
        "%clock_hi" | "%globaltimer_hi" => Sreg::ClockHi,
        "%reserved_smem_offset_begin" => Sreg::Reserved(0),
        "%reserved_smem_offset_end" => Sreg::Reserved(1),
        "%reserved_smem_offset_cap" => Sreg::Reserved(2),
        "%reserved_smem_offset_0" => Sreg::Reserved(3),
        "%reserved_smem_offset_1" => Sreg::Reserved(4),
        "%aggr_smem_size" => Sreg::Reserved(5),
        "%smid" => Sreg::Smid,
        "%nsmid" => Sreg::Nsmid,
        "%dynamic_smem_size" => Sreg::DynSmem,
        "%total_smem_size" => Sreg::TotalSmem,
        "%cluster_ctarank" => Sreg::ClusterCtarank,
        "%cluster_nctarank" => Sreg::ClusterNctarank,
        "%is_explicit_cluster" => Sreg::ExplicitCluster,
        // Driver-defined registers the CUDA runtime leaves zero outside graphs and profilers: `%envreg0..31`
        // (but a cooperative launch's grid workspace, `Sreg::Envreg`), the performance-monitor counters
        // `%pm0..7` / `%pm0_64..7_64` (not counting here), the graph handle.
        "%gridid" | "%current_graph_exec" => Sreg::Zero,
        _ if driver_defined_zero(n) => match n.strip_prefix("%envreg").map(str::parse::<u8>) {
            Some(Ok(i)) => Sreg::Envreg(i),
            _ => Sreg::Zero,
        },
        _ => return None,
    })
}

/// `%envreg0..31`, `%pm0..7`, `%pm0_64..7_64`.
pub(super) fn driver_defined_zero(n: &str) -> bool {
    let idx = |s: &str, max: u32| s.parse::<u32>().is_ok_and(|i| i <= max);
    if let Some(i) = n.strip_prefix("%envreg") {
        return idx(i, 31);
    }
    match n.strip_prefix("%pm") {
        Some(i) => idx(i.strip_suffix("_64").unwrap_or(i), 7),
        None => false,
    }
}
