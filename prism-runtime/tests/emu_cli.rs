//! The `emulate` CLI, through `prism_runtime::emu::cli::run_cli`.

use prism_runtime::emu::cli::run_cli;

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{}", env!("CARGO_MANIFEST_DIR"), name)
}

fn run(args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_cli(&args, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn tmpdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("prism-emu-cli-{}-{}", tag, std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn json_run_dump_and_exit_status() {
    let k = fixture("kernels.ptx");
    let dir = tmpdir("ok");
    let ds = dir.to_str().unwrap();
    let (code, out, err) = run(&[
        &k,
        "histogram_global",
        "--grid",
        "2",
        "--block",
        "64",
        "--seed",
        "5",
        "--json",
        "--dump",
        ds,
        "buf:u32:100:rand",
        "buf:u32:16:zero",
        "i32:100",
        "i32:16",
    ]);
    assert_eq!(code, 0, "{} {}", out, err);
    assert!(out.trim_start().starts_with("{\"faults\":[]"), "{}", out);
    assert!(out.contains("\"global_accesses\":"));
    let data = std::fs::read(dir.join("arg0.bin")).unwrap();
    let hist = std::fs::read(dir.join("arg1.bin")).unwrap();
    assert_eq!(data.len(), 400);
    assert!(!dir.join("arg2.bin").exists());
    let mut want = [0u32; 16];
    for c in data.chunks(4) {
        want[(u32::from_le_bytes(c.try_into().unwrap()) % 16) as usize] += 1;
    }
    let got: Vec<u32> = hist
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, want);
    assert!(
        data.chunks(4).any(|c| c != [0, 0, 0, 0]),
        "rand init is not all zero"
    );
    // @path init reads the dumped file back
    let path = format!("buf:u32:100:@{}", dir.join("arg0.bin").display());
    let (code, out, _) = run(&[
        &k,
        "histogram_global",
        "--grid",
        "2",
        "--block",
        "64",
        "--dump",
        ds,
        &path,
        "buf:u32:16:zero",
        "i32:100",
        "i32:16",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("warp_instructions"));
    assert_eq!(std::fs::read(dir.join("arg1.bin")).unwrap(), hist);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn faults_give_nonzero_status_and_json_faults() {
    let f = fixture("faults.ptx");
    let (code, out, err) = run(&[
        &f,
        "oob_global",
        "--grid",
        "3",
        "--block",
        "32",
        "--json",
        "buf:f32:64:zero",
        "i32:64",
        "i32:1",
    ]);
    assert_eq!(code, 1);
    assert!(out.contains("\"kind\":\"OutOfBounds\""), "{}", out);
    assert!(
        out.contains("\"block\":[2,0,0]") && out.contains("\"lane\":0"),
        "{}",
        out
    );
    assert!(err.contains("OutOfBounds"));
    let (code, out, _) = run(&[
        &f,
        "spin_lock",
        "--grid",
        "1",
        "--block",
        "32",
        "--lockstep",
        "--max-steps",
        "20000",
        "--json",
    ]);
    assert_eq!(code, 1);
    assert!(out.contains("Livelock"));
    let (code, out, _) = run(&[
        &f,
        "spin_lock",
        "--grid",
        "1",
        "--block",
        "32",
        "--no-races",
    ]);
    assert_eq!(code, 0, "{}", out);
    assert!(out.contains("0 fault(s)"));
}

#[test]
fn usage_errors_are_reported_not_panics() {
    let k = fixture("kernels.ptx");
    for args in [
        vec![],
        vec![k.as_str()],
        vec![k.as_str(), "nope", "--grid", "1", "--block", "1"],
        vec![k.as_str(), "reduce_sum", "--grid", "1", "--block", "32"],
        vec![
            k.as_str(),
            "reduce_sum",
            "--grid",
            "1",
            "--block",
            "32",
            "buf:f32:4:zero",
            "buf:f99:1:zero",
            "i32:1",
        ],
        vec![
            k.as_str(),
            "reduce_sum",
            "--grid",
            "1",
            "--block",
            "32",
            "buf:f32:4:zero",
            "buf:f32:1:wat",
            "i32:1",
        ],
        vec![
            k.as_str(),
            "reduce_sum",
            "--grid",
            "1",
            "--block",
            "32",
            "buf:f32:4:zero",
            "buf:f32:1:zero",
            "i32:x",
        ],
        vec![
            k.as_str(),
            "reduce_sum",
            "--grid",
            "1",
            "--block",
            "4096",
            "buf:f32:4:zero",
            "buf:f32:1:zero",
            "i32:1",
        ],
        vec![k.as_str(), "reduce_sum", "--grid", "a,b", "--block", "32"],
        vec!["/nonexistent.ptx", "k", "--grid", "1", "--block", "1"],
        vec![k.as_str(), "reduce_sum", "--bogus"],
        vec![
            k.as_str(),
            "reduce_sum",
            "--grid",
            "1",
            "--block",
            "32",
            "--threads",
            "0",
        ],
        vec![
            k.as_str(),
            "reduce_sum",
            "--grid",
            "1",
            "--block",
            "32",
            "--threads",
            "many",
        ],
    ] {
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{:?}", args);
        assert!(err.starts_with("error:"), "{:?}: {}", args, err);
    }
}

#[test]
fn gpu_backend_shares_the_inputs_and_says_when_there_is_no_gpu() {
    use prism_runtime::emu::cli::{execute, parse_invocation, CliBackend, CliError, Parsed};
    let k = fixture("kernels.ptx");
    let args: Vec<String> = [
        k.as_str(),
        "warp_scan",
        "--grid",
        "2",
        "--block",
        "128",
        "--backend",
        "gpu",
        "buf:i32:200:rand",
        "buf:i32:200:zero",
        "i32:200",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let Ok(Parsed::Run(inv)) = parse_invocation(&args) else {
        panic!("parses")
    };
    assert_eq!(inv.backend, CliBackend::Gpu);
    let src = std::fs::read_to_string(&k).expect("fixture");
    let mut emu_inv = inv.clone();
    emu_inv.backend = CliBackend::Emulator;
    let emu = execute(&src, &emu_inv).expect("runs on the emulator");
    assert_eq!(emu.buffers.len(), 2);
    assert_eq!(emu.buffers[0].bytes.len(), 800);
    match execute(&src, &inv) {
        // No GPU here: a distinct error (exit 3), not a panic.
        Err(e @ CliError::NoGpu(_)) => {
            assert_eq!(e.exit_code(), 3);
            let (code, _, err) = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
            assert_eq!(code, 3, "{err}");
            assert!(err.contains("no GPU"), "{err}");
        }
        // A GPU: the same inputs, the same outputs (a warp scan of integers).
        Ok(gpu) => {
            assert_eq!(gpu.buffers.len(), 2);
            for (a, b) in emu.buffers.iter().zip(&gpu.buffers) {
                assert_eq!(a.bytes, b.bytes, "arg{}", a.index);
            }
        }
        Err(e) => panic!("{e}"),
    }
    // Bad backend names and malformed struct bytes are usage errors (exit 2).
    let (code, _, err) = run(&[
        &k,
        "warp_scan",
        "--grid",
        "1",
        "--block",
        "32",
        "--backend",
        "tpu",
    ]);
    assert_eq!(code, 2, "{err}");
    let x = fixture("extra.ptx");
    let (code, _, err) = run(&[
        &x,
        "ldg_struct",
        "--grid",
        "1",
        "--block",
        "32",
        "buf:f32:4:rand",
        "buf:f32:4:zero",
        "bytes:0x123",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("hex"), "{err}");
    // The right number of struct bytes inline: runs.
    let (code, _, err) = run(&[
        &x,
        "ldg_struct",
        "--grid",
        "1",
        "--block",
        "32",
        "buf:f32:4:rand",
        "buf:f32:4:zero",
        "bytes:0x000000400400000000000000000000000000000000000000",
    ]);
    assert_eq!(code, 0, "{err}");
    // A struct of the wrong size is refused before anything runs.
    let (code, _, err) = run(&[
        &x,
        "ldg_struct",
        "--grid",
        "1",
        "--block",
        "32",
        "buf:f32:4:rand",
        "buf:f32:4:zero",
        "bytes:0x0000",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("24 bytes"), "{err}");
}

/// `tmap:TYPE:DIMS:BOX:SWIZZLE:INIT[:STRIDES]`: the Hopper probe's TMA load, driven from the CLI with the
/// H100's input tensor, writes exactly the shared-memory image the H100 wrote; bad maps are usage errors.
#[test]
fn tensor_map_arguments() {
    let p = fixture("hopper/probe.ptx");
    let g = fixture("hopper/h100/tma_load_128B_64x8_oob_xy.global.bin");
    let dir = tmpdir("tmap");
    let ds = dir.to_str().unwrap();
    let tm = format!("tmap:u16:104x40:64x8:128:@{g}");
    let args = [
        p.as_str(),
        "_Z8tma_load14CUtensorMap_stiiiPhiPi",
        "--grid",
        "1",
        "--block",
        "128",
        "--smem",
        "2048",
        tm.as_str(),
        "i32:64",
        "i32:36",
        "i32:1024",
        "buf:u8:1024:zero",
        "i32:1024",
        "buf:u32:1:zero",
        "--dump",
        ds,
    ];
    let (code, _out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let got = std::fs::read(dir.join("arg4.bin")).unwrap();
    let want = std::fs::read(fixture("hopper/h100/tma_load_128B_64x8_oob_xy.smem.bin")).unwrap();
    assert_eq!(got, want, "shared-memory image differs from the H100's");
    assert_eq!(
        std::fs::read(dir.join("arg0.bin")).unwrap(),
        std::fs::read(&g).unwrap()
    );
    // Explicit strides (the packed ones) give the same result.
    let tm2 = format!("tmap:u16:104x40:64x8:128:@{g}:208");
    let mut a2 = args;
    a2[8] = tm2.as_str();
    let (code, _, err) = run(&a2);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(dir.join("arg4.bin")).unwrap(), want);
    // A box wider than the swizzle span, a stride that is not a multiple of 16, a malformed spec.
    for (bad, needle) in [
        ("tmap:u16:104x40:128x8:128:zero", "swizzle span"),
        ("tmap:u16:104x40:64x8:none:zero:200", "multiple of 16"),
        ("tmap:u16:104x40:64x8:zero", "expected tmap:"),
        ("tmap:u16:104x40:64x8:96:zero", "SWIZZLE"),
    ] {
        let mut a3 = args;
        a3[8] = bad;
        let (code, _, err) = run(&a3);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains(needle), "{bad}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--cluster X[,Y,Z]`: the probe's cluster-id kernel in 2×2 clusters of a 4×4 grid writes what the H100 wrote.
#[test]
fn cluster_launch_from_the_cli() {
    let p = fixture("hopper/probe.ptx");
    let dir = tmpdir("cluster");
    let ds = dir.to_str().unwrap();
    let (code, _, err) = run(&[
        &p,
        "_Z11cluster_idsPj",
        "--grid",
        "4,4",
        "--block",
        "32",
        "--cluster",
        "2,2",
        "buf:u32:192:zero",
        "--dump",
        ds,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read(dir.join("arg0.bin")).unwrap(),
        std::fs::read(fixture("hopper/h100/cluster_2x2_grid_4x4.ids.bin")).unwrap()
    );
    let (code, _, err) = run(&[
        &p,
        "_Z11cluster_idsPj",
        "--grid",
        "3,4",
        "--block",
        "32",
        "--cluster",
        "2,2",
        "buf:u32:192:zero",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a multiple of the cluster"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--threads N` picks how many OS threads a launch's blocks may use; the result is the same on 1 and 2.
#[test]
fn threads_option_gives_the_same_result() {
    let k = fixture("kernels.ptx");
    let mut outs = Vec::new();
    for threads in ["1", "2"] {
        let dir = tmpdir(&format!("threads{threads}"));
        let (code, out, err) = run(&[
            &k,
            "histogram_global",
            "--grid",
            "8",
            "--block",
            "64",
            "--threads",
            threads,
            "--dump",
            dir.to_str().unwrap(),
            "buf:u32:512:iota",
            "buf:u32:16:zero",
            "i32:512",
            "i32:16",
        ]);
        assert_eq!(code, 0, "--threads {threads}: {out} {err}");
        outs.push(std::fs::read(dir.join("arg1.bin")).unwrap());
    }
    assert_eq!(outs[0], outs[1]);
    assert_eq!(
        outs[0]
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .sum::<u32>(),
        512
    );
}

/// `tmapptr:`: a kernel taking `const CUtensorMap*` (the map in global memory) loads through it; `tmap:`
/// (128 bytes by value) for that 8-byte parameter is a usage error.
#[test]
fn tensor_map_by_pointer() {
    let dir = tmpdir("tmapptr");
    std::fs::create_dir_all(&dir).unwrap();
    let ptx = dir.join("k.ptx");
    std::fs::write(
        &ptx,
        r#".version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 mapp, .param .u64 out)
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<2>;
    .shared .align 128 .b8 buf[1024];
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, buf;
    mov.u32 %r3, bar;
    ld.param.u64 %rd2, [mapp];
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra WAIT;
    mbarrier.init.shared.b64 [%r3], 1;
    mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r3], 1024;
    mov.u32 %r4, 0;
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd2, {%r4, %r4}], [%r3];
WAIT:
    bar.sync 0;
LOOP:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;
    @!%p2 bra LOOP;
    shl.b32 %r5, %r1, 2;
    add.u32 %r6, %r2, %r5;
    ld.shared.f32 %f1, [%r6];
    ld.param.u64 %rd6, [out];
    cvta.to.global.u64 %rd6, %rd6;
    mul.wide.u32 %rd7, %r5, 1;
    add.s64 %rd6, %rd6, %rd7;
    st.global.f32 [%rd6], %f1;
    ret;
}
"#,
    )
    .unwrap();
    let ds = dir.join("out");
    let (p, d) = (ptx.to_str().unwrap(), ds.to_str().unwrap());
    let mut args = vec![
        p,
        "k",
        "--grid",
        "1",
        "--block",
        "256",
        "tmapptr:f32:32x8:32x8:none:iota",
        "buf:f32:256:zero",
        "--dump",
        d,
    ];
    let (code, _, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let got: Vec<f32> = std::fs::read(ds.join("arg1.bin"))
        .unwrap()
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, (0..256).map(|i| i as f32).collect::<Vec<_>>());
    args[6] = "tmap:f32:32x8:32x8:none:iota";
    let (code, _, err) = run(&args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("8 bytes") && err.contains("128"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--symbol NAME=0xHEX|@path`: a `__constant__` array set before the launch (what `cudaMemcpyToSymbol`
/// does) and a `__device__` counter read back with `--dump` as `sym_<name>.bin`; an unknown name is a
/// usage error.
#[test]
fn module_variables_from_the_command_line() {
    let dir = tmpdir("symbol");
    std::fs::create_dir_all(&dir).unwrap();
    let ptx = dir.join("k.ptx");
    std::fs::write(
        &ptx,
        r#".version 8.0
.target sm_90
.address_size 64
.const .align 4 .b8 coef[16];
.global .align 4 .u32 hits;
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<6>;
    .reg .f32 %f<4>;
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 3;
    mul.wide.u32 %rd1, %r2, 4;
    mov.u64 %rd2, coef;
    add.s64 %rd3, %rd2, %rd1;
    ld.const.f32 %f1, [%rd3];
    ld.param.u64 %rd4, [out];
    cvta.to.global.u64 %rd4, %rd4;
    mul.wide.u32 %rd5, %r1, 4;
    add.s64 %rd4, %rd4, %rd5;
    st.global.f32 [%rd4], %f1;
    atom.global.add.u32 %r3, [hits], 1;
    ret;
}
"#,
    )
    .unwrap();
    let coef: Vec<u8> = [1.5f32, -2.0, 0.25, 8.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let hex: String = coef.iter().map(|b| format!("{b:02x}")).collect();
    let out = dir.join("out");
    let (p, o) = (ptx.to_str().unwrap(), out.to_str().unwrap());
    let sym = format!("coef=0x{hex}");
    let hits = dir.join("hits.bin");
    std::fs::write(&hits, 5u32.to_le_bytes()).unwrap();
    let hits_arg = format!("hits=@{}", hits.display());
    let args = [
        p,
        "k",
        "--grid",
        "1",
        "--block",
        "64",
        "--symbol",
        &sym,
        "--symbol",
        &hits_arg,
        "buf:f32:64:zero",
        "--dump",
        o,
    ];
    let (code, _, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    let got: Vec<f32> = std::fs::read(out.join("arg0.bin"))
        .unwrap()
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let want: Vec<f32> = (0..64).map(|t| [1.5f32, -2.0, 0.25, 8.0][t % 4]).collect();
    assert_eq!(got, want);
    assert_eq!(
        std::fs::read(out.join("sym_hits.bin")).unwrap(),
        69u32.to_le_bytes(),
        "5 + 64 atomics"
    );
    assert_eq!(std::fs::read(out.join("sym_coef.bin")).unwrap(), coef);
    let mut bad = args;
    bad[7] = "nowhere=0x00";
    let (code, _, err) = run(&bad);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no .global or .const variable"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--cooperative` launches as `cuLaunchCooperativeKernel` does: cooperative groups' grid barrier works
/// (every block has arrived after it); without it the kernel traps and the fault says what to do.
#[test]
fn cooperative_launch_from_the_cli() {
    let p = fixture("grid.ptx");
    let dir = tmpdir("coop");
    let ds = dir.to_str().unwrap();
    let n = (4 * 256 * 2 + 3).to_string();
    let (bn, i_n) = (format!("buf:f32:{n}:rand"), format!("i32:{n}"));
    let zn = format!("buf:f32:{n}:zero");
    let args = |coop: bool| {
        let mut v = vec![
            p.as_str(),
            "coop_normalise",
            "--grid",
            "4",
            "--block",
            "256",
            bn.as_str(),
            "buf:f32:4:zero",
            zn.as_str(),
            zn.as_str(),
            i_n.as_str(),
            "i32:1",
            "buf:u32:1:zero",
            "buf:u32:4:zero",
            "--dump",
            ds,
        ];
        if coop {
            v.push("--cooperative");
        }
        v
    };
    let (code, _, err) = run(&args(true));
    assert_eq!(code, 0, "{err}");
    let seen = std::fs::read(dir.join("arg7.bin")).unwrap();
    assert_eq!(
        seen,
        [4u32; 4]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<u8>>()
    );
    // One smoothing round keeps the normalised sum at 1.
    let b = std::fs::read(dir.join("arg3.bin")).unwrap();
    let sum: f64 = b
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
        .sum();
    assert!((sum - 1.0).abs() < 1e-4, "sum {sum}");
    let (code, out, err) = run(&args(false));
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains("Trap") && out.contains("--cooperative"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn words(n: &[u8]) -> Vec<u32> {
    n.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// `--then` runs several kernels on the same device memory: a named buffer (`x=buf:…`) is scaled by one
/// launch, read through a struct parameter holding its address (`struct:ref:x,u32:250`) by the next, whose
/// named result (`p`) a third reduces (`ref:p`). `--dump` writes each launch's buffer arguments and the
/// named buffers' final contents.
#[test]
fn several_launches_share_named_buffers() {
    let p = fixture("cli_multi.ptx");
    let dir = tmpdir("multi");
    let ds = dir.to_str().unwrap();
    let (code, out, err) = run(&[
        &p,
        "scale",
        "--grid",
        "4",
        "--block",
        "64",
        "x=buf:u32:250:iota",
        "u32:250",
        "u32:3",
        "--dump",
        ds,
        "--then",
        "block_sums",
        "--grid",
        "4",
        "--block",
        "64",
        "struct:ref:x,u32:250",
        "p=buf:u32:4:zero",
        "--then",
        "total",
        "--grid",
        "1",
        "--block",
        "32",
        "ref:p",
        "u32:4",
        "buf:u64:1:zero",
        "--then",
        "block_sums",
        "--grid",
        "1",
        "--block",
        "64",
        "struct:ref:x+400,u32:50",
        "q=buf:u32:1:zero",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("0 fault(s)").count(), 4, "{out}");
    let x = words(&std::fs::read(dir.join("x.bin")).unwrap());
    assert_eq!(x, (0..250u32).map(|i| 3 * i).collect::<Vec<_>>());
    let partial = words(&std::fs::read(dir.join("p.bin")).unwrap());
    let want: Vec<u32> = (0..4)
        .map(|b| (b * 64..(b * 64 + 64).min(250)).map(|i| 3 * i).sum())
        .collect();
    assert_eq!(partial, want);
    let total = std::fs::read(dir.join("launch2_arg2.bin")).unwrap();
    assert_eq!(
        u64::from_le_bytes(total.try_into().unwrap()),
        (0..250u64).map(|i| 3 * i).sum::<u64>()
    );
    // ref:x+400 is element 100: the 50 elements from there.
    let q = words(&std::fs::read(dir.join("q.bin")).unwrap());
    assert_eq!(q, vec![(100..150u32).map(|i| 3 * i).sum::<u32>()]);
    // Each launch's buffer arguments after that launch.
    assert_eq!(
        words(&std::fs::read(dir.join("launch0_arg0.bin")).unwrap()),
        x
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a multi-launch command line gets wrong is a usage error (exit 2) before anything runs, naming the
/// launch; a fault stops the run at that launch.
#[test]
fn multi_launch_mistakes_are_usage_errors() {
    let p = fixture("cli_multi.ptx");
    let base = [p.as_str(), "scale", "--grid", "1", "--block", "32"];
    let case = |rest: &[&str]| {
        let mut v: Vec<&str> = base.to_vec();
        v.extend_from_slice(rest);
        run(&v)
    };
    for (rest, want) in [
        (
            &[
                "x=buf:u32:8:iota",
                "u32:8",
                "u32:2",
                "--then",
                "total",
                "--grid",
                "1",
                "--block",
                "32",
                "ref:y",
                "u32:1",
                "buf:u64:1:zero",
            ][..],
            "launch 1: argument 0: ref:y: no buffer of that name",
        ),
        (
            &[
                "x=buf:u32:8:iota",
                "u32:8",
                "u32:2",
                "--then",
                "scale",
                "--grid",
                "1",
                "--block",
                "32",
                "x=buf:u32:8:zero",
                "u32:8",
                "u32:2",
            ][..],
            "a buffer named 'x' already exists",
        ),
        (
            &[
                "x=buf:u32:8:iota",
                "u32:8",
                "u32:2",
                "--then",
                "scale",
                "--seed",
                "3",
                "--grid",
                "1",
                "--block",
                "32",
                "ref:x",
                "u32:8",
                "u32:2",
            ][..],
            "--seed concerns the whole run",
        ),
        (
            &[
                "x=buf:u32:8:iota",
                "u32:8",
                "u32:2",
                "--then",
                "total",
                "--grid",
                "1",
                "--block",
                "32",
                "ref:x+64",
                "u32:1",
                "buf:u64:1:zero",
            ][..],
            "past the end of the 32-byte buffer",
        ),
        (&["n=u32:8", "u32:8", "u32:2"][..], "only buffers are named"),
        (
            &[
                "x=buf:u32:8:iota",
                "u32:8",
                "u32:2",
                "--then",
                "block_sums",
                "--grid",
                "1",
                "--block",
                "32",
                "struct:ref:x",
                "buf:u32:1:zero",
            ][..],
            "is 16 bytes, the value has 8",
        ),
        (
            &[
                "buf:u32:8:iota",
                "u32:8",
                "u32:2",
                "--backend",
                "gpu",
                "--then",
                "scale",
                "--grid",
                "1",
                "--block",
                "32",
                "buf:u32:8:iota",
                "u32:8",
                "u32:2",
            ][..],
            "--then runs on the emulator only",
        ),
    ] {
        let (code, _, err) = case(rest);
        assert_eq!(code, 2, "{rest:?}: {err}");
        assert!(err.contains(want), "{rest:?}: {err}");
    }
    // A fault in the first launch (an out-of-bounds write: n past the buffer) stops the run there.
    let (code, out, err) = case(&[
        "x=buf:u32:8:iota",
        "u32:64",
        "u32:2",
        "--then",
        "scale",
        "--grid",
        "1",
        "--block",
        "32",
        "ref:x",
        "u32:8",
        "u32:2",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(out.matches("kernel scale").count(), 1, "{out}");
    assert!(
        err.contains("the 1 launch(es) after it did not run"),
        "{err}"
    );
}

/// `tex:` and `surf:` make texture and surface objects over new buffers and pass their handles:
/// `tex1Dfetch` over an `iota` texture, a surface stencil whose output surface is dumped by name.
#[test]
fn texture_and_surface_arguments() {
    let p = fixture("texture.ptx");
    let dir = tmpdir("tex");
    let ds = dir.to_str().unwrap();
    let (code, _, err) = run(&[
        &p,
        "fetch1d",
        "--grid",
        "1",
        "--block",
        "32",
        "tex:f32:10:iota",
        "buf:f32:14:zero",
        "i32:10",
        "--dump",
        ds,
    ]);
    assert_eq!(code, 0, "{err}");
    let got: Vec<f32> = std::fs::read(dir.join("arg1.bin"))
        .unwrap()
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let want: Vec<f32> = (0..14)
        .map(|i| {
            if (2..12).contains(&i) {
                (i - 2) as f32
            } else {
                0.0
            }
        })
        .collect();
    assert_eq!(got, want);
    let (code, _, err) = run(&[
        &p,
        "surf_stencil",
        "--grid",
        "1,3",
        "--block",
        "32",
        "surf:f32:5x3:iota",
        "o=surf:f32:5x3:zero",
        "i32:5",
        "i32:3",
        "--dump",
        ds,
    ]);
    assert_eq!(code, 0, "{err}");
    let o: Vec<f32> = std::fs::read(dir.join("o.bin"))
        .unwrap()
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let v = |x: usize, y: i64| {
        if (0..3).contains(&y) {
            (y as usize * 5 + x) as f32
        } else {
            0.0
        }
    };
    for y in 0..3 {
        for x in 0..5 {
            let want = 2.0 * v(x, y) + 1.0 + v(x, y - 1) + v(x, y + 1) + 0.5 * v((x + 1).min(4), y);
            assert_eq!(o[y as usize * 5 + x], want, "({x}, {y})");
        }
    }
    // A descriptor the runtime refuses, and an option it does not know: usage errors.
    for (arg, want) in [
        ("tex:i32:8:iota:linear", "linear filtering"),
        ("tex:f32:8:iota:bilinear", "texture option 'bilinear'"),
    ] {
        let (code, _, err) = run(&[
            &p,
            "fetch1d",
            "--grid",
            "1",
            "--block",
            "32",
            arg,
            "buf:f32:12:zero",
            "i32:8",
        ]);
        assert_eq!(code, 2, "{arg}: {err}");
        assert!(err.contains(want), "{arg}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--buffer NAME=buf:…` makes named buffers before the first launch, for a kernel that reaches its buffers
/// only through a struct (`struct Axpy { const float* x; float* y; int n; float a; }`); a `--then` not
/// followed by a kernel name says so.
#[test]
fn buffers_for_a_struct_of_pointers() {
    let p = fixture("cli_multi.ptx");
    let dir = tmpdir("buffer");
    let ds = dir.to_str().unwrap();
    let (code, _, err) = run(&[
        &p,
        "axpy_params",
        "--grid",
        "2",
        "--block",
        "64",
        "--buffer",
        "x=buf:f32:100:iota",
        "--buffer",
        "y=buf:f32:100:iota",
        "struct:ref:x,ref:y,i32:90,f32:2.5",
        "--dump",
        ds,
    ]);
    assert_eq!(code, 0, "{err}");
    let y: Vec<f32> = std::fs::read(dir.join("y.bin"))
        .unwrap()
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let want: Vec<f32> = (0..100)
        .map(|i| if i < 90 { 3.5 * i as f32 } else { i as f32 })
        .collect();
    assert_eq!(y, want);
    for (tail, msg) in [
        (&["--then"][..], "--then must be followed by a kernel name"),
        (
            &["--then", "--grid", "1", "--block", "32", "ref:x"][..],
            "--then must be followed by a kernel name",
        ),
        (&["--buffer", "x"][..], "expected NAME=buf:TYPE:COUNT:INIT"),
    ] {
        let mut v = vec![
            p.as_str(),
            "axpy_params",
            "--grid",
            "1",
            "--block",
            "32",
            "--buffer",
            "x=buf:f32:4:zero",
        ];
        v.extend_from_slice(&[
            "--buffer",
            "y=buf:f32:4:zero",
            "struct:ref:x,ref:y,i32:4,f32:1",
        ]);
        v.extend_from_slice(tail);
        let (code, _, err) = run(&v);
        assert_eq!(code, 2, "{tail:?}: {err}");
        assert!(err.contains(msg), "{tail:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// 8- and 16-bit scalars by value (`char`, `short`, `__half`, `__nv_bfloat16` parameters) from their
/// `u8:`/`i8:`/`u16:`/`i16:`/`f16:`/`bf16:` forms; a 32-bit value for a 1-byte parameter stays a usage error.
#[test]
fn narrow_scalars_by_value() {
    let dir = tmpdir("narrow");
    std::fs::create_dir_all(&dir).unwrap();
    let ptx = dir.join("k.ptx");
    std::fs::write(
        &ptx,
        r#".version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out, .param .u8 a, .param .s8 b, .param .u16 c, .param .b16 h, .param .align 2 .b8 bf[2], .param .s16 e)
{
    .reg .b16 %h<8>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u8 %r1, [a];
    ld.param.s8 %r2, [b];
    ld.param.u16 %r3, [c];
    ld.param.b16 %h1, [h];
    ld.param.b16 %h2, [bf];
    ld.param.s16 %r4, [e];
    st.global.u32 [%rd1], %r1;
    st.global.u32 [%rd1+4], %r2;
    st.global.u32 [%rd1+8], %r3;
    st.global.b16 [%rd1+12], %h1;
    st.global.b16 [%rd1+14], %h2;
    st.global.u32 [%rd1+16], %r4;
    ret;
}
"#,
    )
    .unwrap();
    let (p, ds) = (ptx.to_str().unwrap(), dir.join("out"));
    let (code, out, err) = run(&[
        p,
        "k",
        "--grid",
        "1",
        "--block",
        "1",
        "--dump",
        ds.to_str().unwrap(),
        "buf:u32:5:zero",
        "u8:200",
        "i8:-3",
        "u16:65000",
        "f16:1.5",
        "bf16:-2.25",
        "i16:-300",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let bytes = std::fs::read(ds.join("arg0.bin")).unwrap();
    let w = |i: usize| u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap());
    assert_eq!(
        (w(0), w(1) as i32, w(2), w(4) as i32),
        (200, -3, 65000, -300)
    );
    assert_eq!(
        u16::from_le_bytes([bytes[12], bytes[13]]),
        half::f16::from_f32(1.5).to_bits()
    );
    assert_eq!(
        u16::from_le_bytes([bytes[14], bytes[15]]),
        half::bf16::from_f32(-2.25).to_bits()
    );
    let (code, _, err) = run(&[
        p,
        "k",
        "--grid",
        "1",
        "--block",
        "1",
        "buf:u32:5:zero",
        "u32:200",
        "i8:1",
        "u16:1",
        "f16:1",
        "bf16:1",
        "i16:1",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("is 1 bytes, the value has 4"), "{err}");
    let (code, _, err) = run(&[
        p,
        "k",
        "--grid",
        "1",
        "--block",
        "1",
        "buf:u32:5:zero",
        "u8:300",
        "i8:1",
        "u16:1",
        "f16:1",
        "bf16:1",
        "i16:1",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("bad u8 value"), "{err}");
}
