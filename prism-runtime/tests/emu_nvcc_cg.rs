//! Cooperative groups and CUB-style bit extraction as nvcc 13.5 compiles them for sm_90 (tests/fixtures/cg.ptx,
//! from cg.cu): `cuda::bitfield_extract` (bmsk.clamp) in a radix-digit histogram, `bmsk` in both modes,
//! `tiled_partition<8/16/32>` with `shfl_down`, `cg::reduce` and `cg::inclusive_scan`, `labeled_partition`,
//! `coalesced_threads()` in divergent branches, the warp-aggregated atomic increment, tiles of 64 and 128
//! threads (which synchronise through the block's reserved shared memory), and the reserved-shared-memory
//! special registers. Every kernel runs against a CPU reference on seeded random inputs, every output element
//! checked, under the round-robin schedule, in lockstep, and under several random schedules: a collective
//! must never be reported as misuse, and the results must not depend on the schedule.

use prism_runtime::emu::*;

fn module() -> Module {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/cg.ptx"
    ))
    .expect("fixture");
    Module::parse(&src).expect("nvcc PTX parses")
}

/// splitmix64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A value in `lo..hi`.
    fn range(&mut self, lo: i32, hi: i32) -> i32 {
        lo + (self.next() % (hi - lo) as u64) as i32
    }
}

/// The configurations every kernel runs under: round-robin with independent warps, lockstep, and random
/// schedules with six seeds.
fn configs() -> Vec<(String, EmuConfig)> {
    let mut v = vec![
        ("round-robin".to_string(), EmuConfig::default()),
        (
            "lockstep".to_string(),
            EmuConfig {
                warp_mode: WarpMode::Lockstep,
                ..EmuConfig::default()
            },
        ),
    ];
    for seed in [1u64, 2, 3, 7, 42, 0xC0FFEE] {
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

fn bytes_i32(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bytes_u32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn upload(e: &mut Emulator, bytes: &[u8]) -> u64 {
    let a = e.alloc(bytes.len());
    e.write(a, bytes).expect("write");
    a
}

fn read_i32(e: &Emulator, a: u64, n: usize) -> Vec<i32> {
    e.read(a, 4 * n)
        .expect("read")
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect()
}

fn read_u32(e: &Emulator, a: u64, n: usize) -> Vec<u32> {
    read_i32(e, a, n).into_iter().map(|x| x as u32).collect()
}

/// Launches and fails the test with the faults if there are any.
#[allow(clippy::too_many_arguments)]
fn launch(
    e: &mut Emulator,
    m: &Module,
    entry: &str,
    grid: u32,
    block: u32,
    smem: u32,
    params: &[ParamValue],
    what: &str,
) {
    if let Err(err) = e.launch(m, entry, [grid, 1, 1], [block, 1, 1], smem, params) {
        panic!("{entry} ({what}): {err}");
    }
}

/// Sentinel for outputs: an element the kernel should have written but did not shows as this.
const UNSET: i32 = 0x5A5A_5A5A;

#[test]
fn radix_digits_with_bitfield_extract() {
    let m = module();
    let n = 1000usize;
    let mut rng = Rng(1);
    let keys: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    for (shift, bits) in [(0u32, 8u32), (5, 4), (28, 4), (13, 1), (7, 0), (20, 10)] {
        let bins = 1usize << bits;
        let want_d: Vec<u32> = keys
            .iter()
            .map(|k| (k >> shift) & ((1u64 << bits) - 1) as u32)
            .collect();
        let mut want_h = vec![0u32; bins];
        for &d in &want_d {
            want_h[d as usize] += 1;
        }
        for (what, cfg) in configs() {
            let mut e = Emulator::new(cfg);
            let dk = upload(&mut e, &bytes_u32(&keys));
            let dd = upload(&mut e, &bytes_i32(&vec![UNSET; n]));
            let dh = upload(&mut e, &vec![0; 4 * bins]);
            let params = [
                ParamValue::Ptr(dk),
                ParamValue::Ptr(dd),
                ParamValue::Ptr(dh),
                ParamValue::I32(n as i32),
                ParamValue::U32(shift),
                ParamValue::U32(bits),
            ];
            let what = format!("{what}, shift {shift}, bits {bits}");
            let grid = n.div_ceil(128) as u32;
            launch(
                &mut e,
                &m,
                "radix_digits",
                grid,
                128,
                4 * bins as u32,
                &params,
                &what,
            );
            assert_eq!(read_u32(&e, dd, n), want_d, "digits, {what}");
            assert_eq!(read_u32(&e, dh, bins), want_h, "histogram, {what}");
        }
    }
    let ptx = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/cg.ptx"
    ))
    .expect("fixture");
    let body = &ptx[ptx.find(".entry radix_digits").expect("entry")..];
    let body = &body[..body.find(".entry bmsk_modes").expect("next entry")];
    assert!(
        body.contains("bmsk.clamp.b32"),
        "cuda::bitfield_extract should compile to bmsk on sm_90"
    );
}

/// The PTX ISA's bmsk: `.clamp` clamps position and width to 32, `.wrap` takes them mod 32; the mask is
/// `width` ones from bit `position`, cut at bit 31.
fn bmsk_ref(a: u32, b: u32, clamp: bool) -> u32 {
    let (pos, width) = if clamp {
        (a.min(32), b.min(32))
    } else {
        (a & 31, b & 31)
    };
    let ones = if width == 32 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    ((ones << pos) & 0xFFFF_FFFF) as u32
}

#[test]
fn bmsk_wrap_and_clamp() {
    let m = module();
    let mut rng = Rng(2);
    let mut a: Vec<u32> = (0..200).map(|_| rng.range(0, 40) as u32).collect();
    let mut b: Vec<u32> = (0..200).map(|_| rng.range(0, 40) as u32).collect();
    let edges = [0u32, 1, 31, 32, 33, 63, 64, 0xFFFF_FFFF];
    for (k, &x) in edges.iter().enumerate() {
        for (j, &y) in edges.iter().enumerate() {
            a.push(x);
            b.push(y);
            let _ = (k, j);
        }
    }
    let n = a.len();
    assert_eq!(bmsk_ref(1, 2, false), 6, "the PTX ISA's example");
    let mut e = Emulator::new(EmuConfig::default());
    let da = upload(&mut e, &bytes_u32(&a));
    let db = upload(&mut e, &bytes_u32(&b));
    let dout = upload(&mut e, &bytes_i32(&vec![UNSET; 2 * n]));
    let params = [
        ParamValue::Ptr(da),
        ParamValue::Ptr(db),
        ParamValue::Ptr(dout),
        ParamValue::I32(n as i32),
    ];
    let grid = n.div_ceil(64) as u32;
    launch(&mut e, &m, "bmsk_modes", grid, 64, 0, &params, "default");
    let got = read_u32(&e, dout, 2 * n);
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        assert_eq!(got[2 * i], bmsk_ref(x, y, false), "bmsk.wrap {x}, {y}");
        assert_eq!(got[2 * i + 1], bmsk_ref(x, y, true), "bmsk.clamp {x}, {y}");
    }
}

#[test]
fn tile16_shfl_down_reduction() {
    let m = module();
    let (grid, block) = (3usize, 128usize);
    let total = grid * block;
    let n = total - 10;
    let mut rng = Rng(3);
    let input: Vec<i32> = (0..n).map(|_| rng.range(-1000, 1000)).collect();
    let at = |i: usize| if i < n { input[i] } else { 0 };
    let want_sums: Vec<i32> = (0..total / 16)
        .map(|t| (16 * t..16 * t + 16).map(at).sum())
        .collect();
    let want_ranks: Vec<i32> = (0..total)
        .map(|i| (i % 16 + 100 * ((i % block) / 16)) as i32)
        .collect();
    for (what, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let din = upload(&mut e, &bytes_i32(&input));
        let dsums = upload(&mut e, &bytes_i32(&vec![UNSET; total / 16]));
        let dranks = upload(&mut e, &bytes_i32(&vec![UNSET; total]));
        let params = [
            ParamValue::Ptr(din),
            ParamValue::Ptr(dsums),
            ParamValue::Ptr(dranks),
            ParamValue::I32(n as i32),
        ];
        launch(
            &mut e,
            &m,
            "tile16_reduce",
            grid as u32,
            block as u32,
            0,
            &params,
            &what,
        );
        assert_eq!(
            read_i32(&e, dsums, total / 16),
            want_sums,
            "tile sums, {what}"
        );
        assert_eq!(read_i32(&e, dranks, total), want_ranks, "ranks, {what}");
    }
}

#[test]
fn tile_reduce_and_inclusive_scan() {
    let m = module();
    let (grid, block) = (2usize, 96usize);
    let total = grid * block;
    let n = total - 7;
    let mut rng = Rng(4);
    let input: Vec<i32> = (0..n).map(|_| rng.range(-50, 50)).collect();
    let at = |i: usize| if i < n { input[i] } else { 0 };
    let want_red: Vec<i32> = (0..total / 8)
        .map(|t| (8 * t..8 * t + 8).map(at).sum())
        .collect();
    let want_scan: Vec<i32> = (0..total)
        .map(|i| ((i / 32) * 32..=i).map(at).sum())
        .collect();
    for (what, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let din = upload(&mut e, &bytes_i32(&input));
        let dred = upload(&mut e, &bytes_i32(&vec![UNSET; total / 8]));
        let dscan = upload(&mut e, &bytes_i32(&vec![UNSET; total]));
        let params = [
            ParamValue::Ptr(din),
            ParamValue::Ptr(dred),
            ParamValue::Ptr(dscan),
            ParamValue::I32(n as i32),
        ];
        launch(
            &mut e,
            &m,
            "tile_reduce_scan",
            grid as u32,
            block as u32,
            0,
            &params,
            &what,
        );
        assert_eq!(
            read_i32(&e, dred, total / 8),
            want_red,
            "reduce over 8, {what}"
        );
        assert_eq!(
            read_i32(&e, dscan, total),
            want_scan,
            "scan over 32, {what}"
        );
    }
}

#[test]
fn labeled_partition_sums_per_key() {
    let m = module();
    let (grid, block) = (2usize, 96usize);
    let total = grid * block;
    let n = total - 12;
    let mut rng = Rng(5);
    let keys: Vec<i32> = (0..n).map(|_| rng.range(0, 4)).collect();
    let vals: Vec<i32> = (0..n).map(|_| rng.range(-100, 100)).collect();
    let key = |i: usize| if i < n { keys[i] } else { -1 };
    let mut want_sums = vec![UNSET; total];
    let mut want_sizes = vec![UNSET; total];
    for i in 0..n {
        let warp = (i / 32) * 32..(i / 32) * 32 + 32;
        let members: Vec<usize> = warp.filter(|&j| key(j) == keys[i]).collect();
        want_sums[i] = members.iter().map(|&j| vals[j]).sum();
        let rank = members.iter().filter(|&&j| j < i).count();
        want_sizes[i] = (members.len() * 1000 + rank) as i32;
    }
    for (what, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let dk = upload(&mut e, &bytes_i32(&keys));
        let dv = upload(&mut e, &bytes_i32(&vals));
        let ds = upload(&mut e, &bytes_i32(&vec![UNSET; total]));
        let dz = upload(&mut e, &bytes_i32(&vec![UNSET; total]));
        let params = [
            ParamValue::Ptr(dk),
            ParamValue::Ptr(dv),
            ParamValue::Ptr(ds),
            ParamValue::Ptr(dz),
            ParamValue::I32(n as i32),
        ];
        launch(
            &mut e,
            &m,
            "labeled_sum",
            grid as u32,
            block as u32,
            0,
            &params,
            &what,
        );
        assert_eq!(read_i32(&e, ds, total), want_sums, "sums, {what}");
        assert_eq!(read_i32(&e, dz, total), want_sizes, "sizes, {what}");
    }
}

#[test]
fn warp_aggregated_atomic_increment_filters() {
    let m = module();
    let n = 700usize;
    let mut rng = Rng(6);
    let input: Vec<i32> = (0..n).map(|_| rng.range(-20, 30)).collect();
    let mut want: Vec<i32> = input.iter().copied().filter(|&v| v > 0).collect();
    want.sort_unstable();
    for (what, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let din = upload(&mut e, &bytes_i32(&input));
        let dout = upload(&mut e, &bytes_i32(&vec![UNSET; n]));
        let dcount = upload(&mut e, &[0; 4]);
        let params = [
            ParamValue::Ptr(din),
            ParamValue::Ptr(dout),
            ParamValue::Ptr(dcount),
            ParamValue::I32(n as i32),
        ];
        launch(
            &mut e,
            &m,
            "filter_positive",
            n.div_ceil(128) as u32,
            128,
            0,
            &params,
            &what,
        );
        let count = read_i32(&e, dcount, 1)[0] as usize;
        assert_eq!(count, want.len(), "count, {what}");
        let out = read_i32(&e, dout, n);
        let mut got = out[..count].to_vec();
        got.sort_unstable();
        assert_eq!(got, want, "filtered values (as a multiset), {what}");
        assert!(
            out[count..].iter().all(|&v| v == UNSET),
            "nothing written past the count, {what}"
        );
    }
}

#[test]
fn coalesced_threads_in_divergent_branches() {
    let m = module();
    let (grid, block) = (2usize, 128usize);
    let total = grid * block;
    let n = total - 20;
    let mut rng = Rng(7);
    let input: Vec<i32> = (0..n).map(|_| rng.range(-40, 40)).collect();
    let mut want = vec![UNSET; total];
    for i in 0..n {
        let warp: Vec<usize> = ((i / 32) * 32..((i / 32) * 32 + 32).min(n)).collect();
        let odd = input[i] & 1 != 0;
        let group: Vec<usize> = warp
            .into_iter()
            .filter(|&j| (input[j] & 1 != 0) == odd)
            .collect();
        let rank = group.iter().filter(|&&j| j < i).count() as i32;
        want[i] = if odd {
            group.iter().map(|&j| input[j]).sum::<i32>() * 64 + rank
        } else {
            let positive = group.iter().filter(|&&j| input[j] > 0).count() as i32;
            -(positive * 64 + group.len() as i32)
        };
    }
    for (what, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let din = upload(&mut e, &bytes_i32(&input));
        let dout = upload(&mut e, &bytes_i32(&vec![UNSET; total]));
        let params = [
            ParamValue::Ptr(din),
            ParamValue::Ptr(dout),
            ParamValue::I32(n as i32),
        ];
        launch(
            &mut e,
            &m,
            "coalesced_branches",
            grid as u32,
            block as u32,
            0,
            &params,
            &what,
        );
        assert_eq!(read_i32(&e, dout, total), want, "{what}");
    }
}

#[test]
fn tiles_wider_than_a_warp_use_reserved_shared_memory() {
    let m = module();
    let (grid, block) = (2usize, 256usize);
    let total = grid * block;
    let n = total - 30;
    let mut rng = Rng(8);
    let input: Vec<i32> = (0..n).map(|_| rng.range(-1000, 1000)).collect();
    let at = |i: usize| if i < n { input[i] } else { 0 };
    let want_sum: Vec<i32> = (0..total / 128)
        .map(|t| (128 * t..128 * t + 128).map(at).sum())
        .collect();
    let want_b: Vec<i32> = (0..total).map(|i| at((i / 64) * 64 + 5)).collect();
    for (what, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let din = upload(&mut e, &bytes_i32(&input));
        let dsum = upload(&mut e, &bytes_i32(&vec![UNSET; total / 128]));
        let db = upload(&mut e, &bytes_i32(&vec![UNSET; total]));
        let params = [
            ParamValue::Ptr(din),
            ParamValue::Ptr(dsum),
            ParamValue::Ptr(db),
            ParamValue::I32(n as i32),
        ];
        launch(
            &mut e,
            &m,
            "big_tiles",
            grid as u32,
            block as u32,
            0,
            &params,
            &what,
        );
        assert_eq!(
            read_i32(&e, dsum, total / 128),
            want_sum,
            "sum over 128, {what}"
        );
        assert_eq!(read_i32(&e, db, total), want_b, "shfl over 64, {what}");
    }
}

#[test]
fn reserved_shared_memory_registers_match_the_layout() {
    let m = module();
    let static_bytes = m.static_shared_bytes("smem_regs").expect("entry");
    assert_eq!(static_bytes, 160, "int pad[40]");
    for dynamic in [0u32, 64] {
        let mut e = Emulator::new(EmuConfig::default());
        let dout = upload(&mut e, &bytes_i32(&[UNSET; 10]));
        launch(
            &mut e,
            &m,
            "smem_regs",
            1,
            32,
            dynamic,
            &[ParamValue::Ptr(dout)],
            "default",
        );
        let got = read_u32(&e, dout, 10);
        // The kernel's own shared memory: static, then dynamic at 16-byte alignment.
        let total = static_bytes.next_multiple_of(16) + dynamic;
        let want = [
            0,            // begin: the region starts the block's shared window
            1024,         // end
            1024,         // capacity
            0,            // slot 0
            512,          // slot 1: cooperative groups' scratch (>= 288 bytes)
            total,        // %total_smem_size: static + dynamic, without the reserved region
            1024 + total, // %aggr_smem_size: with it
            dynamic,      // %dynamic_smem_size
            1024,         // the kernel's first variable lies right after the region
            1,            // pad[1], written by thread 1
        ];
        assert_eq!(got, want, "dynamic shared memory {dynamic}");
    }
}

/// Thread 0 writes data and then a flag in shared memory; thread 32 (another warp) spins on the flag and
/// reads the data. With `st.release` + `ld.acquire` the read is ordered; with `.relaxed` it is a race.
const FLAG_PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry handoff(.param .u64 out)
{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	.shared .align 4 .b32 data;
	.shared .align 4 .b32 flag;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 bra WRITER;
	setp.ne.u32 %p2, %r1, 32;
	@%p2 bra DONE;
SPIN:
	ld.ORDER_LD.cta.shared.u32 %r2, [flag];
	setp.eq.u32 %p3, %r2, 0;
	@%p3 bra SPIN;
	ld.shared.u32 %r3, [data];
	st.global.u32 [%rd1], %r3;
	bra DONE;
WRITER:
	mov.u32 %r4, 77;
	st.shared.u32 [data], %r4;
	mov.u32 %r5, 1;
	st.ORDER_ST.cta.shared.u32 [flag], %r5;
DONE:
	ret;
}

// Every lane of warp 0 stores to one word: the same value (defined: one write lands) or its lane id
// (which lane wins is undefined: a race).
.visible .entry same_word(.param .u64 out, .param .u32 distinct)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<2>;
	.shared .align 4 .b32 word;
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r1, [distinct];
	mov.u32 %r2, %laneid;
	setp.ne.u32 %p1, %r1, 0;
	selp.u32 %r3, %r2, 5, %p1;
	st.shared.u32 [word], %r3;
	bar.sync 0;
	ld.shared.u32 %r3, [word];
	st.global.u32 [%rd1], %r3;
	ret;
}
"#;

fn race_count(
    ptx: &str,
    entry: &str,
    block: u32,
    params: &[ParamValue],
    e: &mut Emulator,
) -> usize {
    let m = Module::parse(ptx).expect("parses");
    match e.launch(&m, entry, [1, 1, 1], [block, 1, 1], 0, params) {
        Ok(_) => 0,
        Err(EmuError::Faulted { faults, .. }) => {
            assert!(
                faults.iter().all(|f| f.kind == FaultKind::DataRace),
                "{entry}: only races expected: {faults:?}"
            );
            faults.len()
        }
        Err(err) => panic!("{entry}: {err}"),
    }
}

#[test]
fn release_acquire_orders_a_handoff_and_relaxed_does_not() {
    for (st, ld, racy) in [
        ("release", "acquire", false),
        ("relaxed", "relaxed", true),
        ("release", "relaxed", true),
        ("relaxed", "acquire", true),
    ] {
        let ptx = FLAG_PTX.replace("ORDER_ST", st).replace("ORDER_LD", ld);
        for (what, cfg) in configs() {
            let mut e = Emulator::new(cfg);
            let out = upload(&mut e, &[0; 4]);
            let races = race_count(&ptx, "handoff", 64, &[ParamValue::Ptr(out)], &mut e);
            assert_eq!(races > 0, racy, "st.{st} / ld.{ld}, {what}: {races} races");
            assert_eq!(read_i32(&e, out, 1), [77], "st.{st} / ld.{ld}, {what}");
        }
    }
}

#[test]
fn lanes_storing_one_value_to_one_word_do_not_race() {
    for (distinct, racy) in [(0u32, false), (1, true)] {
        let mut e = Emulator::new(EmuConfig::default());
        let out = upload(&mut e, &[0; 4]);
        let params = [ParamValue::Ptr(out), ParamValue::U32(distinct)];
        let races = race_count(FLAG_PTX, "same_word", 32, &params, &mut e);
        assert_eq!(races > 0, racy, "distinct values: {distinct}");
    }
}
