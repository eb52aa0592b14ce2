//! A run of the CLI: its launches in order on one emulator (or the GPU), the buffers they name kept from
//! one to the next.

use super::args::{split_name, struct_bytes};
use super::*;

/// Runs `inv` with the PTX text `src` (read from `inv.ptx_path` by the CLI; a test may embed it) on the
/// backend `inv.backend`. Faults the emulator finds are in the [`Outcome`]; a failure on the GPU is an error.
/// With `--then`, every launch runs ([`execute_all`]) and this is the last one's outcome.
pub fn execute(src: &str, inv: &Invocation) -> Result<Outcome, CliError> {
    let mut all = execute_all(src, inv)?;
    all.pop()
        .ok_or_else(|| CliError::Usage("nothing was launched".into()))
}

/// Runs every launch of `inv` — itself, then each `--then` — in order on one device, the buffers and the
/// device heap kept from one to the next (named buffers are how a later launch reaches an earlier one's).
/// Stops after the first launch with faults (a GPU context would be unusable after it). One outcome per
/// launch run.
pub fn execute_all(src: &str, inv: &Invocation) -> Result<Vec<Outcome>, CliError> {
    let module = Module::parse(src).map_err(|e| format!("{}: {}", inv.ptx_path, e))?;
    let launches: Vec<&Invocation> = std::iter::once(inv).chain(&inv.then).collect();
    if inv.backend == CliBackend::Gpu {
        if launches.len() > 1 {
            return Err(CliError::Usage(
                "--then runs on the emulator only for now (the GPU backend uploads and reads back each launch's buffers on its own)".into(),
            ));
        }
        let inputs = inputs_for(&module, inv, 0)?;
        if inputs
            .iter()
            .any(|i| matches!(i, Input::Ref(_) | Input::Struct(_) | Input::Texture { .. }))
        {
            return Err(CliError::Usage(
                "ref:, struct:, tex: and surf: arguments run on the emulator only for now".into(),
            ));
        }
        return Ok(vec![run_gpu(src, inv, inputs)?]);
    }
    let mut emu = Emulator::new(emu_config(inv));
    let syms = set_symbols(&mut emu, &module, inv)?;
    let mut named = Named::default();
    make_buffers(&mut emu, inv, &mut named)?;
    let mut out = Vec::with_capacity(launches.len());
    for (k, l) in launches.into_iter().enumerate() {
        let inputs = inputs_for(&module, l, k)?;
        let o = launch_on(&mut emu, &module, l, inputs, &mut named, &syms)
            .map_err(|e| at_launch(k, e))?;
        let faulted = !o.faults.is_empty();
        out.push(o);
        if faulted {
            break;
        }
    }
    Ok(out)
}

/// `e`, naming the launch when it is not the first.
fn at_launch(k: usize, e: CliError) -> CliError {
    match e {
        CliError::Usage(m) if k > 0 => CliError::Usage(format!("launch {k}: {m}")),
        e => e,
    }
}

/// Launch `k`'s inputs: its entry's parameters from the module, its arguments prepared (launch `k > 0`
/// draws its `rand` buffers from the seed plus `k`, so that they differ from the first launch's).
fn inputs_for(module: &Module, inv: &Invocation, k: usize) -> Result<Vec<Input>, CliError> {
    let decls = module.entry_params(&inv.kernel).ok_or_else(|| {
        at_launch(
            k,
            CliError::Usage(format!(
                "no entry '{}' in {} (entries: {})",
                inv.kernel,
                inv.ptx_path,
                module.entries().join(", ")
            )),
        )
    })?;
    let r = if k == 0 {
        prepare_inputs(inv, &decls)
    } else {
        let seeded = Invocation {
            seed: Some(inv.seed.unwrap_or(0).wrapping_add(k as u64)),
            then: Vec::new(),
            ..inv.clone()
        };
        prepare_inputs(&seeded, &decls)
    };
    r.map_err(|e| at_launch(k, CliError::Usage(e)))
}

fn emu_config(inv: &Invocation) -> EmuConfig {
    EmuConfig {
        schedule: match inv.seed {
            Some(s) => Schedule::Random { seed: s },
            None => Schedule::RoundRobin,
        },
        warp_mode: if inv.lockstep {
            WarpMode::Lockstep
        } else {
            WarpMode::Independent
        },
        check_races: inv.races,
        max_steps: inv.max_steps.unwrap_or(EmuConfig::default().max_steps),
        threads: inv.threads.unwrap_or_else(super::default_threads),
    }
}

/// `--buffer NAME=buf:TYPE:COUNT:INIT`: named buffers before the first launch (`rand` from the seed's
/// stream, after the first launch's arguments would have drawn: a stream of their own).
fn make_buffers(emu: &mut Emulator, inv: &Invocation, named: &mut Named) -> Result<(), CliError> {
    let mut rng = inv.seed.unwrap_or(0) ^ 0x6275_6666_6572;
    for b in &inv.buffers {
        let bad = |e: String| CliError::Usage(format!("--buffer {b}: {e}"));
        let (Some(name), rest) = split_name(b) else {
            return Err(bad("expected NAME=buf:TYPE:COUNT:INIT".into()));
        };
        let parts: Vec<&str> = rest
            .strip_prefix("buf:")
            .map(|r| r.splitn(3, ':').collect())
            .unwrap_or_default();
        let [ty, count, init] = parts[..] else {
            return Err(bad("expected NAME=buf:TYPE:COUNT:INIT".into()));
        };
        let count: usize = count
            .parse()
            .map_err(|_| bad(format!("bad COUNT '{count}'")))?;
        let bytes = init_buffer(ty, count, init, &mut rng).map_err(bad)?;
        upload(emu, named, &bytes, Some(name)).map_err(bad)?;
    }
    Ok(())
}

/// `--symbol`: module variables set before the first launch (`cudaMemcpyToSymbol`): (name, address, bytes).
fn set_symbols(
    emu: &mut Emulator,
    module: &Module,
    inv: &Invocation,
) -> Result<Vec<(String, u64, usize)>, CliError> {
    let mut syms = Vec::new();
    for (name, init) in &inv.symbols {
        let bytes = if let Some(hex) = init.strip_prefix("0x") {
            parse_hex(hex).ok_or_else(|| format!("--symbol {name}: bad hex bytes"))?
        } else if let Some(path) = init.strip_prefix('@') {
            std::fs::read(path)
                .map_err(|e| format!("--symbol {name}: cannot read '{path}': {e}"))?
        } else {
            return Err(CliError::Usage(format!(
                "--symbol {name}: expected @path or 0xHEX after '='"
            )));
        };
        let addr = emu.global_symbol(module, name).ok_or_else(|| {
            format!("--symbol {name}: the module has no .global or .const variable of that name")
        })?;
        emu.write(addr, &bytes)
            .map_err(|e| CliError::Usage(format!("--symbol {name}: {e}")))?;
        syms.push((name.clone(), addr, bytes.len()));
    }
    Ok(syms)
}

/// The named buffers of a run: name → (address, bytes), in the order they were made.
#[derive(Default)]
struct Named {
    bufs: Vec<(String, u64, usize)>,
}

impl Named {
    fn add(&mut self, name: &str, addr: u64, len: usize) -> Result<(), String> {
        if self.bufs.iter().any(|b| b.0 == name) {
            return Err(format!(
                "a buffer named '{name}' already exists (each NAME=buf: makes a new one; refer to it with ref:{name})"
            ));
        }
        self.bufs.push((name.to_string(), addr, len));
        Ok(())
    }

    fn address(&self, r: &BufferRef) -> Result<u64, String> {
        let (_, addr, len) = self.bufs.iter().find(|b| b.0 == r.name).ok_or_else(|| {
            format!(
                "ref:{}: no buffer of that name (name one with {}=buf:TYPE:COUNT:INIT, in this launch or an earlier one)",
                r.name, r.name
            )
        })?;
        if r.offset > *len as u64 {
            return Err(format!(
                "ref:{}+{}: past the end of the {len}-byte buffer",
                r.name, r.offset
            ));
        }
        Ok(addr + r.offset)
    }
}

/// A new buffer holding `bytes`, recorded under `name` when it has one: its address.
fn upload(
    emu: &mut Emulator,
    named: &mut Named,
    bytes: &[u8],
    name: Option<&str>,
) -> Result<u64, String> {
    let addr = emu.try_alloc(bytes.len()).map_err(|e| e.to_string())?;
    emu.write(addr, bytes).map_err(|e| e.to_string())?;
    if let Some(n) = name {
        named.add(n, addr, bytes.len())?;
    }
    Ok(addr)
}

/// One launch on the emulator `emu`: buffers allocated (named ones recorded in `named` first, so a
/// `ref:` may name a buffer of the same launch), references and structs resolved, the launch run, every
/// buffer and symbol read back.
fn launch_on(
    emu: &mut Emulator,
    module: &Module,
    inv: &Invocation,
    inputs: Vec<Input>,
    named: &mut Named,
    syms: &[(String, u64, usize)],
) -> Result<Outcome, CliError> {
    let usage = |e: EmuError| CliError::Usage(e.to_string());
    let mut bufs = Vec::new();
    let mut params: Vec<Option<ParamValue>> = Vec::with_capacity(inputs.len());
    let mut pending = Vec::new();
    for (idx, input) in inputs.into_iter().enumerate() {
        params.push(match input {
            Input::Scalar(p) => Some(p),
            Input::Bytes(b) => Some(ParamValue::Bytes(b)),
            Input::Buffer { ty, bytes, name } => {
                let addr = upload(emu, named, &bytes, name.as_deref())
                    .map_err(|e| format!("argument {idx}: {e}"))?;
                bufs.push((idx, ty, addr, bytes.len(), name));
                Some(ParamValue::Ptr(addr))
            }
            Input::TensorMap {
                ty,
                bytes,
                mut map,
                by_pointer,
            } => {
                let addr = upload(emu, named, &bytes, None)?;
                bufs.push((idx, ty, addr, bytes.len(), None));
                map.global_address = addr;
                map.validate()
                    .map_err(|e| CliError::Usage(format!("argument {idx}: {e}")))?;
                if by_pointer {
                    // The map's 128 bytes in global memory (64-byte aligned, as a CUtensorMap must be).
                    let at = emu.alloc(128);
                    emu.write(at, &map.encode()).map_err(usage)?;
                    Some(ParamValue::Ptr(at))
                } else {
                    Some(ParamValue::Bytes(map.encode().to_vec()))
                }
            }
            Input::Texture {
                ty,
                bytes,
                mut desc,
                surface,
                name,
            } => {
                let addr = upload(emu, named, &bytes, name.as_deref())
                    .map_err(|e| format!("argument {idx}: {e}"))?;
                bufs.push((idx, ty, addr, bytes.len(), name));
                desc.addr = addr;
                let h = if surface {
                    emu.create_surface(&desc)
                } else {
                    emu.create_texture(&desc)
                };
                Some(ParamValue::U64(h.map_err(|e| {
                    CliError::Usage(format!("argument {idx}: {e}"))
                })?))
            }
            later @ (Input::Ref(_) | Input::Struct(_)) => {
                pending.push((idx, later));
                None
            }
        });
    }
    for (idx, input) in pending {
        let err = |e: String| CliError::Usage(format!("argument {idx}: {e}"));
        params[idx] = match input {
            Input::Ref(r) => Some(ParamValue::Ptr(named.address(&r).map_err(err)?)),
            Input::Struct(f) => Some(ParamValue::Bytes(
                struct_bytes(&f, |r| named.address(r)).map_err(err)?,
            )),
            // (Only references and structs are pending.)
            _ => None,
        };
    }
    let params: Vec<ParamValue> = params.into_iter().flatten().collect();
    let t0 = std::time::Instant::now();
    let shape = LaunchGeometry {
        grid: inv.grid,
        block: inv.block,
        cluster: inv.cluster,
        dynamic_smem_bytes: inv.smem,
        cooperative: inv.cooperative,
    };
    let result = emu.launch_shaped(module, &inv.kernel, shape, &params);
    let elapsed = t0.elapsed();
    let (faults, report) = match result {
        Ok(r) => (Vec::new(), r),
        Err(EmuError::Faulted { faults, report }) => (faults, *report),
        Err(e) => return Err(usage(e)),
    };
    let read = |emu: &Emulator, addr: u64, len: usize| emu.read(addr, len).map_err(usage);
    let mut buffers = Vec::with_capacity(bufs.len());
    for (index, ty, addr, len, name) in bufs {
        let bytes = read(emu, addr, len)?;
        buffers.push(BufferOut {
            index,
            ty,
            bytes,
            name,
        });
    }
    let symbols = syms
        .iter()
        .map(|(name, addr, len)| Ok((name.clone(), read(emu, *addr, *len)?)))
        .collect::<Result<_, CliError>>()?;
    let named = named
        .bufs
        .iter()
        .map(|(name, addr, len)| Ok((name.clone(), read(emu, *addr, *len)?)))
        .collect::<Result<_, CliError>>()?;
    Ok(Outcome {
        backend: CliBackend::Emulator,
        device: "Prism PTX emulator (CPU)".into(),
        buffers,
        symbols,
        named,
        faults,
        counters: Some(report.counters),
        printf: report.printf,
        notes: Vec::new(),
        elapsed,
    })
}
