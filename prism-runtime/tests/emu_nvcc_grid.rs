//! Grid-wide synchronization as nvcc 13.5 compiles it for sm_90 (tests/fixtures/grid.ptx, from grid.cu):
//! cooperative groups' `this_grid().sync()` after a cooperative launch (`Emulator::launch_cooperative`), a
//! hand-written grid barrier whose master block releases the others, and a flag hand-off through a third
//! block. Every output element is checked against a host reference, under several schedules with the race
//! detector on; each variant that leaves out an ordering must be reported as a race, and the grid barrier
//! without a cooperative launch traps as it does on a GPU.

use prism_runtime::emu::*;

mod common;
use common::{le, read, upload, Rng};

fn module() -> Module {
    common::fixture_module("grid.ptx")
}

/// Host reference of `coop_normalise`: `in / sum(in)`, then `rounds` smoothing steps (f32 throughout,
/// the sums in the kernel's order: per block a tree over 256 grid-strided partial sums).
fn normalise_ref(input: &[f32], grid: usize, rounds: usize) -> Vec<f32> {
    let n = input.len();
    let threads = 256;
    let mut partial = vec![0f32; grid];
    for (blk, p) in partial.iter_mut().enumerate() {
        let mut red: Vec<f32> = (0..threads)
            .map(|t| {
                let mut s = 0f32;
                let mut i = blk * threads + t;
                while i < n {
                    s += input[i];
                    i += grid * threads;
                }
                s
            })
            .collect();
        let mut w = threads / 2;
        while w > 0 {
            for t in 0..w {
                red[t] += red[t + w];
            }
            w /= 2;
        }
        *p = red[0];
    }
    let total = partial.iter().fold(0f32, |acc, &p| acc + p);
    let mut a: Vec<f32> = input.iter().map(|&x| x / total).collect();
    let mut b = vec![0f32; n];
    for r in 0..rounds {
        let (src, dst) = if r % 2 == 0 {
            (&a, &mut b)
        } else {
            (&b, &mut a)
        };
        for i in 0..n {
            let (l, c, rr) = (src[(i + n - 1) % n], src[i], src[(i + 1) % n]);
            dst[i] = 0.25 * l + 0.5 * c + 0.25 * rr;
        }
    }
    if rounds % 2 == 1 {
        b
    } else {
        a
    }
}

#[test]
fn this_grid_sync_after_a_cooperative_launch() {
    let m = module();
    let (grid, n, rounds) = (24usize, 24 * 256 * 2 + 77, 3usize);
    let mut rng = Rng(3);
    let input: Vec<f32> = (0..n)
        .map(|_| 0.5 + (rng.next() % 1000) as f32 / 1000.0)
        .collect();
    let want = normalise_ref(&input, grid, rounds);
    for (name, cfg) in common::configs() {
        let mut e = Emulator::new(cfg);
        let din = upload(&mut e, &le(&input, f32::to_le_bytes));
        let partial = upload(&mut e, &vec![0; 4 * grid]);
        let (a, b) = (
            upload(&mut e, &vec![0; 4 * n]),
            upload(&mut e, &vec![0; 4 * n]),
        );
        let arrived = upload(&mut e, &vec![0; 4 * rounds]);
        let seen = upload(&mut e, &vec![0; 4 * rounds * grid]);
        let p = ParamValue::Ptr;
        e.launch_cooperative(
            &m,
            "coop_normalise",
            [grid as u32, 1, 1],
            [256, 1, 1],
            0,
            &[
                p(din),
                p(partial),
                p(a),
                p(b),
                ParamValue::I32(n as i32),
                ParamValue::I32(rounds as i32),
                p(arrived),
                p(seen),
            ],
        )
        .unwrap_or_else(|err| panic!("{name}: {err}"));
        let out = read(
            &e,
            if rounds % 2 == 1 { b } else { a },
            n,
            f32::from_le_bytes,
        );
        for (i, (g, w)) in out.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "{name}: element {i}: {g} vs {w}");
        }
        // After each round's grid.sync() every block had counted itself in.
        let seen = read(&e, seen, rounds * grid, u32::from_le_bytes);
        assert!(
            seen.iter().all(|&s| s == grid as u32),
            "{name}: blocks passed the grid barrier early: {seen:?}"
        );
    }
}

#[test]
fn this_grid_sync_needs_a_cooperative_launch_that_fits() {
    let m = module();
    let mut e = Emulator::new(EmuConfig::default());
    let buf = upload(&mut e, &vec![0; 4 * 4096]);
    let p = ParamValue::Ptr;
    let params = [
        p(buf),
        p(buf),
        p(buf),
        p(buf),
        ParamValue::I32(1024),
        ParamValue::I32(1),
        p(buf),
        p(buf),
    ];
    // An ordinary launch has no grid workspace: cooperative groups traps, as on a GPU.
    let err = e
        .launch(&m, "coop_normalise", [4, 1, 1], [256, 1, 1], 0, &params)
        .expect_err("grid.sync() without a cooperative launch");
    let msg = err.to_string();
    assert!(
        msg.contains("Trap") && msg.contains("launch_cooperative"),
        "{msg}"
    );
    // 132 SMs x 8 blocks of 256 threads are resident at once: one more block is refused before it runs.
    let err = e
        .launch_cooperative(&m, "coop_normalise", [1057, 1, 1], [256, 1, 1], 0, &params)
        .expect_err("too many blocks for a cooperative launch");
    let msg = err.to_string();
    assert!(
        matches!(err, EmuError::BadLaunch(_))
            && msg.contains("1056")
            && msg.contains("cooperative"),
        "{msg}"
    );
}

fn master_rotate(mode: i32, cfg: EmuConfig) -> Result<Vec<i32>, String> {
    let m = module();
    let (grid, block, rounds) = (6usize, 64usize, 5usize);
    let n = grid * block - 9;
    let x0: Vec<i32> = (0..n as i32).map(|i| 3 * i - 100).collect();
    let mut e = Emulator::new(cfg);
    let x = upload(&mut e, &le(&x0, i32::to_le_bytes));
    let y = upload(&mut e, &vec![0; 4 * n]);
    let (arrived, go) = (upload(&mut e, &[0; 4]), upload(&mut e, &[0; 4]));
    let p = ParamValue::Ptr;
    e.launch(
        &m,
        "master_rotate",
        [grid as u32, 1, 1],
        [block as u32, 1, 1],
        0,
        &[
            p(x),
            p(y),
            ParamValue::I32(n as i32),
            ParamValue::I32(rounds as i32),
            p(arrived),
            p(go),
            ParamValue::I32(mode),
        ],
    )
    .map_err(|err| err.to_string())?;
    let got = read(
        &e,
        if rounds % 2 == 1 { y } else { x },
        n,
        i32::from_le_bytes,
    );
    // The reference.
    let (mut src, mut dst) = (x0, vec![0i32; n]);
    for _ in 0..rounds {
        for i in 0..n {
            dst[i] = src[(i + block) % n] + i as i32;
        }
        std::mem::swap(&mut src, &mut dst);
    }
    assert_eq!(got, src, "mode {mode}: values");
    Ok(got)
}

#[test]
fn a_master_block_grid_barrier_orders_every_round() {
    for (name, cfg) in common::configs() {
        master_rotate(0, cfg.clone()).unwrap_or_else(|err| panic!("{name}: race-free: {err}"));
        let racy = master_rotate(1, cfg).expect_err("no fence after the wait: no acquire");
        assert!(racy.contains("DataRace"), "{name}: {racy}");
    }
}

fn relay(mode: i32, cfg: EmuConfig) -> Result<Vec<i32>, String> {
    let m = module();
    let mut e = Emulator::new(cfg);
    let data = upload(&mut e, &[0; 4 * 64]);
    let (f1, f2) = (upload(&mut e, &[0; 4]), upload(&mut e, &[0; 4]));
    let out = upload(&mut e, &[0; 4 * 64]);
    let p = ParamValue::Ptr;
    e.launch(
        &m,
        "relay",
        [3, 1, 1],
        [64, 1, 1],
        0,
        &[p(data), p(f1), p(f2), p(out), ParamValue::I32(mode)],
    )
    .map_err(|err| err.to_string())?;
    Ok(read(&e, out, 64, i32::from_le_bytes))
}

#[test]
fn a_hand_off_through_a_third_block_orders_the_data() {
    for (name, cfg) in common::configs() {
        for mode in [0, 1] {
            let out = relay(mode, cfg.clone())
                .unwrap_or_else(|err| panic!("{name}: mode {mode} is race-free: {err}"));
            assert_eq!(
                out,
                (0..64).map(|t| 7 * t + 3).collect::<Vec<i32>>(),
                "{name}: mode {mode}"
            );
        }
        let racy = relay(2, cfg).expect_err("block 1 does not wait for block 0");
        assert!(racy.contains("DataRace"), "{name}: {racy}");
    }
}

/// 20,480 threads in 80 blocks count themselves into one word with fenced or `acq_rel` atomics: the count
/// is exact and no race is reported. (Each RMW is an acquire and a release the race detector follows; a
/// hot word used to make every acquire merge every block's earlier acquisitions, minutes for this launch.)
#[test]
fn a_hot_counter_of_ordered_atomics_is_race_free() {
    let m = module();
    for mode in [0, 1] {
        let mut e = Emulator::new(EmuConfig::default());
        let c = upload(&mut e, &[0; 4]);
        e.launch(
            &m,
            "hot_counter",
            [80, 1, 1],
            [256, 1, 1],
            0,
            &[ParamValue::Ptr(c), ParamValue::I32(mode)],
        )
        .unwrap_or_else(|err| panic!("mode {mode}: {err}"));
        assert_eq!(
            read(&e, c, 1, i32::from_le_bytes),
            vec![80 * 256],
            "mode {mode}"
        );
    }
}
