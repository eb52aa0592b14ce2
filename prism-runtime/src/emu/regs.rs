//! A warp's registers, structure-of-arrays (`regs[r * 32 + lane]`), holding only the registers the
//! launch's code can name (issue 12).
//!
//! The front end numbers registers module-wide (registers 0 and 1 are the carry flag and the `alloca`
//! stack pointer, then every function's declarations in order), so a module with many kernels gives each
//! warp the registers of all of them: 737 × 32 lanes × 8 bytes = 188 KiB per warp for nvcc's
//! kernels.ptx, 1.5 MiB per 16×16 block, of which the tiled matmul names 135 registers. Every block's
//! warps were allocated, zeroed and (with 256 blocks resident) cycled through the caches in full. Here
//! a warp stores registers 0 and 1 and the window `lo..=hi` of the registers that the code reachable from
//! the entry names; indices keep their meaning, `Regs` translates them.

use super::*;
use std::ops::{Index, IndexMut, Range};

/// Lanes of the fixed registers 0 and 1 (`REG_CARRY`, `REG_STACK`), always present.
const FIXED: usize = 64;

/// The registers a launch's warps hold: 0, 1 and `lo..=hi` (empty when `hi < lo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RegWindow {
    lo: u32,
    hi: u32,
}

impl RegWindow {
    /// Every register of the module.
    pub(super) fn all(m: &Module) -> RegWindow {
        RegWindow {
            lo: 2,
            hi: m.nregs.saturating_sub(1),
        }
    }

    /// The registers the code reachable from entry `fi` names: the entry and the functions it calls,
    /// transitively. The whole module's when control could leave a function's code other than by a call
    /// or return (a function whose last instruction can fall through into the next function, a branch
    /// to a label outside its function): then any register could be named.
    pub(super) fn of_entry(m: &Module, fi: usize) -> RegWindow {
        let mut seen = vec![false; m.funcs.len()];
        let mut todo = vec![fi];
        seen[fi] = true;
        let (mut lo, mut hi) = (u32::MAX, 0u32);
        while let Some(f) = todo.pop() {
            let (start, end) = (m.funcs[f].start, m.funcs[f].end);
            let Some(code) = m.code.get(start as usize..end as usize) else {
                return Self::all(m);
            };
            if !code.last().is_some_and(ends_function) {
                return Self::all(m);
            }
            for ins in code {
                let mut note = |r: u32| {
                    if r >= 2 {
                        lo = lo.min(r);
                        hi = hi.max(r);
                    }
                };
                if let Some((p, _)) = ins.guard {
                    note(p);
                }
                // An indirect call may reach any function whose address the module takes.
                if ins.kind == Kind::Call && !ins.args.iter().any(|a| matches!(a, Operand::Func(_)))
                {
                    return Self::all(m);
                }
                let mut inside = true;
                for op in &ins.args {
                    op.visit(&mut |o| match o {
                        Operand::Reg(r) | Operand::PredNot(r) => note(*r),
                        Operand::Addr(AddrBase::Reg(r), _) => note(*r),
                        Operand::Label(t) => inside &= (start..end).contains(t),
                        Operand::Func(g) => {
                            let g = *g as usize;
                            if g < seen.len() && !seen[g] {
                                seen[g] = true;
                                todo.push(g);
                            }
                        }
                        _ => {}
                    });
                }
                if !inside {
                    return Self::all(m);
                }
            }
        }
        if lo > hi {
            return RegWindow { lo: 2, hi: 1 };
        }
        RegWindow { lo, hi }
    }

    /// Lanes a warp stores.
    fn lanes(self) -> usize {
        FIXED + (self.hi as usize + 1).saturating_sub(self.lo as usize) * 32
    }
}

/// An unguarded instruction after which control never reaches the next one.
fn ends_function(ins: &Instr) -> bool {
    ins.guard.is_none() && matches!(ins.kind, Kind::Ret | Kind::Exit | Kind::Trap | Kind::Bra)
}

/// A warp's register lanes, indexed as `regs[r * 32 + lane]` and `regs[r * 32..r * 32 + 32]` for any
/// register of its window.
#[derive(Default)]
pub(super) struct Regs {
    /// Subtracted from an index past the fixed registers.
    off: usize,
    data: Vec<u64>,
}

impl Regs {
    /// Zeroed registers of `win`.
    pub(super) fn new(win: RegWindow) -> Regs {
        Regs {
            off: (win.lo as usize * 32).saturating_sub(FIXED),
            data: vec![0; win.lanes()],
        }
    }

    /// The 32 lanes of the register whose lanes start at index `r` (`r * 32` for register `r`), as an
    /// array: copies of it have a length the compiler knows, so they compile to vector moves rather
    /// than a call to `memcpy`.
    #[inline(always)]
    pub(super) fn lanes(&self, r: usize) -> &[u64; 32] {
        let s = self.slot(r);
        self.data[s..s + 32].try_into().expect("32 lanes")
    }

    /// The same, writable.
    #[inline(always)]
    pub(super) fn lanes_mut(&mut self, r: usize) -> &mut [u64; 32] {
        let s = self.slot(r);
        (&mut self.data[s..s + 32]).try_into().expect("32 lanes")
    }

    /// `dst[l] = f(src[l])` for the lanes of `lanes`, `dst` and `src` the registers whose lanes start
    /// at `d` and `s` (the same register or two different ones): one pass over the register file, no
    /// lane array in between. Branch-free (a partial group selects per lane).
    #[inline(always)]
    pub(super) fn map_lanes(&mut self, d: usize, s: usize, lanes: u32, f: impl Fn(u64) -> u64) {
        let (ds, ss) = (self.slot(d), self.slot(s));
        if ds == ss {
            let x = self.lanes_mut(d);
            for l in 0..32 {
                let keep = ((lanes & LANE_BIT[l] != 0) as u64).wrapping_neg();
                x[l] = (f(x[l]) & keep) | (x[l] & !keep);
            }
            return;
        }
        // Two registers: disjoint 32-lane runs, borrowed as fixed-size arrays so that the loops are
        // straight vector code (a loop over one slice at two offsets gets an overlap test and a
        // bounds-checked scalar tail).
        let (dst, src): (&mut [u64], &[u64]) = if ds < ss {
            let (lo, hi) = self.data.split_at_mut(ss);
            (&mut lo[ds..ds + 32], &hi[..32])
        } else {
            let (lo, hi) = self.data.split_at_mut(ds);
            (&mut hi[..32], &lo[ss..ss + 32])
        };
        map_disjoint(
            dst.try_into().expect("32 lanes"),
            src.try_into().expect("32 lanes"),
            lanes,
            f,
        );
    }

    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        if i < FIXED {
            i
        } else {
            i.wrapping_sub(self.off)
        }
    }
}

impl Index<usize> for Regs {
    type Output = u64;
    #[inline(always)]
    fn index(&self, i: usize) -> &u64 {
        &self.data[self.slot(i)]
    }
}

impl IndexMut<usize> for Regs {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut u64 {
        let s = self.slot(i);
        &mut self.data[s]
    }
}

/// `dst[l] = f(src[l])` for the lanes of `lanes`: two distinct registers, as arguments so that the
/// compiler knows they do not overlap (and vectorises the loops).
#[inline(always)]
fn map_disjoint(dst: &mut [u64; 32], src: &[u64; 32], lanes: u32, f: impl Fn(u64) -> u64) {
    if lanes == u32::MAX {
        for l in 0..32 {
            dst[l] = f(src[l]);
        }
    } else {
        for l in 0..32 {
            // (a lane's bit tested against a constant, not shifted by the lane: vector code)
            let keep = ((lanes & LANE_BIT[l] != 0) as u64).wrapping_neg();
            dst[l] = (f(src[l]) & keep) | (dst[l] & !keep);
        }
    }
}

/// Lane `l`'s bit of a lane mask.
pub(super) const LANE_BIT: [u32; 32] = {
    let mut b = [0u32; 32];
    let mut l = 0;
    while l < 32 {
        b[l] = 1 << l;
        l += 1;
    }
    b
};

/// `d[l] = v[l]` for the lanes of `lanes`, branch-free (vector selects: the lanes of a diverged group
/// are any pattern).
#[inline(always)]
pub(super) fn select_lanes(d: &mut [u64; 32], v: &[u64; 32], lanes: u32) {
    for l in 0..32 {
        let keep = ((lanes & LANE_BIT[l] != 0) as u64).wrapping_neg();
        d[l] = (v[l] & keep) | (d[l] & !keep);
    }
}

/// `*d = *s` as two 128-byte halves: the baseline x86-64 target copies 128 bytes with inline vector
/// moves but calls `memcpy` for 256 (a third of a mov-heavy kernel's time went to those calls).
#[inline(always)]
pub(super) fn copy_lanes(d: &mut [u64; 32], s: &[u64; 32]) {
    let (d0, d1) = d.split_at_mut(16);
    d0.copy_from_slice(&s[..16]);
    d1.copy_from_slice(&s[16..]);
}

/// A range within one register (what the interpreter indexes: `r * 32..r * 32 + 32`).
impl Index<Range<usize>> for Regs {
    type Output = [u64];
    #[inline(always)]
    fn index(&self, r: Range<usize>) -> &[u64] {
        let s = self.slot(r.start);
        &self.data[s..s + r.len()]
    }
}

impl IndexMut<Range<usize>> for Regs {
    #[inline(always)]
    fn index_mut(&mut self, r: Range<usize>) -> &mut [u64] {
        let s = self.slot(r.start);
        &mut self.data[s..s + r.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_keep_their_meaning() {
        let win = RegWindow { lo: 10, hi: 12 };
        let mut r = Regs::new(win);
        assert_eq!(r.data.len(), 64 + 3 * 32);
        for reg in [0usize, 1, 10, 11, 12] {
            for l in 0..32 {
                r[reg * 32 + l] = (reg * 100 + l) as u64;
            }
        }
        for reg in [0usize, 1, 10, 11, 12] {
            let lanes = &r[reg * 32..reg * 32 + 32];
            assert!(lanes
                .iter()
                .enumerate()
                .all(|(l, v)| *v == (reg * 100 + l) as u64));
            r[reg * 32..reg * 32 + 32][5] += 1;
            assert_eq!(r[reg * 32 + 5], (reg * 100 + 6) as u64);
        }
        // A window that starts at 2 (or an empty one) is the plain layout.
        let r = Regs::new(RegWindow { lo: 2, hi: 1 });
        assert_eq!((r.off, r.data.len()), (0, 64));
        let r = Regs::new(RegWindow { lo: 2, hi: 5 });
        assert_eq!((r.off, r.data.len()), (0, 64 + 4 * 32));
    }

    #[test]
    fn an_entry_holds_its_own_registers_and_its_callees() {
        let src = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry first(.param .u64 p)
{
    .reg .b32 %a<40>;
    mov.u32 %a1, 1;
    ret;
}
.func (.param .b32 rv) helper(.param .b32 x)
{
    .reg .b32 %h<3>;
    ld.param.b32 %h1, [x];
    st.param.b32 [rv], %h1;
    ret;
}
.visible .entry second(.param .u64 p)
{
    .reg .b32 %s<4>;
    .reg .pred %q<2>;
    setp.eq.u32 %q1, %s1, 0;
    @%q1 bra DONE;
    {
    .param .b32 a0;
    st.param.b32 [a0], %s2;
    .param .b32 r0;
    call.uni (r0), helper, (a0);
    ld.param.b32 %s3, [r0];
    }
DONE:
    ret;
}
"#;
        let m = Module::parse(src).expect("parses");
        let fi = |n: &str| m.funcs.iter().position(|f| f.name == n).expect("func");
        let all = RegWindow::all(&m);
        let first = RegWindow::of_entry(&m, fi("first"));
        let second = RegWindow::of_entry(&m, fi("second"));
        assert!(first.lanes() < all.lanes() && second.lanes() < all.lanes());
        // `first` names one register; `second` its own and helper's (declared before it), not first's.
        assert_eq!(first.lanes(), 64 + 32, "{first:?}");
        assert_eq!(second.hi, all.hi, "{second:?} {all:?}");
        assert!(first.hi < second.lo, "{first:?} {second:?}");
    }
}
