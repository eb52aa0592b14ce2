//! The SIMT interpreter.
//!
//! Each lane has its own program counter. A warp step picks one group of lanes that share a PC (see
//! `pick_group`) and executes the instruction for that group; lanes at equal PCs are thus regrouped
//! automatically (reconvergence). Blocks run one after another; warps of a block are interleaved by the
//! scheduler.

use super::ptx::*;
use super::*;
use std::collections::HashSet;

// Warpgroup MMA (sm_90a): a child module, since it works on the block's and the launch's private state.
#[path = "wgmma.rs"]
mod wgmma;
// TMA tensor copies and stmatrix (sm_90).
#[path = "tma.rs"]
mod tma;
// nvcuda::wmma (opaque fragments).
#[path = "wmma.rs"]
mod wmma;
// Clusters: mapa, barrier.cluster, other blocks' mbarriers.
#[path = "cluster.rs"]
mod cluster;
// Which blocks are live and which runs next.
#[path = "sched.rs"]
mod sched;
// The async proxy's ordering rules, checked with the race detector.
#[path = "proxy.rs"]
mod proxy;
// Reserved shared memory and the smaller instructions (alu forms that need no block state).
#[path = "exec_misc.rs"]
mod misc;
// Fast paths: whole-warp arithmetic and single-region memory accesses (issue 12).
#[path = "exec_fast.rs"]
mod exec_fast;
// Arithmetic and comparisons over 32 lanes at once.
#[path = "exec_alu.rs"]
mod exec_alu;
// Blocks on several OS threads, committed only when they did not interact (issue 12).
#[path = "parallel.rs"]
mod parallel;
// The race detector's shadow cells: per word while accesses cover whole words (issue 12).
#[path = "shadow.rs"]
mod shadow;
pub(crate) use shadow::ShadowMem;
// A launch's state from its arguments, and its report.
#[path = "launch.rs"]
mod launch;
pub(crate) use launch::{run_launch, LaunchArgs};

/// Shadow state of one byte of shared or global memory (race detection).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Shadow {
    /// Last writer: global thread id + 1 (0 = none); top bit = atomic.
    w: u32,
    w_ep: u32,
    w_pc: u32,
    /// Last reader: global thread id + 1 (0 = none); top bit = several unordered readers.
    r: u32,
    r_ep: u32,
    r_pc: u32,
}

const TOPBIT: u32 = 1 << 31;

/// Generic-address window of shared memory.
pub const SHARED_WINDOW: u64 = 0x0000_7000_0000_0000;
/// Generic-address window of local memory.
pub const LOCAL_WINDOW: u64 = 0x0000_7100_0000_0000;
/// Generic-address window of kernel parameters.
pub const PARAM_WINDOW: u64 = 0x0000_7200_0000_0000;
const WINDOW: u64 = 1 << 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ls {
    Run,
    Bar,
    Coll,
    Exit,
    Absent,
}

#[derive(Debug, Clone)]
struct Frame {
    ret_pc: u32,
    callee: u32,
    rets: Vec<Operand>,
}

struct Warp {
    regs: Vec<u64>,
    pc: [u32; 32],
    st: [Ls; 32],
    last_run: [u64; 32],
    stack: Vec<Vec<Frame>>,
    steps: u64,
    exist: u32,
    coll_member: u32,
    /// The group `pick_group` would choose next, when the last step was a fast-path instruction of a
    /// converged warp (all its runnable lanes moved on together and no lane changed state). Consumed by
    /// every step; only valid within one quantum (`run_slice` starts each quantum without it).
    hint: Option<(u32, u32)>,
}

impl Warp {
    /// Every lane that exists has exited.
    fn all_exited(&self) -> bool {
        (0..32).all(|l| self.exist & (1 << l) == 0 || self.st[l] == Ls::Exit)
    }

    fn run_mask(&self) -> u32 {
        let mut m = 0;
        for l in 0..32 {
            if self.st[l] == Ls::Run {
                m |= 1 << l;
            }
        }
        m
    }
}

#[derive(Default, Clone)]
struct Bar {
    arrived: u32,
    expected: Option<u32>,
    pc: u32,
    waiters: Vec<(u32, u32, Option<u32>)>,
    inst: Option<u32>,
    red_popc: u32,
    red_and: bool,
    red_or: bool,
    mode_red: Option<BarMode>,
}

struct Inst {
    waiters: Vec<u64>,
    completed: bool,
}

#[derive(Default, Clone, Copy)]
struct Mbar {
    expected: u32,
    pending: u32,
    tx: i64,
    phase: u32,
    inst: u32,
    prev: Option<u32>,
    /// Phases completed by another block of the cluster (a multicast `complete_tx`, a remote arrive) whose
    /// happens-before bookkeeping this block has not done yet (it cannot reach `inst` from there).
    remote_flips: u32,
}

struct Block {
    ctaid: [u32; 3],
    lin: u32,
    warps: Vec<Warp>,
    shared: Vec<u8>,
    sh_shadow: ShadowMem,
    local: Vec<u8>,
    bars: Vec<Bar>,
    inst: Vec<Inst>,
    thr_inst: Vec<Vec<u32>>,
    exited: u32,
    gen: u32,
    exit_gen: Vec<u32>,
    mbar: HashMap<u32, Mbar>,
    /// Last release instance of each location used by `atom.cas`/`atom.exch` (lock words, flags).
    rel: HashMap<(bool, u64), u32>,
    /// Release instances of each location used by `.release`/`.acq_rel` accesses: (thread, instance), the
    /// latest per thread (`misc::release`).
    relacq: HashMap<(bool, u64), Vec<(u32, u32)>>,
    /// Instances each thread recently waited on through an acquire (`misc::collective_orders`).
    acquired: HashMap<u32, Vec<u32>>,
    /// In-flight `wgmma` ops and groups, per warpgroup.
    wg: wgmma::WgState,
    /// The warp after the one that ran last (round-robin among the block's warps).
    rr: usize,
    /// Rank in its cluster (`%cluster_ctarank`) and the cluster's linear index.
    crank: u32,
    cid: u32,
    /// Per thread: the cluster-barrier phase it arrived in, or `u32::MAX` when it has not arrived.
    carrive: Vec<u32>,
    /// Every thread has exited (the block stays live until its whole cluster has finished).
    done: bool,
    /// Async-proxy state (generic writers, fences, in-flight async reads).
    proxy: proxy::ProxyState,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Acc {
    Read,
    Write,
    Atomic,
}

#[derive(Clone, Copy)]
enum Loc {
    Global(usize, usize),
    Shared(usize),
    Local(usize),
    Param(usize),
    /// Shared memory of another block of the cluster: (rank, offset).
    Remote(usize, usize),
}

struct L<'a> {
    m: &'a Module,
    allocs: &'a mut Vec<Alloc>,
    cfg: EmuConfig,
    grid: [u32; 3],
    bdim: [u32; 3],
    nthreads: u32,
    smem_size: usize,
    dyn_bytes: u32,
    dyn_off: u32,
    /// Bytes of reserved shared memory before the kernel's own (`misc::reserved_bytes`).
    reserved: u32,
    params: Vec<u8>,
    gaddrs: Vec<u64>,
    pic: Vec<InstrCounters>,
    faults: Vec<Fault>,
    race_seen: HashSet<u32>,
    rng: u64,
    steps: u64,
    launch_id: u64,
    abort: bool,
    last_alloc: usize,
    acc_g: Vec<(u64, u32)>,
    acc_s: Vec<(u32, u32)>,
    scratch: Vec<u64>,
    local_size: usize,
    atomics: u64,
    mma_ops: u64,
    clock: u64,
    printf: Vec<String>,
    /// Cluster shape (blocks per cluster in x, y, z).
    cluster: [u32; 3],
    /// While a block of a cluster runs: the shared memory of each other block of its cluster, by rank
    /// (distributed shared memory).
    remote: Vec<Option<Vec<u8>>>,
    /// Likewise their mbarriers (multicast copies and remote arrives complete on them).
    remote_mbar: Vec<Option<HashMap<u32, Mbar>>>,
    /// Cluster barriers (`barrier.cluster`), by cluster: (arrived threads, completed phases).
    cbar: HashMap<u32, (u32, u32)>,
    /// Set while a TMA load writes shared memory (an async-proxy write, not a generic one).
    async_write: bool,
    /// The (address, values) each lane of the current store issue wrote (`misc`, race detection only).
    same_st: Vec<(u64, [u64; 4])>,
    /// Lane arrays of the fast paths, kept between instructions (taken while one runs).
    fast: Option<Box<exec_fast::Scratch>>,
    /// Set when this launch state runs blocks in isolation on a worker thread (`parallel.rs`).
    spec: Option<parallel::Worker<'a>>,
}

fn mask_bits(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        ((v << (64 - bits)) as i64) >> (64 - bits)
    }
}

fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

enum Step {
    Continue,
    Stop,
}

impl L<'_> {
    fn rand(&mut self) -> u64 {
        splitmix(&mut self.rng)
    }

    fn fault(
        &mut self,
        b: &Block,
        wi: usize,
        lane: Option<u32>,
        pc: u32,
        kind: FaultKind,
        msg: String,
    ) {
        let line = self
            .m
            .code
            .get(pc as usize)
            .map(|i| i.line as usize)
            .unwrap_or(0);
        if self.faults.len() < 64 {
            self.faults.push(Fault {
                kind,
                block: b.ctaid,
                warp: wi as u32,
                lane,
                ptx_line: line,
                message: msg,
            });
        }
        if kind != FaultKind::DataRace {
            self.abort = true;
        }
    }

    fn diagnose_stall(&mut self, b: &Block) {
        // collective waits first
        for (wi, w) in b.warps.iter().enumerate() {
            for ln in 0..32 {
                if w.st[ln] == Ls::Coll {
                    let pc = w.pc[ln];
                    let waiting: u32 = (0..32)
                        .filter(|&x| w.st[x] == Ls::Coll && w.pc[x] == pc)
                        .fold(0, |a, x| a | 1 << x);
                    let missing = w.coll_member & !waiting;
                    let culprit = if missing != 0 {
                        missing.trailing_zeros()
                    } else {
                        ln as u32
                    };
                    let where_ = match w.st[culprit as usize] {
                        Ls::Exit => "has exited".to_string(),
                        Ls::Bar => format!(
                            "waits at the barrier at PTX line {}",
                            self.m.code[w.pc[culprit as usize] as usize].line
                        ),
                        Ls::Coll => format!(
                            "waits at another collective at PTX line {}",
                            self.m.code[w.pc[culprit as usize] as usize].line
                        ),
                        _ => "did not arrive".to_string(),
                    };
                    let msg = format!(
                        "warp collective '{}' with membermask 0x{:08x} is executed by lanes 0x{:08x} only; member lane {} {}",
                        self.opname(pc),
                        w.coll_member,
                        waiting,
                        culprit,
                        where_
                    );
                    self.fault(b, wi, Some(culprit), pc, FaultKind::CollectiveMisuse, msg);
                    return;
                }
            }
        }
        for (wi, w) in b.warps.iter().enumerate() {
            for ln in 0..32 {
                if w.st[ln] == Ls::Bar {
                    let pc = w.pc[ln];
                    let mut desc = String::new();
                    for (id, bar) in b.bars.iter().enumerate() {
                        if bar.arrived > 0 {
                            let exp = bar.expected.unwrap_or(self.nthreads - b.exited);
                            desc.push_str(&format!(
                                " barrier {}: {} of {} threads arrived;",
                                id, bar.arrived, exp
                            ));
                        }
                    }
                    let msg = format!(
                        "deadlock: no thread can make progress;{} {} threads exited",
                        desc, b.exited
                    );
                    self.fault(b, wi, Some(ln as u32), pc, FaultKind::Deadlock, msg);
                    return;
                }
            }
        }
    }

    fn opname(&self, pc: u32) -> String {
        match &self.m.code[pc as usize].kind {
            Kind::Shfl(_) => "shfl.sync".into(),
            Kind::Vote(_) => "vote.sync".into(),
            Kind::Redux(..) => "redux.sync".into(),
            Kind::Match(..) => "match.sync".into(),
            Kind::BarWarpSync => "bar.warp.sync".into(),
            Kind::Mma(_) => "mma.sync.aligned".into(),
            Kind::Ldmatrix(..) => "ldmatrix.sync.aligned".into(),
            Kind::Stmatrix(..) => "stmatrix.sync.aligned".into(),
            Kind::Movmatrix => "movmatrix.sync.aligned".into(),
            Kind::Wmma(_) => "wmma.sync.aligned".into(),
            Kind::Elect => "elect.sync".into(),
            Kind::Setmaxnreg(inc) => format!(
                "setmaxnreg.{}.sync.aligned.u32",
                if *inc { "inc" } else { "dec" }
            ),
            Kind::Wgmma(op) => wgmma::name(op),
            k => format!("{:?}", k),
        }
    }

    /// Chooses the lane group to run: (pc, mask).
    fn pick_group(&mut self, w: &Warp) -> (u32, u32) {
        // A converged warp (every runnable lane at one PC) runs that PC with all of them: what the scan
        // below chooses too, since starvation and random choices apply only to diverged warps.
        let mut run = 0u32;
        for l in 0..32 {
            run |= ((w.st[l] == Ls::Run) as u32) << l;
        }
        if run == 0 {
            return (0, 0);
        }
        let pc0 = w.pc[run.trailing_zeros() as usize];
        let mut same = true;
        for l in 0..32 {
            same &= w.st[l] != Ls::Run || w.pc[l] == pc0;
        }
        if same {
            return (pc0, run);
        }
        let mut minpc = u32::MAX;
        let mut starving: Option<u32> = None;
        let mut any = false;
        let indep = self.cfg.warp_mode == WarpMode::Independent;
        let mut multi = false;
        for l in 0..32 {
            if w.st[l] == Ls::Run {
                if any && w.pc[l] != minpc {
                    multi = true;
                }
                any = true;
                if w.pc[l] < minpc {
                    minpc = w.pc[l];
                }
                if indep && w.steps.saturating_sub(w.last_run[l]) > 48 && starving.is_none() {
                    starving = Some(w.pc[l]);
                }
            }
        }
        if !any {
            return (0, 0);
        }
        let mut pc = minpc;
        if indep && multi {
            if let Some(p) = starving {
                pc = p;
            } else if matches!(self.cfg.schedule, Schedule::Random { .. })
                && self.rand().is_multiple_of(8)
            {
                let runs: Vec<u32> = (0..32)
                    .filter(|&l| w.st[l] == Ls::Run)
                    .map(|l| w.pc[l])
                    .collect();
                pc = runs[(self.rand() % runs.len() as u64) as usize];
            }
        }
        let mut mask = 0u32;
        for l in 0..32 {
            if w.st[l] == Ls::Run && w.pc[l] == pc {
                mask |= 1 << l;
            }
        }
        (pc, mask)
    }

    #[inline]
    fn tid_of(&self, wi: usize, lane: usize) -> u32 {
        wi as u32 * 32 + lane as u32
    }

    fn sreg(&self, b: &Block, wi: usize, lane: usize, s: Sreg) -> u64 {
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
            Sreg::Zero => 0,
        }
    }

    fn sym_value(&self, s: SymRef, generic: bool) -> u64 {
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
    fn val(&self, b: &Block, w: &Warp, wi: usize, op: &Operand, lane: usize) -> u64 {
        match op {
            Operand::Reg(r) => w.regs[*r as usize * 32 + lane],
            Operand::Imm(v) => *v,
            Operand::PredNot(r) => (w.regs[*r as usize * 32 + lane] == 0) as u64,
            Operand::Sreg(s) => self.sreg(b, wi, lane, *s),
            Operand::Sym(s) => self.sym_value(*s, false),
            Operand::Addr(base, off) => self.addr(w, base, *off, lane, false),
            Operand::Vec(v) if v.len() == 1 => self.val(b, w, wi, &v[0], lane),
            _ => 0,
        }
    }

    #[inline]
    fn addr(&self, w: &Warp, base: &AddrBase, off: i64, lane: usize, generic: bool) -> u64 {
        let bv = match base {
            AddrBase::None => 0,
            AddrBase::Reg(r) => w.regs[*r as usize * 32 + lane],
            AddrBase::Sym(s) => self.sym_value(*s, generic),
        };
        bv.wrapping_add(off as u64)
    }

    #[inline]
    fn set(w: &mut Warp, op: &Operand, lane: usize, v: u64) {
        if let Operand::Reg(r) = op {
            w.regs[*r as usize * 32 + lane] = v;
        }
    }

    fn advance(w: &mut Warp, mask: u32) {
        let mut m = mask;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            w.pc[l] += 1;
        }
    }

    /// Resolves an address in a state space for one lane; checks bounds and alignment.
    #[allow(clippy::too_many_arguments)]
    fn resolve(
        &mut self,
        b: &Block,
        wi: usize,
        lane: usize,
        space: Space,
        addr: u64,
        size: usize,
        pc: u32,
    ) -> Option<Loc> {
        let tid = self.tid_of(wi, lane) as usize;
        let (sp, a) = match space {
            Space::Generic => {
                if (SHARED_WINDOW..SHARED_WINDOW + WINDOW).contains(&addr) {
                    (Space::Shared, addr - SHARED_WINDOW)
                } else if (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW).contains(&addr) {
                    (Space::Local, addr - LOCAL_WINDOW)
                } else if (PARAM_WINDOW..PARAM_WINDOW + WINDOW).contains(&addr) {
                    (Space::Param, addr - PARAM_WINDOW)
                } else {
                    (Space::Global, addr)
                }
            }
            Space::Const => (Space::Global, addr),
            // Shared and local addresses are 32 bits: `[%r + 128]` with %r = -64 (as nvcc emits for a loop
            // that starts below its base) wraps around, as the hardware's address arithmetic does.
            Space::Shared | Space::Local => (space, addr & 0xFFFF_FFFF),
            s => (s, addr),
        };
        if size > 1 && a % (size.min(16) as u64) != 0 {
            self.fault(
                b,
                wi,
                Some(lane as u32),
                pc,
                FaultKind::Misaligned,
                format!(
                    "misaligned {}-byte {:?} access at address 0x{:x}",
                    size, sp, addr
                ),
            );
            return None;
        }
        match sp {
            Space::Shared => {
                // A shared::cluster address made by `mapa` carries the target block's rank + 1 in bits
                // 24..29; rank + 1 = 0 (or this block's own rank) is this block's shared memory.
                let tag = ((a >> 24) & 0x3F) as u32;
                let a = a & 0xFF_FFFF;
                let csize = self.cluster_size();
                if tag != 0 && tag - 1 != b.crank {
                    let r = tag - 1;
                    if r >= csize {
                        let msg = format!("shared::cluster address names block rank {r}, but the cluster has {csize} blocks");
                        self.fault(b, wi, Some(lane as u32), pc, FaultKind::OutOfBounds, msg);
                        return None;
                    }
                    if a as usize + size > self.smem_size {
                        let msg = format!("shared::cluster access of {size} bytes at offset 0x{a:x} of block rank {r}, outside its {} bytes", self.smem_size);
                        self.fault(b, wi, Some(lane as u32), pc, FaultKind::OutOfBounds, msg);
                        return None;
                    }
                    return Some(Loc::Remote(r as usize, a as usize));
                }
                if a as usize + size <= self.smem_size {
                    Some(Loc::Shared(a as usize))
                } else {
                    self.fault(
                        b,
                        wi,
                        Some(lane as u32),
                        pc,
                        FaultKind::OutOfBounds,
                        format!("shared access of {} bytes at offset 0x{:x} outside the block's {} bytes of shared memory", size, a, self.smem_size),
                    );
                    None
                }
            }
            Space::Local => {
                if a as usize + size <= self.local_size {
                    Some(Loc::Local(tid * self.local_size + a as usize))
                } else {
                    self.fault(b, wi, Some(lane as u32), pc, FaultKind::OutOfBounds, format!("local access of {} bytes at offset 0x{:x} outside the thread's {} bytes of local memory", size, a, self.local_size));
                    None
                }
            }
            Space::Param => {
                if a as usize + size <= self.params.len() {
                    Some(Loc::Param(a as usize))
                } else {
                    self.fault(b, wi, Some(lane as u32), pc, FaultKind::OutOfBounds, format!("kernel parameter access at offset {} outside the {}-byte parameter buffer", a, self.params.len()));
                    None
                }
            }
            _ => {
                // global
                let i = {
                    let c = self.last_alloc;
                    if c < self.allocs.len()
                        && a >= self.allocs[c].base
                        && a.saturating_add(size as u64)
                            <= self.allocs[c].base + self.allocs[c].data.len() as u64
                    {
                        Some(c)
                    } else {
                        let i = self.allocs.partition_point(|x| x.base <= a);
                        if i > 0
                            && a.saturating_add(size as u64)
                                <= self.allocs[i - 1].base + self.allocs[i - 1].data.len() as u64
                        {
                            Some(i - 1)
                        } else {
                            None
                        }
                    }
                };
                match i {
                    Some(i) => {
                        self.last_alloc = i;
                        Some(Loc::Global(i, (a - self.allocs[i].base) as usize))
                    }
                    None => {
                        let msg = if a == 0 {
                            "global access through a null pointer".to_string()
                        } else {
                            format!("global access of {} bytes at 0x{:x} is not inside a live allocation", size, a)
                        };
                        self.fault(b, wi, Some(lane as u32), pc, FaultKind::OutOfBounds, msg);
                        None
                    }
                }
            }
        }
    }

    /// Reads `len` bytes at a generic address for one lane, or `None` (a fault is recorded) when it is not
    /// mapped.
    fn read_generic(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        addr: u64,
        len: usize,
        pc: u32,
    ) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(len);
        for i in 0..len as u64 {
            let loc = self.resolve(b, wi, lane, Space::Generic, addr + i, 1, pc)?;
            out.push(self.load(b, loc, 1) as u8);
        }
        Some(out)
    }

    /// The NUL-terminated string at a generic address (at most 4 KiB).
    fn read_c_string(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        addr: u64,
        pc: u32,
    ) -> Option<String> {
        let mut bytes = Vec::new();
        for i in 0..4096u64 {
            let loc = self.resolve(b, wi, lane, Space::Generic, addr + i, 1, pc)?;
            match self.load(b, loc, 1) as u8 {
                0 => break,
                c => bytes.push(c),
            }
        }
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// `vprintf(format, args)` and `__assertfail(message, file, line, function, char_size)`, the device
    /// runtime functions nvcc calls for `printf` and `assert`. Lanes run them in lane order.
    #[allow(clippy::too_many_arguments)]
    fn exec_builtin(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        exec: u32,
        name: &str,
        rets: &[Operand],
        cargs: &[Operand],
    ) -> Step {
        for l in 0..32usize {
            if exec & (1 << l) == 0 {
                continue;
            }
            // Call arguments are `.param` variables of the call sequence (in the thread's local frame): load
            // their 8 bytes; a register or immediate argument is its value.
            let arg = |me: &mut Self, b: &mut Block, w: &Warp, k: usize| {
                cargs.get(k).map(|o| match o {
                    Operand::Sym(SymRef::Local(off)) => {
                        let at = me.tid_of(wi, l) as usize * me.local_size + *off as usize;
                        let mut v = [0u8; 8];
                        if let Some(src) = b.local.get(at..at + 8) {
                            v.copy_from_slice(src);
                        }
                        u64::from_le_bytes(v)
                    }
                    o => me.val(b, w, wi, o, l),
                })
            };
            if name == "vprintf" {
                let (Some(fmt_addr), Some(args_addr)) = (arg(self, b, w, 0), arg(self, b, w, 1))
                else {
                    self.fault(
                        b,
                        wi,
                        Some(l as u32),
                        pc,
                        FaultKind::InvalidOperation,
                        "vprintf called without its two arguments".into(),
                    );
                    return Step::Stop;
                };
                let Some(fmt) = self.read_c_string(b, wi, l, fmt_addr, pc) else {
                    return Step::Stop;
                };
                struct Src<'x, 'a> {
                    l: &'x mut L<'a>,
                    b: &'x mut Block,
                    wi: usize,
                    lane: usize,
                    base: u64,
                    pc: u32,
                }
                impl super::printf::ArgSource for Src<'_, '_> {
                    fn arg(&mut self, offset: usize, size: usize) -> Option<u64> {
                        if self.base == 0 {
                            return None;
                        }
                        let bytes = self.l.read_generic(
                            self.b,
                            self.wi,
                            self.lane,
                            self.base + offset as u64,
                            size,
                            self.pc,
                        )?;
                        let mut v = [0u8; 8];
                        v[..size].copy_from_slice(&bytes);
                        Some(u64::from_le_bytes(v))
                    }
                    fn string(&mut self, addr: u64) -> Option<String> {
                        self.l
                            .read_c_string(self.b, self.wi, self.lane, addr, self.pc)
                    }
                }
                let mut src = Src {
                    l: self,
                    b,
                    wi,
                    lane: l,
                    base: args_addr,
                    pc,
                };
                let text = super::printf::format(fmt.as_bytes(), &mut src);
                self.printf.push(text);
                if let Some(r) = rets.first() {
                    Self::set(w, r, l, 0);
                }
            } else {
                let read = |me: &mut Self, b: &mut Block, w: &Warp, k: usize| {
                    arg(me, b, w, k)
                        .and_then(|a| me.read_c_string(b, wi, l, a, pc))
                        .unwrap_or_default()
                };
                let message = read(self, b, w, 0);
                let file = read(self, b, w, 1);
                let line = arg(self, b, w, 2).unwrap_or(0) as u32;
                let function = read(self, b, w, 3);
                self.fault(
                    b,
                    wi,
                    Some(l as u32),
                    pc,
                    FaultKind::Trap,
                    format!("assertion `{message}` failed at {file}:{line} in {function}"),
                );
                return Step::Stop;
            }
        }
        Self::advance(w, exec);
        Step::Continue
    }

    fn mem_slice<'b>(&'b mut self, b: &'b mut Block, loc: Loc) -> &'b mut [u8] {
        match loc {
            Loc::Global(i, o) => &mut self.allocs[i].data[o..],
            Loc::Shared(o) => &mut b.shared[o..],
            Loc::Remote(r, o) => match self.remote.get_mut(r).and_then(|m| m.as_mut()) {
                Some(m) => &mut m[o..],
                None => &mut [],
            },
            Loc::Local(o) => &mut b.local[o..],
            Loc::Param(o) => &mut self.params[o..],
        }
    }

    fn load(&mut self, b: &mut Block, loc: Loc, size: usize) -> u64 {
        exec_fast::read_le(self.mem_slice(b, loc), 0, size)
    }

    fn store(&mut self, b: &mut Block, loc: Loc, size: usize, v: u64) {
        exec_fast::write_le(self.mem_slice(b, loc), 0, size, v)
    }

    /// Records an access for counters and checks races.
    #[allow(clippy::too_many_arguments)]
    fn track(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        loc: Loc,
        size: usize,
        acc: Acc,
        pc: u32,
        gaddr: u64,
    ) {
        match loc {
            Loc::Global(..) => self.acc_g.push((gaddr, size as u32)),
            Loc::Shared(o) => self.acc_s.push((o as u32, size as u32)),
            _ => {}
        }
        if self.spec.is_some() && self.spec_note(loc, size, acc) {
            return;
        }
        self.check_access(b, wi, lane, loc, size, acc, pc, gaddr);
    }

    /// The race checks of one lane's access (`track` without the counters).
    #[allow(clippy::too_many_arguments)]
    fn check_access(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        loc: Loc,
        size: usize,
        acc: Acc,
        pc: u32,
        gaddr: u64,
    ) {
        if !self.cfg.check_races {
            return;
        }
        match loc {
            Loc::Global(i, o) => {
                let launch = self.launch_id;
                let a = &mut self.allocs[i];
                if a.shadow_launch != launch {
                    a.shadow.reset(a.data.len());
                    a.shadow_launch = launch;
                }
                self.race(b, wi, lane, Some(i), o, size, acc, pc, gaddr);
            }
            Loc::Shared(o) => {
                self.race(b, wi, lane, None, o, size, acc, pc, o as u64);
                if acc != Acc::Read && !self.async_write {
                    self.proxy_write(b, wi, lane, pc, o, size, true);
                }
            }
            _ => {}
        }
    }

    /// Whether thread `u`'s access at its epoch `ep_u` is ordered before thread `t` (global ids; `base` is the
    /// first global id of `t`'s block, so `u` is in that block iff `u - base < nthreads`).
    fn ordered(
        thr_inst: &[Vec<u32>],
        insts: &[Inst],
        (nthreads, base): (u32, u32),
        u: u32,
        ep_u: u32,
        t: u32,
    ) -> bool {
        let ul = u.wrapping_sub(base);
        if ul >= nthreads {
            return false;
        }
        let ul = ul as usize;
        let tl = (t - base) as usize;
        if ul == tl {
            return true;
        }
        let list = &thr_inst[ul];
        for &i in list.iter().skip(ep_u as usize) {
            let inst = &insts[i as usize];
            if inst.completed && (inst.waiters[tl / 64] >> (tl % 64)) & 1 == 1 {
                return true;
            }
        }
        false
    }

    #[allow(clippy::too_many_arguments)]
    fn race(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        alloc: Option<usize>,
        off: usize,
        size: usize,
        acc: Acc,
        pc: u32,
        addr: u64,
    ) {
        let tl = self.tid_of(wi, lane);
        let t = b.lin * self.nthreads + tl;
        let ep = b.thr_inst[tl as usize].len() as u32;
        let nt = self.nthreads;
        let ntb = (nt, b.lin * nt);
        let mut conflict: Option<(u32, u32, bool)> = None;
        {
            let (ti, ins) = (&b.thr_inst, &b.inst);
            let sh: &mut [Shadow] = match alloc {
                Some(i) => self.allocs[i].shadow.cells(off, size),
                None => b.sh_shadow.cells(off, size),
            };
            // A plain read and an atomic read-modify-write of the same word do not race: hardware loads are
            // single-copy atomic, and CUDA's documented atomicCAS loops start with exactly such a read. A plain
            // write still races with everything, atomics included.
            let process = |s: &mut Shadow, conflict: &mut Option<(u32, u32, bool)>| {
                let w_thr = s.w & !TOPBIT;
                let w_atomic = s.w & TOPBIT != 0;
                if w_thr != 0
                    && w_thr - 1 != t
                    && !(w_atomic && acc != Acc::Write)
                    && !Self::ordered(ti, ins, ntb, w_thr - 1, s.w_ep, t)
                    && conflict.is_none()
                {
                    *conflict = Some((w_thr - 1, s.w_pc, true));
                }
                if acc != Acc::Read {
                    let r_thr = s.r & !TOPBIT;
                    let many = s.r & TOPBIT != 0;
                    if r_thr != 0
                        && acc == Acc::Write
                        && (r_thr - 1 != t || many)
                        && !Self::ordered(ti, ins, ntb, r_thr - 1, s.r_ep, t)
                        && conflict.is_none()
                    {
                        *conflict = Some((r_thr - 1, s.r_pc, false));
                    }
                    s.w = (t + 1) | if acc == Acc::Atomic { TOPBIT } else { 0 };
                    s.w_ep = ep;
                    s.w_pc = pc;
                    s.r = 0;
                } else {
                    let r_thr = s.r & !TOPBIT;
                    if r_thr == 0
                        || (r_thr - 1 == t && s.r & TOPBIT == 0)
                        || Self::ordered(ti, ins, ntb, r_thr - 1, s.r_ep, t)
                    {
                        s.r = t + 1;
                        s.r_ep = ep;
                        s.r_pc = pc;
                    } else if r_thr - 1 != t {
                        s.r |= TOPBIT;
                    }
                }
            };
            // Bytes of one access usually share one shadow state: decide once and copy the outcome.
            let (first, rest) = sh.split_first_mut().expect("non-empty access");
            // (Updated in a local: reading the shadow back right after the field-wise writes of `process`
            // would stall on store forwarding.)
            let orig = *first;
            let mut updated = orig;
            process(&mut updated, &mut conflict);
            // Unchanged states (a read of data many threads already read) are not written back: that
            // would dirty the shadow's cache lines for nothing.
            let changed = updated != orig;
            if changed {
                *first = updated;
            }
            for s in rest.iter_mut() {
                if *s == orig {
                    if changed {
                        *s = updated;
                    }
                } else {
                    process(s, &mut conflict);
                }
            }
        }
        if let Some((u, upc, was_write)) = conflict {
            if self.race_seen.insert(pc) {
                let ub = u / nt;
                let ul = u % nt;
                let uline = self.m.code.get(upc as usize).map(|i| i.line).unwrap_or(0);
                let what = match acc {
                    Acc::Read => "read",
                    Acc::Write => "write",
                    Acc::Atomic => "atomic",
                };
                let space = if alloc.is_some() { "global" } else { "shared" };
                let msg = format!(
                    "data race on {} memory at {}0x{:x}: {} by thread {} conflicts with an unordered {} by thread {} of block #{} at PTX line {} (no barrier between them)",
                    space,
                    if alloc.is_some() { "" } else { "offset " },
                    addr,
                    what,
                    tl,
                    if was_write { "write" } else { "read" },
                    ul,
                    ub,
                    uline
                );
                self.fault(b, wi, Some(lane as u32), pc, FaultKind::DataRace, msg);
            }
        }
    }

    /// `atom.cas`/`atom.exch` act as acquire + release on their location (lock words, flags): the
    /// thread is ordered after the accesses the previous cas/exch thread made before its atomic.
    fn sync_through_atomic(&mut self, b: &mut Block, wi: usize, lane: usize, loc: Loc) {
        let key = match loc {
            Loc::Global(i, o) => (true, self.allocs[i].base + o as u64),
            Loc::Shared(o) => (false, o as u64),
            _ => return,
        };
        let t = self.tid_of(wi, lane) as usize;
        let words = self.nthreads.div_ceil(64) as usize;
        if let Some(&prev) = b.rel.get(&key) {
            b.inst[prev as usize].waiters[t / 64] |= 1 << (t % 64);
        }
        let i = b.inst.len() as u32;
        b.inst.push(Inst {
            waiters: vec![0; words],
            completed: true,
        });
        b.thr_inst[t].push(i);
        b.rel.insert(key, i);
    }

    fn finish_access(&mut self, pc: u32) {
        if !self.acc_g.is_empty() {
            self.scratch.clear();
            for &(a, n) in &self.acc_g {
                let s0 = a >> 5;
                let s1 = (a + n as u64 - 1) >> 5;
                for s in s0..=s1 {
                    self.scratch.push(s);
                }
            }
            self.scratch.sort_unstable();
            self.scratch.dedup();
            let sectors = self.scratch.len() as u64;
            for s in self.scratch.iter_mut() {
                *s >>= 2;
            }
            self.scratch.dedup();
            let lines = self.scratch.len() as u64;
            let p = &mut self.pic[pc as usize];
            p.global_sectors += sectors;
            p.global_transactions += lines;
            p.global_accesses += 1;
            self.acc_g.clear();
        }
        if !self.acc_s.is_empty() {
            let deg = self.bank_degree();
            let p = &mut self.pic[pc as usize];
            p.shared_accesses += 1;
            p.shared_bank_conflict_degree_sum += deg;
            self.acc_s.clear();
        }
    }

    fn bank_degree(&mut self) -> u64 {
        self.scratch.clear();
        for &(a, n) in &self.acc_s {
            let w0 = a >> 2;
            let w1 = (a + n - 1) >> 2;
            for w in w0..=w1 {
                self.scratch.push(w as u64);
            }
        }
        self.scratch.sort_unstable();
        self.scratch.dedup();
        let mut banks = [0u32; 32];
        for w in &self.scratch {
            banks[(*w % 32) as usize] += 1;
        }
        banks.iter().copied().max().unwrap_or(1).max(1) as u64
    }

    /// Executes one warp step. Returns `Stop` when the warp cannot continue.
    fn step(&mut self, b: &mut Block, wi: usize, w: &mut Warp) -> Step {
        let (pc, mask) = match w.hint.take() {
            Some(h) => h,
            None => self.pick_group(w),
        };
        if mask == 0 {
            return Step::Stop;
        }
        self.steps += 1;
        self.clock += 1;
        if self.steps > self.cfg.max_steps {
            let lane = mask.trailing_zeros();
            let msg = format!("step limit of {} warp-instructions exceeded; threads keep running (spinning?) at this instruction", self.cfg.max_steps);
            self.fault(b, wi, Some(lane), pc, FaultKind::Livelock, msg);
            return Step::Stop;
        }
        w.steps += 1;
        let steps = w.steps;
        if mask == u32::MAX {
            w.last_run = [steps; 32];
        } else {
            for (l, r) in w.last_run.iter_mut().enumerate() {
                if (mask >> l) & 1 != 0 {
                    *r = steps;
                }
            }
        }
        let m = self.m;
        let ins = match m.code.get(pc as usize) {
            Some(i) => i,
            None => {
                self.fault(
                    b,
                    wi,
                    Some(mask.trailing_zeros()),
                    pc.saturating_sub(1),
                    FaultKind::InvalidOperation,
                    "control fell off the end of the code".into(),
                );
                return Step::Stop;
            }
        };
        let exec = match ins.guard {
            None => mask,
            Some((p, neg)) => {
                let mut e = 0u32;
                let base = p as usize * 32;
                for (l, v) in w.regs[base..base + 32].iter().enumerate() {
                    e |= (((*v != 0) != neg) as u32) << l;
                }
                e & mask
            }
        };
        {
            let p = &mut self.pic[pc as usize];
            p.warp_instructions += 1;
            p.thread_instructions += exec.count_ones() as u64;
        }
        let args = &ins.args;
        if !matches!(ins.kind, Kind::Wgmma(_)) && b.wg.warp_busy(wi) {
            if let Some(r) = b.wg.touched(wi, args) {
                let msg = format!(
                    "register {} is an operand of a wgmma that is still in flight: it may be read or written only after the wgmma.wait_group that retires it",
                    self.m.reg_names.get(r as usize).map(String::as_str).unwrap_or("?")
                );
                self.fault(
                    b,
                    wi,
                    Some(exec.trailing_zeros()),
                    pc,
                    FaultKind::InFlight,
                    msg,
                );
                return Step::Stop;
            }
        }
        if let Some(s) = self.fast_step(b, wi, w, ins, pc, mask, exec) {
            // Every runnable lane was in the group (converged) and moved to pc + 1: that is the next group.
            if mask == w.run_mask() {
                w.hint = Some((pc + 1, mask));
            }
            return s;
        }
        macro_rules! lanes {
            ($l:ident, $body:block) => {{
                let mut mm = exec;
                while mm != 0 {
                    let $l = mm.trailing_zeros() as usize;
                    mm &= mm - 1;
                    $body
                }
            }};
        }
        match &ins.kind {
            Kind::Mov(ty) => {
                match (&args[0], &args[1]) {
                    (Operand::Vec(ds), src) => {
                        // unpack
                        let n = ds.len() as u32;
                        let eb = (ty.bits() / n).max(1);
                        lanes!(l, {
                            let v = self.val(b, w, wi, src, l);
                            for (k, d) in ds.iter().enumerate() {
                                Self::set(w, d, l, (v >> (eb * k as u32)) & mask_bits(eb));
                            }
                        });
                    }
                    (d, Operand::Vec(ss)) if ss.len() > 1 => {
                        let n = ss.len() as u32;
                        let eb = (ty.bits() / n).max(1);
                        lanes!(l, {
                            let mut v = 0u64;
                            for (k, s) in ss.iter().enumerate() {
                                v |= (self.val(b, w, wi, s, l) & mask_bits(eb)) << (eb * k as u32);
                            }
                            Self::set(w, d, l, v);
                        });
                    }
                    (d, s) => {
                        let mk = if *ty == PtxType::Pred {
                            1
                        } else {
                            mask_bits(ty.bits())
                        };
                        let generic_sym = false;
                        lanes!(l, {
                            let v = match s {
                                Operand::Sym(sy) => self.sym_value(*sy, generic_sym),
                                _ => self.val(b, w, wi, s, l),
                            };
                            Self::set(w, d, l, v & mk);
                        });
                    }
                }
                Self::advance(w, mask);
            }
            Kind::Alu(op, ty, md) => {
                let (op, ty, md) = (*op, *ty, *md);
                let n = args.len();
                lanes!(l, {
                    let a = self.val(b, w, wi, &args[1], l);
                    let bb = if n > 2 {
                        self.val(b, w, wi, &args[2], l)
                    } else {
                        0
                    };
                    let c = if n > 3 {
                        self.val(b, w, wi, &args[3], l)
                    } else {
                        0
                    };
                    let d = if n > 4 {
                        self.val(b, w, wi, &args[4], l)
                    } else {
                        0
                    };
                    let r = alu(op, ty, md, a, bb, c, d);
                    Self::set(w, &args[0], l, r);
                });
                Self::advance(w, mask);
            }
            Kind::Setp(cmp, ty, bop) => {
                let two = args.len() >= 4 + bop.is_some() as usize
                    && matches!(args[1], Operand::Reg(_) | Operand::Sink)
                    && bop.map(|_| args.len() == 5).unwrap_or(args.len() == 4);
                let (dp, dq, ai) = if two {
                    (&args[0], Some(&args[1]), 2)
                } else {
                    (&args[0], None, 1)
                };
                lanes!(l, {
                    let a = self.val(b, w, wi, &args[ai], l);
                    let c = self.val(b, w, wi, &args[ai + 1], l);
                    let mut r = compare(*cmp, *ty, a, c);
                    // setp.f16x2/bf16x2 p|q: p from the low halves, q from the high ones.
                    let mut q = if matches!(ty, PtxType::F16x2 | PtxType::BF16x2) {
                        compare(*cmp, *ty, a >> 16, c >> 16)
                    } else {
                        !r
                    };
                    if let Some(bo) = bop {
                        let p = self.val(b, w, wi, &args[ai + 2], l) != 0;
                        r = boolop(*bo, r, p);
                        q = boolop(*bo, q, p);
                    }
                    Self::set(w, dp, l, r as u64);
                    if let Some(dq) = dq {
                        Self::set(w, dq, l, q as u64);
                    }
                });
                Self::advance(w, mask);
            }
            Kind::Set(cmp, dty, sty, bop) => {
                lanes!(l, {
                    let a = self.val(b, w, wi, &args[1], l);
                    let c = self.val(b, w, wi, &args[2], l);
                    let mut r = compare(*cmp, *sty, a, c);
                    if let Some(bo) = bop {
                        let p = self.val(b, w, wi, &args[3], l) != 0;
                        r = boolop(*bo, r, p);
                    }
                    let v = if dty.is_float() {
                        if r {
                            1.0f32.to_bits() as u64
                        } else {
                            0
                        }
                    } else if r {
                        mask_bits(dty.bits())
                    } else {
                        0
                    };
                    Self::set(w, &args[0], l, v);
                });
                Self::advance(w, mask);
            }
            Kind::Selp(_) => {
                lanes!(l, {
                    let p = self.val(b, w, wi, &args[3], l) != 0;
                    let v = if p {
                        self.val(b, w, wi, &args[1], l)
                    } else {
                        self.val(b, w, wi, &args[2], l)
                    };
                    Self::set(w, &args[0], l, v);
                });
                Self::advance(w, mask);
            }
            Kind::Slct(_, sty) => {
                lanes!(l, {
                    let c = self.val(b, w, wi, &args[3], l);
                    let pos = if *sty == PtxType::F32 {
                        f32::from_bits(c as u32) >= 0.0
                    } else {
                        (c as u32 as i32) >= 0
                    };
                    let v = if pos {
                        self.val(b, w, wi, &args[1], l)
                    } else {
                        self.val(b, w, wi, &args[2], l)
                    };
                    Self::set(w, &args[0], l, v);
                });
                Self::advance(w, mask);
            }
            Kind::Cvt(dty, sty, rnd, sat) => {
                let packed = matches!(dty, PtxType::F16x2 | PtxType::BF16x2) && args.len() >= 3;
                let elem = if *dty == PtxType::BF16x2 {
                    PtxType::BF16
                } else {
                    PtxType::F16
                };
                lanes!(l, {
                    let a = self.val(b, w, wi, &args[1], l);
                    let v = if packed {
                        // cvt.rn.f16x2.f32 d, a, b: d.hi = a, d.lo = b
                        let c = self.val(b, w, wi, &args[2], l);
                        cvt(elem, *sty, *rnd, *sat, c) | cvt(elem, *sty, *rnd, *sat, a) << 16
                    } else {
                        cvt(*dty, *sty, *rnd, *sat, a)
                    };
                    Self::set(w, &args[0], l, v);
                });
                Self::advance(w, mask);
            }
            Kind::Cvta(to, space, ty) => {
                let win = match space {
                    Space::Shared => SHARED_WINDOW,
                    Space::Local => LOCAL_WINDOW,
                    Space::Param => PARAM_WINDOW,
                    _ => 0,
                };
                let mk = mask_bits(ty.bits());
                lanes!(l, {
                    let a = match &args[1] {
                        Operand::Sym(s) => self.sym_value(*s, false),
                        o => self.val(b, w, wi, o, l),
                    };
                    let r = if *to {
                        a.wrapping_sub(win) & mk
                    } else {
                        a.wrapping_add(win)
                    };
                    Self::set(w, &args[0], l, if *to { r } else { r & mk });
                });
                Self::advance(w, mask);
            }
            Kind::Ld(space, ty, vw) => {
                let (space, ty, vw) = (*space, *ty, *vw as usize);
                let es = ty.size();
                let total = es * vw;
                let generic = space == Space::Generic;
                let mut ok = true;
                lanes!(l, {
                    let a = match &args[1] {
                        Operand::Addr(base, off) => self.addr(w, base, *off, l, generic),
                        o => self.val(b, w, wi, o, l),
                    };
                    let loc = match self.resolve(b, wi, l, space, a, total, pc) {
                        Some(x) => x,
                        None => {
                            ok = false;
                            break;
                        }
                    };
                    self.track(b, wi, l, loc, total, Acc::Read, pc, a);
                    if ins.order & ORDER_ACQUIRE != 0 {
                        self.acquire(b, wi, l, loc);
                    }
                    for k in 0..vw {
                        let lk = offset_loc(loc, k * es);
                        let v = if es <= 8 { self.load(b, lk, es) } else { 0 };
                        let v = if ty.is_signed() {
                            sext(v, ty.bits()) as u64
                        } else {
                            v
                        };
                        let dst = match &args[0] {
                            Operand::Vec(ds) => ds.get(k),
                            d => Some(d),
                        };
                        if let Some(d) = dst {
                            Self::set(w, d, l, v);
                        }
                    }
                });
                self.finish_access(pc);
                if !ok {
                    return Step::Stop;
                }
                Self::advance(w, mask);
            }
            Kind::St(space, ty, vw) => {
                let (space, ty, vw) = (*space, *ty, *vw as usize);
                let es = ty.size();
                let total = es * vw;
                let generic = space == Space::Generic;
                let mut ok = true;
                lanes!(l, {
                    let a = match &args[0] {
                        Operand::Addr(base, off) => self.addr(w, base, *off, l, generic),
                        o => self.val(b, w, wi, o, l),
                    };
                    let loc = match self.resolve(b, wi, l, space, a, total, pc) {
                        Some(x) => x,
                        None => {
                            ok = false;
                            break;
                        }
                    };
                    let mut vals = [0u64; 8];
                    for (k, v) in vals.iter_mut().enumerate().take(vw) {
                        let src = match &args[1] {
                            Operand::Vec(ss) => ss.get(k),
                            s => Some(s),
                        };
                        *v = src.map(|s| self.val(b, w, wi, s, l)).unwrap_or(0);
                    }
                    if !self.same_store_as_earlier_lane(exec, l, a, &vals[..vw]) {
                        let acc = if ins.order & ORDER_STRONG != 0 {
                            Acc::Atomic
                        } else {
                            Acc::Write
                        };
                        self.track(b, wi, l, loc, total, acc, pc, a);
                    }
                    if ins.order & ORDER_RELEASE != 0 {
                        self.release(b, wi, l, loc);
                    }
                    for (k, &v) in vals.iter().enumerate().take(vw) {
                        self.store(b, offset_loc(loc, k * es), es.min(8), v);
                    }
                });
                self.finish_access(pc);
                if !ok {
                    return Step::Stop;
                }
                Self::advance(w, mask);
            }
            Kind::Atom(space, op, ty, red) => {
                let (space, op, ty, red) = (*space, *op, *ty, *red);
                let es = ty.size();
                let ai = if red { 0 } else { 1 };
                let generic = space == Space::Generic;
                let mut ok = true;
                lanes!(l, {
                    let a = match &args[ai] {
                        Operand::Addr(base, off) => self.addr(w, base, *off, l, generic),
                        o => self.val(b, w, wi, o, l),
                    };
                    let loc = match self.resolve(b, wi, l, space, a, es, pc) {
                        Some(x) => x,
                        None => {
                            ok = false;
                            break;
                        }
                    };
                    self.track(b, wi, l, loc, es, Acc::Atomic, pc, a);
                    if self.cfg.check_races && matches!(op, AtomOp::Cas | AtomOp::Exch) {
                        self.sync_through_atomic(b, wi, l, loc);
                    }
                    if ins.order & ORDER_ACQUIRE != 0 {
                        self.acquire(b, wi, l, loc);
                    }
                    if ins.order & ORDER_RELEASE != 0 {
                        self.release(b, wi, l, loc);
                    }
                    let x = self.val(b, w, wi, &args[ai + 1], l);
                    let y = if op == AtomOp::Cas {
                        self.val(b, w, wi, &args[ai + 2], l)
                    } else {
                        0
                    };
                    let old = self.load(b, loc, es);
                    let new = atomic_op(op, ty, old, x, y);
                    self.store(b, loc, es, new);
                    if !red {
                        Self::set(w, &args[0], l, old);
                    }
                });
                self.atomics += 1;
                self.finish_access(pc);
                if !ok {
                    return Step::Stop;
                }
                Self::advance(w, mask);
            }
            Kind::Bra => {
                let target = match args.last() {
                    Some(Operand::Label(t)) => *t,
                    _ => pc + 1,
                };
                if ins.is_cond_branch && exec != 0 && exec != mask {
                    self.pic[pc as usize].divergent_branches += 1;
                }
                let mut mm = mask;
                while mm != 0 {
                    let l = mm.trailing_zeros() as usize;
                    mm &= mm - 1;
                    w.pc[l] = if exec & (1 << l) != 0 { target } else { pc + 1 };
                }
            }
            Kind::Nop | Kind::CpAsyncCommit | Kind::CpAsyncWait => Self::advance(w, mask),
            Kind::Exit | Kind::Ret => {
                let mut exits = 0u32;
                lanes!(l, {
                    let frame = if ins.kind == Kind::Ret {
                        w.stack.get_mut(l).and_then(|s| s.pop())
                    } else {
                        None
                    };
                    match frame {
                        Some(fr) => {
                            // copy return values back
                            let callee = &m.funcs[fr.callee as usize];
                            for (k, r) in fr.rets.iter().enumerate() {
                                if let Some(rd) = callee.rets.get(k) {
                                    let src = Loc::Local(
                                        self.tid_of(wi, l) as usize * self.local_size + rd.offset,
                                    );
                                    copy_param(self, b, w, wi, l, src, r, rd.size);
                                }
                            }
                            w.pc[l] = fr.ret_pc;
                        }
                        None => {
                            exits |= 1 << l;
                        }
                    }
                });
                Self::advance(w, mask & !exec);
                if exits != 0 {
                    let mut mm = exits;
                    while mm != 0 {
                        let l = mm.trailing_zeros() as usize;
                        mm &= mm - 1;
                        w.st[l] = Ls::Exit;
                        let t = self.tid_of(wi, l) as usize;
                        b.exit_gen[t] = b.gen;
                        b.exited += 1;
                    }
                    // pending block-wide barriers may now be complete
                    for id in 0..16 {
                        if b.bars[id].arrived > 0 && b.bars[id].expected.is_none() {
                            self.try_complete(b, wi, w, id);
                        }
                    }
                }
            }
            Kind::Call => {
                let mut f_idx = None;
                let mut rets: Vec<Operand> = Vec::new();
                let mut cargs: Vec<Operand> = Vec::new();
                let mut seen_f = false;
                for a in args {
                    match a {
                        Operand::Func(f) => {
                            f_idx = Some(*f);
                            seen_f = true;
                        }
                        Operand::List(v) => {
                            if seen_f {
                                cargs = v.clone();
                            } else {
                                rets = v.clone();
                            }
                        }
                        _ => {}
                    }
                }
                let f = match f_idx {
                    Some(f) if m.funcs[f as usize].defined => f,
                    // The CUDA runtime's device-side functions that nvcc declares `.extern`.
                    Some(f)
                        if matches!(
                            m.funcs[f as usize].name.as_str(),
                            "vprintf" | "__assertfail"
                        ) =>
                    {
                        return self.exec_builtin(
                            b,
                            wi,
                            w,
                            pc,
                            exec,
                            &m.funcs[f as usize].name,
                            &rets,
                            &cargs,
                        );
                    }
                    _ => {
                        self.fault(
                            b,
                            wi,
                            Some(exec.trailing_zeros()),
                            pc,
                            FaultKind::Unsupported,
                            "call target is not a defined .func (indirect calls are unsupported)"
                                .into(),
                        );
                        return Step::Stop;
                    }
                };
                let callee = &m.funcs[f as usize];
                if w.stack.is_empty() {
                    w.stack = vec![Vec::new(); 32];
                }
                lanes!(l, {
                    for (k, a) in cargs.iter().enumerate() {
                        if let Some(pd) = callee.params.get(k) {
                            let dst = self.tid_of(wi, l) as usize * self.local_size + pd.offset;
                            match a {
                                Operand::Sym(SymRef::Local(o)) => {
                                    let src =
                                        self.tid_of(wi, l) as usize * self.local_size + *o as usize;
                                    b.local.copy_within(src..src + pd.size, dst);
                                }
                                o => {
                                    let v = self.val(b, w, wi, o, l);
                                    let n = pd.size.min(8);
                                    b.local[dst..dst + n].copy_from_slice(&v.to_le_bytes()[..n]);
                                }
                            }
                        }
                    }
                    w.stack[l].push(Frame {
                        ret_pc: pc + 1,
                        callee: f,
                        rets: rets.clone(),
                    });
                    w.pc[l] = callee.start;
                });
                Self::advance(w, mask & !exec);
            }
            Kind::Trap => {
                if exec != 0 {
                    self.fault(
                        b,
                        wi,
                        Some(exec.trailing_zeros()),
                        pc,
                        FaultKind::Trap,
                        "trap instruction executed".into(),
                    );
                    return Step::Stop;
                }
                Self::advance(w, mask);
            }
            Kind::Bar(mode) => {
                return self.exec_bar(b, wi, w, pc, mask, exec, *mode);
            }
            Kind::BarWarpSync
            | Kind::Shfl(_)
            | Kind::Vote(_)
            | Kind::Redux(..)
            | Kind::Match(..)
            | Kind::Mma(_)
            | Kind::Ldmatrix(..)
            | Kind::Stmatrix(..)
            | Kind::Movmatrix
            | Kind::Wmma(_)
            | Kind::Elect => {
                return self.exec_collective(b, wi, w, pc, mask, exec);
            }
            Kind::Activemask => {
                lanes!(l, {
                    Self::set(w, &args[0], l, mask as u64);
                });
                Self::advance(w, mask);
            }
            Kind::CpAsync(sz) => {
                let sz = *sz as usize;
                let mut ok = true;
                lanes!(l, {
                    let dst = match &args[0] {
                        Operand::Addr(base, off) => self.addr(w, base, *off, l, false),
                        o => self.val(b, w, wi, o, l),
                    };
                    let src = match &args[1] {
                        Operand::Addr(base, off) => self.addr(w, base, *off, l, false),
                        o => self.val(b, w, wi, o, l),
                    };
                    let src_size = if args.len() > 3 {
                        (self.val(b, w, wi, &args[3], l) as usize).min(sz)
                    } else {
                        sz
                    };
                    let dl = match self.resolve(b, wi, l, Space::Shared, dst, sz, pc) {
                        Some(x) => x,
                        None => {
                            ok = false;
                            break;
                        }
                    };
                    let mut data = [0u8; 16];
                    if src_size > 0 {
                        let sl = match self.resolve(b, wi, l, Space::Global, src, sz, pc) {
                            Some(x) => x,
                            None => {
                                ok = false;
                                break;
                            }
                        };
                        self.track(b, wi, l, sl, src_size, Acc::Read, pc, src);
                        let s = self.mem_slice(b, sl);
                        data[..src_size].copy_from_slice(&s[..src_size]);
                    }
                    self.track(b, wi, l, dl, sz, Acc::Write, pc, dst);
                    let d = self.mem_slice(b, dl);
                    d[..sz].copy_from_slice(&data[..sz]);
                });
                self.finish_access(pc);
                if !ok {
                    return Step::Stop;
                }
                Self::advance(w, mask);
            }
            Kind::Mbarrier(op) => {
                return self.exec_mbarrier(b, wi, w, pc, mask, exec, *op);
            }
            Kind::CpAsyncBulk => {
                // cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]
                let mut ok = true;
                lanes!(l, {
                    let dst = match &args[0] {
                        Operand::Addr(base, off) => self.addr(w, base, *off, l, false),
                        o => self.val(b, w, wi, o, l),
                    };
                    let src = match &args[1] {
                        Operand::Addr(base, off) => self.addr(w, base, *off, l, false),
                        o => self.val(b, w, wi, o, l),
                    };
                    let size = self.val(b, w, wi, &args[2], l) as usize;
                    let mb = match args.get(3) {
                        Some(Operand::Addr(base, off)) => self.addr(w, base, *off, l, false),
                        Some(o) => self.val(b, w, wi, o, l),
                        None => 0,
                    };
                    let dl = self.resolve(b, wi, l, Space::Shared, dst, size.max(1), pc);
                    let sl = self.resolve(b, wi, l, Space::Global, src, size.max(1), pc);
                    let (dl, sl) = match (dl, sl) {
                        (Some(d), Some(s)) => (d, s),
                        _ => {
                            ok = false;
                            break;
                        }
                    };
                    let data = self.mem_slice(b, sl)[..size].to_vec();
                    self.track(b, wi, l, sl, size, Acc::Read, pc, src);
                    self.track(b, wi, l, dl, size, Acc::Write, pc, dst);
                    self.mem_slice(b, dl)[..size].copy_from_slice(&data);
                    self.finish_access(pc);
                    if !self.mbar_complete_tx(b, wi, l, pc, mb as u32, size as i64) {
                        ok = false;
                        break;
                    }
                });
                self.finish_access(pc);
                if !ok {
                    return Step::Stop;
                }
                Self::advance(w, mask);
            }
            Kind::Wgmma(op) => {
                return self.exec_wgmma(b, wi, w, pc, mask, exec, *op);
            }
            Kind::FenceProxyAsync => {
                let nt = self.nthreads as usize;
                lanes!(l, {
                    let t = self.tid_of(wi, l) as usize;
                    b.proxy.fence(t, nt);
                });
                Self::advance(w, mask);
            }
            Kind::BulkGroup(wait) => {
                let nt = self.nthreads as usize;
                let n = match args.first() {
                    Some(Operand::Imm(v)) => *v as u32,
                    _ => 0,
                };
                lanes!(l, {
                    let t = self.tid_of(wi, l) as usize;
                    if *wait {
                        b.proxy.wait(t, n, nt);
                    } else {
                        b.proxy.commit(t, nt);
                    }
                });
                Self::advance(w, mask);
            }
            Kind::Mapa(generic) => return self.exec_mapa(b, wi, w, pc, mask, exec, *generic),
            Kind::ClusterBar(arrive) => {
                return self.exec_cluster_bar(b, wi, w, pc, mask, exec, *arrive)
            }
            Kind::Setmaxnreg(inc) => {
                return self.exec_setmaxnreg(b, wi, w, pc, mask, exec, *inc);
            }
            Kind::CpAsyncBulkTensor { rank, load, .. } => {
                let (rank, load) = (*rank as usize, *load);
                let mut ok = true;
                lanes!(l, {
                    if !self.exec_tensor_copy(b, wi, w, pc, l, rank, load) {
                        ok = false;
                        break;
                    }
                });
                self.finish_access(pc);
                if !ok {
                    return Step::Stop;
                }
                Self::advance(w, mask);
            }
            Kind::Misc(op) => return self.exec_misc(b, wi, w, pc, mask, exec, *op),
            Kind::Unsupported(name) => {
                self.fault(
                    b,
                    wi,
                    Some(mask.trailing_zeros()),
                    pc,
                    FaultKind::Unsupported,
                    format!("instruction '{}' is not supported by the emulator", name),
                );
                return Step::Stop;
            }
        }
        Step::Continue
    }

    #[allow(clippy::too_many_arguments)]
    fn exec_bar(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        mode: BarMode,
    ) -> Step {
        let args = &self.m.code[pc as usize].args;
        let is_red = matches!(mode, BarMode::RedPopc | BarMode::RedAnd | BarMode::RedOr);
        // operand positions
        let (d_op, a_op, b_op, c_op) = if is_red {
            if args.len() >= 4 {
                (Some(&args[0]), &args[1], Some(&args[2]), Some(&args[3]))
            } else {
                (Some(&args[0]), &args[1], None, args.get(2))
            }
        } else {
            (None, &args[0], args.get(1), None)
        };
        // lanes with a false guard skip the barrier
        Self::advance(w, mask & !exec);
        if exec == 0 {
            return Step::Continue;
        }
        if mode != BarMode::Arrive {
            self.pic[pc as usize].barrier_waits += 1;
        }
        let mut mm = exec;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let id = self.val(b, w, wi, a_op, l);
            if id >= 16 {
                self.fault(
                    b,
                    wi,
                    Some(l as u32),
                    pc,
                    FaultKind::InvalidOperation,
                    format!("barrier id {} out of range 0..15", id),
                );
                return Step::Stop;
            }
            let id = id as usize;
            let count = b_op.map(|o| self.val(b, w, wi, o, l) as u32);
            if let Some(c) = count {
                if c == 0 || c > self.nthreads.div_ceil(32) * 32 || c % 32 != 0 {
                    self.fault(b, wi, Some(l as u32), pc, FaultKind::InvalidOperation, format!("barrier thread count {} must be a non-zero multiple of 32 not above the block size", c));
                    return Step::Stop;
                }
            }
            let bar = &mut b.bars[id];
            if bar.arrived > 0 {
                if bar.expected != count {
                    let msg = format!(
                        "barrier {} used with inconsistent thread counts ({:?} vs {:?})",
                        id, bar.expected, count
                    );
                    self.fault(b, wi, Some(l as u32), pc, FaultKind::BarrierDivergence, msg);
                    return Step::Stop;
                }
                if count.is_none() && bar.pc != pc && mode != BarMode::Arrive {
                    let other = self.m.code[bar.pc as usize].line;
                    let msg = format!("threads wait at different barrier instructions for barrier {} (this one and the one at PTX line {}): the block diverged", id, other);
                    self.fault(b, wi, Some(l as u32), pc, FaultKind::BarrierDivergence, msg);
                    return Step::Stop;
                }
            } else {
                bar.expected = count;
                bar.pc = pc;
                bar.red_popc = 0;
                bar.red_and = true;
                bar.red_or = false;
                bar.mode_red = if is_red { Some(mode) } else { None };
            }
            let inst = match bar.inst {
                Some(i) => i,
                None => {
                    let i = b.inst.len() as u32;
                    b.inst.push(Inst {
                        waiters: vec![0; self.nthreads.div_ceil(64) as usize],
                        completed: false,
                    });
                    b.bars[id].inst = Some(i);
                    i
                }
            };
            let t = self.tid_of(wi, l) as usize;
            b.thr_inst[t].push(inst);
            let bar = &mut b.bars[id];
            bar.arrived += 1;
            if is_red {
                let p = c_op.map(|o| self.val(b, w, wi, o, l) != 0).unwrap_or(false);
                let bar = &mut b.bars[id];
                bar.red_popc += p as u32;
                bar.red_and &= p;
                bar.red_or |= p;
            }
            if mode == BarMode::Arrive {
                w.pc[l] += 1;
            } else {
                b.inst[inst as usize].waiters[t / 64] |= 1 << (t % 64);
                w.st[l] = Ls::Bar;
                let dreg = d_op.and_then(|d| {
                    if let Operand::Reg(r) = d {
                        Some(*r)
                    } else {
                        None
                    }
                });
                b.bars[id].waiters.push((wi as u32, l as u32, dreg));
            }
            if count.is_some() {
                self.try_complete(b, wi, w, id);
                if self.abort {
                    return Step::Stop;
                }
            }
        }
        for id in 0..16 {
            if b.bars[id].arrived > 0 && b.bars[id].expected.is_none() {
                self.try_complete(b, wi, w, id);
                if self.abort {
                    return Step::Stop;
                }
            }
        }
        if w.run_mask() == 0 {
            Step::Stop
        } else {
            Step::Continue
        }
    }

    fn try_complete(&mut self, b: &mut Block, wi: usize, w: &mut Warp, id: usize) {
        let expected = b.bars[id].expected.unwrap_or(self.nthreads - b.exited);
        if b.bars[id].arrived < expected || b.bars[id].arrived == 0 {
            return;
        }
        let bar = std::mem::take(&mut b.bars[id]);
        if let Some(i) = bar.inst {
            b.inst[i as usize].completed = true;
        }
        if bar.expected.is_none() {
            // block-wide barrier: threads that exited during this interval never reached it
            for t in 0..self.nthreads as usize {
                if b.exit_gen[t] == b.gen {
                    let (ww, ll) = (t / 32, t % 32);
                    let line = self.m.code[bar.pc as usize].line;
                    let msg = format!(
                        "barrier divergence: thread {} (warp {}, lane {}) exited without reaching the block-wide barrier {} at PTX line {} that the other threads waited at",
                        t, ww, ll, id, line
                    );
                    self.fault(
                        b,
                        ww,
                        Some(ll as u32),
                        bar.pc,
                        FaultKind::BarrierDivergence,
                        msg,
                    );
                    return;
                }
            }
            b.gen += 1;
        }
        let result = match bar.mode_red {
            Some(BarMode::RedPopc) => bar.red_popc as u64,
            Some(BarMode::RedAnd) => bar.red_and as u64,
            Some(BarMode::RedOr) => bar.red_or as u64,
            _ => 0,
        };
        for (ww, ll, d) in bar.waiters {
            let target: &mut Warp = if ww as usize == wi {
                &mut *w
            } else {
                &mut b.warps[ww as usize]
            };
            target.st[ll as usize] = Ls::Run;
            target.pc[ll as usize] += 1;
            if let Some(r) = d {
                target.regs[r as usize * 32 + ll as usize] = result;
            }
        }
    }

    fn exec_collective(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
    ) -> Step {
        let ins = &self.m.code[pc as usize];
        let args = &ins.args;
        let aligned = matches!(
            ins.kind,
            Kind::Mma(_)
                | Kind::Ldmatrix(..)
                | Kind::Stmatrix(..)
                | Kind::Movmatrix
                | Kind::Wmma(_)
        );
        // lanes whose guard is false skip it
        Self::advance(w, mask & !exec);
        if exec == 0 {
            return Step::Continue;
        }
        let first = exec.trailing_zeros() as usize;
        let member: u32 = if aligned {
            0xffff_ffff
        } else {
            let mop = match &ins.kind {
                Kind::BarWarpSync => &args[0],
                Kind::Shfl(_) => &args[args.len() - 1],
                Kind::Vote(_) | Kind::Redux(..) | Kind::Match(..) | Kind::Elect => {
                    &args[args.len() - 1]
                }
                _ => &args[0],
            };
            let mv = self.val(b, w, wi, mop, first) as u32;
            // Lanes may execute the same collective in disjoint groups, each with its own membermask
            // (cooperative groups' labeled_partition, coalesced_threads): the PTX ISA makes each thread wait
            // for the lanes of its own mask only. This step runs the first lane's group; lanes with another
            // mask stay at this instruction for a later step. A lane that is in this group's mask but passes
            // a different one is a misuse.
            let mut other = 0u32;
            let mut mm = exec;
            while mm != 0 {
                let l = mm.trailing_zeros() as usize;
                mm &= mm - 1;
                if self.val(b, w, wi, mop, l) as u32 != mv {
                    if mv & (1 << l) != 0 {
                        self.fault(
                            b,
                            wi,
                            Some(l as u32),
                            pc,
                            FaultKind::CollectiveMisuse,
                            format!(
                                "lane {} is in the membermask 0x{:08x} of {} but passes a different one",
                                l,
                                mv,
                                self.opname(pc)
                            ),
                        );
                        return Step::Stop;
                    }
                    other |= 1 << l;
                }
            }
            if other != 0 {
                // Lanes of this group's mask whose guard is false: the same misuse the full check reports.
                let skipped = mask & !exec & mv;
                if skipped != 0 {
                    let l = skipped.trailing_zeros();
                    let msg = format!(
                        "lane {} is named in the membermask 0x{:08x} of {} but its guard predicate is false",
                        l,
                        mv,
                        self.opname(pc)
                    );
                    self.fault(b, wi, Some(l), pc, FaultKind::CollectiveMisuse, msg);
                    return Step::Stop;
                }
                // Guarded-off lanes were advanced above; run this group alone, the others stay here.
                let group = exec & !other;
                return self.exec_collective(b, wi, w, pc, group, group);
            }
            mv
        };
        let name = self.opname(pc);
        if exec & !member != 0 {
            let l = (exec & !member).trailing_zeros();
            self.fault(
                b,
                wi,
                Some(l),
                pc,
                FaultKind::CollectiveMisuse,
                format!(
                    "lane {} executes {} but is not in its membermask 0x{:08x}",
                    l, name, member
                ),
            );
            return Step::Stop;
        }
        if member & !w.exist != 0 {
            let l = (member & !w.exist).trailing_zeros();
            self.fault(
                b,
                wi,
                Some(l),
                pc,
                FaultKind::CollectiveMisuse,
                format!(
                    "{} requires lane {} (membermask 0x{:08x}) which does not exist in this warp",
                    name, l, member
                ),
            );
            return Step::Stop;
        }
        let skipped = mask & !exec & member;
        if skipped != 0 {
            let l = skipped.trailing_zeros();
            self.fault(b, wi, Some(l), pc, FaultKind::CollectiveMisuse, format!("lane {} is named in the membermask 0x{:08x} of {} but its guard predicate is false", l, member, name));
            return Step::Stop;
        }
        let missing = member & !exec;
        let mut all_here = true;
        let mut mm = missing;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            match w.st[l] {
                Ls::Exit => {
                    let msg = format!("{} with membermask 0x{:08x} executed by lanes 0x{:08x}, but lane {} has already exited", name, member, exec, l);
                    self.fault(b, wi, Some(l as u32), pc, FaultKind::CollectiveMisuse, msg);
                    return Step::Stop;
                }
                Ls::Coll if w.pc[l] == pc => {}
                _ => all_here = false,
            }
        }
        if !all_here {
            w.coll_member = member;
            let mut mm = exec;
            while mm != 0 {
                let l = mm.trailing_zeros() as usize;
                mm &= mm - 1;
                w.st[l] = Ls::Coll;
            }
            return if w.run_mask() == 0 {
                Step::Stop
            } else {
                Step::Continue
            };
        }
        let exec = exec | missing;
        let mut mm = missing;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            w.st[l] = Ls::Run;
        }
        self.run_collective(b, wi, w, pc, exec, member)
    }

    fn run_collective(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        exec: u32,
        member: u32,
    ) -> Step {
        let m = self.m;
        let ins = &m.code[pc as usize];
        let args = &ins.args;
        if matches!(
            ins.kind,
            Kind::Shfl(_) | Kind::Vote(_) | Kind::Match(..) | Kind::Redux(..)
        ) {
            self.collective_orders(b, wi, exec);
        }
        match &ins.kind {
            Kind::BarWarpSync => {
                let i = b.inst.len() as u32;
                let mut waiters = vec![0u64; self.nthreads.div_ceil(64) as usize];
                for l in 0..32 {
                    if exec & (1 << l) != 0 {
                        let t = self.tid_of(wi, l) as usize;
                        waiters[t / 64] |= 1 << (t % 64);
                        b.thr_inst[t].push(i);
                    }
                }
                b.inst.push(Inst {
                    waiters,
                    completed: true,
                });
            }
            Kind::Shfl(mode) => {
                let (d, p, ai) = if args.len() >= 6 {
                    (&args[0], Some(&args[1]), 2)
                } else {
                    (&args[0], None, 1)
                };
                let mut vals = [0u64; 32];
                for (l, v) in vals.iter_mut().enumerate() {
                    if w.exist & (1 << l) != 0 {
                        *v = self.val(b, w, wi, &args[ai], l);
                    }
                }
                for l in 0..32usize {
                    if exec & (1 << l) == 0 {
                        continue;
                    }
                    let bv = (self.val(b, w, wi, &args[ai + 1], l) & 0x1f) as i32;
                    let c = self.val(b, w, wi, &args[ai + 2], l) as u32;
                    let cval = (c & 0x1f) as i32;
                    let segmask = ((c >> 8) & 0x1f) as i32;
                    let lane = l as i32;
                    let max_lane = (lane & segmask) | (cval & !segmask);
                    let min_lane = lane & segmask;
                    let (j, pval) = match mode {
                        ShflMode::Up => {
                            let j = lane - bv;
                            (j, j >= max_lane)
                        }
                        ShflMode::Down => {
                            let j = lane + bv;
                            (j, j <= max_lane)
                        }
                        ShflMode::Bfly => {
                            let j = lane ^ bv;
                            (j, j <= max_lane)
                        }
                        ShflMode::Idx => {
                            let j = min_lane | (bv & !segmask);
                            (j, j <= max_lane)
                        }
                    };
                    let src = if pval && (0..32).contains(&j) {
                        j as usize
                    } else {
                        l
                    };
                    Self::set(w, d, l, vals[src]);
                    if let Some(p) = p {
                        Self::set(w, p, l, pval as u64);
                    }
                }
            }
            Kind::Vote(mode) => {
                let mut ballot = 0u32;
                for l in 0..32 {
                    if exec & (1 << l) != 0 && self.val(b, w, wi, &args[1], l) != 0 {
                        ballot |= 1 << l;
                    }
                }
                let r = match mode {
                    VoteMode::All => (ballot == exec) as u64,
                    VoteMode::Any => (ballot != 0) as u64,
                    VoteMode::Uni => (ballot == exec || ballot == 0) as u64,
                    VoteMode::Ballot => ballot as u64,
                };
                for l in 0..32 {
                    if exec & (1 << l) != 0 {
                        Self::set(w, &args[0], l, r);
                    }
                }
            }
            Kind::Redux(op, ty) => {
                let signed = ty.is_signed();
                let mk = mask_bits(ty.bits());
                let mut acc: Option<u64> = None;
                for l in 0..32 {
                    if exec & (1 << l) == 0 {
                        continue;
                    }
                    let v = self.val(b, w, wi, &args[1], l) & mk;
                    acc = Some(match acc {
                        None => v,
                        Some(a) => match op {
                            ReduxOp::Add => a.wrapping_add(v) & mk,
                            ReduxOp::And => a & v,
                            ReduxOp::Or => a | v,
                            ReduxOp::Xor => a ^ v,
                            ReduxOp::Min | ReduxOp::Max => {
                                let (x, y) = if signed {
                                    (a as u32 as i32 as i64, v as u32 as i32 as i64)
                                } else {
                                    (a as i64, v as i64)
                                };
                                let pick_a = if *op == ReduxOp::Min { x <= y } else { x >= y };
                                if pick_a {
                                    a
                                } else {
                                    v
                                }
                            }
                        },
                    });
                }
                let r = acc.unwrap_or(0);
                for l in 0..32 {
                    if exec & (1 << l) != 0 {
                        Self::set(w, &args[0], l, r);
                    }
                }
            }
            Kind::Match(all, ty) => {
                let ai = if args.len() >= 4 { 2 } else { 1 };
                let mk = mask_bits(ty.bits());
                let mut vals = [0u64; 32];
                for (l, v) in vals.iter_mut().enumerate() {
                    if exec & (1 << l) != 0 {
                        *v = self.val(b, w, wi, &args[ai], l) & mk;
                    }
                }
                for l in 0..32 {
                    if exec & (1 << l) == 0 {
                        continue;
                    }
                    let mut same = 0u32;
                    for k in 0..32 {
                        if exec & (1 << k) != 0 && vals[k] == vals[l] {
                            same |= 1 << k;
                        }
                    }
                    if *all {
                        let eq = same == exec;
                        Self::set(w, &args[0], l, if eq { exec as u64 } else { 0 });
                        if ai == 2 {
                            Self::set(w, &args[1], l, eq as u64);
                        }
                    } else {
                        Self::set(w, &args[0], l, same as u64);
                    }
                }
            }
            Kind::Mma(kind) => {
                self.mma_ops += 1;
                exec_mma(self, b, w, wi, *kind, args);
            }
            Kind::Ldmatrix(n, trans) if !self.exec_ldmatrix(b, wi, w, pc, *n as usize, *trans) => {
                return Step::Stop;
            }
            Kind::Stmatrix(n, trans) if !self.exec_stmatrix(b, wi, w, pc, *n as usize, *trans) => {
                return Step::Stop;
            }
            Kind::Wmma(op) if !self.exec_wmma(b, wi, w, pc, *op) => {
                return Step::Stop;
            }
            Kind::Movmatrix => misc::movmatrix(self, b, w, wi, args),
            Kind::Elect => {
                // d|p, membermask: every member is here (checked above); the lowest is the leader.
                let leader = exec.trailing_zeros() as u64;
                let (d, p) = if args.len() >= 3 {
                    (&args[0], Some(&args[1]))
                } else {
                    (&args[0], None)
                };
                for l in 0..32usize {
                    if exec & (1 << l) != 0 {
                        match p {
                            Some(p) => {
                                Self::set(w, d, l, leader);
                                Self::set(w, p, l, (l as u64 == leader) as u64);
                            }
                            // `elect.sync p, mask` (no d)
                            None => Self::set(w, d, l, (l as u64 == leader) as u64),
                        }
                    }
                }
            }
            _ => {}
        }
        let _ = member;
        Self::advance(w, exec);
        Step::Continue
    }

    fn exec_ldmatrix(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        n: usize,
        trans: bool,
    ) -> bool {
        let m = self.m;
        let ins = &m.code[pc as usize];
        let args = &ins.args;
        // rows[i][r] = 8 b16 values of row r of matrix i
        let mut rows = [[[0u16; 8]; 8]; 4];
        for (i, mat) in rows.iter_mut().enumerate().take(n) {
            for (r, row) in mat.iter_mut().enumerate() {
                let l = i * 8 + r;
                let a = match &args[1] {
                    Operand::Addr(base, off) => self.addr(w, base, *off, l, false),
                    o => self.val(b, w, wi, o, l),
                };
                let a = if (SHARED_WINDOW..SHARED_WINDOW + WINDOW).contains(&a) {
                    a - SHARED_WINDOW
                } else {
                    a
                };
                let loc = match self.resolve(b, wi, l, Space::Shared, a, 16, pc) {
                    Some(x) => x,
                    None => return false,
                };
                self.track(b, wi, l, loc, 16, Acc::Read, pc, a);
                let s = self.mem_slice(b, loc);
                for (c, v) in row.iter_mut().enumerate() {
                    *v = u16::from_le_bytes([s[2 * c], s[2 * c + 1]]);
                }
            }
            // one shared wavefront per 8x8 matrix
            self.finish_access(pc);
        }
        let dsts = args[0].elements();
        for l in 0..32usize {
            let (g, t) = (l >> 2, l & 3);
            for (i, d) in dsts.iter().enumerate().take(n) {
                let (lo, hi) = if trans {
                    (rows[i][2 * t][g], rows[i][2 * t + 1][g])
                } else {
                    (rows[i][g][2 * t], rows[i][g][2 * t + 1])
                };
                Self::set(w, d, l, lo as u64 | (hi as u64) << 16);
            }
        }
        true
    }

    fn mbar_loc(&mut self, b: &Block, wi: usize, lane: usize, pc: u32, a: u64) -> Option<u32> {
        let a = if (SHARED_WINDOW..SHARED_WINDOW + WINDOW).contains(&a) {
            a - SHARED_WINDOW
        } else {
            a
        };
        match self.resolve(b, wi, lane, Space::Shared, a, 8, pc) {
            Some(Loc::Shared(o)) => Some(o as u32),
            Some(_) => {
                let msg = format!("mbarrier operation on another block's mbarrier at {a:#x}: only multicast copies complete on remote mbarriers so far");
                self.fault(b, wi, Some(lane as u32), pc, FaultKind::Unsupported, msg);
                None
            }
            None => None,
        }
    }

    fn mbar_complete_tx(
        &mut self,
        b: &mut Block,
        wi: usize,
        lane: usize,
        pc: u32,
        a: u32,
        bytes: i64,
    ) -> bool {
        let off = match self.mbar_loc(b, wi, lane, pc, a as u64) {
            Some(o) => o,
            None => return false,
        };
        let t = self.tid_of(wi, lane) as usize;
        self.mbar_sync_remote(b, off);
        match b.mbar.get_mut(&off) {
            None => {
                self.fault(
                    b,
                    wi,
                    Some(lane as u32),
                    pc,
                    FaultKind::MbarrierMisuse,
                    format!(
                        "complete_tx on uninitialized mbarrier at shared offset 0x{:x}",
                        off
                    ),
                );
                false
            }
            Some(mb) => {
                mb.tx -= bytes;
                let inst = mb.inst;
                b.thr_inst[t].push(inst);
                self.mbar_maybe_flip(b, off);
                true
            }
        }
    }

    /// Completes the happens-before bookkeeping of phases another block flipped (see `Mbar::remote_flips`):
    /// whoever arrived or completed transactions in them is ordered before their waiters.
    fn mbar_sync_remote(&mut self, b: &mut Block, off: u32) {
        let nt = self.nthreads;
        let Some(mb) = b.mbar.get_mut(&off) else {
            return;
        };
        for _ in 0..std::mem::take(&mut mb.remote_flips) {
            let old = mb.inst;
            let ni = b.inst.len() as u32;
            mb.inst = ni;
            mb.prev = Some(old);
            b.inst[old as usize].completed = true;
            b.inst.push(Inst {
                waiters: vec![0; nt.div_ceil(64) as usize],
                completed: false,
            });
        }
    }

    fn mbar_maybe_flip(&mut self, b: &mut Block, off: u32) {
        let nt = self.nthreads;
        let mb = b.mbar.get_mut(&off).unwrap();
        if mb.pending == 0 && mb.tx == 0 {
            mb.phase += 1;
            mb.pending = mb.expected;
            let old = mb.inst;
            let ni = b.inst.len() as u32;
            mb.inst = ni;
            mb.prev = Some(old);
            b.inst[old as usize].completed = true;
            b.inst.push(Inst {
                waiters: vec![0; nt.div_ceil(64) as usize],
                completed: false,
            });
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn exec_mbarrier(
        &mut self,
        b: &mut Block,
        wi: usize,
        w: &mut Warp,
        pc: u32,
        mask: u32,
        exec: u32,
        op: MbarOp,
    ) -> Step {
        let m = self.m;
        let args = &m.code[pc as usize].args;
        Self::advance(w, mask & !exec);
        let mut mm = exec;
        while mm != 0 {
            let l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            let t = self.tid_of(wi, l) as usize;
            let (ai, has_dst) = match op {
                MbarOp::Init
                | MbarOp::ExpectTx
                | MbarOp::Inval
                | MbarOp::CompleteTx
                | MbarOp::ArriveNoinc => (0, false),
                _ => (1, true),
            };
            let a = match &args[ai] {
                Operand::Addr(base, off) => self.addr(w, base, *off, l, false),
                o => self.val(b, w, wi, o, l),
            };
            let extra = args.get(ai + 1).map(|o| self.val(b, w, wi, o, l));
            // An arrive on another block's mbarrier (an address from `mapa`).
            if matches!(op, MbarOp::Arrive | MbarOp::ArriveExpectTx) {
                match self.remote_mbar_arrive(b, wi, l, pc, a, op, extra) {
                    Some(true) => continue,
                    Some(false) => {}
                    None => return Step::Stop,
                }
            }
            let off = match self.mbar_loc(b, wi, l, pc, a) {
                Some(o) => o,
                None => return Step::Stop,
            };
            self.mbar_sync_remote(b, off);
            if op == MbarOp::Init {
                let cnt = extra.unwrap_or(1) as u32;
                if cnt == 0 {
                    self.fault(
                        b,
                        wi,
                        Some(l as u32),
                        pc,
                        FaultKind::MbarrierMisuse,
                        "mbarrier.init with a zero count".into(),
                    );
                    return Step::Stop;
                }
                let i = b.inst.len() as u32;
                b.inst.push(Inst {
                    waiters: vec![0; self.nthreads.div_ceil(64) as usize],
                    completed: false,
                });
                b.mbar.insert(
                    off,
                    Mbar {
                        expected: cnt,
                        pending: cnt,
                        tx: 0,
                        phase: 0,
                        inst: i,
                        prev: None,
                        remote_flips: 0,
                    },
                );
                self.track(
                    b,
                    wi,
                    l,
                    Loc::Shared(off as usize),
                    8,
                    Acc::Write,
                    pc,
                    off as u64,
                );
                continue;
            }
            if op == MbarOp::Inval {
                b.mbar.remove(&off);
                continue;
            }
            let mb = match b.mbar.get(&off).copied() {
                Some(x) => x,
                None => {
                    self.fault(
                        b,
                        wi,
                        Some(l as u32),
                        pc,
                        FaultKind::MbarrierMisuse,
                        format!(
                            "mbarrier operation on uninitialized mbarrier at shared offset 0x{:x}",
                            off
                        ),
                    );
                    return Step::Stop;
                }
            };
            // The transaction count lives in [-(2^20 - 1), 2^20 - 1] (PTX ISA, mbarrier): beyond it is an error.
            let tx_add = match op {
                MbarOp::ArriveExpectTx | MbarOp::ExpectTx => extra.unwrap_or(0) as i64,
                MbarOp::CompleteTx => -(extra.unwrap_or(0) as i64),
                _ => 0,
            };
            if (mb.tx + tx_add).abs() >= 1 << 20 {
                let msg = format!(
                    "mbarrier transaction count {} (expected {} more bytes) outside its range of ±(2^20 - 1)",
                    mb.tx + tx_add,
                    tx_add
                );
                self.fault(b, wi, Some(l as u32), pc, FaultKind::MbarrierMisuse, msg);
                return Step::Stop;
            }
            match op {
                MbarOp::Arrive
                | MbarOp::ArriveExpectTx
                | MbarOp::ArriveDrop
                | MbarOp::ArriveNoinc => {
                    let mut cnt = 1u32;
                    if op == MbarOp::ArriveExpectTx {
                        b.mbar.get_mut(&off).unwrap().tx += extra.unwrap_or(0) as i64;
                    } else if let Some(c) = extra {
                        cnt = c as u32;
                    }
                    if mb.pending < cnt {
                        self.fault(
                            b,
                            wi,
                            Some(l as u32),
                            pc,
                            FaultKind::MbarrierMisuse,
                            format!(
                                "mbarrier arrive: {} arrivals but only {} pending in this phase",
                                cnt, mb.pending
                            ),
                        );
                        return Step::Stop;
                    }
                    b.thr_inst[t].push(mb.inst);
                    b.mbar.get_mut(&off).unwrap().pending -= cnt;
                    if op == MbarOp::ArriveDrop {
                        // Later phases expect fewer arrivals (the pending count of this one already fell).
                        let mb = b.mbar.get_mut(&off).unwrap();
                        mb.expected = mb.expected.saturating_sub(cnt);
                    }
                    if has_dst {
                        Self::set(w, &args[0], l, mb.phase as u64);
                    }
                    self.mbar_maybe_flip(b, off);
                }
                MbarOp::ExpectTx => {
                    b.mbar.get_mut(&off).unwrap().tx += extra.unwrap_or(0) as i64;
                }
                MbarOp::CompleteTx => {
                    b.mbar.get_mut(&off).unwrap().tx -= extra.unwrap_or(0) as i64;
                    b.thr_inst[t].push(mb.inst);
                    self.mbar_maybe_flip(b, off);
                }
                MbarOp::TestWait
                | MbarOp::TryWait
                | MbarOp::TestWaitParity
                | MbarOp::TryWaitParity => {
                    let tok = extra.unwrap_or(0) as u32;
                    let done = if matches!(op, MbarOp::TestWaitParity | MbarOp::TryWaitParity) {
                        (mb.phase & 1) != (tok & 1)
                    } else {
                        mb.phase != tok
                    };
                    if done {
                        // the waiter is ordered after all arrivals of the completed phase
                        mark_mbar_waiter(b, off, t);
                    }
                    Self::set(w, &args[0], l, done as u64);
                }
                _ => {}
            }
        }
        Self::advance(w, exec);
        Step::Continue
    }
}

fn mark_mbar_waiter(b: &mut Block, off: u32, t: usize) {
    // `t` observed the completion of the mbarrier's most recent phase: it is ordered after every thread
    // that arrived on (or completed transactions of) that phase.
    if let Some(prev) = b.mbar.get(&off).and_then(|mb| mb.prev) {
        b.inst[prev as usize].waiters[t / 64] |= 1 << (t % 64);
    }
}

fn offset_loc(l: Loc, k: usize) -> Loc {
    match l {
        Loc::Global(i, o) => Loc::Global(i, o + k),
        Loc::Shared(o) => Loc::Shared(o + k),
        Loc::Local(o) => Loc::Local(o + k),
        Loc::Param(o) => Loc::Param(o + k),
        Loc::Remote(r, o) => Loc::Remote(r, o + k),
    }
}

#[allow(clippy::too_many_arguments)]
fn copy_param(
    l: &mut L<'_>,
    b: &mut Block,
    w: &mut Warp,
    wi: usize,
    lane: usize,
    src: Loc,
    dst: &Operand,
    size: usize,
) {
    match dst {
        Operand::Sym(SymRef::Local(o)) => {
            let d = l.tid_of(wi, lane) as usize * l.local_size + *o as usize;
            if let Loc::Local(s) = src {
                b.local.copy_within(s..s + size, d);
            }
        }
        Operand::Reg(_) => {
            let v = l.load(b, src, size.min(8));
            L::set(w, dst, lane, v);
        }
        _ => {}
    }
}

// ------------------------------------------------------------------------------------------------
// Scalar semantics

fn f32v(x: u64) -> f32 {
    f32::from_bits(x as u32)
}
fn f64v(x: u64) -> f64 {
    f64::from_bits(x)
}

fn boolop(o: BoolOp, a: bool, b: bool) -> bool {
    match o {
        BoolOp::And => a && b,
        BoolOp::Or => a || b,
        BoolOp::Xor => a ^ b,
    }
}

fn to_f64(ty: PtxType, v: u64) -> f64 {
    match ty {
        PtxType::F32 | PtxType::TF32 => f32v(v) as f64,
        PtxType::F64 => f64v(v),
        PtxType::F16 => half::f16::from_bits(v as u16).to_f64(),
        PtxType::BF16 => half::bf16::from_bits(v as u16).to_f64(),
        _ => 0.0,
    }
}

fn compare(c: Cmp, ty: PtxType, a: u64, b: u64) -> bool {
    if ty.is_float() {
        if matches!(ty, PtxType::F16x2 | PtxType::BF16x2) {
            let et = if ty == PtxType::F16x2 {
                PtxType::F16
            } else {
                PtxType::BF16
            };
            return compare(c, et, a & 0xffff, b & 0xffff);
        }
        let (x, y) = (to_f64(ty, a), to_f64(ty, b));
        let nan = x.is_nan() || y.is_nan();
        return match c {
            Cmp::Eq => !nan && x == y,
            Cmp::Ne => !nan && x != y,
            Cmp::Lt | Cmp::Lo => !nan && x < y,
            Cmp::Le | Cmp::Ls => !nan && x <= y,
            Cmp::Gt | Cmp::Hi => !nan && x > y,
            Cmp::Ge | Cmp::Hs => !nan && x >= y,
            Cmp::Equ => nan || x == y,
            Cmp::Neu => nan || x != y,
            Cmp::Ltu => nan || x < y,
            Cmp::Leu => nan || x <= y,
            Cmp::Gtu => nan || x > y,
            Cmp::Geu => nan || x >= y,
            Cmp::Num => !nan,
            Cmp::Nan => nan,
        };
    }
    let bits = if ty == PtxType::Pred { 1 } else { ty.bits() };
    let signed = ty.is_signed() && !matches!(c, Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs);
    let (x, y): (i128, i128) = if signed {
        (sext(a, bits) as i128, sext(b, bits) as i128)
    } else {
        ((a & mask_bits(bits)) as i128, (b & mask_bits(bits)) as i128)
    };
    match c {
        Cmp::Eq | Cmp::Equ => x == y,
        Cmp::Ne | Cmp::Neu => x != y,
        Cmp::Lt | Cmp::Lo | Cmp::Ltu => x < y,
        Cmp::Le | Cmp::Ls | Cmp::Leu => x <= y,
        Cmp::Gt | Cmp::Hi | Cmp::Gtu => x > y,
        Cmp::Ge | Cmp::Hs | Cmp::Geu => x >= y,
        Cmp::Num => true,
        Cmp::Nan => false,
    }
}

#[allow(clippy::too_many_arguments)]
fn alu(op: AluOp, ty: PtxType, m: Mods, a: u64, b: u64, c: u64, d: u64) -> u64 {
    use PtxType::*;
    match ty {
        F32 | TF32 => {
            if matches!(
                op,
                AluOp::TestpFinite
                    | AluOp::TestpInfinite
                    | AluOp::TestpNumber
                    | AluOp::TestpNan
                    | AluOp::TestpNormal
                    | AluOp::TestpSubnormal
            ) {
                return testp(
                    op,
                    f32v(a) as f64,
                    f32v(a).is_normal(),
                    f32v(a).is_subnormal(),
                ) as u64;
            }
            let r = f32_alu(op, m, f32v(a), f32v(b), f32v(c));
            r.to_bits() as u64
        }
        F64 => {
            if matches!(
                op,
                AluOp::TestpFinite
                    | AluOp::TestpInfinite
                    | AluOp::TestpNumber
                    | AluOp::TestpNan
                    | AluOp::TestpNormal
                    | AluOp::TestpSubnormal
            ) {
                return testp(op, f64v(a), f64v(a).is_normal(), f64v(a).is_subnormal()) as u64;
            }
            f64_alu(op, m, f64v(a), f64v(b), f64v(c)).to_bits()
        }
        F16 | BF16 => half_op(ty, op, m, a, b, c) as u64,
        F16x2 | BF16x2 => {
            let et = if ty == F16x2 { F16 } else { BF16 };
            let lo = half_op(et, op, m, a & 0xffff, b & 0xffff, c & 0xffff) as u64;
            let hi = half_op(
                et,
                op,
                m,
                (a >> 16) & 0xffff,
                (b >> 16) & 0xffff,
                (c >> 16) & 0xffff,
            ) as u64;
            lo | hi << 16
        }
        _ => int_alu(op, ty, m, a, b, c, d),
    }
}

fn testp(op: AluOp, x: f64, normal: bool, sub: bool) -> bool {
    match op {
        AluOp::TestpFinite => x.is_finite(),
        AluOp::TestpInfinite => x.is_infinite(),
        AluOp::TestpNumber => !x.is_nan(),
        AluOp::TestpNan => x.is_nan(),
        AluOp::TestpNormal => normal,
        _ => sub,
    }
}

fn half_op(ty: PtxType, op: AluOp, m: Mods, a: u64, b: u64, c: u64) -> u16 {
    let f = |x: u64| to_f64(ty, x) as f32;
    if matches!(op, AluOp::Abs | AluOp::Neg) {
        return match op {
            AluOp::Abs => (a as u16) & 0x7fff,
            _ => (a as u16) ^ 0x8000,
        };
    }
    let r = f32_alu(op, m, f(a), f(b), f(c));
    if ty == PtxType::F16 {
        half::f16::from_f32(r).to_bits()
    } else {
        half::bf16::from_f32(r).to_bits()
    }
}

fn fminmax(a: f32, b: f32, max: bool) -> f32 {
    if a.is_nan() {
        return b;
    }
    if b.is_nan() {
        return a;
    }
    if max {
        a.max(b)
    } else {
        a.min(b)
    }
}

fn f32_alu(op: AluOp, m: Mods, a: f32, b: f32, c: f32) -> f32 {
    let r = match op {
        AluOp::Add => a + b,
        AluOp::Sub => a - b,
        AluOp::Mul => a * b,
        AluOp::Mad | AluOp::Fma => a.mul_add(b, c),
        AluOp::Div => a / b,
        AluOp::Abs => a.abs(),
        AluOp::Neg => -a,
        // `.NaN`: a NaN operand gives the canonical NaN (without it, the other operand).
        AluOp::Min | AluOp::Max if m.nan && (a.is_nan() || b.is_nan()) => f32::NAN,
        AluOp::Min => fminmax(a, b, false),
        AluOp::Max => fminmax(a, b, true),
        AluOp::Rcp => 1.0 / a,
        AluOp::Sqrt => a.sqrt(),
        AluOp::Rsqrt => 1.0 / a.sqrt(),
        AluOp::Ex2 => a.exp2(),
        AluOp::Lg2 => a.log2(),
        AluOp::Sin => a.sin(),
        AluOp::Cos => a.cos(),
        AluOp::Tanh => a.tanh(),
        AluOp::Copysign => b.copysign(a),
        _ => f32::NAN,
    };
    if m.sat {
        if r.is_nan() {
            0.0
        } else {
            r.clamp(0.0, 1.0)
        }
    } else if m.relu && (r < 0.0 || r.is_nan()) {
        0.0
    } else {
        r
    }
}

fn f64_alu(op: AluOp, m: Mods, a: f64, b: f64, c: f64) -> f64 {
    let r = match op {
        AluOp::Add => a + b,
        AluOp::Sub => a - b,
        AluOp::Mul => a * b,
        AluOp::Mad | AluOp::Fma => a.mul_add(b, c),
        AluOp::Div => a / b,
        AluOp::Abs => a.abs(),
        AluOp::Neg => -a,
        AluOp::Min => {
            if a.is_nan() {
                b
            } else if b.is_nan() {
                a
            } else {
                a.min(b)
            }
        }
        AluOp::Max => {
            if a.is_nan() {
                b
            } else if b.is_nan() {
                a
            } else {
                a.max(b)
            }
        }
        AluOp::Rcp => 1.0 / a,
        AluOp::Sqrt => a.sqrt(),
        AluOp::Rsqrt => 1.0 / a.sqrt(),
        AluOp::Ex2 => a.exp2(),
        AluOp::Lg2 => a.log2(),
        AluOp::Sin => a.sin(),
        AluOp::Cos => a.cos(),
        AluOp::Tanh => a.tanh(),
        AluOp::Copysign => b.copysign(a),
        _ => f64::NAN,
    };
    if m.sat {
        if r.is_nan() {
            0.0
        } else {
            r.clamp(0.0, 1.0)
        }
    } else {
        r
    }
}

#[allow(clippy::too_many_arguments)]
/// The high half of a `bits`-bit product (signed products of 64-bit values fit i128, unsigned ones u128).
fn mul_hi(x: i128, y: i128, bits: u32, signed: bool) -> i128 {
    if signed {
        (x * y) >> bits
    } else {
        ((x as u128 * y as u128) >> bits) as i128
    }
}

fn int_alu(op: AluOp, ty: PtxType, m: Mods, a: u64, b: u64, c: u64, d: u64) -> u64 {
    let bits = if ty == PtxType::Pred { 1 } else { ty.bits() };
    let signed = ty.is_signed();
    let mk = mask_bits(bits);
    let iv = |x: u64| -> i128 {
        if signed {
            sext(x, bits) as i128
        } else {
            (x & mk) as i128
        }
    };
    let (x, y, z) = (iv(a), iv(b), iv(c));
    let wide_mk = mask_bits(bits * 2);
    let r: i128 = match op {
        AluOp::Add => {
            let s = x + y;
            if m.sat && signed {
                s.clamp(i32::MIN as i128, i32::MAX as i128)
            } else {
                s
            }
        }
        AluOp::Sub => {
            let s = x - y;
            if m.sat && signed {
                s.clamp(i32::MIN as i128, i32::MAX as i128)
            } else {
                s
            }
        }
        // A u64 x u64 product overflows i128: wrapping keeps its bit pattern, which is what `.hi`/`.lo`
        // take (an overflow check would panic on `mul.lo.u64` of large operands).
        AluOp::Mul => {
            // 64 x 64 unsigned products overflow i128: take them as u128 (the high half by a logical shift).
            let p = x.wrapping_mul(y);
            if m.hi {
                mul_hi(x, y, bits, signed)
            } else if m.wide {
                return (p as u128 as u64) & wide_mk;
            } else {
                p
            }
        }
        AluOp::Mad => {
            let p = x.wrapping_mul(y);
            if m.hi {
                mul_hi(x, y, bits, signed).wrapping_add(z)
            } else if m.wide {
                let cz = if signed {
                    sext(c, bits * 2) as i128
                } else {
                    (c & wide_mk) as i128
                };
                return (p.wrapping_add(cz) as u128 as u64) & wide_mk;
            } else {
                p.wrapping_add(z)
            }
        }
        AluOp::Mul24 | AluOp::Mad24 => {
            let t = |v: u64| -> i128 {
                if signed {
                    sext(v & 0xff_ffff, 24) as i128
                } else {
                    (v & 0xff_ffff) as i128
                }
            };
            let p = t(a) * t(b);
            let p = if m.hi { p >> 16 } else { p };
            if op == AluOp::Mad24 {
                p + z
            } else {
                p
            }
        }
        AluOp::Sad => (x - y).abs() + z,
        AluOp::Div => {
            if y == 0 {
                mk as i128
            } else if signed && y == -1 {
                -x
            } else {
                x / y
            }
        }
        AluOp::Rem => {
            if y == 0 {
                x
            } else {
                x % y
            }
        }
        AluOp::Abs => x.abs(),
        AluOp::Neg => -x,
        AluOp::Min => x.min(y),
        AluOp::Max => x.max(y),
        AluOp::And => ((a & b) & mk) as i128,
        AluOp::Or => ((a | b) & mk) as i128,
        AluOp::Xor => ((a ^ b) & mk) as i128,
        AluOp::Not => ((!a) & mk) as i128,
        AluOp::Cnot => ((a & mk) == 0) as i128,
        AluOp::Shl => {
            let s = (b & 0xffff_ffff) as u32;
            if s >= bits {
                0
            } else {
                ((a << s) & mk) as i128
            }
        }
        AluOp::Shr => {
            let s = (b & 0xffff_ffff) as u32;
            if signed {
                x >> s.min(bits - 1)
            } else if s >= bits {
                0
            } else {
                ((a & mk) >> s) as i128
            }
        }
        AluOp::Popc => (a & mk).count_ones() as i128,
        AluOp::Clz => ((a & mk).leading_zeros() - (64 - bits)) as i128,
        AluOp::Brev => ((a & mk).reverse_bits() >> (64 - bits)) as i128,
        AluOp::Bmsk => {
            // PTX ISA bmsk: `.wrap` takes position and width mod 32; `.clamp` clamps both to 32.
            let (pos, width) = if m.clamp {
                ((a as u32).min(32), (b as u32).min(32))
            } else {
                ((a as u32) & 31, (b as u32) & 31)
            };
            let mask = if width >= 32 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            ((mask << pos) & 0xffff_ffff) as i128
        }
        AluOp::Bfe => {
            let pos = (b & 0xff) as u32;
            let len = (c & 0xff) as u32;
            let msb = bits - 1;
            let sbit = if signed && len != 0 {
                (a >> (pos + len - 1).min(msb)) & 1
            } else {
                0
            };
            let mut r = 0u64;
            for i in 0..bits {
                let bit = if i < len && pos + i <= msb {
                    (a >> (pos + i)) & 1
                } else {
                    sbit
                };
                r |= bit << i;
            }
            return r & mk;
        }
        AluOp::Bfi => {
            // bfi d, f(a), b, pos(c), len(d)
            let pos = (c & 0xff) as u32;
            let len = (d & 0xff) as u32;
            let mut r = b & mk;
            for i in 0..len {
                if pos + i >= bits {
                    break;
                }
                let bit = (a >> i) & 1;
                r = (r & !(1 << (pos + i))) | (bit << (pos + i));
            }
            return r;
        }
        AluOp::Bfind | AluOp::BfindShiftAmt => {
            let v = if signed && x < 0 { !a & mk } else { a & mk };
            if v == 0 {
                0xffff_ffff
            } else {
                let pos = 63 - v.leading_zeros() as i128;
                if op == AluOp::BfindShiftAmt {
                    bits as i128 - 1 - pos
                } else {
                    pos
                }
            }
        }
        AluOp::Szext | AluOp::Fns | AluOp::Dp4a(..) | AluOp::Dp2a(..) | AluOp::PrmtMode(_) => {
            return misc::alu_misc(op, ty, m, a, b, c);
        }
        AluOp::Prmt => {
            let bytes = (a as u32 as u64) | ((b as u32 as u64) << 32);
            let mut r = 0u64;
            for i in 0..4 {
                let sel = (c >> (4 * i)) & 0xf;
                let mut byte = (bytes >> (8 * (sel & 7))) & 0xff;
                if sel & 8 != 0 {
                    byte = if byte & 0x80 != 0 { 0xff } else { 0 };
                }
                r |= byte << (8 * i);
            }
            return r;
        }
        AluOp::Lop3 => {
            let imm = d & 0xff;
            let mut r = 0u64;
            for i in 0..8 {
                if (imm >> i) & 1 == 1 {
                    let ta = if i & 4 != 0 { a } else { !a };
                    let tb = if i & 2 != 0 { b } else { !b };
                    let tc = if i & 1 != 0 { c } else { !c };
                    r |= ta & tb & tc;
                }
            }
            return r & mk;
        }
        AluOp::ShfL | AluOp::ShfR => {
            let n = if m.clamp {
                (c as u32).min(32)
            } else {
                (c as u32) & 31
            };
            let v = (a as u32 as u64) | ((b as u32 as u64) << 32);
            return if op == AluOp::ShfL {
                ((v << n) >> 32) & 0xffff_ffff
            } else {
                (v >> n) & 0xffff_ffff
            };
        }
        _ => 0,
    };
    (r as u128 as u64) & mk
}

fn round_f64(x: f64, r: Rnd) -> f64 {
    match r {
        Rnd::Rni | Rnd::Rn => x.round_ties_even(),
        Rnd::Rzi | Rnd::Rz => x.trunc(),
        Rnd::Rmi | Rnd::Rm => x.floor(),
        Rnd::Rpi | Rnd::Rp => x.ceil(),
        Rnd::Rna => x.round(),
        Rnd::None => x,
    }
}

/// Rounds an f64 to f32 with a directed rounding mode.
fn f64_to_f32(x: f64, r: Rnd) -> f32 {
    let n = x as f32;
    if n.is_nan() || n.is_infinite() || n as f64 == x {
        return n;
    }
    let up = |v: f32| {
        if v >= 0.0 {
            f32::from_bits(v.to_bits() + 1)
        } else if v == 0.0 {
            f32::from_bits(1)
        } else {
            f32::from_bits(v.to_bits() - 1)
        }
    };
    let down = |v: f32| {
        if v > 0.0 {
            f32::from_bits(v.to_bits() - 1)
        } else if v == 0.0 {
            -f32::from_bits(1)
        } else {
            f32::from_bits(v.to_bits() + 1)
        }
    };
    match r {
        Rnd::Rz => {
            if (n as f64).abs() > x.abs() {
                if n > 0.0 {
                    down(n)
                } else {
                    up(n)
                }
            } else {
                n
            }
        }
        Rnd::Rm => {
            if n as f64 > x {
                down(n)
            } else {
                n
            }
        }
        Rnd::Rp => {
            if (n as f64) < x {
                up(n)
            } else {
                n
            }
        }
        _ => n,
    }
}

pub(crate) fn cvt(dty: PtxType, sty: PtxType, rnd: Rnd, sat: bool, a: u64) -> u64 {
    use PtxType::*;
    let sfloat = sty.is_float();
    let dfloat = dty.is_float();
    if !sfloat && !dfloat {
        let sb = sty.bits();
        let v: i128 = if sty.is_signed() {
            sext(a, sb) as i128
        } else {
            (a & mask_bits(sb)) as i128
        };
        let db = dty.bits();
        let v = if sat {
            let (lo, hi) = if dty.is_signed() {
                (-(1i128 << (db - 1)), (1i128 << (db - 1)) - 1)
            } else {
                (0, (1i128 << db) - 1)
            };
            v.clamp(lo, hi)
        } else {
            v
        };
        let r = (v as u128 as u64) & mask_bits(db);
        return if dty.is_signed() {
            sext(r, db) as u64 & mask_bits(db.max(32))
        } else {
            r
        };
    }
    if sfloat && !dfloat {
        let x = to_f64(sty, a);
        if x.is_nan() {
            return 0;
        }
        let x = round_f64(x, if rnd == Rnd::None { Rnd::Rzi } else { rnd });
        let db = dty.bits();
        let (lo, hi) = if dty.is_signed() {
            (-(2f64.powi(db as i32 - 1)), 2f64.powi(db as i32 - 1) - 1.0)
        } else {
            (0.0, 2f64.powi(db as i32) - 1.0)
        };
        let x = x.clamp(lo, hi);
        let v = if dty.is_signed() {
            x as i64 as u64
        } else {
            x as u64
        };
        return v & mask_bits(db);
    }
    // destination float
    let x: f64 = if sfloat {
        to_f64(sty, a)
    } else if sty.is_signed() {
        sext(a, sty.bits()) as f64
    } else {
        (a & mask_bits(sty.bits())) as f64
    };
    let x = if matches!(rnd, Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi) {
        round_f64(x, rnd)
    } else {
        x
    };
    let x = if sat {
        if x.is_nan() {
            0.0
        } else {
            x.clamp(0.0, 1.0)
        }
    } else {
        x
    };
    match dty {
        F64 => x.to_bits(),
        F32 => f64_to_f32(x, rnd).to_bits() as u64,
        TF32 => {
            let b = (x as f32).to_bits();
            // round to nearest, ties away (cvt.rna.tf32.f32)
            let r = b.wrapping_add(0x1000) & 0xffff_e000;
            if (x as f32).is_finite() {
                r as u64
            } else {
                b as u64
            }
        }
        F16 => half::f16::from_f64(x).to_bits() as u64,
        BF16 => half::bf16::from_f64(x).to_bits() as u64,
        _ => (x as f32).to_bits() as u64,
    }
}

pub(crate) fn atomic_op(op: AtomOp, ty: PtxType, old: u64, x: u64, y: u64) -> u64 {
    let bits = ty.bits();
    let mk = mask_bits(bits);
    match ty {
        PtxType::F32 => {
            let (o, v) = (f32v(old), f32v(x));
            let r = match op {
                AtomOp::Add => o + v,
                AtomOp::Min => fminmax(o, v, false),
                AtomOp::Max => fminmax(o, v, true),
                AtomOp::Exch => v,
                AtomOp::Cas => {
                    return if old as u32 == x as u32 { y & mk } else { old };
                }
                _ => return int_atomic(op, PtxType::B32, old, x, y),
            };
            r.to_bits() as u64
        }
        PtxType::F64 => {
            let (o, v) = (f64v(old), f64v(x));
            match op {
                AtomOp::Add => (o + v).to_bits(),
                AtomOp::Min => o.min(v).to_bits(),
                AtomOp::Max => o.max(v).to_bits(),
                _ => int_atomic(op, PtxType::B64, old, x, y),
            }
        }
        PtxType::F16 | PtxType::BF16 | PtxType::F16x2 | PtxType::BF16x2 => {
            misc::atomic_half(op, ty, old, x)
        }
        _ => int_atomic(op, ty, old, x, y),
    }
}

fn int_atomic(op: AtomOp, ty: PtxType, old: u64, x: u64, y: u64) -> u64 {
    let bits = ty.bits();
    let mk = mask_bits(bits);
    let (o, v) = (old & mk, x & mk);
    let r = match op {
        AtomOp::Add => o.wrapping_add(v),
        AtomOp::Min => {
            if ty.is_signed() {
                if sext(o, bits) <= sext(v, bits) {
                    o
                } else {
                    v
                }
            } else {
                o.min(v)
            }
        }
        AtomOp::Max => {
            if ty.is_signed() {
                if sext(o, bits) >= sext(v, bits) {
                    o
                } else {
                    v
                }
            } else {
                o.max(v)
            }
        }
        AtomOp::Inc => {
            if o >= v {
                0
            } else {
                o + 1
            }
        }
        AtomOp::Dec => {
            if o == 0 || o > v {
                v
            } else {
                o - 1
            }
        }
        AtomOp::Cas => {
            if o == v {
                y
            } else {
                o
            }
        }
        AtomOp::Exch => v,
        AtomOp::And => o & v,
        AtomOp::Or => o | v,
        AtomOp::Xor => o ^ v,
    };
    r & mk
}

/// Truncates an f32 to TF32 precision (10 explicit mantissa bits).
fn tf32(x: u32) -> f32 {
    f32::from_bits(x & 0xffff_e000)
}

fn exec_mma(l: &mut L<'_>, b: &Block, w: &mut Warp, wi: usize, kind: MmaKind, args: &[Operand]) {
    let regs = Operand::elements;
    let (d, a, bb, c) = (
        regs(&args[0]),
        regs(&args[1]),
        regs(&args[2]),
        regs(&args[3]),
    );
    let k = match kind {
        MmaKind::Tf32K8 | MmaKind::F16K8 | MmaKind::Bf16K8 => 8,
        _ => 16,
    };
    let mut am = vec![[0f32; 16]; 16]; // am[row][k]
    let mut bm = vec![[0f32; 8]; 16]; // bm[k][col]
    let mut cm = [[0f32; 8]; 16];
    let half = |bits: u64, hi: bool| -> f32 {
        let h = if hi {
            (bits >> 16) & 0xffff
        } else {
            bits & 0xffff
        };
        match kind {
            MmaKind::F16K16 | MmaKind::F16K8 => half::f16::from_bits(h as u16).to_f32(),
            _ => half::bf16::from_bits(h as u16).to_f32(),
        }
    };
    for lane in 0..32usize {
        let g = lane >> 2;
        let t = lane & 3;
        let rv = |ops: &[Operand], i: usize| -> u64 {
            ops.get(i).map(|o| l.val(b, w, wi, o, lane)).unwrap_or(0)
        };
        match kind {
            MmaKind::Tf32K8 => {
                am[g][t] = tf32(rv(&a, 0) as u32);
                am[g + 8][t] = tf32(rv(&a, 1) as u32);
                am[g][t + 4] = tf32(rv(&a, 2) as u32);
                am[g + 8][t + 4] = tf32(rv(&a, 3) as u32);
                bm[t][g] = tf32(rv(&bb, 0) as u32);
                bm[t + 4][g] = tf32(rv(&bb, 1) as u32);
            }
            MmaKind::F16K16 | MmaKind::Bf16K16 => {
                for (ri, (row, col)) in [
                    (g, 2 * t),
                    (g + 8, 2 * t),
                    (g, 2 * t + 8),
                    (g + 8, 2 * t + 8),
                ]
                .iter()
                .enumerate()
                {
                    let v = rv(&a, ri);
                    am[*row][*col] = half(v, false);
                    am[*row][*col + 1] = half(v, true);
                }
                for (ri, kk) in [2 * t, 2 * t + 8].iter().enumerate() {
                    let v = rv(&bb, ri);
                    bm[*kk][g] = half(v, false);
                    bm[*kk + 1][g] = half(v, true);
                }
            }
            MmaKind::F16K8 | MmaKind::Bf16K8 => {
                for (ri, (row, col)) in [(g, 2 * t), (g + 8, 2 * t)].iter().enumerate() {
                    let v = rv(&a, ri);
                    am[*row][*col] = half(v, false);
                    am[*row][*col + 1] = half(v, true);
                }
                let v = rv(&bb, 0);
                bm[2 * t][g] = half(v, false);
                bm[2 * t + 1][g] = half(v, true);
            }
        }
        if c.len() == 2 {
            // f16 accumulators: two f16x2 registers, rows g and g + 8.
            [cm[g][2 * t], cm[g][2 * t + 1]] = misc::f16x2_unpack(rv(&c, 0));
            [cm[g + 8][2 * t], cm[g + 8][2 * t + 1]] = misc::f16x2_unpack(rv(&c, 1));
        } else {
            cm[g][2 * t] = f32v(rv(&c, 0));
            cm[g][2 * t + 1] = f32v(rv(&c, 1));
            cm[g + 8][2 * t] = f32v(rv(&c, 2));
            cm[g + 8][2 * t + 1] = f32v(rv(&c, 3));
        }
    }
    let mut dm = [[0f64; 8]; 16];
    for (i, drow) in dm.iter_mut().enumerate() {
        for (j, dv) in drow.iter_mut().enumerate() {
            let mut acc = cm[i][j] as f64;
            for kk in 0..k {
                acc += am[i][kk] as f64 * bm[kk][j] as f64;
            }
            *dv = acc;
        }
    }
    let f16_d = d.len() == 2;
    for lane in 0..32usize {
        let g = lane >> 2;
        let t = lane & 3;
        let vals = [
            dm[g][2 * t],
            dm[g][2 * t + 1],
            dm[g + 8][2 * t],
            dm[g + 8][2 * t + 1],
        ];
        if f16_d {
            L::set(w, &d[0], lane, misc::f16x2_pack(vals[0], vals[1]));
            L::set(w, &d[1], lane, misc::f16x2_pack(vals[2], vals[3]));
            continue;
        }
        for (i, v) in vals.iter().enumerate() {
            if let Some(op) = d.get(i) {
                L::set(w, op, lane, (*v as f32).to_bits() as u64);
            }
        }
    }
}
