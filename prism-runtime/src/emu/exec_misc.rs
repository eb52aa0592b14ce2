//! The smaller pieces of the interpreter: reserved shared memory, the release/acquire and same-value-store
//! rules of the race detector, and the instruction families of `emu/ptx_misc.rs` (carry arithmetic,
//! `isspacep`, `getctarank`, `alloca`, `cvt.pack`, SIMD video, bulk stores), `szext`/`fns`/`dp4a`/`dp2a`/`prmt`
//! modes, half-precision atomics, f16-accumulator `mma` packing and `movmatrix`.
//!
//! Reserved shared memory: the driver reserves 1 KiB of each block's shared memory for system use on sm_80
//! and later (`cudaDevAttrReservedSharedMemoryPerBlock`; 228 KiB per SM of which 227 KiB per block for the
//! kernel), and PTX ISA 7.6 added the special registers `%reserved_smem_offset_begin`, `_end`, `_cap`
//! (start, end and capacity of that region in the block's shared window) and `%reserved_smem_offset_<2>`
//! (offsets of two slots inside it); ISA 8.1 added `%aggr_smem_size` (static + dynamic + reserved).
//! Cooperative groups uses slot 1 as the scratch of tiles wider than a warp (at least 288 bytes,
//! `cooperative_groups/details/memory.h`). The emulator models the region as 1 KiB at the start of the
//! window, before the kernel's own variables (which then start at offset 1024), with slot 0 at 0 and slot 1
//! at 512 — but only in modules that read one of these registers: a module that cannot name the region
//! cannot observe it, and leaving it out keeps every other module's layout and per-block cost unchanged.
//! The hardware's slot offsets are not documented (UNCONFIRMED: this layout is the emulator's own).

use super::*;

/// Size of the reserved region when a module reads a reserved-shared-memory register.
pub(super) const RESERVED_SMEM: u32 = 1024;
/// Offset of `%reserved_smem_offset_1` in the region (the cooperative-groups scratch).
const RESERVED_SLOT1: u32 = 512;

/// Reserved shared bytes of a launch of `m`: [`RESERVED_SMEM`] if any instruction reads a
/// reserved-shared-memory register (or `%aggr_smem_size`), else 0.
pub(super) fn reserved_bytes(m: &Module) -> u32 {
    fn names(o: &Operand) -> bool {
        match o {
            Operand::Sreg(Sreg::Reserved(_)) => true,
            Operand::Vec(v) | Operand::List(v) => v.iter().any(names),
            _ => false,
        }
    }
    if m.code.iter().any(|i| i.args.iter().any(names)) {
        RESERVED_SMEM
    } else {
        0
    }
}

impl L<'_> {
    /// The special registers of this module's concern.
    pub(super) fn sreg_misc(&self, s: Sreg) -> u64 {
        let r = self.reserved as u64;
        match s {
            Sreg::Reserved(0) | Sreg::Reserved(3) => 0,
            Sreg::Reserved(1) | Sreg::Reserved(2) => r,
            Sreg::Reserved(4) => RESERVED_SLOT1.min(self.reserved) as u64,
            Sreg::Reserved(_) => self.smem_size as u64,
            Sreg::ClockHi => self.clock >> 32,
            Sreg::ExplicitCluster => (self.cluster_size() > 1) as u64,
            _ => 0,
        }
    }
}

impl L<'_> {
    /// Whether an earlier lane of this store issue (`exec`, lanes in increasing order) wrote the same values
    /// to the same address. Such a lane's write is then not checked for races: the CUDA Programming Guide
    /// defines a warp instruction whose lanes write one location (one of the writes lands), so identical
    /// values give a defined result — cooperative groups stores a warp's redux result from every lane
    /// (`multi_warp_scratch`). Different values still race (which lane wins is undefined).
    pub(super) fn same_store_as_earlier_lane(
        &mut self,
        exec: u32,
        lane: usize,
        addr: u64,
        vals: &[u64],
    ) -> bool {
        if !self.cfg.check_races || vals.len() > 4 {
            return false;
        }
        if exec & ((1u32 << lane) - 1) == 0 {
            self.same_st.clear();
        }
        let mut v = [0u64; 4];
        v[..vals.len()].copy_from_slice(vals);
        // Entry 0 carries the largest address so far: an address above it (a coalesced store) needs no scan.
        match self.same_st.first_mut() {
            None => self.same_st.push((addr, [0; 4])),
            Some(max) if addr > max.0 => max.0 = addr,
            Some(_) => {
                if self.same_st[1..].iter().any(|&(a, w)| a == addr && w == v) {
                    return true;
                }
            }
        }
        self.same_st.push((addr, v));
        false
    }
}

/// How many of the releasing thread's synchronization instances before its release an acquirer inherits.
const RELEASE_HOPS: usize = 8;

impl L<'_> {
    /// The race detector's key of a memory location (None: not race-checked).
    fn sync_key(&self, loc: Loc) -> Option<(bool, u64)> {
        match loc {
            Loc::Global(i, o) => Some((true, self.allocs[i].base + o as u64)),
            Loc::Shared(o) => Some((false, o as u64)),
            _ => None,
        }
    }

    /// A `.release` store or atomic (`st.release`, `red.or.release`, `atom.acq_rel`, ...): a completed
    /// synchronization instance the thread joins, remembered as the thread's latest release on `loc`.
    pub(super) fn release(&mut self, b: &mut Block, wi: usize, lane: usize, loc: Loc) {
        let Some(key) = self.sync_key(loc).filter(|_| self.cfg.check_races) else {
            return;
        };
        let t = self.tid_of(wi, lane);
        let i = b.inst.len() as u32;
        b.inst.push(Inst {
            waiters: [0; THREAD_WORDS],
            completed: true,
        });
        b.thr_inst[t as usize].push(i);
        let rel = b.relacq.entry(key).or_default();
        match rel.iter_mut().find(|x| x.0 == t) {
            Some(x) => x.1 = i,
            None => rel.push((t, i)),
        }
        // For acquires in other blocks: every thread's epoch now (the releasing thread's includes the
        // release, so its accesses up to it count).
        if key.0 {
            self.xstamp += 1;
            let rel = Released {
                block: b.lin,
                snap: std::sync::Arc::new(b.thr_inst.iter().map(|l| l.len() as u32).collect()),
                stamp: self.xstamp,
            };
            let via = passed_on(b, &rel.snap, t, self.nthreads, key.1);
            let at = self.xrel.entry(key.1).or_default();
            at.latest = self.xstamp;
            match at.rels.iter_mut().find(|x| x.rel.block == b.lin) {
                Some(x) => *x = XRelease { rel, via },
                None => at.rels.push(XRelease { rel, via }),
            }
        }
    }

    /// An `.acquire` load or atomic on `loc`: the thread is ordered after every earlier release on `loc`
    /// (each RMW extends the release sequence, and every access sees the latest value), and — one hop of
    /// transitivity — after the last [`RELEASE_HOPS`] barriers the releasing thread waited on before its
    /// release (cooperative groups' tiles wider than a warp publish a warp's writes with `bar.warp.sync` and
    /// one lane's `red.release`).
    pub(super) fn acquire(&mut self, b: &mut Block, wi: usize, lane: usize, loc: Loc) {
        let Some(key) = self.sync_key(loc).filter(|_| self.cfg.check_races) else {
            return;
        };
        let t = self.tid_of(wi, lane) as usize;
        if key.0 {
            self.acquire_foreign(b, t, key.1);
        }
        let Some(rel) = b.relacq.get(&key) else {
            return;
        };
        let bit = |x: usize| (x / 64, 1u64 << (x % 64));
        let (tw, tb) = bit(t);
        let mut got = Vec::new();
        for &(u, r) in rel {
            let u = u as usize;
            if u == t {
                continue;
            }
            b.inst[r as usize].waiters[tw] |= tb;
            got.push(r);
            let list = &b.thr_inst[u];
            let pos = list.binary_search(&r).unwrap_or(list.len());
            let (uw, ub) = bit(u);
            for &j in &list[pos.saturating_sub(RELEASE_HOPS)..pos] {
                let inst = &mut b.inst[j as usize];
                if inst.completed && inst.waiters[uw] & ub != 0 {
                    inst.waiters[tw] |= tb;
                    got.push(j);
                }
            }
        }
        got.sort_unstable();
        got.dedup();
        remember(b.acquired.entry(t as u32).or_default(), &got);
    }
}

/// At most this many acquisitions from other blocks a block keeps (the latest per releasing block and
/// acquiring thread; the oldest go first).
const FOREIGN_KEPT: usize = 2048;

impl L<'_> {
    /// Thread `t` (of `b`) acquires global address `addr`: it is ordered after what the latest release
    /// there by each other block had ordered before it.
    fn acquire_foreign(&mut self, b: &mut Block, t: usize, addr: u64) {
        let Some(at) = self.xrel.get(&addr) else {
            return;
        };
        // A spinning acquire meets the same releases again and again: only the new ones are merged.
        let seen = b.xseen.entry((t as u32, addr)).or_insert(0);
        if at.latest <= *seen {
            return;
        }
        let since = std::mem::replace(seen, at.latest);
        let tg = b.lin * self.nthreads + t as u32;
        let e_t = b.thr_inst[t].len() as u32;
        let released = at
            .rels
            .iter()
            .filter(|r| r.rel.stamp > since)
            .flat_map(|r| std::iter::once(&r.rel).chain(r.via.iter()));
        let foreign = std::sync::Arc::make_mut(&mut b.foreign);
        for r in released.filter(|r| r.block != b.lin) {
            Foreign::acquire(foreign, r, tg, e_t, addr);
        }
        if foreign.len() > FOREIGN_KEPT {
            // Full: the acquisitions of the oldest releases go (later accesses mostly meet recent
            // hand-offs), a quarter at a time.
            let mut stamps: Vec<u64> = foreign.values().map(|f| f.stamp).collect();
            let cut = foreign.len() - FOREIGN_KEPT * 3 / 4;
            let (_, &mut floor, _) = stamps.select_nth_unstable(cut);
            foreign.retain(|_, f| f.stamp >= floor);
        }
    }
}

/// What a release by thread `t` (of `b`, at epochs `snap`, on global location `at`) passes on of the block's acquisitions from
/// other blocks: those of `t` itself, and those of threads that passed a synchronization instance after
/// their acquire (`e_t < snap`, the rule an access of theirs is covered by) — the latest per block.
fn passed_on(
    b: &Block,
    snap: &Snapshot,
    t: u32,
    nthreads: u32,
    at: u64,
) -> std::sync::Arc<[Released]> {
    let mut via: Vec<Released> = Vec::new();
    let tg = b.lin * nthreads + t;
    for f in b.foreign.values() {
        // What was acquired at the released location itself, an acquirer there meets directly (the
        // location keeps each block's latest release): passing it on would only repeat it — and made a
        // hot counter's every acquire merge every block's list.
        if f.from == at {
            continue;
        }
        let local = (f.t % nthreads.max(1)) as usize;
        if f.t != tg && snap.get(local).is_none_or(|&s| f.e_t >= s) {
            continue;
        }
        let r = Released {
            block: f.block,
            snap: f.snap.clone(),
            stamp: f.stamp,
        };
        // (`foreign` is sorted by block: one block's entries are adjacent.)
        match via.last_mut().filter(|v| v.block == f.block) {
            Some(v) if v.stamp < f.stamp => *v = r,
            Some(_) => {}
            None => via.push(r),
        }
    }
    via.into()
}

/// `add{c}`/`sub{c}` of `bits`-bit `x` and `y` with the carry in `cin` (`None`: `add.cc`/`sub.cc`): the
/// result and the carry out. The hardware subtracts by adding the complement, `x + !y + 1` (`sub.cc`) or
/// `x + !y + CF` (`subc`), so CF after a subtraction is the adder's carry, the complement of the borrow,
/// and an `addc` after a `sub.cc` (or a `subc` after an `add.cc`) sees it that way.
fn add_carry(x: u64, y: u64, cin: Option<u64>, sub: bool, bits: u32) -> (u64, bool) {
    let mk = mask_bits(bits);
    let (y, cf) = match (sub, cin) {
        (true, cf) => (!y & mk, cf.unwrap_or(1)),
        (false, cf) => (y & mk, cf.unwrap_or(0)),
    };
    let s = (x & mk) as u128 + y as u128 + cf as u128;
    (s as u64 & mk, s >> bits != 0)
}

/// How many acquired instances a thread remembers for [`L::collective_orders`].
const ACQUIRED_KEPT: usize = 64;

impl L<'_> {
    /// A `bar.warp.sync` or `shfl/vote/match/redux.sync` the lanes of `exec` executed together passes on
    /// what each member acquired (`acquire`, the last [`ACQUIRED_KEPT`] instances) to all of them: one lane
    /// acquires a flag, `__syncwarp()`, and the whole warp reads the published data (cooperative groups
    /// broadcasts the flag with `shfl.sync` instead). The PTX memory model promises ordering for
    /// `bar.warp.sync` only; the hardware's warp executes the other collectives together, so this is what
    /// it does. (Until 2026-11-28 `bar.warp.sync` did not pass it on: a false race, `emu_nvcc_round34.rs`.)
    pub(super) fn collective_orders(&mut self, b: &mut Block, wi: usize, exec: u32) {
        if !self.cfg.check_races || b.acquired.is_empty() || exec.count_ones() < 2 {
            return;
        }
        let members: Vec<usize> = (0..32)
            .filter(|l| exec & (1 << l) != 0)
            .map(|l| self.tid_of(wi, l) as usize)
            .collect();
        let mut got: Vec<u32> = members
            .iter()
            .filter_map(|t| b.acquired.get(&(*t as u32)))
            .flatten()
            .copied()
            .collect();
        if got.is_empty() {
            return;
        }
        got.sort_unstable();
        got.dedup();
        for &j in &got {
            for &t in &members {
                b.inst[j as usize].waiters[t / 64] |= 1 << (t % 64);
            }
        }
        for &t in &members {
            remember(b.acquired.entry(t as u32).or_default(), &got);
        }
    }
}

/// Adds `new` to a thread's acquired instances, keeping the last [`ACQUIRED_KEPT`].
fn remember(list: &mut Vec<u32>, new: &[u32]) {
    for &j in new {
        if !list.contains(&j) {
            list.push(j);
        }
    }
    if list.len() > ACQUIRED_KEPT {
        list.drain(..list.len() - ACQUIRED_KEPT);
    }
}

/// Bytes of `alloca` stack each thread gets in a module that uses `alloca` (beyond its static frame).
pub(super) const ALLOCA_STACK: usize = 4096;

/// Local memory per thread for a launch of `m`: the static frame, plus the `alloca` stack if it has one.
/// A multiple of 16 bytes, so that a recursive call's frame layer (`local_size` above the last) keeps
/// every `.local` variable's alignment (nvcc aligns its depots to 16 at most).
pub(super) fn local_bytes(m: &Module) -> usize {
    let base = (m.local_size as usize).next_multiple_of(16);
    if m.uses_alloca() {
        base + ALLOCA_STACK
    } else {
        base
    }
}

/// `szext`, `fns`, `dp4a`, `dp2a` and `prmt`'s special modes (PTX ISA, integer arithmetic and `prmt`).
pub(super) fn alu_misc(op: AluOp, ty: PtxType, m: Mods, a: u64, b: u64, c: u64) -> u64 {
    let (a32, b32, c32) = (a as u32, b as u32, c as u32);
    let r: u32 = match op {
        AluOp::Szext => {
            // Width from b: clamped to 32 or taken mod 32; width 0 gives 0, 32 keeps a.
            let n = if m.clamp { b32.min(32) } else { b32 & 31 };
            match n {
                0 => 0,
                32 => a32,
                n if ty.is_signed() => (((a32 << (32 - n)) as i32) >> (32 - n)) as u32,
                n => a32 & ((1u32 << n) - 1),
            }
        }
        AluOp::Fns => fns(a32, b32, c32 as i32),
        AluOp::Dp4a(sa, sb) => {
            let byte = |x: u32, i: u32, s: bool| -> i64 {
                let v = (x >> (8 * i)) & 0xff;
                if s {
                    v as u8 as i8 as i64
                } else {
                    v as i64
                }
            };
            let sum: i64 = (0..4).map(|i| byte(a32, i, sa) * byte(b32, i, sb)).sum();
            (c32 as i64).wrapping_add(sum) as u32
        }
        AluOp::Dp2a(sa, sb) => {
            let half = |i: u32| -> i64 {
                let v = (a32 >> (16 * i)) & 0xffff;
                if sa {
                    v as u16 as i16 as i64
                } else {
                    v as i64
                }
            };
            let first = if m.hi { 2 } else { 0 };
            let byte = |i: u32| -> i64 {
                let v = (b32 >> (8 * (first + i))) & 0xff;
                if sb {
                    v as u8 as i8 as i64
                } else {
                    v as i64
                }
            };
            let sum = half(0) * byte(0) + half(1) * byte(1);
            (c32 as i64).wrapping_add(sum) as u32
        }
        AluOp::PrmtMode(mode) => prmt_mode(mode, a32, b32, c32),
        _ => 0,
    };
    r as u64
}

/// `fns.b32 d, mask, base, offset`: the bit position of the |offset|-th set bit of `mask` counting from
/// `base` (upwards for a positive offset, downwards for a negative one); offset 0 asks whether bit `base` is
/// set. Not found: 0xffffffff.
fn fns(mask: u32, base: u32, offset: i32) -> u32 {
    if offset == 0 {
        return if base < 32 && (mask >> base) & 1 == 1 {
            base
        } else {
            u32::MAX
        };
    }
    let mut count = offset.unsigned_abs() - 1;
    let mut pos = base as i64;
    let inc = if offset > 0 { 1 } else { -1 };
    while (0..32).contains(&pos) {
        if (mask >> pos) & 1 == 1 {
            if count == 0 {
                return pos as u32;
            }
            count -= 1;
        }
        pos += inc;
    }
    u32::MAX
}

/// `prmt.b32.mode`: the source byte (of `{b, a}`, bytes 0..7) of each result byte, by mode and `c[1:0]`,
/// result byte 0 first (PTX ISA, `prmt`: f4e, b4e, rc8, ecl, ecr, rc16).
fn prmt_mode(mode: u8, a: u32, b: u32, c: u32) -> u32 {
    const TABLE: [[[u8; 4]; 4]; 6] = [
        [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]], // f4e
        [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]], // b4e
        [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]], // rc8
        [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]], // ecl
        [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]], // ecr
        [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]], // rc16
    ];
    let bytes = a as u64 | (b as u64) << 32;
    let sel = &TABLE[mode as usize % 6][(c & 3) as usize];
    (0..4).fold(0u32, |r, i| {
        r | (((bytes >> (8 * sel[i] as u64)) & 0xff) as u32) << (8 * i)
    })
}

/// 16-bit float atomics (`atom/red.add.noftz.f16`, `.bf16`, `.f16x2`, `.bf16x2`, `.min`, `.max`): each
/// half is combined in f32 and rounded once, as the hardware's add rounds to nearest.
pub(super) fn atomic_half(op: AtomOp, ty: PtxType, old: u64, x: u64) -> u64 {
    let one = |et: PtxType, o: u64, v: u64| -> u64 {
        let f = |h: u64| -> f32 {
            if et == PtxType::F16 {
                half::f16::from_bits(h as u16).to_f32()
            } else {
                half::bf16::from_bits(h as u16).to_f32()
            }
        };
        let (fo, fv) = (f(o), f(v));
        let r = match op {
            AtomOp::Add => fo + fv,
            AtomOp::Min if fo.is_nan() || fv.is_nan() => return if fo.is_nan() { v } else { o },
            AtomOp::Max if fo.is_nan() || fv.is_nan() => return if fo.is_nan() { v } else { o },
            AtomOp::Min => fo.min(fv),
            AtomOp::Max => fo.max(fv),
            _ => return o,
        };
        (if et == PtxType::F16 {
            half::f16::from_f32(r).to_bits()
        } else {
            half::bf16::from_f32(r).to_bits()
        }) as u64
    };
    match ty {
        PtxType::F16 | PtxType::BF16 => one(ty, old & 0xffff, x & 0xffff),
        _ => {
            let et = if ty == PtxType::F16x2 {
                PtxType::F16
            } else {
                PtxType::BF16
            };
            one(et, old & 0xffff, x & 0xffff)
                | one(et, (old >> 16) & 0xffff, (x >> 16) & 0xffff) << 16
        }
    }
}

impl L<'_> {
    /// Runs a [`MiscOp`] for the lanes of `exec`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_misc(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        op: MiscOp,
    ) -> Step {
        let m = self.m;
        let ins = &m.code[pc as usize];
        let args = &ins.args;
        let mut mm = exec;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let v = |i: usize| args.get(i).map(|o| self.val(b, w, wi, o, l)).unwrap_or(0);
            let result = match op {
                MiscOp::AddCarry { sub, cin, cout, ty } => {
                    let cf = w.regs[REG_CARRY as usize * 32 + l] & 1;
                    let (d, carry) = add_carry(v(1), v(2), cin.then_some(cf), sub, ty.bits());
                    if cout {
                        w.regs[REG_CARRY as usize * 32 + l] = carry as u64;
                    }
                    Some(d)
                }
                MiscOp::MadCarry { hi, cin, cout, ty } => {
                    let bits = ty.bits();
                    let mk = mask_bits(bits);
                    let cf = if cin {
                        w.regs[REG_CARRY as usize * 32 + l] & 1
                    } else {
                        0
                    };
                    let signed = ty.is_signed();
                    let (x, y, z) = (v(1) & mk, v(2) & mk, v(3) & mk);
                    let p = if signed {
                        (sext(x, bits) as i128 * sext(y, bits) as i128) as u128
                    } else {
                        x as u128 * y as u128
                    };
                    let part = if hi {
                        (p >> bits) as u64 & mk
                    } else {
                        p as u64 & mk
                    };
                    let s = part as u128 + z as u128 + cf as u128;
                    if cout {
                        w.regs[REG_CARRY as usize * 32 + l] = (s >> bits != 0) as u64;
                    }
                    Some(s as u64 & mk)
                }
                MiscOp::Isspacep(sp) => {
                    let a = v(1);
                    let in_win = |base: u64| (base..base + WINDOW).contains(&a);
                    let yes = match sp {
                        IsSpace::Global => self
                            .allocs
                            .iter()
                            .any(|x| (x.base..x.base + x.data.len() as u64).contains(&a)),
                        // Constant data lives in global allocations here: no address is `.const`.
                        IsSpace::Const => false,
                        IsSpace::Local => in_win(LOCAL_WINDOW),
                        IsSpace::Param => in_win(PARAM_WINDOW),
                        IsSpace::Shared(cluster) => {
                            let tag = ((a.wrapping_sub(SHARED_WINDOW) >> 24) & 0x3F) as u32;
                            in_win(SHARED_WINDOW) && (cluster || tag == 0 || tag - 1 == b.crank)
                        }
                    };
                    Some(yes as u64)
                }
                MiscOp::Getctarank => {
                    let a = v(1);
                    let off = if (SHARED_WINDOW..SHARED_WINDOW + WINDOW).contains(&a) {
                        a - SHARED_WINDOW
                    } else {
                        a
                    };
                    let tag = ((off >> 24) & 0x3F) as u32;
                    Some(if tag == 0 { b.crank } else { tag - 1 } as u64)
                }
                MiscOp::Alloca | MiscOp::Stacksave | MiscOp::Stackrestore => {
                    let (x, y) = if op == MiscOp::Stackrestore {
                        (v(0), 0)
                    } else {
                        (v(1), v(2))
                    };
                    match self.stack_op(w, l, op, x, y) {
                        Ok(r) => r,
                        Err(msg) => {
                            self.fault(b, wi, Some(l as u32), pc, FaultKind::OutOfBounds, msg);
                            return Step::Stop;
                        }
                    }
                }
                MiscOp::CvtPack(ty, bits) => {
                    let sat = |x: u64| -> u64 {
                        let x = x as u32 as i32 as i64;
                        let (lo, hi) = if ty.is_signed() {
                            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
                        } else {
                            (0, (1i64 << bits) - 1)
                        };
                        (x.clamp(lo, hi) as u64) & mask_bits(bits as u32)
                    };
                    let bits = bits as u32;
                    let td = sat(v(1)) << bits | sat(v(2));
                    Some(if bits == 16 {
                        td
                    } else {
                        (td | (v(3) << (2 * bits))) & 0xffff_ffff
                    })
                }
                MiscOp::Simd(sop) => Some(simd(sop, v(1), v(2), v(3))),
                MiscOp::CvtFp8(c) => Some(cvt_fp8(c, v(1), v(2))),
                MiscOp::Video(o) => Some(video(o, v(1), v(2), v(3))),
                MiscOp::BulkStore => {
                    if !self.bulk_store(b, wi, w, pc, l) {
                        return Step::Stop;
                    }
                    None
                }
                MiscOp::Brkpt => {
                    let msg = "brkpt executed (a breakpoint stops the kernel without a debugger)";
                    self.fault(b, wi, Some(l as u32), pc, FaultKind::Trap, msg.into());
                    return Step::Stop;
                }
            };
            if let Some(r) = result {
                Self::set(w, &args[0], l, r);
            }
        }
        Self::advance(w, mask);
        Step::Continue
    }

    /// `alloca` (`Ok(Some(address))`), `stacksave` (`Ok(Some(address))`), `stackrestore` (`Ok(None)`): the
    /// thread's stack is [`ALLOCA_STACK`] bytes after its static local frame, growing upwards; the hidden
    /// register [`REG_STACK`] holds the bytes in use.
    fn stack_op(
        &self,
        w: &mut Warp,
        l: usize,
        op: MiscOp,
        a1: u64,
        a2: u64,
    ) -> Result<Option<u64>, String> {
        let base = (self.m.local_size as u64).next_multiple_of(16);
        let used = &mut w.regs[REG_STACK as usize * 32 + l];
        match op {
            MiscOp::Alloca => {
                let align = if a2 == 0 { 8 } else { a2 };
                let start = (base + *used).next_multiple_of(align.max(1));
                let end = start + a1;
                if end > base + ALLOCA_STACK as u64 {
                    return Err(format!(
                        "alloca of {a1} bytes overflows the emulator's {ALLOCA_STACK}-byte per-thread stack"
                    ));
                }
                *used = end - base;
                Ok(Some(start))
            }
            MiscOp::Stacksave => Ok(Some(base + *used)),
            _ => {
                if a1 < base || a1 > base + ALLOCA_STACK as u64 {
                    return Err(format!(
                        "stackrestore to 0x{a1:x}, which is not an address of the thread's stack"
                    ));
                }
                *used = a1 - base;
                Ok(None)
            }
        }
    }
}

/// SIMD video (PTX ISA, `vadd2` … `vmax4`): per 8-bit (4 lanes) or 16-bit (2 lanes) element, the operation on
/// the sign- or zero-extended elements of a and b, saturated to d's element type with `.sat` (else
/// truncated); with `.add`, the sum of the element results plus c.
fn simd(s: SimdOp, a: u64, b: u64, c: u64) -> u64 {
    let w = 32 / s.lanes as u32;
    let ext = |x: u64, i: u32, signed: bool| -> i64 {
        let v = (x >> (w * i)) & ((1 << w) - 1);
        if signed {
            (v << (64 - w)) as i64 >> (64 - w)
        } else {
            v as i64
        }
    };
    let (lo, hi) = if s.sd {
        (-(1i64 << (w - 1)), (1i64 << (w - 1)) - 1)
    } else {
        (0, (1i64 << w) - 1)
    };
    let mut d = 0u64;
    let mut sum = c as u32 as i64;
    for i in 0..s.lanes as u32 {
        let (x, y) = (ext(a, i, s.sa), ext(b, i, s.sb));
        let r = match s.op {
            0 => x + y,
            1 => x - y,
            2 => (x + y + 1) >> 1,
            3 => (x - y).abs(),
            4 => x.min(y),
            _ => x.max(y),
        };
        sum += r;
        let r = if s.sat { r.clamp(lo, hi) } else { r };
        let r = if s.relu { r.max(0) } else { r };
        d |= ((r as u64) & ((1 << w) - 1)) << (w * i);
    }
    if s.add {
        sum as u32 as u64
    } else {
        d
    }
}

/// A scalar video instruction (PTX ISA `vadd` … `vmax`): a and b extended by their types to 64 bits, the
/// operation, `.sat` to d's type (else the low 32 bits), then the secondary operation with c.
fn video(o: VideoOp, a: u64, b: u64, c: u64) -> u64 {
    let ext = |x: u64, s: bool| {
        if s {
            x as u32 as i32 as i64
        } else {
            x as u32 as i64
        }
    };
    let (x, y) = (ext(a, o.sa), ext(b, o.sb));
    let r = match o.op {
        0 => x + y,
        1 => x - y,
        3 => (x - y).abs(),
        4 => x.min(y),
        _ => x.max(y),
    };
    let r = if o.sat {
        if o.sd {
            r.clamp(i32::MIN as i64, i32::MAX as i64)
        } else {
            r.clamp(0, u32::MAX as i64)
        }
    } else {
        ext(r as u64, o.sd)
    };
    let cz = ext(c, o.sd);
    let r = match o.op2 {
        Some(0) => r + cz,
        Some(1) => r.min(cz),
        Some(2) => r.max(cz),
        _ => r,
    };
    r as u32 as u64
}

/// Bits of the largest finite FP8 value (E4M3: 448, E5M2: 57344).
fn fp8_max(e5m2: bool) -> u8 {
    if e5m2 {
        0x7B
    } else {
        0x7E
    }
}

/// `x` rounded to the nearest FP8 value (ties to even) with `.satfinite`: beyond the largest finite
/// value (infinities included) it is that value; NaN is the canonical NaN 0x7F; `.relu` makes negative
/// results +0.
pub(super) fn to_fp8(x: f64, e5m2: bool, relu: bool) -> u8 {
    if x.is_nan() {
        return 0x7F;
    }
    let x = if relu && x < 0.0 { 0.0 } else { x };
    let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
    let (mbits, bias) = if e5m2 { (2i32, 15i32) } else { (3, 7) };
    let max = fp8_value(fp8_max(e5m2), e5m2);
    let a = x.abs();
    if a == 0.0 {
        return sign;
    }
    if a >= max {
        return sign | fp8_max(e5m2);
    }
    let emin = 1 - bias;
    let e = (((a.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(emin);
    let quantum = (2f64).powi(e - mbits);
    let r = (a / quantum).round_ties_even() * quantum;
    if r >= max {
        return sign | fp8_max(e5m2);
    }
    if r == 0.0 {
        return sign;
    }
    let er = ((r.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let code = if er < emin {
        (r / (2f64).powi(emin - mbits)) as u8
    } else {
        (((er + bias) as u8) << mbits) | ((r / (2f64).powi(er - mbits)) as u8 & ((1 << mbits) - 1))
    };
    sign | code
}

/// The value of an FP8 code (E4M3 has no infinities and one NaN pattern per sign; E5M2 is IEEE-like).
pub(super) fn fp8_value(c: u8, e5m2: bool) -> f64 {
    let (mbits, bias, emax) = if e5m2 { (2, 15, 31) } else { (3, 7, 15) };
    let sign = if c & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = ((c & 0x7f) >> mbits) as i32;
    let m = (c & ((1 << mbits) - 1)) as f64;
    if e5m2 && e == emax {
        return if m == 0.0 {
            sign * f64::INFINITY
        } else {
            f64::NAN
        };
    }
    if !e5m2 && e == emax && m == 7.0 {
        return f64::NAN;
    }
    let frac = if e == 0 {
        m / (1 << mbits) as f64 * (2f64).powi(1 - bias)
    } else {
        (1.0 + m / (1 << mbits) as f64) * (2f64).powi(e - bias)
    };
    sign * frac
}

/// [`MiscOp::CvtFp8`] on the source operands `a`, `b`.
fn cvt_fp8(c: Fp8Cvt, a: u64, b: u64) -> u64 {
    if c.to_f16x2 {
        let half = |byte: u8| {
            let v = fp8_value(byte, c.e5m2);
            if c.relu && v < 0.0 {
                0
            } else if c.e5m2 {
                // E5M2 is the top byte of an f16: NaN payloads and signs carry over.
                (byte as u64) << 8
            } else if v.is_nan() {
                0x7fff
            } else {
                half::f16::from_f64(v).to_bits() as u64
            }
        };
        return half(a as u8) | half((a >> 8) as u8) << 16;
    }
    let (hi, lo) = if c.from_f32 {
        (
            f32::from_bits(a as u32) as f64,
            f32::from_bits(b as u32) as f64,
        )
    } else {
        let [l, h] = f16x2_unpack(a);
        (h as f64, l as f64)
    };
    (to_fp8(hi, c.e5m2, c.relu) as u64) << 8 | to_fp8(lo, c.e5m2, c.relu) as u64
}

/// The two f16 halves of an f16x2 register (low first).
pub(super) fn f16x2_unpack(v: u64) -> [f32; 2] {
    [
        half::f16::from_bits(v as u16).to_f32(),
        half::f16::from_bits((v >> 16) as u16).to_f32(),
    ]
}

/// Two values rounded once to f16 and packed (low first): `mma` with f16 accumulators.
pub(super) fn f16x2_pack(lo: f64, hi: f64) -> u64 {
    half::f16::from_f64(lo).to_bits() as u64 | (half::f16::from_f64(hi).to_bits() as u64) << 16
}

/// `movmatrix.sync.aligned.m8n8.trans.b16 d, a` (the whole warp, checked by the collective): lane i holds row
/// i/4, columns 2(i%4) and 2(i%4)+1 of the matrix (low half first) in `a`, and receives the same elements of
/// its transpose in `d` (PTX ISA, `movmatrix`).
pub(super) fn movmatrix(l: &mut L<'_>, b: &Block, w: &mut Warp, wi: usize, args: &[Operand]) {
    let mut m = [[0u16; 8]; 8];
    for lane in 0..32usize {
        let v = l.val(b, w, wi, &args[1], lane);
        let (r, c) = (lane / 4, 2 * (lane % 4));
        m[r][c] = v as u16;
        m[r][c + 1] = (v >> 16) as u16;
    }
    for lane in 0..32usize {
        let (r, c) = (lane / 4, 2 * (lane % 4));
        let v = m[c][r] as u64 | (m[c + 1][r] as u64) << 16;
        L::set(w, &args[0], lane, v);
    }
}

impl L<'_> {
    /// One lane's `cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size`: shared → global, complete
    /// at issue (its bulk group then has nothing pending), its source read through the async proxy
    /// (`proxy.rs`). False when it faulted.
    fn bulk_store(&mut self, b: &mut Block, wi: usize, w: &Warp, pc: u32, l: usize) -> bool {
        let args = &self.m.code[pc as usize].args;
        let addr = |me: &Self, o: &Operand| match o {
            Operand::Addr(base, off) => me.addr(w, base, *off, l, false),
            o => me.val(b, w, wi, o, l),
        };
        let (dst, src) = (addr(self, &args[0]), addr(self, &args[1]));
        let size = self.val(b, w, wi, &args[2], l) as usize;
        if !size.is_multiple_of(16) || !dst.is_multiple_of(16) || !src.is_multiple_of(16) {
            let msg = format!("cp.async.bulk of {size} bytes from {src:#x} to {dst:#x}: the size and both addresses must be multiples of 16");
            self.fault(b, wi, Some(l as u32), pc, FaultKind::Misaligned, msg);
            return false;
        }
        let dl = self.resolve(b, wi, l, Space::Global, dst, size.max(1), pc);
        let sl = self.resolve(b, wi, l, Space::Shared, src, size.max(1), pc);
        let (Some(dl), Some(sl)) = (dl, sl) else {
            return false;
        };
        let data = self.mem_slice(b, sl)[..size].to_vec();
        self.track(b, wi, l, sl, size, Acc::Read, pc, src);
        // The source is read through the async proxy, as a TMA store's box is: every generic write to it
        // fenced (`fence.proxy.async`) by its writer, and held until the thread's bulk wait covers its group.
        if let Loc::Shared(o) = sl {
            let tid = self.tid_of(wi, l) as usize;
            let group = b.proxy.store_group(tid, self.nthreads as usize);
            let holder = super::proxy::Holder::Store {
                tid: tid as u32,
                group,
            };
            self.proxy_async_read(b, wi, l, pc, o, o + size, holder, "a bulk store");
        }
        self.track(b, wi, l, dl, size, Acc::Write, pc, dst);
        self.mem_slice(b, dl)[..size].copy_from_slice(&data);
        self.finish_access(pc);
        true
    }
}

#[cfg(test)]
mod fp8_tests {
    use super::*;

    #[test]
    fn every_fp8_code_round_trips_and_rounding_is_to_nearest_even() {
        for e5m2 in [false, true] {
            for c in 0..=255u8 {
                let v = fp8_value(c, e5m2);
                if v.is_nan() {
                    assert_eq!(to_fp8(v, e5m2, false), 0x7F);
                } else if v.is_infinite() {
                    assert_eq!(to_fp8(v, e5m2, false) & 0x7f, fp8_max(e5m2), "satfinite");
                } else {
                    assert_eq!(to_fp8(v, e5m2, false), c, "code {c:#04x} e5m2 {e5m2}");
                }
            }
        }
        // E4M3: 1.0625 is halfway between 1.0 (0x38) and 1.125 (0x39): ties to even.
        assert_eq!(to_fp8(1.0625, false, false), 0x38);
        assert_eq!(to_fp8(1.0626, false, false), 0x39);
        assert_eq!(to_fp8(1.5, false, false), 0x3C);
        assert_eq!(to_fp8(-3.0, false, false), 0xC4);
        assert_eq!(to_fp8(1000.0, false, false), 0x7E, "448 at most");
        assert_eq!(to_fp8(-1e9, true, false), 0xFB, "-57344 at most");
        assert_eq!(
            to_fp8(2f64.powi(-10), false, false),
            0x00,
            "half the smallest subnormal: even"
        );
        assert_eq!(
            to_fp8(2f64.powi(-9), false, false),
            0x01,
            "smallest E4M3 subnormal"
        );
        assert_eq!(to_fp8(-2.0, false, true), 0x00, ".relu");
        // The PTX ISA's packing: a to the high byte.
        let c = Fp8Cvt {
            e5m2: false,
            from_f32: true,
            to_f16x2: false,
            relu: false,
        };
        let (a, b) = (1.5f32.to_bits() as u64, (-3.0f32).to_bits() as u64);
        assert_eq!(cvt_fp8(c, a, b), 0x3CC4);
        let back = Fp8Cvt {
            to_f16x2: true,
            ..c
        };
        // 0x3CC4 → (high) 1.5, (low) -3.0 as f16.
        assert_eq!(cvt_fp8(back, 0x3CC4, 0), 0x3E00 << 16 | 0xC200);
    }
}
