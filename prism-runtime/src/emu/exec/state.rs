//! Registers, special registers, symbols and operand values of a lane; PC advance.

use super::*;

impl L<'_> {
    #[inline]
    pub(super) fn tid_of(&self, wi: usize, lane: usize) -> u32 {
        wi as u32 * 32 + lane as u32
    }

    pub(super) fn sreg(&self, b: &Block, wi: usize, lane: usize, s: Sreg) -> u64 {
        let t = self.tid_of(wi, lane);
        let [bx, by, _] = self.bdim;
        match s {
            Sreg::Tid(0) => (t % bx) as u64,
            Sreg::Tid(1) => ((t / bx) % by) as u64,
            Sreg::Tid(_) => (t / (bx * by)) as u64,
            Sreg::Ntid(d) => self.bdim[d as usize] as u64,
            Sreg::Ctaid(d) => b.ctaid[d as usize] as u64,
            Sreg::Nctaid(d) => self.grid[d as usize] as u64,
            Sreg::Laneid => lane as u64,
            Sreg::Warpid => wi as u64,
            Sreg::Nwarpid => self.nthreads.div_ceil(32) as u64,
            Sreg::LanemaskEq => 1u64 << lane,
            Sreg::LanemaskLt => (1u64 << lane) - 1,
            Sreg::LanemaskLe => (1u64 << (lane + 1)) - 1,
            Sreg::LanemaskGt => (!((1u64 << (lane + 1)) - 1)) & 0xffff_ffff,
            Sreg::LanemaskGe => (!((1u64 << lane) - 1)) & 0xffff_ffff,
            Sreg::Clock | Sreg::Clock64 | Sreg::Globaltimer => {
                self.spec_clock();
                self.clock
            }
            Sreg::Smid => (b.lin % 132) as u64,
            Sreg::Nsmid => 132,
            Sreg::DynSmem => self.dyn_bytes as u64,
            Sreg::TotalSmem => (self.smem_size - self.reserved as usize) as u64,
            Sreg::ClusterCtaid(d) => (b.ctaid[d as usize] % self.cluster[d as usize]) as u64,
            Sreg::ClusterNctaid(d) => self.cluster[d as usize] as u64,
            Sreg::Clusterid(d) => (b.ctaid[d as usize] / self.cluster[d as usize]) as u64,
            Sreg::Nclusterid(d) => (self.grid[d as usize] / self.cluster[d as usize]) as u64,
            Sreg::ClusterCtarank => b.crank as u64,
            Sreg::ClusterNctarank => (self.cluster[0] * self.cluster[1] * self.cluster[2]) as u64,
            Sreg::ClockHi => {
                self.spec_clock();
                self.sreg_misc(s)
            }
            Sreg::Reserved(_) | Sreg::ExplicitCluster => self.sreg_misc(s),
            // cooperative groups reads `%envreg1` as the high half, `%envreg2` as the low one.
            Sreg::Envreg(1) => self.grid_ws >> 32,
            Sreg::Envreg(2) => self.grid_ws & 0xffff_ffff,
            Sreg::Envreg(_) | Sreg::Zero => 0,
        }
    }

    /// A symbol's value for one lane: a local symbol is relative to the lane's current frame.
    #[inline]
    pub(super) fn sym_lane(&self, w: &Warp, s: SymRef, generic: bool, lane: usize) -> u64 {
        let v = self.sym_value(s, generic);
        match s {
            SymRef::Local(_) => v + lane_base(w, lane),
            _ => v,
        }
    }

    /// Index into the block's local memory of `size` bytes at local address `a` of thread `tid`: layer
    /// `a / local_size` (the static frame is layer 0, each recursive activation adds one), the thread's
    /// slot in it, and the offset within; `None` outside the layers or across a layer's end.
    #[inline]
    pub(super) fn local_index(&self, b: &Block, tid: usize, a: u64, size: usize) -> Option<usize> {
        let ls = self.local_size as u64;
        // The static frame (every access outside recursive calls) without a division.
        if a.saturating_add(size as u64) <= ls {
            return Some(tid * self.local_size + a as usize);
        }
        if ls == 0 {
            return None;
        }
        let (k, o) = ((a / ls) as usize, (a % ls) as usize);
        if o + size > self.local_size {
            return None;
        }
        let i = k
            .checked_mul(self.local_size * self.nthreads as usize)?
            .checked_add(tid * self.local_size + o)?;
        (i + size <= b.local.len()).then_some(i)
    }

    pub(super) fn sym_value(&self, s: SymRef, generic: bool) -> u64 {
        match s {
            SymRef::Global(i) => self.gaddrs[i as usize],
            SymRef::Shared(o) => {
                let o = self.reserved + o;
                if generic {
                    SHARED_WINDOW + o as u64
                } else {
                    o as u64
                }
            }
            SymRef::Local(o) => {
                if generic {
                    LOCAL_WINDOW + o as u64
                } else {
                    o as u64
                }
            }
            SymRef::KParam(o) => {
                if generic {
                    PARAM_WINDOW + o as u64
                } else {
                    o as u64
                }
            }
            SymRef::DynShared => {
                if generic {
                    SHARED_WINDOW + self.dyn_off as u64
                } else {
                    self.dyn_off as u64
                }
            }
        }
    }

    #[inline]
    pub(super) fn val(&self, b: &Block, w: &Warp, wi: usize, op: &Operand, lane: usize) -> u64 {
        match op {
            Operand::Reg(r) => w.regs[*r as usize * 32 + lane],
            Operand::Imm(v) => *v,
            Operand::PredNot(r) => (w.regs[*r as usize * 32 + lane] == 0) as u64,
            Operand::Sreg(s) => self.sreg(b, wi, lane, *s),
            Operand::Sym(s) => self.sym_lane(w, *s, false, lane),
            Operand::Addr(base, off) => self.addr(w, base, *off, lane, false),
            Operand::Vec(v) if v.len() == 1 => self.val(b, w, wi, &v[0], lane),
            Operand::Func(f) => func_address(*f),
            _ => 0,
        }
    }

    #[inline]
    pub(super) fn addr(
        &self,
        w: &Warp,
        base: &AddrBase,
        off: i64,
        lane: usize,
        generic: bool,
    ) -> u64 {
        let bv = match base {
            AddrBase::None => 0,
            AddrBase::Reg(r) => w.regs[*r as usize * 32 + lane],
            AddrBase::Sym(s) => self.sym_lane(w, *s, generic, lane),
        };
        bv.wrapping_add(off as u64)
    }

    #[inline]
    pub(super) fn set(w: &mut Warp, op: &Operand, lane: usize, v: u64) {
        if let Operand::Reg(r) = op {
            w.regs[*r as usize * 32 + lane] = v;
        }
    }

    pub(super) fn advance(w: &mut Warp, mask: u32) {
        warp_scan::advance_lanes(&mut w.pc, mask);
    }
}
