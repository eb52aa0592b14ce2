//! Interpreter throughput on the nvcc tiled matmul (prints warp-instructions per second).

use prism_runtime::emu::*;

#[test]
fn matmul_throughput() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/kernels.ptx"
    ))
    .unwrap();
    let m = Module::parse(&src).unwrap();
    let n = if cfg!(debug_assertions) { 96usize } else { 256 };
    let mut s = 42u64;
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    };
    let a: Vec<f32> = (0..n * n).map(|_| next()).collect();
    let b: Vec<f32> = (0..n * n).map(|_| next()).collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    for races in [true, false] {
        let mut e = Emulator::new(EmuConfig {
            check_races: races,
            ..EmuConfig::default()
        });
        let (da, db, dc) = (e.alloc(n * n * 4), e.alloc(n * n * 4), e.alloc(n * n * 4));
        e.write(da, &bytes(&a)).unwrap();
        e.write(db, &bytes(&b)).unwrap();
        let t = std::time::Instant::now();
        let g = (n / 16) as u32;
        let r = e
            .launch(
                &m,
                "matmul_tiled",
                [g, g, 1],
                [16, 16, 1],
                0,
                &[
                    ParamValue::Ptr(da),
                    ParamValue::Ptr(db),
                    ParamValue::Ptr(dc),
                    ParamValue::I32(n as i32),
                    ParamValue::I32(n as i32),
                    ParamValue::I32(n as i32),
                ],
            )
            .unwrap();
        let secs = t.elapsed().as_secs_f64();
        let wi = r.counters.warp_instructions;
        println!(
            "matmul {}x{}x{} (races {}): {} warp-instructions in {:.3} s = {:.2} M warp-instr/s ({:.1} M thread-instr/s)",
            n,
            n,
            n,
            if races { "on" } else { "off" },
            wi,
            secs,
            wi as f64 / secs / 1e6,
            r.counters.thread_instructions as f64 / secs / 1e6
        );
        assert!(wi > 0 && secs > 0.0);
        // spot check one element
        let c: Vec<f32> = e
            .read(dc, n * n * 4)
            .unwrap()
            .chunks(4)
            .map(|x| f32::from_le_bytes(x.try_into().unwrap()))
            .collect();
        let (i, j) = (n / 3, n / 2);
        let want: f32 = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
        assert!((c[i * n + j] - want).abs() < 1e-3);
    }
}
