//! The PTX of the workspace's sgemm and scan kernels, committed as fixtures under
//! `prism-runtime/tests/fixtures/prism/` for the emulator's bench and differential test (prism-runtime
//! cannot depend on prism-kernels, which depends on it). This test checks that every fixture equals the
//! PTX the Prism compiler emits in this build; `PRISM_BLESS=1 cargo test -p prism --test
//! emu_kernel_fixtures` rewrites them.

// Keep the workspace's kernel crate linked so its kernels are registered.
use prism::kernels as _;

/// Entries whose PTX is a fixture.
const ENTRIES: &[&str] = &[
    "sgemm_smem_32",
    "sgemm_warptile_64_64_16_32_32_2_4_4",
    "scan_kernel_u32_4",
];

#[test]
fn prism_kernel_fixtures_are_current() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/prism-runtime/tests/fixtures/prism"
    );
    let bless = std::env::var_os("PRISM_BLESS").is_some();
    let registered = prism::registered_kernels();
    let mut stale = Vec::new();
    for entry in ENTRIES {
        let k = registered
            .iter()
            .find(|k| k.entry() == *entry)
            .unwrap_or_else(|| panic!("no registered kernel has the entry {entry}"));
        let path = format!("{dir}/{entry}.ptx");
        if bless {
            std::fs::create_dir_all(dir).expect("fixture directory");
            std::fs::write(&path, k.ptx()).expect("write fixture");
            println!("wrote {path}");
            continue;
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        if on_disk != k.ptx() {
            stale.push(path);
        }
    }
    assert!(
        stale.is_empty(),
        "PTX fixtures differ from what the compiler emits now (regenerate with PRISM_BLESS=1 cargo test -p prism --test emu_kernel_fixtures): {stale:?}"
    );
}
