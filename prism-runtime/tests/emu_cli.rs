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
    ] {
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{:?}", args);
        assert!(err.starts_with("error:"), "{:?}: {}", args, err);
    }
}
