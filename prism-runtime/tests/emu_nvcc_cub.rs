//! CUB's block- and warp-level collectives as users write them, compiled by nvcc 13.5 for sm_90 against
//! CCCL 3.x (tests/fixtures/cub_block.ptx, from cub_block.cu): `BlockReduce` (three algorithms, partial
//! tiles), `BlockLoad`/`BlockScan`/`BlockStore` (three scan algorithms, direct and transposing loads),
//! `BlockRadixSort` (pairs, descending, float keys), `BlockMergeSort` with a comparator, `WarpReduce` and
//! `WarpScan` over logical warps of 8, 16 and 32 lanes, `BlockHistogram` (atomic and sort),
//! `BlockDiscontinuity` and `BlockAdjacentDifference`, and a single-pass scan on CUB's own decoupled
//! look-back (`ScanTileState` + `TilePrefixCallbackOp`, release/acquire status words). Every kernel runs
//! against a CPU reference on seeded random inputs, every output element checked, under the round-robin
//! schedule, in lockstep and under random schedules, with race detection on.

mod common;

use common::{configs, Rng};
use prism_runtime::emu::*;

fn module() -> Module {
    common::fixture_module("cub_block.ptx")
}

/// Sentinel for outputs: an element the kernel should have written but did not shows as this.
const UNSET: i32 = 0x5A5A_5A5A;

/// One emulator with helpers for i32 buffers.
struct Dev(Emulator);
impl Dev {
    fn new(cfg: EmuConfig) -> Self {
        Dev(Emulator::new(cfg))
    }
    fn upload_bytes(&mut self, bytes: &[u8]) -> u64 {
        let a = self.0.alloc(bytes.len().max(1));
        self.0.write(a, bytes).expect("write");
        a
    }
    fn upload(&mut self, v: &[i32]) -> u64 {
        let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.upload_bytes(&b)
    }
    fn unset(&mut self, n: usize) -> u64 {
        self.upload(&vec![UNSET; n])
    }
    fn read(&self, a: u64, n: usize) -> Vec<i32> {
        self.0
            .read(a, 4 * n)
            .expect("read")
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect()
    }
    fn launch(
        &mut self,
        m: &Module,
        entry: &str,
        grid: u32,
        block: u32,
        params: &[ParamValue],
        what: &str,
    ) {
        if let Err(err) = self
            .0
            .launch(m, entry, [grid, 1, 1], [block, 1, 1], 0, params)
        {
            panic!("{entry} ({what}): {err}");
        }
    }
}

#[test]
fn block_reduce_sum_and_max_over_partial_tiles() {
    let m = module();
    for (entry, block) in [
        ("block_reduce_warp", 256usize),
        ("block_reduce_raking", 192),
        ("block_reduce_commutative", 128),
    ] {
        // A full last tile, a ragged one, and a tile of a single element.
        for n in [2 * block, 3 * block + 77, block + 1] {
            let x = Rng(n as u64).ints(n, -1000, 1000);
            let blocks = n.div_ceil(block);
            let mut want = Vec::new();
            for t in x.chunks(block) {
                want.push(t.iter().sum::<i32>());
                want.push(*t.iter().max().expect("non-empty"));
            }
            for (what, cfg) in configs() {
                let mut d = Dev::new(cfg);
                let (din, dout) = (d.upload(&x), d.unset(2 * blocks));
                let p = [
                    ParamValue::Ptr(din),
                    ParamValue::Ptr(dout),
                    ParamValue::I32(n as i32),
                ];
                d.launch(&m, entry, blocks as u32, block as u32, &p, &what);
                assert_eq!(d.read(dout, 2 * blocks), want, "{entry}, n = {n}, {what}");
            }
        }
    }
}

#[test]
fn block_load_scan_store_in_three_algorithms() {
    let m = module();
    for (entry, block, items) in [
        ("block_scan_warp_scans", 128usize, 4usize),
        ("block_scan_raking", 96, 3),
        ("block_scan_raking_memoize", 256, 2),
    ] {
        let tile = block * items;
        let n = 2 * tile + tile / 3 + 5;
        let x = Rng(tile as u64).ints(n, -50, 100);
        let tiles = n.div_ceil(tile);
        for inclusive in [false, true] {
            let mut want = Vec::new();
            let mut totals = Vec::new();
            for t in x.chunks(tile) {
                let mut acc = 0;
                for &v in t {
                    if inclusive {
                        acc += v;
                        want.push(acc);
                    } else {
                        want.push(acc);
                        acc += v;
                    }
                }
                totals.push(acc);
            }
            for (what, cfg) in configs() {
                let mut d = Dev::new(cfg);
                let (din, dout, dtot) = (d.upload(&x), d.unset(n + 8), d.unset(tiles));
                let p = [
                    ParamValue::Ptr(din),
                    ParamValue::Ptr(dout),
                    ParamValue::Ptr(dtot),
                    ParamValue::I32(n as i32),
                    ParamValue::I32(inclusive as i32),
                ];
                d.launch(&m, entry, tiles as u32, block as u32, &p, &what);
                let got = d.read(dout, n + 8);
                let what = format!("{entry}, inclusive {inclusive}, {what}");
                assert_eq!(&got[..n], &want[..], "scan, {what}");
                assert!(got[n..].iter().all(|&v| v == UNSET), "wrote past n, {what}");
                assert_eq!(d.read(dtot, tiles), totals, "aggregates, {what}");
            }
        }
    }
}

#[test]
fn block_radix_sort_pairs_is_stable_both_ways() {
    let m = module();
    let tiles = 3usize;
    let n = 512 * tiles;
    let mut rng = Rng(7);
    // Tile 0: full-range keys; tile 1: 16 distinct keys (stability shows); tile 2: keys with high bits only.
    let keys: Vec<u32> = (0..n)
        .map(|i| match i / 512 {
            0 => rng.next() as u32,
            1 => (rng.next() % 16) as u32 * 0x0101_0101,
            _ => (rng.next() as u32) & 0xF000_0000,
        })
        .collect();
    let vals: Vec<i32> = (0..n as i32).collect();
    for descending in [false, true] {
        let mut want_k = Vec::new();
        let mut want_v = Vec::new();
        for t in 0..tiles {
            let mut pairs: Vec<(u32, i32)> = (t * 512..(t + 1) * 512)
                .map(|i| (keys[i], vals[i]))
                .collect();
            if descending {
                pairs.sort_by_key(|p| std::cmp::Reverse(p.0)); // stable: equal keys keep input order
            } else {
                pairs.sort_by_key(|p| p.0);
            }
            want_k.extend(pairs.iter().map(|p| p.0 as i32));
            want_v.extend(pairs.iter().map(|p| p.1));
        }
        for (what, cfg) in configs() {
            let mut d = Dev::new(cfg);
            let kb: Vec<i32> = keys.iter().map(|&k| k as i32).collect();
            let (dk, dv) = (d.upload(&kb), d.upload(&vals));
            let (ok, ov) = (d.unset(n), d.unset(n));
            let p = [
                ParamValue::Ptr(dk),
                ParamValue::Ptr(dv),
                ParamValue::Ptr(ok),
                ParamValue::Ptr(ov),
                ParamValue::I32(descending as i32),
            ];
            d.launch(&m, "block_radix_sort_pairs", tiles as u32, 128, &p, &what);
            assert_eq!(
                d.read(ok, n),
                want_k,
                "keys, descending {descending}, {what}"
            );
            assert_eq!(
                d.read(ov, n),
                want_v,
                "values, descending {descending}, {what}"
            );
        }
    }
}

#[test]
fn block_radix_sort_of_floats_orders_signs_and_keeps_zeros_stable() {
    let m = module();
    let n = 1024usize;
    let mut rng = Rng(11);
    let mut keys: Vec<f32> = (0..n)
        .map(|_| (rng.range(-1_000_000, 1_000_000) as f32) / 997.0)
        .collect();
    for (i, v) in [
        0.0f32,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE,
        -1e-40,
        1e30,
    ]
    .into_iter()
    .enumerate()
    {
        keys[i * 131] = v;
        keys[600 + i * 50] = v;
    }
    let mut want = Vec::new();
    for t in keys.chunks(512) {
        let mut s = t.to_vec();
        // CUB maps -0.0 to +0.0 before taking digits, so the two zeros are equal keys and keep their input
        // order (a stable sort on `partial_cmp`, not `total_cmp`, which puts -0.0 first).
        s.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
        want.extend(s.iter().map(|f| f.to_bits() as i32));
    }
    let kb: Vec<i32> = keys.iter().map(|f| f.to_bits() as i32).collect();
    for (what, cfg) in configs() {
        let mut d = Dev::new(cfg);
        let (dk, out) = (d.upload(&kb), d.unset(n));
        let p = [ParamValue::Ptr(dk), ParamValue::Ptr(out)];
        d.launch(&m, "block_radix_sort_floats", 2, 64, &p, &what);
        assert_eq!(d.read(out, n), want, "{what}");
    }
}

#[test]
fn block_merge_sort_with_a_comparator_and_a_partial_tile() {
    let m = module();
    for n in [320usize, 301, 17] {
        let x = Rng(n as u64 + 5).ints(n, -10_000, 10_000);
        let mut want = x.clone();
        want.sort_by_key(|v| v.abs());
        for (what, cfg) in configs() {
            let mut d = Dev::new(cfg);
            let (din, dout) = (d.upload(&x), d.unset(n + 4));
            let p = [
                ParamValue::Ptr(din),
                ParamValue::Ptr(dout),
                ParamValue::I32(n as i32),
            ];
            d.launch(&m, "block_merge_sort", 1, 64, &p, &what);
            let got = d.read(dout, n + 4);
            let what = format!("n = {n}, {what}");
            // Ordered by |x|; equal magnitudes (x and -x) may come in either order, so compare magnitudes
            // and the multiset.
            let mags: Vec<i32> = got[..n].iter().map(|v| v.abs()).collect();
            let want_mags: Vec<i32> = want.iter().map(|v| v.abs()).collect();
            assert_eq!(mags, want_mags, "order, {what}");
            let (mut a, mut b) = (got[..n].to_vec(), x.clone());
            a.sort();
            b.sort();
            assert_eq!(a, b, "elements, {what}");
            assert!(got[n..].iter().all(|&v| v == UNSET), "wrote past n, {what}");
        }
    }
}

#[test]
fn warp_reduce_and_scan_over_logical_warps() {
    let m = module();
    let blocks = 3usize;
    let n = 128 * blocks;
    let x = Rng(13).ints(n, -300, 300);
    for lanes in [32usize, 16, 8] {
        let groups = n / lanes;
        let mut sums = Vec::new();
        let mut maxes = Vec::new();
        let mut scans = Vec::new();
        for g in x.chunks(lanes) {
            sums.push(g.iter().sum::<i32>());
            maxes.push(*g.iter().max().expect("lanes"));
            let mut acc = 0;
            scans.extend(g.iter().map(|v| {
                acc += v;
                acc
            }));
        }
        let entry = format!("warp_ops_{lanes}");
        for (what, cfg) in configs() {
            let mut d = Dev::new(cfg);
            let din = d.upload(&x);
            let (ds, dc, dm) = (d.unset(groups), d.unset(n), d.unset(groups));
            let p = [
                ParamValue::Ptr(din),
                ParamValue::Ptr(ds),
                ParamValue::Ptr(dc),
                ParamValue::Ptr(dm),
            ];
            d.launch(&m, &entry, blocks as u32, 128, &p, &what);
            assert_eq!(d.read(ds, groups), sums, "sums, {entry}, {what}");
            assert_eq!(d.read(dm, groups), maxes, "maxes, {entry}, {what}");
            assert_eq!(d.read(dc, n), scans, "scans, {entry}, {what}");
        }
    }
}

#[test]
fn block_histogram_atomic_and_sort() {
    let m = module();
    let blocks = 3usize;
    let n = 1024 * blocks;
    let mut rng = Rng(17);
    // Skewed samples: half from a narrow band, so bins collide within a warp.
    let samples: Vec<u8> = (0..n)
        .map(|i| {
            if i % 2 == 0 {
                (rng.next() % 256) as u8
            } else {
                100 + (rng.next() % 4) as u8
            }
        })
        .collect();
    let mut want = vec![0i32; 256];
    for &s in &samples {
        want[s as usize] += 1;
    }
    for entry in ["block_histogram_atomic", "block_histogram_sort"] {
        for (what, cfg) in configs() {
            let mut d = Dev::new(cfg);
            let din = d.upload_bytes(&samples);
            let bins = d.upload(&[0; 256]);
            let p = [ParamValue::Ptr(din), ParamValue::Ptr(bins)];
            d.launch(&m, entry, blocks as u32, 128, &p, &what);
            assert_eq!(d.read(bins, 256), want, "{entry}, {what}");
        }
    }
}

#[test]
fn block_discontinuity_and_adjacent_difference() {
    let m = module();
    let blocks = 3usize;
    let n = 512 * blocks;
    let mut rng = Rng(19);
    // Runs of equal values, some crossing thread and tile boundaries.
    let mut x = Vec::with_capacity(n);
    while x.len() < n {
        let v = rng.range(-5, 5);
        let len = rng.range(1, 9) as usize;
        x.extend(std::iter::repeat_n(v, len.min(n - x.len())));
    }
    let flags: Vec<i32> = (0..n)
        .map(|j| (j == 0 || x[j] != x[j - 1]) as i32)
        .collect();
    let diffs: Vec<i32> = (0..n)
        .map(|j| if j % 512 == 0 { x[j] } else { x[j] - x[j - 1] })
        .collect();
    for (what, cfg) in configs() {
        let mut d = Dev::new(cfg);
        let din = d.upload(&x);
        let (df, dd) = (d.unset(n), d.unset(n));
        let p = [
            ParamValue::Ptr(din),
            ParamValue::Ptr(df),
            ParamValue::Ptr(dd),
        ];
        d.launch(&m, "block_discontinuity", blocks as u32, 128, &p, &what);
        assert_eq!(d.read(df, n), flags, "head flags, {what}");
        assert_eq!(d.read(dd, n), diffs, "differences, {what}");
    }
}

/// CUB's single-pass scan: tiles take tickets in launch order, publish their aggregate and then their
/// inclusive prefix through `ScanTileState`'s status words, and later tiles look back over a window of a
/// warp's width. Many tiles on few resident blocks' worth of schedule, so look-backs find partial and
/// invalid predecessors.
#[test]
fn decoupled_look_back_scan_from_cub() {
    let m = module();
    // ScanTileState<int> is one pointer: 8-byte words (status + value), a warp's width of padding first.
    for n in [512 * 9 + 100, 512 * 40usize] {
        let tiles = n.div_ceil(512);
        let x = Rng(n as u64).ints(n, -20, 30);
        let mut acc = 0;
        let want: Vec<i32> = x
            .iter()
            .map(|v| {
                acc += v;
                acc
            })
            .collect();
        for (what, cfg) in configs() {
            let mut d = Dev::new(cfg);
            let state = d.upload(&vec![UNSET; 2 * (tiles + 32)]);
            let ticket = d.upload(&[UNSET]);
            let (din, dout) = (d.upload(&x), d.unset(n));
            let st = ParamValue::Bytes(state.to_le_bytes().to_vec());
            let init = [
                st.clone(),
                ParamValue::I32(tiles as i32),
                ParamValue::Ptr(ticket),
            ];
            d.launch(
                &m,
                "lookback_init",
                tiles.div_ceil(128) as u32,
                128,
                &init,
                &what,
            );
            let p = [
                ParamValue::Ptr(din),
                ParamValue::Ptr(dout),
                ParamValue::I32(n as i32),
                st,
                ParamValue::Ptr(ticket),
            ];
            d.launch(&m, "lookback_scan", tiles as u32, 128, &p, &what);
            assert_eq!(d.read(dout, n), want, "n = {n}, {what}");
            assert_eq!(d.read(ticket, 1), vec![tiles as i32], "tickets, {what}");
        }
    }
}
