//! Differential test of the interpreter against recorded results: every case runs under several
//! configurations (races on/off, round-robin/random schedules, independent/lockstep warps) and its
//! faults, counters (kernel totals and per instruction), printf output and every output buffer must equal
//! what `fixtures/emu_golden.txt` recorded before the interpreter's speed work (issue 12), so a faster
//! interpreter is the same interpreter. `PRISM_BLESS=1` rewrites the file (only for a deliberate change of
//! documented behaviour, with the reason in the commit).

use prism_runtime::emu::cli::{parse_invocation, prepare_inputs, Input, Parsed};
use prism_runtime::emu::*;
use std::collections::BTreeMap;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// Configurations each case runs under (CLI flags).
const CONFIGS: &[&str] = &[
    "",
    "--no-races",
    "--seed 7",
    "--lockstep",
    "--seed 11 --no-races",
];

/// The deliberate bugs of faults.ptx (and kernels with printf/float atomics), beside differential.txt's cases.
const EXTRA_CASES: &[&str] = &[
    "faults.ptx spin_lock --grid 1 --block 32 --max-steps 200000",
    "faults.ptx barrier_divergence --grid 2 --block 64 buf:f32:128:zero i32:1",
    "faults.ptx barrier_divergence --grid 2 --block 64 buf:f32:128:zero i32:0",
    "faults.ptx shfl_partial --grid 1 --block 32 buf:i32:32:zero i32:1",
    "faults.ptx shared_race --grid 1 --block 64 buf:i32:64:zero i32:1",
    "faults.ptx shared_race --grid 1 --block 64 buf:i32:64:zero i32:0",
    "faults.ptx global_race --grid 2 --block 64 buf:i32:256:zero i32:1",
    "faults.ptx oob_global --grid 2 --block 64 buf:f32:100:zero i32:100 i32:1",
    "faults.ptx oob_shared --grid 1 --block 32 buf:i32:32:zero i32:64",
    "faults.ptx oob_local --grid 1 --block 32 buf:i32:32:zero i32:40",
    "extra.ptx atomic_float_sum --grid 4 --block 128 buf:f32:512:rand buf:f32:1:zero i32:512",
    "extra.ptx with_printf --grid 2 --block 32 buf:i32:32:zero",
    "kernels.ptx matmul_tiled --grid 4,4 --block 16,16 buf:f32:4096:rand buf:f32:4096:rand buf:f32:4096:zero i32:64 i32:64 i32:64",
];

fn fnv(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in bytes {
        h = (h ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The cases: differential.txt's lines (the `prism` ones that have a PTX fixture under `prism/`), then
/// [`EXTRA_CASES`]; `--tol` options are dropped.
fn cases() -> Vec<String> {
    let text =
        std::fs::read_to_string(format!("{FIXTURES}/differential.txt")).expect("differential.txt");
    let mut out = Vec::new();
    for raw in text.lines() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words: Vec<String> = Vec::new();
        let mut it = line.split_whitespace();
        while let Some(w) = it.next() {
            if w == "--tol" {
                it.next();
            } else {
                words.push(w.to_string());
            }
        }
        if words[0] == "prism" {
            let f = format!("prism/{}.ptx", words[1]);
            if !std::path::Path::new(&format!("{FIXTURES}/{f}")).exists() {
                continue; // only the kernels whose PTX is committed (tests/emu_kernel_fixtures.rs)
            }
            words[0] = f;
        }
        out.push(words.join(" "));
    }
    out.extend(EXTRA_CASES.iter().map(|s| s.to_string()));
    out
}

/// Runs one case under one configuration with `threads` OS threads; returns its record (one line) and
/// whether the blocks ran on several threads (`LaunchReport::parallel_blocks`).
fn record(case: &str, config: &str, threads: usize) -> (String, bool) {
    let mut args: Vec<String> = case.split_whitespace().map(String::from).collect();
    args[0] = format!("{FIXTURES}/{}", args[0]);
    args.extend(config.split_whitespace().map(String::from));
    let inv = match parse_invocation(&args).expect("case parses") {
        Parsed::Run(inv) => inv,
        Parsed::Help => panic!("help?"),
    };
    let src = std::fs::read_to_string(&inv.ptx_path).expect("fixture");
    let module = Module::parse(&src).expect("fixture parses");
    let decls = module.entry_params(&inv.kernel).expect("entry");
    let inputs = prepare_inputs(&inv, &decls).expect("inputs");
    let mut emu = Emulator::new(EmuConfig {
        schedule: inv
            .seed
            .map_or(Schedule::RoundRobin, |seed| Schedule::Random { seed }),
        warp_mode: if inv.lockstep {
            WarpMode::Lockstep
        } else {
            WarpMode::Independent
        },
        check_races: inv.races,
        max_steps: inv.max_steps.unwrap_or(EmuConfig::default().max_steps),
        threads,
    });
    let mut params = Vec::new();
    let mut bufs = Vec::new();
    for input in inputs {
        params.push(match input {
            Input::Scalar(p) => p,
            Input::Bytes(b) => ParamValue::Bytes(b),
            Input::Buffer { bytes, .. } => {
                let a = emu.alloc(bytes.len());
                emu.write(a, &bytes).expect("write");
                bufs.push((a, bytes.len()));
                ParamValue::Ptr(a)
            }
            other => panic!("{case}: unexpected input {other:?}"),
        });
    }
    let r = if inv.cooperative {
        emu.launch_cooperative(&module, &inv.kernel, inv.grid, inv.block, inv.smem, &params)
    } else {
        emu.launch_cluster(
            &module,
            &inv.kernel,
            inv.grid,
            inv.block,
            inv.cluster,
            inv.smem,
            &params,
        )
    };
    let (faults, report) = match r {
        Ok(r) => (Vec::new(), r),
        Err(EmuError::Faulted { faults, report }) => (faults, *report),
        Err(e) => return (format!("error: {e}"), false),
    };
    let faults: Vec<String> = faults
        .iter()
        .map(|f| {
            format!(
                "{:?}@{:?}/{}/{:?}/L{}: {}",
                f.kind, f.block, f.warp, f.lane, f.ptx_line, f.message
            )
        })
        .collect();
    let pi: Vec<u8> = report
        .per_instruction
        .iter()
        .flat_map(|p| format!("{p:?};").into_bytes())
        .collect();
    let bufs: Vec<String> = bufs
        .iter()
        .map(|&(a, n)| format!("{:016x}", fnv(&emu.read(a, n).expect("read"))))
        .collect();
    let text = format!(
        "counters={:?} per_instruction={:016x} printf={:016x} buffers=[{}] faults={:?}",
        report.counters,
        fnv(&pi),
        fnv(report.printf.join("\n").as_bytes()),
        bufs.join(","),
        faults
    );
    (text, report.parallel_blocks > 0)
}

#[test]
fn interpreter_matches_recorded_results() {
    let path = format!("{FIXTURES}/emu_golden.txt");
    let mut got = BTreeMap::new();
    // Every record on one OS thread and on two (blocks that do not interact run in parallel there, and
    // must give exactly the one-thread result).
    let mut two = BTreeMap::new();
    let mut parallel = 0;
    for case in cases() {
        for config in CONFIGS {
            let key = format!("{case} [{config}]");
            got.insert(key.clone(), record(&case, config, 1).0);
            let (r, par) = record(&case, config, 2);
            parallel += par as usize;
            two.insert(key, r);
        }
    }
    if std::env::var_os("PRISM_BLESS").is_some() {
        let mut text = String::from("# Recorded by tests/emu_golden.rs (PRISM_BLESS=1); one case and configuration, then its record.\n");
        for (k, v) in &got {
            text.push_str(&format!("{k}\n  {v}\n"));
        }
        std::fs::write(&path, text).expect("write golden");
        println!("wrote {} records to {path}", got.len());
        return;
    }
    let text = std::fs::read_to_string(&path).expect("emu_golden.txt (PRISM_BLESS=1 records it)");
    let mut want = BTreeMap::new();
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    while let (Some(k), Some(v)) = (lines.next(), lines.next()) {
        want.insert(k.to_string(), v.trim().to_string());
    }
    let mut bad = Vec::new();
    for (k, v) in &two {
        if got.get(k) != Some(v) {
            bad.push(format!(
                "{k}\n  one thread:  {:?}\n  two threads: {v}",
                got.get(k)
            ));
        }
    }
    // Launches of ≥ 4 blocks under the round-robin schedule (independent or lockstep) whose blocks do not
    // interact: vector_add, matmuls, sgemms, transposes, ... (29 when this was written).
    println!("{parallel} records ran their blocks on two threads");
    assert!(
        parallel >= 20,
        "only {parallel} records ran their blocks in parallel"
    );
    for (k, v) in &got {
        match want.get(k) {
            Some(w) if w == v => {}
            Some(w) => bad.push(format!("{k}\n  recorded: {w}\n  now:      {v}")),
            None => bad.push(format!("{k}: no recorded result")),
        }
    }
    for k in want.keys().filter(|k| !got.contains_key(*k)) {
        bad.push(format!("{k}: recorded but not run"));
    }
    println!("{} records compared", got.len());
    assert!(
        bad.is_empty(),
        "{} of {} records differ:\n{}",
        bad.len(),
        got.len(),
        bad.join("\n")
    );
}
