//! nvcc round 34 (fixture `round34.cu` → `round34.ptx`, `-arch=sm_90a -O3`): CUB collectives not used
//! before (`BlockExchange`, `BlockShuffle`, `BlockRunLengthDecode`, `WarpLoad`/`WarpMergeSort`/
//! `WarpExchange`/`WarpStore`), a hand-written decoupled look-back scan (`cuda::atomic_ref` acquire/release,
//! `__nanosleep`), cooperative-groups partitions, libcu++ atomics with orders and scopes, the Programming
//! Guide's distributed-shared-memory histogram, f64/f32 library functions, half/bf16 arithmetic and
//! conversions, 128-bit integers, 128-bit `atomicCAS`, a dense `switch` with local arrays, named barriers
//! between warp roles, and Hopper bulk copies through `cuda::ptx`. Every output element is checked against
//! a host reference on seeded random inputs, under the round-robin, lockstep and random schedules, with
//! race detection on.

mod common;

use common::{check, configs, Dev, Rng};
use prism_runtime::emu::*;

fn module() -> Module {
    common::fixture_module("round34.ptx")
}

/// Sentinel for outputs: an element the kernel should have written but did not shows as this.
const UNSET: i32 = common::UNSET_BITS as i32;

use ParamValue::{Ptr, I32};

// ---------------------------------------------------------------- K1: BlockExchange + BlockShuffle

#[test]
fn cub_exchange_shuffle_matches_host() {
    let m = module();
    let blocks = 3usize;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3401);
        let x = rng.ints(blocks * 512, -100_000, 100_000);
        let mut d = Dev::new(cfg);
        let xin = d.up(&x);
        let (o0, o1, o2, sh) = (
            d.unset(blocks * 512),
            d.unset(blocks * 512),
            d.unset(blocks * 512),
            d.unset(blocks * 128 * 6),
        );
        d.run(
            &m,
            "cub_exchange_shuffle",
            (blocks as u32, 128, 0),
            &[Ptr(xin), Ptr(o0), Ptr(o1), Ptr(o2), Ptr(sh)],
        );
        let (mut w0, mut w1, mut w2, mut wsh) = (
            vec![0; blocks * 512],
            vec![0; blocks * 512],
            vec![0; blocks * 512],
            vec![0; blocks * 768],
        );
        for b in 0..blocks {
            let xs = &x[b * 512..][..512];
            for t in 0..128 {
                let (warp, lane) = (t / 32, t % 32);
                for k in 0..4 {
                    w0[b * 512 + t * 4 + k] = xs[t * 4 + k] * 2 + 1;
                    w1[b * 512 + t * 4 + k] = xs[warp * 128 + k * 32 + lane];
                }
            }
            for r in 0..512 {
                // the item at warp-striped position p = 511 - r goes to striped rank r
                w2[b * 512 + r] = xs[511 - r];
            }
            for t in 0..128usize {
                let o = &mut wsh[(b * 128 + t) * 6..][..6];
                o[0] = if t + 3 < 128 { xs[(t + 3) * 4] } else { -1 };
                o[1] = xs[((t + 5) % 128) * 4 + 1];
                let prev0 = if t > 0 { xs[(t - 1) * 4 + 3] } else { -7 };
                o[2] = prev0 + xs[t * 4 + 2];
                let next3 = if t < 127 { xs[(t + 1) * 4] } else { -9 };
                o[3] = next3 - xs[t * 4 + 1];
                o[4] = xs[127 * 4 + 3];
                o[5] = xs[0];
            }
        }
        check(
            &format!("{name}: out0"),
            &d.down::<i32>(o0, blocks * 512),
            &w0,
        );
        check(
            &format!("{name}: out1"),
            &d.down::<i32>(o1, blocks * 512),
            &w1,
        );
        check(
            &format!("{name}: out2"),
            &d.down::<i32>(o2, blocks * 512),
            &w2,
        );
        check(
            &format!("{name}: shuffles"),
            &d.down::<i32>(sh, blocks * 768),
            &wsh,
        );
    }
}

// ---------------------------------------------------------------- K2: BlockRunLengthDecode

#[test]
fn cub_run_length_decode_matches_host() {
    let m = module();
    let blocks = 4usize;
    let cap = 64 * 2 * 7;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3402);
        let vals = rng.ints(blocks * 128, -1000, 1000);
        // lengths 1..=6; CUB allows zero-length runs only at the end: block 3 ends with 50 of them
        let mut lens = rng.ints(blocks * 128, 1, 7);
        for l in &mut lens[3 * 128 + 78..] {
            *l = 0;
        }
        let mut d = Dev::new(cfg);
        let (vin, lin) = (d.up(&vals), d.up(&lens));
        let (dec, rel, tot) = (
            d.unset(blocks * cap),
            d.unset(blocks * cap),
            d.unset(blocks),
        );
        d.run(
            &m,
            "cub_rld",
            (blocks as u32, 64, 0),
            &[Ptr(vin), Ptr(lin), Ptr(dec), Ptr(rel), Ptr(tot)],
        );
        let (gd, gr, gt) = (
            d.down::<i32>(dec, blocks * cap),
            d.down::<i32>(rel, blocks * cap),
            d.down::<i32>(tot, blocks),
        );
        for b in 0..blocks {
            let mut wd = vec![UNSET; cap];
            let mut wr = vec![UNSET; cap];
            let mut pos = 0usize;
            for r in 0..128 {
                for k in 0..lens[b * 128 + r] as usize {
                    wd[pos] = vals[b * 128 + r];
                    wr[pos] = k as i32;
                    pos += 1;
                }
            }
            assert_eq!(gt[b], pos as i32, "{name}: block {b} total");
            check(
                &format!("{name}: block {b} decoded"),
                &gd[b * cap..][..cap],
                &wd,
            );
            check(
                &format!("{name}: block {b} relative offsets"),
                &gr[b * cap..][..cap],
                &wr,
            );
        }
    }
}

// ---------------------------------------------------------------- K3: warp merge sort

#[test]
fn warp_merge_sort_matches_host() {
    let m = module();
    let blocks = 2usize;
    let n = blocks * 512;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3403);
        let x = rng.ints(n, -200, 200);
        let mut d = Dev::new(cfg);
        let xin = d.up(&x);
        let (ko, vo) = (d.unset(n), d.unset(n));
        d.run(
            &m,
            "warp_merge_sort",
            (blocks as u32, 128, 0),
            &[Ptr(xin), Ptr(ko), Ptr(vo)],
        );
        let (mut wk, mut wv) = (vec![0; n], vec![0; n]);
        for seg in 0..n / 64 {
            let base = seg * 64;
            // WarpLoad transpose: lane l item i = in[base + l*4 + i] (blocked), value = base + l*4 + i
            let mut pairs: Vec<(i32, i32)> =
                (0..64).map(|j| (x[base + j], (base + j) as i32)).collect();
            pairs.sort_by_key(|p| std::cmp::Reverse(p.0 >> 2));
            // blocked -> striped, stored striped: the sorted sequence in order
            for (j, (k, v)) in pairs.into_iter().enumerate() {
                wk[base + j] = k;
                wv[base + j] = v;
            }
        }
        check(&format!("{name}: keys"), &d.down::<i32>(ko, n), &wk);
        check(&format!("{name}: values"), &d.down::<i32>(vo, n), &wv);
    }
}

// ---------------------------------------------------------------- K4: hand-written look-back scan

#[test]
fn lookback_scan_hand_matches_host() {
    let m = module();
    for (name, cfg) in configs() {
        for n in [512usize * 9, 512 * 6 + 77] {
            let mut rng = Rng(0x3404 + n as u64);
            let x: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
            let tiles = n.div_ceil(512);
            let mut d = Dev::new(cfg.clone());
            let xin = d.up(&x);
            let out = d.unset(n);
            let status = d.up(&vec![0u64; tiles]);
            let counter = d.up(&[0u32]);
            d.run(
                &m,
                "lookback_scan_hand",
                (tiles as u32, 128, 0),
                &[Ptr(xin), Ptr(out), Ptr(status), Ptr(counter), I32(n as i32)],
            );
            let mut acc = 0u32;
            let want: Vec<u32> = x
                .iter()
                .map(|&v| {
                    acc = acc.wrapping_add(v);
                    acc
                })
                .collect();
            check(&format!("{name}: n {n}"), &d.down::<u32>(out, n), &want);
        }
    }
}

// ---------------------------------------------------------------- K5: cooperative-groups partitions

#[test]
fn cg_partitions_match_host() {
    let m = module();
    let blocks = 2usize;
    let n = blocks * 128;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3405);
        let x = rng.ints(n, -1000, 1000);
        let mut d = Dev::new(cfg);
        let xin = d.up(&x);
        let out = d.unset(n * 10);
        if let Err(err) = d.0.launch(
            &m,
            "cg_partitions",
            [blocks as u32, 1, 1],
            [16, 8, 1],
            0,
            &[Ptr(xin), Ptr(out)],
        ) {
            panic!("{name}: {err:?}");
        }
        let mut want = vec![0i32; n * 10];
        for g in 0..n {
            let r = g % 128;
            let (w0, t16, t8) = (g - r % 32, g - r % 16, g - r % 8);
            let o = &mut want[g * 10..][..10];
            let neg = x[g] < 0;
            let same: Vec<usize> = (w0..w0 + 32).filter(|&j| (x[j] < 0) == neg).collect();
            o[0] = same.iter().position(|&j| j == g).unwrap() as i32;
            o[1] = same.iter().map(|&j| x[j]).sum();
            o[2] = (t16..g).map(|j| x[j]).sum();
            o[3] = (t8..t8 + 8).map(|j| x[j]).max().unwrap();
            o[4] = (w0..w0 + 32).fold(0u32, |a, j| a ^ x[j] as u32) as i32;
            o[5] = ((r % 4) * 100 + 4) as i32;
            o[6] = ((r / 16) * 1000 + 8) as i32;
            let ballot = (0..8).fold(0u32, |a, k| a | (((x[t8 + k] & 1) as u32) << k));
            let any = (t8..t8 + 8).any(|j| x[j] > 900) as u32;
            let all = (t8..t8 + 8).all(|j| x[j] > -1000) as u32;
            o[7] = (ballot | any << 16 | all << 17) as i32;
            o[8] = (0..32).fold(0u32, |a, k| {
                a | (((x[w0 + k] & 7) == (x[g] & 7)) as u32) << k
            }) as i32;
            o[9] = x[t8];
        }
        check(
            &format!("{name}: cg_partitions"),
            &d.down::<i32>(out, n * 10),
            &want,
        );
    }
}

// ---------------------------------------------------------------- K6: libcu++ atomics

#[test]
fn atomic_ref_orders_match_host() {
    let m = module();
    let n = 1000usize;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3406);
        let mut x = rng.ints(n, -5000, 5000);
        for v in x.iter_mut() {
            if *v == 77 {
                *v = 78;
            }
        }
        x[613] = 77;
        let mut d = Dev::new(cfg);
        let xin = d.up(&x);
        let hist = d.up(&[0i32; 16]);
        let mm = d.up(&[u64::MAX, 0]);
        let fsum = d.up(&[0f32]);
        let dsum = d.up(&[0f64]);
        let fmax = d.up(&[f32::NEG_INFINITY]);
        let bits = d.up(&[0u32, u32::MAX, 0]);
        let last = d.up(&[-1i32]);
        d.run(
            &m,
            "atomic_ref_orders",
            (n.div_ceil(128) as u32, 128, 0),
            &[
                Ptr(xin),
                I32(n as i32),
                Ptr(hist),
                Ptr(mm),
                Ptr(fsum),
                Ptr(dsum),
                Ptr(fmax),
                Ptr(bits),
                Ptr(last),
            ],
        );
        let mut wh = [0i32; 16];
        let mut wb = [0u32, u32::MAX, 0];
        for &v in &x {
            wh[(v & 15) as usize] += 1;
            wb[0] |= 1 << (v & 31);
            wb[1] &= !(1u32 << ((v >> 5) & 31));
            wb[2] ^= (v as u32).wrapping_mul(2_654_435_761);
        }
        let keys: Vec<u64> = x
            .iter()
            .enumerate()
            .map(|(i, &v)| ((v as u32 as u64) << 20) | i as u64)
            .collect();
        check(&format!("{name}: hist"), &d.down::<i32>(hist, 16), &wh);
        check(
            &format!("{name}: min/max"),
            &d.down::<u64>(mm, 2),
            &[*keys.iter().min().unwrap(), *keys.iter().max().unwrap()],
        );
        check(
            &format!("{name}: float sum"),
            &d.down::<f32>(fsum, 1),
            &[x.iter().map(|&v| (v % 64) as f32).sum::<f32>()],
        );
        check(
            &format!("{name}: double sum"),
            &d.down::<f64>(dsum, 1),
            &[x.iter().map(|&v| v as f64 * 0.5).sum::<f64>()],
        );
        check(
            &format!("{name}: float max"),
            &d.down::<f32>(fmax, 1),
            &[x.iter()
                .map(|&v| v as f32 * 0.125)
                .fold(f32::NEG_INFINITY, f32::max)],
        );
        check(&format!("{name}: bits"), &d.down::<u32>(bits, 3), &wb);
        check(
            &format!("{name}: exchange"),
            &d.down::<i32>(last, 1),
            &[613],
        );
    }
}

// ---------------------------------------------------------------- K7: cluster distributed shared memory

#[test]
fn cluster_dsmem_histogram_matches_host() {
    let m = module();
    let (grid, block, nbins, bpb) = (4usize, 128usize, 64usize, 32usize);
    for (name, cfg) in configs() {
        for n in [3000usize, 511] {
            let mut rng = Rng(0x3407 + n as u64);
            let x = rng.ints(n, -5, 70);
            let mut d = Dev::new(cfg.clone());
            let xin = d.up(&x);
            let bins = d.up(&vec![0i32; nbins]);
            let ring = d.unset(grid * bpb);
            d.run(
                &m,
                "cluster_hist",
                (grid as u32, block as u32, (bpb * 4) as u32),
                &[
                    Ptr(bins),
                    Ptr(xin),
                    I32(nbins as i32),
                    I32(bpb as i32),
                    I32(n as i32),
                    Ptr(ring),
                ],
            );
            let clamp = |v: i32| v.clamp(0, nbins as i32 - 1) as usize;
            let mut wb = vec![0i32; nbins];
            // per cluster c: the elements i with (i % 512) / 256 == c
            let mut local = vec![vec![0i32; nbins]; grid / 2];
            for (i, &v) in x.iter().enumerate() {
                wb[clamp(v)] += 1;
                local[(i % (grid * block)) / (2 * block)][clamp(v)] += 1;
            }
            let mut wr = vec![0i32; grid * bpb];
            for blk in 0..grid {
                let (c, rank) = (blk / 2, blk % 2);
                let nb = (rank + 1) % 2;
                for t in 0..bpb {
                    wr[blk * bpb + t] = local[c][nb * bpb + t] * 10 + rank as i32;
                }
            }
            check(
                &format!("{name}: n {n} bins"),
                &d.down::<i32>(bins, nbins),
                &wb,
            );
            check(
                &format!("{name}: n {n} ring"),
                &d.down::<i32>(ring, grid * bpb),
                &wr,
            );
        }
    }
}

// ---------------------------------------------------------------- K12: 128-bit atomicCAS

#[test]
fn atomic_cas128_matches_host() {
    let m = module();
    let (n, nslots) = (700usize, 5usize);
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3412);
        let x: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
        let mut d = Dev::new(cfg);
        let xin = d.up(&x);
        let slots = d.up(&vec![0u64; 2 * nslots]);
        d.run(
            &m,
            "atomic_cas128",
            (n.div_ceil(128) as u32, 128, 0),
            &[Ptr(slots), Ptr(xin), I32(n as i32), I32(nslots as i32)],
        );
        let mut want = vec![0u64; 2 * nslots];
        for &v in &x {
            let s = (v as usize) % nslots;
            want[2 * s] += 1;
            want[2 * s + 1] += v as u64;
        }
        check(
            &format!("{name}: slots"),
            &d.down::<u64>(slots, 2 * nslots),
            &want,
        );
    }
}

// ---------------------------------------------------------------- K13: dense switch, local arrays, memcpy

fn op_of(k: i32, x: i32) -> i32 {
    match k {
        0 => x.wrapping_add(1),
        1 => x.wrapping_mul(3),
        2 => x ^ 0x55,
        3 => x.wrapping_sub(77),
        4 => x.wrapping_shl(2),
        5 => x >> 1,
        6 => !x,
        7 => x.wrapping_mul(x),
        8 => x | 0x100,
        9 => x & 0xff,
        10 => x.wrapping_neg(),
        11 => x / 7,
        12 => x % 11,
        13 => x.wrapping_add(1000),
        14 => x.wrapping_mul(5).wrapping_sub(2),
        15 => x ^ (x >> 3),
        _ => 12345,
    }
}

#[test]
fn switch_local_memcpy_matches_host() {
    let m = module();
    let n = 300usize;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3413);
        let x = rng.ints(n, -1_000_000, 1_000_000);
        let mut d = Dev::new(cfg);
        let xin = d.up(&x);
        let out = d.unset(2 * n);
        d.run(
            &m,
            "switch_local",
            (n.div_ceil(64) as u32, 64, 0),
            &[Ptr(xin), Ptr(out), I32(n as i32)],
        );
        let mut want = vec![0i32; 2 * n];
        for (i, &v) in x.iter().enumerate() {
            let loc: Vec<i32> = (0..24).map(|k| op_of((v + k) & 31, v + k)).collect();
            let j = ((v & 0x7fff_ffff) % 24) as usize;
            let len = ((v & 0x7fff_ffff) % 13) as usize;
            let mut cp = [0i32; 24];
            cp[..len].copy_from_slice(&loc[j % 11..j % 11 + len]);
            want[2 * i] = loc[j];
            want[2 * i + 1] = cp
                .iter()
                .fold(0i32, |s, &c| s.wrapping_mul(31).wrapping_add(c));
        }
        check(
            &format!("{name}: switch_local"),
            &d.down::<i32>(out, 2 * n),
            &want,
        );
    }
}

// ---------------------------------------------------------------- K14: named barriers between warp roles

#[test]
fn named_barrier_ring_matches_host() {
    let m = module();
    let blocks = 3usize;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3414);
        let x = rng.ints(blocks * 256, -1000, 1000);
        let mut d = Dev::new(cfg);
        let xin = d.up(&x);
        let out = d.unset(blocks * 64);
        d.run(
            &m,
            "named_barrier_ring",
            (blocks as u32, 96, 0),
            &[Ptr(xin), Ptr(out)],
        );
        let mut want = vec![0i32; blocks * 64];
        for b in 0..blocks {
            for w in 1..3usize {
                for l in 0..32usize {
                    want[(b * 2 + w - 1) * 32 + l] = (0..8)
                        .map(|r| x[b * 256 + r * 32 + (l + w) % 32] * (r as i32 + 1))
                        .sum();
                }
            }
        }
        check(
            &format!("{name}: ring"),
            &d.down::<i32>(out, blocks * 64),
            &want,
        );
    }
}

// ---------------------------------------------------------------- K15: bulk copies through cuda::ptx

#[test]
fn bulk_ptx_copy_matches_host() {
    let m = module();
    let (blocks, chunks) = (2usize, 5usize);
    let n = blocks * chunks * 256;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3415);
        let x: Vec<f32> = rng
            .ints(n, -10000, 10000)
            .into_iter()
            .map(|v| v as f32 * 0.25)
            .collect();
        let mut d = Dev::new(cfg);
        let xin = d.up(&x);
        let out = d.unset(n);
        d.run(
            &m,
            "bulk_ptx_copy",
            (blocks as u32, 256, 0),
            &[Ptr(xin), Ptr(out), I32(chunks as i32)],
        );
        let want: Vec<f32> = (0..n)
            .map(|i| x[i] * 2.0 + ((i / 256) % chunks) as f32)
            .collect();
        check(&format!("{name}: bulk copy"), &d.down::<f32>(out, n), &want);
    }
}

// ---------------------------------------------------------------- K16: cuda::std complex and bit utilities

#[test]
fn cuda_std_misc_matches_host() {
    let m = module();
    let n = 200usize;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3416);
        let a: Vec<f32> = rng
            .ints(2 * n, -40000, 40000)
            .into_iter()
            .map(|v| v as f32 / 1024.0)
            .collect();
        let mut u: Vec<u32> = (0..n)
            .map(|_| (rng.next() >> (rng.next() % 32)) as u32)
            .collect();
        u[0] = 0;
        u[1] = u32::MAX;
        let mut d = Dev::new(cfg);
        let (ain, uin) = (d.up(&a), d.up(&u));
        let (fo, io) = (d.unset(8 * n), d.unset(6 * n));
        d.run(
            &m,
            "cuda_std_misc",
            (n.div_ceil(64) as u32, 64, 0),
            &[Ptr(ain), Ptr(uin), Ptr(fo), Ptr(io), I32(n as i32)],
        );
        let (gf, gi) = (d.down::<f32>(fo, 8 * n), d.down::<i32>(io, 6 * n));
        for i in 0..n {
            let (zr, zi) = (a[2 * i] as f64, a[2 * i + 1] as f64);
            let (wr, wi) = ((a[2 * i + 1] + 0.5) as f64, -(a[2 * i] as f64));
            let den = wr * wr + wi * wi;
            let (er, ei) = (zr * 0.25, zi * 0.25);
            let want = [
                zr * wr - zi * wi,
                zr * wi + zi * wr,
                (zr * wr + zi * wi) / den,
                (zi * wr - zr * wi) / den,
                zr.hypot(zi),
                wi.atan2(wr),
                er.exp() * ei.cos(),
                er.exp() * ei.sin(),
            ];
            let scale = [
                zr.hypot(zi) * wr.hypot(wi),
                0.0,
                zr.hypot(zi) / wr.hypot(wi),
                0.0,
                0.0,
                0.0,
                er.exp(),
                0.0,
            ];
            for k in 0..8 {
                let s = if k % 2 == 1 && k < 4 {
                    scale[k - 1]
                } else {
                    scale[k].max(want[k].abs())
                };
                let got = gf[8 * i + k] as f64;
                assert!(
                    (got - want[k]).abs() <= 4e-6 * s.max(1e-3),
                    "{name}: element {i} float {k}: got {got}, want {}",
                    want[k]
                );
            }
            let x = u[i];
            let floor = if x == 0 {
                0
            } else {
                1u32 << (31 - x.leading_zeros())
            };
            let wi6 = [
                x.count_ones() as i32,
                x.leading_zeros() as i32,
                x.trailing_ones() as i32,
                x.rotate_left((i % 37) as u32) as i32,
                (32 - x.leading_zeros()) as i32,
                floor as i32 ^ a[2 * i].to_bits() as i32,
            ];
            check(
                &format!("{name}: element {i} bits"),
                &gi[6 * i..][..6],
                &wi6,
            );
        }
    }
}

// ---------------------------------------------------------------- K8, K9: f64 and f32 library functions

mod libm {
    extern "C" {
        pub fn lgamma(x: f64) -> f64;
        pub fn tgamma(x: f64) -> f64;
        pub fn erfc(x: f64) -> f64;
        pub fn erf(x: f64) -> f64;
        pub fn j0(x: f64) -> f64;
        pub fn j1(x: f64) -> f64;
        pub fn y0(x: f64) -> f64;
    }
}

/// erfc⁻¹(c) by Newton's method on the host's erfc.
fn erfcinv(c: f64) -> f64 {
    let mut t = 0.0f64;
    for _ in 0..200 {
        let f = unsafe { libm::erfc(t) } - c;
        let df = -2.0 / std::f64::consts::PI.sqrt() * (-t * t).exp();
        let nt = t - f / df;
        if nt == t {
            break;
        }
        t = nt;
    }
    t
}

/// erf⁻¹(y) by Newton's method on the host's erf.
fn erfinv(y: f64) -> f64 {
    let mut t = 0.0f64;
    for _ in 0..200 {
        let f = unsafe { libm::erf(t) } - y;
        let df = 2.0 / std::f64::consts::PI.sqrt() * (-t * t).exp();
        let nt = t - f / df;
        if nt == t {
            break;
        }
        t = nt;
    }
    t
}

/// sin(πx) with the argument reduced exactly.
fn sinpi(x: f64) -> f64 {
    let k = x.round();
    let s = (std::f64::consts::PI * (x - k)).sin();
    if (k as i64) % 2 == 0 {
        s
    } else {
        -s
    }
}

fn cospi(x: f64) -> f64 {
    let k = x.round();
    let c = (std::f64::consts::PI * (x - k)).cos();
    if (k as i64) % 2 == 0 {
        c
    } else {
        -c
    }
}

/// I₀(x) by its power series.
fn bessel_i0(x: f64) -> f64 {
    let (mut term, mut sum) = (1.0f64, 1.0f64);
    for k in 1..200 {
        term *= (x / 2.0) * (x / 2.0) / (k as f64 * k as f64);
        sum += term;
    }
    sum
}

fn near(what: &str, got: f64, want: f64, rel: f64, abs: f64) {
    assert!(
        (got - want).abs() <= rel * want.abs() + abs,
        "{what}: got {got:e}, want {want:e} (difference {:e})",
        (got - want).abs()
    );
}

#[test]
fn f64_special_functions_match_host() {
    let m = module();
    let n = 256usize;
    for (name, cfg) in configs().into_iter().take(2) {
        let mut rng = Rng(0x3408);
        let x: Vec<f64> = (0..n)
            .map(|_| 0.05 + (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 11.95)
            .collect();
        let y: Vec<f64> = (0..n)
            .map(|_| -0.99 + (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 1.98)
            .collect();
        let mut d = Dev::new(cfg);
        let (xa, ya) = (d.up(&x), d.up(&y));
        let out = d.up(&vec![f64::NAN; 20 * n]);
        d.run(
            &m,
            "f64_special",
            (n.div_ceil(64) as u32, 64, 0),
            &[Ptr(xa), Ptr(ya), Ptr(out), I32(n as i32)],
        );
        let g = d.down::<f64>(out, 20 * n);
        for i in 0..n {
            let (x, y) = (x[i], y[i]);
            let z = x * y;
            let want = unsafe {
                [
                    libm::lgamma(x),
                    libm::tgamma(x * 0.5),
                    erfcinv(y + 1.0),
                    0.5 * libm::erfc(-(y * 4.0) / std::f64::consts::SQRT_2),
                    -std::f64::consts::SQRT_2 * erfcinv(2.0 * ((y + 1.0) * 0.5)),
                    sinpi(x),
                    cospi(y * 3.0),
                    y.ln_1p(),
                    y.exp_m1(),
                    z.asinh(),
                    (x + 1.0).acosh(),
                    y.atanh(),
                    libm::j0(x),
                    libm::j1(x),
                    libm::y0(x),
                    bessel_i0(x),
                    (z * z).exp() * libm::erfc(z),
                    1.0 / x.cbrt(),
                    x.powf(y * 7.0),
                    10f64.powf(y * 3.0),
                ]
            };
            for (k, &w) in want.iter().enumerate() {
                let (rel, abs) = match k {
                    2 | 4 => (1e-12, 1e-15),
                    5 | 6 => (1e-13, 1e-15),
                    12..=14 => (1e-11, 1e-14),
                    16 => (1e-12, 0.0),
                    _ => (1e-13, 1e-300),
                };
                near(
                    &format!("{name}: element {i} (x {x}, y {y}) function {k}"),
                    g[20 * i + k],
                    w,
                    rel,
                    abs,
                );
            }
        }
    }
}

#[test]
fn f32_functions_match_host() {
    let m = module();
    let n = 256usize;
    for (name, cfg) in configs().into_iter().take(2) {
        let mut rng = Rng(0x3409);
        let x: Vec<f32> = (0..n)
            .map(|_| 0.05 + (rng.next() >> 40) as f32 / (1u32 << 24) as f32 * 11.95)
            .collect();
        let y: Vec<f32> = (0..n)
            .map(|_| -0.99 + (rng.next() >> 40) as f32 / (1u32 << 24) as f32 * 1.98)
            .collect();
        let mut d = Dev::new(cfg);
        let (xa, ya) = (d.up(&x), d.up(&y));
        let out = d.up(&vec![f32::NAN; 20 * n]);
        d.run(
            &m,
            "f32_funcs",
            (n.div_ceil(64) as u32, 64, 0),
            &[Ptr(xa), Ptr(ya), Ptr(out), I32(n as i32)],
        );
        let g = d.down::<f32>(out, 20 * n);
        for i in 0..n {
            let (xf, yf) = (x[i], y[i]);
            let (x, y) = (xf as f64, yf as f64);
            let y3 = (yf * 3.0) as f64;
            let want = unsafe {
                [
                    x / (yf + 2.0) as f64,
                    x.powf(y),
                    y3.sin(),
                    y3.cos(),
                    y.tan(),
                    x.ln(),
                    x.log2(),
                    x.log10(),
                    10f64.powf(y),
                    1.0 / x.sqrt(),
                    1.0 / x.hypot(y),
                    1.0 / (x * x + y * y + 2.25).sqrt(),
                    (x * x + y * y + 6.25).sqrt(),
                    sinpi(y),
                    erfinv(y),
                    libm::lgamma(x),
                    libm::tgamma((xf * 0.5) as f64),
                    0.5 * libm::erfc(-((yf * 3.0) as f64) / std::f64::consts::SQRT_2),
                    x.sin() * x.cos(),
                    1.0 / x.sqrt(),
                ]
            };
            for (k, &w) in want.iter().enumerate() {
                let (rel, abs) = match k {
                    2 | 3 | 5..=7 => (4e-6, 2e-6),
                    15 | 16 => (2e-6, 2e-6),
                    19 => (6e-8, 0.0),
                    _ => (2e-6, 1e-7),
                };
                near(
                    &format!("{name}: element {i} (x {xf}, y {yf}) function {k}"),
                    g[20 * i + k] as f64,
                    w,
                    rel,
                    abs,
                );
            }
        }
    }
}

// ---------------------------------------------------------------- K10: half and bf16

#[derive(Clone, Copy, PartialEq)]
enum Rnd {
    Near,
    Zero,
    Down,
    Up,
}

/// `v` rounded once to a binary format with `mant` fraction bits and exponent bias `bias` (f16: 10, 15;
/// bf16: 7, 127), as its bit pattern. `v` must be exact (the source value).
fn to_small(v: f64, mant: u32, bias: i32, mode: Rnd) -> u16 {
    let sign: u16 = if v.is_sign_negative() { 1 << 15 } else { 0 };
    let ebits = 15 - mant;
    let inf = (((1u32 << ebits) - 1) << mant) as u16;
    if v.is_nan() {
        return 0x7fff;
    }
    let a = v.abs();
    if a.is_infinite() {
        return sign | inf;
    }
    if a == 0.0 {
        return sign;
    }
    let e = ((a.to_bits() >> 52) as i32 - 1023).max(1 - bias);
    let ulp = 2f64.powi(e - mant as i32);
    let q = a / ulp;
    let away = |neg: bool| match mode {
        Rnd::Zero => false,
        Rnd::Down => neg,
        Rnd::Up => !neg,
        Rnd::Near => unreachable!(),
    };
    let qi = match mode {
        Rnd::Near => q.round_ties_even(),
        _ if away(sign != 0) => q.ceil(),
        _ => q.floor(),
    };
    let r = qi * ulp;
    let max = (2.0 - 2f64.powi(-(mant as i32))) * 2f64.powi(bias);
    if r > max {
        let to_inf = mode == Rnd::Near || away(sign != 0);
        return sign | if to_inf { inf } else { inf - 1 };
    }
    let re = (r.to_bits() >> 52) as i32 - 1023;
    if re < 1 - bias {
        return sign | (r / 2f64.powi(1 - bias - mant as i32)) as u16;
    }
    let frac = (r / 2f64.powi(re - mant as i32)) as u32 - (1 << mant);
    sign | (((re + bias) as u32) << mant | frac) as u16
}

fn small_val(b: u16, mant: u32, bias: i32) -> f64 {
    let sign = if b >> 15 == 1 { -1.0 } else { 1.0 };
    let e = ((b >> mant) & ((1 << (15 - mant)) - 1)) as i32;
    let f = (b & ((1 << mant) - 1)) as f64;
    let emax = (1 << (15 - mant)) - 1;
    if e == emax {
        return if f == 0.0 {
            sign * f64::INFINITY
        } else {
            f64::NAN
        };
    }
    if e == 0 {
        return sign * f * 2f64.powi(1 - bias - mant as i32);
    }
    sign * (1.0 + f / 2f64.powi(mant as i32)) * 2f64.powi(e - bias)
}

fn h(v: f64) -> u16 {
    to_small(v, 10, 15, Rnd::Near)
}
fn hv(b: u16) -> f64 {
    small_val(b, 10, 15)
}
fn bf(v: f64) -> u16 {
    to_small(v, 7, 127, Rnd::Near)
}
fn bv(b: u16) -> f64 {
    small_val(b, 7, 127)
}

fn half_bf16_ref(xf: f32, yf: f32) -> [u16; 24] {
    let (x, y) = (xf as f64, yf as f64);
    let (hx, hy) = (hv(h(x)), hv(h(y)));
    let (bx, by) = (bv(bf(x)), bv(bf(y)));
    let sat = |v: f64| hv(h(v)).clamp(0.0, 1.0);
    let r_lo = hv(h(hx * hv(h(hx + 1.5))));
    let r_hi = hv(h(hy * hv(h(hy + 1.5))));
    let hisinf = if hx == 0.0 {
        0
    } else if hx > 0.0 {
        1
    } else {
        -1
    };
    let o13 = (hx == hy) as i32 | (((hx < 0.0 && hy < 0.0) as i32) << 1) | (hisinf << 2);
    let i5000 = (xf * 5000.0).round_ties_even() as i32;
    let i1e5 = (yf * 100_000.0).round_ties_even() as i32;
    [
        h(sat(hx + hy)),
        h(sat(hx * hy + 0.25)),
        h(hx / hy),
        to_small(x, 10, 15, Rnd::Down),
        to_small(x, 10, 15, Rnd::Up),
        to_small((xf * 1000.0) as f64, 10, 15, Rnd::Zero),
        h(x * 3.0),
        (hv(h(hx * 100.0)).trunc() as i32) as u16,
        h(i5000 as f64),
        h(r_lo),
        h(r_hi),
        h(hx.max(-hy)),
        h(hy.abs()),
        o13 as u16,
        bf(bx + by),
        bf(bx * by),
        bf(bx * by - 0.75),
        bf(bx * bx + 0.5),
        bf(by * by + 0.5),
        to_small((xf * 7.0) as f64, 7, 127, Rnd::Zero),
        to_small((yf * 7.0) as f64, 7, 127, Rnd::Down),
        to_small((yf * 7.0) as f64, 7, 127, Rnd::Up),
        bf(x / 3.0),
        bf(i1e5 as f64),
    ]
}

#[test]
fn half_bf16_math_matches_host() {
    let m = module();
    let n = 512usize;
    for (name, cfg) in configs().into_iter().take(3) {
        let mut rng = Rng(0x3410);
        let mut x: Vec<f32> = rng
            .ints(n, -50_000, 50_000)
            .into_iter()
            .map(|v| v as f32 / 997.0)
            .collect();
        let mut y: Vec<f32> = rng
            .ints(n, -50_000, 50_000)
            .into_iter()
            .map(|v| v as f32 / 1009.0)
            .collect();
        x[0] = 0.0;
        y[1] = x[1];
        x[2] = 60.0; // x * 1000 overflows f16 (rz keeps the largest finite value)
        y[3] = 1.0e-6; // f16 subnormals
        x[4] = -2.0e-5;
        let mut d = Dev::new(cfg);
        let (xa, ya) = (d.up(&x), d.up(&y));
        let out = d.up(&vec![0x5a5au16; 24 * n]);
        d.run(
            &m,
            "half_bf16",
            (n.div_ceil(128) as u32, 128, 0),
            &[Ptr(xa), Ptr(ya), Ptr(out), I32(n as i32)],
        );
        let g = d.down::<u16>(out, 24 * n);
        for i in 0..n {
            let want = half_bf16_ref(x[i], y[i]);
            for k in 0..24 {
                assert_eq!(
                    g[24 * i + k],
                    want[k],
                    "{name}: element {i} (x {}, y {}) output {k}: got {:#06x}, want {:#06x}",
                    x[i],
                    y[i],
                    g[24 * i + k],
                    want[k]
                );
            }
        }
    }
}

// ---------------------------------------------------------------- K11: 128-bit and 64-bit integers

/// The PTX ISA's `fns`.
fn fns(mask: u32, base: u32, offset: i32) -> u32 {
    if offset == 0 {
        return if mask >> base & 1 == 1 {
            base
        } else {
            u32::MAX
        };
    }
    let (mut pos, mut count, inc) = (base as i32, offset.unsigned_abs() - 1, offset.signum());
    while (0..32).contains(&pos) {
        if mask >> pos & 1 == 1 {
            if count == 0 {
                return pos as u32;
            }
            count -= 1;
        }
        pos += inc;
    }
    u32::MAX
}

#[test]
fn int128_math_matches_host() {
    let m = module();
    let n = 320usize;
    for (name, cfg) in configs().into_iter().take(3) {
        let mut rng = Rng(0x3411);
        let a: Vec<u64> = (0..n).map(|_| rng.next() >> (rng.next() % 48)).collect();
        let b: Vec<u64> = (0..n).map(|_| rng.next() >> (rng.next() % 60)).collect();
        let mut d = Dev::new(cfg);
        let (aa, ba) = (d.up(&a), d.up(&b));
        let out = d.up(&vec![0x5a5a_5a5au64; 12 * n]);
        d.run(
            &m,
            "int128_math",
            (n.div_ceil(64) as u32, 64, 0),
            &[Ptr(aa), Ptr(ba), Ptr(out), I32(n as i32)],
        );
        let g = d.down::<u64>(out, 12 * n);
        for i in 0..n {
            let (x, y) = (a[i], b[i] | 1);
            let p = (x as u128)
                .wrapping_mul(y as u128)
                .wrapping_add((x ^ 0x5555) as u128 * 0x12_3456_7890);
            let sp = (x as i64 as i128) * ((y >> 3) as i64 as i128);
            let dd = (y >> (i % 40)) | 1;
            let sd = (dd | 0x100) as i64 as i128;
            let want = [
                p as u64,
                (p >> 64) as u64,
                (p / dd as u128) as u64,
                (p % dd as u128) as u64,
                (sp / sd) as u64,
                (sp % -sd) as i64 as u64,
                x / dd,
                ((x as i64) % ((dd >> 1 | 1) as i64)) as u64,
                (((x as u128 * y as u128) >> 64) as u64)
                    ^ (((x as i64 as i128 * y as i64 as i128) >> 64) as u64),
                x.reverse_bits()
                    .wrapping_add(fns(x as u32, (i % 32) as u32, (y % 9) as i32 - 4) as u64),
                a[n - 1 - i].wrapping_add((n - 1 - i) as u64),
                (p >> (y % 128)) as u64,
            ];
            check(
                &format!("{name}: element {i} (x {x:#x}, y {y:#x})"),
                &g[12 * i..][..12],
                &want,
            );
        }
    }
}

#[test]
fn atomic128_exch_atomic_ref_block_cas_match_host() {
    let m = module();
    let n = 600usize;
    let blocks = n.div_ceil(128);
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3417);
        let x: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
        let mut d = Dev::new(cfg);
        let xin = d.up(&x);
        let chain = d.up(&[u64::MAX, 0]);
        let olds = d.up(&vec![0x5a5a_5a5au64; 2 * n]);
        let total = d.up(&[0u64, 0]);
        let per_block = d.up(&vec![0x5a5a_5a5au64; 2 * blocks]);
        d.run(
            &m,
            "atomic128_ops",
            (blocks as u32, 128, 0),
            &[
                Ptr(chain),
                Ptr(olds),
                Ptr(total),
                Ptr(per_block),
                Ptr(xin),
                I32(n as i32),
            ],
        );
        // Every value written by an exchange comes back exactly once: as some thread's old value or as
        // the final one, and the initial value too.
        let g = d.down::<u64>(olds, 2 * n);
        let mut got: Vec<(u64, u64)> = g.chunks(2).map(|c| (c[0], c[1])).collect();
        let fin = d.down::<u64>(chain, 2);
        got.push((fin[0], fin[1]));
        got.sort_unstable();
        let mut want: Vec<(u64, u64)> = x
            .iter()
            .enumerate()
            .map(|(i, &v)| (i as u64, v as u64 * 3))
            .collect();
        want.push((u64::MAX, 0));
        want.sort_unstable();
        check(&format!("{name}: exchange chain"), &got, &want);
        check(
            &format!("{name}: atomic_ref total"),
            &d.down::<u64>(total, 2),
            &[n as u64, x.iter().map(|&v| v as u64).sum()],
        );
        let mut wb = Vec::new();
        for blk in 0..blocks {
            let vs = &x[blk * 128..((blk + 1) * 128).min(n)];
            wb.push(vs.len() as u64);
            wb.push(vs.iter().fold(0u64, |a, &v| a ^ v as u64));
        }
        check(
            &format!("{name}: per block"),
            &d.down::<u64>(per_block, 2 * blocks),
            &wb,
        );
    }
}

// ---------------------------------------------------------------- K18: thrust's sequential algorithms

#[test]
fn thrust_seq_algorithms_match_host() {
    let m = module();
    let n = 96usize;
    for (name, cfg) in configs().into_iter().take(3) {
        let mut rng = Rng(0x3418);
        // 24 distinct keys per thread (sort_by_key's order of equal keys is unspecified)
        let mut x = Vec::with_capacity(n * 24);
        for _ in 0..n {
            let mut ks: Vec<i32> = Vec::new();
            while ks.len() < 24 {
                let k = rng.range(-100, 100);
                if !ks.contains(&k) {
                    ks.push(k);
                }
            }
            x.extend(ks);
        }
        let mut d = Dev::new(cfg);
        let xin = d.up(&x);
        let out = d.unset(n * 52);
        d.run(
            &m,
            "thrust_seq",
            (n.div_ceil(32) as u32, 32, 0),
            &[Ptr(xin), Ptr(out), I32(n as i32)],
        );
        let mut want = Vec::with_capacity(n * 52);
        for t in 0..n {
            let ks = &x[t * 24..][..24];
            let mut pairs: Vec<(i32, i32)> =
                ks.iter().enumerate().map(|(j, &k)| (k, j as i32)).collect();
            pairs.sort_by_key(|p| std::cmp::Reverse(p.0));
            want.extend(pairs.iter().map(|p| p.0));
            want.extend(pairs.iter().map(|p| p.1));
            let mut s = ks.to_vec();
            s.sort();
            want.push(s.iter().filter(|&&k| k < 0).count() as i32);
            want.push(s.iter().sum());
            let mut sh: Vec<i32> = s.iter().map(|k| k >> 3).collect();
            sh.dedup();
            want.push(sh.len() as i32);
            want.push(s[..12].iter().sum());
        }
        check(
            &format!("{name}: thrust_seq"),
            &d.down::<i32>(out, n * 52),
            &want,
        );
    }
}

// ---------------------------------------------------------------- K19: 64-bit-key hash table

#[test]
fn hash_insert_matches_host() {
    let m = module();
    let (n, cap) = (900usize, 1024usize);
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3419);
        let distinct: Vec<u64> = (0..300).map(|_| rng.next() >> 1).collect();
        let x: Vec<u64> = (0..n)
            .map(|_| distinct[rng.next() as usize % distinct.len()])
            .collect();
        let mut d = Dev::new(cfg);
        let xin = d.up(&x);
        let keys = d.up(&vec![u64::MAX; cap]);
        let vals = d.up(&vec![0i32; cap]);
        d.run(
            &m,
            "hash_insert",
            (n.div_ceil(128) as u32, 128, 0),
            &[
                Ptr(keys),
                Ptr(vals),
                I32(cap as i32),
                Ptr(xin),
                I32(n as i32),
            ],
        );
        let (gk, gv) = (d.down::<u64>(keys, cap), d.down::<i32>(vals, cap));
        // Which slot a key lands in depends on the order of insertions; the table as a map does not.
        let mut got: Vec<(u64, i32)> = gk
            .iter()
            .zip(&gv)
            .filter(|(&k, _)| k != u64::MAX)
            .map(|(&k, &v)| (k, v))
            .collect();
        got.sort_unstable();
        let mut want: Vec<(u64, i32)> = Vec::new();
        let mut xs = x.clone();
        xs.sort_unstable();
        for k in xs {
            match want.last_mut() {
                Some((lk, c)) if *lk == k => *c += 1,
                _ => want.push((k, 1)),
            }
        }
        check(&format!("{name}: table"), &got, &want);
        // every key sits at or after its home slot, with no empty slot in between
        for (s, &k) in gk.iter().enumerate().filter(|(_, &k)| k != u64::MAX) {
            let home = ((k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as u32 % cap as u32) as usize;
            let mut p = home;
            while p != s {
                assert_ne!(
                    gk[p],
                    u64::MAX,
                    "{name}: key {k:#x} at slot {s}, home {home}, gap at {p}"
                );
                p = (p + 1) % cap;
            }
        }
    }
}

// ---------------------------------------------------------------- K20: cuda::std::atomic wait/notify

#[test]
fn atomic_wait_notify_hand_off_matches_host() {
    let m = module();
    let blocks = 3usize;
    for (name, cfg) in configs() {
        let mut rng = Rng(0x3420);
        let x = rng.ints(blocks * 128, -1000, 1000);
        let mut d = Dev::new(cfg);
        let xin = d.up(&x);
        let out = d.unset(blocks * 128);
        d.run(
            &m,
            "wait_notify",
            (blocks as u32, 64, 0),
            &[Ptr(xin), Ptr(out)],
        );
        let want: Vec<i32> = (0..blocks * 128)
            .map(|j| {
                let r = (j % 128) / 32 + 1;
                x[j] * r as i32 + 1
            })
            .collect();
        check(
            &format!("{name}: hand-off"),
            &d.down::<i32>(out, blocks * 128),
            &want,
        );
    }
}
