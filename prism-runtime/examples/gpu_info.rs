//! Says whether a GPU can run Prism kernels here, and what it is: the first step of `scripts/gpu/run.sh`.
//!
//! ```text
//! cargo run -p prism-runtime --example gpu_info            # GPU 0
//! cargo run -p prism-runtime --example gpu_info -- 1       # GPU 1
//! ```
//!
//! Prints the device's properties (name, compute capability, SMs, clocks, memory, the driver's CUDA version)
//! and whether the cuBLAS library loads, then exits 0. Without a usable GPU it prints `no GPU: <reason>` and
//! exits 3; a GPU that is there but fails to initialize exits 1. A GPU older than sm_90 is reported (the
//! kernels are built for sm_90a) and exits 4.

use prism_runtime::{Device, RuntimeError};

fn main() {
    let ordinal = match std::env::args().nth(1).map(|a| a.parse::<usize>()) {
        None => 0,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: gpu_info [ORDINAL]");
            std::process::exit(2);
        }
    };
    let dev = match Device::gpu(ordinal) {
        Ok(d) => d,
        Err(RuntimeError::NoGpu(why)) => {
            println!("no GPU: {why}");
            std::process::exit(3);
        }
        Err(e) => {
            println!("GPU {ordinal} is present but unusable: {e}");
            std::process::exit(1);
        }
    };
    let p = dev.properties();
    println!("device: {p}");
    // SAFETY: only tries to dlopen the library and closes it again.
    let cublas = unsafe { prism_runtime::cudarc::cublas::sys::is_culib_present() };
    println!(
        "cuBLAS: {}",
        if cublas {
            "loads"
        } else {
            "cannot be loaded (benchmarks against cuBLAS will fail): put libcublas.so on LD_LIBRARY_PATH"
        }
    );
    if p.compute_capability.0 < 9 {
        println!(
            "compute capability {}.{} is below 9.0: Prism's PTX targets sm_90a and will not load",
            p.compute_capability.0, p.compute_capability.1
        );
        std::process::exit(4);
    }
}
