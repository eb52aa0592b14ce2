//! The SIMT interpreter.
//!
//! Each lane has its own program counter. A warp step picks one group of lanes that share a PC (see
//! `pick_group`) and executes the instruction for that group; lanes at equal PCs are thus regrouped
//! automatically (reconvergence). Blocks run one after another; warps of a block are interleaved by the
//! scheduler.
//!
//! This file holds the interpreter's state (a launch `L`, its blocks, warps, barriers and mbarriers); the
//! parts in `exec/` add `impl L` blocks: `step.rs` (the step and its dispatch), `state.rs` and `memory.rs`
//! (operands, addresses, loads and stores), `race.rs`, and one file per instruction family.

use super::ptx::*;
use super::*;
use std::collections::HashSet;

/// Runs `$body` for each lane `$l` set in the mask `$exec`, lowest first (`break` leaves the loop).
macro_rules! lanes {
    ($exec:expr, $l:ident, $body:block) => {{
        let mut mm = $exec;
        while mm != 0 {
            let $l = mm.trailing_zeros() as usize;
            mm &= mm - 1;
            $body
        }
    }};
}

// Warpgroup MMA (sm_90a): a child module, since it works on the block's and the launch's private state.
#[path = "wgmma.rs"]
mod wgmma;
// TMA tensor copies and stmatrix (sm_90).
#[path = "tma.rs"]
mod tma;
// Texture and surface instructions on the emulator's objects.
mod texfetch;
// Tensor-map edits in device memory.
mod tmap_edit;
// `st.async`, `red.async`, `cp.reduce.async.bulk` and the shared::cluster bulk copy (sm_90).
#[path = "async_red.rs"]
mod async_red;
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
// Non-bulk cp.async copies in flight until their thread waits for them, checked with the race detector.
#[path = "cp_async.rs"]
mod cp_async;
// Reserved shared memory and the smaller instructions (alu forms that need no block state).
#[path = "exec_misc.rs"]
mod misc;
// Lane loops built for the baseline and for AVX2+FMA, chosen at run time (`multiversion!`).
#[macro_use]
#[path = "simd.rs"]
mod simd;
// Fast paths: whole-warp arithmetic and single-region memory accesses (issue 12).
#[path = "exec_fast.rs"]
mod exec_fast;
// The group choice's lane scans (run mask, lowest PC, starving lanes), built for the baseline and AVX2.
#[path = "warp_scan.rs"]
mod warp_scan;
// The fast paths' lane kernels (addresses, the shared-address check, the bank-conflict word span).
#[path = "fast_lanes.rs"]
mod fast_lanes;
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
// A warp's registers: those the launch's code names (issue 12).
#[path = "regs.rs"]
mod regs;
use regs::{RegWindow, Regs};
// A launch's state from its arguments, and its report.
#[path = "launch.rs"]
mod launch;
pub(crate) use launch::{run_launch, LaunchArgs};

// The interpreter's parts (`exec/`): children of this module, so they see the launch's and the blocks'
// private state.
#[path = "exec/memory.rs"]
mod memory;
#[path = "exec/state.rs"]
mod state;
#[path = "exec/step.rs"]
mod step;
use memory::*;
#[path = "exec/access.rs"]
mod access;
#[path = "exec/barrier.rs"]
mod barrier;
#[path = "exec/collective.rs"]
mod collective;
#[path = "exec/control.rs"]
mod control;
#[path = "exec/directed.rs"]
mod directed;
#[path = "exec/heap.rs"]
mod heap;
pub(crate) use heap::{is_heap_function, DeviceHeap, DEVICE_HEAP_BYTES};
#[path = "exec/mbarrier.rs"]
mod mbarrier;
#[path = "exec/race.rs"]
mod race;
#[path = "exec/race_warp.rs"]
mod race_warp;
#[path = "exec/regops.rs"]
mod regops;
#[path = "exec/scalar.rs"]
mod scalar;
use scalar::*;
#[path = "exec/convert.rs"]
mod convert;
use convert::*;
#[path = "exec/mma.rs"]
mod mma;
use mma::*;

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
/// Where function addresses live (`mov.u64 %rd, f`, `{f}` in an initializer): function `i` of the
/// module is `FUNC_WINDOW + 16·i`, no memory, only an indirect `call` target.
pub const FUNC_WINDOW: u64 = 0x0000_7300_0000_0000;

/// The address of the module's function `f`.
pub(crate) fn func_address(f: u32) -> u64 {
    FUNC_WINDOW + 16 * f as u64
}

/// The function whose address `a` is, if it is one.
pub(crate) fn func_of_address(a: u64) -> Option<u32> {
    let d = a.checked_sub(FUNC_WINDOW)?;
    (d % 16 == 0 && d / 16 < u32::MAX as u64).then_some((d / 16) as u32)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
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
    /// Where the activation's local frame starts in the lane's local memory: the caller's, or for a
    /// recursive call a fresh layer above every active one (`Frame::layer_base`).
    base: u64,
    /// The callee's registers as the lane's outer activation of it left them (a recursive call only):
    /// restored at its return. Registers are per function, so two activations would share them.
    saved: Vec<u64>,
}

/// The lane's current local frame base (0 outside calls and in non-recursive ones).
#[inline]
fn lane_base(w: &Warp, l: usize) -> u64 {
    w.stack.get(l).and_then(|s| s.last()).map_or(0, |f| f.base)
}

/// Most local-memory layers (the static frame, then one per recursive activation) a thread may use: a
/// deeper recursion is a stack overflow fault, as the GPU's stack limit would be.
const MAX_FRAME_LAYERS: usize = 1024;
/// Most bytes of local memory a block's layers may take together.
const MAX_BLOCK_LOCAL_BYTES: usize = 256 << 20;

struct Warp {
    regs: Regs,
    pc: [u32; 32],
    /// Each lane's state; written only through `set_st`, which keeps `run` in step.
    st: [Ls; 32],
    /// The lanes whose state is `Run` (what every group choice and scheduler test asks: kept as a mask
    /// rather than recomputed from `st`, whose byte stores a vector load would wait on).
    run: u32,
    /// The warp step at which each lane last ran, for the lanes that last ran in a partial group; at
    /// least `all_run` for every lane (`pick_group` reads the larger).
    last_run: [u64; 32],
    /// The last step in which all 32 lanes ran (a full group writes this, not 32 lane entries).
    all_run: u64,
    /// The last partial group and the step it ran in, not yet written to `last_run`: a group that runs
    /// several steps in a row writes its lanes' entries once, when another partial group runs or when
    /// `pick_group` reads them (`Warp::settle_last_run`).
    part: (u32, u64),
    stack: Vec<Vec<Frame>>,
    steps: u64,
    /// A tight spin on an mbarrier wait: the warp step its current run of failed waits began at, and the
    /// step of the last one (a run continues while failed waits come at most `SPIN_GAP` steps apart).
    spin: (u64, u64),
    exist: u32,
    coll_member: u32,
    /// The group `pick_group` would choose next, when the last step was a fast-path instruction of a
    /// converged warp (all its runnable lanes moved on together and no lane changed state). Consumed by
    /// every step; only valid within one quantum (`run_slice` starts each quantum without it).
    hint: Option<(u32, u32)>,
}

impl Warp {
    /// A warp without lanes or registers: what a block's slot holds while its warp runs a quantum, and
    /// the fields a new warp starts from.
    fn empty() -> Warp {
        Warp {
            regs: Regs::default(),
            pc: [0; 32],
            st: [Ls::Absent; 32],
            run: 0,
            last_run: [0; 32],
            all_run: 0,
            part: (0, 0),
            stack: Vec::new(),
            steps: 0,
            spin: (0, 0),
            exist: 0,
            coll_member: 0,
            hint: None,
        }
    }

    /// Every lane that exists has exited.
    fn all_exited(&self) -> bool {
        (0..32).all(|l| self.exist & (1 << l) == 0 || self.st[l] == Ls::Exit)
    }

    /// Writes the pending partial group's step into `last_run`.
    #[inline]
    fn settle_last_run(&mut self) {
        let (mask, step) = self.part;
        if mask != 0 {
            regs::select_lanes(&mut self.last_run, &[step; 32], mask);
            self.part.0 = 0;
        }
    }

    fn run_mask(&self) -> u32 {
        debug_assert_eq!(
            self.run,
            (0..32)
                .filter(|&l| self.st[l] == Ls::Run)
                .fold(0, |m, l| m | 1 << l),
            "the run mask follows the lane states"
        );
        self.run
    }

    /// Sets lane `l`'s state (and the run mask with it).
    #[inline]
    fn set_st(&mut self, l: usize, s: Ls) {
        self.st[l] = s;
        let bit = 1u32 << l;
        self.run = if s == Ls::Run {
            self.run | bit
        } else {
            self.run & !bit
        };
    }

    /// Sets the state of the lanes of `lanes` (and the run mask with them).
    #[inline]
    fn set_st_lanes(&mut self, lanes: u32, s: Ls) {
        for (l, st) in self.st.iter_mut().enumerate() {
            if lanes & regs::LANE_BIT[l] != 0 {
                *st = s;
            }
        }
        self.run = if s == Ls::Run {
            self.run | lanes
        } else {
            self.run & !lanes
        };
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

/// Words of a thread bit set: a block has at most 1024 threads.
const THREAD_WORDS: usize = 16;

/// A synchronization instance (a barrier phase, a release, ...): the threads ordered after it. The bit
/// set is inline (not a vector), since the race detector's happens-before test reads it for nearly every
/// access it checks.
struct Inst {
    waiters: [u64; THREAD_WORDS],
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

/// An acquire by thread `t` (global id, at its epoch `e_t`) of a release in block `block`: an access of
/// that block's thread `u` at epoch `ep` is ordered before `t`'s later accesses (and those of threads
/// ordered after them in this block) iff `ep < snap[u]` — `u` had passed a synchronization instance after
/// the access when the release happened (the releasing thread's own accesses up to the release).
/// Each thread's epoch in a block at one of its releases (shared by every acquisition of it).
type Snapshot = std::sync::Arc<Vec<u32>>;

/// A block's release on a global location: its threads' epochs then (`snap`), and `stamp`, the launch's
/// count of such releases, which orders two of one block (the later one covers everything the earlier did).
#[derive(Clone)]
struct Released {
    block: u32,
    snap: Snapshot,
    stamp: u64,
}

/// A release, for acquires in other blocks: `via` is what the block had acquired from other blocks before
/// it, passed on, so that a hand-off through a third block (a grid barrier's master block, a chain of
/// flags) orders too.
struct XRelease {
    rel: Released,
    via: std::sync::Arc<[Released]>,
}

/// The releases on one global location ([`L::xrel`]): the latest per block, and the stamp of the last.
#[derive(Default)]
struct XLocation {
    latest: u64,
    rels: Vec<XRelease>,
}

#[derive(Clone)]
struct Foreign {
    block: u32,
    snap: Snapshot,
    /// [`Released::stamp`] of the release acquired.
    stamp: u64,
    t: u32,
    e_t: u32,
    /// The global location the acquire was on.
    from: u64,
}

/// A block's acquisitions from other blocks, by (releasing block, acquiring thread): one entry each.
type ForeignMap = std::collections::BTreeMap<(u32, u32), Foreign>;

impl Foreign {
    /// Records that thread `t` (global id, at its epoch `e_t`) acquired release `r` through location
    /// `from`: one entry per (releasing block, acquiring thread), a later release of that block covering
    /// more (the same one acquired earlier orders more).
    fn acquire(fo: &mut ForeignMap, r: &Released, t: u32, e_t: u32, from: u64) {
        let f = Foreign {
            block: r.block,
            snap: r.snap.clone(),
            stamp: r.stamp,
            t,
            e_t,
            from,
        };
        match fo.entry((f.block, f.t)) {
            std::collections::btree_map::Entry::Occupied(mut o) => {
                if f.stamp > o.get().stamp {
                    o.insert(f);
                }
            }
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(f);
            }
        }
    }

    /// The acquisitions of releases by `block` in `fo`.
    #[inline]
    fn of_block(fo: &ForeignMap, block: u32) -> impl Iterator<Item = &Foreign> {
        fo.range((block, 0)..=(block, u32::MAX)).map(|(_, f)| f)
    }

    /// Whether thread `u`'s (global id, blocks of `nthreads`) access at epoch `ep_u` was before the release.
    #[inline]
    fn covers(&self, nthreads: u32, u: u32, ep_u: u32) -> bool {
        nthreads != 0
            && self.block == u / nthreads
            && self
                .snap
                .get((u % nthreads) as usize)
                .is_some_and(|&s| ep_u < s)
    }
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
    /// Threads whose `exit_gen` is `gen` (none: a completing block-wide barrier skips the scan for them).
    exits_this_gen: u32,
    mbar: HashMap<u32, Mbar>,
    /// Last release instance of each location used by `atom.cas`/`atom.exch` (lock words, flags).
    rel: HashMap<(bool, u64), u32>,
    /// Release instances of each location used by `.release`/`.acq_rel` accesses: (thread, instance), the
    /// latest per thread (`misc::release`).
    relacq: HashMap<(bool, u64), Vec<(u32, u32)>>,
    /// Instances each thread recently waited on through an acquire (`misc::collective_orders`).
    acquired: HashMap<u32, Vec<u32>>,
    /// For an mbarrier phase's instance: the barriers its arriving threads had just waited on (one hop of
    /// transitivity: a warp's writes ordered by `bar.warp.sync` before one lane's arrive).
    inst_hops: HashMap<u32, Vec<u32>>,
    /// The race detector's instances of this block's cluster-barrier phases: (phase, instance), the last two.
    cinst: Vec<(u32, u32)>,
    /// Fence-based synchronization (`exec_fence`): threads that executed a fence, whose later relaxed or
    /// volatile stores release; and each thread's last relaxed or volatile load, which a later fence
    /// turns into an acquire.
    fenced: HashSet<u32>,
    strong_loads: HashMap<u32, Loc>,
    /// What this block's threads acquired from other blocks' releases (`race.rs`, "Across blocks").
    /// (Shared with the race checks of each access, which take it without copying.)
    foreign: std::sync::Arc<ForeignMap>,
    /// Per (thread, global address): the [`XLocation::latest`] release its last acquire there merged.
    xseen: HashMap<(u32, u64), u64>,
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
    /// Non-bulk `cp.async` copies in flight (race detection).
    cpa: cp_async::CpAsyncState,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Acc {
    Read,
    Write,
    Atomic,
}

impl Acc {
    /// The access as race reports name it.
    fn name(self) -> &'static str {
        match self {
            Acc::Read => "read",
            Acc::Write => "write",
            Acc::Atomic => "atomic",
        }
    }
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
    /// Releases on global locations, for acquires in other blocks: address → the latest release there
    /// by each block.
    xrel: HashMap<u64, XLocation>,
    /// Releases on global locations so far ([`Released::stamp`]).
    xstamp: u64,
    allocs: &'a mut Vec<Alloc>,
    /// The device heap (`malloc` / `free`), lent by the emulator for the launch.
    heap: Option<DeviceHeap>,
    /// A cooperative launch's grid workspace (what `%envreg1/2` hold), 0 for an ordinary launch.
    grid_ws: u64,
    /// Texture and surface objects, by handle − 1 (`exec/texfetch.rs`).
    objects: Vec<Option<TexObject>>,
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
    /// The step past which the launch ends: `max_steps`, or after a `DataRace` the end of its tail
    /// (`L::note_race`), whichever is first.
    step_limit: u64,
    /// After the first `DataRace`: how long the launch may run on without a new fault (`L::note_race`).
    race_tail: Option<RaceTail>,
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
    /// Bit `r`: block rank `r` of the running block's cluster has exited (its shared memory is gone).
    remote_exited: u64,
    /// Cluster barriers (`barrier.cluster`), by cluster: (arrived threads, completed phases).
    cbar: HashMap<u32, (u32, u32)>,
    /// The race detector's view of cluster barriers, by (cluster, phase): each block's threads' epochs at
    /// its latest arrival (a release of everything they did before arriving, for the other blocks' waits).
    csnap: HashMap<(u32, u32), Vec<Released>>,
    /// Threads of each cluster that exited (a cluster barrier waits for the others only).
    cexited: HashMap<u32, u32>,
    /// Set while a TMA load writes shared memory (an async-proxy write, not a generic one).
    async_write: bool,
    /// The (address, values) each lane of the current store issue wrote (`misc`, race detection only).
    same_st: Vec<(u64, [u64; 4])>,
    /// Lane arrays of the fast paths, kept between instructions (taken while one runs).
    fast: Option<Box<exec_fast::Scratch>>,
    /// Set when this launch state runs blocks in isolation on a worker thread (`parallel.rs`).
    spec: Option<parallel::Worker<'a>>,
    /// The registers each warp holds (`regs.rs`).
    regwin: RegWindow,
    /// The module has a `wgmma` instruction (else no register is ever in flight: the step skips the
    /// in-flight check).
    has_wgmma: bool,
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
        let mut msg = msg;
        if kind == FaultKind::DataRace {
            self.note_race(line);
        } else {
            self.abort = true;
            // A stall after a race may be its doing (phases or counts the race left inconsistent): said
            // so. (After a race the step limit adds no `Livelock`: `L::end_after_race`.)
            if let (Some(t), FaultKind::Deadlock) = (&self.race_tail, kind) {
                msg.push_str(&format!(
                    " (reported after the DataRace at PTX line {}: it may follow from the race)",
                    t.line
                ));
            }
        }
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
    }

    /// A `DataRace` was recorded (each is a new fault: races are reported once per instruction). The
    /// launch goes on to find further faults, but not for ever: it ends once `tail` warp-instructions
    /// pass without a new one, where `tail` is what it took to reach the first race (the launch's own
    /// scale) but at least `min(max_steps / 16, 2^22)`. A program whose threads spin after a race (a
    /// pipeline whose mbarrier phases or flags the race left inconsistent) is thus reported in about the
    /// time the race took, not at `max_steps` minutes later, and with no `Livelock` of its own. (A
    /// parallel run gives any launch with a fault to the one-thread run, so this holds there too.)
    fn note_race(&mut self, line: usize) {
        let floor = (self.cfg.max_steps / 16).min(RACE_TAIL_MIN);
        let steps = self.steps;
        let t = self.race_tail.get_or_insert(RaceTail {
            tail: steps.max(floor).max(1),
            line,
            last: steps,
        });
        t.last = steps;
        self.step_limit = steps.saturating_add(t.tail).min(self.cfg.max_steps);
    }
}

/// What bounds a launch after its first `DataRace` (`L::note_race`).
struct RaceTail {
    /// Warp-instructions the launch may run on without a new fault.
    tail: u64,
    /// The first race's PTX line (later faults name it).
    line: usize,
    /// The launch's step at its latest race.
    last: u64,
}

/// The least tail of a race (`L::note_race`) at the default `max_steps`: 2^22 warp-instructions, seconds
/// of a spinning pipeline.
const RACE_TAIL_MIN: u64 = 1 << 22;
