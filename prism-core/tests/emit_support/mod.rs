//! Shared helpers for the emitter tests: compile Prism source text to PTX and assemble it with ptxas.
#![allow(dead_code)]

pub mod hopper;

use prism_core::ast::{FnKind, Function};
use prism_core::sync::SyncPolicy;
use prism_core::CompiledKernel;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Parses `src`, then checks and emits every kernel in it (device functions are the dependencies).
pub fn compile_src(src: &str) -> Vec<CompiledKernel> {
    compile_src_with(src, SyncPolicy::Inferred)
}

/// [`compile_src`] with a chosen synchronization policy.
pub fn compile_src_with(src: &str, policy: SyncPolicy) -> Vec<CompiledKernel> {
    let fns = prism_core::parse::parse_source(src)
        .unwrap_or_else(|d| panic!("parse failed: {}", texts(&d)));
    compile_fns_with(&fns, policy)
}

pub fn compile_fns(fns: &[Function]) -> Vec<CompiledKernel> {
    compile_fns_with(fns, SyncPolicy::Inferred)
}

pub fn compile_fns_with(fns: &[Function], policy: SyncPolicy) -> Vec<CompiledKernel> {
    let deps: Vec<Function> = fns
        .iter()
        .filter(|f| f.kind == FnKind::Device)
        .cloned()
        .collect();
    let mut out = Vec::new();
    for k in fns.iter().filter(|f| f.kind == FnKind::Kernel) {
        let stage = prism_core::check_kernel(k, &deps)
            .unwrap_or_else(|d| panic!("check of `{}` failed: {}", k.name, texts(&d)));
        assert_eq!(stage.len(), 1, "`{}` has no type parameters", k.name);
        let checked = stage[0].checked();
        let ks = prism_core::lower(&stage[0], policy)
            .unwrap_or_else(|d| panic!("emit of `{}` failed: {}", k.name, texts(&d)));
        // The emitter lays shared memory out exactly as the checker budgets it.
        assert_eq!(ks.len(), checked.instances.len());
        for (c, i) in ks.iter().zip(&checked.instances) {
            assert_eq!(c.instance, i.values);
            assert_eq!(c.contract.smem_bytes, i.smem_bytes, "smem of `{}`", c.entry);
            assert_eq!(
                c.contract.threads_exact, i.threads_exact,
                "threads of `{}`",
                c.entry
            );
            assert_eq!(
                c.contract.threads_multiple_of, i.threads_multiple_of,
                "{}",
                c.entry
            );
        }
        out.extend(ks);
    }
    out
}

/// Checks (the driver's check stage) and emits, and returns the diagnostics of the first kernel that fails.
pub fn emit_errors(src: &str) -> Vec<prism_core::Diagnostic> {
    let fns = prism_core::parse::parse_source(src)
        .unwrap_or_else(|d| panic!("parse failed: {}", texts(&d)));
    let deps: Vec<Function> = fns
        .iter()
        .filter(|f| f.kind == FnKind::Device)
        .cloned()
        .collect();
    for k in fns.iter().filter(|f| f.kind == FnKind::Kernel) {
        let stage = match prism_core::check_kernel(k, &deps) {
            Ok(c) => c,
            Err(d) => return d,
        };
        for c in &stage {
            if let Err(d) = prism_core::lower(c, prism_core::SyncPolicy::Inferred) {
                return d;
            }
        }
    }
    Vec::new()
}

pub fn texts(d: &[prism_core::Diagnostic]) -> String {
    d.iter().map(|d| d.text()).collect::<Vec<_>>().join("\n")
}

/// A Prism program by file name: from `tests/programs/`, or, for `mma.rs` (paper Figs. 5 and 6), the kernel
/// library's own source, so the paper's running example exists once.
pub fn program(name: &str) -> String {
    let dir = if name == "mma.rs" {
        "../prism-kernels/src"
    } else {
        "tests/programs"
    };
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir).join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// ptxas: `$PRISM_PTXAS`, else `.tools/ptxas/nvidia/cuda_nvcc/bin/ptxas` in the workspace.
pub fn ptxas_path() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("PRISM_PTXAS") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/ptxas/nvidia/cuda_nvcc/bin/ptxas");
    p.is_file().then_some(p)
}

/// Assembles `k.ptx` for `arch` with `ptxas -v`; panics on any error, any warning, local memory, stack
/// frame or spills. Returns ptxas's report (or `None` with a message when ptxas is not installed).
pub fn ptxas_ok(k: &CompiledKernel, arch: &str) -> Option<String> {
    let Some(ptxas) = ptxas_path() else {
        eprintln!(
            "skipping ptxas for `{}`: no ptxas (set PRISM_PTXAS or `pip install --target .tools/ptxas nvidia-cuda-nvcc-cu12==12.9.86`)",
            k.entry
        );
        return None;
    };
    assert!(
        !k.ptx.contains(".local"),
        "`{}` uses local memory:\n{}",
        k.entry,
        k.ptx
    );
    let dir = std::env::temp_dir().join(format!("prism-emit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let src = dir.join(format!("{}.{arch}.ptx", k.entry));
    let obj = dir.join(format!("{}.{arch}.cubin", k.entry));
    std::fs::write(&src, &k.ptx).expect("write ptx");
    let out = Command::new(&ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .output()
        .expect("run ptxas");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let numbered: String = k
        .ptx
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{:4} {l}\n", i + 1))
        .collect();
    assert!(
        out.status.success(),
        "ptxas failed on `{}`:\n{report}\n{numbered}",
        k.entry
    );
    assert!(
        !report.to_lowercase().contains("warning"),
        "ptxas warned on `{}`:\n{report}\n{numbered}",
        k.entry
    );
    for l in report.lines() {
        if l.contains("bytes stack frame") {
            assert!(
                l.contains(" 0 bytes stack frame")
                    && l.contains(" 0 bytes spill stores")
                    && l.contains(" 0 bytes spill loads"),
                "`{}` uses local memory: {l}",
                k.entry
            );
        }
    }
    Some(report)
}

/// Every kernel assembles for sm_90a and sm_80 without warnings.
pub fn assemble_all(ks: &[CompiledKernel]) {
    for k in ks {
        ptxas_ok(k, "sm_90a");
        if k.ptx.contains(".target sm_80") {
            ptxas_ok(k, "sm_80");
        }
    }
}
