//! The paper's programs (tests/programs/) emit PTX that ptxas assembles without warnings.
mod emit_support;
use emit_support::*;

fn check_program(file: &str, entries: &[&str]) -> Vec<prism_core::CompiledKernel> {
    let ks = compile_src(&program(file));
    let names: Vec<&str> = ks.iter().map(|k| k.entry.as_str()).collect();
    assert_eq!(names, entries, "{file}");
    for k in &ks {
        assert!(
            k.ptx.starts_with("//")
                && k.ptx
                    .contains(".version 8.0\n.target sm_80\n.address_size 64\n")
        );
        assert_eq!(k.ptx.matches(".visible .entry").count(), 1);
    }
    assemble_all(&ks);
    ks
}

#[test]
fn vector_add() {
    let ks = check_program("vector_add.rs", &["vector_add"]);
    let p = &ks[0].ptx;
    assert!(p.contains("ld.global.nc.f32"), "{p}");
    assert!(p.contains("st.global.f32"), "{p}");
    assert!(
        !p.contains("bar.sync"),
        "grid-level partition needs no barrier:\n{p}"
    );
}

#[test]
fn fig6_mma_tf32() {
    let ks = check_program("mma.rs", &["mma_tf32_naive"]);
    let k = &ks[0];
    assert!(
        k.ptx
            .contains("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
        "{}",
        k.ptx
    );
    assert!(k.ptx.contains("cvt.rna.tf32.f32"));
    assert!(k.ptx.contains("bar.sync 0;"));
    // simple_mma's partition of the warp's tile needs no barrier once synchronization is inferred
    // (docs/SYNC.md); the naive policy brackets every partition and claim with one.
    let barriers = |ptx: &str| {
        ptx.lines()
            .filter(|l| l.trim_start().starts_with("bar."))
            .count()
    };
    let naive = compile_src_with(&program("mma.rs"), prism_core::sync::SyncPolicy::Naive);
    assert!(
        barriers(&naive[0].ptx) > barriers(&k.ptx),
        "naive {} vs inferred {}",
        barriers(&naive[0].ptx),
        barriers(&k.ptx)
    );
    assert!(k.ptx.contains("ld.shared.f32"));
    assert_eq!(k.contract.smem_bytes, 1280);
    assert_eq!(k.contract.threads_multiple_of, 32);
    if let Some(r) = ptxas_ok(k, "sm_90a") {
        eprintln!("fig6: {} bytes of PTX; ptxas: {r}", k.ptx.len());
    }
}

#[test]
fn fig2_warp_mma() {
    let src = program("fig2_warp_mma.rs");
    let ks = compile_src(&src);
    assert!(!ks.is_empty());
    assemble_all(&ks);
}

#[test]
fn fig5_simple_mma() {
    let ks = compile_src(&program("mma.rs"));
    assemble_all(&ks);
}

#[test]
fn cub_load_store() {
    let ks = compile_src(&program("cub_load_store.rs"));
    assert!(!ks.is_empty());
    assemble_all(&ks);
}

/// `PRISM_DUMP_PTX=dir cargo test` writes every kernel's PTX there (for reading and the emulator CLI).
#[test]
fn dump_ptx() {
    let Ok(dir) = std::env::var("PRISM_DUMP_PTX") else {
        return;
    };
    for f in [
        "vector_add.rs",
        "mma.rs",
        "fig2_warp_mma.rs",
        "cub_load_store.rs",
    ] {
        for k in compile_src(&program(f)) {
            std::fs::write(format!("{dir}/{}.ptx", k.entry), &k.ptx).expect("write");
        }
    }
}
