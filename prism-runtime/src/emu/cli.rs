//! Command-line front end of the emulator (placeholder).
use std::io::Write;
/// Runs the CLI.
pub fn run_cli(_args: &[String], _out: &mut dyn Write, err: &mut dyn Write) -> i32 { let _ = writeln!(err, "not yet"); 2 }
