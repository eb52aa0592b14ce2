//! CUB's device-wide algorithms as nvcc 13.5 instantiates them for a host call (tests/fixtures/cub_device.ptx,
//! from cub_device.cu, CCCL 3.x for sm_90), driven kernel by kernel as CUB's dispatch drives them:
//!
//! * `DeviceRadixSort` (onesweep): the init kernel zeroes bins and counters, the histogram kernel counts every
//!   digit of every pass, the exclusive-sum kernel turns counts into starts, then one onesweep launch per 8-bit
//!   pass in which each block takes a tile by an atomic ticket and finds its digits' global offsets by a
//!   decoupled look-back over its predecessors' published counts (`st.volatile`/`ld.volatile` flag words
//!   spun on across blocks, PDL's `griddepcontrol`). Key-value pairs ascending (stable) and float keys
//!   descending.
//! * `DeviceReduce::Sum`: the even-share reduce kernel over a grid, then the single-tile kernel over the
//!   partials.
//!
//! Every output element is checked against a host reference on seeded random inputs, under the round-robin
//! schedule and random schedules, with race detection on. The kernels' names are CUB's mangled ones; the
//! tests find them by their distinctive parts.

mod common;

use common::Rng;
use prism_runtime::emu::*;

const PTX: &str = include_str!("fixtures/cub_device.ptx");

fn module() -> Module {
    Module::parse(PTX).expect("nvcc PTX parses")
}

/// The one entry whose mangled name contains every part.
fn entry(parts: &[&str]) -> String {
    let names: Vec<&str> = PTX
        .lines()
        .filter_map(|l| l.strip_prefix(".visible .entry "))
        .map(|l| l.trim_end_matches('(').trim_end_matches("()"))
        .filter(|n| parts.iter().all(|p| n.contains(p)))
        .collect();
    assert_eq!(names.len(), 1, "entries matching {parts:?}: {names:?}");
    names[0].to_string()
}

fn configs() -> Vec<(String, EmuConfig)> {
    let mut v = vec![("round-robin".to_string(), EmuConfig::default())];
    for seed in [5u64, 0xC0FFEE] {
        v.push((
            format!("random seed {seed}"),
            EmuConfig {
                schedule: Schedule::Random { seed },
                ..EmuConfig::default()
            },
        ));
    }
    v
}

fn words(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

struct Dev(Emulator);
impl Dev {
    fn buf(&mut self, v: &[u32]) -> u64 {
        let a = self.0.alloc(4 * v.len().max(1));
        self.0.write(a, &words(v)).expect("write");
        a
    }
    fn read(&self, a: u64, n: usize) -> Vec<u32> {
        self.0
            .read(a, 4 * n)
            .expect("read")
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect()
    }
    fn launch(
        &mut self,
        m: &Module,
        name: &str,
        grid: u32,
        block: u32,
        p: &[ParamValue],
        what: &str,
    ) {
        if let Err(err) = self.0.launch(m, name, [grid, 1, 1], [block, 1, 1], 0, p) {
            panic!("{} ({what}): {err}", &name[..name.len().min(120)]);
        }
    }
}

const RADIX_BITS: u32 = 8;
const DIGITS: usize = 1 << RADIX_BITS;
/// CUB's sm_90 onesweep block (the kernels' `.maxntid`).
const ONESWEEP_THREADS: u32 = 384;
/// CUB's sm_90 histogram and exclusive-sum blocks.
const HISTO_THREADS: u32 = 128;
const SCAN_THREADS: u32 = 256;
/// An empty struct by value (`identity_decomposer_t`, `cuda::std::plus<>`): one byte.
fn empty() -> ParamValue {
    ParamValue::Bytes(vec![0])
}

/// The kernels of one `DeviceRadixSort` instantiation.
struct RadixSort {
    init: String,
    histogram: String,
    exclusive_sum: String,
    onesweep: String,
    /// Items per onesweep tile (threads × items per thread of CUB's policy; the kernel's own constant).
    tile: usize,
}

impl RadixSort {
    fn new(types: &str, order: &str, tile: usize) -> Self {
        let onesweep = entry(&["DeviceRadixSortOnesweepKernel", types, order]);
        let body = &PTX[PTX.find(&format!(".entry {onesweep}")).expect("entry")..];
        let body = &body[..body[10..].find(".entry").map_or(body.len(), |i| i + 10)];
        assert!(
            body.contains(&format!(", {tile};")),
            "the onesweep kernel's tile is {tile} items"
        );
        RadixSort {
            init: entry(&["DeviceRadixSortInitKernel", types, "EEijEE"]),
            histogram: entry(&["DeviceRadixSortHistogramKernel", types, order]),
            exclusive_sum: entry(&["DeviceRadixSortExclusiveSumKernel", types]),
            onesweep,
            tile,
        }
    }

    /// Sorts `keys` (32-bit words) and `values` (if any) in place in device memory as CUB's onesweep dispatch
    /// does, ping-ponging between the given buffers and the alternates; returns where the result lies.
    fn run(
        &self,
        d: &mut Dev,
        m: &Module,
        n: usize,
        keys: [u64; 2],
        vals: Option<[u64; 2]>,
        what: &str,
    ) -> usize {
        let passes = 32usize.div_ceil(RADIX_BITS as usize);
        let blocks = n.div_ceil(self.tile);
        let bins = d.buf(&vec![0xA5A5_A5A5; passes * DIGITS]);
        let ctrs = d.buf(&vec![0xA5A5_A5A5; passes]);
        let lookback = d.buf(&vec![0xA5A5_A5A5; blocks * DIGITS]);
        let init_items = (passes * DIGITS).max(passes);
        d.launch(
            m,
            &self.init,
            init_items.div_ceil(256) as u32,
            256,
            &[
                ParamValue::Ptr(ctrs),
                ParamValue::U64(passes as u64),
                ParamValue::Ptr(bins),
                ParamValue::U64((passes * DIGITS) as u64),
            ],
            what,
        );
        d.launch(
            m,
            &self.histogram,
            3,
            HISTO_THREADS,
            &[
                ParamValue::Ptr(bins),
                ParamValue::Ptr(keys[0]),
                ParamValue::U32(n as u32),
                ParamValue::I32(0),
                ParamValue::I32(32),
                empty(),
            ],
            what,
        );
        d.launch(
            m,
            &self.exclusive_sum,
            passes as u32,
            SCAN_THREADS,
            &[ParamValue::Ptr(bins)],
            what,
        );
        let mut cur = 0;
        for pass in 0..passes {
            // cudaMemsetAsync of the look-back words before every pass.
            d.0.write(lookback, &vec![0; 4 * blocks * DIGITS])
                .expect("memset");
            let (vo, vi) = vals.map_or((0, 0), |v| (v[1 - cur], v[cur]));
            d.launch(
                m,
                &self.onesweep,
                blocks as u32,
                ONESWEEP_THREADS,
                &[
                    ParamValue::Ptr(lookback),
                    ParamValue::Ptr(ctrs + 4 * pass as u64),
                    ParamValue::Ptr(0),
                    ParamValue::Ptr(bins + (4 * pass * DIGITS) as u64),
                    ParamValue::Ptr(keys[1 - cur]),
                    ParamValue::Ptr(keys[cur]),
                    ParamValue::Ptr(vo),
                    ParamValue::Ptr(vi),
                    ParamValue::I32(n as i32),
                    ParamValue::I32((pass as u32 * RADIX_BITS) as i32),
                    ParamValue::I32(RADIX_BITS as i32),
                    empty(),
                ],
                &format!("{what}, pass {pass}"),
            );
            cur = 1 - cur;
        }
        assert_eq!(
            d.read(ctrs, passes),
            vec![blocks as u32; passes],
            "tickets taken, {what}"
        );
        cur
    }
}

/// Makes one key from the generator.
type KeyGen = fn(&mut Rng) -> u32;

#[test]
fn onesweep_radix_sort_of_pairs_is_stable() {
    let m = module();
    let sort = RadixSort::new("IjijEE", "SortOrderE0", 8832);
    // Five tiles with a ragged last one, keys over the full range; one partial tile of keys sharing their
    // low bytes (whole digit bins empty, others full); keys of a few distinct values (stability shows).
    let cases: [(usize, KeyGen); 3] = [
        (4 * 8832 + 1001, |r| r.next() as u32),
        (5000, |r| (r.next() as u32) & 0xFF00_0F00),
        (2 * 8832 + 7, |r| (r.next() % 5) as u32 * 0x0102_0304),
    ];
    for (n, gen) in cases {
        let mut rng = Rng(n as u64);
        let keys: Vec<u32> = (0..n).map(|_| gen(&mut rng)).collect();
        let vals: Vec<u32> = (0..n as u32).collect();
        let mut pairs: Vec<(u32, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
        pairs.sort_by_key(|p| p.0); // stable
        for (what, cfg) in configs() {
            let what = format!("n = {n}, {what}");
            let mut d = Dev(Emulator::new(cfg));
            let k = [d.buf(&keys), d.buf(&vec![0x5A5A_5A5A; n])];
            let v = [d.buf(&vals), d.buf(&vec![0x5A5A_5A5A; n])];
            let at = sort.run(&mut d, &m, n, k, Some(v), &what);
            let got_k = d.read(k[at], n);
            let got_v = d.read(v[at], n);
            assert!(
                got_k == pairs.iter().map(|p| p.0).collect::<Vec<_>>(),
                "keys, {what}"
            );
            assert!(
                got_v == pairs.iter().map(|p| p.1).collect::<Vec<_>>(),
                "values, {what}"
            );
        }
    }
}

#[test]
fn onesweep_radix_sort_of_floats_descending() {
    let m = module();
    let sort = RadixSort::new("IfNS0_8NullTypeEjEE", "SortOrderE1", 7296);
    let n = 3 * 7296 + 555;
    let mut rng = Rng(99);
    let mut keys: Vec<f32> = (0..n)
        .map(|_| ((rng.next() % 2_000_001) as f32 - 1_000_000.0) / 1013.0)
        .collect();
    for (i, v) in [0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY, 1e-42, -3e38]
        .into_iter()
        .enumerate()
    {
        keys[i * 4001] = v;
    }
    let mut want = keys.clone();
    // Descending; -0.0 and +0.0 are equal keys to CUB (kept in input order: a stable sort on partial_cmp).
    want.sort_by(|a, b| b.partial_cmp(a).expect("no NaN"));
    let want: Vec<u32> = want.iter().map(|f| f.to_bits()).collect();
    let bits: Vec<u32> = keys.iter().map(|f| f.to_bits()).collect();
    for (what, cfg) in configs() {
        let mut d = Dev(Emulator::new(cfg));
        let k = [d.buf(&bits), d.buf(&vec![0x5A5A_5A5A; n])];
        let at = sort.run(&mut d, &m, n, k, None, &what);
        assert!(d.read(k[at], n) == want, "{what}");
    }
}

/// CUB's `GridEvenShare<unsigned>::DispatchInit` as the host computes it (ten 32-bit fields).
fn even_share(n: u32, max_grid: u32, tile: u32) -> (Vec<u8>, u32) {
    let total_tiles = n.div_ceil(tile);
    let grid = total_tiles.min(max_grid);
    let avg = total_tiles / grid;
    let big_shares = total_tiles - avg * grid;
    let normal = avg * tile;
    let fields = [
        total_tiles,
        big_shares,
        normal + tile, // big_share_items
        normal,
        big_shares * tile, // normal_base_offset
        n,                 // num_items
        grid,
        n, // block_offset, past the end until BlockInit
        n, // block_end
        0, // block_stride
    ];
    (words(&fields), grid)
}

#[test]
fn device_reduce_sum_over_a_grid_then_a_single_tile() {
    let m = module();
    let reduce = entry(&["18DeviceReduceKernel", "IfjN4cuda3std3__44plusIvEE"]);
    let single = entry(&[
        "DeviceReduceSingleTileKernel",
        "IfjN4cuda3std3__44plusIvEE",
        "PfSF_jS9_ff",
    ]);
    // Small integers as floats: every partial sum is exact, so any order of addition gives the same bits.
    for n in [4096 * 7 + 333, 100_003, 1000] {
        let mut rng = Rng(n as u64);
        let x: Vec<f32> = (0..n).map(|_| (rng.next() % 201) as f32 - 100.0).collect();
        let want: f32 = x.iter().map(|&v| v as f64).sum::<f64>() as f32 + 1.5;
        for (what, cfg) in configs() {
            let what = format!("n = {n}, {what}");
            let mut d = Dev(Emulator::new(cfg));
            let din = d.buf(&x.iter().map(|f| f.to_bits()).collect::<Vec<_>>());
            let (share, grid) = even_share(n as u32, 5, 4096);
            let partials = d.buf(&vec![0x7FC0_0000; grid as usize]);
            let out = d.buf(&[0x7FC0_0000]);
            d.launch(
                &m,
                &reduce,
                grid,
                256,
                &[
                    ParamValue::Ptr(din),
                    ParamValue::Ptr(partials),
                    ParamValue::U32(n as u32),
                    ParamValue::Bytes(share),
                    empty(),
                    ParamValue::F32(0.0),
                    empty(),
                ],
                &what,
            );
            d.launch(
                &m,
                &single,
                1,
                256,
                &[
                    ParamValue::Ptr(partials),
                    ParamValue::Ptr(out),
                    ParamValue::U32(grid),
                    empty(),
                    ParamValue::F32(1.5),
                    empty(),
                ],
                &what,
            );
            assert_eq!(f32::from_bits(d.read(out, 1)[0]), want, "{what}");
        }
    }
}
