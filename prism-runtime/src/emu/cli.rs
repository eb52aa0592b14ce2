//! Command-line front end of the emulator (used by `examples/emulate.rs`).
//!
//! ```text
//! emulate FILE.ptx KERNEL --grid X[,Y,Z] --block X[,Y,Z] [--smem BYTES] [--seed N] [--dump DIR] [--json]
//!         [--lockstep] [--no-races] [--max-steps N] ARG...
//! ```
//!
//! Each `ARG`, in kernel-parameter order, is a scalar (`u32:7`, `i32:-3`, `u64:9`, `i64:-1`, `f32:1.5`,
//! `f64:2`) or a device buffer `buf:TYPE:COUNT:INIT` with `TYPE` one of `u8,i32,u32,i64,u64,f16,bf16,f32,f64`
//! and `INIT` one of `zero`, `rand` (seeded by `--seed`, default 0), `iota` or `@path` (raw little-endian
//! file). Exit status: 0 = ran without faults, 1 = faults reported, 2 = usage or input error.

use super::*;
use std::io::Write;

const USAGE: &str = "usage: emulate FILE.ptx KERNEL --grid X[,Y,Z] --block X[,Y,Z] [--smem BYTES] [--seed N] [--dump DIR] [--json] [--lockstep] [--no-races] [--max-steps N] ARG...\n  ARG: u32:V | i32:V | u64:V | i64:V | f32:V | f64:V | buf:TYPE:COUNT:INIT (TYPE u8,i32,u32,i64,u64,f16,bf16,f32,f64; INIT zero|rand|iota|@path) | bytes:@path (a struct passed by value)";

struct BufArg {
    index: usize,
    addr: u64,
    bytes: usize,
}

fn parse_dims(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("bad dimensions '{}'", s));
    }
    let mut d = [1u32; 3];
    for (i, p) in parts.iter().enumerate() {
        d[i] = p
            .trim()
            .parse()
            .map_err(|_| format!("bad dimension '{}' in '{}'", p, s))?;
    }
    Ok(d)
}

fn elem_size(ty: &str) -> Option<usize> {
    Some(match ty {
        "u8" => 1,
        "f16" | "bf16" => 2,
        "i32" | "u32" | "f32" => 4,
        "i64" | "u64" | "f64" => 8,
        _ => return None,
    })
}

fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn encode(ty: &str, v: f64, i: i64) -> Vec<u8> {
    match ty {
        "u8" => vec![i as u8],
        "i32" | "u32" => (i as i32).to_le_bytes().to_vec(),
        "i64" | "u64" => i.to_le_bytes().to_vec(),
        "f16" => half::f16::from_f64(v).to_bits().to_le_bytes().to_vec(),
        "bf16" => half::bf16::from_f64(v).to_bits().to_le_bytes().to_vec(),
        "f32" => (v as f32).to_le_bytes().to_vec(),
        _ => v.to_le_bytes().to_vec(),
    }
}

fn init_buffer(ty: &str, count: usize, init: &str, rng: &mut u64) -> Result<Vec<u8>, String> {
    let es = elem_size(ty).ok_or_else(|| format!("unknown buffer type '{}'", ty))?;
    let float = matches!(ty, "f16" | "bf16" | "f32" | "f64");
    let signed = matches!(ty, "i32" | "i64");
    match init {
        "zero" => Ok(vec![0u8; es * count]),
        "iota" => Ok((0..count)
            .flat_map(|k| encode(ty, k as f64, k as i64))
            .collect()),
        "rand" => Ok((0..count)
            .flat_map(|_| {
                let r = splitmix(rng);
                let f = (r >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
                let i = if signed {
                    (r % 17) as i64 - 8
                } else if ty == "u8" {
                    (r % 256) as i64
                } else {
                    (r % 16) as i64
                };
                encode(ty, if float { f } else { i as f64 }, i)
            })
            .collect()),
        p if p.starts_with('@') => {
            let data =
                std::fs::read(&p[1..]).map_err(|e| format!("cannot read '{}': {}", &p[1..], e))?;
            if data.len() > es * count {
                return Err(format!(
                    "file '{}' has {} bytes, buffer holds {}",
                    &p[1..],
                    data.len(),
                    es * count
                ));
            }
            let mut v = vec![0u8; es * count];
            v[..data.len()].copy_from_slice(&data);
            Ok(v)
        }
        other => Err(format!(
            "unknown buffer initializer '{}' (zero, rand, iota, @path)",
            other
        )),
    }
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn counters_fields(c: &Counters) -> Vec<(&'static str, u64)> {
    vec![
        ("warp_instructions", c.warp_instructions),
        ("thread_instructions", c.thread_instructions),
        ("divergent_branches", c.divergent_branches),
        ("global_sectors", c.global_sectors),
        ("global_transactions", c.global_transactions),
        ("global_accesses", c.global_accesses),
        ("shared_accesses", c.shared_accesses),
        (
            "shared_bank_conflict_degree_sum",
            c.shared_bank_conflict_degree_sum,
        ),
        ("barrier_waits", c.barrier_waits),
        ("atomics", c.atomics),
        ("mma_ops", c.mma_ops),
        ("blocks", c.blocks),
    ]
}

/// Renders a launch result as one JSON object `{"faults": [...], "counters": {...}, "printf": [...]}`.
pub fn to_json(faults: &[Fault], counters: &Counters, printf: &[String]) -> String {
    let fs: Vec<String> = faults
        .iter()
        .map(|f| {
            format!(
                "{{\"kind\":{},\"block\":[{},{},{}],\"warp\":{},\"lane\":{},\"line\":{},\"message\":{}}}",
                json_str(f.kind.name()),
                f.block[0],
                f.block[1],
                f.block[2],
                f.warp,
                f.lane.map(|l| l.to_string()).unwrap_or_else(|| "null".into()),
                f.ptx_line,
                json_str(&f.message)
            )
        })
        .collect();
    let cs: Vec<String> = counters_fields(counters)
        .iter()
        .map(|(k, v)| format!("\"{}\":{}", k, v))
        .collect();
    let ps: Vec<String> = printf.iter().map(|p| json_str(p)).collect();
    format!(
        "{{\"faults\":[{}],\"counters\":{{{}}},\"printf\":[{}]}}",
        fs.join(","),
        cs.join(","),
        ps.join(",")
    )
}

/// Runs the CLI with `args` (without the program name). Returns the process exit status.
pub fn run_cli(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match run(args, out, err) {
        Ok(code) => code,
        Err(msg) => {
            let _ = writeln!(err, "error: {}", msg);
            2
        }
    }
}

fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    let mut pos: Vec<String> = Vec::new();
    let mut grid = None;
    let mut block = None;
    let mut smem = 0u32;
    let mut seed: Option<u64> = None;
    let mut dump: Option<String> = None;
    let mut json = false;
    let mut lockstep = false;
    let mut races = true;
    let mut max_steps: Option<u64> = None;
    let mut i = 0;
    let value = |i: &mut usize, name: &str| -> Result<String, String> {
        *i += 1;
        args.get(*i)
            .cloned()
            .ok_or_else(|| format!("{} needs a value", name))
    };
    while i < args.len() {
        let a = &args[i];
        match a.as_str() {
            "--grid" => grid = Some(parse_dims(&value(&mut i, "--grid")?)?),
            "--block" => block = Some(parse_dims(&value(&mut i, "--block")?)?),
            "--smem" => {
                smem = value(&mut i, "--smem")?
                    .parse()
                    .map_err(|_| "bad --smem value".to_string())?
            }
            "--seed" => {
                seed = Some(
                    value(&mut i, "--seed")?
                        .parse()
                        .map_err(|_| "bad --seed value".to_string())?,
                )
            }
            "--dump" => dump = Some(value(&mut i, "--dump")?),
            "--max-steps" => {
                max_steps = Some(
                    value(&mut i, "--max-steps")?
                        .parse()
                        .map_err(|_| "bad --max-steps value".to_string())?,
                )
            }
            "--json" => json = true,
            "--lockstep" => lockstep = true,
            "--no-races" => races = false,
            "-h" | "--help" => {
                let _ = writeln!(out, "{}", USAGE);
                return Ok(0);
            }
            s if s.starts_with("--") => return Err(format!("unknown option '{}'\n{}", s, USAGE)),
            _ => pos.push(a.clone()),
        }
        i += 1;
    }
    if pos.len() < 2 {
        return Err(format!("missing FILE.ptx or KERNEL\n{}", USAGE));
    }
    let grid = grid.ok_or("missing --grid")?;
    let block = block.ok_or("missing --block")?;
    let src =
        std::fs::read_to_string(&pos[0]).map_err(|e| format!("cannot read '{}': {}", pos[0], e))?;
    let module = Module::parse(&src).map_err(|e| format!("{}: {}", pos[0], e))?;
    let kernel = &pos[1];
    let decls = module.entry_params(kernel).ok_or_else(|| {
        format!(
            "no entry '{}' in {} (entries: {})",
            kernel,
            pos[0],
            module.entries().join(", ")
        )
    })?;
    let kargs = &pos[2..];
    if kargs.len() != decls.len() {
        return Err(format!(
            "kernel '{}' takes {} parameters, {} given",
            kernel,
            decls.len(),
            kargs.len()
        ));
    }
    let cfg = EmuConfig {
        schedule: match seed {
            Some(s) => Schedule::Random { seed: s },
            None => Schedule::RoundRobin,
        },
        warp_mode: if lockstep {
            WarpMode::Lockstep
        } else {
            WarpMode::Independent
        },
        check_races: races,
        max_steps: max_steps.unwrap_or(EmuConfig::default().max_steps),
    };
    let mut emu = Emulator::new(cfg);
    let mut rng = seed.unwrap_or(0);
    let mut params = Vec::new();
    let mut bufs = Vec::new();
    for (idx, a) in kargs.iter().enumerate() {
        let (kind, rest) = a
            .split_once(':')
            .ok_or_else(|| format!("argument {} '{}': expected TYPE:VALUE", idx, a))?;
        let bad = |what: &str| format!("argument {} '{}': bad {} value", idx, a, what);
        let p = match kind {
            "u32" => ParamValue::U32(rest.parse().map_err(|_| bad("u32"))?),
            "i32" => ParamValue::I32(rest.parse().map_err(|_| bad("i32"))?),
            "u64" => ParamValue::U64(rest.parse().map_err(|_| bad("u64"))?),
            "i64" => ParamValue::I64(rest.parse().map_err(|_| bad("i64"))?),
            "f32" => ParamValue::F32(rest.parse().map_err(|_| bad("f32"))?),
            "f64" => ParamValue::F64(rest.parse().map_err(|_| bad("f64"))?),
            "buf" => {
                let parts: Vec<&str> = rest.splitn(3, ':').collect();
                if parts.len() != 3 {
                    return Err(format!(
                        "argument {} '{}': expected buf:TYPE:COUNT:INIT",
                        idx, a
                    ));
                }
                let count: usize = parts[1].parse().map_err(|_| bad("COUNT"))?;
                let data = init_buffer(parts[0], count, parts[2], &mut rng)
                    .map_err(|e| format!("argument {}: {}", idx, e))?;
                let addr = emu.alloc(data.len());
                emu.write(addr, &data).map_err(|e| e.to_string())?;
                bufs.push(BufArg {
                    index: idx,
                    addr,
                    bytes: data.len(),
                });
                ParamValue::Ptr(addr)
            }
            // A parameter passed by value that is not a scalar (a struct): its raw bytes.
            "bytes" => {
                let path = rest.strip_prefix('@').ok_or_else(|| {
                    format!("argument {idx} '{a}': expected bytes:@path (the parameter's raw little-endian bytes)")
                })?;
                ParamValue::Bytes(
                    std::fs::read(path)
                        .map_err(|e| format!("argument {idx}: cannot read '{path}': {e}"))?,
                )
            }
            other => {
                return Err(format!(
                    "argument {} '{}': unknown kind '{}'",
                    idx, a, other
                ))
            }
        };
        params.push(p);
    }
    let t0 = std::time::Instant::now();
    let result = emu.launch(&module, kernel, grid, block, smem, &params);
    let elapsed = t0.elapsed();
    let (faults, report) = match result {
        Ok(r) => (Vec::new(), r),
        Err(EmuError::Faulted { faults, report }) => (faults, *report),
        Err(e) => return Err(e.to_string()),
    };
    if let Some(dir) = &dump {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create '{}': {}", dir, e))?;
        for b in &bufs {
            let data = emu.read(b.addr, b.bytes).map_err(|e| e.to_string())?;
            let path = std::path::Path::new(dir).join(format!("arg{}.bin", b.index));
            std::fs::write(&path, data)
                .map_err(|e| format!("cannot write '{}': {}", path.display(), e))?;
        }
    }
    if json {
        let _ = writeln!(
            out,
            "{}",
            to_json(&faults, &report.counters, &report.printf)
        );
    } else {
        // Device-side printf output first, as a program's own output.
        for line in &report.printf {
            let _ = write!(out, "{line}");
        }
        let _ = writeln!(
            out,
            "kernel {} grid {:?} block {:?}: {} fault(s), {:.3} s",
            kernel,
            grid,
            block,
            faults.len(),
            elapsed.as_secs_f64()
        );
        for f in &faults {
            let _ = writeln!(out, "  fault: {}", f);
        }
        for (k, v) in counters_fields(&report.counters) {
            let _ = writeln!(out, "  {:<32} {}", k, v);
        }
    }
    if !faults.is_empty() {
        let _ = writeln!(
            err,
            "{} fault(s) detected; first: {}",
            faults.len(),
            faults[0]
        );
        return Ok(1);
    }
    Ok(0)
}
