//! Float `%`: Rust's remainder is exact (`fmod`: `x - trunc(x / y) * y` computed without rounding, the
//! result carrying the sign of `x`), so it is emitted as long division on the significands rather than as
//! `div`/`cvt.rzi`/`mul`/`sub`, which rounds at each step and is wrong whenever `x / y` is large (for
//! `1e10f32 % 3.0` it gave 0, not 1).
//!
//! The method: both operands as integer significands with the implicit bit (subnormals normalized by
//! `clz`), then one shift-and-subtract step per unit of exponent difference — every intermediate is an
//! exact integer below twice the divisor — and the remainder renormalized (a subnormal result by a right
//! shift, which drops only zero bits since the remainder is representable). At most 277 steps for f32 and
//! 2,098 for f64, when `|x|` is huge and `|y|` tiny; typical operands take a few.

use super::*;

/// The bit layout of an IEEE binary format.
struct Layout {
    /// `b32` / `b64` and the matching unsigned type.
    bits: &'static str,
    uint: &'static str,
    /// Explicit significand bits, exponent field width.
    mant: u32,
    exp: u32,
}

impl Layout {
    fn of(t: ScalarType) -> Layout {
        if t == ScalarType::F64 {
            Layout {
                bits: "b64",
                uint: "u64",
                mant: 52,
                exp: 11,
            }
        } else {
            Layout {
                bits: "b32",
                uint: "u32",
                mant: 23,
                exp: 8,
            }
        }
    }

    fn sign(&self) -> u64 {
        1 << (self.mant + self.exp)
    }

    fn inf(&self) -> u64 {
        ((1u64 << self.exp) - 1) << self.mant
    }

    fn hex(&self, v: u64) -> String {
        if self.bits == "b64" {
            format!("0x{v:016X}")
        } else {
            format!("0x{v:08X}")
        }
    }
}

impl Em {
    /// `r = x % y` for f32/f64 registers `x`, `y`, exact as Rust's `%`: NaN when `y` is 0 or either is
    /// NaN or `x` is infinite; `x` when `|x| < |y|` (so `x % ±inf = x`); else the exact remainder with the
    /// sign of `x` (a zero remainder is ±0 as `x`).
    pub(super) fn float_rem(&mut self, r: &str, x: &str, y: &str, t: ScalarType) {
        let lay = Layout::of(t);
        let (bits, uint) = (lay.bits, lay.uint);
        let word = if t == ScalarType::F64 {
            ScalarType::U64
        } else {
            ScalarType::U32
        };
        let [sx, ax, ay, mx, my, tmp] = [(); 6].map(|_| self.fresh(word));
        let [ex, ey, n, lz] = [(); 4].map(|_| self.fresh(ScalarType::I32));
        let p = self.fresh(ScalarType::Bool);
        let [nan, small, zero, done, lp, lend, norm, sign] = [(); 8].map(|_| self.label());
        let mag = lay.hex(lay.sign() - 1);
        let (inf, mmask, imp) = (
            lay.hex(lay.inf()),
            lay.hex((1u64 << lay.mant) - 1),
            lay.hex(1u64 << lay.mant),
        );
        self.line(format!("mov.{bits} {tmp}, {x};"));
        self.line(format!("and.{bits} {sx}, {tmp}, {};", lay.hex(lay.sign())));
        self.line(format!("and.{bits} {ax}, {tmp}, {mag};"));
        self.line(format!("mov.{bits} {tmp}, {y};"));
        self.line(format!("and.{bits} {ay}, {tmp}, {mag};"));
        // NaN: y = ±0, y NaN, x infinite or NaN.
        self.line(format!("setp.eq.{uint} {p}, {ay}, 0;"));
        self.line(format!("setp.gt.or.{uint} {p}, {ay}, {inf}, {p};"));
        self.line(format!("setp.ge.or.{uint} {p}, {ax}, {inf}, {p};"));
        self.line(format!("@{p} bra {nan};"));
        self.line(format!("setp.lt.{uint} {p}, {ax}, {ay};"));
        self.line(format!("@{p} bra {small};"));
        self.significand(
            &lay,
            (&ax, &mx, &ex),
            (&lz, &p),
            (mmask.as_str(), imp.as_str()),
        );
        self.significand(
            &lay,
            (&ay, &my, &ey),
            (&lz, &p),
            (mmask.as_str(), imp.as_str()),
        );
        // One shift-and-subtract per unit of exponent difference (|x| > |y|, so ex >= ey).
        self.line(format!("sub.s32 {n}, {ex}, {ey};"));
        self.put_label(&lp);
        self.line(format!("setp.le.s32 {p}, {n}, 0;"));
        self.line(format!("@{p} bra {lend};"));
        self.line(format!("setp.ge.{uint} {p}, {mx}, {my};"));
        self.line(format!("@{p} sub.{uint} {mx}, {mx}, {my};"));
        self.line(format!("shl.{bits} {mx}, {mx}, 1;"));
        self.line(format!("sub.s32 {n}, {n}, 1;"));
        self.line(format!("bra {lp};"));
        self.put_label(&lend);
        self.line(format!("setp.ge.{uint} {p}, {mx}, {my};"));
        self.line(format!("@{p} sub.{uint} {mx}, {mx}, {my};"));
        self.line(format!("setp.eq.{uint} {p}, {mx}, 0;"));
        self.line(format!("@{p} bra {zero};"));
        // Renormalize: the leading bit back to position `mant`, the exponent down by the shift.
        self.line(format!("clz.{bits} {lz}, {mx};"));
        self.line(format!("sub.s32 {lz}, {lz}, {};", lay.exp));
        self.line(format!("shl.{bits} {mx}, {mx}, {lz};"));
        self.line(format!("sub.s32 {ey}, {ey}, {lz};"));
        self.line(format!("setp.gt.s32 {p}, {ey}, 0;"));
        self.line(format!("@{p} bra {norm};"));
        // A subnormal result: shift right by 1 - e (only zero bits drop out).
        self.line(format!("sub.s32 {lz}, 1, {ey};"));
        self.line(format!("shr.{uint} {mx}, {mx}, {lz};"));
        self.line(format!("bra {sign};"));
        self.put_label(&norm);
        self.line(format!("and.{bits} {mx}, {mx}, {mmask};"));
        if t == ScalarType::F64 {
            self.line(format!("cvt.u64.s32 {tmp}, {ey};"));
        } else {
            self.line(format!("mov.b32 {tmp}, {ey};"));
        }
        self.line(format!("shl.{bits} {tmp}, {tmp}, {};", lay.mant));
        self.line(format!("or.{bits} {mx}, {mx}, {tmp};"));
        self.put_label(&sign);
        self.line(format!("or.{bits} {mx}, {mx}, {sx};"));
        self.line(format!("mov.{bits} {r}, {mx};"));
        self.line(format!("bra {done};"));
        self.put_label(&zero);
        self.line(format!("mov.{bits} {r}, {sx};"));
        self.line(format!("bra {done};"));
        self.put_label(&nan);
        // Rust's canonical quiet NaN.
        let qnan = lay.inf() | (1u64 << (lay.mant - 1));
        self.line(format!("mov.{bits} {r}, {};", lay.hex(qnan)));
        self.line(format!("bra {done};"));
        self.put_label(&small);
        self.line(format!("mov.{bits} {r}, {x};"));
        self.put_label(&done);
    }

    /// The significand of the magnitude `a` with its implicit bit at position `mant` (a subnormal shifted
    /// up by `clz`) into `m`, and its exponent field into `e` (1 − shift for a subnormal).
    fn significand(
        &mut self,
        lay: &Layout,
        (a, m, e): (&str, &str, &str),
        (lz, p): (&str, &str),
        (mmask, imp): (&str, &str),
    ) {
        let (bits, uint) = (lay.bits, lay.uint);
        let (sub, ok) = (self.label(), self.label());
        if lay.bits == "b64" {
            self.line(format!("shr.{uint} {m}, {a}, {};", lay.mant));
            self.line(format!("cvt.u32.u64 {e}, {m};"));
        } else {
            self.line(format!("shr.{uint} {e}, {a}, {};", lay.mant));
        }
        self.line(format!("setp.eq.s32 {p}, {e}, 0;"));
        self.line(format!("@{p} bra {sub};"));
        self.line(format!("and.{bits} {m}, {a}, {mmask};"));
        self.line(format!("or.{bits} {m}, {m}, {imp};"));
        self.line(format!("bra {ok};"));
        self.put_label(&sub);
        self.line(format!("clz.{bits} {lz}, {a};"));
        self.line(format!("sub.s32 {lz}, {lz}, {};", lay.exp));
        self.line(format!("shl.{bits} {m}, {a}, {lz};"));
        self.line(format!("sub.s32 {e}, 1, {lz};"));
        self.put_label(&ok);
    }
}
