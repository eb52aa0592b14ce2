//! Emulator throughput (issue 12): warp-instructions per second of the PTX interpreter, with and without
//! race detection, on nvcc's tiled matmul (tests/fixtures/kernels.ptx) and on the workspace's sgemm and
//! scan kernels (their PTX committed under tests/fixtures/prism/), plus the physical reference, the
//! emulator/native time ratio: the naive matmul compiled natively with `cc -O2` (issue 12's reference)
//! and the same tiled matmul written in C (vectorised and scalar builds).
//!
//! ```text
//! cargo bench -p prism-runtime --bench emulator            # criterion rows + a summary table
//! cargo bench -p prism-runtime --bench emulator -- matmul  # criterion filter
//! ```
//!
//! Criterion's throughput is in elements/s where one element is one warp-instruction.

use criterion::{Criterion, Throughput};
use prism_runtime::emu::cli::{parse_invocation, prepare_inputs, Input, Parsed};
use prism_runtime::emu::*;
use std::time::{Duration, Instant};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// Benchmarked launches, in the `emulate` CLI's syntax (FILE relative to tests/fixtures).
const CASES: &[(&str, &str)] = &[
    (
        "matmul_tiled_256",
        "kernels.ptx matmul_tiled --grid 16,16 --block 16,16 buf:f32:65536:rand buf:f32:65536:rand buf:f32:65536:zero i32:256 i32:256 i32:256",
    ),
    (
        "sgemm_warptile_256",
        "prism/sgemm_warptile_64_64_16_32_32_2_4_4.ptx sgemm_warptile_64_64_16_32_32_2_4_4 --grid 16 --block 128 --smem 8192 u32:256 u32:256 u32:256 f32:1.5 buf:f32:65536:rand buf:f32:65536:rand f32:0.5 buf:f32:65536:rand",
    ),
    (
        "sgemm_smem_32_128",
        "prism/sgemm_smem_32.ptx sgemm_smem_32 --grid 16 --block 1024 --smem 8192 u32:128 u32:128 u32:128 f32:1.5 buf:f32:16384:rand buf:f32:16384:rand f32:0.5 buf:f32:16384:rand",
    ),
    (
        "scan_u32_256k",
        "prism/scan_kernel_u32_4.ptx scan_kernel_u32_4 --grid 512 --block 128 --smem 176 buf:u32:262144:rand buf:u32:262144:zero u32:262144 u32:0 buf:u64:512:zero buf:u32:1:zero",
    ),
];

/// A prepared launch: module, configuration and initial buffers.
struct Launch {
    module: Module,
    kernel: String,
    grid: [u32; 3],
    block: [u32; 3],
    smem: u32,
    inputs: Vec<Input>,
}

fn prepare(line: &str) -> Launch {
    let mut args: Vec<String> = line.split_whitespace().map(String::from).collect();
    args[0] = format!("{FIXTURES}/{}", args[0]);
    let inv = match parse_invocation(&args).expect("case parses") {
        Parsed::Run(inv) => inv,
        Parsed::Help => unreachable!("no --help in the cases"),
    };
    let src = std::fs::read_to_string(&inv.ptx_path).expect("fixture");
    let module = Module::parse(&src).expect("fixture parses");
    let decls = module.entry_params(&inv.kernel).expect("entry");
    let inputs = prepare_inputs(&inv, &decls).expect("inputs");
    Launch {
        module,
        kernel: inv.kernel,
        grid: inv.grid,
        block: inv.block,
        smem: inv.smem,
        inputs,
    }
}

/// Runs the launch once on `threads` OS threads; returns (time of the launch alone, counters, blocks
/// that ran in parallel).
fn run(l: &Launch, races: bool, threads: usize) -> (Duration, Counters, u64) {
    let mut emu = Emulator::new(EmuConfig {
        check_races: races,
        threads,
        ..EmuConfig::default()
    });
    let params: Vec<ParamValue> = l
        .inputs
        .iter()
        .map(|i| match i {
            Input::Scalar(p) => p.clone(),
            Input::Bytes(b) => ParamValue::Bytes(b.clone()),
            Input::Buffer { bytes, .. } => {
                let a = emu.alloc(bytes.len());
                emu.write(a, bytes).expect("write");
                ParamValue::Ptr(a)
            }
            other => panic!("unexpected input {other:?}"),
        })
        .collect();
    let t0 = Instant::now();
    let r = emu
        .launch(&l.module, &l.kernel, l.grid, l.block, l.smem, &params)
        .unwrap_or_else(|e| panic!("{}: {e}", l.kernel));
    (t0.elapsed(), r.counters, r.parallel_blocks)
}

/// The tiled matmul of kernels.cu in C: for each 16×16 block, each tile of K, the block's threads load
/// their A and B elements into the shared tiles and then each accumulates its dot product, as the
/// kernel does (one thread after another, since the CPU has no warps).
/// The native references' common part: inputs, best-of-`reps` timing of `matmul(A, B, C, n, n, n)`.
const NATIVE_MAIN: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char** argv) {
    int n = atoi(argv[1]), reps = atoi(argv[2]);
    float *A = malloc(sizeof(float) * n * n), *B = malloc(sizeof(float) * n * n), *C = malloc(sizeof(float) * n * n);
    for (int i = 0; i < n * n; ++i) { A[i] = (float)(i % 7) - 3.0f; B[i] = (float)(i % 5) - 2.0f; }
    struct timespec t0, t1;
    double best = 1e30, check = 0;
    for (int r = 0; r < reps; ++r) {
        clock_gettime(CLOCK_MONOTONIC, &t0);
        matmul(A, B, C, n, n, n);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
        if (s < best) best = s;
        check += C[(r * 31) % (n * n)];
    }
    printf("%.9f %f\n", best, check);
    return 0;
}
"#;

/// nvcc's `matmul_tiled` in C: 16×16 tiles through local arrays, the threads of a block one after
/// another. GCC vectorises its inner loops at `-O2`: the strictest reference.
const NATIVE_TILED: &str = r#"
#define TILE 16
static void matmul(const float* A, const float* B, float* C, int M, int N, int K) {
    float As[TILE][TILE], Bs[TILE][TILE], acc[TILE][TILE];
    for (int by = 0; by < (M + TILE - 1) / TILE; ++by)
    for (int bx = 0; bx < (N + TILE - 1) / TILE; ++bx) {
        for (int ty = 0; ty < TILE; ++ty) for (int tx = 0; tx < TILE; ++tx) acc[ty][tx] = 0.0f;
        for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
            for (int ty = 0; ty < TILE; ++ty) for (int tx = 0; tx < TILE; ++tx) {
                int row = by * TILE + ty, col = bx * TILE + tx, ak = t * TILE + tx, bk = t * TILE + ty;
                As[ty][tx] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
                Bs[ty][tx] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
            }
            for (int ty = 0; ty < TILE; ++ty) for (int tx = 0; tx < TILE; ++tx)
                for (int k = 0; k < TILE; ++k) acc[ty][tx] += As[ty][k] * Bs[k][tx];
        }
        for (int ty = 0; ty < TILE; ++ty) for (int tx = 0; tx < TILE; ++tx) {
            int row = by * TILE + ty, col = bx * TILE + tx;
            if (row < M && col < N) C[row * N + col] = acc[ty][tx];
        }
    }
}
"#;

/// The naive matmul, one output element after another, each a dot product over k: issue 12's
/// reference ("the same naive matmul compiled natively with `cc -O2`"). Its figures fix which loop that
/// is: 2.1 M warp-instructions/s on the 512³ matmul (20.2 M warp-instructions) was 55× the native time,
/// so the native 512³ took about 0.17 s, the speed of this loop (0.14 s on the 2-core build machine),
/// where the tiled C above takes about 0.02 s. (Without `-ffast-math` the float sum over k is not
/// vectorised: one dependent add after another.)
const NATIVE_NAIVE: &str = r#"
static void matmul(const float* A, const float* B, float* C, int M, int N, int K) {
    for (int row = 0; row < M; ++row) for (int col = 0; col < N; ++col) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
"#;

/// Best-of-N seconds of a native matmul (`kernel`, one of the sources above) at n³ compiled with
/// `flags`, or why it could not run.
fn native_matmul_seconds(kernel: &str, n: usize, flags: &[&str]) -> Result<f64, String> {
    let dir = std::env::temp_dir().join(format!("prism_emu_bench_{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("temp dir: {e}"))?;
    let (c, exe) = (dir.join("matmul.c"), dir.join("matmul"));
    let src = format!("{kernel}{NATIVE_MAIN}");
    std::fs::write(&c, src).map_err(|e| format!("write {}: {e}", c.display()))?;
    let out = std::process::Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(&c)
        .output()
        .map_err(|e| format!("cc not runnable: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cc {flags:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let out = std::process::Command::new(&exe)
        .args([n.to_string(), "20".into()])
        .output()
        .map_err(|e| format!("running the native matmul: {e}"))?;
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("native matmul printed {text:?}"))
}

/// Criterion's options that take a value (the argument after one is not the filter).
fn takes_value(option: &str) -> bool {
    [
        "--profile-time",
        "--measurement-time",
        "--warm-up-time",
        "--sample-size",
        "--save-baseline",
        "--baseline",
        "--load-baseline",
        "--noise-threshold",
        "--confidence-level",
        "--significance-level",
        "--nresamples",
        "--output-format",
        "--color",
        "--plotting-backend",
    ]
    .contains(&option)
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    // Criterion's filter (the first argument that is not an option): cases it excludes are not even
    // prepared, since preparing runs the launch once for its warp-instruction count.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filter = args
        .iter()
        .enumerate()
        .rev()
        .filter(|(i, a)| !a.starts_with('-') && (*i == 0 || !takes_value(&args[i - 1])))
        .map(|(_, a)| a.clone())
        .next()
        .unwrap_or_default();
    // `EMU_BENCH_ONCE=1`: one run of each selected case and configuration, no criterion (a fixed amount of
    // work to count instructions of, e.g. under `valgrind --tool=cachegrind`).
    let once = std::env::var_os("EMU_BENCH_ONCE").is_some();
    let mut summary = Vec::new();
    for (name, line) in CASES {
        let ids = |races: bool, threads: usize| {
            let r = if races { "on" } else { "off" };
            format!("{name}/races_{r}/threads_{threads}")
        };
        if ![false, true].iter().any(|&r| {
            [1, 2]
                .iter()
                .any(|&t| format!("emulator/{}", ids(r, t)).contains(&filter))
        }) {
            continue;
        }
        let l = prepare(line);
        for (races, threads) in [(false, 1), (false, 2), (true, 1), (true, 2)] {
            let id = ids(races, threads);
            if !format!("emulator/{id}").contains(&filter) {
                continue;
            }
            let (dt, counters, par) = run(&l, races, threads);
            let wi = counters.warp_instructions;
            if once {
                println!("{id}: {wi} warp-instructions in {:.4} s", dt.as_secs_f64());
                continue;
            }
            let mut g = c.benchmark_group("emulator");
            g.throughput(Throughput::Elements(wi));
            let mut best = f64::INFINITY;
            g.bench_function(&id, |bch| {
                bch.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let (dt, _, _) = run(&l, races, threads);
                        best = best.min(dt.as_secs_f64());
                        total += dt;
                    }
                    total
                })
            });
            g.finish();
            if best.is_finite() {
                summary.push((id, wi, best, par));
            }
        }
    }
    if once {
        return;
    }
    println!("\nsummary (best of the samples; parallel = blocks kept from a parallel run):");
    println!(
        "{:46} {:>14} {:>10} {:>16} {:>9} {:>8}",
        "case", "warp-instr", "seconds", "M warp-instr/s", "parallel", "speed-up"
    );
    for (id, wi, s, par) in &summary {
        // Two threads against one, same case and race setting.
        let one = id.replace("threads_2", "threads_1");
        let up = summary
            .iter()
            .find(|x| id.ends_with("threads_2") && x.0 == one)
            .map_or(String::new(), |x| format!("{:.2}x", x.2 / s));
        println!(
            "{id:46} {wi:>14} {s:>10.4} {:>16.2} {par:>9} {up:>8}",
            *wi as f64 / s / 1e6
        );
    }
    // The issue's reference (the naive loop at `cc -O2`), then the tiled C: `cc -O2` vectorises its inner
    // loops (GCC 12+); the scalar build is the one-lane-at-a-time reference.
    let refs = [
        ("naive", NATIVE_NAIVE, &["-O2"][..]),
        ("tiled", NATIVE_TILED, &["-O2"][..]),
        ("tiled", NATIVE_TILED, &["-O2", "-fno-tree-vectorize"][..]),
    ];
    for (name, kernel, flags) in refs {
        match native_matmul_seconds(kernel, 256, flags) {
            Ok(native) => {
                println!(
                    "native {name} matmul 256^3 (cc {}): {native:.6} s",
                    flags.join(" ")
                );
                for (id, _, s, _) in summary
                    .iter()
                    .filter(|(id, _, _, _)| id.starts_with("matmul_tiled"))
                {
                    println!("  {id}: emulator / native = {:.1}x", s / native);
                }
            }
            Err(why) => println!(
                "native {name} reference (cc {}) skipped: {why}",
                flags.join(" ")
            ),
        }
    }
}
