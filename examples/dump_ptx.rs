//! Writes the PTX of every kernel instance registered in this binary (the workspace's kernels:
//! `prism-kernels` and `prism-ext-crate`) to `<dir>/<entry>.ptx` and prints how many it wrote.
//!
//! ```text
//! cargo run --example dump_ptx -- <dir>
//! ```
//!
//! Used by `scripts/check-ptx.sh`, which assembles each file with `ptxas -arch=sm_90a`.

use std::path::Path;
use std::process::ExitCode;

// The linker keeps a crate's `inventory` registrations only if the crate is linked in: reference a symbol of
// each kernel crate.
use prism_ext_crate as _;

fn run() -> Result<usize, String> {
    let mut args = std::env::args_os().skip(1);
    let dir = match (args.next(), args.next()) {
        (Some(d), None) => d,
        (None, _) => return Err("missing output directory\nusage: dump_ptx <dir>".into()),
        (Some(_), Some(_)) => return Err("too many arguments\nusage: dump_ptx <dir>".into()),
    };
    let dir = Path::new(&dir);
    if !dir.is_dir() {
        return Err(format!("`{}` is not an existing directory", dir.display()));
    }
    // Touch one item of each crate so they are linked (and their kernels registered).
    prism_ext_crate::link();
    let _ = &prism_kernels::vector_add::INFO;
    let kernels = prism::registered_kernels();
    let mut seen = std::collections::HashSet::new();
    for k in &kernels {
        if !seen.insert(k.entry()) {
            return Err(format!(
                "two registered kernels share the PTX entry `{}`",
                k.entry()
            ));
        }
        let path = dir.join(format!("{}.ptx", k.entry()));
        std::fs::write(&path, k.ptx())
            .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
    }
    Ok(kernels.len())
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            println!("wrote {n} PTX files");
            if n == 0 {
                eprintln!("error: no kernels are registered");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
