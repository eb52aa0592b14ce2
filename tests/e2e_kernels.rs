//! End to end: the library's and the ext crate's kernels, launched through their typed launchers on
//! `Device::auto()` (the emulator on CI, the GPU on a GPU host), checked against CPU references on random
//! inputs. Outputs are pre-filled with a sentinel so unwritten (or wrongly written) elements are caught.

mod e2e_util;

use e2e_util::{device, Rng, SENTINEL_F32, SENTINEL_I32};
use prism::kernels::{load_store_chain, mma_tf32_naive, vector_add};
use prism::LaunchDims;
use prism_ext_crate::{ext_block_copy_plus_one, ext_warp_copy};

#[test]
fn vector_add_matches_cpu() {
    let dev = device();
    let mut rng = Rng::new(1);
    for &(n, block) in &[(1000usize, 256u32), (64, 32), (1, 1), (777, 96)] {
        let a = rng.f32s(n);
        let b = rng.f32s(n);
        // 13 extra elements past `n` must keep the sentinel (the kernel guards `i < n`).
        let extra = 13;
        let (da, db) = (dev.htod(&a).unwrap(), dev.htod(&b).unwrap());
        let mut dc = dev.htod(&vec![SENTINEL_F32; n + extra]).unwrap();
        let grid = (n + extra).div_ceil(block as usize) as u32;
        let report = vector_add::launch(
            &dev,
            LaunchDims::new(grid, block),
            &da,
            &db,
            &mut dc,
            n as u32,
        )
        .unwrap();
        assert_eq!(report.backend, dev.backend());
        let c = dev.dtoh(&dc).unwrap();
        for i in 0..n {
            assert_eq!(c[i], a[i] + b[i], "c[{i}] (n = {n}, block = {block})");
        }
        assert!(
            c[n..].iter().all(|&x| x == SENTINEL_F32),
            "vector_add wrote past n = {n}"
        );
    }
}

/// Reference for Fig. 6 in f64; TF32 keeps 10 mantissa bits, so the tolerance scales with Σ|a||b|.
fn check_gemm(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &[f32]) {
    for i in 0..m {
        for j in 0..n {
            let (mut exact, mut mag) = (0f64, 0f64);
            for l in 0..k {
                let p = a[i * k + l] as f64 * b[l * n + j] as f64;
                exact += p;
                mag += p.abs();
            }
            let got = c[i * n + j] as f64;
            assert!(
                got != SENTINEL_F32 as f64,
                "C[{i}][{j}] was not written ({m}x{n}x{k})"
            );
            assert!(
                (got - exact).abs() <= 4e-3 * mag + 1e-5,
                "C[{i}][{j}] = {got}, expected {exact} (tolerance {}) ({m}x{n}x{k})",
                4e-3 * mag + 1e-5
            );
        }
    }
}

#[test]
fn fig6_mma_tf32_matches_cpu() {
    let dev = device();
    let mut rng = Rng::new(6);
    // Multiples of the 16x8 tile and k-tile 8, and ragged sizes that exercise the bounds checks.
    for &(m, n, k) in &[(32usize, 16usize, 24usize), (16, 8, 8), (20, 12, 13)] {
        let a = rng.f32s(m * k);
        let b = rng.f32s(k * n);
        let (da, db) = (dev.htod(&a).unwrap(), dev.htod(&b).unwrap());
        let mut dc = dev.htod(&vec![SENTINEL_F32; m * n]).unwrap();
        let blocks = (m.div_ceil(16) * n.div_ceil(8)) as u32;
        mma_tf32_naive::launch(
            &dev,
            LaunchDims::new(blocks, 32),
            &da,
            &db,
            &mut dc,
            m as u32,
            n as u32,
            k as u32,
        )
        .unwrap();
        check_gemm(m, n, k, &a, &b, &dev.dtoh(&dc).unwrap());
    }
}

#[test]
fn load_store_chain_copies() {
    let dev = device();
    let mut rng = Rng::new(7);
    let blocks = 3usize;
    // N = 4 items per thread.
    let len4 = blocks * 128 * 4;
    let input = rng.i32s(len4);
    let din = dev.htod(&input).unwrap();
    let mut dout = dev.htod(&vec![SENTINEL_I32; len4 + 8]).unwrap();
    load_store_chain::<4>::launch(&dev, LaunchDims::new(blocks as u32, 128), &din, &mut dout)
        .unwrap();
    let out = dev.dtoh(&dout).unwrap();
    assert_eq!(&out[..len4], &input[..], "load_store_chain::<4>");
    assert!(out[len4..].iter().all(|&x| x == SENTINEL_I32));
    // N = 1.
    let len1 = blocks * 128;
    let input = rng.i32s(len1);
    let din = dev.htod(&input).unwrap();
    let mut dout = dev.htod(&vec![SENTINEL_I32; len1 + 8]).unwrap();
    load_store_chain::<1>::launch(&dev, LaunchDims::new(blocks as u32, 128), &din, &mut dout)
        .unwrap();
    let out = dev.dtoh(&dout).unwrap();
    assert_eq!(&out[..len1], &input[..], "load_store_chain::<1>");
    assert!(out[len1..].iter().all(|&x| x == SENTINEL_I32));
}

#[test]
fn ext_crate_warp_copy() {
    let dev = device();
    let mut rng = Rng::new(8);
    // 2 blocks of 64 threads = 4 warps, 128 items each.
    let len = 4 * 128;
    let input = rng.i32s(len);
    let din = dev.htod(&input).unwrap();
    let mut dout = dev.htod(&vec![SENTINEL_I32; len + 5]).unwrap();
    ext_warp_copy::launch(&dev, LaunchDims::new(2, 64), &din, &mut dout).unwrap();
    let out = dev.dtoh(&dout).unwrap();
    assert_eq!(&out[..len], &input[..]);
    assert!(out[len..].iter().all(|&x| x == SENTINEL_I32));
}

#[test]
fn ext_crate_block_copy_plus_one() {
    let dev = device();
    let mut rng = Rng::new(9);
    let blocks = 3;
    let len = blocks * 128;
    let input = rng.i32s(len);
    let din = dev.htod(&input).unwrap();
    let mut dout = dev.htod(&vec![SENTINEL_I32; len + 5]).unwrap();
    ext_block_copy_plus_one::launch(&dev, LaunchDims::new(blocks as u32, 64), &din, &mut dout)
        .unwrap();
    let out = dev.dtoh(&dout).unwrap();
    let expect: Vec<i32> = input.iter().map(|x| x.wrapping_add(1)).collect();
    assert_eq!(&out[..len], &expect[..]);
    assert!(out[len..].iter().all(|&x| x == SENTINEL_I32));
}

/// A grid-stride loop: `block_dim()` and `grid_dim()` give the launch's size inside the kernel, so any grid
/// covers any `n`.
#[prism::prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn scale_grid_stride(x: *const f32, y: *mut f32, n: u32, s: f32) {
    #[at(thread[1])]
    let i: u32 = id();
    let stride: u32 = block_dim() * grid_dim();
    partition(
        y,
        thread[1],
        |k| i + k * stride,
        |y_t| {
            group(thread[1], || {
                let mut k: u32 = 0;
                while i + k * stride < n {
                    y_t[k] = x[i + k * stride] * s;
                    k += 1;
                }
            });
        },
    );
}

#[test]
fn grid_stride_uses_block_and_grid_size() {
    let dev = device();
    let mut rng = Rng::new(9);
    for &(n, grid, block) in &[
        (5000usize, 3u32, 64u32),
        (100, 1, 32),
        (1, 2, 32),
        (4099, 7, 96),
    ] {
        let x = rng.f32s(n);
        let dx = dev.htod(&x).unwrap();
        let mut dy = dev.htod(&vec![SENTINEL_F32; n]).unwrap();
        scale_grid_stride::launch(
            &dev,
            LaunchDims::new(grid, block),
            &dx,
            &mut dy,
            n as u32,
            1.5,
        )
        .unwrap();
        let y = dev.dtoh(&dy).unwrap();
        for i in 0..n {
            assert_eq!(y[i], x[i] * 1.5, "y[{i}] (n = {n}, grid {grid} x {block})");
        }
    }
}

// docs/GUIDE.md §3 and §6, verbatim: a device function with a tail-expression result, and cp.async staging.

/// Warp level: every lane receives the warp's sum. Shuffle results are thread[1] values, so the result is too.
#[prism::prism_device(requires(thread[32]), returns = thread[1])]
pub fn warp_sum(#[at(thread[1])] v: f32) -> f32 {
    #[at(thread[1])]
    let mut x: f32 = v;
    for k in 0..5 {
        x += shfl_xor(x, 16u32 >> k);
    }
    x // the tail expression is the result
}

#[prism::prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn warp_sums(x: *const f32, y: *mut f32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(
        y,
        thread[1],
        |j| i + j,
        |y_t| {
            #[at(thread[1])]
            let v: f32 = x[i];
            #[at(thread[1])]
            let s: f32 = warp_sum(v);
            group(thread[1], || {
                y_t[0] = s;
            });
        },
    );
}

#[prism::prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128, smem = 512)]
pub fn reverse_tiles(x: *const f32, y: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(
        y,
        block[1],
        |j| b * 128 + j,
        |y_blk| {
            group(block[1], || {
                let s: Shared<[f32; 128]>; // 512 bytes, counted against `smem`
                #[at(thread[1])]
                let t: u32 = id();
                async_(s, |s_async| {
                    // inside, only async copies may use `s_async`
                    group(thread[1], || {
                        cp_async(s_async, t, x, b * 128 + t, 4); // 4 bytes: element t of the tile
                    });
                });
                // Reading `s` here: the compiler waits for the copies and syncs the block first.
                partition(
                    y_blk,
                    thread[1],
                    |j| t + j,
                    |y_t| {
                        group(thread[1], || {
                            y_t[0] = s[127 - t];
                        });
                    },
                );
            });
        },
    );
}

// docs/GUIDE.md §2, verbatim: a block's sum through shared memory, by hand (the library has
// `prism_kernels::block_reduce`): each level reads in block code, then writes through a new partition.
#[prism::prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128, smem = 512)]
pub fn block_sums(x: *const f32, sums: *mut f32, n: u32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(
        sums,
        block[1],
        |k| b + k,
        |sum_b| {
            group(block[1], || {
                let s: Shared<[f32; 128]>;
                #[at(thread[1])]
                let t: u32 = id();
                partition(
                    s,
                    thread[1],
                    |k| t + k,
                    |s_t| {
                        group(thread[1], || {
                            s_t[0] = if b * 128 + t < n { x[b * 128 + t] } else { 0.0 };
                        });
                    },
                );
                for level in 0..7 {
                    let stride: u32 = 64 >> level;
                    // Every thread reads (its pair, or nothing) before any writes: the compiler places the
                    // barriers between the reads and the writes, and between the levels.
                    #[at(thread[1])]
                    let v: f32 = if t < stride {
                        s[t] + s[t + stride]
                    } else {
                        0.0
                    };
                    partition(
                        s,
                        thread[1],
                        |k| t + k,
                        |s_t| {
                            group(thread[1], || {
                                if t < stride {
                                    s_t[0] = v;
                                }
                            });
                        },
                    );
                }
                claim(sum_b, thread[1], |one| match split(thread) {
                    1 => {
                        one[0] = s[0];
                    }
                });
            });
        },
    );
}

/// Each 128-element chunk of `x` summed into `sums[b]` (within f32 rounding of the f64 sum).
fn assert_block_sums(x: &[f32], sums: &[f32]) {
    for (b, chunk) in x.chunks(128).enumerate() {
        let want: f64 = chunk.iter().map(|v| *v as f64).sum();
        assert!(
            (sums[b] as f64 - want).abs() < 1e-4,
            "n = {}, block {b}: {} vs {want}",
            x.len(),
            sums[b]
        );
    }
}

#[test]
fn guide_block_sums_run() {
    let dev = device();
    let mut rng = Rng::new(35);
    // Ragged: the last block's tail reads zeros.
    for n in [1usize, 128, 300, 1000] {
        let x = rng.f32s(n);
        let blocks = n.div_ceil(128);
        let dx = dev.htod(&x).unwrap();
        let mut ds = dev.htod(&vec![SENTINEL_F32; blocks]).unwrap();
        block_sums::launch(
            &dev,
            LaunchDims::new(blocks as u32, 128),
            &dx,
            &mut ds,
            n as u32,
        )
        .unwrap();
        assert_block_sums(&x, &dev.dtoh(&ds).unwrap());
    }
}

/// The CUDA-style in-place tree reduction (user round I): each thread's view reads its partner's element at a
/// run-time index (`st[stride]`), which T-PARTITION cannot evaluate, so the synchronization inference counts
/// the view's accesses as the block's and places a barrier between the levels (docs/SYNC.md, "Views reached at
/// run-time indices"). Before, every launch was a data race.
#[prism::prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128)]
pub fn inplace_block_sums(x: *const f32, sums: *mut f32, n: u32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(
        sums,
        block[1],
        |k| b + k,
        |sum_b| {
            group(block[1], || {
                let s: Shared<[f32; 128]>;
                #[at(thread[1])]
                let t: u32 = id();
                partition(
                    s,
                    thread[1],
                    |k| t + k,
                    |st| {
                        group(thread[1], || {
                            st[0] = if b * 128 + t < n { x[b * 128 + t] } else { 0.0 };
                        });
                        for lvl in 0..7 {
                            let stride: u32 = 64u32 >> lvl;
                            group(thread[1], || {
                                if t < stride {
                                    st[0] += st[stride];
                                }
                            });
                        }
                    },
                );
                claim(sum_b, thread[1], |one| match split(thread) {
                    1 => {
                        one[0] = s[0];
                    }
                });
            });
        },
    );
}

#[test]
fn inplace_tree_reduction_is_ordered() {
    let mut rng = Rng::new(36);
    for seed in 0..4u64 {
        let dev = e2e_util::emulator_or_gpu(prism::runtime::emu::EmuConfig {
            schedule: prism::runtime::emu::Schedule::Random { seed },
            ..Default::default()
        });
        let n = [1usize, 128, 300, 1000][seed as usize];
        let x = rng.f32s(n);
        let blocks = n.div_ceil(128);
        let dx = dev.htod(&x).unwrap();
        let mut ds = dev.htod(&vec![SENTINEL_F32; blocks]).unwrap();
        inplace_block_sums::launch(
            &dev,
            LaunchDims::new(blocks as u32, 128),
            &dx,
            &mut ds,
            n as u32,
        )
        .unwrap();
        assert_block_sums(&x, &dev.dtoh(&ds).unwrap());
    }
}

#[test]
fn guide_examples_run() {
    let dev = device();
    let mut rng = Rng::new(31);
    let x = rng.f32s(256);
    let dx = dev.htod(&x).unwrap();
    let mut dy = dev.htod(&vec![SENTINEL_F32; 256]).unwrap();
    warp_sums::launch(&dev, LaunchDims::new(2, 128), &dx, &mut dy).unwrap();
    let y = dev.dtoh(&dy).unwrap();
    for (w, chunk) in x.chunks(32).enumerate() {
        let want: f64 = chunk.iter().map(|v| *v as f64).sum();
        for l in 0..32 {
            let got = y[w * 32 + l] as f64;
            assert!(
                (got - want).abs() < 1e-4,
                "warp {w} lane {l}: {got} vs {want}"
            );
        }
    }
    let mut dy = dev.htod(&vec![SENTINEL_F32; 256]).unwrap();
    reverse_tiles::launch(&dev, LaunchDims::new(2, 128), &dx, &mut dy).unwrap();
    let y = dev.dtoh(&dy).unwrap();
    for b in 0..2 {
        for t in 0..128 {
            assert_eq!(y[b * 128 + t], x[b * 128 + 127 - t], "block {b} thread {t}");
        }
    }
}

// Float `%` is Rust's exact remainder (fmod), not `x - trunc(x / y) * y` with a rounding at each step.

#[prism::prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn rem_f32(a: *const f32, b: *const f32, out: *mut f32, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(
        out,
        thread[1],
        |j| i + j,
        |o| {
            group(thread[1], || {
                if i < n {
                    o[0] = a[i] % b[i];
                }
            });
        },
    );
}

#[prism::prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn rem_f64(a: *const f64, b: *const f64, out: *mut f64, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(
        out,
        thread[1],
        |j| i + j,
        |o| {
            group(thread[1], || {
                if i < n {
                    o[0] = a[i] % b[i];
                }
            });
        },
    );
}

/// Operand pairs: the hard cases (huge quotients, subnormals, zeros, infinities, NaN, equal magnitudes,
/// the extremes of the exponent range) and random bit patterns of every exponent.
fn rem_cases<T: Copy>(
    special: &[(f64, f64)],
    conv: impl Fn(f64) -> T,
    random: impl Fn(&mut Rng) -> T,
    rng: &mut Rng,
) -> (Vec<T>, Vec<T>) {
    let (mut a, mut b): (Vec<T>, Vec<T>) = special.iter().map(|&(x, y)| (conv(x), conv(y))).unzip();
    for _ in 0..1500 {
        a.push(random(rng));
        b.push(random(rng));
    }
    (a, b)
}

const REM_SPECIAL: [(f64, f64); 22] = [
    (1e10, 3.0),
    (97051.67, -1.8494555),
    (16777216.0, 0.1),
    (-1e10, 3.0),
    (7.5, 2.0),
    (-7.5, 2.0),
    (6.0, 3.0),
    (-6.0, 3.0),
    (3.0, 3.0),
    (-3.0, -3.0),
    (0.0, 1.0),
    (-0.0, 1.0),
    (1.0, 0.0),
    (f64::INFINITY, 2.0),
    (2.0, f64::INFINITY),
    (-2.0, f64::NEG_INFINITY),
    (f64::NAN, 1.0),
    (1.0, f64::NAN),
    (1e-40, 3e-42),
    (3.0e38, 1.0e-45),
    (-3.0e38, 7.0e-39),
    (1.5, 1e-44),
];

fn same_value<T: PartialEq + Copy>(
    got: T,
    want: T,
    nan: impl Fn(T) -> bool,
    bits: impl Fn(T) -> u64,
) -> bool {
    (nan(got) && nan(want)) || bits(got) == bits(want)
}

#[test]
fn float_remainder_is_exact_as_rust() {
    let dev = device();
    let mut rng = Rng::new(41);
    let (a, b) = rem_cases(
        &REM_SPECIAL,
        |x| x as f32,
        |r| f32::from_bits(r.next_u64() as u32),
        &mut rng,
    );
    let n = a.len();
    let (da, db) = (dev.htod(&a).unwrap(), dev.htod(&b).unwrap());
    let mut dout = dev.htod(&vec![SENTINEL_F32; n]).unwrap();
    let grid = n.div_ceil(128) as u32;
    rem_f32::launch(
        &dev,
        LaunchDims::new(grid, 128),
        &da,
        &db,
        &mut dout,
        n as u32,
    )
    .unwrap();
    let got = dev.dtoh(&dout).unwrap();
    for i in 0..n {
        let want = a[i] % b[i];
        assert!(
            same_value(got[i], want, f32::is_nan, |x| x.to_bits() as u64),
            "f32 {:e} % {:e}: got {:e} ({:#x}), Rust {:e} ({:#x})",
            a[i],
            b[i],
            got[i],
            got[i].to_bits(),
            want,
            want.to_bits()
        );
    }
    let extra = [
        (1.7e308, 5e-324),
        (-1e300, 3.0),
        (1e17, 0.7),
        (-3.3e20, 1.1),
        (2.2e-308, 4.9e-324),
    ];
    let special: Vec<(f64, f64)> = REM_SPECIAL.iter().chain(&extra).copied().collect();
    let (a, b) = rem_cases(&special, |x| x, |r| f64::from_bits(r.next_u64()), &mut rng);
    let n = a.len();
    let (da, db) = (dev.htod(&a).unwrap(), dev.htod(&b).unwrap());
    let mut dout = dev.htod(&vec![f64::from(SENTINEL_F32); n]).unwrap();
    rem_f64::launch(
        &dev,
        LaunchDims::new(n.div_ceil(128) as u32, 128),
        &da,
        &db,
        &mut dout,
        n as u32,
    )
    .unwrap();
    let got = dev.dtoh(&dout).unwrap();
    for i in 0..n {
        let want = a[i] % b[i];
        assert!(
            same_value(got[i], want, f64::is_nan, f64::to_bits),
            "f64 {:e} % {:e}: got {:e} ({:#x}), Rust {:e} ({:#x})",
            a[i],
            b[i],
            got[i],
            got[i].to_bits(),
            want,
            want.to_bits()
        );
    }
}

/// A run-time index past a shared allocation (a `t + j` partition of 128 elements in a block of 256
/// threads, with no `threads =` to bound the block) faults instead of writing the next allocation
/// (SHARED-INDEX): the access goes to an address past every shared window, so the launch is an error (an
/// `OutOfBounds` fault on the emulator). In bounds, the same kernel computes its result.
#[prism_macros::prism_kernel(requires(grid[1], block[1], thread[1]), smem = 1024)]
pub fn shared_index_by_thread(y: *mut f32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(
        y,
        block[1],
        |j| b + j,
        |yb| {
            group(block[1], || {
                let s1: Shared<[f32; 128]>;
                let s2: Shared<[f32; 128]>;
                #[at(thread[1])]
                let t: u32 = id();
                partition(
                    s2,
                    thread[1],
                    |j| t + j,
                    |st| {
                        group(thread[1], || {
                            st[0] = 5.0;
                        });
                    },
                );
                partition(
                    s1,
                    thread[1],
                    |j| t + j,
                    |st| {
                        group(thread[1], || {
                            st[0] = 1.0;
                        });
                    },
                );
                claim(yb, thread[1], |y1| match split(thread) {
                    1 => {
                        y1[0] = s1[0] + s2[127];
                    }
                });
            });
        },
    );
}

#[test]
fn shared_index_out_of_bounds_faults() {
    let dev = device();
    let mut y = dev.htod(&[SENTINEL_F32]).unwrap();
    shared_index_by_thread::launch(&dev, LaunchDims::new(1, 128), &mut y).unwrap();
    assert_eq!(dev.dtoh(&y).unwrap(), vec![6.0]);
    let err = shared_index_by_thread::launch(&dev, LaunchDims::new(1, 256), &mut y)
        .expect_err("threads 128.. index past the 128 elements");
    let text = err.to_string();
    if dev.backend() == prism::Backend::Emulator {
        assert!(
            text.contains("OutOfBounds") && text.contains("out of bounds of a shared allocation"),
            "{text}"
        );
    }
}

// Names as Rust spells them: raw identifiers (keywords as names) and non-ASCII letters, for kernels,
// parameters and device functions. PTX names are ASCII: the entry of `données` is `donn_ue9_es`.

/// `r#type[i] = r#loop(x[i])`, in a kernel named with a keyword.
#[prism::prism_device(requires(thread[1]))]
pub fn r#loop(v: f32) -> f32 {
    v * 2.0 + 1.0
}

#[prism::prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn r#match(x: *const f32, r#type: *mut f32, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(
        r#type,
        thread[1],
        |j| i + j,
        |o| {
            group(thread[1], || {
                if i < n {
                    o[0] = r#loop(x[i]);
                }
            });
        },
    );
}

/// `sortie[i] = doublé(entrée[i])`.
#[prism::prism_device(requires(thread[1]))]
pub fn doublé(v: f32) -> f32 {
    v + v
}

#[prism::prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn données(entrée: *const f32, sortie: *mut f32, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(
        sortie,
        thread[1],
        |j| i + j,
        |s| {
            group(thread[1], || {
                if i < n {
                    s[0] = doublé(entrée[i]);
                }
            });
        },
    );
}

#[test]
fn raw_and_non_ascii_names() {
    assert!(r#match::PTX.contains(".entry match("), "{}", r#match::PTX);
    assert!(
        données::PTX.contains(".entry donn_ue9_es("),
        "{}",
        données::PTX
    );
    let dev = device();
    let mut rng = Rng::new(34);
    let n = 77usize;
    let x = rng.f32s(n);
    let dx = dev.htod(&x).unwrap();
    let mut dy = dev.htod(&vec![SENTINEL_F32; n]).unwrap();
    r#match::launch(&dev, LaunchDims::new(2, 64), &dx, &mut dy, n as u32).unwrap();
    let y = dev.dtoh(&dy).unwrap();
    for i in 0..n {
        assert_eq!(y[i], x[i] * 2.0 + 1.0, "r#match: y[{i}]");
    }
    let mut dz = dev.htod(&vec![SENTINEL_F32; n]).unwrap();
    données::launch(&dev, LaunchDims::new(3, 32), &dx, &mut dz, n as u32).unwrap();
    let z = dev.dtoh(&dz).unwrap();
    for i in 0..n {
        assert_eq!(z[i], x[i] + x[i], "données: z[{i}]");
    }
}

// A device function named like a generic helper that another crate's generic function calls by its bare
// name (`prism_ext_crate::lane_total_sq` calls its own `lane_total::<T>`): each call keeps its own callee.

/// The warp's largest value: this crate's `lane_total`.
#[prism::prism_device(requires(thread[32]), returns = thread[1])]
pub fn lane_total(#[at(thread[1])] v: f32) -> f32 {
    #[at(thread[1])]
    let mut x: f32 = v;
    for k in 0..5 {
        x = x.max(shfl_xor(x, 16u32 >> k));
    }
    x
}

#[prism::prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn sum_sq_plus_max(x: *const f32, y: *mut f32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(
        y,
        thread[1],
        |j| i + j,
        |yt| {
            group(thread[32], || {
                #[at(thread[1])]
                let v: f32 = prism_ext_crate::lane_total_sq::<f32>(x[i]) + lane_total(x[i]);
                group(thread[1], || {
                    yt[0] = v;
                });
            });
        },
    );
}

#[test]
fn a_local_function_does_not_take_over_a_library_functions_generic_callee() {
    let dev = device();
    let n = 64usize;
    // Small integers: the sums are exact in any order.
    let x: Vec<f32> = (0..n).map(|i| ((i * 7 + 3) % 11) as f32 - 5.0).collect();
    let dx = dev.htod(&x).unwrap();
    let mut dy = dev.htod(&vec![SENTINEL_F32; n]).unwrap();
    sum_sq_plus_max::launch(&dev, LaunchDims::new(1, 64), &dx, &mut dy).unwrap();
    let y = dev.dtoh(&dy).unwrap();
    for w in 0..2 {
        let lanes = &x[32 * w..32 * w + 32];
        let sq: f32 = lanes.iter().map(|v| v * v).sum();
        let max = lanes.iter().cloned().fold(f32::MIN, f32::max);
        for l in 0..32 {
            assert_eq!(y[32 * w + l], sq + max, "warp {w}, lane {l}");
        }
    }
}
