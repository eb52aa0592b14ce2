//! The CUDA C++ asynchronous-copy and barrier APIs as the CUDA samples and programming guide use them,
//! compiled by nvcc 13.5 for sm_90 (tests/fixtures/async_copy.ptx, from async_copy.cu, CCCL 3.x headers):
//! `cooperative_groups::memcpy_async` + `cg::wait`, `cuda::memcpy_async` into a double buffer under
//! `cuda::barrier` (plain sizes through `cp.async` + `cp.async.mbarrier.arrive`, `cuda::aligned_size_t<16>`
//! through `cp.async.bulk` with `mbarrier.expect_tx`), a block-scoped `cuda::pipeline` with producer and
//! consumer roles over a 4-stage ring, the `__pipeline_memcpy_async`/`__pipeline_commit`/
//! `__pipeline_wait_prior` primitives, split-phase `barrier.arrive()`/`wait(token)` and `arrive_and_drop`,
//! `cuda::latch`, and `cuda::atomic_ref` at device scope (relaxed, acquire and acq_rel RMWs). Every output
//! element is checked against a host reference on seeded random inputs (small integers, so every float sum is
//! exact in any order) under round-robin, lockstep and random schedules, with race detection on.

mod common;

use common::{configs, Rng};
use prism_runtime::emu::*;

fn module() -> Module {
    Module::parse(include_str!("fixtures/async_copy.ptx")).expect("nvcc PTX parses")
}

/// Sentinel: an output the kernel should have written but did not.
const UNSET: u32 = 0x5A5A_5A5A;

struct Dev(Emulator);
impl Dev {
    fn words(&mut self, v: &[u32]) -> u64 {
        let a = self.0.alloc(4 * v.len().max(1));
        let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.0.write(a, &b).expect("write");
        a
    }
    fn ints(&mut self, v: &[i32]) -> u64 {
        self.words(&v.iter().map(|&x| x as u32).collect::<Vec<_>>())
    }
    fn floats(&mut self, v: &[f32]) -> u64 {
        self.words(&v.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
    }
    fn unset(&mut self, n: usize) -> u64 {
        self.words(&vec![UNSET; n])
    }
    fn read(&self, a: u64, n: usize) -> Vec<u32> {
        self.0
            .read(a, 4 * n)
            .expect("read")
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect()
    }
    fn read_f32(&self, a: u64, n: usize) -> Vec<f32> {
        self.read(a, n).into_iter().map(f32::from_bits).collect()
    }
    fn read_i32(&self, a: u64, n: usize) -> Vec<i32> {
        self.read(a, n).into_iter().map(|x| x as i32).collect()
    }
    fn launch(
        &mut self,
        m: &Module,
        entry: &str,
        grid: u32,
        block: u32,
        p: &[ParamValue],
        what: &str,
    ) {
        if let Err(err) = self.0.launch(m, entry, [grid, 1, 1], [block, 1, 1], 0, p) {
            panic!("{entry} ({what}): {err}");
        }
    }
}

fn as_f32(v: &[i32]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

#[test]
fn cooperative_groups_memcpy_async_stages_ragged_tiles() {
    let m = module();
    for n in [3 * 1024, 2 * 1024 + 333, 17] {
        let x = as_f32(&Rng(n as u64).ints(n, -500, 500));
        let want: Vec<f32> = x.chunks(1024).map(|t| t.iter().sum()).collect();
        let blocks = n.div_ceil(1024);
        for (what, cfg) in configs() {
            let mut d = Dev(Emulator::new(cfg));
            let (din, out) = (d.floats(&x), d.unset(blocks));
            let p = [
                ParamValue::Ptr(din),
                ParamValue::Ptr(out),
                ParamValue::I32(n as i32),
            ];
            d.launch(&m, "cg_memcpy_async_sum", blocks as u32, 256, &p, &what);
            assert_eq!(d.read_f32(out, blocks), want, "n = {n}, {what}");
        }
    }
}

#[test]
fn double_buffered_stencil_under_cuda_barrier() {
    let m = module();
    let (blocks, chunks) = (2usize, 5usize);
    let total = blocks * chunks * 256;
    // Multiples of 4: a quarter of each is exact, so the stencil is exact however it is contracted.
    let x: Vec<f32> = Rng(21)
        .ints(total + 4, -1000, 1000)
        .iter()
        .map(|&v| (4 * v) as f32)
        .collect();
    let want: Vec<f32> = (0..total)
        .map(|k| 0.25 * x[k] + 0.5 * x[k + 1] + 0.25 * x[k + 2])
        .collect();
    for entry in ["barrier_stencil", "barrier_stencil_bulk"] {
        for (what, cfg) in configs() {
            let mut d = Dev(Emulator::new(cfg));
            let (din, out) = (d.floats(&x), d.unset(total));
            let p = [
                ParamValue::Ptr(din),
                ParamValue::Ptr(out),
                ParamValue::I32(chunks as i32),
            ];
            d.launch(&m, entry, blocks as u32, 256, &p, &what);
            assert!(d.read_f32(out, total) == want, "{entry}, {what}");
        }
    }
    let ptx = include_str!("fixtures/async_copy.ptx");
    assert!(
        ptx.contains("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes"),
        "aligned_size_t<16> should take the bulk-copy path on sm_90"
    );
}

#[test]
fn block_scoped_pipeline_with_producer_and_consumer_roles() {
    let m = module();
    let blocks = 3usize;
    for stages in [1usize, 4, 11] {
        let x = Rng(stages as u64).ints(blocks * stages * 128, -50, 50);
        let want: Vec<f32> = (0..blocks)
            .map(|b| {
                (0..stages)
                    .map(|s| {
                        let row = &x[(b * stages + s) * 128..][..128];
                        row.iter().sum::<i32>() * (s as i32 + 1)
                    })
                    .sum::<i32>() as f32
            })
            .collect();
        for (what, cfg) in configs() {
            let mut d = Dev(Emulator::new(cfg));
            let din = d.floats(&as_f32(&x));
            let out = d.floats(&vec![0.0; blocks]);
            let p = [
                ParamValue::Ptr(din),
                ParamValue::Ptr(out),
                ParamValue::I32(stages as i32),
            ];
            d.launch(
                &m,
                "pipeline_producer_consumer",
                blocks as u32,
                128,
                &p,
                &what,
            );
            assert_eq!(d.read_f32(out, blocks), want, "{stages} stages, {what}");
        }
    }
}

#[test]
fn pipeline_primitives_prefetch_three_rows() {
    let m = module();
    for rows in [1usize, 2, 3, 8] {
        let x = Rng(rows as u64 + 40).ints(rows * 128, -1000, 1000);
        let want: Vec<i32> = (0..128)
            .map(|t| (0..rows).map(|r| x[r * 128 + t] * (r as i32 + 1)).sum())
            .collect();
        for (what, cfg) in configs() {
            let mut d = Dev(Emulator::new(cfg));
            let (din, out) = (d.ints(&x), d.unset(128));
            let p = [
                ParamValue::Ptr(din),
                ParamValue::Ptr(out),
                ParamValue::I32(rows as i32),
            ];
            d.launch(&m, "pipeline_primitives", 1, 128, &p, &what);
            assert_eq!(d.read_i32(out, 128), want, "{rows} rows, {what}");
        }
    }
}

#[test]
fn split_phase_barrier_and_arrive_and_drop() {
    let m = module();
    let (blocks, bsz) = (2usize, 256usize);
    for rounds in [0usize, 1, 5] {
        let x = Rng(rounds as u64 + 9).ints(blocks * bsz, -1000, 1000);
        let mut want = Vec::new();
        for b in 0..blocks {
            let v = &x[b * bsz..][..bsz];
            let mut cell: Vec<i32> = (0..bsz).map(|t| v[(t + 1) % bsz] + 3 * v[t]).collect();
            for _ in 0..rounds {
                let prev = cell.clone();
                for t in (0..bsz).step_by(2) {
                    cell[t] += prev[(t + bsz - 2) % bsz];
                }
            }
            want.extend(cell);
        }
        for (what, cfg) in configs() {
            let mut d = Dev(Emulator::new(cfg));
            let (din, out) = (d.ints(&x), d.unset(blocks * bsz));
            let p = [
                ParamValue::Ptr(din),
                ParamValue::Ptr(out),
                ParamValue::I32(rounds as i32),
            ];
            d.launch(
                &m,
                "split_phase_barrier",
                blocks as u32,
                bsz as u32,
                &p,
                &what,
            );
            assert_eq!(
                d.read_i32(out, blocks * bsz),
                want,
                "{rounds} rounds, {what}"
            );
        }
    }
}

#[test]
fn latch_counts_down_the_block() {
    let m = module();
    let blocks = 3usize;
    let x = Rng(31).ints(blocks * 128, -1000, 1000);
    let want: Vec<i32> = x.chunks(128).map(|c| 2 * c.iter().sum::<i32>()).collect();
    for (what, cfg) in configs() {
        let mut d = Dev(Emulator::new(cfg));
        let (din, out) = (d.ints(&x), d.unset(blocks));
        d.launch(
            &m,
            "latch_sum",
            blocks as u32,
            128,
            &[ParamValue::Ptr(din), ParamValue::Ptr(out)],
            &what,
        );
        assert_eq!(d.read_i32(out, blocks), want, "{what}");
    }
}

#[test]
fn atomic_ref_histogram_max_and_last_block_ticket() {
    let m = module();
    let n = 1000usize;
    let x: Vec<u32> = Rng(5)
        .ints(n, 0, 1 << 30)
        .iter()
        .map(|&v| v as u32)
        .collect();
    let mut bins = vec![0u32; 16];
    for &v in &x {
        bins[(v % 16) as usize] += 1;
    }
    let max = x.iter().copied().max().expect("n > 0") as i32;
    let blocks = n.div_ceil(128);
    for (what, cfg) in configs() {
        let mut d = Dev(Emulator::new(cfg));
        let din = d.words(&x);
        let (db, dm) = (d.words(&[0; 16]), d.ints(&[i32::MIN]));
        let (dt, tot) = (d.words(&[0]), d.words(&[0]));
        let p = [
            ParamValue::Ptr(din),
            ParamValue::I32(n as i32),
            ParamValue::Ptr(db),
            ParamValue::Ptr(dm),
            ParamValue::Ptr(dt),
            ParamValue::Ptr(tot),
        ];
        d.launch(&m, "atomic_ref_histogram", blocks as u32, 128, &p, &what);
        assert_eq!(d.read(db, 16), bins, "bins, {what}");
        assert_eq!(d.read_i32(dm, 1), vec![max], "max, {what}");
        assert_eq!(d.read(dt, 1), vec![blocks as u32], "tickets, {what}");
        assert_eq!(
            d.read(tot, 1),
            vec![n as u32],
            "the last block's total, {what}"
        );
    }
}
