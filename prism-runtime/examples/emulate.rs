//! Runs a PTX kernel on the CPU emulator; see `prism_runtime::emu::cli` for the argument syntax.
//!
//! `cargo run --release -p prism-runtime --example emulate -- FILE.ptx KERNEL --grid X --block X ARG...`

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code =
        prism_runtime::emu::cli::run_cli(&args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
