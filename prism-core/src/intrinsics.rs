//! The one table of intrinsics: each one's name, argument count, the perspective its calls run at, and what
//! it does to its memory arguments.
//!
//! Readers: the checker (the names a call may take, the arity and perspective rules of each family), the
//! sync pass (memory effects, so it orders an intrinsic's accesses like any other), the emitter (the arity
//! of the lowerings in `emit/intrinsics.rs`) and `prism-macros` (reserved names, through
//! [`crate::check::INTRINSICS`]). The Hopper intrinsics are checked and lowered by `check/hopper.rs` and
//! `emit/hopper.rs`, which still spell out their own arity and perspective rules; the table states them too
//! and `tests/intrinsics_table.rs` holds the checker to every row.

use crate::ast::Perspective;

/// How many arguments an intrinsic takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    /// This many.
    Exactly(usize),
    /// The destination, the tensor map and one coordinate per dimension of the map (TMA).
    TwoPlusRank,
    /// `wgmma`: five, or six with the optional `accumulate` flag.
    FiveOrSix,
}

/// The perspective a call needs (rule INTRINSIC): its code runs at this perspective, or at a broader one
/// that it divides (then each of its units calls it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Any perspective.
    Any,
    /// This one: a collective of its threads (a warp, a warpgroup, a block), or `thread[1]`.
    At(Perspective),
    /// `block[N]` for the kernel's `cluster = N`.
    Cluster,
}

/// What an intrinsic does to one of its memory arguments. A memory argument with no entry is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemEffect {
    /// It reads the argument's memory.
    Read,
    /// It writes it.
    Write,
    /// Concurrent with other atomics by design, ordered against plain reads and writes.
    Atomic,
    /// Completes asynchronously (`cp.async`, TMA): ordered by the copy's own wait, not by a barrier alone.
    AsyncWrite,
}

/// One intrinsic.
#[derive(Clone, Copy, Debug)]
pub struct Intrinsic {
    /// The name a call uses (reserved: no device function may take it).
    pub name: &'static str,
    /// How many arguments it takes.
    pub arity: Arity,
    /// The perspective its calls need.
    pub need: Need,
    /// Its memory arguments (by position) and what it does to each.
    pub memory: &'static [(usize, MemEffect)],
}

const T1: Need = Need::At(Perspective::thread(1));
const WARP: Need = Need::At(Perspective::thread(32));
const WARPGROUP: Need = Need::At(Perspective::thread(128));
const BLOCK: Need = Need::At(Perspective::block(1));
const ATOMIC: &[(usize, MemEffect)] = &[(0, MemEffect::Atomic)];
const READ0: &[(usize, MemEffect)] = &[(0, MemEffect::Read)];
const WRITE0: &[(usize, MemEffect)] = &[(0, MemEffect::Write)];
const COPY: &[(usize, MemEffect)] = &[(0, MemEffect::AsyncWrite), (2, MemEffect::Read)];

/// A row with a fixed arity.
const fn i(
    name: &'static str,
    arity: usize,
    need: Need,
    memory: &'static [(usize, MemEffect)],
) -> Intrinsic {
    Intrinsic {
        name,
        arity: Arity::Exactly(arity),
        need,
        memory,
    }
}

/// Every intrinsic.
pub const TABLE: &[Intrinsic] = &[
    i("id", 0, Need::Any, &[]),
    i("sync_threads", 0, BLOCK, &[]),
    i("sync_warp", 0, WARP, &[]),
    i("shfl_down", 2, WARP, &[]),
    i("shfl_up", 2, WARP, &[]),
    i("shfl_xor", 2, WARP, &[]),
    i("shfl_idx", 2, WARP, &[]),
    i("vote_all", 1, WARP, &[]),
    i("vote_any", 1, WARP, &[]),
    i("ballot", 1, WARP, &[]),
    i("atomic_add", 3, T1, ATOMIC),
    i("atomic_max", 3, T1, ATOMIC),
    i("atomic_min", 3, T1, ATOMIC),
    i("atomic_exch", 3, T1, ATOMIC),
    i("atomic_cas", 4, T1, ATOMIC),
    i("mma_m16n8k8_tf32", 3, WARP, &[]),
    i("ldmatrix_x4", 2, WARP, READ0),
    i("ldmatrix_x2", 2, WARP, READ0),
    i("ldmatrix_x1", 2, WARP, READ0),
    i("load4", 2, Need::Any, READ0),
    i("load2", 2, Need::Any, READ0),
    i("store4", 3, Need::Any, WRITE0),
    i("store2", 3, Need::Any, WRITE0),
    i("cp_async", 5, T1, COPY),
    i("cp_async_bulk", 5, T1, COPY),
    i("fence", 0, Need::Any, &[]),
    i("block_dim", 0, Need::Any, &[]),
    i("grid_dim", 0, Need::Any, &[]),
    Intrinsic {
        name: "tma_load",
        arity: Arity::TwoPlusRank,
        need: T1,
        memory: &[(0, MemEffect::AsyncWrite)],
    },
    Intrinsic {
        name: "tma_store",
        arity: Arity::TwoPlusRank,
        need: T1,
        memory: &[(1, MemEffect::Read)],
    },
    Intrinsic {
        name: "tma_load_multicast",
        arity: Arity::TwoPlusRank,
        need: T1,
        memory: &[(0, MemEffect::AsyncWrite)],
    },
    Intrinsic {
        name: "wgmma_bf16",
        arity: Arity::FiveOrSix,
        need: WARPGROUP,
        memory: &[],
    },
    Intrinsic {
        name: "wgmma_f16",
        arity: Arity::FiveOrSix,
        need: WARPGROUP,
        memory: &[],
    },
    i("set_max_regs", 1, WARPGROUP, &[]),
    i("stmatrix_bf16", 3, WARPGROUP, &[(0, MemEffect::Write)]),
    i("store_fragment_f32", 3, WARPGROUP, &[(0, MemEffect::Write)]),
    i("sync_cluster", 0, Need::Cluster, &[]),
];

/// The rows that `check/hopper.rs` and `emit/hopper.rs` check and lower (the other families are dispatched
/// through this table by `check/intrinsics.rs` and `emit/intrinsics.rs`).
pub const HOPPER: &[&str] = &[
    "tma_load",
    "tma_store",
    "tma_load_multicast",
    "wgmma_bf16",
    "wgmma_f16",
    "set_max_regs",
    "stmatrix_bf16",
    "store_fragment_f32",
    "sync_cluster",
];

/// The names of [`TABLE`], in its order.
pub const NAMES: [&str; TABLE.len()] = names();

const fn names() -> [&'static str; TABLE.len()] {
    let mut out = [""; TABLE.len()];
    let mut k = 0;
    while k < TABLE.len() {
        out[k] = TABLE[k].name;
        k += 1;
    }
    out
}

/// The intrinsic called `name`, if it is one.
pub fn lookup(name: &str) -> Option<&'static Intrinsic> {
    TABLE.iter().find(|i| i.name == name)
}
