//! Command-line front end of the emulator (used by `examples/emulate.rs`).
//!
//! ```text
//! emulate FILE.ptx KERNEL --grid X[,Y,Z] --block X[,Y,Z] [--cluster X[,Y,Z]] [--smem BYTES] [--seed N] [--dump DIR] [--json]
//!         [--cooperative] [--lockstep] [--no-races] [--max-steps N] [--threads N] [--backend emulator|gpu] ARG...
//! ```
//!
//! Each `ARG`, in kernel-parameter order, is a scalar (`u32:7`, `i32:-3`, `u64:9`, `i64:-1`, `f32:1.5`,
//! `f64:2`) or a device buffer `buf:TYPE:COUNT:INIT` with `TYPE` one of `u8,i32,u32,i64,u64,f16,bf16,f32,f64`
//! (and `u16`, `i16`) and `INIT` one of `zero`, `rand` (seeded by `--seed`, default 0), `iota` or `@path` (raw little-endian
//! file), or a struct passed by value, `bytes:@path` or `bytes:0xHEX` (its raw little-endian bytes), or a
//! tensor map `tmap:TYPE:DIMS:BOX:SWIZZLE:INIT[:STRIDES]` (emulator only): a global buffer of the tensor,
//! initialised like `buf:`, and a 128-byte tensor map over it passed by value ([`TensorMap`]). `DIMS` and
//! `BOX` are innermost first, joined by `x` (`512x256` = 256 rows of 512 elements); `SWIZZLE` is
//! `none|32|64|128`; `STRIDES` (optional) are the byte strides of the outer dimensions (`1024x524288`,
//! rank − 1 values, multiples of 16; default packed). `--dump` writes the tensor as `arg<i>.bin`.
//! `tmapptr:…` (same fields) copies the map into global memory and passes its address, for a kernel that
//! takes `const CUtensorMap*` (maps copied to the device with `cudaMemcpy`).
//!
//! `--cooperative` launches as `cuLaunchCooperativeKernel` does (both backends): every block resident at
//! once (a grid too large for that is an error before anything runs) and `this_grid().sync()` available.
//!
//! Both backends get the same bytes: the arguments are initialised once ([`prepare_inputs`]) and each
//! backend only allocates and launches. `--backend gpu` loads the PTX with the CUDA driver on GPU 0 (lowering a
//! `.version` newer than the driver's PTX ISA, with a note), launches it with the parameters as raw bytes,
//! synchronises and dumps the buffers as the emulator does; `--lockstep`, `--no-races` and `--max-steps` only
//! concern the emulator. Exit status: 0 = ran without faults, 1 = faults reported (emulator), 2 = usage or
//! input error, 3 = `--backend gpu` and no GPU or CUDA driver, 4 = the GPU refused or failed the run (PTX not
//! loadable, launch error, a fault on the device).

mod args;
mod session;

use super::*;
use args::{parse_ref, parse_struct, parse_texture, split_name, struct_size};
pub use args::{BufferRef, StructField};
pub use session::{execute, execute_all};
use std::io::Write;

const USAGE: &str = "usage: emulate FILE.ptx KERNEL --grid X[,Y,Z] --block X[,Y,Z] [--cluster X[,Y,Z]] [--smem BYTES] [--seed N] [--dump DIR] [--json] [--cooperative] [--lockstep] [--no-races] [--max-steps N] [--threads N] [--symbol NAME=@path|0xHEX]... [--buffer NAME=buf:TYPE:COUNT:INIT]... [--backend emulator|gpu] ARG... [--then KERNEL --grid .. --block .. [--cluster ..] [--smem ..] [--cooperative] ARG...]...\n  ARG: u32:V | i32:V | u64:V | i64:V | f32:V | f64:V | u8:V | i8:V | u16:V | i16:V | f16:V | bf16:V (8- and 16-bit scalars by value) | buf:TYPE:COUNT:INIT (TYPE u8,u16,i16,i32,u32,i64,u64,f16,bf16,f32,f64; INIT zero|rand|iota|@path) | bytes:@path | bytes:0xHEX (a struct passed by value, its raw little-endian bytes) | tmap:TYPE:DIMS:BOX:SWIZZLE:INIT[:STRIDES] (a tensor map over a new buffer; DIMS/BOX innermost first like 512x256; SWIZZLE none|32|64|128; emulator only) | tmapptr:… (the same map in global memory, passed as its address: a const CUtensorMap* parameter) | NAME=buf:… (a named buffer, kept for later launches and dumped as NAME.bin) | ref:NAME[+BYTES] (its address, emulator only) | tex:TYPE[xC]:DIMS:INIT[:OPTS] (a texture object over a new buffer; OPTS point|linear,clamp|wrap|mirror|border,norm,nf,border=V; emulator only) | surf:TYPE[xC]:DIMS:INIT (a surface object) | struct:F,F,… (a struct by value laid out as C does; F: u32:V i32:V u64:V i64:V f32:V f64:V ref:NAME[+BYTES])";

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
        "u16" | "i16" | "f16" | "bf16" => 2,
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
        "u16" | "i16" => (i as i16).to_le_bytes().to_vec(),
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
    let total = es
        .checked_mul(count)
        .filter(|&b| b as u64 <= super::limits::MAX_GLOBAL_BYTES)
        .ok_or_else(|| {
            format!(
                "{count} elements of {ty} is more than the emulator's global memory ({} bytes)",
                super::limits::MAX_GLOBAL_BYTES
            )
        })?;
    let float = matches!(ty, "f16" | "bf16" | "f32" | "f64");
    let signed = matches!(ty, "i16" | "i32" | "i64");
    match init {
        "zero" => {
            super::zeroed(total).ok_or_else(|| format!("the host could not give {total} bytes"))
        }
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
            if data.len() > total {
                return Err(format!(
                    "file '{}' has {} bytes, buffer holds {}",
                    &p[1..],
                    data.len(),
                    total
                ));
            }
            let mut v = vec![0u8; total];
            v[..data.len()].copy_from_slice(&data);
            Ok(v)
        }
        other => Err(format!(
            "unknown buffer initializer '{}' (zero, rand, iota, @path)",
            other
        )),
    }
}

/// `"0a1b"` → `[0x0a, 0x1b]`; `None` for an odd length or a non-hex digit.
fn parse_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
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

/// Which machine runs the kernel (`--backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CliBackend {
    /// The PTX emulator (the default).
    Emulator,
    /// GPU 0 through the CUDA driver.
    Gpu,
}

/// A parsed command line: what to run, where, and with which arguments (not yet initialised).
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The PTX file as given.
    pub ptx_path: String,
    /// The entry to launch.
    pub kernel: String,
    /// Grid dimensions.
    pub grid: [u32; 3],
    /// Block dimensions.
    pub block: [u32; 3],
    /// `--cluster`: thread-block cluster dimensions (`None`: the kernel's `.reqnctapercluster`, or 1).
    pub cluster: Option<[u32; 3]>,
    /// Dynamic shared memory (bytes).
    pub smem: u32,
    /// `--seed`: the seed of `rand` buffers, and on the emulator of the random schedule.
    pub seed: Option<u64>,
    /// `--dump DIR`.
    pub dump: Option<String>,
    /// `--json`.
    pub json: bool,
    /// `--cooperative`: a cooperative launch (`cuLaunchCooperativeKernel`; grid-wide `this_grid().sync()`).
    pub cooperative: bool,
    /// `--lockstep` (emulator only).
    pub lockstep: bool,
    /// Race detection (emulator only; `--no-races` turns it off).
    pub races: bool,
    /// `--max-steps` (emulator only).
    pub max_steps: Option<u64>,
    /// `--threads` (emulator only): OS threads for the blocks of a launch (default: `PRISM_EMU_THREADS`,
    /// else the available cores; 1 runs every launch on one thread).
    pub threads: Option<usize>,
    /// `--backend`.
    pub backend: CliBackend,
    /// `--symbol NAME=@path|0xHEX` (emulator only): module `.global`/`.const` variables written before the
    /// launch (what `cudaMemcpyToSymbol` does) and read back after it.
    pub symbols: Vec<(String, String)>,
    /// The kernel arguments, in parameter order, as written (`u32:7`, `buf:f32:512:rand`, ...).
    pub args: Vec<String>,
    /// `--buffer NAME=buf:TYPE:COUNT:INIT`: named buffers made before the first launch (for kernels that
    /// only reach their buffers through a struct, `struct:ref:NAME,…`), dumped as `NAME.bin`.
    pub buffers: Vec<String>,
    /// The launches after this one (`--then KERNEL ...`), in order, on the same device memory: each has its
    /// own kernel, shape and arguments; the options that concern the whole run (seed, dump, backend, race
    /// detection, ...) are this one's.
    pub then: Vec<Invocation>,
}

/// What [`parse_invocation`] found.
#[derive(Debug, Clone)]
// (Made once per command line: the size of `Run` costs nothing, and boxing it would change the API.)
#[allow(clippy::large_enum_variant)]
pub enum Parsed {
    /// `-h` / `--help`.
    Help,
    /// A launch to run.
    Run(Invocation),
}

/// A kernel argument with its initial bytes: identical for both backends.
#[derive(Debug, Clone)]
pub enum Input {
    /// A scalar passed by value.
    Scalar(ParamValue),
    /// A device buffer: its element type (`f32`, `u32`, ...) and initial bytes.
    Buffer {
        /// Element type as written on the command line.
        ty: String,
        /// Initial contents.
        bytes: Vec<u8>,
        /// `NAME=buf:…`: the name later arguments (`ref:NAME`) and launches refer to it by.
        name: Option<String>,
    },
    /// `ref:NAME[+BYTES]`: the address of a named buffer (a pointer parameter).
    Ref(BufferRef),
    /// `struct:F,F,…`: a struct passed by value, laid out as C does, whose fields may be buffer addresses.
    Struct(Vec<StructField>),
    /// `tex:…` / `surf:…`: a buffer of texels and a texture or surface object over it, passed as its
    /// handle (`cudaTextureObject_t`, `cudaSurfaceObject_t`; emulator only).
    Texture {
        /// Element type of the buffer, as written on the command line.
        ty: String,
        /// Initial contents.
        bytes: Vec<u8>,
        /// The object (its address set when the buffer is allocated).
        desc: TextureDesc,
        /// A surface rather than a texture.
        surface: bool,
        /// `NAME=tex:…`: the buffer's name.
        name: Option<String>,
    },
    /// A struct passed by value: its raw bytes.
    Bytes(Vec<u8>),
    /// A tensor map and the global buffer it describes (`map.global_address` is set when the buffer is
    /// allocated), passed by value (`tmap:`) or as a pointer to a copy in global memory (`tmapptr:`,
    /// for a `const CUtensorMap*` parameter).
    TensorMap {
        /// Element type as written on the command line.
        ty: String,
        /// Initial contents of the tensor.
        bytes: Vec<u8>,
        /// The map, with a placeholder address.
        map: TensorMap,
        /// `tmapptr:`: the parameter is the address of the map in global memory.
        by_pointer: bool,
    },
}

fn tensor_data_type(ty: &str) -> Option<TensorDataType> {
    Some(match ty {
        "u8" => TensorDataType::U8,
        "u16" => TensorDataType::U16,
        "i32" => TensorDataType::I32,
        "u32" => TensorDataType::U32,
        "i64" => TensorDataType::I64,
        "u64" => TensorDataType::U64,
        "f16" => TensorDataType::F16,
        "bf16" => TensorDataType::Bf16,
        "f32" => TensorDataType::F32,
        "f64" => TensorDataType::F64,
        _ => return None,
    })
}

fn parse_x_list(s: &str) -> Option<Vec<u64>> {
    s.split('x').map(|p| p.parse::<u64>().ok()).collect()
}

/// `tmap:TYPE:DIMS:BOX:SWIZZLE:INIT[:STRIDES]` (after `tmap:` or `tmapptr:`).
fn parse_tmap(rest: &str, rng: &mut u64, by_pointer: bool) -> Result<Input, String> {
    let parts: Vec<&str> = rest.split(':').collect();
    if parts.len() != 5 && parts.len() != 6 {
        return Err("expected tmap:TYPE:DIMS:BOX:SWIZZLE:INIT[:STRIDES]".into());
    }
    let ty = parts[0];
    let dt = tensor_data_type(ty).ok_or_else(|| format!("unknown tensor element type '{ty}'"))?;
    let dims =
        parse_x_list(parts[1]).ok_or_else(|| format!("bad DIMS '{}' (e.g. 512x256)", parts[1]))?;
    let boxd =
        parse_x_list(parts[2]).ok_or_else(|| format!("bad BOX '{}' (e.g. 64x128)", parts[2]))?;
    let sw = TensorSwizzle::parse(parts[3])
        .ok_or_else(|| format!("bad SWIZZLE '{}' (none, 32, 64 or 128)", parts[3]))?;
    let es = dt.size();
    let strides = match parts.get(5) {
        Some(st) => parse_x_list(st)
            .ok_or_else(|| format!("bad STRIDES '{st}' (byte strides, e.g. 1024x524288)"))?,
        None => {
            let mut v = Vec::new();
            let mut acc = dims.first().copied().unwrap_or(0) * es;
            for d in dims.iter().skip(1) {
                v.push(acc);
                acc *= d;
            }
            v
        }
    };
    let box_u32: Vec<u32> = boxd
        .iter()
        .map(|&b| b.min(u32::MAX as u64) as u32)
        .collect();
    let map = TensorMap::tiled(dt, 0, &dims, &strides, &box_u32, sw).map_err(|e| e.to_string())?;
    // Bytes the layout spans: the outermost stride times the outermost dim (or the packed inner row).
    let span = match (strides.last(), dims.last()) {
        (Some(s), Some(d)) if dims.len() > 1 => s.checked_mul(*d),
        _ => dims.first().and_then(|d| d.checked_mul(es)),
    }
    .filter(|&b| b <= 1 << 34)
    .ok_or("the tensor is larger than 16 GiB")?;
    let count = span.div_ceil(es) as usize;
    let bytes = init_buffer(ty, count, parts[4], rng)?;
    Ok(Input::TensorMap {
        ty: ty.to_string(),
        bytes,
        map,
        by_pointer,
    })
}

/// One buffer after the launch.
#[derive(Debug, Clone)]
pub struct BufferOut {
    /// Index of the kernel argument the buffer was passed as.
    pub index: usize,
    /// Element type as written on the command line.
    pub ty: String,
    /// Contents after the kernel.
    pub bytes: Vec<u8>,
    /// The buffer's name (`NAME=buf:…`), if it has one.
    pub name: Option<String>,
}

/// The result of one launch on either backend.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The backend that ran it.
    pub backend: CliBackend,
    /// The device, in words.
    pub device: String,
    /// Every buffer argument after the launch, in argument order.
    pub buffers: Vec<BufferOut>,
    /// Each `--symbol` variable after the launch: its name and bytes.
    pub symbols: Vec<(String, Vec<u8>)>,
    /// Every named buffer of the run so far (`NAME=buf:…`, this launch's and earlier ones') after the launch.
    pub named: Vec<(String, Vec<u8>)>,
    /// Faults the emulator found (always empty on the GPU: a GPU fault is an error).
    pub faults: Vec<Fault>,
    /// The emulator's counters (`None` on the GPU).
    pub counters: Option<Counters>,
    /// Device-side printf output captured by the emulator (on the GPU the driver prints it itself).
    pub printf: Vec<String>,
    /// Notes about the run (e.g. the PTX `.version` lowered for the driver).
    pub notes: Vec<String>,
    /// Time of the launch.
    pub elapsed: std::time::Duration,
}

/// Why a run did not happen or failed; each has its own exit status ([`CliError::exit_code`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliError {
    /// Bad usage or input (exit 2).
    Usage(String),
    /// `--backend gpu` without a usable GPU or CUDA driver (exit 3).
    NoGpu(String),
    /// The GPU or its driver refused or failed the run: PTX not loadable, launch error, a fault on the
    /// device (exit 4).
    Gpu(String),
}

impl CliError {
    /// The process exit status for this error: 2 usage, 3 no GPU, 4 GPU error.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => 2,
            CliError::NoGpu(_) => 3,
            CliError::Gpu(_) => 4,
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Usage(m) => write!(f, "{m}"),
            CliError::NoGpu(m) => write!(f, "no GPU: {m}"),
            CliError::Gpu(m) => write!(f, "GPU error: {m}"),
        }
    }
}

impl From<String> for CliError {
    fn from(m: String) -> Self {
        CliError::Usage(m)
    }
}

/// Runs the CLI with `args` (without the program name). Returns the process exit status: 0 ran without
/// faults, 1 the emulator reported faults, 2 usage or input error, 3 `--backend gpu` and no GPU, 4 the GPU
/// reported an error.
pub fn run_cli(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match run(args, out, err) {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(err, "error: {}", e);
            e.exit_code()
        }
    }
}

/// Options that concern the whole run, not one launch: not allowed after `--then`.
const RUN_OPTIONS: [&str; 12] = [
    "--buffer",
    "--seed",
    "--dump",
    "--json",
    "--lockstep",
    "--no-races",
    "--max-steps",
    "--threads",
    "--symbol",
    "--backend",
    "-h",
    "--help",
];

/// Parses the command line (options anywhere, then FILE.ptx, KERNEL and the arguments in order; each
/// `--then KERNEL --grid .. --block .. ARG...` adds a launch on the same device memory).
pub fn parse_invocation(args: &[String]) -> Result<Parsed, String> {
    let mut segments = args.split(|a| a == "--then");
    let first = segments.next().unwrap_or_default();
    let Parsed::Run(mut inv) = parse_launch(first)? else {
        return Ok(Parsed::Help);
    };
    for (k, seg) in segments.enumerate() {
        if seg.first().is_none_or(|a| a.starts_with("--")) {
            return Err(format!(
                "launch {}: --then must be followed by a kernel name (--then KERNEL --grid .. --block .. ARG...)",
                k + 1
            ));
        }
        if let Some(o) = seg.iter().find(|a| RUN_OPTIONS.contains(&a.as_str())) {
            return Err(format!(
                "launch {}: {o} concerns the whole run: give it before the first --then",
                k + 1
            ));
        }
        let mut full = vec![inv.ptx_path.clone()];
        full.extend(seg.iter().cloned());
        let Parsed::Run(next) =
            parse_launch(&full).map_err(|e| format!("launch {}: {e}", k + 1))?
        else {
            return Ok(Parsed::Help);
        };
        inv.then.push(Invocation {
            seed: inv.seed,
            dump: None,
            json: inv.json,
            lockstep: inv.lockstep,
            races: inv.races,
            max_steps: inv.max_steps,
            threads: inv.threads,
            backend: inv.backend,
            symbols: Vec::new(),
            buffers: Vec::new(),
            ..next
        });
    }
    Ok(Parsed::Run(inv))
}

/// One launch's part of the command line.
fn parse_launch(args: &[String]) -> Result<Parsed, String> {
    let mut pos: Vec<String> = Vec::new();
    let mut grid = None;
    let mut block = None;
    let mut cluster = None;
    let mut smem = 0u32;
    let mut seed: Option<u64> = None;
    let mut dump: Option<String> = None;
    let mut json = false;
    let mut lockstep = false;
    let mut cooperative = false;
    let mut races = true;
    let mut max_steps: Option<u64> = None;
    let mut threads: Option<usize> = None;
    let mut backend = CliBackend::Emulator;
    let mut symbols = Vec::new();
    let mut buffers = Vec::new();
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
            "--cluster" => cluster = Some(parse_dims(&value(&mut i, "--cluster")?)?),
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
            "--buffer" => buffers.push(value(&mut i, "--buffer")?),
            "--symbol" => {
                let v = value(&mut i, "--symbol")?;
                let (name, init) = v
                    .split_once('=')
                    .ok_or_else(|| format!("bad --symbol '{v}' (NAME=@path or NAME=0xHEX)"))?;
                symbols.push((name.to_string(), init.to_string()));
            }
            "--max-steps" => {
                max_steps = Some(
                    value(&mut i, "--max-steps")?
                        .parse()
                        .map_err(|_| "bad --max-steps value".to_string())?,
                )
            }
            "--threads" => {
                threads = Some(
                    value(&mut i, "--threads")?
                        .parse()
                        .ok()
                        .filter(|&n: &usize| (1..=1024).contains(&n))
                        .ok_or_else(|| "bad --threads value (1..=1024)".to_string())?,
                )
            }
            "--backend" => {
                backend = match value(&mut i, "--backend")?.as_str() {
                    "emulator" | "emu" => CliBackend::Emulator,
                    "gpu" => CliBackend::Gpu,
                    other => {
                        return Err(format!(
                            "bad --backend '{other}' (emulator or gpu)\n{USAGE}"
                        ))
                    }
                }
            }
            "--json" => json = true,
            "--lockstep" => lockstep = true,
            "--cooperative" => cooperative = true,
            "--no-races" => races = false,
            "-h" | "--help" => return Ok(Parsed::Help),
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
    let mut pos = pos.into_iter();
    let ptx_path = pos.next().unwrap_or_default();
    let kernel = pos.next().unwrap_or_default();
    Ok(Parsed::Run(Invocation {
        ptx_path,
        kernel,
        grid,
        block,
        cluster,
        smem,
        seed,
        dump,
        json,
        lockstep,
        cooperative,
        races,
        max_steps,
        threads,
        backend,
        symbols,
        args: pos.collect(),
        buffers,
        then: Vec::new(),
    }))
}

/// Initialises the arguments of `inv` for the entry's parameters `decls`: scalars parsed, buffers filled
/// (`rand` buffers from one splitmix64 stream seeded by `--seed`, in argument order), struct bytes read;
/// each checked against its `.param`'s size. Both backends launch with exactly these bytes.
pub fn prepare_inputs(inv: &Invocation, decls: &[ParamDecl]) -> Result<Vec<Input>, String> {
    let kargs = &inv.args;
    if kargs.len() != decls.len() {
        return Err(format!(
            "kernel '{}' takes {} parameters, {} given",
            inv.kernel,
            decls.len(),
            kargs.len()
        ));
    }
    let mut rng = inv.seed.unwrap_or(0);
    let mut inputs = Vec::with_capacity(kargs.len());
    for (idx, (full, d)) in kargs.iter().zip(decls).enumerate() {
        let (name, a) = split_name(full);
        if name.is_some() && !["buf:", "tex:", "surf:"].iter().any(|p| a.starts_with(p)) {
            return Err(format!(
                "argument {idx} '{full}': only buffers are named (NAME=buf:…, NAME=tex:…, NAME=surf:…)"
            ));
        }
        let (kind, rest) = a
            .split_once(':')
            .ok_or_else(|| format!("argument {} '{}': expected TYPE:VALUE", idx, a))?;
        let bad = |what: &str| format!("argument {} '{}': bad {} value", idx, a, what);
        let input = match kind {
            // 8- and 16-bit scalars by value (`char`, `short`, `__half`, `__nv_bfloat16` parameters): their
            // little-endian bytes.
            "u8" => Input::Scalar(ParamValue::Bytes(vec![rest
                .parse::<u8>()
                .map_err(|_| bad("u8"))?])),
            "i8" => Input::Scalar(ParamValue::Bytes(vec![rest
                .parse::<i8>()
                .map_err(|_| bad("i8"))?
                as u8])),
            "u16" => Input::Scalar(ParamValue::Bytes(
                rest.parse::<u16>()
                    .map_err(|_| bad("u16"))?
                    .to_le_bytes()
                    .to_vec(),
            )),
            "i16" => Input::Scalar(ParamValue::Bytes(
                rest.parse::<i16>()
                    .map_err(|_| bad("i16"))?
                    .to_le_bytes()
                    .to_vec(),
            )),
            "f16" => Input::Scalar(ParamValue::Bytes(
                half::f16::from_f32(rest.parse().map_err(|_| bad("f16"))?)
                    .to_le_bytes()
                    .to_vec(),
            )),
            "bf16" => Input::Scalar(ParamValue::Bytes(
                half::bf16::from_f32(rest.parse().map_err(|_| bad("bf16"))?)
                    .to_le_bytes()
                    .to_vec(),
            )),
            "u32" => Input::Scalar(ParamValue::U32(rest.parse().map_err(|_| bad("u32"))?)),
            "i32" => Input::Scalar(ParamValue::I32(rest.parse().map_err(|_| bad("i32"))?)),
            "u64" => Input::Scalar(ParamValue::U64(rest.parse().map_err(|_| bad("u64"))?)),
            "i64" => Input::Scalar(ParamValue::I64(rest.parse().map_err(|_| bad("i64"))?)),
            "f32" => Input::Scalar(ParamValue::F32(rest.parse().map_err(|_| bad("f32"))?)),
            "f64" => Input::Scalar(ParamValue::F64(rest.parse().map_err(|_| bad("f64"))?)),
            "buf" => {
                let parts: Vec<&str> = rest.splitn(3, ':').collect();
                if parts.len() != 3 {
                    return Err(format!(
                        "argument {} '{}': expected buf:TYPE:COUNT:INIT",
                        idx, a
                    ));
                }
                let count: usize = parts[1].parse().map_err(|_| bad("COUNT"))?;
                let bytes = init_buffer(parts[0], count, parts[2], &mut rng)
                    .map_err(|e| format!("argument {}: {}", idx, e))?;
                Input::Buffer {
                    ty: parts[0].to_string(),
                    bytes,
                    name: name.map(str::to_string),
                }
            }
            "tex" | "surf" => {
                let surface = kind == "surf";
                let (ty, count, init, desc) = parse_texture(rest, surface)
                    .map_err(|e| format!("argument {idx} '{a}': {e}"))?;
                let bytes = init_buffer(&ty, count, init, &mut rng)
                    .map_err(|e| format!("argument {idx}: {e}"))?;
                Input::Texture {
                    ty,
                    bytes,
                    desc,
                    surface,
                    name: name.map(str::to_string),
                }
            }
            "ref" => Input::Ref(parse_ref(rest).map_err(|e| format!("argument {idx}: {e}"))?),
            "struct" => {
                Input::Struct(parse_struct(rest).map_err(|e| format!("argument {idx}: {e}"))?)
            }
            "tmap" | "tmapptr" => parse_tmap(rest, &mut rng, kind == "tmapptr")
                .map_err(|e| format!("argument {idx} '{a}': {e}"))?,
            // A parameter passed by value that is not a scalar (a struct): its raw bytes.
            "bytes" => {
                if let Some(hex) = rest.strip_prefix("0x") {
                    Input::Bytes(parse_hex(hex).ok_or_else(|| {
                        format!("argument {idx} '{a}': bad hex bytes (an even number of hex digits after 0x)")
                    })?)
                } else {
                    let path = rest.strip_prefix('@').ok_or_else(|| {
                        format!("argument {idx} '{a}': expected bytes:@path or bytes:0xHEX (the parameter's raw little-endian bytes)")
                    })?;
                    Input::Bytes(
                        std::fs::read(path)
                            .map_err(|e| format!("argument {idx}: cannot read '{path}': {e}"))?,
                    )
                }
            }
            other => {
                return Err(format!(
                    "argument {} '{}': unknown kind '{}'",
                    idx, a, other
                ))
            }
        };
        let size = match &input {
            Input::Scalar(p) => p.to_bytes().len(),
            Input::Buffer { .. } | Input::Ref(_) | Input::Texture { .. } => 8,
            Input::Struct(f) => struct_size(f),
            Input::Bytes(b) => b.len(),
            Input::TensorMap {
                by_pointer: true, ..
            } => 8,
            Input::TensorMap { .. } => 128,
        };
        if size != d.size {
            return Err(format!(
                "argument {} '{}': parameter {} ({}) is {} bytes, the value has {}",
                idx, a, idx, d.name, d.size, size
            ));
        }
        inputs.push(input);
    }
    Ok(inputs)
}

pub(super) fn run_gpu(
    src: &str,
    inv: &Invocation,
    inputs: Vec<Input>,
) -> Result<Outcome, CliError> {
    use crate::gpu::{GpuBackend, RawArg};
    use crate::RuntimeError;
    if let Some(i) = inputs
        .iter()
        .position(|i| matches!(i, Input::TensorMap { .. }))
    {
        return Err(CliError::Usage(format!(
            "argument {i}: tmap: and tmapptr: arguments run on the emulator only (the GPU needs cuTensorMapEncodeTiled, not wired into the CLI yet)"
        )));
    }
    if !inv.symbols.is_empty() {
        return Err(CliError::Usage(
            "--symbol runs on the emulator only (the GPU needs cuModuleGetGlobal, not wired into the CLI yet)".into(),
        ));
    }
    let gpu = GpuBackend::open(0).map_err(|e| match e {
        RuntimeError::NoGpu(m) => CliError::NoGpu(m),
        other => CliError::Gpu(other.to_string()),
    })?;
    let scalars: Vec<Option<Vec<u8>>> = inputs
        .iter()
        .map(|i| match i {
            Input::Scalar(p) => Some(p.to_bytes()),
            _ => None,
        })
        .collect();
    let raw: Vec<RawArg<'_>> = inputs
        .iter()
        .zip(&scalars)
        .map(|(i, s)| match (i, s) {
            (Input::Buffer { bytes, .. }, _) => RawArg::Buffer(bytes),
            (Input::Bytes(b), _) => RawArg::Value(b),
            (Input::Scalar(_), Some(b)) => RawArg::Value(b),
            // (Maps, references, structs and textures were refused above.)
            (Input::Scalar(_), None)
            | (
                Input::TensorMap { .. } | Input::Ref(_) | Input::Struct(_) | Input::Texture { .. },
                _,
            ) => RawArg::Value(&[]),
        })
        .collect();
    let run = gpu
        .run_ptx(
            src,
            &inv.kernel,
            [inv.grid, inv.block],
            inv.smem,
            inv.cooperative,
            &raw,
        )
        .map_err(|e| match e {
            RuntimeError::NoGpu(m) => CliError::NoGpu(m),
            other => CliError::Gpu(other.to_string()),
        })?;
    let buffers = inputs
        .iter()
        .enumerate()
        .filter_map(|(index, i)| match i {
            Input::Buffer { ty, name, .. } => Some((index, ty.clone(), name.clone())),
            _ => None,
        })
        .zip(run.buffers)
        .map(|((index, ty, name), bytes)| BufferOut {
            index,
            ty,
            bytes,
            name,
        })
        .collect::<Vec<_>>();
    let named = buffers
        .iter()
        .filter_map(|b| Some((b.name.clone()?, b.bytes.clone())))
        .collect();
    Ok(Outcome {
        backend: CliBackend::Gpu,
        device: gpu.name(),
        buffers,
        symbols: Vec::new(),
        named,
        faults: Vec::new(),
        counters: None,
        printf: Vec::new(),
        notes: run.note.into_iter().collect(),
        elapsed: run.elapsed,
    })
}

/// Writes every buffer of `outcome` as `DIR/arg<index>.bin`, every named buffer as `DIR/<NAME>.bin` and
/// every `--symbol` variable as `DIR/sym_<name>.bin` (raw little-endian bytes).
pub fn dump_buffers(outcome: &Outcome, dir: &str) -> Result<(), String> {
    dump_all(std::slice::from_ref(outcome), dir)
}

/// [`dump_buffers`] for the launches of a run: with one launch as there; with several, launch `k`'s buffer
/// arguments as `DIR/launch<k>_arg<index>.bin` (their contents after that launch), and the named buffers
/// and symbols as they are after the last.
pub fn dump_all(outcomes: &[Outcome], dir: &str) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create '{}': {}", dir, e))?;
    let many = outcomes.len() > 1;
    let mut files: Vec<(String, &Vec<u8>)> = Vec::new();
    for (k, o) in outcomes.iter().enumerate() {
        for b in &o.buffers {
            let name = if many {
                format!("launch{k}_arg{}.bin", b.index)
            } else {
                format!("arg{}.bin", b.index)
            };
            files.push((name, &b.bytes));
        }
    }
    if let Some(last) = outcomes.last() {
        files.extend(last.named.iter().map(|(n, b)| (format!("{n}.bin"), b)));
        files.extend(
            last.symbols
                .iter()
                .map(|(n, b)| (format!("sym_{n}.bin"), b)),
        );
    }
    for (name, bytes) in files {
        let path = std::path::Path::new(dir).join(name);
        std::fs::write(&path, bytes)
            .map_err(|e| format!("cannot write '{}': {}", path.display(), e))?;
    }
    Ok(())
}

fn run(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, CliError> {
    let inv = match parse_invocation(args)? {
        Parsed::Help => {
            let _ = writeln!(out, "{}", USAGE);
            return Ok(0);
        }
        Parsed::Run(inv) => inv,
    };
    let src = std::fs::read_to_string(&inv.ptx_path)
        .map_err(|e| format!("cannot read '{}': {}", inv.ptx_path, e))?;
    let outcomes = execute_all(&src, &inv)?;
    if let Some(dir) = &inv.dump {
        dump_all(&outcomes, dir)?;
    }
    let launches: Vec<&Invocation> = std::iter::once(&inv).chain(&inv.then).collect();
    for (o, l) in outcomes.iter().zip(&launches) {
        report(o, l, out, err);
    }
    // A run stops at its first launch with faults: the last one run.
    let Some(o) = outcomes.last().filter(|o| !o.faults.is_empty()) else {
        return Ok(0);
    };
    let _ = writeln!(
        err,
        "{} fault(s) detected in `{}`; first: {}",
        o.faults.len(),
        launches[outcomes.len() - 1].kernel,
        o.faults[0]
    );
    if outcomes.len() < launches.len() {
        let _ = writeln!(
            err,
            "the {} launch(es) after it did not run",
            launches.len() - outcomes.len()
        );
    }
    Ok(1)
}

/// Prints one launch's result: JSON (`--json`, one object per line and launch) or the printf output, a
/// summary, the faults and the counters.
fn report(outcome: &Outcome, inv: &Invocation, out: &mut dyn Write, err: &mut dyn Write) {
    for n in &outcome.notes {
        let _ = writeln!(err, "note: {n}");
    }
    let faults = &outcome.faults;
    match (&outcome.counters, inv.json) {
        (Some(counters), true) => {
            let _ = writeln!(out, "{}", to_json(faults, counters, &outcome.printf));
        }
        (None, true) => {
            let _ = writeln!(
                out,
                "{{\"backend\":\"gpu\",\"device\":{},\"faults\":[],\"counters\":null,\"printf\":[],\"seconds\":{}}}",
                json_str(&outcome.device),
                outcome.elapsed.as_secs_f64()
            );
        }
        (counters, false) => {
            // Device-side printf output first, as a program's own output.
            for line in &outcome.printf {
                let _ = write!(out, "{line}");
            }
            let _ = writeln!(
                out,
                "kernel {} grid {:?} block {:?} on {}: {} fault(s), {:.3} s",
                inv.kernel,
                inv.grid,
                inv.block,
                outcome.device,
                faults.len(),
                outcome.elapsed.as_secs_f64()
            );
            for f in faults {
                let _ = writeln!(out, "  fault: {}", f);
            }
            if let Some(c) = counters {
                for (k, v) in counters_fields(c) {
                    let _ = writeln!(out, "  {:<32} {}", k, v);
                }
            }
        }
    }
}
