//! Operands: raw operand syntax (registers, immediates, addresses, vectors, lists) and its resolution
//! against the instruction's types and the scope's names; integer literals and special registers.

use super::*;

impl Parser {
    pub(super) fn raw_operand(&mut self) -> Result<RawOp, PtxError> {
        let line = self.line();
        if self.eat_p('[') {
            let mut base = None;
            let mut off = 0i64;
            let mut first = true;
            loop {
                if self.eat_p(']') {
                    break;
                }
                // `[tensorMap, {c0, ..}]` (cp.async.bulk.tensor): the address and its coordinate vector.
                if !first && self.is_p(',') {
                    self.pos += 1;
                    let coords = self.raw_operand()?;
                    if !self.eat_p(']') {
                        return perr(line, "expected ']' after tensor coordinates");
                    }
                    return Ok(RawOp::List(vec![RawOp::Addr(base, off), coords]));
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
                        base = Some(s);
                    }
                    Some(Tok::Num(_)) | Some(Tok::P('-')) => {
                        let v = self.number()?;
                        off += if neg { -v } else { v };
                    }
                    t => return perr(line, format!("bad address operand {:?}", t)),
                }
            }
            return Ok(RawOp::Addr(base, off));
        }
        if self.eat_p('{') {
            let mut v = Vec::new();
            loop {
                if self.eat_p('}') {
                    break;
                }
                v.push(self.raw_operand()?);
                self.eat_p(',');
            }
            return Ok(RawOp::Vec(v));
        }
        if self.eat_p('(') {
            let mut v = Vec::new();
            loop {
                if self.eat_p(')') {
                    break;
                }
                v.push(self.raw_operand()?);
                self.eat_p(',');
            }
            return Ok(RawOp::List(v));
        }
        if self.eat_p('!') {
            let n = self.ident()?;
            return Ok(RawOp::NotName(n));
        }
        let neg = self.eat_p('-');
        match self.next()? {
            Tok::Ident(s) => {
                if s == "_" {
                    return Ok(RawOp::Sink);
                }
                // symbol+offset as an operand (e.g. mov.u64 %rd, sym+4) is rare: support `sym+N`
                if self.is_p('+') {
                    if let Some(Tok::Num(_)) = self.peek_at(1) {
                        self.pos += 1;
                        let v = self.number()?;
                        return Ok(RawOp::Addr(Some(format!("&{}", s)), v));
                    }
                }
                Ok(RawOp::Name(s))
            }
            Tok::Num(s) => {
                let l = s.to_ascii_lowercase();
                if (l.starts_with("0f")) && l.len() == 10 {
                    let b = u32::from_str_radix(&l[2..], 16).map_err(|_| PtxError {
                        line,
                        message: format!("bad float {}", s),
                    })?;
                    let b = if neg { b ^ 0x8000_0000 } else { b };
                    Ok(RawOp::F32Bits(b))
                } else if l.starts_with("0d") && l.len() == 18 {
                    let b = u64::from_str_radix(&l[2..], 16).map_err(|_| PtxError {
                        line,
                        message: format!("bad double {}", s),
                    })?;
                    let b = if neg { b ^ 0x8000_0000_0000_0000 } else { b };
                    Ok(RawOp::F64Bits(b))
                } else if let Some(v) = parse_int(&s) {
                    Ok(RawOp::Int(if neg { v.wrapping_neg() } else { v }))
                } else if let Ok(f) = s.parse::<f64>() {
                    Ok(RawOp::Float(if neg { -f } else { f }))
                } else {
                    perr(line, format!("bad number '{}'", s))
                }
            }
            t => perr(line, format!("unexpected operand token {:?}", t)),
        }
    }

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
            RawOp::F64Bits(b) => Operand::Imm(if ty == PtxType::F64 {
                *b
            } else {
                (f64::from_bits(*b) as f32).to_bits() as u64
            }),
            RawOp::Float(f) => Operand::Imm(if ty == PtxType::F64 {
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

pub(super) fn parse_int(s: &str) -> Option<i64> {
    let (s, unsigned) = match s.strip_suffix('U').or_else(|| s.strip_suffix('u')) {
        Some(x) => (x, true),
        None => (s, false),
    };
    let _ = unsigned;
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
        // Driver-defined registers the CUDA runtime leaves zero outside graphs and profilers: `%envreg0..31`,
        // the performance-monitor counters `%pm0..7` / `%pm0_64..7_64` (not counting here), the graph handle.
        "%gridid" | "%current_graph_exec" => Sreg::Zero,
        _ if driver_defined_zero(n) => Sreg::Zero,
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
