//! The launch's scheduler: which blocks are resident, which one runs next, and a block's slice of warps.

use super::*;

impl L<'_> {
    /// Runs every block of the grid; returns how many finished.
    ///
    /// Blocks that would be resident at once on an H100 (132 SMs; per SM at most 32 blocks, 2048 threads and
    /// 228 KiB of shared memory) run interleaved, so a block that spins on another block's progress (a
    /// decoupled look-back, a persistent kernel's tile counter, a grid-wide flag) sees it happen. Later
    /// blocks start as earlier ones finish, in block order. Clusters are the unit of residency.
    pub(super) fn run_blocks(&mut self, entry_pc: u32) -> u64 {
        let nthreads = self.nthreads;
        let csize = self.cluster_size() as usize;
        let grid = self.grid;
        let total = grid[0] as u64 * grid[1] as u64 * grid[2] as u64;
        let clusters = total / csize as u64;
        let window = super::super::limits::resident_clusters(
            nthreads,
            self.smem_size,
            csize as u64,
            clusters,
        );
        let random = matches!(self.cfg.schedule, Schedule::Random { .. });
        let mut live: Vec<Vec<Block>> = Vec::with_capacity(window);
        let mut next = 0u64;
        let mut rr = 0usize;
        let mut blocks = 0u64;
        loop {
            while live.len() < window && next < clusters {
                live.push(
                    (0..csize as u32)
                        .map(|r| self.new_block(next as u32, r, entry_pc))
                        .collect(),
                );
                next += 1;
            }
            if live.is_empty() {
                break;
            }
            // One slot per block of the live clusters, in order.
            let slots = live.len() * csize;
            let slot = if random {
                (self.rand() % slots as u64) as usize
            } else {
                rr % slots
            };
            let (ci, bi) = (slot / csize, slot % csize);
            rr = slot + 1;
            if live[ci][bi].done {
                continue;
            }
            let finished = if csize == 1 {
                self.run_slice(&mut live[ci][0])
            } else {
                // Lend the other blocks' shared memory and mbarriers to this block's slice.
                self.remote_exited = 0;
                for (r, other) in live[ci].iter_mut().enumerate() {
                    if r != bi {
                        self.remote_exited |= (other.done as u64) << r;
                        self.remote[r] = Some(std::mem::take(&mut other.shared));
                        self.remote_mbar[r] = Some(std::mem::take(&mut other.mbar));
                    }
                }
                let f = self.run_slice(&mut live[ci][bi]);
                for (r, other) in live[ci].iter_mut().enumerate() {
                    if r != bi {
                        other.shared = self.remote[r].take().unwrap_or_default();
                        other.mbar = self.remote_mbar[r].take().unwrap_or_default();
                    }
                }
                f
            };
            if finished {
                live[ci][bi].done = true;
                blocks += 1;
                if live[ci].iter().all(|b| b.done) {
                    live.remove(ci);
                    rr = ci * csize;
                }
            }
            if self.abort {
                break;
            }
        }
        blocks
    }

    /// Block `rank` of cluster `cid` (clusters in grid order, x fastest; ranks x fastest within a cluster,
    /// as measured on an H100), every thread at `entry_pc`.
    pub(super) fn new_block(&self, cid: u32, rank: u32, entry_pc: u32) -> Block {
        let [gx, gy, _] = self.grid;
        let c = self.cluster;
        let (ncx, ncy) = (gx / c[0], gy / c[1]);
        let cc = [cid % ncx, (cid / ncx) % ncy, cid / (ncx * ncy)];
        let rr = [rank % c[0], (rank / c[0]) % c[1], rank / (c[0] * c[1])];
        let ctaid = [
            cc[0] * c[0] + rr[0],
            cc[1] * c[1] + rr[1],
            cc[2] * c[2] + rr[2],
        ];
        let lin32 = ctaid[0] + gx * (ctaid[1] + gy * ctaid[2]);
        let nthreads = self.nthreads;
        let nwarps = nthreads.div_ceil(32);
        let mut warps = Vec::with_capacity(nwarps as usize);
        for w in 0..nwarps {
            let mut st = [Ls::Absent; 32];
            let mut exist = 0u32;
            for (ln, s) in st.iter_mut().enumerate() {
                if w * 32 + (ln as u32) < nthreads {
                    *s = Ls::Run;
                    exist |= 1 << ln;
                }
            }
            warps.push(Warp {
                regs: Regs::new(self.regwin),
                pc: [entry_pc; 32],
                st,
                run: exist,
                exist,
                ..Warp::empty()
            });
        }
        Block {
            ctaid,
            lin: lin32,
            warps,
            shared: vec![0; self.smem_size],
            sh_shadow: if self.cfg.check_races {
                ShadowMem::new(self.smem_size)
            } else {
                ShadowMem::default()
            },
            local: vec![0; self.local_size * nthreads as usize],
            bars: vec![Bar::default(); 16],
            inst: Vec::new(),
            // (Room for a typical kernel's barrier instances: growing 256 lists one push at a time, a few
            // reallocations each, cost as much as the barriers themselves.)
            thr_inst: if self.cfg.check_races {
                (0..nthreads).map(|_| Vec::with_capacity(16)).collect()
            } else {
                vec![Vec::new(); nthreads as usize]
            },
            exited: 0,
            gen: 0,
            exit_gen: vec![u32::MAX; nthreads as usize],
            exits_this_gen: 0,
            mbar: HashMap::new(),
            rel: HashMap::new(),
            relacq: HashMap::new(),
            inst_hops: HashMap::new(),
            fenced: HashSet::new(),
            foreign: Default::default(),
            xseen: HashMap::new(),
            strong_loads: HashMap::new(),
            cinst: Vec::new(),
            acquired: HashMap::new(),
            wg: wgmma::WgState::default(),
            rr: 0,
            crank: rank,
            cid,
            carrive: vec![u32::MAX; nthreads as usize],
            done: false,
            proxy: proxy::ProxyState::default(),
            cpa: cp_async::CpAsyncState::default(),
        }
    }

    /// Runs block `b` for a slice (up to 16 warp quanta); true when the block has finished (every thread
    /// exited, or no thread can make progress: the stall is diagnosed as a fault).
    pub(super) fn run_slice(&mut self, b: &mut Block) -> bool {
        // The fast paths' lane arrays, held for the slice (not taken and put back at every step).
        let mut sc = self.fast.take().unwrap_or_else(exec_fast::Scratch::new);
        let done = self.run_slice_in(b, &mut sc);
        self.fast = Some(sc);
        done
    }

    fn run_slice_in(&mut self, b: &mut Block, sc: &mut exec_fast::Scratch) -> bool {
        let nw = b.warps.len();
        let random = matches!(self.cfg.schedule, Schedule::Random { .. });
        for _ in 0..16 {
            if b.exited == self.nthreads {
                return true;
            }
            // pick a warp with runnable lanes, round-robin from the one after the last that ran
            let mut chosen = None;
            let start = if random {
                (self.rand() % nw as u64) as usize
            } else {
                b.rr
            };
            for k in 0..nw {
                let w = (start + k) % nw;
                if b.warps[w].run_mask() != 0 {
                    chosen = Some(w);
                    break;
                }
            }
            let wi = match chosen {
                Some(w) => w,
                None => {
                    self.diagnose_stall(b);
                    return true;
                }
            };
            b.rr = wi + 1;
            let quantum = if random { 1 + self.rand() % 24 } else { 64 };
            let mut warp = std::mem::replace(&mut b.warps[wi], Warp::empty());
            // Other warps may have changed this warp's lanes since its last quantum (a barrier completed).
            warp.hint = None;
            for _ in 0..quantum {
                match self.step(sc, b, wi, &mut warp) {
                    Step::Continue => {}
                    Step::Stop => break,
                }
                if self.abort {
                    break;
                }
            }
            b.warps[wi] = warp;
            if self.abort {
                return true;
            }
        }
        b.exited == self.nthreads
    }
}
