//! Prefix sums (scans) at thread, warp and block level, and the single-pass device-wide scan with
//! decoupled look-back (Merrill & Garland 2016; paper 000 §6.1.1), for `u32`, `i32` and `f32`.
//!
//! Each function is written once, generic over its value type `T: Num32` (u32, i32, f32; docs/SYNTAX.md
//! "Type generics"): `warp_scan_inclusive::<f32>(v)`. The suffixed names from before Prism had type generics
//! stay (`warp_scan_inclusive_f32`, `scan_kernel_u32::<4>`, `scan_u32`): aliases of the generic items.
//!
//! | level | function | perspective signature | result |
//! |---|---|---|---|
//! | thread | `thread_scan_{inclusive,exclusive}::<T, N>(&mut [T; N], seed)` | `requires(thread[1])` | items in place; `thread[1]` total |
//! | warp | `warp_scan_{inclusive,exclusive}::<T>(v)` (`shfl_up`, Kogge–Stone) | `requires(thread[32])` | `thread[1]` |
//! | block | `block_scan_{inclusive,exclusive}::<T>(v, &mut [T; 1])` | `requires(block[1], thread[32])`, `smem = 144` | `thread[1]`, block total in the array |
//! | block | `block_scan_items_{inclusive,exclusive}::<T, N>(&mut [T; N])` | `requires(block[1], thread[32])`, `smem = 144` | items in place; `thread[1]` block total |
//! | look-back | `decoupled_lookback::<T>(status, tile, aggregate)` | `requires(thread[32])` | `thread[1]` exclusive tile prefix |
//! | device | [`scan`], [`scan_with`] (host API; also `scan_u32` etc.) | kernel `requires(grid[1], block[1], thread[32])`, 128 threads | `output` |
//!
//! ```
//! use prism_runtime::Device;
//! use prism_kernels::scan::{scan_u32, ScanKind};
//! let dev = Device::auto()?;
//! let data: Vec<u32> = (1..=3000).collect();
//! let input = dev.htod(&data)?;
//! let mut output = dev.alloc_zeros::<u32>(data.len())?;
//! scan_u32(&dev, &input, &mut output, ScanKind::Inclusive)?;
//! let out = dev.dtoh(&output)?;
//! assert_eq!(out[2999], 3000 * 3001 / 2);
//! # Ok::<(), prism_runtime::RuntimeError>(())
//! ```

use crate::reduce::{checked_len, Value};
use prism_macros::{prism_device, prism_kernel};
use prism_runtime::{Device, DeviceBuffer, LaunchDims, LaunchReport, RuntimeError};

/// Threads per block of the scan kernels.
pub const SCAN_THREADS: u32 = 128;

/// Status flag of a tile whose aggregate and prefix are not yet known (the look-back waits on it).
pub const STATUS_INVALID: u32 = 0;
/// Status flag: the word's value is the tile's own aggregate.
pub const STATUS_AGGREGATE: u32 = 1;
/// Status flag: the word's value is the inclusive prefix of every tile up to and including this one.
pub const STATUS_PREFIX: u32 = 2;

/// Inclusive (`out[i] = in[0] + .. + in[i]`) or exclusive (`out[i] = in[0] + .. + in[i - 1]`, `out[0] = 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanKind {
    /// `out[i]` includes `in[i]`.
    Inclusive,
    /// `out[i]` excludes `in[i]`.
    Exclusive,
}

// ---- Look-back primitives: inline PTX, each wrapped in a device function with its perspective signature. ----
//
// A tile's status is one 64-bit word: flag (STATUS_*) in the high half, the value's bits in the low half.
// Flag and value are read and written together by single-copy-atomic 64-bit operations, so no fence is needed
// between them. Both sides use atomics (`atom.exch` to publish, `atom.or 0` to read): relaxed, gpu-scope
// strong operations, which the emulator's race detector also recognises as non-racing (a plain `ld` would be
// reported as a race against another block's `atom`).
//
// The look-back primitives take the status words by raw device address (`u64`), as the paper's unsafe spin
// does: one array written by every block cannot be a typed `*mut` parameter of these thread-level functions
// (non-const pointers must match perspectives exactly, and a parameter cannot be broader than its function).
// The kernels themselves take the array as a typed `*mut u64` buffer, and [`global_address_u64`] turns it into
// the address at grid[1]: so the generated launchers take `&mut DeviceBuffer<u64>` and stay safe, and no safe
// launcher accepts an arbitrary address that inline PTX would write through.

/// `grid[1]`: the global address of `p[0]`, for device functions whose inline PTX takes raw addresses (the
/// look-back's [`status_wait`] / [`status_publish`]). Call it from a kernel on one of its `*mut u64`
/// parameters, so the kernel's launcher takes a typed buffer rather than an address.
#[prism_device(requires(grid[1]), returns = grid[1])]
pub fn global_address_u64(p: *mut u64) -> u64 {
    let mut a: u64 = 0;
    unsafe {
        asm!("mov.b64 {a}, {p};", a = out(u64) a, p = in(u64) &p[0]);
    }
    a
}

/// `thread[1]`: spins until the status word at device address `addr` is valid (flag ≠ `STATUS_INVALID`) and
/// returns it. Each lane spins on its own word (independent thread scheduling, sm_70+).
#[prism_device(requires(thread[1]), returns = thread[1])]
pub fn status_wait(addr: u64) -> u64 {
    let mut w: u64 = 0;
    unsafe {
        asm!(
            "{{\n.reg .pred %lb_p;\nLB_SPIN:\natom.relaxed.gpu.global.or.b64 {w}, [{a}], 0;\nsetp.lo.u64 %lb_p, {w}, 4294967296;\n@%lb_p bra LB_SPIN;\n}}",
            w = out(u64) w,
            a = in(u64) addr
        );
    }
    w
}

/// `thread[1]`: publishes the status word `w` at device address `addr` (relaxed gpu-scope atomic exchange).
#[prism_device(requires(thread[1]))]
pub fn status_publish(addr: u64, w: u64) {
    unsafe {
        asm!(
            "{{\n.reg .b64 %lb_o;\natom.relaxed.gpu.global.exch.b64 %lb_o, [{a}], {w};\n}}",
            a = in(u64) addr,
            w = in(u64) w
        );
    }
}

/// Zeroes the status words of `tiles` tiles and the tile counter before a scan (one thread per tile).
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn scan_init(status: *mut u64, counter: *mut u32, tiles: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(
        status,
        thread[1],
        |x| i + x,
        |s| {
            partition(
                counter,
                thread[1],
                |x| i + x,
                |c| {
                    group(thread[1], || {
                        if i < tiles {
                            s[0] = 0u64;
                        }
                        if i == 0 {
                            c[0] = 0u32;
                        }
                    });
                },
            );
        },
    );
}

/// Device memory a scan needs besides its input and output: one 64-bit status word per tile and the
/// dynamic tile counter. Reuse one across scans (benchmarks) to avoid allocations; each scan re-initialises
/// it with [`scan_init`].
pub struct ScanScratch {
    status: DeviceBuffer<u64>,
    counter: DeviceBuffer<u32>,
}

impl ScanScratch {
    /// Scratch for scans of up to `max_len` elements (any items-per-thread choice).
    pub fn new(dev: &Device, max_len: usize) -> Result<ScanScratch, RuntimeError> {
        let tiles = max_len.div_ceil((SCAN_THREADS * 4) as usize).max(1);
        Ok(ScanScratch {
            status: dev.alloc_zeros::<u64>(tiles)?,
            counter: dev.alloc_zeros::<u32>(1)?,
        })
    }

    /// The status words (flag in the high half, value bits in the low half), for inspection in tests.
    pub fn status(&self) -> &DeviceBuffer<u64> {
        &self.status
    }
}

/// Items per thread the convenience functions pick: 4 below 2^16 elements, else 16.
pub fn default_items(len: usize) -> u32 {
    if len < 1 << 16 {
        4
    } else {
        16
    }
}

fn scan_prepare(
    dev: &Device,
    len: usize,
    out_len: usize,
    items: u32,
    scratch: &mut ScanScratch,
) -> Result<(u32, u32), RuntimeError> {
    let n = checked_len(len)?;
    if out_len < len {
        return Err(RuntimeError::BadArgs(format!(
            "scan: output has {out_len} elements, input {len}"
        )));
    }
    if !matches!(items, 4 | 8 | 16) {
        return Err(RuntimeError::BadArgs(format!(
            "scan: {items} items per thread (instances: 4, 8, 16)"
        )));
    }
    let tiles = n.div_ceil(SCAN_THREADS * items).max(1);
    if scratch.status.len() < tiles as usize {
        return Err(RuntimeError::BadArgs(format!(
            "scan: scratch holds {} tiles, {tiles} needed",
            scratch.status.len()
        )));
    }
    scan_init::launch(
        dev,
        LaunchDims::new(tiles.div_ceil(256), 256),
        &mut scratch.status,
        &mut scratch.counter,
        tiles,
    )?;
    Ok((n, tiles))
}

/// Thread level (`thread[1]`): inclusive scan of this thread's `N` items in place, starting from `seed`
/// (`items[i] = seed + items[0] + .. + items[i]`). Returns `seed` plus the sum of the items.
#[prism_device(requires(thread[1]), returns = thread[1], aliases = [u32, i32, f32])]
pub fn thread_scan_inclusive<T: Num32, const N: u32>(items: &mut [T; N], seed: T) -> T {
    let mut s: T = seed;
    for i in 0..N {
        s = s + items[i];
        items[i] = s;
    }
    s
}

/// Thread level (`thread[1]`): exclusive scan in place (`items[i] = seed + items[0] + .. + items[i - 1]`).
/// Returns `seed` plus the sum of the items.
#[prism_device(requires(thread[1]), returns = thread[1], aliases = [u32, i32, f32])]
pub fn thread_scan_exclusive<T: Num32, const N: u32>(items: &mut [T; N], seed: T) -> T {
    let mut s: T = seed;
    for i in 0..N {
        let x: T = items[i];
        items[i] = s;
        s = s + x;
    }
    s
}

/// Warp level (`thread[32]`): inclusive scan of one value per lane (Kogge–Stone, five `shfl_up` steps);
/// lane `l` receives `v_0 + .. + v_l`.
#[prism_device(requires(thread[32]), returns = thread[1], aliases = [u32, i32, f32])]
pub fn warp_scan_inclusive<T: Num32>(#[at(thread[1])] v: T) -> T {
    #[at(thread[1])]
    let lane: u32 = id();
    #[at(thread[1])]
    let mut x: T = v;
    for k in 0..5 {
        #[at(thread[1])]
        let y: T = shfl_up(x, 1u32 << k);
        group(thread[1], || {
            if lane >= 1u32 << k {
                x = x + y;
            }
        });
    }
    x
}

/// Warp level (`thread[32]`): exclusive scan of one value per lane; lane 0 receives zero, lane `l > 0`
/// receives `v_0 + .. + v_{l-1}` (the inclusive scan shifted up one lane, no subtraction).
#[prism_device(requires(thread[32]), returns = thread[1], aliases = [u32, i32, f32])]
pub fn warp_scan_exclusive<T: Num32>(#[at(thread[1])] v: T) -> T {
    #[at(thread[1])]
    let lane: u32 = id();
    #[at(thread[1])]
    let inc: T = warp_scan_inclusive::<T>(v);
    #[at(thread[1])]
    let up: T = shfl_up(inc, 1u32);
    #[at(thread[1])]
    let mut x: T = 0 as T;
    group(thread[1], || {
        if lane > 0 {
            x = up;
        }
    });
    x
}

/// Block level (`block[1]`, warps of `thread[32]`): exclusive scan of one value per thread, in thread
/// order; the block's total goes to `total[0]` of every thread. Each warp scans its values
/// ([`warp_scan_inclusive`]) and lane 0 writes the warp total to a shared array (a `thread[32]`
/// partition, a `thread[1]` claim taken by one split arm); after the partition's barrier every warp scans
/// the (at most 32) warp totals itself, which saves a second barrier. Any block of a multiple of 32
/// threads up to 1024.
#[prism_device(requires(block[1], thread[32]), smem = 144, returns = thread[1], aliases = [u32, i32, f32])]
pub fn block_scan_exclusive<T: Num32>(#[at(thread[1])] v: T, total: &mut [T; 1]) -> T {
    let partials: Shared<[T; 33]>;
    let nwarps: u32 = block_warps();
    #[at(thread[32])]
    let wid: u32 = id();
    #[at(thread[1])]
    let mut in_warp: T = 0 as T;
    partition(
        partials,
        thread[32],
        |x| wid + x,
        |pw| {
            group(thread[32], || {
                #[at(thread[1])]
                let lane: u32 = id();
                #[at(thread[1])]
                let inc: T = warp_scan_inclusive::<T>(v);
                #[at(thread[1])]
                let up: T = shfl_up(inc, 1u32);
                #[at(thread[1])]
                let wt: T = shfl_idx(inc, 31u32);
                group(thread[1], || {
                    if lane > 0 {
                        in_warp = up;
                    }
                });
                claim(pw, thread[1], |p1| match split(thread) {
                    1 => {
                        p1[0] = wt;
                    }
                });
            });
        },
    );
    #[at(thread[1])]
    let mut prefix: T = 0 as T;
    group(thread[32], || {
        #[at(thread[1])]
        let lane: u32 = id();
        #[at(thread[1])]
        let mut x: T = 0 as T;
        group(thread[1], || {
            if lane < nwarps {
                x = partials[lane];
            }
        });
        #[at(thread[1])]
        let inc: T = warp_scan_inclusive::<T>(x);
        #[at(thread[1])]
        let up: T = shfl_up(inc, 1u32);
        #[at(thread[1])]
        let before: T = shfl_idx(up, wid);
        #[at(thread[1])]
        let all: T = shfl_idx(inc, 31u32);
        group(thread[1], || {
            if wid > 0 {
                prefix = before + in_warp;
            } else {
                prefix = in_warp;
            }
            total[0] = all;
        });
    });
    prefix
}

/// Block level: inclusive scan of one value per thread ([`block_scan_exclusive`] plus the thread's own
/// value); the block's total goes to `total[0]`.
#[prism_device(requires(block[1], thread[32]), smem = 144, returns = thread[1], aliases = [u32, i32, f32])]
pub fn block_scan_inclusive<T: Num32>(#[at(thread[1])] v: T, total: &mut [T; 1]) -> T {
    #[at(thread[1])]
    let e: T = block_scan_exclusive::<T>(v, total);
    #[at(thread[1])]
    let r: T = e + v;
    r
}

/// Block level: inclusive scan of `N` items per thread in a blocked arrangement (thread `t` holds items
/// `t * N .. (t + 1) * N` of the block's tile): [`thread_reduce`] → [`block_scan_exclusive`] →
/// [`thread_scan_inclusive`] seeded with the thread's prefix. Returns the block's total.
#[prism_device(requires(block[1], thread[32]), smem = 144, returns = thread[1], aliases = [u32, i32, f32])]
pub fn block_scan_items_inclusive<T: Num32, const N: u32>(items: &mut [T; N]) -> T {
    #[at(thread[1])]
    let mine: T = thread_reduce::<T, N>(items);
    #[at(thread[1])]
    let mut total = [0 as T; 1];
    #[at(thread[1])]
    let pre: T = block_scan_exclusive::<T>(mine, &mut total);
    group(thread[1], || {
        thread_scan_inclusive::<T, N>(items, pre);
    });
    total[0]
}

/// Block level: exclusive scan of `N` items per thread in a blocked arrangement (the block's first item
/// becomes zero). Returns the block's total.
#[prism_device(requires(block[1], thread[32]), smem = 144, returns = thread[1], aliases = [u32, i32, f32])]
pub fn block_scan_items_exclusive<T: Num32, const N: u32>(items: &mut [T; N]) -> T {
    #[at(thread[1])]
    let mine: T = thread_reduce::<T, N>(items);
    #[at(thread[1])]
    let mut total = [0 as T; 1];
    #[at(thread[1])]
    let pre: T = block_scan_exclusive::<T>(mine, &mut total);
    group(thread[1], || {
        thread_scan_exclusive::<T, N>(items, pre);
    });
    total[0]
}

/// `thread[1]`: packs a status flag and a `T` value into one 64-bit status word (flag high, value bits low).
#[prism_device(requires(thread[1]), returns = thread[1], aliases = [u32, i32, f32])]
pub fn status_pack<T: Num32>(flag: u32, v: T) -> u64 {
    let mut w: u64 = 0;
    unsafe {
        asm!("mov.b64 {w}, {{{v}, {f}}};", w = out(u64) w, v = in(T) v, f = in(u32) flag);
    }
    w
}

/// `thread[1]`: the `T` value in the low half of a status word (its bits, reinterpreted).
#[prism_device(requires(thread[1]), returns = thread[1], aliases = [u32, i32, f32])]
pub fn status_value<T: Num32>(w: u64) -> T {
    let mut v: T = 0 as T;
    unsafe {
        asm!("{{\n.reg .b32 %lb_hi;\nmov.b64 {{{v}, %lb_hi}}, {w};\n}}", v = out(T) v, w = in(u64) w);
    }
    v
}

/// Warp level (`thread[32]`): the decoupled look-back of tile `tile` (Merrill & Garland 2016). Lane 0
/// publishes the tile's `aggregate` (flag `STATUS_AGGREGATE`; tile 0 publishes its inclusive prefix at
/// once), then the warp inspects the 32 preceding tiles' status words, one per lane, each lane spinning in
/// [`status_wait`] until its word is valid. A `ballot` of the lanes that saw `STATUS_PREFIX` says where to
/// stop: lanes up to the nearest such tile contribute their values ([`warp_reduce`]); if none did,
/// the window moves 32 tiles further back. Finally lane 0 publishes `prefix + aggregate` with
/// `STATUS_PREFIX`. Returns the exclusive prefix of the tile (the sum of every earlier tile) in every lane.
/// `status` is the device address of the status words (8 bytes per tile).
#[prism_device(requires(thread[32]), returns = thread[1], aliases = [u32, i32, f32])]
pub fn decoupled_lookback<T: Num32>(status: u64, tile: u32, #[at(thread[1])] aggregate: T) -> T {
    #[at(thread[1])]
    let lane: u32 = id();
    #[at(thread[1])]
    let mut prefix: T = 0 as T;
    let own: u64 = status + (tile as u64) * 8u64;
    if tile == 0 {
        group(thread[1], || {
            if lane == 0 {
                status_publish(own, status_pack::<T>(2u32, aggregate));
            }
        });
    } else {
        group(thread[1], || {
            if lane == 0 {
                status_publish(own, status_pack::<T>(1u32, aggregate));
            }
        });
        let mut end: u32 = tile;
        let mut searching: bool = true;
        while searching {
            #[at(thread[1])]
            let mut flag: u32 = 2;
            #[at(thread[1])]
            let mut val: T = 0 as T;
            group(thread[1], || {
                if lane < end {
                    let w: u64 = status_wait(status + ((end - 1 - lane) as u64) * 8u64);
                    flag = (w >> 32u64) as u32;
                    val = status_value::<T>(w);
                }
            });
            let pmask: u32 = ballot(flag == 2);
            #[at(thread[1])]
            let mut contrib: T = 0 as T;
            group(thread[1], || {
                if (pmask & ((1u32 << lane) - 1u32)) == 0 {
                    contrib = val;
                }
            });
            #[at(thread[1])]
            let s: T = warp_reduce::<T>(contrib);
            group(thread[1], || {
                prefix = prefix + s;
            });
            if pmask != 0 {
                searching = false;
            } else {
                end = end - 32;
            }
        }
        group(thread[1], || {
            if lane == 0 {
                status_publish(own, status_pack::<T>(2u32, prefix + aggregate));
            }
        });
    }
    prefix
}

/// Thread level (`thread[1]`): writes `items` to `out[0..N]` (a `thread[1]` view of the output starting at
/// global index `first`), skipping global indices `>= n`; 16-byte vector stores for full runs.
#[prism_device(requires(thread[1]), aliases = [u32, i32, f32])]
pub fn store_items<T: Num32, const N: u32>(out: *mut T, first: u32, n: u32, items: &[T; N]) {
    if N % 4 == 0 && first + N <= n {
        for j in 0..N / 4 {
            store4(
                out,
                4 * j,
                [
                    items[4 * j],
                    items[4 * j + 1],
                    items[4 * j + 2],
                    items[4 * j + 3],
                ],
            );
        }
    } else {
        for i in 0..N {
            if first + i < n {
                out[i] = items[i];
            }
        }
    }
}

/// The single-pass scan with decoupled look-back. Each block of 128 threads takes the next tile index from
/// `counter` (`atomic_add`, so tiles are started in launch order and the look-back cannot wait on a block
/// that has not started), loads its tile of `128 * ITEMS` items (blocked, masked past `n`), scans it
/// ([`thread_reduce`] → [`block_scan_exclusive`]), lets its first warp run
/// [`decoupled_lookback`], and writes `items + tile prefix` (inclusive or exclusive). `status` holds one
/// zeroed 64-bit status word per tile (its address, [`global_address_u64`], goes to the look-back), `counter`
/// is a zeroed `u32` ([`scan_init`] prepares both). Launch `ceil(n / (128 * ITEMS))` blocks of 128 threads.
#[prism_kernel(
    requires(grid[1], block[1], thread[32]),
    threads = 128,
    smem = 176,
    instances = [(u32, 4), (u32, 8), (u32, 16), (i32, 4), (i32, 8), (i32, 16), (f32, 4), (f32, 8), (f32, 16)],
    aliases = [u32, i32, f32]
)]
pub fn scan_kernel<T: Num32, const ITEMS: u32>(
    input: *const T,
    output: *mut T,
    n: u32,
    exclusive: bool,
    status: *mut u64,
    counter: *mut u32,
) {
    let status_addr: u64 = global_address_u64(status);
    // The tile (hence the block's part of `output`) is only known inside the block: the grid-level
    // partition is the identity and the thread-level one selects the thread's items.
    partition(
        output,
        block[1],
        |x| x,
        |out_b| {
            group(block[1], || {
                let tile_s: Shared<[u32; 4]>;
                let prefix_s: Shared<[T; 4]>;
                // Dynamic tile index: one thread takes it, the claim's closing barrier publishes it.
                claim(tile_s, thread[1], |ts| match split(thread) {
                    1 => {
                        ts[0] = atomic_add(counter, 0, 1u32);
                    }
                });
                #[at(block[1])]
                let tile: u32 = tile_s[0];
                #[at(thread[1])]
                let tid: u32 = id();
                #[at(thread[1])]
                let first: u32 = tile * 128 * ITEMS + tid * ITEMS;
                #[at(thread[1])]
                let mut items = [0 as T; ITEMS];
                group(thread[1], || {
                    load_items::<T, ITEMS>(input, first, n, &mut items);
                });
                #[at(thread[1])]
                let mine: T = thread_reduce::<T, ITEMS>(&items);
                #[at(thread[1])]
                let mut aggregate = [0 as T; 1];
                #[at(thread[1])]
                let pre: T = block_scan_exclusive::<T>(mine, &mut aggregate);
                // The first warp looks back; its lane 0 hands the tile prefix to the block through shared memory.
                claim(prefix_s, thread[32], |pw| match split(warp) {
                    1 => {
                        #[at(thread[1])]
                        let p: T = decoupled_lookback::<T>(status_addr, tile, aggregate[0]);
                        claim(pw, thread[1], |p1| match split(thread) {
                            1 => {
                                p1[0] = p;
                            }
                        });
                    }
                });
                #[at(block[1])]
                let tile_prefix: T = prefix_s[0];
                group(thread[1], || {
                    if exclusive {
                        thread_scan_exclusive::<T, ITEMS>(&mut items, tile_prefix + pre);
                    } else {
                        thread_scan_inclusive::<T, ITEMS>(&mut items, tile_prefix + pre);
                    }
                });
                partition(
                    out_b,
                    thread[1],
                    |x| first + x,
                    |o| {
                        group(thread[1], || {
                            store_items::<T, ITEMS>(o, first, n, &items);
                        });
                    },
                );
            });
        },
    );
}

/// The value types of the scan library: [`Value`] (u32, i32, f32) with this type's scan kernel instances.
pub trait ScanValue: Value {
    /// Launches `scan_kernel::<Self, ITEMS>` (`items` 4, 8 or 16).
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    fn launch_scan(
        dev: &Device,
        items: u32,
        dims: LaunchDims,
        input: &DeviceBuffer<Self>,
        output: &mut DeviceBuffer<Self>,
        n: u32,
        exclusive: bool,
        scratch: &mut ScanScratch,
    ) -> Result<LaunchReport, RuntimeError>;
}

macro_rules! scan_value_impl {
    ($t:ty) => {
        impl ScanValue for $t {
            fn launch_scan(
                dev: &Device,
                items: u32,
                dims: LaunchDims,
                input: &DeviceBuffer<$t>,
                output: &mut DeviceBuffer<$t>,
                n: u32,
                ex: bool,
                scratch: &mut ScanScratch,
            ) -> Result<LaunchReport, RuntimeError> {
                let st = &mut scratch.status;
                let c = &mut scratch.counter;
                match items {
                    4 => scan_kernel::<$t, 4>::launch(dev, dims, input, output, n, ex, st, c),
                    8 => scan_kernel::<$t, 8>::launch(dev, dims, input, output, n, ex, st, c),
                    _ => scan_kernel::<$t, 16>::launch(dev, dims, input, output, n, ex, st, c),
                }
            }
        }
    };
}
scan_value_impl!(u32);
scan_value_impl!(i32);
scan_value_impl!(f32);

/// Host API: scans `input` into `output` (`output.len() >= input.len()`) with `items` items per thread (4, 8
/// or 16), using `scratch` (see [`ScanScratch`]). Launches [`scan_init`] then [`scan_kernel`].
pub fn scan_with<T: ScanValue>(
    dev: &Device,
    input: &DeviceBuffer<T>,
    output: &mut DeviceBuffer<T>,
    kind: ScanKind,
    items: u32,
    scratch: &mut ScanScratch,
) -> Result<(), RuntimeError> {
    let (n, tiles) = scan_prepare(dev, input.len(), output.len(), items, scratch)?;
    if n == 0 {
        return Ok(());
    }
    let ex = kind == ScanKind::Exclusive;
    let dims = LaunchDims::new(tiles, SCAN_THREADS);
    T::launch_scan(dev, items, dims, input, output, n, ex, scratch)?;
    Ok(())
}

/// Host API: scans `input` into `output` (allocates the scratch; items per thread from [`default_items`]).
pub fn scan<T: ScanValue>(
    dev: &Device,
    input: &DeviceBuffer<T>,
    output: &mut DeviceBuffer<T>,
    kind: ScanKind,
) -> Result<(), RuntimeError> {
    let mut scratch = ScanScratch::new(dev, input.len())?;
    scan_with(
        dev,
        input,
        output,
        kind,
        default_items(input.len()),
        &mut scratch,
    )
}

/// [`scan_with`] of `u32` values (the name from before the library was generic).
pub fn scan_u32_with(
    dev: &Device,
    input: &DeviceBuffer<u32>,
    output: &mut DeviceBuffer<u32>,
    kind: ScanKind,
    items: u32,
    scratch: &mut ScanScratch,
) -> Result<(), RuntimeError> {
    scan_with(dev, input, output, kind, items, scratch)
}

/// [`scan`] of `u32` values (the name from before the library was generic).
pub fn scan_u32(
    dev: &Device,
    input: &DeviceBuffer<u32>,
    output: &mut DeviceBuffer<u32>,
    kind: ScanKind,
) -> Result<(), RuntimeError> {
    scan(dev, input, output, kind)
}

/// [`scan_with`] of `i32` values (the name from before the library was generic).
pub fn scan_i32_with(
    dev: &Device,
    input: &DeviceBuffer<i32>,
    output: &mut DeviceBuffer<i32>,
    kind: ScanKind,
    items: u32,
    scratch: &mut ScanScratch,
) -> Result<(), RuntimeError> {
    scan_with(dev, input, output, kind, items, scratch)
}

/// [`scan`] of `i32` values (the name from before the library was generic).
pub fn scan_i32(
    dev: &Device,
    input: &DeviceBuffer<i32>,
    output: &mut DeviceBuffer<i32>,
    kind: ScanKind,
) -> Result<(), RuntimeError> {
    scan(dev, input, output, kind)
}

/// [`scan_with`] of `f32` values (the name from before the library was generic).
pub fn scan_f32_with(
    dev: &Device,
    input: &DeviceBuffer<f32>,
    output: &mut DeviceBuffer<f32>,
    kind: ScanKind,
    items: u32,
    scratch: &mut ScanScratch,
) -> Result<(), RuntimeError> {
    scan_with(dev, input, output, kind, items, scratch)
}

/// [`scan`] of `f32` values (the name from before the library was generic).
pub fn scan_f32(
    dev: &Device,
    input: &DeviceBuffer<f32>,
    output: &mut DeviceBuffer<f32>,
    kind: ScanKind,
) -> Result<(), RuntimeError> {
    scan(dev, input, output, kind)
}
