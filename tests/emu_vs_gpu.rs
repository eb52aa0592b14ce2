//! The differential check: every case of `prism-runtime/tests/fixtures/differential.txt` (the nvcc fixtures'
//! entries and the workspace's own kernels, in the `emulate` CLI's syntax) runs on the PTX emulator and, when
//! a GPU is present, on the GPU with the same input bytes; every byte of every buffer is compared afterwards.
//! Integer buffers must match bit for bit; float buffers too, unless the case gives a tolerance (approximate
//! instructions, tensor-core MMA). See docs/EMULATOR.md, "Differential check".
//!
//! The binary is self-contained: the case file and the nvcc PTX are compiled in (`include_str!`), and the
//! workspace kernels' PTX comes from their registrations, so it runs from any directory (the GPU host has no
//! source tree at the build machine's paths).
//!
//! Backend choice: `PRISM_BACKEND=emulator` runs the emulator only; `PRISM_BACKEND=gpu` requires GPU 0 (no
//! GPU is a failure); otherwise the GPU is used when present, and without one every case still runs on the
//! emulator (the file stays valid in CI) and the report says `no GPU: N cases run on the emulator only`.
//! On the emulator each case also runs a second time in lockstep warp mode, and both runs must agree bit for
//! bit (the outputs do not depend on the emulator's scheduling).
//!
//! `cargo test -p prism --test emu_vs_gpu [-- FILTER]` (harness = false: one report, a libtest-style
//! `test result:` line last; exit status 0 when every case passed).

use std::process::ExitCode;

use prism_runtime::emu::cli::{self, CliBackend, CliError, Invocation, Outcome, Parsed};

// Keep the workspace's kernel crates linked so their kernels are registered.
use prism_ext_crate as _;
use prism_kernels as _;

const CASES: &str = include_str!("../prism-runtime/tests/fixtures/differential.txt");
const CASES_PATH: &str = "prism-runtime/tests/fixtures/differential.txt";

/// The nvcc fixtures a case's FILE may name.
const FIXTURES: &[(&str, &str)] = &[
    (
        "kernels.ptx",
        include_str!("../prism-runtime/tests/fixtures/kernels.ptx"),
    ),
    (
        "extra.ptx",
        include_str!("../prism-runtime/tests/fixtures/extra.ptx"),
    ),
    (
        "wmma.ptx",
        include_str!("../prism-runtime/tests/fixtures/wmma.ptx"),
    ),
    (
        "cg.ptx",
        include_str!("../prism-runtime/tests/fixtures/cg.ptx"),
    ),
    (
        "misc.ptx",
        include_str!("../prism-runtime/tests/fixtures/misc.ptx"),
    ),
    (
        "calls.ptx",
        include_str!("../prism-runtime/tests/fixtures/calls.ptx"),
    ),
    (
        "mma_int.ptx",
        include_str!("../prism-runtime/tests/fixtures/mma_int.ptx"),
    ),
    (
        "grid.ptx",
        include_str!("../prism-runtime/tests/fixtures/grid.ptx"),
    ),
];

/// How far apart two float elements may be: within `ulp` units in the last place or within `abs`.
#[derive(Clone, Copy, Debug, Default)]
struct Tolerance {
    ulp: u64,
    abs: f64,
}

struct Case {
    name: String,
    src: &'static str,
    inv: Invocation,
    tol: Tolerance,
}

/// Parses the case file: one case per line, `#` comments, `--tol ulp=N` / `--tol abs=X` taken out before the
/// rest goes to the CLI's parser.
fn parse_cases(text: &str) -> Result<Vec<Case>, String> {
    let registered = prism::registered_kernels();
    let mut cases: Vec<Case> = Vec::new();
    for (lineno, raw) in text.lines().enumerate() {
        let at = format!("{}:{}", CASES_PATH, lineno + 1);
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut tol = Tolerance::default();
        let mut args: Vec<String> = Vec::new();
        let mut tokens = line.split_whitespace();
        while let Some(t) = tokens.next() {
            if t != "--tol" {
                args.push(t.to_string());
                continue;
            }
            let spec = tokens
                .next()
                .ok_or_else(|| format!("{at}: --tol needs ulp=N or abs=X"))?;
            match spec.split_once('=') {
                Some(("ulp", v)) => {
                    tol.ulp = v.parse().map_err(|_| format!("{at}: bad --tol {spec}"))?
                }
                Some(("abs", v)) => {
                    tol.abs = v.parse().map_err(|_| format!("{at}: bad --tol {spec}"))?
                }
                _ => return Err(format!("{at}: bad --tol {spec} (ulp=N or abs=X)")),
            }
        }
        let inv = match cli::parse_invocation(&args).map_err(|e| format!("{at}: {e}"))? {
            Parsed::Run(inv) => inv,
            Parsed::Help => return Err(format!("{at}: --help is not a case")),
        };
        if inv.dump.is_some() || inv.lockstep {
            return Err(format!(
                "{at}: --dump and --lockstep have no place in a case"
            ));
        }
        let src: &'static str = if inv.ptx_path == "prism" {
            registered
                .iter()
                .find(|k| k.entry() == inv.kernel)
                .map(|k| k.ptx())
                .ok_or_else(|| {
                    format!("{at}: no registered kernel has the entry '{}'", inv.kernel)
                })?
        } else {
            FIXTURES
                .iter()
                .find(|(f, _)| *f == inv.ptx_path)
                .map(|(_, s)| *s)
                .ok_or_else(|| {
                    format!(
                        "{at}: unknown FILE '{}' (kernels.ptx, extra.ptx or prism)",
                        inv.ptx_path
                    )
                })?
        };
        let base = format!("{}:{}", inv.ptx_path, inv.kernel);
        let same = cases
            .iter()
            .filter(|c| c.name == base || c.name.starts_with(&format!("{base}#")))
            .count();
        let name = if same == 0 {
            base
        } else {
            format!("{base}#{}", same + 1)
        };
        cases.push(Case {
            name,
            src,
            inv,
            tol,
        });
    }
    Ok(cases)
}

/// Differences found between two copies of one buffer.
#[derive(Default, Debug)]
struct Diff {
    bytes: usize,
    max_abs: f64,
    max_ulp: u64,
    /// Elements outside the tolerance (bit differences for integer buffers).
    bad: usize,
    /// The first element outside the tolerance: (element index, left bits, right bits).
    first_bad: Option<(usize, u64, u64)>,
}

fn elem_size(ty: &str) -> usize {
    match ty {
        "u8" => 1,
        "f16" | "bf16" => 2,
        "i32" | "u32" | "f32" => 4,
        _ => 8,
    }
}

/// The float value and an ordered integer (adjacent floats differ by 1) of `bits` of a float type.
fn float_view(ty: &str, bits: u64) -> (f64, i64, bool) {
    let (v, sign, mag) = match ty {
        "f16" => (
            half::f16::from_bits(bits as u16).to_f64(),
            bits >> 15 & 1,
            bits & 0x7fff,
        ),
        "bf16" => (
            half::bf16::from_bits(bits as u16).to_f64(),
            bits >> 15 & 1,
            bits & 0x7fff,
        ),
        "f32" => (
            f32::from_bits(bits as u32) as f64,
            bits >> 31 & 1,
            bits & 0x7fff_ffff,
        ),
        _ => (
            f64::from_bits(bits),
            bits >> 63,
            bits & 0x7fff_ffff_ffff_ffff,
        ),
    };
    let ordered = if sign == 1 { -(mag as i64) } else { mag as i64 };
    (v, ordered, v.is_nan())
}

fn compare(ty: &str, a: &[u8], b: &[u8], tol: Tolerance) -> Diff {
    let mut d = Diff {
        bytes: a.len().min(b.len()),
        ..Diff::default()
    };
    if a.len() != b.len() {
        d.bad = 1;
        d.first_bad = Some((usize::MAX, a.len() as u64, b.len() as u64));
        return d;
    }
    let es = elem_size(ty);
    let float = matches!(ty, "f16" | "bf16" | "f32" | "f64");
    for (i, (x, y)) in a.chunks(es).zip(b.chunks(es)).enumerate() {
        let mut xb = [0u8; 8];
        let mut yb = [0u8; 8];
        xb[..es].copy_from_slice(x);
        yb[..es].copy_from_slice(y);
        let (xu, yu) = (u64::from_le_bytes(xb), u64::from_le_bytes(yb));
        if xu == yu {
            continue;
        }
        let ok = if float {
            let (xv, xo, xn) = float_view(ty, xu);
            let (yv, yo, yn) = float_view(ty, yu);
            if xn && yn {
                true
            } else if xn || yn {
                d.max_abs = f64::INFINITY;
                d.max_ulp = u64::MAX;
                false
            } else {
                let ulp = xo.abs_diff(yo);
                let abs = (xv - yv).abs();
                d.max_ulp = d.max_ulp.max(ulp);
                d.max_abs = d.max_abs.max(abs);
                ulp <= tol.ulp || abs <= tol.abs
            }
        } else {
            d.max_abs = d.max_abs.max((xu as i64).abs_diff(yu as i64) as f64);
            d.max_ulp = d.max_ulp.max(1);
            false
        };
        if !ok {
            d.bad += 1;
            d.first_bad.get_or_insert((i, xu, yu));
        }
    }
    d
}

/// Compares every buffer of two outcomes of the same case; `Err` names the first buffer that differs.
fn compare_outcomes(a: &Outcome, b: &Outcome, tol: Tolerance) -> (Diff, Result<(), String>) {
    let mut total = Diff::default();
    let mut verdict = Ok(());
    if a.buffers.len() != b.buffers.len() {
        return (
            total,
            Err(format!(
                "{} buffers vs {}",
                a.buffers.len(),
                b.buffers.len()
            )),
        );
    }
    for (x, y) in a.buffers.iter().zip(&b.buffers) {
        let d = compare(&x.ty, &x.bytes, &y.bytes, tol);
        total.bytes += d.bytes;
        total.max_abs = total.max_abs.max(d.max_abs);
        total.max_ulp = total.max_ulp.max(d.max_ulp);
        total.bad += d.bad;
        if let (Some((i, l, r)), Ok(())) = (d.first_bad, &verdict) {
            verdict = Err(format!(
                "arg{} ({}): {} element(s) differ beyond the tolerance, first [{}]: {:#x} vs {:#x}",
                x.index, x.ty, d.bad, i, l, r
            ));
        }
    }
    (total, verdict)
}

/// Whether some buffer of `out` differs from its initial bytes.
fn wrote_something(src: &str, inv: &Invocation, out: &Outcome) -> bool {
    let Some(decls) = prism_runtime::emu::Module::parse(src)
        .ok()
        .and_then(|m| m.entry_params(&inv.kernel))
    else {
        return false;
    };
    let Ok(inputs) = cli::prepare_inputs(inv, &decls) else {
        return false;
    };
    let initial: Vec<&Vec<u8>> = inputs
        .iter()
        .filter_map(|i| match i {
            cli::Input::Buffer { bytes, .. } => Some(bytes),
            _ => None,
        })
        .collect();
    initial.len() == out.buffers.len()
        && initial
            .iter()
            .zip(&out.buffers)
            .any(|(a, b)| **a != b.bytes)
}

#[derive(PartialEq)]
enum Mode {
    EmulatorOnly,
    Auto,
    GpuRequired,
}

/// The case-name filter and the backend mode of this run. libtest-style arguments (`--test-threads=4`,
/// `--nocapture`, ...) are accepted and ignored; a plain argument filters the cases by name.
fn parse_args() -> (Option<String>, Mode) {
    let mut filter: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--test-threads" || a == "--skip" || a == "--format" || a == "--color" {
            args.next();
        } else if !a.starts_with('-') {
            filter = Some(a);
        }
    }
    let mode = match std::env::var(prism_runtime::BACKEND_ENV)
        .as_deref()
        .map(str::trim)
    {
        Ok("emulator") | Ok("emu") => Mode::EmulatorOnly,
        Ok("gpu") => Mode::GpuRequired,
        _ => Mode::Auto,
    };
    (filter, mode)
}

/// A case on the emulator, twice (the default schedule, then lockstep warps), checked on its own: no
/// fault, some buffer changed, both warp modes agree. The first run's outcome, or the row's `vs` column
/// and why the case fails.
fn on_the_emulator(case: &Case) -> Result<Outcome, (&'static str, String)> {
    let mut inv = case.inv.clone();
    inv.backend = CliBackend::Emulator;
    let emu = match cli::execute(case.src, &inv) {
        Ok(o) if o.faults.is_empty() => o,
        Ok(o) => {
            let why = format!(
                "the emulator reports {} fault(s): {}",
                o.faults.len(),
                o.faults[0]
            );
            return Err(("-", why));
        }
        Err(e) => return Err(("-", format!("emulator: {e}"))),
    };
    // A case whose launch changes no byte compares nothing: its arguments are wrong.
    if !wrote_something(case.src, &inv, &emu) {
        let why = "the kernel changed no buffer on the emulator: check the case's arguments";
        return Err(("-", why.into()));
    }
    inv.lockstep = true;
    let self_check = match &cli::execute(case.src, &inv) {
        Ok(o) if o.faults.is_empty() => compare_outcomes(&emu, o, Tolerance::default()).1,
        Ok(o) => Err(format!("lockstep run: {} fault(s)", o.faults.len())),
        Err(e) => Err(format!("lockstep run: {e}")),
    };
    match self_check {
        Ok(()) => Ok(emu),
        Err(e) => Err((
            "lockstep",
            format!("the emulator's two warp modes disagree: {e}"),
        )),
    }
}

fn main() -> ExitCode {
    let (filter, mut mode) = parse_args();
    let cases = match parse_cases(CASES) {
        Ok(c) => c,
        Err(e) => {
            println!("error: {e}");
            println!(
                "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out"
            );
            return ExitCode::FAILURE;
        }
    };
    let total = cases.len();
    let cases: Vec<Case> = cases
        .into_iter()
        .filter(|c| filter.as_ref().is_none_or(|f| c.name.contains(f.as_str())))
        .collect();
    let filtered_out = total - cases.len();
    let mut no_gpu_reason: Option<String> = None;
    if mode == Mode::EmulatorOnly {
        no_gpu_reason = Some(format!("{}=emulator", prism_runtime::BACKEND_ENV));
    }
    let mut device = None;
    let (mut passed, mut failed, mut gpu_cases) = (0usize, 0usize, 0usize);
    let mut failures: Vec<String> = Vec::new();
    println!("{} differential case(s) from {}", cases.len(), CASES_PATH);
    println!(
        "{:<52} {:>8}  {:>10}  {:>8}  {:<8} result",
        "case", "bytes", "max abs", "max ulp", "vs"
    );
    for case in &cases {
        let row = |bytes: usize, abs: f64, ulp: u64, vs: &str, result: &str| {
            let ulp = if ulp == u64::MAX {
                "nan".to_string()
            } else {
                ulp.to_string()
            };
            println!(
                "{:<52} {:>8}  {:>10.3e}  {:>8}  {:<8} {}",
                case.name, bytes, abs, ulp, vs, result
            );
        };
        let fail = |why: String, failures: &mut Vec<String>| {
            failures.push(format!("{}: {}", case.name, why));
        };
        let emu = match on_the_emulator(case) {
            Ok(o) => o,
            Err((vs, why)) => {
                row(0, 0.0, 0, vs, "FAIL");
                fail(why, &mut failures);
                failed += 1;
                continue;
            }
        };
        if no_gpu_reason.is_some() {
            let bytes = emu.buffers.iter().map(|b| b.bytes.len()).sum();
            row(bytes, 0.0, 0, "lockstep", "pass (emulator only)");
            passed += 1;
            continue;
        }
        let mut inv = case.inv.clone();
        inv.backend = CliBackend::Gpu;
        let gpu = match cli::execute(case.src, &inv) {
            Ok(o) => o,
            Err(CliError::NoGpu(m)) if mode == Mode::Auto => {
                no_gpu_reason = Some(m);
                mode = Mode::EmulatorOnly;
                let bytes = emu.buffers.iter().map(|b| b.bytes.len()).sum();
                row(bytes, 0.0, 0, "lockstep", "pass (emulator only)");
                passed += 1;
                continue;
            }
            Err(e) => {
                row(0, 0.0, 0, "gpu", "FAIL");
                fail(format!("GPU: {e}"), &mut failures);
                failed += 1;
                continue;
            }
        };
        gpu_cases += 1;
        device.get_or_insert_with(|| gpu.device.clone());
        for n in &gpu.notes {
            println!("  note ({}): {n}", case.name);
        }
        let (d, verdict) = compare_outcomes(&emu, &gpu, case.tol);
        match verdict {
            Ok(()) => {
                let tol = if d.max_ulp > 0 {
                    format!("pass (within ulp={} abs={})", case.tol.ulp, case.tol.abs)
                } else {
                    "pass (bit-exact)".to_string()
                };
                row(d.bytes, d.max_abs, d.max_ulp, "gpu", &tol);
                passed += 1;
            }
            Err(e) => {
                row(d.bytes, d.max_abs, d.max_ulp, "gpu", "FAIL");
                fail(format!("emulator vs GPU: {e}"), &mut failures);
                failed += 1;
            }
        }
    }
    println!();
    for f in &failures {
        println!("FAIL {f}");
    }
    if let Some(why) = &no_gpu_reason {
        println!(
            "no GPU: {} cases run on the emulator only ({why})",
            cases.len() - gpu_cases
        );
    }
    if let Some(dev) = &device {
        println!("GPU: {gpu_cases} cases compared byte for byte, emulator vs {dev}");
    }
    let ok = failed == 0;
    println!(
        "test result: {}. {passed} passed; {failed} failed; 0 ignored; 0 measured; {filtered_out} filtered out",
        if ok { "ok" } else { "FAILED" }
    );
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
