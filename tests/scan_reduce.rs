//! The reduce/scan library (`prism_kernels::reduce`, `prism_kernels::scan`) on the PTX emulator with race,
//! barrier and bounds checks on (the default `EmuConfig`; a launch that faults returns `Err`, so `unwrap`
//! asserts that no fault was found). With `PRISM_BACKEND=gpu` (`scripts/gpu/run.sh`) the same kernels run on
//! GPU 0 instead, and the emulator's counters are not checked. Device functions are exercised through small test kernels that call them
//! across crates; kernels through their host APIs. Inputs are seeded random values (never all zero), outputs
//! are pre-filled with a sentinel so unwritten elements are caught, results are checked against CPU
//! references (integers exactly with wrapping arithmetic, `f32` relative to the sum of magnitudes).
//!
//! Written once for the three value types: the test kernels are generic (`t_warp<T: Num32>`, instances
//! `u32`, `i32`, `f32`) and call the library's generic device functions (`warp_reduce::<T>`); the Rust tests
//! exist per type through `per_type!`. `aliases_*` checks that the names from before type generics
//! (`warp_reduce_f32`, `reduce_sum_kernel_u32::<4>`) still work and compute the same.

mod e2e_util;

use e2e_util::Rng;
use prism::kernels::reduce::*;
use prism::kernels::scan::*;
use prism::runtime::emu::{EmuConfig, Schedule};
use prism::{prism_kernel, Device, DeviceBuffer, LaunchDims};

/// The emulator with the default checks, and a step bound low enough that a livelocked look-back fails fast.
fn emu() -> Device {
    e2e_util::emulator_or_gpu(EmuConfig {
        max_steps: 50_000_000,
        ..EmuConfig::default()
    })
}

fn emu_random(seed: u64) -> Device {
    e2e_util::emulator_or_gpu(EmuConfig {
        schedule: Schedule::Random { seed },
        max_steps: 50_000_000,
        ..EmuConfig::default()
    })
}

/// Value types of the library, with the CPU arithmetic the references use.
trait Val: Copy + PartialEq + std::fmt::Debug + prism::DeviceCopy {
    const ZERO: Self;
    const SENTINEL: Self;
    fn add(self, o: Self) -> Self;
    fn mag(self) -> f64;
    fn random(rng: &mut Rng) -> Self;
    /// Exact for integers; within `2e-5 · mag + 1e-5` for f32 (`mag` = sum of magnitudes involved).
    fn close(got: Self, want: Self, mag: f64) -> bool;
    /// The value of 32 bits (the low half of a status word).
    fn from_bits32(b: u32) -> Self;
    /// The value's 32 bits.
    fn bits32(self) -> u32;
}

impl Val for u32 {
    const ZERO: u32 = 0;
    const SENTINEL: u32 = 0xDEAD_BEEF;
    fn add(self, o: u32) -> u32 {
        self.wrapping_add(o)
    }
    fn mag(self) -> f64 {
        0.0
    }
    fn random(rng: &mut Rng) -> u32 {
        rng.next_u64() as u32
    }
    fn close(got: u32, want: u32, _: f64) -> bool {
        got == want
    }
    fn from_bits32(b: u32) -> u32 {
        b
    }
    fn bits32(self) -> u32 {
        self
    }
}

impl Val for i32 {
    const ZERO: i32 = 0;
    const SENTINEL: i32 = e2e_util::SENTINEL_I32;
    fn add(self, o: i32) -> i32 {
        self.wrapping_add(o)
    }
    fn mag(self) -> f64 {
        0.0
    }
    fn random(rng: &mut Rng) -> i32 {
        rng.i32()
    }
    fn close(got: i32, want: i32, _: f64) -> bool {
        got == want
    }
    fn from_bits32(b: u32) -> i32 {
        b as i32
    }
    fn bits32(self) -> u32 {
        self as u32
    }
}

impl Val for f32 {
    const ZERO: f32 = 0.0;
    const SENTINEL: f32 = e2e_util::SENTINEL_F32;
    fn add(self, o: f32) -> f32 {
        self + o
    }
    fn mag(self) -> f64 {
        self.abs() as f64
    }
    fn random(rng: &mut Rng) -> f32 {
        rng.f32()
    }
    fn close(got: f32, want: f32, mag: f64) -> bool {
        ((got as f64) - (want as f64)).abs() <= 2e-5 * mag + 1e-5
    }
    fn from_bits32(b: u32) -> f32 {
        f32::from_bits(b)
    }
    fn bits32(self) -> u32 {
        self.to_bits()
    }
}

fn random_vec<T: Val>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = Rng::new(seed);
    let v: Vec<T> = (0..n).map(|_| T::random(&mut rng)).collect();
    assert!(
        v.iter().any(|x| *x != T::ZERO),
        "inputs must not be all zero"
    );
    v
}

/// `(inclusive, exclusive, magnitude)` prefix sums of `x` (magnitude: sum of |x| up to and including i).
fn prefix<T: Val>(x: &[T]) -> (Vec<T>, Vec<T>, Vec<f64>) {
    let (mut inc, mut exc, mut mag) = (Vec::new(), Vec::new(), Vec::new());
    let (mut s, mut m) = (T::ZERO, 0.0);
    for v in x {
        exc.push(s);
        s = s.add(*v);
        m += v.mag();
        inc.push(s);
        mag.push(m);
    }
    (inc, exc, mag)
}

fn check_all<T: Val>(what: &str, got: &[T], want: &[T], mag: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for i in 0..got.len() {
        assert!(got[i] != T::SENTINEL, "{what}[{i}] was not written");
        assert!(
            T::close(got[i], want[i], mag[i]),
            "{what}[{i}] = {:?}, want {:?}",
            got[i],
            want[i]
        );
    }
}

/// Device-wide scan through the host API with `items` per thread, checked element by element; returns
/// the scratch so callers can inspect the published status words.
fn run_scan<T: Val>(
    dev: &Device,
    n: usize,
    items: u32,
    kind: ScanKind,
    seed: u64,
    scan: impl Fn(
        &Device,
        &DeviceBuffer<T>,
        &mut DeviceBuffer<T>,
        ScanKind,
        u32,
        &mut ScanScratch,
    ) -> Result<(), prism::RuntimeError>,
) -> (Vec<T>, ScanScratch) {
    let x: Vec<T> = random_vec(n, seed);
    let input = dev.htod(&x).unwrap();
    // One element more than needed: the kernel must not write past n.
    let mut output = dev.htod(&vec![T::SENTINEL; n + 1]).unwrap();
    let mut scratch = ScanScratch::new(dev, n).unwrap();
    // A scratch left dirty by a previous scan must not matter: scan twice with the same scratch.
    for _ in 0..2 {
        scan(dev, &input, &mut output, kind, items, &mut scratch).unwrap();
    }
    let got = dev.dtoh(&output).unwrap();
    assert_eq!(got[n], T::SENTINEL, "scan wrote past the end (n = {n})");
    let (inc, exc, mag) = prefix(&x);
    let want = if kind == ScanKind::Inclusive {
        inc
    } else {
        exc
    };
    check_all(
        &format!("{kind:?} scan n={n} items={items}"),
        &got[..n],
        &want,
        &mag,
    );
    (x, scratch)
}

/// After a scan of `x` with `items` per thread, every tile's status word must hold flag STATUS_PREFIX and
/// the inclusive prefix of the tile's last element.
fn check_status<T: Val>(
    x: &[T],
    items: u32,
    scratch: &ScanScratch,
    dev: &Device,
    value_of: impl Fn(u32) -> T,
) {
    let tile = (SCAN_THREADS * items) as usize;
    let tiles = x.len().div_ceil(tile);
    let st = dev.dtoh(scratch.status()).unwrap();
    let (inc, _, mag) = prefix(x);
    for (t, &w) in st.iter().enumerate().take(tiles) {
        assert_eq!((w >> 32) as u32, STATUS_PREFIX, "tile {t}: flag of {w:#x}");
        let last = ((t + 1) * tile).min(x.len()) - 1;
        assert!(
            T::close(value_of(w as u32), inc[last], mag[last]),
            "tile {t}: published {:?}, want {:?}",
            value_of(w as u32),
            inc[last]
        );
    }
}

fn run_reduce<T: Val>(
    dev: &Device,
    n: usize,
    seed: u64,
    reduce: impl Fn(&Device, &DeviceBuffer<T>, &mut DeviceBuffer<T>) -> Result<(), prism::RuntimeError>,
) {
    let x: Vec<T> = random_vec(n, seed);
    let input = dev.htod(&x).unwrap();
    let mut out = dev.htod(&[T::SENTINEL, T::SENTINEL]).unwrap();
    reduce(dev, &input, &mut out).unwrap();
    let got = dev.dtoh(&out).unwrap();
    let (inc, _, mag) = prefix(&x);
    assert!(
        T::close(got[0], inc[n - 1], mag[n - 1]),
        "sum of {n}: {:?}, want {:?}",
        got[0],
        inc[n - 1]
    );
    assert_eq!(got[1], T::SENTINEL, "reduce wrote out[1]");
}

/// Test-kernel outputs per thread for the block functions with `n` items: see `t_block_*`.
fn block_stride(n: usize) -> usize {
    7 + 2 * n
}

/// CPU reference for the `t_block_*` test kernels on blocks of `threads` threads, `n` items per thread.
fn check_block<T: Val>(x: &[T], got: &[T], threads: usize, n: usize) {
    let s = block_stride(n);
    let blocks = x.len() / (threads * n);
    for b in 0..blocks {
        let xb = &x[b * threads * n..(b + 1) * threads * n];
        let firsts: Vec<T> = (0..threads).map(|t| xb[t * n]).collect();
        let (finc, fexc, fmag) = prefix(&firsts);
        let (inc, exc, mag) = prefix(xb);
        let total = inc[inc.len() - 1];
        let tmag = mag[mag.len() - 1];
        for t in 0..threads {
            let o = &got[(b * threads + t) * s..(b * threads + t + 1) * s];
            let at = |k: usize| format!("block {b} thread {t} output {k}");
            let c = |k: usize, want: T, m: f64| {
                assert!(o[k] != T::SENTINEL, "{} not written", at(k));
                assert!(
                    T::close(o[k], want, m),
                    "{} = {:?}, want {:?}",
                    at(k),
                    o[k],
                    want
                );
            };
            c(0, total, tmag);
            c(1, fexc[t], fmag[t]);
            c(2, finc[threads - 1], fmag[threads - 1]);
            c(3, finc[t], fmag[t]);
            c(4, finc[threads - 1], fmag[threads - 1]);
            c(5, total, tmag);
            for i in 0..n {
                c(6 + i, inc[t * n + i], mag[t * n + i]);
                c(6 + n + i, exc[t * n + i], mag[t * n + i]);
            }
            c(6 + 2 * n, total, tmag);
        }
    }
}

/// CPU reference for the `t_warp_*` test kernels: per thread [xor-reduce, down-reduce (lane 0 only),
/// inclusive scan, exclusive scan] of the warp's values.
fn check_warp<T: Val>(x: &[T], got: &[T]) {
    for w in 0..x.len() / 32 {
        let xw = &x[w * 32..(w + 1) * 32];
        let (inc, exc, mag) = prefix(xw);
        for l in 0..32 {
            let o = &got[(w * 32 + l) * 4..(w * 32 + l + 1) * 4];
            assert!(
                T::close(o[0], inc[31], mag[31]),
                "warp {w} lane {l}: xor reduce {:?}, want {:?}",
                o[0],
                inc[31]
            );
            if l == 0 {
                assert!(
                    T::close(o[1], inc[31], mag[31]),
                    "warp {w}: down reduce {:?}",
                    o[1]
                );
            }
            assert!(
                T::close(o[2], inc[l], mag[l]),
                "warp {w} lane {l}: inclusive {:?}, want {:?}",
                o[2],
                inc[l]
            );
            assert!(
                T::close(o[3], exc[l], mag[l]),
                "warp {w} lane {l}: exclusive {:?}, want {:?}",
                o[3],
                exc[l]
            );
        }
    }
}

/// Per thread: [warp_reduce (shfl_xor), warp_reduce_down (shfl_down), warp_scan_inclusive,
/// warp_scan_exclusive] of one value per lane.
#[prism_kernel(requires(grid[1], block[1], thread[32]), instances = [u32, i32, f32])]
pub fn t_warp<T: Num32>(x: *const T, out: *mut T) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(
        out,
        thread[1],
        |j| i * 4 + j,
        |o| {
            group(thread[32], || {
                #[at(thread[1])]
                let mut v: T = 0 as T;
                group(thread[1], || {
                    v = x[i];
                });
                #[at(thread[1])]
                let a: T = prism_kernels::warp_reduce::<T>(v);
                #[at(thread[1])]
                let b: T = prism_kernels::warp_reduce_down::<T>(v);
                #[at(thread[1])]
                let c: T = prism_kernels::warp_scan_inclusive::<T>(v);
                #[at(thread[1])]
                let d: T = prism_kernels::warp_scan_exclusive::<T>(v);
                group(thread[1], || {
                    o[0] = a;
                    o[1] = b;
                    o[2] = c;
                    o[3] = d;
                });
            });
        },
    );
}

/// Per thread (stride 7 + 2N): [block_reduce(thread_reduce(items)), block_scan_exclusive(items[0]) and its
/// total, block_scan_inclusive(items[0]) and its total, block_scan_items_inclusive total, the N inclusive
/// items, the N exclusive items, block_scan_items_exclusive total]. Thread `t` of the grid holds
/// `x[t * N .. (t + 1) * N]`. Any block size (multiple of 32).
#[prism_kernel(
    requires(grid[1], block[1], thread[32]),
    smem = 144,
    instances = [(u32, 1), (u32, 3), (i32, 1), (i32, 3), (f32, 1), (f32, 3)]
)]
pub fn t_block<T: Num32, const N: u32>(x: *const T, out: *mut T) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(
        out,
        thread[1],
        |j| i * (7 + 2 * N) + j,
        |o| {
            group(block[1], || {
                #[at(thread[1])]
                let mut items = [0 as T; N];
                group(thread[1], || {
                    for k in 0..N {
                        items[k] = x[i * N + k];
                    }
                });
                #[at(thread[1])]
                let mut ex = [0 as T; N];
                group(thread[1], || {
                    for k in 0..N {
                        ex[k] = items[k];
                    }
                });
                #[at(thread[1])]
                let mine: T = prism_kernels::thread_reduce::<T, N>(&items);
                #[at(block[1])]
                let red: T = prism_kernels::block_reduce::<T>(mine);
                #[at(thread[1])]
                let mut t1 = [0 as T; 1];
                #[at(thread[1])]
                let e1: T = prism_kernels::block_scan_exclusive::<T>(items[0], &mut t1);
                #[at(thread[1])]
                let mut t2 = [0 as T; 1];
                #[at(thread[1])]
                let i1: T = prism_kernels::block_scan_inclusive::<T>(items[0], &mut t2);
                #[at(thread[1])]
                let ti: T = prism_kernels::block_scan_items_inclusive::<T, N>(&mut items);
                #[at(thread[1])]
                let te: T = prism_kernels::block_scan_items_exclusive::<T, N>(&mut ex);
                group(thread[1], || {
                    o[0] = red;
                    o[1] = e1;
                    o[2] = t1[0];
                    o[3] = i1;
                    o[4] = t2[0];
                    o[5] = ti;
                    for k in 0..N {
                        o[6 + k] = items[k];
                        o[6 + N + k] = ex[k];
                    }
                    o[6 + 2 * N] = te;
                });
            });
        },
    );
}

/// Runs [`prism_kernels::decoupled_lookback`] for `tile` in one warp over a prepared status array; every lane writes
/// the prefix it got.
#[prism_kernel(requires(grid[1], block[1], thread[32]), instances = [u32, i32, f32])]
pub fn t_lookback<T: Num32>(status: *mut u64, tile: u32, aggregate: T, out: *mut T) {
    let st: u64 = prism_kernels::global_address_u64(status);
    #[at(thread[1])]
    let t: u32 = id();
    partition(
        out,
        thread[1],
        |x| t + x,
        |o| {
            group(thread[32], || {
                #[at(thread[1])]
                let p: T = prism_kernels::decoupled_lookback::<T>(st, tile, aggregate);
                group(thread[1], || {
                    o[0] = p;
                });
            });
        },
    );
}

/// Two warps: the second looks back from tile 1 while tile 0's status is still invalid, so it must spin
/// until the first warp, after a delay, publishes tile 0's prefix `late`. Lanes of the second warp write
/// their prefix to `out[32..64]`.
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64, instances = [u32, i32, f32])]
pub fn t_spin<T: Num32>(status: *mut u64, late: T, aggregate: T, out: *mut T) {
    let st: u64 = prism_kernels::global_address_u64(status);
    #[at(thread[1])]
    let t: u32 = id();
    partition(
        out,
        thread[1],
        |x| t + x,
        |o| {
            group(block[1], || match split(warp) {
                1 => {
                    let mut k: u32 = 0;
                    while k < 400 {
                        k = k + 1;
                    }
                    #[at(thread[1])]
                    let lane: u32 = id();
                    group(thread[1], || {
                        if lane == 0 {
                            prism_kernels::status_publish(
                                st,
                                prism_kernels::status_pack::<T>(2u32, late),
                            );
                        }
                    });
                }
                1 => {
                    #[at(thread[1])]
                    let p: T = prism_kernels::decoupled_lookback::<T>(st, 1u32, aggregate);
                    group(thread[1], || {
                        o[0] = p;
                    });
                }
            });
        },
    );
}

/// The Rust tests, once per value type: `VT` is the type in each module.
macro_rules! per_type {
    ($m:ident, $t:ty) => {
        mod $m {
            use super::*;
            type VT = $t;

            #[test]
            fn warp_functions() {
                let dev = emu();
                let x: Vec<VT> = random_vec(96, 11);
                let dx = dev.htod(&x).unwrap();
                let mut out = dev.htod(&vec![<VT as Val>::SENTINEL; 96 * 4]).unwrap();
                t_warp::<VT>::launch(&dev, LaunchDims::new(1, 96), &dx, &mut out).unwrap();
                check_warp(&x, &dev.dtoh(&out).unwrap());
            }

            #[test]
            fn block_functions() {
                let dev = emu();
                // Block sizes 32 (one warp), 96 and 1024 (32 warps: every partial slot used); 1 and 3 items.
                for (threads, blocks, seed) in [(32usize, 2usize, 1u64), (96, 2, 2), (1024, 1, 3)] {
                    for n in [1usize, 3] {
                        let x: Vec<VT> = random_vec(threads * blocks * n, seed * 10 + n as u64);
                        let dx = dev.htod(&x).unwrap();
                        let mut out = dev
                            .htod(&vec![
                                <VT as Val>::SENTINEL;
                                threads * blocks * block_stride(n)
                            ])
                            .unwrap();
                        let dims = LaunchDims::new(blocks as u32, threads as u32);
                        if n == 1 {
                            t_block::<VT, 1>::launch(&dev, dims, &dx, &mut out).unwrap();
                        } else {
                            t_block::<VT, 3>::launch(&dev, dims, &dx, &mut out).unwrap();
                        }
                        check_block(&x, &dev.dtoh(&out).unwrap(), threads, n);
                    }
                }
            }

            #[test]
            fn lookback_crosses_many_tiles() {
                // Tiles 0..=2 hold prefixes, tile 3 a prefix, tiles 4..=68 only aggregates: the look-back from tile 69
                // must walk three windows of 32 (68..37, 36..5, 4..3) and stop at tile 3's prefix.
                let dev = emu();
                let vals: Vec<VT> = random_vec(69, 5);
                let mut words = Vec::new();
                let mut want = <VT as Val>::ZERO;
                let mut mag = 0.0;
                for (t, v) in vals.iter().enumerate() {
                    let flag = if t <= 3 {
                        STATUS_PREFIX
                    } else {
                        STATUS_AGGREGATE
                    };
                    // Prefix words before tile 3 hold garbage that must not be read.
                    let v = if t < 3 { vals[0] } else { *v };
                    words.push(((flag as u64) << 32) | v.bits32() as u64);
                    if t >= 3 {
                        want = want.add(v);
                        mag += v.mag();
                    }
                }
                words.push(0);
                let mut status = dev.htod(&words).unwrap();
                let agg: VT = vals[1];
                let mut out = dev.htod(&[<VT as Val>::SENTINEL; 32]).unwrap();
                let rep = t_lookback::<VT>::launch(
                    &dev,
                    LaunchDims::new(1, 32),
                    &mut status,
                    69,
                    agg,
                    &mut out,
                )
                .unwrap();
                let got = dev.dtoh(&out).unwrap();
                for (l, g) in got.iter().enumerate() {
                    assert!(
                        <VT as Val>::close(*g, want, mag),
                        "lane {l}: prefix {g:?}, want {want:?}"
                    );
                }
                let st = dev.dtoh(&status).unwrap();
                assert_eq!((st[69] >> 32) as u32, STATUS_PREFIX);
                assert!(<VT as Val>::close(
                    VT::from_bits32(st[69] as u32),
                    got[0].add(agg),
                    mag + agg.mag()
                ));
                // Warp-level atomic instructions: 2 publishes (aggregate, prefix) + one status read per window (3).
                // Counted by the emulator only (on a GPU the results above are the check).
                if let Some(r) = rep.emu {
                    assert_eq!(r.counters.atomics, 5, "look-back windows");
                }
            }

            #[test]
            fn lookback_spins_until_published() {
                for seed in [0u64, 1, 2] {
                    let dev = if seed == 0 { emu() } else { emu_random(seed) };
                    let late: VT = random_vec::<VT>(1, 40 + seed)[0];
                    let agg: VT = random_vec::<VT>(1, 50 + seed)[0];
                    let mut status = dev.htod(&[0u64, 0u64]).unwrap();
                    let mut out = dev.htod(&vec![<VT as Val>::SENTINEL; 64]).unwrap();
                    let rep = t_spin::<VT>::launch(
                        &dev,
                        LaunchDims::new(1, 64),
                        &mut status,
                        late,
                        agg,
                        &mut out,
                    )
                    .unwrap();
                    let got = dev.dtoh(&out).unwrap();
                    for (l, g) in got[32..].iter().enumerate() {
                        assert!(
                            <VT as Val>::close(*g, late, late.mag()),
                            "seed {seed} lane {l}: {g:?}, want {late:?}"
                        );
                    }
                    let st = dev.dtoh(&status).unwrap();
                    assert_eq!((st[1] >> 32) as u32, STATUS_PREFIX);
                    assert!(<VT as Val>::close(
                        VT::from_bits32(st[1] as u32),
                        late.add(agg),
                        late.mag() + agg.mag()
                    ));
                    // Without spinning: 3 publishes and 1 read. The delay makes the waiting lane poll many times.
                    if let Some(r) = rep.emu {
                        let atomics = r.counters.atomics;
                        println!("seed {seed}: {atomics} warp-level atomics");
                        assert!(
                            atomics > 10,
                            "seed {seed}: only {atomics} atomics: the look-back never spun"
                        );
                    }
                }
            }

            #[test]
            fn device_reduce() {
                let dev = emu();
                for (n, seed) in [(1usize, 1u64), (31, 2), (512, 3), (517, 4), (40_000, 5)] {
                    run_reduce::<VT>(&dev, n, seed, reduce_sum::<VT>);
                }
            }

            #[test]
            fn device_scan() {
                let dev = emu();
                for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
                    for (n, items, seed) in [
                        (1usize, 4u32, 1u64),
                        (100, 4, 2),
                        (512, 4, 3),
                        (513, 4, 4),
                        (2048, 16, 5),
                        (5000, 8, 6),
                        (9999, 16, 7),
                    ] {
                        let (x, scratch) =
                            run_scan::<VT>(&dev, n, items, kind, seed, scan_with::<VT>);
                        check_status(&x, items, &scratch, &dev, VT::from_bits32);
                    }
                }
            }

            #[test]
            fn device_scan_random_schedules() {
                // Random warp schedules inside each block (blocks themselves run one after another on the emulator).
                for seed in [3u64, 4, 5] {
                    let dev = emu_random(seed);
                    run_scan::<VT>(
                        &dev,
                        4000 + seed as usize,
                        4,
                        ScanKind::Inclusive,
                        seed,
                        scan_with::<VT>,
                    );
                }
            }
        }
    };
}

per_type!(u32_tests, u32);
per_type!(i32_tests, i32);
per_type!(f32_tests, f32);

/// The names from before type generics: device functions `warp_reduce_f32` and friends are aliases of the
/// generic ones (`aliases = [u32, i32, f32]`).
#[prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn t_warp_aliases(x: *const f32, out: *mut f32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(
        out,
        thread[1],
        |j| i * 4 + j,
        |o| {
            group(thread[32], || {
                #[at(thread[1])]
                let mut v: f32 = 0.0;
                group(thread[1], || {
                    v = x[i];
                });
                #[at(thread[1])]
                let a: f32 = prism_kernels::warp_reduce_f32(v);
                #[at(thread[1])]
                let b: f32 = prism_kernels::warp_reduce_down_f32(v);
                #[at(thread[1])]
                let c: f32 = prism_kernels::warp_scan_inclusive_f32(v);
                #[at(thread[1])]
                let d: f32 = prism_kernels::warp_scan_exclusive_f32(v);
                group(thread[1], || {
                    o[0] = a;
                    o[1] = b;
                    o[2] = c;
                    o[3] = d;
                });
            });
        },
    );
}

#[test]
fn aliases_compute_what_the_generic_items_compute() {
    let dev = emu();
    let x: Vec<f32> = random_vec(64, 21);
    let dx = dev.htod(&x).unwrap();
    let mut out = dev.htod(&vec![<f32 as Val>::SENTINEL; 64 * 4]).unwrap();
    t_warp_aliases::launch(&dev, LaunchDims::new(1, 64), &dx, &mut out).unwrap();
    check_warp(&x, &dev.dtoh(&out).unwrap());
    // Kernel aliases name the generic kernel's instances: the same PTX entry and launch.
    assert_eq!(
        reduce_sum_kernel_u32::<4>::INFO.entry(),
        "reduce_sum_kernel_u32_4"
    );
    assert_eq!(scan_kernel_f32::<16>::INFO.entry(), "scan_kernel_f32_16");
    assert_eq!(reduce_zero_i32::PTX, reduce_zero::<i32>::PTX);
    // Host aliases: `reduce_sum_u32` is `reduce_sum::<u32>`, `scan_i32_with` is `scan_with::<i32>`.
    run_reduce::<u32>(&dev, 300, 22, reduce_sum_u32);
    run_scan::<i32>(&dev, 700, 8, ScanKind::Exclusive, 23, scan_i32_with);
}
