//! Register slots by liveness (issue 12): two registers of a function that are never live at the same
//! time share one slot, so a warp holds the registers its code keeps live, not every one it declares.
//!
//! PTX code is in SSA-like form: nvcc's `matmul_tiled` declares 135 registers and Prism's scan 314, most
//! live for a few instructions. A warp stores each register as 32 lanes of 8 bytes, so the declared
//! count decided how much memory every warp of a launch zeroed and cycled through the caches (164 MiB
//! for the scan's 2,048 warps). Here the decoder renumbers each function's registers after classic
//! backward liveness over its control-flow graph and a greedy colouring of the interference graph; the
//! interpreter is unchanged (it indexes registers by their new numbers).
//!
//! Why a run is unchanged, lane by lane: each lane follows its own path through the function, and a
//! register's slot is written (for that lane) only at instructions that name it. Two registers share a
//! slot only if neither is written where the other is live afterwards (or named by the same
//! instruction), so every read returns the value the register would hold with a slot of its own. The
//! analysis is conservative where an instruction's effect is not plainly "write operand 0 for every lane
//! that runs it": every register an instruction names counts as read there, and only the destinations of
//! unguarded moves, arithmetic, compares, selects, conversions and loads count as overwritten. Registers
//! whose value another lane, another warp or a later event may see keep a slot of their own (*pinned*):
//! those live at function entry (a kernel's start at zero; a function's from its previous call), and those
//! named by warp- or warpgroup-collective, asynchronous or barrier instructions (`shfl` reads other
//! lanes' registers, `wgmma` writes its accumulators at `wait_group`, `bar.red` at the barrier's
//! completion, the in-flight check names registers).
//!
//! A module whose control can leave a function other than by `call`/`ret` (a branch to another function's
//! label, code that falls off a function's end) keeps its numbering.

use super::*;

/// Functions naming more registers than this keep a slot per register (the interference matrix is
/// quadratic: 32 MiB here).
const MAX_SHARED_REGS: usize = 16384;
/// Nor is a function analysed whose liveness sets (a bit per register and instruction) would pass
/// 32 MiB.
const MAX_LIVE_WORDS: usize = 4 << 20;
/// Backward passes over a function before giving up on sharing (each pass settles one more level of
/// loop nesting; real kernels need a handful).
const MAX_PASSES: usize = 64;

/// Renumbers the registers of every function of `code` by liveness. Returns the new register count and
/// names (a shared slot takes its first register's name), or `None` (nothing changed) when a function's
/// control can leave it other than by `call`/`ret` or a register is named by two functions' code.
pub(super) fn share_slots(
    funcs: &[Function],
    code: &mut [Instr],
    nregs: u32,
    names: &[String],
) -> Option<(u32, Vec<String>)> {
    let mut owner = vec![usize::MAX; nregs as usize];
    let mut covered = vec![false; code.len()];
    let mut plans = Vec::new();
    for (fi, f) in funcs.iter().enumerate() {
        if !f.defined || f.start >= f.end {
            continue;
        }
        let (start, end) = (f.start as usize, f.end as usize);
        let body = code.get(start..end)?;
        for c in &mut covered[start..end] {
            if *c {
                return None;
            }
            *c = true;
        }
        let plan = Plan::of(body, start as u32, fi, &mut owner)?;
        plans.push((start, end, plan));
    }
    if covered.iter().any(|c| !c) && code.iter().any(names_a_register) {
        return None;
    }
    // Slots 0 and 1 are the fixed carry and stack registers; each function's slots follow in order.
    let mut map: Vec<u32> = (0..nregs).collect();
    let mut new_names: Vec<String> = names.iter().take(2).cloned().collect();
    let mut next = 2u32;
    for (_, _, plan) in &plans {
        for (local, &reg) in plan.regs.iter().enumerate() {
            let slot = next + plan.color[local];
            map[reg as usize] = slot;
            if new_names.len() <= slot as usize {
                new_names.resize(slot as usize + 1, String::new());
            }
            if new_names[slot as usize].is_empty() {
                new_names[slot as usize] = names.get(reg as usize).cloned().unwrap_or_default();
            }
        }
        next += plan.slots;
    }
    for (start, end, _) in &plans {
        for ins in &mut code[*start..*end] {
            renumber(ins, &map);
        }
    }
    Some((next, new_names))
}

/// Whether an instruction names a register other than the fixed ones.
fn names_a_register(ins: &Instr) -> bool {
    let mut any = ins.guard.is_some_and(|(p, _)| p >= 2);
    for op in &ins.args {
        each_reg(op, &mut |r| any |= r >= 2);
    }
    any
}

/// Calls `f` on every register an operand names (nested vectors and lists, address bases, `!p`).
fn each_reg(op: &Operand, f: &mut impl FnMut(u32)) {
    op.visit(&mut |o| {
        if let Operand::Reg(r) | Operand::PredNot(r) | Operand::Addr(AddrBase::Reg(r), _) = o {
            f(*r)
        }
    });
}

/// Rewrites every register of `ins` through `map` (the fixed registers map to themselves).
fn renumber(ins: &mut Instr, map: &[u32]) {
    fn op(o: &mut Operand, map: &[u32]) {
        match o {
            Operand::Reg(r) | Operand::PredNot(r) | Operand::Addr(AddrBase::Reg(r), _) => {
                *r = map[*r as usize]
            }
            Operand::Vec(v) | Operand::List(v) => v.iter_mut().for_each(|o| op(o, map)),
            _ => {}
        }
    }
    if let Some((p, _)) = &mut ins.guard {
        *p = map[*p as usize];
    }
    for o in &mut ins.args {
        op(o, map);
    }
}

/// Kinds whose registers keep a slot of their own (see the module comment).
fn pins_registers(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::Shfl(_)
            | Kind::Vote(_)
            | Kind::Redux(..)
            | Kind::Match(..)
            | Kind::Activemask
            | Kind::Elect
            | Kind::Mma(_)
            | Kind::Ldmatrix(..)
            | Kind::Stmatrix(..)
            | Kind::Movmatrix
            | Kind::Wmma(_)
            | Kind::Wgmma(_)
            | Kind::Bar(_)
            | Kind::BarWarpSync
            | Kind::Mbarrier(_)
            | Kind::Setmaxnreg(_)
            | Kind::Call
            | Kind::Unsupported(_)
    )
}

/// The registers an instruction overwrites for every lane that runs it: operand 0 (each register of a
/// vector) of an unguarded move, arithmetic, compare, select, conversion or load.
fn kills(ins: &Instr, f: &mut impl FnMut(u32)) {
    if ins.guard.is_some() {
        return;
    }
    if !ins.kind.is_register_op() {
        return;
    }
    match ins.args.first() {
        Some(Operand::Reg(r)) => f(*r),
        Some(Operand::Vec(v)) if matches!(ins.kind, Kind::Ld(..)) => {
            for o in v {
                if let Operand::Reg(r) = o {
                    f(*r);
                }
            }
        }
        _ => {}
    }
}

/// Whether control never reaches the instruction after `ins`.
fn no_fall_through(ins: &Instr) -> bool {
    ins.guard.is_none() && matches!(ins.kind, Kind::Ret | Kind::Exit | Kind::Trap | Kind::Bra)
}

/// A dense bit set over a function's registers.
#[derive(Clone)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn set(&mut self, i: u32) {
        self.0[i as usize / 64] |= 1 << (i % 64);
    }
    fn ones(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &word)| {
            let mut m = word;
            std::iter::from_fn(move || {
                (m != 0).then(|| {
                    let b = m.trailing_zeros();
                    m &= m - 1;
                    w as u32 * 64 + b
                })
            })
        })
    }
}

/// One function's colouring: its registers (module numbering), each one's colour, and the colours used.
struct Plan {
    regs: Vec<u32>,
    color: Vec<u32>,
    slots: u32,
}

impl Plan {
    /// Liveness and colouring of the function whose code is `body` (instruction `start` onwards); `owner`
    /// records which function names each register. `None` when control leaves the function or a
    /// register belongs to another function.
    fn of(body: &[Instr], start: u32, fi: usize, owner: &mut [usize]) -> Option<Plan> {
        let flow = Flow::of(body, start, fi, owner)?;
        let nr = flow.regs.len();
        let one_each = |regs| Plan {
            color: (0..nr as u32).collect(),
            slots: nr as u32,
            regs,
        };
        if nr > MAX_SHARED_REGS || body.len().saturating_mul(nr.div_ceil(64)) > MAX_LIVE_WORDS {
            // Too large to analyse cheaply (hostile or generated code): a slot per register.
            return Some(one_each(flow.regs));
        }
        let Some(live_in) = flow.live_in() else {
            // Deeply nested loops (hostile code): a slot per register rather than a long analysis.
            return Some(one_each(flow.regs));
        };
        let adj = flow.interference(&live_in);
        let mut pinned = live_in.first().cloned().unwrap_or_else(|| Bits::new(nr));
        for &r in &flow.pinned {
            pinned.set(r);
        }
        let (color, slots) = colour(&adj, &pinned);
        Some(Plan {
            regs: flow.regs,
            color,
            slots,
        })
    }
}

/// A function's control flow and register uses, registers numbered locally.
struct Flow {
    /// Module numbering of each local register.
    regs: Vec<u32>,
    /// Per instruction: registers read (and maybe written), registers overwritten, successors (local
    /// instruction indices; `u32::MAX` = none).
    uses: Vec<Vec<u32>>,
    kill: Vec<Vec<u32>>,
    succ: Vec<[u32; 2]>,
    /// Registers named by instructions whose registers keep their own slot.
    pinned: Vec<u32>,
}

impl Flow {
    fn of(body: &[Instr], start: u32, fi: usize, owner: &mut [usize]) -> Option<Flow> {
        let n = body.len();
        let mut local = std::collections::HashMap::new();
        let mut f = Flow {
            regs: Vec::new(),
            uses: Vec::with_capacity(n),
            kill: Vec::with_capacity(n),
            succ: Vec::with_capacity(n),
            pinned: Vec::new(),
        };
        let end = start + n as u32;
        let mut global = Vec::new();
        for (i, ins) in body.iter().enumerate() {
            global.clear();
            if let Some((p, _)) = ins.guard {
                global.push(p);
            }
            for op in &ins.args {
                each_reg(op, &mut |r| global.push(r));
            }
            let mut named = Vec::with_capacity(global.len());
            for &r in global.iter().filter(|&&r| r >= 2) {
                let o = owner.get_mut(r as usize)?;
                if *o != usize::MAX && *o != fi {
                    return None;
                }
                *o = fi;
                named.push(*local.entry(r).or_insert_with(|| {
                    f.regs.push(r);
                    f.regs.len() as u32 - 1
                }));
            }
            let mut k = Vec::new();
            kills(ins, &mut |r| {
                if r >= 2 {
                    k.push(local[&r]);
                }
            });
            // A killed destination is operand 0; the registers of the other operands are read.
            if !k.is_empty() {
                named.clear();
                for op in &ins.args[1..] {
                    each_reg(op, &mut |r| {
                        if r >= 2 {
                            named.push(local[&r]);
                        }
                    });
                }
            }
            if pins_registers(&ins.kind) {
                f.pinned.extend_from_slice(&named);
            }
            let mut s = [u32::MAX; 2];
            if !no_fall_through(ins) {
                if i + 1 == n {
                    return None; // falls off the function's end
                }
                s[0] = i as u32 + 1;
            }
            let mut labels = 0;
            for op in &ins.args {
                if let Operand::Label(t) = op {
                    if !(start..end).contains(t) || labels == 1 {
                        return None;
                    }
                    s[1] = t - start;
                    labels += 1;
                }
            }
            f.uses.push(named);
            f.kill.push(k);
            f.succ.push(s);
        }
        Some(f)
    }

    /// The registers live after instruction `i`, into `out`.
    fn live_out(&self, i: usize, live_in: &[Bits], out: &mut Bits) {
        out.0.iter_mut().for_each(|w| *w = 0);
        for &s in self.succ[i].iter().filter(|&&s| s != u32::MAX) {
            for (o, w) in out.0.iter_mut().zip(&live_in[s as usize].0) {
                *o |= w;
            }
        }
    }

    /// Backward liveness to a fixed point: the registers live before each instruction (`None` past
    /// [`MAX_PASSES`]).
    fn live_in(&self) -> Option<Vec<Bits>> {
        let (n, nr) = (self.succ.len(), self.regs.len());
        let mut live_in = vec![Bits::new(nr); n];
        let mut out = Bits::new(nr);
        for _ in 0..MAX_PASSES {
            let mut changed = false;
            for i in (0..n).rev() {
                self.live_out(i, &live_in, &mut out);
                for &k in &self.kill[i] {
                    out.0[k as usize / 64] &= !(1 << (k % 64));
                }
                for &u in &self.uses[i] {
                    out.set(u);
                }
                if out.0 != live_in[i].0 {
                    live_in[i].0.copy_from_slice(&out.0);
                    changed = true;
                }
            }
            if !changed {
                return Some(live_in);
            }
        }
        None
    }

    /// The interference graph (symmetric adjacency rows): every register an instruction names (all may
    /// be written there) against the registers live after it and the instruction's other registers.
    fn interference(&self, live_in: &[Bits]) -> Vec<Bits> {
        let nr = self.regs.len();
        let mut adj = vec![Bits::new(nr); nr];
        let mut out = Bits::new(nr);
        for i in 0..self.succ.len() {
            self.live_out(i, live_in, &mut out);
            let named = self.uses[i].iter().chain(&self.kill[i]);
            for &u in named.clone() {
                out.set(u);
            }
            for &x in named {
                for (a, w) in adj[x as usize].0.iter_mut().zip(&out.0) {
                    *a |= w;
                }
            }
        }
        for x in 0..nr as u32 {
            let ys: Vec<u32> = adj[x as usize].ones().collect();
            for y in ys {
                adj[y as usize].set(x);
            }
        }
        adj
    }
}

/// Colours of a graph's vertices and the number used: pinned vertices first, one colour each; the rest
/// greedily, the lowest colour no coloured neighbour has (never a pinned one's).
fn colour(adj: &[Bits], pinned: &Bits) -> (Vec<u32>, u32) {
    let nr = adj.len();
    let mut color = vec![u32::MAX; nr];
    let mut slots = 0u32;
    for r in pinned.ones() {
        color[r as usize] = slots;
        slots += 1;
    }
    let first_free = slots;
    let mut taken = Vec::new();
    for r in 0..nr {
        if color[r] != u32::MAX {
            continue;
        }
        taken.clear();
        taken.resize(slots as usize + 1, false);
        for y in adj[r].ones() {
            let c = color[y as usize];
            if c != u32::MAX && (c as usize) < taken.len() {
                taken[c as usize] = true;
            }
        }
        let c = (first_free..=slots)
            .find(|&c| !taken[c as usize])
            .unwrap_or(slots);
        color[r] = c;
        slots = slots.max(c + 1);
    }
    (color, slots)
}

#[cfg(test)]
mod tests {
    use super::super::super::*;
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

    /// Distinct registers the code of entry `name` names.
    fn named(m: &Module, name: &str) -> usize {
        let f = m.funcs.iter().find(|f| f.name == name).expect("entry");
        let mut set = std::collections::BTreeSet::new();
        for ins in &m.code[f.start as usize..f.end as usize] {
            if let Some((p, _)) = ins.guard {
                set.insert(p);
            }
            for op in &ins.args {
                each_reg(op, &mut |r| {
                    set.insert(r);
                });
            }
        }
        set.len()
    }

    #[test]
    fn kernels_keep_a_fraction_of_their_declared_registers() {
        // (file, entry, at most this many slots)
        for (file, entry, most) in [
            ("kernels.ptx", "matmul_tiled", 30),
            ("prism/scan_kernel_u32_4.ptx", "scan_kernel_u32_4", 70),
            (
                "prism/sgemm_warptile_64_64_16_32_32_2_4_4.ptx",
                "sgemm_warptile_64_64_16_32_32_2_4_4",
                80,
            ),
        ] {
            let src = std::fs::read_to_string(format!("{FIXTURES}/{file}")).expect("fixture");
            let declared = Module::parse_declared_registers(&src).expect("parses");
            let shared = Module::parse(&src).expect("parses");
            let (before, after) = (named(&declared, entry), named(&shared, entry));
            assert!(
                after <= most && after * 4 < before,
                "{entry}: {before} registers -> {after} slots"
            );
            assert!(shared.nregs < declared.nregs);
            assert_eq!(shared.code.len(), declared.code.len());
        }
    }

    /// Liveness's corner cases, each stored by every lane: a register read before it is written, in a
    /// loop; a register written on one side of a branch and read after it; a device function's register
    /// read before it is written in each call (its previous call's value); a `shfl` among the lanes of one
    /// side of a branch, reading a register written before it (a source lane outside the membermask would
    /// be undefined, a CollectiveMisuse).
    const CORNERS: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.func (.param .b32 rv) acc(.param .b32 x)
{
    .reg .b32 %a<8>;
    ld.param.b32 %a1, [x];
    add.u32 %a2, %a3, %a1;
    mov.u32 %a3, %a2;
    mul.lo.u32 %a4, %a1, 7;
    add.u32 %a5, %a4, %a2;
    xor.b32 %a6, %a5, %a4;
    add.u32 %a7, %a6, %a2;
    st.param.b32 [rv], %a7;
    ret;
}
.visible .entry corners(.param .u64 out)
{
    .reg .b32 %r<30>;
    .reg .pred %p<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 20;
    add.s64 %rd3, %rd1, %rd2;
    mov.u32 %r2, 0;
LOOP:
    add.u32 %r3, %r4, %r2;
    mul.lo.u32 %r5, %r3, 3;
    add.u32 %r4, %r3, %r1;
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, 3;
    @%p1 bra LOOP;
    add.u32 %r6, %r4, %r5;
    st.global.u32 [%rd3], %r6;
    and.b32 %r7, %r1, 1;
    setp.eq.u32 %p2, %r7, 0;
    @%p2 bra EVEN;
    add.u32 %r8, %r1, 100;
    bra.uni JOIN;
EVEN:
    mul.lo.u32 %r9, %r1, 9;
    add.u32 %r10, %r9, 1;
    mul.lo.u32 %r11, %r10, %r10;
    st.global.u32 [%rd3+16], %r11;
JOIN:
    st.global.u32 [%rd3+4], %r8;
    {
    .param .b32 a0;
    st.param.b32 [a0], %r1;
    .param .b32 r0;
    call.uni (r0), acc, (a0);
    ld.param.b32 %r12, [r0];
    }
    {
    .param .b32 a1;
    add.u32 %r13, %r1, 5;
    st.param.b32 [a1], %r13;
    .param .b32 r1;
    call.uni (r1), acc, (a1);
    ld.param.b32 %r14, [r1];
    }
    add.u32 %r15, %r12, %r14;
    st.global.u32 [%rd3+8], %r15;
    mul.lo.u32 %r16, %r1, 1000;
    @%p2 bra SHFL;
    mul.lo.u32 %r17, %r1, 77;
    add.u32 %r18, %r17, 1;
    bra.uni AFTER;
SHFL:
    shfl.sync.idx.b32 %r19, %r16, 2, 31, 0x55555555;
    st.global.u32 [%rd3+12], %r19;
AFTER:
    ret;
}
"#;

    fn run(m: &Module) -> Vec<u32> {
        let mut e = Emulator::new(EmuConfig::default());
        let out = e.alloc(32 * 20);
        e.write(out, &[0xAB; 32 * 20]).expect("write");
        e.launch(
            m,
            "corners",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::Ptr(out)],
        )
        .expect("runs");
        let bytes = e.read(out, 32 * 20).expect("read");
        bytes
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4")))
            .collect()
    }

    #[test]
    fn corner_cases_read_what_a_slot_per_register_reads() {
        let declared = Module::parse_declared_registers(CORNERS).expect("parses");
        let shared = Module::parse(CORNERS).expect("parses");
        assert!(shared.nregs < declared.nregs);
        let (a, b) = (run(&declared), run(&shared));
        assert_eq!(a, b);
        // The values themselves, lane by lane (the declared numbering's, computed by hand).
        let acc = |prev: u32, x: u32| {
            let a2 = prev.wrapping_add(x);
            let a4 = x.wrapping_mul(7);
            let a5 = a4.wrapping_add(a2);
            ((a5 ^ a4).wrapping_add(a2), a2)
        };
        for t in 0..32u32 {
            let w = &b[t as usize * 5..t as usize * 5 + 5];
            // Loop: %r4 starts at 0 and gains i + t per iteration; %r5 = 3 · the last %r3.
            let (mut r4, mut r5) = (0u32, 0u32);
            for i in 0..3 {
                let r3 = r4 + i;
                r5 = r3 * 3;
                r4 = r3 + t;
            }
            assert_eq!(w[0], r4 + r5, "lane {t}: loop");
            // %r8 is written by odd lanes only; even lanes read their zero.
            assert_eq!(
                w[1],
                if t % 2 == 1 { t + 100 } else { 0 },
                "lane {t}: branch"
            );
            let (first, kept) = acc(0, t);
            let (second, _) = acc(kept, t + 5);
            assert_eq!(w[2], first.wrapping_add(second), "lane {t}: calls");
            if t % 2 == 0 {
                // Even lanes read lane 2's %r16 (2000).
                assert_eq!(w[3], 2000, "lane {t}: shfl");
                assert_eq!(w[4], (t * 9 + 1) * (t * 9 + 1), "lane {t}: even side");
            } else {
                assert_eq!((w[3], w[4]), (0xABAB_ABAB, 0xABAB_ABAB), "lane {t}");
            }
        }
    }

    #[test]
    fn control_leaving_a_function_keeps_the_numbering() {
        // The parser refuses a branch to another function's label; should one appear in decoded code,
        // nothing of the module is renumbered.
        let src = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry first()
{
    .reg .b32 %a<4>;
    .reg .pred %p;
    mov.u32 %a1, 1;
    add.u32 %a2, %a1, 1;
    setp.eq.u32 %p, %a2, 2;
    @%p bra DONE;
    add.u32 %a3, %a2, 1;
DONE:
    ret;
}
.visible .entry second()
{
    .reg .b32 %b<4>;
    mov.u32 %b1, 1;
    add.u32 %b2, %b1, 1;
    add.u32 %b3, %b2, 1;
}
"#;
        let m = Module::parse_declared_registers(src).expect("parses");
        let mut code = m.code.clone();
        let shared = share_slots(&m.funcs, &mut code, m.nregs, &m.reg_names).expect("shares");
        assert!(shared.0 < m.nregs, "{} {}", shared.0, m.nregs);
        // Point `first`'s branch into `second`.
        let mut code = m.code.clone();
        let second = m
            .funcs
            .iter()
            .find(|f| f.name == "second")
            .expect("second")
            .start;
        let bra = code
            .iter_mut()
            .find(|i| i.kind == Kind::Bra)
            .expect("a branch");
        *bra.args.last_mut().expect("target") = Operand::Label(second);
        assert!(share_slots(&m.funcs, &mut code, m.nregs, &m.reg_names).is_none());
    }
}
