//! A launch: its state from the validated arguments, the choice between a parallel and a one-thread run,
//! and its report.

use super::*;

/// The shape and inputs of one launch, as `Emulator::launch_cluster` validated them.
pub(crate) struct LaunchArgs {
    pub fi: usize,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub cluster: [u32; 3],
    pub dyn_bytes: u32,
    pub params: Vec<u8>,
    pub gaddrs: Vec<u64>,
    /// `cuLaunchCooperativeKernel`: every block resident at once, a grid workspace in `%envreg1/2`.
    pub cooperative: bool,
    /// The emulator's texture and surface objects (their handles index it).
    pub objects: Vec<Option<TexObject>>,
}

/// Bytes of a cooperative launch's grid workspace: cooperative groups' `grid_workspace` is
/// `{ u32 wsSize; u32 barrier; }` (`cooperative_groups/details/driver_abi.h`); the rest is spare.
const GRID_WORKSPACE_BYTES: usize = 16;

pub(crate) fn run_launch(
    e: &mut Emulator,
    m: &Module,
    a: LaunchArgs,
) -> Result<LaunchReport, EmuError> {
    // Blocks over several OS threads when they turn out not to interact (`parallel.rs`); otherwise, and
    // whenever that run cannot vouch for its result, the launch runs here as it always did.
    // A module that calls `malloc`/`free` gets the device heap on its first launch (kept afterwards).
    if e.heap.is_none()
        && m.funcs
            .iter()
            .any(|f| !f.defined && is_heap_function(&f.name))
    {
        let base = e.alloc(DEVICE_HEAP_BYTES as usize);
        e.heap = Some(DeviceHeap::new(base, DEVICE_HEAP_BYTES));
    }
    // A cooperative launch's blocks wait for each other (`this_grid().sync()`): never the parallel run,
    // whose blocks run one after another.
    let grid_ws = if a.cooperative {
        cooperative_fits(m, &a)?;
        let ws = e.alloc(GRID_WORKSPACE_BYTES);
        e.write(ws, &(GRID_WORKSPACE_BYTES as u32).to_le_bytes())?;
        ws
    } else if let Some(report) = parallel::try_parallel(e, m, &a) {
        return Ok(report);
    } else {
        0
    };
    let launch_id = e.launches;
    let cfg = e.cfg.clone();
    let mut l = L::new(m, &mut e.allocs, cfg, &a, launch_id);
    l.heap = e.heap.take();
    l.grid_ws = grid_ws;
    let entry_pc = m.funcs[a.fi].start;
    let blocks = l.run_blocks(entry_pc);
    e.heap = l.heap.take();
    let report = l.finish(blocks);
    if grid_ws != 0 {
        e.free(grid_ws)?;
    }
    report
}

/// A cooperative launch must have every block resident at once (the scheduler's residency, `sched.rs`);
/// more is CUDA's `cudaErrorCooperativeLaunchTooLarge`, an error before anything runs.
fn cooperative_fits(m: &Module, a: &LaunchArgs) -> Result<(), EmuError> {
    let nthreads = a.block.iter().product::<u32>();
    let smem = (misc::reserved_bytes(m) + m.dyn_offset(a.fi)) as usize + a.dyn_bytes as usize;
    let csize = a.cluster.iter().map(|&d| d as u64).product::<u64>();
    let blocks = a.grid.iter().map(|&d| d as u64).product::<u64>();
    let clusters = blocks / csize.max(1);
    let resident = limits::resident_clusters(nthreads, smem, csize, clusters) as u64 * csize;
    if resident < blocks {
        return Err(EmuError::BadLaunch(format!(
            "cooperative launch of {blocks} blocks: at most {resident} blocks of {nthreads} threads and \
             {smem} bytes of shared memory are resident at once on the emulated H100 (132 SMs) \
             (cudaErrorCooperativeLaunchTooLarge); launch fewer blocks and loop over the work"
        )));
    }
    Ok(())
}

impl<'a> L<'a> {
    /// The launch state before any block has run.
    pub(super) fn new(
        m: &'a Module,
        allocs: &'a mut Vec<Alloc>,
        cfg: EmuConfig,
        a: &LaunchArgs,
        launch_id: u64,
    ) -> L<'a> {
        let cluster = a.cluster;
        let csize = (cluster[0] * cluster[1] * cluster[2]) as usize;
        let block = a.block;
        let nthreads = block[0] * block[1] * block[2];
        let seed = match cfg.schedule {
            Schedule::RoundRobin => 0x1234_5678,
            Schedule::Random { seed } => seed ^ 0xA5A5_5A5A_DEAD_BEEF,
        };
        let pic = m
            .code
            .iter()
            .map(|i| InstrCounters {
                ptx_line: i.line as usize,
                ..Default::default()
            })
            .collect();
        let reserved = misc::reserved_bytes(m);
        let fi = a.fi;
        let step_limit = cfg.max_steps;
        L {
            m,
            allocs,
            heap: None,
            grid_ws: 0,
            objects: a.objects.clone(),
            xrel: HashMap::new(),
            xstamp: 0,
            cfg,
            grid: a.grid,
            bdim: block,
            nthreads,
            smem_size: (reserved + m.dyn_offset(fi)) as usize + a.dyn_bytes as usize,
            dyn_off: reserved + m.dyn_offset(fi),
            dyn_bytes: a.dyn_bytes,
            reserved,
            params: a.params.clone(),
            gaddrs: a.gaddrs.clone(),
            pic,
            faults: Vec::new(),
            race_seen: HashSet::new(),
            rng: seed,
            steps: 0,
            step_limit,
            race_tail: None,
            launch_id,
            abort: false,
            last_alloc: 0,
            acc_g: Vec::with_capacity(64),
            acc_s: Vec::with_capacity(64),
            scratch: Vec::with_capacity(256),
            local_size: misc::local_bytes(m),
            atomics: 0,
            mma_ops: 0,
            clock: 0,
            printf: Vec::new(),
            cluster,
            remote: vec![None; csize],
            remote_mbar: vec![None; csize],
            remote_exited: 0,
            cbar: HashMap::new(),
            csnap: HashMap::new(),
            cexited: HashMap::new(),
            async_write: false,
            same_st: Vec::with_capacity(32),
            fast: None,
            spec: None,
            regwin: RegWindow::of_entry(m, fi),
            has_wgmma: m.code.iter().any(|i| matches!(i.kind, Kind::Wgmma(_))),
        }
    }

    /// The launch's report (and faults) once `blocks` blocks have run.
    pub(super) fn finish(mut self, blocks: u64) -> Result<LaunchReport, EmuError> {
        let mut counters = Counters::default();
        for p in &self.pic {
            counters.add(p);
        }
        counters.atomics = self.atomics;
        counters.mma_ops = self.mma_ops;
        counters.blocks = blocks;
        let report = LaunchReport {
            counters,
            per_instruction: std::mem::take(&mut self.pic),
            printf: std::mem::take(&mut self.printf),
            parallel_blocks: 0,
            isolated_blocks: 0,
        };
        if self.faults.is_empty() {
            Ok(report)
        } else {
            Err(EmuError::Faulted {
                faults: std::mem::take(&mut self.faults),
                report: Box::new(report),
            })
        }
    }
}
