//! Perspectives and memory views: the rank of the current perspective, narrowing into a group, `id()`,
//! the scopes that rebind a memory name, and addressing, loading and storing through a view.

use super::loops::for_each_block;
use super::*;

/// Where an out-of-bounds shared access goes (SHARED-INDEX): 16-byte aligned, past every shared window
/// (228 KiB per block; a cluster's shared::cluster window is far below it too).
const OUT_OF_BOUNDS_ADDR: &str = "0xFFFFFFF0";

impl Em {
    /// The rank in threads within the current unit: blk·T + thr.
    pub(super) fn rank(&mut self) -> Val {
        let (blk, thr, t) = (self.ctx.blk.clone(), self.ctx.thr.clone(), self.t.clone());
        let bt = self.u32_bin("mul", &blk, &t);
        self.u32_bin("add", &bt, &thr)
    }

    /// S-GROUP: narrowing to `p` keeps rank mod size(p).
    pub(super) fn group_into(&mut self, p: Perspective) -> R<()> {
        let cur = self.ctx.persp;
        if cur == p {
            return Ok(());
        }
        match p.level {
            Level::Grid => {}
            Level::Block => {
                if cur.level == Level::Grid || cur.level == Level::Block {
                    let b = self.ctx.blk.clone();
                    self.ctx.blk = self.u32_bin("rem", &b, &Val::imm_u32(p.n));
                }
            }
            Level::Thread => {
                // size(thread[k]) divides T (the launch contract), so (blk·T + thr) mod k = thr mod k.
                let thr = self.ctx.thr.clone();
                let exact = matches!((&self.t, cur.level), (Val::Imm(Imm::Int(t), _), Level::Block | Level::Grid) if *t == p.n as i128);
                self.ctx.thr = if exact {
                    thr
                } else {
                    self.u32_bin("rem", &thr, &Val::imm_u32(p.n))
                };
                self.ctx.blk = Val::imm_u32(0);
                self.ctx.units = ring_sites::group(&self.ctx.units, p.n);
            }
        }
        self.ctx.persp = p;
        Ok(())
    }

    /// E-PARTITION-ID / §3.5: `id()` stored into a variable of perspective `target` = rank / size(target).
    pub(super) fn id_value(&mut self, target: Perspective) -> Val {
        match target.level {
            Level::Grid => Val::imm_u32(0),
            Level::Block => {
                if self.ctx.persp.level == Level::Thread {
                    Val::imm_u32(0)
                } else {
                    let b = self.ctx.blk.clone();
                    self.u32_bin("div", &b, &Val::imm_u32(target.n))
                }
            }
            Level::Thread => {
                let thr = self.ctx.thr.clone();
                let tq = self.u32_bin("div", &thr, &Val::imm_u32(target.n));
                if self.ctx.persp.level == Level::Thread {
                    tq
                } else {
                    // m divides T: rank / m = blk·(T/m) + thr/m.
                    let (blk, t) = (self.ctx.blk.clone(), self.t.clone());
                    let per = self.u32_bin("div", &t, &Val::imm_u32(target.n));
                    let bp = self.u32_bin("mul", &blk, &per);
                    self.u32_bin("add", &bp, &tq)
                }
            }
        }
    }

    pub(super) fn mem_binding(&self, id: &Ident) -> R<(View, Perspective)> {
        match self.lookup(id)? {
            Binding::Mem { view, persp } => Ok((view, persp)),
            _ => Err(bug(
                "T-PARTITION",
                id.span,
                format!("`{}` is not a pointer or shared allocation", id.name),
            )),
        }
    }

    pub(super) fn scope_with(
        &mut self,
        target: &Ident,
        new_name: &Ident,
        b: Binding,
        body: &Block,
    ) -> R<()> {
        self.env.push(Scope::new());
        self.bind(&target.name, Binding::Hidden);
        self.bind(&new_name.name, b);
        let r = self.block(body);
        self.env.pop();
        r.map(|_| ())
    }

    /// Bytes of the shared allocations written in `b` itself (callees excluded), each aligned for its layout, in
    /// order: the same layout `let_stmt` produces.
    pub(super) fn own_smem(&self, b: &Block) -> R<u32> {
        fn walk(em: &Em, b: &Block, acc: &mut u32) -> R<()> {
            for s in &b.stmts {
                if let StmtKind::Let {
                    ty:
                        Some(Type::Shared {
                            elem, len, layout, ..
                        }),
                    ..
                } = &s.kind
                {
                    let n = em.const_u32(len)?;
                    *acc = (layout.place(*acc as u64).min(u32::MAX as u64) as u32)
                        .saturating_add(n.saturating_mul(elem.size()));
                } else {
                    let mut r = Ok(());
                    for_each_block(s, &mut |inner| {
                        if r.is_ok() {
                            r = walk(em, inner, acc);
                        }
                    });
                    r?;
                }
            }
            Ok(())
        }
        let mut acc = 0;
        walk(self, b, &mut acc)?;
        Ok(acc.div_ceil(16) * 16)
    }

    /// Applies the view's index closures (innermost partition first) and returns the address register.
    /// The address of element `idx` of `view` (through its partitions' index maps). In a swizzled shared
    /// allocation the element is the logical one: row `r`, column `c` of the layout's rows is where TMA puts
    /// element `(r, c)` of its box and where wgmma reads it, so the address gets the same XOR of 16-byte
    /// chunks (PTX ISA §5.5.7, on the shared address's bits 7–9 as the hardware does; allocations are
    /// aligned for their swizzle).
    ///
    /// A shared allocation's index is checked against its length (Rust indexing): a constant out of
    /// range is a compile error (SHARED-INDEX); out of range at run time, the access goes to an address
    /// past every shared window and faults (the launch fails) instead of touching a neighbouring
    /// allocation. `bounds.rs` removes the checks it proves redundant.
    pub(super) fn address(&mut self, view: &View, idx: Vec<Val>, span: Span) -> R<String> {
        self.address_in(view, idx, span, true, 1)
    }

    /// [`Self::address`] for an access of `extent` consecutive elements from the index (vector loads and
    /// stores, `cp_async`): the whole extent must lie in the allocation.
    pub(super) fn address_n(
        &mut self,
        view: &View,
        idx: Vec<Val>,
        span: Span,
        extent: u32,
    ) -> R<String> {
        self.address_in(view, idx, span, true, extent.max(1))
    }

    /// The unswizzled address of offset `idx` (wgmma descriptors, TMA boxes and `stmatrix` tiles start at
    /// an allocation's layout-aligned rows: the hardware swizzles their accesses itself).
    pub(super) fn address_raw(&mut self, view: &View, idx: Vec<Val>, span: Span) -> R<String> {
        self.address_in(view, idx, span, false, 0)
    }

    fn address_in(
        &mut self,
        view: &View,
        mut idx: Vec<Val>,
        span: Span,
        logical: bool,
        extent: u32,
    ) -> R<String> {
        for m in view.maps.iter().rev() {
            if m.params.len() != idx.len() {
                return Err(bug(
                    "T-PARTITION",
                    span,
                    format!(
                        "this partition's index closure takes {} index(es), {} given",
                        m.params.len(),
                        idx.len()
                    ),
                )
                .help("write `y[(i, j)]` for a closure `|i, j| ..`"));
            }
            let mut scope = m.env.clone();
            for (p, v) in m.params.iter().zip(idx.drain(..)) {
                scope.insert(
                    p.clone(),
                    Binding::Scalar {
                        val: v,
                        persp: self.ctx.persp,
                    },
                );
            }
            let saved = std::mem::replace(&mut self.env, vec![scope]);
            let r = self.scalar(&m.body);
            self.env = saved;
            idx = vec![r?];
        }
        if idx.len() != 1 {
            return Err(bug("T-PARTITION", span, "a pointer takes one index").help(
                "multi-index `y[(i, j)]` needs a partition closure with that many parameters",
            ));
        }
        let i = idx.pop().unwrap_or(Val::imm_u32(0));
        let size = view.elem.size() as i128;
        match view.space {
            Space::Global => {
                let base = self.reg(&view.base, ScalarType::U64);
                let r = self.fresh(ScalarType::U64);
                match (i.ty(), &i) {
                    (_, Val::Imm(Imm::Int(x), _)) => {
                        let off = *x * size;
                        if off == 0 {
                            return Ok(base);
                        }
                        self.line(format!("add.s64 {r}, {base}, {off};"));
                    }
                    (Some(t @ (ScalarType::U32 | ScalarType::I32)), Val::Reg(x, _)) => {
                        let w = self.fresh(ScalarType::U64);
                        self.line(format!("mul.wide.{} {w}, {x}, {size};", ptx_ty(t)));
                        self.line(format!("add.s64 {r}, {base}, {w};"));
                    }
                    (Some(ScalarType::U64 | ScalarType::I64), Val::Reg(x, _)) => {
                        let w = self.fresh(ScalarType::U64);
                        self.line(format!("mul.lo.s64 {w}, {x}, {size};"));
                        self.line(format!("add.s64 {r}, {base}, {w};"));
                    }
                    _ => return Err(bug("TYPE", span, "an index must be an integer")),
                }
                Ok(r)
            }
            Space::Shared => {
                let smem = self.smem_base();
                let i = match i.ty() {
                    Some(ScalarType::U64 | ScalarType::I64) => {
                        self.cast(i, ScalarType::U32, span)?
                    }
                    Some(t) if !t.is_int() => {
                        return Err(bug("TYPE", span, "an index must be an integer"))
                    }
                    _ => i,
                };
                let out_of_bounds = if extent > 0 && view.len > 0 {
                    self.shared_bounds(&i, view.len, extent, span)?
                } else {
                    None
                };
                let off = self.u32_bin("mul", &i, &Val::imm_u32(size as u32));
                let off = self.u32_bin("add", &view.base, &off);
                let mut r = self.fresh(ScalarType::U32);
                let o = self.op(&off, ScalarType::U32);
                self.line(format!("add.s32 {r}, {smem}, {o};"));
                let mask = match view.layout.span() {
                    128 => 7,
                    64 => 3,
                    32 => 1,
                    _ => 0,
                };
                if logical && mask != 0 {
                    let (t, s) = (self.fresh(ScalarType::U32), self.fresh(ScalarType::U32));
                    self.line(format!("shr.u32 {t}, {r}, 3;"));
                    self.line(format!("and.b32 {t}, {t}, {};", mask << 4));
                    self.line(format!("xor.b32 {s}, {r}, {t};"));
                    r = s;
                }
                if let Some(rank) = &view.peer {
                    // The same offset in block `rank` of the cluster (PTX ISA `mapa`).
                    let rr = self.op(rank, ScalarType::U32);
                    let m = self.fresh(ScalarType::U32);
                    self.line(format!("mapa.shared::cluster.u32 {m}, {r}, {rr};"));
                    r = m;
                    if !matches!(rank, Val::Imm(..)) {
                        // A rank past the cluster (CLUSTER): `mapa` is undefined there; fault instead.
                        let (q, a) = (self.fresh(ScalarType::Bool), self.fresh(ScalarType::U32));
                        self.line(format!("setp.ge.u32 {q}, {rr}, {};", self.cluster));
                        self.line(format!("selp.b32 {a}, {OUT_OF_BOUNDS_ADDR}, {r}, {q};"));
                        r = a;
                    }
                }
                if let Some(p) = out_of_bounds {
                    // Out of bounds, the access goes to an address past every shared window, which the
                    // hardware refuses (an illegal-address error ends the launch) and the emulator reports
                    // (OutOfBounds): no branch in the access path, so unrolled loops schedule as before.
                    let a = self.fresh(ScalarType::U32);
                    self.line(format!("selp.b32 {a}, {OUT_OF_BOUNDS_ADDR}, {r}, {p};"));
                    r = a;
                }
                Ok(r)
            }
        }
    }

    /// [SHARED-INDEX] elements `i .. i + extent` lie in an allocation (or ring slot) of `len` elements: a
    /// constant is checked here; for a run-time index, the predicate that it is out of range (the access
    /// then faults, as Rust's indexing panics).
    fn shared_bounds(&mut self, i: &Val, len: u32, extent: u32, span: Span) -> R<Option<String>> {
        let what = if extent == 1 {
            "index".to_string()
        } else {
            format!("{extent}-element access at index")
        };
        if extent > len {
            return Err(err(
                "SHARED-INDEX",
                span,
                format!("this access covers {extent} elements (a copy, vector access or matrix row of that size) but the shared memory it goes to has {len} (the whole allocation, or ring slot)"),
            )
            .help(format!("move at most {len} elements in one access, or make the allocation (each slot of a ring) larger")));
        }
        let last = len - extent;
        match i {
            Val::Imm(Imm::Int(x), _) if *x < 0 || *x > last as i128 => Err(err(
                "SHARED-INDEX",
                span,
                format!("{what} {x} is out of bounds for shared memory of {len} elements"),
            )
            .help(format!("the last valid index is {last}"))),
            Val::Imm(..) => Ok(None),
            _ => {
                let o = self.op(i, ScalarType::U32);
                let p = self.fresh(ScalarType::Bool);
                self.line(format!("setp.gt.u32 {p}, {o}, {last};"));
                Ok(Some(p))
            }
        }
    }

    pub(super) fn space_str(view: &View, read: bool) -> &'static str {
        match view.space {
            Space::Global if read && view.readonly => "global.nc",
            Space::Global => "global",
            Space::Shared if view.peer.is_some() => "shared::cluster",
            Space::Shared => "shared",
        }
    }

    /// Loads one element (`vec == None`) at `addr`.
    pub(super) fn load(&mut self, view: &View, addr: &str, _vec: Option<u32>) -> Val {
        let t = view.elem;
        let sp = Self::space_str(view, true);
        if t == ScalarType::Bool {
            let w = self.fresh(ScalarType::U32);
            self.line(format!("ld.{sp}.u8 {w}, [{addr}];"));
            let p = self.fresh(ScalarType::Bool);
            self.line(format!("setp.ne.u32 {p}, {w}, 0;"));
            return Val::Reg(p, t);
        }
        let r = self.fresh(t);
        self.line(format!("ld.{sp}.{} {r}, [{addr}];", mem_ty(t)));
        Val::Reg(r, t)
    }

    pub(super) fn store(&mut self, view: &View, addr: &str, vals: &[Val]) {
        let t = view.elem;
        let sp = Self::space_str(view, false);
        if vals.len() == 1 {
            if t == ScalarType::Bool {
                let p = self.reg(&vals[0], t);
                let w = self.fresh(ScalarType::U32);
                self.line(format!("selp.u32 {w}, 1, 0, {p};"));
                self.line(format!("st.{sp}.u8 [{addr}], {w};"));
                return;
            }
            let r = self.reg(&vals[0], t);
            self.line(format!("st.{sp}.{} [{addr}], {r};", mem_ty(t)));
        } else {
            let regs: Vec<String> = vals.iter().map(|v| self.reg(v, t)).collect();
            self.line(format!(
                "st.{sp}.v{}.{} [{addr}], {{{}}};",
                vals.len(),
                mem_ty(t),
                regs.join(", ")
            ));
        }
    }
}
